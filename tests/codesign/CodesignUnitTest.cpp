// Unit tests of the co-design library: JSON, sweep spec expansion, Pareto
// front, area proxy, report parsing, SVG plots, progress line, process pool.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "HtmlReport.h"
#include "Json.h"
#include "Metrics.h"
#include "Plots.h"
#include "ProcessPool.h"
#include "Progress.h"
#include "SweepSpec.h"

namespace ember::codesign {
namespace {

namespace fs = std::filesystem;

fs::path tempDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ember_codesign_unit_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void writeFile(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CodesignJson, ParsesAndRoundTrips) {
  Expected<Json> json = parseJson(R"({"a": 1.5, "b": [true, null, "x\"y\n"], "c": {"d": -2e3}})", "t");
  ASSERT_TRUE(json) << json.error().message();
  EXPECT_EQ(json->numberAt("a"), 1.5);
  EXPECT_EQ(json->find("b")->items()[2].string(), "x\"y\n");
  EXPECT_EQ(json->find("c")->numberAt("d"), -2000);
  Expected<Json> again = parseJson(json->dump(), "dump");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->dump(), json->dump());
}

TEST(CodesignJson, ErrorsNameOriginAndOffset) {
  Expected<Json> json = parseJson("{\"a\": [1, 2,}", "stats.json");
  ASSERT_FALSE(json);
  EXPECT_NE(json.error().message().find("stats.json: offset 12"), std::string::npos)
      << json.error().message();
  EXPECT_FALSE(parseJson("", "e"));
  EXPECT_FALSE(parseJson("{} x", "e"));
  EXPECT_FALSE(parseJson(std::string(500, '['), "deep"));
}

TEST(CodesignMetrics, ParetoFrontKeepsOnlyNonDominatedPoints) {
  // (latency, energy): (1,9) (2,5) (3,6)x (4,2) (5,2)x (2,5) duplicate stays, missing never.
  std::vector<std::optional<std::pair<double, double>>> points = {
      std::pair(1.0, 9.0), std::pair(2.0, 5.0), std::pair(3.0, 6.0), std::pair(4.0, 2.0),
      std::pair(5.0, 2.0), std::pair(2.0, 5.0), std::nullopt};
  std::vector<bool> front = paretoFront(points);
  EXPECT_EQ(front, (std::vector<bool>{true, true, false, true, false, true, false}));
}

TEST(CodesignMetrics, AreaProxyUsesDocumentedCoefficients) {
  npu::NpuConfig config;  // 16x16, 256 KiB scratchpad, 64 KiB accumulator
  AreaProxy area = areaProxy(config);
  EXPECT_EQ(area.pes, 256);
  EXPECT_EQ(area.sramBytes, 320 * 1024);
  EXPECT_NEAR(area.mm2, 256 * 0.0012 + 327680 * 3.8e-6, 1e-12);
}

TEST(CodesignMetrics, ReadsSimStatsAndRunReports) {
  Expected<Json> sim = parseJson(R"({"config": "npu-16x16", "cycles": 1000, "macs": 128000,
      "mac_utilization": 0.5, "dram_read_bytes": 10, "dram_write_bytes": 20, "energy_pj": 3.5,
      "scratchpad_peak_bytes": 100, "accumulator_peak_bytes": 28, "host_seconds": 0.1,
      "layers": [{"name": "gemm", "op": "gemm", "cycles": 900, "macs": 128000, "mac_utilization": 0.55,
                  "dram_bytes": 30, "stalls": {"token": 5, "dram_bandwidth": 7}}]})",
                                 "sim");
  ASSERT_TRUE(sim);
  Expected<RunStats> s = parseRunStats(*sim, "sim");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->cycles, 1000);
  EXPECT_EQ(s->sramPeakBytes, 128);
  ASSERT_EQ(s->layers.size(), 1u);
  EXPECT_EQ(s->layers[0].stalls.size(), 2u);
  EXPECT_EQ(s->layers[0].stalls[1].second, 7);
  npu::NpuConfig config;
  config.clockGhz = 2.0;
  auto values = metricValues(*s, config);
  EXPECT_EQ(values[1].first, "latency_us");
  EXPECT_EQ(values[1].second, 0.5);  // 1000 cycles at 2 GHz

  Expected<Json> run = parseJson(R"({"backend": "npu", "compile_seconds": 0.2, "cycles": 5,
      "sram_peak_bytes": 64, "layers": [{"name": "c", "op": "Conv", "stall_cycles": {"queue_full": 3}}]})",
                                 "run");
  Expected<RunStats> r = parseRunStats(*run, "run");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->backend, "npu");
  EXPECT_EQ(r->sramPeakBytes, 64);
  EXPECT_EQ(r->layers[0].stalls.at(0).first, "queue_full");
  Expected<Json> reference = parseJson(R"({"backend": "reference", "compile_seconds": 0.2})", "ref");
  EXPECT_FALSE(parseRunStats(*reference, "ref")->hasNpuStats());
}

