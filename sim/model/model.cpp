// The analytic model of seed 000 s.4 over a skeleton. Three passes:
//  1. every rank walks its program once (loops entered once, not iterated): which branches it takes (its
//     class), and per phase label which ranks send (SL), receive (RL), the pairs, and whether a rank
//     receives before it sends (MK's step 3: a pipeline);
//  2. per label: type (pipeline when some rank receives first and the pairs are a chain), depth (longest
//     chain in the pairs), independence of consecutive labels (RL(g_i) and SL(g_i+1) disjoint);
//  3. per rank class, the completion time as a GiNaC expression: compute blocks add their time, loops
//     multiply by their count, `prob` branches weight by their probability, a point-to-point exchange
//     (the ops of one label up to their completion) costs n_s*s + max(tau(m), W) + n_r*(r+o), a loop that
//     carries a pipeline label costs Fill + Remain = D*(tau(m)+s+r+W) + B*max(s+r+o+W, m*beta), collectives
//     cost their algorithm's rounds, consecutive independent phases overlap (max). T = max over classes.
#include "sim/model/model.hpp"

#include "sim/engine/phase_patterns.hpp"

#include "skeletons/builder/regress.hpp"
#include "skeletons/comms.hpp"
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"

#include <ginac/ginac.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>
#include <sstream>
#include <unordered_map>

namespace mksim::sim {

// ---------------------------------------------------------------------------------------------------------
// GiNaC functions with the skeleton language's semantics (skeletons::apply_instr): they fold when their
// arguments are numbers, and floor/ceil differentiate as their argument (continuous relaxation).
namespace fn {

using GiNaC::ex;
using GiNaC::numeric;
using Code = skeletons::ExprInstr::Code;

ex number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return numeric(static_cast<long>(v));
  // small fractions stay exact (a skeleton's "P^(3/2)" arrives folded to 1.5): readable, and exact algebra
  if (std::isfinite(v) && std::fabs(v) < 1e6)
    for (long q = 2; q <= 12; ++q) {
      const double p = v * static_cast<double>(q);
      if (std::fabs(p - std::round(p)) < 1e-12 * std::max(1.0, std::fabs(p)))
        return numeric(static_cast<long>(std::round(p)), q);
    }
  return numeric(v);
}

bool all_numeric(std::initializer_list<const ex*> args) {
  for (const ex* a : args)
    if (!GiNaC::is_exactly_a<numeric>(*a) || !GiNaC::ex_to<numeric>(*a).is_real()) return false;
  return true;
}

double to_d(const ex& e) { return GiNaC::ex_to<numeric>(e).to_double(); }

ex apply_num(Code c, std::initializer_list<const ex*> args) {
  double a[6] = {0, 0, 0, 0, 0, 0};
  int i = 0;
  for (const ex* x : args) a[i++] = to_d(*x);
  return number(skeletons::apply_instr(c, a));
}

ex evalf_or(const ex& e) { return e.evalf(); }

DECLARE_FUNCTION_1P(mk_floor)
DECLARE_FUNCTION_1P(mk_ceil)
DECLARE_FUNCTION_1P(mk_log2)
DECLARE_FUNCTION_1P(mk_not)
DECLARE_FUNCTION_2P(mk_min)
DECLARE_FUNCTION_2P(mk_max)
DECLARE_FUNCTION_2P(mk_mod)
DECLARE_FUNCTION_2P(mk_xor)
DECLARE_FUNCTION_2P(mk_lt)
DECLARE_FUNCTION_2P(mk_le)
DECLARE_FUNCTION_2P(mk_eq)
DECLARE_FUNCTION_2P(mk_ne)
DECLARE_FUNCTION_2P(mk_and)
DECLARE_FUNCTION_2P(mk_or)
DECLARE_FUNCTION_3P(mk_if)
DECLARE_FUNCTION_3P(mk_dims)
DECLARE_FUNCTION_5P(mk_cart_coord)
DECLARE_FUNCTION_6P(mk_cart_rank)

#define MK_EVAL1(NAME, CODE)                                                               \
  ex NAME##_eval(const ex& x) {                                                            \
    if (all_numeric({&x})) return apply_num(CODE, {&x});                                   \
    return NAME(x).hold();                                                                 \
  }                                                                                        \
  ex NAME##_evalf(const ex& x) {                                                           \
    ex a = x.evalf();                                                                      \
    if (all_numeric({&a})) return GiNaC::ex(apply_num(CODE, {&a})).evalf();               \
    return NAME(a).hold();                                                                 \
  }
#define MK_EVAL2(NAME, CODE)                                                               \
  ex NAME##_eval(const ex& x, const ex& y) {                                               \
    if (all_numeric({&x, &y})) return apply_num(CODE, {&x, &y});                          \
    return NAME(x, y).hold();                                                              \
  }                                                                                        \
  ex NAME##_evalf(const ex& x, const ex& y) {                                              \
    ex a = x.evalf(), b = y.evalf();                                                       \
    if (all_numeric({&a, &b})) return GiNaC::ex(apply_num(CODE, {&a, &b})).evalf();        \
    return NAME(a, b).hold();                                                              \
  }

MK_EVAL1(mk_floor, Code::FLOOR)
MK_EVAL1(mk_ceil, Code::CEIL)
MK_EVAL1(mk_not, Code::NOT)
MK_EVAL2(mk_mod, Code::MOD)
MK_EVAL2(mk_xor, Code::XOR)
MK_EVAL2(mk_lt, Code::LT)
MK_EVAL2(mk_le, Code::LE)
MK_EVAL2(mk_eq, Code::EQ)
MK_EVAL2(mk_ne, Code::NE)
MK_EVAL2(mk_and, Code::AND)
MK_EVAL2(mk_or, Code::OR)

// log2 keeps exact powers of two exact (log2(64) = 6), so that 2^floor(log2(P)/2) folds to an integer.
ex mk_log2_eval(const ex& x) {
  if (all_numeric({&x})) {
    const numeric& n = GiNaC::ex_to<numeric>(x);
    if (n.is_pos_integer()) {
      long v = n.to_long();
      if (v > 0 && (v & (v - 1)) == 0) return numeric(static_cast<long>(std::log2(static_cast<double>(v)) + 0.5));
    }
    if (!n.is_rational()) return numeric(std::log2(n.to_double()));
  }
  return mk_log2(x).hold();
}
ex mk_log2_evalf(const ex& x) {
  ex a = x.evalf();
  if (all_numeric({&a})) return numeric(std::log2(to_d(a)));
  return mk_log2(a).hold();
}

ex mk_min_eval(const ex& x, const ex& y) {
  if (x.is_equal(y)) return x;
  if (all_numeric({&x, &y})) return to_d(x) <= to_d(y) ? x : y;
  return mk_min(x, y).hold();
}
ex mk_min_evalf(const ex& x, const ex& y) {
  ex a = x.evalf(), b = y.evalf();
  if (all_numeric({&a, &b})) return to_d(a) <= to_d(b) ? a : b;
  return mk_min(a, b).hold();
}
ex mk_max_eval(const ex& x, const ex& y) {
  if (x.is_equal(y)) return x;
  if (all_numeric({&x, &y})) return to_d(x) >= to_d(y) ? x : y;
  return mk_max(x, y).hold();
}
ex mk_max_evalf(const ex& x, const ex& y) {
  ex a = x.evalf(), b = y.evalf();
  if (all_numeric({&a, &b})) return to_d(a) >= to_d(b) ? a : b;
  return mk_max(a, b).hold();
}
ex mk_if_eval(const ex& c, const ex& a, const ex& b) {
  if (a.is_equal(b)) return a;
  if (all_numeric({&c})) return to_d(c) != 0 ? a : b;
  return mk_if(c, a, b).hold();
}
ex mk_if_evalf(const ex& c, const ex& a, const ex& b) {
  ex cc = c.evalf();
  if (all_numeric({&cc})) return to_d(cc) != 0 ? a.evalf() : b.evalf();
  return mk_if(cc, a.evalf(), b.evalf()).hold();
}

// The topology functions (format v3) are opaque to the algebra: a number once their arguments are numbers (at
// the model's P every rank's coordinates are), else held as dims(P, 3, 0), which the compiled form evaluates
// at any P; their derivatives are 0 (integer-valued, piecewise constant).
ex mk_dims_eval(const ex& n, const ex& d, const ex& i) {
  if (all_numeric({&n, &d, &i})) return apply_num(Code::DIMS, {&n, &d, &i});
  return mk_dims(n, d, i).hold();
}
ex mk_dims_evalf(const ex& n, const ex& d, const ex& i) {
  ex a = n.evalf(), b = d.evalf(), c = i.evalf();
  if (all_numeric({&a, &b, &c})) return GiNaC::ex(apply_num(Code::DIMS, {&a, &b, &c})).evalf();
  return mk_dims(a, b, c).hold();
}
ex mk_cart_coord_eval(const ex& r, const ex& i, const ex& n0, const ex& n1, const ex& n2) {
  if (all_numeric({&r, &i, &n0, &n1, &n2})) return apply_num(Code::CART_COORD, {&r, &i, &n0, &n1, &n2});
  return mk_cart_coord(r, i, n0, n1, n2).hold();
}
ex mk_cart_coord_evalf(const ex& r, const ex& i, const ex& n0, const ex& n1, const ex& n2) {
  ex a[5] = {r.evalf(), i.evalf(), n0.evalf(), n1.evalf(), n2.evalf()};
  if (all_numeric({&a[0], &a[1], &a[2], &a[3], &a[4]}))
    return GiNaC::ex(apply_num(Code::CART_COORD, {&a[0], &a[1], &a[2], &a[3], &a[4]})).evalf();
  return mk_cart_coord(a[0], a[1], a[2], a[3], a[4]).hold();
}
ex mk_cart_rank_eval(const ex& c0, const ex& c1, const ex& c2, const ex& n0, const ex& n1, const ex& n2) {
  if (all_numeric({&c0, &c1, &c2, &n0, &n1, &n2})) return apply_num(Code::CART_RANK, {&c0, &c1, &c2, &n0, &n1, &n2});
  return mk_cart_rank(c0, c1, c2, n0, n1, n2).hold();
}
ex mk_cart_rank_evalf(const ex& c0, const ex& c1, const ex& c2, const ex& n0, const ex& n1, const ex& n2) {
  ex a[6] = {c0.evalf(), c1.evalf(), c2.evalf(), n0.evalf(), n1.evalf(), n2.evalf()};
  if (all_numeric({&a[0], &a[1], &a[2], &a[3], &a[4], &a[5]}))
    return GiNaC::ex(apply_num(Code::CART_RANK, {&a[0], &a[1], &a[2], &a[3], &a[4], &a[5]})).evalf();
  return mk_cart_rank(a[0], a[1], a[2], a[3], a[4], a[5]).hold();
}
ex zero_deriv3(const ex&, const ex&, const ex&, unsigned) { return 0; }
ex zero_deriv5(const ex&, const ex&, const ex&, const ex&, const ex&, unsigned) { return 0; }
ex zero_deriv6(const ex&, const ex&, const ex&, const ex&, const ex&, const ex&, unsigned) { return 0; }

ex one_deriv(const ex&, unsigned) { return 1; }
ex zero_deriv1(const ex&, unsigned) { return 0; }
ex zero_deriv2(const ex&, const ex&, unsigned) { return 0; }
ex log2_deriv(const ex& x, unsigned) { return numeric(1.0 / std::log(2.0)) / x; }
ex min_deriv(const ex& x, const ex& y, unsigned i) { return i == 0 ? mk_if(mk_le(x, y), 1, 0) : mk_if(mk_le(x, y), 0, 1); }
ex max_deriv(const ex& x, const ex& y, unsigned i) { return i == 0 ? mk_if(mk_le(y, x), 1, 0) : mk_if(mk_le(y, x), 0, 1); }
ex mod_deriv(const ex& x, const ex& y, unsigned i) { return i == 0 ? ex(1) : -mk_floor(x / y); }
ex if_deriv(const ex& c, const ex&, const ex&, unsigned i) {
  return i == 0 ? ex(0) : (i == 1 ? mk_if(c, 1, 0) : mk_if(c, 0, 1));
}

