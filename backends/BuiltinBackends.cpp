#include "backends/BuiltinBackends.h"

#include <cassert>

#include "ember/Runtime.h"

extern "C" const EmberBackendPlugin* ember_backend_plugin_reference();

namespace ember {

void registerBuiltinBackends() {
  Error e = BackendRegistry::global().add(ember_backend_plugin_reference());
  assert(!e && "built-in backends are built with this SDK's ABI");
  (void)e;
}

}  // namespace ember
