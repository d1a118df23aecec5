// ember sweep: a hardware design-space sweep (docs/codesign.md). Expands the
// spec into points, runs each point as its own `ember run` (or `ember sim`)
// process on a local pool, resumes finished points, and writes results.csv,
// per-point JSON, SVG plots and report.html. --emit-slurm writes a Slurm
// job-array script instead; --point runs one point (what each array task does).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <thread>

#include "Commands.h"
#include "ModelIO.h"
#include "Tool.h"
#include "codesign/HtmlReport.h"
#include "codesign/Json.h"
#include "codesign/Metrics.h"
#include "codesign/Plots.h"
#include "codesign/ProcessPool.h"
#include "codesign/Progress.h"
#include "codesign/Slurm.h"
#include "codesign/Svg.h"
#include "codesign/SweepSpec.h"
#include "ember/FileIO.h"
#include "ember/Npy.h"
#include "ember/multichip/SystemConfig.h"

namespace ember::cli {
namespace {

namespace fs = std::filesystem;
using namespace ember::codesign;

struct SweepArgs {
  std::string spec, outDir, point, backend, objective;
  std::vector<std::string> vars;
  int64_t jobs = 0;
  int64_t timeout = 0;
  bool emitSlurm = false;
  bool reportOnly = false;
  bool resume = false;   ///< submit the points not ok as a Slurm array
  SbatchOptions sbatch;  ///< #SBATCH lines of sweep.slurm
};

/// Paths of one point's files under DIR/points/<id>/.
struct PointFiles {
  std::string dir, config, stats, log, json, report, system;
};

PointFiles pointFiles(const std::string& outDir, const SweepPoint& point) {
  std::string dir = (fs::path(outDir) / "points" / point.id).string();
  return {dir,
          dir + "/config.yaml",
          dir + "/stats.json",
          dir + "/log.txt",
          dir + "/point.json",
          dir + "/report.html",
          dir + "/system.yaml"};
}

std::string profilePath(const std::string& outDir, const SweepModel& model) {
  if (!model.profile.empty()) return model.profile;
  return (fs::path(outDir) / "profiles" / (sanitizeFileName(model.name) + ".yaml")).string();
}

bool needsProfile(const SweepSpec& spec, const SweepModel& model) {
  return spec.quantize && !model.isProgram();
}

/// The last non-empty line of a log: the child's one-line error message.
std::string lastLogLine(const std::string& path) {
  Expected<std::string> text = readTextFile(path);
  if (!text) return "";
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t newline = s.find_last_of("\n\r");
  std::string line = newline == std::string::npos ? s : s.substr(newline + 1);
  return line.size() > 500 ? line.substr(0, 500) + "..." : line;
}

/// Writes random calibration data (a few samples per input, seeded) for a
/// model and returns the --calibrate arguments.
Expected<std::vector<std::string>> writeRandomCalibration(const SweepModel& model, const std::string& dir,
                                                          int64_t seed) {
  PipelineArgs pipeline;
  pipeline.model = model.path;
  OptionParser unused("ember sweep", "", "");
  for (const std::string& d : model.dims) pipeline.dims.push_back(d);
  if (auto status = pipeline.validate(unused)) return makeError(model.path, ": bad 'dims' in the sweep spec");
  EMBER_ASSIGN_OR_RETURN(LoadedModel loaded, importModel(pipeline));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return makeError(dir, ": cannot create: ", ec.message());
  std::vector<std::string> calibrate;
  uint64_t state = uint64_t(seed) * 0x9E3779B97F4A7C15ull + 1;
  constexpr int64_t kSamples = 4;
  for (const Node* input : loaded.function->inputs()) {
    Type type = input->resultType();
    if (type.rank() >= 1) type.dims[0] *= kSamples;  // samples stacked on the batch dimension
    std::string file = (fs::path(dir) / (sanitizeFileName(input->name()) + ".npy")).string();
    EMBER_RETURN_IF_ERROR(writeNpy(file, randomTensor(type, state)));
    calibrate.push_back(input->name() + "=" + file);
  }
  return calibrate;
}

/// Makes DIR/profiles/<model>.yaml with `ember quantize` unless it exists.
Error ensureProfile(const SweepSpec& spec, const SweepModel& model, const std::string& outDir) {
  std::string profile = profilePath(outDir, model);
  std::error_code ec;
  if (fs::exists(profile, ec)) return Error::success();
  if (!model.profile.empty()) return makeError(model.profile, ": no such quantization profile");
  std::string stem = (fs::path(outDir) / "profiles" / sanitizeFileName(model.name)).string();
  fs::create_directories(fs::path(stem).parent_path(), ec);
  std::vector<std::string> calibrate;
  if (!model.calibrate.empty()) {
    calibrate.push_back(model.calibrate);
  } else {
    EMBER_ASSIGN_OR_RETURN(calibrate, writeRandomCalibration(model, stem + ".calibration", spec.seed));
  }
  ChildJob job;
  // A part file of its own: concurrent Slurm tasks may each make the profile.
  const std::string part = uniqueTemporaryPath(profile);
  job.argv = {selfExecutable(), "quantize", model.path, "-o", part};
  for (const std::string& c : calibrate) job.argv.insert(job.argv.end(), {"--calibrate", c});
  for (const std::string& d : model.dims) job.argv.insert(job.argv.end(), {"--dim", d});
  job.logPath = stem + ".log";
  job.timeoutSeconds = spec.timeoutSeconds;
  ChildOutcome result;
  PoolCallbacks callbacks;
  callbacks.finished = [&](size_t, const ChildOutcome& o) { result = o; };
  EMBER_RETURN_IF_ERROR(runProcessPool({job}, 1, callbacks));
  if (!result.ok()) {
    std::string line = lastLogLine(job.logPath);
    return makeError("quantizing ", model.name, " failed (", result.describe(), ")", line.empty() ? "" : ": ",
                     line);
  }
  fs::rename(part, profile, ec);
  if (ec && !fs::exists(profile)) return makeError(profile, ": cannot write: ", ec.message());
  return Error::success();
}

ChildJob pointJob(const SweepSpec& spec, const SweepPoint& point, const PointFiles& files,
                  const std::string& outDir) {
  const SweepModel& model = spec.models[point.model];
  ChildJob job;
  job.logPath = files.log;
  job.timeoutSeconds = spec.timeoutSeconds;
  std::string seed = std::to_string(spec.seed);
  if (model.isProgram()) {
    job.argv = {selfExecutable(), "sim", model.path, "--config",  files.config, "--random-inputs",
                "--seed",         seed,  "--stats",  files.stats, "--quiet"};
    return job;
  }
  if (point.system) {
    // A multi-chip point: its system.yaml's chips each read the point's config.yaml.
    job.argv = {selfExecutable(),    "multichip",  model.path,
                "--system",          files.system, "--split",
                point.system->split, "--batch",    std::to_string(point.system->batch),
                "--random-inputs",   "--seed",     seed,
                "--report-json",     files.stats,  "--quiet"};
  } else {
    job.argv = {selfExecutable(), "run", model.path,      "--backend", spec.backend, "--random-inputs",
                "--seed",         seed,  "--report-json", files.stats, "--quiet"};
    // Only the npu backend takes a hardware config. Its end_to_end_latency_us models the host partitions
    // (--host-model) so that a point's metrics do not depend on how busy the sweep's host was.
    if (spec.backend == "npu") job.argv.insert(job.argv.end(), {"--config", files.config, "--host-model"});
  }
  if (needsProfile(spec, model)) job.argv.insert(job.argv.end(), {"--quantize", profilePath(outDir, model)});
  for (const std::string& d : model.dims) job.argv.insert(job.argv.end(), {"--dim", d});
  return job;
}

Json pointJson(const SweepSpec& spec, const SweepPoint& point) {
  Json json = Json::object();
  json.set("id", point.id);
  json.set("index", int64_t(point.index));
  json.set("model", spec.models[point.model].name);
  json.set("model_path", spec.models[point.model].path);
  json.set("backend", spec.models[point.model].isProgram() ? std::string("npu (ember sim)") : spec.backend);
  json.set("config", point.label);
  Json axes = Json::object();
  for (size_t a = 0; a < spec.axes.size(); ++a)
    axes.set(spec.axes[a].name, spec.axes[a].values[point.axisValues[a]].label);
  json.set("axes", std::move(axes));
  if (point.system) {
    Json system = Json::object();
    system.set("file", "system.yaml");
    system.set("chips", point.system->chips);
    system.set("split", point.system->split);
    system.set("batch", point.system->batch);
    system.set("link_bandwidth_gb_per_s",
               point.system->linkBandwidthGBps ? Json(*point.system->linkBandwidthGBps) : Json());
    json.set("system", std::move(system));
  }
  return json;
}

using MetricValues = std::vector<std::pair<std::string, std::optional<double>>>;

/// The metrics of a point's stats.json (all null but the config's when `error`
/// is set or becomes set); a one-chip run's statistics go to `stats`.
MetricValues readMetrics(const SweepPoint& point, const PointFiles& files, std::string& error,
                         RunStats& stats) {
  MultichipStats multichip;
  if (error.empty()) {
    Expected<Json> report = readJsonFile(files.stats);
    if (!report) {
      error = report.error().message();
    } else if (point.system) {
      Expected<MultichipStats> parsed = parseMultichipStats(*report, files.stats);
      if (parsed)
        multichip = parsed.take();
      else
        error = parsed.error().message();
    } else {
      Expected<RunStats> parsed = parseRunStats(*report, files.stats);
      if (parsed)
        stats = parsed.take();
      else
        error = parsed.error().message();
    }
  }
  if (!error.empty()) {
    stats = RunStats{};
    multichip = MultichipStats{};
  }
  if (point.system) return multichipMetricValues(multichip, point.config, double(point.system->batch));
  return metricValues(stats, point.config);
}

/// Records a finished point: point.json (status ok or failed with the error)
/// and, for NPU statistics, the point's own report.html.
Error finishPoint(const SweepSpec& spec, const SweepPoint& point, const PointFiles& files,
                  const ChildOutcome& outcome, const std::string& setupError = "") {
  Json json = pointJson(spec, point);
  std::string error = setupError;
  RunStats stats;
  if (error.empty() && outcome.timedOut) {
    error = "exceeded the per-point time limit of " + shortNumber(spec.timeoutSeconds) +
            " s (timeout_seconds, --timeout) and was stopped";
  } else if (error.empty() && !outcome.ok()) {
    std::string line = lastLogLine(files.log);
    error = outcome.describe() + (line.empty() ? "" : ": " + line);
  }
  std::error_code ec;
  if (!error.empty()) fs::remove(files.stats, ec);  // a stopped child may have left half a file
  // A failed point keeps its config's area proxy; everything measured is null.
  const MetricValues values = readMetrics(point, files, error, stats);
  json.set("status", error.empty() ? "ok" : "failed");
  json.set("error", error);
  json.set("wall_seconds", outcome.seconds);
  Json metrics = Json::object();
  for (const auto& [name, value] : values) metrics.set(name, value ? Json(*value) : Json());
  json.set("metrics", std::move(metrics));
  json.set("log", "log.txt");
  if (error.empty() && stats.hasNpuStats()) {
    Page page =
        statsPage(spec.models[point.model].name + " on " + point.label, stats, point.config, "stats.json");
    EMBER_RETURN_IF_ERROR(writeTextFileAtomic(files.report, renderPage(page)));
    json.set("report", "report.html");
  }
  return writeTextFileAtomic(files.json, json.dump());
}

bool pointFinishedOk(const PointFiles& files) {
  std::error_code ec;
  if (!fs::exists(files.json, ec)) return false;
  Expected<Json> json = readJsonFile(files.json);
  return json && json->stringAt("status") == "ok";
}

std::string quoteShell(const std::string& word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Writes DIR/sweep.slurm, the job array over every point; returns its path.
Expected<std::string> writeSlurmScript(const SweepArgs& args, const SweepSpec& spec,
                                       const std::vector<SweepPoint>& points) {
  EMBER_RETURN_IF_ERROR(validateSbatchOptions(args.sbatch));
  std::string dir = fs::absolute(args.outDir).lexically_normal().string();
  std::string command = "\"$EMBER\" sweep " +
                        quoteShell(fs::absolute(args.spec).lexically_normal().string()) + " -o " +
                        quoteShell(dir);
  for (const std::string& v : args.vars) command += " --var " + quoteShell(v);
  if (!args.backend.empty()) command += " --backend " + quoteShell(args.backend);
  if (!args.objective.empty()) command += " --objective " + quoteShell(args.objective);
  if (args.timeout) command += " --timeout " + std::to_string(args.timeout);
  SlurmArrayScript script;
  script.sweepName = spec.name;
  script.jobName = sanitizeFileName(spec.name);
  script.outDir = dir;
  script.command = command;
  script.emberPath = selfExecutable();
  script.points = points.size();
  script.timeoutSeconds = spec.timeoutSeconds;
  script.options = args.sbatch;
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "slurm", ec);
  std::string path = dir + "/sweep.slurm";
  EMBER_RETURN_IF_ERROR(writeTextFileAtomic(path, slurmArrayScript(script)));
  fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
  return path;
}

Error emitSlurm(const SweepArgs& args, const SweepSpec& spec, const std::vector<SweepPoint>& points) {
  EMBER_ASSIGN_OR_RETURN(std::string path, writeSlurmScript(args, spec, points));
  std::cout << "wrote " << path << ": " << points.size() << " array tasks (0-" << points.size() - 1
            << ")\nsubmit it with: sbatch " << path << "\nthen collect with: ember sweep " << args.spec
            << " -o " << args.outDir << " --report-only\n";
  return Error::success();
}

/// Per point index, its latest Slurm array task (none when the sweep never
/// ran on Slurm). A scheduler that does not answer leaves the states out.
std::map<size_t, SlurmTaskState> slurmStates(const std::string& outDir) {
  std::string slurmDir = outDir + "/slurm";
  std::vector<int64_t> jobs = recordedArrayJobs(slurmDir);
  if (jobs.empty()) return {};
  Expected<std::vector<SlurmTaskState>> states = querySlurmStates(jobs, slurmDir);
  if (!states) {
    std::cerr << "ember sweep: warning: " << states.error().message() << "\n";
    return {};
  }
  return latestTaskStates(*states);
}

/// --resume: submits every point that is not ok and not still queued or
/// running on Slurm as one array job (task id = point index).
int resubmitOnSlurm(const SweepArgs& args, const SweepSpec& spec, const std::vector<SweepPoint>& points) {
  Expected<std::string> script = writeSlurmScript(args, spec, points);
  if (!script) return fail(script.error());
  std::map<size_t, SlurmTaskState> states = slurmStates(args.outDir);
  std::vector<size_t> submit;
  size_t active = 0;
  for (const SweepPoint& p : points) {
    if (pointFinishedOk(pointFiles(args.outDir, p))) continue;
    auto it = states.find(p.index);
    if (it != states.end() && it->second.active()) {
      ++active;
      continue;
    }
    submit.push_back(p.index);
  }
  std::string summary = "ember sweep: " + std::to_string(points.size()) + " points, " +
                        std::to_string(points.size() - submit.size() - active) + " ok, " +
                        std::to_string(active) + " still queued or running on Slurm";
  if (submit.empty()) {
    std::cout << summary << ", nothing to submit\n";
    return kExitSuccess;
  }
  std::string slurmDir = fs::absolute(args.outDir).lexically_normal().string() + "/slurm";
  Expected<int64_t> job = submitSlurmArray(*script, submit, slurmDir);
  if (!job) return fail(job.error());
  if (Error e = recordArrayJob(slurmDir, *job)) return fail(e);
  std::cout << summary << ", submitted " << submit.size() << " as array job " << *job
            << " (--array=" << arrayIndexList(submit) << ")\nthen collect with: ember sweep " << args.spec
            << " -o " << args.outDir << " --report-only\n";
  return kExitSuccess;
}

struct Row {
  const SweepPoint* point = nullptr;
  Json json;  ///< point.json (null when the point has not run)
  bool ok = false;
  std::string status, error;              ///< point.json's, or the Slurm task's when it ended badly
  const SlurmTaskState* slurm = nullptr;  ///< the point's latest Slurm array task
  std::optional<double> speedup;          ///< multi-chip: throughput over the same point's on one chip
  std::optional<double> metric(const std::string& name) const {
    if (name == kSpeedupColumn) return speedup;
    const Json* m = json.find("metrics");
    return m ? m->numberAt(name) : std::nullopt;
  }
};

/// A point whose Slurm task ended without COMPLETED (cancelled, timed out,
/// failed, out of memory) is failed with that state, even when the task never
/// got to write point.json.
void applySlurmState(Row& row) {
  const SlurmTaskState& task = *row.slurm;
  if (row.ok || task.active() || task.state == "COMPLETED") return;
  row.status = "failed";
  row.error =
      "Slurm " + task.state + " (job " + task.job() + ")" + (row.error.empty() ? "" : ": " + row.error);
}

std::string cell(std::optional<double> v) { return v ? shortNumber(*v) : ""; }

std::optional<double> scaled(std::optional<double> v, double factor) {
  return v ? std::optional<double>(*v * factor) : std::nullopt;
}

std::string csvNumber(std::optional<double> v) {
  if (!v) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", *v);
  return buf;
}

/// Each multi-chip row's throughput over that of the sweep's one-chip point of
/// the same model, NPU config and batch, when that point ran ok.
void addSpeedups(std::vector<Row>& rows) {
  for (Row& row : rows) {
    const PointSystem* system = row.point->system ? &*row.point->system : nullptr;
    const std::optional<double> throughput = row.metric("throughput_images_per_s");
    if (!system || !row.ok || !throughput) continue;
    for (const Row& one : rows) {
      const PointSystem* oneSystem = one.point->system ? &*one.point->system : nullptr;
      const std::optional<double> oneThroughput = one.metric("throughput_images_per_s");
      if (one.ok && oneSystem && oneSystem->chips == 1 && oneSystem->batch == system->batch &&
          one.point->model == row.point->model && one.point->configYaml == row.point->configYaml &&
          oneThroughput && *oneThroughput > 0) {
        row.speedup = *throughput / *oneThroughput;
        break;
      }
    }
  }
}

/// Every point's row: its point.json (when there is one) and its Slurm state.
std::vector<Row> loadRows(const std::vector<SweepPoint>& points, const std::string& outDir,
                          const std::map<size_t, SlurmTaskState>& slurm) {
  std::vector<Row> rows;
  for (const SweepPoint& p : points) {
    Row row;
    row.point = &p;
    PointFiles files = pointFiles(outDir, p);
    if (fs::exists(files.json)) {
      Expected<Json> json = readJsonFile(files.json);
      if (json) row.json = json.take();
    }
    row.ok = row.json.stringAt("status") == "ok";
    row.status = row.json.isNull() ? "not run" : row.json.stringAt("status", "?");
    row.error = row.json.stringAt("error");
    if (auto it = slurm.find(p.index); it != slurm.end()) {
      row.slurm = &it->second;
      applySlurmState(row);
    }
    rows.push_back(std::move(row));
  }
  addSpeedups(rows);
  return rows;
}

/// The page's opening paragraphs: the counts and the area proxy.
void addOverview(Page& page, const SweepSpec& spec, const std::vector<SweepPoint>& points,
                 const std::vector<Row>& rows) {
  size_t ok = 0, failed = 0, pending = 0;
  for (const Row& r : rows) (r.ok ? ok : r.status == "not run" ? pending : failed)++;
  page.paragraphs.push_back(
      std::to_string(points.size()) + " points (" + std::to_string(spec.models.size()) + " model(s) × " +
      std::to_string(points.size() / std::max<size_t>(1, spec.models.size())) + " config(s)), backend " +
      spec.backend + ": " + std::to_string(ok) + " ok, " + std::to_string(failed) + " failed" +
      (pending ? ", " + std::to_string(pending) + " not run" : "") + ". Spec: " + spec.path +
      ". Data: results.csv, points/<id>/point.json.");
  page.paragraphs.push_back("Area proxy: PEs × " + shortNumber(kAreaPerPeMm2) + " mm² + SRAM bytes × " +
                            shortNumber(kAreaPerSramByteMm2) +
                            " mm² (scratchpad + accumulator; 28 nm-class estimates, docs/codesign.md).");
}

/// The Pareto fronts (the objective's latency vs energy) of every model.
struct Fronts {
  std::vector<bool> onFront;  ///< per row
  Table table;
  std::vector<std::string> summary;  ///< one line per model
  std::vector<UtilizationDot> utilization;
};

/// The latency a row's point is ranked by: the spec's objective column. An NPU
/// program (`ember sim`) has no host part, so its end-to-end latency is its latency_us.
std::optional<double> objectiveLatency(const SweepSpec& spec, const Row& row) {
  std::optional<double> latency = row.metric(spec.objective);
  if (!latency && spec.models[row.point->model].isProgram()) latency = row.metric("latency_us");
  return latency;
}

/// "latency" or "end-to-end latency": how the report names the objective.
std::string objectiveName(const SweepSpec& spec) {
  return spec.objective == "end_to_end_latency_us" ? "end-to-end latency" : "latency";
}

/// One model's front: marks its rows, adds them to the table and the summary,
/// and draws its latency-vs-energy plot.
Error addModelFront(const SweepSpec& spec, size_t m, const std::vector<Row>& rows, const std::string& outDir,
                    Page& page, Fronts& fronts) {
  std::vector<size_t> members;
  std::vector<std::optional<std::pair<double, double>>> values;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].point->model != m) continue;
    members.push_back(i);
    auto latency = objectiveLatency(spec, rows[i]), energy = rows[i].metric("energy_pj");
    values.push_back(rows[i].ok && latency && energy ? std::optional(std::pair(*latency, *energy))
                                                     : std::nullopt);
    if (auto u = rows[i].metric("mac_utilization"); rows[i].ok && u)
      fronts.utilization.push_back({spec.models[m].name,
                                    double(rows[i].point->config.rows * rows[i].point->config.cols), *u,
                                    rows[i].point->label});
  }
  std::vector<bool> onFront = paretoFront(values);
  std::vector<ParetoDot> dots;
  std::vector<std::pair<double, size_t>> order;  // the front's rows by latency
  for (size_t k = 0; k < members.size(); ++k) {
    fronts.onFront[members[k]] = onFront[k];
    if (!values[k]) continue;
    dots.push_back({values[k]->first, values[k]->second, rows[members[k]].point->label, onFront[k]});
    if (onFront[k]) order.emplace_back(values[k]->first, members[k]);
  }
  std::stable_sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.first < b.first; });
  const bool endToEnd = spec.objective == "end_to_end_latency_us";
  std::string listed;
  for (const auto& [latency, i] : order) {
    const Row& r = rows[i];
    fronts.table.rows.push_back(
        {spec.models[m].name, r.point->label, cell(latency), cell(scaled(r.metric("energy_pj"), 1e-6)),
         cell(scaled(r.metric("mac_utilization"), 100)) + "%", cell(r.metric("area_mm2"))});
    fronts.table.links.push_back("points/" + r.point->id + "/report.html");
    listed += (listed.empty() ? "" : "; ") + r.point->label + " (" + cell(latency) +
              (endToEnd ? " µs end to end, " : " µs, ") + cell(scaled(r.metric("energy_pj"), 1e-6)) + " µJ)";
  }
  fronts.summary.push_back(
      spec.models[m].name + ": " +
      (listed.empty() ? "no point with " + objectiveName(spec) + " and energy" : listed));
  if (dots.empty()) return Error::success();
  std::string title = objectiveName(spec);
  title[0] = char(std::toupper(static_cast<unsigned char>(title[0])));
  std::string svg =
      paretoSvg(title + " vs energy: " + spec.models[m].name, dots, objectiveName(spec) + " (µs)");
  EMBER_RETURN_IF_ERROR(
      writeTextFileAtomic(outDir + "/plots/pareto_" + sanitizeFileName(spec.models[m].name) + ".svg", svg));
  page.figures.push_back({svg, "Every config of " + spec.models[m].name +
                                   "; orange: the Pareto front (no other config is both faster and more "
                                   "frugal)."});
  return Error::success();
}