TEST(CodesignMetrics, CsvFieldsAreQuotedWhenNeeded) {
  EXPECT_EQ(csvField("plain"), "plain");
  EXPECT_EQ(csvField("a,b"), "\"a,b\"");
  EXPECT_EQ(csvField("say \"hi\"\nnow"), "\"say \"\"hi\"\" now\"");
}

class CodesignSpec : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tempDir("spec");
    writeFile(dir_ / "m.onnx", "not read by the spec");
    writeFile(dir_ / "p.s", "");
  }
  Expected<SweepSpec> load(const std::string& text, std::map<std::string, std::string> vars = {}) {
    writeFile(dir_ / "spec.yaml", text);
    return loadSweepSpec((dir_ / "spec.yaml").string(), vars);
  }
  fs::path dir_;
};

TEST_F(CodesignSpec, ExpandsTheCrossProductWithLinkedAxes) {
  Expected<SweepSpec> spec = load(R"(
name: t
variables: {models: .}
models:
  - ${models}/m.onnx
  - {path: p.s, name: prog}
axes:
  array:
    - {label: 16x16, matrix_engine.rows: 16, matrix_engine.cols: 16}
    - {label: 32x32, matrix_engine.rows: 32, matrix_engine.cols: 32}
  dram.bandwidth_bytes_per_cycle: [8, 16, 32]
)");
  ASSERT_TRUE(spec) << spec.error().message();
  EXPECT_EQ(spec->models[0].name, "m");
  EXPECT_EQ(spec->models[0].path, (dir_ / "m.onnx").lexically_normal().string());
  EXPECT_FALSE(spec->models[0].isProgram());
  EXPECT_TRUE(spec->models[1].isProgram());
  Expected<std::vector<SweepPoint>> points = expandSweep(*spec);
  ASSERT_TRUE(points) << points.error().message();
  ASSERT_EQ(points->size(), 2u * 3u * 2u);
  // The first axis varies slowest, models fastest.
  EXPECT_EQ((*points)[0].config.rows, 16);
  EXPECT_EQ((*points)[0].config.dramBytesPerCycle, 8);
  EXPECT_EQ((*points)[1].model, 1u);
  EXPECT_EQ((*points)[2].config.dramBytesPerCycle, 16);
  EXPECT_EQ((*points)[11].config.rows, 32);
  EXPECT_EQ((*points)[11].config.cols, 32);
  EXPECT_EQ((*points)[11].config.dramBytesPerCycle, 32);
  EXPECT_EQ((*points)[11].label, "32x32, dram.bandwidth_bytes_per_cycle=32");
  std::set<std::string> ids;
  for (const SweepPoint& p : *points) ids.insert(p.id);
  EXPECT_EQ(ids.size(), points->size());
  EXPECT_TRUE((*points)[0].id.starts_with("m-"));
  // Deterministic: the same spec gives the same ids.
  Expected<std::vector<SweepPoint>> again = expandSweep(*spec);
  EXPECT_EQ((*again)[7].id, (*points)[7].id);
}

