// CONFIG and INFO against a real kvlab-server, with Redis 7.0 as the oracle: a redis-server
// started by the test on a free port (persistence off) answers the same commands, and the replies
// must match byte for byte (the parts that need it are skipped when redis-server is not on PATH).
// Covered: CONFIG GET * lists every Redis parameter; each no-effect parameter accepts and refuses
// exactly what Redis does and reads back in Redis's format; multi-parameter CONFIG SET is atomic;
// INFO's sections and field names; commandstats/errorstats counts after a known sequence.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "tests/server/harness.hpp"

using kvtest::Client;
using kvtest::Reply;

namespace {

kvtest::ServerProcess& kvlab() {
  static kvtest::ServerProcess s({"--threads", "2"});
  return s;
}

using kvtest::find_redis_server;

using kvtest::RedisProcess;

RedisProcess& redis() {
  static RedisProcess r;
  return r;
}

std::map<std::string, std::string> config_map(Client& c, const std::string& pattern = "*") {
  const Reply r = c.cmd({"CONFIG", "GET", pattern});
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2)
    out[r.elements[i].str] = r.elements[i + 1].str;
  return out;
}

std::string describe(const Reply& r) {
  if (r.type == REDIS_REPLY_ERROR) return "-" + r.str;
  if (r.type == REDIS_REPLY_STATUS) return "+" + r.str;
  if (r.type == REDIS_REPLY_INTEGER) return ":" + std::to_string(r.integer);
  if (r.type == REDIS_REPLY_ARRAY) {
    std::string s = "[";
    for (const auto& e : r.elements) s += describe(e) + ",";
    return s + "]";
  }
  return "$" + r.str;
}

// INFO's lines as field -> value, and its section titles in order.
struct Info {
  std::vector<std::string> sections;
  std::map<std::string, std::string> fields;
};
Info parse_info(const std::string& text) {
  Info info;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = text.find("\r\n", i);
    if (j == std::string::npos) j = text.size();
    const std::string line = text.substr(i, j - i);
    i = j + 2;
    if (line.rfind("# ", 0) == 0) {
      info.sections.push_back(line.substr(2));
    } else if (const std::size_t colon = line.find(':'); colon != std::string::npos) {
      info.fields[line.substr(0, colon)] = line.substr(colon + 1);
    }
  }
  return info;
}

// Parameters whose default kvlab legitimately reports differently (it is what kvlab runs with).
const std::set<std::string> kOwnValue = {"bind", "databases", "dir", "io-threads", "port"};

}  // namespace

TEST_CASE("CONFIG GET * lists every parameter that Redis 7.0 lists, with Redis's defaults") {
  REQUIRE(kvlab().running());
  Client k(kvlab().port());
  const auto kv = config_map(k);
  CHECK(kv.size() >= 194);
  for (const char* name : {"maxclients", "list-max-listpack-size", "list-max-ziplist-size",
                           "hash-max-listpack-entries", "kvlab-yield", "kvlab-backend"})
    CHECK_MESSAGE(kv.count(name) == 1, name);
  CHECK(kv.at("databases") == "1");
  CHECK(kv.at("save").empty());
  CHECK(kv.at("appendonly") == "no");
  CHECK(kv.at("port") == std::to_string(kvlab().port()));
  if (!redis().running()) return;  // no redis-server on PATH: the comparison is skipped
  Client r(redis().port());
  const auto rd = config_map(r);
  CHECK(rd.size() >= 190);
  for (const auto& [name, value] : rd) {
    INFO("parameter ", name);
    REQUIRE(kv.count(name) == 1);
    if (kOwnValue.count(name) == 0) CHECK(kv.at(name) == value);
  }
  for (const auto& [name, value] : kv)
    if (name.rfind("kvlab-", 0) != 0) CHECK_MESSAGE(rd.count(name) == 1, name);
}

