// The analytic model (sim/model/model.hpp) against the replay engine on the bundled machines, against closed forms
// it must reproduce (MK's PGE2 and ATM2D structures), and on the inputs it must refuse.
#include "sim/cli/cli.hpp"
#include "sim/engine/isolate.hpp"
#include "sim/engine/machine_model.hpp"
#include "sim/model/model.hpp"
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

using mksim::sim::AnalyticModel;

std::string example(const std::string& name) { return std::string(MKSIM_SOURCE_DIR) + "/skeletons/examples/" + name + ".json"; }
std::string platform(const std::string& name) { return std::string(MKSIM_SOURCE_DIR) + "/platforms/" + name + ".xml"; }

struct Case {
  std::string skeleton, machine;
  int P;
  std::map<std::string, double> params;
};

/** @brief Model (skew left out) against a replay at the same point, in one process (replay in a child). */
double relative_gap(const Case& c, AnalyticModel* out = nullptr) {
  const auto sk = mksim::skeletons::load_skeleton(example(c.skeleton));
  mksim::sim::ReplayOptions ro;
  ro.platform_path = platform(c.machine);
  ro.P = c.P;
  ro.params = c.params;
  const auto replayed = mksim::sim::replay_in_child(sk, ro);
  const auto machine = mksim::sim::load_machine_model(platform(c.machine), c.P);
  const AnalyticModel m = mksim::sim::derive_model(sk, machine, {c.P, c.params, false});
  if (out) *out = m;
  return (m.value_s - replayed.predicted_time_s) / replayed.predicted_time_s;
}

// Where the model's assumptions hold (eager messages, no contention, no skew) it agrees with replay within 1%.
// One test per case: each loads SimGrid once in its own process.
TEST(ModelVsReplay, Pge1ParagonP64) { EXPECT_LT(std::fabs(relative_gap({"pge1", "paragon", 64, {}})), 0.01); }
TEST(ModelVsReplay, Pge1T3eP48) { EXPECT_LT(std::fabs(relative_gap({"pge1", "t3e", 48, {{"K", 4}}})), 0.01); }
TEST(ModelVsReplay, Pge2ParagonP64) { EXPECT_LT(std::fabs(relative_gap({"pge2", "paragon", 64, {}})), 0.01); }
TEST(ModelVsReplay, Pge2T3eP32) { EXPECT_LT(std::fabs(relative_gap({"pge2", "t3e", 32, {{"K", 16}}})), 0.01); }
TEST(ModelVsReplay, Atm2dParagonP128) { EXPECT_LT(std::fabs(relative_gap({"atm2d", "paragon", 128, {{"steps", 3}}})), 0.01); }
TEST(ModelVsReplay, Atm2dT3eP64) { EXPECT_LT(std::fabs(relative_gap({"atm2d", "t3e", 64, {{"steps", 3}}})), 0.01); }
TEST(ModelVsReplay, CgParagonP32) { EXPECT_LT(std::fabs(relative_gap({"cg", "paragon", 32, {{"iters", 5}}})), 0.01); }
TEST(ModelVsReplay, CgT3eP64) { EXPECT_LT(std::fabs(relative_gap({"cg", "t3e", 64, {{"iters", 5}}})), 0.01); }

/** @brief The identifiers of a formula (symbols and function names such as min, ceil, sqrt): a check that a
 *  term is made of what it should be, which a substring search ("s" is in "fwd_values") cannot be. */
std::set<std::string> symbols(const std::string& formula) {
  static const std::set<std::string> functions{"min", "max", "ceil", "floor", "sqrt", "log2", "log", "exp", "abs", "pow"};
  std::set<std::string> out;
  static const std::regex id("[A-Za-z_][A-Za-z_0-9]*");
  for (std::sregex_iterator it(formula.begin(), formula.end(), id), end; it != end; ++it)
    if (!functions.count(it->str())) out.insert(it->str());
  return out;
}

struct ModelTermView {
  std::string formula;
  double value_s = 0;
};

