// Measured collectives in replay and the model (issue 6, `--collectives`): databases measured here at np 2 and 4 with
// mkcalib bench, on a platform fitted to this machine (mkcalib bench --quick + mkcalib fit): replay and the model use
// the same numbers, inside and outside the measured rank counts, and say so. Everything runs through the real mksim /
// mkcalib binaries (one SimGrid engine per process). The comparison with the real program's measured time
// (tests/coll_loop.c at np 2 and 3) is a benchmark: bench/collectives_measured.py.
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

/** @brief Runs a shell command; returns its exit status and fills `out` with its stdout and (with_stderr) its stderr;
 *  without, its stderr goes to the test's own, in the log. */
int run(const std::string& cmd, std::string& out, bool with_stderr = true) {
  out.clear();
  FILE* p = ::popen((cmd + (with_stderr ? " 2>&1" : "")).c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int st = ::pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string mpi_env() { return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "; }

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
    // stdout only: the JSON; a line on stderr ("[0.000000] ..." from SimGrid, once in two clean-clone runs of the suite,
    // 2026-11-29) made it unparsable
    EXPECT_EQ(run(cmd, out, false), 0) << cmd << "\n" << out;
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

}  // namespace
