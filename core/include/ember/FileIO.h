// Whole-file reads and writes with errors that name the path: the one place the
// tools, the co-design sweep and the .npy writer open files for that.
#pragma once

#include <string>
#include <string_view>

#include "ember/Error.h"

namespace ember {

/// The bytes of a file.
Expected<std::string> readFile(const std::string& path);
/// Replaces (or creates) a file with `bytes`.
Error writeFile(const std::string& path, std::string_view bytes);
/// Writes a temporary beside `path` and renames it over `path`, so that a
/// reader (a resumed sweep, a concurrent task) never sees half a file.
/// Concurrent writers of the same path each succeed; the last rename wins.
Error writeFileAtomic(const std::string& path, std::string_view bytes);
/// PATH.tmp.<pid>.<n>: a name beside `path` that no other writer, in this
/// process or another, uses at the same time.
std::string uniqueTemporaryPath(const std::string& path);

}  // namespace ember
