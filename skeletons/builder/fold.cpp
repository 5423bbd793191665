#include "skeletons/builder/fold.hpp"

#include <algorithm>
#include <numeric>
#include <functional>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace mksim::skeletons::builder {

void Stats::add(double x) {
  ++n;
  sum += x;
  sum2 += x * x;
  min = std::min(min, x);
  max = std::max(max, x);
}

void Stats::merge(const Stats& o) {
  n += o.n;
  sum += o.sum;
  sum2 += o.sum2;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
}

double Stats::stddev() const {
  if (n < 2) return 0.0;
  const double m = mean();
  return std::sqrt(std::max(0.0, sum2 / static_cast<double>(n) - m * m));
}

void QuantileSketch::add(double x) {
  if (levels_.empty()) levels_.emplace_back();
  levels_[0].push_back(x);
  if (levels_[0].size() > CAPACITY) compact();
}

void QuantileSketch::merge(const QuantileSketch& o) {
  if (o.levels_.empty()) return;
  if (levels_.size() < o.levels_.size()) levels_.resize(o.levels_.size());
  for (std::size_t h = 0; h < o.levels_.size(); ++h) levels_[h].insert(levels_[h].end(), o.levels_[h].begin(), o.levels_[h].end());
  compact();
}

void QuantileSketch::compact() {
  for (std::size_t h = 0; h < levels_.size(); ++h) {
    if (levels_[h].size() <= CAPACITY) continue;
    std::vector<double>& level = levels_[h];
    std::sort(level.begin(), level.end());
    // an odd value out stays at this level (alternately the smallest and the largest): weights add up
    double spare = 0;
    const bool has_spare = level.size() % 2 == 1;
    if (has_spare) {
      spare = odd_ ? level.back() : level.front();
      level.erase(odd_ ? level.end() - 1 : level.begin());
    }
    std::vector<double> up;
    up.reserve(level.size() / 2);
    for (std::size_t i = odd_ ? 1 : 0; i < level.size(); i += 2) up.push_back(level[i]);
    odd_ = !odd_;
    level.clear();
    if (has_spare) level.push_back(spare);
    if (h + 1 == levels_.size()) levels_.emplace_back();
    std::vector<double>& next = levels_[h + 1];  // (levels_ may have grown: take the reference afterwards)
    next.insert(next.end(), up.begin(), up.end());
  }
}

std::uint64_t QuantileSketch::count() const {
  std::uint64_t n = 0;
  for (std::size_t h = 0; h < levels_.size(); ++h) n += static_cast<std::uint64_t>(levels_[h].size()) << h;
  return n;
}

std::vector<std::pair<double, std::uint64_t>> QuantileSketch::weighted() const {
  std::vector<std::pair<double, std::uint64_t>> out;
  for (std::size_t h = 0; h < levels_.size(); ++h)
    for (double v : levels_[h]) out.emplace_back(v, std::uint64_t{1} << h);
  std::sort(out.begin(), out.end());
  return out;
}

double weighted_quantile(const std::vector<std::pair<double, double>>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  double total = 0;
  for (const auto& [v, w] : sorted) total += w;
  // the order statistic at (fractional) position t of the expanded sample, 0 .. total - 1
  const double t = std::clamp(p, 0.0, 1.0) * std::max(0.0, total - 1);
  auto at = [&](double pos) {
    double before = 0;
    for (const auto& [v, w] : sorted) {
      if (pos < before + w) return v;
      before += w;
    }
    return sorted.back().first;
  };
  const double lo = std::floor(t);
  return at(lo) + (at(lo + 1 > total - 1 ? lo : lo + 1) - at(lo)) * (t - lo);
}

Compute Compute::of(double duration, double flops) {
  Compute c;
  c.seconds.add(duration);
  c.flops.add(flops);
  c.works = flops > 0;
  c.first = duration;
  return c;
}

void Compute::merge(const Compute& o) {
  if (seconds.n == 0) {  // nothing yet (a node whose statistics were cleared): o's are all there is
    *this = o;
    return;
  }
  if (o.seconds.n > 0) {
    rest.add(o.first);
    rest_sketch.add(o.first);
  }
  rest.merge(o.rest);
  rest_sketch.merge(o.rest_sketch);
  seconds.merge(o.seconds);
  flops.merge(o.flops);
}

void Call::merge_sizes(const Call& o) {
  sizes.merge(o.sizes);
  sizes2.merge(o.sizes2);
  seq_lost = seq_lost || o.seq_lost || seq.size() + o.seq.size() > SEQUENCE_MAX;
  if (seq_lost) {
    std::vector<std::int64_t>().swap(seq);
    std::vector<std::int64_t>().swap(seq2);
    return;
  }
  seq.insert(seq.end(), o.seq.begin(), o.seq.end());
  seq2.insert(seq2.end(), o.seq2.begin(), o.seq2.end());
}

bool Call::same(const Call& o) const {
  const bool sizes_free = vary && o.vary;
  return kind == o.kind && site == o.site && comm == o.comm && peer == o.peer && tag == o.tag &&
         (sizes_free || bytes == o.bytes) && root == o.root && peer2 == o.peer2 && tag2 == o.tag2 &&
         (sizes_free || bytes2 == o.bytes2) && waits_on == o.waits_on &&
         (iter == o.iter || (iter && o.iter && iter->peer == o.iter->peer && iter->tag == o.iter->tag &&
                             iter->bytes == o.iter->bytes && iter->root == o.iter->root));
}

namespace {

constexpr std::uint64_t PRIME = 1099511628211ull;

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * PRIME;
}

std::uint64_t hash_of(const Call& c) {
  std::uint64_t h = 0x43414c4cull;
  for (std::uint64_t v : {static_cast<std::uint64_t>(c.kind), c.site, std::uint64_t{c.comm},
                          static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.peer)),
                          static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.tag)),
                          static_cast<std::uint64_t>(c.vary ? -1 : c.bytes),
                          static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.root)),
                          static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.peer2)),
                          static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.tag2)),
                          static_cast<std::uint64_t>(c.vary ? -1 : c.bytes2), c.waits_on})
    h = mix(h, v);
  if (c.iter)
    for (const auto* v : {&c.iter->peer, &c.iter->tag, &c.iter->bytes, &c.iter->root}) {
      h = mix(h, v->size());
      for (const std::int64_t x : *v) h = mix(h, static_cast<std::uint64_t>(x));
    }
  return h;
}

void rehash(Node& n) {
  if (const auto* c = std::get_if<Call>(&n.op)) {
    n.hash = hash_of(*c);
  } else if (const auto* k = std::get_if<Compute>(&n.op)) {
    n.hash = 0x434f4d50ull ^ (k->works ? 1u : 0u);
  } else {
    const Loop& l = std::get<Loop>(n.op);
    std::uint64_t h = l.branch ? mix(0x4252414eull, 1) : mix(0x4c4f4f50ull, l.count);
    for (const Node& b : l.body) h = mix(h, b.hash);
    n.hash = h;
  }
}

// folds b's statistics into a (same(a, b) holds)
void merge_into(Node& a, const Node& b) {
  if (auto* c = std::get_if<Call>(&a.op)) {
    const Call& o = std::get<Call>(b.op);
    c->inside.merge(o.inside);
    c->merge_sizes(o);
  } else if (auto* k = std::get_if<Compute>(&a.op)) {
    k->merge(std::get<Compute>(b.op));
  } else {
    Loop& l = std::get<Loop>(a.op);
    const Loop& o = std::get<Loop>(b.op);
    for (std::size_t i = 0; i < l.body.size(); ++i) merge_into(l.body[i], o.body[i]);
    if (l.branch) {
      l.count += o.count;
      l.reached += o.reached;
      l.pattern = mix(l.pattern, o.pattern);
      l.anti = mix(l.anti, o.anti);
    }
  }
}

bool range_same(const Seq& s, std::size_t a, const Seq& t, std::size_t b, std::size_t w) {
  for (std::size_t i = 0; i < w; ++i)
    if (!same(s[a + i], t[b + i])) return false;
  return true;
}

// Whether s[a, a + w) opens and closes its mktrace.h regions itself (loops inside are balanced already).
// A loop body must be: else a program whose first iteration differs folds into a rotated body
// (region end, region begin, ...) and the region can no longer become one block of the skeleton.
bool regions_balanced(const Seq& s, std::size_t a, std::size_t w) {
  long depth = 0;
  for (std::size_t i = a; i < a + w; ++i)
    if (const auto* c = std::get_if<Call>(&s[i].op)) {
      if (c->kind == trace::Kind::REGION_BEGIN) ++depth;
      else if (c->kind == trace::Kind::REGION_END && --depth < 0) return false;
    }
  return depth == 0;
}

bool has_iter(const Seq& s, std::size_t a, std::size_t w) {
  for (std::size_t i = a; i < a + w; ++i) {
    if (const auto* c = std::get_if<Call>(&s[i].op); c && c->kind == trace::Kind::LOOP_ITER) return true;
    if (const auto* l = std::get_if<Loop>(&s[i].op); l && has_iter(l->body, 0, l->body.size())) return true;
  }
  return false;
}

// Whether s[a, a + w), when it holds iterations of an annotated loop, starts where one does (its first node
// that is not compute is a LOOP_ITER, or a loop, whose body starts so). A loop body must: else iterations that
// differ (a data-dependent call) fold into rotated bodies that cut iterations in two, and the annotated loop
// can no longer be cut into its iterations (branch_annotated_loop).
bool iterations_aligned(const Seq& s, std::size_t a, std::size_t w) {
  if (!has_iter(s, a, w)) return true;
  for (std::size_t i = a; i < a + w; ++i) {
    if (std::holds_alternative<Compute>(s[i].op)) continue;
    // a loop of iterations; not a loop inside one (the last part of an iteration, the window starting after
    // its LOOP_ITER: LAMMPS' reverse communication, a loop over the swaps, before the next step's check)
    if (const auto* l = std::get_if<Loop>(&s[i].op)) return has_iter(l->body, 0, l->body.size()) && iterations_aligned(l->body, 0, l->body.size());
    return std::get<Call>(s[i].op).kind == trace::Kind::LOOP_ITER;
  }
  return true;
}

