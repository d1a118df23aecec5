// `ember compile --backend cpu -o model.o --header model.h`: the AOT object
// (Jit.cpp's writeAotObject) and the C header an application compiles against.
#pragma once

#include <string>

#include "Jit.h"

namespace ember::cpu {

/// Bytes the entry point needs in `scratch`: the I/O region, the
/// activations, and 64 bytes of slack to align it.
uint64_t aotScratchBytes(const AotModule& module);

/// The header: the entry point, input/output names, types, shapes and byte
/// counts, and the scratch size, as C macros.
std::string aotHeaderText(const AotModule& module);

/// A C identifier from a file name's stem: "resnet-18.o" -> "resnet_18".
std::string aotSymbolFromPath(const std::string& objectPath);

/// Writes the object to `objectPath` and the header to `headerPath`.
Error writeAotBundle(const AotModule& module, const std::string& objectPath, const std::string& headerPath);

}  // namespace ember::cpu
