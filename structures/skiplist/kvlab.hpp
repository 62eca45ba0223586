// skiplist/kvlab — kvlab's own skip list: the lock-free skip list of Fraser [fraser2004practical]
// and Herlihy, Lev, Luchangco & Shavit (2007; TAoMP ch. 14 [herlihy2012art]), with keys inline in
// the node, values in immutable boxes swapped by CAS, and epoch reclamation.
//
// Layout (one allocation per key; the head is a node of full height whose key is never read):
//
//   struct Node {                             // 24-byte header (+ slot), the tower, the key
//     atomic<Box*>     box;                   // current value; nullptr = tombstone (erased)
//     atomic<uint8_t>  state;                 // retire handshake: kLinkDone | kRemoved
//     uint8_t          height;                // 1..kMaxHeight, fixed at birth
//     uint32_t         key_size;
//     uint64_t         prefix;                // the key's first 8 bytes, big-endian, 0-padded
//     Box              slot;                  // only for small trivially destructible V: the
//                                             // node's first box, in the header's line
//     atomic<uintptr_t> next[height];         // successor per level; bit 0 = this node is
//                                             // marked (logically gone) at that level
//     char             key[key_size];         // binary-safe, ordered as bytes (memcmp order)
//   };
//   struct Box { V value; };                  // never modified after publication
//
// Key compares go through `prefix` first: two keys whose 0-padded first 8 bytes differ compare
// as those two integers do (memcmp order, shorter first), so a search decides most steps from
// the node's header line, with no memcmp call and no load of the key bytes behind the tower; only
// equal prefixes fall back to comparing the bytes. With 8-byte keys every compare but the last
// (equal) one is a single integer compare.
//
// Heights are geometric with p = 1/2, capped at 32, drawn from a thread-local xorshift64*: half
// the nodes carry one link (2 links per node on average), a node costs 24 + 8h + |key| bytes.
// Pugh counts the same number of compares for p = 1/2 and 1/4 (about 2 log2 n), but with 1/2 a
// search steps sideways about once per level instead of three times, so more of the nodes it
// examines are towers it already stands on, which measured faster (papers/own-structures.md).
//
// Operations. Level 0 is the set; the upper levels are shortcuts.
//  - A key is present iff level 0 holds a node with that key whose box is non-null. Level 0 holds
//    at most one node per key at any time (an insert links at level 0 only after a search found
//    no node of that key there, and the CAS on the predecessor fails if one appeared).
//  - find / range / for_each: read-only searches (HLS `contains`): they step over marked nodes,
//    never write shared memory except the caller's epoch announcement, and load the box
//    (acquire). A null box reads as absent.
//  - insert / insert_or_assign / update: `locate` (HLS `find`) computes preds/succs per level and
//    snips every marked node it passes. A live node: CAS its box (assign) or return (insert). A
//    tombstoned node: mark it at every level (helping the eraser), locate again (which snips it),
//    retry. No node: link a new one at level 0 by CAS on preds[0] (the linearization point of
//    the insert), then bottom-up at the upper levels.
//  - erase (and update returning erase): CAS the box from the value seen to nullptr. That CAS is
//    the linearization point; its winner is the node's unique *eraser*. It retires the box, marks
//    the tower top-down (fetch_or), and joins the retire handshake below.
//  - update(key, fn) is a CAS loop on the box pointer: fn sees the current box's value, its
//    result is installed by one CAS, and a failed CAS reruns fn on the new value (the contract
//    allows several calls). Boxes are never modified, so no update is lost or torn.
//
// Thread safety: every operation may run concurrently with every other, including erase and
// range/for_each (weakly consistent: sorted and duplicate-free because every path along level 0
// visits strictly increasing keys; a key present for the whole scan is visited).
// Progress: lock-free. A failed CAS means another operation changed that word and made progress;
// helping (marking a tombstoned node) means no operation waits for a stalled eraser or inserter.
// Reads are lock-free (they may pass over marked nodes, finitely many). Reclamation is epoch-based
// and never blocks an operation.
//
// Reclamation: boxes are retired by the thread whose CAS replaced them (assign or tombstone). A
// node may be retired only when no level links to it any more and none ever will again. The
// difficulty is the inserter: it links the upper levels after level 0, so an eraser can mark and
// unlink a node while its inserter is about to link it at level 5. Our rule is a two-party
// handshake on `state`:
//   - the inserter sets kLinkDone (fetch_or, acq_rel) when it will link no further level, either
//     because every level is linked or because it found its own link at that level marked
//     (nodes of height 1 are born with kLinkDone);
//   - the eraser sets kRemoved (fetch_or, acq_rel) after marking every level.
// Whoever sets the second bit is the only retirer. Its fetch_or reads the other's release, so
// every link the inserter made and every mark happen before it; it then runs `locate` once more,
// with `past_equal` (see below), which snips the node at every level where it is still linked,
// and retires it. After that nothing links it again: only the inserter links a node (done), a
// snip links a node only in place of its marked predecessor (so never one already unlinked), and
// a node unlinked at a level is never relinked there (HLS lemma). Threads that still hold the node
// entered their epoch before the retire, which is exactly what epoch.hpp protects.
//   `past_equal`: on an upper level a dead node X can sit *behind* a live node of the same key:
// the new node's search passed that level before X was marked, took X as its successor there,
// and linked in front of it. An ordinary search stops at the live node and would leave X linked,
// so the retirer's search steps past equal keys and stops at the first unmarked node with a
// greater key. (X is never *in front of* the live node: the inserter links X at a level only by
// a CAS on X's own link that expects it unmarked, and a live node of X's key exists only after X
// was marked everywhere.)
//   Strict predecessors: HLS `find` walks on from a predecessor that became marked after it was
// passed; under a garbage collector that only delays the unlinking. Here it is a use-after-free:
// the marked node's frozen link can skip a node linked since, and the retirer would miss it. So
// `locate` restarts whenever the link it enters a level through is marked; every link it follows
// is then read from a node that was linked at that moment, and the walk meets every node of the
// level between its start and its stop.
//
// Invariants:
//  1. Along any next pointer at level 0 keys strictly increase; at upper levels they do not
//     decrease (equal keys only as a live node in front of dead ones, see above).
//  2. A node's box goes from non-null to non-null (assign) or to null (erase), never from null.
//  3. A node is marked at a level only after its box is null; marks are set top-down and never
//     cleared; a marked link never changes again (every CAS on a link expects it unmarked).
//  4. Level 0 holds at most one node per key; its box is the key's value (null: absent).
//  5. A node is retired exactly once, by the thread whose fetch_or on `state` completed
//     kLinkDone | kRemoved, after a `locate(past_equal)` that follows both.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "structures/keyspace.hpp"
#include "structures/reclaim/epoch.hpp"

