// CLIENT TRACKING, CLIENT CACHING, CLIENT GETREDIR and CLIENT TRACKINGINFO (Redis 7.0,
// networking.c): option parsing and the checks in Redis's order, with its error texts. The rows
// live in admin.cpp's CLIENT subcommand table; the mechanism is server/features/tracking.hpp.
#include "server/features/tracking.hpp"

#include <string>
#include <vector>

#include "server/commands/args.hpp"
#include "server/commands/common.hpp"
#include "server/net/session.hpp"

namespace kvlab::server {

void client_tracking_cmd(CommandContext& ctx) {
  std::int64_t redirect = 0;
  bool bcast = false, optin = false, optout = false, noloop = false;
  std::vector<std::string> prefixes;
  ArgParser p(ctx.argv, 3);
  while (!p.done()) {
    if (p.check("redirect", 1)) {
      if (redirect != 0) {
        p.fail(err::kTrackingRedirectOne);
        break;
      }
      redirect = p.next_int();
      // Required to exist now, even though it may disconnect later (Redis's sanity check).
      if (p.ok() &&
          (redirect <= 0 || !ctx.server.clients().find(static_cast<std::uint64_t>(redirect))))
        p.fail(err::kTrackingRedirectMissing);
    } else if (p.check("bcast")) {
      bcast = true;
    } else if (p.check("optin")) {
      optin = true;
    } else if (p.check("optout")) {
      optout = true;
    } else if (p.check("noloop")) {
      noloop = true;
    } else if (p.check("prefix", 1)) {
      prefixes.emplace_back(p.next());
    } else {
      p.fail(err::kSyntax);
    }
  }
  if (p.reply_error(ctx.reply)) return;
  TrackingFlags& t = ctx.conn.tracking;
  TrackingRegistry& reg = ctx.server.tracking();
  if (iequals(ctx.arg(2), "on")) {
    if (!bcast && !prefixes.empty()) {
      ctx.reply.error(err::kTrackingPrefixNeedsBcast);
      return;
    }
    if (t.on && t.bcast != bcast) {
      ctx.reply.error(err::kTrackingBcastSwitch);
      return;
    }
    if (bcast && (optin || optout)) {
      ctx.reply.error(err::kTrackingOptBcast);
      return;
    }
    if (optin && optout) {
      ctx.reply.error(err::kTrackingOptInAndOut);
      return;
    }
    if ((optin && t.optout) || (optout && t.optin)) {
      ctx.reply.error(err::kTrackingOptSwitch);
      return;
    }
    if (bcast) {
      if (std::string e = reg.check_prefixes(ctx.conn.id, prefixes); !e.empty()) {
        ctx.reply.error(e);
        return;
      }
    }
    t.on = true;
    t.bcast = bcast;
    t.optin = optin;
    t.optout = optout;
    t.noloop = noloop;
    t.redirect = static_cast<std::uint64_t>(redirect);  // CACHING is kept, as in Redis
    reg.enable({ctx.worker.index(), ctx.conn.id}, t.redirect, bcast, noloop, prefixes);
  } else if (iequals(ctx.arg(2), "off")) {
    tracking_forget(ctx.server, ctx.conn);
  } else {
    ctx.reply.error(err::kSyntax);
    return;
  }
  ctx.reply.ok();
}

void client_caching_cmd(CommandContext& ctx) {
  TrackingFlags& t = ctx.conn.tracking;
  if (!t.on) {
    ctx.reply.error(err::kCachingNeedsOpt);
    return;
  }
  const std::string_view o = ctx.arg(2);
  if (iequals(o, "yes")) {
    if (!t.optin) {
      ctx.reply.error(err::kCachingYesNeedsOptIn);
      return;
    }
  } else if (iequals(o, "no")) {
    if (!t.optout) {
      ctx.reply.error(err::kCachingNoNeedsOptOut);
      return;
    }
  } else {
    ctx.reply.error(err::kSyntax);
    return;
  }
  t.caching = true;  // for the next command (Worker::execute clears it after any non-CLIENT one)
  ctx.reply.ok();
}

void client_getredir_cmd(CommandContext& ctx) {
  const TrackingFlags& t = ctx.conn.tracking;
  ctx.reply.integer(t.on ? static_cast<std::int64_t>(t.redirect) : -1);
}

void client_trackinginfo_cmd(CommandContext& ctx) {
  const TrackingFlags& t = ctx.conn.tracking;
  std::vector<std::string_view> flags;
  flags.push_back(t.on ? "on" : "off");
  if (t.bcast) flags.push_back("bcast");
  if (t.optin) {
    flags.push_back("optin");
    if (t.caching) flags.push_back("caching-yes");
  }
  if (t.optout) {
    flags.push_back("optout");
    if (t.caching) flags.push_back("caching-no");
  }
  if (t.noloop) flags.push_back("noloop");
  if (t.on && t.redirect != 0 && ctx.server.tracking().broken_redirect(ctx.conn.id))
    flags.push_back("broken_redirect");
  ctx.reply.map(3);
  ctx.reply.bulk("flags");
  ctx.reply.set(flags.size());
  for (std::string_view f : flags) ctx.reply.bulk(f);
  ctx.reply.bulk("redirect");
  ctx.reply.integer(t.on ? static_cast<std::int64_t>(t.redirect) : -1);
  ctx.reply.bulk("prefixes");
  const std::vector<std::string> p =
      t.on && t.bcast ? ctx.server.tracking().prefixes_of(ctx.conn.id) : std::vector<std::string>{};
  ctx.reply.array(p.size());
  for (const std::string& s : p) ctx.reply.bulk(s);
}

}  // namespace kvlab::server
