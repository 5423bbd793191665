// mksim diagnose (issue 8): injected problems are found and ranked first when they dominate, and their predicted
// gain is checked two ways: (1) against SimGrid's SMPI running the real MPI program with and without the fix written
// in C (tests/diagnose_smpi_app.c, skeletons/apps/pge1.c and atm2d.c; the same platform, SMPI's protocol settings
// aligned with mksim's): an independent simulator executing independent code, within 10% of its gain; (2) against
// mksim replaying the fixed program written as another skeleton (engine vs engine: this checks that the engine's
// what-if transformation is the rewritten program, and agrees to rounding where the fix is the same). Reference
// skeletons show no problem above the 5% threshold.
#include "results/diagnosis.hpp"
#include "sim/diagnosis/diagnose.hpp"
#include "sim/cli/diagnose_cli.hpp"
#include "sim/engine/isolate.hpp"
#include "skeletons/skeleton_io.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace mksim;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;
const std::string PARAGON = SRC + "/platforms/paragon.xml";
const std::string DATA = SRC + "/tests/data/diagnose/";
constexpr double THRESHOLD_PCT = 5;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("mksim-diagnose-" + std::to_string(getpid()) + "-" + name)).string();
}

/** @brief `mksim diagnose` through the command function; the diagnosis as read back from its HDF5 file. */
results::Diagnosis diagnose_cli(const std::string& skeleton, int P, const std::vector<std::string>& params, std::string* text = nullptr) {
  const std::string h5 = temp_path("diag.h5");
  std::vector<std::string> args = {skeleton, "--platform", PARAGON, "--P", std::to_string(P), "-o", h5, "--quiet"};
  for (const auto& p : params) args.insert(args.end(), {"--param", p});
  std::ostringstream out, err;
  const int rc = sim::cmd_diagnose(args, out, err);
  EXPECT_EQ(rc, 0) << err.str();
  if (text) *text = out.str();
  results::Diagnosis d = results::read_diagnosis_hdf5(h5);
  fs::remove(h5);
  return d;
}

/** @brief diagnose_cli, its table printed (and flushed before the next fork). */
results::Diagnosis diagnose_shown(const std::string& skeleton, int P, const std::vector<std::string>& params, std::string& text) {
  results::Diagnosis d = diagnose_cli(skeleton, P, params, &text);
  std::printf("%s", text.c_str());
  std::fflush(stdout);
  return d;
}

/** @brief The first problem is of `kind` in `block`, above the threshold. */
void expect_first(const results::Diagnosis& d, const std::string& kind, const std::string& block) {
  ASSERT_FALSE(d.problems.empty());
  const results::Problem& first = d.problems.front();
  EXPECT_EQ(first.kind, kind);
  EXPECT_EQ(first.block, block);
  EXPECT_GE(first.gain_pct, THRESHOLD_PCT);
}

/** @brief The first problem is a simulated imbalance of `block` on `rank`, above the threshold. */
void expect_simulated_imbalance_first(const results::Diagnosis& d, const std::string& block, int rank) {
  ASSERT_NO_FATAL_FAILURE(expect_first(d, "imbalance", block));
  const results::Problem& first = d.problems.front();
  EXPECT_NE(first.ranks.find("rank " + std::to_string(rank) + " "), std::string::npos) << first.ranks;
  EXPECT_EQ(first.method.rfind("simulated", 0), 0u) << first.method;
}

double replay_time(const skeletons::Skeleton& sk, int P, const std::map<std::string, double>& params) {
  sim::ReplayOptions o;
  o.platform_path = PARAGON;
  o.P = P;
  o.params = params;
  return sim::replay_in_child(sk, o).predicted_time_s;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const results::Problem* find(const results::Diagnosis& d, const std::string& kind, const std::string& block = "") {
  for (const auto& p : d.problems)
    if (p.kind == kind && (block.empty() || p.block == block)) return &p;
  return nullptr;
}

/** @brief The integer after `prefix` in `text` (e.g. "set K = 8"), or -1. */
double number_after(const std::string& text, const std::string& prefix) {
  const auto at = text.find(prefix);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + prefix.size(), nullptr);
}

/** @brief Engine vs engine: the what-if's gain against mksim's replay of the fixed program written as a skeleton (the
 *  same transformation written by hand: equal to `tolerance`, relative). */
