// Fuzz target: the reply writer (server/protocol/reply.hpp), every shape, in RESP2 and RESP3.
//
// Input: byte 0 picks the starting protocol (bit 0: RESP3); the rest is a program. Each step
// reads an opcode byte and its operands (lengths, integers, doubles, string bytes) from the
// input and either calls one ReplyWriter method — simple, ok, error, integer, array, null,
// null_array, map, set, push, dbl, dbl_bulk, boolean, big_number, verbatim, bulk, bulk_i64 — or
// switches the protocol between top-level replies (as HELLO does). Aggregates take their
// elements from the following steps, nesting up to 8 levels. Beside the writer calls the target
// builds the tree it expects, applying Redis 7.0's RESP2 downgrades itself: a map is an array of
// 2n elements, a set and a push an array, a double a bulk string, a boolean the integer 1 or 0,
// a big number and a verbatim string bulk strings, both nulls $-1 and *-1 (RESP3: "_").
//
// Properties: the bytes written parse, with the independent reader of resp_reader.hpp, into
// exactly the expected frames (no extra or missing byte); an error's CR and LF became blanks and
// error_code() is its first word (at most 31 bytes); every double's text converts back (strtod) to
// the same double (NaN to a NaN); every integer's text is the canonical decimal.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "server/util/buffer.hpp"
#include "server/protocol/reply.hpp"
#include "tests/fuzz/resp_reader.hpp"

namespace {

using kvlab::fuzz::Node;
using kvlab::server::Buffer;
using kvlab::server::ReplyWriter;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

// The input as a stream of operands; reads past its end yield zeros.
struct Input {
  const std::uint8_t* p;
  std::size_t n;
  bool empty() const { return n == 0; }
  std::uint8_t byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  std::uint64_t u64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | byte();
    return v;
  }
  std::string str(std::size_t max) {
    const std::size_t len = std::min<std::size_t>(byte() % (max + 1), n);
    std::string s(reinterpret_cast<const char*>(p), len);
    p += len;
    n -= len;
    return s;
  }
};

// A double with interesting values more often than random bits would give them.
double pick_double(Input& in) {
  switch (in.byte() % 8) {
    case 0:
      return 0.0;
    case 1:
      return -0.0;
    case 2:
      return __builtin_inf();
    case 3:
      return -__builtin_inf();
    case 4:
      return __builtin_nan("");
    case 5:
      return static_cast<double>(static_cast<std::int64_t>(in.u64()));
    default: {
      const std::uint64_t bits = in.u64();
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return d;
    }
  }
}

std::int64_t pick_int(Input& in) {
  switch (in.byte() % 4) {
    case 0:
      return INT64_MIN;
    case 1:
      return INT64_MAX;
    case 2:
      return static_cast<std::int8_t>(in.byte());
    default:
      return static_cast<std::int64_t>(in.u64());
  }
}

// Marks an expected node whose text is a double's (compared by value, not by spelling).
constexpr std::string_view kDoubleMark = "double";

Node leaf(char type, std::string text = {}) {
  Node n;
  n.type = type;
  n.text = std::move(text);
  return n;
}
Node int_node(std::int64_t v) {
  Node n;
  n.type = ':';
  n.integer = v;
  return n;
}
Node null_node(bool resp3, char resp2_type) {
  Node n;
  n.type = resp3 ? '_' : resp2_type;
  n.null = !resp3;
  return n;
}

// A double's text must read back as the same value.
void check_double_text(const std::string& text, double v) {
  if (v != v) {
    check(text == "nan");
    return;
  }
  char* end = nullptr;
  const double back = std::strtod(text.c_str(), &end);
  check(end == text.c_str() + text.size() && !text.empty());
  check(std::memcmp(&back, &v, sizeof v) == 0 ||
        (back == 0 && v == 0 && std::signbit(back) == std::signbit(v)));
}

struct Generator {
  Input in;
  ReplyWriter& w;
  int steps = 0;

