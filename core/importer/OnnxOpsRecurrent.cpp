// ONNX recurrent ops (RNN, GRU, LSTM), unrolled over the static sequence
// length into primitives, so that every backend runs them: the input
// projection X * W^T of all steps is one MatMul, then each step is a MatMul
// with R^T, gate slices, activations and elementwise updates. Directions
// forward, reverse and bidirectional; sequence_lens (a constant or a graph
// value) keeps the state and writes zeros past each sequence's end.

#include <cmath>

#include "OnnxImporter.h"

namespace ember::onnx_import {
namespace {

enum class Cell { Rnn, Gru, Lstm };

int64_t gateCount(Cell cell) { return cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4; }

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

/// Names ONNX allows in `activations`, with the number of parameters each takes
/// from activation_alpha / activation_beta and their defaults.
struct ActivationInfo {
  const char* name;
  bool usesAlpha, usesBeta;
  double alpha, beta;
};
constexpr ActivationInfo kActivations[] = {
    {"Relu", false, false, 0, 0},        {"Tanh", false, false, 0, 0},
    {"Sigmoid", false, false, 0, 0},     {"Affine", true, true, 1, 0},
    {"LeakyRelu", true, false, 0.01, 0}, {"ThresholdedRelu", true, false, 1, 0},
    {"ScaledTanh", true, true, 1, 1},    {"HardSigmoid", true, true, 0.2, 0.5},
    {"Elu", true, false, 1, 0},          {"Softsign", false, false, 0, 0},
    {"Softplus", false, false, 0, 0},
};

/// The activations of every direction (f, g[, h] per direction), with
/// alpha/beta consumed in order by the activations that take them.
Expected<std::vector<Activation>> readActivations(NodeBuilder& b, Cell cell, int64_t directions) {
  std::vector<std::string> defaults = cell == Cell::Rnn ? std::vector<std::string>{"Tanh"}
                                      : cell == Cell::Gru
                                          ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  std::vector<std::string> names;
  if (const onnx::AttributeProto* a = b.attr("activations")) {
    for (const std::string& s : a->strings()) names.push_back(s);
  } else {
    for (int64_t d = 0; d < directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != defaults.size() * size_t(directions))
    return makeError("attribute 'activations' has ", names.size(), " entries, expected ",
                     defaults.size() * size_t(directions));
  EMBER_TRY(std::vector<double> alphas, b.attrFloats("activation_alpha", std::vector<double>{}));
  EMBER_TRY(std::vector<double> betas, b.attrFloats("activation_beta", std::vector<double>{}));
  size_t nextAlpha = 0, nextBeta = 0;
  std::vector<Activation> result;
  for (const std::string& name : names) {
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& candidate : kActivations)
      if (name == candidate.name) info = &candidate;
    if (!info) return makeError("activation '", name, "' is unsupported");
    Activation act{name, info->alpha, info->beta};
    if (info->usesAlpha && nextAlpha < alphas.size()) act.alpha = alphas[nextAlpha++];
    if (info->usesBeta && nextBeta < betas.size()) act.beta = betas[nextBeta++];
    result.push_back(act);
  }
  return result;
}

class Unroller {
 public:
  Unroller(NodeBuilder& b, Cell cell) : b_(b), cell_(cell) {}

  Error run();

 private:
  Expected<Value> activate(const Activation& act, const Value& x, const std::string& step);
  Expected<Value> sliceLast(const Value& v, int64_t begin, int64_t end, const std::string& step);
  Expected<Value> sliceAxis(const Value& v, size_t axis, int64_t begin, int64_t end, const std::string& step);
  Expected<Value> clipped(const Value& v, const std::string& step);
  /// The weights of one direction, sliced out of the node's inputs.
  struct DirectionWeights {
    Value projected;                  ///< [seq, batch, G*hidden]: X W^T (+ biases) of every step
    Value rT;                         ///< [hidden, G*hidden]
    std::optional<Value> rb;          ///< [G*hidden]: the recurrence bias, when B is given
    std::optional<Value> pi, po, pf;  ///< [hidden]: LSTM peepholes, when P is given
  };
  /// The recurrent state between steps (c is h's initial value for RNN and GRU).
  struct State {
    Value h, c;
  };

