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

inline constexpr int kClusterSlots = 16384;

// The hash slot of a key (Redis's keyHashSlot).
unsigned key_hash_slot(std::string_view key);

enum class ClusterMode { kNo, kEmulated, kYes };

struct ClusterNode {
  std::string id;  // 40 hex characters
  std::string ip;
  int port = 0;
};

struct ClusterShard {
  std::vector<std::pair<unsigned, unsigned>> slots;  // inclusive ranges, sorted
  ClusterNode master;
};

struct ClusterConfig {
  std::uint64_t epoch = 0;
  std::vector<ClusterShard> shards;
  std::array<std::int16_t, kClusterSlots> owner{};  // shard index per slot, -1 when unassigned
  int self = -1;                                    // this node's shard, -1 when not in it

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
  std::vector<unsigned> set_config(std::shared_ptr<const ClusterConfig> next);

  // The redirection decision for one command's keys (already extracted). Returns an empty string
  // when the command may run here, else the full error line (without '-'): CROSSSLOT, MOVED or
  // CLUSTERDOWN. *slot receives the keys' common slot (-1 when there are no keys).
  std::string check(std::span<const std::string_view> keys, int* slot) const;

  // A random 40-hex-character node id.
  static std::string random_id();

 private:
  ClusterMode mode_;
  std::string my_id_;
  std::string announce_ip_;
  int port_;
  std::atomic<std::shared_ptr<const ClusterConfig>> config_;
};

}  // namespace kvlab::server
