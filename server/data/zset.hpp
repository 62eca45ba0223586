// The sorted-set payload: a sequential skiplist with span counts ordered by (score, member), plus a
// member -> node hash index and a dense vector of nodes. The same design as Redis's zset (zskiplist
// + dict, Pugh's skiplist with "span" fields so that rank queries are O(log N)); the vector is
// kvlab's addition so that ZSCAN has a cursor that survives concurrent changes at O(COUNT) per
// call.
//
// Layout of a node (one allocation; the levels follow the header):
//   struct Node { std::string member; double score; Node* backward; uint32 height; uint32 slot;
//                 Level level[height]; }       Level = { Node* forward; size_t span; }
//   level[i].span = how many level-0 steps level[i].forward is away (rank distance).
//
// Thread safety: none. A ZSet lives inside a Container and is touched only under its mutex
// (server/data/container.hpp); the random level generator is thread_local.
// Invariants:
//   1. Level-0 order is strictly increasing by (score, member bytes as unsigned); no NaN scores.
//   2. For every level i of every node x (and the header): sum of level-0 steps from x to
//      x->level[i].forward == x->level[i].span; for the last node on a level, span counts to
//      the end (so the header's spans add up to length_ + 1 - rank).
//   3. index_ holds exactly the members in the list, each mapped to its node; index_'s keys are
//      views of node->member (so a node is erased from index_ before it is freed).
//   4. slots_[n->slot] == n for every node; slots_.size() == length_.
// Work bounds: insert/erase/update/rank/by_rank/first-in-range are O(log N) expected; lookups of
// a member's score are O(1).
#pragma once

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/data/encoding_limits.hpp"

namespace kvlab::server {

// A score interval as ZRANGEBYSCORE/ZCOUNT take it: "(" makes a bound exclusive.
struct ScoreRange {
  double min = 0, max = 0;
  bool minex = false, maxex = false;
  bool gte_min(double v) const { return minex ? v > min : v >= min; }
  bool lte_max(double v) const { return maxex ? v < max : v <= max; }
  bool empty() const { return min > max || (min == max && (minex || maxex)); }
};

// A member interval as ZRANGEBYLEX takes it: "-" and "+" are the infinities, "[" inclusive and
// "(" exclusive bounds. Comparison is byte-wise (memcmp), as in Redis.
struct LexBound {
  enum Kind : std::uint8_t { kNegInf, kValue, kPosInf } kind = kValue;
  std::string value;
  bool exclusive = false;
};
struct LexRange {
  LexBound min, max;
  // <0, 0, >0 like memcmp, with the infinities outside every string.
  static int cmp(const LexBound& b, std::string_view s) {
    if (b.kind == LexBound::kNegInf) return -1;
    if (b.kind == LexBound::kPosInf) return 1;
    const int c = std::string_view(b.value).compare(s);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  bool gte_min(std::string_view v) const {
    const int c = cmp(min, v);  // min vs v
    return min.exclusive ? c < 0 : c <= 0;
  }
  bool lte_max(std::string_view v) const {
    const int c = cmp(max, v);
    return max.exclusive ? c > 0 : c >= 0;
  }
  bool empty() const {
    int c;
    if (min.kind == max.kind && min.kind != LexBound::kValue) {
      c = 0;
    } else if (min.kind == LexBound::kNegInf || max.kind == LexBound::kPosInf) {
      c = -1;
    } else if (min.kind == LexBound::kPosInf || max.kind == LexBound::kNegInf) {
      c = 1;
    } else {
      c = std::string_view(min.value).compare(max.value);
    }
    return c > 0 || (c == 0 && (min.exclusive || max.exclusive));
  }
};

class ZSkipList {
 public:
  static constexpr int kMaxLevel = 32;  // enough for 2^64 elements at p = 1/4

  struct Node;
  struct Level {
    Node* forward;
    std::size_t span;
  };
  struct Node {
    std::string member;
    double score;
    Node* backward;
    std::uint32_t height;
    std::uint32_t slot;  // position in ZSet::slots_ (owned by ZSet)
    Level* level() { return reinterpret_cast<Level*>(this + 1); }
    const Level* level() const { return reinterpret_cast<const Level*>(this + 1); }
    Node* next() const { return level()[0].forward; }
    Node* prev() const { return backward; }
  };
  static_assert(sizeof(Node) % alignof(Level) == 0, "levels follow the header, aligned");

