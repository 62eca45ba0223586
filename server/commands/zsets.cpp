// The sorted-set family: ZADD (NX XX GT LT CH INCR), ZINCRBY, ZSCORE, ZMSCORE, ZRANK, ZREVRANK,
// ZRANGE (by rank, BYSCORE, BYLEX, REV, LIMIT, WITHSCORES), ZRANGEBYSCORE, ZREVRANGE,
// ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX, ZREM, ZREMRANGEBYRANK, ZREMRANGEBYSCORE,
// ZREMRANGEBYLEX, ZCARD, ZCOUNT, ZLEXCOUNT, ZPOPMIN, ZPOPMAX, ZSCAN, ZRANGESTORE, ZRANDMEMBER,
// ZMPOP; zsets_algebra.cpp has the algebra: ZUNION, ZINTER, ZDIFF, their STORE forms and
// ZINTERCARD.
//
// The multi-key commands read each input under its own lock into a private snapshot (sorted sets
// and sets alike: a set's members score 1), compute, and publish a STORE result as a fresh
// container built before publication; they are plain sequential code, and the atomicity layer
// locks the keys their CommandSpec rows name (keys_after_numkeys for the numkeys forms).
//
// The payload is ZSet (server/data/zset.hpp): a skiplist with span counts, so a rank, the
// first element of a score range and the element at an offset are all O(log N). Every command is
// one read_container/write_container call (server/commands/containers.hpp), atomic on its key;
// replies are written while the set is locked, so a range is a consistent snapshot.
// Argument checks follow Redis 7's order (syntax, then numbers, then the key's type) and texts.

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "server/commands/containers.hpp"
#include "server/commands/scan_args.hpp"
#include "server/commands/zsets_internal.hpp"
#include "server/data/set_types.hpp"

