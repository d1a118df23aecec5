#include "ember/FileIO.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ember {

Expected<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError(path, ": cannot open for reading");
  std::ostringstream os;
  os << in.rdbuf();
  if (in.bad()) return makeError(path, ": read failed");
  return os.str();
}

Error writeFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return makeError(path, ": cannot open for writing: ", std::strerror(errno));
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.close();
  if (!out) return makeError(path, ": write failed: ", std::strerror(errno));
  return Error::success();
}

std::string uniqueTemporaryPath(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

Error writeFileAtomic(const std::string& path, std::string_view bytes) {
  // A temporary of its own per writer: with one shared name, a second writer
  // (another Slurm task, another thread) truncates the first one's file and
  // one of the two renames finds nothing to move.
  const std::string temporary = uniqueTemporaryPath(path);
  std::error_code ec;
  if (Error e = writeFile(temporary, bytes)) {
    std::filesystem::remove(temporary, ec);
    return e;
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return makeError(path, ": cannot write: ", ec.message());
  }
  return Error::success();
}

}  // namespace ember
