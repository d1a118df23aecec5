#include "backends/BuiltinBackends.h"

#include <cassert>

#include "ember/Runtime.h"

extern "C" const EmberBackendPlugin* ember_backend_plugin_reference();
extern "C" const EmberBackendPlugin* ember_backend_plugin_cpu();
extern "C" const EmberBackendPlugin* ember_backend_plugin_npu();

namespace ember {

void registerBuiltinBackends() {
  for (const EmberBackendPlugin* plugin :
       {ember_backend_plugin_reference(), ember_backend_plugin_cpu(), ember_backend_plugin_npu()}) {
    Error e = BackendRegistry::global().add(plugin);
    assert(!e && "built-in backends are built with this SDK's ABI");
    (void)e;
  }
}

}  // namespace ember