void expect_whatif_is_the_rewritten_skeleton(double predicted, double rewritten, const std::string& what, double tolerance = 1e-9) {
  EXPECT_GT(rewritten, 0) << what;
  EXPECT_LE(std::abs(predicted - rewritten), tolerance * rewritten)
      << what << ": what-if gain " << predicted << " s, rewritten skeleton's gain " << rewritten << " s";
  std::printf("%s: what-if gain %.6f s, mksim replaying the rewritten skeleton %.6f s (%+.4f%%; engine vs engine)\n", what.c_str(),
              predicted, rewritten, 100.0 * (predicted - rewritten) / rewritten);
}

// --- the independent check: SMPI running the real program, unfixed and fixed, on the same platform ---

#ifdef DIAGNOSE_SMPI_DIR
const std::string SMPI_DIR = DIAGNOSE_SMPI_DIR;
#else
const std::string SMPI_DIR;
#endif

/** @brief The smpicc builds and smpirun are there (else the SMPI checks are skipped, saying so). */
bool smpi_available() {
  return !SMPI_DIR.empty() && fs::exists(SMPI_DIR + "/diagnose_smpi_app") && std::system("command -v smpirun >/dev/null 2>&1") == 0;
}

/** @brief SMPI settings that cost messages as mksim does on `platform` (tests/apps_test.sh validate; DESIGN.md, second
 *  round): CM02 without cross-traffic or factors, the platform's s, r + o as SMPI's os/ois/or, its eager threshold as
 *  SMPI's asynchronous-send threshold (an eager message leaves at the send), recursive doubling for allreduce and the
 *  dissemination (Bruck) barrier as mksim's collectives; no computation but the programs' explicit flops. */
std::string smpi_cfg(const std::string& platform) {
  const std::string xml = read_text(platform);
  auto prop = [&](const std::string& id) {
    const std::regex re("<prop id=\"" + id + "\" value=\"([^\"]*)\"");
    std::smatch m;
    return std::regex_search(xml, m, re) ? std::stod(m[1]) : 0.0;
  };
  const double s = prop("mksim.send_overhead_s"), r = prop("mksim.recv_overhead_s") + prop("mksim.per_message_overhead_s");
  const long eager = static_cast<long>(prop("mksim.eager_threshold_bytes"));
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "--cfg=network/model:CM02 --cfg=network/crosstraffic:0 --cfg=network/latency-factor:1 --cfg=network/bandwidth-factor:1 "
                "--cfg=network/weight-S:0 --cfg=network/TCP-gamma:0 --cfg=smpi/simulate-computation:no --cfg=smpi/allreduce:rdb "
                "--cfg=smpi/barrier:ompi_bruck --cfg=smpi/os:0:%.10g:0 --cfg=smpi/ois:0:%.10g:0 --cfg=smpi/or:0:%.10g:0 "
                "--cfg=smpi/async-small-thresh:%ld --cfg=smpi/send-is-detached-thresh:%ld",
                s, s, r, eager + 1, std::max(65536L, eager + 1));
  return buf;
}

/** @brief The simulated time ("time:", the span of the modelled part) of `program args` under smpirun at P ranks on
 *  the Paragon (rank i on node-i, as mksim places ranks); `env` is put before the command (MKSIM_WORK_SCALE=...). */
double smpi_time(const std::string& program, int P, const std::string& args, const std::string& env = "") {
  const std::string hosts = temp_path("hosts-" + std::to_string(P));
  {
    std::ofstream h(hosts);
    for (int i = 0; i < P; ++i) h << "node-" << i << "\n";
  }
  const std::string log = temp_path("smpi.log");
  const std::string cmd = env + " smpirun -np " + std::to_string(P) + " -platform " + PARAGON + " -hostfile " + hosts + " " +
                          smpi_cfg(PARAGON) +
                          " --log=root.thresh:warning --log=smpi_config.thresh:error --log=xbt_cfg.thresh:warning " + SMPI_DIR + "/" +
                          program + " " + args + " >" + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string out = read_text(log);
  fs::remove(log);
  fs::remove(hosts);
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd << "\n" << out;
  const auto at = out.find("\ntime: ");
  EXPECT_NE(at, std::string::npos) << cmd << "\n" << out;
  return at == std::string::npos ? -1 : std::strtod(out.c_str() + at + 7, nullptr);
}

/** @brief The predicted gain against SMPI's: the real program's simulated time minus the fixed program's, both under
 *  SMPI. Within 10% (the acceptance's criterion); mksim's baseline against SMPI's unfixed time is printed (and held
 *  to 5%: beyond that the two simulate different programs and the gains would not be comparable). */
