// Plugins whose vendor ops the loader must refuse, with a one-line error
// naming the file: DUPLICATE_NAME registers one name twice, TAKEN_NAME
// registers the toy example's toy.ConvBiasRelu, UNNAMESPACED a name without
// a namespace.
#include <cstring>

#include "ember/Plugin.h"

namespace {

class NoKernelsBackend final : public ember::Backend {
 public:
  std::string name() const override { return BAD_BACKEND_NAME; }
  bool supports(const ember::NodeInfo&) const override { return false; }
  ember::Expected<std::unique_ptr<ember::CompiledFunction>> compile(const ember::IRFunction&) const override {
    return ember::makeError(BAD_BACKEND_NAME, " compiles nothing");
  }
};

/// A well-formed op named `name`: identity type rule, copying kernel.
ember::VendorOpDef identityOp(std::string name) {
  ember::VendorOpDef def;
  def.name = std::move(name);
  def.operandNames = {"input"};
  def.typeRule = [](std::span<const ember::Type> inputs,
                    const ember::Attributes&) -> ember::Expected<ember::Type> { return inputs[0]; };
  def.referenceKernel = [](const ember::Attributes&, std::span<const ember::ConstTensorRef> inputs,
                           const ember::TensorRef& output) {
    std::memcpy(output.data, inputs[0].data, output.type.sizeInBytes());
    return ember::Error::success();
  };
  return def;
}

std::vector<ember::VendorOpDef> badVendorOps() {
#if defined(DUPLICATE_NAME)
  return {identityOp("dup.Twice"), identityOp("dup.Once"), identityOp("dup.Twice")};
#elif defined(TAKEN_NAME)
  return {identityOp("toy.ConvBiasRelu")};
#else
  return {identityOp("NoNamespace")};
#endif
}

}  // namespace

EMBER_DEFINE_BACKEND_PLUGIN_WITH_VENDOR_OPS(BAD_BACKEND_NAME,
                                            "registers a vendor op the loader refuses (tests/vendor_op)",
                                            NoKernelsBackend, badVendorOps)
