// Measured collective costs (issue 6, seed 004's database): interpolation in size, a + b*log2(P) over the rank
// counts, on databases measured here with real OpenMPI at np = 2 and np = 4 (mkcalib bench --quick).
#include "sim/engine/collective_table.hpp"
#include "results/calib_db.hpp"
#include "sim/cli/calib_cli.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;
using namespace mksim;

namespace {
const std::vector<std::string> COLLECTIVES = {"barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall", "gather", "scatter"};
}

TEST(CollectiveTable, LogLogInterpolationInSize) {
  const std::vector<std::pair<double, double>> pts = {{8, 1e-6}, {512, 4e-6}, {32768, 64e-6}};
  EXPECT_DOUBLE_EQ(sim::interpolate_in_size(pts, 512), 4e-6);        // a measured size: its time
  EXPECT_NEAR(sim::interpolate_in_size(pts, 64), 2e-6, 1e-18);      // log-midpoint of 8 and 512: geometric mean
  EXPECT_NEAR(sim::interpolate_in_size(pts, 4096), 16e-6, 1e-17);   // 512..32768: t ~ D^(2/3)
  EXPECT_NEAR(sim::interpolate_in_size(pts, 262144), 256e-6, 1e-15); // last segment extended: 8^(2/3) = 4
  EXPECT_DOUBLE_EQ(sim::interpolate_in_size({{0, 3e-6}}, 0), 3e-6);  // barrier
}

TEST(CollectiveTable, RealDatabasesAtTwoAndFourRanks) {
  const fs::path dir = fs::temp_directory_path() / ("mkcalib_coll_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<results::CalibDb> dbs;
  for (const char* np : {"2", "4"}) {
    const std::string path = (dir / (std::string("vm-np") + np + ".h5")).string();
    std::ostringstream out, err;
    ASSERT_EQ(sim::run_mkcalib({"bench", "-np", np, "--quick", "-o", path, "--kernels", "barrier,allreduce"}, out, err), 0) << err.str();
    dbs.push_back(results::read_calib_db(path));
  }
  const auto t = sim::collective_table(dbs, COLLECTIVES);
  ASSERT_EQ(t.points.count("allreduce"), 1u);
  ASSERT_EQ(t.points.at("allreduce").size(), 2u);
  for (const auto& [np, pts] : t.points.at("allreduce")) {
    for (const auto& [size, med] : pts) {
      // through two rank counts the fit is exact (to rounding: the least-squares solve loses ~1e-8 on a 0.1-100 ms
      // spread): the measured median comes back at its P and size
      EXPECT_NEAR(sim::collective_time(t, "allreduce", np, size), med, 1e-6 * med) << "np " << np << " size " << size;
      EXPECT_GT(med, 0);
    }
  }
  const auto f = sim::fit_over_P(t, "allreduce", 4096);
  EXPECT_EQ(f.rank_counts, 2);
  EXPECT_LT(f.max_rel_error, 1e-6);
  EXPECT_GT(sim::collective_time(t, "barrier", 4, 0), 0);
  // the same np twice is refused
  EXPECT_THROW(sim::collective_table({dbs[0], dbs[0]}, COLLECTIVES), sim::CollectiveTableError);
  fs::remove_all(dir);
}
