// Whole-command atomicity across keys: MULTI/EXEC/WATCH semantics as Redis 7.0, and
// concurrency properties checked for every --atomicity scheme over several backends, with clients
// on both workers of a 2-worker kvlab-server.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/harness.hpp"

using kvtest::Client;
using kvtest::Reply;

namespace {

struct Config {
  std::string scheme, backend;
};

// Every scheme over a lock-free hash, a locked hash and the lock-free skip list.
std::vector<Config> configs() {
  std::vector<Config> out;
  for (const char* s : {"global", "key-locks", "stripes"})
    for (const char* b : {"hash/kvlab", "hash/locked", "skiplist/kvlab"}) out.push_back({s, b});
  return out;
}

kvtest::ServerProcess start(const Config& c) {
  return kvtest::ServerProcess({"--threads", "2", "--atomicity", c.scheme, "--backend", c.backend});
}

// Runs fn(i) on n threads and joins them.
template <class F>
void run_threads(int n, F&& fn) {
  std::vector<std::thread> ts;
  for (int i = 0; i < n; ++i) ts.emplace_back([&fn, i] { fn(i); });
  for (auto& t : ts) t.join();
}

long long to_ll(const Reply& r) {
  return r.type == REDIS_REPLY_STRING ? std::stoll(r.str) : -1;
}

// An MGET over the keys one MSET writes with one value: true when it saw two values (half of it).
bool mixed_values(const Reply& r) {
  for (const Reply& e : r.elements)
    if (e.str != r.elements[0].str) return true;
  return false;
}

// An MGET a … b beside a client that runs INCR a, then INCR b: one instant sees a == b or
// a == b + 1 (absent counts as 0); false for b ahead of a, or a gap.
bool in_write_order(const Reply& r) {
  const long long a = r.elements.front().is_nil() ? 0 : to_ll(r.elements.front());
  const long long b = r.elements.back().is_nil() ? 0 : to_ll(r.elements.back());
  return a == b || a == b + 1;
}

}  // namespace

