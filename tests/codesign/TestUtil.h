// Helpers of the co-design end-to-end tests: run the ember tool, temp dirs, files.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

/// The rows of a CSV file (RFC 4180 quoting), header first.
inline std::vector<std::vector<std::string>> readCsv(const fs::path& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(readFile(path));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += c;
      }
    }
    cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

/// The index of a header cell (a test failure when absent).
inline size_t column(const std::vector<std::string>& header, const std::string& name) {
  auto it = std::find(header.begin(), header.end(), name);
  EXPECT_NE(it, header.end()) << "no column " << name;
  return size_t(it - header.begin());
}

}  // namespace ember::codesign::test
