// Communicators and process topologies of traced runs -> `comms` declarations and communicator-relative
// rank expressions (topology.hpp; method: README.md, "Communicators and topologies").
#include "skeletons/builder/topology.hpp"

#include "skeletons/builder/features.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <tuple>

namespace mksim::skeletons::builder {

using trace::Kind;

std::string rename_rank_and_size(const std::string& text, const std::string& rank_to, const std::string& size_to) {
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.'; };
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (ident(text[i]) && (i == 0 || !ident(text[i - 1]))) {
      std::size_t e = i;
      while (e < text.size() && ident(text[e])) ++e;
      const std::string word = text.substr(i, e - i);
      out += word == "rank" ? rank_to : word == "P" ? size_to : word;
      i = e;
    } else {
      out += text[i++];
    }
  }
  return out;
}

bool has_decimal_literal(const std::string& text) {
  for (std::size_t i = 1; i + 1 < text.size(); ++i)
    if (text[i] == '.' && std::isdigit(static_cast<unsigned char>(text[i - 1])) && std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      std::size_t b = i;
      while (b > 0 && (std::isalnum(static_cast<unsigned char>(text[b - 1])) || text[b - 1] == '_')) --b;
      if (std::isdigit(static_cast<unsigned char>(text[b]))) return true;  // a number, not a name like c01_cart.rank
    }
  return false;
}

std::string grid_rank_fit(const std::vector<Sample>& samples, const std::vector<std::string>& params, std::string* other,
                          bool grid3_only, const std::array<int, 3>* prefer, std::array<int, 3>* chosen_off) {
  if (chosen_off) *chosen_off = {0, 0, 0};
  if (other) other->clear();
  if (samples.empty() || !samples.front().vars.count("rank")) return "";
  std::vector<std::string> names{"P", "rank"};
  for (const std::string& p : params) names.push_back(p);
  std::vector<std::string> cands;
  // 2-D grids as (fast side, slow side): rank = x + fast * y
  const std::string a = "dims(P, 2, 0)", b = "dims(P, 2, 1)";
  const std::vector<std::pair<std::string, std::string>> grids2{{a, b}, {b, a}, {GRID_PX, GRID_PY}};
  for (const auto& [fast, slow] : grids2) {
    if (grid3_only) break;
    const std::string x = "rank % " + fast, y = "floor(rank / " + fast + ")";
    // the transpose partner on a grid fast x slow with fast >= slow (NPB CG): ratio = fast / slow,
    // partner = (x / ratio) fast + ratio y + x % ratio
    const std::string ratio = "(" + fast + " / " + slow + ")";
    cands.push_back("floor((" + x + ") / " + ratio + ") * " + fast + " + " + ratio + " * " + y + " + (" + x + ") % " + ratio);
    // neighbours along the slow side need the side in the expression (rank +- fast); along the fast side
    // rank +- 1 and the diagonals are found by the builder's own search
    // a call that several sweep directions share (Sweep3D's octants folded into one node): the neighbour
    // inward from the edge the rank is on, outward elsewhere
    cands.push_back("if(" + x + " == 0, rank + 1, rank - 1)");
    cands.push_back("if(" + x + " == " + fast + " - 1, rank - 1, rank + 1)");
    cands.push_back("if(" + y + " == 0, rank + " + fast + ", rank - " + fast + ")");
    cands.push_back("if(" + y + " == " + slow + " - 1, rank - " + fast + ", rank + " + fast + ")");
    for (int dy : {-1, 1})
      for (int dx : {-1, 0, 1}) {
        std::string e = "rank " + std::string(dy < 0 ? "- " : "+ ") + fast;
        if (dx) e += dx < 0 ? " - 1" : " + 1";
        cands.push_back(e);
      }
  }
  // MPI_Dims_create(P, 3)'s grid, not periodic, then periodic (NPB MG)
  std::map<std::string, std::array<int, 3>> offsets;
  const std::string d3 = "dims(P, 3, 0), dims(P, 3, 1), dims(P, 3, 2)";
  for (const bool periodic : {false, true})
    for (int o0 = -1; o0 <= 1; ++o0)
      for (int o1 = -1; o1 <= 1; ++o1)
        for (int o2 = -1; o2 <= 1; ++o2) {
          if (!o0 && !o1 && !o2) continue;
          const int off[] = {o0, o1, o2};
          std::string e = "cart_rank(";
          for (int d = 0; d < 3; ++d) {
            const std::string c = "cart_coord(rank, " + std::to_string(d) + ", " + d3 + ")";
            const std::string n = "dims(P, 3, " + std::to_string(d) + ")";
            if (!off[d]) e += c;
            else if (!periodic) e += c + (off[d] < 0 ? " - 1" : " + 1");
            else e += "(" + c + (off[d] < 0 ? " + " + n + " - 1" : " + 1") + ") % " + n;
            e += ", ";
          }
          cands.push_back(e + d3 + ")");
          offsets.emplace(cands.back(), std::array<int, 3>{o0, o1, o2});
        }
  if (prefer)
    std::stable_partition(cands.begin(), cands.end(), [&](const std::string& t) {
      const auto it = offsets.find(t);
      return it != offsets.end() && it->second == *prefer;
    });
  std::string chosen;
  std::unique_ptr<Feature> first;
  for (const std::string& text : cands) {
    auto f = std::make_unique<Feature>(text, names, true);
    bool all = true;
    for (const Sample& x : samples)
      if (f->eval(x.vars) != x.value) {
        all = false;
        break;
      }
    if (!all) continue;
    if (chosen.empty()) {
      chosen = text;
      first = std::move(f);
      if (const auto it = offsets.find(text); chosen_off && it != offsets.end()) *chosen_off = it->second;
      if (!other) break;
      continue;
    }
    Vars v = samples.front().vars;
    bool differs = false;
    for (const double P : {32.0, 48.0, 64.0, 96.0, 128.0}) {
      v["P"] = P;
      for (int r = 0; r < static_cast<int>(P) && !differs; ++r) {
        v["rank"] = r;
        const double a = first->eval(v), b = f->eval(v);
        differs = a != b && (a >= 0 || b >= 0);  // both outside the grid: the same (no such neighbour)
      }
      if (differs) break;
    }
    if (differs) {
      *other = text;
      break;
    }
  }
  return chosen;
}

