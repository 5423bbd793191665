// Skeleton expansion (skeletons/expand.hpp): the hand-written ATM2D skeleton expands, rank by rank, to
// exactly the calls the real program makes (tests/trace_expectations.hpp, the description both trace
// readers are checked against), and probabilistic branches draw the replay engine's per-rank stream.
#include "skeletons/error.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/matching.hpp"
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

// ---- the matching check (skeletons/matching.hpp): what pairs, and each way a skeleton can fail to

namespace {

mksim::skeletons::MatchingReport check(const std::string& body, int P) {
  const auto sk = mksim::skeletons::parse_skeleton(R"J({"format":"mksim-skeleton","version":3,"name":"m","body":)J" + body + "}", "m.json");
  return mksim::skeletons::check_matching(sk, mksim::skeletons::bind_parameters(sk, P, {}), P);
}

bool mentions(const mksim::skeletons::MatchingReport& r, const std::string& what) {
  for (const auto& p : r.problems)
    if (p.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(Matching, ShiftsOnAPeriodicGridAndCollectivesPair) {
  for (const char* p : {"examples/atm2d.json", "examples/cg.json", "examples/summa.json", "examples/master_worker.json"}) {
    const auto sk = mksim::skeletons::load_skeleton(std::string(MKSIM_SOURCE_DIR) + "/skeletons/" + p);
    const auto r = mksim::skeletons::check_matching(sk, mksim::skeletons::bind_parameters(sk, 16, {}), 16);
    EXPECT_TRUE(r.ok()) << p << ": " << (r.problems.empty() ? "" : r.problems.front());
  }
  const auto ring = check(R"J([{"op":"irecv","peer":"(rank+P-1)%P","size":8,"req":"a"},{"op":"send","peer":"(rank+1)%P","size":8},
      {"op":"wait","req":"a"},{"op":"allreduce","size":8}])J", 5);
  EXPECT_TRUE(ring.ok());
  EXPECT_EQ(ring.messages, 5u);
  EXPECT_EQ(ring.collectives, 5u);
}

// Both ranks receive first, in blocking calls: the replay would deadlock, and so does the check.
TEST(Matching, ReceivesBeforeSendsOnBothSidesDeadlock) {
  const auto r = check(R"J([{"op":"recv","peer":"1-rank","size":8},{"op":"send","peer":"1-rank","size":8}])J", 2);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(mentions(r, "deadlock: rank(s) 0 wait at block /body/0 for a message from rank 1, which waits too")) << r.problems.front();
  const auto never = check(R"J([{"op":"if","cond":"rank == 1","then":[{"op":"recv","peer":0,"size":8}]}])J", 2);
  EXPECT_TRUE(mentions(never, "deadlock: rank(s) 1 wait at block /body/0/then/0 for a message from rank 0 that is never sent")) << never.problems.front();
  // the same exchange with the receive posted first and waited after the send pairs
  EXPECT_TRUE(check(R"J([{"op":"irecv","peer":"1-rank","size":8,"req":"r"},{"op":"send","peer":"1-rank","size":8},{"op":"wait","req":"r"}])J", 2).ok());
}

TEST(Matching, DifferentCollectivesTruncationsAndLostMessagesAreNamed) {
  const auto coll = check(R"J([{"op":"if","cond":"rank == 0","then":[{"op":"bcast","root":0,"size":8}],
      "else":[{"op":"allreduce","size":8}]}])J", 4);
  EXPECT_TRUE(mentions(coll, "calls allreduce (block /body/0/else/0) where rank 0 called bcast with root 0")) << coll.problems.front();
  const auto trunc = check(R"J([{"op":"if","cond":"rank == 0","then":[{"op":"send","peer":1,"size":100}],
      "else":[{"op":"recv","peer":0,"size":10}]}])J", 2);
  EXPECT_TRUE(mentions(trunc, "message of 100 bytes from rank 0 (block /body/0/then/0) truncated: receive is 10 bytes")) << trunc.problems.front();
  const auto lost = check(R"J([{"op":"isend","peer":"(rank+1)%P","size":8,"req":"s"},{"op":"wait","req":"s"}])J", 3);
  EXPECT_TRUE(mentions(lost, "3 message(s) never received, the first from rank")) << lost.problems.front();
}
