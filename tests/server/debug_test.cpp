// DEBUG against a real kvlab-server (2 workers, --enable-debug-command yes), and against
// redis-server 7.0 when it is on PATH: PROTOCOL's bytes in RESP2 and RESP3, ERROR, POPULATE,
// OBJECT's summary, the refusal when DEBUG is not enabled, SLEEP stopping every worker,
// SET-ACTIVE-EXPIRE stopping the background sweeps, and DIGEST / DIGEST-VALUE (kvlab's own
// digests: the same dataset digests alike whatever the order it was built in, a COPY or a
// RESTOREd DUMP digests as its source, and a change digests differently exactly when it does on
// redis-server).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/checks.hpp"
#include "tests/server/harness.hpp"

using kvtest::check_error;
using kvtest::Client;
using kvtest::Reply;

namespace {

kvtest::ServerProcess& server() {
  static kvtest::ServerProcess s({"--threads", "2", "--enable-debug-command", "yes"});
  return s;
}
kvtest::RedisProcess& redis() {
  static kvtest::RedisProcess r({"--enable-debug-command", "yes"});
  return r;
}

std::string encode(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

// The raw bytes of the replies to `cmds` sent on a fresh connection after HELLO proto: the HELLO
// reply is dropped (found by a PING marker), and a QUIT at the end closes the connection.
std::string raw_after_hello(int port, int proto,
                            const std::vector<std::vector<std::string>>& cmds) {
  const int fd = kvtest::connect_raw(port);
  REQUIRE(fd >= 0);
  std::string req = encode({"HELLO", std::to_string(proto)}) + encode({"PING", "m"});
  for (const auto& c : cmds) req += encode(c);
  req += encode({"QUIT"});
  REQUIRE(kvtest::send_all(fd, req));
  bool closed = false;
  std::string got = kvtest::read_until_close(fd, 3000, &closed);
  ::close(fd);
  const std::string marker = "$1\r\nm\r\n", quit = "+OK\r\n";
  const std::size_t at = got.find(marker);
  if (at == std::string::npos || got.size() < at + marker.size() + quit.size()) return got;
  got = got.substr(at + marker.size());
  return got.substr(0, got.size() - quit.size());
}

const std::string kZeros(40, '0');

std::string digest(Client& c) {
  return c("DEBUG DIGEST").str;
}
std::string digest_value(Client& c, const std::string& key) {
  const Reply r = c.cmd({"DEBUG", "DIGEST-VALUE", key});
  return r.elements.size() == 1 ? r.elements[0].str : "(" + r.str + ")";
}

// One key of each type and encoding, with a TTL on one; `reversed` builds the same dataset with
// the keys, the set members and the hash fields in the opposite order, and with members and
// fields added and removed again so that the sets' and hashes' internal (dense) order differs.
void build_dataset(Client& c, bool reversed) {
  std::vector<std::function<void()>> steps;
  steps.push_back([&] { c("SET str hello"); });
  steps.push_back([&] { c("RPUSH list a b c 1 2"); });
  steps.push_back([&] {
    c("SET ttl v");
    c("PEXPIREAT ttl 4102444800000");
  });
  auto members = [&](const std::string& key, const std::string& cmd, int n, bool pairs) {
    std::vector<std::string> order;
    for (int i = 0; i < n; ++i) order.push_back(std::to_string(i));
    if (reversed) std::reverse(order.begin(), order.end());
    for (const auto& m : order) {
      if (reversed) {  // add a stranger first: removing it later moves members around
        if (pairs)
          c.cmd({cmd, key, "x" + m, "junk"});
        else
          c.cmd({cmd, key, "x" + m});
      }
      if (pairs)
        c.cmd({cmd, key, "f" + m, "v" + m});
      else
        c.cmd({cmd, key, m});
    }
    if (reversed)
      for (const auto& m : order) c.cmd({pairs ? "HDEL" : "SREM", key, "x" + m});
  };
  steps.push_back([&] { members("intset", "SADD", 5, false); });
  steps.push_back([&] { members("bigset", "SADD", 300, false); });
  steps.push_back([&] { members("smallhash", "HSET", 4, true); });
  steps.push_back([&] { members("bighash", "HSET", 300, true); });
  steps.push_back([&] {
    for (int i = 0; i < 200; ++i) {
      const int j = reversed ? 199 - i : i;
      c.cmd({"ZADD", "zset", std::to_string(j % 7) + ".5", "m" + std::to_string(j)});
    }
  });
  steps.push_back([&] {
    c("XADD stream 1-1 a 1");
    c("XADD stream 2-1 b 2 c 3");
    c("XADD stream 3-1 a 1");
    c("XGROUP CREATE stream g 0");
    c("XREADGROUP GROUP g alice COUNT 2 STREAMS stream >");
    c("XACK stream g 1-1");
  });
  if (reversed) std::reverse(steps.begin(), steps.end());
  for (auto& step : steps) step();
}

}  // namespace

TEST_SUITE("debug") {
  TEST_CASE("the server starts") {
    REQUIRE(server().running());
  }

  TEST_CASE("DEBUG PROTOCOL answers every RESP3 type and its RESP2 form") {
    Client c(server().port());
    CHECK(raw_after_hello(server().port(), 3, {{"DEBUG", "PROTOCOL", "map"}}) ==
          "%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n");
    CHECK(raw_after_hello(server().port(), 3, {{"DEBUG", "PROTOCOL", "attrib"}}) ==
          "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n"
          "$39\r\nSome real reply following the attribute\r\n");
    CHECK(raw_after_hello(server().port(), 2, {{"DEBUG", "PROTOCOL", "attrib"}}) ==
          "$39\r\nSome real reply following the attribute\r\n");
    CHECK(raw_after_hello(server().port(), 2, {{"DEBUG", "PROTOCOL", "true"}}) == ":1\r\n");
    check_error(c("DEBUG PROTOCOL push"), "ERR RESP2 is not supported by this command");
    if (!redis().running()) {
      MESSAGE("redis-server not on PATH: the differential part is skipped");
      return;
    }
    for (int proto : {2, 3}) {
      for (const char* t : {"string", "integer", "double", "bignum", "null", "array", "set", "map",
                            "attrib", "push", "verbatim", "true", "false", "nope"}) {
        const std::vector<std::vector<std::string>> cmd = {{"DEBUG", "PROTOCOL", t}};
        CHECK_MESSAGE(raw_after_hello(server().port(), proto, cmd) ==
                          raw_after_hello(redis().port(), proto, cmd),
                      "RESP", proto, " ", std::string(t));
      }
    }
  }

  TEST_CASE("DEBUG ERROR, POPULATE, OBJECT and unknown subcommands answer as Redis") {
    Client c(server().port());
    c("FLUSHALL");
    const Reply e = c.cmd({"DEBUG", "ERROR", "MYCODE some\ntext"});
    CHECK(e.is_error());
    CHECK(e.str == "MYCODE some text");
    CHECK(c("DEBUG POPULATE 3 p 10").is_status("OK"));
    CHECK(c("GET p:2").str == std::string("value:2\0\0\0", 10));
    c("SET key:0 mine");
    CHECK(c("DEBUG POPULATE 2").is_status("OK"));
    CHECK(c("GET key:0").str == "mine");  // existing keys are left alone
    CHECK(c("GET key:1").str == "value:1");
    check_error(c("DEBUG POPULATE x"), "ERR value is out of range, must be positive");
    c("RPUSH l a b c");
    const std::string obj = c("DEBUG OBJECT l").str;
    CHECK_MESSAGE(
        std::regex_match(obj, std::regex("Value at:0x[0-9a-f]+ refcount:1 "
                                         "encoding:quicklist serializedlength:19 lru:[0-9]+ "
                                         "lru_seconds_idle:0 ql_nodes:1 ql_avg_node:3.00 "
                                         "ql_listpack_max:-2 ql_compressed:0 "
                                         "ql_uncompressed_size:16")),
        obj);
    check_error(c("DEBUG OBJECT nokey"), "ERR no such key");
    check_error(
        c("DEBUG nosuch"),
        "ERR unknown subcommand or wrong number of arguments for 'nosuch'. Try DEBUG HELP.");
    check_error(c("DEBUG RELOAD bad"),
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
    CHECK(c("DEBUG HELP").elements.size() > 10);
  }

  TEST_CASE("DEBUG is refused unless enable-debug-command allows it") {
    kvtest::ServerProcess off({"--threads", "1"});
    REQUIRE(off.running());
    Client c(off.port());
    check_error(c("DEBUG SLEEP 0"),
                "ERR DEBUG command not allowed. If the enable-debug-command option is set to "
                "\"local\", you can run it from a local connection, otherwise you need to set this "
                "option in the configuration file, and then restart the server.");
    CHECK(c("CONFIG GET enable-debug-command").elements[1].str == "no");
    kvtest::ServerProcess local({"--threads", "1", "--enable-debug-command", "local"});
    Client l(local.port());
    CHECK(l("DEBUG SLEEP 0").is_status("OK"));  // a loopback connection is local
  }

  TEST_CASE("DEBUG SLEEP stops the keyed commands of every worker, not only its own") {
    // Six connections spread over both workers each send a GET during the sleep, at once: every
    // GET completes only after the sleep, wherever its connection lives. (Keyless commands such
    // as PING on another worker still answer: DEBUG runs as a keyspace-wide operation.)
    Client sleeper(server().port());
    std::vector<std::unique_ptr<Client>> others;
    for (int i = 0; i < 6; ++i) others.push_back(std::make_unique<Client>(server().port()));
    for (auto& o : others) REQUIRE((*o)("PING").is_status("PONG"));
    const auto t0 = std::chrono::steady_clock::now();
    std::thread t([&] { CHECK(sleeper("DEBUG SLEEP 0.6").is_status("OK")); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::vector<std::thread> gets;
    std::vector<std::chrono::steady_clock::duration> done(others.size());
    for (std::size_t i = 0; i < others.size(); ++i) {
      gets.emplace_back([&, i] {
        (*others[i])("GET somekey");
        done[i] = std::chrono::steady_clock::now() - t0;
      });
    }
    for (auto& g : gets) g.join();
    t.join();
    for (const auto& d : done) CHECK(d >= std::chrono::milliseconds(500));
  }

  TEST_CASE("DEBUG SET-ACTIVE-EXPIRE 0 leaves expired keys until they are read") {
    Client c(server().port());
    c("FLUSHALL");
    auto expired = [&] {
      const std::string info = c("INFO stats").str;
      const std::size_t at = info.find("expired_keys:");
      return std::stoll(info.substr(at + 13));
    };
    CHECK(c("DEBUG SET-ACTIVE-EXPIRE 0").is_status("OK"));
    const long long before = expired();
    for (int i = 0; i < 20; ++i) c.cmd({"SET", "e" + std::to_string(i), "v", "PX", "20"});
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    CHECK(expired() == before);   // no sweep ran
    CHECK(c("GET e0").is_nil());  // a read still expires the key
    CHECK(expired() == before + 1);
    CHECK(c("DEBUG SET-ACTIVE-EXPIRE 1").is_status("OK"));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (expired() < before + 20 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(expired() == before + 20);  // the sweeps took the other 19
  }

  TEST_CASE(
      "DEBUG DIGEST and DIGEST-VALUE answer as Redis for an empty keyspace and bad arguments") {
    Client c(server().port());
    std::vector<std::unique_ptr<Client>> peers;
    peers.push_back(std::make_unique<Client>(server().port()));
    if (redis().running()) peers.push_back(std::make_unique<Client>(redis().port()));
    for (auto& p : peers) {
      Client& x = *p;
      x("FLUSHALL");
      CHECK(x("DEBUG DIGEST").is_status(kZeros));
      const Reply v = x("DEBUG DIGEST-VALUE nosuch other");
      REQUIRE(v.elements.size() == 2);
      CHECK(v.elements[0].is_status(kZeros));
      CHECK(v.elements[1].is_status(kZeros));
      CHECK(x("DEBUG DIGEST-VALUE").elements.empty());
      check_error(
          x("DEBUG DIGEST extra"),
          "ERR unknown subcommand or wrong number of arguments for 'DIGEST'. Try DEBUG HELP.");
      x("SET k v");
      const std::string d = x("DEBUG DIGEST").str;
      CHECK(d.size() == 40);
      CHECK(d.find_first_not_of("0123456789abcdef") == std::string::npos);
      CHECK(d != kZeros);
      CHECK(digest_value(x, "k") != kZeros);
    }
  }

  TEST_CASE("the same dataset digests alike whatever order and encoding it was built in") {
    Client c(server().port());
    c("FLUSHALL");
    build_dataset(c, false);
    const std::string forward = digest(c);
    const std::vector<std::string> keys = {"str",       "list",    "ttl",  "intset", "bigset",
                                           "smallhash", "bighash", "zset", "stream"};
    std::vector<std::string> values;
    for (const auto& k : keys) values.push_back(digest_value(c, k));
    c("FLUSHALL");
    build_dataset(c, true);
    CHECK(digest(c) == forward);
    for (std::size_t i = 0; i < keys.size(); ++i)
      CHECK_MESSAGE(digest_value(c, keys[i]) == values[i], keys[i]);
    CHECK(c("DEBUG RELOAD").is_status("OK"));  // kvlab keeps its dataset: the digest too
    CHECK(digest(c) == forward);
    // Every key differs from every other (their values, or types, differ).
    for (std::size_t i = 0; i < values.size(); ++i)
      for (std::size_t j = i + 1; j < values.size(); ++j) CHECK(values[i] != values[j]);
  }

  TEST_CASE("a COPY and a RESTOREd DUMP digest as their source, for every type") {
    Client c(server().port());
    c("FLUSHALL");
    build_dataset(c, false);
    for (const std::string k :
         {"str", "list", "ttl", "intset", "bigset", "smallhash", "bighash", "zset", "stream"}) {
      const std::string d = digest_value(c, k);
      REQUIRE(c.cmd({"COPY", k, k + ":copy"}).integer == 1);
      CHECK_MESSAGE(digest_value(c, k + ":copy") == d, k);
      const Reply dump = c.cmd({"DUMP", k});
      REQUIRE(dump.type == REDIS_REPLY_STRING);
      const std::string pttl = std::to_string(c.cmd({"PEXPIRETIME", k}).integer);
      if (k == "ttl") {
        CHECK(c.cmd({"RESTORE", k + ":restored", pttl, dump.str, "ABSTTL"}).is_status("OK"));
      } else {
        CHECK(c.cmd({"RESTORE", k + ":restored", "0", dump.str}).is_status("OK"));
      }
      CHECK_MESSAGE(digest_value(c, k + ":restored") == d, k);
      c.cmd({"DEL", k});
      CHECK_MESSAGE(digest_value(c, k + ":copy") == d, k);  // the copy shares nothing
    }
  }

  // Each case builds a base, takes DEBUG DIGEST, applies a change and takes it again, on kvlab and
  // on redis-server: the digest must change exactly when Redis's does. The changes probe what the
  // digest binds together: names with values, fields with values, elements with their boundaries
  // and order, types, expiry. One difference is kvlab's choice: Redis mixes in only whether a key
  // has a TTL, kvlab its expiry time too (moving a TTL changes kvlab's digest only).
  TEST_CASE("DEBUG DIGEST changes exactly when redis-server's does") {
    struct Case {
      const char* name;
      std::vector<const char*> base, change;
      bool changes;
      bool redis_changes = changes;
    };
    const std::vector<Case> cases = {
        {"a value", {"SET a 1"}, {"SET a 2"}, true},
        {"the same value again", {"SET a 1"}, {"SET a 1"}, false},
        {"two names swap values", {"SET a 1", "SET b 2"}, {"SET a 2", "SET b 1"}, true},
        {"a renamed key", {"SET a 1"}, {"RENAME a b"}, true},
        {"a string becomes a one-element list", {"SET a x"}, {"DEL a", "RPUSH a x"}, true},
        {"a list becomes a set", {"RPUSH a x"}, {"DEL a", "SADD a x"}, true},
        {"a set becomes a zset", {"SADD a x"}, {"DEL a", "ZADD a 0 x"}, true},
        {"list element boundaries", {"RPUSH a ab c"}, {"DEL a", "RPUSH a a bc"}, true},
        {"list order", {"RPUSH a x y"}, {"DEL a", "RPUSH a y x"}, true},
        {"a list pushed and popped back", {"RPUSH a x y"}, {"LPUSH a z", "LPOP a"}, false},
        {"a set member added", {"SADD a 1 2"}, {"SADD a 3"}, true},
        {"a set member already there", {"SADD a 1 2"}, {"SADD a 2"}, false},
        {"set members re-added in another order",
         {"SADD a 1 2 3"},
         {"DEL a", "SADD a 3 1 2"},
         false},
        {"two hash fields swap values", {"HSET a f 1 g 2"}, {"HSET a f 2 g 1"}, true},
        {"hash field/value boundary", {"HSET a ab c"}, {"DEL a", "HSET a a bc"}, true},
        {"hash fields re-added in another order",
         {"HSET a f 1 g 2"},
         {"DEL a", "HSET a g 2 f 1"},
         false},
        {"a score", {"ZADD a 1 x 2 y"}, {"ZADD a 3 x"}, true},
        {"two members swap scores", {"ZADD a 1 x 2 y"}, {"ZADD a 2 x 1 y"}, true},
        {"a TTL set", {"SET a 1"}, {"PEXPIREAT a 4102444800000"}, true},
        {"a TTL moved",
         {"SET a 1", "PEXPIREAT a 4102444800000"},
         {"PEXPIREAT a 4102444800001"},
         true,
         false},
        {"a TTL removed", {"SET a 1", "PEXPIREAT a 4102444800000"}, {"PERSIST a"}, true},
        {"a stream entry added", {"XADD a 1-1 f v"}, {"XADD a 2-1 f v"}, true},
        {"a stream entry's value", {"XADD a 1-1 f v"}, {"DEL a", "XADD a 1-1 f w"}, true},
        {"a stream entry's ID", {"XADD a 1-1 f v"}, {"DEL a", "XADD a 1-2 f v"}, true},
        {"reads only",
         {"SET a 1", "HSET h f v"},
         {"GET a", "HGETALL h", "OBJECT ENCODING h"},
         false},
    };
    Client k(server().port());
    std::unique_ptr<Client> r;
    if (redis().running())
      r = std::make_unique<Client>(redis().port());
    else
      MESSAGE("redis-server not on PATH: only kvlab's side is checked");
    auto changed = [](Client& c, const Case& t) {
      c("FLUSHALL");
      for (const char* line : t.base) c(line);
      const std::string before = digest(c);
      for (const char* line : t.change) c(line);
      return digest(c) != before;
    };
    for (const Case& t : cases) {
      CHECK_MESSAGE(changed(k, t) == t.changes, std::string(t.name));
      if (r)
        CHECK_MESSAGE(changed(*r, t) == t.redis_changes, (std::string("redis-server: ") + t.name));
    }
  }

  // kvlab's stream digest covers what DUMP carries beyond the entries (Redis 7.0's covers the
  // entries only): the last ID, the consumer groups and their pending entries.
  TEST_CASE("a stream's digest covers its last ID and its consumer groups") {
    Client c(server().port());
    c("FLUSHALL");
    c("XADD s 1-1 f v");
    std::vector<std::string> seen = {digest_value(c, "s")};
    for (const char* line :
         {"XSETID s 5-5", "XGROUP CREATE s g 0", "XGROUP CREATE s h $",
          "XREADGROUP GROUP g alice COUNT 1 STREAMS s >", "XCLAIM s g bob 0 1-1", "XACK s g 1-1"}) {
      c(line);
      const std::string d = digest_value(c, "s");
      CHECK_MESSAGE(std::find(seen.begin(), seen.end(), d) == seen.end(), std::string(line));
      seen.push_back(d);
    }
  }
}
