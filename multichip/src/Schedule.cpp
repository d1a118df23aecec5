// The event-driven composition of stage runs and link transfers (Schedule.h).
#include "ember/multichip/Schedule.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <limits>
#include <utility>

namespace ember::multichip {
namespace {

/// One hop of a route: the link and the direction (0: a -> b, 1: b -> a).
struct Hop {
  size_t link;
  int direction;
};

std::vector<Hop> hopsOf(const SystemConfig& system, size_t from, size_t to) {
  std::vector<Hop> hops;
  size_t at = from;
  for (size_t link : route(system, from, to)) {
    const Link& l = system.links[link];
    const bool forward = l.a == at;
    hops.push_back({link, forward ? 0 : 1});
    at = forward ? l.b : l.a;
  }
  return hops;
}

/// Among the tasks not done whose dependencies are, the one that can start
/// first (ties: lower index) and its start; tasks.size() when none.
std::pair<size_t, double> nextTask(const std::vector<Task>& tasks, const std::vector<bool>& done,
                                   const Schedule& schedule, const std::vector<double>& chipFree,
                                   const std::vector<std::array<double, 2>>& linkFree,
                                   const std::vector<std::vector<Hop>>& hops) {
  size_t pick = tasks.size();
  double pickStart = std::numeric_limits<double>::infinity();
  for (size_t t = 0; t < tasks.size(); ++t) {
    if (done[t]) continue;
    double ready = 0;
    bool blocked = false;
    for (size_t before : tasks[t].after) {
      if (!done[before]) {
        blocked = true;
        break;
      }
      ready = std::max(ready, schedule.tasks[before].end);
    }
    if (blocked) continue;
    if (tasks[t].kind == Task::Kind::Compute) {
      ready = std::max(ready, chipFree[tasks[t].chip]);
    } else {
      for (const Hop& hop : hops[t]) ready = std::max(ready, linkFree[hop.link][hop.direction]);
    }
    if (ready < pickStart) {
      pickStart = ready;
      pick = t;
    }
  }
  return {pick, pickStart};
}

}  // namespace

Schedule scheduleTasks(const SystemConfig& system, const std::vector<Task>& tasks, size_t microBatches) {
  Schedule schedule;
  schedule.tasks.resize(tasks.size());
  schedule.chipBusyNs.assign(system.chips.size(), 0.0);
  schedule.hostBusyNs.assign(system.chips.size(), 0.0);
  schedule.links.assign(system.links.size(), LinkUse{});
  schedule.microBatchEndNs.assign(microBatches, 0.0);
  std::vector<double> chipFree(system.chips.size(), 0.0);
  std::vector<std::array<double, 2>> linkFree(system.links.size(), {0.0, 0.0});
  std::vector<std::vector<Hop>> hops(tasks.size());
  for (size_t t = 0; t < tasks.size(); ++t)
    if (tasks[t].kind == Task::Kind::Transfer) hops[t] = hopsOf(system, tasks[t].chip, tasks[t].toChip);

  std::vector<bool> done(tasks.size(), false);
  for (size_t scheduled = 0; scheduled < tasks.size(); ++scheduled) {
    const auto [pick, pickStart] = nextTask(tasks, done, schedule, chipFree, linkFree, hops);
    assert(pick < tasks.size() && "task dependencies must form a DAG");
    const Task& task = tasks[pick];
    TaskTiming& timing = schedule.tasks[pick];
    timing.start = pickStart;
    if (task.kind == Task::Kind::Compute) {
      timing.end = pickStart + task.nanoseconds + task.hostNanoseconds;
      chipFree[task.chip] = timing.end;
      schedule.chipBusyNs[task.chip] += task.nanoseconds;
      schedule.hostBusyNs[task.chip] += task.hostNanoseconds;
    } else {
      std::vector<size_t> links;
      double slowest = std::numeric_limits<double>::infinity();
      for (const Hop& hop : hops[pick]) {
        links.push_back(hop.link);
        slowest = std::min(slowest, system.links[hop.link].bandwidthGBps);
      }
      timing.end = pickStart + transferNanoseconds(system, links, task.bytes);
      // Every hop carries the bytes at the slowest hop's rate (GB/s = bytes/ns);
      // the latency pipelines behind it and does not hold the link.
      const double occupied = hops[pick].empty() ? 0.0 : double(task.bytes) / slowest;
      for (const Hop& hop : hops[pick]) {
        linkFree[hop.link][hop.direction] = pickStart + occupied;
        LinkUse& use = schedule.links[hop.link];
        use.busyNs[hop.direction] += occupied;
        use.bytes[hop.direction] += task.bytes;
        ++use.transfers;
      }
    }
    done[pick] = true;
    schedule.makespanNs = std::max(schedule.makespanNs, timing.end);
    if (task.microBatch < microBatches)
      schedule.microBatchEndNs[task.microBatch] =
          std::max(schedule.microBatchEndNs[task.microBatch], timing.end);
  }
  return schedule;
}

}  // namespace ember::multichip