  /// The layout and direction attributes.
  struct Layout {
    int64_t layout = 0;  ///< 0: sequence-major, 1: batch-major
    std::string direction;
    int64_t directions = 1;
  };
  /// X, W, R, layout, direction and hidden_size, checked; sets x_ (sequence-major),
  /// seq_, batch_, hidden_ and kind_.
  Expected<Layout> readInputs();
  /// activations, clip, linear_before_reset and input_forget.
  Error readCellAttributes(int64_t directions);
  /// B, sequence_lens, initial_h, initial_c and P, checked; the states direction-major.
  Error readOptionalInputs(const Layout& layout);
  /// sequence_lens as i64 [batch, 1] in lens_, unless absent or every sequence is full.
  Error readSequenceLens();
  /// Y, Y_h (and Y_c) from the directions' results, in the node's layout.
  Error setOutputs(int64_t layout);
  /// One direction over every step; fills ys_[t], and the final h and c.
  Error runDirection(int64_t d, bool reverse);
  /// W, R and B of direction d; the input projection of every step at once.
  Expected<DirectionWeights> projectInputs(int64_t d, const std::string& dir);
  /// Adds direction d's biases to the input projection (Rbh stays out for a
  /// GRU with linear_before_reset) and keeps the recurrence bias in `weights`.
  Error addProjectionBiases(int64_t d, const std::string& dir, Value& projected, DirectionWeights& weights);
  Error slicePeepholes(int64_t d, const std::string& dir, DirectionWeights& weights);
  /// initial_h or initial_c of direction d as [batch, hidden]; zeros when absent.
  Expected<Value> initialState(const std::optional<Value>& init, int64_t d, const std::string& dir,
                               const std::string& what);
  /// Columns [g * hidden, (g + 1) * hidden) of v: gate g.
  Expected<Value> gateSlice(const Value& v, int64_t g, const std::string& step);
  Expected<Value> rnnStep(const Activation* act, const Value& xt, const Value& hr, const std::string& s);
  Expected<Value> gruStep(const Activation* act, const DirectionWeights& weights, const Value& xt,
                          const Value& hr, const Value& h, const std::string& s);
  /// GRU's update and reset gates z and r (and x's slice for the candidate).
  struct GruGates {
    Value z, r, xh;
  };
  Expected<GruGates> gruGates(const Activation* act, const DirectionWeights& weights, const Value& xt,
                              const Value& hr, const std::string& s);
  /// GRU's candidate n = g(x Wh + r * (H Rh^T) or (r * (H Rh^T + Rbh)) + ...).
  Expected<Value> gruCandidate(const Activation* act, const DirectionWeights& weights, const Value& xh,
                               const Value& hr, const Value& h, const Value& rGate, const std::string& s);
  /// LSTM's gate inputs i, o, f, c before their activations (peepholes added to i and f).
  struct LstmGates {
    Value i, o, f, c;
  };
  Expected<LstmGates> lstmGateInputs(const DirectionWeights& weights, const Value& xt, const Value& hr,
                                     const Value& c, const std::string& s);
  /// LSTM's h = o(oPre + Po * c) * h(c) for the new cell state c.
  Expected<Value> lstmHidden(const Activation* act, const DirectionWeights& weights, Value oPre,
                             const Value& c, const std::string& s);
  Expected<State> lstmStep(const Activation* act, const DirectionWeights& weights, const Value& xt,
                           const Value& hr, const Value& c, const std::string& s);
  /// Stores step t's output and moves the state on (held past a sequence's end).
  Error advanceState(int64_t t, const State& next, State& state, const std::string& s);
  /// Y, Y_h and Y_c of the direction from ys_ and the final state.
  Error collectDirectionOutputs(const State& state, const std::string& dir);

