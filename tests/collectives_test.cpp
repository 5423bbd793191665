// Collective algorithms, checked without a simulator: every send has a matching receive of the same size,
// message counts follow the algorithms' formulas, and no rank waits on itself.
#include "sim/engine/collectives.hpp"

#include <gtest/gtest.h>

#include <map>
#include <tuple>

using namespace mksim::sim;
using mksim::skeletons::CollectiveKind;

namespace {

/** Records posted operations; waits are no-ops (ordering is checked by the simulation tests). */
struct Recorder : P2PLayer {
  std::map<std::tuple<int, int>, std::vector<double>> sends, recvs;  // (src,dst) -> sizes in order
  long messages = 0;
  std::shared_ptr<void> isend(int me, int dst, int, double bytes, int, std::uint32_t) override {
    EXPECT_NE(me, dst);
    sends[{me, dst}].push_back(bytes);
    ++messages;
    return std::make_shared<int>(0);
  }
  std::shared_ptr<void> irecv(int me, int src, int, double bytes, int, std::uint32_t) override {
    EXPECT_NE(me, src);
    recvs[{src, me}].push_back(bytes);
    return std::make_shared<int>(0);
  }
  void wait(int, const std::shared_ptr<void>&, CollAcc&) override {}
};

Recorder run_all(CollectiveKind k, int P, int root, double bytes) {
  Recorder rec;
  CollAcc acc;
  for (int r = 0; r < P; ++r) run_collective(rec, k, r, P, root, bytes, 0, -1, acc);
  return rec;
}

}  // namespace

TEST(Collectives, EverySendHasAMatchingReceive) {
  for (auto k : {CollectiveKind::BARRIER, CollectiveKind::BCAST, CollectiveKind::REDUCE, CollectiveKind::ALLREDUCE,
                 CollectiveKind::GATHER, CollectiveKind::SCATTER, CollectiveKind::ALLGATHER, CollectiveKind::ALLTOALL})
    for (int P = 1; P <= 33; ++P)
      for (int root : {0, P / 2, P - 1}) {
        Recorder rec = run_all(k, P, root, 8);
        EXPECT_EQ(rec.sends, rec.recvs) << collective_name(k) << " P=" << P << " root=" << root;
      }
}

TEST(Collectives, MessageCountsFollowTheAlgorithms) {
  for (int P : {2, 5, 8, 13, 16, 32}) {
    int lg = 0;
    while ((1 << lg) < P) ++lg;
    int pof2 = 1 << (31 - __builtin_clz(P));
    EXPECT_EQ(run_all(CollectiveKind::BCAST, P, 1, 8).messages, P - 1);
    EXPECT_EQ(run_all(CollectiveKind::REDUCE, P, 0, 8).messages, P - 1);
    EXPECT_EQ(run_all(CollectiveKind::GATHER, P, 0, 8).messages, P - 1);
    EXPECT_EQ(run_all(CollectiveKind::BARRIER, P, 0, 0).messages, static_cast<long>(P) * lg);
    EXPECT_EQ(run_all(CollectiveKind::ALLGATHER, P, 0, 8).messages, static_cast<long>(P) * lg);
    EXPECT_EQ(run_all(CollectiveKind::ALLTOALL, P, 0, 8).messages, static_cast<long>(P) * (P - 1));
    int lg2 = 0;
    while ((1 << lg2) < pof2) ++lg2;
    EXPECT_EQ(run_all(CollectiveKind::ALLREDUCE, P, 0, 8).messages, static_cast<long>(pof2) * lg2 + 2 * (P - pof2));
  }
}

TEST(Collectives, GatherMovesEveryBlockToTheRootOnce) {
  for (int P : {3, 8, 11}) {
    Recorder rec = run_all(CollectiveKind::GATHER, P, 2, 100);
    double into_root = 0;
    for (const auto& [key, sizes] : rec.sends)
      if (std::get<1>(key) == 2)
        for (double s : sizes) into_root += s;
    EXPECT_EQ(into_root, (P - 1) * 100.0) << P;
    Recorder sc = run_all(CollectiveKind::SCATTER, P, 2, 100);
    double from_root = 0;
    for (const auto& [key, sizes] : sc.sends)
      if (std::get<0>(key) == 2)
        for (double s : sizes) from_root += s;
    EXPECT_EQ(from_root, (P - 1) * 100.0) << P;
  }
}
