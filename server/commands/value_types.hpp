// The payload types of container values, one alias per Redis type, shared by the command
// families (and by keys.cpp-style generic code that needs to name them). See server/container.hpp
// for the locking protocol and server/commands/containers.hpp for how commands reach them.
//
// Lists: std::deque — O(1) push/pop at both ends and O(1) LINDEX/LSET (Redis's quicklist is
// O(N) for those); LINSERT/LREM/LTRIM are O(N) as in Redis.
// Hashes: HashFields (server/hash_fields.hpp) — an XXH3 unordered_map plus random picks for
// HRANDFIELD and a resumable HSCAN cursor.
#pragma once

#include <deque>
#include <string>

#include "server/container.hpp"
#include "server/hash_fields.hpp"

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

}  // namespace kvlab::server
