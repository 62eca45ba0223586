// What the keyspace stores for each key: a Value, a 16-byte handle made of a reference-counted
// Object (type tag + bytes, one allocation) and the key's absolute expiry time.
//
// Why this shape:
// - Reclamation. A reader (GET on worker 1) may hold a value that a writer (DEL on worker 2)
//   removes. The backend protects the stored Value while a find() visitor or update() function
//   runs (locks, hazard pointers or epochs, depending on the backend); the reference count keeps
//   the Object alive for anyone who copied the handle out. The last reference frees it, on
//   whichever thread drops it. A string of up to 512 bytes with its header goes into that
//   thread's block cache (structures/common/pool.hpp), so the next string that thread builds
//   reuses the block without an allocator round trip.
// - Atomic read-modify-write. The bytes a reader can see never change, so an update() function
//   can read an Object, build a successor and return it; if the backend retries the function, the
//   discarded successor is simply freed. Changing only the expiry (EXPIRE, PERSIST) shares the
//   Object.
// - Appends in place. APPEND builds its successor with spare capacity (doubling up to 1 MiB, then
//   1 MiB more each time, as Redis's sds does) and later appends write into that capacity and then
//   publish the longer length: a key appended to n times copies O(total bytes), not O(n^2). The
//   bytes below the published length never change, so a reader needs no lock: it loads the length
//   once (acquire) and reads that many bytes, a consistent prefix of the value.
// - Long strings grow where they are. From kMapMin bytes on, APPEND's successor is the start of
//   a mapping of its own (pool::map_block) that reserves kMapAhead times its length of address
//   space, and at least kMapFirst; pages are committed a chunk ahead of the bytes (invariant 5).
//   Copying into a fresh block at every doubling touched about four bytes of new memory per
//   byte appended, and a new page's first touch is what a growing value costs most
//   (experiments/commands/README.md, "APPEND by value size"); in place, a page is committed
//   once, and a copy happens only when the reservation is full (every kMapAhead-fold growth).
//   Readers are unaffected: the Object never moves.
// - Container types. `ObjectType` tags the payload; lists, sets, hashes, sorted sets and streams
//   are Objects whose payload is a container carrying its own synchronization
//   (server/data/container.hpp): the handle is still immutable, the container behind it is mutated under
//   its own lock.
//
// Thread safety: ObjectRef copies are safe from any thread; a container Object is mutated only
// under its lock; a string Object's bytes change only through append_in_place(), see its
// REQUIRES.
// Invariants:
// 1. refs_ >= 1 while any ObjectRef points at the Object; size_ <= capacity() <= 512 MiB.
// 2. Bytes [0, size_) never change once size_ covers them (published with release). Bytes at
//    [size_, capacity()) are written only by append_in_place(), by the one writer the REQUIRES
//    admits, before the release store of size_ that covers them.
// 3. capacity() is fixed at construction; a string is growable (capacity() may exceed size_) only
//    when built by make_growable(); every other Object has capacity() == size_ at all times.
// 4. A mapped string (mapped()) was written only below its length: bytes [size_, capacity())
//    are still zero (mmap's pages, or pages populated but never written), since size_ only grows
//    (no operation shortens a string in place).
// 5. A mapped string's first committed(size_, mapping length) bytes are populated (committed by
//    pool::populate) and counted in pool::large_bytes(); the rest of its reservation is not.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <string_view>
#include <utility>

#include "structures/common/pool.hpp"

