// CLIENT and its subcommands (ID, SETNAME, GETNAME, SETINFO, LIST, INFO, NO-EVICT, KILL, REPLY,
// UNBLOCK, PAUSE, UNPAUSE, …), answering as Redis 7.0 does; CLIENT LIST's line is client_line().

#include <malloc.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "server/commands/admin_internal.hpp"
#include "server/commands/args.hpp"
#include "server/commands/common.hpp"
#include "server/features/scripting.hpp"
#include "server/protocol/errors.hpp"
#include "server/util/memory.hpp"
#include "structures/keyspace.hpp"
#include "structures/reclaim/epoch.hpp"

namespace kvlab::server {

bool valid_client_word(std::string_view s) {
  for (char c : s)
    if (c < '!' || c > '~') return false;
  return true;
}

void set_client_name(CommandContext& ctx, std::string_view name) {
  ctx.server.clients().with_lock([&] {
    ctx.conn.info->name.assign(name);
    return 0;
  });
}

namespace {

// ---- CLIENT ----

const char* last_cmd_name(const ClientInfo& c) {
  const CommandSpec* cmd = c.last_cmd.load(std::memory_order_relaxed);
  return cmd == nullptr ? "NULL" : CommandTable::instance().full_name(cmd);
}

bool is_pubsub_client(const ClientInfo& c) {
  return c.sub.load(std::memory_order_relaxed) + c.psub.load(std::memory_order_relaxed) +
             c.ssub.load(std::memory_order_relaxed) >
         0;
}

// The calling connection's line shows its query buffer as it is now, holding the command being
// run (Redis: qbuf=26 for a lone CLIENT LIST); other connections', as their worker last stored it
// (after its batch of commands, when it has consumed them).
std::string client_line(CommandContext& ctx, const ClientInfo& c) {
  // REQUIRES: the registry lock is held (name, lib_name, lib_ver).
  const std::int64_t now_ms = ctx.now_ms;
  const std::size_t qbuf =
      &c == ctx.conn.info.get() ? ctx.conn.in.size() : c.qbuf.load(std::memory_order_relaxed);
  // Flags in Redis's order: P (pub/sub), b (blocked); N when none.
  char flags[8];
  char* f = flags;
  if (is_pubsub_client(c)) *f++ = 'P';
  if (c.blocked.load(std::memory_order_relaxed)) *f++ = 'b';
  if (c.no_evict.load(std::memory_order_relaxed)) *f++ = 'e';
  if (f == flags) *f++ = 'N';
  *f = '\0';
  const std::int64_t age = (now_ms - c.created_ms) / 1000;
  const std::int64_t idle = (now_ms - c.last_ms.load(std::memory_order_relaxed)) / 1000;
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s db=0 sub=%u "
      "psub=%u ssub=%u multi=-1 qbuf=%zu qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 "
      "obl=0 oll=0 omem=%zu tot-mem=%zu events=r cmd=%s user=default redir=-1 resp=%d "
      "lib-name=%s lib-ver=%s kvlab-worker=%u\n",
      static_cast<unsigned long long>(c.id), c.addr.c_str(), c.laddr.c_str(), c.fd, c.name.c_str(),
      static_cast<long long>(age), static_cast<long long>(idle < 0 ? 0 : idle), flags,
      c.sub.load(std::memory_order_relaxed), c.psub.load(std::memory_order_relaxed),
      c.ssub.load(std::memory_order_relaxed), qbuf, c.obuf.load(std::memory_order_relaxed),
      c.tot_mem.load(std::memory_order_relaxed), last_cmd_name(c),
      c.resp.load(std::memory_order_relaxed), c.lib_name.c_str(), c.lib_ver.c_str(), c.worker);
  return buf;
}

}  // namespace

void client_id_cmd(CommandContext& ctx) {
  ctx.reply.integer(static_cast<std::int64_t>(ctx.conn.id));
}

void client_setname_cmd(CommandContext& ctx) {
  if (!valid_client_word(ctx.arg(2))) {
    ctx.reply.error(err::kClientNameSpaces);
    return;
  }
  set_client_name(ctx, ctx.arg(2));
  ctx.reply.ok();
}

void client_getname_cmd(CommandContext& ctx) {
  const std::string name = ctx.server.clients().with_lock([&] { return ctx.conn.info->name; });
  if (name.empty()) {
    ctx.reply.null();
  } else {
    ctx.reply.bulk(name);
  }
}

void client_setinfo_cmd(CommandContext& ctx) {
  const std::string_view attr = ctx.arg(2);
  const std::string_view value = ctx.arg(3);
  const bool is_name = iequals(attr, "lib-name");
  if (!is_name && !iequals(attr, "lib-ver")) {
    ctx.reply.error(err::unrecognized_option(attr));
    return;
  }
  if (!valid_client_word(value)) {
    ctx.reply.error(err::client_setinfo_spaces(lower_name(attr)));
    return;
  }
  ctx.server.clients().with_lock([&] {
    (is_name ? ctx.conn.info->lib_name : ctx.conn.info->lib_ver).assign(value);
    return 0;
  });
  ctx.reply.ok();
}