void expect_gain_matches_smpi(double predicted, double mksim_baseline, double smpi_before, double smpi_after, const std::string& what) {
  const double gain = smpi_before - smpi_after;
  std::printf("%s: predicted gain %.6f s; SMPI, real program %.6f s, fixed %.6f s: gain %.6f s (%+.2f%%); mksim baseline %.6f s "
              "(%+.2f%% of SMPI's)\n",
              what.c_str(), predicted, smpi_before, smpi_after, gain, gain > 0 ? 100.0 * (predicted - gain) / gain : 0.0, mksim_baseline,
              100.0 * (mksim_baseline - smpi_before) / smpi_before);
  std::fflush(stdout);
  EXPECT_GT(gain, 0) << what;
  EXPECT_LE(std::abs(predicted - gain), 0.10 * gain) << what << ": predicted " << predicted << " s, SMPI " << gain << " s";
  EXPECT_LE(std::abs(mksim_baseline - smpi_before), 0.05 * smpi_before) << what << ": baselines differ";
}

/** @brief diagnose_smpi_app CASE, unfixed and fixed (`fixed_args` after the case name), against the predicted gain. */
void expect_case_matches_smpi(const std::string& which, int P, double predicted, double mksim_baseline, const std::string& fixed_args = "") {
  if (!smpi_available()) {
    std::printf("SMPI check of %s skipped: no smpirun or smpicc build in %s\n", which.c_str(), SMPI_DIR.c_str());
    return;
  }
  const double before = smpi_time("diagnose_smpi_app", P, which);
  const double after = smpi_time("diagnose_smpi_app_fixed", P, which + " " + fixed_args);
  expect_gain_matches_smpi(predicted, mksim_baseline, before, after, which + " (tests/diagnose_smpi_app.c under SMPI)");
}

}  // namespace

TEST(DiagnoseReplay, BlockStatisticsMatchTheInjectedImbalance) {
  // rank 3 computes 3 ms per step, the others 1 ms: max = 20 * 3 ms on rank 3, mean = 20 * (7 + 3) / 8 ms.
  const auto sk = skeletons::load_skeleton(DATA + "imbalance.json");
  sim::ReplayOptions o;
  o.platform_path = PARAGON;
  o.P = 8;
  const results::RunResult r = sim::replay_stats_in_child(sk, o);
  ASSERT_EQ(r.block_stats.size(), sk.blocks.size());
  const results::BlockStats* work = nullptr;
  for (const auto& b : r.block_stats)
    if (b.id == "work") work = &b;
  ASSERT_NE(work, nullptr);
  EXPECT_EQ(work->compute_argmax, 3);
  EXPECT_NEAR(work->compute_max_s, 0.060, 1e-12);
  EXPECT_NEAR(work->compute_mean_s, 0.020 * 10 / 8, 1e-12);
  EXPECT_EQ(work->ranks_executing, 8);
  EXPECT_DOUBLE_EQ(work->executions_max, 20);
  // the waits at the halo are late senders; rank 3's neighbours wait for it
  const results::BlockStats* wait = nullptr;
  for (const auto& b : r.block_stats)
    if (b.id == "halo-wait") wait = &b;
  ASSERT_NE(wait, nullptr);
  EXPECT_GT(wait->late_sender_s, 0);
  EXPECT_EQ(wait->late_receiver_s, 0);
  EXPECT_EQ(wait->cause_rank, 3);
  EXPECT_GT(wait->wait_max_s, 0.02);
  // the statistics change nothing else: same time and blocks as a plain replay
  const results::RunResult plain = sim::replay_in_child(sk, o);
  EXPECT_EQ(plain.predicted_time_s, r.predicted_time_s);
  ASSERT_EQ(plain.blocks.size(), r.blocks.size());
  for (std::size_t i = 0; i < r.blocks.size(); ++i) EXPECT_EQ(plain.blocks[i].time_s, r.blocks[i].time_s);
  ASSERT_FALSE(r.phase_stats.empty());
  for (const auto& p : r.phase_stats) {
    EXPECT_GE(p.utilisation_min, 0);
    EXPECT_LE(p.utilisation_mean, 1);
  }
}

