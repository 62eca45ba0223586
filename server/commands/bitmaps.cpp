// The bitmap family: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO.
//
// A bitmap is a plain string value; bit 0 is the most significant bit of byte 0, as in Redis, and
// bits past the end of the string read as 0. Reads copy the value's handle out of the keyspace and
// work on its immutable bytes. SETBIT and BITFIELD are one update() on their key that builds the
// successor string (the old bytes, zero-filled up to the highest bit written, with the change
// applied) and keeps the key's TTL; so a write costs a copy of the string, O(N), where Redis
// changes the byte in place. BITOP reads its sources one after the other, then stores the result
// in the destination without a TTL, or deletes the destination when the result is empty.
//
// Argument checks follow Redis 7.0's order, quirks included: BITCOUNT and BITPOS look the key up
// before they parse their range, so a missing key answers 0 (BITPOS: 0 or -1) whatever the range
// says; BITFIELD parses every operation before it looks at the key, and creates or grows the key
// for a SET/INCRBY even when OVERFLOW FAIL then refuses the write.
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "server/commands/args.hpp"
#include "server/commands/common.hpp"

namespace kvlab::server {
namespace {

using U = Update<Value>;

enum class Found { kMissing, kWrongType, kString };

// Copies key's live string handle into *out (left empty unless kString).
Found lookup_string(CommandContext& ctx, std::string_view key, ObjectRef* out) {
  bool wrong_type = false;
  const bool found = read_live(ctx, key, [&](const Value& v) {
    if (v.obj->type() != ObjectType::kString) {
      wrong_type = true;
      return;
    }
    *out = v.obj;
  });
  if (!found) return Found::kMissing;
  return wrong_type ? Found::kWrongType : Found::kString;
}

// Redis compares option words, and reads a bitfield type's width, as C strings: a NUL ends them
// ("bit\0x" is BIT, "u8\0x" is u8). Numbers are read in full.
std::string_view c_string(std::string_view s) {
  return s.substr(0, s.find('\0'));
}

// A bit offset as Redis's getBitOffsetFromArgument reads it: a non-negative integer whose byte is
// below max_bytes (proto-max-bulk-len); with hash_form, "#N" means N * bits. Redis multiplies in a
// signed 64-bit integer that wraps in practice ("#2^58" for i64 is offset 0); so does this, in
// unsigned arithmetic.
bool parse_bit_offset(std::string_view s, bool hash_form, int bits, std::uint64_t max_bytes,
                      std::uint64_t* out) {
  const bool hash = hash_form && !s.empty() && s[0] == '#';
  if (hash) s.remove_prefix(1);
  std::int64_t v = 0;
  if (!parse_i64(s, &v)) return false;
  if (hash) {
    v = static_cast<std::int64_t>(static_cast<std::uint64_t>(v) * static_cast<std::uint64_t>(bits));
  }
  if (v < 0 || (static_cast<std::uint64_t>(v) >> 3) >= max_bytes) return false;
  *out = static_cast<std::uint64_t>(v);
  return true;
}

const unsigned char* ubytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

std::uint64_t popcount(const unsigned char* p, std::size_t n) {
  std::uint64_t c = 0;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    c += static_cast<std::uint64_t>(std::popcount(w));
  }
  for (; n > 0; --n, ++p) c += static_cast<std::uint64_t>(std::popcount(*p));
  return c;
}

// The set bits among bits first..last of s. REQUIRES: first <= last < 8 * s.size().
std::uint64_t count_bits(std::string_view s, std::uint64_t first, std::uint64_t last) {
  const unsigned char* p = ubytes(s);
  const std::uint64_t a = first >> 3, b = last >> 3;
  std::uint64_t n = popcount(p + a, b - a + 1);
  const unsigned before = (0xffu << (8 - (first & 7))) & 0xffu;  // bits of byte a before `first`
  const unsigned after = (1u << (7 - (last & 7))) - 1;           // bits of byte b after `last`
  n -= static_cast<std::uint64_t>(std::popcount(p[a] & before));
  n -= static_cast<std::uint64_t>(std::popcount(p[b] & after));
  return n;
}

// The first bit equal to `bit` among bits first..last of s, or -1. REQUIRES: last < 8 * s.size().
std::int64_t find_bit(std::string_view s, std::uint64_t first, std::uint64_t last, int bit) {
  const unsigned char* p = ubytes(s);
  const unsigned char skip = bit != 0 ? 0x00 : 0xff;  // a byte that cannot hold the bit
  const std::uint64_t skip_word = bit != 0 ? 0 : ~std::uint64_t{0};
  std::uint64_t i = first;
  while (i <= last) {
    if ((i & 7) == 0 && i + 7 <= last) {
      if (i + 63 <= last) {
        std::uint64_t w;
        std::memcpy(&w, p + (i >> 3), 8);
        if (w == skip_word) {
          i += 64;
          continue;
        }
      }
      if (p[i >> 3] == skip) {
        i += 8;
        continue;
      }
    }
    if (static_cast<int>((p[i >> 3] >> (7 - (i & 7))) & 1) == bit) {
      return static_cast<std::int64_t>(i);
    }
    ++i;
  }
  return -1;
}

// Redis's BITCOUNT/BITPOS range rule over `total` units (bytes or bits): negative indexes count
// from the end, then both are clamped into [0, total - 1]; start > end afterwards is empty.
void clamp_range(std::int64_t total, std::int64_t* start, std::int64_t* end) {
  if (*start < 0) *start += total;
  if (*end < 0) *end += total;
  if (*start < 0) *start = 0;
  if (*end < 0) *end = 0;
  if (*end >= total) *end = total - 1;
}

// BYTE or BIT (case-insensitive); anything else is a syntax error, replied here.
bool parse_unit(CommandContext& ctx, std::string_view s, bool* in_bits) {
  s = c_string(s);
  if (iequals(s, "bit")) {
    *in_bits = true;
  } else if (iequals(s, "byte")) {
    *in_bits = false;
  } else {
    ctx.reply.error(err::kSyntax);
    return false;
  }
  return true;
}

void setbit_cmd(CommandContext& ctx) {
  std::uint64_t offset = 0;
  if (!parse_bit_offset(ctx.arg(2), false, 0, ctx.server.proto_max_bulk_len(), &offset)) {
    ctx.reply.error(err::kBitOffset);
    return;
  }
  std::int64_t on = 0;
  if (!parse_i64(ctx.arg(3), &on) || (on & ~std::int64_t{1}) != 0) {
    ctx.reply.error(err::kBitValue);
    return;
  }
  const std::size_t byte = offset >> 3;
  const unsigned mask = 1u << (7 - (offset & 7));
  bool wrong_type = false, no_memory = false, changed = false;
  int old_bit = 0;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) {
    const Value* v = live(cur, ctx.now_ms);
    wrong_type = v != nullptr && v->obj->type() != ObjectType::kString;
    no_memory = false;
    if (wrong_type) return U::keep();
    const std::string_view base = v != nullptr ? v->obj->str() : std::string_view();
    old_bit = byte < base.size() && (ubytes(base)[byte] & mask) != 0 ? 1 : 0;
    changed = false;
    if (v != nullptr && byte < base.size() && old_bit == on) return U::keep();  // nothing changes
    changed = true;
    Object* o = Object::try_make_zeroed(std::max(base.size(), byte + 1));
    if (o == nullptr) {
      no_memory = true;
      return U::keep();
    }
    if (!base.empty()) std::memcpy(o->bytes(), base.data(), base.size());
    auto& b = reinterpret_cast<unsigned char&>(o->bytes()[byte]);
    b = static_cast<unsigned char>(on != 0 ? (b | mask) : (b & ~mask));
    return U::assign(Value{ObjectRef(o), v != nullptr ? v->expire_ms : 0});
  });
  if (wrong_type) {
    ctx.reply.error(err::kWrongType);
  } else if (no_memory) {
    ctx.reply.error(err::kNoMemory);
  } else {
    // Only a write that created, grew or flipped something, as Redis 7.0.15.
    if (changed) notify_keyspace_event(ctx, kNotifyString, "setbit", ctx.arg(1));
    ctx.reply.integer(old_bit);
  }
}