  ZSkipList() : head_(make_node(kMaxLevel, 0, {})) {
    for (int i = 0; i < kMaxLevel; ++i) head_->level()[i] = {nullptr, 0};
  }
  ~ZSkipList() {
    Node* x = head_;
    while (x != nullptr) {
      Node* n = x->next();
      free_node(x);
      x = n;
    }
  }
  ZSkipList(const ZSkipList&) = delete;
  ZSkipList& operator=(const ZSkipList&) = delete;

  std::size_t size() const { return length_; }
  Node* first() const { return head_->level()[0].forward; }
  Node* last() const { return tail_; }

  // Inserts a new node. REQUIRES: (score, member) absent, score not NaN.
  Node* insert(double score, std::string_view member) {
    Node* x = make_node(random_level(), score, member);
    link(x);
    return x;
  }

  // Unlinks and frees the node with exactly (score, member). Returns false when absent.
  bool erase(double score, std::string_view member) {
    Node* update[kMaxLevel];
    Node* x = head_;
    for (int i = level_ - 1; i >= 0; --i) {
      while (x->level()[i].forward != nullptr && less(x->level()[i].forward, score, member))
        x = x->level()[i].forward;
      update[i] = x;
    }
    x = x->next();
    if (x == nullptr || x->score != score || x->member != member) return false;
    unlink(x, update);
    free_node(x);
    return true;
  }

  // Changes the score of node x (currently at cur_score) to new_score; the node keeps its address.
  // REQUIRES: x is in this list; new_score not NaN.
  void update_score(Node* x, double new_score) {
    Node* update[kMaxLevel];
    Node* p = head_;
    for (int i = level_ - 1; i >= 0; --i) {
      while (p->level()[i].forward != nullptr && less(p->level()[i].forward, x->score, x->member))
        p = p->level()[i].forward;
      update[i] = p;
    }
    // Still in order where it is: change in place (the common case for small increments).
    if ((x->backward == nullptr || x->backward->score < new_score) &&
        (x->next() == nullptr || x->next()->score > new_score)) {
      x->score = new_score;
      return;
    }
    unlink(x, update);
    x->score = new_score;
    link(x);
  }

  // 1-based rank of (score, member), 0 when absent.
  std::size_t rank(double score, std::string_view member) const {
    std::size_t r = 0;
    const Node* x = head_;
    for (int i = level_ - 1; i >= 0; --i) {
      while (x->level()[i].forward != nullptr &&
             !less_node_key(score, member, x->level()[i].forward)) {
        r += x->level()[i].span;
        x = x->level()[i].forward;
      }
      if (x != head_ && x->score == score && x->member == member) return r;
    }
    return 0;
  }
  std::size_t rank(const Node* n) const { return rank(n->score, n->member); }

  // The node at 1-based rank r, nullptr when r is 0 or beyond the end.
  Node* by_rank(std::size_t r) const {
    if (r == 0 || r > length_) return nullptr;
    std::size_t traversed = 0;
    Node* x = head_;
    for (int i = level_ - 1; i >= 0; --i) {
      while (x->level()[i].forward != nullptr && traversed + x->level()[i].span <= r) {
        traversed += x->level()[i].span;
        x = x->level()[i].forward;
      }
      if (traversed == r) return x;
    }
    return nullptr;
  }

