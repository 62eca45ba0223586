// Every command's happy path and its error replies, against a real kvlab-server (2 workers) on a
// free loopback port, through hiredis. Expected texts are Redis 7's.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <functional>
#include <set>

#include "tests/server/checks.hpp"
#include "tests/server/harness.hpp"

using kvtest::check_error;
using kvtest::Client;
using kvtest::Reply;

namespace {

kvtest::ServerProcess& server() {
  static kvtest::ServerProcess s({"--threads", "2"});
  return s;
}

Client& client() {
  static Client c(server().port());
  return c;
}

}  // namespace

TEST_SUITE("server") {
  TEST_CASE("the server starts and answers PING") {
    REQUIRE(server().running());
    REQUIRE(client().ok());
    CHECK(client()("PING").is_status("PONG"));
    CHECK(client()("PING hello").str == "hello");
    check_error(client()("PING a b"), "ERR wrong number of arguments for 'ping' command");
    CHECK(client()("ECHO hi").str == "hi");
    CHECK(client()("FLUSHALL").is_status("OK"));
  }

  TEST_CASE("unknown commands and wrong arity get Redis's texts") {
    auto& c = client();
    check_error(c("FOO a b"), "ERR unknown command 'FOO', with args beginning with: 'a' 'b' ");
    // The arguments are cut at 128 characters, counted before each opening quote (Redis 7.0).
    const std::string long_arg(200, 'a');
    check_error(c.cmd({"FOO", "xy", long_arg, "b"}),
                "ERR unknown command 'FOO', with args beginning with: 'xy' '" +
                    std::string(123, 'a') + "' ");
    check_error(c("GET"), "ERR wrong number of arguments for 'get' command");
    check_error(c("SET k"), "ERR wrong number of arguments for 'set' command");
    check_error(c("CLIENT"), "ERR wrong number of arguments for 'client' command");
    check_error(c("CLIENT FOO"), "ERR unknown subcommand 'FOO'. Try CLIENT HELP.");
    check_error(c("CLIENT SETNAME"), "ERR wrong number of arguments for 'client|setname' command");
    CHECK(c("get k").is_nil());  // names are case-insensitive
  }

  TEST_CASE("GET and SET round-trip and overwrite") {
    auto& c = client();
    CHECK(c("SET s1 v1").is_status("OK"));
    CHECK(c("GET s1").str == "v1");
    CHECK(c("SET s1 v2").is_status("OK"));
    CHECK(c("GET s1").str == "v2");
    CHECK(c("GET missing").is_nil());
  }

  TEST_CASE("SET honours NX, XX, GET, KEEPTTL and expiry options") {
    auto& c = client();
    c("DEL sx");
    CHECK(c("SET sx a XX").is_nil());
    CHECK(c("SET sx a NX").is_status("OK"));
    CHECK(c("SET sx b NX").is_nil());
    CHECK(c("SET sx b XX").is_status("OK"));
    CHECK(c("SET sx c GET").str == "b");
    CHECK(c("SET sy c GET").is_nil());
    CHECK(c("SET sx d EX 100").is_status("OK"));
    CHECK(c("TTL sx").integer == 100);
    CHECK(c("SET sx e KEEPTTL").is_status("OK"));
    CHECK(c("TTL sx").integer == 100);
    CHECK(c("SET sx f").is_status("OK"));
    CHECK(c("TTL sx").integer == -1);
    CHECK(c("SET sx g PX 100000").is_status("OK"));
    CHECK(c("PTTL sx").integer > 99000);
    CHECK(c.cmd({"SET", "sx", "h", "EXAT", "99999999999"}).is_status("OK"));
    CHECK(c("TTL sx").integer > 1000000);
    CHECK(c.cmd({"SET", "sx", "h", "PXAT", "1"}).is_status("OK"));  // in the past: gone
    CHECK(c("GET sx").is_nil());
    check_error(c("SET sx v NX XX"), "ERR syntax error");
    check_error(c("SET sx v EX 10 PX 10"), "ERR syntax error");
    check_error(c("SET sx v KEEPTTL EX 10"), "ERR syntax error");
    check_error(c("SET sx v EX"), "ERR syntax error");
    check_error(c("SET sx v FOO"), "ERR syntax error");
    check_error(c("SET sx v EX abc"), "ERR value is not an integer or out of range");
    check_error(c("SET sx v EX 0"), "ERR invalid expire time in 'set' command");
    check_error(c("SET sx v PX -5"), "ERR invalid expire time in 'set' command");
    check_error(c("SET sx v EX 9223372036854775807"), "ERR invalid expire time in 'set' command");
  }

  TEST_CASE("SETNX, SETEX, PSETEX, GETSET, GETDEL and GETEX behave like Redis") {
    auto& c = client();
    c("DEL n1");
    CHECK(c("SETNX n1 a").integer == 1);
    CHECK(c("SETNX n1 b").integer == 0);
    CHECK(c("GET n1").str == "a");
    CHECK(c("SETEX n2 50 v").is_status("OK"));
    CHECK(c("TTL n2").integer == 50);
    check_error(c("SETEX n2 0 v"), "ERR invalid expire time in 'setex' command");
    check_error(c("SETEX n2 x v"), "ERR value is not an integer or out of range");
    CHECK(c("PSETEX n3 50000 v").is_status("OK"));
    CHECK(c("TTL n3").integer == 50);
    check_error(c("PSETEX n3 -1 v"), "ERR invalid expire time in 'psetex' command");
    CHECK(c("GETSET n1 z").str == "a");
    CHECK(c("GETSET nnew z").is_nil());
    CHECK(c("GETDEL n1").str == "z");
    CHECK(c("GETDEL n1").is_nil());
    CHECK(c("EXISTS n1").integer == 0);
    c("SET n4 v");
    CHECK(c("GETEX n4 EX 30").str == "v");
    CHECK(c("TTL n4").integer == 30);
    CHECK(c("GETEX n4 PERSIST").str == "v");
    CHECK(c("TTL n4").integer == -1);
    CHECK(c("GETEX n4").str == "v");
    CHECK(c("GETEX missing EX 5").is_nil());
    CHECK(c("GETEX missing EXAT 0").is_nil());  // Redis checks the key before the time
    check_error(c("GETEX n4 PERSIST EX 1"), "ERR syntax error");
    check_error(c("GETEX n4 EX 0"), "ERR invalid expire time in 'getex' command");
  }

  TEST_CASE("MGET, MSET and MSETNX handle several keys") {
    auto& c = client();
    c("DEL m1 m2 m3");
    CHECK(c("MSET m1 a m2 b").is_status("OK"));
    Reply r = c("MGET m1 m2 m3");
    REQUIRE(r.elements.size() == 3);
    CHECK(r.elements[0].str == "a");
    CHECK(r.elements[1].str == "b");
    CHECK(r.elements[2].is_nil());
    check_error(c("MSET m1 a m2"), "ERR wrong number of arguments for 'mset' command");
    CHECK(c("MSETNX m3 c m1 x").integer == 0);
    CHECK(c("GET m3").is_nil());
    CHECK(c("MSETNX m3 c m4 d").integer == 1);
    CHECK(c("GET m4").str == "d");
    check_error(c("MSETNX m5"), "ERR wrong number of arguments for 'msetnx' command");
  }

  TEST_CASE("APPEND, STRLEN, GETRANGE and SETRANGE edit strings") {
    auto& c = client();
    c("DEL a1");
    CHECK(c("APPEND a1 Hello").integer == 5);
    CHECK(c("APPEND a1 World").integer == 10);
    CHECK(c("GET a1").str == "HelloWorld");
    CHECK(c("STRLEN a1").integer == 10);
    CHECK(c("STRLEN nokey").integer == 0);
    CHECK(c("GETRANGE a1 0 4").str == "Hello");
    CHECK(c("GETRANGE a1 -5 -1").str == "World");
    CHECK(c("GETRANGE a1 5 1").str == "");
    CHECK(c("GETRANGE a1 0 100").str == "HelloWorld");
    CHECK(c("GETRANGE nokey 0 1").str == "");
    CHECK(c("SUBSTR a1 0 0").str == "H");
    check_error(c("GETRANGE a1 x 1"), "ERR value is not an integer or out of range");
    CHECK(c("SETRANGE a1 5 Redis").integer == 10);
    CHECK(c("GET a1").str == "HelloRedis");
    CHECK(c("SETRANGE pad 3 x").integer == 4);
    CHECK(c("GET pad").str == std::string("\0\0\0x", 4));
    check_error(c("SETRANGE a1 -1 x"), "ERR offset is out of range");
    check_error(c("SETRANGE a1 536870912 x"),
                "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    CHECK(c.cmd({"SETRANGE", "nothing", "5", ""}).integer == 0);
    CHECK(c("EXISTS nothing").integer == 0);
  }

  TEST_CASE("INCR and friends count, and refuse non-integers and overflow") {
    auto& c = client();
    c("DEL i1");
    CHECK(c("INCR i1").integer == 1);
    CHECK(c("INCRBY i1 10").integer == 11);
    CHECK(c("DECR i1").integer == 10);
    CHECK(c("DECRBY i1 20").integer == -10);
    c("SET i2 abc");
    check_error(c("INCR i2"), "ERR value is not an integer or out of range");
    check_error(c("INCRBY i1 x"), "ERR value is not an integer or out of range");
    c("SET i3 9223372036854775807");
    check_error(c("INCR i3"), "ERR increment or decrement would overflow");
    check_error(c("DECRBY i1 -9223372036854775808"), "ERR decrement would overflow");
    c("SET f1 10.5");
    CHECK(c("INCRBYFLOAT f1 0.1").str == "10.6");
    CHECK(c("INCRBYFLOAT f1 -5").str == "5.6");
    CHECK(c("INCRBYFLOAT f0 3").str == "3");
    check_error(c("INCRBYFLOAT f1 abc"), "ERR value is not a valid float");
    check_error(c("INCRBYFLOAT i2 1"), "ERR value is not a valid float");
    c("SET i5 10");
    c("EXPIRE i5 100");
    CHECK(c("INCR i5").integer == 11);
    CHECK(c("TTL i5").integer == 100);  // INCR keeps the TTL
  }

  TEST_CASE("DEL, UNLINK, EXISTS and TYPE see live keys only") {
    auto& c = client();
    c("MSET d1 a d2 b");
    CHECK(c("EXISTS d1 d2 d1 nope").integer == 3);
    CHECK(c("TYPE d1").is_status("string"));
    CHECK(c("TYPE nope").is_status("none"));
    CHECK(c("DEL d1 d2 nope").integer == 2);
    c("SET d3 x");
    CHECK(c("UNLINK d3").integer == 1);
    CHECK(c("EXISTS d3").integer == 0);
  }

  TEST_CASE("EXPIRE family sets, reads and removes TTLs") {
    auto& c = client();
    c("SET e1 v");
    CHECK(c("TTL e1").integer == -1);
    CHECK(c("TTL nope").integer == -2);
    CHECK(c("PTTL nope").integer == -2);
    CHECK(c("EXPIRE e1 100").integer == 1);
    CHECK(c("TTL e1").integer == 100);
    CHECK(c("EXPIRE e1 50 NX").integer == 0);
    CHECK(c("EXPIRE e1 50 XX").integer == 1);
    CHECK(c("EXPIRE e1 40 GT").integer == 0);
    CHECK(c("EXPIRE e1 60 GT").integer == 1);
    CHECK(c("EXPIRE e1 70 LT").integer == 0);
    CHECK(c("PEXPIRE e1 30000").integer == 1);
    CHECK(c("TTL e1").integer == 30);
    CHECK(c("EXPIREAT e1 99999999999").integer == 1);
    CHECK(c("EXPIRETIME e1").integer == 99999999999LL);
    CHECK(c("PEXPIREAT e1 99999999999000").integer == 1);
    CHECK(c("PEXPIRETIME e1").integer == 99999999999000LL);
    // EXPIRETIME rounds to the nearest second, as Redis 7.0 answers (it does not truncate).
    CHECK(c("PEXPIREAT e1 99999999999499").integer == 1);
    CHECK(c("EXPIRETIME e1").integer == 99999999999LL);
    CHECK(c("PEXPIREAT e1 99999999999500").integer == 1);
    CHECK(c("EXPIRETIME e1").integer == 100000000000LL);
    CHECK(c("PERSIST e1").integer == 1);
    CHECK(c("PERSIST e1").integer == 0);
    CHECK(c("EXPIRE nope 10").integer == 0);
    CHECK(c("EXPIRE e1 -1").integer == 1);  // in the past: deleted
    CHECK(c("EXISTS e1").integer == 0);
    check_error(c("EXPIRE e1 10 NX XX"),
                "ERR NX and XX, GT or LT options at the same time are not compatible");
    check_error(c("EXPIRE e1 10 GT LT"),
                "ERR GT and LT options at the same time are not compatible");
    check_error(c("EXPIRE e1 10 FOO"), "ERR Unsupported option FOO");
    check_error(c("EXPIRE e1 abc"), "ERR value is not an integer or out of range");
    check_error(c("EXPIRE e1 9223372036854775807"), "ERR invalid expire time in 'expire' command");
  }

  TEST_CASE("keys expire lazily on access") {
    auto& c = client();
    c("SET lazy v PX 50");
    CHECK(c("GET lazy").str == "v");
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    CHECK(c("GET lazy").is_nil());
    CHECK(c("TTL lazy").integer == -2);
  }

  TEST_CASE("the active sweep removes expired keys nobody reads") {
    auto& c = client();
    c("FLUSHALL");
    // 400 ms: long enough that a slow (sanitizer) build has sent all 200 before the first expires.
    for (int i = 0; i < 200; ++i) c.cmd({"SET", "sweep" + std::to_string(i), "v", "PX", "400"});
    c("SET keeper v");
    CHECK(c("DBSIZE").integer == 201);
    long long size = -1;
    for (int i = 0; i < 150 && size != 1; ++i) {  // up to ~3 s
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      size = c("DBSIZE").integer;
    }
    CHECK(size == 1);
  }

  TEST_CASE("KEYS, SCAN and RANDOMKEY walk the keyspace") {
    auto& c = client();
    c("FLUSHALL");
    for (int i = 0; i < 250; ++i) c.cmd({"SET", "user:" + std::to_string(i), "v"});
    c("SET other v");
    CHECK(c("KEYS user:1?").elements.size() == 10);
    CHECK(c("KEYS *").elements.size() == 251);
    std::set<std::string> seen;
    std::string cursor = "0";
    int calls = 0;
    do {
      Reply r = c.cmd({"SCAN", cursor, "MATCH", "user:*", "COUNT", "20"});
      REQUIRE(r.elements.size() == 2);
      cursor = r.elements[0].str;
      for (const auto& k : r.elements[1].elements) seen.insert(k.str);
    } while (cursor != "0" && ++calls < 1000);
    CHECK(seen.size() == 250);
    CHECK(c("SCAN 0 TYPE hash COUNT 1000").elements[1].elements.empty());
    check_error(c("SCAN abc"), "ERR invalid cursor");
    check_error(c("SCAN 0 COUNT 0"), "ERR syntax error");
    check_error(c("SCAN 0 FOO bar"), "ERR syntax error");
    CHECK(c("RANDOMKEY").type == REDIS_REPLY_STRING);
    c("FLUSHDB");
    CHECK(c("RANDOMKEY").is_nil());
    CHECK(c("DBSIZE").integer == 0);
    check_error(c("FLUSHALL BAD"), "ERR syntax error");
  }

  TEST_CASE("connection commands: SELECT, HELLO, CLIENT, TIME") {
    auto& c = client();
    CHECK(c("SELECT 0").is_status("OK"));
    check_error(c("SELECT 1"), "ERR DB index is out of range");
    check_error(c("SELECT x"), "ERR value is not an integer or out of range");
    Reply h = c("HELLO 2");
    REQUIRE(h.elements.size() == 14);
    CHECK(h.elements[4].str == "proto");
    CHECK(h.elements[5].integer == 2);
    check_error(c("HELLO 4"), "NOPROTO unsupported protocol version");
    check_error(c("HELLO x"), "ERR Protocol version is not an integer or out of range");
    CHECK(c("CLIENT ID").integer > 0);
    CHECK(c("CLIENT GETNAME").is_nil());
    CHECK(c("CLIENT SETNAME tester").is_status("OK"));
    CHECK(c("CLIENT GETNAME").str == "tester");
    check_error(c.cmd({"CLIENT", "SETNAME", "a b"}),
                "ERR Client names cannot contain spaces, newlines or special characters.");
    CHECK(c("CLIENT SETINFO lib-name hiredis").is_status("OK"));
    CHECK(c("CLIENT LIST").str.find("name=tester") != std::string::npos);
    CHECK(c("CLIENT LIST").str.find("lib-name=hiredis") != std::string::npos);
    CHECK(c("CLIENT INFO").str.find("name=tester") != std::string::npos);
    // The caller's query buffer holds the command being run, as in Redis: the 26 bytes of
    // *2 $6 CLIENT $4 INFO.
    CHECK(c("CLIENT INFO").str.find(" qbuf=26 ") != std::string::npos);
    Reply t = c("TIME");
    REQUIRE(t.elements.size() == 2);
    CHECK(std::stoll(t.elements[0].str) > 1600000000);
    check_error(c("AUTH x"),
                "ERR AUTH <password> called without any password configured for the default user. "
                "Are you sure your configuration is correct?");
    // Found by tests/compat: the two-argument form checks the user, whose password is then any.
    CHECK(c("AUTH default anything").is_status("OK"));
    check_error(c("AUTH x y"), "WRONGPASS invalid username-password pair or user is disabled.");
  }

  TEST_CASE("COMMAND INFO flags and COMMAND GETKEYS answer as Redis 7.0's") {
    auto& c = client();
    auto flags = [](const Reply& info) {
      std::string s;
      for (const Reply& f : info.elements[2].elements) s += f.str + " ";
      return s;
    };
    // Cluster clients route a command whose keys move (movablekeys) by asking GETKEYS.
    CHECK(flags(c("COMMAND INFO xreadgroup").elements[0]) == "write blocking movablekeys ");
    CHECK(flags(c("COMMAND INFO eval").elements[0]) ==
          "noscript stale skip_monitor no_mandatory_keys movablekeys ");
    auto keys = [&](const std::string& cmd) {
      std::string s;
      const Reply r = c("COMMAND GETKEYS " + cmd);
      if (r.is_error()) return r.str;
      for (const Reply& k : r.elements) s += k.str + " ";
      return s;
    };
    CHECK(keys("XREADGROUP GROUP g c COUNT 1 STREAMS a b 0 0") == "a b ");
    CHECK(keys("ZUNIONSTORE d 2 a b WEIGHTS 1 2") == "d a b ");
    CHECK(keys("SORT k BY w GET x STORE d") == "k d ");
    CHECK(keys("MSET a 1 b 2") == "a b ");
    CHECK(keys("OBJECT ENCODING k") == "k ");
    CHECK(keys("EVAL s 0").empty());
    CHECK(keys("ZUNIONSTORE d 0 a") == "ERR Invalid arguments specified for command");
    CHECK(keys("ZUNIONSTORE d 3 a b") == "ERR Invalid arguments specified for command");
    CHECK(keys("GET a b") == "ERR Invalid number of arguments specified for command");
    CHECK(keys("PUBLISH a b") == "ERR The command has no key arguments");
    CHECK(keys("NOSUCH a") == "ERR Invalid command specified");
    CHECK(keys("OBJECT NOPE k") == "ERR Invalid command specified");
    check_error(c("COMMAND GETKEYS GET"),
                "ERR wrong number of arguments for 'command|getkeys' command");

    // Differentially, when redis-server is on PATH: every command both have carries the same
    // flags in the same order, and GETKEYS finds the same keys or the same error.
    static kvtest::RedisProcess redis;
    if (!redis.running()) {
      MESSAGE("redis-server not on PATH: differential part skipped");
      return;
    }
    Client rc(redis.port());
    const Reply ours = c("COMMAND");
    int compared = 0;
    for (const Reply& row : ours.elements) {
      const Reply theirs = rc.cmd({"COMMAND", "INFO", row.elements[0].str});
      if (theirs.elements.empty() || theirs.elements[0].type == REDIS_REPLY_NIL) continue;
      CHECK_MESSAGE(flags(theirs.elements[0]) == flags(row), row.elements[0].str);
      ++compared;
    }
    CHECK(compared > 200);
    for (const char* cmd : {"XREAD STREAMS a b 0",
                            "XREAD COUNT 1 STREAMS a",
                            "XREAD COUNT 1",
                            "LMPOP 2 a b LEFT",
                            "BLMPOP 0 2 a b LEFT",
                            "ZMPOP 1 a MIN",
                            "SINTERCARD 2 a b LIMIT 1",
                            "ZINTERCARD 1 a",
                            "ZDIFF 2 a b",
                            "EVAL s 3 a b",
                            "EVAL s x",
                            "FCALL f 1 a",
                            "GEORADIUS k 0 0 1 m STORE d",
                            "GEORADIUSBYMEMBER k m 1 m STOREDIST d",
                            "SORT_RO a BY w",
                            "LMOVE a b LEFT RIGHT",
                            "BLPOP a b 0",
                            "RENAME a b",
                            "EXISTS a a",
                            "WATCH a b",
                            "CONFIG GET x",
                            "OBJECT"}) {
      const Reply r = rc(std::string("COMMAND GETKEYS ") + cmd);
      std::string want;
      if (r.is_error()) {
        want = r.str;
      } else {
        for (const Reply& k : r.elements) want += k.str + " ";
      }
      CHECK_MESSAGE(keys(cmd) == want, std::string(cmd));
    }
  }

  // GETKEYSANDFLAGS answers GETKEYS's keys, each with the flags of the key spec it comes from.
  // Differentially: every command and subcommand both servers have, with filler arguments at its
  // arity and one more (the replies, errors included, must be equal), and full commands for the
  // cases the fillers do not reach: keys of two specs, numkeys forms, flags that depend on the
  // arguments (SET ... GET, BITFIELD).
  TEST_CASE("COMMAND GETKEYSANDFLAGS answers each key's flags as Redis 7.0's") {
    auto& c = client();
    std::function<std::string(const Reply&)> render = [&](const Reply& r) {
      if (r.is_error()) return "(error " + r.str + ")";
      if (r.type != REDIS_REPLY_ARRAY) return r.str;
      std::string s = "[";
      for (const Reply& e : r.elements) s += render(e) + " ";
      return s + "]";
    };
    auto ask = [&](Client& x, const std::vector<std::string>& cmd) {
      std::vector<std::string> args = {"COMMAND", "GETKEYSANDFLAGS"};
      args.insert(args.end(), cmd.begin(), cmd.end());
      return render(x.cmd(args));
    };
    CHECK(c("COMMAND GETKEYSANDFLAGS LMOVE a b LEFT RIGHT").elements.size() == 2);
    CHECK(ask(c, {"LMOVE", "a", "b", "LEFT", "RIGHT"}) ==
          "[[a [RW access delete ] ] [b [RW insert ] ] ]");
    CHECK(ask(c, {"SET", "k", "v"}) == "[[k [OW update ] ] ]");
    CHECK(ask(c, {"SET", "k", "v", "NX", "get"}) == "[[k [RW access update ] ] ]");
    CHECK(ask(c, {"SORT", "k", "BY", "w", "STORE", "d"}) ==
          "[[k [RO access ] ] [d [OW update ] ] ]");
    CHECK(ask(c, {"BITFIELD", "k", "GET", "u8", "0", "OVERFLOW", "SAT"}) == "[[k [RO access ] ] ]");
    CHECK(ask(c, {"BITFIELD", "k", "GET", "u8"}) == "[[k [RW access update ] ] ]");
    CHECK(ask(c, {"GET", "a", "b"}) ==
          "(error ERR Invalid number of arguments specified for command)");
    check_error(c("COMMAND GETKEYSANDFLAGS GET"),
                "ERR wrong number of arguments for 'command|getkeysandflags' command");
    // RESP3: each key's flags are a set.
    const int fd = kvtest::connect_raw(server().port());
    REQUIRE(fd >= 0);
    REQUIRE(kvtest::send_all(
        fd, "HELLO 3\r\nPING m\r\nCOMMAND GETKEYSANDFLAGS RENAME a b\r\nQUIT\r\n"));
    bool closed = false;
    const std::string raw = kvtest::read_until_close(fd, 3000, &closed);
    ::close(fd);
    CHECK(raw.find("$1\r\nm\r\n*2\r\n*2\r\n$1\r\na\r\n~3\r\n+RW\r\n+access\r\n+delete\r\n"
                   "*2\r\n$1\r\nb\r\n~2\r\n+OW\r\n+update\r\n") != std::string::npos);

    static kvtest::RedisProcess redis;
    if (!redis.running()) {
      MESSAGE("redis-server not on PATH: differential part skipped");
      return;
    }
    Client rc(redis.port());
    int compared = 0, with_keys = 0;
    for (const Reply& name : c("COMMAND LIST").elements) {
      const std::string n = name.str;
      std::vector<std::string> words = {n};
      int arity = 0;
      const std::size_t bar = n.find('|');
      Reply info;
      if (bar == std::string::npos) {
        info = rc.cmd({"COMMAND", "INFO", n});
      } else {
        words = {n.substr(0, bar), n.substr(bar + 1)};
        info = rc.cmd({"COMMAND", "INFO", words[0]});
      }
      if (info.elements.empty() || info.elements[0].type == REDIS_REPLY_NIL) continue;
      const Reply* row = &info.elements[0];
      if (bar != std::string::npos) {
        row = nullptr;
        for (const Reply& sub : info.elements[0].elements[9].elements)
          if (sub.elements[0].str == n) row = &sub;
        if (row == nullptr) continue;
      }
      arity = static_cast<int>(row->elements[1].integer);
      const int total = arity < 0 ? -arity : arity;
      for (int extra : {0, 1}) {
        if (arity > 0 && extra > 0) break;
        std::vector<std::string> cmd = words;
        for (int i = static_cast<int>(words.size()); i < total + extra; ++i)
          cmd.push_back("k" + std::to_string(i));
        const std::string want = ask(rc, cmd);
        CHECK_MESSAGE(ask(c, cmd) == want, n);
        ++compared;
        with_keys += want.rfind("[[", 0) == 0;
      }
    }
    CHECK(compared > 300);
    CHECK(with_keys > 150);
    for (const std::vector<std::string>& cmd : std::vector<std::vector<std::string>>{
             {"COPY", "a", "b", "REPLACE"},
             {"RENAMENX", "a", "b"},
             {"SMOVE", "a", "b", "m"},
             {"RPOPLPUSH", "a", "b"},
             {"BRPOPLPUSH", "a", "b", "0"},
             {"BLMOVE", "a", "b", "LEFT", "LEFT", "0"},
             {"PFMERGE", "d", "a", "b"},
             {"BITOP", "AND", "d", "a", "b"},
             {"ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"},
             {"ZINTERSTORE", "d", "2", "a", "b"},
             {"ZDIFFSTORE", "d", "2", "a", "b"},
             {"ZRANGESTORE", "d", "a", "0", "-1"},
             {"SINTERSTORE", "d", "a", "b"},
             {"SUNIONSTORE", "d", "a", "b"},
             {"SDIFFSTORE", "d", "a", "b"},
             {"GEOSEARCHSTORE", "d", "a", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"},
             {"GEORADIUS", "k", "0", "0", "1", "m", "STORE", "d", "STOREDIST", "e"},
             {"GEORADIUSBYMEMBER", "k", "m", "1", "m", "STOREDIST", "d"},
             {"SORT", "k", "BY", "w", "GET", "x", "STORE", "d"},
             {"SORT_RO", "k", "BY", "w"},
             {"MIGRATE", "h", "1", "", "0", "5", "KEYS", "a", "b"},
             {"MIGRATE", "h", "1", "k", "0", "5"},
             {"EVAL", "s", "2", "a", "b"},
             {"EVAL_RO", "s", "1", "a"},
             {"EVALSHA", "s", "0"},
             {"FCALL", "f", "1", "a"},
             {"FCALL_RO", "f", "1", "a"},
             {"XREAD", "COUNT", "1", "STREAMS", "a", "b", "0", "0"},
             {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "0"},
             {"LMPOP", "2", "a", "b", "LEFT"},
             {"BZMPOP", "0", "2", "a", "b", "MIN"},
             {"SINTERCARD", "2", "a", "b"},
             {"ZDIFF", "2", "a", "b"},
             {"MSET", "a", "1", "b", "2"},
             {"MSETNX", "a", "1", "b", "2"},
             {"DEL", "a", "b"},
             {"UNLINK", "a", "b"},
             {"GETDEL", "a"},
             {"GETEX", "a", "PERSIST"},
             {"OBJECT", "ENCODING", "k"},
             {"MEMORY", "USAGE", "k"},
             {"XGROUP", "CREATE", "k", "g", "$"},
             {"XINFO", "STREAM", "k", "FULL"},
             {"SPUBLISH", "ch", "m"},
             {"SSUBSCRIBE", "a", "b"},
             {"BITFIELD", "k", "SET", "u8", "0", "1"},
             {"BITFIELD", "k", "OVERFLOW", "FAIL"},
             {"BITFIELD", "k"},
             {"BITFIELD_RO", "k", "GET", "u8", "0"},
             {"SET", "k", "v", "GET"},
             {"SET", "k", "get"},
             {"PFCOUNT", "a", "b"},
             {"WATCH", "a", "b"},
             {"TOUCH", "a", "b"},
         }) {
      CHECK_MESSAGE(ask(c, cmd) == ask(rc, cmd), cmd[0]);
    }
  }

  // Found with node-redis: FILTERBY was ignored and subcommands were missing, as Redis 7.0 lists
  // them ("config|get").
  TEST_CASE("COMMAND LIST lists subcommands and applies FILTERBY") {
    auto& c = client();
    const Reply all = c("COMMAND LIST");
    std::set<std::string> names;
    for (const auto& e : all.elements) names.insert(e.str);
    CHECK(names.count("get") == 1);
    CHECK(names.count("config|get") == 1);
    CHECK(all.elements.size() > static_cast<std::size_t>(c("COMMAND COUNT").integer));
    std::set<std::string> config;
    for (const auto& e : c("COMMAND LIST FILTERBY PATTERN CONFIG*").elements) config.insert(e.str);
    CHECK(config.count("config") == 1);
    CHECK(config.count("config|set") == 1);
    for (const auto& n : config) CHECK(n.rfind("config", 0) == 0);
    std::set<std::string> hll;
    for (const auto& e : c("COMMAND LIST FILTERBY ACLCAT hyperloglog").elements) hll.insert(e.str);
    CHECK(hll.count("pfadd") == 1);
    CHECK(hll.count("pfcount") == 1);
    for (const auto& n : hll) CHECK(n.rfind("pf", 0) == 0);
    CHECK(c("COMMAND LIST FILTERBY MODULE foo").elements.empty());
    CHECK(c("COMMAND LIST FILTERBY ACLCAT nosuch").elements.empty());
    check_error(c("COMMAND LIST FILTERBY bogus x"), "ERR syntax error");
    check_error(c("COMMAND LIST FILTERBY PATTERN"), "ERR syntax error");
    check_error(c("COMMAND LIST x"), "ERR syntax error");
  }

  TEST_CASE("COMMAND, CONFIG and INFO answer what tools ask") {
    auto& c = client();
    CHECK(c("COMMAND COUNT").integer >= 50);
    Reply info = c("COMMAND INFO get nosuch");
    REQUIRE(info.elements.size() == 2);
    CHECK(info.elements[0].elements[0].str == "get");
    CHECK(info.elements[0].elements[1].integer == 2);
    CHECK(info.elements[1].type == REDIS_REPLY_NIL);
    CHECK(c("COMMAND").elements.size() == static_cast<std::size_t>(c("COMMAND COUNT").integer));
    Reply docs = c("COMMAND DOCS mget");
    REQUIRE(docs.elements.size() == 2);
    CHECK(docs.elements[1].elements[1].str.find("atomic per key") ==
          std::string::npos);  // atomic as a whole
    Reply save = c("CONFIG GET save");
    REQUIRE(save.elements.size() == 2);
    CHECK(save.elements[1].str == "");
    CHECK(c("CONFIG GET appendonly").elements[1].str == "no");
    CHECK(c("CONFIG GET databases").elements[1].str == "1");
    CHECK(c("CONFIG GET nosuchparam").elements.empty());
    CHECK(c("CONFIG GET max*").elements.size() >= 2);
    CHECK(c("CONFIG SET maxclients 5000").is_status("OK"));
    CHECK(c("CONFIG GET maxclients").elements[1].str == "5000");
    CHECK(c.cmd({"CONFIG", "SET", "save", ""}).is_status("OK"));
    check_error(c("CONFIG SET maxclients abc"),
                "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument "
                "couldn't be parsed into an integer");
    check_error(c("CONFIG SET nosuch 1"),
                "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'");
    check_error(c("CONFIG FOO"), "ERR unknown subcommand 'FOO'. Try CONFIG HELP.");
    const std::string text = c("INFO").str;
    CHECK(text.find("redis_version:") != std::string::npos);
    CHECK(text.find("# kvlab") != std::string::npos);
    CHECK(text.find("kvlab_backend:") != std::string::npos);
    CHECK(text.find("total_commands_processed:") != std::string::npos);
    CHECK(text.find("connected_clients:") != std::string::npos);
    const std::string one = c("INFO stats").str;
    CHECK(one.find("# Stats") != std::string::npos);
    CHECK(one.find("# Server") == std::string::npos);
  }

  // Found by tests/compat (each checked against redis-server 7.0.15).
  TEST_CASE("MSETNX with a repeated key keeps its last value, as MSET does") {
    auto& c = client();
    c("DEL dup1 dup2");
    CHECK(c("MSETNX dup1 a dup2 b dup1 c").integer == 1);
    CHECK(c("GET dup1").str == "c");
    CHECK(c("GET dup2").str == "b");
  }

  TEST_CASE("string commands check the key's type before their other arguments") {
    auto& c = client();
    c("DEL tl nokey");
    c("RPUSH tl a");
    const std::string wrongtype =
        "WRONGTYPE Operation against a key holding the wrong kind of value";
    check_error(c.cmd({"SETRANGE", "tl", "9999999999", ""}), wrongtype);
    check_error(c("INCRBYFLOAT tl abc"), wrongtype);
    check_error(c("GETEX tl PX abc"), wrongtype);
    check_error(c("GETEX tl EX 0"), wrongtype);
    CHECK(c("GETEX nokey PX abc").is_nil());
  }

  TEST_CASE("SETRANGE with an empty value answers the length whatever the offset") {
    auto& c = client();
    c("DEL sr nokey");
    CHECK(c.cmd({"SETRANGE", "nokey", "9223372036854775807", ""}).integer == 0);
    CHECK(c("EXISTS nokey").integer == 0);
    c("SET sr hello");
    CHECK(c.cmd({"SETRANGE", "sr", "9999999999", ""}).integer == 5);
    check_error(c("SETRANGE sr 9999999999 x"),
                "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    CHECK(c("GET sr").str == "hello");
  }

  // Found by tests/compat: Redis refuses only conflicting expiry options, not repeated ones.
  TEST_CASE("SET and GETEX accept a repeated option, the last expiry winning") {
    auto& c = client();
    c("DEL rep");
    CHECK(c("SET rep v KEEPTTL KEEPTTL").is_status("OK"));
    CHECK(c("SET rep v EX 10 EX 2000").is_status("OK"));
    CHECK(c("TTL rep").integer > 1000);
    check_error(c("SET rep v EX 10 PX 2000"), "ERR syntax error");
    check_error(c("SET rep v KEEPTTL EX 10"), "ERR syntax error");
    CHECK(c("GETEX rep PERSIST PERSIST").str == "v");
    CHECK(c("TTL rep").integer == -1);
    CHECK(c("GETEX rep PX 10 PX 3000000").str == "v");
    CHECK(c("TTL rep").integer > 2000);
    check_error(c("GETEX rep PERSIST EX 10"), "ERR syntax error");
  }

  TEST_CASE("QUIT replies OK and closes the connection") {
    Client q(server().port());
    CHECK(q("QUIT").is_status("OK"));
    CHECK(q("PING").type == -1);  // closed
    CHECK(client()("PING").is_status("PONG"));
  }

  TEST_CASE("AUTH is required when the server has a password") {
    kvtest::ServerProcess s({"--threads", "1", "--requirepass", "sesame"});
    REQUIRE(s.running());
    Client c(s.port());
    check_error(c("GET k"), "NOAUTH Authentication required.");
    check_error(c("HELLO 2"),
                "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                "HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
                "the RESP protocol version at the same time");
    check_error(c("AUTH wrong"), "WRONGPASS invalid username-password pair or user is disabled.");
    CHECK(c("AUTH sesame").is_status("OK"));
    CHECK(c("GET k").is_nil());
    Client d(s.port());
    CHECK(d("HELLO 2 AUTH default sesame").elements.size() == 14);
    CHECK(d("GET k").is_nil());
    Client e(s.port());
    CHECK(e("AUTH default sesame").is_status("OK"));
  }

  TEST_CASE("maxclients refuses the client beyond the limit") {
    kvtest::ServerProcess s({"--threads", "1", "--maxclients", "2"});
    REQUIRE(s.running());
    Client a(s.port());
    CHECK(a("PING").is_status("PONG"));
    // The harness's readiness probe may still hold a slot until the server sees it close.
    for (int i = 0; i < 100; ++i) {
      if (a("INFO clients").str.find("connected_clients:1\r") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Client b(s.port());
    CHECK(b("PING").is_status("PONG"));
    Client c(s.port());
    Reply r = c("PING");
    CHECK((r.type == -1 || r.str == "ERR max number of clients reached"));
  }

  TEST_CASE("SHUTDOWN stops the server with exit status 0") {
    kvtest::ServerProcess s({"--threads", "2"});
    REQUIRE(s.running());
    Client c(s.port());
    c("SHUTDOWN");
    int code = -2;
    CHECK(s.wait_exit(5000, &code));
    CHECK(code == 0);
  }
}
