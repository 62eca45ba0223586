// Cluster commands (server/features/cluster.hpp): CLUSTER INFO, MYID, SLOTS, SHARDS, NODES, KEYSLOT,
// COUNTKEYSINSLOT, GETKEYSINSLOT, HELP; ASKING, READONLY, READWRITE; and the manager's
// KVLAB CLUSTER CONFIG <json> / KVLAB CLUSTER GETCONFIG. Replies follow Redis 7.0 (cluster.c);
// the redirection itself (MOVED, CROSSSLOT) happens in dispatch (net/dispatch.cpp).
//
// COUNTKEYSINSLOT and GETKEYSINSLOT walk the keyspace (O(keys)); there is no per-slot index.
#include "server/features/cluster.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "server/features/cluster_migration.hpp"
#include "server/commands/common.hpp"
#include "server/net/worker.hpp"

namespace kvlab::server {
namespace {

bool require_cluster(CommandContext& ctx) {
  if (ctx.server.cluster().enabled()) return true;
  ctx.reply.error(err::kClusterDisabled);
  return false;
}

std::string slot_ranges_text(const ClusterShard& s) {
  std::string out;
  for (const auto& [a, b] : s.slots) {
    out += ' ';
    out += std::to_string(a);
    if (b != a) out += "-" + std::to_string(b);
  }
  return out;
}

void cluster_info_cmd(CommandContext& ctx) {
  if (!require_cluster(ctx)) return;
  const auto cfg = ctx.server.cluster().config();
  const bool ok = cfg != nullptr && cfg->self >= 0;
  const std::size_t assigned = cfg == nullptr ? 0 : kClusterSlots;
  const std::string epoch = std::to_string(cfg == nullptr ? 0 : cfg->epoch);
  std::string s;
  s += "cluster_state:" + std::string(ok ? "ok" : "fail") + "\r\n";
  s += "cluster_slots_assigned:" + std::to_string(assigned) + "\r\n";
  s += "cluster_slots_ok:" + std::to_string(assigned) + "\r\n";
  s += "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\n";
  s += "cluster_known_nodes:" + std::to_string(cfg == nullptr ? 1 : cfg->shards.size()) + "\r\n";
  s += "cluster_size:" + std::to_string(cfg == nullptr ? 0 : cfg->shards.size()) + "\r\n";
  s += "cluster_current_epoch:" + epoch + "\r\ncluster_my_epoch:" + epoch + "\r\n";
  s += "cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n";
  s += "total_cluster_links_buffer_limit_exceeded:0\r\n";
  // kvlab's own lines, only on a node that ever streamed a migration (cluster_migration.hpp).
  if (const Migrator* m = ctx.server.cluster().migrator_if_started(); m != nullptr)
    s += m->status();
  ctx.reply.verbatim("txt", s);
}

void cluster_myid_cmd(CommandContext& ctx) {
  if (!require_cluster(ctx)) return;
  ctx.reply.bulk(ctx.server.cluster().my_id());
}

void cluster_slots_cmd(CommandContext& ctx) {
  if (!require_cluster(ctx)) return;
  const auto cfg = ctx.server.cluster().config();
  std::size_t n = 0;
  if (cfg != nullptr)
    for (const auto& s : cfg->shards) n += s.slots.size();
  ctx.reply.array(n);
  if (cfg == nullptr) return;
  for (const auto& s : cfg->shards) {
    for (const auto& [a, b] : s.slots) {
      ctx.reply.array(3);
      ctx.reply.integer(a);
      ctx.reply.integer(b);
      ctx.reply.array(4);
      ctx.reply.bulk(s.master.ip);
      ctx.reply.integer(s.master.port);
      ctx.reply.bulk(s.master.id);
      ctx.reply.map(0);  // hostname and other networking metadata: none
    }
  }
}

void cluster_shards_cmd(CommandContext& ctx) {
  if (!require_cluster(ctx)) return;
  const auto cfg = ctx.server.cluster().config();
  ctx.reply.array(cfg == nullptr ? 0 : cfg->shards.size());
  if (cfg == nullptr) return;
  for (const auto& s : cfg->shards) {
    ctx.reply.map(2);
    ctx.reply.bulk("slots");
    ctx.reply.array(2 * s.slots.size());
    for (const auto& [a, b] : s.slots) {
      ctx.reply.integer(a);
      ctx.reply.integer(b);
    }
    ctx.reply.bulk("nodes");
    ctx.reply.array(1);
    ctx.reply.map(7);
    ctx.reply.bulk("id");
    ctx.reply.bulk(s.master.id);
    ctx.reply.bulk("port");
    ctx.reply.integer(s.master.port);
    ctx.reply.bulk("ip");
    ctx.reply.bulk(s.master.ip);
    ctx.reply.bulk("endpoint");
    ctx.reply.bulk(s.master.ip);
    ctx.reply.bulk("role");
    ctx.reply.bulk("master");
    ctx.reply.bulk("replication-offset");
    ctx.reply.integer(0);
    ctx.reply.bulk("health");
    ctx.reply.bulk("online");
  }
}

void cluster_nodes_cmd(CommandContext& ctx) {
  if (!require_cluster(ctx)) return;
  const auto cfg = ctx.server.cluster().config();
  std::string out;
  const std::string& me = ctx.server.cluster().my_id();
  if (cfg == nullptr) {  // not configured: only ourselves, without slots
    out = me + " :" + std::to_string(ctx.server.port()) + "@" +
          std::to_string(ctx.server.port() + 10000) + " myself,master - 0 0 0 connected\n";
  } else {
    for (const auto& s : cfg->shards) {
      out += s.master.id + " " + s.master.ip + ":" + std::to_string(s.master.port) + "@" +
             std::to_string(s.master.port + 10000) + " " +
             (s.master.id == me ? "myself,master" : "master") + " - 0 0 " +
             std::to_string(cfg->epoch) + " connected" + slot_ranges_text(s) + "\n";
    }
  }
  ctx.reply.verbatim("txt", out);
}

void cluster_keyslot_cmd(CommandContext& ctx) {
  if (!require_cluster(ctx)) return;
  ctx.reply.integer(key_hash_slot(ctx.arg(2)));
}

bool parse_slot(CommandContext& ctx, std::string_view text, std::int64_t* slot) {
  if (!parse_i64(text, slot) || *slot < 0 || *slot >= kClusterSlots) {
    ctx.reply.error(err::kInvalidSlot);
    return false;
  }
  return true;
}

void cluster_countkeysinslot_cmd(CommandContext& ctx) {
  if (!require_cluster(ctx)) return;
  std::int64_t slot = 0;
  if (!parse_slot(ctx, ctx.arg(2), &slot)) return;
  std::int64_t n = 0;
  ctx.ks.for_each([&](std::string_view key, const Value& v) {
    if (!v.expired_at(ctx.now_ms) && key_hash_slot(key) == static_cast<unsigned>(slot)) ++n;
  });
  ctx.reply.integer(n);
}

void cluster_getkeysinslot_cmd(CommandContext& ctx) {
  if (!require_cluster(ctx)) return;
  std::int64_t slot = 0, count = 0;
  if (!parse_i64(ctx.arg(2), &slot) || !parse_i64(ctx.arg(3), &count) || slot < 0 ||
      slot >= kClusterSlots || count < 0) {
    ctx.reply.error(err::kInvalidSlotOrCount);
    return;
  }
  std::vector<std::string> keys;
  ctx.ks.for_each([&](std::string_view key, const Value& v) {
    if (static_cast<std::int64_t>(keys.size()) < count && !v.expired_at(ctx.now_ms) &&
        key_hash_slot(key) == static_cast<unsigned>(slot))
      keys.emplace_back(key);
  });
  ctx.reply.array(keys.size());
  for (const auto& k : keys) ctx.reply.bulk(k);
}

void cluster_help_cmd(CommandContext& ctx) {
  const char* lines[] = {
      "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "COUNTKEYSINSLOT <slot>",
      "    Return the number of keys in <slot>.",
      "GETKEYSINSLOT <slot> <count>",
      "    Return key names stored by current node in a slot.",
      "INFO",
      "    Return information about the cluster.",
      "KEYSLOT <key>",
      "    Return the hash slot for <key>.",
      "MYID",
      "    Return the node id.",
      "NODES",
      "    Return cluster configuration seen by node. Output format:",
      "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
      "SLOTS",
      "    Return information about slots range mappings. Each range is made of:",
      "    start, end, master and replicas IP addresses, ports and ids",
      "SHARDS",
      "    Return information about slot range mappings and the nodes associated with them.",
      "HELP",
      "    Prints this help.",
      "(kvlab: the configuration comes from KVLAB CLUSTER CONFIG; MEET, ADDSLOTS, SETSLOT and",
      "the other gossip-era subcommands are not supported.)"};
  ctx.reply.array(std::size(lines));
  for (const char* l : lines) ctx.reply.simple(l);
}

// The gossip-era subcommands (MEET, ADDSLOTS, SETSLOT...): kvlab nodes take their configuration
// from the manager instead.
void cluster_unsupported_cmd(CommandContext& ctx) {
  if (!require_cluster(ctx)) return;
  std::string sub(ctx.arg(1));
  for (char& c : sub)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  ctx.reply.error(err::cluster_unsupported(sub));
}

void cluster_container_cmd(CommandContext& ctx) {
  ctx.reply.error(err::wrong_arity("cluster"));
}

// READONLY, READWRITE: accepted in cluster mode (no replicas).
void cluster_ok_cmd(CommandContext& ctx) {
  if (!require_cluster(ctx)) return;
  ctx.reply.ok();
}

// ASKING: the connection's next command may run on a slot migrating to this node (dispatch
// clears the flag after it, as Redis does).
void asking_cmd(CommandContext& ctx) {
  if (!require_cluster(ctx)) return;
  ctx.conn.asking = true;
  ctx.reply.ok();
}

// KVLAB CLUSTER CONFIG <json>: validated fully, then replaces the configuration as a whole. The
// keys of slots this node lost are deleted in the background.
void kvlab_cluster_config_cmd(CommandContext& ctx) {
  Cluster& cl = ctx.server.cluster();
  if (cl.mode() != ClusterMode::kYes) {
    ctx.reply.error(err::kKvlabClusterNeedsMode);
    return;
  }
  std::string error;
  auto cfg = ClusterConfig::parse(ctx.arg(3), cl.my_id(), &error);
  if (cfg == nullptr) {
    ctx.reply.error(error);
    return;
  }
  const auto old = cl.config();
  if (old != nullptr && cfg->epoch < old->epoch) {
    ctx.reply.error(err::invalid_cluster_config("epoch " + std::to_string(cfg->epoch) +
                                                " is older than the current " +
                                                std::to_string(old->epoch)));
    return;
  }
  const auto next = cfg;
  const std::vector<unsigned> lost = cl.set_config(std::move(cfg));
  // Clients blocked on a key of a slot this node no longer serves would wait for a write that
  // can never come here: they get MOVED now (Redis 7.0 does it from clientsCron, within a
  // second; here the configuration is the only thing that changes ownership). Every key is
  // locked, so no waiter is being served or registered meanwhile.
  redirect_blocked_clients(ctx, *next);
  if (cl.migrator_if_started() == nullptr && lost.empty() && !next->has_migrations) {
    ctx.reply.ok();
    return;
  }
  Migrator& m = cl.migrator(ctx.server.atomicity(), ctx.server.db(), ctx.server.config().threads);
  // Slots given back before their keys were purged: delete those keys now. The command runs with
  // every key locked (kKeyspaceWide), so no command sees them (cluster_migration.hpp).
  const std::vector<bool> regained = m.take_regained(*next);
  if (std::find(regained.begin(), regained.end(), true) != regained.end()) {
    std::vector<std::string> victims;
    ctx.ks.for_each([&](std::string_view key, const Value&) {
      if (regained[key_hash_slot(key)]) victims.emplace_back(key);
    });
    for (const auto& k : victims) ctx.ks.erase(k);
  }
  // Streams this node's migrations, cancels one the new configuration ended, and deletes the
  // keys of the lost slots in the background. Never waits: the migrator may be waiting for the
  // locks this command holds.
  m.start(next, cl.generation(), lost);
  ctx.reply.ok();
}

void kvlab_cluster_getconfig_cmd(CommandContext& ctx) {
  const auto cfg = ctx.server.cluster().config();
  if (cfg == nullptr) {
    ctx.reply.null();
    return;
  }
  ctx.reply.bulk(cfg->to_json());
}

// KVLAB <area> <action> ...: kvlab's own administrative commands.
void kvlab_cmd(CommandContext& ctx) {
  if (ctx.argc() >= 3 && iequals(ctx.arg(1), "cluster")) {
    if (iequals(ctx.arg(2), "config") && ctx.argc() == 4) return kvlab_cluster_config_cmd(ctx);
    if (iequals(ctx.arg(2), "getconfig") && ctx.argc() == 3)
      return kvlab_cluster_getconfig_cmd(ctx);
  }
  ctx.reply.error(err::kKvlabUnknownSubcommand);
}

const CommandSpec kClusterSubcommands[] = {
    {"info", 2, kStale, cluster_info_cmd, 0, 0, 0, "cluster",
     "Provides info about Redis Cluster node state", "", "3.0.0"},
    {"myid", 2, kStale, cluster_myid_cmd, 0, 0, 0, "cluster", "Return the node id", "", "3.0.0"},
    {"slots", 2, kStale, cluster_slots_cmd, 0, 0, 0, "cluster",
     "Get array of Cluster slot to node mappings", "", "3.0.0",
     "O(N) where N is the total number of Cluster nodes"},
    {"shards", 2, kStale, cluster_shards_cmd, 0, 0, 0, "cluster",
     "Get array of cluster slots to node mappings", "", "7.0.0",
     "O(N) where N is the total number of cluster nodes"},
    {"nodes", 2, kStale, cluster_nodes_cmd, 0, 0, 0, "cluster", "Get Cluster config for the node",
     "", "3.0.0", "O(N) where N is the total number of Cluster nodes"},
    {"keyslot", 3, kStale, cluster_keyslot_cmd, 0, 0, 0, "cluster",
     "Returns the hash slot of the specified key", "key", "3.0.0",
     "O(N) where N is the number of bytes in the key"},
    {"countkeysinslot", 3, kStale, cluster_countkeysinslot_cmd, 0, 0, 0, "cluster",
     "Return the number of local keys in the specified hash slot", "slot", "3.0.0",
     "O(N) where N is the number of keys (kvlab walks the keyspace)"},
    {"getkeysinslot", 4, kStale, cluster_getkeysinslot_cmd, 0, 0, 0, "cluster",
     "Return local key names in the specified hash slot", "slot count", "3.0.0",
     "O(N) where N is the number of keys (kvlab walks the keyspace)"},
    {"addslots", -3, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"addslotsrange", -4, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"bumpepoch", 2, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"count-failure-reports", 3, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"delslots", -3, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"delslotsrange", -4, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"failover", -2, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"flushslots", 2, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"forget", 3, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"links", 2, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"meet", -4, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"replicas", 3, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"replicate", 3, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"reset", -2, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"saveconfig", 2, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"set-config-epoch", 3, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"setslot", -4, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"slaves", 3, kAdmin | kStale, cluster_unsupported_cmd, 0, 0, 0, "cluster",
     "Not supported by kvlab (gossip-era cluster management)", "", "3.0.0"},
    {"help", 2, kLoading | kStale, cluster_help_cmd, 0, 0, 0, "cluster",
     "Show helpful text about the different subcommands", "", "5.0.0"},
};

const CommandSpec kClusterCommands[] = {
    {"cluster", -2, 0, cluster_container_cmd, 0, 0, 0, "cluster",
     "A container for cluster commands", "", "3.0.0", "Depends on subcommand.",
     kClusterSubcommands},
    {"asking", 1, kFast, asking_cmd, 0, 0, 0, "cluster",
     "Sent by cluster clients after an -ASK redirect", "", "3.0.0"},
    {"readonly", 1, kLoading | kStale | kFast, cluster_ok_cmd, 0, 0, 0, "cluster",
     "Enables read queries for a connection to a cluster replica node", "", "3.0.0"},
    {"readwrite", 1, kLoading | kStale | kFast, cluster_ok_cmd, 0, 0, 0, "cluster",
     "Disables read queries for a connection to a cluster replica node", "", "3.0.0"},
    {"kvlab", -2, kAdmin | kKeyspaceWide, kvlab_cmd, 0, 0, 0, "server",
     "kvlab's administrative commands (KVLAB CLUSTER CONFIG <json>, KVLAB CLUSTER GETCONFIG)",
     "subcommand [argument ...]", "0.1.0", "O(N) when slots move: the keys of lost slots go"},
};

}  // namespace

std::span<const CommandSpec> cluster_commands() {
  return kClusterCommands;
}

}  // namespace kvlab::server
