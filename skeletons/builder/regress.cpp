// Cross-run regression of one skeleton quantity. Counts and sizes: an exact search over small expressions of
// the features of features.hpp. Everything else (and integers no exact expression reproduces): least squares
// over Extra-P's performance model normal form (Calotoiu et al., SC'13, eq. 1; multi-parameter terms as in
// Calotoiu et al., Cluster'16), chosen by leave-one-run-out cross-validation. Models that fit as well are
// evaluated at runs not traced, and where they disagree the fit says which run would tell them apart.
#include "skeletons/builder/regress.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

namespace mksim::skeletons::builder {
namespace {

using Coords = std::vector<double>;

constexpr std::size_t MAX_ALTERNATIVES = 4;  // distinct alternative behaviours reported
constexpr long long MAX_DENOMINATOR = 256;   // exact coefficients are p/q with q up to this
constexpr double NEAR_SCORE = 1.10;          // an alternative fits "as well" within this factor of the best score
constexpr double CANCELLING = 5;            // terms whose magnitudes add up to 5 times their sum cancel
constexpr double PLAUSIBLE_SCORE = 1.25;     // a model positive at scale replaces a better one going negative
constexpr double SIMPLER_MARGIN = 0.01;      // a later hypothesis of as many terms must be this much better
constexpr double LS_DISAGREE = 0.05;         // least-squares models disagree above this relative difference
constexpr double EXACT_DISAGREE = 1e-6;      // exact models disagree above this relative difference

// ------------------------------------------------------------------------------------------------ text

bool integral(double v) { return std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15; }

std::string integral_text(double v) {
  char b[48];
  std::snprintf(b, sizeof b, "%.0f", v == 0 ? 0.0 : v);
  return b;
}

// precision 0: the shortest text that reads back as v.
std::string num_text(double v, int precision) {
  if (integral(v)) return integral_text(v);
  char b[64];
  if (precision == 0) {
    auto r = std::to_chars(b, b + sizeof b, v);
    return std::string(b, r.ptr);
  }
  std::snprintf(b, sizeof b, "%.*g", precision, v);
  return b;
}

std::string short_num(double v) { return num_text(v, 6); }

// True when `t` can stand as a factor of a product or a divisor without parentheses.
bool atomic(const std::string& t) {
  int depth = 0;
  for (char c : t) {
    if (c == '(') ++depth;
    else if (c == ')') --depth;
    else if (depth == 0 && std::strchr("+-*/%<>=!&|,", c) != nullptr) return false;
  }
  return true;
}

std::string wrap(const std::string& t) { return atomic(t) ? t : "(" + t + ")"; }

// True when `t` has a binary + or - outside parentheses (the sign of a number's exponent does not count).
bool has_sum(const std::string& t) {
  int depth = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '(') ++depth;
    else if (c == ')') --depth;
    else if (depth == 0 && (c == '+' || c == '-') && i > 0) {
      const bool exponent = (t[i - 1] == 'e' || t[i - 1] == 'E') && i > 1 &&
                            (std::isdigit(static_cast<unsigned char>(t[i - 2])) || t[i - 2] == '.');
      if (!exponent) return true;
    }
  }
  return false;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

/** A coefficient: q > 0 when it is exactly p/q. */
struct Coef {
  double value = 0;
  long long p = 0, q = 0;
};

Coef rational_coef(double x) {
  Coef c;
  c.value = x;
  if (!std::isfinite(x)) return c;
  if (x == 0) {
    c.q = 1;
    return c;
  }
  const double ax = std::fabs(x);
  if (ax >= 1e12) {
    if (integral(x)) c.p = static_cast<long long>(x), c.q = 1;
    return c;
  }
  double r = ax;
  long long p0 = 0, q0 = 1, p1 = 1, q1 = 0;  // continued-fraction convergents
  for (int i = 0; i < 40; ++i) {
    const double a = std::floor(r);
    if (a > 1e12) break;
    const auto ai = static_cast<long long>(a);
    const long long p2 = ai * p1 + p0, q2 = ai * q1 + q0;
    if (q2 > MAX_DENOMINATOR) break;
    p0 = p1, q0 = q1, p1 = p2, q1 = q2;
    if (std::fabs(static_cast<double>(p1) / static_cast<double>(q1) - ax) <= 1e-9 * ax) {
      c.p = x < 0 ? -p1 : p1;
      c.q = q1;
      c.value = static_cast<double>(c.p) / static_cast<double>(c.q);
      return c;
    }
    const double f = r - a;
    if (f <= 0) break;
    r = 1 / f;
  }
  return c;
}

// One term |c| * prod(num) / prod(den); `negative` says the sign. precision as num_text.
std::string term_text(const Coef& c, int precision, const std::vector<std::string>& num,
                      const std::vector<std::string>& den, bool& negative) {
  negative = c.value < 0;
  std::vector<std::string> top, bottom;
  if (c.q > 0) {
    const long long p = c.p < 0 ? -c.p : c.p;
    if (p != 1 || num.empty()) top.push_back(std::to_string(p));
    if (c.q != 1) bottom.push_back(std::to_string(c.q));
  } else {
    const double a = std::fabs(c.value);
    if (a != 1 || num.empty()) top.push_back(num_text(a, precision));
  }
  for (const auto& s : num) top.push_back(top.empty() && num.size() == 1 && bottom.empty() && den.empty() ? s : wrap(s));
  for (const auto& s : den) bottom.push_back(wrap(s));
  std::string t = join(top, "*");
  if (bottom.size() == 1) t += "/" + bottom[0];
  else if (bottom.size() > 1) t += "/(" + join(bottom, "*") + ")";
  return t;
}

// The terms summed, positive ones first (each group in the order given); the constant is passed last.
std::string sum_text(std::vector<std::pair<bool, std::string>> terms) {
  std::stable_partition(terms.begin(), terms.end(), [](const auto& t) { return !t.first; });
  std::string s;
  for (const auto& [neg, t] : terms) {
    const std::string u = neg && has_sum(t) ? "(" + t + ")" : t;
    if (s.empty()) s = neg ? "-" + u : u;
    else s += neg ? " - " + u : " + " + u;
  }
  return s.empty() ? "0" : s;
}

// ------------------------------------------------------------------------------------------------ data

/** The samples at one combination of the regressed variables. */
struct Point {
  Coords x;                  // P, the parameters (sorted), rank when regressed on
  Vars vars;                 // its coordinates by name, for evaluating features
  double y = 0;              // mean of its samples
  double lo = 0, hi = 0;     // range of its samples
  std::map<int, std::pair<double, int>> by_run;  // run index -> (sum, count)
  std::size_t fold = 0;
  double d = 1;              // denominator of relative errors (|y|, or the mean |y| where y = 0)
};

struct Data {
  std::vector<std::string> params;  // sorted, distinct, without P and rank
  std::vector<std::string> coords;  // "P", params..., "rank" (with allow_rank)
  std::size_t n_scale = 0;          // coordinates of the run (all but rank)
  bool has_rank = false;
  bool integer = false;
  double tol = 1e-9;
  double max_p_power = INFINITY;  // FitOptions::max_p_power
  std::vector<std::string> runs;
  std::vector<Point> points;
  std::vector<std::vector<double>> seen;  // per coordinate: its distinct values, sorted
  std::vector<bool> varies;
  std::vector<std::vector<std::size_t>> folds;  // point indices per fold (one fold per run)
  double mean_abs = 0;
  bool positive = true;
  std::vector<std::string> expr_names;  // names an expression may use: P, rank, parameters
};

double allowed(const Data& d, double y) {
  if (d.integer) return d.tol * std::max(std::fabs(y), 1.0);
  return d.tol * std::max(std::fabs(y), 1e-3 * d.mean_abs);
}

std::string describe_vars(const Vars& v) {
  std::string s;
  for (const auto& [k, x] : v) s += (s.empty() ? "" : ", ") + k;
  return "{" + s + "}";
}

Data prepare(const std::vector<Sample>& samples, const std::vector<std::string>& params, const FitOptions& o) {
  if (samples.empty()) throw std::invalid_argument("fit_quantity: no samples to fit");
  if (o.max_terms < 1 || o.max_terms > 3)
    throw std::invalid_argument("fit_quantity: max_terms must be 1, 2 or 3 (got " + std::to_string(o.max_terms) + ")");
  if (!(o.rel_tolerance > 0 && o.rel_tolerance < 1))
    throw std::invalid_argument("fit_quantity: rel_tolerance must be in (0, 1) (got " + short_num(o.rel_tolerance) + ")");
  Data d;
  d.integer = o.integer;
  d.tol = o.rel_tolerance;
  d.max_p_power = o.max_p_power;
  std::set<std::string> ps(params.begin(), params.end());
  ps.erase("P");
  ps.erase("rank");
  d.params.assign(ps.begin(), ps.end());
  d.coords.push_back("P");
  d.coords.insert(d.coords.end(), d.params.begin(), d.params.end());
  d.n_scale = d.coords.size();
  d.has_rank = o.allow_rank;
  if (d.has_rank) d.coords.push_back("rank");
  d.expr_names = {"P", "rank"};
  d.expr_names.insert(d.expr_names.end(), d.params.begin(), d.params.end());

  auto where = [&](std::size_t i) { return "sample " + std::to_string(i) + " (run '" + samples[i].run + "')"; };
  const Vars& first = samples[0].vars;
  for (const auto& c : d.coords)
    if (!first.count(c))
      throw std::invalid_argument("fit_quantity: " + where(0) + " has no variable '" + c + "' (it has " +
                                  describe_vars(first) + ")");
  for (const auto& [k, v] : first)
    if (k != "P" && k != "rank" && !ps.count(k))
      throw std::invalid_argument("fit_quantity: variable '" + k + "' of " + where(0) +
                                  " is neither P, rank nor one of the parameters {" + join(d.params, ", ") + "}");
  std::set<std::string> run_names;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    bool same = s.vars.size() == first.size();
    for (auto a = s.vars.begin(), b = first.begin(); same && a != s.vars.end(); ++a, ++b) same = a->first == b->first;
    if (!same)
      throw std::invalid_argument("fit_quantity: " + where(i) + " has variables " + describe_vars(s.vars) + " but " +
                                  where(0) + " has " + describe_vars(first));
    if (!std::isfinite(s.value))
      throw std::invalid_argument("fit_quantity: " + where(i) + " has a non-finite value (" + short_num(s.value) + ")");
    for (const auto& [k, v] : s.vars)
      if (!std::isfinite(v))
        throw std::invalid_argument("fit_quantity: " + where(i) + " has a non-finite " + k + " (" + short_num(v) + ")");
    run_names.insert(s.run);
  }
  d.runs.assign(run_names.begin(), run_names.end());

  // Points in coordinate order; each point's values summed in sorted order: whatever the sample order,
  // the same result to the last bit.
  std::map<Coords, std::vector<std::pair<int, double>>> at;  // (run index, value)
  for (const Sample& s : samples) {
    Coords x;
    for (const auto& c : d.coords) x.push_back(s.vars.at(c));
    const int run = static_cast<int>(std::lower_bound(d.runs.begin(), d.runs.end(), s.run) - d.runs.begin());
    at[x].emplace_back(run, s.value);
  }
  for (auto& [x, values] : at) {
    std::sort(values.begin(), values.end());
    Point p;
    p.x = x;
    for (std::size_t c = 0; c < d.coords.size(); ++c) p.vars[d.coords[c]] = x[c];
    p.lo = p.hi = values.front().second;
    double sum = 0;
    for (const auto& [run, v] : values) {
      sum += v;
      p.lo = std::min(p.lo, v), p.hi = std::max(p.hi, v);
      auto& br = p.by_run[run];
      br.first += v;
      ++br.second;
    }
    p.y = sum / static_cast<double>(values.size());
    d.points.push_back(std::move(p));
  }

  for (const Point& p : d.points) d.mean_abs += std::fabs(p.y) / static_cast<double>(d.points.size());
  std::set<int> fold_runs;  // a point traced by several runs belongs to the first one's fold
  for (Point& p : d.points) {
    d.positive = d.positive && p.y > 0;
    p.d = p.y != 0 ? std::fabs(p.y) : (d.mean_abs > 0 ? d.mean_abs : 1.0);
    fold_runs.insert(p.by_run.begin()->first);
  }
  const std::vector<int> fr(fold_runs.begin(), fold_runs.end());
  d.folds.assign(fr.size(), {});
  for (std::size_t i = 0; i < d.points.size(); ++i) {
    d.points[i].fold = static_cast<std::size_t>(
        std::lower_bound(fr.begin(), fr.end(), d.points[i].by_run.begin()->first) - fr.begin());
    d.folds[d.points[i].fold].push_back(i);
  }
  d.seen.assign(d.coords.size(), {});
  d.varies.assign(d.coords.size(), false);
  for (std::size_t c = 0; c < d.coords.size(); ++c) {
    std::set<double> v;
    for (const Point& p : d.points) v.insert(p.x[c]);
    d.seen[c].assign(v.begin(), v.end());
    d.varies[c] = v.size() > 1;
  }
  return d;
}