ModelTermView term(const AnalyticModel& m, const std::string& phase, const std::string& kind) {
  for (const auto& t : m.terms)
    if (t.phase == phase && t.kind == kind) return {t.formula, t.value_s};
  return {};
}

// PGE2 (seed 000 s.4.2): the back substitution is a pipeline of depth P/2 - 1 over the B = ceil(M/K) blocks,
// the exchange a synchronous phase tau(m1) + s + r, and the forward and backward pipelines have the same form.
TEST(ModelStructure, Pge2HasMksPhases) {
  const auto sk = mksim::skeletons::load_skeleton(example("pge2"));
  const auto machine = mksim::sim::load_machine_model(platform("paragon"), 64);
  const AnalyticModel m = mksim::sim::derive_model(sk, machine, {64, {}, true});
  std::map<std::string, std::string> by;
  for (const auto& t : m.terms) by[t.phase + "/" + t.kind] = t.formula + " | " + t.detail;
  ASSERT_TRUE(by.count("backward/pipeline")) << m.formula;
  ASSERT_TRUE(by.count("forward/pipeline"));
  ASSERT_TRUE(by.count("exchange/synchronous"));
  EXPECT_NE(by["backward/pipeline"].find("D=P/2 - 1"), std::string::npos) << by["backward/pipeline"];
  EXPECT_NE(by["backward/pipeline"].find("ceil(M/K)"), std::string::npos) << by["backward/pipeline"];
  // tau(m1) + s + r (+ o) with m1 = M * fwd_values * value_bytes, over the exchange's own route (L2, beta2: the
  // middle ranks' pair, not the pipelines' neighbours): exactly these symbols, and exactly this value
  const ModelTermView ex = term(m, "exchange", "synchronous");
  ASSERT_FALSE(ex.formula.empty());
  EXPECT_EQ(symbols(ex.formula), (std::set<std::string>{"L2", "M", "beta2", "fwd_values", "value_bytes", "o", "r", "s"})) << ex.formula;
  const auto& f = m.machine_symbols;
  const double m1 = m.point.at("M") * m.point.at("fwd_values") * m.point.at("value_bytes");
  EXPECT_NEAR(ex.value_s, f.at("L2") + m1 * f.at("beta2") + f.at("s") + f.at("r") + f.at("o"), 1e-15) << ex.formula;
  EXPECT_GT(m1 * f.at("beta2"), 0.1 * ex.value_s);  // the message's size matters: m1 = 4 KiB at 30 MB/s
  EXPECT_TRUE(by.count("exchange/skew")) << "the Paragon's alpha*sqrt(P) belongs to synchronous phases";
}

// ATM2D (seed 000 s.5.2): T = a + b*lambda + c*lambda^2 at fixed P, lambda = N/Px: the third difference in N
// of the compiled model vanishes and the second does not (there is a quadratic term).
TEST(ModelStructure, Atm2dIsQuadraticInLambda) {
  const auto sk = mksim::skeletons::load_skeleton(example("atm2d"));
  const auto machine = mksim::sim::load_machine_model(platform("paragon"), 64);
  const AnalyticModel m = mksim::sim::derive_model(sk, machine, {64, {}, true});
  auto T = [&](double N) { return m.eval(64, {{"N", N}}); };
  const double h = 256;
  const double d2 = T(1024 + 2 * h) - 2 * T(1024 + h) + T(1024);
  const double d3 = T(1024 + 3 * h) - 3 * T(1024 + 2 * h) + 3 * T(1024 + h) - T(1024);
  EXPECT_GT(d2, 0);
  EXPECT_LT(std::fabs(d3), 1e-9 * T(1024));
  EXPECT_NE(m.formula.find("4*alpha*sqrt(P)*steps"), std::string::npos) << m.formula;
}

