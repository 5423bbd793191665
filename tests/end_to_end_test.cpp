// The user's path end to end on this machine (README "Two commands"; DESIGN.md "The user and the job"): a real MPI
// program (skeletons/apps/atm2d) traced with mktrace at a few problem sizes, its skeleton built with mkskel, a platform
// calibrated for this machine with mkcalib (the network from its point-to-point microbenchmarks; the skeleton's
// compute is this machine's CPU seconds, from the traces), a size and step count never traced predicted with mksim,
// and the prediction compared with measured runs of that size. Every step runs the binaries, as a user would.
//
// It runs in CI on a 2-core machine that other jobs may share, so what is compared is chosen to hold under load
// rather than skipped when there is load:
//  - the traces carry the CPU time of every compute gap (MKTRACE_CPU_TIME=1), so a rank that lost its core for a
//    while does not put the other job's time into the skeleton;
//  - the measured runs are traced the same way (5 runs): per rank, the CPU time of its computation between MPI_Init
//    and MPI_Finalize (the sum of its gaps) and the wall time of that span. The computation's CPU time does not
//    depend on the other jobs: the prediction's compute (the replay's), as the mean over ranks, is compared with the
//    ranks' mean, within 10% plus three times the repetitions' spread (median absolute deviation over the median);
//    per rank, this VM's cores differ for stretches of minutes (see step 6);
//  - the predicted time is compared with the runs' spans: at least the ranks' least mean computation (CPU time), at
//    most the runs' median span (the fastest span would be the bound on undisturbed time if only other jobs varied,
//    but this VM's own speed changes between stretches of seconds, and one fast run among five made the fastest span
//    a bound the prediction, traced in a slower stretch, could not meet). The prediction must lie in
//    [lower (1 - tol), upper (1 + tol)], tol = 10% plus three times the spread of the computation's CPU time. Quiet,
//    the two bounds are 2-5% apart here (communication is that small a share); the figures are printed either way.
#include "results/hdf5_io.hpp"
#include "skeletons/trace/reader.hpp"
#include "tests/process_util.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::string BIN = MKSIM_BINARY_DIR;
const std::string MPI_ENV = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ";
constexpr int P = 2;

/** @brief Runs a shell command; its exit code and its output (stdout and stderr). */
std::pair<int, std::string> sh(const std::string& cmd) { return mksim::test::shell(cmd + " 2>&1"); }

/** @brief One measured (traced) run: per rank, the wall time from the exit of MPI_Init to the entry of MPI_Finalize,
 *  and the CPU time of the computation in between (the sum of the gaps' CPU times). */
struct Measured {
  std::vector<double> span, cpu;
};

Measured measured_from_trace(const std::string& dir) {
  const mksim::trace::Run run = mksim::trace::read_run(dir, {.require_complete = true});
  Measured m;
  for (const auto& rank : run.ranks) {
    double start = -1, end = -1, cpu = 0, prev_exit = 0;
    for (const auto& e : rank.events) {
      if (e.kind == mksim::trace::Kind::INIT) {
        start = e.t_exit;
      } else if (start >= 0 && end < 0) {
        EXPECT_GE(e.cpu_gap, 0) << dir << ": the trace has no CPU times of its gaps";
        cpu += e.gap_after(prev_exit);
        if (e.kind == mksim::trace::Kind::FINALIZE) end = e.t_enter;
      }
      prev_exit = e.t_exit;
    }
    EXPECT_GE(start, 0) << dir;
    EXPECT_GT(end, start) << dir;
    m.span.push_back(end - start);
    m.cpu.push_back(cpu);
  }
  return m;
}

/** @brief The repetitions' spread: median absolute deviation over the median (one disturbed run does not set it). */
double spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const double median = v[v.size() / 2];
  std::vector<double> dev;
  for (double x : v) dev.push_back(std::fabs(x - median));
  std::sort(dev.begin(), dev.end());
  return dev[dev.size() / 2] / median;
}

}  // namespace

