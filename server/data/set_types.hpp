// The payloads of the set and sorted-set families and their Container aliases (server/data/container.hpp
// gives them a lock and the access protocol of server/commands/containers.hpp).
//
// MemberSet: two encodings, chosen by the contents as Redis chooses its intset.
// - Compact (a new set starts so): every member is an integer in canonical decimal form (parse_i64,
//   as Redis's string2ll) and there are at most kCompactMax of them (and at most
//   set-max-intset-entries); they are held as a sorted array of int64. Membership is a binary
//   search, insert and erase move the tail: 8 bytes per member against about 50 in the general
//   encoding, which is what keeps many small sets of integers inside the caches.
// - General: the members in a dense vector (strings held in place: a member of up to 15 bytes
//   allocates nothing) and a DenseIndex (server/data/dense_index.hpp) over it. Membership, insert
//   and erase are O(1) expected; erase moves the last member into the hole.
// The first insert that breaks the compact rule converts the set to the general encoding, keeping
// the ascending order as its dense order; no insert or erase converts it back (as Redis's), only
// encode_from_contents() for a freshly computed result. A random member (SPOP, SRANDMEMBER) is
// O(1) in both: pick a position. SSCAN walks positions downwards (see ZSet::slots() in zset.hpp
// for the argument); in the compact encoding an insert may shift positions, but a compact set is
// an intset and answered whole (sets.cpp), as Redis answers an intset.
// What a client sees (OBJECT ENCODING, DUMP's type, the ascending order of SMEMBERS) follows
// intset(): whether Redis 7.0 would hold the set in an intset after the same changes. It is one-way
// as Redis's conversion: it turns false when a non-integer member is added or the set grows past
// set-max-intset-entries. compact() implies intset(); the converse fails only for a set of more
// than kCompactMax integers under a larger set-max-intset-entries.
//
// Thread safety: none of its own; used only under the Container's mutex.
// Invariants: compact_ => intset_; intset_ => every member is an integer;
// compact_ => ints_ is the union's live member, strictly ascending, and index_ is empty;
// !compact_ => members_ is the live member, index_ indexes exactly members_ (DenseIndex's
// invariants) and the members are distinct.
#pragma once

#include <algorithm>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/data/zset.hpp"
#include "server/data/container.hpp"
#include "server/data/dense_index.hpp"
#include "server/data/encoding_limits.hpp"
#include "server/protocol/reply.hpp"
#include "server/util/strings_util.hpp"
#include "structures/common/hash.hpp"

namespace kvlab::server {

class MemberSet {
 public:
  // The compact encoding's size bound whatever set-max-intset-entries says: an insert moves up to
  // this many integers, so a large configured limit cannot make inserts quadratic.
  static constexpr std::size_t kCompactMax = 1024;

  // A member as read: a view of a stored string (valid until the set changes), or an integer
  // member's decimal text held inside (valid as long as this object).
  class Member {
   public:
    explicit Member(std::string_view s) : sv_(s) {}
    explicit Member(std::int64_t v) : len_(static_cast<std::uint8_t>(format_i64(v, buf_))) {}
    std::string_view view() const { return len_ != 0 ? std::string_view(buf_, len_) : sv_; }
    operator std::string_view() const { return view(); }  // NOLINT: a member reads as a string
    std::size_t size() const { return view().size(); }
    std::string str() const { return std::string(view()); }

   private:
    std::string_view sv_;
    char buf_[24];
    std::uint8_t len_ = 0;  // > 0: an integer member, its text in buf_
  };

  MemberSet() : ints_() {}
  MemberSet(const MemberSet&) = delete;
  MemberSet& operator=(const MemberSet&) = delete;
  ~MemberSet() { destroy_storage(); }

  // Replaces this set's members with copies of other's, in other's order and encoding.
  void copy_from(const MemberSet& other) {
    if (compact_ != other.compact_) {
      destroy_storage();
      compact_ = other.compact_;
      if (compact_) {
        new (&ints_) std::vector<std::int64_t>();
      } else {
        new (&members_) std::vector<std::string>();
      }
    }
    intset_ = other.intset_;
    if (compact_) {
      ints_ = other.ints_;
    } else {
      members_ = other.members_;
    }
    index_ = other.index_;
  }

  std::size_t size() const { return compact_ ? ints_.size() : members_.size(); }
  bool empty() const { return size() == 0; }
  // Whether the set is in the compact encoding (its positions are then in ascending order).
  bool compact() const { return compact_; }
  // Whether Redis would hold this set in an intset (see above).
  bool intset() const { return intset_; }
  // The integers of a compact set, ascending. REQUIRES: compact().
  const std::vector<std::int64_t>& ints() const { return ints_; }
  bool contains(std::string_view m) const {
    if (compact_) {
      std::int64_t v = 0;
      return parse_i64(m, &v) && std::binary_search(ints_.begin(), ints_.end(), v);
    }
    return index_.find(m, DenseIndex::hash(m), key_at()) != DenseIndex::kNone;
  }
  // Bytes of the index, or of the compact array (MEMORY USAGE).
  std::size_t index_bytes() const {
    return compact_ ? ints_.capacity() * sizeof(std::int64_t) : index_.bytes();
  }

