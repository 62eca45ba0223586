// DenseIndex: an open-addressing index over a dense array of distinct string keys (a set's
// members, a hash's fields), as compact dictionaries do. The caller owns the array; the index
// maps a key to its position.
//
// Layout: a power-of-two array of 64-bit slots, each 0 (empty) or {position + 1, low 32 bits of
// the key's hash}, probed linearly from hash & mask. A lookup compares the stored hash bits first
// and reads the key (through the caller's key_at(position)) only when they match. Growing
// rebuilds the slots from the stored bits without rehashing a string; removing a slot shifts the
// following displaced slots back (linear probing's deletion, no tombstones).
//
// Why not std::unordered_map: it allocates a node per key and rehashes node chains as a small
// container grows; under redis-benchmark SADD over 100,000 small sets that was 61 % of
// kvlab-server's CPU (experiments/commands/README.md has the A/B).
//
// Thread safety: none; used under the owning container's mutex.
// Invariants: at most 3/4 of the slots are used, and there are no slots when there are no keys;
// every position p of the array has exactly one slot {p + 1, hash32(key p)}, reachable from its
// home slot hash & mask without crossing an empty slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "structures/common/hash.hpp"

namespace kvlab::server {

class DenseIndex {
 public:
  static constexpr std::size_t kNone = ~std::size_t{0};

  static std::uint32_t hash(std::string_view key) {
    return static_cast<std::uint32_t>(kvlab::hash64(key));
  }

  // The position of key (whose hash is h), or kNone; key_at(p) gives the key at position p.
  template <class KeyAt>
  std::size_t find(std::string_view key, std::uint32_t h, KeyAt&& key_at) const {
    if (slots_.empty()) return kNone;
    for (std::size_t j = h & mask();; j = (j + 1) & mask()) {
      const std::uint64_t s = slots_[j];
      if (s == 0) return kNone;
      if (tag(s) == h && key_at(position(s)) == key) return position(s);
    }
  }
  // Indexes a new key at position pos (== the number of keys before it).
  void add(std::size_t pos, std::uint32_t h) {
    if ((pos + 1) * 4 > slots_.size() * 3) grow();
    place(pack(pos, h));
  }
  // Removes the slot of position pos (whose key's hash is h).
  void remove(std::size_t pos, std::uint32_t h) { remove_slot(slot_of(pos, h)); }
  // The key at position from (hash h) moved to position to.
  void move(std::size_t from, std::size_t to, std::uint32_t h) {
    slots_[slot_of(from, h)] = pack(to, h);
  }
  // No keys left: frees the slots.
  void clear() { std::vector<std::uint64_t>().swap(slots_); }
  std::size_t bytes() const { return slots_.capacity() * sizeof(std::uint64_t); }

 private:
  static constexpr std::size_t kMinSlots = 8;

  static std::uint64_t pack(std::size_t pos, std::uint32_t h) {
    return (static_cast<std::uint64_t>(pos + 1) << 32) | h;
  }
  static std::size_t position(std::uint64_t slot) { return (slot >> 32) - 1; }
  static std::uint32_t tag(std::uint64_t slot) { return static_cast<std::uint32_t>(slot); }
  std::size_t mask() const { return slots_.size() - 1; }

  std::size_t slot_of(std::size_t pos, std::uint32_t h) const {
    const std::uint64_t want = pack(pos, h);
    for (std::size_t j = h & mask();; j = (j + 1) & mask())
      if (slots_[j] == want) return j;
  }
  // Puts a slot in the first empty place from its home (there is one: load <= 3/4).
  void place(std::uint64_t slot) {
    std::size_t j = tag(slot) & mask();
    while (slots_[j] != 0) j = (j + 1) & mask();
    slots_[j] = slot;
  }
  // Empties slot j, then moves back each following slot whose probe run passes j (its home lies
  // cyclically outside (j, k]), which keeps every slot reachable from its home.
  void remove_slot(std::size_t j) {
    for (std::size_t k = (j + 1) & mask();; k = (k + 1) & mask()) {
      const std::uint64_t s = slots_[k];
      if (s == 0) break;
      const std::size_t home = tag(s) & mask();
      const bool passes_j = j <= k ? (home <= j || home > k) : (home <= j && home > k);
      if (passes_j) {
        slots_[j] = s;
        j = k;
      }
    }
    slots_[j] = 0;
  }
  // Doubles the slots (or makes the first kMinSlots), re-placing each from its stored bits.
  void grow() {
    std::vector<std::uint64_t> old = std::move(slots_);
    slots_.assign(old.empty() ? kMinSlots : old.size() * 2, 0);
    for (const std::uint64_t s : old)
      if (s != 0) place(s);
  }

  std::vector<std::uint64_t> slots_;
};

}  // namespace kvlab::server
