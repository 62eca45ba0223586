// DUMP, RESTORE and RESTORE-ASKING: a value in Redis's RDB encoding (server/data/rdb.hpp), so that
// values of every type, streams included, move between kvlab-server and redis-server 7.0 with DUMP
// on one side and RESTORE on the other.
//
// RESTORE's checks run in Redis 7.0's order: the options, then BUSYKEY (without REPLACE), then
// the TTL, then the payload's version and CRC, then its value. A TTL already in the past (ABSTTL)
// leaves the key deleted (REPLACE) or untouched and answers OK. IDLETIME and FREQ are validated
// as Redis does and set the new value's access word as Redis's objectSetLRUOrLFU (FREQ under an
// LFU policy, IDLETIME under the others; eviction.hpp), before the value is published.
#include <limits>
#include <string>

#include "server/commands/args.hpp"
#include "server/commands/common.hpp"
#include "server/data/container.hpp"
#include "server/data/rdb.hpp"

namespace kvlab::server {
namespace {

// The key's live value (a container emptied meanwhile counts as absent). read_lookup: as
// read_live's (RESTORE looks its key up as a write: no "keymiss").
bool live_value(CommandContext& ctx, std::string_view key, Value* out, bool read_lookup = true) {
  bool dead = false;
  const bool found = read_live(
      ctx, key,
      [&](const Value& v) {
        dead = live_container_is_dead(v);
        if (!dead) *out = v;
      },
      true, read_lookup);
  return found && !dead;
}

// DUMP key: the serialized value, or nil when the key does not exist.
void dump_cmd(CommandContext& ctx) {
  Value v;
  std::string payload;
  if (!live_value(ctx, ctx.arg(1), &v)) {
    ctx.reply.null();
    return;
  }
  if (!rdb::dump_value(v.obj, &payload)) {
    ctx.reply.null();  // a container emptied meanwhile: the key is gone
    return;
  }
  ctx.reply.bulk(payload);
}

// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
void restore_cmd(CommandContext& ctx) {
  bool replace = false, absttl = false, idle = false, freq = false;
  std::int64_t idle_s = -1, freq_n = -1;
  ArgParser p(ctx.argv, 4);
  while (!p.done()) {
    if (p.check("replace")) {
      replace = true;
    } else if (p.check("absttl")) {
      absttl = true;
    } else if (!freq && p.check("idletime", 1)) {  // IDLETIME and FREQ exclude each other
      idle_s = p.next_int(0, std::numeric_limits<std::int64_t>::max(), err::kRestoreBadIdletime);
      idle = true;
    } else if (!idle && p.check("freq", 1)) {
      freq_n = p.next_int(0, 255, err::kRestoreBadFreq);
      freq = true;
    } else {
      p.fail(err::kSyntax);
    }
  }
  if (p.reply_error(ctx.reply)) return;
  const std::string_view key = ctx.arg(1);
  Value existing;
  if (!replace && live_value(ctx, key, &existing, false)) {
    ctx.reply.error(err::kBusyKey);
    return;
  }
  std::int64_t ttl = 0;
  if (!arg_i64(ctx, ctx.arg(2), &ttl)) return;
  if (ttl < 0) {
    ctx.reply.error(err::kRestoreBadTtl);
    return;
  }
  ObjectRef obj;
  switch (rdb::load_payload(ctx.arg(3), &obj)) {
    case rdb::LoadStatus::kBadVersionOrChecksum:
      ctx.reply.error(err::kDumpPayload);
      return;
    case rdb::LoadStatus::kBadFormat:
      ctx.reply.error(err::kBadDataFormat);
      return;
    case rdb::LoadStatus::kOk:
      break;
  }
  std::int64_t expire_ms = ttl;
  if (ttl != 0 && !absttl) {
    // Redis adds without an overflow check; the wrapped time is in the past, so the key is
    // "already expired". Reproduce that outcome without the signed overflow.
    expire_ms = ttl > std::numeric_limits<std::int64_t>::max() - ctx.now_ms
                    ? std::numeric_limits<std::int64_t>::min()
                    : ttl + ctx.now_ms;
  }
  if (ttl != 0 && expire_ms <= ctx.now_ms) {
    if (replace && ctx.ks.erase(key)) notify_keyspace_event(ctx, kNotifyGeneric, "del", key);
    ctx.reply.ok();
    return;
  }
  // Redis's RESTORE deletes and adds (no LFU carry from a replaced value): insert_or_assign.
  ctx.server.eviction().restore_access(*obj, idle_s, static_cast<int>(freq_n), ctx.now_ms);
  // REPLACE deletes and adds the key anew: "new" even over an existing key, as Redis.
  if (!ctx.ks.insert_or_assign(key, Value{std::move(obj), expire_ms}))
    notify_keyspace_event(ctx, kNotifyNew, "new", key);
  if (expire_ms != 0) ctx.worker.track_expiry(key, expire_ms);
  notify_keyspace_event(ctx, kNotifyGeneric, "restore", key);
  ctx.reply.ok();
}

constexpr CommandSpec kDumpCommands[] = {
    {"dump", 2, kReadOnly, dump_cmd, 1, 1, 1, "generic",
     "Return a serialized version of the value stored at the specified key.", "key", "2.6.0",
     "O(1) to access the key and additional O(N*M) to serialize it"},
    {"restore", -4, kWrite | kDenyOom, restore_cmd, 1, 1, 1, "generic",
     "Create a key using the provided serialized value, previously obtained using DUMP.",
     "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]", "2.6.0",
     "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value"},
    {"restore-asking", -4, kWrite | kDenyOom, restore_cmd, 1, 1, 1, "server",
     "An internal command for migrating keys in a cluster (kvlab: RESTORE)",
     "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]", "3.0.0",
     "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value"},
};

}  // namespace

std::span<const CommandSpec> dump_commands() {
  return kDumpCommands;
}

}  // namespace kvlab::server