TEST_F(CodesignSpec, BadAxisKeyNamesTheKey) {
  Expected<SweepSpec> spec = load("models: [m.onnx]\naxes:\n  scratchpad.size_kb: [256]\n");
  ASSERT_TRUE(spec);
  Expected<std::vector<SweepPoint>> points = expandSweep(*spec);
  ASSERT_FALSE(points);
  EXPECT_NE(points.error().message().find("scratchpad.size_kb"), std::string::npos)
      << points.error().message();
  Expected<SweepSpec> badValue = load("models: [m.onnx]\naxes:\n  matrix_engine.rows: [0]\n");
  Expected<std::vector<SweepPoint>> bad = expandSweep(*badValue);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("matrix_engine.rows"), std::string::npos) << bad.error().message();
}

TEST_F(CodesignSpec, RepeatedPointIsRefused) {
  // Found by fuzz_sweep_spec: an axis listing one value twice gave two points
  // with one id, which would share points/<id>/ and a results row.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"models: [m.onnx]\naxes:\n  vector.lanes: [16, 32, 16]\n", "axis 'vector.lanes' = vector.lanes=16"},
      {R"(models: [m.onnx]
axes:
  a:
    - {label: x, vector.lanes: 16}
    - {label: y, vector.lanes: 32}
    - {label: x, vector.lanes: 16}
)",
       "axis 'a' = x and axis 'a' = x give the same point of model 'm'"},
  };
  for (const auto& [text, expected] : cases) {
    Expected<SweepSpec> spec = load(text);
    ASSERT_TRUE(spec) << spec.error().message();
    Expected<std::vector<SweepPoint>> points = expandSweep(*spec);
    ASSERT_FALSE(points) << text;
    EXPECT_NE(points.error().message().find(expected), std::string::npos) << points.error().message();
    EXPECT_NE(points.error().message().find("spec.yaml"), std::string::npos) << points.error().message();
  }
  // The same settings under two labels are two distinct points: the label names the config.
  Expected<SweepSpec> relabelled = load(R"(models: [m.onnx]
axes:
  a:
    - {label: x, vector.lanes: 16}
    - {label: y, vector.lanes: 16}
)");
  ASSERT_TRUE(relabelled) << relabelled.error().message();
  Expected<std::vector<SweepPoint>> points = expandSweep(*relabelled);
  ASSERT_TRUE(points) << points.error().message();
  EXPECT_NE((*points)[0].id, (*points)[1].id);
}

TEST_F(CodesignSpec, SpecErrorsAreClear) {
  Expected<SweepSpec> unknown = load("models: [m.onnx]\nmodel_dir: x\n");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("spec.yaml:2: unknown key 'model_dir'"), std::string::npos)
      << unknown.error().message();
  Expected<SweepSpec> variable = load("models:\n  - ${nope}/m.onnx\n");
  ASSERT_FALSE(variable);
  EXPECT_NE(variable.error().message().find("unknown variable 'nope'"), std::string::npos);
  EXPECT_TRUE(load("models:\n  - ${nope}/m.onnx\n", {{"nope", dir_.string()}}));
  EXPECT_FALSE(load("models: []\n"));
  EXPECT_FALSE(load("models: [m.onnx, m.onnx]\n"));
}

