// dispatch(): the one place where a command's existence, arity and authentication are checked,
// for commands and subcommands alike, and where it is queued (MULTI), postponed (CLIENT PAUSE),
// routed (cluster mode) and run under the atomicity scheme; and the per-worker command statistics
// it keeps. Declared in core/command.hpp, beside the table: the worker, EXEC and redis.call all
// run commands through it. It lives in net because it reads the worker's connection and the
// server's state. Its hot path (resolve, invoke, count_call) stays in this one translation unit,
// where GCC inlines it (papers/server-choices.md, "Where dispatch lives").
#include <algorithm>
#include <cstring>
#include <ctime>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "server/core/atomicity.hpp"
#include "server/core/blocking.hpp"
#include "server/core/command.hpp"
#include "server/core/command_util.hpp"
#include "server/data/container.hpp"
#include "server/features/cluster_migration.hpp"
#include "server/features/monitor.hpp"
#include "server/features/scripting.hpp"
#include "server/net/server.hpp"
#include "server/net/session.hpp"
#include "server/net/worker.hpp"
#include "server/protocol/errors.hpp"

namespace kvlab::server {

namespace {
// Pipelines repeat one command: each worker thread remembers the last name it looked up, byte for
// byte (case included), and skips the lower-casing hash lookup when the next name is the same.
const CommandSpec* find_cached(std::string_view name) {
  struct Last {
    char name[16];
    std::size_t len = 0;
    const CommandSpec* spec = nullptr;
  };
  thread_local Last last;
  if (name.size() == last.len && last.spec != nullptr &&
      std::memcmp(name.data(), last.name, name.size()) == 0)
    return last.spec;
  const CommandSpec* spec = CommandTable::instance().find(name);
  if (spec != nullptr && name.size() <= sizeof last.name) {
    std::memcpy(last.name, name.data(), name.size());
    last.len = name.size();
    last.spec = spec;
  }
  return spec;
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  return u;
}
}  // namespace

namespace {
// Command time is measured per batch (the commands a worker runs from one read of one connection):
// the clock is read when the batch begins and when it ends, and the elapsed time is shared equally
// among the batch's commands. Without a vDSO fast path a clock read costs a noticeable share of
// a pipelined SET's server CPU when read once per command, and almost none once per batch
// (papers/server-choices.md). The price: in a batch that mixes a slow command with fast ones, each
// is charged the average.
struct CommandBatch {
  std::uint64_t start_ns = 0;
  CommandStat* stats = nullptr;  // the running worker's table
  std::uint32_t calls = 0;       // commands in the batch
  std::uint32_t n = 0;           // runs used
  // Runs of one command (a pipeline repeats one), so that settling costs per run, not per call.
  struct Run {
    std::uint16_t id;
    std::uint16_t count;
  } runs[64] = {};
  // The slow log and latency monitor's timing for this batch (monitor.hpp).
  MonitorMode mode;
};
constinit thread_local CommandBatch t_batch;

// Counts the batch's calls, charges its elapsed time to them, and starts a new batch at `now`.
void settle_batch(std::uint64_t now) {
  CommandBatch& b = t_batch;
  if (b.calls > 0) {
    const std::uint64_t share = (now - b.start_ns) / b.calls;
    // LATENCY HISTOGRAM: each call in the bucket of its share, as commandstats charges it.
    const std::size_t bucket = latency_bucket(share);
    for (std::uint32_t i = 0; i < b.n; ++i) {
      CommandStat& st = b.stats[b.runs[i].id];
      bump(st.calls, b.runs[i].count);
      bump(st.nanos, share * b.runs[i].count);
      bump(st.hist[bucket], b.runs[i].count);
    }
    b.n = 0;
    b.calls = 0;
  }
  b.start_ns = now;
}

// One executed command: failed now if it replied an error; its call and time when the batch ends.
void count_call(CommandContext& ctx, const CommandSpec& cmd) {
  CommandBatch& b = t_batch;
  if (ctx.reply.errors() != 0) bump(b.stats[cmd.stat_id].failed);
  if (b.n > 0 && b.runs[b.n - 1].id == cmd.stat_id && b.runs[b.n - 1].count < 0xffff) {
    ++b.runs[b.n - 1].count;
  } else {
    if (b.n == std::size(b.runs)) settle_batch(monotonic_ns());
    b.runs[b.n++] = {cmd.stat_id, 1};
  }
  ++b.calls;
  ctx.counted = true;
}
}  // namespace

void begin_command_batch(CommandStat* stats) {
  t_batch.stats = stats;
  t_batch.start_ns = monotonic_ns();
  t_batch.mode = monitor_mode();
}

void end_command_batch() {
  if (t_batch.calls > 0) settle_batch(monotonic_ns());
}

void count_rejected(CommandContext& ctx) {
  const CommandSpec* cmd = CommandTable::instance().find(ctx.argv[0]);
  if (cmd == nullptr) return;
  if (!cmd->subcommands.empty() && ctx.argc() >= 2) {
    cmd = CommandTable::find_sub(*cmd, ctx.argv[1]);
    if (cmd == nullptr) return;
  }
  count_rejected(ctx, *cmd);
}

void count_rejected(CommandContext& ctx, const CommandSpec& cmd) {
  bump(ctx.server.stats(ctx.worker.index()).cmd[cmd.stat_id].rejected);
}

void count_error_replies(CommandContext& ctx, const ReplyWriter& r) {
  const std::uint64_t n = r.stat_errors();
  if (n == 0) return;
  WorkerStats& st = ctx.server.stats(ctx.worker.index());
  bump(st.errors, n);
  st.errorstats.add(r.error_code());
}

void count_error_reply(CommandContext& ctx, std::string_view code) {
  WorkerStats& st = ctx.server.stats(ctx.worker.index());
  bump(st.errors);
  st.errorstats.add(code);
}

bool may_replicate(const CommandSpec& c) {
  return c.name == "publish" || c.name == "spublish" || c.name == "pfcount";
}

void count_unblocked(CommandContext& ctx, std::string_view command, std::string_view error_code,
                     bool failed) {
  WorkerStats& st = ctx.server.stats(ctx.worker.index());
  if (!error_code.empty()) {
    bump(st.errors);
    st.errorstats.add(error_code);
  }
  if (!failed) return;
  const CommandSpec* cmd = CommandTable::instance().find(command);
  if (cmd != nullptr) bump(st.cmd[cmd->stat_id].failed);
}

namespace {
// The command running on this thread, if any: a command it runs (EXEC's, a script's) is nested.
thread_local const CommandSpec* t_running = nullptr;

// Cluster mode: the route dispatch() chose for the command it is running, before the command
// held its keys' locks. cluster_gate() confirms it inside the locks (cluster_migration.hpp b, e).
struct ClusterPending {
  bool active = false;  // set by dispatch() for a keyed command in cluster mode
  bool asking = false;
  Cluster::Route route = Cluster::Route::kServe;
  std::uint64_t generation = 0;  // Cluster::generation() read before the route was chosen
};
thread_local ClusterPending t_cluster;
}  // namespace

// Inside the command's key locks: routes again when the configuration changed since dispatch(),
// and for a migrating or importing slot decides by which keys are present here, as Redis's
// getNodeByQuery does. False when it replied a redirection instead of running the command.
bool cluster_gate(CommandContext& ctx, std::span<const std::string_view> keys) {
  if (!t_cluster.active) return true;
  t_cluster.active = false;  // once per command the client sent
  Cluster& cl = ctx.server.cluster();
  Cluster::Route route = t_cluster.route;
  std::string error;
  if (route != Cluster::Route::kServe || cl.generation() != t_cluster.generation) {
    int slot = -1;
    route = cl.route(keys, t_cluster.asking, &slot, &error);
  }
  constexpr std::string_view kTryAgain = err::kTryAgainRehashing;
  if (route == Cluster::Route::kError) {
    ctx.reply.error(error);
    return false;
  }
  // A key the migrator is sending (cluster_migration.hpp a) is neither here to change nor there
  // yet, whatever the route: the client retries, as after any TRYAGAIN.
  if (const Migrator* m = cl.migrator_if_started(); m != nullptr && m->in_flight(keys)) {
    ctx.reply.error(kTryAgain);
    return false;
  }
  if (route == Cluster::Route::kServe) return true;
  std::size_t distinct = 0, present = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (std::find(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(i), keys[i]) !=
        keys.begin() + static_cast<std::ptrdiff_t>(i))
      continue;
    ++distinct;
    bool live = false;
    ctx.ks.find(keys[i], [&](const Value& v) {
      live = !v.expired_at(ctx.now_ms) && !live_container_is_dead(v);
    });
    present += live ? 1 : 0;
  }
  if (route == Cluster::Route::kIfPresent) {  // the source of a migrating slot
    if (present == distinct) return true;
    ctx.reply.error(present == 0 ? std::string_view(error) : kTryAgain);
    return false;
  }
  // kImportingAsked: the target, after ASKING.
  if (distinct > 1 && present < distinct) {
    ctx.reply.error(kTryAgain);
    return false;
  }
  return true;
}

