// Blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP) and CLIENT
// UNBLOCK: Redis 7.0's replies and texts, FIFO service, wake-ups across workers, and delivery
// exactly once under concurrency, for every --atomicity scheme; what FLUSHALL does to blocked
// clients, and how the end of a wait shows in INFO and the slow log, compared with a
// redis-server child when one is installed.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/harness.hpp"

using kvtest::Client;
using kvtest::Reply;

namespace {

using V = std::vector<std::string>;

V strs(const Reply& r) {
  V out;
  for (const Reply& e : r.elements) out.push_back(e.str);
  return out;
}

// Sends a command without waiting for its reply (the caller reads it later with get_reply()):
// hiredis only buffers appended commands, so write them out now.
void send(Client& c, const V& args) {
  c.append(args);
  int done = 0;
  while (!done && redisBufferWrite(c.raw(), &done) == REDIS_OK) {
  }
}

// Clients whose last command was a blocking one (CLIENT LIST's cmd=).
int count_blocked(Client& c) {
  // CLIENT LIST's flag b, as Redis shows it: in a blocking command now (cmd= names the last
  // command, which stays BLPOP after the wait has ended).
  const std::string list = c("CLIENT LIST").str;
  int count = 0;
  for (std::size_t p = list.find(" flags="); p != std::string::npos;
       p = list.find(" flags=", p + 1)) {
    const std::size_t end = list.find(' ', p + 1);
    if (list.substr(p, end - p).find('b') != std::string::npos) ++count;
  }
  return count;
}

// Waits (bounded, 5 s) until at least n (exactly 0 when n == 0) clients are blocked.
bool wait_blocked(Client& c, int n) {
  for (int i = 0; i < 500; ++i) {
    const int k = count_blocked(c);
    if (n == 0 ? k == 0 : k >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A reply as one line: arrays in brackets, nil as (nil), errors as -text.
std::string flat(const Reply& r) {
  if (r.is_nil()) return "(nil)";
  if (r.type == REDIS_REPLY_INTEGER) return std::to_string(r.integer);
  if (r.is_error()) return "-" + r.str;
  if (r.type != REDIS_REPLY_ARRAY) return r.str;
  std::string out = "[";
  for (const Reply& e : r.elements) out += (out.size() > 1 ? " " : "") + flat(e);
  return out + "]";
}

// The INFO field `name` ("total_error_replies", "errorstat_NOGROUP", "cmdstat_blpop"), or "-".
std::string info_field(Client& c, const std::string& section, const std::string& name) {
  const std::string info = c.cmd({"INFO", section}).str;
  const std::size_t p = info.find("\r\n" + name + ":");
  if (p == std::string::npos) return "-";
  const std::size_t from = p + 2 + name.size() + 1;
  return info.substr(from, info.find("\r\n", from) - from);
}

// cmdstat_<cmd>'s calls and failed_calls (its times differ from run to run).
std::string calls_of(Client& c, const std::string& cmd) {
  const std::string line = info_field(c, "commandstats", "cmdstat_" + cmd);
  const std::size_t calls = line.find("calls="), failed = line.find("failed_calls=");
  if (calls == std::string::npos || failed == std::string::npos) return line;
  return line.substr(calls, line.find(',', calls) - calls) + "," + line.substr(failed);
}

// FLUSHALL/FLUSHDB while clients block: XREADGROUP is told its stream is gone, XREAD and the
// list and sorted-set pops keep waiting and are served by the next write.
std::string flush_scenario(int port) {
  Client admin(port), w(port);
  std::string t;
  for (const char* flush : {"FLUSHALL", "FLUSHDB", "FLUSHALL ASYNC", "FLUSHDB SYNC"}) {
    admin("XADD s 1-1 f v");
    admin("XGROUP CREATE s g $");
    send(w, {"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"});
    REQUIRE(wait_blocked(admin, 1));
    t += std::string(flush) + ": " + flat(admin(flush));
    t += " " + flat(w.get_reply()) + "\n";
  }
  struct Case {
    V block;
    const char* wake;
  };
  const Case cases[] = {
      {{"XREAD", "BLOCK", "0", "STREAMS", "s", "$"}, "XADD s 5-1 f v"},
      {{"BLPOP", "l", "0"}, "RPUSH l a"},
      {{"BLMOVE", "l", "d", "LEFT", "LEFT", "0"}, "RPUSH l b"},
      {{"BZPOPMIN", "z", "0"}, "ZADD z 1 m"},
  };
  for (const Case& c : cases) {
    admin("FLUSHALL");
    admin("XADD s 1-1 f v");
    send(w, c.block);
    REQUIRE(wait_blocked(admin, 1));
    admin("FLUSHALL");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    t += c.block[0] + " still blocked: " + std::to_string(count_blocked(admin));
    admin(c.wake);
    t += " then " + flat(w.get_reply()) + "\n";
  }
  return t;
}

// How the end of a wait is counted: errors in errorstats and total_error_replies, a failed call
// for a served command that answers an error and for CLIENT UNBLOCK (even with the timeout reply,
// as Redis 7.0 counts it), nothing more for a timeout.
std::string stats_scenario(int port) {
  Client admin(port), w(port);
  const std::string id = std::to_string(w("CLIENT ID").integer);
  std::string t;
  auto counts = [&](const std::string& cmd) {
    return calls_of(admin, cmd) +
           " total_error_replies=" + info_field(admin, "stats", "total_error_replies") + "\n";
  };
  admin("CONFIG RESETSTAT");
  admin("XGROUP CREATE s g $ MKSTREAM");
  send(w, {"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"});
  REQUIRE(wait_blocked(admin, 1));
  admin("XGROUP DESTROY s g");
  t += flat(w.get_reply());  // read first: the order of + operands is unspecified
  t += " " + counts("xreadgroup");
  t += "errorstat_NOGROUP:" + info_field(admin, "errorstats", "errorstat_NOGROUP") + "\n";
  admin("CONFIG RESETSTAT");
  send(w, {"BLPOP", "l", "0"});
  REQUIRE(wait_blocked(admin, 1));
  admin("CLIENT UNBLOCK " + id + " ERROR");
  t += flat(w.get_reply());
  t += " " + counts("blpop");
  t += "errorstat_UNBLOCKED:" + info_field(admin, "errorstats", "errorstat_UNBLOCKED") + "\n";
  admin("CONFIG RESETSTAT");
  send(w, {"BLPOP", "l", "0"});
  REQUIRE(wait_blocked(admin, 1));
  admin("CLIENT UNBLOCK " + id);
  t += flat(w.get_reply());
  t += " " + counts("blpop");
  admin("CONFIG RESETSTAT");
  send(w, {"BLMOVE", "l", "d", "LEFT", "LEFT", "0"});
  REQUIRE(wait_blocked(admin, 1));
  admin("SET d x");
  admin("RPUSH l a");
  t += flat(w.get_reply());
  t += " " + counts("blmove");
  admin("CONFIG RESETSTAT");
  t += flat(w("BLPOP nothing 0.05"));
  t += " " + counts("blpop");
  admin("CONFIG RESETSTAT");
  send(w, {"BLPOP", "l2", "0"});
  REQUIRE(wait_blocked(admin, 1));
  admin("RPUSH l2 v");
  t += flat(w.get_reply());
  t += " " + counts("blpop");
  return t;
}

// The slow log: a blocked command is logged, as the client sent it, when a push serves it (after
// the commands of the EXEC that pushed), not when it blocks nor when it times out.
std::string slowlog_scenario(int port) {
  Client admin(port), w(port);
  // The logged commands, newest first, without the polling of wait_blocked (CLIENT LIST).
  auto logged = [&] {
    std::string out;
    for (const Reply& e : admin("SLOWLOG GET -1").elements) {
      if (e.elements.size() < 4 || e.elements[3].elements.empty()) continue;
      if (e.elements[3].elements[0].str == "CLIENT") continue;
      out += flat(e.elements[3]);
    }
    return out;
  };
  std::string t;
  admin("CONFIG SET slowlog-log-slower-than 0");
  admin("SLOWLOG RESET");
  send(w, {"BLPOP", "l", "0"});
  REQUIRE(wait_blocked(admin, 1));
  t += "blocked: " + logged() + "\n";
  admin("MULTI");
  admin("RPUSH l foo");
  admin("SLOWLOG RESET");
  admin("EXEC");
  t += flat(w.get_reply());
  t += " served: " + logged() + "\n";
  admin("SLOWLOG RESET");
  t += flat(w("BLPOP l 0.05"));
  t += " timed out: " + logged() + "\n";
  admin("CONFIG SET slowlog-log-slower-than 10000");
  return t;
}

}  // namespace

TEST_SUITE("server") {
  TEST_CASE("blocking pops answer at once when an element is there, with Redis's shapes") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client c(s.port());
    CHECK(c("RPUSH l a b c d").integer == 4);
    CHECK(strs(c("BLPOP none l 0")) == V{"l", "a"});
    CHECK(strs(c("BRPOP l 0")) == V{"l", "d"});
    CHECK(c("BRPOPLPUSH l l2 0").str == "c");
    CHECK(c("BLMOVE l l2 LEFT LEFT 0").str == "b");
    CHECK(strs(c("LRANGE l2 0 -1")) == V{"b", "c"});
    CHECK(c("RPUSH m 1 2 3").integer == 3);
    const Reply mp = c("BLMPOP 0 2 none m RIGHT COUNT 2");
    REQUIRE(mp.elements.size() == 2);
    CHECK(mp.elements[0].str == "m");
    CHECK(strs(mp.elements[1]) == V{"3", "2"});
    CHECK(c("ZADD z 1 a 2 b 3 c").integer == 3);
    CHECK(strs(c("BZPOPMIN z 0")) == V{"z", "a", "1"});
    CHECK(strs(c("BZPOPMAX z 0")) == V{"z", "c", "3"});
    const Reply zm = c("BZMPOP 0 1 z MIN COUNT 5");
    REQUIRE(zm.elements.size() == 2);
    REQUIRE(zm.elements[1].elements.size() == 1);
    CHECK(strs(zm.elements[1].elements[0]) == V{"b", "2"});
    CHECK(c("EXISTS z").integer == 0);
  }

  TEST_CASE("blocking pops time out with a null array and check arguments as Redis") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client c(s.port());
    for (const char* cmd :
         {"BLPOP k 0.05", "BRPOP k 0.05", "BLMOVE a b LEFT RIGHT 0.05", "BRPOPLPUSH a b 0.05",
          "BZPOPMIN z 0.05", "BZPOPMAX z 0.05", "BLMPOP 0.05 1 k LEFT", "BZMPOP 0.05 1 z MIN"}) {
      CAPTURE(cmd);
      CHECK(c(cmd).is_nil());
    }
    CHECK(c("BLPOP k -1").str == "ERR timeout is negative");
    CHECK(c("BLPOP k abc").str == "ERR timeout is not a float or out of range");
    CHECK(c("BLMPOP 0 0 k LEFT").str == "ERR numkeys should be greater than 0");
    CHECK(c("BLMPOP 0 1 k UP").str == "ERR syntax error");
    CHECK(c("BLMPOP 0 1 k LEFT COUNT 0").str == "ERR count should be greater than 0");
    CHECK(c("BLMOVE a b UP LEFT 0").str == "ERR syntax error");
    CHECK(c("SET s v").is_status("OK"));
    CHECK(c("RPUSH l x").integer == 1);
    CHECK(c("BLPOP s l 0").str ==
          "WRONGTYPE Operation against a key holding the wrong kind of value");
    CHECK(c("BZPOPMIN l 0").str ==
          "WRONGTYPE Operation against a key holding the wrong kind of value");
    // Inside MULTI a blocking command does not block.
    CHECK(c("MULTI").is_status("OK"));
    CHECK(c("BLPOP nothing 0").is_status("QUEUED"));
    CHECK(c("BZPOPMAX nothing 0").is_status("QUEUED"));
    const Reply r = c("EXEC");
    REQUIRE(r.elements.size() == 2);
    CHECK(r.elements[0].is_nil());
    CHECK(r.elements[1].is_nil());
  }

  TEST_CASE("a push wakes the client blocked longest first, and pipelined commands wait") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client admin(s.port());
    std::vector<std::unique_ptr<Client>> waiters;
    for (int i = 0; i < 3; ++i) {
      waiters.push_back(std::make_unique<Client>(s.port()));
      send(*waiters.back(), {"BLPOP", "q", "5"});
      REQUIRE(wait_blocked(admin, i + 1));  // one at a time: a known order
    }
    // The first waiter pipelined a command behind its BLPOP: it must run after the wake-up.
    send(*waiters[0], {"RPUSH", "after", "x"});
    CHECK(admin("RPUSH q e1 e2 e3").integer == 3);
    for (int i = 0; i < 3; ++i)
      CHECK(strs(waiters[i]->get_reply()) == V{"q", "e" + std::to_string(i + 1)});
    CHECK(waiters[0]->get_reply().integer == 1);
    CHECK(admin("LLEN q").integer == 0);
  }

