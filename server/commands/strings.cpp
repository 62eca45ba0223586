// The string family: GET, SET and friends, counters, ranges, LCS.
//
// Every write is one keyspace operation on one key: plain SET/MSET use insert_or_assign; anything
// that reads first (NX/XX/GET/KEEPTTL, INCR, APPEND, SETRANGE…) goes through update(), whose
// function may run more than once, so it only assigns captured results and never replies itself.
// New Objects are built outside the function when they do not depend on the current value.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "server/commands/common.hpp"

namespace kvlab::server {
namespace {

using U = Update<Value>;

ObjectRef make_str(std::string_view s) { return ObjectRef(Object::make_string(s)); }

void get_cmd(CommandContext& ctx) {
  bool wrong_type = false;
  const bool found = read_live(ctx, ctx.arg(1), [&](const Value& v) {
    if (v.obj->type() != ObjectType::kString) {
      wrong_type = true;
      return;
    }
    ctx.reply.bulk(v.obj->str());
  });
  if (!found) {
    ctx.reply.null();
  } else if (wrong_type) {
    ctx.reply.error(err::kWrongType);
  }
}

// Options shared by SET and GETEX.
struct ExpiryOptions {
  bool nx = false, xx = false, get = false, keepttl = false, persist = false;
  bool has_expire = false;
  std::int64_t at_ms = 0;
  // Where the expiry value is and how to read it (GETEX validates it only for an existing key).
  std::size_t value_index = 0;
  bool seconds = false, absolute = false;
};

bool resolve_expiry(CommandContext& ctx, ExpiryOptions* o, std::string_view cmd) {
  return arg_expire(ctx, ctx.arg(o->value_index),
                    o->seconds ? TimeUnit::kSeconds : TimeUnit::kMilliseconds, o->absolute, cmd,
                    &o->at_ms);
}

// Parses SET's options from argv[3...] (or GETEX's from argv[2...] with getex=true). As in Redis,
// every option is checked for syntax first; the expiry value is parsed afterwards.
bool parse_set_options(CommandContext& ctx, std::size_t first, bool getex, ExpiryOptions* o) {
  std::size_t value_index = 0;
  bool seconds = false, absolute = false;
  // As Redis, an option conflicts only with the other expiry options: "KEEPTTL KEEPTTL" is fine
  // and "EX 10 EX 20" keeps the last value, "EX 10 PX 20" is a syntax error.
  int unit = 0;  // the expiry option given: 1 EX, 2 PX, 3 EXAT, 4 PXAT
  for (std::size_t i = first; i < ctx.argc(); ++i) {
    const std::string_view a = ctx.arg(i);
    const bool has_next = i + 1 < ctx.argc();
    const int this_unit = iequals(a, "ex")     ? 1
                          : iequals(a, "px")   ? 2
                          : iequals(a, "exat") ? 3
                          : iequals(a, "pxat") ? 4
                                               : 0;
    if (!getex && iequals(a, "nx") && !o->xx) {
      o->nx = true;
    } else if (!getex && iequals(a, "xx") && !o->nx) {
      o->xx = true;
    } else if (!getex && iequals(a, "get")) {
      o->get = true;
    } else if (!getex && iequals(a, "keepttl") && !o->has_expire) {
      o->keepttl = true;
    } else if (getex && iequals(a, "persist") && !o->has_expire) {
      o->persist = true;
    } else if (this_unit != 0 && !o->keepttl && !o->persist && (unit == 0 || unit == this_unit) &&
               has_next) {
      unit = this_unit;
      seconds = unit == 1 || unit == 3;
      absolute = unit >= 3;
      o->has_expire = true;
      value_index = ++i;
    } else {
      ctx.reply.error(err::kSyntax);
      return false;
    }
  }
  o->value_index = value_index;
  o->seconds = seconds;
  o->absolute = absolute;
  if (o->has_expire && !getex && !resolve_expiry(ctx, o, "set")) return false;
  return true;
}

void set_cmd(CommandContext& ctx) {
  ExpiryOptions o;
  if (!parse_set_options(ctx, 3, false, &o)) return;
  const std::string_view key = ctx.arg(1);
  ObjectRef obj = make_str(ctx.arg(2));
  const std::int64_t expire = o.has_expire ? o.at_ms : 0;
  if (!o.nx && !o.xx && !o.get && !o.keepttl) {
    ctx.ks.overwrite(key, Value{std::move(obj), expire});
    if (expire != 0) ctx.worker.track_expiry(key, expire);
    notify_keyspace_event(ctx, kNotifyString, "set", key);
    if (o.has_expire) notify_keyspace_event(ctx, kNotifyGeneric, "expire", key);
    ctx.reply.ok();
    return;
  }
  bool done = false, wrong_type = false;
  ObjectRef old;
  bool had_old = false;
  std::int64_t final_expire = expire;
  ctx.ks.update(key, [&](const Value* cur) {
    const Value* v = live(cur, ctx.now_ms);
    done = false;
    wrong_type = false;
    had_old = v != nullptr;
    old = v != nullptr ? v->obj : ObjectRef();
    if (o.get && v != nullptr && v->obj->type() != ObjectType::kString) {
      wrong_type = true;
      return U::keep();
    }
    if ((o.nx && v != nullptr) || (o.xx && v == nullptr)) return U::keep();
    done = true;
    final_expire = (o.keepttl && v != nullptr) ? v->expire_ms : expire;
    return U::assign(Value{obj, final_expire});
  });
  if (wrong_type) {
    ctx.reply.error(err::kWrongType);
    return;
  }
  if (done && final_expire != 0) ctx.worker.track_expiry(key, final_expire);
  if (o.get && !had_old) notify_keyspace_event(ctx, kNotifyKeyMiss, "keymiss", key);
  if (done) {
    notify_keyspace_event(ctx, kNotifyString, "set", key);
    if (o.has_expire) notify_keyspace_event(ctx, kNotifyGeneric, "expire", key);
  }
  if (o.get) {
    if (had_old) {
      ctx.reply.bulk(old->str());
    } else {
      ctx.reply.null();
    }
  } else if (done) {
    ctx.reply.ok();
  } else {
    ctx.reply.null();
  }
}

// Inserts key only if absent or expired. Returns true when it stored the value.
bool set_if_absent(CommandContext& ctx, std::string_view key, const ObjectRef& obj,
                   std::int64_t expire = 0) {
  if (ctx.ks.insert(key, Value{obj, expire})) return true;
  bool stored = false;
  ctx.ks.update(key, [&](const Value* cur) {
    stored = live(cur, ctx.now_ms) == nullptr;
    return stored ? U::assign(Value{obj, expire}) : U::keep();
  });
  return stored;
}

void setnx_cmd(CommandContext& ctx) {
  const bool stored = set_if_absent(ctx, ctx.arg(1), make_str(ctx.arg(2)));
  if (stored) notify_keyspace_event(ctx, kNotifyString, "set", ctx.arg(1));
  ctx.reply.integer(stored ? 1 : 0);
}

void setex_generic(CommandContext& ctx, TimeUnit unit, std::string_view name) {
  std::int64_t at = 0;
  if (!arg_expire(ctx, ctx.arg(2), unit, false, name, &at)) return;
  ctx.ks.overwrite(ctx.arg(1), Value{make_str(ctx.arg(3)), at});
  ctx.worker.track_expiry(ctx.arg(1), at);
  notify_keyspace_event(ctx, kNotifyString, "set", ctx.arg(1));
  notify_keyspace_event(ctx, kNotifyGeneric, "expire", ctx.arg(1));
  ctx.reply.ok();
}
void setex_cmd(CommandContext& ctx) { setex_generic(ctx, TimeUnit::kSeconds, "setex"); }
void psetex_cmd(CommandContext& ctx) { setex_generic(ctx, TimeUnit::kMilliseconds, "psetex"); }

// The GETSET/GETDEL/GETEX shape: one atomic update reads key's live string value and lets
// step(cur, v) decide what follows it (cur: what is stored, possibly expired; v: the live value or
// nullptr; step never sees another type, which stays untouched and answers WRONGTYPE). Replies
// the old string or nil; returns the old object (empty when there was none or on WRONGTYPE).
template <class Step>
ObjectRef get_and_update(CommandContext& ctx, Step&& step) {
  ObjectRef old;
  bool wrong_type = false;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) -> Update<Value> {
    const Value* v = live(cur, ctx.now_ms);
    old = v != nullptr ? v->obj : ObjectRef();
    wrong_type = v != nullptr && v->obj->type() != ObjectType::kString;
    return wrong_type ? U::keep() : step(cur, v);
  });
  if (wrong_type) {
    ctx.reply.error(err::kWrongType);
    return {};
  }
  // GETSET, GETDEL and GETEX read the key first (Redis's lookupKeyRead).
  if (!old) notify_keyspace_event(ctx, kNotifyKeyMiss, "keymiss", ctx.arg(1));
  if (old) {
    ctx.reply.bulk(old->str());
  } else {
    ctx.reply.null();
  }
  return old;
}