namespace {
// invoke()'s cluster step, out of line so that the single-node path carries none of it.
[[gnu::noinline, gnu::cold]] bool cluster_gate_for(CommandContext& ctx, const CommandSpec* cmd) {
  if (cmd->flags & kChannelKeys) {
    t_cluster.active = false;  // shard channels: no keys to look for
    return true;
  }
  std::vector<std::size_t> idx;
  std::vector<std::string_view> keys;
  command_keys(*cmd, ctx.argv, &idx);
  for (std::size_t i : idx) keys.push_back(ctx.argv[i]);
  return cluster_gate(ctx, keys);
}

const CommandSpec* resolve(std::span<const std::string_view> argv);  // below

// CLIENT PAUSE (Server::paused): ALL postpones every command; WRITE the commands Redis 7.0 flags
// write or may_replicate — PUBLISH, SPUBLISH, PFCOUNT, and EVAL, EVALSHA and FCALL unless the
// script or function is flagged no-writes — and an EXEC whose transaction holds one of those.
bool pause_applies(const CommandSpec* cmd, std::span<const std::string_view> argv,
                   const Connection& conn, Server::PauseClass pc) {
  if (pc == Server::kPauseAll || (cmd->flags & kWrite) || may_replicate(*cmd)) return true;
  const std::string_view n = cmd->name;
  if (n == "eval" || n == "evalsha" || n == "fcall") {
    const scripting::ScriptFlags f = scripting::script_flags(n, argv);
    return !f.declared || f.may_write;
  }
  if (n == "exec" && conn.tx != nullptr) {
    for (const auto& q : conn.tx->queued) {
      std::vector<std::string_view> qa(q.begin(), q.end());
      const CommandSpec* c = resolve(qa);
      if (c != nullptr && pause_applies(c, qa, conn, pc)) return true;
    }
  }
  return false;
}

// Postpones ctx's command when a pause applies to it (the worker runs it again when the pause
// ends); true when it did. Checked by dispatch() before the command is queued or run, and again
// inside its locks (invoke), which orders it with CLIENT PAUSE: that runs keyspace-wide, so a
// command either ran before the pause was set or sees it (atomicity.hpp, invariant 2).
bool postpone_if_paused(CommandContext& ctx, const CommandSpec* cmd) {
  const Server::PauseClass pc = ctx.server.paused(ctx.now_ms);
  if (pc == Server::kPauseNone || !pause_applies(cmd, ctx.argv, ctx.conn, pc)) return false;
  if (ctx.conn.info) ctx.conn.info->last_cmd.store(cmd, std::memory_order_relaxed);
  ctx.worker.postpone(ctx.conn);
  return true;
}

// Redis looks a write command's keys up with lookupKeyWrite, which first deletes a key whose
// TTL has passed: its "expired" event, and the "new" of the key the write then creates, come
// before the command's own events. kvlab's writes replace an expired value in place, so while
// either class is configured the keys of a write command are expired here first (under the
// command's key locks; not while clients are paused, when the dataset stays as it is). Scripts
// are left out: Redis expires their keys as they touch them, which read_live and the writes they
// run do.
void expire_before_write(CommandContext& ctx, const CommandSpec* cmd) {
  if (ctx.server.paused(ctx.now_ms) != Server::kPauseNone) return;
  thread_local std::vector<std::size_t> idx;
  idx.clear();
  command_keys(*cmd, ctx.argv, &idx);
  WorkerStats& st = ctx.server.stats(ctx.worker.index());
  for (std::size_t i : idx)
    if (expire_if_due(ctx.ks, ctx.argv[i], ctx.now_ms)) bump(st.expired);
}

void invoke(CommandContext& ctx, const CommandSpec* cmd) {
  if (ctx.top_level && postpone_if_paused(ctx, cmd)) [[unlikely]]
    return;
  if ((cmd->flags & (kWrite | kScript)) == kWrite && notify_enabled(kNotifyExpired | kNotifyNew))
      [[unlikely]]
    expire_before_write(ctx, cmd);
  // Set only in cluster mode and consumed by the first invoke (a command EXEC or a script runs
  // is nested: t_running is set).
  if (t_cluster.active && t_running == nullptr && !(cmd->flags & kSelfGated)) [[unlikely]] {
    if (!cluster_gate_for(ctx, cmd)) return;
  }
  if (ctx.conn.info) ctx.conn.info->last_cmd.store(cmd, std::memory_order_relaxed);
  // The slow log and latency monitor time the commands clients send and EXEC runs, not those a
  // script runs (Redis logs the EVAL); monitor.hpp says which clock and why.
  const CommandSpec* const parent = t_running;
  const MonitorMode& mode = t_batch.mode;
  // Admin commands are always timed: CONFIG SET may change a threshold, and Redis judges a
  // command by the thresholds in force after it ran.
  const bool timed =
      (mode.on || (cmd->flags & kAdmin) != 0) && (parent == nullptr || parent->name == "exec");
  const bool coarse = mode.coarse && (cmd->flags & kFast) != 0;
  std::uint64_t t0 = 0;
  if (timed) t0 = coarse ? coarse_ns() : monotonic_ns();
  t_running = cmd;
  try {
    cmd->handler(ctx);
  } catch (const std::bad_alloc&) {
    ctx.reply.error(err::kNoMemory);
  } catch (const std::exception& e) {
    ctx.reply.error(std::string(err::kInternalError) + e.what());
  }
  t_running = parent;
  // A command that blocked is reported when a push serves it (monitor_unblocked), as Redis.
  if (timed && !ctx.conn.blocked) {
    const std::uint64_t t1 = coarse ? coarse_ns() : monotonic_ns();
    if ((t1 - t0) / 1000 >= static_cast<std::uint64_t>(mode.min_us) || (cmd->flags & kAdmin))
      monitor_command(ctx, *cmd, (t1 - t0) / 1000, ctx.conn.info.get());
  }
  count_call(ctx, *cmd);
}

// True when cmd writes and one of its keys has blocked clients: it then runs as an escalation over
// the whole keyspace and serves them before anyone else runs (blocking.hpp). Called with the gate
// held, so a client that blocks on one of the keys has registered before or blocks after.
bool wakes_blocked(CommandContext& ctx, const CommandSpec* cmd,
                   std::span<const std::string_view> keys) {
  if (!(cmd->flags & kWrite) || !ctx.server.blocking().active()) return false;
  for (std::string_view k : keys)
    if (ctx.server.blocking().has_waiters(k)) return true;
  return false;
}

// An escalation over every key that runs cmd and then serves the clients it made ready.
void run_serving(CommandContext& ctx, const CommandSpec* cmd) {
  Atomicity& gate = ctx.server.atomicity();
  std::vector<std::uint32_t> held;
  gate.begin_multi(ctx.worker.index(), {}, true, &held);
  ready_keys().start();
  invoke(ctx, cmd);
  serve_blocked(ctx);
  gate.end_multi(ctx.worker.index(), &held);
}

// Runs cmd under the atomicity scheme: no gate for commands without keys, the single-key path for
// one distinct key, an escalation for several keys or the whole keyspace (atomicity.hpp).
struct GateScratch {
  std::vector<std::string_view> keys;
  std::vector<std::uint32_t> held;
};

// Inlined into dispatch() by attribute, not left to GCC's heuristics: they weigh the whole
// translation unit, so moving cold code out of this file changed the hot path's shape
// (papers/server-choices.md, "Dispatch stays in the table's translation unit").
[[gnu::always_inline]] inline void run_gated(CommandContext& ctx, const CommandSpec* cmd) {
  const std::uint32_t f = cmd->flags;
  // Locks already held, or no keyspace keys (shard channels).
  if (ctx.conn.in_exec || (f & (kSelfGated | kChannelKeys))) return invoke(ctx, cmd);
  Atomicity& gate = ctx.server.atomicity();
  const unsigned w = ctx.worker.index();
  // A script that may touch keys it did not declare holds the whole keyspace (scripting.hpp).
  const bool wide =
      (f & kKeyspaceWide) != 0 || ((f & kScript) != 0 && ctx.server.config().lua_undeclared_keys);
  const bool escalate = (f & kEscalate) != 0;
  if (!wide && !escalate) {
    if (cmd->first_key <= 0 && cmd->extra_keys == nullptr) return invoke(ctx, cmd);
    if (cmd->first_key == cmd->last_key && cmd->extra_keys == nullptr) {
      // The common case (GET, SET, LPUSH…): one key at a fixed position.
      if (static_cast<std::size_t>(cmd->first_key) >= ctx.argc()) return invoke(ctx, cmd);
      const std::string_view key = ctx.argv[cmd->first_key];
      const int stripe = gate.begin_single(w, key);
      if (wakes_blocked(ctx, cmd, {&key, 1})) {
        gate.end_single(w, stripe);
        return run_serving(ctx, cmd);
      }
      invoke(ctx, cmd);
      gate.end_single(w, stripe);
      return;
    }
  }
  thread_local std::vector<std::size_t> idx;
  // The keys and held stripes live in per-thread scratch vectors, one pair per nesting level
  // (a command run by a script may come back here), so that MSET or a 2-key command allocates
  // nothing: two heap allocations were about 5 % of a 2-key MSET's server CPU.
  thread_local std::vector<std::unique_ptr<GateScratch>> scratch;
  thread_local std::size_t depth = 0;
  if (scratch.size() <= depth) scratch.push_back(std::make_unique<GateScratch>());
  GateScratch& mine = *scratch[depth];
  struct Nest {
    std::size_t& d;
    ~Nest() { --d; }
  } nest{++depth};
  std::vector<std::string_view>& keys = mine.keys;
  std::vector<std::uint32_t>& held = mine.held;
  keys.clear();
  idx.clear();
  command_keys(*cmd, ctx.argv, &idx);  // a malformed numkeys form locks what it found
  for (std::size_t i : idx) keys.push_back(ctx.argv[i]);
  bool distinct = false;
  for (std::string_view k : keys) distinct = distinct || k != keys.front();
  if (!wide && !escalate && !distinct) {
    if (keys.empty()) return invoke(ctx, cmd);
    const int stripe = gate.begin_single(w, keys.front());
    if (wakes_blocked(ctx, cmd, keys)) {
      gate.end_single(w, stripe);
      return run_serving(ctx, cmd);
    }
    invoke(ctx, cmd);
    gate.end_single(w, stripe);
    return;
  }
  gate.begin_multi(w, keys, wide, &held);
  if (!wide && wakes_blocked(ctx, cmd, keys)) {
    gate.end_multi(w, &held);
    return run_serving(ctx, cmd);
  }
  if (wide && ctx.server.blocking().active()) {
    ready_keys().start();
    invoke(ctx, cmd);
    serve_blocked(ctx);
  } else {
    invoke(ctx, cmd);
  }
  // The announcement stays for the batch's next multi-key command (atomicity.hpp, invariant 6).
  gate.end_multi(w, &held, /*keep_announced=*/true);
}
}  // namespace

