// The command table: one row per command (name, arity, flags, handler, documentation), grouped
// by family in server/commands/<family>.cpp and collected into one lookup table.
//
// Arity follows Redis: a positive arity is the exact argument count including the command name, a
// negative one is a minimum ("-2": the name and at least one argument). Commands with subcommands
// (CLIENT, CONFIG, COMMAND) carry their own table of subcommand rows; dispatch() checks existence,
// arity and authentication for both levels in one place, so handlers never re-check argc.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/data/object.hpp"
#include "server/protocol/reply.hpp"

namespace kvlab {
template <class V>
class AnyKeyspace;
}

namespace kvlab::server {

class Server;
class Worker;
class Db;
struct Connection;
using Keyspace = AnyKeyspace<Value>;

enum CommandFlag : std::uint32_t {
  kWrite = 1u << 0,     // may modify the keyspace
  kReadOnly = 1u << 1,  // reads keys only
  kAdmin = 1u << 2,     // administrative (CONFIG SET, SHUTDOWN, FLUSHALL…)
  kFast = 1u << 3,      // O(1) or O(log N)
  kNoAuth = 1u << 4,    // allowed before AUTH when a password is required
  kDenyOom = 1u << 5,   // may grow memory
  kLoading = 1u << 6,   // allowed while loading (always true here; kept for COMMAND output)
  kStale = 1u << 7,
  kPubSub = 1u << 8,
  // Allowed while a RESP2 connection is subscribed: (P)SUBSCRIBE, (P)UNSUBSCRIBE, PING, QUIT,
  // RESET (Redis's list); dispatch() refuses every other command there.
  kSubscriberContext = 1u << 10,
  // Atomicity (server/core/atomicity.hpp): dispatch() runs a command with more than one distinct key as
  // an escalated operation, and one with a single key on the single-key path. These flags add:
  kKeyspaceWide = 1u << 11,  // touches every key (KEYS, SCAN, FLUSHALL): escalates over all keys
  kEscalate = 1u << 12,      // escalates even with one key (WATCH registers inside escalation)
  kSelfGated = 1u << 13,     // takes the atomicity gate itself (EXEC)
  // Runs at once inside MULTI instead of being queued: EXEC, DISCARD, MULTI, WATCH, QUIT, RESET.
  kTxControl = 1u << 14,
  // Runs a script (EVAL, FCALL…): with --lua-undeclared-keys yes it escalates over every key.
  kScript = 1u << 15,
  // The key positions name pub/sub shard channels (SSUBSCRIBE, SPUBLISH): COMMAND INFO lists them,
  // as Redis lists not_key key specs for cluster routing, but they are no keyspace keys, so the
  // atomicity layer does not lock them.
  kChannelKeys = 1u << 20,
};

// Everything a handler needs for one command.
struct CommandContext {
  Server& server;
  Worker& worker;
  Connection& conn;
  Db& ks;  // the keyspace (server/features/db.hpp: the backend plus WATCH bookkeeping)
  ReplyWriter& reply;
  std::span<const std::string_view> argv;
  std::int64_t now_ms;   // wall-clock milliseconds, sampled once per batch of commands
  bool counted = false;  // set when dispatch() ran the handler and counted the call
  // A command a client sent (not one EXEC or a script runs): CLIENT PAUSE may postpone it.
  bool top_level = false;
  // Its replies are pub/sub confirmations ((P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE), which Redis 7.0
  // sends as pushes even under CLIENT REPLY OFF or SKIP (Worker::execute).
  bool push_reply = false;

