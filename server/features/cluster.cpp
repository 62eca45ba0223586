// Hash slots, the cluster configuration and redirection; the contract is in cluster.hpp.
//
// Configuration JSON (KVLAB CLUSTER CONFIG, --cluster-config FILE), Dragonfly's managed-mode shape:
//   {"epoch": 7,
//    "shards": [{"slot_ranges": [{"start": 0, "end": 8191}],
//                "master": {"id": "<40 hex>", "ip": "127.0.0.1", "port": 7000},
//                "replicas": [],
//                "migrations": [{"slot_ranges": [{"start": 0, "end": 99}], "node_id": "<40
//                hex>"}]},
//               ...]}
// Replicas must be empty (replication is future work). A migration moves slot ranges of its
// shard to the shard whose master is node_id ("ip" and "port" may be given too, as Dragonfly's
// manager writes them; the shard list is authoritative). A slot migrates at most once.
#include "server/features/cluster.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <unordered_map>

#include "server/features/cluster_migration.hpp"
#include "server/protocol/errors.hpp"

namespace kvlab::server {

namespace {

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no reflection — Redis's crc16.
constexpr std::array<std::uint16_t, 256> make_crc16_table() {
  std::array<std::uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    std::uint16_t crc = static_cast<std::uint16_t>(i << 8);
    for (int b = 0; b < 8; ++b)
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    t[i] = crc;
  }
  return t;
}
constexpr auto kCrc16 = make_crc16_table();

std::uint16_t crc16(std::string_view s) {
  std::uint16_t crc = 0;
  for (unsigned char c : s)
    crc = static_cast<std::uint16_t>((crc << 8) ^ kCrc16[((crc >> 8) ^ c) & 0xff]);
  return crc;
}

bool valid_id(const std::string& id) {
  return id.size() == 40 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool valid_ip(const std::string& ip) {
  unsigned char buf[16];
  return inet_pton(AF_INET, ip.c_str(), buf) == 1 || inet_pton(AF_INET6, ip.c_str(), buf) == 1;
}

}  // namespace

unsigned key_hash_slot(std::string_view key) {
  // The first '{' with a non-empty run up to the next '}' is the hash tag.
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1)
      key = key.substr(open + 1, close - open - 1);
  }
  return crc16(key) & (kClusterSlots - 1);
}

