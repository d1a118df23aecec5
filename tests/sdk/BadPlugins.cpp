// Plugins the loader must refuse with a one-line error naming the file:
// BAD_ABI exports a descriptor with a future ABI version; otherwise the
// library exports no entry point at all.
#include "ember/Plugin.h"

#ifdef BAD_ABI
extern "C" __attribute__((visibility("default"))) const EmberBackendPlugin* ember_backend_plugin() {
  static const EmberBackendPlugin plugin{EMBER_PLUGIN_ABI_VERSION + 1, "future", "built against a newer SDK",
                                         []() -> ember::Backend* { return nullptr; }};
  return &plugin;
}
#else
extern "C" __attribute__((visibility("default"))) int not_an_ember_plugin() { return 42; }
#endif
