// The reference backend as the installed SDK's fallback: an application that
// links Ember::ember (sdk/cmake/EmberPackage.cmake) is linked with
// --undefined=ember_installed_fallback_backend, which pulls this object out of
// libember_backend_reference.a; its initializer registers "reference" with
// BackendRegistry::global() before main, so CompileOptions::fallbackBackends
// = {"reference"} works with no registration of the application's own.
#include "ember/Plugin.h"
#include "ember/Runtime.h"

extern "C" const EmberBackendPlugin* ember_backend_plugin_reference();

extern "C" const EmberBackendPlugin* ember_installed_fallback_backend() {
  return ember_backend_plugin_reference();
}

namespace {
// Registering the same descriptor twice is harmless (the in-tree tool does too).
[[maybe_unused]] const bool registered = !ember::BackendRegistry::global().add(ember_installed_fallback_backend(), "built-in");
}  // namespace
