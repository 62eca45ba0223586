// What the keyspace stores for each key: a Value, a 16-byte handle made of a reference-counted,
// immutable Object (type tag + bytes, one allocation) and the key's absolute expiry time.
//
// Why this shape:
// - Reclamation. A reader (GET on worker 1) may hold a value that a writer (DEL on worker 2)
//   removes. The backend protects the stored Value while a find() visitor or update() function
//   runs (locks, hazard pointers or epochs, depending on the backend); the reference count keeps
//   the Object alive for anyone who copied the handle out. The last reference frees it, on
//   whichever thread drops it. A string of up to 512 bytes with its header goes into that
//   thread's block cache (structures/common/pool.hpp), so the next string that thread builds
//   reuses the block without an allocator round trip.
// - Atomic read-modify-write. Objects never change after publication, so an update() function can
//   read one, build a successor and return it; if the backend retries the function, the discarded
//   successor is simply freed. Changing only the expiry (EXPIRE, PERSIST) shares the Object.
// - Container types. `ObjectType` tags the payload; lists, sets, hashes, sorted sets and streams
// are
//   Objects whose payload is a container carrying its own synchronization (server/container.hpp):
//   the handle is still immutable, the container behind it is mutated under its own lock.
//
// Thread safety: a string Object is immutable once published; a container Object is mutated only
// under its lock; ObjectRef copies are safe from any thread.
// Invariants: refs_ >= 1 while any ObjectRef points at the Object; size_ <= 512 MiB.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>

#include "structures/common/pool.hpp"

namespace kvlab::server {

enum class ObjectType : std::uint8_t { kString = 0, kList, kSet, kHash, kZSet, kStream };

class Object;
// Destroys a container Object (server/container.hpp); string Objects are freed inline.
void destroy_container(Object* o) noexcept;

class Object {
 public:
  // A new string object holding a copy of the parts, concatenated; refcount 1.
  static Object* make_string(std::string_view a, std::string_view b = {}) {
    auto* o = new (pool::allocate(sizeof(Object) + a.size() + b.size()))
        Object(ObjectType::kString, a.size() + b.size());
    if (!a.empty()) std::memcpy(o->bytes(), a.data(), a.size());
    if (!b.empty()) std::memcpy(o->bytes() + a.size(), b.data(), b.size());
    return o;
  }
  // A zero-filled string object of size n (SETRANGE fills it before publishing). Large ones come
  // from calloc's lazily zeroed pages (pool::allocate_zeroed), so a SETRANGE at a large offset
  // does not write, and commit, every byte up front.
  static Object* make_zeroed(std::size_t n) {
    return new (pool::allocate_zeroed(sizeof(Object) + n)) Object(ObjectType::kString, n);
  }

  ObjectType type() const { return type_; }
  std::string_view str() const { return {bytes(), size_}; }
  std::size_t size() const { return size_; }
  char* bytes() { return reinterpret_cast<char*>(this + 1); }
  const char* bytes() const { return reinterpret_cast<const char*>(this + 1); }

  // Relaxed increment: a new reference is made from an existing one, which already keeps the
  // object alive; nothing is published by the increment itself.
  void retain() { refs_.fetch_add(1, std::memory_order_relaxed); }
  // acq_rel decrement: release so this thread's reads of the bytes happen before the free; acquire
  // on the final decrement so the freeing thread sees every other thread's reads completed.
  void release() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      if (type_ != ObjectType::kString) {
        destroy_container(this);
        return;
      }
      const std::size_t bytes = sizeof(Object) + size_;
      this->~Object();
      pool::deallocate(this, bytes);
    }
  }

 protected:
  Object(ObjectType t, std::size_t n) : size_(static_cast<std::uint32_t>(n)), type_(t) {}
  std::atomic<std::uint32_t> refs_{1};
  std::uint32_t size_;
  ObjectType type_;
  // The bytes follow the header in the same allocation.
};
static_assert(sizeof(Object) == 12 || sizeof(Object) == 16, "Object header stays small");
static_assert(alignof(Object) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "pool blocks are new-aligned");

// An owning handle to an Object (like an intrusive shared_ptr).
class ObjectRef {
 public:
  ObjectRef() = default;
  explicit ObjectRef(Object* adopt) : p_(adopt) {}  // takes over one reference
  ObjectRef(const ObjectRef& o) : p_(o.p_) {
    if (p_ != nullptr) p_->retain();
  }
  ObjectRef(ObjectRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  ObjectRef& operator=(ObjectRef o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~ObjectRef() {
    if (p_ != nullptr) p_->release();
  }
  const Object* get() const { return p_; }
  // Containers are mutated through their handle (under their own lock): see container.hpp.
  Object* mutable_get() const { return p_; }
  const Object* operator->() const { return p_; }
  const Object& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  Object* p_ = nullptr;
};

// The keyspace's value type. expire_ms is absolute Unix time in milliseconds; 0 = no expiry.
struct Value {
  ObjectRef obj;
  std::int64_t expire_ms = 0;

  bool expired_at(std::int64_t now_ms) const { return expire_ms != 0 && expire_ms <= now_ms; }
};

}  // namespace kvlab::server
