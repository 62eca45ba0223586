// Reading a DUMP payload (RESTORE, DEBUG RELOAD's snapshot): the checks of the footer, the value
// types and their packed encodings (listpack, ziplist, intset, zipmap, quicklist) walked with
// bounds checked at every step, streams with their groups. Bad input is refused, never trusted.

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

#include "server/data/rdb.hpp"
#include "server/data/rdb_format.hpp"
#include "server/data/set_types.hpp"
#include "server/data/stream.hpp"
#include "server/data/value_types.hpp"

namespace kvlab::server::rdb {

namespace {

// Bounded cursor over the payload's value bytes.
class Reader {
 public:
  explicit Reader(std::string_view s)
      : p_(reinterpret_cast<const unsigned char*>(s.data())), end_(p_ + s.size()) {}

  std::size_t remaining() const { return static_cast<std::size_t>(end_ - p_); }
  bool done() const { return p_ == end_; }

  bool byte(std::uint8_t* b) {
    if (p_ == end_) return false;
    *b = *p_++;
    return true;
  }
  bool take(std::size_t n, std::string_view* out) {
    if (n > remaining()) return false;
    *out = std::string_view(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }
  // rdbLoadLen: a length, or with *encoded set, a special string encoding in *len.
  bool length(std::uint64_t* len, bool* encoded) {
    std::uint8_t b = 0;
    if (!byte(&b)) return false;
    *encoded = false;
    const std::uint8_t kind = b >> 6;
    std::string_view rest;
    if (kind == kEncVal) {
      *encoded = true;
      *len = b & 0x3F;
    } else if (kind == k6BitLen) {
      *len = b & 0x3F;
    } else if (kind == k14BitLen) {
      if (!take(1, &rest)) return false;
      *len = (std::uint64_t{b & 0x3Fu} << 8) | static_cast<unsigned char>(rest[0]);
    } else if (b == k32BitLen) {
      if (!take(4, &rest)) return false;
      *len = load_be(reinterpret_cast<const unsigned char*>(rest.data()), 4);
    } else if (b == k64BitLen) {
      if (!take(8, &rest)) return false;
      *len = load_be(reinterpret_cast<const unsigned char*>(rest.data()), 8);
    } else {
      return false;
    }
    return true;
  }
  // A count (of elements, nodes...): never a special encoding.
  bool count(std::uint64_t* n) {
    bool encoded = false;
    return length(n, &encoded) && !encoded;
  }
  // rdbGenericLoadStringObject: a raw, integer or LZF string.
  bool string(std::string* out) {
    std::uint64_t len = 0;
    bool encoded = false;
    if (!length(&len, &encoded)) return false;
    std::string_view raw;
    if (!encoded) {
      if (!take(len, &raw)) return false;
      out->assign(raw);
      return true;
    }
    switch (len) {
      case kEncInt8:
      case kEncInt16:
      case kEncInt32: {
        const int n = 1 << len;
        if (!take(static_cast<std::size_t>(n), &raw)) return false;
        const auto* u = reinterpret_cast<const unsigned char*>(raw.data());
        *out = int_string(sign_extend(load_le(u, n), 8 * n));
        return true;
      }
      case kEncLzf: {
        std::uint64_t clen = 0, ulen = 0;
        if (!count(&clen) || !count(&ulen)) return false;
        if (!take(clen, &raw)) return false;
        // liblzf's densest token (3 bytes) expands to 264: anything claiming more is corrupt,
        // and refusing it first keeps a 20-byte payload from allocating gigabytes.
        if (ulen == 0 || ulen > clen * 88 || ulen > (std::uint64_t{1} << 32)) return false;
        out->resize(ulen);
        return lzf_decompress(raw, out->data(), ulen);
      }
      default:
        return false;
    }
  }
  // rdbLoadBinaryDoubleValue.
  bool binary_double(double* out) {
    std::string_view raw;
    if (!take(8, &raw)) return false;
    const std::uint64_t bits = load_le(reinterpret_cast<const unsigned char*>(raw.data()), 8);
    std::memcpy(out, &bits, sizeof *out);
    return true;
  }
  // rdbLoadDoubleValue: a length byte, 253/254/255 for nan/+inf/-inf, else that many ASCII bytes.
  bool text_double(double* out) {
    std::uint8_t n = 0;
    if (!byte(&n)) return false;
    if (n == 253) {
      *out = std::numeric_limits<double>::quiet_NaN();
      return true;
    }
    if (n == 254 || n == 255) {
      *out = n == 254 ? HUGE_VAL : -HUGE_VAL;
      return true;
    }
    std::string_view raw;
    if (!take(n, &raw)) return false;
    return parse_double_text(raw, out);
  }

  static bool parse_double_text(std::string_view raw, double* out) {
    if (raw.empty() || raw.size() > 127) return false;
    char buf[128];
    std::memcpy(buf, raw.data(), raw.size());
    buf[raw.size()] = '\0';
    char* end = nullptr;
    *out = std::strtod(buf, &end);
    return end == buf + raw.size() && static_cast<unsigned char>(buf[0]) > ' ';
  }

 private:
  const unsigned char* p_;
  const unsigned char* end_;
};

}  // namespace

std::size_t backlen_size(std::size_t len) {
  return len <= 127 ? 1 : len < 16383 ? 2 : len < 2097151 ? 3 : len < 268435455 ? 4 : 5;
}

namespace {

// Walks a listpack, calling fn(std::string&&) per element (integers as decimal text). Checks the
// header's byte count and element count, every entry's encoding, bounds and back-length, and the
// terminator. Returns false on any defect or when fn does.
template <class F>
bool walk_listpack(std::string_view blob, F&& fn) {
  const auto* p = reinterpret_cast<const unsigned char*>(blob.data());
  const std::size_t size = blob.size();
  if (size < 7 || load_le(p, 4) != size || p[size - 1] != 0xFF) return false;
  const std::uint64_t declared = load_le(p + 4, 2);
  std::uint64_t n = 0;
  std::size_t off = 6;
  while (off < size - 1) {
    const std::size_t avail = size - 1 - off;  // bytes before the terminator
    const unsigned char b = p[off];
    std::size_t head = 1, body = 0;  // encoding bytes, then data bytes
    bool is_int = true;
    std::int64_t iv = 0;
    auto need = [&](std::size_t k) { return k <= avail; };
    if ((b & 0x80) == 0) {
      iv = b & 0x7F;
    } else if ((b & 0xC0) == 0x80) {
      is_int = false;
      body = b & 0x3F;
    } else if ((b & 0xE0) == 0xC0) {
      head = 2;
      if (!need(2)) return false;
      iv = sign_extend((std::uint64_t{b & 0x1Fu} << 8) | p[off + 1], 13);
    } else if ((b & 0xF0) == 0xE0) {
      head = 2;
      if (!need(2)) return false;
      is_int = false;
      body = (std::size_t{b & 0x0Fu} << 8) | p[off + 1];
    } else if (b == 0xF0) {
      head = 5;
      if (!need(5)) return false;
      is_int = false;
      body = load_le(p + off + 1, 4);
    } else if (b >= 0xF1 && b <= 0xF4) {
      static constexpr int kWidth[] = {2, 3, 4, 8};
      const int w = kWidth[b - 0xF1];
      head = 1 + static_cast<std::size_t>(w);
      if (!need(head)) return false;
      iv = sign_extend(load_le(p + off + 1, w), 8 * w);
    } else {
      return false;  // 0xF5..0xFE unused, 0xFF is the terminator
    }
    const std::size_t entry = head + body;
    if (entry < head || !need(entry)) return false;
    const std::size_t backlen = backlen_size(entry);
    if (!need(entry + backlen)) return false;
    // The back-length is read from its last byte leftwards, 7 bits a byte, high bit = more.
    std::uint64_t bl = 0;
    for (std::size_t i = 0; i < backlen; ++i) {
      const unsigned char c = p[off + entry + backlen - 1 - i];
      bl |= std::uint64_t{c & 0x7Fu} << (7 * i);
      const bool more = (c & 0x80) != 0;
      if (more != (i + 1 < backlen)) return false;
    }
    if (bl != entry) return false;
    std::string s =
        is_int ? int_string(iv) : std::string(reinterpret_cast<const char*>(p + off + head), body);
    if (!fn(std::move(s))) return false;
    ++n;
    off += entry + backlen;
  }
  if (off != size - 1) return false;
  return declared == 65535 || declared == n;
}

// Walks a ziplist the same way: header (bytes, tail offset, count), entries with prev-lengths
// that match, the terminator, and a tail offset that names the last entry.
template <class F>
bool walk_ziplist(std::string_view blob, F&& fn) {
  const auto* p = reinterpret_cast<const unsigned char*>(blob.data());
  const std::size_t size = blob.size();
  if (size < 11 || load_le(p, 4) != size || p[size - 1] != 0xFF) return false;
  const std::uint64_t tail = load_le(p + 4, 4);
  const std::uint64_t declared = load_le(p + 8, 2);
  std::uint64_t n = 0;
  std::size_t off = 10, prev_size = 0, last = 10;
  while (off < size - 1) {
    const std::size_t avail = size - 1 - off;
    std::size_t pos = 0;
    // prevlen: one byte below 254, else 254 and four bytes.
    if (p[off] < 254) {
      if (p[off] != prev_size) return false;
      pos = 1;
    } else if (p[off] == 254) {
      if (avail < 5 || load_le(p + off + 1, 4) != prev_size) return false;
      pos = 5;
    } else {
      return false;
    }
    if (pos >= avail) return false;
    const unsigned char e = p[off + pos];
    std::size_t head = 1, body = 0;
    bool is_int = true;
    std::int64_t iv = 0;
    switch (e >> 6) {
      case 0:
        is_int = false;
        body = e & 0x3F;
        break;
      case 1:
        head = 2;
        if (pos + 2 > avail) return false;
        is_int = false;
        body = (std::size_t{e & 0x3Fu} << 8) | p[off + pos + 1];
        break;
      case 2:
        if (e != 0x80) return false;
        head = 5;
        if (pos + 5 > avail) return false;
        is_int = false;
        body = load_be(p + off + pos + 1, 4);
        break;
      default: {
        int w = 0;
        if (e == 0xC0) {
          w = 2;
        } else if (e == 0xD0) {
          w = 4;
        } else if (e == 0xE0) {
          w = 8;
        } else if (e == 0xF0) {
          w = 3;
        } else if (e == 0xFE) {
          w = 1;
        } else if (e >= 0xF1 && e <= 0xFD) {
          iv = (e & 0x0F) - 1;
        } else {
          return false;
        }
        head = 1 + static_cast<std::size_t>(w);
        if (pos + head > avail) return false;
        if (w > 0) iv = sign_extend(load_le(p + off + pos + 1, w), 8 * w);
      }
    }
    const std::size_t total = pos + head + body;
    if (total < pos + head || total > avail) return false;
    std::string s = is_int ? int_string(iv)
                           : std::string(reinterpret_cast<const char*>(p + off + pos + head), body);
    if (!fn(std::move(s))) return false;
    ++n;
    last = off;
    prev_size = total;
    off += total;
  }
  if (off != size - 1 || tail != last) return false;
  return declared == 65535 || declared == n;
}

// Walks an intset: encoding (2, 4 or 8), count, strictly ascending little-endian integers.
template <class F>
bool walk_intset(std::string_view blob, F&& fn) {
  const auto* p = reinterpret_cast<const unsigned char*>(blob.data());
  if (blob.size() < 8) return false;
  const std::uint64_t enc = load_le(p, 4), n = load_le(p + 4, 4);
  if (enc != 2 && enc != 4 && enc != 8) return false;
  if (n == 0 || 8 + enc * n != blob.size()) return false;
  std::int64_t prev = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const int w = static_cast<int>(enc);
    const std::int64_t v = sign_extend(load_le(p + 8 + i * enc, w), 8 * w);
    if (i > 0 && v <= prev) return false;
    prev = v;
    if (!fn(int_string(v))) return false;
  }
  return true;
}

// Walks a zipmap (Redis < 2.6 hashes): <count><len>key<len><free>value<free bytes>...<0xFF>.
template <class F>
bool walk_zipmap(std::string_view blob, F&& fn) {
  const auto* p = reinterpret_cast<const unsigned char*>(blob.data());
  const std::size_t size = blob.size();
  if (size < 2 || p[size - 1] != 0xFF) return false;
  std::size_t off = 1;
  std::uint64_t pairs = 0;
  auto read_len = [&](std::size_t* len) {
    if (off >= size - 1) return false;
    if (p[off] < 254) {
      *len = p[off];
      off += 1;
      return true;
    }
    if (p[off] != 254 || size - 1 - off < 5) return false;
    *len = load_le(p + off + 1, 4);
    off += 5;
    return *len >= 254;  // a shorter length has a one-byte form; Redis refuses the long one
  };
  while (off < size - 1) {
    std::size_t klen = 0, vlen = 0;
    if (!read_len(&klen) || klen > size - 1 - off) return false;
    std::string key(reinterpret_cast<const char*>(p + off), klen);
    off += klen;
    if (!read_len(&vlen) || off >= size - 1) return false;
    const std::size_t free = p[off++];
    if (vlen > size - 1 - off || free > size - 1 - off - vlen) return false;
    std::string val(reinterpret_cast<const char*>(p + off), vlen);
    off += vlen + free;
    if (!fn(std::move(key), std::move(val))) return false;
    ++pairs;
  }
  return off == size - 1 && (p[0] >= 254 || p[0] == pairs);
}

// Elements of a listpack or ziplist, by type byte.
template <class F>
bool walk_packed(bool ziplist, std::string_view blob, F&& fn) {
  return ziplist ? walk_ziplist(blob, fn) : walk_listpack(blob, fn);
}

// ---- values ----------------------------------------------------------------------------------

ObjectRef load_list(Reader& r, std::uint8_t type) {
  ObjectRef ref(ListObject::make());
  auto& data = static_cast<ListObject*>(ref.mutable_get())->data;
  auto push = [&](std::string&& s) {
    data.push_back(std::move(s));
    return true;
  };
  std::string blob;
  if (type == kTypeListZiplist) {
    if (!r.string(&blob) || !walk_ziplist(blob, push)) return {};
  } else {
    std::uint64_t n = 0;
    if (!r.count(&n)) return {};
    for (std::uint64_t i = 0; i < n; ++i) {
      if (r.remaining() == 0) return {};  // each element or node takes at least one byte
      if (type == kTypeList) {
        std::string s;
        if (!r.string(&s)) return {};
        data.push_back(std::move(s));
        continue;
      }
      std::uint64_t container = kQuicklistPacked;
      if (type == kTypeListQuicklist2 && !r.count(&container)) return {};
      if (!r.string(&blob)) return {};
      if (container == kQuicklistPlain) {
        data.push_back(std::move(blob));
      } else if (container == kQuicklistPacked) {
        // An empty node is skipped, as Redis does.
        if (!walk_packed(type == kTypeListQuicklist, blob, push)) return {};
      } else {
        return {};
      }
    }
  }
  if (data.empty()) return {};
  return ref;
}

ObjectRef load_set(Reader& r, std::uint8_t type) {
  ObjectRef ref(SetObject::make());
  auto& data = static_cast<SetObject*>(ref.mutable_get())->data;
  auto add = [&](std::string&& s) { return data.insert(s); };  // a duplicate is corrupt
  if (type == kTypeSetIntset) {
    std::string blob;
    if (!r.string(&blob) || !walk_intset(blob, add)) return {};
  } else {
    std::uint64_t n = 0;
    if (!r.count(&n)) return {};
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string s;
      if (!r.string(&s) || !add(std::move(s))) return {};
    }
  }
  if (data.empty()) return {};
  return ref;
}

ObjectRef load_hash(Reader& r, std::uint8_t type) {
  ObjectRef ref(HashObject::make());
  auto& data = static_cast<HashObject*>(ref.mutable_get())->data;
  auto put = [&](std::string&& f, std::string&& v) { return data.set_if_absent(f, v); };
  if (type == kTypeHash) {
    std::uint64_t n = 0;
    if (!r.count(&n)) return {};
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string f, v;
      if (!r.string(&f) || !r.string(&v) || !put(std::move(f), std::move(v))) return {};
    }
  } else {
    std::string blob;
    if (!r.string(&blob)) return {};
    if (type == kTypeHashZipmap) {
      if (!walk_zipmap(blob, put)) return {};
    } else {
      std::string field;
      bool have_field = false;
      auto pair = [&](std::string&& s) {
        if (!have_field) {
          field = std::move(s);
          have_field = true;
          return true;
        }
        have_field = false;
        return put(std::move(field), std::move(s));
      };
      if (!walk_packed(type == kTypeHashZiplist, blob, pair) || have_field) return {};
    }
  }
  if (data.empty()) return {};
  return ref;
}

