#include "skeletons/builder/steps.hpp"

#include "skeletons/builder/vary.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <span>

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

// Call sites with MIN_STEPS calls or more at every rank of every run -> the fewest calls at one rank: collectives
// on world, or (collectives = false) every other call but completions. {0: 0} when a rank annotates its loops.
std::map<std::uint64_t, std::size_t> candidate_sites(std::span<const trace::Run> runs, bool collectives) {
  std::map<std::uint64_t, std::size_t> fewest;
  std::map<std::uint64_t, std::size_t> in_run;  // site -> its calls at rank 0 of this run
  std::set<std::uint64_t> uneven;                // sites called more often at some ranks than at others
  bool first = true;
  for (const trace::Run& run : runs)
    for (const trace::RankTrace& t : run.ranks) {
      std::map<std::uint64_t, std::size_t> calls;
      for (const trace::Event& e : t.events) {
        if (e.kind == trace::Kind::LOOP_BEGIN) return {{0, 0}};
        if (e.site == 0 || e.kind == trace::Kind::COMPLETE || trace::is_annotation(e.kind)) continue;
        if (collectives ? e.comm == 0 && trace::is_collective(e.kind) : !trace::is_collective(e.kind)) ++calls[e.site];
      }
      if (&t == &run.ranks.front()) in_run = calls;
      for (const auto& [site, n] : calls)
        if (in_run[site] != n) uneven.insert(site);
      for (const auto& [site, n] : in_run)
        if (calls.count(site) == 0) uneven.insert(site);
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
  // a point-to-point call a time step always makes is made as often at every rank (a migration only some steps
  // make is not)
  if (!collectives)
    for (const std::uint64_t site : uneven) fewest.erase(site);
  return fewest;
}

// The candidate that cuts the ranks' events into the fewest distinct steps per step (ties: more steps, then the
// smaller site, for determinism); a site whose steps repeat by a rule at every rank of every run is left to exact
// folding. A collective must cut into at most half as many kinds as steps (a loop whose steps are nearly all
// different is no time-step loop with a few kinds of step). Another call's steps may all differ (which of a
// particle code's migrations run is data): of those, the site called fewest times (once a step, not once per
// neighbour), the first of them in the trace of rank 0 of the first run. irregular_only = false: regular steps too.
StepsChoice choose_among(std::span<const trace::Run> runs, const std::map<std::uint64_t, std::size_t>& sites,
                         bool collectives, bool irregular_only = true) {
  StepsChoice out;
  double best_ratio = collectives ? 0.5 : 2;
  std::size_t best_first = SIZE_MAX;
  for (const auto& [site, n] : sites) {
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
    if (!irregular && irregular_only) continue;
    if (collectives) {
      if (ratio < best_ratio || (ratio == best_ratio && n > out.steps)) {
        best_ratio = ratio;
        out.site = site;
        out.steps = n;
        out.kinds = kinds;
      }
      continue;
    }
    const auto& ev = runs.front().ranks.front().events;
    const std::size_t first = static_cast<std::size_t>(
        std::find_if(ev.begin(), ev.end(), [&](const trace::Event& e) { return e.site == site; }) - ev.begin());
    if (out.site == 0 || n < out.steps || (n == out.steps && first < best_first)) {
      best_first = first;
      out.site = site;
      out.steps = n;
      out.kinds = kinds;
    }
  }
  return out;
}

// The (kind, site, tag) of every call inside a branch of `seq` (FoldOptions::step_optional).
void collect_branch_calls(const Seq& seq, bool inside, std::set<CallKey>& out) {
  for (const Node& n : seq) {
    if (const auto* c = std::get_if<Call>(&n.op)) {
      if (inside) out.emplace(static_cast<int>(c->kind), c->site, c->tag);
    } else if (const auto* l = std::get_if<Loop>(&n.op)) {
      collect_branch_calls(l->body, inside || l->branch, out);
    }
  }
}

// FoldOptions::step_order from the traces: in each step (from one call at the run's site to the next) of every
// rank, which calls (kind, site, tag) come before which; then, repeatedly, the call that the fewest of those left
// come before more often than after (ties: the smaller mean place in its steps, then the key).
std::map<CallKey, std::size_t> call_order(const std::vector<trace::Run>& runs, const std::vector<std::uint64_t>& sites) {
  std::map<CallKey, std::size_t> index;
  std::vector<CallKey> keys;
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> before;  // (x, y) -> steps where x came first
  std::vector<double> place_sum;
  std::vector<std::size_t> place_n;
  for (std::size_t r = 0; r < runs.size(); ++r)
    for (const trace::RankTrace& t : runs[r].ranks) {
      std::vector<std::size_t> step;  // first occurrences, in order
      std::set<std::size_t> seen;
      auto close = [&] {
        for (std::size_t a = 0; a < step.size(); ++a) {
          place_sum[step[a]] += static_cast<double>(a) / static_cast<double>(step.size());
          ++place_n[step[a]];
          for (std::size_t b = a + 1; b < step.size(); ++b) ++before[{step[a], step[b]}];
        }
        step.clear();
        seen.clear();
      };
      bool open = false;
      for (const trace::Event& e : t.events) {
        if (e.kind == trace::Kind::COMPLETE || trace::is_annotation(e.kind) || e.site == 0) continue;
        if (e.site == sites[r]) {
          if (open) close();
          open = true;
        }
        if (!open) continue;
        const CallKey k{static_cast<int>(e.kind), e.site, e.tag};
        auto [it, added] = index.emplace(k, keys.size());
        if (added) keys.push_back(k), place_sum.push_back(0), place_n.push_back(0);
        if (seen.insert(it->second).second) step.push_back(it->second);
      }
      if (open) close();
    }
  std::map<CallKey, std::size_t> out;
  std::vector<bool> done(keys.size(), false);
  for (std::size_t round = 0; round < keys.size(); ++round) {
    std::size_t best = SIZE_MAX, best_pred = SIZE_MAX;
    double best_place = 0;
    for (std::size_t x = 0; x < keys.size(); ++x) {
      if (done[x]) continue;
      std::size_t pred = 0;
      for (std::size_t y = 0; y < keys.size(); ++y) {
        if (done[y] || y == x) continue;
        const auto yx = before.find({y, x}), xy = before.find({x, y});
        if ((yx == before.end() ? 0 : yx->second) > (xy == before.end() ? 0 : xy->second)) ++pred;
      }
      const double place = place_n[x] ? place_sum[x] / static_cast<double>(place_n[x]) : 0;
      if (best == SIZE_MAX || pred < best_pred || (pred == best_pred && (place < best_place || (place == best_place && keys[x] < keys[best])))) {
        best = x, best_pred = pred, best_place = place;
      }
    }
    done[best] = true;
    out[keys[best]] = round;
  }
  return out;
}

}  // namespace

