// skiplist/tbb — oneTBB concurrent_map: a skip list with lock-free lookup and fine-grained locked
// insertion, whose erase is only `unsafe_erase`.
// Reference: oneTBB tbb::concurrent_map; Pugh, "Skip Lists", CACM 1990.
//
// Thread safety: find, insert, insert_or_assign, update, for_each and range run concurrently.
// erase and clear REQUIRE that no other operation runs (unsafe_erase): concurrent_erase = false.
// Values in Cells (common/cell_map.hpp) so that update is atomic.
// Progress: blocking. Reclamation: immediate, under the REQUIRES above.
#pragma once

#include <oneapi/tbb/concurrent_map.h>

#include <string>
#include <string_view>

#include "structures/common/cell_map.hpp"
#include "structures/common/tbb_allocator.hpp"
#include "structures/common/hash.hpp"

namespace kvlab::skiplist {

template <class V>
class TbbRaw {
 public:
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "skiplist/tbb",
      .family = "skiplist",
      .progress = Progress::blocking,
      .reclamation = Reclamation::immediate,
      .reference = "oneTBB tbb::concurrent_map (skip list)",
      .summary = "skip list, lock-free find; erase is unsafe_erase (no concurrent erase)",
      .concurrent_erase = false,
      .ordered = true,
  };

 protected:
  explicit TbbRaw(const MapOptions&) {}

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
  template <class F>
  void raw_range(std::string_view lo, std::string_view hi, F&& f) {
    for (auto it = map_.lower_bound(lo); it != map_.end(); ++it) {
      const std::string_view k(it->first);
      if (k >= hi) break;
      if (!f(k, it->second)) break;
    }
  }
  std::size_t raw_size() { return map_.size(); }
  void raw_clear() { map_.clear(); }

 private:
  tbb::concurrent_map<std::string, Cell<V>, StringLess,
                      TbbAllocator<std::pair<const std::string, Cell<V>>>>
      map_;
};

template <class V>
using Tbb = CellMap<TbbRaw<V>>;

static_assert(OrderedMap<Tbb<std::string>>);

}  // namespace kvlab::skiplist
