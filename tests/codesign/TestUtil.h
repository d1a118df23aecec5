// Helpers of the co-design end-to-end tests: run the ember tool, temp dirs, files.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ember::codesign::test {

namespace fs = std::filesystem;

struct CommandResult {
  int status = -1;
  std::string output;  ///< stdout and stderr
};

/// Runs a shell command line; returns its exit status and combined output.
inline CommandResult runShell(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

inline CommandResult runEmber(const std::string& args) {
  return runShell(std::string(EMBER_TOOL_PATH) + " " + args);
}

inline fs::path freshDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ember_codesign_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

inline std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

inline void writeFile(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace ember::codesign::test
