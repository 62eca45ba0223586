#include "tools/load/workload.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "tools/load/cluster.hpp"

namespace kvlab::load {
namespace {

std::string bulk(std::string_view s) {
  std::string out(1, '$');
  out += std::to_string(s.size());
  out += "\r\n";
  out.append(s);
  out += "\r\n";
  return out;
}

}  // namespace

bool is_read_command(std::string_view name) {
  static constexpr std::string_view kReads[] = {
      "GET",    "GETEX",  "GETDEL", "HGET",   "HGETALL",  "HKEYS",        "HVALS",
      "LINDEX", "LRANGE", "ZSCORE", "ZRANGE", "SMEMBERS", "ZRANGEBYSCORE"};
  for (const auto r : kReads) {
    if (r.size() != name.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < r.size() && same; ++i)
      same = r[i] == (name[i] >= 'a' && name[i] <= 'z' ? name[i] - 'a' + 'A' : name[i]);
    if (same) return true;
  }
  return false;
}

Workload::Workload(const LoadConfig& config) : config_(config) {
  std::string data(config.data_size, 'x');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 26);
  data_segment_ = bulk(data);

  std::vector<CommandTemplate> commands = config.commands;
  if (commands.empty()) commands.push_back({{"GET", "__key__"}, 1});
  for (const auto& c : commands) {
    Encoded e;
    e.weight = std::max(1u, c.weight);
    e.replies = 0;
    e.keys = 1;
    e.read = false;
    // Split at ";" arguments into commands; each gets its "*argc" header.
    std::size_t i = 0;
    while (i < c.args.size()) {
      std::size_t end = i;
      while (end < c.args.size() && c.args[end] != ";") ++end;
      if (end > i) {
        e.segments.push_back({Segment::kLiteral, "*" + std::to_string(end - i) + "\r\n"});
        ++e.replies;
        e.read = is_read_command(c.args[i]);  // the last command's verdict stands
      }
      for (; i < end; ++i) {
        const std::string& a = c.args[i];
        if (a == "__key__") {
          e.segments.push_back({Segment::kKey, {}, 0});
        } else if (a.size() == 8 && a.compare(0, 5, "__key") == 0 && a[5] >= '1' && a[5] <= '9' &&
                   a.compare(6, 2, "__") == 0) {
          const unsigned k = static_cast<unsigned>(a[5] - '0');
          e.segments.push_back({Segment::kKey, {}, k});
          e.keys = std::max(e.keys, k + 1);
        } else if (a == "__data__") {
          e.segments.push_back({Segment::kData, {}});
        } else if (a == "__rand_key__") {
          e.segments.push_back({Segment::kRandKey, {}});
        } else if (a == "__rand_int__") {
          e.segments.push_back({Segment::kRandInt, {}});
        } else {
          e.segments.push_back({Segment::kLiteral, bulk(a)});
        }
      }
      i = end + 1;  // past the ";"
    }
    templates_.push_back(std::move(e));
  }
  // Interleave by weight so that a 1:10 mix is spread evenly over every 11 requests.
  unsigned total = 0;
  for (const auto& t : templates_) total += t.weight;
  pick_.resize(total);
  std::vector<double> next(templates_.size());
  for (std::size_t i = 0; i < templates_.size(); ++i) next[i] = 0.5 / templates_[i].weight;
  for (unsigned slot = 0; slot < total; ++slot) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < templates_.size(); ++i)
      if (next[i] < next[best]) best = i;
    pick_[slot] = static_cast<unsigned>(best);
    next[best] += 1.0 / templates_[best].weight;
  }

  if (!config.ycsb.empty()) {
    ycsb_ = bench::ycsb::workload_by_name(config.ycsb);
    next_insert_.store(config.keys, std::memory_order_relaxed);
    acked_limit_.store(config.keys, std::memory_order_relaxed);
    field_value_ = bulk(std::string(bench::ycsb::kFieldLength, 'v'));
  }
  if (config.key_pattern == KeyPattern::kZipf) {
    const double theta = config.zipf_theta;
    const std::uint64_t n = config.keys;
    double zetan = 0;
    for (std::uint64_t i = 1; i <= n; ++i) zetan += 1.0 / std::pow(static_cast<double>(i), theta);
    const double zeta2 = 1.0 + 1.0 / std::pow(2.0, theta);
    zipf_alpha_ = 1.0 / (1.0 - theta);
    zipf_zetan_ = zetan;
    zipf_eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zetan);
    zipf_half_pow_ = 1.0 + std::pow(0.5, theta);
  }
}

