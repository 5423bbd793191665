// The skeleton builder's format-v2 output (skeletons/builder/builder.hpp): region annotations of mktrace.h
// become `region` blocks that nest with loops and survive alignment across ranks and runs, and compute
// that varies within ranks gets a `dist` (regular compute does not, and such skeletons stay version 1).
// Inputs are traces written here event by event, and one real annotated program traced with OpenMPI.
#include "skeletons/builder/builder.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"
#include "trace_writer.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

namespace fs = std::filesystem;
using mksim::skeletons::builder::build_skeleton;
using mksim::skeletons::builder::BuildResult;
using mksim::trace::Event;
using mksim::trace::Kind;
using nlohmann::json;

namespace {

// One rank's trace written call by call: each call takes 1 us after `gap` seconds of compute (10 us).
struct RankWriter : test_trace::TraceWriter {
  RankWriter() : TraceWriter(1e-6, 1e-5) {}
  Event& call(Kind k, std::uint64_t site, int peer = mksim::trace::NO_RANK, int tag = mksim::trace::NO_RANK,
              long bytes = 0, double gap = 1e-5) {
    return TraceWriter::call(k, site, peer, tag, bytes, gap);
  }
};

// A complete run of `program` at P with the given parameters.
mksim::trace::Run make_run(int P, const std::map<std::string, int>& params,
                           const std::function<void(int rank, RankWriter&)>& program) {
  mksim::trace::Run run;
  run.P = P;
  run.command = {"synthetic"};
  run.dir = "synthetic-" + std::to_string(P);
  for (const auto& [k, v] : params) {
    run.params[k] = std::to_string(v);
    run.dir += "-" + k + std::to_string(v);
  }
  for (int r = 0; r < P; ++r) {
    RankWriter w;
    w.t.rank = r;
    w.t.world_size = P;
    w.t.status = mksim::trace::Status::FINALIZED;
    program(r, w);
    run.ranks.push_back(std::move(w.t));
  }
  return run;
}

// Every block of a body, depth first, with the path of region names above it.
void walk(const json& body, const std::function<void(const json&, int depth)>& f, int depth = 0) {
  for (const auto& b : body) {
    f(b, depth);
    for (const char* k : {"body", "then", "else"})
      if (b.contains(k)) walk(b[k], f, depth + 1);
  }
}

std::vector<json> blocks_of(const json& sk, const std::string& op) {
  std::vector<json> out;
  walk(sk.at("body"), [&](const json& b, int) {
    if (b.at("op") == op) out.push_back(b);
  });
  return out;
}

// Point-to-point and collective operations of a rank, as the trace has them and as the skeleton expands.
std::vector<std::string> traced_ops(const mksim::trace::RankTrace& t) {
  std::vector<std::string> ops;
  for (const auto& e : t.events) {
    if (e.kind == Kind::SEND) ops.push_back("send " + std::to_string(e.peer) + " " + std::to_string(e.bytes));
    if (e.kind == Kind::RECV) ops.push_back("recv " + std::to_string(e.peer) + " " + std::to_string(e.bytes));
    if (e.kind == Kind::ALLREDUCE) ops.push_back("allreduce " + std::to_string(e.bytes));
  }
  return ops;
}

std::vector<std::string> expanded_ops(const mksim::skeletons::Skeleton& sk, int P, const std::map<std::string, double>& params,
                                      int rank) {
  using mksim::skeletons::ExpandedOp;
  std::vector<std::string> ops;
  for (const auto& x : mksim::skeletons::expand_rank(sk, mksim::skeletons::bind_parameters(sk, P, params), rank)) {
    const std::string size = std::to_string(static_cast<long>(x.size_bytes));
    if (x.kind == ExpandedOp::Kind::SEND) ops.push_back("send " + std::to_string(x.peer) + " " + size);
    if (x.kind == ExpandedOp::Kind::RECV) ops.push_back("recv " + std::to_string(x.peer) + " " + size);
    if (x.kind == ExpandedOp::Kind::COLLECTIVE) ops.push_back("allreduce " + size);
  }
  return ops;
}

// A ring program with regions: "all" opened after MPI_Init and never closed (a region around
// MPI_Finalize), "solve" around the time steps, "step" around each step's exchange. The first step sends
// more than the others, so its region is not folded with them. Odd ranks meet the names in another order
// (their name tables differ).
void annotated_ring(int rank, RankWriter& w, int P, int steps) {
  if (rank % 2) w.t.names = {"step", "solve", "all"};
  w.call(Kind::INIT, 1, -1, -1, 0, 0);
  w.mark(Kind::REGION_BEGIN, 10, "all");
  w.mark(Kind::REGION_BEGIN, 11, "solve");
  for (int s = 0; s < steps; ++s) {
    w.mark(Kind::REGION_BEGIN, 12, "step", 2e-4);
    w.call(Kind::SEND, 20, (rank + 1) % P, 0, s == 0 ? 64 : 8);
    w.call(Kind::RECV, 21, (rank + P - 1) % P, 0, s == 0 ? 64 : 8);
    w.mark(Kind::REGION_END, 13, "step", 3e-5);
  }
  w.mark(Kind::REGION_END, 14, "solve");
  w.call(Kind::ALLREDUCE, 22, -1, -1, 8);
  w.call(Kind::FINALIZE, 2);
}

// Deterministic durations: `cv` times a centred value from a multiplicative congruential sequence.
struct Jitter {
  std::uint64_t state;
  double next(double mean, double cv) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u = static_cast<double>(state >> 11) * 0x1.0p-53;  // uniform [0, 1)
    return mean * (1 + cv * std::sqrt(3.0) * (2 * u - 1));         // uniform with that cv
  }
};

}  // namespace

