#pragma once
// The command line of quern's programs -- examples, benchmarks, the soak test
// (Boost.Program_options): one way to answer --help, to name a bad option or a
// stray argument, and to show defaults as a person writes them; quern-board
// names its positional arguments and its own texts (parse_settings). CMake
// target quern_command_line; programs with no options of their own use
// quern::parse_command_line (quern/command_line.hpp) instead.

#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "quern/error.hpp"

namespace quern::cli {

namespace po = boost::program_options;

/// What a program with named positional arguments or its own texts changes in
/// parse_options; the defaults are those of examples and benchmarks.
struct parse_settings {
  /// Positional arguments, in order, one value each: options of `hidden`
  /// (e.g. "logdir"). With names, an argument beyond them is Boost's error
  /// (too many positional options); without, it is named as unexpected.
  std::vector<std::string> positional;
  /// Options that --help does not show, such as the positional arguments.
  po::options_description hidden;
  /// The status after a usage error.
  int usage_status = 2;
  /// Prints --help's answer (default: `desc` and a blank line).
  std::function<void(std::ostream&)> help;
  /// Reports a usage error, given why (default: "program: why (see --help)"
  /// on stderr).
  std::function<void(const std::string& why)> usage_error;
};

/// Parses the command line with `desc` (which must have a "help" option) into
/// `vm`. Returns the status to exit with now, or nothing to go on: 0 after
/// --help printed its answer; `settings.usage_status` (2) after an error that
/// names `program` and the bad argument (`csv_pipeline: unrecognised option
/// '--epoch'`, `csv_pipeline: unexpected argument 'data.csv'`).
inline std::optional<int> parse_options(const std::string& program, int argc, char** argv,
                                        const po::options_description& desc,
                                        po::variables_map& vm,
                                        const parse_settings& settings) {
  auto usage_error = [&](const std::string& why) {
    if (settings.usage_error)
      settings.usage_error(why);
    else
      std::cerr << program << ": " << why << " (see --help)\n";
    return settings.usage_status;
  };
  // Without named positional arguments, they are collected so that the
  // first can be named.
  std::vector<std::string> stray;
  po::options_description all;
  all.add(desc).add(settings.hidden);
  po::positional_options_description positional;
  for (auto& name : settings.positional)
    positional.add(name.c_str(), 1);
  if (settings.positional.empty()) {
    all.add_options()("quern-stray-argument", po::value(&stray));
    positional.add("quern-stray-argument", -1);
  }
  try {
    po::store(
        po::command_line_parser(argc, argv).options(all).positional(positional).run(),
        vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return usage_error(e.what());
  }
  if (vm.count("help")) {
    if (settings.help)
      settings.help(std::cout);
    else
      std::cout << desc << "\n";
    return 0;
  }
  if (!stray.empty())
    return usage_error("unexpected argument '" + stray.front() + "'");
  return std::nullopt;
}

/// The same with the defaults: no positional arguments, exit status 2.
inline std::optional<int> parse_options(const std::string& program, int argc, char** argv,
                                        const po::options_description& desc,
                                        po::variables_map& vm) {
  return parse_options(program, argc, argv, desc, vm, parse_settings{});
}

/// How to run quern-board from where the user stands: the one built beside
/// this program (`build/tools/quern-board` for `build/examples/<example>`),
/// relative to the working directory when it is below it, or `quern-board`
/// (installed, on PATH) when there is none.
inline std::string board_command() {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return "quern-board";
  auto beside = self.parent_path().parent_path() / "tools" / "quern-board";
  if (!fs::exists(beside, ec))
    return "quern-board";
  auto here = fs::current_path(ec);
  auto rel = ec ? fs::path{} : beside.lexically_relative(here);
  if (!rel.empty() && *rel.begin() != "..")
    return rel.string();
  return beside.string();
}

/// The line an example ends with: where its scalars went and how to see them
/// (commands that work as printed).
inline std::string charts_hint(const std::string& logdir) {
  return "scalars logged to " + logdir + "\ncharts of them:  " + board_command() +
         " html " + logdir + "  (writes " + logdir +
         "/index.html)   or:  tensorboard --logdir " + logdir + "\n";
}

/// Runs a program's body `f` (returning its exit status) and turns an
/// exception that escapes it into the program's last line and status 1:
/// `five_groups: OutOfRange: ...` for a quern error (its TensorFlow code),
/// `five_groups: ...` for any other.
template <class F>
int run_reporting(const std::string& program, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    std::string code;
    if (auto* op = dynamic_cast<const quern::op_error*>(&e))
      code = std::string(quern::error_code_name(op->code())) + ": ";
    std::cerr << program << ": " << code << e.what() << "\n";
    return 1;
  }
}

/// A number as --help shows it: 0.1, not Boost's 0.10000000000000001.
inline std::string shown(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

} // namespace quern::cli
