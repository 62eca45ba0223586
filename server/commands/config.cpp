// CONFIG GET/SET/RESETSTAT/REWRITE/HELP: every parameter that Redis 7.0's `CONFIG GET *` lists, so
// that clients and tools that read or tune them (redis-cli, benchmarks, client libraries, test
// suites) see what they expect.
//
// One table (kParams) describes each parameter: its Redis name and alias, its type (which fixes
// how a value is validated and how CONFIG GET formats it), Redis's default, whether Redis refuses
// to change it at run time (immutable or protected), and what it does in kvlab:
//   kActs  - kvlab applies it (maxclients, requirepass, maxmemory and its policy, the normal and
//            pubsub classes of client-output-buffer-limit, client-query-buffer-limit,
//            maxmemory-clients, proto-max-bulk-len, min-replicas-to-write and
//            min-replicas-max-lag (with no replicas, both set refuse writes); the replica class
//            is kept and shown, as kvlab has no replicas);
//   kFixed - kvlab has this setting but cannot change it at run time (port, bind, databases 1,
//            save "", appendonly no, ...): GET reports kvlab's value; SET validates as Redis and
//            accepts only that value;
//   neither - accepted, validated and remembered exactly as Redis does, with no effect. Most of
//            these tune encodings, persistence, replication, cluster or TLS, which kvlab does not
//            have (list-max-listpack-size, activedefrag, ...). The five small-encoding
//            thresholds (set-max-intset-entries, hash-/zset-max-listpack-*) are of this kind but
//            also shape the replies that model Redis's encodings (encoding_limits()).
// Aliases (the old ziplist names, slave-*) are one parameter with two names, as in Redis.
//
// Thread safety: the values of the no-effect parameters live in one vector under g_mu; acting
// ones are read and written through Server, which keeps them in atomics or under its own lock.
// CONFIG SET of several parameters validates all first and applies them under g_mu, so a failing
// one changes none (Redis 7 semantics).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "server/commands/common.hpp"
#include "server/encoding_limits.hpp"
#include "server/memory.hpp"
#include "server/monitor.hpp"
#include "server/scripting.hpp"

