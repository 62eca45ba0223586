// Live slot migration for --cluster-mode yes: the source node streams the keys of its migrating
// slots to the target over an ordinary RESP connection (hiredis), as RESTORE-ASKING key
// <abs-ttl> <DUMP payload> REPLACE ABSTTL, and deletes each key once the target acknowledged it.
// Keys travel in batches; a batch's keys are frozen (commands on them answer -TRYAGAIN) from the
// moment they are read until the target's answer is in, and no lock is held across that wait.
//
// Protocol (the manager, `kvlab cluster reshard`, drives it):
//   1. Configuration C1 with a "migrations" entry (source shard, slot ranges, target) is pushed
//      to the target first, then to every other node, the source last. The source starts when
//      C1 arrives, and streams once the target holds C1 or newer (its cluster_current_epoch):
//      with migrations both ways each node is the other's target, so one of them hears first.
//      CLUSTER INFO reports kvlab_migration_state (streaming, done,
//      failed, cancelled), kvlab_migration_epoch and kvlab_migration_keys_moved.
//   2. While C1 holds, the source serves a command on a migrating slot when all its keys are here,
//      answers -ASK slot target when none is, -TRYAGAIN when some are; the target serves it after
//      ASKING, else -MOVED to the source (Redis's rules, cluster.c getNodeByQuery).
//   3. Once the source reports done, the manager pushes C2 (the slots owned by the target, no
//      migration): target first, then the others, source last. A node that loses slots deletes
//      their keys (none are left on the source after done).
//
// Why no acknowledged write is lost or applied twice, and no key lives on both nodes after the
// flip. Write "the lock of k" for k's stripe in the atomicity layer (server/core/atomicity.hpp): the
// migrator takes it exclusively with an escalation (Atomicity slot `threads`, its own).
//   a. Moving k is atomic with respect to the source's commands on k. Under k's lock the
//      migrator reads k's value and TTL, queues them and marks k frozen (in_flight()); it then
//      releases the lock, sends, and waits for the target's answer; under k's lock again it
//      deletes k if the target answered +OK and the slot is still the target's to own or import
//      (else k stays), and thaws k. Every command not redirected with MOVED checks inside its own
//      key locks whether one of its keys is frozen and answers -TRYAGAIN if so (cluster_gate).
//      So a command on k either ran wholly before the read (its effect is in the DUMP) or after
//      the thaw (it finds k absent, or present and never sent); while k is frozen only deletions
//      that take no route (FLUSHALL, expiry, eviction) reach it, and they are node-local, as in
//      Redis.
//      If the target does not answer +OK, k stays on the source and the migration fails.
//      Why the lock is not held across the wait: with migrations both ways, each migrator would
//      hold stripes (under global, the whole gate) while its RESTORE-ASKING waits on the other
//      node for a stripe the other migrator holds while it waits on this one — a cycle through
//      the two nodes' workers that only the 5-second reply timeout broke. Now a worker waits
//      only for a migrator's local critical sections, which wait for nothing remote.
//   b. The source's routing decision for a migrating slot (present: serve; absent: ASK) is
//      taken inside the command's key locks, after the command re-read the configuration
//      (net/dispatch.cpp, cluster_gate). So a command that runs on the source finds k there and
//      its effect is moved with k later (or k stays); a command that finds k absent is sent to the
//      target and never creates k on the source. Hence once k left the source it never returns,
//      and every write to k applies on exactly one node: the source before the move, the target
//      after it.
//   c. The target never holds k while the source does, except for the copy the migrator is
//      writing: a client reaches the target for k only after the source answered ASK, i.e.
//      after k was absent, and not frozen, on the source under k's lock. A key created on the
//      target that way is never overwritten by the migrator: the source found k absent, and k
//      cannot reappear there (b), so the migrator has nothing to send for it. REPLACE only matters
//      when a failed migration is retried: the target's stale copy is overwritten.
//   d. The keys to move are found by scanning the keyspace (no per-slot index; see
//      server/README.md for the cost). The scan starts after C1 was published, and C1 was
//      published while every key was locked (KVLAB CLUSTER CONFIG is keyspace-wide), so every
//      command that could create a key of a migrating slot on the source under the old
//      configuration finished before; later commands route by C1 inside their locks (b). The
//      weakly consistent scan therefore sees every key that needs moving; a final pass that
//      finds none ends the stream.
//   e. The flip. C2 is published while every key is locked, and every command compares the
//      configuration generation it routed with to the current one inside its locks and routes
//      again when it changed (cluster_gate). So no command runs on a node with a stale map:
//      after C2 the source redirects with MOVED and the target serves without ASKING. With the
//      target flipped first, a client bounced between them sees ASK then a served command, never
//      a redirection loop. The manager pushes C2 only after the source reported done, when no
//      batch is in flight; a batch that finds the generation changed when it takes its locks
//      sends nothing and stops.
//
// Lost slots. A node that loses slots (a flip, or a configuration that takes them) deletes their
// keys in the background, on the migrator's thread, in batches under the keys' locks; until then
// the keys are unreachable (commands on them are redirected) but DBSIZE and KEYS still count them.
// Slots waiting for that purge are "pending". A configuration that gives a pending slot back
// (to own or to import) first deletes its keys synchronously, inside KVLAB CLUSTER CONFIG's
// keyspace-wide lock (take_regained()), so stale keys never become visible again; a purge batch
// deletes a key only if its slot is still pending, checked under the batch's locks, so it never
// deletes a key written after the slot came back.
//
// Failure: a lost connection or an error reply fails the migration (state failed, error text in
// kvlab_migration_error); keys not acknowledged stay on the source, which still owns the slots.
// The target may hold copies of the keys of the failed batch in a slot it does not own (as
// Redis's MIGRATE may leave them); a retried migration overwrites them (REPLACE).
// Values of every type move, streams with their consumer groups (server/data/rdb.hpp). Clients
// blocked (BLPOP, XREAD BLOCK...) on the source on a key of a migrating slot stay blocked while
// the slot migrates (it is still the source's, as in Redis 7.0) and get -MOVED when the flip
// arrives (redirect_blocked_clients(), commands/common.hpp).
// Limits: two concurrent `kvlab cluster reshard` runs race on the configuration (each rewrites it
// whole); concurrent migrations, in any directions, are one configuration naming all of them.
//
// Thread safety: one thread (the migrator's) streams; start() and status() are called by workers
// under the state mutex, in_flight() by workers under the frozen set's mutex. start() never waits
// for the migrator: it runs inside KVLAB CLUSTER CONFIG with every key locked, and the migrator may
// be waiting for those locks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