Workload::KeyStream Workload::make_stream(std::uint64_t index, std::uint64_t count) const {
  KeyStream s;
  s.rng = Rng::stream(config_.seed, 2 * index);
  s.cursor = count ? (config_.keys / count) * index : 0;
  s.counter = index;  // so that connections do not all send the same command at once
  if (ycsb_) {
    s.ycsb = std::make_unique<bench::ycsb::RequestStream>(
        *ycsb_, config_.keys, config_.ycsb_expected_inserts, s.rng.next());
  }
  return s;
}

std::uint64_t Workload::next_key(KeyStream& s) const {
  const std::uint64_t n = config_.keys;
  switch (config_.key_pattern) {
    case KeyPattern::kUniform:
      return s.rng.next() % n;
    case KeyPattern::kSequential: {
      const std::uint64_t k = s.cursor % n;
      s.cursor = k + 1;
      return k;
    }
    case KeyPattern::kGaussian: {
      // Box-Muller; mean n/2, standard deviation n/6 (memtier's default), clamped.
      const double u1 = std::max(s.rng.unit(), 1e-300), u2 = s.rng.unit();
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      const double v = static_cast<double>(n) / 2.0 + z * static_cast<double>(n) / 6.0;
      if (v <= 0) return 0;
      if (v >= static_cast<double>(n - 1)) return n - 1;
      return static_cast<std::uint64_t>(v);
    }
    case KeyPattern::kZipf: {
      // Rank 0 is the hottest key.
      const double u = s.rng.unit();
      const double uz = u * zipf_zetan_;
      if (uz < 1.0) return 0;
      if (uz < zipf_half_pow_) return std::min<std::uint64_t>(1, n - 1);
      const auto k = static_cast<std::uint64_t>(
          static_cast<double>(n) * std::pow(zipf_eta_ * u - zipf_eta_ + 1.0, zipf_alpha_));
      return std::min(k, n - 1);
    }
  }
  return 0;
}

void Workload::append_key(std::uint64_t k, std::string& out) const {
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, k);
  const std::size_t len = config_.key_prefix.size() + static_cast<std::size_t>(r.ptr - digits);
  char head[24];
  const auto h = std::to_chars(head, head + sizeof head, len);
  out += '$';
  out.append(head, h.ptr);
  out += "\r\n";
  out += config_.key_prefix;
  out.append(digits, r.ptr);
  out += "\r\n";
}

std::string Workload::key_text(std::uint64_t k) const {
  return config_.key_prefix + std::to_string(k);
}

namespace {

// Java's String.hashCode of the key: YCSB's Redis binding scores each key in the scan index by it.
std::int32_t java_string_hash(std::string_view s) {
  std::uint32_t h = 0;
  for (const char c : s) h = 31 * h + static_cast<unsigned char>(c);
  return static_cast<std::int32_t>(h);
}

}  // namespace

std::string Workload::load_key(std::uint64_t k) const {
  return ycsb_ ? bench::ycsb::key_name(k) : key_text(k);
}

// One record's insert as YCSB's Redis binding writes it: HSET of every field, then ZADD of the key
// to the "_indices" sorted set with the key's hash as its score (the index scans walk).
void Workload::append_record(std::uint64_t n, std::string& out, bool index) const {
  const std::string key = bench::ycsb::key_name(n);
  out += "*" + std::to_string(2 + 2 * bench::ycsb::kFieldCount) + "\r\n$4\r\nHSET\r\n";
  out += bulk(key);
  for (unsigned f = 0; f < bench::ycsb::kFieldCount; ++f) {
    out += bulk("field" + std::to_string(f));
    out += field_value_;
  }
  if (!index) return;
  out += "*4\r\n$4\r\nZADD\r\n$8\r\n_indices\r\n";
  out += bulk(std::to_string(java_string_hash(key)));
  out += bulk(key);
}

void Workload::acknowledge(std::uint64_t record) const {
  std::lock_guard lock(ack_mutex_);
  std::uint64_t limit = acked_limit_.load(std::memory_order_relaxed);
  if (record < limit) return;
  acked_.insert(record);
  while (!acked_.empty() && *acked_.begin() == limit) {
    acked_.erase(acked_.begin());
    ++limit;
  }
  acked_limit_.store(limit, std::memory_order_relaxed);  // relaxed: see acked_limit_
}

