// mkcalib fit / validate (issue 6): the runs CSV reader, the fit's refusals, and seed 000 table 1 (ATM2D on the
// Paragon) predicted from rows the platform was not fitted on. Real runs on this machine: tests/end_to_end_test.cpp
// (in CI) and bench/calibration_heldout.py (the longer fit from runs at P = 1 and 2, a benchmark).
#include "calibration/fit_platform.hpp"
#include "calibration/measured_runs.hpp"
#include "sim/cli/calib_cli.hpp"
#include "skeletons/skeleton_io.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <cstring>
#include <sstream>

namespace fs = std::filesystem;
using namespace mksim;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;

std::string temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("mkcalib_fit_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

int mkcalib(const std::vector<std::string>& args, std::string* out_text = nullptr, std::string* err_text = nullptr) {
  std::ostringstream out, err;
  const int code = sim::run_mkcalib(args, out, err);
  if (out_text) *out_text = out.str();
  if (err_text) *err_text = err.str();
  return code;
}

double mean_abs(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::fabs(x);
  return s / static_cast<double>(v.size());
}

}  // namespace

TEST(MeasuredRuns, ParsesHeaderCommentsAndRows) {
  const auto r = calibration::parse_measured_runs("# source\nP,N,time_s\n4,256,0.5\n\n8, 512 ,1.5e0\n", "x.csv", {"N", "steps"});
  EXPECT_EQ(r.comments, std::vector<std::string>{"source"});
  EXPECT_EQ(r.param_columns, std::vector<std::string>{"N"});
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[1].P, 8);
  EXPECT_EQ(r.runs[1].params.at("N"), 512);
  EXPECT_EQ(r.runs[1].time_s, 1.5);
  EXPECT_EQ(r.runs[1].line, 5);
}

