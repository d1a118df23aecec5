// ONNX elementwise ops, activations, reductions and their opset variants.

#include <cmath>
#include <cstring>
#include <limits>

#include "OnnxImporter.h"
#include "ember/OpTable.h"

namespace ember::onnx_import {
namespace {

/// A one-to-one op with no attributes.
OpHandler direct(OpKind kind) {
  return [kind](NodeBuilder& b) -> Error {
    EMBER_TRY(std::vector<Value> ins, b.inputs());
    EMBER_TRY(Value out, b.emit(kind, ins));
    return b.setOutput(0, out);
  };
}

/// A unary op whose float attributes have ONNX defaults and the same names.
OpHandler unaryWithFloats(OpKind kind, std::vector<std::pair<std::string, double>> defaults) {
  return [kind, defaults = std::move(defaults)](NodeBuilder& b) -> Error {
    EMBER_TRY(Value x, b.input(0));
    Attributes attrs;
    for (const auto& [name, dflt] : defaults) {
      EMBER_TRY(double v, b.attrFloat(name, dflt));
      attrs.set(name, v);
    }
    EMBER_TRY(Value out, b.emit(kind, {x}, std::move(attrs)));
    return b.setOutput(0, out);
  };
}

Error identity(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  return b.setOutput(0, x);
}

Error importPow(NodeBuilder& b) {
  EMBER_TRY(Value base, b.input(0));
  EMBER_TRY(Value exponent, b.input(1));
  // ONNX allows a differently typed exponent (opset 12); Ember's Pow does not.
  if (exponent.type.kind != base.type.kind) {
    EMBER_TRY(exponent, b.emit(OpKind::Cast, {exponent},
                               Attributes{{"to", std::string(elemKindName(base.type.kind))}}, "exponent"));
  }
  EMBER_TRY(Value out, b.emit(OpKind::Pow, {base, exponent}));
  return b.setOutput(0, out);
}

/// Sum, Max, Min, Mean: variadic in ONNX, a chain of binary nodes in Ember.
OpHandler variadic(OpKind kind, bool mean) {
  return [kind, mean](NodeBuilder& b) -> Error {
    EMBER_TRY(std::vector<Value> ins, b.inputs());
    if (ins.empty()) return makeError("needs at least one input");
    Value acc = ins[0];
    for (size_t i = 1; i < ins.size(); ++i) {
      const bool last = i + 1 == ins.size() && !mean;
      EMBER_TRY(acc, b.emit(kind, {acc, ins[i]}, {}, last ? "" : "acc" + std::to_string(i)));
    }
    if (mean && ins.size() > 1) {
      EMBER_TRY(acc, b.emit(OpKind::Div, {acc, b.scalar(acc.type.kind, double(ins.size()))}));
    }
    return b.setOutput(0, acc);
  };
}

/// Clip's bounds: constants (attributes before opset 11, constant inputs
/// of a float x since) or values (other inputs), each optional.
struct ClipBounds {
  std::optional<double> lo, hi;
  std::optional<Value> loValue, hiValue;
};

Expected<ClipBounds> readClipBounds(NodeBuilder& b, ElemKind kind) {
  ClipBounds bounds;
  if (b.opset() < 11) {
    if (b.hasAttr("min")) {
      EMBER_TRY(bounds.lo, b.attrFloat("min"));
    }
    if (b.hasAttr("max")) {
      EMBER_TRY(bounds.hi, b.attrFloat("max"));
    }
    return bounds;
  }
  // Bounds are optional inputs; non-constant bounds become Max/Min nodes.
  for (size_t i : {size_t(1), size_t(2)}) {
    if (!b.hasInput(i)) continue;
    EMBER_TRY(Value bound, b.input(i));
    if (bound.type.numElements() != 1) return makeError("clip bound ", i, " must be a scalar");
    auto& slot = i == 1 ? bounds.lo : bounds.hi;
    auto& slotValue = i == 1 ? bounds.loValue : bounds.hiValue;
    if (bound.isConstant() && isFloat(kind))
      slot = bound.constant->elementAsDouble(0);
    else
      slotValue = bound;
  }
  return bounds;
}

Error importClip(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  const ElemKind kind = x.type.kind;
  EMBER_TRY(ClipBounds bounds, readClipBounds(b, kind));
  auto& [lo, hi, loValue, hiValue] = bounds;
  Value out = x;
  if (isFloat(kind) && (lo || hi)) {
    Attributes attrs{{"min", lo.value_or(-double(std::numeric_limits<float>::max()))},
                     {"max", hi.value_or(double(std::numeric_limits<float>::max()))}};
    EMBER_TRY(out, b.emit(OpKind::Clip, {out}, std::move(attrs)));
  } else {
    // Integer inputs (or attribute bounds on them): exact Max/Min.
    if (lo) loValue = b.scalar(kind, *lo);
    if (hi) hiValue = b.scalar(kind, *hi);
  }
  if (loValue) {
    EMBER_TRY(Value bound, b.reshape(*loValue, {}, "min"));
    EMBER_TRY(out, b.emit(OpKind::Max, {out, bound}, {}, hiValue ? "min" : ""));
  }
  if (hiValue) {
    EMBER_TRY(Value bound, b.reshape(*hiValue, {}, "max"));
    EMBER_TRY(out, b.emit(OpKind::Min, {out, bound}));
  }
  return b.setOutput(0, out);
}

/// ONNX Cast of `x` to `target`. ONNX's INT8/UINT8 are i8q/u8q with scale 1
/// and offset 0, which Ember's Cast does not produce or read: to them, the
/// value is truncated toward zero (through i32 for floats) and saturated by
/// QuantizeLinear with scale 1 (ONNX leaves out-of-range values undefined;
/// ONNX Runtime wraps integers); from them, DequantizeLinear with scale 1.
Expected<Value> castTo(NodeBuilder& b, Value x, ElemKind target) {
  auto cast = [&b](const Value& v, ElemKind kind, std::string_view suffix) -> Expected<Value> {
    if (v.type.kind == kind) return v;
    return b.emit(OpKind::Cast, {v}, Attributes{{"to", std::string(elemKindName(kind))}}, suffix);
  };
  const bool fromInt8 = x.type.kind == ElemKind::Int8Q || x.type.kind == ElemKind::UInt8Q;
  const bool toInt8 = target == ElemKind::Int8Q || target == ElemKind::UInt8Q;
  if (x.type.kind == target) return x;
  if (fromInt8) {
    EMBER_TRY(x, b.emit(OpKind::DequantizeLinear, {x, b.scalar(ElemKind::F32, 1), b.scalar(x.type.kind, 0)},
                        Attributes{{"axis", int64_t(0)}}, toInt8 ? "int8_f32" : ""));
    if (!toInt8) return cast(x, target, "cast");
  }
  if (!toInt8) return cast(x, target, {});
  if (isFloat(x.type.kind)) {
    EMBER_TRY(x, cast(x, ElemKind::I32, "truncated"));
  }
  EMBER_TRY(x, cast(x, ElemKind::F32, "f32"));
  return b.emit(OpKind::QuantizeLinear, {x, b.scalar(ElemKind::F32, 1), b.scalar(target, 0)},
                Attributes{{"axis", int64_t(0)}});
}

Error importCast(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(int64_t to, b.attrInt("to"));
  auto target = typeFromOnnx(int32_t(to), {});
  if (!target) return target.error().withContext("attribute 'to'");
  EMBER_TRY(Value out, castTo(b, x, target->kind));
  return b.setOutput(0, out);
}

Error importCastLike(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value like, b.input(1));
  EMBER_TRY(Value out, castTo(b, x, like.type.kind));
  return b.setOutput(0, out);
}

Error importThresholdedRelu(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(double alpha, b.attrFloat("alpha", 1.0));
  const ElemKind kind = x.type.kind;
  EMBER_TRY(Value above, b.emit(OpKind::Greater, {x, b.scalar(kind, alpha)}, {}, "above"));
  EMBER_TRY(Value out, b.emit(OpKind::Select, {above, x, b.scalar(kind, 0)}));
  return b.setOutput(0, out);
}

Error importSoftsign(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value abs, b.emit(OpKind::Abs, {x}, {}, "abs"));
  EMBER_TRY(Value denom, b.emit(OpKind::Add, {abs, b.scalar(x.type.kind, 1)}, {}, "denom"));
  EMBER_TRY(Value out, b.emit(OpKind::Div, {x, denom}));
  return b.setOutput(0, out);
}