ObjectRef load_zset(Reader& r, std::uint8_t type) {
  std::vector<std::pair<std::string, double>> items;
  std::size_t max_len = 0;
  if (type == kTypeZSet || type == kTypeZSet2) {
    std::uint64_t n = 0;
    if (!r.count(&n)) return {};
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string m;
      double score = 0;
      if (!r.string(&m)) return {};
      if (!(type == kTypeZSet2 ? r.binary_double(&score) : r.text_double(&score))) return {};
      max_len = std::max(max_len, m.size());
      items.emplace_back(std::move(m), score);
    }
  } else {
    std::string blob, member;
    bool have_member = false;
    auto pair = [&](std::string&& s) {
      if (!have_member) {
        member = std::move(s);
        have_member = true;
        return true;
      }
      have_member = false;
      double score = 0;
      if (!Reader::parse_double_text(s, &score)) return false;
      items.emplace_back(std::move(member), score);
      return true;
    };
    if (!r.string(&blob) || !walk_packed(type == kTypeZSetZiplist, blob, pair) || have_member)
      return {};
  }
  if (items.empty()) return {};
  ObjectRef ref(ZSetObject::make());
  auto& data = static_cast<ZSetObject*>(ref.mutable_get())->data;
  // Redis 7.0 keeps a listpack-encoded set as one (converting by count only) and turns a skiplist
  // one small enough into a listpack: note_creation() reproduces which (it shows in -0 scores).
  data.note_creation(items.size(), type == kTypeZSet || type == kTypeZSet2 ? max_len : 0);
  for (auto& [m, score] : items) {
    if (std::isnan(score)) return {};
    if (data.set(m, score) != ZSet::AddResult::kAdded) return {};  // duplicate member
  }
  return ref;
}

