// The skeleton builder's format-v2 output (skeletons/builder/builder.hpp): region annotations of mktrace.h
// become `region` blocks that nest with loops and survive alignment across ranks and runs, and compute
// that varies within ranks gets a `dist` (regular compute does not, and such skeletons stay version 1).
// Inputs are traces written here event by event, and one real annotated program traced with OpenMPI.
#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/holdout.hpp"
#include "skeletons/expr.hpp"
#include "skeletons/builder/pool.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"
#include "trace_writer.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

// Work that shrinks by 8 per level of a multigrid V-cycle (NPB MG's smoothing, one call site for every level): the
// durations of the loop's gap are skewed by a pattern, not by outliers, and their median is small. The spread
// relative to it (interquartile range / 1.349) is then wider than the durations' own cv (3.9 against 0.98 for MG), and
// the lognormal drawn with it had a tail the slowest of 64 ranks hit at every level (MG from mktrace traces: 0.27 s
// predicted at P = 64 where the same skeleton without the excess drew 0.14 s). The cv written is never more than
// the sample's.
TEST(BuilderV2, ADistributionIsNeverWiderThanItsDurations) {
  auto program = [](int r, RankWriter& w) {
    (void)r;
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    for (int s = 0; s < 9; ++s) w.call(Kind::BARRIER, 20, -1, -1, 0, 2e-3 / std::pow(8.0, s % 3));
    w.call(Kind::FINALIZE, 2);
  };
  const BuildResult res = build_skeleton({make_run(2, {{"steps", 9}}, program), make_run(3, {{"steps", 9}}, program)});
  std::vector<json> dists;
  for (const auto& c : blocks_of(res.skeleton, "compute"))
    if (c.contains("dist")) dists.push_back(c);
  ASSERT_EQ(dists.size(), 1u) << res.skeleton.dump(2);  // 5 ranks x 8 executions after the first: 40 samples
  const json& fit = dists[0].at("fit").at("dist");
  // after the first: 3 x 1/8, 3 x 1/64, 2 x 1 (of 2 ms) per rank: spread 1.95, cv 1.34
  EXPECT_GT(fit.at("spread").get<double>(), 1.4 * fit.at("cv").get<double>()) << fit.dump();
  EXPECT_NEAR(fit.at("cv").get<double>(), 1.34, 0.01) << fit.dump();
  EXPECT_EQ(dists[0].at("dist").at("type"), "lognormal");
  EXPECT_NEAR(dists[0].at("dist").at("cv").get<double>(), fit.at("cv").get<double>(), 1e-3) << dists[0].dump();
}

// A V-cycle's levels (NPB MG: one call site for every level, a quarter of the face and an eighth of the work per
// level) fold into one loop with sizes as statistics; its work varies by a pattern that every rank follows in the
// same order, so its distribution is drawn alike on every rank ("draw": "same"). Drawn by each rank on its own (cv
// 1.2 for MG from mktrace traces), the slowest of P ranks set the pace of every exchange: MG's replay at P = 64 was
// 60% waiting and 3 to 6 times SMPI's time. Sizes that vary by each rank's data keep each rank's own draws.
TEST(BuilderV2, WorkThatVariesWithTheSizesOfItsLoopAlikeOnEveryRankIsDrawnAlike) {
  auto program = [](bool by_rank) {
    return [by_rank](int r, RankWriter& w) {
      const int P = w.t.world_size;
      w.call(Kind::INIT, 1, -1, -1, 0, 0);
      // by rank: particles that cross a face, as many as the rank's data says (a hash of step and rank)
      auto bytes = [by_rank](int q, int s) {
        return by_rank ? 512L * (1 + static_cast<long>((static_cast<std::uint32_t>(s + 1) * 2654435761u ^ static_cast<std::uint32_t>(q + 1) * 40503u) % 13u))
                       : 8192L >> (2 * (s % 3));
      };
      for (int s = 0; s < 24; ++s) {
        w.call(Kind::SEND, 20, (r + 1) % P, 0, bytes(r, s), 2e-3 * static_cast<double>(bytes(r, s)) / 8192.0);
        w.call(Kind::RECV, 21, (r + P - 1) % P, 0, bytes((r + P - 1) % P, s));
      }
      w.call(Kind::FINALIZE, 2);
    };
  };
  mksim::skeletons::builder::BuildOptions vary;
  vary.vary_sizes = 1;
  for (const bool by_rank : {false, true}) {
    const BuildResult res = build_skeleton({make_run(2, {}, program(by_rank)), make_run(4, {}, program(by_rank))}, vary);
    std::vector<json> dists;
    for (const auto& c : blocks_of(res.skeleton, "compute"))
      if (c.contains("dist")) dists.push_back(c);
    ASSERT_EQ(dists.size(), 1u) << res.skeleton.dump(2);
    const json send = blocks_of(res.skeleton, "send").at(0);
    ASSERT_TRUE(send.at("fit").contains("size_per_iteration")) << send.dump();
    EXPECT_EQ(send.at("fit").at("size_per_iteration").at("alike_on_ranks"), !by_rank) << send.dump();
    EXPECT_EQ(dists[0].at("dist").value("draw", "rank"), by_rank ? "rank" : "same") << dists[0].dump();
    // expanded (as replayed): every rank's k-th execution draws the same amount, or each its own
    const auto parsed = mksim::skeletons::parse_skeleton(res.skeleton.dump(), "built.json");
    std::vector<std::vector<double>> amounts(3);
    for (int rank = 0; rank < 3; ++rank)
      for (const auto& op : mksim::skeletons::expand_rank(parsed, mksim::skeletons::bind_parameters(parsed, 8, {}), rank))
        if (op.kind == mksim::skeletons::ExpandedOp::Kind::COMPUTE) amounts[static_cast<std::size_t>(rank)].push_back(op.amount);
    ASSERT_GT(amounts[0].size(), 20u);
    if (by_rank) {
      EXPECT_NE(amounts[0], amounts[1]);
    } else {
      EXPECT_EQ(amounts[0], amounts[1]);
      EXPECT_EQ(amounts[0], amounts[2]);
      EXPECT_NE(*std::min_element(amounts[0].begin(), amounts[0].end()), *std::max_element(amounts[0].begin(), amounts[0].end()));
    }
  }
}

// ---- compute pooled over ranks, rank sets as probabilities, sizes in their domain (issue 17) ----

namespace {

// A ring step: `work(rank, step)` seconds of compute before the send, then the receive.
mksim::trace::Run ring_run(int P, int N, int steps, const std::function<double(int rank, int step)>& work) {
  return make_run(P, {{"N", N}}, [&](int r, RankWriter& w) {
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    for (int s = 0; s < steps; ++s) {
      w.call(Kind::SEND, 20, (r + 1) % P, 0, 8, work(r, s));
      w.call(Kind::RECV, 21, (r + P - 1) % P, 0, 8, 2e-6);
    }
    w.call(Kind::FINALIZE, 2);
  });
}

// The compute block before the ring's send (the first compute of the step loop) and what it expands to.
json send_compute(const json& sk) {
  for (const auto& l : blocks_of(sk, "loop"))
    for (const auto& b : l.at("body"))
      if (b.at("op") == "compute") return b;
  return json();
}
double compute_at(const json& sk, int P, int N, int rank) {
  const auto parsed = mksim::skeletons::parse_skeleton(sk.dump(), "built.json");
  for (const auto& op : mksim::skeletons::expand_rank(parsed, mksim::skeletons::bind_parameters(parsed, P, {{"N", N}}), rank))
    if (op.kind == mksim::skeletons::ExpandedOp::Kind::COMPUTE && op.amount > 1e-5) return op.amount;
  return -1;
}

}  // namespace

