// CPG construction (seed 000 s.3, fig. 2) on mksim traces. The per-run pass reads every rank's events
// once (steps 1 and 3 share it: no global clock is used, only each rank's own event order), the
// components come from a union-find over call points (step 2), the ancestors from the folded programs
// (step 4), the type and depth from the per-rank order of each phase's events (step 5).
#include "skeletons/builder/cpg.hpp"

#include "skeletons/trace/reader.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace mksim::skeletons::builder {

std::string phase_type_name(PhaseType type) {
  switch (type) {
    case PhaseType::SYNCHRONOUS: return "synchronous";
    case PhaseType::PIPELINE: return "pipeline";
    case PhaseType::COLLECTIVE: return "collective";
  }
  return "?";
}

std::uint64_t Anchor::iterations() const {
  std::uint64_t n = 1;
  for (std::uint64_t c : counts) n *= c;
  return n;
}

bool intersects(const std::vector<int>& a, const std::vector<int>& b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return true;
    if (*i < *j) ++i;
    else ++j;
  }
  return false;
}

namespace {

using trace::Kind;

// What identifies a call point: the call site; without one (SimGrid TI imports) the MPI function, the
// communicator and the tag as posted, which are the same on every rank running the same code.
struct PointKey {
  Kind kind{};
  std::uint64_t site = 0;
  std::uint32_t comm = 0;
  std::int32_t tag = 0;
  auto operator<=>(const PointKey&) const = default;
};

PointKey point_key(Kind kind, std::uint64_t site, std::uint32_t comm, std::int32_t posted_tag) {
  if (site != 0) return {kind, site, 0, 0};
  return {kind, 0, comm, trace::is_collective(kind) ? trace::NO_RANK : posted_tag};
}

bool is_p2p_call(Kind k) { return trace::is_send(k) || k == Kind::RECV || k == Kind::IRECV; }

class UnionFind {
 public:
  int add() {
    parent_.push_back(static_cast<int>(parent_.size()));
    return parent_.back();
  }
  int find(int x) {
    while (parent_[static_cast<std::size_t>(x)] != x) {
      int& p = parent_[static_cast<std::size_t>(x)];
      p = parent_[static_cast<std::size_t>(p)];
      x = p;
    }
    return x;
  }
  void unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    parent_[static_cast<std::size_t>(b)] = a;  // the earliest point is the root: deterministic
  }

 private:
  std::vector<int> parent_;
};

// How one rank uses one call point.
struct Use {
  std::uint64_t count = 0;
  std::size_t first = 0;  // event index of the first use
  std::int64_t bytes_total = 0;
  std::int64_t bytes_min = std::numeric_limits<std::int64_t>::max();
  std::int64_t bytes_max = std::numeric_limits<std::int64_t>::min();
};

struct Message {
  int from, to;
  int send_point, recv_point;
  std::size_t send_idx, recv_idx;
  std::int64_t bytes;
};

// A point-to-point event of a phase on one rank, in the rank's event order.
struct Item {
  std::size_t idx;
  bool send;
};

struct PointInfo {
  PointKey key;
  int first_rank = 0;
  bool sends = false;
  bool receives = false;
};

// Everything the single pass over the traces collects.
struct Pass {
  std::map<PointKey, int> index;
  std::vector<PointInfo> points;
  UnionFind uf;
  std::vector<std::map<int, Use>> uses;  // per rank: point -> use
  std::vector<Message> messages;
  std::uint64_t unmatched = 0;
  bool any_site = false;

  int point(const PointKey& key, int rank) {
    auto [it, fresh] = index.try_emplace(key, static_cast<int>(points.size()));
    if (fresh) {
      points.push_back({key, rank, false, false});
      uf.add();
    }
    return it->second;
  }
  void use(int rank, int p, std::size_t idx, std::int64_t bytes) {
    Use& u = uses[static_cast<std::size_t>(rank)][p];
    if (u.count++ == 0) u.first = idx;
    u.bytes_total += bytes;
    u.bytes_min = std::min(u.bytes_min, bytes);
    u.bytes_max = std::max(u.bytes_max, bytes);
  }
};

