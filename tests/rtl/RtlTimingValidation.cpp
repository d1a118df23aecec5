// rtl_timing_validation: runs the same matrix-engine instruction mix through
// the simulator with the fast model and with the verilated RTL, on npu-16x16
// and npu-32x32 in both dataflows, >= 50 shapes each (full and partial tiles),
// then chains of 2-8 gemms on two weight buffers (wbuf alternating and
// random, back to back), and reports per-instruction and total cycle error. Exit status 1 when the
// mean absolute per-instruction error exceeds 3% or the maximum 8%
// (docs/npu/rtl.md, "Timing validation").
//
//   rtl_timing_validation [--verbose] [--shapes N] [CONFIG.yaml...]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "RtlPrograms.h"
#include "ember/npu/Assembler.h"
#include "ember/npu/MatrixEngine.h"
#include "ember/npu/Simulator.h"
#include "ember/npu/Timing.h"

using namespace ember::npu;
using ember::rtl::test::GemmShape;

namespace {

struct Errors {
  std::vector<double> instruction, total, uncalibrated;
  void add(const Errors& o) {
    instruction.insert(instruction.end(), o.instruction.begin(), o.instruction.end());
    total.insert(total.end(), o.total.begin(), o.total.end());
    uncalibrated.insert(uncalibrated.end(), o.uncalibrated.begin(), o.uncalibrated.end());
  }
};
double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}
double maxOf(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
double relError(double model, double reference) { return 100.0 * std::fabs(model - reference) / reference; }

// Shapes: the corners (1 and full in every dimension), then random partial tiles.
std::vector<GemmShape> shapes(const NpuConfig& c, bool ws, int count, uint32_t seed) {
  const int64_t R = c.rows, C = c.cols;
  std::vector<GemmShape> out;
  for (int64_t a : {int64_t(1), R})
    for (int64_t n : {int64_t(1), C})
      for (int64_t streamed : {int64_t(1), R, 4 * R})
        out.push_back(ws ? GemmShape{streamed, a, n} : GemmShape{a, streamed, n});
  std::mt19937 rng(seed);
  auto dim = [&](int64_t hi) { return 1 + int64_t(rng() % uint64_t(hi)); };
  while (int(out.size()) < count)
    out.push_back(ws ? GemmShape{dim(4 * R), dim(R), dim(C)} : GemmShape{dim(R), dim(4 * R), dim(C)});
  return out;
}

bool run(const Bundle& b, NpuConfig c, MatrixEngineModel model, SimStats& stats) {
  c.matrixEngineModel = model;
  DramImage dram = makeDram(b);
  uint32_t x = 12345;
  for (auto& byte : dram.bytes) byte = uint8_t((x = x * 1103515245u + 12345u) >> 16);
  auto s = simulate(b, c, dram);
  if (!s) {
    std::cerr << "rtl_timing_validation: " << s.error().message() << "\n";
    return false;
  }
  stats = *s;
  return true;
}

// Two weight buffers: chains of 2-8 gemms (wbuf alternating, then random),
// issued back to back, on each config with matrix_engine.weight_buffers: 2.
// Adds each gemm's and each program's error to `all`; prints a row per
// config and buffer pattern, with the cycles the overlap saves against the
// same gemms run one after another (the one-buffer formula). False on a
// simulation error.
bool validateChains(const std::vector<std::string>& configs, int count, bool verbose, Errors& all) {
  for (const auto& path : configs) {
    auto loaded = loadConfig(path);
    if (!loaded) return false;
    NpuConfig c = *loaded;
    c.dataflow = Dataflow::WeightStationary;
    c.weightBuffers = 2;
    for (bool alternate : {true, false}) {
      Errors e;
      std::vector<double> saved;
      size_t gemms = 0;
      std::mt19937 rng(uint32_t(c.rows * 13 + alternate));
      for (int i = 0; i < count; ++i) {
        const auto chain = ember::rtl::test::randomChain(rng, c.rows, c.cols, 2 + int(rng() % 7), alternate);
        auto b =
            assemble(ember::rtl::test::gemmChainProgram(chain, c.rows, c.cols, c.bankBytes()), "chain.s");
        if (!b) {
          std::cerr << "rtl_timing_validation: " << b.error().message() << "\n";
          return false;
        }
        SimStats fast, rtl;
        if (!run(*b, c, MatrixEngineModel::Fast, fast) || !run(*b, c, MatrixEngineModel::Rtl, rtl))
          return false;
        e.total.push_back(relError(double(fast.cycles), double(rtl.cycles)));
        uint64_t first = ~uint64_t(0), last = 0, serial = 0;
        for (size_t r = 0; r < rtl.records.size(); ++r) {
          const InstructionRecord &rr = rtl.records[r], &fr = fast.records[r];
          if (rr.unit != Unit::MatrixEngine) continue;
          ++gemms;
          e.instruction.push_back(
              relError(double(fr.endCycle - fr.startCycle), double(rr.endCycle - rr.startCycle)));
          first = std::min(first, rr.startCycle);
          last = std::max(last, rr.endCycle);
          serial += timing::gemm(c, *isa::decode(b->program[rr.index])).total();
        }
        saved.push_back(100.0 * (1.0 - double(last - first) / double(serial)));
        if (verbose)
          std::printf(
              "  %s chain %d (%zu gemms, %s): rtl %llu fast %llu cycles, gemms %llu..%llu, serial %llu\n",
              c.name.c_str(), i, chain.size(), alternate ? "alternating" : "random",
              (unsigned long long)rtl.cycles, (unsigned long long)fast.cycles, (unsigned long long)first,
              (unsigned long long)last, (unsigned long long)serial);
      }
      char a[64], t[64], o[64];
      std::snprintf(a, sizeof a, "%.2f%% / %.2f%%", mean(e.instruction), maxOf(e.instruction));
      std::snprintf(t, sizeof t, "%.2f%% / %.2f%%", mean(e.total), maxOf(e.total));
      std::snprintf(o, sizeof o, "%.1f%% / %.1f%%", mean(saved), maxOf(saved));
      std::printf("%-10s %-3s %6d %6zu  %-22s %-22s overlap saves (mean/max) %s  [wbuf %s]\n", c.name.c_str(),
                  "ws2", count, gemms, a, t, o, alternate ? "alternating" : "random");
      e.uncalibrated.clear();
      all.add(e);
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool verbose = false;
  int count = 60;
  std::vector<std::string> configs;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--verbose"))
      verbose = true;
    else if (!std::strcmp(argv[i], "--shapes") && i + 1 < argc)
      count = std::max(1, std::atoi(argv[++i]));
    else if (argv[i][0] == '-') {
      std::cerr << "usage: rtl_timing_validation [--verbose] [--shapes N] [CONFIG.yaml...]\n";
      return 2;
    } else
      configs.push_back(argv[i]);
  }
  if (configs.empty())
    configs = {std::string(EMBER_NPU_CONFIG_DIR) + "/npu-16x16.yaml",
               std::string(EMBER_NPU_CONFIG_DIR) + "/npu-32x32.yaml"};

  Errors all;
  std::printf("%-10s %-3s %6s %6s  %-22s %-22s %-22s\n", "config", "df", "shapes", "gemms",
              "per-gemm err mean/max", "program err mean/max", "uncalibrated mean/max");
  for (const auto& path : configs) {
    auto loaded = loadConfig(path);
    if (!loaded) {
      std::cerr << "rtl_timing_validation: " << loaded.error().message() << "\n";
      return 2;
    }
    for (Dataflow df : {Dataflow::WeightStationary, Dataflow::OutputStationary}) {
      NpuConfig c = *loaded;
      c.dataflow = df;
      const bool ws = df == Dataflow::WeightStationary;
      Errors e;
      for (const GemmShape& s : shapes(c, ws, count, uint32_t(c.rows * 7 + ws))) {
        auto b = assemble(ember::rtl::test::gemmMixProgram(s, c.bankBytes()), "mix.s");
        if (!b) {
          std::cerr << "rtl_timing_validation: " << b.error().message() << "\n";
          return 2;
        }
        SimStats fast, rtl;
        if (!run(*b, c, MatrixEngineModel::Fast, fast) || !run(*b, c, MatrixEngineModel::Rtl, rtl)) return 2;
        e.total.push_back(relError(double(fast.cycles), double(rtl.cycles)));
        for (size_t i = 0; i < rtl.records.size(); ++i) {
          const InstructionRecord &r = rtl.records[i], &f = fast.records[i];
          if (r.unit != Unit::MatrixEngine) continue;
          const double rc = double(r.endCycle - r.startCycle), fc = double(f.endCycle - f.startCycle);
          auto instr = isa::decode(b->program[r.index]);
          // The formula before calibration: pipeline R + C - 2 in both dataflows.
          const double before = fc - double(timing::gemm(c, *instr).pipeline) + double(c.rows + c.cols - 2);
          e.instruction.push_back(relError(fc, rc));
          e.uncalibrated.push_back(relError(before, rc));
          if (verbose)
            std::printf("  %s %s m=%lld k=%lld n=%lld preload=%lld: rtl %.0f fast %.0f (%.2f%%)\n",
                        c.name.c_str(), ws ? "ws" : "os", (long long)(*instr)[isa::Field::M],
                        (long long)(*instr)[isa::Field::K], (long long)(*instr)[isa::Field::N],
                        (long long)(*instr)[isa::Field::Preload], rc, fc, relError(fc, rc));
        }
      }
      char a[64], t[64], u[64];
      std::snprintf(a, sizeof a, "%.2f%% / %.2f%%", mean(e.instruction), maxOf(e.instruction));
      std::snprintf(t, sizeof t, "%.2f%% / %.2f%%", mean(e.total), maxOf(e.total));
      std::snprintf(u, sizeof u, "%.2f%% / %.2f%%", mean(e.uncalibrated), maxOf(e.uncalibrated));
      std::printf("%-10s %-3s %6d %6zu  %-22s %-22s %-22s\n", c.name.c_str(), ws ? "ws" : "os", count,
                  e.instruction.size(), a, t, u);
      all.add(e);
    }
  }
  if (!validateChains(configs, count, verbose, all)) return 2;
  const double meanErr = mean(all.instruction), maxErr = maxOf(all.instruction);
  std::printf("uncalibrated formula: mean %.2f%% max %.2f%%\n", mean(all.uncalibrated),
              maxOf(all.uncalibrated));
  std::printf("timing error: mean %.2f%% max %.2f%%\n", meanErr, maxErr);
  if (meanErr > 3.0 || maxErr > 8.0) {
    std::printf("FAILED: bounds are mean 3%% and max 8%%\n");
    return 1;
  }
  return 0;
}