namespace kvlab::skiplist {

template <class V>
class Kvlab {
 public:
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "skiplist/kvlab",
      .family = "skiplist",
      .progress = Progress::lock_free,
      .reclamation = Reclamation::epoch,
      .reference = "Fraser 2004; Herlihy, Lev, Luchangco & Shavit 2007 (lock-free skiplist)",
      .summary = "own: lock-free skip list, inline keys, CAS-swapped value boxes, O(log n) range",
      .ordered = true,
      .atomic_update_native = true,
  };

  Kvlab() : Kvlab(MapOptions{}) {}
  explicit Kvlab(const MapOptions&) : head_(make_node({}, kMaxHeight)) {}

  // REQUIRES: no concurrent users. Every node still linked at level 0 is live (invariant 5: a
  // removed node was unlinked from every level before its operation returned), so it is freed
  // here directly; retired ones belong to the reclaimer, whose deleters do not touch the map.
  ~Kvlab() {
    Node* n = ptr(head_->next(0).load(std::memory_order_relaxed));
    while (n) {
      Node* next = ptr(n->next(0).load(std::memory_order_relaxed));
      free_box(n, n->box.load(std::memory_order_relaxed));
      destroy_node(n);
      n = next;
    }
    destroy_node(head_);
  }

  Kvlab(const Kvlab&) = delete;
  Kvlab& operator=(const Kvlab&) = delete;