// ---- streams ---------------------------------------------------------------------------------
//
// RDB_TYPE_STREAM_LISTPACKS_2 (Redis 7.0; _LISTPACKS, Redis 5 and 6, lacks the fields marked 7.0):
//   <node count> { <master ID: string of 16 bytes, ms and seq big-endian> <listpack: string> }
//   <length> <last ID: ms seq> [7.0: <first ID> <max deleted ID> <entries added>]
//   <group count> { <name> <last delivered ID> [7.0: <entries read>]
//                   <PEL size> { <ID: 16 raw bytes> <delivery time: 8 bytes LE ms> <count> }
//                   <consumer count> { <name> <seen time: 8 bytes LE ms>
//                                      <PEL size> { <ID: 16 raw bytes> } } }
// IDs and counts are RDB lengths. A node's listpack is the layout stream.hpp describes: the master
// entry (live count, deleted count, field count, fields, 0), then per entry its flags (1 deleted,
// 2 same fields as the master), ID deltas against the master, [field count, fields and values |
// values], and its element count.

constexpr std::int64_t kEntryDeleted = 1, kEntrySameFields = 2;

StreamId id_from_raw(std::string_view raw) {
  const auto* u = reinterpret_cast<const unsigned char*>(raw.data());
  return {load_be(u, 8), load_be(u + 8, 8)};
}

