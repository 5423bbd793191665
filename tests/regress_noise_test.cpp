// Least-squares model selection under noise (skeletons/builder/regress.hpp): known laws measured with 5% noise on a
// grid where an irrelevant parameter (steps) varies too, over several seeds. A constant plus one term comes back as
// exactly those two terms; two terms in two variables come back separated (one in N over P, one in P) with at most
// a constant beside them; terms whose coefficient's 95% interval contains 0 are dropped.
#include "skeletons/builder/regress.hpp"
#include "skeletons/expr.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace mksim::skeletons;
using namespace mksim::skeletons::builder;

namespace {

const std::vector<std::string> PARAMS{"N", "steps"};

double eval(const std::string& text, const Vars& vars) {
  SymbolTable t;
  std::vector<double> frame;
  for (const auto& [k, v] : vars) {
    t.add(k);
    frame.push_back(v);
  }
  return parse_expr(text, t).eval(frame);
}

// Top-level terms of a sum as the fitter prints it ("a*N^2/P + b", "a - b*log2(P)").
int terms(const std::string& e) {
  int n = 1, depth = 0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (e[i] == '(') ++depth;
    else if (e[i] == ')') --depth;
    else if (depth == 0 && i > 0 && i + 1 < e.size() && e[i - 1] == ' ' && e[i + 1] == ' ' && (e[i] == '+' || e[i] == '-')) ++n;
  }
  return n;
}

// The top-level terms of a sum as the fitter prints it, with their signs.
std::vector<std::string> top_terms(const std::string& e) {
  std::vector<std::string> out;
  int depth = 0;
  std::size_t from = 0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (e[i] == '(') ++depth;
    else if (e[i] == ')') --depth;
    else if (depth == 0 && i > 0 && i + 1 < e.size() && e[i - 1] == ' ' && e[i + 1] == ' ' && (e[i] == '+' || e[i] == '-')) {
      out.push_back(e.substr(from, i - 1 - from));
      from = i;
    }
  }
  out.push_back(e.substr(from));
  return out;
}

// Samples of `law` at P x N x steps with Gaussian relative noise of 5% (mt19937 + Box-Muller, specified).
std::vector<Sample> noisy(const std::function<double(double, double)>& law, unsigned seed) {
  std::mt19937 gen(seed);
  const auto uniform = [&] { return (static_cast<double>(gen()) + 0.5) / 4294967296.0; };
  std::vector<Sample> s;
  for (double P : {2, 4, 8, 16, 32})
    for (double N : {64, 128, 256, 512})
      for (double steps : {10, 20}) {
        const double z = std::sqrt(-2 * std::log(uniform())) * std::cos(2 * M_PI * uniform());
        const Vars v{{"P", P}, {"N", N}, {"steps", steps}};
        s.push_back({v, law(P, N) * (1 + 0.05 * z),
                     "run-P" + std::to_string(int(P)) + "-N" + std::to_string(int(N)) + "-s" + std::to_string(int(steps))});
      }
  return s;
}

}  // namespace

TEST(RegressNoise, ConstantPlusOneTermRecoversExactlyThoseTermsOverSeeds) {
  const auto law = [](double P, double N) { return 2e-4 + 3e-8 * N * N / P; };
  for (unsigned seed = 1; seed <= 8; ++seed) {
    const Fit f = fit_quantity(noisy(law, seed), PARAMS, {});
    EXPECT_EQ(f.expr.find("steps"), std::string::npos) << "seed " << seed << ": " << f.expr;
    // the term is N-to-a-power over P (N^2, or at 5% noise sometimes N^(7/4)*log2(N): the factor grid
    // cannot tell them apart over N = 64..512), never a term in steps or a third one
    EXPECT_NE(f.expr.find("N^"), std::string::npos) << "seed " << seed << ": " << f.expr;
    EXPECT_NE(f.expr.find("/P"), std::string::npos) << "seed " << seed << ": " << f.expr;
    EXPECT_EQ(terms(f.expr), 2) << "seed " << seed << ": " << f.expr;
    // and it predicts a run not traced (P = 128, N = 1024) within 10%
    const double at = eval(f.expr, {{"P", 128}, {"N", 1024}, {"steps", 10}});
    EXPECT_NEAR(at, law(128, 1024), 0.1 * law(128, 1024)) << "seed " << seed << ": " << f.expr;
  }
}