void getbit_cmd(CommandContext& ctx) {
  std::uint64_t offset = 0;
  if (!parse_bit_offset(ctx.arg(2), false, 0, ctx.server.proto_max_bulk_len(), &offset)) {
    ctx.reply.error(err::kBitOffset);
    return;
  }
  ObjectRef o;
  const Found f = lookup_string(ctx, ctx.arg(1), &o);
  if (f == Found::kWrongType) {
    ctx.reply.error(err::kWrongType);
    return;
  }
  const std::string_view s = o ? o->str() : std::string_view();
  const std::uint64_t byte = offset >> 3;
  ctx.reply.integer(byte < s.size() ? (ubytes(s)[byte] >> (7 - (offset & 7))) & 1 : 0);
}

void bitcount_cmd(CommandContext& ctx) {
  ObjectRef o;
  switch (lookup_string(ctx, ctx.arg(1), &o)) {
    case Found::kMissing:
      ctx.reply.integer(0);
      return;
    case Found::kWrongType:
      ctx.reply.error(err::kWrongType);
      return;
    case Found::kString:
      break;
  }
  const std::string_view s = o->str();
  const auto len = static_cast<std::int64_t>(s.size());
  std::int64_t start = 0, end = len - 1;
  bool in_bits = false;
  if (ctx.argc() == 4 || ctx.argc() == 5) {
    if (!arg_i64(ctx, ctx.arg(2), &start) || !arg_i64(ctx, ctx.arg(3), &end)) return;
    if (start < 0 && end < 0 && start > end) {  // checked before BYTE|BIT, as Redis does
      ctx.reply.integer(0);
      return;
    }
    if (ctx.argc() == 5 && !parse_unit(ctx, ctx.arg(4), &in_bits)) return;
    clamp_range(in_bits ? len * 8 : len, &start, &end);
  } else if (ctx.argc() != 2) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  if (start > end) {
    ctx.reply.integer(0);
    return;
  }
  const auto first = static_cast<std::uint64_t>(in_bits ? start : start * 8);
  const auto last = static_cast<std::uint64_t>(in_bits ? end : end * 8 + 7);
  ctx.reply.integer(static_cast<std::int64_t>(count_bits(s, first, last)));
}