Error importMish(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value sp, b.emit(OpKind::Softplus, {x}, {}, "softplus"));
  EMBER_TRY(Value th, b.emit(OpKind::Tanh, {sp}, {}, "tanh"));
  EMBER_TRY(Value out, b.emit(OpKind::Mul, {x, th}));
  return b.setOutput(0, out);
}

// Celu(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
Error importCelu(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(double alpha, b.attrFloat("alpha", 1.0));
  const ElemKind kind = x.type.kind;
  EMBER_TRY(Value pos, b.emit(OpKind::Relu, {x}, {}, "pos"));
  EMBER_TRY(Value scaled, b.emit(OpKind::Div, {x, b.scalar(kind, alpha)}, {}, "scaled"));
  EMBER_TRY(Value ex, b.emit(OpKind::Exp, {scaled}, {}, "exp"));
  EMBER_TRY(Value em1, b.emit(OpKind::Sub, {ex, b.scalar(kind, 1)}, {}, "expm1"));
  EMBER_TRY(Value neg, b.emit(OpKind::Mul, {em1, b.scalar(kind, alpha)}, {}, "alpha"));
  EMBER_TRY(Value negPart, b.emit(OpKind::Min, {neg, b.scalar(kind, 0)}, {}, "neg"));
  EMBER_TRY(Value out, b.emit(OpKind::Add, {pos, negPart}));
  return b.setOutput(0, out);
}

