#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/stack_regions.hpp"
#include "skeletons/builder/steps.hpp"
#include "skeletons/builder/vary.hpp"

#include "skeletons/builder/cpg.hpp"
#include "skeletons/builder/features.hpp"
#include "skeletons/builder/predicate.hpp"
#include "skeletons/builder/regress.hpp"
#include "skeletons/builder/topology.hpp"
#include "skeletons/builder/neighbours.hpp"
#include "skeletons/error.hpp"
#include "skeletons/expr.hpp"
#include "skeletons/matching.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <deque>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>

namespace mksim::skeletons::builder {

namespace {

using trace::Kind;

// What a rank did, folded, with the run it belongs to.
struct RunInfo {
  std::string name;      // the run directory
  int P = 0;
  Vars vars;             // P and the parameters
  std::vector<RankProgram> ranks;
  const trace::Run* run = nullptr;
};

struct Member {
  const RunInfo* run;
  int rank;
  const Seq* seq;
};

Vars vars_of(const Member& m) {
  Vars v = m.run->vars;
  v["rank"] = m.rank;
  return v;
}

std::string fmt_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// ---------------------------------------------------------------------------------------------------
// The union program. Ranks (of all runs) with the same shape share one folded structure; the distinct
// shapes are aligned one after the other into one program (longest common subsequence over call keys,
// loops matched with loops and their bodies aligned recursively), each node remembering which shapes,
// and so which ranks, run it. A node not run by every rank of its enclosing block gets an `if` whose
// condition on rank is found by the predicate search. A call carries the compute gap before it.

// the identity of a call for alignment: what shape_hash sees of it
std::uint64_t call_key(const Call& c) {
  Seq one(1);
  one[0].op = c;
  return shape_hash(one);
}

// One shape's members walked in parallel: the same position in each member's sequence.
struct Occ {
  std::size_t shape = 0;
  std::vector<const Node*> nodes;  // the call or loop, per member of the shape
  std::vector<const Node*> gaps;   // the compute gap before it (nullptr when none), per member
};

struct UNode {
  enum class Type { CALL, LOOP, TAIL, REGION } type = Type::CALL;
  std::uint64_t key = 0;               // CALL: call_key; LOOP/TAIL: 0
  std::vector<Occ> occ;                // REGION: its begin marker's
  std::vector<UNode> body;             // LOOP, REGION (a REGION's ends with its end marker's TAIL)
  std::string name;                    // REGION
  std::vector<std::vector<Occ>> twins; // CALL copied per class (on a cycle): the occurrences of each copy
};

// A sequence cut into units: each call with the gap before it, each loop with the gap before it, and
// the gap at the end (a TAIL unit, possibly without gap).
struct Unit {
  UNode::Type type;
  std::size_t node = 0;     // index of the call/loop in the sequence (TAIL: size())
  long gap = -1;            // index of the compute node before it, -1 when none
};

std::vector<Unit> units_of(const Seq& s) {
  std::vector<Unit> u;
  long gap = -1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (std::holds_alternative<Compute>(s[i].op)) {
      gap = static_cast<long>(i);
      continue;
    }
    u.push_back({std::holds_alternative<Loop>(s[i].op) ? UNode::Type::LOOP : UNode::Type::CALL, i, gap});
    gap = -1;
  }
  u.push_back({UNode::Type::TAIL, s.size(), gap});
  return u;
}

// One shape's members at one level of the program: the same sequence position in every member.
struct ShapeSeqs {
  std::size_t shape = 0;
  std::vector<const Seq*> seqs;  // per member of the shape; same structure
  int rank = -1, P = 0;          // the first member's rank and its run's P (the direction of its messages)
  // the axis of a Cartesian grid along which a point-to-point call's peer is the first member's neighbour, -1
  // for none (Topology::cart_axis); empty without topologies
  std::function<int(const Call&)> axis;
};

// The identity of a unit within a level: (type, key, anchor, occurrence). A loop is the loop node it was
// matched with (LoopMatcher); a call whose key no shape repeats at this level is its key; a call whose
// key repeats (without call sites: every MPI_Waitall is one call point) is its key, the identity of the
// nearest unit before it that does not repeat (its anchor, SIZE_MAX for none) and how many times the
// key came since then. So atm2d's waitall after its north exchange is the same call in every rank that
// exchanges north, whatever exchanges came before it, and not the rank's k-th waitall.
using UnitId = std::tuple<int, std::uint64_t, std::size_t, std::size_t>;

// The direction of a message of `rank` (of P) to or from `peer`: +1 towards higher ranks, -1 lower, a step of more
// than P/2 taken as a wrap-around the other way; 0 without a concrete peer.
int peer_direction(std::int32_t peer, int rank, int P) {
  if (rank < 0 || peer < 0 || peer >= P || peer == rank) return 0;
  const int d = peer - rank;
  return (d > 0) == (2 * std::abs(d) <= P) ? 1 : -1;
}

// The call keys a loop body runs, nested loops included: what loops of different shapes are matched by. A
// point-to-point call's key carries the direction of its peer relative to the rank (`rank` of P, when known):
// the pipelines of a wavefront sweep (Sweep3D's octants, NPB LU's lower and upper sweeps) run the same calls
// towards opposite neighbours, and a rank on an edge skips some of them, so by call keys alone its loop of one
// sweep looks like another sweep's loop of an interior rank.
void collect_body_keys(const Seq& s, std::set<std::uint64_t>& keys, int rank = -1, int P = 0) {
  for (const Node& n : s) {
    if (const auto* c = std::get_if<Call>(&n.op)) {
      std::uint64_t k = call_key(*c);
      if (const int dir = peer_direction(c->peer, rank, P); dir != 0) k = k * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(dir + 2);
      keys.insert(k);
    } else if (const auto* l = std::get_if<Loop>(&n.op)) {
      collect_body_keys(l->body, keys, rank, P);
    }
  }
}

// Jaccard similarity of two key sets: shared keys over all keys (0 when they share none).
double key_similarity(const std::set<std::uint64_t>& a, const std::set<std::uint64_t>& b) {
  std::size_t shared = 0;
  for (std::uint64_t k : a) shared += b.count(k);
  const std::size_t all = a.size() + b.size() - shared;
  return all == 0 ? 0.0 : static_cast<double>(shared) / static_cast<double>(all);
}

// The loose identity of a call: its kind and tag only (loops from different lines that do the same thing).
void collect_loose_keys(const Seq& s, std::set<std::uint64_t>& keys) {
  for (const Node& n : s) {
    if (const auto* c = std::get_if<Call>(&n.op); c && !trace::is_annotation(c->kind))  // (a loop's name ids are per rank)
      keys.insert((static_cast<std::uint64_t>(c->kind) << 32) ^ static_cast<std::uint32_t>(c->tag));
    else if (const auto* l = std::get_if<Loop>(&n.op)) collect_loose_keys(l->body, keys);
  }
}

// The loops of one level, matched across shapes by what they contain rather than where they are: each
// shape's loops, in its order, are aligned with the loop nodes seen so far (in their merged order) by an
// order-keeping alignment that maximises first the summed similarity of matched body key sets (pairs
// that share no call key add nothing), then the number of pairs: loops that share no call key still pair
// up by position between the ones that do when they share a loose key, a call of the same kind and tag
// (atm2d's red and black ranks run their time steps from different lines); a master's loop over its workers
// and a worker's loop of results share neither and stay apart. Unmatched loops become new nodes. A shape
// without some loop (PGE2 at P = 2 has no pipelines before its reduction loop) so no longer shifts the
// identity of the loops after it.
class LoopMatcher {
 public:
  // The loop node of each of one shape's loops (given by their body key sets and loose key sets, in program
  // order).
  std::vector<std::size_t> match(const std::vector<std::set<std::uint64_t>>& loops,
                                 const std::vector<std::set<std::uint64_t>>& loose) {
    const std::size_t n = loops.size(), m = order_.size();
    using Score = std::pair<double, std::size_t>;  // (summed similarity, pairs), compared in that order
    auto plus = [](const Score& a, double sim) { return Score{a.first + sim, a.second + 1}; };
    // best[i][j]: the best alignment of loops i.. with nodes j.. (ties: pair with the earliest node)
    std::vector<std::vector<Score>> best(n + 1, std::vector<Score>(m + 1, Score{0.0, 0}));
    std::vector<std::vector<double>> sim(n, std::vector<double>(m, 0.0));
    std::vector<std::vector<bool>> pairs(n, std::vector<bool>(m, false));
    for (std::size_t i = n; i-- > 0;)
      for (std::size_t j = m; j-- > 0;) {
        sim[i][j] = key_similarity(loops[i], keys_[order_[j]]);
        pairs[i][j] = sim[i][j] > 0 || key_similarity(loose[i], loose_[order_[j]]) > 0;
        best[i][j] = std::max(best[i + 1][j], best[i][j + 1]);
        if (pairs[i][j]) best[i][j] = std::max(best[i][j], plus(best[i + 1][j + 1], sim[i][j]));
      }
    std::vector<std::size_t> matched(n, SIZE_MAX);  // position in order_ of each loop's node
    for (std::size_t i = 0, j = 0; i < n && j < m;) {
      if (pairs[i][j] && best[i][j] == plus(best[i + 1][j + 1], sim[i][j])) {
        matched[i++] = j++;
      } else if (best[i][j] == best[i][j + 1]) {
        ++j;
      } else {
        ++i;
      }
    }
    // the merged order: each new loop right after the node of the matched loop before it
    std::vector<std::size_t> ids(n), merged;
    std::size_t j = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (matched[i] == SIZE_MAX) {
        ids[i] = keys_.size();
        keys_.emplace_back();
        loose_.emplace_back();
        merged.push_back(ids[i]);
        continue;
      }
      for (; j <= matched[i]; ++j) merged.push_back(order_[j]);
      ids[i] = order_[matched[i]];
    }
    for (; j < m; ++j) merged.push_back(order_[j]);
    order_ = std::move(merged);
    for (std::size_t i = 0; i < n; ++i) {
      keys_[ids[i]].insert(loops[i].begin(), loops[i].end());
      loose_[ids[i]].insert(loose[i].begin(), loose[i].end());
    }
    return ids;
  }

 private:
  std::vector<std::set<std::uint64_t>> keys_;  // per loop node: the body keys of every loop matched with it
  std::vector<std::set<std::uint64_t>> loose_; // per loop node: their loose keys
  std::vector<std::size_t> order_;             // the loop nodes in program order, as far as shapes tell
};

// The strongly connected components of a directed graph (Tarjan's algorithm, iterative): component
// index per node.
std::vector<std::size_t> strong_components(const std::vector<std::set<std::size_t>>& succ) {
  const std::size_t n = succ.size();
  constexpr std::size_t NONE = SIZE_MAX;
  std::vector<std::size_t> index(n, NONE), low(n, 0), comp(n, NONE), stack;
  std::vector<bool> on_stack(n, false);
  std::size_t counter = 0, comps = 0;
  struct Frame {
    std::size_t v;
    std::set<std::size_t>::const_iterator next;
  };
  for (std::size_t root = 0; root < n; ++root) {
    if (index[root] != NONE) continue;
    std::vector<Frame> dfs{{root, succ[root].begin()}};
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!dfs.empty()) {
      Frame& f = dfs.back();
      if (f.next != succ[f.v].end()) {
        const std::size_t w = *f.next++;
        if (index[w] == NONE) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = true;
          dfs.push_back({w, succ[w].begin()});
        } else if (on_stack[w]) {
          low[f.v] = std::min(low[f.v], index[w]);
        }
        continue;
      }
      const std::size_t v = f.v;
      dfs.pop_back();
      if (!dfs.empty()) low[dfs.back().v] = std::min(low[dfs.back().v], low[v]);
      if (low[v] == index[v]) {
        std::size_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = comps;
        } while (w != v);
        ++comps;
      }
    }
  }
  return comp;
}

// Whether a graph given as edge set has no cycle (Kahn's algorithm).
bool acyclic(const std::set<std::pair<std::size_t, std::size_t>>& edges) {
  std::map<std::size_t, std::size_t> indegree;
  std::map<std::size_t, std::vector<std::size_t>> succ;
  for (const auto& [a, b] : edges) {
    indegree.try_emplace(a, 0);
    ++indegree[b];
    succ[a].push_back(b);
  }
  std::vector<std::size_t> ready;
  for (const auto& [v, d] : indegree)
    if (d == 0) ready.push_back(v);
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::size_t v = ready.back();
    ready.pop_back();
    ++done;
    for (std::size_t w : succ[v])
      if (--indegree[w] == 0) ready.push_back(w);
  }
  return done == indegree.size();
}

// The mean of the compute gaps of one occurrence over its members of each run (flops when the trace gives them,
// else seconds; members without a gap count as 0). run_of[shape][member]: the member's run.
std::map<std::size_t, double> gap_means(const Occ& o, bool flops, const std::vector<std::vector<std::size_t>>& run_of) {
  std::map<std::size_t, std::pair<double, double>> acc;
  for (std::size_t k = 0; k < o.gaps.size(); ++k) {
    auto& [sum, n] = acc[run_of[o.shape][k]];
    if (const Node* g = o.gaps[k]) sum += flops ? std::get<Compute>(g->op).flops.mean() : std::get<Compute>(g->op).seconds.mean();
    n += 1;
  }
  std::map<std::size_t, double> out;
  for (const auto& [r, sn] : acc) out[r] = sn.first / sn.second;
  return out;
}

// An occurrence's gaps taken away as the occurrence of a compute node of its own (nullopt when it has none).
std::optional<Occ> take_gaps(Occ& from) {
  if (std::none_of(from.gaps.begin(), from.gaps.end(), [](const Node* g) { return g != nullptr; })) return std::nullopt;
  Occ moved;
  moved.shape = from.shape;
  moved.nodes.assign(from.gaps.size(), nullptr);
  moved.gaps = from.gaps;
  std::fill(from.gaps.begin(), from.gaps.end(), nullptr);
  return moved;
}

// A loop body whose calls are copied per class of shapes (atm2d: red ranks exchange north, south, east, west, black
// ones south, north, west, east; a rank on an edge skips some): a rank's gap before its first call of an iteration
// comes after its last call of the iteration before, so the top of the body is a place where every rank's first gap
// may lie. Left with their calls, the step's work sat before whichever call a rank runs first, and each copy's gap
// was a mixture over ranks of that work and the microseconds between two exchanges (the demo's spread, issue 17).
// When, in every run, every shape's first gap is the same work (each shape's mean over its members within a factor
// of 2 of the run's median over ranks), those gaps become one compute node at the top of the body, run by every
// rank that has one. A rank runs the same operations in the same order either way; only what is fitted together
// changes. Gaps that differ (a wavefront's last rank works before its receives, the others after) stay.
void gather_wrap_gaps(std::vector<UNode>& level, const std::vector<std::vector<std::size_t>>& run_of, bool flops) {
  // each shape's first node at this level: (position, occurrence index)
  std::map<std::size_t, std::pair<std::size_t, std::size_t>> first;
  for (std::size_t i = 0; i < level.size(); ++i) {
    if (level[i].type == UNode::Type::TAIL) continue;
    for (std::size_t k = 0; k < level[i].occ.size(); ++k) first.try_emplace(level[i].occ[k].shape, i, k);
  }
  if (first.size() < 2) return;
  std::set<std::size_t> positions;
  // per run: each shape's mean first gap, with its members' count
  std::map<std::size_t, std::vector<std::pair<double, std::size_t>>> per_run;
  for (const auto& [shape, at] : first) {
    positions.insert(at.first);
    const Occ& o = level[at.first].occ[at.second];
    std::map<std::size_t, std::size_t> members;
    for (std::size_t k = 0; k < o.gaps.size(); ++k) ++members[run_of[shape][k]];
    for (const auto& [r, m] : gap_means(o, flops, run_of)) per_run[r].emplace_back(m, members[r]);
  }
  if (positions.size() < 2) return;  // every shape starts at one node: its gaps are fitted together already
  for (auto& [r, means] : per_run) {
    std::sort(means.begin(), means.end());
    std::size_t total = 0, seen = 0;
    for (const auto& mc : means) total += mc.second;
    double median = 0;
    for (const auto& [m, c] : means)
      if ((seen += c) * 2 >= total) {
        median = m;
        break;
      }
    if (!(median > 0) || means.front().first < 0.5 * median || means.back().first > 2 * median) return;
  }
  UNode work;
  work.type = UNode::Type::TAIL;
  for (const auto& [shape, at] : first) {
    if (std::optional<Occ> moved = take_gaps(level[at.first].occ[at.second])) work.occ.push_back(std::move(*moved));
  }
  if (!work.occ.empty()) level.insert(level.begin(), std::move(work));
}

// Compute between calls that some ranks skip. A call carries the gap before it, so in a non-periodic stencil
// (NPB LU's sweep: receive from north and west, the plane's work, send south and east; ranks on an edge skip
// some of the four) the plane's work sits before the send to the east at an interior rank, before the send to
// the south at a rank of the last column, inside each `if` of the ranks that run that call: the work of one
// place in the program scattered over conditional calls, each fitted over a mixture of ranks. A rank's gap
// lies somewhere between the last node it ran and the node it carries; ranks that run both neighbours of a
// place pin the work there. When, among the places a gap may lie, one pinned place holds clearly the most
// work (10 times the next) and the gap holds that work (at least half of it: not the microseconds between two calls
// of a rank that skips a slow rank's branch), the gap goes there; pinned work under 10% of the level's largest
// gap (the microseconds between two calls) pins nothing: one compute node before that place, run by every rank whose
// gap lies there, whatever calls around it they skip. Other gaps stay with their calls. Levels with calls
// copied per class of shapes (twins) are left as they are.
void place_pinned_gaps(std::vector<UNode>& level, const std::vector<std::vector<std::size_t>>& run_of, bool loop_body, bool flops) {
  for (const UNode& u : level)
    if (!u.twins.empty()) return;
  // each shape's nodes in order: (position, occurrence index)
  std::map<std::size_t, std::vector<std::pair<std::size_t, std::size_t>>> runs;
  for (std::size_t i = 0; i < level.size(); ++i)
    for (std::size_t k = 0; k < level[i].occ.size(); ++k) runs[level[i].occ[k].shape].emplace_back(i, k);
  // In a loop body the gap before a rank's first call comes after its last call of the iteration before: the places
  // from there to the end of the body are where it may lie too (a rank without sends folds its iterations as
  // [work, receive, receive], the others as [receive, receive, work, send, send]).
  const bool has_tail = level.back().type == UNode::Type::TAIL;
  const std::size_t last_call_of_level = has_tail ? level.size() - 2 : level.size() - 1;
  auto last_call = [&](const std::vector<std::pair<std::size_t, std::size_t>>& seq) {
    const bool tail = has_tail && seq.back().first == level.size() - 1;
    return tail ? (seq.size() >= 2 ? seq[seq.size() - 2].first : SIZE_MAX) : seq.back().first;
  };
  // per run (the ranks of one run do the same work at one place; runs of other sizes do not): the work pinned
  // before each position, the largest mean gap of a shape that ran the node before it too; the level's largest gap
  std::vector<std::map<std::size_t, double>> pinned(level.size());
  std::map<std::size_t, double> largest;
  for (const auto& [shape, seq] : runs)
    for (std::size_t j = 0; j < seq.size(); ++j) {
      const std::size_t i = seq[j].first;
      const bool adjacent = j == 0 ? i == 0 && (!loop_body || last_call(seq) == last_call_of_level) : seq[j - 1].first + 1 == i;
      for (const auto& [r, m] : gap_means(level[i].occ[seq[j].second], flops, run_of)) {
        largest[r] = std::max(largest[r], m);
        if (adjacent) pinned[i][r] = std::max(pinned[i][r], m);
      }
    }
  // where each gap goes: (shape, node) -> position; every run of the shape must agree
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> moves;
  std::set<std::size_t> targets;
  for (const auto& [shape, seq] : runs)
    for (std::size_t j = 0; j < seq.size(); ++j) {
      const std::size_t b = seq[j].first, a = j == 0 ? 0 : seq[j - 1].first + 1;
      std::vector<std::size_t> places;  // where the gap may lie, in program order (a loop body's wrap first)
      if (j == 0 && loop_body && last_call(seq) != SIZE_MAX && last_call(seq) < level.size() - 1)
        for (std::size_t p = last_call(seq) + 1; p < level.size(); ++p) places.push_back(p);
      for (std::size_t p = a; p <= b; ++p) places.push_back(p);
      if (places.size() < 2) continue;
      std::size_t to = SIZE_MAX;
      bool ok = true, any = false;
      for (const auto& [r, mine] : gap_means(level[b].occ[seq[j].second], flops, run_of)) {
        if (!(mine > 0)) continue;
        any = true;
        std::size_t best = b;
        double first = 0, second = 0;
        for (std::size_t p : places) {
          const auto it = pinned[p].find(r);
          const double w = it == pinned[p].end() ? 0.0 : it->second;
          if (w > first) second = first, first = w, best = p;
          else second = std::max(second, w);
        }
        if (!(first >= 0.1 * largest[r] && first >= 10 * second && mine >= 0.5 * first) || (to != SIZE_MAX && to != best)) {
          ok = false;
          break;
        }
        to = best;
      }
      if (ok && any && to != SIZE_MAX) moves[{shape, b}] = to, targets.insert(to);
    }
  if (targets.empty()) return;
  // the compute nodes: every gap placed at a target, the ones that were already there included
  std::map<std::size_t, UNode> work;
  for (std::size_t p : targets) work[p].type = UNode::Type::TAIL;
  for (const auto& [shape, seq] : runs)
    for (const auto& [i, k] : seq) {
      auto it = moves.find({shape, i});
      std::size_t to = it != moves.end() ? it->second : SIZE_MAX;
      if (to == SIZE_MAX && targets.count(i)) to = i;  // the pinning shapes' own gaps
      if (to == SIZE_MAX) continue;
      if (std::optional<Occ> moved = take_gaps(level[i].occ[k])) work[to].occ.push_back(std::move(*moved));
    }
  std::vector<UNode> out;
  for (std::size_t i = 0; i < level.size(); ++i) {
    if (auto it = work.find(i); it != work.end() && !it->second.occ.empty()) {
      std::sort(it->second.occ.begin(), it->second.occ.end(), [](const Occ& x, const Occ& y) { return x.shape < y.shape; });
      out.push_back(std::move(it->second));
    }
    out.push_back(std::move(level[i]));
  }
  level = std::move(out);
}

// Work between calls: gaps pinned between calls that some ranks skip, then (in a loop body) the first gaps of
// the iteration gathered at its top.
void place_skipped_gaps(std::vector<UNode>& level, const std::vector<std::vector<std::size_t>>& run_of, bool loop_body) {
  if (level.size() < 2 || run_of.empty()) return;
  bool flops = false;
  for (const UNode& u : level)
    for (const Occ& o : u.occ)
      for (const Node* g : o.gaps)
        flops = flops || (g && std::get<Compute>(g->op).flops.mean() > 0);
  place_pinned_gaps(level, run_of, loop_body, flops);
  if (loop_body) gather_wrap_gaps(level, run_of, flops);
}

