// The list family: LPUSH/RPUSH(X), LPOP/RPOP, LLEN, LRANGE, LINDEX, LSET, LREM, LTRIM, LPOS,
// LINSERT, LMOVE, RPOPLPUSH and LMPOP.
//
// A list is a ListObject (server/data/value_types.hpp): a std::deque<std::string> behind the
// container's mutex, reached only through server/commands/containers.hpp. Every single-key command
// is one read_container/write_container call, hence atomic on its key; an emptied list disappears
// (the protocol unlinks it). Handlers reply from inside the access function when that avoids a
// copy: the function runs at most once, and only when the access returns kOk.
//
// Argument checks follow Redis's order (it matters for which error a bad command gets): LRANGE,
// LTRIM, LREM, LPOS and LINSERT validate their arguments before looking the key up; LINDEX and LSET
// look the key up first (a missing key wins over a bad index).
//
// LMOVE/RPOPLPUSH with two different keys are atomic per key, not as a whole: the element is
// popped from the source under its lock, then pushed to the destination under the destination's
// lock, so another client can observe it in neither list for a moment. The destination's type is
// checked before popping (WRONGTYPE loses nothing); if it changes type between that check and the
// push, the element goes back where it came from. Same source and destination: one locked rotate.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "server/commands/common.hpp"
#include "server/commands/containers.hpp"
#include "server/data/value_types.hpp"

