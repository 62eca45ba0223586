// Introspection commands that tools read: SLOWLOG, LATENCY and MEMORY (Redis 7.0 replies).
//
// The slow log and latency monitor themselves (what is timed, how, and their locks) live in
// server/features/monitor.{hpp,cpp}; this file formats them.
//
// MEMORY USAGE is kvlab's own estimate of the bytes a key costs in kvlab, not Redis's figure
// (kvlab has no listpacks or intsets; see memory_usage_estimate()). MEMORY STATS uses Redis's
// field names; a field for something kvlab does not have (replication backlog, AOF buffer,
// cluster links) is 0, which is what it costs here.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "server/util/memory.hpp"
#include "server/commands/args.hpp"
#include "server/commands/common.hpp"
#include "server/commands/containers.hpp"
#include "server/data/stream.hpp"
#include "server/data/set_types.hpp"
#include "server/data/value_types.hpp"
#include "server/features/monitor.hpp"

namespace kvlab::server {
namespace {

void reply_lines(CommandContext& ctx, std::initializer_list<std::string_view> lines) {
  ctx.reply.array(lines.size());
  for (std::string_view l : lines) ctx.reply.simple(l);
}

void container_without_sub(CommandContext& ctx) {
  // Only reached with argc == 1, which dispatch() rejects by arity; kept for COMMAND output.
  ctx.reply.error(err::wrong_arity(lower_name(ctx.arg(0))));
}

// ---- SLOWLOG ----

void slowlog_get_cmd(CommandContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.reply.error(err::subcommand_syntax("slowlog", ctx.arg(1)));
    return;
  }
  std::int64_t count = 10;
  if (ctx.argc() == 3 && (!parse_i64(ctx.arg(2), &count) || count < -1)) {
    ctx.reply.error(err::kCountAtLeastMinusOne);
    return;
  }
  const std::vector<SlowlogEntry> entries = slowlog_get(count);
  ctx.reply.array(entries.size());
  for (const SlowlogEntry& e : entries) {
    ctx.reply.array(6);
    ctx.reply.integer(static_cast<std::int64_t>(e.id));
    ctx.reply.integer(e.time_s);
    ctx.reply.integer(static_cast<std::int64_t>(e.duration_us));
    ctx.reply.array(e.argv.size());
    for (const std::string& a : e.argv) ctx.reply.bulk(a);
    ctx.reply.bulk(e.addr);
    ctx.reply.bulk(e.name);
  }
}

void slowlog_len_cmd(CommandContext& ctx) {
  ctx.reply.integer(static_cast<std::int64_t>(slowlog_len()));
}

void slowlog_reset_cmd(CommandContext& ctx) {
  slowlog_reset();
  ctx.reply.ok();
}

void slowlog_help_cmd(CommandContext& ctx) {
  reply_lines(ctx,
              {
                  "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                  "GET [<count>]",
                  "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
                  "    Entries are made of:",
                  "    id, timestamp, time in microseconds, arguments array, client IP and port,",
                  "    client name",
                  "LEN",
                  "    Return the length of the slowlog.",
                  "RESET",
                  "    Reset the slowlog.",
                  "HELP",
                  "    Prints this help.",
              });
}

// ---- LATENCY ----

// Redis reads event names as C strings: a name ends at its first NUL byte.
std::string_view event_arg(std::string_view s) {
  return s.substr(0, s.find('\0'));
}

const LatencyEvent* find_event(const std::vector<LatencyEvent>& events, std::string_view name) {
  for (const LatencyEvent& e : events)
    if (e.name == name) return &e;
  return nullptr;
}

void latency_latest_cmd(CommandContext& ctx) {
  const std::vector<LatencyEvent> events = latency_events();
  ctx.reply.array(events.size());
  for (const LatencyEvent& e : events) {
    ctx.reply.array(4);
    ctx.reply.bulk(e.name);
    ctx.reply.integer(e.samples.empty() ? 0 : e.samples.back().time_s);
    ctx.reply.integer(e.samples.empty() ? 0 : e.samples.back().latency_ms);
    ctx.reply.integer(e.max_ms);
  }
}

void latency_history_cmd(CommandContext& ctx) {
  const std::vector<LatencyEvent> events = latency_events();
  const LatencyEvent* e = find_event(events, event_arg(ctx.arg(2)));
  if (e == nullptr) {
    ctx.reply.array(0);
    return;
  }
  ctx.reply.array(e->samples.size());
  for (const LatencySample& s : e->samples) {
    ctx.reply.array(2);
    ctx.reply.integer(s.time_s);
    ctx.reply.integer(s.latency_ms);
  }
}

void latency_reset_cmd(CommandContext& ctx) {
  std::vector<std::string_view> names;
  for (std::size_t i = 2; i < ctx.argc(); ++i) names.push_back(event_arg(ctx.arg(i)));
  ctx.reply.integer(static_cast<std::int64_t>(latency_reset(names)));
}

// "3s", "2m", "1h", "4d": how long ago a sample was taken (the graph's column labels).
std::string ago_label(std::int64_t elapsed) {
  if (elapsed < 60) return std::to_string(elapsed) + "s";
  if (elapsed < 3600) return std::to_string(elapsed / 60) + "m";
  if (elapsed < 86400) return std::to_string(elapsed / 3600) + "h";
  return std::to_string(elapsed / 86400) + "d";
}

// LATENCY GRAPH: a header, an 80-dash rule, then the samples as Redis's sparkline, 80 columns a
// block: each sample is a column 4 rows high whose level (0..11, the sample scaled between the
// lowest and the highest) shows as '_', 'o' or '#' in the row it reaches and '|' below that; a
// blank row, then each column's age ("5s", "2m") written downwards.
void latency_graph_cmd(CommandContext& ctx) {
  const std::vector<LatencyEvent> events = latency_events();
  const LatencyEvent* e = find_event(events, event_arg(ctx.arg(2)));
  if (e == nullptr || e->samples.empty()) {
    ctx.reply.error(err::latency_no_samples(event_arg(ctx.arg(2))));
    return;
  }
  std::uint32_t lo = e->samples.front().latency_ms, hi = lo;
  for (const LatencySample& s : e->samples) {
    lo = std::min(lo, s.latency_ms);
    hi = std::max(hi, s.latency_ms);
  }
  std::string g = e->name + " - high " + std::to_string(hi) + " ms, low " + std::to_string(lo) +
                  " ms (all time high " + std::to_string(e->max_ms) + " ms)\n";
  g += std::string(80, '-') + "\n";
  constexpr int kRows = 4, kLevels = 3 * kRows, kCols = 80;
  static constexpr char kFill[] = "_o#";
  const double span = hi == lo ? 1.0 : static_cast<double>(hi - lo);
  const std::int64_t now = wall_ms() / 1000;
  const std::size_t n = e->samples.size();
  for (std::size_t from = 0; from < n; from += kCols) {
    if (from != 0) g += "\n";
    const std::size_t len = std::min<std::size_t>(kCols, n - from);
    std::vector<int> level(len);
    std::vector<std::string> label(len);
    std::size_t longest = 0;
    for (std::size_t c = 0; c < len; ++c) {
      const LatencySample& s = e->samples[from + c];
      const double scaled = std::floor(static_cast<double>(s.latency_ms - lo) * kLevels) / span;
      level[c] = std::clamp(static_cast<int>(scaled), 0, kLevels - 1);
      label[c] = ago_label(now - s.time_s);
      longest = std::max(longest, label[c].size());
    }
    for (int row = 0; row < kRows; ++row) {
      std::string line(len, ' ');
      for (std::size_t c = 0; c < len; ++c) {
        const int idx = level[c] - (kRows - 1 - row) * 3;
        if (idx >= 3) line[c] = '|';
        if (idx >= 0 && idx < 3) line[c] = kFill[idx];
      }
      g += line + "\n";
    }
    g += std::string(len, ' ') + "\n";
    for (std::size_t i = 0; i < longest; ++i) {
      std::string line(len, ' ');
      for (std::size_t c = 0; c < len; ++c)
        if (i < label[c].size()) line[c] = label[c][i];
      g += line + "\n";
    }
  }
  ctx.reply.verbatim("txt", g);
}

void latency_doctor_cmd(CommandContext& ctx) {
  const std::vector<LatencyEvent> events = latency_events();
  const std::int64_t threshold = latency_threshold_ms();
  std::string r;
  if (events.empty() && threshold == 0) {
    r = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis "
        "instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order "
        "to enable it. If we weren't in a deep space mission I'd suggest to take a look at "
        "https://redis.io/topics/latency-monitor.\n";
    ctx.reply.verbatim("txt", r);
    return;
  }
  bool slowlog_enable = false, slowlog_tune = false, slowlog_inspect = false, scheduler = false,
       large_objects = false;
  const std::int64_t now = wall_ms() / 1000;
  int n = 0;
  for (const LatencyEvent& e : events) {
    if (e.samples.empty()) continue;
    if (++n == 1)
      r += "Dave, I have observed latency spikes in this Redis instance. You don't mind talking "
           "about it, do you Dave?\n\n";
    std::uint64_t sum = 0;
    std::int64_t oldest = e.samples.front().time_s;
    for (const LatencySample& s : e.samples) {
      sum += s.latency_ms;
      oldest = std::min(oldest, s.time_s);
    }
    const std::uint64_t avg = sum / e.samples.size();
    std::uint64_t dev = 0;
    for (const LatencySample& s : e.samples)
      dev += s.latency_ms > avg ? s.latency_ms - avg : avg - s.latency_ms;
    const std::uint64_t mad = dev / e.samples.size();
    std::int64_t period = now - oldest;
    if (period == 0) period = 1;
    char line[512];
    std::snprintf(line, sizeof line,
                  "%d. %s: %zu latency spikes (average %llums, mean deviation %llums, period "
                  "%.2f sec). Worst all time event %lums.",
                  n, e.name.c_str(), e.samples.size(), static_cast<unsigned long long>(avg),
                  static_cast<unsigned long long>(mad),
                  static_cast<double>(period) / static_cast<double>(e.samples.size()),
                  static_cast<unsigned long>(e.max_ms));
    r += line;
    if (e.name == "command") {
      const std::int64_t slower = slowlog_slower_than();
      if (slower < 0) {
        slowlog_enable = true;
      } else if (slower / 1000 > threshold) {
        slowlog_tune = true;
      }
      slowlog_inspect = large_objects = true;
    }
    if (e.name == "fast-command") scheduler = true;
    r += "\n";
  }
  if (n == 0) {
    r += "Dave, no latency spike was observed during the lifetime of this Redis instance, not in "
         "the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, "
         "and think things over.\n";
    ctx.reply.verbatim("txt", r);
    return;
  }
  r += "\nI have a few advices for you:\n\n";
  const std::string ms_us = std::to_string(static_cast<unsigned long long>(threshold) * 1000);
  if (slowlog_enable)
    r += "- There are latency issues with potentially slow commands you are using. Try to enable "
         "the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than " +
         ms_us +
         "'. If the Slow log is disabled Redis is not able to log slow commands execution for "
         "you.\n";
  if (slowlog_tune)
    r += "- Your current Slow Log configuration only logs events that are slower than your "
         "configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than " +
         ms_us + "'.\n";
  if (slowlog_inspect)
    r += "- Check your Slow Log to understand what are the commands you are running which are too "
         "slow to execute. Please check https://redis.io/commands/slowlog for more information.\n";
  if (scheduler)
    r += "- The system is slow to execute Redis code paths not containing system calls. This "
         "usually means the system does not provide Redis CPU time to run for long periods. You "
         "should try to:\n"
         "  1) Lower the system load.\n"
         "  2) Use a computer / VM just for Redis if you are running other software in the same "
         "system.\n"
         "  3) Check if you have a \"noisy neighbour\" problem.\n"
         "  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in "
         "your system.\n"
         "  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, "
         "if you are using Jemalloc. However this may create fragmentation problems.\n";
  if (large_objects)
    r += "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a "
         "blocking operation. If you have very large objects that are often deleted, expired, or "
         "evicted, try to fragment those objects into multiple smaller objects.\n";
  ctx.reply.verbatim("txt", r);
}

// One command's histogram: {calls, histogram_usec: {bucket: cumulative count}}, the buckets with
// calls only (monitor.hpp says how they are drawn).
void reply_histogram(CommandContext& ctx, const char* name, const StatTotals::Cmd& c) {
  ctx.reply.bulk(name);
  ctx.reply.map(2);
  ctx.reply.bulk("calls");
  std::uint64_t total = 0;
  std::size_t used = 0;
  for (std::uint64_t h : c.hist) {
    total += h;
    used += h != 0;
  }
  ctx.reply.integer(static_cast<std::int64_t>(total));
  ctx.reply.bulk("histogram_usec");
  ctx.reply.map(used);
  std::uint64_t cumulative = 0;
  for (std::size_t k = 0; k < kLatencyBuckets; ++k) {
    if (c.hist[k] == 0) continue;
    cumulative += c.hist[k];
    ctx.reply.integer(static_cast<std::int64_t>(latency_bucket_usec(k)));
    ctx.reply.integer(static_cast<std::int64_t>(cumulative));
  }
}

bool has_calls(const StatTotals::Cmd& c) {
  for (std::uint64_t h : c.hist)
    if (h != 0) return true;
  return false;
}

// LATENCY HISTOGRAM [command ...]: every command with calls (and its subcommands), or the named
// ones ("config|get" names a subcommand; a container names its subcommands too).
void latency_histogram_cmd(CommandContext& ctx) {
  const CommandTable& table = CommandTable::instance();
  const StatTotals t = ctx.server.stat_totals();
  std::vector<const CommandSpec*> out;
  auto add = [&](const CommandSpec* c) {
    if (c->stat_id < t.cmd.size() && has_calls(t.cmd[c->stat_id])) out.push_back(c);
    for (const CommandSpec& s : c->subcommands)
      if (s.stat_id < t.cmd.size() && has_calls(t.cmd[s.stat_id])) out.push_back(&s);
  };
  if (ctx.argc() == 2) {
    for (const CommandSpec* c : table.all()) add(c);
  } else {
    for (std::size_t i = 2; i < ctx.argc(); ++i) {
      const std::string_view name = ctx.arg(i);
      const std::size_t bar = name.find('|');
      const CommandSpec* c = table.find(name.substr(0, bar));
      if (c != nullptr && bar != std::string_view::npos) {
        const CommandSpec* s = CommandTable::find_sub(*c, name.substr(bar + 1));
        if (s == nullptr || name.find('|', bar + 1) != std::string_view::npos) continue;
        if (s->stat_id < t.cmd.size() && has_calls(t.cmd[s->stat_id])) out.push_back(s);
        continue;
      }
      if (c != nullptr) add(c);
    }
  }
  ctx.reply.map(out.size());
  for (const CommandSpec* c : out) reply_histogram(ctx, table.full_name(c), t.cmd[c->stat_id]);
}

void latency_help_cmd(CommandContext& ctx) {
  reply_lines(ctx, {
                       "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                       "DOCTOR",
                       "    Return a human readable latency analysis report.",
                       "GRAPH <event>",
                       "    Return an ASCII latency graph for the <event> class.",
                       "HISTORY <event>",
                       "    Return time-latency samples for the <event> class.",
                       "LATEST",
                       "    Return the latest latency samples for all events.",
                       "RESET [<event> ...]",
                       "    Reset latency data of one or more <event> classes.",
                       "    (default: reset all data for all event classes)",
                       "HISTOGRAM [COMMAND ...]",
                       "    Return a cumulative distribution of latencies in the format of a "
                       "histogram for the specified command names.",
                       "    If no commands are specified then all histograms are replied.",
                       "HELP",
                       "    Prints this help.",
                   });
}

// ---- MEMORY ----

// What glibc's malloc takes for a request of n bytes: the request plus its 8-byte header, rounded
// up to 16, at least 32 (x86-64).
std::uint64_t alloc_size(std::uint64_t n) {
  const std::uint64_t c = (n + 8 + 15) & ~std::uint64_t{15};
  return c < 32 ? 32 : c;
}

// A std::string inside a node: its 32-byte object is counted with the node; the heap buffer only
// past the 15 bytes kept inline (libstdc++'s small-string buffer).
std::uint64_t string_heap(std::size_t n) {
  return n <= 15 ? 0 : alloc_size(n + 1);
}

// Averages a sample of up to `samples` elements (0: all) and scales it to `count`, as Redis's
// MEMORY USAGE does for nested values.
template <class It, class F>
std::uint64_t sampled(It begin, It end, std::size_t count, std::int64_t samples, F&& cost) {
  if (count == 0) return 0;
  std::uint64_t sum = 0;
  std::size_t n = 0;
  for (It it = begin; it != end && (samples == 0 || n < static_cast<std::size_t>(samples));
       ++it, ++n)
    sum += cost(*it);
  if (n == 0) return 0;
  return sum * count / n;
}

// MEMORY USAGE's estimate of what a key costs in kvlab, in bytes:
//   key     sizeof(Value) (the 16-byte handle) + 32 (the key's std::string) + its heap buffer +
//           16 (the hash backends' per-entry link and hash) - the same for every backend,
//           an approximation of each one's node;
//   string  the Object: alloc_size(header + bytes);
//   list    the container object + per element a 32-byte std::string in the deque's 512-byte
//           blocks (alloc_size(512) / 16 each) + the string's heap buffer;
//   set     the container + per member a hash node (next pointer, std::string, position: 48 bytes,
//           allocated) + a bucket pointer + the dense-order pointer + the string's heap buffer;
//   hash    the container + per field a node (next pointer, two std::string: 72 bytes, allocated)
//           + a bucket pointer + both strings' heap buffers;
//   zset    the container + per member a skiplist node (header + 1.33 levels of 16 bytes on
//           average at p = 1/4, allocated) + an index node (next pointer, view, node pointer: 32
//           bytes, allocated) + a bucket pointer + a slot pointer + the member's heap buffer.
// Elements are sampled as Redis samples them (SAMPLES, default 5; 0: all). Outside the anonymous
// namespace: maxmemory's baseline sums it over the keyspace (server/features/eviction.cpp).
}  // namespace

