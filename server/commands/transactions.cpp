// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, with Redis 7.0's rules (multi.c).
//
// - Between MULTI and EXEC, dispatch() queues every command but EXEC, DISCARD, MULTI, WATCH, QUIT
//   and RESET (kTxControl) and answers +QUEUED; a command that fails to queue (unknown, wrong
//   arity, not authenticated) makes EXEC answer EXECABORT.
// - EXEC runs the queued commands as one escalated operation over all their keys and the watched
//   ones (server/core/atomicity.hpp), so no other command sees or changes anything in between; a
//   queued command that walks the keyspace (KEYS, FLUSHALL) makes it an escalation over every key.
//   Errors of single commands are replied in place and do not roll anything back.
// - WATCH registers its keys inside an escalation (see server/features/db.hpp for why); EXEC answers a null
//   array when a watched key was touched since, or expired since it was watched.
#include <string>
#include <vector>

#include "server/core/atomicity.hpp"
#include "server/commands/common.hpp"
#include "server/net/session.hpp"

namespace kvlab::server {

void WatchRegistry::watch(WatchClient& c, std::string_view key, bool expired) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& k : c.keys)
    if (k->key == key) return;  // watched already
  c.keys.push_back(std::make_unique<WatchClient::Key>(WatchClient::Key{std::string(key), expired}));
  by_key_[std::string(key)].emplace_back(&c, c.keys.back().get());
  count_.fetch_add(1, std::memory_order_relaxed);  // relaxed: see the file comment of db.hpp
}

void WatchRegistry::unwatch_all(WatchClient& c) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& k : c.keys) {
    auto it = by_key_.find(k->key);
    if (it == by_key_.end()) continue;
    auto& v = it->second;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i].first == &c) {
        v[i] = v.back();
        v.pop_back();
        break;
      }
    }
    if (v.empty()) by_key_.erase(it);
    count_.fetch_sub(1, std::memory_order_relaxed);
  }
  c.keys.clear();
  c.dirty.store(false, std::memory_order_relaxed);
}

void WatchRegistry::touch(std::string_view key, bool now_absent) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_key_.find(std::string(key));
  if (it == by_key_.end()) return;
  for (auto& [c, k] : it->second) {
    if (k->expired_at_watch) {
      // Watched while already expired: its deletion changes nothing a client could have read.
      if (now_absent) {
        k->expired_at_watch = false;
        continue;
      }
    }
    c->dirty.store(true, std::memory_order_relaxed);
  }
}

void Db::clear() {
  watches_.touch_all([&](const std::string& key) { return ks_.find(key, [](const Value&) {}); });
  ks_.clear();
  if (eviction_ != nullptr) eviction_->on_clear();
  // Every key with waiters is now absent: as after DEL, a client blocked in XREADGROUP on one
  // is answered (its stream is gone), others keep waiting (ReadyKeys: a change that stores no
  // value wakes only stream waiters). Redis 7.0 does the same on FLUSHALL/FLUSHDB.
  if (blocking_.active() && ready_keys().collecting)
    for (const std::string& k : blocking_.keys()) ready_keys().add(k, false);
  // Noted even when nobody tracks now: the table may still hold the keys of clients that have
  // left (their entries go lazily), which a flush reclaims, as Redis's FLUSHALL does.
  tracking_note_flush();
}

