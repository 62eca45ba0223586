// Live slot migration; the protocol and why it is safe are in cluster_migration.hpp.
#include "server/cluster_migration.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "server/atomicity.hpp"
#include "server/container.hpp"
#include "server/rdb.hpp"
#include "server/server.hpp"

#if KVLAB_SERVER_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

namespace kvlab::server {

namespace {
std::int64_t wall_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

Migrator::Migrator(Server& server) : server_(server), thread_([this] { run(); }) {}

Migrator::~Migrator() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Migrator::start(std::shared_ptr<const ClusterConfig> cfg, std::uint64_t generation,
                     const std::vector<unsigned>& lost) {
  {
    std::lock_guard lock(mu_);
    for (unsigned s : lost) purge_pending_[s] = true;
    next_ = std::make_unique<Job>(Job{std::move(cfg), generation});
  }
  cv_.notify_all();
}

std::vector<bool> Migrator::take_regained(const ClusterConfig& cfg) {
  std::vector<bool> regained(kClusterSlots, false);
  std::lock_guard lock(mu_);
  for (unsigned s = 0; s < kClusterSlots; ++s) {
    if (purge_pending_[s] && (cfg.owner[s] == cfg.self || cfg.migrating_to[s] == cfg.self)) {
      purge_pending_[s] = false;
      regained[s] = true;
    }
  }
  return regained;
}

std::string Migrator::status() const {
  std::lock_guard lock(mu_);
  std::size_t pending = 0;
  for (bool p : purge_pending_) pending += p ? 1 : 0;
  std::string s = "kvlab_purge_pending_slots:" + std::to_string(pending) + "\r\n";
  s += "kvlab_migration_state:" + (state_.empty() ? std::string("none") : state_) + "\r\n";
  s += "kvlab_migration_epoch:" + std::to_string(epoch_) + "\r\n";
  s += "kvlab_migration_keys_moved:" + std::to_string(keys_moved_) + "\r\n";
  if (!error_.empty()) s += "kvlab_migration_error:" + error_ + "\r\n";
  return s;
}

void Migrator::set_state(const char* state, const std::string& error) {
  std::lock_guard lock(mu_);
  state_ = state;
  error_ = error;
}

void Migrator::run() {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || next_ != nullptr; });
      if (stop_) return;
      job = std::move(next_);
    }
    purge(*job);
    migrate(*job);
  }
}

