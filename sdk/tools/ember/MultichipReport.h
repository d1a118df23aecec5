// The report of `ember multichip` (docs/multichip.md): the split, the
// per-chip and per-link figures of the timed run, printed and as JSON.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "Tool.h"  // JsonWriter
#include "ember/multichip/MultichipModel.h"

namespace ember::cli {

/// One point of a link-bandwidth sweep: the same run retimed on other links.
struct BandwidthPoint {
  double bandwidthGBps = 0;
  multichip::MultichipFigures figures;
};

struct MultichipSummary {
  const multichip::MultichipModel* model = nullptr;
  const multichip::MultichipRun* run = nullptr;
  multichip::MultichipFigures figures;
  int64_t imagesPerMicroBatch = 1;
  double hostSeconds = 0;  ///< the whole command's compile and run
  std::vector<BandwidthPoint> sweep;
};

void printMultichipReport(std::ostream& os, const MultichipSummary& summary);
/// Writes the report's keys into an open JSON object.
void writeMultichipJson(JsonWriter& json, const MultichipSummary& summary);

}  // namespace ember::cli
