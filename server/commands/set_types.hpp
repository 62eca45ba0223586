// The payloads of the set and sorted-set families and their Container aliases (server/container.hpp
// gives them a lock and the access protocol of server/commands/containers.hpp).
//
// MemberSet: the members in a dense vector (strings held in place: a member of up to 15 bytes
// allocates nothing) and an open-addressing index over it, as compact dictionaries do: a
// power-of-two array of 64-bit slots, each 0 (empty) or {position + 1, low 32 bits of the
// member's hash}, probed linearly from hash & mask. Membership, insert and erase are O(1)
// expected; growing rebuilds the slots from the stored hash bits without rehashing a string, and
// erase shifts the following displaced slots back (no tombstones). A random member (SPOP,
// SRANDMEMBER) is O(1): pick a position; erase moves the last member into the hole. The dense
// order gives SSCAN a cursor with Redis's guarantee at O(COUNT) per call (see ZSet::slots() in
// zset.hpp for the argument).
//
// It replaced an unordered_map index plus a vector of pointers into it: a SADD then allocated a
// node per member and rehashed node chains as small sets grew (61 % of kvlab-server's CPU under
// redis-benchmark SADD over 100,000 small sets, perf; experiments/commands has the A/B).
//
// Thread safety: none of its own; used only under the Container's mutex.
// Invariants: at most 3/4 of the slots are used, and slots_ is empty only when members_ is; every
// position i has exactly one slot {i + 1, hash32(members_[i])}, reachable from its home slot
// hash & mask without crossing an empty slot; members are distinct.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/command.hpp"
#include "server/commands/zset.hpp"
#include "server/container.hpp"
#include "server/reply.hpp"
#include "structures/common/hash.hpp"

namespace kvlab::server {

class MemberSet {
 public:
  MemberSet() = default;
  MemberSet(const MemberSet&) = delete;
  MemberSet& operator=(const MemberSet&) = delete;

  // Replaces this set's members with copies of other's, in other's dense order.
  void copy_from(const MemberSet& other) {
    members_ = other.members_;
    slots_ = other.slots_;
  }

  std::size_t size() const { return members_.size(); }
  bool empty() const { return members_.empty(); }
  bool contains(std::string_view m) const { return find(m, hash32(m)) != kNone; }
  // Bytes of the index (MEMORY USAGE).
  std::size_t index_bytes() const { return slots_.capacity() * sizeof(std::uint64_t); }

  // Returns true when m was added.
  bool insert(std::string_view m) {
    const std::uint32_t h = hash32(m);
    if (find(m, h) != kNone) return false;
    if ((members_.size() + 1) * 4 > slots_.size() * 3) grow();
    members_.emplace_back(m);
    place(members_.size() - 1, h);
    return true;
  }
  bool erase(std::string_view m) {
    const std::size_t slot = find(m, hash32(m));
    if (slot == kNone) return false;
    erase_at(position(slots_[slot]));
    return true;
  }
  // The member at a position in [0, size()).
  const std::string& at(std::size_t i) const { return members_[i]; }
  // Removes the member at position i; the last member takes its position.
  void erase_at(std::size_t i) {
    remove_slot(slot_of(i, hash32(members_[i])));
    const std::size_t last = members_.size() - 1;
    if (i != last) {
      const std::uint32_t h = hash32(members_[last]);
      slots_[slot_of(last, h)] = pack(i, h);
      members_[i] = std::move(members_[last]);
    }
    members_.pop_back();
    if (members_.empty()) std::vector<std::uint64_t>().swap(slots_);  // frees the index
  }

 private:
  static constexpr std::size_t kNone = ~std::size_t{0};
  static constexpr std::size_t kMinSlots = 8;

