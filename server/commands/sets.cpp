// The set family: SADD, SREM, SISMEMBER, SMISMEMBER, SMEMBERS, SCARD, SPOP, SRANDMEMBER, SINTER,
// SINTERCARD, SUNION, SDIFF and their STORE forms, SMOVE, SSCAN.
//
// Every single-key command is one read_container/write_container call (server/commands/
// containers.hpp): atomic on its key, WRONGTYPE and the disappearance of emptied sets handled by
// the protocol. The multi-key commands are atomic per key, not as a whole: each source is read
// under its own lock into a private result set, and a STORE form then publishes that result as a
// fresh container (built before publication, so nobody else can see it half-filled) or deletes
// the destination when the result is empty. SMOVE checks the destination's type before it removes
// the member from the source, and puts the member back if the destination changed type in between,
// so WRONGTYPE never loses a member.
#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "server/commands/args.hpp"
#include "server/commands/containers.hpp"
#include "server/commands/scan_args.hpp"
#include "server/data/set_types.hpp"

namespace kvlab::server {
namespace {

using U = Update<Value>;

void sadd_cmd(CommandContext& ctx) {
  std::int64_t added = 0;
  const Access a = write_container<SetObject>(ctx, ctx.arg(1), true, [&](MemberSet& s) {
    for (std::size_t i = 2; i < ctx.argc(); ++i) added += s.insert(ctx.arg(i)) ? 1 : 0;
    return added > 0;
  });
  if (a == Access::kOk && added > 0) notify_keyspace_event(ctx, kNotifySet, "sadd", ctx.arg(1));
  if (a != Access::kWrongType) ctx.reply.integer(added);
}

void srem_cmd(CommandContext& ctx) {
  std::int64_t removed = 0;
  const Access a = write_container<SetObject>(ctx, ctx.arg(1), false, [&](MemberSet& s) {
    for (std::size_t i = 2; i < ctx.argc(); ++i) removed += s.erase(ctx.arg(i)) ? 1 : 0;
    return removed > 0;
  });
  if (a == Access::kOk && removed > 0) notify_container_write(ctx, kNotifySet, "srem", ctx.arg(1));
  if (a != Access::kWrongType) ctx.reply.integer(removed);
}

void sismember_cmd(CommandContext& ctx) {
  bool in = false;
  const Access a = read_container<SetObject>(
      ctx, ctx.arg(1), [&](const MemberSet& s) { in = s.contains(ctx.arg(2)); });
  if (a != Access::kWrongType) ctx.reply.integer(in ? 1 : 0);
}

void smismember_cmd(CommandContext& ctx) {
  std::vector<char> in(ctx.argc() - 2, 0);
  const Access a = read_container<SetObject>(ctx, ctx.arg(1), [&](const MemberSet& s) {
    for (std::size_t i = 2; i < ctx.argc(); ++i) in[i - 2] = s.contains(ctx.arg(i)) ? 1 : 0;
  });
  if (a == Access::kWrongType) return;
  ctx.reply.array(in.size());
  for (char v : in) ctx.reply.integer(v);
}

// Redis 7.0 keeps a set of at most set-max-intset-entries integers in an intset, a sorted array,
// and answers SMEMBERS and SSCAN from it in ascending order; clients' tests compare that order.
// Whether s is such a set (MemberSet::intset(), as OBJECT ENCODING in keys.cpp); if so, *order
// gets the positions of its members in ascending order, or stays empty when the positions already
// are (a compact MemberSet).
bool intset_order(const MemberSet& s, std::vector<std::uint32_t>* order) {
  order->clear();
  if (!s.intset()) return false;
  if (s.compact()) return true;
  std::vector<std::int64_t> values;
  if (!intset_values(s, &values)) return false;
  order->resize(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) (*order)[i] = static_cast<std::uint32_t>(i);
  std::sort(order->begin(), order->end(),
            [&](std::uint32_t a, std::uint32_t b) { return values[a] < values[b]; });
  return true;
}

// Replies every member while the set is locked (no copy); an intset's in ascending order.
void smembers_cmd(CommandContext& ctx) {
  const Access a = read_container<SetObject>(ctx, ctx.arg(1), [&](const MemberSet& s) {
    ctx.reply.set(s.size());
    std::vector<std::uint32_t> order;
    intset_order(s, &order);
    for (std::size_t i = 0; i < s.size(); ++i) ctx.reply.bulk(s.at(order.empty() ? i : order[i]));
  });
  if (a == Access::kMissing) ctx.reply.set(0);
}

void scard_cmd(CommandContext& ctx) {
  std::size_t n = 0;
  const Access a =
      read_container<SetObject>(ctx, ctx.arg(1), [&](const MemberSet& s) { n = s.size(); });
  if (a != Access::kWrongType) ctx.reply.integer(static_cast<std::int64_t>(n));
}

// SPOP key [count]: O(1) per popped member.
void spop_cmd(CommandContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  const bool has_count = ctx.argc() == 3;
  std::int64_t count = 1;
  if (has_count) {
    if (!parse_i64(ctx.arg(2), &count) || count < 0) {
      ctx.reply.error(err::kOutOfRangePositive);
      return;
    }
  }
  std::vector<std::string> popped;
  const Access a = write_container<SetObject>(ctx, ctx.arg(1), false, [&](MemberSet& s) {
    const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(count), s.size());
    popped.reserve(n);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = random_below(s.size());
      popped.push_back(s.at(i).str());
      s.erase_at(i);
    }
  });
  if (a == Access::kWrongType) return;
  if (a == Access::kOk && !popped.empty())
    notify_container_write(ctx, kNotifySet, "spop", ctx.arg(1));
  if (!has_count) {
    if (popped.empty()) {
      ctx.reply.null();
    } else {
      ctx.reply.bulk(popped[0]);
    }
    return;
  }
  ctx.reply.set(popped.size());  // a set in RESP3, as Redis 7.0
  for (const auto& m : popped) ctx.reply.bulk(m);
}

