// SLOWLOG, LATENCY and MEMORY against a real kvlab-server (Redis 7.0 reply shapes and error
// texts), the HELP texts compared with a real redis-server when one is on PATH, and sharded
// pub/sub (SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH, PUBSUB SHARDCHANNELS / SHARDNUMSUB) with its
// interplay with SUBSCRIBE and RESET. Every wait is bounded; every server is stopped by pid.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/features/monitor.hpp"
#include "tests/server/checks.hpp"
#include "tests/server/harness.hpp"

using kvtest::check_error;
using kvtest::Client;
using kvtest::RedisProcess;
using kvtest::Reply;

namespace {

// Two workers, so that a publisher and a subscriber may sit on different threads.
kvtest::ServerProcess& server() {
  static kvtest::ServerProcess s({"--threads", "2"});
  return s;
}

void check_sub(const Reply& r, std::string_view kind, std::optional<std::string_view> name,
               long long count) {
  REQUIRE(r.type == REDIS_REPLY_ARRAY);
  REQUIRE(r.elements.size() == 3);
  CHECK(r.elements[0].str == kind);
  if (name) {
    CHECK(r.elements[1].str == *name);
  } else {
    CHECK(r.elements[1].is_nil());
  }
  CHECK(r.elements[2].integer == count);
}

std::vector<std::string> argv_of(const Reply& entry) {
  std::vector<std::string> out;
  for (const Reply& a : entry.elements[3].elements) out.push_back(a.str);
  return out;
}

// A command that takes tens of milliseconds on any machine: a Lua busy loop.
const std::vector<std::string> kSlowEval = {
    "EVAL", "local i = 0 while i < 2000000 do i = i + 1 end return i", "0"};

long long integer(Client& c, const std::vector<std::string>& args) {
  const Reply r = c.cmd(args);
  REQUIRE(r.type == REDIS_REPLY_INTEGER);
  return r.integer;
}

}  // namespace

