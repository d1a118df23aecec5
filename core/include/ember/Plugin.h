// The backend plugin ABI. In-tree backends and out-of-tree shared libraries
// register the same way: a plugin descriptor with an ABI version and a
// factory.
#pragma once

#include <cstdint>

#include "ember/Backend.h"
#include "ember/VendorOp.h"

/// Bumped whenever the Backend interface or this descriptor changes.
/// 7: Backend::unsupportedReason (why a node falls back).
/// 6: the generic DeviceReport (counters and backend-declared columns).
/// 5: the device model (Device::runAsync, keepsTensors, name; DeviceTensor).
/// 4: Backend::options(). 3: NodeInfo::attributes.
#define EMBER_PLUGIN_ABI_VERSION 7

extern "C" {
/// What a backend plugin exports. A shared library exports the C function
/// `ember_backend_plugin` returning a pointer to a static descriptor.
struct EmberBackendPlugin {
  uint32_t abiVersion;          ///< EMBER_PLUGIN_ABI_VERSION the plugin was built with
  const char* name;             ///< backend name, as in --backend NAME
  const char* summary;          ///< one line for `ember backends`
  ember::Backend* (*create)();  ///< new backend; the caller owns it
  /// The vendor ops the backend registers (ember/VendorOp.h), read once when
  /// the plugin is registered; null: none. Since ABI 5.
  std::vector<ember::VendorOpDef> (*vendorOps)() = nullptr;
};
typedef const EmberBackendPlugin* (*EmberBackendPluginEntry)();
}

/// Exports the entry point from a backend shared library.
#define EMBER_DEFINE_BACKEND_PLUGIN(NAME, SUMMARY, CLASS)                                              \
  extern "C" __attribute__((visibility("default"))) const EmberBackendPlugin* ember_backend_plugin() { \
    static const EmberBackendPlugin plugin{EMBER_PLUGIN_ABI_VERSION, NAME, SUMMARY,                    \
                                           []() -> ember::Backend* { return new CLASS(); }};           \
    return &plugin;                                                                                    \
  }

/// The same, for a backend that registers vendor ops: VENDOR_OPS is a function
/// `std::vector<ember::VendorOpDef> f()` (docs/backend-guide.md, "Fused and vendor ops").
#define EMBER_DEFINE_BACKEND_PLUGIN_WITH_VENDOR_OPS(NAME, SUMMARY, CLASS, VENDOR_OPS)                     \
  extern "C" __attribute__((visibility("default"))) const EmberBackendPlugin* ember_backend_plugin() {    \
    static const EmberBackendPlugin plugin{EMBER_PLUGIN_ABI_VERSION, NAME, SUMMARY,                       \
                                           []() -> ember::Backend* { return new CLASS(); }, &VENDOR_OPS}; \
    return &plugin;                                                                                       \
  }
