// mksim diagnose on traced runs (issue 8): real OpenMPI runs of tests/diagnose_app.c under mktrace
// (oversubscribed: 4 ranks), with an injected imbalanced rank and an injected late receiver, and unmodified;
// the injected problem is found and ranked first, the unmodified run reports nothing above the threshold; input
// kinds are told apart by content; a corrupt trace is refused naming the file and offset.
#include "results/diagnosis.hpp"
#include "sim/cli/diagnose_cli.hpp"
#include "sim/diagnosis/trace_diagnose.hpp"
#include "skeletons/trace/reader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace mksim;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;
const std::string MKTRACE = std::string(MKSIM_BINARY_DIR) + "/trace/mktrace";
const std::string APP = DIAGNOSE_APP;
const std::string PARAGON = SRC + "/platforms/paragon.xml";
constexpr double THRESHOLD_PCT = 5;

fs::path work_dir() {
  static const fs::path d = fs::temp_directory_path() / ("mksim-diagtrace-" + std::to_string(getpid()));
  return d;
}

/** @brief Traces `diagnose_app args` at P = 4 into work_dir()/name (once per process). */
std::string traced(const std::string& name, const std::string& args) {
  const fs::path dir = work_dir() / name;
  if (fs::exists(dir / "run.json")) return dir.string();
  fs::create_directories(work_dir());
  // MKTRACE_CPU_TIME=1: the CPU time of every compute gap, whatever the number of cores (4 ranks on 2 cores get it
  // anyway; on a machine with 4 or more cores the wall-clock gaps would include the other jobs' time slices)
  const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MKTRACE_CPU_TIME=1 " + MKTRACE + " -np 4 -o " + dir.string() +
                          " -- " + APP + " " + args + " > " + (work_dir() / (name + ".log")).string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << cmd;
  return dir.string();
}

// STEPS WORK_US SLOW_RANK SLOW_FACTOR LATE_RECV_US
std::string unmodified() { return traced("base", "30 3000 -1 1 0"); }
std::string slow_rank() { return traced("slow", "30 3000 2 4 0"); }
std::string late_receiver() { return traced("late", "30 3000 -1 1 15000"); }

results::Diagnosis diagnose(const std::vector<std::string>& args, std::string* text = nullptr, int* rc_out = nullptr) {
  const std::string h5 = (work_dir() / "diag.h5").string();
  std::vector<std::string> a = args;
  a.insert(a.end(), {"-o", h5, "--quiet"});
  std::ostringstream out, err;
  const int rc = sim::cmd_diagnose(a, out, err);
  if (rc_out) *rc_out = rc;
  EXPECT_EQ(rc, 0) << err.str();
  if (text) *text = out.str();
  std::printf("%s", out.str().c_str());
  std::fflush(stdout);
  results::Diagnosis d = results::read_diagnosis_hdf5(h5);
  fs::remove(h5);
  return d;
}

const results::Problem* find(const results::Diagnosis& d, const std::string& kind, const std::string& block_prefix) {
  for (const auto& p : d.problems)
    if (p.kind == kind && p.block.rfind(block_prefix, 0) == 0) return &p;
  return nullptr;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/** @brief The largest rank's computation in the traced run: the sum of its gaps' CPU times. */
double computation_s(const std::string& dir) {
  const trace::Run run = trace::read_run(dir, {.require_complete = true});
  double most = 0;
  for (const auto& rank : run.ranks) {
    double sum = 0, prev = 0;
    for (const auto& e : rank.events) {
      if (e.kind != trace::Kind::INIT) sum += e.gap_after(prev);
      prev = e.t_exit;
    }
    most = std::max(most, sum);
  }
  return most;
}

/** @brief The finding is above the threshold of the program's own time. gain_pct is of the traced run's wall-clock
 *  span, which other jobs stretch (beside other builds at load 20 on 2 cores: 5-8 s for 0.45 s of work, the injected
 *  gains then 2.5-3% of it); the gain is compared instead with twice the largest rank's computation (CPU time), a
 *  generous bound on the undisturbed run (its communication is a few ms). The percentage is printed. */
void expect_above_threshold(const results::Problem& p, const std::string& dir) {
  const double program = 2 * computation_s(dir);
  std::printf("%s: gain %.6f s, %.2f%% of the traced span, %.1f%% of twice the largest computation (%.6f s)\n", p.kind.c_str(), p.gain_s,
              p.gain_pct, 100 * p.gain_s / program, program / 2);
  EXPECT_GE(p.gain_s, THRESHOLD_PCT / 100 * program) << p.kind << " " << p.block;
}

/** @brief Removes the traces of this process at the end. */
class Cleanup : public ::testing::Environment {
 public:
  void TearDown() override { fs::remove_all(work_dir()); }
};
const auto* const cleanup = ::testing::AddGlobalTestEnvironment(new Cleanup);

}  // namespace

