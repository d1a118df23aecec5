// int8 models on the NPU, bit for bit against the reference backend.
//
// Each model is quantized with a profile calibrated by `ember quantize` (at
// build time) and compiled twice from the same ONNX file: once for the npu
// backend (what it lacks partitioned onto the reference backend) and once
// entirely for the reference backend. Both quantize the same nodes (the
// quantizer sees the npu + reference support union), so the outputs must be
// identical bits. The
// CNNs use a 64x64 input here (scripts/gen_npu_models.py); bench/ runs full
// size. The zoo_* models are the model zoo's (tests/models/zoo_models.py):
// CNNs, attention and recurrent models, some with several or int64 inputs.

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "Int8ModelRun.h"
#include "backends/BuiltinBackends.h"

namespace {

using namespace ember::int8_model_test;

/// A model and the NPU config to run it on ("": the built-in npu-16x16).
using ModelOnConfig = std::tuple<std::string, std::string>;

class NpuModelTest : public testing::TestWithParam<ModelOnConfig> {
 protected:
  static void SetUpTestSuite() { ember::registerBuiltinBackends(); }
};

TEST_P(NpuModelTest, BitExactAgainstReferenceInt8) {
  const auto& [model, npuConfig] = GetParam();
  auto profile = ember::QuantizationProfile::load(dataPath(model, ".profile.yaml"));
  ASSERT_TRUE(profile) << profile.error().message();

  auto onNpu = run(model, "npu", *profile,
                   npuConfig.empty() ? "" : std::string(EMBER_NPU_CONFIG_DIR) + "/" + npuConfig);
  ASSERT_TRUE(onNpu) << onNpu.error().message();
  auto onReference = run(model, "reference", *profile);
  ASSERT_TRUE(onReference) << onReference.error().message();

  const ember::Tensor& a = onNpu->output;
  ASSERT_EQ(a.type().str(), onReference->output.type().str());
  const ByteDiff diff = compareBytes(a, onReference->output);
  EXPECT_EQ(diff.differing, 0u)
      << model << ": " << diff.differing << " of " << a.sizeInBytes()
      << " output bytes differ from the reference backend's int8 run; first at byte " << diff.first;

  // The model really ran on the NPU: most MACs there, with a per-layer report.
  ASSERT_TRUE(onNpu->hasDevice) << model << ": no partition ran on the npu backend";
  EXPECT_GT(onNpu->device.cycles, 0u);
  EXPECT_GT(onNpu->device.macs, 0u);
  EXPECT_FALSE(onNpu->device.layers.empty());
  for (const ember::LayerReport& layer : onNpu->device.layers) EXPECT_FALSE(layer.name.empty());
  std::cout << model << (npuConfig.empty() ? "" : " on " + npuConfig) << ": " << onNpu->device.cycles
            << " cycles, " << 100 * onNpu->device.macUtilization() << "% MAC utilisation, "
            << onNpu->report.fallbackNodes.size() << " fallback nodes, " << onNpu->report.partitions.size()
            << " partitions\n";
}

INSTANTIATE_TEST_SUITE_P(Models, NpuModelTest,
                         testing::Combine(testing::ValuesIn(kModels),
                                          testing::Values("", "npu-16x16-v2.yaml", "npu-16x16-v2q.yaml",
                                                          "npu-16x16-v3.yaml", "npu-64x64-v3.yaml")),
                         [](const testing::TestParamInfo<ModelOnConfig>& info) {
                           // npu-16x16-v2.yaml -> _npu_16x16_v2 (test names are identifiers)
                           std::string config = std::get<1>(info.param);
                           if (config.empty()) return std::get<0>(info.param);
                           config = config.substr(0, config.find('.'));
                           for (char& ch : config)
                             if (ch == '-') ch = '_';
                           return std::get<0>(info.param) + "_" + config;
                         });

}  // namespace