namespace kvlab::server {
namespace {

enum class Type : std::uint8_t {
  kBool,           // yes/no (case-insensitive); GET "yes"/"no"
  kEnum,           // one of `choices`; GET the canonical (first listed) name for its value
  kFlags,          // several of `choices`, space-separated (shutdown-on-sig*)
  kInt,            // strict integer in [min, max]
  kMemory,         // digits with an optional b/k/kb/m/mb/g/gb unit; GET in bytes
  kMemoryPercent,  // a memory value or "N%" (0..100); GET "N%" for a percentage
  kOctal,          // unixsocketperm (immutable)
  kString,         // any text (some with a validator)
  kSpecial,        // multi-word formats: save, client-output-buffer-limit, ...
};

enum ParamFlag : std::uint8_t {
  kImmutable = 1,  // Redis refuses CONFIG SET: "can't set immutable config"
  kProtected = 2,  // Redis refuses while enable-protected-configs is no (its default)
  kActs = 4,       // kvlab applies it
  kFixed = 8,      // kvlab's own value, not changeable at run time
  kHidden = 16,    // Redis's HIDDEN_CONFIG: CONFIG GET lists it for its exact name, no pattern
};

// Validates `in` and writes its canonical form; false with *why (Redis's text) when invalid.
using Validator = bool (*)(std::string_view in, std::string* out, std::string* why);

struct Param {
  std::string_view name;
  std::string_view alias;  // empty: none
  Type type;
  std::uint8_t flags;
  std::string_view def;  // Redis's default in its GET format
  std::int64_t min = 0;
  std::uint64_t max = 0;
  std::string_view choices = {};  // kEnum/kFlags: comma-separated; "a=b" makes a an alias of b
  Validator special = nullptr;    // kString validator or kSpecial parser
};

constexpr std::int64_t kIntMin = std::numeric_limits<std::int32_t>::min();
constexpr std::uint64_t kIntMax = std::numeric_limits<std::int32_t>::max();
constexpr std::uint64_t kUIntMax = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kLongMax = std::numeric_limits<std::int64_t>::max();
constexpr std::uint64_t kULLMax = std::numeric_limits<std::uint64_t>::max();

// ---- special formats ----

// Redis splits a multi-word value on single blanks, so "a  b" holds an empty word.
std::vector<std::string_view> split_blanks(std::string_view v) {
  std::vector<std::string_view> out;
  if (v.empty()) return out;
  std::size_t i = 0;
  for (;;) {
    const std::size_t j = v.find(' ', i);
    out.push_back(v.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  return out;
}

// Redis's memtoull: leading digits, then an optional unit; nothing else. An empty string is 0.
// The digits saturate (strtoull) and the unit multiplies with wrap-around, as in Redis.
bool parse_memory(std::string_view s, std::uint64_t* out) {
  std::size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < i; ++k) {
    const std::uint64_t d = static_cast<std::uint64_t>(s[k] - '0');
    v = v > (kULLMax - d) / 10 ? kULLMax : v * 10 + d;
  }
  std::string unit;
  to_lower(s.substr(i), &unit);
  std::uint64_t mul = 0;
  if (unit.empty() || unit == "b")
    mul = 1;
  else if (unit == "k")
    mul = 1000;
  else if (unit == "kb")
    mul = 1024;
  else if (unit == "m")
    mul = 1000 * 1000;
  else if (unit == "mb")
    mul = 1024 * 1024;
  else if (unit == "g")
    mul = 1000ull * 1000 * 1000;
  else if (unit == "gb")
    mul = 1024ull * 1024 * 1024;
  else
    return false;
  *out = v * mul;
  return true;
}

bool valid_save(std::string_view in, std::string* out, std::string* why) {
  const auto words = split_blanks(in);
  if (words.size() % 2 != 0) {
    *why = "Invalid save parameters";
    return false;
  }
  std::string canon;
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::int64_t n = 0;
    if (!parse_i64(words[i], &n) || n < 0) {
      *why = "Invalid save parameters";
      return false;
    }
    if (!canon.empty()) canon += ' ';
    canon += std::to_string(n);
  }
  *out = canon;
  return true;
}

struct ObufClass {
  std::uint64_t hard, soft, secs;
};

// Parses client-output-buffer-limit into the classes it names (0 normal, 1 replica, 2 pubsub).
bool parse_obuf(std::string_view in, std::vector<std::pair<int, ObufClass>>* todo,
                std::string* why) {
  const auto w = split_blanks(in);
  if (w.size() % 4 != 0) {
    *why = "Wrong number of arguments in buffer limit configuration.";
    return false;
  }
  for (std::size_t i = 0; i < w.size(); i += 4) {
    int cls = -1;
    if (iequals(w[i], "normal")) cls = 0;
    if (iequals(w[i], "replica") || iequals(w[i], "slave")) cls = 1;
    if (iequals(w[i], "pubsub")) cls = 2;
    if (cls < 0) {
      *why = "Invalid client class specified in buffer limit configuration.";
      return false;
    }
    ObufClass c{};
    std::int64_t secs = 0;
    // soft_seconds: strtoll with nothing left over; Redis accepts a leading '+' or zeros there.
    std::string_view s = w[i + 3];
    bool secs_ok = !s.empty();
    if (secs_ok) {
      std::size_t k = (s[0] == '+' || s[0] == '-') ? 1 : 0;
      secs_ok = k < s.size();
      for (; k < s.size() && secs_ok; ++k) secs_ok = s[k] >= '0' && s[k] <= '9';
      if (secs_ok) secs = std::strtoll(std::string(s).c_str(), nullptr, 10);
    }
    if (!parse_memory(w[i + 1], &c.hard) || !parse_memory(w[i + 2], &c.soft) || !secs_ok ||
        secs < 0) {
      *why = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
      return false;
    }
    c.secs = static_cast<std::uint64_t>(secs);
    todo->emplace_back(cls, c);
  }
  return true;
}

bool valid_obuf(std::string_view in, std::string* out, std::string* why) {
  std::vector<std::pair<int, ObufClass>> todo;
  if (!parse_obuf(in, &todo, why)) return false;
  *out = std::string(in);  // merged with the current classes when applied
  return true;
}

bool valid_oom_values(std::string_view in, std::string* out, std::string* why) {
  const auto w = split_blanks(in);
  if (w.size() != 3) {
    *why = "wrong number of arguments";
    return false;
  }
  std::string canon;
  for (auto s : w) {
    std::int64_t n = 0;
    if (!parse_i64(s, &n) || n < -2000 || n > 2000) {
      *why = "Invalid oom-score-adj-values, elements must be between -2000 and 2000.";
      return false;
    }
    if (!canon.empty()) canon += ' ';
    canon += std::to_string(n);
  }
  *out = canon;
  return true;
}

// notify-keyspace-events: the classes in Redis's order; "A" stands for g$lshzxetd.
bool valid_notify(std::string_view in, std::string* out, std::string* why) {
  constexpr std::string_view kAll = "g$lshzxetd";
  std::string seen;
  for (char c : in) {
    if (c == 'A') {
      seen += kAll;
    } else if (std::string_view("g$lshzxetdnKEm").find(c) != std::string_view::npos) {
      seen += c;
    } else {
      *why = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
      return false;
    }
  }
  auto has = [&](char c) { return seen.find(c) != std::string::npos; };
  std::string canon;
  bool all = true;
  for (char c : kAll) all = all && has(c);
  if (all) {
    canon = "A";
  } else {
    for (char c : kAll)
      if (has(c)) canon += c;
    if (has('n')) canon += 'n';
  }
  for (char c : std::string_view("KEm"))
    if (has(c)) canon += c;
  *out = canon;
  return true;
}

// Formats a percentile as Redis does ("%f" without trailing zeros).
std::string trim_double(double d) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%f", d);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

bool valid_percentiles(std::string_view in, std::string* out, std::string* why) {
  std::string canon;
  for (auto s : split_blanks(in)) {
    double d = 0;
    if (!parse_double(s, &d)) {
      *why = "Invalid latency-tracking-info-percentiles parameters";
      return false;
    }
    if (d < 0.0 || d > 100.0) {
      *why = "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]";
      return false;
    }
    if (!canon.empty()) canon += ' ';
    canon += trim_double(d);
  }
  *out = canon;
  return true;
}

bool valid_any(std::string_view in, std::string* out, std::string*) {
  *out = std::string(in);
  return true;
}

bool valid_hostname(std::string_view in, std::string* out, std::string* why) {
  for (char c : in) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.';
    if (!ok) {
      *why = "Hostnames may only contain alphanumeric characters, hyphens or dots";
      return false;
    }
  }
  *out = std::string(in);
  return true;
}

bool valid_proc_title(std::string_view in, std::string* out, std::string* why) {
  // Redis accepts plain text and the variables below; anything else in braces is refused.
  static constexpr std::string_view kVars[] = {"{title}",      "{listen-addr}", "{server-mode}",
                                               "{port}",       "{tls-port}",    "{unixsocket}",
                                               "{config-file}"};
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '}') {
      *why = "template format is invalid or contains unknown variables";
      return false;
    }
    if (in[i] != '{') continue;
    bool known = false;
    for (auto v : kVars) {
      if (in.substr(i, v.size()) == v) {
        known = true;
        i += v.size() - 1;
        break;
      }
    }
    if (!known) {
      *why = "template format is invalid or contains unknown variables";
      return false;
    }
  }
  *out = std::string(in);
  return true;
}

bool valid_bind(std::string_view in, std::string* out, std::string* why) {
  const auto w = split_blanks(in);
  if (w.size() > 16) {
    *why = "Too many bind addresses specified.";
    return false;
  }
  *out = std::string(in);
  return true;
}

// ---- the table ----

