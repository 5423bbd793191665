// mkskel emit (skeletons/emit.hpp): the emitted C compiles with -Wall -Werror; traced with mktrace (OpenMPI) it
// does, rank by rank, exactly what the skeleton expands to (peers, tags, sizes, roots, order: the round trip of
// `mkskel compare`); its expressions, seeded coins and streams, and communicators behave as the C++ ones; a
// skeleton it cannot represent is an error naming the file and the place; and under SMPI it takes the time mksim
// predicts on the same platform (one point; bench/emit_smpi.py runs every example at P = 16 and 64).
#include "skeletons/builder/holdout.hpp"
#include "skeletons/emit.hpp"
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"
#include "tests/process_util.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace fs = std::filesystem;
namespace sk = mksim::skeletons;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;
const std::string BIN = MKSIM_BINARY_DIR;

// This process's scratch directory (each test case runs in a process of its own under ctest), removed at exit.
fs::path workdir() {
  const fs::path p = fs::temp_directory_path() / ("mksim_emit_test_" + std::to_string(::getpid()));
  fs::create_directories(p);
  return p;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("mksim_emit_test_" + std::to_string(::getpid())), ec);
  }
} cleanup;

std::pair<int, std::string> sh(const std::string& cmd) { return mksim::test::shell(cmd + " 2>&1"); }

// Emits and compiles a skeleton with OpenMPI's mpicc (-Wall -Werror), returning the program's path.
fs::path build(const std::string& skeleton, const std::string& name, const std::string& cc = "mpicc") {
  const sk::Skeleton s = sk::load_skeleton(skeleton);
  const fs::path c = workdir() / (name + ".c"), exe = workdir() / name;
  std::ofstream(c) << sk::emit_c(s);
  const auto [rc, out] = sh(cc + " -std=c11 -Wall -Werror -O2 -o " + exe.string() + " " + c.string() + " -lm");
  EXPECT_EQ(rc, 0) << cc << " " << c << ":\n" << out;
  return exe;
}

// The program traced at P by mktrace, compared with the skeleton's expansion rank by rank as `mkskel compare` does
// (skeletons/builder/holdout.hpp: peers and roots in world ranks, communicators by their members, creation calls
// not counted as operations), so that skeletons with `comms` are checked whole.
// Returns the number of ranks whose operations are exactly the skeleton's (`extra`: more program arguments).
int traced_exact(const std::string& skeleton, const std::string& name, int P, const std::map<std::string, double>& params,
                 const std::string& extra = "") {
  const fs::path exe = build(skeleton, name);
  const fs::path dir = workdir() / ("trace-" + name + (extra.empty() ? "" : "-x"));
  std::string args = " --flops-rate=1e12 " + extra;
  for (const auto& [k, v] : params) args += " " + k + "=" + std::to_string(v);
  const auto [rc, out] = sh("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + BIN + "/trace/mktrace -np " +
                            std::to_string(P) + " -o " + dir.string() + " -- " + exe.string() + args);
  EXPECT_EQ(rc, 0) << out;
  if (rc != 0) return -1;
  const mksim::trace::Run run = mksim::trace::read_run(dir.string(), {.require_complete = true});
  const sk::Skeleton s = sk::load_skeleton(skeleton);
  const sk::builder::HoldOutReport report = sk::builder::compare_with_trace(s, run, params);
  int exact = 0;
  for (const sk::builder::RankComparison& rc : report.ranks) {
    if (rc.exact() && rc.traced > 0) {
      ++exact;
    } else if (extra.empty()) {
      ADD_FAILURE() << name << " rank " << rc.rank << ": " << (!rc.error.empty() ? rc.error : "op " + std::to_string(*rc.first_difference) + " (" +
                       std::to_string(rc.traced) + " traced, " + std::to_string(rc.expanded) + " expanded): trace " +
                       (rc.trace_op ? sk::builder::describe(*rc.trace_op) : "ends") + ", skeleton " +
                       (rc.skeleton_op ? sk::builder::describe(*rc.skeleton_op) : "ends"));
    }
  }
  return exact;
}

void round_trip(const std::string& skeleton, const std::string& name, int P, const std::map<std::string, double>& params = {}) {
  EXPECT_EQ(traced_exact(skeleton, name, P, params), P) << name;
}

}  // namespace

// Every example compiles without a warning.
TEST(Emit, ExamplesCompileWithWallWerror) {
  for (const auto& e : fs::directory_iterator(SRC + "/skeletons/examples"))
    if (e.path().extension() == ".json") build(e.path().string(), "ex_" + e.path().stem().string());
}

