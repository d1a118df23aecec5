// int8 models on the cpu backend, bit for bit against the reference backend.
//
// The models and profiles of the npu int8 model tests (Int8ModelRun.h):
// each is compiled twice from the same ONNX file, once for the cpu backend
// (its int8 kernels: QuantizedConv, QuantizedMatMul, QuantizedAdd, pooling
// on codes; what it lacks on the reference) and once entirely for the
// reference. Both quantize the same nodes, so the outputs must be identical
// bits. ctest runs the suite again with the int8 kernels forced to AVX2 and
// to the portable C++ (EMBER_CPU_INT8_ISA), tests/models/CMakeLists.txt.

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "Int8ModelRun.h"
#include "backends/BuiltinBackends.h"

namespace {

using namespace ember::int8_model_test;

class CpuInt8ModelTest : public testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { ember::registerBuiltinBackends(); }
};

TEST_P(CpuInt8ModelTest, BitExactAgainstReferenceInt8) {
  const std::string& model = GetParam();
  auto profile = ember::QuantizationProfile::load(dataPath(model, ".profile.yaml"));
  ASSERT_TRUE(profile) << profile.error().message();

  auto onCpu = run(model, "cpu", *profile);
  ASSERT_TRUE(onCpu) << onCpu.error().message();
  auto onReference = run(model, "reference", *profile);
  ASSERT_TRUE(onReference) << onReference.error().message();

  const ember::Tensor& a = onCpu->output;
  ASSERT_EQ(a.type().str(), onReference->output.type().str());
  const ByteDiff diff = compareBytes(a, onReference->output);
  EXPECT_EQ(diff.differing, 0u)
      << model << ": " << diff.differing << " of " << a.sizeInBytes()
      << " output bytes differ from the reference backend's int8 run; first at byte " << diff.first;

  // The model has int8 convolutions or matmuls, and they ran on the cpu
  // backend, not on its reference fallback.
  EXPECT_GT(onCpu->int8Convs, 0u) << model << ": nothing was quantized into an int8 convolution or matmul";
  size_t convsOnReference = 0;
  for (const ember::FallbackNode& node : onCpu->report.fallbackNodes)
    if (node.op == "QuantizedConv" || node.op == "QuantizedMatMul") ++convsOnReference;
  EXPECT_EQ(convsOnReference, 0u) << model << ": int8 convolutions or matmuls fell back to the reference";
  std::cout << model << ": " << onCpu->int8Convs << " int8 convolutions and matmuls, "
            << onCpu->report.fallbackNodes.size() << " nodes on the reference fallback, "
            << onCpu->report.partitions.size() << " partitions\n";
}

INSTANTIATE_TEST_SUITE_P(Models, CpuInt8ModelTest, testing::ValuesIn(kModels),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