void getset_cmd(CommandContext& ctx) {
  ObjectRef obj = make_str(ctx.arg(2));
  bool wrote = false;
  get_and_update(ctx, [&](const Value*, const Value*) {
    wrote = true;
    return U::assign(Value{obj, 0});
  });
  if (wrote) notify_keyspace_event(ctx, kNotifyString, "set", ctx.arg(1));
}

void getdel_cmd(CommandContext& ctx) {
  if (get_and_update(ctx, [](const Value* cur, const Value*) {
        return cur == nullptr ? U::keep() : U::erase();  // also removes an expired value
      }))
    notify_keyspace_event(ctx, kNotifyGeneric, "del", ctx.arg(1));
}

void getex_cmd(CommandContext& ctx) {
  ExpiryOptions o;
  if (!parse_set_options(ctx, 2, true, &o)) return;
  if (o.has_expire) {
    // As Redis: a missing key answers nil and a key of another type WRONGTYPE before the expiry
    // value is validated.
    bool exists = false, wrong_type = false;
    read_live(ctx, ctx.arg(1), [&](const Value& v) {
      exists = true;
      wrong_type = v.obj->type() != ObjectType::kString;
    });
    if (!exists) {
      ctx.reply.null();
      return;
    }
    if (wrong_type) {
      ctx.reply.error(err::kWrongType);
      return;
    }
    if (!resolve_expiry(ctx, &o, "getex")) return;
  }
  const bool change = o.has_expire || o.persist;
  bool had_ttl = false;
  const ObjectRef old = get_and_update(ctx, [&](const Value*, const Value* v) {
    if (v == nullptr || !change) return U::keep();
    had_ttl = v->expire_ms != 0;
    if (o.has_expire && o.at_ms <= ctx.now_ms) return U::erase();
    return U::assign(Value{v->obj, o.persist ? 0 : o.at_ms});
  });
  if (old && o.has_expire && o.at_ms > ctx.now_ms) ctx.worker.track_expiry(ctx.arg(1), o.at_ms);
  if (old && o.has_expire) {
    notify_keyspace_event(ctx, kNotifyGeneric, o.at_ms <= ctx.now_ms ? "del" : "expire",
                          ctx.arg(1));
  } else if (old && o.persist && had_ttl) {
    notify_keyspace_event(ctx, kNotifyGeneric, "persist", ctx.arg(1));
  }
}

