// The skeleton comparator (skeletons/builder/skeldiff.hpp, `mkskel diff`) on written skeletons: equal functions
// written differently are the same; a difference that shows only at a P the builder never saw is found and named
// by its JSON pointer in both files; nested and conjunctive conditions differ in structure but not in operations;
// rank groups read as a chain of ifs; compute within its tolerance; flops against seconds by a rate.
#include "skeletons/builder/skeldiff.hpp"
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace sk = mksim::skeletons;
namespace b = mksim::skeletons::builder;

namespace {

sk::Skeleton parse(const std::string& body, const std::string& extra = "", const std::string& file = "x.json") {
  return sk::parse_skeleton(R"J({"format": "mksim-skeleton", "version": 2, "params": {"N": {"default": 64}}, )J" + extra +
                                R"J("body": )J" + body + "}",
                            file);
}

b::DiffOptions options(std::vector<int> P = {2, 3, 4, 5, 8, 16, 64}) {
  b::DiffOptions o;
  o.P = std::move(P);
  o.points = {{{"N", 64}}, {{"N", 100}}};
  return o;
}

const char* RING = R"J([{"op": "loop", "count": "N / 16", "body": [
    {"op": "compute", "seconds": "0.01"},
    {"op": "isend", "peer": "(rank + 1) % P", "size": "8 * N", "tag": 1},
    {"op": "irecv", "peer": "(rank + P - 1) % P", "size": "8 * N", "tag": 1},
    {"op": "waitall"}]}])J";

}  // namespace

TEST(SkelDiff, SameFunctionWrittenDifferently) {
  const sk::Skeleton a = parse(RING, "", "a.json");
  const sk::Skeleton c = parse(R"J([{"op": "region", "name": "step", "body": [{"op": "loop", "count": "floor(N / 16)", "body": [
    {"op": "isend", "peer": "if(rank == P - 1, 0, rank + 1)", "size": "N * 8", "tag": 1},
    {"op": "compute", "seconds": "0.004"}, {"op": "compute", "seconds": "0.0061"},
    {"op": "irecv", "peer": "rank - 1 + P * (rank == 0)", "size": "2 * 4 * N", "tag": 1},
    {"op": "waitall"}]}]}])J",
                               "", "c.json");
  const b::DiffReport r = b::diff_skeletons(a, c, options());
  EXPECT_TRUE(r.same()) << b::format_diff(r);
  EXPECT_EQ(r.points, 14u);
  EXPECT_GT(r.operations, 1000u);
  EXPECT_NEAR(r.worst_compute_rel, 0.0001 / 0.0101, 1e-9);  // 0.0101 s of compute per step against 0.01
  // the compute tolerance is a tolerance: 0.1% relative and no floor makes the 0.1 ms per step a difference
  b::DiffOptions tight = options();
  tight.compute_rel = 0.001;
  tight.compute_abs_s = 0;
  const b::DiffReport t = b::diff_skeletons(a, c, tight);
  ASSERT_FALSE(t.same());
  EXPECT_EQ(t.differences[0].kind, "compute");
}

// A peer that agrees with the ring up to P = 4 (what traces at P <= 4 show) and not beyond.
TEST(SkelDiff, DifferenceOnlyAtUntracedP) {
  const sk::Skeleton a = parse(RING, "", "a.json");
  const sk::Skeleton c = parse(R"J([{"op": "loop", "count": "N / 16", "body": [
    {"op": "compute", "seconds": "0.01"},
    {"op": "isend", "peer": "(rank + 1) % min(P, max(4, P - 1))", "size": "8 * N", "tag": 1},
    {"op": "irecv", "peer": "(rank + P - 1) % P", "size": "8 * N", "tag": 1},
    {"op": "waitall"}]}])J",
                               "", "c.json");
  b::DiffOptions traced = options({2, 3, 4});
  EXPECT_TRUE(b::diff_skeletons(a, c, traced).same());
  const b::DiffReport r = b::diff_skeletons(a, c, options());
  ASSERT_EQ(r.differences.size(), 1u) << b::format_diff(r);  // one per kind and place, the first met
  const b::SkeletonDifference& d = r.differences[0];
  EXPECT_EQ(d.kind, "peer");
  EXPECT_EQ(d.path_a, "/body/0/body/1");
  EXPECT_EQ(d.path_b, "/body/0/body/1");
  EXPECT_EQ(d.P, 5);
  EXPECT_EQ(d.rank, 3);
  EXPECT_NE(d.detail.find("P=5 N=64 rank 3 operation 0: A isend(peer 4, tag 1, 512 B), B isend(peer 0, tag 1, 512 B)"), std::string::npos)
      << d.detail;
}