// One folding step at the end of s; true when something was folded.
bool fold_tail(Seq& s, std::size_t window) {
  const std::size_t n = s.size();
  const std::uint64_t last = s[n - 1].hash;
  // a further iteration of the loop just before the last w nodes
  for (std::size_t w = 1; w <= window && w < n; ++w) {
    Node& prev = s[n - 1 - w];
    auto* loop = std::get_if<Loop>(&prev.op);
    if (!loop || loop->body.size() != w || loop->body.back().hash != last) continue;
    if (!range_same(loop->body, 0, s, n - w, w)) continue;
    for (std::size_t i = 0; i < w; ++i) merge_into(loop->body[i], s[n - w + i]);
    ++loop->count;
    s.resize(n - w);
    rehash(s.back());
    return true;
  }
  // the last w nodes repeat the w before them: a new loop of 2
  for (std::size_t w = 1; w <= window && 2 * w <= n; ++w) {
    if (s[n - 1 - w].hash != last) continue;
    if (!range_same(s, n - 2 * w, s, n - w, w)) continue;
    if (!regions_balanced(s, n - w, w) || !iterations_aligned(s, n - w, w)) continue;
    Node loop_node;
    Loop loop;
    loop.count = 2;
    loop.body.assign(s.begin() + static_cast<std::ptrdiff_t>(n - 2 * w), s.begin() + static_cast<std::ptrdiff_t>(n - w));
    for (std::size_t i = 0; i < w; ++i) merge_into(loop.body[i], s[n - w + i]);
    loop_node.op = std::move(loop);
    rehash(loop_node);
    s.resize(n - 2 * w);
    s.push_back(std::move(loop_node));
    return true;
  }
  return false;
}

void append(Seq& s, Node n, std::size_t window) {
  rehash(n);
  s.push_back(std::move(n));
  while (s.size() >= 2 && fold_tail(s, window)) {
  }
}

// ---- data-dependent branches in annotated loops ----

bool is_iter(const Node& n, std::int32_t tag) {
  const auto* c = std::get_if<Call>(&n.op);
  return c && c->kind == trace::Kind::LOOP_ITER && c->tag == tag;
}

bool contains_iter(const Seq& s, std::int32_t tag) {
  for (const Node& n : s)
    if (is_iter(n, tag)) return true;
    else if (const auto* l = std::get_if<Loop>(&n.op); l && contains_iter(l->body, tag)) return true;
  return false;
}

// The node without statistics (no durations, branches not reached): its structure only.
void clear_stats(Node& n) {
  if (auto* c = std::get_if<Call>(&n.op)) {
    c->inside = Stats{};
  } else if (auto* k = std::get_if<Compute>(&n.op)) {
    const bool works = k->works;
    *k = Compute{};
    k->works = works;
  } else {
    Loop& l = std::get<Loop>(n.op);
    if (l.branch) l.count = l.reached = 0;
    for (Node& b : l.body) clear_stats(b);
  }
}

// Whether s starts with an iteration of the annotated loop `tag`: its LOOP_ITER, possibly after a compute
// gap, or a loop whose body does.
bool starts_iteration(const Seq& s, std::int32_t tag) {
  std::size_t i = !s.empty() && std::holds_alternative<Compute>(s[0].op) ? 1 : 0;
  if (i >= s.size()) return false;
  if (is_iter(s[i], tag)) return true;
  const auto* l = std::get_if<Loop>(&s[i].op);
  return i == 0 && l && !l->branch && starts_iteration(l->body, tag);
}

// The nodes of one iteration (from its LOOP_ITER on) and how many executions their statistics stand for.
struct Iteration {
  Seq nodes;
  std::uint64_t weight = 1;
};

// Cuts the nodes of an annotated loop (after the nodes before its first iteration) into iterations, loops of
// iterations unrolled once (their nodes already merge `count` executions: the weight); false when the
// folding does not cut at iteration starts (a loop whose body starts inside an iteration).
bool cut_iterations(const Seq& s, std::size_t from, std::int32_t tag, std::uint64_t weight, std::vector<Iteration>& out,
                    bool& open) {
  bool after_loop = false;
  for (std::size_t i = from; i < s.size(); ++i) {
    const Node& n = s[i];
    if (is_iter(n, tag) || (std::holds_alternative<Compute>(n.op) && i + 1 < s.size() && is_iter(s[i + 1], tag))) {
      // an iteration starts at its LOOP_ITER, with the compute gap before it (folding keeps them together)
      out.push_back({{n}, weight});
      if (!is_iter(n, tag)) out.back().nodes.push_back(s[++i]);
      open = true;
      continue;
    }
    if (const auto* l = std::get_if<Loop>(&n.op); l && contains_iter(l->body, tag)) {
      if (l->branch || !starts_iteration(l->body, tag)) return false;
      open = false;
      if (!cut_iterations(l->body, 0, tag, weight * l->count, out, open)) return false;
      open = false;
      after_loop = true;
      continue;
    }
    if (!open && after_loop && !out.empty()) {
      // the loop's last execution goes on here (the iteration had a part the others skip), once per
      // execution of this sequence (`weight` times): those executions apart, with no statistics of their own
      // (the loop's nodes have them all)
      if (out.back().weight < weight) return false;
      if (out.back().weight > weight) {
        Iteration last = out.back();
        for (Node& x : last.nodes) clear_stats(x);
        last.weight = weight;
        out.back().weight -= weight;
        out.push_back(std::move(last));
      }
      open = true;
    }
    after_loop = false;
    if (!open) return false;
    out.back().nodes.push_back(n);
  }
  return true;
}

bool seq_same(const Seq& a, const Seq& b) { return a.size() == b.size() && range_same(a, 0, b, 0, a.size()); }

// An iteration as units: each call or loop with the compute gap before it (a gap goes with what follows it, so
// that a skipped call takes its gap along), and a gap at the end alone.
using Units = std::vector<Seq>;

Units units_of(const Seq& s) {
  Units u;
  Seq cur;
  for (const Node& n : s) {
    cur.push_back(n);
    if (!std::holds_alternative<Compute>(n.op)) u.push_back(std::move(cur)), cur.clear();
  }
  if (!cur.empty()) u.push_back(std::move(cur));
  return u;
}

bool units_same(const Units& a, const Units& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!seq_same(a[i], b[i])) return false;
  return true;
}

// The (kind, site, tag) of a unit's call (FoldOptions::step_optional); kind -1 for a unit with no call at its end.
CallKey unit_key(const Seq& unit) {
  const auto* c = unit.empty() ? nullptr : std::get_if<Call>(&unit.back().op);
  if (!c) return {-1, 0, 0};
  return {static_cast<int>(c->kind), c->site, c->tag};
}

// The shortest common supersequence of a and b (units by `same`), a's units first where both orders are possible;
// with `order` (FoldOptions::step_order), the unit the program calls first.
Units supersequence(const Units& a, const Units& b,
                    const std::map<CallKey, std::size_t>* order = nullptr) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::size_t> L((n + 1) * (m + 1), 0);  // L[i][j]: longest common subsequence of a[i..], b[j..]
  auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return L[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) = seq_same(a[i], b[j]) ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  auto b_first = [&](const Seq& x, const Seq& y) {
    if (!order) return false;
    const auto ox = order->find(unit_key(x)), oy = order->find(unit_key(y));
    return ox != order->end() && oy != order->end() && oy->second < ox->second;
  };
  Units out;
  std::size_t i = 0, j = 0;
  while (i < n && j < m) {
    if (seq_same(a[i], b[j])) {
      out.push_back(a[i++]);
      ++j;
    } else if (at(i + 1, j) > at(i, j + 1) || (at(i + 1, j) == at(i, j + 1) && !b_first(a[i], b[j]))) {
      out.push_back(a[i++]);
    } else {
      out.push_back(b[j++]);
    }
  }
  out.insert(out.end(), a.begin() + static_cast<std::ptrdiff_t>(i), a.end());
  out.insert(out.end(), b.begin() + static_cast<std::ptrdiff_t>(j), b.end());
  return out;
}

// Leftmost positions of `sub`'s units in `super`; empty when `sub` is not a subsequence.
std::vector<std::size_t> embed(const Units& sub, const Units& super) {
  std::vector<std::size_t> pos;
  std::size_t j = 0;
  for (const Seq& x : sub) {
    while (j < super.size() && !seq_same(super[j], x)) ++j;
    if (j == super.size()) return {};
    pos.push_back(j++);
  }
  return pos;
}

bool bodies_compatible(const Seq& a, const Seq& b);
bool merge_loops(Seq& s, std::size_t a, std::size_t b);

// A loop of `count` over `body`, hashed.
Node loop_node(Seq body, std::uint64_t count) {
  Loop l;
  l.count = count;
  l.body = std::move(body);
  Node n;
  n.op = std::move(l);
  rehash(n);
  return n;
}

// s[first, b) replaced by n.
void replace_range(Seq& s, std::size_t first, std::size_t b, Node n) {
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(first), s.begin() + static_cast<std::ptrdiff_t>(b));
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(first), std::move(n));
}