Error importGelu(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(std::string approximate, b.attrString("approximate", "none"));
  if (approximate != "none" && approximate != "tanh")
    return makeError("unsupported approximate '", approximate, "'");
  EMBER_TRY(Value out, b.emit(OpKind::Gelu, {x}, Attributes{{"approximate", approximate}}));
  return b.setOutput(0, out);
}

Error importTan(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value sin, b.emit(OpKind::Sin, {x}, {}, "sin"));
  EMBER_TRY(Value cos, b.emit(OpKind::Cos, {x}, {}, "cos"));
  EMBER_TRY(Value out, b.emit(OpKind::Div, {sin, cos}));
  return b.setOutput(0, out);
}

/// Sinh and Cosh: (exp(x) -/+ exp(-x)) / 2.
OpHandler hyperbolic(OpKind combine) {
  return [combine](NodeBuilder& b) -> Error {
    EMBER_TRY(Value x, b.input(0));
    EMBER_TRY(Value ex, b.emit(OpKind::Exp, {x}, {}, "exp"));
    EMBER_TRY(Value negX, b.emit(OpKind::Neg, {x}, {}, "neg"));
    EMBER_TRY(Value enx, b.emit(OpKind::Exp, {negX}, {}, "exp_neg"));
    EMBER_TRY(Value sum, b.emit(combine, {ex, enx}, {}, "combine"));
    EMBER_TRY(Value out, b.emit(OpKind::Mul, {sum, b.scalar(x.type.kind, 0.5)}));
    return b.setOutput(0, out);
  };
}

// Shrink(x) = x < -lambd ? x + bias : (x > lambd ? x - bias : 0).
Error importShrink(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(double lambd, b.attrFloat("lambd", 0.5));
  EMBER_TRY(double bias, b.attrFloat("bias", 0.0));
  const ElemKind kind = x.type.kind;
  EMBER_TRY(Value below, b.emit(OpKind::Less, {x, b.scalar(kind, -lambd)}, {}, "below"));
  EMBER_TRY(Value above, b.emit(OpKind::Greater, {x, b.scalar(kind, lambd)}, {}, "above"));
  EMBER_TRY(Value plus, b.emit(OpKind::Add, {x, b.scalar(kind, bias)}, {}, "plus"));
  EMBER_TRY(Value minus, b.emit(OpKind::Sub, {x, b.scalar(kind, bias)}, {}, "minus"));
  EMBER_TRY(Value upper, b.emit(OpKind::Select, {above, minus, b.scalar(kind, 0)}, {}, "upper"));
  EMBER_TRY(Value out, b.emit(OpKind::Select, {below, plus, upper}));
  return b.setOutput(0, out);
}

// ---- reductions ---------------------------------------------------------------

struct ReduceSpec {
  OpKind kind;
  int64_t axesInputOpset;        ///< first opset where axes is an input
  std::optional<OpKind> before;  ///< applied to the input (ReduceL1: Abs)
  std::optional<OpKind> after;   ///< applied to the result (ReduceL2: Sqrt)
};

