// hash/global-lock — one std::unordered_map behind one std::mutex: KeyDB's model (a global lock
// around a single-threaded dictionary). The floor every concurrent design must beat.
// Reference: KeyDB (Snap Inc.), multithreaded fork of Redis with a global storage lock.
// Thread safety, progress (blocking), reclamation (immediate), invariants: common/locked_map.hpp.
#pragma once

#include <mutex>

#include "structures/common/locked_map.hpp"

namespace kvlab::hash {

struct GlobalLockTag {
  static constexpr BackendTraits kTraits{
      .name = "hash/global-lock",
      .family = "hash",
      .progress = Progress::blocking,
      .reclamation = Reclamation::immediate,
      .reference = "KeyDB global storage lock",
      .summary = "one std::unordered_map, one std::mutex (KeyDB's model)",
      .atomic_update_native = true,
      .update_runs_once = true,
  };
};

template <class V>
using GlobalLock = LockedMap<V, 0, std::mutex, GlobalLockTag>;

static_assert(KeyValueMap<GlobalLock<std::string>>);

}  // namespace kvlab::hash
