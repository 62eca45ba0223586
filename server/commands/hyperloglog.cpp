// The HyperLogLog family: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST, with Redis 7.0's exact
// representation, so that an HLL string moves between Redis and kvlab (GET here, SET there) and
// both keep answering the same estimates and storing the same bytes.
//
// References: Flajolet, Fusy, Gandouet, Meunier, "HyperLogLog: the analysis of a near-optimal
// cardinality estimation algorithm" (2007); Ertl, "New cardinality estimation algorithms for
// HyperLogLog sketches" (arXiv:1702.01284, 2017), whose improved raw estimator Redis uses
// since 5.0; antirez, "Redis new data structure: the HyperLogLog" (2014) for the string layout.
//
// Layout (a plain string value; every multi-byte number little endian):
//
//   struct {
//     char    magic[4];   // "HYLL"
//     uint8_t encoding;   // 0 dense, 1 sparse
//     uint8_t unused[3];  // copied along, never interpreted
//     uint8_t card[8];    // cached estimate; bit 7 of card[7] set = stale
//     uint8_t data[];     // dense: 16384 registers of 6 bits, LSB first (12288 bytes)
//   };                    // sparse: run-length opcodes over the 16384 registers
//
// Sparse opcodes: 00xxxxxx ZERO, x+1 zero registers (1..64); 01xxxxxx yyyyyyyy XZERO, 14-bit
// length+1 zero registers (1..16384); 1vvvvvxx VAL, x+1 registers (1..4) of value v+1 (1..32).
// A sparse value turns dense when a register needs a value above 32 or when an edit would make
// the string longer than hll-sparse-max-bytes (3000, header included).
//
// Byte-for-byte equality with Redis is a matter of replaying its edit sequence: a register update
// splits the one opcode that covers it (in place when it covers one register), then merges equal
// adjacent VALs in a window of five opcodes from the one before it; dense conversion copies the
// 16-byte header (cache bits included) and fills the registers. Corrupted sparse values behave as
// in Redis 7.0.15 with the CVE-2025-32023 fix: counting, merging and dense conversion reject any
// opcode that runs past the last register; a register edit only looks for the opcode covering it;
// a byte past the end reads as 0 (Redis's sds terminator).
//
// Thread safety: values are immutable Objects; every write builds the new string inside one
// keyspace update() whose function may run more than once, so it only assigns captured results.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "server/commands/common.hpp"