  std::string_view arg(std::size_t i) const { return argv[i]; }
  std::size_t argc() const { return argv.size(); }
};

using CommandHandler = void (*)(CommandContext&);

// Key positions of a command whose keys are not one first/last/step range (a numkeys argument,
// SORT ... STORE, GEORADIUS ... STORE): appends the argv indexes of its keys to *out. A malformed
// argv (numkeys not a number, or larger than the arguments) appends what it can and returns
// false; the handler then replies the precise error. The atomicity layer locks these keys.
using KeysFn = bool (*)(std::span<const std::string_view> argv, std::vector<std::size_t>* out);

// The common numkeys form: argv[kNumkeysAt] is the key count and the keys follow it directly
// (ZUNIONSTORE dst numkeys k..., EVAL script numkeys k..., LMPOP numkeys k...). Keys before the
// count (ZUNIONSTORE's destination) are listed by first_key/last_key and are added as well. A
// count of 0 is malformed too (only scripts accept it; COMMAND GETKEYS tells them apart).
template <std::size_t kNumkeysAt>
bool keys_after_numkeys(std::span<const std::string_view> argv, std::vector<std::size_t>* out) {
  if (argv.size() <= kNumkeysAt) return false;
  std::int64_t n = 0;
  for (char c : argv[kNumkeysAt]) {
    if (c < '0' || c > '9' || n > (1 << 30)) return false;
    n = n * 10 + (c - '0');
  }
  if (argv[kNumkeysAt].empty()) return false;
  const std::size_t first = kNumkeysAt + 1;
  const std::size_t end = std::min(argv.size(), first + static_cast<std::size_t>(n));
  for (std::size_t i = first; i < end; ++i) out->push_back(i);
  return n > 0 && first + static_cast<std::size_t>(n) <= argv.size();
}

struct CommandSpec {
  std::string_view name;  // lower case; subcommands hold only their own word ("setname")
  int arity;
  std::uint32_t flags;
  CommandHandler handler;
  int first_key = 0;  // COMMAND INFO key positions (0 = no keys)
  int last_key = 0;
  int key_step = 0;
  std::string_view
      group;  // "string", "list", "hash", "set", "sorted-set", "generic", "connection", "server"
  std::string_view summary;    // one line, shown by COMMAND DOCS and redis-cli hints
  std::string_view arguments;  // argument synopsis, e.g. "key value [EX seconds|PX milliseconds]"
  std::string_view since = "1.0.0";
  std::string_view complexity = "O(1)";
  std::span<const CommandSpec> subcommands = {};
  // Keys beyond first_key..last_key step key_step (see KeysFn); nullptr for the plain range.
  KeysFn extra_keys = nullptr;
  // Index into the per-worker command statistics (INFO commandstats); given to every command and
  // subcommand by CommandTable's constructor, before any worker runs.
  mutable std::uint16_t stat_id = 0;
};

// Whether argc arguments (the name included) fit an arity as the rows state it (see above).
inline bool arity_ok(int arity, std::size_t argc) {
  return arity >= 0 ? argc == static_cast<std::size_t>(arity)
                    : argc >= static_cast<std::size_t>(-arity);
}

// The argv indexes of a command's keys: the first/last/step range plus extra_keys. Returns false
// for a malformed numkeys form (see KeysFn).
bool command_keys(const CommandSpec& c, std::span<const std::string_view> argv,
                  std::vector<std::size_t>* out);

// Redis 7.0's key-spec flags of a command's nth key (0-based, in command_keys() order) for
// COMMAND GETKEYSANDFLAGS, space-separated ("RW access delete"). full_name is the command's name,
// "parent|sub" for a subcommand; argv is the whole command (SET and BITFIELD depend on it).
// (key_flags.cpp)
std::string_view key_flags(const CommandSpec& c, std::string_view full_name,
                           std::span<const std::string_view> argv, std::size_t nth);

// Redis's no_mandatory_keys flag (the scripts): the command may name no key at all.
bool no_mandatory_keys(const CommandSpec& c);
// Whether Redis 7.0 flags the top-level command no_multi (refused while queuing a transaction).
bool redis_no_multi(std::string_view name);

// The command families; each returns its rows (static storage).
std::span<const CommandSpec> string_commands();
std::span<const CommandSpec> list_commands();
std::span<const CommandSpec> hash_commands();
std::span<const CommandSpec> set_commands();
std::span<const CommandSpec> zset_commands();
std::span<const CommandSpec> key_commands();
std::span<const CommandSpec> admin_commands();  // connection and server commands
std::span<const CommandSpec> pubsub_commands();
std::span<const CommandSpec> transaction_commands();  // MULTI, EXEC, DISCARD, WATCH, UNWATCH
std::span<const CommandSpec> blocking_commands();     // BLPOP, BLMOVE, BZPOPMIN…
std::span<const CommandSpec> sort_commands();         // SORT, SORT_RO (server/commands/sort.cpp)

// The value of a CONFIG parameter that kvlab accepts without acting on it ("maxmemory",
// "maxmemory-policy"...); empty for an unknown name. OBJECT FREQ/IDLETIME/REFCOUNT answer by
// it as Redis does. Thread-safe (config.cpp).
std::string config_soft_value(std::string_view name);
std::span<const CommandSpec> hyperloglog_commands();
// hll-sparse-max-bytes (CONFIG GET/SET): the length past which a sparse HLL turns dense.
std::uint64_t hll_sparse_max_bytes();
void set_hll_sparse_max_bytes(std::uint64_t n);
std::span<const CommandSpec> bitmap_commands();
std::span<const CommandSpec> config_subcommands();  // CONFIG GET/SET/... (config.cpp)
std::span<const CommandSpec> scripting_commands();    // EVAL*, FCALL*, SCRIPT, FUNCTION
std::span<const CommandSpec> cluster_commands();      // CLUSTER, ASKING, READONLY, KVLAB
std::span<const CommandSpec> dump_commands();  // DUMP, RESTORE, RESTORE-ASKING (dump.cpp)
std::span<const CommandSpec> debug_commands();  // DEBUG (debug.cpp)
std::span<const CommandSpec> migrate_commands();  // MIGRATE (migrate.cpp)
// DEBUG SET-ACTIVE-EXPIRE: whether workers sweep expired keys in the background (debug.cpp).
bool active_expire_enabled();
std::span<const CommandSpec> introspection_commands();  // SLOWLOG, LATENCY, MEMORY
std::span<const CommandSpec> stream_commands();     // XADD, XRANGE, XREAD... (streams.cpp)
// stream-node-max-entries / stream-node-max-bytes (CONFIG GET/SET): where XADD closes a node.
void set_stream_node_limits(std::uint64_t max_entries, std::uint64_t max_bytes);
std::uint64_t stream_node_max_entries();
std::uint64_t stream_node_max_bytes();
std::span<const CommandSpec> geo_commands();  // GEOADD, GEOSEARCH... (server/commands/geo.cpp)

// The merged table, built once (thread-safe static initialisation).
class CommandTable {
 public:
  static const CommandTable& instance();
  // Case-insensitive lookup of a top-level command; nullptr when unknown.
  const CommandSpec* find(std::string_view name) const;
  // Case-insensitive lookup of a subcommand of `parent`; nullptr when unknown.
  static const CommandSpec* find_sub(const CommandSpec& parent, std::string_view name);
  std::span<const CommandSpec* const> all() const { return {all_.data(), all_.size()}; }
  // "get", or "client|list" for a subcommand; valid for the program's lifetime.
  const char* full_name(const CommandSpec* c) const;
  // Number of stat_id values (commands and subcommands) and the command of each.
  std::size_t stat_count() const { return by_stat_id_.size(); }
  const CommandSpec* by_stat_id(std::size_t id) const { return by_stat_id_[id]; }

