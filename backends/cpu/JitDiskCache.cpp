// The on-disk JIT cache (JitDiskCache.h). An entry is
//   "EMBERJIT" | u64 key bytes | key | u64 object bytes | object
// and is used only when the stored key equals the wanted one byte for byte.
#include "JitDiskCache.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "ProgramCache.h"
#include "ember/FileIO.h"

#ifndef EMBER_VERSION_STRING
#define EMBER_VERSION_STRING "unknown"
#endif

namespace ember::cpu {
namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'E', 'R', 'J', 'I', 'T'};
constexpr int kCacheFormat = 1;

void warn(const std::string& path, const std::string& why) {
  std::fprintf(stderr, "ember: ignoring JIT cache entry %s: %s\n", path.c_str(), why.c_str());
}

std::string firstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

std::string jitCacheDirectory() {
  const char* off = std::getenv("EMBER_NO_CACHE");
  if (off && *off && std::strcmp(off, "0") != 0) return "";
  if (const char* dir = std::getenv("EMBER_CACHE_DIR")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/ember/cpu-jit";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/ember/cpu-jit";
  return "";
}

std::string jitCacheVersionLine() {
  // A rebuilt code generator must not load objects an older build of the same
  // version compiled. This file's __DATE__/__TIME__ alone would miss a rebuilt
  // Jit.cpp, so the stamp is the binary that holds this code (the executable,
  // or the shared library under Python): its path, size and modification time.
  static const std::string line = [] {
    std::string stamp = "built " __DATE__ " " __TIME__;
    Dl_info info{};
    struct stat status {};
    std::string binary;
    if (::dladdr(reinterpret_cast<void*>(&jitCacheVersionLine), &info) != 0 && info.dli_fname)
      binary = info.dli_fname;
    // The executable's own name may be relative to a directory since left.
    if (binary.empty() || binary[0] != '/') {
      std::error_code ec;
      binary = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    }
    if (!binary.empty() && ::stat(binary.c_str(), &status) == 0)
      stamp += " binary " + binary + " " + std::to_string(status.st_size) + " " +
               std::to_string(status.st_mtim.tv_sec) + "." + std::to_string(status.st_mtim.tv_nsec);
    return "ember-jit-cache " + std::to_string(kCacheFormat) + " version " EMBER_VERSION_STRING " " + stamp;
  }();
  return line;
}

uint64_t jitCacheLimitBytes() {
  constexpr uint64_t kDefaultMiB = 512;
  const char* text = std::getenv("EMBER_CACHE_MAX_MB");
  if (!text || !*text) return kDefaultMiB << 20;
  char* end = nullptr;
  const unsigned long long mib = std::strtoull(text, &end, 10);
  if (*end != '\0' || text[0] == '-') {
    std::fprintf(stderr, "ember: ignoring EMBER_CACHE_MAX_MB='%s' (not a number of MiB); using %llu\n", text,
                 static_cast<unsigned long long>(kDefaultMiB));
    return kDefaultMiB << 20;
  }
  return uint64_t(mib) << 20;
}

void trimJitCache(const std::string& directory, uint64_t limitBytes) {
  namespace fs = std::filesystem;
  struct Entry {
    fs::path path;
    fs::file_time_type lastUse;
    uint64_t bytes;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".jit") continue;  // temporaries of concurrent writers stay
    std::error_code entryError;
    const uint64_t bytes = it->file_size(entryError);
    const auto lastUse = it->last_write_time(entryError);
    if (entryError) continue;
    entries.push_back({it->path(), lastUse, bytes});
    total += bytes;
  }
  if (total <= limitBytes) return;
  // Least recently used first; down to 3/4 of the limit so that the next few
  // writes do not rescan the directory each time.
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.lastUse < b.lastUse; });
  const uint64_t target = limitBytes / 4 * 3;
  for (const Entry& entry : entries) {
    if (total <= target) break;
    if (fs::remove(entry.path, ec)) total -= entry.bytes;
  }
}

std::string jitCachePath(const std::string& directory, const std::string& key) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.jit", static_cast<unsigned long long>(fnv1a(key)));
  return directory + "/" + name;
}

std::optional<std::vector<char>> readJitCacheEntry(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  auto take = [&](void* dst, size_t n) {
    if (bytes.size() - pos < n) return false;
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
    return true;
  };
  char magic[8];
  uint64_t keyBytes = 0, objectBytes = 0;
  if (!take(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 || !take(&keyBytes, 8) ||
      keyBytes > bytes.size() - pos) {
    warn(path, "not a JIT cache entry or truncated");
    return std::nullopt;
  }
  const std::string stored(bytes.data() + pos, keyBytes);
  pos += keyBytes;
  if (firstLine(stored) != firstLine(key)) {
    warn(path, "written by another Ember build (" + firstLine(stored).substr(0, 120) + ")");
    return std::nullopt;
  }
  if (stored != key) {
    warn(path, "its key differs (a hash collision)");
    return std::nullopt;
  }
  if (!take(&objectBytes, 8) || objectBytes != bytes.size() - pos || objectBytes == 0) {
    warn(path, "truncated object");
    return std::nullopt;
  }
  // A hit marks the entry as recently used for trimJitCache.
  std::error_code ec;
  std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ec);
  return std::vector<char>(bytes.begin() + std::ptrdiff_t(pos), bytes.end());
}

void writeJitCacheEntry(const std::string& path, const std::string& key, const std::vector<char>& object) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string temporary = uniqueTemporaryPath(path);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    const uint64_t keyBytes = key.size(), objectBytes = object.size();
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char*>(&keyBytes), 8);
    out.write(key.data(), std::streamsize(key.size()));
    out.write(reinterpret_cast<const char*>(&objectBytes), 8);
    out.write(object.data(), std::streamsize(object.size()));
    out.flush();
    if (!out) {
      std::fprintf(stderr, "ember: cannot write the JIT cache entry %s\n", temporary.c_str());
      fs::remove(temporary, ec);
      return;
    }
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    std::fprintf(stderr, "ember: cannot write the JIT cache entry %s: %s\n", path.c_str(),
                 ec.message().c_str());
    fs::remove(temporary, ec);
    return;
  }
  const std::string directory = fs::path(path).parent_path().string();
  if (claimJitCacheTrim(directory)) trimJitCache(directory, jitCacheLimitBytes());
}

bool claimJitCacheTrim(const std::string& directory) {
  // Listing the directory costs one stat per entry (tens of ms at 10^4
  // entries), too much for every write: at most one trim a minute per
  // directory, claimed by touching a stamp file.
  namespace fs = std::filesystem;
  const fs::path stamp = fs::path(directory) / ".last-trim";
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  const auto last = fs::last_write_time(stamp, ec);
  if (!ec && now - last < std::chrono::minutes(1)) return false;
  if (ec) std::ofstream(stamp).close();
  fs::last_write_time(stamp, now, ec);
  return true;
}

}  // namespace ember::cpu