std::string describe_run(const Data& d, const Coords& scale) {
  std::string s;
  for (std::size_t c = 0; c < d.n_scale; ++c) s += (s.empty() ? "" : ", ") + d.coords[c] + "=" + short_num(scale[c]);
  return s;
}

// ------------------------------------------------------------------------------------------------ probes

/** Runs not traced where candidate models are compared: each varying run variable moved, one at a time, from
 *  every traced run to a value not traced (P: missing powers of two inside the range and 2x, 4x, 8x the
 *  largest; parameters: 2x and 4x the largest) or to another traced value (holes of the grid). */
struct Probes {
  std::vector<Coords> runs;        // scale coordinates, ordered by P, then parameters
  std::vector<Coords> x;           // points: scale coordinates, then rank when regressed on
  std::vector<Vars> vars;
  std::vector<std::size_t> run_of;
};

Probes make_probes(const Data& d) {
  std::set<Coords> traced;
  for (const Point& p : d.points) traced.insert(Coords(p.x.begin(), p.x.begin() + static_cast<long>(d.n_scale)));
  std::set<Coords> out;
  for (std::size_t c = 0; c < d.n_scale; ++c) {
    if (!d.varies[c]) continue;
    std::vector<double> values = d.seen[c];
    const double lo = values.front(), hi = values.back();
    if (hi > 0) {
      if (c == 0)
        for (double p = 1; p < hi; p *= 2)
          if (p > lo && !std::binary_search(d.seen[c].begin(), d.seen[c].end(), p)) values.push_back(p);
      for (double f : c == 0 ? std::vector<double>{2, 4, 8} : std::vector<double>{2, 4}) values.push_back(hi * f);
    }
    for (const Coords& s : traced)
      for (double v : values) {
        Coords s2 = s;
        s2[c] = v;
        if (!traced.count(s2)) out.insert(s2);
      }
  }
  Probes pr;
  pr.runs.assign(out.begin(), out.end());
  for (std::size_t r = 0; r < pr.runs.size(); ++r) {
    const Coords& s = pr.runs[r];
    std::vector<double> ranks{0};
    if (d.has_rank) {
      const double P = s[0];
      std::set<double> rs;
      if (integral(P) && P >= 1) {
        const double px = std::exp2(std::floor(std::log2(P) / 2));
        for (double k : {0.0, 1.0, px - 1, px, std::floor(P / 2) - 1, std::floor(P / 2), P - 1})
          if (k >= 0 && k < P) rs.insert(k);
      } else {
        rs.insert(0);
      }
      ranks.assign(rs.begin(), rs.end());
    }
    for (double k : ranks) {
      Coords x = s;
      Vars v;
      for (std::size_t c = 0; c < d.n_scale; ++c) v[d.coords[c]] = s[c];
      if (d.has_rank) {
        x.push_back(k);
        v["rank"] = k;
      }
      pr.x.push_back(std::move(x));
      pr.vars.push_back(std::move(v));
      pr.run_of.push_back(r);
    }
  }
  return pr;
}

bool differ(double a, double b, double rel) {
  const bool fa = std::isfinite(a), fb = std::isfinite(b);
  if (!fa || !fb) return fa != fb;
  return std::fabs(a - b) > rel * std::max({std::fabs(a), std::fabs(b), 1e-300});
}

/** A model as the ambiguity report sees it: its text and its values at the probe points. */
struct Candidate {
  std::string text;
  std::vector<double> at;
};

bool separates(const Candidate& a, const Candidate& b, std::size_t q, double rel) { return differ(a.at[q], b.at[q], rel); }

/** Up to MAX_ALTERNATIVES candidates (in the order given) that disagree with `chosen` and with each other
 *  somewhere among the probes. */
template <class Get>
std::vector<Candidate> distinct_alternatives(const Candidate& chosen, std::size_t n, Get get, double rel,
                                             std::size_t max_examined = 400) {
  std::vector<Candidate> out;
  for (std::size_t i = 0; i < n && i < max_examined && out.size() < MAX_ALTERNATIVES; ++i) {
    Candidate c = get(i);
    bool distinct = true;
    for (std::size_t k = 0; distinct && k <= out.size(); ++k) {
      const Candidate& o = k == 0 ? chosen : out[k - 1];
      bool same = true;
      for (std::size_t q = 0; same && q < c.at.size(); ++q) same = !separates(o, c, q, rel);
      distinct = !same;
    }
    if (distinct) out.push_back(std::move(c));
  }
  return out;
}

/** Says which runs not traced tell the models apart: greedily the first probe run (smallest P, then
 *  parameters) that separates a pair of models not yet separated, until every pair is; at each such run,
 *  what every model predicts. */
std::string ambiguity_text(const Data& d, const Probes& pr, const Candidate& chosen, const std::vector<Candidate>& alts,
                           const std::string& how, double rel) {
  if (alts.empty()) return "";
  std::vector<const Candidate*> m{&chosen};
  for (const Candidate& a : alts) m.push_back(&a);
  std::set<std::pair<std::size_t, std::size_t>> open;
  for (std::size_t i = 0; i < m.size(); ++i)
    for (std::size_t j = i + 1; j < m.size(); ++j) open.insert({i, j});
  std::vector<std::size_t> shown;  // one probe point per run picked
  while (!open.empty()) {
    std::size_t pick = pr.x.size();
    for (std::size_t q = 0; q < pr.x.size() && pick == pr.x.size(); ++q)
      for (const auto& [i, j] : open)
        if (separates(*m[i], *m[j], q, rel)) {
          pick = q;
          break;
        }
    if (pick == pr.x.size()) break;
    shown.push_back(pick);
    for (std::size_t q = 0; q < pr.x.size(); ++q) {
      if (pr.run_of[q] != pr.run_of[pick]) continue;
      for (auto it = open.begin(); it != open.end();)
        it = separates(*m[it->first], *m[it->second], q, rel) ? open.erase(it) : std::next(it);
    }
  }
  std::string s = std::to_string(m.size()) + " models " + how + " but differ at runs not traced";
  std::vector<std::string> runs;
  for (std::size_t q : shown) {
    std::string at = describe_run(d, pr.runs[pr.run_of[q]]);
    runs.push_back(at);
    if (d.has_rank) at += " (rank " + short_num(pr.x[q].back()) + ")";
    std::vector<std::string> v;
    for (std::size_t i = 0; i < m.size(); ++i)
      v.push_back("\"" + m[i]->text + "\"" + (i == 0 ? " (kept)" : "") + " gives " + short_num(m[i]->at[q]));
    s += "; at " + at + ": " + join(v, ", ");
  }
  s += runs.size() == 1 ? "; a run at " + runs[0] + " would tell them apart"
                        : "; runs at " + join(runs, " and at ") + " would tell them apart";
  return s;
}

// ------------------------------------------------------------------------------------------------ CV helper

/** Leave-one-run-out mean relative error of the least-squares fit of `cols` (values at the points), or -1
 *  when some run's removal leaves no more points than coefficients. */
double cv_of_columns(const Data& d, const std::vector<std::vector<double>>& cols) {
  const std::size_t n = d.points.size(), c = cols.size();
  if (d.folds.size() < 2) return -1;
  for (const auto& f : d.folds)
    if (n - f.size() < c + 1) return -1;
  std::vector<double> scale(c, 0);
  for (std::size_t j = 0; j < c; ++j)
    for (std::size_t i = 0; i < n; ++i) scale[j] = std::max(scale[j], std::fabs(cols[j][i] / d.points[i].d));
  for (double& s : scale) s = s > 0 ? s : 1;
  double sum = 0;
  for (const auto& f : d.folds) {
    Eigen::MatrixXd A(static_cast<Eigen::Index>(n - f.size()), static_cast<Eigen::Index>(c));
    Eigen::VectorXd b(A.rows());
    Eigen::Index row = 0;
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (k < f.size() && f[k] == i) {
        ++k;
        continue;
      }
      const double w = 1 / d.points[i].d;
      for (std::size_t j = 0; j < c; ++j) A(row, static_cast<Eigen::Index>(j)) = w * cols[j][i] / scale[j];
      b(row++) = w * d.points[i].y;
    }
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
    if (qr.rank() < static_cast<Eigen::Index>(c)) return -1;
    Eigen::VectorXd beta = qr.solve(b);
    for (std::size_t i : f) {
      double pred = 0;
      for (std::size_t j = 0; j < c; ++j) pred += beta(static_cast<Eigen::Index>(j)) * cols[j][i] / scale[j];
      sum += std::fabs(pred - d.points[i].y) / d.points[i].d;
    }
  }
  return sum / static_cast<double>(n);
}

// ------------------------------------------------------------------------------------------------ exact search

/** A column of an exact model: the constant 1 (a, b < 0), feature a, a*b, a/b, or 1/b (a < 0, ratio). */
struct ExactCol {
  int a = -1, b = -1;
  bool ratio = false;
};

std::size_t factors(const ExactCol& c) { return (c.a >= 0 ? 1 : 0) + (c.b >= 0 ? 1 : 0); }

struct ExactModel {
  std::vector<ExactCol> cols;
  std::vector<Coef> coefs;
  std::size_t complexity() const {
    std::size_t n = 0;
    for (const ExactCol& c : cols) n += factors(c);
    return n;
  }
  /** @brief The form, for notes: "a constant", "c*g", "c*g + d", "c1*f1 + c2*f2", "c1*f1 + c2*f2 + d". */
  std::string form() const {
    std::size_t constants = 0;
    for (const ExactCol& c : cols) constants += factors(c) == 0 ? 1 : 0;
    if (cols.size() == constants) return "a constant";
    if (cols.size() == 1) return "c*g (g a feature, its reciprocal, a product or a ratio of two)";
    if (cols.size() == 2) return constants ? "c*g + d" : "c1*f1 + c2*f2";
    return "c1*f1 + c2*f2 + d";
  }
};

struct ExactSpace {
  std::vector<Feature> feats;
  std::vector<std::vector<double>> at_points;  // [feature][point]
  std::vector<std::vector<double>> at_probes;  // [feature][probe point]
};

/** True for a feature that is not a plain variable scaled or shifted: logarithms, roots, floors, powers and
 *  remainders (log2(P), 2^floor(log2(P)/2), rank % 2), against P, P/2, P-1, P-1-rank. */
bool nonlinear(const Feature& f) {
  const std::string& t = f.text();
  return t.find_first_of("^%") != std::string::npos || t.find("log2(") != std::string::npos ||
         t.find("sqrt(") != std::string::npos || t.find("floor(") != std::string::npos || t.find("dims(") != std::string::npos;
}

/** How simple an exact model is, smallest first: feature factors (a product or ratio of two counts two), then
 *  coefficients, then non-linear factors, then repeated factors (P*P): P/2 - 1 before P*log2(P)/8, P/2
 *  before log2(P). */
std::array<std::size_t, 4> simplicity(const ExactModel& m, const std::vector<Feature>& feats) {
  std::size_t curved = 0, repeated = 0;
  for (const ExactCol& c : m.cols) {
    for (int f : {c.a, c.b})
      if (f >= 0 && nonlinear(feats[static_cast<std::size_t>(f)])) ++curved;
    if (c.a >= 0 && c.a == c.b && !c.ratio) ++repeated;
  }
  return {m.complexity(), m.cols.size(), curved, repeated};
}

double col_value(const ExactCol& c, const std::vector<std::vector<double>>& v, std::size_t i) {
  const double x = c.a < 0 ? 1.0 : v[static_cast<std::size_t>(c.a)][i];
  if (c.b < 0) return x;
  const double y = v[static_cast<std::size_t>(c.b)][i];
  return c.ratio ? x / y : x * y;
}

ExactSpace exact_space(const Data& d, const Probes& pr, bool allow_rank) {
  std::vector<Feature> all = scale_features(d.params);
  if (allow_rank)
    for (Feature& f : rank_features(d.params)) all.push_back(std::move(f));
  ExactSpace sp;
  for (Feature& f : all) {
    std::vector<double> v;
    bool ok = true;
    for (const Point& p : d.points) {
      v.push_back(f.eval(p.vars));
      ok = ok && std::isfinite(v.back());
    }
    if (!ok || std::all_of(v.begin(), v.end(), [&](double x) { return x == v.front(); })) continue;
    std::vector<double> w;
    for (const Vars& pv : pr.vars) w.push_back(f.eval(pv));
    sp.feats.push_back(std::move(f));
    sp.at_points.push_back(std::move(v));
    sp.at_probes.push_back(std::move(w));
  }
  return sp;
}

std::string exact_text(const ExactModel& m, const ExactSpace& sp) {
  std::vector<std::pair<bool, std::string>> terms;
  for (std::size_t j = 0; j < m.cols.size(); ++j) {
    if (m.coefs[j].value == 0) continue;
    const ExactCol& c = m.cols[j];
    std::vector<std::string> num, den;
    if (c.a >= 0) num.push_back(sp.feats[static_cast<std::size_t>(c.a)].text());
    if (c.b >= 0) (c.ratio ? den : num).push_back(sp.feats[static_cast<std::size_t>(c.b)].text());
    bool neg = false;
    std::string t = term_text(m.coefs[j], 0, num, den, neg);
    terms.emplace_back(neg, t);
  }
  return sum_text(terms);
}