using T = Type;
constexpr std::uint8_t I = kImmutable;
const Param kParams[] = {
    // Booleans.
    {"rdbchecksum", "", T::kBool, I, "yes"},
    {"daemonize", "", T::kBool, I, "no"},
    {"io-threads-do-reads", "", T::kBool, I, "no"},
    {"always-show-logo", "", T::kBool, I, "no"},
    {"protected-mode", "", T::kBool, kFixed, "yes"},
    {"rdbcompression", "", T::kBool, 0, "yes"},
    {"rdb-del-sync-files", "", T::kBool, 0, "no"},
    {"activerehashing", "", T::kBool, 0, "yes"},
    {"stop-writes-on-bgsave-error", "", T::kBool, 0, "yes"},
    {"set-proc-title", "", T::kBool, I, "yes"},
    {"dynamic-hz", "", T::kBool, 0, "yes"},
    {"lazyfree-lazy-eviction", "", T::kBool, 0, "no"},
    {"lazyfree-lazy-expire", "", T::kBool, 0, "no"},
    {"lazyfree-lazy-server-del", "", T::kBool, 0, "no"},
    {"lazyfree-lazy-user-del", "", T::kBool, 0, "no"},
    {"lazyfree-lazy-user-flush", "", T::kBool, 0, "no"},
    {"repl-disable-tcp-nodelay", "", T::kBool, 0, "no"},
    {"repl-diskless-sync", "", T::kBool, 0, "yes"},
    {"aof-rewrite-incremental-fsync", "", T::kBool, 0, "yes"},
    {"no-appendfsync-on-rewrite", "", T::kBool, 0, "no"},
    {"cluster-require-full-coverage", "", T::kBool, 0, "yes"},
    {"rdb-save-incremental-fsync", "", T::kBool, 0, "yes"},
    {"aof-load-truncated", "", T::kBool, 0, "yes"},
    {"aof-use-rdb-preamble", "", T::kBool, 0, "yes"},
    {"aof-timestamp-enabled", "", T::kBool, 0, "no"},
    {"cluster-replica-no-failover", "cluster-slave-no-failover", T::kBool, 0, "no"},
    {"replica-lazy-flush", "slave-lazy-flush", T::kBool, 0, "no"},
    {"replica-serve-stale-data", "slave-serve-stale-data", T::kBool, 0, "yes"},
    {"replica-read-only", "slave-read-only", T::kBool, 0, "yes"},
    {"replica-ignore-maxmemory", "slave-ignore-maxmemory", T::kBool, 0, "yes"},
    {"jemalloc-bg-thread", "", T::kBool, 0, "yes"},
    {"activedefrag", "", T::kBool, 0, "no"},  // "yes" is refused, as by a Redis without jemalloc
    {"syslog-enabled", "", T::kBool, I, "no"},
    {"cluster-enabled", "", T::kBool, I, "no"},
    {"appendonly", "", T::kBool, kFixed, "no"},
    {"cluster-allow-reads-when-down", "", T::kBool, 0, "no"},
    {"cluster-allow-pubsubshard-when-down", "", T::kBool, 0, "yes"},
    {"crash-log-enabled", "", T::kBool, 0, "yes"},
    {"crash-memcheck-enabled", "", T::kBool, 0, "yes"},
    {"disable-thp", "", T::kBool, I, "yes"},
    {"cluster-allow-replica-migration", "", T::kBool, 0, "yes"},
    {"replica-announced", "", T::kBool, 0, "yes"},
    {"latency-tracking", "", T::kBool, 0, "yes"},
    {"aof-disable-auto-gc", "", T::kBool, 0, "no"},
    {"replica-ignore-disk-write-errors", "", T::kBool, 0, "no"},
    {"tls-cluster", "", T::kBool, 0, "no"},
    {"tls-replication", "", T::kBool, 0, "no"},
    {"tls-prefer-server-ciphers", "", T::kBool, 0, "no"},
    {"tls-session-caching", "", T::kBool, 0, "yes"},
    // Strings.
    {"aclfile", "", T::kString, I, ""},
    {"unixsocket", "", T::kString, I, ""},
    {"pidfile", "", T::kString, I, ""},
    {"replica-announce-ip", "slave-announce-ip", T::kString, 0, ""},
    {"masteruser", "", T::kString, 0, ""},
    {"cluster-announce-ip", "", T::kString, 0, ""},
    {"cluster-config-file", "", T::kString, I, "nodes.conf"},
    {"cluster-announce-hostname", "", T::kString, 0, "", 0, 0, {}, valid_hostname},
    {"syslog-ident", "", T::kString, I, "redis"},
    {"dbfilename", "", T::kString, kProtected, "dump.rdb"},
    {"appendfilename", "", T::kString, I, "appendonly.aof"},
    {"appenddirname", "", T::kString, I, "appendonlydir"},
    {"server_cpulist", "", T::kString, I, ""},
    {"bio_cpulist", "", T::kString, I, ""},
    {"aof_rewrite_cpulist", "", T::kString, I, ""},
    {"bgsave_cpulist", "", T::kString, I, ""},
    {"ignore-warnings", "", T::kString, 0, ""},
    {"proc-title-template",
     "",
     T::kString,
     0,
     "{title} {listen-addr} {server-mode}",
     0,
     0,
     {},
     valid_proc_title},
    {"bind-source-addr", "", T::kString, 0, ""},
    {"logfile", "", T::kString, I, ""},
    {"masterauth", "", T::kString, 0, ""},
    {"requirepass", "", T::kString, kActs, ""},
    {"tls-cert-file", "", T::kString, 0, ""},
    {"tls-key-file", "", T::kString, 0, ""},
    {"tls-key-file-pass", "", T::kString, 0, ""},
    {"tls-client-cert-file", "", T::kString, 0, ""},
    {"tls-client-key-file", "", T::kString, 0, ""},
    {"tls-client-key-file-pass", "", T::kString, 0, ""},
    {"tls-dh-params-file", "", T::kString, 0, ""},
    {"tls-ca-cert-file", "", T::kString, 0, ""},
    {"tls-ca-cert-dir", "", T::kString, 0, ""},
    {"tls-protocols", "", T::kString, 0, ""},
    {"tls-ciphers", "", T::kString, 0, ""},
    {"tls-ciphersuites", "", T::kString, 0, ""},
    // Enumerations.
    {"supervised", "", T::kEnum, I, "no", 0, 0, "upstart,systemd,auto,no"},
    {"syslog-facility", "", T::kEnum, I, "local0", 0, 0,
     "user,local0,local1,local2,local3,local4,local5,local6,local7"},
    {"repl-diskless-load", "", T::kEnum, 0, "disabled", 0, 0, "disabled,on-empty-db,swapdb"},
    {"loglevel", "", T::kEnum, 0, "notice", 0, 0, "debug,verbose,notice,warning"},
    {"maxmemory-policy", "", T::kEnum, kActs, "noeviction", 0, 0,
     "volatile-lru,volatile-lfu,volatile-random,volatile-ttl,allkeys-lru,allkeys-lfu,"
     "allkeys-random,noeviction,allkeys-sieve,allkeys-s3fifo"},
    {"appendfsync", "", T::kEnum, 0, "everysec", 0, 0, "everysec,always,no"},
    {"oom-score-adj", "", T::kEnum, 0, "no", 0, 0, "no,yes,relative=yes,absolute"},
    {"acl-pubsub-default", "", T::kEnum, 0, "resetchannels", 0, 0, "allchannels,resetchannels"},
    {"sanitize-dump-payload", "", T::kEnum, 0, "no", 0, 0, "no,yes,clients"},
    {"enable-protected-configs", "", T::kEnum, I, "no", 0, 0, "no,yes,local"},
    {"enable-debug-command", "", T::kEnum, I, "no", 0, 0, "no,yes,local"},
    {"enable-module-command", "", T::kEnum, I, "no", 0, 0, "no,yes,local"},
    {"cluster-preferred-endpoint-type", "", T::kEnum, 0, "ip", 0, 0,
     "ip,hostname,unknown-endpoint"},
    {"propagation-error-behavior", "", T::kEnum, 0, "ignore", 0, 0,
     "ignore,panic,panic-on-replicas"},
    {"tls-auth-clients", "", T::kEnum, 0, "yes", 0, 0, "no,yes,optional"},
    {"shutdown-on-sigint", "", T::kFlags, 0, "default", 0, 0, "default,save,nosave,now,force"},
    {"shutdown-on-sigterm", "", T::kFlags, 0, "default", 0, 0, "default,save,nosave,now,force"},
    // Integers.
    {"databases", "", T::kInt, I | kFixed, "16", 1, kIntMax},
    {"port", "", T::kInt, kFixed, "6379", 0, 65535},
    {"io-threads", "", T::kInt, I | kFixed, "1", 1, 128},
    {"auto-aof-rewrite-percentage", "", T::kInt, 0, "100", 0, kIntMax},
    {"cluster-replica-validity-factor", "cluster-slave-validity-factor", T::kInt, 0, "10", 0,
     kIntMax},
    {"list-max-listpack-size", "list-max-ziplist-size", T::kInt, 0, "-2", kIntMin, kIntMax},
    {"tcp-keepalive", "", T::kInt, 0, "300", 0, kIntMax},
    {"cluster-migration-barrier", "", T::kInt, 0, "1", 0, kIntMax},
    {"active-defrag-cycle-min", "", T::kInt, 0, "1", 1, 99},
    {"active-defrag-cycle-max", "", T::kInt, 0, "25", 1, 99},
    {"active-defrag-threshold-lower", "", T::kInt, 0, "10", 0, 1000},
    {"active-defrag-threshold-upper", "", T::kInt, 0, "100", 0, 1000},
    {"lfu-log-factor", "", T::kInt, kActs, "10", 0, kIntMax},
    {"lfu-decay-time", "", T::kInt, kActs, "1", 0, kIntMax},
    {"replica-priority", "slave-priority", T::kInt, 0, "100", 0, kIntMax},
    {"repl-diskless-sync-delay", "", T::kInt, 0, "5", 0, kIntMax},
    {"maxmemory-samples", "", T::kInt, kActs, "5", 1, kIntMax},
    {"maxmemory-eviction-tenacity", "", T::kInt, 0, "10", 0, 100},
    {"timeout", "", T::kInt, 0, "0", 0, kIntMax},
    {"replica-announce-port", "slave-announce-port", T::kInt, 0, "0", 0, 65535},
    {"tcp-backlog", "", T::kInt, I, "511", 0, kIntMax},
    {"cluster-port", "", T::kInt, I, "0", 0, 65535},
    {"cluster-announce-bus-port", "", T::kInt, 0, "0", 0, 65535},
    {"cluster-announce-port", "", T::kInt, 0, "0", 0, 65535},
    {"cluster-announce-tls-port", "", T::kInt, 0, "0", 0, 65535},
    {"repl-timeout", "", T::kInt, 0, "60", 1, kIntMax},
    {"repl-ping-replica-period", "repl-ping-slave-period", T::kInt, 0, "10", 1, kIntMax},
    {"list-compress-depth", "", T::kInt, 0, "0", 0, kIntMax},
    {"active-expire-effort", "", T::kInt, 0, "1", 1, 10},
    {"hz", "", T::kInt, 0, "10", 0, kIntMax},  // GET shows it clamped to 1..500, as Redis
    {"min-replicas-to-write", "min-slaves-to-write", T::kInt, kActs, "0", 0, kIntMax},
    {"min-replicas-max-lag", "min-slaves-max-lag", T::kInt, kActs, "10", 0, kIntMax},
    {"shutdown-timeout", "", T::kInt, 0, "10", 0, kIntMax},
    {"repl-diskless-sync-max-replicas", "", T::kInt, 0, "0", 0, kIntMax},
    {"socket-mark-id", "", T::kInt, I, "0", 0, kUIntMax},
    {"maxclients", "", T::kInt, kActs, "10000", 1, kUIntMax},
    {"unixsocketperm", "", T::kOctal, I, "0"},
    {"active-defrag-max-scan-fields", "", T::kInt, 0, "1000", 1, kLongMax},
    {"slowlog-max-len", "", T::kInt, 0, "128", 0, kLongMax},
    {"acllog-max-len", "", T::kInt, 0, "128", 0, kLongMax},
    {"busy-reply-threshold", "lua-time-limit", T::kInt, 0, "5000", 0, kLongMax},
    {"cluster-node-timeout", "", T::kInt, 0, "15000", 0, kLongMax},
    {"slowlog-log-slower-than", "", T::kInt, 0, "10000", -1, kLongMax},
    {"latency-monitor-threshold", "", T::kInt, 0, "0", 0, kLongMax},
    {"stream-node-max-entries", "", T::kInt, 0, "100", 0, kLongMax},
    {"hash-max-listpack-entries", "hash-max-ziplist-entries", T::kInt, 0, "512", 0, kLongMax},
    {"set-max-intset-entries", "", T::kInt, 0, "512", 0, kLongMax},
    {"zset-max-listpack-entries", "zset-max-ziplist-entries", T::kInt, 0, "128", 0, kLongMax},
    {"tracking-table-max-keys", "", T::kInt, 0, "1000000", 0, kLongMax},
    {"repl-backlog-ttl", "", T::kInt, 0, "3600", 0, kLongMax},
    {"tls-port", "", T::kInt, 0, "0", 0, 65535},
    {"tls-session-cache-size", "", T::kInt, 0, "20480", 0, kIntMax},
    {"tls-session-cache-timeout", "", T::kInt, 0, "300", 0, kIntMax},
    // Memory sizes.
    {"proto-max-bulk-len", "", T::kMemory, kActs, "536870912", 1024 * 1024, kLongMax},
    {"repl-backlog-size", "", T::kMemory, 0, "1048576", 1, kLongMax},  // GET at least 16384
    {"maxmemory", "", T::kMemory, kActs, "0", 0, kULLMax},
    {"cluster-link-sendbuf-limit", "", T::kMemory, 0, "0", 0, kULLMax},
    {"active-defrag-ignore-bytes", "", T::kMemory, 0, "104857600", 1, kLongMax},
    {"hash-max-listpack-value", "hash-max-ziplist-value", T::kMemory, 0, "64", 0, kLongMax},
    {"stream-node-max-bytes", "", T::kMemory, 0, "4096", 0, kLongMax},
    {"zset-max-listpack-value", "zset-max-ziplist-value", T::kMemory, 0, "64", 0, kLongMax},
    {"hll-sparse-max-bytes", "", T::kMemory, 0, "3000", 0, kLongMax},
    {"client-query-buffer-limit", "", T::kMemory, kActs, "1073741824", 1024 * 1024, kLongMax},
    {"auto-aof-rewrite-min-size", "", T::kMemory, 0, "67108864", 0, kLongMax},
    {"maxmemory-clients", "", T::kMemoryPercent, kActs, "0", 0, kLongMax},
    // Special formats.
    {"dir", "", T::kSpecial, kProtected | kFixed, "", 0, 0, {}, valid_any},
    {"save", "", T::kSpecial, kFixed, "", 0, 0, {}, valid_save},
    {"client-output-buffer-limit",
     "",
     T::kSpecial,
     kActs,
     "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
     0,
     0,
     {},
     valid_obuf},
    {"oom-score-adj-values", "", T::kSpecial, 0, "0 200 800", 0, 0, {}, valid_oom_values},
    {"notify-keyspace-events", "", T::kSpecial, 0, "", 0, 0, {}, valid_notify},
    {"bind", "", T::kSpecial, kFixed, "* -::*", 0, 0, {}, valid_bind},
    {"replicaof", "slaveof", T::kSpecial, I, "", 0, 0, {}, valid_any},
    {"latency-tracking-info-percentiles",
     "",
     T::kSpecial,
     0,
     "50 99 99.9",
     0,
     0,
     {},
     valid_percentiles},
    // Redis's hidden parameters (debugging and test aids): no effect in kvlab.
    {"use-exit-on-panic", "", T::kBool, kHidden, "no"},
    {"lua-enable-deprecated-api", "", T::kBool, I | kHidden, "no"},
    {"rdb-key-save-delay", "", T::kInt, kHidden, "0", kIntMin, kIntMax},
    {"key-load-delay", "", T::kInt, kHidden, "0", kIntMin, kIntMax},
    {"watchdog-period", "", T::kInt, kHidden, "0", 0, kIntMax},
    {"loading-process-events-interval-bytes", "", T::kInt, kHidden, "2097152", 1024, kIntMax},
    // kvlab's own, fixed at start-up (command line).
    {"kvlab-backend", "", T::kString, I | kFixed, ""},
    {"kvlab-queue", "", T::kString, I | kFixed, ""},
    {"kvlab-threads", "", T::kString, I | kFixed, ""},
    {"kvlab-placement", "", T::kString, I | kFixed, ""},
    {"kvlab-yield", "", T::kString, I | kFixed, ""},
    {"kvlab-atomicity", "", T::kString, I | kFixed, ""},
    {"kvlab-lua-undeclared-keys", "", T::kString, I | kFixed, ""},
};
constexpr std::size_t kNumParams = sizeof kParams / sizeof kParams[0];

