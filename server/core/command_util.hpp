// Small helpers every command handler uses, and the parts of the server below the command layer
// (dispatch, scripting, the worker) with them: integer arguments with Redis's error text, HELP
// replies, the live value among what an update sees, a worker's own counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "server/core/command.hpp"
#include "server/data/object.hpp"
#include "server/protocol/errors.hpp"
#include "server/protocol/reply.hpp"
#include "server/util/strings_util.hpp"

namespace kvlab::server {

// The live value among what update() passes in: nullptr when absent or expired.
inline const Value* live(const Value* v, std::int64_t now_ms) {
  return (v != nullptr && !v->expired_at(now_ms)) ? v : nullptr;
}

// Parses an integer argument; on failure replies "value is not an integer" and returns false.
inline bool arg_i64(CommandContext& ctx, std::string_view s, std::int64_t* out) {
  if (parse_i64(s, out)) return true;
  ctx.reply.error(err::kNotInteger);
  return false;
}

inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) {
  // Single writer (the owning worker): a plain load/store pair avoids a locked instruction.
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// The lower-cased command name, for error messages ("invalid expire time in 'set' command").
inline std::string lower_name(std::string_view s) {
  std::string out;
  to_lower(s, &out);
  return out;
}

// A HELP subcommand's reply: one status line each.
inline void reply_help(CommandContext& ctx, std::initializer_list<std::string_view> lines) {
  ctx.reply.array(lines.size());
  for (auto l : lines) ctx.reply.simple(l);
}

}  // namespace kvlab::server
