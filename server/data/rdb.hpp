// Redis's RDB value encoding, as DUMP and RESTORE carry it: one value, serialized as Redis 7.0
// serializes it, so a DUMP from redis-server RESTOREs into kvlab and a DUMP from kvlab RESTOREs
// into redis-server.
//
// A payload is
//   <object type: 1 byte> <value> <RDB version: 2 bytes LE> <CRC64 of all before: 8 bytes LE>
// with Redis's CRC64 (Jones polynomial, reflected, initial value 0; "123456789" ->
// e9c6d914c4b8d9ca).
//
// Loading accepts every value encoding Redis 7.0 writes or still loads from older versions:
//   strings      raw, integer (8/16/32 bit), LZF-compressed
//   lists        QUICKLIST_2 (listpack and plain nodes), QUICKLIST (ziplist nodes), ZIPLIST, LIST
//   sets         SET, INTSET
//   hashes       HASH, LISTPACK, ZIPLIST, ZIPMAP
//   sorted sets  ZSET_2 (binary doubles), ZSET (doubles as text), LISTPACK, ZIPLIST
//   streams      STREAM_LISTPACKS_2 (7.0) and STREAM_LISTPACKS (5.0-6.2): node listpacks (deleted
//                entries included), metadata, consumer groups with their PELs and consumers
// Modules are refused (kvlab has none). Every byte is bounds-checked and every
// embedded blob (listpack, ziplist, intset, zipmap) is validated in full (Redis's "deep"
// sanitization): a payload that is not exactly one well-formed value, empty containers and
// duplicate members included, is refused, never read out of bounds. For streams kvlab checks
// more than Redis: a payload whose length is not its live entry count, whose nodes or entries are
// out of order, whose last ID is below an entry's, or with a node of deleted entries only, is
// refused (Redis 7.0 loads such a stream inconsistent; kvlab's Stream invariants forbid it).
// Lengths are checked against the bytes present before anything is allocated (an LZF string may
// expand at most 88-fold).
//
// Dumping picks the encoding Redis 7.0 would hold the value in with its default limits and writes
// it as Redis writes that encoding: QUICKLIST_2 with listpack nodes of up to 8 KB; an INTSET (up
// to 512 integers) or SET; a LISTPACK hash or sorted set (up to 128 entries of up to 64 bytes) or
// HASH / ZSET_2; a stream as STREAM_LISTPACKS_2 with the node boundaries Redis would have (kvlab
// models them, server/data/stream.hpp) but without deleted entries, which kvlab does not
// keep; strings (and those blobs) integer-encoded, or LZF-compressed past 20 bytes when that
// saves 4 bytes, as Redis does. Redis restores kvlab's payload with the encoding it gives its
// own. The bytes still differ from Redis's DUMP: kvlab's LZF compressor is its own, and element
// order within hashes and sets is kvlab's.
//
// Thread safety: the functions are pure except dump_value(), which locks a container's mutex
// while it reads it (server/data/container.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/data/object.hpp"

namespace kvlab::server::rdb {

inline constexpr std::uint16_t kVersion = 10;  // what Redis 7.0 writes and the newest it loads

// Redis's crc64 (crc64_jones) continued from crc over data.
std::uint64_t crc64(std::uint64_t crc, std::string_view data);

// Compresses in into an LZF block (liblzf's format, kvlab's own compressor: the bytes need not
// match liblzf's) of at most `limit` bytes. False when it does not fit.
bool lzf_compress(std::string_view in, std::size_t limit, std::string* out);

// Decompresses an LZF block (liblzf's format) into exactly out_len bytes at out. False when the
// input is malformed, refers before the start of the output, or does not produce exactly out_len.
bool lzf_decompress(std::string_view in, char* out, std::size_t out_len);

enum class LoadStatus { kOk, kBadVersionOrChecksum, kBadFormat };

// Checks a DUMP payload's footer (version <= kVersion, CRC64) and decodes its value into *out.
LoadStatus load_payload(std::string_view payload, ObjectRef* out);

// A list as Redis 7.0's quicklist would hold it (listpack nodes of up to 8 KB), for DEBUG OBJECT:
// node count, entries and the nodes' listpack bytes. False when the list was emptied meanwhile.
struct QuicklistShape {
  std::size_t nodes = 0, entries = 0, bytes = 0;
};
bool quicklist_shape(const ObjectRef& list, QuicklistShape* out);

// DEBUG SET-SKIP-CHECKSUM-VALIDATION: load_payload() stops checking the CRC64 (process-wide).
void set_skip_checksum(bool skip);

// Serializes o as a DUMP payload (type, value, version, CRC64) into *out. A container is read
// under its lock. False when o is a container that was emptied meanwhile (the key is gone).
bool dump_value(const ObjectRef& o, std::string* out);

}  // namespace kvlab::server::rdb