void mget_cmd(CommandContext& ctx) {
  ctx.reply.array(ctx.argc() - 1);
  for (std::size_t i = 1; i < ctx.argc(); ++i) {
    bool replied = false;
    read_live(ctx, ctx.arg(i), [&](const Value& v) {
      if (v.obj->type() != ObjectType::kString) return;
      ctx.reply.bulk(v.obj->str());
      replied = true;
    });
    if (!replied) ctx.reply.null();
  }
}

void mset_cmd(CommandContext& ctx) {
  if (ctx.argc() % 2 == 0) {
    ctx.reply.error(err::wrong_arity("mset"));
    return;
  }
  for (std::size_t i = 1; i + 1 < ctx.argc(); i += 2) {
    ctx.ks.overwrite(ctx.arg(i), Value{make_str(ctx.arg(i + 1)), 0});
    notify_keyspace_event(ctx, kNotifyString, "set", ctx.arg(i));
  }
  ctx.reply.ok();
}

// MSETNX: sets all keys only when none exists. Checked first, then written in argument order, so
// a repeated key ends with its last value (MSETNX k a k b sets k to "b" and answers 1, as Redis).
// The atomicity layer locks every key of the command, so nothing can create one of them between
// the check and the writes; without it this is atomic per key, not as a whole.
void msetnx_cmd(CommandContext& ctx) {
  if (ctx.argc() % 2 == 0) {
    ctx.reply.error(err::wrong_arity("msetnx"));
    return;
  }
  for (std::size_t i = 1; i + 1 < ctx.argc(); i += 2) {
    if (read_live(
            ctx, ctx.arg(i), [](const Value&) {}, true, /*read_lookup=*/false)) {
      ctx.reply.integer(0);
      return;
    }
  }
  for (std::size_t i = 1; i + 1 < ctx.argc(); i += 2) {
    ctx.ks.overwrite(ctx.arg(i), Value{make_str(ctx.arg(i + 1)), 0});
    notify_keyspace_event(ctx, kNotifyString, "set", ctx.arg(i));
  }
  ctx.reply.integer(1);
}