bool read_id(Reader& r, StreamId* id) {
  return r.count(&id->ms) && r.count(&id->seq);
}

bool read_raw_id(Reader& r, StreamId* id) {
  std::string_view raw;
  if (!r.take(16, &raw)) return false;
  *id = id_from_raw(raw);
  return true;
}

bool read_ms_time(Reader& r, std::int64_t* t) {
  std::string_view raw;
  if (!r.take(8, &raw)) return false;
  *t = static_cast<std::int64_t>(load_le(reinterpret_cast<const unsigned char*>(raw.data()), 8));
  return true;
}

}  // namespace

bool canonical_int(std::string_view s, std::int64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && int_string(*v) == s;
}

namespace {

// One node: its listpack's entries appended to s. *prev is the last ID read so far (of any node,
// deleted entries included; *have_prev false before the first), *live counts the live entries.
bool load_stream_node(StreamId master, std::string_view blob, Stream& s, bool* have_prev,
                      StreamId* prev, std::uint64_t* live_total) {
  std::vector<std::string> el;
  if (!walk_listpack(blob, [&](std::string&& e) {
        el.push_back(std::move(e));
        return true;
      })) {
    return false;
  }
  std::size_t pos = 0;
  auto next_int = [&](std::int64_t* v) { return pos < el.size() && canonical_int(el[pos++], v); };
  std::int64_t count = 0, deleted = 0, nf = 0, zero = 0;
  if (!next_int(&count) || !next_int(&deleted) || !next_int(&nf) || count < 0 || deleted < 0 ||
      nf < 0 || static_cast<std::uint64_t>(nf) > el.size() - pos) {
    return false;
  }
  Stream::Fields master_fields(el.begin() + static_cast<std::ptrdiff_t>(pos),
                               el.begin() + static_cast<std::ptrdiff_t>(pos + nf));
  pos += static_cast<std::size_t>(nf);
  if (!next_int(&zero) || zero != 0) return false;
  s.load_node(master, master_fields);
  std::int64_t live = 0, dead = 0;
  std::vector<std::string_view> fv;
  while (pos < el.size()) {
    std::int64_t flags = 0, ms_delta = 0, seq_delta = 0, n = nf, lp_count = 0;
    if (!next_int(&flags) || (flags & ~(kEntryDeleted | kEntrySameFields)) != 0 ||
        !next_int(&ms_delta) || !next_int(&seq_delta)) {
      return false;
    }
    // Deltas wrap like Redis's unsigned arithmetic.
    const StreamId id{master.ms + static_cast<std::uint64_t>(ms_delta),
                      master.seq + static_cast<std::uint64_t>(seq_delta)};
    if (id < master || (*have_prev && id <= *prev)) return false;
    *have_prev = true;
    *prev = id;
    const bool same = (flags & kEntrySameFields) != 0;
    if (!same && (!next_int(&n) || n < 0)) return false;
    const std::size_t want = static_cast<std::size_t>(same ? n : 2 * n);
    if (static_cast<std::uint64_t>(n) > el.size() || want > el.size() - pos) return false;
    fv.clear();
    for (std::int64_t i = 0; i < n; ++i) {
      if (same) {
        fv.push_back(master_fields[static_cast<std::size_t>(i)]);
        fv.push_back(el[pos++]);
      } else {
        fv.push_back(el[pos++]);
        fv.push_back(el[pos++]);
      }
    }
    if (!next_int(&lp_count) || lp_count != (same ? n + 3 : 2 * n + 4)) return false;
    const bool is_deleted = (flags & kEntryDeleted) != 0;
    s.load_entry(id, is_deleted, fv);
    ++(is_deleted ? dead : live);
  }
  // Redis frees a node with its last live entry: a node without one is corrupt.
  if (live != count || dead != deleted || live == 0) return false;
  *live_total += static_cast<std::uint64_t>(live);
  return true;
}

ObjectRef load_stream(Reader& r, std::uint8_t type) {
  ObjectRef ref(StreamObject::make());
  Stream& s = static_cast<StreamObject*>(ref.mutable_get())->data;
  std::uint64_t nodes = 0, live = 0;
  if (!r.count(&nodes)) return {};
  bool have_prev = false;
  StreamId prev;
  for (std::uint64_t i = 0; i < nodes; ++i) {
    std::string key, blob;
    if (!r.string(&key) || key.size() != 16 || !r.string(&blob)) return {};
    const StreamId master = id_from_raw(key);
    if (have_prev && master <= prev) return {};  // nodes in order, no entry of two nodes
    if (!load_stream_node(master, blob, s, &have_prev, &prev, &live)) return {};
  }
  std::uint64_t length = 0;
  StreamId last_id, first_id, max_deleted;
  if (!r.count(&length) || length != live || !read_id(r, &last_id)) return {};
  if (have_prev && last_id < prev) return {};  // the last ID is at least every ID present
  std::uint64_t added = length;
  if (type == kTypeStreamListpacks2) {
    if (!read_id(r, &first_id) || !read_id(r, &max_deleted) || !r.count(&added)) return {};
  } else if (!s.entries().empty()) {
    first_id = s.entries().begin()->first;
  }
  s.load_meta(last_id, first_id, max_deleted, added);

  std::uint64_t ngroups = 0;
  if (!r.count(&ngroups)) return {};
  for (std::uint64_t g = 0; g < ngroups; ++g) {
    std::string name;
    StreamGroup group;
    if (!r.string(&name) || !read_id(r, &group.last_id)) return {};
    if (type == kTypeStreamListpacks2) {
      std::uint64_t read = 0;  // -1 (unknown) is written as 2^64 - 1
      if (!r.count(&read)) return {};
      group.entries_read = static_cast<std::int64_t>(read);
    } else {
      group.entries_read = s.estimate_distance(group.last_id);
    }
    std::uint64_t npel = 0;
    if (!r.count(&npel)) return {};
    for (std::uint64_t j = 0; j < npel; ++j) {
      StreamId id;
      StreamNack nack;
      if (!read_raw_id(r, &id) || !read_ms_time(r, &nack.delivery_time) ||
          !r.count(&nack.delivery_count)) {
        return {};
      }
      if (!group.pel.emplace(id, std::move(nack)).second) return {};  // duplicated PEL entry
    }
    std::uint64_t nconsumers = 0;
    if (!r.count(&nconsumers)) return {};
    for (std::uint64_t c = 0; c < nconsumers; ++c) {
      std::string cname;
      StreamConsumer consumer;
      std::uint64_t cpel = 0;
      if (!r.string(&cname) || !read_ms_time(r, &consumer.seen_time) || !r.count(&cpel)) return {};
      for (std::uint64_t j = 0; j < cpel; ++j) {
        StreamId id;
        if (!read_raw_id(r, &id)) return {};
        auto it = group.pel.find(id);
        // Every consumer entry is in the group's PEL, owned by no other consumer.
        if (it == group.pel.end() || !it->second.consumer.empty()) return {};
        it->second.consumer = cname;
        consumer.pel.insert(id);
      }
      if (!group.consumers.emplace(std::move(cname), std::move(consumer)).second) return {};
    }
    for (const auto& [id, nack] : group.pel)
      if (nack.consumer.empty()) return {};  // a PEL entry without a consumer
    if (!s.groups().emplace(std::move(name), std::move(group)).second) return {};
  }
  return ref;
}

ObjectRef load_value(Reader& r) {
  std::uint8_t type = 0;
  if (!r.byte(&type)) return {};
  switch (type) {
    case kTypeString: {
      std::string s;
      if (!r.string(&s) || s.size() > (std::size_t{512} << 20)) return {};
      return ObjectRef(Object::make_string(s));
    }
    case kTypeList:
    case kTypeListZiplist:
    case kTypeListQuicklist:
    case kTypeListQuicklist2:
      return load_list(r, type);
    case kTypeSet:
    case kTypeSetIntset:
      return load_set(r, type);
    case kTypeHash:
    case kTypeHashZipmap:
    case kTypeHashZiplist:
    case kTypeHashListpack:
      return load_hash(r, type);
    case kTypeZSet:
    case kTypeZSet2:
    case kTypeZSetZiplist:
    case kTypeZSetListpack:
      return load_zset(r, type);
    case kTypeStreamListpacks:
    case kTypeStreamListpacks2:
      return load_stream(r, type);
    default:
      return {};  // modules, unknown
  }
}

}  // namespace

LoadStatus load_payload(std::string_view payload, ObjectRef* out) {
  if (payload.size() < 10) return LoadStatus::kBadVersionOrChecksum;
  const auto* p = reinterpret_cast<const unsigned char*>(payload.data());
  const std::size_t n = payload.size();
  const std::uint64_t version = load_le(p + n - 10, 2);
  if (version > kVersion) return LoadStatus::kBadVersionOrChecksum;
  if (!g_skip_checksum.load(std::memory_order_relaxed) &&
      crc64(0, payload.substr(0, n - 8)) != load_le(p + n - 8, 8))
    return LoadStatus::kBadVersionOrChecksum;
  Reader r(payload.substr(0, n - 10));
  ObjectRef v = load_value(r);
  if (!v || !r.done()) return LoadStatus::kBadFormat;
  *out = std::move(v);
  return LoadStatus::kOk;
}

}  // namespace kvlab::server::rdb