// SRANDMEMBER key [count]: count > 0 distinct members, count < 0 |count| members with repeats.
void srandmember_cmd(CommandContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  if (ctx.argc() == 2) {
    const Access a = read_container<SetObject>(
        ctx, ctx.arg(1), [&](const MemberSet& s) { ctx.reply.bulk(s.at(random_below(s.size()))); });
    if (a == Access::kMissing) ctx.reply.null();
    return;
  }
  std::int64_t count = 0;
  if (!arg_i64(ctx, ctx.arg(2), &count)) return;
  if (count == std::numeric_limits<std::int64_t>::min()) {
    ctx.reply.error(err::kOutOfRangeLong);
    return;
  }
  const Access a = read_container<SetObject>(ctx, ctx.arg(1), [&](const MemberSet& s) {
    const std::size_t size = s.size();
    if (count < 0) {
      if (count < -kMaxRandomReply) {  // after the lookup: a missing key answers [] as in Redis
        ctx.reply.error(err::kRandomCountTooLarge);
        return;
      }
      ctx.reply.array(static_cast<std::size_t>(-count));
      for (std::int64_t k = 0; k < -count && !reply_full(ctx); ++k)
        ctx.reply.bulk(s.at(random_below(size)));
      return;
    }
    const auto want = static_cast<std::size_t>(count);
    if (want >= size) {
      ctx.reply.array(size);
      for (std::size_t i = 0; i < size; ++i) ctx.reply.bulk(s.at(i));
      return;
    }
    const std::vector<std::size_t> picks = distinct_positions(size, want);
    ctx.reply.array(want);
    for (std::size_t i : picks) ctx.reply.bulk(s.at(i));
  });
  if (a == Access::kMissing) ctx.reply.array(0);
}

enum class SetOp { kInter, kUnion, kDiff };

