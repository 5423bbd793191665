// Rank-group predicates: from which ranks of each traced run belong to a group, find the simplest
// condition on rank, P and the run parameters (skeleton expression syntax, the `ranks` field of a
// group) that is true exactly on the members, and say when the runs do not pin it down.
#pragma once

#include "skeletons/builder/features.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief One traced run's labels for one group: its variables (P and every parameter, no rank) and,
 *  for each rank 0..P-1, whether the rank belongs to the group. */
struct RunLabels {
  Vars vars;
  std::vector<bool> member;  ///< size P
};

/** @brief Limits of the search; the defaults keep one group well under a second at P = 1024 x 10 runs. */
struct PredicateOptions {
  int max_conjunction = 6;            ///< atoms of a conjunction (more would describe noise)
  int max_disjunction = 4;            ///< atoms of a disjunction of two conjunctions, both terms
  std::size_t max_alternatives = 8;   ///< alternatives reported
  std::size_t max_nodes = 200'000;    ///< search nodes per exact cover search
  double max_probe_P = 0;             ///< largest unseen P probed for disagreements; 0: max(256, 4 x largest P)
  /// Dimensions of the process grids the program made (MPI_Dims_create, MPI_Cart_create: 2, 3): where the
  /// Px x Py vocabulary fits nothing and grids of several dimensions fit, those come first.
  std::vector<int> grid_ndims;
};

/** @brief Another predicate that fits every run but differs from the chosen one at some unseen run. */
struct Alternative {
  std::string text;
  Vars differs_at;                       ///< the smallest unseen (P, parameters) where the two differ
  std::optional<Vars> differs_at_pow2;   ///< the same among P that are powers of two
};

/** @brief The outcome of the search for one group. */
struct GroupPredicate {
  bool found = false;
  std::string text;                        ///< the predicate ("" when not found); parses with parse_expr
  std::vector<Alternative> alternatives;   ///< same number of atoms, fit too, differ at unseen runs
  std::optional<Vars> resolve_at;          ///< smallest unseen run at which some alternative differs
  std::optional<Vars> resolve_at_pow2;     ///< the same among powers of two
  std::vector<Vars> resolve_runs;          ///< up to 4 unseen runs that together tell every alternative
                                           ///< from the chosen predicate (powers of two preferred)
  std::string message;                     ///< why nothing was found, or the ambiguity; "" when unique
};

/** @brief Finds the predicate of one group. When nothing fits, the same search runs with the coordinates
 *  and sides of the grids of MPI_Dims_create(P, 2) (the longer side varying fastest, as NPB LU and CG
 *  number ranks, with the block diagonal of a non-square grid; or row-major, as MPI_Cart_create) and of
 *  MPI_Dims_create(P, 3) (cart_coord), a side compared with the other (a non-square grid) and each side
 *  compared with 1 (the grid extends along it) in place of x, y, Px, Py; of the grids that fit, those of options.grid_ndims first, then the simplest, the
 *  others reported as alternatives where they differ at unseen runs. Atoms compare a rank feature (rank, P-1-rank, x, y of the
 *  Px x Py grid, rank % 2, checkerboard colour) with a scale quantity (0..3, P, P-1, P/2, P/2-1, Px,
 *  Px-1, Py, Py-1, floor(sqrt(P)), each parameter); the result is a minimum conjunction of atoms, or a
 *  disjunction of two, the cheapest by a readability cost. Alternatives are the other fitting
 *  predicates of the same size, evaluated at unseen P (2..64, then 2^k and 3*2^k) with each seen
 *  parameter set. Throws std::invalid_argument on inconsistent input (label count != P, runs with
 *  different variable names). */
GroupPredicate find_group_predicate(const std::vector<RunLabels>& runs, const PredicateOptions& options = {});

/** @brief Which ranks 0..P-1 satisfy `text` at `vars` (P and parameters). Throws SkeletonError on a
 *  bad expression. */
std::vector<bool> predicate_members(const std::string& text, const Vars& vars);

/** @brief A compact list of the set ranks for messages: "0-3, 8, 10-15", or "none". */
std::string describe_ranks(const std::vector<bool>& member);

/** @brief "P=8, K=4": a run's variables for messages (P first, integers without decimals). */
std::string describe_vars(const Vars& vars);

/** @brief The first rank that falls in no group or in more than one. */
struct PartitionViolation {
  std::size_t run = 0;              ///< index into the runs given
  int rank = 0;
  std::vector<std::size_t> groups;  ///< indices of the groups whose predicate holds (empty: none)
  std::string message;
};

/** @brief Checks that at every run (P and parameters) each rank satisfies exactly one of the group
 *  predicates, so group order in the skeleton does not matter. Throws SkeletonError on a bad
 *  expression. */
std::optional<PartitionViolation> check_partition(const std::vector<std::string>& predicates,
                                                  const std::vector<Vars>& runs);

}  // namespace mksim::skeletons::builder
