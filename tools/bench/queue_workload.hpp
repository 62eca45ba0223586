// The queue workload: P producers push `items` tagged items (producer << 40 | sequence), C
// consumers pop until all are consumed. Each repetition is one Google Benchmark call with one
// iteration; its time is the wall time between a start barrier and an end barrier, reported as
// manual time, so the rate is items / transfer time.
//
// Validation, after every call (untimed, in Google Benchmark's teardown hook):
//   no loss       every (producer, sequence) was popped (consumers give up 2 s after the
//                 producers finished with the queue empty and items missing: "lost items");
//   no duplicate  none was popped twice;
//   FIFO          when kTraits.fifo: each consumer saw each producer's sequence numbers in
//                 increasing order (what linearizable FIFO implies for one consumer).
// Bounded queues: a full push retries (spin, then yield) — never counted as a loss.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "structures/keyspace.hpp"
#include "structures/reclaim/epoch.hpp"
#include "tools/bench/bench.hpp"
#include "tools/bench/harness.hpp"

namespace kvlab::bench::detail {

struct QueueShared {
  unsigned producers = 1, consumers = 1;
  std::uint64_t items = 0;
  bool fifo = false;
  bool qsbr =
      true;  // epoch QSBR mode for the own queues (see map_thread_body); false: --epoch-guards
  const ThreadPlan* plan = nullptr;
  alignas(64) std::atomic<unsigned> start_arrived{0};
  alignas(64) std::atomic<unsigned> end_arrived{0};
  alignas(64) std::atomic<std::uint64_t> consumed{0};
  alignas(64) std::atomic<unsigned> producers_done{0};
  alignas(64) std::atomic<bool> aborted{false};
  std::vector<std::vector<std::uint64_t>> logs;  // per consumer, in pop order
  std::vector<std::string> pin_errors;           // per thread
  std::string failure;                           // the first validation failure, if any
  unsigned calls = 0;
  std::uint64_t validated_items = 0;