  TEST_CASE("BLMOVE wakes, then its push wakes a client blocked on the destination") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client admin(s.port()), mover(s.port()), popper(s.port());
    send(popper, {"BLPOP", "dst", "5"});
    REQUIRE(wait_blocked(admin, 1));
    send(mover, {"BLMOVE", "src", "dst", "LEFT", "RIGHT", "5"});
    REQUIRE(wait_blocked(admin, 2));
    CHECK(admin("LPUSH src v").integer == 1);
    CHECK(mover.get_reply().str == "v");
    CHECK(strs(popper.get_reply()) == V{"dst", "v"});
    CHECK(admin("EXISTS src dst").integer == 0);
  }

  TEST_CASE("a MULTI/EXEC that pushes wakes blocked clients after it ran whole") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client admin(s.port()), w(s.port());
    send(w, {"BRPOP", "q", "5"});
    REQUIRE(wait_blocked(admin, 1));
    CHECK(admin("MULTI").is_status("OK"));
    CHECK(admin("RPUSH q a").is_status("QUEUED"));
    CHECK(admin("RPUSH q b").is_status("QUEUED"));
    CHECK(admin("EXEC").elements.size() == 2);
    CHECK(strs(w.get_reply()) == V{"q", "b"});  // both pushes happened before the pop
    CHECK(strs(admin("LRANGE q 0 -1")) == V{"a"});
  }

  // As Redis 7.0: a key is ready for a list waiter where a list is stored at it, not where a
  // string was stored or the key was deleted earlier in the same transaction.
  TEST_CASE("in one EXEC the first key to get a list serves the waiter, as in Redis") {
    kvtest::ServerProcess s({"--threads", "1"});
    Client admin(s.port()), w(s.port());
    send(w, {"BLPOP", "k1", "k2", "0"});
    REQUIRE(wait_blocked(admin, 1));
    CHECK(admin("MULTI").is_status("OK"));
    for (const char* cmd : {"SET k1 x", "DEL k1", "RPUSH k2 a", "RPUSH k1 b"})
      CHECK(admin(cmd).is_status("QUEUED"));
    CHECK(admin("EXEC").elements.size() == 4);
    CHECK(strs(w.get_reply()) == V{"k2", "a"});
    CHECK(strs(admin("LRANGE k1 0 -1")) == V{"b"});
  }

  TEST_CASE("CLIENT UNBLOCK ends a wait with the timeout reply or an UNBLOCKED error") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client admin(s.port()), w(s.port());
    const long long id = w("CLIENT ID").integer;
    send(w, {"BLPOP", "q", "0"});
    REQUIRE(wait_blocked(admin, 1));
    CHECK(admin("INFO clients").str.find("\r\nblocked_clients:1\r\n") != std::string::npos);
    CHECK(admin("CLIENT UNBLOCK " + std::to_string(id) + " FOO").str ==
          "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
    CHECK(admin("CLIENT UNBLOCK " + std::to_string(id)).integer == 1);
    CHECK(w.get_reply().is_nil());
    CHECK(admin("CLIENT UNBLOCK " + std::to_string(id)).integer == 0);  // not blocked any more
    CHECK(admin("INFO clients").str.find("\r\nblocked_clients:0\r\n") != std::string::npos);
    send(w, {"BZPOPMIN", "z", "0"});
    REQUIRE(wait_blocked(admin, 1));
    CHECK(admin("CLIENT UNBLOCK " + std::to_string(id) + " ERROR").integer == 1);
    CHECK(w.get_reply().str == "UNBLOCKED client unblocked via CLIENT UNBLOCK");
    CHECK(admin("CLIENT UNBLOCK abc").str == "ERR value is not an integer or out of range");
  }

  TEST_CASE("FLUSHALL and FLUSHDB end a blocked XREADGROUP; other blocked commands wait on") {
    kvtest::ServerProcess s({"--threads", "2"});
    const std::string mine = flush_scenario(s.port());
    CHECK(mine.find("FLUSHALL: OK -UNBLOCKED the stream key no longer exists\n") !=
          std::string::npos);
    CHECK(mine.find("FLUSHDB: OK -UNBLOCKED the stream key no longer exists\n") !=
          std::string::npos);
    CHECK(mine.find("BLPOP still blocked: 1 then [l a]\n") != std::string::npos);
    kvtest::RedisProcess redis;
    if (!redis.running()) return;  // the oracle is optional
    CHECK(mine == flush_scenario(redis.port()));
  }

  TEST_CASE("the end of a wait counts its error and failed call as Redis counts them") {
    kvtest::ServerProcess s({"--threads", "2"});
    const std::string mine = stats_scenario(s.port());
    CHECK(mine.find("-NOGROUP the consumer group this client was blocked on no longer exists "
                    "calls=1,failed_calls=1 total_error_replies=1\nerrorstat_NOGROUP:count=1\n") !=
          std::string::npos);
    kvtest::RedisProcess redis;
    if (!redis.running()) return;
    CHECK(mine == stats_scenario(redis.port()));
  }

  TEST_CASE("a blocked command is in the slow log once a push serves it, not before") {
    kvtest::ServerProcess s({"--threads", "2"});
    const std::string mine = slowlog_scenario(s.port());
    CHECK(mine.find("[l foo] served: [BLPOP l 0][SLOWLOG RESET]\n") != std::string::npos);
    kvtest::RedisProcess redis;
    if (!redis.running()) return;
    CHECK(mine == slowlog_scenario(redis.port()));
  }

  // Property: with consumers blocked on both workers (and some that block, then disconnect),
  // every pushed element is delivered exactly once or is still in the list; none is lost or
  // duplicated. Pushers on both workers.
  TEST_CASE("blocked consumers on every worker get every element exactly once") {
    for (const char* scheme : {"global", "key-locks", "stripes"}) {
      CAPTURE(scheme);
      kvtest::ServerProcess s({"--threads", "2", "--atomicity", scheme});
      REQUIRE(s.running());
      constexpr int kPushers = 2, kPerPusher = 1500, kConsumers = 4;
      std::atomic<int> pushers_left{kPushers};
      std::mutex mu;
      std::multiset<std::string> received;
      // Quitters: block, then disconnect before anything is pushed to their key... on the same
      // key, so a disconnect must not take elements with it.
      {
        std::vector<std::unique_ptr<Client>> quitters;
        Client admin(s.port());
        for (int i = 0; i < 3; ++i) {
          quitters.push_back(std::make_unique<Client>(s.port()));
          send(*quitters.back(), {"BLPOP", "jobs", "0"});
        }
        REQUIRE(wait_blocked(admin, 3));
        quitters.clear();                 // disconnect while blocked
        REQUIRE(wait_blocked(admin, 0));  // the server has seen them go
      }
      std::vector<std::thread> ts;
      for (int i = 0; i < kConsumers; ++i) {
        ts.emplace_back([&] {
          Client c(s.port());
          std::vector<std::string> mine;
          for (;;) {
            const Reply r = c.cmd({"BLPOP", "jobs", "0.2"});
            if (r.is_nil()) {
              if (pushers_left.load() == 0) break;
              continue;
            }
            REQUIRE(r.elements.size() == 2);
            mine.push_back(r.elements[1].str);
          }
          std::lock_guard<std::mutex> lock(mu);
          received.insert(mine.begin(), mine.end());
        });
      }
      for (int p = 0; p < kPushers; ++p) {
        ts.emplace_back([&, p] {
          Client c(s.port());
          for (int n = 0; n < kPerPusher; n += 3) {
            std::vector<std::string> push{"RPUSH", "jobs"};
            for (int k = n; k < std::min(n + 3, kPerPusher); ++k)
              push.push_back(std::to_string(p) + ":" + std::to_string(k));
            c.cmd(push);
          }
          pushers_left.fetch_sub(1);
        });
      }
      for (auto& t : ts) t.join();
      Client c(s.port());
      const Reply rest = c("LRANGE jobs 0 -1");
      std::multiset<std::string> all = received;
      for (const Reply& e : rest.elements) all.insert(e.str);
      CHECK(all.size() == kPushers * kPerPusher);
      std::set<std::string> unique(all.begin(), all.end());
      CHECK(unique.size() == all.size());  // nothing delivered twice
      for (int p = 0; p < kPushers; ++p)
        for (int k = 0; k < kPerPusher; ++k)
          if (unique.count(std::to_string(p) + ":" + std::to_string(k)) == 0) {
            FAIL_CHECK("lost " << p << ":" << k);
          }
      MESSAGE(std::string(scheme) << ": " << received.size() << " delivered to blocked consumers, "
                                  << rest.elements.size() << " left");
    }
  }
}
