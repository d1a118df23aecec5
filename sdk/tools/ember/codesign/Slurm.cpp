#include "Slurm.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "Json.h"
#include "ProcessPool.h"

namespace ember::codesign {

namespace fs = std::filesystem;

Error validateSbatchOptions(const SbatchOptions& options) {
  static const std::regex kTime(R"((\d+(-\d+)?(:\d{1,2}){0,2})|UNLIMITED|INFINITE)");
  static const std::regex kMem(R"(\d+[KMGT]?)");
  static const std::regex kName(R"([A-Za-z0-9_.,:+-]+)");
  if (!options.time.empty() && !std::regex_match(options.time, kTime))
    return makeError("--time '", options.time, "': not a Slurm time (MINUTES, HH:MM:SS or D-HH:MM:SS)");
  if (!options.mem.empty() && !std::regex_match(options.mem, kMem))
    return makeError("--mem '", options.mem, "': not a Slurm memory size (e.g. 4G, 500M)");
  if (!options.partition.empty() && !std::regex_match(options.partition, kName))
    return makeError("--partition '", options.partition, "': not a partition name");
  if (!options.account.empty() && !std::regex_match(options.account, kName))
    return makeError("--account '", options.account, "': not an account name");
  return Error::success();
}

std::string slurmArrayScript(const SlurmArrayScript& s) {
  std::string collect = s.command.substr(s.command.find("sweep"));
  std::string time =
      s.options.time.empty() ? std::to_string(int64_t(s.timeoutSeconds / 60) + 5) : s.options.time;
  std::string text = "#!/bin/bash\n# Ember co-design sweep '" + s.sweepName +
                     "' as a Slurm job array (docs/codesign.md).\n"
                     "# One array task per point (the task id is the point's index); each runs\n"
                     "#   ember sweep SPEC -o DIR --point $SLURM_ARRAY_TASK_ID\n"
                     "# Submit:   sbatch " +
                     s.outDir + "/sweep.slurm\n# Collect:  " + collect +
                     " --report-only   (after the array ends)\n# Resubmit the failed points:  " + collect +
                     " --resume\n#SBATCH --job-name=ember-sweep-" + s.jobName + "\n#SBATCH --array=0-" +
                     std::to_string(s.points - 1) + "\n#SBATCH --cpus-per-task=1\n#SBATCH --time=" + time +
                     "\n";
  if (!s.options.partition.empty()) text += "#SBATCH --partition=" + s.options.partition + "\n";
  if (!s.options.mem.empty()) text += "#SBATCH --mem=" + s.options.mem + "\n";
  if (!s.options.account.empty()) text += "#SBATCH --account=" + s.options.account + "\n";
  text += "#SBATCH --output=" + s.outDir + "/slurm/%A_%a.out\nset -euo pipefail\nEMBER=\"${EMBER:-" +
          s.emberPath + "}\"\nexec " + s.command + " --point \"$SLURM_ARRAY_TASK_ID\"\n";
  return text;
}

std::string arrayIndexList(const std::vector<size_t>& indices) {
  std::string out;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(indices[i]);
    if (j > i) out += "-" + std::to_string(indices[j]);
    i = j + 1;
  }
  return out;
}

bool SlurmTaskState::active() const {
  static const std::set<std::string> kActive = {"PENDING",     "RUNNING",     "REQUEUED",   "RESIZING",
                                                "SUSPENDED",   "CONFIGURING", "COMPLETING", "REQUEUE_HOLD",
                                                "REQUEUE_FED", "SIGNALING",   "STAGE_OUT",  "STOPPED"};
  return kActive.count(state) != 0;
}

namespace {

/// "3", "4-7", "4-7%2", "1,3,5-6" -> the indices (empty on anything else).
std::vector<size_t> expandTaskIds(std::string text) {
  if (size_t percent = text.find('%'); percent != std::string::npos) text.erase(percent);
  std::vector<size_t> ids;
  std::istringstream in(text);
  std::string part;
  static const std::regex kRange(R"((\d+)(-(\d+))?)");
  while (std::getline(in, part, ',')) {
    std::smatch m;
    if (!std::regex_match(part, m, kRange)) return {};
    size_t first = std::stoul(m[1].str()), last = m[3].matched ? std::stoul(m[3].str()) : first;
    if (last < first || last - first > 1000000) return {};
    for (size_t i = first; i <= last; ++i) ids.push_back(i);
  }
  return ids;
}

void addTasks(std::vector<SlurmTaskState>& out, int64_t job, const std::string& tasks, std::string state) {
  // sacct writes "CANCELLED by 1000"; the state is the first word.
  if (size_t space = state.find(' '); space != std::string::npos) state.erase(space);
  for (size_t task : expandTaskIds(tasks)) out.push_back({job, task, state});
}

std::string field(const std::string& line, const std::string& key) {
  size_t at = 0;
  while ((at = line.find(key + "=", at)) != std::string::npos) {
    if (at == 0 || line[at - 1] == ' ') {
      size_t start = at + key.size() + 1;
      return line.substr(start, line.find(' ', start) - start);
    }
    at += key.size();
  }
  return "";
}

/// The program's path on $PATH, or "" (posix_spawn does not search PATH).
std::string findOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream in(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(in, dir, ':')) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

/// Runs a command found on $PATH, its stdout and stderr into `log`; returns
/// the exit status (-1 when it could not start) and the log's text.
std::pair<int, std::string> runCapturing(std::vector<std::string> argv, const std::string& log) {
  argv[0] = findOnPath(argv[0]);
  if (argv[0].empty()) return {-1, ""};
  ChildOutcome outcome;
  PoolCallbacks callbacks;
  callbacks.finished = [&](size_t, const ChildOutcome& o) { outcome = o; };
  ChildJob job{argv, log, 120};
  if (runProcessPool({job}, 1, callbacks)) return {-1, "interrupted"};
  Expected<std::string> text = readTextFile(log);
  int status = outcome.ok() ? 0 : (outcome.spawnFailed ? -1 : std::max(1, outcome.exitCode));
  return {status, text ? *text : ""};
}

}  // namespace