// The round trip through a real trace, exact: a 2-D halo, cg's requests and allreduces, the two-way pipeline,
// master-worker's wildcard receives and probabilistic task costs (the rank's own seeded stream).
TEST(Emit, RoundTripExamples) {
  round_trip(SRC + "/skeletons/examples/atm2d.json", "atm2d", 8, {{"steps", 3}});
  round_trip(SRC + "/skeletons/examples/pge2.json", "pge2", 6, {{"M", 8}});
  round_trip(SRC + "/skeletons/examples/master_worker.json", "master_worker", 5, {{"tasks", 40}});
}

// Every expression function in sizes, named requests, every collective with roots, shared coins and the own stream
// after compute distributions, split/dup/create/graph communicators, PROC_NULL peers; and SUMMA's Cartesian grid.
TEST(Emit, RoundTripFeaturesAndCommunicators) {
  round_trip(SRC + "/tests/data/emit_features.json", "features", 6, {{"K", 12}});
  // the control: another seed takes other coin and stream branches, which the comparison sees
  EXPECT_LT(traced_exact(SRC + "/tests/data/emit_features.json", "features", 6, {{"K", 12}}, "--seed=2"), 6);
  round_trip(SRC + "/skeletons/examples/summa.json", "summa", 6, {{"N", 256}, {"nb", 32}});
}

// A parameter on the command line moves the program; an unknown one is refused with the list.
TEST(Emit, CommandLine) {
  const fs::path exe = build(SRC + "/skeletons/examples/atm1d.json", "atm1d_cli");
  const auto [rc, out] = sh("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 " +
                            exe.string() + " stepz=3");
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("unknown argument \"stepz=3\""), std::string::npos) << out;
  EXPECT_NE(out.find("parameters: N="), std::string::npos) << out;
}

// What the program cannot reproduce on every rank is an error naming the file and the declaration.
TEST(Emit, UnrepresentableIsAnError) {
  const std::string text = R"({"format": "mksim-skeleton", "version": 3,
    "comms": {"half": {"split": "world", "color": "rank % 2"},
              "sub": {"create": "world", "members": "member * half.size", "size": 2}},
    "body": [{"op": "barrier"}]})";
  const sk::Skeleton s = sk::parse_skeleton(text, "bad.json");
  try {
    (void)sk::emit_c(s);
    FAIL() << "no error";
  } catch (const sk::SkeletonError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("bad.json: /comms/sub/members: mkskel emit cannot represent \"member * half.size\"", 0), 0u)
        << e.what();
  }
}

// The emitted program under SMPI (compute charged by smpi_execute_flops) against mksim on the same platform.
TEST(Emit, SmpiAgreesWithMksim) {
  if (std::system("command -v smpicc >/dev/null 2>&1 && command -v smpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no SMPI";
  const fs::path exe = build(SRC + "/skeletons/examples/cg.json", "cg_smpi", "smpicc");
  {
    std::ofstream hosts(workdir() / "hosts");
    for (int i = 0; i < 16; ++i) hosts << "node-" << i << "\n";
  }
  // t3e.xml: s = r = 17.79 us, eager threshold 4747 bytes; SMPI's collectives set to mksim's (bench/corpus.py)
  const auto [rc, out] = sh("smpirun -np 16 -platform " + SRC + "/platforms/t3e.xml -hostfile " + (workdir() / "hosts").string() +
                            " --cfg=network/model:CM02 --cfg=network/crosstraffic:0 --cfg=network/latency-factor:1"
                            " --cfg=network/bandwidth-factor:1 --cfg=network/weight-S:0 --cfg=network/TCP-gamma:0"
                            " --cfg=smpi/os:0:1.779e-05:0 --cfg=smpi/ois:0:1.779e-05:0 --cfg=smpi/or:0:1.779e-05:0"
                            " --cfg=smpi/async-small-thresh:4748 --cfg=smpi/send-is-detached-thresh:65536"
                            " --cfg=smpi/allreduce:rdb --cfg=smpi/simulate-computation:no --log=root.thresh:warning"
                            " --log=smpi_config.thresh:error --log=xbt_cfg.thresh:warning --log=smpi_utils.thresh:info --cfg=smpi/display-timing:yes " +
                            exe.string());
  ASSERT_EQ(rc, 0) << out;
  const auto at = out.find("Simulated time: ");
  ASSERT_NE(at, std::string::npos) << out;
  const double t_smpi = std::atof(out.c_str() + at + 16);
  const auto [rc2, m] = sh(BIN + "/sim/mksim --platform t3e --P 16 --skeleton " + SRC + "/skeletons/examples/cg.json");
  ASSERT_EQ(rc2, 0) << m;
  const auto p = m.find("predicted time");
  ASSERT_NE(p, std::string::npos) << m;
  const double t_mksim = std::atof(m.c_str() + m.find_first_of("0123456789", p));
  std::printf("cg P=16: SMPI %.9g s, mksim %.9g s, gap %+.3f%%\n", t_smpi, t_mksim, 100 * (t_mksim - t_smpi) / t_smpi);
  EXPECT_LT(std::fabs(t_mksim - t_smpi) / t_smpi, 0.01);
}