// Each row: a parameter and a value; `ok` says whether Redis accepts it. Against Redis (when
// present) the reply text and the value read back must also be identical.
struct SetCase {
  const char* param;
  const char* value;
  bool ok;
};
const SetCase kSetCases[] = {
    // Booleans.
    {"activedefrag", "no", true},
    {"activedefrag", "yes", false},  // refused without jemalloc, by both
    {"activedefrag", "maybe", false},
    {"lazyfree-lazy-user-del", "YES", true},
    {"lazyfree-lazy-user-del", "1", false},
    {"replica-read-only", "no", true},
    {"slave-read-only", "No", true},
    // Enumerations.
    {"loglevel", "WARNING", true},
    {"loglevel", "foo", false},
    {"loglevel", "", false},
    {"maxmemory-policy", "allkeys-lru", true},
    {"maxmemory-policy", "lru", false},
    {"oom-score-adj", "relative", true},
    {"oom-score-adj", "absolute", true},
    {"oom-score-adj", "x", false},
    {"appendfsync", "always", true},
    {"appendfsync", "x", false},
    {"propagation-error-behavior", "panic-on-replicas", true},
    {"propagation-error-behavior", "x", false},
    {"shutdown-on-sigint", "now nosave", true},
    {"shutdown-on-sigint", "force default", true},
    {"shutdown-on-sigint", "save nosave", false},
    {"shutdown-on-sigint", "", false},
    {"shutdown-on-sigint", "bad", false},
    // Integers.
    {"list-max-listpack-size", "-2", true},
    {"list-max-listpack-size", "2147483647", true},
    {"list-max-listpack-size", "2147483648", false},
    {"list-max-listpack-size", "-2147483648", true},
    {"list-max-listpack-size", "-2147483649", false},
    {"list-max-listpack-size", "0x10", false},
    {"list-max-listpack-size", " 5", false},
    {"list-max-listpack-size", "+5", false},
    {"list-max-listpack-size", "007", false},
    {"list-max-listpack-size", "-0", false},
    {"list-max-listpack-size", "", false},
    {"list-max-ziplist-size", "5", true},
    {"hash-max-listpack-entries", "0", true},
    {"hash-max-ziplist-entries", "-1", false},
    {"hash-max-listpack-entries", "9223372036854775807", true},
    {"hash-max-listpack-entries", "9223372036854775808", false},
    {"zset-max-listpack-entries", "1", true},
    {"zset-max-ziplist-entries", "-1", false},
    {"set-max-intset-entries", "512", true},
    {"set-max-intset-entries", "-1", false},
    {"list-compress-depth", "3", true},
    {"list-compress-depth", "-1", false},
    {"stream-node-max-entries", "0", true},
    {"stream-node-max-entries", "-1", false},
    {"active-defrag-cycle-min", "0", false},
    {"active-defrag-cycle-min", "1", true},
    {"active-defrag-cycle-min", "99", true},
    {"active-defrag-cycle-min", "100", false},
    {"active-defrag-cycle-max", "99", true},
    {"active-defrag-cycle-max", "100", false},
    {"active-defrag-threshold-upper", "1000", true},
    {"active-defrag-threshold-upper", "1001", false},
    {"active-defrag-max-scan-fields", "0", false},
    {"active-expire-effort", "0", false},
    {"active-expire-effort", "10", true},
    {"active-expire-effort", "11", false},
    {"maxmemory-eviction-tenacity", "100", true},
    {"maxmemory-eviction-tenacity", "101", false},
    {"maxmemory-samples", "0", false},
    {"slowlog-log-slower-than", "-1", true},
    {"slowlog-log-slower-than", "-2", false},
    {"timeout", "-1", false},
    {"hz", "0", true},       // reads back as 1
    {"hz", "100000", true},  // reads back as 500
    {"hz", "-1", false},
    {"lua-time-limit", "100", true},
    {"busy-reply-threshold", "-1", false},
    {"repl-timeout", "0", false},
    {"replica-announce-port", "65536", false},
    // Memory sizes.
    {"hash-max-ziplist-value", "1kb", true},
    {"hash-max-listpack-value", "1K", true},
    {"hash-max-listpack-value", "1GB", true},
    {"hash-max-listpack-value", "1.5mb", false},
    {"hash-max-listpack-value", "1b", true},
    {"hash-max-listpack-value", "1t", false},
    {"hash-max-listpack-value", "-1", false},
    {"hash-max-listpack-value", "", true},
    {"hash-max-listpack-value", "007", true},
    {"hash-max-listpack-value", "9223372036854775808", false},
    {"hash-max-listpack-value", "99999999999999999999", false},
    {"zset-max-listpack-value", "2mb", true},
    {"stream-node-max-bytes", "4kb", true},
    {"stream-node-max-bytes", "x", false},
    {"hll-sparse-max-bytes", "1m", true},
    {"maxmemory", "1gb", true},
    {"maxmemory", "-1", false},
    {"repl-backlog-size", "1", true},  // reads back as 16384
    {"repl-backlog-size", "0", false},
    {"active-defrag-ignore-bytes", "0", false},
    {"maxmemory-clients", "10%", true},
    {"maxmemory-clients", "0%", true},
    {"maxmemory-clients", "100%", true},
    {"maxmemory-clients", "101%", false},
    {"maxmemory-clients", "-5%", false},
    {"maxmemory-clients", "007%", false},
    {"maxmemory-clients", "5.5%", false},
    {"maxmemory-clients", "%", false},
    {"maxmemory-clients", "1mb", true},
    {"maxmemory-clients", "abc", false},
    // Special formats.
    {"notify-keyspace-events", "KEA", true},
    {"notify-keyspace-events", "Ex", true},
    {"notify-keyspace-events", "mnKEdtg", true},
    {"notify-keyspace-events", "g$lshzxetd", true},
    {"notify-keyspace-events", "xyz", false},
    {"oom-score-adj-values", "0 200 2000", true},
    {"oom-score-adj-values", "1 2", false},
    {"oom-score-adj-values", "0  200 800", false},
    {"oom-score-adj-values", "a b c", false},
    {"oom-score-adj-values", "-2001 0 0", false},
    {"latency-tracking-info-percentiles", "50.5 99", true},
    {"latency-tracking-info-percentiles", "", true},
    {"latency-tracking-info-percentiles", "1e1 99.90", true},
    {"latency-tracking-info-percentiles", "50 101", false},
    {"latency-tracking-info-percentiles", "50 abc", false},
    {"save", "100 x", false},
    {"save", "100", false},
    {"client-output-buffer-limit", "normal 1kb 2mb 3", true},
    {"client-output-buffer-limit", "pubsub 64mb 16mb 90 slave 1 2 3", true},
    {"client-output-buffer-limit", "master 1 2 3", false},
    {"client-output-buffer-limit", "normal 1 2", false},
    {"client-output-buffer-limit", "normal 1 2 -1", false},
    {"client-output-buffer-limit", "normal x 2 3", false},
    // Strings with a format.
    {"proc-title-template", "{bad}", false},
    {"proc-title-template", "x {title}", true},
    {"cluster-announce-hostname", "a b", false},
    {"cluster-announce-hostname", "a-b.c", true},
    {"masterauth", "secret", true},
    // Refused by name.
    {"daemonize", "yes", false},
    {"unixsocketperm", "700", false},
    {"io-threads", "2", false},
    {"databases", "2", false},
    {"dir", "/tmp", false},
    {"dbfilename", "x.rdb", false},
    {"replicaof", "x y", false},
    {"no-such-parameter", "1", false},
};

