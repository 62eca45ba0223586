// The slow log and the latency monitor; see monitor.hpp for what is timed and what it costs.
#include "server/features/monitor.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>

#include "server/core/client_info.hpp"
#include "server/core/command.hpp"
#include "server/util/clock.hpp"
#include "server/util/strings_util.hpp"

namespace kvlab::server {
namespace {

// Redis's defaults. Relaxed everywhere: see monitor.hpp, Thread safety.
std::atomic<std::int64_t> g_slower_than_us{10000};
std::atomic<std::int64_t> g_max_len{128};
std::atomic<std::int64_t> g_latency_ms{0};

constexpr std::size_t kMaxArgs = 32;  // arguments kept per entry (Redis's SLOWLOG_ENTRY_MAX_ARGC)
constexpr std::size_t kMaxArgLen = 128;  // bytes kept per argument (SLOWLOG_ENTRY_MAX_STRING)
constexpr std::size_t kSeriesLen = 160;  // samples kept per latency event (LATENCY_TS_LEN)

struct SlowLog {
  std::mutex mu;
  std::deque<SlowlogEntry> entries;  // newest first
  std::uint64_t next_id = 0;
};
SlowLog& slowlog() {
  static SlowLog s;
  return s;
}

struct Series {
  std::string name;
  std::deque<LatencySample> samples;  // oldest first
  std::uint32_t max_ms = 0;
};
struct Latency {
  std::mutex mu;
  std::vector<Series> events;  // a handful ("command", "fast-command"): a vector is enough
};
Latency& latency() {
  static Latency l;
  return l;
}

std::uint64_t coarse_resolution_ns() {
  static const std::uint64_t res = [] {
    timespec ts{};
    clock_getres(CLOCK_MONOTONIC_COARSE, &ts);
    const std::uint64_t r = static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
                            static_cast<std::uint64_t>(ts.tv_nsec);
    return r == 0 ? 1 : r;
  }();
  return res;
}

// The argument as the slow log keeps it: at most kMaxArgLen bytes, then how many were cut.
std::string log_arg(std::string_view a) {
  if (a.size() <= kMaxArgLen) return std::string(a);
  std::string s(a.substr(0, kMaxArgLen));
  s += "... (" + std::to_string(a.size() - kMaxArgLen) + " more bytes)";
  return s;
}

// Which arguments Redis redacts: AUTH's, HELLO's AUTH user and password, and the values of the
// sensitive CONFIG SET parameters.
std::vector<bool> redacted(std::span<const std::string_view> argv) {
  std::vector<bool> r(argv.size(), false);
  if (iequals(argv[0], "auth")) {
    for (std::size_t i = 1; i < argv.size(); ++i) r[i] = true;
  } else if (iequals(argv[0], "hello")) {
    for (std::size_t i = 2; i < argv.size(); ++i) {
      const std::size_t more = argv.size() - 1 - i;
      if (iequals(argv[i], "auth") && more >= 2) {
        r[i + 1] = r[i + 2] = true;
        i += 2;
      } else if (iequals(argv[i], "setname") && more >= 1) {
        ++i;
      } else {
        break;
      }
    }
  } else if (argv.size() >= 2 && iequals(argv[0], "config") && iequals(argv[1], "set")) {
    for (std::size_t i = 2; i + 1 < argv.size(); i += 2)
      if (iequals(argv[i], "masterauth") || iequals(argv[i], "masteruser") ||
          iequals(argv[i], "requirepass"))
        r[i + 1] = true;
  }
  return r;
}

// One slow log entry for argv, sent by the client at addr named name.
void slowlog_push(std::span<const std::string_view> argv, std::string addr, std::string name,
                  std::uint64_t duration_us) {
  SlowlogEntry e;
  e.duration_us = duration_us;
  e.time_s = wall_ms() / 1000;
  const std::size_t kept = std::min(argv.size(), kMaxArgs);
  const std::vector<bool> hide = redacted(argv);
  e.argv.reserve(kept);
  for (std::size_t i = 0; i < kept; ++i) {
    if (i == kMaxArgs - 1 && argv.size() > kMaxArgs) {
      e.argv.push_back("... (" + std::to_string(argv.size() - kept + 1) + " more arguments)");
    } else {
      e.argv.push_back(hide[i] ? std::string("(redacted)") : log_arg(argv[i]));
    }
  }
  e.addr = std::move(addr);
  e.name = std::move(name);
  const std::int64_t max_len = g_max_len.load(std::memory_order_relaxed);
  SlowLog& s = slowlog();
  std::lock_guard<std::mutex> lock(s.mu);
  e.id = s.next_id++;
  s.entries.push_front(std::move(e));
  while (static_cast<std::int64_t>(s.entries.size()) > max_len) s.entries.pop_back();
}

void latency_add(std::string_view event, std::uint64_t ms) {
  const std::int64_t now = wall_ms() / 1000;
  const auto v = static_cast<std::uint32_t>(std::min<std::uint64_t>(ms, 0xffffffffu));
  Latency& l = latency();
  std::lock_guard<std::mutex> lock(l.mu);
  auto it = std::find_if(l.events.begin(), l.events.end(),
                         [&](const Series& s) { return s.name == event; });
  if (it == l.events.end()) {
    l.events.push_back(Series{std::string(event), {}, 0});
    it = l.events.end() - 1;
  }
  it->max_ms = std::max(it->max_ms, v);
  // One sample per second: a second spike in the same second keeps the larger one.
  if (!it->samples.empty() && it->samples.back().time_s == now) {
    it->samples.back().latency_ms = std::max(it->samples.back().latency_ms, v);
    return;
  }
  it->samples.push_back({now, v});
  if (it->samples.size() > kSeriesLen) it->samples.pop_front();
}

}  // namespace

void set_slowlog_slower_than(std::int64_t us) {
  g_slower_than_us.store(us, std::memory_order_relaxed);
}
void set_slowlog_max_len(std::int64_t n) {
  g_max_len.store(n, std::memory_order_relaxed);
}
void set_latency_threshold_ms(std::int64_t ms) {
  g_latency_ms.store(ms, std::memory_order_relaxed);
}
std::int64_t slowlog_slower_than() {
  return g_slower_than_us.load(std::memory_order_relaxed);
}
std::int64_t latency_threshold_ms() {
  return g_latency_ms.load(std::memory_order_relaxed);
}

MonitorMode monitor_mode() {
  MonitorMode m;
  const std::int64_t slow = g_slower_than_us.load(std::memory_order_relaxed);
  const std::int64_t lat = g_latency_ms.load(std::memory_order_relaxed);
  const std::int64_t lat_us = lat > INT64_MAX / 1000 ? INT64_MAX : lat * 1000;
  if (slow < 0 && lat <= 0) return m;
  m.on = true;
  m.min_us = slow < 0 ? lat_us : lat <= 0 ? slow : std::min(slow, lat_us);
  m.coarse = static_cast<std::uint64_t>(m.min_us) >= 2 * coarse_resolution_ns() / 1000;
  return m;
}

std::uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t coarse_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

void monitor_command(CommandContext& ctx, const CommandSpec& cmd, std::uint64_t duration_us,
                     const ClientInfo* client) {
  const std::int64_t slow = g_slower_than_us.load(std::memory_order_relaxed);
  if (slow >= 0 && duration_us >= static_cast<std::uint64_t>(slow) && cmd.name != "exec") {
    // The name's only writer is this connection's own worker (CLIENT SETNAME, HELLO, RESET run
    // here), so reading it on this thread without the registry lock races with no write.
    slowlog_push(ctx.argv, client ? client->addr : std::string(),
                 client ? client->name : std::string(), duration_us);
  }
  const std::int64_t lat = g_latency_ms.load(std::memory_order_relaxed);
  if (lat > 0 && duration_us / 1000 >= static_cast<std::uint64_t>(lat))
    latency_add((cmd.flags & kFast) ? "fast-command" : "command", duration_us / 1000);
}

void monitor_unblocked(std::span<const std::string> argv, std::string addr, std::string name,
                       std::uint64_t duration_us) {
  const std::int64_t slow = g_slower_than_us.load(std::memory_order_relaxed);
  if (slow >= 0 && duration_us >= static_cast<std::uint64_t>(slow)) {
    const std::vector<std::string_view> views(argv.begin(), argv.end());
    slowlog_push(views, std::move(addr), std::move(name), duration_us);
  }
  const std::int64_t lat = g_latency_ms.load(std::memory_order_relaxed);
  if (lat > 0 && duration_us / 1000 >= static_cast<std::uint64_t>(lat))
    latency_add("command-unblocking", duration_us / 1000);
}

void monitor_event(std::string_view event, std::uint64_t duration_ms) {
  const std::int64_t lat = g_latency_ms.load(std::memory_order_relaxed);
  if (lat > 0 && duration_ms >= static_cast<std::uint64_t>(lat)) latency_add(event, duration_ms);
}

std::vector<SlowlogEntry> slowlog_get(std::int64_t count) {
  SlowLog& s = slowlog();
  std::lock_guard<std::mutex> lock(s.mu);
  const std::size_t n =
      count < 0 ? s.entries.size() : std::min(s.entries.size(), static_cast<std::size_t>(count));
  return {s.entries.begin(), s.entries.begin() + static_cast<std::ptrdiff_t>(n)};
}

std::size_t slowlog_len() {
  SlowLog& s = slowlog();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.entries.size();
}

void slowlog_reset() {
  SlowLog& s = slowlog();
  std::lock_guard<std::mutex> lock(s.mu);
  s.entries.clear();  // ids go on, as in Redis
}

std::vector<LatencyEvent> latency_events() {
  Latency& l = latency();
  std::lock_guard<std::mutex> lock(l.mu);
  std::vector<LatencyEvent> out;
  for (const Series& s : l.events)
    out.push_back({s.name, {s.samples.begin(), s.samples.end()}, s.max_ms});
  return out;
}

std::size_t latency_reset(const std::vector<std::string_view>& names) {
  Latency& l = latency();
  std::lock_guard<std::mutex> lock(l.mu);
  if (names.empty()) {
    const std::size_t n = l.events.size();
    l.events.clear();
    return n;
  }
  std::size_t n = 0;
  for (std::string_view name : names) {
    auto it = std::find_if(l.events.begin(), l.events.end(),
                           [&](const Series& s) { return iequals(s.name, name); });
    if (it == l.events.end()) continue;
    l.events.erase(it);
    ++n;
  }
  return n;
}

}  // namespace kvlab::server