namespace kvlab::server {
namespace {

using U = Update<Value>;

constexpr int kP = 14;
constexpr int kQ = 64 - kP;  // hash bits left for the run of zeros
constexpr int kRegisters = 1 << kP;
constexpr int kBits = 6;
constexpr int kRegisterMax = (1 << kBits) - 1;
constexpr std::size_t kHeader = 16;
constexpr std::size_t kDenseSize = kHeader + (kRegisters * kBits + 7) / 8;
constexpr std::uint8_t kDense = 0;
constexpr std::uint8_t kSparse = 1;
// hll-sparse-max-bytes, 3000 by default as in Redis. Relaxed: a setting read once per command;
// nothing else is published with it.
std::atomic<std::uint64_t> g_sparse_max_bytes{3000};
std::size_t sparse_max_bytes() {
  return static_cast<std::size_t>(g_sparse_max_bytes.load(std::memory_order_relaxed));
}
constexpr std::uint64_t kSeed = 0xadc83b19ULL;
constexpr int kZeroMaxLen = 64;
constexpr int kXZeroMaxLen = 16384;
constexpr int kValMaxValue = 32;
constexpr int kValMaxLen = 4;
constexpr double kAlphaInf = 0.721347520444481703680;  // 0.5 / ln 2
static_assert(kDenseSize == 12304, "16 header bytes and 16384 six-bit registers");

// The byte string under edit. at() reads 0 past the end, as Redis reads its sds terminator.
using Bytes = std::string;
inline std::uint8_t at(const Bytes& b, std::size_t i) {
  return i < b.size() ? static_cast<std::uint8_t>(b[i]) : 0;
}
inline std::uint8_t at(std::string_view b, std::size_t i) {
  return i < b.size() ? static_cast<std::uint8_t>(b[i]) : 0;
}

// Sparse opcode decoding; `b0` is the opcode byte, `b1` the byte after it.
inline bool is_zero(std::uint8_t b0) {
  return (b0 & 0xc0) == 0x00;
}
inline bool is_xzero(std::uint8_t b0) {
  return (b0 & 0xc0) == 0x40;
}
inline bool is_val(std::uint8_t b0) {
  return (b0 & 0x80) != 0;
}
inline int zero_len(std::uint8_t b0) {
  return (b0 & 0x3f) + 1;
}
inline int xzero_len(std::uint8_t b0, std::uint8_t b1) {
  return (((b0 & 0x3f) << 8) | b1) + 1;
}
inline int val_value(std::uint8_t b0) {
  return ((b0 >> 2) & 0x1f) + 1;
}
inline int val_len(std::uint8_t b0) {
  return (b0 & 0x3) + 1;
}
inline std::uint8_t make_zero(int len) {
  return static_cast<std::uint8_t>(len - 1);
}
inline std::uint8_t make_val(int value, int len) {
  return static_cast<std::uint8_t>(0x80 | ((value - 1) << 2) | (len - 1));
}
inline void append_xzero(Bytes* out, int len) {
  out->push_back(static_cast<char>(0x40 | ((len - 1) >> 8)));
  out->push_back(static_cast<char>((len - 1) & 0xff));
}

// MurmurHash64A (Austin Appleby), the 64-bit hash Redis feeds the registers with; words are read
// little endian whatever the host.
std::uint64_t murmur64a(std::string_view s, std::uint64_t seed) {
  constexpr std::uint64_t m = 0xc6a4a7935bd1e995ULL;
  constexpr int r = 47;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t len = s.size();
  // Redis passes the length as an int and the seed as an unsigned int: keep both widths.
  std::uint64_t h = seed ^ (static_cast<std::uint64_t>(static_cast<int>(len)) * m);
  const std::size_t words = len / 8;
  for (std::size_t i = 0; i < words; ++i, p += 8) {
    std::uint64_t k = 0;
    for (int j = 7; j >= 0; --j) k = (k << 8) | p[j];
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  const std::size_t tail = len & 7;
  if (tail != 0) {
    for (std::size_t j = tail; j-- > 0;) h ^= static_cast<std::uint64_t>(p[j]) << (8 * j);
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

// The register an element goes to and the length of its "0...01" run (1..kQ+1).
int pattern_len(std::string_view ele, long* index) {
  std::uint64_t hash = murmur64a(ele, kSeed);
  *index = static_cast<long>(hash & (kRegisters - 1));
  hash >>= kP;
  hash |= std::uint64_t{1} << kQ;  // stops the scan at kQ+1
  int count = 1;
  for (std::uint64_t bit = 1; (hash & bit) == 0; bit <<= 1) ++count;
  return count;
}

// Dense registers start at kHeader; the last register's second byte is past the 12304 bytes and
// reads (and keeps) 0.
int dense_get(std::string_view s, long i) {
  const std::size_t byte = kHeader + static_cast<std::size_t>(i) * kBits / 8;
  const unsigned fb = static_cast<unsigned>(i * kBits) & 7;
  const unsigned b0 = at(s, byte), b1 = at(s, byte + 1);
  return static_cast<int>(((b0 >> fb) | (b1 << (8 - fb))) & kRegisterMax);
}
void dense_put(Bytes* s, long i, int v) {
  const std::size_t byte = kHeader + static_cast<std::size_t>(i) * kBits / 8;
  const unsigned fb = static_cast<unsigned>(i * kBits) & 7;
  auto& b0 = reinterpret_cast<unsigned char&>((*s)[byte]);
  b0 = static_cast<unsigned char>((b0 & ~(kRegisterMax << fb)) | (v << fb));
  const unsigned hi_mask = static_cast<unsigned>(kRegisterMax) >> (8 - fb);
  if (hi_mask != 0) {  // the register spills into the next byte
    auto& b1 = reinterpret_cast<unsigned char&>((*s)[byte + 1]);
    b1 = static_cast<unsigned char>((b1 & ~hi_mask) | (static_cast<unsigned>(v) >> (8 - fb)));
  }
}
// Raises register i to count; returns 1 when it changed.
int dense_set(Bytes* s, long i, int count) {
  if (count <= dense_get(*s, i)) return 0;
  dense_put(s, i, count);
  return 1;
}

inline std::uint8_t encoding(std::string_view s) {
  return static_cast<std::uint8_t>(s[4]);
}
inline void invalidate_cache(Bytes* s) {
  (*s)[15] = static_cast<char>((*s)[15] | 0x80);
}
inline bool cache_valid(std::string_view s) {
  return (at(s, 15) & 0x80) == 0;
}

// Redis's isHLLObjectOrReply() minus the type check: header, magic, encoding, dense length.
bool looks_like_hll(std::string_view s) {
  if (s.size() < kHeader || s.substr(0, 4) != "HYLL") return false;
  if (encoding(s) > kSparse) return false;
  return encoding(s) != kDense || s.size() == kDenseSize;
}

// A new, empty sparse HLL: one XZERO over all registers, cache 0 and valid.
Bytes make_empty() {
  Bytes s("HYLL", 4);
  s.push_back(static_cast<char>(kSparse));
  s.append(11, '\0');
  for (int left = kRegisters; left > 0; left -= kXZeroMaxLen) {
    append_xzero(&s, std::min(left, kXZeroMaxLen));
  }
  return s;
}

// Replaces a sparse value with its dense form (header copied, encoding set). False, and *s
// unchanged, when the opcodes do not cover exactly kRegisters registers.
bool sparse_to_dense(Bytes* s) {
  if (encoding(*s) == kDense) return true;
  Bytes d(kDenseSize, '\0');
  std::memcpy(d.data(), s->data(), kHeader);
  d[4] = static_cast<char>(kDense);
  long idx = 0;
  for (std::size_t p = kHeader; p < s->size();) {
    const std::uint8_t b0 = at(*s, p);
    const long run = is_zero(b0)    ? zero_len(b0)
                     : is_xzero(b0) ? xzero_len(b0, at(*s, p + 1))
                                    : val_len(b0);
    if (idx + run > kRegisters) return false;  // overflow: corrupted
    if (is_val(b0)) {
      for (long k = 0; k < run; ++k) dense_put(&d, idx + k, val_value(b0));
    }
    idx += run;
    p += is_xzero(b0) ? 2 : 1;
  }
  if (idx != kRegisters) return false;
  *s = std::move(d);
  return true;
}

// Raises register `index` of a sparse value to `count`, promoting it to dense when the value or
// the length requires it. Returns 1 when the register changed, 0 when not, -1 when the value is
// corrupted (then *s holds what earlier successful steps made of it).
int sparse_set(Bytes* s, long index, int count, std::size_t max_bytes) {
  auto promote = [&]() {
    if (!sparse_to_dense(s)) return -1;
    return dense_set(s, index, count);  // 1: only a needed update promotes
  };
  if (count > kValMaxValue) return promote();

  // Locate the opcode covering `index`: p, its first register, its span, the opcode before it.
  const std::size_t sparse = kHeader;
  std::size_t end = s->size();
  std::size_t p = sparse, prev = 0;
  bool has_prev = false;
  long first = 0, span = 0;
  while (p < end) {
    const std::uint8_t b0 = at(*s, p);
    std::size_t oplen = 1;
    if (is_zero(b0)) {
      span = zero_len(b0);
    } else if (is_val(b0)) {
      span = val_len(b0);
    } else {
      span = xzero_len(b0, at(*s, p + 1));
      oplen = 2;
    }
    if (index <= first + span - 1) break;
    prev = p;
    has_prev = true;
    p += oplen;
    first += span;
  }
  if (span == 0 || p >= end) return -1;

  const std::uint8_t op = at(*s, p);
  const bool zero = is_zero(op), xzero = is_xzero(op), val = is_val(op);
  const long runlen = zero ? zero_len(op) : xzero ? xzero_len(op, at(*s, p + 1)) : val_len(op);
  bool edited_in_place = false;
  if (val) {
    if (val_value(op) >= count) return 0;
    if (runlen == 1) {
      (*s)[p] = static_cast<char>(make_val(count, 1));
      edited_in_place = true;
    }
  }
  if (!edited_in_place && zero && runlen == 1) {
    (*s)[p] = static_cast<char>(make_val(count, 1));
    edited_in_place = true;
  }
  if (!edited_in_place) {
    // Split the opcode into (before, our register, after): at most XZERO VAL XZERO, 5 bytes.
    Bytes seq;
    const long last = first + span - 1;
    auto zeros = [&](long len) {
      if (len > kZeroMaxLen) {
        append_xzero(&seq, static_cast<int>(len));
      } else {
        seq.push_back(static_cast<char>(make_zero(static_cast<int>(len))));
      }
    };
    if (zero || xzero) {
      if (index != first) zeros(index - first);
      seq.push_back(static_cast<char>(make_val(count, 1)));
      if (index != last) zeros(last - index);
    } else {
      const int cur = val_value(op);
      if (index != first) seq.push_back(static_cast<char>(make_val(cur, int(index - first))));
      seq.push_back(static_cast<char>(make_val(count, 1)));
      if (index != last) seq.push_back(static_cast<char>(make_val(cur, int(last - index))));
    }
    const std::size_t oldlen = xzero ? 2 : 1;
    const long delta = static_cast<long>(seq.size()) - static_cast<long>(oldlen);
    if (delta > 0 && s->size() + static_cast<std::size_t>(delta) > max_bytes) return promote();
    // Redis moves the tail only when an opcode follows; a truncated last XZERO loses a byte.
    const std::size_t next = p + oldlen;
    Bytes out = s->substr(0, p);
    out += seq;
    if (next < end) out.append(*s, next, end - next);
    out.resize(static_cast<std::size_t>(static_cast<long>(end) + delta), '\0');
    *s = std::move(out);
    end = s->size();
  }

  // Merge equal adjacent VALs in a window of five opcodes starting before the edit.
  std::size_t q = has_prev ? prev : sparse;
  int scan = 5;
  while (q < end && scan-- > 0) {
    const std::uint8_t b0 = at(*s, q);
    if (is_xzero(b0)) {
      q += 2;
      continue;
    }
    if (is_zero(b0)) {
      q += 1;
      continue;
    }
    if (q + 1 < end && is_val(at(*s, q + 1))) {
      const std::uint8_t b1 = at(*s, q + 1);
      const int len = val_len(b0) + val_len(b1);
      if (val_value(b0) == val_value(b1) && len <= kValMaxLen) {
        (*s)[q + 1] = static_cast<char>(make_val(val_value(b0), len));
        s->erase(q, 1);
        --end;
        continue;  // try the merged opcode against its right neighbour
      }
    }
    q += 1;
  }
  invalidate_cache(s);
  return 1;
}

// Adds one element; 1 when a register changed, 0 when not, -1 on a corrupted sparse value.
int hll_add(Bytes* s, std::string_view ele, std::size_t max_bytes) {
  long index = 0;
  const int count = pattern_len(ele, &index);
  if (encoding(*s) == kDense) return dense_set(s, index, count);
  return sparse_set(s, index, count, max_bytes);
}

using Histogram = std::array<int, 64>;

// Register histogram of a validated value; *invalid set when sparse opcodes do not cover exactly
// kRegisters registers.
void histogram(std::string_view s, Histogram* h, bool* invalid) {
  if (encoding(s) == kDense) {
    for (long i = 0; i < kRegisters; ++i) ++(*h)[static_cast<std::size_t>(dense_get(s, i))];
    return;
  }
  long idx = 0;
  for (std::size_t p = kHeader; p < s.size();) {
    const std::uint8_t b0 = at(s, p);
    const long run = is_zero(b0)    ? zero_len(b0)
                     : is_xzero(b0) ? xzero_len(b0, at(s, p + 1))
                                    : val_len(b0);
    if (idx + run > kRegisters) {  // overflow: corrupted
      *invalid = true;
      return;
    }
    (*h)[is_val(b0) ? static_cast<std::size_t>(val_value(b0)) : 0] += static_cast<int>(run);
    idx += run;
    p += is_xzero(b0) ? 2 : 1;
  }
  if (idx != kRegisters) *invalid = true;
}

// Ertl's sigma and tau (arXiv:1702.01284, algorithm 6), iterated to a fixed point in double
// precision: Redis's estimates depend on these exact roundings. Every product below is by a power
// of two, so FMA contraction cannot change a result.
double sigma(double x) {
  if (x == 1.) return INFINITY;
  double y = 1, z = x, prev = 0;
  do {
    x *= x;
    prev = z;
    z += x * y;
    y += y;
  } while (prev != z);
  return z;
}
double tau(double x) {
  if (x == 0. || x == 1.) return 0.;
  double y = 1.0, z = 1 - x, prev = 0;
  do {
    x = std::sqrt(x);
    prev = z;
    y *= 0.5;
    const double d = 1 - x;
    z -= d * d * y;
  } while (prev != z);
  return z / 3;
}

// The improved raw estimator, rounded half away from zero as llroundl does.
std::uint64_t estimate(const Histogram& h) {
  const double m = kRegisters;
  double z = m * tau((m - h[kQ + 1]) / m);
  for (int j = kQ; j >= 1; --j) {
    z += h[static_cast<std::size_t>(j)];
    z *= 0.5;
  }
  z += m * sigma(h[0] / m);
  const double e = static_cast<double>(std::llround(kAlphaInf * m * m / z));
  return static_cast<std::uint64_t>(e);
}

// max[i] = max(max[i], register i). False when a sparse value is corrupted.
bool merge_into(std::uint8_t* max, std::string_view s) {
  if (encoding(s) == kDense) {
    for (long i = 0; i < kRegisters; ++i) {
      max[i] = std::max(max[i], static_cast<std::uint8_t>(dense_get(s, i)));
    }
    return true;
  }
  long i = 0;
  for (std::size_t p = kHeader; p < s.size();) {
    const std::uint8_t b0 = at(s, p);
    const long run = is_zero(b0)    ? zero_len(b0)
                     : is_xzero(b0) ? xzero_len(b0, at(s, p + 1))
                                    : val_len(b0);
    if (i + run > kRegisters) return false;  // overflow: corrupted
    if (is_val(b0)) {
      const auto v = static_cast<std::uint8_t>(val_value(b0));
      for (long k = i; k < i + run; ++k) max[k] = std::max(max[k], v);
    }
    i += run;
    p += is_xzero(b0) ? 2 : 1;
  }
  return i == kRegisters;
}

std::uint64_t read_cache(std::string_view s) {
  std::uint64_t c = 0;
  for (int i = 7; i >= 0; --i) c = (c << 8) | at(s, 8 + static_cast<std::size_t>(i));
  return c;
}
void write_cache(Bytes* s, std::uint64_t c) {
  for (int i = 0; i < 8; ++i)
    (*s)[8 + static_cast<std::size_t>(i)] = static_cast<char>(c >> (8 * i));
}

ObjectRef make_obj(const Bytes& s) {
  return ObjectRef(Object::make_string(s));
}

// How a key's stored value reads as an HLL.
enum class Check { kAbsent, kOk, kWrongType, kNotHll };
Check check(const Value* v) {
  if (v == nullptr) return Check::kAbsent;
  if (v->obj->type() != ObjectType::kString) return Check::kWrongType;
  return looks_like_hll(v->obj->str()) ? Check::kOk : Check::kNotHll;
}
// Replies the error for kWrongType/kNotHll; returns true when it did.
bool reply_check(CommandContext& ctx, Check c) {
  if (c == Check::kWrongType) {
    ctx.reply.error(err::kWrongType);
    return true;
  }
  if (c == Check::kNotHll) {
    ctx.reply.error(err::kNotHll);
    return true;
  }
  return false;
}

// PFADD key [element ...]
void pfadd_cmd(CommandContext& ctx) {
  const std::size_t max_bytes = sparse_max_bytes();
  Check c = Check::kAbsent;
  int updated = 0;
  bool corrupt = false;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) -> U {
    const Value* v = live(cur, ctx.now_ms);
    c = check(v);
    updated = 0;
    corrupt = false;
    if (c == Check::kWrongType || c == Check::kNotHll) return U::keep();
    Bytes s;
    if (c == Check::kAbsent) {
      s = make_empty();
      updated = 1;  // creating the key counts as an update, as in Redis
    } else {
      s.assign(v->obj->str());
    }
    bool changed = updated != 0;
    for (std::size_t j = 2; j < ctx.argc(); ++j) {
      const int r = hll_add(&s, ctx.arg(j), max_bytes);
      if (r < 0) {
        corrupt = true;
        break;
      }
      if (r == 1) {
        ++updated;
        changed = true;
      }
    }
    if (!corrupt && updated != 0) invalidate_cache(&s);
    if (!changed) return U::keep();
    return U::assign(Value{make_obj(s), v != nullptr ? v->expire_ms : 0});
  });
  if (reply_check(ctx, c)) return;
  if (corrupt) {
    ctx.reply.error(err::kHllCorrupt);
    return;
  }
  if (updated != 0) notify_keyspace_event(ctx, kNotifyString, "pfadd", ctx.arg(1));
  ctx.reply.integer(updated != 0 ? 1 : 0);
}

// PFCOUNT key [key ...]
void pfcount_cmd(CommandContext& ctx) {
  if (ctx.argc() > 2) {
    // The union of several HLLs, merged into one byte per register; no key is modified.
    std::vector<std::uint8_t> max(kRegisters, 0);
    for (std::size_t j = 1; j < ctx.argc(); ++j) {
      Check c = Check::kAbsent;
      bool corrupt = false;
      read_live(ctx, ctx.arg(j), [&](const Value& v) {
        c = check(&v);
        if (c == Check::kOk) corrupt = !merge_into(max.data(), v.obj->str());
      });
      if (reply_check(ctx, c)) return;
      if (corrupt) {
        ctx.reply.error(err::kHllCorrupt);
        return;
      }
    }
    Histogram h{};
    for (std::uint8_t r : max) ++h[r];
    ctx.reply.integer(static_cast<std::int64_t>(estimate(h)));
    return;
  }
  // One key: the cached estimate, or a fresh one that is written back into the header.
  Check c = Check::kAbsent;
  bool corrupt = false;
  std::uint64_t card = 0;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) -> U {
    const Value* v = live(cur, ctx.now_ms);
    c = check(v);
    corrupt = false;
    card = 0;
    if (c != Check::kOk) return U::keep();
    const std::string_view s = v->obj->str();
    if (cache_valid(s)) {
      card = read_cache(s);
      return U::keep();
    }
    Histogram h{};
    histogram(s, &h, &corrupt);
    if (corrupt) return U::keep();
    card = estimate(h);
    Bytes out(s);
    write_cache(&out, card);
    return U::assign(Value{make_obj(out), v->expire_ms});
  });
  if (reply_check(ctx, c)) return;
  if (corrupt) {
    ctx.reply.error(err::kHllCorrupt);
    return;
  }
  ctx.reply.integer(static_cast<std::int64_t>(card));
}

// PFMERGE destkey [sourcekey ...]: the destination is the first source too, as in Redis.
void pfmerge_cmd(CommandContext& ctx) {
  const std::size_t max_bytes = sparse_max_bytes();
  std::vector<std::uint8_t> max(kRegisters, 0);
  bool use_dense = false;
  for (std::size_t j = 1; j < ctx.argc(); ++j) {
    Check c = Check::kAbsent;
    bool corrupt = false;
    read_live(ctx, ctx.arg(j), [&](const Value& v) {
      c = check(&v);
      if (c != Check::kOk) return;
      if (encoding(v.obj->str()) == kDense) use_dense = true;
      corrupt = !merge_into(max.data(), v.obj->str());
    });
    if (reply_check(ctx, c)) return;
    if (corrupt) {
      ctx.reply.error(err::kHllCorrupt);
      return;
    }
  }
  // Write the registers into the destination's current representation, register by register,
  // as Redis does (its sparse edits decide the bytes).
  bool corrupt = false;
  Check c = Check::kAbsent;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) -> U {
    const Value* v = live(cur, ctx.now_ms);
    c = check(v);
    corrupt = false;
    if (c == Check::kWrongType || c == Check::kNotHll) return U::keep();
    std::vector<std::uint8_t> regs = max;
    Bytes s = c == Check::kAbsent ? make_empty() : Bytes(v->obj->str());
    bool dense = use_dense;
    if (c == Check::kOk) {
      // Re-merged here in case the destination changed since it was read above.
      if (!merge_into(regs.data(), s)) {
        corrupt = true;
        return U::keep();
      }
      dense = dense || encoding(s) == kDense;
    }
    if (dense && !sparse_to_dense(&s)) {
      corrupt = true;
      return U::keep();
    }
    for (long j = 0; j < kRegisters; ++j) {
      if (regs[static_cast<std::size_t>(j)] == 0) continue;
      if (encoding(s) == kDense) {
        dense_set(&s, j, regs[static_cast<std::size_t>(j)]);
      } else {
        sparse_set(&s, j, regs[static_cast<std::size_t>(j)], max_bytes);
      }
    }
    invalidate_cache(&s);
    return U::assign(Value{make_obj(s), v != nullptr ? v->expire_ms : 0});
  });
  if (reply_check(ctx, c)) return;
  if (corrupt) {
    ctx.reply.error(err::kHllCorrupt);
    return;
  }
  // Redis notifies PFMERGE as a mass PFADD.
  notify_keyspace_event(ctx, kNotifyString, "pfadd", ctx.arg(1));
  ctx.reply.ok();
}

// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key
void pfdebug_cmd(CommandContext& ctx) {
  const std::string_view sub = ctx.arg(1);
  enum class Sub { kGetReg, kDecode, kEncoding, kToDense, kUnknown };
  const Sub which = iequals(sub, "getreg")     ? Sub::kGetReg
                    : iequals(sub, "decode")   ? Sub::kDecode
                    : iequals(sub, "encoding") ? Sub::kEncoding
                    : iequals(sub, "todense")  ? Sub::kToDense
                                               : Sub::kUnknown;
  Check c = Check::kAbsent;
  bool corrupt = false;
  Bytes snapshot;  // the value after the subcommand (GETREG and TODENSE convert to dense)
  bool converted = false;
  ctx.ks.update(ctx.arg(2), [&](const Value* cur) -> U {
    const Value* v = live(cur, ctx.now_ms);
    c = check(v);
    corrupt = false;
    converted = false;
    if (c != Check::kOk) return U::keep();
    snapshot.assign(v->obj->str());
    if ((which == Sub::kGetReg || which == Sub::kToDense) && encoding(snapshot) == kSparse) {
      if (!sparse_to_dense(&snapshot)) {
        corrupt = true;
        return U::keep();
      }
      converted = true;
      return U::assign(Value{make_obj(snapshot), v->expire_ms});
    }
    return U::keep();
  });
  if (c == Check::kAbsent) {
    ctx.reply.error(err::kKeyDoesNotExist);
    return;
  }
  if (reply_check(ctx, c)) return;
  if (corrupt) {
    ctx.reply.error(err::kHllCorrupt);
    return;
  }
  switch (which) {
    case Sub::kGetReg:
      ctx.reply.array(kRegisters);
      for (long i = 0; i < kRegisters; ++i) ctx.reply.integer(dense_get(snapshot, i));
      return;
    case Sub::kDecode: {
      if (encoding(snapshot) != kSparse) {
        ctx.reply.error(err::kHllNotSparse);
        return;
      }
      std::string out;
      for (std::size_t p = kHeader; p < snapshot.size();) {
        const std::uint8_t b0 = at(snapshot, p);
        if (!out.empty()) out += ' ';
        if (is_zero(b0)) {
          out += "z:" + std::to_string(zero_len(b0));
          p += 1;
        } else if (is_xzero(b0)) {
          out += "Z:" + std::to_string(xzero_len(b0, at(snapshot, p + 1)));
          p += 2;
        } else {
          out += "v:" + std::to_string(val_value(b0)) + "," + std::to_string(val_len(b0));
          p += 1;
        }
      }
      ctx.reply.bulk(out);
      return;
    }
    case Sub::kEncoding:
      ctx.reply.simple(encoding(snapshot) == kDense ? "dense" : "sparse");
      return;
    case Sub::kToDense:
      ctx.reply.integer(converted ? 1 : 0);
      return;
    case Sub::kUnknown:
      ctx.reply.error(err::pfdebug_unknown(sub));
      return;
  }
}