// The iterations of an annotated loop's nodes in the order they ran: loops of iterations (folded by a period,
// as a master's tasks to its P - 1 workers in turn) unrolled `count` times, the repeats without statistics
// (the loop's nodes have them all); false when the nodes do not cut at iteration starts or there are more
// than `cap` iterations.
bool expand_iterations(const Seq& s, std::int32_t tag, bool stats, std::vector<Seq>& out, std::size_t cap) {
  auto copy = [&](const Node& n) {
    Node x = n;
    if (!stats) clear_stats(x);
    return x;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    const Node& n = s[i];
    if (is_iter(n, tag) || (std::holds_alternative<Compute>(n.op) && i + 1 < s.size() && is_iter(s[i + 1], tag))) {
      out.push_back({copy(n)});
      if (!is_iter(n, tag)) out.back().push_back(copy(s[++i]));
      if (out.size() > cap) return false;
      continue;
    }
    if (const auto* l = std::get_if<Loop>(&n.op); l && contains_iter(l->body, tag)) {
      if (l->branch || !starts_iteration(l->body, tag) || l->count > cap) return false;
      for (std::uint64_t r = 0; r < l->count; ++r)
        if (!expand_iterations(l->body, tag, stats && r == 0, out, cap)) return false;
      continue;
    }
    if (out.empty()) return false;
    out.back().push_back(copy(n));
  }
  return true;
}

// The annotated loop's iterations s[first, b) as one indexed loop (merge_loops) when they are the same but for
// numbers that step or cycle with the iteration (step_form, cycle_form): the loop the program wrote, whose
// peers a folding by period or per peer would cut apart; a single iteration as a loop of one. False (s
// unchanged) otherwise.
bool index_annotated_loop(Seq& s, std::size_t first, std::size_t b, std::int32_t tag) {
  constexpr std::size_t CAP = 4096;
  const Seq region(s.begin() + static_cast<std::ptrdiff_t>(first), s.begin() + static_cast<std::ptrdiff_t>(b));
  std::vector<Seq> its;
  if (!expand_iterations(region, tag, true, its, CAP) || its.empty()) return false;
  if (its.size() == 1) {  // a loop that ran once (a master with one worker) is still the program's loop
    if (region.size() == 1 && std::holds_alternative<Loop>(region.front().op)) return false;
    replace_range(s, first, b, loop_node(std::move(its.front()), 1));
    return true;
  }
  for (const Seq& it : its)
    if (!bodies_compatible(its.front(), it)) return false;
  Seq tmp;
  for (Seq& it : its) tmp.push_back(loop_node(std::move(it), 1));
  if (!merge_loops(tmp, 0, tmp.size())) return false;
  replace_range(s, first, b, std::move(tmp.front()));
  return true;
}

// One annotated loop's nodes s[a + 1, b) (between its LOOP_BEGIN and LOOP_END) as one loop with branches,
// when its iterations differ by parts that some of them skip; false (s unchanged) otherwise.
bool branch_annotated_loop(Seq& s, std::size_t a, std::size_t b, std::int32_t tag, const FoldOptions& options) {
  // a time-step loop cut at a point-to-point call (FoldOptions::step_data)
  const bool data = options.step_data && tag == STEP_LOOP_TAG;
  std::size_t first = a + 1;  // nodes before the first iteration stay where they are
  while (first < b && !is_iter(s[first], tag) && !std::holds_alternative<Loop>(s[first].op) &&
         !(first + 1 < b && std::holds_alternative<Compute>(s[first].op) && is_iter(s[first + 1], tag)))
    ++first;
  if (first == b) return false;
  // the compute gap before LOOP_END follows the last iteration: it stays after the loop too
  if (b > first + 1 && std::holds_alternative<Compute>(s[b - 1].op)) --b;
  if (index_annotated_loop(s, first, b, tag)) return true;
  if (first + 1 == b && std::holds_alternative<Loop>(s[first].op)) return false;  // folded already
  const Seq region(s.begin() + static_cast<std::ptrdiff_t>(first), s.begin() + static_cast<std::ptrdiff_t>(b));
  std::vector<Iteration> its;
  bool open = false;
  if (!cut_iterations(region, 0, tag, 1, its, open) || its.size() < 2) return false;
  // the distinct iterations, longest first, and the shortest sequence that contains them all
  std::vector<Units> units;
  for (const Iteration& it : its) units.push_back(units_of(it.nodes));
  // A time-step loop found by its first call (FoldOptions::step_site) ends where the program does: its last
  // iteration runs on into what follows the loop (the last step's output, the run's statistics). The longest
  // kind of the other iterations that it starts with stays in the loop; the rest goes after it.
  Seq after;
  if (tag == STEP_LOOP_TAG && its.size() >= 3) {
    Units& last = units.back();
    bool unique = true;
    std::size_t keep = 0;
    for (std::size_t i = 0; i + 1 < units.size(); ++i) {
      const Units& u = units[i];
      unique = unique && !units_same(u, last);
      if (u.size() <= last.size() && u.size() > keep &&
          std::equal(u.begin(), u.end(), last.begin(), [](const Seq& x, const Seq& y) { return seq_same(x, y); }))
        keep = u.size();
    }
    if (unique && data) {  // steps differ by data: the last one keeps what other steps also call
      std::set<CallKey> known;
      for (std::size_t i = 0; i + 1 < units.size(); ++i)
        for (const Seq& u : units[i]) known.insert(unit_key(u));
      keep = 0;
      while (keep < last.size() && known.count(unit_key(last[keep]))) ++keep;
    }
    if (unique) {
      for (std::size_t k = keep; k < last.size(); ++k) after.insert(after.end(), last[k].begin(), last[k].end());
      last.resize(keep);
      if (keep == 0) units.pop_back(), its.pop_back();
    }
  }
  std::vector<const Units*> kinds;
  for (const Units& u : units) {
    bool known = false;
    for (const Units* k : kinds) known = known || units_same(*k, u);
    if (!known) kinds.push_back(&u);
  }
  if (kinds.size() < (data ? 1u : 2u) || kinds.size() > (data ? 1024u : 64u)) return false;
  std::stable_sort(kinds.begin(), kinds.end(), [](const Units* x, const Units* y) { return x->size() > y->size(); });
  Units super = *kinds.front();
  for (const Units* k : kinds)
    if (embed(*k, super).size() != k->size()) super = supersequence(super, *k, data ? &options.step_order : nullptr);
  if (super.size() > 4 * kinds.front()->size()) return false;
  // which iterations run each unit of the supersequence, and its merged statistics
  std::vector<std::vector<bool>> runs_unit(super.size(), std::vector<bool>(its.size(), false));
  std::vector<Seq> merged(super.size());
  for (std::size_t i = 0; i < its.size(); ++i) {
    const std::vector<std::size_t> pos = embed(units[i], super);
    if (pos.size() != units[i].size()) return false;
    for (std::size_t k = 0; k < pos.size(); ++k) {
      runs_unit[pos[k]][i] = true;
      Seq& m = merged[pos[k]];
      if (m.empty()) m = units[i][k];
      else
        for (std::size_t x = 0; x < m.size(); ++x) merge_into(m[x], units[i][k][x]);
    }
  }
  const std::vector<bool> all(its.size(), true);
  std::uint64_t total = 0;
  for (const Iteration& it : its) total += it.weight;
  Loop loop;
  loop.count = total;
  for (std::size_t j = 0; j < super.size();) {
    // a step's MPI_Waitall on the migrations it happened to post: at every step (it completes every pending
    // request, none as well), so that no posted send is left pending where a replayed step drew otherwise
    const bool waits = data && std::get<0>(unit_key(merged[j])) == static_cast<int>(trace::Kind::WAITALL);
    if (waits || (runs_unit[j] == all && !(data && options.step_optional.count(unit_key(merged[j]))))) {
      loop.body.insert(loop.body.end(), merged[j].begin(), merged[j].end());
      ++j;
      continue;
    }
    std::size_t k = j;
    Loop br;
    br.branch = true;
    br.reached = total;
    bool calls = false;
    while (k < super.size() && runs_unit[k] == runs_unit[j] && (!data || k == j)) {
      for (const Node& x : merged[k]) calls = calls || !std::holds_alternative<Compute>(x.op);  // a call, or a loop of them
      br.body.insert(br.body.end(), merged[k].begin(), merged[k].end());
      ++k;
    }
    if (!calls && data) {  // a gap some steps have after their last call: the loop's own
      loop.body.insert(loop.body.end(), br.body.begin(), br.body.end());
      j = k;
      continue;
    }
    if (!calls) return false;  // iterations differ only in compute gaps: nothing to branch on
    // a part run only by the first iterations or only by the last ones is a phase of the loop (a warm-up
    // step, a final one), not a data-dependent branch: the loop stays as folded, exactly
    std::size_t switches = 0;
    for (std::size_t i = 1; i < its.size(); ++i) switches += runs_unit[j][i] != runs_unit[j][i - 1] ? 1 : 0;
    if (switches < 2 && !data) return false;
    br.pattern = br.anti = 0x50415454ull;
    for (std::size_t i = 0; i < its.size(); ++i) {
      if (runs_unit[j][i]) br.count += its[i].weight;
      br.pattern = mix(br.pattern, (its[i].weight << 1) | (runs_unit[j][i] ? 1u : 0u));
      br.anti = mix(br.anti, (its[i].weight << 1) | (runs_unit[j][i] ? 0u : 1u));
    }
    Node n;
    n.op = std::move(br);
    rehash(n);
    loop.body.push_back(std::move(n));
    j = k;
  }
  Node n;
  n.op = std::move(loop);
  rehash(n);
  replace_range(s, first, b, std::move(n));
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(first + 1), after.begin(), after.end());
  return true;
}

// Every innermost annotated loop of s (and of its loops' bodies), from the last one back.
void branch_annotated_loops(Seq& s, const FoldOptions& options) {
  for (Node& n : s)
    if (auto* l = std::get_if<Loop>(&n.op)) {
      branch_annotated_loops(l->body, options);
      rehash(n);
    }
  for (std::size_t b = s.size(); b-- > 0;) {
    const auto* end = std::get_if<Call>(&s[b].op);
    if (!end || end->kind != trace::Kind::LOOP_END) continue;
    std::size_t a = b;
    while (a-- > 0) {
      const auto* c = std::get_if<Call>(&s[a].op);
      if (c && c->kind == trace::Kind::LOOP_BEGIN) break;
    }
    if (a == SIZE_MAX) break;
    if (std::get<Call>(s[a].op).tag != end->tag) continue;  // an outer loop around others: left as folded
    branch_annotated_loop(s, a, b, end->tag, options);
    b = a;
  }
}

}  // namespace