REGISTER_FUNCTION(mk_floor, set_name("floor", "\\operatorname{floor}").eval_func(mk_floor_eval).evalf_func(mk_floor_evalf).derivative_func(one_deriv))
REGISTER_FUNCTION(mk_ceil, set_name("ceil", "\\operatorname{ceil}").eval_func(mk_ceil_eval).evalf_func(mk_ceil_evalf).derivative_func(one_deriv))
REGISTER_FUNCTION(mk_log2, set_name("log2", "\\log_2").eval_func(mk_log2_eval).evalf_func(mk_log2_evalf).derivative_func(log2_deriv))
REGISTER_FUNCTION(mk_not, set_name("not").eval_func(mk_not_eval).evalf_func(mk_not_evalf).derivative_func(zero_deriv1))
REGISTER_FUNCTION(mk_min, set_name("min", "\\min").eval_func(mk_min_eval).evalf_func(mk_min_evalf).derivative_func(min_deriv))
REGISTER_FUNCTION(mk_max, set_name("max", "\\max").eval_func(mk_max_eval).evalf_func(mk_max_evalf).derivative_func(max_deriv))
REGISTER_FUNCTION(mk_mod, set_name("mod", "\\operatorname{mod}").eval_func(mk_mod_eval).evalf_func(mk_mod_evalf).derivative_func(mod_deriv))
REGISTER_FUNCTION(mk_xor, set_name("xor").eval_func(mk_xor_eval).evalf_func(mk_xor_evalf).derivative_func(zero_deriv2))
REGISTER_FUNCTION(mk_lt, set_name("lt").eval_func(mk_lt_eval).evalf_func(mk_lt_evalf).derivative_func(zero_deriv2))
REGISTER_FUNCTION(mk_le, set_name("le").eval_func(mk_le_eval).evalf_func(mk_le_evalf).derivative_func(zero_deriv2))
REGISTER_FUNCTION(mk_eq, set_name("eq").eval_func(mk_eq_eval).evalf_func(mk_eq_evalf).derivative_func(zero_deriv2))
REGISTER_FUNCTION(mk_ne, set_name("ne").eval_func(mk_ne_eval).evalf_func(mk_ne_evalf).derivative_func(zero_deriv2))
REGISTER_FUNCTION(mk_and, set_name("and").eval_func(mk_and_eval).evalf_func(mk_and_evalf).derivative_func(zero_deriv2))
REGISTER_FUNCTION(mk_or, set_name("or").eval_func(mk_or_eval).evalf_func(mk_or_evalf).derivative_func(zero_deriv2))
REGISTER_FUNCTION(mk_if, set_name("if").eval_func(mk_if_eval).evalf_func(mk_if_evalf).derivative_func(if_deriv))
REGISTER_FUNCTION(mk_dims, set_name("dims", "\\operatorname{dims}").eval_func(mk_dims_eval).evalf_func(mk_dims_evalf).derivative_func(zero_deriv3))
REGISTER_FUNCTION(mk_cart_coord, set_name("cart_coord", "\\operatorname{cart\\_coord}").eval_func(mk_cart_coord_eval).evalf_func(mk_cart_coord_evalf).derivative_func(zero_deriv5))
REGISTER_FUNCTION(mk_cart_rank, set_name("cart_rank", "\\operatorname{cart\\_rank}").eval_func(mk_cart_rank_eval).evalf_func(mk_cart_rank_evalf).derivative_func(zero_deriv6))

#undef MK_EVAL1
#undef MK_EVAL2

}  // namespace fn

using GiNaC::ex;
using GiNaC::numeric;
using GiNaC::symbol;
namespace sk = mksim::skeletons;

/** @brief What derive_model keeps of the GiNaC side, for derivatives. */
struct ModelExpr {
  ex numeric_T;                     ///< max over classes, machine figures substituted
  std::vector<symbol> frame_syms;   ///< P, then the parameters
  /// Each rank class's cost, machine figures substituted: its total and its parts by (phase label, kind).
  struct Class {
    std::string members;
    ex total;
    std::vector<std::pair<std::pair<std::string, std::string>, ex>> parts;
  };
  std::vector<Class> classes;
};

namespace {

// ---------------------------------------------------------------------------------------------------------
// Printing: the skeleton language (parsable back by skeletons::parse_expr) or LaTeX.

class Printer {
 public:
  enum class Mode { TEXT, LATEX };
  Printer(Mode mode, int digits) : mode_(mode), digits_(digits) {}

  std::string str(const ex& e) {
    std::ostringstream o;
    print(e, o, 0);
    return o.str();
  }

 private:
  Mode mode_;
  int digits_;

  // precedence: 0 top, 1 sum, 2 product, 3 power base / unary
  std::string num(const numeric& n) const {
    std::ostringstream o;
    if (n.is_integer()) {
      o << n;
      return o.str();
    }
    if (n.is_rational()) {
      if (mode_ == Mode::LATEX) o << "\\frac{" << n.numer() << "}{" << n.denom() << "}";
      else o << n.numer() << "/" << n.denom();
      return o.str();
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits_, n.to_double());
    std::string s = buf;
    if (mode_ == Mode::LATEX)
      if (auto e = s.find('e'); e != std::string::npos) {
        int exp = std::atoi(s.c_str() + e + 1);
        s = s.substr(0, e) + " \\cdot 10^{" + std::to_string(exp) + "}";
      }
    return s;
  }

  static bool is_negative_term(const ex& e) {
    if (GiNaC::is_exactly_a<numeric>(e)) return GiNaC::ex_to<numeric>(e).is_negative();
    if (GiNaC::is_exactly_a<GiNaC::mul>(e)) {
      const ex& c = e.op(e.nops() - 1);
      return GiNaC::is_exactly_a<numeric>(c) && GiNaC::ex_to<numeric>(c).is_negative();
    }
    return false;
  }

  void print(const ex& e, std::ostream& o, int prec) {
    if (GiNaC::is_exactly_a<numeric>(e)) {
      const numeric& n = GiNaC::ex_to<numeric>(e);
      std::string s = num(n);
      bool paren = (n.is_negative() && prec > 0) || (mode_ == Mode::TEXT && n.is_rational() && !n.is_integer() && prec >= 2);
      o << (paren ? "(" : "") << s << (paren ? ")" : "");
      return;
    }
    if (GiNaC::is_exactly_a<symbol>(e)) {
      o << GiNaC::ex_to<symbol>(e).get_name();
      return;
    }
    if (GiNaC::is_exactly_a<GiNaC::add>(e)) {
      bool paren = prec > 1;
      if (paren) o << (mode_ == Mode::LATEX ? "\\left(" : "(");
      // terms in a deterministic order (GiNaC's own order varies between runs): by their printed form,
      // positive terms first, the constant last
      std::vector<ex> terms(e.begin(), e.end());
      std::vector<std::pair<std::string, ex>> keyed;
      for (const ex& t : terms) {
        const bool neg = is_negative_term(t);
        const bool constant = GiNaC::is_exactly_a<numeric>(t);
        keyed.emplace_back(std::string(constant ? "2" : (neg ? "1" : "0")) + Printer(mode_, digits_).str(neg ? ex(-t) : t), t);
      }
      std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (std::size_t i = 0; i < terms.size(); ++i) terms[i] = keyed[i].second;
      for (std::size_t i = 0; i < terms.size(); ++i) {
        const ex& t = terms[i];
        if (i > 0) {
          if (is_negative_term(t)) {
            o << " - ";
            print(-t, o, 2);
            continue;
          }
          o << " + ";
        }
        print(t, o, 1);
      }
      if (paren) o << (mode_ == Mode::LATEX ? "\\right)" : ")");
      return;
    }
    if (GiNaC::is_exactly_a<GiNaC::mul>(e)) {
      numeric coeff = 1;
      std::vector<ex> numer, denom;
      for (const ex& f : e) {
        if (GiNaC::is_exactly_a<numeric>(f)) {
          coeff *= GiNaC::ex_to<numeric>(f);
        } else if (GiNaC::is_exactly_a<GiNaC::power>(f) && GiNaC::is_exactly_a<numeric>(f.op(1)) &&
                   GiNaC::ex_to<numeric>(f.op(1)).is_negative()) {
          denom.push_back(GiNaC::pow(f.op(0), -f.op(1)));
        } else {
          numer.push_back(f);
        }
      }
      auto by_text = [this](std::vector<ex>& v) {
        std::vector<std::pair<std::string, ex>> k;
        for (const ex& f : v) k.emplace_back(Printer(mode_, digits_).str(f), f);
        std::sort(k.begin(), k.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = k[i].second;
      };
      by_text(numer);
      by_text(denom);
      bool neg = coeff.is_negative();
      if (neg) coeff = -coeff;
      if (coeff.is_rational() && !coeff.is_integer()) {  // 3/10*x/y: numerator 3, denominator 10
        if (coeff.numer() != 1) numer.insert(numer.begin(), coeff.numer());
        denom.insert(denom.begin(), coeff.denom());
      } else if (coeff != 1) {
        numer.insert(numer.begin(), coeff);
      }
      bool paren = prec > 2 || (neg && prec > 0);
      if (paren) o << (mode_ == Mode::LATEX ? "\\left(" : "(");
      if (neg) o << "-";
      auto product = [&](const std::vector<ex>& fs, int fprec) {
        if (fs.empty()) {
          o << "1";
          return;
        }
        for (std::size_t i = 0; i < fs.size(); ++i) {
          if (i > 0) o << (mode_ == Mode::LATEX ? " \\cdot " : "*");
          print(fs[i], o, fprec);
        }
      };
      if (mode_ == Mode::LATEX && !denom.empty()) {
        o << "\\frac{";
        product(numer, 2);
        o << "}{";
        product(denom, 2);
        o << "}";
      } else {
        product(numer, 2);
        if (!denom.empty()) {
          o << "/";
          if (denom.size() > 1) o << "(";
          product(denom, denom.size() > 1 ? 2 : 3);
          if (denom.size() > 1) o << ")";
        }
      }
      if (paren) o << (mode_ == Mode::LATEX ? "\\right)" : ")");
      return;
    }
    if (GiNaC::is_exactly_a<GiNaC::power>(e)) {
      const ex& b = e.op(0);
      const ex& x = e.op(1);
      if (x.is_equal(numeric(1, 2))) {
        o << (mode_ == Mode::LATEX ? "\\sqrt{" : "sqrt(");
        print(b, o, 0);
        o << (mode_ == Mode::LATEX ? "}" : ")");
        return;
      }
      if (GiNaC::is_exactly_a<numeric>(x) && GiNaC::ex_to<numeric>(x).is_negative()) {
        if (mode_ == Mode::LATEX) {
          o << "\\frac{1}{";
          print(GiNaC::pow(b, -x), o, 0);
          o << "}";
        } else {
          o << (prec > 2 ? "(" : "") << "1/";
          print(GiNaC::pow(b, -x), o, 3);
          o << (prec > 2 ? ")" : "");
        }
        return;
      }
      bool paren = prec > 3;
      if (paren) o << "(";
      print(b, o, 4);
      if (mode_ == Mode::LATEX) {
        o << "^{";
        print(x, o, 0);
        o << "}";
      } else {
        o << "^";
        bool simple = GiNaC::is_exactly_a<numeric>(x) && GiNaC::ex_to<numeric>(x).is_nonneg_integer();
        if (!simple) o << "(";
        print(x, o, simple ? 4 : 0);
        if (!simple) o << ")";
      }
      if (paren) o << ")";
      return;
    }
    if (GiNaC::is_a<GiNaC::function>(e)) {
      const std::string name = GiNaC::ex_to<GiNaC::function>(e).get_name();
      static const std::map<std::string, std::string> infix = {{"lt", "<"}, {"le", "<="}, {"eq", "=="},
                                                               {"ne", "!="}, {"and", "&&"}, {"or", "||"}};
      if (auto it = infix.find(name); it != infix.end()) {
        o << "(";
        print(e.op(0), o, 1);
        o << " " << (mode_ == Mode::LATEX && it->second == "<=" ? "\\le" : it->second) << " ";
        print(e.op(1), o, 1);
        o << ")";
        return;
      }
      if (name == "not") {
        o << "!(";
        print(e.op(0), o, 0);
        o << ")";
        return;
      }
      if (mode_ == Mode::LATEX && (name == "floor" || name == "ceil")) {
        o << (name == "floor" ? "\\left\\lfloor " : "\\left\\lceil ");
        print(e.op(0), o, 0);
        o << (name == "floor" ? "\\right\\rfloor" : "\\right\\rceil");
        return;
      }
      if (mode_ == Mode::LATEX) {
        static const std::map<std::string, std::string> names = {
            {"log2", "\\log_2"}, {"min", "\\min"}, {"max", "\\max"}, {"abs", "\\operatorname{abs}"}};
        auto it = names.find(name);
        o << (it != names.end() ? it->second : "\\operatorname{" + name + "}") << "\\left(";
      } else {
        o << name << "(";
      }
      for (std::size_t i = 0; i < e.nops(); ++i) {
        if (i > 0) o << ", ";
        print(e.op(i), o, 0);
      }
      o << (mode_ == Mode::LATEX ? "\\right)" : ")");
      return;
    }
    o << e;  // not produced by this model
  }
};

std::string text_of(const ex& e, int digits = 6) { return Printer(Printer::Mode::TEXT, digits).str(e); }
std::string latex_of(const ex& e) { return Printer(Printer::Mode::LATEX, 4).str(e); }

// ---------------------------------------------------------------------------------------------------------
// Skeleton expressions -> GiNaC

/** @brief Translates compiled skeleton expressions, with each slot bound to an expression. */
struct Translator {
  std::vector<ex> slots;
  symbol rank_sym{"rank"};
  bool relax_rank = true;  ///< floor/ceil of a rank-dependent value -> the value (rank-average)

