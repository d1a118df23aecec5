// The on-disk JIT cache (JitDiskCache.h). An entry is
//   "EMBERJIT" | u64 key bytes | key | u64 object bytes | object
// and is used only when the stored key equals the wanted one byte for byte.
#include "JitDiskCache.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "ProgramCache.h"

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
  // The build stamp: a rebuilt Jit code generator must not load objects an
  // older build of the same version compiled.
  return "ember-jit-cache " + std::to_string(kCacheFormat) +
         " version " EMBER_VERSION_STRING " built " __DATE__ " " __TIME__;
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
  return std::vector<char>(bytes.begin() + std::ptrdiff_t(pos), bytes.end());
}

void writeJitCacheEntry(const std::string& path, const std::string& key, const std::vector<char>& object) {
  namespace fs = std::filesystem;
  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string temporary =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
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
  }
}

}  // namespace ember::cpu
