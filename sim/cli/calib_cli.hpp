// The mkcalib command line (bench, show, fit, validate), as a function tests can call; exit codes as mksim's.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace mksim::sim {

/** @brief Runs `mkcalib args...` (args exclude the program name): 0 success, 1 failure while measuring or
 *  writing, 2 bad usage or bad input (unknown option, unreadable or mismatched database). */
int run_mkcalib(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace mksim::sim