// ---- values ----

std::mutex g_mu;
std::vector<std::string> g_values;                        // guarded by g_mu; index as kParams
ObufClass g_obuf_replica{256ull << 20, 64ull << 20, 60};  // under g_mu (no replicas: no effect)

std::vector<std::string>& values() {
  // REQUIRES: g_mu held.
  if (g_values.empty())
    for (const Param& p : kParams) g_values.emplace_back(p.def);
  return g_values;
}

std::string obuf_text(const Server& s) {
  // REQUIRES: g_mu held.
  auto one = [](std::string_view cls, std::uint64_t h, std::uint64_t so, std::uint64_t se) {
    return std::string(cls) + " " + std::to_string(h) + " " + std::to_string(so) + " " +
           std::to_string(se);
  };
  const ObufLimit p = s.pubsub_obuf_limit(), nm = s.normal_obuf_limit();
  return one("normal", nm.hard, nm.soft, nm.soft_seconds) + " " +
         one("slave", g_obuf_replica.hard, g_obuf_replica.soft, g_obuf_replica.secs) + " " +
         one("pubsub", p.hard, p.soft, p.soft_seconds);
}

// The value CONFIG GET shows. REQUIRES: g_mu held.
std::string get_value(Server& s, std::size_t i) {
  const Param& p = kParams[i];
  const std::string_view n = p.name;
  if (n == "maxclients") return std::to_string(s.maxclients());
  if (n == "maxmemory") return std::to_string(s.eviction().maxmemory());
  if (n == "maxmemory-policy") return std::string(evict_policy_name(s.eviction().policy()));
  if (n == "maxmemory-samples") return std::to_string(s.eviction().samples());
  if (n == "requirepass") return s.requirepass();
  if (n == "client-output-buffer-limit") return obuf_text(s);
  if (n == "client-query-buffer-limit") return std::to_string(s.query_buffer_limit());
  if (n == "proto-max-bulk-len") return std::to_string(s.proto_max_bulk_len());
  if (n == "port") return std::to_string(s.config().port);
  if (n == "bind") return s.config().bind;
  if (n == "databases") return "1";
  if (n == "io-threads") return std::to_string(s.num_workers());
  if (n == "protected-mode") return s.config().protected_mode ? "yes" : "no";
  if (n == "dir") {
    char buf[4096];
    return getcwd(buf, sizeof buf) != nullptr ? buf : "";
  }
  if (n == "kvlab-backend") return std::string(s.backend_name());
  if (n == "kvlab-queue") return s.config().queue;
  if (n == "kvlab-threads") return std::to_string(s.num_workers());
  if (n == "kvlab-placement") return s.config().placement;
  if (n == "kvlab-yield") return s.config().yield;
  if (n == "kvlab-atomicity") return std::string(s.atomicity().name());
  if (n == "kvlab-lua-undeclared-keys") return s.config().lua_undeclared_keys ? "yes" : "no";
  if (n == "enable-debug-command") return s.config().enable_debug_command;
  const std::string& v = values()[i];
  if (n == "hz") {  // Redis keeps what was set but runs (and shows) 1..500
    const std::int64_t hz = std::stoll(v);
    return std::to_string(hz < 1 ? 1 : hz > 500 ? 500 : hz);
  }
  if (n == "repl-backlog-size") {
    const std::uint64_t b = std::stoull(v);
    return std::to_string(b < 16384 ? 16384 : b);
  }
  return v;
}

