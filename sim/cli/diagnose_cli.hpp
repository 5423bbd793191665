// `mksim diagnose`: severity-ranked performance problems of a skeleton simulated at P (seed 002), as a function
// tests can call; sim/cli/cli.cpp dispatches to it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace mksim::sim {

/** @brief Runs `mksim diagnose args...` (args exclude "diagnose"); returns mksim's exit code (0 ok, 1 failed,
 *  2 usage, 3 deadlock). */
int cmd_diagnose(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace mksim::sim