bool same(const Node& a, const Node& b) {
  if (a.hash != b.hash || a.op.index() != b.op.index()) return false;
  if (const auto* c = std::get_if<Call>(&a.op)) return c->same(std::get<Call>(b.op));
  if (const auto* k = std::get_if<Compute>(&a.op)) return k->works == std::get<Compute>(b.op).works;
  const Loop& x = std::get<Loop>(a.op);
  const Loop& y = std::get<Loop>(b.op);
  return x.branch == y.branch && (x.branch || x.count == y.count) && x.body.size() == y.body.size() &&
         range_same(x.body, 0, y.body, 0, x.body.size());
}

namespace {
// vary_sizes: each call's bytes become the mean of the sizes it stands for (rounded: a size is whole bytes)
void settle_sizes(Seq& seq) {
  for (Node& n : seq) {
    if (auto* c = std::get_if<Call>(&n.op)) {
      if (c->vary && c->sizes.n) c->bytes = std::llround(c->sizes.mean());
      if (c->vary && c->sizes2.n) c->bytes2 = std::llround(c->sizes2.mean());
    } else if (auto* l = std::get_if<Loop>(&n.op)) {
      settle_sizes(l->body);
    }
  }
}
}  // namespace

std::optional<Steps> step_form(const std::vector<std::int64_t>& v) {
  std::vector<std::pair<std::int64_t, std::int64_t>> runs;  // value, length
  for (const std::int64_t x : v) {
    if (runs.empty() || runs.back().first != x) runs.emplace_back(x, 1);
    else ++runs.back().second;
  }
  if (runs.size() < 2) return std::nullopt;
  const std::int64_t step = runs[1].first - runs[0].first;
  for (std::size_t i = 2; i < runs.size(); ++i)
    if (runs[i].first - runs[i - 1].first != step) return std::nullopt;
  std::int64_t len = std::max(runs[0].second, runs[1].second);
  if (runs.size() > 2) {
    len = runs[1].second;
    for (std::size_t i = 1; i + 1 < runs.size(); ++i)
      if (runs[i].second != len) return std::nullopt;
    if (runs.front().second > len || runs.back().second > len) return std::nullopt;
  }
  return Steps{runs[0].first, step, len, len - runs[0].second};
}

std::optional<Cycle> cycle_form(const std::vector<std::int64_t>& v) {
  if (v.size() < 3) return std::nullopt;
  std::int64_t step = 0, drop = 0;  // the two differences of consecutive values: the step, and where it wraps
  for (std::size_t k = 1; k < v.size(); ++k) {
    const std::int64_t d = v[k] - v[k - 1];
    std::int64_t& slot = d > 0 ? step : drop;
    if (d == 0 || (slot != 0 && slot != d)) return std::nullopt;
    slot = d;
  }
  if (step == 0 || drop == 0) return std::nullopt;
  Cycle c;
  c.step = step;
  c.period = step - drop;
  c.low = *std::min_element(v.begin(), v.end());  // a cycle that wraps visits its lowest value
  c.start = v[0] - c.low;
  if (c.start >= c.period) return std::nullopt;
  for (std::size_t k = 0; k < v.size(); ++k)
    if (v[k] != c.low + (c.start + c.step * static_cast<std::int64_t>(k)) % c.period) return std::nullopt;
  return c;
}

bool RatioRange::contains(std::int64_t num, std::int64_t den) const {
  using W = long double;  // exact for the products of two numbers below 2^32 that ratios here are
  return W(num) * lo_den >= W(lo_num) * den && W(num) * hi_den < W(hi_num) * den;
}

std::optional<RatioRange> ratio_form(const std::vector<std::int64_t>& v) {
  if (v.size() < 3) return std::nullopt;
  using W = long double;  // exact for the products of two numbers below 2^32 that ratios here are
  std::int64_t g = 0;  // the increments' common factor (world ranks of a column's members: 2 floor(2k / 3))
  for (const std::int64_t x : v) g = std::gcd(g, x - v[0]);
  if (g == 0) return std::nullopt;
  // d_k <= k r < d_k + 1 for every k >= 1, d_k = (v[k] - v[0]) / g: r >= d_k / k and r < (d_k + 1) / k
  const std::int64_t d1 = (v[1] - v[0]) / g;
  RatioRange r{d1, 1, d1 + 1, 1, g};
  for (std::size_t i = 2; i < v.size(); ++i) {
    const std::int64_t k = static_cast<std::int64_t>(i), d = (v[i] - v[0]) / g;
    if (W(d) * r.lo_den > W(r.lo_num) * k) r.lo_num = d, r.lo_den = k;
    if (W(d + 1) * r.hi_den < W(r.hi_num) * k) r.hi_num = d + 1, r.hi_den = k;
  }
  if (W(r.lo_num) * r.hi_den >= W(r.hi_num) * r.lo_den) return std::nullopt;
  return r;
}

namespace {

// Calls at one place of consecutive loops' bodies that may be one call whose numbers change with the iteration.
bool call_compatible(const Call& a, const Call& b) {
  return a.kind == b.kind && a.site == b.site && a.comm == b.comm && a.peer2 == b.peer2 && a.tag2 == b.tag2 &&
         a.bytes2 == b.bytes2 && a.waits_on == b.waits_on && a.vary == b.vary && !a.iter && !b.iter &&
         (a.peer == trace::ANY) == (b.peer == trace::ANY) && (a.tag == trace::ANY) == (b.tag == trace::ANY) &&
         !trace::is_annotation(a.kind);
}

bool has_indexed(const Seq& s) {
  for (const Node& n : s) {
    if (const auto* c = std::get_if<Call>(&n.op); c && c->iter) return true;
    if (const auto* l = std::get_if<Loop>(&n.op); l && (l->indexed || has_indexed(l->body))) return true;
  }
  return false;
}

bool bodies_compatible(const Seq& a, const Seq& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].op.index() != b[i].op.index()) return false;
    if (const auto* c = std::get_if<Call>(&a[i].op)) {
      if (trace::is_annotation(c->kind) ? !same(a[i], b[i]) : !call_compatible(*c, std::get<Call>(b[i].op))) return false;
    } else if (std::holds_alternative<Loop>(a[i].op)) {
      if (!same(a[i], b[i]) || has_indexed(std::get<Loop>(a[i].op).body)) return false;
    }
  }
  return true;
}

// A block owner's sequence (ratio_form) that changes at least twice: one change alone is a first or last
// iteration that differs (a peeled iteration, a size of the first message), which folding keeps apart.
bool owners(const std::vector<std::int64_t>& v) {
  int changes = 0;
  for (std::size_t k = 1; k < v.size(); ++k) changes += v[k] != v[k - 1];
  return changes >= 2 && ratio_form(v).has_value();
}

// The loops s[a, b) as one indexed loop, when every number that differs between their iterations is a step
// function of the iteration (step_form), a cycle (cycle_form) or a block owner's (ratio_form); false (s
// untouched) otherwise.
bool merge_loops(Seq& s, std::size_t a, std::size_t b) {
  constexpr std::uint64_t MAX_ITERATIONS = 1u << 16;
  std::uint64_t total = 0;
  for (std::size_t i = a; i < b; ++i) total += std::get<Loop>(s[i].op).count;
  if (total > MAX_ITERATIONS) return false;
  Loop merged = std::get<Loop>(s[a].op);
  bool any = false;
  for (std::size_t p = 0; p < merged.body.size(); ++p) {
    auto* c = std::get_if<Call>(&merged.body[p].op);
    if (!c) continue;
    IterValues iv;
    auto field = [&](std::vector<std::int64_t>& out, auto get) {
      bool differs = false;
      for (std::size_t i = a; i < b; ++i) {
        const Loop& l = std::get<Loop>(s[i].op);
        const std::int64_t x = get(std::get<Call>(l.body[p].op));
        differs = differs || x != get(*c);
        out.insert(out.end(), l.count, x);
      }
      if (!differs) out.clear();
      return out.empty() || step_form(out).has_value() || cycle_form(out).has_value() || owners(out);
    };
    if (!field(iv.peer, [](const Call& x) { return std::int64_t{x.peer}; }) ||
        !field(iv.tag, [](const Call& x) { return std::int64_t{x.tag}; }) ||
        !field(iv.bytes, [](const Call& x) { return x.bytes; }) ||
        !field(iv.root, [](const Call& x) { return std::int64_t{x.root}; }))
      return false;
    if (iv.peer.empty() && iv.tag.empty() && iv.bytes.empty() && iv.root.empty()) continue;
    any = true;
    c->iter = std::make_shared<const IterValues>(std::move(iv));
  }
  if (!any) return false;
  for (std::size_t i = a + 1; i < b; ++i) {
    const Loop& l = std::get<Loop>(s[i].op);
    for (std::size_t p = 0; p < merged.body.size(); ++p) {
      if (auto* c = std::get_if<Call>(&merged.body[p].op)) {
        const Call& o = std::get<Call>(l.body[p].op);
        c->inside.merge(o.inside);
        c->merge_sizes(o);
      } else {
        merge_into(merged.body[p], l.body[p]);
      }
    }
  }
  for (Node& b : merged.body) rehash(b);  // the calls' hashes cover their iteration values
  merged.count = total;
  merged.indexed = true;
  Node n;
  n.op = std::move(merged);
  rehash(n);
  s[a] = std::move(n);
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(a + 1), s.begin() + static_cast<std::ptrdiff_t>(b));
  return true;
}