std::pair<std::string, std::string> block_ratio_fit(
    const std::vector<Vars>& vars, const std::vector<std::string>& params,
    const std::function<bool(std::size_t, std::int64_t, std::int64_t)>& accept) {
  if (vars.empty()) return {};
  std::vector<std::string> names{"P"};
  for (const std::string& p : params) names.push_back(p);
  std::vector<std::string> sides;
  for (int d = 2; d <= 3; ++d)
    for (int i = 0; i < d; ++i) sides.push_back("dims(P, " + std::to_string(d) + ", " + std::to_string(i) + ")");
  std::vector<std::string> atoms{"P"};
  for (const std::string& p : params) atoms.push_back(p);
  atoms.insert(atoms.end(), sides.begin(), sides.end());
  for (const std::string& p : params) {
    atoms.push_back("ceil(" + p + " / P)");
    for (const std::string& d : sides) atoms.push_back("ceil(" + p + " / " + d + ")");
  }
  // each atom's value at every observation; atoms that are not positive integers everywhere are left out
  std::vector<std::string> text;
  std::vector<std::vector<std::int64_t>> value;
  for (const std::string& a : atoms) {
    const Feature f(a, names, true);
    std::vector<std::int64_t> v;
    for (const Vars& x : vars) {
      const double y = f.eval(x);
      if (!(y >= 1) || y > 1e9 || y != std::floor(y)) break;
      v.push_back(static_cast<std::int64_t>(y));
    }
    if (v.size() != vars.size()) continue;
    if (std::find(value.begin(), value.end(), v) != value.end()) continue;  // the same as an earlier atom here
    text.push_back(a);
    value.push_back(std::move(v));
  }
  // products of at most two atoms (1 first), fewest factors first
  struct Term {
    std::string text;
    int factors;
    std::vector<std::int64_t> v;
  };
  std::vector<Term> terms{{"1", 0, std::vector<std::int64_t>(vars.size(), 1)}};
  for (std::size_t i = 0; i < text.size(); ++i) terms.push_back({text[i], 1, value[i]});
  for (std::size_t i = 0; i < text.size(); ++i)
    for (std::size_t j = i; j < text.size(); ++j) {
      Term t{text[i] + "*" + text[j], 2, value[i]};
      for (std::size_t r = 0; r < vars.size(); ++r) t.v[r] *= value[j][r];
      terms.push_back(std::move(t));
    }
  for (int total = 1; total <= 4; ++total)
    for (const Term& num : terms)
      for (const Term& den : terms) {
        if (num.factors + den.factors != total) continue;
        bool ok = true;
        for (std::size_t r = 0; ok && r < vars.size(); ++r) ok = accept(r, num.v[r], den.v[r]);
        if (ok) return {num.text, den.text};
      }
  return {};
}

namespace {

// A block with ghost layers, the faces that stencil codes send with their ghost cells: c times a product of one or
// two factors (X/side + g), X a parameter, side one of 1, P and the sides of MPI_Dims_create(P, 2 or 3), g in 0..2,
// some g > 0, c a positive integer up to 4096 (bytes per value times values per point). NPB MG's faces are
// 8*(N/Px)(N/Pz) along x, 8*(N/Px + 2)(N/Pz) along y and 8*(N/Px + 2)(N/Py + 2) along z: the ghosts of the axes
// before carry the edges and corners in two hops. Fewest factors, then fewest ghosts, then (prefer_3d) 3-D sides
// first; "" when none reproduces every sample.
std::string ghosted_fit(const std::vector<Sample>& samples, const std::vector<std::string>& params,
                        const std::function<bool(const std::string&)>& accept, bool prefer_3d) {
  if (samples.empty() || params.empty()) return "";
  std::vector<std::string> names{"P"};
  if (samples.front().vars.count("rank")) names.push_back("rank");
  for (const std::string& p : params) names.push_back(p);
  std::vector<std::string> sides3, sides2;
  for (int i = 0; i < 3; ++i) sides3.push_back("dims(P, 3, " + std::to_string(i) + ")");
  for (int i = 0; i < 2; ++i) sides2.push_back("dims(P, 2, " + std::to_string(i) + ")");
  std::vector<std::string> sides{"1", "P"};
  for (const auto* group : prefer_3d ? std::vector{&sides3, &sides2} : std::vector{&sides2, &sides3})
    sides.insert(sides.end(), group->begin(), group->end());
  struct Factor {
    std::string text;
    int ghosts;
    std::vector<double> at;  // its value at every sample
  };
  std::vector<Factor> factors;
  for (const std::string& p : params)
    for (const std::string& side : sides)
      for (int g = 0; g <= 2; ++g) {
        std::string t = side == "1" ? p : p + "/" + side;
        if (g > 0) t += " + " + std::to_string(g);
        Factor f{t, g, {}};
        try {
          const Feature e(t, names, false);
          bool ok = true;
          for (const Sample& x : samples) {
            const double v = e.eval(x.vars);
            ok = ok && v >= 1 && v == std::floor(v);  // a block's side: a whole number of points
            f.at.push_back(v);
          }
          if (ok) factors.push_back(std::move(f));
        } catch (const std::exception&) {
        }
      }
  // (fewest factors, fewest ghosts, the order of the sides)
  struct Cand {
    int n, ghosts;
    std::size_t a, b;
  };
  std::vector<Cand> order;
  for (std::size_t a = 0; a < factors.size(); ++a) {
    if (factors[a].ghosts > 0) order.push_back({1, factors[a].ghosts, a, a});
    for (std::size_t b = a + 1; b < factors.size(); ++b)
      if (factors[a].ghosts + factors[b].ghosts > 0) order.push_back({2, factors[a].ghosts + factors[b].ghosts, a, b});
  }
  std::stable_sort(order.begin(), order.end(), [](const Cand& x, const Cand& y) { return std::tie(x.n, x.ghosts) < std::tie(y.n, y.ghosts); });
  auto wrap = [](const Factor& f) { return f.ghosts > 0 || f.text.find('/') != std::string::npos ? "(" + f.text + ")" : f.text; };
  for (const Cand& c : order) {
    const Factor& fa = factors[c.a];
    const Factor& fb = factors[c.b];
    double coef = 0;
    bool ok = true;
    for (std::size_t i = 0; ok && i < samples.size(); ++i) {
      const double base = c.n == 1 ? fa.at[i] : fa.at[i] * fb.at[i];
      const double r = samples[i].value / base;
      if (i == 0) coef = r;
      ok = r == coef;
    }
    if (!ok || !(coef >= 1) || coef > 4096 || coef != std::floor(coef)) continue;
    std::string text = c.n == 1 ? wrap(fa) : wrap(fa) + "*" + wrap(fb);
    if (coef != 1) text = std::to_string(static_cast<long long>(coef)) + "*" + text;
    if (!accept || accept(text)) return text;
  }
  return "";
}

}  // namespace

