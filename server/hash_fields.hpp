// The payload of a hash value: field -> value, with the two things Redis's dict gives HRANDFIELD
// and HSCAN that std::unordered_map does not: a cheap random field and a resumable cursor.
//
// Layout: a node-based std::unordered_map<std::string, std::string> hashed with XXH3 (transparent,
// so lookups by string_view build no string), plus an optional HSCAN index: a vector of
// (xxh3(field), pointer to the field's entry in its map node) sorted by hash.
//
// - Random field: pick a random bucket until a non-empty one turns up, then a random entry in it
//   (Redis's dictGetRandomKey does the same on its tables). The map is shrunk when erasures leave
//   fewer than one entry per 8 buckets, so the expected number of probes stays below ~10; after 64
//   empty probes it falls back to a uniform O(N) walk. Not exactly uniform: an entry that shares
//   its bucket is picked a little less often (Redis's "fair" variant has the same bias, smaller).
// - HSCAN cursor: "every field whose 64-bit hash is below the cursor has been returned". The index
//   is rebuilt (O(N log N)) when a scan starts (cursor 0) or after an erase invalidated it; a call
//   on an unchanged hash then costs O(log N + COUNT). Inserting never invalidates it: node-based
//   maps keep their keys in place across rehashing, and a field added during a scan may or may not
//   be returned (Redis's guarantee allows that). Fields present for the whole scan are returned,
//   fields with equal hashes are never split across pages.
//
// Thread safety: none of its own; it lives inside a Container and is used under the container's
// mutex only (the scan index is `mutable` because HSCAN reads the hash through a const reference).
// Invariants: when scan_valid_, every pointer in scan_ points at a live entry of map_.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "structures/common/hash.hpp"

namespace kvlab::server {

class HashFields {
 public:
  using Map = std::unordered_map<std::string, std::string, kvlab::StringHash, kvlab::StringEqual>;
  using const_iterator = Map::const_iterator;

  HashFields() = default;
  // Not copyable by accident: scan_ points into map_'s nodes, so a member-wise copy would point
  // into the source. copy_from() is the deep copy (COPY).
  HashFields(const HashFields&) = delete;
  HashFields& operator=(const HashFields&) = delete;

  // Replaces this hash's fields with copies of other's (the scan index is rebuilt on demand).
  void copy_from(const HashFields& other) {
    map_ = other.map_;
    scan_.clear();
    scan_valid_ = false;
  }

  bool empty() const { return map_.empty(); }
  std::size_t size() const { return map_.size(); }
  const_iterator begin() const { return map_.begin(); }
  const_iterator end() const { return map_.end(); }

  const std::string* get(std::string_view field) const {
    auto it = map_.find(field);
    return it == map_.end() ? nullptr : &it->second;
  }
  // The value may be changed in place (HINCRBY); the field may not.
  std::string* get(std::string_view field) {
    auto it = map_.find(field);
    return it == map_.end() ? nullptr : &it->second;
  }
  // Sets field to value; returns true when the field is new.
  bool set(std::string_view field, std::string_view value) {
    auto it = map_.find(field);
    if (it != map_.end()) {
      it->second.assign(value);
      return false;
    }
    map_.emplace(std::string(field), std::string(value));
    return true;
  }
  // Adds field only if absent; returns true when it did.
  bool set_if_absent(std::string_view field, std::string_view value) {
    if (map_.find(field) != map_.end()) return false;
    map_.emplace(std::string(field), std::string(value));
    return true;
  }
  bool erase(std::string_view field) {
    auto it = map_.find(field);
    if (it == map_.end()) return false;
    map_.erase(it);
    scan_valid_ = false;
    scan_.clear();
    // Keep at least one entry per 8 buckets so that random_entry() finds a non-empty bucket fast.
    if (map_.bucket_count() > 64 && map_.size() * 8 < map_.bucket_count()) map_.rehash(0);
    return true;
  }

  // A random entry; REQUIRES: !empty().
  template <class Rng>
  const Map::value_type& random_entry(Rng& rng) const {
    const std::size_t buckets = map_.bucket_count();
    for (int probe = 0; probe < 64; ++probe) {
      const std::size_t b = std::uniform_int_distribution<std::size_t>(0, buckets - 1)(rng);
      const std::size_t n = map_.bucket_size(b);
      if (n == 0) continue;
      auto it = map_.begin(b);
      std::advance(it, std::uniform_int_distribution<std::size_t>(0, n - 1)(rng));
      return *it;
    }
    auto it = map_.begin();
    std::advance(it, std::uniform_int_distribution<std::size_t>(0, map_.size() - 1)(rng));
    return *it;
  }

  static std::uint64_t scan_hash(std::string_view field) { return kvlab::hash64(field); }

  // Calls fn(field, value) for up to `count` fields (more when the last one's hash is shared)
  // whose hash is >= cursor, in hash order. Returns the next cursor, 0 when the scan is complete.
  template <class F>
  std::uint64_t scan(std::uint64_t cursor, std::size_t count, F&& fn) const {
    if (cursor == 0 || !scan_valid_) build_scan_index();
    auto it = std::lower_bound(scan_.begin(), scan_.end(), cursor,
                               [](const auto& e, std::uint64_t c) { return e.first < c; });
    std::size_t done = 0;
    while (it != scan_.end()) {
      if (done >= count && it->first != std::prev(it)->first) break;
      fn(std::string_view(it->second->first), std::string_view(it->second->second));
      ++done;
      ++it;
    }
    if (it == scan_.end()) return 0;
    return it->first;  // > 0: it follows a returned field with a smaller hash
  }

 private:
  void build_scan_index() const {
    scan_.clear();
    scan_.reserve(map_.size());
    for (const auto& entry : map_) scan_.emplace_back(scan_hash(entry.first), &entry);
    std::sort(scan_.begin(), scan_.end());
    scan_valid_ = true;
  }

  Map map_;
  mutable std::vector<std::pair<std::uint64_t, const Map::value_type*>> scan_;
  mutable bool scan_valid_ = false;
};

}  // namespace kvlab::server
