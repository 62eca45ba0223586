// Redis 7.0's small-container thresholds: CONFIG GET/SET set-max-intset-entries,
// hash-max-listpack-entries/-value and zset-max-listpack-entries/-value (Redis's defaults 512,
// 512, 64, 128, 64). kvlab stores each container type one way; these decide where it answers as
// Redis's small encodings would: OBJECT ENCODING (keys.cpp), SSCAN/HSCAN/ZSCAN whole in one page,
// an intset's ascending order (sets.cpp), -0 read back as 0 from a listpack sorted set (zset.hpp).
//
// Thread safety: each threshold is an atomic on its own, read and written relaxed: a reader that
// sees an old value during a CONFIG SET answers as Redis would have just before it, and no other
// memory is published with these values. Header-only, so that the structures' unit tests
// (zset_test) need no server library.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace kvlab::server {

struct EncodingLimits {
  std::uint64_t set_intset_entries, hash_entries, hash_value, zset_entries, zset_value;
};

namespace encoding_detail {
struct AtomicLimits {
  std::atomic<std::uint64_t> set_intset_entries{512}, hash_entries{512}, hash_value{64},
      zset_entries{128}, zset_value{64};
};
inline AtomicLimits g_limits;
}  // namespace encoding_detail

inline EncodingLimits encoding_limits() {
  constexpr auto r = std::memory_order_relaxed;  // see the file comment
  const auto& g = encoding_detail::g_limits;
  return {g.set_intset_entries.load(r), g.hash_entries.load(r), g.hash_value.load(r),
          g.zset_entries.load(r), g.zset_value.load(r)};
}

// Applies CONFIG SET of one of the five parameters (its canonical name); other names are ignored.
inline void set_encoding_limit(std::string_view name, std::uint64_t v) {
  constexpr auto r = std::memory_order_relaxed;  // see the file comment
  auto& g = encoding_detail::g_limits;
  if (name == "set-max-intset-entries") g.set_intset_entries.store(v, r);
  if (name == "hash-max-listpack-entries") g.hash_entries.store(v, r);
  if (name == "hash-max-listpack-value") g.hash_value.store(v, r);
  if (name == "zset-max-listpack-entries") g.zset_entries.store(v, r);
  if (name == "zset-max-listpack-value") g.zset_value.store(v, r);
}

}  // namespace kvlab::server