TEST_CASE("each no-effect parameter accepts exactly the values that Redis accepts") {
  REQUIRE(kvlab().running());
  Client k(kvlab().port());
  const bool oracle = redis().running();
  std::unique_ptr<Client> r;
  if (oracle) r = std::make_unique<Client>(redis().port());
  const auto k_before = config_map(k);
  const auto r_before = oracle ? config_map(*r) : std::map<std::string, std::string>{};
  for (const SetCase& c : kSetCases) {
    INFO("CONFIG SET ", std::string(c.param), " '", std::string(c.value), "'");
    const Reply kr = k.cmd({"CONFIG", "SET", c.param, c.value});
    CHECK(kr.is_status("OK") == c.ok);
    if (!c.ok) CHECK(kr.is_error());
    if (oracle) {
      const Reply rr = r->cmd({"CONFIG", "SET", c.param, c.value});
      CHECK(describe(kr) == describe(rr));
      if (rr.is_status("OK"))
        CHECK(describe(k.cmd({"CONFIG", "GET", c.param})) ==
              describe(r->cmd({"CONFIG", "GET", c.param})));
    }
    // Back to the defaults, on both.
    if (kr.is_status("OK")) k.cmd({"CONFIG", "SET", c.param, k_before.at(c.param)});
    if (oracle && r_before.count(c.param) != 0)
      r->cmd({"CONFIG", "SET", c.param, r_before.at(c.param)});
  }
  CHECK(config_map(k) == k_before);
}

