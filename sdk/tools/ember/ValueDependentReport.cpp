// Warnings for value-dependent output shapes compiled at their bound.
#include "ValueDependentReport.h"

#include <string>

#include "ember/OpTable.h"

namespace ember::cli {

std::vector<std::string> valueDependentWarnings(const Function& function) {
  std::vector<std::string> warnings;
  for (Node* node : function.nodes()) {
    const OpKind kind = node->kind();
    if (opFamily(kind) != OpFamily::ValueDependent) continue;
    const NodeValue count(node, unsigned(node->numResults() - 1));
    std::string countOutput;
    for (const auto& [name, value] : function.outputs())
      if (value == count) countOutput = name;
    warnings.push_back("node '" + node->name() + "' (" + std::string(opName(kind)) +
                       "): the output shape depends on input values; compiled at its bound " +
                       node->resultType(0).str() +
                       (countOutput.empty() ? std::string(", entries past the valid count are 0")
                                            : ", valid entries counted in output '" + countOutput + "'"));
  }
  return warnings;
}

void printValueDependentWarnings(std::ostream& os, const Function& function) {
  for (const std::string& warning : valueDependentWarnings(function))
    os << "warning:      " << warning << "\n";
}

ImportNotes importNotes(const std::vector<std::string>& bound, const std::map<std::string, Tensor>& values,
                        const Function& function) {
  ImportNotes notes{{}, valueDependentWarnings(function)};
  for (const std::string& name : bound) notes.boundInputs.emplace_back(name, &values.at(name));
  return notes;
}

}  // namespace ember::cli