// Builds one level of the union program from every shape's sequences at that level. A unit's identity
// is its UnitId (calls by key and occurrence, loops by LoopMatcher); the order is a topological order of
// "comes before" over all shapes (each shape's own order is kept; nodes of different shapes that no shape
// orders keep the order of the first shape that has them). Shapes that order the same nodes differently
// make cycles. Then the shapes are put into classes that each agree on one order (greedily, most common
// shapes first: a shape joins, among the classes it stays acyclic with, the first that already has most
// of its orderings among the cycles' nodes, else it starts a class; with `per_shape`, every shape is a
// class of its own), and only the nodes on a cycle (in a strongly connected component of more than one
// node) get one copy per class; every other node stays shared. The result is acyclic: a cycle would lie
// within one component, whose copies each take edges from one class only. `shared` is set when a class
// holds several shapes.
// `optional`: call sites of neighbour lists (neighbours.hpp), which are never anchors: which of them a rank
// runs depends on where it lies on the grid, so the k-th waitall after the last of them is not one call.
std::vector<UNode> build_level(const std::vector<ShapeSeqs>& inputs, bool per_shape, bool& shared,
                               const std::vector<std::vector<std::size_t>>& run_of, bool loop_body,
                               const std::map<std::uint64_t, NeighbourTag>* optional = nullptr) {
  // each input's units and their identities
  struct Walk {
    std::vector<Unit> units;
    std::vector<std::size_t> base;  // per unit: its identity's index
  };
  std::vector<Walk> walks(inputs.size());
  std::map<UnitId, std::size_t> base_index;
  std::vector<UnitId> base_ids;
  LoopMatcher loops;
  // A call's identity key: its call key, and for a point-to-point call towards a neighbour on a Cartesian grid the
  // axis of that neighbour. A code that exchanges only along the axes of more than one rank (LAMMPS: a 1 x 2 x 2
  // grid at P = 4, 2 x 2 x 2 at P = 8) runs its exchange call sites once per axis it has: by occurrence alone the
  // first exchange of P = 4 (along y) would be the first of P = 8 (along x).
  // An MPI_Wait takes the axis of the request it completes (its last posting at this level), so that it stays
  // with that request's exchange.
  auto unit_key = [&](const ShapeSeqs& in, const Call& c, std::map<std::uint64_t, int>& posted) {
    std::uint64_t k = call_key(c);
    if (!in.axis) return k;
    int a = -1;
    if (c.kind == Kind::WAIT) {
      if (auto it = posted.find(c.waits_on); it != posted.end()) a = it->second;
    } else {
      a = in.axis(c);
      if (c.kind == Kind::ISEND || c.kind == Kind::IRECV || c.kind == Kind::ISSEND) posted[c.site] = a;
    }
    if (a >= 0) k = k * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(a + 7);
    return k;
  };
  std::set<std::uint64_t> repeated;  // call keys that some input has more than once at this level
  for (const ShapeSeqs& in : inputs) {
    std::set<std::uint64_t> once;
    std::map<std::uint64_t, int> posted;
    for (const Node& n : *in.seqs.front())
      if (const auto* c = std::get_if<Call>(&n.op)) {
        const std::uint64_t k = unit_key(in, *c, posted);
        if (!once.insert(k).second) repeated.insert(k);
      }
  }
  for (std::size_t in = 0; in < inputs.size(); ++in) {
    const Seq& rep = *inputs[in].seqs.front();
    Walk& w = walks[in];
    w.units = units_of(rep);
    std::vector<std::set<std::uint64_t>> loop_keys, loose_keys;
    for (const Unit& u : w.units)
      if (u.type == UNode::Type::LOOP) {
        collect_body_keys(std::get<Loop>(rep[u.node].op).body, loop_keys.emplace_back(), inputs[in].rank, inputs[in].P);
        collect_loose_keys(std::get<Loop>(rep[u.node].op).body, loose_keys.emplace_back());
      }
    const std::vector<std::size_t> loop_ids = loops.match(loop_keys, loose_keys);
    std::map<std::uint64_t, std::size_t> since_anchor;
    std::map<std::uint64_t, int> posted;
    std::size_t anchor = SIZE_MAX, loop = 0;
    for (const Unit& u : w.units) {
      UnitId id{2, 0, 0, 0};
      if (u.type == UNode::Type::CALL) {
        const std::uint64_t k = unit_key(inputs[in], std::get<Call>(rep[u.node].op), posted);
        id = repeated.count(k) ? UnitId{0, k, anchor, since_anchor[k]++} : UnitId{0, k, 0, 0};
      } else if (u.type == UNode::Type::LOOP) {
        id = {1, 0, loop_ids[loop++], 0};
      }
      auto [it, fresh] = base_index.try_emplace(id, base_ids.size());
      if (fresh) base_ids.push_back(id);
      w.base.push_back(it->second);
      bool listed = false;
      if (optional && u.type == UNode::Type::CALL) {
        const Call& c = std::get<Call>(rep[u.node].op);
        listed = optional->count(c.kind == Kind::WAIT ? c.waits_on : c.site) > 0;
      }
      if (std::get<0>(id) == 1 || (std::get<0>(id) == 0 && !repeated.count(std::get<1>(id)) && !listed)) {
        anchor = it->second;
        since_anchor.clear();
      }
    }
  }
  // "comes before" over all inputs, and the nodes on its cycles
  std::vector<std::set<std::size_t>> base_succ(base_ids.size());
  for (const Walk& w : walks)
    for (std::size_t k = 1; k < w.base.size(); ++k) base_succ[w.base[k - 1]].insert(w.base[k]);
  const std::vector<std::size_t> comp = strong_components(base_succ);
  std::vector<std::size_t> comp_size(base_ids.size(), 0);
  for (std::size_t c : comp) ++comp_size[c];
  auto on_cycle = [&](std::size_t b) { return comp_size[comp[b]] > 1; };
  // classes of inputs that agree on the order of the cycles' nodes
  std::vector<std::size_t> class_of(inputs.size(), 0);
  std::vector<std::set<std::pair<std::size_t, std::size_t>>> classes;  // edges inside components, per class
  std::vector<std::size_t> class_size;
  bool cyclic = false;
  for (std::size_t b = 0; b < base_ids.size(); ++b) cyclic = cyclic || on_cycle(b);
  for (std::size_t in = 0; cyclic && in < inputs.size(); ++in) {
    std::set<std::pair<std::size_t, std::size_t>> own;
    const Walk& w = walks[in];
    for (std::size_t k = 1; k < w.base.size(); ++k)
      if (on_cycle(w.base[k]) && comp[w.base[k - 1]] == comp[w.base[k]]) own.emplace(w.base[k - 1], w.base[k]);
    std::size_t chosen = SIZE_MAX, chosen_agree = 0;
    for (std::size_t c = 0; !per_shape && c < classes.size(); ++c) {
      std::size_t agree = 0;
      for (const auto& e : own) agree += classes[c].count(e);
      if (chosen != SIZE_MAX && agree <= chosen_agree) continue;
      std::set<std::pair<std::size_t, std::size_t>> joined = classes[c];
      joined.insert(own.begin(), own.end());
      if (!acyclic(joined)) continue;
      chosen = c;
      chosen_agree = agree;
    }
    if (chosen == SIZE_MAX) {
      chosen = classes.size();
      classes.emplace_back();
      class_size.push_back(0);
    }
    classes[chosen].insert(own.begin(), own.end());
    class_of[in] = chosen;
    if (++class_size[chosen] > 1) shared = true;
  }

  // the union nodes: one per identity, or per identity and class on a cycle
  struct Info {
    UNode node;
    std::pair<std::size_t, std::size_t> priority;  // (input index, position): first appearance
    std::vector<std::pair<std::size_t, Unit>> loops; // LOOP: (input index, unit) per input
    // a call of a neighbour list (`optional`): (list's traced site, kind) and its offset's place in the list's order
    std::pair<std::uint64_t, int> list{0, -1};
    int list_order = -1;
  };
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> index;  // (identity, class or 0) -> node
  std::vector<Info> nodes;
  std::vector<std::set<std::size_t>> succ;
  std::vector<std::size_t> indegree;
  for (std::size_t in = 0; in < inputs.size(); ++in) {
    const Walk& w = walks[in];
    std::size_t prev = SIZE_MAX;
    for (std::size_t k = 0; k < w.units.size(); ++k) {
      const std::size_t b = w.base[k];
      auto [it, fresh] = index.try_emplace({b, on_cycle(b) ? class_of[in] : 0}, nodes.size());
      if (fresh) {
        Info info;
        info.node.type = w.units[k].type;
        info.node.key = info.node.type == UNode::Type::CALL ? std::get<1>(base_ids[b]) : 0;
        info.priority = {in, k};
        if (optional && w.units[k].type == UNode::Type::CALL) {
          const Call& c = std::get<Call>((*inputs[in].seqs.front())[w.units[k].node].op);
          if (auto t = optional->find(c.kind == Kind::WAIT ? c.waits_on : c.site); t != optional->end()) {
            info.list = {t->second.base_site, static_cast<int>(c.kind)};
            info.list_order = t->second.order;
          }
        }
        nodes.push_back(std::move(info));
        succ.emplace_back();
        indegree.push_back(0);
      }
      const std::size_t id = it->second;
      Occ o;
      o.shape = inputs[in].shape;
      for (const Seq* sq : inputs[in].seqs) {
        o.nodes.push_back(w.units[k].type == UNode::Type::TAIL ? nullptr : &(*sq)[w.units[k].node]);
        o.gaps.push_back(w.units[k].gap >= 0 ? &(*sq)[static_cast<std::size_t>(w.units[k].gap)] : nullptr);
      }
      nodes[id].node.occ.push_back(std::move(o));
      if (w.units[k].type == UNode::Type::LOOP) nodes[id].loops.emplace_back(in, w.units[k]);
      if (prev != SIZE_MAX && succ[prev].insert(id).second) ++indegree[id];
      prev = id;
    }
  }
  // Kahn's algorithm, smallest first appearance first; among the ready calls of the neighbour list that comes first,
  // the list's own order of offsets (neighbours.hpp: rank order, or faces, edges, corners). Two offsets that no
  // traced rank has both (the (-1, +1, 0) and (0, -1, +1) neighbours of a grid two ranks deep in y) are otherwise
  // ordered by which shape showed them first, and that followed the traces' timing: nblist_app's rank-sorted list
  // came out exact at P = 27 and 32 or not from one batch of identical traces to the next.
  std::set<std::pair<std::pair<std::size_t, std::size_t>, std::size_t>> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (indegree[i] == 0) ready.insert({nodes[i].priority, i});
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    auto pick = ready.begin();
    if (nodes[pick->second].list_order >= 0)
      for (auto it = std::next(pick); it != ready.end(); ++it)
        if (nodes[it->second].list == nodes[pick->second].list && nodes[it->second].list_order < nodes[pick->second].list_order) pick = it;
    const std::size_t i = pick->second;
    ready.erase(pick);
    order.push_back(i);
    for (std::size_t j : succ[i])
      if (--indegree[j] == 0) ready.insert({nodes[j].priority, j});
  }
  if (order.size() != nodes.size()) throw std::logic_error("build_level: the union of classes that agree on an order has a cycle");
  // the copies of one call (one identity, several classes) know each other's occurrences: their numbers are
  // fitted together first (see Builder::fit_call_int)
  std::map<std::size_t, std::vector<std::size_t>> copies;  // identity -> its nodes
  for (const auto& [key, id] : index)
    if (nodes[id].node.type == UNode::Type::CALL) copies[key.first].push_back(id);
  for (const auto& [b, ids] : copies) {
    if (ids.size() < 2) continue;
    std::vector<std::vector<Occ>> all;
    for (std::size_t id : ids) all.push_back(nodes[id].node.occ);
    for (std::size_t id : ids) nodes[id].node.twins = all;
  }
  std::vector<UNode> level;
  for (std::size_t i : order) {
    Info& info = nodes[i];
    if (info.node.type == UNode::Type::LOOP) {
      std::vector<ShapeSeqs> bodies;
      for (const auto& [in, unit] : info.loops) {
        ShapeSeqs b;
        b.shape = inputs[in].shape;
        b.rank = inputs[in].rank;
        b.P = inputs[in].P;
        b.axis = inputs[in].axis;
        for (const Seq* sq : inputs[in].seqs) b.seqs.push_back(&std::get<Loop>((*sq)[unit.node].op).body);
        bodies.push_back(std::move(b));
      }
      info.node.body = build_level(bodies, per_shape, shared, run_of, true, optional);
    }
    level.push_back(std::move(info.node));
  }
  place_skipped_gaps(level, run_of, loop_body);
  return level;
}

// The builder's state for one skeleton.
class Builder {
 public:
  Builder(std::vector<RunInfo> runs, std::vector<std::string> params, const BuildOptions& o)
      : runs_(std::move(runs)), params_(std::move(params)), opt_(o) {
    // communicators and topologies (trace format v4): declarations, and calls' ranks relative to them
    for (const RunInfo& r : runs_) topo_runs_.push_back({r.run, r.vars, r.name});
    topo_ = std::make_unique<Topology>(topo_runs_, params_);
    // the dimensions of the grids the program made: where membership needs a grid, those come first
    std::set<int> nd;
    for (const RunInfo& r : runs_)
      for (const trace::RankTrace& t : r.run->ranks)
        for (const trace::Event& e : t.events)
          if (e.kind == Kind::DIMS_CREATE || e.kind == Kind::CART_CREATE)
            if (const trace::CommArgs* a = t.args_of(e); a && !a->dims.empty()) nd.insert(static_cast<int>(a->dims.size()));
    predicate_options_.grid_ndims.assign(nd.begin(), nd.end());
    std::set<std::pair<int, int>> over;  // (P, cores) of the runs with more ranks than cores
    for (const RunInfo& r : runs_)
      if (r.run->cores > 0 && r.P > r.run->cores) over.emplace(r.P, r.run->cores);
    for (const auto& [P, cores] : over)
      oversubscribed_ += (oversubscribed_.empty() ? "P = " : ", ") + std::to_string(P) + " on " + std::to_string(cores) + " cores";
  }

  BuildResult result;
  bool sizes_are_statistics = false;  ///< the runs were folded with message sizes as statistics (vary.hpp)
  NeighbourLists neighbours;          ///< calls of neighbour lists, tagged by offset (neighbours.hpp)

  nlohmann::json build() {
    // every rank of every run is a member; ranks with the same shape share one alignment
    std::map<std::uint64_t, std::size_t> shape_index;
    for (const RunInfo& r : runs_)
      for (const RankProgram& p : r.ranks) {
        const std::uint64_t h = shape_hash(p.seq);
        auto [it, fresh] = shape_index.try_emplace(h, shapes_.size());
        if (fresh) shapes_.emplace_back();
        shapes_[it->second].push_back(members_.size());
        members_.push_back({&r, p.rank, &p.seq});
      }
    // align the most common shapes first: they set the order of the program
    std::vector<std::size_t> order(shapes_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return shapes_[a].size() > shapes_[b].size(); });
    std::vector<ShapeSeqs> inputs;
    for (std::size_t s : order) {
      ShapeSeqs in;
      in.shape = s;
      for (std::size_t m : shapes_[s]) in.seqs.push_back(members_[m].seq);
      in.rank = members_[shapes_[s].front()].rank;
      in.P = members_[shapes_[s].front()].run->P;
      if (topo_->any())
        in.axis = [this, first = &members_[shapes_[s].front()]](const Call& c) {
          // a call whose peer changes with the iteration of an indexed loop has no one axis
          const bool p2p = (p2p_op_name(c.kind) != nullptr || c.kind == Kind::SENDRECV) && !(c.iter && !c.iter->peer.empty());
          return p2p ? topo_->cart_axis(trun(*first), first->rank, c.comm, c.peer) : -1;
        };
      inputs.push_back(std::move(in));
    }
    for (const auto& m : members_) collect_waited(*m.seq);
    nlohmann::json phases = build_phases();
    nlohmann::json comms;
    if (topo_->any()) {
      nlohmann::json unused = nlohmann::json::object();
      comms = topo_->declarations(
          [&](const std::vector<Sample>& s, const std::string& w, const char* f, bool r) { return fit_int(s, w, unused, f, r); },
          result.warnings);
    }
    // shapes that agree on an order share the copies of a level whose shapes disagree; when the ranks of
    // such a copy follow no condition on rank, every shape gets its own copy there instead
    const std::size_t warnings = result.warnings.size(), ambiguities = result.ambiguities.size();
    bool shared = false;
    nlohmann::json body;
    auto restart = [&] {
      result.warnings.resize(warnings);
      result.ambiguities.resize(ambiguities);
      uses_v2_ = false;
      last_request_phase_.clear();
      send_sizes_.clear();
      send_sizes_by_tag_.clear();
    };
    auto emit_all = [&] {
      try {
        try {
          body = emit_program(inputs, false, shared);
        } catch (const BuildError& e) {
          if (!shared) throw;
          restart();
          body = emit_program(inputs, true, shared);
          result.warnings.push_back(std::string("one copy per shape where shapes order calls differently: the ranks of a copy ") +
                                    "shared by shapes that agree follow no condition on rank (" + e.what() + ")");
        }
      } catch (const BuildError&) {
        // data, not rank (issue 17): parts that no condition on rank describes become probabilities
        if (!opt_.data_dependent_sets) throw;
        restart();
        allow_prob_sets_ = true;
        body = emit_program(inputs, false, shared);
      }
    };
    emit_all();
    if (grid3_seen_ && !made_3d_grid()) {
      auto again = [&](bool grid3) {
        restart();
        prefer_grid3_ = grid3;
        grid_last_.reset();
        grid_last_send_.reset();
        allow_prob_sets_ = false;
        uses_untraced_ = false;
        shared = false;
        if (grid3) predicate_options_.grid_ndims.push_back(3);
        else predicate_options_.grid_ndims.pop_back();
        predicates_.clear();  // found with or without the grid's vocabulary
        predicate_alternatives_.clear();
        emit_all();
      };
      try {
        again(true);
        result.warnings.push_back("peers on MPI_Dims_create(P, 3)'s grid, which no topology call of the traces declares: "
                                  "every peer and size was fitted with that grid first");
      } catch (const BuildError&) {
        again(false);  // as it was
      }
    }