TEST_CASE("hidden parameters answer to their exact name only, as in Redis") {
  Client k(kvlab().port());
  const std::vector<std::vector<std::string>> seq = {
      {"CONFIG", "GET", "key-load-delay"},
      {"CONFIG", "GET", "*load-delay*"},
      {"CONFIG", "SET", "key-load-delay", "5"},
      {"CONFIG", "GET", "KEY-LOAD-DELAY"},
      {"CONFIG", "SET", "key-load-delay", "0"},
      {"CONFIG", "GET", "rdb-key-save-delay"},
      {"CONFIG", "SET", "watchdog-period", "-1"},
      {"CONFIG", "GET", "loading-process-events-interval-bytes"},
      {"CONFIG", "SET", "loading-process-events-interval-bytes", "10"},
      {"CONFIG", "GET", "use-exit-on-panic"},
      {"CONFIG", "SET", "lua-enable-deprecated-api", "no"}};
  std::vector<std::string> mine;
  for (const auto& c : seq) mine.push_back(describe(k.cmd(c)));
  CHECK(mine[0] == "[$key-load-delay,$0,]");
  CHECK(mine[1] == "[]");
  CHECK(config_map(k).count("key-load-delay") == 0);
  if (!redis().running()) return;
  Client r(redis().port());
  std::vector<std::string> theirs;
  for (const auto& c : seq) theirs.push_back(describe(r.cmd(c)));
  CHECK(mine == theirs);
}

TEST_CASE("CONFIG SET's error texts are Redis's") {
  Client k(kvlab().port());
  CHECK(k("CONFIG SET active-defrag-cycle-min 100").str ==
        "ERR CONFIG SET failed (possibly related to argument 'active-defrag-cycle-min') - argument "
        "must be between 1 and 99 inclusive");
  CHECK(k("CONFIG SET hash-max-listpack-value 1x").str ==
        "ERR CONFIG SET failed (possibly related to argument 'hash-max-listpack-value') - argument "
        "must be a memory value");
  CHECK(k("CONFIG SET loglevel foo").str ==
        "ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one "
        "of the following: debug, verbose, notice, warning");
  CHECK(k("CONFIG SET activedefrag maybe").str ==
        "ERR CONFIG SET failed (possibly related to argument 'activedefrag') - argument must be "
        "'yes' or 'no'");
  CHECK(k("CONFIG SET daemonize yes").str ==
        "ERR CONFIG SET failed (possibly related to argument 'daemonize') - can't set immutable "
        "config");
  CHECK(k("CONFIG SET foo 1").str ==
        "ERR Unknown option or number of arguments for CONFIG SET - 'foo'");
  CHECK(k("CONFIG SET hz 1 loglevel").str == "ERR syntax error");
  CHECK(k("CONFIG SET hz").str == "ERR wrong number of arguments for 'config|set' command");
}