/// Every model's front, then the utilisation plot of all configs.
Expected<Fronts> addFronts(const SweepSpec& spec, const std::vector<Row>& rows, const std::string& outDir,
                           Page& page) {
  Fronts fronts;
  fronts.onFront.assign(rows.size(), false);
  fronts.table.heading = "Pareto front (" + objectiveName(spec) + " vs energy, per model)";
  fronts.table.header = {"model",     "config",          objectiveName(spec) + " µs",
                         "energy µJ", "MAC utilisation", "area mm²"};
  for (size_t m = 0; m < spec.models.size(); ++m)
    EMBER_RETURN_IF_ERROR(addModelFront(spec, m, rows, outDir, page, fronts));
  if (!fronts.utilization.empty()) {
    std::string svg = utilizationSvg("MAC utilisation vs array size", fronts.utilization);
    EMBER_RETURN_IF_ERROR(writeTextFileAtomic(outDir + "/plots/utilization.svg", svg));
    page.figures.push_back(
        {svg, "Each point is one config; the line joins each model's best config per array size."});
  }
  return fronts;
}

/// Roofline and stall breakdown of each model's fastest config.
Error addFastestConfigPlots(const SweepSpec& spec, const std::vector<Row>& rows, const std::string& outDir,
                            Page& page) {
  for (size_t m = 0; m < spec.models.size(); ++m) {
    const Row* best = nullptr;
    for (const Row& r : rows)
      if (r.point->model == m && r.ok && r.metric("latency_us") &&
          (!best || *r.metric("latency_us") < *best->metric("latency_us")))
        best = &r;
    if (!best) continue;
    Expected<Json> report = readJsonFile(pointFiles(outDir, *best->point).stats);
    if (!report) continue;
    Expected<RunStats> stats = parseRunStats(*report, "stats.json");
    if (!stats) continue;
    const npu::NpuConfig& c = best->point->config;
    std::string name = sanitizeFileName(spec.models[m].name);
    std::string roof = rooflineSvg("Roofline: " + spec.models[m].name + " on " + best->point->label,
                                   stats->layers, 2.0 * double(c.rows * c.cols), double(c.dramBytesPerCycle));
    std::string stalls =
        stallBreakdownSvg("Stalls: " + spec.models[m].name + " on " + best->point->label, stats->layers);
    auto plotPath = [&](const char* kind) {
      std::string path = outDir;
      path += "/plots/";
      path += kind;
      path += name;
      path += ".svg";
      return path;
    };
    EMBER_RETURN_IF_ERROR(writeTextFileAtomic(plotPath("roofline_"), roof));
    EMBER_RETURN_IF_ERROR(writeTextFileAtomic(plotPath("stalls_"), stalls));
    page.figures.push_back({roof, "Layers of " + spec.models[m].name +
                                      " on its fastest config, under that "
                                      "config's compute and bandwidth roofs."});
    page.figures.push_back({stalls, "Per-layer cycles and stall cycles by reason, same config."});
  }
  return Error::success();
}