TEST(DiagnoseTrace, ImbalancedRankIsFoundRankedFirstAndItsWaitsTracedBackToIt) {
  // rank 2 computes 4x (12 ms instead of 3 ms) each step before the ring exchange
  const results::Diagnosis d = diagnose({slow_rank()});
  ASSERT_FALSE(d.problems.empty());
  const results::Problem& first = d.problems.front();
  EXPECT_EQ(first.kind, "imbalance");
  EXPECT_TRUE(has(first.block, "compute before MPI_Sendrecv")) << first.block;
  EXPECT_TRUE(has(first.ranks, "rank 2 (max")) << first.ranks;
  expect_above_threshold(first, slow_rank());
  // without a platform the gain is max - mean of the ranks' median gap x executions; the plain sums' max - mean
  // (measured_s) is printed beside it and agrees when nothing else disturbs the ranks
  EXPECT_GT(first.measured_s, 0.5 * first.gain_s);
  EXPECT_LT(first.measured_s, 2.0 * first.gain_s);
  // ...and both are the injected excess, 30 steps x 9 ms x 3/4 = 202.5 ms: compute is CPU time (4 ranks on 2 cores:
  // the tracer measures it), so a rank waiting for a core does not count as computing (wall-clock gaps gave 381 ms)
  EXPECT_NEAR(first.gain_s, 0.2025, 0.1 * 0.2025);
  // the others wait for it, in the ring exchange or the allreduce (directly or through the ring): the waits are
  // followed back to rank 2's compute. Which of the two wait findings carries it depends on the scheduling of
  // 4 ranks on 2 cores: under a loaded ASan suite rank 0 was descheduled enough for the allreduce's waits to
  // trace back to it, while the ring's still traced back to rank 2.
  const results::Problem* blamed = nullptr;
  for (const auto& p : d.problems) {
    if (p.kind != "collective_wait" && p.kind != "late_sender" && p.kind != "late_receiver") continue;
    EXPECT_LE(p.gain_s, first.gain_s) << p.kind << " " << p.block;  // a symptom never outranks its cause
    if (!blamed && has(p.ranks, "origin rank 2 (compute before MPI_Sendrecv")) blamed = &p;
  }
  ASSERT_NE(blamed, nullptr) << "no wait traced back to rank 2";
  EXPECT_FALSE(blamed->chain.empty());
  // logical phases cover the run, utilisations are fractions
  ASSERT_FALSE(d.logical_phases.empty());
  double total = 0;
  for (const auto& lp : d.logical_phases) {
    total += lp.time_s;
    ASSERT_EQ(lp.utilisation.size(), 4u);
    for (double u : lp.utilisation) {
      EXPECT_GE(u, 0);
      EXPECT_LE(u, 1 + 1e-9);
    }
  }
  EXPECT_NEAR(total, d.baseline_time_s, 1e-9 * d.baseline_time_s + 1e-12);
}

TEST(DiagnoseTrace, LateReceiverIsFoundWithTheRankAndCallSiteCausingIt) {
  // rank 0 sends 1 MiB (rendezvous) to rank 1, which computes 15 ms more before posting its receive
  const results::Diagnosis d = diagnose({late_receiver()});
  ASSERT_FALSE(d.problems.empty());
  const results::Problem& first = d.problems.front();
  EXPECT_TRUE(first.kind == "event_imbalance" || first.kind == "imbalance") << first.kind;
  EXPECT_TRUE(has(first.block, "compute before MPI_Recv")) << first.block;
  EXPECT_TRUE(has(first.ranks, "rank 1 (max")) << first.ranks;
  expect_above_threshold(first, late_receiver());
  EXPECT_NEAR(first.gain_s, 0.3375, 0.1 * 0.3375);  // the injected excess: 30 x 15 ms x 3/4
  const results::Problem* late = find(d, "late_receiver", "MPI_Send");
  ASSERT_NE(late, nullptr);
  EXPECT_TRUE(has(late->ranks, "rank 0 waits most")) << late->ranks;
  EXPECT_TRUE(has(late->ranks, "waits for rank 1")) << late->ranks;
  EXPECT_TRUE(has(late->ranks, "origin rank 1 (compute before MPI_Recv")) << late->ranks;
  EXPECT_GT(late->measured_s, 0);
}

