// APPEND in place: a growable string is extended under the key's lock and its new
// length published after the bytes (server/data/object.hpp). These tests check what readers and
// writers on both workers of a kvlab-server see while that happens, and that sharing (COPY),
// WATCH and TTLs behave as with Redis's copying APPEND.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/harness.hpp"

using kvtest::Client;
using kvtest::Reply;

namespace {

constexpr int kRecord = 16;

// Record i of writer w: "w<2 digits>:<8 digits>;" padded to kRecord bytes, e.g. "w03:00000042;..."
std::string record(int w, int i) {
  char buf[kRecord + 1];
  std::snprintf(buf, sizeof buf, "w%02d:%08d;...", w, i);
  return std::string(buf, kRecord);
}

// Checks that s is a sequence of whole records in which each writer's records appear in its own
// order with no gap (0, 1, 2…). Returns an empty string when it holds, else what is wrong.
std::string check_records(const std::string& s, int writers) {
  if (s.size() % kRecord != 0)
    return "length " + std::to_string(s.size()) + " is not whole records";
  std::vector<int> next(static_cast<std::size_t>(writers), 0);
  for (std::size_t off = 0; off < s.size(); off += kRecord) {
    int w = -1, i = -1;
    if (std::sscanf(s.c_str() + off, "w%2d:%8d;", &w, &i) != 2 || w < 0 || w >= writers ||
        s.compare(off, kRecord, record(w, i)) != 0)
      return "malformed record at offset " + std::to_string(off);
    if (i != next[static_cast<std::size_t>(w)]++)
      return "writer " + std::to_string(w) + " out of order at offset " + std::to_string(off);
  }
  return {};
}

}  // namespace