/// "max / mean" of two percentages.
std::string maxMeanPercent(const Row& r, const std::string& max, const std::string& mean) {
  if (!r.metric(max)) return "";
  return cell(scaled(r.metric(max), 100)) + "% / " + cell(scaled(r.metric(mean), 100)) + "%";
}

/// A multi-chip row of the page's table of all points.
std::vector<std::string> multichipTableRow(const SweepSpec& spec, const Row& r) {
  const SweepPoint& p = *r.point;
  return {p.id,
          spec.models[p.model].name,
          p.label,
          r.status,
          std::to_string(p.system->chips),
          p.system->split,
          std::to_string(p.system->batch),
          cell(r.metric("latency_us")),
          cell(r.metric("throughput_images_per_s")),
          cell(r.metric("steady_throughput_images_per_s")),
          r.speedup ? cell(*r.speedup) + "×" : "",
          maxMeanPercent(r, "chip_utilization_max", "chip_utilization_mean"),
          maxMeanPercent(r, "link_utilization_max", "link_utilization_mean"),
          cell(r.metric("area_mm2")),
          r.error};
}

/// results.csv and the page's table of all points.
Error writeAllPoints(const SweepSpec& spec, const std::vector<Row>& rows, const std::vector<bool>& onFront,
                     const std::string& outDir, Page& page) {
  Table all;
  all.heading = "All points";
  all.header = {"point",       "model",     "config",      "status",       "cycles",
                "latency µs",  "MAC util.", "DRAM read B", "DRAM write B", "energy µJ",
                "SRAM peak B", "area mm²",  "Pareto",      "error"};
  if (spec.isMultichip())
    all.header = {"point",
                  "model",
                  "config",
                  "status",
                  "chips",
                  "split",
                  "batch",
                  "latency µs",
                  "images/s",
                  "steady images/s",
                  "speed-up",
                  "chip busy max / mean",
                  "link util. max / mean",
                  "area mm² per chip",
                  "error"};
  std::string csv = "index,id,model,config";
  for (const Axis& a : spec.axes) csv += "," + csvField(a.name);
  csv += ",status,error";
  for (const std::string& c : metricColumns()) csv += "," + c;
  if (spec.isMultichip()) csv += ",split";
  for (const std::string& c : spec.isMultichip() ? multichipMetricColumns() : std::vector<std::string>{})
    csv += "," + c;
  csv += ",wall_seconds,pareto,slurm_job,slurm_state\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const SweepPoint& p = *r.point;
    const std::string& status = r.status;
    const std::string& error = r.error;
    csv += std::to_string(p.index) + "," + p.id + "," + csvField(spec.models[p.model].name) + "," +
           csvField(p.label);
    for (size_t a = 0; a < spec.axes.size(); ++a)
      csv += "," + csvField(spec.axes[a].values[p.axisValues[a]].label);
    csv += "," + status + "," + csvField(error);
    for (const std::string& c : metricColumns()) csv += "," + csvNumber(r.metric(c));
    if (p.system) csv += "," + p.system->split;
    for (const std::string& c : p.system ? multichipMetricColumns() : std::vector<std::string>{})
      csv += "," + csvNumber(r.metric(c));
    csv += "," + csvNumber(r.json.numberAt("wall_seconds")) + "," + (onFront[i] ? "1" : "0") + "," +
           (r.slurm ? r.slurm->job() + "," + r.slurm->state : ",") + "\n";
    if (p.system) {
      all.rows.push_back(multichipTableRow(spec, r));
    } else {
      all.rows.push_back({p.id, spec.models[p.model].name, p.label, status, cell(r.metric("cycles")),
                          cell(r.metric("latency_us")),
                          r.metric("mac_utilization") ? cell(*r.metric("mac_utilization") * 100) + "%" : "",
                          cell(r.metric("dram_read_bytes")), cell(r.metric("dram_write_bytes")),
                          cell(scaled(r.metric("energy_pj"), 1e-6)), cell(r.metric("sram_peak_bytes")),
                          cell(r.metric("area_mm2")), onFront[i] ? "yes" : "", error});
    }
    all.highlight.push_back(onFront[i]);
    all.links.push_back(r.json.find("report") ? "points/" + p.id + "/report.html"
                                              : "points/" + p.id + "/log.txt");
  }
  page.tables.push_back(std::move(all));
  return writeTextFileAtomic(outDir + "/results.csv", csv);
}