  // First / last node whose score is in range; nullptr when none.
  Node* first_in(const ScoreRange& r) const {
    if (r.empty() || tail_ == nullptr || !r.gte_min(tail_->score) || !r.lte_max(first()->score))
      return nullptr;
    Node* x = head_;
    for (int i = level_ - 1; i >= 0; --i)
      while (x->level()[i].forward != nullptr && !r.gte_min(x->level()[i].forward->score))
        x = x->level()[i].forward;
    x = x->next();
    return (x != nullptr && r.lte_max(x->score)) ? x : nullptr;
  }
  Node* last_in(const ScoreRange& r) const {
    if (r.empty() || tail_ == nullptr || !r.gte_min(tail_->score) || !r.lte_max(first()->score))
      return nullptr;
    Node* x = head_;
    for (int i = level_ - 1; i >= 0; --i)
      while (x->level()[i].forward != nullptr && r.lte_max(x->level()[i].forward->score))
        x = x->level()[i].forward;
    return (x != head_ && r.gte_min(x->score)) ? x : nullptr;
  }
  // The same by member. Redis defines lex ranges only for sets whose scores are all equal; for
  // others it answers what its encoding's walk finds. With equal scores (the first and the last
  // node's are equal) the list is in member order and the descent below finds the bounds in
  // O(log N). Otherwise the bounds come from a linear walk, as Redis's listpack encoding (every
  // set of up to 128 members) walks: the first node from the head at or above min (none if it is
  // above max), the last from the tail at or below max (none if it is below min). O(N), and only
  // for mixed scores.
  bool uniform_scores() const { return tail_ == nullptr || first()->score == tail_->score; }
  Node* first_in(const LexRange& r) const {
    if (r.empty() || tail_ == nullptr || !r.gte_min(tail_->member) || !r.lte_max(first()->member))
      return nullptr;
    if (!uniform_scores()) {
      for (Node* x = first(); x != nullptr; x = x->next())
        if (r.gte_min(x->member)) return r.lte_max(x->member) ? x : nullptr;
      return nullptr;
    }
    Node* x = head_;
    for (int i = level_ - 1; i >= 0; --i)
      while (x->level()[i].forward != nullptr && !r.gte_min(x->level()[i].forward->member))
        x = x->level()[i].forward;
    x = x->next();
    return (x != nullptr && r.lte_max(x->member)) ? x : nullptr;
  }
  Node* last_in(const LexRange& r) const {
    if (r.empty() || tail_ == nullptr || !r.gte_min(tail_->member) || !r.lte_max(first()->member))
      return nullptr;
    if (!uniform_scores()) {
      for (Node* x = tail_; x != nullptr; x = x->backward)
        if (r.lte_max(x->member)) return r.gte_min(x->member) ? x : nullptr;
      return nullptr;
    }
    Node* x = head_;
    for (int i = level_ - 1; i >= 0; --i)
      while (x->level()[i].forward != nullptr && r.lte_max(x->level()[i].forward->member))
        x = x->level()[i].forward;
    return (x != head_ && r.gte_min(x->member)) ? x : nullptr;
  }

  // Checks invariants 1 and 2 (for tests); O(N log N) expected.
  bool check() const {
    std::unordered_map<const Node*, std::size_t> pos;  // 1-based level-0 position
    pos[head_] = 0;
    std::size_t n = 0;
    const Node* prev = nullptr;
    for (const Node* x = first(); x != nullptr; x = x->next()) {
      pos[x] = ++n;
      if (x->backward != prev) return false;
      if (prev != nullptr && !less(prev, x->score, x->member)) return false;
      if (std::isnan(x->score)) return false;
      prev = x;
    }
    if (n != length_ || tail_ != prev) return false;
    for (int i = 0; i < level_; ++i) {
      for (const Node* x = head_; x != nullptr; x = x->level()[i].forward) {
        const Node* f = x->level()[i].forward;
        if (x != head_ && static_cast<int>(x->height) <= i) return false;
        // a last span on a level counts the nodes after x (Redis's convention)
        const std::size_t want = f != nullptr ? pos.at(f) - pos.at(x) : length_ - pos.at(x);
        if (x->level()[i].span != want) return false;
      }
    }
    for (int i = level_; i < kMaxLevel; ++i)
      if (head_->level()[i].forward != nullptr) return false;
    return true;
  }

 private:
  static bool less(const Node* a, double score, std::string_view member) {
    return a->score < score || (a->score == score && std::string_view(a->member) < member);
  }
  // (score, member) < node?
  static bool less_node_key(double score, std::string_view member, const Node* n) {
    return score < n->score || (score == n->score && member < std::string_view(n->member));
  }

  static int random_level() {
    thread_local std::minstd_rand rng{std::random_device{}()};
    int level = 1;
    while (level < kMaxLevel && (rng() & 3u) == 0) ++level;  // p = 1/4, as Redis
    return level;
  }

  static Node* make_node(int height, double score, std::string_view member) {
    void* mem = ::operator new(sizeof(Node) + static_cast<std::size_t>(height) * sizeof(Level));
    try {
      return new (mem)
          Node{std::string(member), score, nullptr, static_cast<std::uint32_t>(height), 0};
    } catch (...) {
      ::operator delete(mem);
      throw;
    }
  }
  static void free_node(Node* n) {
    n->~Node();
    ::operator delete(n);
  }