// Steps 1 (matching, with the completion links) and the collectives' instance links. The messages are
// trace::match_messages'; this pass gives each point-to-point call its call point.
Pass scan(const trace::Run& run, const CpgOptions& options) {
  Pass pass;
  pass.uses.resize(run.ranks.size());
  std::vector<std::vector<int>> point_at(run.ranks.size());  // per rank, per event: its call point (-1 none)
  std::map<std::uint32_t, std::vector<int>> instance_point;  // comm -> point of the k-th collective seen

  for (const trace::RankTrace& t : run.ranks) {
    std::vector<int>& at = point_at[static_cast<std::size_t>(t.rank)];
    at.assign(t.events.size(), -1);
    std::map<std::uint32_t, int> request_point;       // pending isend/irecv request id -> its point
    std::vector<int> completed_points;                // points of the requests the current wait completed
    std::map<std::uint32_t, std::size_t> collectives_seen;  // comm -> collectives so far on this rank
    const auto flush_wait = [&] {
      for (std::size_t k = 1; k < completed_points.size(); ++k) pass.uf.unite(completed_points[0], completed_points[k]);
      completed_points.clear();
    };
    for (std::size_t i = 0; i < t.events.size(); ++i) {
      const trace::Event& e = t.events[i];
      if (e.kind != Kind::COMPLETE) flush_wait();
      if (e.site != 0 && (is_p2p_call(e.kind) || trace::is_collective(e.kind))) pass.any_site = true;
      if (trace::is_send(e.kind)) {
        const int p = pass.point(point_key(e.kind, e.site, e.comm, e.tag), t.rank);
        pass.points[static_cast<std::size_t>(p)].sends = true;
        if (e.kind == Kind::SENDRECV) pass.points[static_cast<std::size_t>(p)].receives = true;
        pass.use(t.rank, p, i, e.bytes);
        at[i] = p;
        if (e.request != 0) request_point[e.request] = p;
      } else if (e.kind == Kind::RECV || e.kind == Kind::IRECV) {
        const std::int32_t posted_tag = e.kind == Kind::RECV && e.posted_any_tag() ? trace::ANY : e.tag;
        const int p = pass.point(point_key(e.kind, e.site, e.comm, posted_tag), t.rank);
        pass.points[static_cast<std::size_t>(p)].receives = true;
        pass.use(t.rank, p, i, e.bytes);
        at[i] = p;
        if (e.kind == Kind::IRECV && e.request != 0) request_point[e.request] = p;
      } else if (e.kind == Kind::COMPLETE && e.request != 0) {
        if (auto it = request_point.find(e.request); it != request_point.end()) {
          if (options.link_completions) completed_points.push_back(it->second);
          request_point.erase(it);
        }
      } else if (trace::is_collective(e.kind)) {
        const int p = pass.point(point_key(e.kind, e.site, e.comm, trace::NO_RANK), t.rank);
        pass.use(t.rank, p, i, e.bytes);
        std::vector<int>& seen = instance_point[e.comm];
        const std::size_t k = collectives_seen[e.comm]++;
        if (k < seen.size()) pass.uf.unite(seen[k], p);  // the k-th collective on a communicator: one operation
        else seen.push_back(p);
      }
    }
    flush_wait();
  }
  const trace::Matching matching = trace::match_messages(run);
  for (const trace::MatchedMessage& m : matching.pairs) {
    const int sp = point_at[static_cast<std::size_t>(m.send.rank)][m.send.call];
    const int rp = point_at[static_cast<std::size_t>(m.recv.rank)][m.recv.call];
    pass.uf.unite(sp, rp);
    pass.messages.push_back({m.send.rank, m.recv.rank, sp, rp, m.send.call, m.recv.done, m.send.bytes});
  }
  pass.unmatched = matching.unpaired.size();
  return pass;
}

