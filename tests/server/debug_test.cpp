// DEBUG against a real kvlab-server (2 workers, --enable-debug-command yes), and against
// redis-server 7.0 when it is on PATH: PROTOCOL's bytes in RESP2 and RESP3, ERROR, POPULATE,
// OBJECT's summary, the refusal when DEBUG is not enabled, SLEEP stopping every worker, and
// SET-ACTIVE-EXPIRE stopping the background sweeps.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <chrono>
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
}
