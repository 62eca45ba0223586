// Redis 7.0's key-spec flags, for COMMAND GETKEYSANDFLAGS: what a command does with each of its
// keys. RW / RO / OW (overwrite: the old value is not read) / RM (remove) say how the key is
// used; access (the value is read or returned), update, insert and delete say what happens to
// the value. The rows are redis-server 7.0.15's key specs (COMMAND INFO), one per command that
// has keys, reduced to what GETKEYSANDFLAGS needs: the flags of a command's first key and, when
// they differ, of its other keys. That reduction holds for every command kvlab has: a command
// with two key specs lists the first spec's one key first (LMOVE's source, ZUNIONSTORE's
// destination, SORT's key, COPY's source...) and the second's after it; SORT's pattern spec (BY,
// GET) names no key that GETKEYS returns. Two commands' flags depend on their arguments, as
// Redis's "variable_flags" say: SET (with GET it reads the old value) and BITFIELD (read-only
// when it only GETs and sets OVERFLOW).
//
// Thread safety: the table is constant.
#include <algorithm>
#include <iterator>
#include <span>
#include <string_view>

#include "server/core/command.hpp"
#include "server/util/strings_util.hpp"

namespace kvlab::server {
namespace {

struct KeyFlagsRow {
  std::string_view command;    // "object|encoding" for a subcommand
  std::string_view first;      // the first key's flags
  std::string_view rest = {};  // the other keys' flags; empty: the same as the first's
};

// Sorted by command name (checked below), for a binary search.
constexpr KeyFlagsRow kKeyFlags[] = {
    {"append", "RW insert"},
    {"bitcount", "RO access"},
    {"bitfield", "RW access update"},
    {"bitfield_ro", "RO access"},
    {"bitop", "OW update", "RO access"},
    {"bitpos", "RO access"},
    {"blmove", "RW access delete", "RW insert"},
    {"blmpop", "RW access delete"},
    {"blpop", "RW access delete"},
    {"brpop", "RW access delete"},
    {"brpoplpush", "RW access delete", "RW insert"},
    {"bzmpop", "RW access delete"},
    {"bzpopmax", "RW access delete"},
    {"bzpopmin", "RW access delete"},
    {"copy", "RO access", "OW update"},
    {"decr", "RW access update"},
    {"decrby", "RW access update"},
    {"del", "RM delete"},
    {"dump", "RO access"},
    {"eval", "RW access update"},
    {"eval_ro", "RO access"},
    {"evalsha", "RW access update"},
    {"evalsha_ro", "RO access"},
    {"exists", "RO"},
    {"expire", "RW update"},
    {"expireat", "RW update"},
    {"expiretime", "RO access"},
    {"fcall", "RW access update"},
    {"fcall_ro", "RO access"},
    {"geoadd", "RW update"},
    {"geodist", "RO access"},
    {"geohash", "RO access"},
    {"geopos", "RO access"},
    {"georadius", "RO access", "OW update"},
    {"georadius_ro", "RO access"},
    {"georadiusbymember", "RO access", "OW update"},
    {"georadiusbymember_ro", "RO access"},
    {"geosearch", "RO access"},
    {"geosearchstore", "OW update", "RO access"},
    {"get", "RO access"},
    {"getbit", "RO access"},
    {"getdel", "RW access delete"},
    {"getex", "RW access update"},
    {"getrange", "RO access"},
    {"getset", "RW access update"},
    {"hdel", "RW delete"},
    {"hexists", "RO"},
    {"hget", "RO access"},
    {"hgetall", "RO access"},
    {"hincrby", "RW access update"},
    {"hincrbyfloat", "RW access update"},
    {"hkeys", "RO access"},
    {"hlen", "RO"},
    {"hmget", "RO access"},
    {"hmset", "RW update"},
    {"hrandfield", "RO access"},
    {"hscan", "RO access"},
    {"hset", "RW update"},
    {"hsetnx", "RW insert"},
    {"hstrlen", "RO"},
    {"hvals", "RO access"},
    {"incr", "RW access update"},
    {"incrby", "RW access update"},
    {"incrbyfloat", "RW access update"},
    {"lcs", "RO access"},
    {"lindex", "RO access"},
    {"linsert", "RW insert"},
    {"llen", "RO"},
    {"lmove", "RW access delete", "RW insert"},
    {"lmpop", "RW access delete"},
    {"lpop", "RW access delete"},
    {"lpos", "RO access"},
    {"lpush", "RW insert"},
    {"lpushx", "RW insert"},
    {"lrange", "RO access"},
    {"lrem", "RW delete"},
    {"lset", "RW update"},
    {"ltrim", "RW delete"},
    {"memory|usage", "RO"},
    {"mget", "RO access"},
    {"migrate", "RW access delete"},
    {"move", "RW access update"},
    {"mset", "OW update"},
    {"msetnx", "OW insert"},
    {"object|encoding", "RO"},
    {"object|freq", "RO"},
    {"object|idletime", "RO"},
    {"object|refcount", "RO"},
    {"persist", "RW update"},
    {"pexpire", "RW update"},
    {"pexpireat", "RW update"},
    {"pexpiretime", "RO access"},
    {"pfadd", "RW insert"},
    {"pfcount", "RW access"},
    {"pfdebug", "RW access"},
    {"pfmerge", "RW access insert", "RO access"},
    {"psetex", "OW update"},
    {"pttl", "RO access"},
    {"rename", "RW access delete", "OW update"},
    {"renamenx", "RW access delete", "OW insert"},
    {"restore", "OW update"},
    {"restore-asking", "OW update"},
    {"rpop", "RW access delete"},
    {"rpoplpush", "RW access delete", "RW insert"},
    {"rpush", "RW insert"},
    {"rpushx", "RW insert"},
    {"sadd", "RW insert"},
    {"scard", "RO"},
    {"sdiff", "RO access"},
    {"sdiffstore", "OW update", "RO access"},
    {"set", "RW access update"},
    {"setbit", "RW access update"},
    {"setex", "OW update"},
    {"setnx", "OW insert"},
    {"setrange", "RW update"},
    {"sinter", "RO access"},
    {"sintercard", "RO access"},
    {"sinterstore", "RW update", "RO access"},
    {"sismember", "RO"},
    {"smembers", "RO access"},
    {"smismember", "RO access"},
    {"smove", "RW access delete", "RW insert"},
    {"sort", "RO access", "OW update"},
    {"sort_ro", "RO access"},
    {"spop", "RW access delete"},
    {"spublish", "not_key"},
    {"srandmember", "RO access"},
    {"srem", "RW delete"},
    {"sscan", "RO access"},
    {"ssubscribe", "not_key"},
    {"strlen", "RO"},
    {"substr", "RO access"},
    {"sunion", "RO access"},
    {"sunionstore", "OW update", "RO access"},
    {"sunsubscribe", "not_key"},
    {"touch", "RO"},
    {"ttl", "RO access"},
    {"type", "RO"},
    {"unlink", "RM delete"},
    {"watch", "RO"},
    {"xack", "RW update"},
    {"xadd", "RW update"},
    {"xautoclaim", "RW delete"},
    {"xclaim", "RW update"},
    {"xdel", "RW delete"},
    {"xgroup|create", "RW insert"},
    {"xgroup|createconsumer", "RW insert"},
    {"xgroup|delconsumer", "RW delete"},
    {"xgroup|destroy", "RW delete"},
    {"xgroup|setid", "RW update"},
    {"xinfo|consumers", "RO access"},
    {"xinfo|groups", "RO access"},
    {"xinfo|stream", "RO access"},
    {"xlen", "RO"},
    {"xpending", "RO access"},
    {"xrange", "RO access"},
    {"xread", "RO access"},
    {"xreadgroup", "RO access"},
    {"xrevrange", "RO access"},
    {"xsetid", "RW update"},
    {"xtrim", "RW delete"},
    {"zadd", "RW update"},
    {"zcard", "RO"},
    {"zcount", "RO access"},
    {"zdiff", "RO access"},
    {"zdiffstore", "OW update", "RO access"},
    {"zincrby", "RW access update"},
    {"zinter", "RO access"},
    {"zintercard", "RO access"},
    {"zinterstore", "OW update", "RO access"},
    {"zlexcount", "RO access"},
    {"zmpop", "RW access delete"},
    {"zmscore", "RO access"},
    {"zpopmax", "RW access delete"},
    {"zpopmin", "RW access delete"},
    {"zrandmember", "RO access"},
    {"zrange", "RO access"},
    {"zrangebylex", "RO access"},
    {"zrangebyscore", "RO access"},
    {"zrangestore", "OW update", "RO access"},
    {"zrank", "RO access"},
    {"zrem", "RW delete"},
    {"zremrangebylex", "RW delete"},
    {"zremrangebyrank", "RW delete"},
    {"zremrangebyscore", "RW delete"},
    {"zrevrange", "RO access"},
    {"zrevrangebylex", "RO access"},
    {"zrevrangebyscore", "RO access"},
    {"zrevrank", "RO access"},
    {"zscan", "RO access"},
    {"zscore", "RO access"},
    {"zunion", "RO access"},
    {"zunionstore", "OW update", "RO access"},
};

constexpr bool sorted_by_name() {
  for (std::size_t i = 1; i < std::size(kKeyFlags); ++i)
    if (!(kKeyFlags[i - 1].command < kKeyFlags[i].command)) return false;
  return true;
}
static_assert(sorted_by_name(), "kKeyFlags must be sorted by command name");

// BITFIELD reads only when its arguments are GET type offset and OVERFLOW behaviour, complete,
// and nothing else (Redis's reading of them, before any is validated).
bool bitfield_reads_only(std::span<const std::string_view> argv) {
  std::size_t i = 2;
  while (i < argv.size()) {
    const std::size_t left = argv.size() - i - 1;
    if (iequals(argv[i], "get") && left >= 2) {
      i += 3;
    } else if (iequals(argv[i], "overflow") && left >= 1) {
      i += 2;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string_view key_flags(const CommandSpec& c, std::string_view full_name,
                           std::span<const std::string_view> argv, std::size_t nth) {
  if (full_name == "set") {
    for (std::size_t i = 3; i < argv.size(); ++i)
      if (iequals(argv[i], "get")) return "RW access update";
    return "OW update";
  }
  if (full_name == "bitfield") return bitfield_reads_only(argv) ? "RO access" : "RW access update";
  const auto* row = std::lower_bound(
      std::begin(kKeyFlags), std::end(kKeyFlags), full_name,
      [](const KeyFlagsRow& r, std::string_view name) { return r.command < name; });
  if (row != std::end(kKeyFlags) && row->command == full_name)
    return nth == 0 || row->rest.empty() ? row->first : row->rest;
  // A command Redis 7.0 does not have: what its flags say.
  if (c.flags & kChannelKeys) return "not_key";
  return (c.flags & kWrite) ? "RW access update" : "RO access";
}

}  // namespace kvlab::server
