// Writing a DUMP payload as Redis 7.0 writes one (RDB version 10): strings, lists as quicklists of
// listpacks, sets, hashes and sorted sets in their compact or full encodings, streams.

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

// ---- dumping ---------------------------------------------------------------------------------

void put_len(std::string* out, std::uint64_t len) {
  if (len < 64) {
    out->push_back(static_cast<char>(len));
  } else if (len < 16384) {
    out->push_back(static_cast<char>(0x40 | (len >> 8)));
    out->push_back(static_cast<char>(len & 0xFF));
  } else {
    const bool wide = len > 0xFFFFFFFFULL;
    out->push_back(static_cast<char>(wide ? k64BitLen : k32BitLen));
    for (int i = wide ? 7 : 3; i >= 0; --i) out->push_back(static_cast<char>(len >> (8 * i)));
  }
}

// rdbSaveRawString: a string that is the canonical text of an int32 is written as an integer.
void put_string(std::string* out, std::string_view s) {
  std::int64_t v = 0;
  if (!s.empty() && s.size() <= 11) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size() && int_string(v) == s &&
        v >= std::numeric_limits<std::int32_t>::min() &&
        v <= std::numeric_limits<std::int32_t>::max()) {
      const int n = (v >= -128 && v <= 127) ? 1 : (v >= -32768 && v <= 32767) ? 2 : 4;
      out->push_back(static_cast<char>(0xC0 | (n == 1   ? kEncInt8
                                               : n == 2 ? kEncInt16
                                                        : kEncInt32)));
      for (int i = 0; i < n; ++i)
        out->push_back(static_cast<char>(static_cast<std::uint64_t>(v) >> (8 * i)));
      return;
    }
  }
  // Longer strings LZF-compressed when that saves at least four bytes, as Redis does with
  // rdbcompression yes (the default).
  if (s.size() > 20) {
    std::string z;
    if (lzf_compress(s, s.size() - 4, &z)) {
      out->push_back(static_cast<char>(0xC0 | kEncLzf));
      put_len(out, z.size());
      put_len(out, s.size());
      out->append(z);
      return;
    }
  }
  put_len(out, s.size());
  out->append(s);
}

void put_binary_double(std::string* out, double d) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &d, sizeof bits);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(bits >> (8 * i)));
}

template <class C, class F>
bool dump_container(const ObjectRef& o, F&& fn) {
  C* c = as_container<C>(o);
  std::lock_guard<std::mutex> lock(c->mu);
  if (c->dead.load(std::memory_order_relaxed) || c->data.empty()) return false;
  fn(std::as_const(c->data));
  return true;
}

// What Redis would hold in a listpack or an intset follows encoding_limits() (CONFIG SET
// set-max-intset-entries, hash-/zset-max-listpack-*), as OBJECT ENCODING does.
constexpr std::size_t kQuicklistNodeBytes = 8192;  // list-max-listpack-size -2

// Builds a listpack: integers in the smallest integer encoding, other strings with a 6-, 12- or
// 32-bit length; each entry followed by its back-length.
class ListpackWriter {
 public:
  void add(std::string_view s) {
    const std::size_t start = body_.size();
    std::int64_t v = 0;
    if (canonical_int(s, &v)) {
      const auto u = static_cast<std::uint64_t>(v);
      if (v >= 0 && v <= 127) {
        body_.push_back(static_cast<char>(v));
      } else if (v >= -4096 && v <= 4095) {
        body_.push_back(static_cast<char>(0xC0 | ((u >> 8) & 0x1F)));
        body_.push_back(static_cast<char>(u & 0xFF));
      } else {
        const int w = (v >= INT16_MIN && v <= INT16_MAX)   ? 2
                      : (v >= -(1 << 23) && v < (1 << 23)) ? 3
                      : (v >= INT32_MIN && v <= INT32_MAX) ? 4
                                                           : 8;
        body_.push_back(static_cast<char>(w == 2 ? 0xF1 : w == 3 ? 0xF2 : w == 4 ? 0xF3 : 0xF4));
        put_le(u, w);
      }
    } else if (s.size() < 64) {
      body_.push_back(static_cast<char>(0x80 | s.size()));
      body_.append(s);
    } else if (s.size() < 4096) {
      body_.push_back(static_cast<char>(0xE0 | (s.size() >> 8)));
      body_.push_back(static_cast<char>(s.size() & 0xFF));
      body_.append(s);
    } else {
      body_.push_back(static_cast<char>(0xF0));
      put_le(s.size(), 4);
      body_.append(s);
    }
    // The back-length: the entry's size, 7 bits a byte, most significant first, every byte but
    // the first flagged, so that it reads right to left from the next entry.
    const std::size_t len = body_.size() - start;
    const int n = static_cast<int>(backlen_size(len));
    for (int i = n - 1; i >= 0; --i) {
      const auto b = static_cast<char>(((len >> (7 * i)) & 0x7F) | (i < n - 1 ? 0x80 : 0));
      body_.push_back(b);
    }
    ++count_;
  }
  std::size_t size() const { return 6 + body_.size() + 1; }
  std::size_t count() const { return count_; }
  std::string finish() const {
    std::string lp;
    lp.reserve(size());
    for (int i = 0; i < 4; ++i) lp.push_back(static_cast<char>(size() >> (8 * i)));
    const std::size_t c = count_ < 65535 ? count_ : 65535;  // 65535: count them
    lp.push_back(static_cast<char>(c & 0xFF));
    lp.push_back(static_cast<char>(c >> 8));
    lp += body_;
    lp.push_back(static_cast<char>(0xFF));
    return lp;
  }