// compute() without the final encoding of its result. `limit` (> 0) stops an intersection once
// it has that many members (SINTERCARD).
bool compute_members(CommandContext& ctx, SetOp op, std::size_t first, std::size_t last,
                     ObjectRef* out, std::size_t limit) {
  *out = ObjectRef(SetObject::make());
  MemberSet& r = as_container<SetObject>(*out)->data;
  if (op == SetOp::kUnion) {
    for (std::size_t k = first; k <= last; ++k) {
      const Access a = read_container<SetObject>(ctx, ctx.arg(k), [&](const MemberSet& s) {
        for (std::size_t i = 0; i < s.size(); ++i) r.insert(s.at(i));
      });
      if (a == Access::kWrongType) return false;
    }
    return true;
  }
  if (op == SetOp::kDiff) {
    for (std::size_t k = first; k <= last; ++k) {
      const Access a = read_container<SetObject>(ctx, ctx.arg(k), [&](const MemberSet& s) {
        if (k == first) {
          for (std::size_t i = 0; i < s.size(); ++i) r.insert(s.at(i));
        } else if (r.size() <= s.size()) {
          // Walk positions downwards: erase_at(i) moves an already-visited member into i.
          for (std::size_t i = r.size(); i-- > 0;)
            if (s.contains(r.at(i))) r.erase_at(i);
        } else {
          for (std::size_t i = 0; i < s.size(); ++i) r.erase(s.at(i));
        }
      });
      if (a == Access::kWrongType) return false;
      if (k == first && a == Access::kMissing) {
        // The difference from an empty set is empty, but the other keys' types are still checked.
        for (std::size_t j = first + 1; j <= last; ++j) {
          ObjectRef tmp;
          if (lookup_container<SetObject>(ctx, ctx.arg(j), &tmp) == Access::kWrongType)
            return false;
        }
        return true;
      }
    }
    return true;
  }
  // Intersection: check every key's type and find the smallest set, then start from a copy of
  // the smallest and filter it by every other set.
  std::size_t smallest = first, smallest_size = 0;
  bool any_missing = false;
  for (std::size_t k = first; k <= last; ++k) {
    std::size_t n = 0;
    const Access a =
        read_container<SetObject>(ctx, ctx.arg(k), [&](const MemberSet& s) { n = s.size(); });
    if (a == Access::kWrongType) return false;
    if (a == Access::kMissing) any_missing = true;
    if (k == first || n < smallest_size) {
      smallest = k;
      smallest_size = n;
    }
  }
  if (any_missing) return true;
  const Access a0 = read_container<SetObject>(ctx, ctx.arg(smallest), [&](const MemberSet& s) {
    for (std::size_t i = 0; i < s.size(); ++i) r.insert(s.at(i));
  });
  if (a0 == Access::kWrongType) return false;
  for (std::size_t k = first; k <= last && !r.empty(); ++k) {
    if (k == smallest) continue;
    const Access a = read_container<SetObject>(ctx, ctx.arg(k), [&](const MemberSet& s) {
      for (std::size_t i = r.size(); i-- > 0;)
        if (!s.contains(r.at(i))) r.erase_at(i);
    });
    if (a == Access::kWrongType) return false;
    if (a == Access::kMissing) {
      while (!r.empty()) r.erase_at(r.size() - 1);
    }
  }
  if (limit > 0)
    while (r.size() > limit) r.erase_at(r.size() - 1);
  return true;
}

// Computes op over the sets at argv[first..] into a fresh, unpublished SetObject, encoded as Redis
// encodes the result it builds (MemberSet::encode_from_contents). Each source is read under its
// own lock. Returns false after WRONGTYPE has been replied.
bool compute(CommandContext& ctx, SetOp op, std::size_t first, std::size_t last, ObjectRef* out) {
  if (!compute_members(ctx, op, first, last, out, 0)) return false;
  as_container<SetObject>(*out)->data.encode_from_contents();
  return true;
}

