// CONFIG GET/SET/RESETSTAT/REWRITE/HELP over the parameter table (config_params.cpp): every
// parameter that Redis 7.0's `CONFIG GET *` lists, so that clients and tools that read or tune
// them (redis-cli, benchmarks, client libraries, test suites) see what they expect, and kvlab's
// own (kvlab-threads, ...). CONFIG SET of several parameters validates all first and applies them
// under the table's lock, so a failing one changes none (Redis 7 semantics).
#include <mutex>
#include <string>
#include <vector>

#include "server/commands/common.hpp"
#include "server/commands/config_table.hpp"

namespace kvlab::server {
namespace {

using config::kFixed;
using config::kHidden;
using config::kImmutable;
using config::kProtected;
using config::Param;

// As Redis's strpbrk(name, "[*?"): a pattern with only '\\' escapes is looked up as a name.
bool has_glob(std::string_view s) {
  return s.find_first_of("*?[") != std::string_view::npos;
}

void config_get_cmd(CommandContext& ctx) {
  // One entry per (parameter, name used): a parameter's alias is listed as its own entry, as in
  // Redis, and a parameter matched by several patterns is listed once.
  std::vector<std::pair<std::string, std::size_t>> out;
  std::vector<bool> seen(config::params().size() * 2, false);
  auto add = [&](std::size_t i, bool alias, std::string_view shown) {
    if (seen[i * 2 + (alias ? 1 : 0)]) return;
    seen[i * 2 + (alias ? 1 : 0)] = true;
    out.emplace_back(std::string(shown), i);
  };
  for (std::size_t a = 2; a < ctx.argc(); ++a) {
    const std::string_view pat = ctx.arg(a);
    // Redis reads a pattern as a C string (strpbrk, stringmatch: up to its first NUL) and looks a
    // name up whole.
    const std::string_view glob = pat.substr(0, pat.find('\0'));
    for (std::size_t i = 0; i < config::params().size(); ++i) {
      const Param& p = config::params()[i];
      if (has_glob(glob)) {
        if (p.flags & kHidden) continue;
        if (glob_match(glob, p.name, true)) add(i, false, p.name);
        if (!p.alias.empty() && glob_match(glob, p.alias, true)) add(i, true, p.alias);
      } else if (iequals(pat, p.name)) {
        add(i, false, pat);  // Redis echoes a plain name as it was given
      } else if (!p.alias.empty() && iequals(pat, p.alias)) {
        add(i, true, pat);
      }
    }
  }
  std::lock_guard<std::mutex> lock(config::mutex());
  ctx.reply.map(out.size());
  for (const auto& [name, i] : out) {
    ctx.reply.bulk(name);
    ctx.reply.bulk(config::get_value(ctx.server, i));
  }
}

void config_set_cmd(CommandContext& ctx) {
  if (ctx.argc() % 2 != 0) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  // 1. Names: unknown, immutable, protected and duplicate parameters fail before any value is
  //    looked at. 2. Values: all validated. 3. All applied under one lock: any error sets none.
  std::vector<std::size_t> idx;
  for (std::size_t a = 2; a < ctx.argc(); a += 2) {
    const Param* p = config::find_param(ctx.arg(a));
    if (p == nullptr) {
      ctx.reply.error(err::config_set_unknown(ctx.arg(a)));
      return;
    }
    if (p->flags & kImmutable) {
      ctx.reply.error(err::config_set_invalid(ctx.arg(a), "can't set immutable config"));
      return;
    }
    if (p->flags & kProtected) {
      ctx.reply.error(err::config_set_invalid(ctx.arg(a), "can't set protected config"));
      return;
    }
    for (std::size_t b = 2; b < a; b += 2) {
      if (iequals(ctx.arg(b), ctx.arg(a))) {
        ctx.reply.error(err::config_set_invalid(ctx.arg(a), "duplicate parameter"));
        return;
      }
    }
    idx.push_back(static_cast<std::size_t>(p - config::params().data()));
  }
  std::vector<std::string> canon(idx.size());
  bool maxmemory_set = false;
  {
    std::lock_guard<std::mutex> lock(config::mutex());
    for (std::size_t k = 0; k < idx.size(); ++k) {
      const Param& p = config::params()[idx[k]];
      const std::string_view given = ctx.arg(2 + 2 * k);
      std::string why;
      if (!config::canonical(p, ctx.arg(3 + 2 * k), &canon[k], &why)) {
        ctx.reply.error(err::config_set_invalid(given, why));
        return;
      }
      if ((p.flags & kFixed) && canon[k] != config::get_value(ctx.server, idx[k])) {
        ctx.reply.error(err::config_set_invalid(
            given, "kvlab-server cannot change this setting at run time (it is " +
                       config::get_value(ctx.server, idx[k]) + ")"));
        return;
      }
    }
    for (std::size_t k = 0; k < idx.size(); ++k) {
      config::apply_value(ctx.server, idx[k], canon[k]);
      maxmemory_set = maxmemory_set || config::params()[idx[k]].name == "maxmemory";
    }
  }
  // As Redis 7.0, a new maxmemory evicts at once, not at the next command (and its "evicted"
  // events leave with this reply). CONFIG SET holds no key locks here: it names no keys, and it
  // cannot run inside a script; inside EXEC the locks are held, so the next command evicts.
  if (maxmemory_set && !ctx.conn.in_exec && ctx.server.eviction().maxmemory() != 0 &&
      ctx.server.paused(ctx.now_ms) == Server::kPauseNone)
    ctx.server.eviction().make_room(ctx.ks, ctx.server.atomicity(), ctx.worker.index(), ctx.now_ms);
  ctx.reply.ok();
}

void config_resetstat_cmd(CommandContext& ctx) {
  ctx.server.reset_stats();
  ctx.reply.ok();
}

void config_rewrite_cmd(CommandContext& ctx) {
  ctx.reply.error(err::kNoConfigFile);
}

void config_help_cmd(CommandContext& ctx) {
  static constexpr std::string_view kLines[] = {
      "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "GET <pattern>",
      "    Return parameters matching the glob-like <pattern> and their values.",
      "SET <directive> <value>",
      "    Set the configuration <directive> to <value>.",
      "RESETSTAT",
      "    Reset statistics reported by the INFO command.",
      "REWRITE",
      "    Rewrite the configuration file.",
      "HELP",
      "    Prints this help."};
  ctx.reply.array(std::size(kLines));
  for (auto l : kLines) ctx.reply.simple(l);
}

const CommandSpec kConfigSubcommands[] = {
    {"get", -3, kAdmin | kLoading | kStale, config_get_cmd, 0, 0, 0, "server",
     "Get the values of configuration parameters", "parameter ...", "2.0.0",
     "O(N) when N is the number of configuration parameters provided"},
    {"set", -4, kAdmin | kLoading | kStale, config_set_cmd, 0, 0, 0, "server",
     "Set configuration parameters to the given values", "parameter value [parameter value ...]",
     "2.0.0", "O(N) when N is the number of configuration parameters provided"},
    {"resetstat", 2, kAdmin | kLoading | kStale, config_resetstat_cmd, 0, 0, 0, "server",
     "Reset the stats returned by INFO", "", "2.0.0"},
    {"rewrite", 2, kAdmin | kLoading | kStale, config_rewrite_cmd, 0, 0, 0, "server",
     "Rewrite the configuration file with the in memory configuration", "", "2.8.0"},
    {"help", 2, kLoading | kStale, config_help_cmd, 0, 0, 0, "server",
     "Show helpful text about the different subcommands", "", "5.0.0"},
};

}  // namespace

std::span<const CommandSpec> config_subcommands() {
  return kConfigSubcommands;
}

bool parse_memory_units(std::string_view s, std::uint64_t* out) {
  return config::parse_memory(s, out);
}

std::string config_soft_value(std::string_view name) {
  std::lock_guard<std::mutex> lock(config::mutex());
  for (std::size_t i = 0; i < config::params().size(); ++i)
    if (config::params()[i].name == name) return config::values()[i];
  return {};
}

}  // namespace kvlab::server
