// The conformance kit judges backends correctly: a wrong kernel fails with
// its first mismatch, a backend that supports nothing passes with everything
// unsupported, a backend that claims support and then cannot compile fails,
// and the comparison follows its documented tolerances.
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <limits>

#include "Conformance.h"
#include "backends/BuiltinBackends.h"
#include "ember/Runtime.h"
#include "tests/common/Sanitizers.h"

namespace ember::conformance {
namespace {

Expected<std::unique_ptr<Backend>> reference() {
  registerBuiltinBackends();
  return BackendRegistry::global().create("reference");
}

/// Runs like the reference backend, then corrupts element 0 of every f32
/// output of a function that contains a Sub: a wrong Sub kernel.
class WrongSubBackend final : public Backend {
 public:
  WrongSubBackend() : inner_(reference().take()) {}
  std::string name() const override { return "wrong_sub"; }
  bool supports(const NodeInfo& info) const override { return inner_->supports(info); }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction& ir) const override {
    bool hasSub = false;
    for (const Instruction& inst : ir.instructions()) hasSub |= inst.kind == OpKind::Sub;
    auto compiled = inner_->compile(ir);
    if (!compiled) return compiled.error();
    return std::unique_ptr<CompiledFunction>(new Corrupting(compiled.take(), hasSub));
  }

 private:
  struct Corrupting final : CompiledFunction {
    Corrupting(std::unique_ptr<CompiledFunction> f, bool corrupt) : inner(std::move(f)), corrupt(corrupt) {}
    Error execute(ExecutionContext& context) override {
      EMBER_RETURN_IF_ERROR(inner->execute(context));
      if (corrupt)
        for (auto& [name, tensor] : context.outputs())
          if (tensor.type().kind == ElemKind::F32 && tensor.type().numElements() > 0)
            tensor.as<float>()[0] += 0.5f;
      return Error::success();
    }
    std::unique_ptr<CompiledFunction> inner;
    bool corrupt;
  };
  std::unique_ptr<Backend> inner_;
};

class NothingBackend final : public Backend {
 public:
  std::string name() const override { return "nothing"; }
  bool supports(const NodeInfo&) const override { return false; }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction&) const override {
    return makeError("nothing: cannot compile");
  }
};

class BoastfulBackend final : public Backend {
 public:
  std::string name() const override { return "boastful"; }
  bool supports(const NodeInfo& info) const override { return info.kind == OpKind::Relu; }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction&) const override {
    return makeError("boastful: no code generator yet");
  }
};

/// Supports Neg and crashes when a function runs.
class CrashingBackend final : public Backend {
 public:
  std::string name() const override { return "crashing"; }
  bool supports(const NodeInfo& info) const override { return info.kind == OpKind::Neg; }
  Expected<std::unique_ptr<CompiledFunction>> compile(const IRFunction&) const override {
    struct Crash final : CompiledFunction {
      Error execute(ExecutionContext&) override {
        ::raise(SIGSEGV);
        return Error::success();
      }
    };
    return std::unique_ptr<CompiledFunction>(new Crash());
  }
};

template <typename B>
BackendFactory factoryOf() {
  return []() -> Expected<std::unique_ptr<Backend>> { return std::unique_ptr<Backend>(new B()); };
}

TEST(Conformance, ReferenceAgainstItselfPassesEveryCase) {
  Options options;
  auto report = runConformance(reference, reference, options);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_GT(report->passed, 500);
  EXPECT_EQ(report->failed, 0);
  EXPECT_EQ(report->unsupported, 0);
  EXPECT_TRUE(report->notes.empty()) << report->notes.front();  // every op has cases
}

TEST(Conformance, WrongKernelFailsWithItsFirstMismatch) {
  Options options;
  options.filter = "Sub/f32/";
  auto report = runConformance(factoryOf<WrongSubBackend>(), reference, options);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->passed, 0);
  EXPECT_GT(report->failed, 5);
  const CaseResult& first = report->cases.front();
  EXPECT_EQ(first.outcome, Outcome::Failed);
  ASSERT_TRUE(first.mismatch.has_value());
  EXPECT_EQ(first.mismatch->output, "out0");
  EXPECT_EQ(first.mismatch->index, 0);
  EXPECT_NEAR(first.mismatch->got - first.mismatch->expected, 0.5, 1e-6);
  // Other ops are unaffected.
  options.filter = "Add/f32/";
  auto add = runConformance(factoryOf<WrongSubBackend>(), reference, options);
  ASSERT_TRUE(add);
  EXPECT_EQ(add->failed, 0);
  EXPECT_GT(add->passed, 5);
}