std::vector<double> exact_at_probes(const ExactModel& m, const ExactSpace& sp, std::size_t nq) {
  std::vector<double> v(nq, 0);
  for (std::size_t q = 0; q < nq; ++q)
    for (std::size_t j = 0; j < m.cols.size(); ++j) v[q] += m.coefs[j].value * col_value(m.cols[j], sp.at_probes, q);
  return v;
}

/** The models that reproduce every point, simplest first (`simplicity`; ties in a fixed order), searched by
 *  level: 0 the constant; 1 c*g; 2 c*g + d and c1*f1 + c2*f2; 3 c1*f1 + c2*f2 + d (g a feature, its
 *  reciprocal, a product or a ratio of two; f features). The search stops at the first level with a model,
 *  except that where level 1 has only products and ratios, level 2's c*g + d of one factor g is tried too:
 *  fewer factors win over fewer coefficients (y = P/2 - 1 at P = 4, 8 is also P*log2(P)/8). */
std::vector<ExactModel> exact_models(const Data& d, const ExactSpace& sp, int max_terms) {
  const std::size_t n = d.points.size();
  std::vector<ExactModel> found;
  auto reproduces = [&](const ExactModel& m, const std::vector<const std::vector<double>*>& vals) {
    for (std::size_t i = 0; i < n; ++i) {
      double pred = 0;
      for (std::size_t j = 0; j < m.cols.size(); ++j) pred += m.coefs[j].value * (vals[j] ? (*vals[j])[i] : 1.0);
      if (!(std::fabs(pred - d.points[i].y) <= allowed(d, d.points[i].y))) return false;
    }
    return true;
  };
  const auto simplest_first = [&](std::vector<ExactModel> ms) {
    std::stable_sort(ms.begin(), ms.end(), [&](const ExactModel& a, const ExactModel& b) {
      return simplicity(a, sp.feats) < simplicity(b, sp.feats);
    });
    return ms;
  };
  // level 0
  {
    ExactModel m{{ExactCol{}}, {rational_coef(d.points[0].y)}};
    if (reproduces(m, {nullptr})) return {m};
  }
  // columns of level 1, with their values
  std::vector<ExactCol> cols;
  std::vector<std::vector<double>> vals;
  std::size_t n_single = 0;
  auto add = [&](ExactCol c) {
    std::vector<double> v(n);
    double lo = INFINITY, hi = -INFINITY, amax = 0;
    for (std::size_t i = 0; i < n; ++i) {
      v[i] = col_value(c, sp.at_points, i);
      if (!std::isfinite(v[i])) return false;
      lo = std::min(lo, v[i]), hi = std::max(hi, v[i]), amax = std::max(amax, std::fabs(v[i]));
    }
    if (hi - lo <= 1e-12 * amax) return false;  // constant on the samples: the constant model covers it
    cols.push_back(c);
    vals.push_back(std::move(v));
    return true;
  };
  const int nf = static_cast<int>(sp.feats.size());
  for (int a = 0; a < nf; ++a) n_single += add({a, -1, false}) ? 1 : 0;
  for (int b = 0; b < nf; ++b) add({-1, b, true});
  for (int a = 0; a < nf; ++a)
    for (int b = a; b < nf; ++b) add({a, b, false});
  for (int a = 0; a < nf; ++a)
    for (int b = 0; b < nf; ++b)
      if (a != b) add({a, b, true});
  std::vector<double> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = d.points[i].y;
  double ymean = 0;
  for (double v : y) ymean += v / static_cast<double>(n);

  auto with_constant = [&](std::size_t k) {
    double gm = 0;
    for (std::size_t i = 0; i < n; ++i) gm += vals[k][i] / static_cast<double>(n);
    double sxx = 0, sxy = 0;
    for (std::size_t i = 0; i < n; ++i) sxx += (vals[k][i] - gm) * (vals[k][i] - gm), sxy += (vals[k][i] - gm) * (y[i] - ymean);
    const double b = sxy / sxx;
    ExactModel m{{cols[k], ExactCol{}}, {rational_coef(b), rational_coef(ymean - b * gm)}};
    if (reproduces(m, {&vals[k], nullptr})) found.push_back(std::move(m));
  };

  // level 1: c*g
  for (std::size_t k = 0; k < cols.size(); ++k) {
    double sxy = 0, sxx = 0;
    for (std::size_t i = 0; i < n; ++i) sxy += vals[k][i] * y[i], sxx += vals[k][i] * vals[k][i];
    ExactModel m{{cols[k]}, {rational_coef(sxy / sxx)}};
    if (reproduces(m, {&vals[k]})) found.push_back(std::move(m));
  }
  if (!found.empty()) {
    const bool one_factor = std::any_of(found.begin(), found.end(), [](const ExactModel& m) { return m.complexity() == 1; });
    if (!one_factor)
      for (std::size_t k = 0; k < cols.size(); ++k)
        if (factors(cols[k]) == 1) with_constant(k);
    return simplest_first(std::move(found));
  }

  // level 2
  // c1*f1 + c2*f2 (+ d): normal equations of the scaled columns first (cheap); a model that nearly fits but
  // fails the check after rounding is solved again by column-pivoting QR (accurate).
  auto by_pair = [&](std::size_t ka, std::size_t kb, bool constant) {
    const std::size_t ks[2] = {ka, kb};
    const int c = constant ? 3 : 2;
    double scale[2] = {0, 0};
    for (int j = 0; j < 2; ++j)
      for (std::size_t i = 0; i < n; ++i) scale[j] = std::max(scale[j], std::fabs(vals[ks[j]][i]));
    auto z = [&](int j, std::size_t i) { return j < 2 ? vals[ks[j]][i] / scale[j] : 1.0; };
    Eigen::Matrix3d G = Eigen::Matrix3d::Zero();
    Eigen::Vector3d r = Eigen::Vector3d::Zero();
    for (std::size_t i = 0; i < n; ++i)
      for (int u = 0; u < c; ++u) {
        r(u) += z(u, i) * y[i];
        for (int v = 0; v < c; ++v) G(u, v) += z(u, i) * z(v, i);
      }
    auto ldlt = G.topLeftCorner(c, c).ldlt();
    const double dmax = ldlt.vectorD().cwiseAbs().maxCoeff();
    if (ldlt.info() != Eigen::Success || !(dmax > 0) || ldlt.vectorD().minCoeff() <= 1e-12 * dmax) return;
    Eigen::VectorXd beta = ldlt.solve(r.head(c));
    auto model = [&](const Eigen::VectorXd& bt, std::vector<const std::vector<double>*>& vp) {
      ExactModel m;
      for (int j = 0; j < 2; ++j) {
        m.cols.push_back(cols[ks[j]]);
        m.coefs.push_back(rational_coef(bt(j) / scale[j]));
        vp.push_back(&vals[ks[j]]);
      }
      if (constant) {
        m.cols.push_back(ExactCol{});
        m.coefs.push_back(rational_coef(bt(2)));
        vp.push_back(nullptr);
      }
      return m;
    };
    std::vector<const std::vector<double>*> vp;
    ExactModel m = model(beta, vp);
    if (reproduces(m, vp)) {
      found.push_back(std::move(m));
      return;
    }
    double worst = 0;  // of the unrounded solution
    for (std::size_t i = 0; i < n; ++i) {
      double pred = 0;
      for (int j = 0; j < c; ++j) pred += beta(j) * z(j, i);
      worst = std::max(worst, std::fabs(pred - y[i]) / std::max(std::fabs(y[i]), 1.0));
    }
    if (worst > 1e-6) return;
    Eigen::MatrixXd A(static_cast<Eigen::Index>(n), c);
    for (std::size_t i = 0; i < n; ++i)
      for (int j = 0; j < c; ++j) A(static_cast<Eigen::Index>(i), j) = z(j, i);
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
    if (qr.rank() < c) return;
    vp.clear();
    m = model(qr.solve(Eigen::Map<const Eigen::VectorXd>(y.data(), static_cast<Eigen::Index>(n))), vp);
    if (reproduces(m, vp)) found.push_back(std::move(m));
  };
  for (std::size_t k = 0; k < n_single; ++k) with_constant(k);
  if (max_terms >= 2)
    for (std::size_t a = 0; a < n_single; ++a)
      for (std::size_t b = a + 1; b < n_single; ++b) by_pair(a, b, false);
  for (std::size_t k = n_single; k < cols.size(); ++k) with_constant(k);
  if (!found.empty() || max_terms < 2) return simplest_first(std::move(found));

  // level 3
  for (std::size_t a = 0; a < n_single; ++a)
    for (std::size_t b = a + 1; b < n_single; ++b) by_pair(a, b, true);
  return simplest_first(std::move(found));
}

// ------------------------------------------------------------------------------------------------ least squares

using SmallMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, 4, 4>;
using SmallVec = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, 4, 1>;

/** x^(num/den) * log2(x)^k of coordinate `coord`. */
struct Factor {
  std::size_t coord;
  int num, den, k;
};
using Term = std::vector<Factor>;  // a product of factors of different coordinates; empty = the constant

constexpr std::array<std::array<int, 2>, 27> EXPONENTS{{{0, 1}, {1, 4}, {1, 3}, {1, 2}, {2, 3}, {3, 4}, {1, 1},
                                                        {5, 4}, {4, 3}, {3, 2}, {5, 3}, {7, 4}, {2, 1}, {9, 4},
                                                        {7, 3}, {5, 2}, {8, 3}, {11, 4}, {3, 1}, {-1, 4}, {-1, 3},
                                                        {-1, 2}, {-2, 3}, {-3, 4}, {-1, 1}, {-3, 2}, {-2, 1}}};

double factor_value(const Factor& f, double x) {
  double v = 1;
  if (f.num != 0) v = f.den == 1 ? std::pow(x, f.num) : std::pow(x, static_cast<double>(f.num) / f.den);
  if (f.k > 0) {
    const double l = std::log2(x);
    v *= f.k == 1 ? l : l * l;
  }
  return v;
}

double term_value(const Term& t, const Coords& x) {
  double v = 1;
  for (const Factor& f : t) v *= factor_value(f, x[f.coord]);
  return v;
}

void term_parts(const Term& t, const Data& d, std::vector<std::string>& num, std::vector<std::string>& den) {
  for (const Factor& f : t) {
    const std::string& x = d.coords[f.coord];
    if (f.num != 0) {
      const int a = f.num < 0 ? -f.num : f.num;
      std::string p = a == 1 && f.den == 1   ? x
                      : a == 1 && f.den == 2 ? "sqrt(" + x + ")"
                      : f.den == 1           ? x + "^" + std::to_string(a)
                                             : x + "^(" + std::to_string(a) + "/" + std::to_string(f.den) + ")";
      (f.num < 0 ? den : num).push_back(p);
    }
    if (f.k == 1) num.push_back("log2(" + x + ")");
    if (f.k == 2) num.push_back("log2(" + x + ")^2");
  }
}

/** How complex a factor is: an integer power 1, a fractional one 2, a reciprocal 1 more, each log2 1 more. */
int factor_cost(const Factor& a) { return (a.num == 0 ? 0 : (a.den == 1 ? 1 : 2)) + (a.num < 0 ? 1 : 0) + a.k; }

// Candidate factors of one coordinate, simplest first: non-positive values allow only x, x^2, x^3.
std::vector<Factor> factor_candidates(const Data& d, std::size_t c) {
  std::vector<Factor> f;
  if (d.seen[c].front() <= 0) {
    for (int e = 1; e <= 3; ++e) f.push_back({c, e, 1, 0});
    return f;
  }
  for (const auto& [num, den] : EXPONENTS)
    for (int k = 0; k <= 2; ++k) {
      const double e = static_cast<double>(num) / den;
      if (c == 0 && (e > d.max_p_power || (e == d.max_p_power && k > 0))) continue;  // P grows too fast
      if (num != 0 || k != 0) f.push_back({c, num, den, k});
    }
  auto key = [](const Factor& a) {
    const double e = static_cast<double>(a.num) / a.den;
    return std::make_tuple(factor_cost(a), std::fabs(e - 1), -e, a.k);
  };
  std::stable_sort(f.begin(), f.end(), [&](const Factor& a, const Factor& b) { return key(a) < key(b); });
  return f;
}

/** One coordinate's factors, best first; whether the coordinate matters at all; the two factors of its
 *  best two-term model along lines (candidates for the cross-coordinate hypotheses). */
struct Ranked {
  std::vector<Factor> factors;
  bool matters = true;
  std::vector<Factor> pair;
};

// The `k` best factors of one coordinate, with its basic ones (x, x^2, log2(x), 1/x) after them.
std::vector<Factor> pool_of(const std::vector<Factor>& ranked, std::size_t k) {
  std::vector<Factor> p(ranked.begin(), ranked.begin() + static_cast<long>(std::min(k, ranked.size())));
  for (const Factor& f : ranked) {
    const bool basic = f.den == 1 && ((f.k == 0 && (f.num == 1 || f.num == 2 || f.num == -1)) || (f.k == 1 && f.num == 0));
    if (basic && std::none_of(p.begin(), p.end(), [&](const Factor& g) { return g.num == f.num && g.den == f.den && g.k == f.k; }))
      p.push_back(f);
  }
  return p;
}