/// Whether a value of `axis` sets `key`.
bool axisSets(const Axis& axis, const std::string& key) {
  return std::any_of(axis.values.begin(), axis.values.end(), [&](const AxisValue& v) {
    return std::any_of(v.settings.begin(), v.settings.end(), [&](const auto& s) { return s.first == key; });
  });
}

/// "system.interconnect.latency_ns=500" -> "latency_ns=500", for a plot's legend.
std::string shortLabel(const std::string& label) {
  const size_t equals = label.find('=');
  if (equals == std::string::npos || label.find(", ") != std::string::npos) return label;
  const size_t dot = label.rfind('.', equals);
  return dot == std::string::npos ? label : label.substr(dot + 1);
}

/// One model's ok multi-chip points as dots of throughput against `x`, one
/// series per combination of the axes that do not set `xKey`.
std::vector<SeriesDot> throughputDots(const SweepSpec& spec, const std::vector<Row>& rows, size_t model,
                                      const std::string& xKey,
                                      const std::function<std::optional<double>(const PointSystem&)>& xOf) {
  std::vector<SeriesDot> dots;
  for (const Row& r : rows) {
    const std::optional<double> throughput = r.metric("throughput_images_per_s");
    const std::optional<double> x = r.point->system ? xOf(*r.point->system) : std::nullopt;
    if (r.point->model != model || !r.ok || !throughput || !x) continue;
    std::string series;
    for (size_t a = 0; a < spec.axes.size(); ++a)
      if (!axisSets(spec.axes[a], xKey))
        series +=
            (series.empty() ? "" : ", ") + shortLabel(spec.axes[a].values[r.point->axisValues[a]].label);
    dots.push_back({series.empty() ? "throughput" : series, *x, *throughput, r.point->label});
  }
  return dots;
}

