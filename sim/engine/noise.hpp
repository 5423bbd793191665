// OS noise calibrated at the program level (issue 18): the gain that makes the replay of seed 000's own experiment
// for alpha (ATM2D's exchanges without computation, s.5.2 fig. 5) alpha*sqrt(P) longer per synchronous exchange.
#pragma once

#include "sim/engine/replay.hpp"

#include <string>

namespace mksim::sim {

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

}  // namespace mksim::sim