// Leave-one-out relative error, along one line (points g), of the weighted least-squares fit of the constant
// plus the columns `t` (0, 1 or 2 of them; values per point of g).
double line_loo(const Data& d, const std::vector<std::size_t>& g, const std::vector<std::vector<double>>& t) {
  const auto c = static_cast<Eigen::Index>(t.size() + 1);
  double err = 0;
  for (std::size_t out = 0; out < g.size(); ++out) {
    SmallMat A = SmallMat::Zero(c, c);
    SmallVec r = SmallVec::Zero(c);
    SmallVec z(c);
    for (std::size_t j = 0; j < g.size(); ++j) {
      if (j == out) continue;
      const Point& p = d.points[g[j]];
      z(0) = 1 / p.d;
      for (std::size_t k = 0; k < t.size(); ++k) z(static_cast<Eigen::Index>(k + 1)) = t[k][j] / p.d;
      A += z * z.transpose();
      r += z * (p.y / p.d);
    }
    Eigen::LDLT<SmallMat> ldlt(A);
    const double dmax = ldlt.vectorD().cwiseAbs().maxCoeff();
    if (ldlt.info() != Eigen::Success || !(dmax > 0) || ldlt.vectorD().minCoeff() <= 1e-12 * dmax) return INFINITY;
    const SmallVec beta = ldlt.solve(r);
    double pred = beta(0);
    for (std::size_t k = 0; k < t.size(); ++k) pred += beta(static_cast<Eigen::Index>(k + 1)) * t[k][out];
    err += std::fabs(pred - d.points[g[out]].y) / d.points[g[out]].d;
  }
  return std::isfinite(err) ? err : INFINITY;
}

