// toy.ConvBiasRelu: declaration, type rule, reference kernel, graph patterns
// and the toy's own fused kernel.
#include "ToyVendorOps.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ember/Kernels.h"

namespace toy {
namespace {

using namespace ember;

/// The Conv attributes of a toy.ConvBiasRelu (all of its own attributes).
Attributes convAttributes(const Attributes& attrs) {
  Attributes conv;
  for (const char* name : {"strides", "pads", "dilations", "group"})
    if (const AttrValue* v = attrs.find(name)) conv.set(name, *v);
  return conv;
}

// ---- Declaration: operands, attributes, type rule, reference kernel ----------

/// Conv's type rule, on f32 only (the toy's kernel is f32).
Expected<Type> convBiasReluType(std::span<const Type> inputs, const Attributes& attrs) {
  for (const Type& t : inputs)
    if (t.kind != ElemKind::F32) return makeError(kConvBiasRelu, ": operands must be f32, got ", t.str());
  auto types = inferResultTypes(OpKind::Conv, inputs, convAttributes(attrs));
  if (!types) return types.error();
  return (*types)[0];
}

/// The semantics, from Ember's own Conv and Relu kernels: what conformance
/// and the reference backend (fallback) run.
Error convBiasReluReference(const Attributes& attrs, std::span<const ConstTensorRef> inputs,
                            const TensorRef& output) {
  EMBER_RETURN_IF_ERROR(runKernel(OpKind::Conv, convAttributes(attrs), inputs, std::span(&output, 1)));
  const ConstTensorRef convolved = output;
  return runKernel(OpKind::Relu, {}, std::span(&convolved, 1), std::span(&output, 1));
}

// ---- Patterns -------------------------------------------------------------------

bool isF32Conv(const Node& node) {
  if (node.kind() != OpKind::Conv || node.resultType().kind != ElemKind::F32) return false;
  return std::all_of(node.inputs().begin(), node.inputs().end(),
                     [](const NodeValue& v) { return v.type().kind == ElemKind::F32; });
}

/// Relu(Conv(x, w, b)) where the Relu is the Conv's only user (BatchNorm
/// folding has already turned Conv -> BatchNorm into a Conv with a bias).
Expected<bool> fuseConvRelu(VendorRewriter& rewriter, Node& relu) {
  if (relu.kind() != OpKind::Relu) return false;
  const NodeValue convolved = relu.input(0);
  Node* conv = convolved.node;
  if (!isF32Conv(*conv) || !rewriter.hasSingleUse(convolved)) return false;
  auto fused = rewriter.createVendorOp(kConvBiasRelu, conv->name() + "_relu", conv->inputs(), conv->attrs());
  if (!fused) return fused.error();
  rewriter.replaceAllUsesWith(relu.result(), (*fused)->result());
  return true;
}

/// A constant that adds one value per output channel: f32, every dim 1
/// except the last (the channel axis of the NHWC result), which is 1 or
/// `channels`, and no more dims than the Conv's result.
bool isPerChannelConstant(const Node& node, const Type& convResult) {
  if (!node.isConstant()) return false;
  const Type& t = node.resultType();
  if (t.kind != ElemKind::F32 || t.dims.empty() || t.dims.size() > convResult.dims.size()) return false;
  const int64_t last = t.dims.back();
  if (last != 1 && last != convResult.dims.back()) return false;
  return std::all_of(t.dims.begin(), t.dims.end() - 1, [](int64_t d) { return d == 1; });
}

/// Relu(Add(Conv(x, w, b), c)) with a per-channel constant c and a constant
/// bias b, each intermediate used once: the fused op gets the bias b + c.
Expected<bool> fuseConvAddRelu(VendorRewriter& rewriter, Node& relu) {
  if (relu.kind() != OpKind::Relu) return false;
  const NodeValue sum = relu.input(0);
  Node* add = sum.node;
  if (add->kind() != OpKind::Add || !rewriter.hasSingleUse(sum)) return false;
  for (unsigned side = 0; side < 2; ++side) {
    const NodeValue convolved = add->input(side);
    Node* conv = convolved.node;
    Node* offset = add->input(1 - side).node;
    if (!isF32Conv(*conv) || !rewriter.hasSingleUse(convolved) || !conv->input(2).node->isConstant() ||
        !isPerChannelConstant(*offset, conv->resultType()))
      continue;
    const Tensor& bias = conv->input(2).node->payload();
    const Tensor& extra = offset->payload();
    Tensor combined(bias.type());
    const bool perChannel = extra.type().numElements() != 1;
    for (int64_t o = 0; o < bias.type().numElements(); ++o)
      combined.as<float>()[o] = bias.as<float>()[o] + extra.as<float>()[perChannel ? o : 0];
    Node* biasNode = rewriter.function().createConstant(conv->name() + "_bias", std::move(combined));
    auto fused = rewriter.createVendorOp(kConvBiasRelu, conv->name() + "_relu",
                                         {conv->input(0), conv->input(1), biasNode->result()}, conv->attrs());
    if (!fused) return fused.error();
    rewriter.replaceAllUsesWith(relu.result(), (*fused)->result());
    return true;
  }
  return false;
}

// ---- Conformance cases ------------------------------------------------------------

/// input [1,H,W,C], filter [O,K,K,C/group] and bias [O] (both constant).
VendorOpExample convExample(std::string name, Dims input, int64_t outChannels, int64_t kernel, int64_t stride,
                            int64_t pad, int64_t dilation, int64_t group) {
  const Dims filter = {outChannels, kernel, kernel, input[3] / group};
  return {std::move(name),
          {Type(ElemKind::F32, std::move(input)), Type(ElemKind::F32, filter),
           Type(ElemKind::F32, {outChannels})},
          {false, true, true},
          Attributes{{"strides", std::vector<int64_t>{stride, stride}},
                     {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                     {"dilations", std::vector<int64_t>{dilation, dilation}},
                     {"group", group}}};
}

std::vector<VendorOpExample> convBiasReluExamples() {
  return {convExample("f32/3x3/pad1", {1, 8, 8, 4}, 6, 3, 1, 1, 1, 1),
          convExample("f32/3x3/stride2", {2, 9, 9, 3}, 5, 3, 2, 1, 1, 1),
          convExample("f32/1x1/group2", {1, 5, 5, 4}, 6, 1, 1, 0, 1, 2),
          convExample("f32/3x3/dilation2", {1, 9, 9, 2}, 3, 3, 1, 2, 2, 1)};
}

}  // namespace

std::vector<VendorOpDef> vendorOps() {
  VendorOpDef convBiasRelu;
  convBiasRelu.name = kConvBiasRelu;
  convBiasRelu.operandNames = {"input", "filter", "bias"};
  convBiasRelu.attributes = {{"strides", AttrKind::Ints},
                             {"pads", AttrKind::Ints},
                             {"dilations", AttrKind::Ints},
                             {"group", AttrKind::Int}};
  convBiasRelu.typeRule = convBiasReluType;
  convBiasRelu.referenceKernel = convBiasReluReference;
  convBiasRelu.patterns = {{"conv-relu", fuseConvRelu}, {"conv-add-relu", fuseConvAddRelu}};
  convBiasRelu.examples = convBiasReluExamples();
  return {convBiasRelu};
}

bool isConvBiasRelu(const NodeInfo& info) {
  if (info.kind != OpKind::VendorOp || vendorOpName(info.attributes) != kConvBiasRelu) return false;
  return info.inputTypes.size() == 3 && info.resultTypes.size() == 1 &&
         std::all_of(info.inputTypes.begin(), info.inputTypes.end(),
                     [](const Type& t) { return t.kind == ElemKind::F32; });
}

// ---- The toy's own kernel --------------------------------------------------------

void runConvBiasRelu(const Attributes& attrs, std::span<const ConstTensorRef> inputs,
                     const TensorRef& output) {
  const Dims& in = inputs[0].type.dims;      // [N, H, W, C]
  const Dims& filter = inputs[1].type.dims;  // [O, KH, KW, C / group]
  const Dims& out = output.type.dims;        // [N, OH, OW, O]
  const std::vector<int64_t>& strides = attrs.getInts("strides");
  const std::vector<int64_t>& pads = attrs.getInts("pads");  // top, left, bottom, right
  const std::vector<int64_t>& dilations = attrs.getInts("dilations");
  const int64_t groups = attrs.getInt("group");
  const int64_t H = in[1], W = in[2], C = in[3], O = filter[0], KH = filter[1], KW = filter[2];
  const int64_t groupIn = filter[3], groupOut = O / groups;
  const float* x = inputs[0].as<float>();
  const float* w = inputs[1].as<float>();
  const float* bias = inputs[2].as<float>();
  float* y = output.as<float>();

  // The filter as [group][KH][KW][C/group][O/group], so the innermost loop
  // runs over contiguous output channels (and vectorises without reassociation).
  std::vector<float> laid(size_t(O * KH * KW * groupIn));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw)
        for (int64_t c = 0; c < groupIn; ++c)
          laid[size_t((((o / groupOut * KH + kh) * KW + kw) * groupIn + c) * groupOut + o % groupOut)] =
              w[((o * KH + kh) * KW + kw) * groupIn + c];