namespace kvlab::server {

enum class ObjectType : std::uint8_t { kString = 0, kList, kSet, kHash, kZSet, kStream };

// The access word every new Object starts with (server/features/eviction.hpp keeps it current: the LRU
// clock, the LFU counter at its initial value with the current decay time, or 0 for the SIEVE and
// S3-FIFO frequency bits). relaxed: a hint for eviction, published with nothing.
inline std::atomic<std::uint32_t> g_initial_access{0};

class Object;
// Destroys a container Object (server/data/container.hpp); string Objects are freed inline.
void destroy_container(Object* o) noexcept;

class Object {
 public:
  // A new string object holding a copy of the parts, concatenated; refcount 1.
  static Object* make_string(std::string_view a, std::string_view b = {}) {
    auto* o = new (pool::allocate(sizeof(Object) + a.size() + b.size()))
        Object(ObjectType::kString, a.size() + b.size());
    o->fill(a, b);
    return o;
  }
  // A zero-filled string object of size n (SETRANGE fills it before publishing). Large ones come
  // from calloc's lazily zeroed pages (pool::allocate_zeroed), so a SETRANGE at a large offset
  // does not write, and commit, every byte up front.
  static Object* make_zeroed(std::size_t n) {
    return new (pool::allocate_zeroed(sizeof(Object) + n)) Object(ObjectType::kString, n);
  }
  // make_zeroed for a length a client chose (SETRANGE's offset, SETBIT's and BITFIELD's bits, up
  // to proto-max-bulk-len): nullptr when it cannot be allocated, never an exception, since these
  // run inside the keyspace's update(), which an exception would leave with the key locked.
  static Object* try_make_zeroed(std::size_t n) noexcept {
    if (n > std::numeric_limits<std::size_t>::max() - sizeof(Object)) return nullptr;
    try {
      return make_zeroed(n);
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  // A string holding a + b with spare capacity for appends. From kMapMin bytes on it is mapped
  // (make_mapped()); otherwise, and when no mapping is to be had, it is a pool block with twice
  // the length up to 1 MiB, then 1 MiB more (Redis's sdsMakeRoomFor), rounded up to fill the
  // block or to the capacity encoding's step, never above max_cap (the caller's string limit)
  // unless a + b is longer.
  static Object* make_growable(std::string_view a, std::string_view b, std::size_t max_cap) {
    const std::size_t n = a.size() + b.size();
    if (n >= kMapMin) {
      if (Object* o = make_mapped(a, b, max_cap)) return o;
    }
    std::size_t want = n < kGrowLinear ? 2 * n : n + kGrowLinear;
    if (want > max_cap) want = max_cap > n ? max_cap : n;
    if (want < kMinGrowable) want = kMinGrowable;
    const CapCode code = encode_capacity(sizeof(Object) + want);
    const std::size_t total = decode_capacity(code);
    auto* o = new (pool::allocate(total)) Object(ObjectType::kString, n);
    o->cap_shift_ = code.shift;
    o->cap_mult_ = code.mult;
    o->fill(a, b);
    return o;
  }

  ObjectType type() const { return type_; }
  // One acquire load of the length, then the bytes below it: a consistent value even while an
  // append extends it (invariant 2).
  std::string_view str() const { return {bytes(), size()}; }
  // acquire: pairs with the release store in append_in_place(), so the bytes below the length
  // read here are the appended ones.
  std::size_t size() const { return size_.load(std::memory_order_acquire); }
  // Bytes the payload may hold (invariant 3).
  std::size_t capacity() const {
    return cap_mult_ == 0 ? size() : decode_capacity(cap_code()) - sizeof(Object);
  }
  // Whether the Object starts a mapping of its own (make_mapped()).
  bool mapped() const { return (cap_shift_ & kMappedBit) != 0; }
  // The memory the string holds, as used_memory counts it: its allocation or, when mapped, the
  // pages committed ahead of its bytes (invariant 5; the rest of the reservation is untouched).
  std::size_t footprint() const {
    return mapped() ? committed(size(), decode_capacity(cap_code())) : sizeof(Object) + capacity();
  }
  // Whether this thread may append add in place now. REQUIRES (for a true answer to be acted on):
  // the caller holds the backend's write lock of the one key whose stored Value references this
  // Object, and the backend runs the update function exactly once (traits().update_runs_once).
  // refs_ == 1 then means no other key or pending Value shares the Object, so no other writer
  // can reach it: a new reference is only ever copied from an existing one, and copies into
  // another key (COPY, MOVE) run as escalated commands, never beside this one (atomicity.hpp).
  // Readers that copied the handle out do count, and make the append copy instead (rare).
  bool appendable(std::size_t add) const {
    // acquire: a reader that dropped its reference (release decrement) finished reading first.
    return cap_mult_ != 0 && refs_.load(std::memory_order_acquire) == 1 &&
           size_.load(std::memory_order_relaxed) + add <= capacity();
  }
  // Writes `zeros` zero bytes and then add after the current bytes and publishes the new length.
  // REQUIRES: appendable(zeros + add.size()) under the same lock. Returns the new length.
  std::size_t append_in_place(std::string_view add, std::size_t zeros = 0) {
    // relaxed: only writers change size_ and they are serialized by the key's lock, whose
    // acquire orders this load after the previous writer's store.
    const std::uint32_t n = size_.load(std::memory_order_relaxed);
    const bool map = mapped();
    const auto m = static_cast<std::uint32_t>(n + zeros + add.size());
    if (map) {
      // Commit the pages ahead before writing (invariant 5); populated pages are still zero.
      const std::size_t total = decode_capacity(cap_code());
      const std::size_t from = committed(n, total), to = committed(m, total);
      if (to != from) {
        pool::populate(reinterpret_cast<char*>(this) + from, to - from);
        pool::count_mapped(to - from);
      }
    }
    if (zeros != 0 && !map) std::memset(bytes() + n, 0, zeros);  // mapped: zero (invariant 4)
    if (!add.empty()) std::memcpy(bytes() + n + zeros, add.data(), add.size());
    // release: the bytes written above happen before any reader's acquire load of m (invariant 2).
    size_.store(m, std::memory_order_release);
    return m;
  }
  char* bytes() { return reinterpret_cast<char*>(this + 1); }
  const char* bytes() const { return reinterpret_cast<const char*>(this + 1); }

  // The eviction policy's per-Object access word (server/features/eviction.hpp says what it holds).
  // relaxed: an approximate recency/frequency hint; a lost or stale update only changes which key
  // a sampled eviction prefers, and no other data is published through it.
  std::uint32_t access() const { return access_.load(std::memory_order_relaxed); }
  void set_access(std::uint32_t v) const { access_.store(v, std::memory_order_relaxed); }

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
      const std::size_t bytes = sizeof(Object) + capacity();
      if (mapped()) {
        const std::size_t used = committed(size(), bytes);
        this->~Object();
        pool::unmap_block(this, bytes, used);
        return;
      }
      this->~Object();
      pool::deallocate(this, bytes);
    }
  }