std::string decomposition_fit(const std::vector<Sample>& samples, const std::vector<std::string>& params,
                              const std::function<bool(const std::string&)>& accept, bool prefer_3d) {
  if (samples.empty()) return "";
  for (const Sample& x : samples)
    if (!(x.value > 0)) return "";
  // the sides of MPI_Dims_create(P, d), P times a side, and in 3-D P over a side (the product of the other two:
  // a face of a 3-D block, N^2/(Py*Pz)); a program that made a 3-D grid gets its sides first (at P <= 16 a face
  // N^2/(dims(P, 3, 1)*dims(P, 3, 2)) is also N^2/dims(P, 2, 0), which is half of it at P = 64)
  std::vector<std::string> grid2, grid3;
  for (int d = 2; d <= 3; ++d)
    for (int i = 0; i < d; ++i) {
      const std::string side = "dims(P, " + std::to_string(d) + ", " + std::to_string(i) + ")";
      (d == 2 ? grid2 : grid3).push_back(side);
      (d == 2 ? grid2 : grid3).push_back("(P*" + side + ")");
    }
  for (int i = 0; i < 3; ++i) grid3.push_back("(P/dims(P, 3, " + std::to_string(i) + "))");
  std::vector<std::string> divisors = {"1", "P"};
  if (prefer_3d) divisors.insert(divisors.end(), grid3.begin(), grid3.end());
  for (const char* root : {"sqrt(P)", "P^(2/3)", "P^(1/3)"}) divisors.push_back(root);
  divisors.insert(divisors.end(), grid2.begin(), grid2.end());
  if (!prefer_3d) divisors.insert(divisors.end(), grid3.begin(), grid3.end());
  std::vector<std::string> names{"P"};
  if (samples.front().vars.count("rank")) names.push_back("rank");
  for (const std::string& p : params) names.push_back(p);
  const std::size_t np = params.size();
  // exponents of each parameter: 0, 1, 2, 3, -1 (a block size in the denominator: N/(nb*P))
  static constexpr int EXP[] = {0, 1, 2, 3, -1};
  int combos = 1;
  for (std::size_t i = 0; i < np; ++i) combos *= 5;
  struct Cand {
    int nonzero, degree, mismatch;
    std::size_t divisor;
    int combo;
  };
  // On a 3-D grid, how many sides a divisor spans (1: 0, a side: 1, P over a side: 2, P: 3, P times a side: 4, the
  // roots of P: 1 and 2); a quantity of degree k in the parameters divides by k sides first (a face N^2 by two,
  // an edge N by one, a volume N^3 by P): at P <= 16 a face (N/Py)(N/Pz) is also 4 N^2 / Pz, not at 64.
  auto spans = [](const std::string& d) {
    if (d == "1") return 0;
    if (d == "P") return 3;
    if (d == "P^(2/3)") return 2;
    if (d == "P^(1/3)") return 1;
    if (d.rfind("(P/", 0) == 0) return 2;
    if (d.rfind("(P*", 0) == 0) return 4;
    return 1;
  };
  std::vector<Cand> order;
  for (int k = 0; k < combos; ++k) {
    int nz = 0, deg = 0, rest = k;
    for (std::size_t i = 0; i < np; ++i, rest /= 5) nz += rest % 5 != 0, deg += std::abs(EXP[rest % 5]);
    for (std::size_t d = 0; d < divisors.size(); ++d)
      order.push_back({nz, deg, prefer_3d ? std::abs(deg - spans(divisors[d])) : 0, d, k});
  }
  std::stable_sort(order.begin(), order.end(), [](const Cand& a, const Cand& b) {
    return std::tie(a.nonzero, a.degree, a.mismatch, a.divisor) < std::tie(b.nonzero, b.degree, b.mismatch, b.divisor);
  });
  for (const Cand& c : order) {
    std::string mono, under;
    int rest = c.combo;
    for (std::size_t i = 0; i < np; ++i, rest /= 5) {
      const int e = EXP[rest % 5];
      if (e > 0) mono += (mono.empty() ? "" : "*") + params[i] + (e > 1 ? "^" + std::to_string(e) : "");
      if (e < 0) under += (under.empty() ? "" : "*") + params[i];
    }
    std::string ldiv_free = divisors[c.divisor];
    if (!under.empty()) ldiv_free = ldiv_free == "1" ? under : "(" + under + "*" + ldiv_free + ")";
    const std::string body = (mono.empty() ? std::string("1") : mono) + "/" + ldiv_free;
    try {
      const Feature f(body, names, false);
      double ratio = 0;
      bool ok = true;
      for (const Sample& x : samples) {
        const double v = f.eval(x.vars);
        if (!(v > 0) || !std::isfinite(v)) {
          ok = false;
          break;
        }
        const double r = x.value / v;
        if (ratio == 0) ratio = r;
        else if (std::fabs(r - ratio) > 1e-9 * std::fabs(ratio)) {
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      for (int q = 1; q <= 64; ++q) {
        const double p = std::round(ratio * q);
        if (p < 1 || std::fabs(p - ratio * q) > 1e-7 * q) continue;
        std::string coef = std::to_string(static_cast<long long>(p));
        // A block of a parameter over a side of the grid (or P) is that parameter's block, ceil(N / side): an
        // integer at every P, as a program that splits N unevenly gives its largest blocks; written so when it
        // reproduces the runs (the parameter divides there), the largest parameter taken as the one divided
        const std::string& side = divisors[c.divisor];
        if (q == 1 && under.empty() && (side == "P" || side.rfind("dims(", 0) == 0)) {
          int split = -1, r = c.combo;
          for (std::size_t i = 0; i < np; ++i, r /= 5)
            if (EXP[r % 5] == 1 && (split < 0 || samples.front().vars.at(params[i]) > samples.front().vars.at(params[static_cast<std::size_t>(split)])))
              split = static_cast<int>(i);
          if (split >= 0) {
            std::string rest = p == 1 ? "" : coef;
            r = c.combo;
            for (std::size_t i = 0; i < np; ++i, r /= 5) {
              const int e = EXP[r % 5];
              if (e <= 0 || static_cast<int>(i) == split) continue;
              rest += (rest.empty() ? "" : "*") + params[i] + (e > 1 ? "^" + std::to_string(e) : "");
            }
            const std::string block = "ceil(" + params[static_cast<std::size_t>(split)] + " / " + side + ")";
            const std::string text = rest.empty() ? block : rest + "*" + block;
            const Feature g(text, names, true);
            bool same = true;
            for (const Sample& x : samples) same = same && g.eval(x.vars) == x.value;
            if (same && (!accept || accept(text))) return text;
          }
        }
        std::string text = (mono.empty() ? coef : (p == 1 ? mono : coef + "*" + mono));
        if (ldiv_free != "1") text += "/" + ldiv_free;
        if (q > 1) text = "(" + text + ")/" + std::to_string(q);
        if (!accept || accept(text)) return text;
        break;
      }
    } catch (const std::exception&) {
    }
  }
  return ghosted_fit(samples, params, accept, prefer_3d);
}

namespace {

std::string coef_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The arguments of a call `name(a, b, ...)` split at the commas outside parentheses; empty when `text` is not one.
std::vector<std::string> call_args(const std::string& text, const std::string& name) {
  if (text.rfind(name + "(", 0) != 0 || text.empty() || text.back() != ')') return {};
  std::vector<std::string> args;
  int depth = 0;
  std::string cur;
  for (std::size_t i = name.size() + 1; i + 1 < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '(') ++depth;
    if (ch == ')' && --depth < 0) return {};  // the call closes before the end: `f(a) + g(b)`
    if (ch == ',' && depth == 0) {
      args.push_back(cur);
      cur.clear();
      continue;
    }
    if (!(cur.empty() && ch == ' ')) cur += ch;
  }
  args.push_back(cur);
  return args;
}

}  // namespace

std::pair<std::string, int> cart_neighbour_side(const std::string& peer, const std::vector<std::pair<std::string, std::string>>& lets) {
  const std::vector<std::string> args = call_args(peer, "cart_rank");
  if (args.size() < 2 || args.size() % 2 != 0) return {"", 0};
  const std::size_t d = args.size() / 2;
  // a coordinate that moves is an offset, `(x + 1) % n`; one that stays is a name or a cart_coord(...)
  auto moved = [](const std::string& a) { return a.find(" + ") != std::string::npos || a.find(" - ") != std::string::npos; };
  int axis = -1;
  for (std::size_t k = 0; k < d; ++k)
    if (moved(args[k])) {
      if (axis >= 0) return {"", 0};  // an edge or a corner: not one face
      axis = static_cast<int>(k);
    }
  if (axis < 0) return {"", 0};
  return {let_value(args[d + static_cast<std::size_t>(axis)], lets), static_cast<int>(d)};
}

std::string let_value(const std::string& name, const std::vector<std::pair<std::string, std::string>>& lets) {
  for (const auto& [n, expr] : lets)
    if (n == name) return expr;
  return name;
}

std::optional<FaceFit> face_fit(const std::vector<Sample>& samples, const std::vector<std::string>& params,
                                const std::string& side, int ndims) {
  if (samples.empty() || params.empty() || side.empty() || ndims < 1) return std::nullopt;
  for (const Sample& x : samples)
    if (!(x.value > 0) || !std::isfinite(x.value)) return std::nullopt;
  std::vector<std::string> names{"P"};
  if (samples.front().vars.count("rank")) names.push_back("rank");
  for (const std::string& p : params) names.push_back(p);
  std::optional<FaceFit> best;
  for (const std::string& X : params) {
    const std::string face = (ndims == 1 ? std::string("") : ndims == 2 ? X + "*" : X + "^" + std::to_string(ndims - 1) + "*") +
                             "(" + side + ")/P";
    std::vector<double> f;
    try {
      const Feature e(face, names, false);
      for (const Sample& x : samples) f.push_back(e.eval(x.vars));
    } catch (const std::exception&) {
      continue;
    }
    if (std::any_of(f.begin(), f.end(), [](double v) { return !(v > 0) || !std::isfinite(v); })) continue;
    // least squares of the relative errors (weights 1 / value^2): c alone, and c with a constant e
    double sff = 0, sf = 0, s1 = 0, sfy = 0, sy = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const double w = 1 / (samples[i].value * samples[i].value);
      sff += w * f[i] * f[i], sf += w * f[i], s1 += w, sfy += w * f[i] * samples[i].value, sy += w * samples[i].value;
    }
    auto max_err = [&](double c, double e) {
      double m = 0;
      for (std::size_t i = 0; i < samples.size(); ++i) m = std::max(m, std::fabs(c * f[i] + e - samples[i].value) / samples[i].value);
      return m;
    };
    const double c1 = sfy / sff;
    if (!(c1 > 0)) continue;
    FaceFit one{coef_text(c1) + "*" + face, max_err(c1, 0)};
    const double det = sff * s1 - sf * sf;
    if (det > 1e-12 * sff * s1) {
      const double c2 = (sfy * s1 - sf * sy) / det, e2 = (sff * sy - sf * sfy) / det;
      if (c2 > 0 && e2 >= 0) {
        const double err2 = max_err(c2, e2);
        if (err2 + 0.01 < one.max_rel_error) one = {coef_text(c2) + "*" + face + " + " + coef_text(e2), err2};
      }
    }
    if (!best || one.max_rel_error < best->max_rel_error) best = one;
  }
  return best;
}

