// Compute-time distributions of format v2 (`dist` on `compute`): multipliers of a block's mean amount,
// drawn from the rank's seeded stream. Replay and expansion both call sample_multiplier, in program order,
// so that an expanded rank is exactly what the replay engine runs.
#pragma once

#include "skeletons/rank_rng.hpp"
#include "skeletons/skeleton.hpp"

#include <string>
#include <vector>

namespace mksim::skeletons {

/** @brief "normal", "lognormal", "uniform" or "empirical", as the file spells them. */
const char* distribution_name(Distribution::Type type);

/** @brief Largest coefficient of variation of a uniform distribution of mean 1 that stays >= 0 (1/sqrt(3)). */
inline constexpr double UNIFORM_MAX_CV = 0.57735026918962573;

/** @brief What is wrong with `cv` (the value of the distribution's `cv` expression) for this distribution:
 *  "" when it is usable; negative, non-finite, or (uniform) above UNIFORM_MAX_CV otherwise. */
std::string cv_problem(const Distribution& dist, double cv);

/** @brief Mean of the piecewise-linear distribution whose inverse CDF interpolates `quantiles` (equally spaced
 *  probabilities 0 .. 1) linearly. */
double empirical_mean(const std::vector<double>& quantiles);

/** @brief One draw of the multiplier of the mean: normal (mean 1, stddev cv, redrawn while negative),
 *  lognormal (mean 1, coefficient of variation cv), uniform on [1 - cv*sqrt(3), 1 + cv*sqrt(3)], or the
 *  empirical quantiles by inverse CDF with linear interpolation. `cv` is ignored for empirical. Consumes
 *  one (uniform, empirical) or two or more (normal, lognormal) numbers of `rng`. */
double sample_multiplier(const Distribution& dist, double cv, RankRng& rng);

/** @brief One draw of the multiplier of the k-th execution of compute block `block` at a rank: from the block's
 *  stream of that execution, identical at every rank, when the distribution is drawn alike (`"draw": "same"`;
 *  CoinTosses::same_stream counts the executions), else from the rank's own stream `rng`. Replay and expansion
 *  both call it, so that they draw the same numbers. */
inline double draw_multiplier(const Distribution& dist, double cv, RankRng& rng, CoinTosses& coins, int block) {
  if (!dist.same_on_ranks) return sample_multiplier(dist, cv, rng);
  RankRng same = coins.same_stream(block);
  return sample_multiplier(dist, cv, same);
}

}  // namespace mksim::skeletons
