// One simulation per OS process (SimGrid keeps one engine per process and its clock across runs): runs a
// replay in a forked child and hands its result back through a pipe.
#pragma once

#include "sim/engine/replay.hpp"

#include <functional>
#include <string>

namespace mksim::sim {

/** @brief What a child process left: its exit code and the bytes it wrote. */
struct ChildResult {
  int code = 0;
  std::string output;
};

/** @brief A running child process and the read end of the pipe it writes to. */
struct Child {
  int pid = -1;
  int fd = -1;
};

/** @brief Forks a child that runs work(write_fd) and leaves with its return value (1, after writing the
 *  message to the pipe, when it throws). The child dies with its parent (PR_SET_PDEATHSIG). Throws
 *  std::runtime_error naming `what` when the pipe or the fork fails. */
Child start_child(const std::function<int(int fd)>& work, const std::string& what);

/** @brief Writes all of `bytes` to `fd` (retrying short writes); false when the reader has gone. */
bool write_all(int fd, const std::string& bytes);

/** @brief Runs work() in a forked child and returns what it wrote (exit code 0), or the message of the
 *  exception it threw with the code `code_of` gives it. Throws std::runtime_error when the child cannot be
 *  started or is killed by a signal (naming `what`). */
ChildResult run_in_child(const std::function<std::string()>& work, const std::function<int(const std::exception&)>& code_of,
                         const std::string& what);

/** @brief replay() in a child process; the same result, or the same exception type (DeadlockError,
 *  ReplayError, skeletons::SkeletonError as ReplayError) with the child's message. The caller's process
 *  must not have a SimGrid engine running threads (call before load_machine_model in the same process). */
results::RunResult replay_in_child(const skeletons::Skeleton& skeleton, const ReplayOptions& options);

/** @brief Replays under `seeds` draws of the stochastic background load (load_seed, load_seed + 1, ...), each in
 *  a child process: the first draw's result, with attributes load.seeds, load.times_s (each draw's predicted
 *  time), load.mean_s and load.ci95_s (half-width of the 95% Student-t interval of the mean). */
results::RunResult replay_load_seeds(const skeletons::Skeleton& skeleton, const ReplayOptions& options, int seeds);

// ---- OS noise calibrated at the program level (issue 18): the gain of `noise ... calibrate=program` rules, from
// replays of seed 000's own experiment for alpha (ATM2D's exchanges without computation, s.5.2 fig. 5).

/** @brief The gain g(P) of `noise ... calibrate=program` (load.hpp, NoiseLoad): replays a 2-D halo program without
 *  compute (ATM2D's four pairwise exchanges per step, 20 steps, 256-byte messages) at P on the platform, without
 *  noise and under `seeds` draws of the exchange-calibrated noise (seeds 1..seeds: the same inputs, the same gain)
 *  and returns the factor g on lambda(P) with which the replayed program is alpha sqrt(P) longer per exchange (the
 *  most detours one rank took), as the paper measured alpha: three rounds of g <- g * alpha sqrt(P) * exchanges /
 *  (mean noisy time - time without noise), from g = 1 (the effect is nearly, not quite, linear in lambda). 1 for
 *  P = 1. Runs every replay in a child: call it before
 *  this process creates a SimGrid engine. Throws ReplayError when the noise has no effect (alpha 0). */
double program_noise_gain(const std::string& platform_path, int P, double alpha_s, int seeds = 16);

/** @brief The gain the options' load rules need: program_noise_gain at the rules' (or the platform's) alpha when a
 *  `noise` rule has calibrate=program and the skeleton can take detours (takes_detours), else 1 (nothing replayed). options.noise_gain >= 0 is returned as it is. */
double noise_gain_for(const skeletons::Skeleton& skeleton, const ReplayOptions& options);

/** @brief Whether any phase of the skeleton at options.P can take a detour: a point-to-point phase that is not a
 *  pipeline (phase_patterns' kinds 1d, 2d, 3d, wildcard). Without one the gain is not needed. */
bool takes_detours(const skeletons::Skeleton& skeleton, const ReplayOptions& options);

/** @brief A RunResult as JSON and back (the child-to-parent format; doubles kept exactly). */
std::string run_result_to_json(const results::RunResult& result);
results::RunResult run_result_from_json(const std::string& text);

}  // namespace mksim::sim
