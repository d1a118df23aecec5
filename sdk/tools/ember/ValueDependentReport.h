// The compile report's warning for ops whose output shape depends on input
// values (NonZero, Unique, NonMaxSuppression) and were compiled at their
// static upper bound (docs/importer.md, "Value-dependent output shapes").
#pragma once

#include <ostream>

#include "ember/Graph.h"

namespace ember::cli {

/// One "warning:" line per bounded node, naming it, its bound and the output
/// that holds its valid count.
void printValueDependentWarnings(std::ostream& os, const Function& function);

}  // namespace ember::cli
