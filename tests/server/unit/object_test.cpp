// Unit tests of the string Object (server/data/object.hpp): growable strings on the heap and in
// mappings of their own, appends in place against a std::string model, the zero fill past the
// end, the memory they count in large_bytes() (used_memory) and the fallback to the heap
// when the mapping budget is spent. No server, no sockets.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "server/data/object.hpp"

#include <doctest/doctest.h>

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "structures/common/pool.hpp"

namespace kvlab::server {
// Only strings are built here; a container Object never reaches release().
void destroy_container(Object*) noexcept { std::abort(); }
}  // namespace kvlab::server

using kvlab::server::Object;
namespace pool = kvlab::pool;

namespace {

constexpr std::size_t kLimit = std::size_t{512} << 20;  // proto-max-bulk-len's default
constexpr std::size_t kPage = 4096;

constexpr std::size_t kChunk = 32 * 1024;  // Object::kCommitChunk

// What mapped string o counts as used at length n: its mapping's pages up to the end of the
// 32 KiB chunk after the one its last byte is in (invariant 5), at most the whole mapping.
std::size_t committed_of(const Object* o, std::size_t n) {
  const std::size_t end = ((sizeof(Object) + n) / kChunk + 2) * kChunk;
  return std::min(end, sizeof(Object) + o->capacity());
}

// How many of the len bytes at p (page-aligned) are resident, by mincore(2).
std::size_t resident(const void* p, std::size_t len) {
  std::vector<unsigned char> vec((len + kPage - 1) / kPage);
  if (::mincore(const_cast<void*>(p), len, vec.data()) != 0) return 0;
  std::size_t n = 0;
  for (unsigned char v : vec) n += (v & 1) != 0 ? kPage : 0;
  return n;
}

// large_bytes() with this thread's share folded in (it is otherwise up to 32 KiB stale).
std::size_t large_bytes() {
  pool::fold_large_bytes();
  return pool::large_bytes();
}

std::string filler(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

// Appends add to o in place when it fits, else to a new growable copy (as APPEND does); returns
// the Object that now holds the value.
Object* append(Object* o, std::string_view add, std::size_t limit = kLimit) {
  if (o->appendable(add.size())) {
    o->append_in_place(add);
    return o;
  }
  Object* next = Object::make_growable(o->str(), add, limit);
  o->release();
  return next;
}

}  // namespace

TEST_SUITE("server") {
  TEST_CASE("growable strings are mapped from 32 KiB on, with room ahead of them") {
    const std::string small = filler(20000, 1), large = filler(40000, 2);
    Object* h = Object::make_growable(small, "x", kLimit);
    CHECK_FALSE(h->mapped());
    CHECK(h->capacity() >= 2 * h->size());
    CHECK(h->str() == small + "x");
    Object* m = Object::make_growable(large, "y", kLimit);
    CHECK(m->mapped());
    CHECK(m->str() == large + "y");
    CHECK(m->capacity() >= 16 * m->size());  // kMapAhead
    CHECK(m->capacity() >= (std::size_t{8} << 20) - sizeof(Object));  // kMapFirst
    CHECK((sizeof(Object) + m->capacity()) % kPage == 0);
    h->release();
    m->release();
  }

  // The pages ahead of the bytes are committed by populate() (resident before any write reaches
  // them) and counted, up to two chunks ahead; the rest of the reservation is neither.
  TEST_CASE("appends to a mapped string keep every byte and commit two chunks ahead of them") {
    const std::size_t before = large_bytes(), blocks = pool::mapped_blocks();
    std::string model = filler(40000, 3);
    Object* o = Object::make_growable(model, {}, kLimit);
    REQUIRE(o->mapped());
    CHECK(pool::mapped_blocks() == blocks + 1);
    CHECK(large_bytes() - before == committed_of(o, model.size()));
    CHECK(resident(o, committed_of(o, model.size())) == committed_of(o, model.size()));
    CHECK(resident(o, 1 << 20) == committed_of(o, model.size()));
    Object* const first = o;
    std::mt19937 rng(4);
    for (int i = 0; i < 2000; ++i) {
      const std::string add = filler(1 + rng() % 700, static_cast<unsigned>(i));
      o = append(o, add);
      model += add;
      REQUIRE(o->size() == model.size());
      REQUIRE(large_bytes() - before == committed_of(o, model.size()));
      REQUIRE(committed_of(o, model.size()) - (sizeof(Object) + model.size()) >= kChunk);
      REQUIRE(committed_of(o, model.size()) - (sizeof(Object) + model.size()) <= 2 * kChunk);
    }
    // Resident: exactly what is committed (the zero pages past it were never touched).
    CHECK(resident(o, 4 << 20) == committed_of(o, model.size()));
    CHECK(o == first);  // about 700 KB appended within the reservation: never copied
    CHECK(o->str() == model);
    CHECK(o->footprint() == committed_of(o, model.size()));
    o->release();
    CHECK(large_bytes() == before);
    CHECK(pool::mapped_blocks() == blocks);
  }

  TEST_CASE("a full reservation moves the value to a new, larger one") {
    // A 60 KB string limit: the reservation is capped near it, so it fills.
    constexpr std::size_t limit = 60000;
    const std::size_t before = large_bytes();
    std::string model = filler(33000, 5);
    Object* o = Object::make_growable(model, {}, limit);
    REQUIRE(o->mapped());
    CHECK(o->capacity() >= limit);
    CHECK(o->capacity() < limit + kPage);
    Object* const first = o;
    while (model.size() + 1000 <= limit) {
      const std::string add = filler(1000, static_cast<unsigned>(model.size()));
      o = append(o, add, limit);
      model += add;
    }
    CHECK(o == first);
    const std::string tail = filler(5000, 6);  // past the reservation (and the limit: the
    o = append(o, tail, limit);                // caller checks that, not the Object)
    model += tail;
    CHECK(o != first);
    CHECK(o->mapped());
    CHECK(o->str() == model);
    CHECK(large_bytes() - before == committed_of(o, model.size()));
    o->release();
    CHECK(large_bytes() == before);
  }

  TEST_CASE("zero fill past the end of a string, mapped or not") {
    for (const std::size_t n : {std::size_t{1000}, std::size_t{50000}}) {
      CAPTURE(n);
      // A heap block that held other bytes before: the fill must write its zeros.
      Object* junk = Object::make_growable(std::string(2 * n, '#'), {}, kLimit);
      junk->release();
      const std::string head = filler(n, 7);
      Object* o = Object::make_growable(head, {}, kLimit);
      const std::size_t gap = o->capacity() - n - 3 < 300000 ? o->capacity() - n - 3 : 300000;
      REQUIRE(o->appendable(gap + 3));
      o->append_in_place("end", gap);
      const std::string_view v = o->str();
      REQUIRE(v.size() == n + gap + 3);
      CHECK(v.substr(0, n) == head);
      CHECK(v.substr(n, gap).find_first_not_of('\0') == std::string_view::npos);
      CHECK(v.substr(n + gap) == "end");
      o->release();
    }
  }

  // Each thread counts its large blocks in a thread-local delta (pool.hpp); a worker that exits
  // folds it into the total (pool::close at thread exit), so used_memory keeps the blocks it left.
  TEST_CASE("a thread's share of large_bytes() is folded in when it exits") {
    // Under AddressSanitizer the pool bypasses its cache, so no exit drain (and no fold) is
    // registered for the thread; the server is never built so.
    if (pool::kBypass) return;
    const std::size_t before = large_bytes();
    void* block = nullptr;
    std::thread t([&] {
      pool::deallocate(pool::allocate(64), 64);  // a cached block: the exit drain is registered
      block = pool::allocate(10000);             // under the fold threshold: stays thread-local
    });
    t.join();
    CHECK(pool::large_bytes() == before + 10000);
    pool::deallocate(block, 10000);
    CHECK(large_bytes() == before);
  }

  TEST_CASE("with the mapping budget spent, long strings grow on the heap") {
    const std::size_t blocks = pool::mapped_blocks(), before = large_bytes();
    pool::set_mapped_block_limit(blocks);
    const std::string large = filler(100000, 8);
    Object* o = Object::make_growable(large, "z", kLimit);
    CHECK_FALSE(o->mapped());
    CHECK(o->str() == large + "z");
    CHECK(o->capacity() >= 2 * o->size());
    CHECK(pool::mapped_blocks() == blocks);
    pool::set_mapped_block_limit(pool::kMaxMappedBlocks);
    Object* m = Object::make_growable(large, "z", kLimit);
    CHECK(m->mapped());
    o->release();
    m->release();
    CHECK(large_bytes() == before);
    CHECK(pool::mapped_blocks() == blocks);
  }
}
