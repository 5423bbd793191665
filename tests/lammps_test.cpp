// A program nobody here wrote (issue 17): Debian's LAMMPS (`lmp`) on lammps-examples' `melt` input, with the
// box edge L and the step count S as variables, traced once for the whole binary at P = 4 and L = 5, 6, 7 (S = 40;
// neighbour lists rebuilt every 20 steps, the message sizes changing with the atoms), and held out at L = 7.
// The skeleton must pair its messages at the runs it came from (each receive takes its sender's size where both
// are statistics), and at the held-out box each rank's messages and bytes must be within 10% of the real run.
// Then an `lj` input in the style of LAMMPS' bench/in.lj (`neigh_modify delay 0 every 1 check yes`: every step asks,
// with an allreduce, whether some atom moved far enough, and which steps rebuild depends on the data), traced at
// L = 5, 6, 7 (S = 40) and L = 6, S = 120: its steps fold into one loop with the rebuild as an if/else.
#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/holdout.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::string BIN = MKSIM_BINARY_DIR;
const std::string INPUT = "/usr/share/lammps/examples/melt/in.melt";

class LammpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::system("command -v lmp >/dev/null 2>&1") != 0 || !fs::exists(INPUT)) return;
    tmp_ = new fs::path(fs::temp_directory_path() / ("mksim_lammps_" + std::to_string(getpid())));
    fs::create_directories(*tmp_);
    // in.melt with the box edge and the steps as variables
    const std::string in = (*tmp_ / "in.melt").string();
    const std::string sed = "sed -e 's/block 0 10 0 10 0 10/block 0 ${L} 0 ${L} 0 ${L}/' -e 's/^run.*/run ${S}/' " + INPUT + " > " + in;
    ASSERT_EQ(std::system(sed.c_str()), 0);
    const std::string lj = (*tmp_ / "in.lj").string();
    {
      std::ofstream f(lj);
      f << "units lj\natom_style atomic\nlattice fcc 0.8442\nregion box block 0 ${L} 0 ${L} 0 ${L}\ncreate_box 1 box\n"
           "create_atoms 1 box\nmass 1 1.0\nvelocity all create 1.44 87287 loop geom\npair_style lj/cut 2.5\n"
           "pair_coeff 1 1 1.0 1.0 2.5\nneighbor 0.3 bin\nneigh_modify delay 0 every 1 check yes\nfix 1 all nve\n"
           "thermo 100\nrun ${S}\n";
    }
    auto trace = [](const std::string& input, const std::string& name, int L, int S) { return trace_lmp(input, name, 4, L, S); };
    runs_ = new std::map<int, mksim::trace::Run>;
    lj_runs_ = new std::map<std::pair<int, int>, mksim::trace::Run>;
    for (int L : {5, 6, 7}) {
      runs_->emplace(L, trace(in, "melt", L, 40));
      lj_runs_->emplace(std::make_pair(L, 40), trace(lj, "lj", L, 40));
    }
    lj_runs_->emplace(std::make_pair(6, 120), trace(lj, "lj", 6, 120));
  }
  static void TearDownTestSuite() {
    if (tmp_) fs::remove_all(*tmp_);
    delete tmp_;
    delete runs_;
    delete lj_runs_;
    tmp_ = nullptr;
    runs_ = nullptr;
    lj_runs_ = nullptr;
  }
  void SetUp() override {
    if (!runs_) GTEST_SKIP() << "lmp or " << INPUT << " is not installed (scripts/install-deps.sh installs lammps, lammps-examples)";
  }

  // LAMMPS on `input` traced at P ranks with L and S (the runs share two cores: compute is the threads' CPU time).
  static mksim::trace::Run trace_lmp(const std::string& input, const std::string& name, int P, int L, int S) {
    const fs::path dir = *tmp_ / (name + (P == 4 ? "" : "-P" + std::to_string(P)) + "-" + std::to_string(L) + "-" + std::to_string(S));
    const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MKTRACE_CPU_TIME=1 " + BIN + "/trace/mktrace -np " +
                            std::to_string(P) + " --param L=" + std::to_string(L) + " --param S=" + std::to_string(S) + " -o " +
                            dir.string() + " --mpirun-opt --oversubscribe -- lmp -in " + input + " -var L " + std::to_string(L) +
                            " -var S " + std::to_string(S) + " -log none -screen none > " + dir.string() + ".log 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
    return mksim::trace::read_run(dir.string(), {.require_complete = true});
  }

  static fs::path* tmp_;
  static std::map<int, mksim::trace::Run>* runs_;
  static std::map<std::pair<int, int>, mksim::trace::Run>* lj_runs_;  // (L, S) -> run
};