// Ranks the factors of a coordinate that takes only two values along every line (two problem sizes, the common
// case of a user's runs). a + b*factor fits two points whatever the factor, so the lines cannot rank factors that
// way, and the simplest-first order would leave N^3 (a 3-D grid's volume) out of the products the search tries.
// A product term c*f(x)*g(y) has no constant of its own along a line: y = b*factor through the origin, whose
// residual does tell exponents apart (y doubling when x doubles: x; eightfold: x^3). The coordinate matters unless
// along those lines the best factor leaves more of y unexplained than the constant does (y the same at both
// values, or changing by no more than noise).
Ranked rank_factors_two_values(const Data& d, std::size_t c, const std::vector<Factor>& cands,
                               const std::map<Coords, std::vector<std::size_t>>& lines) {
  std::vector<std::vector<std::size_t>> groups;
  for (const auto& [k, g] : lines) {
    std::set<double> s;
    for (std::size_t i : g) s.insert(d.points[i].x[c]);
    if (s.size() == 2) groups.push_back(g);
  }
  if (groups.empty()) return {cands, true, {}};
  double constant = 0;  // residual of the line's weighted mean, over all lines
  for (const auto& g : groups) {
    double W = 0, ym = 0;
    for (std::size_t i : g) W += 1 / (d.points[i].d * d.points[i].d), ym += d.points[i].y / (d.points[i].d * d.points[i].d);
    ym /= W;
    for (std::size_t i : g) constant += std::pow((d.points[i].y - ym) / d.points[i].d, 2);
  }
  std::vector<std::pair<double, std::size_t>> scored;
  for (std::size_t fi = 0; fi < cands.size(); ++fi) {
    double rss = 0;
    for (const auto& g : groups) {
      double stt = 0, sty = 0, syy = 0;
      for (std::size_t i : g) {
        const Point& p = d.points[i];
        const double t = factor_value(cands[fi], p.x[c]) / p.d, y = p.y / p.d;
        stt += t * t, sty += t * y, syy += y * y;
      }
      rss += std::isfinite(stt) && stt > 1e-300 ? std::max(0.0, syy - sty * sty / stt) : syy;
    }
    scored.emplace_back(std::isfinite(rss) ? rss : INFINITY, fi);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Ranked out;
  for (const auto& [s, fi] : scored) out.factors.push_back(cands[fi]);
  out.matters = !(constant <= scored.front().first);
  return out;
}

// Ranks the factors of coordinate c by how well a + b*factor explains the data along lines where the other
// coordinates are fixed (Extra-P's single-parameter step); stable, so ties keep the simplest first. The
// coordinate matters unless, along those lines, none of its three best factors predicts left-out points
// clearly better (by 20%) than the mean does.
Ranked rank_factors(const Data& d, std::size_t c) {
  std::vector<Factor> cands = factor_candidates(d, c);
  std::map<Coords, std::vector<std::size_t>> lines;
  for (std::size_t i = 0; i < d.points.size(); ++i) {
    Coords other = d.points[i].x;
    other.erase(other.begin() + static_cast<long>(c));
    lines[other].push_back(i);
  }
  auto distinct = [&](const std::vector<std::size_t>& g) {
    std::set<double> s;
    for (std::size_t i : g) s.insert(d.points[i].x[c]);
    return s.size();
  };
  std::vector<std::vector<std::size_t>> groups;
  for (auto& [k, g] : lines)
    if (distinct(g) >= 3) groups.push_back(g);
  if (groups.empty()) {
    std::vector<std::size_t> all(d.points.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    if (distinct(all) >= 3) groups.push_back(all);
  }
  if (groups.empty()) return rank_factors_two_values(d, c, cands, lines);
  std::vector<std::pair<double, std::size_t>> scored;
  for (std::size_t fi = 0; fi < cands.size(); ++fi) {
    double score = 0;
    for (const auto& g : groups) {
      double W = 0, tm = 0, ym = 0;
      std::vector<double> t(g.size());
      for (std::size_t j = 0; j < g.size(); ++j) {
        const Point& p = d.points[g[j]];
        const double w2 = 1 / (p.d * p.d);
        t[j] = factor_value(cands[fi], p.x[c]);
        W += w2, tm += w2 * t[j], ym += w2 * p.y;
      }
      tm /= W, ym /= W;
      double sxx = 0, sxy = 0, syy = 0;
      for (std::size_t j = 0; j < g.size(); ++j) {
        const Point& p = d.points[g[j]];
        const double w2 = 1 / (p.d * p.d);
        sxx += w2 * (t[j] - tm) * (t[j] - tm), sxy += w2 * (t[j] - tm) * (p.y - ym), syy += w2 * (p.y - ym) * (p.y - ym);
      }
      if (!(syy > 0)) continue;
      score += (std::isfinite(sxx) && sxx > 1e-300) ? std::max(0.0, syy - sxy * sxy / sxx) / syy : 1.0;
    }
    scored.emplace_back(std::isfinite(score) ? score : INFINITY, fi);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Ranked out;
  for (const auto& [s, fi] : scored) out.factors.push_back(cands[fi]);
  auto values = [&](const std::vector<std::size_t>& g, const Factor& f) {
    std::vector<double> t;
    for (std::size_t i : g) t.push_back(factor_value(f, d.points[i].x[c]));
    return t;
  };
  double base = 0, best = INFINITY;
  for (const auto& g : groups) base += line_loo(d, g, {});
  for (std::size_t r = 0; r < 3 && r < out.factors.size(); ++r) {
    double e = 0;
    for (const auto& g : groups) e += line_loo(d, g, {values(g, out.factors[r])});
    best = std::min(best, e);
  }
  out.matters = best < 0.8 * base;
  // Two terms along lines of at least five distinct values (Extra-P's two-term single-parameter models).
  std::vector<std::vector<std::size_t>> long_lines;
  for (const auto& g : groups)
    if (distinct(g) >= 5) long_lines.push_back(g);
  if (out.matters && !long_lines.empty()) {
    // Shortlist pairs of the best 40 factors by their residual along the lines (normal equations of each
    // line, columns scaled), then keep the pair that predicts left-out points best.
    const auto pool = pool_of(out.factors, 40);
    const std::size_t k = pool.size() + 1;
    std::vector<std::vector<double>> gram, rhs;  // per line: [1, pool...] weighted and scaled
    std::vector<double> yy;
    for (const auto& g : long_lines) {
      std::vector<std::vector<double>> z(k, std::vector<double>(g.size()));
      std::vector<double> wy(g.size());
      for (std::size_t j = 0; j < g.size(); ++j) {
        const Point& p = d.points[g[j]];
        z[0][j] = 1 / p.d;
        for (std::size_t a = 0; a < pool.size(); ++a) z[a + 1][j] = factor_value(pool[a], p.x[c]) / p.d;
        wy[j] = p.y / p.d;
      }
      for (auto& col : z) {
        double m = 0;
        for (double v : col) m = std::max(m, std::fabs(v));
        for (double& v : col) v = m > 0 && std::isfinite(m) ? v / m : 0;
      }
      std::vector<double> G(k * k), b(k);
      for (std::size_t a = 0; a < k; ++a) {
        for (std::size_t j = 0; j < g.size(); ++j) b[a] += z[a][j] * wy[j];
        for (std::size_t e = 0; e < k; ++e)
          for (std::size_t j = 0; j < g.size(); ++j) G[a * k + e] += z[a][j] * z[e][j];
      }
      double s2 = 0;
      for (double v : wy) s2 += v * v;
      gram.push_back(std::move(G)), rhs.push_back(std::move(b)), yy.push_back(s2);
    }
    std::vector<std::pair<double, std::pair<std::size_t, std::size_t>>> shortlist;
    for (std::size_t a = 1; a < k; ++a)
      for (std::size_t e = a + 1; e < k; ++e) {
        const std::size_t idx[3] = {0, a, e};
        double rss = 0;
        for (std::size_t l = 0; l < gram.size() && std::isfinite(rss); ++l) {
          SmallMat A(3, 3);
          SmallVec r(3);
          for (int u = 0; u < 3; ++u) {
            r(u) = rhs[l][idx[u]];
            for (int v = 0; v < 3; ++v) A(u, v) = gram[l][idx[u] * k + idx[v]];
          }
          Eigen::LDLT<SmallMat> ldlt(A);
          const double dmax = ldlt.vectorD().cwiseAbs().maxCoeff();
          // near-collinear pairs (x^(5/3), x^(7/4)) cancel each other: not a model
          if (ldlt.info() != Eigen::Success || !(dmax > 0) || ldlt.vectorD().minCoeff() <= 1e-8 * dmax) rss = INFINITY;
          else rss += std::max(0.0, yy[l] - r.dot(ldlt.solve(r)));
        }
        if (std::isfinite(rss)) shortlist.push_back({rss, {a - 1, e - 1}});
      }
    std::stable_sort(shortlist.begin(), shortlist.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    double best_pair = INFINITY;
    for (std::size_t i = 0; i < shortlist.size() && i < 8; ++i) {
      const auto [a, b] = shortlist[i].second;
      double e = 0;
      for (const auto& g : long_lines) e += line_loo(d, g, {values(g, pool[a]), values(g, pool[b])});
      if (e < best_pair) best_pair = e, out.pair = {pool[a], pool[b]};
    }
  }
  return out;
}

/** A least-squares hypothesis: the constant (column 0) plus up to three terms (columns 1..T). */
// The two-sided 95% quantile of Student's t with k degrees of freedom (k = 0: infinite).
double student_t975(std::size_t k) {
  static constexpr double table[] = {INFINITY, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                     2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                     2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (k < std::size(table)) return table[k];
  return 1.95996 + 2.37 / static_cast<double>(k);  // within 0.003 from 30 on
}

struct Hyp {
  std::array<std::size_t, 4> col{};
  std::size_t c = 0;
  double score = INFINITY;
};

/** The least-squares search in the way of Extra-P's multi-parameter modeler: each varying coordinate's
 *  factors ranked alone (rank_factors), then hypotheses of the constant plus
 *   one term:    any factor of one coordinate, or a product of top or basic factors of several;
 *   two terms:   two factors of one coordinate; f(x) + g(y); f(x)*g(y) + h(x) or + h(y);
 *   three terms: three factors of one coordinate; f(x) + g(y) + f(x)*g(y); f(x) + g(y) + h(z);
 *  where only coordinates that matter (rank_factors) enter products and sums; each hypothesis fitted by
 *  weighted least squares (relative residuals) and scored. */
class LeastSquares {
 public:
  LeastSquares(const Data& d, const Probes& pr, int max_terms) : d_(d), pr_(pr) {
    add_term({});
    std::vector<std::size_t> vc;
    for (std::size_t c = 0; c < d.coords.size(); ++c)
      if (d.varies[c]) vc.push_back(c);
    const std::size_t m = vc.size();
    std::vector<std::vector<Factor>> ranked, pairs;
    std::vector<std::size_t> act;  // coordinates that matter: only they enter products and sums
    for (std::size_t j = 0; j < m; ++j) {
      Ranked r = rank_factors(d, vc[j]);
      ranked.push_back(std::move(r.factors));
      pairs.push_back(std::move(r.pair));
      if (r.matters) act.push_back(j);
    }
    auto one = [&](const Factor& f) { return add_term({f}); };
    auto product = [&](std::vector<Factor> fs) { return add_term(std::move(fs)); };
    const std::size_t kp = act.size() <= 2 ? 3 : (act.size() == 3 ? 2 : 1);  // top factors per coordinate in products
    std::vector<std::vector<Factor>> cross(m);  // each active coordinate's top kp factors and its basic ones
    for (std::size_t j : act) {
      cross[j] = pool_of(ranked[j], kp);
      for (const Factor& f : pairs[j])
        if (std::none_of(cross[j].begin(), cross[j].end(), [&](const Factor& g) { return g.num == f.num && g.den == f.den && g.k == f.k; }))
          cross[j].push_back(f);
    }

    hyp({});
    for (std::size_t j = 0; j < m; ++j)
      for (const Factor& f : ranked[j]) hyp({one(f)});
    for (std::size_t a = 0; a < act.size(); ++a)
      for (std::size_t b = a + 1; b < act.size(); ++b)
        for (const Factor& fa : cross[act[a]])
          for (const Factor& fb : cross[act[b]]) hyp({product({fa, fb})});
    // three coordinates: products of each one's top factors and basic ones (cross), not only the top one of each:
    // along P's lines, a rank 5% high at P = 9 put log2(P)/P^2 first, and SUMMA's N^2*nb/P was never tried
    if (act.size() >= 3)
      for (std::size_t a = 0; a < act.size(); ++a)
        for (std::size_t b = a + 1; b < act.size(); ++b)
          for (std::size_t c = b + 1; c < act.size(); ++c)
            for (const Factor& fa : cross[act[a]])
              for (const Factor& fb : cross[act[b]])
                for (const Factor& fc : cross[act[c]]) hyp({product({fa, fb, fc})});
    if (max_terms >= 2) {
      for (std::size_t j : act) {
        const auto pool = pool_of(ranked[j], 8);
        for (std::size_t a = 0; a < pool.size(); ++a)
          for (std::size_t b = a + 1; b < pool.size(); ++b) hyp({one(pool[a]), one(pool[b])});
      }
      for (std::size_t a = 0; a < act.size(); ++a)
        for (std::size_t b = a + 1; b < act.size(); ++b) {
          const auto& pa = cross[act[a]];
          const auto& pb = cross[act[b]];
          for (const Factor& fa : pa)
            for (const Factor& fb : pb) hyp({one(fa), one(fb)});
          for (const Factor& fa : pa)
            for (const Factor& fb : pb) {
              const std::size_t p = product({fa, fb});
              for (const Factor& f : pa) hyp({p, one(f)});
              for (const Factor& f : pb) hyp({p, one(f)});
            }
        }
    }
    if (max_terms >= 3) {
      for (std::size_t j : act) {
        const auto pool = pool_of(ranked[j], 6);
        for (std::size_t a = 0; a < pool.size(); ++a)
          for (std::size_t b = a + 1; b < pool.size(); ++b)
            for (std::size_t c = b + 1; c < pool.size(); ++c) hyp({one(pool[a]), one(pool[b]), one(pool[c])});
      }
      for (std::size_t a = 0; a < act.size(); ++a)
        for (std::size_t b = a + 1; b < act.size(); ++b) {
          const auto& ra = ranked[act[a]];
          const auto& rb = ranked[act[b]];
          for (std::size_t i = 0; i < 2 && i < ra.size(); ++i)
            for (std::size_t k = 0; k < 2 && k < rb.size(); ++k) hyp({one(ra[i]), one(rb[k]), product({ra[i], rb[k]})});
          for (std::size_t c = b + 1; c < act.size(); ++c) hyp({one(ra[0]), one(rb[0]), one(ranked[act[c]][0])});
        }
    }
    prepare_gram();
    for (Hyp& h : hyps_) h.score = score(h);
  }

  bool cv_mode() const { return cv_mode_; }
  const std::vector<Hyp>& hypotheses() const { return hyps_; }
  const Term& term(std::size_t j) const { return terms_[j]; }

  /** Selection score (lower is better): leave-one-run-out mean relative error, or 1 - adjusted R^2.
   *  With cross-validation a hypothesis of c coefficients needs 4(c - 1) distinct points (one term: 4, two:
   *  8, three: 12), in the spirit of Extra-P's five points per parameter: fewer invite overfitting. */
  double score(const Hyp& h, std::vector<double>* errors = nullptr) const {
    const std::size_t n = d_.points.size();
    if (cv_mode_) {
      if (h.c > 1 && n < 4 * (h.c - 1)) return INFINITY;
      for (const auto& f : d_.folds)
        if (n - f.size() < h.c + 1) return INFINITY;
      double sum = 0;
      for (std::size_t f = 0; f < d_.folds.size(); ++f) {
        SmallVec beta;
        if (!solve(h, f + 1, beta)) return INFINITY;
        for (std::size_t i : d_.folds[f]) {
          const double e = std::fabs(predict_w(h, beta, i) - wy_[i]);
          sum += e;
          if (errors) errors->push_back(e);
        }
      }
      return sum / static_cast<double>(n);
    }
    if (!(h.c < n || (h.c == n && n == 2))) return INFINITY;
    SmallVec beta;
    if (!solve(h, 0, beta)) return INFINITY;
    double rss = 0;
    for (std::size_t i = 0; i < n; ++i) rss += std::pow(predict_w(h, beta, i) - wy_[i], 2);
    if (!(tss_ > 0)) return 0;
    if (h.c == n) return rss / tss_;
    return (rss / static_cast<double>(n - h.c)) / (tss_ / static_cast<double>(n - 1));
  }

  /** The weighted, column-scaled least-squares system A beta = b of hypothesis h over all points. */
  void weighted_system(const Hyp& h, Eigen::MatrixXd& A, Eigen::VectorXd& b) const {
    const std::size_t n = d_.points.size();
    A.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(h.c));
    b.resize(static_cast<Eigen::Index>(n));
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < h.c; ++j) A(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = Z_[i * T_ + h.col[j]];
      b(static_cast<Eigen::Index>(i)) = wy_[i];
    }
  }

  /** Coefficients of the full fit (unscaled, per column of h), by Eigen's column-pivoting QR. */
  std::optional<std::vector<double>> fit(const Hyp& h) const {
    Eigen::MatrixXd A;
    Eigen::VectorXd b;
    weighted_system(h, A, b);
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
    if (qr.rank() < static_cast<Eigen::Index>(h.c)) return std::nullopt;
    Eigen::VectorXd beta = qr.solve(b);
    std::vector<double> coef(h.c);
    for (std::size_t j = 0; j < h.c; ++j) coef[j] = beta(static_cast<Eigen::Index>(j)) / scale_[h.col[j]];
    return coef;
  }

  /** Student t statistics (coefficient / standard error) of the weighted full fit of h, per column; empty
   *  when the fit is singular or has no residual degrees of freedom. Column scaling does not change them. */
  std::vector<double> t_values(const Hyp& h) const {
    const std::size_t n = d_.points.size();
    if (n <= h.c) return {};
    Eigen::MatrixXd A;
    Eigen::VectorXd b;
    weighted_system(h, A, b);
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
    if (qr.rank() < static_cast<Eigen::Index>(h.c)) return {};
    const Eigen::VectorXd beta = qr.solve(b);
    const double s2 = (A * beta - b).squaredNorm() / static_cast<double>(n - h.c);
    const Eigen::MatrixXd inv = (A.transpose() * A).inverse();
    std::vector<double> t(h.c);
    for (std::size_t j = 0; j < h.c; ++j) {
      const double se = std::sqrt(s2 * inv(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(j)));
      const double bj = beta(static_cast<Eigen::Index>(j));
      t[j] = se > 0 ? std::fabs(bj) / se : (bj != 0 ? INFINITY : 0);
    }
    return t;
  }

  double value(const Hyp& h, const std::vector<double>& coef, const Coords& x) const {
    double v = 0;
    for (std::size_t j = 0; j < h.c; ++j) v += coef[j] * term_value(terms_[h.col[j]], x);
    return v;
  }

  std::vector<double> at_probes(const Hyp& h, const std::vector<double>& coef) const {
    std::vector<double> v;
    for (const Coords& x : pr_.x) v.push_back(value(h, coef, x));
    return v;
  }

  std::string text(const Hyp& h, const std::vector<double>& coef, int precision) const {
    std::vector<std::pair<bool, std::string>> parts;
    for (int pass = 0; pass < 2; ++pass)  // terms first, the constant last
      for (std::size_t j = 0; j < h.c; ++j) {
        if ((h.col[j] == 0) != (pass == 1) || coef[j] == 0) continue;
        std::vector<std::string> num, den;
        term_parts(terms_[h.col[j]], d_, num, den);
        Coef c;
        c.value = coef[j];
        bool neg = false;
        std::string t = term_text(c, precision, num, den, neg);
        parts.emplace_back(neg, t);
      }
    return sum_text(parts);
  }

 private:
  static constexpr std::size_t NONE = static_cast<std::size_t>(-1);

  // Index of a term (added if new), or NONE when it is not finite or is constant on the samples.
  std::size_t add_term(Term t) {
    std::string key;
    for (const Factor& f : t)
      key += std::to_string(f.coord) + ":" + std::to_string(f.num) + "/" + std::to_string(f.den) + ":" + std::to_string(f.k) + ";";
    if (auto it = index_.find(key); it != index_.end()) return it->second;
    std::vector<double> v;
    double lo = INFINITY, hi = -INFINITY, amax = 0;
    bool ok = true;
    for (const Point& p : d_.points) {
      v.push_back(term_value(t, p.x));
      ok = ok && std::isfinite(v.back());
      lo = std::min(lo, v.back()), hi = std::max(hi, v.back()), amax = std::max(amax, std::fabs(v.back()));
    }
    std::size_t idx = NONE;
    if (ok && (t.empty() || hi - lo > 1e-12 * amax)) {
      idx = terms_.size();
      terms_.push_back(std::move(t));
      raw_.push_back(std::move(v));
    }
    index_.emplace(key, idx);
    return idx;
  }

  void hyp(std::vector<std::size_t> ts) {
    for (std::size_t t : ts)
      if (t == NONE) return;
    std::vector<std::size_t> key = ts;
    std::sort(key.begin(), key.end());
    if (std::adjacent_find(key.begin(), key.end()) != key.end() || !seen_.insert(key).second) return;
    Hyp h;
    h.col[h.c++] = 0;
    for (std::size_t t : ts) h.col[h.c++] = t;
    hyps_.push_back(h);
  }

  void prepare_gram() {
    const std::size_t n = d_.points.size();
    T_ = terms_.size();
    Z_.assign(n * T_, 0);
    wy_.resize(n);
    scale_.assign(T_, 0);
    for (std::size_t j = 0; j < T_; ++j)
      for (std::size_t i = 0; i < n; ++i) {
        const double z = raw_[j][i] / d_.points[i].d;
        Z_[i * T_ + j] = z;
        scale_[j] = std::max(scale_[j], std::fabs(z));
      }
    for (std::size_t j = 0; j < T_; ++j) {
      if (!(scale_[j] > 0)) scale_[j] = 1;
      for (std::size_t i = 0; i < n; ++i) Z_[i * T_ + j] /= scale_[j];
    }
    for (std::size_t i = 0; i < n; ++i) wy_[i] = d_.points[i].y / d_.points[i].d;
    const std::size_t F = d_.folds.size();
    // Gram entries over all points, only for the pairs of columns some hypothesis uses.
    G_.assign(T_ * T_, NAN);
    b_.assign(T_, 0);
    for (std::size_t a = 0; a < T_; ++a)
      for (std::size_t i = 0; i < n; ++i) b_[a] += Z_[i * T_ + a] * wy_[i];
    for (const Hyp& h : hyps_)
      for (std::size_t a = 0; a < h.c; ++a)
        for (std::size_t b = 0; b < h.c; ++b) {
          double& g = G_[h.col[a] * T_ + h.col[b]];
          if (!std::isnan(g)) continue;
          g = 0;
          for (std::size_t i = 0; i < n; ++i) g += Z_[i * T_ + h.col[a]] * Z_[i * T_ + h.col[b]];
        }
    std::size_t max_fold = 0;
    for (const auto& f : d_.folds) max_fold = std::max(max_fold, f.size());
    cv_mode_ = F >= 3 && n - max_fold >= 3;
    double W = 0, ym = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double w2 = 1 / (d_.points[i].d * d_.points[i].d);
      W += w2, ym += w2 * d_.points[i].y;
    }
    ym /= W;
    for (std::size_t i = 0; i < n; ++i) tss_ += std::pow((d_.points[i].y - ym) / d_.points[i].d, 2);
  }

  // Normal equations of h over all points (fold 0) or all but fold f - 1's points.
  bool solve(const Hyp& h, std::size_t fold, SmallVec& beta) const {
    SmallMat A(static_cast<Eigen::Index>(h.c), static_cast<Eigen::Index>(h.c));
    SmallVec r(static_cast<Eigen::Index>(h.c));
    for (std::size_t a = 0; a < h.c; ++a) {
      const std::size_t ca = h.col[a];
      double ra = b_[ca];
      if (fold)
        for (std::size_t i : d_.folds[fold - 1]) ra -= Z_[i * T_ + ca] * wy_[i];
      r(static_cast<Eigen::Index>(a)) = ra;
      for (std::size_t b = 0; b < h.c; ++b) {
        const std::size_t cb = h.col[b];
        double g = G_[ca * T_ + cb];
        if (fold)
          for (std::size_t i : d_.folds[fold - 1]) g -= Z_[i * T_ + ca] * Z_[i * T_ + cb];
        A(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) = g;
      }
    }
    Eigen::LDLT<SmallMat> ldlt(A);
    if (ldlt.info() != Eigen::Success) return false;
    const auto D = ldlt.vectorD();
    const double dmax = D.cwiseAbs().maxCoeff();
    if (!(dmax > 0) || D.minCoeff() <= 1e-12 * dmax) return false;
    beta = ldlt.solve(r);
    return beta.allFinite();
  }

  double predict_w(const Hyp& h, const SmallVec& beta, std::size_t i) const {
    double v = 0;
    for (std::size_t j = 0; j < h.c; ++j) v += Z_[i * T_ + h.col[j]] * beta(static_cast<Eigen::Index>(j));
    return v;
  }

  const Data& d_;
  const Probes& pr_;
  std::vector<Term> terms_;                  // [0] is the constant
  std::vector<std::vector<double>> raw_;     // [term][point]
  std::map<std::string, std::size_t> index_;
  std::set<std::vector<std::size_t>> seen_;
  std::vector<Hyp> hyps_;                    // in order of complexity
  std::size_t T_ = 0;
  std::vector<double> Z_;                    // points x terms, weighted by 1/d and scaled per column
  std::vector<double> wy_;
  std::vector<double> scale_;
  std::vector<double> G_, b_;                // Gram matrix (entries in use) and right side over all points
  double tss_ = 0;
  bool cv_mode_ = false;
};

// ------------------------------------------------------------------------------------------------ fitting

struct Outcome {
  std::string expr;
  double cv = -1;
  bool exact_search = false;
  std::vector<std::string> alternatives;
  std::string ambiguity;
  std::vector<std::string> notes;
};

// Whether `text`, read back as the replay engine reads it, reproduces every point of `d`.
bool text_reproduces(const Data& d, const std::string& text) {
  const Feature f(text, d.expr_names, false);
  return std::all_of(d.points.begin(), d.points.end(), [&](const Point& p) {
    return std::fabs(f.eval(p.vars) - p.y) <= allowed(d, p.y);
  });
}

// `models` (all reproducing the points, simplest first) as an outcome: the first kept, alternatives of no more
// feature factors (a more complex model that also fits is no evidence against the simpler one) whose text
// reproduces every sample too and that differ at the probes. `wrap` turns a model's text and probe values
// into the quantity's (identity, or the modular form).
template <class Wrap>
Outcome exact_outcome(const Data& d, const Data& fitted, const Probes& pr, const ExactSpace& sp,
                      const std::vector<ExactModel>& models, Wrap wrap) {
  Outcome out;
  out.exact_search = true;
  const ExactModel& m = models.front();
  const std::size_t nq = pr.x.size();
  auto candidate = [&](const ExactModel& x) {
    Candidate c{exact_text(x, sp), exact_at_probes(x, sp, nq)};
    wrap(c);
    return c;
  };
  const Candidate chosen = candidate(m);
  out.expr = chosen.text;
  std::vector<std::vector<double>> cols;
  for (const ExactCol& c : m.cols) {
    std::vector<double> v;
    for (std::size_t i = 0; i < fitted.points.size(); ++i) v.push_back(col_value(c, sp.at_points, i));
    cols.push_back(std::move(v));
  }
  out.cv = cv_of_columns(fitted, cols);
  std::vector<Candidate> others;
  for (std::size_t i = 1; i < models.size(); ++i)
    if (models[i].complexity() <= m.complexity())
      if (Candidate c = candidate(models[i]); text_reproduces(d, c.text)) others.push_back(std::move(c));
  auto alts = distinct_alternatives(chosen, others.size(), [&](std::size_t k) { return others[k]; }, EXACT_DISAGREE);
  for (const Candidate& c : alts) out.alternatives.push_back(c.text);
  out.ambiguity = ambiguity_text(d, pr, chosen, alts, "reproduce every sample", EXACT_DISAGREE);
  out.notes.push_back("exact: the simplest form that reproduces all " + std::to_string(d.points.size()) +
                      " distinct points is " + m.form() +
                      (models.size() > 1 ? " (" + std::to_string(models.size()) +
                                               " models reproduce them; the simplest, fewest factors first, is kept)"
                                         : ""));
  return out;
}

std::optional<Outcome> fit_exact(const Data& d, const Probes& pr, const FitOptions& o) {
  const ExactSpace sp = exact_space(d, pr, o.allow_rank);
  std::vector<ExactModel> models = exact_models(d, sp, o.max_terms);
  // Real-valued quantities: exact only when at least two points beyond the coefficients confirm the model.
  if (!o.integer)
    std::erase_if(models, [&](const ExactModel& m) { return m.complexity() > 0 && d.points.size() < m.cols.size() + 2; });
  if (models.empty()) return std::nullopt;
  return exact_outcome(d, d, pr, sp, models, [](Candidate&) {});
}

/** The offset of `value` from `from` modulo m, taken in (-m/2, m/2] (norm 0), [-m/2, m/2) (1) or [0, m) (2). */
double offset_mod(double value, double from, double m, int norm) {
  double delta = std::fmod(value - from, m);
  if (delta < 0) delta += m;
  if ((norm == 0 && delta > m / 2) || (norm == 1 && delta >= m / 2)) delta -= m;
  return delta;
}

/** Peers of periodic exchanges: value = (rank + delta) % P with delta an exact expression of the run
 *  (1, -1, 2^floor(log2(P)/2), P/2, ...). delta is taken in (-P/2, P/2], then [-P/2, P/2), then [0, P). */
std::optional<Outcome> fit_exact_modular(const Data& d, const Probes& pr, const FitOptions& o) {
  if (!d.has_rank || !d.varies.back()) return std::nullopt;
  for (const Point& p : d.points)
    if (!integral(p.y) || p.y < 0 || p.y >= p.x[0]) return std::nullopt;
  // Each normalisation of delta gets its models; the simplest wins, the earlier normalisation on a tie. (At P = 2
  // the offsets +1 and -1 are the same rank: first-found would turn a ring's -1 into 3 - 2*2^floor(log2(P)/2), which
  // fits P = 2, 4, 8 and is rank - 5 at P = 16.)
  std::optional<Outcome> best;
  double best_complexity = 0;
  for (int norm = 0; norm < 3; ++norm) {
    Data dd = d;
    dd.mean_abs = 0;
    for (Point& p : dd.points) {
      const double delta = offset_mod(p.y, p.x.back(), p.x[0], norm);
      p.y = p.lo = p.hi = delta;
      dd.mean_abs += std::fabs(delta) / static_cast<double>(dd.points.size());
    }
    for (Point& p : dd.points) p.d = p.y != 0 ? std::fabs(p.y) : (dd.mean_abs > 0 ? dd.mean_abs : 1.0);
    const ExactSpace sp = exact_space(dd, pr, false);
    std::vector<ExactModel> models = exact_models(dd, sp, o.max_terms);
    if (models.empty()) continue;
    // fewer factors, then fewer terms: at P = 4 the offsets +2 and -2 are the same rank, and (-P/2, P/2] turns a
    // column's -2^floor(log2(P)/2) (P = 4, 8, 16) into 32/P - 6, as simple by factors, one term more, and
    // rank - 5 at P = 32
    const double complexity =
        static_cast<double>(models.front().complexity()) + static_cast<double>(models.front().cols.size()) / 16;
    if (best && complexity >= best_complexity) continue;
    auto wrap = [&](Candidate& c) {
      const bool minus = c.text.size() > 1 && c.text[0] == '-' && !has_sum(c.text.substr(1));
      c.text = minus ? "(rank - " + c.text.substr(1) + ") % P" : "(rank + " + c.text + ") % P";
      for (std::size_t q = 0; q < c.at.size(); ++q) {
        const double P = pr.x[q][0];
        double v = std::fmod(pr.x[q].back() + c.at[q], P);
        c.at[q] = v < 0 ? v + P : v;
      }
    };
    Outcome out = exact_outcome(d, dd, pr, sp, models, wrap);
    out.notes.back() += ", for the offset from rank modulo P";
    best = std::move(out);
    best_complexity = complexity;
  }
  return best;
}

/** Peers along the rows of a periodic grid (rank = x + B*y, the row wrapping around): value = rank - rank % B +
 *  (rank + delta + B) % B, with B the row length (2^floor(log2(P)/2) or P/2^floor(log2(P)/2), the sides of the grid
 *  atm2d-style programs and MPI_Dims_create make for P a power of two) and delta an exact expression of the run
 *  (west -1, east +1), taken as fit_exact_modular takes it. Every run must have at least 2 ranks per row. */
std::optional<Outcome> fit_exact_row_modular(const Data& d, const Probes& pr, const FitOptions& o) {
  if (!d.has_rank || !d.varies.back()) return std::nullopt;
  struct Row {
    const char* text;
    double (*at)(double P);
  };
  static const Row rows[] = {{"2^floor(log2(P)/2)", [](double P) { return std::exp2(std::floor(std::log2(P) / 2)); }},
                             {"P/2^floor(log2(P)/2)", [](double P) { return P / std::exp2(std::floor(std::log2(P) / 2)); }}};
  std::optional<Outcome> best;
  double best_complexity = 0;
  for (const Row& row : rows) {
    for (int norm = 0; norm < 3; ++norm) {
      Data dd = d;
      dd.mean_abs = 0;
      bool fits = true;
      for (Point& p : dd.points) {
        const double B = row.at(p.x[0]), rank = p.x.back();
        if (!integral(B) || B < 2 || !integral(p.y)) {
          fits = false;
          break;
        }
        const double base = rank - std::fmod(rank, B);
        if (p.y < base || p.y >= base + B) {  // a peer in another row
          fits = false;
          break;
        }
        const double delta = offset_mod(p.y, rank, B, norm);
        p.y = p.lo = p.hi = delta;
        dd.mean_abs += std::fabs(delta) / static_cast<double>(dd.points.size());
      }
      if (!fits) break;  // the row length does not fit these runs: no normalisation will
      for (Point& p : dd.points) p.d = p.y != 0 ? std::fabs(p.y) : (dd.mean_abs > 0 ? dd.mean_abs : 1.0);
      const ExactSpace sp = exact_space(dd, pr, false);
      std::vector<ExactModel> models = exact_models(dd, sp, o.max_terms);
      if (models.empty()) continue;
      const double complexity = static_cast<double>(models.front().complexity());
      if (best && complexity >= best_complexity) continue;
      const std::string B = std::string("(") + row.text + ")";
      auto wrap = [&](Candidate& c) {
        const bool minus = c.text.size() > 1 && c.text[0] == '-' && !has_sum(c.text.substr(1));
        c.text = "rank - rank % " + B + " + (rank " + (minus ? "- " + c.text.substr(1) : "+ " + c.text) + " + " + B + ") % " + B;
        for (std::size_t q = 0; q < c.at.size(); ++q) {
          const double rank = pr.x[q].back(), len = row.at(pr.x[q][0]);
          c.at[q] = rank - std::fmod(rank, len) + std::fmod(rank + c.at[q] + len, len);
        }
      };
      Outcome out = exact_outcome(d, dd, pr, sp, models, wrap);
      if (!text_reproduces(d, out.expr)) continue;
      out.notes.back() += ", for the offset from rank along a row of " + std::string(row.text) + " ranks that wraps around";
      best = std::move(out);
      best_complexity = complexity;
    }
  }
  return best;
}

/** Shares of a cyclic or block distribution: value = floor((Z - rank) / D) (or + rank), with D an integer
 *  quantity of the run (P, P-1, a grid side, an integer parameter) and Z an exact expression of the run. It is
 *  how many of Z' items rank r gets when items go round-robin over D ranks, or the block sizes of n items over
 *  P ranks with the remainder on the first ones: n/P + (rank < n % P) = floor((n + P - 1 - rank) / P); master-
 *  worker codes (tasks over P - 1 workers: floor((tasks - rank + P - 1) / (P - 1))) and any decomposition of a
 *  size the ranks do not divide. Per run the ranks bound Z to an interval ([y*D - s*rank, y*D - s*rank + D - 1]
 *  for each rank); Z's model is searched on the runs whose ranks pin it (at least two, and Z must step with
 *  rank somewhere), then the whole form must reproduce every sample. */
std::optional<Outcome> fit_exact_share(const Data& d, const Probes& pr, const FitOptions& o) {
  if (!d.has_rank || !d.varies.back() || d.runs.size() < 3) return std::nullopt;
  for (const Point& p : d.points)
    if (!integral(p.y) || p.y < 0) return std::nullopt;
  // the points of each run (scale coordinates)
  std::map<Coords, std::vector<std::size_t>> by_run;
  for (std::size_t i = 0; i < d.points.size(); ++i)
    by_run[Coords(d.points[i].x.begin(), d.points[i].x.begin() + static_cast<long>(d.n_scale))].push_back(i);
  bool steps = false;
  for (const auto& [run, idx] : by_run)
    for (std::size_t i : idx) steps = steps || d.points[i].y != d.points[idx.front()].y;
  if (!steps) return std::nullopt;  // not a share of rank: the exact search of the run's variables has the say

  std::vector<Feature> divisors;
  for (Feature& f : scale_features(d.params))
    if (f.integer_valued()) divisors.push_back(std::move(f));
  std::optional<Outcome> best;
  std::pair<std::size_t, std::size_t> best_complexity{0, 0};  // feature factors, then coefficients
  for (const Feature& D : divisors) {
    for (int s : {-1, 1}) {
      // Z's interval per run
      Data dd = d;
      dd.points.clear();
      std::vector<std::pair<Point, double>> loose;  // runs whose ranks leave Z a range: (point at lo, hi)
      bool ok = true;
      for (const auto& [run, idx] : by_run) {
        const double Dv = D.eval(d.points[idx.front()].vars);
        if (!integral(Dv) || Dv < 1) {
          ok = false;
          break;
        }
        double lo = -INFINITY, hi = INFINITY;
        for (std::size_t i : idx) {
          const double base = d.points[i].y * Dv - s * d.points[i].x.back();
          lo = std::max(lo, base), hi = std::min(hi, base + Dv - 1);
        }
        if (lo > hi) {
          ok = false;
          break;
        }
        Point p = d.points[idx.front()];
        p.y = p.lo = p.hi = lo;
        if (lo == hi)
          dd.points.push_back(std::move(p));
        else
          loose.emplace_back(std::move(p), hi);
      }
      if (!ok || dd.points.size() < 2) continue;
      // one point per pinned run: the folds (point indices of d) are remade for dd's points, else the
      // cross-validation of exact_outcome reads past them (a crash on the corpus' sweep3d from TI traces)
      dd.folds.clear();
      std::map<std::size_t, std::size_t> fold_of;  // d's fold -> dd's
      for (std::size_t i = 0; i < dd.points.size(); ++i) {
        auto [it, fresh] = fold_of.try_emplace(dd.points[i].fold, dd.folds.size());
        if (fresh) dd.folds.emplace_back();
        dd.points[i].fold = it->second;
        dd.folds[it->second].push_back(i);
      }
      dd.has_rank = false;
      dd.mean_abs = 0;
      for (const Point& p : dd.points) dd.mean_abs += std::fabs(p.y) / static_cast<double>(dd.points.size());
      for (Point& p : dd.points) p.d = p.y != 0 ? std::fabs(p.y) : (dd.mean_abs > 0 ? dd.mean_abs : 1.0);
      const ExactSpace sp = exact_space(dd, pr, false);
      std::vector<ExactModel> models = exact_models(dd, sp, o.max_terms);
      // Z counts items: integer coefficients; with fewer pinned runs than a model's coefficients + 1, the runs
      // that bound Z to a range must confirm it
      std::erase_if(models, [&](const ExactModel& m) {
        for (const Coef& c : m.coefs)
          if (!integral(c.value)) return true;
        if (dd.points.size() >= m.cols.size() + 1) return false;
        return loose.size() + dd.points.size() < m.cols.size() + 2;
      });
      if (models.empty()) continue;
      const std::pair<std::size_t, std::size_t> complexity{models.front().complexity(), models.front().cols.size()};
      if (best && complexity >= best_complexity) continue;
      const std::string Dt = D.text(), op = s < 0 ? " - rank" : " + rank";
      auto wrap = [&](Candidate& c) {
        c.text = "floor((" + c.text + op + ") / " + (Dt.find_first_of("+-*/^ ") == std::string::npos ? Dt : "(" + Dt + ")") + ")";
        for (std::size_t q = 0; q < c.at.size(); ++q) c.at[q] = std::floor((c.at[q] + s * pr.x[q].back()) / D.eval(pr.vars[q]));
      };
      Outcome out = exact_outcome(d, dd, pr, sp, models, wrap);
      if (!text_reproduces(d, out.expr)) continue;
      out.notes.back() += ", for the items Z of a round-robin share over " + Dt + " ranks";
      best = std::move(out);
      best_complexity = complexity;
    }
  }
  return best;
}

Outcome fit_least_squares(const Data& d, const Probes& pr, const FitOptions& o) {
  Outcome out;
  LeastSquares ls(d, pr, o.max_terms);
  const std::vector<Hyp>& hs = ls.hypotheses();
  // The best of each number of terms: a later hypothesis must beat an earlier one by SIMPLER_MARGIN.
  // A term in variables that take two values only, beside a term in one that takes more: with the constant it
  // only sets the model's offset at each of the two values, so every function of those variables fits alike (with
  // N = 256 and 512 traced, 1.26e-08*N^2/P^(3/2) plus 9.74e-05*log2(N) - 0.000724, or 0.00025 - 0.0498/N, or
  // 4.95e-10*N^2 + 2.24e-05: the same scores, and 2.1e-4, 2.1e-4 or 5.3e-4 s at N = 1,024 where the data's law,
  // N^2/P, gives 1e-4). Nothing in the runs says how it goes on beyond them, so such a model is not offered.
  std::map<std::size_t, std::set<double>> values_of;
  for (const Point& p : d.points)
    for (std::size_t c = 0; c < p.x.size(); ++c) values_of[c].insert(p.x[c]);
  auto unidentified = [&](const Hyp& h) {
    bool two_valued = false, other = false;
    for (std::size_t j = 0; j < h.c; ++j) {
      const Term& t = ls.term(h.col[j]);
      if (t.empty()) continue;
      bool all_two = true;
      for (const Factor& f : t)
        if (values_of[f.coord].size() > 2) all_two = false;
      (all_two ? two_valued : other) = true;
    }
    return two_valued && other;
  };
  std::vector<std::size_t> best_of(5, hs.size());
  for (std::size_t i = 0; i < hs.size(); ++i) {
    std::size_t& b = best_of[hs[i].c];
    if (!std::isfinite(hs[i].score) || unidentified(hs[i])) continue;
    if (b == hs.size() || hs[i].score < hs[b].score * (1 - SIMPLER_MARGIN) - 1e-12) b = i;
  }
  std::size_t best = hs.size();
  for (std::size_t c = 1; c <= 4; ++c)
    if (best_of[c] < hs.size() && (best == hs.size() || hs[best_of[c]].score < hs[best].score)) best = best_of[c];
  if (best == hs.size()) best = 0;  // nothing could be scored: the constant (mean)
  if (ls.cv_mode() && std::isfinite(hs[best].score)) {
    // One-standard-error rule (Hastie, Tibshirani, Friedman, ESL s.7.10): the fewest terms whose
    // cross-validated error is within one standard error of the best.
    std::vector<double> e;
    ls.score(hs[best], &e);
    double mean = 0, var = 0;
    for (double x : e) mean += x / static_cast<double>(e.size());
    for (double x : e) var += (x - mean) * (x - mean) / static_cast<double>(e.size() > 1 ? e.size() - 1 : 1);
    const double limit = hs[best].score + std::sqrt(var / static_cast<double>(e.size())) + 1e-12;
    for (std::size_t c = 1; c <= 4; ++c)
      if (best_of[c] < hs.size() && hs[best_of[c]].score <= limit) {
        best = best_of[c];
        break;
      }
    // The same rule over the form: of the hypotheses with that many terms and the same variables whose
    // cross-validated error is within the limit too, the simplest (factor_cost summed: an integer power 1, a
    // fractional one 2, a reciprocal +1, each log2 +1; then the better score). With two values of N traced,
    // N^(4/3)*log2(N)^2/sqrt(P) and N^2/P predict the left-out runs alike, and noise alone chose the first:
    // ATM2D's demo from N = 256, 512 predicted 0.14 ms or 0.05 ms per step at N = 1,024 from one batch of traces
    // to the next.
    auto form_cost = [&](const Hyp& h) {
      int cost = 0;
      for (std::size_t j = 0; j < h.c; ++j)
        for (const Factor& f : ls.term(h.col[j])) cost += factor_cost(f);
      return cost;
    };
    // (the same variables only: a simpler form that drops P for another parameter is not the same law)
    auto variables = [&](const Hyp& h) {
      std::set<std::size_t> v;
      for (std::size_t j = 0; j < h.c; ++j)
        for (const Factor& f : ls.term(h.col[j])) v.insert(f.coord);
      return v;
    };
    const std::size_t terms = hs[best].c;
    // Fewer variables first: a law in fewer of the runs' variables whose error is within the limit is preferred (a
    // noise variable, steps, entered N^2*log2(steps)/(P*steps^(1/3)) among three-way products otherwise).
    for (std::size_t i = 0; i < hs.size(); ++i) {
      if (hs[i].c != terms || !(hs[i].score <= limit) || unidentified(hs[i])) continue;
      const std::set<std::size_t> vi = variables(hs[i]), vb = variables(hs[best]);
      if (vi.size() < vb.size() && std::includes(vb.begin(), vb.end(), vi.begin(), vi.end())) best = i;
    }
    const std::set<std::size_t> vars = variables(hs[best]);
    int best_cost = form_cost(hs[best]);
    for (std::size_t i = 0; i < hs.size(); ++i) {
      if (hs[i].c != terms || !(hs[i].score <= limit) || variables(hs[i]) != vars || unidentified(hs[i])) continue;
      const int cost = form_cost(hs[i]);
      if (cost < best_cost || (cost == best_cost && hs[i].score < hs[best].score)) best = i, best_cost = cost;
    }
  }
  std::vector<std::size_t> ranked(hs.size());
  for (std::size_t i = 0; i < hs.size(); ++i) ranked[i] = i;
  std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) { return hs[a].score < hs[b].score; });

  // Far point: every varying run variable at its largest probe value (for the leading term's sign).
  Coords far = d.points.front().x;
  for (const Coords& x : pr.x)
    for (std::size_t c = 0; c < d.n_scale; ++c)
      if (d.varies[c]) far[c] = std::max(far[c], x[c]);
  if (d.has_rank) far.back() = 0;
  std::map<std::size_t, std::optional<std::vector<double>>> fits;
  auto fit_of = [&](std::size_t i) -> const std::optional<std::vector<double>>& {
    auto it = fits.find(i);
    if (it == fits.end()) it = fits.emplace(i, ls.fit(hs[i])).first;
    return it->second;
  };
  // Terms that cancel: at a traced run or the far point, the terms' magnitudes add up to more than CANCELLING
  // times their sum. Noise fits such a difference of two laws of N and P (`2.3e-09*N^2 + 0.0002 -
  // 6.3e-07*log2(P)^2*N/P^(3/4)` for the sum over each rank's points after atm2d's step loop, 4e-5..8e-4 s at the
  // traced runs, where the data's law is N^2/P), and beyond the runs one of them wins: 1.8 ms at N = 1,024 and P =
  // 128, the demo's prediction 40% high (issue 17).
  auto cancelling = [&](std::size_t i) {
    const auto& c = fit_of(i);
    if (!c || hs[i].c < 2) return false;
    auto at = [&](const Coords& x) {
      double sum = 0, magnitude = 0;
      for (std::size_t j = 0; j < hs[i].c; ++j) {
        const double v = (*c)[j] * term_value(ls.term(hs[i].col[j]), x);
        sum += v, magnitude += std::fabs(v);
      }
      return magnitude > CANCELLING * std::fabs(sum);
    };
    if (at(far)) return true;
    for (const Point& p : d.points)
      if (at(p.x)) return true;
    return false;
  };
  auto plausible = [&](std::size_t i) {
    const auto& c = fit_of(i);
    if (!c || unidentified(hs[i])) return false;
    if (!d.positive) return true;
    for (double v : ls.at_probes(hs[i], *c))
      if (!(v > 0)) return false;
    double lead = 0, lead_abs = -1;
    for (std::size_t j = 0; j < hs[i].c; ++j) {
      if (hs[i].col[j] == 0) continue;
      const double v = (*c)[j] * term_value(ls.term(hs[i].col[j]), far);
      if (std::fabs(v) > lead_abs) lead_abs = std::fabs(v), lead = v;
    }
    return lead >= 0 && !cancelling(i);
  };
  std::size_t chosen = best;
  if (!fit_of(best)) chosen = 0;
  if (d.positive && !plausible(chosen)) {
    for (std::size_t i : ranked) {
      if (!(hs[i].score <= hs[best].score * PLAUSIBLE_SCORE + 1e-12)) break;
      if (plausible(i)) {
        chosen = i;
        break;
      }
    }
    if (chosen == best && cancelling(best)) {
      // terms that cancel are never kept: the best model whose terms do not (the constant at worst)
      for (std::size_t i : ranked)
        if (plausible(i)) {
          chosen = i;
          break;
        }
      out.notes.push_back("the best models' terms cancel (their magnitudes add up to over " + short_num(CANCELLING) +
                          " times their sum at a traced run): the best whose terms do not was kept");
    } else if (chosen == best) {
      out.notes.push_back("the best model goes negative or has a negative leading term at larger P or parameters, "
                          "and no positive model fits nearly as well");
    } else {
      out.notes.push_back("a model that stays positive was preferred over a slightly better one that does not");
    }
  }
  const Hyp h0 = hs[chosen];
  Hyp h = h0;
  std::vector<double> coef = *fit_of(chosen);
  // Terms that are not significant: the 95% confidence interval of their coefficient contains 0 (Student t
  // over the weighted residuals). The least significant is dropped and the rest refitted, until every term
  // is significant; the constant stays. Noise in time-sliced runs otherwise buys a term like 3e-06*N/steps
  // whenever it happens to lower the cross-validated error by a little.
  std::vector<std::string> dropped_terms;
  while (h.c > 1) {
    const std::vector<double> t = ls.t_values(h);
    if (t.empty()) break;
    std::size_t worst = h.c;
    for (std::size_t j = 0; j < h.c; ++j)
      if (h.col[j] != 0 && (worst == h.c || t[j] < t[worst])) worst = j;
    if (worst == h.c || !(t[worst] < student_t975(d.points.size() - h.c))) break;
    Hyp h2;
    for (std::size_t j = 0; j < h.c; ++j)
      if (j != worst) h2.col[h2.c++] = h.col[j];
    auto c2 = ls.fit(h2);
    if (!c2) break;
    Hyp one;
    one.col[one.c++] = h.col[worst];
    dropped_terms.push_back(ls.text(one, {coef[worst]}, 3) + " (t = " + short_num(t[worst]) + ")");
    h = h2, coef = *c2;
  }
  if (!dropped_terms.empty())
    out.notes.push_back("terms whose 95% confidence interval contains 0 were dropped: " + join(dropped_terms, ", "));
  // Drop a negligible constant (noise-free data of a pure power law).
  double ymin = INFINITY;
  for (const Point& p : d.points)
    if (p.y != 0) ymin = std::min(ymin, std::fabs(p.y));
  // So is one the data cannot see: without it every point is still reproduced within 1e-5 (SimGrid's TI traces
  // print flops to six significant digits, so 300*N^3/P comes back as 299.99979*N^3/P + 5.16).
  if (h.c > 1) {
    Hyp h2;
    for (std::size_t j = 1; j < h.c; ++j) h2.col[h2.c++] = h.col[j];
    if (std::fabs(coef[0]) < 1e-9 * ymin) {
      if (auto c2 = ls.fit(h2)) h = h2, coef = *c2;
    } else if (auto c2 = ls.fit(h2)) {
      double worst = 0;
      for (const Point& p : d.points) worst = std::max(worst, std::fabs(ls.value(h2, *c2, p.x) - p.y) / p.d);
      if (worst <= 1e-5) h = h2, coef = *c2;
    }
  }
  double full_err = 0;
  std::vector<double> full_pred;
  for (const Point& p : d.points) {
    full_pred.push_back(ls.value(h, coef, p.x));
    full_err = std::max(full_err, std::fabs(full_pred.back() - p.y) / p.d);
  }
  // Fewest significant digits that keep the predictions (6 when the text is read back).
  for (int prec : {6, 8, 10, 12, 15, 17}) {
    out.expr = ls.text(h, coef, prec);
    if (prec == 17) break;
    Feature f(out.expr, d.expr_names, false);
    double dev = 0;
    for (std::size_t i = 0; i < d.points.size(); ++i)
      dev = std::max(dev, std::fabs(f.eval(d.points[i].vars) - full_pred[i]) / d.points[i].d);
    if (dev <= std::max(0.01 * full_err, 1e-13)) break;
  }
  out.cv = ls.cv_mode() ? (dropped_terms.empty() ? hs[chosen].score : ls.score(h)) : -1;
  if (ls.cv_mode())
    out.notes.push_back("least squares over the performance model normal form, chosen by leave-one-run-out "
                        "cross-validation over " + std::to_string(d.folds.size()) + " runs (" +
                        std::to_string(hs.size()) + " hypotheses)");
  else
    out.notes.push_back("least squares over the performance model normal form, chosen by adjusted R^2: " +
                        std::to_string(d.points.size()) + " distinct points in " + std::to_string(d.folds.size()) +
                        " runs are too few for cross-validation");

  // Alternatives: as good within NEAR_SCORE, differing at the probes by more than the fit's own error.
  double chosen_err = out.cv;
  if (chosen_err < 0) {
    chosen_err = 0;
    for (std::size_t i = 0; i < d.points.size(); ++i) chosen_err += std::fabs(full_pred[i] - d.points[i].y) / d.points[i].d;
    chosen_err /= static_cast<double>(d.points.size());
  }
  const double rel = std::max(LS_DISAGREE, 3 * chosen_err);
  std::vector<std::size_t> near;  // no more terms than the chosen model: more complex ones are no evidence
  for (std::size_t i : ranked) {
    if (!(hs[i].score <= hs[chosen].score * NEAR_SCORE + 1e-12)) break;
    if (i != chosen && hs[i].c <= hs[chosen].c && fit_of(i) && (!d.positive || plausible(i))) near.push_back(i);
  }
  Candidate ch{out.expr, ls.at_probes(h, coef)};
  auto alts = distinct_alternatives(
      ch, near.size(),
      [&](std::size_t k) {
        const std::size_t i = near[k];
        return Candidate{ls.text(hs[i], *fit_of(i), 6), ls.at_probes(hs[i], *fit_of(i))};
      },
      rel, 200);
  for (const Candidate& c : alts) out.alternatives.push_back(c.text);
  out.ambiguity = ambiguity_text(d, pr, ch, alts, ls.cv_mode() ? "predict the runs about as well" : "fit about as well", rel);
  return out;
}

