// The mksim command line, as a function tests can call (never hands argv to SimGrid).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace mksim::sim {

/** @brief Runs `mksim args...` (args exclude the program name); returns the exit code. */
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/** @brief Runs `mkskel args...` (build, show, inspect); same exit codes. */
int run_mkskel(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace mksim::sim