// Nested conditions against their conjunction: the same operations everywhere, a different structure, named.
TEST(SkelDiff, StructureAgainstOperations) {
  const sk::Skeleton a = parse(R"J([{"op": "if", "cond": "rank % 2 == 0", "then": [
      {"op": "if", "cond": "rank + 1 < P", "then": [{"op": "send", "peer": "rank + 1", "size": "N", "tag": 0}]}],
    "else": [{"op": "recv", "peer": "rank - 1", "size": "N", "tag": 0}]}])J",
                               "", "a.json");
  const sk::Skeleton c = parse(R"J([{"op": "if", "cond": "rank % 2 == 0 && rank + 1 < P", "then": [{"op": "send", "peer": "rank + 1", "size": "N", "tag": 0}]},
    {"op": "if", "cond": "rank % 2 == 1", "then": [{"op": "recv", "peer": "rank - 1", "size": "N", "tag": 0}]}])J",
                               "", "c.json");
  const b::DiffReport r = b::diff_skeletons(a, c, options());
  ASSERT_EQ(r.structural(), 1u) << b::format_diff(r);
  EXPECT_EQ(r.behavioural(), 0u) << b::format_diff(r);
  EXPECT_EQ(r.differences[0].path_a, "/body/0/then/0");
  EXPECT_EQ(r.differences[0].path_b, "/body/0/then/0");
  EXPECT_NE(r.differences[0].detail.find("A has if, B has send"), std::string::npos) << r.differences[0].detail;
  b::DiffOptions ops = options();
  ops.structure = false;
  EXPECT_TRUE(b::diff_skeletons(a, c, ops).same());
  b::DiffOptions flat = options();
  flat.flatten_conditions = true;
  EXPECT_TRUE(b::diff_skeletons(a, c, flat).same()) << b::format_diff(b::diff_skeletons(a, c, flat));
  // a loop is not a condition: one around the send is a difference either way
  const sk::Skeleton l = parse(R"J([{"op": "if", "cond": "rank % 2 == 0 && rank + 1 < P", "then": [{"op": "loop", "count": 1, "body": [
      {"op": "send", "peer": "rank + 1", "size": "N", "tag": 0}]}]},
    {"op": "if", "cond": "rank % 2 == 1", "then": [{"op": "recv", "peer": "rank - 1", "size": "N", "tag": 0}]}])J",
                               "", "l.json");
  const b::DiffReport rl = b::diff_skeletons(a, l, flat);
  ASSERT_EQ(rl.structural(), 1u) << b::format_diff(rl);
  EXPECT_EQ(rl.behavioural(), 0u) << b::format_diff(rl);
  EXPECT_EQ(rl.differences[0].path_b, "/body/0/then/0");
}

// Rank groups are a chain of ifs: two groups against one if/else are the same; a missing message is a length
// difference naming the block; flops compare with seconds through the rate.
TEST(SkelDiff, GroupsLengthAndFlops) {
  const sk::Skeleton a = sk::parse_skeleton(R"J({"format": "mksim-skeleton", "version": 1, "params": {"N": {"default": 64}},
    "programs": [{"ranks": "rank == 0", "body": [{"op": "compute", "flops": "1e6 * N"}, {"op": "bcast", "root": 0, "size": "N"}]},
                 {"ranks": "rank > 0", "body": [{"op": "bcast", "root": 0, "size": "N"}]}]})J",
                                            "a.json");
  const sk::Skeleton c = parse(R"J([{"op": "if", "cond": "rank == 0", "then": [{"op": "compute", "seconds": "0.001 * N"},
    {"op": "bcast", "root": 0, "size": "N"}], "else": [{"op": "bcast", "root": 0, "size": "N"}]}])J",
                               "", "c.json");
  b::DiffOptions o = options();
  o.flops_rate = 1e9;
  EXPECT_TRUE(b::diff_skeletons(a, c, o).same()) << b::format_diff(b::diff_skeletons(a, c, o));
  o.flops_rate = 0.25e9;  // four times the seconds: beyond 50%
  const b::DiffReport r = b::diff_skeletons(a, c, o);
  ASSERT_EQ(r.differences.size(), 1u) << b::format_diff(r);
  EXPECT_EQ(r.differences[0].kind, "compute");
  EXPECT_EQ(r.differences[0].rank, 0);
  const sk::Skeleton d = parse(R"J([{"op": "if", "cond": "rank == 0", "then": [{"op": "compute", "seconds": "0.001 * N"},
    {"op": "bcast", "root": 0, "size": "N"}, {"op": "barrier"}], "else": [{"op": "bcast", "root": 0, "size": "N"}]}])J",
                               "", "d.json");
  o.flops_rate = 1e9;
  o.structure = false;
  const b::DiffReport l = b::diff_skeletons(a, d, o);
  ASSERT_EQ(l.differences.size(), 1u) << b::format_diff(l);
  EXPECT_EQ(l.differences[0].kind, "length");
  EXPECT_EQ(l.differences[0].path_b, "/body/0/then/2");
  EXPECT_THROW(b::diff_skeletons(a, d, [&] {
                 b::DiffOptions bad = o;
                 bad.points = {{{"Q", 1}}};
                 return bad;
               }()),
               sk::SkeletonError);
}