// What the runs say about themselves: variables they never varied, ranks or runs that disagree.
void data_messages(const Data& d, std::vector<std::string>& notes, std::vector<std::string>& ambiguities, bool& consistent) {
  consistent = true;
  // Disagreement at the same point.
  double worst_rank = 0;
  std::string worst_rank_at;
  for (const Point& p : d.points) {
    if (!(p.hi - p.lo > allowed(d, p.y))) continue;
    consistent = false;
    double rlo = INFINITY, rhi = -INFINITY;
    int rl = 0, rh = 0;
    for (const auto& [r, sc] : p.by_run) {
      const double m = sc.first / sc.second;
      if (m < rlo) rlo = m, rl = r;
      if (m > rhi) rhi = m, rh = r;
    }
    const Coords scale(p.x.begin(), p.x.begin() + static_cast<long>(d.n_scale));
    if (p.by_run.size() > 1 && rhi - rlo > allowed(d, p.y)) {
      const std::string s = "runs '" + d.runs[static_cast<std::size_t>(rl)] + "' and '" + d.runs[static_cast<std::size_t>(rh)] +
                            "' both have " + describe_run(d, scale) + (d.has_rank ? " (rank " + short_num(p.x.back()) + ")" : "") +
                            " but give " + short_num(rlo) + " and " + short_num(rhi);
      if (d.integer)
        ambiguities.push_back(s + ": the value depends on something other than " + join(d.coords, ", ") +
                              " (input data, timing?); the fit uses their mean");
      else
        notes.push_back(s + " (run-to-run variation; the fit uses their mean)");
    }
    const double spread = (p.hi - p.lo) / p.d;
    if (spread > worst_rank) {
      worst_rank = spread;
      worst_rank_at = describe_run(d, scale) + ": " + short_num(p.lo) + " to " + short_num(p.hi);
    }
  }
  if (worst_rank > 0)
    notes.push_back(std::string("samples with the same ") + join(d.coords, ", ") + " differ (most at " + worst_rank_at +
                    "); the fit is of their mean" + (d.has_rank ? "" : " over ranks"));
  // Run variables that never changed alone: their effects cannot be told apart (weak-scaling diagonals).
  std::vector<std::size_t> varying;
  for (std::size_t c = 0; c < d.n_scale; ++c)
    if (d.varies[c]) varying.push_back(c);
  if (varying.size() >= 2) {
    std::vector<std::string> tied, fixes;
    for (std::size_t c : varying) {
      std::map<Coords, std::set<double>> lines;
      for (const Point& p : d.points) {
        Coords other = p.x;
        other.erase(other.begin() + static_cast<long>(c));
        lines[other].insert(p.x[c]);
      }
      if (std::any_of(lines.begin(), lines.end(), [](const auto& l) { return l.second.size() > 1; })) continue;
      tied.push_back(d.coords[c]);
      Coords s(d.points.front().x.begin(), d.points.front().x.begin() + static_cast<long>(d.n_scale));
      const auto& seen = d.seen[c];
      s[c] = seen[seen[0] == s[c] ? 1 : 0];
      fixes.push_back(describe_run(d, s) + " (" + d.coords[c] + " changed alone)");
    }
    if (!tied.empty())
      ambiguities.push_back(join(tied, " and ") + " never changed alone (no two runs differ in " +
                            (tied.size() == 1 ? "it" : "one of them") + " only), so the fit cannot tell " +
                            (tied.size() == 1 ? "its effect from the others'" : "their effects apart") + "; runs at " +
                            join(fixes, " and at ") + " would");
  }
  // Run variables never varied.
  bool any = false;
  for (std::size_t c = 0; c < d.n_scale; ++c) any = any || d.varies[c];
  std::vector<std::string> fixed, suggest;
  for (std::size_t c = 0; c < d.n_scale; ++c)
    if (!d.varies[c]) {
      const double v = d.seen[c].front();
      fixed.push_back(d.coords[c] + "=" + short_num(v));
      suggest.push_back(d.coords[c] + "=" + short_num(v > 0 ? 2 * v : v + 1));
    }
  if (fixed.empty()) return;
  if (!any) {
    ambiguities.push_back("every sample comes from one configuration (" + join(fixed, ", ") +
                          "): how the value changes with " + join(std::vector<std::string>(d.coords.begin(), d.coords.begin() + static_cast<long>(d.n_scale)), " or ") +
                          " is unknown, and the expression is constant in them; runs at " + join(suggest, " and at ") +
                          " are needed");
    return;
  }
  // Does the value change between runs (at the same rank, for per-rank quantities)?
  bool changes = false;
  std::map<double, double> first_at_rank;
  for (const Point& p : d.points) {
    const double k = d.has_rank ? p.x.back() : 0;
    auto [it, fresh] = first_at_rank.emplace(k, p.y);
    if (!fresh && std::fabs(p.y - it->second) > allowed(d, p.y)) changes = true;
  }
  std::vector<std::string> names;
  for (std::size_t c = 0; c < d.n_scale; ++c)
    if (!d.varies[c]) names.push_back(d.coords[c]);
  const std::string msg = join(fixed, ", ") + " in every run" +
                          ", so the expression cannot depend on " + join(names, " or ");
  if (changes)
    ambiguities.push_back(msg + ", though the value changes between runs: runs at another " + join(names, " and another ") +
                          " (e.g. " + join(suggest, ", ") + ") are needed to tell whether it does");
  else
    notes.push_back(msg + " (the value was the same in every run)");
}

}  // namespace

