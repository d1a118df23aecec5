// Renders the co-design reports in headless Chromium (Debian's `chromium`) and
// inspects the screenshot's pixels: the plots' series colours must be there,
// and a copy of a page without its SVGs must lack them. Skips only when
// chromium is not installed.
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <regex>

#include "Plots.h"
#include "Svg.h"
#include "TestUtil.h"

namespace ember::codesign::test {
namespace {

struct Rgb {
  int r, g, b;
};

Rgb hex(const std::string& colour) {
  unsigned value = std::stoul(colour.substr(1), nullptr, 16);
  return {int(value >> 16), int((value >> 8) & 0xff), int(value & 0xff)};
}

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;

  /// Pixels within `tolerance` (per channel) of `colour`, in rows [top, bottom).
  size_t count(Rgb colour, int tolerance = 12, int top = 0, int bottom = -1) const {
    if (bottom < 0) bottom = height;
    size_t n = 0;
    for (int y = top; y < bottom; ++y)
      for (int x = 0; x < width; ++x) {
        const uint8_t* p = &rgba[(size_t(y) * size_t(width) + size_t(x)) * 4];
        if (std::abs(p[0] - colour.r) <= tolerance && std::abs(p[1] - colour.g) <= tolerance &&
            std::abs(p[2] - colour.b) <= tolerance)
          ++n;
      }
    return n;
  }
};

Image readPng(const fs::path& path) {
  Image image;
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&png, path.c_str())) return image;
  png.format = PNG_FORMAT_RGBA;
  image.rgba.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image.rgba.data(), 0, nullptr)) {
    png_image_free(&png);
    return Image{};
  }
  image.width = int(png.width);
  image.height = int(png.height);
  return image;
}

std::string chromium() {
  for (const char* candidate : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(candidate)) return candidate;
  return "";
}

/// Screenshots `page` at 1400 px wide; returns the decoded PNG.
Image screenshot(const fs::path& page, const fs::path& png, int height) {
  fs::path profile = png.parent_path() / (png.stem().string() + ".profile");
  std::string command = "timeout 60 " + chromium() +
                        " --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run "
                        "--disable-dev-shm-usage --user-data-dir=" +
                        profile.string() + " --window-size=1400," + std::to_string(height) +
                        " --screenshot=" + png.string() + " file://" + page.string();
  CommandResult result = runShell(command);
  EXPECT_TRUE(fs::exists(png)) << command << "\n" << result.output;
  return readPng(png);
}

std::string withoutSvg(const std::string& html) {
  return std::regex_replace(html, std::regex("<svg[\\s\\S]*?</svg>"), "");
}

class CodesignChromium : public ::testing::Test {
 protected:
  void SetUp() override {
    if (chromium().empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it)";
  }
};