// Whether two nodes are the same but for whether their compute gaps state work (Compute::works).
bool same_but_work(const Node& a, const Node& b) {
  if (a.op.index() != b.op.index()) return false;
  if (std::holds_alternative<Compute>(a.op)) return true;
  if (std::holds_alternative<Call>(a.op)) return same(a, b);
  const Loop& x = std::get<Loop>(a.op);
  const Loop& y = std::get<Loop>(b.op);
  if (x.branch != y.branch || (!x.branch && x.count != y.count) || x.body.size() != y.body.size()) return false;
  for (std::size_t i = 0; i < x.body.size(); ++i)
    if (!same_but_work(x.body[i], y.body[i])) return false;
  return true;
}

// What merge_but_work did not average in: work of a gap merged into a gap without work, summed.
struct Unmerged {
  double seconds = 0, flops = 0;
  // per occurrence of the level being folded (a node inside a folded outer loop holds every outer iteration's)
  void add(const Compute& c) { seconds += c.seconds.mean(), flops += c.flops.mean(); }
  bool empty() const { return !(flops > 0) && !(seconds > 0); }
  Node node() const {
    Node n;
    n.op = Compute::of(seconds, flops);
    rehash(n);
    return n;
  }
};

// merge_into for nodes that are the same_but_work: a gap without work is not averaged into one with work
// (the loop's gap stays the work of its iterations); work merged into a gap without work is not dropped: it goes
// to `lost`, which the caller puts beside the loop (the compute before a loop's first iteration, taken into it)
void merge_but_work(Node& a, const Node& b, Unmerged& lost) {
  if (auto* k = std::get_if<Compute>(&a.op)) {
    const Compute& o = std::get<Compute>(b.op);
    if (k->works == o.works) k->merge(o);
    else if (o.works) lost.add(o);
  } else if (auto* l = std::get_if<Loop>(&a.op)) {
    const Loop& o = std::get<Loop>(b.op);
    for (std::size_t i = 0; i < l->body.size(); ++i) {
      Unmerged inner;
      merge_but_work(l->body[i], o.body[i], inner);
      // work lost inside b's body, once per iteration of b
      const double times = o.branch ? 1.0 : static_cast<double>(o.count);
      lost.seconds += times * inner.seconds, lost.flops += times * inner.flops;
    }
    if (l->branch) l->count += o.count, l->reached += o.reached, l->pattern = mix(l->pattern, o.pattern), l->anti = mix(l->anti, o.anti);
  } else {
    merge_into(a, b);
  }
}

// Whether x, a call run just before the first iteration of an indexed loop, is that loop's call c one iteration
// earlier: the same call whose numbers continue each step function (step_form) one step back; with `apply`,
// x becomes iteration 0 of c.
bool call_before(Call& c, const Call& x, bool apply) {
  if (!c.iter) return c.same(x);
  if (!call_compatible([&] { Call a = c; a.iter = nullptr; return a; }(), x)) return false;
  IterValues iv = *c.iter;
  auto field = [](std::vector<std::int64_t>& v, std::int64_t scalar, std::int64_t before) {
    if (v.empty()) return scalar == before;
    v.insert(v.begin(), before);
    return step_form(v).has_value();
  };
  if (!field(iv.peer, c.peer, x.peer) || !field(iv.tag, c.tag, x.tag) || !field(iv.bytes, c.bytes, x.bytes) ||
      !field(iv.root, c.root, x.root))
    return false;
  if (apply) {
    c.peer = x.peer, c.tag = x.tag, c.bytes = x.bytes, c.root = x.root;
    c.iter = std::make_shared<const IterValues>(std::move(iv));
  }
  return true;
}

// A loop's first (or last) iteration whose gaps differ from the others' only in whether they state work (the
// first panel of a TI trace, right after a barrier, has no compute before it) is taken into the loop; then the
// level is folded again (its iterations, so completed, may now repeat). Innermost levels first.
void absorb_peeled(Seq& s, std::size_t window) {
  for (Node& n : s)
    if (auto* l = std::get_if<Loop>(&n.op); l && !l->branch) {
      absorb_peeled(l->body, window);
      rehash(n);
    }
  bool changed = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto* l = std::get_if<Loop>(&s[i].op);
    if (!l || l->branch) continue;
    const std::size_t w = l->body.size();
    auto matches = [&](std::size_t from) {
      for (std::size_t j = 0; j < w; ++j)
        if (!same_but_work(l->body[j], s[from + j])) return false;
      return true;
    };
    // a body that ends with the gap that goes with its first call, after a gap: the gap moves to the front
    // (each call with the gap before it, as in the other ranks), one gap of its mean left after the loop
    // (also through loops whose body is only that loop: the panels of each repetition)
    std::vector<Node*> chain{&s[i]};
    while (std::get<Loop>(chain.back()->op).body.size() == 1 && std::holds_alternative<Loop>(std::get<Loop>(chain.back()->op).body[0].op) &&
           !std::get<Loop>(std::get<Loop>(chain.back()->op).body[0].op).branch)
      chain.push_back(&std::get<Loop>(chain.back()->op).body[0]);
    Loop& in = std::get<Loop>(chain.back()->op);
    // (only when both gaps state work alike: a body whose last gap has work after a gap without (atm2d's time
    // step after MPI_Init) would run its work once more, rotated, than the program did, and a body whose last
    // gap has none would lose the work before it)
    if (in.body.size() >= 2 && i >= 1 && !std::holds_alternative<Compute>(in.body.front().op) &&
        std::holds_alternative<Compute>(in.body.back().op) && std::holds_alternative<Compute>(s[i - 1].op) &&
        std::get<Compute>(in.body.back().op).works == std::get<Compute>(s[i - 1].op).works) {
      Node gap = std::move(in.body.back());
      in.body.pop_back();
      const Compute& g = std::get<Compute>(gap.op);
      Node after;
      after.op = Compute::of(g.seconds.mean(), g.flops.mean());
      rehash(after);
      Unmerged lost;
      merge_but_work(gap, s[i - 1], lost);
      in.body.insert(in.body.begin(), std::move(gap));
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) rehash(**it);
      s.insert(s.begin() + static_cast<std::ptrdiff_t>(i + 1), std::move(after));
      s.erase(s.begin() + static_cast<std::ptrdiff_t>(i - 1));
      --i;
      if (!lost.empty()) s.insert(s.begin() + static_cast<std::ptrdiff_t>(i), lost.node()), ++i;
      l = &std::get<Loop>(s[i].op);
      changed = true;
    }
    // the w nodes before it, small loops expanded (a first iteration [no work, call, no work, call] that
    // folded into a loop of its own), as [first, i)
    auto before = [&](std::size_t& first) {
      std::vector<const Node*> out;
      first = i;
      while (first > 0 && out.size() < w) {
        const Node& n = s[first - 1];
        std::vector<const Node*> part;
        if (const auto* k = std::get_if<Loop>(&n.op); k && !k->branch && k->count * k->body.size() <= w) {
          for (std::uint64_t r = 0; r < k->count; ++r)
            for (const Node& b : k->body) part.push_back(&b);
        } else {
          part.push_back(&n);
        }
        out.insert(out.begin(), part.begin(), part.end());
        --first;
      }
      return out;
    };
    for (;;) {
      std::size_t first = 0;
      const std::vector<const Node*> prev = before(first);
      bool ok = prev.size() == w;
      for (std::size_t j = 0; ok && j < w; ++j) {
        auto* c = std::get_if<Call>(&l->body[j].op);
        ok = c && std::holds_alternative<Call>(prev[j]->op) ? call_before(*c, std::get<Call>(prev[j]->op), false)
                                                             : same_but_work(l->body[j], *prev[j]);
      }
      if (!ok) break;
      Unmerged lost;
      for (std::size_t j = 0; j < w; ++j) {
        if (auto* c = std::get_if<Call>(&l->body[j].op)) call_before(*c, std::get<Call>(prev[j]->op), true);
        merge_but_work(l->body[j], *prev[j], lost);
        rehash(l->body[j]);
      }
      ++l->count;
      s.erase(s.begin() + static_cast<std::ptrdiff_t>(first), s.begin() + static_cast<std::ptrdiff_t>(i));
      i = first;
      if (!lost.empty()) s.insert(s.begin() + static_cast<std::ptrdiff_t>(i), lost.node()), ++i;
      l = &std::get<Loop>(s[i].op);
      changed = true;
    }
    while (i + 1 + w <= s.size() && matches(i + 1)) {
      Unmerged lost;
      for (std::size_t j = 0; j < w; ++j) merge_but_work(l->body[j], s[i + 1 + j], lost);
      ++l->count;
      s.erase(s.begin() + static_cast<std::ptrdiff_t>(i + 1), s.begin() + static_cast<std::ptrdiff_t>(i + 1 + w));
      if (!lost.empty()) s.insert(s.begin() + static_cast<std::ptrdiff_t>(i + 1), lost.node());
      changed = true;
      if (!lost.empty()) break;  // the next iteration's place is now that work's
    }
    // an iteration cut in two around the loop (body[k..w) before it, body[0..k) after it: the online folder
    // took the period from the middle of one, as with 3 repetitions of two loops after a first one that
    // differed): the loop of the rotated body, one more time
    for (std::size_t k = 1; k < w && i >= w - k && i + 1 + k <= s.size(); ++k) {
      bool ok = true;
      for (std::size_t j = k; ok && j < w; ++j) ok = same_but_work(l->body[j], s[i - (w - k) + (j - k)]);
      for (std::size_t j = 0; ok && j < k; ++j) ok = same_but_work(l->body[j], s[i + 1 + j]);
      if (!ok) continue;
      Loop r;
      r.count = l->count + 1;
      for (std::size_t j = k; j < w; ++j) r.body.push_back(l->body[j]);
      for (std::size_t j = 0; j < k; ++j) r.body.push_back(l->body[j]);
      Unmerged lost;
      for (std::size_t j = k; j < w; ++j) merge_but_work(r.body[j - k], s[i - (w - k) + (j - k)], lost);
      for (std::size_t j = 0; j < k; ++j) merge_but_work(r.body[w - k + j], s[i + 1 + j], lost);
      Node n;
      n.op = std::move(r);
      rehash(n);
      const std::size_t from = i - (w - k);
      s.erase(s.begin() + static_cast<std::ptrdiff_t>(i + 1), s.begin() + static_cast<std::ptrdiff_t>(i + 1 + k));
      s[i] = std::move(n);
      s.erase(s.begin() + static_cast<std::ptrdiff_t>(from), s.begin() + static_cast<std::ptrdiff_t>(i));
      i = from;
      if (!lost.empty()) s.insert(s.begin() + static_cast<std::ptrdiff_t>(i), lost.node()), ++i;
      l = &std::get<Loop>(s[i].op);
      changed = true;
      break;
    }
    rehash(s[i]);
  }
  if (!changed) return;
  Seq again;
  for (Node& n : s) append(again, std::move(n), window);
  s = std::move(again);
  absorb_peeled(s, window);  // the completed loops may now be the iterations before an outer loop; s only shrinks
}