TEST(Conformance, BackendSupportingNothingPassesWithEverythingUnsupported) {
  auto report = runConformance(factoryOf<NothingBackend>(), reference, Options{});
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_EQ(report->passed, 0);
  EXPECT_EQ(report->failed, 0);
  EXPECT_EQ(report->unsupported, int(report->cases.size()));
  EXPECT_NE(report->cases.front().detail.find("is not supported"), std::string::npos);
}

TEST(Conformance, ClaimingSupportThenFailingToCompileIsAFailure) {
  Options options;
  options.filter = "Relu/f32/";
  auto report = runConformance(factoryOf<BoastfulBackend>(), reference, options);
  ASSERT_TRUE(report) << report.error().message();
  // "Relu/f32/" also matches LeakyRelu and PRelu, which lower to unsupported primitives.
  int reluCases = 0;
  for (const CaseResult& r : report->cases) {
    if (r.op != "Relu") continue;
    ++reluCases;
    EXPECT_EQ(r.outcome, Outcome::Failed) << r.name;
    EXPECT_NE(r.detail.find("boastful: no code generator yet"), std::string::npos) << r.detail;
  }
  EXPECT_GT(reluCases, 3);
  EXPECT_EQ(report->failed, reluCases);
  EXPECT_EQ(report->unsupported, int(report->cases.size()) - reluCases);
  // Only Relu is claimed: everything else stays unsupported.
  options.filter = "Exp/";
  auto exp = runConformance(factoryOf<BoastfulBackend>(), reference, options);
  ASSERT_TRUE(exp);
  EXPECT_EQ(exp->failed, 0);
  EXPECT_EQ(exp->unsupported, int(exp->cases.size()));
}

TEST(Conformance, IsolatedCrashIsAFailedCaseNotTheEndOfTheRun) {
  Options options;
  options.filter = "Neg/";
  options.isolate = true;
  auto report = runConformance(factoryOf<CrashingBackend>(), reference, options);
  ASSERT_TRUE(report) << report.error().message();
  EXPECT_GT(report->failed, 3);
  EXPECT_EQ(report->failed + report->unsupported, int(report->cases.size()));
  // AddressSanitizer catches the SIGSEGV and exits with status 1 instead.
  const std::string crashed =
      test::kAddressSanitizer ? "exited with status 1 without a result" : "crashed with signal";
  for (const CaseResult& r : report->cases) {
    if (r.outcome == Outcome::Failed) {
      EXPECT_NE(r.detail.find(crashed), std::string::npos) << r.detail;
    }
  }
  // Results still travel back from the child when nothing crashes.
  options.filter = "Sub/f32/";
  auto wrong = runConformance(factoryOf<WrongSubBackend>(), reference, options);
  ASSERT_TRUE(wrong);
  EXPECT_GT(wrong->failed, 5);
  ASSERT_TRUE(wrong->cases.front().mismatch.has_value());
  EXPECT_EQ(wrong->cases.front().mismatch->output, "out0");
}

TEST(Conformance, CasesAreDeterministicAndUniquelyNamed) {
  std::vector<std::string> names = listCases();
  EXPECT_EQ(names, listCases());
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size());
}

TEST(Conformance, CompareTensorsFollowsTheTolerances) {
  auto f32 = [](std::vector<float> v) {
    return Tensor::fromValues<float>(ElemKind::F32, {int64_t(v.size())}, std::span<const float>(v));
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::string typeError;
  EXPECT_FALSE(
      compareTensors("y", f32({1, nan, 100}), f32({1.00005f, nan, 100.009f}), 1e-4, 1e-5, &typeError));
  auto m = compareTensors("y", f32({1, 2, 3}), f32({1, 2.01f, 3}), 1e-4, 1e-5, &typeError);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->index, 1);
  EXPECT_FALSE(compareTensors("y", f32({0}), f32({0.000009f}), 1e-4, 1e-5, &typeError));
  EXPECT_TRUE(compareTensors("y", f32({1}), f32({nan}), 1e-4, 1e-5, &typeError));
  // Integers are exact; a type difference is reported as such.
  std::vector<int32_t> a{1, 2}, b{1, 3};
  auto ia = Tensor::fromValues<int32_t>(ElemKind::I32, {2}, std::span<const int32_t>(a));
  auto ib = Tensor::fromValues<int32_t>(ElemKind::I32, {2}, std::span<const int32_t>(b));
  EXPECT_TRUE(compareTensors("y", ia, ib, 1, 1, &typeError));
  typeError.clear();
  EXPECT_TRUE(compareTensors("y", ia, f32({1, 2}), 1e-4, 1e-5, &typeError));
  EXPECT_NE(typeError.find("expected i32<2>"), std::string::npos) << typeError;
}

}  // namespace
}  // namespace ember::conformance
