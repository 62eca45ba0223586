// hash/tbb-unordered — oneTBB concurrent_unordered_map: a split-ordered list (lock-free insert and
// lookup) whose erase is only `unsafe_erase`.
// Reference: oneTBB tbb::concurrent_unordered_map; Shalev & Shavit, JACM 2006.
//
// Thread safety: find, insert, insert_or_assign, update and for_each run concurrently with each
// other. erase and clear REQUIRE that no other operation runs (TBB's unsafe_erase): declared
// concurrent_erase = false, and the tests and the server check that flag.
// Values in Cells (common/cell_map.hpp) so that update is atomic.
// Progress: blocking (cell lock). Reclamation: immediate, under the REQUIRES above.
#pragma once

#include <oneapi/tbb/concurrent_unordered_map.h>

#include <string>
#include <string_view>

#include "structures/common/cell_map.hpp"
#include "structures/common/tbb_allocator.hpp"
#include "structures/common/hash.hpp"

namespace kvlab::hash {

template <class V>
class TbbUnorderedRaw {
 public:
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "hash/tbb-unordered",
      .family = "hash",
      .progress = Progress::blocking,
      .reclamation = Reclamation::immediate,
      .reference = "oneTBB tbb::concurrent_unordered_map (split-ordered list)",
      .summary = "lock-free insert/find; erase is unsafe_erase (no concurrent erase)",
      .concurrent_erase = false,
  };

 protected:
  explicit TbbUnorderedRaw(const MapOptions& o) : map_(o.expected_keys) {}

  static void raw_enter() {}
  template <class F>
  bool raw_find(std::string_view key, F&& f) {
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    f(it->second);
    return true;
  }
  bool raw_insert(std::string_view key, const Cell<V>& cell) {
    return map_.emplace(std::string(key), cell).second;
  }
  bool raw_erase(std::string_view key) {
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    map_.unsafe_erase(it);
    return true;
  }
  template <class F>
  void raw_for_each(F&& f) {
    for (auto& [k, c] : map_) f(std::string_view(k), c);
  }
  std::size_t raw_size() { return map_.size(); }
  void raw_clear() { map_.clear(); }

 private:
  tbb::concurrent_unordered_map<std::string, Cell<V>, StringHash, StringEqual,
                                TbbAllocator<std::pair<const std::string, Cell<V>>>>
      map_;
};

template <class V>
using TbbUnordered = CellMap<TbbUnorderedRaw<V>>;

static_assert(KeyValueMap<TbbUnordered<std::string>>);

}  // namespace kvlab::hash
