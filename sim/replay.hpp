// Replays a skeleton at any P on a SimGrid platform: one actor per rank, MPI point-to-point semantics.
#pragma once

#include "results/run_result.hpp"
#include "skeletons/skeleton.hpp"

#include <cstdint>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mksim::sim {

/** @brief Everything one replay needs besides the skeleton. */
struct ReplayOptions {
  std::string platform_path;                 ///< SimGrid XML (or mksim-generated) platform
  int P = 0;                                 ///< number of ranks; rank i runs on compute host i
  std::map<std::string, double> params;      ///< user's parameter values (others take defaults)
  std::uint64_t seed = 1;                    ///< seed of the per-rank generators (probabilistic branches)
  std::string timeline_csv;                  ///< when not empty, write a per-rank event timeline (CSV)
  std::vector<std::string> simgrid_config;   ///< extra SimGrid settings "key:value", applied last
  std::ostream* warnings = nullptr;          ///< where to say what may degrade the run (memory limits), or none
};

/** @brief The skeleton deadlocked at the requested P: what() lists blocked ranks and what each waits for. */
class DeadlockError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** @brief A run that cannot start or fails while simulating (bad platform, P too large, bad peer). */
class ReplayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** @brief Simulates the skeleton. One call per OS process (SimGrid's engine keeps its clock). */
results::RunResult replay(const skeletons::Skeleton& skeleton, const ReplayOptions& options);

/** @brief The SimGrid settings mksim applies before loading a platform (explicit network model). */
std::vector<std::string> default_simgrid_config();

}  // namespace mksim::sim