// Two terms in two variables, N^2/P and log2(P), at 5% noise: the fitter does not give back exactly these two (it
// adds a constant, and over N = 64..512 an N^2 and an N^(5/3) log2(N)^2 cannot be told apart at this noise), so what
// is checked is what it does give: the two dependences in two separate terms (one in N over P, one in P alone, at
// most a constant beside them), nothing in steps, and predictions out of the sampled range within 15%.
TEST(RegressNoise, TwoTermsOfTwoVariablesAreSeparatedAndPredictOutOfRangeOverSeeds) {
  const auto law = [](double P, double N) { return 3e-8 * N * N / P + 2e-5 * std::log2(P); };
  for (unsigned seed = 11; seed <= 18; ++seed) {
    const Fit f = fit_quantity(noisy(law, seed), PARAMS, {});
    std::printf("seed %u: %s\n", seed, f.expr.c_str());
    EXPECT_EQ(f.expr.find("steps"), std::string::npos) << "seed " << seed << ": " << f.expr;
    const std::vector<std::string> parts = top_terms(f.expr);
    EXPECT_LE(parts.size(), 3u) << "seed " << seed << ": " << f.expr;
    int in_n = 0, in_p_only = 0, constant = 0;
    for (const std::string& t : parts) {
      const bool n = t.find('N') != std::string::npos, p = t.find('P') != std::string::npos;
      if (n) {
        ++in_n;
        EXPECT_NE(t.find("N^"), std::string::npos) << "seed " << seed << ": the N term is not a power of N: " << t;
        EXPECT_NE(t.find("/P"), std::string::npos) << "seed " << seed << ": the N term is not over P: " << t;
      } else if (p) {
        ++in_p_only;
        EXPECT_NE(t.find("log2(P)"), std::string::npos) << "seed " << seed << ": the P term grows otherwise: " << t;
      } else {
        ++constant;
      }
    }
    EXPECT_EQ(in_n, 1) << "seed " << seed << ": " << f.expr;
    EXPECT_EQ(in_p_only, 1) << "seed " << seed << ": " << f.expr;
    EXPECT_LE(constant, 1) << "seed " << seed << ": " << f.expr;
    // runs not traced, beyond the sampled P (2..32) and N (64..512)
    for (const auto& [P, N] : std::vector<std::pair<double, double>>{{128, 1024}, {64, 1024}, {256, 512}}) {
      const double at = eval(f.expr, {{"P", P}, {"N", N}, {"steps", 10}});
      EXPECT_NEAR(at, law(P, N), 0.15 * law(P, N)) << "seed " << seed << " at P=" << P << " N=" << N << ": " << f.expr;
    }
  }
}

TEST(RegressNoise, ASpuriousThirdTermIsDroppedAndSaidSo) {
  // 9 runs, 5% noise: cross-validation keeps `- 1e-4/P^(3/2)` for this seed; its 95% interval contains 0
  std::mt19937 gen(9);
  const auto uniform = [&] { return (static_cast<double>(gen()) + 0.5) / 4294967296.0; };
  std::vector<Sample> s;
  for (double P : {2, 4, 8})
    for (double N : {64, 128, 256}) {
      const double u1 = uniform(), u2 = uniform();
      const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
      const double steps = N == 128 ? 6 : 3;
      s.push_back({{{"P", P}, {"N", N}, {"steps", steps}}, (2e-4 + 3e-8 * N * N / P) * (1 + 0.05 * z),
                   "r" + std::to_string(int(P)) + "-" + std::to_string(int(N))});
    }
  const Fit f = fit_quantity(s, PARAMS, {});
  EXPECT_EQ(terms(f.expr), 2) << f.expr;
  EXPECT_NE(f.expr.find("N^2/P"), std::string::npos) << f.expr;
  EXPECT_NE(f.note.find("95% confidence interval contains 0 were dropped"), std::string::npos) << f.note;
}

TEST(RegressNoise, NoiseFreeThreeCoefficientsStayAndExactIntegersAreUntouched) {
  // without noise every term is significant: nothing is dropped
  const auto law = [](double P, double N) { return 1e-4 + 3e-8 * N * N / P + 2e-5 * std::log2(P); };
  std::vector<Sample> s;
  for (double P : {2, 4, 8, 16, 32})
    for (double N : {64, 128, 256, 512}) s.push_back({{{"P", P}, {"N", N}, {"steps", 10}}, law(P, N), "r" + std::to_string(int(P * 1000 + N))});
  FitOptions o;
  o.max_terms = 3;
  const Fit f = fit_quantity(s, PARAMS, o);
  EXPECT_EQ(f.note.find("were dropped"), std::string::npos) << f.note;
  for (const Sample& x : s) EXPECT_NEAR(eval(f.expr, x.vars), x.value, 1e-6 * x.value) << f.expr;
  // an integer quantity: exact search, as before
  std::vector<Sample> c;
  for (double P : {2, 4, 8, 16})
    for (double N : {64, 128}) c.push_back({{{"P", P}, {"N", N}, {"steps", 10}}, 16 * N / P + 3, "r" + std::to_string(int(P * 1000 + N))});
  FitOptions oi;
  oi.integer = true;
  const Fit fi = fit_quantity(c, PARAMS, oi);
  EXPECT_TRUE(fi.exact) << fi.expr;
  EXPECT_EQ(fi.expr, "16*N/P + 3");
}