void Migrator::purge(const Job& job) {
  std::vector<bool> pending;
  {
    std::lock_guard lock(mu_);
    pending = purge_pending_;
  }
  if (std::find(pending.begin(), pending.end(), true) == pending.end()) return;
  Cluster& cluster = server_.cluster();
  Atomicity& gate = server_.atomicity();
  Db& db = server_.db();
  const unsigned slot_index = server_.config().threads;  // the migrator's Atomicity slot
  // No key is inserted into a pending slot (it is neither owned nor imported here), so one scan
  // finds them all.
  std::vector<std::string> keys;
  db.for_each([&](std::string_view key, const Value&) {
    if (pending[key_hash_slot(key)]) keys.emplace_back(key);
  });
  for (std::size_t at = 0; at < keys.size(); at += kBatch) {
    const std::size_t end = std::min(keys.size(), at + kBatch);
    std::vector<std::string_view> batch(keys.begin() + static_cast<std::ptrdiff_t>(at),
                                        keys.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<std::uint32_t> held;
    gate.begin_multi(slot_index, batch, false, &held);
    {
      std::lock_guard lock(mu_);  // take_regained() cannot run: it needs the batch's locks
      for (std::string_view key : batch)
        if (purge_pending_[key_hash_slot(key)]) db.erase(key);
    }
    gate.end_multi(slot_index, &held);
    gate.offline(slot_index);
  }
  std::lock_guard lock(mu_);
  // A newer configuration may have lost more slots: its own job scans again for them.
  if (next_ != nullptr || cluster.generation() != job.generation) return;
  for (unsigned s = 0; s < kClusterSlots; ++s)
    if (pending[s]) purge_pending_[s] = false;
}

void Migrator::migrate(const Job& job) {
  const ClusterConfig& cfg = *job.cfg;
  if (cfg.self < 0) return;
  const ClusterShard& me = cfg.shards[static_cast<std::size_t>(cfg.self)];
  if (me.migrations.empty()) return;  // nothing leaves this node; keep the last status
  {
    std::lock_guard lock(mu_);
    state_ = "streaming";
    epoch_ = cfg.epoch;
    keys_moved_ = 0;
    error_.clear();
  }
#if !KVLAB_SERVER_HAVE_HIREDIS
  set_state("failed", "kvlab-server was built without hiredis");
  return;
#else
  Cluster& cluster = server_.cluster();
  Atomicity& gate = server_.atomicity();
  Db& db = server_.db();
  const unsigned slot_index = server_.config().threads;  // the migrator's Atomicity slot
  // Still the configuration this job streams for? Checked inside the locks of every batch.
  auto current = [&] {
    std::lock_guard lock(mu_);
    return next_ == nullptr && !stop_ && cluster.generation() == job.generation;
  };
  for (const ClusterMigration& m : me.migrations) {
    const ClusterNode& target = cfg.shards[static_cast<std::size_t>(m.target)].master;
    std::vector<bool> moving(kClusterSlots, false);
    for (const auto& [a, b] : m.slots)
      for (unsigned s = a; s <= b; ++s) moving[s] = true;
    const timeval tv{5, 0};
    std::unique_ptr<redisContext, decltype(&redisFree)> c(
        redisConnectWithTimeout(target.ip.c_str(), target.port, tv), &redisFree);
    if (c == nullptr || c->err) {
      set_state("failed", "cannot connect to " + target.ip + ":" + std::to_string(target.port));
      return;
    }
    redisSetTimeout(c.get(), tv);
    // Passes until one finds no key of the migrating slots (d in the header).
    for (;;) {
      std::vector<std::string> keys;
      db.for_each([&](std::string_view key, const Value&) {
        if (moving[key_hash_slot(key)]) keys.emplace_back(key);
      });
      if (keys.empty()) break;
      for (std::size_t at = 0; at < keys.size(); at += kBatch) {
        const std::size_t end = std::min(keys.size(), at + kBatch);
        std::vector<std::string_view> batch(keys.begin() + static_cast<std::ptrdiff_t>(at),
                                            keys.begin() + static_cast<std::ptrdiff_t>(end));
        std::vector<std::uint32_t> held;
        gate.begin_multi(slot_index, batch, false, &held);
        std::string error;
        std::size_t moved = 0;
        bool stale = !current();
        if (!stale) {
          // a. Under the batch's locks: read, send, wait for +OK, delete.
          const std::int64_t now = wall_now_ms();
          std::vector<std::string_view> sent;
          for (std::string_view key : batch) {
            Value v;
            bool live = false;
            db.find(key, [&](const Value& found) {
              live = !found.expired_at(now) && !live_container_is_dead(found);
              if (live) v = found;
            });
            if (!live) continue;  // deleted or expired meanwhile: nothing to move
            std::string payload;
            if (!rdb::dump_value(v.obj, &payload)) continue;  // emptied container: gone
            const std::string ttl = std::to_string(v.expire_ms);
            const char* argv[] = {"RESTORE-ASKING", key.data(), ttl.data(),
                                  payload.data(),   "REPLACE",  "ABSTTL"};
            const std::size_t lens[] = {14, key.size(), ttl.size(), payload.size(), 7, 6};
            redisAppendCommandArgv(c.get(), 6, argv, lens);
            sent.push_back(key);
          }
          for (std::string_view key : sent) {
            void* raw = nullptr;
            if (redisGetReply(c.get(), &raw) != REDIS_OK || raw == nullptr) {
              if (error.empty()) error = "target connection lost: " + std::string(c->errstr);
              break;  // the connection is unusable: no later reply arrives
            }
            std::unique_ptr<redisReply, decltype(&freeReplyObject)> r(static_cast<redisReply*>(raw),
                                                                      &freeReplyObject);
            if (r->type == REDIS_REPLY_STATUS && std::string_view(r->str, r->len) == "OK") {
              db.erase(key);  // acknowledged: the target holds it
              ++moved;
            } else if (error.empty()) {
              error = "target refused " + std::string(key) + ": " +
                      (r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "?");
            }
          }
        }
        gate.end_multi(slot_index, &held);
        gate.offline(slot_index);  // between batches the migrator runs no command
        {
          std::lock_guard lock(mu_);
          keys_moved_ += moved;
        }
        if (stale) {
          set_state("cancelled");
          return;
        }
        if (!error.empty()) {
          set_state("failed", error);
          return;
        }
      }
    }
  }
  set_state(current() ? "done" : "cancelled");
#endif
}

}  // namespace kvlab::server