bool states_work(const Seq& s) {
  for (const Node& n : s) {
    if (const auto* k = std::get_if<Compute>(&n.op); k && k->works) return true;
    if (const auto* l = std::get_if<Loop>(&n.op); l && states_work(l->body)) return true;
  }
  return false;
}

// The two shifts along a periodic side of two ranks (+1 and -1: one rank) are the same MPI_Sendrecv twice when
// nothing tells them apart (SimGrid TI traces have no call sites and no Sendrecv tags; a program's loop over the
// two directions has one call site), and fold into a loop of 2, where a longer side makes them two calls (NPB MG
// on MPI_Dims_create(P, 3)'s grid: sides of 2 at P = 4, 8, 16, and of 4 at 16). Such a loop (count 2, one
// MPI_Sendrecv to and from one rank, and its gap) is unrolled, so that the runs of every P align call by call.
void unroll_short_side_pairs(Seq& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto* l = std::get_if<Loop>(&s[i].op);
    if (!l || l->branch) continue;
    unroll_short_side_pairs(l->body);
    rehash(s[i]);
    if (l->count != 2 || l->indexed || l->body.empty() || l->body.size() > 2) continue;
    // the call with its gap before it, or after it (a TI trace folded by where its work is: [work, call, no work,
    // call] folds as the work, then a loop of [call, no work])
    const std::size_t call_at = l->body.size() == 2 && std::holds_alternative<Call>(l->body.front().op) ? 0 : l->body.size() - 1;
    const auto* c = std::get_if<Call>(&l->body[call_at].op);
    if (!c || c->kind != trace::Kind::SENDRECV || c->peer != c->peer2 || c->peer == trace::ANY) continue;
    if (l->body.size() == 2 && !std::holds_alternative<Compute>(l->body[1 - call_at].op)) continue;
    Seq first = l->body, second = l->body;
    if (first.size() == 2) {  // the gap's two durations, one per copy (the loop's statistics held both)
      const std::size_t gap_at = 1 - call_at;
      const Compute& k = std::get<Compute>(l->body[gap_at].op);
      const double flops = k.flops.n ? k.flops.mean() : 0;
      Compute a = Compute::of(k.first, flops), b = Compute::of(k.rest.n ? k.rest.mean() : k.first, flops);
      a.works = b.works = k.works;
      first[gap_at].op = a;
      second[gap_at].op = b;
      rehash(first[gap_at]);
      rehash(second[gap_at]);
    }
    first.insert(first.end(), second.begin(), second.end());
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(i));
    s.insert(s.begin() + static_cast<std::ptrdiff_t>(i), first.begin(), first.end());
    i += first.size() - 1;
  }
}

// A loop whose body ends with the nodes that come just before it starts there instead: `a b [L a b] x n` becomes
// `[a b L] x n a b`, the earliest phase of the repetition (a small loop at the end of the body also matches its
// iterations written out before it). The two are the same calls in the same order, and online folding finds one or
// the other depending on when the repetition shows: NPB MG's setup norm (two reductions) before its V-cycles, each
// ending with the norm, folded as `[norm V] x n norm` at P = 16 and `norm [V norm] x n` at P = 4 and 8, so that the
// runs did not align and the skeleton did not pair at its own traced runs. The node moved to the front merges the
// statistics of the ones before the loop; the copy after the loop keeps the body's.
void rotate_loops_to_earliest_phase(Seq& s) {
  for (Node& n : s)
    if (auto* l = std::get_if<Loop>(&n.op); l && !l->branch) {
      rotate_loops_to_earliest_phase(l->body);
      rehash(n);
    }
  for (std::size_t i = 0; i < s.size(); ++i) {
    for (;;) {
      auto* l = std::get_if<Loop>(&s[i].op);
      if (!l || l->branch || l->indexed || l->count < 2 || l->body.size() < 2) break;
      const Node& last = l->body.back();
      // the last node as it runs: a small loop's iterations written out, or itself
      std::vector<const Node*> runs{&last};
      if (const auto* inner = std::get_if<Loop>(&last.op); inner && !inner->branch && !inner->indexed &&
          inner->count * inner->body.size() <= 16 && i >= inner->count * inner->body.size()) {
        const bool written_out = [&] {
          const std::size_t k = inner->count * inner->body.size();
          for (std::size_t j = 0; j < k; ++j)
            if (!same(s[i - k + j], inner->body[j % inner->body.size()])) return false;
          return true;
        }();
        if (written_out) {
          runs.clear();
          for (std::uint64_t r = 0; r < inner->count; ++r)
            for (const Node& b : inner->body) runs.push_back(&b);
        }
      }
      const std::size_t k = runs.size();
      if (i < k) break;
      if (k == 1 && !same(s[i - 1], last)) break;
      Node moved = last, after = last;
      if (k == 1) {
        merge_into(moved, s[i - 1]);
      } else {
        Loop& m = std::get<Loop>(moved.op);
        for (std::size_t j = 0; j < k; ++j) merge_into(m.body[j % m.body.size()], s[i - k + j]);
      }
      l->body.pop_back();
      l->body.insert(l->body.begin(), std::move(moved));
      rehash(s[i]);
      s.insert(s.begin() + static_cast<std::ptrdiff_t>(i + 1), std::move(after));
      s.erase(s.begin() + static_cast<std::ptrdiff_t>(i - k), s.begin() + static_cast<std::ptrdiff_t>(i));
      i -= k;
    }
  }
}

// FoldOptions::index_loops, innermost loops first: a run of consecutive loops with compatible bodies, and of single
// iterations between them (w nodes compatible with the body: the iteration of a block owner's loop whose numbers
// repeat no other, SUMMA's panels where nb does not divide the block), is one indexed loop when merge_loops takes
// it. Runs of plain iterations alone are index_call_runs'.
void index_loops(Seq& s) {
  for (Node& n : s)
    if (auto* l = std::get_if<Loop>(&n.op); l && !l->branch) {
      index_loops(l->body);
      rehash(n);
    }
  auto mergeable = [](const Node& n) -> const Loop* {
    const auto* l = std::get_if<Loop>(&n.op);
    return l && !l->branch && !l->indexed ? l : nullptr;
  };
  auto window_fits = [&](std::size_t from, const Seq& body) {
    if (from + body.size() > s.size()) return false;
    const Seq w(s.begin() + static_cast<std::ptrdiff_t>(from), s.begin() + static_cast<std::ptrdiff_t>(from + body.size()));
    return bodies_compatible(body, w);
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    // the body: the loop's at i, or the first loop's after an iteration of it at i
    const Seq* body = nullptr;
    if (const Loop* l = mergeable(s[i])) body = &l->body;
    for (std::size_t j = i + 1; !body && j < s.size() && j - i <= 64; ++j)
      if (const Loop* l = mergeable(s[j]); l && l->body.size() == j - i && window_fits(i, l->body)) body = &l->body;
    if (!body) continue;
    // [from, to) of each loop or single iteration of the run from i
    std::vector<std::pair<std::size_t, std::size_t>> items;
    std::vector<bool> is_loop;
    for (std::size_t p = i; p < s.size();) {
      if (const Loop* l = mergeable(s[p]); l && bodies_compatible(*body, l->body)) {
        items.emplace_back(p, p + 1), is_loop.push_back(true), ++p;
      } else if (!body->empty() && window_fits(p, *body)) {
        items.emplace_back(p, p + body->size()), is_loop.push_back(false), p += body->size();
      } else {
        break;
      }
    }
    // single iterations only beside two loops or more: one iteration before or after one loop is a first or last
    // iteration that differs, which stays apart
    auto allowed = [&](std::size_t e) {  // the first e items
      const auto n = static_cast<std::size_t>(std::count(is_loop.begin(), is_loop.begin() + static_cast<std::ptrdiff_t>(e), true));
      return e >= 2 && n >= 1 && (n == e || n >= 2);
    };
    if (items.size() < 2) continue;
    Seq run;
    for (std::size_t t = 0; t < items.size(); ++t) {
      const auto [from, to] = items[t];
      run.push_back(is_loop[t] ? s[from]
                               : loop_node(Seq(s.begin() + static_cast<std::ptrdiff_t>(from), s.begin() + static_cast<std::ptrdiff_t>(to)), 1));
    }
    // the longest run that merges, from i
    for (std::size_t e = items.size(); e >= 2; --e)
      if (allowed(e) && merge_loops(run, 0, e)) {
        replace_range(s, i, items[e - 1].second, std::move(run.front()));
        break;
      }
  }
}

