// The out-of-line string hashes of structures/common/hash.hpp: XXH3 compiled inline here, once,
// so that public headers need neither xxhash.h nor XXH_INLINE_ALL.
#include "structures/common/hash.hpp"

#include "structures/internal/xxh3.hpp"

namespace kvlab {

std::uint64_t hash64(std::string_view key) {
  return internal::xxh3_64(key);
}

Hash128 hash128(std::string_view key) {
  return internal::xxh3_128(key);
}

}  // namespace kvlab