// The compiled expression is the symbolic one: at the derivation point they agree, and T grows with the work.
TEST(ModelEvaluation, CompiledAgreesWithSymbolic) {
  const auto sk = mksim::skeletons::load_skeleton(example("pge1"));
  const auto machine = mksim::sim::load_machine_model(platform("t3e"), 32);
  const AnalyticModel m = mksim::sim::derive_model(sk, machine, {32, {{"K", 8}}, true});
  EXPECT_NEAR(m.eval(32, {}), m.value_s, 1e-12 * m.value_s);
  EXPECT_GT(m.eval(32, {{"N", 4096}}), m.eval(32, {{"N", 1024}}));
  EXPECT_THROW(mksim::sim::derivative(m, "nosuch"), std::invalid_argument);
}

TEST(ModelErrors, MoreRanksThanHostsNamesThePlatform) {
  try {
    mksim::sim::load_machine_model(platform("paragon"), 300);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("paragon.xml: P=300 ranks but the platform has only 256"), std::string::npos) << e.what();
  }
}

TEST(ModelErrors, ParameterShadowingAMachineSymbolIsRefused) {
  const auto sk = mksim::skeletons::parse_skeleton(
      R"({"format": "mksim-skeleton", "version": 1, "params": {"s": 3},
          "body": [{"op": "compute", "seconds": "s"}]})",
      "shadow.json");
  mksim::sim::MachineModel machine;
  machine.speed_flops = [](int) { return 1e9; };
  EXPECT_THROW(mksim::sim::derive_model(sk, machine, {4, {}, true}), mksim::skeletons::SkeletonError);
}

// A hand-made machine: s = 2 us, r = 3 us, o = 1 us, 1 Gflop/s, every route 5 us and 1 GB/s.
mksim::sim::MachineModel hand_made_machine() {
  mksim::sim::MachineModel machine;
  machine.send_overhead_s = 2e-6;
  machine.recv_overhead_s = 3e-6;
  machine.per_message_overhead_s = 1e-6;
  machine.speed_flops = [](int) { return 1e9; };
  machine.route = [](int, int) { return mksim::sim::RouteFigures{5e-6, 1e9}; };
  return machine;
}

// It gives exact closed forms: a ring exchange of m bytes, then compute, repeated.
TEST(ModelClosedForm, RingExchangeIsTauPlusOverheads) {
  const auto sk = mksim::skeletons::parse_skeleton(R"({"format": "mksim-skeleton", "version": 1,
      "params": {"n": 10, "m": 1000},
      "body": [{"op": "loop", "count": "n", "body": [
        {"op": "irecv", "peer": "(rank - 1) % P", "size": "m", "phase": "ring"},
        {"op": "isend", "peer": "(rank + 1) % P", "size": "m", "phase": "ring"},
        {"op": "waitall", "phase": "ring"},
        {"op": "compute", "flops": "1e6", "phase": "work"}]}]})",
                                                   "ring.json");
  const mksim::sim::MachineModel machine = hand_made_machine();
  const AnalyticModel m = mksim::sim::derive_model(sk, machine, {8, {}, true});
  // per step: s + tau(m) + r + o + 1e6 / 1e9
  const double step = 2e-6 + (5e-6 + 1000 / 1e9) + 3e-6 + 1e-6 + 1e-3;
  EXPECT_NEAR(m.value_s, 10 * step, 1e-12);
  EXPECT_EQ(m.classes, 1);
  EXPECT_NEAR(m.eval(8, {{"n", 20}}), 20 * step, 1e-12);
  // dT/dm = n * beta and dT/dn = step, compiled from the symbolic derivative
  std::string text;
  const auto dm = mksim::sim::derivative(m, "m", &text);
  EXPECT_NEAR(dm.eval(m.frame(8, {})), 10 * 1e-9, 1e-18) << text;
  const auto dn = mksim::sim::derivative(m, "n");
  EXPECT_NEAR(dn.eval(m.frame(8, {{"m", 5000}})), step + 4000 / 1e9, 1e-15);
}


