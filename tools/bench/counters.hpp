// Hardware and software event counters per operation, through perf_event_open(2), for
// `kvlab bench --counters` (the benchmark threads) and `kvlab load --server-counters PID` (every
// thread of a server process).
//
// Events: cycles, instructions, last-level-cache read misses, L1 data read misses and branch
// misses (the hardware PMU), and task-clock, context switches, CPU migrations and page faults
// (the kernel's software events). A virtual machine often hides the PMU: then the hardware
// events cannot be opened, `note` says so in one line and the software events are reported
// alone. Each event is opened on its own (not as a group: a group cannot inherit into threads
// created later), so the kernel may multiplex hardware events when there are more than
// counters; every value is scaled by time_enabled / time_running, as perf stat does.
//
// Thread safety: one CounterSet per measurement, used by one thread.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kvlab::bench {

enum class Event {
  kCycles,
  kInstructions,
  kLlcMisses,
  kL1dMisses,
  kBranchMisses,
  kTaskClockNs,
  kContextSwitches,
  kCpuMigrations,
  kPageFaults,
};
inline constexpr std::size_t kEventCount = 9;
inline constexpr std::size_t kFirstSoftwareEvent = 5;
// The JSON names, in Event order.
inline constexpr std::array<const char*, kEventCount> kEventNames = {
    "cycles",        "instructions",     "llc_misses",     "l1d_misses", "branch_misses",
    "task_clock_ns", "context_switches", "cpu_migrations", "page_faults"};

// One counter read with PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING.
struct RawRead {
  std::uint64_t value = 0, time_enabled = 0, time_running = 0;
};
// The count estimated over the whole time the event was enabled (multiplexing scaled out);
// 0 when it never ran.
double scaled(const RawRead& r);

struct CounterValues {
  std::array<bool, kEventCount> have{};
  std::array<double, kEventCount> total{};  // scaled, summed over threads
  bool any() const;
  bool hardware() const;  // at least one hardware event counted
  // total / ops; negative when the event is missing or ops == 0.
  double per_op(Event e, double ops) const;
  // Instructions per cycle; negative when either is missing.
  double ipc() const;
  CounterValues& operator+=(const CounterValues& o);
};

// Values per operation as JSON: {"cycles": 812.5, ..., "ipc": 1.2} with null for missing events.
std::string counters_json(const CounterValues& v, double ops);

class CounterSet {
 public:
  CounterSet() = default;
  ~CounterSet();
  CounterSet(const CounterSet&) = delete;
  CounterSet& operator=(const CounterSet&) = delete;

  // Counts this process from now on, including threads it creates later (inherit). False when
  // not even a software event could be opened (*note says why).
  bool open_self(std::string* note);
  // Counts every thread of process pid (the threads that exist now). False as above.
  bool open_process(pid_t pid, std::string* note);

  void start();          // reset and enable
  CounterValues stop();  // disable and read

 private:
  bool open_for(pid_t tid, bool inherit, std::string* note);
  struct Fd {
    int fd;
    Event event;
  };
  std::vector<Fd> fds_;
};

}  // namespace kvlab::bench
