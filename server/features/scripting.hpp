// Lua scripting as Redis 7.0 has it (EVAL, EVALSHA, *_RO, SCRIPT, FCALL, FUNCTION), on Lua 5.1
// with cjson and bit, run under kvlab's --atomicity scheme.
//
// Design:
// - One lua_State per worker thread, created on the worker's first script. The script cache
//   (sha1 -> body) and the function libraries live in one process-wide registry under a mutex;
//   each worker compiles a body on first use. SCRIPT FLUSH, FUNCTION LOAD/DELETE/FLUSH/RESTORE bump
//   a generation counter: a worker whose state is older drops its compiled functions.
// - Atomicity: the EVAL/EVALSHA/FCALL rows declare their keys (the numkeys form) and carry
//   kEscalate, so dispatch() runs the whole script as one escalated operation over exactly its
//   declared KEYS (server/core/atomicity.hpp). redis.call runs commands with conn.in_exec set (the locks
//   are held: no gate), through dispatch(), into a scratch buffer whose RESP2 reply is parsed into
//   Lua values. Under --atomicity key-locks a call on a key outside KEYS is refused, unless the
//   server runs with --lua-undeclared-keys yes: then every script escalates over the whole
//   keyspace. Under --atomicity global every escalation is exclusive, so any key is allowed.
// - Timeout: a count hook compares the elapsed time with busy-reply-threshold (lua-time-limit);
//   past it, the script's worker serves its other connections from the hook (BUSY, or SCRIPT KILL
//   / FUNCTION KILL: Worker::serve_while_busy), and a KILL from any worker (no keys: never held by
//   the gate) stops a script that has not written. A worker whose command waits for the gate
//   while a script is past the threshold serves its other connections the same way (the
//   Atomicity wait hook, Worker::gate_wait_hook), so SCRIPT KILL reaches a script from any
//   connection. Difference from Redis: a command that already waits for the script's locks is
//   not answered BUSY; it runs once the script ends or is killed.
//
// Thread safety: the handlers run on the calling worker's thread with its own lua_State; the
// registry and the per-worker run slots (read by SCRIPT KILL) are shared and synchronized.
//
// This header is the interface that lower layers use (dispatch, INFO, tracking); the engine that
// defines it runs commands as a client does, so it is in the commands layer
// (server/commands/scripting_engine.hpp lists its files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace kvlab::server {

struct CommandContext;

namespace scripting {

// busy-reply-threshold / lua-time-limit in milliseconds (CONFIG GET/SET; default 5000).
std::int64_t busy_threshold_ms();
void set_busy_threshold_ms(std::int64_t ms);
// For harnesses that run scripts with nobody to send SCRIPT KILL (tests/fuzz/lua_fuzz.cpp): a
// script still running after ms milliseconds is killed as SCRIPT KILL kills it, written or not.
// 0 (the server's setting) never kills. Relaxed: the hook reads it every 100,000 instructions.
void set_kill_after_ms(std::int64_t ms);
// DEBUG SET-DISABLE-DENY-SCRIPTS: whether scripts may call DEBUG (Redis's tests switch it on to
// call DEBUG PROTOCOL from a script). Redis lifts its whole noscript check; kvlab lifts it for
// DEBUG only, since the others (EVAL, MULTI, SUBSCRIBE, CLIENT…) would re-enter the script
// engine or change the connection a script runs on. Relaxed: an independent switch.
void set_disable_deny_scripts(bool on);

// INFO memory's script counts: cached EVAL scripts (SCRIPT LOAD, EVAL), functions, libraries.
struct CacheCounts {
  std::size_t scripts = 0, functions = 0, libraries = 0;
};
CacheCounts cache_counts();
// An estimate of the memory the cached script bodies and the libraries hold (not the Lua states,
// which used_memory does not count). O(scripts + functions).
std::size_t cache_bytes();

// Whether the calling thread runs a command on behalf of a script (redis.call): SORT then sorts
// what it would leave in a set's order, as Redis does for a script (the CLIENT_SCRIPT flag).
bool called_from_script();

// 0 when no script of the first `workers` workers has run past busy-reply-threshold, otherwise
// that script's kind (1 EVAL/EVALSHA, 2 FCALL). Any thread; relaxed reads (a script that just
// crossed the threshold is seen at the caller's next poll).
int busy_script_kind(unsigned workers);

// The keys the script running on this thread declared (EVAL's or FCALL's KEYS); empty when no
// script runs. Client-side caching remembers these, not the keys the script reads, when the
// script calls a read command (Redis 7.0 tracks the script command's own keys).
std::span<const std::string_view> script_keys();

// How Redis 7.0 flags a script-running command (EVAL, EVALSHA, FCALL and their _RO forms, named
// by `command` in lower case) before it runs, from the script's shebang or the function's flags.
// A script without a shebang (or with a malformed one), or an unknown SHA or function, declares
// nothing: it is judged by each command it calls. A declared script may write unless flagged
// no-writes, and is refused under OOM unless flagged no-writes or allow-oom.
struct ScriptFlags {
  bool declared = false;
  bool may_write = false;
  bool deny_oom = false;
};
ScriptFlags script_flags(std::string_view command, std::span<const std::string_view> argv);

void eval_cmd(CommandContext& ctx);
void evalsha_cmd(CommandContext& ctx);
void eval_ro_cmd(CommandContext& ctx);
void evalsha_ro_cmd(CommandContext& ctx);
void fcall_cmd(CommandContext& ctx);
void fcall_ro_cmd(CommandContext& ctx);

void script_load_cmd(CommandContext& ctx);
void script_exists_cmd(CommandContext& ctx);
void script_flush_cmd(CommandContext& ctx);
void script_kill_cmd(CommandContext& ctx);
void script_help_cmd(CommandContext& ctx);
void script_debug_cmd(CommandContext& ctx);

void function_load_cmd(CommandContext& ctx);
void function_list_cmd(CommandContext& ctx);
void function_delete_cmd(CommandContext& ctx);
void function_flush_cmd(CommandContext& ctx);
void function_kill_cmd(CommandContext& ctx);
void function_stats_cmd(CommandContext& ctx);
void function_dump_cmd(CommandContext& ctx);
void function_restore_cmd(CommandContext& ctx);
void function_help_cmd(CommandContext& ctx);

}  // namespace scripting
}  // namespace kvlab::server
