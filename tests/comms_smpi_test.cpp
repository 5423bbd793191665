// Sub-communicators against SMPI (issue 23): the real program tests/topo_app.c ("grid": a halo on a periodic
// Cartesian grid, a bcast along its rows and an allreduce down its columns from MPI_Cart_sub, a ring on a split
// with reversed keys, a barrier on a dup) run under smpirun, and mksim replaying its skeleton
// (tests/data/topo_grid.json) on the same platform. Alignment as tests/apps_test.sh "validate" does it (DESIGN.md,
// "Facts measured in the second round"): CM02 without factors or cross traffic, computation off, the platform's
// overheads and eager threshold, SMPI's collectives set to the algorithms mksim runs (binomial bcast, recursive
// doubling allreduce, dissemination barrier). Skipped without smpirun and the smpicc build.
#include "tests/process_util.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;

std::string run(const std::string& cmd) { return mksim::test::shell(cmd + " 2>&1").second; }

double field(const std::string& out, const std::string& prefix) {
  const auto at = out.find(prefix);
  return at == std::string::npos ? NAN : std::atof(out.c_str() + at + prefix.size());
}

// The simulated times of the program under SMPI and of its skeleton under mksim, at P ranks on the T3E.
std::pair<double, double> both(int P, int steps, int bytes) {
  const fs::path dir = fs::temp_directory_path() / ("mksim_comms_smpi_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream hosts(dir / "hosts");
    for (int i = 0; i < P; ++i) hosts << "node-" << i << "\n";
  }
  // t3e.xml: s = r = 17.79 us, o = 0, eager threshold 4747 bytes
  const std::string smpi = "smpirun -np " + std::to_string(P) + " -platform " + SRC + "/platforms/t3e.xml -hostfile " +
                           (dir / "hosts").string() +
                           " --cfg=network/model:CM02 --cfg=network/crosstraffic:0 --cfg=network/latency-factor:1"
                           " --cfg=network/bandwidth-factor:1 --cfg=network/weight-S:0 --cfg=network/TCP-gamma:0"
                           " --cfg=smpi/simulate-computation:no --cfg=smpi/allreduce:rdb --cfg=smpi/bcast:binomial_tree"
                           " --cfg=smpi/barrier:ompi_bruck --cfg=smpi/os:0:1.779e-05:0 --cfg=smpi/ois:0:1.779e-05:0"
                           " --cfg=smpi/or:0:1.779e-05:0 --cfg=smpi/async-small-thresh:4748"
                           " --cfg=smpi/send-is-detached-thresh:65536 --log=root.thresh:warning"
                           " --log=smpi_config.thresh:error --log=xbt_cfg.thresh:warning " TOPO_APP_SMPI " grid " +
                           std::to_string(steps) + " " + std::to_string(bytes);
  const std::string s = run(smpi);
  const std::string m = run(std::string(MKSIM_BIN) + " --platform t3e --P " + std::to_string(P) + " --skeleton " + SRC +
                            "/tests/data/topo_grid.json --param steps=" + std::to_string(steps) + " --param bytes=" +
                            std::to_string(bytes));
  fs::remove_all(dir);
  const double t_smpi = field(s, "time: "), t_mksim = field(m, "predicted time");
  EXPECT_TRUE(std::isfinite(t_smpi)) << smpi << "\n" << s;
  EXPECT_TRUE(std::isfinite(t_mksim)) << m;
  return {t_smpi, t_mksim};
}

void compare(int P, int bytes, double limit) {
  if (std::system("command -v smpirun >/dev/null 2>&1") != 0 || !fs::exists(TOPO_APP_SMPI))
    GTEST_SKIP() << "no smpirun or no smpicc build of topo_app";
  const auto [t_smpi, t_mksim] = both(P, 10, bytes);
  const double gap = (t_mksim - t_smpi) / t_smpi;
  std::printf("P=%d bytes=%d: SMPI %.9g s, mksim %.9g s, gap %+.2f%%\n", P, bytes, t_smpi, t_mksim, 100 * gap);
  EXPECT_LT(std::fabs(gap), limit) << "P=" << P << " bytes=" << bytes;
}

}  // namespace

// 4 x 4 (rows and columns of 4): eager (4 KiB) and rendezvous (64 KiB) messages.
TEST(CommsSmpi, Grid4x4Eager) { compare(16, 4096, 0.02); }
TEST(CommsSmpi, Grid4x4Rendezvous) { compare(16, 65536, 0.02); }
// 6 x 4 (columns of 6: recursive doubling folds two ranks in and out), eager.
TEST(CommsSmpi, Grid6x4Eager) { compare(24, 4096, 0.02); }