  template <class F>
  bool find(std::string_view key, F&& visitor) {
    reclaim::Guard g;
    Node* n = lower_bound(key);
    if (!n || n->key() != key) return false;
    // acquire: pairs with the release that installed the box (link CAS or box CAS), so the value
    // is fully constructed.
    Box* b = n->box.load(std::memory_order_acquire);
    if (!b) return false;  // tombstone: erased, the node is on its way out
    visitor(std::as_const(b->value));
    return true;
  }

  bool insert(std::string_view key, const V& value) {
    reclaim::Guard g;
    Search s(*this, key);
    Node* fresh = nullptr;
    for (;;) {
      if (Node* n = s.locate()) {
        if (n->box.load(std::memory_order_acquire)) {  // acquire: as in find
          if (fresh) discard(fresh, true);
          return false;
        }
        help_remove(n);
        continue;
      }
      if (!fresh) fresh = make_node_with(key, s.height, value);
      if (link(fresh, s)) return true;
    }
  }

  bool insert_or_assign(std::string_view key, const V& value) {
    reclaim::Guard g;
    Search s(*this, key);
    Box* box = nullptr;
    Node* fresh = nullptr;
    for (;;) {
      if (Node* n = s.locate()) {
        // acquire: if we see the tombstone, our marks (release) must carry it to whoever sees them.
        Box* b = n->box.load(std::memory_order_acquire);
        if (b && !box) box = box_for_assign(fresh, value);
        while (b) {
          // acq_rel: release publishes the new box; acquire orders our retire after the
          // previous installer's writes. Failure: acquire, b is the newer box.
          if (n->box.compare_exchange_weak(b, box, std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
            retire_box(n, b);
            if (fresh) discard(fresh, true);  // built for a link that lost; never shared
            return false;
          }
        }
        help_remove(n);
        continue;
      }
      if (!kInlineBox && box) {
        // Heap layout: the box of an assign that found a tombstone goes (back) into the node. If
        // fresh exists, box_for_assign took its box, so fresh has none now.
        if (fresh) {
          fresh->box.store(std::exchange(box, nullptr), std::memory_order_relaxed);  // unshared
        } else {
          fresh = make_node(key, s.height, std::exchange(box, nullptr));
        }
      } else if (!fresh) {
        fresh = make_node_with(key, s.height, value);
      }
      if (link(fresh, s)) {
        delete box;  // inline layout only: made for an assign that found a tombstone; never shared
        return true;
      }
    }
  }

  bool erase(std::string_view key) {
    reclaim::Guard g;
    Search s(*this, key, 1);  // links nothing: no height to draw
    Node* n = s.locate();
    if (!n) return false;
    Box* b = n->box.load(std::memory_order_acquire);
    while (b) {
      // acq_rel: the tombstone is published (release) before the marks that follow it; acquire
      // so that retiring b happens after its installer's writes. Failure: acquire (reload).
      if (n->box.compare_exchange_weak(b, nullptr, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        finish_erase(n, b);
        return true;
      }
    }
    return false;  // tombstoned by another eraser: absent since then
  }

  template <class F>
  UpdateOutcome update(std::string_view key, F&& fn) {
    reclaim::Guard g;
    Search s(*this, key);
    for (;;) {
      if (Node* n = s.locate()) {
        // acquire: fn reads the box's value.
        Box* b = n->box.load(std::memory_order_acquire);
        while (b) {
          Update<V> u = fn(static_cast<const V*>(&b->value));
          if (u.kind() == Update<V>::Kind::keep) return UpdateOutcome::unchanged;
          Box* next = u.kind() == Update<V>::Kind::assign ? new Box{std::move(u).value()} : nullptr;
          // acq_rel / acquire: as in insert_or_assign and erase.
          if (n->box.compare_exchange_strong(b, next, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
            if (next) {
              retire_box(n, b);
              return UpdateOutcome::assigned;
            }
            finish_erase(n, b);
            return UpdateOutcome::erased;
          }
          delete next;  // never shared; fn reruns on the newer box
        }
        help_remove(n);
        continue;
      }
      Update<V> u = fn(static_cast<const V*>(nullptr));
      if (u.kind() != Update<V>::Kind::assign) return UpdateOutcome::unchanged;
      Node* fresh = make_node_with(key, s.height, std::move(u).value());
      if (link(fresh, s)) return UpdateOutcome::inserted;
      discard(fresh, true);  // the key may have appeared: fn reruns on what is there now
    }
  }

  std::size_t size_approx() {
    std::int64_t n = 0;
    // relaxed: a statistic; exact when no writer runs.
    for (const auto& c : counts_) n += c.value.load(std::memory_order_relaxed);
    return n < 0 ? 0 : static_cast<std::size_t>(n);
  }

  // Keys in [lo, hi) in byte order; fn(key, value) -> bool, false stops. O(log n + visited).
  // Weakly consistent; a key present for the whole call is visited exactly once.
  template <class F>
  void range(std::string_view lo, std::string_view hi, F&& fn) {
    reclaim::Guard g;
    scan(lower_bound(lo), &hi, fn);
  }

  template <class F>
  void for_each(F&& fn) {
    reclaim::Guard g;
    auto all = [&fn](std::string_view k, const V& v) {
      fn(k, v);
      return true;
    };
    // acquire: as in every traversal, pairs with the release that linked the first node.
    scan(ptr(head_->next(0).load(std::memory_order_acquire)), nullptr, all);
  }

  // Not atomic: erases key by key.
  void clear() {
    std::vector<std::string> keys;
    for_each([&](std::string_view k, const V&) { keys.emplace_back(k); });
    for (const auto& k : keys) erase(k);
  }

 private:
  static constexpr int kMaxHeight = 32;
  static constexpr std::uintptr_t kMark = 1;
  static constexpr std::uint8_t kLinkDone = 1;  // the inserter links no further level
  static constexpr std::uint8_t kRemoved = 2;   // the eraser has marked every level
  static constexpr std::size_t kStripes = 64;

  using Link = std::atomic<std::uintptr_t>;

  struct Box {
    V value;
  };
  // A small trivially destructible value (an integer, a pointer) gets its first box inside the
  // node, beside the header: a find that lands on a key reads the value from the line it already
  // loaded instead of missing once more on a separate box. A later assign installs a heap box as
  // usual; the inline one is then dead but its bytes stay part of the node (nothing to destroy,
  // freed with the node, which outlives every reader of it by the epoch rule).
  static constexpr bool kInlineBox = std::is_trivially_destructible_v<V> &&
                                     sizeof(Box) <= 16 && alignof(Box) <= alignof(std::uint64_t);
  struct InlineSlot {
    alignas(std::uint64_t) unsigned char bytes[(sizeof(Box) + 7) / 8 * 8];
  };
  struct NoSlot {};

  struct Node {
    Node(int h, std::size_t key_bytes)
        : height(static_cast<std::uint8_t>(h)), key_size(static_cast<std::uint32_t>(key_bytes)) {}
    std::atomic<Box*> box{nullptr};
    std::atomic<std::uint8_t> state{0};
    std::uint8_t height;
    std::uint32_t key_size;
    std::uint64_t prefix;  // prefix_of(key()): immutable, published with the node
    [[no_unique_address]] std::conditional_t<kInlineBox, InlineSlot, NoSlot> slot;

    Box* inline_box() {
      if constexpr (kInlineBox) return std::launder(reinterpret_cast<Box*>(slot.bytes));
      return nullptr;
    }
    Link& next(int level) { return *std::launder(reinterpret_cast<Link*>(this + 1) + level); }
    std::string_view key() const {
      return {reinterpret_cast<const char*>(this + 1) + height * sizeof(Link), key_size};
    }
  };

  static_assert(sizeof(Node) == 24 + (kInlineBox ? sizeof(InlineSlot) : 0),
                "the header drawn in the file comment");
  static_assert(sizeof(Node) % alignof(Link) == 0, "the tower starts aligned right after it");
  static_assert(alignof(Node) > kMark, "node addresses leave bit 0 free for the mark");
  static_assert(Link::is_always_lock_free && sizeof(Link) == sizeof(std::uintptr_t),
                "a link is one plain word");
  static_assert(std::atomic<Box*>::is_always_lock_free, "the box pointer is one plain word");
  static_assert(kMaxHeight <= 255, "height fits in a byte");
  static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= alignof(Link), "operator new aligns towers");

  struct alignas(64) Count {
    std::atomic<std::int64_t> value{0};
  };

  // One operation's search state: its random height (drawn once, so retries reuse the node) and
  // the predecessors/successors per level from the last locate().
  struct Search {
    Search(Kvlab& m, std::string_view k, int h = random_height()) : map(m), key(k), height(h) {
      top = std::max(height, map.raise_height_hint(height));
    }
    // The live-or-dead node of `key` at level 0, or nullptr when there is none.
    Node* locate() {
      Node* n = map.locate(key, preds, succs, top, false);
      return n && n->key() == key ? n : nullptr;
    }
    Kvlab& map;
    std::string_view key;
    int height;
    int top;
    Node* preds[kMaxHeight];
    Node* succs[kMaxHeight];
  };

  // The first 8 bytes of key as a big-endian integer, 0-padded (see the file comment).
  static std::uint64_t prefix_of(std::string_view key) {
    std::uint64_t v = 0;
    if (!key.empty()) std::memcpy(&v, key.data(), std::min<std::size_t>(key.size(), 8));
    if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
    return v;
  }
  // A search key with its prefix computed once.
  struct Probe {
    explicit Probe(std::string_view k) : key(k), prefix(prefix_of(k)) {}
    std::string_view key;
    std::uint64_t prefix;
  };
  // <0, 0, >0 as n's key compares with the probe's (memcmp order, shorter first).
  static int compare(const Node* n, const Probe& p) {
    if (n->prefix != p.prefix) return n->prefix < p.prefix ? -1 : 1;
    return n->key().compare(p.key);
  }

  static Node* ptr(std::uintptr_t w) { return reinterpret_cast<Node*>(w & ~kMark); }
  static std::uintptr_t word(Node* n) { return reinterpret_cast<std::uintptr_t>(n); }

  // A node holding box (a heap box it takes over, freed here if the node cannot be allocated), or
  // none yet (the head; make_node_with's inline layout).
  static Node* make_node(std::string_view key, int height, Box* box = nullptr) {
    void* mem;
    try {
      mem = ::operator new(sizeof(Node) + height * sizeof(Link) + key.size());
    } catch (...) {
      delete box;
      throw;
    }
    auto* n = new (mem) Node(height, key.size());
    for (int l = 0; l < height; ++l) new (reinterpret_cast<Link*>(n + 1) + l) Link(0);
    if (!key.empty()) {
      std::memcpy(reinterpret_cast<char*>(n + 1) + height * sizeof(Link), key.data(), key.size());
    }
    n->prefix = prefix_of(key);
    n->box.store(box, std::memory_order_relaxed);  // not yet shared
    // Height 1: level 0 is the only link, made by the CAS that publishes the node.
    if (height == 1) n->state.store(kLinkDone, std::memory_order_relaxed);
    return n;
  }
  // A new node holding value: in its inline slot when V allows, else in a heap box.
  template <class U>
  static Node* make_node_with(std::string_view key, int height, U&& value) {
    if constexpr (kInlineBox) {
      Node* n = make_node(key, height);
      // Trivially destructible and small: a throwing constructor is not expected, but stay safe.
      Box* b;
      try {
        b = new (n->slot.bytes) Box{std::forward<U>(value)};
      } catch (...) {
        destroy_node(n);
        throw;
      }
      n->box.store(b, std::memory_order_relaxed);  // not yet shared
      return n;
    } else {
      return make_node(key, height, new Box{std::forward<U>(value)});
    }
  }
  // A box holding value for an assign. A heap-boxed fresh node that lost its link gives up its box
  // instead of a second allocation; an inline box cannot move out of its node.
  static Box* box_for_assign(Node* fresh, const V& value) {
    if constexpr (!kInlineBox) {
      if (fresh) {
        Box* b = fresh->box.load(std::memory_order_relaxed);  // fresh was never shared
        fresh->box.store(nullptr, std::memory_order_relaxed);
        return b;
      }
    }
    return new Box{value};
  }
  // Frees a box no thread can reach any more (or never could); the inline one goes with its node.
  static void free_box(Node* n, Box* b) {
    if (b != n->inline_box()) delete b;
  }
  // Retires a box that was just replaced (assign) or tombstoned (erase) in n.
  static void retire_box(Node* n, Box* b) {
    if (b != n->inline_box()) reclaim::retire(b);
  }
  static void destroy_node(Node* n) {
    n->~Node();
    ::operator delete(n);
  }
  // A node that was never published; with_box also frees its box.
  static void discard(Node* n, bool with_box) {
    if (with_box) free_box(n, n->box.load(std::memory_order_relaxed));
    destroy_node(n);
  }

  // p = 1/2 per extra level: one leading zero bit of a xorshift64* output per level.
  static int random_height() {
    thread_local std::uint64_t state = seed();
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const std::uint64_t r = state * 0x2545f4914f6cdd1dull;  // high bits are the good ones
    return std::min(1 + std::countl_zero(r | 1), kMaxHeight);
  }
  static std::uint64_t seed() {
    static std::atomic<std::uint64_t> counter{0};
    // relaxed: only makes the threads' seeds distinct.
    std::uint64_t z = counter.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ull +
                      0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z ? z : 1;
  }

  // The number of levels worth searching: a hint only. Every search covers at least the levels of
  // the node it links or unlinks, so a stale value costs time, never correctness.
  int height_hint() const {
    // relaxed: a hint (see above).
    return max_height_.load(std::memory_order_relaxed);
  }
  int raise_height_hint(int h) {
    int cur = max_height_.load(std::memory_order_relaxed);
    // relaxed: a hint; monotonic by the CAS loop.
    while (cur < h && !max_height_.compare_exchange_weak(cur, h, std::memory_order_relaxed)) {
    }
    return std::max(cur, h);
  }

  // Read-only search (HLS `contains`): the first node at level 0 with key >= `key` that was
  // unmarked when passed, or nullptr. Writes no shared memory.
  Node* lower_bound(std::string_view key) {
    const Probe probe(key);
    Node* pred = head_;
    Node* curr = nullptr;
    for (int level = height_hint() - 1; level >= 0; --level) {
      // acquire (here and below): pairs with the release CAS that linked the node we step to (or
      // the snip that swung a link to it), so its header, tower and key are visible.
      curr = ptr(pred->next(level).load(std::memory_order_acquire));
      prefetch_down(pred, level);
      while (curr) {
        const std::uintptr_t w = curr->next(level).load(std::memory_order_acquire);
        if (w & kMark) {
          curr = ptr(w);  // a marked link is frozen: it leads on past the dead node
        } else if (compare(curr, probe) < 0) {
          pred = curr;
          curr = ptr(w);
          prefetch_down(pred, level);
        } else {
          break;
        }
      }
    }
    return curr;
  }

  // The search's next node after curr is either curr's successor (step right) or pred's
  // successor one level down (step down); the first is loaded anyway, this starts the second in
  // parallel, so a step down does not wait for a miss that could have overlapped the last one.
  // relaxed: the link is only an address to prefetch; the walk loads it again (acquire) before
  // use, and prefetching a node that is gone by then is harmless (epoch-protected, no fault).
  static void prefetch_down(Node* pred, int level) {
    if (level > 0) __builtin_prefetch(ptr(pred->next(level - 1).load(std::memory_order_relaxed)));
  }

  // Walks level 0 from n, visiting live keys below *hi (all when hi is null) until fn says stop.
  template <class F>
  static void scan(Node* n, const std::string_view* hi, F& fn) {
    while (n) {
      const std::string_view k = n->key();
      if (hi && !(k < *hi)) return;
      // acquire: as in lower_bound.
      const std::uintptr_t w = n->next(0).load(std::memory_order_acquire);
      if (!(w & kMark)) {
        // acquire: as in find.
        if (Box* b = n->box.load(std::memory_order_acquire)) {
          if (!fn(k, std::as_const(b->value))) return;
        }
      }
      n = ptr(w);
    }
  }

  // HLS `find`: fills preds/succs for levels [0, top) and snips every marked node it passes.
  // Returns succs[0]: the first node at level 0 not below `key` (unmarked when passed), or null.
  // With past_equal it also steps over unmarked nodes equal to `key` (the retirer's search, see
  // the file comment); preds/succs are then meaningless to callers.
  Node* locate(std::string_view key, Node** preds, Node** succs, int top, bool past_equal) {
    for (;;) {
      if (try_locate(key, preds, succs, top, past_equal)) return succs[0];
    }
  }
  bool try_locate(std::string_view key, Node** preds, Node** succs, int top, bool past_equal) {
    const Probe probe(key);
    Node* pred = head_;
    for (int level = top - 1; level >= 0; --level) {
      // acquire: as in lower_bound.
      const std::uintptr_t pw = pred->next(level).load(std::memory_order_acquire);
      // Unlike HLS `find`, never walk on from a pred marked at this level: its link is frozen and
      // may skip nodes linked since it was unlinked, and the retirer must meet every node of its
      // key (file comment, Reclamation). Restart; the next pass snips pred one level up.
      if (pw & kMark) return false;
      Node* curr = ptr(pw);
      prefetch_down(pred, level);
      while (curr) {
        const std::uintptr_t w = curr->next(level).load(std::memory_order_acquire);
        Node* succ = ptr(w);
        if (w & kMark) {
          std::uintptr_t expected = word(curr);
          // release: whoever reaches succ through pred sees it initialized (we acquired it from
          // curr's link). Fails when pred is marked or curr already gone: restart from the head.
          if (!pred->next(level).compare_exchange_strong(
                  expected, word(succ), std::memory_order_release, std::memory_order_relaxed)) {
            return false;
          }
          curr = succ;
          continue;
        }
        const int c = compare(curr, probe);
        if (c < 0 || (past_equal && c == 0)) {
          pred = curr;
          curr = succ;
          prefetch_down(pred, level);
          continue;
        }
        break;
      }
      preds[level] = pred;
      succs[level] = curr;
    }
    return true;
  }

  // Publishes n (not yet shared) between s.preds and s.succs: level 0 by one CAS, the
  // linearization point of the insert, then the upper levels. False if level 0 changed: the
  // caller searches again.
  bool link(Node* n, Search& s) {
    const int h = n->height;
    // relaxed: n is not shared yet; the release CAS below publishes these stores.
    for (int l = 0; l < h; ++l) n->next(l).store(word(s.succs[l]), std::memory_order_relaxed);
    std::uintptr_t expected = word(s.succs[0]);
    // release: publishes n's header, tower, key and box to every thread that reaches n (acquire).
    if (!s.preds[0]->next(0).compare_exchange_strong(expected, word(n), std::memory_order_release,
                                                     std::memory_order_relaxed)) {
      return false;
    }
    count_add(1);
    if (h > 1) link_upper(n, s);
    return true;
  }

  // Links n at levels 1..height-1, bottom-up, then sets kLinkDone; stops early at the first
  // level where n is found marked (an eraser got to it).
  void link_upper(Node* n, Search& s) {
    for (int l = 1; l < n->height; ++l) {
      for (;;) {
        Node* succ = s.succs[l];
        std::uintptr_t mine = n->next(l).load(std::memory_order_relaxed);
        // Always an RMW, even when the link already holds succ: an RMW reads the latest value, so
        // a mark that happens before it (e.g. because succ is a newer node of our key, inserted
        // after n died) is seen, and a dead n is never linked in front of such a node.
        // acquire on success/failure: pairs with the markers' acq_rel fetch_or. The stored value
        // is published by the release CAS on the pred below.
        if ((mine & kMark) ||
            !n->next(l).compare_exchange_strong(mine, word(succ), std::memory_order_acquire,
                                                std::memory_order_acquire)) {
          goto done;  // fails only when a marker set the bit (nobody else writes n's links)
        }
        std::uintptr_t expected = word(succ);
        // release: as in link().
        if (s.preds[l]->next(l).compare_exchange_strong(
                expected, word(n), std::memory_order_release, std::memory_order_relaxed)) {
          break;
        }
        // The level changed. Search again; if n died meanwhile its marks stop us above.
        locate(s.key, s.preds, s.succs, s.top, false);
      }
    }
  done:
    // acq_rel: release hands every link made above to the eraser; acquire receives the eraser's
    // marks if it came first (then we retire).
    if (n->state.fetch_or(kLinkDone, std::memory_order_acq_rel) & kRemoved) unlink_and_retire(n);
  }

  // A node found tombstoned: mark its levels so that every search snips it. Idempotent; run by
  // the eraser and by anyone who must not wait for it.
  static void help_remove(Node* n) {
    for (int l = n->height - 1; l >= 0; --l) {
      // acq_rel, and unconditional: release so that a thread that sees the mark (acquire) also
      // sees the tombstone and every higher mark; acquire so that a mark set first by another
      // helper happens before our lower marks (invariant 3's top-down order holds across helpers).
      n->next(l).fetch_or(kMark, std::memory_order_acq_rel);
    }
  }

  // Run by the eraser (winner of the box -> nullptr CAS), with the old box b.
  void finish_erase(Node* n, Box* b) {
    retire_box(n, b);
    count_add(-1);
    help_remove(n);
    // acq_rel: see link_upper().
    if (n->state.fetch_or(kRemoved, std::memory_order_acq_rel) & kLinkDone) {
      unlink_and_retire(n);
    }
    // Else the inserter is still linking; it retires n when it stops (link_upper).
  }

  // The second party of the handshake: n is marked everywhere and no level will be linked again;
  // unlink it from every level still linking it, then retire it (invariant 5).
  void unlink_and_retire(Node* n) {
    Node* preds[kMaxHeight];
    Node* succs[kMaxHeight];
    locate(n->key(), preds, succs, std::max<int>(n->height, height_hint()), true);
    reclaim::retire(n, [](void* p) { destroy_node(static_cast<Node*>(p)); });
  }

  void count_add(std::int64_t d) {
    static std::atomic<unsigned> next_stripe{0};
    // relaxed: only spreads threads over stripes.
    thread_local const unsigned stripe =
        next_stripe.fetch_add(1, std::memory_order_relaxed) % kStripes;
    // relaxed: a statistic; no ordering with the list needed.
    counts_[stripe].value.fetch_add(d, std::memory_order_relaxed);
  }

  Node* const head_;  // full height, key never read; immutable pointer
  // Read by every operation, raised rarely: on its own cache line, away from the counters.
  alignas(64) std::atomic<int> max_height_{1};
  Count counts_[kStripes];
};

static_assert(kvlab::OrderedMap<Kvlab<std::string>>);

}  // namespace kvlab::skiplist
