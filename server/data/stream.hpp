// The stream payload (Redis 7.0's stream type): entries ordered by ID, each a list of field/value
// pairs, plus the metadata Redis 7.0 keeps for XINFO and XSETID (last generated ID, entries
// added, max deleted entry ID, first ID).
//
// Redis stores a stream as a radix tree of listpack "nodes", each holding up to
// stream-node-max-entries (100) entries and about stream-node-max-bytes (4096) bytes, delta-coded
// against the node's first ("master") entry. The layout is visible to clients: approximate
// trimming (MAXLEN ~ / MINID ~) removes only whole nodes, and XINFO STREAM reports the node
// count. kvlab keeps the entries in an ordered map and, beside it, a model of Redis's nodes: for
// each node its master ID and fields, its last ID, its live and deleted counts and the byte size
// its listpack would have. Appends decide node boundaries from that size exactly as Redis does
// (listpack element sizes are computed, not stored), so trimming removes what Redis removes.
//
// Listpack sizes (Redis's listpack.c format): a 6-byte header and a 1-byte end mark; an element
// is its encoding plus a back-length of 1-5 bytes. A string that reads as a 64-bit integer
// (string2ll rules) is stored as an integer of 1, 2, 3, 4, 5 or 9 bytes; other strings take 1, 2
// or 5 header bytes by length (< 64, < 4096, more). A node starts with its master entry: count,
// deleted, number of fields, the fields, a 0 terminator; each entry is flags, ms delta, seq delta,
// [number of fields and fields and values | values only when its fields equal the master's],
// and its element count.
//
// Thread safety: none; a Stream lives inside a Container and is touched only under its mutex.
// Invariants:
//   1. entries_ holds the live entries; nodes_ covers them: every live entry lies in the node with
//      the greatest master ID <= its ID, and the nodes' live counts sum to entries_.size().
//   2. A node's last_ is the ID of the last entry appended to it (live or deleted); node masters
//      and lasts increase along the map; last_id_ >= every ID ever added.
//   3. created_ is set by the first successful XADD and stays set: an emptied stream still exists.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/data/container.hpp"
#include "server/util/strings_util.hpp"

namespace kvlab::server {

struct StreamId {
  std::uint64_t ms = 0;
  std::uint64_t seq = 0;
  friend auto operator<=>(const StreamId&, const StreamId&) = default;

  static constexpr StreamId max() {
    return {std::numeric_limits<std::uint64_t>::max(), std::numeric_limits<std::uint64_t>::max()};
  }
  // The next ID (false, and 0-0, past the maximum), as Redis's streamIncrID.
  bool incr() {
    if (seq != std::numeric_limits<std::uint64_t>::max()) {
      ++seq;
      return true;
    }
    if (ms == std::numeric_limits<std::uint64_t>::max()) {
      ms = seq = 0;
      return false;
    }
    ++ms;
    seq = 0;
    return true;
  }
  // The previous ID (false, and the maximum, before 0-0), as streamDecrID.
  bool decr() {
    if (seq != 0) {
      --seq;
      return true;
    }
    if (ms == 0) {
      *this = max();
      return false;
    }
    --ms;
    seq = std::numeric_limits<std::uint64_t>::max();
    return true;
  }
  std::string str() const { return std::to_string(ms) + "-" + std::to_string(seq); }
  // As Redis keys its radix tree and writes IDs in RDB: ms then seq, 8 bytes each, big-endian.
  std::string raw() const {
    std::string k(16, '\0');
    for (int i = 0; i < 8; ++i) {
      k[i] = static_cast<char>(ms >> (56 - 8 * i));
      k[8 + i] = static_cast<char>(seq >> (56 - 8 * i));
    }
    return k;
  }
};

// How XADD/XTRIM trim (streamAddTrimArgs without the ID part).
struct StreamTrim {
  enum Strategy { kNone, kMaxLen, kMinId };
  Strategy strategy = kNone;
  bool approx = false;
  std::uint64_t maxlen = 0;
  StreamId minid;
  std::int64_t limit = 0;  // 0: unlimited
};

// A consumer group (Redis 7.0's streamCG): its last delivered ID, its logical read counter (-1:
// unknown), the pending entries list (entry ID -> who has it, since when, how many deliveries),
// and its consumers, each with its own view of the PEL. Maps are ordered like Redis's rax.
struct StreamNack {
  std::int64_t delivery_time = 0;
  std::uint64_t delivery_count = 1;
  std::string consumer;
};
struct StreamConsumer {
  std::int64_t seen_time = 0;
  std::set<StreamId> pel;
};
struct StreamGroup {
  StreamId last_id;
  std::int64_t entries_read = -1;
  std::map<StreamId, StreamNack> pel;
  std::map<std::string, StreamConsumer, std::less<>> consumers;
};

class Stream {
 public:
  // Redis 7.0's defaults (stream-node-max-entries, stream-node-max-bytes; CONFIG SET changes
  // the values append() is given).
  static constexpr std::uint64_t kNodeMaxEntries = 100;
  static constexpr std::size_t kNodeMaxBytes = 4096;
  static constexpr std::size_t kListpackMaxSize = std::size_t{1} << 30;

