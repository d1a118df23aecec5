#include "RandomProgram.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <sstream>
#include <vector>

namespace ember::npu::test {
namespace {

/// One instruction: its text without tokens, and its token bits.
struct Line {
  std::string text;
  bool popPrev = false, popNext = false, pushPrev = false, pushNext = false;
  std::string str() const {
    return text + (popPrev ? " pop_prev" : "") + (popNext ? " pop_next" : "") +
           (pushPrev ? " push_prev" : "") + (pushNext ? " push_next" : "");
  }
};

/// Where one tile's data lives: DRAM offsets (bytes), scratchpad (bytes) and
/// accumulator (entries).
struct Tile {
  int64_t m = 0, k = 0, n = 0, inpStride = 0, wgtStride = 0, accStride = 0;
  int64_t dramA = 0, dramW = 0, dramBias = 0;
  int64_t spadA = 0, spadW = 0, spadQ = 0, spadL = 0, spadE = 0, spadP = 0;
  int64_t acc = 0, bias = 0;
};

class Generator {
 public:
  Generator(const NpuConfig& c, uint64_t seed) : c_(c), rng_(seed) {}

  int64_t uniform(int64_t lo, int64_t hi) { return lo + int64_t(rng_() % uint64_t(hi - lo + 1)); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  RandomProgram generate(Mutation mutation) {
    const bool ws = c_.dataflow == Dataflow::WeightStationary;
    const int64_t rows = c_.rows, cols = c_.cols;
    const int tiles = mutation == Mutation::DropBufferCredit ? int(uniform(3, 6)) : int(uniform(1, 6));
    const int64_t bank = c_.bankBytes(), entries = c_.accumulatorEntries();
    // A and W in different banks, or (sometimes) in one bank: the gemm then
    // contends for its ports, which both engines must time alike.
    const bool oneBank = chance(0.25);
    const int64_t table = 3 * bank, params = 3 * bank + 256;

    std::vector<Tile> plan(static_cast<size_t>(tiles));
    int64_t dram = 0;
    const int64_t tableDram = dram;
    dram += 256;
    for (int t = 0; t < tiles; ++t) {
      Tile& s = plan[size_t(t)];
      const int64_t b = t % 2;
      s.m = ws ? uniform(1, 8 * rows) : uniform(1, rows);
      s.k = ws ? uniform(1, rows) : uniform(1, 8 * rows);
      s.n = uniform(1, cols);
      s.inpStride = s.k + uniform(0, 3);
      s.wgtStride = s.n + uniform(0, 3);
      s.accStride = s.n + uniform(0, 3);
      s.dramA = dram, dram += s.m * s.k;
      s.dramW = dram, dram += s.k * s.n;
      dram = (dram + 3) / 4 * 4;
      s.dramBias = dram, dram += 4 * s.n;
      s.spadA = oneBank ? b * bank / 4 : b * bank / 2;
      s.spadW = oneBank ? bank / 2 + b * bank / 4 : bank + b * bank / 2;
      const int64_t slot = 8192;
      s.spadQ = 2 * bank + b * bank / 2;
      s.spadL = s.spadQ + slot, s.spadE = s.spadQ + 2 * slot, s.spadP = s.spadQ + 3 * slot;
      s.acc = b * entries / 2;
      s.bias = s.acc + entries / 4;
    }
    const int64_t inputBytes = dram;
    const int64_t weightsDram = (dram + 63) / 64 * 64;
    int64_t out = weightsDram + 64;
    const int64_t outBegin = out;

    std::vector<Line> program;
    const size_t count = size_t(tiles);
    std::vector<size_t> firstLoad(count), lastLoad(count), firstCompute(count), reuseGemm(count, SIZE_MAX),
        firstGemm(count), spadStore(count);
    auto emitLoads = [&](int t) {
      const Tile& s = plan[size_t(t)];
      firstLoad[size_t(t)] = program.size();
      Line a{fmt("load mem=spad dram=", s.dramA, " sram=", s.spadA, " x=", s.k, " y=", s.m,
                 " dram_ystride=", s.k, " sram_stride=", s.inpStride)};
      a.popNext = t >= 2;  // compute has finished with this buffer two tiles ago
      program.push_back(a);
      program.push_back({fmt("load mem=spad dram=", s.dramW, " sram=", s.spadW, " x=", s.n, " y=", s.k,
                             " dram_ystride=", s.n, " sram_stride=", s.wgtStride)});
      Line bias{fmt("load mem=acc dram=", s.dramBias, " sram=", s.bias, " x=", s.n, " y=1 dram_ystride=", s.n,
                    " sram_stride=", s.n)};
      bias.pushNext = true;
      lastLoad[size_t(t)] = program.size();
      program.push_back(bias);
    };

    std::vector<int64_t> outputs;  // DRAM bytes each store writes
    // Two weight buffers: each preload draws its buffer, and a reuse streams
    // from the buffer its preload filled. (Drawn only then, so that programs
    // for one-buffer configs stay as they were.)
    const bool twoBuffers = c_.weightBuffers == 2;
    const bool drawBuffers = twoBuffers && mutation != Mutation::MissingWeightBuffer;
    auto wbuf = [&]() { return drawBuffers ? fmt(" wbuf=", uniform(0, 1)) : std::string(); };
    auto emitCompute = [&](int t) {
      const Tile& s = plan[size_t(t)];
      firstCompute[size_t(t)] = program.size();
      if (chance(0.3)) program.push_back({"sync q=compute"});
      const std::string firstBuffer = wbuf();
      program.push_back({fmt("gemm preload=1 m=", s.m, " k=", s.k, " n=", s.n, " inp=", s.spadA,
                             " inp_stride=", s.inpStride, " wgt=", s.spadW, " wgt_stride=", s.wgtStride,
                             " acc=", s.acc, " acc_stride=", s.accStride, firstBuffer)});
      firstGemm[size_t(t)] = program.size() - 1;
      program[firstCompute[size_t(t)]].popPrev = true;
      program[firstCompute[size_t(t)]].popNext = t >= 2;  // store has drained this tile's outputs
      if (chance(0.5) || mutation == Mutation::WrongReuseShape ||
          (mutation == Mutation::MissingWeightBuffer && twoBuffers)) {
        const int64_t m2 = uniform(1, s.m);
        reuseGemm[size_t(t)] = program.size();
        program.push_back(
            {fmt("gemm accumulate=1 m=", m2, " k=", s.k, " n=", s.n,
                 " inp=", s.spadA + (s.m - m2) * s.inpStride, " inp_stride=", s.inpStride, " wgt=", s.spadW,
                 " wgt_stride=", s.wgtStride, " acc=", s.acc, " acc_stride=", s.accStride, firstBuffer)});
      }
      if (chance(0.3)) {
        const int64_t k3 = uniform(1, s.k), n3 = uniform(1, s.n);
        program.push_back({fmt("gemm preload=1 accumulate=1 m=", s.m, " k=", k3, " n=", n3, " inp=", s.spadA,
                               " inp_stride=", s.inpStride, " wgt=", s.spadW, " wgt_stride=", s.wgtStride,
                               " acc=", s.acc, " acc_stride=", s.accStride, wbuf())});
      }
      if (chance(0.7))
        program.push_back({fmt("vadd dst=", s.acc, " src=", s.bias, " rows=", s.m, " cols=", s.n,
                               " dst_stride=", s.accStride, " src_stride=0")});
      if (chance(0.5))
        program.push_back({fmt("vclip dst=", s.acc, " rows=", s.m, " cols=", s.n, " dst_stride=", s.accStride,
                               " lo=", -uniform(0, 1 << 20), " hi=", uniform(0, 1 << 20))});
      const int64_t lo = uniform(-128, 127), hi = uniform(lo, 127);
      program.push_back({fmt(
          "requant src=", s.acc, " dst=", s.spadQ, " rows=", s.m, " cols=", s.n, " src_stride=", s.accStride,
          " dst_stride=", s.n, " multiplier=", uniform(int64_t(1) << 30, (int64_t(1) << 31) - 1),
          " shift=", uniform(-24, 2), " zp=", uniform(-128, 127), " lo=", lo, " hi=", hi)});
      const bool lut = chance(0.6), eadd = chance(0.6), pool = chance(0.6);
      if (lut)
        program.push_back({fmt("lut src=", s.spadQ, " dst=", s.spadL, " rows=", s.m, " cols=", s.n,
                               " src_stride=", s.n, " dst_stride=", s.n, " table=", table)});
      if (eadd)
        program.push_back({fmt("eadd a=", s.spadQ, " b=", lut ? s.spadL : s.spadQ, " rows=", s.m,
                               " cols=", s.n, " a_stride=", s.n, " b_stride=", s.n, " dst=", s.spadE,
                               " dst_stride=", s.n, " params=", params)});
      int64_t poolH = 0, poolW = 0, poolC = 1;
      if (pool) {
        poolC = s.n % 2 == 0 && chance(0.5) ? 2 : 1;
        const int64_t width = s.n / poolC;
        const int64_t kh = uniform(1, std::min<int64_t>(3, s.m)),
                      kw = uniform(1, std::min<int64_t>(3, width));
        const int64_t sh = uniform(1, 2), sw = uniform(1, 2);
        poolH = (s.m - kh) / sh + 1, poolW = (width - kw) / sw + 1;
        program.push_back({fmt("pool mode=", chance(0.5) ? "max" : "avg", " kh=", kh, " kw=", kw, " sh=", sh,
                               " sw=", sw, " src=", s.spadQ, " dst=", s.spadP, " out_h=", poolH, " out_w=",
                               poolW, " c=", poolC, " src_stride=", s.n, " dst_stride=", poolW * poolC)});
      }
      if (chance(0.2)) program.push_back({"sync q=compute"});
      program.back().pushPrev = true;  // the load may refill this tile's input buffers
      program.back().pushNext = true;  // the store may drain its outputs

      // Stores: the int32 accumulator tile and every int8 result.
      const size_t firstStore = program.size();
      if (chance(0.2)) program.push_back({"sync q=store"});
      auto store = [&](const char* mem, int64_t sram, int64_t x, int64_t y, int64_t stride, int64_t elem) {
        program.push_back({fmt("store mem=", mem, " dram=", out, " sram=", sram, " x=", x, " y=", y,
                               " dram_ystride=", x, " sram_stride=", stride)});
        out += (x * y * elem + 3) / 4 * 4;
      };
      store("acc", s.acc, s.n, s.m, s.accStride, 4);
      spadStore[size_t(t)] = program.size();
      store("spad", s.spadQ, s.n, s.m, s.n, 1);
      if (lut) store("spad", s.spadL, s.n, s.m, s.n, 1);
      if (eadd) store("spad", s.spadE, s.n, s.m, s.n, 1);
      if (pool) store("spad", s.spadP, poolW * poolC, poolH, poolW * poolC, 1);
      if (chance(0.2)) program.push_back({"sync q=store"});
      program[firstStore].popPrev = true;
      program.back().pushPrev = true;  // compute may overwrite this tile's outputs
    };

    // The constants (LUT table, eadd parameters) ride with tile 0's token.
    program.push_back({fmt("load mem=spad dram=", tableDram, " sram=", table, " x=256 y=1 dram_ystride=256",
                           " sram_stride=256")});
    program.push_back({fmt("load mem=spad dram=", weightsDram, " sram=", params,
                           " x=32 y=1 dram_ystride=32 sram_stride=32")});
    // Double buffering: tile t+1's loads are queued before tile t's compute.
    emitLoads(0);
    if (tiles > 1) emitLoads(1);
    for (int t = 0; t < tiles; ++t) {
      emitCompute(t);
      if (t + 2 < tiles) emitLoads(t + 2);
    }

    RandomProgram result;
    result.tiles = tiles;
    result.mutation = mutation;
    result.mutated = mutation != Mutation::None;
    const size_t victim = size_t(uniform(0, tiles - 1));
    switch (mutation) {
      case Mutation::None:
        break;
      case Mutation::DropConsumerPop:
        program[firstCompute[victim]].popPrev = false;
        break;
      case Mutation::DropProducerPush:
        program[lastLoad[victim]].pushNext = false;
        break;
      case Mutation::DropBufferCredit:
        program[firstLoad[size_t(uniform(2, tiles - 1))]].popNext = false;
        break;
      case Mutation::OutOfBoundsStore: {
        Line& l = program[spadStore[victim]];
        l.text = replaceField(l.text, "sram", c_.scratchpadBytes);  // even one byte is past the end
        break;
      }
      case Mutation::WrongReuseShape: {
        Line& l = program[reuseGemm[victim]];
        const int64_t k = plan[victim].k;
        l.text = replaceField(l.text, "k", k > 1 ? k - 1 : k + 1);
        break;
      }
      case Mutation::MissingWeightBuffer:
        // One buffer: buffer 1 does not exist. Two: every gemm used buffer 0,
        // so a reuse from buffer 1 streams weights no gemm preloaded.
        program[twoBuffers ? reuseGemm[victim] : firstGemm[victim]].text += " wbuf=1";
        break;
    }

    std::ostringstream text;
    text << "# random program: " << tiles << " tiles on " << c_.name << "\n";
    text << ".input X i8 [" << inputBytes << "] @0\n";
    text << ".output Y i8 [" << std::max<int64_t>(1, out - outBegin) << "] @" << outBegin << "\n";
    text << ".weights @" << weightsDram << "\n" << eaddParams() << "\n";
    for (const Line& l : program) text << l.str() << "\n";
    text << "finish\n";
    result.text = text.str();
    return result;
  }

 private:
  template <typename... Parts>
  static std::string fmt(Parts&&... parts) {
    std::ostringstream os;
    (os << ... << parts);
    return os.str();
  }

  static std::string replaceField(const std::string& text, const std::string& field, int64_t value) {
    const std::string key = " " + field + "=";
    const size_t at = text.find(key);
    const size_t end = text.find(' ', at + key.size());
    return text.substr(0, at) + key + std::to_string(value) +
           (end == std::string::npos ? "" : text.substr(end));
  }

  /// A valid 32-byte eadd record (isa.md): Q31 multipliers in [2^30, 2^31),
  /// shifts that keep the sum in range, lo <= hi.
  std::string eaddParams() {
    std::vector<uint8_t> bytes;
    auto i32 = [&](int64_t v) {
      for (int i = 0; i < 4; ++i) bytes.push_back(uint8_t(uint64_t(v) >> (8 * i)));
    };
    auto multiplier = [&] { return uniform(int64_t(1) << 30, (int64_t(1) << 31) - 1); };
    i32(multiplier()), i32(uniform(-3, 0));
    i32(multiplier()), i32(uniform(-3, 0));
    i32(multiplier()), i32(uniform(-22, -16));
    const int64_t lo = uniform(-128, 127), hi = uniform(lo, 127);
    for (int64_t v : {uniform(-128, 127), uniform(-128, 127), uniform(-128, 127), lo, hi})
      bytes.push_back(uint8_t(int8_t(v)));
    bytes.resize(32, 0);
    std::string hex = ".bytes ";
    for (uint8_t b : bytes) {
      char buf[3];
      std::snprintf(buf, sizeof buf, "%02x", b);
      hex += buf;
    }
    return hex;
  }

  const NpuConfig& c_;
  std::mt19937_64 rng_;
};

}  // namespace

const char* mutationName(Mutation m) {
  switch (m) {
    case Mutation::None:
      return "none";
    case Mutation::DropConsumerPop:
      return "drop-consumer-pop";
    case Mutation::DropProducerPush:
      return "drop-producer-push";
    case Mutation::DropBufferCredit:
      return "drop-buffer-credit";
    case Mutation::OutOfBoundsStore:
      return "out-of-bounds-store";
    case Mutation::WrongReuseShape:
      return "wrong-reuse-shape";
    case Mutation::MissingWeightBuffer:
      return "missing-weight-buffer";
  }
  return "?";
}

const char* expectedChecker(Mutation m) {
  switch (m) {
    case Mutation::DropConsumerPop:
    case Mutation::DropProducerPush:
      return "tokens";
    case Mutation::DropBufferCredit:
    case Mutation::OutOfBoundsStore:
      return "races";
    case Mutation::WrongReuseShape:
    case Mutation::MissingWeightBuffer:
      return "weights";
    case Mutation::None:
      break;
  }
  return "";
}

RandomProgram randomProgram(const NpuConfig& config, uint64_t seed, Mutation mutation) {
  return Generator(config, seed).generate(mutation);
}

}  // namespace ember::npu::test
