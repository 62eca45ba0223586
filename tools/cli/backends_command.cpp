// `kvlab backends [--format text|json|markdown] [--names]`: prints the registry.
#include <cstdio>
#include <string>

#include "structures/registry.hpp"
#include "tools/cli/subcommands.hpp"

namespace kvlab::cli {

void add_backends(CLI::App& app) {
  auto* sub = app.add_subcommand("backends", "List the registered backends and their traits");
  auto format = std::make_shared<std::string>("text");
  auto names = std::make_shared<bool>(false);
  sub->add_option("--format", *format, "text, json or markdown")
      ->check(CLI::IsMember({"text", "json", "markdown"}));
  sub->add_flag("--names", *names, "Only the names, one per line");
  sub->callback([format, names] {
    if (*names) {
      for (const auto& t : registered_backends()) std::printf("%.*s\n", int(t.name.size()), t.name.data());
      return;
    }
    const TableFormat f = *format == "json"       ? TableFormat::json
                          : *format == "markdown" ? TableFormat::markdown
                                                  : TableFormat::text;
    std::fputs(format_backend_table(f).c_str(), stdout);
  });
}

}  // namespace kvlab::cli