TEST(BuilderV2, RegionAnnotationsBecomeNestedRegionBlocks) {
  std::vector<mksim::trace::Run> runs;
  for (auto [P, steps] : {std::pair{3, 4}, {4, 4}, {4, 6}, {5, 5}, {6, 4}})
    runs.push_back(make_run(P, {{"steps", steps}}, [P = P, steps = steps](int r, RankWriter& w) { annotated_ring(r, w, P, steps); }));
  const BuildResult res = build_skeleton(runs);
  const json& sk = res.skeleton;
  const std::string text = sk.dump(2);
  EXPECT_EQ(sk.at("version"), 2) << text;
  for (const auto& w : res.warnings) EXPECT_EQ(w.find("region"), std::string::npos) << w;
  // all > solve > (step, loop > step), then the allreduce inside "all" but after "solve"
  std::vector<std::pair<std::string, int>> regions;
  walk(sk.at("body"), [&](const json& b, int depth) {
    if (b.at("op") == "region") regions.emplace_back(b.at("name").get<std::string>(), depth);
  });
  EXPECT_EQ(regions, (std::vector<std::pair<std::string, int>>{{"all", 0}, {"solve", 1}, {"step", 2}, {"step", 3}})) << text;
  const auto all = blocks_of(sk, "region").front();
  ASSERT_EQ(all.at("name"), "all");
  bool allreduce_after_solve = false, seen_solve = false;
  for (const auto& b : all.at("body")) {
    if (b.at("op") == "region") seen_solve = true;
    if (b.at("op") == "allreduce") allreduce_after_solve = seen_solve;
  }
  EXPECT_TRUE(allreduce_after_solve) << text;
  const auto loops = blocks_of(sk, "loop");
  ASSERT_EQ(loops.size(), 1u) << text;
  EXPECT_EQ(loops[0].at("count"), "steps - 1") << text;
  // the compute before a step's begin is before its region; the ones after the begin and before the end
  // are its first and last blocks
  ASSERT_EQ(loops[0].at("body").size(), 2u) << text;
  EXPECT_EQ(loops[0].at("body")[0].at("op"), "compute") << text;
  const json& step = loops[0].at("body")[1];
  EXPECT_EQ(step.at("op"), "region") << text;
  ASSERT_EQ(step.at("body").size(), 5u) << text;
  EXPECT_NEAR(std::stod(step.at("body")[4].at("seconds").get<std::string>()), 3e-5, 1e-9) << text;
  EXPECT_NEAR(std::stod(step.at("body")[0].at("seconds").get<std::string>()), 1e-5, 1e-9) << text;

  // the reader takes it, and the regions do not change what a rank does: a held-out run agrees
  const auto parsed = mksim::skeletons::parse_skeleton(text, "built.json");
  const int P = 8, steps = 7;
  const auto held = make_run(P, {{"steps", steps}}, [&](int r, RankWriter& w) { annotated_ring(r, w, P, steps); });
  for (int r = 0; r < P; ++r)
    EXPECT_EQ(expanded_ops(parsed, P, {{"steps", steps}}, r), traced_ops(held.ranks[static_cast<std::size_t>(r)])) << "rank " << r;
}

