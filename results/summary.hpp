// Short, deterministic text summary of one run, as the CLI prints it; no HDF5 here.
#pragma once

#include <string>

#include "results/run_result.hpp"

namespace mksim::results {

/**
 * @brief At most ~20 lines: predicted time, critical rank, messages, the compute / communication / wait split
 * (totals over ranks and shares), and the per-phase table sorted by phase. Numbers with 6 significant digits.
 */
std::string summarize(const RunResult& result);

}  // namespace mksim::results
