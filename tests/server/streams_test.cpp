// Streams against a real kvlab-server (2 workers) through hiredis: XADD's ID rules and options,
// XRANGE/XREVRANGE bounds, XLEN, XDEL, XTRIM (exact, and approximate trimming of whole nodes),
// XSETID, XINFO STREAM, XREAD, the generic commands on streams, and WRONGTYPE both ways. Expected
// texts are Redis 7.0's. The last cases replay command scripts on a real redis-server 7.0 too
// (skipped when it is not installed) and compare every reply, including the node layout that
// approximate trimming and XINFO expose.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/checks.hpp"
#include "tests/server/harness.hpp"

using kvtest::check_error;
using kvtest::Client;
using kvtest::kWrongType;
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

constexpr std::string_view kInvalidId =
    "ERR Invalid stream ID specified as stream command argument";

// A reply as one line, for exact comparisons: ids, strings, nil, nested arrays.
std::string show(const Reply& r) {
  switch (r.type) {
    case REDIS_REPLY_ARRAY: {
      std::string s = "[";
      for (std::size_t i = 0; i < r.elements.size(); ++i) {
        if (i > 0) s += " ";
        s += show(r.elements[i]);
      }
      return s + "]";
    }
    case REDIS_REPLY_INTEGER:
      return ":" + std::to_string(r.integer);
    case REDIS_REPLY_NIL:
      return "nil";
    case REDIS_REPLY_ERROR:
      return "-" + r.str;
    case REDIS_REPLY_STATUS:
      return "+" + r.str;
    default:
      return r.str;
  }
}

void flush() {
  client()("FLUSHALL");
}

// Sends a command without waiting for its reply (a client that will block).
void send_only(Client& c, const std::vector<std::string>& args) {
  c.append(args);
  int done = 0;
  while (done == 0)
    if (redisBufferWrite(c.raw(), &done) != REDIS_OK) break;
}

// Adds n entries n0-1 .. (n0+n-1)-1 with one field each.
void add_many(Client& c, const std::string& key, int n0, int n, const std::string& value = "v") {
  for (int i = n0; i < n0 + n; ++i) c.append({"XADD", key, std::to_string(i) + "-1", "f", value});
  for (int i = 0; i < n; ++i) c.get_reply();
}

}  // namespace

TEST_CASE("XADD appends entries and XRANGE returns them as id and field-value arrays") {
  REQUIRE(server().running());
  flush();
  Client& c = client();
  CHECK(c("XADD s 1-1 a 1 b 2").str == "1-1");
  CHECK(c("XADD s 1-2 a 3").str == "1-2");
  CHECK(c("XADD s 5 c 4").str == "5-0");
  CHECK(show(c("XRANGE s - +")) == "[[1-1 [a 1 b 2]] [1-2 [a 3]] [5-0 [c 4]]]");
  CHECK(show(c("XREVRANGE s + -")) == "[[5-0 [c 4]] [1-2 [a 3]] [1-1 [a 1 b 2]]]");
  CHECK(c("XLEN s").integer == 3);
  CHECK(c("TYPE s").str == "stream");
  CHECK(c("OBJECT ENCODING s").str == "stream");
}

TEST_CASE("XADD generates IDs from the clock, and ms-* takes the next sequence") {
  flush();
  Client& c = client();
  const Reply a = c("XADD s * f v");
  const Reply b = c("XADD s * f v");
  REQUIRE(a.type == REDIS_REPLY_STRING);
  const auto ms = std::stoull(a.str.substr(0, a.str.find('-')));
  CHECK(ms > 1600000000000ULL);
  CHECK(b.str > a.str.substr(0, a.str.find('-')));  // same or later millisecond
  CHECK(c("XADD t 7-* f v").str == "7-0");
  CHECK(c("XADD t 7-* f v").str == "7-1");
  CHECK(c("XADD t 8-* f v").str == "8-0");
  CHECK(c("XADD u 0-* f v").str == "0-1");
  check_error(c("XADD t 6-* f v"),
              "ERR The ID specified in XADD is equal or smaller than the target stream top item");
}

TEST_CASE("XADD rejects IDs as Redis does") {
  flush();
  Client& c = client();
  check_error(c("XADD s 0-0 f v"), "ERR The ID specified in XADD must be greater than 0-0");
  check_error(c("XADD s 0 f v"), "ERR The ID specified in XADD must be greater than 0-0");
  CHECK(c("EXISTS s").integer == 0);
  CHECK(c("XADD s 5-5 f v").str == "5-5");
  check_error(c("XADD s 5-5 f v"),
              "ERR The ID specified in XADD is equal or smaller than the target stream top item");
  check_error(c("XADD s 5-4 f v"),
              "ERR The ID specified in XADD is equal or smaller than the target stream top item");
  for (const char* bad : {"abc", "1-", "-1", "1-x", "1-2-3", "+", "-", "(1"})
    check_error(c.cmd({"XADD", "s", bad, "f", "v"}), kInvalidId);
  // strtoull's leniency, as Redis's string2ull falls back to it.
  CHECK(c.cmd({"XADD", "s", "0010-+5", "f", "v"}).str == "10-5");
  check_error(c("XADD s 18446744073709551616 f v"), kInvalidId);
  CHECK(c("XADD s 18446744073709551615-18446744073709551615 f v").str ==
        "18446744073709551615-18446744073709551615");
  check_error(c("XADD s * f v"),
              "ERR The stream has exhausted the last possible ID, unable to add more items");
  check_error(c("XADD s 1 f"), "ERR wrong number of arguments for 'xadd' command");
  check_error(c("XADD s * f v g"), "ERR wrong number of arguments for 'xadd' command");
}