TEST(BuilderV2, RegionsThatRanksRunDifferentlyAreLeftOutWithAWarning) {
  // rank 0 wraps its exchange in a region, the others make the same calls without it
  auto program = [](int P) {
    return [P](int r, RankWriter& w) {
      w.call(Kind::INIT, 1, -1, -1, 0, 0);
      if (r == 0) w.mark(Kind::REGION_BEGIN, 10, "io");
      w.call(Kind::SEND, 20, (r + 1) % P, 0, 8);
      w.call(Kind::RECV, 21, (r + P - 1) % P, 0, 8);
      if (r == 0) w.mark(Kind::REGION_END, 11, "io");
      w.call(Kind::FINALIZE, 2);
    };
  };
  const BuildResult res = build_skeleton({make_run(2, {{"N", 1}}, program(2)), make_run(4, {{"N", 1}}, program(4))});
  EXPECT_TRUE(blocks_of(res.skeleton, "region").empty()) << res.skeleton.dump(2);
  EXPECT_EQ(res.skeleton.at("version"), 1);
  bool warned = false;
  for (const auto& w : res.warnings) warned = warned || w.find("region \"io\" is not written as a region") != std::string::npos;
  EXPECT_TRUE(warned);
  const auto parsed = mksim::skeletons::parse_skeleton(res.skeleton.dump(), "built.json");
  for (int r = 0; r < 4; ++r) EXPECT_EQ(expanded_ops(parsed, 4, {{"N", 1}}, r).size(), 2u);
}

TEST(BuilderV2, ComputeThatVariesWithinRanksGetsADistribution) {
  // per step: a compute that varies by 30% from step to step (the first step, a warm-up, 20 times longer),
  // and a compute that does not (1% jitter, and two steps stretched 20 times by another process)
  auto program = [](int P, int steps) {
    return [P, steps](int r, RankWriter& w) {
      Jitter j{static_cast<std::uint64_t>(1000 * P + r)};
      w.call(Kind::INIT, 1, -1, -1, 0, 0);
      for (int s = 0; s < steps; ++s) {
        const double scale = 1e-3 * (1 + r % 2);  // ranks differ in their mean: that is the regression's
        w.call(Kind::SEND, 20, (r + 1) % P, 0, 8, s == 0 ? 20 * scale : j.next(scale, 0.3));
        const double steady = (s == 7 || s == 31) ? 20 * 5e-4 : j.next(5e-4, 0.01);
        w.call(Kind::RECV, 21, (r + P - 1) % P, 0, 8, steady);
      }
      w.call(Kind::FINALIZE, 2);
    };
  };
  std::vector<mksim::trace::Run> runs;
  for (auto [P, steps] : {std::pair{2, 40}, {4, 40}, {2, 50}}) runs.push_back(make_run(P, {{"steps", steps}}, program(P, steps)));
  const BuildResult res = build_skeleton(runs);
  const std::string text = res.skeleton.dump(2);
  EXPECT_EQ(res.skeleton.at("version"), 2);
  std::vector<json> with_dist, without;
  for (const auto& c : blocks_of(res.skeleton, "compute")) (c.contains("dist") ? with_dist : without).push_back(c);
  ASSERT_EQ(with_dist.size(), 1u) << text;
  const json& c = with_dist[0];
  // 332 steps after the first of each rank: empirical deciles of a uniform distribution of cv 0.3
  ASSERT_EQ(c.at("dist").at("type"), "empirical") << text;
  const auto q = c.at("dist").at("quantiles").get<std::vector<double>>();
  ASSERT_EQ(q.size(), 11u);
  const double half = 0.3 * std::sqrt(3.0);  // the range of the multipliers: 1 -+ 0.52
  for (std::size_t i = 1; i < 10; ++i) EXPECT_NEAR(q[i], 1 - half + 2 * half * static_cast<double>(i) / 10, 0.08) << i << "\n" << text;
  EXPECT_EQ(c.at("fit").at("dist").at("samples"), 6 * 39 + 2 * 49);
  EXPECT_NEAR(c.at("fit").at("dist").at("cv").get<double>(), 0.3, 0.05) << text;
  // the steady compute, the other one in the loop, has no dist, whatever its two outliers did to its stddev
  const auto loops = blocks_of(res.skeleton, "loop");
  ASSERT_EQ(loops.size(), 1u) << text;
  std::vector<bool> has_dist;
  for (const auto& b : loops[0].at("body"))
    if (b.at("op") == "compute") has_dist.push_back(b.contains("dist"));
  EXPECT_EQ(has_dist, (std::vector<bool>{true, false})) << text;
  // the reader takes the skeleton, and at another size the draws average to the block's mean
  const auto parsed = mksim::skeletons::parse_skeleton(text, "built.json");
  const mksim::skeletons::Loop* loop = nullptr;
  for (const auto& top : parsed.groups.at(0).body)
    if (const auto* l = std::get_if<mksim::skeletons::Loop>(&top.op)) loop = l;
  ASSERT_NE(loop, nullptr);
  const auto& block = loop->body.at(0);
  const auto& compute = std::get<mksim::skeletons::Compute>(block.op);
  ASSERT_TRUE(compute.dist.has_value());
  auto frame = mksim::skeletons::bind_parameters(parsed, 4, {{"steps", 400}});
  mksim::skeletons::bind_rank(parsed, frame, 0);
  const double mean = compute.amount.eval(frame);
  double sum = 0;
  int n = 0;
  for (const auto& op : mksim::skeletons::expand_rank(parsed, frame, 0))
    if (op.block == block.index) {
      sum += op.amount;
      ++n;
    }
  ASSERT_EQ(n, 400);
  EXPECT_NEAR(sum / n, mean, 5 * 0.3 * mean / std::sqrt(400.0));
}