TEST(DiagnoseTrace, UnmodifiedRunHasNothingAboveThreshold) {
  std::string text;
  // Real runs of 4 ranks on 2 cores, possibly beside other jobs: the ranks wait for each other in wall-clock time
  // (0.15-0.43 s of the largest waits measured here under load), and those waits are listed. What a finding's gain
  // rests on is not wall-clock time: the imbalance of the compute gaps' CPU times (MKTRACE_CPU_TIME=1, each rank's
  // median gap), and a wait's gain is its origin's imbalance or 0. So the check holds under load and still fails
  // when the computation is imbalanced (the slow rank above: 44%). With wall-clock gaps scheduling noise reached
  // 4.2-15% here and this test had to allow 10%.
  const results::Diagnosis d = diagnose({unmodified()}, &text);
  EXPECT_GT(d.baseline_time_s, 0);
  double largest_wait = 0;
  for (const auto& p : d.problems) {
    EXPECT_LT(p.gain_pct, THRESHOLD_PCT) << p.kind << " " << p.block << ": " << p.method;
    if (p.kind == "late_sender" || p.kind == "late_receiver" || p.kind == "collective_wait") {
      largest_wait = std::max(largest_wait, p.measured_s);
      // a wait is worth what fixing its origin saves: 0 here (no compute imbalance), whatever the wait measured
      const results::Problem* origin = nullptr;
      for (const auto& q : d.problems)
        if ((q.kind == "imbalance" || q.kind == "event_imbalance") && has(p.ranks, "(" + q.block)) origin = &q;
      EXPECT_LE(p.gain_s, origin ? origin->gain_s : 0.0) << p.kind << " " << p.block << ": " << p.ranks;
    }
  }
  std::printf("unmodified run: %.6f s, largest wait %.6f s (%.1f%%), no finding's gain above %.0f%%\n", d.baseline_time_s, largest_wait,
              100 * largest_wait / d.baseline_time_s, THRESHOLD_PCT);
  EXPECT_TRUE(has(text, " 0 above the 5% threshold")) << text;
}

TEST(DiagnoseTrace, WithAPlatformTheSkeletonBuiltFromTheTraceGivesSimulatedGains) {
  // the late receiver: the builder keeps rank 1's extra compute (a branch on rank), the engine removes it
  const results::Diagnosis d = diagnose({late_receiver(), "--platform", PARAGON});
  ASSERT_FALSE(d.problems.empty());
  const results::Problem& first = d.problems.front();
  EXPECT_TRUE(has(first.block, "compute before MPI_Recv")) << first.block;
  EXPECT_EQ(first.method.rfind("simulated (skeleton built from the trace", 0), 0u) << first.method;
  EXPECT_TRUE(has(first.method, "P = 4")) << first.method;
  EXPECT_GE(first.gain_pct, THRESHOLD_PCT);
  EXPECT_GT(first.measured_s, 0);  // the trace's own max - mean, beside the simulated gain
  bool simulated_baseline = false;
  for (const auto& [k, v] : d.attributes) simulated_baseline = simulated_baseline || k == "simulated.baseline_time_s";
  EXPECT_TRUE(simulated_baseline);
  // the imbalanced rank: simulated when the builder fitted the compute with a rank dependence, else measured and
  // said so; either way the cause comes before the waits it causes. It is not always first: findings only the
  // skeleton gives (here granularity, 6.2% of the simulated run) are scaled to the traced run by its wall-clock span,
  // which other jobs stretch (3.5-5.6 s for 0.45 s of work at load 20 on 2 cores), while a measured imbalance is in
  // CPU seconds; quiet, the granularity finding is 0.03 s against the imbalance's 0.2 s.
  const results::Diagnosis s = diagnose({slow_rank(), "--platform", PARAGON});
  ASSERT_FALSE(s.problems.empty());
  const results::Problem* imb = find(s, "imbalance", "compute before MPI_Sendrecv");
  ASSERT_NE(imb, nullptr);
  EXPECT_TRUE(has(imb->ranks, "rank 2 (max")) << imb->ranks;
  EXPECT_TRUE(imb->method.rfind("simulated (skeleton built from the trace", 0) == 0 ||
              has(imb->method, "not simulated: the skeleton built from the trace"))
      << imb->method;
  bool above = true;  // nothing but skeleton-only findings ranks above it
  for (const auto& p : s.problems) {
    if (&p == imb) above = false;
    if (above) {
      EXPECT_LT(p.measured_s, 0) << p.kind << " " << p.block << " ranks above the imbalance: " << p.method;
    }
    if (p.kind == "late_sender" || p.kind == "collective_wait") {
      EXPECT_LE(p.gain_s, imb->gain_s) << p.kind << " " << p.method;
    }
  }
}

