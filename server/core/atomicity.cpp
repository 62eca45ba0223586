// The atomicity schemes; see atomicity.hpp for the protocol and its invariants.
#include "server/core/atomicity.hpp"

#include <sched.h>

#include <algorithm>

#include "structures/common/hash.hpp"

namespace kvlab::server {

namespace {
constexpr Atomicity::SchemeInfo kSchemes[] = {
    {"global", Atomicity::Scheme::kGlobal,
     "multi-key operations run one at a time and exclude every other command"},
    {"key-locks", Atomicity::Scheme::kKeyLocks,
     "multi-key operations lock their keys' stripes (4096, in order); disjoint ones run in "
     "parallel"},
    {"stripes", Atomicity::Scheme::kStripes,
     "every command locks its keys' stripes (single-key ones shared, through a per-worker "
     "indicator); no escalation, no waiting for other workers"},
};

inline void cpu_relax() {
  __builtin_ia32_pause();
}
}  // namespace

std::span<const Atomicity::SchemeInfo> Atomicity::schemes() {
  return kSchemes;
}

const Atomicity::SchemeInfo* Atomicity::find(std::string_view name) {
  for (const SchemeInfo& s : kSchemes)
    if (s.name == name) return &s;
  return nullptr;
}

std::string_view Atomicity::name() const {
  for (const SchemeInfo& s : kSchemes)
    if (s.scheme == scheme_) return s.name;
  return "?";
}

static_assert((Atomicity::kWorld - Atomicity::kStripes) * sizeof(std::uint32_t) >= 64 &&
                  (Atomicity::kStripeSlots - Atomicity::kWorld) * sizeof(std::uint32_t) >= 64,
              "the world stripe shares no cache line with a key stripe");

Atomicity::Atomicity(Scheme scheme, unsigned workers)
    : scheme_(scheme),
      workers_(workers),
      slots_(new Slot[workers]),
      stripes_(scheme != Scheme::kGlobal ? new Stripe[kStripeSlots] : nullptr) {
  for (unsigned i = 0; i < workers; ++i) slots_[i].index = i;
}

std::uint32_t Atomicity::stripe_of(std::string_view key) {
  return static_cast<std::uint32_t>(hash64(key) >> 40) & (kStripes - 1);
}

void Atomicity::offline(unsigned w) {
  if (slots_[w].announced) withdraw(slots_[w]);  // invariant 6: no announcement outlives a batch
  // release: the commands this worker ran happen before an escalation that reads kOffline.
  slots_[w].seen.store(kOffline, std::memory_order_release);
}

void Atomicity::online(unsigned w) {
  Slot& me = slots_[w];
  // seq_cst, with the seq_cst loads of seq_ in the next boundary() and the escalation's seq_cst
  // increment and load of this slot (Dekker): either the escalation sees this worker online and
  // waits for its acknowledgement, or this worker's next boundary sees the escalation.
  me.seen.store(me.acked, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

template <class Done>
void Atomicity::wait(Slot& me, Done&& done) {
  for (unsigned spins = 0; !done(); ++spins) {
    boundary(me);
    back_off(me, spins);
  }
}

void Atomicity::back_off(Slot& me, unsigned spins) {
  if (spins < 128) {
    cpu_relax();
    return;
  }
  sched_yield();  // the holder may share this CPU
  // A yield takes some microseconds: the hook runs about once a millisecond, which is often
  // enough for a BUSY reply and costs nothing measurable to a wait that short.
  if (me.hook != nullptr && (spins & 255) == 0) me.hook(me.hook_arg);
}

int Atomicity::begin_single_slow(Slot& me, std::string_view key) {
  me.slow.store(me.slow.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (scheme_ == Scheme::kGlobal) {
    // acquire: the escalations that ran before happen before this command.
    wait(me, [&] { return active_.load(std::memory_order_acquire) == 0; });
    return -1;
  }
  enter_keys(me);
  return lock_shared(me, stripe_of(key));
}

int Atomicity::lock_shared(Slot& me, std::uint32_t i) {
  std::atomic<std::uint32_t>& st = stripes_[i].state;
  for (unsigned spins = 0;; ++spins) {
    std::uint32_t s = st.load(std::memory_order_relaxed);
    // acquire on success: the exclusive holder's writes (released in end_multi) are visible.
    if ((s & ~kReaders) == 0 &&
        st.compare_exchange_weak(s, s + 1, std::memory_order_acquire, std::memory_order_relaxed))
      return static_cast<int>(i);
    if (scheme_ != Scheme::kStripes) boundary(me);
    back_off(me, spins);
  }
}

void Atomicity::lock_stripe(Slot& me, std::uint32_t i) {
  std::atomic<std::uint32_t>& st = stripes_[i].state;
  // relaxed: announcing the wait only holds back new shared holders; the acquiring CAS below
  // is what orders this operation after the previous holders.
  st.fetch_add(kWaitOne, std::memory_order_relaxed);
  for (unsigned spins = 0;; ++spins) {
    std::uint32_t s = st.load(std::memory_order_relaxed);
    if ((s & (kHeld | kReaders)) == 0 &&
        st.compare_exchange_weak(s, (s - kWaitOne) | kHeld, std::memory_order_acquire,
                                 std::memory_order_relaxed))
      return;
    if (scheme_ != Scheme::kStripes) boundary(me);
    back_off(me, spins);
  }
}

void Atomicity::begin_multi(unsigned w, std::span<const std::string_view> keys, bool all_keys,
                            std::vector<std::uint32_t>* held) {
  Slot& me = slots_[w];
  me.escalations.store(me.escalations.load(std::memory_order_relaxed) + 1,
                       std::memory_order_relaxed);
  if (scheme_ == Scheme::kStripes) {  // no announcement: every keyed command holds its stripe
    held->clear();
    lock_stripes(me, keys, all_keys, held);
    return;
  }
  if (me.announced) {  // invariant 6: still announced and acknowledged; only the stripes to lock
    boundary(me);      // acknowledge the others' escalations before waiting (invariant 4)
    held->clear();
    lock_stripes(me, keys, all_keys, held);
    return;
  }
  // seq_cst: active_ before seq_ (invariant 3), and the load of each slot below is ordered after
  // both (see online()).
  active_.fetch_add(1, std::memory_order_seq_cst);
  const std::uint64_t mine = seq_.fetch_add(1, std::memory_order_seq_cst) + 1;
  boundary(me);  // this worker is between commands: acknowledge for the others' escalations
  for (unsigned i = 0; i < workers_; ++i) {
    if (i == w) continue;
    // seq_cst: see online(). kOffline is the largest value, so it passes too.
    wait(me, [&] { return slots_[i].seen.load(std::memory_order_seq_cst) >= mine; });
  }
  held->clear();
  if (scheme_ == Scheme::kGlobal) {
    wait(me, [&] {
      bool expected = false;
      // acquire: the previous escalation's writes are visible.
      return !exclusive_.load(std::memory_order_relaxed) &&
             exclusive_.compare_exchange_weak(expected, true, std::memory_order_acquire,
                                              std::memory_order_relaxed);
    });
    return;
  }
  lock_stripes(me, keys, all_keys, held);
}

void Atomicity::lock_stripes(Slot& me, std::span<const std::string_view> keys, bool all_keys,
                             std::vector<std::uint32_t>* held) {
  if (all_keys) {
    held->push_back(kWorld);
    lock_world(me);
  } else {
    enter_keys(me);  // invariant 7: no keyspace-wide operation runs while this one holds stripes
    for (std::string_view k : keys) held->push_back(stripe_of(k));
    std::sort(held->begin(), held->end());  // one global order: no deadlock between escalations
    held->erase(std::unique(held->begin(), held->end()), held->end());
    for (std::uint32_t i : *held) lock_stripe(me, i);
  }
  if (scheme_ == Scheme::kStripes) drain_indicators(me, *held);
}

void Atomicity::enter_keys(Slot& me) {
  for (;;) {
    // relaxed store, then the seq_cst fence: ordered before the load below (invariant 7).
    me.holding.store(true, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // acquire: pairs with the release of the world stripe in end_multi(); the keyspace-wide
    // operation's writes are visible. A waiting locker counts too (no writer starvation).
    auto world_free = [&] {
      return (stripes_[kWorld].state.load(std::memory_order_acquire) & ~kReaders) == 0;
    };
    if (world_free()) return;
    // relaxed: this worker has touched no stripe yet; nothing to publish.
    me.holding.store(false, std::memory_order_relaxed);
    wait(me, world_free);
  }
}

void Atomicity::lock_world(Slot& me) {
  lock_stripe(me, kWorld);
  // seq_cst: the world stripe's modification above before the loads of the flags below
  // (invariant 7).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (unsigned v = 0; v < workers_; ++v) {
    if (v == me.index) continue;
    // acquire: pairs with leave_keys()'s release; the worker's operation happens before ours.
    wait(me, [&] { return !slots_[v].holding.load(std::memory_order_acquire); });
  }
}

void Atomicity::drain_indicators(Slot& me, const std::vector<std::uint32_t>& held) {
  // seq_cst: orders the stripe-word modifications above before the indicator loads below; pairs
  // with the fence in enter_stripe() (invariant 5).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const bool every = !held.empty() && held.back() == kWorld;
  for (unsigned v = 0; v < workers_; ++v) {
    if (v == me.index) continue;
    for (unsigned spins = 0;; ++spins) {
      // acquire: pairs with end_single()'s release, so the reader's command happens before ours.
      const std::uint32_t r = slots_[v].reading.load(std::memory_order_acquire);
      if (r == kNoStripe || (!every && !std::binary_search(held.begin(), held.end(), r))) break;
      back_off(me, spins);  // the reader may share this CPU
    }
  }
}

void Atomicity::end_multi(unsigned w, std::vector<std::uint32_t>* held, bool keep_announced) {
  if (scheme_ == Scheme::kGlobal) {
    // release: this operation's writes happen before the next escalation's.
    exclusive_.store(false, std::memory_order_release);
  } else {
    // release: this operation's writes happen before the next holder of each stripe.
    for (std::uint32_t i : *held) stripes_[i].state.fetch_and(~kHeld, std::memory_order_release);
    Slot& me = slots_[w];
    if (held->empty() || held->back() != kWorld) leave_keys(me);
  }
  held->clear();
  if (scheme_ == Scheme::kStripes) return;  // announced nothing
  Slot& me = slots_[w];
  if (keep_announced && scheme_ == Scheme::kKeyLocks) {
    me.announced = true;  // withdrawn by the next single-key command or offline (invariant 6)
    return;
  }
  me.announced = false;
  // release: pairs with the acquire load in boundary() and the global wait; a worker that sees
  // the count drop back runs later commands after this operation's writes.
  active_.fetch_sub(1, std::memory_order_release);
}

std::uint64_t Atomicity::escalations() const {
  std::uint64_t n = 0;
  for (unsigned i = 0; i < workers_; ++i)
    n += slots_[i].escalations.load(std::memory_order_relaxed);
  return n;
}

std::uint64_t Atomicity::slow_commands() const {
  std::uint64_t n = 0;
  for (unsigned i = 0; i < workers_; ++i) n += slots_[i].slow.load(std::memory_order_relaxed);
  return n;
}

}  // namespace kvlab::server
