// What the stream family's three files share (streams.cpp, streams_groups.cpp, streams_read.cpp):
// ID parsing and replies, the error texts particular to streams, and the handlers that the
// command table in streams.cpp names. Not for use outside the stream family.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/commands/common.hpp"
#include "server/commands/containers.hpp"
#include "server/data/stream.hpp"

namespace kvlab::server {

// streamGenericParseIDOrReply: "-" and "+" (unless strict), "<ms>" (seq = missing_seq),
// "<ms>-<seq>", and, where seq_given is asked for, "<ms>-*". The argument is read as a C string
// (up to its first NUL), as Redis copies it into a 128-byte buffer.
bool parse_id(std::string_view arg, StreamId* id, std::uint64_t missing_seq, bool strict,
              bool* seq_given = nullptr);

bool arg_id(CommandContext& ctx, std::string_view arg, StreamId* id, std::uint64_t missing_seq,
            bool strict, bool* seq_given = nullptr);

// streamParseIntervalIDOrReply: "(" before an ID excludes it (strict inside).
bool arg_interval_id(CommandContext& ctx, std::string_view arg, StreamId* id, bool* exclude,
                     std::uint64_t missing_seq);

void reply_id(ReplyWriter& r, StreamId id);

void reply_entry(ReplyWriter& r, StreamId id, const Stream::Fields& f);

// The entries in [start, end] (end = nullopt: to the end), at most count (0: all), in order or
// reversed; returns the number emitted after the array header.
std::size_t reply_range(ReplyWriter& r, const Stream& s, StreamId start, StreamId end,
                        std::size_t count, bool rev);

// An argument as Redis's "%s" prints it: up to its first NUL.
std::string cstr(std::string_view s);

// XINFO GROUPS key
void xinfo_groups_cmd(CommandContext& ctx);

// XINFO CONSUMERS key group
void xinfo_consumers_cmd(CommandContext& ctx);

// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n]
void xgroup_create_cmd(CommandContext& ctx);

// XGROUP SETID key group id|$ [ENTRIESREAD n]
void xgroup_setid_cmd(CommandContext& ctx);

void xgroup_destroy_cmd(CommandContext& ctx);

void xgroup_createconsumer_cmd(CommandContext& ctx);

void xgroup_delconsumer_cmd(CommandContext& ctx);

void xgroup_help_cmd(CommandContext& ctx);

void xgroup_without_sub(CommandContext& ctx);

// XACK key group id [id ...]
void xack_cmd(CommandContext& ctx);

// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
void xpending_cmd(CommandContext& ctx);

// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-ms]
// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]
void xclaim_cmd(CommandContext& ctx);

// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
void xautoclaim_cmd(CommandContext& ctx);

// XREAD's keys: the first half of what follows STREAMS (rounded down, as Redis's key spec counts
// them), found as the parser finds it.
bool xread_keys(std::span<const std::string_view> argv, std::vector<std::size_t>* out);

void xread_cmd(CommandContext& ctx);

// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...]
// id|> [id|> ...]. ">" reads new entries (and adds them to the PEL unless NOACK); an ID reads the
// consumer's own pending history after it.
void xreadgroup_cmd(CommandContext& ctx);

}  // namespace kvlab::server