std::shared_ptr<const ClusterConfig> ClusterConfig::parse(std::string_view text,
                                                          std::string_view self_id,
                                                          std::string* error) {
  auto bad = [&](std::string why) {
    *error = err::invalid_cluster_config(why);
    return nullptr;
  };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  auto cfg = std::make_shared<ClusterConfig>();
  cfg->owner.fill(-1);
  cfg->migrating_to.fill(-1);
  if (j.contains("epoch")) {
    if (!j["epoch"].is_number_unsigned()) return bad("epoch is not a non-negative integer");
    cfg->epoch = j["epoch"].get<std::uint64_t>();
  }
  if (!j.contains("shards") || !j["shards"].is_array() || j["shards"].empty())
    return bad("no shards");
  // Shard indexes live in int16_t per slot (owner, migrating_to); a shard without slots is
  // allowed (a migration target), but there is no use for more shards than slots.
  if (j["shards"].size() > static_cast<std::size_t>(kClusterSlots))
    return bad("more than " + std::to_string(kClusterSlots) + " shards");
  // id -> shard index: the duplicate check and the migration targets' lookup stay linear in
  // the configuration's size.
  std::unordered_map<std::string, int> ids;
  for (const auto& sj : j["shards"]) {
    if (!sj.is_object()) return bad("a shard is not an object");
    ClusterShard shard;
    const auto& m = sj.contains("master") ? sj["master"] : nlohmann::json();
    if (!m.is_object() || !m.contains("id") || !m["id"].is_string() || !m.contains("ip") ||
        !m["ip"].is_string() || !m.contains("port") || !m["port"].is_number_integer())
      return bad("a shard's master needs id, ip and port");
    shard.master.id = m["id"].get<std::string>();
    shard.master.ip = m["ip"].get<std::string>();
    const auto port = m["port"].get<std::int64_t>();
    if (!valid_id(shard.master.id))
      return bad("node id '" + shard.master.id + "' is not 40 lowercase hex characters");
    if (!valid_ip(shard.master.ip)) return bad("address '" + shard.master.ip + "' does not parse");
    if (port < 1 || port > 65535) return bad("port " + std::to_string(port) + " out of range");
    shard.master.port = static_cast<int>(port);
    if (!ids.emplace(shard.master.id, static_cast<int>(cfg->shards.size())).second)
      return bad("node id " + shard.master.id + " appears twice");
    if (sj.contains("replicas") && !(sj["replicas"].is_array() && sj["replicas"].empty()))
      return bad("replicas are not supported yet");
    if (!sj.contains("slot_ranges") || !sj["slot_ranges"].is_array())
      return bad("a shard has no slot_ranges");
    const int index = static_cast<int>(cfg->shards.size());
    for (const auto& r : sj["slot_ranges"]) {
      if (!r.is_object() || !r.contains("start") || !r.contains("end") ||
          !r["start"].is_number_integer() || !r["end"].is_number_integer())
        return bad("a slot range needs integer start and end");
      const auto a = r["start"].get<std::int64_t>(), b = r["end"].get<std::int64_t>();
      if (a < 0 || b >= kClusterSlots || a > b)
        return bad("slot range " + std::to_string(a) + "-" + std::to_string(b) + " is invalid");
      for (auto s = a; s <= b; ++s) {
        if (cfg->owner[static_cast<std::size_t>(s)] != -1)
          return bad("slot " + std::to_string(s) + " is assigned twice");
        cfg->owner[static_cast<std::size_t>(s)] = static_cast<std::int16_t>(index);
      }
      shard.slots.emplace_back(static_cast<unsigned>(a), static_cast<unsigned>(b));
    }
    std::sort(shard.slots.begin(), shard.slots.end());
    if (shard.master.id == self_id) cfg->self = index;
    cfg->shards.push_back(std::move(shard));
  }
  for (int s = 0; s < kClusterSlots; ++s)
    if (cfg->owner[static_cast<std::size_t>(s)] == -1)
      return bad("slot " + std::to_string(s) + " is not assigned");
  // Migrations, once every master is known.
  for (std::size_t index = 0; index < cfg->shards.size(); ++index) {
    const auto& sj = j["shards"][index];
    if (!sj.contains("migrations")) continue;
    if (!sj["migrations"].is_array()) return bad("migrations is not an array");
    for (const auto& mj : sj["migrations"]) {
      if (!mj.is_object() || !mj.contains("node_id") || !mj["node_id"].is_string() ||
          !mj.contains("slot_ranges") || !mj["slot_ranges"].is_array())
        return bad("a migration needs node_id and slot_ranges");
      ClusterMigration m;
      const std::string target = mj["node_id"].get<std::string>();
      if (const auto it = ids.find(target); it != ids.end()) m.target = it->second;
      if (m.target < 0) return bad("migration target " + target + " is not a master in it");
      if (m.target == static_cast<int>(index)) return bad("a migration's target is its source");
      for (const auto& r : mj["slot_ranges"]) {
        if (!r.is_object() || !r.contains("start") || !r.contains("end") ||
            !r["start"].is_number_integer() || !r["end"].is_number_integer())
          return bad("a slot range needs integer start and end");
        const auto a = r["start"].get<std::int64_t>(), b = r["end"].get<std::int64_t>();
        if (a < 0 || b >= kClusterSlots || a > b)
          return bad("slot range " + std::to_string(a) + "-" + std::to_string(b) + " is invalid");
        for (auto s = a; s <= b; ++s) {
          const auto u = static_cast<std::size_t>(s);
          if (cfg->owner[u] != static_cast<std::int16_t>(index))
            return bad("migrating slot " + std::to_string(s) + " is not its source's");
          if (cfg->migrating_to[u] != -1)
            return bad("slot " + std::to_string(s) + " migrates twice");
          cfg->migrating_to[u] = static_cast<std::int16_t>(m.target);
        }
        m.slots.emplace_back(static_cast<unsigned>(a), static_cast<unsigned>(b));
      }
      std::sort(m.slots.begin(), m.slots.end());
      cfg->has_migrations = true;
      cfg->shards[index].migrations.push_back(std::move(m));
    }
  }
  if (cfg->self < 0) return bad("this node (" + std::string(self_id) + ") is not a master in it");
  return cfg;
}

std::shared_ptr<const ClusterConfig> ClusterConfig::single(const ClusterNode& self) {
  auto cfg = std::make_shared<ClusterConfig>();
  cfg->epoch = 1;
  cfg->shards.push_back({{{0, kClusterSlots - 1}}, self, {}});
  cfg->owner.fill(0);
  cfg->migrating_to.fill(-1);
  cfg->self = 0;
  return cfg;
}

std::string ClusterConfig::to_json() const {
  nlohmann::json j;
  j["epoch"] = epoch;
  j["shards"] = nlohmann::json::array();
  for (const auto& s : shards) {
    nlohmann::json ranges = nlohmann::json::array();
    for (const auto& [a, b] : s.slots) ranges.push_back({{"start", a}, {"end", b}});
    nlohmann::json migrations = nlohmann::json::array();
    for (const auto& m : s.migrations) {
      nlohmann::json mr = nlohmann::json::array();
      for (const auto& [a, b] : m.slots) mr.push_back({{"start", a}, {"end", b}});
      const ClusterNode& t = shards[static_cast<std::size_t>(m.target)].master;
      migrations.push_back(
          {{"slot_ranges", mr}, {"node_id", t.id}, {"ip", t.ip}, {"port", t.port}});
    }
    nlohmann::json shard = {
        {"slot_ranges", ranges},
        {"master", {{"id", s.master.id}, {"ip", s.master.ip}, {"port", s.master.port}}},
        {"replicas", nlohmann::json::array()}};
    if (!migrations.empty()) shard["migrations"] = migrations;
    j["shards"].push_back(shard);
  }
  return j.dump();
}