/// Per model, throughput against link bandwidth and against the chip count,
/// each when an axis varies it.
Error addMultichipPlots(const SweepSpec& spec, const std::vector<Row>& rows, const std::string& outDir,
                        Page& page) {
  const bool variesBandwidth = std::any_of(spec.axes.begin(), spec.axes.end(), [](const Axis& a) {
    return axisSets(a, "system.interconnect.bandwidth_gb_per_s");
  });
  const bool variesChips = std::any_of(spec.axes.begin(), spec.axes.end(),
                                       [](const Axis& a) { return axisSets(a, "system.chips"); });
  const AxisSpec throughputAxis{"images/s", 0, 1};
  for (size_t m = 0; m < spec.models.size(); ++m) {
    const std::string& model = spec.models[m].name;
    if (variesBandwidth) {
      std::vector<SeriesDot> dots = throughputDots(spec, rows, m, "system.interconnect.bandwidth_gb_per_s",
                                                   [](const PointSystem& s) { return s.linkBandwidthGBps; });
      std::string svg = seriesSvg("Throughput vs link bandwidth: " + model,
                                  {"link bandwidth (GB/s per direction)", 0, 1, true}, throughputAxis, dots);
      EMBER_RETURN_IF_ERROR(writeTextFileAtomic(
          outDir + "/plots/throughput_vs_link_bandwidth_" + sanitizeFileName(model) + ".svg", svg));
      page.figures.push_back({svg, "Throughput of " + model +
                                       " over the batch against every link's bandwidth, one line per value "
                                       "of the other axes: where a line flattens, the chips bound the run; "
                                       "where it climbs, a link does."});
    }
    if (variesChips) {
      std::vector<SeriesDot> dots = throughputDots(spec, rows, m, "system.chips", [](const PointSystem& s) {
        return std::optional<double>(double(s.chips));
      });
      std::string svg =
          seriesSvg("Throughput vs chips: " + model, {"chips", 0, 1, false, true}, throughputAxis, dots);
      EMBER_RETURN_IF_ERROR(writeTextFileAtomic(
          outDir + "/plots/throughput_vs_chips_" + sanitizeFileName(model) + ".svg", svg));
      page.figures.push_back({svg, "Throughput of " + model +
                                       " over the batch against the number of chips, one line per value of "
                                       "the other axes."});
    }
  }
  return Error::success();
}