TEST(DiagnoseReplay, WhatIfsChangeOnlyWhatTheySay) {
  const auto sk = skeletons::load_skeleton(DATA + "tiny_messages.json");
  sim::ReplayOptions o;
  o.platform_path = PARAGON;
  o.P = 4;
  // aggregating the loop by 8 in the engine is the program written with iters/8, 8x bytes, 8x compute
  o.what_ifs = {{sim::WhatIf::Kind::AGGREGATE_LOOP, "chatter", 8}};
  const double engine = sim::replay_in_child(sk, o).predicted_time_s;
  const double written = replay_time(sk, 4, {{"iters", 32}, {"bytes", 64}, {"t_iter", 8 * 2e-5}});
  EXPECT_NEAR(engine, written, 1e-9 * written);
  // removing a compute block is the program without it
  o.what_ifs = {{sim::WhatIf::Kind::SCALE_COMPUTE, "main-work", 0}};
  EXPECT_NEAR(sim::replay_in_child(sk, o).predicted_time_s, replay_time(sk, 4, {{"t_main", 0}}), 1e-12);
  o.what_ifs = {{sim::WhatIf::Kind::SCALE_COMPUTE, "chatter", 0}};  // not a compute block
  EXPECT_THROW(sim::replay_in_child(sk, o), sim::ReplayError);
  o.what_ifs = {{sim::WhatIf::Kind::AGGREGATE_LOOP, "no-such-block", 2}};
  EXPECT_THROW(sim::replay_in_child(sk, o), sim::ReplayError);
}

TEST(Diagnose, ImbalancedRankIsFirstWithTheGainOfTheBalancedProgram) {
  std::string text;
  const results::Diagnosis d = diagnose_shown(DATA + "imbalance.json", 8, {}, text);
  ASSERT_NO_FATAL_FAILURE(expect_simulated_imbalance_first(d, "work", 3));
  const results::Problem& first = d.problems.front();
  // the fixed program, written independently: every rank does the mean work
  std::string json = read_text(DATA + "imbalance.json");
  const std::string hot = "\"t_work * if(rank == hot, extra, 1)\"";
  ASSERT_NE(json.find(hot), std::string::npos);
  json.replace(json.find(hot), hot.size(), "\"t_work * (P - 1 + extra) / P\"");
  const double fixed = replay_time(skeletons::parse_skeleton(json, "balanced.json"), 8, {});
  expect_whatif_is_the_rewritten_skeleton(first.gain_s, d.baseline_time_s - fixed, "imbalanced rank");
  expect_case_matches_smpi("imbalance", 8, first.gain_s, d.baseline_time_s);
  // the seed's formula (max - mean of the block) is reported beside it
  EXPECT_NEAR(first.formula_gain_s, 0.060 - 0.025, 1e-9);
}

TEST(Diagnose, OversizedPipelineBlocksAreFirstWithTheGainOfTheBetterGrain) {
  std::string text;
  const results::Diagnosis d = diagnose_shown(SRC + "/skeletons/examples/pge1.json", 16, {"K=256"}, text);
  ASSERT_FALSE(d.problems.empty());
  const results::Problem& first = d.problems.front();
  EXPECT_EQ(first.kind, "pipeline_grain");
  EXPECT_GE(first.gain_pct, THRESHOLD_PCT);
  const double K = number_after(first.action, "set K = ");
  ASSERT_GE(K, 1) << first.action;
  EXPECT_LT(K, 256);
  const auto sk = skeletons::load_skeleton(SRC + "/skeletons/examples/pge1.json");
  const double before = replay_time(sk, 16, {{"K", 256}}), after = replay_time(sk, 16, {{"K", K}});
  EXPECT_DOUBLE_EQ(before, d.baseline_time_s);
  expect_whatif_is_the_rewritten_skeleton(first.gain_s, before - after, "pipeline K=256 -> " + std::to_string(static_cast<int>(K)));
  // the real pge1 (skeletons/apps/pge1.c, its skeleton's flops simulated) at K = 256 and at the K proposed
  if (smpi_available()) {
    const std::string args = "1024 256 ";
    expect_gain_matches_smpi(first.gain_s, d.baseline_time_s, smpi_time("pge1", 16, args + "256"),
                             smpi_time("pge1", 16, args + std::to_string(static_cast<int>(K))),
                             "pge1 K=256 -> " + std::to_string(static_cast<int>(K)) + " (skeletons/apps/pge1.c under SMPI)");
  }
  EXPECT_NE(first.detail.find("sqrt((beta s + g)/m)"), std::string::npos);
}

TEST(Diagnose, TinyMessagesInALoopAreFirstWithTheGainOfTheAggregatedLoop) {
  std::string text;
  const results::Diagnosis d = diagnose_shown(DATA + "tiny_messages.json", 8, {}, text);
  ASSERT_NO_FATAL_FAILURE(expect_first(d, "granularity", "chatter"));
  const results::Problem& first = d.problems.front();
  const double k = number_after(first.action, "aggregate ");
  ASSERT_GE(k, 2) << first.action;
  // the aggregated program, written with the skeleton's parameters: iters/k iterations of k times the data and work
  const auto sk = skeletons::load_skeleton(DATA + "tiny_messages.json");
  const double fixed = replay_time(sk, 8, {{"iters", 256 / k}, {"bytes", 8 * k}, {"t_iter", 2e-5 * k}});
  expect_whatif_is_the_rewritten_skeleton(first.gain_s, d.baseline_time_s - fixed, "tiny messages, k=" + std::to_string(static_cast<int>(k)));
  expect_case_matches_smpi("tiny", 8, first.gain_s, d.baseline_time_s, std::to_string(static_cast<int>(k)));
}