 private:
  CommandTable();
  struct Impl;
  std::vector<const CommandSpec*> all_;
  std::vector<const CommandSpec*> by_stat_id_;
  Impl* impl_;
};

// Runs one command: existence, arity and authentication checks; inside MULTI, queues it; else
// runs the handler under the atomicity scheme. Never throws.
void dispatch(CommandContext& ctx);
// Cluster mode, inside the command's key locks: confirms the route dispatch() chose for the
// command the client sent (EXEC calls it with its queued commands' keys). False when it replied
// -ASK, -MOVED or -TRYAGAIN instead (cluster_migration.hpp). True at once outside cluster mode.
bool cluster_gate(CommandContext& ctx, std::span<const std::string_view> keys);

// Command statistics (INFO commandstats). The worker brackets each batch of commands that it runs
// from one read with these; dispatch() counts each call, and the batch's time is shared among its
// commands when it ends (net/dispatch.cpp says why). A call is counted when its batch ends.
struct CommandStat;
void begin_command_batch(CommandStat* worker_stats);
void end_command_batch();
// Called by the worker after dispatch() when it replied an error without running a handler: counts
// a rejected call of the command, if it exists.
void count_rejected(CommandContext& ctx);
// A blocked command's wait ended (blocking.cpp; its call was counted when it blocked): counts
// error_code (empty: no error) in errorstats and total_error_replies, and, when failed, a failed
// call of command. On the calling worker's thread, into its own statistics.
void count_unblocked(CommandContext& ctx, std::string_view command, std::string_view error_code,
                     bool failed);
// A rejected call of cmd (redis.call refused it before it ran).
void count_rejected(CommandContext& ctx, const CommandSpec& cmd);
// Counts r's error replies in the worker's INFO total_error_replies and errorstats (those that
// r.error_counted_before() wrote excepted): the worker after each command, and redis.call for the
// commands a script runs, whose replies the script may catch.
void count_error_replies(CommandContext& ctx, const ReplyWriter& r);
// Counts one error reply of code `code` that was never written to a ReplyWriter (a refusal that a
// script receives as a Lua value).
void count_error_reply(CommandContext& ctx, std::string_view code);

// Redis 7.0's may_replicate flag on a command a script may call (PUBLISH, SPUBLISH, PFCOUNT):
// CLIENT PAUSE WRITE postpones them and a read-only script may not call them.
bool may_replicate(const CommandSpec& c);

// Whether, when the top-level command running on this thread started, used memory was above
// maxmemory with nothing left to evict (Redis's pre_command_oom_state). A script checks it at its
// start and at its first deny-oom call, not the memory of that moment: what the script itself
// allocated (its arguments, the Lua stack) does not refuse its own writes.
bool oom_before_command();

// The COMMAND reply helpers (used by admin.cpp).
// Redis 7.0's ACL categories of the command named full_name ("set", "client|kill"), in Redis's
// order, as COMMAND INFO lists them ("@write", "@string", "@slow").
std::vector<std::string> acl_categories(const CommandSpec& c, std::string_view full_name);
void reply_command_info(ReplyWriter& r, const CommandSpec& c, std::string_view parent = {});
void reply_command_docs(ReplyWriter& r, const CommandSpec& c);

}  // namespace kvlab::server