TEST_F(CodesignSpec, ObjectiveChoosesTheFrontsLatency) {
  Expected<SweepSpec> plain = load("models: [m.onnx]\n");
  ASSERT_TRUE(plain) << plain.error().message();
  EXPECT_EQ(plain->objective, "latency_us");
  Expected<SweepSpec> endToEnd = load("models: [m.onnx]\nobjective: end_to_end_latency_us\n");
  ASSERT_TRUE(endToEnd) << endToEnd.error().message();
  EXPECT_EQ(endToEnd->objective, "end_to_end_latency_us");
  // A bad value: one line naming the spec, the key and the allowed values.
  Expected<SweepSpec> bad = load("models: [m.onnx]\nobjective: cycles\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message(), (dir_ / "spec.yaml").string() +
                                       ":2: key 'objective': 'cycles' is not one of latency_us, "
                                       "end_to_end_latency_us");
  Expected<SweepSpec> notScalar = load("models: [m.onnx]\nobjective: [latency_us]\n");
  ASSERT_FALSE(notScalar);
  EXPECT_NE(notScalar.error().message().find("key 'objective': expected a scalar"), std::string::npos)
      << notScalar.error().message();
  // A multi-chip sweep has no front; its latency_us is the system's, end to end already.
  EXPECT_TRUE(load("models: [m.onnx]\nsystem: {chips: 2}\nobjective: latency_us\n"));
  Expected<SweepSpec> multichip =
      load("models: [m.onnx]\nsystem: {chips: 2}\nobjective: end_to_end_latency_us\n");
  ASSERT_FALSE(multichip);
  EXPECT_NE(multichip.error().message().find("spec.yaml:3: key 'objective': a multi-chip sweep"),
            std::string::npos)
      << multichip.error().message();
  EXPECT_EQ(multichip.error().message().find('\n'), std::string::npos);
}

TEST_F(CodesignSpec, MultichipAxesSetTheSystemSplitAndBatch) {
  Expected<SweepSpec> spec = load(R"(
models: [m.onnx]
system:
  chips: 2
  interconnect: {topology: ring, bandwidth_gb_per_s: 32, latency_ns: 500}
batch: 3
axes:
  matrix_engine.rows: [16, 32]
  system.chips: [1, 4]
  system.interconnect.bandwidth_gb_per_s: [0.5, 8]
  split: [pipeline, data]
)");
  ASSERT_TRUE(spec) << spec.error().message();
  ASSERT_TRUE(spec->isMultichip());
  Expected<std::vector<SweepPoint>> points = expandSweep(*spec);
  ASSERT_TRUE(points) << points.error().message();
  ASSERT_EQ(points->size(), 16u);
  const SweepPoint& last = points->back();
  ASSERT_TRUE(last.system);
  EXPECT_EQ(last.system->chips, 4);
  EXPECT_EQ(last.system->split, "data");
  EXPECT_EQ(last.system->batch, 3);
  EXPECT_EQ(last.system->linkBandwidthGBps, 8);
  EXPECT_EQ(last.config.rows, 32);
  // Every chip reads the point's config.yaml; the spec's other system keys stay.
  EXPECT_NE(last.system->yaml.find("count: 4"), std::string::npos) << last.system->yaml;
  EXPECT_NE(last.system->yaml.find("config: config.yaml"), std::string::npos) << last.system->yaml;
  EXPECT_NE(last.system->yaml.find("latency_ns: 500"), std::string::npos) << last.system->yaml;
  EXPECT_EQ(last.label,
            "matrix_engine.rows=32, system.chips=4, system.interconnect.bandwidth_gb_per_s=8, split=data");
  // The NPU config is named after the NPU axes only, so that one chip and four share it.
  EXPECT_EQ(last.configYaml, (*points)[8].configYaml);
  EXPECT_EQ((*points)[8].system->chips, 1);
  EXPECT_NE(last.configYaml.find("name: npu-16x16 [matrix_engine.rows=32]"), std::string::npos);
  std::set<std::string> ids;
  for (const SweepPoint& p : *points) ids.insert(p.id);
  EXPECT_EQ(ids.size(), points->size());
  EXPECT_EQ((*points)[0].system->split, "pipeline");
}

