// The co-simulation of a multi-chip system (ember/npu/CoSimulation.h,
// docs/multichip.md): chip tops (Simulator.cpp), link channels and chip
// drivers, elaborated once per process with the one-chip top (SimKernel.h).
//
// A link is a TLM-2.0 target: a transfer is a b_transport per hop, loosely
// timed like the NPU's memories (SystemC time is not advanced inside it:
// each direction keeps the time it is next free, and a transfer reserves
// [start, start + hold) on every hop of its route). The last hop hands the
// data to the receiving chip, which takes it once the arrival time is reached.
//
// A shared DRAM is a calendar (SimKernel.h) every chip's DRAM target
// (Simulator.cpp) reserves its transactions on, in absolute SystemC time.
#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn of the chip drivers
#include "ember/npu/CoSimulation.h"

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <systemc>
#include <tlm>

#include "SimKernel.h"

namespace ember::npu {
namespace {

using namespace sc_core;

uint64_t unitsPerNanosecond() {
  static const uint64_t units = sc_time(1, SC_NS).value();
  return units;
}
uint64_t unitsOf(double nanoseconds) {
  return uint64_t(std::llround(nanoseconds * double(unitsPerNanosecond())));
}
double nanosecondsOf(uint64_t units) { return double(units) / double(unitsPerNanosecond()); }

/// A message on its way to a chip: its bytes, usable from `arrival`.
struct Message {
  uint64_t tag = 0;
  uint64_t arrival = 0;  ///< SystemC time units
  std::vector<uint8_t> bytes;
};

/// The timing side channel of a hop: a probe asks when the direction is
/// free; a transfer reserves it and, on the route's last hop, delivers.
struct HopExtension : tlm::tlm_extension<HopExtension> {
  int direction = 0;  ///< 0: a -> b, 1: b -> a
  bool probe = false;
  uint64_t start = 0, hold = 0;  ///< transfer: the reservation (units)
  uint64_t latency = 0;          ///< transfer: the earlier hops' latencies; out: plus this hop's
  bool last = false;
  size_t toChip = 0;
  uint64_t tag = 0;
  uint64_t freeAt = 0;  ///< probe: out
  tlm_extension_base* clone() const override { return new HopExtension(*this); }
  void copy_from(const tlm_extension_base& other) override {
    *this = static_cast<const HopExtension&>(other);
  }
};

class SystemKernel;

/// One full-duplex link.
class LinkChannel : public sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<LinkChannel> socket;

  // NOLINTNEXTLINE(performance-unnecessary-value-param): SystemC's naming needs sc_module_name by value
  LinkChannel(sc_module_name name, SystemKernel& kernel)
      : sc_module(name), socket("socket"), kernel_(kernel) {
    socket.register_b_transport(this, &LinkChannel::bTransport);
  }

  void configure(const CoSimLinkSpec& spec) {
    latency_ = unitsOf(spec.latencyNs);
    freeAt_[0] = freeAt_[1] = 0;
    stats = {};
  }

  CoSimLinkStats stats;

 private:
  void bTransport(int, tlm::tlm_generic_payload& payload, sc_time& delay);

