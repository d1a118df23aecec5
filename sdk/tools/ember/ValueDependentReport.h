// The compile report's warning for ops whose output shape depends on input
// values (NonZero, Unique, NonMaxSuppression) and were compiled at their
// static upper bound (docs/importer.md, "Value-dependent output shapes").
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "Tool.h"
#include "ember/Graph.h"

namespace ember::cli {

/// One warning per bounded node, naming it, its bound and the output that
/// holds its valid count (the text report's "warning:" lines and the JSON
/// report's `warnings`).
std::vector<std::string> valueDependentWarnings(const Function& function);
void printValueDependentWarnings(std::ostream& os, const Function& function);

/// The report's notes: the inputs `bound` (their values in `values`) and the
/// function's value-dependent warnings.
ImportNotes importNotes(const std::vector<std::string>& bound, const std::map<std::string, Tensor>& values,
                        const Function& function);

}  // namespace ember::cli