// APPEND writes in place when it may (object.hpp, invariant 2): the key's value is a growable
// string that no one else references and that has room, and the backend runs update functions
// exactly once under the key's lock, so the append happens once and no other writer runs beside
// it. Otherwise it stores a growable copy, and the next appends to the key go in place: a key
// appended to n times copies O(total bytes) instead of O(n^2). A missing key gets an exact-size
// string, as in Redis (most keys appended once stay so). Readers need no lock: they see the old
// length or the new one, never a torn value.
void append_cmd(CommandContext& ctx) {
  // proto-max-bulk-len bounds the result, as in Redis.
  const std::uint64_t max_len = ctx.server.proto_max_bulk_len();
  const std::string_view key = ctx.arg(1), add = ctx.arg(2);
  const bool may_write_in_place = ctx.ks.traits().update_runs_once;
  std::size_t new_len = 0;
  bool wrong_type = false, too_big = false, in_place = false;
  ctx.ks.update(key, [&](const Value* cur) {
    const Value* v = live(cur, ctx.now_ms);
    wrong_type = v != nullptr && v->obj->type() != ObjectType::kString;
    too_big = false;
    in_place = false;
    if (wrong_type) return U::keep();
    if (v == nullptr) {
      new_len = add.size();
      return U::assign(Value{make_str(add), 0});
    }
    const std::size_t len = v->obj->size();
    if (len + add.size() > max_len) {
      too_big = true;
      return U::keep();
    }
    if (may_write_in_place && v->obj->appendable(add.size())) {
      in_place = true;  // runs once (update_runs_once): the append below happens exactly once
      new_len = v->obj.mutable_get()->append_in_place(add);
      return U::keep();
    }
    new_len = len + add.size();
    return U::assign(
        Value{ObjectRef(Object::make_growable(v->obj->str(), add, max_len)), v->expire_ms});
  });
  if (in_place) ctx.ks.touch(key);  // modified without a new Value: WATCH and blocked clients
  if (wrong_type) {
    ctx.reply.error(err::kWrongType);
  } else if (too_big) {
    ctx.reply.error(err::kStringTooLong);
  } else {
    notify_keyspace_event(ctx, kNotifyString, "append", key);
    ctx.reply.integer(static_cast<std::int64_t>(new_len));
  }
}

void strlen_cmd(CommandContext& ctx) {
  std::int64_t len = 0;
  bool wrong_type = false;
  read_live(ctx, ctx.arg(1), [&](const Value& v) {
    wrong_type = v.obj->type() != ObjectType::kString;
    len = static_cast<std::int64_t>(v.obj->size());
  });
  if (wrong_type) {
    ctx.reply.error(err::kWrongType);
  } else {
    ctx.reply.integer(len);
  }
}

