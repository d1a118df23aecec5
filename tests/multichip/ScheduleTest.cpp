// The pieces of a multi-chip run computed by hand (docs/multichip.md): the
// stage balancing, the cut sizes, stage functions, and the event-driven
// schedule of stage runs and link transfers with contention.
#include <gtest/gtest.h>

#include "ember/Graph.h"
#include "ember/multichip/Schedule.h"
#include "ember/multichip/StageSplit.h"

namespace ember::multichip {
namespace {

const std::string kConfigs = EMBER_NPU_CONFIG_DIR;

SystemConfig ringOf(size_t chips, double gbps, double latencyNs) {
  std::string yaml = "chips: {count: " + std::to_string(chips) + ", config: npu-16x16.yaml}\n";
  if (chips > 1)
    yaml += "interconnect: {topology: ring, bandwidth_gb_per_s: " + std::to_string(gbps) +
            ", latency_ns: " + std::to_string(latencyNs) + "}\n";
  Expected<SystemConfig> system = parseSystemConfig(yaml, kConfigs + "/system.yaml");
  EXPECT_TRUE(system) << system.error().message();
  return system.take();
}

TEST(BalanceStages, MinimisesTheLargestStage) {
  // Costs 4 1 1 1 1 4 on identical chips: two stages of 6 each (cut before node 3).
  const std::vector<double> costs{4, 1, 1, 1, 1, 4};
  const std::vector<std::vector<double>> noTransfer(2, std::vector<double>(7, 0.0));
  Expected<std::vector<size_t>> starts = balanceStages({costs, costs}, noTransfer, 6);
  ASSERT_TRUE(starts) << starts.error().message();
  EXPECT_EQ(*starts, (std::vector<size_t>{0, 3, 6}));
  // Three stages: {4} {1, 1, 1, 1} {4}: the largest is 4.
  starts = balanceStages({costs, costs, costs},
                         std::vector<std::vector<double>>(3, std::vector<double>(7, 0.0)), 6);
  ASSERT_TRUE(starts);
  EXPECT_EQ(*starts, (std::vector<size_t>{0, 1, 5, 6}));
}

TEST(BalanceStages, AvoidsAnExpensiveCut) {
  // The even cut (before node 2) would send 100; the one before node 3 sends nothing.
  const std::vector<double> costs{1, 1, 1, 1};
  std::vector<std::vector<double>> boundary(2, std::vector<double>(5, 0.0));
  boundary[0][2] = 100;
  Expected<std::vector<size_t>> starts = balanceStages({costs, costs}, boundary, 4);
  ASSERT_TRUE(starts);
  EXPECT_EQ(*starts, (std::vector<size_t>{0, 3, 4}));
}

TEST(BalanceStages, FasterChipTakesMore) {
  // Chip 1 is four times faster: it takes three of the four nodes (1 vs 0.75).
  Expected<std::vector<size_t>> starts = balanceStages(
      {{1, 1, 1, 1}, {0.25, 0.25, 0.25, 0.25}}, std::vector<std::vector<double>>(2, {0, 0, 0, 0, 0}), 4);
  ASSERT_TRUE(starts);
  EXPECT_EQ(*starts, (std::vector<size_t>{0, 1, 4}));
}

TEST(BalanceStages, TooFewNodesIsAnError) {
  Expected<std::vector<size_t>> starts =
      balanceStages({{1}, {1}}, std::vector<std::vector<double>>(2, std::vector<double>(2, 0.0)), 1);
  ASSERT_FALSE(starts);
  EXPECT_NE(starts.error().message().find("1 compute nodes, fewer than the 2 pipeline stages"),
            std::string::npos);
}

/// x -> relu -> neg -> (relu2 reads relu and neg) : a value that skips a stage.
struct SmallGraph {
  Function function{"small"};
  Node *x, *relu, *neg, *add;
  SmallGraph() {
    x = function.createPlaceholder("x", Type(ElemKind::F32, {1, 4}));
    relu = *function.create(OpKind::Relu, "relu", {x->result()});
    neg = *function.create(OpKind::Neg, "neg", {relu->result()});
    add = *function.create(OpKind::Add, "add", {relu->result(), neg->result()});
    function.addOutput("y", add->result());
  }
};

TEST(StageSplit, CutBytesAndStageFunctions) {
  SmallGraph g;
  const std::vector<Node*> nodes = computeNodes(g.function);
  ASSERT_EQ(nodes.size(), 3u);
  // Before relu nothing is cut; before neg, relu's 16 bytes; before add, relu and neg (32).
  EXPECT_EQ(cutBytes(nodes), (std::vector<int64_t>{0, 16, 32, 0}));
  Expected<StageFunction> first = buildStageFunction(g.function, {nodes[0]}, "s0");
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(first->outputs, (std::vector<std::string>{"relu"}));  // read by neg and add, sent once
  Expected<StageFunction> last = buildStageFunction(g.function, {nodes[1], nodes[2]}, "s1");
  ASSERT_TRUE(last) << last.error().message();
  EXPECT_EQ(last->inputs, (std::vector<std::string>{"relu"}));
  EXPECT_EQ(last->outputs, (std::vector<std::string>{"y"}));
  EXPECT_FALSE(last->function->verify());
}

TEST(Schedule, PipelineOfTwoChipsWithATransfer) {
  // 32 GB/s, 500 ns: 3200 bytes take 100 ns on the link, arrive 600 ns after they leave.
  const SystemConfig system = ringOf(2, 32, 500);
  std::vector<Task> tasks;
  auto compute = [&](size_t mb, size_t chip, double ns, std::vector<size_t> after) {
    Task t;
    t.kind = Task::Kind::Compute;
    t.microBatch = mb;
    t.chip = chip;
    t.nanoseconds = ns;
    t.after = std::move(after);
    tasks.push_back(t);
    return tasks.size() - 1;
  };
  auto send = [&](size_t mb, size_t after) {
    Task t;
    t.kind = Task::Kind::Transfer;
    t.microBatch = mb;
    t.chip = 0;
    t.toChip = 1;
    t.bytes = 3200;
    t.after = {after};
    tasks.push_back(t);
    return tasks.size() - 1;
  };
  // Two micro-batches: stage 0 (1000 ns) on chip 0, send, stage 1 (800 ns) on chip 1.
  size_t a0 = compute(0, 0, 1000, {});
  size_t t0 = send(0, a0);
  size_t b0 = compute(0, 1, 800, {t0});
  size_t a1 = compute(1, 0, 1000, {a0});
  size_t t1 = send(1, a1);
  compute(1, 1, 800, {t1, b0});
  const Schedule s = scheduleTasks(system, tasks, 2);
  EXPECT_DOUBLE_EQ(s.tasks[t0].end, 1600);       // 1000 + 500 + 100
  EXPECT_DOUBLE_EQ(s.microBatchEndNs[0], 2400);  // + 800
  EXPECT_DOUBLE_EQ(s.tasks[a1].end, 2000);       // chip 0 goes on at once
  EXPECT_DOUBLE_EQ(s.microBatchEndNs[1], 3400);  // 2000 + 600 + 800
  EXPECT_DOUBLE_EQ(s.makespanNs, 3400);
  EXPECT_DOUBLE_EQ(s.chipBusyNs[0], 2000);
  EXPECT_DOUBLE_EQ(s.chipBusyNs[1], 1600);
  ASSERT_EQ(s.links.size(), 1u);
  EXPECT_DOUBLE_EQ(s.links[0].busyNs[0], 200);  // two transfers of 100 ns, npu0 -> npu1
  EXPECT_DOUBLE_EQ(s.links[0].busyNs[1], 0);
  EXPECT_EQ(s.links[0].bytes[0], 6400);
}

TEST(Schedule, TransfersOnOneLinkWait) {
  // Two 32000-byte sends leave chip 0 together: the second waits for the first's 1000 ns on the link.
  const SystemConfig system = ringOf(2, 32, 500);
  std::vector<Task> tasks(3);
  tasks[0].kind = Task::Kind::Compute;
  tasks[0].nanoseconds = 10;
  for (size_t i = 1; i < 3; ++i) {
    tasks[i].kind = Task::Kind::Transfer;
    tasks[i].chip = 0;
    tasks[i].toChip = 1;
    tasks[i].bytes = 32000;
    tasks[i].after = {0};
  }
  const Schedule s = scheduleTasks(system, tasks, 1);
  EXPECT_DOUBLE_EQ(s.tasks[1].end, 10 + 500 + 1000);
  EXPECT_DOUBLE_EQ(s.tasks[2].start, 1010);
  EXPECT_DOUBLE_EQ(s.tasks[2].end, 1010 + 500 + 1000);
  EXPECT_DOUBLE_EQ(s.links[0].busyNs[0], 2000);
}

TEST(Schedule, TwoHopRouteUsesBothLinks) {
  // Ring of four: chip 0 to chip 2 goes through npu1 (two hops, 2 x 500 ns latency).
  const SystemConfig system = ringOf(4, 32, 500);
  std::vector<Task> tasks(1);
  tasks[0].kind = Task::Kind::Transfer;
  tasks[0].chip = 0;
  tasks[0].toChip = 2;
  tasks[0].bytes = 3200;
  const Schedule s = scheduleTasks(system, tasks, 1);
  EXPECT_DOUBLE_EQ(s.tasks[0].end, 1000 + 100);
  EXPECT_DOUBLE_EQ(s.links[0].busyNs[0], 100);  // npu0-npu1
  EXPECT_DOUBLE_EQ(s.links[1].busyNs[0], 100);  // npu1-npu2
  EXPECT_DOUBLE_EQ(s.links[2].busyNs[0], 0);
}

}  // namespace
}  // namespace ember::multichip