TEST(Diagnose, LateSenderIsFoundWithItsCauseAndTheGainOfTheOnTimeProgram) {
  std::string text;
  const results::Diagnosis d = diagnose_shown(DATA + "late_sender.json", 8, {}, text);
  const results::Problem* late = find(d, "late_sender", "shift-wait");
  ASSERT_NE(late, nullptr) << text;
  EXPECT_NE(late->ranks.find("caused by rank 0"), std::string::npos) << late->ranks;
  EXPECT_NE(late->action.find("late-work"), std::string::npos) << late->action;
  EXPECT_GE(late->gain_pct, THRESHOLD_PCT);
  // ranked first: the late sender, or its root cause (the same block) when that is listed with the same gain
  ASSERT_FALSE(d.problems.empty());
  const results::Problem& first = d.problems.front();
  EXPECT_TRUE(&first == late || first.block == "late-work") << first.kind << " " << first.block;
  const auto sk = skeletons::load_skeleton(DATA + "late_sender.json");
  const double on_time = replay_time(sk, 8, {{"t_late", 0}});
  expect_whatif_is_the_rewritten_skeleton(late->gain_s, d.baseline_time_s - on_time, "late sender");
  expect_case_matches_smpi("late_sender", 8, late->gain_s, d.baseline_time_s);
}

TEST(Diagnose, LateReceiverIsFoundWithItsCauseAndTheGainOfTheOnTimeProgram) {
  // rank 0 sends 1 MiB (rendezvous) to rank 1, which computes 30 ms more before posting its receive
  std::string text;
  const results::Diagnosis d = diagnose_shown(DATA + "late_receiver.json", 4, {}, text);
  const results::Problem* late = find(d, "late_receiver", "big-send");
  ASSERT_NE(late, nullptr) << text;
  EXPECT_NE(late->ranks.find("rank 0 waits most"), std::string::npos) << late->ranks;
  EXPECT_NE(late->ranks.find("caused by rank 1"), std::string::npos) << late->ranks;
  EXPECT_GE(late->gain_pct, THRESHOLD_PCT);
  ASSERT_FALSE(d.problems.empty());
  const results::Problem& first = d.problems.front();
  EXPECT_TRUE(&first == late || first.block == "late-work") << first.kind << " " << first.block;
  const auto sk = skeletons::load_skeleton(DATA + "late_receiver.json");
  const double on_time = replay_time(sk, 4, {{"t_late", 0}});
  expect_whatif_is_the_rewritten_skeleton(late->gain_s, d.baseline_time_s - on_time, "late receiver");
  expect_case_matches_smpi("late_receiver", 4, late->gain_s, d.baseline_time_s);
}

TEST(Diagnose, LateArrivalAtAnAllreduceIsFoundWithItsCauseAndTheGainOfTheOnTimeProgram) {
  // rank 3 computes 2 ms more per step than the others before the allreduce they all wait in
  std::string text;
  const results::Diagnosis d = diagnose_shown(DATA + "collective_wait.json", 8, {}, text);
  const results::Problem* wait = find(d, "collective_wait", "sum");
  ASSERT_NE(wait, nullptr) << text;
  EXPECT_NE(wait->ranks.find("caused by rank 3"), std::string::npos) << wait->ranks;
  EXPECT_GE(wait->gain_pct, THRESHOLD_PCT);
  ASSERT_FALSE(d.problems.empty());
  const results::Problem& first = d.problems.front();
  EXPECT_TRUE(&first == wait || first.block == "late-work") << first.kind << " " << first.block;
  // logical phases from the replay's separation points: one per step (every rank computes between allreduces),
  // covering the run; the late rank computes the most
  ASSERT_EQ(d.logical_phases.size(), 1u);
  const results::LogicalPhase& lp = d.logical_phases.front();
  EXPECT_EQ(lp.occurrences, 20);
  EXPECT_EQ(lp.sites, "sum");
  EXPECT_NEAR(lp.time_s, d.baseline_time_s, 1e-9);
  ASSERT_EQ(lp.utilisation.size(), 8u);
  for (int r = 0; r < 8; ++r) {
    if (r != 3) {
      EXPECT_LT(lp.utilisation[r], lp.utilisation[3]) << r;
    }
  }
  const auto sk = skeletons::load_skeleton(DATA + "collective_wait.json");
  const double on_time = replay_time(sk, 8, {{"t_late", 0}});
  expect_whatif_is_the_rewritten_skeleton(wait->gain_s, d.baseline_time_s - on_time, "collective wait");
  expect_case_matches_smpi("collective_wait", 8, wait->gain_s, d.baseline_time_s);
}

