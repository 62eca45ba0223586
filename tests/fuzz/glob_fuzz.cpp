// Fuzz target: the glob matcher (server/util/strings_util.hpp, glob_match) against a reference matcher.
//
// Input: byte 0 bit 0 = nocase; bytes 1-2 (little endian, mod the bytes left + 1) = the pattern's
// length; the pattern follows, then the text. Properties checked:
//   1. glob_match agrees with the reference below: the pattern is first parsed into tokens, each
//      a set of the 256 byte values it accepts or a run of '*'s, with Redis 7.0.15's
//      stringmatchlen() rules written out a second time and independently of the matcher's
//      token decoder; then a dynamic program over (token, text position), filled from the
//      last token back, decides the match. Both keep Redis's empty-text rule and its limit of 1000
//      nested runs of '*'.
//   2. The matcher's work (glob_match_counted) is at most (S + 1)(2P + 1) + P steps for a
//      P-byte pattern and an S-byte text, the bound proved in server/util/strings_util.cpp; a matcher
//      that backtracks exponentially or quadratically per position fails it at once.
//   3. glob_match and glob_match_counted answer the same.
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "server/util/strings_util.hpp"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

struct Token {
  bool star = false;       // a run of '*'s
  std::bitset<256> bytes;  // the bytes a one-byte token accepts
};

int fold(int c, bool nocase) {
  return nocase && c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

// One class body: p[0] is the byte after '[' (or after "[^"). Returns the bytes the class names
// (before negation) and sets *used to the pattern bytes it spans up to and including its ']' or
// the end of the pattern.
std::bitset<256> parse_class(std::string_view p, bool nocase, std::size_t* used) {
  std::bitset<256> out;
  std::size_t k = 0;
  while (k < p.size() && !(p[k] == ']')) {
    if (p[k] == '\\' && k + 1 < p.size()) {
      out.set(static_cast<unsigned char>(p[k + 1]));  // exact, even under nocase
      k += 2;
    } else if (k + 2 < p.size() && p[k + 1] == '-') {
      // A range compares signed chars after a swap, then folds its ends and the byte.
      int a = static_cast<signed char>(p[k]), b = static_cast<signed char>(p[k + 2]);
      if (b < a) {
        const int t = a;
        a = b;
        b = t;
      }
      a = fold(a, nocase);
      b = fold(b, nocase);
      for (int v = 0; v < 256; ++v) {
        const int x = fold(static_cast<signed char>(v), nocase);
        if (a <= x && x <= b) out.set(static_cast<std::size_t>(v));
      }
      k += 3;
    } else {
      for (int v = 0; v < 256; ++v)
        if (fold(v, nocase) == fold(static_cast<unsigned char>(p[k]), nocase))
          out.set(static_cast<std::size_t>(v));
      k += 1;
    }
  }
  // Closed: the ']' belongs to the class. Unclosed: the class ran to the end.
  *used = k < p.size() ? k + 1 : p.size();
  return out;
}

std::vector<Token> tokenize(std::string_view p, bool nocase) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < p.size()) {
    Token t;
    const char c = p[i];
    if (c == '*') {
      t.star = true;
      while (i < p.size() && p[i] == '*') ++i;
    } else if (c == '?') {
      t.bytes.set();
      ++i;
    } else if (c == '[') {
      const bool negate = i + 1 < p.size() && p[i + 1] == '^';
      const std::size_t body = i + 1 + (negate ? 1 : 0);
      std::size_t used = 0;
      t.bytes = parse_class(p.substr(body), nocase, &used);
      if (negate) t.bytes.flip();
      i = body + used;
    } else {
      const char lit = (c == '\\' && i + 1 < p.size()) ? p[++i] : c;  // "\x", or a final '\'
      const int x = static_cast<unsigned char>(lit);
      t.bytes.set(static_cast<std::size_t>(x));
      if (nocase && fold(x, true) != x) t.bytes.set(static_cast<std::size_t>(fold(x, true)));
      if (nocase && x >= 'a' && x <= 'z') t.bytes.set(static_cast<std::size_t>(x - 'a' + 'A'));
      ++i;
    }
    out.push_back(t);
  }
  return out;
}

bool reference(std::string_view pattern, std::string_view text, bool nocase) {
  if (text.empty()) return pattern.empty();
  const std::vector<Token> toks = tokenize(pattern, nocase);
  // Redis recurses once per run of '*'s and fails past 1000 levels: a run numbered 1000 or more
  // (from 0) that does not end the pattern makes every match fail.
  std::size_t runs = 0;
  for (std::size_t t = 0; t < toks.size(); ++t) {
    if (!toks[t].star) continue;
    if (runs >= 1000 && t + 1 < toks.size()) return false;
    ++runs;
  }
  // Dynamic program from the last token back: after step t, row[i] says whether toks[t..]
  // matches text[i..]. Two rows, no recursion.
  const std::size_t m = text.size();
  std::vector<std::uint8_t> row(m + 1, 0), prev(m + 1);
  row[m] = 1;  // no tokens left: only the empty rest matches
  for (std::size_t t = toks.size(); t-- > 0;) {
    row.swap(prev);
    if (toks[t].star) {  // any number of bytes, then the rest
      row[m] = prev[m];
      for (std::size_t i = m; i-- > 0;) row[i] = prev[i] | row[i + 1];
    } else {  // this byte, then the rest
      row[m] = 0;
      for (std::size_t i = 0; i < m; ++i)
        row[i] = toks[t].bytes.test(static_cast<unsigned char>(text[i])) & prev[i + 1];
    }
  }
  return row[0] != 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const bool nocase = (data[0] & 1) != 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 3), size - 3);
  const std::size_t plen = (data[1] | std::size_t{data[2]} << 8) % (rest.size() + 1);
  const std::string_view pattern = rest.substr(0, plen), text = rest.substr(plen);
  std::uint64_t steps = 0;
  const bool got = kvlab::server::glob_match_counted(pattern, text, nocase, &steps);
  check(got == kvlab::server::glob_match(pattern, text, nocase));
  check(steps <= (text.size() + 1) * (2 * pattern.size() + 1) + pattern.size());
  check(got == reference(pattern, text, nocase));
  return 0;
}