TEST_SUITE("server") {
  TEST_CASE("MULTI queues commands and EXEC runs them in order with their replies") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client c(s.port());
    CHECK(c("SET a 1").is_status("OK"));
    CHECK(c("MULTI").is_status("OK"));
    CHECK(c("INCR a").is_status("QUEUED"));
    CHECK(c("LPUSH a x").is_status("QUEUED"));  // a runtime error does not roll back
    CHECK(c("GET a").is_status("QUEUED"));
    const Reply r = c("EXEC");
    REQUIRE(r.type == REDIS_REPLY_ARRAY);
    REQUIRE(r.elements.size() == 3);
    CHECK(r.elements[0].integer == 2);
    CHECK(r.elements[1].str == "WRONGTYPE Operation against a key holding the wrong kind of value");
    CHECK(r.elements[2].str == "2");
    // An empty transaction answers an empty array.
    CHECK(c("MULTI").is_status("OK"));
    CHECK(c("EXEC").elements.empty());
  }

  TEST_CASE("MULTI errors follow Redis: nesting, EXEC/DISCARD without MULTI, EXECABORT") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client c(s.port());
    CHECK(c("EXEC").str == "ERR EXEC without MULTI");
    CHECK(c("DISCARD").str == "ERR DISCARD without MULTI");
    CHECK(c("MULTI").is_status("OK"));
    CHECK(c("MULTI").str == "ERR MULTI calls can not be nested");
    CHECK(c("WATCH x").str == "ERR WATCH inside MULTI is not allowed");
    CHECK(c("SET x 1").is_status("QUEUED"));
    CHECK(c("EXEC").elements.size() == 1);  // the two errors above did not abort it
    CHECK(c("MULTI").is_status("OK"));
    CHECK(c("SET x 2").is_status("QUEUED"));
    CHECK(c("NOSUCHCOMMAND").is_error());
    CHECK(c("GET").str == "ERR wrong number of arguments for 'get' command");
    CHECK(c("EXEC").str == "EXECABORT Transaction discarded because of previous errors.");
    CHECK(c("GET x").str == "1");
    CHECK(c("MULTI").is_status("OK"));
    CHECK(c("SET x 3").is_status("QUEUED"));
    CHECK(c("DISCARD").is_status("OK"));
    CHECK(c("GET x").str == "1");
  }

  // Found by Redis 7.0.15's own suite (unit/multi, "MULTI with SHUTDOWN"): SHUTDOWN was queued
  // and EXEC stopped the server.
  TEST_CASE("SHUTDOWN inside MULTI is refused and the transaction aborts, as Redis's no_multi") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client c(s.port());
    CHECK(c("MULTI").is_status("OK"));
    CHECK(c("SET foo bar").is_status("QUEUED"));
    CHECK(c("SHUTDOWN").str == "ERR Command not allowed inside a transaction");
    CHECK(c("EXEC").str == "EXECABORT Transaction discarded because of previous errors.");
    CHECK(c("GET foo").is_nil());
    CHECK(c("PING").is_status("PONG"));  // still running
  }

  // Redis 7.0's rejectCommand -> execCommandAbort; found by tests/compat (seed 2, sequence 4411).
  TEST_CASE("A rejected EXEC answers EXECABORT with the reason and discards the transaction") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client c(s.port());
    CHECK(c("EXEC x").str ==
          "EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' "
          "command");
    CHECK(c("MULTI").is_status("OK"));
    CHECK(c("SET x 1").is_status("QUEUED"));
    CHECK(c("EXEC x").str ==
          "EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' "
          "command");
    CHECK(c("EXEC").str == "ERR EXEC without MULTI");
    CHECK(c("EXISTS x").integer == 0);
    CHECK(c("SSUBSCRIBE k1").elements.size() == 3);
    CHECK(c("EXEC").str ==
          "EXECABORT Transaction discarded because of: Can't execute 'exec': only (P|S)SUBSCRIBE "
          "/ (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context");
    CHECK(c("MULTI").str ==
          "ERR Can't execute 'multi': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
          "RESET are allowed in this context");
  }

  TEST_CASE("WATCH aborts EXEC when another client or the same one modifies the key") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client a(s.port()), b(s.port());
    CHECK(a("SET k 1").is_status("OK"));
    CHECK(a("WATCH k").is_status("OK"));
    CHECK(b("INCR k").integer == 2);
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("SET k 10").is_status("QUEUED"));
    CHECK(a("EXEC").is_nil());
    CHECK(a("GET k").str == "2");
    // After EXEC nothing is watched any more.
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("SET k 10").is_status("QUEUED"));
    CHECK(a("EXEC").elements.size() == 1);
    // Own modification, a container changed in place, and an unmodified key.
    CHECK(a("WATCH k").is_status("OK"));
    CHECK(a("SET k 11").is_status("OK"));
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("PING").is_status("QUEUED"));
    CHECK(a("EXEC").is_nil());
    CHECK(a("RPUSH l x").integer == 1);
    CHECK(a("WATCH l other").is_status("OK"));
    CHECK(b("RPUSH l y").integer == 2);
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("PING").is_status("QUEUED"));
    CHECK(a("EXEC").is_nil());
    CHECK(a("WATCH other").is_status("OK"));
    CHECK(b("SET unrelated 1").is_status("OK"));
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("PING").is_status("QUEUED"));
    CHECK(a("EXEC").elements.size() == 1);
  }

  TEST_CASE("UNWATCH, DISCARD and a failed SETNX leave EXEC free to run") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client a(s.port()), b(s.port());
    CHECK(a("SET k 1").is_status("OK"));
    CHECK(a("WATCH k").is_status("OK"));
    CHECK(a("UNWATCH").is_status("OK"));
    CHECK(b("SET k 2").is_status("OK"));
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("PING").is_status("QUEUED"));
    CHECK(a("EXEC").elements.size() == 1);
    CHECK(a("WATCH k").is_status("OK"));
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("DISCARD").is_status("OK"));
    CHECK(b("SET k 3").is_status("OK"));
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("PING").is_status("QUEUED"));
    CHECK(a("EXEC").elements.size() == 1);
    CHECK(a("WATCH k").is_status("OK"));
    CHECK(b("SETNX k 4").integer == 0);  // no modification
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("PING").is_status("QUEUED"));
    CHECK(a("EXEC").elements.size() == 1);
  }

  // Whether a command touches a watched key decides whether EXEC runs: Redis signals a key only
  // when a command changed it. Each case runs on kvlab-server and on redis-server (when present):
  // setup, WATCH, the command from a second client, then MULTI/PING/EXEC.
  TEST_CASE("WATCH is touched only by commands that change the key, as in redis-server") {
    struct Case {
      const char* setup;
      const char* cmd;
    };
    const Case cases[] = {
        {"SADD k a", "SADD k a"},
        {"SADD k a", "SADD k b"},
        {"SADD k a", "SREM k zz"},
        {"SADD k a b", "SREM k a"},
        {"HSET k f v", "HDEL k zz"},
        {"HSET k f v", "HDEL k f"},
        {"HSET k f v", "HSETNX k f w"},
        {"HSET k f v", "HSETNX k g w"},
        {"HSET k f v", "HSET k f v"},
        {"ZADD k 1 a", "ZREM k zz"},
        {"ZADD k 1 a 2 b", "ZREM k a"},
        {"ZADD k 1 a", "ZADD k NX 5 a"},
        {"ZADD k 1 a", "ZADD k 1 a"},
        {"ZADD k 1 a", "ZADD k 2 a"},
        {"RPUSH k a b", "LREM k 0 zz"},
        {"RPUSH k a b", "LREM k 0 a"},
        {"RPUSH k a b", "LINSERT k BEFORE zz x"},
        {"RPUSH k a b", "LINSERT k BEFORE a x"},
        {"SET k v", "SET k v"},
        {"SET k v", "SETNX k w"},
        {"SET other v", "DEL k"},
        {"SET other v", "EXPIRE k 100"},
        {"RPUSH k a", "LPUSHX k b"},
        {"SET other v", "LPUSHX k b"},
    };
    kvtest::ServerProcess kv({"--threads", "2"});
    kvtest::RedisProcess redis;
    std::vector<int> ports{kv.port()};
    if (redis.running()) ports.push_back(redis.port());
    std::vector<std::vector<bool>> ran(ports.size());
    for (std::size_t p = 0; p < ports.size(); ++p) {
      Client a(ports[p]), b(ports[p]);
      for (const Case& c : cases) {
        a("FLUSHALL");
        a(c.setup);
        a("WATCH k");
        b(c.cmd);
        a("MULTI");
        a("PING");
        ran[p].push_back(!a("EXEC").is_nil());
      }
    }
    const std::vector<bool> expected = {true,  false, true,  false, true, false, true,  false,
                                        false, true,  false, true,  true, false, true,  false,
                                        true,  false, false, true,  true, true,  false, true};
    for (std::size_t i = 0; i < std::size(cases); ++i) {
      CAPTURE(cases[i].setup);
      CAPTURE(cases[i].cmd);
      CHECK(ran[0][i] == expected[i]);
      if (ports.size() > 1) CHECK(ran[1][i] == expected[i]);  // the table is Redis's behaviour
    }
  }

  TEST_CASE("WATCH sees expiry and FLUSHALL as Redis 7.0 does") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client a(s.port()), b(s.port());
    // A key live when watched that expires before EXEC aborts it.
    CHECK(a("SET k v PX 50").is_status("OK"));
    CHECK(a("WATCH k").is_status("OK"));
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("PING").is_status("QUEUED"));
    CHECK(a("EXEC").is_nil());
    // A key watched after it had expired: its deletion changes nothing.
    CHECK(a("DEBUG").is_error());  // kvlab has no DEBUG (no set-active-expire): race the sweep
    CHECK(a("SET s v PX 1").is_status("OK"));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(a("WATCH s").is_status("OK"));
    CHECK(b("DEL s").integer == 0);
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("PING").is_status("QUEUED"));
    CHECK(a("EXEC").elements.size() == 1);
    // FLUSHALL touches the watched keys that exist, and only those.
    CHECK(a("SET f 1").is_status("OK"));
    CHECK(a("WATCH f").is_status("OK"));
    CHECK(b("FLUSHALL").is_status("OK"));
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("PING").is_status("QUEUED"));
    CHECK(a("EXEC").is_nil());
    CHECK(a("WATCH absent").is_status("OK"));
    CHECK(b("FLUSHALL").is_status("OK"));
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("PING").is_status("QUEUED"));
    CHECK(a("EXEC").elements.size() == 1);
  }

  TEST_CASE("RESET ends a transaction and forgets watched keys") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client a(s.port()), b(s.port());
    CHECK(a("WATCH k").is_status("OK"));
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("SET k 1").is_status("QUEUED"));
    CHECK(a("RESET").is_status("RESET"));
    CHECK(a("EXEC").str == "ERR EXEC without MULTI");
    CHECK(b("SET k 2").is_status("OK"));
    CHECK(a("MULTI").is_status("OK"));
    CHECK(a("PING").is_status("QUEUED"));
    CHECK(a("EXEC").elements.size() == 1);
  }

  // Property: money moved between 100 accounts by MULTI/DECRBY/INCRBY/EXEC and by WATCH-based
  // optimistic transfers is conserved in every audit, each audit being one MGET of all accounts.
  TEST_CASE("bank transfers conserve the total in every audit, under every scheme") {
    for (const Config& cfg : configs()) {
      CAPTURE(cfg.scheme);
      CAPTURE(cfg.backend);
      auto s = start(cfg);
      REQUIRE(s.running());
      constexpr int kAccounts = 100, kStart = 1000;
      {
        Client c(s.port());
        std::vector<std::string> mset{"MSET"};
        for (int i = 0; i < kAccounts; ++i) {
          mset.push_back("acct:" + std::to_string(i));
          mset.push_back(std::to_string(kStart));
        }
        REQUIRE(c.cmd(mset).is_status("OK"));
      }
      std::atomic<int> writers_left{3};
      std::atomic<long> audits{0}, bad_audits{0}, watch_retries{0};
      run_threads(4, [&](int id) {
        Client c(s.port());
        std::uint64_t rng = 0x9e3779b97f4a7c15ull * (id + 1);
        auto next = [&] {
          rng ^= rng << 13;
          rng ^= rng >> 7;
          rng ^= rng << 17;
          return rng;
        };
        if (id == 3) {  // the auditor
          std::vector<std::string> mget{"MGET"};
          for (int i = 0; i < kAccounts; ++i) mget.push_back("acct:" + std::to_string(i));
          while (writers_left.load() > 0 || audits.load() < 5) {
            const Reply r = c.cmd(mget);
            long long sum = 0;
            for (const Reply& e : r.elements) sum += to_ll(e);
            if (sum != kAccounts * kStart) bad_audits.fetch_add(1);
            audits.fetch_add(1);
          }
          return;
        }
        for (int n = 0; n < 300; ++n) {
          const std::string from = "acct:" + std::to_string(next() % kAccounts);
          const std::string to = "acct:" + std::to_string(next() % kAccounts);
          const std::string amount = std::to_string(next() % 50);
          if (id == 2) {  // optimistic: WATCH, read, write back, retry when touched
            for (;;) {
              c.cmd({"WATCH", from, to});
              const long long f = to_ll(c.cmd({"GET", from}));
              const long long t = to_ll(c.cmd({"GET", to}));
              c.cmd({"MULTI"});
              if (from == to) {
                c.cmd({"SET", from, std::to_string(f)});
              } else {
                c.cmd({"SET", from, std::to_string(f - std::stoll(amount))});
                c.cmd({"SET", to, std::to_string(t + std::stoll(amount))});
              }
              if (!c.cmd({"EXEC"}).is_nil()) break;
              watch_retries.fetch_add(1);
            }
          } else {
            c.cmd({"MULTI"});
            c.cmd({"DECRBY", from, amount});
            c.cmd({"INCRBY", to, amount});
            const Reply r = c.cmd({"EXEC"});
            REQUIRE(r.elements.size() == 2);
          }
        }
        writers_left.fetch_sub(1);
      });
      Client c(s.port());
      std::vector<std::string> mget{"MGET"};
      for (int i = 0; i < kAccounts; ++i) mget.push_back("acct:" + std::to_string(i));
      long long sum = 0;
      for (const Reply& e : c.cmd(mget).elements) sum += to_ll(e);
      CHECK(sum == kAccounts * kStart);
      CHECK(audits.load() >= 5);
      CHECK(bad_audits.load() == 0);
      MESSAGE(cfg.scheme << " " << cfg.backend << ": " << audits.load() << " audits, "
                         << watch_retries.load() << " WATCH retries");
    }
  }

  // Property: MSET writes ten keys to one value; an MGET of the ten never sees two values.
  TEST_CASE("MGET never sees half of an MSET, under every scheme") {
    for (const Config& cfg : configs()) {
      CAPTURE(cfg.scheme);
      CAPTURE(cfg.backend);
      auto s = start(cfg);
      REQUIRE(s.running());
      std::atomic<bool> done{false};
      std::atomic<long> reads{0}, mixed{0};
      run_threads(4, [&](int id) {
        Client c(s.port());
        if (id < 2) {
          for (int n = 0; n < 1500; ++n) {
            std::vector<std::string> mset{"MSET"};
            const std::string v = std::to_string(id) + ":" + std::to_string(n);
            for (int k = 0; k < 10; ++k) {
              mset.push_back("m" + std::to_string(k));
              mset.push_back(v);
            }
            c.cmd(mset);
          }
          done.store(true);
          return;
        }
        std::vector<std::string> mget{"MGET"};
        for (int k = 0; k < 10; ++k) mget.push_back("m" + std::to_string(k));
        while (!done.load()) {
          if (mixed_values(c.cmd(mget))) mixed.fetch_add(1);
          reads.fetch_add(1);
        }
      });
      CHECK(reads.load() > 0);
      CHECK(mixed.load() == 0);
    }
  }

  // Property: one client increments a, then b, one command at a time (single-key, fast path);
  // an MGET a b is one instant, so it sees a == b or a == b + 1, never b ahead of a or a gap.
  TEST_CASE("an MGET sees single-key writes in the order they were made, under every scheme") {
    for (const Config& cfg : configs()) {
      CAPTURE(cfg.scheme);
      CAPTURE(cfg.backend);
      auto s = start(cfg);
      REQUIRE(s.running());
      std::atomic<bool> done{false};
      std::atomic<long> reads{0}, bad{0};
      run_threads(3, [&](int id) {
        Client c(s.port());
        if (id == 0) {
          for (int n = 0; n < 3000; ++n) {
            c.cmd({"INCR", "a"});
            c.cmd({"INCR", "b"});
          }
          done.store(true);
          return;
        }
        // 2,000 absent keys between a and b hold the MGET open for a few hundred microseconds,
        // long enough for the writer's next INCRs to land inside it unless they wait for it.
        std::vector<std::string> args{"MGET", "a"};
        for (int k = 0; k < 2000; ++k) args.push_back("filler:" + std::to_string(k));
        args.push_back("b");
        while (!done.load()) {
          if (!in_write_order(c.cmd(args))) bad.fetch_add(1);
          reads.fetch_add(1);
        }
      });
      CHECK(reads.load() > 0);
      CHECK(bad.load() == 0);
    }
  }

  // Property: as the two tests above, with every client pipelining, so that one input batch
  // holds many multi-key commands. Under key-locks one announcement then covers the batch's
  // multi-key commands (atomicity.hpp, invariant 6): each must still lock its stripes (MSETs
  // against MGETs), and the announcement must stay until the batch ends, or another worker's
  // single-key INCRs run in fast mode inside a later MGET of the batch (INCRs against MGETs; no
  // MSETs then, whose announcements would keep the INCRs in slow mode anyway).
  TEST_CASE("pipelined MSETs, MGETs and INCRs stay atomic when one announcement covers a batch") {
    constexpr int kBatch = 20;
    // Readers pipeline kBatch copies of args until the writers are done; check(reply) counts.
    // A batch must fit one 16 KiB read (kReadChunk) to reach the server as one input batch.
    auto read_while = [](Client& c, const std::vector<std::string>& args, std::atomic<int>& writing,
                         auto&& check) {
      while (writing.load() > 0) {
        for (int j = 0; j < kBatch; ++j) c.append(args);
        for (int j = 0; j < kBatch; ++j) check(c.get_reply());
      }
    };
    for (const Config& cfg : configs()) {
      CAPTURE(cfg.scheme);
      CAPTURE(cfg.backend);
      auto s = start(cfg);
      REQUIRE(s.running());
      std::atomic<long> reads{0}, mixed{0}, bad{0};
      std::atomic<int> writing{2};
      std::vector<std::string> mget{"MGET"};
      for (int k = 0; k < 10; ++k) mget.push_back("m" + std::to_string(k));
      run_threads(4, [&](int id) {
        Client c(s.port());
        if (id >= 2) {
          read_while(c, mget, writing, [&](const Reply& r) {
            if (mixed_values(r)) mixed.fetch_add(1);
            reads.fetch_add(1);
          });
          return;
        }
        // Pipelined MSETs of one value over m0..m9: 150 batches, and on until the readers have
        // read 400 times (bounded), so that a reader started late still overlaps them.
        for (int n = 0; n < 150 || (reads.load() < 400 && n < 3000); ++n) {
          for (int j = 0; j < kBatch; ++j) {
            std::vector<std::string> mset{"MSET"};
            const std::string v = std::to_string(id) + ":" + std::to_string(n * kBatch + j);
            for (int k = 0; k < 10; ++k) {
              mset.push_back("m" + std::to_string(k));
              mset.push_back(v);
            }
            c.append(mset);
          }
          for (int j = 0; j < kBatch; ++j) c.get_reply();
        }
        writing.fetch_sub(1);
      });
      CHECK(reads.load() > 0);
      CHECK(mixed.load() == 0);
      reads.store(0);
      writing.store(1);
      std::vector<std::string> ab{"MGET", "a"};  // fillers hold the MGET open (test above)
      for (int k = 0; k < 60; ++k) ab.push_back("f" + std::to_string(k));  // 20 x 580 bytes
      ab.push_back("b");
      run_threads(3, [&](int id) {
        Client c(s.port());
        if (id >= 1) {
          read_while(c, ab, writing, [&](const Reply& r) {
            if (!in_write_order(r)) bad.fetch_add(1);
            reads.fetch_add(1);
          });
          return;
        }
        // INCR a, then INCR b, 50 pairs per batch, until the readers have read enough (bounded).
        for (int n = 0; n < 400000 && reads.load() < 2000; n += 50) {
          for (int j = 0; j < 50; ++j) {
            c.append({"INCR", "a"});
            c.append({"INCR", "b"});
          }
          for (int j = 0; j < 100; ++j) c.get_reply();
        }
        writing.fetch_sub(1);
      });
      CHECK(reads.load() > 0);
      CHECK(bad.load() == 0);
    }
  }

  // Property: increments done as WATCH/GET/MULTI/SET/EXEC with retries, mixed with plain INCRs
  // from other clients (pipelined, single-key fast path), are never lost.
  TEST_CASE("WATCH-based increments and plain INCRs from many clients end at the exact count") {
    for (const Config& cfg : configs()) {
      CAPTURE(cfg.scheme);
      CAPTURE(cfg.backend);
      auto s = start(cfg);
      REQUIRE(s.running());
      constexpr int kWatchers = 3, kEach = 150, kPlain = 20000;
      run_threads(kWatchers + 1, [&](int id) {
        Client c(s.port());
        if (id == kWatchers) {  // plain INCRs, 100 per pipelined batch
          for (int n = 0; n < kPlain; n += 100) {
            for (int k = 0; k < 100; ++k) c.append({"INCR", "counter"});
            for (int k = 0; k < 100; ++k) c.get_reply();
          }
          return;
        }
        for (int n = 0; n < kEach; ++n) {
          for (;;) {
            c.cmd({"WATCH", "counter"});
            const Reply v = c.cmd({"GET", "counter"});
            const long long cur = v.is_nil() ? 0 : std::stoll(v.str);
            c.cmd({"MULTI"});
            c.cmd({"SET", "counter", std::to_string(cur + 1)});
            if (!c.cmd({"EXEC"}).is_nil()) break;
          }
        }
      });
      Client c(s.port());
      CHECK(c("GET counter").str == std::to_string(kWatchers * kEach + kPlain));
    }
  }
}