void bitpos_cmd(CommandContext& ctx) {
  std::int64_t bit = 0;
  if (!arg_i64(ctx, ctx.arg(2), &bit)) return;
  if (bit != 0 && bit != 1) {
    ctx.reply.error(err::kBitposBit);
    return;
  }
  ObjectRef o;
  switch (lookup_string(ctx, ctx.arg(1), &o)) {
    // A missing key is an endless run of 0 bits.
    case Found::kMissing:
      ctx.reply.integer(bit != 0 ? -1 : 0);
      return;
    case Found::kWrongType:
      ctx.reply.error(err::kWrongType);
      return;
    case Found::kString:
      break;
  }
  const std::string_view s = o->str();
  const auto len = static_cast<std::int64_t>(s.size());
  std::int64_t start = 0, end = len - 1;
  bool in_bits = false, end_given = false;
  const std::size_t argc = ctx.argc();
  if (argc >= 4 && argc <= 6) {
    if (!arg_i64(ctx, ctx.arg(3), &start)) return;
    if (argc == 6 && !parse_unit(ctx, ctx.arg(5), &in_bits)) return;
    if (argc >= 5) {
      if (!arg_i64(ctx, ctx.arg(4), &end)) return;
      end_given = true;
    } else {
      end = in_bits ? len * 8 - 1 : len - 1;
    }
    clamp_range(in_bits ? len * 8 : len, &start, &end);
  } else if (argc != 3) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  if (start > end) {  // an empty range holds neither a 0 nor a 1
    ctx.reply.integer(-1);
    return;
  }
  const auto first = static_cast<std::uint64_t>(in_bits ? start : start * 8);
  const auto last = static_cast<std::uint64_t>(in_bits ? end : end * 8 + 7);
  const std::int64_t pos = find_bit(s, first, last, static_cast<int>(bit));
  // Without an explicit end the string counts as padded with 0 bits on the right: the first clear
  // bit of an all-ones string is the one just past its end.
  if (pos < 0 && bit == 0 && !end_given) {
    ctx.reply.integer(static_cast<std::int64_t>(last) + 1);
  } else {
    ctx.reply.integer(pos);
  }
}