TEST(DiagnoseTrace, RankFilesGiveTheSameDiagnosisAsTheirDirectory) {
  const std::string dir = slow_rank();
  std::vector<std::string> files;
  for (int r = 3; r >= 0; --r) files.push_back(dir + "/rank-" + std::to_string(r) + ".mkt");
  const results::Diagnosis a = diagnose({dir});
  const results::Diagnosis b = diagnose(files);
  ASSERT_EQ(a.problems.size(), b.problems.size());
  for (std::size_t i = 0; i < a.problems.size(); ++i) {
    EXPECT_EQ(a.problems[i].block, b.problems[i].block);
    EXPECT_EQ(a.problems[i].gain_s, b.problems[i].gain_s);
  }
}

TEST(DiagnoseTrace, InputKindIsFoundByContent) {
  const std::string dir = unmodified();
  const fs::path w = work_dir();
  // a skeleton under a trace-like name, a rank file under a JSON name
  fs::copy_file(SRC + "/tests/data/diagnose/late_sender.json", w / "skeleton.mkt", fs::copy_options::overwrite_existing);
  fs::copy_file(dir + "/rank-0.mkt", w / "rank0.json", fs::copy_options::overwrite_existing);
  EXPECT_EQ(sim::classify_diagnose_input({(w / "skeleton.mkt").string()}), sim::DiagnoseInput::SKELETON);
  EXPECT_EQ(sim::classify_diagnose_input({(w / "rank0.json").string()}), sim::DiagnoseInput::RANK_FILES);
  EXPECT_EQ(sim::classify_diagnose_input({dir}), sim::DiagnoseInput::TRACE_DIR);
  EXPECT_EQ(sim::classify_diagnose_input({dir + "/run.json"}), sim::DiagnoseInput::TRACE_DIR);
  std::ostringstream out, err;
  // the skeleton with a .mkt name is diagnosed as a skeleton (and so needs --P)
  EXPECT_EQ(sim::cmd_diagnose({(w / "skeleton.mkt").string(), "--platform", PARAGON}, out, err), 2);
  EXPECT_TRUE(has(err.str(), "--P")) << err.str();
  // one rank file alone: the other ranks are missing
  err.str("");
  EXPECT_NE(sim::cmd_diagnose({(w / "rank0.json").string()}, out, err), 0);
  EXPECT_TRUE(has(err.str(), "rank 1 of 4 not given")) << err.str();
}

TEST(DiagnoseTrace, CorruptTraceIsRefusedNamingTheFileAndOffset) {
  const fs::path copy = work_dir() / "corrupt";
  fs::remove_all(copy);
  fs::copy(unmodified(), copy);
  const fs::path rank2 = copy / "rank-2.mkt";
  {
    // an unknown record kind in record 3 (offset 48 + 3 * 64)
    std::fstream f(rank2, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(48 + 3 * 64);
    const unsigned char bad[2] = {0xEE, 0x0E};
    f.write(reinterpret_cast<const char*>(bad), 2);
  }
  std::ostringstream out, err;
  EXPECT_NE(sim::cmd_diagnose({copy.string()}, out, err), 0);
  EXPECT_TRUE(has(err.str(), "rank-2.mkt")) << err.str();
  EXPECT_TRUE(has(err.str(), "offset")) << err.str();
  // truncated in the middle of a record
  fs::remove_all(copy);
  fs::copy(unmodified(), copy);
  fs::resize_file(rank2, 48 + 5 * 64 + 20);
  err.str("");
  EXPECT_NE(sim::cmd_diagnose({copy.string()}, out, err), 0);
  EXPECT_TRUE(has(err.str(), "rank-2.mkt")) << err.str();
  EXPECT_TRUE(out.str().empty()) << out.str();
}