// Strongly connected components (Kosaraju, iterative): comp[v] for every node, numbered in a
// topological order of the condensation; `count` receives their number.
std::vector<int> strong_components(const std::vector<std::vector<int>>& out, std::size_t& count) {
  const std::size_t n = out.size();
  std::vector<std::vector<int>> in(n);
  for (std::size_t u = 0; u < n; ++u)
    for (int v : out[u]) in[static_cast<std::size_t>(v)].push_back(static_cast<int>(u));
  std::vector<char> seen(n, 0);
  std::vector<int> finish;
  for (std::size_t s = 0; s < n; ++s) {
    if (seen[s]) continue;
    std::vector<std::pair<int, std::size_t>> stack{{static_cast<int>(s), 0}};
    seen[s] = 1;
    while (!stack.empty()) {
      auto& [u, k] = stack.back();
      const auto& adj = out[static_cast<std::size_t>(u)];
      if (k < adj.size()) {
        const int v = adj[k++];
        if (!seen[static_cast<std::size_t>(v)]) {
          seen[static_cast<std::size_t>(v)] = 1;
          stack.push_back({v, 0});
        }
      } else {
        finish.push_back(u);
        stack.pop_back();
      }
    }
  }
  std::vector<int> comp(n, -1);
  count = 0;
  for (auto it = finish.rbegin(); it != finish.rend(); ++it) {
    if (comp[static_cast<std::size_t>(*it)] >= 0) continue;
    const int c = static_cast<int>(count++);
    std::vector<int> stack{*it};
    comp[static_cast<std::size_t>(*it)] = c;
    while (!stack.empty()) {
      const int u = stack.back();
      stack.pop_back();
      for (int v : in[static_cast<std::size_t>(u)])
        if (comp[static_cast<std::size_t>(v)] < 0) {
          comp[static_cast<std::size_t>(v)] = c;
          stack.push_back(v);
        }
    }
  }
  return comp;
}

struct Chain {
  std::vector<int> ranks;
  int edges = 0;
  bool cyclic = false;
};

// Longest path (in edges) of a directed graph on ranks 0..P-1; on a cycle, the longest path of the
// condensation where a strongly connected set of k ranks counts k-1 edges (an upper bound).
Chain longest_chain(int P, const std::set<std::pair<int, int>>& edges) {
  const auto n = static_cast<std::size_t>(P);
  std::vector<std::vector<int>> out(n), in(n);
  for (const auto& [u, v] : edges) {
    if (u == v) continue;
    out[static_cast<std::size_t>(u)].push_back(v);
    in[static_cast<std::size_t>(v)].push_back(u);
  }
  // Kahn's order
  std::vector<int> indeg(n, 0), topo;
  for (std::size_t v = 0; v < n; ++v) indeg[v] = static_cast<int>(in[v].size());
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (std::size_t v = 0; v < n; ++v)
    if (indeg[v] == 0) ready.push(static_cast<int>(v));
  while (!ready.empty()) {
    const int u = ready.top();
    ready.pop();
    topo.push_back(u);
    for (int v : out[static_cast<std::size_t>(u)])
      if (--indeg[static_cast<std::size_t>(v)] == 0) ready.push(v);
  }
  Chain chain;
  if (topo.size() == n) {
    std::vector<int> dist(n, 0), pred(n, -1);
    for (int u : topo)
      for (int v : out[static_cast<std::size_t>(u)]) {
        const auto vi = static_cast<std::size_t>(v);
        const int d = dist[static_cast<std::size_t>(u)] + 1;
        if (d > dist[vi] || (d == dist[vi] && u < pred[vi])) {
          dist[vi] = d;
          pred[vi] = u;
        }
      }
    int end = 0;
    for (std::size_t v = 0; v < n; ++v)
      if (dist[v] > dist[static_cast<std::size_t>(end)]) end = static_cast<int>(v);
    chain.edges = dist[static_cast<std::size_t>(end)];
    if (chain.edges > 0) {
      for (int v = end; v >= 0; v = pred[static_cast<std::size_t>(v)]) chain.ranks.push_back(v);
      std::reverse(chain.ranks.begin(), chain.ranks.end());
    }
    return chain;
  }
  chain.cyclic = true;
  std::size_t ncomp = 0;
  const std::vector<int> comp = strong_components(out, ncomp);
  std::vector<int> size(ncomp, 0);
  for (std::size_t v = 0; v < n; ++v) ++size[static_cast<std::size_t>(comp[v])];
  // components come out in topological order of the condensation
  std::vector<int> best(ncomp, 0);
  for (std::size_t c = 0; c < ncomp; ++c) best[c] = size[c] - 1;
  std::vector<std::vector<int>> members(ncomp);
  for (std::size_t v = 0; v < n; ++v) members[static_cast<std::size_t>(comp[v])].push_back(static_cast<int>(v));
  for (std::size_t c = 0; c < ncomp; ++c)
    for (int u : members[c])
      for (int v : out[static_cast<std::size_t>(u)]) {
        const auto cv = static_cast<std::size_t>(comp[static_cast<std::size_t>(v)]);
        if (cv != c) best[cv] = std::max(best[cv], best[c] + 1 + size[cv] - 1);
      }
  chain.edges = *std::max_element(best.begin(), best.end());
  return chain;
}

