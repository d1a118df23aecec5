// RandomUniform, RandomNormal, their *Like forms and Bernoulli: the seeded
// Random primitive. Its input gives the shape (RandomUniform/RandomNormal: a
// constant of the `shape` attribute, so the node folds to a constant at
// import: the generator is deterministic, so these are the values a run would
// produce) or, for Bernoulli, the probabilities. No `seed` means seed 0.

#include <cstring>

#include "OnnxImporter.h"
#include "ember/Importer.h"

namespace ember::onnx_import {
namespace {

constexpr int64_t kOnnxFloat = 1;

struct Params {
  const char* distribution;
  bool like;  // shape (and default dtype) from input 0, else the `shape` attribute
};

Expected<Value> shapeSource(NodeBuilder& b, bool like) {
  if (like) return b.input(0);
  EMBER_TRY(std::vector<int64_t> shape, b.attrInts("shape"));
  for (int64_t d : shape)
    if (d < 0) return makeError("attribute 'shape' has a negative dim ", d);
  Type type(ElemKind::Bool, Dims(shape.begin(), shape.end()));
  EMBER_RETURN_IF_ERROR(b.reserveConstant(type));
  Tensor zeros(type);
  if (zeros.sizeInBytes() > 0) std::memset(zeros.data(), 0, zeros.sizeInBytes());
  return b.constant(std::move(zeros));
}

OpHandler randomHandler(Params params) {
  return [params](NodeBuilder& b) -> Error {
    const std::string distribution = params.distribution;
    const bool fromInput = params.like || distribution == "bernoulli";
    EMBER_TRY(Value source, shapeSource(b, fromInput));
    ElemKind kind = fromInput ? source.type.kind : ElemKind::F32;
    if (b.hasAttr("dtype") || !fromInput) {
      EMBER_TRY(int64_t dtype, b.attrInt("dtype", kOnnxFloat));
      EMBER_TRY(Type type, typeFromOnnx(int32_t(dtype), {}));
      kind = type.kind;
    }
    EMBER_TRY(double seed, b.attrFloat("seed", 0.0));
    EMBER_TRY(double low, b.attrFloat("low", 0.0));
    EMBER_TRY(double high, b.attrFloat("high", 1.0));
    EMBER_TRY(double mean, b.attrFloat("mean", 0.0));
    EMBER_TRY(double scale, b.attrFloat("scale", 1.0));
    EMBER_TRY(Value out, b.emit(OpKind::Random, {source},
                                Attributes{{"distribution", distribution},
                                           {"seed", seed},
                                           {"low", low},
                                           {"high", high},
                                           {"mean", mean},
                                           {"scale", scale},
                                           {"to", std::string(elemKindName(kind))}}));
    return b.setOutput(0, out);
  };
}

}  // namespace

void registerRandomOps(OpTable& t) {
  t["RandomUniform"] = randomHandler({"uniform", false});
  t["RandomNormal"] = randomHandler({"normal", false});
  t["RandomUniformLike"] = randomHandler({"uniform", true});
  t["RandomNormalLike"] = randomHandler({"normal", true});
  t["Bernoulli"] = randomHandler({"bernoulli", true});
}

}  // namespace ember::onnx_import

namespace ember {

bool isRandomOnnxOp(std::string_view opType) {
  return opType == "RandomUniform" || opType == "RandomNormal" || opType == "RandomUniformLike" ||
         opType == "RandomNormalLike" || opType == "Bernoulli" || opType == "Multinomial";
}

}  // namespace ember