void getrange_cmd(CommandContext& ctx) {
  std::int64_t start = 0, end = 0;
  if (!arg_i64(ctx, ctx.arg(2), &start) || !arg_i64(ctx, ctx.arg(3), &end)) return;
  bool wrong_type = false, replied = false;
  read_live(ctx, ctx.arg(1), [&](const Value& v) {
    if (v.obj->type() != ObjectType::kString) {
      wrong_type = true;
      return;
    }
    const std::string_view s = v.obj->str();
    const auto len = static_cast<std::int64_t>(s.size());
    std::int64_t a = start, b = end;
    if (a < 0 && b < 0 && a > b) return;
    if (a < 0) a = len + a;
    if (b < 0) b = len + b;
    if (a < 0) a = 0;
    if (b < 0) b = 0;
    if (b >= len) b = len - 1;
    if (a > b || len == 0) return;
    ctx.reply.bulk(s.substr(static_cast<std::size_t>(a), static_cast<std::size_t>(b - a + 1)));
    replied = true;
  });
  if (wrong_type) {
    ctx.reply.error(err::kWrongType);
  } else if (!replied) {
    ctx.reply.bulk("");
  }
}

void setrange_cmd(CommandContext& ctx) {
  std::int64_t offset = 0;
  if (!arg_i64(ctx, ctx.arg(2), &offset)) return;
  if (offset < 0) {
    ctx.reply.error(err::kOffsetOutOfRange);
    return;
  }
  // As Redis: the type is checked first, then an empty value answers the current length whatever
  // the offset, and only then is the resulting size checked.
  const std::string_view add = ctx.arg(3);
  // proto-max-bulk-len bounds the result, as in Redis; offset < 2^63 and the argument is short,
  // so the sum cannot wrap.
  const bool too_big =
      static_cast<std::uint64_t>(offset) + add.size() > ctx.server.proto_max_bulk_len();
  const auto off = static_cast<std::size_t>(offset);
  const bool may_write_in_place = ctx.ks.traits().update_runs_once;
  std::size_t new_len = 0;
  bool wrong_type = false, refused = false, in_place = false, no_memory = false;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) {
    const Value* v = live(cur, ctx.now_ms);
    wrong_type = v != nullptr && v->obj->type() != ObjectType::kString;
    refused = false;
    in_place = false;
    no_memory = false;
    if (wrong_type) return U::keep();
    const std::string_view base = v != nullptr ? v->obj->str() : std::string_view();
    if (add.empty()) {  // nothing to write: report the length, create nothing
      new_len = base.size();
      return U::keep();
    }
    if (too_big) {
      refused = true;
      return U::keep();
    }
    if (may_write_in_place && v != nullptr && off >= base.size() &&
        v->obj->appendable(off - base.size() + add.size())) {  // past the end: as APPEND
      in_place = true;
      new_len = v->obj.mutable_get()->append_in_place(add, off - base.size());
      return U::keep();
    }
    new_len = std::max(base.size(), off + add.size());
    Object* o = Object::try_make_zeroed(new_len);
    if (o == nullptr) {
      no_memory = true;
      return U::keep();
    }
    if (!base.empty()) std::memcpy(o->bytes(), base.data(), base.size());
    std::memcpy(o->bytes() + off, add.data(), add.size());
    return U::assign(Value{ObjectRef(o), v != nullptr ? v->expire_ms : 0});
  });
  if (in_place) ctx.ks.touch(ctx.arg(1));
  if (wrong_type) {
    ctx.reply.error(err::kWrongType);
  } else if (no_memory) {
    ctx.reply.error(err::kNoMemory);
  } else if (refused) {
    ctx.reply.error(err::kStringTooLong);
  } else {
    if (!add.empty()) notify_keyspace_event(ctx, kNotifyString, "setrange", ctx.arg(1));
    ctx.reply.integer(static_cast<std::int64_t>(new_len));
  }
}

enum class IncrError { kNone, kWrongType, kNotInteger, kOverflow };