// The innermost common loop of a set of nodes: common prefix of their parent paths.
struct AnchorAcc {
  bool set = false;
  std::vector<std::uint32_t> path;
  std::vector<std::uint64_t> counts;
  void add(const std::vector<std::uint32_t>& p, const std::vector<std::uint64_t>& c) {
    if (!set) {
      path = p;
      counts = c;
      set = true;
      return;
    }
    std::size_t k = 0;
    while (k < path.size() && k < p.size() && path[k] == p[k]) ++k;
    path.resize(k);
    counts.resize(k);
  }
};

// Step 4 on one rank: every Call node at a point of a phase narrows that phase's ancestor.
void walk_anchors(const Seq& seq, const Pass& pass, const std::vector<int>& phase_of_point,
                  std::vector<std::uint32_t>& path, std::vector<std::uint64_t>& counts, std::map<int, AnchorAcc>& acc) {
  for (std::size_t i = 0; i < seq.size(); ++i) {
    const Node& node = seq[i];
    if (const auto* c = std::get_if<Call>(&node.op)) {
      if (!is_p2p_call(c->kind) && !trace::is_collective(c->kind)) continue;
      const auto it = pass.index.find(point_key(c->kind, c->site, c->comm, c->tag));
      if (it == pass.index.end()) continue;
      const int ph = phase_of_point[static_cast<std::size_t>(it->second)];
      if (ph >= 0) acc[ph].add(path, counts);
    } else if (const auto* l = std::get_if<Loop>(&node.op)) {
      path.push_back(static_cast<std::uint32_t>(i));
      counts.push_back(l->count);
      walk_anchors(l->body, pass, phase_of_point, path, counts, acc);
      path.pop_back();
      counts.pop_back();
    }
  }
}

void check_folded(const trace::Run& run, const std::vector<RankProgram>& folded) {
  if (folded.size() != run.ranks.size())
    throw std::invalid_argument("build_cpg: " + std::to_string(folded.size()) + " folded programs for " +
                                std::to_string(run.ranks.size()) + " ranks");
  for (std::size_t r = 0; r < folded.size(); ++r) {
    const trace::RankTrace& t = run.ranks[r];
    const auto calls = static_cast<std::uint64_t>(std::count_if(
        t.events.begin(), t.events.end(), [](const trace::Event& e) { return e.kind != Kind::COMPLETE; }));
    if (t.rank != static_cast<int>(r) || folded[r].rank != t.rank || folded[r].events != calls)
      throw std::invalid_argument("build_cpg: folded program " + std::to_string(r) + " (rank " +
                                  std::to_string(folded[r].rank) + ", " + std::to_string(folded[r].events) +
                                  " calls) is not the fold of rank " + std::to_string(t.rank) + " (" +
                                  std::to_string(calls) + " calls)");
  }
}

// Per phase under construction.
struct Draft {
  Phase phase;
  std::vector<int> points;             // internal point indices, ascending
  std::map<int, std::vector<Item>> items;  // rank -> its point-to-point events of the phase
  std::vector<int> ranks;              // ranks using any of its points
  std::map<int, std::size_t> first;    // rank -> first event index at one of its points
};

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(ranks[i]);
    if (j > i) s += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return s.empty() ? "-" : s;
}