namespace kvlab::server {

namespace {

struct ZAddFlags {
  bool nx = false, xx = false, gt = false, lt = false, ch = false, incr = false;
};

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...] and ZINCRBY.
void zadd_generic(CommandContext& ctx, std::size_t scoreidx, ZAddFlags f) {
  for (; scoreidx < ctx.argc(); ++scoreidx) {
    const std::string_view o = ctx.arg(scoreidx);
    if (iequals(o, "nx")) {
      f.nx = true;
    } else if (iequals(o, "xx")) {
      f.xx = true;
    } else if (iequals(o, "ch")) {
      f.ch = true;
    } else if (iequals(o, "incr")) {
      f.incr = true;
    } else if (iequals(o, "gt")) {
      f.gt = true;
    } else if (iequals(o, "lt")) {
      f.lt = true;
    } else {
      break;
    }
  }
  const std::size_t rest = ctx.argc() - scoreidx;
  if (rest == 0 || rest % 2 != 0) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  const std::size_t elements = rest / 2;
  if (f.nx && f.xx) {
    ctx.reply.error(err::kZAddXxNx);
    return;
  }
  if ((f.gt && f.nx) || (f.lt && f.nx) || (f.gt && f.lt)) {
    ctx.reply.error(err::kZAddGtLtNx);
    return;
  }
  if (f.incr && elements > 1) {
    ctx.reply.error(err::kZAddIncrPair);
    return;
  }
  std::vector<double> scores(elements);
  for (std::size_t j = 0; j < elements; ++j) {
    if (!parse_score(ctx.arg(scoreidx + 2 * j), &scores[j])) {
      ctx.reply.error(err::kNotFloat);
      return;
    }
  }
  std::int64_t added = 0, updated = 0, processed = 0;
  double last = 0;
  bool nan = false;
  const Access a = write_container<ZSetObject>(ctx, ctx.arg(1), !f.xx, [&](ZSet& z) {
    if (z.empty()) {  // a new set: Redis picks its encoding from this ZADD's members
      std::size_t longest = 0;
      for (std::size_t j = 0; j < elements; ++j)
        longest = std::max(longest, ctx.arg(scoreidx + 2 * j + 1).size());
      z.note_creation(elements, longest);
    }
    for (std::size_t j = 0; j < elements; ++j) {
      const std::string_view member = ctx.arg(scoreidx + 2 * j + 1);
      double score = scores[j];
      if (const Node* n = z.find(member); n != nullptr) {
        if (f.nx) continue;
        const double cur = n->score;
        if (f.incr) {
          score += cur;
          if (std::isnan(score)) {
            nan = true;
            return false;  // nothing stored (NaN): an error reply
          }
        }
        if ((f.lt && score >= cur) || (f.gt && score <= cur)) continue;
        if (score != cur) {
          z.set(member, score);
          ++updated;
        }
      } else {
        if (f.xx) continue;
        z.set(member, score);
        ++added;
      }
      ++processed;
      last = score;
    }
    return added + updated > 0;
  });
  if (a == Access::kWrongType) return;
  if (a == Access::kOk && added + updated > 0)
    notify_keyspace_event(ctx, kNotifyZset, f.incr ? "zincr" : "zadd", ctx.arg(1));
  if (nan) {
    ctx.reply.error(err::kScoreNaN);
  } else if (f.incr) {
    if (processed > 0) {
      reply_score(ctx.reply, last);
    } else {
      ctx.reply.null();
    }
  } else {
    ctx.reply.integer(f.ch ? added + updated : added);
  }
}

void zadd_cmd(CommandContext& ctx) {
  zadd_generic(ctx, 2, {});
}

void zincrby_cmd(CommandContext& ctx) {
  ZAddFlags f;
  f.incr = true;
  zadd_generic(ctx, 2, f);
}

void zscore_cmd(CommandContext& ctx) {
  const Access a = read_container<ZSetObject>(ctx, ctx.arg(1), [&](const ZSet& z) {
    if (const Node* n = z.find(ctx.arg(2)); n != nullptr) {
      reply_score(ctx.reply, n->score);
    } else {
      ctx.reply.null();
    }
  });
  if (a == Access::kMissing) ctx.reply.null();
}

void zmscore_cmd(CommandContext& ctx) {
  const Access a = read_container<ZSetObject>(ctx, ctx.arg(1), [&](const ZSet& z) {
    ctx.reply.array(ctx.argc() - 2);
    for (std::size_t i = 2; i < ctx.argc(); ++i) {
      if (const Node* n = z.find(ctx.arg(i)); n != nullptr) {
        reply_score(ctx.reply, n->score);
      } else {
        ctx.reply.null();
      }
    }
  });
  if (a == Access::kMissing) {
    ctx.reply.array(ctx.argc() - 2);
    for (std::size_t i = 2; i < ctx.argc(); ++i) ctx.reply.null();
  }
}

void zcard_cmd(CommandContext& ctx) {
  std::size_t n = 0;
  const Access a =
      read_container<ZSetObject>(ctx, ctx.arg(1), [&](const ZSet& z) { n = z.size(); });
  if (a != Access::kWrongType) ctx.reply.integer(static_cast<std::int64_t>(n));
}

void zrem_cmd(CommandContext& ctx) {
  std::int64_t removed = 0;
  const Access a = write_container<ZSetObject>(ctx, ctx.arg(1), false, [&](ZSet& z) {
    for (std::size_t i = 2; i < ctx.argc(); ++i) removed += z.erase(ctx.arg(i)) ? 1 : 0;
    return removed > 0;
  });
  if (a == Access::kOk && removed > 0) notify_container_write(ctx, kNotifyZset, "zrem", ctx.arg(1));
  if (a != Access::kWrongType) ctx.reply.integer(removed);
}

// ZRANK / ZREVRANK key member [WITHSCORE]
void zrank_generic(CommandContext& ctx, bool reverse) {
  if (ctx.argc() > 4) {
    ctx.reply.error(err::wrong_arity(reverse ? "zrevrank" : "zrank"));
    return;
  }
  const bool withscore = ctx.argc() == 4;
  if (withscore && !iequals(ctx.arg(3), "withscore")) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  const Access a = read_container<ZSetObject>(ctx, ctx.arg(1), [&](const ZSet& z) {
    const Node* n = z.find(ctx.arg(2));
    if (n == nullptr) {
      if (withscore) {
        ctx.reply.null_array();
      } else {
        ctx.reply.null();
      }
      return;
    }
    const std::size_t r = z.list().rank(n);  // 1-based
    const std::size_t rank = reverse ? z.size() - r : r - 1;
    if (withscore) ctx.reply.array(2);
    ctx.reply.integer(static_cast<std::int64_t>(rank));
    if (withscore) reply_score(ctx.reply, n->score);
  });
  if (a == Access::kMissing) {
    if (withscore) {
      ctx.reply.null_array();
    } else {
      ctx.reply.null();
    }
  }
}

void zrank_cmd(CommandContext& ctx) {
  zrank_generic(ctx, false);
}

void zrevrank_cmd(CommandContext& ctx) {
  zrank_generic(ctx, true);
}

bool parse_score_range(std::string_view min, std::string_view max, ScoreRange* r) {
  return parse_score_bound(min, &r->min, &r->minex) && parse_score_bound(max, &r->max, &r->maxex);
}

bool parse_lex_range(std::string_view min, std::string_view max, LexRange* r) {
  return parse_lex_bound(min, &r->min) && parse_lex_bound(max, &r->max);
}

enum class RangeType { kAuto, kRank, kScore, kLex };

enum class Direction { kAuto, kForward, kReverse };

// Replies nodes (and their scores when asked): one flat array, or in RESP3 with scores an array
// of [member, score] pairs, as Redis 7.0.
void reply_nodes(ReplyWriter& r, const std::vector<const Node*>& nodes, bool withscores) {
  const bool pairs = withscores && r.resp3();
  r.array(nodes.size() * (withscores && !pairs ? 2 : 1));
  for (const Node* n : nodes) {
    if (pairs) r.array(2);
    r.bulk(n->member);
    if (withscores) reply_score(r, n->score);
  }
}

// Walks from `start` (inclusive) in direction `reverse`, skipping `offset` elements by rank and
// taking at most `limit` (negative: all) while `in_range` holds. Negative offsets give nothing,
// as in Redis.
template <class InRange>
std::vector<const Node*> walk(const ZSkipList& l, const Node* start, bool reverse,
                              std::int64_t offset, std::int64_t limit, InRange in_range) {
  std::vector<const Node*> out;
  if (start == nullptr || offset < 0) return out;
  if (offset > 0) {
    const std::size_t r = l.rank(start);
    if (reverse) {
      start = static_cast<std::size_t>(offset) >= r
                  ? nullptr
                  : l.by_rank(r - static_cast<std::size_t>(offset));
    } else {
      start = static_cast<std::size_t>(offset) > l.size() - r
                  ? nullptr
                  : l.by_rank(r + static_cast<std::size_t>(offset));
    }
  }
  for (const Node* n = start; n != nullptr && limit != 0; n = reverse ? n->prev() : n->next()) {
    if (!in_range(n)) break;
    out.push_back(n);
    if (limit > 0) --limit;
  }
  return out;
}

}  // namespace

