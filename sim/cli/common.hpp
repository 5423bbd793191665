// What the command lines of mksim, mkskel and mkcalib share: exit codes, the error-to-exit-code guard, bundled
// data files and --param parsing.
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mksim::sim {

/** @brief Exit codes of mksim. */
enum ExitCode : int { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_DEADLOCK = 3 };

/** @brief A user error (bad option or input): exit code 2. */
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** @brief Runs body() and maps what it throws to "PROG: message" on `err` and an exit code: a bad option
 *  (Boost.Program_options, followed by `usage`), UsageError, an invalid skeleton or trace -> 2, a deadlock -> 3,
 *  anything else -> 1. Every command line of the tools goes through it. */
int run_guarded(const std::string& prog, const std::string& usage, std::ostream& err, const std::function<int()>& body);

/** @brief A bundled file (folder "platforms" or "skeletons/examples") when `name` is not a path that exists:
 *  `name`, `name.xml` or `name.json` in the source tree's folder; else `name` unchanged (its loader says why). */
std::string resolve_data(const std::string& name, const char* folder);

/** @brief --param values: NAME=VALUE, repeatable or comma-separated; P is refused (it has --P). */
std::map<std::string, double> parse_params(const std::vector<std::string>& items);

}  // namespace mksim::sim