  SystemKernel& kernel_;
  uint64_t latency_ = 0;
  uint64_t freeAt_[2] = {0, 0};
};

/// Everything a co-simulated run owns.
struct SystemRun {
  const CoSimSystemSpec* system = nullptr;
  const std::vector<ChipDriver>* drivers = nullptr;
  uint64_t start = 0;  ///< SystemC time units at the run's start
  std::vector<detail::CoSimChip> chips;
  std::vector<uint64_t> hostUnits;  ///< per chip: its host work
  std::vector<std::deque<Message>> inboxes;
  std::vector<bool> finished;
  std::vector<bool> stopped;  ///< its driver stopped because another failed
  std::vector<Error> errors;
  bool cancelled = false;  ///< a driver failed: the others stop waiting
};

class SystemKernel : public sc_module, public ChipPort {
 public:
  SC_HAS_PROCESS(SystemKernel);
  // NOLINTNEXTLINE(performance-unnecessary-value-param): SystemC's naming needs sc_module_name by value
  explicit SystemKernel(sc_module_name name) : sc_module(name) {
    for (size_t l = 0; l < detail::coSimulatedLinkCapacity(); ++l)
      links_.push_back(std::make_unique<LinkChannel>(("link" + std::to_string(l)).c_str(), *this));
    for (size_t c = 0; c < detail::coSimulatedChipCapacity(); ++c) {
      sockets_.push_back(std::make_unique<tlm_utils::multi_passthrough_initiator_socket<SystemKernel>>(
          ("chip" + std::to_string(c) + "_links").c_str()));
      for (auto& link : links_) sockets_.back()->bind(link->socket);
      sc_spawn_options options;
      options.set_stack_size(16 << 20);  // a stage's host partitions run on it too
      handles_.push_back(sc_spawn(sc_bind(&SystemKernel::driverThread, this, c),
                                  ("driver" + std::to_string(c)).c_str(), &options));
    }
    for (size_t c = 0; c < detail::coSimulatedChipCapacity(); ++c)
      inboxEvents_.emplace_back(std::make_unique<sc_event>());
    payload_.set_extension(new HopExtension);
  }

  Expected<CoSimResult> run(const CoSimSystemSpec& system, const std::vector<ChipDriver>& drivers);

  /// The chip whose driver is the running process, during a run.
  detail::CoSimChip* currentChip() {
    if (!run_) return nullptr;
    const sc_process_handle current = sc_get_current_process_handle();
    for (size_t c = 0; c < run_->chips.size(); ++c)
      if (current == handles_[c]) return &run_->chips[c];
    return nullptr;
  }

  void deliver(size_t toChip, Message message) {
    run_->inboxes[toChip].push_back(std::move(message));
    inboxEvents_[toChip]->notify(SC_ZERO_TIME);
  }

  // ChipPort, called by the running driver.
  size_t chip() const override {
    const sc_process_handle current = sc_get_current_process_handle();
    return size_t(std::find(handles_.begin(), handles_.end(), current) - handles_.begin());
  }
  Error send(size_t to, const std::vector<size_t>& route, uint64_t tag, std::vector<uint8_t> bytes) override;
  Expected<std::vector<uint8_t>> receive(uint64_t tag) override;
  double nowNs() const override { return nanosecondsOf(sc_time_stamp().value() - run_->start); }
  void hostWork(double nanoseconds) override {
    const uint64_t units = unitsOf(std::max(0.0, nanoseconds));
    run_->hostUnits[chip()] += units;
    wait(sc_time::from_value(units));
  }

 private:
  void driverThread(size_t chip);
  Error checkSystem(const CoSimSystemSpec& system) const;
  CoSimResult resultOf(const CoSimSystemSpec& system, const SystemRun& state) const;
  void cancel() {
    run_->cancelled = true;
    for (auto& event : inboxEvents_) event->notify(SC_ZERO_TIME);
  }

