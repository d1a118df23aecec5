// Backend plugins: descriptors registered in-process or loaded from shared
// libraries with dlopen. The ABI version is checked before anything is used.
#include <dlfcn.h>

#include <algorithm>
#include <filesystem>

#include "ember/Runtime.h"
#include "ember/VendorOp.h"

namespace ember {

BackendRegistry& BackendRegistry::global() {
  static BackendRegistry registry;
  return registry;
}

Error BackendRegistry::add(const EmberBackendPlugin* plugin, std::string origin) {
  if (!plugin) return makeError(origin, ": the plugin entry point returned no descriptor");
  if (plugin->abiVersion != EMBER_PLUGIN_ABI_VERSION)
    return makeError(origin, ": backend plugin ABI version ", plugin->abiVersion, " does not match Ember's ",
                     EMBER_PLUGIN_ABI_VERSION, "; rebuild the plugin against this SDK");
  if (!plugin->name || !*plugin->name || !plugin->create)
    return makeError(origin, ": backend plugin has no name or factory");
  for (const Registered& r : plugins_)
    if (std::string(r.plugin->name) == plugin->name) {
      if (r.plugin == plugin) return Error::success();  // registering twice is harmless
      return makeError(origin, ": backend '", plugin->name, "' is already provided by ", r.origin);
    }
  if (plugin->vendorOps)
    EMBER_RETURN_IF_ERROR(
        VendorOpRegistry::global().add(plugin->name, plugin->vendorOps()).withContext(origin));
  plugins_.push_back({plugin, std::move(origin)});
  return Error::success();
}

Error BackendRegistry::loadLibrary(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return makeError(path, ": cannot load backend plugin: ", dlerror());
  auto entry = reinterpret_cast<EmberBackendPluginEntry>(dlsym(handle, "ember_backend_plugin"));
  if (!entry) {
    dlclose(handle);
    return makeError(path, ": not an Ember backend plugin (no 'ember_backend_plugin' symbol)");
  }
  // The library stays loaded: its descriptor and code are used until exit.
  return add(entry(), path);
}

Error BackendRegistry::loadDirectory(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return makeError(dir, ": backend path is not a directory");
  std::vector<std::string> libs;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.starts_with("lib") && name.ends_with(".so"))
      libs.push_back(entry.path().string());
  }
  std::sort(libs.begin(), libs.end());
  for (const std::string& lib : libs) EMBER_RETURN_IF_ERROR(loadLibrary(lib));
  return Error::success();
}

Expected<std::unique_ptr<Backend>> BackendRegistry::create(const std::string& name) const {
  for (const Registered& r : plugins_)
    if (name == r.plugin->name) return std::unique_ptr<Backend>(r.plugin->create());
  std::string known;
  for (const Registered& r : plugins_) known += (known.empty() ? "" : ", ") + std::string(r.plugin->name);
  return makeError("unknown backend '", name, "' (available: ", known.empty() ? "none" : known, ")");
}

std::vector<BackendRegistry::Entry> BackendRegistry::list() const {
  std::vector<Entry> out;
  out.reserve(plugins_.size());
  for (const Registered& r : plugins_)
    out.push_back({r.plugin->name, r.plugin->summary ? r.plugin->summary : "", r.origin});
  return out;
}

}  // namespace ember