void client_list_cmd(CommandContext& ctx) {
  enum { kAll, kNormal, kPubSubOnly, kNone } type = kAll;
  std::vector<std::uint64_t> ids;
  ArgParser p(ctx.argv, 2);
  while (!p.done()) {
    if (p.check("TYPE", 1)) {
      const std::string_view t = p.next();
      if (iequals(t, "normal")) {
        type = kNormal;
      } else if (iequals(t, "pubsub")) {
        type = kPubSubOnly;
      } else if (iequals(t, "master") || iequals(t, "replica") || iequals(t, "slave")) {
        type = kNone;
      } else {
        p.fail(err::unknown_client_type(t));
      }
    } else if (p.check("ID", 1)) {
      while (!p.done()) {  // every argument left is an id
        const std::int64_t id = p.next_int(1, std::numeric_limits<std::int64_t>::max(),
                                           err::kInvalidClientId, err::kInvalidClientId);
        if (p.ok()) ids.push_back(static_cast<std::uint64_t>(id));
      }
    } else {
      p.fail(err::kSyntax);
    }
  }
  if (p.reply_error(ctx.reply)) return;
  std::string out;
  if (type != kNone) {
    ctx.server.clients().for_each([&](const ClientInfo& c) {
      if (!ids.empty() && std::find(ids.begin(), ids.end(), c.id) == ids.end()) return;
      if (type == kNormal && is_pubsub_client(c)) return;
      if (type == kPubSubOnly && !is_pubsub_client(c)) return;
      out += client_line(ctx, c);
    });
  }
  ctx.reply.verbatim("txt", out);
}

void client_info_cmd(CommandContext& ctx) {
  const std::string line =
      ctx.server.clients().with_lock([&] { return client_line(ctx, *ctx.conn.info); });
  ctx.reply.verbatim("txt", line);
}

void client_no_evict_cmd(CommandContext& ctx) {
  const bool on = iequals(ctx.arg(2), "on");
  if (!on && !iequals(ctx.arg(2), "off")) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  ctx.conn.no_evict = on;
  ctx.conn.info->no_evict.store(on, std::memory_order_relaxed);  // relaxed: CLIENT LIST only
  ctx.reply.ok();
}

void client_noop_ok_cmd(CommandContext& ctx) {
  if (!iequals(ctx.arg(2), "on") && !iequals(ctx.arg(2), "off")) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  ctx.reply.ok();
}

void client_kill_cmd(CommandContext& ctx) {
  std::uint64_t id = 0;
  enum { kAny, kNormal, kPubSub, kNone } type = kAny;
  std::string_view addr, laddr;
  bool has_addr = false, has_laddr = false, skipme = true;
  const bool old_form = ctx.argc() == 3;
  if (old_form) {
    addr = ctx.arg(2);
    has_addr = true;
    skipme = false;
  } else {
    for (std::size_t i = 2; i < ctx.argc(); i += 2) {
      const std::string_view f = ctx.arg(i);
      if (i + 1 >= ctx.argc()) {
        ctx.reply.error(err::kSyntax);
        return;
      }
      const std::string_view v = ctx.arg(i + 1);
      if (iequals(f, "id")) {
        std::int64_t n = 0;
        if (!parse_i64(v, &n) || n < 1) {
          ctx.reply.error(err::kClientIdPositive);
          return;
        }
        id = static_cast<std::uint64_t>(n);
      } else if (iequals(f, "type")) {
        if (iequals(v, "normal")) {
          type = kNormal;
        } else if (iequals(v, "pubsub")) {
          type = kPubSub;
        } else if (iequals(v, "master") || iequals(v, "replica") || iequals(v, "slave")) {
          type = kNone;
        } else {
          ctx.reply.error(err::unknown_client_type(v));
          return;
        }
      } else if (iequals(f, "user")) {
        if (v != "default") {
          ctx.reply.error(err::no_such_user(v));
          return;
        }
      } else if (iequals(f, "addr")) {
        addr = v;
        has_addr = true;
      } else if (iequals(f, "laddr")) {
        laddr = v;
        has_laddr = true;
      } else if (iequals(f, "skipme")) {
        if (iequals(v, "yes")) {
          skipme = true;
        } else if (iequals(v, "no")) {
          skipme = false;
        } else {
          ctx.reply.error(err::kSyntax);
          return;
        }
      } else {
        ctx.reply.error(err::kSyntax);
        return;
      }
    }
  }
  // Others leave the registry now (their workers close them); the caller, with SKIPME no, stays
  // until its reply is written.
  bool self = false;
  std::vector<std::pair<std::uint64_t, unsigned>> victims;  // id, worker
  if (type != kNone) {
    victims = ctx.server.clients().remove_if([&](const ClientInfo& c) {
      if (id != 0 && c.id != id) return false;
      if (type == kNormal && is_pubsub_client(c)) return false;
      if (type == kPubSub && !is_pubsub_client(c)) return false;
      if (has_addr && c.addr != addr) return false;
      if (has_laddr && c.laddr != laddr) return false;
      if (c.id == ctx.conn.id) {
        self = !skipme;
        return false;
      }
      return true;
    });
  }
  for (const auto& [victim, worker] : victims) ctx.server.worker(worker).post_kill(victim);
  if (self) ctx.conn.close_after_reply = true;
  const std::size_t killed = victims.size() + (self ? 1 : 0);
  if (old_form) {
    if (killed == 0) {
      ctx.reply.error(err::kNoSuchClient);
    } else {
      ctx.reply.ok();
    }
    return;
  }
  ctx.reply.integer(static_cast<std::int64_t>(killed));
}

