// The payloads of the set and sorted-set families and their Container aliases (server/container.hpp
// gives them a lock and the access protocol of server/commands/containers.hpp).
//
// MemberSet: a hash index member -> position plus a dense vector of pointers to the index's keys
// (unordered_map nodes never move, so the pointers survive rehashing). Membership, insert and
// erase are O(1); a random member (SPOP, SRANDMEMBER) is O(1): pick a position; erase moves the
// last position into the hole. The same dense order gives SSCAN a cursor with Redis's guarantee
// at O(COUNT) per call (see ZSet::slots() in zset.hpp for the argument).
//
// Thread safety: none of its own; used only under the Container's mutex.
// Invariants: members_.size() == index_.size(); *members_[index_[m]] == m for every member m.
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
    index_.clear();
    members_.clear();
    index_.reserve(other.size());
    members_.reserve(other.size());
    for (const std::string* m : other.members_) insert(*m);
  }

  std::size_t size() const { return members_.size(); }
  bool empty() const { return members_.empty(); }
  bool contains(std::string_view m) const { return index_.find(m) != index_.end(); }

  // Returns true when m was added.
  bool insert(std::string_view m) {
    auto [it, added] = index_.try_emplace(std::string(m), members_.size());
    if (added) members_.push_back(&it->first);
    return added;
  }
  bool erase(std::string_view m) {
    auto it = index_.find(m);
    if (it == index_.end()) return false;
    erase_at(it->second);
    return true;
  }
  // The member at a position in [0, size()).
  const std::string& at(std::size_t i) const { return *members_[i]; }
  // Removes the member at position i; the last member takes its position.
  void erase_at(std::size_t i) {
    const std::string* last = members_.back();
    const auto victim = index_.find(std::string_view(*members_[i]));
    if (last != members_[i]) {
      members_[i] = last;
      index_.find(std::string_view(*last))->second = i;
    }
    members_.pop_back();
    index_.erase(victim);  // by iterator: the key argument would alias the erased element
  }

 private:
  // Transparent hashing (the project's XXH3 hasher): lookups by string_view build no temporary.
  std::unordered_map<std::string, std::size_t, StringHash, StringEqual> index_;
  std::vector<const std::string*> members_;
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
