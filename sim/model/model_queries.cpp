// Queries over the analytic model: roots of dT/dparam, T = T0, isospeed and T_a = T_b, each by bracketing sign
// changes on a grid of samples and bisecting; integer answers (K, P) are checked with T itself. The work W of
// isospeed is the skeleton's compute summed over ranks (not the model's critical path, which holds only one rank).
#include "sim/model/model_queries.hpp"

#include "sim/engine/isolate.hpp"
#include "sim/engine/machine_model.hpp"
#include "skeletons/error.hpp"
#include "skeletons/comms.hpp"
#include "skeletons/skeleton_io.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

namespace mksim::sim {

namespace sk = mksim::skeletons;

namespace {

std::string num(double v) {
  std::ostringstream o;
  o.precision(6);
  o << v;
  return o.str();
}

void check_range(const char* what, const std::string& param, double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi))
    throw std::invalid_argument(std::string(what) + ": the range of " + param + " must be finite with lo < hi (got [" + num(lo) +
                                ", " + num(hi) + "])");
}

/** @brief Samples of [lo, hi]: half evenly spaced, half geometric when lo > 0 (small values resolved too), both ends. */
std::vector<double> scan_grid(double lo, double hi, int n) {
  n = std::max(n, 4);
  std::vector<double> g;
  const bool geometric = lo > 0;
  const int even = geometric ? n / 2 : n;
  for (int i = 0; i < even; ++i) g.push_back(lo + (hi - lo) * i / (even - 1));
  if (geometric) {
    const int m = n - even;
    for (int i = 0; i < m; ++i) g.push_back(lo * std::pow(hi / lo, static_cast<double>(i) / (m - 1)));
  }
  g.front() = lo;
  g.push_back(hi);
  std::sort(g.begin(), g.end());
  g.erase(std::unique(g.begin(), g.end()), g.end());
  while (!g.empty() && g.back() > hi) g.pop_back();
  return g;
}

int sign_of(double v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }

/** @brief A root of f between a and b (f(a), f(b) of opposite signs); returns the final bracket. */
std::pair<double, double> bisect(const std::function<double(double)>& f, double a, double b) {
  const int sa = sign_of(f(a));
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (a + b);
    if (!(mid > a && mid < b)) break;
    if (b - a <= 1e-12 * std::max({1.0, std::fabs(a), std::fabs(b)})) break;
    const int sm = sign_of(f(mid));
    if (sm == 0) return {mid, mid};
    if (sm == sa) a = mid;
    else b = mid;
  }
  return {a, b};
}

/** @brief Index of `param` in the model's frame (slot 0 is P). */
std::size_t frame_slot(const AnalyticModel& m, const std::string& param, const char* what) {
  for (std::size_t i = 0; i < m.params.size(); ++i)
    if (m.params[i] == param) return i + 1;
  std::string known;
  for (const auto& p : m.params) known += (known.empty() ? "" : ", ") + p;
  throw std::invalid_argument(std::string(what) + ": skeleton \"" + m.skeleton + "\" has no parameter \"" + param + "\" (it has: " +
                              known + ")");
}

AnalyticModel derive_at(const sk::Skeleton& s, const MachineModel& machine, int P, const std::map<std::string, double>& params,
                        bool skew) {
  ModelOptions mo;
  mo.P = P;
  mo.params = params;
  mo.skew = skew;
  return derive_model(s, machine, mo);
}

void check_P(const char* what, int P) {
  if (P < 1) throw std::invalid_argument(std::string(what) + ": P must be at least 1 (got " + std::to_string(P) + ")");
}