// SINTER, SUNION and SDIFF: a result Redis would hold in an intset comes in ascending order (Redis
// replies from an intset it builds, or from the smallest input, an intset when the result is one).
void reply_members(CommandContext& ctx, const ObjectRef& ref) {
  const MemberSet& r = as_container<SetObject>(ref)->data;
  ctx.reply.set(r.size());
  std::vector<std::uint32_t> order;
  intset_order(r, &order);
  for (std::size_t i = 0; i < r.size(); ++i) ctx.reply.bulk(r.at(order.empty() ? i : order[i]));
}

void set_op_cmd(CommandContext& ctx, SetOp op) {
  ObjectRef ref;
  if (!compute(ctx, op, 1, ctx.argc() - 1, &ref)) return;
  reply_members(ctx, ref);
}
void sinter_cmd(CommandContext& ctx) {
  set_op_cmd(ctx, SetOp::kInter);
}
void sunion_cmd(CommandContext& ctx) {
  set_op_cmd(ctx, SetOp::kUnion);
}
void sdiff_cmd(CommandContext& ctx) {
  set_op_cmd(ctx, SetOp::kDiff);
}

// The STORE forms: the destination is overwritten (whatever its type, its TTL cleared) by the
// fresh container, or deleted when the result is empty. Replies the result's cardinality.
void set_op_store_cmd(CommandContext& ctx, SetOp op) {
  ObjectRef ref;
  if (!compute(ctx, op, 2, ctx.argc() - 1, &ref)) return;
  const std::size_t n = as_container<SetObject>(ref)->data.size();
  if (n == 0) {
    bool existed = false;
    ctx.ks.update(ctx.arg(1), [&](const Value* v) {
      existed = live(v, ctx.now_ms) != nullptr;
      return v != nullptr ? U::erase() : U::keep();
    });
    if (existed) notify_keyspace_event(ctx, kNotifyGeneric, "del", ctx.arg(1));
  } else {
    ctx.ks.insert_or_assign(ctx.arg(1), Value{std::move(ref), 0});
    notify_keyspace_event(ctx, kNotifySet,
                          op == SetOp::kInter   ? "sinterstore"
                          : op == SetOp::kUnion ? "sunionstore"
                                                : "sdiffstore",
                          ctx.arg(1));
  }
  ctx.reply.integer(static_cast<std::int64_t>(n));
}
void sinterstore_cmd(CommandContext& ctx) {
  set_op_store_cmd(ctx, SetOp::kInter);
}
void sunionstore_cmd(CommandContext& ctx) {
  set_op_store_cmd(ctx, SetOp::kUnion);
}
void sdiffstore_cmd(CommandContext& ctx) {
  set_op_store_cmd(ctx, SetOp::kDiff);
}

// SINTERCARD numkeys key [key ...] [LIMIT limit]
void sintercard_cmd(CommandContext& ctx) {
  ArgParser p(ctx.argv);
  const std::size_t numkeys = p.next_keys(kNumkeysCard).size();
  std::int64_t limit = 0;
  while (!p.done()) {
    if (p.check("limit", 1)) {
      limit = p.next_int(0, std::numeric_limits<std::int64_t>::max(), err::kLimitNegative,
                         err::kLimitNegative);
    } else {
      p.fail(err::kSyntax);
    }
  }
  if (p.reply_error(ctx.reply)) return;
  ObjectRef ref;  // only counted: its encoding is never seen, so compute_members() suffices
  if (!compute_members(ctx, SetOp::kInter, 2, 1 + numkeys, &ref, static_cast<std::size_t>(limit)))
    return;
  ctx.reply.integer(static_cast<std::int64_t>(as_container<SetObject>(ref)->data.size()));
}

