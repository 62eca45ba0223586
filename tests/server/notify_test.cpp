// Keyspace notifications (notify-keyspace-events) against a live redis-server: the same command
// sequence, run on both, must produce the same stream of __keyspace@0__/__keyevent@0__ messages
// for a PSUBSCRIBE '__key*__:*' subscriber, class by class (g $ l s h z t n m, then x and e on
// their own), with the writer on the subscriber's worker and on another one. Skipped when
// redis-server is not installed. Every wait is bounded; every server is stopped by pid.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/harness.hpp"

using kvtest::Client;
using kvtest::Reply;

namespace {

using Script = std::vector<std::vector<std::string>>;

// A step that sleeps instead of sending a command (expiry needs time to pass).
constexpr std::string_view kSleep = "__sleep_ms";
// A step sent by a connection of its own, which then blocks (BLPOP ...): the script goes on once
// the server counts it as blocked.
constexpr std::string_view kBlock = "__block";
// An argument replaced by the last bulk-string reply (DUMP's payload for RESTORE).
constexpr std::string_view kLast = "__last_reply";

// The worker a kvlab connection runs on (CLIENT INFO's kvlab-worker), or -1 (redis-server).
int worker_of(Client& c) {
  const Reply r = c("CLIENT INFO");
  const auto at = r.str.find("kvlab-worker=");
  if (at == std::string::npos) return -1;
  return std::atoi(r.str.c_str() + at + 13);
}

// Runs script on the server at port with notify-keyspace-events = flags and returns what a
// PSUBSCRIBE '__key*__:*' subscriber received, one "channel message" line each. other_worker: the
// writer runs on another worker than the subscriber (kvlab with two workers; ignored for Redis).
std::vector<std::string> notifications(int port, const std::string& flags, const Script& script,
                                       bool other_worker) {
  Client sub(port);
  REQUIRE(sub.ok());
  const int sub_worker = worker_of(sub);
  // Connections are spread over the workers by the kernel: try a bounded number of them.
  std::unique_ptr<Client> w;
  for (int i = 0; i < 64; ++i) {
    auto c = std::make_unique<Client>(port);
    REQUIRE(c->ok());
    const int cw = worker_of(*c);
    if (sub_worker < 0 || (cw != sub_worker) == other_worker) {
      w = std::move(c);
      break;
    }
  }
  REQUIRE_MESSAGE(w != nullptr, "no connection landed on the wanted worker in 64 tries");
  CHECK(w->cmd({"FLUSHALL"}).is_status("OK"));
  const Reply ps = sub.cmd({"PSUBSCRIBE", "__key*__:*"});
  REQUIRE(ps.elements.size() == 3);
  const Reply s = sub.cmd({"SUBSCRIBE", "sync"});
  REQUIRE(s.elements.size() == 3);
  CHECK(w->cmd({"CONFIG", "SET", "notify-keyspace-events", flags}).is_status("OK"));
  std::string last;
  std::vector<std::unique_ptr<Client>> blocked;
  for (const auto& step : script) {
    if (step[0] == kSleep) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(step[1])));
      continue;
    }
    if (step[0] == kBlock) {
      blocked.push_back(std::make_unique<Client>(port));
      blocked.back()->append(std::vector<std::string>(step.begin() + 1, step.end()));
      int done = 0;
      while (done == 0) REQUIRE(redisBufferWrite(blocked.back()->raw(), &done) == REDIS_OK);
      bool seen = false;
      for (int i = 0; i < 200 && !seen; ++i) {  // up to 2 s
        const Reply info = w->cmd({"INFO", "clients"});
        seen = info.str.find("blocked_clients:" + std::to_string(blocked.size()) + "\r") !=
               std::string::npos;
        if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      REQUIRE_MESSAGE(seen, "not blocked: " << step[1]);
      continue;
    }
    std::vector<std::string> args = step;
    for (auto& a : args)
      if (a == kLast) a = last;
    const Reply r = w->cmd(args);
    REQUIRE_MESSAGE(r.type != -1, "connection lost at " << step[0]);
    if (r.type == REDIS_REPLY_STRING) last = r.str;
  }
  CHECK(w->cmd({"CONFIG", "SET", "notify-keyspace-events", ""}).is_status("OK"));
  // One publisher's messages arrive in order, its notifications included: the marker comes last.
  CHECK(w->cmd({"PUBLISH", "sync", "end"}).integer == 1);
  std::vector<std::string> out;
  for (int i = 0; i < 10000; ++i) {
    const Reply m = sub.get_reply();
    REQUIRE_MESSAGE(m.type == REDIS_REPLY_ARRAY, "no sync marker (timeout)");
    if (m.elements.size() == 3 && m.elements[0].str == "message") break;
    REQUIRE(m.elements.size() == 4);
    out.push_back(m.elements[2].str + " " + m.elements[3].str);
  }
  return out;
}