void store_zset(CommandContext& ctx, std::string_view dst, ObjectRef result,
                std::string_view event) {
  const std::size_t n = as_container<ZSetObject>(result)->data.size();
  if (n == 0) {
    bool existed = false;
    ctx.ks.update(dst, [&](const Value* v) {
      existed = live(v, ctx.now_ms) != nullptr;
      return v != nullptr ? Update<Value>::erase() : Update<Value>::keep();
    });
    if (existed) notify_keyspace_event(ctx, kNotifyGeneric, "del", dst);
  } else {
    ctx.ks.insert_or_assign(dst, Value{std::move(result), 0});
    notify_keyspace_event(ctx, kNotifyZset, event, dst);
  }
  ctx.reply.integer(static_cast<std::int64_t>(n));
}

namespace {

// The common body of ZRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZREVRANGE, ZRANGEBYLEX,
// ZREVRANGEBYLEX and ZRANGESTORE (Redis's zrangeGenericCommand): the source key at argv[src],
// the range at argv[src+1..src+2], options after. ZRANGESTORE (store: the destination at
// argv[1]) refuses WITHSCORES, as Redis does.
void zrange_generic(CommandContext& ctx, RangeType rt, Direction dir, std::size_t src = 1,
                    bool store = false) {
  bool withscores = false;
  std::int64_t offset = 0, limit = -1;
  for (std::size_t j = src + 3; j < ctx.argc(); ++j) {
    const std::string_view o = ctx.arg(j);
    const std::size_t left = ctx.argc() - j - 1;
    if (!store && iequals(o, "withscores")) {
      withscores = true;
    } else if (iequals(o, "limit") && left >= 2) {
      if (!arg_i64(ctx, ctx.arg(j + 1), &offset) || !arg_i64(ctx, ctx.arg(j + 2), &limit)) return;
      j += 2;
    } else if (dir == Direction::kAuto && iequals(o, "rev")) {
      dir = Direction::kReverse;
    } else if (rt == RangeType::kAuto && iequals(o, "bylex")) {
      rt = RangeType::kLex;
    } else if (rt == RangeType::kAuto && iequals(o, "byscore")) {
      rt = RangeType::kScore;
    } else {
      ctx.reply.error(err::kSyntax);
      return;
    }
  }
  if (dir == Direction::kAuto) dir = Direction::kForward;
  if (rt == RangeType::kAuto) rt = RangeType::kRank;
  if (limit != -1 && rt == RangeType::kRank) {
    ctx.reply.error(err::kLimitNeedsByScoreOrLex);
    return;
  }
  if (withscores && rt == RangeType::kLex) {
    ctx.reply.error(err::kWithScoresByLex);
    return;
  }
  const bool reverse = dir == Direction::kReverse;
  std::string_view min_arg = ctx.arg(src + 1), max_arg = ctx.arg(src + 2);
  if (reverse && rt != RangeType::kRank) std::swap(min_arg, max_arg);  // given as max min

  std::int64_t start = 0, end = 0;
  ScoreRange sr;
  LexRange lr;
  switch (rt) {
    case RangeType::kAuto:
    case RangeType::kRank:
      if (!arg_i64(ctx, min_arg, &start) || !arg_i64(ctx, max_arg, &end)) return;
      break;
    case RangeType::kScore:
      if (!parse_score_range(min_arg, max_arg, &sr)) {
        ctx.reply.error(err::kMinMaxNotFloat);
        return;
      }
      break;
    case RangeType::kLex:
      if (!parse_lex_range(min_arg, max_arg, &lr)) {
        ctx.reply.error(err::kMinMaxNotLex);
        return;
      }
      break;
  }

  ObjectRef result;
  if (store) result = ObjectRef(ZSetObject::make());
  const Access a = read_container<ZSetObject>(ctx, ctx.arg(src), [&](const ZSet& z) {
    const ZSkipList& l = z.list();
    std::vector<const Node*> nodes;
    if (rt == RangeType::kRank) {
      const auto len = static_cast<std::int64_t>(z.size());
      if (start < 0) start += len;
      if (end < 0) end += len;
      if (start < 0) start = 0;
      if (!(start > end || start >= len)) {
        if (end >= len) end = len - 1;
        const std::int64_t n = end - start + 1;
        nodes.reserve(static_cast<std::size_t>(n));
        const Node* x = reverse ? l.by_rank(static_cast<std::size_t>(len - start))
                                : l.by_rank(static_cast<std::size_t>(start + 1));
        for (std::int64_t k = 0; k < n && x != nullptr; ++k) {
          nodes.push_back(x);
          x = reverse ? x->prev() : x->next();
        }
      }
    } else if (rt == RangeType::kScore) {
      const Node* first = reverse ? l.last_in(sr) : l.first_in(sr);
      nodes = walk(l, first, reverse, offset, limit, [&](const Node* n) {
        return reverse ? sr.gte_min(n->score) : sr.lte_max(n->score);
      });
    } else {
      const Node* first = reverse ? l.last_in(lr) : l.first_in(lr);
      nodes = walk(l, first, reverse, offset, limit, [&](const Node* n) {
        return reverse ? lr.gte_min(n->member) : lr.lte_max(n->member);
      });
    }
    if (store) {
      ZSet& out = as_container<ZSetObject>(result)->data;
      for (const Node* n : nodes) out.set(n->member, n->score);
    } else {
      reply_nodes(ctx.reply, nodes, withscores);
    }
  });
  if (a == Access::kWrongType) return;
  if (store) {
    store_zset(ctx, ctx.arg(1), std::move(result), "zrangestore");
  } else if (a == Access::kMissing) {
    ctx.reply.array(0);
  }
}

void zrange_cmd(CommandContext& ctx) {
  zrange_generic(ctx, RangeType::kAuto, Direction::kAuto);
}

void zrangebyscore_cmd(CommandContext& ctx) {
  zrange_generic(ctx, RangeType::kScore, Direction::kForward);
}

void zrevrangebyscore_cmd(CommandContext& ctx) {
  zrange_generic(ctx, RangeType::kScore, Direction::kReverse);
}

void zrevrange_cmd(CommandContext& ctx) {
  zrange_generic(ctx, RangeType::kRank, Direction::kReverse);
}

void zrangebylex_cmd(CommandContext& ctx) {
  zrange_generic(ctx, RangeType::kLex, Direction::kForward);
}

void zrevrangebylex_cmd(CommandContext& ctx) {
  zrange_generic(ctx, RangeType::kLex, Direction::kReverse);
}

// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
void zrangestore_cmd(CommandContext& ctx) {
  zrange_generic(ctx, RangeType::kAuto, Direction::kAuto, 2, true);
}

// The number of elements between two nodes of a range, by rank: O(log N).
template <class Range>
std::int64_t count_in(const ZSkipList& l, const Range& r) {
  const Node* first = l.first_in(r);
  if (first == nullptr) return 0;
  const Node* last = l.last_in(r);
  return static_cast<std::int64_t>(l.rank(last) - l.rank(first) + 1);
}

void zcount_cmd(CommandContext& ctx) {
  ScoreRange r;
  if (!parse_score_range(ctx.arg(2), ctx.arg(3), &r)) {
    ctx.reply.error(err::kMinMaxNotFloat);
    return;
  }
  std::int64_t n = 0;
  const Access a = read_container<ZSetObject>(ctx, ctx.arg(1),
                                              [&](const ZSet& z) { n = count_in(z.list(), r); });
  if (a != Access::kWrongType) ctx.reply.integer(n);
}

void zlexcount_cmd(CommandContext& ctx) {
  LexRange r;
  if (!parse_lex_range(ctx.arg(2), ctx.arg(3), &r)) {
    ctx.reply.error(err::kMinMaxNotLex);
    return;
  }
  std::int64_t n = 0;
  const Access a = read_container<ZSetObject>(ctx, ctx.arg(1), [&](const ZSet& z) {
    const ZSkipList& l = z.list();
    if (l.uniform_scores()) {
      n = count_in(l, r);
      return;
    }
    // Mixed scores: count from the first node in range while nodes stay at or below max, as
    // Redis's listpack walk counts (ZSkipList::first_in says why).
    for (const Node* x = l.first_in(r); x != nullptr && r.lte_max(x->member); x = x->next()) ++n;
  });
  if (a != Access::kWrongType) ctx.reply.integer(n);
}

// ZREMRANGEBYRANK / ZREMRANGEBYSCORE / ZREMRANGEBYLEX key a b: O(log N + M log N) for M removed.
enum class RemKind { kRank, kScore, kLex };

void zremrange_generic(CommandContext& ctx, RemKind kind) {
  std::int64_t start = 0, end = 0;
  ScoreRange sr;
  LexRange lr;
  if (kind == RemKind::kRank) {
    if (!arg_i64(ctx, ctx.arg(2), &start) || !arg_i64(ctx, ctx.arg(3), &end)) return;
  } else if (kind == RemKind::kScore) {
    if (!parse_score_range(ctx.arg(2), ctx.arg(3), &sr)) {
      ctx.reply.error(err::kMinMaxNotFloat);
      return;
    }
  } else if (!parse_lex_range(ctx.arg(2), ctx.arg(3), &lr)) {
    ctx.reply.error(err::kMinMaxNotLex);
    return;
  }
  std::int64_t removed = 0;
  const Access a = write_container<ZSetObject>(ctx, ctx.arg(1), false, [&](ZSet& z) {
    const ZSkipList& l = z.list();
    std::vector<std::string> victims;
    if (kind == RemKind::kRank) {
      const auto len = static_cast<std::int64_t>(z.size());
      if (start < 0) start += len;
      if (end < 0) end += len;
      if (start < 0) start = 0;
      if (start > end || start >= len) return;
      if (end >= len) end = len - 1;
      const Node* n = l.by_rank(static_cast<std::size_t>(start + 1));
      for (std::int64_t k = start; k <= end && n != nullptr; ++k, n = n->next())
        victims.push_back(n->member);
    } else if (kind == RemKind::kScore) {
      for (const Node* n = l.first_in(sr); n != nullptr && sr.lte_max(n->score); n = n->next())
        victims.push_back(n->member);
    } else {
      for (const Node* n = l.first_in(lr); n != nullptr && lr.lte_max(n->member); n = n->next())
        victims.push_back(n->member);
    }
    for (const auto& m : victims) z.erase(m);
    removed = static_cast<std::int64_t>(victims.size());
  });
  if (a == Access::kOk && removed > 0)
    notify_container_write(ctx, kNotifyZset,
                           kind == RemKind::kRank    ? "zremrangebyrank"
                           : kind == RemKind::kScore ? "zremrangebyscore"
                                                     : "zremrangebylex",
                           ctx.arg(1));
  if (a != Access::kWrongType) ctx.reply.integer(removed);
}

void zremrangebyrank_cmd(CommandContext& ctx) {
  zremrange_generic(ctx, RemKind::kRank);
}

void zremrangebyscore_cmd(CommandContext& ctx) {
  zremrange_generic(ctx, RemKind::kScore);
}

void zremrangebylex_cmd(CommandContext& ctx) {
  zremrange_generic(ctx, RemKind::kLex);
}

// ZPOPMIN / ZPOPMAX key [count]: a flat array member, score, ... (RESP2).
void zpop_generic(CommandContext& ctx, bool max) {
  if (ctx.argc() > 3) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  std::int64_t count = 1;
  if (ctx.argc() == 3) {
    if (!parse_i64(ctx.arg(2), &count) || count < 0) {
      ctx.reply.error(err::kOutOfRangePositive);
      return;
    }
  }
  std::vector<std::pair<std::string, double>> popped;
  const Access a = write_container<ZSetObject>(ctx, ctx.arg(1), false, [&](ZSet& z) {
    const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(count), z.size());
    popped.reserve(n);
    for (std::size_t k = 0; k < n; ++k) popped.push_back(z.pop(max));
  });
  if (a == Access::kWrongType) return;
  if (a == Access::kOk && !popped.empty())
    notify_container_write(ctx, kNotifyZset, max ? "zpopmax" : "zpopmin", ctx.arg(1));
  // RESP3 with a count: [member, score] pairs (Redis 7.0); without one, or in RESP2, flat.
  const bool pairs = ctx.reply.resp3() && ctx.argc() == 3;
  ctx.reply.array(popped.size() * (pairs ? 1 : 2));
  for (const auto& [m, s] : popped) {
    if (pairs) ctx.reply.array(2);
    ctx.reply.bulk(m);
    reply_score(ctx.reply, s);
  }
}

