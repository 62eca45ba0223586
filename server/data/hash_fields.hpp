// The payload of a hash value: field -> value, with the two things Redis's dict gives HRANDFIELD
// and HSCAN: a cheap random field and a resumable cursor.
//
// Layout: the (field, value) pairs in a dense vector (strings held in place: up to 15 bytes
// allocate nothing) and a DenseIndex (server/data/dense_index.hpp) from field to position, plus an
// optional HSCAN index: a vector of (xxh3(field), position) sorted by hash.
//
// - Random field: a uniform position, O(1) (Redis's dictGetRandomKey is slightly biased; this is
//   not).
// - HSCAN cursor: "every field whose 64-bit hash is below the cursor has been returned". The index
//   is rebuilt (O(N log N)) when a scan starts (cursor 0) or after an erase invalidated it (an
//   erase moves the last pair into the hole); a call on an unchanged hash then costs
//   O(log N + COUNT). Inserting never invalidates it: positions of existing pairs do not change
//   when a pair is appended, and a field added during a scan may or may not be returned (Redis's
//   guarantee allows that). Fields present for the whole scan are returned, fields with equal
//   hashes are never split across pages.
//
// Thread safety: none of its own; it lives inside a Container and is used under the container's
// mutex only (the scan index is `mutable` because HSCAN reads the hash through a const reference).
// Invariants: index_ indexes exactly the fields of entries_, which are distinct; when scan_valid_,
// scan_ holds every position of entries_ once, with its field's hash.
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

#include "server/data/dense_index.hpp"
#include "structures/common/hash.hpp"

namespace kvlab::server {

class HashFields {
 public:
  using Entry = std::pair<std::string, std::string>;
  using const_iterator = std::vector<Entry>::const_iterator;

  HashFields() = default;
  HashFields(const HashFields&) = delete;
  HashFields& operator=(const HashFields&) = delete;

  // Replaces this hash's fields with copies of other's (the scan index is rebuilt on demand).
  void copy_from(const HashFields& other) {
    entries_ = other.entries_;
    index_ = other.index_;
    scan_.clear();
    scan_valid_ = false;
  }

  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  // Bytes of the index (MEMORY USAGE).
  std::size_t index_bytes() const { return index_.bytes(); }

  const std::string* get(std::string_view field) const {
    const std::size_t i = find(field, DenseIndex::hash(field));
    return i == DenseIndex::kNone ? nullptr : &entries_[i].second;
  }
  // The value may be changed in place (HINCRBY); the field may not.
  std::string* get(std::string_view field) {
    const std::size_t i = find(field, DenseIndex::hash(field));
    return i == DenseIndex::kNone ? nullptr : &entries_[i].second;
  }
  // Sets field to value; returns true when the field is new.
  bool set(std::string_view field, std::string_view value) {
    const std::uint32_t h = DenseIndex::hash(field);
    const std::size_t i = find(field, h);
    if (i != DenseIndex::kNone) {
      entries_[i].second.assign(value);
      return false;
    }
    append(field, value, h);
    return true;
  }
  // Adds field only if absent; returns true when it did.
  bool set_if_absent(std::string_view field, std::string_view value) {
    const std::uint32_t h = DenseIndex::hash(field);
    if (find(field, h) != DenseIndex::kNone) return false;
    append(field, value, h);
    return true;
  }
  bool erase(std::string_view field) {
    const std::uint32_t h = DenseIndex::hash(field);
    const std::size_t i = find(field, h);
    if (i == DenseIndex::kNone) return false;
    index_.remove(i, h);
    const std::size_t last = entries_.size() - 1;
    if (i != last) {
      index_.move(last, i, DenseIndex::hash(entries_[last].first));
      entries_[i] = std::move(entries_[last]);
    }
    entries_.pop_back();
    if (entries_.empty()) index_.clear();
    scan_valid_ = false;
    scan_.clear();
    return true;
  }

  // A random entry, uniformly; REQUIRES: !empty().
  template <class Rng>
  const Entry& random_entry(Rng& rng) const {
    return entries_[std::uniform_int_distribution<std::size_t>(0, entries_.size() - 1)(rng)];
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
      const Entry& e = entries_[it->second];
      fn(std::string_view(e.first), std::string_view(e.second));
      ++done;
      ++it;
    }
    if (it == scan_.end()) return 0;
    return it->first;  // > 0: it follows a returned field with a smaller hash
  }

 private:
  struct KeyAt {
    const std::vector<Entry>* entries;
    std::string_view operator()(std::size_t i) const { return (*entries)[i].first; }
  };
  std::size_t find(std::string_view field, std::uint32_t h) const {
    return index_.find(field, h, KeyAt{&entries_});
  }
  void append(std::string_view field, std::string_view value, std::uint32_t h) {
    index_.add(entries_.size(), h);
    entries_.emplace_back(std::string(field), std::string(value));
  }
  void build_scan_index() const {
    scan_.clear();
    scan_.reserve(entries_.size());
    for (std::size_t i = 0; i < entries_.size(); ++i)
      scan_.emplace_back(scan_hash(entries_[i].first), i);
    std::sort(scan_.begin(), scan_.end());
    scan_valid_ = true;
  }

  std::vector<Entry> entries_;
  DenseIndex index_;
  mutable std::vector<std::pair<std::uint64_t, std::size_t>> scan_;
  mutable bool scan_valid_ = false;
};

}  // namespace kvlab::server
