// A hash map built from std::unordered_map shards, each behind one lock. The two lock-based
// baselines are instances: hash/locked (64 shards, shared_mutex) and hash/global-lock (one shard,
// one mutex — KeyDB's model).
//
// Thread safety: every operation locks exactly one shard: find/for_each shared (when the mutex
// allows it), the rest exclusive. update runs fn under the exclusive lock, so it is atomic against
// everything on that key. clear and for_each visit shards one at a time (not a snapshot).
// Progress: blocking. Reclamation: immediate — erase frees the node under the exclusive lock, and
// readers only touch nodes while holding the lock.
// Invariants: a key lives in shard shard_of(hash(key)) only.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "structures/common/hash.hpp"
#include "structures/keyspace.hpp"

namespace kvlab {

// REQUIRES: Mutex is std::shared_mutex (shared reads) or std::mutex (all exclusive).
template <class V, unsigned kShardBits, class Mutex, class Tag>
class LockedMap {
 public:
  using mapped_type = V;
  static constexpr BackendTraits kTraits = Tag::kTraits;
  static constexpr std::size_t kShards = std::size_t{1} << kShardBits;

  LockedMap() : LockedMap(MapOptions{}) {}
  explicit LockedMap(const MapOptions& options) : shards_(new Shard[kShards]) {
    for (std::size_t i = 0; i < kShards; ++i) shards_[i].map.reserve(options.expected_keys / kShards);
  }

  template <class F>
  bool find(std::string_view key, F&& visitor) {
    Shard& s = shard(hash64(key));
    ReadLock lock(s.mutex);
    auto it = s.map.find(key);
    if (it == s.map.end()) return false;
    visitor(static_cast<const V&>(it->second));
    return true;
  }

  bool insert(std::string_view key, const V& value) {
    Shard& s = shard(hash64(key));
    std::unique_lock lock(s.mutex);
    return s.map.try_emplace(std::string(key), value).second;
  }

  bool insert_or_assign(std::string_view key, const V& value) {
    Shard& s = shard(hash64(key));
    std::unique_lock lock(s.mutex);
    return s.map.insert_or_assign(std::string(key), value).second;
  }

  bool erase(std::string_view key) {
    Shard& s = shard(hash64(key));
    std::unique_lock lock(s.mutex);
    auto it = s.map.find(key);
    if (it == s.map.end()) return false;
    s.map.erase(it);
    return true;
  }

  template <class F>
  UpdateOutcome update(std::string_view key, F&& fn) {
    Shard& s = shard(hash64(key));
    std::unique_lock lock(s.mutex);
    auto it = s.map.find(key);
    Update<V> u = fn(it == s.map.end() ? nullptr : &std::as_const(it->second));
    switch (u.kind()) {
      case Update<V>::Kind::keep:
        return UpdateOutcome::unchanged;
      case Update<V>::Kind::erase:
        if (it == s.map.end()) return UpdateOutcome::unchanged;
        s.map.erase(it);
        return UpdateOutcome::erased;
      case Update<V>::Kind::assign:
        if (it == s.map.end()) {
          s.map.emplace(std::string(key), std::move(u).value());
          return UpdateOutcome::inserted;
        }
        it->second = std::move(u).value();
        return UpdateOutcome::assigned;
    }
    return UpdateOutcome::unchanged;
  }

  std::size_t size_approx() {
    std::size_t n = 0;
    for (std::size_t i = 0; i < kShards; ++i) {
      ReadLock lock(shards_[i].mutex);
      n += shards_[i].map.size();
    }
    return n;
  }

  template <class F>
  void for_each(F&& fn) {
    for (std::size_t i = 0; i < kShards; ++i) {
      ReadLock lock(shards_[i].mutex);
      for (const auto& [k, v] : shards_[i].map) fn(std::string_view(k), v);
    }
  }

  void clear() {
    for (std::size_t i = 0; i < kShards; ++i) {
      std::unique_lock lock(shards_[i].mutex);
      shards_[i].map.clear();
    }
  }

 private:
  // One cache line (or more) per shard so that locking one shard does not invalidate its
  // neighbour's lock word.
  struct alignas(64) Shard {
    Mutex mutex;
    std::unordered_map<std::string, V, StringHash, StringEqual> map;
  };
  using ReadLock = std::conditional_t<std::is_same_v<Mutex, std::shared_mutex>,
                                      std::shared_lock<Mutex>, std::unique_lock<Mutex>>;
  // The top bits choose the shard; unordered_map uses the low bits for its buckets.
  Shard& shard(std::size_t h) {
    if constexpr (kShardBits == 0) {
      return shards_[0];
    } else {
      return shards_[h >> (64 - kShardBits)];
    }
  }

  std::unique_ptr<Shard[]> shards_;
};

}  // namespace kvlab
