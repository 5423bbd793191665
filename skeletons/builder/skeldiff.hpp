// Are two skeletons the same program? (`mkskel diff`; the round trip of issue 18: a skeleton, emitted as a C
// program, traced and rebuilt, against the original.) Two skeletons are the same when
//  - their communication structure is: the block trees, with compute blocks left out, regions opened (a region
//    only names its body), loops and branches that contain no communication dropped, and rank groups read as a
//    chain of `if`s (the last group its `else`), have the same nodes in the same order: loops, condition and
//    `prob` branches, each point-to-point kind, waits, each collective kind, each on world or on a declared
//    communicator of the same kind; and they declare communicators of the same kinds in the same order;
//  - every peer, tag, size, root, loop count, condition and communicator is the same function of rank, P and the
//    parameters: both are expanded (skeletons/expand.hpp, the same seed) at every rank of every P and every
//    parameter point asked for, including P never traced, and every rank's operations must agree one by one
//    (kind, world peer, tag, bytes, world root, and the members of the communicator, compared as
//    holdout.hpp's comm_code does);
//  - compute is measured time, so it is compared loosely: each rank's total compute (flops turned into seconds
//    by a rate when the two sides disagree on units) within a relative tolerance plus an absolute floor; or, for
//    skeletons whose `prob` branches pick compute amounts (equal in distribution only), the sum over all ranks.
// Each difference names the JSON pointer of the blocks in both skeletons (and the P, parameters and rank where
// the expansions part).
#pragma once

#include "skeletons/skeleton.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mksim::skeletons::builder {

struct DiffOptions {
  std::vector<int> P{2, 3, 4, 5, 6, 7, 8, 12, 16, 17, 24, 32, 48, 64, 256};  ///< rank counts to expand at
  /** @brief Parameter points (each a map; parameters a side does not declare are not given to it). Empty: one
   *  point, every parameter at its default (A's defaults given to B too). */
  std::vector<std::map<std::string, double>> points;
  double compute_rel = 0.5;      ///< relative tolerance of each rank's total compute; negative: not compared
  double compute_abs_s = 1e-3;   ///< absolute floor of that tolerance, seconds
  double flops_rate = 0;         ///< flops per second, to compare a side in flops with a side in seconds (0: not)
  /// compute compared per rank (true), or as the sum over all ranks of a point (false): for skeletons whose `prob`
  /// branches choose between compute amounts, where only the mean over many draws is the program's
  bool compute_per_rank = true;
  /// `prob` branches (equal in distribution only): when >= 0, the structurally matched `prob` branches of the two
  /// must have probabilities within this absolute tolerance at every rank and point, and B is expanded with A's
  /// probabilities (both then draw the same branches), so that everything else must agree exactly; < 0: the
  /// expansions draw with each side's own probabilities. Pairs come from the structure comparison (up to its first
  /// difference): with `structure` off nothing is substituted
  double prob_tol = -1;
  std::uint64_t seed = 1;        ///< seed of both expansions (prob branches, distributions)
  std::size_t max_differences = 20;  ///< distinct differences kept (the first of each kind and place)
  std::size_t op_limit = 20'000'000;  ///< operations per rank expansion
  bool structure = true;         ///< compare the communication structure (false: the expansions only)
  /// conditions dissolved in the structure: a condition branch's then and else bodies stand in its place, so
  /// nested conditions and their flat conjunctions (the builder's form: it writes no `else` and no nested
  /// conditions) compare equal; which ranks run what is still checked by the expansions
  bool flatten_conditions = false;
};

/** @brief One difference: what, and where in each skeleton (JSON pointers; "" when a side has nothing there). */
struct SkeletonDifference {
  std::string kind;    ///< "structure", "communicators", "probability", "operation", "peer", "tag", "bytes", "root", "comm", "length", "expansion", "compute"
  std::string path_a, path_b;
  std::string detail;  ///< a sentence: the values on each side, the P, parameters and rank
  int P = 0;           ///< where the expansions part (0: structural)
  int rank = -1;
};

struct DiffReport {
  std::vector<SkeletonDifference> differences;  ///< structural first, then as the expansions meet them
  std::size_t points = 0, ranks = 0, operations = 0;  ///< (P, parameter point) pairs, rank expansions, operations compared
  double worst_compute_rel = 0;  ///< the largest relative difference of a rank's total compute seen
  std::vector<std::string> notes;  ///< what was not compared, and why
  bool same() const { return differences.empty(); }
  /** @brief Differences of the structure (kinds "structure", "communicators") and of the expansions (the others). */
  std::size_t structural() const;
  std::size_t behavioural() const { return differences.size() - structural(); }
};

/** @brief Compares skeleton `a` with `b` as the header says. Throws SkeletonError only for a parameter point
 *  that names a parameter neither declares. A point where `a` cannot run (a rank fails to expand: atm2d's grid
 *  at P = 5) is skipped with a note; where only `b` cannot, that is a difference ("expansion"). */
DiffReport diff_skeletons(const Skeleton& a, const Skeleton& b, const DiffOptions& options = {});

/** @brief The report as text: one line per difference, then the counts ("same: ..." or "N difference(s)"). */
std::string format_diff(const DiffReport& report);

}  // namespace mksim::skeletons::builder