unsigned Workload::append_ycsb(KeyStream& s, std::string& out, bool* read, int* slot,
                               std::int64_t* insert) const {
  using namespace bench::ycsb;
  const std::uint64_t visible = acked_limit_.load(std::memory_order_relaxed);
  const Request q = s.ycsb->next(std::max<std::uint64_t>(visible, 1), [&] {
    return next_insert_.fetch_add(1, std::memory_order_relaxed);
  });
  if (insert) *insert = q.op == Op::kInsert ? static_cast<std::int64_t>(q.record) : -1;
  const std::string key = key_name(q.record);
  if (slot) *slot = static_cast<int>(key_slot(key));
  if (read) *read = q.op == Op::kRead;
  const std::string field = bulk("field" + std::to_string(q.field));
  switch (q.op) {
    case Op::kRead:
      out += "*2\r\n$7\r\nHGETALL\r\n" + bulk(key);
      return 1;
    case Op::kUpdate:
      out += "*4\r\n$4\r\nHSET\r\n" + bulk(key) + field + field_value_;
      return 1;
    case Op::kInsert:
      // Under --cluster the index lives on another node; the CLI refuses D and E there.
      append_record(q.record, out, !config_.cluster);
      return config_.cluster ? 1 : 2;
    case Op::kScan:
      // The index walk: up to scan_length keys from the start key's score on. YCSB's client then
      // reads each record it names; kvlab load sends no request that depends on a reply, so a
      // scan here is the index walk alone (tools/load/README.md).
      out += "*7\r\n$13\r\nZRANGEBYSCORE\r\n$8\r\n_indices\r\n" +
             bulk(std::to_string(java_string_hash(key))) +
             "$4\r\n+inf\r\n$5\r\nLIMIT\r\n$1\r\n0\r\n" + bulk(std::to_string(q.scan_length));
      return 1;
    case Op::kReadModifyWrite:
      // Read every field, then write one: back to back, timed as one operation as YCSB does.
      out += "*2\r\n$7\r\nHGETALL\r\n" + bulk(key);
      out += "*4\r\n$4\r\nHSET\r\n" + bulk(key) + field + field_value_;
      return 2;
  }
  return 1;
}

unsigned Workload::append_request(KeyStream& s, std::string& out, bool* read, int* slot,
                                  std::int64_t* insert) const {
  if (insert) *insert = -1;
  if (ycsb_) return append_ycsb(s, out, read, slot, insert);
  const Encoded& e = templates_[pick_[s.counter++ % pick_.size()]];
  if (read) *read = e.read;
  if (slot) *slot = -1;
  // The cluster slot of the first key written (the request is routed by it).
  auto note_slot = [&](std::uint64_t k) {
    if (slot && *slot < 0) *slot = static_cast<int>(key_slot(key_text(k)));
  };
  // One key per slot and request: MSET __key__ __data__ __key__ __data__ repeats it, as memtier
  // does; __key1__ … draw their own.
  std::uint64_t keys[10];
  bool have[10] = {};
  for (const auto& seg : e.segments) {
    switch (seg.kind) {
      case Segment::kLiteral:
        out += seg.bytes;
        break;
      case Segment::kData:
        out += data_segment_;
        break;
      case Segment::kKey:
        if (!have[seg.key]) keys[seg.key] = next_key(s), have[seg.key] = true;
        note_slot(keys[seg.key]);
        append_key(keys[seg.key], out);
        break;
      case Segment::kRandKey: {  // a key of its own, as redis-benchmark draws each __rand_int__
        const std::uint64_t k = next_key(s);
        note_slot(k);
        append_key(k, out);
        break;
      }
      case Segment::kRandInt: {  // a uniform number below --keys (set members, hash fields)
        char digits[24];
        const auto r = std::to_chars(digits, digits + sizeof digits, s.rng.next() % config_.keys);
        out += '$';
        out += std::to_string(r.ptr - digits);
        out += "\r\n";
        out.append(digits, r.ptr);
        out += "\r\n";
        break;
      }
    }
  }
  return e.replies;
}

unsigned Workload::append_set(std::uint64_t k, std::string& out, bool index) const {
  if (ycsb_) {
    append_record(k, out, index);
    return index ? 2 : 1;
  }
  out += "*3\r\n$3\r\nSET\r\n";
  append_key(k, out);
  out += data_segment_;
  return 1;
}

}  // namespace kvlab::load