void incr_generic(CommandContext& ctx, std::int64_t by) {
  std::int64_t result = 0;
  IncrError e = IncrError::kNone;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) {
    const Value* v = live(cur, ctx.now_ms);
    std::int64_t base = 0;
    e = IncrError::kNone;
    if (v != nullptr) {
      if (v->obj->type() != ObjectType::kString) {
        e = IncrError::kWrongType;
        return U::keep();
      }
      if (!parse_i64(v->obj->str(), &base)) {
        e = IncrError::kNotInteger;
        return U::keep();
      }
    }
    if ((by < 0 && base < 0 && by < std::numeric_limits<std::int64_t>::min() - base) ||
        (by > 0 && base > 0 && by > std::numeric_limits<std::int64_t>::max() - base)) {
      e = IncrError::kOverflow;
      return U::keep();
    }
    result = base + by;
    char buf[24];
    const std::size_t n = format_i64(result, buf);
    return U::assign(Value{ObjectRef(Object::make_string(std::string_view(buf, n))),
                           v != nullptr ? v->expire_ms : 0});
  });
  switch (e) {
    case IncrError::kNone:
      notify_keyspace_event(ctx, kNotifyString, "incrby", ctx.arg(1));
      ctx.reply.integer(result);
      break;
    case IncrError::kWrongType: ctx.reply.error(err::kWrongType); break;
    case IncrError::kNotInteger: ctx.reply.error(err::kNotInteger); break;
    case IncrError::kOverflow: ctx.reply.error(err::kOverflow); break;
  }
}

void incr_cmd(CommandContext& ctx) { incr_generic(ctx, 1); }
void decr_cmd(CommandContext& ctx) { incr_generic(ctx, -1); }
void incrby_cmd(CommandContext& ctx) {
  std::int64_t by = 0;
  if (arg_i64(ctx, ctx.arg(2), &by)) incr_generic(ctx, by);
}
void decrby_cmd(CommandContext& ctx) {
  std::int64_t by = 0;
  if (!arg_i64(ctx, ctx.arg(2), &by)) return;
  if (by == std::numeric_limits<std::int64_t>::min()) {
    ctx.reply.error(err::kDecrOverflow);
    return;
  }
  incr_generic(ctx, -by);
}

void incrbyfloat_cmd(CommandContext& ctx) {
  // As Redis: the key's type is checked before the increment is parsed.
  long double by = 0;
  const bool by_ok = parse_long_double(ctx.arg(2), &by);
  std::string result;
  enum { kOk, kWrongType, kNotFloat, kNanInf } e = kOk;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) {
    const Value* v = live(cur, ctx.now_ms);
    long double base = 0;
    e = kOk;
    if (v != nullptr) {
      if (v->obj->type() != ObjectType::kString) {
        e = kWrongType;
        return U::keep();
      }
      if (!parse_long_double(v->obj->str(), &base)) {
        e = kNotFloat;
        return U::keep();
      }
    }
    if (!by_ok) {
      e = kNotFloat;
      return U::keep();
    }
    const long double sum = base + by;
    if (std::isnan(sum) || std::isinf(sum)) {
      e = kNanInf;
      return U::keep();
    }
    result = format_long_double_human(sum);
    return U::assign(Value{make_str(result), v != nullptr ? v->expire_ms : 0});
  });
  switch (e) {
    case kOk:
      notify_keyspace_event(ctx, kNotifyString, "incrbyfloat", ctx.arg(1));
      ctx.reply.bulk(result);
      break;
    case kWrongType: ctx.reply.error(err::kWrongType); break;
    case kNotFloat: ctx.reply.error(err::kNotFloat); break;
    case kNanInf: ctx.reply.error(err::kNanOrInf); break;
  }
}