    nlohmann::json sk;
    sk["format"] = "mksim-skeleton";
    sk["name"] = name();
    sk["description"] = "Built by mkskel from " + std::to_string(runs_.size()) + " traced run(s) of " +
                        command_text() + ".";
    nlohmann::json params = nlohmann::json::object();
    const RunInfo& largest = runs_.back();
    for (const auto& p : params_) params[p] = {{"default", largest.vars.at(p)}, {"doc", "run parameter (traced runs: " + values_of(p) + ")"}};
    sk["params"] = params;
    sk["body"] = std::move(body);
    // format v2 only when the skeleton uses it (regions, distributions): others stay readable by v1 readers
    sk["version"] = uses_v2_ ? 2 : 1;
    if (uses_untraced_) sk["let"]["no_exact_expression"] = -7;
    if (!comms.is_null() && !comms.empty()) {  // format v3: communicators, and the grids' sides and coordinates
      sk["comms"] = comms;
      for (const auto& [k, v] : topo_->lets()) sk["let"][k] = v;
      sk["version"] = 3;
    }
    if (!phases.empty()) sk["phases"] = phases;
    nlohmann::json prov;
    prov["tool"] = "mkskel";
    prov["runs"] = nlohmann::json::array();
    for (const RunInfo& r : runs_) {
      nlohmann::json jr;
      jr["dir"] = r.name;
      jr["P"] = r.P;
      for (const auto& p : params_) jr["params"][p] = r.vars.at(p);
      prov["runs"].push_back(jr);
    }
    prov["shapes"] = shapes_.size();
    if (fixed_params_) {
      std::string fixed;
      for (const auto& p : params_)
        if (values_of(p).find(',') == std::string::npos) fixed += (fixed.empty() ? "" : ", ") + p + "=" + values_of(p);
      if (!fixed.empty())
        result.ambiguities.insert(result.ambiguities.begin(),
                                  fixed + " in every run: no expression can depend on " +
                                      (fixed.find(',') == std::string::npos ? "it" : "them") +
                                      "; trace runs at other values to find out whether the program's numbers do");
    }
    if (oversubscribed_refits_ > 0)
      result.warnings.insert(result.warnings.begin(),
                             std::to_string(oversubscribed_refits_) + " measured time(s) grew with P in runs with more ranks than cores (" +
                                 oversubscribed_ + "): fitted again with no term that grows with P, or their mean (each block's fit "
                                 "keeps the rejected model; trace within the host's cores to measure how its work grows); first: " +
                                 oversubscribed_example_);
    if (!result.ambiguities.empty()) prov["ambiguities"] = result.ambiguities;
    if (!result.warnings.empty()) prov["warnings"] = result.warnings;
    if (!neighbours.notes.empty()) prov["neighbour_lists"] = neighbours.notes;
    sk["provenance"] = prov;
    return sk;
  }

 private:
  std::vector<RunInfo> runs_;
  std::vector<std::string> params_;
  BuildOptions opt_;
  std::vector<TopoRun> topo_runs_;   // parallel to runs_
  std::unique_ptr<Topology> topo_;

  const TopoRun& trun(const Member& m) const { return topo_runs_[static_cast<std::size_t>(m.run - runs_.data())]; }

  // The skeleton communicator of a call (topology.hpp): 0 world; -1 when its ranks' communicators are of
  // different declarations.
  int call_decl(const UNode& u) const {
    int d = -2;
    for (const Occ& o : u.occ)
      for (std::size_t k = 0; k < o.nodes.size(); ++k) {
        const Member& m = members_[shapes_[o.shape][k]];
        const int x = topo_->decl_of(trun(m), m.rank, std::get<Call>(o.nodes[k]->op).comm);
        if (d == -2) d = x;
        else if (d != x) return -1;
      }
    return std::max(d, 0);
  }

  // A rank-valued number of a call (peer, root: world ranks in the trace) as a rank of its communicator.
  template <class F>
  std::string fit_comm_rank(const UNode& u, int decl, F get, const std::string& at, nlohmann::json& fits, const char* field,
                            Topology::Shift shift = Topology::Shift::any) {
    if (!topo_->any()) {
      if (field == std::string("root")) return fit_int(samples(u, get), at, fits, field, false);
      grid_shift_ = shift;
      std::string text = fit_call_int(u, get, at, fits, field);
      grid_shift_ = Topology::Shift::any;
      return text;
    }
    std::vector<RankObs> obs;
    for (const Occ& o : u.occ)
      for (std::size_t k = 0; k < o.nodes.size(); ++k) {
        const Member& m = members_[shapes_[o.shape][k]];
        obs.push_back({&trun(m), m.rank, std::get<Call>(o.nodes[k]->op).comm, static_cast<int>(get(*o.nodes[k]))});
      }
    bool exact = true;
    std::string note;
    const std::string text = topo_->fit_rank(
        decl, obs, [&](const std::vector<Sample>& s, const std::string& w, const char* f, bool r) { return fit_int(s, w, fits, f, r); },
        at, field, exact, note, shift);
    if (text.empty()) {  // no form on the communicator: the world rank's fit, said
      result.warnings.push_back(at + "/" + field + ": " + (note.empty() ? std::string("no form on its communicator fits") : note) +
                                "; fitted as a world rank");
      return field == std::string("root") ? fit_int(samples(u, get), at, fits, field, false) : fit_call_int(u, get, at, fits, field);
    }
    if (!note.empty()) result.ambiguities.push_back(at + "/" + field + ": " + note);
    return text;
  }
  std::string oversubscribed_;    // the runs with more ranks than cores ("P = 16 on 2 cores, ..."), "" when none
  int oversubscribed_refits_ = 0;  // measured times that grew with P there, fitted again (one warning for all)
  std::string oversubscribed_example_;
  bool allow_prob_sets_ = false;  // condition(): an empty text (a probability) where no predicate fits
  std::vector<Member> members_;
  std::vector<std::vector<std::size_t>> shapes_;        // shape -> member indices
  std::map<std::uint64_t, std::string> request_names_;  // waited isend/irecv site -> name
  std::map<std::vector<bool>, std::string> predicates_; // member set -> condition
  std::map<std::vector<bool>, std::vector<std::string>> predicate_alternatives_;  // member set -> the others that fit
  PredicateOptions predicate_options_;                   // the grids the program made (grid_ndims)
  // whether the program made a 3-D grid (MPI_Dims_create or MPI_Cart_create with 3 dimensions): its
  // decomposition forms then take the 3-D sides first
  bool made_3d_grid() const {
    const auto& nd = predicate_options_.grid_ndims;
    return std::find(nd.begin(), nd.end(), 3) != nd.end();
  }
  // A program that computes MPI_Dims_create(P, 3)'s grid itself (no topology call traced: SimGrid TI traces of
  // NPB MG): grid3_seen_ when some peer has no expression but a neighbour on that grid; the program is then
  // emitted again with that grid first (prefer_grid3_), for every peer and size, since at P <= 16 the grid's
  // other axes (sides of 1 or 2) also fit shifts of the builder's own 2-D grid, which name other ranks at P = 64.
  bool grid3_seen_ = false;
  bool prefer_grid3_ = false;
  // prefer_grid3_: where that grid's sides are too short to tell +1 from -1, an MPI_Sendrecv's receive half goes
  // against its send half and its send against the last Sendrecv's send (as Topology::Shift on a traced grid)
  Topology::Shift grid_shift_ = Topology::Shift::any;
  std::optional<std::array<int, 3>> grid_last_, grid_last_send_;
  std::map<std::uint64_t, std::string> site_phase_;      // call site -> phase name
  std::string last_request_phase_;                       // phase of the last isend/irecv emitted
  bool fixed_params_ = false;                            // some fit met a parameter that never varied
  bool uses_untraced_ = false;  // some integer is written per traced run (per_run_int): let no_exact_expression
  bool uses_v2_ = false;                                 // a region or a compute distribution was written

  // The communication phase graph of every run (cpg.hpp), generalised: a phase is the same in two runs
  // when it has the same call points; its depth, width and overlapped computation are regressed over the
  // runs, its send and receive lists become conditions on rank.
  nlohmann::json build_phases() {
    struct Seen {
      const RunInfo* run;
      const Phase* phase;
      bool independent_next;
    };
    std::vector<PhaseGraph> graphs;
    graphs.reserve(runs_.size());
    for (const RunInfo& r : runs_) graphs.push_back(build_cpg(*r.run, r.ranks));
    std::map<std::string, std::vector<Seen>> by_key;
    std::vector<std::string> order;  // keys, in the order of the largest run, then the others
    std::map<std::string, std::vector<std::uint64_t>> key_sites;
    std::map<std::string, const Phase*> example;
    for (std::size_t ri = runs_.size(); ri-- > 0;) {
      const PhaseGraph& g = graphs[ri];
      for (const Phase& ph : g.phases) {
        std::vector<std::pair<int, std::uint64_t>> pts;
        for (int id : ph.send_points) pts.emplace_back(static_cast<int>(g.points[static_cast<std::size_t>(id)].kind), g.points[static_cast<std::size_t>(id)].site);
        for (int id : ph.recv_points) pts.emplace_back(static_cast<int>(g.points[static_cast<std::size_t>(id)].kind), g.points[static_cast<std::size_t>(id)].site);
        std::sort(pts.begin(), pts.end());
        pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
        std::string key;
        for (const auto& [k, site] : pts) key += std::to_string(k) + ":" + std::to_string(site) + ",";
        if (ph.type == PhaseType::COLLECTIVE) key += "c" + std::to_string(static_cast<int>(ph.collective));
        bool independent = false;
        for (const PhaseLink& l : g.order)
          if (l.from == ph.id) independent = l.independent;
        if (!by_key.count(key)) {
          order.push_back(key);
          example[key] = &ph;
          for (const auto& pt : pts) key_sites[key].push_back(pt.second);
        }
        by_key[key].push_back({&runs_[ri], &ph, independent});
      }
    }
    nlohmann::json out = nlohmann::json::array();
    std::map<std::string, int> counter;
    for (const std::string& key : order) {
      const std::vector<Seen>& seen = by_key[key];
      const Phase& ex = *example[key];
      bool pipeline = false;
      for (const Seen& x : seen) pipeline = pipeline || (x.phase->type_decided && x.phase->type == PhaseType::PIPELINE);
      std::string type = ex.type == PhaseType::COLLECTIVE ? "collective" : pipeline ? "pipeline" : "synchronous";
      std::string base = ex.type == PhaseType::COLLECTIVE ? std::string(trace::kind_name(ex.collective)).substr(4) : type;
      for (char& c : base) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const std::string name = base + "-" + std::to_string(++counter[base]);
      const std::string at = "/phases/" + std::to_string(out.size());
      nlohmann::json j = {{"name", name}, {"type", type}};
      if (ex.type == PhaseType::COLLECTIVE) j["collective"] = base;
      nlohmann::json fits = nlohmann::json::object();
      std::vector<Sample> depth, occ, overlap;
      for (const Seen& x : seen) {
        depth.push_back({x.run->vars, static_cast<double>(x.phase->depth), x.run->name});
        occ.push_back({x.run->vars, static_cast<double>(x.phase->occurrences), x.run->name});
        if (x.phase->overlap_s.n > 0) overlap.push_back({x.run->vars, x.phase->overlap_s.mean(), x.run->name});
      }
      if (ex.type != PhaseType::COLLECTIVE) j["depth"] = fit_int(depth, at, fits, "depth", false);
      j["occurrences"] = fit_int(occ, at, fits, "occurrences", false);
      if (!overlap.empty()) j["overlap_s"] = fit_real(overlap, at, fits, "overlap_s");
      // SL and RL as conditions on rank, over every run (absent: empty lists)
      for (const char* list : {"senders", "receivers"}) {
        std::vector<RunLabels> labels;
        for (const RunInfo& r : runs_) {
          RunLabels l;
          l.vars = r.vars;
          l.member.assign(static_cast<std::size_t>(r.P), false);
          for (const Seen& x : seen)
            if (x.run == &r)
              for (int rank : std::string(list) == "senders" ? x.phase->senders : x.phase->receivers)
                l.member[static_cast<std::size_t>(rank)] = true;
          labels.push_back(std::move(l));
        }
        const GroupPredicate g = find_group_predicate(labels, predicate_options_);
        if (g.found) {
          j[list] = g.text;
          if (!g.alternatives.empty())
            result.ambiguities.push_back(at + "/" + list + ": \"" + g.text + "\" fits every run, and so does \"" +
                                         g.alternatives.front().text + "\"");
        } else {
          result.warnings.push_back(at + "/" + list + ": no condition on rank describes the list in every run: " + g.message);
        }
      }
      j["independent_of_next"] = seen.front().independent_next;
      j["fit"] = fits;
      j["doc"] = std::to_string(seen.size()) + " of " + std::to_string(runs_.size()) + " runs have this phase";
      for (std::uint64_t site : key_sites[key])
        if (site != 0) site_phase_.emplace(site, name);
      out.push_back(std::move(j));
    }
    return out;
  }

  // The union program of the shapes `inputs`, its regions nested, as skeleton blocks.
  nlohmann::json emit_program(const std::vector<ShapeSeqs>& inputs, bool per_shape, bool& shared) {
    std::vector<std::vector<std::size_t>> run_of(shapes_.size());  // shape -> member -> run
    std::map<const RunInfo*, std::size_t> run_index;
    for (const RunInfo& r : runs_) run_index.emplace(&r, run_index.size());
    for (std::size_t sh = 0; sh < shapes_.size(); ++sh)
      for (std::size_t m : shapes_[sh]) run_of[sh].push_back(run_index.at(members_[m].run));
    std::vector<UNode> program = build_level(inputs, per_shape, shared, run_of, false, &neighbours.by_site);
    order_neighbour_lists(program);
    program = nest_regions(std::move(program), true);
    if (std::getenv("MKSKEL_DEBUG")) dump(program, 0);
    branches_.clear();
    nlohmann::json body = emit_list(program, std::vector<bool>(members_.size(), true), "/body");
    pair_receive_sizes(body);  // first: a send's branch and its receive's pair by equal sizes (pair_coins)
    pair_coins(body, "/body");
    draw_alike_where_sizes_vary(body, false);
    return body;
  }

  // A loop whose message sizes change from iteration to iteration by a pattern (sizes as statistics with a relative
  // spread of 0.25 or more, the same at every rank of a run: NPB MG's levels, a quarter of the face each) does
  // different work in each iteration too,
  // and every rank does it in the same order: the compute distributions of its body (outside inner loops) are drawn
  // alike on every rank (`"draw": "same"`). Drawn by each rank on its own, MG's smoothing (cv 1.2) made the slowest
  // of 64 ranks set the pace of every exchange: 46% of the replayed time was waiting, and the prediction twice
  // SMPI's. Noise (sizes that vary a few percent, as atoms move) keeps each rank's own draws.
  static constexpr double SIZE_PATTERN_CV = 0.25;
  static double size_pattern_cv(const nlohmann::json& list) {  // the largest size spread in list, inner loops apart
    double cv = 0;
    for (const nlohmann::json& b : list) {
      if (b.contains("fit") && b["fit"].is_object() && b["fit"].contains("size_per_iteration") &&
          b["fit"]["size_per_iteration"].value("alike_on_ranks", false))
        cv = std::max(cv, b["fit"]["size_per_iteration"].value("cv", 0.0));
      if (b.value("op", "") == "loop") continue;
      for (const char* arm : {"body", "then", "else"})
        if (b.contains(arm)) cv = std::max(cv, size_pattern_cv(b[arm]));
    }
    return cv;
  }
  static void draw_alike_where_sizes_vary(nlohmann::json& list, bool alike, double cv = 0) {
    for (nlohmann::json& b : list) {
      if (b.value("op", "") == "loop" && b.contains("body")) {
        const double inner = size_pattern_cv(b["body"]);
        draw_alike_where_sizes_vary(b["body"], inner >= SIZE_PATTERN_CV, inner);
        continue;
      }
      if (alike && b.value("op", "") == "compute" && b.contains("dist")) {
        b["dist"]["draw"] = "same";
        if (b.contains("fit") && b["fit"].contains("dist"))
          b["fit"]["dist"]["draw_same"] = "the loop's message sizes vary over its iterations by a pattern (relative spread " +
                                          fmt_number(cv) + "), alike at every rank";
      }
      for (const char* arm : {"body", "then", "else"})
        if (b.contains(arm)) draw_alike_where_sizes_vary(b[arm], alike, cv);
    }
  }

  // ---------------------------------------------------------------------------------------------------
  // Shared coins. A data-dependent branch that sends and one that receives the same messages (coin_ring:
  // rank r sends when its coin falls, rank r+1 receives when r's coin fell) would be drawn independently by
  // each replayed rank, and their messages would not pair. Siblings A (one send) and B (one receive, same tag
  // and size) whose counts agree rank by rank -- B at rank r ran as often as A at the rank B receives from,
  // and A's destination there is r, in every traced run -- get one coin: A tosses its own, B tosses the coin of
  // the rank it receives from (`coin_rank`), with A's probability at that rank.

  struct BranchRecord {
    std::map<std::pair<const RunInfo*, int>, double> taken;  // (run, rank) -> times the branch ran
    std::map<std::pair<const RunInfo*, int>, std::uint64_t> pattern;  // (run, rank) -> which iterations ran it (Loop::pattern)
    std::map<std::pair<const RunInfo*, int>, std::uint64_t> anti;     // (run, rank) -> which did not (Loop::anti)
    std::string warning;                                     // why replay pairs its messages in expectation only
  };
  std::vector<BranchRecord> branches_;
  int coins_ = 0;

  static const nlohmann::json* only_p2p(const nlohmann::json& then, bool sending) {
    const nlohmann::json* found = nullptr;
    for (const auto& b : then) {
      const std::string op = b.value("op", "");
      if (op == "send" || op == "isend" || op == "recv" || op == "irecv") {
        if (found || (op == "send" || op == "isend") != sending) return nullptr;
        found = &b;
      } else if (b.contains("then") || b.contains("body")) {
        return nullptr;
      }
    }
    if (found && (found->at("peer") == "any" || found->at("tag") == "any")) return nullptr;
    return found;
  }

  // The value of a skeleton expression of P, rank and the run's parameters; NaN when it uses anything else.
  double eval_at(const std::string& text, const RunInfo& run, int rank) const { return eval_at(text, run.P, run.vars, rank); }
  double eval_at(const std::string& text, int P, const Vars& vars, int rank) const {
    SymbolTable names;
    std::vector<double> frame;
    names.add("P");
    frame.push_back(P);
    names.add("rank");
    frame.push_back(rank);
    for (const auto& [k, v] : vars)
      if (k != "P" && k != "rank") {
        names.add(k);
        frame.push_back(v);
      }
    try {
      return parse_expr(text, names).eval(frame);
    } catch (const std::exception&) {
      return std::nan("");
    }
  }

  // The axis a point-to-point peer moves along by one step, for face_size: a Cartesian neighbour's
  // (cart_neighbour_side), else one of the builder's own power-of-two grid (GRID_PX x GRID_PY, found from who
  // talks to whom: a particle code's halo), when the peer is the next or previous rank along x (in its row,
  // periodic) or along y (rank + Px or rank - Px, periodic) at every rank of P = 64 and 128.
  std::pair<std::string, int> neighbour_side(const nlohmann::json& peer) const {
    if (!peer.is_string()) return {};
    const std::string text = peer.get<std::string>();
    std::pair<std::string, int> side = cart_neighbour_side(text, topo_->lets());
    if (!side.first.empty() || runs_.empty()) return side;
    bool x = true, y = true;
    for (const int P : {64, 128}) {
      int px = 1;
      while (px * px * 4 <= P) px *= 2;
      for (int r = 0; r < P && (x || y); ++r) {
        const double v = eval_at(text, P, runs_.front().vars, r);
        if (!(v >= 0 && v < P) || v != std::floor(v)) return {};
        const int q = static_cast<int>(v);
        const bool row = q / px == r / px;
        const int dx = (q % px - r % px + px) % px;
        x = x && row && (dx == 1 || dx == px - 1);
        const int dy = ((q - r) % P + P) % P;
        y = y && q % px == r % px && (dy == px || dy == P - px);
      }
    }
    if (x) return {GRID_PX, 2};
    if (y) return {GRID_PY, 2};
    return {};
  }

  static std::string expr_text(const nlohmann::json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

  bool same_messages(const BranchRecord& a, const nlohmann::json& send, const BranchRecord& b, const nlohmann::json& recv) const {
    if (send.at("tag") != recv.at("tag") || send.at("size") != recv.at("size")) return false;
    const std::string from = expr_text(recv.at("peer")), to = expr_text(send.at("peer"));
    std::map<const RunInfo*, bool> runs;
    for (const auto& [key, n] : b.taken) {
      const auto [run, r] = key;
      runs[run] = true;
      const double src = eval_at(from, *run, r);
      if (!(src >= 0 && src < run->P) || src != std::floor(src)) return false;
      const auto it = a.taken.find({run, static_cast<int>(src)});
      if (it == a.taken.end() || it->second != n || eval_at(to, *run, static_cast<int>(src)) != r) return false;
    }
    for (const auto& [key, n] : a.taken)  // every sending rank has its receiver among B's ranks
      if (n > 0 && !runs.count(key.first)) return false;
    return !b.taken.empty();
  }

  // A name in an expression replaced by a text (whole words only).
  static std::string replace_name(const std::string& text, const std::string& name, const std::string& with) {
    auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t e = i + name.size();
      if ((i == 0 || !word(text[i - 1])) && text.compare(i, name.size(), name) == 0 && (e >= text.size() || !word(text[e]))) {
        out += with;
        i = e;
      } else {
        out += text[i++];
      }
    }
    return out;
  }
  // `rank` in an expression replaced by another expression (whole words only).
  static std::string at_rank(const std::string& text, const std::string& rank) { return replace_name(text, "rank", "(" + rank + ")"); }

  // Receives whose sizes are statistics (sizes_are_statistics): a receive's mean and its sender's mean are
  // regressed apart, so at some rank the message would be larger than its receive (a truncation, which stops
  // the replay) although the program posts a buffer that holds it. Where one call site sends every message a
  // receive site takes (matched in the traces as MPI matches: per sender, communicator and tag, in order), the
  // receive takes its sender's size expression, evaluated at the rank it receives from: both ends then agree
  // at every P. Only for world ranks (a peer on a communicator is not a world rank) and sender expressions of
  // rank, P and the parameters alone.
  std::map<std::uint64_t, std::set<std::string>> send_sizes_;  // send site -> size texts written (JSON)
  /// (send site, tag text) -> size texts written (JSON): one site that sends with two tags (each direction of a
  /// particle migration from one loop over the two neighbours) pairs its receives by tag
  std::map<std::pair<std::uint64_t, std::string>, std::set<std::string>> send_sizes_by_tag_;
  std::pair<std::string, int> face_;  // while a p2p size is fitted: the side of its Cartesian axis and the grid's dimensions (face_size)

  std::map<std::uint64_t, std::uint64_t> receive_partners() const {
    std::map<std::uint64_t, std::uint64_t> partner;  // receive site -> send site (0: several)
    for (const RunInfo& ri : runs_) {
      std::map<std::tuple<int, int, std::uint32_t, int>, std::deque<std::uint64_t>> sent;  // (src, dst, comm, tag)
      for (const trace::RankTrace& t : ri.run->ranks)
        for (const trace::Event& e : t.events)
          if ((e.kind == Kind::SEND || e.kind == Kind::ISEND || e.kind == Kind::ISSEND || e.kind == Kind::SSEND ||
               e.kind == Kind::SENDRECV) && e.peer >= 0)
            sent[{t.rank, e.peer, e.comm, e.tag}].push_back(e.site);
      for (const trace::RankTrace& t : ri.run->ranks)
        for (std::size_t i = 0; i < t.events.size(); ++i) {
          const trace::Event& e = t.events[i];
          const trace::Event* m = nullptr;  // the record with the source and tag the receive took
          if (e.kind == Kind::RECV || e.kind == Kind::IRECV) m = &e;
          else if (e.kind == Kind::SENDRECV && i + 1 < t.events.size() && t.events[i + 1].kind == Kind::COMPLETE) m = &t.events[i + 1];
          if (!m || m->peer < 0) continue;
          auto q = sent.find({m->peer, t.rank, e.comm, m->tag});
          if (q == sent.end() || q->second.empty()) continue;
          const std::uint64_t from = q->second.front();
          q->second.pop_front();
          auto [it, fresh] = partner.emplace(e.site, from);
          if (!fresh && it->second != from) it->second = 0;
        }
    }
    return partner;
  }

  bool of_rank_p_params(const std::string& text) const {
    for (std::size_t i = 0; i < text.size();) {
      if (!(std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_')) {
        ++i;
        continue;
      }
      std::size_t e = i;
      while (e < text.size() && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_' || text[e] == '.')) ++e;
      const std::string id = text.substr(i, e - i);
      std::size_t k = e;
      while (k < text.size() && text[k] == ' ') ++k;
      const bool function = k < text.size() && text[k] == '(';
      const bool number = i > 0 && (std::isdigit(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '.');  // 1e-05
      if (!function && !number && id != "rank" && id != "P" && std::find(params_.begin(), params_.end(), id) == params_.end())
        return false;
      i = e;
    }
    return true;
  }

  void pair_receive_sizes(nlohmann::json& list) {
    std::optional<std::map<std::uint64_t, std::uint64_t>> partners;
    pair_receive_sizes(list, partners);
  }

  void pair_receive_sizes(nlohmann::json& list, std::optional<std::map<std::uint64_t, std::uint64_t>>& partners) {
    // sends of this list by site: a receive's partner is first looked for beside it (the same iteration of the
    // same loop), as the same site is often written in several places with sizes of their own
    std::map<std::uint64_t, std::vector<std::string>> here;
    for (const nlohmann::json& b : list)
      if (b.contains("_send_site")) here[b["_send_site"].get<std::uint64_t>()].push_back(expr_text(b["size"]));
    for (nlohmann::json& b : list) b.erase("_send_site");
    for (nlohmann::json& b : list) {
      for (const char* arm : {"body", "then", "else"})
        if (b.contains(arm)) pair_receive_sizes(b[arm], partners);
      if (!b.contains("_recv_site")) continue;
      const auto site = b["_recv_site"].get<std::uint64_t>();
      b.erase("_recv_site");
      if (!sizes_are_statistics || !b.contains("fit") || !b["fit"].contains("size") || !b["fit"]["size"].contains("guard") ||
          b.contains("comm") || b.value("peer", nlohmann::json()) == "any")
        continue;
      if (!partners) partners = receive_partners();
      auto p = partners->find(site);
      if (p == partners->end() || p->second == 0) continue;
      std::string text;
      if (auto h = here.find(p->second); h != here.end()) {
        if (h->second.size() != 1) continue;
        text = h->second.front();
      } else {
        const std::set<std::string>* sizes = nullptr;
        if (auto s = send_sizes_.find(p->second); s != send_sizes_.end()) sizes = &s->second;
        if (sizes && sizes->size() > 1 && b.contains("tag"))  // one site, one size per tag
          if (auto t = send_sizes_by_tag_.find({p->second, b["tag"].dump()}); t != send_sizes_by_tag_.end()) sizes = &t->second;
        if (!sizes || sizes->size() != 1) continue;
        text = expr_text(nlohmann::json::parse(*sizes->begin()));
      }
      if (!of_rank_p_params(text)) continue;
      b["size"] = at_rank(text, expr_text(b["peer"]));
      b["fit"]["size"]["paired"] = "the size its sender writes (" + text + "), at the rank it receives from";
    }
  }

  // Whether every rank of each run the branch was seen in reached it, some took it, and all in the same iterations.
  static bool taken_together(const BranchRecord& rec) {
    std::map<const RunInfo*, std::pair<int, std::uint64_t>> per_run;  // run -> ranks seen, their common pattern
    double taken = 0;
    for (const auto& [key, pat] : rec.pattern) {
      auto [it, fresh] = per_run.emplace(key.first, std::make_pair(0, pat));
      if (!fresh && it->second.second != pat) return false;
      ++it->second.first;
      taken += rec.taken.at(key);
    }
    for (const auto& [run, seen] : per_run)
      if (seen.first != run->P) return false;
    return !per_run.empty() && taken > 0;
  }

  void pair_coins(nlohmann::json& list, const std::string& where) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      nlohmann::json& b = list[i];
      for (const char* arm : {"body", "then", "else"})
        if (b.contains(arm)) pair_coins(b[arm], where + "/" + std::to_string(i) + "/" + arm);
    }
    // Two branches side by side, the second run by every rank in exactly the iterations the first skipped (a
    // rebuild step's exchanges, a plain step's forward communication): one if/else. Apart, each would toss a coin
    // of its own, and some replayed steps would run both or neither.
    for (std::size_t i = 0; i + 1 < list.size(); ++i) {
      nlohmann::json& A = list[i];
      const nlohmann::json& B = list[i + 1];
      if (!A.contains("_branch") || !B.contains("_branch") || A.contains("else")) continue;
      const BranchRecord& a = branches_[A["_branch"].get<std::size_t>()];
      const BranchRecord& b = branches_[B["_branch"].get<std::size_t>()];
      if (a.pattern.empty() || a.pattern.size() != b.anti.size() ||
          !std::equal(a.pattern.begin(), a.pattern.end(), b.anti.begin()))
        continue;
      A["else"] = B.at("then");
      A["fit"]["prob"]["else"] = "every rank ran the else part in exactly the iterations it did not run the then part (" +
                                 B.at("prob").get<std::string>() + " of them), in every traced run";
      list.erase(list.begin() + static_cast<std::ptrdiff_t>(i + 1));
    }
    std::vector<std::size_t> ifs;
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].contains("_branch")) ifs.push_back(i);
    std::set<std::size_t> paired;
    for (std::size_t ib : ifs) {
      nlohmann::json& B = list[ib];
      const nlohmann::json* recv = only_p2p(B.at("then"), false);
      if (!recv) continue;
      for (std::size_t ia : ifs) {
        nlohmann::json& A = list[ia];
        if (ia == ib || paired.count(ia)) continue;
        const nlohmann::json* send = only_p2p(A.at("then"), true);
        if (!send || !same_messages(branches_[A["_branch"].get<std::size_t>()], *send, branches_[B["_branch"].get<std::size_t>()], *recv))
          continue;
        const std::string coin = "coin" + std::to_string(++coins_), from = expr_text(recv->at("peer"));
        A["coin"] = coin;
        B["coin"] = coin;
        B["coin_rank"] = from;
        B["prob"] = at_rank(A.at("prob").get<std::string>(), from);
        B["fit"]["prob"]["coin"] = "the sender's toss: " + where + "/" + std::to_string(ia) + " at rank " + from;
        paired.insert(ia);
        paired.insert(ib);
        uses_v2_ = true;
        break;
      }
    }
    // A data-dependent branch that calls a collective on world: in the program every rank took it or none did
    // (a collective is called by all its members), so every rank tosses rank 0's coin, with rank 0's
    // probability. Drawn independently, the ranks would call different collectives and the replay would stop.
    for (std::size_t i : ifs) {
      nlohmann::json& B = list[i];
      if (paired.count(i) || !B.contains("then")) continue;
      int world = 0, other = 0;
      collectives_in(B.at("then"), world, other);
      if (world == 0 || other > 0 || has_p2p(B.at("then"))) continue;
      B["coin"] = "coin" + std::to_string(++coins_);
      B["coin_rank"] = "0";
      B["prob"] = at_rank(B.at("prob").get<std::string>(), "0");
      B["fit"]["prob"]["coin"] = "rank 0's toss, for every rank: the branch calls a collective on world";
      paired.insert(i);
      uses_v2_ = true;
    }
    // A branch that every rank of every traced run took in the same iterations (the same Loop::pattern), with the
    // iterations' parts in the same order: a decision the ranks make together (LAMMPS rebuilds its neighbour lists
    // when an allreduce says some atom moved far enough), so every rank tosses rank 0's coin. Drawn independently,
    // one rank would exchange atoms while its neighbour runs the plain step's communication.
    for (std::size_t i : ifs) {
      nlohmann::json& B = list[i];
      if (paired.count(i) || !B.contains("then")) continue;
      const BranchRecord& rec = branches_[B["_branch"].get<std::size_t>()];
      if (!taken_together(rec)) continue;
      B["coin"] = "coin" + std::to_string(++coins_);
      B["coin_rank"] = "0";
      B["prob"] = at_rank(B.at("prob").get<std::string>(), "0");
      B["draw"] = "even";  // a rate, spread over the steps: the traced runs' count of such steps, not a binomial one
      B["fit"]["prob"]["coin"] = "rank 0's toss, for every rank, drawn evenly: every rank of every traced run took the branch in "
                                 "the same iterations";
      paired.insert(i);
      uses_v2_ = true;
    }
    for (std::size_t i : ifs) {
      if (!paired.count(i)) {
        const std::string& w = branches_[list[i]["_branch"].get<std::size_t>()].warning;
        if (!w.empty()) result.warnings.push_back(w);
      }
      list[i].erase("_branch");
    }
  }

  void dump(const std::vector<UNode>& list, int depth) const {
    for (const UNode& u : list) {
      std::fprintf(stderr, "%*s%s key=%llx shapes:", depth * 2, "",
                   u.type == UNode::Type::CALL ? "call" : u.type == UNode::Type::LOOP ? "loop" : u.type == UNode::Type::REGION ? "region" : "tail",
                   static_cast<unsigned long long>(u.key));
      for (const Occ& o : u.occ) std::fprintf(stderr, " %zu", o.shape);
      if (u.type == UNode::Type::CALL) std::fprintf(stderr, " %s peer=%d", std::string(trace::kind_name(std::get<Call>(u.occ[0].nodes[0]->op).kind)).c_str(), std::get<Call>(u.occ[0].nodes[0]->op).peer);
      std::fprintf(stderr, "\n");
      dump(u.body, depth + 1);
    }
  }

  std::string name() const {
    if (!opt_.name.empty()) return opt_.name;
    const auto& cmd = runs_.front().run->command;
    return cmd.empty() ? "program" : std::filesystem::path(cmd.front()).filename().string();
  }

  std::string command_text() const {
    const auto& cmd = runs_.front().run->command;
    return cmd.empty() ? "a program" : std::filesystem::path(cmd.front()).filename().string();
  }

  std::string values_of(const std::string& p) const {
    std::set<double> v;
    for (const RunInfo& r : runs_) v.insert(r.vars.at(p));
    std::string s;
    for (double x : v) s += (s.empty() ? "" : ", ") + fmt_number(x);
    return s;
  }

  void collect_waited(const Seq& seq) {
    for (const Node& n : seq) {
      if (const auto* c = std::get_if<Call>(&n.op)) {
        if (c->kind == Kind::WAIT && c->waits_on != 0 && !request_names_.count(c->waits_on))
          request_names_.emplace(c->waits_on, "r" + std::to_string(request_names_.size()));
      } else if (const auto* l = std::get_if<Loop>(&n.op)) {
        collect_waited(l->body);
      }
    }
  }

  static bool is_marker(const UNode& u, Kind kind) {
    return u.type == UNode::Type::CALL && !u.occ.empty() && std::get<Call>(u.occ.front().nodes.front()->op).kind == kind;
  }

  // The annotation name of a marker node (the trace's name table of each member), or "" when its members
  // disagree (a name built at run time).
  std::string marker_name(const UNode& u) const {
    std::string name;
    bool first = true;
    for (const Occ& o : u.occ)
      for (std::size_t k = 0; k < o.nodes.size(); ++k) {
        const Member& m = members_[shapes_[o.shape][k]];
        const auto& names = m.run->run->ranks[static_cast<std::size_t>(m.rank)].names;
        const std::int32_t id = std::get<Call>(o.nodes[k]->op).tag;
        const std::string here = id >= 0 && static_cast<std::size_t>(id) < names.size() ? names[static_cast<std::size_t>(id)] : "";
        if (first) name = here;
        else if (here != name) return "";
        first = false;
      }
    return name;
  }

  static bool subset(const std::vector<bool>& a, const std::vector<bool>& b) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] && !b[i]) return false;
    return true;
  }

  // The region markers of mktrace.h (REGION_BEGIN/END calls) of one level of the union program become
  // REGION nodes (the APT's ROUTINE nodes): the nodes between a begin and its end are the region's body, the
  // compute before the end its tail. Folding keeps regions whole inside loop bodies, so a begin and its end
  // are on one level. A pair is kept when both markers carry one name and run on the same ranks, and every
  // node between them runs only on those ranks (else ranks that skip the region would skip those nodes
  // too); otherwise its markers stay as they are (they emit no block) and a warning says why. At the
  // program's level, a region still open at the end (one around MPI_Finalize) runs to the end.
  std::vector<UNode> nest_regions(std::vector<UNode> level, bool outermost) {
    for (UNode& u : level)
      if (u.type == UNode::Type::LOOP) u.body = nest_regions(std::move(u.body), false);
    constexpr std::size_t OPEN = SIZE_MAX;
    const std::size_t last = !level.empty() && level.back().type == UNode::Type::TAIL ? level.size() - 1 : level.size();
    std::vector<std::size_t> end(level.size(), 0);  // for a begin that makes a region: its end marker, or OPEN
    std::vector<bool> region(level.size(), false);
    std::vector<std::size_t> open;
    std::vector<std::pair<std::size_t, std::size_t>> pairs;
    for (std::size_t i = 0; i < last; ++i) {
      if (is_marker(level[i], Kind::REGION_BEGIN)) {
        open.push_back(i);
      } else if (is_marker(level[i], Kind::REGION_END)) {
        if (open.empty()) {
          result.warnings.push_back("region \"" + marker_name(level[i]) + "\": an end without a begin in the same block; not written as a region");
          continue;
        }
        pairs.emplace_back(open.back(), i);
        open.pop_back();
      }
    }
    for (std::size_t b : open) {
      if (outermost) pairs.emplace_back(b, OPEN);
      else result.warnings.push_back("region \"" + marker_name(level[b]) + "\": a begin without an end in the same block; not written as a region");
    }
    for (const auto& [b, e] : pairs) {
      const std::string name = marker_name(level[b]);
      const std::vector<bool> members = members_of(level[b]);
      std::string why;
      if (name.empty()) why = "its ranks give it different names";
      else if (e != OPEN && marker_name(level[e]) != name) why = "it ends as \"" + marker_name(level[e]) + "\"";
      else if (e != OPEN && members_of(level[e]) != members) why = "some ranks begin it and others end it";
      for (std::size_t i = b + 1; why.empty() && i < (e == OPEN ? last : e); ++i)
        if (!subset(members_of(level[i]), members)) why = "ranks that do not run the region run calls inside it (the runs' structures differ there)";
      if (!why.empty()) {
        result.warnings.push_back("region \"" + (name.empty() ? marker_name(level[b]) : name) + "\" is not written as a region: " + why);
        continue;
      }
      region[b] = true;
      end[b] = e;
    }
    std::vector<UNode> out = nest_range(level, 0, last, region, end);
    if (last < level.size()) out.push_back(std::move(level[last]));
    return out;
  }

  // level[from, to) with its kept regions nested (see nest_regions).
  std::vector<UNode> nest_range(std::vector<UNode>& level, std::size_t from, std::size_t to, const std::vector<bool>& region,
                                const std::vector<std::size_t>& end) {
    std::vector<UNode> out;
    std::size_t i = from;
    while (i < to) {
      if (!region[i]) {
        out.push_back(std::move(level[i++]));
        continue;
      }
      const bool open = end[i] == SIZE_MAX;
      const std::size_t stop = open ? to : end[i];
      UNode r;
      r.type = UNode::Type::REGION;
      r.name = marker_name(level[i]);
      r.occ = std::move(level[i].occ);
      r.body = nest_range(level, i + 1, stop, region, end);
      if (!open) {
        UNode tail;  // the compute between the region's last call and its end
        tail.type = UNode::Type::TAIL;
        tail.occ = std::move(level[stop].occ);
        r.body.push_back(std::move(tail));
      }
      out.push_back(std::move(r));
      i = open ? stop : stop + 1;
    }
    return out;
  }

  // The members (global indices) that run a union node.
  std::vector<bool> members_of(const UNode& u) const {
    std::vector<bool> in(members_.size(), false);
    for (const Occ& o : u.occ)
      for (std::size_t m : shapes_[o.shape]) in[m] = true;
    return in;
  }

  // ---------------------------------------------------------------------------------------------------
  // Neighbour lists (neighbours.hpp): the calls of a list carry their offset in their call site (waits, in
  // the site of the request they complete); each offset's calls are guarded by "the neighbour exists" and
  // talk to it, and the offsets of one list keep the list's order.
  std::vector<const NeighbourTag*> neighbour_hints_;  // the tags of the nodes of the `if` being written

  const NeighbourTag* neighbour_tag(const UNode& u) const {
    if (u.type != UNode::Type::CALL || u.occ.empty() || u.occ.front().nodes.empty() || neighbours.by_site.empty()) return nullptr;
    const Call& c = std::get<Call>(u.occ.front().nodes.front()->op);
    auto it = neighbours.by_site.find(c.kind == Kind::WAIT ? c.waits_on : c.site);
    return it == neighbours.by_site.end() ? nullptr : &it->second;
  }

  // stable order of each run of consecutive nodes of one list by the list's order of offsets: the traced
  // ranks alone may never run two offsets together (a side of 2 has no rank with both neighbours)
  void order_neighbour_lists(std::vector<UNode>& level) const {
    for (UNode& u : level) order_neighbour_lists(u.body);
    std::size_t i = 0;
    while (i < level.size()) {
      const NeighbourTag* t = neighbour_tag(level[i]);
      if (!t) {
        ++i;
        continue;
      }
      const Kind kind = std::get<Call>(level[i].occ.front().nodes.front()->op).kind;
      std::size_t j = i + 1;
      while (j < level.size()) {
        const NeighbourTag* o = neighbour_tag(level[j]);
        if (!o || o->base_site != t->base_site || std::get<Call>(level[j].occ.front().nodes.front()->op).kind != kind) break;
        ++j;
      }
      std::stable_sort(level.begin() + static_cast<long>(i), level.begin() + static_cast<long>(j),
                       [&](const UNode& a, const UNode& b) { return neighbour_tag(a)->order < neighbour_tag(b)->order; });
      i = j;
    }
  }

  // "the neighbour at the offset exists" when it holds exactly for `in` in every run, for one of the hints
  std::string neighbour_condition_of(const std::vector<bool>& in) const {
    if (neighbour_hints_.empty()) return "";
    const std::vector<RunLabels> labels = labels_of(in);
    for (const NeighbourTag* t : neighbour_hints_) {
      bool all = true;
      for (std::size_t r = 0; r < runs_.size() && all; ++r)
        for (int rank = 0; rank < runs_[r].P && all; ++rank)
          all = (neighbour_rank(*t, runs_[r].P, rank) >= 0) == static_cast<bool>(labels[r].member[static_cast<std::size_t>(rank)]);
      if (all) return neighbour_condition(*t);
    }
    return "";
  }

  // the neighbour as peer when it is every occurrence's peer
  std::string neighbour_peer_of(const UNode& u) const {
    const NeighbourTag* t = neighbour_tag(u);
    if (!t) return "";
    for (const Occ& o : u.occ)
      for (std::size_t k = 0; k < o.nodes.size(); ++k) {
        const Member& m = members_[shapes_[o.shape][k]];
        const Call& c = std::get<Call>(o.nodes[k]->op);
        if (neighbour_rank(*t, m.run->P, m.rank) != c.peer) return "";
        // on a communicator (a Cartesian grid made without reordering), its ranks must be world's
        if (c.comm != 0 && (topo_->to_comm_rank(trun(m), m.rank, c.comm, m.rank) != m.rank ||
                            topo_->to_comm_rank(trun(m), m.rank, c.comm, c.peer) != c.peer))
          return "";
      }
    return neighbour_peer(*t);
  }

  // Which ranks of each run are in the member set `in`, for the predicate search.
  std::vector<RunLabels> labels_of(const std::vector<bool>& in) const {
    std::vector<RunLabels> labels;
    std::map<const RunInfo*, std::size_t> index;
    for (const RunInfo& r : runs_) {
      RunLabels l;
      l.vars = r.vars;
      l.member.assign(static_cast<std::size_t>(r.P), false);
      index[&r] = labels.size();
      labels.push_back(std::move(l));
    }
    for (std::size_t m = 0; m < members_.size(); ++m)
      if (in[m]) labels[index[members_[m].run]].member[static_cast<std::size_t>(members_[m].rank)] = true;
    return labels;
  }

  // The condition that is true exactly on `in` in every run.
  std::string condition(const std::vector<bool>& in, const std::string& where) {
    if (const std::string nb = neighbour_condition_of(in); !nb.empty()) return nb;
    if (auto it = predicates_.find(in); it != predicates_.end()) return it->second;
    const std::vector<RunLabels> labels = labels_of(in);
    GroupPredicate g = find_group_predicate(labels, predicate_options_);
    if (!g.found) {
      std::string per_run;
      for (std::size_t i = 0; i < runs_.size(); ++i)
        per_run += "\n  " + runs_[i].name + " (" + describe_vars(runs_[i].vars) + "): ranks " + describe_ranks(labels[i].member);
      // data, not rank (issue 17): a part that some ranks skip for reasons of data (no particle crossed a face
      // in one step, so one rank's loop folded differently) is a probability, not a refusal; see emit_list
      if (allow_prob_sets_) {
        result.warnings.push_back(where + ": the ranks that run this part follow no condition on rank (" + g.message +
                                  "); written as a probability over ranks (data-dependent)" + per_run);
        return "";
      }
      throw BuildError(where + ": the ranks that run this part of the program follow no condition on rank that holds in every run: " +
                       g.message + per_run +
                       "\nThe runs' structures disagree; trace more runs at the P where this happens, or annotate "
                       "loops with mktrace.h so that their structure is the same at every P.");
    }
    if (!g.alternatives.empty()) {
      std::string alts;
      for (const auto& a : g.alternatives) alts += (alts.empty() ? "" : ", ") + a.text;
      std::string at;
      for (const Vars& v : g.resolve_runs) at += (at.empty() ? "" : "; ") + describe_vars(v);
      if (at.empty()) at = g.resolve_at ? describe_vars(*g.resolve_at) : std::string("an unseen P");
      result.ambiguities.push_back(where + "/cond: \"" + g.text + "\" fits every run, and so do " + alts +
                                   "; runs at " + at + " would tell them apart");
    }
    predicates_.emplace(in, g.text);
    std::vector<std::string> alts;
    for (const auto& a : g.alternatives) alts.push_back(a.text);
    predicate_alternatives_.emplace(in, std::move(alts));
    return g.text;
  }

  // Whether the conditions `a` and `b` hold together at some rank of some run at P = 2, 4, .., 1024 or a traced P,
  // with each traced parameter set.
  bool overlap_somewhere(const std::string& a, const std::string& b) const {
    std::set<std::pair<double, Vars>> probes;
    for (const RunInfo& r : runs_) {
      Vars v = r.vars;
      std::set<double> ps{static_cast<double>(r.P)};
      for (int e = 1; e <= COUNT_CHECK_MAX_LOG2_P; ++e) ps.insert(std::ldexp(1.0, e));
      for (double P : ps) {
        v["P"] = P;
        probes.emplace(P, v);
      }
    }
    for (const auto& [P, v] : probes) {
      try {
        const std::vector<bool> x = predicate_members(a, v), y = predicate_members(b, v);
        for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
          if (x[i] && y[i]) return true;
      } catch (const std::exception&) {
        return true;
      }
    }
    return false;
  }

  // Sibling parts that no traced rank runs both of (the first swaps of LAMMPS' forward communication go along x
  // where the grid has two ranks along x, else along y, else along z) keep apart at every P: when the condition
  // found for `here` holds together with an earlier sibling's somewhere, an alternative that fits the traced runs as
  // well and keeps apart from every such sibling is taken (at P = 2, 4, 8 "dims(P, 2, 0) == dims(P, 2, 1)" and
  // "P == 4" both say "y first", but the first holds at P = 16 too, where the x swaps run).
  // Only parts run by all of a run's ranks or none of them (whole runs: which version of the program runs) are
  // kept apart. Parts that run on some ranks of a run are kept as found: on a non-periodic grid whose sides are 1 or
  // 2 ranks, "has a lower neighbour" and "has an upper neighbour" never hold together, but at a side of 3 the middle
  // ranks have both (tests/nblist_app.c at P = 27).
  std::string apart_from_siblings(const std::string& cond, const std::vector<bool>& here, const std::vector<bool>& context,
                                  const std::vector<std::pair<std::vector<bool>, std::string>>& siblings, const std::string& at) {
    auto whole_runs = [&](const std::vector<bool>& mask) {
      std::map<const RunInfo*, std::pair<bool, bool>> in_out;  // per run: some member in the mask, some out of it
      for (std::size_t m = 0; m < mask.size() && m < context.size(); ++m)
        if (context[m]) (mask[m] ? in_out[members_[m].run].first : in_out[members_[m].run].second) = true;
      for (const auto& [run, io] : in_out)
        if (io.first && io.second) return false;
      return true;
    };
    if (!whole_runs(here)) return cond;
    std::vector<const std::string*> apart;
    for (const auto& [mask, c] : siblings) {
      if (!whole_runs(mask)) continue;
      bool disjoint = true;
      for (std::size_t m = 0; m < mask.size() && disjoint; ++m) disjoint = !(mask[m] && here[m]);
      if (disjoint) apart.push_back(&c);
    }
    auto keeps_apart = [&](const std::string& t) {
      for (const std::string* c : apart)
        if (overlap_somewhere(t, *c)) return false;
      return true;
    };
    if (apart.empty() || keeps_apart(cond)) return cond;
    auto it = predicate_alternatives_.find(here);
    if (it != predicate_alternatives_.end())
      for (const std::string& alt : it->second)
        if (keeps_apart(alt)) {
          result.ambiguities.push_back(at + "/cond: \"" + alt + "\" taken for \"" + cond + "\", which holds at some P together with the " +
                                       "condition of an earlier part that no traced rank runs with this one");
          return alt;
        }
    return cond;
  }

  // The ambiguity of a fit, without the remark that a parameter never varied: that holds for every
  // quantity alike, so build() reports it once (fixed_params_).
  void note_ambiguity(const std::string& where, const Fit& f) {
    if (f.ambiguity.empty()) return;
    std::string kept, part;
    std::string text = f.ambiguity, sep = "; ";
    std::size_t from = 0;
    while (from <= text.size()) {
      std::size_t to = text.find(sep, from);
      part = text.substr(from, to == std::string::npos ? std::string::npos : to - from);
      if (part.find(" in every run, so the expression cannot depend on ") != std::string::npos)
        fixed_params_ = true;
      else if (!part.empty())
        kept += (kept.empty() ? "" : sep) + part;
      if (to == std::string::npos) break;
      from = to + sep.size();
    }
    if (!kept.empty()) result.ambiguities.push_back(where + ": " + kept);
  }

  // A mean message size (sizes as statistics) to a Cartesian neighbour along one axis (face_, set from the call's
  // peer): the face of the block along that axis (face_fit) when it fits the runs about as well as the regression
  // `reg` (largest relative error at most FACE_SLACK more), which a regression over the runs of one P cannot scale.
  // The guarded face expression, or "" to keep the regression. `rejected`: an exact polynomial refused before.
  static constexpr double FACE_SLACK = 0.05;
  std::string face_size(const std::vector<Sample>& samples, const std::string& where, nlohmann::json& fits, const Fit& reg,
                        const std::string& rejected) {
    if (face_.first.empty()) return "";
    const std::optional<FaceFit> ff = face_fit(samples, params_, face_.first, face_.second);
    if (!ff || ff->max_rel_error > reg.max_rel_error + FACE_SLACK) return "";
    const std::string guarded = integer_guard(ff->expr, "size");
    result.warnings.push_back(where + "/size: no exact expression fits every run (sizes as statistics); using the face of a block of the " +
                              std::to_string(face_.second) + "-D grid along the axis of side " + face_.first + ", \"" + guarded +
                              "\" (largest relative error " + fmt_number(ff->max_rel_error) + "; the regression \"" + reg.expr + "\": " +
                              fmt_number(reg.max_rel_error) + ")");
    fits["size"] = {{"expr", ff->expr}, {"form", "face"}, {"side", face_.first}, {"max_rel_error", ff->max_rel_error}, {"guard", guarded},
                    {"regression", reg.expr}, {"regression_max_rel_error", reg.max_rel_error}, {"regression_cv_rel_error", reg.cv_rel_error}};
    if (!rejected.empty()) fits["size"]["rejected"] = rejected;
    return guarded;
  }

  // The samples of a quantity in the innermost loop around it times that loop's count at each (run, rank): the
  // quantity of one execution of the loop. False when the count does not change from run to run, or is unknown or 0.
  bool per_execution_totals(const std::vector<Sample>& samples, std::vector<Sample>& total, std::vector<double>& count) const {
    if (loop_counts_.empty() || !loop_counts_.back().varies) return false;
    const LoopCounts& lc = loop_counts_.back();
    total = samples;
    count.clear();
    for (Sample& x : total) {
      auto it = lc.count.find({x.run, x.vars.at("rank")});
      if (it == lc.count.end() || !(it->second > 0)) return false;
      count.push_back(it->second);
      x.value *= it->second;
    }
    return true;
  }
  // The mean relative error of `text` (divided by the count with `divided`) against the samples, each relative to
  // max(value, floor).
  double mean_rel_error(const std::string& text, const std::vector<Sample>& samples, const std::vector<double>& count, bool divided,
                        double floor) const {
    const std::optional<Feature> f = feature_of(text);
    if (!f) return static_cast<double>(INFINITY);
    double e = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const double v = f->eval(samples[i].vars) / (divided ? count[i] : 1.0);
      e += std::fabs(v - samples[i].value) / std::max(samples[i].value, floor);
    }
    return e / static_cast<double>(samples.size());
  }

  // A mean message size (sizes as statistics) in a loop whose count changes from run to run, when the bytes of one
  // execution of the loop predict the runs clearly better (as fit_loop_gap for compute): NPB MG's comm3 loop, a face
  // a quarter of the one above per level, has a mean per iteration that falls as levels are added (18% off at the
  // traced runs), while one execution's bytes follow the finest face. Each call's size is then those bytes divided by
  // the loop's count, rounded. "" to fit the mean per iteration as before.
  std::string size_per_execution(const std::vector<Sample>& samples, const std::string& where, nlohmann::json& fits) {
    std::vector<Sample> total;
    std::vector<double> count;
    if (!per_execution_totals(samples, total, count)) return "";
    FitOptions fo;
    fo.integer = false;
    // the best of the regression and the face of the block (face_size), per iteration and per execution
    auto best = [&](const std::vector<Sample>& smp) -> std::string {
      const Fit f = fit_quantity(smp, params_, fo);
      if (!face_.first.empty())
        if (const std::optional<FaceFit> ff = face_fit(smp, params_, face_.first, face_.second); ff && ff->max_rel_error <= f.max_rel_error + FACE_SLACK)
          return ff->expr;
      return f.expr;
    };
    const std::string per = best(samples), all = best(total);
    const double e_per = mean_rel_error(per, samples, count, false, 1.0), e_all = mean_rel_error(all, samples, count, true, 1.0);
    if (!(e_per > PER_EXECUTION_MIN_ERROR && e_all < 0.5 * e_per)) return "";
    loop_counts_.back().used = true;
    const std::string guarded = "max(0, floor((" + all + ")/(" + COUNT_PLACEHOLDER + ") + 0.5))";
    result.warnings.push_back(where + "/size: no exact expression fits every run (sizes as statistics); using the bytes of one execution of "
                              "its loop, \"" + all + "\", divided by the loop's count (mean relative error " + fmt_number(e_all) +
                              "; per iteration \"" + per + "\": " + fmt_number(e_per) + ")");
    fits["size"] = {{"expr", all}, {"guard", guarded},
                    {"per_execution", {{"mean_rel_error", e_all}, {"per_iteration", per}, {"per_iteration_mean_rel_error", e_per}}}};
    return guarded;
  }

  // Fits one integer quantity (counts, sizes, peers, tags, roots); returns its expression text.
  static std::string integer_guard(const std::string& expr, const std::string& field) {
    const std::string rounded = "floor(" + expr + " + 0.5)";
    if (field == "peer" || field == "root") return "min(P - 1, max(0, " + rounded + "))";
    return "max(0, " + rounded + ")";
  }

  // The P at which a count is checked: a count must be a non-negative integer at every P = 2^k from the
  // smallest traced P up to 1024 (the corpus' predictions reach 1,024 ranks), each parameter at its largest
  // traced value (mksim refuses any other count there).
  static constexpr int COUNT_CHECK_MAX_LOG2_P = 10;
  // P, rank and the parameters: the variables of a feature or condition over the traced ranks
  std::vector<std::string> variable_names() const {
    std::vector<std::string> names{"P", "rank"};
    names.insert(names.end(), params_.begin(), params_.end());
    return names;
  }

  // `text` as a feature over P, rank and the parameters; empty when it does not parse
  std::optional<Feature> feature_of(const std::string& text) const {
    try {
      return Feature(text, variable_names(), false);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  // The first P (with a traced run's parameters) where `text` is not a non-negative integer, "" when none.
  // With every_run, each traced run's parameters instead (stricter: prefers, among log2 forms, the one that holds
  // for the small sizes too).
  std::string count_outside_domain(const std::string& text, const std::vector<Sample>& samples, bool every_run = false,
                                   bool integral = true) const {
    const std::optional<Feature> f = feature_of(text);
    if (!f) return "(unreadable)";
    // each parameter at its largest traced value: the smallest traced sizes need not be a valid run at
    // 1,024 ranks (NPB MG's N = 32 leaves 2 points per rank there), the largest are the likeliest to be
    double min_p = 0;
    Vars v;
    for (const Sample& x : samples) {
      min_p = min_p == 0 ? x.vars.at("P") : std::min(min_p, x.vars.at("P"));
      for (const std::string& p : params_)
        if (auto it = x.vars.find(p); it != x.vars.end()) v[p] = v.count(p) ? std::max(v[p], it->second) : it->second;
    }
    std::set<Vars> sets{v};
    if (every_run)
      for (const Sample& x : samples) {
        Vars u;
        for (const std::string& p : params_)
          if (auto it = x.vars.find(p); it != x.vars.end()) u[p] = it->second;
        sets.insert(u);
      }
    for (Vars u : sets)
      for (int k = 0; k <= COUNT_CHECK_MAX_LOG2_P; ++k) {
        u["P"] = std::ldexp(1.0, k);
        if (u["P"] < min_p) continue;
        for (const double r : {0.0, u["P"] - 1}) {
          Vars w = u;
          w["rank"] = r;
          const double c = f->eval(w);
          if (!std::isfinite(c) || c < -1e-9 || (integral && std::fabs(c - std::round(c)) > 1e-9))
            return describe_vars(w) + " (" + fmt_number(c) + ")";
        }
      }
    return "";
  }

  // A count that is the logarithm of a size (multigrid levels: log2 of the smallest local side
  // N / dims(P, 3, 0)): a*log2(X) + c, X a decomposition form (decomposition_fit) of 2^((count - c)/a), c in -3..3,
  // a up to max_per_level (calls per level); "" when none fits every sample and stays a non-negative integer at
  // every checked P.
  std::string log_count_fit(const std::vector<Sample>& samples, int max_per_level = 1) const {
    for (int a = 1; a <= max_per_level; ++a)  // a calls per level: MG's comm3 once down and twice up each level
    for (const bool every_run : {true, false})
    for (const int c : {0, -1, 1, -2, 2, -3, 3}) {
      std::vector<Sample> pow2 = samples;
      bool ok = true;
      std::set<long> levels;
      for (Sample& x : pow2) {
        const long k = std::lround(x.value) - c;
        ok = ok && k >= 0 && k % a == 0;
        x.value = std::ldexp(1.0, static_cast<int>(k / a));
        levels.insert(k / a);
      }
      // a multiple of the levels needs three level counts to show (two fit any: SUMMA's 8, 4 panels per owner at
      // P = 4, 8 are not 4*log2(ceil(nb / dims(P, 2, 0))))
      if (!ok || (a > 1 && levels.size() < 3)) continue;
      auto text_of = [a, c](const std::string& d) {
        return (a > 1 ? std::to_string(a) + "*" : std::string()) + "log2(" + d + ")" +
               (c > 0 ? " + " + std::to_string(c) : c < 0 ? " - " + std::to_string(-c) : "");
      };
      const std::string d = decomposition_fit(pow2, params_, [&](const std::string& x) { return count_outside_domain(text_of(x), samples, every_run).empty(); },
                                              made_3d_grid());
      if (!d.empty()) return text_of(d);
    }
    return "";
  }

  // A count or size cut by another quantity: min(f, g) or max(f, g), g one of the parameters, P or P-1 and f an
  // exact expression of the runs where the quantity is not g (a master's first round, min(2*(P-1), tasks), when
  // some traced run has fewer tasks than 2 (P - 1)); each side from two traced runs or more. "" when none
  // reproduces every sample.
  std::string min_max_fit(const std::vector<Sample>& samples, bool allow_rank) const {
    std::vector<std::string> names = variable_names();
    std::vector<std::string> cuts = params_;
    cuts.push_back("P");
    cuts.push_back("P-1");
    auto runs = [](const std::vector<Sample>& v) {
      std::set<std::string> r;
      for (const Sample& x : v) r.insert(x.run);
      return r.size();
    };
    for (const std::string& cut : cuts) {
      const Feature g(cut, names, true);
      std::vector<Sample> at_cut, rest;
      for (const Sample& x : samples) (g.eval(x.vars) == x.value ? at_cut : rest).push_back(x);
      if (runs(at_cut) < 2 || runs(rest) < 2) continue;
      FitOptions fo;
      fo.integer = true;
      fo.allow_rank = allow_rank;
      const Fit f = fit_quantity(rest, params_, fo);
      if (!f.exact || has_decimal_literal(f.expr)) continue;
      const std::optional<Feature> fe = feature_of(f.expr);
      if (!fe) continue;
      bool above = true, below = true;  // f >= the quantity where it is g (min), or f <= it (max)
      for (const Sample& x : at_cut) {
        const double v = fe->eval(x.vars);
        above = above && v >= x.value;
        below = below && v <= x.value;
      }
      if (!above && !below) continue;
      const std::string text = std::string(above ? "min(" : "max(") + f.expr + ", " + cut + ")";
      const Feature h(text, names, false);
      bool all = true;
      for (const Sample& x : samples) all = all && h.eval(x.vars) == x.value;
      if (all) return text;
    }
    return "";
  }

  std::string fit_int(const std::vector<Sample>& samples, const std::string& where, nlohmann::json& fits,
                      const char* field, bool allow_rank) {
    bool all_same = true;
    for (const Sample& s : samples) all_same = all_same && s.value == samples.front().value;
    if (all_same) return fmt_number(samples.front().value);
    if (prefer_grid3_ && allow_rank && std::string(field) == "peer") {
      std::optional<std::array<int, 3>> against;
      if (grid_shift_ == Topology::Shift::against_last) against = grid_last_;
      else if (grid_shift_ == Topology::Shift::against_last_send) against = grid_last_send_;
      if (against)
        for (int& o : *against) o = -o;
      std::array<int, 3> off{};
      std::string other, g = grid_rank_fit(samples, params_, &other, true, against ? &*against : nullptr, &off);
      if (!g.empty()) {
        grid_last_ = off;
        if (grid_shift_ == Topology::Shift::against_last_send) grid_last_send_ = off;
        fits[field] = {{"expr", g}, {"form", "grid"}};
        if (!other.empty())
          result.ambiguities.push_back(where + "/" + field + ": \"" + g + "\" fits every run, and so does \"" + other +
                                       "\" (another grid); a run at another P would tell them apart");
        return g;
      }
    }
    FitOptions fo;
    fo.integer = true;
    fo.allow_rank = allow_rank;
    Fit f = fit_quantity(samples, params_, fo);
    if (!f.exact || has_decimal_literal(f.expr)) {
      // a size or count of a decomposition (N^3/(P*dims(P, 2, 1)), N/sqrt(P)): exact, never negative
      if (const std::string d = decomposition_fit(samples, params_, {}, made_3d_grid()); !d.empty()) {
        fits[field] = {{"expr", d}, {"form", "decomposition"}};
        return d;
      }
      if (std::string(field) == "count")
        if (const std::string l = log_count_fit(samples); !l.empty()) {
          fits[field] = {{"expr", l}, {"form", "log"}};
          return l;
        }
      if (std::string(field) == "count" || std::string(field) == "size")
        if (const std::string m = min_max_fit(samples, allow_rank); !m.empty()) {
          fits[field] = {{"expr", m}, {"form", "cut"}};
          return m;
        }
      // Sizes folded as statistics (iterations that differ by data, vary.hpp) are means, not a program's exact
      // integers: they are regressed, and the domain guard holds the model at every P (never below 0). Every
      // other integer (peers, roots, tags, sizes the program computes) is written per traced run and refused
      // elsewhere (per_run_int): a least-squares polynomial of a rank is never a peer.
      const std::string fname = field;
      // a neighbour or transpose partner on a grid the program computes itself (no topology call traced)
      if (fname == "peer" && allow_rank)
        if (std::string other, g = grid_rank_fit(samples, params_, &other); !g.empty()) {
          grid3_seen_ = grid3_seen_ || g.rfind("cart_rank(", 0) == 0;
          fits[field] = {{"expr", g}, {"form", "grid"}};
          if (!other.empty())
            result.ambiguities.push_back(where + "/" + field + ": \"" + g + "\" fits every run, and so does \"" + other +
                                         "\" (another grid); a run at another P would tell them apart");
          return g;
        }
      if (sizes_are_statistics && fname != "peer" && fname != "root" && fname != "tag") {
        if (fname == "size")
          if (std::string t = size_per_execution(samples, where, fits); !t.empty()) return t;
        fo.integer = false;
        f = fit_quantity(samples, params_, fo);
        if (fname == "size")
          if (std::string g = face_size(samples, where, fits, f, ""); !g.empty()) return g;
        const std::string guarded = integer_guard(f.expr, field);
        result.warnings.push_back(where + "/" + field + ": no exact expression fits every run (sizes as statistics); using \"" +
                                  guarded + "\" (largest relative error " + fmt_number(f.max_rel_error) + ")");
        fits[field] = {{"expr", f.expr}, {"max_rel_error", f.max_rel_error}, {"cv_rel_error", f.cv_rel_error},
                       {"guard", guarded}};
        note_ambiguity(where + "/" + field, f);
        return guarded;
      }
      return per_run_int(samples, where, fits, field, allow_rank);
    }
    // a mean size (sizes as statistics) that an exact polynomial of the traced runs' means takes below 0 at a
    // larger P (MG's face sizes, "208*N + 288 - 2176*2^floor(log2(P)/2)"): regressed and guarded, as when no
    // exact form fits
    if (sizes_are_statistics && std::string(field) == "size")
      if (const std::string bad = count_outside_domain(f.expr, samples, false, false); !bad.empty()) {
        fo.integer = false;
        const Fit g = fit_quantity(samples, params_, fo);
        if (std::string h = face_size(samples, where, fits, g, f.expr); !h.empty()) return h;
        const std::string guarded = integer_guard(g.expr, field);
        result.warnings.push_back(where + "/" + field + ": \"" + f.expr + "\" fits every run's mean size but is negative at " + bad +
                                  " (sizes as statistics); using \"" + guarded + "\" (largest relative error " + fmt_number(g.max_rel_error) + ")");
        fits[field] = {{"expr", g.expr}, {"max_rel_error", g.max_rel_error}, {"cv_rel_error", g.cv_rel_error}, {"guard", guarded},
                       {"rejected", f.expr}};
        return guarded;
      }
    if (std::string(field) == "count")
      if (const std::string bad = count_outside_domain(f.expr, samples); !bad.empty()) {
        // an exact fit of the traced runs that is no count elsewhere (multigrid levels fitted as a polynomial; from
        // TI traces, MG's comm3 loop: once per level down and twice up)
        if (const std::string l = log_count_fit(samples, 4); !l.empty()) {
          fits[field] = {{"expr", l}, {"form", "log"}, {"rejected", f.expr}, {"rejected_at", bad}};
          return l;
        }
        result.warnings.push_back(where + "/" + field + ": \"" + f.expr + "\" fits every run but is not a count at " + bad +
                                  ", and no log2 form fits");
      }
    note_ambiguity(where + "/" + field, f);
    return f.expr;
  }

  // Integers stay integers: a count, size, peer, tag or root that no exact expression of rank, P and the
  // parameters reproduces in every run is never a least-squares polynomial (which is not an integer, and
  // may be negative or out of range elsewhere). It is written as each traced run's own exact expression
  // (else that run's values rank by rank), selected by the run's P and parameters, and `no_exact_expression`
  // (-7: no count, size or rank) at any other run, so that the skeleton replays at the traced runs and
  // refuses clearly elsewhere. A warning and an ambiguity (mkskel build --strict refuses) say which
  // quantity, where, and which runs would decide.
  std::string per_run_int(const std::vector<Sample>& samples, const std::string& where, nlohmann::json& fits,
                          const char* field, bool allow_rank) {
    std::map<std::string, std::vector<Sample>> by_run;
    std::vector<std::string> order;
    for (const Sample& x : samples) {
      if (!by_run.count(x.run)) order.push_back(x.run);
      by_run[x.run].push_back(x);
    }
    std::string text = "no_exact_expression", runs_text;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const std::vector<Sample>& own = by_run[*it];
      std::string cond = "P == " + fmt_number(own.front().vars.at("P"));
      for (const std::string& p : params_) cond += " && " + p + " == " + fmt_number(own.front().vars.at(p));
      Vars run_vars = own.front().vars;
      run_vars.erase("rank");
      runs_text = describe_vars(run_vars) + (runs_text.empty() ? "" : "; ") + runs_text;
      bool same = true;
      for (const Sample& x : own) same = same && x.value == own.front().value;
      std::string e = fmt_number(own.front().value);
      if (!same) {
        FitOptions fo;
        fo.integer = true;
        fo.allow_rank = allow_rank;
        const Fit g = fit_quantity(own, params_, fo);
        if (g.exact && !has_decimal_literal(g.expr)) {
          e = g.expr;
        } else {  // the run's values rank by rank
          std::map<int, double> v;
          for (const Sample& x : own) v[static_cast<int>(x.vars.at("rank"))] = x.value;
          e = "no_exact_expression";
          for (auto r = v.rbegin(); r != v.rend(); ++r) e = "if(rank == " + std::to_string(r->first) + ", " + fmt_number(r->second) + ", " + e + ")";
        }
      }
      text = "if(" + cond + ", " + e + ", " + text + ")";
    }
    uses_untraced_ = true;
    double Pmax = 0;
    for (const Sample& x : samples) Pmax = std::max(Pmax, x.vars.at("P"));
    const std::string msg = where + "/" + field + ": no exact expression of rank, P and the parameters fits every run; " +
                            "written per traced run (" + runs_text + "), so the skeleton refuses any other run. Traced runs at " +
                            "P = " + fmt_number(2 * Pmax) + " and " + fmt_number(4 * Pmax) + " would show whether one expression holds";
    result.warnings.push_back(msg);
    result.ambiguities.push_back(msg);
    FitOptions lsq;
    const Fit f = fit_quantity(samples, params_, lsq);
    fits[field] = {{"expr", "per traced run"}, {"exact", false}, {"least_squares_not_used", f.expr}, {"max_rel_error", f.max_rel_error}};
    return text;
  }

  // An integer of a call (peer, size, tag). A call copied once per class of shapes that order calls
  // differently is one call point, so its copies are fitted together first and an exact expression for all
  // of them is kept for each: a copy whose class has few samples (atm2d's red exchanges without call sites
  // have none below P = 8, its red corners being in the black class) would otherwise get a coincidence of
  // its own runs, `rank - P/4` for `rank - Px`. The joint expression is kept only when one copy alone finds
  // it too; else (or when none fits all copies) each copy is fitted alone.
  template <class F>
  std::string fit_call_int(const UNode& u, F get, const std::string& where, nlohmann::json& fits, const char* field) {
    if (!u.twins.empty()) {
      std::vector<Sample> all;
      for (const auto& copy : u.twins) {
        const std::vector<Sample> some = samples(copy, get);
        all.insert(all.end(), some.begin(), some.end());
      }
      bool all_same = true;
      for (const Sample& s : all) all_same = all_same && s.value == all.front().value;
      if (all_same) return fmt_number(all.front().value);
      FitOptions fo;
      fo.integer = true;
      fo.allow_rank = true;
      const Fit f = fit_quantity(all, params_, fo);
      // kept only when some copy, fitted alone, finds the same expression: one copy's data confirm it, so
      // the joint fit is not a contrivance that merely covers two code places sharing a call point
      bool confirmed = false;
      for (const auto& copy : u.twins) {
        if (!f.exact || confirmed) break;
        const std::vector<Sample> own = samples(copy, get);
        bool same = true;
        for (const Sample& s : own) same = same && s.value == own.front().value;
        confirmed = same ? fmt_number(own.front().value) == f.expr : fit_quantity(own, params_, fo).expr == f.expr;
      }
      if (f.exact && confirmed) {
        note_ambiguity(where + "/" + field, f);
        fits[field] = {{"expr", f.expr}, {"fitted_with_copies", true}, {"samples", all.size()}};
        return f.expr;
      }
    }
    return fit_int(samples(u, get), where, fits, field, true);
  }

  // (max_growth_8p: how much a model may grow when P grows 8 times; more is what oversubscribed runs look like)
  // A run's lone noisy rank (pool.hpp lone_noisy_ranks) is left out of a measured time's samples: one rank
  // descheduled in one iteration of one run (3 times its run's others, SUMMA's panel update at P = 6 in a loaded
  // run) moved that run's mean by a third and the regression lost the law of N. The evidence goes in the fit.
  std::vector<Sample> without_noisy_ranks(const std::vector<Sample>& samples, std::vector<std::string>& trimmed) const {
    std::map<std::string, std::size_t> run_index;
    std::vector<RankSample> rs;
    for (const Sample& x : samples) {
      const auto P = x.vars.find("P"), rank = x.vars.find("rank");
      if (P == x.vars.end() || rank == x.vars.end()) return samples;
      rs.push_back({run_index.try_emplace(x.run, run_index.size()).first->second, static_cast<int>(P->second),
                    static_cast<int>(rank->second), x.value});
    }
    const std::vector<bool> noisy = lone_noisy_ranks(rs);
    std::vector<Sample> kept;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      if (!noisy[i]) {
        kept.push_back(samples[i]);
        continue;
      }
      double others = 0;
      int n = 0;
      for (const RankSample& r : rs)
        if (r.run == rs[i].run && &r != &rs[i] && r.value > 0) others += r.value, ++n;
      trimmed.push_back("run '" + samples[i].run + "' rank " + std::to_string(rs[i].rank) + ": " + fmt_number(samples[i].value) +
                        " s, its run's other ranks " + fmt_number(n > 0 ? others / n : 0) + " s on average");
    }
    return kept;
  }

  // (max_growth_8p: how much a model may grow when P grows 8 times; more is what oversubscribed runs look like)
  std::string fit_real(const std::vector<Sample>& given, const std::string& where, nlohmann::json& fits,
                       const char* field, double max_growth_8p = 12) {
    std::vector<std::string> trimmed;
    const std::string what_field = field;
    const std::vector<Sample> samples =
        what_field == "seconds" || what_field == "overlap_s" ? without_noisy_ranks(given, trimmed) : given;
    auto evidence = [&] {
      if (!trimmed.empty()) fits[field]["trimmed_noisy_ranks"] = trimmed;
    };
    // A measured time is noisy: a model that depends on P or the parameters must predict left-out runs
    // clearly better (half the error) than their plain mean does, else the mean is kept. This keeps the
    // noise of microsecond gaps from turning into terms that grow with P at the predicted scale.
    const double flat = constant_cv_error(samples);
    std::vector<std::string> names = variable_names();
    // Per-rank work that grows faster than P itself is implausible for the programs mksim models and is
    // what time-sliced (oversubscribed) traced runs look like: such a model is rejected too. Checked over 8
    // times the traced P (at most max_growth_8p), and over the range mksim predicts for (P up to 4,096 times
    // the traced P: 65,536 from 16), where at most P log P growth is allowed (with a margin of 1.5): a term in
    // P^2 that a large constant hides at 8x (a microsecond gap inflated at P = 16, 1.7e-10*P^2 + 1.4e-6) grows
    // 900 times from 16 to 1,024 ranks.
    auto too_steep = [&](const std::string& expr) {
      const Feature model(expr, names, false);
      for (const Sample& x : samples) {
        const double P = x.vars.at("P"), here = model.eval(x.vars);
        if (!std::isfinite(here) || !(here > 0)) continue;
        for (const double k : {8.0, 64.0, 512.0, 4096.0}) {
          Vars far = x.vars;
          far["P"] = P * k;
          const double allowed = k == 8 ? max_growth_8p : 1.5 * k * std::log2(P * k) / std::log2(std::max(P, 2.0));
          if (!(model.eval(far) <= allowed * here)) return true;
        }
        // nor may it fall to zero by a term growing with P subtracted from the duration (noise between the gaps of a
        // few runs: 0.00065 - 9.6e-07*P^2 or 0.00063 - 6.6e-05*log2(P) in a loop's warm-up take all of it away at the
        // predicted P). Told from a law that ends at zero (1e-05*N/P - 3.6e-06, near its asymptote long before) by
        // its fall from 512 to 4,096 times P: a tenth of its fall from 1 to 8 times P, or more
        Vars v = x.vars;
        auto at = [&](double k) { return v["P"] = P * k, model.eval(v); };
        const double at8 = at(8), at512 = at(512), at4096 = at(4096);
        if (!(at4096 > 0) && !(at512 - at4096 < 0.1 * std::max(0.0, here - at8))) return true;
      }
      return false;
    };
    // A too steep model is fitted again with no term that grows with P (terms that fall with it, N^2/P, stay)
    // before the mean is kept: the dependence on the parameters (N^2*nb/P in SUMMA's panel update) is what the
    // runs measure well, and the mean of runs at different N loses it (4.4 times too little compute at N = 192).
    // Not with terms up to P either: at the corpus' sweep3d that turned microsecond gaps inflated by time slicing
    // (7e-11*P^3 + 3e-7) into 2e-8*P + 2e-7, 100 times the gap at 1,024 ranks.
    // Runs with more ranks than the host's cores (run.json `cores`) time-slice their ranks: what they measure grows
    // with P whether the program's work does or not (the corpus' hpcg, 16 ranks on 2 cores: microsecond gaps 3 times
    // a run at P = 1, fitted as terms linear in P, +150% at 256 ranks). From such runs a measured time may fall with
    // P, not grow: a model that grows is fitted again as a too steep one is.
    auto grows = [&](const std::string& expr) {
      const std::string what = field;
      if (oversubscribed_.empty() || (what != "seconds" && what != "overlap_s")) return false;
      const Feature model(expr, names, false);
      for (const Sample& x : samples) {
        Vars twice = x.vars;
        twice["P"] = 2 * x.vars.at("P");
        const double here = model.eval(x.vars), there = model.eval(twice);
        if (std::isfinite(here) && std::isfinite(there) && there > here * (1 + 1e-9) + 1e-300) return true;
      }
      return false;
    };
    std::vector<std::string> rejected;
    double rejected_cv = -1;
    std::string why_mean;  // why the mean was kept, when the model missed the runs' means (symmetric_run_errors)
    bool any_steep = false, any_grows = false;
    // the model kept after the first was rejected: said in a warning (too steep) or counted in one for the build
    // (grew where runs had more ranks than cores), and the rejected ones kept in its fit
    auto keep = [&](const Fit& f) {
      fits[field] = {{"expr", f.expr}, {"max_rel_error", f.max_rel_error}, {"cv_rel_error", f.cv_rel_error},
                     {"mean_cv_rel_error", flat}, {"samples", samples.size()}};
      note_ambiguity(where + "/" + field, f);
      evidence();
      if (rejected.empty()) return;
      fits[field]["rejected"] = rejected;
      if (any_grows) {
        fits[field]["why_rejected"] = "grows with P in runs with more ranks than cores";
        if (oversubscribed_refits_++ == 0)
          oversubscribed_example_ = where + "/" + field + ": \"" + rejected.front() + "\" -> \"" + f.expr + "\"";
      } else {
        result.warnings.push_back(where + "/" + field + ": \"" + rejected.front() + "\" grows faster than P log P (more than " +
                                  fmt_number(max_growth_8p) + " times when P grows 8 times, or at larger P) or falls to zero at larger P; fitted again with no term that grows with P: \"" + f.expr +
                                  "\" (compute times of runs with more ranks than cores include time waiting for a core)");
      }
    };
    for (const double limit : {static_cast<double>(INFINITY), 0.0}) {
      FitOptions fo;
      fo.max_p_power = limit;
      const Fit f = fit_quantity(samples, params_, fo);
      if (Feature(f.expr, names, false).uses().empty()) {  // a constant
        keep(f);
        return f.expr;
      }
      const bool steep = too_steep(f.expr);
      const bool grows_oversubscribed = !steep && limit != 0 && grows(f.expr);
      if (steep || grows_oversubscribed) {
        (steep ? any_steep : any_grows) = true;
        rejected.push_back(f.expr);
        if (rejected_cv < 0) rejected_cv = f.cv_rel_error;
        continue;
      }
      if (!(f.cv_rel_error >= 0 && f.cv_rel_error <= 0.5 * flat)) {
        rejected.push_back(f.expr);
        if (rejected_cv < 0) rejected_cv = f.cv_rel_error;
        break;
      }
      if (const auto [model_err, mean_err] = symmetric_run_errors(samples, f.expr, names); model_err > SYMMETRIC_SHARE * mean_err) {
        rejected.push_back(f.expr);
        if (rejected_cv < 0) rejected_cv = f.cv_rel_error;
        why_mean = "misses the runs' means by " + fmt_number(model_err) + " on average, against " + fmt_number(mean_err) +
                   " for their plain mean (error relative to the larger)";
        break;
      }
      keep(f);
      // a time model may turn negative outside the traced range (a - b*log2(K)): a duration is not
      return "max(0, " + f.expr + ")";
    }
    if (any_grows && !any_steep && oversubscribed_refits_++ == 0)
      oversubscribed_example_ = where + "/" + field + ": \"" + rejected.front() + "\" -> the mean";
    if (any_steep)
      result.warnings.push_back(where + "/" + field + ": \"" + rejected.front() + "\" grows faster than P log P (more than " +
                                fmt_number(max_growth_8p) + " times when P grows 8 times, or at larger P) or falls to zero at larger P, and no model without a term that grows with P " +
                                "predicts the runs better than their mean; kept the mean " +
                                "(compute times of runs with more ranks than cores include time waiting for a core)");
    double sum = 0;
    for (const Sample& x : samples) sum += x.value;
    const std::string mean = fmt_number(sum / static_cast<double>(samples.size()));
    fits[field] = {{"expr", mean}, {"rejected", rejected.size() == 1 ? nlohmann::json(rejected.front()) : nlohmann::json(rejected)},
                   {"rejected_cv_rel_error", rejected_cv}, {"mean_cv_rel_error", flat}, {"samples", samples.size()}};
    if (!why_mean.empty()) fits[field]["why_rejected"] = why_mean;
    evidence();
    return mean;
  }

  // A size by level (level_size): the exact expression `expr` of the parameter `param` taken at param/2^(level + shift).
  struct LevelForm {
    std::string expr, param;
    int shift = 0;
  };
  // The coarsening sizes of the last loop that had some, for the blocks after it in the same list (after_levels).
  struct AfterLevels {
    std::string where, count;  // the list the loop is in; its count
    std::vector<LevelForm> levels;
  };
  std::optional<AfterLevels> after_levels_;

  // The counts of the loops around the node being emitted (innermost last), per (run, rank): a compute gap in a loop
  // whose count changes from run to run may be work per execution of the loop rather than per iteration.
  struct LoopCounts {
    std::map<std::pair<std::string, double>, double> count;
    bool varies = false;
    bool used = false;  // a gap of its body was written per execution (COUNT_PLACEHOLDER)
    std::string var;    // the loop's variable: an indexed loop's, or one a size by level needed (level_size)
    bool var_made = false;  // named by level_size: the block writes it
    std::vector<LevelForm> levels;  // the coarsening sizes level_size found in its body
  };
  std::vector<LoopCounts> loop_counts_;
  std::set<const UNode*> warmed_up_;  // nodes whose gap's warm-up was peeled before their loop (has_warm_up)
  static constexpr const char* COUNT_PLACEHOLDER = "__loop_count__";
  static constexpr double PER_EXECUTION_MIN_ERROR = 0.02;

  static void replace_count_placeholder(nlohmann::json& list, const std::string& count) {
    for (nlohmann::json& b : list) {
      for (const char* field : {"seconds", "flops", "size"}) {
        if ((b.value("op", "") == "compute") == (std::string(field) == "size") || !b.contains(field) || !b[field].is_string()) continue;
        std::string t = b[field];
        for (std::size_t at = t.find(COUNT_PLACEHOLDER); at != std::string::npos; at = t.find(COUNT_PLACEHOLDER, at))
          t.replace(at, std::string(COUNT_PLACEHOLDER).size(), count);
        b[field] = t;
        if (b.contains("fit") && b["fit"].contains(field) && b["fit"][field].contains("per_execution"))
          b["fit"][field]["per_execution"]["count"] = count;
      }
      if (b.value("op", "") == "loop") continue;  // an inner loop's gaps are its own
      for (const char* arm : {"body", "then", "else"})
        if (b.contains(arm)) replace_count_placeholder(b[arm], count);
    }
  }

  // A compute gap's seconds: per iteration of the loop around it (fit_real), or, where that loop's count changes from
  // run to run, the fit per iteration is more than 2% off on average and the work of one execution of the loop
  // predicts the runs clearly better (half the mean relative error), that work divided by the count. LAMMPS' reverse communication runs 2, 4, 4 swaps at P = 2, 4, 8 after the
  // force computation, whose time is in the first swap's gap: per iteration it is force / count, which a law of P
  // alone cannot follow (L^(8/3)/P^2, half the force at P = 16), per execution it is the force's L^(8/3)/P.
  // The same for a TI gap's flops (`field` "flops"): NPB MG's comm3 loop runs 3 levels - 1 times a V-cycle, each
  // level's work an eighth of the one above, so the mean per iteration falls as levels are added (33*N^(8/3)/P,
  // 20% low at N = 128) where the work of one execution is the finest level's, 116*N^3/P.
  std::string fit_loop_gap(const std::vector<Sample>& gap, const std::string& at, nlohmann::json& fits,
                           const char* field = "seconds") {
    std::vector<Sample> total;
    std::vector<double> count;
    if (!per_execution_totals(gap, total, count)) return fit_real(gap, at, fits, field);
    const std::size_t warnings = result.warnings.size(), ambiguities = result.ambiguities.size();
    nlohmann::json per_fits = nlohmann::json::object(), total_fits = nlohmann::json::object();
    const std::string per = fit_real(gap, at, per_fits, field);
    const std::size_t warnings_per = result.warnings.size(), ambiguities_per = result.ambiguities.size();
    const std::string all = fit_real(total, at, total_fits, field);
    // per iteration unless that is more than 2% off on average and per execution halves it (a gap the same in every
    // iteration is fitted per iteration whatever fits the totals as well)
    const double e_per = mean_rel_error(per, gap, count, false, 1e-12), e_all = mean_rel_error(all, gap, count, true, 1e-12);
    if (!(e_per > PER_EXECUTION_MIN_ERROR && e_all < 0.5 * e_per)) {
      result.warnings.resize(warnings_per);
      result.ambiguities.resize(ambiguities_per);
      fits = per_fits;
      return per;
    }
    // keep the per-execution fit's messages only
    result.warnings.erase(result.warnings.begin() + static_cast<long>(warnings), result.warnings.begin() + static_cast<long>(warnings_per));
    result.ambiguities.erase(result.ambiguities.begin() + static_cast<long>(ambiguities),
                             result.ambiguities.begin() + static_cast<long>(ambiguities_per));
    loop_counts_.back().used = true;
    fits = total_fits;
    fits[field]["per_execution"] = {{"mean_rel_error", e_all}, {"per_iteration", per}, {"per_iteration_mean_rel_error", e_per}};
    return "(" + all + ")/(" + COUNT_PLACEHOLDER + ")";
  }

  // Leave-one-run-out relative error of predicting each run's mean value by the other runs' mean.
  // symmetric_run_errors: the share of the mean's error a measured time's model may keep (a third less, at least)
  static constexpr double SYMMETRIC_SHARE = 2.0 / 3.0;
  // A measured time's model against the plain mean of all samples, run by run, with an error that counts over- and
  // under-prediction alike (|a - b| / max(|a|, |b|), at most 1): {the model's, the mean's}, each averaged over the runs.
  // The cross-validated errors above are relative to the measured value, so a model that predicts the small values
  // well wins whatever it does to the large ones. A gap bimodal in the runs (ATM2D's free() before MPI_Finalize: 25 us
  // where a rank's arrays are under malloc's mmap threshold, 0.4-2.5 ms above it) was fitted as
  // 2.8e-15*N^3*log2(N)^2*steps^2, right at the small runs, a third of the large ones, and 7 ms per rank at the demo's
  // N = 1,024: the demo's prediction doubled in four batches of five (issue 17). Such a model must cut the mean's
  // error in this sense by a third too (SYMMETRIC_SHARE; that one missed the runs by 0.45 against the mean's 0.49),
  // or the mean is kept.
  static std::pair<double, double> symmetric_run_errors(const std::vector<Sample>& samples, const std::string& expr,
                                                        const std::vector<std::string>& names) {
    const Feature model(expr, names, false);
    struct Run {
      double measured = 0, modelled = 0;
      std::size_t n = 0;
    };
    std::map<std::string, Run> by_run;
    double total = 0;
    for (const Sample& x : samples) {
      Run& r = by_run[x.run];
      r.measured += x.value;
      r.modelled += std::max(0.0, model.eval(x.vars));  // as replayed: max(0, model)
      ++r.n;
      total += x.value;
    }
    if (by_run.size() < 2) return {0, 0};
    const double mean = total / static_cast<double>(samples.size());
    auto err = [](double a, double b) {
      const double m = std::max(std::fabs(a), std::fabs(b));
      return m > 0 && std::isfinite(a) && std::isfinite(b) ? std::fabs(a - b) / m : (a == b ? 0.0 : 1.0);
    };
    double model_err = 0, mean_err = 0;
    for (const auto& [name, r] : by_run) {
      const double own = r.measured / static_cast<double>(r.n);
      model_err += err(r.modelled / static_cast<double>(r.n), own);
      mean_err += err(mean, own);
    }
    return {model_err / static_cast<double>(by_run.size()), mean_err / static_cast<double>(by_run.size())};
  }

  static double constant_cv_error(const std::vector<Sample>& samples) {
    std::map<std::string, std::pair<double, std::size_t>> by_run;
    double total = 0;
    for (const Sample& x : samples) {
      auto& [sum, n] = by_run[x.run];
      sum += x.value;
      ++n;
      total += x.value;
    }
    if (by_run.size() < 2) return 0;
    double err = 0;
    for (const auto& [run, sn] : by_run) {
      const double own = sn.first / static_cast<double>(sn.second);
      const double others = (total - sn.first) / static_cast<double>(samples.size() - sn.second);
      err += std::fabs(others - own) / std::max(std::fabs(own), 1e-300);
    }
    return err / static_cast<double>(by_run.size());
  }

  // Samples of a number read from each member's node of every occurrence.
  template <class F>
  std::vector<Sample> samples(const UNode& u, F get) const {
    return samples(u.occ, get);
  }
  template <class F>
  std::vector<Sample> samples(const std::vector<Occ>& occ, F get) const {
    std::vector<Sample> out;
    for (const Occ& o : occ)
      for (std::size_t k = 0; k < o.nodes.size(); ++k) {
        const Member& m = members_[shapes_[o.shape][k]];
        out.push_back({vars_of(m), get(*o.nodes[k]), m.run->name});
      }
    return out;
  }

  // A loop's warm-up (issue 17, "Noise"; the end-to-end test's atm2d): the first iterations of a loop often take
  // many times the others (a first touch of the arrays a step writes, cold caches, the initialisation before the first
  // call when it folds into the loop's top). Kept in the mean per iteration, that once-per-run work became work per
  // step: atm2d at P = 2 spends 40 ms in each of its first two gaps and 1.45 ms in the others at N = 1024, and the
  // mean per step was 3.4 ms at 20 steps and 2.8 ms at 30, a law of steps the forms cannot follow (the fit was 24%
  // off at the traced runs, the prediction at N = 1280, 25 steps 20-30% low per rank from one batch of traces to the
  // next). Per rank, durations more than WARM_UP_RATIO times the median of those after the first are its warm-up; the
  // steady mean counts them as that median, and what they took beyond it is once per run.
  static constexpr double WARM_UP_RATIO = 3;
  static constexpr std::uint64_t WARM_UP_MAX_HIGH = 2;     // more is not a warm-up (a periodic heavy step)
  static constexpr double WARM_UP_MIN_SHARE = 0.1;          // of the gap's time, all ranks and runs
  static constexpr double WARM_UP_MIN_S = 1e-5;             // per sample: timer noise of short gaps is not a warm-up
  struct WarmUp {
    bool judged = false;     // enough durations after the first (3) to have a median
    double median = 0;       // of the durations after the first
    double steady_mean = 0;  // the mean with the warm-up durations counted as the median
    double excess = 0;       // what the warm-up durations took beyond the median
    double high = 0;         // how many durations are warm-up
  };
  static WarmUp warm_up_of(const Compute& c) {
    WarmUp w;
    w.steady_mean = c.seconds.mean();
    if (c.rest.n < 3 || c.rest_sketch.count() == 0) return w;
    std::vector<std::pair<double, double>> own;
    for (const auto& [v, wt] : c.rest_sketch.weighted()) own.emplace_back(v, static_cast<double>(wt));
    w.median = weighted_quantile(own, 0.5);
    if (!(w.median > 0)) return w;
    w.judged = true;
    const double limit = WARM_UP_RATIO * w.median;
    if (c.first > limit) {
      w.excess += c.first - w.median;
      w.high += 1;
    }
    // the sketch's weights may not add up to rest.n beyond its exact range: scale them
    double weights = 0;
    for (const auto& [v, wt] : own) weights += wt;
    const double scale = weights > 0 ? static_cast<double>(c.rest.n) / weights : 1.0;
    for (const auto& [v, wt] : own)
      if (v > limit) {
        w.excess += (v - w.median) * wt * scale;
        w.high += wt * scale;
      }
    w.steady_mean = std::max(0.0, c.seconds.sum - w.excess) / static_cast<double>(c.seconds.n);
    return w;
  }

  // Whether the gap before `u`, a node of an outermost loop's body run by all of that loop's ranks, has a warm-up to
  // peel: every rank of every run has a median (3 durations after the first), at most a tenth of them more than
  // WARM_UP_MAX_HIGH warm-up durations, typically not more in runs of more iterations than in runs of fewer (a heavy
  // step every k iterations is the program's steady state), at least half of them some, and the warm-ups take at
  // least WARM_UP_MIN_SHARE of the gap's time. Then its samples of once-per-run work (0 where a rank has none) in `warm`.
  bool has_warm_up(const UNode& u, std::vector<Sample>& warm, nlohmann::json& evidence) const {
    double total = 0, excess = 0;
    std::size_t gaps = 0, with = 0, heavy = 0;  // heavy: gaps with more than WARM_UP_MAX_HIGH warm-up durations
    std::vector<std::pair<double, double>> n_high;  // (durations, warm-up durations) per gap
    warm.clear();
    for (const Occ& o : u.occ)
      for (std::size_t k = 0; k < o.nodes.size(); ++k) {
        const Member& m = members_[shapes_[o.shape][k]];
        const Node* g = o.gaps[k];
        double e = 0;
        if (g) {
          const Compute& c = std::get<Compute>(g->op);
          const WarmUp w = warm_up_of(c);
          if (!w.judged) return false;
          if (w.high > static_cast<double>(WARM_UP_MAX_HIGH) + 0.5) ++heavy;
          ++gaps;
          total += c.seconds.sum;
          excess += w.excess;
          e = w.excess;
          if (w.high > 0.5) ++with;
          n_high.emplace_back(static_cast<double>(c.seconds.n), w.high);
        }
        warm.push_back({vars_of(m), e, m.run->name});
      }
    // (a lone rank's step slowed once more by the machine is no periodic heavy step: the demo's warm-up was kept in
    // its steps, 3-5 times their law, when one rank of 64 had one such step)
    if (gaps == 0 || 10 * heavy > gaps || 2 * with < gaps || !(excess >= WARM_UP_MIN_SHARE * total) ||
        !(excess >= WARM_UP_MIN_S * static_cast<double>(with)))
      return false;
    // (grouped by the number of durations, each group's median: sorting the pairs put the gaps with two warm-up
    // durations of runs of as many iterations into the upper half, and ATM2D's two-step warm-up, at every rank of the
    // demo's runs of 5 steps and of its one run of 8, was read as growing with the iterations; a mean let one rank's
    // spike decide)
    std::map<double, std::vector<double>> by_n;  // durations -> warm-up durations of each gap
    for (const auto& [n, high] : n_high) by_n[n].push_back(high);
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    };
    if (by_n.size() > 1 && median(by_n.rbegin()->second) > median(by_n.begin()->second) + 0.5) return false;
    evidence = {{"ratio", WARM_UP_RATIO}, {"gaps", gaps}, {"with_warm_up", with}, {"share", std::round(1e4 * excess / total) / 1e4}};
    return true;
  }

  std::vector<Sample> gap_samples(const UNode& u, bool& any, bool flops = false) const {
    std::vector<Sample> out;
    any = false;
    const bool peeled = !flops && warmed_up_.count(&u);
    for (const Occ& o : u.occ)
      for (std::size_t k = 0; k < o.nodes.size(); ++k) {
        const Member& m = members_[shapes_[o.shape][k]];
        const Node* g = o.gaps[k];
        const Compute* c = g ? &std::get<Compute>(g->op) : nullptr;
        const double v = c ? (flops ? c->flops.mean() : peeled ? warm_up_of(*c).steady_mean : c->seconds.mean()) : 0.0;
        any = any || v > (flops ? 0.0 : opt_.min_compute_s);
        out.push_back({vars_of(m), v, m.run->name});
      }
    return out;
  }


  // The condition on rank that is true on the ranks of `high` among those of `block` in the runs of `use`
  // (the other ranks of the block are the low group; ranks outside the block may go either way, so both
  // labellings are searched and the shorter condition kept); "" when none fits.
  // (A run whose ranks' noise put one rank on the wrong side of its gap makes every condition fail; the
  // caller then tries the runs without each one in turn: the other runs and the check of every run decide.)
  std::pair<std::string, GroupPredicate> split_condition(const std::vector<bool>& high, const std::vector<bool>& block,
                                                         const std::vector<bool>& use) const {
    std::vector<bool> with_outside = high;
    for (std::size_t m = 0; m < members_.size(); ++m)
      if (!block[m]) with_outside[m] = true;
    std::pair<std::string, GroupPredicate> best;
    for (const std::vector<bool>* in : std::array<const std::vector<bool>*, 2>{&high, &with_outside}) {
      std::vector<RunLabels> all = labels_of(*in), some;
      for (std::size_t r = 0; r < all.size(); ++r)
        if (use[r]) some.push_back(std::move(all[r]));
      if (some.empty()) continue;
      GroupPredicate g = find_group_predicate(some);
      if (g.found && (best.first.empty() || g.text.size() < best.first.size())) best = {g.text, std::move(g)};
    }
    return best;
  }

  // The seconds of the compute gap before a union node, pooled over ranks (pool.hpp, issue 17 "Noise"): each
  // member's durations with outlying iterations trimmed; the ranks of each run averaged (outlying ranks
  // trimmed) where they agree within the noise of their own iterations; where they differ for real (the
  // gap before atm2d's north exchange is the step's physics on the last row of black ranks and a few
  // microseconds on the others), one model per group of ranks, if a condition on rank describes the
  // groups in every run that shows them. The evidence is the block's fit.pool.
  std::string fit_compute(const UNode& u, const std::string& where, nlohmann::json& fits) {
    std::vector<RankDurations> ranks;
    std::vector<std::size_t> member;  // index into members_, per entry of ranks
    for (const Occ& o : u.occ)
      for (std::size_t k = 0; k < o.nodes.size(); ++k) {
        const std::size_t mi = shapes_[o.shape][k];
        RankDurations d;
        d.run = static_cast<std::size_t>(members_[mi].run - runs_.data());
        d.rank = members_[mi].rank;
        for (const trace::RankTrace& t : members_[mi].run->run->ranks)
          if (t.rank == d.rank) d.cpu = (t.flags & MKTRACE_FLAG_CPU_GAPS) != 0;
        if (const Node* g = o.gaps[k]) {
          const Compute& c = std::get<Compute>(g->op);
          d.n = c.seconds.n;
          d.first = c.first;
          // a peeled warm-up (has_warm_up) counts as the median of the durations after the first
          const WarmUp w = warmed_up_.count(&u) ? warm_up_of(c) : WarmUp{};
          const double limit = w.judged ? WARM_UP_RATIO * w.median : INFINITY;
          if (d.first > limit) d.first = w.median;
          if (c.rest.n > 0 && c.rest_sketch.count() > 0) {
            for (const auto& [v, wt] : c.rest_sketch.weighted()) d.rest.emplace_back(v > limit ? w.median : v, static_cast<double>(wt));
            std::sort(d.rest.begin(), d.rest.end());
          } else if (c.rest.n > 0) {
            d.rest.emplace_back(c.rest.mean(), static_cast<double>(c.rest.n));
          }
        }
        ranks.push_back(std::move(d));
        member.push_back(mi);
      }
    const PoolDecision p = decide_pooling(ranks, runs_.size(), opt_.pool);
    auto round4 = [](double v) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4g", v);
      return std::strtod(buf, nullptr);
    };
    std::uint64_t trimmed_durations = 0;
    for (const RankValue& v : p.values) trimmed_durations += v.trimmed;
    nlohmann::json ev = {{"ranks", ranks.size()}, {"chi2", round4(p.chi2)}, {"dof", p.dof},
                         {"chi2_critical", round4(p.chi2_critical)}, {"within_sd", round4(p.within_sd)},
                         {"between_sd", round4(p.between_sd)}, {"largest_ratio", round4(p.largest_ratio)},
                         {"trimmed_durations", trimmed_durations}};
    // the groups: high (by a condition on rank) and low, or one group of every rank
    std::string cond;
    std::vector<bool> high(ranks.size(), false);
    if (p.differ) {
      std::vector<bool> in(members_.size(), false), block(members_.size(), false);
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        block[member[i]] = true;
        if (p.high[i]) in[member[i]] = true;
      }
      // every run, split or not, by the condition: in each, its groups must keep their order
      auto separates = [&](const std::string& text, std::string& why) {
        std::map<std::size_t, std::vector<bool>> by_run;
        for (std::size_t i = 0; i < ranks.size(); ++i) {
          auto it = by_run.find(ranks[i].run);
          if (it == by_run.end()) it = by_run.emplace(ranks[i].run, predicate_members(text, runs_[ranks[i].run].vars)).first;
          high[i] = it->second[static_cast<std::size_t>(ranks[i].rank)];
        }
        for (const auto& [run, unused] : by_run) {
          std::vector<std::pair<double, double>> hi, lo;
          for (std::size_t i = 0; i < ranks.size(); ++i)
            if (ranks[i].run == run) (high[i] ? hi : lo).emplace_back(p.values[i].centre, 1.0);
          if (hi.empty() || lo.empty()) continue;
          std::sort(hi.begin(), hi.end());
          std::sort(lo.begin(), lo.end());
          if (!(weighted_quantile(hi, 0.5) >= std::sqrt(opt_.pool.min_split_ratio) * weighted_quantile(lo, 0.5))) {
            why = "\"" + text + "\" does not separate the ranks of " + runs_[run].name;
            return false;
          }
        }
        return true;
      };
      std::vector<std::pair<std::vector<bool>, std::size_t>> tries{{p.run_split, runs_.size()}};  // then all but one
      if (std::count(p.run_split.begin(), p.run_split.end(), true) >= 3)
        for (std::size_t r = 0; r < runs_.size(); ++r)
          if (p.run_split[r]) {
            tries.emplace_back(p.run_split, r);
            tries.back().first[r] = false;
          }
      std::string refused = "no condition on rank describes the groups";
      for (const auto& [use, left_out] : tries) {
        auto [text, g] = split_condition(in, block, use);
        if (text.empty()) continue;
        std::string why;
        if (!separates(text, why)) {
          refused = why;
          continue;
        }
        cond = text;
        refused.clear();
        nlohmann::json alts = nlohmann::json::array();
        for (const auto& a : g.alternatives) alts.push_back(a.text);
        if (!alts.empty()) ev["alternatives"] = alts;
        if (left_out < runs_.size()) ev["found_without"] = runs_[left_out].name;  // its groups were noise there
        break;
      }
      if (!refused.empty()) {
        high.assign(ranks.size(), false);
        ev["refused_split"] = refused;
        result.warnings.push_back(where + "/seconds: the ranks' compute differs (x" + fmt_number(round4(p.largest_ratio)) +
                                  " between ranks of one run) but " + refused + "; the ranks' mean is kept");
      }
    }
    std::size_t trimmed_ranks = 0;
    auto group_samples = [&](bool want) {
      std::vector<Sample> out;
      for (std::size_t run = 0; run < runs_.size(); ++run) {
        std::vector<double> values;
        for (std::size_t i = 0; i < ranks.size(); ++i)
          if (ranks[i].run == run && high[i] == want) values.push_back(p.values[i].value);
        if (values.empty()) continue;
        std::size_t t = 0;
        double v = 0;
        if (p.differ && cond.empty()) {  // ranks that differ for real are not outliers of each other: their mean
          for (double x : values) v += x / static_cast<double>(values.size());
        } else {
          v = pooled_value(values, opt_.pool, t);
        }
        trimmed_ranks += t;
        Vars vars = runs_[run].vars;
        vars["rank"] = 0;
        out.push_back({vars, v, runs_[run].name});
      }
      return out;
    };
    // Runs too: a run whose value lies far from what the model of all runs gives it (every rank of a P = 2 run
    // slowed 30 times by another process) is left out and the model refitted, when 6 runs or more remain.
    auto fit_runs = [&](std::vector<Sample> xs, nlohmann::json& into) {
      const std::size_t warnings = result.warnings.size(), ambiguities = result.ambiguities.size();
      std::string t = fit_real(xs, where, into, "seconds", opt_.pool.max_growth_8p);
      if (xs.size() < 7) return t;
      std::vector<std::string> names = variable_names();
      const Feature model(t, names, false);
      std::vector<double> dev;
      for (const Sample& x : xs) {
        const double want = model.eval(x.vars);
        dev.push_back(want > 0 && x.value > 0 ? std::log(x.value / want) : 0.0);
      }
      std::vector<std::pair<double, double>> abs_dev;
      for (double d : dev) abs_dev.emplace_back(std::fabs(d), 1.0);
      std::sort(abs_dev.begin(), abs_dev.end());
      const double limit = opt_.pool.trim_mads * std::max(1.4826 * weighted_quantile(abs_dev, 0.5), 0.1);
      std::vector<Sample> kept;
      nlohmann::json out = nlohmann::json::array();
      for (std::size_t i = 0; i < xs.size(); ++i)
        if (std::fabs(dev[i]) <= limit) kept.push_back(xs[i]);
        else out.push_back(xs[i].run);
      if (out.empty() || kept.size() < 6 || out.size() > xs.size() / 5) return t;
      result.warnings.resize(warnings);  // the refit says it again
      result.ambiguities.resize(ambiguities);
      into.erase("seconds");
      t = fit_real(kept, where, into, "seconds", opt_.pool.max_growth_8p);
      into["seconds"]["trimmed_runs"] = out;
      return t;
    };
    std::string text;
    if (cond.empty()) {
      ev["decision"] = p.differ ? "mean" : "pooled";
      text = fit_runs(group_samples(false), fits);
    } else {
      ev["decision"] = "split";
      ev["cond"] = cond;
      nlohmann::json hi = nlohmann::json::object(), lo = nlohmann::json::object();
      const std::string then_text = fit_runs(group_samples(true), hi);
      const std::string else_text = fit_runs(group_samples(false), lo);
      text = "if(" + cond + ", " + then_text + ", " + else_text + ")";
      fits["seconds"] = {{"expr", text}, {"then", hi["seconds"]}, {"else", lo["seconds"]}};
      result.warnings.push_back(where + "/seconds: ranks differ (x" + fmt_number(round4(p.largest_ratio)) + ", chi2 " +
                                fmt_number(round4(p.chi2)) + " > " + fmt_number(round4(p.chi2_critical)) +
                                "): one model where " + cond + ", one elsewhere");
    }
    ev["trimmed_ranks"] = trimmed_ranks;
    fits["pool"] = std::move(ev);
    return text;
  }

  std::string site_text(const UNode& u) const {
    const Occ& o = u.occ.front();
    const Call& c = std::get<Call>(o.nodes.front()->op);
    if (c.site == 0) return "";
    const Member& m = members_[shapes_[o.shape].front()];
    return trace::describe_site(m.run->run->ranks[static_cast<std::size_t>(m.rank)], c.site);
  }

  // How the compute gap before a union node varies within each rank (between the iterations its folded loops
  // stand for): the `dist` of its compute block, or null when it does not vary materially. Variation
  // between ranks and runs is the regression's business (the mean is its model); what replay should draw
  // is each rank's own variation around its mean. The first execution is left out (a warm-up, which the
  // mean already carries: drawing it at random would move it in time); ranks with fewer than
  // dist_min_rank_samples executions after it say nothing. Whether it varies is judged robustly, on the bulk of the durations (the
  // interquartile range of durations divided by their rank's median, pooled: the spread), so that a few
  // iterations stretched by another process on the tracing machine do not make a regular program
  // irregular; what is written keeps everything that was seen: durations divided by their rank's mean,
  // pooled, as deciles (empirical) or as the spread (normal, or lognormal above 0.25).
  nlohmann::json gap_distribution(const UNode& u, nlohmann::json& fits) const {
    double n = 0, rel_var = 0, median_sum = 0;
    std::size_t ranks = 0;
    std::vector<std::pair<double, double>> by_mean, by_median;  // (multiplier, weight), pooled over ranks
    for (const Occ& o : u.occ)
      for (const Node* g : o.gaps) {
        if (!g) continue;
        const Compute& c = std::get<Compute>(g->op);
        const double mean = c.rest.mean(), sd = c.rest.stddev(), k = static_cast<double>(c.rest.n);
        if (c.rest.n < opt_.dist_min_rank_samples || !(mean > 0)) continue;
        std::vector<std::pair<double, double>> own;
        for (const auto& [v, w] : c.rest_sketch.weighted()) own.emplace_back(v, static_cast<double>(w));
        const double median = weighted_quantile(own, 0.5);
        if (!(median > 0)) continue;
        ++ranks;
        n += k;
        rel_var += k * (sd / mean) * (sd / mean);
        median_sum += k * median;
        for (const auto& [v, w] : own) {
          by_mean.emplace_back(v / mean, w);
          by_median.emplace_back(v / median, w);
        }
      }
    if (by_mean.empty() || n < static_cast<double>(opt_.dist_min_samples)) return nullptr;
    std::sort(by_mean.begin(), by_mean.end());
    std::sort(by_median.begin(), by_median.end());
    const double spread = (weighted_quantile(by_median, 0.75) - weighted_quantile(by_median, 0.25)) / 1.3489795;
    const double spread_s = spread * median_sum / n;  // the same in seconds, at the typical duration
    if (!(spread > opt_.dist_min_cv) || !(spread_s >= opt_.dist_min_stddev_s)) return nullptr;
    auto round4 = [](double v) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4g", v);
      return std::strtod(buf, nullptr);
    };
    nlohmann::json dist;
    if (n >= static_cast<double>(opt_.dist_empirical_samples)) {
      // deciles of the multipliers; the last is set so that the piecewise-linear distribution keeps the
      // sample's mean (a long top tail becomes a steep last segment rather than a shifted mean)
      std::vector<double> q(11);
      double total = 0, weight = 0;
      for (const auto& [v, w] : by_mean) {
        total += v * w;
        weight += w;
      }
      double inner = 0;
      for (std::size_t i = 0; i < 10; ++i) q[i] = weighted_quantile(by_mean, static_cast<double>(i) / 10.0);
      for (std::size_t i = 1; i < 10; ++i) inner += q[i];
      q[10] = std::max(q[9], 20 * total / weight - q[0] - 2 * inner);
      double pl_mean = 0;  // (1 up to rounding; the reader rescales too)
      for (std::size_t i = 0; i < 10; ++i) pl_mean += 0.05 * (q[i] + q[i + 1]);
      nlohmann::json qs = nlohmann::json::array();
      for (double v : q) qs.push_back(round4(v / pl_mean));
      dist = {{"type", "empirical"}, {"quantiles", qs}};
    } else {
      // a truncated normal keeps its mean only while 0 is far below it; beyond 0.25, a lognormal. Its cv is the
      // spread, but never more than the durations' own cv: durations skewed by a pattern rather than by outliers
      // (NPB MG's loop over the V-cycle's levels, work divided by 8 per level) have a small median, and their
      // spread relative to it (3.9 for MG's smoothing) drew a tail four times as wide as the sample's (cv 0.98),
      // which the slowest of 64 ranks hit every level
      const double cv = std::min(spread, std::sqrt(rel_var / n));
      dist = {{"type", cv <= 0.25 ? "normal" : "lognormal"}, {"cv", round4(cv)}};
    }
    fits["dist"] = {{"samples", static_cast<std::uint64_t>(n)}, {"ranks", ranks}, {"spread", round4(spread)},
                    {"spread_s", round4(spread_s)}, {"cv", round4(std::sqrt(rel_var / n))},
                    {"min", round4(by_mean.front().first)}, {"max", round4(by_mean.back().first)}};
    return dist;
  }

  // A part that some runs skip because its loop has nothing to do there (a master's steady loop, tasks - 2*(P-1)
  // rounds, where the first round took every task): "R && (COUNT) > 0", R the condition on rank of the members
  // in `here` found from the runs where some member runs the part, COUNT its first loop's count (after compute
  // blocks), when COUNT is at least 1 at every member in `here` and at most 0 at every other member of `context`
  // that R selects; "" otherwise.
  std::string count_condition(const nlohmann::json& then, const std::vector<bool>& here, const std::vector<bool>& context) {
    const nlohmann::json* loop = nullptr;
    for (const nlohmann::json& b : then) {
      if (b.value("op", "") == "compute") continue;
      if (b.value("op", "") == "loop") loop = &b;
      break;
    }
    if (!loop || !loop->contains("count") || !(*loop)["count"].is_string()) return "";
    const std::string count = (*loop)["count"];
    if (count.find("no_exact_expression") != std::string::npos) return "";
    const std::optional<Feature> f = feature_of(count);
    if (!f) return "";
    // the runs where some member runs it, and a condition on rank there
    std::vector<RunLabels> labels = labels_of(here), present;
    for (const RunLabels& l : labels)
      if (std::find(l.member.begin(), l.member.end(), true) != l.member.end()) present.push_back(l);
    if (present.empty() || present.size() == labels.size()) return "";
    const GroupPredicate g = find_group_predicate(present, predicate_options_);
    if (!g.found) return "";
    const std::optional<Feature> r = feature_of(g.text);
    if (!r) return "";
    for (std::size_t m = 0; m < members_.size(); ++m) {
      if (!context[m]) continue;
      const Vars v = vars_of(members_[m]);
      const double c = f->eval(v);
      if (here[m] ? !(c >= 1) : r->eval(v) != 0 && !(c <= 0)) return "";
    }
    const std::string rank_part = g.text.find("||") == std::string::npos ? g.text : "(" + g.text + ")";
    return rank_part + " && (" + count + ") > 0";
  }

  // The blocks of a list of union nodes whose enclosing block runs on the members `context`.
  nlohmann::json emit_list(const std::vector<UNode>& list, const std::vector<bool>& context, const std::string& where) {
    nlohmann::json body = nlohmann::json::array();
    std::vector<std::pair<std::vector<bool>, std::string>> siblings;  // the conditions written in this list, with their members
    std::size_t i = 0;
    while (i < list.size()) {
      // a run of consecutive nodes with the same members shares one `if`
      const std::vector<bool> here = members_of(list[i]);
      std::size_t j = i + 1;
      while (j < list.size() && members_of(list[j]) == here) ++j;
      if (here == context) {
        for (std::size_t k = i; k < j; ++k) emit_node(list[k], here, where, body);
      } else {
        const std::string at = where + "/" + std::to_string(body.size());
        nlohmann::json then = nlohmann::json::array();
        for (std::size_t k = i; k < j; ++k) emit_node(list[k], here, at + "/then", then);
        if (!then.empty()) {
          neighbour_hints_.clear();
          for (std::size_t k = i; k < j; ++k)
            if (const NeighbourTag* t = neighbour_tag(list[k])) neighbour_hints_.push_back(t);
          std::string cond = condition(here, at);
          neighbour_hints_.clear();
          if (!cond.empty()) {
            cond = apart_from_siblings(cond, here, context, siblings, at);
            siblings.emplace_back(here, cond);
          }
          const std::string runs_it = cond.empty() ? count_condition(then, here, context) : "";
          if (!cond.empty() || !runs_it.empty()) {
            body.push_back({{"op", "if"}, {"cond", cond.empty() ? runs_it : cond}, {"then", then}});
            if (cond.empty())
              result.warnings.push_back(at + ": the ranks that run this part follow no condition on rank; they are those where "
                                        "its first loop runs (\"" + runs_it + "\"), in every traced run");
          } else {  // the share of the enclosing block's ranks, pooled over runs (data_dependent_sets)
            const auto in_here = static_cast<double>(std::count(here.begin(), here.end(), true));
            const auto in_context = static_cast<double>(std::count(context.begin(), context.end(), true));
            const double p = in_context > 0 ? in_here / in_context : 0.0;
            body.push_back({{"op", "if"}, {"prob", fmt_number(p)}, {"then", then},
                            {"fit", {{"prob", {{"data_dependent_ranks", true}, {"members", in_here},
                                               {"of", in_context}}}}}});
          }
        }
      }
      i = j;
    }
    return body;
  }

  void emit_node(const UNode& u, const std::vector<bool>& here, const std::string& where, nlohmann::json& body) {
    // the explicit computation before the node (SimGrid TI `compute` actions: flops), then its compute gap
    bool any_flops = false;
    std::vector<Sample> flops = gap_samples(u, any_flops, true);
    if (any_flops) {
      nlohmann::json fits = nlohmann::json::object();
      const std::string at = where + "/" + std::to_string(body.size());
      nlohmann::json block = {{"op", "compute"}, {"flops", fit_loop_gap(flops, at, fits, "flops")}};
      block["fit"] = std::move(fits);
      body.push_back(std::move(block));
    }
    bool any = false;
    std::vector<Sample> gap = gap_samples(u, any);
    if (any) {
      nlohmann::json fits = nlohmann::json::object();
      const std::string at = where + "/" + std::to_string(body.size());
      nlohmann::json block = {{"op", "compute"},
                              {"seconds", opt_.pool_compute ? fit_compute(u, at, fits) : fit_loop_gap(gap, at, fits)}};
      if (nlohmann::json dist = gap_distribution(u, fits); !dist.is_null()) {
        block["dist"] = std::move(dist);
        uses_v2_ = true;
      }
      block["fit"] = std::move(fits);
      body.push_back(std::move(block));
    }
    const std::string at = where + "/" + std::to_string(body.size());
    if (u.type == UNode::Type::TAIL) return;
    nlohmann::json fits = nlohmann::json::object();
    if (u.type == UNode::Type::REGION) {
      nlohmann::json block = {{"op", "region"}, {"name", u.name}};
      if (const std::string site = site_text(u); !site.empty()) block["provenance"] = {{"site", site}};  // of its begin
      block["body"] = emit_list(u.body, here, at + "/body");
      body.push_back(std::move(block));
      uses_v2_ = true;
      return;
    }
    if (u.type == UNode::Type::LOOP && is_branch(u)) {
      emit_branch(u, here, at, fits, body);
      return;
    }
    if (u.type == UNode::Type::LOOP) {
      // an outermost loop: the warm-ups of the gaps in its body, once per run, go before it (their paths first, so
      // that the loop's count is fitted, and named, where the loop will be)
      std::vector<std::pair<const UNode*, std::vector<Sample>>> warm_ups;
      std::vector<nlohmann::json> warm_evidence;
      if (loop_counts_.empty())
        for (const UNode& child : u.body) {
          std::vector<Sample> warm;
          nlohmann::json evidence;
          if (members_of(child) != here || !has_warm_up(child, warm, evidence)) continue;
          warm_ups.emplace_back(&child, std::move(warm));
          warm_evidence.push_back(std::move(evidence));
        }
      const std::string at = where + "/" + std::to_string(body.size() + warm_ups.size());
      nlohmann::json block = {{"op", "loop"},
                              {"count", fit_int(samples(u, [](const Node& n) { return static_cast<double>(std::get<Loop>(n.op).count); }),
                                                at, fits, "count", true)}};
      // once per run: a warm-up does not depend on how many iterations follow it, so the parameters of the count are
      // held fixed in its samples (with step counts 10 and 20 traced, log2(steps)^2/steps^(3/4) is as flat as a
      // constant and noise chose it), unless that leaves too few distinct runs for any model but the mean (atm2d's
      // N = 1,024 at 20 and 30 steps: three sizes, where a model of two terms needs four runs) and all of them give one
      const std::optional<Feature> count_feature = feature_of(expr_text(block["count"]));
      for (std::size_t w = 0; w < warm_ups.size(); ++w) {
        auto& [child, warm] = warm_ups[w];
        std::vector<Sample> held = warm;
        for (const std::string& name : count_feature ? count_feature->uses() : std::vector<std::string>{}) {
          if (name == "rank" || name == "P") continue;
          for (Sample& x : held)
            if (x.vars.count(name)) x.vars[name] = held.front().vars.at(name);
        }
        warmed_up_.insert(child);
        nlohmann::json wfits = nlohmann::json::object();
        const std::string wat = where + "/" + std::to_string(body.size());
        const std::size_t nw = result.warnings.size(), na = result.ambiguities.size();
        std::string seconds = fit_real(held, wat, wfits, "seconds");
        if (const std::optional<Feature> f = feature_of(seconds); f && f->uses().empty()) {
          nlohmann::json all_fits = nlohmann::json::object();
          const std::size_t nw2 = result.warnings.size(), na2 = result.ambiguities.size();
          const std::string all = fit_real(warm, wat, all_fits, "seconds");
          if (const std::optional<Feature> g = feature_of(all); g && !g->uses().empty()) {
            result.warnings.erase(result.warnings.begin() + static_cast<long>(nw), result.warnings.begin() + static_cast<long>(nw2));
            result.ambiguities.erase(result.ambiguities.begin() + static_cast<long>(na), result.ambiguities.begin() + static_cast<long>(na2));
            seconds = all;
            wfits = std::move(all_fits);
          } else {
            result.warnings.resize(nw2);
            result.ambiguities.resize(na2);
          }
        }
        nlohmann::json wblock = {{"op", "compute"}, {"seconds", seconds}};
        wfits["warm_up"] = std::move(warm_evidence[w]);
        wblock["fit"] = std::move(wfits);
        body.push_back(std::move(wblock));
      }
      const bool indexed = is_indexed(u);
      if (indexed) {
        loop_vars_.push_back(loop_var_name());
        block["var"] = loop_vars_.back();
      }
      {
        LoopCounts lc;
        std::map<std::pair<std::string, double>, std::pair<double, int>> sum;
        for (const Sample& x : samples(u, [](const Node& n) { return static_cast<double>(std::get<Loop>(n.op).count); })) {
          auto& [t, n] = sum[{x.run, x.vars.at("rank")}];
          t += x.value;
          ++n;
        }
        for (const auto& [key, tn] : sum) lc.count[key] = tn.first / tn.second;
        for (const auto& [key, c] : lc.count) lc.varies = lc.varies || c != lc.count.begin()->second;
        if (indexed) lc.var = loop_vars_.back();
        loop_counts_.push_back(std::move(lc));
      }
      block["body"] = emit_list(u.body, here, at + "/body");
      const bool per_execution = loop_counts_.back().used;
      std::vector<LevelForm> levels = std::move(loop_counts_.back().levels);
      if (loop_counts_.back().var_made) block["var"] = loop_counts_.back().var;
      loop_counts_.pop_back();
      if (indexed) {
        const std::vector<Sample> counts = samples(u, [](const Node& n) { return static_cast<double>(std::get<Loop>(n.op).count); });
        if (const std::string c = axis_count(loop_vars_.back(), counts); !c.empty() && c != expr_text(block["count"])) {
          result.ambiguities.push_back(at + "/count: \"" + c + "\" (iterations per axis of the grid along which its calls' peers move, " +
                                       "for each axis with more than one rank) and \"" + expr_text(block["count"]) +
                                       "\" give every traced count; the first is kept, as the peers' axes follow it");
          fits["count"] = {{"expr", c}, {"form", "axes"}, {"rejected", expr_text(block["count"])}};
          block["count"] = c;
        }
        loop_vars_.pop_back();
      }
      if (per_execution) replace_count_placeholder(block["body"], expr_text(block["count"]));
      if (!levels.empty()) after_levels_ = AfterLevels{where, expr_text(block["count"]), std::move(levels)};
      if (!fits.empty()) block["fit"] = fits;
      body.push_back(std::move(block));
      return;
    }
    emit_call(u, at, fits, body);
  }

  // Whether a union loop is a data-dependent branch of an annotated loop (fold.hpp) in every rank that runs it.
  static bool is_branch(const UNode& u) {
    for (const Occ& o : u.occ)
      for (const Node* n : o.nodes)
        if (!n || !std::get<Loop>(n->op).branch) return false;
    return !u.occ.empty();
  }

  // Collectives in a list of blocks: on world (no "comm") and on other communicators.
  static void collectives_in(const nlohmann::json& blocks, int& world, int& other) {
    static const std::set<std::string> kinds = {"barrier", "bcast", "reduce", "allreduce", "gather", "allgather", "scatter",
                                                "alltoall", "scan", "reduce_scatter"};
    for (const auto& b : blocks) {
      if (kinds.count(b.value("op", ""))) ++(b.contains("comm") && b.at("comm") != "world" ? other : world);
      for (const char* arm : {"body", "then", "else"})
        if (b.contains(arm)) collectives_in(b.at(arm), world, other);
    }
  }

  static bool has_p2p(const nlohmann::json& blocks) {
    for (const auto& b : blocks) {
      const std::string op = b.value("op", "");
      if (op == "send" || op == "recv" || op == "isend" || op == "irecv") return true;
      for (const char* arm : {"body", "then", "else"})
        if (b.contains(arm) && has_p2p(b.at(arm))) return true;
    }
    return false;
  }

  // A data-dependent branch: `if` with `prob`, the fraction of the times its place in the loop was reached
  // that each rank ran it, regressed over ranks and runs like a measured time (the mean unless a model of P
  // and the parameters predicts left-out runs clearly better); when constant, the pooled fraction over every
  // rank of every run (the maximum-likelihood estimate), with its Wilson 95% interval in the block's `fit`.
  void emit_branch(const UNode& u, const std::vector<bool>& here, const std::string& at, nlohmann::json& fits,
                   nlohmann::json& body) {
    std::vector<Sample> ps;
    double taken = 0, reached = 0;
    BranchRecord record;
    for (const Occ& o : u.occ)
      for (std::size_t k = 0; k < o.nodes.size(); ++k) {
        const Loop& l = std::get<Loop>(o.nodes[k]->op);
        const Member& m = members_[shapes_[o.shape][k]];
        record.taken[{m.run, m.rank}] += static_cast<double>(l.count);
        std::uint64_t& pat = record.pattern[{m.run, m.rank}];
        pat = pat * 0x100000001b3ull ^ l.pattern;
        std::uint64_t& anti = record.anti[{m.run, m.rank}];
        anti = anti * 0x100000001b3ull ^ l.anti;
        if (l.reached == 0) continue;
        ps.push_back({vars_of(m), static_cast<double>(l.count) / static_cast<double>(l.reached), m.run->name});
        taken += static_cast<double>(l.count);
        reached += static_cast<double>(l.reached);
      }
    const double p = reached > 0 ? taken / reached : 0.0;
    // Do the ranks' fractions differ by more than binomial noise? Pearson's chi-square of homogeneity over
    // every rank of every run against the pooled fraction, at the 0.1% level (Wilson-Hilferty quantile).
    // Only then is a model of P, the parameters and rank fitted; otherwise the pooled fraction is kept.
    double chi2 = 0;
    std::size_t cells = 0;
    if (p > 0 && p < 1)
      for (const Occ& o : u.occ)
        for (const Node* nd : o.nodes) {
          const Loop& l = std::get<Loop>(nd->op);
          if (l.reached == 0) continue;
          const double n = static_cast<double>(l.reached), e = n * p;
          chi2 += (static_cast<double>(l.count) - e) * (static_cast<double>(l.count) - e) / (e * (1 - p));
          ++cells;
        }
    const double df = cells > 1 ? static_cast<double>(cells - 1) : 1.0;
    const double h = 2.0 / (9.0 * df), critical = df * std::pow(1 - h + 3.090232 * std::sqrt(h), 3);
    const bool varies = cells > 1 && chi2 > critical;
    std::string prob = varies ? fit_real(ps, at, fits, "prob") : std::string("0");
    std::vector<std::string> names = variable_names();
    if (Feature(prob, names, false).uses().empty()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.6g", p);
      prob = buf;
    } else {
      prob = "min(1, " + prob + ")";
    }
    // Wilson score interval of the pooled fraction
    const double z = 1.959964, n = std::max(reached, 1.0);
    const double centre = (p + z * z / (2 * n)) / (1 + z * z / n);
    const double half = z * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n);
    nlohmann::json& fp = fits["prob"];
    fp["expr"] = prob;
    fp["taken"] = taken;
    fp["reached"] = reached;
    fp["pooled"] = p;
    fp["chi2"] = chi2;
    fp["chi2_critical_0.001"] = critical;
    fp["cells"] = cells;
    fp["ci95"] = {std::max(0.0, centre - half), std::min(1.0, centre + half)};
    nlohmann::json then = emit_list(u.body, here, at + "/then");
    if (has_p2p(then))  // unless pair_coins finds its partner branch
      record.warning = at + ": a data-dependent branch (taken " + fmt_number(taken) + " of " + fmt_number(reached) +
                       " times) runs point-to-point calls and no partner branch has the same counts rank by rank; replayed "
                       "ranks draw independently, so its messages match their partners' in expectation only";
    branches_.push_back(std::move(record));
    body.push_back({{"op", "if"}, {"prob", prob}, {"then", std::move(then)}, {"fit", fits}, {"_branch", branches_.size() - 1}});
  }

  // vary_sizes: how much a call's sizes vary over its iterations, around each rank's mean (the skeleton sends
  // the mean): fit.size_per_iteration = smallest and largest size seen, the pooled relative spread, and whether
  // every rank of a run saw the same spread (`alike_on_ranks`: the smallest, the largest and the spread relative to
  // the rank's mean agree within 2% across the run's ranks: a pattern of the iterations, as MG's levels, rather
  // than each rank's data, as particles that cross a face)
  void note_size_spread(const UNode& u, bool received, nlohmann::json& fits) const {
    double lo = INFINITY, hi = -INFINITY, var = 0, weight = 0;
    std::uint64_t n = 0;
    std::map<const RunInfo*, std::array<double, 3>> first;  // per run: the first rank's min/mean, max/mean, cv
    bool alike = true;
    auto near = [](double a, double b) { return std::abs(a - b) <= 0.02 * std::max({std::abs(a), std::abs(b), 1e-9}); };
    for (const Occ& o : u.occ)
      for (std::size_t i = 0; i < o.nodes.size(); ++i) {
        const Call& c = std::get<Call>(o.nodes[i]->op);
        const Stats& st = received ? c.sizes2 : c.sizes;
        if (!c.vary || st.n == 0) continue;
        lo = std::min(lo, st.min);
        hi = std::max(hi, st.max);
        n += st.n;
        if (st.mean() > 0) {
          const double cv = st.stddev() / st.mean();
          var += cv * cv * static_cast<double>(st.n);
          weight += static_cast<double>(st.n);
          const std::array<double, 3> shape{st.min / st.mean(), st.max / st.mean(), cv};
          auto [it, fresh] = first.emplace(members_[shapes_[o.shape][i]].run, shape);
          if (!fresh && !(near(it->second[0], shape[0]) && near(it->second[1], shape[1]) && near(it->second[2], shape[2])))
            alike = false;
        }
      }
    if (n == 0 || !(hi > lo)) return;
    fits["size_per_iteration"] = {{"min", lo}, {"max", hi}, {"cv", weight > 0 ? std::sqrt(var / weight) : 0.0},
                                  {"executions", n}, {"alike_on_ranks", alike}};
  }

  // Loops merged from consecutive loops (FoldOptions::index_loops) name their iteration index: `k1`, `k2`, ...
  std::vector<std::string> loop_vars_;  // the enclosing indexed loops' variables, innermost last
  int loop_var_count_ = 0;
  static bool is_indexed(const UNode& u) {
    for (const Occ& o : u.occ)
      for (const Node* n : o.nodes)
        if (n && std::get<Loop>(n->op).indexed) return true;
    return false;
  }
  std::string loop_var_name() {
    for (;;) {
      std::string v = "k" + std::to_string(++loop_var_count_);
      if (std::find(params_.begin(), params_.end(), v) == params_.end()) return v;
    }
  }

  // An exact integer expression of P, rank and the parameters for a part of an iteration form (fit_indexed,
  // level_size): the value all samples share, an exact fit without decimals, or a decomposition's; "" if none.
  std::string exact_part(const std::vector<Sample>& smp) const {
    bool all_same = true;
    for (const Sample& x : smp) all_same = all_same && x.value == smp.front().value;
    if (all_same) return fmt_number(smp.front().value);
    FitOptions fo;
    fo.integer = true;
    fo.allow_rank = true;
    const Fit g = fit_quantity(smp, params_, fo);
    if (g.exact && !has_decimal_literal(g.expr)) return g.expr;
    return decomposition_fit(smp, params_, {}, made_3d_grid());
  }
  // A rank's numbers by iteration of a loop with variable `k` (from 0), with the rank's variables.
  struct IterObs {
    Vars vars;
    std::vector<std::int64_t> values;
  };
  // Whether the text, as the replay engine reads it, gives every value of every observation.
  bool reproduces_by_iteration(const std::string& t, const std::string& k, const std::vector<IterObs>& obs) const {
    SymbolTable sym;
    sym.add("P");
    sym.add("rank");
    for (const std::string& p : params_) sym.add(p);
    const int kslot = sym.add(k);
    Expr e;
    try {
      e = parse_expr(t, sym);
    } catch (const std::exception&) {
      return false;
    }
    std::vector<double> frame(sym.size(), 0.0);
    for (const IterObs& x : obs) {
      frame[0] = x.vars.at("P");
      frame[1] = x.vars.at("rank");
      for (std::size_t i = 0; i < params_.size(); ++i) frame[2 + i] = x.vars.at(params_[i]);
      for (std::size_t i = 0; i < x.values.size(); ++i) {
        frame[static_cast<std::size_t>(kslot)] = static_cast<double>(i);
        if (e.eval(frame) != static_cast<double>(x.values[i])) return false;
      }
    }
    return true;
  }

  // A size (sizes as statistics) of a loop whose iterations coarsen or refine a grid level by level, the same way
  // in every execution of the loop (NPB MG's V-cycle: each level's faces those of a grid half as fine): at
  // iteration k, the same exact expression (exact_part: a decomposition's face, ghosts included) of a parameter X
  // taken at X/2^(k + s) (coarsening; s = 0..3 the levels above the loop's first) or X/2^(count - 1 - k + s)
  // (refining), checked at every iteration of every rank of every run. The loop then names its variable
  // (LoopCounts::var). "" when that does not hold: sizes whose iterations differ from one execution to the next
  // (data), or that no level of any parameter gives.
  std::string level_size(const UNode& u, bool received, nlohmann::json& fits) {
    if (loop_counts_.empty() || params_.empty()) return "";
    LoopCounts& lc = loop_counts_.back();
    std::vector<IterObs> obs;
    bool varies = false;
    for (const Occ& o : u.occ)
      for (std::size_t i = 0; i < o.nodes.size(); ++i) {
        const Call& c = std::get<Call>(o.nodes[i]->op);
        const std::vector<std::int64_t>& s = received ? c.seq2 : c.seq;
        if (!c.vary || s.empty()) return "";
        const Member& m = members_[shapes_[o.shape][i]];
        Vars vars = vars_of(m);
        const auto it = lc.count.find({m.run->name, vars.at("rank")});
        if (it == lc.count.end() || !(it->second >= 1) || it->second != std::floor(it->second)) return "";
        const auto n = static_cast<std::size_t>(it->second);
        if (s.size() % n != 0) return "";
        for (std::size_t j = n; j < s.size(); ++j)
          if (s[j] != s[j % n]) return "";
        std::vector<std::int64_t> v(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n));
        for (std::size_t j = 1; j < n; ++j) varies = varies || v[j] != v[0];
        obs.push_back({std::move(vars), std::move(v)});
      }
    if (!varies) return "";
    const std::string level = "__level__";  // the level index while checking: k (coarsening) or count - 1 - k
    for (const bool coarsening : {true, false}) {
      std::vector<IterObs> by_level = obs;
      if (!coarsening)
        for (IterObs& x : by_level) std::reverse(x.values.begin(), x.values.end());
      for (int shift = 0; shift <= 3; ++shift)
        for (const std::string& X : params_) {
          std::vector<Sample> pooled;
          for (const IterObs& x : by_level)
            for (std::size_t j = 0; j < x.values.size(); ++j) {
              Sample smp{x.vars, static_cast<double>(x.values[j]), {}};
              smp.vars[X] = x.vars.at(X) / std::ldexp(1.0, static_cast<int>(j) + shift);
              pooled.push_back(std::move(smp));
            }
          const std::string f = exact_part(pooled);
          if (f.empty()) continue;
          const std::string at_level = "(" + X + "/2^(" + level + (shift ? " + " + std::to_string(shift) : "") + "))";
          const std::string t = "max(0, floor(" + replace_name(f, X, at_level) + " + 0.5))";
          if (!reproduces_by_iteration(t, level, by_level)) continue;
          if (lc.var.empty()) lc.var = loop_var_name(), lc.var_made = true;
          const std::string index = coarsening ? lc.var : "(" + std::string(COUNT_PLACEHOLDER) + " - 1 - " + lc.var + ")";
          if (!coarsening) lc.used = true;
          if (coarsening) lc.levels.push_back({f, X, shift});
          const std::string text = replace_name(t, level, index);
          fits["size"] = {{"expr", f}, {"guard", text}, {"form", coarsening ? "levels, coarsening" : "levels, refining"},
                          {"level_of", X}, {"var", lc.var}, {"samples", pooled.size()}};
          return text;
        }
    }
    return "";
  }

  // A size after a loop that coarsens a grid level by level (level_size), outside it: NPB MG smooths on the coarsest
  // level after restricting down to it. Its faces are functions of P alone there (the level count follows the grid),
  // which the traced P cannot pin down (at P = 4, 8, 16 MPI_Dims_create(P, 3)'s middle side is always 2: with
  // `32*dims(P, 3, 0)^3/P` right, `16*dims(P, 3, 0)^2/dims(P, 3, 2)` and `373.019*sqrt(P) - 341.019*log2(P)` give
  // every traced face too, and are wrong at P = 32). The loop's own forms taken at its last level (k = count - 1) or
  // the one below it (k = count) carry the law of N and P; the first that gives every sample of every rank of every
  // run is kept. "" when no loop before it in its list coarsened, or none gives every sample.
  template <class F>
  std::string after_levels(const UNode& u, F get, const std::string& at, nlohmann::json& fits) {
    if (!after_levels_ || at.rfind(after_levels_->where + "/", 0) != 0) return "";
    const std::vector<Sample> smp = samples(u, get);
    if (smp.empty()) return "";
    bool all_same = true;
    for (const Sample& x : smp) all_same = all_same && x.value == smp.front().value;
    if (all_same) return "";  // a constant needs no law
    std::vector<IterObs> obs;
    for (const Sample& x : smp) {
      if (!(x.value >= 0) || x.value != std::floor(x.value)) return "";
      obs.push_back({x.vars, {static_cast<std::int64_t>(x.value)}});
    }
    const std::string& count = after_levels_->count;
    for (const char* below : {" - 1", ""})
      for (const LevelForm& lf : after_levels_->levels) {
        const std::string level = "(" + count + ")" + below + (lf.shift ? " + " + std::to_string(lf.shift) : "");
        const std::string text = "max(0, floor(" + replace_name(lf.expr, lf.param, "(" + lf.param + "/2^(" + level + "))") + " + 0.5))";
        if (!reproduces_by_iteration(text, "__unused__", obs)) continue;
        fits["size"] = {{"expr", lf.expr}, {"guard", text}, {"form", *below ? "level after the loop, its last" : "level after the loop, below its last"},
                        {"level_of", lf.param}, {"loop_count", count}, {"samples", smp.size()}};
        return text;
      }
    return "";
  }

  // A number of a call that changes with the iteration of its (indexed) loop: base + step * floor((k + offset) /
  // len) (step_form), each of the four an exact expression of P, the parameters and rank over every rank of every
  // run (a rank whose number does not change has only a base); peers and roots on a declared communicator as its
  // ranks. The text is checked at every iteration of every rank; empty when some part has no exact expression or
  // the check fails (the caller then fits the number of iteration 0, and says so).
  std::string fit_indexed(const UNode& u, int decl, const char* field, nlohmann::json& fits) {
    if (loop_vars_.empty()) return "";
    const std::string f = field;
    auto vec = [&](const Call& c) -> const std::vector<std::int64_t>* {
      if (!c.iter) return nullptr;
      const auto& v = f == "peer" ? c.iter->peer : f == "tag" ? c.iter->tag : f == "size" ? c.iter->bytes : c.iter->root;
      return v.empty() ? nullptr : &v;
    };
    auto scalar = [&](const Call& c) -> std::int64_t {
      return f == "peer" ? c.peer : f == "tag" ? c.tag : f == "size" ? c.bytes : c.root;
    };
    bool any = false;
    for (const Occ& o : u.occ)
      for (const Node* n : o.nodes) any = any || vec(std::get<Call>(n->op));
    if (!any) return "";
    const bool ranked = (f == "peer" || f == "root") && decl > 0 && topo_->any();
    struct Obs {
      Vars vars;
      std::vector<std::int64_t> values;  // per iteration, or one value
      std::vector<std::int64_t> world;   // the same as traced (world ranks for peers)
      const Member* member = nullptr;
      std::uint32_t comm = 0;
    };
    std::vector<Obs> obs;
    std::vector<std::string> obs_run;
    for (const Occ& o : u.occ)
      for (std::size_t k = 0; k < o.nodes.size(); ++k) {
        const Member& m = members_[shapes_[o.shape][k]];
        const Call& c = std::get<Call>(o.nodes[k]->op);
        Obs x{vars_of(m), {}, {}, &m, c.comm};
        if (const auto* v = vec(c)) x.values = *v;
        else x.values = {scalar(c)};
        x.world = x.values;
        if (ranked)
          for (std::int64_t& r : x.values) r = topo_->to_comm_rank(trun(m), m.rank, c.comm, static_cast<int>(r));
        obs.push_back(std::move(x));
        obs_run.push_back(m.run->name);
      }
    auto exact = [&](const std::vector<Sample>& smp) { return exact_part(smp); };
    const std::string& k = loop_vars_.back();
    auto atom = [](const std::string& x) {  // a number or a name needs no parentheses
      return x.find_first_not_of("0123456789.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") == std::string::npos;
    };
    auto par = [&](const std::string& x) { return atom(x) ? x : "(" + x + ")"; };
    // step functions and cycles: base + step*floor((k + offset) / len) or low + (start + step*k) % period
    auto steps_text = [&]() -> std::string {
      std::vector<Sample> base, step, len, offset;
      std::vector<Sample> low, start, cstep, period;  // cycle_form's, of the occurrences that wrap
      for (std::size_t i = 0; i < obs.size(); ++i) {
        const Obs& x = obs[i];
        const std::string& run = obs_run[i];
        if (x.values.size() > 1 && !step_form(x.values)) {
          const std::optional<Cycle> cy = cycle_form(x.values);
          if (!cy) return "";
          low.push_back({x.vars, static_cast<double>(cy->low), run});
          start.push_back({x.vars, static_cast<double>(cy->start), run});
          cstep.push_back({x.vars, static_cast<double>(cy->step), run});
          period.push_back({x.vars, static_cast<double>(cy->period), run});
        } else if (x.values.size() > 1) {
          const std::optional<Steps> st = step_form(x.values);
          base.push_back({x.vars, static_cast<double>(st->base), run});
          step.push_back({x.vars, static_cast<double>(st->step), run});
          len.push_back({x.vars, static_cast<double>(st->len), run});
          offset.push_back({x.vars, static_cast<double>(st->offset), run});
        } else {
          base.push_back({x.vars, static_cast<double>(x.values.front()), run});
        }
      }
      std::string t;
      if (!low.empty()) {
        const std::string lo = exact(low), st = exact(start), sp = exact(cstep), pe = exact(period);
        if (lo.empty() || st.empty() || sp.empty() || pe.empty()) return "";
        const std::string kk = sp == "1" ? k : par(sp) + "*" + k;
        t = "(" + (st == "0" ? kk : st + " + " + kk) + ") % " + par(pe);
        if (lo != "0") t = par(lo) + " + " + t;
      } else {
        const std::string b = exact(base), a = exact(step), l = exact(len), off = exact(offset);
        if (b.empty() || a.empty() || l.empty() || off.empty()) return "";
        const std::string shifted = off == "0" ? k : k + " + " + off;
        t = l == "1" ? shifted : "floor(" + (off == "0" ? k : "(" + shifted + ")") + " / " + par(l) + ")";
        if (a != "1") t = par(a) + "*" + (t == shifted && off != "0" ? "(" + t + ")" : t);
        if (b != "0") t = par(b) + " + " + t;
      }
      return t;
    };
    // a block owner's (ratio_form): first + scale*floor(k*num / den), where the steps are of unequal length in
    // some run, or of lengths no exact expression gives (a step function of few iterations is also a ratio's)
    auto ratio_text = [&]() -> std::string {
      std::vector<Sample> first, scale;
      std::vector<Vars> at;
      std::vector<RatioRange> ratios;
      for (std::size_t i = 0; i < obs.size(); ++i) {
        const Obs& x = obs[i];
        first.push_back({x.vars, static_cast<double>(x.values.front()), obs_run[i]});
        if (x.values.size() < 2) continue;
        const std::optional<RatioRange> rr = ratio_form(x.values);
        if (!rr) return "";
        Vars v = x.vars;
        v.erase("rank");
        at.push_back(std::move(v));
        ratios.push_back(*rr);
        scale.push_back({x.vars, static_cast<double>(rr->scale), obs_run[i]});
      }
      if (ratios.empty()) return "";
      const std::string b = exact(first), m = exact(scale);
      if (b.empty() || m.empty()) return "";
      const auto [num, den] = block_ratio_fit(at, params_, [&](std::size_t i, std::int64_t n, std::int64_t d) {
        return ratios[i].contains(n, d);
      });
      if (num.empty()) return "";
      const std::string over = den.find('*') == std::string::npos ? den : "(" + den + ")";
      std::string t = den == "1" ? (num == "1" ? k : k + "*" + num) : "floor(" + (num == "1" ? k : k + "*" + num) + " / " + over + ")";
      if (m != "1") t = par(m) + "*" + t;
      if (b != "0") t = par(b) + " + " + t;
      return t;
    };
    // the check: the text as the replay engine reads it, at every iteration of every rank
    std::vector<IterObs> checked;
    for (const Obs& x : obs) checked.push_back({x.vars, x.values});
    auto reproduces = [&](const std::string& t) { return reproduces_by_iteration(t, k, checked); };
    std::string t = steps_text();
    if (t.empty() || !reproduces(t)) t = ratio_text();
    if (t.empty() || !reproduces(t)) {
      // a loop over the axes of a grid (LAMMPS' swaps, a halo exchanged one dimension after the other from one call
      // site): a Cartesian neighbour whose axis and direction are functions of the iteration
      if (f == "peer") {
        std::vector<std::vector<std::int64_t>> world;
        std::vector<std::pair<const Member*, std::uint32_t>> who;
        for (const Obs& x : obs) world.push_back(x.world), who.emplace_back(x.member, x.comm);
        const bool recv = std::get<Call>(u.occ.front().nodes.front()->op).kind == Kind::RECV ||
                          std::get<Call>(u.occ.front().nodes.front()->op).kind == Kind::IRECV;
        t = axis_peer_text(world, who, k, recv, fits);
        if (!t.empty()) {
          axis_.node = &u;
          return t;
        }
      }
      if (f == "size" && !axis_.expr.empty() && axis_.node == &u) {
        std::vector<std::vector<std::int64_t>> values;
        std::vector<Vars> vars;
        for (const Obs& x : obs) values.push_back(x.values), vars.push_back(x.vars);
        t = axis_size_text(values, vars, obs_run, fits);
        if (!t.empty()) return t;
      }
      return "";
    }
    fits[field] = {{"expr", t}, {"form", "iteration"}, {"var", k}};
    return t;
  }

  // The axis form of the last peer fitted (axis_peer_text): the call, its axis as an expression of the loop
  // variable, the axis of each iteration, the grid's let prefix, so that the call's size is fitted per axis.
  struct AxisForm {
    const UNode* node = nullptr;
    std::string expr;                // the axis as a function of k
    std::vector<std::vector<std::int64_t>> axes;  // per observation (fit_indexed's order), per iteration
    std::string prefix;              // the grid's let names: PREFIX_x0.., PREFIX_n0..
    int dims = 0;
  };
  AxisForm axis_;
  // Indexed loops whose calls' peers have an axis form: the loop variable, the axes used (in order of first use),
  // iterations per axis, the sides of the axes used (expressions of P and the parameters).
  struct AxisLoop {
    std::string var;
    std::vector<std::string> counts;  // candidate counts, in order
  };
  std::vector<AxisLoop> axis_loops_;

  // The count of an indexed loop over the axes of a grid (axis_loops_): `per` iterations per axis it uses with more
  // than one rank, when that gives every traced count; "" otherwise. Where the traced runs cannot tell it from the
  // count's own fit (2*2^floor(log2(P)/2) is 2, 4, 4 at P = 2, 4, 8 as LAMMPS' swaps along z and y are), it is the
  // one the peers' axis expression can follow at every P: past the axes used, that expression names none.
  std::string axis_count(const std::string& var, const std::vector<Sample>& counts) const {
    for (const AxisLoop& al : axis_loops_) {
      if (al.var != var) continue;
      for (const std::string& text : al.counts) {
        const std::optional<Feature> f = feature_of(text);
        bool all = f.has_value();
        for (std::size_t i = 0; all && i < counts.size(); ++i) all = f->eval(counts[i].vars) == counts[i].value;
        if (all) return text;
      }
    }
    return "";
  }

  // A number sequence as an expression of the loop variable k: a constant, a step function or a cycle; "" if none.
  static std::string seq_text(const std::vector<std::int64_t>& v, const std::string& k) {
    if (v.empty()) return "";
    if (std::all_of(v.begin(), v.end(), [&](std::int64_t x) { return x == v.front(); })) return std::to_string(v.front());
    if (const std::optional<Steps> st = step_form(v)) {
      std::string t = st->offset == 0 ? k : "(" + k + " + " + std::to_string(st->offset) + ")";
      if (st->len != 1) t = "floor(" + t + " / " + std::to_string(st->len) + ")";
      const std::int64_t a = st->step < 0 ? -st->step : st->step;
      if (a != 1) t = std::to_string(a) + "*" + t;
      if (st->base != 0) return std::to_string(st->base) + (st->step < 0 ? " - " : " + ") + t;
      return st->step < 0 ? "-" + t : t;
    }
    if (const std::optional<Cycle> cy = cycle_form(v)) {
      std::string t = "(" + std::to_string(cy->start) + " + " + std::to_string(cy->step) + "*" + k + ") % " + std::to_string(cy->period);
      if (cy->low != 0) t = std::to_string(cy->low) + " + " + t;
      return t;
    }
    return "";
  }

  // The grids of the skeleton's lets: prefix -> number of dimensions (PREFIX_x0.. and PREFIX_n0.. all present).
  std::map<std::string, int> let_grids() const {
    std::set<std::string> names;
    for (const auto& [n, e] : topo_->lets()) names.insert(n);
    std::map<std::string, int> grids;
    for (const std::string& n : names) {
      if (n.size() < 4 || n.compare(n.size() - 3, 3, "_n0") != 0) continue;
      const std::string pfx = n.substr(0, n.size() - 3);
      int d = 0;
      while (names.count(pfx + "_n" + std::to_string(d)) && names.count(pfx + "_x" + std::to_string(d))) ++d;
      if (d > 0) grids[pfx] = d;
    }
    return grids;
  }

  // Evaluates `text` (over P, rank, the parameters, k and the lets) at each iteration of each observation and
  // compares it with the traced values; the lets' communicator ranks (NAME.rank) are taken as world ranks.
  bool reproduces_with_lets(const std::string& text, const std::string& k, const std::vector<std::vector<std::int64_t>>& world,
                            const std::vector<std::pair<const Member*, std::uint32_t>>& who) const {
    SymbolTable sym;
    sym.add("P");
    sym.add("rank");
    for (const std::string& p : params_) sym.add(p);
    const int kslot = sym.add(k);
    std::vector<std::pair<int, Expr>> lets;
    std::vector<int> comm_ranks;  // slots of NAME.rank
    try {
      for (const auto& [n, e] : topo_->lets()) {
        // NAME.rank of a communicator in a let: a symbol of its own
        for (std::size_t at = e.find(".rank"); at != std::string::npos; at = e.find(".rank", at + 1)) {
          std::size_t b = at;
          while (b > 0 && (std::isalnum(static_cast<unsigned char>(e[b - 1])) || e[b - 1] == '_')) --b;
          const std::string name = e.substr(b, at + 5 - b);
          if (sym.find(name) < 0) comm_ranks.push_back(sym.add(name));
        }
        Expr x = parse_expr(e, sym);
        lets.emplace_back(sym.add(n), std::move(x));
      }
      const Expr ex = parse_expr(text, sym);
      std::vector<double> frame(sym.size(), 0.0);
      for (std::size_t o = 0; o < world.size(); ++o) {
        const Vars v = vars_of(*who[o].first);
        frame[0] = v.at("P");
        frame[1] = v.at("rank");
        for (std::size_t i = 0; i < params_.size(); ++i) frame[2 + i] = v.at(params_[i]);
        for (int slot : comm_ranks) frame[static_cast<std::size_t>(slot)] = v.at("rank");
        for (auto& [slot, e] : lets) frame[static_cast<std::size_t>(slot)] = e.eval(frame);
        for (std::size_t i = 0; i < world[o].size(); ++i) {
          frame[static_cast<std::size_t>(kslot)] = static_cast<double>(i);
          if (ex.eval(frame) != static_cast<double>(world[o][i])) return false;
        }
      }
    } catch (const std::exception&) {
      return false;
    }
    return true;
  }

  // A peer that is a Cartesian neighbour (of a grid of every rank in order) along an axis that changes with the
  // iteration. The axis of each iteration comes from the topology; written as a function of k: the same sequence at
  // every rank of every run (seq_text), or `per` iterations along each axis with more than one rank, in ascending
  // order skipping the leading sides of one rank (LAMMPS' forward swaps: y, y, z, z on a 1 x 2 x 2 grid, x, x, y, y
  // on 2 x 2 x 2) or in descending order skipping the trailing ones (its reverse swaps). The direction, where sides
  // of one or two ranks cannot tell +1 from -1: the first of +1 throughout, +1 and -1 in turn, -1 throughout, -1 and
  // +1 in turn (+1 and -1 in turn first where each axis comes twice in a row; a receive: the opposite first, so that
  // it pairs with a send written the same way) that reproduces every iteration of every rank of every run.
  std::string axis_peer_text(const std::vector<std::vector<std::int64_t>>& world, const std::vector<std::pair<const Member*, std::uint32_t>>& who,
                             const std::string& k, bool recv, nlohmann::json& fits) {
    axis_ = {};
    if (world.empty()) return "";
    std::vector<std::vector<std::int64_t>> axes(world.size());  // per observation, per iteration
    bool same = true;
    std::size_t longest = 0;
    for (std::size_t o = 0; o < world.size(); ++o) {
      if (world[o].size() < 2) return "";
      for (std::size_t i = 0; i < world[o].size(); ++i) {
        if (world[o][i] < 0) return "";
        const int a = topo_->cart_axis(trun(*who[o].first), who[o].first->rank, who[o].second, static_cast<int>(world[o][i]));
        if (a < 0) return "";
        axes[o].push_back(a);
      }
      if (axes[o].size() > axes[longest].size()) longest = o;
    }
    for (std::size_t o = 0; o < world.size(); ++o)
      same = same && std::equal(axes[o].begin(), axes[o].end(), axes[longest].begin());
    // runs of one axis: `per` iterations each, every axis once (the last run of an occurrence may be cut)
    std::int64_t per = 0;
    std::size_t most_axes = 0;
    bool even = true, moves = false;
    for (const auto& seq : axes) {
      std::set<std::int64_t> seen;
      for (std::size_t i = 0; i < seq.size();) {
        std::size_t j = i;
        while (j < seq.size() && seq[j] == seq[i]) ++j;
        if (per == 0) per = static_cast<std::int64_t>(j - i);
        even = even && (static_cast<std::int64_t>(j - i) == per || j == seq.size()) && seen.insert(seq[i]).second;
        i = j;
      }
      most_axes = std::max(most_axes, seen.size());
      moves = moves || seen.size() > 1;
    }
    if (!moves) return "";
    // a loop that visits each axis twice in a row goes both ways along it (where the traced sides cannot tell)
    const bool pairs = even && per == 2;
    std::vector<std::string> plus{"1", "1 - 2*(" + k + " % 2)", "-1", "2*(" + k + " % 2) - 1"};
    if (pairs) std::swap(plus[0], plus[1]), std::swap(plus[2], plus[3]);
    std::vector<std::string> signs = plus;
    if (recv) signs = {plus[2], plus[3], plus[0], plus[1]};
    std::int64_t top = 0;
    for (const auto& seq : axes) top = std::max(top, *std::max_element(seq.begin(), seq.end()));
    for (const auto& [pfx, d] : let_grids()) {
      if (top >= d) continue;
      auto n = [&](int j) { return pfx + "_n" + std::to_string(j); };
      std::vector<std::string> forms;
      if (same)
        if (const std::string t = seq_text(axes[longest], k); !t.empty()) forms.push_back(t);
      if (even) {
        const std::string step = per == 1 ? k : "floor(" + k + " / " + std::to_string(per) + ")";
        std::string lead, trail, ones;
        for (int j = 0; j + 1 < d; ++j) {
          ones += (ones.empty() ? "" : " && ") + n(j) + " == 1";
          lead += " + (" + ones + ")";
        }
        ones.clear();
        for (int j = d - 1; j > 0; --j) {
          ones += (ones.empty() ? "" : " && ") + n(j) + " == 1";
          trail += " - (" + ones + ")";
        }
        forms.push_back(step + lead);
        forms.push_back(std::to_string(d - 1) + " - " + step + trail);
      }
      for (const std::string& axis : forms)
        for (const std::string& sg : signs) {
          std::string text = "cart_rank(";
          for (int j = 0; j < d; ++j) {
            const std::string x = pfx + "_x" + std::to_string(j);
            bool used = false;
            for (const auto& seq : axes) used = used || std::find(seq.begin(), seq.end(), j) != seq.end();
            text += (j ? ", " : "") + (used ? "(" + x + " + if(" + axis + " == " + std::to_string(j) + ", " + sg + ", 0)) % " + n(j) : x);
          }
          for (int j = 0; j < d; ++j) text += ", " + n(j);
          text += ")";
          if (!reproduces_with_lets(text, k, world, who)) continue;
          fits["peer"] = {{"expr", text}, {"form", "iteration axis"}, {"var", k}, {"axis", axis}};
          axis_ = {nullptr, axis, axes, pfx, d};
          // the loop runs `per` iterations along each axis it uses, as many axes as have more than one rank (at most
          // as many as one traced occurrence used): emit_node tries that against the count's fit
          if (even) {
            std::string sum;
            for (int j = 0; j < d; ++j) {
              sum += (sum.empty() ? "" : " + ") + std::string("(") + let_value(n(j), topo_->lets()) + " > 1)";
            }
            std::vector<std::string> counts{std::to_string(per) + "*(" + sum + ")"};
            if (static_cast<int>(most_axes) < d) counts.push_back(std::to_string(per) + "*min(" + std::to_string(most_axes) + ", " + sum + ")");
            axis_loops_.push_back({k, counts});
          }
          return text;
        }
    }
    return "";
  }

  // The size of a call whose peer has an axis form: one size per axis (each fitted over the iterations along it:
  // exact, or as a face of the block along that axis when sizes are statistics), chosen by the axis expression.
  std::string axis_size_text(const std::vector<std::vector<std::int64_t>>& values, const std::vector<Vars>& vars,
                             const std::vector<std::string>& runs, nlohmann::json& fits) {
    std::map<std::int64_t, std::vector<Sample>> per_axis;
    for (std::size_t o = 0; o < values.size(); ++o) {
      std::map<std::int64_t, std::pair<double, int>> sum;
      if (o >= axis_.axes.size()) return "";
      for (std::size_t i = 0; i < values[o].size() && i < axis_.axes[o].size(); ++i) {
        auto& s = sum[axis_.axes[o][i]];
        s.first += static_cast<double>(values[o][i]);
        ++s.second;
      }
      for (const auto& [a, s] : sum) per_axis[a].push_back({vars[o], s.first / s.second, runs[o]});
    }
    std::map<std::int64_t, std::string> text;
    nlohmann::json parts = nlohmann::json::object();
    for (auto& [a, smp] : per_axis) {
      bool all_same = true;
      for (const Sample& x : smp) all_same = all_same && x.value == smp.front().value;
      std::string t;
      if (all_same) t = fmt_number(smp.front().value);
      if (t.empty()) {
        FitOptions fo;
        fo.integer = true;
        fo.allow_rank = true;
        const Fit g = fit_quantity(smp, params_, fo);
        if (g.exact && !has_decimal_literal(g.expr)) t = g.expr;
      }
      if (t.empty()) t = decomposition_fit(smp, params_, {}, made_3d_grid());
      if (t.empty() && sizes_are_statistics) {
        const std::string side = let_value(axis_.prefix + "_n" + std::to_string(a), topo_->lets());
        int d = 0;
        for (int j = 0; j < axis_.dims; ++j) d += let_value(axis_.prefix + "_n" + std::to_string(j), topo_->lets()) != "1";
        if (const std::optional<FaceFit> ff = face_fit(smp, params_, side, std::max(d, 1))) {
          t = integer_guard(ff->expr, "size");
          parts[std::to_string(a)] = {{"expr", ff->expr}, {"form", "face"}, {"max_rel_error", ff->max_rel_error}};
        }
      }
      if (t.empty()) return "";
      text[a] = t;
    }
    std::string t = text.rbegin()->second;
    for (auto it = std::next(text.rbegin()); it != text.rend(); ++it)
      t = "if(" + axis_.expr + " == " + std::to_string(it->first) + ", " + it->second + ", " + t + ")";
    fits["size"] = {{"expr", t}, {"form", "iteration axis"}, {"axis", axis_.expr}};
    if (!parts.empty()) fits["size"]["per_axis"] = parts;
    return t;
  }

  // A call's number: its iteration form (fit_indexed) when it changes with the iteration of its loop, else
  // `fallback()`; when no iteration form fits, iteration 0's number, with a warning and an ambiguity.
  template <class F>
  std::string with_iterations(const UNode& u, int decl, const char* field, const std::string& at, nlohmann::json& fits, F fallback) {
    const std::string t = fit_indexed(u, decl, field, fits);
    if (!t.empty()) return t;
    bool any = false;
    for (const Occ& o : u.occ)
      for (const Node* n : o.nodes) any = any || std::get<Call>(n->op).iter;
    std::string out = fallback();
    if (any && !loop_vars_.empty()) {
      bool varies = false;
      for (const Occ& o : u.occ)
        for (const Node* n : o.nodes) {
          const auto& iv = std::get<Call>(n->op).iter;
          const std::string f = field;
          if (iv) varies = varies || !(f == "peer" ? iv->peer : f == "tag" ? iv->tag : f == "size" ? iv->bytes : iv->root).empty();
        }
      if (varies) {
        const std::string msg = at + "/" + field + ": changes with the iteration of its loop, and no step function of " +
                                loop_vars_.back() + " with exact parts fits every rank of every run; written as iteration 0's";
        result.warnings.push_back(msg);
        result.ambiguities.push_back(msg);
      }
    }
    return out;
  }

  static double peer_of(const Node& n) { return std::get<Call>(n.op).peer; }
  static double tag_of(const Node& n) { return std::get<Call>(n.op).tag; }
  static double bytes_of(const Node& n) { return static_cast<double>(std::get<Call>(n.op).bytes); }

  void emit_call(const UNode& u, const std::string& at, nlohmann::json& fits, nlohmann::json& body) {
    const Call& c = std::get<Call>(u.occ.front().nodes.front()->op);
    const std::string site = site_text(u);
    // a call point of a phase carries its name; a wait, the name of the phase whose requests it completes
    // (the last labelled request in program order)
    std::string phase_name;
    if (auto ph = site_phase_.find(c.site); ph != site_phase_.end() && c.site != 0) phase_name = ph->second;
    const bool is_wait = c.kind == Kind::WAIT || c.kind == Kind::WAITALL || c.kind == Kind::WAITANY || c.kind == Kind::WAITSOME;
    if (is_wait && c.kind == Kind::WAIT && c.waits_on != 0) {
      if (auto ph = site_phase_.find(c.waits_on); ph != site_phase_.end()) phase_name = ph->second;
    } else if (is_wait) {
      phase_name = last_request_phase_;
    } else if (c.kind == Kind::ISEND || c.kind == Kind::ISSEND || c.kind == Kind::IRECV) {
      last_request_phase_ = phase_name;
    }
    const int decl = call_decl(u);
    if (decl < 0) result.warnings.push_back(at + ": its ranks call it on different communicators; written on world");
    const bool on_comm = decl > 0 && !trace::creates_comm(c.kind);
    auto finish = [&](nlohmann::json block) {
      if (on_comm && block.value("op", "") != "wait" && block.value("op", "") != "waitall") block["comm"] = topo_->name(decl);
      if (!fits.empty()) block["fit"] = fits;
      if (!phase_name.empty()) block["phase"] = phase_name;
      if (!site.empty()) block["provenance"] = {{"site", site}};
      body.push_back(std::move(block));
      fits = nlohmann::json::object();
    };
    if (!on_comm && c.comm != 0 && !trace::creates_comm(c.kind) && c.kind != Kind::COMM_FREE && c.kind != Kind::CART_SHIFT &&
        c.kind != Kind::DIMS_CREATE && !trace::is_annotation(c.kind)) {
      result.warnings.push_back(at + ": " + std::string(trace::kind_name(c.kind)) + " on communicator " +
                                std::to_string(c.comm) + " is replayed on all ranks (sub-communicators are not in format v1)");
    }
    if (const char* op = p2p_op_name(c.kind)) {
      nlohmann::json b = {{"op", op}};
      if (std::string nb = neighbour_peer_of(u); !nb.empty()) {
        b["peer"] = nb;
        fits["peer"] = {{"form", "neighbour list"}, {"exact", true}};
      } else {
        const bool recv = c.kind == Kind::RECV || c.kind == Kind::IRECV;
        b["peer"] = c.peer == trace::ANY ? nlohmann::json("any") : nlohmann::json(with_iterations(u, decl, "peer", at, fits, [&] {
          return fit_comm_rank(u, std::max(decl, 0), peer_of, at, fits, "peer",
                               recv ? Topology::Shift::pairs_recv : Topology::Shift::pairs_send); }));
      }
      face_ = neighbour_side(b["peer"]);
      b["size"] = with_iterations(u, decl, "size", at, fits, [&] {
        std::string g = level_size(u, false, fits);
        if (g.empty()) g = after_levels(u, bytes_of, at, fits);
        return g.empty() ? fit_call_int(u, bytes_of, at, fits, "size") : g; });
      face_ = {};
      if (c.kind == Kind::RECV || c.kind == Kind::IRECV) b["_recv_site"] = c.site;
      else send_sizes_[c.site].insert(b["size"].dump()), b["_send_site"] = c.site;
      note_size_spread(u, false, fits);
      b["tag"] = c.tag == trace::ANY ? nlohmann::json("any") : nlohmann::json(with_iterations(u, decl, "tag", at, fits, [&] {
        return fit_call_int(u, tag_of, at, fits, "tag"); }));
      if (!(c.kind == Kind::RECV || c.kind == Kind::IRECV)) send_sizes_by_tag_[{c.site, b["tag"].dump()}].insert(b["size"].dump());
      if ((c.kind == Kind::ISEND || c.kind == Kind::ISSEND || c.kind == Kind::IRECV) && request_names_.count(c.site))
        b["req"] = request_names_.at(c.site);
      finish(std::move(b));
      return;
    }
    if (c.kind == Kind::SENDRECV) {
      const std::string req = "sendrecv" + std::to_string(c.site % 100000);
      nlohmann::json s = {{"op", "isend"}, {"req", req + "s"}};
      // on periodic sides too short to tell +1 from -1: a shift's send goes against the last Sendrecv's send, its
      // receive against its send (Topology::Shift)
      s["peer"] = fit_comm_rank(u, std::max(decl, 0), peer_of, at, fits, "peer", Topology::Shift::against_last_send);
      face_ = neighbour_side(s["peer"]);
      s["size"] = level_size(u, false, fits);
      if (s["size"] == "") s["size"] = after_levels(u, bytes_of, at, fits);
      if (s["size"] == "") s["size"] = fit_call_int(u, bytes_of, at, fits, "size");
      face_ = {};
      send_sizes_[c.site].insert(s["size"].dump());
      s["_send_site"] = c.site;
      note_size_spread(u, false, fits);
      s["tag"] = fit_call_int(u, tag_of, at, fits, "tag");
      send_sizes_by_tag_[{c.site, s["tag"].dump()}].insert(s["size"].dump());
      finish(std::move(s));
      // the receive is the next block: its warnings and ambiguities name it, not the send
      const std::size_t slash = at.rfind('/');
      const std::string at_r = at.substr(0, slash + 1) + std::to_string(std::stoull(at.substr(slash + 1)) + 1);
      nlohmann::json r = {{"op", "irecv"}, {"req", req + "r"}};
      r["peer"] = c.peer2 == trace::ANY ? nlohmann::json("any")
                                        : nlohmann::json(fit_comm_rank(u, std::max(decl, 0), [](const Node& n) { return static_cast<double>(std::get<Call>(n.op).peer2); }, at_r, fits, "peer",
                                                                       Topology::Shift::against_last));
      face_ = neighbour_side(r["peer"]);
      const auto bytes2_of = [](const Node& n) { return static_cast<double>(std::get<Call>(n.op).bytes2); };
      r["size"] = level_size(u, true, fits);
      if (r["size"] == "") r["size"] = after_levels(u, bytes2_of, at_r, fits);
      if (r["size"] == "")
        r["size"] = fit_call_int(u, [](const Node& n) { return static_cast<double>(std::get<Call>(n.op).bytes2); }, at_r, fits, "size");
      face_ = {};
      r["_recv_site"] = c.site;
      note_size_spread(u, true, fits);
      r["tag"] = c.tag2 == trace::ANY ? nlohmann::json("any")
                                      : nlohmann::json(fit_call_int(u, [](const Node& n) { return static_cast<double>(std::get<Call>(n.op).tag2); }, at_r, fits, "tag"));
      finish(std::move(r));
      finish({{"op", "wait"}, {"req", req + "s"}});
      finish({{"op", "wait"}, {"req", req + "r"}});
      return;
    }
    if (c.kind == Kind::WAIT) {
      if (c.waits_on == 0 || !request_names_.count(c.waits_on)) return;  // completed nothing traced
      finish({{"op", "wait"}, {"req", request_names_.at(c.waits_on)}});
      return;
    }
    if (c.kind == Kind::WAITALL || c.kind == Kind::WAITANY || c.kind == Kind::WAITSOME) {
      if (c.kind != Kind::WAITALL)
        result.warnings.push_back(at + ": " + std::string(trace::kind_name(c.kind)) + " is replayed as a waitall");
      finish({{"op", "waitall"}});
      return;
    }
    if (const char* op = collective_op_name(c.kind)) {
      nlohmann::json b = {{"op", op}};
      if (c.kind != Kind::BARRIER) {
        std::vector<Sample> sizes = samples(u, bytes_of);
        if (c.kind == Kind::ALLTOALL) {  // the trace has everything sent; the skeleton per destination
          std::size_t i = 0;
          for (const Occ& o : u.occ)
            for (std::size_t k = 0; k < o.nodes.size(); ++k, ++i) {
              const Member& m = members_[shapes_[o.shape][k]];
              const int n = topo_->size_of(trun(m), m.rank, std::get<Call>(o.nodes[k]->op).comm);
              sizes[i].value /= n > 0 ? n : sizes[i].vars.at("P");
            }
        }
        b["size"] = c.kind == Kind::ALLTOALL ? fit_int(sizes, at, fits, "size", true)
                                             : with_iterations(u, decl, "size", at, fits, [&] { return fit_int(sizes, at, fits, "size", true); });
        note_size_spread(u, false, fits);
      }
      if (c.kind == Kind::BCAST || c.kind == Kind::REDUCE || c.kind == Kind::GATHER || c.kind == Kind::SCATTER)
        b["root"] = with_iterations(u, decl, "root", at, fits, [&] {
          return fit_comm_rank(u, std::max(decl, 0), [](const Node& n) { return static_cast<double>(std::get<Call>(n.op).root); }, at, fits, "root"); });
      finish(std::move(b));
      return;
    }
    switch (c.kind) {
      case Kind::INIT: case Kind::INIT_THREAD: case Kind::FINALIZE: case Kind::COMM_FREE: case Kind::REGION_BEGIN: case Kind::REGION_END:
      case Kind::DIMS_CREATE: case Kind::CART_SHIFT:
      case Kind::LOOP_BEGIN: case Kind::LOOP_ITER: case Kind::LOOP_END:
        return;
      default:
        if (trace::creates_comm(c.kind)) return;  // declared in `comms` (topology.hpp)
        result.warnings.push_back(at + ": " + std::string(trace::kind_name(c.kind)) + " has no skeleton op and is left out");
        return;
    }
  }
};

}  // namespace