TEST_SUITE("slowlog") {
  TEST_CASE("a threshold of 0 logs every command with Redis's entry shape") {
    Client c(server().port());
    c("CONFIG SET slowlog-log-slower-than 0");
    c("SLOWLOG RESET");
    c("CLIENT SETNAME tool");
    c("SET greeting hello");
    const Reply r = c("SLOWLOG GET 2");
    REQUIRE(r.type == REDIS_REPLY_ARRAY);
    REQUIRE(r.elements.size() == 2);
    const Reply& e = r.elements[0];  // newest first: the SET
    REQUIRE(e.elements.size() == 6);
    CHECK(e.elements[0].type == REDIS_REPLY_INTEGER);
    CHECK(r.elements[1].elements[0].integer == e.elements[0].integer - 1);  // ids increase
    CHECK(e.elements[1].integer > 1700000000);                              // unix seconds
    CHECK(e.elements[2].integer >= 0);                                      // microseconds
    CHECK(argv_of(e) == std::vector<std::string>{"SET", "greeting", "hello"});
    CHECK(e.elements[4].str.rfind("127.0.0.1:", 0) == 0);
    CHECK(e.elements[5].str == "tool");
    CHECK(argv_of(r.elements[1]) == std::vector<std::string>{"CLIENT", "SETNAME", "tool"});
    // SLOWLOG GET itself is logged once it has run.
    CHECK(integer(c, {"SLOWLOG", "LEN"}) == 4);  // RESET, SETNAME, SET, GET (LEN logs after)
    c("CONFIG SET slowlog-log-slower-than 10000");
  }

  TEST_CASE("a threshold of -1 logs nothing and a high one only slow commands") {
    Client c(server().port());
    c("CONFIG SET slowlog-log-slower-than -1");
    c("SLOWLOG RESET");
    c.cmd(kSlowEval);
    c("PING");
    CHECK(integer(c, {"SLOWLOG", "LEN"}) == 0);
    c("CONFIG SET slowlog-log-slower-than 5000");
    c("SLOWLOG RESET");
    for (int i = 0; i < 20; ++i) c("GET k");
    c.cmd(kSlowEval);
    const Reply r = c("SLOWLOG GET");
    REQUIRE(r.elements.size() == 1);
    CHECK(argv_of(r.elements[0])[0] == "EVAL");
    CHECK(r.elements[0].elements[2].integer >= 5000);
    c("CONFIG SET slowlog-log-slower-than 10000");
  }

  TEST_CASE("slowlog-max-len keeps the newest entries and RESET empties the log") {
    Client c(server().port());
    c("CONFIG SET slowlog-log-slower-than 0");
    c("CONFIG SET slowlog-max-len 3");
    for (int i = 0; i < 10; ++i) c.cmd({"ECHO", std::to_string(i)});
    const Reply r = c("SLOWLOG GET -1");
    REQUIRE(r.elements.size() == 3);
    CHECK(argv_of(r.elements[0]) == std::vector<std::string>{"ECHO", "9"});
    CHECK(argv_of(r.elements[2]) == std::vector<std::string>{"ECHO", "7"});
    const long long last_id = r.elements[0].elements[0].integer;
    CHECK(c("SLOWLOG RESET").str == "OK");
    const Reply after = c("SLOWLOG GET");  // only the RESET itself
    REQUIRE(after.elements.size() == 1);
    CHECK(after.elements[0].elements[0].integer > last_id);  // ids go on after a reset
    c("CONFIG SET slowlog-max-len 0");
    c("PING");
    CHECK(integer(c, {"SLOWLOG", "LEN"}) == 0);
    c("CONFIG SET slowlog-max-len 128");
    c("CONFIG SET slowlog-log-slower-than 10000");
  }

  TEST_CASE("entries keep 32 arguments of 128 bytes and redact passwords") {
    Client c(server().port());
    c("CONFIG SET slowlog-log-slower-than 0");
    std::vector<std::string> push = {"RPUSH", "biglist"};
    for (int i = 0; i < 40; ++i) push.push_back(std::to_string(i));
    c.cmd(push);
    c.cmd({"SET", std::string(200, 'k'), std::string(129, 'v')});
    c("AUTH user secret");
    const Reply r = c("SLOWLOG GET 3");
    REQUIRE(r.elements.size() == 3);
    CHECK(argv_of(r.elements[0]) == std::vector<std::string>{"AUTH", "(redacted)", "(redacted)"});
    const auto set = argv_of(r.elements[1]);
    CHECK(set[1] == std::string(128, 'k') + "... (72 more bytes)");
    CHECK(set[2] == std::string(128, 'v') + "... (1 more bytes)");
    const auto list = argv_of(r.elements[2]);
    REQUIRE(list.size() == 32);
    CHECK(list[30] == "28");
    CHECK(list[31] == "... (11 more arguments)");
    c("CONFIG SET slowlog-log-slower-than 10000");
  }

  TEST_CASE("EXEC is not logged but the commands it ran are") {
    Client c(server().port());
    c("CONFIG SET slowlog-log-slower-than 0");
    c("SLOWLOG RESET");
    c("MULTI");
    c("INCR counter");
    c("EXEC");
    const Reply r = c("SLOWLOG GET");
    std::vector<std::string> names;
    for (const Reply& e : r.elements) names.push_back(argv_of(e)[0]);
    CHECK(names == std::vector<std::string>{"INCR", "MULTI", "SLOWLOG"});
    c("CONFIG SET slowlog-log-slower-than 10000");
  }

  // Property: workers log concurrently without losing or duplicating an entry: with every
  // command logged, four clients (on both workers) leave exactly their commands, ids distinct.
  TEST_CASE("clients on every worker log into one slow log with distinct ids") {
    Client admin(server().port());
    admin("CONFIG SET slowlog-max-len 1000");
    admin("CONFIG SET slowlog-log-slower-than 0");
    admin("SLOWLOG RESET");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([t] {
        Client c(server().port());
        for (int i = 0; i < 50; ++i) c.cmd({"ECHO", "t" + std::to_string(t)});
      });
    for (auto& th : threads) th.join();
    admin("CONFIG SET slowlog-log-slower-than 10000");
    const Reply r = admin("SLOWLOG GET -1");
    std::set<long long> ids;
    int echoes = 0;
    for (const Reply& e : r.elements) {
      ids.insert(e.elements[0].integer);
      echoes += argv_of(e)[0] == "ECHO";
    }
    CHECK(ids.size() == r.elements.size());
    CHECK(echoes == 200);
    admin("CONFIG SET slowlog-max-len 128");
  }

  TEST_CASE("SLOWLOG errors are Redis's") {
    Client c(server().port());
    check_error(c("SLOWLOG GET -2"), "ERR count should be greater than or equal to -1");
    check_error(c("SLOWLOG GET x"), "ERR count should be greater than or equal to -1");
    check_error(c("SLOWLOG GET 1 2"),
                "ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP.");
    check_error(c("SLOWLOG LEN x"), "ERR wrong number of arguments for 'slowlog|len' command");
    check_error(c("SLOWLOG foo"), "ERR unknown subcommand 'foo'. Try SLOWLOG HELP.");
  }
}