TEST(BuilderPool, RankValueTrimsOutlyingIterations) {
  using namespace mksim::skeletons::builder;
  RankDurations d;
  d.n = 7;
  d.first = 1.03;
  d.rest = {{0.98, 1}, {1.0, 2}, {1.01, 1}, {1.02, 1}, {30, 1}};  // one duration stretched by another process
  RankValue v = rank_value(d);
  EXPECT_EQ(v.trimmed, 1u);
  EXPECT_NEAR(v.value, (1.03 + 6 * 1.002) / 7, 1e-3);
  EXPECT_NEAR(v.centre, 1.0, 0.01);
  d.first = 5;  // a warm-up is the program's (an initialisation): kept
  v = rank_value(d);
  EXPECT_EQ(v.trimmed, 1u);
  EXPECT_NEAR(v.value, (5 + 6 * 1.002) / 7, 1e-3);
}

TEST(BuilderPool, CpuTimesAreKeptWhole) {
  // a CPU time 30 times the others is the program's (page faults, a cold cache), not another process's time
  using namespace mksim::skeletons::builder;
  RankDurations d;
  d.n = 7;
  d.first = 1.03;
  d.rest = {{0.98, 1}, {1.0, 2}, {1.01, 1}, {1.02, 1}, {30, 1}};
  d.cpu = true;
  const RankValue v = rank_value(d);
  EXPECT_EQ(v.trimmed, 0u);
  EXPECT_NEAR(v.value, (1.03 + 0.98 + 2.0 + 1.01 + 1.02 + 30) / 7, 1e-9);
  EXPECT_NEAR(v.centre, 1.0, 0.01);  // the median still decides whether ranks agree
  // wall-clock times: a duration 2 times the median is noise the program makes, kept; 30 times is trimmed
  d.cpu = false;
  d.rest = {{0.98, 1}, {1.0, 2}, {1.01, 1}, {2.0, 1}, {30, 1}};
  const RankValue w = rank_value(d);
  EXPECT_EQ(w.trimmed, 1u);
  EXPECT_NEAR(w.value, (1.03 + 6 * (0.98 + 2.0 + 1.01 + 2.0) / 5) / 7, 1e-9);  // the 30 counts as the kept mean
}

TEST(BuilderPool, BalancedRanksArePooledAndOutliersTrimmed) {
  // 1 ms * N/100 / P per step on every rank, 5% noise per step, ranks within 4% of each other; in one run a
  // rank's three steps are stretched 30 times and another rank is 3 times slower throughout (time-sliced)
  std::vector<mksim::trace::Run> runs;
  for (int P : {2, 4, 8})
    for (int N : {100, 200}) {
      const bool noisy = P == 8 && N == 200;
      runs.push_back(ring_run(P, N, 12, [&, P, N](int r, int s) {
        Jitter j{static_cast<std::uint64_t>(1000 * P + 10 * N + 97 * r + s)};
        double t = 1e-3 * N / 100 / P * (1 + 0.04 * std::sin(7.0 * r + P)) * j.next(1, 0.05);
        if (noisy && r == 3 && s % 4 == 2) t *= 30;
        if (noisy && r == 5) t *= 3;
        return t;
      }));
    }
  mksim::skeletons::builder::BuildOptions pooled;
  pooled.pool_compute = true;
  const BuildResult res = build_skeleton(runs, pooled);
  const json c = send_compute(res.skeleton);
  ASSERT_TRUE(c.contains("fit")) << res.skeleton.dump(2);
  const json& pool = c.at("fit").at("pool");
  EXPECT_EQ(pool.at("decision"), "pooled") << pool.dump();
  EXPECT_GE(pool.at("trimmed_durations").get<int>(), 3) << pool.dump();
  EXPECT_GE(pool.at("trimmed_ranks").get<int>(), 1) << pool.dump();
  EXPECT_LT(pool.at("largest_ratio").get<double>(), 4.0);
  // the noisy run predicted as the clean program: a plain mean over its ranks and steps would be 60% high
  const double want = 1e-3 * 200 / 100 / 8;
  for (int rank : {0, 3, 5}) EXPECT_NEAR(compute_at(res.skeleton, 8, 200, rank), want, 0.1 * want) << c.dump(2);
  // and the ranks get one model: no condition on rank in it
  EXPECT_EQ(c.at("seconds").get<std::string>().find("rank"), std::string::npos) << c.dump(2);
  // each rank's plain mean (the default) misses the clean program at that run: it leaves out only a run's lone noisy
  // rank (rank 3 here, 30 times in 3 steps), and rank 5's 3 times stays in
  mksim::skeletons::builder::BuildOptions plain;
  plain.pool_compute = false;
  const BuildResult unpooled = build_skeleton(runs, plain);
  EXPECT_GT(std::fabs(compute_at(unpooled.skeleton, 8, 200, 0) - want), 0.05 * want) << send_compute(unpooled.skeleton).dump(2);
}

TEST(BuilderPool, ALoneNoisyRankIsLeftOutOfItsRunsMeanAnImbalanceEveryRunHasIsNot) {
  // 1 ms * N/100 / P per step, 3% noise; rank 0 does twice the others' work in every run (the program's); in one run
  // one other rank is 4 times slower throughout (descheduled on a loaded machine): the default path (each rank's
  // mean, their mean per run regressed) leaves that rank out and keeps rank 0
  auto build = [](bool noisy) {
    std::vector<mksim::trace::Run> runs;
    for (int P : {4, 6, 8})
      for (int N : {100, 200})
        runs.push_back(ring_run(P, N, 8, [=](int r, int s) {
          Jitter j{static_cast<std::uint64_t>(1000 * P + 10 * N + 97 * r + s)};
          double t = 1e-3 * N / 100 / P * (r == 0 ? 3.5 : 1) * j.next(1, 0.03);
          if (noisy && P == 6 && N == 100 && r == 4) t *= 4;
          return t;
        }));
    return build_skeleton(runs).skeleton;
  };
  const json clean = build(false), noisy = build(true);
  const json c = send_compute(noisy);
  ASSERT_TRUE(c.contains("fit")) << noisy.dump(2);
  const json& trimmed = c.at("fit").at("seconds").at("trimmed_noisy_ranks");
  ASSERT_EQ(trimmed.size(), 1u) << c.dump(2);
  EXPECT_NE(trimmed[0].get<std::string>().find("rank 4"), std::string::npos) << trimmed.dump();
  EXPECT_FALSE(send_compute(clean).at("fit").at("seconds").contains("trimmed_noisy_ranks")) << send_compute(clean).dump(2);
  // rank 0's work stays in the mean, the noisy rank does not (with it, the mean at P = 6, N = 100 is 50% high)
  for (int P : {4, 6, 8})
    for (int N : {100, 200}) {
      const double want = 1e-3 * N / 100 / P * (2.5 + P) / P, got = compute_at(noisy, P, N, 1);
      EXPECT_NEAR(got, want, 0.08 * want) << P << " " << N << "\n" << c.dump(2);
    }
  // and the two builds predict alike at a P never traced (the mean over ranks, (2.5 + P) / P^2, is no single power
  // law: further out, their noise decides between laws)
  for (int P : {16}) EXPECT_NEAR(compute_at(noisy, P, 200, 1), compute_at(clean, P, 200, 1), 0.05 * compute_at(clean, P, 200, 1)) << P;
}

// ---- a loop's warm-up (has_warm_up) ----