namespace {
// The skeleton, expanded at every traced configuration, must pair its messages and collectives there
// (matching.hpp): where it does not, the builder folded the program wrongly, and the replay would stop at the
// very runs it was built from. Said in `matching` and in the skeleton's provenance.
void check_pairing(BuildResult& result, const std::vector<std::tuple<std::string, int, Vars>>& configurations) {
  Skeleton sk;
  try {
    sk = parse_skeleton(result.skeleton.dump(), result.skeleton.value("name", std::string("skeleton")));
  } catch (const SkeletonError& e) {
    result.matching.push_back(std::string("the skeleton does not load: ") + e.what());
    return;
  }
  for (const auto& [name, P, vars] : configurations) {
    std::map<std::string, double> params;
    for (const Param& p : sk.params)
      if (auto it = vars.find(p.name); it != vars.end()) params[p.name] = it->second;
    try {
      const auto rep = check_matching(sk, bind_parameters(sk, P, params), P);
      for (const std::string& t : rep.problems) result.matching.push_back(name + " (P=" + std::to_string(P) + "): " + t);
      if (rep.more_problems) result.matching.push_back(name + ": " + std::to_string(rep.more_problems) + " more");
    } catch (const SkeletonError& e) {
      result.matching.push_back(name + " (P=" + std::to_string(P) + "): " + e.what());
    }
  }
  if (!result.matching.empty()) result.skeleton["provenance"]["matching"] = result.matching;
}
}  // namespace