/** @brief The first sign change of f over the grid, bisected; nullopt when f keeps one sign. */
std::optional<double> first_root(const std::function<double(double)>& f, const std::vector<double>& grid) {
  double prev_x = 0;
  int prev_s = 0;
  bool have = false;
  for (double x : grid) {
    const double v = f(x);
    if (std::isnan(v)) continue;
    const int s = sign_of(v);
    if (s == 0) return x;
    if (have && s != prev_s) {
      auto [a, b] = bisect(f, prev_x, x);
      return 0.5 * (a + b);
    }
    prev_x = x;
    prev_s = s;
    have = true;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------------------
// The work of a program: the skeleton walked rank by rank, compute amounts summed.

class WorkWalker {
 public:
  WorkWalker(std::vector<double>& frame, double flops_per_s) : frame_(frame), flops_per_s_(flops_per_s) {}
  double work = 0;

  void body(const sk::Body& b, double weight) {
    for (const sk::Block& blk : b) std::visit([&](const auto& op) { visit(op, weight); }, blk.op);
  }

 private:
  std::vector<double>& frame_;
  double flops_per_s_;
  std::uint64_t visits_ = 0;
  static constexpr std::uint64_t LIMIT = 200'000'000;

  void count() {
    if (++visits_ > LIMIT) throw std::runtime_error("program_work: more than 2e8 blocks to visit (loop counts too large)");
  }
  void visit(const sk::Loop& l, double weight) {
    const double n = std::floor(l.count.eval(frame_));
    if (!(n > 0)) return;
    if (l.var_slot < 0) {  // every iteration is the same: once, weighted
      count();
      body(l.body, weight * n);
      return;
    }
    const auto slot = static_cast<std::size_t>(l.var_slot);
    for (double i = 0; i < n; ++i) {
      count();
      frame_[slot] = i;
      body(l.body, weight);
    }
    frame_[slot] = 0;
  }
  void visit(const sk::Branch& br, double weight) {
    count();
    if (br.condition) {
      body(br.condition->eval(frame_) != 0 ? br.then_body : br.else_body, weight);
      return;
    }
    const double p = std::clamp(br.probability.eval(frame_), 0.0, 1.0);
    if (p > 0) body(br.then_body, weight * p);
    if (p < 1) body(br.else_body, weight * (1 - p));
  }
  void visit(const sk::Compute& c, double weight) {
    count();
    const double amount = c.amount.eval(frame_);  // the mean: every distribution has mean 1
    work += weight * (c.in_flops ? amount : amount * flops_per_s_);
  }
  void visit(const sk::Region& r, double weight) { body(r.body, weight); }
  template <class T>
  void visit(const T&, double) {}
};

// ---------------------------------------------------------------------------------------------------------
// Range comparison helpers.

std::string faster_label(int s, const std::string& a, const std::string& b) { return s < 0 ? a : (s > 0 ? b : "tie"); }

/** @brief T of a contender at integer P, or nullopt when its skeleton does not accept P. */
std::optional<double> time_at_P(const Contender& c, int P, bool skew) {
  try {
    std::vector<double> frame = sk::bind_parameters(*c.skeleton, P, c.params);
    sk::check_for_run(*c.skeleton, frame, P);
    const AnalyticModel m = derive_at(*c.skeleton, *c.machine, P, c.params, skew);
    return m.eval(P, c.params);
  } catch (const sk::SkeletonError&) {
    return std::nullopt;
  } catch (const std::out_of_range& e) {  // a route or speed past the machine's hosts
    throw std::runtime_error("compare_range: \"" + c.label + "\" at P=" + std::to_string(P) + ": " + e.what() +
                             " (load the machine for the largest P of the scan)");
  }
}

void build_crossings(RangeComparison& out, const std::function<std::pair<double, double>(double, double)>& refine_root) {
  std::vector<const ComparisonSample*> signed_pts;
  for (const auto& s : out.samples)
    if (sign_of(s.T_a_s - s.T_b_s) != 0) signed_pts.push_back(&s);
  for (std::size_t i = 1; i < signed_pts.size(); ++i) {
    const int s0 = sign_of(signed_pts[i - 1]->T_a_s - signed_pts[i - 1]->T_b_s);
    const int s1 = sign_of(signed_pts[i]->T_a_s - signed_pts[i]->T_b_s);
    if (s0 == s1) continue;
    Crossing c;
    c.below = signed_pts[i - 1]->x;
    c.above = signed_pts[i]->x;
    c.at = c.above;
    if (refine_root) {
      auto [a, b] = refine_root(c.below, c.above);
      c.below = a;
      c.above = b;
      c.at = 0.5 * (a + b);
    }
    c.faster_below = faster_label(s0, out.label_a, out.label_b);
    c.faster_above = faster_label(s1, out.label_a, out.label_b);
    out.crossings.push_back(c);
  }
  // Segments: runs of one sign over the samples; a continuous run ends at its crossing's root.
  std::size_t next_crossing = 0;
  for (const auto& s : out.samples) {
    const std::string f = faster_label(sign_of(s.T_a_s - s.T_b_s), out.label_a, out.label_b);
    if (!out.segments.empty() && out.segments.back().faster == f) {
      out.segments.back().to = s.x;
      continue;
    }
    RangeSegment seg{s.x, s.x, f};
    if (!out.segments.empty() && refine_root && next_crossing < out.crossings.size() &&
        out.crossings[next_crossing].at <= s.x && out.crossings[next_crossing].at >= out.segments.back().to) {
      out.segments.back().to = out.crossings[next_crossing].at;
      seg.from = out.crossings[next_crossing].at;
      ++next_crossing;
    }
    out.segments.push_back(seg);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------

ParamOptimum optimize_param(const sk::Skeleton& skeleton, const MachineModel& machine, int P, const QueryOptions& options,
                            const std::string& param, double lo, double hi) {
  check_P("optimize_param", P);
  if (param == "P")
    throw std::invalid_argument("optimize_param: P is resolved per model (rank classes, routes); compare models over P instead");
  check_range("optimize_param", param, lo, hi);
  const double first = std::ceil(lo), last = std::floor(hi);
  if (first > last) throw std::invalid_argument("optimize_param: no integer value of " + param + " in [" + num(lo) + ", " + num(hi) + "]");
  const AnalyticModel m = derive_at(skeleton, machine, P, options.params, options.skew);
  const std::size_t slot = frame_slot(m, param, "optimize_param");
  ParamOptimum out;
  out.P = P;
  out.param = param;
  out.lo = lo;
  out.hi = hi;
  const CompiledExpr d = derivative(m, param, &out.derivative);
  std::vector<double> frame = m.frame(P, options.params);
  const std::function<double(double)> T = [&](double x) {
    frame[slot] = x;
    return m.compiled.eval(frame);
  };
  const std::function<double(double)> dT = [&](double x) {
    frame[slot] = x;
    return d.eval(frame);
  };

  // Roots of dT/dparam: every sign change between neighbouring grid samples, bisected.
  const std::vector<double> grid = scan_grid(lo, hi, options.grid_points);
  double grid_best = grid.front(), grid_best_T = std::numeric_limits<double>::infinity();
  double prev_x = 0;
  int prev_s = 0;
  bool have = false;
  for (double x : grid) {
    const double t = T(x);
    if (t < grid_best_T) {
      grid_best_T = t;
      grid_best = x;
    }
    const double v = dT(x);
    if (std::isnan(v)) continue;
    const int s = sign_of(v);
    if (s == 0) {
      out.roots.push_back({x, 0.0, prev_s < 0});
    } else if (have && prev_s != 0 && s != prev_s) {
      auto [a, b] = bisect(dT, prev_x, x);
      const double r = 0.5 * (a + b);
      out.roots.push_back({r, dT(r), prev_s < 0});
    }
    prev_x = x;
    prev_s = s;
    have = true;
  }

  // Integer candidates, checked with T itself (floor and ceil are steps the relaxed derivative smooths over).
  if (!(options.neighbourhood >= 1) || !std::isfinite(options.neighbourhood))
    throw std::invalid_argument("optimize_param: the neighbourhood factor must be >= 1 (got " + num(options.neighbourhood) + ")");
  std::set<double> cand{first, last};
  auto add = [&](double x) {
    for (double c : {std::floor(x), std::ceil(x)}) cand.insert(std::clamp(c, first, last));
    if (x <= 0) return;
    const double from = std::max(first, std::ceil(x / options.neighbourhood));
    const double to = std::min({last, std::floor(x * options.neighbourhood), from + 1e6});
    for (double c = from; c <= to; ++c) cand.insert(c);
  };
  for (const auto& r : out.roots) add(r.value);
  add(grid_best);
  for (double c : cand) out.candidates.emplace_back(c, T(c));
  out.best = out.candidates.front().first;
  out.T_s = out.candidates.front().second;
  for (const auto& [c, t] : out.candidates)
    if (t < out.T_s) {
      out.best = c;
      out.T_s = t;
    }
  return out;
}

std::vector<ParamOptimum> optimize_param_over_P(const sk::Skeleton& skeleton, const MachineModel& machine, const std::vector<int>& Ps,
                                                const QueryOptions& options, const std::string& param, double lo, double hi) {
  std::vector<ParamOptimum> out;
  out.reserve(Ps.size());
  for (int P : Ps) out.push_back(optimize_param(skeleton, machine, P, options, param, lo, hi));
  return out;
}

std::vector<SpeedupPoint> speedup_curve(const sk::Skeleton& skeleton, const MachineModel& machine, const std::vector<int>& Ps,
                                        const QueryOptions& options) {
  const double T1 = derive_at(skeleton, machine, 1, options.params, options.skew).eval(1, options.params);
  std::vector<SpeedupPoint> out;
  for (int P : Ps) {
    check_P("speedup_curve", P);
    SpeedupPoint sp;
    sp.P = P;
    sp.T_s = derive_at(skeleton, machine, P, options.params, options.skew).eval(P, options.params);
    sp.speedup = T1 / sp.T_s;
    sp.efficiency = sp.speedup / P;
    out.push_back(sp);
  }
  return out;
}

std::vector<ConstantTimePoint> constant_time_curve(const sk::Skeleton& skeleton, const MachineModel& machine, const std::vector<int>& Ps,
                                                   const QueryOptions& options, const std::string& param, double T0_s, double lo,
                                                   double hi) {
  check_range("constant_time_curve", param, lo, hi);
  if (!(T0_s > 0) || !std::isfinite(T0_s)) throw std::invalid_argument("constant_time_curve: T0 must be a positive time (got " + num(T0_s) + ")");
  if (param == "P") throw std::invalid_argument("constant_time_curve: the scaled quantity must be a parameter, not P");
  const std::vector<double> grid = scan_grid(lo, hi, options.grid_points);
  std::vector<ConstantTimePoint> out;
  for (int P : Ps) {
    check_P("constant_time_curve", P);
    const AnalyticModel m = derive_at(skeleton, machine, P, options.params, options.skew);
    const std::size_t slot = frame_slot(m, param, "constant_time_curve");
    std::vector<double> frame = m.frame(P, options.params);
    const std::function<double(double)> T = [&](double x) {
      frame[slot] = x;
      return m.compiled.eval(frame);
    };
    ConstantTimePoint c;
    c.P = P;
    if (auto r = first_root([&](double x) { return T(x) - T0_s; }, grid)) {
      c.found = true;
      c.value = *r;
      c.T_s = T(*r);
    } else {
      const double tlo = T(lo), thi = T(hi);
      const bool above = tlo > T0_s;
      c.T_s = above ? std::min(tlo, thi) : std::max(tlo, thi);
      c.note = "T " + std::string(above ? "> " : "< ") + num(T0_s) + " s over " + param + " in [" + num(lo) + ", " + num(hi) + "] at P=" +
               std::to_string(P) + " (T=" + num(tlo) + " s at " + num(lo) + ", " + num(thi) + " s at " + num(hi) + ")";
    }
    out.push_back(c);
  }
  return out;
}

double program_work(const sk::Skeleton& skeleton, const std::map<std::string, double>& params, int P, double flops_per_s) {
  check_P("program_work", P);
  const std::vector<double> base = sk::bind_parameters(skeleton, P, params);
  const sk::CommLayout layout = sk::layout_comms(skeleton, base, P);
  double total = 0;
  for (int r = 0; r < P; ++r) {
    std::vector<double> frame = base;
    sk::bind_rank(skeleton, frame, r, layout);
    const int g = sk::select_group(skeleton, frame);
    if (g < 0) throw sk::SkeletonError(skeleton.file, "/groups", "no rank group for rank " + std::to_string(r) + " at P=" + std::to_string(P));
    WorkWalker w(frame, flops_per_s);
    w.body(skeleton.groups[static_cast<std::size_t>(g)].body, 1.0);
    total += w.work;
  }
  return total;
}

IsospeedTable isospeed_scalability(const sk::Skeleton& skeleton, const MachineModel& machine, const QueryOptions& options,
                                   const std::string& param, int p, double value, const std::vector<int>& p_primes, double lo,
                                   double hi, int work_P) {
  check_P("isospeed_scalability", p);
  check_P("isospeed_scalability (work_P)", work_P);
  check_range("isospeed_scalability", param, lo, hi);
  if (param == "P") throw std::invalid_argument("isospeed_scalability: the problem size must be a parameter, not P");
  const double F = machine.speed_flops ? machine.speed_flops(0) : 1.0;
  std::map<std::string, double> params = options.params;
  auto work = [&](double x) {
    params[param] = x;
    return program_work(skeleton, params, work_P, F);
  };
  IsospeedTable out;
  out.param = param;
  out.p = p;
  out.value = value;
  out.work_P = work_P;
  {
    std::map<std::string, double> at = options.params;
    at[param] = value;
    const AnalyticModel m = derive_at(skeleton, machine, p, at, options.skew);
    out.T_s = m.eval(p, at);
    out.W = work(value);
    out.speed_flops = out.W / (p * out.T_s);
  }
  const std::vector<double> grid = scan_grid(lo, hi, options.grid_points);
  for (int pp : p_primes) {
    check_P("isospeed_scalability (p')", pp);
    std::map<std::string, double> at = options.params;
    at[param] = value;
    const AnalyticModel m = derive_at(skeleton, machine, pp, at, options.skew);
    const std::size_t slot = frame_slot(m, param, "isospeed_scalability");
    std::vector<double> frame = m.frame(pp, at);
    auto T = [&](double x) {
      frame[slot] = x;
      return m.compiled.eval(frame);
    };
    auto speed_gap = [&](double x) { return work(x) / (pp * T(x)) - out.speed_flops; };
    IsospeedRow row;
    row.p_prime = pp;
    if (auto r = first_root(speed_gap, grid)) {
      row.found = true;
      row.value = *r;
      row.W = work(*r);
      row.T_s = T(*r);
      row.psi = pp * out.W / (p * row.W);
    } else {
      const double slo = speed_gap(lo) + out.speed_flops, shi = speed_gap(hi) + out.speed_flops;
      row.note = "the average speed at p'=" + std::to_string(pp) + " stays " + (slo > out.speed_flops ? "above" : "below") + " " +
                 num(out.speed_flops) + " flop/s over " + param + " in [" + num(lo) + ", " + num(hi) + "] (" + num(slo) + " at " + num(lo) +
                 ", " + num(shi) + " at " + num(hi) + ")";
    }
    out.rows.push_back(row);
  }
  return out;
}

RangeComparison compare_range(const Contender& a, const Contender& b, const RangeScan& scan) {
  for (const Contender* c : {&a, &b})
    if (!c->skeleton || !c->machine) throw std::invalid_argument("compare_range: contender \"" + c->label + "\" has no skeleton or machine");
  check_range("compare_range", scan.param, scan.lo, scan.hi);
  RangeComparison out;
  out.param = scan.param;
  out.label_a = a.label;
  out.label_b = b.label;

  if (scan.param == "P") {
    const int lo = static_cast<int>(std::ceil(scan.lo)), hi = static_cast<int>(std::floor(scan.hi));
    if (lo < 1 || lo > hi) throw std::invalid_argument("compare_range: the P range [" + num(scan.lo) + ", " + num(scan.hi) + "] holds no P >= 1");
    std::set<int> first;
    if (scan.samples.empty()) {
      first = {lo, hi};
      for (long q = 1; q <= hi; q *= 2)
        if (q >= lo) first.insert(static_cast<int>(q));
    } else {
      for (double x : scan.samples) {
        if (x != std::floor(x) || x < lo || x > hi)
          throw std::invalid_argument("compare_range: sample P=" + num(x) + " is not an integer in [" + std::to_string(lo) + ", " +
                                      std::to_string(hi) + "]");
        first.insert(static_cast<int>(x));
      }
    }
    std::map<int, std::pair<double, double>> times;
    std::set<int> skipped;
    auto eval = [&](int P) {
      if (times.count(P) || skipped.count(P)) return;
      const auto ta = time_at_P(a, P, scan.skew);
      const auto tb = ta ? time_at_P(b, P, scan.skew) : std::nullopt;
      if (ta && tb) times[P] = {*ta, *tb};
      else skipped.insert(P);
    };
    for (int P : first) eval(P);
    // Refine every sign change of the first pass over the integers between its two points.
    std::vector<std::pair<int, int>> signed_first;
    for (const auto& [P, t] : times)
      if (int s = sign_of(t.first - t.second); s != 0) signed_first.emplace_back(P, s);
    for (std::size_t i = 1; i < signed_first.size(); ++i)
      if (signed_first[i].second != signed_first[i - 1].second)
        for (int P = signed_first[i - 1].first + 1; P < signed_first[i].first; ++P) eval(P);
    for (const auto& [P, t] : times) out.samples.push_back({static_cast<double>(P), t.first, t.second});
    for (int P : skipped) out.skipped.push_back(P);
    build_crossings(out, nullptr);
    return out;
  }

  if (scan.P < 1) throw std::invalid_argument("compare_range: scanning " + scan.param + " needs a fixed P >= 1 (RangeScan::P)");
  const AnalyticModel ma = derive_at(*a.skeleton, *a.machine, scan.P, a.params, scan.skew);
  const AnalyticModel mb = derive_at(*b.skeleton, *b.machine, scan.P, b.params, scan.skew);
  const std::size_t sa = frame_slot(ma, scan.param, "compare_range"), sb = frame_slot(mb, scan.param, "compare_range");
  std::vector<double> fa = ma.frame(scan.P, a.params), fb = mb.frame(scan.P, b.params);
  auto Ta = [&](double x) {
    fa[sa] = x;
    return ma.compiled.eval(fa);
  };
  auto Tb = [&](double x) {
    fb[sb] = x;
    return mb.compiled.eval(fb);
  };
  std::vector<double> xs = scan.samples;
  if (xs.empty()) xs = scan_grid(scan.lo, scan.hi, scan.grid_points);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  for (double x : xs) {
    if (x < scan.lo || x > scan.hi) throw std::invalid_argument("compare_range: sample " + num(x) + " is outside the range");
    out.samples.push_back({x, Ta(x), Tb(x)});
  }
  const std::function<double(double)> diff = [&](double x) { return Ta(x) - Tb(x); };
  build_crossings(out, [&](double lo, double hi) { return bisect(diff, lo, hi); });
  return out;
}

MachineModel tabulate_machine_model(const std::string& platform_path, int P) {
  if (P < 1 || P > 2048)
    throw std::invalid_argument("tabulate_machine_model: P=" + std::to_string(P) + " outside [1, 2048] (the table holds P^2 routes)");
  const auto n = static_cast<std::size_t>(P);
  // the child: a header line (JSON), then speeds and (latency, bandwidth) per pair as raw doubles
  const ChildResult child = run_in_child(
      [&] {
        const MachineModel m = load_machine_model(platform_path, P);
        nlohmann::json h = {{"name", m.name},
                            {"s", m.send_overhead_s},
                            {"r", m.recv_overhead_s},
                            {"o", m.per_message_overhead_s},
                            {"alpha", m.skew_alpha_s},
                            {"eager", m.eager_threshold_bytes},
                            {"c_e", m.eager_per_byte_s},
                            {"h_r", m.rendezvous_handshake_s}};
        for (const auto& p : m.patterns)
          h["patterns"].push_back({p.name, p.breakpoint_bytes, p.short_rho_s, p.short_beta_s_per_byte, p.long_rho_s,
                                   p.long_beta_s_per_byte});
        std::string out = "OK " + h.dump() + "\n";
        std::vector<double> values(n + 2 * n * n);
        for (std::size_t i = 0; i < n; ++i) values[i] = m.speed_flops(static_cast<int>(i));
        for (std::size_t i = 0; i < n; ++i)
          for (std::size_t j = 0; j < n; ++j) {
            const RouteFigures f = m.route(static_cast<int>(i), static_cast<int>(j));
            values[n + 2 * (i * n + j)] = f.latency_s;
            values[n + 2 * (i * n + j) + 1] = f.bandwidth_Bps;
          }
        out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
        return out;
      },
      [](const std::exception&) { return 1; }, "tabulate_machine_model: " + platform_path);
  if (child.code != 0) throw std::runtime_error(child.output);
  const std::string& data = child.output;
  const std::size_t eol = data.find('\n');
  const std::size_t expected = (n + 2 * n * n) * sizeof(double);
  if (eol == std::string::npos || data.rfind("OK ", 0) != 0 || data.size() - eol - 1 != expected)
    throw std::runtime_error("tabulate_machine_model: " + platform_path + ": the platform process failed");
  const nlohmann::json h = nlohmann::json::parse(data.substr(3, eol - 3));
  auto table = std::make_shared<std::vector<double>>(n + 2 * n * n);
  std::memcpy(table->data(), data.data() + eol + 1, expected);
  MachineModel m;
  m.name = h.at("name").get<std::string>();
  m.send_overhead_s = h.at("s").get<double>();
  m.recv_overhead_s = h.at("r").get<double>();
  m.per_message_overhead_s = h.at("o").get<double>();
  m.skew_alpha_s = h.at("alpha").get<double>();
  m.eager_threshold_bytes = h.at("eager").get<double>();
  m.eager_per_byte_s = h.at("c_e").get<double>();
  m.rendezvous_handshake_s = h.at("h_r").get<double>();
  if (h.contains("patterns"))
    for (const auto& p : h.at("patterns"))
      m.patterns.push_back({p.at(0).get<std::string>(), p.at(1).get<double>(), p.at(2).get<double>(), p.at(3).get<double>(),
                            p.at(4).get<double>(), p.at(5).get<double>(), ""});
  m.speed_flops = [table, n](int rank) {
    if (rank < 0 || static_cast<std::size_t>(rank) >= n)
      throw std::out_of_range("machine table: rank " + std::to_string(rank) + " outside its " + std::to_string(n) + " ranks");
    return (*table)[static_cast<std::size_t>(rank)];
  };
  m.route = [table, n](int src, int dst) {
    if (src < 0 || dst < 0 || static_cast<std::size_t>(src) >= n || static_cast<std::size_t>(dst) >= n)
      throw std::out_of_range("machine table: route " + std::to_string(src) + " -> " + std::to_string(dst) + " outside its " +
                              std::to_string(n) + " ranks");
    const std::size_t k = n + 2 * (static_cast<std::size_t>(src) * n + static_cast<std::size_t>(dst));
    return RouteFigures{(*table)[k], (*table)[k + 1]};
  };
  return m;
}

}  // namespace mksim::sim
