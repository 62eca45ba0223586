// The sorted-set algebra: ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD, over sorted
// sets and sets (a set's members score 1), with WEIGHTS and AGGREGATE as Redis 7.0 parses them.
// Each input is read under its own lock into a private snapshot; a STORE result is a fresh
// container built before publication (store_zset), and the atomicity layer locks every key the
// row names.

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

// ------------------------------------------------------- ZUNION, ZINTER, ZDIFF and their forms

// One input of ZUNION/ZINTER/ZDIFF/ZINTERCARD: a snapshot of a sorted set, or of a set whose
// members all score 1 (Redis's rule), taken under the input's own lock; a missing key is empty.
struct Source {
  std::vector<std::pair<std::string, double>> items;
  std::unordered_map<std::string_view, double> index;  // filled by build_index() for lookups
  double weight = 1;

  void build_index() {
    index.reserve(items.size());
    for (const auto& [m, sc] : items) index.emplace(m, sc);
  }
  const double* find(std::string_view m) const {
    auto it = index.find(m);
    return it == index.end() ? nullptr : &it->second;
  }
};

// Snapshots key (a sorted set or a set) into *s. Returns false after replying WRONGTYPE.
bool read_source(CommandContext& ctx, std::string_view key, Source* s) {
  ObjectRef ref;
  Access a = lookup_container<ZSetObject>(ctx, key, &ref, false);
  if (a == Access::kOk) {
    ZSetObject* c = as_container<ZSetObject>(ref);
    std::lock_guard<std::mutex> lock(c->mu);
    if (c->dead.load(std::memory_order_relaxed)) return true;
    s->items.reserve(c->data.size());
    for (const Node* n = c->data.list().first(); n != nullptr; n = n->next())
      s->items.emplace_back(n->member, n->score);
    return true;
  }
  if (a == Access::kMissing) return true;
  a = lookup_container<SetObject>(ctx, key, &ref, false);
  if (a == Access::kWrongType) {
    ctx.reply.error(err::kWrongType);
    return false;
  }
  if (a == Access::kOk) {
    SetObject* c = as_container<SetObject>(ref);
    std::lock_guard<std::mutex> lock(c->mu);
    if (c->dead.load(std::memory_order_relaxed)) return true;
    s->items.reserve(c->data.size());
    for (std::size_t i = 0; i < c->data.size(); ++i) s->items.emplace_back(c->data.at(i), 1.0);
  }
  return true;
}

enum class ZSetOp { kUnion, kInter, kDiff };

enum class Aggregate { kSum, kMin, kMax };

// Redis's zunionInterAggregate: a sum that comes out NaN (inf + -inf) is 0; MIN and MAX keep the
// target when the value is NaN (a NaN compares false).
void aggregate(double* target, double v, Aggregate ag) {
  switch (ag) {
    case Aggregate::kSum:
      *target += v;
      if (std::isnan(*target)) *target = 0;
      break;
    case Aggregate::kMin:
      if (v < *target) *target = v;
      break;
    case Aggregate::kMax:
      if (v > *target) *target = v;
      break;
  }
}

