// String hashing for every string-keyed table: XXH3 (xxHash 0.8), 64 and 128 bits.
// Transparent: the same functor hashes std::string and std::string_view identically, so lookups
// by string_view never build a std::string.
#pragma once

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvlab {

inline std::uint64_t hash64(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

struct Hash128 {
  std::uint64_t low;
  std::uint64_t high;
  friend bool operator==(const Hash128&, const Hash128&) = default;
};

inline Hash128 hash128(std::string_view key) {
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  return {h.low64, h.high64};
}

struct StringEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

struct StringHash {
  using is_transparent = void;
  using transparent_key_equal = StringEqual;  // oneTBB's spelling of heterogeneous lookup
  std::size_t operator()(std::string_view key) const { return hash64(key); }
  std::size_t operator()(const std::string& key) const { return hash64(key); }
};

// Byte-wise ordering (memcmp order, shorter prefix first), the order of ordered backends.
struct StringLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a < b; }
};

// Three-way comparison for libcds (negative, zero, positive).
struct StringCompare {
  int operator()(std::string_view a, std::string_view b) const { return a.compare(b); }
};

}  // namespace kvlab