  using Fields = std::vector<std::string>;  // field, value, field, value...

  Stream() = default;
  Stream(const Stream&) = default;
  Stream& operator=(const Stream&) = default;

  // The container protocol treats an empty payload as absent; a stream exists once created.
  bool empty() const { return !created_; }
  void mark_created() { created_ = true; }

  std::uint64_t length() const { return entries_.size(); }
  const StreamId& last_id() const { return last_id_; }
  // The ID of the last entry XADD added, even if trimmed since; XSETID moves last_id() only.
  // A blocked XREAD is served when this passes its ID: Redis 7.0 wakes stream readers on XADD.
  const StreamId& last_added() const { return last_added_; }
  const StreamId& max_deleted() const { return max_deleted_; }
  const StreamId& first_id() const { return first_id_; }
  std::uint64_t entries_added() const { return entries_added_; }
  std::size_t node_count() const { return nodes_.size(); }
  const std::map<StreamId, Fields>& entries() const { return entries_; }

  void set_last_id(StreamId id) { last_id_ = id; }
  void set_entries_added(std::uint64_t n) { entries_added_ = n; }
  void set_max_deleted(StreamId id) { max_deleted_ = id; }

  // The last live entry's ID (0-0 when empty), as streamLastValidID.
  StreamId last_valid_id() const {
    return entries_.empty() ? StreamId{} : entries_.rbegin()->first;
  }

  // Appends an entry with the given ID (which the caller checked is > last_id()). `fv` holds
  // field, value... A node is closed (and a new one started) as Redis closes it: when its
  // listpack plus the new entry's raw bytes reach max_bytes (0: 1 GiB), or it holds max_entries
  // entries, deleted ones included (0: no limit).
  void append(StreamId id, std::span<const std::string_view> fv,
              std::uint64_t max_entries = kNodeMaxEntries, std::size_t max_bytes = kNodeMaxBytes) {
    if (max_bytes == 0 || max_bytes > kListpackMaxSize) max_bytes = kListpackMaxSize;
    std::size_t totelelen = 0;
    for (auto s : fv) totelelen += s.size();
    Node* tail = nodes_.empty() ? nullptr : &nodes_.rbegin()->second;
    if (tail != nullptr && (tail->listpack_bytes() + totelelen >= max_bytes ||
                            (max_entries != 0 && tail->live + tail->deleted >= max_entries))) {
      tail = nullptr;
    }
    if (tail == nullptr) {
      Fields master;
      for (std::size_t i = 0; i < fv.size() / 2; ++i) master.emplace_back(fv[2 * i]);
      tail = &start_node(id, std::move(master));
    }
    tail->bytes += entry_bytes(*tail, id, fv);
    tail->live += 1;
    tail->last = id;

    Fields f(fv.begin(), fv.end());
    entries_.emplace(id, std::move(f));
    if (entries_.size() == 1) first_id_ = id;
    last_id_ = id;
    last_added_ = id;
    ++entries_added_;
  }

