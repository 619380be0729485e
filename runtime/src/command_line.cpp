#include "quern/command_line.hpp"

#include <iostream>
#include <string>

#include <caf/config_value.hpp>
#include <caf/dictionary.hpp>

namespace quern {

namespace {

std::string program_name(int argc, char** argv) {
  if (argc < 1 || argv[0] == nullptr)
    return "program";
  std::string path = argv[0];
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

std::optional<int> parse_command_line(caf::actor_system_config& cfg, int argc,
                                      char** argv) {
  auto name = program_name(argc, argv);
  if (auto err = cfg.parse(argc, argv)) {
    // CAF names the argument it refused in the error's context.
    std::string arg;
    if (auto& ctx = err.context();
        ctx.size() == 1 && ctx.match_element<caf::dictionary<caf::config_value>>(0)) {
      auto& fields = ctx.get_as<caf::dictionary<caf::config_value>>(0);
      if (auto i = fields.find("argument"); i != fields.end())
        if (auto* text = caf::get_if<std::string>(&i->second))
          arg = *text;
    }
    // CAF reports an unknown name and a malformed value alike.
    if (arg.find('=') != std::string::npos)
      std::cerr << name << ": unknown option or bad value '" << arg << "' (see --help)\n";
    else if (!arg.empty())
      std::cerr << name << ": unknown option '" << arg << "' (see --help)\n";
    else
      std::cerr << name << ": " << cfg.render(err) << " (see --help)\n";
    return 2;
  }
  if (cfg.cli_helptext_printed)
    return 0;
  if (!cfg.remainder.empty()) {
    std::cerr << name << ": unexpected argument '" << cfg.remainder.front()
              << "' (see --help)\n";
    return 2;
  }
  return std::nullopt;
}

} // namespace quern
