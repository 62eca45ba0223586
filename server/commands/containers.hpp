// The access protocol for container values (lists, sets, hashes, sorted sets), shared by their
// command families. See server/data/container.hpp for why it is safe.
//
//   read_container<C>(ctx, key, fn)            fn(const Data&) under the container's lock
//   write_container<C>(ctx, key, create, fn)   fn(Data&) under the lock; creates the key first when
//                                              `create`; removes the key when fn leaves it empty;
//                                              fn returns false when it changed nothing (WATCH)
//
// Both reply WRONGTYPE themselves and return Access::kWrongType; on kMissing the caller replies
// what the command answers for an absent key (0, nil, empty array). Expired values count as absent.
// With reply_wrongtype = false they stay silent instead (a multi-key command that must undo a
// step, like LMOVE restoring a popped element, needs a second access that writes no reply).
#pragma once

#include <mutex>
#include <random>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "server/commands/common.hpp"
#include "server/data/container.hpp"

namespace kvlab::server {

enum class Access { kMissing, kWrongType, kOk };

// Whether the last write_container() of the calling thread emptied its container and so removed
// the key (keyspace notifications: Redis sends "del" after the command's own event).
inline thread_local bool t_container_emptied = false;

// The keyspace notification of a write_container() that changed key: the command's event, then
// "del" when that write removed the key.
inline void notify_container_write(CommandContext& ctx, std::uint32_t cls, std::string_view event,
                                   std::string_view key) {
  notify_keyspace_event(ctx, cls, event, key);
  if (t_container_emptied) notify_keyspace_event(ctx, kNotifyGeneric, "del", key);
}

// Looks up key's container of type C and copies its handle into *out. Replies WRONGTYPE when the
// key holds another type.
// read_lookup: a read command's lookup (a miss is a "keymiss" event); false for a write's.
template <class C>
Access lookup_container(CommandContext& ctx, std::string_view key, ObjectRef* out,
                        bool reply_wrongtype = true, bool read_lookup = true) {
  bool wrong = false;
  const bool found = read_live(
      ctx, key,
      [&](const Value& v) {
        if (live_container_is_dead(v)) return;
        if (v.obj->type() != C::kType) {
          wrong = true;
          return;
        }
        *out = v.obj;  // retain: the backend protects v while this visitor runs
      },
      /*touch=*/true, read_lookup);
  if (wrong) {
    if (reply_wrongtype) ctx.reply.error(err::kWrongType);
    return Access::kWrongType;
  }
  return (found && *out) ? Access::kOk : Access::kMissing;
}

template <class C, class F>
Access read_container(CommandContext& ctx, std::string_view key, F&& fn) {
  ObjectRef ref;
  const Access a = lookup_container<C>(ctx, key, &ref);
  if (a != Access::kOk) return a;
  C* c = as_container<C>(ref);
  std::lock_guard<std::mutex> lock(c->mu);
  if (c->dead.load(std::memory_order_relaxed) || c->data.empty()) return Access::kMissing;
  fn(std::as_const(c->data));
  return Access::kOk;
}

// Removes key if it still maps to container c (which its caller has marked dead).
inline void unlink_if_current(Db& ks, std::string_view key, const Object* c) {
  ks.update(key, [&](const Value* v) {
    return (v != nullptr && v->obj.get() == c) ? Update<Value>::erase() : Update<Value>::keep();
  });
}

// fn(Data&) runs under the container's lock, at most once per call. With create, an absent,
// expired or dead value is replaced by a fresh empty container first (with no expiry).
template <class C, class F>
Access write_container(CommandContext& ctx, std::string_view key, bool create, F&& fn,
                       bool reply_wrongtype = true) {
  t_container_emptied = false;
  for (;;) {
    ObjectRef ref;
    if (create) {
      bool wrong = false;
      ctx.ks.update(key, [&](const Value* v) -> Update<Value> {
        wrong = false;
        const Value* lv = live(v, ctx.now_ms);
        if (lv != nullptr && !live_container_is_dead(*lv)) {
          if (lv->obj->type() != C::kType) {
            wrong = true;
            return Update<Value>::keep();
          }
          ref = lv->obj;
          return Update<Value>::keep();
        }
        ObjectRef fresh(C::make());
        ref = fresh;
        return Update<Value>::assign(Value{std::move(fresh), 0});
      });
      if (wrong) {
        if (reply_wrongtype) ctx.reply.error(err::kWrongType);
        return Access::kWrongType;
      }
    } else {
      const Access a = lookup_container<C>(ctx, key, &ref, reply_wrongtype, false);
      if (a != Access::kOk) return a;
    }
    C* c = as_container<C>(ref);
    std::unique_lock<std::mutex> lock(c->mu);
    if (c->dead.load(std::memory_order_relaxed)) {
      // Emptied and being unlinked by another command between our lookup and our lock.
      if (!create) return Access::kMissing;
      continue;
    }
    // Empty but live: a creating command published this container and has not run its fn yet.
    // To everyone else the key does not exist until it has (fn must never see an empty container
    // it did not create: LPOP would pop from an empty deque).
    if (!create && c->data.empty()) return Access::kMissing;
    auto retire_if_empty = [&] {
      if (!c->data.empty()) return;
      t_container_emptied = true;
      c->mark_dead();
      lock.unlock();
      unlink_if_current(ctx.ks, key, c);
    };
    // fn may say whether it changed anything (bool); one that returns nothing always changes.
    bool changed = true;
    try {
      if constexpr (std::is_same_v<std::invoke_result_t<F&, typename C::Data&>, bool>) {
        changed = fn(c->data);
      } else {
        fn(c->data);
      }
    } catch (...) {
      retire_if_empty();  // a throwing fn (bad_alloc) must not leave an empty container linked
      throw;
    }
    // The key changed in place: touch it for WATCH, as Redis signals a modified key only when a
    // command changed it (SADD of members already there does not). An emptied container's unlink
    // touches it as well.
    if (changed) ctx.ks.touch(key);
    retire_if_empty();
    return Access::kOk;
  }
}

// ---- Random members (SPOP, SRANDMEMBER, ZRANDMEMBER)

// A uniform index in [0, n); n > 0. One generator per thread.
inline std::size_t random_below(std::size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
}

// A negative SRANDMEMBER/ZRANDMEMBER/HRANDFIELD count is a reply length; kvlab refuses lengths
// beyond this (Redis 7.0 streams any length up to LONG_MAX into an unlimited output buffer).
inline constexpr std::int64_t kMaxRandomReply = 10'000'000;

// True once a reply under construction has passed the connection's hard output limit. Loops
// whose reply length the client chose (random picks with repeats, SORT ... GET) stop there: the
// worker then drops the partial reply and closes the connection (worker.cpp), so a reply of
// |count| copies of a large element never holds more than about kOutputHardLimit bytes.
inline bool reply_full(const CommandContext& ctx) {
  return ctx.reply.buffer().size() > kOutputHardLimit;
}

// want distinct positions of [0, size), in random order; want < size. Rejection sampling when
// few are wanted, else a partial Fisher-Yates shuffle: O(want) expected either way.
inline std::vector<std::size_t> distinct_positions(std::size_t size, std::size_t want) {
  std::vector<std::size_t> picks;
  picks.reserve(want);
  if (want * 4 <= size) {
    std::unordered_set<std::size_t> seen;
    while (picks.size() < want) {
      const std::size_t i = random_below(size);
      if (seen.insert(i).second) picks.push_back(i);
    }
  } else {
    std::vector<std::size_t> all(size);
    for (std::size_t i = 0; i < size; ++i) all[i] = i;
    for (std::size_t k = 0; k < want; ++k) {
      std::swap(all[k], all[k + random_below(size - k)]);
      picks.push_back(all[k]);
    }
  }
  return picks;
}

}  // namespace kvlab::server