TEST_F(CodesignSpec, MultichipErrorsNameTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"models: [m.onnx]\naxes:\n  system.chips: [1, 2]\n",
       "axis 'system.chips': key 'system.chips' needs a"},
      {"models: [m.onnx]\nsplit: data\n", "spec.yaml:2: key 'split' needs a multi-chip system"},
      {"models: [m.onnx]\nsystem: {chips: 2}\naxes:\n  system.link.bandwidth: [1]\n",
       "unknown system key 'system.link.bandwidth'"},
      {"models: [m.onnx]\nsystem: {chips: 2}\nsplit: tensor\n", "'split' is pipeline or data, not 'tensor'"},
      {"models: [m.onnx]\nsystem: {chips: 2}\nbatch: 0\n", "'batch' is an integer from 1"},
      {"models: [m.onnx]\nsystem: {chips: {count: 2, config: x.yaml}}\n",
       "chips: 'config': every chip takes"},
      {"models: [m.onnx]\nbackend: reference\nsystem: {chips: 2}\n", "key 'backend': a multi-chip sweep"},
      {"models: [p.s]\nsystem: {chips: 2}\n", "model 'p': a multi-chip sweep splits ONNX models"},
      {"models: [m.onnx]\nsystem: {chips: 2}\nbase_system: s.yaml\n", "give 'system:' or 'base_system:'"}};
  for (const auto& [text, expected] : cases) {
    Expected<SweepSpec> spec = load(text);
    ASSERT_FALSE(spec) << text;
    EXPECT_NE(spec.error().message().find(expected), std::string::npos) << spec.error().message();
    EXPECT_NE(spec.error().message().find("spec.yaml"), std::string::npos) << spec.error().message();
  }
  // Values are checked when the points are expanded, naming the axis and the key.
  for (const auto& [axis, expected] : std::vector<std::pair<std::string, std::string>>{
           {"system.chips: [0]", "axis 'system.chips' = system.chips=0: 'system.chips' is an integer"},
           {"split: [pipelined]", "axis 'split' = split=pipelined: 'split' is pipeline or data"},
           {"batch: [x]", "axis 'batch' = batch=x: 'batch' is an integer"}}) {
    Expected<SweepSpec> spec = load("models: [m.onnx]\nsystem: {chips: 2}\naxes:\n  " + axis + "\n");
    ASSERT_TRUE(spec) << spec.error().message();
    Expected<std::vector<SweepPoint>> points = expandSweep(*spec);
    ASSERT_FALSE(points) << axis;
    EXPECT_NE(points.error().message().find(expected), std::string::npos) << points.error().message();
  }
  // A base system that lists its chips keeps them (each takes the point's config), but has no chip count.
  writeFile(dir_ / "s.yaml",
            "chips:\n  - {name: a, config: npu.yaml}\n  - {name: b, config: npu.yaml}\n"
            "interconnect: {bandwidth_gb_per_s: 4}\n");
  Expected<SweepSpec> listed = load("models: [m.onnx]\nbase_system: s.yaml\n");
  ASSERT_TRUE(listed) << listed.error().message();
  Expected<std::vector<SweepPoint>> listedPoints = expandSweep(*listed);
  ASSERT_TRUE(listedPoints);
  EXPECT_EQ(listedPoints->front().system->chips, 2);
  EXPECT_EQ(count(listedPoints->front().system->yaml, "config: config.yaml"), 2u);
  Expected<SweepSpec> counted = load("models: [m.onnx]\nbase_system: s.yaml\naxes:\n  system.chips: [4]\n");
  ASSERT_TRUE(counted);
  Expected<std::vector<SweepPoint>> countedPoints = expandSweep(*counted);
  ASSERT_FALSE(countedPoints);
  EXPECT_NE(countedPoints.error().message().find("s.yaml lists its chips"), std::string::npos)
      << countedPoints.error().message();
}