TEST_CASE("CONFIG SET of several parameters sets all of them or none") {
  Client k(kvlab().port());
  std::unique_ptr<Client> r;
  if (redis().running()) r = std::make_unique<Client>(redis().port());
  const std::vector<std::vector<std::string>> cases = {
      {"CONFIG", "SET", "hz", "20", "loglevel", "bad"},
      {"CONFIG", "SET", "loglevel", "debug", "hz", "x"},
      {"CONFIG", "SET", "hz", "20", "HZ", "30"},
      {"CONFIG", "SET", "hz", "x", "daemonize", "yes"},
      {"CONFIG", "SET", "hz", "x", "foo", "1"},
      {"CONFIG", "SET", "hz", "20", "maxclients", "0"},
      {"CONFIG", "SET", "list-max-listpack-size", "7", "list-max-ziplist-size", "8"},
      {"CONFIG", "SET", "hz", "20", "loglevel", "debug", "maxmemory", "1mb"},
  };
  for (const auto& args : cases) {
    std::string line;
    for (const auto& a : args) line += a + " ";
    INFO(line);
    const auto before = config_map(k);
    const Reply kr = k.cmd(args);
    if (kr.is_error()) CHECK(config_map(k) == before);
    if (r) {
      const auto rbefore = config_map(*r);
      const Reply rr = r->cmd(args);
      CHECK(describe(kr) == describe(rr));
      if (rr.is_error()) CHECK(config_map(*r) == rbefore);
      for (std::size_t i = 2; i + 1 < args.size(); i += 2)
        CHECK(describe(k.cmd({"CONFIG", "GET", args[i]})) ==
              describe(r->cmd({"CONFIG", "GET", args[i]})));
      r->cmd({"CONFIG", "SET", "hz", "10", "loglevel", "notice", "maxmemory", "0",
              "list-max-listpack-size", "-2"});
    }
    k.cmd({"CONFIG", "SET", "hz", "10", "loglevel", "notice", "maxmemory", "0",
           "list-max-listpack-size", "-2"});
  }
  CHECK(k("CONFIG SET hz 1 HZ 2").str ==
        "ERR CONFIG SET failed (possibly related to argument 'HZ') - duplicate parameter");
  // A parameter that acts: maxclients changes with the others, or not at all.
  CHECK(k("CONFIG SET maxclients 50 loglevel bad").is_error());
  CHECK(k("CONFIG GET maxclients").elements.at(1).str == "10000");
  CHECK(k("CONFIG SET maxclients 50 loglevel debug").is_status("OK"));
  CHECK(k("CONFIG GET maxclients").elements.at(1).str == "50");
  CHECK(k("CONFIG SET maxclients 10000 loglevel notice").is_status("OK"));
}

TEST_CASE("CONFIG GET takes several patterns and lists each parameter once") {
  Client k(kvlab().port());
  const Reply kr = k("CONFIG GET hz h* maxclients max* hash-max-ziplist-value");
  std::multiset<std::string> names;
  for (std::size_t i = 0; i < kr.elements.size(); i += 2) names.insert(kr.elements[i].str);
  for (const auto& n : names) CHECK_MESSAGE(names.count(n) == 1, n);
  CHECK(names.count("hz") == 1);
  CHECK(names.count("hash-max-ziplist-value") == 1);
  CHECK(names.count("hash-max-listpack-value") == 1);
  CHECK(names.count("maxmemory-clients") == 1);
  if (redis().running()) {
    Client r(redis().port());
    for (const char* line :
         {"CONFIG GET hz h* maxclients max* hash-max-ziplist-value", "CONFIG GET HZ",
          "CONFIG GET hz HZ", "CONFIG GET *-max-*-entries", "CONFIG GET nothing-matches*"}) {
      INFO(line);
      auto pairs = [](const Reply& x) {
        std::set<std::pair<std::string, std::string>> s;
        for (std::size_t i = 0; i + 1 < x.elements.size(); i += 2)
          s.emplace(x.elements[i].str, x.elements[i + 1].str);
        return s;
      };
      CHECK(pairs(k(line)) == pairs(r(line)));
    }
  }
}