namespace {
// Numbers Cluster instances, so that a thread's cached configuration is never taken for that of
// another instance built later at the same address (tests build several). relaxed: only
// uniqueness matters.
std::atomic<std::uint64_t> g_cluster_instances{0};

// This thread's copy of the configuration route() read last, with the generation it was read
// at. route() runs for every keyed command in cluster mode; a load of the atomic<shared_ptr>
// there is two or three read-modify-writes (libstdc++'s lock bit, the control block's count) on
// lines every worker writes (papers/execution-models-plan.md §5, row 8). Reading the generation
// writes nothing.
struct ConfigCache {
  std::uint64_t instance = 0;  // Cluster::instance_ of the cached configuration; 0: none
  std::uint64_t generation = 0;
  std::shared_ptr<const ClusterConfig> config;
};
thread_local ConfigCache t_config_cache;
}  // namespace

const std::shared_ptr<const ClusterConfig>& Cluster::current_config() const {
  ConfigCache& c = t_config_cache;
  // acquire (generation()): set_config publishes the configuration before it bumps the count, so
  // a configuration loaded after reading g is at least the one g was published with; the cached
  // one is reused only while the count is still the one it was loaded at.
  const std::uint64_t g = generation();
  if (c.instance != instance_ || c.generation != g) {
    c.config = config();
    c.generation = g;
    c.instance = instance_;
  }
  return c.config;
}

Cluster::Cluster(ClusterMode mode, std::string my_id, std::string announce_ip, int port)
    : mode_(mode),
      my_id_(std::move(my_id)),
      announce_ip_(std::move(announce_ip)),
      port_(port),
      instance_(g_cluster_instances.fetch_add(1, std::memory_order_relaxed) + 1) {
  if (mode_ == ClusterMode::kEmulated)
    config_.store(ClusterConfig::single({my_id_, announce_ip_, port_}), std::memory_order_release);
}

Cluster::~Cluster() = default;

Migrator& Cluster::migrator(Atomicity& gate, Db& db, unsigned slot_index) {
  // Created by KVLAB CLUSTER CONFIG, which runs with every key locked: one at a time.
  if (migrator_ == nullptr) {
    migrator_ = std::make_unique<Migrator>(*this, gate, db, slot_index);
    // release: publishes the constructed Migrator to migrator_if_started() readers.
    migrator_seen_.store(migrator_.get(), std::memory_order_release);
  }
  return *migrator_;
}

std::vector<unsigned> Cluster::set_config(std::shared_ptr<const ClusterConfig> next) {
  // acq_rel: publish `next` fully built (release) and read the old one's contents (acquire).
  const auto old = config_.exchange(std::move(next), std::memory_order_acq_rel);
  // release: a command that reads the new generation (acquire) reads the new configuration too.
  generation_.fetch_add(1, std::memory_order_release);
  std::vector<unsigned> lost;
  const auto now = config();
  if (old == nullptr || old->self < 0) return lost;
  for (unsigned s = 0; s < kClusterSlots; ++s)
    if (old->owner[s] == old->self && now->owner[s] != now->self) lost.push_back(s);
  return lost;
}

Cluster::Route Cluster::route(std::span<const std::string_view> keys, bool asking, int* slot,
                              std::string* error) const {
  *slot = -1;
  if (keys.empty()) return Route::kServe;
  const unsigned first = key_hash_slot(keys[0]);
  for (std::size_t i = 1; i < keys.size(); ++i)
    if (key_hash_slot(keys[i]) != first) {
      *error = err::kCrossSlot;
      return Route::kError;
    }
  *slot = static_cast<int>(first);
  const std::shared_ptr<const ClusterConfig>& cfg = current_config();
  if (cfg == nullptr || cfg->owner[first] < 0) {
    *error = err::kSlotNotServed;
    return Route::kError;
  }
  const int owner = cfg->owner[first];
  const int to = cfg->migrating_to[first];
  auto redirect = [&](auto text, int shard) {
    const ClusterNode& n = cfg->shards[static_cast<std::size_t>(shard)].master;
    *error = text(first, n.ip, n.port);
  };
  if (owner == cfg->self) {
    if (to < 0) return Route::kServe;
    redirect(err::ask, to);
    return Route::kIfPresent;
  }
  if (to == cfg->self && asking) return Route::kImportingAsked;
  redirect(err::moved, owner);
  return Route::kError;
}

std::string Cluster::check(std::span<const std::string_view> keys, int* slot) const {
  std::string error;
  if (route(keys, false, slot, &error) == Route::kError) return error;
  return {};
}

std::string Cluster::random_id() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(40, '0');
  for (char& c : id) c = kHex[rng() & 15];
  return id;
}

}  // namespace kvlab::server