  // Writes one reply (and its elements) and returns the tree expected from the reader. A double's
  // node carries kDoubleMark instead of a text; `doubles` collects the values in pre-order.
  Node one(int depth, std::vector<double>* doubles) {
    const bool r3 = w.resp3();
    ++steps;
    const std::uint8_t op = in.byte() % 17;
    const int max_children = depth < 8 && steps < 2000 ? 6 : 0;
    switch (op) {
      case 0: {
        std::string s = in.str(40);
        for (char& c : s)  // the contract: callers pass no CR or LF (the Lua bridge replaces them)
          if (c == '\r' || c == '\n') c = ' ';
        w.simple(s);
        return leaf('+', s);
      }
      case 1:
        w.ok();
        return leaf('+', "OK");
      case 2: {
        const std::string s = in.str(60);
        const std::uint64_t before = w.errors();
        w.error(s);
        check(w.errors() == before + 1);
        const std::string_view code =
            std::string_view(s).substr(0, std::min(s.find(' '), std::size_t{31}));
        check(w.error_code() == code);
        std::string shown = s;
        for (char& c : shown)
          if (c == '\r' || c == '\n') c = ' ';
        return leaf('-', shown);
      }
      case 3: {
        const std::int64_t v = pick_int(in);
        w.integer(v);
        return int_node(v);
      }
      case 4:
      case 6:
      case 7:
      case 8: {  // array, map, set, push
        const std::size_t n = max_children == 0 ? 0 : in.byte() % (max_children + 1);
        Node agg;
        const std::size_t elems = op == 6 ? 2 * n : n;
        if (op == 4) {
          w.array(n);
          agg.type = '*';
        } else if (op == 6) {
          w.map(n);
          agg.type = r3 ? '%' : '*';
        } else if (op == 7) {
          w.set(n);
          agg.type = r3 ? '~' : '*';
        } else {
          w.push(n);
          agg.type = r3 ? '>' : '*';
        }
        for (std::size_t i = 0; i < elems; ++i) agg.items.push_back(one(depth + 1, doubles));
        return agg;
      }
      case 5:
        if (in.byte() & 1) {
          w.null();
          return null_node(r3, '$');
        }
        w.null_array();
        return null_node(r3, '*');
      case 9:
      case 10: {  // dbl, dbl_bulk
        const double v = pick_double(in);
        doubles->push_back(v);
        Node n = leaf(op == 9 && r3 ? ',' : '$');
        n.format = kDoubleMark;
        if (op == 9) {
          w.dbl(v);
        } else {
          w.dbl_bulk(v);
        }
        return n;
      }
      case 11: {
        const bool v = in.byte() & 1;
        w.boolean(v);
        Node n = int_node(v ? 1 : 0);
        n.type = r3 ? '#' : ':';
        return n;
      }
      case 12: {  // big number: decimal digits, maybe negative (the contract)
        std::string d = in.byte() & 1 ? "-" : "";
        const std::size_t len = 1 + in.byte() % 40;
        for (std::size_t i = 0; i < len; ++i) d += static_cast<char>('0' + in.byte() % 10);
        w.big_number(d);
        return leaf(r3 ? '(' : '$', d);
      }
      case 13: {
        std::string fmt = in.str(4);
        const std::string s = in.str(80);
        w.verbatim(fmt, s);
        if (r3 && fmt.size() == 3) {
          Node n = leaf('=', s);
          n.format = fmt;
          return n;
        }
        return leaf('$', s);
      }
      case 14: {
        const std::string s = in.str(255);
        w.bulk(s);
        return leaf('$', s);
      }
      case 15: {
        const std::int64_t v = pick_int(in);
        w.bulk_i64(v);
        return leaf('$', std::to_string(v));
      }
      default: {  // a longer bulk, up to 64 KiB of repeated bytes (buffer growth)
        const std::size_t len = (std::size_t{in.byte()} << 8 | in.byte());
        const std::string s(len, static_cast<char>(in.byte()));
        w.bulk(s);
        return leaf('$', s);
      }
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  Buffer out;
  ReplyWriter w(out, (data[0] & 1) ? 3 : 2);
  Generator g{Input{data + 1, size - 1}, w};
  struct Frame {
    int proto;
    Node want;
    std::vector<double> doubles;
  };
  std::vector<Frame> frames;
  while (!g.in.empty() && g.steps < 2000) {
    if (g.in.p[0] == 0xff) {  // HELLO: the next replies use the other protocol
      g.in.byte();
      w.set_proto(w.resp3() ? 2 : 3);
      continue;
    }
    const std::size_t start = out.size();
    Frame f{w.proto(), {}, {}};
    f.want = g.one(0, &f.doubles);
    // Each top-level reply is read back from its own bytes with its own protocol version.
    const std::string_view bytes(out.data() + start, out.size() - start);
    std::size_t pos = 0;
    Node got;
    check(kvlab::fuzz::read_frame(bytes, &pos, f.proto, &got));
    check(pos == bytes.size());
    // Doubles: their text is checked against the value, then copied into the expected tree.
    std::size_t next = 0;
    auto walk = [&](auto& self, Node& want, const Node& have) -> void {
      check(want.type == have.type && want.items.size() == have.items.size());
      if (want.format == kDoubleMark) {
        check(next < f.doubles.size());
        check_double_text(have.text, f.doubles[next++]);
        want.text = have.text;
        want.format.clear();
      }
      for (std::size_t i = 0; i < want.items.size(); ++i) self(self, want.items[i], have.items[i]);
    };
    walk(walk, f.want, got);
    check(next == f.doubles.size());
    check(got == f.want);
  }
  return 0;
}