namespace {
void expect_nothing_above_threshold(const std::string& skeleton, int P, const std::vector<std::string>& params) {
  std::string text;
  const results::Diagnosis d = diagnose_shown(skeleton, P, params, text);
  EXPECT_GT(d.baseline_time_s, 0);
  for (const auto& p : d.problems) EXPECT_LT(p.gain_pct, THRESHOLD_PCT) << p.kind << " " << p.block << ": " << p.method;
  EXPECT_NE(text.find(" 0 above the 5% threshold"), std::string::npos) << text;
}
}  // namespace

TEST(DiagnoseReference, Atm2dHasNoProblemAboveThreshold) {
  expect_nothing_above_threshold(SRC + "/skeletons/examples/atm2d.json", 16, {});
}

TEST(DiagnoseReference, Pge1AtItsGoodGrainHasNoProblemAboveThreshold) {
  // On the Paragon at P = 16 (N = 1024, M = 256) the replay's best grain is K = 16: the file's default K = 8 (the
  // paper's optimum on its machine) is 7% slower here, which diagnose reports (see the next test).
  expect_nothing_above_threshold(SRC + "/skeletons/examples/pge1.json", 16, {"K=16"});
}

TEST(DiagnoseReference, Pge1AtTheFileDefaultGrainGetsTheBetterGrain) {
  std::string text;
  const results::Diagnosis d = diagnose_shown(SRC + "/skeletons/examples/pge1.json", 16, {"K=8"}, text);
  ASSERT_FALSE(d.problems.empty());
  EXPECT_EQ(d.problems.front().kind, "pipeline_grain");
  EXPECT_EQ(d.problems.front().action, "set K = 16 (now 8)");
  for (const auto& p : d.problems) EXPECT_EQ(p.action.find("set M"), std::string::npos) << "M is a problem size, not a grain";
}

TEST(DiagnoseReference, CgHasNoProblemAboveThreshold) {
  expect_nothing_above_threshold(SRC + "/skeletons/examples/cg.json", 16, {});
}

TEST(DiagnoseFile, WritesAndReadsBack) {
  results::Diagnosis d;
  d.baseline_time_s = 1.5;
  d.threshold_pct = 5;
  d.attributes = {{"P", "8"}, {"platform", "x.xml"}};
  d.problems.push_back({"imbalance", "work", "compute", "rank 3", "balance", 0.25, 16.7, "simulated", 0.2, "max - mean", 0.3, ""});
  d.problems.push_back({"scaling", "", "forward", "model term pipeline", "none", 0, 0, "model", -1, "grows", -1, "rank 2 <- rank 1"});
  d.logical_phases.push_back({"L1", "MPI_Allreduce@app+0x10", 3, 0.5, 1.25, 0.6, 0.2, 2, {0.9, 0.7, 0.2, 0.6}});
  d.notes = {"a note"};
  const std::string path = temp_path("rw.h5");
  results::write_diagnosis_hdf5(path, d);
  const results::Diagnosis r = results::read_diagnosis_hdf5(path);
  fs::remove(path);
  EXPECT_EQ(r.baseline_time_s, 1.5);
  EXPECT_EQ(r.attributes, d.attributes);
  ASSERT_EQ(r.problems.size(), 2u);
  EXPECT_EQ(r.problems[0].kind, "imbalance");
  EXPECT_EQ(r.problems[0].gain_s, 0.25);
  EXPECT_EQ(r.problems[1].formula_gain_s, -1);
  EXPECT_EQ(r.problems[0].measured_s, 0.3);
  EXPECT_EQ(r.problems[1].measured_s, -1);
  EXPECT_EQ(r.problems[1].chain, "rank 2 <- rank 1");
  ASSERT_EQ(r.logical_phases.size(), 1u);
  EXPECT_EQ(r.logical_phases[0].name, "L1");
  EXPECT_EQ(r.logical_phases[0].sites, "MPI_Allreduce@app+0x10");
  EXPECT_EQ(r.logical_phases[0].occurrences, 3);
  EXPECT_EQ(r.logical_phases[0].time_s, 1.25);
  EXPECT_EQ(r.logical_phases[0].utilisation_argmin, 2);
  EXPECT_EQ(r.logical_phases[0].utilisation, (std::vector<double>{0.9, 0.7, 0.2, 0.6}));
  EXPECT_EQ(r.notes, d.notes);
  EXPECT_THROW(results::read_diagnosis_hdf5(path), std::runtime_error);  // gone
}