namespace {

// A rank's view of one of its communicators.
struct State {
  int decl = 0;                 // 0 world
  std::string inst;             // identity of its instance (the same on every member)
  int my_rank = -1;             // its rank in it
  std::vector<int> dims;        // Cartesian (cart, cart_sub): the grid of its instance
  std::vector<bool> periods;
};

struct DeclInfo {
  Kind kind{};
  int parent = 0;
  std::string key;   // (parent, how many communicators the rank made from it before)
  std::string name;  // set by declarations()
  std::vector<bool> periods, remain;
  std::vector<std::string> dims;    // Cartesian: expressions of the sides (let names once declared)
  std::vector<std::string> coords;  // Cartesian: let names of this rank's coordinates
  bool cartesian() const { return kind == Kind::CART_CREATE || kind == Kind::CART_SUB; }
};

struct RunData {
  std::vector<std::map<std::uint32_t, State>> state;                  // per rank: tracer id -> its view
  std::map<std::pair<int, std::string>, std::vector<int>> members;    // (decl, instance) -> world ranks, comm order
  std::map<int, std::map<int, trace::CommArgs>> args;                 // decl -> world rank -> the call's arguments
  std::map<int, std::map<int, int>> parent_rank;                      // decl -> world rank -> its rank in the parent
};

// coordinate i of r in a row-major grid
int coord(int r, std::size_t i, const std::vector<int>& dims) {
  int stride = 1;
  for (std::size_t j = i + 1; j < dims.size(); ++j) stride *= dims[j];
  return (r / stride) % dims[i];
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += std::to_string(x) + ",";
  return s;
}

}  // namespace

struct Topology::Impl {
  std::vector<TopoRun> runs;
  std::vector<std::string> params;
  std::vector<DeclInfo> decls;  // decls[k - 1] is declaration k
  std::map<std::string, int> by_key;
  std::vector<RunData> data;    // per run
  std::vector<std::pair<std::string, std::string>> lets;
  mutable std::vector<int> last_offset;       // cart_peer's last choice
  mutable std::vector<int> last_send_offset;  // its last choice for a Shift::against_last_send fit
  // the offsets of plain sends and receives (Shift::pairs_send, pairs_recv) not yet paired with one of the other
  // kind, oldest first
  mutable std::deque<std::vector<int>> open_sends, open_recvs;
  // the last offset of a plain send (0) or receive (1) along each axis: with no partner to pair with, the next one
  // along that axis goes the other way (an axis has two directions, exchanged in turn)
  mutable std::map<std::pair<int, std::size_t>, std::vector<int>> last_on_axis;

  std::size_t index_of(const TopoRun& run) const {
    for (std::size_t i = 0; i < runs.size(); ++i)
      if (runs[i].run == run.run) return i;
    return 0;
  }

  const State* state(const TopoRun& run, int rank, std::uint32_t comm) const {
    const RunData& d = data[index_of(run)];
    if (rank < 0 || static_cast<std::size_t>(rank) >= d.state.size()) return nullptr;
    auto it = d.state[static_cast<std::size_t>(rank)].find(comm);
    return it == d.state[static_cast<std::size_t>(rank)].end() ? nullptr : &it->second;
  }

  const std::vector<int>* members(const TopoRun& run, const State& s) const {
    const RunData& d = data[index_of(run)];
    auto it = d.members.find({s.decl, s.inst});
    return it == d.members.end() ? nullptr : &it->second;
  }

