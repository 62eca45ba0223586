// The payload types of container values, one alias per Redis type, shared by the command
// families (and by keys.cpp-style generic code that needs to name them). See server/data/container.hpp
// for the locking protocol and server/commands/containers.hpp for how commands reach them.
//
// Lists: std::deque — O(1) push/pop at both ends and O(1) LINDEX/LSET (Redis's quicklist is
// O(N) for those); LINSERT/LREM/LTRIM are O(N) as in Redis.
// Hashes: HashFields (server/data/hash_fields.hpp) — an XXH3 unordered_map plus random picks for
// HRANDFIELD and a resumable HSCAN cursor.
#pragma once

#include <deque>
#include <string>

#include "server/data/container.hpp"
#include "server/data/encoding_limits.hpp"
#include "server/data/hash_fields.hpp"

namespace kvlab::server {

using ListObject = Container<std::deque<std::string>, ObjectType::kList>;
using HashObject = Container<HashFields, ObjectType::kHash>;

// Deep copies for COPY (see Container::clone): nullptr when src is dead or empty. A deque of
// std::string copies every element's bytes.
inline ListObject* clone_list(ListObject& src) {
  return src.clone(
      [](const std::deque<std::string>& from, std::deque<std::string>& to) { to = from; });
}
inline HashObject* clone_hash(HashObject& src) {
  return src.clone([](const HashFields& from, HashFields& to) { to.copy_from(from); });
}

// Whether Redis 7.0 would keep h as a listpack: at most hash-max-listpack-entries fields, and no
// field or value longer than hash-max-listpack-value bytes (encoding_limits()). Computed from the
// contents, where Redis converts one way on a write. O(N); REQUIRES: h's container locked.
inline bool hash_is_listpack(const HashFields& h) {
  const EncodingLimits lim = encoding_limits();
  if (h.size() > lim.hash_entries) return false;
  for (const auto& [f, v] : h)
    if (f.size() > lim.hash_value || v.size() > lim.hash_value) return false;
  return true;
}

}  // namespace kvlab::server