TEST(DiagnoseCli, UsageErrors) {
  std::ostringstream out, err;
  EXPECT_EQ(sim::cmd_diagnose({DATA + "imbalance.json", "--platform", PARAGON}, out, err), 2);  // no --P
  EXPECT_EQ(sim::cmd_diagnose({DATA + "imbalance.json", "--platform", PARAGON, "--P", "4", "--param", "K"}, out, err), 2);
  EXPECT_EQ(sim::cmd_diagnose({"--help"}, out, err), 0);
  EXPECT_NE(out.str().find("mksim diagnose"), std::string::npos);
}

// The injected problems of the acceptance, in the reference programs themselves (skeletons/examples): the problem
// is written into the skeleton's text, found and ranked first, and its predicted gain compared with the replay of
// the fixed program, written independently as another edit of the same text.
namespace {

/** @brief The reference skeleton's text with `from` replaced by `to` (which must be there once), as a file. */
std::string edited(const std::string& name, const std::vector<std::pair<std::string, std::string>>& edits, const std::string& as) {
  std::string json = read_text(SRC + "/skeletons/examples/" + name);
  for (const auto& [from, to] : edits) {
    const auto at = json.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at == std::string::npos) continue;
    EXPECT_EQ(json.find(from, at + 1), std::string::npos) << from << " is not unique";
    json.replace(at, from.size(), to);
  }
  const std::string path = temp_path(as);
  std::ofstream(path) << json;
  return path;
}

}  // namespace

TEST(DiagnoseInjected, Atm2dWithAnOverloadedRankIsFirstWithTheGainOfTheBalancedProgram) {
  const std::string physics = "\"flops_per_point * lx * ly\"";
  const std::string sick = edited("atm2d.json", {{physics, "\"flops_per_point * lx * ly * if(rank == 5, 3, 1)\""}}, "atm2d-hot.json");
  std::string text;
  const results::Diagnosis d = diagnose_shown(sick, 16, {}, text);
  ASSERT_NO_FATAL_FAILURE(expect_simulated_imbalance_first(d, "physics", 5));
  const results::Problem& first = d.problems.front();
  const std::string fixed = edited("atm2d.json", {{physics, "\"flops_per_point * lx * ly * (P - 1 + 3) / P\""}}, "atm2d-fixed.json");
  expect_whatif_is_the_rewritten_skeleton(first.gain_s, d.baseline_time_s - replay_time(skeletons::load_skeleton(fixed), 16, {}),
                                          "atm2d, rank 5 at 3x");
  // the real atm2d (skeletons/apps/atm2d.c, N = 1024, 10 steps: the skeleton's defaults) with rank 5's physics at 3x,
  // then balanced: every rank at (15 + 3) / 16 of its physics
  if (smpi_available())
    expect_gain_matches_smpi(first.gain_s, d.baseline_time_s, smpi_time("atm2d", 16, "1024 10", "MKSIM_WORK_SCALE='physics:5:3'"),
                             smpi_time("atm2d", 16, "1024 10", "MKSIM_WORK_SCALE='physics:*:1.125'"),
                             "atm2d, rank 5 at 3x (skeletons/apps/atm2d.c under SMPI)");
  fs::remove(sick);
  fs::remove(fixed);
}

