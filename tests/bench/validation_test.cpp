// kvlab bench reports a backend that lies as invalid, never as a number.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "structures/hash/locked.hpp"
#include "tools/bench/map_workload.hpp"
#include "tools/bench/queue_workload.hpp"

namespace {

using kvlab::BackendTraits;
using kvlab::MapOptions;
using kvlab::Progress;
using kvlab::Reclamation;

constexpr BackendTraits test_traits(std::string_view name) {
  return BackendTraits{.name = name,
                       .family = "hash",
                       .progress = Progress::blocking,
                       .reclamation = Reclamation::immediate,
                       .reference = "test only",
                       .summary = "deliberately broken"};
}

// Test-only backends: hash/locked with one operation that sometimes lies.
enum class Lie { none, insert_claims_success, erase_denies_success, find_wrong_value };

template <Lie kLie>
class Broken : public kvlab::hash::Locked<std::uint64_t> {
  using Base = kvlab::hash::Locked<std::uint64_t>;

 public:
  static constexpr BackendTraits kTraits = test_traits("test/broken");
  explicit Broken(const MapOptions& o) : Base(o) {}

  bool insert(std::string_view k, const std::uint64_t& v) {
    if (kLie == Lie::insert_claims_success && tick() && !Base::find(k, [](const auto&) {}))
      return true;  // claims an insert that never happened
    return Base::insert(k, v);
  }
  bool erase(std::string_view k) {
    const bool erased = Base::erase(k);
    if (kLie == Lie::erase_denies_success && erased && tick()) return false;
    return erased;
  }
  template <class F>
  bool find(std::string_view k, F&& visitor) {
    if (kLie == Lie::find_wrong_value && tick()) {
      const std::uint64_t garbage = 12345;
      return Base::find(k, [&](const std::uint64_t&) { visitor(garbage); });
    }
    return Base::find(k, std::forward<F>(visitor));
  }

 private:
  bool tick() { return calls_.fetch_add(1, std::memory_order_relaxed) % 101 == 100; }
  std::atomic<std::uint64_t> calls_{0};
};

template <class M>
kvlab::bench::Measurement run_one(unsigned threads, unsigned batch = 1) {
  kvlab::bench::BenchConfig c;
  c.batch = batch;
  c.backends = "test/broken";
  c.threads = {threads};
  c.keys = 2000;
  c.update_pct = 50;
  c.duration_s = 0.02;
  c.reps = 2;
  c.quiet = true;
  kvlab::bench::detail::RunEnv env(c);
  return kvlab::bench::detail::measure_map<std::uint64_t, M>(
      M::kTraits, [](const MapOptions& o) { return std::make_unique<M>(o); }, threads, false, env);
}

// Test-only queues: a mutex-protected deque that drops, duplicates or reorders items.
enum class QueueLie { drop, duplicate, swap_pairs };

template <QueueLie kLie>
struct BrokenQueue {
  template <class T>
  class Q {
   public:
    using value_type = T;
    static constexpr BackendTraits kTraits{.name = "test/broken-queue",
                                           .family = "queue",
                                           .progress = Progress::blocking,
                                           .reclamation = Reclamation::immediate,
                                           .reference = "test only",
                                           .summary = "deliberately broken",
                                           .fifo = true};
    explicit Q(const kvlab::QueueOptions&) {}
    bool push(const T& v) {
      std::lock_guard g(mu_);
      ++pushes_;
      if (kLie == QueueLie::drop && pushes_ % 1000 == 0) return true;  // claims it, drops it
      if (kLie == QueueLie::swap_pairs) {  // every two pushes enqueue as (second, first)
        if (!held_) {
          held_ = v;
          return true;
        }
        items_.push_back(v);
        items_.push_back(*held_);
        held_.reset();
        return true;
      }
      items_.push_back(v);
      if (kLie == QueueLie::duplicate && pushes_ % 1000 == 0) items_.push_back(v);
      return true;
    }
    std::optional<T> try_pop() {
      std::lock_guard g(mu_);
      if (items_.empty()) return std::nullopt;
      T v = items_.front();
      items_.erase(items_.begin());
      return v;
    }
    std::size_t size_approx() {
      std::lock_guard g(mu_);
      return items_.size();
    }

   private:
    std::mutex mu_;
    std::vector<T> items_;
    std::optional<T> held_;
    std::uint64_t pushes_ = 0;
  };
};

template <template <class> class B>
kvlab::bench::Measurement run_queue(std::uint64_t items) {
  kvlab::bench::BenchConfig c;
  c.items = items;
  c.reps = 1;
  c.quiet = true;
  kvlab::bench::detail::RunEnv env(c);
  return kvlab::bench::detail::run_queue_backend<B>(env, 1, 1).at(0);
}

}  // namespace

TEST_CASE("an honest backend is reported valid with a number") {
  const auto m = run_one<Broken<Lie::none>>(2);
  CHECK(m.valid);
  CHECK(m.invalid_reason == "");
  CHECK(m.mops > 0);
  CHECK(m.ops > 0);
}

TEST_CASE("windows of drawn-ahead operations (--batch) are validated like single ones") {
  const auto ok = run_one<Broken<Lie::none>>(2, 8);
  CHECK(ok.valid);
  CHECK(ok.mops > 0);
  const auto bad = run_one<Broken<Lie::find_wrong_value>>(1, 8);
  CHECK_FALSE(bad.valid);
  const auto lost = run_one<Broken<Lie::insert_claims_success>>(2, 32);
  CHECK_FALSE(lost.valid);
}

TEST_CASE("a backend whose insert sometimes claims success without inserting is invalid") {
  const auto m = run_one<Broken<Lie::insert_claims_success>>(1);
  CHECK_FALSE(m.valid);
  CHECK(m.mops == 0);
  MESSAGE(m.invalid_reason);
  CHECK(m.invalid_reason.find("size") != std::string::npos);
}

TEST_CASE("a backend whose erase sometimes denies a removal is invalid") {
  const auto m = run_one<Broken<Lie::erase_denies_success>>(2);
  CHECK_FALSE(m.valid);
  CHECK(m.mops == 0);
}

TEST_CASE("a backend whose find sometimes shows another value is invalid") {
  const auto m = run_one<Broken<Lie::find_wrong_value>>(1);
  CHECK_FALSE(m.valid);
  CHECK(m.invalid_reason.find("finds saw a value") != std::string::npos);
}

// The queue checks: a queue that loses an item is reported invalid (after the consumers' 2 s
// give-up), one that duplicates or reorders a producer's items too.
TEST_CASE("a queue that silently drops items is invalid: lost items") {
  const auto m = run_queue<BrokenQueue<QueueLie::drop>::Q>(5000);
  CHECK_FALSE(m.valid);
  CHECK(m.invalid_reason.find("lost items") != std::string::npos);
}

TEST_CASE("a queue that hands out an item twice is invalid") {
  const auto m = run_queue<BrokenQueue<QueueLie::duplicate>::Q>(5000);
  CHECK_FALSE(m.valid);
  MESSAGE(m.invalid_reason);
}

TEST_CASE("a queue that declares FIFO but swaps a producer's items is invalid") {
  const auto m = run_queue<BrokenQueue<QueueLie::swap_pairs>::Q>(5000);
  CHECK_FALSE(m.valid);
  CHECK(m.invalid_reason.find("FIFO") != std::string::npos);
}