  // Deletes the live entry with this ID; false when there is none. A node whose last live entry
  // goes is freed, as Redis frees its listpack.
  bool erase(StreamId id) {
    auto it = entries_.find(id);
    if (it == entries_.end()) return false;
    entries_.erase(it);
    auto n = std::prev(nodes_.upper_bound(id));
    if (n->second.live == 1) {
      nodes_.erase(n);
    } else {
      --n->second.live;
      ++n->second.deleted;
    }
    return true;
  }

  // After XDEL: the first ID follows the first live entry (0-0 when empty), as Redis 7.0 does.
  void refresh_first_id() { first_id_ = entries_.empty() ? StreamId{} : entries_.begin()->first; }

  // streamTrim: whole nodes from the head while they fit the strategy; then, unless approximate,
  // entries of the first remaining node. Returns the number of entries removed.
  std::int64_t trim(const StreamTrim& t) {
    if (t.strategy == StreamTrim::kNone) return 0;
    std::int64_t deleted = 0;
    for (auto n = nodes_.begin(); n != nodes_.end();) {
      if (t.strategy == StreamTrim::kMaxLen && length() <= t.maxlen) break;
      Node& node = n->second;
      const auto live = static_cast<std::int64_t>(node.live);
      if (t.limit != 0 && deleted + live > t.limit) break;
      const bool remove_node = t.strategy == StreamTrim::kMaxLen ? length() - node.live >= t.maxlen
                                                                 : node.last < t.minid;
      if (remove_node) {
        auto next = std::next(n);
        const StreamId end = next == nodes_.end() ? StreamId::max() : next->first;
        auto e = entries_.lower_bound(n->first);
        while (e != entries_.end() && (next == nodes_.end() || e->first < end))
          e = entries_.erase(e);
        deleted += live;
        nodes_.erase(n);
        n = next;
        continue;
      }
      if (t.approx) break;
      // Mark entries of this node deleted from its head until the strategy is met; the node
      // keeps its place (and its size), as Redis only flags them.
      auto e = entries_.lower_bound(n->first);
      while (e != entries_.end() && e->first <= node.last) {
        const bool stop =
            t.strategy == StreamTrim::kMaxLen ? length() <= t.maxlen : e->first >= t.minid;
        if (stop) break;
        e = entries_.erase(e);
        --node.live;
        ++node.deleted;
        ++deleted;
      }
      break;
    }
    refresh_first_id();
    return deleted;
  }

  // ---- DUMP and RESTORE (server/data/rdb_dump.cpp writes and rdb_load.cpp reads Redis's node listpacks) ----

  // Visits the nodes in ID order: fn(master ID, master fields, live entries of the node as a
  // [begin, end) range of entries()).
  template <class F>
  void for_each_node(F&& fn) const {
    for (auto n = nodes_.begin(); n != nodes_.end(); ++n) {
      auto next = std::next(n);
      const auto begin = entries_.lower_bound(n->first);
      const auto end = next == nodes_.end() ? entries_.end() : entries_.lower_bound(next->first);
      fn(n->first, std::as_const(n->second.master_fields), begin, end);
    }
  }
  // Whether an entry's fields (field, value...) are its node's master fields, in order: such an
  // entry is written without them (Redis's SAMEFIELDS flag).
  static bool same_fields(const Fields& master, std::span<const std::string> fv) {
    if (master.size() * 2 != fv.size()) return false;
    for (std::size_t i = 0; i < master.size(); ++i)
      if (master[i] != fv[2 * i]) return false;
    return true;
  }

