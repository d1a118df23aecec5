// Slurm job arrays for `ember sweep` (docs/codesign.md): the array script with
// its #SBATCH lines, submitting a subset of the points, and the state of each
// array task from sacct (or scontrol when the cluster keeps no accounting).
// The array task id is always the point's index, in the first array and in
// every resubmission, so a task's state names its point.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ember/Error.h"

namespace ember::codesign {

/// Site options written as #SBATCH lines; empty ones are left out.
struct SbatchOptions {
  std::string partition;
  std::string time;  ///< Slurm's formats: MINUTES, MM:SS, HH:MM:SS, D-HH[:MM[:SS]]
  std::string mem;   ///< per node: a number with an optional K, M, G or T suffix
  std::string account;
};

/// A one-line error naming the option whose value Slurm would reject.
Error validateSbatchOptions(const SbatchOptions& options);

struct SlurmArrayScript {
  std::string sweepName;
  std::string jobName;    ///< the sweep's name made safe for a file name
  std::string outDir;     ///< absolute; task logs go to outDir/slurm/
  std::string command;    ///< the task's command without `--point`, starting with "$EMBER"
  std::string emberPath;  ///< the default of $EMBER
  size_t points = 0;
  double timeoutSeconds = 1800;  ///< per point; the default --time adds 5 minutes
  SbatchOptions options;
};

/// The text of DIR/sweep.slurm: a job array over every point.
std::string slurmArrayScript(const SlurmArrayScript& script);

/// Slurm's array syntax for a sorted list of indices: {1,2,3,5} -> "1-3,5".
std::string arrayIndexList(const std::vector<size_t>& indices);

struct SlurmTaskState {
  int64_t arrayJobId = 0;
  size_t taskId = 0;
  std::string state;  ///< COMPLETED, FAILED, TIMEOUT, CANCELLED, OUT_OF_MEMORY, PENDING, RUNNING, ...

  std::string job() const { return std::to_string(arrayJobId) + "_" + std::to_string(taskId); }
  /// The task may still run: resubmitting it would run the point twice.
  bool active() const;
};

/// `sacct -n -P -X --format=JobID,State` output: "12_3|CANCELLED by 0",
/// "12_[4-7%2]|PENDING". Lines that are not array tasks are skipped.
std::vector<SlurmTaskState> parseSacctStates(const std::string& text);
/// `scontrol -o show job` output: one job per line with ArrayJobId=,
/// ArrayTaskId= (an index or, for the pending rest, "4-7%2") and JobState=.
std::vector<SlurmTaskState> parseScontrolStates(const std::string& text);

/// Per array task index, its state in the newest array job that has it.
std::map<size_t, SlurmTaskState> latestTaskStates(const std::vector<SlurmTaskState>& states);

/// The array jobs of a sweep: DIR/slurm/jobs.txt (written on submission) and
/// the task logs DIR/slurm/<job>_<task>.out (written by Slurm when a task starts).
std::vector<int64_t> recordedArrayJobs(const std::string& slurmDir);
Error recordArrayJob(const std::string& slurmDir, int64_t arrayJobId);

/// Asks sacct for the tasks of these array jobs, then scontrol for the jobs
/// sacct does not know (no accounting, or not yet recorded). Errors only when
/// neither command runs; scratch logs go to slurmDir.
Expected<std::vector<SlurmTaskState>> querySlurmStates(const std::vector<int64_t>& arrayJobIds,
                                                       const std::string& slurmDir);

/// `sbatch --parsable --array=LIST SCRIPT`; returns the new array job's id.
Expected<int64_t> submitSlurmArray(const std::string& scriptPath, const std::vector<size_t>& indices,
                                   const std::string& slurmDir);

}  // namespace ember::codesign
