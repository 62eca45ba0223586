// The access protocol for container values (lists, sets, hashes, sorted sets), shared by their
// command families. See server/container.hpp for why it is safe.
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
#include <string_view>
#include <type_traits>
#include <utility>

#include "server/commands/common.hpp"
#include "server/container.hpp"

namespace kvlab::server {

enum class Access { kMissing, kWrongType, kOk };

// Looks up key's container of type C and copies its handle into *out. Replies WRONGTYPE when the
// key holds another type.
template <class C>
Access lookup_container(CommandContext& ctx, std::string_view key, ObjectRef* out,
                        bool reply_wrongtype = true) {
  bool wrong = false;
  const bool found = read_live(ctx, key, [&](const Value& v) {
    if (live_container_is_dead(v)) return;
    if (v.obj->type() != C::kType) {
      wrong = true;
      return;
    }
    *out = v.obj;  // retain: the backend protects v while this visitor runs
  });
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
      const Access a = lookup_container<C>(ctx, key, &ref, reply_wrongtype);
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

}  // namespace kvlab::server