 protected:
  Object(ObjectType t, std::size_t n)
      : size_(static_cast<std::uint32_t>(n)),
        type_(t),
        access_(g_initial_access.load(std::memory_order_relaxed)) {}  // relaxed: see access()

 private:
  static constexpr std::size_t kGrowLinear = 1024 * 1024;
  static constexpr std::size_t kMinGrowable = 16;
  // Growable strings of at least kMapMin bytes are mapped, with room for kMapAhead times their
  // length and at least kMapFirst bytes (both capped by the caller's string limit). 32 KiB:
  // eight pages, where a block's first touch outweighs the mmap/munmap pair; 16-fold: a copy
  // per four doublings, at a cost of address space only (at most pool::kMaxMappedBytes in all).
  static constexpr std::size_t kMapMin = 32 * 1024;
  static constexpr std::size_t kMapAhead = 16;
  static constexpr std::size_t kMapFirst = std::size_t{8} << 20;
  static constexpr std::size_t kPage = 4096;
  // A mapped string's pages are committed ahead of its bytes in chunks of this size (invariant
  // 5): one populate call per chunk instead of one page fault per page. Where faults are dear
  // (a VM: experiments/commands/README.md, "APPEND by value size") a fault costs far more than
  // its share of a bulk populate; the chunk bounds the memory committed ahead to two chunks.
  static constexpr std::size_t kCommitChunk = 32 * 1024;
  // cap_shift_'s top bit marks a mapped Object; the shift itself stays below 64.
  static constexpr std::uint8_t kMappedBit = 0x80;
  // The allocation's size (header included) as mult << shift, mult < 2^16, rounded up: 24 bits in
  // the header's padding. mult == 0 marks an exact-size Object (capacity() == size()).
  struct CapCode {
    std::uint8_t shift;
    std::uint16_t mult;
  };
  static CapCode encode_capacity(std::size_t total) {
    total = (total + pool::kGranule - 1) / pool::kGranule * pool::kGranule;  // a whole pool block
    std::uint8_t shift = 0;
    while ((total >> shift) >= (std::size_t{1} << 16)) ++shift;
    std::size_t mult = (total + (std::size_t{1} << shift) - 1) >> shift;
    if (mult >= (std::size_t{1} << 16)) {  // rounding up overflowed the 16 bits
      ++shift;
      mult = (total + (std::size_t{1} << shift) - 1) >> shift;
    }
    return {shift, static_cast<std::uint16_t>(mult)};
  }
  static std::size_t decode_capacity(CapCode c) { return std::size_t{c.mult} << c.shift; }
  CapCode cap_code() const {
    return {static_cast<std::uint8_t>(cap_shift_ & ~kMappedBit), cap_mult_};
  }
  // The prefix of a mapping of `total` bytes that holds a string of length n committed (invariant
  // 5): up to the end of the kCommitChunk after the one its last byte is in.
  static std::size_t committed(std::size_t n, std::size_t total) {
    const std::size_t end = ((sizeof(Object) + n) / kCommitChunk + 2) * kCommitChunk;
    return end < total ? end : total;
  }
  // make_growable()'s mapped form: a reservation of kMapAhead times the length (at most max_cap,
  // and never less than the length), or nullptr when the mapping budget is spent or mmap fails.
  static Object* make_mapped(std::string_view a, std::string_view b, std::size_t max_cap) {
    const std::size_t n = a.size() + b.size();
    std::size_t want = n <= max_cap / kMapAhead ? n * kMapAhead : max_cap;
    if (want < kMapFirst) want = kMapFirst < max_cap ? kMapFirst : max_cap;
    if (want < n) want = n;
    // Whole pages, so that the reservation's last page is all payload; the capacity code must
    // name the mapping's length exactly (munmap gets it back from there).
    std::size_t total = (sizeof(Object) + want + kPage - 1) / kPage * kPage;
    // The code names a page multiple: total is one, so it is exact for shifts up to 12, and a
    // larger shift rounds up to a multiple of 2^shift.
    const CapCode code = encode_capacity(total);
    total = decode_capacity(code);
    const std::size_t used = committed(n, total);
    void* p = pool::map_block(total, used);
    if (p == nullptr) return nullptr;
    pool::populate(p, used);  // before the copy: invariant 5
    auto* o = new (p) Object(ObjectType::kString, n);
    o->cap_shift_ = static_cast<std::uint8_t>(code.shift | kMappedBit);
    o->cap_mult_ = code.mult;
    o->fill(a, b);
    return o;
  }
  // Writes a then b as the payload of a string under construction (not yet published).
  void fill(std::string_view a, std::string_view b) {
    if (!a.empty()) std::memcpy(bytes(), a.data(), a.size());
    if (!b.empty()) std::memcpy(bytes() + a.size(), b.data(), b.size());
  }

  std::atomic<std::uint32_t> refs_{1};
  std::atomic<std::uint32_t> size_;  // invariant 2
  ObjectType type_;
  std::uint8_t cap_shift_ = 0;  // invariant 3: set before publication, then read-only
  std::uint16_t cap_mult_ = 0;
  mutable std::atomic<std::uint32_t> access_;  // eviction metadata (access())
  // The bytes follow the header in the same allocation.
};
static_assert(sizeof(Object) == 16,
              "Object header stays small: capacity in the padding, 4 bytes of access metadata");
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "size_ is a plain word");
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