/// A multi-chip sweep's plots, and each model's highest-throughput point (the
/// table and the summary lines).
Expected<std::vector<std::string>> addMultichipResults(const SweepSpec& spec, const std::vector<Row>& rows,
                                                       const std::string& outDir, Page& page) {
  page.paragraphs.push_back(
      "Multi-chip: each point runs `ember multichip` on its points/<id>/system.yaml, every chip the point's "
      "NPU config (docs/multichip.md). Latency is the first micro-batch's, end to end; throughput is over "
      "the "
      "batch; speed-up is over the sweep's 1-chip point of the same model, NPU config and batch; the area "
      "proxy is per chip.");
  EMBER_RETURN_IF_ERROR(addMultichipPlots(spec, rows, outDir, page));
  Table best;
  best.heading = "Highest throughput (per model)";
  best.header = {"model", "config", "images/s", "speed-up", "latency µs", "link util. max"};
  std::vector<std::string> summary;
  for (size_t m = 0; m < spec.models.size(); ++m) {
    const Row* top = nullptr;
    for (const Row& r : rows)
      if (r.point->model == m && r.ok && r.metric("throughput_images_per_s") &&
          (!top || *r.metric("throughput_images_per_s") > *top->metric("throughput_images_per_s")))
        top = &r;
    if (!top) {
      summary.push_back("highest throughput " + spec.models[m].name + ": no point ran");
      continue;
    }
    best.rows.push_back({spec.models[m].name, top->point->label, cell(top->metric("throughput_images_per_s")),
                         top->speedup ? cell(*top->speedup) + "×" : "", cell(top->metric("latency_us")),
                         cell(scaled(top->metric("link_utilization_max"), 100))});
    best.links.push_back("points/" + top->point->id + "/log.txt");
    summary.push_back("highest throughput " + spec.models[m].name + ": " + top->point->label + " (" +
                      cell(top->metric("throughput_images_per_s")) + " images/s, " +
                      cell(top->metric("latency_us")) + " µs)");
  }
  page.tables.push_back(std::move(best));
  return summary;
}

/// results.csv, the plots and report.html from every point's JSON. Returns
/// the summary lines: each model's Pareto front (highest throughput in a
/// multi-chip sweep).
Expected<std::vector<std::string>> writeReport(const SweepSpec& spec, const std::vector<SweepPoint>& points,
                                               const std::string& outDir,
                                               const std::map<size_t, SlurmTaskState>& slurm) {
  const std::vector<Row> rows = loadRows(points, outDir, slurm);
  Page page;
  page.title = "Ember co-design sweep: " + spec.name;
  addOverview(page, spec, points, rows);
  std::vector<std::string> summary;
  if (spec.isMultichip()) {
    EMBER_ASSIGN_OR_RETURN(summary, addMultichipResults(spec, rows, outDir, page));
    EMBER_RETURN_IF_ERROR(writeAllPoints(spec, rows, std::vector<bool>(rows.size(), false), outDir, page));
  } else {
    EMBER_ASSIGN_OR_RETURN(Fronts fronts, addFronts(spec, rows, outDir, page));
    EMBER_RETURN_IF_ERROR(addFastestConfigPlots(spec, rows, outDir, page));
    page.tables.push_back(std::move(fronts.table));
    EMBER_RETURN_IF_ERROR(writeAllPoints(spec, rows, fronts.onFront, outDir, page));
    for (const std::string& line : fronts.summary) summary.push_back("pareto front " + line);
  }
  EMBER_RETURN_IF_ERROR(writeTextFileAtomic(outDir + "/report.html", renderPage(page)));
  return summary;
}

