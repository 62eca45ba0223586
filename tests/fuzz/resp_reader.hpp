// A small, strict RESP2/RESP3 reply reader for the fuzz targets, written apart from the server's
// code so that it checks the writer (server/protocol/reply.hpp) instead of sharing its assumptions.
//
// read_frame() reads one complete frame at `pos` and advances it; it fails (returns false) on
// anything that is not well-formed for the protocol version given: an unknown type byte, a RESP3
// type in RESP2, a line not ended by CRLF, a length that is not a canonical decimal, a bulk whose
// payload is not followed by CRLF, a verbatim string without its "fmt:" prefix, a boolean other
// than t/f, or input that ends inside the frame. Aggregates nest up to kMaxDepth.
//
// Thread safety: none needed (pure functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvlab::fuzz {

struct Node {
  char type = 0;  // the RESP type byte: + - : $ * % ~ > , # _ ( =; '$' or '*' with null for nulls
  bool null = false;         // $-1 or *-1
  std::string text;          // simple, error, bulk, double, big number, verbatim payload
  std::string format;        // verbatim: the three-letter format
  std::int64_t integer = 0;  // integers and booleans (1/0)
  std::vector<Node> items;   // aggregates; a map holds its 2n keys and values in order

  bool operator==(const Node&) const = default;
};

inline constexpr int kMaxDepth = 64;

namespace detail {

// The line at pos (without its CRLF); false when no CRLF follows or a bare CR/LF is inside.
inline bool line(std::string_view in, std::size_t* pos, std::string_view* out) {
  const std::size_t end = in.find("\r\n", *pos);
  if (end == std::string_view::npos) return false;
  *out = in.substr(*pos, end - *pos);
  if (out->find('\r') != std::string_view::npos || out->find('\n') != std::string_view::npos)
    return false;
  *pos = end + 2;
  return true;
}

// A canonical decimal: optional '-', no leading zeros (except "0"), no "-0", within int64.
inline bool decimal(std::string_view s, std::int64_t* out) {
  const bool neg = !s.empty() && s[0] == '-';
  std::string_view d = neg ? s.substr(1) : s;
  if (d.empty() || d.size() > 19 || (d.size() > 1 && d[0] == '0') || (neg && d == "0"))
    return false;
  std::uint64_t v = 0;  // 19 digits fit
  for (char c : d) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  const std::uint64_t limit = (std::uint64_t{1} << 63) - (neg ? 0 : 1);
  if (v > limit) return false;
  *out = neg ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);  // two's complement
  return true;
}

}  // namespace detail

inline bool read_frame(std::string_view in, std::size_t* pos, int proto, Node* out, int depth = 0) {
  if (depth > kMaxDepth || *pos >= in.size()) return false;
  const char t = in[*pos];
  ++*pos;
  std::string_view l;
  if (!detail::line(in, pos, &l)) return false;
  *out = Node{};
  out->type = t;
  const bool resp3 = proto == 3;
  auto aggregate = [&](std::int64_t n) {
    if (n < 0) return false;
    for (std::int64_t i = 0; i < n; ++i) {
      Node child;
      if (!read_frame(in, pos, proto, &child, depth + 1)) return false;
      out->items.push_back(std::move(child));
    }
    return true;
  };
  auto payload = [&](std::int64_t n, std::string* text) {
    if (n < 0 || static_cast<std::uint64_t>(n) > in.size() - *pos ||
        in.size() - *pos - static_cast<std::size_t>(n) < 2)
      return false;
    text->assign(in.substr(*pos, static_cast<std::size_t>(n)));
    *pos += static_cast<std::size_t>(n);
    if (in.substr(*pos, 2) != "\r\n") return false;
    *pos += 2;
    return true;
  };
  std::int64_t n = 0;
  switch (t) {
    case '+':
    case '-':
      out->text.assign(l);
      return true;
    case ':':
      return detail::decimal(l, &out->integer);
    case '$':
      if (l == "-1") return (out->null = true);
      return detail::decimal(l, &n) && payload(n, &out->text);
    case '*':
      if (l == "-1") return (out->null = true);
      return detail::decimal(l, &n) && aggregate(n);
    case '%':
      return resp3 && detail::decimal(l, &n) && n <= (INT64_MAX / 2) && aggregate(2 * n);
    case '~':
    case '>':
      return resp3 && detail::decimal(l, &n) && aggregate(n);
    case ',':
      out->text.assign(l);
      return resp3 && !l.empty();
    case '#':
      if (!resp3 || (l != "t" && l != "f")) return false;
      out->integer = l == "t" ? 1 : 0;
      return true;
    case '_':
      return resp3 && l.empty();
    case '(':
      out->text.assign(l);
      return resp3 && !l.empty();
    case '=': {
      std::string body;
      if (!resp3 || !detail::decimal(l, &n) || !payload(n, &body)) return false;
      if (body.size() < 4 || body[3] != ':') return false;
      out->format = body.substr(0, 3);
      out->text = body.substr(4);
      return true;
    }
    default:
      return false;
  }
}

// Reads every frame of `in`; false unless the bytes are a sequence of complete frames.
inline bool read_all(std::string_view in, int proto, std::vector<Node>* out) {
  std::size_t pos = 0;
  while (pos < in.size()) {
    Node n;
    if (!read_frame(in, &pos, proto, &n)) return false;
    out->push_back(std::move(n));
  }
  return true;
}

}  // namespace kvlab::fuzz
