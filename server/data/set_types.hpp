// The payloads of the set and sorted-set families and their Container aliases (server/data/container.hpp
// gives them a lock and the access protocol of server/commands/containers.hpp).
//
// MemberSet: the members in a dense vector (strings held in place: a member of up to 15 bytes
// allocates nothing) and a DenseIndex (server/data/dense_index.hpp) over it. Membership, insert and
// erase are O(1) expected. A random member (SPOP, SRANDMEMBER) is O(1): pick a position; erase
// moves the last member into the hole. The dense order gives SSCAN a cursor with Redis's
// guarantee at O(COUNT) per call (see ZSet::slots() in zset.hpp for the argument).
//
// Thread safety: none of its own; used only under the Container's mutex.
// Invariants: index_ indexes exactly members_ (DenseIndex's invariants); members are distinct.
#pragma once

#include <cstdint>
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
  MemberSet() = default;
  MemberSet(const MemberSet&) = delete;
  MemberSet& operator=(const MemberSet&) = delete;

  // Replaces this set's members with copies of other's, in other's dense order.
  void copy_from(const MemberSet& other) {
    members_ = other.members_;
    index_ = other.index_;
  }

  std::size_t size() const { return members_.size(); }
  bool empty() const { return members_.empty(); }
  bool contains(std::string_view m) const {
    return index_.find(m, DenseIndex::hash(m), key_at()) != DenseIndex::kNone;
  }
  // Bytes of the index (MEMORY USAGE).
  std::size_t index_bytes() const { return index_.bytes(); }

  // Returns true when m was added.
  bool insert(std::string_view m) {
    const std::uint32_t h = DenseIndex::hash(m);
    if (index_.find(m, h, key_at()) != DenseIndex::kNone) return false;
    index_.add(members_.size(), h);
    members_.emplace_back(m);
    return true;
  }
  bool erase(std::string_view m) {
    const std::uint32_t h = DenseIndex::hash(m);
    const std::size_t i = index_.find(m, h, key_at());
    if (i == DenseIndex::kNone) return false;
    erase_at(i, h);
    return true;
  }
  // The member at a position in [0, size()).
  const std::string& at(std::size_t i) const { return members_[i]; }
  // Removes the member at position i; the last member takes its position.
  void erase_at(std::size_t i) { erase_at(i, DenseIndex::hash(members_[i])); }

 private:
  // erase_at() when the member's hash h is known.
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

  std::vector<std::string> members_;
  DenseIndex index_;
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

// Whether Redis 7.0 would keep s as an intset: at most set-max-intset-entries members, each an
// integer (encoding_limits()). If so and values is not null, *values gets the members' values in
// s's dense order. O(N); REQUIRES: s's container locked.
inline bool intset_values(const MemberSet& s, std::vector<std::int64_t>* values) {
  if (s.size() > encoding_limits().set_intset_entries) return false;
  if (values != nullptr) values->resize(s.size());
  std::int64_t v = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!parse_i64(s.at(i), &v)) return false;
    if (values != nullptr) (*values)[i] = v;
  }
  return true;
}

}  // namespace kvlab::server