namespace {

void multi_cmd(CommandContext& ctx) {
  if (ctx.conn.tx) {
    ctx.reply.error(err::kMultiNested);
    return;
  }
  ctx.conn.tx = std::make_unique<Connection::Transaction>();
  ctx.reply.ok();
}

void discard_cmd(CommandContext& ctx) {
  if (!ctx.conn.tx) {
    ctx.reply.error(err::kDiscardWithoutMulti);
    return;
  }
  discard_transaction(ctx.server, ctx.conn);
  ctx.reply.ok();
}

// Whether the watched key exists but its TTL has passed.
bool expired_now(CommandContext& ctx, std::string_view key) {
  bool expired = false;
  ctx.ks.find(key, [&](const Value& v) { expired = v.expired_at(ctx.now_ms); });
  return expired;
}

void watch_cmd(CommandContext& ctx) {
  if (ctx.conn.tx) {
    ctx.reply.error(err::kWatchInsideMulti);
    return;
  }
  if (!ctx.conn.watch) ctx.conn.watch = std::make_unique<WatchClient>();
  for (std::size_t i = 1; i < ctx.argc(); ++i)
    ctx.ks.watches().watch(*ctx.conn.watch, ctx.arg(i), expired_now(ctx, ctx.arg(i)));
  ctx.reply.ok();
}

void unwatch_cmd(CommandContext& ctx) {
  if (ctx.conn.watch) ctx.ks.watches().unwatch_all(*ctx.conn.watch);
  ctx.reply.ok();
}

void exec_cmd(CommandContext& ctx) {
  Connection& conn = ctx.conn;
  if (!conn.tx) {
    ctx.reply.error(err::kExecWithoutMulti);
    return;
  }
  const std::unique_ptr<Connection::Transaction> tx = std::move(conn.tx);
  if (tx->aborted) {
    discard_transaction(ctx.server, ctx.conn);
    ctx.reply.error(err::kExecAbort);
    return;
  }
  // Every key the queued commands name, and the watched ones.
  std::vector<std::vector<std::string_view>> argvs;
  argvs.reserve(tx->queued.size());
  std::vector<std::string_view> keys;
  std::vector<std::size_t> idx;
  bool wide = false;
  for (const auto& q : tx->queued) {
    argvs.emplace_back(q.begin(), q.end());
    const CommandSpec* c = CommandTable::instance().find(argvs.back()[0]);
    if (c == nullptr) continue;
    if (!c->subcommands.empty() && q.size() >= 2) {
      if (const CommandSpec* sub = CommandTable::find_sub(*c, q[1])) c = sub;
    }
    if (c->flags & (kKeyspaceWide | kSelfGated)) wide = true;
    if ((c->flags & kScript) && ctx.server.config().lua_undeclared_keys) wide = true;
    idx.clear();
    command_keys(*c, argvs.back(), &idx);
    for (std::size_t i : idx) keys.push_back(argvs.back()[i]);
  }
  const std::size_t command_key_count = keys.size();  // cluster routing ignores WATCH keys
  std::vector<std::string> watched;
  if (conn.watch) {
    for (const auto& k : conn.watch->keys) watched.push_back(k->key);
    for (const auto& k : watched) keys.push_back(k);
  }
  Atomicity& gate = ctx.server.atomicity();
  std::vector<std::uint32_t> held;
  gate.begin_multi(ctx.worker.index(), keys, wide, &held);
  if (!cluster_gate(ctx, {keys.data(), command_key_count})) {  // replied ASK, MOVED or TRYAGAIN
    gate.end_multi(ctx.worker.index(), &held);
    discard_transaction(ctx.server, ctx.conn);
    return;
  }
  BlockingRegistry& blocking = ctx.server.blocking();
  if (!wide && blocking.active()) {
    // A key with blocked clients: serving them may push anywhere (BLMOVE), so lock everything.
    bool waiters = false;
    for (std::string_view k : keys) waiters = waiters || blocking.has_waiters(k);
    if (waiters) {
      gate.end_multi(ctx.worker.index(), &held);
      wide = true;
      gate.begin_multi(ctx.worker.index(), {}, true, &held);
    }
  }
  const bool serving = wide && blocking.active();
  if (serving) ready_keys().start();
  const bool aborted = conn.watch != nullptr &&
                       (conn.watch->dirty.load(std::memory_order_relaxed) ||
                        ctx.ks.watches().any_expired(*conn.watch, [&](const std::string& k) {
                          return expired_now(ctx, k);
                        }));
  if (aborted) {
    ctx.reply.null_array();
  } else {
    ctx.reply.array(argvs.size());
    conn.in_exec = true;
    for (const auto& argv : argvs) {
      CommandContext sub{ctx.server, ctx.worker,      conn,      ctx.ks,
                         ctx.reply,  std::span(argv), ctx.now_ms};
      dispatch(sub);
      if (conn.close_after_reply) break;  // QUIT cannot be queued; a protocol-level close can
    }
    conn.in_exec = false;
  }
  if (serving) serve_blocked(ctx);
  gate.end_multi(ctx.worker.index(), &held);
  if (conn.watch) ctx.ks.watches().unwatch_all(*conn.watch);
}

const CommandSpec kTransactionCommands[] = {
    {"multi", 1, kLoading | kStale | kFast | kTxControl, multi_cmd, 0, 0, 0, "transactions",
     "Mark the start of a transaction block", "", "1.2.0"},
    {"exec", 1, kLoading | kStale | kTxControl | kSelfGated, exec_cmd, 0, 0, 0, "transactions",
     "Execute all commands issued after MULTI (atomically, under the --atomicity scheme)", "",
     "1.2.0", "Depends on commands in the transaction"},
    {"discard", 1, kLoading | kStale | kFast | kTxControl, discard_cmd, 0, 0, 0, "transactions",
     "Discard all commands issued after MULTI", "", "2.0.0",
     "O(N), when N is the number of queued commands"},
    {"watch", -2, kLoading | kStale | kFast | kTxControl | kEscalate, watch_cmd, 1, -1, 1,
     "transactions", "Watch the given keys to determine execution of the MULTI/EXEC block",
     "key [key ...]", "2.2.0", "O(1) for every key."},
    {"unwatch", 1, kLoading | kStale | kFast, unwatch_cmd, 0, 0, 0, "transactions",
     "Forget about all watched keys", "", "2.2.0"},
};

}  // namespace

std::span<const CommandSpec> transaction_commands() {
  return kTransactionCommands;
}

}  // namespace kvlab::server