TEST(DiagnoseInjected, CgWithALateSenderIsFoundWithItsCauseAndTheGainOfTheOnTimeProgram) {
  // rank 0 computes before it posts its halo: rank 1 waits for the message, then everybody at the allreduce
  const std::string halo = "{\"op\": \"if\", \"cond\": \"rank > 0\", \"phase\": \"halo\"";
  const auto with = [&](const std::string& flops) {
    return edited("cg.json", {{halo, "{\"op\": \"compute\", \"id\": \"late-work\", \"flops\": \"if(rank == 0, " + flops + ", 0)\"},\n      " + halo}},
                  "cg-late-" + flops + ".json");
  };
  const std::string sick = with("4e6");
  std::string text;
  const results::Diagnosis d = diagnose_shown(sick, 16, {}, text);
  ASSERT_FALSE(d.problems.empty());
  const results::Problem* late = find(d, "late_sender", "halo-wait");
  ASSERT_NE(late, nullptr) << text;
  EXPECT_NE(late->ranks.find("caused by rank 0"), std::string::npos) << late->ranks;
  EXPECT_NE(late->action.find("late-work"), std::string::npos) << late->action;
  // first: the late work itself (the cause, ranked before its symptoms at the same gain) or a wait it causes
  const results::Problem& first = d.problems.front();
  EXPECT_TRUE(first.block == "late-work" || first.action.find("late-work") != std::string::npos) << first.kind << " " << first.block;
  EXPECT_GE(first.gain_pct, THRESHOLD_PCT);
  const std::string on_time = with("0");
  // not the same fix: the rewritten skeleton drops the late work, the what-if spreads it over the ranks (-6.3%)
  expect_whatif_is_the_rewritten_skeleton(first.gain_s, d.baseline_time_s - replay_time(skeletons::load_skeleton(on_time), 16, {}),
                                          "cg, late sender", 0.10);
  fs::remove(sick);
  fs::remove(on_time);
}

TEST(DiagnoseInjected, CgWithTinyMessagesInALoopIsFirstWithTheGainOfTheAggregatedLoop) {
  // after each iteration's update, 64 rounds of 8 bytes around a ring with a little work in between
  const std::string update = "{\"op\": \"compute\", \"id\": \"update-p\", \"phase\": \"update\", \"flops\": \"2 * rows\", \"doc\": \"p = r + beta p\"}";
  const auto with = [&](int count, int bytes, int flops) {
    const std::string loop = ",\n      {\"op\": \"loop\", \"id\": \"chatter\", \"count\": \"" + std::to_string(count) + "\", \"body\": [" +
                             "{\"op\": \"irecv\", \"id\": \"chatter-recv\", \"peer\": \"(rank - 1) % P\", \"size\": \"" + std::to_string(bytes) +
                             "\", \"tag\": 9}, {\"op\": \"isend\", \"id\": \"chatter-send\", \"peer\": \"(rank + 1) % P\", \"size\": \"" +
                             std::to_string(bytes) + "\", \"tag\": 9}, {\"op\": \"waitall\", \"id\": \"chatter-wait\"}, " +
                             "{\"op\": \"compute\", \"id\": \"chatter-work\", \"flops\": \"" + std::to_string(flops) + "\"}]}";
    return edited("cg.json", {{update, update + loop}}, "cg-chatter-" + std::to_string(count) + ".json");
  };
  const std::string sick = with(64, 8, 100);
  std::string text;
  const results::Diagnosis d = diagnose_shown(sick, 16, {}, text);
  ASSERT_NO_FATAL_FAILURE(expect_first(d, "granularity", "chatter"));
  const results::Problem& first = d.problems.front();
  const double k = number_after(first.action, "aggregate ");
  ASSERT_GE(k, 2) << first.action;
  ASSERT_EQ(64 % static_cast<int>(k), 0) << first.action;
  const int ki = static_cast<int>(k);
  const std::string fixed = with(64 / ki, 8 * ki, 100 * ki);
  expect_whatif_is_the_rewritten_skeleton(first.gain_s, d.baseline_time_s - replay_time(skeletons::load_skeleton(fixed), 16, {}),
                                          "cg, tiny messages, k=" + std::to_string(ki));
  fs::remove(sick);
  fs::remove(fixed);
}

// The scaling detector looks at scale_factor x P, or as far as the platform goes: at P = 80 the 256-node Paragon
// cannot hold 320 ranks, so the model is evaluated at 256 (before, the detector was skipped), and the pipeline fill
// of pge1 (~P) is still found.
TEST(DiagnoseScaling, BeyondThePlatformTheModelIsEvaluatedAtItsLargestP) {
  std::string text;
  const results::Diagnosis d = diagnose_shown(SRC + "/skeletons/examples/pge1.json", 80, {"K=256"}, text);
  EXPECT_NE(text.find("note: scaling: the model at P=256, the platform's 256 hosts, not 4 x P = 320"), std::string::npos) << text;
  const results::Problem* scaling = find(d, "scaling");
  ASSERT_NE(scaling, nullptr) << text;
  EXPECT_NE(scaling->method.find("at P and P=256"), std::string::npos) << scaling->method;
  EXPECT_NE(scaling->detail.find("% at P=256"), std::string::npos) << scaling->detail;
  EXPECT_EQ(text.find("scaling detector skipped"), std::string::npos) << text;
}