  void scan(std::size_t ri) {
    const trace::Run& run = *runs[ri].run;
    RunData& d = data[ri];
    const int P = run.P;
    d.state.resize(run.ranks.size());
    std::map<std::pair<int, std::string>, std::vector<std::pair<int, int>>> raw;
    std::vector<int> world(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) world[static_cast<std::size_t>(r)] = r;
    d.members[{0, "w"}] = world;
    for (std::size_t r = 0; r < run.ranks.size(); ++r) {
      auto& st = d.state[r];
      st[0] = State{0, "w", static_cast<int>(r), {}, {}};
      std::map<int, int> made_from;
      for (const trace::Event& e : run.ranks[r].events) {
        if (!trace::creates_comm(e.kind)) continue;
        auto pit = st.find(e.comm);
        if (pit == st.end()) continue;  // a parent the tracer did not see made (MPI_COMM_SELF, ...)
        const State parent = pit->second;
        const int seq = made_from[parent.decl]++;
        const std::string key = std::to_string(parent.decl) + "/" + std::to_string(seq);
        int decl;
        if (auto k = by_key.find(key); k != by_key.end()) {
          decl = k->second;
        } else {
          DeclInfo info;
          info.kind = e.kind;
          info.parent = parent.decl;
          info.key = key;
          decls.push_back(info);
          decl = static_cast<int>(decls.size());
          by_key[key] = decl;
        }
        const trace::CommArgs* a = run.ranks[r].args_of(e);
        if (!a) continue;
        d.args[decl][static_cast<int>(r)] = *a;
        d.parent_rank[decl][static_cast<int>(r)] = parent.my_rank;
        if (e.root < 0 || a->new_rank < 0) continue;  // MPI_COMM_NULL: not a member
        State s;
        s.decl = decl;
        s.my_rank = a->new_rank;
        switch (e.kind) {
          case Kind::COMM_SPLIT:
            s.inst = parent.inst + "/" + std::to_string(seq) + "s" + std::to_string(a->color);
            break;
          case Kind::CART_CREATE:
            s.inst = parent.inst + "/" + std::to_string(seq) + "c";
            s.dims = a->dims;
            s.periods = a->periods;
            break;
          case Kind::CART_SUB: {
            std::string fixed;
            for (std::size_t i = 0; i < parent.dims.size() && i < a->remain.size(); ++i) {
              if (a->remain[i]) {
                s.dims.push_back(parent.dims[i]);
                s.periods.push_back(i < parent.periods.size() && parent.periods[i]);
              } else {
                fixed += std::to_string(coord(parent.my_rank, i, parent.dims)) + ",";
              }
            }
            s.inst = parent.inst + "/" + std::to_string(seq) + "u" + fixed;
            break;
          }
          case Kind::COMM_CREATE: case Kind::COMM_CREATE_GROUP:
            s.inst = parent.inst + "/" + std::to_string(seq) + "m" + join(a->members);
            break;
          default:  // dup, graphs: the parent's members
            s.inst = parent.inst + "/" + std::to_string(seq) + "d";
        }
        raw[{decl, s.inst}].emplace_back(a->new_rank, static_cast<int>(r));
        st[static_cast<std::uint32_t>(e.root)] = std::move(s);
      }
    }
    for (auto& [k, v] : raw) {
      std::sort(v.begin(), v.end());
      std::vector<int> m;
      for (const auto& [nr, w] : v) m.push_back(w);
      d.members[k] = std::move(m);
    }
  }

  // Samples of one value per (run, rank) for declaration `decl`, read from its arguments.
  template <class F>
  std::vector<Sample> arg_samples(int decl, F get, bool per_rank) const {
    std::vector<Sample> out;
    for (std::size_t ri = 0; ri < runs.size(); ++ri) {
      auto it = data[ri].args.find(decl);
      if (it == data[ri].args.end()) continue;
      for (const auto& [rank, a] : it->second) {
        Vars v = runs[ri].vars;
        if (per_rank) v["rank"] = rank;
        out.push_back({v, get(a), runs[ri].name});
        if (!per_rank) break;
      }
    }
    return out;
  }

  std::vector<std::string> names(bool with_rank) const {
    std::vector<std::string> n{"P"};
    if (with_rank) n.push_back("rank");
    for (const std::string& p : params) n.push_back(p);
    return n;
  }

  // Whether `text` is equal to every sample's value.
  bool reproduces(const std::string& text, const std::vector<Sample>& samples, bool with_rank) const {
    try {
      const Feature f(text, names(with_rank), true);
      for (const Sample& s : samples)
        if (std::fabs(f.eval(s.vars) - s.value) > 1e-9) return false;
      return !samples.empty();
    } catch (const std::exception&) {
      return false;
    }
  }

  // Grid sides the program's MPI_Dims_create calls give at every run (dims(P, d, i)), and the power-of-two
  // grid's, as expressions.
  std::vector<std::string> sides() const {
    std::set<std::pair<int, int>> seen;
    for (std::size_t ri = 0; ri < runs.size(); ++ri)
      for (const trace::RankTrace& t : runs[ri].run->ranks)
        for (const trace::Event& e : t.events)
          if (e.kind == Kind::DIMS_CREATE)
            if (const trace::CommArgs* a = t.args_of(e); a && a->nnodes == runs[ri].run->P)
              seen.insert({static_cast<int>(a->dims.size()), 0});
    std::vector<std::string> out;
    for (const auto& [d, unused] : seen)
      for (int i = 0; i < d; ++i) out.push_back("dims(P, " + std::to_string(d) + ", " + std::to_string(i) + ")");
    for (int d = 2; d <= 3; ++d)
      for (int i = 0; i < d; ++i) {
        const std::string s = "dims(P, " + std::to_string(d) + ", " + std::to_string(i) + ")";
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
      }
    out.push_back(GRID_PX);
    out.push_back(GRID_PY);
    return out;
  }

  // A split's colour: an exact expression of the values, else one that makes the same groups in every run.
  std::string colour(int decl, const FitInt& fit, const std::string& where, std::vector<std::string>& warnings) const {
    const auto values = arg_samples(decl, [](const trace::CommArgs& a) { return static_cast<double>(a.color); }, true);
    bool undefined = false, all_same = true;
    for (const Sample& s : values) {
      undefined = undefined || s.value < 0;
      all_same = all_same && s.value == values.front().value;
    }
    if (all_same) return std::to_string(static_cast<long long>(values.front().value));
    FitOptions fo;
    fo.integer = true;
    fo.allow_rank = true;
    if (const Fit f = fit_quantity(values, params, fo); f.exact && !has_decimal_literal(f.expr)) return f.expr;
    if (!undefined) {
      // the colour's value does not matter, only the groups: coordinates of a grid of the run's sides
      std::vector<std::string> cands;
      for (const std::string& s : sides()) {
        cands.push_back("floor(rank / (" + s + "))");
        cands.push_back("rank % (" + s + ")");
      }
      for (const std::string& c : cands) {
        bool ok = true;
        try {
          const Feature f(c, names(true), true);
          std::map<std::pair<std::string, double>, double> fwd, back;
          for (const Sample& s : values) {
            const double v = f.eval(s.vars);
            auto [it, fresh] = fwd.emplace(std::make_pair(s.run, s.value), v);
            auto [jt, fresh2] = back.emplace(std::make_pair(s.run, v), s.value);
            if ((!fresh && it->second != v) || (!fresh2 && jt->second != s.value) || v < 0 || v != std::floor(v)) ok = false;
          }
        } catch (const std::exception&) {
          ok = false;
        }
        if (ok) return c;
      }
    }
    warnings.push_back(where + "/color: no expression of rank and P makes the traced groups; see the fit");
    return fit(values, where, "color", true);
  }