TEST(EndToEnd, TracedSkeletonPredictsAnUntracedSizeOnACalibratedPlatform) {
  const fs::path dir = fs::temp_directory_path() / ("mksim_end_to_end_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string app = BIN + "/apps/atm2d";

  // 1. trace: P = 2, N = 512, 1024, 1536 (20 steps) and N = 1024 with 30 steps, so that steps is regressed too
  const std::vector<std::pair<int, int>> training = {{512, 20}, {1024, 20}, {1536, 20}, {1024, 30}};
  std::vector<std::string> traces;
  for (const auto& [N, steps] : training) {
    const std::string name = "atm2d-" + std::to_string(N) + "-" + std::to_string(steps);
    const std::string cmd = MPI_ENV + "MKTRACE_CPU_TIME=1 " + BIN + "/trace/mktrace -np " + std::to_string(P) + " --param N=" +
                            std::to_string(N) + " --param steps=" + std::to_string(steps) + " -o " + (dir / name).string() + " -- " +
                            app + " " + std::to_string(N) + " " + std::to_string(steps);
    const auto [rc, out] = sh(cmd);
    ASSERT_EQ(rc, 0) << cmd << "\n" << out;
    traces.push_back((dir / name).string());
  }

  // 2. the skeleton
  const std::string skel = (dir / "atm2d.skel.json").string();
  std::string cmd = BIN + "/sim/mkskel build";
  for (const auto& t : traces) cmd += " " + t;
  cmd += " -o " + skel;
  const auto [rc, out] = sh(cmd);
  ASSERT_EQ(rc, 0) << out;
  std::printf("%s", out.substr(0, 400).c_str());

  // 3. a platform for this machine: the network's figures from the point-to-point microbenchmarks, in the T3E's layout
  const std::string db = (dir / "vm.h5").string(), platform = (dir / "vm.xml").string();
  const auto [rc_bench, bench] = sh(MPI_ENV + BIN + "/sim/mkcalib bench -np 2 --quick --kernels p2p,overheads -o " + db);
  ASSERT_EQ(rc_bench, 0) << bench;
  const auto [rc_fit, fit] = sh(BIN + "/sim/mkcalib fit --platform t3e --db " + db + " -o " + platform);
  ASSERT_EQ(rc_fit, 0) << fit;

  // 4. predict a size and a step count never traced
  const int N = 1280, steps = 25;
  const std::string h5 = (dir / "predicted.h5").string();
  const std::string predict = BIN + "/sim/mksim --platform " + platform + " --P 2 --skeleton " + skel + " --param N=" +
                              std::to_string(N) + ",steps=" + std::to_string(steps) + " -o " + h5;
  const auto [rc_predict, predict_out] = sh(predict);
  ASSERT_EQ(rc_predict, 0) << predict_out;
  const auto predicted = mksim::results::read_run_hdf5(h5);
  ASSERT_EQ(predicted.ranks.size(), static_cast<std::size_t>(P));

  // 5. measure that size: 5 runs, traced as the training runs were
  std::vector<Measured> runs;
  for (int rep = 0; rep < 5; ++rep) {
    const std::string name = "measured-" + std::to_string(rep);
    const std::string run = MPI_ENV + "MKTRACE_CPU_TIME=1 " + BIN + "/trace/mktrace -np " + std::to_string(P) + " -o " +
                            (dir / name).string() + " -- " + app + " " + std::to_string(N) + " " + std::to_string(steps);
    const auto [rc_run, run_out] = sh(run);
    ASSERT_EQ(rc_run, 0) << run << "\n" << run_out;
    runs.push_back(measured_from_trace((dir / name).string()));
    ASSERT_EQ(runs.back().cpu.size(), static_cast<std::size_t>(P));
  }

  // 6. compare. The computation in CPU time, as the mean over ranks: the program is balanced (each rank updates
  // N*N/2 cells), and the skeleton keeps it balanced (issue 17, "Noise"). This machine is not: in some stretches of
  // minutes the rank on core 0 takes 20-25% more CPU time than the other for the same work (0.18 against 0.14 s here,
  // in every repetition), in others the two agree within 2%; traced in one stretch and measured in another, a
  // per-rank comparison measures the cores, not the prediction. Per rank, the figures are printed.
  std::printf("predicted (mksim, N=%d steps=%d P=%d, platform calibrated here): %.6f s; compute", N, steps, P, predicted.predicted_time_s);
  double predicted_mean = 0;
  for (const auto& r : predicted.ranks) {
    std::printf(" %.6f", r.compute_s);
    predicted_mean += r.compute_s / P;
  }
  std::printf(" s per rank\n");
  std::vector<double> run_mean;  // per run, the ranks' mean computation
  for (const auto& m : runs) {
    double sum = 0;
    for (double c : m.cpu) sum += c;
    run_mean.push_back(sum / P);
  }
  for (int r = 0; r < P; ++r) {
    std::vector<double> cpu;
    for (const auto& m : runs) cpu.push_back(m.cpu[r]);
    std::sort(cpu.begin(), cpu.end());
    std::printf("rank %d: computation %.6f s CPU (median of %zu runs, deviation %.1f%%); predicted %.6f s: %+.1f%%\n", r,
                cpu[cpu.size() / 2], cpu.size(), 100 * spread(cpu), predicted.ranks[r].compute_s,
                100 * (predicted.ranks[r].compute_s - cpu[cpu.size() / 2]) / cpu[cpu.size() / 2]);
  }
  std::vector<double> sorted_mean = run_mean;
  std::sort(sorted_mean.begin(), sorted_mean.end());
  const double median = sorted_mean[sorted_mean.size() / 2], sp = spread(run_mean), tol = 0.10 + 3 * sp;
  const double err = (predicted_mean - median) / median;
  std::printf("ranks' mean: computation %.6f s CPU (median of %zu runs, deviation %.1f%%); predicted %.6f s: %+.1f%% (tolerance %.1f%%)\n",
              median, run_mean.size(), 100 * sp, predicted_mean, 100 * err, 100 * tol);
  EXPECT_LE(std::fabs(err), tol) << "predicted computation against the measured CPU time (mean over ranks)";
  // ...and the whole run: at least the ranks' mean computation (the least a balanced program's span can be on cores
  // that are alike), at most the runs' median span. Not the fastest run's: the machine's speed also changes between
  // stretches of seconds (CPU times of the same run 0.13-0.23 s, 2026-11-29), so one fast run among five put the
  // fastest span 30% under the others, and under a prediction from traces of a slower stretch (2 failures in 4).
  double lower = sorted_mean.front();
  std::vector<double> spans;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    spans.push_back(*std::max_element(runs[i].span.begin(), runs[i].span.end()));
    std::printf("run %zu: span %.6f s (slowest rank), computation %.6f + %.6f s CPU\n", i, spans.back(), runs[i].cpu[0], runs[i].cpu[1]);
  }
  std::sort(spans.begin(), spans.end());
  const double upper = spans[spans.size() / 2];
  const double T = predicted.predicted_time_s;
  std::printf("measured time in [%.6f, %.6f] s (ranks' least mean computation, median span; the fastest span %.6f): prediction "
              "%+.1f%% of the lower bound, %+.1f%% of the upper; tolerance %.1f%%\n",
              lower, upper, spans.front(), 100 * (T - lower) / lower, 100 * (T - upper) / upper, 100 * tol);
  EXPECT_GE(T, lower * (1 - tol)) << "the prediction is below the measured computation alone";
  EXPECT_LE(T, upper * (1 + tol)) << "the prediction is above the measured runs' median span";
  fs::remove_all(dir);
}
