// Calibration: statistics, the two-regime fit, the microbenchmark's output format, the database file, and real
// `mkcalib bench` runs with OpenMPI (quick mode), including a run killed halfway and resumed.
#include "calibration/bench.hpp"
#include "calibration/driver.hpp"
#include "calibration/fit.hpp"
#include "calibration/kernels.hpp"
#include "calibration/stats.hpp"
#include "results/calib_db.hpp"
#include "sim/cli/calib_cli.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using namespace mksim;
using calibration::Kernel;

namespace {

const std::string MKCALIB = std::string(MKSIM_BINARY_DIR) + "/sim/mkcalib";

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("mkcalib_test_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

struct CliRun {
  int code;
  std::string out, err;
};

CliRun mkcalib(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = sim::run_mkcalib(args, out, err);
  return {code, out.str(), err.str()};
}

results::CalibKernel sample_kernel(const std::string& name, double scale) {
  results::CalibKernel k;
  k.name = name;
  k.unit = "s";
  k.date_utc = "2024-01-02T03:04:05Z";
  k.wall_s = 1.25;
  for (std::uint64_t size : {1ull, 64ull, 4096ull}) {
    results::CalibSize s;
    s.size_bytes = size;
    s.iterations = 100 + size;
    s.times_s = {scale * 1e-6, scale * 1.1e-6, scale * 0.9e-6, scale * 9e-6};
    s.outlier = {0, 0, 0, 1};
    s.mean_s = scale * 3e-6;
    s.median_s = scale * 1.05e-6;
    s.stddev_s = 1.0 / 3.0;
    s.ci95_low_s = -1e-7;
    s.ci95_high_s = 7.1e-6;
    k.sizes.push_back(s);
  }
  k.fit = {{"short", 1, 64, 1e-6, 1e-10, 1e-3, 2}, {"long", 4096, 4096, 2e-6, 3e-10, 0, 1}};
  k.breakpoint_bytes = 4096;
  return k;
}

results::CalibDb sample_db() {
  results::CalibDb db;
  db.machine = "vm";
  db.date_utc = "2024-01-02T03:04:05Z";
  db.hostname = "host-1";
  db.mpi_library = "Open MPI v4.1.4, package: Debian";
  db.np = 2;
  db.config = "np=2 reps=4";
  db.kernels = {sample_kernel("pingpong", 1.0), sample_kernel("bcast", 2.0)};
  db.kernels[1].fit.clear();
  db.kernels[1].breakpoint_bytes = 0;
  return db;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

// --- statistics ---

TEST(CalibrationStats, MeanMedianAndStudentInterval) {
  const calibration::Summary s = calibration::summarize({1, 2, 3, 4, 5});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_NEAR(s.stddev, std::sqrt(2.5), 1e-12);
  const double half = 2.7764 * std::sqrt(2.5) / std::sqrt(5.0);
  EXPECT_NEAR(s.ci95_low, 3.0 - half, 1e-9);
  EXPECT_NEAR(s.ci95_high, 3.0 + half, 1e-9);
  EXPECT_EQ(s.outliers, 0u);
  EXPECT_DOUBLE_EQ(calibration::summarize({4, 1, 3, 2}).median, 2.5);
}

TEST(CalibrationStats, StudentQuantileMatchesTablesBeyondThirty) {
  EXPECT_NEAR(calibration::student_t_975(1), 12.706, 1e-3);
  EXPECT_NEAR(calibration::student_t_975(30), 2.042, 1e-3);
  EXPECT_NEAR(calibration::student_t_975(40), 2.021, 1e-3);
  EXPECT_NEAR(calibration::student_t_975(120), 1.980, 1e-3);
  EXPECT_THROW(calibration::student_t_975(0), std::invalid_argument);
}

TEST(CalibrationStats, OutlierIsFlaggedAndKept) {
  const std::vector<double> v = {10, 10.1, 9.9, 10.2, 9.8, 10, 100};
  const calibration::Summary s = calibration::summarize(v);
  ASSERT_EQ(s.outlier.size(), v.size());
  EXPECT_EQ(s.outliers, 1u);
  EXPECT_TRUE(s.outlier[6]);
  for (int i = 0; i < 6; ++i) EXPECT_FALSE(s.outlier[i]) << i;
  // kept: the mean and the interval still include it
  EXPECT_NEAR(s.mean, 160.0 / 7.0, 1e-12);
  EXPECT_GT(s.ci95_high, 40.0);
  EXPECT_DOUBLE_EQ(s.median, 10.0);
}

TEST(CalibrationStats, OutlierWhenMostValuesAreEqual) {
  const calibration::Summary s = calibration::summarize({1, 1, 1, 1, 5});
  EXPECT_EQ(s.mad, 0.0);
  EXPECT_EQ(s.outliers, 1u);
  EXPECT_TRUE(s.outlier[4]);
  EXPECT_EQ(calibration::summarize({2, 2, 2}).outliers, 0u);
  EXPECT_THROW(calibration::summarize({1.0}), std::invalid_argument);
  EXPECT_THROW(calibration::summarize({1.0, NAN}), std::invalid_argument);
}

// --- fits ---

TEST(CalibrationFit, LineIsExactOnALine) {
  const calibration::LineFit f = calibration::fit_line({1, 10, 100, 1000}, {2e-6 + 1e-9, 2e-6 + 1e-8, 2.1e-6, 3e-6});
  EXPECT_NEAR(f.rho_s, 2e-6, 1e-15);
  EXPECT_NEAR(f.beta_s_per_byte, 1e-9, 1e-18);
  EXPECT_LT(f.rel_rss, 1e-20);
  EXPECT_EQ(f.points, 4u);
  EXPECT_THROW(calibration::fit_line({8, 8}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(calibration::fit_line({1, 2}, {1, 0}), std::invalid_argument);
}

TEST(CalibrationFit, BreakpointRecoveredFromNoisyTwoRegimeData) {
  // short: 2 us + 0.1 ns/B below 8 KiB; long (rendezvous): 6 us + 0.2 ns/B; 2% multiplicative noise
  std::mt19937 rng(42);
  std::normal_distribution<double> noise(0.0, 0.02);
  std::vector<double> sizes, times;
  for (double d = 1; d <= 16 * 1024 * 1024; d *= 2)
    for (double size : {d, 1.5 * d}) {
      const double t = size < 8192 ? 2e-6 + 1e-10 * size : 6e-6 + 2e-10 * size;
      sizes.push_back(size);
      times.push_back(t * (1 + noise(rng)));
    }
  const calibration::TwoRegimeFit f = calibration::fit_two_regimes(sizes, times);
  EXPECT_EQ(f.breakpoint_bytes, 8192);
  EXPECT_NEAR(f.short_regime.rho_s, 2e-6, 0.05 * 2e-6);
  EXPECT_NEAR(f.long_regime.rho_s, 6e-6, 0.5 * 6e-6);  // small next to 16 MiB * beta: loosely determined
  EXPECT_NEAR(f.long_regime.beta_s_per_byte, 2e-10, 0.03 * 2e-10);
  EXPECT_EQ(f.short_regime.to_bytes, 6144);
  EXPECT_EQ(f.long_regime.from_bytes, 8192);
  EXPECT_EQ(f.short_regime.points + f.long_regime.points, sizes.size());
  EXPECT_NEAR(f.rel_rss, f.short_regime.rel_rss + f.long_regime.rel_rss, 1e-15);
}

TEST(CalibrationFit, TwoRegimesNeedEnoughSizes) {
  EXPECT_THROW(calibration::fit_two_regimes({1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}), std::invalid_argument);
  EXPECT_NO_THROW(calibration::fit_two_regimes({1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}));
}

// --- kernels, configuration, output format ---

TEST(CalibrationKernels, ListsAndGroups) {
  EXPECT_EQ(calibration::parse_kernel_list("all").size(), 16u);
  EXPECT_EQ(calibration::parse_kernel_list("patterns"), (std::vector<Kernel>{Kernel::SHIFT1D, Kernel::HALO2D, Kernel::HALO3D}));
  EXPECT_EQ(calibration::parse_kernel_list("compute,pingpong"), (std::vector<Kernel>{Kernel::PINGPONG, Kernel::COMPUTE}));
  EXPECT_EQ(calibration::parse_kernel_list("collectives,barrier").size(), 8u);
  EXPECT_EQ(calibration::parse_kernel_list("overheads").front(), Kernel::SEND_OVERHEAD);
  try {
    calibration::parse_kernel_list("pingpong,pingpang");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"pingpang\""), std::string::npos) << e.what();
  }
  for (Kernel k : calibration::all_kernels())
    EXPECT_EQ(calibration::kernel_from_name(calibration::kernel_name(k)), k);
}

TEST(CalibrationDriver, DefaultSizesAndCommand) {
  const calibration::BenchConfig full = calibration::default_config(false, 16u << 20, 4096, 2);
  EXPECT_EQ(full.message_sizes.front(), 1u);
  EXPECT_EQ(full.message_sizes.back(), 16u << 20);
  EXPECT_TRUE(std::is_sorted(full.message_sizes.begin(), full.message_sizes.end()));
  EXPECT_EQ(full.eager_sizes.back(), 4096u);
  const calibration::BenchConfig quick = calibration::default_config(true, 16u << 20, 2048, 2);
  EXPECT_EQ(quick.message_sizes, (std::vector<std::uint64_t>{1, 8, 64, 512, 4096, 32768, 262144}));
  EXPECT_NE(calibration::describe(full), calibration::describe(quick));
  EXPECT_EQ(calibration::sizes_for(quick, Kernel::BARRIER), (std::vector<std::uint64_t>{0}));
  const auto cmd = calibration::microbench_command({"mpirun", "/x/mb", {"--mca", "btl", "self,vader"}}, quick,
                                                   Kernel::STREAM);
  const std::vector<std::string> expected = {"mpirun", "--oversubscribe", "-np", "2", "--mca", "btl", "self,vader",
                                             "/x/mb", "--kernel", "stream", "--sizes", "1,8,64,512",
                                             "--reps", "5", "--warmup", "1", "--min-time", "0.0001"};
  EXPECT_EQ(cmd, expected);
}

TEST(CalibrationDriver, ParsesTheMicrobenchmarkOutput) {
  const std::string text =
      "mkcalib-microbench 1\nmeta kernel pingpong\nmeta np 2\nmeta unit s\nmeta hostname vm\n"
      "meta mpi_library Open MPI v4.1.4, package: Debian\n"
      "m 1 100 1.5e-06 1.25e-06 2e-06\nm 1024 10 3e-06 3.5e-06 3.25e-06\ndone pingpong 2\n";
  const calibration::MicrobenchOutput out = calibration::parse_microbench_output(Kernel::PINGPONG, text);
  EXPECT_EQ(out.np, 2);
  EXPECT_EQ(out.unit, "s");
  EXPECT_EQ(out.hostname, "vm");
  EXPECT_EQ(out.mpi_library, "Open MPI v4.1.4, package: Debian");
  ASSERT_EQ(out.sizes.size(), 2u);
  EXPECT_EQ(out.sizes[1].size_bytes, 1024u);
  EXPECT_EQ(out.sizes[1].iterations, 10u);
  EXPECT_EQ(out.sizes[1].times_s, (std::vector<double>{3e-06, 3.5e-06, 3.25e-06}));
}

TEST(CalibrationDriver, ParseErrorsNameTheKernelAndLine) {
  const std::string head = "mkcalib-microbench 1\nmeta kernel bcast\nmeta np 2\nmeta unit s\n";
  const auto message = [](const std::string& text) {
    try {
      calibration::parse_microbench_output(Kernel::BCAST, text);
    } catch (const calibration::ParseError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message(head + "m 8 10 1e-6 x\n"), "kernel bcast: line 5: bad time 'x': 'm 8 10 1e-6 x'");
  EXPECT_NE(message(head + "m 8 10 1e-6\n").find("kernel bcast: output ends at line 5 before 'done'"),
            std::string::npos);
  EXPECT_NE(message(head + "m 8 10 1e-6\ndone bcast 3\n").find("line 6: 'done' counts 3 sizes but 1"),
            std::string::npos);
  EXPECT_NE(message("mkcalib-microbench 1\nmeta kernel pingpong\n").find("line 2: output of kernel 'pingpong'"),
            std::string::npos);
  EXPECT_NE(message("").find("kernel bcast: no output"), std::string::npos);
}

TEST(CalibrationBench, RecordHasStatisticsAndFit) {
  calibration::MicrobenchOutput out;
  out.kernel = Kernel::PINGPONG;
  out.np = 2;
  out.unit = "s";
  for (double d = 1; d <= 1 << 20; d *= 4) {
    const double t = d < 4096 ? 1e-6 + 1e-10 * d : 5e-6 + 1e-10 * d;
    out.sizes.push_back({static_cast<std::uint64_t>(d), 10, {t, t * 1.01, t * 0.99, t * 5}});
  }
  const results::CalibKernel k = calibration::make_kernel_record(out, "2024-01-01T00:00:00Z", 2.0);
  ASSERT_EQ(k.sizes.size(), 11u);
  EXPECT_EQ(k.sizes[0].times_s.size(), 4u);   // every repetition kept,
  EXPECT_EQ(k.sizes[0].outlier[3], 1);        // the slow one flagged
  ASSERT_EQ(k.fit.size(), 2u);
  EXPECT_EQ(k.breakpoint_bytes, 4096u);
  EXPECT_NEAR(k.fit[0].rho_s, 1e-6, 2e-8);
  const std::string report = calibration::format_report({"m", "d", "h", "lib", 2, "cfg", {k}});
  EXPECT_NE(report.find("breakpoint               4096 B"), std::string::npos) << report;
  EXPECT_NE(report.find("(send_overhead not measured)"), std::string::npos) << report;
}

// --- the database file ---

TEST(CalibrationDb, RoundTripIsExactAndDeterministic) {
  TempDir dir;
  const results::CalibDb db = sample_db();
  results::write_calib_db(dir.file("a.h5"), db);
  results::write_calib_db(dir.file("b.h5"), db);
  EXPECT_EQ(results::read_calib_db(dir.file("a.h5")), db);
  EXPECT_EQ(read_bytes(dir.file("a.h5")), read_bytes(dir.file("b.h5")));
  results::CalibDb empty;
  results::write_calib_db(dir.file("empty.h5"), empty);
  EXPECT_EQ(results::read_calib_db(dir.file("empty.h5")), empty);
  for (const auto& entry : fs::directory_iterator(dir.file("")))
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
}

TEST(CalibrationDb, InvalidRecordsAreRefusedBeforeWriting) {
  TempDir dir;
  results::CalibDb db = sample_db();
  db.kernels[1].name = "pingpong";
  EXPECT_THROW(results::write_calib_db(dir.file("x.h5"), db), std::runtime_error);
  db = sample_db();
  db.kernels[0].sizes[0].outlier.pop_back();
  EXPECT_THROW(results::write_calib_db(dir.file("x.h5"), db), std::runtime_error);
  EXPECT_FALSE(fs::exists(dir.file("x.h5")));
}

TEST(CalibrationDb, CorruptOrTruncatedFileErrorNamesTheFile) {
  TempDir dir;
  const std::string good = dir.file("good.h5"), cut = dir.file("cut.h5"), junk = dir.file("junk.h5");
  results::write_calib_db(good, sample_db());
  const std::string bytes = read_bytes(good);
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::ofstream(junk) << "not an HDF5 file\n";
  for (const std::string& path : {cut, junk}) {
    try {
      results::read_calib_db(path);
      ADD_FAILURE() << path << " was read";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    }
    const CliRun show = mkcalib({"show", path});
    EXPECT_EQ(show.code, 2);
    EXPECT_NE(show.err.find("mkcalib: " + path + ": "), std::string::npos) << show.err;
    // bench refuses to resume it (and leaves it alone)
    const CliRun bench = mkcalib({"bench", "-np", "2", "--quick", "-o", path, "--kernels", "barrier"});
    EXPECT_EQ(bench.code, 2);
    EXPECT_NE(bench.err.find(path), std::string::npos) << bench.err;
  }
  EXPECT_EQ(read_bytes(cut), bytes.substr(0, bytes.size() / 2));
}

TEST(CalibrationCli, UsageErrors) {
  EXPECT_EQ(mkcalib({}).code, 2);
  EXPECT_EQ(mkcalib({"frobnicate"}).code, 2);
  EXPECT_EQ(mkcalib({"bench", "-np", "2"}).code, 2);  // no -o
  const CliRun unknown = mkcalib({"bench", "-np", "2", "-o", "/tmp/x.h5", "--kernels", "pong"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown kernel \"pong\""), std::string::npos) << unknown.err;
  EXPECT_EQ(mkcalib({"bench", "-np", "2", "-o", "/tmp/x.h5", "--reps", "1"}).code, 2);
  EXPECT_EQ(mkcalib({"bench", "-np", "1", "-o", "/tmp/x.h5", "--kernels", "pingpong"}).code, 2);
  EXPECT_EQ(mkcalib({"show", "/nonexistent/db.h5"}).code, 2);
}

// --- real runs with OpenMPI ---

TEST(CalibrationReal, QuickBenchGivesAPlausibleDatabase) {
  TempDir dir;
  const std::string db_path = dir.file("vm.h5");
  const CliRun run = mkcalib({"bench", "-np", "2", "--quick", "-o", db_path});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("16 kernel(s) measured, 0 already there"), std::string::npos) << run.out;

  const results::CalibDb db = results::read_calib_db(db_path);
  EXPECT_EQ(db.machine, "vm");  // the file name's stem
  EXPECT_EQ(db.np, 2);
  EXPECT_NE(db.mpi_library.find("MPI"), std::string::npos) << db.mpi_library;
  EXPECT_FALSE(db.hostname.empty());
  ASSERT_EQ(db.kernels.size(), 16u);
  for (std::size_t i = 0; i < db.kernels.size(); ++i) {
    const results::CalibKernel& k = db.kernels[i];
    EXPECT_EQ(k.name, calibration::kernel_name(calibration::all_kernels()[i]));
    ASSERT_FALSE(k.sizes.empty()) << k.name;
    for (const results::CalibSize& s : k.sizes) {
      EXPECT_EQ(s.times_s.size(), 5u) << k.name;
      EXPECT_LE(s.ci95_low_s, s.mean_s);
      EXPECT_GE(s.ci95_high_s, s.mean_s);
      for (double t : s.times_s) EXPECT_GT(t, 0) << k.name << " size " << s.size_bytes;
    }
  }
  const results::CalibKernel& pp = db.kernels[0];
  ASSERT_EQ(pp.name, "pingpong");
  ASSERT_EQ(pp.fit.size(), 2u);
  EXPECT_GT(pp.fit[0].rho_s, 0);
  EXPECT_LT(pp.fit[0].rho_s, 1e-3);
  EXPECT_GT(pp.fit[1].beta_s_per_byte, 0);
  // (that time grows with the size is checked by PingPongTimeGrowsWithSize, on enough repetitions to hold under load)
  EXPECT_EQ(db.kernels.back().unit, "s/flop");

  // read back exactly: the same records written again give the same bytes
  results::write_calib_db(dir.file("copy.h5"), db);
  EXPECT_EQ(read_bytes(dir.file("copy.h5")), read_bytes(db_path));
  EXPECT_EQ(results::read_calib_db(dir.file("copy.h5")), db);

  const CliRun show = mkcalib({"show", db_path});
  ASSERT_EQ(show.code, 0) << show.err;
  for (const char* text : {"kernel pingpong", "kernel compute", "pingpong regime", "breakpoint ",
                           "s (send overhead) ", "r (receive overhead) ", "o (per-message) ", "Mflop/s"})
    EXPECT_NE(show.out.find(text), std::string::npos) << text << "\n" << show.out;

  // everything is there: a rerun measures nothing
  const CliRun again = mkcalib({"bench", "-np", "2", "--quick", "-o", db_path});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("0 kernel(s) measured, 16 already there"), std::string::npos) << again.out;
  EXPECT_EQ(results::read_calib_db(db_path), db);
}

// The ping-pong's time grows with the message size (1 B < 32 KiB < 256 KiB; unloaded here about 0.4, 5 and 17 us).
// Two busy-polling ranks on a 2-core machine shared with other jobs: a repetition during which either rank lost its
// core measures the other job, so medians of 5 repetitions (the quick bench's) swapped 32 KiB and 256 KiB under load.
// Preemption only ever adds time, so the fastest of 21 repetitions of about 1 ms each is the figure compared: for the
// orders to swap, every one of the 21 repetitions of the smaller size must have been disturbed.
TEST(CalibrationReal, PingPongTimeGrowsWithSize) {
  TempDir dir;
  const std::string db_path = dir.file("pp.h5");
  const CliRun run = mkcalib({"bench", "-np", "2", "--kernels", "pingpong", "--sizes", "1,32768,262144", "--reps", "21",
                              "--warmup", "2", "-o", db_path});
  ASSERT_EQ(run.code, 0) << run.err;
  const results::CalibDb db = results::read_calib_db(db_path);
  ASSERT_EQ(db.kernels.size(), 1u);
  const auto& sizes = db.kernels[0].sizes;
  ASSERT_EQ(sizes.size(), 3u);
  std::vector<double> fastest;
  for (const auto& s : sizes) {
    ASSERT_EQ(s.times_s.size(), 21u);
    fastest.push_back(*std::min_element(s.times_s.begin(), s.times_s.end()));
    std::printf("pingpong %8llu B: fastest %.3f us, median %.3f us (21 repetitions)\n", static_cast<unsigned long long>(s.size_bytes),
                1e6 * fastest.back(), 1e6 * s.median_s);
  }
  EXPECT_GT(fastest[1], fastest[0]);      // 32 KiB vs 1 B
  EXPECT_GT(fastest[2], fastest[1]);      // 256 KiB vs 32 KiB
  EXPECT_GT(fastest[2], 4 * fastest[0]);  // 256 KiB vs 1 B: unloaded about 40x
}

TEST(CalibrationReal, KilledBenchKeepsWhatItMeasuredAndResumes) {
  TempDir dir;
  const std::string db_path = dir.file("resume.h5"), log_path = dir.file("killed.log");
  const std::vector<std::string> args = {"bench", "-np", "2", "--quick", "-o", db_path,
                                         "--kernels", "pingpong,halo2d,alltoall,compute"};
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FILE* log = std::freopen(log_path.c_str(), "w", stderr);
    if (log == nullptr) ::_exit(126);
    std::vector<char*> argv = {const_cast<char*>(MKCALIB.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(MKCALIB.c_str(), argv.data());
    ::_exit(127);
  }
  // wait until the first kernel is saved, then kill mkcalib (SIGTERM) while it measures the next one
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool saved = false;
  while (!saved && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    saved = fs::exists(db_path);  // atomic rename: it exists only once complete
  }
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(saved) << read_bytes(log_path);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << read_bytes(log_path);

  const results::CalibDb partial = results::read_calib_db(db_path);
  ASSERT_GE(partial.kernels.size(), 1u);
  ASSERT_LT(partial.kernels.size(), 4u) << "mkcalib finished before it was killed";
  EXPECT_EQ(partial.kernels[0].name, "pingpong");

  // the same arguments again: the saved kernels are skipped, the rest measured
  const CliRun resumed = mkcalib(args);
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("mkcalib: skipping pingpong (already in " + db_path + ")"), std::string::npos)
      << resumed.err;
  EXPECT_NE(resumed.out.find(std::to_string(4 - partial.kernels.size()) + " kernel(s) measured, " +
                             std::to_string(partial.kernels.size()) + " already there"),
            std::string::npos)
      << resumed.out;
  const results::CalibDb full = results::read_calib_db(db_path);
  ASSERT_EQ(full.kernels.size(), 4u);
  EXPECT_EQ(full.kernels[0].name, "pingpong");
  EXPECT_EQ(full.kernels[1].name, "halo2d");
  EXPECT_EQ(full.kernels[2].name, "alltoall");
  EXPECT_EQ(full.kernels[3].name, "compute");
  EXPECT_EQ(full.kernels[0], partial.kernels[0]);  // kept as measured, not measured again
  EXPECT_EQ(full.date_utc, partial.date_utc);

  // other options cannot resume this file
  std::vector<std::string> other = args;
  other.push_back("--reps");
  other.push_back("7");
  const CliRun mismatch = mkcalib(other);
  EXPECT_EQ(mismatch.code, 2);
  EXPECT_NE(mismatch.err.find("was measured with other options"), std::string::npos) << mismatch.err;
  EXPECT_EQ(results::read_calib_db(db_path), full);
}
