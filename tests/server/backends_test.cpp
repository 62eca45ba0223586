// The server's core cases run over every map backend in the registry: each backend is started as
// `kvlab-server --backend NAME` and driven through hiredis. Backends without concurrent erase run
// with one worker (the server refuses them otherwise, which is checked too).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "structures/registry.hpp"
#include "tests/server/harness.hpp"

using kvtest::Client;
using kvtest::Reply;

namespace {

void core_cases(int port, bool concurrent_for_each) {
  Client c(port);
  REQUIRE(c.ok());
  CHECK(c("FLUSHALL").is_status("OK"));
  CHECK(c("SET a 1").is_status("OK"));
  CHECK(c("GET a").str == "1");
  CHECK(c("SET a 2 NX").is_nil());
  CHECK(c("SET a 3 XX GET").str == "1");
  CHECK(c("INCRBY a 10").integer == 13);
  CHECK(c("APPEND a x").integer == 3);
  CHECK(c("MSET b 1 c 2 d 3").is_status("OK"));
  Reply m = c("MGET a b c d e");
  REQUIRE(m.elements.size() == 5);
  CHECK(m.elements[3].str == "3");
  CHECK(m.elements[4].is_nil());
  CHECK(c("DEL b c nope").integer == 2);
  CHECK(c("EXISTS a b d").integer == 2);
  CHECK(c("EXPIRE d 100").integer == 1);
  CHECK(c("TTL d").integer == 100);
  CHECK(c("SET gone v PX 20").is_status("OK"));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  CHECK(c("GET gone").is_nil());
  CHECK(c("DBSIZE").integer == 2);
  if (concurrent_for_each) {
    CHECK(c("KEYS *").elements.size() == 2);
    Reply s = c("SCAN 0 COUNT 100");
    REQUIRE(s.elements.size() == 2);
    CHECK(s.elements[1].elements.size() == 2);
  }
  CHECK(c.cmd({"SET", std::string("k\0z", 3), "bin"}).is_status("OK"));
  CHECK(c.cmd({"GET", std::string("k\0z", 3)}).str == "bin");
  // Property: INCR stays atomic on this backend (2 clients × 2,000 = 4,000).
  c("DEL n");
  std::vector<std::thread> ts;
  for (int t = 0; t < 2; ++t) {
    ts.emplace_back([port] {
      Client w(port);
      for (int b = 0; b < 20; ++b) {
        for (int i = 0; i < 100; ++i) w.append({"INCR", "n"});
        for (int i = 0; i < 100; ++i) w.get_reply();
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK(c("GET n").str == "4000");
  // Lists and hashes live behind the same Value handle on every backend.
  CHECK(c("RPUSH l a b c").integer == 3);
  CHECK(c("LPUSH l z").integer == 4);
  Reply range = c("LRANGE l 0 -1");
  REQUIRE(range.elements.size() == 4);
  CHECK(range.elements[0].str == "z");
  CHECK(range.elements[3].str == "c");
  CHECK(c("TYPE l").is_status("list"));
  CHECK(c("GET l").str == "WRONGTYPE Operation against a key holding the wrong kind of value");
  for (int i = 0; i < 4; ++i) CHECK(c("LPOP l").type == REDIS_REPLY_STRING);
  CHECK(c("LPOP l").is_nil());
  CHECK(c("EXISTS l").integer == 0);
  CHECK(c("RPUSH l again").integer == 1);
  CHECK(c("HSET h f1 v1 f2 v2").integer == 2);
  CHECK(c("HGET h f1").str == "v1");
  CHECK(c("HINCRBY h n 5").integer == 5);
  CHECK(c("HINCRBY h n 5").integer == 10);
  CHECK(c("HLEN h").integer == 3);
  CHECK(c("HDEL h f1 f2 n").integer == 3);
  CHECK(c("EXISTS h").integer == 0);
  CHECK(c("TYPE h").is_status("none"));
  // Property: LPUSH and HINCRBY stay atomic on this backend (2 clients × 1,000 each).
  c("DEL cl ch");
  std::vector<std::thread> cs;
  for (int t = 0; t < 2; ++t) {
    cs.emplace_back([port] {
      Client w(port);
      for (int b = 0; b < 10; ++b) {
        for (int i = 0; i < 100; ++i) w.append({"LPUSH", "cl", "x"});
        for (int i = 0; i < 100; ++i) w.append({"HINCRBY", "ch", "n", "1"});
        for (int i = 0; i < 200; ++i) w.get_reply();
      }
    });
  }
  for (auto& t : cs) t.join();
  CHECK(c("LLEN cl").integer == 2000);
  CHECK(c("HGET ch n").str == "2000");
  // Sets and sorted sets: container values behind the same keyspace handle on this backend.
  CHECK(c("SADD bs a b c").integer == 3);
  CHECK(c("SADD bs a").integer == 0);
  CHECK(c("SMEMBERS bs").elements.size() == 3);
  CHECK(c("TYPE bs").is_status("set"));
  CHECK(c("SPOP bs 3").elements.size() == 3);
  CHECK(c("EXISTS bs").integer == 0);  // emptied -> removed from the map
  CHECK(c("SADD bs d").integer == 1);  // and created afresh
  CHECK(c("SCARD bs").integer == 1);
  CHECK(c("ZADD bz 2 b 1 a 3 c").integer == 3);
  Reply zr = c("ZRANGE bz 0 -1 WITHSCORES");
  REQUIRE(zr.elements.size() == 6);
  CHECK(zr.elements[0].str == "a");
  CHECK(zr.elements[1].str == "1");
  CHECK(zr.elements[5].str == "3");
  CHECK(c("ZPOPMIN bz").elements[0].str == "a");
  CHECK(c("ZPOPMIN bz 5").elements.size() == 4);
  CHECK(c("EXISTS bz").integer == 0);
  CHECK(c("GET bs").is_error());  // WRONGTYPE
  CHECK(c("DEL bs").integer == 1);
  CHECK(c("FLUSHALL").is_status("OK"));
  CHECK(c("DBSIZE").integer == 0);
}

}  // namespace

TEST_SUITE("server") {
  TEST_CASE("every map backend in the registry serves the core cases") {
    int tested = 0;
    for (const kvlab::BackendTraits& t : kvlab::registered_backends()) {
      if (t.family == "queue") continue;
      const std::string name(t.name);
      CAPTURE(name);
      const bool multi = t.concurrent_erase;
      kvtest::ServerProcess s({"--backend", name, "--threads", multi ? "2" : "1"});
      REQUIRE(s.running());
      core_cases(s.port(), t.concurrent_for_each || !multi);
      CHECK(s.stop() == 0);
      ++tested;
    }
    CHECK(tested >= 1);
  }

  TEST_CASE("backends without concurrent erase are refused with several workers") {
    for (const kvlab::BackendTraits& t : kvlab::registered_backends()) {
      if (t.family == "queue" || t.concurrent_erase) continue;
      std::string out;
      const int code = kvtest::run_capture(kvtest::server_path() + " --port " +
                                               std::to_string(kvtest::free_port()) +
                                               " --threads 2 --backend " + std::string(t.name),
                                           &out);
      CHECK(code == 2);
      CHECK(out.find("concurrent_erase") != std::string::npos);
    }
  }

  TEST_CASE("unknown and queue backends are refused at startup") {
    std::string out;
    CHECK(kvtest::run_capture(kvtest::server_path() + " --backend hash/nope", &out) == 2);
    CHECK(out.find("unknown backend") != std::string::npos);
    out.clear();
    CHECK(kvtest::run_capture(kvtest::server_path() + " --backend queue/mutex", &out) == 2);
    CHECK(out.find("queue backend") != std::string::npos);
    out.clear();
    CHECK(kvtest::run_capture(kvtest::server_path() + " --list-backends", &out) == 0);
    CHECK(out.find("hash/locked") != std::string::npos);
  }

  // --mode shared is the default and is reported; the modes not built yet and unknown names are
  // refused at start-up with exit status 2 and a message that names the mode.
  TEST_CASE("--mode shared is reported; unbuilt and unknown modes are refused at startup") {
    {
      kvtest::ServerProcess s({"--mode", "shared"});
      REQUIRE(s.running());
      Client c(s.port());
      CHECK(c("INFO kvlab").str.find("kvlab_mode:shared\r\n") != std::string::npos);
      const Reply r = c("CONFIG GET kvlab-mode");
      REQUIRE(r.elements.size() == 2);
      CHECK(r.elements[1].str == "shared");
    }
    for (const char* mode : {"sharded", "io-threads", "bogus"}) {
      CAPTURE(mode);
      std::string out;
      // timeout(1): a server that accepted the mode would run until stopped.
      CHECK(kvtest::run_capture("timeout 20 " + kvtest::server_path() + " --port " +
                                    std::to_string(kvtest::free_port()) + " --mode " + mode,
                                &out) == 2);
      CHECK(out.find("mode '" + std::string(mode) + "'") != std::string::npos);
    }
  }

  TEST_CASE("placement dry-run prints one line per worker and exits") {
    std::string out;
    CHECK(kvtest::run_capture(
              kvtest::server_path() + " --threads 2 --placement compact --placement-dry-run",
              &out) == 0);
    CHECK(out.find("worker 0:") != std::string::npos);
    CHECK(out.find("worker 1:") != std::string::npos);
  }

  // --yield changes only when a busy worker polls again, never what the commands do: with it on
  // and off, two workers serve pipelined INCRs from four clients exactly; the workers' yield
  // counters show whether it acted; INFO and CONFIG GET report the mode; "auto" follows the
  // worker count against the allowed CPUs.
  TEST_CASE("--yield on and off serve concurrent pipelines exactly and are reported") {
    for (const char* mode : {"yes", "no"}) {
      CAPTURE(mode);
      kvtest::ServerProcess s({"--threads", "2", "--yield", mode});
      REQUIRE(s.running());
      std::vector<std::thread> threads;
      std::atomic<int> errors{0};
      for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
          Client c(s.port());
          for (int batch = 0; batch < 20; ++batch) {
            for (int i = 0; i < 100; ++i) c.append({"INCR", "n"});
            for (int i = 0; i < 100; ++i)
              if (c.get_reply().type != REDIS_REPLY_INTEGER) errors.fetch_add(1);
          }
        });
      }
      for (auto& t : threads) t.join();
      Client c(s.port());
      CHECK(errors.load() == 0);
      CHECK(c("GET n").str == "8000");
      const bool on = std::string(mode) == "yes";
      const std::string info = c("INFO kvlab").str;
      CHECK(info.find(std::string("kvlab_yield:") + (on ? "on" : "off") + "\r\n") !=
            std::string::npos);
      // The workers count their extra polls: 80 pipelined batches make some with --yield yes
      // (each batch's iteration served events), none with --yield no.
      std::uint64_t yields = 0;
      for (std::size_t at = info.find(",yields="); at != std::string::npos;
           at = info.find(",yields=", at + 1))
        yields += std::stoull(info.substr(at + 8));
      CHECK((yields > 0) == on);
      const Reply cfg = c("CONFIG GET kvlab-yield");
      REQUIRE(cfg.elements.size() == 2);
      CHECK(cfg.elements[1].str == mode);
    }
    // auto: as many workers as allowed CPUs yield; fewer (one worker, when there are two CPUs or
    // more) do not. CONFIG GET reports the setting, INFO what it resolved to.
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    const int cpus = CPU_COUNT(&allowed);
    {
      kvtest::ServerProcess all({"--threads", std::to_string(cpus)});
      REQUIRE(all.running());
      Client c(all.port());
      CHECK(c("INFO kvlab").str.find("kvlab_yield:on") != std::string::npos);
      CHECK(c("CONFIG GET kvlab-yield").elements.at(1).str == "auto");
    }
    if (cpus >= 2) {
      kvtest::ServerProcess one({"--threads", "1"});
      REQUIRE(one.running());
      CHECK(Client(one.port())("INFO kvlab").str.find("kvlab_yield:off") != std::string::npos);
    }
    std::string out;
    CHECK(kvtest::run_capture(kvtest::server_path() + " --yield sometimes", &out) != 0);
    CHECK(out.find("--yield") != std::string::npos);
  }

  TEST_CASE("flags can come from a config file") {
    const int port = kvtest::free_port();
    const std::string path = "/tmp/kvlab-server-test-" + std::to_string(getpid()) + ".toml";
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fprintf(f, "port = %d\nthreads = 1\nrequirepass = \"fromfile\"\n", port);
    std::fclose(f);
    std::string out;
    kvtest::ServerProcess s({"--config", path});
    REQUIRE(s.running());
    Client c(s.port());
    CHECK(c("AUTH fromfile").is_status("OK"));
    std::remove(path.c_str());
  }

  TEST_CASE("a config file with a name the server does not know is refused at start-up") {
    const std::string path = "/tmp/kvlab-server-test-typo-" + std::to_string(getpid()) + ".toml";
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fprintf(f, "port = %d\nbakend = \"hash/tbb\"\n", kvtest::free_port());
    std::fclose(f);
    std::string out;
    // Bounded: a server that accepted the file would listen until timeout stops it.
    CHECK(kvtest::run_capture("timeout 5 " + kvtest::server_path() + " --config " + path, &out) !=
          0);
    CHECK(out.find("bakend") != std::string::npos);
    std::remove(path.c_str());
  }
}
