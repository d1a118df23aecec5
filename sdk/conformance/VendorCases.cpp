// Conformance cases of the registered vendor ops (ember/VendorOp.h): one per
// example a def gives, named "<op>/<example>", under the op row VendorOp. The
// oracle (the reference backend) runs the def's reference kernel, so a
// backend's own kernel is compared with the semantics it registered.
#include "Cases.h"
#include "ember/VendorOp.h"

namespace ember::conformance {

std::vector<CaseSpec> vendorOpCases() {
  std::vector<CaseSpec> cases;
  for (const VendorOpDef* def : VendorOpRegistry::global().all())
    for (const VendorOpExample& example : def->examples) {
      const std::string op = def->name;
      cases.push_back({OpKind::VendorOp, op + "/" + example.name, [op, example](CaseBuilder& b) {
                         std::vector<NodeValue> operands;
                         for (size_t i = 0; i < example.operandTypes.size(); ++i) {
                           const bool constant =
                               i < example.constantOperands.size() && example.constantOperands[i];
                           const Type& type = example.operandTypes[i];
                           operands.push_back(constant ? b.weight(type) : b.input(type));
                         }
                         Attributes attrs = example.attrs;
                         attrs.set(std::string(kVendorOpAttr), op);
                         return b.node(OpKind::VendorOp, std::move(operands), std::move(attrs));
                       }});
    }
  return cases;
}

}  // namespace ember::conformance
