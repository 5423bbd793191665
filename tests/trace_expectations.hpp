// What the reference programs (skeletons/apps) do, event by event, as both trace readers must show it:
// shared by the binary tracer's tests and the time-independent importer's tests.
#pragma once

#include "skeletons/trace/reader.hpp"
#include "skeletons/trace/trace.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace trace_expect {

// the messages of the gtest failures that check() reports (without failing the calling test)
template <class Check>
std::vector<std::string> failures_of(Check check) {
  ::testing::TestPartResultArray results;
  {
    const ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    check();
  }
  std::vector<std::string> out;
  for (int i = 0; i < results.size(); ++i) out.emplace_back(results.GetTestPartResult(i).message());
  return out;
}


// Every message is received at the size it was sent: the pairs of mksim::trace::match_messages (MPI's
// non-overtaking rule), per channel (sender, receiver, tag), and no send or receive left over. A receive whose
// source the trace does not know (SMPI writes MPI_ANY_SOURCE receives without their actual source) counts on
// the channel (ANY, receiver, tag): it must take as many messages of the same sizes as the sends to that
// receiver and tag nobody else received (compared as multisets: the arrival order is unknown).
inline void expect_messages_received(const mksim::trace::Run& run) {
  using Channel = std::tuple<int, int, int>;  // sender (or ANY), receiver, tag
  const mksim::trace::Matching m = mksim::trace::match_messages(run);
  std::map<Channel, std::vector<std::int64_t>> sent, received;
  for (const auto& p : m.pairs) {
    const Channel c{p.send.rank, p.recv.rank, p.send.tag};
    sent[c].push_back(p.send.bytes);
    received[c].push_back(p.recv.bytes);
  }
  for (const auto& [channel, sizes] : sent) {
    const auto& [from, to, tag] = channel;
    EXPECT_EQ(sizes, received[channel]) << "messages from " << from << " to " << to << " with tag " << tag;
  }
  std::map<Channel, std::vector<std::int64_t>> unsent, unreceived;  // left over, by (ANY, receiver, tag)
  for (const auto& u : m.unpaired) {
    const bool wildcard = u.why == mksim::trace::Unpaired::SOURCE_UNKNOWN && u.end.completed;
    if (u.send)
      unreceived[{mksim::trace::ANY, u.end.peer, u.end.tag}].push_back(u.end.bytes);
    else if (wildcard)
      unsent[{mksim::trace::ANY, u.end.rank, u.end.tag}].push_back(u.end.bytes);
    else
      ADD_FAILURE() << "a receive from " << u.end.peer << " on " << u.end.rank << " with tag " << u.end.tag
                    << (u.end.completed ? " that nobody sends" : " that never completed");
  }
  for (auto& [channel, sizes] : unreceived) {
    auto& got = unsent[channel];
    std::sort(sizes.begin(), sizes.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(sizes, got) << "messages to " << std::get<1>(channel) << " with tag " << std::get<2>(channel) << " from "
                          << std::get<0>(channel) << " (sends nobody received named, receives from MPI_ANY_SOURCE)";
  }
  for (const auto& [channel, sizes] : unsent)
    EXPECT_TRUE(unreceived.count(channel)) << sizes.size() << " receives from " << std::get<0>(channel) << " on "
                                           << std::get<1>(channel) << " with tag " << std::get<2>(channel)
                                           << " that nobody sends";
}


using mksim::trace::Kind;

/** @brief One expected event: its kind and the fields both readers fill. */
struct Want {
  Kind kind;
  int peer = -1;
  int tag = -1;
  long bytes = 0;
  int root = -1;
};

inline std::vector<Want> head() { return {{Kind::INIT}}; }

// the reductions after the modelled part: the program's own result reductions (atm2d and cg 1: the sum;
// pge1 and pge2 2: the checksum and the residual; master_worker 0), then app_report's three (calls, t0, t1)
inline void tail(std::vector<Want>& w, int result_reductions = 1) {
  for (int i = 0; i < result_reductions + 3; ++i) w.push_back({Kind::REDUCE, -1, -1, 8, 0});
  w.push_back({Kind::FINALIZE});
}

// the size of block b of the M systems in blocks of K (the last one may be smaller), as pge1/pge2 cut them
inline long pge_block(long M, long K, long b) { return M - b * K < K ? M - b * K : K; }

// atm2d (skeletons/apps/atm2d.c): red ranks exchange N, S, E, W, black ranks S, N, W, E; each exchange is
// isend (tag = direction sent), irecv (tag = the neighbour's), waitall of 2 (send completes first).
inline std::vector<Want> atm2d_events(int P, int rank, int N, int steps) {
  int L = 0;
  while ((2 << L) <= P) ++L;
  const int Px = 1 << (L / 2), Py = P / Px, x = rank % Px, y = rank / Px;
  const long ns = 2L * (N / Px) * 8, ew = 2L * (N / Py) * 8;
  struct Ex { bool on; int peer, stag, rtag; long bytes; };
  const Ex north{y > 0, rank - Px, 1, 2, ns}, south{y < Py - 1, rank + Px, 2, 1, ns};
  const Ex east{x < Px - 1, rank + 1, 3, 4, ew}, west{x > 0, rank - 1, 4, 3, ew};
  const bool red = (x + y) % 2 == 0;
  const std::vector<Ex> order = red ? std::vector<Ex>{north, south, east, west} : std::vector<Ex>{south, north, west, east};
  std::vector<Want> w = head();
  for (int s = 0; s < steps; ++s)
    for (const Ex& e : order) {
      if (!e.on) continue;
      w.push_back({Kind::ISEND, e.peer, e.stag, e.bytes, -1});
      w.push_back({Kind::IRECV, e.peer, e.rtag, e.bytes, -1});
      w.push_back({Kind::WAITALL, -1, -1, 0, 2});
      w.push_back({Kind::COMPLETE, e.peer, e.stag, e.bytes, 0});
      w.push_back({Kind::COMPLETE, e.peer, e.rtag, e.bytes, 1});
    }
  tail(w);
  return w;
}

// cg (skeletons/apps/cg.c): halo irecv/isend with rank-1 (tags 1/2) then rank+1 (2/1), waitall; one
// allreduce in the setup and two per iteration.
inline std::vector<Want> cg_events(int P, int rank, int nx, int iters) {
  const long b = nx * 8L;
  std::vector<Want> w = head();
  auto halo = [&] {
    std::vector<Want> done;
    if (rank > 0) {
      w.push_back({Kind::IRECV, rank - 1, 1, b, -1});
      w.push_back({Kind::ISEND, rank - 1, 2, b, -1});
      done.push_back({Kind::COMPLETE, rank - 1, 1, b, 1});
      done.push_back({Kind::COMPLETE, rank - 1, 2, b, 0});
    }
    if (rank < P - 1) {
      w.push_back({Kind::IRECV, rank + 1, 2, b, -1});
      w.push_back({Kind::ISEND, rank + 1, 1, b, -1});
      done.push_back({Kind::COMPLETE, rank + 1, 2, b, 1});
      done.push_back({Kind::COMPLETE, rank + 1, 1, b, 0});
    }
    w.push_back({Kind::WAITALL, -1, -1, 0, static_cast<int>(done.size())});
    w.insert(w.end(), done.begin(), done.end());
  };
  halo();
  w.push_back({Kind::ALLREDUCE, -1, -1, 8, -1});
  for (int it = 0; it < iters; ++it) {
    halo();
    w.push_back({Kind::ALLREDUCE, -1, -1, 8, -1});
    w.push_back({Kind::ALLREDUCE, -1, -1, 8, -1});
  }
  tail(w);
  return w;
}

// pge1 (skeletons/apps/pge1.c): a chain 0 -> P-1 of blocking MPI_Recv / MPI_Send, nb = ceil(M/K) blocks;
// forward (tag 1) from rank-1 to rank+1, 2 doubles per system (c', d'); backward (tag 2) from rank+1 to
// rank-1, 1 double per system. N only sets the columns each rank computes, not the messages.
inline std::vector<Want> pge1_events(int P, int rank, long M, long K) {
  const long nb = (M + K - 1) / K;
  std::vector<Want> w = head();
  for (long b = 0; b < nb; ++b) {
    const long ks = pge_block(M, K, b);
    if (rank > 0) w.push_back({Kind::RECV, rank - 1, 1, 16 * ks, -1});
    if (rank < P - 1) w.push_back({Kind::SEND, rank + 1, 1, 16 * ks, -1});
  }
  for (long b = 0; b < nb; ++b) {
    const long ks = pge_block(M, K, b);
    if (rank < P - 1) w.push_back({Kind::RECV, rank + 1, 2, 8 * ks, -1});
    if (rank > 0) w.push_back({Kind::SEND, rank - 1, 2, 8 * ks, -1});
  }
  tail(w, 2);
  return w;
}

// pge2 (skeletons/apps/pge2.c), P even, h = P/2: the top chain 0 -> h-1 eliminates (tag 1, 2 doubles per
// system) while the bottom chain P-1 -> h does (tag 2); ranks h-1 and h swap the interface rows of all M
// systems (isend with tag 3 from h-1, 4 from h; recv of the other; wait: 1 completed send); then back
// substitution h-1 -> 0 (tag 5) and h -> P-1 (tag 6), 1 double per system. Blocking MPI_Recv / MPI_Send.
inline std::vector<Want> pge2_events(int P, int rank, long M, long K) {
  const int h = P / 2;
  const long nb = (M + K - 1) / K;
  const bool top = rank < h;
  std::vector<Want> w = head();
  for (long b = 0; b < nb; ++b) {
    const long ks = pge_block(M, K, b);
    if (top) {
      if (rank > 0) w.push_back({Kind::RECV, rank - 1, 1, 16 * ks, -1});
      if (rank < h - 1) w.push_back({Kind::SEND, rank + 1, 1, 16 * ks, -1});
    } else {
      if (rank < P - 1) w.push_back({Kind::RECV, rank + 1, 2, 16 * ks, -1});
      if (rank > h) w.push_back({Kind::SEND, rank - 1, 2, 16 * ks, -1});
    }
  }
  if (rank == h - 1 || rank == h) {
    const int peer = rank == h - 1 ? h : h - 1, stag = rank == h - 1 ? 3 : 4, rtag = 7 - stag;
    w.push_back({Kind::ISEND, peer, stag, 16 * M, -1});
    w.push_back({Kind::RECV, peer, rtag, 16 * M, -1});
    w.push_back({Kind::WAIT, -1, -1, 0, 1});
    w.push_back({Kind::COMPLETE, peer, stag, 16 * M, 0});
  }
  for (long b = 0; b < nb; ++b) {
    const long ks = pge_block(M, K, b);
    if (top) {
      if (rank < h - 1) w.push_back({Kind::RECV, rank + 1, 5, 8 * ks, -1});
      if (rank > 0) w.push_back({Kind::SEND, rank - 1, 5, 8 * ks, -1});
    } else {
      if (rank > h) w.push_back({Kind::RECV, rank - 1, 6, 8 * ks, -1});
      if (rank < P - 1) w.push_back({Kind::SEND, rank + 1, 6, 8 * ks, -1});
    }
  }
  tail(w, 2);
  return w;
}

/** @brief master_worker's arguments (skeletons/apps/master_worker.c). */
struct MasterWorker {
  long tasks, depth, task_bytes, result_bytes;
  /** @brief The tasks worker w (1..P-1) gets: task t goes to 1 + t % W. */
  long tasks_of(int P, int w) const { return w < 1 ? 0 : std::max(0L, (tasks - w + P - 1) / (P - 1)); }
};

// master_worker (skeletons/apps/master_worker.c), P >= 2, W = P-1 workers. Deterministic: which task goes
// to which worker (static round-robin, task t to 1 + t % W), every message's size (task_bytes, result_bytes,
// 16-byte requests, 0-byte stops; the data and the seed only change the work, not what is sent) and each
// rank's own order of calls. Not deterministic: which worker's message each of the master's
// MPI_ANY_SOURCE receives (requests, tag 1; results, tag 3) gets, which depends on timing: those receives
// have peer ANY here. What is known of them instead: over the tag-1 receives every worker once, over the
// tag-3 receives worker w exactly tasks_of(w) times (and in each worker's own order, by MPI's
// non-overtaking rule). Master: the W requests; isends of the first min(depth W, tasks) tasks (tag 2); per
// further task a result receive and the task's isend; the last results; waitall of all task sends; a 0-byte
// stop (tag 4) to each worker. Worker: its request, per task recv and isend of the result (tag 3), the
// stop, waitall. No result reduction before app_report (the checksum is the master's).
inline std::vector<Want> master_worker_events(int P, int rank, const MasterWorker& a) {
  const int W = P - 1;
  std::vector<Want> w = head();
  if (rank == 0) {
    const long first = std::min(a.depth * W, a.tasks);
    for (int i = 0; i < W; ++i) w.push_back({Kind::RECV, mksim::trace::ANY, 1, 16, -1});
    auto task = [&](long t) { return Want{Kind::ISEND, static_cast<int>(1 + t % W), 2, a.task_bytes, -1}; };
    for (long t = 0; t < first; ++t) w.push_back(task(t));
    for (long t = first; t < a.tasks; ++t) {
      w.push_back({Kind::RECV, mksim::trace::ANY, 3, a.result_bytes, -1});
      w.push_back(task(t));
    }
    for (long i = 0; i < first; ++i) w.push_back({Kind::RECV, mksim::trace::ANY, 3, a.result_bytes, -1});
    w.push_back({Kind::WAITALL, -1, -1, 0, static_cast<int>(a.tasks)});
    for (long t = 0; t < a.tasks; ++t) w.push_back({Kind::COMPLETE, static_cast<int>(1 + t % W), 2, a.task_bytes, 0});
    for (int k = 1; k <= W; ++k) w.push_back({Kind::SEND, k, 4, 0, -1});
  } else {
    const long mine = a.tasks_of(P, rank);
    w.push_back({Kind::SEND, 0, 1, 16, -1});
    for (long i = 0; i < mine; ++i) {
      w.push_back({Kind::RECV, 0, 2, a.task_bytes, -1});
      w.push_back({Kind::ISEND, 0, 3, a.result_bytes, -1});
    }
    w.push_back({Kind::RECV, 0, 4, 0, -1});
    w.push_back({Kind::WAITALL, -1, -1, 0, static_cast<int>(mine)});
    for (long i = 0; i < mine; ++i) w.push_back({Kind::COMPLETE, 0, 3, a.result_bytes, 0});
  }
  tail(w, 0);
  return w;
}

}  // namespace trace_expect
