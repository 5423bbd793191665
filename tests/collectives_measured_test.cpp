// Measured collectives in replay and the model (issue 6, `--collectives`): a real collective-only MPI program
// (tests/coll_loop.c) timed with OpenMPI here at np 2 and 3, predicted on a platform fitted to this machine
// (mkcalib bench --quick + mkcalib fit) with and without databases measured here at np 2 and 4; np 3 is in none
// of them (interpolated in log2(P)). Everything runs through the real mksim / mkcalib binaries (one SimGrid
// engine per process).
#include "results/hdf5_io.hpp"
#include "results/sweep_table.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;

namespace {

const std::string SK = std::string(MKSIM_SOURCE_DIR) + "/tests/data/coll_loop.json";

/** @brief Runs a shell command; returns its exit status and fills `out` with its stdout and stderr. */
int run(const std::string& cmd, std::string& out) {
  out.clear();
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int st = ::pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string mpi_env() { return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class MeasuredCollectives : public ::testing::Test {
 protected:
  static inline fs::path dir;
  static inline std::string platform, dbs;

  static void SetUpTestSuite() {
    dir = fs::temp_directory_path() / ("mksim_coll_measured_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::string out;
    // a platform for this machine: the default quick database at np 2, its figures written into the T3E's layout
    const std::string vm = (dir / "vm.h5").string();
    platform = (dir / "vm.xml").string();
    ASSERT_EQ(run(mpi_env() + MKCALIB_BIN " bench -np 2 --quick -o " + vm, out), 0) << out;
    ASSERT_EQ(run(std::string(MKCALIB_BIN " fit --platform t3e --db ") + vm + " -o " + platform, out), 0) << out;
    // the collective databases, np 2 and 4
    for (const char* np : {"2", "4"}) {
      const std::string db = (dir / (std::string("coll-np") + np + ".h5")).string();
      ASSERT_EQ(run(mpi_env() + MKCALIB_BIN " bench -np " + np + " --quick --kernels barrier,allreduce,bcast -o " + db, out), 0) << out;
      dbs += (dbs.empty() ? "" : ",") + db;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir); }

  static double replayed(int P, bool with_db) {
    const std::string h5 = (dir / ("run-" + std::to_string(P) + (with_db ? "-db" : "") + ".h5")).string();
    std::string out;
    const std::string cmd = std::string(MKSIM_BIN " predict --platform ") + platform + " --P " + std::to_string(P) + " --skeleton " + SK +
                            " -o " + h5 + (with_db ? " --collectives " + dbs : "");
    EXPECT_EQ(run(cmd, out), 0) << cmd << "\n" << out;
    return mksim::results::read_run_hdf5(h5).predicted_time_s;
  }

  static double modelled(int P, bool with_db) {
    std::string out;
    const std::string cmd = std::string(MKSIM_BIN " model --no-skew --format json --platform ") + platform + " --P " + std::to_string(P) +
                            " --skeleton " + SK + (with_db ? " --collectives " + dbs : "");
    EXPECT_EQ(run(cmd, out), 0) << cmd << "\n" << out;
    return nlohmann::json::parse(out).at("T_s").get<double>();
  }
};

// Replay (ranks meet, then each takes the measured t) and the model (the term coll_KIND(P, m) = a + b*log2(P))
// use the same numbers, so on a collective-only skeleton they agree to rounding, inside and outside the measured
// rank counts; the run records the databases, the fit and what was extrapolated; a sweep's children use them too.
TEST_F(MeasuredCollectives, ReplayAndModelAgree) {
  for (int P : {2, 3, 4, 8}) {
    const double r = replayed(P, true), m = modelled(P, true);
    EXPECT_NEAR(r, m, 1e-9 * m) << "P=" << P;
    // and the databases changed both (the algorithms over the fitted network give something else)
    EXPECT_GT(std::fabs(r - replayed(P, false)), 1e-6 * r) << "P=" << P;
  }
  const auto res = mksim::results::read_run_hdf5((dir / "run-8-db.h5").string());
  std::map<std::string, std::string> a(res.attributes.begin(), res.attributes.end());
  EXPECT_EQ(a["collectives.databases"], dbs);
  EXPECT_NE(a["collectives.measured"].find("allreduce: np 2,4"), std::string::npos) << a["collectives.measured"];
  EXPECT_NE(a["collectives.extrapolated"].find("P=8 is outside the measured rank counts 2..4"), std::string::npos);
  EXPECT_EQ(mksim::results::read_run_hdf5((dir / "run-3-db.h5").string()).attributes.size() + 1, res.attributes.size())
      << "P=3 is interpolated: no extrapolation attribute";

  std::string out;
  const std::string sweep = (dir / "sweep.h5").string();
  ASSERT_EQ(run(std::string(MKSIM_BIN " sweep --quiet --mode both --platform ") + platform + " --P 3,8 --skeleton " + SK + " -o " + sweep +
                    " --collectives " + dbs,
                out),
            0)
      << out;
  const auto table = mksim::results::read_sweep_hdf5(sweep);
  ASSERT_EQ(table.rows.size(), 2u);
  for (const auto& row : table.rows) {
    EXPECT_NEAR(row.replay.time_s, replayed(row.P, true), 1e-9 * row.replay.time_s) << "P=" << row.P;
    EXPECT_NEAR(row.model.time_s, row.replay.time_s, 1e-9 * row.replay.time_s) << "P=" << row.P;
  }
  std::map<std::string, std::string> ta(table.attributes.begin(), table.attributes.end());
  EXPECT_EQ(ta["collectives.databases"], dbs);

  // a bad database is refused with its name
  EXPECT_NE(run(std::string(MKSIM_BIN " model --platform ") + platform + " --P 3 --skeleton " + SK + " --collectives " + platform, out), 0);
  EXPECT_NE(out.find(platform), std::string::npos) << out;
}

// The program itself, timed here: with the databases both methods land nearer the measured time than the
// point-to-point algorithms over the fitted platform do, at np 2 (a measured rank count) and np 3 (in none of
// the databases), nearer as a factor (see below). Medians of three runs each; the margins are wide on this
// oversubscribed VM (np 3 on 2 cores runs ~0.3-0.5 s idle against ~6 ms predicted without the databases).
TEST_F(MeasuredCollectives, MovesPredictionsTowardTheMeasuredTime) {
  // Real wall-clock timings on request only (MKCALIB_REAL_RUNS=1), as the real-run calibration test: beside a
  // parallel build the databases and the program measure the other jobs (np 3: 0.098 s measured, 4.8 s predicted
  // from databases taken under an ASan build); on a quiet machine it passed 5 of 5.
  if (!std::getenv("MKCALIB_REAL_RUNS")) GTEST_SKIP() << "real-timing comparison runs with MKCALIB_REAL_RUNS=1";
  double load[1] = {0};
  if (getloadavg(load, 1) == 1 && load[0] > 2.5)
    GTEST_SKIP() << "load average " << load[0] << " on this machine: the timings would measure the other jobs";
  for (int P : {2, 3}) {
    std::vector<double> times;
    for (int k = 0; k < 3; ++k) {
      std::string out;
      ASSERT_EQ(run(mpi_env() + "mpirun --oversubscribe -np " + std::to_string(P) + " " COLL_LOOP_APP " 2000 1024", out), 0) << out;
      const auto at = out.find("elapsed_s ");
      ASSERT_NE(at, std::string::npos) << out;
      times.push_back(std::stod(out.substr(at + 10)));
    }
    const double measured = median(times);
    const double r0 = replayed(P, false), r1 = replayed(P, true), m0 = modelled(P, false), m1 = modelled(P, true);
    std::printf("np %d: measured %.6g s (median of 3); replay %.6g -> %.6g s, model %.6g -> %.6g s with the databases\n", P, measured, r0,
                r1, m0, m1);
    // nearer as a factor: |log(pred/measured)|. The machine's load swings the oversubscribed times (and the
    // databases measured a minute earlier) by up to 10x under concurrent builds, while without the databases
    // the prediction is ~100x low at np 3; a difference of seconds would compare the load, a ratio the method.
    auto off = [measured](double pred) { return std::fabs(std::log(pred / measured)); };
    EXPECT_LT(off(r1), off(r0)) << "replay at np " << P;
    EXPECT_LT(off(m1), off(m0)) << "model at np " << P;
  }
}

}  // namespace