namespace {
// The spec that runs argv (the subcommand's when it has one); nullptr when unknown.
const CommandSpec* resolve(std::span<const std::string_view> argv) {
  const CommandSpec* cmd = find_cached(argv[0]);
  if (cmd != nullptr && !cmd->subcommands.empty() && argv.size() >= 2)
    cmd = CommandTable::find_sub(*cmd, argv[1]);
  return cmd;
}

// Cluster redirection (server/features/cluster.hpp): the command's keys — for EXEC, the keys of every
// queued command — must hash to one slot, and this node must own it. Returns the error line, or
// an empty string when the command runs here (cluster_gate() confirms that inside the locks).
// Only called with cluster mode on.
std::string cluster_redirect(CommandContext& ctx, const CommandSpec* cmd, const CommandSpec* top,
                             bool asking) {
  std::vector<std::string_view> keys;
  std::vector<std::size_t> idx;
  auto add = [&](const CommandSpec& c, std::span<const std::string_view> argv) {
    idx.clear();
    command_keys(c, argv, &idx);
    for (std::size_t i : idx) keys.push_back(argv[i]);
  };
  if (top->name == "exec" && ctx.conn.tx != nullptr) {
    std::vector<std::string_view> argv;
    for (const auto& q : ctx.conn.tx->queued) {
      argv.assign(q.begin(), q.end());
      if (const CommandSpec* c = resolve(argv); c != nullptr) add(*c, argv);
    }
  } else {
    add(*cmd, ctx.argv);
  }
  int slot = -1;
  std::string error;
  Cluster& cl = ctx.server.cluster();
  // acquire (generation()): read before the configuration route() loads, so an unchanged count
  // inside the locks means the route was chosen with the current configuration.
  t_cluster.generation = cl.generation();
  t_cluster.asking = asking;
  t_cluster.route = cl.route(keys, asking, &slot, &error);
  t_cluster.active = t_cluster.route != Cluster::Route::kError;
  return t_cluster.active ? std::string() : error;
}
}  // namespace