Fit fit_quantity(const std::vector<Sample>& samples, const std::vector<std::string>& params, const FitOptions& options) {
  const Data d = prepare(samples, params, options);
  const Probes pr = make_probes(d);
  std::vector<std::string> notes, ambiguities;
  bool consistent = true;
  data_messages(d, notes, ambiguities, consistent);

  std::optional<Outcome> out;
  if (consistent) out = fit_exact(d, pr, options);
  if (!out && consistent && options.integer) out = fit_exact_modular(d, pr, options);
  if (!out && consistent && options.integer) out = fit_exact_row_modular(d, pr, options);
  if (!out && consistent && options.integer) out = fit_exact_share(d, pr, options);
  if (!out) {
    out = fit_least_squares(d, pr, options);
    if (options.integer)
      out->notes.insert(out->notes.begin(), consistent ? "no exact expression of the searched forms reproduces every sample"
                                                       : "no exact expression can reproduce samples that disagree");
  }

  Fit fit;
  fit.expr = out->expr;
  fit.runs = d.runs;
  fit.cv_rel_error = out->cv;
  fit.alternatives = out->alternatives;
  // The reported errors are those of the text itself, read back as the replay engine will.
  const Feature f(fit.expr, d.expr_names, false);
  fit.exact = true;
  for (const Sample& s : samples) {
    const double v = f.eval(s.vars);
    const double den = s.value != 0 ? std::fabs(s.value) : (d.mean_abs > 0 ? d.mean_abs : 1.0);
    const double err = std::fabs(v - s.value);
    fit.max_rel_error = std::max(fit.max_rel_error, std::isfinite(err) ? err / den : INFINITY);
    if (!(err <= allowed(d, s.value))) fit.exact = false;
  }
  if (!std::isfinite(fit.max_rel_error)) fit.max_rel_error = 1e308;
  notes.insert(notes.begin(), out->notes.begin(), out->notes.end());
  if (!out->ambiguity.empty()) ambiguities.insert(ambiguities.begin(), out->ambiguity);
  fit.ambiguity = join(ambiguities, "; ");
  fit.note = join(notes, "; ");
  return fit;
}

}  // namespace mksim::skeletons::builder
