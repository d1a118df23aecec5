// The backends that ship in the tree. They register through the same plugin
// descriptor that an out-of-tree shared library exports.
#pragma once

namespace ember {

/// Registers every in-tree backend with BackendRegistry::global(). Idempotent.
void registerBuiltinBackends();

}  // namespace ember