void zpopmin_cmd(CommandContext& ctx) {
  zpop_generic(ctx, false);
}

void zpopmax_cmd(CommandContext& ctx) {
  zpop_generic(ctx, true);
}

// ZSCAN key cursor [MATCH pattern] [COUNT count]: the ZSet's slots are visited from high to low
// (see ZSet::slots() for why a member present throughout a scan is returned); a set Redis would
// keep in a listpack is answered whole.
void zscan_cmd(CommandContext& ctx) {
  ScanArgs sa;
  if (!parse_scan_cursor_arg(ctx, 2, &sa)) return;
  const Access a = read_container<ZSetObject>(ctx, ctx.arg(1), [&](const ZSet& z) {
    if (!parse_scan_options(ctx, 3, kScanMatchCount, &sa))
      return;  // after the key's lookup and type, as Redis
    std::vector<const Node*> out;
    std::size_t pos = 0;
    if (z.listpack()) {
      // A set Redis keeps in a listpack is answered whole, in score order, whatever the cursor
      // and COUNT, with cursor 0 (clients and tests see that order).
      for (const Node* n = z.list().first(); n != nullptr; n = n->next())
        if (!sa.has_pattern || glob_match(sa.pattern, n->member)) out.push_back(n);
    } else {
      pos = (sa.cursor == 0 || sa.cursor > z.slots()) ? z.slots()
                                                      : static_cast<std::size_t>(sa.cursor);
      for (std::uint64_t examined = 0; pos > 0 && examined < sa.count; ++examined) {
        const Node* n = z.slot(--pos);
        if (!sa.has_pattern || glob_match(sa.pattern, n->member)) out.push_back(n);
      }
    }
    ctx.reply.array(2);
    ctx.reply.bulk_i64(static_cast<std::int64_t>(pos));
    // Scores as bulk strings in RESP3 too: Redis's SCAN replies strings.
    ctx.reply.array(out.size() * 2);
    for (const Node* n : out) {
      ctx.reply.bulk(n->member);
      ctx.reply.dbl_bulk(n->score);
    }
  });
  if (a == Access::kMissing) {
    ctx.reply.array(2);
    ctx.reply.bulk("0");
    ctx.reply.array(0);
  }
}