void addSlurmOptions(OptionParser& parser, SweepArgs& args) {
  parser.addFlag("--resume", &args.resume,
                 "submit the points not ok (failed, cancelled, never run) as a Slurm array with sbatch");
  parser.addString("--partition", "NAME", &args.sbatch.partition, "Slurm partition (#SBATCH --partition)");
  parser.addString(
      "--time", "LIMIT", &args.sbatch.time,
      "Slurm time limit per array task, e.g. 30 or 1:00:00 (default: the point timeout + 5 min)");
  parser.addString("--mem", "SIZE", &args.sbatch.mem, "Slurm memory per array task, e.g. 4G (#SBATCH --mem)");
  parser.addString("--account", "NAME", &args.sbatch.account, "Slurm account (#SBATCH --account)");
}

}  // namespace

namespace {

void addSweepOptions(OptionParser& parser, SweepArgs& args) {
  parser.addPositional("SPEC.yaml", &args.spec, "the sweep spec");
  parser.addString("--output", "DIR", &args.outDir, "output directory (required)");
  parser.addAlias("-o", "--output");
  parser.addInt("--jobs", "N", &args.jobs, "points run at once (default: the number of CPUs)", 1, 1024);
  parser.addAlias("-j", "--jobs");
  parser.addList("--var", "NAME=VALUE", &args.vars, "set a spec variable used as ${NAME} in paths");
  parser.addInt("--timeout", "SECONDS", &args.timeout,
                "per-point time limit (default: the spec's, else 1800)", 1, 1000000);
  parser.addString("--backend", "NAME", &args.backend, "override the spec's backend (e.g. reference)");
  parser.addString("--objective", "COLUMN", &args.objective,
                   "override the spec's objective, the latency of the Pareto front (latency_us, "
                   "end_to_end_latency_us)");
  parser.addFlag("--emit-slurm", &args.emitSlurm,
                 "write DIR/sweep.slurm (a Slurm job array) instead of running");
  parser.addString("--point", "INDEX|ID", &args.point, "run only this point (one Slurm array task)");
  parser.addFlag("--report-only", &args.reportOnly, "run nothing; rebuild results.csv and report.html");
  addSlurmOptions(parser, args);
}

/// The spec with the command line's overrides, its models checked to exist.
Expected<SweepSpec> loadSpec(const SweepArgs& args, const std::map<std::string, std::string>& vars) {
  EMBER_ASSIGN_OR_RETURN(SweepSpec spec, loadSweepSpec(args.spec, vars));
  if (args.timeout) spec.timeoutSeconds = double(args.timeout);
  if (!args.backend.empty()) {
    spec.backend = args.backend;
    if (!spec.quantizeGiven) spec.quantize = spec.backend == "npu";
  }
  if (!args.objective.empty()) {
    EMBER_RETURN_IF_ERROR(checkObjective(args.objective, args.spec + ": --objective", spec.isMultichip()));
    spec.objective = args.objective;
  }
  if (spec.isMultichip() && spec.backend != "npu")
    return makeError(args.spec, ": --backend ", spec.backend,
                     ": a multi-chip sweep runs `ember multichip` on NPUs (backend npu)");
  for (const SweepModel& m : spec.models)
    if (!fs::exists(m.path))
      return makeError(args.spec, ": model '", m.name, "': ", m.path, ": no such file");
  return spec;
}

/// A multi-chip point's system.yaml beside its config.yaml, checked by the
/// multichip reader before anything runs.
Error writeSystem(const SweepSpec& spec, const SweepPoint& point, const PointFiles& files) {
  EMBER_RETURN_IF_ERROR(writeTextFileAtomic(files.system, point.system->yaml));
  Expected<multichip::SystemConfig> system = multichip::loadSystemConfig(files.system);
  if (!system)
    return makeError(spec.path, ": ", spec.system->origin == spec.path ? "system" : spec.system->origin,
                     " with ", point.label, ": ", system.error().message());
  return Error::success();
}

/// DIR/plots, each point's folder with its config.yaml, and DIR/points.tsv.
Error writePointFolders(const SweepArgs& args, const SweepSpec& spec, const std::vector<SweepPoint>& points) {
  std::error_code ec;
  fs::create_directories(fs::path(args.outDir) / "plots", ec);
  if (ec) return makeError(args.outDir, ": cannot create the output directory: ", ec.message());
  std::string index = "index\tid\tmodel\tconfig\n";
  for (const SweepPoint& p : points) {
    PointFiles files = pointFiles(args.outDir, p);
    fs::create_directories(files.dir, ec);
    if (ec) return makeError(files.dir, ": cannot create: ", ec.message());
    EMBER_RETURN_IF_ERROR(writeTextFileAtomic(files.config, p.configYaml));
    if (p.system) EMBER_RETURN_IF_ERROR(writeSystem(spec, p, files));
    index += std::to_string(p.index) + "\t" + p.id + "\t" + spec.models[p.model].name + "\t" + p.label + "\n";
  }
  return writeTextFileAtomic(args.outDir + "/points.tsv", index);
}

/// The points to run: the one of --point, none for --report-only, else those not finished ok.
Expected<std::vector<size_t>> pendingPoints(const SweepArgs& args, const std::vector<SweepPoint>& points) {
  std::vector<size_t> pending;
  if (!args.point.empty()) {
    auto it = std::find_if(points.begin(), points.end(), [&](const SweepPoint& p) {
      return p.id == args.point || std::to_string(p.index) == args.point;
    });
    if (it == points.end())
      return makeError(args.spec, ": no point '", args.point, "' (indices 0-", points.size() - 1, ", ids in ",
                       args.outDir, "/points.tsv)");
    pending.push_back(size_t(it - points.begin()));
  } else if (!args.reportOnly) {
    for (const SweepPoint& p : points)
      if (!pointFinishedOk(pointFiles(args.outDir, p))) pending.push_back(p.index);
  }
  return pending;
}

/// Quantization profiles, once per model that a pending point needs; the
/// error of each model whose profile could not be made.
std::map<size_t, std::string> makeProfiles(const SweepArgs& args, const SweepSpec& spec,
                                           const std::vector<SweepPoint>& points,
                                           const std::vector<size_t>& pending) {
  std::map<size_t, std::string> profileErrors;
  for (size_t m = 0; m < spec.models.size(); ++m) {
    if (!needsProfile(spec, spec.models[m])) continue;
    bool used = std::any_of(pending.begin(), pending.end(), [&](size_t i) { return points[i].model == m; });
    if (!used) continue;
    if (args.point.empty() && !fs::exists(profilePath(args.outDir, spec.models[m])))
      std::cerr << "ember sweep: calibrating " << spec.models[m].name << " ("
                << (spec.models[m].calibrate.empty() ? "random data" : spec.models[m].calibrate) << ")\n";
    if (Error e = ensureProfile(spec, spec.models[m], args.outDir)) profileErrors[m] = e.message();
  }
  return profileErrors;
}

/// Runs the pending points in child processes, with progress on stderr.
/// Returns how many failed.
Expected<size_t> runPoints(const SweepArgs& args, const SweepSpec& spec,
                           const std::vector<SweepPoint>& points, const std::vector<size_t>& pending,
                           const std::map<size_t, std::string>& profileErrors) {
  std::vector<ChildJob> jobs;
  std::vector<size_t> jobPoints;
  size_t failedPoints = 0;
  std::error_code ec;
  for (size_t i : pending) {
    PointFiles files = pointFiles(args.outDir, points[i]);
    fs::remove(files.stats, ec);  // never read a previous run's statistics
    if (auto it = profileErrors.find(points[i].model); it != profileErrors.end()) {
      EMBER_RETURN_IF_ERROR(finishPoint(spec, points[i], files, ChildOutcome{}, it->second));
      ++failedPoints;
      continue;
    }
    jobs.push_back(pointJob(spec, points[i], files, args.outDir));
    jobPoints.push_back(i);
  }
  size_t concurrency = args.jobs ? size_t(args.jobs) : std::max(1u, std::thread::hardware_concurrency());
  bool single = !args.point.empty();
  Progress progress(std::cerr, isatty(2) != 0, single ? 1 : points.size(),
                    single ? 0 : points.size() - pending.size(), concurrency);
  if (!single && !args.reportOnly)
    std::cerr << "ember sweep: " << points.size() << " points, " << points.size() - pending.size()
              << " already done, running " << jobs.size() << " with -j " << concurrency << "\n";
  for (size_t k = 0; k < failedPoints; ++k) progress.finished(false, 0);
  Error writeError;
  PoolCallbacks callbacks;
  callbacks.started = [&](size_t) { progress.started(); };
  callbacks.finished = [&](size_t job, const ChildOutcome& outcome) {
    const SweepPoint& p = points[jobPoints[job]];
    if (Error e = finishPoint(spec, p, pointFiles(args.outDir, p), outcome); e && !writeError) writeError = e;
    bool ok = pointFinishedOk(pointFiles(args.outDir, p));
    failedPoints += ok ? 0 : 1;
    if (outcome.timedOut)
      std::cerr << "ember sweep: point " << p.index << " (" << p.id
                << ") exceeded the per-point time limit of " << shortNumber(spec.timeoutSeconds)
                << " s (timeout_seconds, --timeout) and was stopped\n";
    progress.finished(ok, outcome.seconds);
  };
  callbacks.tick = [&]() { progress.tick(); };
  Error interrupted = runProcessPool(jobs, concurrency, callbacks);
  if (!args.reportOnly) progress.done();
  if (writeError) return writeError;
  if (interrupted) return interrupted;
  return failedPoints;
}

/// results.csv, the plots and report.html; the summary on stdout.
int reportSweep(const SweepArgs& args, const SweepSpec& spec, const std::vector<SweepPoint>& points) {
  Expected<std::vector<std::string>> summary =
      writeReport(spec, points, args.outDir, slurmStates(args.outDir));
  if (!summary) return fail(summary.error());
  size_t failedTotal = 0;
  for (const SweepPoint& p : points)
    if (!pointFinishedOk(pointFiles(args.outDir, p))) ++failedTotal;
  std::cout << "wrote " << args.outDir << "/results.csv and " << args.outDir << "/report.html ("
            << points.size() - failedTotal << " ok, " << failedTotal << " failed or not run)\n";
  for (const std::string& line : *summary) std::cout << line << "\n";
  return failedTotal ? kExitFailure : kExitSuccess;
}

}  // namespace

