// The hold-out comparison (skeletons/builder/holdout.hpp) on traces built in memory: an MPI_Sendrecv is
// compared as the isend, irecv and two waits it does, an alltoall by its bytes per destination on the
// communicator the trace shows being split, a communicator or a size that differs is found at its position,
// and a skeleton that cannot be expanded is reported per rank instead of thrown.
#include "skeletons/builder/holdout.hpp"
#include "skeletons/skeleton_io.hpp"

#include <gtest/gtest.h>

namespace {

using mksim::skeletons::builder::CommOp;
using mksim::trace::Event;
using mksim::trace::Kind;

Event ev(Kind k, int peer = -1, int tag = -1, long bytes = 0, int root = -1, unsigned comm = 0) {
  Event e;
  e.kind = k;
  e.peer = peer;
  e.tag = tag;
  e.bytes = bytes;
  e.root = root;
  e.comm = comm;
  return e;
}

// P = 4: every rank splits the world by rank % 2 (communicator 1 of 2 ranks), swaps 8 bytes with its ring
// neighbours by MPI_Sendrecv (tag 5), then an alltoall of 16 bytes per destination on the world and of 24
// on its half.
mksim::trace::Run ring_run() {
  mksim::trace::Run run;
  run.P = 4;
  run.dir = "memory";
  for (int r = 0; r < 4; ++r) {
    mksim::trace::RankTrace t;
    t.rank = r;
    t.world_size = 4;
    t.status = mksim::trace::Status::FINALIZED;
    t.events = {ev(Kind::INIT), ev(Kind::COMM_SPLIT, -1, r % 2, 0, 1, 0), ev(Kind::SENDRECV, (r + 1) % 4, 5, 8),
                ev(Kind::COMPLETE, (r + 3) % 4, 5, 8, 1), ev(Kind::ALLTOALL, -1, -1, 16 * 4),
                ev(Kind::ALLTOALL, -1, -1, 24 * 2, -1, 1), ev(Kind::FINALIZE)};
    run.ranks.push_back(t);
  }
  return run;
}

const char* RING_SKELETON = R"({"format": "mksim-skeleton", "version": 1, "name": "ring", "params": {"m": {"default": 8}},
  "body": [
    {"op": "isend", "peer": "(rank + 1) % P", "size": "m", "tag": 5, "req": "s"},
    {"op": "irecv", "peer": "(rank + P - 1) % P", "size": "m", "tag": 5, "req": "r"},
    {"op": "wait", "req": "s"}, {"op": "wait", "req": "r"},
    {"op": "alltoall", "size": "2 * m"},
    {"op": "alltoall", "size": "3 * m"}]})";

TEST(HoldOut, SplitSizesComeFromTheColoursOfEachSplit) {
  const auto sizes = mksim::skeletons::builder::communicator_sizes(ring_run());
  ASSERT_EQ(sizes.size(), 4u);
  for (const auto& s : sizes) {
    EXPECT_EQ(s.at(0), 4);
    EXPECT_EQ(s.at(1), 2);
  }
}

TEST(HoldOut, SendrecvIsIsendIrecvAndTwoWaitsAndAlltoallIsPerDestination) {
  const auto run = ring_run();
  const auto ops = mksim::skeletons::builder::traced_ops(run.ranks[1], mksim::skeletons::builder::communicator_sizes(run)[1]);
  ASSERT_EQ(ops.size(), 6u);
  EXPECT_EQ(ops[0], (CommOp{"isend", 2, 5, 8, -1, 0}));
  EXPECT_EQ(ops[1], (CommOp{"irecv", 0, 5, 8, -1, 0}));
  EXPECT_EQ(ops[2].kind, "wait");
  EXPECT_EQ(ops[3].kind, "wait");
  EXPECT_EQ(ops[4], (CommOp{"alltoall", -1, -1, 16, -1, 0}));
  EXPECT_EQ(ops[5], (CommOp{"alltoall", -1, -1, 24, -1, 1}));
}

TEST(HoldOut, FindsTheCommunicatorAndTheSizeThatDiffer) {
  const auto sk = mksim::skeletons::parse_skeleton(RING_SKELETON, "ring.json");
  auto rep = mksim::skeletons::builder::compare_with_trace(sk, ring_run(), {{"m", 8}});
  ASSERT_EQ(rep.ranks.size(), 4u);
  EXPECT_EQ(rep.exact_ranks(), 0u);  // the skeleton's second alltoall is on the world, the trace's on the half
  for (const auto& r : rep.ranks) {
    ASSERT_TRUE(r.first_difference);
    EXPECT_EQ(*r.first_difference, 5u);
    EXPECT_EQ(r.skeleton_op->comm, 0);
    EXPECT_EQ(r.trace_op->comm, 1);
    EXPECT_EQ(mksim::skeletons::builder::describe(*r.trace_op), "alltoall(24 B, comm 1)");
  }
  rep = mksim::skeletons::builder::compare_with_trace(sk, ring_run(), {{"m", 4}});  // sizes differ from the start
  EXPECT_EQ(*rep.ranks[0].first_difference, 0u);
  EXPECT_EQ(mksim::skeletons::builder::describe(*rep.ranks[0].skeleton_op), "isend(peer 1, tag 5, 4 B)");
}

TEST(HoldOut, EveryRankExactWhenTheTraceIsOnTheWorld) {
  auto run = ring_run();
  for (auto& t : run.ranks) t.events[5].comm = 0, t.events[5].bytes = 24 * 4;
  const auto sk = mksim::skeletons::parse_skeleton(RING_SKELETON, "ring.json");
  const auto rep = mksim::skeletons::builder::compare_with_trace(sk, run, {{"m", 8}});
  EXPECT_EQ(rep.exact_ranks(), 4u);
  EXPECT_EQ(rep.traced_ops(), 24u);
}

TEST(HoldOut, AnExpansionErrorIsReportedPerRank) {
  const auto sk = mksim::skeletons::parse_skeleton(
      R"({"format": "mksim-skeleton", "version": 1, "name": "bad", "params": {},
          "body": [{"op": "loop", "count": "rank - 2", "body": [{"op": "barrier"}]}]})",
      "bad.json");
  const auto rep = mksim::skeletons::builder::compare_with_trace(sk, ring_run(), {});
  EXPECT_NE(rep.ranks[0].error, "");  // a negative count at ranks 0 and 1
  EXPECT_FALSE(rep.ranks[0].exact());
  EXPECT_EQ(rep.ranks[3].error, "");
}

}  // namespace