TEST_SUITE("server") {
  // Property: with W clients appending distinct fixed-size records to one key while R clients
  // read it (GET, GETRANGE, STRLEN), every value read is made of whole records in each writer's
  // own order, each reader's reads only grow and are prefixes of the final value, every APPEND
  // reply is distinct and ends exactly at the record it appended, and the final length is the
  // sum of all records. Run on a backend that appends in place with lock-free readers
  // (hash/kvlab), one that appends in place with locked readers (hash/locked) and one that
  // copies (skiplist/kvlab).
  TEST_CASE("concurrent APPENDs and reads of one key see whole records in a consistent order") {
    constexpr int kWriters = 6, kReaders = 3, kPerWriter = 2000, kPipeline = 16;
    for (const char* backend : {"hash/kvlab", "hash/locked", "skiplist/kvlab"}) {
      CAPTURE(backend);
      kvtest::ServerProcess s({"--threads", "2", "--backend", backend});
      {
        Client c(s.port());
        // Start from a value built by SET, so that the first APPEND makes the growable copy.
        REQUIRE(c.cmd({"SET", "log", record(0, 0)}).is_status("OK"));
      }
      std::vector<std::vector<long long>> replies(kWriters);
      std::vector<std::string> errors(kWriters + kReaders);
      std::atomic<int> writers_done{0}, connected{0};
      // Every client connects first, then all start together, so the appends overlap.
      auto start_together = [&] {
        connected.fetch_add(1);
        while (connected.load() < kWriters + kReaders) std::this_thread::yield();
      };
      std::vector<std::thread> ts;
      for (int w = 0; w < kWriters; ++w) {
        ts.emplace_back([&, w] {
          Client c(s.port());
          start_together();
          for (int i = (w == 0 ? 1 : 0); i < kPerWriter;) {
            const int batch = std::min(kPipeline, kPerWriter - i);
            for (int k = 0; k < batch; ++k) c.append({"APPEND", "log", record(w, i + k)});
            for (int k = 0; k < batch; ++k) {
              const Reply r = c.get_reply();
              if (r.type != REDIS_REPLY_INTEGER) errors[w] = "APPEND failed";
              replies[w].push_back(r.integer);
            }
            i += batch;
          }
          writers_done.fetch_add(1);
        });
      }
      std::vector<std::vector<std::string>> reads(kReaders);
      for (int r = 0; r < kReaders; ++r) {
        ts.emplace_back([&, r] {
          Client c(s.port());
          start_together();
          std::string& err = errors[kWriters + r];
          std::size_t last = 0;
          // Pipelined reads, so that they overlap the appends on the other worker.
          for (int round = 0; writers_done.load() < kWriters || round < 1; ++round) {
            for (int n = 0; n < kPipeline; ++n) {
              if (n % 3 == 0) c.append({"GET", "log"});
              if (n % 3 == 1) c.append({"GETRANGE", "log", "0", "-1"});
              if (n % 3 == 2) c.append({"STRLEN", "log"});
            }
            for (int n = 0; n < kPipeline; ++n) {
              const Reply g = c.get_reply();
              if (n % 3 == 2) {
                if (g.type != REDIS_REPLY_INTEGER || g.integer % kRecord != 0 ||
                    static_cast<std::size_t>(g.integer) < last)
                  err = "STRLEN " + std::to_string(g.integer) + " after " + std::to_string(last);
                continue;
              }
              if (g.type != REDIS_REPLY_STRING) {
                err = "read failed";
                continue;
              }
              if (g.str.size() < last) err = "a read shrank";
              last = g.str.size();
              if (reads[r].size() < 200) reads[r].push_back(g.str);
              if (const std::string e = check_records(g.str, kWriters); !e.empty()) err = e;
            }
          }
        });
      }
      for (auto& t : ts) t.join();
      for (const auto& e : errors) CHECK(e == "");

      Client c(s.port());
      const Reply final_value = c("GET log");
      REQUIRE(final_value.type == REDIS_REPLY_STRING);
      const std::string& v = final_value.str;
      CHECK(v.size() == static_cast<std::size_t>(kWriters * kPerWriter * kRecord));
      CHECK(check_records(v, kWriters) == "");
      for (int r = 0; r < kReaders; ++r)
        for (const auto& seen : reads[r]) CHECK(v.compare(0, seen.size(), seen) == 0);
      std::set<long long> distinct;
      for (int w = 0; w < kWriters; ++w) {
        for (std::size_t k = 0; k < replies[w].size(); ++k) {
          const long long end = replies[w][k];
          const int i = static_cast<int>(k) + (w == 0 ? 1 : 0);
          distinct.insert(end);
          // The reply is the length just after this APPEND: its record ends there.
          REQUIRE(end >= kRecord);
          CHECK(v.compare(static_cast<std::size_t>(end - kRecord), kRecord, record(w, i)) == 0);
        }
      }
      CHECK(distinct.size() == static_cast<std::size_t>(kWriters * kPerWriter - 1));
    }
  }

  TEST_CASE("APPEND after COPY changes only the key it names") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client c(s.port());
    CHECK(c("APPEND a hello").integer == 5);
    CHECK(c("APPEND a -world").integer == 11);  // a is now a growable string
    CHECK(c("COPY a b").integer == 1);
    CHECK(c("APPEND a !").integer == 12);
    CHECK(c("APPEND b ?").integer == 12);
    CHECK(c("APPEND b ?").integer == 13);
    CHECK(c("GET a").str == "hello-world!");
    CHECK(c("GET b").str == "hello-world??");
  }

  TEST_CASE("SETRANGE past the end of an appended string zero-fills the gap") {
    kvtest::ServerProcess s({"--threads", "1"});
    Client c(s.port());
    // Fill and free pool blocks with non-zero bytes, so a reused block's spare capacity is dirty.
    for (int i = 0; i < 50; ++i) c.cmd({"SET", "junk" + std::to_string(i), std::string(100, 'x')});
    c("FLUSHALL");
    CHECK(c("APPEND k abc").integer == 3);
    CHECK(c("APPEND k def").integer == 6);
    CHECK(c("SETRANGE k 9 XY").integer == 11);
    CHECK(c("GET k").str == std::string("abcdef\0\0\0XY", 11));
    CHECK(c("APPEND k Z").integer == 12);
    CHECK(c("SETRANGE k 0 A").integer == 12);
    CHECK(c("GET k").str == std::string("Abcdef\0\0\0XYZ", 12));
  }

  TEST_CASE("APPEND in place touches WATCHed keys and keeps the TTL") {
    kvtest::ServerProcess s({"--threads", "2"});
    Client c(s.port()), other(s.port());
    CHECK(c("APPEND k aaaa").integer == 4);
    CHECK(c("APPEND k bbbb").integer == 8);
    CHECK(c("EXPIRE k 100").integer == 1);
    CHECK(c("APPEND k cccc").integer == 12);  // a third append: in place
    CHECK(c("TTL k").integer > 0);
    CHECK(c("WATCH k").is_status("OK"));
    CHECK(other("APPEND k dddd").integer == 16);
    CHECK(c("MULTI").is_status("OK"));
    CHECK(c("GET k").is_status("QUEUED"));
    CHECK(c("EXEC").is_nil());
    CHECK(c("GET k").str == "aaaabbbbccccdddd");
  }

  // A value past 32 KiB grows in a mapping of its own (server/data/object.hpp): its bytes, a
  // SETRANGE past its end (the gap is zero without a memset) and used_memory, which counts the
  // pages the value reaches and not its 8 MiB reservation.
  TEST_CASE("a long value grows in place: bytes, zero fill and used_memory") {
    kvtest::ServerProcess s({"--threads", "1", "--maxmemory", "1gb"});
    Client c(s.port());
    auto used = [&] {
      const std::string text = c("INFO memory").str;
      const std::size_t at = text.find("used_memory:");
      REQUIRE(at != std::string::npos);
      return std::stoll(text.substr(at + 12));
    };
    CHECK(c.cmd({"SET", "k", std::string(40000, 'a')}).is_status("OK"));
    const long long before = used();
    std::string model(40000, 'a');
    for (int i = 0; i < 64; ++i) {
      const std::string add(16384, static_cast<char>('b' + i % 20));
      REQUIRE(c.cmd({"APPEND", "k", add}).integer == static_cast<long long>(model.size() + add.size()));
      model += add;
    }
    CHECK(c("GET k").str == model);  // about 1 MiB
    // The first APPEND left the 40 KB string behind; the value now holds about 1 MiB more.
    const long long grown = used() - before;
    CHECK(grown > 900000);
    CHECK(grown < 1500000);
    CHECK(c.cmd({"SETRANGE", "k", std::to_string(model.size() + 100000), "xyz"}).integer ==
          static_cast<long long>(model.size() + 100003));
    model += std::string(100000, '\0') + "xyz";
    CHECK(c("GET k").str == model);
    CHECK(c("DEL k").integer == 1);
    CHECK(used() - before < 200000);
  }

  TEST_CASE("APPEND keeps the 512 MB limit") {
    kvtest::ServerProcess s({"--threads", "1"});
    Client c(s.port());
    CHECK(c("SETRANGE k 536870910 ab").integer == 536870912);
    const Reply r = c("APPEND k x");
    CHECK(r.is_error());
    CHECK(r.str == "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    CHECK(c("STRLEN k").integer == 536870912);
  }
}
