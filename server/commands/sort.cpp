// SORT and SORT_RO: sort the elements of a list, set or sorted set, numerically or by bytes
// (ALPHA), optionally by the values of other keys (BY pattern), returning the elements or the
// values of other keys (GET pattern), a window of the result (LIMIT offset count), or storing the
// result as a list (STORE destination, SORT only).
//
// Semantics follow Redis 7.0's sort.c, written anew here:
// - Options are parsed first (syntax errors before WRONGTYPE); an absent key sorts as an empty
//   list, so SORT ... STORE on it deletes the destination and answers 0.
// - A BY pattern without '*' means "do not sort": lists and sorted sets keep their order (DESC
//   reverses it), sets their iteration order; with STORE a set is sorted ALPHA instead, so that
//   what is stored does not depend on hash order.
// - Numeric sorting reads each element (or BY value) with strtod over the whole value; a value
//   that is not a number fails the command with "One or more scores can't be converted into
//   double" (a missing BY key counts as 0). Equal scores are ordered by the elements' bytes, so the
//   result is deterministic. ALPHA compares C strings (Redis's strcoll() in the C locale: up to
//   the first NUL byte), whole bytes with STORE; with BY, a missing BY key sorts first, and
//   elements with equal BY values keep their load order (Redis's qsort leaves that order
//   unspecified).
// - A pattern "#" is the element itself; otherwise the first '*' is replaced by the element, and
//   "key->field" reads a hash field. A pattern without '*' never matches (GET answers nil).
//
// Locking: the sorted key's container lock is held only to copy its elements out. BY and GET read
// other keys, whose names depend on the elements, so no KeysFn can list them before the command
// runs: sort_keys() names key 1 and the STORE destination only, and the pattern keys are read one
// by one, each atomically, not atomically with the sort as a whole (in Redis they are read in the
// same single-threaded step).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "server/commands/args.hpp"
#include "server/commands/common.hpp"
#include "server/commands/containers.hpp"
#include "server/data/set_types.hpp"
#include "server/data/value_types.hpp"
#include "server/data/container.hpp"
#include "server/features/scripting.hpp"