#include "server/features/cluster.hpp"

namespace kvlab::server {

class Migrator {
 public:
  // slot_index: the migrator's own Atomicity slot (one past the workers').
  Migrator(Cluster& cluster, Atomicity& gate, Db& db, unsigned slot_index);
  ~Migrator();  // cancels the current migration and joins the thread
  Migrator(const Migrator&) = delete;
  Migrator& operator=(const Migrator&) = delete;

  // A new configuration was published with this generation: cancel the running migration and,
  // if cfg names migrations with this node as their source, stream them; purge the keys of
  // `lost` slots in the background.
  void start(std::shared_ptr<const ClusterConfig> cfg, std::uint64_t generation,
             const std::vector<unsigned>& lost);

  // REQUIRES: every key locked (KVLAB CLUSTER CONFIG). Marks the pending slots that cfg gives
  // this node (owned or importing) as no longer pending and returns them: the caller deletes
  // their keys before any command runs.
  std::vector<bool> take_regained(const ClusterConfig& cfg);

  // True when one of keys is frozen: sent to the target by the running batch and not yet
  // deleted or thawed. A command on it answers TRYAGAIN (cluster_gate, net/dispatch.cpp).
  // REQUIRES: called inside the command's key locks.
  bool in_flight(std::span<const std::string_view> keys) const;

  // CLUSTER INFO lines: kvlab_purge_pending_slots, kvlab_migration_state (none, streaming, done,
  // failed, cancelled), kvlab_migration_epoch, kvlab_migration_keys_moved, kvlab_migration_error.
  std::string status() const;

  // Keys per escalation: each batch holds its keys' locks for one round trip to the target.
  static constexpr std::size_t kBatch = 128;
  // How long the source waits for the target to hold the migration's configuration epoch.
  static constexpr std::chrono::seconds kTargetEpochWait{5};

 private:
  struct Job {
    std::shared_ptr<const ClusterConfig> cfg;
    std::uint64_t generation = 0;
  };
  void run();
  void migrate(const Job& job);
  void purge(const Job& job);
  void set_state(const char* state, const std::string& error = {});
  // REQUIRES: the keys' locks held (the batch's escalation).
  void freeze(const std::vector<std::string_view>& keys);
  void thaw(const std::vector<std::string_view>& keys);

  Cluster& cluster_;
  Atomicity& gate_;
  Db& db_;
  const unsigned slot_index_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<Job> next_;  // guarded by mu_
  bool stop_ = false;          // guarded by mu_
  // Status, guarded by mu_.
  std::string state_;  // empty: never migrated
  std::uint64_t epoch_ = 0;
  std::uint64_t keys_moved_ = 0;
  std::string error_;
  std::vector<bool> purge_pending_ = std::vector<bool>(kClusterSlots, false);  // guarded by mu_
  // The frozen keys of the running batch, guarded by flight_mu_ (a leaf: taken under the keys'
  // locks, never the other way round); flying_ is their number, for the empty check.
  mutable std::mutex flight_mu_;
  std::unordered_set<std::string> flight_;
  std::atomic<std::size_t> flying_{0};
  std::thread thread_;
};

}  // namespace kvlab::server
