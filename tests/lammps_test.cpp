// A program nobody here wrote (issue 17): Debian's LAMMPS (`lmp`) on lammps-examples' `melt` input, with the
// box edge L and the step count S as variables, traced once for the whole binary at P = 4 and L = 5, 6 (S = 40;
// neighbour lists rebuilt every 20 steps, the message sizes changing with the atoms), and held out at L = 7.
// The skeleton must pair its messages at the runs it came from (each receive takes its sender's size where both
// are statistics), and at the held-out box each rank's messages and bytes must be within 10% of the real run.
#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/holdout.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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
    runs_ = new std::map<int, mksim::trace::Run>;
    for (int L : {5, 6, 7}) {
      const fs::path dir = *tmp_ / ("melt-" + std::to_string(L));
      const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MKTRACE_CPU_TIME=1 " + BIN +
                              "/trace/mktrace -np 4 --param L=" + std::to_string(L) + " --param S=40 -o " + dir.string() +
                              " --mpirun-opt --oversubscribe -- lmp -in " + in + " -var L " + std::to_string(L) +
                              " -var S 40 -log none -screen none > " + dir.string() + ".log 2>&1";
      const int rc = std::system(cmd.c_str());
      ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
      runs_->emplace(L, mksim::trace::read_run(dir.string(), {.require_complete = true}));
    }
  }
  static void TearDownTestSuite() {
    if (tmp_) fs::remove_all(*tmp_);
    delete tmp_;
    delete runs_;
    tmp_ = nullptr;
    runs_ = nullptr;
  }
  void SetUp() override {
    if (!runs_) GTEST_SKIP() << "lmp or " << INPUT << " is not installed (scripts/install-deps.sh installs lammps, lammps-examples)";
  }

  static fs::path* tmp_;
  static std::map<int, mksim::trace::Run>* runs_;
};

fs::path* LammpsTest::tmp_ = nullptr;
std::map<int, mksim::trace::Run>* LammpsTest::runs_ = nullptr;

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

}  // namespace
