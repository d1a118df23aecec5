// ember backends: one backend per line, its name first (scripts read the
// first word), then its summary and where it came from.
#include <algorithm>
#include <iostream>

#include "Commands.h"
#include "Tool.h"

namespace ember::cli {

int backendsCommand(const std::vector<std::string>& args) {
  std::vector<std::string> backendPaths;
  OptionParser parser("ember backends", "[--backend-path DIR]",
                      "Lists the available backends: the built-in ones, then plugins found in\n"
                      "EMBER_BACKEND_PATH and --backend-path.");
  parser.addList("--backend-path", "DIR", &backendPaths,
                 "load backend plugins (lib*.so) from DIR; colon-separated list allowed");
  if (auto status = parser.parse(args)) return *status;
  if (Error e = loadBackends(backendPaths)) return fail(e);

  std::vector<BackendRegistry::Entry> entries = BackendRegistry::global().list();
  size_t width = 0;
  for (const auto& entry : entries) width = std::max(width, entry.name.size());
  for (const auto& entry : entries) {
    std::cout << entry.name << std::string(width - entry.name.size() + 2, ' ') << entry.summary;
    if (entry.origin != "built-in") std::cout << " [" << entry.origin << "]";
    std::cout << "\n";
  }
  return kExitSuccess;
}

}  // namespace ember::cli
