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
// Small containers have no slot array: up to kLinearMax keys, the keys' hash bits sit in the
// index itself (tags_, inside the container's payload) and find() compares them in order,
// reading a key only when its bits match. A set or hash of a few members then costs one
// dependent cache miss fewer per command (the slot array, 42 % of MemberSet::insert's samples
// under SADD over 100,000 small sets). The first add past kLinearMax builds the slots from the
// tags; from then on the index stays hashed until it is emptied.
//
// Why not std::unordered_map: it allocates a node per key and rehashes node chains as a small
// container grows; under redis-benchmark SADD over 100,000 small sets that was 61 % of
// kvlab-server's CPU (experiments/commands/README.md has the A/B).
//
// Thread safety: none; used under the owning container's mutex.
// Invariants: n_ is the number of keys. Linear mode: no slots, n_ <= kLinearMax, and tags_[p]
// is hash32(key p) for every p < n_. Hashed mode: at most 3/4 of the slots are used; every
// position p of the array has exactly one slot {p + 1, hash32(key p)}, reachable from its home
// slot hash & mask without crossing an empty slot. There are no slots when there are no keys.
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
  // Containers of up to this many keys are searched in order, without slots.
  static constexpr std::size_t kLinearMax = 8;

  static std::uint32_t hash(std::string_view key) {
    return static_cast<std::uint32_t>(kvlab::hash64(key));
  }

  // The position of key (whose hash is h), or kNone; key_at(p) gives the key at position p.
  template <class KeyAt>
  std::size_t find(std::string_view key, std::uint32_t h, KeyAt&& key_at) const {
    if (slots_.empty()) {  // linear mode (or no keys: n_ == 0)
      for (std::size_t p = 0; p < n_; ++p)
        if (tags_[p] == h && key_at(p) == key) return p;
      return kNone;
    }
    for (std::size_t j = h & mask();; j = (j + 1) & mask()) {
      const std::uint64_t s = slots_[j];
      if (s == 0) return kNone;
      if (tag(s) == h && key_at(position(s)) == key) return position(s);
    }
  }
  // Indexes a new key at position pos (== the number of keys before it).
  void add(std::size_t pos, std::uint32_t h) {
    n_ = static_cast<std::uint32_t>(pos + 1);
    if (slots_.empty()) {
      if (n_ <= kLinearMax) {
        tags_[pos] = h;
        return;
      }
      std::size_t size = kMinSlots;
      while (std::size_t{n_} * 4 > size * 3) size *= 2;
      slots_.assign(size, 0);
      for (std::size_t p = 0; p < pos; ++p) place(pack(p, tags_[p]));
      place(pack(pos, h));
      return;
    }
    if (std::size_t{n_} * 4 > slots_.size() * 3) grow();
    place(pack(pos, h));
  }
  // Removes position pos (whose key's hash is h); the caller then moves the last key into it
  // (move()) or drops the last position.
  void remove(std::size_t pos, std::uint32_t h) {
    if (!slots_.empty()) remove_slot(slot_of(pos, h));
    --n_;
  }
  // The key at position from (hash h) moved to position to.
  void move(std::size_t from, std::size_t to, std::uint32_t h) {
    if (slots_.empty())
      tags_[to] = h;
    else
      slots_[slot_of(from, h)] = pack(to, h);
  }
  // No keys left: frees the slots (back to linear mode).
  void clear() {
    std::vector<std::uint64_t>().swap(slots_);
    n_ = 0;
  }
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
  // Doubles the slots, re-placing each from its stored bits.
  void grow() {
    std::vector<std::uint64_t> old = std::move(slots_);
    slots_.assign(old.size() * 2, 0);
    for (const std::uint64_t s : old)
      if (s != 0) place(s);
  }

  std::vector<std::uint64_t> slots_;
  std::uint32_t n_ = 0;  // positions fit in a slot's 32 bits anyway
  std::uint32_t tags_[kLinearMax] = {};  // linear mode: the keys' hash bits, by position
};

}  // namespace kvlab::server