void bitop_cmd(CommandContext& ctx) {
  const std::string_view op = c_string(ctx.arg(1));
  const bool is_and = iequals(op, "and"), is_or = iequals(op, "or"), is_xor = iequals(op, "xor"),
             is_not = iequals(op, "not");
  if (!is_and && !is_or && !is_xor && !is_not) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  if (is_not && ctx.argc() != 4) {
    ctx.reply.error(err::kBitopNot);
    return;
  }
  std::vector<ObjectRef> src;  // an empty handle stands for a missing key: an empty string
  std::size_t max_len = 0;
  for (std::size_t i = 3; i < ctx.argc(); ++i) {
    ObjectRef o;
    if (lookup_string(ctx, ctx.arg(i), &o) == Found::kWrongType) {
      ctx.reply.error(err::kWrongType);
      return;
    }
    if (o) max_len = std::max(max_len, o->size());
    src.push_back(std::move(o));
  }
  const std::string_view dest = ctx.arg(2);
  if (max_len == 0) {
    bool existed = false;
    ctx.ks.update(dest, [&](const Value* v) {
      existed = live(v, ctx.now_ms) != nullptr;
      return v != nullptr ? U::erase() : U::keep();
    });
    if (existed) notify_keyspace_event(ctx, kNotifyGeneric, "del", dest);
    ctx.reply.integer(0);
    return;
  }
  // Shorter sources count as padded with zero bytes up to max_len.
  Object* out = Object::make_zeroed(max_len);
  auto* r = reinterpret_cast<unsigned char*>(out->bytes());
  auto view = [&](std::size_t k) { return src[k] ? src[k]->str() : std::string_view(); };
  if (is_not) {
    const unsigned char* p = ubytes(view(0));
    for (std::size_t i = 0; i < max_len; ++i) r[i] = static_cast<unsigned char>(~p[i]);
  } else if (is_and) {
    if (!view(0).empty()) std::memcpy(r, view(0).data(), view(0).size());
    for (std::size_t k = 1; k < src.size(); ++k) {
      const std::string_view s = view(k);
      const unsigned char* p = ubytes(s);
      for (std::size_t i = 0; i < s.size(); ++i) r[i] &= p[i];
      std::memset(r + s.size(), 0, max_len - s.size());
    }
  } else {
    for (std::size_t k = 0; k < src.size(); ++k) {
      const std::string_view s = view(k);
      const unsigned char* p = ubytes(s);
      if (is_or) {
        for (std::size_t i = 0; i < s.size(); ++i) r[i] |= p[i];
      } else {
        for (std::size_t i = 0; i < s.size(); ++i) r[i] ^= p[i];
      }
    }
  }
  ctx.ks.insert_or_assign(dest, Value{ObjectRef(out), 0});
  notify_keyspace_event(ctx, kNotifyString, "set", dest);
  ctx.reply.integer(static_cast<std::int64_t>(max_len));
}

// ------------------------------------------------------------------------------------- BITFIELD

enum class Overflow { kWrap, kSat, kFail };
enum class FieldOpcode { kGet, kSet, kIncrBy };

struct FieldOp {
  FieldOpcode opcode;
  Overflow overflow;
  bool is_signed;
  int bits;  // 1..64 signed, 1..63 unsigned
  std::uint64_t offset;
  std::int64_t value;  // SET's value or INCRBY's increment
};

