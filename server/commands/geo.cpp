// The geo family: GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH, GEOSEARCHSTORE, GEORADIUS,
// GEORADIUSBYMEMBER and the two _RO forms, on sorted sets as Redis 7.0 keeps them: a member's
// score is the 52-bit geohash of its position (server/data/geohash.hpp), so ZRANGE, ZREM and
// the rest of the sorted-set family work on geo keys, and GEOPOS decodes any score ZADD stored.
//
// Replies follow Redis 7.0 byte for byte, including what Redis leaves to its implementation:
// - coordinates in the "human" long double format (17 decimals, trailing zeros cut), a RESP3
//   double; distances with 4 decimals as a bulk string in both protocols; WITHHASH an integer;
// - the order of results: unsorted results come in scan order (cell by cell, by score within a
//   cell); sorted ones as glibc's stable qsort leaves ties, and a COUNT smaller than the number
//   of matches runs Redis's partial quicksort (pqsort, Bentley-McIlroy), whose order of equal
//   distances is that algorithm's: partial_sort() below does the same swaps.
// Argument checks in Redis's order: the source key's type first, then the options left to right
// (FROMMEMBER decodes its member when met), then the combinations, then a missing key.
//
// Keys: GEOSEARCHSTORE names its destination and source (1..2); GEORADIUS and GEORADIUSBYMEMBER
// name the key of STORE/STOREDIST through a KeysFn (geo_store_keys) so that the atomicity layer
// locks it. A STORE reads the source under its own lock into a private result, then publishes a
// fresh sorted set (or deletes the destination when nothing matched), as the sorted-set STORE
// forms do.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "server/commands/args.hpp"
#include "server/commands/containers.hpp"
#include "server/data/geohash.hpp"
#include "server/data/set_types.hpp"
#include "server/protocol/errors.hpp"