namespace {
// How many numbers a build wrote per traced run (no expression of rank, P and the parameters: per_run_int).
std::size_t per_run_quantities(const BuildResult& r) {
  return static_cast<std::size_t>(std::count_if(r.ambiguities.begin(), r.ambiguities.end(), [](const std::string& a) {
    return a.find("written per traced run") != std::string::npos;
  }));
}
}  // namespace

BuildResult build_skeleton(const std::vector<trace::Run>& given, const BuildOptions& options) {
  if (given.empty()) throw BuildError("no traced runs given");
  // on copies of the runs, which the builder then reads: polls that found nothing dropped (fold.hpp drop_polls), then
  // regions from call-site stacks (names included)
  std::vector<trace::Run> prepared = given;
  std::vector<std::string> region_warnings;
  std::size_t polls = 0, polled_runs = 0;
  for (trace::Run& run : prepared) {
    std::size_t here = 0;
    for (trace::RankTrace& r : run.ranks) here += drop_polls(r);
    polls += here;
    polled_runs += here > 0;
  }
  if (polls > 0)
    region_warnings.push_back(std::to_string(polls) + " MPI_Test/Testany/Testsome/Testall calls that completed nothing and MPI_Iprobe "
                              "calls that found no message, in " + std::to_string(polled_runs) + " of the " +
                              std::to_string(prepared.size()) + " runs, are left out as polling: the waiting they did is the wait "
                              "(or receive) that ended it, the work between them is kept");
  if (options.stack_regions) {
    for (trace::Run& run : prepared) {
      const StackRegionReport rep = add_stack_regions(run);
      if (!rep.by_address.empty()) {
        std::string list;
        for (const std::string& n : rep.by_address) list += (list.empty() ? "" : ", ") + n;
        region_warnings.push_back(run.dir + ": " + rep.module_file + " has no symbol for some functions that call MPI; their regions are named by the return address into their caller: " + list);
      }
    }
  }
  const std::vector<trace::Run>& runs = prepared;
  // parameters: numeric, the same names in every run
  std::set<std::string> names;
  for (const auto& [k, v] : runs.front().params) names.insert(k);
  std::vector<RunInfo> infos;
  BuildResult result;
  for (const trace::Run& run : runs) {
    if (!run.complete()) throw BuildError(run.dir + ": the trace is not complete: " + run.problems.front());
    std::set<std::string> these;
    RunInfo info;
    info.name = run.dir;
    info.P = run.P;
    info.run = &run;
    info.vars["P"] = run.P;
    for (const auto& [k, v] : run.params) {
      these.insert(k);
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !std::isfinite(x))
        throw BuildError(run.dir + "/run.json: parameter " + k + " = " + v + " is not a number (skeleton parameters are numbers)");
      info.vars[k] = x;
    }
    if (these != names)
      throw BuildError(run.dir + "/run.json: parameters differ from " + runs.front().dir +
                       "'s: every run must give the same --param names");
    for (const trace::RankTrace& r : run.ranks) {
      info.ranks.push_back(fold_rank(r, options.fold));
      result.trace_events += r.events.size();
    }
    infos.push_back(std::move(info));
  }
  bool sizes_vary = false;
  NeighbourLists neighbour_lists;
  {  // iterations that differ only in message sizes (vary.hpp), then neighbour lists (neighbours.hpp)
    std::vector<std::vector<RankProgram>> folded;
    for (RunInfo& info : infos) folded.push_back(std::move(info.ranks));
    std::vector<int> ps;
    for (const RunInfo& info : infos) ps.push_back(info.P);
    std::vector<std::vector<RankProgram>> exact = folded;
    SizesChoice sizes = choose_sizes(runs, folded, options.fold, options.vary_sizes);
    if (sizes.vary && options.vary_sizes < 0 && sizes.vary_shapes >= sizes.exact_shapes) {
      // a stencil's sizes differ by neighbour (face, edge, corner) and level, not by data: with neighbour
      // lists and no fewer rank shapes, sizes stay exact (hpcg from TI traces, where every level's halo is
      // one call point, folds 17088 nodes exactly and 7040 with sizes as statistics, which are then means)
      std::vector<std::vector<RankProgram>> probe = exact;
      if (!tag_neighbour_lists(ps, probe).by_site.empty()) {
        folded = std::move(exact);
        sizes.vary = false;
        sizes.note = "message sizes vary between iterations, but the program loops over neighbour lists and sizes as statistics "
                     "give no fewer rank shapes (" + std::to_string(sizes.exact_shapes) + "): folded with exact sizes";
      }
    }
    {  // a time-step loop the program does not annotate, whose steps differ by data (steps.hpp)
      FoldOptions fo = options.fold;
      fo.vary_sizes = fo.vary_sizes || sizes.vary;
      const StepsChoice steps = choose_step_site(runs, folded, fo);
      if (!steps.note.empty()) region_warnings.push_back(steps.note);
      if (!steps.note.empty() && !steps.collective) sizes.vary = true;  // folded with sizes as statistics
    }
    neighbour_lists = tag_neighbour_lists(ps, folded);
    // runs of calls over consecutive ranks (a root's sends to every rank)
    index_call_runs(folded, [&](std::uint64_t site) { return neighbour_lists.by_site.count(site) > 0; });
    if (!neighbour_lists.by_site.empty() && options.stack_regions) {
      // regions from call-site stacks open and close around the calls of a list (a function called between
      // them), so that ranks with different lists fold and align the rest differently (hpcg): without them
      BuildOptions again = options;
      again.stack_regions = false;
      BuildResult r = build_skeleton(given, again);
      r.warnings.insert(r.warnings.begin(), "the program loops over neighbour lists: built without regions from call-site stacks "
                                            "(they cut the lists' calls apart; mkskel build --no-stack-regions does the same)");
      return r;
    }
    for (std::size_t i = 0; i < infos.size(); ++i) infos[i].ranks = std::move(folded[i]);
    if (!sizes.note.empty()) region_warnings.push_back(sizes.note);
    sizes_vary = sizes.vary;
  }
  std::sort(infos.begin(), infos.end(), [](const RunInfo& a, const RunInfo& b) {
    if (a.P != b.P) return a.P < b.P;
    return a.vars != b.vars ? a.vars < b.vars : a.name < b.name;
  });
  for (std::size_t i = 1; i < infos.size(); ++i)
    if (infos[i].vars == infos[i - 1].vars)
      throw BuildError(infos[i].name + " and " + infos[i - 1].name + " were traced with the same P and parameters (" +
                       describe_vars(infos[i].vars) + "): give each configuration once");
  std::vector<std::tuple<std::string, int, Vars>> configurations;
  for (const RunInfo& info : infos) configurations.emplace_back(info.name, info.P, info.vars);
  Builder b(std::move(infos), std::vector<std::string>(names.begin(), names.end()), options);
  b.sizes_are_statistics = sizes_vary;
  b.neighbours = std::move(neighbour_lists);
  b.result.warnings.insert(b.result.warnings.end(), region_warnings.begin(), region_warnings.end());
  nlohmann::json sk = b.build();
  b.result.skeleton = std::move(sk);
  b.result.trace_events = result.trace_events;
  check_pairing(b.result, configurations);
  const bool states_work = std::any_of(given.begin(), given.end(), [](const trace::Run& run) {
    return std::any_of(run.ranks.begin(), run.ranks.end(), [](const trace::RankTrace& t) {
      return std::any_of(t.events.begin(), t.events.end(), [](const trace::Event& e) { return e.gap_flops > 0; });
    });
  });
  const std::size_t per_run = per_run_quantities(b.result);
  if (per_run > 0 && options.fold.index_loops) {
    // Consecutive loops merged into one loop over their iterations (FoldOptions::index_loops; SUMMA's panels,
    // one loop per owner) on some ranks only: a wavefront's ranks inside the grid run two sweeps in opposite
    // directions with the same calls (Sweep3D's octants: receive from rank - 1, send to rank + 1, then the
    // reverse), which merge into one loop whose peers step at the middle, while ranks on an edge skip a receive
    // or a send in one sweep, so theirs stay apart: the sweeps no longer align, and counts and peers are
    // written per traced run. TI traces folded by where their work is split a sweep whose last block's work
    // runs into the next sweep's first (a corner rank that only receives, then only sends) at another place
    // than the other ranks. Folded without merging (and, for TI traces, with every gap alike), the build that
    // writes the fewest numbers per run and pairs as well is kept.
    std::vector<BuildOptions> tries(1, options);
    tries.back().fold.index_loops = false;
    if (states_work && options.fold.work_identity) {
      tries.push_back(tries.back());
      tries.back().fold.work_identity = false;
    }
    std::optional<BuildResult> best;
    std::size_t best_per_run = per_run;
    const char* how = "";
    for (const BuildOptions& again : tries) {
      BuildResult r = build_skeleton(given, again);
      const std::size_t r_per_run = per_run_quantities(r);
      if (r_per_run < best_per_run && r.matching.size() <= b.result.matching.size()) {
        best_per_run = r_per_run;
        best = std::move(r);
        how = again.fold.work_identity ? "without merging consecutive loops into indexed loops"
                                       : "without merging consecutive loops into indexed loops, gaps with and without work alike";
      }
    }
    if (best) {
      best->warnings.insert(best->warnings.begin(), std::string("folded ") + how + ": folded as before, " + std::to_string(per_run) +
                                                        " number(s) had no expression of rank, P and the parameters (" +
                                                        std::to_string(best_per_run) + " now)");
      return std::move(*best);
    }
  }
  if (!b.result.matching.empty() && options.fold.work_identity && states_work) {
    // TI traces folded by where their work is may align differently across ranks (NPB CG's row and column
    // reductions, with and without work between them, deadlock at the traced runs): the coarser folding, when
    // it pairs
    BuildOptions again = options;
    again.fold.work_identity = false;
    BuildResult r = build_skeleton(given, again);
    if (r.matching.empty()) {
      r.warnings.insert(r.warnings.begin(), "folded with gaps with and without work alike: folded apart, the skeleton did not pair "
                                            "its messages at the traced runs (" + std::to_string(b.result.matching.size()) +
                                            " problem(s), the first: " + b.result.matching.front() + ")");
      return r;
    }
  }
  return std::move(b.result);
}

}  // namespace mksim::skeletons::builder