namespace {

// The ring of ring_run with `steps` a parameter too.
mksim::trace::Run ring_steps_run(int P, int N, int steps, const std::function<double(int rank, int step)>& work) {
  return make_run(P, {{"N", N}, {"steps", steps}}, [&](int r, RankWriter& w) {
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    for (int s = 0; s < steps; ++s) {
      w.call(Kind::SEND, 20, (r + 1) % P, 0, 8, work(r, s));
      w.call(Kind::RECV, 21, (r + P - 1) % P, 0, 8, 2e-6);
    }
    w.call(Kind::FINALIZE, 2);
  });
}

std::vector<mksim::trace::Run> ring_steps_runs(const std::function<double(int P, int N, int rank, int step)>& work) {
  std::vector<mksim::trace::Run> runs;
  for (int P : {2, 4})
    for (int N : {100, 200})
      for (int steps : {10, 20})
        runs.push_back(ring_steps_run(P, N, steps, [&, P, N, steps](int r, int s) {
          Jitter j{static_cast<std::uint64_t>(1000 * P + 10 * N + 97 * r + 7 * steps + s)};
          return work(P, N, r, s) * j.next(1, 0.02);
        }));
  return runs;
}

// The block just before the first loop of a skeleton's body (where a peeled warm-up goes); null when there is none.
json block_before_first_loop(const json& body) {
  std::size_t loop = 0;
  while (loop < body.size() && body[loop].at("op") != "loop") ++loop;
  return loop >= 1 && loop < body.size() ? body[loop - 1] : json();
}

// A rank's compute, all of it, at a configuration.
double total_compute(const json& sk, int P, int N, int steps, int rank) {
  const auto parsed = mksim::skeletons::parse_skeleton(sk.dump(), "built.json");
  double sum = 0;
  for (const auto& op : mksim::skeletons::expand_rank(parsed, mksim::skeletons::bind_parameters(parsed, P, {{"N", N}, {"steps", steps}}), rank))
    if (op.kind == mksim::skeletons::ExpandedOp::Kind::COMPUTE) sum += op.amount;
  return sum;
}

}  // namespace

TEST(BuilderWarmUp, AFirstStepManyTimesTheOthersIsOncePerRunBeforeTheLoop) {
  // 1 ms * N/100/P per step, the first step 40 times that (a first touch of the arrays it writes), 2% noise
  const auto steady = [](int P, int N) { return 1e-3 * N / 100 / P; };
  const auto runs = ring_steps_runs([&](int P, int N, int, int s) { return steady(P, N) * (s == 0 ? 40 : 1); });
  const BuildResult res = build_skeleton(runs);
  const json& body = res.skeleton.at("body");
  const json warm = block_before_first_loop(body);
  ASSERT_TRUE(warm.is_object() && warm.at("op") == "compute") << body.dump(2);
  ASSERT_TRUE(warm.at("fit").contains("warm_up")) << warm.dump(2);
  EXPECT_GT(warm.at("fit").at("warm_up").at("share").get<double>(), 0.5) << warm.dump(2);
  // the step is the steady step, the warm-up what the first step took beyond it
  const auto parsed = mksim::skeletons::parse_skeleton(res.skeleton.dump(), "built.json");
  const auto ops = mksim::skeletons::expand_rank(parsed, mksim::skeletons::bind_parameters(parsed, 4, {{"N", 200}, {"steps", 10}}), 1);
  ASSERT_FALSE(ops.empty());
  std::vector<double> computes;
  for (const auto& op : ops)
    if (op.kind == mksim::skeletons::ExpandedOp::Kind::COMPUTE) computes.push_back(op.amount);
  ASSERT_GE(computes.size(), 2u);
  EXPECT_NEAR(computes[0], 39 * steady(4, 200), 0.1 * 39 * steady(4, 200)) << body.dump(2);
  EXPECT_NEAR(computes[1], steady(4, 200), 0.05 * steady(4, 200)) << body.dump(2);
  const json c = send_compute(res.skeleton);
  ASSERT_TRUE(c.contains("seconds")) << body.dump(2);
  // every rank's compute at step counts never traced: 39 steps' worth once, plus one per step
  for (int steps : {5, 100, 1000}) {
    const double want = (39 + steps) * steady(4, 200), got = total_compute(res.skeleton, 4, 200, steps, 2);
    EXPECT_NEAR(got, want, 0.05 * want) << steps << " steps\n" << body.dump(2);
  }
}

// The demo's runs (issue 17): 5 steps, one run of 8; the first step takes 30 times the others at every rank, the
// second too at even ranks only, and one rank of the run of 8 has one step slowed 5 times by the machine. The warm-up
// is still peeled: runs of 8 steps have no more warm-up steps than runs of 5 (each group's median, where a sort of
// all gaps put the even ranks' two warm-up steps in the upper half), and one rank's spike is no periodic heavy step.
TEST(BuilderWarmUp, TwoWarmUpStepsAtSomeRanksAndOneSpikeAreStillAWarmUp) {
  const auto steady = [](int P, int N) { return 1e-3 * N / 100 / P; };
  std::vector<mksim::trace::Run> runs;
  for (auto [P, N, steps] : {std::tuple{2, 100, 5}, {2, 200, 5}, {4, 100, 5}, {4, 200, 5}, {4, 100, 8}})
    runs.push_back(ring_steps_run(P, N, steps, [&, P = P, N = N, steps = steps](int r, int s) {
      Jitter j{static_cast<std::uint64_t>(1000 * P + 10 * N + 97 * r + 7 * steps + s)};
      const double warm = s == 0 || (s == 1 && r % 2 == 0) ? 30 : 1;
      const double spike = steps == 8 && r == 3 && s == 6 ? 5 : 1;
      return steady(P, N) * warm * spike * j.next(1, 0.02);
    }));
  const BuildResult res = build_skeleton(runs);
  const json& body = res.skeleton.at("body");
  const json warm = block_before_first_loop(body);
  ASSERT_TRUE(warm.is_object() && warm.at("op") == "compute") << body.dump(2);
  ASSERT_TRUE(warm.at("fit").contains("warm_up")) << body.dump(2);
  // at 100 steps, never traced: the ranks' mean is 43.5 steady steps of warm-up plus one per step
  double sum = 0;
  for (int r = 0; r < 4; ++r) sum += total_compute(res.skeleton, 4, 200, 100, r);
  const double want = (43.5 + 100) * steady(4, 200);
  EXPECT_NEAR(sum / 4, want, 0.1 * want) << body.dump(2);
}

TEST(BuilderWarmUp, AHeavyStepEveryTenIsTheLoopsOwn) {
  // one step in ten takes 20 times the others (a checkpoint): more of them in longer runs, so no warm-up
  const auto steady = [](int P, int N) { return 1e-3 * N / 100 / P; };
  const auto runs = ring_steps_runs([&](int P, int N, int, int s) { return steady(P, N) * (s % 10 == 5 ? 20 : 1); });
  const BuildResult res = build_skeleton(runs);
  for (const auto& c : blocks_of(res.skeleton, "compute"))
    EXPECT_FALSE(c.contains("fit") && c.at("fit").contains("warm_up")) << c.dump(2);
  // the mean per step keeps the heavy step: 2.9 steady steps' worth
  EXPECT_NEAR(total_compute(res.skeleton, 4, 200, 100, 2), 2.9 * 100 * steady(4, 200), 0.05 * 2.9 * 100 * steady(4, 200));
}