  std::vector<std::unique_ptr<LinkChannel>> links_;
  std::vector<std::unique_ptr<tlm_utils::multi_passthrough_initiator_socket<SystemKernel>>> sockets_;
  std::vector<sc_process_handle> handles_;
  std::vector<std::unique_ptr<sc_event>> inboxEvents_;
  sc_event startEvent_;
  SystemRun* run_ = nullptr;
  tlm::tlm_generic_payload payload_;  // owns a HopExtension
  detail::SharedDramCalendar sharedDram_;
};

void LinkChannel::bTransport(int, tlm::tlm_generic_payload& payload, sc_time& delay) {
  auto* hop = payload.get_extension<HopExtension>();
  const int d = hop->direction;
  if (hop->probe) {
    hop->freeAt = freeAt_[d];
  } else {
    freeAt_[d] = hop->start + hop->hold;
    stats.busyNs[d] += nanosecondsOf(hop->hold);
    stats.bytes[d] += payload.get_data_length();
    ++stats.transfers;
    hop->latency += latency_;
    if (hop->last) {
      const uint8_t* data = payload.get_data_ptr();
      kernel_.deliver(hop->toChip, {hop->tag, hop->start + hop->hold + hop->latency,
                                    std::vector<uint8_t>(data, data + payload.get_data_length())});
    }
    delay += sc_time::from_value(latency_);
  }
  payload.set_response_status(tlm::TLM_OK_RESPONSE);
}

Error SystemKernel::send(size_t to, const std::vector<size_t>& route, uint64_t tag,
                         std::vector<uint8_t> bytes) {
  const size_t from = chip();
  const CoSimSystemSpec& system = *run_->system;
  if (route.empty()) return makeError("chip ", from, ": no route to chip ", to);
  // The hops' directions, and the earliest time every one of them is free.
  std::vector<int> directions;
  size_t at = from;
  double slowest = std::numeric_limits<double>::infinity();
  uint64_t start = sc_time_stamp().value();
  auto& socket = *sockets_[from];
  auto* hop = payload_.get_extension<HopExtension>();
  for (size_t link : route) {
    const CoSimLinkSpec& spec = system.links[link];
    if (spec.a != at && spec.b != at)
      return makeError("chip ", from, ": the route to chip ", to, " is broken");
    directions.push_back(spec.a == at ? 0 : 1);
    at = spec.a == at ? spec.b : spec.a;
    slowest = std::min(slowest, spec.bandwidthGBps);
    *hop = {};
    hop->direction = directions.back();
    hop->probe = true;
    sc_time delay = SC_ZERO_TIME;
    payload_.set_command(tlm::TLM_IGNORE_COMMAND);
    payload_.set_data_length(0);
    socket[int(link)]->b_transport(payload_, delay);
    start = std::max(start, hop->freeAt);
  }
  if (at != to) return makeError("chip ", from, ": the route ends at chip ", at, ", not ", to);
  // GB/s = bytes per ns; every hop is held as long as the slowest needs.
  const uint64_t hold = unitsOf(double(bytes.size()) / slowest);
  uint64_t latency = 0;
  for (size_t h = 0; h < route.size(); ++h) {
    *hop = {};
    hop->direction = directions[h];
    hop->start = start;
    hop->hold = hold;
    hop->latency = latency;
    hop->last = h + 1 == route.size();
    hop->toChip = to;
    hop->tag = tag;
    sc_time delay = SC_ZERO_TIME;
    payload_.set_command(tlm::TLM_WRITE_COMMAND);
    payload_.set_data_ptr(bytes.data());
    payload_.set_data_length(unsigned(bytes.size()));
    payload_.set_streaming_width(unsigned(bytes.size()));
    socket[int(route[h])]->b_transport(payload_, delay);
    latency = hop->latency;
  }
  return Error::success();
}

Expected<std::vector<uint8_t>> SystemKernel::receive(uint64_t tag) {
  const size_t self = chip();
  auto& inbox = run_->inboxes[self];
  for (;;) {
    if (run_->cancelled) {
      run_->stopped[self] = true;
      return makeError("stopped: another chip failed");
    }
    auto it = std::find_if(inbox.begin(), inbox.end(), [&](const Message& m) { return m.tag == tag; });
    if (it == inbox.end()) {
      wait(*inboxEvents_[self]);
      continue;
    }
    const uint64_t now = sc_time_stamp().value();
    if (it->arrival > now) {
      wait(sc_time::from_value(it->arrival - now));
      continue;  // the inbox may have grown meanwhile: look the message up again
    }
    std::vector<uint8_t> bytes = std::move(it->bytes);
    inbox.erase(it);
    return bytes;
  }
}

void SystemKernel::driverThread(size_t chip) {
  for (;;) {
    wait(startEvent_);
    if (!run_ || chip >= run_->chips.size()) continue;
    Error e = (*run_->drivers)[chip](*this);
    if (e) {
      run_->errors[chip] = std::move(e);
      cancel();
    }
    run_->finished[chip] = true;
  }
}

Error SystemKernel::checkSystem(const CoSimSystemSpec& system) const {
  if (system.links.size() > detail::coSimulatedLinkCapacity())
    return makeError("the co-simulation elaborates at most ", detail::coSimulatedLinkCapacity(),
                     " links; the system has ", system.links.size());
  if (system.sharedDramGBps < 0) return makeError("the shared DRAM's bandwidth must not be negative");
  for (const CoSimChipSpec& chip : system.chips)
    if (!(chip.clockGhz > 0)) return makeError("chip '", chip.name, "': the clock must be positive");
  for (const CoSimLinkSpec& link : system.links)
    if (link.a >= system.chips.size() || link.b >= system.chips.size() || link.a == link.b ||
        !(link.bandwidthGBps > 0))
      return makeError("link ", link.a, "-", link.b,
                       ": not a link between two chips with a positive bandwidth");
  return Error::success();
}

Expected<CoSimResult> SystemKernel::run(const CoSimSystemSpec& system,
                                        const std::vector<ChipDriver>& drivers) {
  EMBER_RETURN_IF_ERROR(checkSystem(system));
  if (drivers.size() != system.chips.size())
    return makeError("co-simulation: ", drivers.size(), " drivers for ", system.chips.size(), " chips");
  const auto hostStart = std::chrono::steady_clock::now();
  SystemRun state;
  state.system = &system;
  state.drivers = &drivers;
  state.start = sc_time_stamp().value();
  for (size_t c = 0; c < system.chips.size(); ++c) {
    detail::CoSimChip chip;
    chip.top = c;
    chip.unitsPerCycle = std::max<uint64_t>(1, unitsOf(1.0 / system.chips[c].clockGhz));
    if (system.sharedDramGBps > 0) chip.sharedDram = &sharedDram_;
    state.chips.push_back(chip);
  }
  if (system.sharedDramGBps > 0) sharedDram_.configure(system.sharedDramGBps, unitsPerNanosecond());
  state.hostUnits.assign(system.chips.size(), 0);
  state.inboxes.resize(system.chips.size());
  state.finished.assign(system.chips.size(), false);
  state.stopped.assign(system.chips.size(), false);
  state.errors.resize(system.chips.size());
  for (size_t l = 0; l < system.links.size(); ++l) links_[l]->configure(system.links[l]);
  run_ = &state;
  startEvent_.notify(SC_ZERO_TIME);
  sc_start();
  // Drivers still waiting: a program that deadlocked, or a message never sent.
  std::vector<size_t> stuck;
  for (size_t c = 0; c < state.chips.size(); ++c)
    if (!state.finished[c]) stuck.push_back(c);
  if (!stuck.empty()) {
    detail::abortUnfinishedRuns();
    cancel();
    sc_start();  // unwind: every driver returns with its error
  }
  run_ = nullptr;
  // The first chip that failed by itself; else the first that could not go on.
  for (size_t c = 0; c < state.chips.size(); ++c)
    if (state.errors[c] && !state.stopped[c])
      return state.errors[c].withContext("chip '" + system.chips[c].name + "'");
  if (!stuck.empty())
    return makeError("chip '", system.chips[stuck.front()].name,
                     "' can make no progress: it waits for a transfer no chip sends (deadlock)");
  CoSimResult result = resultOf(system, state);
  result.hostSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - hostStart).count();
  return result;
}

