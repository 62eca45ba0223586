// perf_event_open counters (tools/bench/counters.hpp): the arithmetic from raw reads to values
// per operation (multiplexing scaled out, summed over threads, IPC), checked on recorded reads;
// and the software events counted live on this machine (task-clock of a 50 ms spin, the page
// faults of touching 1,024 fresh pages). Hardware events are checked live only where the PMU is
// exposed; elsewhere the note must say that they are missing.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "tools/bench/counters.hpp"

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <string>

using namespace kvlab::bench;

TEST_CASE("a multiplexed count is scaled by enabled over running time, as perf stat does") {
  // Reads of the shape PERF_FORMAT_TOTAL_TIME_ENABLED | _RUNNING returns: the LLC-miss counter
  // ran for 40 % of the 2.5 s it was enabled.
  CHECK(scaled({1200000, 2500000000, 1000000000}) == doctest::Approx(3000000));
  CHECK(scaled({777, 5000, 5000}) == 777);  // never multiplexed
  CHECK(scaled({777, 5000, 5001}) == 777);  // rounding: running a hair above enabled
  CHECK(scaled({0, 5000, 0}) == 0);         // never scheduled
}

TEST_CASE("values per operation, IPC and the sum over threads") {
  CounterValues a, b;
  const auto put = [](CounterValues& v, Event e, double x) {
    v.have[static_cast<std::size_t>(e)] = true;
    v.total[static_cast<std::size_t>(e)] = x;
  };
  // Two threads of one run: 2.0e9 and 1.6e9 cycles, 3.0e9 and 2.4e9 instructions, 4e6 operations.
  put(a, Event::kCycles, 2.0e9);
  put(a, Event::kInstructions, 3.0e9);
  put(b, Event::kCycles, 1.6e9);
  put(b, Event::kInstructions, 2.4e9);
  put(b, Event::kTaskClockNs, 1.0e9);
  a += b;
  CHECK(a.per_op(Event::kCycles, 4e6) == doctest::Approx(900));
  CHECK(a.per_op(Event::kInstructions, 4e6) == doctest::Approx(1350));
  CHECK(a.ipc() == doctest::Approx(1.5));
  CHECK(a.per_op(Event::kTaskClockNs, 4e6) == doctest::Approx(250));
  CHECK(a.per_op(Event::kLlcMisses, 4e6) < 0);  // not counted: missing, not zero
  CHECK(a.per_op(Event::kCycles, 0) < 0);
  CHECK(a.hardware());
  const std::string j = counters_json(a, 4e6);
  CHECK(j.find("\"cycles\": 900.0000") != std::string::npos);
  CHECK(j.find("\"llc_misses\": null") != std::string::npos);
  CHECK(j.find("\"ipc\": 1.500") != std::string::npos);
  CounterValues sw;
  put(sw, Event::kPageFaults, 10);
  CHECK(!sw.hardware());
  CHECK(counters_json(sw, 10).find("\"ipc\": null") != std::string::npos);
}

TEST_CASE("software events count this process live: task-clock and page faults") {
  CounterSet set;
  std::string note;
  REQUIRE(set.open_self(&note));
  set.start();
  // 50 ms of CPU on this thread.
  const auto t0 = std::chrono::steady_clock::now();
  volatile std::uint64_t spin = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(50)) spin = spin + 1;
  // 1,024 fresh anonymous pages, each touched once: one minor fault per page.
  const long page = ::sysconf(_SC_PAGESIZE);
  const std::size_t bytes = static_cast<std::size_t>(page) * 1024;
  void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  for (std::size_t i = 0; i < bytes; i += static_cast<std::size_t>(page))
    static_cast<volatile char*>(mem)[i] = 1;
  const CounterValues v = set.stop();
  ::munmap(mem, bytes);
  const double task_ms = v.per_op(Event::kTaskClockNs, 1) / 1e6;
  const double faults = v.per_op(Event::kPageFaults, 1);
  MESSAGE("task-clock " << task_ms << " ms, page faults " << faults << ", note: " << note);
  // On a busy machine the spin may be descheduled: task-clock is CPU time, at most the wall
  // time, and at least a fair share of it.
  CHECK(task_ms > 10);
  CHECK(task_ms < 200);
  CHECK(faults >= 1024);
  CHECK(faults < 1024 * 4);
  CHECK(v.per_op(Event::kContextSwitches, 1) >= 0);
  if (v.hardware()) {
    CHECK(v.per_op(Event::kCycles, 1) > 1e6);
    CHECK(v.per_op(Event::kInstructions, 1) > 1e6);
  } else {
    CHECK(note.find("hardware counters unavailable") != std::string::npos);
  }
}

TEST_CASE("another process's threads are counted; a missing process is an error") {
  CounterSet set;
  std::string note;
  CHECK(set.open_process(::getpid(), &note));
  CounterSet none;
  std::string why;
  CHECK(!none.open_process(999999999, &why));
  CHECK(why.find("no process") != std::string::npos);
}