// CHECKs that two streams are equal, showing the first difference with some context.
void check_same(const std::vector<std::string>& kvlab, const std::vector<std::string>& redis) {
  std::size_t i = 0;
  while (i < kvlab.size() && i < redis.size() && kvlab[i] == redis[i]) ++i;
  if (i == kvlab.size() && i == redis.size()) {
    CHECK(kvlab.size() == redis.size());
    return;
  }
  std::ostringstream os;
  os << "streams differ at message " << i << " (kvlab " << kvlab.size() << ", redis "
     << redis.size() << " messages)\n";
  for (std::size_t k = i >= 3 ? i - 3 : 0; k < i + 4; ++k) {
    os << "  #" << k << "  kvlab: " << (k < kvlab.size() ? kvlab[k] : "-")
       << "   redis: " << (k < redis.size() ? redis[k] : "-") << "\n";
  }
  FAIL_CHECK(os.str());
}

kvtest::ServerProcess& kvlab() {
  static kvtest::ServerProcess s({"--threads", "2", "--enable-debug-command", "yes"});
  return s;
}

kvtest::RedisProcess& redis() {
  static kvtest::RedisProcess r({"--enable-debug-command", "yes"});
  return r;
}

void compare(const std::string& flags, const Script& script) {
  REQUIRE(kvlab().running());
  if (!redis().running()) {
    MESSAGE("redis-server not installed: comparison skipped");
    return;
  }
  const auto want = notifications(redis().port(), flags, script, false);
  CHECK(!want.empty() == (flags != "" && !script.empty()));
  for (bool other_worker : {false, true}) {
    CAPTURE(other_worker);
    check_same(notifications(kvlab().port(), flags, script, other_worker), want);
  }
}

