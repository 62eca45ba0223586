// The argument parser of command handlers: a cursor over a command's arguments, in the spirit of
// Dragonfly's CmdArgParser, that knows Redis's argument errors so that handlers do not spell
// them. One parser for every handler keeps the rules in one place (STYLE.md, point 14): an option
// name matches ignoring ASCII case; an integer follows Redis's string2ll (no blanks, no '+', no
// leading zeros); a bad integer answers "value is not an integer or out of range" unless the
// handler names Redis's own text for that option; numkeys forms check the count, then that the
// keys fit, in Redis's order.
//
//   ArgParser p(ctx.argv, 3);              // options start at argv[3]
//   while (!p.done()) {                    // done() after the first error too
//     if (p.check("REPLACE")) replace = true;
//     else if (p.check("DB", 1)) db = p.next_int();
//     else p.fail(err::kSyntax);
//   }
//   if (p.reply_error(ctx.reply)) return;
//
// The first error sticks: after it, next() returns an empty view, next_int() 0, check() false,
// and nothing moves; so a handler may read a whole clause (LIMIT offset count) and look at ok()
// once. A handler that must reply at once (a value that fails a lookup) may still do so itself.
//
// Names compare as whole arguments by default. Redis compares most options with strcasecmp on
// the argument's C string, so "asc\0x" is ASC there; handlers that already answered that way
// (GEO*) construct the parser with Match::kCString to keep it.
//
// Thread safety: none; a parser lives on one handler's stack and views argv, which outlives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "server/commands/scan_args.hpp"
#include "server/protocol/errors.hpp"
#include "server/protocol/reply.hpp"

namespace kvlab::server {

// The texts of a `numkeys key [key ...]` form, which differ by command in Redis.
struct NumkeysTexts {
  std::string_view not_integer;  // numkeys is not an integer
  std::string_view below_one;    // numkeys < 1
  std::string_view too_many;     // numkeys keys (and `after` more arguments) do not fit
  std::size_t after = 0;         // arguments that must follow the keys (LMPOP's side)
};
// SINTERCARD, ZINTERCARD: getRangeLongFromObjectOrReply(1, LONG_MAX, "numkeys should be ...").
inline constexpr NumkeysTexts kNumkeysCard{err::kNumkeysPositive, err::kNumkeysPositive,
                                           err::kNumkeysTooMany, 0};
// LMPOP, ZMPOP and their blocking forms: the keys and the side must fit, else a syntax error.
inline constexpr NumkeysTexts kNumkeysMultiPop{err::kNumkeysPositive, err::kNumkeysPositive,
                                               err::kSyntax, 1};

class ArgParser {
 public:
  enum class Match { kWhole, kCString };

  // Parses argv[first...].
  explicit ArgParser(std::span<const std::string_view> argv, std::size_t first = 1,
                     Match match = Match::kWhole)
      : argv_(argv), at_(first < argv.size() ? first : argv.size()), match_(match) {}
  // error_ may view owned_: a copy would view the original's.
  ArgParser(const ArgParser&) = delete;
  ArgParser& operator=(const ArgParser&) = delete;

  // True while no error was recorded.
  bool ok() const { return error_.empty(); }
  // No argument left (or an error recorded: nothing more is read).
  bool done() const { return !ok() || at_ == argv_.size(); }
  // The arguments not read yet.
  std::size_t left() const { return argv_.size() - at_; }
  // The argv index of the next argument.
  std::size_t index() const { return at_; }

  // The next argument without consuming it; empty when done().
  std::string_view peek() const { return done() ? std::string_view() : argv_[at_]; }
  // Consumes the next argument; records a syntax error when there is none.
  std::string_view next();
  // Consumes the next argument when it names `word` (ASCII case ignored) and at least `values`
  // arguments follow it (an option's values); otherwise consumes nothing and returns false.
  bool check(std::string_view word, std::size_t values = 0);

  // Consumes the next argument as an integer in [min, max]. Not an integer: `not_integer`
  // (Redis's "value is not an integer or out of range"); outside the range: `out_of_range`.
  // Records the error and returns 0 on failure.
  std::int64_t next_int(std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                        std::int64_t max = std::numeric_limits<std::int64_t>::max(),
                        std::string_view out_of_range = err::kNotInteger,
                        std::string_view not_integer = err::kNotInteger);

  // Consumes `numkeys key [key ...]` and returns the keys, checked in Redis's order: numkeys an
  // integer, at least 1, then that the keys and texts.after more arguments fit. Empty on error.
  std::span<const std::string_view> next_keys(const NumkeysTexts& texts);

  // Consumes the rest as SCAN options (server/commands/scan_args.hpp, the one parser of MATCH,
  // COUNT, TYPE and NOVALUES); `allowed` as there.
  void scan_options(unsigned allowed, ScanArgs* a);

  // Records `text` as the error unless one is recorded already (the first one wins).
  // REQUIRES: text outlives the parser (an errors.hpp constant) and is not empty.
  void fail(std::string_view text) {
    if (ok()) error_ = text;
  }
  // The same for a text built at run time (an errors.hpp function's result): kept here.
  void fail(std::string text) {
    if (!ok()) return;
    owned_ = std::move(text);
    error_ = owned_;
  }
  // The first recorded error; empty while ok(). Valid while the parser lives; a constant's view
  // (fail(std::string_view)) outlives it.
  std::string_view error() const { return error_; }
  // Replies the recorded error, if any; true when it did (the handler then returns).
  bool reply_error(ReplyWriter& reply) const {
    if (ok()) return false;
    reply.error(error_);
    return true;
  }

 private:
  std::span<const std::string_view> argv_;
  std::size_t at_;
  Match match_;
  // The first error, a full line as in errors.hpp; empty while ok(). Views an errors.hpp
  // constant or owned_.
  std::string_view error_;
  std::string owned_;
};

}  // namespace kvlab::server
