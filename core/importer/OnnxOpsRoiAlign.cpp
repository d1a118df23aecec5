// RoiAlign (opsets 10 and 16): the NHWC RoiAlign primitive between layout
// transposes. Opset 10 has no coordinate_transformation_mode and behaves as
// output_half_pixel.

#include "OnnxImporter.h"

namespace ember::onnx_import {
namespace {

Error importRoiAlign(NodeBuilder& b) {
  EMBER_TRY(Value x, b.input(0));
  EMBER_TRY(Value rois, b.input(1));
  EMBER_TRY(Value batchIndices, b.input(2));
  if (x.rank() != 4) return makeError("input X must be [N, C, H, W], got ", x.type.str());
  EMBER_TRY(std::string mode, b.attrString("mode", "avg"));
  EMBER_TRY(int64_t height, b.attrInt("output_height", 1));
  EMBER_TRY(int64_t width, b.attrInt("output_width", 1));
  EMBER_TRY(int64_t samplingRatio, b.attrInt("sampling_ratio", 0));
  EMBER_TRY(double spatialScale, b.attrFloat("spatial_scale", 1.0));
  std::string transform = "output_half_pixel";
  if (b.opset() >= 16) {
    EMBER_TRY(transform, b.attrString("coordinate_transformation_mode", "half_pixel"));
  }
  EMBER_TRY(Value nhwc, b.transpose(x, {0, 2, 3, 1}, "nhwc"));
  EMBER_TRY(Value y, b.emit(OpKind::RoiAlign, {nhwc, rois, batchIndices},
                            Attributes{{"mode", mode},
                                       {"output_height", height},
                                       {"output_width", width},
                                       {"sampling_ratio", samplingRatio},
                                       {"spatial_scale", spatialScale},
                                       {"coordinate_transformation_mode", transform}}));
  EMBER_TRY(Value nchw, b.transpose(y, {0, 3, 1, 2}, "nchw"));
  return b.setOutput(0, nchw);
}

}  // namespace

void registerRoiAlignOps(OpTable& t) { t["RoiAlign"] = importRoiAlign; }

}  // namespace ember::onnx_import