std::string range_error(const Param& p) {
  return "argument must be between " + std::to_string(p.min) + " and " + std::to_string(p.max) +
         " inclusive";
}

// Enum choices as (name, canonical) pairs; "relative=yes" names an alias.
std::vector<std::pair<std::string_view, std::string_view>> choices(const Param& p) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  std::string_view c = p.choices;
  while (!c.empty()) {
    const std::size_t comma = c.find(',');
    std::string_view item = c.substr(0, comma);
    c = comma == std::string_view::npos ? std::string_view() : c.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      out.emplace_back(item, item);
    } else {
      out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    }
  }
  return out;
}

std::string enum_error(const Param& p) {
  std::string list;
  for (const auto& [name, canon] : choices(p)) {
    // kvlab's own research policies are accepted but not listed: the text stays Redis's.
    if (name == "allkeys-sieve" || name == "allkeys-s3fifo") continue;
    if (!list.empty()) list += ", ";
    list += name;
  }
  return "argument(s) must be one of the following: " + list;
}

// Validates a value as Redis does for the parameter's type; *out gets the GET form.
bool canonical(const Param& p, std::string_view in, std::string* out, std::string* why) {
  switch (p.type) {
    case Type::kBool:
      if (iequals(in, "yes") || iequals(in, "no")) {
        if (p.name == "activedefrag" && iequals(in, "yes")) {
          *why =
              "Active defragmentation cannot be enabled: it requires a Redis server compiled with "
              "a modified Jemalloc like the one shipped by default with the Redis source "
              "distribution";
          return false;
        }
        *out = iequals(in, "yes") ? "yes" : "no";
        return true;
      }
      *why = "argument must be 'yes' or 'no'";
      return false;
    case Type::kEnum:
      for (const auto& [name, canon] : choices(p)) {
        if (iequals(in, name)) {
          *out = std::string(canon);
          return true;
        }
      }
      *why = enum_error(p);
      return false;
    case Type::kFlags: {
      // Several names; "default" (value 0) only shows when nothing else is set.
      const auto names = choices(p);
      std::vector<bool> set(names.size(), false);
      const auto words = split_blanks(in);
      if (words.empty()) {
        *why = enum_error(p);
        return false;
      }
      for (auto w : words) {
        bool found = false;
        for (std::size_t k = 0; k < names.size(); ++k) {
          if (iequals(w, names[k].first)) {
            set[k] = true;
            found = true;
          }
        }
        if (!found) {
          *why = enum_error(p);
          return false;
        }
      }
      if (set[1] && set[2]) {  // save, nosave
        *why = "shutdown options SAVE and NOSAVE can't be used simultaneously";
        return false;
      }
      std::string canon;
      for (std::size_t k = 1; k < names.size(); ++k) {
        if (!set[k]) continue;
        if (!canon.empty()) canon += ' ';
        canon += names[k].first;
      }
      *out = canon.empty() ? std::string(names[0].first) : canon;
      return true;
    }
    case Type::kInt: {
      std::int64_t v = 0;
      if (!parse_i64(in, &v)) {
        *why = "argument couldn't be parsed into an integer";
        return false;
      }
      if (v < p.min || (v >= 0 && static_cast<std::uint64_t>(v) > p.max)) {
        *why = range_error(p);
        return false;
      }
      *out = std::to_string(v);
      return true;
    }
    case Type::kMemoryPercent:
      if (!in.empty() && in.back() == '%') {
        std::int64_t pct = 0;
        if (!parse_i64(in.substr(0, in.size() - 1), &pct) || pct < 0) {
          *why = "argument must be a memory or percent value";
          return false;
        }
        if (pct > 100) {
          *why = "percentage argument must be less or equal to 100";
          return false;
        }
        *out = pct == 0 ? "0" : std::to_string(pct) + "%";
        return true;
      }
      [[fallthrough]];
    case Type::kMemory: {
      std::uint64_t v = 0;
      if (!parse_memory(in, &v)) {
        *why = p.type == Type::kMemory ? "argument must be a memory value"
                                       : "argument must be a memory or percent value";
        return false;
      }
      if (v < static_cast<std::uint64_t>(p.min) || v > p.max) {
        *why = range_error(p);
        return false;
      }
      *out = std::to_string(v);
      return true;
    }
    case Type::kOctal:
    case Type::kString:
      if (p.special != nullptr) return p.special(in, out, why);
      *out = std::string(in);
      return true;
    case Type::kSpecial:
      return p.special(in, out, why);
  }
  return false;
}

