// Redis Cluster protocol for kvlab-server (--cluster-mode): hash slots, the node's configuration,
// and the redirection decision for a command's keys.
//
// The design follows Dragonfly's managed mode rather than Redis Cluster's gossip: nodes do not
// talk to each other; a manager (`kvlab cluster`) pushes one JSON configuration to every node
// (KVLAB CLUSTER CONFIG), which is the single source of truth for who owns which slot.
//
//   no        CLUSTER answers "This instance has cluster support disabled"; nothing is checked.
//   emulated  one node that owns all 16384 slots: CLUSTER INFO/SLOTS/SHARDS/NODES answer as a
//             one-node Redis Cluster, and multi-key commands over several slots get CROSSSLOT,
//             so cluster clients work unchanged against a single kvlab-server.
//   yes       the node serves the slots its configuration gives it: a key of another node's slot
//             gets -MOVED slot host:port; before a configuration arrives key commands get
//             -CLUSTERDOWN and CLUSTER INFO says cluster_state:fail.
//
// Slots: CRC16-CCITT (XMODEM) of the key, or of the first non-empty {hash tag} in it, mod 16384.
//
// Thread safety. The configuration is immutable once published; Cluster::config() hands out a
// shared_ptr to the current one (std::atomic<std::shared_ptr>, acquire/release: a worker that
// loads the new pointer sees the configuration fully built). set_config() replaces it as a whole,
// so a command sees either the old or the new map, never a mix. In `no` mode nothing here runs.
//
// Live slot migration (cluster_migration.hpp): a shard's "migrations" entry names slot ranges of
// that shard and the shard they move to. The source serves a key of such a slot while it holds
// the key and answers -ASK slot target for a key it does not hold; the target serves a command
// on such a slot only after ASKING (else -MOVED to the source). Both decisions depend on which
// keys are present, so they are taken inside the command's key locks (net/dispatch.cpp).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvlab::server {

class Migrator;
class Atomicity;
class Db;

inline constexpr int kClusterSlots = 16384;

// The hash slot of a key (Redis's keyHashSlot).
unsigned key_hash_slot(std::string_view key);

enum class ClusterMode { kNo, kEmulated, kYes };

struct ClusterNode {
  std::string id;  // 40 hex characters
  std::string ip;
  int port = 0;
};

struct ClusterMigration {
  std::vector<std::pair<unsigned, unsigned>> slots;  // inclusive ranges, sorted
  int target = -1;                                   // the shard the slots move to
};

struct ClusterShard {
  std::vector<std::pair<unsigned, unsigned>> slots;  // inclusive ranges, sorted
  ClusterNode master;
  std::vector<ClusterMigration> migrations;  // slots of this shard moving to another
};

struct ClusterConfig {
  std::uint64_t epoch = 0;
  std::vector<ClusterShard> shards;
  std::array<std::int16_t, kClusterSlots> owner{};  // shard index per slot, -1 when unassigned
  // The shard a slot migrates to, -1 when it does not migrate. The slot's owner is its source.
  std::array<std::int16_t, kClusterSlots> migrating_to{};
  int self = -1;  // this node's shard, -1 when not in it
  bool has_migrations = false;

  // Parses and validates a configuration (see cluster.cpp for the JSON schema): every slot
  // assigned exactly once, addresses and ids well formed, ids unique, `self_id` a master. Returns
  // nullptr with *error set otherwise.
  static std::shared_ptr<const ClusterConfig> parse(std::string_view json, std::string_view self_id,
                                                    std::string* error);
  // One shard owning every slot: the emulated node.
  static std::shared_ptr<const ClusterConfig> single(const ClusterNode& self);
  std::string to_json() const;
};

class Cluster {
 public:
  Cluster(ClusterMode mode, std::string my_id, std::string announce_ip, int port);

  ClusterMode mode() const { return mode_; }
  bool enabled() const { return mode_ != ClusterMode::kNo; }
  const std::string& my_id() const { return my_id_; }
  std::shared_ptr<const ClusterConfig> config() const {
    // acquire: pairs with set_config's release; the configuration is built before publication.
    return config_.load(std::memory_order_acquire);
  }
  // Replaces the configuration (yes mode). Returns the slots this node no longer owns.
  // REQUIRES: called with every key locked (KVLAB CLUSTER CONFIG is keyspace-wide), so that no
  // command runs between its routing decision and its execution across the change (see
  // generation()).
  std::vector<unsigned> set_config(std::shared_ptr<const ClusterConfig> next);

  // Bumped by every set_config(), after the new configuration is published. A command decides
  // its route in dispatch, before it holds its keys' locks; inside the locks it compares the
  // generation it saw with this one and decides again when they differ (net/dispatch.cpp).
  std::uint64_t generation() const {
    // acquire: pairs with set_config's release increment; a reader that sees the new count also
    // sees the new configuration. Inside the gate the locks order it anyway (see set_config).
    return generation_.load(std::memory_order_acquire);
  }

  // The redirection decision for one command's keys (already extracted).
  enum class Route {
    kServe,           // run here
    kError,           // *error holds the line (without '-'): CROSSSLOT, MOVED, CLUSTERDOWN
    kIfPresent,       // the slot migrates away from here: run if every key is here, ASK to the
                      // target if none is (*error holds the ASK line), else TRYAGAIN
    kImportingAsked,  // ASKING on a slot migrating here: run, unless several keys and one is
                      // missing (TRYAGAIN)
  };
  Route route(std::span<const std::string_view> keys, bool asking, int* slot,
              std::string* error) const;
  // route() reduced to an error line (empty when the command may run here, presence aside).
  std::string check(std::span<const std::string_view> keys, int* slot) const;

  // The cluster's live slot migration (cluster_migration.hpp), created on first use; slot_index is
  // its own Atomicity slot (the workers use 0..threads-1).
  Migrator& migrator(Atomicity& gate, Db& db, unsigned slot_index);
  // Any thread (CLUSTER INFO). acquire: pairs with the release store in migrator(); a reader
  // that sees the pointer sees the Migrator constructed.
  const Migrator* migrator_if_started() const {
    return migrator_seen_.load(std::memory_order_acquire);
  }

  // A random 40-hex-character node id.
  static std::string random_id();

 private:
  ClusterMode mode_;
  std::string my_id_;
  std::string announce_ip_;
  int port_;
  std::atomic<std::shared_ptr<const ClusterConfig>> config_;
  std::atomic<std::uint64_t> generation_{0};
  std::uint64_t instance_;  // unique per Cluster built (current_config()'s cache key)
  // config() through this thread's cache, refreshed when generation() moves: what route() reads
  // on every keyed command without writing a shared line. Valid until this thread's next call.
  const std::shared_ptr<const ClusterConfig>& current_config() const;
  std::unique_ptr<Migrator> migrator_;  // destroyed (its thread joined) before the keyspace
  std::atomic<const Migrator*> migrator_seen_{nullptr};  // migrator_.get(), for other threads

 public:
  ~Cluster();
};

}  // namespace kvlab::server