TEST_CASE("XADD options: NOMKSTREAM, MAXLEN, MINID, LIMIT and their errors") {
  flush();
  Client& c = client();
  CHECK(c("XADD s NOMKSTREAM * f v").is_nil());
  CHECK(c("EXISTS s").integer == 0);
  CHECK(c("XADD s MAXLEN 2 1 f v").str == "1-0");
  CHECK(c("XADD s MAXLEN = 2 2 f v").str == "2-0");
  CHECK(c("XADD s MAXLEN 2 3 f v").str == "3-0");
  CHECK(show(c("XRANGE s - +")) == "[[2-0 [f v]] [3-0 [f v]]]");
  CHECK(c("XADD s MINID 3 4 f v").str == "4-0");
  CHECK(show(c("XRANGE s - +")) == "[[3-0 [f v]] [4-0 [f v]]]");
  CHECK(c("XADD s NOMKSTREAM 5 f v").str == "5-0");
  // Approximate trimming removes whole nodes only: nothing from a stream of one node.
  CHECK(c("XADD s MAXLEN ~ 1 6 f v").str == "6-0");
  CHECK(c("XLEN s").integer == 4);
  check_error(c("XADD s MAXLEN 1 MINID 1 * f v"),
              "ERR syntax error, MAXLEN and MINID options at the same time are not compatible");
  check_error(c("XADD s MAXLEN -1 * f v"), "ERR The MAXLEN argument must be >= 0.");
  check_error(c("XADD s MAXLEN x * f v"), "ERR value is not an integer or out of range");
  check_error(c("XADD s MAXLEN ~ 1 LIMIT -1 * f v"), "ERR The LIMIT argument must be >= 0.");
  check_error(c("XADD s LIMIT 5 * f v"),
              "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
  check_error(c("XADD s MAXLEN 1 LIMIT 5 * f v"),
              "ERR syntax error, LIMIT cannot be used without the special ~ option");
  check_error(c("XADD s MINID x * f v"), kInvalidId);
  CHECK(c("SET str x").is_status("OK"));
  check_error(c("XADD str * f v"), kWrongType);
  check_error(c("XADD str NOMKSTREAM * f v"), kWrongType);
}

TEST_CASE("XRANGE and XREVRANGE take exclusive and incomplete IDs and COUNT") {
  flush();
  Client& c = client();
  for (const char* id : {"1-0", "1-1", "2-0", "2-5", "3-0"}) c.cmd({"XADD", "s", id, "f", id});
  CHECK(show(c("XRANGE s 1 1")) == "[[1-0 [f 1-0]] [1-1 [f 1-1]]]");
  CHECK(show(c("XRANGE s (1-0 (2-5")) == "[[1-1 [f 1-1]] [2-0 [f 2-0]]]");
  CHECK(show(c("XRANGE s (1 + COUNT 2")) == "[[1-1 [f 1-1]] [2-0 [f 2-0]]]");
  CHECK(show(c("XREVRANGE s + - COUNT 2")) == "[[3-0 [f 3-0]] [2-5 [f 2-5]]]");
  // An incomplete end is <ms>-max, so "(3" still includes 3-0.
  CHECK(show(c("XREVRANGE s (3 2")) == "[[3-0 [f 3-0]] [2-5 [f 2-5]] [2-0 [f 2-0]]]");
  CHECK(show(c("XREVRANGE s (3-0 2")) == "[[2-5 [f 2-5]] [2-0 [f 2-0]]]");
  CHECK(show(c("XRANGE s 3 1")) == "[]");
  CHECK(c("XRANGE s - + COUNT 0").type == REDIS_REPLY_NIL);
  CHECK(show(c("XRANGE s - + COUNT -5")) == "nil");
  CHECK(show(c("XRANGE nokey - + COUNT 0")) == "[]");
  check_error(c("XRANGE s (18446744073709551615-18446744073709551615 +"),
              "ERR invalid start ID for the interval");
  check_error(c("XRANGE s - (0-0"), "ERR invalid end ID for the interval");
  check_error(c("XRANGE s (- +"), kInvalidId);
  check_error(c("XRANGE s ( +"), kInvalidId);
  check_error(c("XRANGE s - + COUNT"), "ERR syntax error");
  check_error(c("XRANGE s - + COUNT x"), "ERR value is not an integer or out of range");
  c("SET str x");
  check_error(c("XRANGE str - +"), kWrongType);
  check_error(c("XRANGE str x +"), kInvalidId);  // the IDs before the key
}

TEST_CASE("XDEL removes entries, and an emptied stream stays") {
  flush();
  Client& c = client();
  for (const char* id : {"1", "2", "3"}) c.cmd({"XADD", "s", id, "f", "v"});
  CHECK(c("XDEL s 2 2 9").integer == 1);
  check_error(c("XDEL s 1 x"), kInvalidId);
  CHECK(c("XLEN s").integer == 2);  // a bad ID deletes nothing
  CHECK(c("XDEL nokey x").integer == 0);
  CHECK(c("XDEL s 1 3").integer == 2);
  CHECK(c("XLEN s").integer == 0);
  CHECK(c("EXISTS s").integer == 1);
  CHECK(show(c("XRANGE s - +")) == "[]");
  check_error(c("XADD s 3 f v"),
              "ERR The ID specified in XADD is equal or smaller than the target stream top item");
  CHECK(c("XADD s 4 f v").str == "4-0");
  c("SET str x");
  check_error(c("XDEL str 1"), kWrongType);
  check_error(c("XLEN str"), kWrongType);
  CHECK(c("XLEN nokey").integer == 0);
}

TEST_CASE("XTRIM trims exactly, and approximately only whole nodes of 100 entries") {
  flush();
  Client& c = client();
  add_many(c, "s", 1, 250);  // nodes of 100, 100, 50 entries
  CHECK(c("XTRIM s MAXLEN ~ 120").integer == 100);
  CHECK(c("XLEN s").integer == 150);
  CHECK(c("XTRIM s MAXLEN ~ 149").integer == 0);
  CHECK(c("XTRIM s MINID ~ 202").integer == 100);
  CHECK(c("XTRIM s MAXLEN 10").integer == 40);
  CHECK(show(c("XRANGE s - + COUNT 1")) == "[[241-1 [f v]]]");
  CHECK(c("XTRIM s MINID 245").integer == 4);
  CHECK(c("XTRIM s MAXLEN 0").integer == 6);
  CHECK(c("EXISTS s").integer == 1);
  add_many(c, "t", 1, 300);
  CHECK(c("XTRIM t MAXLEN ~ 0 LIMIT 150").integer == 100);  // LIMIT stops before the 2nd node
  CHECK(c("XTRIM t MAXLEN ~ 0 LIMIT 0").integer == 200);    // LIMIT 0: no limit
  CHECK(c("XTRIM nokey MAXLEN 1").integer == 0);
  check_error(c("XTRIM s LIMIT 1"),
              "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy");
  check_error(c("XTRIM s"), "ERR wrong number of arguments for 'xtrim' command");
  check_error(c("XTRIM s FOO 1"), "ERR syntax error");
  check_error(c("XTRIM s MAXLEN 1 *"), "ERR syntax error");
}

TEST_CASE("Nodes also close at 4096 bytes, so large entries make small nodes") {
  flush();
  Client& c = client();
  add_many(c, "s", 1, 20, std::string(1000, 'x'));  // 4 entries of ~1 KB fit a node
  CHECK(c("XTRIM s MAXLEN ~ 10").integer == 8);
  CHECK(c("XLEN s").integer == 12);
  const Reply info = c("XINFO STREAM s");
  REQUIRE(info.elements.size() == 20);
  CHECK(info.elements[2].str == "radix-tree-keys");
  CHECK(info.elements[3].integer == 3);
}

TEST_CASE("XSETID sets the last ID, entries added and max deleted ID") {
  flush();
  Client& c = client();
  check_error(c("XSETID nokey 1"), "ERR no such key");
  c("XADD s 5 f v");
  check_error(c("XSETID s 4"),
              "ERR The ID specified in XSETID is smaller than the target stream top item");
  check_error(c("XSETID s 9 ENTRIESADDED 0"),
              "ERR The entries_added specified in XSETID is smaller than the target stream length");
  check_error(c("XSETID s 9 ENTRIESADDED -1"), "ERR entries_added must be positive");
  check_error(c("XSETID s 9 MAXDELETEDID 10"),
              "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
  check_error(c("XSETID s 9 FOO"), "ERR syntax error");
  check_error(c("XSETID s -"), kInvalidId);
  CHECK(c("XSETID s 9 ENTRIESADDED 7 MAXDELETEDID 8").is_status("OK"));
  check_error(c("XADD s 9 f v"),
              "ERR The ID specified in XADD is equal or smaller than the target stream top item");
  CHECK(c("XADD s 9-* f v").str == "9-1");
  const Reply info = c("XINFO STREAM s");
  CHECK(show(info) ==
        "[length :2 radix-tree-keys :1 radix-tree-nodes :2 last-generated-id 9-1 "
        "max-deleted-entry-id 8-0 entries-added :8 recorded-first-entry-id 5-0 groups :0 "
        "first-entry [5-0 [f v]] last-entry [9-1 [f v]]]");
}

TEST_CASE("XINFO STREAM reports the stream, and FULL its entries") {
  flush();
  Client& c = client();
  check_error(c("XINFO STREAM nokey"), "ERR no such key");
  c("XADD s 1-1 a 1");
  c("XADD s 2-1 a 2");
  c("XDEL s 1-1");
  CHECK(show(c("XINFO STREAM s")) ==
        "[length :1 radix-tree-keys :1 radix-tree-nodes :2 last-generated-id 2-1 "
        "max-deleted-entry-id 1-1 entries-added :2 recorded-first-entry-id 2-1 groups :0 "
        "first-entry [2-1 [a 2]] last-entry [2-1 [a 2]]]");
  CHECK(show(c("XINFO STREAM s FULL")) ==
        "[length :1 radix-tree-keys :1 radix-tree-nodes :2 last-generated-id 2-1 "
        "max-deleted-entry-id 1-1 entries-added :2 recorded-first-entry-id 2-1 "
        "entries [[2-1 [a 2]]] groups []]");
  c("XADD e MAXLEN 0 3 f v");
  CHECK(show(c("XINFO STREAM e")) ==
        "[length :0 radix-tree-keys :0 radix-tree-nodes :1 last-generated-id 3-0 "
        "max-deleted-entry-id 0-0 entries-added :1 recorded-first-entry-id 0-0 groups :0 "
        "first-entry nil last-entry nil]");
  check_error(c("XINFO STREAM s FOO"),
              "ERR unknown subcommand or wrong number of arguments for 'STREAM'. Try XINFO HELP.");
  check_error(c("XINFO STREAM s FULL COUNT x"), "ERR value is not an integer or out of range");
  c("SET str x");
  check_error(c("XINFO STREAM str"), kWrongType);
}

TEST_CASE("XREAD returns the entries after each ID, per stream") {
  flush();
  Client& c = client();
  CHECK(c("XREAD STREAMS s 0").type == REDIS_REPLY_NIL);
  for (const char* id : {"1", "2", "3"}) c.cmd({"XADD", "s", id, "f", id});
  c("XADD t 5 g x");
  CHECK(show(c("XREAD COUNT 2 STREAMS s t nokey 1 0 0")) ==
        "[[s [[2-0 [f 2]] [3-0 [f 3]]]] [t [[5-0 [g x]]]]]");
  CHECK(show(c("XREAD STREAMS s t $ 5")) == "nil");
  CHECK(show(c("XREAD STREAMS s t $ 4")) == "[[t [[5-0 [g x]]]]]");
  CHECK(show(c("XREAD COUNT 0 STREAMS s 2-0")) == "[[s [[3-0 [f 3]]]]]");
  check_error(c("XREAD STREAMS s"), "ERR wrong number of arguments for 'xread' command");
  check_error(c("XREAD STREAMS s t 0"),
              "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be "
              "specified.");
  check_error(c("XREAD COUNT 1 s 0"), "ERR syntax error");
  check_error(c("XREAD STREAMS s >"),
              "ERR The > ID can be specified only when calling XREADGROUP using the GROUP "
              "<group> <consumer> option.");
  check_error(c("XREAD STREAMS s +"), kInvalidId);
  check_error(c("XREAD BLOCK x STREAMS s 0"), "ERR timeout is not an integer or out of range");
  check_error(c("XREAD BLOCK -1 STREAMS s 0"), "ERR timeout is negative");
  c("SET str x");
  check_error(c("XREAD STREAMS str s x 0"), kWrongType);  // the type before the ID
  check_error(c("XREAD STREAMS s str x 0"), kInvalidId);
}

TEST_CASE("XREAD BLOCK waits for an XADD after its ID and answers with that stream") {
  flush();
  Client& c = client();
  c("XADD s 1 f v");
  Client a(server().port()), b(server().port());
  send_only(a, {"XREAD", "COUNT", "5", "BLOCK", "5000", "STREAMS", "s", "t", "$", "$"});
  send_only(b, {"XREAD", "BLOCK", "5000", "STREAMS", "s", "5"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  c("XADD t 2 g w");  // serves a (any ID after 0-0), not b
  CHECK(show(a.get_reply()) == "[[t [[2-0 [g w]]]]]");
  c("XADD s 3 f v");  // 3-0 is not after b's 5-0
  c("XADD s 6 f v");
  CHECK(show(b.get_reply()) == "[[s [[6-0 [f v]]]]]");
  // A timeout answers nil; inside MULTI nothing blocks.
  CHECK(show(a("XREAD BLOCK 50 STREAMS s $")) == "nil");
  CHECK(a("MULTI").is_status("OK"));
  a("XREAD BLOCK 0 STREAMS s $");
  CHECK(show(a("EXEC")) == "[nil]");
  // An XADD that trims what it adds still serves (Redis compares with the last ID).
  send_only(b, {"XREAD", "BLOCK", "5000", "STREAMS", "s", "$"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  c("XADD s MAXLEN 0 7 f v");
  CHECK(show(b.get_reply()) == "[[s []]]");
  // XSETID raises the last ID but adds nothing: the reader keeps waiting for the next XADD.
  send_only(b, {"XREAD", "BLOCK", "5000", "STREAMS", "s", "$"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  c("XSETID s 20");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  c("XADD s 21 f v");
  CHECK(show(b.get_reply()) == "[[s [[21-0 [f v]]]]]");
}

TEST_CASE("Generic commands on streams: COPY clones, WRONGTYPE from other families") {
  flush();
  Client& c = client();
  c("XADD s 1 f v");
  CHECK(c("COPY s d").integer == 1);
  c("XADD d 2 g w");
  CHECK(c("XLEN s").integer == 1);
  CHECK(c("XLEN d").integer == 2);
  check_error(c("GET s"), kWrongType);
  check_error(c("LPUSH s x"), kWrongType);
  check_error(c("HSET s f v"), kWrongType);
  c("XDEL s 1");
  CHECK(c("COPY s e").integer == 1);  // an empty stream is a value too
  CHECK(c("TYPE e").str == "stream");
  CHECK(c("DEL s").integer == 1);
}

// The same scripts on redis-server 7.0 and kvlab: every reply equal. They cross node boundaries
// (count and bytes), delete whole nodes, trim by MINID and MAXLEN both ways, and read XINFO.
TEST_CASE("Stream scripts answer as redis-server 7.0 does") {
  kvtest::RedisProcess redis;
  if (!redis.running()) {
    MESSAGE("redis-server not installed: comparison skipped");
    return;
  }
  Client r(redis.port());
  Client& k = client();
  flush();
  r("FLUSHALL");
  std::vector<std::vector<std::string>> script;
  auto add = [&](std::vector<std::string> cmd) { script.push_back(std::move(cmd)); };
  for (int i = 1; i <= 230; ++i) {
    std::vector<std::string> cmd = {"XADD", "s",
                                    std::to_string(i * 3) + "-" + std::to_string(i % 4)};
    // Fields vary (same as the master entry or not), values vary in size and integer-ness.
    if (i % 7 == 0) {
      cmd.insert(cmd.end(), {"other", std::to_string(i * 1000)});
    } else {
      cmd.insert(cmd.end(), {"f", std::string(static_cast<std::size_t>(i % 60), 'x'), "g",
                             std::to_string(-i * 12345)});
    }
    add(cmd);
    if (i % 50 == 0) add({"XINFO", "STREAM", "s"});
  }
  for (int i = 1; i <= 12; ++i)
    add({"XADD", "big", std::to_string(i), "f",
         std::string(static_cast<std::size_t>(i * 150), 'y')});
  add({"XINFO", "STREAM", "big"});
  add({"XTRIM", "big", "MAXLEN", "~", "5"});
  add({"XINFO", "STREAM", "big"});
  add({"XDEL", "s", "3-1", "6-2", "9-3", "300-0"});
  for (int i = 34; i <= 66; ++i)
    add({"XDEL", "s", std::to_string(i * 3) + "-" + std::to_string(i % 4)});
  add({"XINFO", "STREAM", "s"});
  add({"XTRIM", "s", "MINID", "~", "200"});
  add({"XTRIM", "s", "MINID", "~", "400"});
  add({"XINFO", "STREAM", "s"});
  add({"XTRIM", "s", "MAXLEN", "~", "100", "LIMIT", "50"});
  add({"XTRIM", "s", "MAXLEN", "~", "100"});
  add({"XADD", "s", "MAXLEN", "~", "50", "1000", "f", "v"});
  add({"XRANGE", "s", "-", "+", "COUNT", "3"});
  add({"XREVRANGE", "s", "+", "(600", "COUNT", "3"});
  add({"XTRIM", "s", "MAXLEN", "60"});
  add({"XINFO", "STREAM", "s", "FULL", "COUNT", "2"});
  add({"XTRIM", "s", "MINID", "650"});
  add({"XADD", "s", "MINID", "~", "660", "1001", "f", "v"});
  add({"XINFO", "STREAM", "s"});
  add({"XREAD", "COUNT", "3", "STREAMS", "s", "big", "600", "$"});
  add({"XDEL", "big", "8", "9", "10", "11", "12"});
  add({"XADD", "big", "13", "f", "v"});
  add({"XINFO", "STREAM", "big", "FULL"});
  for (const auto& cmd : script) {
    const Reply want = r.cmd(cmd);
    const Reply got = k.cmd(cmd);
    INFO(cmd[0] << " " << cmd[1] << " " << (cmd.size() > 2 ? cmd[2] : ""));
    CHECK(show(got) == show(want));
  }
}

TEST_CASE("Consumer groups: XREADGROUP delivers, the PEL tracks, XACK acknowledges") {
  flush();
  Client& c = client();
  check_error(c("XGROUP CREATE s g $"),
              "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may "
              "want to use the MKSTREAM option to create an empty stream automatically.");
  CHECK(c("XGROUP CREATE s g $ MKSTREAM").is_status("OK"));
  check_error(c("XGROUP CREATE s g $"), "BUSYGROUP Consumer Group name already exists");
  for (const char* id : {"1", "2", "3"}) c.cmd({"XADD", "s", id, "f", id});
  CHECK(show(c("XREADGROUP GROUP g alice COUNT 2 STREAMS s >")) ==
        "[[s [[1-0 [f 1]] [2-0 [f 2]]]]]");
  CHECK(show(c("XREADGROUP GROUP g bob STREAMS s >")) == "[[s [[3-0 [f 3]]]]]");
  CHECK(show(c("XREADGROUP GROUP g bob STREAMS s >")) == "nil");
  CHECK(show(c("XPENDING s g")) == "[:3 1-0 3-0 [[alice 2] [bob 1]]]");
  CHECK(c("XACK s g 1 9").integer == 1);
  c("XDEL s 2");
  // History: the consumer's own pending entries, a deleted one with a nil body.
  CHECK(show(c("XREADGROUP GROUP g alice STREAMS s 0")) == "[[s [[2-0 nil]]]]");
  const Reply p = c("XPENDING s g - + 10 alice");
  REQUIRE(p.elements.size() == 1);
  CHECK(p.elements[0].elements[0].str == "2-0");
  CHECK(p.elements[0].elements[3].integer == 1);  // a deleted entry is not redelivered
  CHECK(c("XGROUP DELCONSUMER s g alice").integer == 1);
  CHECK(show(c("XPENDING s g")) == "[:1 3-0 3-0 [[bob 1]]]");
  check_error(c("XREADGROUP GROUP nog a STREAMS s >"),
              "NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option");
  check_error(c("XGROUP SETID s nog 0"), "NOGROUP No such consumer group 'nog' for key name 's'");
  check_error(c("XPENDING s nog"), "NOGROUP No such key 's' or consumer group 'nog'");
  check_error(c("XREAD GROUP g a STREAMS s 0"),
              "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
  // Rewound, the group delivers again: bob's pending entry moves to carol.
  CHECK(c("XGROUP SETID s g 0").is_status("OK"));
  CHECK(show(c("XREADGROUP GROUP g carol STREAMS s >")) == "[[s [[1-0 [f 1]] [3-0 [f 3]]]]]");
  CHECK(show(c("XPENDING s g")) == "[:2 1-0 3-0 [[carol 2]]]");
  CHECK(c("XGROUP DESTROY s g").integer == 1);
  CHECK(c("XINFO STREAM s").elements[15].integer == 0);  // groups
}

TEST_CASE("XREADGROUP BLOCK is served new entries one consumer at a time") {
  flush();
  Client& c = client();
  c("XGROUP CREATE s g $ MKSTREAM");
  Client a(server().port()), b(server().port());
  send_only(
      a, {"XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "BLOCK", "5000", "STREAMS", "s", ">"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  send_only(b, {"XREADGROUP", "GROUP", "g", "bob", "BLOCK", "5000", "STREAMS", "s", ">"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  c("XADD s 1 f v");
  CHECK(show(a.get_reply()) == "[[s [[1-0 [f v]]]]]");
  c("XADD s 2 f w");  // alice has had hers: bob is next
  CHECK(show(b.get_reply()) == "[[s [[2-0 [f w]]]]]");
  CHECK(show(c("XPENDING s g")) == "[:2 1-0 2-0 [[alice 1] [bob 1]]]");
  send_only(a, {"XREADGROUP", "GROUP", "g", "alice", "BLOCK", "5000", "STREAMS", "s", ">"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(c("XGROUP DESTROY s g").integer == 1);
  check_error(a.get_reply(),
              "NOGROUP the consumer group this client was blocked on no longer exists");
  // A deleted stream ends a group read with Redis 7.0's UNBLOCKED error; a plain XREAD keeps
  // waiting, even when the key becomes a string (whose SET gets its own reply, untouched).
  c("XGROUP CREATE s g $");
  send_only(a, {"XREADGROUP", "GROUP", "g", "alice", "BLOCK", "5000", "STREAMS", "s", ">"});
  send_only(b, {"XREAD", "BLOCK", "300", "STREAMS", "s", "$"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(c("DEL s").integer == 1);
  check_error(a.get_reply(), "UNBLOCKED the stream key no longer exists");
  CHECK(c("SET s x").is_status("OK"));
  CHECK(show(c("GET s")) == "x");
  CHECK(b.get_reply().is_nil());
}

// Concurrent producers and consumers on one stream (2 workers): every XADD * gets an ID above
// all earlier ones, none is lost, and a consumer group hands each entry to exactly one consumer.
TEST_CASE("Concurrent XADD and XREADGROUP deliver every entry exactly once") {
  flush();
  client()("XGROUP CREATE s g $ MKSTREAM");
  constexpr int kProducers = 3, kPerProducer = 400, kConsumers = 3;
  std::atomic<int> produced{0};
  std::vector<std::thread> threads;
  std::vector<std::vector<std::string>> seen(kConsumers);
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      Client c(server().port());
      for (int i = 0; i < kPerProducer; ++i) {
        c.cmd({"XADD", "s", "*", "p", std::to_string(p), "i", std::to_string(i)});
        produced.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int k = 0; k < kConsumers; ++k) {
    threads.emplace_back([&, k] {
      Client c(server().port());
      const std::string name = "c" + std::to_string(k);
      for (int idle = 0; idle < 20;) {
        const Reply r = c.cmd(
            {"XREADGROUP", "GROUP", "g", name, "COUNT", "50", "BLOCK", "50", "STREAMS", "s", ">"});
        if (r.type != REDIS_REPLY_ARRAY) {
          if (produced.load(std::memory_order_relaxed) == kProducers * kPerProducer) ++idle;
          continue;
        }
        for (const auto& e : r.elements[0].elements[1].elements) {
          seen[k].push_back(e.elements[0].str);
          c.cmd({"XACK", "s", "g", e.elements[0].str});
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  Client& c = client();
  CHECK(c("XLEN s").integer == kProducers * kPerProducer);
  const Reply all = c("XRANGE s - +");
  REQUIRE(all.elements.size() == static_cast<std::size_t>(kProducers * kPerProducer));
  bool increasing = true;
  auto parse = [](const std::string& id) {
    const auto dash = id.find('-');
    return std::make_pair(std::stoull(id.substr(0, dash)), std::stoull(id.substr(dash + 1)));
  };
  for (std::size_t i = 1; i < all.elements.size(); ++i)
    increasing = increasing && parse(all.elements[i - 1].elements[0].str) <
                                   parse(all.elements[i].elements[0].str);
  CHECK(increasing);
  std::vector<std::string> delivered;
  for (const auto& v : seen) delivered.insert(delivered.end(), v.begin(), v.end());
  std::sort(delivered.begin(), delivered.end());
  CHECK(std::adjacent_find(delivered.begin(), delivered.end()) == delivered.end());
  CHECK(delivered.size() == all.elements.size());
  CHECK(show(c("XPENDING s g")) == "[:0 nil nil nil]");
}

// A group script replayed on redis-server 7.0 and on kvlab (replies without idle times).
TEST_CASE("Consumer group scripts answer as redis-server 7.0 does") {
  kvtest::RedisProcess redis;
  if (!redis.running()) {
    MESSAGE("redis-server not installed: comparison skipped");
    return;
  }
  Client r(redis.port());
  Client& k = client();
  flush();
  r("FLUSHALL");
  static const char* const kScript[] = {
      "XGROUP CREATE s g $",
      "XGROUP CREATE s g $ MKSTREAM",
      "XGROUP CREATE s g $ MKSTREAM",
      "XADD s 1 f v",
      "XADD s 2 f w",
      "XADD s 3 f x",
      "XGROUP CREATE s g2 0",
      "XGROUP CREATE s g3 $",
      "XGROUP CREATE s g4 0 ENTRIESREAD -2",
      "XGROUP CREATE s g4 0 FOO",
      "XGROUP CREATE s g4 abc",
      "XINFO GROUPS s",
      "XREADGROUP GROUP g2 alice COUNT 1 STREAMS s >",
      "XINFO GROUPS s",
      "XREADGROUP GROUP g2 bob STREAMS s >",
      "XREADGROUP GROUP g2 bob STREAMS s >",
      "XREADGROUP GROUP g2 alice STREAMS s 0",
      "XPENDING s g2",
      "XPENDING s g2 - + 10 nobody",
      "XPENDING s g2 - + x",
      "XPENDING s g2 IDLE 5 - +",
      "XPENDING s nog",
      "XPENDING nokey g",
      "XACK s g2 1 x",
      "XACK s g2 1 9",
      "XACK s nog x",
      "XPENDING s g2",
      "XDEL s 2",
      "XREADGROUP GROUP g2 bob STREAMS s 0",
      "XINFO GROUPS s",
      "XGROUP CREATECONSUMER s nog x",
      "XGROUP CREATECONSUMER s g carol",
      "XGROUP CREATECONSUMER s g carol",
      "XGROUP DELCONSUMER s g2 bob",
      "XGROUP DELCONSUMER s g2 bob",
      "XPENDING s g2",
      "XGROUP DESTROY s g3",
      "XGROUP DESTROY s g3",
      "XGROUP SETID s g 0 ENTRIESREAD 5",
      "XGROUP SETID s g 0 ENTRIESREAD 5 x",
      "XGROUP SETID s nog 0",
      "XINFO GROUPS s",
      "XGROUP FOO",
      "XGROUP CREATE nokey g 0",
      "XGROUP DESTROY nokey g",
      "XREADGROUP GROUP nog a STREAMS s >",
      "XREADGROUP GROUP g a STREAMS s $",
      "XREADGROUP GROUP g a STREAMS s > 1",
      "XREAD GROUP g a STREAMS s 0",
      "XREAD NOACK STREAMS s 0",
      "XREADGROUP COUNT 1 STREAMS s >",
      "XADD s 4 f y",
      "XREADGROUP GROUP g c3 NOACK STREAMS s >",
      "XINFO GROUPS s",
      "XPENDING s g",
      "XREADGROUP GROUP g c3 STREAMS s >",
      "XGROUP SETID s g $",
      "XINFO GROUPS s",
      "XADD s 5 f z",
      "XINFO GROUPS s",
      "XINFO STREAM s",
      "XTRIM s MAXLEN 1",
      "XINFO GROUPS s",
      "SET str x",
      "XGROUP CREATE str g 0",
      "XINFO GROUPS str",
      "XINFO GROUPS nokey",
      "XINFO CONSUMERS s nog",
      // CREATE takes no "-" or "+"; SETID takes both (Redis parses it loosely).
      "XGROUP CREATE s g5 -",
      "XGROUP CREATE s g5 +",
      "XGROUP SETID s g +",
      "XINFO GROUPS s",
      "XGROUP SETID s g - ENTRIESREAD 0",
      "XINFO GROUPS s",
      // A BLOCK timeout past the clock's range is a wait without end, not an error: what is
      // missing is STREAMS.
      "XREADGROUP GROUP g a COUNT 0 BLOCK 9223372036854775807",
      "XREAD BLOCK 9223372036854775807",
      "XREAD BLOCK 9223372036854775807 STREAMS s 0",
      // The largest ID is how Redis stores ">": given explicitly, it reads new entries too.
      "XGROUP CREATE s g6 0",
      "XREADGROUP GROUP g6 c STREAMS s 18446744073709551615-18446744073709551615",
      "XPENDING s g6",
      "XREADGROUP GROUP g6 c STREAMS s 18446744073709551615-18446744073709551615",
      "XREADGROUP GROUP g6 c STREAMS s 18446744073709551615-18446744073709551614",
  };
  for (const char* line : kScript) {
    INFO(line);
    CHECK(show(k(line)) == show(r(line)));
  }
}

// XCLAIM and XAUTOCLAIM replayed on redis-server 7.0 (idle times stay out of the replies).
TEST_CASE("Claim scripts answer as redis-server 7.0 does") {
  kvtest::RedisProcess redis;
  if (!redis.running()) {
    MESSAGE("redis-server not installed: comparison skipped");
    return;
  }
  Client r(redis.port());
  Client& k = client();
  flush();
  r("FLUSHALL");
  static const char* const kScript[] = {
      "XADD s 1 f a",
      "XADD s 2 f b",
      "XADD s 3 f c",
      "XADD s 4 f d",
      "XGROUP CREATE s g 0",
      "XREADGROUP GROUP g alice STREAMS s >",
      "XCLAIM s g bob 0 1 2 x",
      "XCLAIM s g bob 0 1 2 IDLE x",
      "XCLAIM s g bob 0 1 2 TIME x",
      "XCLAIM s g bob 0 1 2 RETRYCOUNT x",
      "XCLAIM s g bob x 1",
      "XCLAIM s nog bob 0 1",
      "XCLAIM nokey g bob 0 1",
      "XCLAIM s g bob 0 1 2 JUSTID",
      "XPENDING s g",
      "XCLAIM s g bob 0 1 RETRYCOUNT 7",
      "XCLAIM s g carol 3600000 1 2 3",
      "XDEL s 3",
      "XCLAIM s g carol 0 3 4",
      "XPENDING s g",
      "XADD s 5 f e",
      "XCLAIM s g dave 0 5 FORCE",
      "XCLAIM s g dave 0 5",
      "XCLAIM s g dave 0 9 FORCE",
      "XCLAIM s g dave 0 1 LASTID 10",
      "XINFO GROUPS s",
      "XCLAIM s g dave 0 1 LASTID x",
      "XAUTOCLAIM s g erin 0 0 COUNT 2",
      "XAUTOCLAIM s g erin 0 (1 COUNT 1 JUSTID",
      "XAUTOCLAIM s g erin 3600000 0",
      "XDEL s 4",
      "XAUTOCLAIM s g frank 0 0",
      "XAUTOCLAIM s g frank 0 0 COUNT 0",
      "XAUTOCLAIM s g frank 0 0 COUNT x",
      "XAUTOCLAIM s g frank x 0",
      "XAUTOCLAIM s g frank 0 x",
      "XAUTOCLAIM s g frank 0 0 FOO",
      "XAUTOCLAIM s nog frank 0 0",
      "XAUTOCLAIM nokey g frank 0 0",
      "XPENDING s g",
  };
  for (const char* line : kScript) {
    INFO(line);
    CHECK(show(k(line)) == show(r(line)));
  }
}

// CONFIG SET stream-node-max-entries / -bytes move node boundaries as in Redis, including counts
// past 127 (whose listpack integers take two bytes).
TEST_CASE("Node limits set by CONFIG SET answer as redis-server 7.0 does") {
  kvtest::RedisProcess redis;
  if (!redis.running()) {
    MESSAGE("redis-server not installed: comparison skipped");
    return;
  }
  Client r(redis.port());
  Client& k = client();
  flush();
  r("FLUSHALL");
  std::vector<std::vector<std::string>> script = {
      {"CONFIG", "SET", "stream-node-max-entries", "7"}};
  for (int i = 1; i <= 30; ++i) script.push_back({"XADD", "a", std::to_string(i), "f", "v"});
  script.push_back({"XINFO", "STREAM", "a"});
  script.push_back({"XTRIM", "a", "MAXLEN", "~", "12"});
  script.push_back({"CONFIG", "SET", "stream-node-max-entries", "0"});
  script.push_back({"CONFIG", "SET", "stream-node-max-bytes", "300"});
  for (int i = 1; i <= 40; ++i)
    script.push_back(
        {"XADD", "b", std::to_string(i), "f", std::string(static_cast<std::size_t>(i), 'z')});
  script.push_back({"XINFO", "STREAM", "b"});
  script.push_back({"XTRIM", "b", "MAXLEN", "~", "5"});
  script.push_back({"CONFIG", "SET", "stream-node-max-entries", "1000"});
  script.push_back({"CONFIG", "SET", "stream-node-max-bytes", "4096"});
  for (int i = 1; i <= 1500; ++i) script.push_back({"XADD", "c", std::to_string(i), "f", "v"});
  for (int i = 1; i <= 200; i += 3) script.push_back({"XDEL", "c", std::to_string(i)});
  script.push_back({"XINFO", "STREAM", "c"});
  script.push_back({"XTRIM", "c", "MAXLEN", "~", "10"});
  for (int i = 1; i <= 60; ++i)
    script.push_back({"XTRIM", "c", "MINID", "~", std::to_string(1000 + 8 * i)});
  script.push_back({"XINFO", "STREAM", "c"});
  script.push_back({"CONFIG", "SET", "stream-node-max-entries", "100"});
  script.push_back({"CONFIG", "SET", "stream-node-max-bytes", "4096"});
  for (const auto& cmd : script) {
    INFO(cmd[0] << " " << cmd[1] << " " << (cmd.size() > 2 ? cmd[2] : ""));
    CHECK(show(k.cmd(cmd)) == show(r.cmd(cmd)));
  }
}
