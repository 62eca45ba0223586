// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
//         [AUTH2 username password] [KEYS key [key ...]]
//
// Moves keys to another server (Redis, or kvlab) as Redis 7.0 does: each key travels as
// RESTORE (RESTORE-ASKING in cluster mode) key <ttl> <DUMP payload> [REPLACE], preceded by AUTH
// and SELECT when needed, all written at once; each key the target acknowledged is then deleted
// here (kept with COPY). The reply is +OK, +NOKEY when none of the keys exists, "ERR Target
// instance replied with error: ..." for the target's first error (the keys it refused stay), or
// -IOERR when the connection fails or times out (nothing was deleted that the target did not
// acknowledge).
//
// Atomicity: MIGRATE escalates over its keys (kEscalate), so no other command touches them from
// the moment they are read until the acknowledged ones are deleted: the network round trip runs
// under their locks, as Redis's MIGRATE blocks the whole server. The worker running it serves
// nothing else meanwhile (bounded by the timeout, which applies to the connect and to every read
// and write, as in Redis). Two servers migrating to each other at once can wait on each other
// until that timeout, as two Redis servers do.
//
// Connections are cached per worker thread and per host:port, with the database last selected on
// each, and closed after 10 s unused (by the worker's loop, which wakes for it, as Redis's cron
// does, and when MIGRATE next runs on that worker) or on an error; a failure on a cached
// connection before any reply is retried once on a new connection, unless it was a timeout
// (Redis's migrateGetSocket cache and retry rule). INFO's migrate_cached_sockets sums the
// workers' caches.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/features/cluster.hpp"
#include "server/features/migrate_sockets.hpp"
#include "server/commands/args.hpp"
#include "server/commands/common.hpp"
#include "server/data/container.hpp"
#include "server/data/rdb.hpp"
#include "server/net/server.hpp"

#if KVLAB_SERVER_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

