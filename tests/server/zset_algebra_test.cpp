// ZUNION, ZINTER, ZDIFF and their STORE forms, ZINTERCARD, ZRANGESTORE, ZRANDMEMBER, ZMPOP and
// LMPOP against a real kvlab-server (4 workers): exact error texts, reply shapes, edge cases of
// the arithmetic (inf + -inf = 0, inf * 0 = 0, sets scoring 1), then a randomized comparison with
// a real redis-server started on a free port (skipped when redis-server is not on PATH): random
// small sorted sets, sets and lists, random commands with random WEIGHTS (0, negative, inf) and
// AGGREGATE, every reply and every key's contents compared after every command.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/server/checks.hpp"
#include "tests/server/harness.hpp"

using kvtest::check_error;
using kvtest::Client;
using kvtest::kWrongType;
using kvtest::Reply;

namespace {

kvtest::ServerProcess& server() {
  static kvtest::ServerProcess s({"--threads", "4"});
  return s;
}

Client& client() {
  static Client c(server().port());
  return c;
}

// The reply as RESP-like text, for comparisons and failure messages.
std::string show(const Reply& r) {
  switch (r.type) {
    case REDIS_REPLY_STRING:
      return "\"" + r.str + "\"";
    case REDIS_REPLY_STATUS:
      return "+" + r.str;
    case REDIS_REPLY_ERROR:
      return "-" + r.str;
    case REDIS_REPLY_INTEGER:
      return ":" + std::to_string(r.integer);
    case REDIS_REPLY_NIL:
      return "nil";
    case REDIS_REPLY_ARRAY: {
      std::string s = "[";
      for (std::size_t i = 0; i < r.elements.size(); ++i) s += (i ? "," : "") + show(r.elements[i]);
      return s + "]";
    }
    default:
      return "?" + std::to_string(r.type);
  }
}

// hiredis gives a nil array the NIL type, so show() tells "*-1" apart from "*0" and "$-1" only by
// the command; the shape tests below check the raw bytes where that matters.
std::string raw(int port, std::string_view cmd) {
  const int fd = kvtest::connect_raw(port);
  std::string inline_cmd = std::string(cmd) + "\r\n";
  kvtest::send_all(fd, inline_cmd);
  std::string out;
  char buf[4096];
  for (int i = 0; i < 100; ++i) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) {
      if (!out.empty()) break;
      continue;
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

using W = std::vector<std::string>;
W words(const Reply& r) {
  W out;
  for (const auto& e : r.elements) out.push_back(e.str);
  return out;
}

using kvtest::RedisProcess;

void setup_basic(Client& c) {
  c("FLUSHALL");
  c("ZADD za 1 a 2 b 3 c 4 d");
  c("ZADD zb 5 x 2 a 0.5 c");
  c("SADD st a c q");
  c("SET str x");
  c("RPUSH l 1 2 3");
  c("RPUSH l2 x y");
}

}  // namespace

TEST_SUITE("server") {
  TEST_CASE("the server with 4 workers starts") {
    REQUIRE(server().running());
    REQUIRE(client().ok());
  }

  TEST_CASE("ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD reply Redis's error texts") {
    auto& c = client();
    setup_basic(c);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"ZUNIONSTORE d 0 za", "ERR at least 1 input key is needed for 'zunionstore' command"},
        {"ZINTERSTORE d -1 za", "ERR at least 1 input key is needed for 'zinterstore' command"},
        {"ZDIFFSTORE d 0 za", "ERR at least 1 input key is needed for 'zdiffstore' command"},
        {"ZUNION 0 za", "ERR at least 1 input key is needed for 'zunion' command"},
        {"ZINTER 0 za", "ERR at least 1 input key is needed for 'zinter' command"},
        {"ZDIFF 0 za", "ERR at least 1 input key is needed for 'zdiff' command"},
        {"ZINTERCARD 0 za", "ERR at least 1 input key is needed for 'zintercard' command"},
        {"ZUNION x za", "ERR value is not an integer or out of range"},
        {"ZUNION 3 za", "ERR syntax error"},
        {"ZUNIONSTORE d 3 za", "ERR syntax error"},
        {"ZINTERCARD 3 za", "ERR syntax error"},
        {"ZUNION 1 za WEIGHTS", "ERR syntax error"},
        {"ZUNION 2 za zb WEIGHTS 1", "ERR syntax error"},
        {"ZUNION 1 za WEIGHTS x", "ERR weight value is not a float"},
        {"ZUNION 1 za WEIGHTS nan", "ERR weight value is not a float"},
        {"ZUNION 1 za WEIGHTS 1e400", "ERR weight value is not a float"},
        {"ZUNION 1 za AGGREGATE foo", "ERR syntax error"},
        {"ZUNION 1 za AGGREGATE", "ERR syntax error"},
        {"ZDIFF 1 za WEIGHTS 1", "ERR syntax error"},
        {"ZDIFF 1 za AGGREGATE SUM", "ERR syntax error"},
        {"ZUNIONSTORE d 1 za WITHSCORES", "ERR syntax error"},
        {"ZINTERCARD 1 za WITHSCORES", "ERR syntax error"},
        {"ZINTERCARD 1 za WEIGHTS 1", "ERR syntax error"},
        {"ZINTERCARD 1 za LIMIT -1", "ERR LIMIT can't be negative"},
        {"ZINTERCARD 1 za LIMIT x", "ERR LIMIT can't be negative"},
        {"ZUNION 1", "ERR wrong number of arguments for 'zunion' command"},
        {"ZUNIONSTORE d 1", "ERR wrong number of arguments for 'zunionstore' command"},
        // Every input's type is checked before the options are parsed.
        {"ZUNION 1 str WEIGHTS x", std::string(kWrongType)},
        {"ZINTER 2 za l", std::string(kWrongType)},
        {"ZDIFF 2 nokey str", std::string(kWrongType)},
        {"ZINTERCARD 1 str", std::string(kWrongType)},
        {"ZUNIONSTORE d 2 za str", std::string(kWrongType)},
    };
    for (const auto& [cmd, err] : cases) {
      CAPTURE(cmd);
      check_error(c(cmd), err);
    }
    CHECK(c("EXISTS d").integer == 0);  // no failed STORE wrote anything
  }

  TEST_CASE("ZUNION, ZINTER and ZDIFF reply members by score, with WITHSCORES interleaved") {
    auto& c = client();
    setup_basic(c);
    CHECK(words(c("ZUNION 2 za zb")) == W{"b", "a", "c", "d", "x"});
    CHECK(words(c("ZUNION 2 za zb WITHSCORES")) ==
          W{"b", "2", "a", "3", "c", "3.5", "d", "4", "x", "5"});
    // A set's members score 1; options repeat and the last one wins.
    CHECK(words(c("ZUNION 2 za st withscores")) ==
          W{"q", "1", "a", "2", "b", "2", "c", "4", "d", "4"});
    CHECK(words(c("ZUNION 1 za WEIGHTS 2 WEIGHTS 3 WITHSCORES")) ==
          W{"a", "3", "b", "6", "c", "9", "d", "12"});
    CHECK(words(c("ZINTER 3 za zb st WEIGHTS 2 3 0 WITHSCORES")) == W{"c", "7.5", "a", "8"});
    CHECK(words(c("ZINTER 2 za zb AGGREGATE MIN WITHSCORES")) == W{"c", "0.5", "a", "1"});
    CHECK(words(c("ZINTER 2 za zb AGGREGATE MAX WITHSCORES")) == W{"a", "2", "c", "3"});
    CHECK(words(c("ZDIFF 2 za zb WITHSCORES")) == W{"b", "2", "d", "4"});
    CHECK(words(c("ZDIFF 2 st za WITHSCORES")) == W{"q", "1"});
    CHECK(words(c("ZDIFF 3 za zb st")) == W{"b", "d"});
    CHECK(raw(server().port(), "ZUNION 2 nokey nokey2") == "*0\r\n");
    CHECK(raw(server().port(), "ZINTER 2 za nokey WITHSCORES") == "*0\r\n");
    CHECK(raw(server().port(), "ZDIFF 2 nokey za") == "*0\r\n");
  }

  TEST_CASE("weighted infinities: inf + -inf sums to 0 and inf * 0 counts as 0") {
    auto& c = client();
    c("FLUSHALL");
    c("ZADD zi inf a -inf b 1 c");
    c("ZADD zj -inf a inf b 2 c");
    CHECK(words(c("ZUNION 2 zi zj WITHSCORES")) == W{"a", "0", "b", "0", "c", "3"});
    CHECK(words(c("ZINTER 2 zi zj WITHSCORES")) == W{"a", "0", "b", "0", "c", "3"});
    CHECK(words(c("ZUNION 1 zi WEIGHTS 0 WITHSCORES")) == W{"a", "0", "b", "0", "c", "0"});
    CHECK(words(c("ZUNION 2 zi zj AGGREGATE MIN WITHSCORES")) ==
          W{"a", "-inf", "b", "-inf", "c", "1"});
    CHECK(words(c("ZUNION 2 zi zj WEIGHTS -1 inf AGGREGATE MAX WITHSCORES")) ==
          W{"a", "-inf", "b", "inf", "c", "inf"});
    // The inputs are aggregated from the smallest to the largest, which decides where inf and
    // -inf meet: (-inf + 5) + inf is 0 where (inf + -inf) + 5 would be 5, and the NaN of 0 * inf
    // is 0 for the first (smallest) input of ZINTER but ignored by MIN for the others.
    c("ZADD zc3 inf m 1 p 2 q");
    c("ZADD zc1 -inf m");
    c("ZADD zc2 5 m 3 r");
    c("ZADD zd0 0 m");
    CHECK(words(c("ZUNION 3 zc3 zc1 zc2 WITHSCORES")) == W{"m", "0", "p", "1", "q", "2", "r", "3"});
    CHECK(words(c("ZINTER 3 zc3 zc1 zc2 WITHSCORES")) == W{"m", "0"});
    CHECK(words(c("ZINTER 2 zc3 zd0 WEIGHTS 1 inf AGGREGATE MIN WITHSCORES")) == W{"m", "0"});
    // A weight of 0 on a negative score is -0 in a direct reply, as Redis prints it; a stored
    // result reads back 0.
    c("ZADD zn -5 m");
    CHECK(words(c("ZUNION 1 zn WEIGHTS 0 WITHSCORES")) == W{"m", "-0"});
    CHECK(c("ZUNIONSTORE d 1 zn WEIGHTS 0").integer == 1);
    CHECK(words(c("ZRANGE d 0 -1 WITHSCORES")) == W{"m", "0"});
    // ... unless Redis would keep it in a skiplist: a member longer than 64 bytes.
    const std::string long_member(65, 'm');
    c.cmd({"ZADD", "zn", "-5", long_member});
    CHECK(c("ZUNIONSTORE d 1 zn WEIGHTS 0").integer == 2);
    CHECK(words(c("ZRANGE d 0 -1 WITHSCORES")) == W{"m", "-0", long_member, "-0"});
  }

  TEST_CASE("the STORE forms replace the destination, or delete it when the result is empty") {
    auto& c = client();
    setup_basic(c);
    c("SET d x");
    c("EXPIRE d 100");
    CHECK(c("ZUNIONSTORE d 2 za zb WEIGHTS 1 2 AGGREGATE MAX").integer == 5);
    CHECK(c("TYPE d").str == "zset");
    CHECK(c("TTL d").integer == -1);
    CHECK(words(c("ZRANGE d 0 -1 WITHSCORES")) ==
          W{"b", "2", "c", "3", "a", "4", "d", "4", "x", "10"});
    CHECK(c("ZINTERSTORE d 2 za zb").integer == 2);
    CHECK(words(c("ZRANGE d 0 -1 WITHSCORES")) == W{"a", "3", "c", "3.5"});
    CHECK(c("ZDIFFSTORE d 2 za zb").integer == 2);
    CHECK(words(c("ZRANGE d 0 -1 WITHSCORES")) == W{"b", "2", "d", "4"});
    // The destination may be an input.
    CHECK(c("ZUNIONSTORE za 2 za za").integer == 4);
    CHECK(words(c("ZRANGE za 0 -1 WITHSCORES")) == W{"a", "2", "b", "4", "c", "6", "d", "8"});
    CHECK(c("ZINTERSTORE d 2 za nokey").integer == 0);
    CHECK(c("EXISTS d").integer == 0);
    CHECK(c("ZDIFFSTORE d 1 nokey").integer == 0);
    CHECK(c("EXISTS d").integer == 0);
  }

  TEST_CASE("ZINTERCARD counts the intersection and stops at LIMIT") {
    auto& c = client();
    setup_basic(c);
    CHECK(c("ZINTERCARD 2 za zb").integer == 2);
    CHECK(c("ZINTERCARD 2 za zb LIMIT 1").integer == 1);
    CHECK(c("ZINTERCARD 2 za zb LIMIT 0").integer == 2);
    CHECK(c("ZINTERCARD 2 za st").integer == 2);
    CHECK(c("ZINTERCARD 1 za LIMIT 1 LIMIT 0").integer == 4);
    CHECK(c("ZINTERCARD 2 za nokey").integer == 0);
  }

  TEST_CASE("ZRANGESTORE stores a range by rank, score or lex, and refuses WITHSCORES") {
    auto& c = client();
    setup_basic(c);
    CHECK(c("ZRANGESTORE d za 0 -1").integer == 4);
    CHECK(words(c("ZRANGE d 0 -1 WITHSCORES")) == W{"a", "1", "b", "2", "c", "3", "d", "4"});
    CHECK(c("ZRANGESTORE d za (1 3 BYSCORE LIMIT 1 5").integer == 1);
    CHECK(words(c("ZRANGE d 0 -1 WITHSCORES")) == W{"c", "3"});
    CHECK(c("ZRANGESTORE d za 3 1 BYSCORE REV").integer == 3);
    CHECK(words(c("ZRANGE d 0 -1")) == W{"a", "b", "c"});
    CHECK(c("ZRANGESTORE d za [b + BYLEX").integer == 3);
    CHECK(c("ZRANGESTORE d za 10 20").integer == 0);
    CHECK(c("EXISTS d").integer == 0);
    c("SET d x");
    CHECK(c("ZRANGESTORE d nokey 0 -1").integer == 0);
    CHECK(c("EXISTS d").integer == 0);
    check_error(c("ZRANGESTORE d za 0 -1 WITHSCORES"), "ERR syntax error");
    check_error(c("ZRANGESTORE d za 0 1 LIMIT 0 1"),
                "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or "
                "BYLEX");
    check_error(c("ZRANGESTORE d str 0 -1"), kWrongType);
    check_error(c("ZRANGESTORE d st 0 -1"), kWrongType);
    check_error(c("ZRANGESTORE d za x 1"), "ERR value is not an integer or out of range");
    check_error(c("ZRANGESTORE d za a b BYSCORE"), "ERR min or max is not a float");
    check_error(c("ZRANGESTORE d za a b BYLEX"), "ERR min or max not valid string range item");
    check_error(c("ZRANGESTORE d za 0"), "ERR wrong number of arguments for 'zrangestore' command");
  }

  TEST_CASE("ZRANDMEMBER: a bulk, distinct members, repeats for a negative count, WITHSCORES") {
    auto& c = client();
    setup_basic(c);
    const int port = server().port();
    CHECK(raw(port, "ZRANDMEMBER nokey") == "$-1\r\n");
    CHECK(raw(port, "ZRANDMEMBER nokey 3") == "*0\r\n");
    CHECK(raw(port, "ZRANDMEMBER nokey -3 WITHSCORES") == "*0\r\n");
    CHECK(raw(port, "ZRANDMEMBER za 0 WITHSCORES") == "*0\r\n");
    const Reply one = c("ZRANDMEMBER za");
    CHECK(one.type == REDIS_REPLY_STRING);
    // count >= size: the whole set, from the highest score down (Redis walks from the tail).
    CHECK(words(c("ZRANDMEMBER za 10 WITHSCORES")) == W{"d", "4", "c", "3", "b", "2", "a", "1"});
    const W two = words(c("ZRANDMEMBER za 2 WITHSCORES"));
    REQUIRE(two.size() == 4);
    CHECK(two[0] != two[2]);
    CHECK(c("ZSCORE za " + two[0]).str == two[1]);
    const W reps = words(c("ZRANDMEMBER za -20 WITHSCORES"));
    REQUIRE(reps.size() == 40);
    for (std::size_t i = 0; i < reps.size(); i += 2)
      CHECK(c("ZSCORE za " + reps[i]).str == reps[i + 1]);
    CHECK(c("ZRANDMEMBER za -7").elements.size() == 7);
    check_error(c("ZRANDMEMBER str"), kWrongType);
    check_error(c("ZRANDMEMBER za x"), "ERR value is not an integer or out of range");
    check_error(c("ZRANDMEMBER za 2 foo"), "ERR syntax error");
    check_error(c("ZRANDMEMBER za 2 WITHSCORES x"), "ERR syntax error");
    check_error(c("ZRANDMEMBER za -9223372036854775808"),
                "ERR value is out of range, value must between -9223372036854775807 and "
                "9223372036854775807");
    check_error(c("ZRANDMEMBER za 4611686018427387904 WITHSCORES"), "ERR value is out of range");
  }

  TEST_CASE("ZMPOP and LMPOP pop from the first non-empty key and reply key and elements") {
    auto& c = client();
    setup_basic(c);
    const int port = server().port();
    CHECK(raw(port, "ZMPOP 2 nokey za MAX COUNT 2") ==
          "*2\r\n$2\r\nza\r\n*2\r\n*2\r\n$1\r\nd\r\n$1\r\n4\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n");
    CHECK(raw(port, "ZMPOP 1 nokey MIN") == "*-1\r\n");
    CHECK(raw(port, "ZMPOP 2 za zb min count 10") ==
          "*2\r\n$2\r\nza\r\n*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n");
    CHECK(c("EXISTS za").integer == 0);
    CHECK(raw(port, "LMPOP 2 nokey l RIGHT COUNT 2") ==
          "*2\r\n$1\r\nl\r\n*2\r\n$1\r\n3\r\n$1\r\n2\r\n");
    CHECK(raw(port, "LMPOP 1 nokey LEFT") == "*-1\r\n");
    // A wrong-type key after the first non-empty one is not looked at.
    CHECK(raw(port, "LMPOP 2 l str left") == "*2\r\n$1\r\nl\r\n*1\r\n$1\r\n1\r\n");
    CHECK(c("EXISTS l").integer == 0);
    const std::vector<std::pair<std::string, std::string>> errors = {
        {"ZMPOP 0 zb MIN", "ERR numkeys should be greater than 0"},
        {"ZMPOP x zb MIN", "ERR numkeys should be greater than 0"},
        {"ZMPOP 3 zb MIN", "ERR syntax error"},
        {"ZMPOP 2 zb MIN", "ERR syntax error"},
        {"ZMPOP 1 zb FOO", "ERR syntax error"},
        {"ZMPOP 1 zb MIN COUNT 0", "ERR count should be greater than 0"},
        {"ZMPOP 1 zb MIN COUNT x", "ERR count should be greater than 0"},
        {"ZMPOP 1 zb MIN COUNT", "ERR syntax error"},
        {"ZMPOP 1 zb MIN COUNT 1 COUNT 2", "ERR syntax error"},
        {"ZMPOP 1 zb MIN FOO", "ERR syntax error"},
        {"ZMPOP 2 nokey str MIN", std::string(kWrongType)},
        {"ZMPOP 1 zb", "ERR wrong number of arguments for 'zmpop' command"},
        {"LMPOP 0 l2 LEFT", "ERR numkeys should be greater than 0"},
        {"LMPOP -1 l2 LEFT", "ERR numkeys should be greater than 0"},
        {"LMPOP 1 l2 UP", "ERR syntax error"},
        {"LMPOP 3 l2 LEFT", "ERR syntax error"},
        {"LMPOP 1 l2 LEFT COUNT -2", "ERR count should be greater than 0"},
        {"LMPOP 1 l2 LEFT COUNT 1 COUNT 1", "ERR syntax error"},
        {"LMPOP 2 str l2 LEFT", std::string(kWrongType)},
        {"LMPOP 1 l2", "ERR wrong number of arguments for 'lmpop' command"},
    };
    for (const auto& [cmd, err] : errors) {
      CAPTURE(cmd);
      check_error(c(cmd), err);
    }
    CHECK(words(c("LRANGE l2 0 -1")) == W{"x", "y"});  // no failed LMPOP popped anything
    CHECK(c("ZCARD zb").integer == 3);
  }

  TEST_CASE("COMMAND INFO gives the new commands Redis's arity and key positions") {
    auto& c = client();
    // name, arity, first key, last key, step: redis-server 7.0.15's COMMAND INFO.
    struct Row {
      const char* name;
      int arity, first, last, step;
    };
    const Row rows[] = {
        {"zunion", -3, 0, 0, 0},      {"zinter", -3, 0, 0, 0},      {"zdiff", -3, 0, 0, 0},
        {"zunionstore", -4, 1, 1, 1}, {"zinterstore", -4, 1, 1, 1}, {"zdiffstore", -4, 1, 1, 1},
        {"zintercard", -3, 0, 0, 0},  {"zrangestore", -5, 1, 2, 1}, {"zrandmember", -2, 1, 1, 1},
        {"zmpop", -4, 0, 0, 0},       {"lmpop", -4, 0, 0, 0},
    };
    for (const Row& row : rows) {
      CAPTURE(row.name);
      const Reply info = c(std::string("COMMAND INFO ") + row.name);
      REQUIRE(info.elements.size() == 1);
      const Reply& e = info.elements[0];
      REQUIRE(e.elements.size() >= 6);
      CHECK(e.elements[0].str == row.name);
      CHECK(e.elements[1].integer == row.arity);
      CHECK(e.elements[3].integer == row.first);
      CHECK(e.elements[4].integer == row.last);
      CHECK(e.elements[5].integer == row.step);
    }
  }

  // ---------------------------------------------------------------- randomized, against Redis

  // The same random commands on kvlab and on redis-server; every reply and, after every command,
  // every key's type and contents must be equal byte for byte. Scores and weights are small
  // dyadic numbers and infinities, so that every result prints the same under Redis 7.0's %.17g
  // and kvlab's shortest round-trip formatter (they differ for, e.g., 0.1); the sums still
  // exercise the order of aggregation (inf + -inf = 0 depends on it), NaN products (inf * 0), -0,
  // MIN/MAX, and sets as inputs. ZRANDMEMBER is compared where it is deterministic (count >= size)
  // and by shape elsewhere.
  TEST_CASE("random algebra, ZRANGESTORE, ZMPOP and LMPOP agree with redis-server") {
    RedisProcess redis;
    if (!redis.running()) {
      MESSAGE("redis-server not found: skipping the comparison");
      return;
    }
    Client k(server().port());
    Client r(redis.port());
    REQUIRE(k.ok());
    REQUIRE(r.ok());
    const char* seed_env = std::getenv("ZALG_SEED");
    const std::uint64_t seed =
        seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : 20261204;
    MESSAGE("seed " << seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    const std::vector<std::string> scores = {"-inf", "inf", "-3", "-1.5", "0",
                                             "0.25", "1",   "2",  "7",    "-0.5"};
    const std::vector<std::string> weights = {"0",    "1",   "-1",   "2", "0.5",
                                              "-2.5", "inf", "-inf", "3"};
    const std::vector<std::string> members = {"a", "b", "c", "d", "e", "f", "10", "2"};
    const std::vector<std::string> zkeys = {"z1", "z2", "z3", "z4"};
    const std::vector<std::string> inputs = {"z1", "z2", "z3", "z4", "s1", "s2", "nx", "zl"};
    const std::vector<std::string> dsts = {"d1", "d2", "z1", "s1", "str"};
    const std::vector<std::string> all_keys = {"z1", "z2", "z3", "z4",  "s1", "s2", "nx",
                                               "zl", "d1", "d2", "str", "l1", "l2", "l3"};
    std::size_t compared = 0, mismatches = 0;
    std::string last;  // the last random command, named in a failure

    auto both = [&](const std::vector<std::string>& cmd) {
      const Reply a = k.cmd(cmd);
      const Reply b = r.cmd(cmd);
      ++compared;
      if (show(a) != show(b)) {
        ++mismatches;
        std::string line;
        for (const auto& w : cmd) line += w + " ";
        if (mismatches <= 3) {
          FAIL_CHECK("after: " << last << "\n  command: " << line << "\n  kvlab: " << show(a)
                               << "\n  redis: " << show(b));
        }
      }
      return a;
    };
    auto state = [&]() {
      for (const auto& key : all_keys) {
        const Reply t = both({"TYPE", key});
        if (t.str == "zset") {
          both({"ZRANGE", key, "0", "-1", "WITHSCORES"});
        } else if (t.str == "set") {
          // Set order is the implementation's: compare the sorted members.
          W a = words(k.cmd({"SMEMBERS", key})), b = words(r.cmd({"SMEMBERS", key}));
          std::sort(a.begin(), a.end());
          std::sort(b.begin(), b.end());
          ++compared;
          if (a != b) {
            ++mismatches;
            FAIL_CHECK("after: " << last << "\n  set " << key << " differs");
          }
        } else if (t.str == "list") {
          both({"LRANGE", key, "0", "-1"});
        }
      }
    };
    auto rand_keys = [&](std::size_t n) {
      std::vector<std::string> out;
      for (std::size_t i = 0; i < n; ++i) out.push_back(inputs[pick(inputs.size())]);
      return out;
    };

    for (int round = 0; round < 120 && mismatches == 0; ++round) {
      both({"FLUSHALL"});
      for (const auto& key : zkeys) {
        const std::size_t n = pick(6);
        for (std::size_t i = 0; i < n; ++i)
          both({"ZADD", key, scores[pick(scores.size())], members[pick(members.size())]});
      }
      for (const char* key : {"s1", "s2"}) {
        const std::size_t n = pick(5);
        for (std::size_t i = 0; i < n; ++i) both({"SADD", key, members[pick(members.size())]});
      }
      for (std::size_t i = 0; i < 5; ++i) both({"ZADD", "zl", "0", members[pick(members.size())]});
      for (const char* key : {"l1", "l2"}) {
        const std::size_t n = pick(5);
        for (std::size_t i = 0; i < n; ++i) both({"RPUSH", key, members[pick(members.size())]});
      }
      both({"SET", "str", "x"});

      for (int step = 0; step < 20; ++step) {
        std::vector<std::string> cmd;
        const std::size_t kind = pick(12);
        if (kind <= 5) {
          // ZUNION/ZINTER/ZDIFF, with STORE for kind >= 3.
          static const char* const kOps[] = {"ZUNION", "ZINTER", "ZDIFF"};
          const std::size_t op = kind % 3;
          const bool store = kind >= 3;
          cmd.push_back(std::string(kOps[op]) + (store ? "STORE" : ""));
          if (store) cmd.push_back(dsts[pick(dsts.size())]);
          const std::size_t n = 1 + pick(4);
          cmd.push_back(std::to_string(n));
          for (const auto& key : rand_keys(n)) cmd.push_back(key);
          if (op != 2 && pick(3) != 0) {
            cmd.push_back("WEIGHTS");
            for (std::size_t i = 0; i < n; ++i) cmd.push_back(weights[pick(weights.size())]);
          }
          if (op != 2 && pick(2) != 0) {
            static const char* const kAgg[] = {"SUM", "MIN", "MAX", "min"};
            cmd.push_back("AGGREGATE");
            cmd.push_back(kAgg[pick(4)]);
          }
          if (!store && pick(2) != 0) cmd.push_back("WITHSCORES");
          if (pick(25) == 0) cmd.insert(cmd.begin() + (store ? 2 : 1), pick(2) ? "0" : "9");
        } else if (kind == 6) {
          const std::size_t n = 1 + pick(4);
          cmd = {"ZINTERCARD", std::to_string(n)};
          for (const auto& key : rand_keys(n)) cmd.push_back(key);
          if (pick(2) != 0) {
            cmd.push_back("LIMIT");
            cmd.push_back(std::to_string(static_cast<int>(pick(4)) - (pick(10) == 0 ? 2 : 0)));
          }
        } else if (kind == 7) {
          cmd = {"ZRANGESTORE", dsts[pick(dsts.size())]};
          const std::size_t how = pick(3);
          if (how == 0) {
            cmd.push_back(zkeys[pick(zkeys.size())]);
            cmd.push_back(std::to_string(static_cast<int>(pick(7)) - 3));
            cmd.push_back(std::to_string(static_cast<int>(pick(7)) - 3));
            if (pick(2) != 0) cmd.push_back("REV");
          } else if (how == 1) {
            static const char* const kBounds[] = {"-inf", "+inf", "(0", "1", "(2", "-1.5", "7"};
            cmd.push_back(zkeys[pick(zkeys.size())]);
            cmd.push_back(kBounds[pick(7)]);
            cmd.push_back(kBounds[pick(7)]);
            cmd.push_back("BYSCORE");
            if (pick(2) != 0) cmd.push_back("REV");
          } else {
            static const char* const kLex[] = {"-", "+", "[b", "(c", "[10", "(f"};
            cmd.push_back(pick(4) != 0 ? "zl" : "nx");
            cmd.push_back(kLex[pick(6)]);
            cmd.push_back(kLex[pick(6)]);
            cmd.push_back("BYLEX");
            if (pick(2) != 0) cmd.push_back("REV");
          }
          if (how != 0 && pick(2) != 0) {
            cmd.push_back("LIMIT");
            cmd.push_back(std::to_string(pick(3)));
            cmd.push_back(std::to_string(static_cast<int>(pick(4)) - 1));
          }
        } else if (kind == 8) {
          const std::size_t n = 1 + pick(3);
          cmd = {"ZMPOP", std::to_string(n)};
          for (std::size_t i = 0; i < n; ++i)
            cmd.push_back(pick(6) == 0 ? "str" : zkeys[pick(zkeys.size())]);
          cmd.push_back(pick(2) != 0 ? "MIN" : "max");
          if (pick(2) != 0) {
            cmd.push_back("COUNT");
            cmd.push_back(std::to_string(pick(5)));
          }
        } else if (kind == 9) {
          static const char* const kLists[] = {"l1", "l2", "l3", "str"};
          const std::size_t n = 1 + pick(3);
          cmd = {"LMPOP", std::to_string(n)};
          for (std::size_t i = 0; i < n; ++i) cmd.push_back(kLists[pick(pick(8) == 0 ? 4 : 3)]);
          cmd.push_back(pick(2) != 0 ? "LEFT" : "right");
          if (pick(2) != 0) {
            cmd.push_back("COUNT");
            cmd.push_back(std::to_string(pick(4)));
          }
        } else {
          // ZRANDMEMBER with a count that covers the whole set (deterministic), or by shape.
          const std::string key = zkeys[pick(zkeys.size())];
          const bool ws = pick(2) != 0;
          std::vector<std::string> all = {"ZRANDMEMBER", key, "100"};
          if (ws) all.push_back("WITHSCORES");
          last.clear();
          for (const auto& w : all) last += w + " ";
          both(all);
          const std::int64_t count = static_cast<std::int64_t>(pick(9)) - 4;
          std::vector<std::string> some = {"ZRANDMEMBER", key, std::to_string(count)};
          if (ws) some.push_back("WITHSCORES");
          const Reply a = k.cmd(some);
          const Reply b = r.cmd(some);
          CHECK(a.type == b.type);
          CHECK(a.elements.size() == b.elements.size());
          continue;
        }
        last.clear();
        for (const auto& w : cmd) last += w + " ";
        both(cmd);
        state();
        if (mismatches > 0) break;
      }
    }
    MESSAGE(compared << " replies compared");
    CHECK(mismatches == 0);
  }

  TEST_CASE("the server shuts down cleanly after the algebra tests") {
    CHECK(server().stop() == 0);
  }
}