// LCS: the longest common subsequence of two strings (missing keys are empty), by the textbook
// dynamic-programming table: O(N*M) time and 4*(N+1)*(M+1) transient bytes, refused above
// proto-max-bulk-len as Redis does. IDX walks the table back from its end, preferring to shorten
// the second string on ties as Redis does, so the matches (runs where both strings advance
// together) come out as Redis emits them: from the ends of the strings towards their starts.
void lcs_cmd(CommandContext& ctx) {
  ObjectRef objs[2];
  bool wrong_type = false;
  for (int k = 0; k < 2; ++k) {
    read_live(ctx, ctx.arg(1 + static_cast<std::size_t>(k)), [&](const Value& v) {
      if (v.obj->type() != ObjectType::kString) {
        wrong_type = true;
      } else {
        objs[k] = v.obj;
      }
    });
  }
  if (wrong_type) {
    ctx.reply.error(err::kLcsWrongType);
    return;
  }
  bool want_idx = false, want_len = false, with_match_len = false;
  std::int64_t min_match_len = 0;
  for (std::size_t i = 3; i < ctx.argc(); ++i) {
    // Compared as a C string, as Redis does: a NUL ends the word.
    const std::string_view opt = ctx.arg(i).substr(0, ctx.arg(i).find('\0'));
    if (iequals(opt, "idx")) {
      want_idx = true;
    } else if (iequals(opt, "len")) {
      want_len = true;
    } else if (iequals(opt, "withmatchlen")) {
      with_match_len = true;
    } else if (iequals(opt, "minmatchlen") && i + 1 < ctx.argc()) {
      if (!arg_i64(ctx, ctx.arg(++i), &min_match_len)) return;
      if (min_match_len < 0) min_match_len = 0;
    } else {
      ctx.reply.error(err::kSyntax);
      return;
    }
  }
  if (want_idx && want_len) {
    ctx.reply.error(err::kLcsIdxAndLen);
    return;
  }
  const std::string_view a = objs[0] ? objs[0]->str() : std::string_view();
  const std::string_view b = objs[1] ? objs[1]->str() : std::string_view();
  const std::size_t rows = a.size() + 1, cols = b.size() + 1;
  if (static_cast<std::uint64_t>(rows) * cols * sizeof(std::uint32_t) >
      ctx.server.proto_max_bulk_len()) {
    ctx.reply.error(err::kLcsTooMuchMemory);
    return;
  }
  std::unique_ptr<std::uint32_t[]> table(new (std::nothrow) std::uint32_t[rows * cols]);
  if (!table) {
    ctx.reply.error(err::kLcsAllocFailed);
    return;
  }
  // L(i, j): the LCS length of a[0..i) and b[0..j).
  auto L = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return table[i * cols + j]; };
  for (std::size_t j = 0; j < cols; ++j) L(0, j) = 0;
  for (std::size_t i = 1; i < rows; ++i) {
    L(i, 0) = 0;
    for (std::size_t j = 1; j < cols; ++j) {
      L(i, j) = a[i - 1] == b[j - 1] ? L(i - 1, j - 1) + 1 : std::max(L(i - 1, j), L(i, j - 1));
    }
  }
  const std::uint32_t lcs_len = L(rows - 1, cols - 1);
  if (want_len) {
    ctx.reply.integer(lcs_len);
    return;
  }
  struct Match {
    std::size_t a_start, a_end, b_start, b_end;
  };
  std::vector<Match> matches;
  std::string lcs(lcs_len, '\0');
  std::size_t i = rows - 1, j = cols - 1, k = lcs_len;
  bool in_match = false;
  Match m{};
  auto close_match = [&] {
    const std::size_t n = m.a_end - m.a_start + 1;
    if (min_match_len == 0 || n >= static_cast<std::uint64_t>(min_match_len)) matches.push_back(m);
    in_match = false;
  };
  while (i > 0 && j > 0) {
    if (a[i - 1] == b[j - 1]) {
      lcs[--k] = a[i - 1];
      if (!in_match) {
        m = Match{i - 1, i - 1, j - 1, j - 1};
        in_match = true;
      } else {  // consecutive matches are contiguous in both strings: extend backwards
        m.a_start = i - 1;
        m.b_start = j - 1;
      }
      --i;
      --j;
      if (i == 0 || j == 0) close_match();
    } else {
      if (L(i - 1, j) > L(i, j - 1)) {
        --i;
      } else {
        --j;
      }
      if (in_match) close_match();
    }
  }
  if (!want_idx) {
    ctx.reply.bulk(lcs);
    return;
  }
  ctx.reply.map(2);  // {"matches": [...], "len": n}
  ctx.reply.bulk("matches");
  ctx.reply.array(matches.size());
  for (const Match& x : matches) {
    ctx.reply.array(with_match_len ? 3 : 2);
    ctx.reply.array(2);
    ctx.reply.integer(static_cast<std::int64_t>(x.a_start));
    ctx.reply.integer(static_cast<std::int64_t>(x.a_end));
    ctx.reply.array(2);
    ctx.reply.integer(static_cast<std::int64_t>(x.b_start));
    ctx.reply.integer(static_cast<std::int64_t>(x.b_end));
    if (with_match_len) ctx.reply.integer(static_cast<std::int64_t>(x.a_end - x.a_start + 1));
  }
  ctx.reply.bulk("len");
  ctx.reply.integer(lcs_len);
}

