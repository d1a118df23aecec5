// The instruction-IR passes, one per file. Each returns whether it changed
// the function.
#pragma once

#include "ember/IR.h"

namespace ember {

bool eliminateOutputCopies(IRFunction& ir);

}  // namespace ember