  // Rebuilding a stream from a payload. The loader checks the order first: nodes by increasing
  // master ID, entries by increasing ID, each at or after its node's master and before the next
  // node's; every node has a live entry. load_node() starts a node, load_entry() appends an entry
  // (live, or deleted: it then only counts toward its node's size and deleted count, as in
  // Redis's listpack), load_meta() sets what XINFO reports and marks the stream created.
  void load_node(StreamId master, Fields master_fields) {
    start_node(master, std::move(master_fields));
  }
  void load_entry(StreamId id, bool deleted, std::span<const std::string_view> fv) {
    Node& n = nodes_.rbegin()->second;
    n.bytes += entry_bytes(n, id, fv);
    n.last = id;
    if (deleted) {
      ++n.deleted;
      return;
    }
    ++n.live;
    entries_.emplace(id, Fields(fv.begin(), fv.end()));
  }
  void load_meta(StreamId last_id, StreamId first_id, StreamId max_deleted,
                 std::uint64_t entries_added) {
    last_id_ = last_id;
    last_added_ = last_id;
    first_id_ = first_id;
    max_deleted_ = max_deleted;
    entries_added_ = entries_added;
    created_ = true;
  }

  std::map<std::string, StreamGroup, std::less<>>& groups() { return groups_; }
  const std::map<std::string, StreamGroup, std::less<>>& groups() const { return groups_; }

  // streamRangeHasTombstones: whether a deleted entry may lie in [start, end].
  bool range_has_tombstones(StreamId start, StreamId end = StreamId::max()) const {
    if (entries_.empty() || max_deleted_ == StreamId{}) return false;
    if (first_id_ > max_deleted_) return false;
    return start <= max_deleted_ && max_deleted_ <= end;
  }
  // streamEstimateDistanceFromFirstEverEntry: the logical read counter of id, -1 when unknown.
  std::int64_t estimate_distance(StreamId id) const {
    if (entries_added_ == 0) return 0;
    const auto added = static_cast<std::int64_t>(entries_added_);
    const auto len = static_cast<std::int64_t>(entries_.size());
    if (entries_.empty() && id <= last_id_) return added;
    if (id == last_id_) return added;
    if (id > last_id_) return -1;
    if (max_deleted_ == StreamId{} || max_deleted_ < first_id_) {
      if (id < first_id_) return added - len;
      if (id == first_id_) return added - len + 1;
    }
    return -1;
  }
  // A group's lag (XINFO GROUPS); false when it cannot be known.
  bool lag(const StreamGroup& g, std::int64_t* out) const {
    const auto added = static_cast<std::int64_t>(entries_added_);
    if (entries_added_ == 0) {
      *out = 0;
      return true;
    }
    if (g.entries_read != -1 && !range_has_tombstones(g.last_id)) {
      *out = added - g.entries_read;
      return true;
    }
    const std::int64_t read = estimate_distance(g.last_id);
    if (read == -1) return false;
    *out = added - read;
    return true;
  }

  // The number of radix-tree nodes Redis's rax would hold for the node keys (master IDs as 16
  // big-endian bytes), counted for a fully compressed tree: the root, every branching prefix,
  // every child of a branching prefix, and every key.
  std::size_t radix_tree_nodes() const {
    if (nodes_.empty()) return 1;
    std::vector<std::string> keys;
    keys.reserve(nodes_.size());
    for (const auto& [id, node] : nodes_) keys.push_back(id.raw());
    std::set<std::string> positions;
    positions.insert(std::string());
    std::set<std::string> branches;
    for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
      std::size_t l = 0;
      while (l < 16 && keys[i][l] == keys[i + 1][l]) ++l;
      branches.insert(keys[i].substr(0, l));
    }
    for (const auto& k : keys) {
      positions.insert(k);
      for (std::size_t l = 0; l < 16; ++l) {
        if (branches.count(k.substr(0, l)) != 0) {
          positions.insert(k.substr(0, l));
          positions.insert(k.substr(0, l + 1));
        }
      }
    }
    return positions.size();
  }