  ex operator()(const sk::Expr& e) const {
    using Code = sk::ExprInstr::Code;
    std::vector<ex> st;
    auto pop = [&]() {
      ex v = st.back();
      st.pop_back();
      return v;
    };
    for (const auto& in : e.code()) {
      switch (in.code) {
        case Code::CONST: st.push_back(fn::number(in.value)); break;
        case Code::VAR: st.push_back(slots.at(static_cast<std::size_t>(in.slot))); break;
        case Code::NEG: st.back() = -st.back(); break;
        case Code::NOT: st.back() = fn::mk_not(st.back()); break;
        case Code::FLOOR:
        case Code::CEIL: {
          ex a = pop();
          if (relax_rank && a.has(rank_sym)) st.push_back(a);
          else st.push_back(in.code == Code::FLOOR ? ex(fn::mk_floor(a)) : ex(fn::mk_ceil(a)));
          break;
        }
        case Code::LOG2: st.back() = fn::mk_log2(st.back()); break;
        case Code::SQRT: st.back() = GiNaC::sqrt(st.back()); break;
        case Code::ABS: st.back() = GiNaC::abs(st.back()); break;
        case Code::IF: {
          ex b = pop(), a = pop(), c = pop();
          st.push_back(fn::mk_if(c, a, b));
          break;
        }
        case Code::DIMS: {
          ex i = pop(), d = pop(), n = pop();
          st.push_back(fn::mk_dims(n, d, i));
          break;
        }
        case Code::CART_COORD: {
          ex a[5];
          for (int k = 4; k >= 0; --k) a[k] = pop();
          st.push_back(fn::mk_cart_coord(a[0], a[1], a[2], a[3], a[4]));
          break;
        }
        case Code::CART_RANK: {
          ex a[6];
          for (int k = 5; k >= 0; --k) a[k] = pop();
          st.push_back(fn::mk_cart_rank(a[0], a[1], a[2], a[3], a[4], a[5]));
          break;
        }
        default: {
          ex b = pop(), a = pop();
          switch (in.code) {
            case Code::ADD: st.push_back(a + b); break;
            case Code::SUB: st.push_back(a - b); break;
            case Code::MUL: st.push_back(a * b); break;
            case Code::DIV: st.push_back(a / b); break;
            case Code::POW: st.push_back(GiNaC::pow(a, b)); break;
            case Code::LT: st.push_back(fn::mk_lt(a, b)); break;
            case Code::LE: st.push_back(fn::mk_le(a, b)); break;
            case Code::GT: st.push_back(fn::mk_lt(b, a)); break;
            case Code::GE: st.push_back(fn::mk_le(b, a)); break;
            case Code::EQ: st.push_back(fn::mk_eq(a, b)); break;
            case Code::NE: st.push_back(fn::mk_ne(a, b)); break;
            case Code::AND: st.push_back(fn::mk_and(a, b)); break;
            case Code::OR: st.push_back(fn::mk_or(a, b)); break;
            case Code::MIN: st.push_back(fn::mk_min(a, b)); break;
            case Code::MAX: st.push_back(fn::mk_max(a, b)); break;
            case Code::MOD: st.push_back(fn::mk_mod(a, b)); break;
            case Code::XOR: st.push_back(fn::mk_xor(a, b)); break;
            default: throw std::logic_error("model: unexpected expression instruction");
          }
        }
      }
    }
    return st.empty() ? ex(0) : st.back();
  }
};

// ---------------------------------------------------------------------------------------------------------
// Pass 1: every rank walks its program once.

/** @brief Per phase label, what the ranks do (MK's SL, RL, pairs, async flag). */
struct LabelFacts {
  std::vector<char> sends, receives;          ///< per rank
  std::vector<std::pair<int, int>> pairs;     ///< (sender, receiver) of point-to-point sends, first iteration
  bool receive_first = false;                 ///< some rank completes a receive before its first send
  bool collective = false;
  int depth = 1;                              ///< longest chain (edges) when a pipeline
  std::string depth_expr;                     ///< the depth as an expression of P, when one fits every P tried
  bool pipeline = false;
  bool rendezvous = false;                    ///< some blocking send of the label is above the eager threshold
};

/** @brief One rank's walk: its decisions (the class signature) and its label events. */
struct RankWalker {
  const sk::Skeleton& skel;
  const sk::CommLayout& layout;
  std::vector<double>& frame;
  int rank;
  int P;
  std::map<std::string, LabelFacts>& labels;
  double eager_threshold;
  std::vector<double> decisions;  // one per branch visited, in walk order
  struct LoopCtx {
    int slot;
    double count;
  };
  std::vector<LoopCtx> loops;
  std::map<std::string, int> state;  // per label: 0 nothing, 1 sent, 2 receive pending (irecv), 3 received first

  LabelFacts& facts(int block) {
    const std::string& label = skel.blocks.at(static_cast<std::size_t>(block)).phase;
    LabelFacts& f = labels[label];
    if (f.sends.empty()) {
      f.sends.assign(static_cast<std::size_t>(P), 0);
      f.receives.assign(static_cast<std::size_t>(P), 0);
    }
    return f;
  }
  const std::string& label_of(int block) const { return skel.blocks.at(static_cast<std::size_t>(block)).phase; }