  // A side of a grid of every rank: MPI_Dims_create's sides in some order (codes that factor P themselves, as
  // LAMMPS does, often put the largest side last). The sides are chosen together, as one permutation that gives
  // every side in every run, so that their product is P at every P; fitted one by one, a side that stayed 2 in
  // the traced runs would be written "2". Where several permutations give every traced side (P = 4 and 8 see
  // 1 x 2 x 2 and 2 x 2 x 2), MPI_Dims_create's order is tried first, then its reverse (ascending sides: LAMMPS
  // takes the first grid of least sub-domain surface in ascending order of its sides, 2 x 2 x 4 at P = 16 on a
  // cube), then the others.
  std::string cart_dim(int decl, std::size_t i, std::size_t nd, const FitInt& fit, const std::string& where) const {
    auto side = [&](std::size_t k) {
      return arg_samples(decl, [k](const trace::CommArgs& a) { return k < a.dims.size() ? static_cast<double>(a.dims[k]) : -1.0; }, false);
    };
    if (data_parent_is_world(decl) && nd <= 3) {
      std::vector<int> perm(nd);
      for (std::size_t k = 0; k < nd; ++k) perm[k] = static_cast<int>(k);
      std::vector<std::vector<int>> order{perm, std::vector<int>(perm.rbegin(), perm.rend())};
      while (std::next_permutation(perm.begin(), perm.end()))
        if (std::find(order.begin(), order.end(), perm) == order.end()) order.push_back(perm);
      for (const std::vector<int>& p : order) {
        bool all = true;
        for (std::size_t k = 0; k < nd && all; ++k)
          all = reproduces("dims(P, " + std::to_string(nd) + ", " + std::to_string(p[k]) + ")", side(k), false);
        if (all) return "dims(P, " + std::to_string(nd) + ", " + std::to_string(p[i]) + ")";
      }
    }
    return fit(side(i), where, "dims", false);
  }

  bool data_parent_is_world(int decl) const { return decls[static_cast<std::size_t>(decl - 1)].parent == 0; }

  // Cartesian neighbour: the offset (each coordinate in -2..2) that gives every observation.
  std::string cart_peer(int decl, const std::vector<RankObs>& obs, std::string& note, Shift shift) const {
    const DeclInfo& info = decls[static_cast<std::size_t>(decl - 1)];
    const std::size_t nd = info.dims.size();
    if (nd == 0 || nd > 3 || info.coords.size() != nd) return "";
    struct O {
      std::vector<int> c, dims;
      std::vector<bool> periods;
      int value;
    };
    std::vector<O> os;
    for (const RankObs& o : obs) {
      const State* s = state(*o.run, o.rank, o.comm);
      if (!s || s->dims.size() != nd || s->my_rank < 0) return "";
      int v = o.value == trace::PROC_NULL ? -1 : -4;
      if (o.value >= 0) {
        const std::vector<int>* m = members(*o.run, *s);
        if (!m) return "";
        auto it = std::find(m->begin(), m->end(), o.value);
        if (it == m->end()) return "";
        v = static_cast<int>(it - m->begin());
      }
      if (v == -4) return "";
      O x;
      for (std::size_t i = 0; i < nd; ++i) x.c.push_back(coord(s->my_rank, i, s->dims));
      x.dims = s->dims;
      x.periods = s->periods;
      x.value = v;
      os.push_back(std::move(x));
    }
    if (os.empty()) return "";
    // candidate offsets, fewest and smallest moves first, + before -
    std::vector<std::vector<int>> cands;
    const int span = 5;
    int total = 1;
    for (std::size_t i = 0; i < nd; ++i) total *= span;
    for (int k = 0; k < total; ++k) {
      std::vector<int> off(nd);
      int rest = k;
      for (std::size_t i = 0; i < nd; ++i) {
        const int digit = rest % span;
        rest /= span;
        off[i] = digit == 0 ? 0 : digit == 1 ? 1 : digit == 2 ? -1 : digit == 3 ? 2 : -2;
      }
      cands.push_back(off);
    }
    auto cost = [](const std::vector<int>& o) {
      int nz = 0, ab = 0;
      for (int x : o) nz += x != 0, ab += std::abs(x);
      return std::make_pair(nz, ab);
    };
    std::stable_sort(cands.begin(), cands.end(), [&](const auto& a, const auto& b) { return cost(a) < cost(b); });
    std::vector<std::vector<int>> fits;
    for (const auto& off : cands) {
      bool ok = true;
      for (const O& x : os) {
        int r = 0;
        bool null = false;
        for (std::size_t i = 0; i < nd && !null; ++i) {
          int q = x.c[i] + off[i];
          if (x.periods[i]) q = ((q % x.dims[i]) + x.dims[i]) % x.dims[i];
          else if (q < 0 || q >= x.dims[i]) null = true;
          r = r * x.dims[i] + q;
        }
        if ((null ? -1 : r) != x.value) {
          ok = false;
          break;
        }
      }
      if (ok) fits.push_back(off);
    }
    if (fits.empty()) return "";
    std::size_t pick = 0;
    // a plain send pairs with the oldest plain receive not yet paired, and the other way round
    const bool pairs = shift == Shift::pairs_send || shift == Shift::pairs_recv;
    std::deque<std::vector<int>>& partners = shift == Shift::pairs_send ? open_recvs : open_sends;
    std::deque<std::vector<int>>& mine = shift == Shift::pairs_send ? open_sends : open_recvs;
    while (pairs && !partners.empty() && partners.front().size() != nd) partners.pop_front();  // another grid's
    auto axis_of = [](const std::vector<int>& o) -> std::size_t {  // the one axis it moves along, else SIZE_MAX
      std::size_t a = SIZE_MAX;
      for (std::size_t i = 0; i < o.size(); ++i)
        if (o[i] != 0) {
          if (a != SIZE_MAX) return SIZE_MAX;
          a = i;
        }
      return a;
    };
    const int kind = shift == Shift::pairs_send ? 0 : 1;
    const std::vector<int> none;
    const std::vector<int>* turn = &none;
    if (pairs && partners.empty())
      if (auto it = last_on_axis.find({kind, axis_of(fits.front())}); it != last_on_axis.end()) turn = &it->second;
    const std::vector<int>& from = pairs ? (partners.empty() ? *turn : partners.front())
                                         : shift == Shift::against_last_send ? last_send_offset : last_offset;
    if (shift != Shift::any && from.size() == nd) {
      std::vector<int> neg(nd);
      for (std::size_t i = 0; i < nd; ++i) neg[i] = -from[i];
      for (std::size_t k = 0; k < fits.size(); ++k)
        if (fits[k] == neg) pick = k;
    }
    std::swap(fits[0], fits[pick]);
    const std::vector<int>& off = fits.front();
    last_offset = off;
    if (shift == Shift::against_last_send) last_send_offset = off;
    if (pairs) {
      if (partners.empty()) mine.push_back(off);
      else partners.pop_front();
      if (const std::size_t a = axis_of(off); a != SIZE_MAX) last_on_axis[{kind, a}] = off;
    }
    std::string args;
    for (std::size_t i = 0; i < 3; ++i) {
      std::string c = "0";
      if (i < nd) {
        c = info.coords[i];
        if (off[i] != 0) c += (off[i] > 0 ? " + " : " - ") + std::to_string(std::abs(off[i]));
        if (off[i] != 0 && info.periods.size() > i && info.periods[i]) c = "(" + c + ") % " + info.dims[i];
      }
      args += c + ", ";
    }
    for (std::size_t i = 0; i < 3; ++i) args += (i < nd ? info.dims[i] : std::string("1")) + (i < 2 ? ", " : "");
    if (fits.size() > 1) {
      std::string others;
      for (std::size_t k = 1; k < fits.size() && k < 4; ++k) others += " " + join(fits[k]);
      note = "other coordinate offsets give the same ranks in every traced run (the grid is too small there):" + others;
    }
    return "cart_rank(" + args + ")";
  }
};

