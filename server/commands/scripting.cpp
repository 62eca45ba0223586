// Scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO, SCRIPT and FUNCTION, as Redis 7.0
// (the engine: scripting_registry.cpp, lua_values.cpp, lua_api.cpp, scripting_eval.cpp and
// scripting_functions.cpp beside this file, sharing scripting_engine.hpp).
//
// The script-running rows declare their keys (the numkeys form after the script/function name)
// and carry kEscalate, so that dispatch() runs the whole script as one escalated operation over
// exactly its KEYS, even a single key; kScript makes it escalate over the whole keyspace when the
// server runs with --lua-undeclared-keys yes. SCRIPT and FUNCTION have no keys: they are never
// held by the gate, so SCRIPT KILL reaches a running script from any worker.
#include "server/features/scripting.hpp"

#include "server/commands/common.hpp"

namespace kvlab::server {
namespace {

using namespace scripting;

void container_without_sub(CommandContext& ctx) {
  ctx.reply.error(err::wrong_arity(ctx.arg(0)));
}

const CommandSpec kScriptSubcommands[] = {
    {"load", 3, 0, script_load_cmd, 0, 0, 0, "scripting",
     "Load a Lua script into the scripts cache", "script", "2.6.0",
     "O(N) with N being the length in bytes of the script body."},
    {"exists", -3, 0, script_exists_cmd, 0, 0, 0, "scripting",
     "Check existence of scripts in the script cache", "sha1 [sha1 ...]", "2.6.0",
     "O(N) with N being the number of scripts to check"},
    {"flush", -2, 0, script_flush_cmd, 0, 0, 0, "scripting",
     "Remove all the scripts from the script cache", "[ASYNC|SYNC]", "2.6.0",
     "O(N) with N being the number of scripts in cache"},
    {"kill", 2, 0, script_kill_cmd, 0, 0, 0, "scripting", "Kill the script currently in execution",
     "", "2.6.0"},
    {"debug", 3, 0, script_debug_cmd, 0, 0, 0, "scripting",
     "Set the debug mode for executed scripts (kvlab has no debugger: YES and SYNC are refused)",
     "YES|SYNC|NO", "3.2.0"},
    {"help", 2, kLoading | kStale, script_help_cmd, 0, 0, 0, "scripting",
     "Show helpful text about the different subcommands", "", "5.0.0"},
};

const CommandSpec kFunctionSubcommands[] = {
    {"load", -3, kWrite | kDenyOom, function_load_cmd, 0, 0, 0, "scripting",
     "Create a function with the given arguments (name, code, description)",
     "[REPLACE] function-code", "7.0.0", "O(1) (considering compilation time is redundant)"},
    {"list", -2, 0, function_list_cmd, 0, 0, 0, "scripting",
     "List information about all the functions", "[LIBRARYNAME library-name-pattern] [WITHCODE]",
     "7.0.0", "O(N) where N is the number of functions"},
    {"delete", 3, kWrite, function_delete_cmd, 0, 0, 0, "scripting", "Delete a function by name",
     "library-name", "7.0.0"},
    {"flush", -2, kWrite, function_flush_cmd, 0, 0, 0, "scripting", "Deleting all functions",
     "[ASYNC|SYNC]", "7.0.0", "O(N) where N is the number of functions deleted"},
    {"kill", 2, 0, function_kill_cmd, 0, 0, 0, "scripting",
     "Kill the function currently in execution.", "", "7.0.0"},
    {"stats", 2, 0, function_stats_cmd, 0, 0, 0, "scripting",
     "Return information about the function currently running (name, description, duration)", "",
     "7.0.0"},
    {"dump", 2, 0, function_dump_cmd, 0, 0, 0, "scripting",
     "Dump all functions into a serialized binary payload (kvlab's own format)", "", "7.0.0",
     "O(N) where N is the number of functions"},
    {"restore", -3, kWrite | kDenyOom, function_restore_cmd, 0, 0, 0, "scripting",
     "Restore all the functions on the given payload", "serialized-value [FLUSH|APPEND|REPLACE]",
     "7.0.0", "O(N) where N is the number of functions on the payload"},
    {"help", 2, kLoading | kStale, function_help_cmd, 0, 0, 0, "scripting",
     "Show helpful text about the different subcommands", "", "7.0.0"},
};

constexpr std::uint32_t kRun = kEscalate | kScript;

const CommandSpec kScriptingCommands[] = {
    {"eval",
     -3,
     kRun,
     eval_cmd,
     0,
     0,
     0,
     "scripting",
     "Execute a Lua script server side",
     "script numkeys [key [key ...]] [arg [arg ...]]",
     "2.6.0",
     "Depends on the script that is executed.",
     {},
     keys_after_numkeys<2>},
    {"evalsha",
     -3,
     kRun,
     evalsha_cmd,
     0,
     0,
     0,
     "scripting",
     "Execute a Lua script server side",
     "sha1 numkeys [key [key ...]] [arg [arg ...]]",
     "2.6.0",
     "Depends on the script that is executed.",
     {},
     keys_after_numkeys<2>},
    {"eval_ro",
     -3,
     kRun | kReadOnly,
     eval_ro_cmd,
     0,
     0,
     0,
     "scripting",
     "Execute a read-only Lua script server side",
     "script numkeys [key [key ...]] [arg [arg ...]]",
     "7.0.0",
     "Depends on the script that is executed.",
     {},
     keys_after_numkeys<2>},
    {"evalsha_ro",
     -3,
     kRun | kReadOnly,
     evalsha_ro_cmd,
     0,
     0,
     0,
     "scripting",
     "Execute a read-only Lua script server side",
     "sha1 numkeys [key [key ...]] [arg [arg ...]]",
     "7.0.0",
     "Depends on the script that is executed.",
     {},
     keys_after_numkeys<2>},
    {"fcall",
     -3,
     kRun,
     fcall_cmd,
     0,
     0,
     0,
     "scripting",
     "Invoke a function",
     "function numkeys [key [key ...]] [arg [arg ...]]",
     "7.0.0",
     "Depends on the function that is executed.",
     {},
     keys_after_numkeys<2>},
    {"fcall_ro",
     -3,
     kRun | kReadOnly,
     fcall_ro_cmd,
     0,
     0,
     0,
     "scripting",
     "Invoke a read-only function",
     "function numkeys [key [key ...]] [arg [arg ...]]",
     "7.0.0",
     "Depends on the function that is executed.",
     {},
     keys_after_numkeys<2>},
    {"script", -2, 0, container_without_sub, 0, 0, 0, "scripting",
     "A container for Lua scripts management commands", "", "2.6.0", "Depends on subcommand.",
     kScriptSubcommands},
    {"function", -2, 0, container_without_sub, 0, 0, 0, "scripting",
     "A container for function commands", "", "7.0.0", "Depends on subcommand.",
     kFunctionSubcommands},
};

}  // namespace

std::span<const CommandSpec> scripting_commands() {
  return kScriptingCommands;
}

}  // namespace kvlab::server