// index_call_runs on s, inner loops first: every maximal run of at least two units [gap, call] of compatible calls
// is merged when its numbers step (merge_loops) and `apply` says so for its call site; `record` (when given)
// notes per site whether every run so far stepped, and the longest run. True when something changed.
bool index_runs(Seq& s, const std::function<bool(std::uint64_t)>& apply,
                std::map<std::uint64_t, std::pair<bool, std::size_t>>* record) {
  bool changed = false;
  for (Node& n : s)
    if (auto* l = std::get_if<Loop>(&n.op); l && index_runs(l->body, apply, record)) {
      rehash(n);
      changed = true;
    }
  auto call_at = [&](std::size_t i) -> const Call* {
    return i + 1 < s.size() && std::holds_alternative<Compute>(s[i].op) ? std::get_if<Call>(&s[i + 1].op) : nullptr;
  };
  for (std::size_t i = 0; i + 3 < s.size(); ++i) {
    const Call* c = call_at(i);
    if (!c || trace::is_annotation(c->kind) || c->iter) continue;
    std::size_t m = 1;  // units [gap, call] from i
    while (const Call* d = call_at(i + 2 * m)) {
      if (!call_compatible(*c, *d)) break;
      ++m;
    }
    if (m < 2) continue;
    const std::uint64_t site = c->site;
    Seq units;
    for (std::size_t t = 0; t < m; ++t) units.push_back(loop_node({s[i + 2 * t], s[i + 2 * t + 1]}, 1));
    const bool steps = merge_loops(units, 0, m);
    if (record) {
      auto [it, fresh] = record->emplace(site, std::pair{steps, m});
      if (!fresh) it->second = {it->second.first && steps, std::max(it->second.second, m)};
    }
    if (!steps || !apply(site)) {
      i += 2 * m - 2;  // past the run (the loop's ++i adds the rest)
      continue;
    }
    s[i] = std::move(units.front());
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(i + 1), s.begin() + static_cast<std::ptrdiff_t>(i + 2 * m));
    changed = true;
  }
  return changed;
}

}  // namespace

void index_call_runs(std::vector<std::vector<RankProgram>>& folded, const std::function<bool(std::uint64_t)>& skip) {
  // call site -> (every run of its calls steps, in every rank of every run; the longest run)
  std::map<std::uint64_t, std::pair<bool, std::size_t>> steps;
  for (const auto& ranks : folded)
    for (const RankProgram& rp : ranks) {
      Seq copy = rp.seq;
      index_runs(copy, [](std::uint64_t) { return false; }, &steps);
    }
  auto apply = [&](std::uint64_t site) {
    const auto it = steps.find(site);
    // a run of two everywhere is a pair of neighbours (west and east from one line), not a loop over ranks
    return it != steps.end() && it->second.first && it->second.second >= 3 && !skip(site);
  };
  for (auto& ranks : folded)
    for (RankProgram& rp : ranks) index_runs(rp.seq, apply, nullptr);
}

std::size_t drop_polls(trace::RankTrace& trace) {
  using trace::Kind;
  auto polled_nothing = [](const trace::Event& e) {
    switch (e.kind) {
      case Kind::TEST: case Kind::TESTANY: case Kind::TESTSOME: case Kind::TESTALL: case Kind::IPROBE: return e.root <= 0;
      default: return false;
    }
  };
  std::vector<trace::Event>& ev = trace.events;
  std::size_t kept = 0, dropped = 0;
  double carried = 0, carried_flops = 0, prev_exit = 0;
  bool carrying = false;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    trace::Event e = ev[i];
    const double exit = e.t_exit;
    if (kept > 0 && polled_nothing(e)) {  // (never the first record: MPI_Init)
      carried += e.gap_after(prev_exit);
      carried_flops += e.gap_flops;
      carrying = true;
      prev_exit = exit;
      ++dropped;
      continue;
    }
    if (carrying && e.kind != Kind::COMPLETE) {
      // the work before the dropped calls and after them, measured as the tracer measured it
      e.cpu_gap = carried + e.gap_after(prev_exit);
      e.gap_flops += carried_flops;
      carried = carried_flops = 0;
      carrying = false;
    }
    if (e.kind != Kind::COMPLETE) prev_exit = exit;
    ev[kept++] = e;
  }
  ev.resize(kept);
  return dropped;
}

// ---- folding by the largest repeat first ----
// Folding at the tail as events come (append) takes the first repeat it sees: a setup phase that runs the loop
// body's calls once more before the loop folds with the loop's first iteration, and the runs no longer agree. NPB
// FT from TI traces (no call sites): the forward FFT's two all-to-alls, then per iteration the inverse FFT's two and
// a checksum reduction, fold as `loop 4 {alltoall} reduce loop 2 {alltoall} reduce` with two iterations and as
// `loop 4 {alltoall} loop 2 {reduce loop 2 {alltoall}} reduce` with three. Folded offline instead, the repeat that
// covers the most nodes first (ties: the shorter body, then the leftmost), both are `loop 2 {alltoall}` and a loop
// of `iters` over `loop 2 {alltoall} reduce`.
constexpr std::size_t REFOLD_MAX_NODES = 20000;

class LargestRepeatFold {
 public:
  LargestRepeatFold(const Seq& raw, std::size_t window, std::uint64_t budget) : raw_(raw), window_(window), budget_(budget) {}
  // raw[lo, hi) folded; nullopt when the comparisons would exceed the budget
  std::optional<Seq> fold(std::size_t lo, std::size_t hi) {
    Seq out;
    if (!fold_into(lo, hi, out)) return std::nullopt;
    return out;
  }

 private:
  // the right part after each loop is folded in this same frame (no recursion as deep as the trace is long)
  bool fold_into(std::size_t lo, std::size_t hi, Seq& out) {
    while (lo < hi) {
      std::size_t best_cover = 0, best_w = 0, best_start = 0, best_count = 0;
      for (std::size_t w = 1; w <= window_ && 2 * w <= hi - lo; ++w) {
        std::size_t run = 0;  // consecutive j (ending here) with raw[j] the same as raw[j + w]
        for (std::size_t j = lo; j + w < hi; ++j) {
          if (++used_ > budget_) return false;
          if (raw_[j].hash == raw_[j + w].hash && same(raw_[j], raw_[j + w])) ++run;
          else run = 0;
          if (run == 0 || run % w != 0) continue;
          const std::size_t count = run / w + 1;
          if (count * w > best_cover) {
            best_cover = count * w;
            best_w = w;
            best_start = j + 1 - run;
            best_count = count;
          }
        }
      }
      if (best_cover == 0) {
        out.insert(out.end(), raw_.begin() + static_cast<std::ptrdiff_t>(lo), raw_.begin() + static_cast<std::ptrdiff_t>(hi));
        return true;
      }
      if (!fold_into(lo, best_start, out)) return false;
      Seq body;
      if (!fold_into(best_start, best_start + best_w, body)) return false;
      for (std::size_t k = 1; k < best_count; ++k) {  // the same nodes fold the same way: merge their statistics
        Seq again;
        const std::size_t a = best_start + k * best_w;
        if (!fold_into(a, a + best_w, again)) return false;
        for (std::size_t i = 0; i < body.size(); ++i) merge_into(body[i], again[i]);
      }
      out.push_back(loop_node(std::move(body), best_count));
      lo = best_start + best_count * best_w;
    }
    return true;
  }

  const Seq& raw_;
  std::size_t window_;
  std::uint64_t budget_;
  std::uint64_t used_ = 0;
};

// The largest-repeat folding of a trace without loop annotations, when it is smaller than the tail folding's (same
// size: the tail folding's, as it always was); raw is the node stream the tail folding was given.
void refold_largest_repeats(Seq& seq, const Seq& raw, std::size_t window) {
  constexpr std::uint64_t BUDGET = 30'000'000;     // node comparisons per rank (tens of milliseconds)
  if (raw.size() < 4 || raw.size() > REFOLD_MAX_NODES) return;
  auto folded = LargestRepeatFold(raw, window, BUDGET).fold(0, raw.size());
  if (folded && folded_size(*folded) < folded_size(seq)) seq = std::move(*folded);
}