TEST(BuilderPool, ImbalancedRanksKeepTheirOwnModels) {
  // odd ranks do three times the work of even ranks, in every run: that spread is real
  std::vector<mksim::trace::Run> runs;
  for (int P : {2, 4, 8})
    for (int N : {100, 200})
      runs.push_back(ring_run(P, N, 12, [P, N](int r, int s) {
        Jitter j{static_cast<std::uint64_t>(31 * P + N + 7 * r + s)};
        return 1e-3 * N / 100 / P * (r % 2 ? 3 : 1) * j.next(1, 0.05);
      }));
  mksim::skeletons::builder::BuildOptions pooled;
  pooled.pool_compute = true;
  const BuildResult res = build_skeleton(runs, pooled);
  const json c = send_compute(res.skeleton);
  const json& pool = c.at("fit").at("pool");
  ASSERT_EQ(pool.at("decision"), "split") << c.dump(2);
  EXPECT_GT(pool.at("chi2").get<double>(), pool.at("chi2_critical").get<double>());
  EXPECT_NEAR(pool.at("largest_ratio").get<double>(), 3, 0.6);
  // at a P never traced, odd ranks still compute three times as long as even ones
  const double even = compute_at(res.skeleton, 16, 200, 4), odd = compute_at(res.skeleton, 16, 200, 7);
  ASSERT_GT(even, 0) << c.dump(2);
  EXPECT_NEAR(odd / even, 3, 0.45) << c.dump(2);
  mksim::skeletons::builder::BuildOptions plain;  // each rank's mean, regressed without rank: one model for all
  plain.pool_compute = false;
  const BuildResult unpooled = build_skeleton(runs, plain);
  EXPECT_NEAR(compute_at(unpooled.skeleton, 16, 200, 7) / compute_at(unpooled.skeleton, 16, 200, 4), 1, 0.2);  // (draws of its dist)
}

TEST(BuilderPool, RanksThatNoConditionDescribesBecomeAProbability) {
  // an extra barrier by ranks that follow no rule (data): 2 of 4, 4 of 8, 7 of 16 ranks
  const std::map<int, std::vector<int>> extra = {{4, {1, 2}}, {8, {0, 2, 3, 6}}, {16, {1, 4, 5, 9, 12, 13, 14}}};
  std::vector<mksim::trace::Run> runs;
  for (const auto& [P, set] : extra)
    runs.push_back(make_run(P, {}, [&, P = P](int r, RankWriter& w) {
      w.call(Kind::INIT, 1, -1, -1, 0, 0);
      w.call(Kind::ALLREDUCE, 20, -1, -1, 8);
      if (std::find(set.begin(), set.end(), r) != set.end()) w.call(Kind::BARRIER, 21, -1, -1, 0);
      w.call(Kind::ALLREDUCE, 22, -1, -1, 8);
      w.call(Kind::FINALIZE, 2);
    }));
  const BuildResult res = build_skeleton(runs);
  std::vector<json> ifs = blocks_of(res.skeleton, "if");
  ASSERT_EQ(ifs.size(), 1u) << res.skeleton.dump(2);
  EXPECT_FALSE(ifs[0].contains("cond"));
  EXPECT_NEAR(std::stod(ifs[0].at("prob").get<std::string>()), 13.0 / 28.0, 1e-6);
  EXPECT_EQ(ifs[0].at("fit").at("prob").at("data_dependent_ranks"), true);
  mksim::skeletons::builder::BuildOptions off;
  off.data_dependent_sets = false;
  EXPECT_THROW(build_skeleton(runs, off), mksim::skeletons::builder::BuildError);
}

TEST(BuilderPool, SizesFoldedAsStatisticsStayInTheirDomain) {
  // a message whose size changes every step by data, shrinking with P faster than any exact form
  const std::map<int, int> mean = {{2, 2513}, {4, 1777}, {8, 391}};
  std::vector<mksim::trace::Run> runs;
  for (const auto& [P, m] : mean)
    runs.push_back(make_run(P, {}, [&, P = P, m = m](int r, RankWriter& w) {
      w.call(Kind::INIT, 1, -1, -1, 0, 0);
      for (int s = 0; s < 40; ++s) {
        const long bytes = m + 8 * ((s * 7919 + r) % 13) - 48;
        w.call(Kind::SEND, 20, (r + 1) % P, 0, bytes);
        w.call(Kind::RECV, 21, (r + P - 1) % P, 0, bytes);
      }
      w.call(Kind::FINALIZE, 2);
    }));
  mksim::skeletons::builder::BuildOptions vary;
  vary.vary_sizes = 1;
  const BuildResult res = build_skeleton(runs, vary);
  const std::vector<json> sends = blocks_of(res.skeleton, "send");
  ASSERT_FALSE(sends.empty()) << res.skeleton.dump(2);
  const std::string size = sends[0].at("size").get<std::string>();
  EXPECT_EQ(size.rfind("max(0, floor(", 0), 0u) << size;
  const auto parsed = mksim::skeletons::parse_skeleton(res.skeleton.dump(), "built.json");
  for (int P : {16, 64, 1024})
    for (int rank : {0, P - 1})
      for (const auto& op : mksim::skeletons::expand_rank(parsed, mksim::skeletons::bind_parameters(parsed, P, {}), rank))
        if (op.kind == mksim::skeletons::ExpandedOp::Kind::SEND) {
          EXPECT_GE(op.size_bytes, 0) << "P=" << P << " " << size;
          EXPECT_EQ(op.size_bytes, std::floor(op.size_bytes)) << "P=" << P << " " << size;
        }
}

// ---- a time-step loop cut at a point-to-point call (steps.hpp), its migrations data (issue 17) ----

namespace {

// A 1-D particle ring: each step exchanges counts with both neighbours (the step's first call, site 30), then sends
// the particles that left to the right neighbour when some did (the rank's coin for that step: rank 0 always, the
// others in about 60% of the steps), receives the left neighbour's when it sent, waits for its send, and reduces
// every tenth step. No allreduce every step: the loop is found at the count exchange.
bool leaves(int r, int s) {
  std::uint32_t h = static_cast<std::uint32_t>(r + 1) * 73856093u ^ static_cast<std::uint32_t>(s + 1) * 19349663u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return r == 0 || h % 10 < 6;
}

mksim::trace::Run particle_ring(int P, int steps) {
  return make_run(P, {{"S", steps}}, [P, steps](int r, RankWriter& w) {
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    const int right = (r + 1) % P, left = (r + P - 1) % P;
    for (int s = 0; s < steps; ++s) {
      w.call(Kind::SEND, 30, right, 1, 8);
      w.call(Kind::RECV, 31, left, 1, 8);
      std::vector<std::uint32_t> req;
      if (leaves(r, s)) req.push_back(w.isend(right, 3, 16 * (3 + (r + s) % 5), 32));
      if (leaves(left, s)) w.call(Kind::RECV, 33, left, 3, 16 * (3 + (left + s) % 5));
      if (!req.empty()) w.waitall(req, 34);
      if (s % 10 == 9) w.call(Kind::ALLREDUCE, 35, -1, -1, 8);
    }
    w.call(Kind::FINALIZE, 2);
  });
}

}  // namespace