TEST(BuilderV2, FewSamplesGiveANormalAndRegularProgramsStayVersion1) {
  auto program = [](int P, int steps, double cv) {
    return [P, steps, cv](int r, RankWriter& w) {
      Jitter j{static_cast<std::uint64_t>(77 * P + r)};
      w.call(Kind::INIT, 1, -1, -1, 0, 0);
      for (int s = 0; s < steps; ++s) w.call(Kind::BARRIER, 20, -1, -1, 0, j.next(2e-3, cv));
      w.call(Kind::FINALIZE, 2);
    };
  };
  {
    const BuildResult res = build_skeleton({make_run(2, {{"steps", 9}}, program(2, 9, 0.2)), make_run(3, {{"steps", 9}}, program(3, 9, 0.2))});
    const auto computes = blocks_of(res.skeleton, "compute");
    std::vector<json> dists;
    for (const auto& c : computes)
      if (c.contains("dist")) dists.push_back(c.at("dist"));
    ASSERT_EQ(dists.size(), 1u) << res.skeleton.dump(2);  // 5 ranks x 8 steps: 40 samples
    EXPECT_EQ(dists[0].at("type"), "normal");
    EXPECT_NEAR(dists[0].at("cv").get<double>(), 0.2, 0.08);
    EXPECT_EQ(res.skeleton.at("version"), 2);
  }
  {
    const BuildResult res = build_skeleton({make_run(2, {{"steps", 9}}, program(2, 9, 0.01)), make_run(3, {{"steps", 9}}, program(3, 9, 0.01))});
    for (const auto& c : blocks_of(res.skeleton, "compute")) EXPECT_FALSE(c.contains("dist")) << c.dump();
    EXPECT_EQ(res.skeleton.at("version"), 1);
  }
}

// ---- a real annotated program, traced with OpenMPI ----

