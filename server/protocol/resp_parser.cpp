// The incremental RESP2 request parser; the contract is in resp_parser.hpp.
#include "server/protocol/resp_parser.hpp"

#include <algorithm>
#include <cstring>

#include "server/protocol/errors.hpp"
#include "server/util/strings_util.hpp"

namespace kvlab::server {

void RequestParser::reset() {
  kind_ = Kind::kNone;
  expected_ = -1;
  bulk_len_ = -1;
  cursor_ = 0;
  spans_.clear();
  consumed_ = 0;
  bytes_needed_ = 0;
}

RequestParser::Status RequestParser::fail(std::string_view message) {
  error_.assign(message);
  return Status::kError;
}

RequestParser::Status RequestParser::fail(std::string message) {
  error_ = std::move(message);
  return Status::kError;
}

namespace {
// Reads "<digits>\r\n" at data[*pos]; false if it is not there in full (or too long to be a
// plausible length). Signs are not accepted: a negative count or length ends the scan.
bool scan_length(std::string_view data, std::size_t* pos, std::size_t* value) {
  std::size_t v = 0;
  std::size_t i = *pos;
  const std::size_t end = std::min(data.size(), i + 12);
  for (; i < end && data[i] >= '0' && data[i] <= '9'; ++i) v = v * 10 + (data[i] - '0');
  if (i == *pos || i + 1 >= data.size() || data[i] != '\r' || data[i + 1] != '\n') return false;
  *pos = i + 2;
  *value = v;
  return true;
}
}  // namespace

KeyScan scan_keys(std::string_view data, std::size_t max_commands, std::string_view* keys,
                  std::size_t keys_max, KeyLayoutFn layout) {
  constexpr std::size_t kMaxArgs = 64;
  KeyScan out;
  std::size_t pos = 0;
  std::string_view prev_name;  // the last name layout() was asked about, and its answer
  KeyLayout prev_layout;
  bool have_prev = false;
  while (out.commands < max_commands && pos < data.size() && data[pos] == '*') {
    std::size_t p = pos + 1;
    std::size_t argc = 0;
    if (!scan_length(data, &p, &argc) || argc > kMaxArgs) break;
    // The command's keys go to keys[out.keys…] as they are met; kept only once it is complete.
    std::size_t n = out.keys;
    KeyLayout kl;  // the second argument alone, unless layout() says otherwise
    std::size_t last = 1;
    bool full = false;  // a key of this command found keys[] full
    bool complete = true;
    for (std::size_t a = 0; a < argc; ++a) {
      std::size_t len = 0;
      if (p >= data.size() || data[p] != '$') {
        complete = false;
        break;
      }
      ++p;
      if (!scan_length(data, &p, &len) || len > data.size() || data.size() - p < len + 2) {
        complete = false;
        break;
      }
      const std::string_view arg = data.substr(p, len);
      if (a == 0) {
        if (layout != nullptr && argc > 2) {
          // A pipeline repeats one command: its layout is asked for once per run of it.
          if (arg != prev_name || !have_prev) {
            if (!layout(arg, &prev_layout)) prev_layout = KeyLayout{};
            prev_name = arg;
            have_prev = true;
          }
          kl = prev_layout;
        }
        const long l = kl.last >= 0 ? kl.last : static_cast<long>(argc) + kl.last;
        last = l < 0 ? 0 : static_cast<std::size_t>(l);
        if (kl.first < 1 || kl.step < 1) last = 0;  // a layout with no keys
      } else if (a <= last && a >= static_cast<std::size_t>(kl.first) &&
                 (a - static_cast<std::size_t>(kl.first)) % static_cast<std::size_t>(kl.step) == 0) {
        if (n < keys_max)
          keys[n++] = arg;
        else
          full = true;
      }
      p += len + 2;
    }
    if (!complete) break;
    // A command whose keys do not all fit ends the scan before it (its keys are then the first
    // of the next scan), unless it is the first: then its first keys_max keys are kept.
    if (full && out.commands > 0) break;
    out.keys = n;
    ++out.commands;
    pos = p;
  }
  return out;
}

RequestParser::Status RequestParser::parse(std::string_view data, bool authenticated,
                                           std::uint64_t max_bulk) {
  args_.clear();
  bytes_needed_ = 0;
  if (kind_ == Kind::kNone) {
    if (data.empty()) return Status::kIncomplete;
    kind_ = data[0] == '*' ? Kind::kMultibulk : Kind::kInline;
  }
  return kind_ == Kind::kInline ? parse_inline(data)
                                : parse_multibulk(data, authenticated, max_bulk);
}

RequestParser::Status RequestParser::parse_inline(std::string_view data) {
  const void* nl = std::memchr(data.data(), '\n', data.size());
  if (nl == nullptr) {
    if (data.size() > kMaxInline) return fail(err::kProtoTooBigInline);
    return Status::kIncomplete;
  }
  std::size_t end = static_cast<const char*>(nl) - data.data();
  // The limit holds however the line arrived: in one read or in many (where the check above fires
  // as soon as more than kMaxInline bytes wait without a newline).
  if (end > kMaxInline) return fail(err::kProtoTooBigInline);
  const std::size_t consumed = end + 1;
  if (end > 0 && data[end - 1] == '\r') --end;
  inline_args_.clear();
  if (!split_inline_args(data.substr(0, end), &inline_args_))
    return fail(err::kProtoUnbalancedQuotes);
  for (const std::string& a : inline_args_) args_.emplace_back(a);
  reset();
  consumed_ = consumed;
  return Status::kCommand;
}

namespace {
// Finds the "\r" ending a length line that starts at `from`; npos when absent.
std::size_t find_cr(std::string_view data, std::size_t from) {
  const void* p = std::memchr(data.data() + from, '\r', data.size() - from);
  return p == nullptr ? std::string_view::npos : static_cast<const char*>(p) - data.data();
}
}  // namespace

// Fast path for the common case: a well-formed decimal length (at most 18 digits, so no overflow) followed by
// "\r\n", starting at p. Returns the offset just past the "\r\n" and the value, or 0 when the
// line is anything else (incomplete, malformed, too long), in which case the careful path runs.
static inline std::size_t fast_length(std::string_view data, std::size_t p, std::int64_t* out) {
  const std::size_t end = std::min(data.size(), p + 18);  // 18 digits cannot overflow
  std::int64_t v = 0;
  std::size_t i = p;
  for (; i < end; ++i) {
    const unsigned d = static_cast<unsigned char>(data[i]) - '0';
    if (d > 9) break;
    v = v * 10 + d;
  }
  if (i == p || i + 1 >= data.size() || data[i] != '\r') return 0;
  if (data[p] == '0' && i - p > 1) return 0;  // leading zeros: let the strict parser decide
  *out = v;
  return i + 2;
}

RequestParser::Status RequestParser::parse_multibulk(std::string_view data, bool authenticated,
                                                     std::uint64_t max_bulk) {
  if (expected_ < 0) {
    std::int64_t fast = 0;
    if (const std::size_t next = fast_length(data, 1, &fast);
        next != 0 && fast > 0 && fast <= kMaxMultibulk && (authenticated || fast <= kMaxUnauthArgs)) {
      cursor_ = next;
      expected_ = fast;
      spans_.reserve(static_cast<std::size_t>(std::min<std::int64_t>(fast, 1024)));
    }
  }
  if (expected_ < 0) {
    const std::size_t cr = find_cr(data, 0);
    if (cr == std::string_view::npos) {
      if (data.size() > kMaxInline) return fail(err::kProtoTooBigMbulk);
      return Status::kIncomplete;
    }
    if (cr > kMaxInline) return fail(err::kProtoTooBigMbulk);  // as if it came in pieces
    if (cr + 2 > data.size()) return Status::kIncomplete;  // the '\n' has not arrived
    std::int64_t count = 0;
    if (!parse_i64(data.substr(1, cr - 1), &count) || count > kMaxMultibulk)
      return fail(err::kProtoInvalidMbulk);
    if (count > kMaxUnauthArgs && !authenticated) return fail(err::kProtoUnauthMbulk);
    cursor_ = cr + 2;
    if (count <= 0) return finish(data);  // "*0" / "*-1": an empty command, no reply
    expected_ = count;
    // Never trust the announced count for an allocation: grow as arguments actually arrive.
    spans_.reserve(static_cast<std::size_t>(std::min<std::int64_t>(count, 1024)));
  }
  while (static_cast<std::int64_t>(spans_.size()) < expected_) {
    if (bulk_len_ < 0 && cursor_ < data.size() && data[cursor_] == '$') {
      std::int64_t fast = 0;
      if (const std::size_t next = fast_length(data, cursor_ + 1, &fast);
          next != 0 && static_cast<std::uint64_t>(fast) <= max_bulk &&
          (authenticated || fast <= kMaxUnauthBulk)) {
        bulk_len_ = fast;
        cursor_ = next;
      }
    }
    if (bulk_len_ < 0) {
      if (cursor_ >= data.size()) return Status::kIncomplete;
      const std::size_t cr = find_cr(data, cursor_);
      if (cr == std::string_view::npos) {
        if (data.size() - cursor_ > kMaxInline) return fail(err::kProtoTooBigBulk);
        return Status::kIncomplete;
      }
      if (cr - cursor_ > kMaxInline) return fail(err::kProtoTooBigBulk);  // as if in pieces
      if (cr + 2 > data.size()) return Status::kIncomplete;
      if (data[cursor_] != '$') return fail(err::proto_expected_dollar(data[cursor_]));
      std::int64_t len = 0;
      if (!parse_i64(data.substr(cursor_ + 1, cr - cursor_ - 1), &len) || len < 0 ||
          static_cast<std::uint64_t>(len) > max_bulk)
        return fail(err::kProtoInvalidBulk);
      if (len > kMaxUnauthBulk && !authenticated) return fail(err::kProtoUnauthBulk);
      bulk_len_ = len;
      cursor_ = cr + 2;
    }
    const std::size_t need = cursor_ + static_cast<std::size_t>(bulk_len_) + 2;
    if (data.size() < need) {
      bytes_needed_ = need;
      return Status::kIncomplete;
    }
    spans_.emplace_back(cursor_, static_cast<std::size_t>(bulk_len_));
    cursor_ = need;  // the trailing CRLF is skipped unchecked, as Redis does
    bulk_len_ = -1;
  }
  return finish(data);
}

RequestParser::Status RequestParser::finish(std::string_view data) {
  for (const auto& [off, len] : spans_) args_.emplace_back(data.data() + off, len);
  const std::size_t consumed = cursor_;
  reset();
  consumed_ = consumed;
  return Status::kCommand;
}

namespace {
bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

bool split_inline_args(std::string_view line, std::vector<std::string>* out) {
  std::size_t i = 0;
  const std::size_t n = line.size();
  while (true) {
    while (i < n && is_blank(line[i])) ++i;
    if (i >= n) return true;
    std::string current;
    bool in_double = false, in_single = false, done = false;
    while (!done) {
      if (in_double) {
        if (i >= n) return false;  // unterminated
        const char c = line[i];
        if (c == '\\' && i + 3 < n && line[i + 1] == 'x' && hex_value(line[i + 2]) >= 0 &&
            hex_value(line[i + 3]) >= 0) {
          current.push_back(static_cast<char>(hex_value(line[i + 2]) * 16 + hex_value(line[i + 3])));
          i += 3;
        } else if (c == '\\' && i + 1 < n) {
          ++i;
          switch (line[i]) {
            case 'n': current.push_back('\n'); break;
            case 'r': current.push_back('\r'); break;
            case 't': current.push_back('\t'); break;
            case 'b': current.push_back('\b'); break;
            case 'a': current.push_back('\a'); break;
            default: current.push_back(line[i]); break;
          }
        } else if (c == '"') {
          if (i + 1 < n && !is_blank(line[i + 1])) return false;
          done = true;
        } else {
          current.push_back(c);
        }
      } else if (in_single) {
        if (i >= n) return false;
        const char c = line[i];
        if (c == '\\' && i + 1 < n && line[i + 1] == '\'') {
          ++i;
          current.push_back('\'');
        } else if (c == '\'') {
          if (i + 1 < n && !is_blank(line[i + 1])) return false;
          done = true;
        } else {
          current.push_back(c);
        }
      } else {
        if (i >= n) {
          done = true;
          break;
        }
        const char c = line[i];
        if (is_blank(c)) {
          done = true;
        } else if (c == '"') {
          in_double = true;
        } else if (c == '\'') {
          in_single = true;
        } else {
          current.push_back(c);
        }
      }
      if (i < n) ++i;
    }
    out->push_back(std::move(current));
  }
}

}  // namespace kvlab::server