std::uint64_t memory_usage_estimate(std::string_view key, const Value& v, std::int64_t samples) {
  std::uint64_t total = sizeof(Value) + 32 + string_heap(key.size()) + 16;
  const Object& o = *v.obj;
  switch (o.type()) {
    case ObjectType::kString:
      return total + alloc_size(sizeof(Object) + o.size());
    case ObjectType::kList: {
      const auto& c = static_cast<const ListObject&>(o);
      const auto& d = c.data;
      return total + alloc_size(sizeof(ListObject)) +
             sampled(d.begin(), d.end(), d.size(), samples, [](const std::string& s) {
               return alloc_size(512) / 16 + string_heap(s.size());
             });
    }
    case ObjectType::kSet: {
      const auto& c = static_cast<const SetObject&>(o);
      const MemberSet& m = c.data;
      if (m.compact())  // one array of integers (index_bytes)
        return total + alloc_size(sizeof(SetObject)) + alloc_size(m.index_bytes());
      std::uint64_t sum = 0;
      const std::size_t n = m.size();
      const std::size_t take = samples == 0 ? n : std::min<std::size_t>(n, samples);
      for (std::size_t i = 0; i < take; ++i)
        sum += sizeof(std::string) + string_heap(m.at(i).size());
      return total + alloc_size(sizeof(SetObject)) + alloc_size(m.index_bytes()) +
             (take == 0 ? 0 : sum * n / take);
    }
    case ObjectType::kHash: {
      const auto& c = static_cast<const HashObject&>(o);
      const HashFields& h = c.data;
      return total + alloc_size(sizeof(HashObject)) + alloc_size(h.index_bytes()) +
             sampled(h.begin(), h.end(), h.size(), samples, [](const auto& kv) {
               return sizeof(kv) + string_heap(kv.first.size()) + string_heap(kv.second.size());
             });
    }
    case ObjectType::kZSet: {
      const auto& c = static_cast<const ZSetObject&>(o);
      const ZSet& z = c.data;
      std::uint64_t sum = 0;
      std::size_t take = 0;
      for (const ZSet::Node* n = z.list().first();
           n != nullptr && (samples == 0 || take < static_cast<std::size_t>(samples));
           n = n->next(), ++take)
        sum += alloc_size(sizeof(ZSet::Node) + 21) + alloc_size(32) + 8 + 8 +
               string_heap(n->member.size());
      return total + alloc_size(sizeof(ZSetObject)) + (take == 0 ? 0 : sum * z.size() / take);
    }
    case ObjectType::kStream: {
      // A map node per entry (48 bytes + its ID) and the entry's vector of field/value strings.
      const auto& c = static_cast<const StreamObject&>(o);
      const auto& e = c.data.entries();
      return total + alloc_size(sizeof(StreamObject)) +
             sampled(e.begin(), e.end(), e.size(), samples, [](const auto& kv) {
               std::uint64_t sz = alloc_size(48 + sizeof(kv.first)) +
                                  alloc_size(kv.second.size() * sizeof(std::string));
               for (const std::string& f : kv.second) sz += string_heap(f.size());
               return sz;
             });
    }
  }
  return total;
}