RankProgram fold_rank(const trace::RankTrace& trace, const FoldOptions& options) {
  using trace::Kind;
  RankProgram out;
  out.rank = trace.rank;
  std::map<std::uint32_t, std::uint64_t> request_site;  // pending request id -> issuing call site
  const auto& ev = trace.events;
  double prev_exit = 0;
  bool started = false;
  // FoldOptions::step_site: loop annotations of our own around the time-step loop's iterations (none in the
  // trace's events' timing: the gap before the step's first call stays one gap, after the iteration's start)
  const bool steps = options.step_site != 0 && std::none_of(ev.begin(), ev.end(), [](const trace::Event& e) {
    return e.kind == Kind::LOOP_BEGIN;
  });
  // an iteration starts before the regions that open around its first call (stack_regions.hpp): a region of the
  // step's check must not straddle two iterations
  std::vector<char> step_starts;
  if (steps) {
    step_starts.assign(ev.size(), 0);
    for (std::size_t i = 0; i < ev.size(); ++i)
      if (ev[i].site == options.step_site && ev[i].kind != Kind::COMPLETE && !trace::is_annotation(ev[i].kind)) {
        std::size_t j = i;
        while (j > 0 && ev[j - 1].kind == Kind::REGION_BEGIN) --j;
        step_starts[j] = 1;
      }
  }
  bool step_open = false;
  auto mark = [&](Kind k) {
    Call c;
    c.kind = k;
    c.tag = STEP_LOOP_TAG;
    Node n;
    n.op = std::move(c);
    append(out.seq, std::move(n), options.window);
  };
  // the nodes as they come, for refold_largest_repeats (traces without loop annotations or regions)
  Seq raw;
  bool keep_raw = options.largest_repeats && !steps && std::none_of(ev.begin(), ev.end(), [](const trace::Event& e) { return trace::is_annotation(e.kind); });
  auto add = [&](Node n) {
    if (keep_raw) {
      rehash(n);
      raw.push_back(n);
    }
    append(out.seq, std::move(n), options.window);
  };
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const trace::Event& e = ev[i];
    if (e.kind == Kind::COMPLETE) continue;  // folded into the call before it
    if (steps && step_starts[i]) {
      if (!step_open) mark(Kind::LOOP_BEGIN);
      step_open = true;
      mark(Kind::LOOP_ITER);
    } else if (steps && step_open && e.kind == Kind::FINALIZE) {
      mark(Kind::LOOP_END);
      step_open = false;
    }
    if (started) {
      Node gap;
      gap.op = Compute::of(e.gap_after(prev_exit), e.gap_flops);  // CPU time when the tracer measured it; TI flops
      if (!options.work_identity) std::get<Compute>(gap.op).works = false;
      add(std::move(gap));
    }
    started = true;
    prev_exit = e.t_exit;
    Call c;
    c.kind = e.kind;
    // a test that completed requests waited for them (drop_polls took the tries before): one request (MPI_Test,
    // MPI_Testany) is MPI_Wait on it; an Iprobe that found its message, MPI_Probe
    if (e.kind == Kind::TEST || e.kind == Kind::TESTANY) c.kind = Kind::WAIT;
    else if (e.kind == Kind::TESTALL) c.kind = Kind::WAITALL;
    else if (e.kind == Kind::TESTSOME) c.kind = Kind::WAITSOME;
    else if (e.kind == Kind::IPROBE) c.kind = Kind::PROBE;
    c.site = e.site;
    c.comm = e.comm;
    c.peer = e.posted_any_source() ? trace::ANY : e.peer;
    c.tag = e.posted_any_tag() ? trace::ANY : e.tag;
    c.bytes = e.bytes;
    c.root = e.root;
    c.inside.add(e.t_exit - e.t_enter);
    if (e.kind == Kind::ISEND || e.kind == Kind::ISSEND || e.kind == Kind::IRECV) request_site[e.request] = e.site;
    if (e.kind == Kind::LOOP_ITER) c.bytes = 0;  // the iteration index: the loop's count says it
    // topology queries: their answers are the skeleton's `comms` (topology.hpp); MPI_Cart_shift's PROC_NULL
    // answers on edge ranks must not make their folding (and so their shape) differ
    if (e.kind == Kind::CART_SHIFT || e.kind == Kind::DIMS_CREATE) c.peer = c.tag = c.root = trace::NO_RANK;
    // FoldOptions::step_data: a step's MPI_Waitall completes the migrations it happened to post, one or two: one
    // call, whatever its count (it runs every step, a waitall completing every pending request)
    if (options.step_data && e.kind == Kind::WAITALL) c.root = trace::NO_RANK;
    // the completions that follow belong to this call
    for (std::size_t j = i + 1; j < ev.size() && ev[j].kind == Kind::COMPLETE; ++j) {
      const trace::Event& done = ev[j];
      if (e.kind == Kind::SENDRECV) {
        c.peer2 = done.posted_any_source() ? trace::ANY : done.peer;
        c.tag2 = done.posted_any_tag() ? trace::ANY : done.tag;
        c.bytes2 = done.bytes;
      } else if (auto it = request_site.find(done.request); it != request_site.end()) {
        if (c.kind == Kind::WAIT) c.waits_on = it->second;
        request_site.erase(it);
      }
    }
    if (options.vary_sizes && !trace::is_annotation(c.kind)) {
      c.vary = true;
      c.sizes.add(static_cast<double>(c.bytes));
      c.sizes2.add(static_cast<double>(c.bytes2));
      c.seq.push_back(c.bytes);
      if (c.kind == Kind::SENDRECV) c.seq2.push_back(c.bytes2);  // the only call with a second size
    }
    ++out.events;
    Node n;
    n.op = std::move(c);
    add(std::move(n));
    if (keep_raw && raw.size() > REFOLD_MAX_NODES) {  // longer traces keep their tail folding
      keep_raw = false;
      Seq().swap(raw);
    }
  }
  if (step_open) mark(Kind::LOOP_END);
  if (keep_raw) refold_largest_repeats(out.seq, raw, options.window);
  branch_annotated_loops(out.seq, options);
  unroll_short_side_pairs(out.seq);
  if (options.vary_sizes) settle_sizes(out.seq);
  // TI traces (gaps that state work): first iterations taken into their loops before and after the loops of
  // one owner become one indexed loop (the one may need the other)
  const bool work = states_work(out.seq);
  if (work) absorb_peeled(out.seq, options.window);
  if (work) rotate_loops_to_earliest_phase(out.seq);
  if (options.index_loops) index_loops(out.seq);
  if (work) {
    absorb_peeled(out.seq, options.window);
    if (options.index_loops) index_loops(out.seq);
  }
  return out;
}

std::uint64_t shape_hash(const Seq& seq) {
  std::uint64_t h = 0x5348415045ull;
  for (const Node& n : seq) {
    if (const auto* c = std::get_if<Call>(&n.op)) {
      h = mix(h, static_cast<std::uint64_t>(c->kind));
      h = mix(h, c->site);
      h = mix(h, c->comm);
      h = mix(h, (c->peer == trace::ANY ? 1u : 0u) | (c->tag == trace::ANY ? 2u : 0u) |
                     (c->peer2 == trace::ANY ? 4u : 0u) | (c->tag2 == trace::ANY ? 8u : 0u));
      h = mix(h, c->waits_on);
    } else if (const auto* k = std::get_if<Compute>(&n.op)) {
      h = mix(h, 0x434f4d50ull ^ (k->works ? 1u : 0u));
    } else {
      h = mix(h, std::get<Loop>(n.op).branch ? 0x4252414eull : 0x4c4f4f50ull);
      h = mix(h, shape_hash(std::get<Loop>(n.op).body));
    }
  }
  return h;
}

std::size_t folded_size(const Seq& seq) {
  std::size_t n = 0;
  for (const Node& x : seq) {
    ++n;
    if (const auto* l = std::get_if<Loop>(&x.op)) n += folded_size(l->body);
  }
  return n;
}

namespace {

// a branch's count covers every time its place was reached: per execution of its enclosing body, count/reached
double expanded_calls_per_run(const Seq& seq) {
  double n = 0;
  for (const Node& x : seq) {
    if (std::holds_alternative<Call>(x.op)) ++n;
    if (const auto* l = std::get_if<Loop>(&x.op)) {
      const double times = !l->branch ? static_cast<double>(l->count)
                           : l->reached ? static_cast<double>(l->count) / static_cast<double>(l->reached) : 0.0;
      n += times * expanded_calls_per_run(l->body);
    }
  }
  return n;
}

}  // namespace

std::uint64_t expanded_calls(const Seq& seq) { return static_cast<std::uint64_t>(std::llround(expanded_calls_per_run(seq))); }

namespace {

std::string rank_text(std::int32_t r) {
  if (r == trace::ANY) return "any";
  if (r == trace::PROC_NULL) return "null";
  return std::to_string(r);
}

}  // namespace

std::string to_text(const Seq& seq, int indent) {
  std::ostringstream o;
  const std::string pad(static_cast<std::size_t>(indent) * 2, ' ');
  for (const Node& x : seq) {
    if (const auto* c = std::get_if<Call>(&x.op)) {
      o << pad << trace::kind_name(c->kind);
      if (c->peer != trace::NO_RANK) o << " peer=" << rank_text(c->peer);
      if (c->tag != trace::NO_RANK) o << " tag=" << rank_text(c->tag);
      if (c->bytes) o << " bytes=" << c->bytes;
      if (c->root != trace::NO_RANK) o << " root=" << c->root;
      if (c->peer2 != trace::NO_RANK) o << " from=" << rank_text(c->peer2) << " rtag=" << rank_text(c->tag2) << " rbytes=" << c->bytes2;
      if (c->comm) o << " comm=" << c->comm;
      o << '\n';
    } else if (const auto* k = std::get_if<Compute>(&x.op)) {
      char buf[96];
      if (k->flops.n > 0 && k->flops.sum > 0)
        std::snprintf(buf, sizeof buf, "compute mean=%.3g n=%llu flops=%.6g", k->seconds.mean(),
                      static_cast<unsigned long long>(k->seconds.n), k->flops.mean());
      else
        std::snprintf(buf, sizeof buf, "compute mean=%.3g n=%llu", k->seconds.mean(),
                      static_cast<unsigned long long>(k->seconds.n));
      o << pad << buf << '\n';
    } else {
      const Loop& l = std::get<Loop>(x.op);
      if (l.branch) o << pad << "branch " << l.count << "/" << l.reached << " {\n";
      else o << pad << "loop " << l.count << (l.indexed ? " indexed" : "") << " {\n";
      o << to_text(l.body, indent + 1) << pad << "}\n";
    }
  }
  return o.str();
}

const char* p2p_op_name(trace::Kind k) {
  using trace::Kind;
  switch (k) {
    case Kind::SEND: case Kind::SSEND: case Kind::BSEND: case Kind::RSEND: return "send";
    case Kind::RECV: return "recv";
    case Kind::ISEND: case Kind::ISSEND: return "isend";
    case Kind::IRECV: return "irecv";
    default: return nullptr;
  }
}

const char* collective_op_name(trace::Kind k) {
  using trace::Kind;
  switch (k) {
    case Kind::BARRIER: return "barrier";
    case Kind::BCAST: return "bcast";
    case Kind::REDUCE: return "reduce";
    case Kind::ALLREDUCE: return "allreduce";
    case Kind::GATHER: return "gather";
    case Kind::SCATTER: return "scatter";
    case Kind::ALLGATHER: return "allgather";
    case Kind::ALLTOALL: return "alltoall";
    default: return nullptr;
  }
}

}  // namespace mksim::skeletons::builder

namespace mksim::skeletons::builder {

void rehash_all(Seq& seq) {
  for (Node& n : seq) {
    if (auto* l = std::get_if<Loop>(&n.op)) rehash_all(l->body);
    rehash(n);
  }
}

}  // namespace mksim::skeletons::builder