// "i<1..64>" or "u<1..63>", lower case only, as Redis's getBitfieldTypeFromArgument.
bool parse_field_type(std::string_view s, bool* is_signed, int* bits) {
  s = c_string(s);
  if (s.empty() || (s[0] != 'i' && s[0] != 'u')) return false;
  *is_signed = s[0] == 'i';
  std::int64_t n = 0;
  if (!parse_i64(s.substr(1), &n) || n < 1 || n > (*is_signed ? 64 : 63)) return false;
  *bits = static_cast<int>(n);
  return true;
}

// The `bits` bits of s at offset as an unsigned number, most significant first; bits past the end
// of s read as 0.
std::uint64_t get_field(std::string_view s, std::uint64_t offset, int bits) {
  std::uint64_t v = 0;
  for (int j = 0; j < bits; ++j, ++offset) {
    const std::uint64_t byte = offset >> 3;
    const unsigned b = byte < s.size() ? (ubytes(s)[byte] >> (7 - (offset & 7))) & 1u : 0u;
    v = (v << 1) | b;
  }
  return v;
}

// The low `bits` bits of v as a two's complement number.
std::int64_t sign_extend(std::uint64_t v, int bits) {
  if (bits < 64) {
    const std::uint64_t high = ~std::uint64_t{0} << bits;
    v = ((v >> (bits - 1)) & 1) != 0 ? (v | high) : (v & ~high);
  }
  return static_cast<std::int64_t>(v);
}

// Writes the low `bits` bits of v at offset. REQUIRES: p holds at least (offset + bits + 7) / 8
// bytes.
void set_field(char* p, std::uint64_t offset, int bits, std::uint64_t v) {
  for (int j = 0; j < bits; ++j, ++offset) {
    auto& byte = reinterpret_cast<unsigned char&>(p[offset >> 3]);
    const unsigned mask = 1u << (7 - (offset & 7));
    const bool on = ((v >> (bits - 1 - j)) & 1) != 0;
    byte = static_cast<unsigned char>(on ? (byte | mask) : (byte & ~mask));
  }
}

std::int64_t read_field(std::string_view s, const FieldOp& op) {
  const std::uint64_t raw = get_field(s, op.offset, op.bits);
  return op.is_signed ? sign_extend(raw, op.bits) : static_cast<std::int64_t>(raw);
}

// Runs a SET or INCRBY on p[0..len): SET answers the old value, INCRBY the new one; nullopt when
// OVERFLOW FAIL refused the write. Overflow is judged on the exact result (with one Redis quirk,
// below): WRAP keeps its low bits (sign-extended for signed fields), SAT clamps to the range. As in
// Redis, an unsigned SET reads its value as a 64-bit unsigned number, so a negative one overflows
// upwards (SAT: max).
std::optional<std::int64_t> write_field(char* p, std::size_t len, const FieldOp& op) {
  const std::uint64_t old_raw = get_field(std::string_view(p, len), op.offset, op.bits);
  const bool incr = op.opcode == FieldOpcode::kIncrBy;
  std::uint64_t next = 0;
  std::int64_t answer_old = 0;
  if (op.is_signed) {
    const std::int64_t max = op.bits == 64 ? std::numeric_limits<std::int64_t>::max()
                                           : (std::int64_t{1} << (op.bits - 1)) - 1;
    const std::int64_t min = -max - 1;
    const std::int64_t old = sign_extend(old_raw, op.bits);
    const std::int64_t base = incr ? old : op.value, add = incr ? op.value : 0;
    // The exact sum's side of the range; when the 64-bit sum overflows, the increment's sign.
    std::int64_t sum = 0;
    const bool sum_overflows = __builtin_add_overflow(base, add, &sum);
    const bool above = sum_overflows ? add > 0 : sum > max;
    const bool below = sum_overflows ? add < 0 : sum < min;
    // Redis compares the increment with max - value computed in wrapping 64-bit arithmetic. For an
    // INCRBY (value in range) that is exact; a SET of a value below -(2^63 - 1 - max), where the
    // difference wraps negative, thereby counts as an overflow upwards: SAT stores max for it.
    const bool wrapped_up =
        op.bits < 64 && static_cast<std::int64_t>(static_cast<std::uint64_t>(max) -
                                                  static_cast<std::uint64_t>(base)) < add;
    const bool up = above || wrapped_up;
    if (up || below) {
      switch (op.overflow) {
        case Overflow::kFail:
          return std::nullopt;
        case Overflow::kSat:
          next = static_cast<std::uint64_t>(up ? max : min);
          break;
        case Overflow::kWrap:
          next = static_cast<std::uint64_t>(sign_extend(
              static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(add), op.bits));
          break;
      }
    } else {
      next = static_cast<std::uint64_t>(sum);
    }
    answer_old = old;
  } else {
    const std::uint64_t max = (std::uint64_t{1} << op.bits) - 1;
    bool up = false, down = false;
    if (incr) {
      // old_raw <= max < 2^63, so neither difference below can wrap.
      if (op.value >= 0) {
        up = static_cast<std::uint64_t>(op.value) > max - old_raw;
      } else {
        down = static_cast<std::uint64_t>(-(op.value + 1)) + 1 > old_raw;  // |value| > old
      }
      next = old_raw + static_cast<std::uint64_t>(op.value);
    } else {
      next = static_cast<std::uint64_t>(op.value);
      up = next > max;
    }
    if (up || down) {
      switch (op.overflow) {
        case Overflow::kFail:
          return std::nullopt;
        case Overflow::kSat:
          next = up ? max : 0;
          break;
        case Overflow::kWrap:
          next &= max;
          break;
      }
    }
    answer_old = static_cast<std::int64_t>(old_raw);
  }
  set_field(p, op.offset, op.bits, next);
  if (!incr) return answer_old;
  return op.is_signed ? sign_extend(next, op.bits) : static_cast<std::int64_t>(next);
}