/// The normalised axes a Reduce* node reduces (all of them when none are
/// given), or nullopt when it is a no-op (noop_with_empty_axes, no axes).
Expected<std::optional<std::vector<int64_t>>> reductionAxes(NodeBuilder& b, int64_t axesInputOpset,
                                                            int64_t rank) {
  EMBER_TRY(int64_t noopWithEmptyAxes, b.attrInt("noop_with_empty_axes", 0));
  std::vector<int64_t> axes;
  if (b.opset() >= axesInputOpset) {
    if (b.hasInput(1)) {
      EMBER_TRY(axes, b.constInts(1, "axes"));
    }
  } else {
    EMBER_TRY(axes, b.attrInts("axes", std::vector<int64_t>{}));
  }
  if (axes.empty()) {
    if (noopWithEmptyAxes) return std::optional<std::vector<int64_t>>();
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  EMBER_TRY(axes, normalizeAxes(axes, rank));
  return std::optional<std::vector<int64_t>>(std::move(axes));
}

OpHandler reduce(ReduceSpec spec) {
  return [spec](NodeBuilder& b) -> Error {
    EMBER_TRY(Value x, b.input(0));
    EMBER_TRY(int64_t keepdims, b.attrInt("keepdims", 1));
    EMBER_TRY(std::optional<std::vector<int64_t>> reduced,
              reductionAxes(b, spec.axesInputOpset, int64_t(x.rank())));
    if (!reduced) return b.setOutput(0, x);
    const std::vector<int64_t>& axes = *reduced;
    Value v = x;
    if (spec.before) {
      EMBER_TRY(v, b.emit(*spec.before, {v}, {}, "pre"));
    }
    if (axes.empty()) {
      // A scalar: nothing to reduce.
      if (spec.kind == OpKind::ReduceSumSquare) {
        EMBER_TRY(v, b.emit(OpKind::Mul, {v, v}, {}, "square"));
      }
    } else {
      EMBER_TRY(v, b.emit(spec.kind, {v}, Attributes{{"axes", axes}, {"keepdims", int64_t(keepdims != 0)}},
                          spec.after ? "reduce" : ""));
    }
    if (spec.after) {
      EMBER_TRY(v, b.emit(*spec.after, {v}));
    }
    return b.setOutput(0, v);
  };
}

/// ReduceLogSumExp as max + log(sum(exp(x - max))): exp of x itself overflows
/// f32 for x > ~88 and underflows to log(0) = -inf for x < ~-103, where ONNX
/// Runtime and PyTorch return finite results.
Error reduceLogSumExp(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(int64_t keepdims, b.attrInt("keepdims", 1));
  EMBER_TRY(std::optional<std::vector<int64_t>> reduced, reductionAxes(b, 18, int64_t(x.rank())));
  if (!reduced || reduced->empty()) return b.setOutput(0, x);  // a no-op, or a scalar: log(exp(x)) = x
  const std::vector<int64_t>& axes = *reduced;
  EMBER_TRY(Value max,
            b.emit(OpKind::ReduceMax, {x}, Attributes{{"axes", axes}, {"keepdims", int64_t(1)}}, "max"));
  EMBER_TRY(Value shifted, b.emit(OpKind::Sub, {x, max}, {}, "shifted"));
  EMBER_TRY(Value exp, b.emit(OpKind::Exp, {shifted}, {}, "exp"));
  EMBER_TRY(Value sum, b.emit(OpKind::ReduceSum, {exp},
                              Attributes{{"axes", axes}, {"keepdims", int64_t(keepdims != 0)}}, "sum"));
  EMBER_TRY(Value log, b.emit(OpKind::Log, {sum}, {}, "log"));
  EMBER_TRY(Value offset, b.reshape(max, log.dims(), "max_reshaped"));
  EMBER_TRY(Value y, b.emit(OpKind::Add, {log, offset}));
  return b.setOutput(0, y);
}

OpHandler argReduce(OpKind kind) {
  return [kind](NodeBuilder& b) -> Error {
    EMBER_TRY(Value x, b.input(0));
    EMBER_TRY(int64_t axis, b.attrInt("axis", 0));
    EMBER_TRY(axis, normalizeAxis(axis, int64_t(x.rank())));
    EMBER_TRY(int64_t keepdims, b.attrInt("keepdims", 1));
    EMBER_TRY(int64_t selectLast, b.attrInt("select_last_index", 0));
    EMBER_TRY(Value out, b.emit(kind, {x},
                                Attributes{{"axis", axis},
                                           {"keepdims", int64_t(keepdims != 0)},
                                           {"select_last_index", int64_t(selectLast != 0)}}));
    return b.setOutput(0, out);
  };
}

Error importTopK(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  int64_t k = 0;
  if (b.opset() < 10) {
    EMBER_TRY(k, b.attrInt("k"));
  } else {
    EMBER_TRY(std::vector<int64_t> ks, b.constInts(1, "K"));
    if (ks.size() != 1) return makeError("input 'K' must hold one value");
    k = ks[0];
  }
  if (k < 0) return makeError("k ", k, " is negative");
  EMBER_TRY(int64_t axis, b.attrInt("axis", -1));
  EMBER_TRY(axis, normalizeAxis(axis, int64_t(x.rank())));
  EMBER_TRY(int64_t largest, b.attrInt("largest", 1));
  // sorted=0 allows any order, so sorted results are always valid.
  EMBER_TRY(
      std::vector<Value> outs,
      b.emitAll(OpKind::TopK, {x}, Attributes{{"k", k}, {"axis", axis}, {"largest", int64_t(largest != 0)}}));
  EMBER_RETURN_IF_ERROR(b.setOutput(0, outs[0]));
  return b.setOutput(1, outs[1]);
}

/// Softmax and LogSoftmax. Before opset 13 they flatten the input to 2-D at
/// `axis` and normalise over the second dimension.
OpHandler softmax(OpKind kind) {
  return [kind](NodeBuilder& b) -> Error {
    EMBER_TRY(Value x, b.input(0));
    const int64_t rank = int64_t(x.rank());
    const bool coerce = b.opset() < 13;
    EMBER_TRY(const int64_t axis, softmaxAxis(b, rank));
    if (!coerce || axis == rank - 1) {
      EMBER_TRY(Value out, b.emit(kind, {x}, Attributes{{"axis", axis}}));
      return b.setOutput(0, out);
    }
    const Dims& d = x.dims();
    EMBER_TRY(Value flat,
              b.reshape(x, {product(d, 0, size_t(axis)), product(d, size_t(axis), d.size())}, "2d"));
    EMBER_TRY(Value sm, b.emit(kind, {flat}, Attributes{{"axis", int64_t(1)}}));
    EMBER_TRY(Value out, b.reshape(sm, d, "nd"));
    return b.setOutput(0, out);
  };
}

Error importMod(NodeBuilder& b) {
  EMBER_TRY(Value lhs, b.input(0));
  EMBER_TRY(Value rhs, b.input(1));
  EMBER_TRY(int64_t fmod, b.attrInt("fmod", 0));
  if (fmod != 0 && fmod != 1) return makeError("attribute 'fmod' must be 0 or 1, got ", fmod);
  if (fmod == 0 && isFloat(lhs.type.kind)) return makeError("fmod=0 is invalid for floating-point inputs");
  EMBER_TRY(Value out, b.emit(OpKind::Mod, {lhs, rhs}, Attributes{{"fmod", fmod}}));
  return b.setOutput(0, out);
}

/// IsInf: x == +inf (detect_positive) or x == -inf (detect_negative).
Error importIsInf(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(int64_t positive, b.attrInt("detect_positive", 1));
  EMBER_TRY(int64_t negative, b.attrInt("detect_negative", 1));
  const double inf = std::numeric_limits<double>::infinity();
  std::optional<Value> out;
  if (positive) {
    EMBER_TRY(out, b.emit(OpKind::Equal, {x, b.scalar(x.type.kind, inf)}, {}, negative ? "positive" : ""));
  }
  if (negative) {
    EMBER_TRY(Value isNegInf,
              b.emit(OpKind::Equal, {x, b.scalar(x.type.kind, -inf)}, {}, positive ? "negative" : ""));
    if (out) {
      EMBER_TRY(out, b.emit(OpKind::Or, {*out, isNegInf}));
    } else {
      out = isNegInf;
    }
  }
  if (!out) {
    // Neither sign: all false (still x-shaped; x itself is unused).
    EMBER_RETURN_IF_ERROR(b.reserveConstant(Type(ElemKind::Bool, x.dims())));
    Tensor none(Type(ElemKind::Bool, x.dims()));
    if (none.sizeInBytes() > 0) std::memset(none.data(), 0, none.sizeInBytes());
    out = b.constant(std::move(none));
  }
  return b.setOutput(0, *out);
}

}  // namespace

