#include "server/commands/scan_args.hpp"

#include "server/commands/common.hpp"

namespace kvlab::server {

bool parse_scan_cursor_arg(CommandContext& ctx, std::size_t index, ScanArgs* a) {
  if (parse_scan_cursor(ctx.arg(index), &a->cursor)) return true;
  ctx.reply.error(err::kInvalidCursor);
  return false;
}

std::string_view scan_options_error(std::span<const std::string_view> argv, std::size_t first,
                                    unsigned allowed, ScanArgs* a) {
  for (std::size_t i = first; i < argv.size();) {
    const std::string_view name = argv[i];
    const bool has_value = i + 1 < argv.size();
    if (iequals(name, "count") && has_value) {
      std::int64_t count = 0;
      if (!parse_i64(argv[i + 1], &count)) return err::kNotInteger;
      if (count < 1) return err::kSyntax;
      a->count = static_cast<std::uint64_t>(count);
      i += 2;
    } else if (iequals(name, "match") && has_value) {
      a->pattern = argv[i + 1];
      a->has_pattern = a->pattern != "*";
      i += 2;
    } else if ((allowed & kScanType) && iequals(name, "type") && has_value) {
      a->type = argv[i + 1];
      a->has_type = true;
      i += 2;
    } else if ((allowed & kScanNoValues) && iequals(name, "novalues")) {
      a->novalues = true;
      i += 1;
    } else {
      return err::kSyntax;
    }
  }
  return {};
}

std::string_view scan_options_error(const CommandContext& ctx, std::size_t first, unsigned allowed,
                                    ScanArgs* a) {
  return scan_options_error(ctx.argv, first, allowed, a);
}

bool parse_scan_options(CommandContext& ctx, std::size_t first, unsigned allowed, ScanArgs* a) {
  const std::string_view e = scan_options_error(ctx, first, allowed, a);
  if (e.empty()) return true;
  ctx.reply.error(e);
  return false;
}

}  // namespace kvlab::server
