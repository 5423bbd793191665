// Iterations that differ only in message sizes (issue 17): particle and molecular-dynamics codes send, every
// step, as many bytes as atoms happen to cross a face, so exact folding (fold.hpp) finds few equal iterations
// and the ranks of one run fold into different shapes. The builder then folds again with sizes as statistics
// (FoldOptions::vary_sizes), as ScalaTrace keeps histograms of what varies, and writes each call's mean size;
// this file decides when.
#pragma once

#include "skeletons/builder/fold.hpp"
#include "skeletons/trace/trace.hpp"

#include <string>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief The size of folded programs (one vector of rank programs per run): folded nodes over all ranks of all
 *  runs, distinct rank shapes per run summed over the runs, and the largest rank's folded nodes. */
struct FoldCounts {
  std::size_t nodes = 0, shapes = 0, largest = 0;
};
FoldCounts fold_counts(const std::vector<std::vector<RankProgram>>& folded);

/** @brief What `choose_sizes` saw and chose. */
struct SizesChoice {
  bool vary = false;
  std::size_t exact_nodes = 0;   ///< folded nodes, all ranks of all runs, sizes as identity
  std::size_t vary_nodes = 0;    ///< the same with sizes as statistics
  std::size_t exact_shapes = 0;  ///< distinct rank shapes per run, summed over runs, sizes as identity
  std::size_t vary_shapes = 0;   ///< the same with sizes as statistics
  std::string note;              ///< one sentence for the build's warnings (empty when nothing changed)
};

/** @brief Decides whether the runs are folded with sizes as statistics and, if so, refolds `folded` (one
 *  vector of rank programs per run, in the order of `runs`, folded with `options`). `mode` -1 decides
 *  (sizes vary when that saves a quarter of the folded nodes of runs whose largest exact fold has 32 nodes or more,
 *  or gives fewer distinct shapes with no more nodes), 0 never, 1 always. */
SizesChoice choose_sizes(const std::vector<trace::Run>& runs, std::vector<std::vector<RankProgram>>& folded,
                         const FoldOptions& options, int mode);

}  // namespace mksim::skeletons::builder