// Three variables, and one run at the second value of N: SUMMA's panel update measured in a loaded run (each run's
// mean over ranks, from a rebuild of the emitted program, EmitRoundTrip.SummaIsStrictlyTheSame; the compute is
// 2*N^2*nb/P flops plus overheads, nb^0.7 as measured). One rank of P = 9 1.47 times its run's others raised that
// run's mean by 5%. With only each variable's top factor in three-way products, P's top factor moved and no product
// of N, nb and P was tried: the fit came out as 0.00013207*nb/P + 5.8e-05, 3.3 times too small at N = 192.
TEST(RegressNoise, ThreeVariablesWithOneRunAtTheSecondSizeKeepEachVariablesLaw) {
  const std::vector<std::tuple<double, double, double, double>> runs = {  // P, N, nb, seconds
      {2, 96, 16, 0.0012420},  {4, 96, 16, 0.0006273}, {4, 192, 16, 0.0027144}, {6, 96, 16, 0.0004194},
      {6, 96, 32, 0.0006702}, {8, 96, 16, 0.0003159}, {8, 96, 32, 0.0005076}, {9, 96, 16, 0.0002978}};
  std::vector<Sample> s;
  for (const auto& [P, N, nb, y] : runs)
    s.push_back({{{"P", P}, {"N", N}, {"nb", nb}}, y, "run-P" + std::to_string(int(P)) + "-N" + std::to_string(int(N)) + "-nb" + std::to_string(int(nb))});
  const Fit f = fit_quantity(s, {"N", "nb"}, {});
  EXPECT_NE(f.expr.find("N"), std::string::npos) << f.expr;
  EXPECT_NE(f.expr.find("nb"), std::string::npos) << f.expr;
  for (const auto& [P, N, nb, y] : runs) EXPECT_NEAR(eval(f.expr, {{"P", P}, {"N", N}, {"nb", nb}}), y, 0.1 * y) << f.expr << " at P = " << P;
}

// The demo's traced runs (issue 17): ATM2D at N = 256 and 512, P = 2..16, one run with 8 steps; each run's mean over
// ranks of a compute gap (seconds). `step`: the physics of one step, whose law is N^2/P (about 8.8e-09*N^2/P plus
// 28 us); `after`: the sum over each rank's points after the step loop, N^2/P too, but 21 us at P = 8, N = 256, where
// the points fit in the cache. Predicted at N = 1,024 and P = 128, never traced.
struct DemoRun {
  double P, N, steps, step, after;
};
const std::vector<DemoRun> DEMO_RUNS = {
    {2, 256, 5, 3.45e-4, 2.59e-4}, {2, 512, 5, 1.37e-3, 7.67e-4}, {4, 256, 5, 1.46e-4, 1.45e-4},
    {4, 256, 8, 1.42e-4, 1.06e-4}, {4, 512, 5, 6.55e-4, 4.07e-4}, {8, 256, 5, 1.12e-4, 2.11e-5},
    {8, 512, 5, 2.91e-4, 2.10e-4}, {16, 256, 5, 6.68e-5, 2.86e-5}, {16, 512, 5, 1.98e-4, 1.40e-4}};

Fit fit_demo(double DemoRun::*field) {
  std::vector<Sample> s;
  for (const DemoRun& r : DEMO_RUNS)
    s.push_back({{{"P", r.P}, {"N", r.N}, {"steps", r.steps}}, r.*field,
                 "run-P" + std::to_string(int(r.P)) + "-N" + std::to_string(int(r.N)) + "-s" + std::to_string(int(r.steps))});
  return fit_quantity(s, PARAMS, {});
}

// With two sizes traced, a term in N alone beside one in P only sets the model's offset at each size: log2(N), 1/N
// and N^2 fitted alike, and at N = 1,024 gave 2.1e-4 or 5.3e-4 s where N^2/P gives 1e-4.
TEST(RegressNoise, TwoSizesTracedGiveNoTermOfTheSizeAloneBesideOneOfP) {
  const Fit f = fit_demo(&DemoRun::step);
  const double at = eval(f.expr, {{"P", 128}, {"N", 1024}, {"steps", 5}});
  EXPECT_GT(at, 0.7e-4) << f.expr;
  EXPECT_LT(at, 1.4e-4) << f.expr;
  for (const DemoRun& r : DEMO_RUNS) EXPECT_NEAR(eval(f.expr, {{"P", r.P}, {"N", r.N}, {"steps", r.steps}}), r.step, 0.35 * r.step) << f.expr;
}

// Terms that cancel at a traced run (their magnitudes add up to over 5 times their sum) are not kept: such a
// difference of two laws fitted the cache's dip at P = 8 and went to 0.6-2.6 ms at N = 1,024 and P = 128.
TEST(RegressNoise, TermsThatCancelAtATracedRunAreNotKept) {
  const Fit f = fit_demo(&DemoRun::after);
  const double at = eval(f.expr, {{"P", 128}, {"N", 1024}, {"steps", 5}});
  EXPECT_LT(at, 1.5e-4) << f.expr;
  EXPECT_GT(at, 0.0) << f.expr;
}