// ----------------------------------------------------------------------- ZRANDMEMBER, ZMPOP

// ZRANDMEMBER key [count [WITHSCORES]]: without count one bulk member (nil for a missing key);
// count > 0 distinct members, count < 0 |count| members with repeats; WITHSCORES interleaves the
// scores (a flat array in RESP2). The count is checked before the key, as in Redis.
void zrandmember_cmd(CommandContext& ctx) {
  if (ctx.argc() == 2) {
    const Access a = read_container<ZSetObject>(ctx, ctx.arg(1), [&](const ZSet& z) {
      ctx.reply.bulk(z.slot(random_below(z.slots()))->member);
    });
    if (a == Access::kMissing) ctx.reply.null();
    return;
  }
  std::int64_t count = 0;
  if (!arg_i64(ctx, ctx.arg(2), &count)) return;
  if (count == std::numeric_limits<std::int64_t>::min()) {
    ctx.reply.error(err::kOutOfRangeLong);
    return;
  }
  if (ctx.argc() > 4 || (ctx.argc() == 4 && !iequals(ctx.arg(3), "withscores"))) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  const bool withscores = ctx.argc() == 4;
  constexpr std::int64_t kHalf = std::numeric_limits<std::int64_t>::max() / 2;
  if (withscores && (count < -kHalf || count > kHalf)) {
    ctx.reply.error(err::kOutOfRange);
    return;
  }
  const bool pairs = withscores && ctx.reply.resp3();  // RESP3: [member, score] pairs
  const std::size_t per = withscores && !pairs ? 2 : 1;
  auto emit = [&](const Node* x) {
    if (pairs) ctx.reply.array(2);
    ctx.reply.bulk(x->member);
    if (withscores) reply_score(ctx.reply, x->score);
  };
  const Access a = read_container<ZSetObject>(ctx, ctx.arg(1), [&](const ZSet& z) {
    const std::size_t size = z.size();
    if (count < 0) {
      if (count < -kMaxRandomReply) {
        ctx.reply.error(err::kRandomCountTooLarge);
        return;
      }
      ctx.reply.array(static_cast<std::size_t>(-count) * per);
      for (std::int64_t k = 0; k < -count && !reply_full(ctx); ++k)
        emit(z.slot(random_below(size)));
      return;
    }
    const auto want = static_cast<std::size_t>(count);
    if (want >= size) {
      ctx.reply.array(size * per);
      // Highest first: Redis walks a sorted set from its tail here.
      for (const Node* x = z.list().last(); x != nullptr; x = x->prev()) emit(x);
      return;
    }
    const std::vector<std::size_t> picks = distinct_positions(size, want);
    ctx.reply.array(want * per);
    for (std::size_t i : picks) emit(z.slot(i));
  });
  if (a == Access::kMissing) ctx.reply.array(0);
}

// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]: pops from the first non-empty sorted set
// (a WRONGTYPE key met before it is an error; keys after it are not looked at) and replies
// [key, [[member, score], ...]] (nested pairs even in RESP2), or a nil array when every key is
// empty. Errors in Redis's order and texts: numkeys, then MIN|MAX, then COUNT, then the keys.
void zmpop_cmd(CommandContext& ctx) {
  MultiPopArgs m;
  if (const std::string_view e = parse_multi_pop(ctx.argv, 1, "min", "max", &m); !e.empty()) {
    ctx.reply.error(e);
    return;
  }
  const bool max = !m.first_side;
  const std::int64_t count = m.count;
  for (std::size_t k = m.first_key; k < m.end_key; ++k) {
    std::vector<std::pair<std::string, double>> popped;
    const Access a = write_container<ZSetObject>(ctx, ctx.arg(k), false, [&](ZSet& z) {
      const std::size_t m = std::min<std::size_t>(static_cast<std::size_t>(count), z.size());
      popped.reserve(m);
      for (std::size_t i = 0; i < m; ++i) popped.push_back(z.pop(max));
    });
    if (a == Access::kWrongType) return;
    if (a == Access::kMissing) continue;
    notify_container_write(ctx, kNotifyZset, max ? "zpopmax" : "zpopmin", ctx.arg(k));
    ctx.reply.array(2);
    ctx.reply.bulk(ctx.arg(k));
    ctx.reply.array(popped.size());
    for (const auto& [m, sc] : popped) {
      ctx.reply.array(2);
      ctx.reply.bulk(m);
      reply_score(ctx.reply, sc);
    }
    return;
  }
  ctx.reply.null_array();
}