int sweepCommand(const std::vector<std::string>& argv) {
  SweepArgs args;
  OptionParser parser(
      "ember sweep", "SPEC.yaml -o DIR [-j N] [--emit-slurm | --resume] [--partition P --time T --mem M]",
      "Runs a hardware design-space sweep (docs/codesign.md): every combination of the spec's axes, for\n"
      "every model, compiled and simulated in its own process. Writes DIR/results.csv, DIR/points/<id>/\n"
      "(config.yaml, point.json, stats.json, log.txt, report.html), DIR/plots/*.svg and DIR/report.html.\n"
      "Points already finished with status ok are skipped (resume). Exit status 1 when a point failed.");
  addSweepOptions(parser, args);
  if (auto status = parser.parse(argv)) return *status;
  if (args.outDir.empty()) return parser.usageError("missing -o DIR");
  std::map<std::string, std::string> vars;
  for (const std::string& v : args.vars) {
    size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0)
      return parser.usageError("--var expects NAME=VALUE, got '" + v + "'");
    vars[v.substr(0, eq)] = v.substr(eq + 1);
  }

  Expected<SweepSpec> loaded = loadSpec(args, vars);
  if (!loaded) return fail(loaded.error());
  const SweepSpec spec = loaded.take();
  Expected<std::vector<SweepPoint>> expanded = expandSweep(spec);
  if (!expanded) return fail(expanded.error());
  const std::vector<SweepPoint>& points = *expanded;
  if (Error e = writePointFolders(args, spec, points)) return fail(e);
  if (args.emitSlurm) {
    if (Error e = emitSlurm(args, spec, points)) return fail(e);
    return kExitSuccess;
  }
  if (args.resume) return resubmitOnSlurm(args, spec, points);

  Expected<std::vector<size_t>> pending = pendingPoints(args, points);
  if (!pending) return fail(pending.error());
  const std::map<size_t, std::string> profileErrors = makeProfiles(args, spec, points, *pending);
  Expected<size_t> failedPoints = runPoints(args, spec, points, *pending, profileErrors);
  if (!failedPoints) return fail(failedPoints.error());
  if (!args.point.empty()) {
    const SweepPoint& p = points[pending->front()];
    Expected<Json> json = readJsonFile(pointFiles(args.outDir, p).json);
    std::cerr << "ember sweep: point " << p.index << " (" << p.id << "): "
              << (json ? json->stringAt("status") + " " + json->stringAt("error") : json.error().message())
              << "\n";
    return *failedPoints ? kExitFailure : kExitSuccess;
  }
  return reportSweep(args, spec, points);
}

}  // namespace ember::cli
