#pragma once
// The command line of quern's programs -- examples, benchmarks, the soak test
// (Boost.Program_options): one way to answer --help, to name a bad option or a
// stray argument, and to show defaults as a person writes them. CMake target
// quern_command_line; programs with no options of their own use
// quern::parse_command_line (quern/command_line.hpp) instead.

#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace quern::cli {

namespace po = boost::program_options;

/// Parses the command line with `desc` (which must have a "help" option) into
/// `vm`. Returns the status to exit with now, or nothing to go on: 0 after
/// --help printed `desc`; 2 after an error that names `program` and the bad
/// argument (`csv_pipeline: unrecognised option '--epoch'`,
/// `csv_pipeline: unexpected argument 'data.csv'`).
inline std::optional<int> parse_options(const std::string& program, int argc, char** argv,
                                        const po::options_description& desc,
                                        po::variables_map& vm) {
  // Positional arguments are collected so that the first can be named.
  std::vector<std::string> stray;
  po::options_description all;
  all.add(desc).add_options()("quern-stray-argument", po::value(&stray));
  po::positional_options_description positional;
  positional.add("quern-stray-argument", -1);
  try {
    po::store(
        po::command_line_parser(argc, argv).options(all).positional(positional).run(),
        vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << program << ": " << e.what() << " (see --help)\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return 0;
  }
  if (!stray.empty()) {
    std::cerr << program << ": unexpected argument '" << stray.front()
              << "' (see --help)\n";
    return 2;
  }
  return std::nullopt;
}

/// A number as --help shows it: 0.1, not Boost's 0.10000000000000001.
inline std::string shown(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

} // namespace quern::cli
