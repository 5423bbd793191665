// Skeleton expansion (skeletons/expand.hpp): the hand-written ATM2D skeleton expands, rank by rank, to
// exactly the calls the real program makes (tests/trace_expectations.hpp, the description both trace
// readers are checked against), and probabilistic branches draw the replay engine's per-rank stream.
#include "skeletons/error.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/skeleton_io.hpp"
#include "tests/trace_expectations.hpp"

#include <gtest/gtest.h>

namespace {

using mksim::skeletons::ExpandedOp;
using mksim::trace::Kind;

TEST(Expand, Atm2dSkeletonMakesTheProgramsExchangesAtEveryRank) {
  const auto sk = mksim::skeletons::load_skeleton(std::string(MKSIM_SOURCE_DIR) + "/skeletons/examples/atm2d.json");
  for (int P : {4, 8, 16, 32}) {
    const auto frame = mksim::skeletons::bind_parameters(sk, P, {{"N", 64}, {"steps", 3}});
    for (int r = 0; r < P; ++r) {
      std::vector<trace_expect::Want> want;
      for (const auto& w : trace_expect::atm2d_events(P, r, 64, 3))
        if (w.kind == Kind::ISEND || w.kind == Kind::IRECV || w.kind == Kind::WAITALL) want.push_back(w);
      std::vector<ExpandedOp> got;
      for (const auto& op : mksim::skeletons::expand_rank(sk, frame, r))
        if (op.kind != ExpandedOp::Kind::COMPUTE) got.push_back(op);
      ASSERT_EQ(got.size(), want.size()) << "P=" << P << " rank " << r;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const auto& g = got[i];
        const auto& w = want[i];
        const Kind k = g.kind == ExpandedOp::Kind::ISEND ? Kind::ISEND : g.kind == ExpandedOp::Kind::IRECV ? Kind::IRECV : Kind::WAITALL;
        ASSERT_EQ(k, w.kind) << "P=" << P << " rank " << r << " op " << i;
        if (k == Kind::WAITALL) continue;
        EXPECT_EQ(g.peer, w.peer) << "P=" << P << " rank " << r << " op " << i;
        EXPECT_EQ(g.tag, w.tag) << "P=" << P << " rank " << r << " op " << i;
        EXPECT_EQ(static_cast<long>(g.size_bytes), w.bytes) << "P=" << P << " rank " << r << " op " << i;
      }
    }
  }
}

TEST(Expand, ProbabilisticBranchesFollowTheSeededPerRankStream) {
  const auto sk = mksim::skeletons::parse_skeleton(R"({"format":"mksim-skeleton","version":1,"body":[
    {"op":"loop","count":200,"body":[{"op":"if","prob":0.3,"then":[{"op":"compute","seconds":1}],
                                      "else":[{"op":"compute","seconds":2}]}]}]})", "t.json");
  const auto frame = mksim::skeletons::bind_parameters(sk, 4, {});
  auto ones = [&](std::uint64_t seed, int rank) {
    int n = 0;
    for (const auto& op : mksim::skeletons::expand_rank(sk, frame, rank, seed)) n += op.amount == 1;
    return n;
  };
  EXPECT_EQ(ones(7, 1), ones(7, 1));          // reproducible
  EXPECT_NE(ones(7, 1), ones(7, 2));          // ranks draw independently (these two differ)
  EXPECT_NEAR(ones(7, 1) / 200.0, 0.3, 0.1);  // with the branch's probability
}

TEST(Expand, TooManyOperationsIsAnErrorNamingTheBlock) {
  const auto sk = mksim::skeletons::parse_skeleton(R"({"format":"mksim-skeleton","version":1,"body":[
    {"op":"loop","id":"big","count":1000,"body":[{"op":"compute","id":"work","seconds":1}]}]})", "t.json");
  const auto frame = mksim::skeletons::bind_parameters(sk, 1, {});
  try {
    mksim::skeletons::expand_rank(sk, frame, 0, 1, 10);
    FAIL() << "no error";
  } catch (const mksim::skeletons::SkeletonError& e) {
    EXPECT_EQ(std::string(e.what()), "t.json: work: rank 0: more than 10 operations");
  }
}

TEST(Expand, RegionsRunTheirBodyAndDistributionsDrawFromTheSameStream) {
  // a region around a loop that interleaves branch draws and compute draws: one stream, in program order
  const auto sk = mksim::skeletons::parse_skeleton(R"({"format":"mksim-skeleton","version":2,"body":[
    {"op":"region","name":"solve","body":[
      {"op":"loop","count":400,"body":[
        {"op":"if","prob":0.5,"then":[{"op":"barrier"}]},
        {"op":"compute","seconds":0.002,"dist":{"type":"lognormal","cv":0.4}}]}]}]})", "t.json");
  const auto frame = mksim::skeletons::bind_parameters(sk, 4, {});
  auto amounts = [&](std::uint64_t seed, int rank) {
    std::vector<double> v;
    for (const auto& op : mksim::skeletons::expand_rank(sk, frame, rank, seed))
      if (op.kind == ExpandedOp::Kind::COMPUTE) {
        EXPECT_EQ(op.block, 4);  // region 0, loop 1, if 2, barrier 3, compute 4
        v.push_back(op.amount);
      }
    return v;
  };
  const auto a = amounts(9, 1);
  ASSERT_EQ(a.size(), 400u);
  EXPECT_EQ(a, amounts(9, 1));  // reproducible
  EXPECT_NE(a, amounts(9, 2));  // ranks draw independently
  EXPECT_NE(a, amounts(10, 1));
  double sum = 0;
  for (double x : a) sum += x;
  // mean 2 ms, sd 0.8 ms: 400 draws put the sample mean within 5 standard errors (0.2 ms) of it
  EXPECT_NEAR(sum / 400, 0.002, 5 * 0.4 * 0.002 / 20);
}

}  // namespace