// PFSELFTEST: checks the register packing and that sparse and dense forms agree and stay within a
// few standard errors of the truth, as Redis's self test does (own random values and checkpoints).
void pfselftest_cmd(CommandContext& ctx) {
  const std::size_t max_bytes = sparse_max_bytes();
  std::mt19937_64 rng(std::random_device{}());
  Bytes dense(kDenseSize, '\0');
  std::memcpy(dense.data(), "HYLL", 4);
  std::vector<int> expect(kRegisters);
  for (int round = 0; round < 100; ++round) {
    for (long i = 0; i < kRegisters; ++i) {
      expect[static_cast<std::size_t>(i)] = static_cast<int>(rng() & kRegisterMax);
      dense_put(&dense, i, expect[static_cast<std::size_t>(i)]);
    }
    for (long i = 0; i < kRegisters; ++i) {
      if (dense_get(dense, i) != expect[static_cast<std::size_t>(i)]) {
        ctx.reply.error(
            err::selftest_register(i, expect[static_cast<std::size_t>(i)], dense_get(dense, i)));
        return;
      }
    }
  }
  std::fill(dense.begin() + kHeader, dense.end(), '\0');
  Bytes sparse = make_empty();
  const double relerr = 1.04 / std::sqrt(static_cast<double>(kRegisters));
  const std::uint64_t seed = rng();
  std::uint64_t checkpoint = 1;
  for (std::uint64_t j = 1; j <= 1000000; ++j) {
    const std::uint64_t ele = j ^ seed;
    const std::string_view e(reinterpret_cast<const char*>(&ele), sizeof ele);
    hll_add(&dense, e, max_bytes);
    hll_add(&sparse, e, max_bytes);
    if (j != checkpoint) continue;
    if (j < max_bytes / 2 && encoding(sparse) != kSparse) {
      ctx.reply.error(err::kSelftestNotSparse);
      return;
    }
    Histogram hd{}, hs{};
    bool invalid = false;
    histogram(dense, &hd, &invalid);
    histogram(sparse, &hs, &invalid);
    const std::uint64_t est = estimate(hd);
    if (invalid || est != estimate(hs)) {
      ctx.reply.error(err::kSelftestDisagree);
      return;
    }
    const double err = std::fabs(static_cast<double>(checkpoint) - static_cast<double>(est));
    const double maxerr = j == 10 ? 1 : std::ceil(relerr * 6 * static_cast<double>(checkpoint));
    if (err > maxerr) {
      ctx.reply.error(err::selftest_too_big_error(checkpoint, static_cast<std::uint64_t>(err)));
      return;
    }
    checkpoint *= 10;
  }
  ctx.reply.ok();
}