TEST_SUITE("latency") {
  TEST_CASE("a slow command above latency-monitor-threshold is a 'command' event") {
    Client c(server().port());
    c("CONFIG SET latency-monitor-threshold 0");
    c("LATENCY RESET");
    c.cmd(kSlowEval);
    CHECK(c("LATENCY LATEST").elements.empty());  // threshold 0: the monitor is off
    c("CONFIG SET latency-monitor-threshold 1");
    for (int i = 0; i < 50; ++i) c("GET k");
    c.cmd(kSlowEval);
    const Reply latest = c("LATENCY LATEST");
    REQUIRE(latest.elements.size() == 1);
    const Reply& e = latest.elements[0];
    REQUIRE(e.elements.size() == 4);
    CHECK(e.elements[0].str == "command");
    CHECK(e.elements[2].integer >= 1);
    CHECK(e.elements[3].integer >= e.elements[2].integer);
    const Reply history = c("LATENCY HISTORY command");
    REQUIRE(history.elements.size() == 1);
    CHECK(history.elements[0].elements[1].integer == e.elements[2].integer);
    CHECK(c("LATENCY HISTORY nope").elements.empty());
    const Reply graph = c("LATENCY GRAPH command");
    CHECK(graph.str.rfind("command - high ", 0) == 0);
    check_error(c("LATENCY GRAPH nope"), "ERR No samples available for event 'nope'");
    CHECK(c("LATENCY DOCTOR").str.find("1. command: 1 latency spikes") != std::string::npos);
    CHECK(integer(c, {"LATENCY", "RESET", "command", "nope"}) == 1);
    CHECK(c("LATENCY LATEST").elements.empty());
    c("CONFIG SET latency-monitor-threshold 0");
    CHECK(c("LATENCY DOCTOR").str.rfind("I'm sorry, Dave, I can't do that.", 0) == 0);
  }

  // A worker's expiry sweep that must wait for a key another worker's script holds takes as
  // long as the wait: an "expire-cycle" event, as Redis records an expire cycle that was slow.
  TEST_CASE("an expiry sweep slower than latency-monitor-threshold is an 'expire-cycle' event") {
    kvtest::ServerProcess s({"--threads", "2"});
    // Two clients on different workers (CLIENT INFO's kvlab-worker); a bounded number of tries.
    std::vector<std::unique_ptr<Client>> clients;
    Client* on[2] = {nullptr, nullptr};
    for (int i = 0; i < 64 && (on[0] == nullptr || on[1] == nullptr); ++i) {
      clients.push_back(std::make_unique<Client>(s.port()));
      const std::string info = (*clients.back())("CLIENT INFO").str;
      const std::size_t p = info.find("kvlab-worker=");
      REQUIRE(p != std::string::npos);
      const int w = info[p + 13] - '0';
      if ((w == 0 || w == 1) && on[w] == nullptr) on[w] = clients.back().get();
    }
    REQUIRE(on[0] != nullptr);
    REQUIRE(on[1] != nullptr);
    Client& a = *on[0];
    Client& b = *on[1];
    a("CONFIG SET latency-monitor-threshold 20");
    a("LATENCY RESET");
    CHECK(a("SET k v PX 100").is_status("OK"));  // in worker 0's expiry index
    // The script holds k for 400 ms: worker 0's sweep, due at 100 ms, waits for it.
    const Reply r = b.cmd({"EVAL",
                           "local t0 = redis.call('TIME') repeat local t = redis.call('TIME') "
                           "until (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > 400000 return 1",
                           "1", "k"});
    CHECK(r.integer == 1);
    for (int i = 0; i < 200 && a("DBSIZE").integer != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(a("DBSIZE").integer == 0);
    long long latency = -1;
    for (const Reply& e : a("LATENCY LATEST").elements)
      if (e.elements.size() == 4 && e.elements[0].str == "expire-cycle")
        latency = e.elements[2].integer;
    CHECK(latency >= 20);
    CHECK(a("LATENCY HISTORY expire-cycle").elements.size() == 1);
  }

  TEST_CASE("LATENCY HISTOGRAM reports cumulative counts in Redis's buckets") {
    Client c(server().port());
    c("CONFIG RESETSTAT");
    for (int i = 0; i < 30; ++i) c("SET hk v");
    const Reply r = c("LATENCY HISTOGRAM set nosuchcommand");
    REQUIRE(r.elements.size() == 2);
    CHECK(r.elements[0].str == "set");
    const Reply& h = r.elements[1];
    REQUIRE(h.elements.size() == 4);
    CHECK(h.elements[0].str == "calls");
    CHECK(h.elements[1].integer == 30);
    CHECK(h.elements[2].str == "histogram_usec");
    const auto& b = h.elements[3].elements;
    REQUIRE(!b.empty());
    const std::set<long long> redis_buckets = {
        1,    2,    4,    8,     16,    33,    66,     132,    264,    528,    1056,
        2113, 4227, 8454, 16908, 33816, 67633, 135266, 270532, 541065, 1082130};
    long long prev = 0;
    for (std::size_t i = 0; i + 1 < b.size(); i += 2) {
      CHECK(redis_buckets.count(b[i].integer) == 1);
      CHECK(b[i + 1].integer > prev);  // cumulative, only buckets with calls
      prev = b[i + 1].integer;
    }
    CHECK(prev == 30);
    // A container names its subcommands; "parent|sub" names one.
    c("CONFIG GET maxmemory");
    const Reply sub = c("LATENCY HISTOGRAM config|get");
    REQUIRE(sub.elements.size() == 2);
    CHECK(sub.elements[0].str == "config|get");
    CHECK(c("LATENCY HISTOGRAM config").elements.size() >= 2);
  }

  // Redis records whole microseconds in an HDR histogram (2 significant digits) and reports the
  // highest value equivalent to 1024 * 2^k ns: a 7 us call counts under 8, 33 us under 33.
  TEST_CASE("a duration lands in the HDR bucket Redis reports it under") {
    using kvlab::server::latency_bucket;
    using kvlab::server::latency_bucket_usec;
    auto usec = [](std::uint64_t ns) { return latency_bucket_usec(latency_bucket(ns)); };
    CHECK(usec(0) == 1);
    CHECK(usec(1000) == 1);
    CHECK(usec(1999) == 1);  // whole microseconds: 1 us
    CHECK(usec(2000) == 2);
    CHECK(usec(3000) == 4);
    CHECK(usec(7000) == 8);
    CHECK(usec(16000) == 16);
    CHECK(usec(17000) == 33);
    CHECK(usec(33000) == 33);
    CHECK(usec(34000) == 66);
    CHECK(usec(1000000) == 1056);
    CHECK(usec(5000000000ull) == 1082130);  // past 1 s: the last bucket
  }

  TEST_CASE("LATENCY errors are Redis's") {
    Client c(server().port());
    check_error(c("LATENCY LATEST x"),
                "ERR wrong number of arguments for 'latency|latest' command");
    check_error(c("LATENCY foo"), "ERR unknown subcommand 'foo'. Try LATENCY HELP.");
  }
}

TEST_SUITE("memory") {
  TEST_CASE("MEMORY USAGE grows with the value, for every type") {
    Client c(server().port());
    c("FLUSHALL");
    long long prev = 0;
    for (int n : {1, 100, 1000, 10000}) {  // steps above the allocator's 16-byte rounding
      c.cmd({"SET", "s", std::string(n, 'x')});
      const long long u = integer(c, {"MEMORY", "USAGE", "s"});
      CHECK(u > prev);
      CHECK(u >= n);
      prev = u;
    }
    for (const char* type : {"list", "set", "hash", "zset"}) {
      c("DEL agg");
      prev = 0;
      for (int n = 1; n <= 64; n *= 4) {
        for (int i = 0; i < n; ++i) {
          const std::string m = "member-with-a-long-name-" + std::to_string(i);
          if (std::string(type) == "list") c.cmd({"RPUSH", "agg", m});
          if (std::string(type) == "set") c.cmd({"SADD", "agg", m});
          if (std::string(type) == "hash") c.cmd({"HSET", "agg", m, "value"});
          if (std::string(type) == "zset") c.cmd({"ZADD", "agg", std::to_string(i), m});
        }
        const long long u = integer(c, {"MEMORY", "USAGE", "agg", "SAMPLES", "0"});
        CAPTURE(type);
        CHECK(u > prev);
        prev = u;
      }
    }
  }

  TEST_CASE("MEMORY USAGE answers nil for a missing key and Redis's argument errors") {
    Client c(server().port());
    c("SET present v");
    CHECK(c("MEMORY USAGE absent").is_nil());
    check_error(c("MEMORY USAGE present SAMPLES"), "ERR syntax error");
    check_error(c("MEMORY USAGE present SAMPLES -1"), "ERR syntax error");
    check_error(c("MEMORY USAGE present SAMPLES x"), "ERR value is not an integer or out of range");
    check_error(c("MEMORY USAGE present FOO 1"), "ERR syntax error");
    CHECK(c("MEMORY USAGE present SAMPLES 1 SAMPLES 2").type == REDIS_REPLY_INTEGER);
    check_error(c("MEMORY USAGE"), "ERR wrong number of arguments for 'memory|usage' command");
  }

  TEST_CASE("MEMORY STATS, DOCTOR, MALLOC-STATS and PURGE answer") {
    Client c(server().port());
    c("SET stats-key v");
    const Reply r = c("MEMORY STATS");
    REQUIRE(r.type == REDIS_REPLY_ARRAY);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < r.elements.size(); i += 2) names.push_back(r.elements[i].str);
    const std::vector<std::string> redis_names = {"peak.allocated",
                                                  "total.allocated",
                                                  "startup.allocated",
                                                  "replication.backlog",
                                                  "clients.slaves",
                                                  "clients.normal",
                                                  "cluster.links",
                                                  "aof.buffer",
                                                  "lua.caches",
                                                  "functions.caches",
                                                  "db.0",
                                                  "overhead.total",
                                                  "keys.count",
                                                  "keys.bytes-per-key",
                                                  "dataset.bytes",
                                                  "dataset.percentage",
                                                  "peak.percentage",
                                                  "allocator.allocated",
                                                  "allocator.active",
                                                  "allocator.resident",
                                                  "allocator-fragmentation.ratio",
                                                  "allocator-fragmentation.bytes",
                                                  "allocator-rss.ratio",
                                                  "allocator-rss.bytes",
                                                  "rss-overhead.ratio",
                                                  "rss-overhead.bytes",
                                                  "fragmentation",
                                                  "fragmentation.bytes"};
    CHECK(names == redis_names);
    CHECK(r.elements[1].integer >= r.elements[3].integer);  // peak >= total
    const std::string doctor = c("MEMORY DOCTOR").str;
    CHECK((doctor.rfind("Hi Sam, ", 0) == 0 || doctor.rfind("Sam, I detected", 0) == 0));
    CHECK(c("MEMORY MALLOC-STATS").type == REDIS_REPLY_STRING);
    CHECK(c("MEMORY PURGE").str == "OK");
    check_error(c("MEMORY foo"), "ERR unknown subcommand 'foo'. Try MEMORY HELP.");
  }
}