Topology::Topology(const std::vector<TopoRun>& runs, std::vector<std::string> params) : impl_(std::make_unique<Impl>()) {
  impl_->runs = runs;
  impl_->params = std::move(params);
  impl_->data.resize(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) impl_->scan(i);
}

Topology::~Topology() = default;

bool Topology::any() const { return !impl_->decls.empty(); }

const std::vector<std::pair<std::string, std::string>>& Topology::lets() const { return impl_->lets; }

nlohmann::json Topology::declarations(const FitInt& fit, std::vector<std::string>& warnings) {
  Impl& m = *impl_;
  nlohmann::json out = nlohmann::json::object();
  m.lets.clear();
  const int width = m.decls.size() < 100 ? 2 : 4;
  for (std::size_t k = 0; k < m.decls.size(); ++k) {
    DeclInfo& info = m.decls[k];
    const int decl = static_cast<int>(k + 1);
    char num[16];
    std::snprintf(num, sizeof num, "c%0*d", width, decl);
    const char* kind = "dup";
    switch (info.kind) {
      case Kind::COMM_SPLIT: kind = "split"; break;
      case Kind::CART_CREATE: kind = "cart"; break;
      case Kind::CART_SUB: kind = "sub"; break;
      case Kind::COMM_CREATE: case Kind::COMM_CREATE_GROUP: kind = "create"; break;
      case Kind::GRAPH_CREATE: case Kind::DIST_GRAPH_CREATE: case Kind::DIST_GRAPH_CREATE_ADJACENT: kind = "graph"; break;
      default: break;
    }
    info.name = std::string(num) + "_" + kind;
    const std::string parent = name(info.parent), where = "/comms/" + info.name;
    nlohmann::json j;
    // one member's arguments, of the first run that made it
    const trace::CommArgs* any = nullptr;
    for (const RunData& d : m.data)
      if (auto it = d.args.find(decl); it != d.args.end() && !it->second.empty() && !any) any = &it->second.begin()->second;
    switch (info.kind) {
      case Kind::COMM_SPLIT: {
        j["split"] = parent;
        j["color"] = m.colour(decl, fit, where, warnings);
        // the key matters only when it orders a group otherwise than the parent does
        bool parent_order = true;
        for (std::size_t ri = 0; ri < m.runs.size(); ++ri)
          for (const auto& [key, mem] : m.data[ri].members)
            if (key.first == decl)
              for (std::size_t i = 1; i < mem.size(); ++i)
                if (m.data[ri].parent_rank[decl][mem[i]] < m.data[ri].parent_rank[decl][mem[i - 1]]) parent_order = false;
        if (!parent_order)
          j["key"] = fit(m.arg_samples(decl, [](const trace::CommArgs& a) { return static_cast<double>(a.key); }, true), where, "key", true);
        break;
      }
      case Kind::CART_CREATE: {
        j["cart"] = parent;
        const std::size_t nd = any ? any->dims.size() : 0;
        nlohmann::json dims = nlohmann::json::array(), periods = nlohmann::json::array();
        for (std::size_t i = 0; i < nd; ++i) {
          const std::string side = info.name + "_n" + std::to_string(i);
          m.lets.emplace_back(side, m.cart_dim(decl, i, nd, fit, where));
          dims.push_back(side);
          info.dims.push_back(side);
          const bool p = any->periods.size() > i && any->periods[i];
          periods.push_back(p);
          info.periods.push_back(p);
        }
        j["dims"] = dims;
        j["periods"] = periods;
        if (nd > 3) warnings.push_back(where + ": a grid of " + std::to_string(nd) + " dimensions; the format has up to 3");
        break;
      }
      case Kind::CART_SUB: {
        j["cart_sub"] = parent;
        nlohmann::json remain = nlohmann::json::array();
        const DeclInfo* p = info.parent > 0 ? &m.decls[static_cast<std::size_t>(info.parent - 1)] : nullptr;
        for (std::size_t i = 0; any && i < any->remain.size(); ++i) {
          remain.push_back(static_cast<bool>(any->remain[i]));
          if (any->remain[i] && p && i < p->dims.size()) {
            info.dims.push_back(p->dims[i]);
            info.periods.push_back(i < p->periods.size() && p->periods[i]);
          }
        }
        j["remain"] = remain;
        break;
      }
      case Kind::COMM_CREATE: case Kind::COMM_CREATE_GROUP: {
        j["create"] = parent;
        // the members as a function of `member` (one instance per run), and how many
        std::vector<Sample> mem, size;
        for (std::size_t ri = 0; ri < m.runs.size(); ++ri)
          for (const auto& [key, list] : m.data[ri].members)
            if (key.first == decl) {
              size.push_back({m.runs[ri].vars, static_cast<double>(list.size()), m.runs[ri].name});
              for (std::size_t i = 0; i < list.size(); ++i) {
                Vars v = m.runs[ri].vars;
                v["rank"] = static_cast<double>(i);
                mem.push_back({v, static_cast<double>(list[i]), m.runs[ri].name});
              }
            }
        if (!mem.empty()) {
          j["members"] = rename_rank_and_size(fit(mem, where, "members", true), "member", "P");
          j["size"] = fit(size, where, "size", false);
        }
        break;
      }
      case Kind::GRAPH_CREATE: case Kind::DIST_GRAPH_CREATE: case Kind::DIST_GRAPH_CREATE_ADJACENT:
        j["graph"] = parent;
        break;
      default:
        j["dup"] = parent;
    }
    if (info.cartesian() && !info.dims.empty() && info.dims.size() <= 3) {
      std::string sides;
      for (std::size_t i = 0; i < 3; ++i) sides += ", " + (i < info.dims.size() ? info.dims[i] : std::string("1"));
      for (std::size_t i = 0; i < info.dims.size(); ++i) {
        const std::string c = info.name + "_x" + std::to_string(i);
        m.lets.emplace_back(c, "cart_coord(max(" + info.name + ".rank, 0), " + std::to_string(i) + sides + ")");
        info.coords.push_back(c);
      }
    }
    out[info.name] = std::move(j);
  }
  return out;
}