TEST_CASE("INFO has Redis 7.0's sections and field names") {
  Client k(kvlab().port());
  const Info def = parse_info(k("INFO").str);
  const std::vector<std::string> kDefault = {"Server",     "Clients",     "Memory",   "Persistence",
                                             "Stats",      "Replication", "CPU",      "Modules",
                                             "Errorstats", "Cluster",     "Keyspace", "kvlab"};
  CHECK(def.sections == kDefault);
  const Info all = parse_info(k("INFO all").str);
  CHECK(std::count(all.sections.begin(), all.sections.end(), "Commandstats") == 1);
  CHECK(std::count(all.sections.begin(), all.sections.end(), "Latencystats") == 1);
  CHECK(parse_info(k("INFO everything").str).sections == all.sections);
  CHECK(parse_info(k("INFO default").str).sections == kDefault);
  CHECK(parse_info(k("INFO commandstats ERRORSTATS").str).sections ==
        std::vector<std::string>{"Commandstats", "Errorstats"});
  CHECK(parse_info(k("INFO cpu server").str).sections == std::vector<std::string>{"Server", "CPU"});
  CHECK(k("INFO nosuchsection").str.empty());
  const std::vector<std::string> kFields = {"redis_version",
                                            "redis_mode",
                                            "os",
                                            "arch_bits",
                                            "multiplexing_api",
                                            "process_id",
                                            "run_id",
                                            "tcp_port",
                                            "uptime_in_seconds",
                                            "uptime_in_days",
                                            "connected_clients",
                                            "maxclients",
                                            "blocked_clients",
                                            "used_memory",
                                            "used_memory_human",
                                            "used_memory_rss",
                                            "maxmemory",
                                            "maxmemory_policy",
                                            "mem_not_counted_for_evict",
                                            "mem_allocator",
                                            "active_defrag_running",
                                            "lazyfree_pending_objects",
                                            "lazyfreed_objects",
                                            "loading",
                                            "rdb_changes_since_last_save",
                                            "rdb_bgsave_in_progress",
                                            "aof_enabled",
                                            "total_connections_received",
                                            "total_commands_processed",
                                            "instantaneous_ops_per_sec",
                                            "total_net_input_bytes",
                                            "total_net_output_bytes",
                                            "rejected_connections",
                                            "expired_keys",
                                            "evicted_keys",
                                            "keyspace_hits",
                                            "keyspace_misses",
                                            "pubsub_channels",
                                            "pubsub_patterns",
                                            "total_error_replies",
                                            "role",
                                            "connected_slaves",
                                            "used_cpu_sys",
                                            "used_cpu_user",
                                            "used_cpu_sys_children",
                                            "used_cpu_user_children",
                                            "cluster_enabled"};
  std::unique_ptr<Info> rinfo;
  if (redis().running()) {
    Client r(redis().port());
    rinfo = std::make_unique<Info>(parse_info(r("INFO everything").str));
    std::vector<std::string> rsec = rinfo->sections;
    std::vector<std::string> ksec = all.sections;
    ksec.erase(std::remove(ksec.begin(), ksec.end(), "kvlab"), ksec.end());
    CHECK(ksec == rsec);
    CHECK(parse_info(r("INFO").str).sections.size() + 1 == kDefault.size());
  }
  for (const auto& f : kFields) {
    INFO("field ", f);
    CHECK(all.fields.count(f) == 1);
    if (rinfo) CHECK(rinfo->fields.count(f) == 1);  // the name is Redis's
  }
  CHECK(all.fields.at("role") == "master");
  CHECK(all.fields.at("connected_slaves") == "0");
}

TEST_CASE("INFO replication has the fields of a Redis 7.0 master without replicas") {
  Client k(kvlab().port());
  const Info rep = parse_info(k("INFO replication").str);
  CHECK(rep.sections == std::vector<std::string>{"Replication"});
  CHECK(rep.fields.at("master_failover_state") == "no-failover");
  CHECK(rep.fields.at("master_replid").size() == 40);
  CHECK(rep.fields.at("master_replid") != parse_info(k("INFO server").str).fields.at("run_id"));
  CHECK(rep.fields.at("master_replid2") == std::string(40, '0'));
  CHECK(rep.fields.at("master_repl_offset") == "0");
  CHECK(rep.fields.at("second_repl_offset") == "-1");
  CHECK(rep.fields.at("repl_backlog_size") ==
        config_map(k, "repl-backlog-size").at("repl-backlog-size"));
  if (redis().running()) {
    Client r(redis().port());
    const Info rrep = parse_info(r("INFO replication").str);
    std::vector<std::string> rnames, knames;
    for (const auto& [f, v] : rrep.fields) rnames.push_back(f);
    for (const auto& [f, v] : rep.fields) knames.push_back(f);
    CHECK(knames == rnames);
    for (const auto& [f, v] : rrep.fields)
      if (f != "master_replid") CHECK_MESSAGE(rep.fields.at(f) == v, f);
  }
}