// Applies a validated value. REQUIRES: g_mu held.
void apply(Server& s, std::size_t i, const std::string& v) {
  const std::string_view n = kParams[i].name;
  if (n == "maxclients") {
    s.set_maxclients(static_cast<unsigned>(std::stoull(v)));
  } else if (n == "requirepass") {
    s.set_requirepass(v);
  } else if (n == "client-query-buffer-limit") {
    s.set_query_buffer_limit(static_cast<std::size_t>(std::stoull(v)));
  } else if (n == "proto-max-bulk-len") {
    s.set_proto_max_bulk_len(std::stoull(v));
  } else if (n == "maxmemory-clients") {
    values()[i] = v;  // shown as set ("10%" or bytes)
    // Redis's encoding: a percentage of maxmemory is stored negated.
    s.set_maxmemory_clients(v.back() == '%' ? -std::stoll(v.substr(0, v.size() - 1))
                                            : std::stoll(v));
  } else if (n == "client-output-buffer-limit") {
    std::vector<std::pair<int, ObufClass>> todo;
    std::string why;
    parse_obuf(v, &todo, &why);
    for (const auto& [cls, c] : todo) {
      if (cls == 0) s.set_normal_obuf_limit({c.hard, c.soft, c.secs});
      if (cls == 1) g_obuf_replica = c;
      if (cls == 2) s.set_pubsub_obuf_limit({c.hard, c.soft, c.secs});
    }
  } else {
    values()[i] = v;
    // The one encoding knob kvlab has: HyperLogLog's sparse limit (hyperloglog.cpp).
    if (n == "hll-sparse-max-bytes") set_hll_sparse_max_bytes(std::stoull(v));
    // The thresholds of Redis's small encodings, which kvlab's replies model (keys.cpp).
    if (n == "set-max-intset-entries" || n == "hash-max-listpack-entries" ||
        n == "hash-max-listpack-value" || n == "zset-max-listpack-entries" ||
        n == "zset-max-listpack-value")
      set_encoding_limit(n, std::stoull(v));
    // Where XADD closes a stream node (streams.cpp).
    if (n == "stream-node-max-entries")
      set_stream_node_limits(std::stoull(v), stream_node_max_bytes());
    if (n == "stream-node-max-bytes")
      set_stream_node_limits(stream_node_max_entries(), std::stoull(v));
    // Writes wait for replicas kvlab does not have (Server::enough_good_replicas).
    if (n == "min-replicas-to-write" || n == "min-replicas-max-lag") {
      auto value_of = [](std::string_view name) {
        for (std::size_t k = 0; k < kNumParams; ++k)
          if (kParams[k].name == name) return std::stoll(values()[k]);
        return 0ll;
      };
      s.set_min_replicas(value_of("min-replicas-to-write"), value_of("min-replicas-max-lag"));
    }
    // Scripts' BUSY threshold (scripting.cpp).
    if (n == "busy-reply-threshold") scripting::set_busy_threshold_ms(std::stoll(v));
    // The tracking table's bound (tracking.hpp).
    if (n == "tracking-table-max-keys") {
      set_tracking_max_keys(std::stoll(v));
      s.tracking().enforce_bound(s);  // its messages leave after the reply (tracking_flush)
    }
    // The slow log and the latency monitor (monitor.hpp).
    if (n == "slowlog-log-slower-than") set_slowlog_slower_than(std::stoll(v));
    if (n == "slowlog-max-len") set_slowlog_max_len(std::stoll(v));
    if (n == "latency-monitor-threshold") set_latency_threshold_ms(std::stoll(v));
    // maxmemory and eviction (server/eviction.hpp).
    // Counting started now: the connections' buffers and the script caches were allocated
    // uncounted, and their frees will be subtracted, so their estimates join the baseline (as
    // the keyspace's does). Without them an idle server counts next to nothing, and a limit
    // below its real size would refuse no write.
    if (n == "maxmemory" && s.eviction().set_maxmemory(std::stoull(v)))
      memory::add_baseline(
          static_cast<std::int64_t>(s.client_memory_total() + scripting::cache_bytes()));
    if (n == "maxmemory-policy")
      if (auto p = parse_evict_policy(v)) s.eviction().set_policy(*p);
    if (n == "maxmemory-samples") s.eviction().set_samples(static_cast<int>(std::stoll(v)));
    if (n == "lfu-log-factor") s.eviction().set_lfu_log_factor(static_cast<int>(std::stoll(v)));
    if (n == "lfu-decay-time") s.eviction().set_lfu_decay_time(static_cast<int>(std::stoll(v)));
  }
}