fs::path* LammpsTest::tmp_ = nullptr;
std::map<int, mksim::trace::Run>* LammpsTest::runs_ = nullptr;
std::map<std::pair<int, int>, mksim::trace::Run>* LammpsTest::lj_runs_ = nullptr;

void count_paired(const nlohmann::json& body, int& paired, int& statistic_receives) {
  for (const auto& b : body) {
    const std::string op = b.value("op", "");
    if ((op == "recv" || op == "irecv") && b.contains("fit") && b["fit"].contains("size") && b["fit"]["size"].contains("guard")) {
      ++statistic_receives;
      paired += b["fit"]["size"].contains("paired");
    }
    for (const char* arm : {"body", "then", "else"})
      if (b.contains(arm)) count_paired(b.at(arm), paired, statistic_receives);
  }
}

TEST_F(LammpsTest, MeltSkeletonPairsItsMessagesAndHoldsAtAnUnseenBox) {
  const auto result = mksim::skeletons::builder::build_skeleton({runs_->at(5), runs_->at(6)});
  EXPECT_TRUE(result.matching.empty()) << result.matching.front();
  int paired = 0, statistic = 0;
  count_paired(result.skeleton.at("body"), paired, statistic);
  EXPECT_GT(paired, 0) << statistic << " receives with sizes as statistics, none takes its sender's size";

  const auto sk = mksim::skeletons::parse_skeleton(result.skeleton.dump(), "melt.json");
  const auto rep = mksim::skeletons::builder::compare_with_trace(sk, runs_->at(7), {{"L", 7}, {"S", 40}});
  const auto ve = mksim::skeletons::builder::volume_errors(rep);
  ASSERT_EQ(ve.ranks, 4u);
  EXPECT_LT(ve.messages.worst, 0.10) << "rank " << ve.messages.worst_rank;
  EXPECT_LT(ve.bytes.worst, 0.10) << "rank " << ve.bytes.worst_rank;
  EXPECT_LT(ve.collectives.worst, 0.10) << "rank " << ve.collectives.worst_rank;
}

// The lj steps: one loop whose rebuild steps are an if/else on rank 0's coin, drawn evenly, for every rank (without
// it: a program per run that grew with the steps, and at L = 7 messages 46% and collectives 12% off). It pairs at the
// traced runs, does not grow from 40 steps to 120, and at the held-out L = 7 each rank's messages are within 10%
// and its collectives exact (measured: messages 2.2%, bytes 12.5%: sizes from two boxes).
TEST_F(LammpsTest, LjStepsThatRebuildByDataFoldIntoOneLoopAndHoldAtAnUnseenBox) {
  const auto result = mksim::skeletons::builder::build_skeleton({lj_runs_->at({5, 40}), lj_runs_->at({6, 40})});
  EXPECT_TRUE(result.matching.empty()) << result.matching.front();
  int shared = 0;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& body) {
    for (const auto& b : body) {
      if (b.value("op", "") == "if" && b.value("coin_rank", "") == "0" && b.value("draw", "") == "even" && b.contains("else")) ++shared;
      for (const char* arm : {"body", "then", "else"})
        if (b.contains(arm)) walk(b.at(arm));
    }
  };
  walk(result.skeleton.at("body"));
  EXPECT_GE(shared, 1) << "no if/else on rank 0's even coin";

  const auto size_at = [&](int S) {
    return static_cast<double>(mksim::skeletons::builder::build_skeleton({lj_runs_->at({6, S})}).skeleton.dump().size());
  };
  EXPECT_LT(size_at(120), 1.1 * size_at(40));

  const auto sk = mksim::skeletons::parse_skeleton(result.skeleton.dump(), "lj.json");
  const auto rep = mksim::skeletons::builder::compare_with_trace(sk, lj_runs_->at({7, 40}), {{"L", 7}, {"S", 40}});
  const auto ve = mksim::skeletons::builder::volume_errors(rep);
  ASSERT_EQ(ve.ranks, 4u);
  EXPECT_LT(ve.messages.worst, 0.10) << "rank " << ve.messages.worst_rank;
  EXPECT_LT(ve.collectives.worst, 0.01) << "rank " << ve.collectives.worst_rank;
  EXPECT_LT(ve.bytes.worst, 0.20) << "rank " << ve.bytes.worst_rank;
}