constexpr std::uint32_t kRW = kWrite | kDenyOom;
const CommandSpec kStringCommands[] = {
    {"get", 2, kReadOnly | kFast, get_cmd, 1, 1, 1, "string", "Get the value of a key", "key"},
    {"set", -3, kRW, set_cmd, 1, 1, 1, "string",
     "Set the string value of a key, optionally with an expiry and a condition",
     "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT "
     "unix-time-milliseconds|KEEPTTL]"},
    {"setnx", 3, kRW | kFast, setnx_cmd, 1, 1, 1, "string",
     "Set the value of a key, only if the key does not exist", "key value"},
    {"setex", 4, kRW, setex_cmd, 1, 1, 1, "string", "Set the value and expiration of a key",
     "key seconds value", "2.0.0"},
    {"psetex", 4, kRW, psetex_cmd, 1, 1, 1, "string",
     "Set the value and expiration in milliseconds of a key", "key milliseconds value", "2.6.0"},
    {"getset", 3, kRW | kFast, getset_cmd, 1, 1, 1, "string",
     "Set the string value of a key and return its old value", "key value"},
    {"getdel", 2, kWrite | kFast, getdel_cmd, 1, 1, 1, "string",
     "Get the value of a key and delete the key", "key", "6.2.0"},
    {"getex", -2, kWrite | kFast, getex_cmd, 1, 1, 1, "string",
     "Get the value of a key and optionally set its expiration",
     "key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]",
     "6.2.0"},
    {"mget", -2, kReadOnly | kFast, mget_cmd, 1, -1, 1, "string",
     "Get the values of all the given keys", "key ...", "1.0.0",
     "O(N) where N is the number of keys"},
    {"mset", -3, kRW, mset_cmd, 1, -1, 2, "string", "Set multiple keys to multiple values",
     "key value [key value ...]", "1.0.1", "O(N) where N is the number of keys"},
    {"msetnx", -3, kRW, msetnx_cmd, 1, -1, 2, "string",
     "Set multiple keys to multiple values, only if none of the keys exist",
     "key value [key value ...]", "1.0.1", "O(N) where N is the number of keys"},
    {"append", 3, kRW | kFast, append_cmd, 1, 1, 1, "string", "Append a value to a key",
     "key value", "2.0.0"},
    {"strlen", 2, kReadOnly | kFast, strlen_cmd, 1, 1, 1, "string",
     "Get the length of the value stored in a key", "key", "2.2.0"},
    {"getrange", 4, kReadOnly, getrange_cmd, 1, 1, 1, "string",
     "Get a substring of the string stored at a key", "key start end", "2.4.0",
     "O(N) where N is the length of the returned string"},
    {"substr", 4, kReadOnly, getrange_cmd, 1, 1, 1, "string",
     "Get a substring of the string stored at a key", "key start end", "1.0.0",
     "O(N) where N is the length of the returned string"},
    {"setrange", 4, kRW, setrange_cmd, 1, 1, 1, "string",
     "Overwrite part of a string at key starting at the specified offset", "key offset value",
     "2.2.0"},
    {"incr", 2, kRW | kFast, incr_cmd, 1, 1, 1, "string",
     "Increment the integer value of a key by one", "key"},
    {"decr", 2, kRW | kFast, decr_cmd, 1, 1, 1, "string",
     "Decrement the integer value of a key by one", "key"},
    {"incrby", 3, kRW | kFast, incrby_cmd, 1, 1, 1, "string",
     "Increment the integer value of a key by the given amount", "key increment"},
    {"decrby", 3, kRW | kFast, decrby_cmd, 1, 1, 1, "string",
     "Decrement the integer value of a key by the given number", "key decrement"},
    {"incrbyfloat", 3, kRW | kFast, incrbyfloat_cmd, 1, 1, 1, "string",
     "Increment the float value of a key by the given amount", "key increment", "2.6.0"},
    {"lcs", -3, kReadOnly, lcs_cmd, 1, 2, 1, "string", "Find longest common substring",
     "key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]", "7.0.0",
     "O(N*M) where N and M are the lengths of s1 and s2, respectively"},
};

}  // namespace

std::span<const CommandSpec> string_commands() { return kStringCommands; }

}  // namespace kvlab::server
