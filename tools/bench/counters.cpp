#include "tools/bench/counters.hpp"

#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kvlab::bench {
namespace {

struct EventSpec {
  Event event;
  std::uint32_t type;
  std::uint64_t config;
};

constexpr std::uint64_t cache_read_miss(std::uint64_t cache) {
  return cache | (std::uint64_t{PERF_COUNT_HW_CACHE_OP_READ} << 8) |
         (std::uint64_t{PERF_COUNT_HW_CACHE_RESULT_MISS} << 16);
}

constexpr EventSpec kSpecs[kEventCount] = {
    {Event::kCycles, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {Event::kInstructions, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {Event::kLlcMisses, PERF_TYPE_HW_CACHE, cache_read_miss(PERF_COUNT_HW_CACHE_LL)},
    {Event::kL1dMisses, PERF_TYPE_HW_CACHE, cache_read_miss(PERF_COUNT_HW_CACHE_L1D)},
    {Event::kBranchMisses, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {Event::kTaskClockNs, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {Event::kContextSwitches, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {Event::kCpuMigrations, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {Event::kPageFaults, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
};

int perf_open(const EventSpec& s, pid_t tid, bool inherit, bool exclude_kernel) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = s.type;
  a.config = s.config;
  a.disabled = 1;
  a.inherit = inherit ? 1 : 0;
  a.exclude_kernel = exclude_kernel ? 1 : 0;
  a.exclude_hv = 1;
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return static_cast<int>(::syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

}  // namespace

double scaled(const RawRead& r) {
  if (r.time_running == 0) return 0;
  if (r.time_running >= r.time_enabled) return static_cast<double>(r.value);
  return static_cast<double>(r.value) * static_cast<double>(r.time_enabled) /
         static_cast<double>(r.time_running);
}

bool CounterValues::any() const {
  for (const bool h : have)
    if (h) return true;
  return false;
}

bool CounterValues::hardware() const {
  for (std::size_t i = 0; i < kFirstSoftwareEvent; ++i)
    if (have[i]) return true;
  return false;
}

double CounterValues::per_op(Event e, double ops) const {
  const auto i = static_cast<std::size_t>(e);
  if (!have[i] || !(ops > 0)) return -1;
  return total[i] / ops;
}

double CounterValues::ipc() const {
  const auto c = static_cast<std::size_t>(Event::kCycles);
  const auto n = static_cast<std::size_t>(Event::kInstructions);
  if (!have[c] || !have[n] || !(total[c] > 0)) return -1;
  return total[n] / total[c];
}

CounterValues& CounterValues::operator+=(const CounterValues& o) {
  for (std::size_t i = 0; i < kEventCount; ++i) {
    have[i] = have[i] || o.have[i];
    total[i] += o.total[i];
  }
  return *this;
}

std::string counters_json(const CounterValues& v, double ops) {
  std::string o = "{";
  char b[64];
  for (std::size_t i = 0; i < kEventCount; ++i) {
    const double x = v.per_op(static_cast<Event>(i), ops);
    if (x < 0) {
      std::snprintf(b, sizeof b, "null");
    } else {
      std::snprintf(b, sizeof b, "%.4f", x);
    }
    o += std::string(i ? ", " : "") + "\"" + kEventNames[i] + "\": " + b;
  }
  const double ipc = v.ipc();
  if (ipc < 0) {
    o += ", \"ipc\": null";
  } else {
    std::snprintf(b, sizeof b, "%.3f", ipc);
    o += ", \"ipc\": " + std::string(b);
  }
  return o + "}";
}

CounterSet::~CounterSet() {
  for (const auto& f : fds_) ::close(f.fd);
}

bool CounterSet::open_for(pid_t tid, bool inherit, std::string* note) {
  std::string hw_error;
  bool any = false;
  for (const auto& s : kSpecs) {
    int fd = perf_open(s, tid, inherit, false);
    // perf_event_paranoid >= 2 lets an unprivileged process count user space only.
    if (fd < 0 && errno == EACCES) fd = perf_open(s, tid, inherit, true);
    if (fd < 0) {
      if (s.type != PERF_TYPE_SOFTWARE && hw_error.empty()) hw_error = std::strerror(errno);
      continue;
    }
    fds_.push_back({fd, s.event});
    any = true;
  }
  if (!hw_error.empty() && note->empty()) {
    *note = "hardware counters unavailable here (perf_event_open: " + hw_error +
            "; a VM often hides the PMU): software events only";
  }
  if (!any && note->empty()) *note = "perf_event_open failed: " + std::string(std::strerror(errno));
  return any;
}

bool CounterSet::open_self(std::string* note) {
  return open_for(0, true, note);
}

bool CounterSet::open_process(pid_t pid, std::string* note) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return *note = "no process " + std::to_string(pid), false;
  bool any = false;
  while (const dirent* e = ::readdir(d)) {
    const long tid = std::strtol(e->d_name, nullptr, 10);
    if (tid > 0) any = open_for(static_cast<pid_t>(tid), false, note) || any;
  }
  ::closedir(d);
  return any;
}

void CounterSet::start() {
  for (const auto& f : fds_) {
    ::ioctl(f.fd, PERF_EVENT_IOC_RESET, 0);
    ::ioctl(f.fd, PERF_EVENT_IOC_ENABLE, 0);
  }
}

CounterValues CounterSet::stop() {
  CounterValues v;
  for (const auto& f : fds_) ::ioctl(f.fd, PERF_EVENT_IOC_DISABLE, 0);
  for (const auto& f : fds_) {
    RawRead r;
    std::uint64_t buf[3];
    if (::read(f.fd, buf, sizeof buf) != static_cast<ssize_t>(sizeof buf)) continue;
    r.value = buf[0];
    r.time_enabled = buf[1];
    r.time_running = buf[2];
    if (r.time_enabled > 0 && r.time_running == 0) continue;  // never scheduled: no estimate
    const auto i = static_cast<std::size_t>(f.event);
    v.have[i] = true;
    v.total[i] += scaled(r);
  }
  return v;
}

}  // namespace kvlab::bench
