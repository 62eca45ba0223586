// hash/tbb — oneTBB concurrent_hash_map: chained buckets with a reader-writer lock per bucket and
// per element (accessors), incremental resize by segment doubling.
// Reference: Intel/oneAPI TBB, tbb::concurrent_hash_map (A. Malakhov's design).
//
// Thread safety: all operations concurrent. find holds a const_accessor (element read lock)
// while the visitor runs; update holds an accessor (element write lock), so it is atomic.
// for_each uses the container's iterators, which TBB does not make safe against concurrent
// insert/erase: declared concurrent_for_each = false (REQUIRES quiescent writers).
// Progress: blocking. Reclamation: immediate, under the element/bucket locks (TBB's own).
// Invariants: TBB's.
#pragma once

#include <oneapi/tbb/concurrent_hash_map.h>

#include <string>
#include <string_view>
#include <utility>

#include "structures/common/hash.hpp"
#include "structures/common/tbb_allocator.hpp"
#include "structures/keyspace.hpp"

namespace kvlab::hash {

template <class V>
class Tbb {
 public:
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "hash/tbb",
      .family = "hash",
      .progress = Progress::blocking,
      .reclamation = Reclamation::internal,
      .reference = "oneTBB tbb::concurrent_hash_map",
      .summary = "bucket + element reader-writer locks (accessors); for_each needs quiescence",
      .concurrent_for_each = false,
      .atomic_update_native = true,
  };

  Tbb() : Tbb(MapOptions{}) {}
  explicit Tbb(const MapOptions& o) : map_(o.expected_keys) {}

  template <class F>
  bool find(std::string_view key, F&& visitor) {
    typename Map::const_accessor acc;
    if (!map_.find(acc, std::string(key))) return false;
    visitor(static_cast<const V&>(acc->second));
    return true;
  }
  bool insert(std::string_view key, const V& value) {
    return map_.insert(typename Map::value_type(std::string(key), value));
  }
  bool insert_or_assign(std::string_view key, const V& value) {
    typename Map::accessor acc;
    const bool inserted = map_.insert(acc, std::string(key));
    acc->second = value;
    return inserted;
  }
  bool erase(std::string_view key) { return map_.erase(std::string(key)); }

  // erase(key) may unlink an element while another thread holds its accessor (TBB waits for the
  // accessor only before freeing it). An update whose erase(accessor) then finds the element
  // already gone lost that race: its view is stale, so it retries from the lookup.
  template <class F>
  UpdateOutcome update(std::string_view key, F&& fn) {
    const std::string k(key);
    for (;;) {
      typename Map::accessor acc;
      if (!map_.find(acc, k)) {
        Update<V> u = fn(nullptr);
        if (u.kind() != Update<V>::Kind::assign) return UpdateOutcome::unchanged;
        if (map_.insert(acc, typename Map::value_type(k, std::move(u).value()))) {
          return UpdateOutcome::inserted;
        }
        // Lost the race: acc now holds the element another thread inserted; apply fn to it.
      }
      Update<V> u = fn(&std::as_const(acc->second));
      switch (u.kind()) {
        case Update<V>::Kind::keep:
          return UpdateOutcome::unchanged;
        case Update<V>::Kind::assign:
          acc->second = std::move(u).value();
          return UpdateOutcome::assigned;
        case Update<V>::Kind::erase:
          if (map_.erase(acc)) return UpdateOutcome::erased;
          break;  // a concurrent erase(key) unlinked it first: retry
      }
    }
  }

  std::size_t size_approx() { return map_.size(); }
  template <class F>
  void for_each(F&& fn) {
    for (const auto& [k, v] : map_) fn(std::string_view(k), v);
  }
  void clear() { map_.clear(); }

 private:
  struct HashCompare {
    static std::size_t hash(const std::string& k) { return hash64(k); }
    static bool equal(const std::string& a, const std::string& b) { return a == b; }
  };
  using Map = tbb::concurrent_hash_map<std::string, V, HashCompare,
                                       TbbAllocator<std::pair<const std::string, V>>>;
  Map map_;
};

static_assert(KeyValueMap<Tbb<std::string>>);

}  // namespace kvlab::hash
