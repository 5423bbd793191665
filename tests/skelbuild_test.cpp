// The skeleton builder on real traces (issue 4's hold-out acceptance): trace a reference program with
// OpenMPI at small P and several problem sizes, build one skeleton, expand it at a P and size it never
// saw, and compare every rank's operations (kind, peer, tag, bytes, root, communicator, in order; holdout.hpp)
// with a real trace of that configuration.
#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/holdout.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace {

const std::string BIN = MKSIM_BINARY_DIR;

class SkelBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    tmp_ = fs::temp_directory_path() / ("mksim_skelbuild_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }

  // Traces `app args` at P with the given parameters (name=value, as mktrace --param) and reads it.
  mksim::trace::Run traced(const std::string& app, int P, const std::string& args,
                           const std::vector<std::pair<std::string, long>>& params) {
    std::string name = app + "-" + std::to_string(P), popts;
    for (const auto& [k, v] : params) {
      name += "-" + k + std::to_string(v);
      popts += " --param " + k + "=" + std::to_string(v);
    }
    const fs::path dir = tmp_ / name;
    const std::string cmd = BIN + "/trace/mktrace -np " + std::to_string(P) + popts + " -o " + dir.string() + " -- " +
                            BIN + "/apps/" + app + " " + args + " >" + dir.string() + ".log 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
    return mksim::trace::read_run(dir.string(), {.require_complete = true});
  }

  fs::path tmp_;
};

// Builds from `training`, checks the skeleton against `held_out` rank by rank; returns the skeleton.
mksim::skeletons::Skeleton check_hold_out(const std::vector<mksim::trace::Run>& training, const mksim::trace::Run& held_out,
                                          const std::map<std::string, double>& params) {
  const auto r = mksim::skeletons::builder::build_skeleton(training);
  const std::string text = r.skeleton.dump(2);
  const auto sk = mksim::skeletons::parse_skeleton(text, "built.json");
  const auto rep = mksim::skeletons::builder::compare_with_trace(sk, held_out, params);
  for (const auto& rc : rep.ranks) {
    EXPECT_EQ(rc.error, "") << "rank " << rc.rank << " of P=" << held_out.P;
    EXPECT_EQ(rc.expanded, rc.traced) << "rank " << rc.rank << " of P=" << held_out.P << "\n" << text;
    if (rc.first_difference && rc.skeleton_op && rc.trace_op)
      ADD_FAILURE() << "rank " << rc.rank << " op " << *rc.first_difference << ": skeleton "
                    << mksim::skeletons::builder::describe(*rc.skeleton_op) << ", trace "
                    << mksim::skeletons::builder::describe(*rc.trace_op) << "\n" << text;
  }
  return sk;
}

// ATM2D's grid side Px = 2^floor(log2(P)/2) is 1, 2, 2 at P = 2, 4, 8: those runs cannot tell rank+Px
// from rank+2, and the builder must say so and name the run that would; with P = 16 added (Px = 4) the
// skeleton is exact at P = 32, which it never saw.
TEST_F(SkelBuildTest, Atm2dAmbiguousFromP248AndExactAtP32FromP24816) {
  std::vector<mksim::trace::Run> runs;
  for (int P : {2, 4, 8})
    for (long N : {64, 128}) runs.push_back(traced("atm2d", P, std::to_string(N) + " 3", {{"N", N}, {"steps", 3}}));
  runs.push_back(traced("atm2d", 4, "64 5", {{"N", 64}, {"steps", 5}}));
  const auto small = mksim::skeletons::builder::build_skeleton(runs);
  bool names_16 = false;
  for (const auto& a : small.ambiguities) names_16 = names_16 || a.find("P=16") != std::string::npos;
  EXPECT_TRUE(names_16) << "no ambiguity names a run at P=16";
  runs.push_back(traced("atm2d", 16, "128 3", {{"N", 128}, {"steps", 3}}));
  const auto held = traced("atm2d", 32, "256 4", {{"N", 256}, {"steps", 4}});
  check_hold_out(runs, held, {{"N", 256}, {"steps", 4}});
}

TEST_F(SkelBuildTest, CgHoldOutAtP16FromP248) {
  std::vector<mksim::trace::Run> runs;
  for (int P : {2, 4, 8})
    for (long N : {64, 256}) runs.push_back(traced("cg", P, std::to_string(N) + " 4", {{"N", N}, {"iters", 4}}));
  runs.push_back(traced("cg", 4, "64 6", {{"N", 64}, {"iters", 6}}));
  const auto held = traced("cg", 16, "1024 5", {{"N", 1024}, {"iters", 5}});
  check_hold_out(runs, held, {{"N", 1024}, {"iters", 5}});
}

TEST_F(SkelBuildTest, Pge1HoldOutAtP16FromP248) {
  std::vector<mksim::trace::Run> runs;
  for (int P : {2, 4, 8})
    for (long K : {4, 8})
      runs.push_back(traced("pge1", P, "256 32 " + std::to_string(K), {{"N", 256}, {"M", 32}, {"K", K}}));
  runs.push_back(traced("pge1", 4, "128 64 4", {{"N", 128}, {"M", 64}, {"K", 4}}));
  const auto held = traced("pge1", 16, "512 48 2", {{"N", 512}, {"M", 48}, {"K", 2}});
  check_hold_out(runs, held, {{"N", 512}, {"M", 48}, {"K", 2}});
}

// PGE2's chains have interior ranks only from P = 8 on (one run): P = 16 is needed to pin down their
// conditions (the builder says so), and then P = 32 is exact.
TEST_F(SkelBuildTest, Pge2HoldOutAtP32FromP24816) {
  std::vector<mksim::trace::Run> runs;
  for (int P : {2, 4, 8, 16})
    for (long K : {4, 8})
      runs.push_back(traced("pge2", P, "256 32 " + std::to_string(K), {{"N", 256}, {"M", 32}, {"K", K}}));
  runs.push_back(traced("pge2", 4, "128 64 4", {{"N", 128}, {"M", 64}, {"K", 4}}));
  const auto held = traced("pge2", 32, "512 48 2", {{"N", 512}, {"M", 48}, {"K", 2}});
  check_hold_out(runs, held, {{"N", 512}, {"M", 48}, {"K", 2}});
}

TEST_F(SkelBuildTest, RunsWithDifferentParameterNamesAreRefused) {
  std::vector<mksim::trace::Run> runs;
  runs.push_back(traced("atm2d", 2, "64 2", {{"N", 64}, {"steps", 2}}));
  runs.push_back(traced("atm2d", 4, "64 2", {{"N", 64}}));
  try {
    mksim::skeletons::builder::build_skeleton(runs);
    FAIL() << "no error";
  } catch (const mksim::skeletons::builder::BuildError& e) {
    EXPECT_NE(std::string(e.what()).find("every run must give the same --param names"), std::string::npos) << e.what();
  }
}

}  // namespace