TEST_SUITE("help") {
  TEST_CASE("every HELP is Redis's text") {
    Client c(server().port());
    const std::vector<std::string> commands = {"SLOWLOG", "LATENCY", "MEMORY", "PUBSUB"};
    std::map<std::string, std::size_t> lines = {
        {"SLOWLOG", 12}, {"LATENCY", 17}, {"MEMORY", 14}, {"PUBSUB", 14}};
    RedisProcess oracle;
    std::unique_ptr<Client> redis;
    if (oracle.running()) redis = std::make_unique<Client>(oracle.port());
    for (const auto& cmd : commands) {
      CAPTURE(cmd);
      const Reply k = c.cmd({cmd, "HELP"});
      REQUIRE(k.type == REDIS_REPLY_ARRAY);
      CHECK(k.elements.size() == lines[cmd]);
      CHECK(k.elements[0].str == cmd + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
      if (!redis) continue;
      const Reply r = redis->cmd({cmd, "HELP"});
      REQUIRE(r.elements.size() == k.elements.size());
      for (std::size_t i = 0; i < r.elements.size(); ++i)
        CHECK(k.elements[i].str == r.elements[i].str);
    }
  }
}

TEST_SUITE("sharded pubsub") {
  TEST_CASE("SPUBLISH reaches SSUBSCRIBErs only, on every worker, as smessage") {
    Client sub1(server().port()), sub2(server().port()), pub(server().port());
    check_sub(sub1("SSUBSCRIBE sh1 sh2 sh1"), "ssubscribe", "sh1", 1);
    check_sub(sub1.get_reply(), "ssubscribe", "sh2", 2);
    check_sub(sub1.get_reply(), "ssubscribe", "sh1", 2);
    check_sub(sub2("SSUBSCRIBE sh1"), "ssubscribe", "sh1", 1);
    check_sub(sub2("SUBSCRIBE sh2"), "subscribe", "sh2", 1);  // counted apart from shard ones
    check_sub(sub2("PSUBSCRIBE sh*"), "psubscribe", "sh*", 2);
    CHECK(integer(pub, {"SPUBLISH", "sh1", "one"}) == 2);
    CHECK(integer(pub, {"SPUBLISH", "sh2", "two"}) == 1);   // not the SUBSCRIBEr nor the pattern
    CHECK(integer(pub, {"PUBLISH", "sh2", "three"}) == 2);  // not the SSUBSCRIBEr
    CHECK(integer(pub, {"SPUBLISH", "nobody", "x"}) == 0);
    const Reply m1 = sub1.get_reply();
    REQUIRE(m1.elements.size() == 3);
    CHECK(m1.elements[0].str == "smessage");
    CHECK(m1.elements[1].str == "sh1");
    CHECK(m1.elements[2].str == "one");
    CHECK(sub1.get_reply().elements[2].str == "two");
    CHECK(sub2.get_reply().elements[0].str == "smessage");
    const Reply m2 = sub2.get_reply();
    CHECK(m2.elements[0].str == "message");
    CHECK(m2.elements[2].str == "three");
    CHECK(sub2.get_reply().elements[0].str == "pmessage");
  }

  TEST_CASE("PUBSUB SHARDCHANNELS and SHARDNUMSUB count shard subscribers only") {
    Client a(server().port()), b(server().port()), q(server().port());
    a("SSUBSCRIBE news.eu news.us");
    a.get_reply();
    b("SSUBSCRIBE news.eu");
    b("SUBSCRIBE plain");
    const Reply ch = q("PUBSUB SHARDCHANNELS news.*");
    std::set<std::string> names;
    for (const Reply& e : ch.elements) names.insert(e.str);
    CHECK(names == std::set<std::string>{"news.eu", "news.us"});
    CHECK(q("PUBSUB SHARDCHANNELS").elements.size() >= 2);
    const Reply n = q("PUBSUB SHARDNUMSUB news.eu news.us plain none");
    REQUIRE(n.elements.size() == 8);
    CHECK(n.elements[1].integer == 2);
    CHECK(n.elements[3].integer == 1);
    CHECK(n.elements[5].integer == 0);  // a plain channel is not a shard channel
    CHECK(n.elements[7].integer == 0);
    CHECK(q("PUBSUB SHARDNUMSUB").elements.empty());
    const Reply plain = q("PUBSUB NUMSUB news.eu");
    CHECK(plain.elements[1].integer == 0);
    check_error(q("PUBSUB SHARDCHANNELS a b"),
                "ERR unknown subcommand or wrong number of arguments for 'SHARDCHANNELS'. Try "
                "PUBSUB HELP.");
  }

  TEST_CASE("SUNSUBSCRIBE without arguments drops all shard channels; subscriber mode lasts") {
    Client c(server().port()), pub(server().port());
    c("SSUBSCRIBE x1 x2");
    c.get_reply();
    c("SUBSCRIBE n1");
    check_sub(c("UNSUBSCRIBE"), "unsubscribe", "n1", 0);
    // Still in subscriber mode: shard channels count.
    check_error(c("GET k"),
                "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
                "RESET are allowed in this context");
    const Reply ping = c("PING");
    REQUIRE(ping.type == REDIS_REPLY_ARRAY);
    CHECK(ping.elements[0].str == "pong");
    check_sub(c("SUNSUBSCRIBE"), "sunsubscribe", "x1", 1);
    check_sub(c.get_reply(), "sunsubscribe", "x2", 0);
    CHECK(c("PING").str == "PONG");
    check_sub(c("SUNSUBSCRIBE"), "sunsubscribe", std::nullopt, 0);
    check_sub(c("SUNSUBSCRIBE zz"), "sunsubscribe", "zz", 0);
    CHECK(integer(pub, {"SPUBLISH", "x1", "gone"}) == 0);
  }

  TEST_CASE("RESET and closing a connection drop its shard subscriptions") {
    Client q(server().port());
    {
      Client c(server().port());
      c("SSUBSCRIBE r1");
      CHECK(c("RESET").str == "RESET");
      CHECK(q("PUBSUB SHARDNUMSUB r1").elements[1].integer == 0);
      c("SSUBSCRIBE r2");
      CHECK(q("PUBSUB SHARDNUMSUB r2").elements[1].integer == 1);
    }
    for (int i = 0; i < 100 && q("PUBSUB SHARDNUMSUB r2").elements[1].integer != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(q("PUBSUB SHARDNUMSUB r2").elements[1].integer == 0);
  }

  TEST_CASE("SSUBSCRIBE is refused inside MULTI and the channel is a key in COMMAND INFO") {
    Client c(server().port());
    c("MULTI");
    c("SSUBSCRIBE m");
    const Reply r = c("EXEC");
    REQUIRE(r.elements.size() == 1);
    check_error(r.elements[0], "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client");
    const Reply info = c("COMMAND INFO ssubscribe spublish sunsubscribe");
    REQUIRE(info.elements.size() == 3);
    CHECK(info.elements[0].elements[3].integer == 1);
    CHECK(info.elements[0].elements[4].integer == -1);
    CHECK(info.elements[1].elements[1].integer == 3);
    CHECK(info.elements[1].elements[4].integer == 1);
    CHECK(info.elements[2].elements[1].integer == -1);
    check_error(c("SPUBLISH"), "ERR wrong number of arguments for 'spublish' command");
    // In a script the shard channel is no undeclared key; LATENCY is noscript, as in Redis.
    CHECK(c.cmd({"EVAL", "return redis.call('spublish', 'nobody', 'm')", "0"}).integer == 0);
    const Reply lat = c.cmd({"EVAL", "return redis.call('latency', 'latest')", "0"});
    CHECK(lat.type == REDIS_REPLY_ERROR);
    CHECK(lat.str.rfind("ERR This Redis command is not allowed from script", 0) == 0);
  }
}
