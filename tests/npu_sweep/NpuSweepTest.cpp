// The NPU operator sweep: every op the npu backend executes, over 30+ shapes
// each (sizes that do not divide the array, channel counts and reduction
// lengths that force tiling, strides, padding, depthwise, groups, dilation,
// broadcasting). Each case builds the same int8 graph twice from a fixed seed,
// compiles it for "reference" and for "npu", and requires bit-identical
// outputs. A shape the backend refuses fails the test, except a shape class
// that backends/npu documents as unsupported, which must fail cleanly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>

#include "backends/BuiltinBackends.h"
#include "ember/Runtime.h"

namespace ember {
namespace {

constexpr ElemKind I8 = ElemKind::Int8Q;
using Ints = std::vector<int64_t>;

/// splitmix64: deterministic on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * (1.0 / double(uint64_t(1) << 53)); }
  int64_t integer(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
  /// A log-uniform value in [lo, hi]: scales spread over orders of magnitude.
  double logUniform(double lo, double hi) { return lo * std::pow(hi / lo, uniform()); }

 private:
  uint64_t state_;
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h;
}

std::string dimsText(const Dims& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

/// Builds one case's graph: its placeholders get data in `inputs`; the op
/// under test is the node named "op" and the function output is "out".
struct Builder {
  Function& f;
  Rng& rng;
  std::map<std::string, Tensor>& inputs;

  Type int8(Dims dims, float scale, int32_t offset) const { return Type(I8, std::move(dims), scale, offset); }

  Tensor randomInt8(const Type& type) {
    Tensor t(type);
    for (int64_t i = 0; i < type.numElements(); ++i) t.as<int8_t>()[i] = int8_t(rng.integer(-128, 127));
    return t;
  }
  NodeValue input(const Type& type) {
    const std::string name = "in" + std::to_string(inputs.size());
    inputs[name] = randomInt8(type);
    return f.createPlaceholder(name, type)->result();
  }
  NodeValue constant(Tensor value) { return f.createConstant(f.uniqueName("w"), std::move(value))->result(); }
  NodeValue weightInt8(const Type& type) { return constant(randomInt8(type)); }
  NodeValue bias(int64_t n, int64_t magnitude) {
    Tensor t(Type(ElemKind::Int32Q, {n}, 1e-4f, 0));
    for (int64_t i = 0; i < n; ++i) t.as<int32_t>()[i] = int32_t(rng.integer(-magnitude, magnitude));
    return constant(std::move(t));
  }
  NodeValue scales(int64_t n, double lo, double hi) {
    Tensor t(Type(ElemKind::F32, {n}));
    for (int64_t i = 0; i < n; ++i) t.as<float>()[i] = float(rng.logUniform(lo, hi));
    return constant(std::move(t));
  }
  void op(OpKind kind, std::vector<NodeValue> operands, Attributes attrs) {
    auto node = f.create(kind, "op", std::move(operands), std::move(attrs));
    ASSERT_TRUE(node) << node.error().message();
    f.addOutput("out", (*node)->result());
  }
};

struct Case {
  std::string name;
  std::function<void(Builder&)> build;
  /// False for a shape class backends/npu documents as unsupported: the npu
  /// compile must then fail with an error naming the op.
  bool npuSupported = true;
};

std::string configPath(const std::string& name) { return std::string(EMBER_NPU_CONFIG_DIR) + "/" + name; }

std::unique_ptr<Backend> makeBackend(const std::string& name, const std::string& config) {
  static const bool registered = (registerBuiltinBackends(), true);
  (void)registered;
  auto backend = BackendRegistry::global().create(name);
  if (!backend) {
    ADD_FAILURE() << "backend '" << name << "': " << backend.error().message();
    return nullptr;
  }
  if (!config.empty())
    if (Error e = (*backend)->setOption("config", config)) {
      ADD_FAILURE() << name << " --backend-option config=" << config << ": " << e.message();
      return nullptr;
    }
  return backend.take();
}

/// Builds, compiles and runs `c` on one backend; `claimed` reports whether
/// the backend's supports() accepts the op node.
Expected<Tensor> runCase(const Case& c, const std::string& backendName, const std::string& config,
                         bool* claimed = nullptr) {
  Function f("sweep");
  Rng rng(fnv1a(c.name));
  std::map<std::string, Tensor> inputs;
  Builder builder{f, rng, inputs};
  c.build(builder);
  if (f.outputs().empty()) return makeError(c.name, ": the graph was not built");
  auto backend = makeBackend(backendName, config);
  if (!backend) return makeError(backendName, ": no backend");
  if (claimed)
    for (Node* node : f.nodes())
      if (node->name() == "op") *claimed = backend->supports(NodeInfo::of(*node));
  EMBER_ASSIGN_OR_RETURN(CompiledModel model, compileFunction(f, std::move(backend)));
  ExecutionContext context;
  for (auto& [name, tensor] : inputs) context.setInput(name, tensor);
  auto device = model.backend->createDevice();
  EMBER_RETURN_IF_ERROR(device->load("sweep", model.function));
  EMBER_RETURN_IF_ERROR(device->run("sweep", context));
  if (backendName == "npu") {
    // The op ran on the simulated NPU, not on a host fallback.
    const DeviceReport* device = model.function->deviceReport();
    if (!model.report.fallbackNodes.empty() || !device || device->cycles == 0)
      return makeError("npu: the case did not run on the simulated NPU");
  }
  const Tensor* out = nullptr;
  for (const auto& [name, tensor] : context.outputs())
    if (name == "out") out = &tensor;
  if (!out) return makeError(backendName, ": no output 'out'");
  return *out;
}

/// "" when identical, else a description of the first differences.
std::string compareInt8(const Tensor& expected, const Tensor& got) {
  const Type &a = expected.type(), &b = got.type();
  std::ostringstream os;
  if (a.kind != b.kind || a.dims != b.dims || a.scale != b.scale || a.offset != b.offset) {
    os << "type " << b.str() << " instead of " << a.str();
    return os.str();
  }
  if (std::memcmp(expected.data(), got.data(), expected.sizeInBytes()) == 0) return "";
  int64_t mismatches = 0;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    const int e = expected.as<int8_t>()[i], g = got.as<int8_t>()[i];
    if (e == g) continue;
    if (++mismatches <= 5) os << " [" << i << "] npu " << g << " reference " << e << ";";
  }
  return std::to_string(mismatches) + " of " + std::to_string(a.numElements()) +
         " elements differ:" + os.str();
}

/// Why a reference output would make a weak test (mostly saturated or nearly
/// constant), or "" when it exercises the arithmetic.
std::string degenerate(const Tensor& t) {
  const int64_t n = t.type().numElements();
  int64_t saturated = 0;
  std::set<int> distinct;
  for (int64_t i = 0; i < n; ++i) {
    const int v = t.as<int8_t>()[i];
    saturated += v == -128 || v == 127;
    distinct.insert(v);
  }
  if (2 * saturated > n) return std::to_string(saturated) + " of " + std::to_string(n) + " values saturate";
  if (int64_t(distinct.size()) < std::min<int64_t>(8, n / 4))
    return "only " + std::to_string(distinct.size()) + " distinct values";
  return "";
}

/// Runs every case on both backends and reports each failing shape by name,
/// on npu-16x16 with one and with two weight buffers (ISA v2) and with the
/// vector queue (ISA v3).
void sweep(const std::vector<Case>& cases) {
  ASSERT_GE(cases.size(), 30u) << "the sweep covers at least 30 shapes per op";
  for (const Case& c : cases)
    for (const char* configName :
         {"npu-16x16.yaml", "npu-16x16-v2.yaml", "npu-16x16-v2q.yaml", "npu-16x16-v3.yaml"}) {
      const std::string npuConfig = configPath(configName);
      SCOPED_TRACE(c.name + " on " + configName);
      auto expected = runCase(c, "reference", "");
      ASSERT_TRUE(expected) << c.name << ": reference: " << expected.error().message();
      EXPECT_EQ(degenerate(*expected), "") << c.name << ": the data does not exercise the op";
      bool claimed = false;
      auto got = runCase(c, "npu", npuConfig, &claimed);
      if (!c.npuSupported) {
        EXPECT_FALSE(got) << c.name << ": documented as unsupported but compiled";
        if (!got) {
          EXPECT_FALSE(got.error().message().empty());
        }
        continue;
      }
      EXPECT_TRUE(claimed) << c.name << ": npu supports() refuses the op";
      if (!got) {
        ADD_FAILURE() << c.name << ": npu: " << got.error().message();
        continue;
      }
      const std::string diff = compareInt8(*expected, *got);
      EXPECT_EQ(diff, "") << c.name << " on " << configName;
    }
}

// ---- QuantizedConv ----

struct ConvSpec {
  Dims input;  // N, H, W, C
  int64_t outChannels, kh, kw;
  Ints strides, pads, dilations;  // pads: top, left, bottom, right
  int64_t group = 1;
  std::string clip = "";  // "", "relu", "relu6"
};

Case convCase(const ConvSpec& s) {
  std::ostringstream name;
  name << "conv/" << dimsText(s.input) << "/o" << s.outChannels << "/k" << s.kh << "x" << s.kw << "/s"
       << s.strides[0] << s.strides[1] << "/p" << s.pads[0] << s.pads[1] << s.pads[2] << s.pads[3] << "/d"
       << s.dilations[0] << s.dilations[1] << "/g" << s.group << (s.clip.empty() ? "" : "/" + s.clip);
  return {name.str(), [s](Builder& b) {
            const int64_t c = s.input[3], cg = c / s.group, k = s.kh * s.kw * cg;
            const float inScale = float(b.rng.logUniform(0.01, 0.1));
            const int32_t inOffset = int32_t(b.rng.integer(-20, 20));
            NodeValue in = b.input(b.int8(s.input, inScale, inOffset));
            NodeValue filter = b.weightInt8(b.int8({s.outChannels, s.kh, s.kw, cg}, 0.02f, 0));
            // Realistic magnitudes: the accumulator's spread is ~74^2 * sqrt(k) for
            // uniform int8 data; the output scale maps about 3 sigma to int8's range.
            const double filterScale = b.rng.logUniform(0.002, 0.02);
            const double sigma = 74.0 * 74.0 * std::sqrt(double(k));
            NodeValue bias = b.bias(s.outChannels, int64_t(sigma));
            NodeValue scales = b.scales(s.outChannels, filterScale * 0.5, filterScale * 2);
            const double outScale = inScale * filterScale * 3 * sigma / 128 * b.rng.logUniform(0.5, 2);
            Attributes attrs{{"strides", s.strides},
                             {"pads", s.pads},
                             {"dilations", s.dilations},
                             {"group", s.group},
                             {"kind", std::string("i8q")},
                             {"scale", outScale},
                             {"offset", b.rng.integer(-10, 10)}};
            if (s.clip == "relu" || s.clip == "relu6") attrs.set("clip_min", 0.0);
            if (s.clip == "relu6") attrs.set("clip_max", 60 * outScale);  // clips inside int8's range
            b.op(OpKind::QuantizedConv, {in, filter, bias, scales}, attrs);
          }};
}

TEST(NpuSweep, QuantizedConv) {
  const Ints s1{1, 1}, s2{2, 2}, d1{1, 1}, p0{0, 0, 0, 0}, p1{1, 1, 1, 1};
  std::vector<ConvSpec> specs = {
      {{1, 5, 5, 3}, 4, 3, 3, s1, p1, d1},
      {{1, 7, 7, 8}, 16, 3, 3, s1, p0, d1},
      {{1, 6, 6, 16}, 16, 1, 1, s1, p0, d1},
      {{1, 9, 9, 17}, 17, 1, 1, s1, p0, d1},
      {{1, 8, 8, 32}, 33, 3, 3, s2, p1, d1},
      {{1, 7, 5, 20}, 30, 3, 3, s2, {1, 0, 1, 0}, d1},
      {{2, 5, 5, 8}, 8, 3, 3, s1, p1, d1},
      {{1, 10, 10, 3}, 16, 5, 5, s2, {2, 2, 2, 2}, d1},
      {{1, 12, 12, 3}, 8, 7, 7, s2, {3, 3, 3, 3}, d1},
      {{1, 6, 6, 64}, 64, 3, 3, s1, p1, d1},
      {{1, 4, 4, 130}, 70, 3, 3, s1, p1, d1},
      {{1, 3, 3, 512}, 64, 3, 3, s1, p1, d1},  // 288 KiB of weights: more than the scratchpad
      {{1, 2, 2, 1024}, 300, 1, 1, s1, p0, d1},
      {{1, 8, 8, 16}, 16, 3, 3, s1, p1, d1, 16},  // depthwise
      {{1, 7, 7, 32}, 32, 3, 3, s2, p1, d1, 32},
      {{1, 9, 9, 17}, 17, 3, 3, s1, p1, d1, 17},
      {{1, 6, 6, 8}, 16, 3, 3, s1, p1, d1, 8},   // depthwise, channel multiplier 2
      {{1, 6, 6, 16}, 32, 3, 3, s1, p1, d1, 2},  // grouped
      {{1, 6, 6, 32}, 32, 1, 1, s1, p0, d1, 4},
      {{1, 8, 8, 8}, 8, 3, 3, s1, {2, 2, 2, 2}, {2, 2}},  // dilated
      {{1, 9, 9, 4}, 6, 3, 3, s1, p1, {2, 1}},
      {{1, 5, 5, 16}, 8, 1, 3, s1, {0, 1, 0, 1}, d1},
      {{1, 5, 5, 16}, 8, 3, 1, s1, {1, 0, 1, 0}, d1},
      {{1, 1, 1, 64}, 10, 1, 1, s1, p0, d1},
      {{1, 11, 13, 5}, 7, 3, 3, {2, 1}, p1, d1},
      {{1, 6, 6, 16}, 16, 3, 3, s1, p1, d1, 1, "relu"},
      {{1, 6, 6, 16}, 16, 3, 3, s1, p1, d1, 1, "relu6"},
      {{1, 16, 16, 8}, 24, 3, 3, s1, p1, d1},
      {{1, 20, 20, 4}, 8, 3, 3, s1, p1, d1},
      {{1, 5, 5, 3}, 4, 2, 2, s2, p0, d1},
      {{1, 4, 4, 8}, 8, 4, 4, s1, p0, d1},
      {{1, 8, 8, 48}, 96, 1, 1, s2, p0, d1},
      {{1, 6, 6, 24}, 12, 3, 3, s1, {2, 2, 2, 2}, d1},
      {{1, 7, 7, 64}, 128, 3, 3, s2, p1, d1, 1, "relu"},
      {{1, 5, 5, 256}, 64, 1, 1, s1, p0, d1, 1, "relu"},
      {{1, 14, 14, 32}, 32, 3, 3, s1, p1, d1, 32, "relu6"},
      // ResNet-50-sized layers: feature maps and weights larger than the scratchpad.
      {{1, 56, 56, 64}, 64, 3, 3, s1, p1, d1, 1, "relu"},
      {{1, 28, 28, 128}, 512, 1, 1, s1, p0, d1},
      {{1, 7, 7, 512}, 512, 3, 3, s1, p1, d1, 1, "relu"},  // 2.3 MB of weights
      {{1, 56, 56, 256}, 128, 1, 1, s2, p0, d1},
  };
  std::vector<Case> cases;
  for (const auto& s : specs) cases.push_back(convCase(s));
  sweep(cases);
}

// ---- QuantizedMatMul ----

struct MatMulSpec {
  Dims lhs;  // [..., M, K]
  int64_t n;
  std::string clip = "";
};

Case matmulCase(const MatMulSpec& s) {
  const std::string name =
      "matmul/" + dimsText(s.lhs) + "/n" + std::to_string(s.n) + (s.clip.empty() ? "" : "/" + s.clip);
  return {name, [s](Builder& b) {
            const int64_t k = s.lhs.back();
            const float inScale = float(b.rng.logUniform(0.01, 0.1));
            NodeValue lhs = b.input(b.int8(s.lhs, inScale, int32_t(b.rng.integer(-20, 20))));
            NodeValue rhs = b.weightInt8(b.int8({k, s.n}, 0.02f, 0));
            const double rhsScale = b.rng.logUniform(0.002, 0.02);
            const double sigma = 74.0 * 74.0 * std::sqrt(double(k));
            NodeValue bias = b.bias(s.n, int64_t(sigma));
            NodeValue scales = b.scales(s.n, rhsScale * 0.5, rhsScale * 2);
            const double outScale = inScale * rhsScale * 3 * sigma / 128 * b.rng.logUniform(0.5, 2);
            Attributes attrs{
                {"kind", std::string("i8q")}, {"scale", outScale}, {"offset", b.rng.integer(-10, 10)}};
            if (!s.clip.empty()) attrs.set("clip_min", 0.0);
            b.op(OpKind::QuantizedMatMul, {lhs, rhs, bias, scales}, attrs);
          }};
}

TEST(NpuSweep, QuantizedMatMul) {
  std::vector<MatMulSpec> specs = {
      {{1, 16}, 16},
      {{3, 8}, 5},
      {{17, 17}, 17},
      {{15, 33}, 31},
      {{16, 16}, 16},
      {{32, 64}, 48},
      {{1, 1000}, 10},
      {{1, 2048}, 1000},  // ResNet-50's classifier: 2 MB of weights
      {{7, 4096}, 9},
      {{5, 10000}, 3},
      {{64, 64}, 64},
      {{100, 50}, 70},
      {{2, 3, 8}, 5},
      {{2, 4, 16}, 7},
      {{1, 5}, 300},
      {{300, 5}, 1},
      {{31, 127}, 129},
      {{48, 96}, 32},
      {{13, 256}, 257},
      {{1, 64}, 1},
      {{65, 65}, 65},
      {{128, 128}, 128},
      {{9, 300}, 20},
      {{250, 16}, 16},
      {{16, 16}, 250},
      {{3, 3}, 3},
      {{1, 1}, 1},
      {{40, 1152}, 64},
      {{20, 4608}, 20},
      {{33, 100}, 40, "relu"},
      {{2, 2, 3, 40}, 24, "relu"},
      {{200, 200}, 33},
  };
  std::vector<Case> cases;
  for (const auto& s : specs) cases.push_back(matmulCase(s));
  sweep(cases);
}

// ---- MaxPool and QuantizedAvgPool ----

struct PoolSpec {
  Ints kernel, strides, pads;
  int64_t ceilMode = 0;
};

std::vector<Case> poolCases(bool average) {
  const std::vector<Dims> shapes = {{1, 8, 8, 16},   {1, 7, 7, 3},   {1, 9, 9, 17}, {2, 6, 6, 8},
                                    {1, 12, 10, 64}, {1, 5, 5, 100}, {1, 4, 4, 1},  {1, 16, 16, 32}};
  const std::vector<PoolSpec> pools = {
      {{2, 2}, {2, 2}, {0, 0, 0, 0}},    {{3, 3}, {2, 2}, {1, 1, 1, 1}}, {{3, 3}, {1, 1}, {1, 1, 1, 1}},
      {{2, 2}, {1, 1}, {0, 0, 0, 0}},    {{3, 3}, {3, 3}, {0, 0, 0, 0}}, {{1, 3}, {1, 1}, {0, 1, 0, 1}},
      {{3, 3}, {2, 2}, {0, 0, 0, 0}, 1}, {{2, 3}, {2, 1}, {1, 0, 0, 1}},
  };
  std::vector<Case> cases;
  for (size_t i = 0; i < shapes.size(); ++i)
    for (size_t j = 0; j < pools.size(); ++j) {
      if ((i + j) % 2 && !(i == 0 || j == 0)) continue;  // a diagonal half of the grid plus every row/column
      const Dims shape = shapes[i];
      const PoolSpec p = pools[j];
      if (p.kernel[0] > shape[1] + p.pads[0] + p.pads[2] || p.kernel[1] > shape[2] + p.pads[1] + p.pads[3])
        continue;
      const int64_t countPad = int64_t((i + j) % 3 == 0);
      std::ostringstream name;
      name << (average ? "avgpool/" : "maxpool/") << dimsText(shape) << "/k" << p.kernel[0] << "x"
           << p.kernel[1] << "/s" << p.strides[0] << p.strides[1] << "/p" << p.pads[0] << p.pads[1]
           << p.pads[2] << p.pads[3] << (p.ceilMode ? "/ceil" : "")
           << (average && countPad ? "/count_pad" : "");
      cases.push_back({name.str(), [=](Builder& b) {
                         const float scale = float(b.rng.logUniform(0.01, 0.1));
                         NodeValue in = b.input(b.int8(shape, scale, int32_t(b.rng.integer(-20, 20))));
                         if (!average) {
                           b.op(OpKind::MaxPool, {in},
                                {{"kernel", p.kernel},
                                 {"strides", p.strides},
                                 {"pads", p.pads},
                                 {"dilations", Ints{1, 1}},
                                 {"ceil_mode", p.ceilMode}});
                           return;
                         }
                         b.op(OpKind::QuantizedAvgPool, {in},
                              {{"kernel", p.kernel},
                               {"strides", p.strides},
                               {"pads", p.pads},
                               {"ceil_mode", p.ceilMode},
                               {"count_include_pad", countPad},
                               {"kind", std::string("i8q")},
                               {"scale", double(scale) * b.rng.logUniform(0.5, 2)},
                               {"offset", b.rng.integer(-10, 10)}});
                       }});
    }
  return cases;
}

TEST(NpuSweep, MaxPool) { sweep(poolCases(false)); }
TEST(NpuSweep, QuantizedAvgPool) { sweep(poolCases(true)); }

// ---- QuantizedAdd, Requantize, Lookup ----

const std::vector<Dims> kElementwiseShapes = {
    {1},
    {3, 5},
    {17},
    {1, 8, 8, 16},
    {256},
    {1000},
    {2, 3, 4, 5},
    {1, 7, 7, 33},
    {1, 1, 1, 64},
    {4, 4},
    {1, 56, 56, 8},
    {1, 14, 14, 96},
    {31, 31},
    {2, 9, 9, 3},
    {1, 10, 1, 7},
    {65, 3},
    {1, 3, 3, 512},
    {1, 2, 2, 2},
    {128},
    {129},
    {5, 5, 5},
    {1, 28, 28, 4},
    {6, 100},
    {1, 1, 300},
    {16, 16},
    {17, 17},
    {1, 4, 4, 1000},
    {2, 1, 1, 2},
    {3, 1, 7},
    {1, 6, 6, 48},
    {7, 11, 13},
};

TEST(NpuSweep, QuantizedAdd) {
  std::vector<Case> cases;
  for (size_t i = 0; i < kElementwiseShapes.size(); ++i) {
    const Dims shape = kElementwiseShapes[i];
    // Every third case broadcasts the right operand: per channel or a scalar.
    Dims rhsShape = shape;
    if (i % 3 == 1) rhsShape = {shape.back()};
    if (i % 3 == 2) rhsShape = {1};
    const bool relu = i % 4 == 3;
    cases.push_back(
        {"add/" + dimsText(shape) + "+" + dimsText(rhsShape) + (relu ? "/relu" : ""), [=](Builder& b) {
           const double sa = b.rng.logUniform(0.01, 0.1), sb = sa * b.rng.logUniform(0.25, 4);
           NodeValue lhs = b.input(b.int8(shape, float(sa), int32_t(b.rng.integer(-30, 30))));
           NodeValue rhs = b.input(b.int8(rhsShape, float(sb), int32_t(b.rng.integer(-30, 30))));
           Attributes attrs{{"kind", std::string("i8q")},
                            {"scale", std::max(sa, sb) * b.rng.logUniform(1, 3)},
                            {"offset", b.rng.integer(-10, 10)}};
           if (relu) attrs.set("clip_min", 0.0);
           b.op(OpKind::QuantizedAdd, {lhs, rhs}, attrs);
         }});
  }
  sweep(cases);
}

TEST(NpuSweep, Requantize) {
  std::vector<Case> cases;
  for (const Dims& shape : kElementwiseShapes)
    cases.push_back({"requantize/" + dimsText(shape), [=](Builder& b) {
                       const double scale = b.rng.logUniform(0.01, 0.1);
                       NodeValue in = b.input(b.int8(shape, float(scale), int32_t(b.rng.integer(-30, 30))));
                       b.op(OpKind::Requantize, {in},
                            {{"kind", std::string("i8q")},
                             {"scale", scale * b.rng.logUniform(0.7, 2.5)},
                             {"offset", b.rng.integer(-30, 30)}});
                     }});
  sweep(cases);
}

TEST(NpuSweep, Lookup) {
  std::vector<Case> cases;
  for (const Dims& shape : kElementwiseShapes)
    cases.push_back({"lookup/" + dimsText(shape), [=](Builder& b) {
                       NodeValue in = b.input(b.int8(shape, 0.05f, int32_t(b.rng.integer(-10, 10))));
                       NodeValue table = b.weightInt8(b.int8({256}, 0.02f, int32_t(b.rng.integer(-10, 10))));
                       b.op(OpKind::Lookup, {in, table}, {});
                     }});
  sweep(cases);
}

// ---- Data movement on int8: Transpose, Concat, Slice ----

TEST(NpuSweep, Transpose) {
  std::vector<std::pair<Dims, Ints>> specs;
  // Every permutation but the identity, which the graph optimizer removes
  // (no node is left to run on the NPU).
  Ints perm = {0, 1, 2, 3};
  while (std::next_permutation(perm.begin(), perm.end())) specs.push_back({{2, 3, 5, 7}, perm});
  for (const auto& extra : std::vector<std::pair<Dims, Ints>>{{{16, 17}, {1, 0}},
                                                              {{3, 1}, {1, 0}},
                                                              {{64, 100}, {1, 0}},
                                                              {{4, 5, 6}, {2, 0, 1}},
                                                              {{4, 5, 6}, {1, 2, 0}},
                                                              {{1, 8, 8, 16}, {0, 3, 1, 2}},  // NHWC -> NCHW
                                                              {{1, 16, 8, 8}, {0, 2, 3, 1}},  // NCHW -> NHWC
                                                              {{2, 3, 4, 5, 6}, {4, 3, 2, 1, 0}}})
    specs.push_back(extra);
  std::vector<Case> cases;
  for (const auto& [shape, p] : specs) {
    std::string permText;
    for (int64_t a : p) permText += std::to_string(a);
    cases.push_back({"transpose/" + dimsText(shape) + "/" + permText, [shape = shape, p = p](Builder& b) {
                       NodeValue in = b.input(b.int8(shape, 0.05f, 3));
                       b.op(OpKind::Transpose, {in}, {{"perm", p}});
                     }});
  }
  sweep(cases);
}

TEST(NpuSweep, Concat) {
  std::vector<Case> cases;
  const Dims base = {2, 4, 5, 6};
  for (int64_t axis = 0; axis < 4; ++axis)
    for (const Ints& sizes :
         std::vector<Ints>{{1, 1}, {2, 3}, {1, 2, 3}, {4, 1, 1, 5}, {7, 16}, {3, 3, 3}, {17, 1}, {1, 31}}) {
      std::string sizesText;
      for (int64_t s : sizes) sizesText += (sizesText.empty() ? "" : ",") + std::to_string(s);
      cases.push_back(
          {"concat/axis" + std::to_string(axis) + "/" + dimsText(base) + "/" + sizesText, [=](Builder& b) {
             std::vector<NodeValue> operands;
             for (int64_t s : sizes) {
               Dims d = base;
               d[size_t(axis)] = s;
               operands.push_back(b.input(b.int8(d, 0.05f, -2)));
             }
             b.op(OpKind::Concat, operands, {{"axis", axis}});
           }});
    }
  sweep(cases);
}

TEST(NpuSweep, Slice) {
  struct SliceSpec {
    Dims shape;
    Ints starts, ends, steps;
  };
  const std::vector<SliceSpec> specs = {
      {{8, 8}, {0, 0}, {4, 8}, {1, 1}},
      {{8, 8}, {2, 1}, {7, 5}, {1, 1}},
      {{8, 8}, {0, 0}, {8, 8}, {2, 2}},
      {{8, 8}, {1, 0}, {8, 8}, {3, 1}},
      {{17, 33}, {0, 16}, {17, 33}, {1, 1}},
      {{17, 33}, {5, 0}, {6, 33}, {1, 1}},
      {{1, 8, 8, 16}, {0, 0, 0, 0}, {1, 8, 8, 8}, {1, 1, 1, 1}},
      {{1, 8, 8, 16}, {0, 0, 0, 8}, {1, 8, 8, 16}, {1, 1, 1, 1}},
      {{1, 8, 8, 16}, {0, 1, 1, 0}, {1, 7, 7, 16}, {1, 1, 1, 1}},
      {{1, 8, 8, 16}, {0, 0, 0, 0}, {1, 8, 8, 16}, {1, 2, 2, 1}},
      {{1, 9, 9, 3}, {0, 1, 0, 0}, {1, 9, 9, 3}, {1, 2, 3, 1}},
      {{2, 4, 5, 6}, {1, 0, 0, 0}, {2, 4, 5, 6}, {1, 1, 1, 1}},
      {{2, 4, 5, 6}, {0, 1, 2, 3}, {2, 3, 4, 5}, {1, 1, 1, 1}},
      {{2, 4, 5, 6}, {0, 0, 0, 1}, {2, 4, 5, 6}, {1, 1, 1, 2}},
      {{100}, {10}, {90}, {1}},
      {{100}, {0}, {100}, {7}},
      {{100}, {99}, {100}, {1}},
      {{3, 300}, {0, 100}, {3, 200}, {1, 1}},
      {{3, 300}, {1, 0}, {2, 300}, {1, 5}},
      {{1, 16, 16, 32}, {0, 0, 0, 16}, {1, 16, 16, 32}, {1, 1, 1, 1}},
      {{1, 16, 16, 32}, {0, 4, 4, 0}, {1, 12, 12, 32}, {1, 1, 1, 1}},
      {{1, 16, 16, 32}, {0, 0, 0, 0}, {1, 16, 16, 32}, {1, 4, 4, 1}},
      {{4, 4, 4}, {1, 1, 1}, {3, 3, 3}, {1, 1, 1}},
      {{4, 4, 4}, {0, 0, 0}, {4, 4, 4}, {2, 2, 2}},
      {{64, 64}, {0, 0}, {64, 1}, {1, 1}},
      {{64, 64}, {0, 63}, {64, 64}, {1, 1}},
      {{64, 64}, {32, 32}, {64, 64}, {1, 1}},
      {{5, 7}, {4, 6}, {5, 7}, {1, 1}},
      {{2, 3, 4, 5, 6}, {0, 1, 0, 2, 0}, {2, 3, 4, 5, 6}, {1, 1, 2, 1, 3}},
      {{1, 1, 1, 100}, {0, 0, 0, 1}, {1, 1, 1, 99}, {1, 1, 1, 1}},
      {{7, 9, 11}, {1, 2, 3}, {6, 8, 10}, {2, 3, 4}},
  };
  std::vector<Case> cases;
  for (const auto& s : specs) {
    std::ostringstream name;
    name << "slice/" << dimsText(s.shape) << "/";
    for (size_t i = 0; i < s.shape.size(); ++i)
      name << (i ? "," : "") << s.starts[i] << ":" << s.ends[i] << ":" << s.steps[i];
    cases.push_back(
        {name.str(), [s](Builder& b) {
           NodeValue in = b.input(b.int8(s.shape, 0.05f, 1));
           b.op(OpKind::Slice, {in}, {{"starts", s.starts}, {"ends", s.ends}, {"steps", s.steps}});
         }});
  }
  sweep(cases);
}

// ---- Other arrays: the same compiler on the 32x32 and 64x64 configs ----

TEST(NpuSweep, OtherConfigs) {
  const Ints s1{1, 1}, s2{2, 2}, d1{1, 1}, p0{0, 0, 0, 0}, p1{1, 1, 1, 1};
  std::vector<Case> cases = {
      convCase({{1, 8, 8, 40}, 70, 3, 3, s1, p1, d1}),
      convCase({{1, 9, 9, 33}, 33, 3, 3, s2, p1, d1, 33}),
      convCase({{1, 3, 3, 512}, 100, 3, 3, s1, p1, d1}),
      matmulCase({{65, 1000}, 130}),
      matmulCase({{1, 2048}, 1000}),
  };
  for (const char* config :
       {"npu-32x32.yaml", "npu-64x64.yaml", "npu-64x64-v2.yaml", "npu-64x64-v2q.yaml", "npu-64x64-v3.yaml"})
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(config) + " " + c.name);
      auto expected = runCase(c, "reference", "");
      ASSERT_TRUE(expected) << expected.error().message();
      auto got = runCase(c, "npu", configPath(config));
      ASSERT_TRUE(got) << config << " " << c.name << ": " << got.error().message();
      EXPECT_EQ(compareInt8(*expected, *got), "") << config << " " << c.name;
    }
}

}  // namespace
}  // namespace ember