void bitfield_generic(CommandContext& ctx, bool read_only_command) {
  std::vector<FieldOp> ops;
  Overflow overflow = Overflow::kWrap;
  bool writes = false;
  std::uint64_t highest_bit = 0;  // the highest bit a SET or INCRBY touches
  // Redis compares the subcommands with strcasecmp: an argument ends at its first NUL byte.
  ArgParser p(ctx.argv, 2, ArgParser::Match::kCString);
  while (!p.done()) {
    FieldOpcode opcode;
    if (p.check("get", 2)) {
      opcode = FieldOpcode::kGet;
    } else if (p.check("set", 3)) {
      opcode = FieldOpcode::kSet;
    } else if (p.check("incrby", 3)) {
      opcode = FieldOpcode::kIncrBy;
    } else if (p.check("overflow", 1)) {
      if (p.check("wrap")) {
        overflow = Overflow::kWrap;
      } else if (p.check("sat")) {
        overflow = Overflow::kSat;
      } else if (p.check("fail")) {
        overflow = Overflow::kFail;
      } else {
        p.fail(err::kBitfieldOverflow);
      }
      continue;
    } else {
      p.fail(err::kSyntax);
      continue;
    }
    FieldOp op{opcode, overflow, false, 0, 0, 0};
    if (!parse_field_type(p.next(), &op.is_signed, &op.bits)) {
      p.fail(err::kBitfieldType);
      continue;
    }
    if (!parse_bit_offset(p.next(), true, op.bits, ctx.server.proto_max_bulk_len(), &op.offset)) {
      p.fail(err::kBitOffset);
      continue;
    }
    if (opcode != FieldOpcode::kGet) {
      writes = true;
      highest_bit = std::max(highest_bit, op.offset + static_cast<std::uint64_t>(op.bits) - 1);
      op.value = p.next_int();
    }
    ops.push_back(op);
  }
  if (p.reply_error(ctx.reply)) return;

  if (!writes) {
    ObjectRef o;
    if (lookup_string(ctx, ctx.arg(1), &o) == Found::kWrongType) {
      ctx.reply.error(err::kWrongType);
      return;
    }
    const std::string_view s = o ? o->str() : std::string_view();
    ctx.reply.array(ops.size());
    for (const FieldOp& op : ops) ctx.reply.integer(read_field(s, op));
    return;
  }
  if (read_only_command) {
    ctx.reply.error(err::kBitfieldRo);
    return;
  }
  std::vector<std::optional<std::int64_t>> results;
  bool wrong_type = false, no_memory = false;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) {
    const Value* v = live(cur, ctx.now_ms);
    wrong_type = v != nullptr && v->obj->type() != ObjectType::kString;
    no_memory = false;
    if (wrong_type) return U::keep();
    results.clear();
    const std::string_view base = v != nullptr ? v->obj->str() : std::string_view();
    const std::size_t len = std::max<std::size_t>(base.size(), (highest_bit >> 3) + 1);
    Object* o = Object::try_make_zeroed(len);
    if (o == nullptr) {
      no_memory = true;
      return U::keep();
    }
    if (!base.empty()) std::memcpy(o->bytes(), base.data(), base.size());
    for (const FieldOp& op : ops) {
      if (op.opcode == FieldOpcode::kGet) {
        results.emplace_back(read_field(std::string_view(o->bytes(), len), op));
      } else {
        results.push_back(write_field(o->bytes(), len, op));
      }
    }
    return U::assign(Value{ObjectRef(o), v != nullptr ? v->expire_ms : 0});
  });
  if (wrong_type || no_memory) {
    ctx.reply.error(wrong_type ? err::kWrongType : err::kNoMemory);
    return;
  }
  // "setbit" when a SET or INCRBY wrote (an overflow FAIL writes nothing), as Redis.
  bool changed = false;
  for (std::size_t k = 0; k < ops.size(); ++k)
    changed = changed || (ops[k].opcode != FieldOpcode::kGet && results[k].has_value());
  if (changed) notify_keyspace_event(ctx, kNotifyString, "setbit", ctx.arg(1));
  ctx.reply.array(results.size());
  for (const auto& r : results) {
    if (r) {
      ctx.reply.integer(*r);
    } else {
      ctx.reply.null();
    }
  }
}