// Every command family, with the cases where Redis adds or skips an event: a key created ("new"),
// a container emptied ("del"), a write that changes nothing (no event), a STORE with an empty
// result, a read that misses ("keymiss").
const Script kEveryClass = {
    // strings ($) and generic (g)
    {"SET", "s1", "v"},
    {"SET", "s1", "v2", "EX", "100"},
    {"SET", "s1", "v3", "NX"},
    {"SET", "s1", "v4", "XX", "GET"},
    {"SET", "s2", "v", "XX"},
    {"SETNX", "s2", "v"},
    {"SETNX", "s2", "v"},
    {"SETEX", "s3", "100", "v"},
    {"PSETEX", "s3", "100000", "v"},
    {"GETSET", "s3", "w"},
    {"GETEX", "s3", "EX", "100"},
    {"GETEX", "s3", "PERSIST"},
    {"GETEX", "s3", "PERSIST"},
    {"GETEX", "s3", "PXAT", "1"},
    {"GETEX", "nokey"},
    {"GETDEL", "s2"},
    {"GETDEL", "s2"},
    {"MSET", "m1", "a", "m2", "b"},
    {"MSETNX", "m3", "a", "m4", "b"},
    {"MSETNX", "m3", "a", "m5", "b"},
    {"SETRANGE", "m1", "3", "xyz"},
    {"SETRANGE", "m1", "3", ""},
    {"APPEND", "m2", "cd"},
    {"APPEND", "m6", "cd"},
    {"INCR", "n1"},
    {"DECRBY", "n1", "5"},
    {"INCRBYFLOAT", "n1", "1.5"},
    {"INCR", "m1"},
    {"SETBIT", "b1", "7", "1"},
    {"SETBIT", "b1", "7", "1"},
    {"BITFIELD", "b2", "SET", "u8", "0", "255", "GET", "u8", "0"},
    {"BITFIELD", "b2", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "10"},
    {"BITOP", "OR", "b3", "b1", "b2"},
    {"BITOP", "AND", "b3", "nokey1", "nokey2"},
    {"PFADD", "h1", "a", "b"},
    {"PFADD", "h1", "a"},
    {"PFMERGE", "h2", "h1"},
    {"GET", "nokey"},
    {"MGET", "s1", "nokey"},
    {"STRLEN", "nokey"},
    {"EXISTS", "s1", "nokey"},
    {"TYPE", "nokey"},
    {"TTL", "nokey"},
    {"EXPIRE", "s1", "100"},
    {"PEXPIRE", "s1", "100000", "NX"},
    {"PERSIST", "s1"},
    {"PERSIST", "s1"},
    {"EXPIRE", "m4", "-1"},
    {"EXPIRE", "nokey", "10"},
    {"DEL", "m3", "nokey", "m5"},
    {"UNLINK", "m6"},
    {"RENAME", "m1", "r1"},
    {"RENAME", "m2", "r1"},
    {"RENAMENX", "r1", "n1"},
    {"COPY", "r1", "c1"},
    {"COPY", "r1", "c1", "REPLACE"},
    {"COPY", "nokey", "c2"},
    {"DUMP", "c1"},
    {"RESTORE", "c3", "0", std::string(kLast)},
    {"RESTORE", "c3", "0", std::string(kLast), "REPLACE"},
    {"TOUCH", "c3", "nokey"},
    // lists (l)
    {"LPUSH", "l1", "a", "b"},
    {"RPUSH", "l1", "c"},
    {"LPUSHX", "nolist", "a"},
    {"RPUSHX", "l1", "d"},
    {"LINSERT", "l1", "BEFORE", "c", "x"},
    {"LINSERT", "l1", "BEFORE", "nothere", "x"},
    {"LSET", "l1", "0", "z"},
    {"LREM", "l1", "0", "x"},
    {"LREM", "l1", "0", "nothere"},
    {"LTRIM", "l1", "0", "2"},
    {"LRANGE", "nolist", "0", "-1"},
    {"LPOP", "l1"},
    {"RPOP", "l1", "0"},
    {"LMOVE", "l1", "l2", "LEFT", "RIGHT"},
    {"RPOPLPUSH", "l1", "l2"},
    {"LMOVE", "l2", "l2", "LEFT", "LEFT"},
    {"LMOVE", "nolist", "l2", "LEFT", "LEFT"},
    {"RPUSH", "l3", "a", "b", "c"},
    {"LMPOP", "2", "nolist", "l3", "RIGHT", "COUNT", "2"},
    {"BLPOP", "l3", "1"},
    {"RPUSH", "l4", "x"},
    {"BLMOVE", "l4", "l5", "RIGHT", "LEFT", "1"},
    {"BRPOP", "l5", "1"},
    {"RPUSH", "l6", "3", "1", "2"},
    {"SORT", "l6", "STORE", "l7"},
    {"SORT", "nolist", "STORE", "l7"},
    {"LTRIM", "l6", "5", "10"},
    // sets (s)
    {"SADD", "set1", "a", "b", "c"},
    {"SADD", "set1", "a"},
    {"SREM", "set1", "x"},
    {"SREM", "set1", "a"},
    {"SPOP", "set1"},
    {"SPOP", "set1", "0"},
    {"SADD", "set2", "b", "c", "d"},
    {"SMOVE", "set2", "set3", "d"},
    {"SMOVE", "set2", "set3", "nothere"},
    {"SINTERSTORE", "set4", "set2", "set3"},
    {"SUNIONSTORE", "set4", "set2", "set3"},
    {"SDIFFSTORE", "set5", "set2", "set2"},
    {"SDIFFSTORE", "set4", "set2", "set2"},
    {"SMEMBERS", "noset"},
    {"SPOP", "set3", "10"},
    // hashes (h)
    {"HSET", "hh", "f", "1", "g", "2"},
    {"HMSET", "hh", "f", "3"},
    {"HSETNX", "hh", "f", "4"},
    {"HSETNX", "hh", "k", "4"},
    {"HINCRBY", "hh", "f", "2"},
    {"HINCRBYFLOAT", "hh", "g", "0.5"},
    {"HINCRBY", "hh", "nope", "x"},
    {"HDEL", "hh", "nothere"},
    {"HGET", "nohash", "f"},
    {"HDEL", "hh", "f", "g", "k"},
    // sorted sets (z)
    {"ZADD", "z1", "1", "a", "2", "b", "3", "c", "4", "d"},
    {"ZADD", "z1", "1", "a"},
    {"ZADD", "z1", "5", "a"},
    {"ZADD", "z1", "INCR", "1", "a"},
    {"ZINCRBY", "z1", "1", "b"},
    {"ZREM", "z1", "nothere"},
    {"ZREM", "z1", "a"},
    {"ZADD", "z1", "5", "e", "6", "f", "7", "g"},
    {"ZREMRANGEBYSCORE", "z1", "100", "200"},
    {"ZREMRANGEBYSCORE", "z1", "7", "7"},
    {"ZREMRANGEBYRANK", "z1", "0", "0"},
    {"ZREMRANGEBYLEX", "z1", "[z", "[zz"},
    {"ZPOPMIN", "z1"},
    {"ZPOPMAX", "z1", "0"},
    {"ZADD", "z2", "1", "x", "2", "y"},
    {"ZUNIONSTORE", "z3", "2", "z1", "z2"},
    {"ZINTERSTORE", "z4", "2", "z1", "z2"},
    {"ZINTERSTORE", "z3", "2", "z1", "nozset"},
    {"ZDIFFSTORE", "z5", "1", "z2"},
    {"ZRANGESTORE", "z6", "z2", "0", "0"},
    {"ZRANGESTORE", "z6", "nozset", "0", "-1"},
    {"ZMPOP", "2", "nozset", "z2", "MIN"},
    {"BZPOPMAX", "z2", "1"},
    {"ZSCORE", "nozset", "a"},
    {"GEOADD", "g1", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"},
    {"GEOADD", "g1", "13.361389", "38.115556", "Palermo"},
    {"GEOSEARCHSTORE", "g2", "g1", "FROMMEMBER", "Palermo", "BYRADIUS", "500", "km"},
    {"GEORADIUS", "g1", "15", "37", "200", "km", "STORE", "g3"},
    {"GEOSEARCHSTORE", "g2", "g1", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"},
    {"ZPOPMIN", "z1", "10"},
    // streams (t)
    {"XADD", "x1", "1-1", "f", "v"},
    {"XADD", "x1", "MAXLEN", "1", "2-1", "f", "v"},
    {"XADD", "nostream", "NOMKSTREAM", "*", "f", "v"},
    {"XADD", "x1", "3-1", "f", "v"},
    {"XDEL", "x1", "9-9"},
    {"XDEL", "x1", "2-1"},
    {"XTRIM", "x1", "MAXLEN", "100"},
    {"XADD", "x1", "4-1", "f", "v"},
    {"XTRIM", "x1", "MAXLEN", "1"},
    {"XSETID", "x1", "10-1"},
    {"XGROUP", "CREATE", "x2", "grp", "$", "MKSTREAM"},
    {"XGROUP", "CREATE", "x1", "grp", "0"},
    {"XGROUP", "CREATE", "x1", "grp", "0"},
    {"XGROUP", "CREATECONSUMER", "x1", "grp", "alice"},
    {"XGROUP", "CREATECONSUMER", "x1", "grp", "alice"},
    {"XREADGROUP", "GROUP", "grp", "bob", "STREAMS", "x1", ">"},
    {"XREADGROUP", "GROUP", "grp", "bob", "STREAMS", "x1", ">"},
    {"XCLAIM", "x1", "grp", "carol", "0", "4-1"},
    {"XAUTOCLAIM", "x1", "grp", "dave", "0", "0"},
    {"XAUTOCLAIM", "x1", "grp", "dave", "0", "0"},
    {"XGROUP", "DELCONSUMER", "x1", "grp", "nobody"},
    {"XGROUP", "DELCONSUMER", "x1", "grp", "alice"},
    {"XGROUP", "SETID", "x1", "grp", "0"},
    {"XGROUP", "DESTROY", "x1", "nogrp"},
    {"XGROUP", "DESTROY", "x1", "grp"},
    {"XRANGE", "nostream", "-", "+"},
    // transactions and scripts notify as their commands do
    {"MULTI"},
    {"SET", "t1", "a"},
    {"LPUSH", "t2", "a"},
    {"DEL", "t1", "t2"},
    {"EXEC"},
    {"EVAL", "redis.call('set', KEYS[1], 'x'); return redis.call('incr', KEYS[2])", "2", "e1",
     "e2"},
};

}  // namespace

TEST_CASE("the notification stream of every class matches redis-server") {
  compare("AKEnm", kEveryClass);
}

TEST_CASE("keyspace-only and keyevent-only streams match redis-server") {
  compare("K$", kEveryClass);
  compare("Elsh", kEveryClass);
  compare("Kgz", kEveryClass);
  compare("Et", kEveryClass);
}

TEST_CASE("nothing is published while notify-keyspace-events is empty or names no channel") {
  REQUIRE(kvlab().running());
  CHECK(notifications(kvlab().port(), "", kEveryClass, true).empty());
  CHECK(notifications(kvlab().port(), "A", kEveryClass, true).empty());   // no K, no E
  CHECK(notifications(kvlab().port(), "KE", kEveryClass, true).empty());  // no class
}

// Expiry: a key read after its TTL (lazy) and one nobody touches (the active sweep on the key's
// own worker, whoever subscribes) both notify "expired"; DEL of an expired key too.
TEST_CASE("expired keys notify as in redis-server, lazily and by the active sweep") {
  compare("KEgx", {
                      {"PSETEX", "lazy", "20", "v"},
                      {std::string(kSleep), "60"},
                      {"GET", "lazy"},
                      {"PSETEX", "active", "20", "v"},
                      {std::string(kSleep), "400"},
                      {"PSETEX", "deleted", "20", "v"},
                      {std::string(kSleep), "60"},
                      {"DEL", "deleted"},
                  });
}

// A command that meets a key whose TTL has passed expires it first, as Redis's lookups do:
// "expired" (then "keymiss" for a read, "new" for a write that creates the key again) before the
// command's own events. The active sweep is off meanwhile, so that only the commands expire keys.
TEST_CASE("commands on expired keys notify as in redis-server") {
  const Script script = {
      {"DEBUG", "SET-ACTIVE-EXPIRE", "0"},
      {"PSETEX", "s", "20", "v"},
      {"PSETEX", "n", "20", "1"},
      {"PSETEX", "k1", "20", "v"},
      {"PSETEX", "k2", "20", "v"},
      {"PSETEX", "k3", "20", "v"},
      {"PSETEX", "k4", "20", "v"},
      {"RPUSH", "l", "a"},
      {"PEXPIRE", "l", "20"},
      {"HSET", "h", "f", "v"},
      {"PEXPIRE", "h", "20"},
      {"SADD", "st", "a"},
      {"PEXPIRE", "st", "20"},
      {"ZADD", "z", "1", "a"},
      {"PEXPIRE", "z", "20"},
      {"XADD", "x", "1-1", "f", "v"},
      {"PEXPIRE", "x", "20"},
      {std::string(kSleep), "60"},
      {"SET", "s", "w"},
      {"INCR", "n"},
      {"RPUSH", "l", "b"},
      {"HSET", "h", "f", "w"},
      {"SADD", "st", "b"},
      {"ZADD", "z", "2", "b"},
      {"XADD", "x", "2-1", "f", "v"},
      {"GET", "k1"},
      {"EXPIRE", "k2", "100"},
      {"DEL", "k3"},
      {"RENAME", "k4", "k5"},
      {"DEBUG", "SET-ACTIVE-EXPIRE", "1"},
  };
  compare("AKEnm", script);
}

// Blocked clients served by a push: the pusher's event, then the pop the server runs for the
// blocked client ("lpop", "zpopmin", BLMOVE's push and pop), then "del" when that empties the key.
TEST_CASE("clients served from a blocking wait notify as in redis-server") {
  compare("AKEn", {
                      {std::string(kBlock), "BLPOP", "bl", "5"},
                      {std::string(kBlock), "BLMOVE", "src", "dst", "RIGHT", "LEFT", "5"},
                      {std::string(kBlock), "BZPOPMIN", "bz", "5"},
                      {std::string(kBlock), "BLMPOP", "5", "1", "bm", "LEFT", "COUNT", "5"},
                      {std::string(kBlock), "BZMPOP", "5", "1", "bzm", "MAX", "COUNT", "5"},
                      {"LPUSH", "bl", "a", "b"},
                      {"RPUSH", "src", "x"},
                      {"ZADD", "bz", "1", "m"},
                      {"RPUSH", "bm", "a", "b"},
                      {"ZADD", "bzm", "1", "a", "2", "b"},
                  });
}

// Eviction: CONFIG SET maxmemory evicts at once (as Redis 7.0), and each evicted key notifies.
TEST_CASE("evicted keys notify as in redis-server") {
  compare("Ee", {
                    {"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"},
                    {"SET", "ev", "v"},
                    {"CONFIG", "SET", "maxmemory", "1"},
                    {"CONFIG", "SET", "maxmemory", "0"},
                    {"CONFIG", "SET", "maxmemory-policy", "noeviction"},
                });
}

// The active sweep's events leave without waiting for another command: a key given a TTL and then
// left alone notifies "expired" to a subscriber on either worker while its writer stays silent.
TEST_CASE("an actively expired key notifies while no command runs") {
  REQUIRE(kvlab().running());
  for (bool other_worker : {false, true}) {
    CAPTURE(other_worker);
    Client sub(kvlab().port());
    REQUIRE(sub.ok());
    const int sub_worker = worker_of(sub);
    std::unique_ptr<Client> w;
    for (int i = 0; i < 64 && w == nullptr; ++i) {
      auto c = std::make_unique<Client>(kvlab().port());
      if (c->ok() && (worker_of(*c) != sub_worker) == other_worker) w = std::move(c);
    }
    REQUIRE(w != nullptr);
    REQUIRE(sub.cmd({"SUBSCRIBE", "__keyevent@0__:expired"}).elements.size() == 3);
    CHECK(w->cmd({"CONFIG", "SET", "notify-keyspace-events", "Ex"}).is_status("OK"));
    CHECK(w->cmd({"PSETEX", "quiet", "30", "v"}).is_status("OK"));
    const Reply m = sub.get_reply();  // the client's 5 s timeout bounds the wait
    REQUIRE(m.elements.size() == 3);
    CHECK(m.elements[1].str == "__keyevent@0__:expired");
    CHECK(m.elements[2].str == "quiet");
    CHECK(w->cmd({"CONFIG", "SET", "notify-keyspace-events", ""}).is_status("OK"));
  }
}

// CONFIG SET maxmemory below the memory in use evicts at once, as Redis 7.0 does, not at the next
// command: the subscriber gets "evicted" while the writer sends nothing more.
TEST_CASE("CONFIG SET maxmemory evicts at once and the evicted key notifies") {
  REQUIRE(kvlab().running());
  Client sub(kvlab().port());
  Client w(kvlab().port());
  REQUIRE((sub.ok() && w.ok()));
  CHECK(w.cmd({"FLUSHALL"}).is_status("OK"));
  REQUIRE(sub.cmd({"SUBSCRIBE", "__keyevent@0__:evicted"}).elements.size() == 3);
  CHECK(w.cmd({"CONFIG", "SET", "notify-keyspace-events", "Ee"}).is_status("OK"));
  CHECK(w.cmd({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}).is_status("OK"));
  CHECK(w.cmd({"SET", "victim", "v"}).is_status("OK"));
  CHECK(w.cmd({"CONFIG", "SET", "maxmemory", "1"}).is_status("OK"));
  const Reply m = sub.get_reply();  // the client's 5 s timeout bounds the wait
  REQUIRE(m.elements.size() == 3);
  CHECK(m.elements[2].str == "victim");
  CHECK(w.cmd({"CONFIG", "SET", "maxmemory", "0"}).is_status("OK"));
  CHECK(w.cmd({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).is_status("OK"));
  CHECK(w.cmd({"CONFIG", "SET", "notify-keyspace-events", ""}).is_status("OK"));
}
