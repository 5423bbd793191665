// Time-step loops the program did not annotate (issue 17): a molecular-dynamics or particle code's steps differ by
// data (LAMMPS rebuilds its neighbour lists, with exchanges and border communication in place of the plain step's
// forward communication, whenever an atom has moved far enough), so exact folding finds no period and each rank's
// program grows with the number of steps. Such a loop is found by the collective every step starts with (the
// check whether to rebuild, an MPI_Allreduce); the builder then folds again with loop annotations written around
// its calls (FoldOptions::step_site), and the steps that differ become branches of one loop, as for a loop the
// program annotated with mktrace.h. A particle code that reduces only every few steps is cut at a point-to-point
// call every step makes.
#pragma once

#include "skeletons/builder/fold.hpp"
#include "skeletons/trace/trace.hpp"

#include <string>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief What `choose_step_site` saw and chose. */
struct StepsChoice {
  std::uint64_t site = 0;       ///< the call site chosen (0: none)
  std::uint64_t tried = 0;      ///< the call site tried (0: none)
  bool collective = false;      ///< whether that site is a collective's (else a point-to-point call every step makes)
  std::size_t steps = 0;        ///< its calls at one rank of the run with the fewest
  std::size_t kinds = 0;        ///< distinct steps (calls and call sites between two of its calls), largest over ranks
  std::size_t before_nodes = 0, after_nodes = 0;    ///< folded nodes, all ranks of all runs, without and with it
  std::size_t before_shapes = 0, after_shapes = 0;  ///< distinct rank shapes per run, summed over runs
  std::string note;             ///< one sentence for the build's warnings (empty when nothing changed)
};

/** @brief Calls a site must have at every rank of every run to be taken for a time-step loop. */
inline constexpr std::size_t MIN_STEPS = 8;

/** @brief Decides whether the runs have an unannotated time-step loop and, if so, refolds `folded` (one vector of
 *  rank programs per run, in the order of `runs`, folded with `options`) with FoldOptions::step_site set. The
 *  candidates are call sites of collectives on MPI_COMM_WORLD that every rank of every run calls MIN_STEPS times or
 *  more, whose steps (from one call to the next) follow no period at some rank of some run (steps that repeat by a
 *  rule fold exactly); the one whose calls cut each rank's events into the fewest distinct steps per step is tried, and kept
 *  when the refolded programs are a quarter smaller, or a tenth smaller with no more rank shapes, in runs whose largest rank
 *  program has 32 folded nodes or more. When no collective qualifies, each run's site is a point-to-point call
 *  that every rank of the run makes equally often, MIN_STEPS times or more (the fewest such calls, the first in
 *  rank 0's trace), and the steps fold with FoldOptions::step_data (a particle code whose migrations are data).
 *  Programs with loop annotations of their own, and options that set a site already, are left as they are. */
StepsChoice choose_step_site(const std::vector<trace::Run>& runs, std::vector<std::vector<RankProgram>>& folded,
                             const FoldOptions& options);

}  // namespace mksim::skeletons::builder