// SMOVE source destination member
void smove_cmd(CommandContext& ctx) {
  const std::string_view src = ctx.arg(1), dst = ctx.arg(2), member = ctx.arg(3);
  ObjectRef src_ref;
  const Access sa = lookup_container<SetObject>(ctx, src, &src_ref, true, false);
  if (sa == Access::kWrongType) return;
  if (sa == Access::kMissing) {
    ctx.reply.integer(0);
    return;
  }
  ObjectRef dst_ref;
  if (lookup_container<SetObject>(ctx, dst, &dst_ref, true, false) == Access::kWrongType) return;
  if (src == dst) {
    bool in = false;
    if (read_container<SetObject>(ctx, src, [&](const MemberSet& s) { in = s.contains(member); }) ==
        Access::kWrongType)
      return;
    ctx.reply.integer(in ? 1 : 0);
    return;
  }
  bool removed = false;
  if (write_container<SetObject>(
          ctx, src, false, [&](MemberSet& s) { removed = s.erase(member); }) == Access::kWrongType)
    return;
  if (!removed) {
    ctx.reply.integer(0);
    return;
  }
  // Redis's order: the source's events, then the destination's ("new" included).
  notify_container_write(ctx, kNotifySet, "srem", src);
  bool added = false;
  // A member the destination already holds changes nothing there: WATCH on the destination
  // stays valid, as Redis signals the destination only when the member was added.
  const Access da = write_container<SetObject>(
      ctx, dst, true, [&](MemberSet& s) { return added = s.insert(member); });
  if (da == Access::kWrongType) {
    // The destination changed type after the check (WRONGTYPE is already replied): undo the
    // removal so that the member is not lost. The source may be re-created for it.
    Buffer scratch;
    ReplyWriter quiet(scratch);
    CommandContext undo{ctx.server, ctx.worker, ctx.conn, ctx.ks, quiet, ctx.argv, ctx.now_ms};
    write_container<SetObject>(undo, src, true, [&](MemberSet& s) { s.insert(member); });
    return;
  }
  if (added) notify_keyspace_event(ctx, kNotifySet, "sadd", dst);
  ctx.reply.integer(1);
}

// SSCAN key cursor [MATCH pattern] [COUNT count]: positions are visited from high to low (see
// MemberSet); the cursor is the position below which nothing has been visited yet.
void sscan_cmd(CommandContext& ctx) {
  ScanArgs sa;
  if (!parse_scan_cursor_arg(ctx, 2, &sa)) return;
  const Access a = read_container<SetObject>(ctx, ctx.arg(1), [&](const MemberSet& s) {
    if (!parse_scan_options(ctx, 3, kScanMatchCount, &sa)) return;  // after the key's lookup and type, as Redis
    std::vector<MemberSet::Member> out;  // views into s, read while it is locked
    std::size_t pos = 0;
    if (std::vector<std::uint32_t> order; intset_order(s, &order)) {
      // An intset is answered whole, in ascending order, whatever the cursor and COUNT, with
      // cursor 0, as Redis does.
      for (std::size_t k = 0; k < s.size(); ++k) {
        const MemberSet::Member m = s.at(order.empty() ? k : order[k]);
        if (!sa.has_pattern || glob_match(sa.pattern, m)) out.push_back(m);
      }
    } else {
      pos =
          (sa.cursor == 0 || sa.cursor > s.size()) ? s.size() : static_cast<std::size_t>(sa.cursor);
      for (std::uint64_t examined = 0; pos > 0 && examined < sa.count; ++examined) {
        const MemberSet::Member m = s.at(--pos);
        if (!sa.has_pattern || glob_match(sa.pattern, m)) out.push_back(m);
      }
    }
    ctx.reply.array(2);
    ctx.reply.bulk_i64(static_cast<std::int64_t>(pos));
    ctx.reply.array(out.size());
    for (const MemberSet::Member& m : out) ctx.reply.bulk(m);
  });
  if (a == Access::kMissing) {
    ctx.reply.array(2);
    ctx.reply.bulk("0");
    ctx.reply.array(0);
  }
}

constexpr std::uint32_t kRW = kWrite | kDenyOom;