namespace kvlab::server {
namespace {

using List = ListObject::Data;


// Redis's index rule: negative indexes count from the tail (-1 is the last element).
bool list_index(std::int64_t idx, std::size_t size, std::size_t* out) {
  const auto n = static_cast<std::int64_t>(size);
  if (idx < 0) idx += n;
  if (idx < 0 || idx >= n) return false;
  *out = static_cast<std::size_t>(idx);
  return true;
}

// LRANGE/LTRIM's rule: [start, end] after converting negative indexes and clamping. False when
// the range is empty.
bool list_range(std::int64_t start, std::int64_t end, std::size_t size, std::size_t* a,
                std::size_t* b) {
  const auto n = static_cast<std::int64_t>(size);
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (start < 0) start = 0;
  if (start > end || start >= n) return false;
  if (end >= n) end = n - 1;
  *a = static_cast<std::size_t>(start);
  *b = static_cast<std::size_t>(end);
  return true;
}

std::string take(List& l, bool left) {
  std::string v;
  if (left) {
    v = std::move(l.front());
    l.pop_front();
  } else {
    v = std::move(l.back());
    l.pop_back();
  }
  return v;
}

void put(List& l, bool left, std::string v) {
  if (left) {
    l.push_front(std::move(v));
  } else {
    l.push_back(std::move(v));
  }
}

// LPUSH / RPUSH / LPUSHX / RPUSHX key element [element ...]
void push_generic(CommandContext& ctx, bool left, bool only_existing) {
  std::size_t len = 0;
  const Access a = write_container<ListObject>(ctx, ctx.arg(1), !only_existing, [&](List& l) {
    for (std::size_t i = 2; i < ctx.argc(); ++i) {
      if (left) {
        l.emplace_front(ctx.arg(i));
      } else {
        l.emplace_back(ctx.arg(i));
      }
    }
    len = l.size();
  });
  if (a == Access::kWrongType) return;
  if (a == Access::kOk)
    notify_keyspace_event(ctx, kNotifyList, left ? "lpush" : "rpush", ctx.arg(1));
  ctx.reply.integer(a == Access::kOk ? static_cast<std::int64_t>(len) : 0);
}
void lpush_cmd(CommandContext& ctx) { push_generic(ctx, true, false); }
void rpush_cmd(CommandContext& ctx) { push_generic(ctx, false, false); }
void lpushx_cmd(CommandContext& ctx) { push_generic(ctx, true, true); }
void rpushx_cmd(CommandContext& ctx) { push_generic(ctx, false, true); }

// LPOP / RPOP key [count]: without count a bulk or nil; with count an array, or a nil array when
// the key is missing (Redis 7).
void pop_generic(CommandContext& ctx, bool left, std::string_view name) {
  if (ctx.argc() > 3) {
    ctx.reply.error(err::wrong_arity(name));
    return;
  }
  const bool has_count = ctx.argc() == 3;
  std::int64_t count = 1;
  if (has_count && (!parse_i64(ctx.arg(2), &count) || count < 0)) {
    ctx.reply.error(err::kOutOfRangePositive);
    return;
  }
  std::size_t popped = 0;
  const Access a = write_container<ListObject>(ctx, ctx.arg(1), false, [&](List& l) {
    if (!has_count) {
      ctx.reply.bulk(left ? l.front() : l.back());
      take(l, left);
      popped = 1;
      return;
    }
    const std::size_t n = std::min<std::uint64_t>(static_cast<std::uint64_t>(count), l.size());
    ctx.reply.array(n);
    for (std::size_t i = 0; i < n; ++i) {
      ctx.reply.bulk(left ? l.front() : l.back());
      take(l, left);
    }
    popped = n;
  });
  if (a == Access::kOk && popped > 0)
    notify_container_write(ctx, kNotifyList, left ? "lpop" : "rpop", ctx.arg(1));
  if (a == Access::kMissing) {
    if (has_count) {
      ctx.reply.null_array();
    } else {
      ctx.reply.null();
    }
  }
}
void lpop_cmd(CommandContext& ctx) { pop_generic(ctx, true, "lpop"); }
void rpop_cmd(CommandContext& ctx) { pop_generic(ctx, false, "rpop"); }

void llen_cmd(CommandContext& ctx) {
  std::int64_t n = 0;
  const Access a = read_container<ListObject>(
      ctx, ctx.arg(1), [&](const List& l) { n = static_cast<std::int64_t>(l.size()); });
  if (a != Access::kWrongType) ctx.reply.integer(n);
}

void lrange_cmd(CommandContext& ctx) {
  std::int64_t start = 0, end = 0;
  if (!arg_i64(ctx, ctx.arg(2), &start) || !arg_i64(ctx, ctx.arg(3), &end)) return;
  const Access a = read_container<ListObject>(ctx, ctx.arg(1), [&](const List& l) {
    std::size_t from = 0, to = 0;
    if (!list_range(start, end, l.size(), &from, &to)) {
      ctx.reply.array(0);
      return;
    }
    ctx.reply.array(to - from + 1);
    for (auto it = l.begin() + static_cast<std::ptrdiff_t>(from),
              stop = l.begin() + static_cast<std::ptrdiff_t>(to) + 1;
         it != stop; ++it)
      ctx.reply.bulk(*it);
  });
  if (a == Access::kMissing) ctx.reply.array(0);
}

void lindex_cmd(CommandContext& ctx) {
  std::int64_t idx = 0;
  const bool idx_ok = parse_i64(ctx.arg(2), &idx);
  const Access a = read_container<ListObject>(ctx, ctx.arg(1), [&](const List& l) {
    std::size_t i = 0;
    if (!idx_ok) {
      ctx.reply.error(err::kNotInteger);
    } else if (list_index(idx, l.size(), &i)) {
      ctx.reply.bulk(l[i]);
    } else {
      ctx.reply.null();
    }
  });
  if (a == Access::kMissing) ctx.reply.null();
}

void lset_cmd(CommandContext& ctx) {
  std::int64_t idx = 0;
  const bool idx_ok = parse_i64(ctx.arg(2), &idx);
  const Access a = write_container<ListObject>(ctx, ctx.arg(1), false, [&](List& l) {
    std::size_t i = 0;
    if (!idx_ok) {
      ctx.reply.error(err::kNotInteger);
    } else if (!list_index(idx, l.size(), &i)) {
      ctx.reply.error(err::kIndexOutOfRange);
    } else {
      l[i].assign(ctx.arg(3));
      ctx.reply.ok();
      notify_keyspace_event(ctx, kNotifyList, "lset", ctx.arg(1));
    }
  });
  if (a == Access::kMissing) ctx.reply.error(err::kNoSuchKey);
}

// Removes up to `limit` elements equal to v, from the head (forward) or from the tail; keeps the
// order of the rest. O(N).
template <class It>
std::size_t remove_equal(It first, It last, std::string_view v, std::uint64_t limit, It* new_end) {
  std::size_t removed = 0;
  It w = first;
  for (It r = first; r != last; ++r) {
    if (removed < limit && *r == v) {
      ++removed;
      continue;
    }
    if (w != r) *w = std::move(*r);
    ++w;
  }
  *new_end = w;
  return removed;
}

// LREM key count element: count > 0 from the head, < 0 from the tail, 0 all.
void lrem_cmd(CommandContext& ctx) {
  std::int64_t count = 0;
  if (!arg_i64(ctx, ctx.arg(2), &count)) return;
  const std::string_view v = ctx.arg(3);
  const std::uint64_t limit =
      count == 0 ? std::numeric_limits<std::uint64_t>::max()
                 : (count > 0 ? static_cast<std::uint64_t>(count)
                              : static_cast<std::uint64_t>(-(count + 1)) + 1);
  std::size_t removed = 0;
  const Access a = write_container<ListObject>(ctx, ctx.arg(1), false, [&](List& l) {
    if (count >= 0) {
      List::iterator end;
      removed = remove_equal(l.begin(), l.end(), v, limit, &end);
      l.erase(end, l.end());
    } else {
      List::reverse_iterator end;
      removed = remove_equal(l.rbegin(), l.rend(), v, limit, &end);
      l.erase(l.begin(), end.base());
    }
    return removed > 0;
  });
  if (a == Access::kOk && removed > 0) notify_container_write(ctx, kNotifyList, "lrem", ctx.arg(1));
  if (a != Access::kWrongType) ctx.reply.integer(static_cast<std::int64_t>(removed));
}

void ltrim_cmd(CommandContext& ctx) {
  std::int64_t start = 0, end = 0;
  if (!arg_i64(ctx, ctx.arg(2), &start) || !arg_i64(ctx, ctx.arg(3), &end)) return;
  const Access a = write_container<ListObject>(ctx, ctx.arg(1), false, [&](List& l) {
    std::size_t from = 0, to = 0;
    if (!list_range(start, end, l.size(), &from, &to)) {
      l.clear();  // the protocol then removes the key
      return;
    }
    l.erase(l.begin() + static_cast<std::ptrdiff_t>(to) + 1, l.end());
    l.erase(l.begin(), l.begin() + static_cast<std::ptrdiff_t>(from));
  });
  if (a == Access::kOk) notify_container_write(ctx, kNotifyList, "ltrim", ctx.arg(1));
  if (a != Access::kWrongType) ctx.reply.ok();
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
void lpos_cmd(CommandContext& ctx) {
  std::int64_t rank = 1, count = -1, maxlen = 0;  // count -1: option not given
  for (std::size_t i = 3; i < ctx.argc(); ++i) {
    const std::string_view opt = ctx.arg(i);
    const bool more = i + 1 < ctx.argc();
    if (iequals(opt, "rank") && more) {
      if (!arg_i64(ctx, ctx.arg(++i), &rank)) return;
      if (rank == std::numeric_limits<std::int64_t>::min()) {
        ctx.reply.error(err::kOutOfRangeLong);
        return;
      }
      if (rank == 0) {
        ctx.reply.error(err::kLposRankZero);
        return;
      }
    } else if (iequals(opt, "count") && more) {
      if (!parse_i64(ctx.arg(++i), &count) || count < 0) {
        ctx.reply.error(err::kLposCountNegative);
        return;
      }
    } else if (iequals(opt, "maxlen") && more) {
      if (!parse_i64(ctx.arg(++i), &maxlen) || maxlen < 0) {
        ctx.reply.error(err::kLposMaxlenNegative);
        return;
      }
    } else {
      ctx.reply.error(err::kSyntax);
      return;
    }
  }
  const bool from_tail = rank < 0;
  const std::uint64_t skip = static_cast<std::uint64_t>(from_tail ? -rank : rank) - 1;
  const std::string_view v = ctx.arg(2);
  const Access a = read_container<ListObject>(ctx, ctx.arg(1), [&](const List& l) {
    const std::size_t n = l.size();
    const std::size_t scan =
        maxlen == 0 ? n : std::min<std::uint64_t>(n, static_cast<std::uint64_t>(maxlen));
    std::vector<std::int64_t> found;
    std::uint64_t matches = 0;
    for (std::size_t k = 0; k < scan; ++k) {
      const std::size_t idx = from_tail ? n - 1 - k : k;
      if (l[idx] != v) continue;
      if (matches++ < skip) continue;
      found.push_back(static_cast<std::int64_t>(idx));
      if (count == -1) break;
      if (count != 0 && found.size() >= static_cast<std::uint64_t>(count)) break;
    }
    if (count != -1) {
      ctx.reply.array(found.size());
      for (std::int64_t f : found) ctx.reply.integer(f);
    } else if (found.empty()) {
      ctx.reply.null();
    } else {
      ctx.reply.integer(found.front());
    }
  });
  if (a == Access::kMissing) {
    if (count != -1) {
      ctx.reply.array(0);
    } else {
      ctx.reply.null();
    }
  }
}

// LINSERT key BEFORE|AFTER pivot element: the new length, -1 when the pivot is absent, 0 when
// the key is.
void linsert_cmd(CommandContext& ctx) {
  bool after = false;
  if (iequals(ctx.arg(2), "after")) {
    after = true;
  } else if (!iequals(ctx.arg(2), "before")) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  std::int64_t result = 0;
  const Access a = write_container<ListObject>(ctx, ctx.arg(1), false, [&](List& l) {
    auto it = std::find(l.begin(), l.end(), ctx.arg(3));
    if (it == l.end()) {
      result = -1;
      return false;
    }
    if (after) ++it;
    l.emplace(it, ctx.arg(4));
    result = static_cast<std::int64_t>(l.size());
    return true;
  });
  if (a == Access::kOk && result > 0)
    notify_keyspace_event(ctx, kNotifyList, "linsert", ctx.arg(1));
  if (a != Access::kWrongType) ctx.reply.integer(result);
}

// LMOVE / RPOPLPUSH: see the file comment for the per-key atomicity.
void move_generic(CommandContext& ctx, bool from_left, bool to_left) {
  const std::string_view src = ctx.arg(1), dst = ctx.arg(2);
  if (src == dst) {
    const Access a = write_container<ListObject>(ctx, src, false, [&](List& l) {
      std::string v = take(l, from_left);
      ctx.reply.bulk(v);
      put(l, to_left, std::move(v));
    });
    if (a == Access::kOk) {  // Redis's order: the push, then the pop
      notify_keyspace_event(ctx, kNotifyList, to_left ? "lpush" : "rpush", dst);
      notify_keyspace_event(ctx, kNotifyList, from_left ? "lpop" : "rpop", src);
    }
    if (a == Access::kMissing) ctx.reply.null();
    return;
  }
  // As Redis: a missing source answers nil whatever the destination holds; then the
  // destination's type is checked before anything is popped.
  {
    ObjectRef s, d;
    const Access a = lookup_container<ListObject>(ctx, src, &s, true, false);
    if (a == Access::kWrongType) return;
    if (a == Access::kMissing) {
      ctx.reply.null();
      return;
    }
    if (lookup_container<ListObject>(ctx, dst, &d, true, false) == Access::kWrongType) return;
  }
  std::string value;
  const Access a = write_container<ListObject>(ctx, src, false,
                                               [&](List& l) { value = take(l, from_left); });
  const bool src_emptied = t_container_emptied;
  if (a == Access::kWrongType) return;
  if (a == Access::kMissing) {
    ctx.reply.null();
    return;
  }
  const Access b = write_container<ListObject>(
      ctx, dst, true, [&](List& l) { put(l, to_left, value); }, /*reply_wrongtype=*/false);
  if (b == Access::kWrongType) {
    // The destination changed type after the check: give the element back to the source.
    write_container<ListObject>(
        ctx, src, true, [&](List& l) { put(l, from_left, std::move(value)); },
        /*reply_wrongtype=*/false);
    ctx.reply.error(err::kWrongType);
    return;
  }
  // Redis's order: the push on the destination, then the pop (and "del") on the source.
  notify_keyspace_event(ctx, kNotifyList, to_left ? "lpush" : "rpush", dst);
  notify_keyspace_event(ctx, kNotifyList, from_left ? "lpop" : "rpop", src);
  if (src_emptied) notify_keyspace_event(ctx, kNotifyGeneric, "del", src);
  ctx.reply.bulk(value);
}

bool parse_side(CommandContext& ctx, std::string_view s, bool* left) {
  if (iequals(s, "left")) {
    *left = true;
  } else if (iequals(s, "right")) {
    *left = false;
  } else {
    ctx.reply.error(err::kSyntax);
    return false;
  }
  return true;
}

void lmove_cmd(CommandContext& ctx) {
  bool from_left = false, to_left = false;
  if (!parse_side(ctx, ctx.arg(3), &from_left) || !parse_side(ctx, ctx.arg(4), &to_left)) return;
  move_generic(ctx, from_left, to_left);
}
void rpoplpush_cmd(CommandContext& ctx) { move_generic(ctx, false, true); }

// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: pops from the first non-empty list (a
// WRONGTYPE key met before it is an error; keys after it are not looked at) and replies
// [key, [element, ...]], or a nil array when every list is empty. Errors in Redis's order and
// texts: numkeys, then LEFT|RIGHT, then COUNT, then the keys. (BLMPOP is the blocking form.)
void lmpop_cmd(CommandContext& ctx) {
  MultiPopArgs m;
  if (const std::string_view e = parse_multi_pop(ctx.argv, 1, "left", "right", &m); !e.empty()) {
    ctx.reply.error(e);
    return;
  }
  const bool left = m.first_side;
  const std::int64_t count = m.count;
  for (std::size_t k = m.first_key; k < m.end_key; ++k) {
    const Access a = write_container<ListObject>(ctx, ctx.arg(k), false, [&](List& l) {
      const std::size_t n = std::min<std::uint64_t>(static_cast<std::uint64_t>(count), l.size());
      ctx.reply.array(2);
      ctx.reply.bulk(ctx.arg(k));
      ctx.reply.array(n);
      for (std::size_t i = 0; i < n; ++i) ctx.reply.bulk(take(l, left));
    });
    if (a == Access::kOk)
      notify_container_write(ctx, kNotifyList, left ? "lpop" : "rpop", ctx.arg(k));
    if (a == Access::kWrongType || a == Access::kOk) return;
  }
  ctx.reply.null_array();
}

constexpr std::uint32_t kRW = kWrite | kDenyOom;
constexpr std::span<const CommandSpec> kNoSub = {};  // no subcommands
const CommandSpec kListCommands[] = {
    {"lpush", -3, kRW | kFast, lpush_cmd, 1, 1, 1, "list",
     "Prepend one or multiple elements to a list", "key element [element ...]", "1.0.0",
     "O(1) for each element added, so O(N) to add N elements"},
    {"rpush", -3, kRW | kFast, rpush_cmd, 1, 1, 1, "list",
     "Append one or multiple elements to a list", "key element [element ...]", "1.0.0",
     "O(1) for each element added, so O(N) to add N elements"},
    {"lpushx", -3, kRW | kFast, lpushx_cmd, 1, 1, 1, "list",
     "Prepend elements to a list, only if the list exists", "key element [element ...]", "2.2.0",
     "O(1) for each element added, so O(N) to add N elements"},
    {"rpushx", -3, kRW | kFast, rpushx_cmd, 1, 1, 1, "list",
     "Append elements to a list, only if the list exists", "key element [element ...]", "2.2.0",
     "O(1) for each element added, so O(N) to add N elements"},
    {"lpop", -2, kWrite | kFast, lpop_cmd, 1, 1, 1, "list",
     "Remove and get the first elements in a list", "key [count]", "1.0.0",
     "O(N) where N is the number of elements returned"},
    {"rpop", -2, kWrite | kFast, rpop_cmd, 1, 1, 1, "list",
     "Remove and get the last elements in a list", "key [count]", "1.0.0",
     "O(N) where N is the number of elements returned"},
    {"llen", 2, kReadOnly | kFast, llen_cmd, 1, 1, 1, "list", "Get the length of a list", "key"},
    {"lrange", 4, kReadOnly, lrange_cmd, 1, 1, 1, "list", "Get a range of elements from a list",
     "key start stop", "1.0.0", "O(N) where N is the number of elements returned"},
    {"lindex", 3, kReadOnly, lindex_cmd, 1, 1, 1, "list",
     "Get an element from a list by its index", "key index", "1.0.0",
     "O(1) in kvlab (a deque; Redis's quicklist is O(N))"},
    {"lset", 4, kRW, lset_cmd, 1, 1, 1, "list", "Set the value of an element in a list by its index",
     "key index element", "1.0.0", "O(1) in kvlab (a deque; Redis's quicklist is O(N))"},
    {"lrem", 4, kWrite, lrem_cmd, 1, 1, 1, "list", "Remove elements from a list",
     "key count element", "1.0.0", "O(N+M) where N is the length of the list and M is the number "
     "of elements removed"},
    {"ltrim", 4, kWrite, ltrim_cmd, 1, 1, 1, "list", "Trim a list to the specified range",
     "key start stop", "1.0.0", "O(N) where N is the number of elements to be removed"},
    {"lpos", -3, kReadOnly, lpos_cmd, 1, 1, 1, "list", "Return the index of matching elements on a list",
     "key element [RANK rank] [COUNT num-matches] [MAXLEN len]", "6.0.6",
     "O(N) where N is the number of elements in the list, or MAXLEN when given"},
    {"linsert", 5, kRW, linsert_cmd, 1, 1, 1, "list",
     "Insert an element before or after another element in a list",
     "key BEFORE|AFTER pivot element", "2.2.0",
     "O(N) where N is the number of elements in the list"},
    {"lmove", 5, kRW, lmove_cmd, 1, 2, 1, "list",
     "Pop an element from a list, push it to another list and return it", "source destination "
     "LEFT|RIGHT LEFT|RIGHT", "6.2.0", "O(1)"},
    {"rpoplpush", 3, kRW, rpoplpush_cmd, 1, 2, 1, "list",
     "Remove the last element in a list, prepend it to another list and return it",
     "source destination", "1.2.0", "O(1)"},
    {"lmpop", -4, kWrite, lmpop_cmd, 0, 0, 0, "list",
     "Pop elements from a list", "numkeys key ... LEFT|RIGHT [COUNT count]", "7.0.0",
     "O(N+M) where N is the number of provided keys and M is the number of elements returned",
     kNoSub, keys_after_numkeys<1>},
};

}  // namespace

std::span<const CommandSpec> list_commands() { return kListCommands; }

}  // namespace kvlab::server