std::vector<SlurmTaskState> parseSacctStates(const std::string& text) {
  static const std::regex kLine(R"(\s*(\d+)_\[?([0-9,%-]+)\]?\|([A-Z_]+[^|]*)\|?\s*)");
  std::vector<SlurmTaskState> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, kLine)) addTasks(out, std::stoll(m[1].str()), m[2].str(), m[3].str());
  }
  return out;
}

std::vector<SlurmTaskState> parseScontrolStates(const std::string& text) {
  std::vector<SlurmTaskState> out;
  std::istringstream in(text);
  std::string line;
  static const std::regex kNumber(R"(\d+)");
  while (std::getline(in, line)) {
    std::string job = field(line, "ArrayJobId"), tasks = field(line, "ArrayTaskId"),
                state = field(line, "JobState");
    if (!std::regex_match(job, kNumber) || tasks.empty() || state.empty()) continue;
    addTasks(out, std::stoll(job), tasks, state);
  }
  return out;
}

std::map<size_t, SlurmTaskState> latestTaskStates(const std::vector<SlurmTaskState>& states) {
  std::map<size_t, SlurmTaskState> latest;
  for (const SlurmTaskState& s : states) {
    auto it = latest.find(s.taskId);
    if (it == latest.end() || s.arrayJobId >= it->second.arrayJobId) latest[s.taskId] = s;
  }
  return latest;
}

std::vector<int64_t> recordedArrayJobs(const std::string& slurmDir) {
  std::set<int64_t> jobs;
  if (Expected<std::string> text = readTextFile(slurmDir + "/jobs.txt")) {
    std::istringstream in(*text);
    int64_t id;
    while (in >> id) jobs.insert(id);
  }
  static const std::regex kLog(R"((\d+)_\d+\.out)");
  std::error_code ec;
  for (fs::directory_iterator it(slurmDir, ec), end; !ec && it != end; it.increment(ec)) {
    std::smatch m;
    std::string name = it->path().filename().string();
    if (std::regex_match(name, m, kLog)) jobs.insert(std::stoll(m[1].str()));
  }
  return {jobs.begin(), jobs.end()};
}

Error recordArrayJob(const std::string& slurmDir, int64_t arrayJobId) {
  std::ofstream out(slurmDir + "/jobs.txt", std::ios::app);
  out << arrayJobId << "\n";
  if (!out) return makeError(slurmDir, "/jobs.txt: cannot append the job id ", arrayJobId);
  return Error::success();
}

Expected<std::vector<SlurmTaskState>> querySlurmStates(const std::vector<int64_t>& arrayJobIds,
                                                       const std::string& slurmDir) {
  std::vector<SlurmTaskState> states;
  if (arrayJobIds.empty()) return states;
  std::string list;
  for (int64_t id : arrayJobIds) list += (list.empty() ? "" : ",") + std::to_string(id);
  auto [sacctStatus, sacctText] =
      runCapturing({"sacct", "-n", "-P", "-X", "-j", list, "--format=JobID,State"}, slurmDir + "/sacct.log");
  if (sacctStatus == 0) states = parseSacctStates(sacctText);
  std::string scontrolError;
  for (int64_t id : arrayJobIds) {
    bool known = std::any_of(states.begin(), states.end(), [&](const auto& s) { return s.arrayJobId == id; });
    if (known) continue;
    auto [status, text] =
        runCapturing({"scontrol", "-o", "show", "job", std::to_string(id)}, slurmDir + "/scontrol.log");
    if (status == -1 && sacctStatus == -1)
      return makeError("cannot read the state of Slurm job ", id, ": neither sacct nor scontrol runs");
    for (const SlurmTaskState& s : parseScontrolStates(text))
      if (s.arrayJobId == id) states.push_back(s);
  }
  return states;
}

Expected<int64_t> submitSlurmArray(const std::string& scriptPath, const std::vector<size_t>& indices,
                                   const std::string& slurmDir) {
  auto [status, text] = runCapturing(
      {"sbatch", "--parsable", "--array=" + arrayIndexList(indices), scriptPath}, slurmDir + "/sbatch.log");
  std::smatch m;
  static const std::regex kJobId(R"((^|\n)(\d+)(;[^\n]*)?\n)");
  if (status != 0 || !std::regex_search(text, m, kJobId)) {
    while (!text.empty() && text.back() == '\n') text.pop_back();
    if (status == -1 && text.empty()) text = "sbatch not found (is this a Slurm login node?)";
    return makeError("sbatch ", scriptPath, " failed: ", text.substr(text.find_last_of('\n') + 1));
  }
  return std::stoll(m[2].str());
}

}  // namespace ember::codesign