namespace {
// See oom_before_command(): set by dispatch() before each top-level command.
thread_local bool t_oom_before_command = false;

// Redis 7.0's deny-oom and write flags of a command about to run; a script-running command has
// those its script or function declares (scripting::script_flags), none when it declares none.
bool denies_oom(const CommandSpec& c, std::span<const std::string_view> argv) {
  if (c.flags & kDenyOom) return true;
  return (c.flags & kScript) && scripting::script_flags(c.name, argv).deny_oom;
}
bool writes(const CommandSpec& c, std::span<const std::string_view> argv) {
  if (c.flags & kWrite) return true;
  return (c.flags & kScript) && scripting::script_flags(c.name, argv).may_write;
}
// Whether pred holds for a command of conn's transaction (EXEC's flags are its commands').
bool any_queued(const Connection& conn,
                bool (*pred)(const CommandSpec&, std::span<const std::string_view>)) {
  for (const auto& q : conn.tx->queued) {
    std::vector<std::string_view> argv(q.begin(), q.end());
    const CommandSpec* c = resolve(argv);
    if (c != nullptr && pred(*c, argv)) return true;
  }
  return false;
}
}  // namespace

bool oom_before_command() {
  return t_oom_before_command;
}

void dispatch(CommandContext& ctx) {
  Connection& conn = ctx.conn;
  const bool queuing = conn.tx != nullptr && !conn.in_exec;
  // An error while queuing makes EXEC fail with EXECABORT, as in Redis.
  auto reject = [&](std::string_view text) {
    if (queuing) conn.tx->aborted = true;
    ctx.reply.error(text);
  };
  // A rejected EXEC (arity, NOAUTH, subscriber mode) discards the transaction and its WATCHes
  // and answers EXECABORT with the reason, whose generic "ERR " prefix Redis 7.0 does not repeat
  // (rejectCommand -> execCommandAbort), also outside MULTI.
  auto reject_top = [&](const CommandSpec* c, std::string_view text) {
    if (c->name != "exec") return reject(text);
    discard_transaction(ctx.server, ctx.conn);
    if (text.starts_with(err::kErrCode)) text.remove_prefix(4);
    ctx.reply.error(std::string(err::kExecAbortBecause) + std::string(text));
  };
  const CommandSpec* cmd = find_cached(ctx.argv[0]);
  if (cmd == nullptr) {
    reject(err::unknown_command(ctx.argv[0], ctx.argv.data() + 1, ctx.argc() - 1));
    return;
  }
  const CommandSpec* top = cmd;
  if (!cmd->subcommands.empty() && ctx.argc() >= 2) {
    const CommandSpec* sub = CommandTable::find_sub(*cmd, ctx.argv[1]);
    if (sub == nullptr) {
      reject(err::unknown_subcommand(ctx.argv[1], upper(cmd->name)));
      return;
    }
    if (!arity_ok(sub->arity, ctx.argc())) {
      reject(err::wrong_arity(std::string(cmd->name) + "|" + std::string(sub->name)));
      return;
    }
    cmd = sub;
  } else if (!arity_ok(cmd->arity, ctx.argc())) {
    reject_top(cmd, err::wrong_arity(cmd->name));
    return;
  }
  if (!conn.authenticated && !(cmd->flags & kNoAuth)) {
    reject_top(top, err::kNoAuth);
    return;
  }
  // SHUTDOWN (Redis's no_multi commands) cannot be queued; the transaction then aborts.
  if (queuing && redis_no_multi(top->name)) {
    reject(err::kNotAllowedInMulti);
    return;
  }
  if (conn.subscribed()) {
    // RESP2 subscriber mode, as Redis restricts it (a RESP3 subscriber runs any command).
    if (conn.resp == 2 && !(cmd->flags & kSubscriberContext)) {
      reject_top(top, std::string(err::kCantExecute) + CommandTable::instance().full_name(cmd) +
                          std::string(err::kCantExecuteTail));
      return;
    }
  }
  // predictable branch: the mode is fixed at startup.
  struct ClusterScope {  // the pending route and ASKING last one command, as in Redis
    Connection* conn = nullptr;
    bool keep_asking = false;
    ~ClusterScope() {
      if (conn == nullptr) return;  // cluster mode off: t_cluster is never set
      t_cluster.active = false;
      if (!keep_asking && conn->tx == nullptr) conn->asking = false;
    }
  } cluster_scope;
  if (ctx.server.cluster().enabled()) {
    cluster_scope.conn = &conn;
    cluster_scope.keep_asking = top->name == "asking";
  }
  if (ctx.server.cluster().enabled() && !conn.in_exec &&
      (cmd->first_key > 0 || cmd->extra_keys != nullptr || top->name == "exec")) {
    const bool asking = conn.asking || top->name == "restore-asking";
    if (std::string e = cluster_redirect(ctx, cmd, top, asking); !e.empty()) {
      if (top->name == "exec" && conn.tx != nullptr) {  // Redis discards the transaction
        discard_transaction(ctx.server, ctx.conn);
        ctx.reply.error(e);
      } else {
        reject(e);  // while queuing, EXEC will answer EXECABORT
      }
      return;
    }
  }
  // maxmemory (eviction.hpp): evict before a top-level command, as Redis's processCommand does;
  // not inside EXEC or a script (their commands run under locks the evictions would take).
  thread_local int nested = 0;
  ctx.top_level = nested == 0 && !conn.in_exec;
  // While clients are paused the dataset stays as it is: no eviction, and so no OOM refusal
  // (Redis 7.0: performEvictions answers EVICT_OK during a pause).
  bool room = true;
  if (nested == 0 && !conn.in_exec && ctx.server.eviction().maxmemory() != 0 &&
      ctx.server.paused(ctx.now_ms) == Server::kPauseNone) {
    room = ctx.server.eviction().make_room(ctx.ks, ctx.server.atomicity(), ctx.worker.index(),
                                           ctx.now_ms);
    // Keys evicted to make room are invalidated before this command's reply, as in Redis, which
    // evicts before it runs the command (no client modified them: no NOLOOP origin).
    if (tracking_pending()) tracking_flush(ctx.server, ctx.worker.index(), 0);
    if (notify_pending()) notify_flush(ctx.server, ctx.worker.index());  // "evicted" before its events
  }
  if (nested == 0 && !conn.in_exec) t_oom_before_command = !room;
  if (!room) {
    bool deny = denies_oom(*cmd, ctx.argv);
    // Queuing may take any amount of memory: inside MULTI every command but EXEC, DISCARD, QUIT
    // and RESET is refused (Redis's processCommand), and EXEC then answers EXECABORT.
    if (queuing && top->name != "exec" && top->name != "discard" && top->name != "quit" &&
        top->name != "reset")
      deny = true;
    if (top->name == "exec" && conn.tx != nullptr)  // EXEC of a queued write, as Redis
      deny = deny || any_queued(conn, denies_oom);
    if (deny) {
      // A refused EXEC discards the transaction and answers EXECABORT with the reason.
      reject_top(top, err::kOom);
      return;
    }
  }
  // min-replicas-to-write: with no replica, writes (and EXEC of one) are refused, as Redis's
  // processCommand refuses them after the memory check.
  if (nested == 0 && !conn.in_exec && !ctx.server.enough_good_replicas()) [[unlikely]] {
    bool write = writes(*cmd, ctx.argv);
    if (top->name == "exec" && conn.tx != nullptr) write = write || any_queued(conn, writes);
    if (write) {
      reject_top(top, err::kNoReplicas);
      return;
    }
  }
  if (ctx.top_level && postpone_if_paused(ctx, cmd)) return;
  if (queuing && !(top->flags & kTxControl)) {
    conn.tx->queued.emplace_back(ctx.argv.begin(), ctx.argv.end());
    for (std::string_view a : ctx.argv) conn.tx->bytes += a.size();
    ctx.reply.simple("QUEUED");
    ctx.counted = true;  // counted when EXEC runs it, not rejected
    return;
  }
  ++nested;
  struct Unnest {
    int& n;
    ~Unnest() { --n; }
  } unnest{nested};
  // Client-side caching: a tracking client's read registers its keys before it reads them.
  if (conn.tracking.on && (cmd->flags & kReadOnly)) tracking_before_read(ctx, *cmd, ctx.server, conn.tracking, conn.id);
  run_gated(ctx, cmd);
}

}  // namespace kvlab::server