TEST_CASE("INFO commandstats and errorstats count a known sequence exactly as Redis") {
  const std::vector<std::vector<std::string>> seq = {{"CONFIG", "RESETSTAT"},
                                                     {"SET", "cs:a", "1"},
                                                     {"SET", "cs:a", "2"},
                                                     {"SET", "cs:b", "1"},
                                                     {"GET", "cs:a"},
                                                     {"GET", "cs:nope"},
                                                     {"GET"},
                                                     {"LPUSH", "cs:a", "x"},
                                                     {"NOSUCHCOMMAND"},
                                                     {"CONFIG", "GET", "hz"},
                                                     {"DEL", "cs:a", "cs:b"}};
  auto run = [&](Client& c) {
    for (const auto& cmd : seq) c.cmd(cmd);
    Info stats = parse_info(c("INFO commandstats errorstats stats").str);
    // usec depends on the machine: keep calls, rejected_calls and failed_calls.
    std::map<std::string, std::string> out;
    for (auto& [f, v] : stats.fields) {
      if (f.rfind("cmdstat_", 0) == 0) {
        std::string kept;
        for (const char* key : {"calls=", "rejected_calls=", "failed_calls="}) {
          const std::size_t at = v.find(std::string(",") + key) != std::string::npos
                                     ? v.find(std::string(",") + key) + 1
                                 : v.rfind(key, 0) == 0 ? 0
                                                        : std::string::npos;
          if (at == std::string::npos) continue;
          kept += v.substr(at, v.find(',', at) - at) + ";";
        }
        out[f] = kept;
      } else if (f.rfind("errorstat_", 0) == 0 || f == "total_error_replies" ||
                 f == "keyspace_hits" || f == "keyspace_misses") {
        out[f] = v;
      }
    }
    return out;
  };
  Client k(kvlab().port());
  const auto kv = run(k);
  CHECK(kv.at("cmdstat_set") == "calls=3;rejected_calls=0;failed_calls=0;");
  CHECK(kv.at("cmdstat_get") == "calls=2;rejected_calls=1;failed_calls=0;");
  CHECK(kv.at("cmdstat_lpush") == "calls=1;rejected_calls=0;failed_calls=1;");
  CHECK(kv.at("cmdstat_config|resetstat") == "calls=1;rejected_calls=0;failed_calls=0;");
  CHECK(kv.at("cmdstat_config|get") == "calls=1;rejected_calls=0;failed_calls=0;");
  CHECK(kv.at("cmdstat_del") == "calls=1;rejected_calls=0;failed_calls=0;");
  CHECK(kv.at("errorstat_ERR") == "count=2");
  CHECK(kv.at("errorstat_WRONGTYPE") == "count=1");
  CHECK(kv.at("total_error_replies") == "3");
  const Info st = parse_info(k("INFO stats").str);
  CHECK(st.fields.at("total_commands_processed") == "10");  // the 9 calls above and one INFO
  if (redis().running()) {
    Client r(redis().port());
    CHECK(run(r) == kv);
  }
  // CONFIG RESETSTAT clears them.
  CHECK(k("CONFIG RESETSTAT").is_status("OK"));
  const Info after = parse_info(k("INFO commandstats errorstats").str);
  CHECK(after.fields.count("cmdstat_set") == 0);
  CHECK(after.fields.count("errorstat_ERR") == 0);
  CHECK(after.fields.at("cmdstat_config|resetstat").rfind("calls=1,", 0) == 0);
}