StepsChoice choose_step_site(const std::vector<trace::Run>& runs, std::vector<std::vector<RankProgram>>& folded,
                             const FoldOptions& options) {
  StepsChoice out;
  if (options.step_site != 0 || runs.empty()) return out;
  const FoldCounts before = fold_counts(folded);
  if (before.largest < 32) return out;
  // candidates: world collectives' sites with MIN_STEPS calls or more at every rank of every run; failing those,
  // a point-to-point call every step makes (a particle code whose steps start with an exchange and reduce only
  // every tenth step), chosen run by run: its first call in a step can be a dimension's that one-rank dimensions
  // of smaller runs skip (particles.c at P = 2)
  const std::map<std::uint64_t, std::size_t> collectives = candidate_sites(runs, true);
  if (collectives.count(0)) return out;  // the program annotates its loops itself
  out = choose_among(runs, collectives, true);
  out.collective = out.site != 0;
  std::vector<std::uint64_t> sites(runs.size(), out.site);
  if (out.site == 0) {
    bool irregular = false;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const std::span<const trace::Run> one(&runs[i], 1);
      const std::map<std::uint64_t, std::size_t> candidates = candidate_sites(one, false);
      StepsChoice c = choose_among(one, candidates, false);
      irregular = irregular || c.site != 0;
      // a run whose steps repeat exactly at every candidate: cut the same way, if another run's steps do not
      if (c.site == 0) c = choose_among(one, candidates, false, false);
      if (c.site == 0) return StepsChoice{};
      sites[i] = c.site;
      out.steps = i == 0 ? c.steps : std::min(out.steps, c.steps);
      out.kinds = std::max(out.kinds, c.kinds);
    }
    if (!irregular) return StepsChoice{};
    out.site = sites.front();
  }
  if (out.site == 0) return StepsChoice{};
  out.tried = out.site;
  auto refold = [&](const FoldOptions& base) {
    std::vector<std::vector<RankProgram>> other(runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i) {
      FoldOptions with = base;
      with.step_site = sites[i];
      for (const trace::RankTrace& r : runs[i].ranks) other[i].push_back(fold_rank(r, with));
    }
    return other;
  };
  FoldOptions with = options;
  std::vector<std::vector<RankProgram>> other;
  if (out.collective) {
    other = refold(with);
  } else {
    // a step's migrations carry as many particles as happened to leave: sizes are statistics; every call that
    // some step of some rank skipped is a branch at every rank (fold.hpp, FoldOptions::step_data)
    with.vary_sizes = true;
    with.step_data = true;
    with.step_order = call_order(runs, sites);
    other = refold(with);
    for (const auto& programs : other)
      for (const RankProgram& p : programs) collect_branch_calls(p.seq, false, with.step_optional);
    other = refold(with);
  }
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
  out.note = std::string("a time-step loop the program does not annotate: every rank calls one ") +
             (out.collective ? "collective" : "point-to-point") + " site " + std::to_string(out.steps) +
             " times or more, cutting its events into at most " + std::to_string(out.kinds) +
             " kinds of step; folded as one loop over those steps, with branches for the parts some steps run (" +
             std::to_string(before.nodes) + " folded nodes and " + std::to_string(before.shapes) + " rank shapes over all runs before, " +
             std::to_string(after.nodes) + " and " + std::to_string(after.shapes) + " now)";
  return out;
}

}  // namespace mksim::skeletons::builder
