// `mksim report`: the command line of the HTML report (the work is in mksim::results, report.hpp).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace mksim::sim {

/** @brief Runs `mksim report args...` (args exclude "report"): 0 page written, 1 failure while writing or no
 *  plotting library, 2 bad usage or bad input (missing, unreadable or malformed input file). */
int cmd_report(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace mksim::sim