int Topology::decl_of(const TopoRun& run, int rank, std::uint32_t comm) const {
  const State* s = impl_->state(run, rank, comm);
  return s ? s->decl : 0;
}

std::string Topology::name(int decl) const {
  return decl == 0 ? std::string("world") : impl_->decls[static_cast<std::size_t>(decl - 1)].name;
}

int Topology::size_of(const TopoRun& run, int rank, std::uint32_t comm) const {
  const State* s = impl_->state(run, rank, comm);
  if (!s) return comm == 0 ? run.run->P : 0;
  const std::vector<int>* m = impl_->members(run, *s);
  return m ? static_cast<int>(m->size()) : 0;
}

std::map<std::uint32_t, std::vector<int>> Topology::communicators(const TopoRun& run, int rank) const {
  std::map<std::uint32_t, std::vector<int>> out;
  const RunData& d = impl_->data[impl_->index_of(run)];
  if (rank < 0 || static_cast<std::size_t>(rank) >= d.state.size()) return out;
  for (const auto& [id, s] : d.state[static_cast<std::size_t>(rank)])
    if (const std::vector<int>* m = impl_->members(run, s)) out[id] = *m;
  return out;
}

int Topology::to_comm_rank(const TopoRun& run, int rank, std::uint32_t comm, int world) const {
  if (world < 0) return world == trace::PROC_NULL ? -1 : world;
  const State* s = impl_->state(run, rank, comm);
  if (!s) return comm == 0 ? world : -4;
  const std::vector<int>* m = impl_->members(run, *s);
  if (!m) return -4;
  auto it = std::find(m->begin(), m->end(), world);
  return it == m->end() ? -4 : static_cast<int>(it - m->begin());
}

int Topology::cart_axis(const TopoRun& run, int rank, std::uint32_t comm, int peer) const {
  const Impl& m = *impl_;
  if (peer < 0) return -1;
  const RunData& d = m.data[m.index_of(run)];
  if (static_cast<std::size_t>(rank) >= d.state.size()) return -1;
  const State* s = m.state(run, rank, comm);
  if (comm == 0 || !s || s->dims.empty()) {  // on world: a grid of every rank, in order
    s = nullptr;
    for (const auto& [id, st] : d.state[static_cast<std::size_t>(rank)]) {
      if (st.decl <= 0 || st.dims.empty() || m.decls[static_cast<std::size_t>(st.decl - 1)].kind != Kind::CART_CREATE ||
          m.decls[static_cast<std::size_t>(st.decl - 1)].parent != 0)
        continue;
      const std::vector<int>* mem = m.members(run, st);
      if (!mem || static_cast<int>(mem->size()) != run.run->P) continue;
      bool in_order = true;
      for (std::size_t i = 0; i < mem->size() && in_order; ++i) in_order = (*mem)[i] == static_cast<int>(i);
      if (in_order) {
        s = &st;
        break;
      }
    }
    if (!s) return -1;
  }
  const std::vector<int>* mem = m.members(run, *s);
  if (!mem || s->my_rank < 0) return -1;
  auto it = std::find(mem->begin(), mem->end(), peer);
  if (it == mem->end()) return -1;
  const int other = static_cast<int>(it - mem->begin());
  int axis = -1;
  if (other == s->my_rank) {  // the rank itself: its neighbour along a periodic axis of one rank, if only one has one
    for (std::size_t i = 0; i < s->dims.size(); ++i)
      if (s->dims[i] == 1 && i < s->periods.size() && s->periods[i]) {
        if (axis >= 0) return -1;
        axis = static_cast<int>(i);
      }
    return axis;
  }
  for (std::size_t i = 0; i < s->dims.size(); ++i)
    if (coord(s->my_rank, i, s->dims) != coord(other, i, s->dims)) {
      if (axis >= 0) return -1;
      axis = static_cast<int>(i);
    }
  return axis;
}

std::string Topology::fit_rank(int decl, const std::vector<RankObs>& obs, const FitInt& fit, const std::string& where,
                               const char* field, bool& exact, std::string& note, Shift shift) const {
  const Impl& m = *impl_;
  exact = true;
  note.clear();
  // 1. a neighbour on the Cartesian grid of the communicator (or, on world, of a grid of all ranks in order)
  std::vector<int> grids;
  if (decl > 0 && m.decls[static_cast<std::size_t>(decl - 1)].cartesian()) grids.push_back(decl);
  if (decl == 0)
    for (std::size_t k = 0; k < m.decls.size(); ++k)
      if (m.decls[k].kind == Kind::CART_CREATE && m.decls[k].parent == 0) grids.push_back(static_cast<int>(k + 1));
  for (int g : grids) {
    std::vector<RankObs> on = obs;
    bool whole = true;  // world ranks are the grid's ranks: the grid has every rank, in order
    if (g != decl) {
      for (RankObs& o : on) {
        const RunData& d = m.data[m.index_of(*o.run)];
        bool found = false;
        for (const auto& [id, s] : d.state[static_cast<std::size_t>(o.rank)])
          if (s.decl == g) {
            const std::vector<int>* mem = m.members(*o.run, s);
            whole = whole && mem && static_cast<int>(mem->size()) == o.run->run->P;
            o.comm = id;
            found = true;
          }
        whole = whole && found;
      }
    }
    if (!whole) continue;
    std::string why;
    const std::string text = m.cart_peer(g, on, why, shift);
    if (!text.empty()) {
      note = why;
      return text;
    }
  }
  // 2. the communicator's own rank and size (a ring on a split: (c.rank + 1) % c.size)
  std::vector<Sample> rel, world;
  bool all_same = true;
  for (const RankObs& o : obs) {
    const int v = to_comm_rank(*o.run, o.rank, o.comm, o.value);
    if (v == -4) {
      exact = false;
      note = "rank " + std::to_string(o.value) + " is not a member of rank " + std::to_string(o.rank) + "'s communicator in " + o.run->name;
      return "";
    }
    Vars a = o.run->vars, b = o.run->vars;
    const State* s = m.state(*o.run, o.rank, o.comm);
    a["rank"] = s ? s->my_rank : o.rank;
    a["P"] = size_of(*o.run, o.rank, o.comm);
    b["rank"] = o.rank;
    rel.push_back({a, static_cast<double>(v), o.run->name});
    world.push_back({b, static_cast<double>(v), o.run->name});
    all_same = all_same && v == static_cast<int>(rel.front().value);
  }
  if (rel.empty()) return "";
  if (all_same) return std::to_string(static_cast<int>(rel.front().value));
  FitOptions fo;
  fo.integer = true;
  fo.allow_rank = true;
  if (decl != 0) {
    const std::string& n = name(decl);
    try {
      if (const Fit f = fit_quantity(rel, m.params, fo); f.exact && !has_decimal_literal(f.expr)) return rename_rank_and_size(f.expr, n + ".rank", n + ".size");
    } catch (const std::invalid_argument&) {
    }
  }
  // 3. world rank, P and the parameters: the builder's fit (which warns when nothing is exact)
  return fit(world, where, field, true);
}

}  // namespace mksim::skeletons::builder
