// Batch parameter sweeps (seed 000 s.5.4-5.5, seed 001 s.5): every point of a grid (platforms x P x parameter
// values) predicted by replay and/or the analytic model, each simulation in its own child process, on a pool
// of local workers or shared dynamically between the ranks of a distributed launcher (mpirun, srun). Completed
// points are journaled as they finish, so a killed sweep resumes where it stopped; the table is written
// atomically (results/sweep_table.hpp).
#pragma once

#include "sim/engine/collective_table.hpp"

#include "results/sweep_table.hpp"
#include "skeletons/skeleton.hpp"

#include <cstdint>
#include <ostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mksim::sim {

/** @brief The grid: every combination of a platform, a P and one value of each parameter. */
struct SweepGrid {
  std::vector<std::string> platforms;                               ///< platform names as the table shows them
  std::vector<std::string> platform_files;                          ///< the files they load (same order; empty: the names)
  std::vector<int> Ps;                                              ///< rank counts, in the order given
  std::vector<std::pair<std::string, std::vector<double>>> params;  ///< axes, sorted by name
};

/** @brief One point of the grid; `key` identifies it in journals and tables (platform|P|name=value...). */
struct SweepPoint {
  std::string platform;
  std::string platform_file;
  int P = 0;
  std::vector<double> params;  ///< in SweepGrid::params order
  std::string key;
};

/** @brief The points in table order: platforms slowest, then P, then each parameter in name order. */
std::vector<SweepPoint> expand_grid(const SweepGrid& grid);

/** @brief The key of a point (also of a table row), from its values. */
std::string point_key(const std::string& platform, int P, const std::vector<std::string>& names,
                      const std::vector<double>& values);

/** @brief This process's place in a distributed launch: rank and size from the launcher's environment
 *  (OpenMPI, PMIx, PMI, Slurm), `job` names the launch so that ranks of one launch share their claims. */
struct Launcher {
  int rank = 0;
  int size = 1;
  std::string job;   ///< "" when not launched by a distributed launcher
  std::string name;  ///< which variables told: "OpenMPI", "PMIx", "PMI", "Slurm", or "" (local)
};

/** @brief The launcher from the environment; size 1 when none. Throws std::runtime_error when the variables
 *  give a size but no job identifier, or malformed numbers. */
Launcher detect_launcher();

/** @brief Everything a sweep needs besides the skeleton. */
struct SweepOptions {
  std::string skeleton_path;      ///< recorded in the table's attributes
  SweepGrid grid;
  bool replay = true;             ///< predict each point by replay (one child process per point)
  bool model = false;             ///< and/or by the analytic model (one child per platform and P)
  bool skew = true;               ///< the model's alpha*sqrt(P) skew term
  std::uint64_t seed = 1;         ///< replay's per-rank generators
  std::string output;             ///< the table (HDF5); its journal lives in output + ".sweep/"
  int jobs = 0;                   ///< concurrent simulations on this host; 0: one per core (one per rank when distributed)
  double timeout_s = 0;           ///< a simulation running longer is killed and recorded as "timeout"; 0: none
  double memory_limit_bytes = 0;  ///< address-space limit of each simulation (RLIMIT_AS); 0: none
  bool retry_failed = false;      ///< run again the points recorded as failed
  double checkpoint_s = 30;       ///< rewrite the table with what is done this often (local mode)
  std::string command;            ///< the command line, recorded in the table
  Launcher launcher;              ///< detect_launcher() for a distributed sweep
  std::ostream* progress = nullptr;  ///< where progress and notes go (stderr), or none
  bool progress_bar = false;         ///< redraw a bar (a terminal) rather than stay quiet
  std::shared_ptr<const CollectiveTable> collectives = nullptr;  ///< measured collectives (--collectives) for both methods
  std::string load_file;          ///< background load (--load, sim/engine/load.hpp) for replay; one draw per point
  std::uint64_t load_seed = 1;    ///< seed of its stochastic loads
};

/** @brief What a sweep did. */
struct SweepSummary {
  std::size_t points = 0;      ///< points in the grid
  std::size_t reused = 0;      ///< (point, method) results found in the output or journal
  std::size_t computed = 0;    ///< results computed by this process
  std::size_t failed = 0;      ///< points whose status in the table is "failed"
  double wall_s = 0;
  bool wrote_table = false;    ///< false on the ranks other than 0 of a distributed sweep
};

/** @brief Runs the sweep. Throws std::runtime_error naming the file for an unusable output, journal or a
 *  table made from another skeleton; a failing point is recorded in the table and does not throw. */
SweepSummary run_sweep(const skeletons::Skeleton& skeleton, const SweepOptions& options);

}  // namespace mksim::sim