CoSimResult SystemKernel::resultOf(const CoSimSystemSpec& system, const SystemRun& state) const {
  CoSimResult result;
  result.endNs = nanosecondsOf(sc_time_stamp().value() - state.start);
  for (size_t c = 0; c < state.chips.size(); ++c) {
    const detail::CoSimChip& chip = state.chips[c];
    result.chipBusyNs.push_back(nanosecondsOf(chip.busyUnits));
    result.chipHostNs.push_back(nanosecondsOf(state.hostUnits[c]));
    result.programs.push_back(chip.programs);
    result.dramStallCycles.push_back(chip.dramStallCycles);
    result.sharedDramWaitCycles.push_back(chip.sharedDramWaitCycles);
  }
  for (size_t l = 0; l < system.links.size(); ++l) result.links.push_back(links_[l]->stats);
  if (system.sharedDramGBps > 0) {
    result.sharedDramBusyNs = nanosecondsOf(sharedDram_.busyUnits);
    result.sharedDramBytes = sharedDram_.bytes;
  }
  return result;
}

SystemKernel* systemKernel = nullptr;  // created by elaborateKernel, never destroyed
size_t chipCapacity = detail::kMinCoSimulatedChips;
bool kernelElaborated = false;

/// With the simulator mutex held.
Error reserveChips(size_t chips) {
  if (!kernelElaborated) {
    chipCapacity = std::max(chipCapacity, chips);
    return Error::success();
  }
  if (chips <= chipCapacity) return Error::success();
  return makeError("the system has ", chips, " chips but this process co-simulates at most ", chipCapacity,
                   ": SystemC elaborates once per process, and its first simulation elaborated that many "
                   "chips (run the larger system first, or in a process of its own)");
}

}  // namespace

