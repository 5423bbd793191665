#include "skeletons/builder/steps.hpp"

#include "skeletons/builder/vary.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace mksim::skeletons::builder {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

// One rank's steps cut at `site`'s calls: each step's kind (a hash of the kinds and call sites from one of its calls
// to the next, the last one to the end), in order.
std::vector<std::uint64_t> step_kinds(const trace::RankTrace& t, std::uint64_t site) {
  std::vector<std::uint64_t> steps;
  std::uint64_t h = 0;
  bool open = false;
  for (const trace::Event& e : t.events) {
    if (e.kind == trace::Kind::COMPLETE) continue;
    if (e.site == site) {
      if (open) steps.push_back(h);
      open = true;
      h = 0x53544550ull;
    }
    if (open) h = mix(mix(h, static_cast<std::uint64_t>(e.kind)), e.site);
  }
  if (open) steps.push_back(h);
  return steps;
}

// Whether the steps but the first and the last repeat with a period of at most half their number: a program whose
// steps differ by a rule (a rebuild every 20 steps, two reductions per iteration at one call site), which exact
// folding already folds, not by data.
bool periodic(const std::vector<std::uint64_t>& steps) {
  if (steps.size() < 4) return true;
  const std::size_t a = 1, b = steps.size() - 1;  // [a, b)
  for (std::size_t d = 1; 2 * d <= b - a; ++d) {
    bool ok = true;
    for (std::size_t i = a; i + d < b && ok; ++i) ok = steps[i] == steps[i + d];
    if (ok) return true;
  }
  return false;
}

}  // namespace

StepsChoice choose_step_site(const std::vector<trace::Run>& runs, std::vector<std::vector<RankProgram>>& folded,
                             const FoldOptions& options) {
  StepsChoice out;
  if (options.step_site != 0 || runs.empty()) return out;
  const FoldCounts before = fold_counts(folded);
  if (before.largest < 32) return out;
  // candidates: world collectives' sites with MIN_STEPS calls or more at every rank of every run
  std::map<std::uint64_t, std::size_t> fewest;  // site -> fewest calls at one rank
  bool first = true;
  for (const trace::Run& run : runs)
    for (const trace::RankTrace& t : run.ranks) {
      std::map<std::uint64_t, std::size_t> calls;
      for (const trace::Event& e : t.events) {
        if (e.kind == trace::Kind::LOOP_BEGIN) return out;  // the program annotates its loops itself
        if (e.site != 0 && e.comm == 0 && trace::is_collective(e.kind)) ++calls[e.site];
      }
      if (first) {
        for (const auto& [site, n] : calls)
          if (n >= MIN_STEPS) fewest[site] = n;
        first = false;
        continue;
      }
      for (auto it = fewest.begin(); it != fewest.end();) {
        const auto c = calls.find(it->first);
        if (c == calls.end() || c->second < MIN_STEPS) {
          it = fewest.erase(it);
        } else {
          it->second = std::min(it->second, c->second);
          ++it;
        }
      }
    }
  if (fewest.empty()) return out;
  // the site that cuts the ranks' events into the fewest distinct steps per step (ties: more steps, then the
  // smaller site, for determinism)
  // (a site whose steps repeat by a rule at every rank of every run is left to exact folding)
  double best_ratio = 2;
  for (const auto& [site, n] : fewest) {
    double ratio = 0;
    std::size_t kinds = 0;
    bool irregular = false;
    for (const trace::Run& run : runs)
      for (const trace::RankTrace& t : run.ranks) {
        const std::vector<std::uint64_t> steps = step_kinds(t, site);
        const std::size_t k = std::set<std::uint64_t>(steps.begin(), steps.end()).size();
        ratio = std::max(ratio, static_cast<double>(k) / static_cast<double>(std::max<std::size_t>(steps.size(), 1)));
        kinds = std::max(kinds, k);
        irregular = irregular || !periodic(steps);
      }
    if (!irregular) continue;
    if (ratio < best_ratio || (ratio == best_ratio && n > out.steps)) {
      best_ratio = ratio;
      out.site = site;
      out.steps = n;
      out.kinds = kinds;
    }
  }
  // a loop whose steps are nearly all different is no time-step loop with a few kinds of step
  if (out.site == 0 || best_ratio > 0.5) return StepsChoice{};
  out.tried = out.site;
  FoldOptions with = options;
  with.step_site = out.site;
  std::vector<std::vector<RankProgram>> other(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const trace::RankTrace& r : runs[i].ranks) other[i].push_back(fold_rank(r, with));
  const FoldCounts after = fold_counts(other);
  out.before_nodes = before.nodes, out.before_shapes = before.shapes;
  out.after_nodes = after.nodes, out.after_shapes = after.shapes;
  // a tenth fewer nodes without more shapes: a loop over the steps does not grow with them where exact folding does
  // (LAMMPS lj, 40 steps with 4 rebuilds: 1,492 nodes exactly and 1,192 by steps; 3,480 and 1,196 at 120 steps).
  // Not 1%: melt's thermo output repeats an allreduce 31 times in 100 steps (24,536 nodes exactly, 24,272 cut there).
  const bool compresses = 4 * after.nodes <= 3 * before.nodes;
  const bool smaller = 10 * after.nodes <= 9 * before.nodes && after.shapes <= before.shapes;
  if (!compresses && !smaller) {
    out.site = 0;
    return out;
  }
  folded = std::move(other);
  out.note = "a time-step loop the program does not annotate: every rank calls one collective site " + std::to_string(out.steps) +
             " times or more, cutting its events into at most " + std::to_string(out.kinds) +
             " kinds of step; folded as one loop over those steps, with branches for the parts some steps run (" +
             std::to_string(before.nodes) + " folded nodes and " + std::to_string(before.shapes) + " rank shapes over all runs before, " +
             std::to_string(after.nodes) + " and " + std::to_string(after.shapes) + " now)";
  return out;
}

}  // namespace mksim::skeletons::builder
