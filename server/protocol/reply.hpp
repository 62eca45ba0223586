// The reply side of RESP: appends encoded replies to a connection's output buffer. Nothing here
// writes to the socket; the event loop flushes the whole buffer with one write per readiness event,
// so a pipeline of 30 commands costs one system call, not 30.
//
// Protocol versions: a connection speaks RESP2 until HELLO 3 switches it to RESP3 (and back with
// HELLO 2). Handlers write the reply's *shape* — map(), set(), dbl(), boolean(), push(), null() —
// and the writer encodes it for the connection's version the way Redis 7.0 does: in RESP2 a map is
// an array of 2n elements, a set an array, a double a bulk string ("%.17g", "inf", "-inf"), a
// boolean the integer 1 or 0, a push frame an array, and the nulls $-1 and *-1.
//
// Thread safety: none; a writer belongs to one connection.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "server/util/buffer.hpp"
#include "server/util/strings_util.hpp"

namespace kvlab::server {

class ReplyWriter {
 public:
  explicit ReplyWriter(Buffer& out, int proto = 2) : out_(out), proto_(proto) {}

  // The protocol version (2 or 3) this writer encodes for. HELLO changes it for its own reply.
  int proto() const { return proto_; }
  bool resp3() const { return proto_ == 3; }
  void set_proto(int proto) { proto_ = proto; }

  // A status line. CR and LF inside are replaced by blanks, as in error(): a status that echoes a
  // client's bytes (a Lua status_reply, a name) stays one line, so no client can make the server
  // send a reply that desynchronizes another parser (CVE-2025-67733; Redis strips them too).
  void simple(std::string_view s) {
    char* p = room(s.size() + 3);
    *p++ = '+';
    for (char c : s) *p++ = (c == '\r' || c == '\n') ? ' ' : c;
    end_line(p);
  }
  void ok() { out_.append("+OK\r\n", 5); }
  // An error line; `s` is the text without '-'. CR and LF inside are replaced by blanks so that one
  // error stays one line (Redis does the same).
  void error(std::string_view s) {
    ++errors_;
    // The error code for INFO errorstats: the first word ("ERR", "WRONGTYPE").
    const std::size_t code = std::min(s.find(' '), sizeof err_code_);
    err_code_len_ = static_cast<std::uint8_t>(std::min(code, s.size()));
    std::memcpy(err_code_, s.data(), err_code_len_);
    char* p = room(s.size() + 3);
    *p++ = '-';
    for (char c : s) *p++ = (c == '\r' || c == '\n') ? ' ' : c;
    end_line(p);
  }
  // An error the error statistics counted already: a script's error that a command it called
  // replied, or that redis.call refused (Redis 7.0 counts such an error once, where it arises).
  // The command replying it still fails: errors() counts it, stat_errors() does not.
  void error_counted_before(std::string_view s) {
    ++counted_before_;
    error(s);
  }
  void integer(std::int64_t v) { prefixed(':', v); }
  void array(std::size_t n) { prefixed('*', static_cast<std::int64_t>(n)); }
  // Redis's null bulk string and null array; both are "_" in RESP3.
  void null() {
    if (resp3()) {
      out_.append("_\r\n", 3);
    } else {
      out_.append("$-1\r\n", 5);
    }
  }
  void null_array() {
    if (resp3()) {
      out_.append("_\r\n", 3);
    } else {
      out_.append("*-1\r\n", 5);
    }
  }
  // A map of n key/value pairs follows (2n elements written by the caller).
  void map(std::size_t n) {
    if (resp3()) {
      prefixed('%', static_cast<std::int64_t>(n));
    } else {
      prefixed('*', static_cast<std::int64_t>(2 * n));
    }
  }
  // A set of n elements follows.
  void set(std::size_t n) { prefixed(resp3() ? '~' : '*', static_cast<std::int64_t>(n)); }
  // RESP3 attributes (n key/value pairs) for the reply that follows; RESP3 only (callers check).
  void attribute(std::size_t n) { prefixed('|', static_cast<std::int64_t>(n)); }
  // An out-of-band push frame of n elements follows (pub/sub messages, invalidations).
  void push(std::size_t n) { prefixed(resp3() ? '>' : '*', static_cast<std::int64_t>(n)); }
  // A double as Redis 7.0's addReplyDouble: "%.17g", with inf and -inf spelled out.
  void dbl(double v) {
    char buf[40];
    const std::size_t n = format_double(v, buf);
    if (resp3()) {
      char* p = room(n + 3);
      *p++ = ',';
      std::memcpy(p, buf, n);
      end_line(p + n);
    } else {
      bulk(std::string_view(buf, n));
    }
  }
  // The same text as a bulk string in both protocols (scores in ZSCAN pages).
  void dbl_bulk(double v) {
    char buf[40];
    bulk(std::string_view(buf, format_double(v, buf)));
  }
  void boolean(bool v) {
    if (resp3()) {
      out_.append(v ? "#t\r\n" : "#f\r\n", 4);
    } else {
      out_.append(v ? ":1\r\n" : ":0\r\n", 4);
    }
  }
  // A big number given as its decimal text; a bulk string in RESP2.
  void big_number(std::string_view digits) {
    if (!resp3()) {
      bulk(digits);
      return;
    }
    char* p = room(digits.size() + 3);
    *p++ = '(';
    std::memcpy(p, digits.data(), digits.size());
    end_line(p + digits.size());
  }
  // A verbatim string with its three-letter format ("txt", "mkd"); a bulk string in RESP2.
  void verbatim(std::string_view format, std::string_view s) {
    if (!resp3() || format.size() != 3) {
      bulk(s);
      return;
    }
    char* p = room(s.size() + 32);
    *p++ = '=';
    p += format_i64(static_cast<std::int64_t>(s.size() + 4), p);
    *p++ = '\r';
    *p++ = '\n';
    std::memcpy(p, format.data(), 3);
    p[3] = ':';
    p += 4;
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    end_line(p + s.size());
  }
  void bulk(std::string_view s) {
    char* p = room(s.size() + 26);
    *p++ = '$';
    p += format_i64(static_cast<std::int64_t>(s.size()), p);
    *p++ = '\r';
    *p++ = '\n';
    if (!s.empty()) std::memcpy(p, s.data(), s.size());  // an empty view may hold nullptr
    p += s.size();
    end_line(p);
  }
  void bulk_i64(std::int64_t v) {
    char buf[24];
    bulk(std::string_view(buf, format_i64(v, buf)));
  }
  void raw(std::string_view s) { out_.append(s); }