TEST_F(CodesignChromium, ReportPageShowsRooflineAndStallPlots) {
  fs::path dir = freshDir("chromium_report");
  // Five layers spanning both sides of the ridge (16x16: 512 ops/cycle, 16 B/cycle: ridge at 32 ops/B).
  writeFile(dir / "stats.json", R"({"config": "npu-16x16", "clock_ghz": 1, "cycles": 40000, "macs": 5000000,
    "mac_utilization": 0.49, "dram_read_bytes": 300000, "dram_write_bytes": 50000, "energy_pj": 2.5e7,
    "layers": [
      {"name": "conv1", "op": "conv", "cycles": 12000, "macs": 2000000, "mac_utilization": 0.65, "dram_bytes": 20000,
       "stalls": {"token": 800, "dram_bandwidth": 3000, "bank_conflict": 200, "accumulator_port": 0, "queue_full": 100}},
      {"name": "conv2", "op": "conv", "cycles": 9000, "macs": 1500000, "mac_utilization": 0.65, "dram_bytes": 9000,
       "stalls": {"token": 500, "dram_bandwidth": 900, "bank_conflict": 0, "accumulator_port": 300, "queue_full": 0}},
      {"name": "fc", "op": "gemm", "cycles": 18000, "macs": 1400000, "mac_utilization": 0.36, "dram_bytes": 240000,
       "stalls": {"token": 2000, "dram_bandwidth": 9000, "bank_conflict": 0, "accumulator_port": 0, "queue_full": 0}},
      {"name": "pool", "op": "pool", "cycles": 3000, "macs": 0, "mac_utilization": 0, "dram_bytes": 60000,
       "stalls": {"token": 100, "dram_bandwidth": 2500, "bank_conflict": 0, "accumulator_port": 0, "queue_full": 0}},
      {"name": "head", "op": "gemm", "cycles": 1000, "macs": 100000, "mac_utilization": 0.39, "dram_bytes": 12000,
       "stalls": {"token": 50, "dram_bandwidth": 600, "bank_conflict": 0, "accumulator_port": 0, "queue_full": 0}}]})");
  CommandResult report =
      runEmber("report " + (dir / "stats.json").string() + " -o " + (dir / "page.html").string());
  ASSERT_EQ(report.status, 0) << report.output;
  Image shot = screenshot(dir / "page.html", dir / "page.png", 1100);
  ASSERT_GT(shot.width, 0);
  // The plots sit above the layer table: look in the top 700 rows.
  size_t roof = shot.count(hex(kRoofColour), 12, 0, 700);
  size_t layers = shot.count(hex(kLayerColour), 12, 0, 700);
  size_t token = shot.count(hex(stallColour("token", 0)), 12, 0, 700);
  size_t bankConflict = shot.count(hex(stallColour("bank_conflict", 0)), 12, 0, 700);
  EXPECT_GT(roof, 400u) << "roof line and dram_bandwidth stall bars";
  EXPECT_GT(layers, 150u) << "four placed layers (r=5 dots) and the legend";
  EXPECT_GT(token, 20u);
  EXPECT_GT(bankConflict, 2u);

  // Control: the same page without its SVGs has none of those colours.
  writeFile(dir / "bare.html", withoutSvg(readFile(dir / "page.html")));
  Image bare = screenshot(dir / "bare.html", dir / "bare.png", 1100);
  ASSERT_GT(bare.width, 0);
  EXPECT_LT(bare.count(hex(kRoofColour), 12, 0, 700), 5u);
  EXPECT_LT(bare.count(hex(kLayerColour), 12, 0, 700), 60u);  // at most link text
}

TEST_F(CodesignChromium, SweepReportShowsParetoUtilisationAndRoofline) {
  fs::path dir = freshDir("chromium_sweep");
  writeFile(dir / "spec.yaml", std::string("name: render\nmodels:\n  - ") + EMBER_NPU_TEST_DIR +
                                   "/conv_im2col.s\naxes:\n  dram.bandwidth_bytes_per_cycle: [2, 8, 32]\n"
                                   "  dram.latency_cycles: [100, 400]\n");
  CommandResult sweep =
      runEmber("sweep " + (dir / "spec.yaml").string() + " -o " + (dir / "out").string() + " -j 2");
  ASSERT_EQ(sweep.status, 0) << sweep.output;
  Image shot = screenshot(dir / "out/report.html", dir / "sweep.png", 1500);
  ASSERT_GT(shot.width, 0);
  size_t front = shot.count(hex(kFrontColour), 12, 0, 1100);
  size_t dominated = shot.count(hex(kDominatedColour), 12, 0, 1100);
  size_t roof = shot.count(hex(kRoofColour), 12, 0, 1100);
  size_t series = shot.count(hex(palette()[0]), 12, 0, 1100);
  EXPECT_GT(front, 100u) << "Pareto-front dots";
  EXPECT_GT(dominated, 30u) << "dominated dots";
  EXPECT_GT(roof, 300u) << "roofline";
  EXPECT_GT(series, 60u) << "utilisation series and roofline layers";

  // (The control page without SVGs is checked in ReportPageShowsRooflineAndStallPlots.)
}

}  // namespace
}  // namespace ember::codesign::test
