// The machine figures the analytic model needs, read from a SimGrid platform (routes, speeds, overheads).
#pragma once

#include "sim/model.hpp"

#include <string>

namespace mksim::sim {

/** @brief Loads the platform in this process's SimGrid engine (one per process: call once, and not in a
 *  process that replays) and answers the model's questions about routes and host speeds for P ranks.
 *  Throws std::runtime_error naming the file when it cannot be loaded or has fewer than P hosts. */
MachineModel load_machine_model(const std::string& platform_path, int P);

}  // namespace mksim::sim
