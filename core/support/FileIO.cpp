#include "ember/FileIO.h"

#include <cerrno>
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

Error writeFileAtomic(const std::string& path, std::string_view bytes) {
  const std::string temporary = path + ".tmp";
  if (Error e = writeFile(temporary, bytes)) return e;
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) return makeError(path, ": cannot write: ", ec.message());
  return Error::success();
}

}  // namespace ember