  // Links node x (height and key set) at its place. REQUIRES: its key is absent.
  void link(Node* x) {
    Node* update[kMaxLevel];
    std::size_t rank[kMaxLevel];
    Node* p = head_;
    for (int i = level_ - 1; i >= 0; --i) {
      rank[i] = (i == level_ - 1) ? 0 : rank[i + 1];
      while (p->level()[i].forward != nullptr && less(p->level()[i].forward, x->score, x->member)) {
        rank[i] += p->level()[i].span;
        p = p->level()[i].forward;
      }
      update[i] = p;
    }
    const int h = static_cast<int>(x->height);
    if (h > level_) {
      for (int i = level_; i < h; ++i) {
        rank[i] = 0;
        update[i] = head_;
        head_->level()[i].span = length_;
      }
      level_ = h;
    }
    for (int i = 0; i < h; ++i) {
      x->level()[i].forward = update[i]->level()[i].forward;
      update[i]->level()[i].forward = x;
      x->level()[i].span = update[i]->level()[i].span - (rank[0] - rank[i]);
      update[i]->level()[i].span = (rank[0] - rank[i]) + 1;
    }
    for (int i = h; i < level_; ++i) update[i]->level()[i].span++;
    x->backward = (update[0] == head_) ? nullptr : update[0];
    if (x->next() != nullptr) {
      x->next()->backward = x;
    } else {
      tail_ = x;
    }
    ++length_;
  }

  // Unlinks x given its predecessors on every level (does not free it).
  void unlink(Node* x, Node** update) {
    for (int i = 0; i < level_; ++i) {
      if (update[i]->level()[i].forward == x) {
        update[i]->level()[i].span += x->level()[i].span - 1;
        update[i]->level()[i].forward = x->level()[i].forward;
      } else {
        update[i]->level()[i].span -= 1;
      }
    }
    if (x->next() != nullptr) {
      x->next()->backward = x->backward;
    } else {
      tail_ = x->backward;
    }
    while (level_ > 1 && head_->level()[level_ - 1].forward == nullptr) --level_;
    --length_;
  }

  Node* head_;
  Node* tail_ = nullptr;
  std::size_t length_ = 0;
  int level_ = 1;
};

// The sorted set: the skiplist for order and rank, index_ for O(1) member lookup, slots_ for
// random access and a stable scan order (see scan()).
class ZSet {
 public:
  using Node = ZSkipList::Node;
  enum class AddResult { kAdded, kUpdated, kUnchanged };

  ZSet() = default;
  ZSet(const ZSet&) = delete;
  ZSet& operator=(const ZSet&) = delete;

  std::size_t size() const { return list_.size(); }
  bool empty() const { return list_.size() == 0; }
  const ZSkipList& list() const { return list_; }

  // Adds a copy of every (member, score) of other; REQUIRES: this set is empty. Fresh nodes and
  // index entries: nothing is shared with other. O(N log N).
  void copy_from(const ZSet& other) {
    skiplist_ = other.skiplist_;
    index_.reserve(other.size());
    slots_.reserve(other.size());
    for (const Node* n = other.list_.first(); n != nullptr; n = n->next()) set(n->member, n->score);
  }

  const Node* find(std::string_view member) const {
    auto it = index_.find(member);
    return it == index_.end() ? nullptr : it->second;
  }
  std::optional<double> score(std::string_view member) const {
    const Node* n = find(member);
    return n != nullptr ? std::optional<double>(n->score) : std::nullopt;
  }

  // Redis 7.0 keeps a sorted set in a listpack until it outgrows zset-max-listpack-entries or
  // -value (encoding_limits(): 128 and 64 bytes by default), then in a skiplist for good. kvlab has
  // one layout, but the encoding shows in one reply: a listpack stores a score of -0 as the integer
  // 0, a skiplist keeps -0 (found by tests/compat). A set created for `elements` members of at most
  // `max_member` bytes starts as Redis would create it (ZADD, the STORE forms).
  void note_creation(std::size_t elements, std::size_t max_member) {
    const EncodingLimits lim = encoding_limits();
    if (elements > lim.zset_entries || max_member > lim.zset_value) skiplist_ = true;
  }

  // Redis would hold this set in a listpack: ZSCAN then answers every member at once, in order.
  bool listpack() const { return !skiplist_; }

  // Sets member's score, adding the member when absent. REQUIRES: score not NaN. -0 becomes 0
  // while Redis would hold the set in a listpack (see note_creation).
  AddResult set(std::string_view member, double score) {
    auto it = index_.find(member);
    if (!skiplist_) {
      const EncodingLimits lim = encoding_limits();
      if (member.size() > lim.zset_value || (it == index_.end() && size() + 1 > lim.zset_entries))
        skiplist_ = true;
    }
    if (score == 0 && !skiplist_) score = 0.0;
    if (it == index_.end()) {
      Node* n = list_.insert(score, member);
      n->slot = static_cast<std::uint32_t>(slots_.size());
      slots_.push_back(n);
      index_.emplace(std::string_view(n->member), n);
      return AddResult::kAdded;
    }
    if (it->second->score == score) return AddResult::kUnchanged;
    list_.update_score(it->second, score);
    return AddResult::kUpdated;
  }