// Program order without a global clock: on each rank, phases in the order of their first events;
// these orders merged topologically, ties (phases no rank orders) by lowest rank, then that rank's
// first event. Phases that ranks order both ways (a cycle) are placed together, by the same key.
std::vector<std::size_t> program_order(const std::vector<Draft>& drafts, int P) {
  const auto n = drafts.size();
  std::vector<std::vector<int>> succ(n);
  for (int r = 0; r < P; ++r) {
    std::vector<std::pair<std::size_t, std::size_t>> firsts;  // (first event, draft)
    for (std::size_t k = 0; k < n; ++k)
      if (auto it = drafts[k].first.find(r); it != drafts[k].first.end()) firsts.push_back({it->second, k});
    std::sort(firsts.begin(), firsts.end());
    for (std::size_t i = 0; i + 1 < firsts.size(); ++i) succ[firsts[i].second].push_back(static_cast<int>(firsts[i + 1].second));
  }
  for (auto& s : succ) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  using OrderKey = std::tuple<int, std::size_t, std::size_t>;
  const auto key_of = [&](std::size_t k) {
    const int r = drafts[k].ranks.empty() ? P : drafts[k].ranks.front();
    const std::size_t f = drafts[k].ranks.empty() ? 0 : drafts[k].first.at(r);
    return OrderKey{r, f, k};
  };
  std::size_t ncomp = 0;
  const std::vector<int> comp = strong_components(succ, ncomp);
  std::vector<std::vector<std::size_t>> members(ncomp);
  for (std::size_t k = 0; k < n; ++k) members[static_cast<std::size_t>(comp[k])].push_back(k);
  std::vector<int> indeg(ncomp, 0);
  std::vector<std::set<std::size_t>> csucc(ncomp);
  for (std::size_t k = 0; k < n; ++k)
    for (int s : succ[k]) {
      const auto a = static_cast<std::size_t>(comp[k]), b = static_cast<std::size_t>(comp[static_cast<std::size_t>(s)]);
      if (a != b && csucc[a].insert(b).second) ++indeg[b];
    }
  std::vector<OrderKey> ckey(ncomp);
  for (std::size_t c = 0; c < ncomp; ++c) {
    std::sort(members[c].begin(), members[c].end(), [&](std::size_t a, std::size_t b) { return key_of(a) < key_of(b); });
    ckey[c] = key_of(members[c].front());
  }
  std::priority_queue<std::pair<OrderKey, std::size_t>, std::vector<std::pair<OrderKey, std::size_t>>, std::greater<>> ready;
  for (std::size_t c = 0; c < ncomp; ++c)
    if (indeg[c] == 0) ready.push({ckey[c], c});
  std::vector<std::size_t> order;
  while (!ready.empty()) {
    const std::size_t c = ready.top().second;
    ready.pop();
    order.insert(order.end(), members[c].begin(), members[c].end());
    for (std::size_t d : csucc[c])
      if (--indeg[d] == 0) ready.push({ckey[d], d});
  }
  return order;
}

}  // namespace

