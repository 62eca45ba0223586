// String hashing for every string-keyed table: XXH3 (xxHash 0.8), 64 and 128 bits.
// Transparent: the same functor hashes std::string and std::string_view identically, so lookups
// by string_view never build a std::string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace kvlab {

struct Hash128 {
  std::uint64_t low;
  std::uint64_t high;
  friend bool operator==(const Hash128&, const Hash128&) = default;
};

// XXH3 of the key, 64 and 128 bits. Out of line (structures/common/hash.cpp, where XXH3 is
// compiled inline): one direct call per hash, and no xxhash.h or XXH_INLINE_ALL in the headers
// that users include. kvlab's own structures hash through the inline copies of
// structures/internal/xxh3.hpp instead; both give the same values.
std::uint64_t hash64(std::string_view key);
Hash128 hash128(std::string_view key);

// Key equality with the short-key cases inline: 4 to 16 bytes are two (possibly overlapping)
// loads per side instead of a call to memcmp, which with a length only known at run time GCC
// does not inline. Tables call it after their stored hashes matched, so it nearly always says yes.
inline bool key_equal(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  const char* p = a.data();
  const char* q = b.data();
  if (n >= 8 && n <= 16) {
    std::uint64_t p0, p1, q0, q1;
    std::memcpy(&p0, p, 8);
    std::memcpy(&q0, q, 8);
    std::memcpy(&p1, p + n - 8, 8);
    std::memcpy(&q1, q + n - 8, 8);
    return ((p0 ^ q0) | (p1 ^ q1)) == 0;
  }
  if (n >= 4 && n < 8) {
    std::uint32_t p0, p1, q0, q1;
    std::memcpy(&p0, p, 4);
    std::memcpy(&q0, q, 4);
    std::memcpy(&p1, p + n - 4, 4);
    std::memcpy(&q1, q + n - 4, 4);
    return ((p0 ^ q0) | (p1 ^ q1)) == 0;
  }
  return n == 0 || std::memcmp(p, q, n) == 0;
}

struct StringEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return key_equal(a, b); }
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
