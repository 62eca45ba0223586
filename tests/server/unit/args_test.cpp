// Unit tests of the command argument parser (server/commands/args.hpp): the cursor, option
// names, integers and numkeys forms with Redis's error texts, the sticky first error, and SCAN's
// options through scan_args. The handlers that use it are covered against a real server by the
// command tests (sort, SINTERCARD, EXPIRE, COPY, RESTORE, LMPOP, GEO*).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/commands/args.hpp"

using kvlab::server::ArgParser;
using kvlab::server::ScanArgs;
namespace err = kvlab::server::err;
using namespace std::string_literals;
using namespace std::string_view_literals;

TEST_CASE("next and peek walk the arguments from the first index") {
  const std::vector<std::string_view> argv = {"cmd", "key", "a", "b"};
  ArgParser p(argv, 2);
  CHECK(p.index() == 2);
  CHECK(p.left() == 2);
  CHECK(p.peek() == "a");
  CHECK(p.next() == "a");
  CHECK(p.next() == "b");
  CHECK(p.done());
  CHECK(p.ok());
}

TEST_CASE("reading past the end is a syntax error") {
  const std::vector<std::string_view> argv = {"cmd"};
  ArgParser p(argv);
  CHECK(p.next().empty());
  CHECK(p.error() == err::kSyntax);
}

TEST_CASE("check matches a name ignoring case and only with its values present") {
  const std::vector<std::string_view> argv = {"cmd", "LiMiT", "0"};
  ArgParser p(argv);
  CHECK_FALSE(p.check("limit", 2));  // one value missing: nothing consumed
  CHECK(p.index() == 1);
  CHECK_FALSE(p.check("count"));
  CHECK(p.check("limit", 1));
  CHECK(p.next() == "0");
  CHECK(p.ok());
}

TEST_CASE("check compares whole arguments unless asked for C strings") {
  const std::vector<std::string_view> argv = {"cmd", "asc\0x"sv};
  ArgParser whole(argv);
  CHECK_FALSE(whole.check("asc"));
  ArgParser cstr(argv, 1, ArgParser::Match::kCString);
  CHECK(cstr.check("ASC"));
  CHECK(cstr.done());
}

TEST_CASE("next_int answers Redis's integer texts") {
  const std::vector<std::string_view> argv = {
      "cmd", "42", "-7", "+1", "01", " 1", "9223372036854775808"};
  ArgParser p(argv);
  CHECK(p.next_int() == 42);
  CHECK(p.next_int() == -7);
  for (std::size_t i = 3; i < argv.size(); ++i) {
    ArgParser q(argv, i);
    CHECK(q.next_int() == 0);
    CHECK(q.error() == "ERR value is not an integer or out of range");
  }
}

TEST_CASE("next_int outside its range answers the range text, or the integer text by default") {
  const std::vector<std::string_view> argv = {"cmd", "256"};
  ArgParser a(argv);
  a.next_int(0, 255);
  CHECK(a.error() == err::kNotInteger);
  ArgParser b(argv);
  b.next_int(0, 255, err::kRestoreBadFreq);
  CHECK(b.error() == "ERR Invalid FREQ value, must be >= 0 and <= 255");
  ArgParser c(argv);
  CHECK(c.next_int(0, 256, err::kRestoreBadFreq) == 256);
  CHECK(c.ok());
}

TEST_CASE("the first error sticks and stops the cursor") {
  const std::vector<std::string_view> argv = {"cmd", "x", "NX", "5"};
  ArgParser p(argv);
  p.next_int();
  p.fail(err::kSyntax);  // a later error does not replace the first
  CHECK(p.error() == err::kNotInteger);
  CHECK(p.done());
  CHECK_FALSE(p.check("nx"));
  CHECK(p.next().empty());
  CHECK(p.next_int() == 0);
  CHECK(p.error() == err::kNotInteger);
}

TEST_CASE("numkeys with SINTERCARD's texts") {
  using kvlab::server::kNumkeysCard;
  const std::vector<std::string_view> good = {"sintercard", "2", "a", "b", "LIMIT", "1"};
  ArgParser p(good);
  const auto keys = p.next_keys(kNumkeysCard);
  REQUIRE(keys.size() == 2);
  CHECK(keys[0] == "a");
  CHECK(keys[1] == "b");
  CHECK(p.peek() == "LIMIT");

  const std::vector<std::pair<std::vector<std::string_view>, std::string>> bad = {
      {{"sintercard", "x", "a"}, "ERR numkeys should be greater than 0"},
      {{"sintercard", "0", "a"}, "ERR numkeys should be greater than 0"},
      {{"sintercard", "-1", "a"}, "ERR numkeys should be greater than 0"},
      {{"sintercard", "3", "a", "b"}, "ERR Number of keys can't be greater than number of args"},
      {{"sintercard", "9223372036854775807", "a"},
       "ERR Number of keys can't be greater than number of args"},
  };
  for (const auto& [argv, want] : bad) {
    ArgParser q(argv);
    CHECK(q.next_keys(kNumkeysCard).empty());
    CHECK(q.error() == want);
  }
}

TEST_CASE("numkeys with LMPOP's texts needs room for the side after the keys") {
  using kvlab::server::kNumkeysMultiPop;
  const std::vector<std::string_view> fits = {"lmpop", "2", "a", "b", "LEFT"};
  ArgParser p(fits);
  CHECK(p.next_keys(kNumkeysMultiPop).size() == 2);
  CHECK(p.check("left"));
  const std::vector<std::string_view> no_side = {"lmpop", "2", "a", "b"};
  ArgParser q(no_side);
  CHECK(q.next_keys(kNumkeysMultiPop).empty());
  CHECK(q.error() == "ERR syntax error");
}

TEST_CASE("scan options go through scan_args") {
  const std::vector<std::string_view> argv = {"scan",  "0", "MATCH", "k*",
                                              "COUNT", "5", "TYPE",  "set"};
  ArgParser p(argv, 2);
  ScanArgs a;
  p.scan_options(kvlab::server::kScanType, &a);
  CHECK(p.ok());
  CHECK(p.done());
  CHECK(a.pattern == "k*");
  CHECK(a.count == 5);
  CHECK(a.type == "set");

  const std::vector<std::string_view> zero = {"scan", "0", "COUNT", "0"};
  ArgParser q(zero, 2);
  q.scan_options(kvlab::server::kScanMatchCount, &a);
  CHECK(q.error() == err::kSyntax);
  const std::vector<std::string_view> type = {"hscan", "k", "0", "TYPE", "set"};
  ArgParser r(type, 3);
  r.scan_options(kvlab::server::kScanMatchCount, &a);  // TYPE is SCAN's alone
  CHECK(r.error() == err::kSyntax);
}
