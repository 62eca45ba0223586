// Implementations of strings_util.hpp; see there.
#include "server/strings_util.hpp"

#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

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

namespace {
// Recursive glob with a depth guard (pathological patterns like "*a*a*a*...b").
bool glob_impl(const char* p, std::size_t plen, const char* s, std::size_t slen, bool nocase,
               int depth) {
  if (depth > 1000) return false;
  auto eq = [nocase](char a, char b) { return nocase ? lower(a) == lower(b) : a == b; };
  while (plen > 0 && slen > 0) {
    switch (p[0]) {
      case '*': {
        while (plen > 1 && p[1] == '*') {
          ++p;
          --plen;
        }
        if (plen == 1) return true;
        for (std::size_t i = 0; i <= slen; ++i)
          if (glob_impl(p + 1, plen - 1, s + i, slen - i, nocase, depth + 1)) return true;
        return false;
      }
      case '?':
        break;
      case '[': {
        ++p;
        --plen;
        bool negate = false;
        if (plen > 0 && p[0] == '^') {
          negate = true;
          ++p;
          --plen;
        }
        bool match = false;
        while (plen > 0 && p[0] != ']') {
          if (p[0] == '\\' && plen >= 2) {
            ++p;
            --plen;
            if (eq(p[0], s[0])) match = true;
          } else if (plen >= 3 && p[1] == '-') {
            char lo = p[0], hi = p[2];
            if (lo > hi) std::swap(lo, hi);
            char c = s[0];
            if (nocase) {
              lo = lower(lo);
              hi = lower(hi);
              c = lower(c);
            }
            if (c >= lo && c <= hi) match = true;
            p += 2;
            plen -= 2;
          } else if (eq(p[0], s[0])) {
            match = true;
          }
          ++p;
          --plen;
        }
        if (plen == 0) {  // unterminated class: Redis treats the end as ']'
          ++plen;
          --p;
        }
        if (negate) match = !match;
        if (!match) return false;
        break;
      }
      case '\\':
        if (plen >= 2) {
          ++p;
          --plen;
        }
        [[fallthrough]];
      default:
        if (!eq(p[0], s[0])) return false;
        break;
    }
    ++s;
    --slen;
    ++p;
    --plen;
  }
  while (plen > 0 && p[0] == '*') {
    ++p;
    --plen;
  }
  return plen == 0 && slen == 0;
}
}  // namespace

bool glob_match(std::string_view pattern, std::string_view text, bool nocase) {
  return glob_impl(pattern.data(), pattern.size(), text.data(), text.size(), nocase, 0);
}

}  // namespace kvlab::server
