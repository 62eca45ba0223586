// Live slot migration; the protocol and why it is safe are in cluster_migration.hpp.
#include "server/features/cluster_migration.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <vector>

#include "server/core/atomicity.hpp"
#include "server/features/db.hpp"
#include "server/data/container.hpp"
#include "server/data/rdb.hpp"

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
// May a node take over `slot`'s keys under cfg: does it own the slot or import it?
bool entitled(const ClusterConfig& cfg, unsigned slot, const std::string& node_id) {
  const int owner = cfg.owner[slot], to = cfg.migrating_to[slot];
  return (owner >= 0 && cfg.shards[static_cast<std::size_t>(owner)].master.id == node_id) ||
         (to >= 0 && cfg.shards[static_cast<std::size_t>(to)].master.id == node_id);
}
}  // namespace

Migrator::Migrator(Cluster& cluster, Atomicity& gate, Db& db, unsigned slot_index)
    : cluster_(cluster), gate_(gate), db_(db), slot_index_(slot_index), thread_([this] { run(); }) {}

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

bool Migrator::in_flight(std::span<const std::string_view> keys) const {
  // relaxed: flying_ changes only inside the migrator's escalations, and a command reads it
  // inside its own key locks, so the Atomicity gate orders the two (as BlockingRegistry::active).
  if (flying_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard lock(flight_mu_);
  for (std::string_view k : keys)
    if (flight_.find(std::string(k)) != flight_.end()) return true;
  return false;
}

void Migrator::freeze(const std::vector<std::string_view>& keys) {
  std::lock_guard lock(flight_mu_);
  for (std::string_view k : keys) flight_.emplace(k);
  flying_.store(flight_.size(), std::memory_order_relaxed);  // relaxed: see in_flight()
}

void Migrator::thaw(const std::vector<std::string_view>& keys) {
  std::lock_guard lock(flight_mu_);
  for (std::string_view k : keys) flight_.erase(std::string(k));
  flying_.store(flight_.size(), std::memory_order_relaxed);  // relaxed: see in_flight()
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
  Cluster& cluster = cluster_;
  Atomicity& gate = gate_;
  Db& db = db_;
  const unsigned slot_index = slot_index_;
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
  Cluster& cluster = cluster_;
  Atomicity& gate = gate_;
  Db& db = db_;
  const unsigned slot_index = slot_index_;
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
    // The target accepts RESTORE-ASKING only once it imports the slots, i.e. holds this
    // configuration or a newer one. The manager pushes to the target first, but with migrations
    // in both directions each node is the other's target and one of them hears first: wait for
    // the target's epoch (bounded; a newer configuration here ends the wait).
    {
      const auto give_up = std::chrono::steady_clock::now() + kTargetEpochWait;
      bool ready = false;
      while (!ready && current() && std::chrono::steady_clock::now() < give_up) {
        std::unique_ptr<redisReply, decltype(&freeReplyObject)> r(
            static_cast<redisReply*>(redisCommand(c.get(), "CLUSTER INFO")), &freeReplyObject);
        if (r == nullptr) break;       // the connection failed: reported below
        const std::string_view text =  // a bulk string: hiredis speaks RESP2
            r->type == REDIS_REPLY_STRING ? std::string_view(r->str, r->len) : std::string_view();
        constexpr std::string_view kField = "cluster_current_epoch:";
        const std::size_t at = text.find(kField);
        if (at != std::string_view::npos &&
            std::strtoull(text.data() + at + kField.size(), nullptr, 10) >= cfg.epoch) {
          ready = true;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
      if (!ready) {
        if (!current()) {
          set_state("cancelled");
        } else {
          set_state("failed", "target " + target.ip + ":" + std::to_string(target.port) +
                                  " did not reach epoch " + std::to_string(cfg.epoch) +
                                  (c->err ? ": " + std::string(c->errstr) : std::string()));
        }
        return;
      }
    }
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
        std::vector<std::string_view> sent;
        if (!stale) {
          // a. Under the batch's locks: read and freeze each key, queue its RESTORE (no I/O).
          const std::int64_t now = wall_now_ms();
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
          freeze(sent);
        }
        gate.end_multi(slot_index, &held);
        gate.offline(slot_index);  // no lock is held across the round trip
        // The round trip, with no lock held (a in the header says why that matters).
        std::vector<bool> acked(sent.size(), false);
        for (std::size_t i = 0; i < sent.size(); ++i) {
          void* raw = nullptr;
          if (redisGetReply(c.get(), &raw) != REDIS_OK || raw == nullptr) {
            if (error.empty()) error = "target connection lost: " + std::string(c->errstr);
            break;  // the connection is unusable: no later reply arrives
          }
          std::unique_ptr<redisReply, decltype(&freeReplyObject)> r(static_cast<redisReply*>(raw),
                                                                    &freeReplyObject);
          if (r->type == REDIS_REPLY_STATUS && std::string_view(r->str, r->len) == "OK") {
            acked[i] = true;  // the target holds it
          } else if (error.empty()) {
            error = "target refused " + std::string(sent[i]) + ": " +
                    (r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "?");
          }
        }
        if (!sent.empty()) {
          // Under the frozen keys' locks: delete what the target acknowledged, if the slot is
          // still the target's to have (a configuration may have arrived meanwhile), and thaw
          // the batch. A key not deleted stays here, unchanged: frozen keys were refused to every
          // command, and only deletions that take no route (FLUSHALL, expiry) could touch it.
          gate.begin_multi(slot_index, sent, false, &held);
          const auto now_cfg = cluster.config();
          for (std::size_t i = 0; i < sent.size(); ++i) {
            if (acked[i] && entitled(*now_cfg, key_hash_slot(sent[i]), target.id)) {
              db.erase(sent[i]);
              ++moved;
            }
          }
          thaw(sent);
          gate.end_multi(slot_index, &held);
          gate.offline(slot_index);
        }
        {
          std::lock_guard lock(mu_);
          keys_moved_ += moved;
        }
        if (!current()) stale = true;
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