// Finds a parameter by name or alias (case-insensitive).
const Param* find_param(std::string_view name) {
  for (const Param& p : kParams)
    if (iequals(p.name, name) || (!p.alias.empty() && iequals(p.alias, name))) return &p;
  return nullptr;
}

// As Redis's strpbrk(name, "[*?"): a pattern with only '\\' escapes is looked up as a name.
bool has_glob(std::string_view s) {
  return s.find_first_of("*?[") != std::string_view::npos;
}

void config_get_cmd(CommandContext& ctx) {
  // One entry per (parameter, name used): a parameter's alias is listed as its own entry, as in
  // Redis, and a parameter matched by several patterns is listed once.
  std::vector<std::pair<std::string, std::size_t>> out;
  std::vector<bool> seen(kNumParams * 2, false);
  auto add = [&](std::size_t i, bool alias, std::string_view shown) {
    if (seen[i * 2 + (alias ? 1 : 0)]) return;
    seen[i * 2 + (alias ? 1 : 0)] = true;
    out.emplace_back(std::string(shown), i);
  };
  for (std::size_t a = 2; a < ctx.argc(); ++a) {
    const std::string_view pat = ctx.arg(a);
    // Redis reads a pattern as a C string (strpbrk, stringmatch: up to its first NUL) and looks a
    // name up whole.
    const std::string_view glob = pat.substr(0, pat.find('\0'));
    for (std::size_t i = 0; i < kNumParams; ++i) {
      const Param& p = kParams[i];
      if (has_glob(glob)) {
        if (p.flags & kHidden) continue;
        if (glob_match(glob, p.name, true)) add(i, false, p.name);
        if (!p.alias.empty() && glob_match(glob, p.alias, true)) add(i, true, p.alias);
      } else if (iequals(pat, p.name)) {
        add(i, false, pat);  // Redis echoes a plain name as it was given
      } else if (!p.alias.empty() && iequals(pat, p.alias)) {
        add(i, true, pat);
      }
    }
  }
  std::lock_guard<std::mutex> lock(g_mu);
  ctx.reply.map(out.size());
  for (const auto& [name, i] : out) {
    ctx.reply.bulk(name);
    ctx.reply.bulk(get_value(ctx.server, i));
  }
}