 private:
  struct Node {
    StreamId master;
    StreamId last;
    std::vector<std::string> master_fields;
    std::uint64_t live = 0;
    std::uint64_t deleted = 0;
    // The size of Redis's listpack for this node, but for its count and deleted fields, whose
    // encodings grow with them (listpack_bytes() adds them).
    std::size_t bytes = 0;
    std::size_t listpack_bytes() const {
      return bytes + int_size(static_cast<std::int64_t>(live)) +
             int_size(static_cast<std::int64_t>(deleted));
    }
  };

  Node& start_node(StreamId master, Fields master_fields) {
    Node n;
    n.master = master;
    n.bytes = 7 + int_size(static_cast<std::int64_t>(master_fields.size())) + int_size(0);
    for (const auto& f : master_fields) n.bytes += str_size(f);
    n.master_fields = std::move(master_fields);
    return nodes_.insert_or_assign(master, std::move(n)).first->second;
  }
  // The listpack bytes of one entry of node n: flags, ID deltas, [field count and fields],
  // values, element count.
  static std::size_t entry_bytes(const Node& n, StreamId id, std::span<const std::string_view> fv) {
    const std::size_t nfields = fv.size() / 2;
    bool same = n.master_fields.size() == nfields;
    for (std::size_t i = 0; i < nfields && same; ++i) same = n.master_fields[i] == fv[2 * i];
    std::size_t bytes = int_size(same ? 2 : 0) +
                        int_size(static_cast<std::int64_t>(id.ms - n.master.ms)) +
                        int_size(static_cast<std::int64_t>(id.seq - n.master.seq));
    std::int64_t lp_count = static_cast<std::int64_t>(nfields) + 3;
    if (!same) {
      bytes += int_size(static_cast<std::int64_t>(nfields));
      lp_count += static_cast<std::int64_t>(nfields) + 1;
    }
    for (std::size_t i = 0; i < nfields; ++i) {
      if (!same) bytes += str_size(fv[2 * i]);
      bytes += str_size(fv[2 * i + 1]);
    }
    return bytes + int_size(lp_count);
  }

  // Listpack back-length bytes for an element whose encoding takes l bytes.
  static std::size_t backlen(std::size_t l) {
    if (l <= 127) return 1;
    if (l < 16383) return 2;
    if (l < 2097151) return 3;
    if (l < 268435455) return 4;
    return 5;
  }
  static std::size_t int_size(std::int64_t v) {
    std::size_t l;
    if (v >= 0 && v <= 127) {
      l = 1;
    } else if (v >= -4096 && v <= 4095) {
      l = 2;
    } else if (v >= -32768 && v <= 32767) {
      l = 3;
    } else if (v >= -8388608 && v <= 8388607) {
      l = 4;
    } else if (v >= -2147483648LL && v <= 2147483647LL) {
      l = 5;
    } else {
      l = 9;
    }
    return l + backlen(l);
  }
  static std::size_t str_size(std::string_view s) {
    std::int64_t v = 0;
    if (s.size() <= 21 && parse_i64(s, &v)) return int_size(v);
    const std::size_t l = s.size() + (s.size() < 64 ? 1 : s.size() < 4096 ? 2 : 5);
    return l + backlen(l);
  }

  std::map<StreamId, Fields> entries_;
  std::map<StreamId, Node> nodes_;  // by master ID
  StreamId last_id_;
  StreamId last_added_;
  StreamId first_id_;
  StreamId max_deleted_;
  std::uint64_t entries_added_ = 0;
  std::map<std::string, StreamGroup, std::less<>> groups_;
  bool created_ = false;
};

using StreamObject = Container<Stream, ObjectType::kStream>;

// A deep copy for COPY (see Container::clone): nullptr when src is dead or not yet created.
inline StreamObject* clone_stream(StreamObject& src) {
  return src.clone([](const Stream& from, Stream& to) { to = from; });
}

}  // namespace kvlab::server