  // Returns true when m was added.
  bool insert(std::string_view m) {
    std::int64_t v = 0;
    if (compact_) {
      if (parse_i64(m, &v)) {
        const auto it = std::lower_bound(ints_.begin(), ints_.end(), v);
        if (it != ints_.end() && *it == v) return false;
        if (ints_.size() < compact_limit()) {  // then also size() <= set-max-intset-entries
          ints_.insert(it, v);
          return true;
        }
      }
      to_general();
    }
    const std::uint32_t h = DenseIndex::hash(m);
    if (index_.find(m, h, key_at()) != DenseIndex::kNone) return false;
    index_.add(members_.size(), h);
    members_.emplace_back(m);
    // Redis converts its intset after adding a member that is not an integer or that makes it
    // longer than set-max-intset-entries.
    if (intset_ && (!parse_i64(m, &v) || members_.size() > encoding_limits().set_intset_entries))
      intset_ = false;
    return true;
  }

  // Sets the encoding from the contents, as Redis's for a set built by adding these members to
  // an empty set (SINTER, SUNION, SDIFF and their STORE forms build their results so, while
  // compute() in sets.cpp also erases from a copy). O(N) (plus a sort when it compacts).
  void encode_from_contents() {
    if (compact_) return;  // then intset_ already holds, and no member was ever other than an int
    std::vector<std::int64_t> values(members_.size());
    bool ints = members_.size() <= encoding_limits().set_intset_entries;
    for (std::size_t i = 0; ints && i < members_.size(); ++i) ints = parse_i64(members_[i], &values[i]);
    intset_ = ints;
    if (!ints || members_.size() > compact_limit()) return;
    std::sort(values.begin(), values.end());
    members_.~vector();
    new (&ints_) std::vector<std::int64_t>(std::move(values));
    compact_ = true;
    index_.clear();
  }
  bool erase(std::string_view m) {
    if (compact_) {
      std::int64_t v = 0;
      if (!parse_i64(m, &v)) return false;
      const auto it = std::lower_bound(ints_.begin(), ints_.end(), v);
      if (it == ints_.end() || *it != v) return false;
      ints_.erase(it);
      return true;
    }
    const std::uint32_t h = DenseIndex::hash(m);
    const std::size_t i = index_.find(m, h, key_at());
    if (i == DenseIndex::kNone) return false;
    erase_at(i, h);
    return true;
  }
  // The member at a position in [0, size()).
  Member at(std::size_t i) const { return compact_ ? Member(ints_[i]) : Member(members_[i]); }
  // Removes the member at position i. Compact: the members above i move down one position;
  // general: the last member takes position i. Either way the members below i keep theirs.
  void erase_at(std::size_t i) {
    if (compact_) {
      ints_.erase(ints_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
    erase_at(i, DenseIndex::hash(members_[i]));
  }

 private:
  static std::size_t compact_limit() {
    return std::min<std::uint64_t>(kCompactMax, encoding_limits().set_intset_entries);
  }

  // Moves the integers into the general encoding, ascending order kept as the dense order.
  void to_general() {
    std::vector<std::int64_t> ints = std::move(ints_);
    ints_.~vector();
    new (&members_) std::vector<std::string>();
    compact_ = false;
    members_.reserve(ints.size() + 1);
    char buf[24];
    for (const std::int64_t v : ints) {
      const std::string_view m(buf, format_i64(v, buf));
      index_.add(members_.size(), DenseIndex::hash(m));
      members_.emplace_back(m);
    }
  }
  // Ends the lifetime of the active member of the union.
  void destroy_storage() {
    if (compact_) {
      ints_.~vector();
    } else {
      members_.~vector();
    }
  }

  // erase_at() when the member's hash h is known. REQUIRES: !compact_.
  void erase_at(std::size_t i, std::uint32_t h) {
    index_.remove(i, h);
    const std::size_t last = members_.size() - 1;
    if (i != last) {
      index_.move(last, i, DenseIndex::hash(members_[last]));
      members_[i] = std::move(members_[last]);
    }
    members_.pop_back();
    if (members_.empty()) index_.clear();
  }

  struct KeyAt {
    const std::vector<std::string>* members;
    std::string_view operator()(std::size_t i) const { return (*members)[i]; }
  };
  KeyAt key_at() const { return {&members_}; }

  // One of the two encodings' arrays, by compact_. A union, so that a set stays within its
  // allocation size class: 32 more bytes per set (a 192-byte SetObject instead of 160) cost 5 %
  // of SADD's CPU over 100,000 small sets (experiments/commands/README.md).
  union {
    std::vector<std::int64_t> ints_;    // compact_: the members, ascending
    std::vector<std::string> members_;  // !compact_: the members in dense order
  };
  // Unused (empty) while compact_. no_unique_address lets the two flags below sit in its tail
  // padding, for the same reason.
  [[no_unique_address]] DenseIndex index_;
  bool compact_ = true;
  bool intset_ = true;
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

// Whether Redis 7.0 would hold s in an intset (MemberSet::intset()). If so and values is not
// null, *values gets the members' values in s's order (ascending when s.compact()). O(N) for
// values; REQUIRES: s's container locked.
inline bool intset_values(const MemberSet& s, std::vector<std::int64_t>* values) {
  if (!s.intset()) return false;
  if (values == nullptr) return true;
  if (s.compact()) {
    *values = s.ints();
    return true;
  }
  values->resize(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!parse_i64(s.at(i), &(*values)[i])) return false;  // not reached: intset() holds ints only
  }
  return true;
}

}  // namespace kvlab::server