  void body(const sk::Body& b) {
    for (const sk::Block& x : b) std::visit([&](const auto& op) { visit(x.index, op); }, x.op);
  }
  void visit(int, const sk::Loop& l) {
    const double n = std::floor(l.count.eval(frame));
    if (!(n >= 1)) {
      decisions.push_back(-1);  // a loop that does not run is part of the class
      return;
    }
    if (l.var_slot >= 0) frame[static_cast<std::size_t>(l.var_slot)] = 0;
    loops.push_back({l.var_slot, n});
    decisions.push_back(-2);
    body(l.body);
    loops.pop_back();
  }
  void visit(int, const sk::Branch& br) {
    if (!br.condition) {  // probability: both sides, weighted later
      decisions.push_back(2);
      body(br.then_body);
      body(br.else_body);
      return;
    }
    // A condition on a loop variable is a branch probability: the fraction of iterations that take it.
    const LoopCtx* var = nullptr;
    for (auto it = loops.rbegin(); it != loops.rend() && !var; ++it)
      if (it->slot >= 0 && br.condition->uses(it->slot)) var = &*it;
    double d;
    if (var) {
      const long n = static_cast<long>(var->count);
      const long samples = std::min<long>(n, 256);
      long taken = 0;
      for (long k = 0; k < samples; ++k) {
        frame[static_cast<std::size_t>(var->slot)] = std::floor(static_cast<double>(k) * static_cast<double>(n) / static_cast<double>(samples));
        taken += br.condition->eval(frame) != 0;
      }
      frame[static_cast<std::size_t>(var->slot)] = 0;
      d = static_cast<double>(taken) / static_cast<double>(samples);
    } else {
      d = br.condition->eval(frame) != 0 ? 1.0 : 0.0;
    }
    decisions.push_back(d);
    if (d > 0) body(br.then_body);
    if (d < 1) body(br.else_body);
  }
  void visit(int, const sk::Compute&) {}
  void visit(int block, const sk::P2P& p) {
    LabelFacts& f = facts(block);
    int& st = state[label_of(block)];
    if (!p.any_source && p.peer.eval(frame) == sk::PROC_NULL_PEER) return;  // MPI_PROC_NULL: no message
    if (p.kind == sk::P2PKind::SEND || p.kind == sk::P2PKind::ISEND) {
      f.sends[static_cast<std::size_t>(rank)] = 1;
      if (p.kind == sk::P2PKind::SEND && p.size_bytes.eval(frame) > eager_threshold) f.rendezvous = true;
      const std::vector<int>& members = layout.members(p.comm, rank);  // the peer is a rank of the communicator
      const int local = static_cast<int>(std::floor(p.peer.eval(frame)));
      const int peer = local >= 0 && local < static_cast<int>(members.size()) ? members[static_cast<std::size_t>(local)] : -1;
      if (peer >= 0 && peer < P) f.pairs.emplace_back(rank, peer);
      if (st == 3) f.receive_first = true;
      st = 1;
    } else {
      f.receives[static_cast<std::size_t>(rank)] = 1;
      if (st == 0) st = p.kind == sk::P2PKind::RECV ? 3 : 2;
    }
  }
  void complete_pending() {
    for (auto& [label, st] : state)
      if (st == 2) st = 3;
  }
  void visit(int, const sk::Wait&) { complete_pending(); }
  void visit(int, const sk::WaitAll&) { complete_pending(); }
  void visit(int block, const sk::Collective&) {
    LabelFacts& f = facts(block);
    f.collective = true;
    f.sends[static_cast<std::size_t>(rank)] = 1;
    f.receives[static_cast<std::size_t>(rank)] = 1;
  }
  template <class T>
  void visit(int, const T& other) {
    if constexpr (requires { other.body; }) body(other.body);  // named regions: their body, in sequence
  }
};

/** @brief Longest chain (in edges) of a directed pair graph; -1 when it has a cycle. */
int longest_chain(const std::vector<std::pair<int, int>>& pairs, int P) {
  std::vector<std::vector<int>> out(static_cast<std::size_t>(P));
  std::vector<int> indeg(static_cast<std::size_t>(P), 0);
  std::set<std::pair<int, int>> seen;
  for (const auto& e : pairs)
    if (seen.insert(e).second) {
      out[static_cast<std::size_t>(e.first)].push_back(e.second);
      indeg[static_cast<std::size_t>(e.second)]++;
    }
  std::vector<int> queue, dist(static_cast<std::size_t>(P), 0);
  for (int v = 0; v < P; ++v)
    if (indeg[static_cast<std::size_t>(v)] == 0) queue.push_back(v);
  std::size_t done = 0;
  int best = 0;
  while (done < queue.size()) {
    int v = queue[done++];
    for (int w : out[static_cast<std::size_t>(v)]) {
      dist[static_cast<std::size_t>(w)] = std::max(dist[static_cast<std::size_t>(w)], dist[static_cast<std::size_t>(v)] + 1);
      best = std::max(best, dist[static_cast<std::size_t>(w)]);
      if (--indeg[static_cast<std::size_t>(w)] == 0) queue.push_back(w);
    }
  }
  return done == static_cast<std::size_t>(P) ? best : -1;
}

/** @brief Pass 1 and 2 at one P. */
struct Walk {
  std::map<std::string, LabelFacts> labels;
  std::map<std::vector<double>, std::vector<int>> classes;  ///< decisions (with the group first) -> members
};

Walk walk_ranks(const sk::Skeleton& skel, const std::vector<double>& base, int P, double eager_threshold,
                std::set<std::string>& notes) {
  Walk out;
  const sk::CommLayout layout = sk::layout_comms(skel, base, P);
  for (int r = 0; r < P; ++r) {
    std::vector<double> frame = base;
    sk::bind_rank(skel, frame, r, layout);
    const int g = sk::select_group(skel, frame);
    RankWalker w{skel, layout, frame, r, P, out.labels, eager_threshold, {static_cast<double>(g)}, {}, {}};
    w.body(skel.groups.at(static_cast<std::size_t>(g)).body);
    out.classes[w.decisions].push_back(r);
  }
  for (auto& [label, f] : out.labels) {
    if (f.collective || !f.receive_first) continue;
    const int chain = longest_chain(f.pairs, P);
    if (chain > 0) {
      f.pipeline = true;
      f.depth = chain;
    } else {
      notes.insert("phase " + (label.empty() ? std::string("(unlabelled)") : "\"" + label + "\"") +
                   " receives before it sends but its pairs form a cycle: costed as synchronous");
    }
  }
  return out;
}

/** @brief Pipeline depths as expressions of P (MK: "regression on the depth of the pipeline for different
 *  processor numbers"): the depth at P = 4, 8, ..., 256 and at the run's P, fitted exactly. */
void symbolic_depths(const sk::Skeleton& skel, const ModelOptions& opt, int P, std::map<std::string, LabelFacts>& labels,
                     std::set<std::string>& notes) {
  std::map<std::string, std::vector<mksim::skeletons::builder::Sample>> samples;
  for (const auto& [label, f] : labels)
    if (f.pipeline) samples[label];
  if (samples.empty()) return;
  std::set<int> Ps{P};
  for (int q = 4; q <= 256; q *= 2) Ps.insert(q);
  Ps.insert(6);
  Ps.insert(12);
  Ps.insert(24);
  for (int q : Ps) {
    if (q > std::max(P, 256)) continue;
    std::vector<double> base;
    try {
      base = sk::bind_parameters(skel, q, opt.params);
      sk::check_for_run(skel, base, q);
    } catch (const sk::SkeletonError&) {
      continue;  // the skeleton does not run at this P (odd P for a two-way pipeline, ...)
    }
    std::set<std::string> ignored;
    Walk w = walk_ranks(skel, base, q, 1e300, ignored);
    for (auto& [label, list] : samples) {
      auto it = w.labels.find(label);
      if (it == w.labels.end() || !it->second.pipeline) continue;
      mksim::skeletons::builder::Sample smp;
      smp.vars["P"] = q;
      smp.value = it->second.depth;
      smp.run = "P=" + std::to_string(q);
      list.push_back(smp);
    }
  }
  for (auto& [label, list] : samples) {
    LabelFacts& f = labels.at(label);
    if (list.size() < 3) continue;
    mksim::skeletons::builder::FitOptions fo;
    fo.integer = true;
    const auto fit = mksim::skeletons::builder::fit_quantity(list, {}, fo);
    if (!fit.exact) {
      notes.insert("pipeline \"" + label + "\": no exact expression of P for its depth; D=" + std::to_string(f.depth) + " at P=" +
                   std::to_string(P) + " is used as a number");
      continue;
    }
    f.depth_expr = fit.expr;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Pass 3: the cost of one rank class.

/** @brief A cost split by (label, kind), in order of first appearance. */
struct Cost {
  std::vector<std::pair<std::pair<std::string, std::string>, ex>> parts;
  void add(const std::string& label, const std::string& kind, const ex& v) {
    if (v.is_zero()) return;
    for (auto& [k, x] : parts)
      if (k.first == label && k.second == kind) {
        x += v;
        return;
      }
    parts.push_back({{label, kind}, v});
  }
  void add(const Cost& o, const ex& factor = 1) {
    for (const auto& [k, v] : o.parts) add(k.first, k.second, v * factor);
  }
  ex total() const {
    ex t = 0;
    for (const auto& p : parts) t += p.second;
    return t;
  }
};

/** @brief Machine symbols and their values. */
struct MachineSyms {
  symbol s{"s"}, r{"r"}, o{"o"}, alpha{"alpha"}, F{"F"};
  symbol ce{"c_e"}, h{"h_r"};  // per-regime figures: used (and given values) only when the machine sets them
  std::map<std::string, symbol> pattern_syms;     // rho_2d_short, beta_2d_short, ...: created when a phase uses them
  std::vector<int> block_pattern;                 // per block, the machine pattern its messages cost (phase_patterns)
  std::vector<std::pair<symbol, double>> routes;  // L1, beta1, ... in order of first use
  std::vector<RouteFigures> figures;
  std::vector<std::string> route_users;           // the first label that used each
  GiNaC::exmap values;
  // Measured collectives: coll_KIND(P, m) symbols by name, their value at the point and their form in P.
  std::map<std::string, symbol> colls;
  std::map<std::string, double> coll_m;  // the size each was fitted at
  GiNaC::exmap coll_at_point, coll_in_P;
};

class ClassCoster {
 public:
  ClassCoster(const sk::Skeleton& skel, const MachineModel& m, const ModelOptions& opt, Translator& tr,
              std::map<std::string, LabelFacts>& labels, MachineSyms& ms, std::vector<double>& frame, int rank,
              const std::vector<double>& decisions, std::set<std::string>& notes, const sk::CommLayout& layout)
      : skel_(skel), m_(m), opt_(opt), tr_(tr), labels_(labels), ms_(ms), frame_(frame), rank_(rank),
        decisions_(decisions), notes_(notes), layout_(layout) {}

  Cost run(const sk::Body& b) { return seq(b); }

 private:
  const sk::Skeleton& skel_;
  const MachineModel& m_;
  const ModelOptions& opt_;
  Translator& tr_;
  std::map<std::string, LabelFacts>& labels_;
  MachineSyms& ms_;
  std::vector<double>& frame_;
  int rank_;
  const std::vector<double>& decisions_;
  std::size_t next_ = 0;
  std::set<std::string>& notes_;
  const sk::CommLayout& layout_;
  symbol iteration_{"iteration"};  ///< the current loop variable while a loop body is costed

  /** @brief An exchange under way: ops of one label up to their completion. */
  struct Exchange {
    bool open = false;
    std::string label;
    int n_send = 0, n_recv = 0;
    ex m_recv = 0;     // largest message received
    ex route_L = 0, route_beta = 0;
    ex send_extra = 0; // the sends' per-regime costs (c_e*m eager, h_r rendezvous), 0 without them
    bool patterned = false;  // the label has per-pattern figures: each send adds rho + beta*m - s - r - o
    ex last_extra = 0;       // the last send's pattern cost beyond s, r, o: its transfer runs under it
    ex last_tau = 0;         // the last send's transfer: its route's latency (replay sends no bytes for it)
    Cost work;         // compute while the exchange is in flight: W
  };

  /** @brief A phase item of a sequence (for MK's overlap of independent consecutive phases). */
  struct Item {
    bool phase = false;
    std::string label;
    Cost cost;
  };

  const std::string& label_of(int block) const { return skel_.blocks.at(static_cast<std::size_t>(block)).phase; }

  double decision() { return next_ < decisions_.size() ? decisions_[next_++] : 0.0; }

  /** @brief Symbols L_k, beta_k for the route between two ranks (shared when the figures agree). */
  std::pair<ex, ex> route(int src, int dst, const std::string& label) {
    return route_of(m_.route ? m_.route(src, dst) : RouteFigures{}, label);
  }

  /** @brief The mean route figures over a phase's pairs (a pipeline's chain crosses routes of different
   *  lengths: on a hypercube, rank i to i+1 is popcount(i xor (i+1)) hops). */
  std::pair<ex, ex> mean_route(const std::string& label) {
    const auto& pairs = labels_.at(label).pairs;
    std::set<std::pair<int, int>> distinct(pairs.begin(), pairs.end());
    double lat = 0, per_byte = 0;
    std::size_t n = 0;
    for (const auto& [a, b] : distinct) {
      if (n == 4096) break;
      const RouteFigures f = m_.route ? m_.route(a, b) : RouteFigures{};
      lat += f.latency_s;
      per_byte += f.bandwidth_Bps > 0 ? 1.0 / f.bandwidth_Bps : 0.0;
      ++n;
    }
    if (n == 0) return route(rank_, rank_, label);
    RouteFigures mean{lat / static_cast<double>(n), per_byte > 0 ? static_cast<double>(n) / per_byte : 0.0};
    return route_of(mean, label);
  }

  std::pair<ex, ex> route_of(const RouteFigures& f, const std::string& label) {
    for (std::size_t k = 0; k < ms_.figures.size(); ++k) {
      const RouteFigures& g = ms_.figures[k];
      if (std::fabs(g.latency_s - f.latency_s) <= 1e-3 * std::max(g.latency_s, 1e-12) &&
          std::fabs(g.bandwidth_Bps - f.bandwidth_Bps) <= 1e-3 * std::max(g.bandwidth_Bps, 1e-12))
        return {ms_.routes[2 * k].first, ms_.routes[2 * k + 1].first};
    }
    const std::size_t k = ms_.figures.size() + 1;
    const std::string suffix = k == 1 ? "" : std::to_string(k);
    symbol L("L" + suffix), beta("beta" + suffix);
    ms_.figures.push_back(f);
    ms_.route_users.push_back(label);
    ms_.routes.emplace_back(L, f.latency_s);
    ms_.routes.emplace_back(beta, f.bandwidth_Bps > 0 ? 1.0 / f.bandwidth_Bps : 0.0);
    ms_.values[L] = numeric(f.latency_s);
    ms_.values[beta] = numeric(f.bandwidth_Bps > 0 ? 1.0 / f.bandwidth_Bps : 0.0);
    return {L, beta};
  }

  /** @brief The world rank of a point-to-point op's peer (a rank of its communicator). */
  int peer_of(const sk::P2P& p) {
    const std::vector<int>& members = layout_.members(p.comm, rank_);
    if (p.any_source || members.empty()) return 0;
    int v = static_cast<int>(std::floor(p.peer.eval(frame_)));
    return members[static_cast<std::size_t>(std::clamp(v, 0, static_cast<int>(members.size()) - 1))];
  }

  /** @brief Whether a point-to-point op's peer is MPI_PROC_NULL (format v3): it costs nothing. */
  bool null_peer(const sk::P2P& p) const { return !p.any_source && p.peer.eval(frame_) == sk::PROC_NULL_PEER; }

  /** @brief The size of this rank's instance of a communicator as an expression: P for world and its dups,
   *  the product of a Cartesian grid's (kept) dimensions, a create's `size`, a graph's `nodes`; a split's is
   *  its value at this P (a number: a split has no closed form of its size), said in the notes. */
  ex comm_size(int comm) {
    if (comm == 0) return tr_.slots[sk::Skeleton::SLOT_P];
    const sk::CommDecl& d = skel_.comms.at(static_cast<std::size_t>(comm - 1));
    const int n = layout_.size_of(comm, rank_);
    auto with_parent = [&](const sk::Expr& e) {  // parent_size in a declaration: the parent's size
      const std::size_t slot = static_cast<std::size_t>(skel_.parent_size_slot);
      const ex saved = tr_.slots[slot];
      tr_.slots[slot] = comm_size(d.parent);
      const ex v = e.uses(skel_.parent_rank_slot) ? ex(fn::number(n)) : tr_(e);
      tr_.slots[slot] = saved;
      return v;
    };
    switch (d.kind) {
      case sk::CommDecl::Kind::DUP: return comm_size(d.parent);
      case sk::CommDecl::Kind::CART: {
        ex v = 1;
        for (const sk::Expr& e : d.dims) v *= with_parent(e);
        return v;
      }
      case sk::CommDecl::Kind::CART_SUB: {
        std::vector<ex> dims = cart_dims(d.parent);
        ex v = 1;
        for (std::size_t k = 0; k < dims.size() && k < d.remain.size(); ++k)
          if (d.remain[k]) v *= dims[k];
        return v;
      }
      case sk::CommDecl::Kind::CREATE:
      case sk::CommDecl::Kind::GRAPH: return with_parent(d.size);
      case sk::CommDecl::Kind::SPLIT: break;
    }
    notes_.insert("communicator \"" + d.name + "\" (a split): its size is taken at P=" + std::to_string(opt_.P) + ", " +
                  std::to_string(n) + " for rank " + std::to_string(rank_) + " (a split's size has no closed form here)");
    return fn::number(n);
  }

  /** @brief The grid of a Cartesian communicator (cart, or cart_sub of one) as expressions. */
  std::vector<ex> cart_dims(int comm) {
    const sk::CommDecl& d = skel_.comms.at(static_cast<std::size_t>(comm - 1));
    std::vector<ex> out;
    if (d.kind == sk::CommDecl::Kind::CART) {
      const std::size_t slot = static_cast<std::size_t>(skel_.parent_size_slot);
      const ex saved = tr_.slots[slot];
      tr_.slots[slot] = comm_size(d.parent);
      for (const sk::Expr& e : d.dims) out.push_back(tr_(e));
      tr_.slots[slot] = saved;
    } else if (d.kind == sk::CommDecl::Kind::CART_SUB) {
      const std::vector<ex> parent = cart_dims(d.parent);
      for (std::size_t k = 0; k < parent.size() && k < d.remain.size(); ++k)
        if (d.remain[k]) out.push_back(parent[k]);
    }
    return out;
  }

  ex recv_cost() const { return ms_.r + ms_.o; }

  /** @brief What a user send of m bytes (`bytes` at the model's point) adds to s with per-regime figures, as
   *  replay charges it (sim/engine/replay.cpp, post_send): c_e*m at or below the eager threshold, h_r above. Exactly
   *  0 (no term, no symbol) on machines without them, so their formulas are unchanged. */
  ex send_extra(const ex& m, double bytes) const {
    if (bytes <= m_.eager_threshold_bytes) return m_.eager_per_byte_s != 0 ? ex(ms_.ce * m) : ex(0);
    return m_.rendezvous_handshake_s != 0 ? ex(ms_.h) : ex(0);
  }

  /** @brief The symbol of one per-pattern figure ("rho_2d_short"), given its value at first use. */
  ex pattern_sym(const std::string& name, const std::string& latex, double value) {
    auto it = ms_.pattern_syms.find(name);
    if (it == ms_.pattern_syms.end()) {
      it = ms_.pattern_syms.emplace(name, symbol(name, latex)).first;
      ms_.values[it->second] = numeric(value);
    }
    return it->second;
  }

  /** @brief What a send of m bytes of a phase with pattern `k` adds beyond s and the receiver's r + o: rho + beta*m
   *  - s - r - o of its regime, as replay charges it (pattern_extra_s). The regime follows m (an `if` on the
   *  breakpoint) unless m is a number, so that queries over the problem size (isospeed) cross the breakpoint. */
  ex pattern_extra(int k, const ex& m) {
    const auto& p = m_.patterns.at(static_cast<std::size_t>(k));
    auto line = [&](bool lng) {
      const std::string reg = lng ? "long" : "short";
      const ex rho = pattern_sym("rho_" + p.name + "_" + reg, "\\rho_{\\mathrm{" + p.name + "," + reg + "}}", lng ? p.long_rho_s : p.short_rho_s);
      const ex beta = pattern_sym("beta_" + p.name + "_" + reg, "\\beta_{\\mathrm{" + p.name + "," + reg + "}}",
                                  lng ? p.long_beta_s_per_byte : p.short_beta_s_per_byte);
      return rho + beta * m;
    };
    ex cost;
    if (GiNaC::is_exactly_a<numeric>(m)) cost = line(p.long_regime(fn::to_d(m)));
    else cost = fn::mk_if(fn::mk_le(m, fn::number(p.breakpoint_bytes)), line(false), line(true));
    return cost - ms_.s - ms_.r - ms_.o;
  }

  void close(Exchange& x, std::vector<Item>& items) {
    if (!x.open) return;
    Item it;
    it.phase = true;
    it.label = x.label;
    const ex W = x.work.total();
    it.cost.add(x.work);
    ex comm = x.n_send * ms_.s + x.send_extra;
    if (x.n_recv > 0) {
      ex tau = x.route_L + x.m_recv * x.route_beta;
      // per-pattern figures: the last message's transfer (its latency: the figure holds the bytes) runs while its
      // sender pays its pattern cost, the earlier ones under that and more; an exchange waits for what is left
      if (x.patterned) tau = fn::mk_max(x.last_tau - x.last_extra, 0);
      comm += (W.is_zero() ? tau : ex(fn::mk_max(tau, W) - W)) + x.n_recv * recv_cost();
      if (opt_.skew && m_.skew_alpha_s > 0) it.cost.add(x.label, "skew", ms_.alpha * GiNaC::sqrt(tr_.slots[sk::Skeleton::SLOT_P]));
    }
    it.cost.add(x.label, "synchronous", comm);
    items.push_back(std::move(it));
    x = Exchange{};
  }

  /** @brief True when the body (through branches and regions, not nested loops) has ops of a pipeline label. */
  std::string pipeline_label(const sk::Body& b) const {
    for (const sk::Block& x : b) {
      std::string found = std::visit(
          [&](const auto& op) -> std::string {
            using T = std::decay_t<decltype(op)>;
            if constexpr (std::is_same_v<T, sk::P2P>) {
              auto it = labels_.find(label_of(x.index));
              return it != labels_.end() && it->second.pipeline ? it->first : "";
            } else if constexpr (std::is_same_v<T, sk::Branch>) {
              std::string a = pipeline_label(op.then_body);
              return a.empty() ? pipeline_label(op.else_body) : a;
            } else if constexpr (std::is_same_v<T, sk::Loop>) {
              return "";
            } else if constexpr (requires { op.body; }) {
              return pipeline_label(op.body);
            } else {
              return "";
            }
          },
          x.op);
      if (!found.empty()) return found;
    }
    return "";
  }

  /** @brief Message size and route of the pipeline's sends (or receives) in one iteration of its loop. */
  struct PipeMsg {
    ex m = 0, L = 0, beta = 0;
    bool found = false;
    bool rendezvous = false;  ///< a blocking send larger than the eager threshold
    double bytes = 0;         ///< m at the model's point (first iteration): the regime of send_extra
  };

  Cost seq(const sk::Body& b) {
    std::vector<Item> items;
    Exchange x;
    for (const sk::Block& blk : b) std::visit([&](const auto& op) { step(blk.index, op, items, x); }, blk.op);
    close(x, items);
    // MK's Complexity(V): serial parts add; consecutive phases add unless RL(g_i) and SL(g_i+1) are disjoint,
    // in which case the pair costs max(T(g_i), T(g_i+1)).
    Cost out;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (items[i].phase && i + 1 < items.size() && items[i + 1].phase && items[i].label != items[i + 1].label &&
          independent(items[i].label, items[i + 1].label)) {
        const ex a = items[i].cost.total(), c = items[i + 1].cost.total();
        out.add(items[i].cost);
        out.add(items[i + 1].label, "overlap", fn::mk_max(a, c) - a);
        notes_.insert("phases " + show_label(items[i].label) + " and " + show_label(items[i + 1].label) +
                      " are independent (RL and SL disjoint): they overlap, max of the two");
        ++i;
        continue;
      }
      out.add(items[i].cost);
    }
    return out;
  }

  static std::string show_label(const std::string& l) { return l.empty() ? "(unlabelled)" : "\"" + l + "\""; }

  bool independent(const std::string& a, const std::string& b) const {
    auto ia = labels_.find(a), ib = labels_.find(b);
    if (ia == labels_.end() || ib == labels_.end()) return false;
    for (std::size_t k = 0; k < ia->second.receives.size(); ++k)
      if (ia->second.receives[k] && ib->second.sends[k]) return false;
    return true;
  }

  void serial(const std::string& label, const std::string& kind, const ex& v, std::vector<Item>& items, Exchange& x) {
    if (x.open) {
      x.work.add(label, kind, v);
      return;
    }
    if (!items.empty() && !items.back().phase) {
      items.back().cost.add(label, kind, v);
      return;
    }
    Item it;
    it.cost.add(label, kind, v);
    items.push_back(std::move(it));
  }

  void step(int block, const sk::Compute& c, std::vector<Item>& items, Exchange& x) {
    ex amount = tr_(c.amount);
    if (c.in_flops) amount = amount / ms_.F;
    serial(label_of(block), "compute", amount, items, x);
  }

  void step(int, const sk::Loop& l, std::vector<Item>& items, Exchange& x) {
    const double d = decision();
    if (d == -1) return;  // does not run at this P for this class
    ex count = tr_(l.count);
    const ex saved = l.var_slot >= 0 ? tr_.slots[static_cast<std::size_t>(l.var_slot)] : ex(0);
    if (l.var_slot >= 0) {
      // The body is costed with the loop variable as a symbol, then averaged over the iterations (average()).
      tr_.slots[static_cast<std::size_t>(l.var_slot)] = iteration_;
      frame_[static_cast<std::size_t>(l.var_slot)] = 0;
    }
    const std::string pipe = pipeline_label(l.body);
    if (!pipe.empty()) {
      close(x, items);
      items.push_back(pipeline(l, count, pipe));
    } else {
      Cost body = seq_at_mean(l, count);
      if (x.open) x.work.add(body, count);
      else {
        Item it;
        it.cost.add(body, count);
        // a loop of phases is a phase item for the overlap rule only when its whole cost is one label
        it.phase = false;
        items.push_back(std::move(it));
      }
    }
    if (l.var_slot >= 0) tr_.slots[static_cast<std::size_t>(l.var_slot)] = saved;
  }

  /** @brief MK s.4.1 pipeline: Fill = D*(tau(m)+s+r+W), Remain = B*max(s+r+o+W, m*beta). D counts the chain's
   *  edges (the paper's D-1 with D processors); the max with m*beta is the link's limit on the rate. */
  Item pipeline(const sk::Loop& l, const ex& B, const std::string& label) {
    // W: this class's work per iteration; m, tau: its messages of the label (sends, else receives)
    PipeMsg msg;
    Cost work;
    collect_pipe(l.body, label, msg, work);
    // Blocks of different sizes (K not dividing M: the last one short): the fill carries the first block,
    // the blocks' work adds up over all of them, and the chain's last rank finishes the short last block
    // min(s, Delta) sooner, Delta = (W_first - W_last) + (tau_first - tau_last) (from the chain's recurrence).
    Cost work_first = work;
    ex m_first = msg.m, m_last = msg.m, W_last = 0;
    bool uneven = false;
    if (l.var_slot >= 0 && (work.total().has(iteration_) || msg.m.has(iteration_))) {
      for (auto& part : work_first.parts) part.second = part.second.subs(iteration_ == 0);
      W_last = work.total().subs(iteration_ == B - 1);
      m_first = msg.m.subs(iteration_ == 0);
      m_last = msg.m.subs(iteration_ == B - 1);
      work = average(work, B);
      msg.m = average(msg.m, B);
      uneven = true;  // in general; the terms vanish where the blocks are equal (K divides M)
    }
    const LabelFacts& f = labels_.at(label);
    ex D = fn::number(f.depth);
    if (!f.depth_expr.empty()) {
      sk::SymbolTable t;
      t.add("P");
      Translator only_p;
      only_p.slots = {tr_.slots[sk::Skeleton::SLOT_P]};
      D = only_p(sk::parse_expr(f.depth_expr, t));
    }
    const ex W = work.total();
    std::tie(msg.L, msg.beta) = mean_route(label);
    const ex tau = msg.L + msg.m * msg.beta;
    const ex s_eff = ms_.s + send_extra(msg.m, msg.bytes);  // s, plus the per-regime cost when the machine has one
    const ex tau_fill = uneven ? ex(msg.L + m_first * msg.beta) : tau;
    Item it;
    it.phase = true;
    it.label = label;
    it.cost.add(work_first, D);
    it.cost.add(work, B);
    // Remain per block: s + r + o + W, or the link's time for the message when that is longer. A blocking
    // send above the eager threshold (rendezvous) holds its sender for the transfer, and the receiver posts
    // its next receive only once its own send is done, so no transfer overlaps another: + 2 tau(m) per block.
    ex remain = fn::mk_max(s_eff + ms_.r + ms_.o, msg.m * msg.beta - W);
    if (msg.rendezvous) {
      remain = s_eff + ms_.r + ms_.o + 2 * tau;
      notes_.insert("pipeline \"" + label + "\": blocking sends above the eager threshold (rendezvous): each block also waits 2 tau(m)");
    }
    // MK's Fill + Remain, and the chain's ends: its last processor does not send and pays o per hop of the
    // fill (exact for a chain of eager messages: Fill + Remain + D*o - (s + r + o)).
    ex ends = msg.rendezvous ? ex(0) : ex(D * ms_.o - (s_eff + ms_.r + ms_.o));
    if (uneven && !msg.rendezvous)
      ends -= fn::mk_min(s_eff, (work_first.total() - W_last) + (m_first - m_last) * msg.beta);
    it.cost.add(label, "pipeline", D * (tau_fill + s_eff + ms_.r) + B * remain + ends);
    return it;
  }

  void collect_pipe(const sk::Body& b, const std::string& label, PipeMsg& msg, Cost& work) {
    for (const sk::Block& blk : b) {
      std::visit(
          [&](const auto& op) {
            using T = std::decay_t<decltype(op)>;
            if constexpr (std::is_same_v<T, sk::P2P>) {
              if (label_of(blk.index) != label || null_peer(op)) return;
              const bool is_send = op.kind == sk::P2PKind::SEND || op.kind == sk::P2PKind::ISEND;
              if (msg.found && !is_send) return;
              const int peer = peer_of(op);
              auto [L, beta] = is_send ? route(rank_, peer, label) : route(peer, rank_, label);
              msg = {tr_(op.size_bytes), L, beta, is_send, labels_.at(label).rendezvous, op.size_bytes.eval(frame_)};
            } else if constexpr (std::is_same_v<T, sk::Compute>) {
              ex amount = tr_(op.amount);
              if (op.in_flops) amount = amount / ms_.F;
              work.add(label_of(blk.index), "compute", amount);
            } else if constexpr (std::is_same_v<T, sk::Branch>) {
              const double d = decision();
              if (!op.condition) {
                Cost a, c;
                collect_pipe(op.then_body, label, msg, a);
                collect_pipe(op.else_body, label, msg, c);
                const ex p = tr_(op.probability);
                work.add(a, p);
                work.add(c, 1 - p);
                return;
              }
              if (d > 0) {
                Cost a;
                collect_pipe(op.then_body, label, msg, a);
                work.add(a, fn::number(d));
              }
              if (d < 1) {
                Cost c;
                collect_pipe(op.else_body, label, msg, c);
                work.add(c, fn::number(1 - d));
              }
            } else if constexpr (std::is_same_v<T, sk::Loop>) {
              const double d = decision();
              if (d == -1) return;
              Cost inner = seq(op.body);
              work.add(inner, tr_(op.count));
            } else if constexpr (std::is_same_v<T, sk::Collective>) {
              work.add(collective_cost(blk.index, op));
            } else if constexpr (requires { op.body; }) {
              collect_pipe(op.body, label, msg, work);
            }
          },
          blk.op);
    }
  }


  /** @brief A loop body's cost, averaged over the loop's iterations (its variable is the symbol iteration_). */
  Cost seq_at_mean(const sk::Loop& l, const ex& count) {
    Cost c = seq(l.body);
    return l.var_slot < 0 ? c : average(c, count);
  }

  /** @brief The mean over iterations v = 0..count-1 of an expression of v: a block size min(a, c - v*a) over
   *  count = ceil(c/a) iterations averages to c / count (the last block is the remainder); what remains is
   *  taken at the mean iteration (count-1)/2, exact where linear in v; and the first iteration's form is
   *  kept when it has the same value at the model's point (min(K, M) rather than its mean when K divides M). */
  ex average(const ex& e, const ex& count) {
    if (!e.has(iteration_)) return e;
    struct Blocks : GiNaC::map_function {
      const symbol& v;
      const ex& count;
      Blocks(const symbol& v_, const ex& count_) : v(v_), count(count_) {}
      ex operator()(const ex& x) override {
        if (GiNaC::is_a<GiNaC::function>(x) && GiNaC::ex_to<GiNaC::function>(x).get_name() == "min" && x.nops() == 2)
          for (int k = 0; k < 2; ++k) {
            const ex a = x.op(static_cast<std::size_t>(k)), b = x.op(static_cast<std::size_t>(1 - k)).expand();
            if (a.has(v) || !b.has(v) || b.degree(v) != 1 || !(b.coeff(v, 1) + a).expand().is_zero()) continue;
            const ex c = b.coeff(v, 0);
            if ((count - fn::mk_ceil(c / a)).expand().is_zero()) return c / count;
          }
        return x.map(*this);
      }
    } blocks(iteration_, count);
    // The same form at every point (not the first iteration's where it happens to agree here): the
    // queries evaluate it at other K, where the blocks no longer divide M.
    notes_.insert("a loop variable is averaged over its iterations (block sizes min(K, M - b*K) as M/ceil(M/K), the rest at the mean iteration)");
    return blocks(e).subs(iteration_ == (count - 1) / 2);
  }

  Cost average(const Cost& c, const ex& count) {
    Cost out;
    for (const auto& [k, v] : c.parts) out.add(k.first, k.second, average(v, count));
    return out;
  }

  void step(int, const sk::Branch& br, std::vector<Item>& items, Exchange& x) {
    const double d = decision();
    if (!br.condition) {
      close(x, items);
      const ex p = tr_(br.probability);
      Cost a = seq(br.then_body), c = seq(br.else_body);
      Item it;
      it.cost.add(a, p);
      it.cost.add(c, 1 - p);
      items.push_back(std::move(it));
      return;
    }
    if (d == 1) {
      for (const sk::Block& blk : br.then_body) std::visit([&](const auto& op) { step(blk.index, op, items, x); }, blk.op);
      return;
    }
    if (d == 0) {
      for (const sk::Block& blk : br.else_body) std::visit([&](const auto& op) { step(blk.index, op, items, x); }, blk.op);
      return;
    }
    // taken in a fraction d of the iterations (a condition on a loop variable): MK's branch probability
    close(x, items);
    Cost a = seq(br.then_body), c = seq(br.else_body);
    Item it;
    it.cost.add(a, fn::number(d));
    it.cost.add(c, fn::number(1 - d));
    items.push_back(std::move(it));
    notes_.insert("conditions on loop variables are weighted by the fraction of iterations that take them");
  }

  void step(int block, const sk::P2P& p, std::vector<Item>& items, Exchange& x) {
    if (null_peer(p)) return;  // MPI_PROC_NULL: no message, no cost
    const std::string& label = label_of(block);
    if (x.open && x.label != label) close(x, items);
    if (!x.open) {
      x.open = true;
      x.label = label;
    }
    const bool is_send = p.kind == sk::P2PKind::SEND || p.kind == sk::P2PKind::ISEND;
    if (is_send) {
      x.n_send++;
      const ex latency = route(rank_, peer_of(p), label).first;
      if (const int k = ms_.block_pattern.empty() ? -1 : ms_.block_pattern.at(static_cast<std::size_t>(block)); k >= 0) {
        x.patterned = true;
        x.last_tau = latency;
        x.last_extra = pattern_extra(k, tr_(p.size_bytes));
        x.send_extra += x.last_extra;
      } else if (m_.eager_per_byte_s != 0 || m_.rendezvous_handshake_s != 0) {
        x.send_extra += send_extra(tr_(p.size_bytes), p.size_bytes.eval(frame_));
      }
      if (p.kind == sk::P2PKind::SEND && !x.n_recv) {
        // an eager blocking send returns at once; one larger than the threshold waits for its receiver
        const double bytes = p.size_bytes.eval(frame_);
        if (bytes > m_.eager_threshold_bytes)
          notes_.insert("blocking sends above the eager threshold are costed as eager (the rendezvous wait is not modelled)");
      }
      return;
    }
    x.n_recv++;
    const int peer = peer_of(p);
    auto [L, beta] = route(peer, rank_, label);
    const ex m = tr_(p.size_bytes);
    x.m_recv = x.n_recv == 1 ? m : ex(fn::mk_max(x.m_recv, m));
    x.route_L = L;
    x.route_beta = beta;
    if (p.kind == sk::P2PKind::RECV) close(x, items);
  }

  void step(int, const sk::Wait&, std::vector<Item>& items, Exchange& x) { close(x, items); }
  void step(int, const sk::WaitAll&, std::vector<Item>& items, Exchange& x) { close(x, items); }

  /** @brief The measured cost of a collective: the symbol coll_KIND(P, m) (one per kind and size). */
  ex measured_collective(const sk::Collective& c) {
    const std::string kind = sk::collective_name(c.kind);
    const CollectiveTable& table = *opt_.collectives;
    const double bytes = c.size_bytes.empty() ? 0.0 : c.size_bytes.eval(frame_);
    const ex m = c.size_bytes.empty() ? ex(0) : tr_(c.size_bytes);
    const ex n_expr = comm_size(c.comm);  // measured at the communicator's size
    const int n = layout_.size_of(c.comm, rank_);
    const std::string n_text = text_of(n_expr);
    std::string name = "coll_" + kind + (c.kind == sk::CollectiveKind::BARRIER ? "(" + n_text + ")" : "(" + n_text + ", " + text_of(m) + ")");
    for (int k = 2; ms_.colls.count(name) && ms_.coll_m.at(name) != bytes; ++k)  // same text, another size (a loop variable)
      name = "coll_" + kind + "#" + std::to_string(k) + "(" + n_text + ", " + text_of(m) + ")";
    if (!ms_.colls.count(name)) {
      const symbol sym(name, "\\mathrm{coll}_{\\mathrm{" + kind + "}}(" + latex_of(n_expr) + (c.kind == sk::CollectiveKind::BARRIER ? "" : ", " + latex_of(m)) + ")");
      const OverP f = fit_over_P(table, kind, bytes);
      ex in_P = numeric(f.a_s) + numeric(f.b_s) * fn::mk_log2(n_expr);
      if (f.b_s < 0) in_P = fn::mk_max(0, in_P);  // as collective_time: never below 0
      ms_.colls.emplace(name, sym);
      ms_.coll_m[name] = bytes;
      ms_.coll_at_point[sym] = numeric(collective_time(table, kind, n, bytes));
      ms_.coll_in_P[sym] = in_P;
      std::ostringstream o;
      o << name << " = " << f.a_s << " + " << f.b_s << "*log2(P) s: measured " << kind << " at " << bytes
        << " bytes, fit over " << f.rank_counts << " rank count(s), max relative error " << f.max_rel_error;
      notes_.insert(o.str());
      std::string dbs;
      for (const auto& f : table.sources) dbs += (dbs.empty() ? "" : ", ") + f;
      if (!dbs.empty()) notes_.insert("collectives measured in " + dbs);
      if (!GiNaC::is_exactly_a<numeric>(m))
        notes_.insert(name + " is fitted at m = " + std::to_string(bytes) + " bytes (this point's value): T(P, ...) keeps that size");
      if (std::string note = extrapolation_note(table, kind, n, bytes); !note.empty()) notes_.insert(note);
    }
    return ms_.colls.at(name);
  }

  Cost collective_cost(int block, const sk::Collective& c) {
    const std::string& label = label_of(block);
    if (opt_.collectives && measures(*opt_.collectives, sk::collective_name(c.kind))) {
      Cost out;
      out.add(label, "collective", measured_collective(c));
      return out;
    }
    // the algorithm's rounds over the communicator's members (P for world), the route to the next member
    const ex P = comm_size(c.comm);
    const ex m = c.size_bytes.empty() ? ex(0) : tr_(c.size_bytes);
    const std::vector<int>& members = layout_.members(c.comm, rank_);
    const int me = std::max(layout_.rank_in(c.comm, rank_), 0);
    const int next = members.empty() ? rank_ : members[static_cast<std::size_t>(me + 1) % members.size()];
    auto [L, beta] = route(rank_, next, label);
    const ex round = L + ms_.s + ms_.r + ms_.o;
    const ex rounds = fn::mk_ceil(fn::mk_log2(P));
    ex t;
    switch (c.kind) {
      case sk::CollectiveKind::BARRIER: t = rounds * round; break;
      case sk::CollectiveKind::BCAST:
      case sk::CollectiveKind::REDUCE: t = rounds * (round + m * beta); break;
      case sk::CollectiveKind::ALLREDUCE: {
        // recursive doubling on the largest power of two, plus a fold in and out for the rest
        const ex lg = fn::mk_floor(fn::mk_log2(P));
        t = (lg + 2 * fn::mk_lt(GiNaC::pow(2, lg), P)) * (round + m * beta);
        break;
      }
      case sk::CollectiveKind::GATHER:
      case sk::CollectiveKind::SCATTER:
      case sk::CollectiveKind::ALLGATHER: t = rounds * round + (P - 1) * m * beta; break;
      case sk::CollectiveKind::ALLTOALL: t = (P - 1) * (round + m * beta); break;
    }
    Cost out;
    out.add(label, "collective", t);
    return out;
  }

  void step(int block, const sk::Collective& c, std::vector<Item>& items, Exchange& x) {
    close(x, items);
    Item it;
    it.phase = true;
    it.label = label_of(block);
    it.cost = collective_cost(block, c);
    items.push_back(std::move(it));
  }

  template <class T>
  void step(int, const T& other, std::vector<Item>& items, Exchange& x) {
    if constexpr (requires { other.body; })
      for (const sk::Block& blk : other.body) std::visit([&](const auto& op) { step(blk.index, op, items, x); }, blk.op);
  }
};

double evaluate(const ex& e, const GiNaC::exmap& values) {
  ex v = e.subs(values).evalf();
  if (!GiNaC::is_exactly_a<numeric>(v) || !GiNaC::ex_to<numeric>(v).is_real())
    throw std::runtime_error("model: expression does not evaluate to a number: " + text_of(v));
  return GiNaC::ex_to<numeric>(v).to_double();
}

/** @brief max over the classes' expressions, with the terms they all share taken out of the max:
 *  common + max(rest_1, rest_2, ...), which evaluates several times faster than max(e_1, e_2, ...). */
ex max_of(const std::vector<ex>& es) {
  if (es.empty()) return 0;
  if (es.size() == 1) return es.front();
  std::vector<std::vector<ex>> terms;
  for (const ex& e : es) {
    const ex x = e.expand();
    std::vector<ex> t;
    if (GiNaC::is_exactly_a<GiNaC::add>(x)) t.assign(x.begin(), x.end());
    else t.push_back(x);
    terms.push_back(std::move(t));
  }
  ex common = 0;
  for (const ex& t : terms.front()) {
    bool everywhere = true;
    for (std::size_t i = 1; i < terms.size() && everywhere; ++i) {
      bool found = false;
      for (const ex& u : terms[i]) found = found || u.is_equal(t);
      everywhere = found;
    }
    if (everywhere) common += t;
  }
  ex rest = 0;
  for (std::size_t i = 0; i < es.size(); ++i) {
    const ex r = (es[i] - common).expand();
    rest = i == 0 ? r : ex(fn::mk_max(rest, r));
  }
  return common + rest;
}

/** @brief Compiles a GiNaC expression into straight-line register code over `names`, one register per
 *  distinct subexpression (GiNaC's terms repeat: floor(log2(P)) appears in every collective). */
class Compiler {
 public:
  explicit Compiler(const std::vector<std::string>& names) : names_(names) {}
  CompiledExpr run(const ex& e) {
    out_ = CompiledExpr{};
    memo_.clear();
    emit(e);
    return out_;
  }

 private:
  using Code = sk::ExprInstr::Code;
  const std::vector<std::string>& names_;
  CompiledExpr out_;
  std::map<ex, int, GiNaC::ex_is_less> memo_;

  int push(CompiledExpr::Instr in) {
    out_.code().push_back(in);
    return static_cast<int>(out_.code().size()) - 1;
  }
  int constant(double v) { return push({Code::CONST, -1, -1, -1, -1, v}); }
  int op(Code c, int a, int b = -1, int d = -1) { return push({c, a, b, d, -1, 0}); }

  /** @brief Operands in the printed order, so that evaluation (and its rounding) is the same every run. */
  static std::vector<ex> ordered(const ex& e) {
    std::vector<std::pair<std::string, ex>> k;
    for (const ex& x : e) k.emplace_back(text_of(x, 17), x);
    std::sort(k.begin(), k.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<ex> v;
    for (auto& p : k) v.push_back(p.second);
    return v;
  }

  int emit(const ex& e) {
    if (auto it = memo_.find(e); it != memo_.end()) return it->second;
    int r;
    if (GiNaC::is_exactly_a<numeric>(e)) {
      r = constant(GiNaC::ex_to<numeric>(e).to_double());
    } else if (GiNaC::is_exactly_a<symbol>(e)) {
      const std::string name = GiNaC::ex_to<symbol>(e).get_name();
      auto it = std::find(names_.begin(), names_.end(), name);
      if (it == names_.end()) throw std::logic_error("model: symbol " + name + " left in a numeric expression");
      r = push({Code::VAR, -1, -1, -1, static_cast<int>(it - names_.begin()), 0});
    } else if (GiNaC::is_exactly_a<GiNaC::add>(e) || GiNaC::is_exactly_a<GiNaC::mul>(e)) {
      const Code c = GiNaC::is_exactly_a<GiNaC::add>(e) ? Code::ADD : Code::MUL;
      const std::vector<ex> xs = ordered(e);
      r = emit(xs.front());
      for (std::size_t i = 1; i < xs.size(); ++i) r = op(c, r, emit(xs[i]));
    } else if (GiNaC::is_exactly_a<GiNaC::power>(e)) {
      const ex& b = e.op(0);
      const ex& x = e.op(1);
      const int rb = emit(b);
      if (x.is_equal(numeric(1, 2))) r = op(Code::SQRT, rb);
      else if (x.is_equal(-1)) r = op(Code::DIV, constant(1), rb);
      else if (x.is_equal(2)) r = op(Code::MUL, rb, rb);
      else if (x.is_equal(-2)) r = op(Code::DIV, constant(1), op(Code::MUL, rb, rb));
      else r = op(Code::POW, rb, emit(x));
    } else if (GiNaC::is_a<GiNaC::function>(e)) {
      static const std::map<std::string, Code> codes = {
          {"floor", Code::FLOOR}, {"ceil", Code::CEIL}, {"log2", Code::LOG2}, {"not", Code::NOT}, {"min", Code::MIN},
          {"max", Code::MAX},     {"mod", Code::MOD},   {"xor", Code::XOR},   {"lt", Code::LT},   {"le", Code::LE},
          {"eq", Code::EQ},       {"ne", Code::NE},     {"and", Code::AND},   {"or", Code::OR},   {"if", Code::IF},
          {"abs", Code::ABS},     {"dims", Code::DIMS}, {"cart_coord", Code::CART_COORD}, {"cart_rank", Code::CART_RANK}};
      const std::string name = GiNaC::ex_to<GiNaC::function>(e).get_name();
      auto it = codes.find(name);
      if (it == codes.end()) throw std::logic_error("model: function " + name + " cannot be compiled");
      int args[6] = {-1, -1, -1, -1, -1, -1};
      for (std::size_t i = 0; i < e.nops() && i < 6; ++i) args[i] = emit(e.op(i));
      r = op(it->second, args[0], args[1], args[2]);
      out_.code().back().more = {args[3], args[4], args[5]};
    } else {
      throw std::logic_error("model: cannot compile " + text_of(e));
    }
    memo_[e] = r;
    return r;
  }
};

CompiledExpr compile(const ex& e, const std::vector<std::string>& names) { return Compiler(names).run(e); }

}  // namespace

// ---------------------------------------------------------------------------------------------------------

double CompiledExpr::eval(std::span<const double> frame) const {
  double small[256];
  std::vector<double> big;
  double* r = small;
  if (code_.size() > 256) {
    big.resize(code_.size());
    r = big.data();
  }
  for (std::size_t i = 0; i < code_.size(); ++i) {
    const Instr& in = code_[i];
    switch (in.code) {
      case sk::ExprInstr::Code::CONST: r[i] = in.value; break;
      case sk::ExprInstr::Code::VAR: r[i] = frame[static_cast<std::size_t>(in.slot)]; break;
      case sk::ExprInstr::Code::ADD: r[i] = r[in.a] + r[in.b]; break;
      case sk::ExprInstr::Code::MUL: r[i] = r[in.a] * r[in.b]; break;
      case sk::ExprInstr::Code::DIV: r[i] = r[in.a] / r[in.b]; break;
      default: {
        const double args[6] = {r[in.a], in.b >= 0 ? r[in.b] : 0.0, in.c >= 0 ? r[in.c] : 0.0,
                                in.more[0] >= 0 ? r[in.more[0]] : 0.0, in.more[1] >= 0 ? r[in.more[1]] : 0.0,
                                in.more[2] >= 0 ? r[in.more[2]] : 0.0};
        r[i] = sk::apply_instr(in.code, args);
      }
    }
  }
  return code_.empty() ? 0.0 : r[code_.size() - 1];
}

std::vector<double> AnalyticModel::frame(double Pv, const std::map<std::string, double>& values) const {
  std::vector<double> f;
  f.reserve(params.size() + 1);
  f.push_back(Pv);
  for (const auto& p : params) {
    auto it = values.find(p);
    if (it == values.end()) it = point.find(p);
    f.push_back(it == point.end() ? 0.0 : it->second);
  }
  return f;
}

double AnalyticModel::eval(double Pv, const std::map<std::string, double>& values) const {
  const std::vector<double> f = frame(Pv, values);
  return compiled.eval(f);
}

namespace {

/** @brief "3 rank(s): 0, 1, 2" (the first six, then the last). */
std::string members_text(const std::vector<int>& mem) {
  std::ostringstream o;
  o << mem.size() << " rank(s): ";
  for (std::size_t i = 0; i < mem.size() && i < 6; ++i) o << (i ? ", " : "") << mem[i];
  if (mem.size() > 6) o << ", ... " << mem.back();
  return o.str();
}

}  // namespace

AnalyticModel derive_model(const sk::Skeleton& skel, const MachineModel& m, const ModelOptions& opt) {
  std::vector<double> base = sk::bind_parameters(skel, opt.P, opt.params);
  sk::check_for_run(skel, base, opt.P);
  const int P = opt.P;

  // Pass 1 and 2: each rank's walk, then the labels' types and depths.
  std::set<std::string> notes;
  Walk walk = walk_ranks(skel, base, P, m.eager_threshold_bytes, notes);
  std::map<std::string, LabelFacts>& labels = walk.labels;
  const auto& classes = walk.classes;
  symbolic_depths(skel, opt, P, labels, notes);
  // Per-pattern figures (seed 001 table 2): each phase's pattern from the phase graph at P, as replay finds it.
  std::vector<int> block_pattern;
  if (!m.patterns.empty()) {
    PatternMap pm = phase_patterns(skel, base, P, m.patterns);
    block_pattern = std::move(pm.block_pattern);
    for (const PhasePattern& ph : pm.phases) {
      const std::string name = ph.label.empty() ? "(unlabelled)" : "\"" + ph.label + "\"";
      if (ph.pattern >= 0)
        notes.insert("phase " + name + " at P=" + std::to_string(P) + ": pattern " + ph.describe() +
                     "; a message costs rho + beta*m of its pattern and regime (seed 001 table 2)");
      else if (ph.kind == "none" || platforms::pattern_max_partners(ph.kind) > 0)
        notes.insert("phase " + name + " at P=" + std::to_string(P) + ": pattern " + ph.describe());
    }
  }

  // Symbols: P and the parameters, the rank, the `let` values as expressions.
  Translator tr;
  tr.slots.assign(skel.symbols.size(), ex(0));
  symbol Psym("P");
  tr.slots[sk::Skeleton::SLOT_P] = Psym;
  tr.slots[sk::Skeleton::SLOT_RANK] = tr.rank_sym;
  std::vector<symbol> param_syms;
  GiNaC::exmap point_values{{Psym, P}};
  for (const auto& p : skel.params) {
    symbol s(p.name);
    param_syms.push_back(s);
    const int slot = skel.symbols.find(p.name);
    tr.slots[static_cast<std::size_t>(slot)] = s;
    point_values[s] = fn::number(base[static_cast<std::size_t>(slot)]);
  }
  // A communicator's rank (NAME.rank) is a number per rank class, like the rank (substituted at each class's
  // representative); its size is an expression where one exists (ClassCoster::comm_size).
  std::vector<std::pair<symbol, int>> comm_rank_syms;  // NAME.rank symbol, communicator index
  const sk::CommLayout layout = sk::layout_comms(skel, base, P);
  for (std::size_t k = 0; k < skel.comms.size(); ++k) {
    const sk::CommDecl& d = skel.comms[k];
    symbol s(d.name + ".rank");
    comm_rank_syms.emplace_back(s, static_cast<int>(k) + 1);
    tr.slots[static_cast<std::size_t>(d.rank_slot)] = s;
    symbol z(d.name + ".size");
    comm_rank_syms.emplace_back(z, -(static_cast<int>(k) + 1));  // negative: the size
    tr.slots[static_cast<std::size_t>(d.size_slot)] = z;
  }
  for (const auto& d : skel.defines) tr.slots[static_cast<std::size_t>(d.slot)] = tr(d.value);

  MachineSyms ms;
  ms.block_pattern = std::move(block_pattern);
  for (const auto& p : skel.params)  // machine symbols must not shadow a parameter
    if (p.name == "s" || p.name == "r" || p.name == "o" || p.name == "alpha" || p.name == "F" || p.name.rfind("L", 0) == 0 ||
        p.name.rfind("beta", 0) == 0)
      throw sk::SkeletonError(skel.file, "/params/" + p.name,
                              "the analytic model names the machine's figures s, r, o, alpha, F, L*, beta*: rename this parameter");
  ms.values[ms.s] = numeric(m.send_overhead_s);
  ms.values[ms.r] = numeric(m.recv_overhead_s);
  ms.values[ms.o] = numeric(m.per_message_overhead_s);
  ms.values[ms.alpha] = numeric(m.skew_alpha_s);
  if (m.eager_per_byte_s != 0) ms.values[ms.ce] = numeric(m.eager_per_byte_s);
  if (m.rendezvous_handshake_s != 0) ms.values[ms.h] = numeric(m.rendezvous_handshake_s);
  if (!m.patterns.empty())
    for (const auto& p : skel.params)
      if (p.name.rfind("rho_", 0) == 0)
        throw sk::SkeletonError(skel.file, "/params/" + p.name,
                                "the analytic model names the machine's per-pattern figures rho_*, beta_*: rename this parameter");
  if (m.eager_per_byte_s != 0 || m.rendezvous_handshake_s != 0)
    for (const auto& p : skel.params)
      if (p.name == "c_e" || p.name == "h_r")
        throw sk::SkeletonError(skel.file, "/params/" + p.name,
                                "the analytic model names the machine's per-regime figures c_e, h_r: rename this parameter");

  // Pass 3: the cost of each class at its first member (and the last, when rank-dependent terms remain).
  struct ClassCost {
    std::vector<int> members;
    Cost cost;
    ex total;
    int rep = 0;
    double value = 0;
  };
  std::vector<ClassCost> costs;
  double speed0 = m.speed_flops ? m.speed_flops(0) : 1.0;
  ms.values[ms.F] = numeric(speed0);
  for (const auto& [decisions, members] : classes) {
    ClassCost best;
    for (int rep : {members.front(), members.back()}) {
      std::vector<double> frame = base;
      sk::bind_rank(skel, frame, rep, layout);
      const int g = static_cast<int>(decisions.front());
      const double speed = m.speed_flops ? m.speed_flops(rep) : 1.0;
      if (std::fabs(speed - speed0) > 1e-9 * speed0) notes.insert("hosts differ in speed: F is rank 0's host's; others scaled");
      std::vector<double> rest(decisions.begin() + 1, decisions.end());
      ClassCoster coster(skel, m, opt, tr, labels, ms, frame, rep, rest, notes, layout);
      Cost c = coster.run(skel.groups.at(static_cast<std::size_t>(g)).body);
      GiNaC::exmap at_rank{{tr.rank_sym, rep}};
      for (const auto& [sym, k] : comm_rank_syms)
        at_rank[sym] = k > 0 ? layout.rank_in(k, rep) : layout.size_of(-k, rep);
      Cost fixed;
      for (auto& [k, v] : c.parts) fixed.add(k.first, k.second, v.subs(at_rank) * (k.second == "compute" ? speed0 / speed : 1.0));
      GiNaC::exmap all = point_values;
      ms.values[ms.F] = numeric(speed0);
      for (const auto& [k, v] : ms.values) all[k] = v;
      for (const auto& [k, v] : ms.coll_at_point) all[k] = v;
      const ex total = fixed.total();
      const double value = evaluate(total, all);
      if (best.members.empty() || value > best.value) best = {members, fixed, total, rep, value};
      if (members.size() == 1) break;
    }
    costs.push_back(std::move(best));
  }
  ms.values[ms.F] = numeric(speed0);

  // The critical class and T = max over the distinct class expressions.
  std::size_t crit = 0;
  for (std::size_t i = 1; i < costs.size(); ++i)
    if (costs[i].value > costs[crit].value) crit = i;
  GiNaC::exmap machine_values = ms.values;
  for (const auto& [k, v] : ms.coll_in_P) machine_values[k] = v;
  std::vector<ex> distinct;
  for (const auto& c : costs) {
    ex n = c.total.subs(machine_values);
    bool dup = false;
    for (const auto& d : distinct) dup = dup || (d - n).expand().is_zero();
    if (!dup) distinct.push_back(n);
  }
  // T = max over the classes: nested max, or the shared terms taken out of it, whichever compiles shorter
  ex numeric_T = distinct.empty() ? ex(0) : distinct.front();
  for (std::size_t i = 1; i < distinct.size(); ++i) numeric_T = fn::mk_max(numeric_T, distinct[i]);
  std::vector<std::string> frame_names{"P"};
  for (const auto& p : skel.params) frame_names.push_back(p.name);
  if (distinct.size() > 1) {
    const ex factored = max_of(distinct);
    if (compile(factored, frame_names).size() < compile(numeric_T, frame_names).size()) numeric_T = factored;
  }

  AnalyticModel out;
  out.skeleton = skel.name;
  out.machine = m.name;
  out.P = P;
  const ClassCost& cc = costs.at(crit);
  out.formula = text_of(cc.total);
  out.latex = latex_of(cc.total);
  out.numeric = text_of(numeric_T);
  for (const auto& s : param_syms) out.params.push_back(s.get_name());
  for (const auto& p : skel.params) out.point[p.name] = base[static_cast<std::size_t>(skel.symbols.find(p.name))];
  for (const auto& [k, v] : ms.values) {
    const std::string name = GiNaC::ex_to<symbol>(k).get_name();
    out.machine_symbols[name] = GiNaC::ex_to<numeric>(v).to_double();
  }
  GiNaC::exmap all = point_values;
  for (const auto& [k, v] : ms.values) all[k] = v;
  for (const auto& [k, v] : ms.coll_at_point) all[k] = v;
  out.value_s = evaluate(cc.total, all);
  for (const auto& [k, v] : cc.cost.parts) {
    ModelTerm t;
    t.phase = k.first;
    t.kind = k.second;
    t.formula = text_of(v);
    t.latex = latex_of(v);
    t.value_s = evaluate(v, all);
    if (auto it = labels.find(k.first); it != labels.end() && it->second.pipeline && k.second == "pipeline")
      t.detail = "pipeline of depth D=" + (it->second.depth_expr.empty() ? std::to_string(it->second.depth) : it->second.depth_expr) +
                 " (longest chain of its pairs; " + std::to_string(it->second.depth) + " at P=" + std::to_string(P) + ")";
    out.terms.push_back(std::move(t));
  }
  out.classes = static_cast<int>(costs.size());
  out.critical_rank = cc.rep;
  out.critical_class = members_text(cc.members);
  for (std::size_t k = 0; k < ms.route_users.size(); ++k)
    notes.insert("tau(m) = " + ms.routes[2 * k].first.get_name() + " + m*" + ms.routes[2 * k + 1].first.get_name() +
                 " from the route of a representative pair (first used by phase " +
                 (ms.route_users[k].empty() ? std::string("(unlabelled)") : "\"" + ms.route_users[k] + "\"") + ") at P=" +
                 std::to_string(P));
  out.notes.assign(notes.begin(), notes.end());
  std::vector<std::string> names{"P"};
  for (const auto& p : out.params) names.push_back(p);
  out.compiled = compile(numeric_T, names);
  auto keep = std::make_shared<ModelExpr>();
  keep->numeric_T = numeric_T;
  keep->frame_syms.push_back(Psym);
  for (const auto& s : param_syms) keep->frame_syms.push_back(s);
  for (const auto& c : costs) {
    ModelExpr::Class k;
    k.members = members_text(c.members);
    k.total = c.total.subs(machine_values);
    for (const auto& [key, v] : c.cost.parts) k.parts.push_back({key, v.subs(machine_values)});
    keep->classes.push_back(std::move(k));
  }
  out.expr = keep;
  return out;
}

CompiledExpr derivative(const AnalyticModel& model, const std::string& param, std::string* text) {
  if (!model.expr) throw std::invalid_argument("derivative: the model has no expression");
  for (std::size_t i = 0; i < model.expr->frame_syms.size(); ++i) {
    const symbol& s = model.expr->frame_syms[i];
    if (s.get_name() != param) continue;
    ex d = model.expr->numeric_T.diff(s);
    if (text) *text = text_of(d);
    std::vector<std::string> names;
    for (const auto& f : model.expr->frame_syms) names.push_back(f.get_name());
    return compile(d, names);
  }
  throw std::invalid_argument("derivative: no parameter \"" + param + "\" in the model (P or one of the skeleton's)");
}

std::string javascript_of(const CompiledExpr& expr) {
  using Code = sk::ExprInstr::Code;
  const auto& code = expr.code();
  std::string js = "function (f) {\n";
  auto reg = [](int i) { return "r" + std::to_string(i); };
  auto constant = [](double v) -> std::string {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return std::string("(") + buf + ")";
  };
  for (std::size_t i = 0; i < code.size(); ++i) {
    const CompiledExpr::Instr& in = code[i];
    const std::string a = in.a >= 0 ? reg(in.a) : "", b = in.b >= 0 ? reg(in.b) : "", c = in.c >= 0 ? reg(in.c) : "";
    std::string v;
    switch (in.code) {
      case Code::CONST: v = constant(in.value); break;
      case Code::VAR: v = "f[" + std::to_string(in.slot) + "]"; break;
      case Code::NEG: v = "-" + a; break;
      case Code::NOT: v = "(" + a + " === 0 ? 1 : 0)"; break;
      case Code::ADD: v = a + " + " + b; break;
      case Code::SUB: v = a + " - " + b; break;
      case Code::MUL: v = a + " * " + b; break;
      case Code::DIV: v = a + " / " + b; break;
      case Code::POW: v = "Math.pow(" + a + ", " + b + ")"; break;
      case Code::LT: v = "(" + a + " < " + b + " ? 1 : 0)"; break;
      case Code::LE: v = "(" + a + " <= " + b + " ? 1 : 0)"; break;
      case Code::GT: v = "(" + a + " > " + b + " ? 1 : 0)"; break;
      case Code::GE: v = "(" + a + " >= " + b + " ? 1 : 0)"; break;
      case Code::EQ: v = "(" + a + " === " + b + " ? 1 : 0)"; break;
      case Code::NE: v = "(" + a + " !== " + b + " ? 1 : 0)"; break;
      case Code::AND: v = "(" + a + " !== 0 && " + b + " !== 0 ? 1 : 0)"; break;
      case Code::OR: v = "(" + a + " !== 0 || " + b + " !== 0 ? 1 : 0)"; break;
      case Code::FLOOR: v = "Math.floor(" + a + ")"; break;
      case Code::CEIL: v = "Math.ceil(" + a + ")"; break;
      case Code::MIN: v = "(" + b + " < " + a + " ? " + b + " : " + a + ")"; break;  // std::min
      case Code::MAX: v = "(" + a + " < " + b + " ? " + b + " : " + a + ")"; break;  // std::max
      case Code::MOD:  // the sign of the divisor, as apply_instr
        v = a + " % " + b + ";\n  if (" + reg(static_cast<int>(i)) + " !== 0 && ((" + reg(static_cast<int>(i)) + " < 0) !== (" + b +
            " < 0))) " + reg(static_cast<int>(i)) + " += " + b;
        break;
      case Code::LOG2: v = "Math.log2(" + a + ")"; break;
      case Code::SQRT: v = "Math.sqrt(" + a + ")"; break;
      case Code::ABS: v = "Math.abs(" + a + ")"; break;
      case Code::XOR:  // of the integer parts, NaN outside int64, as apply_instr
        v = "(Math.abs(" + a + ") < 9223372036854775808 && Math.abs(" + b + ") < 9223372036854775808) ? Number(BigInt.asIntN(64, BigInt(Math.trunc(" +
            a + ")) ^ BigInt(Math.trunc(" + b + ")))) : NaN";
        break;
      case Code::IF: v = "(" + a + " !== 0 ? " + b + " : " + c + ")"; break;
      // the topology functions (format v3) as skeletons::apply_instr computes them: NaN outside their domain
      case Code::DIMS:  // MPI_Dims_create(n, d)[i] as OpenMPI 4.1 (skeletons::dims_create)
        v = "(function (n, d, i) { var ok = function (x) { return Number.isInteger(x) && x >= 0 && x < 2147483648; };"
            " if (!ok(n) || !ok(d) || !ok(i) || n < 1 || d < 1 || d > 64 || i >= d) return NaN;"
            " var f = [], m = n; for (var p = 2; p * p <= m; ++p) while (m % p === 0) { f.push(p); m /= p; }"
            " if (m > 1) f.push(m); var bins = []; for (var k = 0; k < d; ++k) bins.push(1);"
            " for (var j = f.length - 1; j >= 0; --j) { var s = 0; for (var k = 1; k < d; ++k) if (bins[k] < bins[s]) s = k;"
            " bins[s] *= f[j]; } bins.sort(function (x, y) { return y - x; }); return bins[i]; })(" + a + ", " + b + ", " + c + ")";
        break;
      case Code::CART_COORD:
        v = "(function (r, i, n0, n1, n2) { var ok = function (x) { return Number.isInteger(x) && x >= 0 && x < 2147483648; };"
            " if (!ok(r) || !ok(i) || !ok(n0) || !ok(n1) || !ok(n2) || n0 < 1 || n1 < 1 || n2 < 1 || i > 2 || r >= n0 * n1 * n2) return NaN;"
            " return i === 0 ? Math.floor(r / (n1 * n2)) : i === 1 ? Math.floor(r / n2) % n1 : r % n2; })(" + a + ", " + b + ", " +
            c + ", " + reg(in.more[0]) + ", " + reg(in.more[1]) + ")";
        break;
      case Code::CART_RANK:
        v = "(function (c0, c1, c2, n0, n1, n2) { var n = [n0, n1, n2], c = [c0, c1, c2];"
            " for (var k = 0; k < 3; ++k) if (!Number.isInteger(n[k]) || n[k] < 1 || n[k] >= 2147483648 ||"
            " !Number.isInteger(c[k]) || Math.abs(c[k]) >= 2147483648) return NaN;"
            " for (var k = 0; k < 3; ++k) if (c[k] < 0 || c[k] >= n[k]) return -1; return (c0 * n1 + c1) * n2 + c2; })(" + a + ", " +
            b + ", " + c + ", " + reg(in.more[0]) + ", " + reg(in.more[1]) + ", " + reg(in.more[2]) + ")";
        break;
    }
    js += "  var " + reg(static_cast<int>(i)) + " = " + v + ";\n";
  }
  js += code.empty() ? "  return 0;\n}" : "  return " + reg(static_cast<int>(code.size()) - 1) + ";\n}";
  return js;
}

ModelScript model_script(const AnalyticModel& model) {
  if (!model.expr) throw std::invalid_argument("model_script: the model has no expression");
  std::vector<std::string> names;
  for (const auto& f : model.expr->frame_syms) names.push_back(f.get_name());
  ModelScript out;
  out.params = model.params;
  out.T_js = javascript_of(model.compiled);
  for (const auto& c : model.expr->classes) {
    ScriptClass k;
    k.members = c.members;
    k.total_js = javascript_of(compile(c.total, names));
    for (const auto& [key, v] : c.parts) k.terms.push_back({key.first, key.second, javascript_of(compile(v, names))});
    out.classes.push_back(std::move(k));
  }
  return out;
}

std::string model_json(const AnalyticModel& m) {
  nlohmann::ordered_json j;
  j["skeleton"] = m.skeleton;
  j["machine"] = m.machine;
  j["P"] = m.P;
  j["point"] = m.point;
  j["T_s"] = m.value_s;
  j["formula"] = m.formula;
  j["latex"] = m.latex;
  j["numeric"] = m.numeric;
  j["machine_symbols"] = m.machine_symbols;
  j["classes"] = m.classes;
  j["critical_rank"] = m.critical_rank;
  j["critical_class"] = m.critical_class;
  auto& terms = j["terms"] = nlohmann::ordered_json::array();
  for (const auto& t : m.terms)
    terms.push_back({{"phase", t.phase}, {"kind", t.kind}, {"formula", t.formula}, {"latex", t.latex}, {"value_s", t.value_s},
                     {"detail", t.detail}});
  j["notes"] = m.notes;
  return j.dump(2);
}

}  // namespace mksim::sim