  std::vector<float> acc(static_cast<size_t>(O));
  for (int64_t n = 0; n < out[0]; ++n)
    for (int64_t oh = 0; oh < out[1]; ++oh)
      for (int64_t ow = 0; ow < out[2]; ++ow) {
        std::copy(bias, bias + O, acc.begin());
        for (int64_t g = 0; g < groups; ++g) {
          float* a = acc.data() + g * groupOut;
          for (int64_t kh = 0; kh < KH; ++kh) {
            const int64_t ih = oh * strides[0] - pads[0] + kh * dilations[0];
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < KW; ++kw) {
              const int64_t iw = ow * strides[1] - pads[1] + kw * dilations[1];
              if (iw < 0 || iw >= W) continue;
              const float* pixel = x + ((n * H + ih) * W + iw) * C + g * groupIn;
              const float* taps = laid.data() + ((g * KH + kh) * KW + kw) * groupIn * groupOut;
              for (int64_t c = 0; c < groupIn; ++c) {
                const float v = pixel[c];
                const float* row = taps + c * groupOut;
                for (int64_t o = 0; o < groupOut; ++o) a[o] += v * row[o];
              }
            }
          }
        }
        float* pixelOut = y + ((n * out[1] + oh) * out[2] + ow) * O;
        for (int64_t o = 0; o < O; ++o) pixelOut[o] = std::max(acc[size_t(o)], 0.0f);
      }
}

}  // namespace toy