  std::uint64_t items_of(unsigned p) const { return items / producers + (p < items % producers); }
  void reset();
  void validate();  // after a call; fills failure
};

// The one queue benchmark running now (Google Benchmark's setup/teardown hooks are plain
// function pointers). Only the driver thread sets it, between runs.
inline QueueShared* g_queue_shared = nullptr;
void queue_setup(const benchmark::State&);
void queue_teardown(const benchmark::State&);

inline void spin_barrier(std::atomic<unsigned>& arrived, unsigned n) {
  arrived.fetch_add(1, std::memory_order_acq_rel);  // pairs with the loads below: all threads
                                                    // see the others' pre-barrier writes
  unsigned attempt = 0;
  while (arrived.load(std::memory_order_acquire) < n) relax(attempt);
}

template <class Q>
void queue_thread_body(benchmark::State& state, Q& q, QueueShared& sh) {
  using Clock = std::chrono::steady_clock;
  const unsigned ti = static_cast<unsigned>(state.thread_index());
  const unsigned total = sh.producers + sh.consumers;
  if (std::string err; !RunEnv::pin(*sh.plan, ti, &err)) {
    sh.pin_errors[ti] = err;
  }
  // QSBR as in map_thread_body: announced for the transfer, offline while waiting at the barriers.
  QuiescentTicker ticker(sh.qsbr);
  auto maybe_quiescent = [&] { ticker.tick(); };
  for (auto _ : state) {
    spin_barrier(sh.start_arrived, total);
    if (sh.qsbr) reclaim::online();
    const auto t0 = Clock::now();
    if (ti < sh.producers) {
      const std::uint64_t n = sh.items_of(ti);
      const std::uint64_t tag = static_cast<std::uint64_t>(ti) << 40;
      for (std::uint64_t s = 0; s < n; ++s) {
        unsigned attempt = 0;
        while (!q.push(tag | s)) relax(attempt);  // bounded and full: retry
        maybe_quiescent();
      }
      sh.producers_done.fetch_add(1, std::memory_order_release);
    } else {
      auto& log = sh.logs[ti - sh.producers];
      std::uint64_t local = 0;
      unsigned attempt = 0;
      Clock::time_point empty_since{};
      for (;;) {
        maybe_quiescent();
        if (auto v = q.try_pop()) {
          log.push_back(*v);
          attempt = 0;
          empty_since = {};
          // Flush the count in batches: a shared counter per item would dominate the measurement.
          if (++local == 256) {
            sh.consumed.fetch_add(local, std::memory_order_relaxed);
            local = 0;
          }
          continue;
        }
        if (local) {
          sh.consumed.fetch_add(local, std::memory_order_relaxed);
          local = 0;
        }
        // Relaxed is enough: the end barrier orders the logs for validation; the counter only
        // decides when to stop.
        if (sh.consumed.load(std::memory_order_relaxed) >= sh.items ||
            sh.aborted.load(std::memory_order_relaxed))
          break;
        if (sh.producers_done.load(std::memory_order_acquire) == sh.producers) {
          const auto now = Clock::now();
          if (empty_since == Clock::time_point{}) {
            empty_since = now;
          } else if (now - empty_since > std::chrono::seconds(2)) {
            sh.aborted.store(true, std::memory_order_relaxed);
            break;
          }
        }
        relax(attempt);
      }
    }
    if (sh.qsbr) reclaim::offline();
    spin_barrier(sh.end_arrived, total);
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  state.counters["ops"] = benchmark::Counter(ti == 0 ? static_cast<double>(sh.items) : 0.0,
                                             benchmark::Counter::kIsRate);
}

template <template <class> class B>
std::vector<Measurement> run_queue_backend(RunEnv& env, unsigned producers, unsigned consumers) {
  using Q = B<std::uint64_t>;
  const BenchConfig& c = env.config();
  // A single-consumer queue must not be popped by two threads: run it with one consumer.
  const bool clamped = Q::kTraits.single_consumer && consumers > 1;
  if (clamped) consumers = 1;
  Measurement m;
  m.backend = std::string(Q::kTraits.name);
  m.family = "queue";
  m.producers = producers;
  m.consumers = consumers;
  m.threads = producers + consumers;
  if (Q::kTraits.bounded) m.note = "bounded: full push retries";
  if (!Q::kTraits.fifo)
    m.note += std::string(m.note.empty() ? "" : "; ") + "FIFO not declared: not checked";
  if (clamped) m.note += std::string(m.note.empty() ? "" : "; ") + "single consumer: 1 consumer";

  const ThreadPlan& plan = env.plan(m.threads);
  if (!plan.ok) {
    m.invalid_reason = "placement: " + plan.error;
    env.report(m);
    return {m};
  }
  QueueOptions o;
  o.capacity = c.queue_capacity;
  auto q = std::make_unique<Q>(o);
  QueueShared sh;
  sh.producers = producers;
  sh.consumers = consumers;
  sh.items = c.items;
  sh.qsbr = !c.epoch_guards;
  sh.fifo = Q::kTraits.fifo;
  sh.plan = &plan;
  sh.logs.resize(consumers);
  for (auto& l : sh.logs) l.reserve(c.items);
  sh.pin_errors.resize(m.threads);
  g_queue_shared = &sh;

  GbSpec spec;
  spec.name = m.backend;
  spec.threads = m.threads;
  spec.reps = c.reps;
  spec.iterations = 1;
  spec.manual_time = true;
  spec.setup = queue_setup;
  spec.teardown = queue_teardown;
  spec.counters = c.counters;
  const GbStats s =
      run_gb(spec, [&](benchmark::State& state) { queue_thread_body(state, *q, sh); });
  g_queue_shared = nullptr;

  m.ops = sh.validated_items;
  m.cpu_share = s.cpu_share;
  m.reps = s.reps;
  m.rep_values = s.values;
  m.counters = s.counters;
  std::string why = sh.failure;
  for (const auto& e : sh.pin_errors)
    if (why.empty() && !e.empty()) why = "placement failed: " + e;
  if (why.empty() && !s.ok) why = s.error;
  if (why.empty() && sh.calls == 0) why = "no run completed";
  if (why.empty() && q->size_approx() != 0)
    why = "queue not empty after all items were consumed (size_approx " +
          std::to_string(q->size_approx()) + ")";
  if (why.empty()) {
    m.valid = true;
    m.mops = s.median;
    m.mops_min = s.min;
    m.mops_max = s.max;
  } else {
    m.invalid_reason = why;
  }
  env.report(m);
  return {m};
}

}  // namespace kvlab::bench::detail