namespace {

void memory_usage_cmd(CommandContext& ctx) {
  std::int64_t samples = 5;
  ArgParser p(ctx.argv, 3);
  while (!p.done()) {
    if (p.check("samples", 1))
      samples = p.next_int(0, std::numeric_limits<std::int64_t>::max(), err::kSyntax);
    else
      p.fail(err::kSyntax);
  }
  if (p.reply_error(ctx.reply)) return;
  std::uint64_t usage = 0;
  bool found = false;
  // A container is read under its lock (other workers may be changing it); a string is immutable.
  ObjectRef ref;
  std::int64_t expire = 0;
  if (!read_live(
          ctx, ctx.arg(2),
          [&](const Value& v) {
            ref = v.obj;
            expire = v.expire_ms;
          },
          /*touch=*/false)) {  // LOOKUP_NOTOUCH, as Redis
    ctx.reply.null();
    return;
  }
  const Value v{ref, expire};
  if (is_container(*ref)) {
    auto* c = static_cast<ContainerBase*>(ref.mutable_get());
    std::lock_guard<std::mutex> lock(c->mu);
    found = !c->dead.load(std::memory_order_relaxed);
    if (found) usage = memory_usage_estimate(ctx.arg(2), v, samples);
  } else {
    found = true;
    usage = memory_usage_estimate(ctx.arg(2), v, samples);
  }
  if (!found) {
    ctx.reply.null();
    return;
  }
  ctx.reply.integer(static_cast<std::int64_t>(usage));
}

constexpr bool kGlibcMalloc = std::string_view(KVLAB_SERVER_MALLOC) == "libc";

// What the program holds allocated: the same figure as INFO's used_memory (server/util/memory.hpp).
std::uint64_t allocated_now() { return memory::used_bytes(); }

// Taken when the server first initializes this file's statics (before any client connects).
const std::uint64_t g_startup_allocated = allocated_now();
std::atomic<std::uint64_t> g_peak{0};

std::uint64_t note_peak(std::uint64_t now) {
  // relaxed: a statistic; the CAS loop only keeps the maximum.
  std::uint64_t p = g_peak.load(std::memory_order_relaxed);
  while (now > p && !g_peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
  }
  return std::max(p, now);
}

// The figures of MEMORY STATS (and MEMORY DOCTOR).
struct MemoryFigures {
  std::uint64_t peak, total, startup, clients, keys, db_overhead, overhead, dataset, rss;
  std::uint64_t allocated, active, resident;
};

MemoryFigures memory_figures(CommandContext& ctx) {
  MemoryFigures m{};
  m.total = allocated_now();
  m.peak = note_peak(m.total);
  m.startup = std::min(g_startup_allocated, m.total);
  m.rss = memory::rss_bytes();
  // Clients: each connection's input and output buffers (CLIENT LIST's qbuf and omem) plus its
  // Connection object.
  ctx.server.clients().for_each([&](const ClientInfo& c) {
    m.clients += c.qbuf.load(std::memory_order_relaxed) + c.obuf.load(std::memory_order_relaxed) +
                 sizeof(Connection);
  });
  m.keys = ctx.ks.size_approx();
  m.db_overhead = m.keys * (sizeof(Value) + 32 + 16);  // memory_usage_estimate()'s per-key
  m.overhead = m.startup + m.clients + m.db_overhead;
  m.dataset = m.total > m.overhead ? m.total - m.overhead : 0;
  if constexpr (kGlibcMalloc) {
    const struct mallinfo2 mi = mallinfo2();
    m.allocated = mi.uordblks + mi.hblkhd;
    m.active = mi.arena + mi.hblkhd;  // what the heap and the mmapped chunks span
  } else {
    m.allocated = m.active = m.total;
  }
  m.resident = m.rss;
  return m;
}

double ratio(std::uint64_t a, std::uint64_t b) {
  return b == 0 ? 0 : static_cast<double>(a) / static_cast<double>(b);
}
std::int64_t diff(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::int64_t>(a) - static_cast<std::int64_t>(b);
}

void memory_stats_cmd(CommandContext& ctx) {
  const MemoryFigures m = memory_figures(ctx);
  const bool db = m.keys > 0;  // Redis lists a db only when it holds keys
  ctx.reply.map(27 + (db ? 1 : 0));
  auto num = [&](std::string_view name, std::int64_t v) {
    ctx.reply.bulk(name);
    ctx.reply.integer(v);
  };
  auto dbl = [&](std::string_view name, double v) {
    ctx.reply.bulk(name);
    ctx.reply.dbl(v);
  };
  auto u = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
  num("peak.allocated", u(m.peak));
  num("total.allocated", u(m.total));
  num("startup.allocated", u(m.startup));
  num("replication.backlog", 0);
  num("clients.slaves", 0);
  num("clients.normal", u(m.clients));
  num("cluster.links", 0);
  num("aof.buffer", 0);
  num("lua.caches", 0);
  num("functions.caches", 0);
  if (db) {
    ctx.reply.bulk("db.0");
    ctx.reply.map(3);
    num("overhead.hashtable.main", u(m.db_overhead));
    num("overhead.hashtable.expires", 0);  // kvlab keeps the expiry in the Value
    num("overhead.hashtable.slot-to-keys", 0);
  }
  num("overhead.total", u(m.overhead));
  num("keys.count", u(m.keys));
  const std::uint64_t net = m.total > m.startup ? m.total - m.startup : 0;
  num("keys.bytes-per-key", m.keys == 0 ? 0 : u(net / m.keys));
  num("dataset.bytes", u(m.dataset));
  dbl("dataset.percentage", net == 0 ? 0 : 100.0 * ratio(m.dataset, net));
  dbl("peak.percentage", 100.0 * ratio(m.total, m.peak));
  num("allocator.allocated", u(m.allocated));
  num("allocator.active", u(m.active));
  num("allocator.resident", u(m.resident));
  dbl("allocator-fragmentation.ratio", ratio(m.active, m.allocated));
  num("allocator-fragmentation.bytes", diff(m.active, m.allocated));
  dbl("allocator-rss.ratio", ratio(m.resident, m.active));
  num("allocator-rss.bytes", diff(m.resident, m.active));
  dbl("rss-overhead.ratio", ratio(m.rss, m.resident));
  num("rss-overhead.bytes", diff(m.rss, m.resident));
  dbl("fragmentation", ratio(m.rss, m.total));
  num("fragmentation.bytes", diff(m.rss, m.total));
}

void memory_doctor_cmd(CommandContext& ctx) {
  const MemoryFigures m = memory_figures(ctx);
  std::string r;
  // Redis calls an instance using under 5 MB empty; a kvlab-server starts larger (thread stacks,
  // tables), so the same test applies to what it allocated since start-up.
  if (m.total < m.startup + 5u * 1024 * 1024) {
    r = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't "
        "be used in these conditions. Please, leave for your mission on Earth and fill it with "
        "some data. The new Sam and I will be back to our programming as soon as I finished "
        "rebooting.\n";
  } else {
    // kvlab's own findings, in the order Redis checks them.
    std::vector<std::string> issues;
    if (m.peak > m.total * 3 / 2)
      issues.push_back(
          "Peak memory: in the past this instance used more than 150% of the memory it uses now. "
          "The allocator may keep that memory (see the fragmentation figures of MEMORY STATS).");
    if (m.rss > m.total * 14 / 10 && m.rss - m.total > 10u * 1024 * 1024)
      issues.push_back("High fragmentation: the process' resident memory is " +
                       std::to_string(ratio(m.rss, m.total)) +
                       " times what it has allocated. MEMORY PURGE returns free pages to the "
                       "system.");
    if (m.keys > 0 && m.clients / (m.keys + 1) > 0 && m.clients > 200u * 1024 * 1024)
      issues.push_back(
          "Big client buffers: the connections' buffers hold more than 200 MB (CLIENT LIST's "
          "qbuf and omem say which).");
    if (issues.empty()) {
      r = "Hi Sam, I can't find any memory issue in your instance. I can only account for what "
          "occurs on this base.\n";
    } else {
      r = "Sam, I detected a few issues in this Redis instance memory implants:\n\n";
      for (const std::string& s : issues) r += " * " + s + "\n\n";
    }
  }
  ctx.reply.verbatim("txt", r);
}

void memory_malloc_stats_cmd(CommandContext& ctx) {
  if constexpr (kGlibcMalloc) {
    // glibc describes its arenas as XML (malloc_info(3)).
    char* buf = nullptr;
    std::size_t len = 0;
    FILE* f = open_memstream(&buf, &len);
    if (f != nullptr) {
      malloc_info(0, f);
      std::fclose(f);
      ctx.reply.verbatim("txt", std::string_view(buf, len));
      std::free(buf);
      return;
    }
  }
  ctx.reply.verbatim("txt", "Stats not supported for the current allocator");
}

void memory_purge_cmd(CommandContext& ctx) {
  if constexpr (kGlibcMalloc) malloc_trim(0);  // returns free pages at the top and inside arenas
  ctx.reply.ok();
}

void memory_help_cmd(CommandContext& ctx) {
  reply_lines(ctx, {
                       "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                       "DOCTOR",
                       "    Return memory problems reports.",
                       "MALLOC-STATS",
                       "    Return internal statistics report from the memory allocator.",
                       "PURGE",
                       "    Attempt to purge dirty pages for reclamation by the allocator.",
                       "STATS",
                       "    Return information about the memory usage of the server.",
                       "USAGE <key> [SAMPLES <count>]",
                       "    Return memory in bytes used by <key> and its value. Nested values are",
                       "    sampled up to <count> times (default: 5, 0 means sample all).",
                       "HELP",
                       "    Prints this help.",
                   });
}

constexpr std::uint32_t kAdm = kAdmin | kLoading | kStale;

const CommandSpec kSlowlogSubcommands[] = {
    {"get", -2, kAdm, slowlog_get_cmd, 0, 0, 0, "server", "Get the slow log's entries", "[count]",
     "2.2.12", "O(N) where N is the number of entries returned"},
    {"len", 2, kAdm, slowlog_len_cmd, 0, 0, 0, "server", "Get the slow log's length", "", "2.2.12"},
    {"reset", 2, kAdm, slowlog_reset_cmd, 0, 0, 0, "server", "Clear all entries from the slow log",
     "", "2.2.12", "O(N) where N is the number of entries in the slowlog"},
    {"help", 2, kLoading | kStale, slowlog_help_cmd, 0, 0, 0, "server",
     "Show helpful text about the different subcommands", "", "6.2.0"},
};

const CommandSpec kLatencySubcommands[] = {
    {"doctor", 2, kAdm, latency_doctor_cmd, 0, 0, 0, "server",
     "Return a human readable latency analysis report.", "", "2.8.13"},
    {"graph", 3, kAdm, latency_graph_cmd, 0, 0, 0, "server",
     "Return a latency graph for the event.", "event", "2.8.13"},
    {"histogram", -2, kAdm, latency_histogram_cmd, 0, 0, 0, "server",
     "Return the cumulative distribution of latencies of a subset of commands or all.",
     "[command [command ...]]", "7.0.0",
     "O(N) where N is the number of commands with latency information being retrieved."},
    {"history", 3, kAdm, latency_history_cmd, 0, 0, 0, "server",
     "Return timestamp-latency samples for the event.", "event", "2.8.13"},
    {"latest", 2, kAdm, latency_latest_cmd, 0, 0, 0, "server",
     "Return the latest latency samples for all events.", "", "2.8.13"},
    {"reset", -2, kAdm, latency_reset_cmd, 0, 0, 0, "server",
     "Reset latency data for one or more events.", "[event [event ...]]", "2.8.13"},
    {"help", 2, kLoading | kStale, latency_help_cmd, 0, 0, 0, "server",
     "Show helpful text about the different subcommands.", "", "2.8.13"},
};

const CommandSpec kMemorySubcommands[] = {
    {"doctor", 2, 0, memory_doctor_cmd, 0, 0, 0, "server", "Outputs memory problems report", "",
     "4.0.0"},
    {"malloc-stats", 2, 0, memory_malloc_stats_cmd, 0, 0, 0, "server",
     "Show allocator internal stats", "", "4.0.0",
     "Depends on how much memory is allocated, could be slow"},
    {"purge", 2, 0, memory_purge_cmd, 0, 0, 0, "server", "Ask the allocator to release memory", "",
     "4.0.0", "Depends on how much memory is allocated, could be slow"},
    {"stats", 2, 0, memory_stats_cmd, 0, 0, 0, "server", "Show memory usage details", "", "4.0.0"},
    {"usage", -3, kReadOnly, memory_usage_cmd, 2, 2, 1, "server",
     "Estimate the memory usage of a key", "key [SAMPLES count]", "4.0.0",
     "O(N) where N is the number of samples."},
    {"help", 2, kLoading | kStale, memory_help_cmd, 0, 0, 0, "server",
     "Show helpful text about the different subcommands", "", "4.0.0"},
};

const CommandSpec kIntrospectionCommands[] = {
    {"slowlog", -2, 0, container_without_sub, 0, 0, 0, "server",
     "A container for slow log commands", "", "2.2.12", "Depends on subcommand.",
     kSlowlogSubcommands},
    {"latency", -2, 0, container_without_sub, 0, 0, 0, "server",
     "A container for latency diagnostics commands", "", "2.8.13", "Depends on subcommand.",
     kLatencySubcommands},
    {"memory", -2, 0, container_without_sub, 0, 0, 0, "server",
     "A container for memory diagnostics commands", "", "4.0.0", "Depends on subcommand.",
     kMemorySubcommands},
};

}  // namespace

std::span<const CommandSpec> introspection_commands() {
  return kIntrospectionCommands;
}

}  // namespace kvlab::server