TEST(CodesignMetrics, ReadsMultichipReports) {
  Expected<Json> report = parseJson(R"({"backend": "npu", "num_chips": 2, "latency_us": 12.5,
      "makespan_us": 40, "throughput_images_per_s": 100000, "steady_throughput_images_per_s": 125000,
      "host_seconds": 1.5,
      "chips": [{"name": "npu0", "utilization": 0.8, "mac_utilization": 0.2},
                {"name": "npu1", "utilization": 0.4, "mac_utilization": 0.1}],
      "links": [{"name": "npu0-npu1", "bytes": 4096, "utilization": 0.25}]})",
                                    "mc.json");
  ASSERT_TRUE(report);
  Expected<MultichipStats> stats = parseMultichipStats(*report, "mc.json");
  ASSERT_TRUE(stats) << stats.error().message();
  EXPECT_EQ(stats->chipUtilizationMax, 0.8);
  EXPECT_NEAR(*stats->chipUtilizationMean, 0.6, 1e-12);
  EXPECT_NEAR(*stats->chipMacUtilizationMean, 0.15, 1e-12);
  EXPECT_EQ(stats->linkUtilizationMax, 0.25);
  EXPECT_EQ(stats->linkBytes, 4096);
  npu::NpuConfig config;
  std::map<std::string, std::optional<double>> values;
  for (const auto& [name, value] : multichipMetricValues(*stats, config, 4)) values[name] = value;
  EXPECT_EQ(values["latency_us"], 12.5);
  EXPECT_EQ(values["throughput_images_per_s"], 100000);
  EXPECT_EQ(values["batch"], 4);
  EXPECT_EQ(values["area_mm2"], areaProxy(config).mm2);
  EXPECT_FALSE(values["cycles"]);
  // One chip has no links: their columns are empty, not zero.
  Expected<Json> one =
      parseJson(R"({"latency_us": 1, "throughput_images_per_s": 2, "chips": [], "links": []})", "one.json");
  EXPECT_FALSE(parseMultichipStats(*one, "one.json")->linkUtilizationMax);
  Expected<Json> run = parseJson(R"({"backend": "npu", "cycles": 5})", "run.json");
  Expected<MultichipStats> notMultichip = parseMultichipStats(*run, "run.json");
  ASSERT_FALSE(notMultichip);
  EXPECT_NE(notMultichip.error().message().find("run.json: not an `ember multichip` report"),
            std::string::npos);
}

