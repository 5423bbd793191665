// ROUTINE nodes from call-site stacks (skeletons/builder/stack_regions.hpp): a real program without mktrace.h
// annotations (skeletons/apps/atm2d.c, whose halo exchanges run inside `exchange()`), traced with OpenMPI,
// gets region blocks named after that function; without stack regions the skeleton is the same program.
#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/stack_regions.hpp"
#include "skeletons/trace/reader.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using mksim::trace::Kind;

namespace {

const std::string BIN = MKSIM_BINARY_DIR;

class StackRegions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = fs::temp_directory_path() / ("mksim_stack_regions_" + std::to_string(::getpid()));
    fs::create_directories(tmp_);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    for (int P : {2, 4, 8}) runs_.push_back(traced(P, 64, 2));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
  static mksim::trace::Run traced(int P, int N, int steps) {
    const fs::path dir = tmp_ / ("atm2d-" + std::to_string(P));
    const std::string cmd = BIN + "/trace/mktrace -np " + std::to_string(P) + " --param N=" + std::to_string(N) +
                            " --param steps=" + std::to_string(steps) + " -o " + dir.string() + " -- " + BIN +
                            "/apps/atm2d " + std::to_string(N) + " " + std::to_string(steps) + " >" + dir.string() + ".log 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
    return mksim::trace::read_run(dir.string(), {.require_complete = true});
  }
  static inline fs::path tmp_;
  static inline std::vector<mksim::trace::Run> runs_;
};

// Counts blocks by op (regions by name as "region:NAME"), recursively.
void count_ops(const nlohmann::json& list, std::map<std::string, int>& n) {
  for (const auto& b : list) {
    const std::string op = b.at("op").get<std::string>();
    ++n[op == "region" ? "region:" + b.at("name").get<std::string>() : op];
    for (const char* arm : {"body", "then", "else"})
      if (b.contains(arm)) count_ops(b.at(arm), n);
  }
}

// Every region block's body: its ops in order (computes left out).
void region_bodies(const nlohmann::json& list, std::vector<std::vector<std::string>>& out) {
  for (const auto& b : list) {
    if (b.at("op") == "region") {
      std::vector<std::string> ops;
      for (const auto& c : b.at("body"))
        if (c.at("op") != "compute") ops.push_back(c.at("op").get<std::string>());
      out.push_back(ops);
    }
    for (const char* arm : {"body", "then", "else"})
      if (b.contains(arm)) region_bodies(b.at(arm), out);
  }
}

}  // namespace

TEST_F(StackRegions, TheTraceNamesTheExecutableAndItsSymbolsNameTheFunction) {
  const mksim::trace::Run& run = runs_[1];
  EXPECT_EQ(fs::path(run.executable), fs::canonical(BIN + "/apps/atm2d"));
  mksim::trace::Run copy = run;
  const auto rep = mksim::skeletons::builder::add_stack_regions(copy);
  EXPECT_EQ(rep.module_file, run.executable);
  EXPECT_TRUE(rep.by_address.empty());
  // P = 4 is a 2 x 2 grid: every rank has two neighbours, so two exchange() calls per step
  EXPECT_EQ(rep.regions, 4u * 2u * 2u);
  for (const auto& t : copy.ranks) {
    int open = 0, begins = 0;
    std::vector<std::string> inside;
    for (const auto& e : t.events) {
      if (e.kind == Kind::REGION_BEGIN) {
        ASSERT_EQ(open, 0) << "rank " << t.rank << ": regions from stacks do not nest";
        ASSERT_EQ(t.names.at(static_cast<std::size_t>(e.tag)), "exchange");
        ++open, ++begins;
        inside.clear();
      } else if (e.kind == Kind::REGION_END) {
        ASSERT_EQ(open, 1);
        --open;
        EXPECT_EQ(inside, (std::vector<std::string>{"MPI_Isend", "MPI_Irecv", "MPI_Waitall"})) << "rank " << t.rank;
      } else if (e.kind != Kind::COMPLETE) {
        if (open) inside.emplace_back(mksim::trace::kind_name(e.kind));
        else EXPECT_TRUE(e.kind == Kind::INIT || e.kind == Kind::FINALIZE || e.kind == Kind::REDUCE)
            << "rank " << t.rank << ": " << mksim::trace::kind_name(e.kind) << " outside exchange()";
      }
    }
    EXPECT_EQ(open, 0);
    EXPECT_EQ(begins, 4) << "rank " << t.rank;
  }
  // The markers move compute, never add it: a rank's compute (the CPU times of its gaps where the tracer measured
  // them, as at P = 4 on a 2-core machine, else the wall-clock gaps), summed as the folder sums it, is unchanged.
  const auto compute = [](const mksim::trace::RankTrace& t) {
    double sum = 0, prev_exit = 0;
    bool started = false;
    for (const auto& e : t.events) {
      if (e.kind == Kind::COMPLETE) continue;
      if (started) sum += e.gap_after(prev_exit);
      started = true;
      prev_exit = e.t_exit;
    }
    return sum;
  };
  for (std::size_t r = 0; r < copy.ranks.size(); ++r)
    EXPECT_NEAR(compute(copy.ranks[r]), compute(run.ranks[r]), 1e-12) << "rank " << r;
}