namespace kvlab::server {
namespace {

using U = Update<Value>;

// The keys of MIGRATE for the atomicity layer and COMMAND GETKEYS: argv[3], or, in the extended
// form (argv[3] empty and a KEYS option), the arguments after KEYS; AUTH and AUTH2 take their
// arguments, which are never keys.
bool migrate_keys(std::span<const std::string_view> argv, std::vector<std::size_t>* out) {
  for (std::size_t i = 6; i < argv.size(); ++i) {
    if (iequals(argv[i], "auth2")) {
      i += 2;
    } else if (iequals(argv[i], "auth")) {
      i += 1;
    } else if (iequals(argv[i], "keys")) {
      if (!argv[3].empty()) return true;  // the handler refuses it; argv[3] stays the key
      std::erase(*out, std::size_t{3});
      for (std::size_t k = i + 1; k < argv.size(); ++k) out->push_back(k);
      return true;
    }
  }
  return true;
}

#if KVLAB_SERVER_HAVE_HIREDIS

struct Moving {
  std::string_view key;
  std::string payload;
  std::int64_t ttl_ms;  // 0: no TTL
};
#endif

void migrate_cmd(CommandContext& ctx) {
  bool copy = false, replace = false;
  std::string_view username, password;
  bool has_password = false, has_username = false;
  std::size_t first_key = 3, num_keys = 1;
  ArgParser p(ctx.argv, 6);
  while (!p.done()) {
    if (p.check("copy")) {
      copy = true;
    } else if (p.check("replace")) {
      replace = true;
    } else if (p.check("auth", 1)) {
      password = p.next();
      has_password = true;
    } else if (p.check("auth2", 2)) {
      username = p.next();
      password = p.next();
      has_password = has_username = true;
    } else if (p.check("keys")) {  // the rest are the keys
      if (!ctx.arg(3).empty()) {
        p.fail(err::kMigrateKeysNeedsEmpty);
        break;
      }
      first_key = p.index();
      num_keys = p.left();
      break;
    } else {
      p.fail(err::kSyntax);
    }
  }
  if (p.reply_error(ctx.reply)) return;
  std::int64_t timeout = 0, db = 0;
  if (!arg_i64(ctx, ctx.arg(5), &timeout) || !arg_i64(ctx, ctx.arg(4), &db)) return;
  if (timeout <= 0) timeout = 1000;

#if !KVLAB_SERVER_HAVE_HIREDIS
  (void)copy, (void)replace, (void)first_key, (void)num_keys, (void)has_username;
  ctx.reply.error(err::kMigrateNoHiredis);
#else
  // The keys here, serialized now: nothing changes them until this command ends (its locks).
  std::vector<Moving> moving;
  for (std::size_t j = 0; j < num_keys; ++j) {
    const std::string_view key = ctx.arg(first_key + j);
    Value v;
    bool dead = false;
    if (!read_live(ctx, key,
                   [&](const Value& cur) {
                     dead = live_container_is_dead(cur);
                     if (!dead) v = cur;
                   }) ||
        dead)
      continue;
    Moving m{key, {}, 0};
    if (!rdb::dump_value(v.obj, &m.payload)) continue;  // emptied meanwhile: gone
    if (v.expire_ms != 0) m.ttl_ms = std::max<std::int64_t>(1, v.expire_ms - ctx.now_ms);
    moving.push_back(std::move(m));
  }
  if (moving.empty()) {
    ctx.reply.simple("NOKEY");
    return;
  }
  set_migrate_gauge(&ctx.server.stats(ctx.worker.index()).migrate_sockets);
  const std::string host(ctx.arg(1));
  const std::string_view port = ctx.arg(2);
  const bool cluster = ctx.server.cluster().enabled();
  const std::string db_text = std::to_string(db);
  bool may_retry = true;
  for (;;) {
    bool write_error = false;
    CachedSocket* s = get_migrate_socket(host, port, timeout, ctx.now_ms);
    redisContext* c = s != nullptr ? s->ctx.get() : nullptr;
    if (c == nullptr) {
      // Redis connects without waiting and finds the refusal when it writes.
      ctx.reply.error(err::kIoErrWrite);
      return;
    }
    if (has_password) {
      if (has_username) {
        const char* argv[] = {"AUTH", username.data(), password.data()};
        const std::size_t lens[] = {4, username.size(), password.size()};
        redisAppendCommandArgv(c, 3, argv, lens);
      } else {
        const char* argv[] = {"AUTH", password.data()};
        const std::size_t lens[] = {4, password.size()};
        redisAppendCommandArgv(c, 2, argv, lens);
      }
    }
    const bool select = s->last_db != db;
    if (select) {
      const char* argv[] = {"SELECT", db_text.data()};
      const std::size_t lens[] = {6, db_text.size()};
      redisAppendCommandArgv(c, 2, argv, lens);
    }
    for (const Moving& m : moving) {
      const std::string ttl = std::to_string(m.ttl_ms);
      const char* argv[] = {cluster ? "RESTORE-ASKING" : "RESTORE", m.key.data(), ttl.data(),
                            m.payload.data(), "REPLACE"};
      const std::size_t lens[] = {cluster ? std::size_t{14} : std::size_t{7}, m.key.size(),
                                  ttl.size(), m.payload.size(), 7};
      redisAppendCommandArgv(c, replace ? 5 : 4, argv, lens);
    }
    int done = 0;
    while (!done) {
      if (redisBufferWrite(c, &done) != REDIS_OK) {
        write_error = true;
        break;
      }
    }
    // The replies: AUTH's, SELECT's, then one per key. The first error wins the reply.
    std::string target_error;
    bool socket_error = false;
    std::size_t answered = 0;
    auto read_one = [&](std::string* err) {
      void* raw = nullptr;
      if (redisGetReply(c, &raw) != REDIS_OK || raw == nullptr) return false;
      auto* r = static_cast<redisReply*>(raw);
      if (r->type == REDIS_REPLY_ERROR && err->empty()) err->assign(r->str, r->len);
      freeReplyObject(r);
      return true;
    };
    std::string auth_error, select_error;
    if (!write_error &&
        ((has_password && !read_one(&auth_error)) || (select && !read_one(&select_error))))
      socket_error = true;
    for (; !write_error && !socket_error && answered < moving.size(); ++answered) {
      std::string key_error;
      if (!read_one(&key_error)) {
        socket_error = true;
        break;
      }
      const std::string& e = !auth_error.empty()     ? auth_error
                             : !select_error.empty() ? select_error
                                                     : key_error;
      if (!e.empty()) {
        if (target_error.empty()) target_error = e;
      } else if (!copy) {
        bool existed = false;
        ctx.ks.update(moving[answered].key, [&](const Value* cur) {
          existed = cur != nullptr;
          return cur != nullptr ? U::erase() : U::keep();
        });
        if (existed) notify_keyspace_event(ctx, kNotifyGeneric, "del", moving[answered].key);
      }
    }
    const bool timeout_hit = (write_error || socket_error) && migrate_timed_out(c);
    if (!target_error.empty()) s->last_db = -1;  // the target may not have selected it
    if (write_error || socket_error) close_migrate_socket(host, port);  // invalidates s and c
    if (!target_error.empty()) {
      ctx.reply.error(err::migrate_target_error(target_error));
      return;
    }
    if (write_error || socket_error) {
      // Retried once on a fresh connection when nothing was answered yet (a cached socket the
      // target closed), unless the time ran out.
      if (answered == 0 && may_retry && !timeout_hit) {
        may_retry = false;
        continue;
      }
      ctx.reply.error(write_error ? err::kIoErrWrite : err::kIoErrRead);
      return;
    }
    s->last_db = db;
    ctx.reply.ok();
    return;
  }
#endif
}

constexpr CommandSpec kMigrateCommands[] = {
    {"migrate",
     -6,
     kWrite | kEscalate,
     migrate_cmd,
     3,
     3,
     1,
     "generic",
     "Move keys to another server atomically: DUMP and DEL here, RESTORE there",
     "host port key|\"\" destination-db timeout [COPY] [REPLACE] [AUTH password] "
     "[AUTH2 username password] [KEYS key [key ...]]",
     "2.6.0",
     "O(N) in the size of the values moved: their serialization, transfer and deletion",
     {},
     migrate_keys},
};

}  // namespace

std::span<const CommandSpec> migrate_commands() {
  return kMigrateCommands;
}


}  // namespace kvlab::server
