// Unit tests of the glob matcher (server/util/strings_util.hpp): Redis 7.0.15's stringmatchlen()
// semantics, corner by corner, and the work bound that keeps hostile patterns cheap. The same
// matcher is compared with a real redis-server through every pattern-taking command in
// tests/compat/glob_test.py, and with a reference matcher by the glob fuzz target.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "server/util/strings_util.hpp"

using kvlab::server::glob_match;
using kvlab::server::glob_match_counted;
using namespace std::string_literals;

namespace {

std::string repeat(std::string_view s, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

// The bound proved in strings_util.cpp.
std::uint64_t bound(std::string_view pattern, std::string_view text) {
  return (text.size() + 1) * (2 * pattern.size() + 1) + pattern.size();
}

struct Case {
  std::string pattern, text;
  bool nocase, want;
};

}  // namespace

TEST_CASE("glob matching keeps Redis's corners") {
  // The case-sensitive rows were checked with KEYS against redis-server 7.0.15, the nocase rows
  // with escapes through COMMAND LIST FILTERBY PATTERN; the other nocase rows follow from
  // stringmatchlen()'s source (tolower() in the C locale).
  const Case cases[] = {
      {"*", "anything", false, true},
      {"h?llo", "hello", false, true},
      {"h[ae]llo", "hallo", false, true},
      {"h[^e]llo", "hello", false, false},
      {"user:*:name", "user:42:name", false, true},
      // The empty text matches only the empty pattern: "*" does not match "".
      {"", "", false, true},
      {"*", "", false, false},
      {"", "a", false, false},
      // Classes: "[]" is empty, "[^]" any byte, an unclosed class runs to the end.
      {"[]", "]", false, false},
      {"[]]", "]", false, false},
      {"[^]", "x", false, true},
      {"[", "[", false, false},
      {"[^", "x", false, true},
      {"[ab", "b", false, true},
      {"[a-]", "]", false, true},  // the range a..']' of an unclosed class
      {"[a-]", "_", false, true},
      {"[a-]", "-", false, false},
      {"[-a]", "-", false, true},
      // Reversed ranges are swapped; ranges compare signed chars.
      {"[z-a]", "m", false, true},
      {"[a-\xff]", "\xff", false, true},
      {"[a-\xff]", "\x01", false, true},
      {"[a-\xff]", "b", false, false},
      {"[\x80-\xff]", "\xe9", false, true},
      {"[\x80-\xff]", "a", false, false},
      // Escapes, inside and outside classes; a '\' at the end is a literal.
      {"k\\*", "k*", false, true},
      {"k\\*", "kx", false, false},
      {"\\", "\\", false, true},
      {"a\\", "a\\", false, true},
      {"[\\]]", "]", false, true},
      {"[\\", "\\", false, true},
      {"[\\-]", "-", false, true},
      {"[a\\-z]", "m", false, false},
      // Binary: NUL is an ordinary byte.
      {"a?b", "a\0b"s, false, true},
      {"*\0*"s, "x\0y"s, false, true},
      // nocase folds 'A'..'Z' only; an escape folds outside a class, not inside one; a range
      // folds its ends after the swap ("[Z-a]" is then the empty 'z'..'a').
      {"GET", "get", true, true},
      {"\\Get", "get", true, true},
      {"[\\G]et", "get", true, false},
      {"[\\g]et", "get", true, true},
      {"[A-C]", "b", true, true},
      {"[Z-a]", "_", false, true},
      {"[Z-a]", "_", true, false},
      {"\xc9", "\xe9", true, false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.pattern);
    CAPTURE(c.text);
    CAPTURE(c.nocase);
    CHECK(glob_match(c.pattern, c.text, c.nocase) == c.want);
  }
}

TEST_CASE("a pattern whose 1001st run of stars is not at its end matches nothing") {
  // Redis 7.0.15 (with the CVE-2024-31228 fix) gives up past 1000 nested runs of '*'.
  const std::string text(1100, 'a');
  CHECK(glob_match(repeat("*a", 1000), text));
  CHECK_FALSE(glob_match(repeat("*a", 1001), text));
  CHECK(glob_match(repeat("a*", 1001), text));  // the 1001st run ends the pattern
  CHECK(glob_match(repeat("*a", 1000) + "***", text));
  CHECK_FALSE(glob_match(repeat("*a", 1001) + "*", text));
  // Valkey's and Redis's "very long nested loops" regression: nothing, quickly.
  const std::string long_text(50000, 'a');
  std::uint64_t steps = 0;
  CHECK_FALSE(glob_match_counted(repeat("*?", 50000), long_text, false, &steps));
  CHECK(steps <= bound(repeat("*?", 50000), long_text));
}

TEST_CASE("nested stars cost at most (text + 1)(2 pattern + 1) + pattern steps") {
  // CVE-2022-36021: exponential in the number of stars before Redis 7.0.10.
  const std::string key(40, 'a');
  for (std::size_t stars : {20u, 200u, 999u}) {
    const std::string pattern = repeat("a*", stars) + "b";
    std::uint64_t steps = 0;
    CHECK_FALSE(glob_match_counted(pattern, key, false, &steps));
    CHECK(steps <= bound(pattern, key));
  }
  // Valkey's "Regression for pattern matching long nested loops".
  const std::string key50(50, 'a');
  const std::string pattern = repeat("a*", 40) + "b";
  std::uint64_t steps = 0;
  CHECK_FALSE(glob_match_counted(pattern, key50, false, &steps));
  CHECK(steps <= bound(pattern, key50));
  // A long class evaluated at every position: still within the bound.
  const std::string cls = "*[" + std::string(1000, 'b') + "]";
  CHECK_FALSE(glob_match_counted(cls, std::string(1000, 'a'), false, &steps));
  CHECK(steps <= bound(cls, std::string(1000, 'a')));
}

TEST_CASE("random patterns stay within the step bound") {
  std::mt19937 rng(7);
  static constexpr char kAlphabet[] = "ab*?[]^-\\";
  for (int i = 0; i < 20000; ++i) {
    std::string pattern(rng() % 24, ' '), text(rng() % 24, ' ');
    for (char& c : pattern) c = kAlphabet[rng() % (sizeof kAlphabet - 1)];
    for (char& c : text) c = "ab]-"[rng() % 4];
    std::uint64_t steps = 0;
    glob_match_counted(pattern, text, (i & 1) != 0, &steps);
    CAPTURE(pattern);
    CAPTURE(text);
    REQUIRE(steps <= bound(pattern, text));
  }
}