TEST_F(StackRegions, SkeletonHasRegionBlocksNamedByFunctionAndTheSameCallsWithout) {
  const auto with = mksim::skeletons::builder::build_skeleton(runs_);
  mksim::skeletons::builder::BuildOptions off;
  off.stack_regions = false;
  const auto without = mksim::skeletons::builder::build_skeleton(runs_, off);
  EXPECT_EQ(with.skeleton.at("version"), 2);
  std::map<std::string, int> a, b;
  count_ops(with.skeleton.at("body"), a);
  count_ops(without.skeleton.at("body"), b);
  EXPECT_GT(a["region:exchange"], 0);
  EXPECT_EQ(b.count("region:exchange"), 0u);
  for (const std::string op : {"isend", "irecv", "waitall", "reduce", "loop", "if"}) EXPECT_EQ(a[op], b[op]) << op;
  EXPECT_EQ(a["region:exchange"], a["isend"]) << "one exchange() region per isend";
  std::vector<std::vector<std::string>> bodies;
  region_bodies(with.skeleton.at("body"), bodies);
  for (const auto& ops : bodies) EXPECT_EQ(ops, (std::vector<std::string>{"isend", "irecv", "waitall"}));
  for (const auto& w : with.warnings) EXPECT_EQ(w.find("not written as a region"), std::string::npos) << w;
}

TEST_F(StackRegions, StrippedExecutableNamesRegionsByCallerAddressTheSameOnEveryRank) {
  const fs::path stripped = tmp_ / "atm2d";
  fs::copy_file(BIN + "/apps/atm2d", stripped, fs::copy_options::overwrite_existing);
  ASSERT_EQ(std::system(("strip " + stripped.string()).c_str()), 0);
  std::vector<mksim::trace::Run> runs = runs_;
  for (auto& run : runs) {
    run.executable = stripped.string();
    for (auto& t : run.ranks)
      for (auto& [h, site] : t.sites)
        for (auto& f : site.frames)
          if (fs::path(f.module).filename() == "atm2d") f.module = stripped.string();
  }
  mksim::trace::Run copy = runs[1];
  const auto rep = mksim::skeletons::builder::add_stack_regions(copy);
  ASSERT_FALSE(rep.by_address.empty());
  for (const auto& n : rep.by_address) EXPECT_EQ(n.rfind("atm2d+0x", 0), 0u) << n;
  const auto built = mksim::skeletons::builder::build_skeleton(runs);
  std::map<std::string, int> a;
  count_ops(built.skeleton.at("body"), a);
  int by_address = 0;
  for (const auto& [op, n] : a)
    if (op.rfind("region:", 0) == 0) by_address += n;
  EXPECT_EQ(by_address, a["isend"]);
  bool said = false;
  for (const auto& w : built.warnings) said = said || w.find("named by the return address") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST_F(StackRegions, NothingChangesWhenTheExecutableCannotBeRead) {
  mksim::trace::Run copy = runs_[0];
  copy.executable = "/nonexistent/atm2d";
  copy.command = {"/nonexistent/atm2d"};
  for (auto& t : copy.ranks)
    for (auto& [h, site] : t.sites)
      for (auto& f : site.frames)
        if (fs::path(f.module).filename() == "atm2d") f.module = "/nonexistent/atm2d";
  const auto events = copy.ranks[0].events.size();
  const auto rep = mksim::skeletons::builder::add_stack_regions(copy);
  EXPECT_EQ(rep.regions, 0u);
  EXPECT_EQ(copy.ranks[0].events.size(), events);
}
