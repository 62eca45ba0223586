// The slow log and the latency monitor (SLOWLOG, LATENCY; Redis 7.0 semantics), and the latency
// histogram buckets of LATENCY HISTOGRAM.
//
// What is timed, and what it costs. INFO commandstats times commands per batch (dispatch.cpp:
// two clock reads per batch, the time shared among its commands). A slow log needs one command's
// own time, so while a monitor is on (slowlog-log-slower-than >= 0, Redis's default 10000 us, or
// latency-monitor-threshold > 0) dispatch also times each command it runs, as follows:
//   - a command not flagged fast (KEYS, SORT, EVAL, LRANGE...) or any command while the smallest
//     threshold is below 2 ticks of the coarse clock: two CLOCK_MONOTONIC reads around it;
//   - a fast command (GET, SET, INCR...) while every threshold is at least 2 ticks: two
//     CLOCK_MONOTONIC_COARSE reads (several times cheaper; resolution one tick, as clock_getres
//     reports it; figures in papers/server-choices.md). Such a command is reported with its duration rounded to ticks; it cannot be
//     reported when it took under threshold - 1 tick, and is when it took threshold + 1 tick or
//     more. An O(1) command that slow is a stall (preemption, a page fault), which is what the
//     default configuration is there to catch.
//   - an admin command (CONFIG SET...) always, with CLOCK_MONOTONIC: it may change a threshold,
//     and Redis judges a command by the thresholds in force after it ran.
// Nothing shared is written unless a command reaches a threshold: the thresholds are read once per
// batch (relaxed loads), the slow log and the latency series are written under their own mutexes
// only when an entry is recorded. Measured with redis-benchmark -P 30 (SET/GET, 20 clients, two
// workers) on the shared 2-core machine, default slowlog vs slowlog off: within the run-to-run
// noise (0.88-1.05 M vs 0.95-1.12 M SET/s); logging every command (threshold 0): about -25 %.
//
// Like Redis: EXEC is not logged but the commands it runs are; commands a script runs are not
// (only the EVAL/FCALL); AUTH and HELLO AUTH passwords and the values of CONFIG SET masterauth,
// masteruser and requirepass are "(redacted)"; an entry keeps at most 32 arguments (the 32nd
// says "... (N more arguments)") of at most 128 bytes each ("... (N more bytes)").
//
// Thread safety: the thresholds are atomics (relaxed: each is an independent setting, and a
// command timed against the previous value is as if it had run just before CONFIG SET); the slow
// log and the latency series each live under one mutex.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvlab::server {

struct CommandContext;
struct CommandSpec;
struct ClientInfo;

// ---- configuration (CONFIG SET applies these; config.cpp) ----
void set_slowlog_slower_than(std::int64_t us);  // -1 disables the slow log
void set_slowlog_max_len(std::int64_t n);
void set_latency_threshold_ms(std::int64_t ms);  // 0 disables the latency monitor
std::int64_t slowlog_slower_than();
std::int64_t latency_threshold_ms();

// ---- the per-command timing hook (net/dispatch.cpp) ----

// How dispatch times the commands of one batch: decided at the batch's start.
struct MonitorMode {
  bool on = false;          // some monitor is enabled
  bool coarse = false;      // fast commands may use the coarse clock
  std::int64_t min_us = 0;  // the smallest enabled threshold, in microseconds
};
MonitorMode monitor_mode();

std::uint64_t monotonic_ns();
std::uint64_t coarse_ns();

// Reports one command that took duration_us: logs it in the slow log and adds a latency sample
// ("command" or "fast-command") when it reaches their thresholds. Cheap when it reaches neither.
// client: the connection that ran it (its address and name go into the slow log), on its worker.
void monitor_command(CommandContext& ctx, const CommandSpec& cmd, std::uint64_t duration_us,
                     const ClientInfo* client);

// A blocked command that a push served (blocking.cpp), reported by the serving thread: logs it
// in the slow log as its client sent it, duration_us being the time serving it took, and adds a
// "command-unblocking" latency sample, when they reach their thresholds. Redis 7.0 logs a
// blocking command when it is served, not when it blocks (nor when it times out or CLIENT
// UNBLOCK ends it), so dispatch does not report a command that blocked.
void monitor_unblocked(std::span<const std::string> argv, std::string addr, std::string name,
                       std::uint64_t duration_us);
// A latency sample of a server event that is not a command ("expire-cycle"), recorded when it
// reaches latency-monitor-threshold.
void monitor_event(std::string_view event, std::uint64_t duration_ms);

// ---- the slow log ----
struct SlowlogEntry {
  std::uint64_t id;
  std::int64_t time_s;  // unix time when logged
  std::uint64_t duration_us;
  std::vector<std::string> argv;  // truncated and redacted as Redis does
  std::string addr, name;
};
// The newest `count` entries, newest first (count < 0: all).
std::vector<SlowlogEntry> slowlog_get(std::int64_t count);
std::size_t slowlog_len();
void slowlog_reset();

// ---- the latency monitor ----
struct LatencySample {
  std::int64_t time_s;
  std::uint32_t latency_ms;
};
struct LatencyEvent {
  std::string name;
  std::vector<LatencySample> samples;  // oldest first; at most 160, one per second
  std::uint32_t max_ms;                // all-time maximum since the last reset
};
std::vector<LatencyEvent> latency_events();  // in the order the events first occurred
// Resets the named events (all when names is empty); returns how many existed.
std::size_t latency_reset(const std::vector<std::string_view>& names);

// ---- latency histograms (LATENCY HISTOGRAM) ----
// Redis 7.0 records each call in an HDR histogram (2 significant digits) and reports cumulative
// counts at powers of two from 1024 ns; bucket k holds the durations up to the highest value
// equivalent to 1024 * 2^k ns at that precision, 1024 * 2^k + 2^(k+3) - 1 ns, and is reported as
// that value in microseconds (1, 2, 4, 8, 16, 33, 66...). Durations are whole microseconds and
// at most 1 s, as Redis records them.
inline constexpr std::size_t kLatencyBuckets = 21;
inline std::size_t latency_bucket(std::uint64_t ns) {
  std::uint64_t v = ns / 1000 * 1000;
  if (v == 0) v = 1;
  for (std::size_t k = 0; k < kLatencyBuckets; ++k)
    if (v <= (1024ull << k) + (8ull << k) - 1) return k;
  return kLatencyBuckets - 1;
}
inline std::uint64_t latency_bucket_usec(std::size_t k) {
  return ((1024ull << k) + (8ull << k) - 1) / 1000;
}
static_assert((1024ull << 20) + (8ull << 20) - 1 >= 1000000000ull, "the last bucket holds 1 s");

}  // namespace kvlab::server