const CommandSpec kSetCommands[] = {
    {"sadd", -3, kRW | kFast, sadd_cmd, 1, 1, 1, "set", "Add one or more members to a set",
     "key member ...", "1.0.0",
     "O(1) for each element added, so O(N) to add N elements when the command is called with "
     "multiple arguments"},
    {"srem", -3, kWrite | kFast, srem_cmd, 1, 1, 1, "set", "Remove one or more members from a set",
     "key member ...", "1.0.0", "O(N) where N is the number of members to be removed"},
    {"sismember", 3, kReadOnly | kFast, sismember_cmd, 1, 1, 1, "set",
     "Determine if a given value is a member of a set", "key member"},
    {"smismember", -3, kReadOnly | kFast, smismember_cmd, 1, 1, 1, "set",
     "Returns the membership associated with the given elements for a set", "key member ...",
     "6.2.0", "O(N) where N is the number of elements being checked for membership"},
    {"smembers", 2, kReadOnly, smembers_cmd, 1, 1, 1, "set", "Get all the members in a set", "key",
     "1.0.0", "O(N) where N is the set cardinality"},
    {"scard", 2, kReadOnly | kFast, scard_cmd, 1, 1, 1, "set", "Get the number of members in a set",
     "key"},
    {"spop", -2, kWrite | kFast, spop_cmd, 1, 1, 1, "set",
     "Remove and return one or multiple random members from a set", "key [count]", "1.0.0",
     "Without the count argument O(1), otherwise O(N) where N is the value of the passed count"},
    {"srandmember", -2, kReadOnly, srandmember_cmd, 1, 1, 1, "set",
     "Get one or multiple random members from a set", "key [count]", "1.0.0",
     "Without the count argument O(1), otherwise O(N) where N is the absolute value of the "
     "passed count"},
    {"sinter", -2, kReadOnly, sinter_cmd, 1, -1, 1, "set", "Intersect multiple sets",
     "key ...", "1.0.0",
     "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of "
     "sets"},
    {"sintercard", -3, kReadOnly, sintercard_cmd, 0, 0, 0, "set",
     "Intersect multiple sets and return the cardinality of the result",
     "numkeys key ... [LIMIT limit]", "7.0.0",
     "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of "
     "sets",
     {}, keys_after_numkeys<1>},
    {"sinterstore", -3, kRW, sinterstore_cmd, 1, -1, 1, "set",
     "Intersect multiple sets and store the resulting set in a key", "destination key ...", "1.0.0",
     "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of "
     "sets"},
    {"sunion", -2, kReadOnly, sunion_cmd, 1, -1, 1, "set", "Add multiple sets", "key ...",
     "1.0.0", "O(N) where N is the total number of elements in all given sets"},
    {"sunionstore", -3, kRW, sunionstore_cmd, 1, -1, 1, "set",
     "Add multiple sets and store the resulting set in a key", "destination key ...", "1.0.0",
     "O(N) where N is the total number of elements in all given sets"},
    {"sdiff", -2, kReadOnly, sdiff_cmd, 1, -1, 1, "set", "Subtract multiple sets",
     "key ...", "1.0.0", "O(N) where N is the total number of elements in all given sets"},
    {"sdiffstore", -3, kRW, sdiffstore_cmd, 1, -1, 1, "set",
     "Subtract multiple sets and store the resulting set in a key", "destination key ...", "1.0.0",
     "O(N) where N is the total number of elements in all given sets"},
    {"smove", 4, kWrite | kFast, smove_cmd, 1, 2, 1, "set",
     "Move a member from one set to another", "source destination member"},
    {"sscan", -3, kReadOnly, sscan_cmd, 1, 1, 1, "set", "Incrementally iterate Set elements",
     "key cursor [MATCH pattern] [COUNT count]", "2.8.0",
     "O(1) for every call. O(N) for a complete iteration"},
};

}  // namespace

std::span<const CommandSpec> set_commands() {
  return kSetCommands;
}

}  // namespace kvlab::server