 private:
  void put_le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) body_.push_back(static_cast<char>(v >> (8 * i)));
  }
  std::string body_;
  std::size_t count_ = 0;
};

// A score as Redis's d2string writes it into a sorted set's listpack: integral values within
// 2^52 as integers, others with 17 significant digits, the infinities spelled out.
std::string score_text(double d) {
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d > -4503599627370495.0 && d < 4503599627370496.0 &&
      d == static_cast<double>(static_cast<long long>(d))) {
    return int_string(static_cast<long long>(d));
  }
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%.17g", d);
  return std::string(buf, static_cast<std::size_t>(n));
}

// A list as Redis 7.0 writes one: QUICKLIST_2, listpack nodes of up to 8 KB.
std::vector<std::string> quicklist_nodes(const std::deque<std::string>& d) {
  std::vector<std::string> nodes;
  ListpackWriter lp;
  for (const std::string& s : d) {
    if (lp.count() > 0 && lp.size() + s.size() + 11 > kQuicklistNodeBytes) {
      nodes.push_back(lp.finish());
      lp = ListpackWriter();
    }
    lp.add(s);
  }
  nodes.push_back(lp.finish());
  return nodes;
}

void dump_list(const std::deque<std::string>& d, std::string* out) {
  const std::vector<std::string> nodes = quicklist_nodes(d);
  out->push_back(static_cast<char>(kTypeListQuicklist2));
  put_len(out, nodes.size());
  for (const std::string& n : nodes) {
    put_len(out, kQuicklistPacked);
    put_string(out, n);
  }
}

// A set: an intset when Redis would hold it in one (MemberSet::intset()), else SET.
void dump_set(const MemberSet& d, std::string* out) {
  std::vector<std::int64_t> ints;
  if (!intset_values(d, &ints)) ints.clear();
  if (!ints.empty()) {
    std::sort(ints.begin(), ints.end());
    int w = 2;
    for (const std::int64_t v : ints) {
      if (v < INT32_MIN || v > INT32_MAX) {
        w = 8;
      } else if ((v < INT16_MIN || v > INT16_MAX) && w < 4) {
        w = 4;
      }
    }
    std::string is;
    auto put = [&](std::uint64_t v, int n) {
      for (int i = 0; i < n; ++i) is.push_back(static_cast<char>(v >> (8 * i)));
    };
    put(static_cast<std::uint64_t>(w), 4);
    put(ints.size(), 4);
    for (const std::int64_t v : ints) put(static_cast<std::uint64_t>(v), w);
    out->push_back(static_cast<char>(kTypeSetIntset));
    put_string(out, is);
    return;
  }
  out->push_back(static_cast<char>(kTypeSet));
  put_len(out, d.size());
  for (std::size_t i = 0; i < d.size(); ++i) put_string(out, d.at(i));
}

void dump_hash(const HashFields& d, std::string* out) {
  if (hash_is_listpack(d)) {
    ListpackWriter lp;
    for (const auto& [f, v] : d) {
      lp.add(f);
      lp.add(v);
    }
    out->push_back(static_cast<char>(kTypeHashListpack));
    put_string(out, lp.finish());
    return;
  }
  out->push_back(static_cast<char>(kTypeHash));
  put_len(out, d.size());
  for (const auto& [f, v] : d) {
    put_string(out, f);
    put_string(out, v);
  }
}

// A sorted set: a listpack (ascending) while Redis would hold one (ZSet::listpack(), one way as in
// Redis), else ZSET_2 (binary doubles). A -0 score, which only a skiplist keeps, goes into ZSET_2
// so that it survives.
void dump_zset(const ZSet& d, std::string* out) {
  bool negative_zero = false;
  for (const ZSet::Node* n = d.list().first(); n != nullptr; n = n->next())
    negative_zero |= n->score == 0 && std::signbit(n->score);
  if (d.listpack() && !negative_zero) {
    ListpackWriter lp;
    for (const ZSet::Node* n = d.list().first(); n != nullptr; n = n->next()) {
      lp.add(n->member);
      lp.add(score_text(n->score));
    }
    out->push_back(static_cast<char>(kTypeZSetListpack));
    put_string(out, lp.finish());
    return;
  }
  out->push_back(static_cast<char>(kTypeZSet2));
  put_len(out, d.size());
  // Highest first, as Redis writes it (its loader then inserts at the head).
  for (const ZSet::Node* n = d.list().last(); n != nullptr; n = n->prev()) {
    put_string(out, n->member);
    put_binary_double(out, n->score);
  }
}