  NodeBuilder& b_;
  Cell cell_;
  ElemKind kind_ = ElemKind::F32;
  int64_t seq_ = 0, batch_ = 0, hidden_ = 0, gates_ = 1;
  Value x_;      ///< [seq, batch, input]
  Value w_, r_;  ///< [dirs, G*hidden, input|hidden]
  std::optional<Value> bias_, initialH_, initialC_, peephole_;
  std::optional<Value> lens_;  ///< i64 [batch, 1]
  std::vector<Activation> activations_;
  std::optional<double> clip_;
  bool linearBeforeReset_ = false;
  std::vector<Value> ys_;  ///< per step [batch, hidden] of the current direction
  std::vector<Value> yPerDirection_, hPerDirection_, cPerDirection_;
};

Expected<Value> Unroller::sliceAxis(const Value& v, size_t axis, int64_t begin, int64_t end,
                                    const std::string& step) {
  std::vector<int64_t> starts(v.rank(), 0), ends = v.dims(), steps(v.rank(), 1);
  starts[axis] = begin;
  ends[axis] = end;
  return b_.emit(OpKind::Slice, {v}, Attributes{{"starts", starts}, {"ends", ends}, {"steps", steps}}, step);
}

Expected<Value> Unroller::sliceLast(const Value& v, int64_t begin, int64_t end, const std::string& step) {
  return sliceAxis(v, v.rank() - 1, begin, end, step);
}

Expected<Value> Unroller::clipped(const Value& v, const std::string& step) {
  if (!clip_) return v;
  return b_.emit(OpKind::Clip, {v}, Attributes{{"min", -*clip_}, {"max", *clip_}}, step + "_clip");
}

Expected<Value> Unroller::activate(const Activation& act, const Value& x, const std::string& step) {
  const std::string& n = act.name;
  if (n == "Relu" || n == "Tanh" || n == "Sigmoid")
    return b_.emit(n == "Relu" ? OpKind::Relu : n == "Tanh" ? OpKind::Tanh : OpKind::Sigmoid, {x}, {}, step);
  if (n == "LeakyRelu") return b_.emit(OpKind::LeakyRelu, {x}, Attributes{{"alpha", act.alpha}}, step);
  if (n == "Elu") return b_.emit(OpKind::Elu, {x}, Attributes{{"alpha", act.alpha}}, step);
  if (n == "Softplus") return b_.emit(OpKind::Softplus, {x}, {}, step);
  if (n == "HardSigmoid")
    return b_.emit(OpKind::HardSigmoid, {x}, Attributes{{"alpha", act.alpha}, {"beta", act.beta}}, step);
  if (n == "Affine") {
    EMBER_TRY(Value scaled, b_.emit(OpKind::Mul, {x, b_.scalar(kind_, act.alpha)}, {}, step + "_scaled"));
    return b_.emit(OpKind::Add, {scaled, b_.scalar(kind_, act.beta)}, {}, step);
  }
  if (n == "ScaledTanh") {
    EMBER_TRY(Value inner, b_.emit(OpKind::Mul, {x, b_.scalar(kind_, act.beta)}, {}, step + "_inner"));
    EMBER_TRY(Value tanh, b_.emit(OpKind::Tanh, {inner}, {}, step + "_tanh"));
    return b_.emit(OpKind::Mul, {tanh, b_.scalar(kind_, act.alpha)}, {}, step);
  }
  if (n == "ThresholdedRelu") {
    EMBER_TRY(Value above, b_.emit(OpKind::Greater, {x, b_.scalar(kind_, act.alpha)}, {}, step + "_above"));
    return b_.emit(OpKind::Select, {above, x, b_.scalar(kind_, 0)}, {}, step);
  }
  // Softsign: x / (1 + |x|).
  EMBER_TRY(Value abs, b_.emit(OpKind::Abs, {x}, {}, step + "_abs"));
  EMBER_TRY(Value denom, b_.emit(OpKind::Add, {abs, b_.scalar(kind_, 1)}, {}, step + "_denom"));
  return b_.emit(OpKind::Div, {x, denom}, {}, step);
}

Expected<Unroller::DirectionWeights> Unroller::projectInputs(int64_t d, const std::string& dir) {
  const int64_t gateWidth = gates_ * hidden_;
  DirectionWeights weights;
  // The input projection of every step at once: [seq * batch, input] x W^T.
  EMBER_TRY(Value w, sliceAxis(w_, 0, d, d + 1, dir + "w"));
  EMBER_TRY(w, b_.reshape(w, {gateWidth, w_.dims()[2]}, dir + "w2d"));
  EMBER_TRY(Value wT, b_.transpose(w, {1, 0}, dir + "wT"));
  EMBER_TRY(Value r, sliceAxis(r_, 0, d, d + 1, dir + "r"));
  EMBER_TRY(r, b_.reshape(r, {gateWidth, hidden_}, dir + "r2d"));
  EMBER_TRY(weights.rT, b_.transpose(r, {1, 0}, dir + "rT"));
  EMBER_TRY(Value flatX, b_.reshape(x_, {seq_ * batch_, x_.dims()[2]}, dir + "x2d"));
  EMBER_TRY(Value projected, b_.emit(OpKind::MatMul, {flatX, wT}, {}, dir + "xw"));
  EMBER_RETURN_IF_ERROR(addProjectionBiases(d, dir, projected, weights));
  EMBER_TRY(weights.projected, b_.reshape(projected, {seq_, batch_, gateWidth}, dir + "xw3d"));
  return weights;
}

Error Unroller::addProjectionBiases(int64_t d, const std::string& dir, Value& projected,
                                    DirectionWeights& weights) {
  if (!bias_) return Error::success();
  const int64_t gateWidth = gates_ * hidden_;
  EMBER_TRY(Value bd, sliceAxis(*bias_, 0, d, d + 1, dir + "b"));
  EMBER_TRY(bd, b_.reshape(bd, {2 * gateWidth}, dir + "b1d"));
  EMBER_TRY(Value wb, sliceLast(bd, 0, gateWidth, dir + "wb"));
  EMBER_TRY(weights.rb, sliceLast(bd, gateWidth, 2 * gateWidth, dir + "rb"));
  EMBER_TRY(projected, b_.emit(OpKind::Add, {projected, wb}, {}, dir + "xw_b"));
  // GRU with linear_before_reset keeps Rbh inside the reset product.
  if (!(cell_ == Cell::Gru && linearBeforeReset_)) {
    EMBER_TRY(projected, b_.emit(OpKind::Add, {projected, *weights.rb}, {}, dir + "xw_rb"));
  }
  return Error::success();
}

Error Unroller::slicePeepholes(int64_t d, const std::string& dir, DirectionWeights& weights) {
  if (!peephole_) return Error::success();
  EMBER_TRY(Value p, sliceAxis(*peephole_, 0, d, d + 1, dir + "p"));
  EMBER_TRY(p, b_.reshape(p, {3 * hidden_}, dir + "p1d"));
  EMBER_TRY(weights.pi, sliceLast(p, 0, hidden_, dir + "pi"));
  EMBER_TRY(weights.po, sliceLast(p, hidden_, 2 * hidden_, dir + "po"));
  EMBER_TRY(weights.pf, sliceLast(p, 2 * hidden_, 3 * hidden_, dir + "pf"));
  return Error::success();
}

Expected<Value> Unroller::initialState(const std::optional<Value>& init, int64_t d, const std::string& dir,
                                       const std::string& what) {
  if (!init) {
    Tensor zeros(Type(kind_, {batch_, hidden_}));
    for (int64_t i = 0; i < batch_ * hidden_; ++i) zeros.setElementFromDouble(i, 0);
    return b_.constant(std::move(zeros));
  }
  EMBER_TRY(Value s, sliceAxis(*init, 0, d, d + 1, dir + what));
  return b_.reshape(s, {batch_, hidden_}, dir + what + "2d");
}

Expected<Value> Unroller::gateSlice(const Value& v, int64_t g, const std::string& step) {
  return sliceLast(v, g * hidden_, (g + 1) * hidden_, step);
}

Expected<Value> Unroller::rnnStep(const Activation* act, const Value& xt, const Value& hr,
                                  const std::string& s) {
  EMBER_TRY(Value pre, b_.emit(OpKind::Add, {xt, hr}, {}, s + "pre"));
  EMBER_TRY(pre, clipped(pre, s + "pre"));
  return activate(act[0], pre, s + "h");
}

Expected<Unroller::GruGates> Unroller::gruGates(const Activation* act, const DirectionWeights& weights,
                                                const Value& xt, const Value& hr, const std::string& s) {
  const std::optional<Value>& rb = weights.rb;
  GruGates g;
  // Gates z, r, h.
  EMBER_TRY(Value xz, gateSlice(xt, 0, s + "xz"));
  EMBER_TRY(Value xr, gateSlice(xt, 1, s + "xr"));
  EMBER_TRY(g.xh, gateSlice(xt, 2, s + "xh"));
  EMBER_TRY(Value hz, gateSlice(hr, 0, s + "hz"));
  EMBER_TRY(Value hrr, gateSlice(hr, 1, s + "hrr"));
  EMBER_TRY(Value zPre, b_.emit(OpKind::Add, {xz, hz}, {}, s + "z_pre"));
  EMBER_TRY(Value rPre, b_.emit(OpKind::Add, {xr, hrr}, {}, s + "r_pre"));
  if (linearBeforeReset_ && rb) {
    // Rbz and Rbr were left out of the projection with Rbh.
    EMBER_TRY(Value rbz, gateSlice(*rb, 0, s + "rbz"));
    EMBER_TRY(zPre, b_.emit(OpKind::Add, {zPre, rbz}, {}, s + "z_pre_b"));
    EMBER_TRY(Value rbr, gateSlice(*rb, 1, s + "rbr"));
    EMBER_TRY(rPre, b_.emit(OpKind::Add, {rPre, rbr}, {}, s + "r_pre_b"));
  }
  EMBER_TRY(zPre, clipped(zPre, s + "z_pre"));
  EMBER_TRY(g.z, activate(act[0], zPre, s + "z"));
  EMBER_TRY(rPre, clipped(rPre, s + "r_pre"));
  EMBER_TRY(g.r, activate(act[0], rPre, s + "r"));
  return g;
}

Expected<Value> Unroller::gruStep(const Activation* act, const DirectionWeights& weights, const Value& xt,
                                  const Value& hr, const Value& h, const std::string& s) {
  EMBER_TRY(GruGates gates, gruGates(act, weights, xt, hr, s));
  const Value& z = gates.z;
  EMBER_TRY(Value candidate, gruCandidate(act, weights, gates.xh, hr, h, gates.r, s));
  // H = (1 - z) * n + z * H = n + z * (H - n).
  EMBER_TRY(Value diff, b_.emit(OpKind::Sub, {h, candidate}, {}, s + "h_minus_n"));
  EMBER_TRY(Value kept, b_.emit(OpKind::Mul, {z, diff}, {}, s + "kept"));
  return b_.emit(OpKind::Add, {candidate, kept}, {}, s + "h");
}

Expected<Value> Unroller::gruCandidate(const Activation* act, const DirectionWeights& weights,
                                       const Value& xh, const Value& hr, const Value& h, const Value& rGate,
                                       const std::string& s) {
  const std::optional<Value>& rb = weights.rb;
  Value candidatePre;
  if (linearBeforeReset_) {
    EMBER_TRY(Value hh, gateSlice(hr, 2, s + "hh"));
    if (rb) {
      EMBER_TRY(Value rbh, gateSlice(*rb, 2, s + "rbh"));
      EMBER_TRY(hh, b_.emit(OpKind::Add, {hh, rbh}, {}, s + "hh_b"));
    }
    EMBER_TRY(Value reset, b_.emit(OpKind::Mul, {rGate, hh}, {}, s + "reset"));
    EMBER_TRY(candidatePre, b_.emit(OpKind::Add, {xh, reset}, {}, s + "n_pre"));
  } else {
    EMBER_TRY(Value resetH, b_.emit(OpKind::Mul, {rGate, h}, {}, s + "reset_h"));
    EMBER_TRY(Value rh, gateSlice(weights.rT, 2, s + "rhT"));  // [hidden, hidden] columns of Rh^T
    EMBER_TRY(Value hh, b_.emit(OpKind::MatMul, {resetH, rh}, {}, s + "hh"));
    EMBER_TRY(candidatePre, b_.emit(OpKind::Add, {xh, hh}, {}, s + "n_pre"));
  }
  EMBER_TRY(candidatePre, clipped(candidatePre, s + "n_pre"));
  return activate(act[1], candidatePre, s + "n");
}

Expected<Unroller::LstmGates> Unroller::lstmGateInputs(const DirectionWeights& weights, const Value& xt,
                                                       const Value& hr, const Value& c,
                                                       const std::string& s) {
  // Gates i, o, f, c.
  LstmGates g;
  EMBER_TRY(Value pre, b_.emit(OpKind::Add, {xt, hr}, {}, s + "pre"));
  EMBER_TRY(g.i, gateSlice(pre, 0, s + "i_pre"));
  EMBER_TRY(g.o, gateSlice(pre, 1, s + "o_pre"));
  EMBER_TRY(g.f, gateSlice(pre, 2, s + "f_pre"));
  EMBER_TRY(g.c, gateSlice(pre, 3, s + "c_pre"));
  if (weights.pi) {
    EMBER_TRY(Value peepI, b_.emit(OpKind::Mul, {*weights.pi, c}, {}, s + "peep_i"));
    EMBER_TRY(g.i, b_.emit(OpKind::Add, {g.i, peepI}, {}, s + "i_peep"));
    EMBER_TRY(Value peepF, b_.emit(OpKind::Mul, {*weights.pf, c}, {}, s + "peep_f"));
    EMBER_TRY(g.f, b_.emit(OpKind::Add, {g.f, peepF}, {}, s + "f_peep"));
  }
  return g;
}

Expected<Unroller::State> Unroller::lstmStep(const Activation* act, const DirectionWeights& weights,
                                             const Value& xt, const Value& hr, const Value& c,
                                             const std::string& s) {
  State next;
  EMBER_TRY(LstmGates gates, lstmGateInputs(weights, xt, hr, c, s));
  auto& [iPre, oPre, fPre, cPre] = gates;
  EMBER_TRY(iPre, clipped(iPre, s + "i_pre"));
  EMBER_TRY(fPre, clipped(fPre, s + "f_pre"));
  EMBER_TRY(cPre, clipped(cPre, s + "c_pre"));
  EMBER_TRY(Value ig, activate(act[0], iPre, s + "i"));
  EMBER_TRY(Value fg, activate(act[0], fPre, s + "f"));
  EMBER_TRY(Value cg, activate(act[1], cPre, s + "g"));
  EMBER_TRY(Value keep, b_.emit(OpKind::Mul, {fg, c}, {}, s + "c_keep"));
  EMBER_TRY(Value add, b_.emit(OpKind::Mul, {ig, cg}, {}, s + "c_add"));
  EMBER_TRY(next.c, b_.emit(OpKind::Add, {keep, add}, {}, s + "c"));
  EMBER_TRY(next.h, lstmHidden(act, weights, oPre, next.c, s));
  return next;
}

Expected<Value> Unroller::lstmHidden(const Activation* act, const DirectionWeights& weights, Value oPre,
                                     const Value& c, const std::string& s) {
  if (weights.po) {
    EMBER_TRY(Value peepO, b_.emit(OpKind::Mul, {*weights.po, c}, {}, s + "peep_o"));
    EMBER_TRY(oPre, b_.emit(OpKind::Add, {oPre, peepO}, {}, s + "o_peep"));
  }
  EMBER_TRY(oPre, clipped(oPre, s + "o_pre"));
  EMBER_TRY(Value og, activate(act[0], oPre, s + "o"));
  EMBER_TRY(Value hc, activate(act[2], c, s + "hc"));
  return b_.emit(OpKind::Mul, {og, hc}, {}, s + "h");
}

Error Unroller::advanceState(int64_t t, const State& next, State& state, const std::string& s) {
  if (!lens_) {
    ys_[size_t(t)] = next.h;
    state = next;
    return Error::success();
  }
  // Past a sequence's end the state stays and the output is 0.
  EMBER_TRY(Value active,
            b_.emit(OpKind::Less, {b_.scalar(ElemKind::I64, double(t)), *lens_}, {}, s + "active"));
  EMBER_TRY(ys_[size_t(t)], b_.emit(OpKind::Select, {active, next.h, b_.scalar(kind_, 0)}, {}, s + "y"));
  EMBER_TRY(state.h, b_.emit(OpKind::Select, {active, next.h, state.h}, {}, s + "h_kept"));
  if (cell_ == Cell::Lstm) {
    EMBER_TRY(state.c, b_.emit(OpKind::Select, {active, next.c, state.c}, {}, s + "c_kept"));
  }
  return Error::success();
}

Error Unroller::collectDirectionOutputs(const State& state, const std::string& dir) {
  std::vector<Value> steps;
  for (int64_t t = 0; t < seq_; ++t) {
    EMBER_TRY(Value y, b_.reshape(ys_[size_t(t)], {1, 1, batch_, hidden_}, dir + "y" + std::to_string(t)));
    steps.push_back(y);
  }
  EMBER_TRY(Value y, steps.size() == 1
                         ? Expected<Value>(steps[0])
                         : b_.emit(OpKind::Concat, steps, Attributes{{"axis", int64_t(0)}}, dir + "y"));
  yPerDirection_.push_back(y);
  EMBER_TRY(Value hOut, b_.reshape(state.h, {1, batch_, hidden_}, dir + "h_out"));
  hPerDirection_.push_back(hOut);
  EMBER_TRY(Value cOut, b_.reshape(state.c, {1, batch_, hidden_}, dir + "c_out"));
  cPerDirection_.push_back(cOut);
  return Error::success();
}

Error Unroller::runDirection(int64_t d, bool reverse) {
  const std::string dir = "d" + std::to_string(d) + "/";
  const int64_t gateWidth = gates_ * hidden_;
  const Activation* act = &activations_[size_t(d) * (cell_ == Cell::Rnn ? 1 : cell_ == Cell::Gru ? 2 : 3)];

  EMBER_TRY(DirectionWeights weights, projectInputs(d, dir));
  State state;
  EMBER_TRY(state.h, initialState(initialH_, d, dir, "h0"));
  state.c = state.h;
  if (cell_ == Cell::Lstm) {
    EMBER_TRY(state.c, initialState(initialC_, d, dir, "c0"));
  }
  EMBER_RETURN_IF_ERROR(slicePeepholes(d, dir, weights));

  ys_.assign(size_t(seq_), Value());
  for (int64_t i = 0; i < seq_; ++i) {
    const int64_t t = reverse ? seq_ - 1 - i : i;
    const std::string s = dir + "t" + std::to_string(t) + "/";
    EMBER_TRY(Value xt, sliceAxis(weights.projected, 0, t, t + 1, s + "xw"));
    EMBER_TRY(xt, b_.reshape(xt, {batch_, gateWidth}, s + "xw2d"));
    EMBER_TRY(Value hr, b_.emit(OpKind::MatMul, {state.h, weights.rT}, {}, s + "hr"));
    State next{Value(), state.c};
    if (cell_ == Cell::Rnn) {
      EMBER_TRY(next.h, rnnStep(act, xt, hr, s));
    } else if (cell_ == Cell::Gru) {
      EMBER_TRY(next.h, gruStep(act, weights, xt, hr, state.h, s));
    } else {
      EMBER_TRY(next, lstmStep(act, weights, xt, hr, state.c, s));
    }
    EMBER_RETURN_IF_ERROR(advanceState(t, next, state, s));
  }
  return collectDirectionOutputs(state, dir);
}

Error Unroller::readSequenceLens() {
  if (!b_.hasInput(4)) return Error::success();
  EMBER_TRY(Value lens, b_.input(4));
  if (lens.dims() != Dims{batch_})
    return makeError("sequence_lens ", lens.type.str(), " must be [", batch_, "]");
  bool full = lens.isConstant();
  if (full)
    for (int64_t i = 0; i < batch_; ++i) full = full && lens.constant->elementAsDouble(i) == double(seq_);
  if (!full) {
    if (lens.type.kind != ElemKind::I64) {
      EMBER_TRY(lens, b_.emit(OpKind::Cast, {lens},
                              Attributes{{"to", std::string(elemKindName(ElemKind::I64))}}, "lens_i64"));
    }
    EMBER_TRY(lens, b_.reshape(lens, {batch_, 1}, "lens"));
    lens_ = lens;
  }
  return Error::success();
}

Error Unroller::setOutputs(int64_t layout) {
  auto joined = [&](const std::vector<Value>& parts, int64_t axis,
                    const std::string& step) -> Expected<Value> {
    if (parts.size() == 1) return parts[0];
    return b_.emit(OpKind::Concat, parts, Attributes{{"axis", axis}}, step);
  };
  EMBER_TRY(Value y, joined(yPerDirection_, 1, "y"));
  EMBER_TRY(Value yh, joined(hPerDirection_, 0, "y_h"));
  EMBER_TRY(Value yc, joined(cPerDirection_, 0, "y_c"));
  if (layout == 1) {
    EMBER_TRY(y, b_.transpose(y, {2, 0, 1, 3}, "y_batch_major"));
    EMBER_TRY(yh, b_.transpose(yh, {1, 0, 2}, "y_h_batch_major"));
    EMBER_TRY(yc, b_.transpose(yc, {1, 0, 2}, "y_c_batch_major"));
  }
  EMBER_RETURN_IF_ERROR(b_.setOutput(0, y));
  EMBER_RETURN_IF_ERROR(b_.setOutput(1, yh));
  if (cell_ == Cell::Lstm) return b_.setOutput(2, yc);
  return Error::success();
}

Expected<Unroller::Layout> Unroller::readInputs() {
  gates_ = gateCount(cell_);
  EMBER_TRY(Value x, b_.input(0));
  EMBER_TRY(w_, b_.input(1));
  EMBER_TRY(r_, b_.input(2));
  kind_ = x.type.kind;
  if (!isFloat(kind_)) return makeError("unsupported element type ", elemKindName(kind_));
  if (x.rank() != 3 || w_.rank() != 3 || r_.rank() != 3)
    return makeError("X, W and R must have rank 3, got ", x.type.str(), ", ", w_.type.str(), ", ",
                     r_.type.str());
  Layout layout;
  EMBER_TRY(layout.layout, b_.attrInt("layout", 0));
  if (layout.layout != 0 && layout.layout != 1) return makeError("layout ", layout.layout, " must be 0 or 1");
  x_ = x;
  if (layout.layout == 1) {
    EMBER_TRY(x_, b_.transpose(x, {1, 0, 2}, "seq_major"));
  }
  seq_ = x_.dims()[0];
  batch_ = x_.dims()[1];
  EMBER_TRY(layout.direction, b_.attrString("direction", "forward"));
  if (layout.direction != "forward" && layout.direction != "reverse" && layout.direction != "bidirectional")
    return makeError("unknown direction '", layout.direction, "'");
  const int64_t directions = layout.directions = layout.direction == "bidirectional" ? 2 : 1;
  hidden_ = r_.dims()[2];
  if (b_.hasAttr("hidden_size")) {
    EMBER_TRY(int64_t hidden, b_.attrInt("hidden_size"));
    if (hidden != hidden_) return makeError("hidden_size ", hidden, " does not match R ", r_.type.str());
  }
  if (w_.dims() != Dims{directions, gates_ * hidden_, x_.dims()[2]} ||
      r_.dims() != Dims{directions, gates_ * hidden_, hidden_})
    return makeError("W ", w_.type.str(), " or R ", r_.type.str(), " does not match ", directions,
                     " direction(s), ", gates_, " gate(s) of ", hidden_, " and input size ", x_.dims()[2]);
  if (seq_ == 0) return makeError("an empty sequence is unsupported");
  return layout;
}

Error Unroller::readCellAttributes(int64_t directions) {
  EMBER_TRY(activations_, readActivations(b_, cell_, directions));
  if (b_.hasAttr("clip")) {
    EMBER_TRY(double clip, b_.attrFloat("clip"));
    clip_ = clip;
  }
  if (cell_ == Cell::Gru) {
    EMBER_TRY(int64_t lbr, b_.attrInt("linear_before_reset", 0));
    linearBeforeReset_ = lbr != 0;
  }
  if (cell_ == Cell::Lstm) {
    EMBER_TRY(int64_t inputForget, b_.attrInt("input_forget", 0));
    if (inputForget) return makeError("input_forget=1 is unsupported");
  }
  return Error::success();
}

Error Unroller::readOptionalInputs(const Layout& layout) {
  const int64_t directions = layout.directions;
  auto optionalInput = [&](size_t i, const Dims& dims, const char* what) -> Expected<std::optional<Value>> {
    if (!b_.hasInput(i)) return std::optional<Value>();
    EMBER_TRY(Value v, b_.input(i));
    if (v.dims() != dims)
      return makeError("input '", what, "' ", v.type.str(), " must have dims ", dimsStr(dims));
    return std::optional<Value>(v);
  };
  EMBER_TRY(bias_, optionalInput(3, {directions, 2 * gates_ * hidden_}, "B"));
  EMBER_RETURN_IF_ERROR(readSequenceLens());
  Dims stateDims = layout.layout == 0 ? Dims{directions, batch_, hidden_} : Dims{batch_, directions, hidden_};
  EMBER_TRY(initialH_, optionalInput(5, stateDims, "initial_h"));
  if (cell_ == Cell::Lstm) {
    EMBER_TRY(initialC_, optionalInput(6, stateDims, "initial_c"));
    EMBER_TRY(peephole_, optionalInput(7, {directions, 3 * hidden_}, "P"));
  }
  if (layout.layout == 1) {
    for (std::optional<Value>* state : {&initialH_, &initialC_})
      if (*state) {
        EMBER_TRY(**state, b_.transpose(**state, {1, 0, 2}, "state_dir_major"));
      }
  }
  return Error::success();
}

Error Unroller::run() {
  EMBER_TRY(Layout layout, readInputs());
  EMBER_RETURN_IF_ERROR(readCellAttributes(layout.directions));
  EMBER_RETURN_IF_ERROR(readOptionalInputs(layout));
  for (int64_t d = 0; d < layout.directions; ++d)
    EMBER_RETURN_IF_ERROR(runDirection(d, layout.direction == "reverse" || d == 1));
  return setOutputs(layout.layout);
}

OpHandler recurrent(Cell cell) {
  return [cell](NodeBuilder& b) -> Error { return Unroller(b, cell).run(); };
}

}  // namespace

void registerRecurrentOps(OpTable& t) {
  t["RNN"] = recurrent(Cell::Rnn);
  t["GRU"] = recurrent(Cell::Gru);
  t["LSTM"] = recurrent(Cell::Lstm);
}

}  // namespace ember::onnx_import
