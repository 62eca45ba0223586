// Start-up configuration, from the one parameter table that CONFIG GET/SET also serve
// (commands/config.cpp): the command line `kvlab-server [FILE] [--NAME VALUE ...]`, and config
// files in redis.conf syntax (`maxmemory 1gb`, `include other.conf`, quotes as Redis reads them)
// or as `name = value` lines. Every name is a table row: Redis's parameters by their CONFIG names,
// kvlab's own (threads, backend, ...) by their flag names. A name no row knows is an error that
// names the closest known one, so a typo never starts a server on a default.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvlab::server {

struct Config;
class Server;

class StartupConfig {
 public:
  // Reads argv: an optional config file first (or --config FILE anywhere), then --NAME VALUE...
  // or --NAME=VALUE; the command line wins over the file. Flags that act instead of configuring
  // (--help, --version, --list-backends, ...) are returned in *actions.
  bool parse_args(int argc, char** argv, std::vector<std::string>* actions, std::string* error);
  // One config file; `include` nests up to 16 deep.
  bool read_file(const std::string& path, int depth, std::string* error);
  // One setting as given (a flag or a file line named by `origin`): validated as CONFIG SET
  // validates it, then kept (a later setting of the same parameter wins).
  bool set(std::string_view name, const std::vector<std::string>& words, const std::string& origin,
           std::string* error);
  // Before the server exists: the settings that shape it (port, threads, backend, maxmemory...).
  bool to_config(Config* config, std::string* error) const;
  // Once it exists: every other setting, applied as CONFIG SET applies it (immutable ones too).
  void apply(Server& server) const;
  // Settings kvlab accepts and shows but does not act on (persistence, replication, ...), as
  // "name value", for one warning line.
  std::vector<std::string> without_effect() const;

 private:
  struct Setting {
    std::size_t param;
    std::string value;   // canonical
    std::string origin;  // "--port" or "file:line"
  };
  std::vector<Setting> settings_;
};

// The --help text and the --list-config table (name, flag, type, default, effect), both from the
// parameter table.
std::string config_usage();
std::string config_table_text();
// The known name closest to `name` (for "did you mean"), empty when none is close.
std::string closest_config_name(std::string_view name);

}  // namespace kvlab::server
