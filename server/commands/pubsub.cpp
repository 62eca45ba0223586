// Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH, the sharded
// SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH, PUBSUB CHANNELS / NUMSUB / NUMPAT / SHARDCHANNELS /
// SHARDNUMSUB / HELP, and RESET (which leaves subscriber mode). Replies are Redis 7's RESP2
// arrays; the registry, frames and cross-worker delivery live in server/features/pubsub.{hpp,cpp}.
//
// A connection's subscriptions change only on its own worker (these handlers), together with
// the process-wide registry (pubsub.hpp, invariant 1). While a connection holds any
// subscription, dispatch() allows only the commands flagged kSubscriberContext.
#include "server/features/pubsub.hpp"

#include <string>
#include <vector>

#include "server/commands/common.hpp"
#include "server/net/session.hpp"
#include "server/features/tracking.hpp"

namespace kvlab::server {
namespace {

// *3 <kind> <name|nil> <subscriptions left> (a >3 push frame in RESP3). Redis 7.0 counts shard channels apart: the
// (s)subscribe and (s)unsubscribe replies of shard channels count shard channels only.
void reply_subscription(CommandContext& ctx, std::string_view kind, const std::string_view* name,
                        bool shard = false) {
  ctx.push_reply = true;
  ctx.reply.push(3);
  ctx.reply.bulk(kind);
  if (name != nullptr) {
    ctx.reply.bulk(*name);
  } else {
    ctx.reply.null();
  }
  ctx.reply.integer(
      static_cast<std::int64_t>(shard ? ctx.conn.shard_channels.size() : ctx.conn.subscriptions()));
}

SubscriberRef self_ref(CommandContext& ctx) {
  return {ctx.worker.index(), ctx.conn.id};
}

void subscribe_cmd(CommandContext& ctx) {
  for (std::size_t i = 1; i < ctx.argc(); ++i) {
    const std::string_view ch = ctx.arg(i);
    if (ctx.conn.channels.emplace(ch).second) ctx.server.pubsub().subscribe(ch, self_ref(ctx));
    ctx.conn.update_pubsub_counts(ctx.server, ctx.worker.index());
    reply_subscription(ctx, "subscribe", &ch);
  }
}

void psubscribe_cmd(CommandContext& ctx) {
  for (std::size_t i = 1; i < ctx.argc(); ++i) {
    const std::string_view pat = ctx.arg(i);
    if (ctx.conn.patterns.emplace(pat).second) ctx.server.pubsub().psubscribe(pat, self_ref(ctx));
    ctx.conn.update_pubsub_counts(ctx.server, ctx.worker.index());
    reply_subscription(ctx, "psubscribe", &pat);
  }
}

void ssubscribe_cmd(CommandContext& ctx) {
  // Redis refuses SSUBSCRIBE where a client may not block: inside MULTI (and scripts).
  if (ctx.conn.in_exec) {
    ctx.reply.error(err::kSsubscribeDenyBlocking);
    return;
  }
  for (std::size_t i = 1; i < ctx.argc(); ++i) {
    const std::string_view ch = ctx.arg(i);
    if (ctx.conn.shard_channels.emplace(ch).second)
      ctx.server.pubsub().ssubscribe(ch, self_ref(ctx));
    ctx.conn.update_pubsub_counts(ctx.server, ctx.worker.index());
    reply_subscription(ctx, "ssubscribe", &ch, true);
  }
}

enum class SubKind { kChannel, kPattern, kShard };

// UNSUBSCRIBE / PUNSUBSCRIBE / SUNSUBSCRIBE: the named ones, or all of them (then one reply per
// subscription, or a single reply with a nil name when there was none).
void unsubscribe_common(CommandContext& ctx, SubKind k) {
  SubscriptionSet& set = k == SubKind::kPattern ? ctx.conn.patterns
                         : k == SubKind::kShard ? ctx.conn.shard_channels
                                                : ctx.conn.channels;
  const std::string_view kind = k == SubKind::kPattern ? "punsubscribe"
                                : k == SubKind::kShard ? "sunsubscribe"
                                                       : "unsubscribe";
  const bool shard = k == SubKind::kShard;
  auto drop = [&](std::string_view name) {
    auto it = set.find(name);
    if (it == set.end()) return;
    set.erase(it);
    PubSubRegistry& reg = ctx.server.pubsub();
    if (k == SubKind::kPattern) {
      reg.punsubscribe(name, self_ref(ctx));
    } else if (shard) {
      reg.sunsubscribe(name, self_ref(ctx));
    } else {
      reg.unsubscribe(name, self_ref(ctx));
    }
    ctx.conn.update_pubsub_counts(ctx.server, ctx.worker.index());
  };
  if (ctx.argc() == 1) {
    if (set.empty()) {
      reply_subscription(ctx, kind, nullptr, shard);
      return;
    }
    const std::vector<std::string> all(set.begin(), set.end());
    for (const std::string& name : all) {
      drop(name);
      const std::string_view v = name;
      reply_subscription(ctx, kind, &v, shard);
    }
    return;
  }
  for (std::size_t i = 1; i < ctx.argc(); ++i) {
    const std::string_view name = ctx.arg(i);
    drop(name);
    reply_subscription(ctx, kind, &name, shard);
  }
}

void unsubscribe_cmd(CommandContext& ctx) {
  unsubscribe_common(ctx, SubKind::kChannel);
}
void punsubscribe_cmd(CommandContext& ctx) {
  unsubscribe_common(ctx, SubKind::kPattern);
}
void sunsubscribe_cmd(CommandContext& ctx) {
  unsubscribe_common(ctx, SubKind::kShard);
}

void publish_cmd(CommandContext& ctx) {
  ctx.reply.integer(publish(ctx.server, ctx.worker.index(), ctx.arg(1), ctx.arg(2)));
}

void spublish_cmd(CommandContext& ctx) {
  ctx.reply.integer(spublish(ctx.server, ctx.worker.index(), ctx.arg(1), ctx.arg(2)));
}

// ---- PUBSUB ----

void channels_common(CommandContext& ctx, bool shard) {
  if (ctx.argc() > 3) {  // Redis 7.0: at most one pattern, the subcommand named as typed
    ctx.reply.error(err::subcommand_syntax("pubsub", ctx.arg(1)));
    return;
  }
  std::optional<std::string_view> pattern;
  if (ctx.argc() == 3) pattern = ctx.arg(2);
  const std::vector<std::string> names = ctx.server.pubsub().channels(pattern, shard);
  ctx.reply.array(names.size());
  for (const auto& n : names) ctx.reply.bulk(n);
}

void pubsub_channels_cmd(CommandContext& ctx) {
  channels_common(ctx, false);
}
void pubsub_shardchannels_cmd(CommandContext& ctx) {
  channels_common(ctx, true);
}

// NUMSUB and SHARDNUMSUB: channel, subscribers, ... (a flat array in RESP3 too, as Redis 7.0).
void numsub_common(CommandContext& ctx, bool shard) {
  ctx.reply.array((ctx.argc() - 2) * 2);
  for (std::size_t i = 2; i < ctx.argc(); ++i) {
    ctx.reply.bulk(ctx.arg(i));
    ctx.reply.integer(static_cast<std::int64_t>(ctx.server.pubsub().numsub(ctx.arg(i), shard)));
  }
}

void pubsub_numsub_cmd(CommandContext& ctx) {
  numsub_common(ctx, false);
}
void pubsub_shardnumsub_cmd(CommandContext& ctx) {
  numsub_common(ctx, true);
}

void pubsub_numpat_cmd(CommandContext& ctx) {
  ctx.reply.integer(static_cast<std::int64_t>(ctx.server.pubsub().pattern_count()));
}

void pubsub_help_cmd(CommandContext& ctx) {
  const std::string_view lines[] = {
      "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "CHANNELS [<pattern>]",
      "    Return the currently active channels matching a <pattern> (default: '*').",
      "NUMPAT",
      "    Return number of subscriptions to patterns.",
      "NUMSUB [<channel> ...]",
      "    Return the number of subscribers for the specified channels, excluding",
      "    pattern subscriptions(default: no channels).",
      "SHARDCHANNELS [<pattern>]",
      "    Return the currently active shard level channels matching a <pattern> (default: '*').",
      "SHARDNUMSUB [<shardchannel> ...]",
      "    Return the number of subscribers for the specified shard level channel(s)",
      "HELP",
      "    Prints this help.",
  };
  ctx.reply.array(std::size(lines));
  for (auto l : lines) ctx.reply.simple(l);
}

void pubsub_container(CommandContext& ctx) {
  // Only reached with argc == 1, which dispatch() rejects by arity; kept for COMMAND output.
  ctx.reply.error(err::wrong_arity("pubsub"));
}

// RESET: back to a fresh connection's state (server/net/session.hpp), answered in RESP2.
void reset_cmd(CommandContext& ctx) {
  reset_client(ctx.server, ctx.worker.index(), ctx.conn);
  ctx.reply.set_proto(2);
  ctx.reply.simple("RESET");
}

constexpr std::uint32_t kPs = kPubSub | kLoading | kStale;

const CommandSpec kPubSubSubcommands[] = {
    {"channels", -2, kPs, pubsub_channels_cmd, 0, 0, 0, "pubsub", "Returns the active channels.",
     "[pattern]", "2.8.0",
     "O(N) where N is the number of active channels, and assuming constant time pattern "
     "matching (relatively short channels and patterns)"},
    {"numsub", -2, kPs, pubsub_numsub_cmd, 0, 0, 0, "pubsub",
     "Returns a count of subscribers to channels.", "[channel [channel ...]]", "2.8.0",
     "O(N) for the NUMSUB subcommand, where N is the number of requested channels"},
    {"numpat", 2, kPs, pubsub_numpat_cmd, 0, 0, 0, "pubsub",
     "Returns a count of unique pattern subscriptions.", "", "2.8.0"},
    {"shardchannels", -2, kPs, pubsub_shardchannels_cmd, 0, 0, 0, "pubsub",
     "Returns the active shard channels.", "[pattern]", "7.0.0",
     "O(N) where N is the number of active shard channels, and assuming constant time pattern "
     "matching (relatively short shard channels)."},
    {"shardnumsub", -2, kPs, pubsub_shardnumsub_cmd, 0, 0, 0, "pubsub",
     "Returns the count of subscribers of shard channels.", "[shardchannel [shardchannel ...]]",
     "7.0.0",
     "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels"},
    {"help", 2, kLoading | kStale, pubsub_help_cmd, 0, 0, 0, "pubsub",
     "Returns helpful text about the different subcommands.", "", "6.2.0"},
};

const CommandSpec kPubSubCommands[] = {
    {"subscribe", -2, kPs | kSubscriberContext, subscribe_cmd, 0, 0, 0, "pubsub",
     "Listens for messages published to channels.", "channel [channel ...]", "2.0.0",
     "O(N) where N is the number of channels to subscribe to."},
    {"unsubscribe", -1, kPs | kSubscriberContext, unsubscribe_cmd, 0, 0, 0, "pubsub",
     "Stops listening to messages posted to channels.", "[channel [channel ...]]", "2.0.0",
     "O(N) where N is the number of channels to unsubscribe."},
    {"psubscribe", -2, kPs | kSubscriberContext, psubscribe_cmd, 0, 0, 0, "pubsub",
     "Listens for messages published to channels that match one or more patterns.",
     "pattern [pattern ...]", "2.0.0", "O(N) where N is the number of patterns to subscribe to."},
    {"punsubscribe", -1, kPs | kSubscriberContext, punsubscribe_cmd, 0, 0, 0, "pubsub",
     "Stops listening to messages published to channels that match one or more patterns.",
     "[pattern [pattern ...]]", "2.0.0", "O(N) where N is the number of patterns to unsubscribe."},
    {"publish", 3, kPs | kFast, publish_cmd, 0, 0, 0, "pubsub",
     "Posts a message to a channel (delivered to subscribers on other worker threads through "
     "the --queue backend).",
     "channel message", "2.0.0",
     "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the "
     "total number of subscribed patterns (by any client)."},
    // The shard channel is a key for cluster purposes (COMMAND INFO lists its positions, as Redis's
    // not_key key specs do), but not a keyspace key: kChannelKeys keeps the atomicity layer from
    // locking it.
    {"ssubscribe", -2, kPs | kSubscriberContext | kChannelKeys, ssubscribe_cmd, 1, -1, 1, "pubsub",
     "Listens for messages published to shard channels.", "shardchannel [shardchannel ...]",
     "7.0.0", "O(N) where N is the number of shard channels to subscribe to."},
    {"sunsubscribe", -1, kPs | kSubscriberContext | kChannelKeys, sunsubscribe_cmd, 1, -1, 1,
     "pubsub", "Stops listening to messages posted to shard channels.",
     "[shardchannel [shardchannel ...]]", "7.0.0",
     "O(N) where N is the number of shard channels to unsubscribe."},
    {"spublish", 3, kPs | kFast | kChannelKeys, spublish_cmd, 1, 1, 1, "pubsub",
     "Post a message to a shard channel", "shardchannel message", "7.0.0",
     "O(N) where N is the number of clients subscribed to the receiving shard channel."},
    {"pubsub", -2, 0, pubsub_container, 0, 0, 0, "pubsub", "A container for Pub/Sub commands", "",
     "2.8.0", "Depends on subcommand.", kPubSubSubcommands},
    {"reset", 1, kNoAuth | kLoading | kStale | kFast | kSubscriberContext | kTxControl, reset_cmd, 0, 0, 0,
     "connection", "Resets the connection.", "", "6.2.0"},
};

}  // namespace

std::span<const CommandSpec> pubsub_commands() {
  return kPubSubCommands;
}

}  // namespace kvlab::server