// Collectives on communicators cost their algorithm's rounds at the communicator's size, written as an expression
// of P where one exists (a Cartesian sub-grid's size is a dims() of P: GiNaC holds dims(P, 2, 0) as an opaque
// function, a number once P is), so the compiled T(P) is right at another P too; point-to-point peers are mapped
// to world ranks; PROC_NULL costs nothing; a split's size is its value at the model's P (a note says so).
TEST(ModelClosedForm, CollectivesOnCommunicatorsCostRoundsAtTheirSize) {
  const auto sk = mksim::skeletons::parse_skeleton(R"J({"format": "mksim-skeleton", "version": 3,
      "params": {"m": 1000},
      "comms": {"grid": {"cart": "world", "dims": ["dims(P, 2, 0)", "dims(P, 2, 1)"]},
                "row": {"cart_sub": "grid", "remain": [false, true]},
                "col": {"cart_sub": "grid", "remain": [true, false]},
                "half": {"split": "world", "color": "rank % 2"}},
      "body": [{"op": "allreduce", "comm": "col", "size": "m", "phase": "a"},
               {"op": "bcast", "comm": "row", "size": "m", "phase": "b"},
               {"op": "alltoall", "comm": "row", "size": "m", "phase": "c"},
               {"op": "barrier", "comm": "half", "phase": "d"},
               {"op": "send", "comm": "grid", "peer": "PROC_NULL", "size": "m", "phase": "e"}]})J",
                                                   "comms.json");
  const mksim::sim::MachineModel machine = hand_made_machine();
  const double round = 5e-6 + 2e-6 + 3e-6 + 1e-6, per_byte = 1e-9, m = 1000;
  // at P = 16: columns and rows of 4, halves of 8
  auto at = [&](int X, int Y, int half) {
    return std::floor(std::log2(X)) * (round + m * per_byte) +  // allreduce (X a power of 2)
           std::ceil(std::log2(Y)) * (round + m * per_byte) +                                        // bcast
           (Y - 1) * (round + m * per_byte) +                                                        // alltoall
           std::ceil(std::log2(half)) * round;                                                       // barrier
  };
  const AnalyticModel m16 = mksim::sim::derive_model(sk, machine, {16, {}, false});
  EXPECT_NEAR(m16.value_s, at(4, 4, 8), 1e-15) << m16.formula;
  EXPECT_NE(m16.formula.find("dims(P, 2, 0)"), std::string::npos) << m16.formula;
  std::map<std::string, double> by;
  for (const auto& t : m16.terms) by[t.phase] += t.value_s;
  EXPECT_EQ(by.count("e"), 0u);  // nothing for a send to PROC_NULL
  bool noted = false;
  for (const auto& n : m16.notes) noted = noted || n.find("communicator \"half\" (a split)") != std::string::npos;
  EXPECT_TRUE(noted);
  // the compiled form at P = 64 (8 x 8): the grid's parts move with P, the split's size stays its value at 16
  EXPECT_NEAR(m16.eval(64, {}), at(8, 8, 8), 1e-15);
  const AnalyticModel m64 = mksim::sim::derive_model(sk, machine, {64, {}, false});
  EXPECT_NEAR(m64.value_s, at(8, 8, 32), 1e-15);
}

