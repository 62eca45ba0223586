// The request side of RESP2: an incremental parser for multibulk commands (`*2\r\n$3\r\nGET\r\n
// $1\r\nk\r\n`) and inline commands (`PING\r\n`, `SET k "a b"\n`), as redis-cli, hiredis and
// redis-benchmark send them.
//
// The caller owns the bytes. It passes the parser everything received from the first byte of the
// command not yet parsed to the last byte read; when a call returns kIncomplete the caller reads
// more and calls again with the same prefix extended (it may move the bytes in memory meanwhile:
// the parser remembers offsets, never pointers). So a command split over any number of reads costs
// O(arguments) in total, not O(reads × bytes), and a 64 MiB bulk is scanned once.
//
// Limits are checked on the announced lengths, before the caller grows any buffer: a bulk is at
// most proto-max-bulk-len (the caller's max_bulk; Redis's default kMaxBulk, 512 MiB; any value up
// to 2^63 - 1 keeps the arithmetic in range, since offsets stay below the query buffer limit),
// an inline command or a length line at most
// kMaxInline (64 KiB), a multibulk count at most INT_MAX; an unauthenticated client may announce
// at most 10 arguments and 16 KiB per argument. A violation is a protocol error: the caller
// replies error() and closes the connection after the reply.
//
// Thread safety: none; one parser per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvlab::server {

class RequestParser {
 public:
  static constexpr std::size_t kMaxBulk = 512ull * 1024 * 1024;
  static constexpr std::size_t kMaxInline = 64 * 1024;
  static constexpr std::int64_t kMaxMultibulk = 2147483647;  // INT_MAX
  static constexpr std::int64_t kMaxUnauthArgs = 10;
  static constexpr std::int64_t kMaxUnauthBulk = 16384;

  enum class Status { kCommand, kIncomplete, kError };

  // Parses one command from data (see the file comment for what data must hold).
  //   kCommand: args() holds the arguments (possibly none: an empty line or `*0`, which the caller
  //             skips without a reply) and consumed() the bytes the command took. The views point
  //             into data (multibulk) or into the parser (inline) and stay valid until the next call.
  //   kIncomplete: more bytes are needed; bytes_needed() is the total length of data that would
  //             complete the current bulk (0 when unknown), so the caller can size its buffer once.
  //   kError: error() is the full error line (without '-'); the parser must not be used again
  //             except after reset().
  Status parse(std::string_view data, bool authenticated, std::uint64_t max_bulk = kMaxBulk);

  const std::vector<std::string_view>& args() const { return args_; }
  std::size_t consumed() const { return consumed_; }
  std::size_t bytes_needed() const { return bytes_needed_; }
  const std::string& error() const { return error_; }
  void reset();

 private:
  enum class Kind : std::uint8_t { kNone, kInline, kMultibulk };
  Status fail(std::string_view message);
  Status fail(std::string message);
  Status parse_inline(std::string_view data);
  Status parse_multibulk(std::string_view data, bool authenticated, std::uint64_t max_bulk);
  Status finish(std::string_view data);

  Kind kind_ = Kind::kNone;
  std::int64_t expected_ = -1;  // multibulk count; -1 until the header is parsed
  std::int64_t bulk_len_ = -1;  // length of the bulk being read; -1 until its header is parsed
  std::size_t cursor_ = 0;      // offset in data where parsing resumes
  std::vector<std::pair<std::size_t, std::size_t>> spans_;  // (offset, length) of each bulk
  std::vector<std::string> inline_args_;                  // unescaped inline arguments
  std::vector<std::string_view> args_;
  std::size_t consumed_ = 0;
  std::size_t bytes_needed_ = 0;
  std::string error_;
};

// Which arguments of a command are its keys, for scan_keys(): argv[first], argv[first + step], …
// up to argv[last] (a negative last counts from the end: -1 is the last argument).
struct KeyLayout {
  int first = 1;
  int last = 1;
  int step = 1;
};
// Fills *out for the command named name (byte for byte: the same name always gets the same
// answer, which the scan reuses for a run of one command); false when it does not know the
// command, or its keys follow no such layout: the scan then takes the second argument alone.
using KeyLayoutFn = bool (*)(std::string_view name, KeyLayout* out);

// Looks ahead over the complete multibulk commands at the start of data (at most max_commands of
// them) and stores their keys in keys (at most keys_max): the arguments layout() names for a
// command of three or more arguments, else (no layout, or layout() returned false) its second
// argument, the first key of nearly every command. Returns the number of commands walked and of
// keys stored: every key of every command walked, as the scan stops before a command whose keys
// no longer fit (but for the first command, of which it keeps the first keys_max keys). It also
// stops at the first command that is incomplete, inline, malformed or longer than 64 arguments,
// and checks no limit: it only feeds the keyspace's prefetch hint, and
// RequestParser still parses and checks every command.
struct KeyScan {
  std::size_t commands = 0;
  std::size_t keys = 0;
};
KeyScan scan_keys(std::string_view data, std::size_t max_commands, std::string_view* keys,
                  std::size_t keys_max, KeyLayoutFn layout = nullptr);

// Splits an inline command line into arguments with the quoting rules of Redis's sdssplitargs:
// blanks separate arguments; "double quotes" understand \n \r \t \b \a \\ \" and \xHH; 'single
// quotes' understand \'; a closing quote must be followed by a blank or the end of the line.
// Returns false for unbalanced quotes.
bool split_inline_args(std::string_view line, std::vector<std::string>* out);

}  // namespace kvlab::server