TEST(BuilderSteps, MigrationsThatDataDecideFoldIntoOneStepLoopWhoseBranchesPair) {
  auto build = [](int steps) {
    std::vector<mksim::trace::Run> runs;
    for (int P : {2, 4, 8}) runs.push_back(particle_ring(P, steps));
    return build_skeleton(runs);
  };
  const BuildResult res = build(40), longer = build(400);
  EXPECT_TRUE(res.matching.empty()) << res.matching.front();
  EXPECT_TRUE(std::any_of(res.warnings.begin(), res.warnings.end(), [](const std::string& w) {
    return w.find("point-to-point site") != std::string::npos;
  })) << res.skeleton.dump(1);
  // one loop over the steps: ten times the steps, the same skeleton but its counts
  EXPECT_EQ(blocks_of(res.skeleton, "if").size(), blocks_of(longer.skeleton, "if").size());
  EXPECT_EQ(blocks_of(res.skeleton, "isend").size(), 1u) << res.skeleton.dump(1);
  EXPECT_EQ(blocks_of(res.skeleton, "loop").size(), blocks_of(longer.skeleton, "loop").size());
  EXPECT_EQ(blocks_of(res.skeleton, "recv").size(), blocks_of(longer.skeleton, "recv").size());
  // the send's branch and its receive's toss one coin (the sender's), and the wait runs every step
  std::string send_coin, recv_coin;
  for (const json& b : blocks_of(res.skeleton, "if")) {
    if (!b.contains("then") || b.at("then").empty()) continue;
    for (const json& c : b.at("then")) {
      if (c.value("op", "") == "isend") send_coin = b.value("coin", "");
      if (c.value("op", "") == "recv" && (c.at("tag") == json(3) || c.at("tag") == json("3"))) recv_coin = b.value("coin", "");
      EXPECT_NE(c.value("op", ""), "waitall") << "a step's waitall is not a branch";
    }
  }
  EXPECT_FALSE(send_coin.empty()) << res.skeleton.dump(1);
  EXPECT_EQ(send_coin, recv_coin);
  // at an untraced P, every rank's messages pair (no rank waits for a migration its neighbour did not draw), and
  // the sends per rank are about what the program sends: 40 counts and 40 * 0.6 migrations (rank 0: 40)
  const auto parsed = mksim::skeletons::parse_skeleton(res.skeleton.dump(), "built.json");
  const int P = 16;
  std::size_t migrations = 0, expected = 40;
  for (int r = 0; r < P; ++r) {
    for (const auto& op : mksim::skeletons::expand_rank(parsed, mksim::skeletons::bind_parameters(parsed, P, {{"S", 40}}), r))
      if (op.kind == mksim::skeletons::ExpandedOp::Kind::ISEND) ++migrations;
    if (r > 0)
      for (int s = 0; s < 40; ++s) expected += leaves(r, s) ? 1 : 0;
  }
  EXPECT_NEAR(static_cast<double>(migrations), static_cast<double>(expected), 0.15 * static_cast<double>(expected));
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

namespace {

// A count that is the logarithm of a size (NPB MG's levels: log2 of the smallest local side N / dims(P, 3, 0),
// minus one) fits a polynomial of the traced runs too ("N/32 + 3 - 2^floor(log2(P)/2)/2" at P = 4, 8, 16 and
// N = 32, 64), which is negative at P = 256: a count must not be negative at any P up to 1024, so the log2
// form is chosen, and it holds at P = 32 and 1024, never traced.
TEST(BuilderCounts, LogarithmicLevelCountIsChosenOverAPolynomialThatGoesNegative) {
  auto levels = [](int P, int N) {
    const int side = mksim::skeletons::dims_create(P, 3).front();
    return static_cast<int>(std::lround(std::log2(N / side))) - 1;
  };
  std::vector<mksim::trace::Run> runs;
  for (int P : {4, 8, 16})
    for (int N : {32, 64})
      runs.push_back(make_run(P, {{"N", N}}, [&](int, RankWriter& w) {
        w.call(Kind::INIT, 1);
        for (int l = 0; l < levels(P, N); ++l) w.call(Kind::ALLREDUCE, 2, mksim::trace::NO_RANK, mksim::trace::NO_RANK, 8);
        w.call(Kind::BARRIER, 3);
        w.call(Kind::FINALIZE, 4);
      }));
  const BuildResult r = build_skeleton(runs);
  const std::string text = r.skeleton.dump(2);
  ASSERT_NE(text.find("log2("), std::string::npos) << text;
  EXPECT_NE(text.find("dims(P, 3, 0)"), std::string::npos) << text;
  const auto sk = mksim::skeletons::parse_skeleton(text, "levels.json");
  for (const auto& [P, N] : std::vector<std::pair<int, int>>{{32, 64}, {1024, 32}, {1024, 64}, {512, 128}}) {
    const auto ops = mksim::skeletons::builder::expanded_ops(sk, P, {{"N", N}}, 0);
    const auto n = std::count_if(ops.begin(), ops.end(), [](const auto& op) { return op.kind == "allreduce"; });
    EXPECT_EQ(n, levels(P, N)) << "P=" << P << " N=" << N << "\n" << text;
  }
}
}  // namespace

// A compute of 2e-8 N^2 / P per step (SUMMA's panel update) traced at P = 2 to 16 with N = 100 and 200, plus
// 1e-10 N P^3, what time slicing adds as the runs oversubscribe the cores more: the best model grows with P faster
// than P log P. It is refitted with no term that grows with P, not replaced by the mean of the runs, which would lose
// N: at P = 4 the skeleton keeps N = 200's 3-4 times N = 100's compute (SUMMA's panel update lost 4.4 times at
// N = 192 that way).
TEST(BuilderCompute, ATooSteepModelIsRefittedWithoutTermsThatGrowWithP) {
  auto program = [](int P, int N) {
    return [=](int r, RankWriter& w) {
      Jitter j{static_cast<std::uint64_t>(7919 * P + 31 * N + r)};
      w.call(Kind::INIT, 1, -1, -1, 0, 0);
      for (int s = 0; s < 20; ++s) w.call(Kind::ALLREDUCE, 20, -1, -1, 8, j.next(2e-8 * N * N / P + 1e-10 * N * P * P * P, 0.02));
      w.call(Kind::FINALIZE, 2);
    };
  };
  std::vector<mksim::trace::Run> runs;
  for (auto [P, N] : {std::pair{2, 100}, {4, 100}, {8, 100}, {16, 100}, {2, 200}, {4, 200}, {8, 200}, {16, 200}})
    runs.push_back(make_run(P, {{"N", N}}, program(P, N)));
  const BuildResult res = build_skeleton(runs);
  const std::string text = res.skeleton.dump(2);
  const auto loops = blocks_of(res.skeleton, "loop");
  ASSERT_EQ(loops.size(), 1u) << text;
  const json& c = loops[0].at("body").at(0);
  ASSERT_EQ(c.at("op"), "compute") << text;
  ASSERT_TRUE(c.at("fit").at("seconds").contains("rejected")) << text;  // the first model was too steep
  EXPECT_NE(c.at("seconds").get<std::string>().find("N"), std::string::npos) << text;
  bool warned = false;
  for (const auto& w : res.warnings) warned = warned || w.find("fitted again with no term that grows with P") != std::string::npos;
  EXPECT_TRUE(warned) << text;
  const auto sk = mksim::skeletons::parse_skeleton(text, "steep.json");
  auto seconds = [&](int P, int N) {
    double sum = 0;
    for (const auto& op : mksim::skeletons::expand_rank(sk, mksim::skeletons::bind_parameters(sk, P, {{"N", N}}), 0))
      if (op.kind == mksim::skeletons::ExpandedOp::Kind::COMPUTE) sum += op.amount;
    return sum;
  };
  // N = 200 costs 3 to 4 times N = 100 (the mean of the runs would make them equal)
  EXPECT_GT(seconds(4, 200) / seconds(4, 100), 3.0) << text;
  EXPECT_LT(seconds(4, 200) / seconds(4, 100), 4.4) << text;
  // and from 16 to 1,024 ranks the per-rank compute grows less than P does (the rejected model: 4,000 times)
  EXPECT_LE(seconds(1024, 100), 64 * seconds(16, 100)) << text;
}

// A gap that is bimodal over the runs: ATM2D's free() before MPI_Finalize, measured by mktrace in one batch of the
// demo's runs (us, per rank): 25 us while a rank's arrays are below malloc's mmap threshold (P = 8 and 16 at N = 256),
// 0.3-2.5 ms above it. The cross-validated error, relative to the measured value, let a model exact at the small runs
// win whatever it did at the large ones: 2.76e-15*N^3*log2(N)^2*steps^2, 7.4 ms at N = 1,024 and P = 128 (where the
// arrays are small again), half the demo's predicted time (issue 17). Against the runs' means, with an error that
// counts over- and under-prediction alike, that model misses by 0.45 and the plain mean by 0.49: the mean is kept.
TEST(BuilderCompute, ABimodalGapKeepsItsMean) {
  struct Measured {
    int P, N, steps;
    std::vector<double> us;
  };
  const std::vector<Measured> runs_us = {
      {2, 256, 5, {676, 668}},
      {2, 512, 5, {1835, 2473}},
      {4, 256, 5, {367, 391, 683, 547}},
      {4, 256, 8, {395, 715, 297, 452}},
      {4, 512, 5, {763, 903, 846, 846}},
      {8, 256, 5, {34, 25, 25, 25, 24, 25, 24, 34}},
      {8, 512, 5, {564, 486, 613, 907, 454, 837, 869, 730}},
      {16, 256, 5, {41, 25, 26, 27, 23, 26, 27, 24, 13, 29, 24, 31, 25, 52, 28, 24}},
      {16, 512, 5, {537, 513, 535, 382, 603, 602, 443, 528, 348, 577, 322, 642, 613, 418, 588, 619}}};
  std::vector<mksim::trace::Run> runs;
  double largest = 0;
  for (const Measured& m : runs_us) {
    for (double us : m.us) largest = std::max(largest, 1e-6 * us);
    runs.push_back(make_run(m.P, {{"N", m.N}, {"steps", m.steps}}, [&m](int r, RankWriter& w) {
      Jitter j{static_cast<std::uint64_t>(7919 * m.P + 31 * m.N + 3 * m.steps + r)};
      w.call(Kind::INIT, 1, -1, -1, 0, 0);
      for (int s = 0; s < m.steps; ++s) w.call(Kind::ALLREDUCE, 20, -1, -1, 8, j.next(2e-8 * m.N * m.N / m.P, 0.02));
      w.call(Kind::FINALIZE, 2, -1, -1, 0, 1e-6 * m.us[static_cast<std::size_t>(r)]);
    }));
  }
  const BuildResult res = build_skeleton(runs);
  const std::string text = res.skeleton.dump(2);
  const json& body = res.skeleton.at("body");
  ASSERT_FALSE(body.empty()) << text;
  const json& last = body.back();
  ASSERT_EQ(last.at("op"), "compute") << text;
  const auto sk = mksim::skeletons::parse_skeleton(text, "bimodal.json");
  double tail = -1;
  for (const auto& op : mksim::skeletons::expand_rank(sk, mksim::skeletons::bind_parameters(sk, 128, {{"N", 1024}, {"steps", 5}}), 0))
    if (op.kind == mksim::skeletons::ExpandedOp::Kind::COMPUTE) tail = op.amount;
  EXPECT_GE(tail, 0) << text;
  EXPECT_LE(tail, largest) << last.dump(2);
  // the steps' compute, a clean law, is still N^2/P
  EXPECT_NE(text.find("N^2/P"), std::string::npos) << text;
}

// Runs with more ranks than the host's cores (run.json `cores`) time-slice their ranks, so a measured time that
// grows with P there is not the program's: a compute of 2e-6 N / P plus 1e-6 P (what slicing adds) is fitted
// again with no term that grows with P, and one warning says so for every such block. Without `cores` (unknown),
// or with enough cores, the growth is kept.
TEST(BuilderCompute, GrowthInPFromRunsWithMoreRanksThanCoresIsNotTrusted) {
  auto build = [](int cores) {
    std::vector<mksim::trace::Run> runs;
    for (auto [P, N] : {std::pair{2, 100}, {4, 100}, {8, 100}, {16, 100}, {2, 200}, {4, 200}, {8, 200}, {16, 200}}) {
      runs.push_back(make_run(P, {{"N", N}}, [P = P, N = N](int r, RankWriter& w) {
        Jitter j{static_cast<std::uint64_t>(7 * P + N + r)};
        w.call(Kind::INIT, 1, -1, -1, 0, 0);
        for (int s = 0; s < 20; ++s) w.call(Kind::ALLREDUCE, 20, -1, -1, 8, j.next(2e-6 * N / P + 1e-6 * P, 0.01));
        w.call(Kind::FINALIZE, 2);
      }));
      runs.back().cores = cores;
    }
    return build_skeleton(runs);
  };
  auto step_seconds = [](const BuildResult& res, int P) {
    const auto sk = mksim::skeletons::parse_skeleton(res.skeleton.dump(), "cores.json");
    double sum = 0;
    for (const auto& op : mksim::skeletons::expand_rank(sk, mksim::skeletons::bind_parameters(sk, P, {{"N", 100}}), 0))
      if (op.kind == mksim::skeletons::ExpandedOp::Kind::COMPUTE) sum += op.amount;
    return sum;
  };
  const BuildResult sliced = build(2), unknown = build(0), enough = build(64);
  const std::string text = sliced.skeleton.dump(2);
  std::size_t said = 0;
  for (const auto& w : sliced.warnings) said += w.find("grew with P in runs with more ranks than cores (P = 4 on 2 cores, 8 on 2 cores, 16 on 2 cores)") != std::string::npos;
  EXPECT_EQ(said, 1u) << text;
  EXPECT_LE(step_seconds(sliced, 1024), step_seconds(sliced, 16)) << text;  // no growth from 16 to 1,024 ranks
  EXPECT_NE(text.find("grows with P in runs with more ranks than cores"), std::string::npos) << text;  // the block's fit
  for (const BuildResult* kept : {&unknown, &enough}) {
    for (const auto& w : kept->warnings) EXPECT_EQ(w.find("more ranks than cores"), std::string::npos) << w;
    EXPECT_GT(step_seconds(*kept, 1024), 10 * step_seconds(*kept, 16)) << kept->skeleton.dump(2);  // 1e-6 P kept
  }
}

namespace {

// ATM2D's step on a Px x Py grid (Px = 2^floor(log2(P)/2)): red ranks ((x + y) even) exchange north, south, east,
// west, black ones south, north, west, east; a rank on an edge skips the side it does not have. The step's work
// (1 ms * N/100 / P, 2% noise) lies between a rank's last exchange of one step and its first of the next: before a
// different call on red and black ranks and on each edge.
mksim::trace::Run red_black_run(int P, int N, int steps) {
  return make_run(P, {{"N", N}, {"steps", steps}}, [&](int r, RankWriter& w) {
    Jitter j{static_cast<std::uint64_t>(7919 * P + 31 * N + r)};
    const int Px = 1 << static_cast<int>(std::floor(std::log2(P) / 2));
    const int Py = P / Px, x = r % Px, y = r / Px;
    enum { NORTH, SOUTH, EAST, WEST };
    const int send_tag[4] = {1, 2, 3, 4}, recv_tag[4] = {2, 1, 4, 3};
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    for (int s = 0; s < steps; ++s) {
      double work = 1e-3 * N / 100 / P * j.next(1, 0.02);
      const bool red = (x + y) % 2 == 0;
      for (int dir : red ? std::vector<int>{NORTH, SOUTH, EAST, WEST} : std::vector<int>{SOUTH, NORTH, WEST, EAST}) {
        const bool has = dir == NORTH ? y > 0 : dir == SOUTH ? y < Py - 1 : dir == EAST ? x < Px - 1 : x > 0;
        if (!has) continue;
        const int peer = dir == NORTH ? r - Px : dir == SOUTH ? r + Px : dir == EAST ? r + 1 : r - 1;
        const int site = 20 + 2 * (4 * !red + dir);  // each exchange a call of its own in the program's text
        w.call(Kind::SEND, site, peer, send_tag[dir], 8 * N, work > 0 ? work : 3e-6);
        w.call(Kind::RECV, site + 1, peer, recv_tag[dir], 8 * N, 3e-6);
        work = 0;
      }
    }
    w.call(Kind::FINALIZE, 2);
  });
}

}  // namespace

TEST(BuilderGaps, TheStepsWorkBeforeEachRanksFirstCallIsOneBlockAtTheTopOfTheLoop) {
  std::vector<mksim::trace::Run> runs;
  for (int P : {4, 8, 16})
    for (int N : {100, 200}) runs.push_back(red_black_run(P, N, 6));
  const BuildResult res = build_skeleton(runs);
  const std::string text = res.skeleton.dump(2);
  const auto loops = blocks_of(res.skeleton, "loop");
  ASSERT_EQ(loops.size(), 1u) << text;
  // the first block of the step is the work, run by every rank, whatever call each runs first
  const json& top = loops[0].at("body").at(0);
  ASSERT_EQ(top.at("op"), "compute") << text;
  // every rank's compute, at P = 64 never traced: the work and the microseconds between its calls (where some ranks
  // of a call's block had their gap moved, the others' 3 us count as a mean: 1.8 us)
  const auto parsed = mksim::skeletons::parse_skeleton(text, "built.json");
  for (int P : {16, 64})
    for (int r = 0; r < P; ++r) {
      double sum = 0;
      for (const auto& op : mksim::skeletons::expand_rank(parsed, mksim::skeletons::bind_parameters(parsed, P, {{"N", 200}, {"steps", 6}}), r))
        if (op.kind == mksim::skeletons::ExpandedOp::Kind::COMPUTE) sum += op.amount;
      const int Px = 1 << static_cast<int>(std::floor(std::log2(P) / 2)), Py = P / Px, x = r % Px, y = r / Px;
      const int sides = (y > 0) + (y < Py - 1) + (x > 0) + (x < Px - 1);
      const double want = 6 * (2e-3 / P + (2 * sides - 1) * 3e-6) + 1e-5;  // and the gap before MPI_Finalize
      EXPECT_NEAR(sum, want, 0.05 * want) << "P = " << P << " rank " << r << "\n" << text;
    }
}

// A short run's second step slower on every rank (it first touches the arrays it writes: the demo's step at P = 2,
// 3-5 times the others) is a quarter of each rank's four steps after the first; drawn per rank in replay it would be
// imbalance the program does not have. Ranks with fewer than 8 steps after the first say nothing of a distribution.
TEST(BuilderV2, AWarmUpStepOfAShortRunIsNoDistribution) {
  auto program = [](int P, int steps) {
    return [P, steps](int r, RankWriter& w) {
      Jitter j{static_cast<std::uint64_t>(313 * P + r)};
      w.call(Kind::INIT, 1, -1, -1, 0, 0);
      for (int s = 0; s < steps; ++s) w.call(Kind::BARRIER, 20, -1, -1, 0, j.next(s == 1 ? 4e-3 : 1e-3, 0.01));
      w.call(Kind::FINALIZE, 2);
    };
  };
  std::vector<mksim::trace::Run> runs;
  for (int P : {2, 3, 4}) runs.push_back(make_run(P, {{"steps", 5}}, program(P, 5)));
  const BuildResult res = build_skeleton(runs);
  for (const auto& c : blocks_of(res.skeleton, "compute")) EXPECT_FALSE(c.contains("dist")) << c.dump();
  // run longer, its ranks count, and the warm-up, one step in 12, lies outside the quartiles: none either
  runs.clear();
  for (int P : {2, 3, 4}) runs.push_back(make_run(P, {{"steps", 13}}, program(P, 13)));
  bool dist = false;
  for (const auto& c : blocks_of(build_skeleton(runs).skeleton, "compute")) dist = dist || c.contains("dist");
  EXPECT_FALSE(dist);
}

namespace {

// A molecular-dynamics step loop nobody annotated (LAMMPS with `neigh_modify check yes`): every step starts with an
// allreduce that decides, alike on every rank, whether to rebuild the neighbour lists; a rebuild step exchanges atoms
// and borders with both ring neighbours (tag 2), a plain step forwards positions (tag 1); every step then sends the
// forces back (tag 3). Sizes follow the atoms, so no two steps are the same; which steps rebuild depends on the data
// (here a hash of the step and N, about one in six).
bool rebuilds(int step, int N) {
  std::uint64_t z = static_cast<std::uint64_t>(step) * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(N);
  z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ULL;
  return (z >> 33) % 6 == 0;
}

mksim::trace::Run md_run(int P, int N, int steps) {
  return make_run(P, {{"N", N}, {"steps", steps}}, [&](int r, RankWriter& w) {
    Jitter j{static_cast<std::uint64_t>(7 * P + 131 * N + r)};
    const int up = (r + 1) % P, down = (r + P - 1) % P;
    auto exchange = [&](int tag, long bytes, std::uint64_t site) {
      const std::uint32_t a = w.irecv(down, tag, bytes, site), b = w.isend(up, tag, bytes, site + 1);
      w.waitall({a, b}, site + 2);
    };
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    w.call(Kind::BCAST, 5, -1, -1, 64).root = 0;
    for (int s = 0; s < steps; ++s) {
      w.call(Kind::ALLREDUCE, 10, -1, -1, 4, j.next(2e-4, 0.05));
      const long atoms = static_cast<long>(j.next(N / 4.0, 0.2));  // the same on both ends: a size the data sets
      if (rebuilds(s, N)) {
        exchange(2, 16 * atoms, 20);
        exchange(2, 24 * atoms, 30);
      } else {
        exchange(1, 24 * atoms, 40);
      }
      exchange(3, 24 * atoms, 50);
    }
    w.call(Kind::ALLREDUCE, 60, -1, -1, 8);
    w.call(Kind::REDUCE, 61, -1, -1, 8).root = 0;
    w.call(Kind::FINALIZE, 2);
  });
}

}  // namespace

// The step loop is found by its allreduce and folds as one loop whatever the steps: the rebuild and the plain step
// are the two arms of one if/else, tossed on rank 0's coin for every rank (they rebuild together) and drawn evenly
// (the traced rate of rebuilds, not a binomial count); the skeleton pairs its messages and does not grow with the
// steps. Folded exactly, each rank's program grew with the steps and the ranks of one run folded apart.
TEST(BuilderSteps, AnUnannotatedStepLoopWhoseStepsDifferByDataIsOneLoopWithAnIfElseOnASharedEvenCoin) {
  auto runs_of = [](int steps) {
    std::vector<mksim::trace::Run> runs;
    for (int P : {4, 8})
      for (int N : {200, 400}) runs.push_back(md_run(P, N, steps));
    runs.push_back(md_run(4, 200, steps + 30));
    return runs;
  };
  auto build = [&](int steps) { return build_skeleton(runs_of(steps)); };
  const BuildResult res = build(60), longer = build(240);
  const std::string text = res.skeleton.dump(2);
  EXPECT_TRUE(res.matching.empty()) << res.matching.front();
  EXPECT_TRUE(std::any_of(res.warnings.begin(), res.warnings.end(),
                          [](const std::string& w) { return w.find("a time-step loop the program does not annotate") != std::string::npos; }))
      << text;
  const auto ifs = blocks_of(res.skeleton, "if");
  std::vector<json> coins;
  for (const json& b : ifs)
    if (b.contains("coin")) coins.push_back(b);
  ASSERT_EQ(coins.size(), 1u) << text;
  const json& br = coins[0];
  EXPECT_EQ(br.at("coin_rank"), "0");
  EXPECT_EQ(br.at("draw"), "even");
  ASSERT_TRUE(br.contains("else")) << br.dump(2);
  // the steps' rebuild fraction pooled over the traces (every rank and run)
  double rebuilt = 0, steps = 0;
  for (const auto& run : runs_of(60)) {
    const int n = std::stoi(run.params.at("steps")), N = std::stoi(run.params.at("N"));
    for (int s = 0; s < n; ++s) rebuilt += run.P * rebuilds(s, N);
    steps += run.P * n;
  }
  const double p = std::stod(br.at("prob").get<std::string>());
  EXPECT_NEAR(p, rebuilt / steps, 1e-5) << br.dump(2);
  // as many blocks with 240 steps as with 60, and no bigger a file (but for the numbers' digits)
  EXPECT_EQ(blocks_of(longer.skeleton, "if").size(), ifs.size());
  EXPECT_LT(static_cast<double>(longer.skeleton.dump().size()), 1.05 * static_cast<double>(res.skeleton.dump().size()));
  // expanded at P = 16 and 300 steps, never traced: every rank runs exactly one arm per step, all ranks the same
  // arms, and the rebuilds are the traced rate within two steps
  const auto parsed = mksim::skeletons::parse_skeleton(text, "steps.json");
  long rebuild0 = -1;
  for (int r : {0, 5, 15}) {
    long tag1 = 0, tag2 = 0;
    for (const auto& op : mksim::skeletons::expand_rank(parsed, mksim::skeletons::bind_parameters(parsed, 16, {{"N", 300}, {"steps", 300}}), r))
      if (op.kind == mksim::skeletons::ExpandedOp::Kind::ISEND && op.tag == 1) ++tag1;
      else if (op.kind == mksim::skeletons::ExpandedOp::Kind::ISEND && op.tag == 2) ++tag2;
    EXPECT_EQ(tag1 + tag2 / 2, 300) << "rank " << r;
    EXPECT_NEAR(static_cast<double>(tag2 / 2), p * 300, 2.0) << "rank " << r;
    if (rebuild0 < 0) rebuild0 = tag2;
    EXPECT_EQ(tag2, rebuild0) << "rank " << r;
  }
}

namespace {

// A ring that waits by polling, as HPL's panel broadcast and b_eff do: each step posts its receive from the left and
// its send to the right, then works through `chunks` pieces of 20 us, testing the receive after each piece until it
// has arrived (how many tests fail depends on the machine's timing: a hash of the run, rank and step here), then waits
// for the send with MPI_Testall in a loop, and finally polls with MPI_Iprobe for the right neighbour's token before
// receiving it. `polls` false: the same program with blocking waits (MPI_Wait, MPI_Waitall, MPI_Probe).
int tries(int P, int r, int s, int salt) {
  std::uint64_t z = static_cast<std::uint64_t>(P * 1000003 + r * 7919 + s * 104729 + salt) * 0x9E3779B97F4A7C15ULL;
  z ^= z >> 29;
  return 1 + static_cast<int>((z >> 40) % 6);  // 1..6: the last one succeeds
}

mksim::trace::Run polling_ring(int P, int N, bool polls, std::size_t* failed = nullptr) {
  return make_run(P, {{"N", N}}, [&](int r, RankWriter& w) {
    const int right = (r + 1) % P, left = (r + P - 1) % P;
    const long bytes = 8L * N / P;
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    for (int s = 0; s < 12; ++s) {
      const std::uint32_t rq = w.irecv(left, 1, bytes, 10), sq = w.isend(right, 1, bytes, 11);
      const int k = tries(P, r, s, N);
      for (int t = 0; t < k; ++t) {
        w.compute(4e-5 / k);  // the step's work, done between the tests
        const bool last = t + 1 == k;
        if (!polls && !last) continue;
        Event& e = w.call(polls ? Kind::TEST : Kind::WAIT, 12, -1, -1, 0, 0);
        e.root = last ? 1 : 0;
        if (failed && !last) ++*failed;
        if (last) w.complete(rq, left, 1, bytes, true);
      }
      const int kt = tries(P, r, s, N + 1);
      for (int t = polls ? 0 : kt - 1; t < kt; ++t) {
        const bool last = t + 1 == kt;
        w.call(polls ? Kind::TESTALL : Kind::WAITALL, 13, -1, -1, 0, t == 0 || !polls ? 1e-6 : 0).root = last ? 1 : 0;
        if (failed && !last) ++*failed;
        if (last) w.complete(sq, right, 1, bytes, false);
      }
      const int kp = tries(P, r, s, N + 2);
      for (int t = polls ? 0 : kp - 1; t < kp; ++t) {
        const bool last = t + 1 == kp;
        Event& e = w.call(polls ? Kind::IPROBE : Kind::PROBE, 14, last ? right : -1, last ? 2 : -1, last ? 8 : 0, t == 0 || !polls ? 2e-6 : 0);
        e.root = last ? 1 : 0;
        if (failed && !last) ++*failed;
      }
      w.call(Kind::SEND, 15, left, 2, 8, 1e-6);
      w.call(Kind::RECV, 16, right, 2, 8, 1e-6);
    }
    w.call(Kind::FINALIZE, 2);
  });
}

}  // namespace

// Polling loops fold as the waits they are: the tests that completed nothing and the Iprobes that found nothing, as
// many as the timing made, are left out (and counted in a warning); the work between them is kept; a test that
// completed its request is its wait. The skeleton is then the blocking program's: the same operations at every rank
// at a P never traced, the same compute per rank. Kept as calls, the tries differ from step to step and rank to rank:
// the steps did not fold and the skeleton had a test per traced try.
TEST(BuilderPolls, PollingLoopsFoldAsTheWaitsTheyAre) {
  std::vector<mksim::trace::Run> polled, blocking;
  std::size_t failed = 0;
  for (int P : {4, 8})
    for (int N : {256, 512}) {
      polled.push_back(polling_ring(P, N, true, &failed));
      blocking.push_back(polling_ring(P, N, false));
    }
  const BuildResult a = build_skeleton(polled), b = build_skeleton(blocking);
  EXPECT_TRUE(a.matching.empty()) << a.matching.front();
  EXPECT_TRUE(std::any_of(a.warnings.begin(), a.warnings.end(), [&](const std::string& w) {
    return w.rfind(std::to_string(failed) + " MPI_Test/Testany/Testsome/Testall calls that completed nothing", 0) == 0;
  })) << failed;
  EXPECT_GT(failed, 100u);
  const auto sa = mksim::skeletons::parse_skeleton(a.skeleton.dump(), "polled.json");
  const auto sb = mksim::skeletons::parse_skeleton(b.skeleton.dump(), "blocking.json");
  EXPECT_EQ(blocks_of(a.skeleton, "loop").size(), 1u) << a.skeleton.dump(2);
  std::vector<std::string> ka, kb;  // the two skeletons' blocks in order (they differ in the last digits of times)
  walk(a.skeleton.at("body"), [&](const json& x, int depth) { ka.push_back(std::to_string(depth) + x.at("op").get<std::string>()); });
  walk(b.skeleton.at("body"), [&](const json& x, int depth) { kb.push_back(std::to_string(depth) + x.at("op").get<std::string>()); });
  EXPECT_EQ(ka, kb);
  for (int r : {0, 7, 15}) {
    using X = mksim::skeletons::ExpandedOp;
    const auto xa = mksim::skeletons::expand_rank(sa, mksim::skeletons::bind_parameters(sa, 16, {{"N", 1024}}), r);
    const auto xb = mksim::skeletons::expand_rank(sb, mksim::skeletons::bind_parameters(sb, 16, {{"N", 1024}}), r);
    std::vector<std::string> oa, ob;
    double ca = 0, cb = 0;
    for (const auto* xs : {&xa, &xb})
      for (const X& x : *xs) {
        auto& ops = xs == &xa ? oa : ob;
        if (x.kind == X::Kind::COMPUTE) (xs == &xa ? ca : cb) += x.amount;
        else ops.push_back(std::to_string(static_cast<int>(x.kind)) + " " + std::to_string(x.peer) + " " +
                           std::to_string(x.tag) + " " + std::to_string(static_cast<long>(x.size_bytes)));
      }
    EXPECT_EQ(oa, ob) << "rank " << r;
    EXPECT_GE(oa.size(), 12u * 6) << "rank " << r;
    EXPECT_NEAR(ca, cb, 0.02 * cb) << "rank " << r;
  }
}