constexpr std::uint32_t kRW = kWrite | kDenyOom;

const CommandSpec kHyperLogLogCommands[] = {
    {"pfadd", -2, kRW | kFast, pfadd_cmd, 1, 1, 1, "hyperloglog",
     "Adds the specified elements to the specified HyperLogLog.", "key [element ...]", "2.8.9",
     "O(1) to add every element."},
    // Read-only in Redis's flags although a single-key call may write the cached estimate back.
    // PFCOUNT of several keys and PFMERGE read one key at a time (atomic per key, see keys.cpp's
    // DEL), as the other multi-key families do.
    {"pfcount", -2, kReadOnly, pfcount_cmd, 1, -1, 1, "hyperloglog",
     "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
     "key [key ...]", "2.8.9",
     "O(1) with a very small average constant time when called with a single key. O(N) with N "
     "being the number of keys, and much bigger constant times, when called with multiple keys."},
    {"pfmerge", -2, kRW, pfmerge_cmd, 1, -1, 1, "hyperloglog",
     "Merge N different HyperLogLogs into a single one.", "destkey [sourcekey ...]", "2.8.9",
     "O(N) to merge N HyperLogLogs, but with high constant times."},
    {"pfdebug", 3, kRW | kAdmin, pfdebug_cmd, 2, 2, 1, "hyperloglog",
     "Internal commands for debugging HyperLogLog values", "subcommand key", "2.8.9", "N/A"},
    {"pfselftest", 1, kAdmin, pfselftest_cmd, 0, 0, 0, "hyperloglog",
     "An internal command for testing HyperLogLog values", "", "2.8.9", "N/A"},
};

}  // namespace

std::span<const CommandSpec> hyperloglog_commands() {
  return kHyperLogLogCommands;
}

std::uint64_t hll_sparse_max_bytes() {
  return g_sparse_max_bytes.load(std::memory_order_relaxed);
}
void set_hll_sparse_max_bytes(std::uint64_t n) {
  g_sparse_max_bytes.store(n, std::memory_order_relaxed);
}

}  // namespace kvlab::server