  bool erase(std::string_view member) {
    auto it = index_.find(member);
    if (it == index_.end()) return false;
    Node* n = it->second;
    index_.erase(it);  // before the node (and the view's bytes) go away
    drop_slot(n);
    list_.erase(n->score, n->member);
    return true;
  }

  // Removes and returns the lowest (or highest) element; REQUIRES: !empty().
  std::pair<std::string, double> pop(bool max) {
    Node* n = max ? list_.last() : list_.first();
    std::pair<std::string, double> out{n->member, n->score};
    erase(out.first);
    return out;
  }

  // slots_ gives every node a dense position; erasing moves the last slot into the hole, so a
  // node only ever moves to a lower position. scan() walks positions from high to low: a member
  // present for a whole scan can only move to a position not yet visited, so it is returned (at
  // least once), which is Redis's SCAN guarantee, at O(count) per call.
  std::size_t slots() const { return slots_.size(); }
  const Node* slot(std::size_t i) const { return slots_[i]; }

 private:
  void drop_slot(Node* n) {
    Node* last = slots_.back();
    slots_[n->slot] = last;
    last->slot = n->slot;
    slots_.pop_back();
  }

  ZSkipList list_;
  std::unordered_map<std::string_view, Node*> index_;
  std::vector<Node*> slots_;
  bool skiplist_ = false;  // Redis would hold this set in a skiplist (see note_creation)
};

// Parses a score as Redis's getDoubleFromObject: strtod over the whole argument, no leading blank,
// not NaN, no overflow ("1e400" is refused; "inf", "-inf" and "+inf" are accepted).
inline bool parse_score(std::string_view s, double* out) {
  if (s.empty() || s.size() > 4096) return false;
  const unsigned char c0 = static_cast<unsigned char>(s[0]);
  if (c0 == ' ' || (c0 >= '\t' && c0 <= '\r')) return false;
  std::string copy(s);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(copy.c_str(), &end);
  if (static_cast<std::size_t>(end - copy.c_str()) != copy.size()) return false;
  if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || v == 0)) return false;
  if (std::isnan(v)) return false;
  *out = v;
  return true;
}

// Parses one bound of a score range as Redis's zslParseRange: an optional '(' then strtod up to
// the end of the C string (so "(" alone is an exclusive 0, as in Redis); NaN is refused.
inline bool parse_score_bound(std::string_view s, double* v, bool* exclusive) {
  *exclusive = !s.empty() && s[0] == '(';
  if (*exclusive) s.remove_prefix(1);
  std::string copy(s);
  char* end = nullptr;
  *v = std::strtod(copy.c_str(), &end);
  return *end == '\0' && !std::isnan(*v);
}

// Parses one bound of a lex range as Redis's zslParseLexRangeItem.
inline bool parse_lex_bound(std::string_view s, LexBound* b) {
  if (s.empty()) return false;
  switch (s[0]) {
    case '+':
    case '-':
      if (s.size() != 1) return false;
      b->kind = s[0] == '+' ? LexBound::kPosInf : LexBound::kNegInf;
      b->exclusive = true;
      return true;
    case '(':
    case '[':
      b->kind = LexBound::kValue;
      b->exclusive = s[0] == '(';
      b->value.assign(s.substr(1));
      return true;
    default:
      return false;
  }
}

// Formats a score as Redis 7.0 replies it (addReplyDouble in RESP2): printf's "%.17g", and "inf"
// and "-inf" spelled out. (Redis 7.2 switched to the shortest round-trip digits; 7.0 is kvlab's
// oracle.) buf needs 32 bytes. Returns the length.
inline std::size_t format_score(double v, char* buf) {
  if (std::isinf(v)) {
    const char* s = v > 0 ? "inf" : "-inf";
    const std::size_t n = std::strlen(s);
    std::memcpy(buf, s, n);
    return n;
  }
  const int n = std::snprintf(buf, 32, "%.17g", v);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

inline std::string format_score(double v) {
  char buf[40];
  return std::string(buf, format_score(v, buf));
}

}  // namespace kvlab::server