// The explorer's JavaScript of a compiled model (mksim report --explore) evaluates the topology functions as the
// compiled form does: T(P) of a skeleton whose costs go through dims() and cart_rank(), at P = 1..200, in node.
TEST(ModelClosedForm, JavascriptOfTopologyFunctionsAgrees) {
  if (std::system("command -v node >/dev/null 2>&1") != 0) GTEST_SKIP() << "no node";
  const auto sk = mksim::skeletons::parse_skeleton(R"J({"format": "mksim-skeleton", "version": 3, "params": {"m": 1000},
      "comms": {"grid": {"cart": "world", "dims": ["dims(P, 3, 0)", "dims(P, 3, 1)", "dims(P, 3, 2)"]},
                "plane": {"cart_sub": "grid", "remain": [false, true, true]}},
      "body": [{"op": "allreduce", "comm": "plane", "size": "m * cart_coord(3, 1, 4, 2, 1)"},
               {"op": "compute", "flops": "1e6 * (cart_rank(1, 1, 0, dims(P, 3, 0), 2, 1) + 2) * dims(P, 3, 2)"}]})J",
                                                   "js.json");
  const AnalyticModel m = mksim::sim::derive_model(sk, hand_made_machine(), {16, {}, false});
  const std::string js = mksim::sim::javascript_of(m.compiled);
  const std::string file = ::testing::TempDir() + "/mksim_model_js_" + std::to_string(::getpid()) + ".js";
  {
    std::ofstream f(file);
    f << "var T = " << js << ";\nfor (var P = 1; P <= 200; ++P) console.log(P, T([P, 1000]).toPrecision(17));\n";
  }
  FILE* p = ::popen(("node " + file).c_str(), "r");
  ASSERT_NE(p, nullptr);
  int P = 0, lines = 0;
  double v = 0;
  while (std::fscanf(p, "%d %lf", &P, &v) == 2) {
    const double want = m.eval(P, {});
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(v)) << "P=" << P;
    else EXPECT_DOUBLE_EQ(v, want) << "P=" << P;
    ++lines;
  }
  ::pclose(p);
  std::remove(file.c_str());
  EXPECT_EQ(lines, 200);
}
}  // namespace

// `mksim model` end to end: the expression, the breakdown, the cross-check, and its errors.
namespace {

struct CliRun {
  int code;
  std::string out, err;
};

CliRun mksim_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = mksim::sim::run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace

TEST(ModelCli, Pge1CrossCheckAgreesAndNamesTheDepth) {
  const auto r = mksim_cli({"model", "--platform", "paragon", "--P", "32", "--skeleton", "pge1", "--cross-check"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("pipeline of depth D=P-1"), std::string::npos) << r.out;
  const auto at = r.out.find("difference ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const double pct = std::stod(r.out.substr(at + 11));
  EXPECT_LT(std::fabs(pct), 1.0) << r.out;
}

TEST(ModelCli, JsonIsParseableAndCarriesTheValue) {
  const auto r = mksim_cli({"model", "--platform", "t3e", "--P", "16", "--skeleton", "cg", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("T_s").get<double>(), 0);
  EXPECT_EQ(j.at("P").get<int>(), 16);
  EXPECT_FALSE(j.at("terms").empty());
}

TEST(ModelCli, BadFormatIsAUsageError) {
  const auto r = mksim_cli({"model", "--platform", "t3e", "--P", "16", "--format", "pdf"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--format must be text, latex or json"), std::string::npos) << r.err;
}

TEST(ModelCli, TooManyRanksFailsNamingThePlatform) {
  const auto r = mksim_cli({"model", "--platform", "paragon", "--P", "512"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("paragon.xml: P=512 ranks but the platform has only 256 compute hosts"), std::string::npos) << r.err;
}

TEST(ModelCli, OptimizeSpeedupAndCompareAnswer) {
  auto r = mksim_cli({"model", "--platform", "paragon", "--P", "16", "--skeleton", "pge1", "--no-skew", "--optimize", "K",
                      "--range", "1..256", "--Ps", "8,16", "--speedup"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\n  16  16  "), std::string::npos) << r.out;  // P=16: best K=16 (replay agrees: model_queries_test)
  EXPECT_NE(r.out.find("speedup (T(1) from the model at P=1)"), std::string::npos) << r.out;
  r = mksim_cli({"model", "--platform", "paragon", "--P", "16", "--skeleton", "pge1", "--optimize", "K"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--optimize needs --range LO..HI"), std::string::npos) << r.err;
}

TEST(ModelCli, CompareFindsTheStripVersusGridCrossing) {
  const auto r = mksim_cli({"compare", "--platform", "t3e", "--skeleton", "atm1d", "--vs-skeleton", "atm2d", "--scan", "P=16..256",
                            "--param", "N=256", "--no-skew"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("crossing at P = 64 (between 60 and 64): atm1d@t3e faster below, atm2d@t3e above"), std::string::npos) << r.out;
}