PhaseGraph build_cpg(const trace::Run& run, const std::vector<RankProgram>& folded, const CpgOptions& options) {
  check_folded(run, folded);
  const int P = static_cast<int>(run.ranks.size());
  Pass pass = scan(run, options);

  // Step 2: components with at least one message (point-to-point) or one call (collective)
  std::vector<int> phase_of_point(pass.points.size(), -1);
  std::map<int, int> phase_of_root;
  std::vector<Draft> drafts;
  std::vector<char> has_message(pass.points.size(), 0);
  for (const Message& m : pass.messages) has_message[static_cast<std::size_t>(pass.uf.find(m.send_point))] = 1;
  for (std::size_t p = 0; p < pass.points.size(); ++p) {
    const int root = pass.uf.find(static_cast<int>(p));
    const bool collective = trace::is_collective(pass.points[p].key.kind);
    if (!collective && !has_message[static_cast<std::size_t>(root)]) continue;
    auto [it, fresh] = phase_of_root.try_emplace(root, static_cast<int>(drafts.size()));
    if (fresh) {
      drafts.emplace_back();
      drafts.back().phase.type = collective ? PhaseType::COLLECTIVE : PhaseType::SYNCHRONOUS;
    }
    phase_of_point[p] = it->second;
    drafts[static_cast<std::size_t>(it->second)].points.push_back(static_cast<int>(p));
  }

  // Step 3: send and receive lists, pairs, per-rank event order
  std::vector<std::map<std::pair<int, int>, PhasePair>> pairs(drafts.size());
  for (const Message& m : pass.messages) {
    const auto k = static_cast<std::size_t>(phase_of_point[static_cast<std::size_t>(m.send_point)]);
    Draft& d = drafts[k];
    PhasePair& pp = pairs[k][{m.from, m.to}];
    if (pp.messages++ == 0) {
      pp.from = m.from;
      pp.to = m.to;
      pp.bytes_min = pp.bytes_max = m.bytes;
    }
    pp.bytes_total += m.bytes;
    pp.bytes_min = std::min(pp.bytes_min, m.bytes);
    pp.bytes_max = std::max(pp.bytes_max, m.bytes);
    d.items[m.from].push_back({m.send_idx, true});
    d.items[m.to].push_back({m.recv_idx, false});
  }
  for (int r = 0; r < P; ++r)
    for (const auto& [p, u] : pass.uses[static_cast<std::size_t>(r)]) {
      const int ph = phase_of_point[static_cast<std::size_t>(p)];
      if (ph < 0) continue;
      Draft& d = drafts[static_cast<std::size_t>(ph)];
      if (d.ranks.empty() || d.ranks.back() != r) d.ranks.push_back(r);
      auto [it, fresh] = d.first.try_emplace(r, u.first);
      if (!fresh) it->second = std::min(it->second, u.first);
      d.phase.occurrences = std::max(d.phase.occurrences, u.count);
      if (d.phase.type == PhaseType::COLLECTIVE) {
        if (d.phase.messages == 0) {
          d.phase.bytes_min = u.bytes_min;
          d.phase.bytes_max = u.bytes_max;
        }
        d.phase.messages += u.count;
        d.phase.bytes_total += u.bytes_total;
        d.phase.bytes_min = std::min(d.phase.bytes_min, u.bytes_min);
        d.phase.bytes_max = std::max(d.phase.bytes_max, u.bytes_max);
      }
    }
  std::vector<std::vector<double>> compute_before(static_cast<std::size_t>(P));  // prefix sums of compute gaps
  for (int r = 0; r < P; ++r) {
    const auto& ev = run.ranks[static_cast<std::size_t>(r)].events;
    auto& pre = compute_before[static_cast<std::size_t>(r)];
    pre.resize(ev.size());
    double sum = 0, prev_exit = 0;
    bool started = false;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if (ev[i].kind != Kind::COMPLETE) {
        if (started) sum += ev[i].gap_after(prev_exit);
        started = true;
        prev_exit = ev[i].t_exit;
      }
      pre[i] = sum;
    }
  }

  for (std::size_t k = 0; k < drafts.size(); ++k) {
    Draft& d = drafts[k];
    Phase& ph = d.phase;
    for (int p : d.points) {
      const PointInfo& info = pass.points[static_cast<std::size_t>(p)];
      if (info.sends) ph.send_points.push_back(p);
      if (info.receives || ph.type == PhaseType::COLLECTIVE) ph.recv_points.push_back(p);
    }
    if (ph.type == PhaseType::COLLECTIVE) {
      ph.senders = ph.receivers = d.ranks;
      const PointKey& key = pass.points[static_cast<std::size_t>(d.points.front())].key;
      ph.collective = key.kind;
      ph.comm = key.site != 0 ? run.ranks[static_cast<std::size_t>(d.ranks.front())]
                                    .events[d.first.at(d.ranks.front())]
                                    .comm
                              : key.comm;
      ph.depth = 0;
      continue;
    }
    for (auto& [key, pp] : pairs[k]) {
      ph.pairs.push_back(pp);
      ph.messages += pp.messages;
      if (ph.pairs.size() == 1) {
        ph.bytes_min = pp.bytes_min;
        ph.bytes_max = pp.bytes_max;
      }
      ph.bytes_total += pp.bytes_total;
      ph.bytes_min = std::min(ph.bytes_min, pp.bytes_min);
      ph.bytes_max = std::max(ph.bytes_max, pp.bytes_max);
    }
    // Step 3 (fig. 2): a rank whose first send of the phase comes after one of its receives of it
    std::vector<int> starters;  // ranks that send before they receive: data into them does not gate them
    ph.type_decided = false;
    for (auto& [r, items] : d.items) {
      std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.idx < b.idx; });
      const auto fs = std::find_if(items.begin(), items.end(), [](const Item& i) { return i.send; });
      const auto fr = std::find_if(items.begin(), items.end(), [](const Item& i) { return !i.send; });
      if (fs != items.end()) ph.senders.push_back(r);
      if (fr != items.end()) ph.receivers.push_back(r);
      if (fs != items.end() && fr != items.end()) ph.type_decided = true;
      if (fs != items.end() && fr != items.end() && fr->idx < fs->idx) ph.receive_first.push_back(r);
      else if (fs != items.end()) starters.push_back(r);
    }
    ph.type = ph.receive_first.empty() ? PhaseType::SYNCHRONOUS : PhaseType::PIPELINE;
    // Step 5: the longest chain of pairs
    std::set<std::pair<int, int>> edges;
    for (const PhasePair& pp : ph.pairs)
      if (!std::binary_search(starters.begin(), starters.end(), pp.to)) edges.insert({pp.from, pp.to});
    const Chain chain = longest_chain(P, edges);
    ph.chain = chain.ranks;
    ph.cyclic = chain.cyclic;
    ph.depth = ph.type == PhaseType::PIPELINE ? chain.edges : 1;
    // s.4.1: computation between send and receive (synchronous) or receive and send (pipeline)
    const bool opens_with_send = ph.type == PhaseType::SYNCHRONOUS;
    for (const auto& [r, items] : d.items) {
      const auto& pre = compute_before[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i + 1 < items.size(); ++i)
        if (items[i].send == opens_with_send && items[i + 1].send != opens_with_send)
          ph.overlap_s.add(pre[items[i + 1].idx] - pre[items[i].idx]);
    }
  }

  // Step 4: ancestors in the folded programs
  for (int r = 0; r < P; ++r) {
    std::map<int, AnchorAcc> acc;
    std::vector<std::uint32_t> path;
    std::vector<std::uint64_t> counts;
    walk_anchors(folded[static_cast<std::size_t>(r)].seq, pass, phase_of_point, path, counts, acc);
    for (auto& [ph, a] : acc) drafts[static_cast<std::size_t>(ph)].phase.anchors.push_back({r, a.path, a.counts});
  }

  const std::vector<std::size_t> order = program_order(drafts, P);

  PhaseGraph g;
  g.P = P;
  g.sites = pass.any_site;
  g.unmatched = pass.unmatched;
  std::vector<int> point_id(pass.points.size(), -1);
  for (std::size_t p = 0; p < pass.points.size(); ++p) {
    if (phase_of_point[p] < 0) continue;
    const PointInfo& info = pass.points[p];
    CallPoint cp;
    cp.id = static_cast<int>(g.points.size());
    cp.kind = info.key.kind;
    cp.site = info.key.site;
    cp.comm = info.key.comm;
    cp.tag = info.key.tag;
    if (cp.site != 0) {
      cp.where = trace::describe_site(run.ranks[static_cast<std::size_t>(info.first_rank)], cp.site);
    } else {
      cp.where = "comm " + std::to_string(cp.comm);
      if (!trace::is_collective(cp.kind)) cp.where = "tag " + (cp.tag == trace::ANY ? std::string("any") : std::to_string(cp.tag)) + " " + cp.where;
    }
    point_id[p] = cp.id;
    g.points.push_back(std::move(cp));
  }
  for (std::size_t i = 0; i < order.size(); ++i) {
    Phase ph = std::move(drafts[order[i]].phase);
    ph.id = static_cast<int>(i);
    for (int& p : ph.send_points) p = point_id[static_cast<std::size_t>(p)];
    for (int& p : ph.recv_points) p = point_id[static_cast<std::size_t>(p)];
    g.phases.push_back(std::move(ph));
  }
  for (std::size_t i = 0; i + 1 < g.phases.size(); ++i)
    g.order.push_back({static_cast<int>(i), static_cast<int>(i + 1),
                       !intersects(g.phases[i].receivers, g.phases[i + 1].senders)});
  return g;
}

