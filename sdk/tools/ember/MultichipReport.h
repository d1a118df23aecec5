// The report of `ember multichip` (docs/multichip.md): the split, the
// per-chip and per-link figures of the timed run, printed and as JSON.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "Tool.h"  // JsonWriter
#include "ember/multichip/MultichipModel.h"

namespace ember::cli {

/// One point of a link-bandwidth sweep: the same split run (co-simulated) or
/// retimed (--schedule-only) on other links.
struct BandwidthPoint {
  double bandwidthGBps = 0;
  multichip::MultichipFigures figures;
};

struct MultichipSummary {
  const multichip::MultichipModel* model = nullptr;
  const multichip::MultichipRun* run = nullptr;
  multichip::MultichipFigures figures;
  /// figures come from the co-simulation (else from the event schedule).
  bool coSimulated = false;
  /// Co-simulated: the event schedule of the same stage cycles (the cross-check).
  std::optional<multichip::MultichipFigures> scheduleEstimate;
  double coSimulationHostSeconds = 0;
  int64_t imagesPerMicroBatch = 1;
  double hostSeconds = 0;  ///< the whole command's compile and run
  std::vector<BandwidthPoint> sweep;
};

void printMultichipReport(std::ostream& os, const MultichipSummary& summary);
/// Writes the report's keys into an open JSON object.
void writeMultichipJson(JsonWriter& json, const MultichipSummary& summary);

}  // namespace ember::cli