  std::uint64_t errors() const { return errors_; }
  // The errors INFO's total_error_replies and errorstats count (all but error_counted_before's).
  std::uint64_t stat_errors() const { return errors_ - counted_before_; }
  // The code of the last error replied (empty when none).
  std::string_view error_code() const { return {err_code_, err_code_len_}; }
  Buffer& buffer() { return out_; }

 private:
  char* room(std::size_t n) {
    out_.reserve_tail(n);
    return out_.tail();
  }
  void end_line(char* p) {
    *p++ = '\r';
    *p++ = '\n';
    out_.commit(static_cast<std::size_t>(p - out_.tail()));
  }
  static std::size_t format_double(double v, char* buf) {  // buf: 40 bytes
    if (v != v) {
      std::memcpy(buf, "nan", 3);
      return 3;
    }
    if (v == __builtin_inf() || v == -__builtin_inf()) {
      std::memcpy(buf, v > 0 ? "inf" : "-inf", v > 0 ? 3 : 4);
      return v > 0 ? 3 : 4;
    }
    const int k = std::snprintf(buf, 40, "%.17g", v);
    return k > 0 ? static_cast<std::size_t>(k) : 0;
  }
  void prefixed(char tag, std::int64_t v) {
    char* p = room(24);
    *p++ = tag;
    p += format_i64(v, p);
    end_line(p);
  }

  Buffer& out_;
  int proto_ = 2;
  std::uint64_t errors_ = 0;
  std::uint64_t counted_before_ = 0;
  char err_code_[31];
  std::uint8_t err_code_len_ = 0;
};

}  // namespace kvlab::server
