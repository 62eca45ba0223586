// PRIVATE to kvlab. Include only from .cpp files and from the internals of kvlab's own
// structures (structures/hash/kvlab.hpp); everything else uses the out-of-line kvlab::hash64 and
// kvlab::hash128 of structures/common/hash.hpp.
//
// XXH3 compiled inline (XXH_INLINE_ALL). The hash of a short key is a few multiplies, and a call
// into libxxhash through the PLT, with its length dispatch, cost about as much again; inlined, the
// compiler also sees the key length where it is a constant (papers/own-structures.md, the hash
// table's per-operation costs). xxhash.h is written for this mode: its functions become static
// inline and are renamed to XXH_INLINE_*, so no symbol clashes with the shared library.
//
// What escapes to the includer: xxhash.h's own declarations and its renaming macros (a later
// `#include <xxhash.h>` in the same translation unit is a no-op, and its XXH3_* names then call
// the inline copies, with the same results). XXH_INLINE_ALL itself does not escape: it is
// undefined again below unless the includer had defined it.
//
// The one-definition rule, strictly: xxh3_64() and xxh3_128() are external-linkage inline
// functions that call internal-linkage ones, which [basic.def.odr] does not allow. Every
// translation unit compiles the same code from the same header, so the copies the linker merges
// are identical.
#pragma once

#include <cstdint>
#include <string_view>

#include "structures/common/hash.hpp"

#ifdef XXH_INLINE_ALL
#include <xxhash.h>
#else
#define XXH_INLINE_ALL
#include <xxhash.h>
#undef XXH_INLINE_ALL
#endif

namespace kvlab::internal {

inline std::uint64_t xxh3_64(std::string_view key) {
  return XXH3_64bits(key.data(), key.size());
}

inline Hash128 xxh3_128(std::string_view key) {
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  return {h.low64, h.high64};
}

}  // namespace kvlab::internal
