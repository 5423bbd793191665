// The skeleton builder (issue 4): several traced runs of one program (different P and parameters) ->
// one scale-independent skeleton in the replay engine's format. Each rank's events are folded into
// loops (fold.hpp); ranks of all runs that share a structure form a rank group whose condition on rank
// is found by predicate.hpp; every number of the group's program (loop counts, peers, tags, sizes,
// roots, compute times) is regressed across all its members (regress.hpp) into an expression of P,
// rank and the run parameters.
#pragma once

#include "skeletons/builder/fold.hpp"
#include "skeletons/builder/pool.hpp"
#include "skeletons/trace/trace.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief Knobs of the builder. */
struct BuildOptions {
  std::string name;              ///< skeleton name; default: the program's file name from run.json
  FoldOptions fold;
  double min_compute_s = 0;      ///< compute gaps whose mean is below this in every member are dropped
  /// region blocks (ROUTINE nodes) from the call-site stacks of the traced program's functions
  /// (stack_regions.hpp); off: only mktrace.h annotations make regions (`mkskel build --no-stack-regions`)
  bool stack_regions = true;
  // A compute block gets a `dist` (format v2) when its durations vary within ranks (first execution left
  // out): a spread (interquartile range / 1.349, relative to the rank's median, pooled) above dist_min_cv
  // and, in seconds, at least dist_min_stddev_s (timer and OS noise of short gaps is not the program's),
  // over at least dist_min_samples executions; empirical deciles from dist_empirical_samples executions,
  // else normal with the spread as cv (lognormal above 0.25).
  double dist_min_cv = 0.05;                  ///< relative spread within a rank, pooled
  double dist_min_stddev_s = 1e-5;            ///< the spread in seconds
  std::uint64_t dist_min_samples = 10;        ///< executions, all ranks and runs
  /// executions after the first of one rank for it to count: with fewer, one more warm-up (the demo's second
  /// step, which first touches the arrays it writes: 3-5 times the others at P = 2) is a quarter of a 5-step run's
  /// and moves the quartiles, and replay drew it per rank as imbalance the program does not have
  std::uint64_t dist_min_rank_samples = 8;
  std::uint64_t dist_empirical_samples = 50;  ///< executions, all ranks and runs
  /// message sizes as statistics when iterations differ only in them (vary.hpp): -1 when that compresses
  /// the folded programs, 0 never, 1 always (`mkskel build --sizes auto|exact|vary`)
  int vary_sizes = -1;
  /// a part run by ranks that no condition on rank describes becomes an `if` with the probability of the
  /// enclosing block's ranks that ran it, with a warning; off: a BuildError, as before issue 17
  bool data_dependent_sets = true;
  /// compute pooled over ranks where they agree within noise (pool.hpp): each rank's durations (wall-clock ones
  /// with gross outliers trimmed; CPU times, MKTRACE_CPU_TIME, kept whole), ranks of a run averaged with outlying
  /// ranks trimmed, and where the ranks' centres differ for real (chi-square against within-rank noise, and a gap
  /// of at least pool.min_split_ratio) one model per group of ranks that a condition on rank describes; off (the
  /// default; `mkskel build --pool` turns it on): every rank's plain mean. Off by default: a group's regression over
  /// the runs can lose a law of P that the mean of all ranks keeps (the corpus' lu, held out at P = 64: compute
  /// 19.3% off pooled, 8.8% per rank)
  bool pool_compute = false;
  PoolOptions pool;
};

/** @brief The skeleton and what the builder could not decide. */
struct BuildResult {
  nlohmann::json skeleton;                ///< format "mksim-skeleton", version 2 when it has regions or distributions, else 1
  std::vector<std::string> ambiguities;   ///< quantities or groups the runs do not pin down, with the runs that would
  std::vector<std::string> warnings;      ///< approximations (inexact fits, dropped calls)
  std::size_t trace_events = 0;           ///< events read, all runs and ranks
  /// where the skeleton, expanded at a traced configuration, does not pair its messages or collectives
  /// (skeletons/matching.hpp): a deadlock, a message nobody receives, a truncation; empty when all pair
  std::vector<std::string> matching;
};

/** @brief A build that cannot produce a valid skeleton: structures that disagree, missing parameters. */
class BuildError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** @brief Builds one skeleton from `runs` (complete traces of the same program). Throws BuildError. */
BuildResult build_skeleton(const std::vector<trace::Run>& runs, const BuildOptions& options = {});

}  // namespace mksim::skeletons::builder