PhaseGraph build_cpg(const trace::Run& run, const CpgOptions& options) {
  std::vector<RankProgram> folded;
  folded.reserve(run.ranks.size());
  for (const trace::RankTrace& t : run.ranks) folded.push_back(fold_rank(t));
  return build_cpg(run, folded, options);
}

std::string describe(const PhaseGraph& graph) {
  std::ostringstream o;
  o << "communication phase graph: " << graph.phases.size() << " phases, P=" << graph.P << ", call points by "
    << (graph.sites ? "call site" : "function, communicator and tag");
  if (graph.unmatched) o << ", " << graph.unmatched << " unmatched messages ignored";
  o << '\n';
  const auto point_text = [&](int id) {
    const CallPoint& cp = graph.points[static_cast<std::size_t>(id)];
    return std::string(trace::kind_name(cp.kind)) + " at " + cp.where;
  };
  char buf[160];
  for (const Phase& ph : graph.phases) {
    o << "phase " << ph.id << ": ";
    if (ph.type == PhaseType::COLLECTIVE) {
      o << "collective " << trace::kind_name(ph.collective) << " comm " << ph.comm;
    } else {
      o << phase_type_name(ph.type);
      if (!ph.type_decided) o << " (undecided: no rank both sends and receives)";
      o << ", depth " << ph.depth;
      if (!ph.chain.empty()) {
        o << ", chain ";
        for (std::size_t i = 0; i < ph.chain.size(); ++i) o << (i ? ">" : "") << ph.chain[i];
      }
      if (ph.cyclic) o << " (cyclic)";
    }
    o << ", occurrences " << ph.occurrences << '\n';
    if (ph.type == PhaseType::COLLECTIVE) {
      for (int p : ph.recv_points) o << "  call " << point_text(p) << '\n';
      o << "  ranks " << ranks_text(ph.senders) << ", calls " << ph.messages << ", bytes " << ph.bytes_min;
      if (ph.bytes_max != ph.bytes_min) o << ".." << ph.bytes_max;
      o << '\n';
    } else {
      for (int p : ph.send_points) o << "  send " << point_text(p) << '\n';
      for (int p : ph.recv_points) o << "  recv " << point_text(p) << '\n';
      o << "  SL " << ranks_text(ph.senders) << "  RL " << ranks_text(ph.receivers);
      if (!ph.receive_first.empty()) o << "  receive first " << ranks_text(ph.receive_first);
      o << '\n';
      o << "  messages " << ph.messages << ", bytes " << ph.bytes_min;
      if (ph.bytes_max != ph.bytes_min) o << ".." << ph.bytes_max;
      o << ", pairs";
      for (const PhasePair& pp : ph.pairs) o << ' ' << pp.from << '>' << pp.to << 'x' << pp.messages;
      o << '\n';
      std::snprintf(buf, sizeof buf, "  overlap %.3g s mean over %llu windows (%s)\n", ph.overlap_s.mean(),
                    static_cast<unsigned long long>(ph.overlap_s.n),
                    ph.type == PhaseType::PIPELINE ? "receive to send" : "send to receive");
      o << buf;
    }
    // ancestors, ranks with the same one together
    std::map<std::pair<std::vector<std::uint32_t>, std::vector<std::uint64_t>>, std::vector<int>> by_anchor;
    for (const Anchor& a : ph.anchors) by_anchor[{a.path, a.counts}].push_back(a.rank);
    for (const auto& [key, ranks] : by_anchor) {
      o << "  ancestor ";
      if (key.first.empty()) o << "program";
      for (std::size_t i = 0; i < key.first.size(); ++i)
        o << (i ? " > " : "") << "loop@" << key.first[i] << " x" << key.second[i];
      o << " on ranks " << ranks_text(ranks) << '\n';
    }
  }
  for (const PhaseLink& l : graph.order)
    o << "order " << l.from << " -> " << l.to << ": " << (l.independent ? "independent" : "dependent") << '\n';
  return o.str();
}

}  // namespace mksim::skeletons::builder