Expected<int64_t> softmaxAxis(NodeBuilder& b, int64_t rank) {
  const bool coerce = b.opset() < 13;
  EMBER_TRY(int64_t axis, b.attrInt("axis", coerce ? 1 : -1));
  if (coerce && axis == rank) return makeError("axis ", axis, " is out of range for rank ", rank);
  return normalizeAxis(axis, rank);
}

void registerMathOps(OpTable& t) {
  // Binary elementwise (numpy broadcasting in both ONNX 7+ and Ember).
  t["Add"] = direct(OpKind::Add);
  t["Sub"] = direct(OpKind::Sub);
  t["Mul"] = direct(OpKind::Mul);
  t["Div"] = direct(OpKind::Div);
  t["Pow"] = importPow;
  t["Equal"] = direct(OpKind::Equal);
  t["Less"] = direct(OpKind::Less);
  t["LessOrEqual"] = direct(OpKind::LessEqual);
  t["Greater"] = direct(OpKind::Greater);
  t["GreaterOrEqual"] = direct(OpKind::GreaterEqual);
  t["And"] = direct(OpKind::And);
  t["Or"] = direct(OpKind::Or);
  t["Xor"] = direct(OpKind::Xor);
  t["Where"] = direct(OpKind::Select);
  t["PRelu"] = direct(OpKind::PRelu);
  t["Sum"] = variadic(OpKind::Add, false);
  t["Mean"] = variadic(OpKind::Add, true);
  t["Max"] = variadic(OpKind::Max, false);
  t["Min"] = variadic(OpKind::Min, false);

  // Unary elementwise: an Ops.def op of the family with no attributes is
  // named as its ONNX counterpart (Relu, Sin, IsNaN, ...), so it maps one to
  // one without a list here; the ones with attributes follow.
  for (size_t i = 0; i < kNumOpKinds; ++i) {
    const OpKind kind = OpKind(i);
    if (opFamily(kind) == OpFamily::ElementwiseUnary && opInfo(kind).attributes.empty())
      t[std::string(opName(kind))] = direct(kind);
  }
  t["Identity"] = identity;
  t["IsInf"] = importIsInf;
  t["Mod"] = importMod;
  t["Det"] = direct(OpKind::Det);
  t["Clip"] = importClip;
  t["Cast"] = importCast;
  t["CastLike"] = importCastLike;
  t["LeakyRelu"] = unaryWithFloats(OpKind::LeakyRelu, {{"alpha", 0.01}});
  t["Elu"] = unaryWithFloats(OpKind::Elu, {{"alpha", 1.0}});
  t["Selu"] = unaryWithFloats(OpKind::Selu,
                              {{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}});
  t["HardSigmoid"] = unaryWithFloats(OpKind::HardSigmoid, {{"alpha", 0.2}, {"beta", 0.5}});
  t["Gelu"] = importGelu;
  t["ThresholdedRelu"] = importThresholdedRelu;
  t["Softsign"] = importSoftsign;
  t["Mish"] = importMish;
  t["Celu"] = importCelu;
  t["Tan"] = importTan;
  t["Sinh"] = hyperbolic(OpKind::Sub);
  t["Cosh"] = hyperbolic(OpKind::Add);
  t["Shrink"] = importShrink;
  t["Softmax"] = softmax(OpKind::Softmax);
  t["LogSoftmax"] = softmax(OpKind::LogSoftmax);

  // Reductions: ReduceSum takes axes as an input from opset 13, the others from 18.
  t["ReduceSum"] = reduce({OpKind::ReduceSum, 13, {}, {}});
  t["ReduceMax"] = reduce({OpKind::ReduceMax, 18, {}, {}});
  t["ReduceMin"] = reduce({OpKind::ReduceMin, 18, {}, {}});
  t["ReduceProd"] = reduce({OpKind::ReduceProd, 18, {}, {}});
  t["ReduceMean"] = reduce({OpKind::ReduceMean, 18, {}, {}});
  t["ReduceSumSquare"] = reduce({OpKind::ReduceSumSquare, 18, {}, {}});
  t["ReduceL1"] = reduce({OpKind::ReduceSum, 18, OpKind::Abs, {}});
  t["ReduceL2"] = reduce({OpKind::ReduceSumSquare, 18, {}, OpKind::Sqrt});
  t["ReduceLogSum"] = reduce({OpKind::ReduceSum, 18, {}, OpKind::Log});
  t["ReduceLogSumExp"] = reduceLogSumExp;
  t["ArgMax"] = argReduce(OpKind::ArgMax);
  t["ArgMin"] = argReduce(OpKind::ArgMin);
  t["TopK"] = importTopK;
}

}  // namespace ember::onnx_import
