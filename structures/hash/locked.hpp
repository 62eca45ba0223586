// hash/locked — the baseline: std::unordered_map split into 64 shards, a std::shared_mutex each.
//
// What it is: the map a careful engineer writes first (lock striping). Keys hashed with XXH3; the
// top 6 bits pick the shard. Reference: Herlihy & Shavit, "The Art of Multiprocessor
// Programming", ch. 13 (lock striping).
// Thread safety, progress (blocking), reclamation (immediate), invariants: common/locked_map.hpp.
#pragma once

#include <shared_mutex>

#include "structures/common/locked_map.hpp"

namespace kvlab::hash {

struct LockedTag {
  static constexpr BackendTraits kTraits{
      .name = "hash/locked",
      .family = "hash",
      .progress = Progress::blocking,
      .reclamation = Reclamation::immediate,
      .reference = "lock striping (Herlihy & Shavit, TAoMP ch. 13)",
      .summary = "64 shards of std::unordered_map, a shared_mutex each (baseline)",
      .atomic_update_native = true,
      .update_runs_once = true,
  };
};

template <class V>
using Locked = LockedMap<V, 6, std::shared_mutex, LockedTag>;

static_assert(KeyValueMap<Locked<std::string>>);

}  // namespace kvlab::hash