// lj traced at P = 2, 4, 8 (L = 7, 8), held out at P = 16 (L = 8), as issue 17 asks of LAMMPS. LAMMPS factors P
// itself (1 x 1 x 2, 1 x 2 x 2, 2 x 2 x 2, then 2 x 2 x 4) and skips the swaps along a side of one rank, so from one
// call site its communication loops run 2, 4 or 6 swaps along whichever axes have more than one rank. Before the
// builder knew loops over axes (their peers and sizes functions of the iteration's axis, their counts two swaps per
// axis of several ranks), faces of blocks (sizes from the runs of one P that scale with the axis' side), parts that
// no traced rank runs together kept apart at every P, and the work of a loop's execution divided among its
// iterations, this skeleton sent 60% too many messages and 167% too many bytes at P = 16 (measured: now 1.8% and
// 6.3% at the worst rank, compute 5.9%; bench/issue17_lammps.sh at L = 8, 12 -> 12: 1.7%, 3.1%, 9.5%).
TEST_F(LammpsTest, LjFromTwoToEightRanksHoldsAtSixteen) {
  const std::string lj = (*tmp_ / "in.lj").string();
  std::vector<mksim::trace::Run> runs;
  for (int P : {2, 4, 8})
    for (int L : {7, 8}) runs.push_back(P == 4 && L == 7 ? lj_runs_->at({7, 40}) : trace_lmp(lj, "lj", P, L, 40));
  const auto held = trace_lmp(lj, "lj", 16, 8, 40);
  const auto result = mksim::skeletons::builder::build_skeleton(runs);
  EXPECT_TRUE(result.matching.empty()) << result.matching.front();
  const std::string text = result.skeleton.dump();
  EXPECT_NE(text.find("iteration axis"), std::string::npos) << "no loop over the grid's axes";
  const auto sk = mksim::skeletons::parse_skeleton(text, "lj248.json");
  const auto rep = mksim::skeletons::builder::compare_with_trace(sk, held, {{"L", 8}, {"S", 40}});
  const auto ve = mksim::skeletons::builder::volume_errors(rep);
  ASSERT_EQ(ve.ranks, 16u);
  std::printf("held out at P = 16, L = 8: messages %.3f / %.3f, bytes %.3f / %.3f, collectives %.3f, compute %.3f / %.3f (mean / worst)\n",
              ve.messages.mean, ve.messages.worst, ve.bytes.mean, ve.bytes.worst, ve.collectives.worst, ve.compute_s.mean,
              ve.compute_s.worst);
  EXPECT_LT(ve.messages.worst, 0.10) << "rank " << ve.messages.worst_rank;
  EXPECT_LT(ve.bytes.worst, 0.10) << "rank " << ve.bytes.worst_rank;
  EXPECT_LT(ve.collectives.worst, 0.01) << "rank " << ve.collectives.worst_rank;
}

}  // namespace
