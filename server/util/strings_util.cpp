// Implementations of strings_util.hpp; see there.
#include "server/util/strings_util.hpp"

#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

namespace kvlab::server {

bool parse_i64(std::string_view s, std::int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  std::size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  if (s[i] == '0') {
    if (s.size() == 1) {  // "0" alone; "-0" and "01" are rejected as Redis does.
      *out = 0;
      return true;
    }
    return false;
  }
  std::uint64_t v = 0;
  for (; i < s.size(); ++i) {
    const unsigned d = static_cast<unsigned char>(s[i]) - '0';
    if (d > 9) return false;
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  if (negative) {
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1) return false;
    *out = static_cast<std::int64_t>(0 - v);
  } else {
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
    *out = static_cast<std::int64_t>(v);
  }
  return true;
}

namespace {
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
}  // namespace

bool parse_long_double(std::string_view s, long double* out) {
  if (s.empty() || s.size() > 5000 || is_space(s.front()) || is_space(s.back())) return false;
  std::string copy(s);
  if (copy.find('\0') != std::string::npos) return false;
  errno = 0;
  char* end = nullptr;
  const long double v = std::strtold(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || std::isnan(v)) return false;
  if (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || v == 0)) return false;
  *out = v;
  return true;
}

bool parse_double(std::string_view s, double* out) {
  long double v = 0;
  if (!parse_long_double(s, &v)) return false;
  *out = static_cast<double>(v);
  return true;
}

std::size_t format_i64(std::int64_t v, char* buf) {
  // std::to_chars: two digits per step from a table; every bulk header goes through here.
  return static_cast<std::size_t>(std::to_chars(buf, buf + 20, v).ptr - buf);
}

std::string format_long_double_human(long double v) {
  char buf[5600];
  int len = std::snprintf(buf, sizeof buf, "%.17Lf", v);
  if (len <= 0 || static_cast<std::size_t>(len) >= sizeof buf) return "0";
  if (std::strchr(buf, '.') != nullptr) {
    char* p = buf + len - 1;
    while (*p == '0') {
      --p;
      --len;
    }
    if (*p == '.') --len;
  }
  if (len == 2 && buf[0] == '-' && buf[1] == '0') return "0";
  return std::string(buf, static_cast<std::size_t>(len));
}

