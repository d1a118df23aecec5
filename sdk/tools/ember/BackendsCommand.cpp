// ember backends: one backend per line, its name first (scripts read the
// first word), then its summary and where it came from.
#include <algorithm>
#include <iostream>

#include "Commands.h"
#include "Tool.h"

namespace ember::cli {

namespace {

/// `ember backends --options NAME`: the keys --backend-option accepts.
int printOptions(const std::string& name) {
  auto backend = BackendRegistry::global().create(name);
  if (!backend) return fail(backend.error());
  std::vector<BackendOption> options = (*backend)->options();
  if (options.empty()) {
    std::cout << "backend '" << name << "' describes no options\n";
    return kExitSuccess;
  }
  size_t width = 0;
  for (const auto& option : options) width = std::max(width, option.name.size());
  for (const auto& option : options)
    std::cout << option.name << std::string(width - option.name.size() + 2, ' ') << option.help << "\n";
  return kExitSuccess;
}

}  // namespace

int backendsCommand(const std::vector<std::string>& args) {
  std::vector<std::string> backendPaths;
  std::string optionsOf;
  OptionParser parser("ember backends", "[--backend-path DIR] [--options NAME]",
                      "Lists the available backends: the built-in ones, then plugins found in\n"
                      "EMBER_BACKEND_PATH and --backend-path. With --options NAME, lists the keys\n"
                      "that backend accepts as --backend-option KEY=VALUE, with their help.");
  parser.addList("--backend-path", "DIR", &backendPaths,
                 "load backend plugins (lib*.so) from DIR; colon-separated list allowed");
  parser.addString("--options", "NAME", &optionsOf, "list backend NAME's options (--backend-option keys)");
  if (auto status = parser.parse(args)) return *status;
  if (Error e = loadBackends(backendPaths)) return fail(e);
  if (!optionsOf.empty()) return printOptions(optionsOf);

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