// The body of ZUNION, ZINTER, ZDIFF (reply), their STORE forms (store: the destination at argv[1])
// and ZINTERCARD (cardinality_only), following Redis's zunionInterDiffGenericCommand: numkeys at
// argv[numkeys_at], the keys after it, then WEIGHTS/AGGREGATE (not for ZDIFF or ZINTERCARD),
// WITHSCORES (replying forms) or LIMIT (ZINTERCARD). Every input's type is checked before the
// options are parsed, as in Redis (a WRONGTYPE input wins over a syntax error).
//
// The arithmetic is Redis's, in Redis's order, because a floating-point sum depends on it:
// ZUNION and ZINTER visit the inputs from the smallest to the largest (a stable sort, as glibc's
// qsort is a merge sort at these sizes); a weighted score that is NaN (inf * 0) is 0 where Redis
// makes it 0 (the first input of ZINTER, every input of ZUNION) and left to aggregate() for the
// other inputs of ZINTER. ZDIFF keeps the first input's scores and ignores weights.
void zsetop_generic(CommandContext& ctx, ZSetOp op, std::size_t numkeys_at, bool store,
                    bool cardinality_only) {
  std::int64_t numkeys = 0;
  if (!arg_i64(ctx, ctx.arg(numkeys_at), &numkeys)) return;
  if (numkeys < 1) {
    ctx.reply.error(err::at_least_one_key(lower_name(ctx.arg(0))));
    return;
  }
  if (numkeys > static_cast<std::int64_t>(ctx.argc() - numkeys_at - 1)) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  const auto n = static_cast<std::size_t>(numkeys);
  std::vector<Source> src(n);
  for (std::size_t i = 0; i < n; ++i)
    if (!read_source(ctx, ctx.arg(numkeys_at + 1 + i), &src[i])) return;

  Aggregate ag = Aggregate::kSum;
  bool withscores = false;
  std::int64_t limit = 0;
  const bool weighted = op != ZSetOp::kDiff && !cardinality_only;
  for (std::size_t j = numkeys_at + 1 + n; j < ctx.argc();) {
    const std::size_t remaining = ctx.argc() - j;
    const std::string_view o = ctx.arg(j);
    if (weighted && remaining >= n + 1 && iequals(o, "weights")) {
      ++j;
      for (std::size_t i = 0; i < n; ++i, ++j) {
        if (!parse_score(ctx.arg(j), &src[i].weight)) {
          ctx.reply.error(err::kWeightNotFloat);
          return;
        }
      }
    } else if (weighted && remaining >= 2 && iequals(o, "aggregate")) {
      const std::string_view v = ctx.arg(j + 1);
      if (iequals(v, "sum")) {
        ag = Aggregate::kSum;
      } else if (iequals(v, "min")) {
        ag = Aggregate::kMin;
      } else if (iequals(v, "max")) {
        ag = Aggregate::kMax;
      } else {
        ctx.reply.error(err::kSyntax);
        return;
      }
      j += 2;
    } else if (!store && !cardinality_only && iequals(o, "withscores")) {
      withscores = true;
      ++j;
    } else if (cardinality_only && remaining >= 2 && iequals(o, "limit")) {
      if (!parse_i64(ctx.arg(j + 1), &limit) || limit < 0) {
        ctx.reply.error(err::kLimitNegative);
        return;
      }
      j += 2;
    } else {
      ctx.reply.error(err::kSyntax);
      return;
    }
  }

  std::vector<std::pair<std::string_view, double>> out;
  std::int64_t cardinality = 0;
  if (op != ZSetOp::kDiff) {
    std::stable_sort(src.begin(), src.end(), [](const Source& a, const Source& b) {
      return a.items.size() < b.items.size();
    });
  }
  if (op == ZSetOp::kInter) {
    if (!src[0].items.empty()) {
      for (std::size_t j = 1; j < n; ++j) src[j].build_index();
      for (const auto& [m, s0] : src[0].items) {
        double score = src[0].weight * s0;
        if (std::isnan(score)) score = 0;
        std::size_t j = 1;
        for (; j < n; ++j) {
          const double* v = src[j].find(m);
          if (v == nullptr) break;
          aggregate(&score, *v * src[j].weight, ag);
        }
        if (j < n) continue;
        if (cardinality_only) {
          if (++cardinality == limit) break;
        } else {
          out.emplace_back(m, score);
        }
      }
    }
  } else if (op == ZSetOp::kUnion) {
    std::unordered_map<std::string_view, double> acc;
    std::vector<std::string_view> order;  // first appearance
    for (const Source& s : src) {
      for (const auto& [m, sc] : s.items) {
        double score = s.weight * sc;
        if (std::isnan(score)) score = 0;
        auto [it, added] = acc.try_emplace(m, score);
        if (added) {
          order.push_back(m);
        } else {
          aggregate(&it->second, score, ag);
        }
      }
    }
    out.reserve(order.size());
    for (std::string_view m : order) out.emplace_back(m, acc[m]);
  } else {
    for (std::size_t j = 1; j < n; ++j) src[j].build_index();
    for (const auto& [m, sc] : src[0].items) {
      bool elsewhere = false;
      for (std::size_t j = 1; j < n && !elsewhere; ++j) elsewhere = src[j].find(m) != nullptr;
      if (!elsewhere) out.emplace_back(m, sc);
    }
  }

  if (cardinality_only) {
    ctx.reply.integer(cardinality);
    return;
  }
  if (store) {
    ObjectRef result(ZSetObject::make());
    ZSet& z = as_container<ZSetObject>(result)->data;
    // Redis stores a small result (within zset-max-listpack-entries/-value, 128 members of at
    // most 64 bytes by default) as a listpack, which reads -0 back as 0; a larger one keeps -0
    // in its skiplist.
    std::size_t longest = 0;
    for (const auto& [m, sc] : out) longest = std::max(longest, m.size());
    z.note_creation(out.size(), longest);
    for (const auto& [m, sc] : out) z.set(m, sc);
    store_zset(ctx, ctx.arg(1), std::move(result),
               op == ZSetOp::kUnion   ? "zunionstore"
               : op == ZSetOp::kInter ? "zinterstore"
                                      : "zdiffstore");
    return;
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second < b.second || (a.second == b.second && a.first < b.first);
  });
  const bool pairs = withscores && ctx.reply.resp3();  // RESP3: [member, score] pairs
  ctx.reply.array(out.size() * (withscores && !pairs ? 2 : 1));
  for (const auto& [m, sc] : out) {
    if (pairs) ctx.reply.array(2);
    ctx.reply.bulk(m);
    if (withscores) reply_score(ctx.reply, sc);
  }
}

}  // namespace

void zunion_cmd(CommandContext& ctx) {
  zsetop_generic(ctx, ZSetOp::kUnion, 1, false, false);
}

void zinter_cmd(CommandContext& ctx) {
  zsetop_generic(ctx, ZSetOp::kInter, 1, false, false);
}

void zdiff_cmd(CommandContext& ctx) {
  zsetop_generic(ctx, ZSetOp::kDiff, 1, false, false);
}

void zunionstore_cmd(CommandContext& ctx) {
  zsetop_generic(ctx, ZSetOp::kUnion, 2, true, false);
}

void zinterstore_cmd(CommandContext& ctx) {
  zsetop_generic(ctx, ZSetOp::kInter, 2, true, false);
}

void zdiffstore_cmd(CommandContext& ctx) {
  zsetop_generic(ctx, ZSetOp::kDiff, 2, true, false);
}

void zintercard_cmd(CommandContext& ctx) {
  zsetop_generic(ctx, ZSetOp::kInter, 1, false, true);
}

}  // namespace kvlab::server