std::string_view to_lower(std::string_view s, std::string* out) {
  out->resize(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    (*out)[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
  }
  return *out;
}

namespace {
char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// Glob matching: Redis 7.0.15's stringmatchlen() semantics without its recursion.
//
// A pattern is a sequence of tokens, and every token but '*' consumes exactly one byte of the
// text: '?', a literal, an escape "\x" (a '\' at the very end is a literal '\'), and a class
// "[...]". Redis reads a token's extent from the pattern alone, never from the text, which is
// what lets a matcher decode tokens as it goes and come back to a position. Redis's corners, kept
// here because clients see them:
//   - a class ends at its first unescaped ']' ("[]" matches nothing, "[^]" any byte); an
//     unclosed class runs to the end of the pattern; "x-y" is a range when three bytes remain
//     ("[a-]" is the range a..']' of an unclosed class); ranges compare bytes as signed chars and
//     a reversed range is swapped ("[z-a]" = "[a-z]", "[a-\xff]" = bytes 0xff and 0x00..'a');
//   - nocase folds only 'A'..'Z' (Redis runs in the C locale); an escape inside a class compares
//     exactly even under nocase, one outside folds; a range folds its ends after the swap;
//   - the empty text matches only the empty pattern ("*" does not match ""): Redis never reaches
//     its trailing-'*' skip before it has consumed a byte. KEYS and SCAN test a pattern of exactly
//     "*" before matching, so they still list the empty key;
//   - nesting limit (CVE-2024-31228, in Redis 7.0.15 as Debian ships it): Redis recurses once
//     per run of '*'s and gives up past 1000 levels, so a pattern whose 1001st run of '*'s is not
//     at its end matches nothing; a trailing run matches the rest without recursing.
//
// Algorithm: the greedy matcher that remembers only the last run of '*'s and the text position
// it was tried at. On a mismatch it resumes right after that run with the run absorbing one more
// byte. That is enough: every token after a star consumes one byte, so if the tokens after the
// last star cannot be placed at any start from the resume point on, no longer absorption by an
// earlier star helps (that would only move the same tail further right) — the argument Redis's
// skipLongerMatches makes.
//
// Bound. Let P be the pattern's bytes and S the text's, and count as a step each turn of the main
// loop, each '*' skipped and each turn of the class loop. A pass is the work between two resumes.
// In a pass the pattern position only increases, so the pass decodes each token and run of '*'s
// at most once: at most P + 1 turns of the main loop (the last one fails) and at most P '*' and
// class steps, 2P + 1 in all. Each resume moves the star's text position one byte right; that
// position never moves left (a later star is placed at the current text position) and a resume
// happens only while it is below S, so there are at most S resumes and S + 1 passes. Total: at
// most (S + 1)(2P + 1) + P steps, the last P for the trailing '*'s (glob_match_counted counts
// them; the glob fuzz target checks the bound), and no recursion, so no stack depth, whatever the
// pattern. Redis's own matcher is O(P x S) since skipLongerMatches; before 7.0.10 it was
// exponential in the number of stars (CVE-2022-36021).
namespace {

constexpr unsigned kMaxStarRuns = 1000;  // Redis's nesting limit: runs past it match nothing

inline int fold(int c, bool nocase) {
  return (nocase && c >= 'A' && c <= 'Z') ? c + 32 : c;
}

struct NoSteps {
  void add(std::uint64_t) {}
};
struct CountSteps {
  std::uint64_t* n;
  void add(std::uint64_t k) { *n += k; }
};

// Whether the class token starting at p[i] == '[' accepts byte c; *next is the index after it.
template <class Steps>
bool class_accepts(std::string_view p, std::size_t i, char c, bool nocase, std::size_t* next,
                   Steps& steps) {
  const std::size_t n = p.size();
  std::size_t j = i + 1;
  const bool negate = j < n && p[j] == '^';
  if (negate) ++j;
  // Ranges compare as signed chars, as Redis's int conversions of char do on x86 and ARM Linux.
  const int folded = fold(static_cast<unsigned char>(c), nocase);
  const int folded_signed = fold(static_cast<signed char>(c), nocase);
  bool match = false;
  // Once a member matched, the rest of the class is only walked to find its end.
  for (;; ++j) {
    steps.add(1);
    if (j >= n) {  // unclosed: the class runs to the end of the pattern
      j = n - 1;
      break;
    }
    const char b = p[j];
    if (b == '\\' && n - j >= 2) {
      ++j;
      match = match || p[j] == c;  // exact even under nocase, as in Redis
    } else if (b == ']') {
      break;
    } else if (n - j >= 3 && p[j + 1] == '-') {
      if (!match) {
        int lo = static_cast<signed char>(b), hi = static_cast<signed char>(p[j + 2]);
        if (lo > hi) std::swap(lo, hi);
        match = folded_signed >= fold(lo, nocase) && folded_signed <= fold(hi, nocase);
      }
      j += 2;
    } else if (!match) {
      match = fold(static_cast<unsigned char>(b), nocase) == folded;
    }
  }
  *next = j + 1;
  return match != negate;
}

// Whether the non-star token at p[i] accepts byte c; *next is the index after the token.
template <class Steps>
bool token_accepts(std::string_view p, std::size_t i, char c, bool nocase, std::size_t* next,
                   Steps& steps) {
  switch (p[i]) {
    case '?':
      *next = i + 1;
      return true;
    case '[':
      return class_accepts(p, i, c, nocase, next, steps);
    case '\\':
      if (i + 1 < p.size()) ++i;  // a '\' at the end is a literal '\'
      [[fallthrough]];
    default:
      *next = i + 1;
      return fold(static_cast<unsigned char>(p[i]), nocase) ==
             fold(static_cast<unsigned char>(c), nocase);
  }
}

template <class Steps>
bool glob_impl(std::string_view p, std::string_view s, bool nocase, Steps steps) {
  if (s.empty()) return p.empty();
  constexpr std::size_t kNone = std::string_view::npos;
  std::size_t pi = 0, ti = 0;
  std::size_t star_pi = kNone, star_ti = 0;  // the last run of '*'s: the token after it, and
  unsigned runs = 0, star_runs = 0;          // where the tail was last tried; runs passed
  while (ti < s.size()) {
    steps.add(1);
    if (pi < p.size() && p[pi] == '*') {
      const std::size_t run = pi;
      while (pi < p.size() && p[pi] == '*') ++pi;
      steps.add(pi - run);
      if (pi == p.size()) return true;         // a trailing run absorbs the rest
      if (runs >= kMaxStarRuns) return false;  // the nesting limit: every match passes here
      star_pi = pi;
      star_ti = ti;
      star_runs = ++runs;
      continue;
    }
    std::size_t next = 0;
    if (pi < p.size() && token_accepts(p, pi, s[ti], nocase, &next, steps)) {
      pi = next;
      ++ti;
      continue;
    }
    if (star_pi == kNone) return false;
    pi = star_pi;  // resume: the last run absorbs one more byte
    ti = ++star_ti;
    runs = star_runs;
  }
  while (pi < p.size() && p[pi] == '*') {
    steps.add(1);
    ++pi;
  }
  return pi == p.size();
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text, bool nocase) {
  return glob_impl(pattern, text, nocase, NoSteps{});
}

bool glob_match_counted(std::string_view pattern, std::string_view text, bool nocase,
                        std::uint64_t* steps) {
  *steps = 0;
  return glob_impl(pattern, text, nocase, CountSteps{steps});
}

}  // namespace kvlab::server