namespace detail {

size_t coSimulatedChipCapacity() { return chipCapacity; }

void SharedDramCalendar::configure(double gbPerSecond, uint64_t unitsPerNanosecond) {
  busy_.clear();
  busyUnits = bytes = transactions = 0;
  unitsPerByte_ = double(unitsPerNanosecond) / gbPerSecond;  // GB/s = bytes per ns
}

uint64_t SharedDramCalendar::holdUnits(uint64_t count) const {
  return uint64_t(std::floor(double(count) * unitsPerByte_));
}

uint64_t SharedDramCalendar::reserve(uint64_t at, uint64_t count) {
  const uint64_t hold = holdUnits(count);
  uint64_t start = at;
  ++transactions;
  bytes += count;
  if (hold == 0) return start;
  for (;;) {  // move past every reservation that overlaps [start, start + hold)
    auto next = busy_.upper_bound(start);
    if (next != busy_.begin() && std::prev(next)->second > start) {
      start = std::prev(next)->second;
      continue;
    }
    if (next != busy_.end() && next->first < start + hold) {
      start = next->second;
      continue;
    }
    break;
  }
  busyUnits += hold;
  uint64_t begin = start, end = start + hold;
  auto next = busy_.lower_bound(end);
  if (next != busy_.end() && next->first == end) {
    end = next->second;
    busy_.erase(next);
  }
  auto after = busy_.upper_bound(begin);
  if (after != busy_.begin() && std::prev(after)->second == begin) {
    std::prev(after)->second = end;
  } else {
    busy_[begin] = end;
  }
  if (busy_.size() > 256) forgetBefore(sc_time_stamp().value());
  return start;
}

void SharedDramCalendar::forgetBefore(uint64_t time) {
  while (!busy_.empty() && busy_.begin()->second <= time) busy_.erase(busy_.begin());
}

std::mutex& simulatorMutex() {
  static std::mutex m;
  return m;
}

void elaborateKernel() {
  static const bool elaborated = [] {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    sc_report_handler::set_actions(SC_INFO, SC_DO_NOTHING);
    kernelElaborated = true;
    createNpuTops();
    systemKernel = new SystemKernel("ember_system");
    sc_start(SC_ZERO_TIME);  // elaborate and park every thread on its first wait
    return true;
  }();
  (void)elaborated;
}

CoSimChip* currentCoSimChip() { return systemKernel ? systemKernel->currentChip() : nullptr; }

}  // namespace detail

Expected<CoSimResult> coSimulate(const CoSimSystemSpec& system, const std::vector<ChipDriver>& drivers) {
  std::lock_guard<std::mutex> lock(detail::simulatorMutex());
  EMBER_RETURN_IF_ERROR(reserveChips(system.chips.size()));
  detail::elaborateKernel();
  return systemKernel->run(system, drivers);
}

Error reserveCoSimulatedChips(size_t chips) {
  std::lock_guard<std::mutex> lock(detail::simulatorMutex());
  return reserveChips(chips);
}

}  // namespace ember::npu
