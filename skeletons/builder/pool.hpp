// Compute pooled over ranks (issue 17, "Noise"): whether the ranks that run one compute gap agree within
// the noise of their own iterations, robust per-rank values (outlying iterations trimmed), and, where the
// ranks differ for real, the split of each run's ranks into a high and a low group.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief One rank's durations of one compute gap (one member of a union node): what folding kept. */
struct RankDurations {
  std::size_t run = 0;                        ///< index of the run it belongs to
  int rank = 0;
  std::uint64_t n = 0;                        ///< durations in all
  double first = 0;                           ///< the first, in program order
  std::vector<std::pair<double, double>> rest;  ///< (duration, weight) of the others, sorted (the sketch)
  bool cpu = false;                           ///< CPU times (MKTRACE_CPU_TIME): every duration is the program's
};

/** @brief Thresholds of the decision; defaults are what `mkskel build` uses. */
struct PoolOptions {
  double trim_mads = 3.5;        ///< a duration (or a rank) further than this many robust SDs from the median is trimmed
  double min_split_ratio = 1.5;  ///< two groups of ranks are real only when their centres are this far apart (x)
  double min_split_s = 1e-5;     ///< ... and at least this far apart in seconds (timer noise of short gaps is not the program's)
  double max_growth_8p = 2;      ///< a pooled compute model may grow at most this much when P grows 8 times, else the
                                 ///< mean: short gaps of oversubscribed traced runs (the largest P) grow, the program's do not
  double z_critical = 3.090232;  ///< one-sided normal quantile of the chi-square test (0.1% level)
};

/** @brief One rank's value: the mean of its durations, with outlying durations after the first trimmed. */
struct RankValue {
  double value = 0;                ///< seconds, the robust mean
  double centre = 0;               ///< median of the durations after the first (the first when there are none)
  double log_sd = -1;              ///< robust SD of the logarithms of those durations, -1 when fewer than 3
  double weight = 0;               ///< durations the SD comes from
  std::uint64_t trimmed = 0;       ///< durations trimmed
};

/** @brief The trimmed mean of one rank's durations: those after the first further than trim_mads robust SDs
 *  (of their logarithms, floored at 0.3) from their median count as the mean of the others; the first (a
 *  warm-up is the program's) is kept. CPU times (`cpu`) are not trimmed: a long one is the program's CPU (page
 *  faults, a cold cache), not another process's time. */
RankValue rank_value(const RankDurations& d, const PoolOptions& options = {});

/** @brief Whether the ranks of one gap agree within noise, with the evidence. */
struct PoolDecision {
  bool differ = false;              ///< between-rank spread is real: significant, at least min_split_ratio, in 2 runs
  double chi2 = 0;                  ///< sum over runs of n_i (l_i - mean l)^2 / within variance (l = log centre)
  double dof = 0;                   ///< sum over runs of (ranks - 1)
  double chi2_critical = 0;         ///< Wilson-Hilferty at z_critical
  double within_sd = -1;            ///< pooled robust SD of log durations within ranks (-1: no evidence)
  double between_sd = 0;            ///< pooled SD of the ranks' log centres around their run's mean
  double largest_ratio = 1;         ///< largest ratio between consecutive ranks' centres in a run (sorted), among
                                    ///< those at least min_split_s apart
  std::vector<bool> high;           ///< per input: above its run's largest gap (runs where that gap is real)
  std::vector<bool> run_split;      ///< per run index: the run's largest gap is at least min_split_ratio
  std::vector<RankValue> values;    ///< per input
};

/** @brief Tests the between-rank spread of each run's centres against the pooled within-rank noise
 *  (chi-square of the log centres, each weighted by its durations over the within variance; the
 *  within-rank SD floored at 1%: a timer's resolution) and, in each run, finds the largest gap between
 *  consecutive sorted centres. Without within-rank evidence (every rank ran the gap fewer than 3 times)
 *  the ratio alone decides. The spread is real when the test says so, some run's gap is at least
 *  min_split_ratio, and two runs show such a gap (one, when only one run has two ranks). `runs` is the number of runs (indices in `RankDurations::run` are below it). */
PoolDecision decide_pooling(const std::vector<RankDurations>& ranks, std::size_t runs, const PoolOptions& options = {});

/** @brief A run's value of a group of ranks: the mean of their values after trimming ranks whose log
 *  value lies more than trim_mads robust SDs from the group's median (only when the group has 3 or more). */
double pooled_value(const std::vector<double>& values, const PoolOptions& options, std::size_t& trimmed);

/** @brief One rank's value of a compute gap in one run (each rank's plain mean, the default path). */
struct RankSample {
  std::size_t run = 0;  ///< index of the run
  int P = 0;            ///< ranks of that run
  int rank = 0;
  double value = 0;     ///< seconds; 0 where the rank does not run the gap
};
/** @brief Per input: whether it is a lone noisy rank, which the mean over its run's ranks should not count. A run
 *  of 4 or more ranks has one when exactly one of its ranks lies beyond trim_mads robust SDs (of the logs, floored
 *  at 0.3: beyond 2.86 times or below 1/2.86 of the median) of the others where no other run has an outlier at the same
 *  rank, or at the same distance from its last rank, on the same side (one such per run; with several, none). An imbalance of the
 *  program's (rank 0's extra work, the last rank of a wavefront) is where it was in the other runs; noise (one
 *  rank descheduled during one iteration, on a loaded machine) is not. Ranks that do not run the gap (0) are neither
 *  outliers nor counted in the median. */
std::vector<bool> lone_noisy_ranks(const std::vector<RankSample>& samples, const PoolOptions& options = {});

}  // namespace mksim::skeletons::builder
