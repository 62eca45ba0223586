// The reply side of RESP2: appends encoded replies to a connection's output buffer. Nothing here
// writes to the socket; the event loop flushes the whole buffer with one write per readiness event,
// so a pipeline of 30 commands costs one system call, not 30.
//
// Thread safety: none; a writer belongs to one connection.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "server/buffer.hpp"
#include "server/strings_util.hpp"

namespace kvlab::server {

class ReplyWriter {
 public:
  explicit ReplyWriter(Buffer& out) : out_(out) {}

  void simple(std::string_view s) {
    char* p = room(s.size() + 3);
    *p++ = '+';
    if (!s.empty()) std::memcpy(p, s.data(), s.size());  // an empty view may hold nullptr
    p += s.size();
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
  void integer(std::int64_t v) { prefixed(':', v); }
  void array(std::size_t n) { prefixed('*', static_cast<std::int64_t>(n)); }
  void null() { out_.append("$-1\r\n", 5); }
  void null_array() { out_.append("*-1\r\n", 5); }
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
  void prefixed(char tag, std::int64_t v) {
    char* p = room(24);
    *p++ = tag;
    p += format_i64(v, p);
    end_line(p);
  }

  Buffer& out_;
  std::uint64_t errors_ = 0;
  char err_code_[31];
  std::uint8_t err_code_len_ = 0;
};

}  // namespace kvlab::server