TEST(MeasuredRuns, ErrorsNameFileAndLine) {
  auto msg = [](const std::string& text) {
    try {
      calibration::parse_measured_runs(text, "runs.csv", {"N"});
    } catch (const calibration::RunsError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(msg("P,lambda,time_s\n"), "runs.csv:1: unknown column \"lambda\" (expected P, time_s and the skeleton's parameters: N)");
  EXPECT_EQ(msg("P,N\n4,1\n"), "runs.csv:1: the header has no column time_s (measured time in seconds)");
  EXPECT_EQ(msg("P,N,time_s\n4,256,0.5\n4,256\n"), "runs.csv:3: 2 field(s), the header has 3: \"4,256\"");
  EXPECT_EQ(msg("P,N,time_s\n4,25x,0.5\n"), "runs.csv:2: column N: \"25x\" is not a number");
  EXPECT_EQ(msg("P,N,time_s\n2.5,256,0.5\n"), "runs.csv:2: P must be a positive integer, not \"2.5\"");
  EXPECT_EQ(msg("P,N,time_s\n4,256,0\n"), "runs.csv:2: time_s must be positive, not \"0\"");
  EXPECT_EQ(msg("# only a comment\n"), "runs.csv: no header line (expected e.g. \"P,N,time_s\")");
}

TEST(FitPlatform, BaseReadBackGivesTheBundledFile) {
  // a bundled platform read back as a spec regenerates exactly (no figure taken as an override)
  for (const char* m : {"paragon", "t3e", "ipsc860"}) {
    const auto b = calibration::read_base_platform(SRC + "/platforms/" + m + ".xml");
    std::ifstream f(SRC + "/platforms/" + m + ".xml");
    std::stringstream s;
    s << f.rdbuf();
    EXPECT_EQ(platforms::generate_platform_xml(b.spec), s.str()) << m;
  }
}

TEST(FitPlatform, InconsistentOrUnfittableRunsWriteNoFile) {
  const std::string dir = temp_dir("refuse");
  {
    std::ofstream f(dir + "/dup.csv");
    f << "P,N,steps,time_s\n4,256,30,0.8\n4,256,30,2.0\n";
  }
  std::string out, err;
  EXPECT_EQ(mkcalib({"fit", "--platform", "paragon", "--runs", dir + "/dup.csv", "--skeleton", "atm2d", "-o", dir + "/x.xml"}, &out, &err), 2);
  EXPECT_NE(err.find("dup.csv:3: the same run as line 2 with a time 2.5x different: inconsistent measurements"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir + "/x.xml"));
  {
    // time falling as N grows: no positive speed, latency or bandwidth reproduces it
    std::ofstream f(dir + "/bad.csv");
    f << "P,N,steps,time_s\n4,256,30,5.0\n4,1024,30,0.1\n";
  }
  EXPECT_EQ(mkcalib({"fit", "--platform", "paragon", "--runs", dir + "/bad.csv", "--skeleton", "atm2d", "-o", dir + "/x.xml"}, &out, &err), 1);
  EXPECT_NE(err.find("mkcalib: fit failed: "), std::string::npos) << err;
  EXPECT_NE(err.find("no platform written"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(dir + "/x.xml"));
  {
    std::ofstream f(dir + "/cols.csv");
    f << "P,lambda,time_s\n4,128,0.8\n";
  }
  EXPECT_EQ(mkcalib({"fit", "--platform", "paragon", "--runs", dir + "/cols.csv", "--skeleton", "atm2d", "-o", dir + "/x.xml"}, &out, &err), 2);
  EXPECT_NE(err.find("cols.csv:1: unknown column \"lambda\""), std::string::npos) << err;
  fs::remove_all(dir);
}

// Acceptance (issue 6, made out of sample by issue 21): seed 000 table 1 (ATM2D on the Paragon), predicted from
// rows the platform was not fitted on. Every input comes from the paper's text or from a fit to the training rows,
// none from MK's predicted column:
//  - from the text (s.5.2): 120 us latency, 30 MB/s, alpha = 30 us of skew per synchronous phase and sqrt(P), four
//    exchanges of 2 lambda values per step, Theta(lambda^2) work per step, square domains of edge lambda (so
//    N = lambda sqrt(P)): the bundled platforms/paragon.xml and skeletons/examples/atm2d.json;
//  - not in the text: the number of time steps (the paper never gives it) and the node speed times the work per
//    point. T is linear in both: T = steps * (C + D / speed'), C the communication and skew of one step, D its work
//    (the model on the bundled Paragon at steps = 1, with and without work). A least-squares fit of the training
//    rows' relative errors gives steps (rounded) and then `mkcalib fit --fit speed` the node speed.
// Two experiments, both reported as the paper did (mean |error| over all 18 rows) and over the rows not fitted on:
//  (a) the three P = 4 rows fit steps and speed; the 15 others are held out;
//  (b) MK's setting, one run (P = 4, lambda = 128): it fits the speed alone, at the steps of (a) (one run cannot
//      separate steps from speed; MK had the loop count from its trace); the 17 others are held out.
namespace {

struct Table1Rows {
  std::vector<calibration::MeasuredRun> rows;  ///< the 18 rows, in the table's order
};

/** @brief The runs file text of `rows` at `steps`. */
std::string runs_csv(const std::vector<calibration::MeasuredRun>& rows, int steps) {
  std::ostringstream o;
  o.precision(10);
  o << "# seed 000 table 1 rows (calibration/data/atm2d_paragon_table1.csv), steps fitted to the training rows\nP,N,steps,time_s\n";
  for (const auto& r : rows) o << r.P << "," << r.params.at("N") << "," << steps << "," << r.time_s << "\n";
  return o.str();
}

/** @brief Least squares of min sum ((a C_i + b D_i) / T_i - 1)^2: the steps a and the work term b of the rows. */
std::pair<double, double> fit_steps(const std::vector<double>& C, const std::vector<double>& D, const std::vector<double>& T) {
  double cc = 0, cd = 0, dd = 0, c1 = 0, d1 = 0;
  for (std::size_t i = 0; i < T.size(); ++i) {
    const double c = C[i] / T[i], d = D[i] / T[i];
    cc += c * c, cd += c * d, dd += d * d, c1 += c, d1 += d;
  }
  const double det = cc * dd - cd * cd;
  return {(c1 * dd - d1 * cd) / det, (cc * d1 - cd * c1) / det};
}

enum class Method { MODEL, REPLAY, REPLAY_NOISE };

/// Draws of the OS noise per row for the replay with the skew (the column replay+noise_s): the mean of 4
constexpr int NOISE_SEEDS = 4;

double mean_abs_where(const std::vector<calibration::ValidationRow>& rows, Method m, const std::function<bool(std::size_t)>& take) {
  std::vector<double> v;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (take(i))
      v.push_back(calibration::rel_error(m == Method::MODEL ? rows[i].model_s : m == Method::REPLAY ? rows[i].replay_s : rows[i].replay_noise_s,
                                         rows[i].run.time_s));
  return mean_abs(v);
}

}  // namespace

// Table 1 of seed 000 (ATM2D on the Paragon, 18 rows), the steps its rows carry fitted to the P = 4 rows (the same
// for both experiments below, which each test runs on its own: under the sanitizers each takes minutes).
struct Table1 {
  std::string dir;
  mksim::skeletons::Skeleton sk;
  calibration::MeasuredRuns table, all;
  std::vector<calibration::MeasuredRun> p4;  // the training rows of (a)
};

Table1 load_table1(const std::string& name) {
  Table1 t{temp_dir(name), skeletons::load_skeleton(SRC + "/skeletons/examples/atm2d.json"),
           calibration::read_measured_runs(SRC + "/calibration/data/atm2d_paragon_table1.csv", {"N", "steps", "flops_per_point", "value_bytes"}),
           {}, {}};
  EXPECT_EQ(t.table.runs.size(), 18u);
  for (const auto& r : t.table.runs)
    if (r.P == 4) t.p4.push_back(r);
  EXPECT_EQ(t.p4.size(), 3u);

  // one step's communication C and work D at each training row, on the bundled Paragon (the model, as the fit uses)
  calibration::MeasuredRuns unit;
  for (const auto& r : t.p4)
    for (double fpp : {0.0, 60.0}) {
      calibration::MeasuredRun u = r;
      u.params = {{"N", r.params.at("N")}, {"steps", 1}, {"flops_per_point", fpp}};
      unit.runs.push_back(u);
    }
  const auto per_step = calibration::validate_platform(SRC + "/platforms/paragon.xml", t.sk, unit);
  std::vector<double> C, D, T;
  for (std::size_t i = 0; i < t.p4.size(); ++i) {
    C.push_back(per_step[2 * i].model_s);
    D.push_back(per_step[2 * i + 1].model_s - per_step[2 * i].model_s);
    T.push_back(t.p4[i].time_s);
  }
  const auto [a, b] = fit_steps(C, D, T);
  const int steps = static_cast<int>(std::lround(a));
  std::printf("fitted to the P = 4 rows: steps = %.2f (rounded %d), work %.4g x the bundled Paragon's per step\n", a, steps, b / a);
  EXPECT_GE(steps, 1);
  // the committed runs files carry this fitted value (the README's mkcalib examples use them)
  for (const std::string f : {"atm2d_paragon_table1.csv", "atm2d_paragon_p4.csv"})
    for (const auto& r : calibration::read_measured_runs(SRC + "/calibration/data/" + f, {"N", "steps"}).runs)
      EXPECT_EQ(r.params.at("steps"), steps) << f << " line " << r.line << ": regenerate it with the fitted steps";

  const std::string all_csv = t.dir + "/all.csv";
  std::ofstream(all_csv) << runs_csv(t.table.runs, steps);
  t.all = calibration::read_measured_runs(all_csv, {"N", "steps"});
  EXPECT_EQ(t.all.runs.size(), 18u);
  return t;
}

struct Experiment {
  std::string name;
  std::vector<calibration::MeasuredRun> train;
  std::function<bool(std::size_t)> held;  // by row index in the table
  double held_model, held_replay;         // bounds on the held-out means: the figure measured + about 0.6 point
  bool noise;                             // also replay under the OS noise calibrated to the skew (issue 18)
};

// Measured (deterministic: the same inputs give the same figures): (a) held out model 3.20%, replay 4.73% (over
// all 18: 2.77%, 4.11%); (b) held out model 2.88%, replay 4.11% (over all 18: 2.72%, 3.95%). The paper: 9.14%.
// (b) again with the replay under the OS noise calibrated to the platform's skew alpha (the model's skew term in
// replay, issue 18; 4 draws per row, the program-level gain per P): held out 2.79%, over all 18 2.65% (model
// 2.88%, 2.72%); measured once for (a) too: held out 3.10%, all 18 2.68% (model 3.20%, 2.77%). Only (b) runs it here
// (the gain's calibration replays cost about a minute per experiment).
void run_experiment(const Table1& t, const Experiment& e) {
  const int steps = static_cast<int>(t.all.runs.front().params.at("steps"));
  const std::string train = t.dir + "/train.csv", cal = t.dir + "/paragon-atm2d.xml";
  std::ofstream(train) << runs_csv(e.train, steps);
  std::string out, err;
  ASSERT_EQ(mkcalib({"fit", "--platform", "paragon", "--runs", train, "--skeleton", "atm2d", "--fit", "speed", "-o", cal}, &out, &err), 0)
      << err;
  std::cout << e.name << ":\n" << out;
  EXPECT_NE(out.find("fitted    node_speed_flops"), std::string::npos) << out;
  EXPECT_NE(out.find("fixed     nic_latency_s"), std::string::npos) << out;  // the text's figures stay
  // the replay also under the OS noise calibrated to the platform's alpha (issue 18): the model's skew term in replay
  const auto rows = calibration::validate_platform(cal, t.sk, t.all, e.noise ? NOISE_SEEDS : 0);
  std::cout << calibration::format_validation(rows, t.all.param_columns);
  const auto every = [](std::size_t) { return true; };
  const double held_model = mean_abs_where(rows, Method::MODEL, e.held), held_replay = mean_abs_where(rows, Method::REPLAY, e.held);
  const double held_noise = e.noise ? mean_abs_where(rows, Method::REPLAY_NOISE, e.held) : -1;
  const double all_model = mean_abs_where(rows, Method::MODEL, every), all_replay = mean_abs_where(rows, Method::REPLAY, every);
  const double all_noise = e.noise ? mean_abs_where(rows, Method::REPLAY_NOISE, every) : -1;
  std::printf("%s: mean |error| over the %d held-out rows: model %.2f%%, replay %.2f%%, replay with noise %.2f%%; over all 18 (as the "
              "paper): model %.2f%%, replay %.2f%%, replay with noise %.2f%% (paper: 9.14%%)\n",
              e.name.c_str(), static_cast<int>(18 - e.train.size()), 100 * held_model, 100 * held_replay, 100 * held_noise,
              100 * all_model, 100 * all_replay, 100 * all_noise);
  std::fflush(stdout);
  EXPECT_LT(held_model, e.held_model) << e.name;
  EXPECT_LT(held_replay, e.held_replay) << e.name;
  // below the paper's own mean error (9.14% over the 18 rows, from one trace), by both methods
  EXPECT_LT(all_model, 0.0914) << e.name;
  EXPECT_LT(all_replay, 0.0914) << e.name;
  if (e.noise) {  // with the skew in, replay is as close as the model (within half a point), closer than without
    EXPECT_LT(held_noise, held_model + 0.005) << e.name;
    EXPECT_LT(all_noise, all_model + 0.005) << e.name;
    EXPECT_LT(all_noise, all_replay) << e.name;
  }
}

TEST(FitPlatform, Seed000Table1FromP4RowsPredictsTheOthers) {
  const Table1 t = load_table1("table1a");
  const auto& table = t.table;
  run_experiment(t, {"(a) the three P = 4 rows", t.p4, [&](std::size_t i) { return table.runs[i].P != 4; }, 0.038, 0.053, false});
  fs::remove_all(t.dir);
}

TEST(FitPlatform, Seed000Table1FromMksSingleRunWithOsNoise) {
#ifdef __SANITIZE_ADDRESS__
  // 430-670 s under the sanitizers (each simulated rank a thread there), the longest test of CI's second pass, for
  // figures the release build checks; the same fit and validation run under them in the test above, and the noise
  // replay (NoiseLoad, program_noise_gain, replay_load_seeds) in load_test's Noise tests.
  GTEST_SKIP() << "the release build checks this experiment's figures";
#endif
  const Table1 t = load_table1("table1b");
  run_experiment(t, {"(b) MK's single run, P = 4, lambda = 128", {t.p4[0]}, [](std::size_t i) { return i != 0; }, 0.035, 0.047, true});
  fs::remove_all(t.dir);
}