namespace {

const std::string BIN = MKSIM_BINARY_DIR;

const char* ANNOTATED_C = R"(#include <mpi.h>
#include <stdlib.h>
#include "mktrace.h"
/* a ring exchange per step inside regions; usage: ring STEPS */
int main(int argc, char **argv) {
  int rank, P, s, steps = argc > 1 ? atoi(argv[1]) : 4;
  double v = 1, w = 0, sum = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  MKTRACE_REGION_BEGIN("setup");
  MPI_Bcast(&v, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MKTRACE_REGION_END("setup");
  MKTRACE_REGION_BEGIN("solve");
  for (s = 0; s < steps; ++s) {
    MKTRACE_REGION_BEGIN("halo");
    MPI_Sendrecv(&v, 1, MPI_DOUBLE, (rank + 1) % P, 3, &w, 1, MPI_DOUBLE, (rank + P - 1) % P, 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MKTRACE_REGION_END("halo");
    v = 0.5 * (v + w);
  }
  MKTRACE_REGION_END("solve");
  MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
)";

class BuilderTraced : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() / ("mksim_builder_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }
  fs::path tmp_;
};

}  // namespace

TEST_F(BuilderTraced, AnnotatedProgramGetsItsRegions) {
  const fs::path src = tmp_ / "ring.c", exe = tmp_ / "ring";
  { std::ofstream(src) << ANNOTATED_C; }
  ASSERT_EQ(std::system((std::string(MKSIM_MPICC) + " -O1 -I" + BIN + "/trace -o " + exe.string() + " " + src.string()).c_str()), 0);
  std::vector<mksim::trace::Run> runs;
  for (auto [P, steps] : {std::pair{2, 3}, {3, 3}, {2, 5}}) {
    const fs::path dir = tmp_ / ("ring-" + std::to_string(P) + "-" + std::to_string(steps));
    const std::string cmd = BIN + "/trace/mktrace -np " + std::to_string(P) + " --param steps=" + std::to_string(steps) + " -o " +
                            dir.string() + " -- " + exe.string() + " " + std::to_string(steps) + " >" + dir.string() + ".log 2>&1";
    const int rc = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
    runs.push_back(mksim::trace::read_run(dir.string(), {.require_complete = true}));
  }
  const BuildResult res = build_skeleton(runs);
  const std::string text = res.skeleton.dump(2);
  EXPECT_EQ(res.skeleton.at("version"), 2);
  std::vector<std::pair<std::string, int>> regions;
  walk(res.skeleton.at("body"), [&](const json& b, int depth) {
    if (b.at("op") == "region") regions.emplace_back(b.at("name").get<std::string>(), depth);
  });
  // setup and solve at the top; halo inside the step loop of solve (and once before it if the first step
  // was folded apart: the loop count says which)
  ASSERT_GE(regions.size(), 3u) << text;
  EXPECT_EQ(regions[0], (std::pair<std::string, int>{"setup", 0})) << text;
  EXPECT_EQ(regions[1], (std::pair<std::string, int>{"solve", 0})) << text;
  for (std::size_t i = 2; i < regions.size(); ++i) EXPECT_EQ(regions[i].first, "halo") << text;
  const auto loops = blocks_of(res.skeleton, "loop");
  ASSERT_EQ(loops.size(), 1u) << text;
  EXPECT_EQ(loops[0].at("body").back().at("op"), "region") << text;
  // a fourth run, not used to build, makes the same calls as the skeleton says
  const auto parsed = mksim::skeletons::parse_skeleton(text, "built.json");
  const fs::path dir = tmp_ / "ring-4-6";
  const std::string cmd = BIN + "/trace/mktrace -np 4 --param steps=6 -o " + dir.string() + " -- " + exe.string() + " 6 >" +
                          dir.string() + ".log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto held = mksim::trace::read_run(dir.string(), {.require_complete = true});
  for (int r = 0; r < 4; ++r) {
    std::size_t sendrecvs = 0;
    for (const auto& e : held.ranks[static_cast<std::size_t>(r)].events) sendrecvs += e.kind == Kind::SENDRECV;
    std::size_t isends = 0;
    for (const auto& op : mksim::skeletons::expand_rank(parsed, mksim::skeletons::bind_parameters(parsed, 4, {{"steps", 6}}), r))
      isends += op.kind == mksim::skeletons::ExpandedOp::Kind::ISEND;
    EXPECT_EQ(isends, sendrecvs) << "rank " << r << "\n" << text;
  }
}