namespace kvlab::server {
namespace {

struct SortOptions {
  bool desc = false;
  bool alpha = false;
  bool dontsort = false;
  std::int64_t limit_start = 0;
  std::int64_t limit_count = -1;
  std::optional<std::string_view> by;
  std::vector<std::string_view> gets;
  std::optional<std::string_view> store;
};

// Parses argv[2...]; replies the error and returns false on a bad option.
bool parse_sort_options(CommandContext& ctx, bool readonly, SortOptions* o) {
  ArgParser p(ctx.argv, 2);
  while (!p.done()) {
    if (p.check("asc")) {
      o->desc = false;
    } else if (p.check("desc")) {
      o->desc = true;
    } else if (p.check("alpha")) {
      o->alpha = true;
    } else if (p.check("limit", 2)) {
      o->limit_start = p.next_int();
      o->limit_count = p.next_int();
    } else if (!readonly && p.check("store", 1)) {
      o->store = p.next();
    } else if (p.check("by", 1)) {
      o->by = p.next();
      o->dontsort = o->by->find('*') == std::string_view::npos;
    } else if (p.check("get", 1)) {
      o->gets.push_back(p.next());
    } else {
      p.fail(err::kSyntax);
    }
  }
  return !p.reply_error(ctx.reply);
}

// What pattern names for element `subst`: the element itself for "#", else the string at the
// substituted key, or the hash field after "->"; nullopt when there is no such string.
std::optional<std::string> lookup_by_pattern(CommandContext& ctx, std::string_view pattern,
                                             std::string_view subst) {
  // Redis reads the pattern as a C string when looking for "#", '*' and "->".
  const std::string_view c = pattern.substr(0, pattern.find('\0'));
  if (!c.empty() && c[0] == '#' && c.size() == 1) return std::string(subst);
  const std::size_t star = c.find('*');
  if (star == std::string_view::npos) return std::nullopt;
  const std::size_t arrow = c.find("->", star + 1);
  std::string_view field;
  bool has_field = false;
  if (arrow != std::string_view::npos && arrow + 2 < c.size()) {
    field = pattern.substr(arrow + 2);
    has_field = true;
  }
  const std::string_view postfix =
      has_field ? pattern.substr(star + 1, arrow - star - 1) : pattern.substr(star + 1);
  std::string key;
  key.reserve(pattern.size() + subst.size());
  key.append(pattern.substr(0, star)).append(subst).append(postfix);

  std::optional<std::string> out;
  ObjectRef hash;
  read_live(ctx, key, [&](const Value& v) {
    if (live_container_is_dead(v)) return;
    if (!has_field && v.obj->type() == ObjectType::kString) out.emplace(v.obj->str());
    if (has_field && v.obj->type() == ObjectType::kHash) hash = v.obj;
  });
  if (hash) {
    HashObject* h = as_container<HashObject>(hash);
    std::lock_guard<std::mutex> lock(h->mu);
    if (!h->dead.load(std::memory_order_relaxed)) {
      if (const std::string* val = h->data.get(field)) out.emplace(*val);
    }
  }
  return out;
}

// Reads a sort weight as Redis does: strtod over the C string, which must be consumed whole, with
// no overflow or underflow (ERANGE) and no NaN. "" reads as 0.
bool parse_weight(const std::string& s, double* out) {
  errno = 0;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return *end == '\0' && errno != ERANGE && !std::isnan(*out);
}

// <0, 0, >0 by bytes, then length (Redis's binary compareStringObjects).
int compare_bytes(std::string_view a, std::string_view b) {
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// ALPHA without STORE: Redis compares with strcoll() (the C locale: strcmp), which stops at the
// first NUL byte, so "a" and "a\0b" tie and keep their load order (the stable sort below, as
// glibc's qsort and Redis's pqsort on few elements). With STORE Redis compares the whole bytes.
int compare_cstr(std::string_view a, std::string_view b) {
  return compare_bytes(a.substr(0, a.find('\0')), b.substr(0, b.find('\0')));
}

struct SortItem {
  std::string elem;
  double score = 0;
  std::optional<std::string> cmp;  // ALPHA with BY: the BY value, nullopt when missing
};

enum class Source { kAbsent, kList, kSet, kZSet };

// Copies key's elements out (list order, set iteration order, sorted-set rank order). Replies
// WRONGTYPE for a string or a hash and returns false.
bool load_elements(CommandContext& ctx, std::string_view key, Source* src,
                   std::vector<std::string>* out) {
  ObjectRef ref;
  bool wrong = false;
  read_live(ctx, key, [&](const Value& v) {
    if (live_container_is_dead(v)) return;
    const ObjectType t = v.obj->type();
    wrong = t != ObjectType::kList && t != ObjectType::kSet && t != ObjectType::kZSet;
    if (!wrong) ref = v.obj;
  });
  if (wrong) {
    ctx.reply.error(err::kWrongType);
    return false;
  }
  *src = Source::kAbsent;
  if (!ref) return true;
  auto copy_out = [&](auto* c, Source s, auto&& each) {
    std::lock_guard<std::mutex> lock(c->mu);
    if (c->dead.load(std::memory_order_relaxed)) return;
    *src = s;
    each(c->data);
  };
  switch (ref->type()) {
    case ObjectType::kList:
      copy_out(as_container<ListObject>(ref), Source::kList,
               [&](const std::deque<std::string>& d) { out->assign(d.begin(), d.end()); });
      break;
    case ObjectType::kSet:
      copy_out(as_container<SetObject>(ref), Source::kSet, [&](const MemberSet& m) {
        out->reserve(m.size());
        for (std::size_t i = 0; i < m.size(); ++i) out->push_back(m.at(i).str());
      });
      break;
    case ObjectType::kZSet:
      copy_out(as_container<ZSetObject>(ref), Source::kZSet, [&](const ZSet& z) {
        out->reserve(z.size());
        for (const auto* n = z.list().first(); n != nullptr; n = n->next())
          out->push_back(n->member);
      });
      break;
    default:
      break;
  }
  return true;
}

void sort_generic(CommandContext& ctx, bool readonly) {
  SortOptions o;
  if (!parse_sort_options(ctx, readonly, &o)) return;
  Source src = Source::kAbsent;
  std::vector<std::string> elems;
  if (!load_elements(ctx, ctx.arg(1), &src, &elems)) return;

  // A set's iteration order is not meaningful: what is stored, or returned to a script, is
  // sorted (the same for every replica and every run, as in Redis).
  if (o.dontsort && src == Source::kSet && (o.store || scripting::called_from_script())) {
    o.dontsort = false;
    o.alpha = true;
    o.by.reset();
  }

  // LIMIT as Redis clamps it: [start, end] within [0, n - 1], possibly empty.
  const auto n = static_cast<std::int64_t>(elems.size());
  std::int64_t start = o.limit_start < 0 ? 0 : o.limit_start;
  std::int64_t end = n - 1;
  if (o.limit_count >= 0)  // saturated: LIMIT 1 9223372036854775807 must not wrap
    end = o.limit_count > n - start ? n : start + o.limit_count - 1;
  if (start >= n) {
    start = n - 1;
    end = n - 2;
  }
  if (end >= n) end = n - 1;

  std::vector<SortItem> items;
  bool conversion_error = false;
  if (o.dontsort && (src == Source::kList || src == Source::kZSet)) {
    // Native order, reversed by DESC, then the window.
    if (o.desc) std::reverse(elems.begin(), elems.end());
    for (std::int64_t j = start; j <= end; ++j)
      items.push_back({std::move(elems[static_cast<std::size_t>(j)]), 0, std::nullopt});
    end -= start;
    start = 0;
  } else {
    items.reserve(elems.size());
    for (auto& e : elems) items.push_back({std::move(e), 0, std::nullopt});
    if (!o.dontsort) {
      for (SortItem& it : items) {
        std::optional<std::string> byval;
        if (o.by) {
          byval = lookup_by_pattern(ctx, *o.by, it.elem);
          if (!byval) continue;  // numeric: weight 0; ALPHA: sorts first
        }
        if (o.alpha) {
          if (o.by) it.cmp = std::move(byval);
        } else if (!parse_weight(o.by ? *byval : it.elem, &it.score)) {
          conversion_error = true;
        }
      }
      const bool alpha = o.alpha, by = o.by.has_value(), desc = o.desc;
      const auto alpha_cmp = o.store ? compare_bytes : compare_cstr;
      auto cmp = [&](const SortItem& a, const SortItem& b) {
        int c = 0;
        if (!alpha) {
          c = a.score > b.score ? 1 : a.score < b.score ? -1 : compare_bytes(a.elem, b.elem);
        } else if (by) {
          if (!a.cmp || !b.cmp) {
            c = (a.cmp.has_value() == b.cmp.has_value()) ? 0 : (!a.cmp ? -1 : 1);
          } else {
            c = alpha_cmp(*a.cmp, *b.cmp);
          }
        } else {
          c = alpha_cmp(a.elem, b.elem);
        }
        return (desc ? -c : c) < 0;
      };
      if (!conversion_error) std::stable_sort(items.begin(), items.end(), cmp);
    }
  }

  const std::size_t window = end >= start ? static_cast<std::size_t>(end - start + 1) : 0;
  const std::size_t outputlen = o.gets.empty() ? window : o.gets.size() * window;
  if (conversion_error) {
    ctx.reply.error(err::kSortNotDouble);
    return;
  }
  if (!o.store) {
    ctx.reply.array(outputlen);
    // GET patterns multiply the reply (window x GETs, each a value of up to 512 MB): stop at
    // the hard output limit, as reply_full() explains.
    for (std::int64_t j = start; j <= end && !reply_full(ctx); ++j) {
      const std::string& e = items[static_cast<std::size_t>(j)].elem;
      if (o.gets.empty()) ctx.reply.bulk(e);
      for (std::string_view pattern : o.gets) {
        const std::optional<std::string> val = lookup_by_pattern(ctx, pattern, e);
        if (val) {
          ctx.reply.bulk(*val);
        } else {
          ctx.reply.null();
        }
      }
    }
    return;
  }
  std::deque<std::string> result;
  for (std::int64_t j = start; j <= end; ++j) {
    std::string& e = items[static_cast<std::size_t>(j)].elem;
    if (o.gets.empty()) result.push_back(e);
    for (std::string_view pattern : o.gets)
      result.push_back(lookup_by_pattern(ctx, pattern, e).value_or(std::string()));
  }
  if (result.empty()) {
    bool existed = false;
    ctx.ks.update(*o.store, [&](const Value* cur) {
      existed = live(cur, ctx.now_ms) != nullptr;
      return cur != nullptr ? Update<Value>::erase() : Update<Value>::keep();
    });
    if (existed) notify_keyspace_event(ctx, kNotifyGeneric, "del", *o.store);
  } else {
    ObjectRef list(ListObject::make());
    as_container<ListObject>(list)->data = std::move(result);  // not yet published
    ctx.ks.insert_or_assign(*o.store, Value{std::move(list), 0});
    notify_keyspace_event(ctx, kNotifyList, "sortstore", *o.store);
  }
  ctx.reply.integer(static_cast<std::int64_t>(outputlen));
}

void sort_cmd(CommandContext& ctx) {
  sort_generic(ctx, false);
}
void sort_ro_cmd(CommandContext& ctx) {
  sort_generic(ctx, true);
}

// SORT's keys beyond key 1: the STORE destination (the last one, as the handler uses). Options are
// skipped with their arguments (LIMIT 2, BY 1, GET 1) so that "GET store" is not taken for STORE.
// The keys that BY and GET patterns read depend on the elements and are not listed (see the top).
bool sort_keys(std::span<const std::string_view> argv, std::vector<std::size_t>* out) {
  std::size_t store = 0;
  ArgParser p(argv, 2);
  while (!p.done()) {
    if (p.check("limit", 2)) {
      p.next();
      p.next();
    } else if (p.check("by", 1) || p.check("get", 1)) {
      p.next();
    } else if (p.check("store", 1)) {
      store = p.index();
      p.next();
    } else {
      p.next();  // the handler refuses it; no key here
    }
  }
  if (store != 0) out->push_back(store);
  return true;
}

const CommandSpec kSortCommands[] = {
    {"sort",
     -2,
     kWrite | kDenyOom,
     sort_cmd,
     1,
     1,
     1,
     "generic",
     "Sort the elements in a list, set or sorted set, optionally storing the result",
     "key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA] "
     "[STORE destination]",
     "1.0.0",
     "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number "
     "of returned elements. When the elements are not sorted, complexity is O(N).",
     {},
     sort_keys},
    {"sort_ro", -2, kReadOnly, sort_ro_cmd, 1, 1, 1, "generic",
     "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
     "key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]", "7.0.0",
     "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number "
     "of returned elements. When the elements are not sorted, complexity is O(N)."},
};

}  // namespace

std::span<const CommandSpec> sort_commands() {
  return kSortCommands;
}

}  // namespace kvlab::server