// Equal in distribution (a `prob` branch that picks a compute amount, as master_worker's task kinds): the mixture
// against one block of its mean differs rank by rank over few draws, and agrees as the sum over all ranks.
TEST(SkelDiff, ProbabilisticComputeComparedAsTheSum) {
  const sk::Skeleton a = parse(R"J([{"op": "loop", "count": 10, "body": [{"op": "if", "prob": 0.1,
      "then": [{"op": "compute", "seconds": 0.01}], "else": [{"op": "compute", "seconds": 0.001}]}, {"op": "barrier"}]}])J",
                               "", "a.json");
  const sk::Skeleton c = parse(R"J([{"op": "loop", "count": 10, "body": [{"op": "compute", "seconds": 0.0019}, {"op": "barrier"}]}])J", "", "c.json");
  b::DiffOptions o = options({64});
  o.compute_rel = 0.2;
  o.compute_abs_s = 0;
  const b::DiffReport per_rank = b::diff_skeletons(a, c, o);
  EXPECT_EQ(per_rank.structural(), 0u) << b::format_diff(per_rank);  // a branch without communication is no structure
  ASSERT_FALSE(per_rank.same());
  EXPECT_EQ(per_rank.differences[0].kind, "compute");
  o.compute_per_rank = false;
  const b::DiffReport sum = b::diff_skeletons(a, c, o);
  EXPECT_TRUE(sum.same()) << b::format_diff(sum);
}

// Equal in distribution (a `prob` branch that decides messages, with a shared coin, as coin_ring's rebuilt twice):
// probabilities within the tolerance, and with B drawing at A's probabilities every operation agrees; beyond it,
// the probability is the difference, named in both files.
TEST(SkelDiff, ProbabilitiesWithinToleranceAndTheSameDraws) {
  const char* ring = R"J([{"op": "loop", "count": "N", "body": [
      {"op": "if", "prob": "%s", "coin": "c", "then": [{"op": "send", "peer": "(rank + 1) %% P", "size": 8, "tag": 2}]},
      {"op": "if", "prob": "%s", "coin": "c", "coin_rank": "(rank - 1) %% P", "then": [{"op": "recv", "peer": "(rank + P - 1) %% P", "size": 8, "tag": 2}]},
      {"op": "barrier"}]}])J";
  auto with = [&](const char* p, const std::string& file) {
    char text[1024];
    std::snprintf(text, sizeof text, ring, p, p);
    return parse(text, "", file);
  };
  const sk::Skeleton a = with("0.3055", "a.json"), c = with("0.31", "c.json");
  b::DiffOptions o = options({2, 4, 8, 16});
  o.compute_rel = -1;
  const b::DiffReport own = b::diff_skeletons(a, c, o);  // each side's own probability: some draws part
  ASSERT_FALSE(own.same());
  EXPECT_EQ(own.structural(), 0u);
  o.prob_tol = 0.01;
  const b::DiffReport same = b::diff_skeletons(a, c, o);
  EXPECT_TRUE(same.same()) << b::format_diff(same);
  o.prob_tol = 0.001;
  const b::DiffReport beyond = b::diff_skeletons(a, c, o);
  ASSERT_EQ(beyond.differences.size(), 2u) << b::format_diff(beyond);
  EXPECT_EQ(beyond.differences[0].kind, "probability");
  EXPECT_EQ(beyond.differences[0].path_a, "/body/0/body/0");
  EXPECT_EQ(beyond.differences[1].path_b, "/body/0/body/1");
}
