// hash/cds-feldman — libcds FeldmanHashMap: a multi-level array (hash trie) indexed by successive
// bit slices of a fixed-size hash; grows by adding array levels, never rehashes.
// Reference: S. Feldman, P. LaBorde, D. Dechev, "A Wait-Free Multi-Word Compare-and-Swap
// Operation" / "Concurrent Multi-level Arrays: Wait-free Extensible Hash Maps", SAMOS 2013.
//
// The trie needs fixed-size keys, so the map's key is the 128-bit XXH3 of the string and the
// string itself is kept in the value for equality. Two different strings with the same 128-bit
// hash cannot both be stored; the chance among n keys is about n^2 / 2^129 (1e-20 for 1e9 keys).
// Such a collision is detected (the stored string differs) and ends the process with a message
// rather than returning a wrong value.
//
// Thread safety: all operations concurrent; values in Cells (common/cell_map.hpp).
// Progress: lock-free trie; the per-value cell lock makes the whole blocking.
// Reclamation: hazard pointers (libcds cds::gc::HP).
// Invariants: CellMap's; the node for key k is at hash128(k) and stores k.
#pragma once

#include <cds/container/feldman_hashmap_hp.h>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "structures/common/cds_runtime.hpp"
#include "structures/common/cell_map.hpp"
#include "structures/common/hash.hpp"

namespace kvlab::hash {

template <class V>
class CdsFeldmanRaw {
 public:
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "hash/cds-feldman",
      .family = "hash",
      .progress = Progress::blocking,
      .reclamation = Reclamation::hp,
      .reference = "Feldman, LaBorde & Dechev, SAMOS 2013 (libcds FeldmanHashMap)",
      .summary = "lock-free multi-level hash array on 128-bit XXH3; per-value cell lock",
  };

 protected:
  explicit CdsFeldmanRaw(const MapOptions& o) : attach_(), map_(head_bits(o.expected_keys), 4) {}
  ~CdsFeldmanRaw() { cds_runtime::ensure_attached(); }

  static void raw_enter() { cds_runtime::ensure_attached(); }
  template <class F>
  bool raw_find(std::string_view key, F&& f) {
    bool match = false;
    map_.find(hash128(key), [&](auto& item) {
      if (item.second.key == key) {
        match = true;
        f(item.second.cell);
      }
    });
    return match;
  }
  bool raw_insert(std::string_view key, const Cell<V>& cell) {
    const Hash128 h = hash128(key);
    if (map_.insert(h, Entry{std::string(key), cell})) return true;
    map_.find(h, [&](auto& item) {
      if (item.second.key != key) {
        std::fprintf(stderr, "hash/cds-feldman: 128-bit XXH3 collision between two keys\n");
        std::abort();
      }
    });
    return false;
  }
  bool raw_erase(std::string_view key) { return map_.erase(hash128(key)); }
  template <class F>
  void raw_for_each(F&& f) {
    for (auto it = map_.begin(); it != map_.end(); ++it) {
      f(std::string_view(it->second.key), it->second.cell);
    }
  }
  std::size_t raw_size() { return map_.size(); }

 private:
  struct Attach {
    Attach() { cds_runtime::ensure_attached(); }
  };
  struct Entry {
    std::string key;
    Cell<V> cell;
  };
  struct HashCompare {
    int operator()(const Hash128& a, const Hash128& b) const {
      return std::memcmp(&a, &b, sizeof(Hash128));
    }
  };
  struct Traits : public cds::container::feldman_hashmap::traits {
    using compare = HashCompare;
    using item_counter = cds::atomicity::item_counter;
  };
  static_assert(sizeof(Hash128) == 16, "the trie consumes exactly 128 bits");
  // A head array of about expected/16 slots (2^8 .. 2^20): shallow tries for the expected size.
  static std::size_t head_bits(std::size_t expected) {
    const int bits = std::bit_width(expected) - 4;
    return bits < 8 ? 8 : bits > 20 ? 20 : static_cast<std::size_t>(bits);
  }
  Attach attach_;
  cds::container::FeldmanHashMap<cds::gc::HP, Hash128, Entry, Traits> map_;
};

template <class V>
using CdsFeldman = CellMap<CdsFeldmanRaw<V>>;

static_assert(KeyValueMap<CdsFeldman<std::string>>);

}  // namespace kvlab::hash