void bitfield_cmd(CommandContext& ctx) {
  bitfield_generic(ctx, false);
}
void bitfield_ro_cmd(CommandContext& ctx) {
  bitfield_generic(ctx, true);
}

constexpr std::uint32_t kRW = kWrite | kDenyOom;
const CommandSpec kBitmapCommands[] = {
    {"setbit", 4, kRW, setbit_cmd, 1, 1, 1, "bitmap",
     "Sets or clears the bit at offset in the string value stored at key", "key offset value",
     "2.2.0"},
    {"getbit", 3, kReadOnly | kFast, getbit_cmd, 1, 1, 1, "bitmap",
     "Returns the bit value at offset in the string value stored at key", "key offset", "2.2.0"},
    {"bitcount", -2, kReadOnly, bitcount_cmd, 1, 1, 1, "bitmap", "Count set bits in a string",
     "key [start end [BYTE|BIT]]", "2.6.0", "O(N)"},
    {"bitpos", -3, kReadOnly, bitpos_cmd, 1, 1, 1, "bitmap",
     "Find first bit set or clear in a string", "key bit [start [end [BYTE|BIT]]]", "2.8.7",
     "O(N)"},
    {"bitop", -4, kRW, bitop_cmd, 2, -1, 1, "bitmap",
     "Perform bitwise operations between strings", "AND|OR|XOR|NOT destkey key ...", "2.6.0",
     "O(N)"},
    {"bitfield", -2, kRW, bitfield_cmd, 1, 1, 1, "bitmap",
     "Perform arbitrary bitfield integer operations on strings",
     "key [GET encoding offset] [OVERFLOW WRAP|SAT|FAIL] [SET encoding offset value] "
     "[INCRBY encoding offset increment] ...",
     "3.2.0", "O(1) for each subcommand specified"},
    {"bitfield_ro", -2, kReadOnly | kFast, bitfield_ro_cmd, 1, 1, 1, "bitmap",
     "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD",
     "key [GET encoding offset] ...", "6.0.0", "O(1) for each subcommand specified"},
};

}  // namespace

std::span<const CommandSpec> bitmap_commands() {
  return kBitmapCommands;
}

}  // namespace kvlab::server