void config_set_cmd(CommandContext& ctx) {
  if (ctx.argc() % 2 != 0) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  // 1. Names: unknown, immutable, protected and duplicate parameters fail before any value is
  //    looked at. 2. Values: all validated. 3. All applied under one lock: any error sets none.
  std::vector<std::size_t> idx;
  for (std::size_t a = 2; a < ctx.argc(); a += 2) {
    const Param* p = find_param(ctx.arg(a));
    if (p == nullptr) {
      ctx.reply.error(err::config_set_unknown(ctx.arg(a)));
      return;
    }
    if (p->flags & kImmutable) {
      ctx.reply.error(err::config_set_invalid(ctx.arg(a), "can't set immutable config"));
      return;
    }
    if (p->flags & kProtected) {
      ctx.reply.error(err::config_set_invalid(ctx.arg(a), "can't set protected config"));
      return;
    }
    for (std::size_t b = 2; b < a; b += 2) {
      if (iequals(ctx.arg(b), ctx.arg(a))) {
        ctx.reply.error(err::config_set_invalid(ctx.arg(a), "duplicate parameter"));
        return;
      }
    }
    idx.push_back(static_cast<std::size_t>(p - kParams));
  }
  std::vector<std::string> canon(idx.size());
  std::lock_guard<std::mutex> lock(g_mu);
  for (std::size_t k = 0; k < idx.size(); ++k) {
    const Param& p = kParams[idx[k]];
    const std::string_view given = ctx.arg(2 + 2 * k);
    std::string why;
    if (!canonical(p, ctx.arg(3 + 2 * k), &canon[k], &why)) {
      ctx.reply.error(err::config_set_invalid(given, why));
      return;
    }
    if ((p.flags & kFixed) && canon[k] != get_value(ctx.server, idx[k])) {
      ctx.reply.error(err::config_set_invalid(
          given, "kvlab-server cannot change this setting at run time (it is " +
                     get_value(ctx.server, idx[k]) + ")"));
      return;
    }
  }
  for (std::size_t k = 0; k < idx.size(); ++k) apply(ctx.server, idx[k], canon[k]);
  ctx.reply.ok();
}

void config_resetstat_cmd(CommandContext& ctx) {
  ctx.server.reset_stats();
  ctx.reply.ok();
}

void config_rewrite_cmd(CommandContext& ctx) {
  ctx.reply.error("ERR The server is running without a config file");
}

void config_help_cmd(CommandContext& ctx) {
  static constexpr std::string_view kLines[] = {
      "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "GET <pattern>",
      "    Return parameters matching the glob-like <pattern> and their values.",
      "SET <directive> <value>",
      "    Set the configuration <directive> to <value>.",
      "RESETSTAT",
      "    Reset statistics reported by the INFO command.",
      "REWRITE",
      "    Rewrite the configuration file.",
      "HELP",
      "    Prints this help."};
  ctx.reply.array(std::size(kLines));
  for (auto l : kLines) ctx.reply.simple(l);
}

const CommandSpec kConfigSubcommands[] = {
    {"get", -3, kAdmin | kLoading | kStale, config_get_cmd, 0, 0, 0, "server",
     "Get the values of configuration parameters", "parameter ...", "2.0.0",
     "O(N) when N is the number of configuration parameters provided"},
    {"set", -4, kAdmin | kLoading | kStale, config_set_cmd, 0, 0, 0, "server",
     "Set configuration parameters to the given values", "parameter value [parameter value ...]",
     "2.0.0", "O(N) when N is the number of configuration parameters provided"},
    {"resetstat", 2, kAdmin | kLoading | kStale, config_resetstat_cmd, 0, 0, 0, "server",
     "Reset the stats returned by INFO", "", "2.0.0"},
    {"rewrite", 2, kAdmin | kLoading | kStale, config_rewrite_cmd, 0, 0, 0, "server",
     "Rewrite the configuration file with the in memory configuration", "", "2.8.0"},
    {"help", 2, kLoading | kStale, config_help_cmd, 0, 0, 0, "server",
     "Show helpful text about the different subcommands", "", "5.0.0"},
};

}  // namespace

std::span<const CommandSpec> config_subcommands() {
  return kConfigSubcommands;
}

bool parse_memory_units(std::string_view s, std::uint64_t* out) {
  return parse_memory(s, out);
}

std::string config_soft_value(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (std::size_t i = 0; i < kNumParams; ++i)
    if (kParams[i].name == name) return values()[i];
  return {};
}

}  // namespace kvlab::server