void put_id(std::string* out, StreamId id) {
  put_len(out, id.ms);
  put_len(out, id.seq);
}

void put_ms_time(std::string* out, std::int64_t t) {
  for (int i = 0; i < 8; ++i)
    out->push_back(static_cast<char>(static_cast<std::uint64_t>(t) >> (8 * i)));
}

// A stream as RDB_TYPE_STREAM_LISTPACKS_2, one listpack per node of kvlab's model of Redis's
// nodes. kvlab keeps no deleted entries, so a node's listpack holds its live entries only (deleted
// count 0); its master ID and fields stay, so the entries keep their deltas and SAMEFIELDS flags
// and a restored stream has the same nodes.
void dump_stream(const Stream& s, std::string* out) {
  out->push_back(static_cast<char>(kTypeStreamListpacks2));
  put_len(out, s.node_count());
  s.for_each_node([&](StreamId master, const Stream::Fields& mf, auto begin, auto end) {
    ListpackWriter lp;
    lp.add(int_string(static_cast<std::int64_t>(std::distance(begin, end))));
    lp.add("0");
    lp.add(int_string(static_cast<std::int64_t>(mf.size())));
    for (const auto& f : mf) lp.add(f);
    lp.add("0");
    for (auto it = begin; it != end; ++it) {
      const auto& [id, fv] = *it;
      const bool same = Stream::same_fields(mf, fv);
      const auto n = static_cast<std::int64_t>(fv.size() / 2);
      lp.add(same ? "2" : "0");
      lp.add(int_string(static_cast<std::int64_t>(id.ms - master.ms)));
      lp.add(int_string(static_cast<std::int64_t>(id.seq - master.seq)));
      if (!same) lp.add(int_string(n));
      for (std::size_t i = 0; i < fv.size(); i += 2) {
        if (!same) lp.add(fv[i]);
        lp.add(fv[i + 1]);
      }
      lp.add(int_string(same ? n + 3 : 2 * n + 4));
    }
    put_string(out, master.raw());
    put_string(out, lp.finish());
  });
  put_len(out, s.length());
  put_id(out, s.last_id());
  put_id(out, s.first_id());
  put_id(out, s.max_deleted());
  put_len(out, s.entries_added());
  put_len(out, s.groups().size());
  for (const auto& [name, g] : s.groups()) {
    put_string(out, name);
    put_id(out, g.last_id);
    put_len(out, static_cast<std::uint64_t>(g.entries_read));
    put_len(out, g.pel.size());
    for (const auto& [id, nack] : g.pel) {
      out->append(id.raw());
      put_ms_time(out, nack.delivery_time);
      put_len(out, nack.delivery_count);
    }
    put_len(out, g.consumers.size());
    for (const auto& [cname, c] : g.consumers) {
      put_string(out, cname);
      put_ms_time(out, c.seen_time);
      put_len(out, c.pel.size());
      for (const auto& id : c.pel) out->append(id.raw());
    }
  }
}

bool dump_body(const ObjectRef& o, std::string* out) {
  switch (o->type()) {
    case ObjectType::kString:
      out->push_back(static_cast<char>(kTypeString));
      put_string(out, o->str());
      return true;
    case ObjectType::kList:
      return dump_container<ListObject>(o, [&](const auto& d) { dump_list(d, out); });
    case ObjectType::kSet:
      return dump_container<SetObject>(o, [&](const auto& d) { dump_set(d, out); });
    case ObjectType::kHash:
      return dump_container<HashObject>(o, [&](const auto& d) { dump_hash(d, out); });
    case ObjectType::kZSet:
      return dump_container<ZSetObject>(o, [&](const auto& d) { dump_zset(d, out); });
    case ObjectType::kStream:
      return dump_container<StreamObject>(o, [&](const auto& d) { dump_stream(d, out); });
  }
  return false;
}

}  // namespace

bool quicklist_shape(const ObjectRef& list, QuicklistShape* out) {
  return dump_container<ListObject>(list, [&](const auto& d) {
    const std::vector<std::string> nodes = quicklist_nodes(d);
    out->nodes = nodes.size();
    out->entries = d.size();
    out->bytes = 0;
    for (const std::string& n : nodes) out->bytes += n.size();
  });
}

bool dump_value(const ObjectRef& o, std::string* out) {
  out->clear();
  if (!dump_body(o, out)) return false;
  out->push_back(static_cast<char>(kVersion & 0xFF));
  out->push_back(static_cast<char>(kVersion >> 8));
  const std::uint64_t crc = crc64(0, *out);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(crc >> (8 * i)));
  return true;
}

}  // namespace kvlab::server::rdb