namespace kvlab::server {
namespace {

using geo::Shape;

// Redis compares option words with strcasecmp on the argument's C string: it ends at the first
// NUL byte ("km\0x" is "km").
bool token(std::string_view arg, std::string_view word) {
  return iequals(arg.substr(0, arg.find('\0')), word);
}

// The unit's size in metres, or -1 (after replying the error) when it is not one.
double parse_unit(CommandContext& ctx, std::string_view u) {
  if (token(u, "m")) return 1;
  if (token(u, "km")) return 1000;
  if (token(u, "ft")) return 0.3048;
  if (token(u, "mi")) return 1609.34;
  ctx.reply.error(err::kGeoUnit);
  return -1;
}

// A float argument as Redis's getDoubleFromObjectOrReply: `what` is the error text.
bool parse_float(CommandContext& ctx, std::string_view s, double* out,
                 std::string_view what = err::kNotFloat) {
  if (parse_score(s, out)) return true;
  ctx.reply.error(what);
  return false;
}

// argv[at], argv[at + 1] as a longitude, latitude pair within the limits.
bool parse_lonlat(CommandContext& ctx, std::size_t at, double* xy) {
  if (!parse_float(ctx, ctx.arg(at), &xy[0]) || !parse_float(ctx, ctx.arg(at + 1), &xy[1]))
    return false;
  if (xy[0] < geo::kLonMin || xy[0] > geo::kLonMax || xy[1] < geo::kLatMin ||
      xy[1] > geo::kLatMax) {
    ctx.reply.error(err::invalid_lonlat(xy[0], xy[1]));
    return false;
  }
  return true;
}

// argv[at] (radius) and argv[at + 1] (unit).
bool parse_radius(CommandContext& ctx, std::size_t at, Shape* s) {
  double r = 0;
  if (!parse_float(ctx, ctx.arg(at), &r, err::kGeoRadiusNotNumeric)) return false;
  if (r < 0) {
    ctx.reply.error(err::kGeoRadiusNegative);
    return false;
  }
  s->radius = r;
  const double conversion = parse_unit(ctx, ctx.arg(at + 1));
  if (conversion < 0) return false;
  s->conversion = conversion;
  return true;
}

// argv[at..at+2]: width height unit.
bool parse_box(CommandContext& ctx, std::size_t at, Shape* s) {
  double w = 0, h = 0;
  if (!parse_float(ctx, ctx.arg(at), &w, err::kGeoWidthNotNumeric) ||
      !parse_float(ctx, ctx.arg(at + 1), &h, err::kGeoHeightNotNumeric))
    return false;
  if (h < 0 || w < 0) {
    ctx.reply.error(err::kGeoBoxNegative);
    return false;
  }
  s->height = h;
  s->width = w;
  const double conversion = parse_unit(ctx, ctx.arg(at + 2));
  if (conversion < 0) return false;
  s->conversion = conversion;
  return true;
}

// A coordinate as Redis's addReplyHumanLongDouble: a bulk string in RESP2, a double in RESP3.
void reply_coordinate(ReplyWriter& r, double v) {
  const std::string s = format_long_double_human(v);
  if (r.resp3()) {
    r.raw("," + s + "\r\n");
  } else {
    r.bulk(s);
  }
}

// A distance as Redis's addReplyDoubleDistance: four decimals, a bulk string in both protocols.
void reply_distance(ReplyWriter& r, double d) {
  char buf[400];
  const int n = std::snprintf(buf, sizeof buf, "%.4f", d);
  r.bulk(std::string_view(buf, n > 0 ? static_cast<std::size_t>(n) : 0));
}

// fn(const ZSet*) with the key's sorted set locked, or fn(nullptr) when the key is absent.
// Returns false (WRONGTYPE replied, fn not called) when the key holds another type.
template <class F>
bool with_zset(CommandContext& ctx, std::string_view key, F&& fn) {
  ObjectRef ref;
  const Access a = lookup_container<ZSetObject>(ctx, key, &ref);
  if (a == Access::kWrongType) return false;
  if (a == Access::kMissing) {
    fn(nullptr);
    return true;
  }
  ZSetObject* c = as_container<ZSetObject>(ref);
  std::lock_guard<std::mutex> lock(c->mu);
  const bool gone = c->dead.load(std::memory_order_relaxed) || c->data.empty();
  fn(gone ? nullptr : &c->data);
  return true;
}

// GEOADD key [NX|XX] [CH] longitude latitude member [longitude latitude member ...]
// Redis rewrites it into a ZADD of the encoded scores: the reply, the flags and the error for
// zero triples ("geoadd k ch ch ch") are ZADD's.
void geoadd_cmd(CommandContext& ctx) {
  bool nx = false, xx = false, ch = false;
  std::size_t at = 2;
  for (; at < ctx.argc(); ++at) {
    const std::string_view o = ctx.arg(at);
    if (token(o, "nx")) {
      nx = true;
    } else if (token(o, "xx")) {
      xx = true;
    } else if (token(o, "ch")) {
      ch = true;
    } else {
      break;
    }
  }
  if ((ctx.argc() - at) % 3 != 0 || (xx && nx)) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  const std::size_t elements = (ctx.argc() - at) / 3;
  std::vector<double> scores(elements);
  std::size_t longest = 0;
  for (std::size_t i = 0; i < elements; ++i) {
    double xy[2];
    if (!parse_lonlat(ctx, at + 3 * i, xy)) return;
    scores[i] = static_cast<double>(geo::encode_score(xy[0], xy[1]));
    longest = std::max(longest, ctx.arg(at + 3 * i + 2).size());
  }
  if (elements == 0) {  // ZADD's check of its score/member pairs
    ctx.reply.error(err::kSyntax);
    return;
  }
  std::int64_t added = 0, updated = 0;
  const Access a = write_container<ZSetObject>(ctx, ctx.arg(1), !xx, [&](ZSet& z) {
    if (z.empty()) z.note_creation(elements, longest);  // a new set, as ZADD creates it
    for (std::size_t i = 0; i < elements; ++i) {
      const std::string_view member = ctx.arg(at + 3 * i + 2);
      if (const ZSkipList::Node* n = z.find(member); n != nullptr) {
        if (nx || n->score == scores[i]) continue;
        z.set(member, scores[i]);
        ++updated;
      } else if (!xx) {
        z.set(member, scores[i]);
        ++added;
      }
    }
    return added + updated > 0;
  });
  if (a == Access::kWrongType) return;
  // GEOADD runs as ZADD in Redis, and notifies as it.
  if (a == Access::kOk && added + updated > 0)
    notify_keyspace_event(ctx, kNotifyZset, "zadd", ctx.arg(1));
  ctx.reply.integer(ch ? added + updated : added);
}

// GEOPOS key [member ...]: [longitude, latitude] or a nil array per member.
void geopos_cmd(CommandContext& ctx) {
  const std::size_t n = ctx.argc() - 2;
  const Access a = read_container<ZSetObject>(ctx, ctx.arg(1), [&](const ZSet& z) {
    ctx.reply.array(n);
    for (std::size_t i = 2; i < ctx.argc(); ++i) {
      double xy[2];
      const ZSkipList::Node* node = z.find(ctx.arg(i));
      if (node == nullptr || !geo::decode_score(node->score, xy)) {
        ctx.reply.null_array();
        continue;
      }
      ctx.reply.array(2);
      reply_coordinate(ctx.reply, xy[0]);
      reply_coordinate(ctx.reply, xy[1]);
    }
  });
  if (a == Access::kMissing) {
    ctx.reply.array(n);
    for (std::size_t i = 0; i < n; ++i) ctx.reply.null_array();
  }
}

// GEODIST key member1 member2 [M|KM|FT|MI]: the unit is checked before the key.
void geodist_cmd(CommandContext& ctx) {
  double to_meter = 1;
  if (ctx.argc() == 5) {
    to_meter = parse_unit(ctx, ctx.arg(4));
    if (to_meter < 0) return;
  } else if (ctx.argc() > 5) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  const Access a = read_container<ZSetObject>(ctx, ctx.arg(1), [&](const ZSet& z) {
    const ZSkipList::Node* m1 = z.find(ctx.arg(2));
    const ZSkipList::Node* m2 = z.find(ctx.arg(3));
    double xyxy[4];
    if (m1 == nullptr || m2 == nullptr || !geo::decode_score(m1->score, xyxy) ||
        !geo::decode_score(m2->score, xyxy + 2)) {
      ctx.reply.null();
      return;
    }
    reply_distance(ctx.reply, geo::distance(xyxy[0], xyxy[1], xyxy[2], xyxy[3]) / to_meter);
  });
  if (a == Access::kMissing) ctx.reply.null();
}

// GEOHASH key [member ...]: the standard 11-character geohash (latitude over -90..90, so the
// position is decoded and encoded again), the last character always '0' (52 bits, not 55).
void geohash_cmd(CommandContext& ctx) {
  static constexpr char kAlphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";
  const std::size_t n = ctx.argc() - 2;
  const Access a = read_container<ZSetObject>(ctx, ctx.arg(1), [&](const ZSet& z) {
    ctx.reply.array(n);
    for (std::size_t i = 2; i < ctx.argc(); ++i) {
      double xy[2];
      const ZSkipList::Node* node = z.find(ctx.arg(i));
      if (node == nullptr || !geo::decode_score(node->score, xy)) {
        ctx.reply.null();
        continue;
      }
      geo::Cell c;
      geo::encode(geo::Range{-180, 180}, geo::Range{-90, 90}, xy[0], xy[1], geo::kStepMax, &c);
      char buf[11];
      for (int k = 0; k < 10; ++k) buf[k] = kAlphabet[(c.bits >> (52 - (k + 1) * 5)) & 0x1f];
      buf[10] = '0';
      ctx.reply.bulk(std::string_view(buf, 11));
    }
  });
  if (a == Access::kMissing) {
    ctx.reply.array(n);
    for (std::size_t i = 0; i < n; ++i) ctx.reply.null();
  }
}

struct GeoPoint {
  double lon, lat;
  double dist;  // metres from the centre (the unit after the sort)
  double score;
  std::string member;
};

// The points of z inside the shape, cell by cell in search_cells' order and by score within a
// cell. A cell equal to the last one scanned is skipped (neighbours coincide on coarse grids);
// as in Redis the centre's cell is never compared. With limit > 0 (ANY) the scan stops at limit
// points.
std::vector<GeoPoint> points_within(const ZSet& z, const Shape& shape, std::size_t limit) {
  std::vector<GeoPoint> out;
  const geo::SearchCells sc = geo::search_cells(shape);
  std::size_t last = 0;  // index of the last cell scanned; 0 (the centre) counts as none
  for (std::size_t i = 0; i < 9; ++i) {
    const geo::Cell& cell = sc.cells[i];
    if (cell.zero()) continue;
    if (last != 0 && cell == sc.cells[last]) continue;
    if (!out.empty() && limit != 0 && out.size() >= limit) break;
    ScoreRange range;
    geo::cell_scores(cell, &range.min, &range.max);
    range.maxex = true;  // [min, max)
    for (const ZSkipList::Node* n = z.list().first_in(range);
         n != nullptr && range.lte_max(n->score); n = n->next()) {
      double xy[2], dist = 0;
      if (geo::decode_score(n->score, xy) && geo::within(shape, xy[0], xy[1], &dist)) {
        out.push_back(GeoPoint{xy[0], xy[1], dist, n->score, n->member});
      }
      if (!out.empty() && limit != 0 && out.size() >= limit) break;
    }
    last = i;
  }
  return out;
}

// Redis's comparison of two points: -1, 0, 1 by distance (descending: negated).
int compare_dist(const GeoPoint& a, const GeoPoint& b, bool desc) {
  const int c = a.dist > b.dist ? 1 : (a.dist == b.dist ? 0 : -1);
  return desc ? -c : c;
}

// Sorts v[lo, hi] (inclusive) into place as Redis's pqsort does: the quicksort of Bentley and
// McIlroy ("Engineering a sort function", 1993: median of three or ninther pivot, split in
// three parts with equal keys swapped to the ends, insertion sort below 7 elements; Redis's copy
// has no switch to insertion sort after a pass without swaps), recursing only into parts that
// overlap [lo, hi]. The elements outside
// end up in some order; ties end up in this algorithm's order, which the replies show.
void partial_sort(std::vector<GeoPoint>& v, std::size_t lo, std::size_t hi, bool desc) {
  auto cmp = [&](std::size_t i, std::size_t j) { return compare_dist(v[i], v[j], desc); };
  auto med3 = [&](std::size_t a, std::size_t b, std::size_t c) {
    return cmp(a, b) < 0 ? (cmp(b, c) < 0 ? b : (cmp(a, c) < 0 ? c : a))
                         : (cmp(b, c) > 0 ? b : (cmp(a, c) < 0 ? a : c));
  };
  auto insertion = [&](std::size_t a, std::size_t n) {
    for (std::size_t m = a + 1; m < a + n; ++m)
      for (std::size_t l = m; l > a && cmp(l - 1, l) > 0; --l) std::swap(v[l], v[l - 1]);
  };
  auto block_swap = [&](std::size_t a, std::size_t b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) std::swap(v[a + i], v[b + i]);
  };
  // Whether [a, a + n) overlaps [lo, hi].
  auto wanted = [&](std::size_t a, std::size_t n) {
    return !((lo < a && hi < a) || (lo >= a + n && hi >= a + n));
  };
  auto sort = [&](auto& self, std::size_t a, std::size_t n) -> void {
    for (;;) {
      if (n < 7) {
        insertion(a, n);
        return;
      }
      std::size_t pm = a + n / 2;
      if (n > 7) {
        std::size_t pl = a, pn = a + n - 1;
        if (n > 40) {
          const std::size_t d = n / 8;
          pl = med3(pl, pl + d, pl + 2 * d);
          pm = med3(pm - d, pm, pm + d);
          pn = med3(pn - 2 * d, pn - d, pn);
        }
        pm = med3(pl, pm, pn);
      }
      std::swap(v[a], v[pm]);
      std::size_t pa = a + 1, pb = a + 1, pc = a + n - 1, pd = a + n - 1;
      for (;;) {
        int r;
        while (pb <= pc && (r = cmp(pb, a)) <= 0) {
          if (r == 0) {
            std::swap(v[pa], v[pb]);
            ++pa;
          }
          ++pb;
        }
        while (pb <= pc && (r = cmp(pc, a)) >= 0) {
          if (r == 0) {
            std::swap(v[pc], v[pd]);
            --pd;
          }
          --pc;
        }
        if (pb > pc) break;
        std::swap(v[pb], v[pc]);
        ++pb;
        --pc;
      }
      const std::size_t pn = a + n;
      std::size_t r = std::min(pa - a, pb - pa);
      block_swap(a, pb - r, r);
      r = std::min(pd - pc, pn - pd - 1);
      block_swap(pb, pn - r, r);
      if ((r = pb - pa) > 1 && wanted(a, r)) self(self, a, r);
      if ((r = pd - pc) > 1) {
        a = pn - r;
        n = r;
        if (wanted(a, n)) continue;
      }
      return;
    }
  };
  sort(sort, 0, v.size());
}

enum SearchFlags : unsigned {
  kByCoords = 1u << 0,     // GEORADIUS[_RO]: key lon lat radius unit ...
  kByMember = 1u << 1,     // GEORADIUSBYMEMBER[_RO]: key member radius unit ...
  kNoStore = 1u << 2,      // the _RO forms
  kSearch = 1u << 3,       // GEOSEARCH[STORE]: FROM... BY... options
  kSearchStore = 1u << 4,  // GEOSEARCHSTORE dst src ...
};

enum class Sort { kNone, kAsc, kDesc };

// What a STORE search leaves to do once the source's lock is released: publish `result` at
// `key`, or delete `key` when the result is empty.
struct PendingStore {
  bool active = false;
  std::string key;
  ObjectRef result;
  std::size_t size = 0;
};

// The body of every search command (Redis's georadiusGeneric) with the source's sorted set
// locked (z == nullptr: the key is absent). Replies, or fills *pending for a STORE.
void search_locked(CommandContext& ctx, const ZSet* z, unsigned flags, PendingStore* pending) {
  Shape shape;
  std::size_t base = 0;
  std::string_view storekey;
  bool store = false, storedist = false;
  if (flags & kByCoords) {
    base = 6;
    shape.kind = Shape::kCircle;
    if (!parse_lonlat(ctx, 2, shape.xy) || !parse_radius(ctx, 4, &shape)) return;
  } else if ((flags & kByMember) && z == nullptr) {
    base = 5;  // nothing to decode: the options still decide which empty reply to give
  } else if (flags & kByMember) {
    base = 5;
    const ZSkipList::Node* n = z->find(ctx.arg(2));
    if (n == nullptr || !geo::decode_score(n->score, shape.xy)) {
      ctx.reply.error(err::kGeoDecode);
      return;
    }
    if (!parse_radius(ctx, 3, &shape)) return;
  } else {
    base = 2;
    if (flags & kSearchStore) {
      base = 3;
      storekey = ctx.arg(1);
      store = true;
    }
  }

  bool withdist = false, withhash = false, withcoord = false, any = false;
  bool frommember = false, fromlonlat = false, byradius = false, bybox = false;
  Sort sort = Sort::kNone;
  std::int64_t count = 0;  // 0: all
  const bool search = flags & kSearch;
  // Redis compares these names with strcasecmp: an argument ends at its first NUL byte.
  ArgParser p(ctx.argv, base, ArgParser::Match::kCString);
  const bool may_store = !(flags & kNoStore) && !search;
  while (!p.done()) {
    if (p.check("withdist")) {
      withdist = true;
    } else if (p.check("withhash")) {
      withhash = true;
    } else if (p.check("withcoord")) {
      withcoord = true;
    } else if (p.check("any")) {
      any = true;
    } else if (p.check("asc")) {
      sort = Sort::kAsc;
    } else if (p.check("desc")) {
      sort = Sort::kDesc;
    } else if (p.check("count", 1)) {
      count = p.next_int(1, std::numeric_limits<std::int64_t>::max(), err::kGeoCountPositive);
    } else if (may_store && p.check("store", 1)) {
      storekey = p.next();
      store = true;
      storedist = false;
    } else if (may_store && p.check("storedist", 1)) {
      storekey = p.next();
      store = true;
      storedist = true;
    } else if ((flags & kSearchStore) && p.check("storedist")) {
      storedist = true;
    } else if (search && !fromlonlat && p.check("frommember", 1)) {
      const std::string_view member = p.next();
      if (z != nullptr) {
        const ZSkipList::Node* n = z->find(member);
        if (n == nullptr || !geo::decode_score(n->score, shape.xy)) p.fail(err::kGeoDecode);
      }
      frommember = true;
    } else if (search && !frommember && p.check("fromlonlat", 2)) {
      const std::size_t at = p.index();
      if (!parse_lonlat(ctx, at, shape.xy)) return;
      p.next();
      p.next();
      fromlonlat = true;
    } else if (search && !bybox && p.check("byradius", 2)) {
      if (!parse_radius(ctx, p.index(), &shape)) return;
      p.next();
      p.next();
      shape.kind = Shape::kCircle;
      byradius = true;
    } else if (search && !byradius && p.check("bybox", 3)) {
      if (!parse_box(ctx, p.index(), &shape)) return;
      p.next();
      p.next();
      p.next();
      shape.kind = Shape::kBox;
      bybox = true;
    } else {
      p.fail(err::kSyntax);
    }
  }
  if (p.reply_error(ctx.reply)) return;

  if (store && (withdist || withhash || withcoord)) {
    ctx.reply.error((flags & kSearchStore) ? err::kGeoSearchStoreWith : err::kGeoRadiusStoreWith);
    return;
  }
  if (search && !(frommember || fromlonlat)) {
    ctx.reply.error(err::geo_from_one(ctx.arg(0)));
    return;
  }
  if (search && !(byradius || bybox)) {
    ctx.reply.error(err::geo_by_one(ctx.arg(0)));
    return;
  }
  if (any && count == 0) {
    ctx.reply.error(err::kGeoAnyNeedsCount);
    return;
  }

  std::vector<GeoPoint> points;
  if (z != nullptr) {
    // COUNT needs an order to keep the nearest (not with ANY: the first found).
    if (count != 0 && sort == Sort::kNone && !any) sort = Sort::kAsc;
    points = points_within(*z, shape, any ? static_cast<std::size_t>(count) : 0);
  }
  if (points.empty() && !store) {
    ctx.reply.array(0);
    return;
  }
  const std::size_t found = points.size();
  const std::size_t returned = (count == 0 || found < static_cast<std::uint64_t>(count))
                                   ? found
                                   : static_cast<std::size_t>(count);
  if (sort != Sort::kNone) {
    const bool desc = sort == Sort::kDesc;
    if (returned == found) {
      // glibc's qsort is a merge sort: stable.
      std::stable_sort(points.begin(), points.end(), [desc](const GeoPoint& a, const GeoPoint& b) {
        return compare_dist(a, b, desc) < 0;
      });
    } else {
      partial_sort(points, 0, returned - 1, desc);
    }
  }
  for (std::size_t i = 0; i < returned; ++i) points[i].dist /= shape.conversion;

  if (!store) {
    const std::size_t options = (withdist ? 1 : 0) + (withhash ? 1 : 0) + (withcoord ? 1 : 0);
    ctx.reply.array(returned);
    for (std::size_t i = 0; i < returned; ++i) {
      const GeoPoint& p = points[i];
      if (options != 0) ctx.reply.array(options + 1);
      ctx.reply.bulk(p.member);
      if (withdist) reply_distance(ctx.reply, p.dist);
      if (withhash) ctx.reply.integer(static_cast<std::int64_t>(p.score));
      if (withcoord) {
        ctx.reply.array(2);
        reply_coordinate(ctx.reply, p.lon);
        reply_coordinate(ctx.reply, p.lat);
      }
    }
    return;
  }
  pending->active = true;
  pending->key.assign(storekey);
  pending->size = returned;
  if (returned == 0) return;
  std::size_t longest = 0;
  for (std::size_t i = 0; i < returned; ++i) longest = std::max(longest, points[i].member.size());
  pending->result = ObjectRef(ZSetObject::make());
  ZSet& out = as_container<ZSetObject>(pending->result)->data;
  out.note_creation(returned, longest);  // the encoding Redis would give it (see ZSet)
  for (std::size_t i = 0; i < returned; ++i)
    out.set(points[i].member, storedist ? points[i].dist : points[i].score);
}

void search_generic(CommandContext& ctx, std::size_t src, unsigned flags) {
  PendingStore pending;
  if (!with_zset(ctx, ctx.arg(src), [&](const ZSet* z) { search_locked(ctx, z, flags, &pending); }))
    return;
  if (!pending.active) return;
  // As Redis's STORE: the destination is replaced (its TTL too), or deleted when empty.
  if (pending.size == 0) {
    bool existed = false;
    ctx.ks.update(pending.key, [&](const Value* v) {
      existed = live(v, ctx.now_ms) != nullptr;
      return v != nullptr ? Update<Value>::erase() : Update<Value>::keep();
    });
    if (existed) notify_keyspace_event(ctx, kNotifyGeneric, "del", pending.key);
  } else {
    ctx.ks.insert_or_assign(pending.key, Value{std::move(pending.result), 0});
    notify_keyspace_event(ctx, kNotifyZset, (flags & kSearch) ? "geosearchstore" : "georadiusstore",
                          pending.key);
  }
  ctx.reply.integer(static_cast<std::int64_t>(pending.size));
}

void geosearch_cmd(CommandContext& ctx) {
  search_generic(ctx, 1, kSearch);
}
void geosearchstore_cmd(CommandContext& ctx) {
  search_generic(ctx, 2, kSearch | kSearchStore);
}
void georadius_cmd(CommandContext& ctx) {
  search_generic(ctx, 1, kByCoords);
}
void georadius_ro_cmd(CommandContext& ctx) {
  search_generic(ctx, 1, kByCoords | kNoStore);
}
void georadiusbymember_cmd(CommandContext& ctx) {
  search_generic(ctx, 1, kByMember);
}
void georadiusbymember_ro_cmd(CommandContext& ctx) {
  search_generic(ctx, 1, kByMember | kNoStore);
}

// GEORADIUS[BYMEMBER]'s destination keys: every argument that follows a STORE or STOREDIST word.
// A superset of what the handler writes (it takes the last one, and only where an option can
// stand), which is all the atomicity layer needs: a key locked and not written costs nothing.
bool geo_store_keys(std::span<const std::string_view> argv, std::vector<std::size_t>* out) {
  for (std::size_t j = 2; j + 1 < argv.size(); ++j) {
    if (token(argv[j], "store") || token(argv[j], "storedist")) out->push_back(j + 1);
  }
  return true;
}

constexpr std::uint32_t kRW = kWrite | kDenyOom;
constexpr std::span<const CommandSpec> kNoSub = {};

const CommandSpec kGeoCommands[] = {
    {"geoadd", -5, kRW, geoadd_cmd, 1, 1, 1, "geo",
     "Add one or more geospatial items in the geospatial index represented using a sorted set",
     "key [NX|XX] [CH] longitude latitude member [longitude latitude member ...]", "3.2.0",
     "O(log(N)) for each item added, where N is the number of elements in the sorted set."},
    {"geopos", -2, kReadOnly, geopos_cmd, 1, 1, 1, "geo",
     "Returns longitude and latitude of members of a geospatial index", "key [member ...]", "3.2.0",
     "O(N) where N is the number of members requested."},
    {"geodist", -4, kReadOnly, geodist_cmd, 1, 1, 1, "geo",
     "Returns the distance between two members of a geospatial index",
     "key member1 member2 [M|KM|FT|MI]", "3.2.0", "O(log(N))"},
    {"geohash", -2, kReadOnly, geohash_cmd, 1, 1, 1, "geo",
     "Returns members of a geospatial index as standard geohash strings", "key [member ...]",
     "3.2.0",
     "O(log(N)) for each member requested, where N is the number of elements in the "
     "sorted set."},
    {"geosearch", -7, kReadOnly, geosearch_cmd, 1, 1, 1, "geo",
     "Query a sorted set representing a geospatial index to fetch members inside an area of a box "
     "or a circle.",
     "key (FROMMEMBER member|FROMLONLAT longitude latitude) (BYRADIUS radius (M|KM|FT|MI)|BYBOX "
     "width height (M|KM|FT|MI)) [ASC|DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]",
     "6.2.0",
     "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around "
     "the shape provided as the filter and M is the number of items inside the shape"},
    {"geosearchstore", -8, kRW, geosearchstore_cmd, 1, 2, 1, "geo",
     "Query a sorted set representing a geospatial index to fetch members inside an area of a box "
     "or a circle, and store the result in another key.",
     "destination source (FROMMEMBER member|FROMLONLAT longitude latitude) (BYRADIUS radius "
     "(M|KM|FT|MI)|BYBOX width height (M|KM|FT|MI)) [ASC|DESC] [COUNT count [ANY]] [STOREDIST]",
     "6.2.0",
     "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around "
     "the shape provided as the filter and M is the number of items inside the shape"},
    {"georadius", -6, kRW, georadius_cmd, 1, 1, 1, "geo",
     "Query a sorted set representing a geospatial index to fetch members matching a given "
     "maximum distance from a point",
     "key longitude latitude radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH] "
     "[COUNT count [ANY]] [ASC|DESC] [STORE key] [STOREDIST key]",
     "3.2.0",
     "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area "
     "delimited by center and radius and M is the number of items inside the index.",
     kNoSub, geo_store_keys},
    {"georadius_ro", -6, kReadOnly, georadius_ro_cmd, 1, 1, 1, "geo",
     "A read-only variant for GEORADIUS",
     "key longitude latitude radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH] "
     "[COUNT count [ANY]] [ASC|DESC]",
     "3.2.10",
     "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area "
     "delimited by center and radius and M is the number of items inside the index."},
    {"georadiusbymember", -5, kRW, georadiusbymember_cmd, 1, 1, 1, "geo",
     "Query a sorted set representing a geospatial index to fetch members matching a given "
     "maximum distance from a member",
     "key member radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] "
     "[ASC|DESC] [STORE key] [STOREDIST key]",
     "3.2.0",
     "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area "
     "delimited by center and radius and M is the number of items inside the index.",
     kNoSub, geo_store_keys},
    {"georadiusbymember_ro", -5, kReadOnly, georadiusbymember_ro_cmd, 1, 1, 1, "geo",
     "A read-only variant for GEORADIUSBYMEMBER",
     "key member radius M|KM|FT|MI [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] "
     "[ASC|DESC]",
     "3.2.10",
     "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area "
     "delimited by center and radius and M is the number of items inside the index."},
};

}  // namespace

std::span<const CommandSpec> geo_commands() {
  return kGeoCommands;
}

}  // namespace kvlab::server