constexpr std::uint32_t kRW = kWrite | kDenyOom;

constexpr std::span<const CommandSpec> kNoSub = {};  // no subcommands

const CommandSpec kZSetCommands[] = {
    {"zadd", -4, kRW | kFast, zadd_cmd, 1, 1, 1, "sorted-set",
     "Add one or more members to a sorted set, or update its score if it already exists",
     "key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]", "1.2.0",
     "O(log(N)) for each item added, where N is the number of elements in the sorted set"},
    {"zincrby", 4, kRW | kFast, zincrby_cmd, 1, 1, 1, "sorted-set",
     "Increment the score of a member in a sorted set", "key increment member", "1.2.0",
     "O(log(N)) where N is the number of elements in the sorted set"},
    {"zscore", 3, kReadOnly | kFast, zscore_cmd, 1, 1, 1, "sorted-set",
     "Get the score associated with the given member in a sorted set", "key member", "1.2.0"},
    {"zmscore", -3, kReadOnly | kFast, zmscore_cmd, 1, 1, 1, "sorted-set",
     "Get the score associated with the given members in a sorted set", "key member ...", "6.2.0",
     "O(N) where N is the number of members being requested"},
    {"zrank", -3, kReadOnly | kFast, zrank_cmd, 1, 1, 1, "sorted-set",
     "Determine the index of a member in a sorted set", "key member [WITHSCORE]", "2.0.0",
     "O(log(N))"},
    {"zrevrank", -3, kReadOnly | kFast, zrevrank_cmd, 1, 1, 1, "sorted-set",
     "Determine the index of a member in a sorted set, with scores ordered from high to low",
     "key member [WITHSCORE]", "2.0.0", "O(log(N))"},
    {"zrange", -4, kReadOnly, zrange_cmd, 1, 1, 1, "sorted-set",
     "Return a range of members in a sorted set",
     "key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]", "1.2.0",
     "O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
     "elements returned"},
    {"zrangebyscore", -4, kReadOnly, zrangebyscore_cmd, 1, 1, 1, "sorted-set",
     "Return a range of members in a sorted set, by score",
     "key min max [WITHSCORES] [LIMIT offset count]", "1.0.5",
     "O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
     "elements being returned"},
    {"zrevrangebyscore", -4, kReadOnly, zrevrangebyscore_cmd, 1, 1, 1, "sorted-set",
     "Return a range of members in a sorted set, by score, with scores ordered from high to low",
     "key max min [WITHSCORES] [LIMIT offset count]", "2.2.0",
     "O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
     "elements being returned"},
    {"zrevrange", -4, kReadOnly, zrevrange_cmd, 1, 1, 1, "sorted-set",
     "Return a range of members in a sorted set, by index, with scores ordered from high to low",
     "key start stop [WITHSCORES]", "1.2.0",
     "O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
     "elements returned"},
    {"zrangebylex", -4, kReadOnly, zrangebylex_cmd, 1, 1, 1, "sorted-set",
     "Return a range of members in a sorted set, by lexicographical range",
     "key min max [LIMIT offset count]", "2.8.9",
     "O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
     "elements being returned"},
    {"zrevrangebylex", -4, kReadOnly, zrevrangebylex_cmd, 1, 1, 1, "sorted-set",
     "Return a range of members in a sorted set, by lexicographical range, ordered from higher "
     "to lower strings",
     "key max min [LIMIT offset count]", "2.8.9",
     "O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
     "elements being returned"},
    {"zrem", -3, kWrite | kFast, zrem_cmd, 1, 1, 1, "sorted-set",
     "Remove one or more members from a sorted set", "key member ...", "1.2.0",
     "O(M*log(N)) with N being the number of elements in the sorted set and M the number of "
     "elements to be removed"},
    {"zcard", 2, kReadOnly | kFast, zcard_cmd, 1, 1, 1, "sorted-set",
     "Get the number of members in a sorted set", "key", "1.2.0"},
    {"zcount", 4, kReadOnly | kFast, zcount_cmd, 1, 1, 1, "sorted-set",
     "Count the members in a sorted set with scores within the given values", "key min max",
     "2.0.0", "O(log(N)) with N being the number of elements in the sorted set"},
    {"zlexcount", 4, kReadOnly | kFast, zlexcount_cmd, 1, 1, 1, "sorted-set",
     "Count the number of members in a sorted set between a given lexicographical range",
     "key min max", "2.8.9", "O(log(N)) with N being the number of elements in the sorted set"},
    {"zremrangebyrank", 4, kWrite, zremrangebyrank_cmd, 1, 1, 1, "sorted-set",
     "Remove all members in a sorted set within the given indexes", "key start stop", "2.0.0",
     "O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
     "elements removed by the operation"},
    {"zremrangebyscore", 4, kWrite, zremrangebyscore_cmd, 1, 1, 1, "sorted-set",
     "Remove all members in a sorted set within the given scores", "key min max", "1.2.0",
     "O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
     "elements removed by the operation"},
    {"zremrangebylex", 4, kWrite, zremrangebylex_cmd, 1, 1, 1, "sorted-set",
     "Remove all members in a sorted set between the given lexicographical range", "key min max",
     "2.8.9",
     "O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
     "elements removed by the operation"},
    {"zpopmin", -2, kWrite | kFast, zpopmin_cmd, 1, 1, 1, "sorted-set",
     "Remove and return members with the lowest scores in a sorted set", "key [count]", "5.0.0",
     "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number "
     "of elements popped"},
    {"zpopmax", -2, kWrite | kFast, zpopmax_cmd, 1, 1, 1, "sorted-set",
     "Remove and return members with the highest scores in a sorted set", "key [count]", "5.0.0",
     "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number "
     "of elements popped"},
    {"zscan", -3, kReadOnly, zscan_cmd, 1, 1, 1, "sorted-set",
     "Incrementally iterate sorted sets elements and associated scores",
     "key cursor [MATCH pattern] [COUNT count]", "2.8.0",
     "O(1) for every call. O(N) for a complete iteration"},
    {"zunion", -3, kReadOnly, zunion_cmd, 0, 0, 0, "sorted-set", "Add multiple sorted sets",
     "numkeys key ... [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]", "6.2.0",
     "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the "
     "number of elements in the resulting sorted set.",
     kNoSub, keys_after_numkeys<1>},
    {"zinter", -3, kReadOnly, zinter_cmd, 0, 0, 0, "sorted-set", "Intersect multiple sorted sets",
     "numkeys key ... [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]", "6.2.0",
     "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number "
     "of input sorted sets and M being the number of elements in the resulting sorted set.",
     kNoSub, keys_after_numkeys<1>},
    {"zdiff", -3, kReadOnly, zdiff_cmd, 0, 0, 0, "sorted-set", "Subtract multiple sorted sets",
     "numkeys key ... [WITHSCORES]", "6.2.0",
     "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is "
     "the size of the first set, and K is the size of the result set.",
     kNoSub, keys_after_numkeys<1>},
    {"zunionstore", -4, kRW, zunionstore_cmd, 1, 1, 1, "sorted-set",
     "Add multiple sorted sets and store the resulting sorted set in a new key",
     "destination numkeys key ... [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]", "2.0.0",
     "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the "
     "number of elements in the resulting sorted set.",
     kNoSub, keys_after_numkeys<2>},
    {"zinterstore", -4, kRW, zinterstore_cmd, 1, 1, 1, "sorted-set",
     "Intersect multiple sorted sets and store the resulting sorted set in a new key",
     "destination numkeys key ... [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]", "2.0.0",
     "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number "
     "of input sorted sets and M being the number of elements in the resulting sorted set.",
     kNoSub, keys_after_numkeys<2>},
    {"zdiffstore", -4, kRW, zdiffstore_cmd, 1, 1, 1, "sorted-set",
     "Subtract multiple sorted sets and store the resulting sorted set in a new key",
     "destination numkeys key ...", "6.2.0",
     "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is "
     "the size of the first set, and K is the size of the result set.",
     kNoSub, keys_after_numkeys<2>},
    {"zintercard", -3, kReadOnly, zintercard_cmd, 0, 0, 0, "sorted-set",
     "Intersect multiple sorted sets and return the cardinality of the result",
     "numkeys key ... [LIMIT limit]", "7.0.0",
     "O(N*K) worst case with N being the smallest input sorted set, K being the number of input "
     "sorted sets.",
     kNoSub, keys_after_numkeys<1>},
    {"zrangestore", -5, kRW, zrangestore_cmd, 1, 2, 1, "sorted-set",
     "Store a range of members from sorted set into another key",
     "dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]", "6.2.0",
     "O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
     "elements stored into the destination key."},
    {"zrandmember", -2, kReadOnly, zrandmember_cmd, 1, 1, 1, "sorted-set",
     "Get one or multiple random elements from a sorted set", "key [count [WITHSCORES]]", "6.2.0",
     "O(N) where N is the number of elements returned"},
    {"zmpop", -4, kWrite, zmpop_cmd, 0, 0, 0, "sorted-set",
     "Remove and return members with scores in a sorted set",
     "numkeys key ... MIN|MAX [COUNT count]", "7.0.0",
     "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in "
     "the sorted set, and M being the number of elements popped.",
     kNoSub, keys_after_numkeys<1>},
};

}  // namespace

std::span<const CommandSpec> zset_commands() {
  return kZSetCommands;
}

}  // namespace kvlab::server
