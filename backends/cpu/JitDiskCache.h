// The on-disk JIT cache (docs/backends/cpu.md, "JIT cache"): one file per
// compiled program holding its full key and the native object. No LLVM here;
// Jit.cpp compiles and loads the object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ember::cpu {

/// The cache directory: $EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember/cpu-jit,
/// else $HOME/.cache/ember/cpu-jit. Empty when disabled: EMBER_NO_CACHE=1
/// (what `ember --no-cache` sets), or no directory can be named.
std::string jitCacheDirectory();

/// What every key starts with: the cache format, the Ember version and build
/// of this library (the path, size and modification time of the binary that
/// holds it), so another build's entries are ignored.
std::string jitCacheVersionLine();

/// The cache's size limit: $EMBER_CACHE_MAX_MB MiB, default 512.
uint64_t jitCacheLimitBytes();

/// When the `.jit` entries in `directory` exceed `limitBytes`, removes the
/// least recently used (written or hit) until they hold 3/4 of it.
void trimJitCache(const std::string& directory, uint64_t limitBytes);

/// Whether this write should trim `directory`: true at most once a minute per
/// directory (a `.last-trim` stamp file, touched when claimed), so the limit
/// is soft by what the writers add within that minute.
bool claimJitCacheTrim(const std::string& directory);

/// The entry's path for a full key: DIR/<64-bit hash of the key, hex>.jit.
std::string jitCachePath(const std::string& directory, const std::string& key);

/// The object stored under `key` at `path`, or nothing: a missing file
/// silently; a corrupt entry, one of another Ember version or one whose key
/// differs (a hash collision) with a one-line warning on stderr.
std::optional<std::vector<char>> readJitCacheEntry(const std::string& path, const std::string& key);

/// Writes the entry atomically (a temporary file in the same directory, then
/// rename), creating the directory, then trims the directory to the size
/// limit when claimJitCacheTrim says so. A failure is a one-line warning.
void writeJitCacheEntry(const std::string& path, const std::string& key, const std::vector<char>& object);

}  // namespace ember::cpu
