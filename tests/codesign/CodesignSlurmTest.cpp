// Unit tests of the Slurm side of `ember sweep` (docs/codesign.md): the array
// script's #SBATCH lines, array index lists, and reading task states from the
// text sacct and scontrol print (lines as Slurm 22.05 writes them).
#include <gtest/gtest.h>

#include "Slurm.h"

namespace ember::codesign {
namespace {

TEST(CodesignSlurm, ArrayIndexListJoinsRuns) {
  EXPECT_EQ(arrayIndexList({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(arrayIndexList({3}), "3");
  EXPECT_EQ(arrayIndexList({}), "");
}

TEST(CodesignSlurm, ScriptCarriesTheSiteOptions) {
  SlurmArrayScript s;
  s.sweepName = "quick one";
  s.jobName = "quick_one";
  s.outDir = "/shared/out";
  s.command = "\"$EMBER\" sweep '/shared/quick.yaml' -o '/shared/out'";
  s.emberPath = "/opt/ember/bin/ember";
  s.points = 4;
  s.timeoutSeconds = 600;
  std::string plain = slurmArrayScript(s);
  EXPECT_NE(plain.find("#SBATCH --array=0-3\n"), std::string::npos) << plain;
  EXPECT_NE(plain.find("#SBATCH --time=15\n"), std::string::npos) << plain;  // 10 min + 5
  EXPECT_EQ(plain.find("--partition"), std::string::npos);
  EXPECT_NE(plain.find("EMBER=\"${EMBER:-/opt/ember/bin/ember}\"\n"), std::string::npos);
  EXPECT_NE(
      plain.find(
          "exec \"$EMBER\" sweep '/shared/quick.yaml' -o '/shared/out' --point \"$SLURM_ARRAY_TASK_ID\"\n"),
      std::string::npos)
      << plain;

  s.options = {"gpu,cpu", "1-02:00:00", "4G", "hw-team"};
  ASSERT_FALSE(validateSbatchOptions(s.options));
  std::string script = slurmArrayScript(s);
  for (const char* line : {"#SBATCH --partition=gpu,cpu\n", "#SBATCH --time=1-02:00:00\n",
                           "#SBATCH --mem=4G\n", "#SBATCH --account=hw-team\n"})
    EXPECT_NE(script.find(line), std::string::npos) << line << script;
  // sbatch reads #SBATCH lines only before the first command.
  EXPECT_LT(script.rfind("#SBATCH"), script.find("set -euo pipefail"));
}

TEST(CodesignSlurm, BadOptionsNameTheOption) {
  for (auto [options, name] : std::vector<std::pair<SbatchOptions, std::string>>{
           {{"", "ten minutes", "", ""}, "--time 'ten minutes'"},
           {{"", "", "4 GB", ""}, "--mem '4 GB'"},
           {{"a b", "", "", ""}, "--partition 'a b'"},
           {{"", "", "", "x\n#SBATCH --exclusive"}, "--account"}}) {
    Error e = validateSbatchOptions(options);
    ASSERT_TRUE(e) << name;
    EXPECT_NE(e.message().find(name), std::string::npos) << e.message();
  }
  for (const char* time : {"30", "30:00", "1:00:00", "2-0", "2-12:30", "UNLIMITED"})
    EXPECT_FALSE(validateSbatchOptions({"", time, "", ""})) << time;
}

TEST(CodesignSlurm, ParsesSacctStates) {
  // sacct -n -P -X -j 12,20 --format=JobID,State
  std::vector<SlurmTaskState> states = parseSacctStates(
      "12_0|COMPLETED\n12_1|FAILED\n12_2|CANCELLED by 1000\n12_[3-5%2]|PENDING\n13|COMPLETED\n20_7|TIMEOUT\n"
      "sacct: error: something\n");
  ASSERT_EQ(states.size(), 7u);
  EXPECT_EQ(states[1].job(), "12_1");
  EXPECT_EQ(states[1].state, "FAILED");
  EXPECT_EQ(states[2].state, "CANCELLED");
  EXPECT_EQ(states[3].taskId, 3u);
  EXPECT_EQ(states[5].taskId, 5u);
  EXPECT_TRUE(states[5].active());
  EXPECT_EQ(states[6].job(), "20_7");
  EXPECT_FALSE(states[6].active());
}

TEST(CodesignSlurm, ParsesScontrolStates) {
  // scontrol -o show job 1 on Slurm 22.05 (fields trimmed), one task running,
  // the rest pending as one record.
  std::string text =
      "JobId=1 ArrayJobId=1 ArrayTaskId=3-4 JobName=a.sh UserId=root(0) GroupId=root(0) Priority=1 "
      "JobState=PENDING Reason=Resources Dependency=(null) ExitCode=0:0\n"
      "JobId=4 ArrayJobId=1 ArrayTaskId=2 JobName=a.sh UserId=root(0) JobState=CANCELLED Reason=None "
      "ExitCode=0:15\n"
      "JobId=3 ArrayJobId=1 ArrayTaskId=1 JobName=a.sh JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0\n"
      "JobId=9 JobName=plain JobState=COMPLETED Reason=None\n";
  std::vector<SlurmTaskState> states = parseScontrolStates(text);
  ASSERT_EQ(states.size(), 4u);
  EXPECT_EQ(states[0].job(), "1_3");
  EXPECT_EQ(states[1].job(), "1_4");
  EXPECT_EQ(states[1].state, "PENDING");
  EXPECT_EQ(states[2].state, "CANCELLED");
  EXPECT_EQ(states[3].state, "FAILED");
}

TEST(CodesignSlurm, LatestStatePerTaskComesFromTheNewestArray) {
  std::map<size_t, SlurmTaskState> latest =
      latestTaskStates({{12, 0, "COMPLETED"}, {20, 2, "COMPLETED"}, {12, 2, "CANCELLED"}, {12, 1, "FAILED"}});
  ASSERT_EQ(latest.size(), 3u);
  EXPECT_EQ(latest[2].job(), "20_2");
  EXPECT_EQ(latest[2].state, "COMPLETED");
  EXPECT_EQ(latest[1].state, "FAILED");
}

}  // namespace
}  // namespace ember::codesign