void client_reply_cmd(CommandContext& ctx) {
  using RM = Connection::ReplyMode;
  const std::string_view a = ctx.arg(2);
  if (iequals(a, "on")) {
    ctx.conn.reply_mode = RM::kOn;
    ctx.reply.ok();
  } else if (iequals(a, "off")) {
    ctx.conn.reply_mode = RM::kOff;
  } else if (iequals(a, "skip")) {
    if (ctx.conn.reply_mode != RM::kOff) ctx.conn.reply_mode = RM::kSkipNext;
  } else {
    ctx.reply.error(err::kSyntax);
  }
}

void client_unblock_cmd(CommandContext& ctx) {
  bool with_error = false;
  if (ctx.argc() == 4) {
    if (iequals(ctx.arg(3), "error")) {
      with_error = true;
    } else if (!iequals(ctx.arg(3), "timeout")) {
      ctx.reply.error(err::kUnblockReason);
      return;
    }
  } else if (ctx.argc() > 4) {
    ctx.reply.error(err::subcommand_syntax(ctx.arg(0), ctx.arg(1)));
    return;
  }
  std::int64_t id = 0;  // as Redis: the reason is checked before the id
  if (!arg_i64(ctx, ctx.arg(2), &id)) return;
  ctx.reply.integer(id > 0 && unblock_client(ctx, static_cast<std::uint64_t>(id), with_error) ? 1
                                                                                              : 0);
}

void client_pause_cmd(CommandContext& ctx) {
  Server::PauseClass cls = Server::kPauseAll;
  if (ctx.argc() == 4) {
    if (iequals(ctx.arg(3), "write")) {
      cls = Server::kPauseWrite;
    } else if (!iequals(ctx.arg(3), "all")) {
      ctx.reply.error(err::kPauseMode);
      return;
    }
  } else if (ctx.argc() > 4) {
    ctx.reply.error(err::subcommand_syntax(ctx.arg(0), ctx.arg(1)));
    return;
  }
  std::int64_t ms = 0;
  if (!parse_i64(ctx.arg(2), &ms)) {
    ctx.reply.error(err::kTimeoutNotInteger);
    return;
  }
  if (ms < 0) {
    ctx.reply.error(err::kTimeoutNegative);
    return;
  }
  if (ms > 0) {
    const auto end = static_cast<std::int64_t>(static_cast<std::uint64_t>(ms) +
                                               static_cast<std::uint64_t>(ctx.now_ms));
    ctx.server.pause(end, cls, ctx.now_ms);
  }
  ctx.reply.ok();
}

void client_unpause_cmd(CommandContext& ctx) {
  ctx.server.unpause();
  ctx.reply.ok();
}

void client_help_cmd(CommandContext& ctx) {
  reply_help(ctx, {"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                   "ID",
                   "    Return the ID of the current connection.",
                   "GETNAME",
                   "    Return the name of the current connection.",
                   "SETNAME <name>",
                   "    Assign the name <name> to the current connection.",
                   "SETINFO <LIB-NAME|LIB-VER> <value>",
                   "    Set client library name or version.",
                   "LIST [TYPE normal] [ID <id> ...]",
                   "    Return information about client connections.",
                   "INFO",
                   "    Return information about the current client connection.",
                   "KILL <ip:port>",
                   "    Kill connection made from <ip:port>.",
                   "KILL <option> <value> [<option> <value> [...]]",
                   "    Kill connections. Options are: ID <client-id>, TYPE (NORMAL|PUBSUB|",
                   "    MASTER|REPLICA), USER <username>, ADDR <ip:port>, LADDR <ip:port>,",
                   "    SKIPME (YES|NO).",
                   "PAUSE <timeout> [WRITE|ALL]",
                   "    Suspend all, or just write, clients for <timeout> milliseconds.",
                   "UNPAUSE",
                   "    Stop the current client pause, resuming traffic.",
                   "REPLY (ON|OFF|SKIP)",
                   "    Control the replies sent to the current connection.",
                   "UNBLOCK <clientid> [TIMEOUT|ERROR]",
                   "    Unblock the specified blocked client.",
                   "HELP",
                   "    Print this help."});
}

}  // namespace kvlab::server
