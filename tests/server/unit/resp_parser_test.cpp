// Unit tests of the incremental RESP2 request parser (server/protocol/resp_parser.hpp): no sockets.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "server/protocol/resp_parser.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "server/util/strings_util.hpp"

using kvlab::server::RequestParser;
using Status = RequestParser::Status;

namespace {

// Feeds `input` to a parser in pieces of `chunk` bytes, as a connection would, and returns every
// command parsed (or stops at the first error, reported in *error).
std::vector<std::vector<std::string>> feed(const std::string& input, std::size_t chunk,
                                           std::string* error = nullptr, bool auth = true) {
  RequestParser p;
  std::vector<std::vector<std::string>> out;
  std::string buf;
  std::size_t given = 0;
  while (given < input.size() || !buf.empty()) {
    if (given < input.size()) {
      const std::size_t n = std::min(chunk, input.size() - given);
      buf.append(input, given, n);
      given += n;
    }
    bool progress = true;
    while (progress) {
      progress = false;
      const Status st = p.parse(buf, auth);
      if (st == Status::kError) {
        if (error != nullptr) *error = p.error();
        return out;
      }
      if (st == Status::kCommand) {
        std::vector<std::string> args;
        for (auto a : p.args()) args.emplace_back(a);
        if (!args.empty()) out.push_back(args);
        buf.erase(0, p.consumed());
        progress = true;
      }
    }
    if (given >= input.size()) break;
  }
  return out;
}

std::string mbulk(const std::vector<std::string>& args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("a multibulk command parses into its arguments") {
    auto cmds = feed(mbulk({"SET", "key", "value"}), 1 << 20);
    REQUIRE(cmds.size() == 1);
    CHECK(cmds[0] == std::vector<std::string>{"SET", "key", "value"});
  }

  TEST_CASE("a command split at every byte boundary parses the same") {
    const std::string in = mbulk({"SET", "k", std::string(100, 'x')}) + mbulk({"GET", "k"});
    for (std::size_t chunk : {1u, 2u, 3u, 7u, 16u, 64u}) {
      auto cmds = feed(in, chunk);
      REQUIRE(cmds.size() == 2);
      CHECK(cmds[0][2] == std::string(100, 'x'));
      CHECK(cmds[1] == std::vector<std::string>{"GET", "k"});
    }
  }

  TEST_CASE("bulk arguments are binary safe (NUL and CRLF inside)") {
    const std::string key("a\0b\r\nc", 6);
    auto cmds = feed(mbulk({"GET", key}), 3);
    REQUIRE(cmds.size() == 1);
    CHECK(cmds[0][1] == key);
  }

  TEST_CASE("a pipeline of ten thousand commands parses in order") {
    std::string in;
    for (int i = 0; i < 10000; ++i) in += mbulk({"INCR", "k" + std::to_string(i)});
    auto cmds = feed(in, 4096);
    REQUIRE(cmds.size() == 10000);
    CHECK(cmds[9999][1] == "k9999");
  }

  TEST_CASE("inline commands split on blanks and understand quotes") {
    auto cmds = feed("SET k \"a b\\x41\\n\" 'it\\'s'\r\nPING\n", 5);
    REQUIRE(cmds.size() == 2);
    CHECK(cmds[0] == std::vector<std::string>{"SET", "k", "a bA\n", "it's"});
    CHECK(cmds[1] == std::vector<std::string>{"PING"});
  }

  TEST_CASE("empty inline lines and zero-length multibulks are skipped") {
    auto cmds = feed("\r\n\n*0\r\n*-1\r\nPING\r\n", 100);
    REQUIRE(cmds.size() == 1);
    CHECK(cmds[0][0] == "PING");
  }

  TEST_CASE("unbalanced quotes are a protocol error") {
    std::string e;
    feed("SET k \"abc\r\n", 100, &e);
    CHECK(e == "ERR Protocol error: unbalanced quotes in request");
    e.clear();
    feed("SET k \"abc\"x\r\n", 100, &e);
    CHECK(e == "ERR Protocol error: unbalanced quotes in request");
  }

  TEST_CASE("a bad multibulk length is a protocol error") {
    std::string e;
    feed("*abc\r\n", 100, &e);
    CHECK(e == "ERR Protocol error: invalid multibulk length");
    e.clear();
    feed("*2147483648\r\n", 100, &e);
    CHECK(e == "ERR Protocol error: invalid multibulk length");
  }

  TEST_CASE("a bad or negative bulk length is a protocol error") {
    std::string e;
    feed("*1\r\n$-3\r\n", 100, &e);
    CHECK(e == "ERR Protocol error: invalid bulk length");
    e.clear();
    feed("*1\r\n$x\r\n", 100, &e);
    CHECK(e == "ERR Protocol error: invalid bulk length");
    e.clear();
    feed("*1\r\n$536870913\r\n", 100, &e);  // 512 MiB + 1
    CHECK(e == "ERR Protocol error: invalid bulk length");
  }

  TEST_CASE("a missing dollar is reported with the byte found") {
    std::string e;
    feed("*1\r\n:3\r\n", 100, &e);
    CHECK(e == "ERR Protocol error: expected '$', got ':'");
  }

  TEST_CASE("oversized inline and length lines are refused before buffering more") {
    std::string e;
    feed(std::string(70000, 'a'), 70000, &e);
    CHECK(e == "ERR Protocol error: too big inline request");
    e.clear();
    feed("*" + std::string(70000, '1'), 70000, &e);
    CHECK(e == "ERR Protocol error: too big mbulk count string");
    e.clear();
    feed("*1\r\n$" + std::string(70000, '1'), 70000, &e);
    CHECK(e == "ERR Protocol error: too big bulk count string");
  }

  // Found by the fuzz target (tests/fuzz): a long line that arrived in one read, newline included,
  // used to be accepted, while the same bytes in pieces were refused.
  TEST_CASE("an oversized line is refused even when it arrives whole with its newline") {
    std::string e;
    feed(std::string(70000, 'a') + "\r\n", 70002, &e);
    CHECK(e == "ERR Protocol error: too big inline request");
    e.clear();
    feed("*" + std::string(70000, '1') + "\r\n", 70003, &e);
    CHECK(e == "ERR Protocol error: too big mbulk count string");
    e.clear();
    feed("*1\r\n$" + std::string(70000, '1') + "\r\n", 70006, &e);
    CHECK(e == "ERR Protocol error: too big bulk count string");
  }

  TEST_CASE("a 512 MiB bulk may be announced; the parser asks for exactly that many bytes") {
    RequestParser p;
    const std::string head = "*2\r\n$3\r\nSET\r\n$536870912\r\n";
    CHECK(p.parse(head, true) == Status::kIncomplete);
    CHECK(p.bytes_needed() == head.size() + 536870912 + 2);
  }

  TEST_CASE("unauthenticated clients may not announce large commands") {
    std::string e;
    feed("*11\r\n", 100, &e, false);
    CHECK(e == "ERR Protocol error: unauthenticated multibulk length");
    e.clear();
    feed("*2\r\n$4\r\nAUTH\r\n$16385\r\n", 100, &e, false);
    CHECK(e == "ERR Protocol error: unauthenticated bulk length");
  }

  TEST_CASE("integers parse with Redis's strictness") {
    std::int64_t v = 0;
    CHECK(kvlab::server::parse_i64("-9223372036854775808", &v));
    CHECK(v == INT64_MIN);
    CHECK_FALSE(kvlab::server::parse_i64("9223372036854775808", &v));
    CHECK_FALSE(kvlab::server::parse_i64("01", &v));
    CHECK_FALSE(kvlab::server::parse_i64("+1", &v));
    CHECK_FALSE(kvlab::server::parse_i64(" 1", &v));
    CHECK_FALSE(kvlab::server::parse_i64("", &v));
  }

  TEST_CASE("glob patterns match like Redis's stringmatch") {
    using kvlab::server::glob_match;
    CHECK(glob_match("*", "anything"));
    CHECK(glob_match("h?llo", "hello"));
    CHECK(glob_match("h[ae]llo", "hallo"));
    CHECK_FALSE(glob_match("h[^e]llo", "hello"));
    CHECK(glob_match("h[a-c]llo", "hbllo"));
    CHECK(glob_match("k\\*", "k*"));
    CHECK_FALSE(glob_match("k\\*", "kx"));
    CHECK(glob_match("user:*:name", "user:42:name"));
  }

  TEST_CASE("scan_keys walks complete multibulk commands and stops at anything else") {
    using kvlab::server::scan_keys;
    std::string_view keys[8];
    const std::string get_a = "*2\r\n$3\r\nGET\r\n$1\r\na\r\n";
    using namespace std::string_literals;
    const std::string set_b = "*3\r\n$3\r\nSET\r\n$2\r\nbb\r\n$3\r\nv\0w\r\n"s;  // binary value
    const std::string ping = "*1\r\n$4\r\nPING\r\n";
    std::string buf = get_a + ping + set_b;
    auto scan = scan_keys(buf, 8, keys, 8);
    CHECK(scan.commands == 3);
    REQUIRE(scan.keys == 2);
    CHECK(keys[0] == "a");
    CHECK(keys[1] == "bb");
    // The views point into the buffer (no copies).
    CHECK(keys[1].data() == buf.data() + get_a.size() + ping.size() + 17);

    // Bounded by max_commands and by keys_max.
    scan = scan_keys(buf, 1, keys, 8);
    CHECK(scan.commands == 1);
    CHECK(scan.keys == 1);
    // A command whose key does not fit ends the scan before it (PING has none: it is walked).
    scan = scan_keys(buf, 8, keys, 1);
    CHECK(scan.commands == 2);
    CHECK(scan.keys == 1);

    // Every strict prefix of the last command: the complete ones before it are still walked.
    const std::string two = get_a + set_b;
    for (std::size_t cut = get_a.size(); cut < two.size(); ++cut) {
      scan = scan_keys(std::string_view(two).substr(0, cut), 8, keys, 8);
      CHECK(scan.commands == 1);
      CHECK(scan.keys == 1);
    }
    // Inline commands, negative or absurd counts and lengths, missing CRLF: nothing is walked.
    for (const char* bad :
         {"GET a\r\n", "*-1\r\n", "*2\r\n$-1\r\n", "*2\r\n$3\r\nGET\n", "*99999999999999\r\n",
          "*2\r\n$99999999999999\r\nx\r\n", "*2\r\n$3\r\nGETX\r\n$1\r\na\r\n", "*65\r\n", "", "*",
          "*2\r\n:3\r\nGET\r\n"}) {
      scan = scan_keys(bad, 8, keys, 8);
      CHECK_MESSAGE(scan.commands == 0, bad);
      CHECK(scan.keys == 0);
    }
    // A command after a bad one is not reached.
    scan = scan_keys(get_a + "GET x\r\n" + get_a, 8, keys, 8);
    CHECK(scan.commands == 1);
  }

  // A multibulk command from its arguments.
  std::string resp(std::initializer_list<std::string_view> args) {
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (std::string_view a : args) {
      out += "$" + std::to_string(a.size()) + "\r\n";
      out += a;
      out += "\r\n";
    }
    return out;
  }

  // The layout of the test: MGET's keys are every argument, MSET's every other one from the first,
  // ZADD is "unknown" (the second argument), and XSKIP names a layout with no keys.
  bool test_layout(std::string_view name, kvlab::server::KeyLayout* out) {
    if (name == "MGET") *out = {1, -1, 1};
    else if (name == "MSET") *out = {1, -1, 2};
    else if (name == "GETRANGE2") *out = {1, 2, 1};
    else if (name == "XSKIP") *out = {0, -1, 1};
    else return false;
    return true;
  }

  int layout_calls = 0;
  bool counting_layout(std::string_view name, kvlab::server::KeyLayout* out) {
    ++layout_calls;
    return test_layout(name, out);
  }

  TEST_CASE("scan_keys asks for a layout once per run of one command name") {
    using kvlab::server::scan_keys;
    std::string_view keys[16];
    const std::string mget = resp({"MGET", "a", "b"});
    layout_calls = 0;
    const std::string three = mget + mget + mget;
    auto scan = scan_keys(three, 16, keys, 16, counting_layout);
    CHECK(scan.keys == 6);
    CHECK(layout_calls == 1);
    // Another name between two runs: asked again, and each command gets its own layout.
    layout_calls = 0;
    const std::string mixed = resp({"MGET", "a", "b"}) + resp({"MSET", "k", "v", "k2", "v2"}) +
                              resp({"MGET", "c", "d"});  // keys[] points into it
    scan = scan_keys(mixed, 16, keys, 16, counting_layout);
    REQUIRE(scan.keys == 6);
    const std::vector<std::string_view> want{"a", "b", "k", "k2", "c", "d"};
    CHECK(std::vector<std::string_view>(keys, keys + 6) == want);
    CHECK(layout_calls == 3);
  }

  TEST_CASE("scan_keys takes every key a command's layout names, and a whole command's keys") {
    using kvlab::server::scan_keys;
    std::string_view keys[16];
    const std::string buf = resp({"MGET", "a", "b", "c"}) + resp({"MSET", "k1", "v1", "k2", "v2"}) +
                            resp({"ZADD", "z", "1", "m"}) + resp({"GETRANGE2", "p", "q", "r"}) +
                            resp({"XSKIP", "s", "t"}) + resp({"GET", "g"});
    auto scan = scan_keys(buf, 16, keys, 16, test_layout);
    CHECK(scan.commands == 6);
    REQUIRE(scan.keys == 9);
    const std::vector<std::string_view> want{"a", "b", "c", "k1", "k2", "z", "p", "q", "g"};
    CHECK(std::vector<std::string_view>(keys, keys + 9) == want);
    // Without a layout: the second argument of each.
    scan = scan_keys(buf, 16, keys, 16);
    CHECK(scan.commands == 6);
    REQUIRE(scan.keys == 6);
    CHECK(keys[1] == "k1");
    CHECK(keys[5] == "g");
    // Room for four keys: MSET's two do not fit after MGET's three, so the window is MGET alone.
    scan = scan_keys(buf, 16, keys, 4, test_layout);
    CHECK(scan.commands == 1);
    CHECK(scan.keys == 3);
    // A first command with more keys than the room keeps its first ones.
    scan = scan_keys(buf, 16, keys, 2, test_layout);
    CHECK(scan.commands == 1);
    REQUIRE(scan.keys == 2);
    CHECK(keys[1] == "b");
  }
}