TEST(CodesignPlots, SeriesJoinEachSeriesInXOrder) {
  std::vector<SeriesDot> dots = {
      {"2 chips", 8, 300, "a"}, {"2 chips", 0.5, 100, "b"}, {"1 chip", 8, 150, "c"}};
  std::string svg = seriesSvg("t", {"link bandwidth (GB/s)", 0, 1, true}, {"images/s", 0, 1}, dots);
  EXPECT_EQ(count(svg, "<polyline"), 1u);     // the one-dot series has no line
  EXPECT_EQ(count(svg, "<circle"), 3u + 2u);  // dots + legend marks
  EXPECT_NE(svg.find("<title>b: link bandwidth (GB/s) 0.5, images/s 100</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">2 chips<"), std::string::npos);
  EXPECT_NE(seriesSvg("e", {"x", 0, 1}, {"y", 0, 1}, {}).find("no point to draw"), std::string::npos);
}

TEST(CodesignPlots, RooflinePlacesEachLayerUnderTheRoofs) {
  std::vector<LayerStats> layers = {{"a", "conv", 100, 12800, 0.5, 1000, {}},
                                    {"b", "gemm", 200, 51200, 1.0, 100, {}},
                                    {"c", "relu", 50, 0, 0, 400, {}}};
  std::string svg = rooflineSvg("r", layers, 512, 16);
  EXPECT_EQ(count(svg, "<circle"), 2u + 1u);  // two placed layers + the legend mark
  EXPECT_NE(svg.find(kRoofColour), std::string::npos);
  EXPECT_NE(svg.find("1 layer(s) without MACs or DRAM bytes"), std::string::npos);
  EXPECT_NE(svg.find("<title>a (conv)"), std::string::npos);
}

TEST(CodesignPlots, ParetoHighlightsTheFront) {
  std::vector<ParetoDot> dots = {{1, 9e6, "fast", true}, {3, 6e6, "bad", false}, {4, 2e6, "frugal", true}};
  std::string svg = paretoSvg("p", dots);
  EXPECT_EQ(count(svg, "fill=\"" + std::string(kFrontColour) + "\""), 2u + 1u);  // + legend
  EXPECT_EQ(count(svg, "fill=\"" + std::string(kDominatedColour) + "\""), 1u + 1u);
  EXPECT_NE(svg.find(">frugal<"), std::string::npos);
  EXPECT_NE(svg.find(">latency (µs)<"), std::string::npos);
  std::string endToEnd = paretoSvg("p", dots, "end-to-end latency (µs)");
  EXPECT_NE(endToEnd.find(">end-to-end latency (µs)<"), std::string::npos);
  EXPECT_EQ(endToEnd.find(">latency (µs)<"), std::string::npos);
}

TEST(CodesignPlots, StallBreakdownStacksReasons) {
  std::vector<LayerStats> layers = {{"l1", "gemm", 100, 1, 1, 1, {{"token", 10}, {"dram_bandwidth", 20}}},
                                    {"l2", "gemm", 50, 1, 1, 1, {{"token", 0}, {"dram_bandwidth", 5}}}};
  std::string svg = stallBreakdownSvg("s", layers);
  EXPECT_NE(svg.find("l1: 20 dram_bandwidth"), std::string::npos);
  EXPECT_NE(svg.find(stallColour("dram_bandwidth", 0)), std::string::npos);
  Page page = statsPage("t", RunStats{}, npu::NpuConfig{}, "x");
  EXPECT_NE(renderPage(page).find("no NPU statistics"), std::string::npos);
}

TEST(CodesignProgress, LineShowsCountsAndEta) {
  std::ostringstream out;
  Progress progress(out, false, 10, 2, 2);
  progress.started();
  progress.started();
  progress.finished(true, 4);
  progress.finished(false, 6);
  std::string line = progress.line();
  EXPECT_NE(line.find("4/10"), std::string::npos) << line;
  EXPECT_NE(line.find("2 resumed"), std::string::npos) << line;
  EXPECT_NE(line.find("1 failed"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 15s"), std::string::npos) << line;  // mean 5 s x 6 left / 2 at once
  EXPECT_EQ(formatDuration(3725), "1h02m");
}

TEST(CodesignProcessPool, ReportsExitSignalTimeoutAndLogs) {
  fs::path dir = tempDir("pool");
  std::vector<ChildJob> jobs = {
      {{"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, (dir / "a.log").string(), 0},
      {{"/bin/sh", "-c", "kill -SEGV $$"}, (dir / "b.log").string(), 0},
      {{"/bin/sh", "-c", "sleep 30"}, (dir / "c.log").string(), 0.3},
      {{"/nonexistent/tool"}, (dir / "d.log").string(), 0},
      {{"/bin/true"}, (dir / "e.log").string(), 0}};
  std::vector<ChildOutcome> outcomes(jobs.size());
  size_t started = 0, maxRunning = 0, running = 0;
  auto begin = std::chrono::steady_clock::now();
  PoolCallbacks callbacks;
  callbacks.started = [&](size_t) { maxRunning = std::max(maxRunning, ++running), ++started; };
  callbacks.finished = [&](size_t j, const ChildOutcome& o) { outcomes[j] = o, --running; };
  Error e = runProcessPool(jobs, 2, callbacks);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  ASSERT_FALSE(e) << e.message();
  EXPECT_EQ(started, jobs.size());
  EXPECT_LE(maxRunning, 2u);
  EXPECT_EQ(outcomes[0].exitCode, 3);
  EXPECT_EQ(outcomes[0].describe(), "exit status 3");
  EXPECT_EQ(*readTextFile((dir / "a.log").string()), "out\nerr\n");
  EXPECT_EQ(outcomes[1].signal, SIGSEGV);
  EXPECT_TRUE(outcomes[2].timedOut);
  EXPECT_LT(seconds, 10);
  EXPECT_FALSE(outcomes[3].ok());
  EXPECT_NE(outcomes[3].describe(), "exit status 0");
  EXPECT_TRUE(outcomes[4].ok());
}

}  // namespace
}  // namespace ember::codesign
