// Container values (lists, sets, hashes, sorted sets): an Object whose payload is a mutable
// container guarded by its own lock.
//
// Layout:
//   struct ContainerObject<T> : Object {   // Object header: refs, size (0), type tag
//     void (*destroy)(Object*);            // the concrete type's deleter (Object has no vtable)
//     std::mutex mu;                       // guards `data`
//     std::atomic<bool> dead;              // set under mu when the container is unlinked empty
//     T data;
//   };
//
// Protocol (server/commands/containers.hpp implements it for the commands):
// - The keyspace maps a key to a Value whose ObjectRef points at the container. A command looks the
//   key up, copies the ObjectRef (the reference count keeps the container alive after the backend's
//   protection ends), locks `mu`, and works on `data`. One lock per key: every command is atomic on
//   its key, and a reader never sees a half-done change.
// - Empty containers disappear as in Redis. The command that leaves `data` empty sets `dead` while
//   it still holds `mu`, then erases the key only if it still maps to this very container. A
//   command that locks a container and finds it dead retries its lookup; a creating command that
//   finds a dead container in the keyspace replaces it. So an LPUSH racing with the LPOP that
//   emptied the list is never lost into an unlinked container.
// - DEL, SET and expiry unlink containers without taking `mu`. A command already holding the old
//   handle then finishes on the unlinked container; it is linearized before the unlink, which is
//   consistent with everything any client can observe.
//
// Thread safety: `data` only under `mu`; `dead` is written under `mu` and read either under `mu`
// (relaxed would do) or without it inside a keyspace update (acquire, pairs with the release store).
#pragma once

#include <atomic>
#include <mutex>
#include <new>
#include <utility>

#include "server/data/object.hpp"

namespace kvlab::server {

class ContainerBase : public Object {
 public:
  std::mutex mu;
  // Release store under mu by the thread that empties the container; acquire loads by lookups
  // that decide, without mu, whether to replace the container with a fresh one.
  std::atomic<bool> dead{false};

  bool is_dead() const { return dead.load(std::memory_order_acquire); }
  void mark_dead() { dead.store(true, std::memory_order_release); }

 protected:
  using Deleter = void (*)(ContainerBase*) noexcept;
  ContainerBase(ObjectType t, Deleter d) : Object(t, 0), destroy_(d) {}
  ~ContainerBase() = default;

 private:
  friend void destroy_container(Object* o) noexcept;
  Deleter destroy_;
};

template <class T, ObjectType kTypeTag>
class Container final : public ContainerBase {
 public:
  static constexpr ObjectType kType = kTypeTag;
  using Data = T;

  // A new empty container with reference count 1.
  static Container* make() { return new Container(); }

  // A new container (reference count 1) whose data is a deep copy of this one's, made by
  // copy(const T& from, T& to) under mu; nullptr when this one is dead or still empty (absent to
  // every other command, see the protocol above). Each payload type names its copy next to its
  // definition (clone_list, clone_hash in value_types.hpp; clone_set, clone_zset in set_types.hpp)
  // so that COPY never shares mutable state between two keys.
  template <class CopyFn>
  Container* clone(CopyFn&& copy) {
    std::lock_guard<std::mutex> lock(mu);
    if (dead.load(std::memory_order_relaxed) || data.empty()) return nullptr;
    Container* c = new Container();
    try {
      copy(std::as_const(data), c->data);
    } catch (...) {
      delete c;
      throw;
    }
    return c;
  }

  T data;  // guarded by mu

 private:
  Container() : ContainerBase(kTypeTag, &destroy) {}
  static void destroy(ContainerBase* c) noexcept { delete static_cast<Container*>(c); }
};

inline bool is_container(const Object& o) { return o.type() != ObjectType::kString; }

// True for a container that was emptied and is being unlinked: every command treats it as absent.
inline bool live_container_is_dead(const Value& v) {
  return is_container(*v.obj) && static_cast<const ContainerBase*>(v.obj.get())->is_dead();
}

// The container behind a handle, or nullptr when it holds another type.
template <class C>
C* as_container(const ObjectRef& ref) {
  if (!ref || ref->type() != C::kType) return nullptr;
  return static_cast<C*>(ref.mutable_get());
}

}  // namespace kvlab::server
