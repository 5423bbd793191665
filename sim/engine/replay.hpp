// Replays a skeleton at any P on a SimGrid platform: one actor per rank, MPI point-to-point semantics.
#pragma once

#include "results/run_result.hpp"
#include "sim/engine/collective_table.hpp"
#include "skeletons/skeleton.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mksim::sim {

/** @brief A change to the program applied by the engine while replaying, to measure what fixing a problem
 *  saves (diagnosis what-ifs). Blocks are named by their id as results report them. */
struct WhatIf {
  enum class Kind : std::uint8_t {
    SET_COMPUTE_S,   ///< every execution of compute block `block` takes `value` seconds (balance: the mean)
    SCALE_COMPUTE,   ///< compute block `block` takes `value` times its amount (0 removes it)
    AGGREGATE_LOOP,  ///< loop `block` runs count/value iterations whose messages and compute are `value` times larger
  };
  Kind kind = Kind::SCALE_COMPUTE;
  std::string block;
  double value = 1;
};

/** @brief Everything one replay needs besides the skeleton. */
struct ReplayOptions {
  std::string platform_path;                 ///< SimGrid XML (or mksim-generated) platform
  int P = 0;                                 ///< number of ranks; rank i runs on compute host i
  std::map<std::string, double> params;      ///< user's parameter values (others take defaults)
  std::uint64_t seed = 1;                    ///< seed of the per-rank generators (probabilistic branches)
  std::string timeline_csv;                  ///< when not empty, write a per-rank event timeline (CSV)
  std::vector<std::string> simgrid_config;   ///< extra SimGrid settings "key:value", applied last
  std::ostream* warnings = nullptr;          ///< where to say what may degrade the run (memory limits), or none
  bool block_stats = false;                  ///< fill RunResult::block_stats and phase_stats (diagnosis)
  std::vector<WhatIf> what_ifs;              ///< program changes applied while replaying (none: the program as written)
  /// Measured collectives (--collectives): a collective of a kind the table measured synchronises its ranks
  /// (it starts when the last one arrives) and then takes t(P, bytes) on each; other kinds keep their algorithm.
  std::shared_ptr<const CollectiveTable> collectives = nullptr;
  /// Background load (`--load`, sim/engine/load.hpp): host speed profiles and stochastic loads the interpreter
  /// integrates into compute blocks, link profiles given to SimGrid. Empty: only the platform's own speed_file
  /// profiles (hosts' profiles in the XML are integrated the same way; links' are SimGrid's anyway).
  std::string load_file;
  /// The same rules as text, in place of load_file (`mksim model --cross-check` replays with "noise *").
  std::string load_text;
  std::uint64_t load_seed = 1;               ///< seed of the stochastic loads (busy and noise lines of the load file)
  /// Gain of `noise ... calibrate=program` rules (noise_gain_for, sim/engine/isolate.hpp); < 0: not computed, which
  /// replay() refuses when such a rule applies (replay_in_child and replay_load_seeds compute it).
  double noise_gain = -1;
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
