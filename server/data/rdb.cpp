// Redis's RDB value encoding for DUMP/RESTORE (see rdb.hpp for the format and what is accepted).
//
// The loader is a recursive-descent reader over a bounded byte range: every read goes through
// Reader, which refuses to step past the end, and every embedded blob (listpack, ziplist, intset,
// zipmap) is walked entry by entry with its own bounds before any element is used. Elements are
// collected into the kvlab container directly; a duplicate member or field makes the whole
// payload invalid (as Redis's deep sanitization does).
//
// This file: the codecs both directions share (CRC-64, LZF); rdb_load.cpp reads payloads,
// rdb_dump.cpp writes them, and rdb_format.hpp holds the format's constants.

#include "server/data/rdb.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/data/rdb_format.hpp"
#include "server/data/set_types.hpp"
#include "server/data/stream.hpp"
#include "server/data/value_types.hpp"

namespace kvlab::server::rdb {

std::atomic<bool> g_skip_checksum{false};

namespace {

// ---- CRC64 (Jones), reflected table form ----------------------------------------------------

constexpr std::uint64_t kJonesReflected = 0x95AC9329AC4BC9B5ULL;  // 0xad93d23594c935a9 reversed

constexpr std::array<std::uint64_t, 256> make_crc_table() {
  std::array<std::uint64_t, 256> t{};
  for (std::uint64_t i = 0; i < 256; ++i) {
    std::uint64_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kJonesReflected : c >> 1;
    t[i] = c;
  }
  return t;
}

constexpr std::array<std::uint64_t, 256> kCrcTable = make_crc_table();

}  // namespace

std::uint64_t load_le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint64_t load_be(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

std::int64_t sign_extend(std::uint64_t v, int bits) {
  const std::uint64_t m = std::uint64_t{1} << (bits - 1);
  v &= (bits == 64) ? ~std::uint64_t{0} : ((std::uint64_t{1} << bits) - 1);
  return static_cast<std::int64_t>((v ^ m) - m);
}

std::string int_string(std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::uint64_t crc64(std::uint64_t crc, std::string_view data) {
  for (const char ch : data) {
    crc = kCrcTable[(crc ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (crc >> 8);
  }
  return crc;
}

bool lzf_compress(std::string_view in, std::size_t limit, std::string* out) {
  out->clear();
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  const std::size_t n = in.size();
  constexpr int kHashBits = 14;
  constexpr std::size_t kMaxOffset = 8191, kMaxMatch = 264, kMaxLiteral = 32;
  // table[h]: 1 + the last position whose next three bytes hashed to h (0: none).
  std::vector<std::uint32_t> table(std::size_t{1} << kHashBits, 0);
  auto hash = [&](std::size_t i) {
    const std::uint32_t v = (std::uint32_t{p[i]} << 16) | (std::uint32_t{p[i + 1]} << 8) | p[i + 2];
    return (v * 2654435761u) >> (32 - kHashBits);
  };
  std::size_t lit = 0;  // start of the pending literal run
  auto flush_literals = [&](std::size_t end) {
    while (lit < end) {
      const std::size_t k = std::min(kMaxLiteral, end - lit);
      out->push_back(static_cast<char>(k - 1));
      out->append(in.substr(lit, k));
      lit += k;
    }
  };
  std::size_t i = 0;
  while (i + 2 < n && out->size() <= limit) {
    const std::uint32_t h = hash(i);
    const std::size_t ref = table[h];
    table[h] = static_cast<std::uint32_t>(i + 1);
    if (ref == 0 || i - (ref - 1) - 1 > kMaxOffset || std::memcmp(p + ref - 1, p + i, 3) != 0) {
      ++i;
      continue;
    }
    const std::size_t from = ref - 1;
    const std::size_t max = std::min(kMaxMatch, n - i);
    std::size_t len = 3;
    while (len < max && p[from + len] == p[i + len]) ++len;
    flush_literals(i);
    const std::size_t off = i - from - 1, l = len - 2;
    if (l < 7) {
      out->push_back(static_cast<char>((l << 5) | (off >> 8)));
    } else {
      out->push_back(static_cast<char>((7 << 5) | (off >> 8)));
      out->push_back(static_cast<char>(l - 7));
    }
    out->push_back(static_cast<char>(off & 0xFF));
    for (std::size_t j = i + 1; j < i + len && j + 2 < n; ++j) {
      table[hash(j)] = static_cast<std::uint32_t>(j + 1);
    }
    i += len;
    lit = i;
  }
  if (out->size() > limit) return false;
  flush_literals(n);
  return out->size() <= limit;
}

bool lzf_decompress(std::string_view in, char* out, std::size_t out_len) {
  const auto* ip = reinterpret_cast<const unsigned char*>(in.data());
  const auto* const in_end = ip + in.size();
  std::size_t op = 0;
  while (ip < in_end) {
    const unsigned ctrl = *ip++;
    if (ctrl < 32) {  // a literal run of ctrl + 1 bytes
      const std::size_t n = ctrl + 1;
      if (n > static_cast<std::size_t>(in_end - ip) || n > out_len - op) return false;
      std::memcpy(out + op, ip, n);
      ip += n;
      op += n;
      continue;
    }
    // A back-reference: length (ctrl >> 5) + 2, more in a second byte when 7; offset 13 bits + 1.
    std::size_t len = ctrl >> 5;
    if (len == 7) {
      if (ip >= in_end) return false;
      len += *ip++;
    }
    if (ip >= in_end) return false;
    const std::size_t back = ((std::size_t{ctrl & 0x1Fu} << 8) | *ip++) + 1;
    len += 2;
    if (back > op || len > out_len - op) return false;
    // Byte by byte: the source may overlap the bytes being written (a run).
    for (std::size_t i = 0; i < len; ++i, ++op) out[op] = out[op - back];
  }
  return op == out_len;
}

void set_skip_checksum(bool skip) {
  g_skip_checksum.store(skip, std::memory_order_relaxed);
}

}  // namespace kvlab::server::rdb
