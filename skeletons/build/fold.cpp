#include "skeletons/build/fold.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace mksim::skeletons::build {

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

Compute Compute::of(double duration) {
  Compute c;
  c.seconds.add(duration);
  c.first = duration;
  return c;
}

void Compute::merge(const Compute& o) {
  if (o.seconds.n > 0) {
    rest.add(o.first);
    rest_sketch.add(o.first);
  }
  rest.merge(o.rest);
  rest_sketch.merge(o.rest_sketch);
  seconds.merge(o.seconds);
}

bool Call::same(const Call& o) const {
  return kind == o.kind && site == o.site && comm == o.comm && peer == o.peer && tag == o.tag &&
         bytes == o.bytes && root == o.root && peer2 == o.peer2 && tag2 == o.tag2 && bytes2 == o.bytes2 &&
         waits_on == o.waits_on;
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
                          static_cast<std::uint64_t>(c.bytes),
                          static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.root)),
                          static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.peer2)),
                          static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.tag2)),
                          static_cast<std::uint64_t>(c.bytes2), c.waits_on})
    h = mix(h, v);
  return h;
}

void rehash(Node& n) {
  if (const auto* c = std::get_if<Call>(&n.op)) {
    n.hash = hash_of(*c);
  } else if (std::holds_alternative<Compute>(n.op)) {
    n.hash = 0x434f4d50ull;
  } else {
    const Loop& l = std::get<Loop>(n.op);
    std::uint64_t h = mix(0x4c4f4f50ull, l.count);
    for (const Node& b : l.body) h = mix(h, b.hash);
    n.hash = h;
  }
}

// folds b's statistics into a (same(a, b) holds)
void merge_into(Node& a, const Node& b) {
  if (auto* c = std::get_if<Call>(&a.op)) {
    c->inside.merge(std::get<Call>(b.op).inside);
  } else if (auto* k = std::get_if<Compute>(&a.op)) {
    k->merge(std::get<Compute>(b.op));
  } else {
    Loop& l = std::get<Loop>(a.op);
    const Loop& o = std::get<Loop>(b.op);
    for (std::size_t i = 0; i < l.body.size(); ++i) merge_into(l.body[i], o.body[i]);
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
    if (!regions_balanced(s, n - w, w)) continue;
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

}  // namespace

bool same(const Node& a, const Node& b) {
  if (a.hash != b.hash || a.op.index() != b.op.index()) return false;
  if (const auto* c = std::get_if<Call>(&a.op)) return c->same(std::get<Call>(b.op));
  if (std::holds_alternative<Compute>(a.op)) return true;
  const Loop& x = std::get<Loop>(a.op);
  const Loop& y = std::get<Loop>(b.op);
  return x.count == y.count && x.body.size() == y.body.size() && range_same(x.body, 0, y.body, 0, x.body.size());
}

RankProgram fold_rank(const trace::RankTrace& trace, const FoldOptions& options) {
  using trace::Kind;
  RankProgram out;
  out.rank = trace.rank;
  std::map<std::uint32_t, std::uint64_t> request_site;  // pending request id -> issuing call site
  const auto& ev = trace.events;
  double prev_exit = 0;
  bool started = false;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const trace::Event& e = ev[i];
    if (e.kind == Kind::COMPLETE) continue;  // folded into the call before it
    if (started) {
      Node gap;
      gap.op = Compute::of(std::max(0.0, e.t_enter - prev_exit));
      append(out.seq, std::move(gap), options.window);
    }
    started = true;
    prev_exit = e.t_exit;
    Call c;
    c.kind = e.kind;
    c.site = e.site;
    c.comm = e.comm;
    c.peer = e.posted_any_source() ? trace::ANY : e.peer;
    c.tag = e.posted_any_tag() ? trace::ANY : e.tag;
    c.bytes = e.bytes;
    c.root = e.root;
    c.inside.add(e.t_exit - e.t_enter);
    if (e.kind == Kind::ISEND || e.kind == Kind::ISSEND || e.kind == Kind::IRECV) request_site[e.request] = e.site;
    if (e.kind == Kind::LOOP_ITER) c.bytes = 0;  // the iteration index: the loop's count says it
    // the completions that follow belong to this call
    for (std::size_t j = i + 1; j < ev.size() && ev[j].kind == Kind::COMPLETE; ++j) {
      const trace::Event& done = ev[j];
      if (e.kind == Kind::SENDRECV) {
        c.peer2 = done.posted_any_source() ? trace::ANY : done.peer;
        c.tag2 = done.posted_any_tag() ? trace::ANY : done.tag;
        c.bytes2 = done.bytes;
      } else if (auto it = request_site.find(done.request); it != request_site.end()) {
        if (e.kind == Kind::WAIT) c.waits_on = it->second;
        request_site.erase(it);
      }
    }
    ++out.events;
    Node n;
    n.op = std::move(c);
    append(out.seq, std::move(n), options.window);
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
    } else if (std::holds_alternative<Compute>(n.op)) {
      h = mix(h, 0x434f4d50ull);
    } else {
      h = mix(h, 0x4c4f4f50ull);
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

std::uint64_t expanded_calls(const Seq& seq) {
  std::uint64_t n = 0;
  for (const Node& x : seq) {
    if (std::holds_alternative<Call>(x.op)) ++n;
    if (const auto* l = std::get_if<Loop>(&x.op)) n += l->count * expanded_calls(l->body);
  }
  return n;
}

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
      std::snprintf(buf, sizeof buf, "compute mean=%.3g n=%llu", k->seconds.mean(),
                    static_cast<unsigned long long>(k->seconds.n));
      o << pad << buf << '\n';
    } else {
      const Loop& l = std::get<Loop>(x.op);
      o << pad << "loop " << l.count << " {\n" << to_text(l.body, indent + 1) << pad << "}\n";
    }
  }
  return o.str();
}

}  // namespace mksim::skeletons::build