  static std::uint32_t hash32(std::string_view m) { return static_cast<std::uint32_t>(hash64(m)); }
  static std::uint64_t pack(std::size_t pos, std::uint32_t h) {
    return (static_cast<std::uint64_t>(pos + 1) << 32) | h;
  }
  static std::size_t position(std::uint64_t slot) { return (slot >> 32) - 1; }
  static std::uint32_t tag(std::uint64_t slot) { return static_cast<std::uint32_t>(slot); }
  std::size_t mask() const { return slots_.size() - 1; }

  // The slot holding m (whose hash is h), or kNone.
  std::size_t find(std::string_view m, std::uint32_t h) const {
    if (slots_.empty()) return kNone;
    for (std::size_t j = h & mask();; j = (j + 1) & mask()) {
      const std::uint64_t s = slots_[j];
      if (s == 0) return kNone;
      if (tag(s) == h && members_[position(s)] == m) return j;
    }
  }
  // The slot that points at position i (which exists; h is its member's hash).
  std::size_t slot_of(std::size_t i, std::uint32_t h) const {
    const std::uint64_t want = pack(i, h);
    for (std::size_t j = h & mask();; j = (j + 1) & mask())
      if (slots_[j] == want) return j;
  }
  // Puts {i, h} in the first empty slot from h's home (there is one: load <= 3/4).
  void place(std::size_t i, std::uint32_t h) {
    std::size_t j = h & mask();
    while (slots_[j] != 0) j = (j + 1) & mask();
    slots_[j] = pack(i, h);
  }
  // Empties slot j, then moves back each following slot whose home is not in (j, k]: linear
  // probing's deletion, which keeps every slot reachable from its home.
  void remove_slot(std::size_t j) {
    for (std::size_t k = (j + 1) & mask();; k = (k + 1) & mask()) {
      const std::uint64_t s = slots_[k];
      if (s == 0) break;
      const std::size_t home = tag(s) & mask();
      // k's probe run passes j when its home lies cyclically outside (j, k].
      const bool passes_j = j <= k ? (home <= j || home > k) : (home <= j && home > k);
      if (passes_j) {
        slots_[j] = s;
        j = k;
      }
    }
    slots_[j] = 0;
  }
  // Doubles the slots (or makes the first kMinSlots), re-placing each from its stored hash bits.
  void grow() {
    std::vector<std::uint64_t> old = std::move(slots_);
    slots_.assign(old.empty() ? kMinSlots : old.size() * 2, 0);
    for (const std::uint64_t s : old)
      if (s != 0) place(position(s), tag(s));
  }

  std::vector<std::string> members_;
  std::vector<std::uint64_t> slots_;
};

using SetObject = Container<MemberSet, ObjectType::kSet>;
using ZSetObject = Container<ZSet, ObjectType::kZSet>;

// A score reply: a double (RESP2: a bulk string, formatted as Redis 7.0 does; see format_score).
inline void reply_score(ReplyWriter& r, double v) {
  r.dbl(v);
}

// Deep copies for COPY (see Container::clone): nullptr when src is dead or empty.
inline SetObject* clone_set(SetObject& src) {
  return src.clone([](const MemberSet& from, MemberSet& to) { to.copy_from(from); });
}
inline ZSetObject* clone_zset(ZSetObject& src) {
  return src.clone([](const ZSet& from, ZSet& to) { to.copy_from(from); });
}

// SSCAN/ZSCAN arguments: key cursor [MATCH pattern] [COUNT count].
struct ScanArgs {
  std::uint64_t cursor = 0;
  std::uint64_t count = 10;
  std::string_view pattern;
  bool has_pattern = false;
};
// Redis's order: the cursor (argv[2]) is parsed first, then the key is looked up (a missing key
// answers an empty scan, another type WRONGTYPE), and only then the options (argv[3...]). Each
// replies "ERR invalid cursor" or a syntax/integer error and returns false. (Defined in sets.cpp.)
bool parse_scan_cursor_arg(CommandContext& ctx, ScanArgs* a);
bool parse_scan_options(CommandContext& ctx, ScanArgs* a);

}  // namespace kvlab::server
