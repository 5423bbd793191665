#include "skeletons/builder/vary.hpp"

#include <algorithm>
#include <set>

namespace mksim::skeletons::builder {

FoldCounts fold_counts(const std::vector<std::vector<RankProgram>>& folded) {
  FoldCounts c;
  for (const auto& run : folded) {
    std::set<std::uint64_t> distinct;
    for (const RankProgram& r : run) {
      const std::size_t n = folded_size(r.seq);
      c.nodes += n;
      c.largest = std::max(c.largest, n);
      distinct.insert(shape_hash(r.seq));
    }
    c.shapes += distinct.size();
  }
  return c;
}

SizesChoice choose_sizes(const std::vector<trace::Run>& runs, std::vector<std::vector<RankProgram>>& folded,
                         const FoldOptions& options, int mode) {
  SizesChoice out;
  if (mode == 0 || options.vary_sizes) return out;
  FoldOptions vary = options;
  vary.vary_sizes = true;
  std::vector<std::vector<RankProgram>> other(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const trace::RankTrace& r : runs[i].ranks) other[i].push_back(fold_rank(r, vary));
  const FoldCounts exact = fold_counts(folded), varied = fold_counts(other);
  out.exact_nodes = exact.nodes, out.exact_shapes = exact.shapes;
  out.vary_nodes = varied.nodes, out.vary_shapes = varied.shapes;
  const bool compresses = exact.largest >= 32 && 4 * out.vary_nodes <= 3 * out.exact_nodes;
  const bool agrees = out.vary_shapes < out.exact_shapes && out.vary_nodes <= out.exact_nodes;
  out.vary = mode == 1 || compresses || agrees;
  if (!out.vary) return out;
  folded = std::move(other);
  out.note = "message sizes vary between iterations: folded with sizes as statistics (" +
             std::to_string(out.exact_nodes) + " folded nodes and " + std::to_string(out.exact_shapes) +
             " rank shapes over all runs with exact sizes, " + std::to_string(out.vary_nodes) + " and " +
             std::to_string(out.vary_shapes) + " without); each call's size is its mean per rank, whose spread " +
             "over iterations is in the block's fit.size_per_iteration";
  return out;
}

}  // namespace mksim::skeletons::builder
