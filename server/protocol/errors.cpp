// The error texts that take more than a line to build; their declarations, and every other text,
// are in errors.hpp. Out of line so that dispatch() calls them rather than inlining them.
#include "server/protocol/errors.hpp"

namespace kvlab::server::err {

std::string unknown_command(std::string_view name, const std::string_view* args, std::size_t argc) {
  std::string out = "ERR unknown command '";
  out.append(name.substr(0, 128));
  out += "', with args beginning with: ";
  std::string list;
  for (std::size_t i = 0; i < argc && list.size() < 128; ++i) {
    // Redis's "'%.*s' " with 128 minus the length so far, taken before the opening quote.
    const std::size_t room = 128 - list.size();
    list += '\'';
    list.append(args[i].substr(0, room));
    list += "' ";
  }
  return out + list;
}

std::string wrong_arity(std::string_view full_name) {
  return "ERR wrong number of arguments for '" + std::string(full_name) + "' command";
}

std::string subcommand_syntax(std::string_view command, std::string_view sub) {
  std::string upper(command);
  for (char& c : upper)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  return "ERR unknown subcommand or wrong number of arguments for '" +
         std::string(sub.substr(0, 128)) + "'. Try " + upper + " HELP.";
}

std::string unknown_subcommand(std::string_view sub, std::string_view command_upper) {
  return "ERR unknown subcommand '" + std::string(sub.substr(0, 128)) + "'. Try " +
         std::string(command_upper) + " HELP.";
}

}  // namespace kvlab::server::err
