// What the reference programs (skeletons/apps) do, event by event, as both trace readers must show it:
// shared by the binary tracer's tests and the time-independent importer's tests.
#pragma once

#include "skeletons/trace/trace.hpp"

#include <vector>

namespace trace_expect {

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

// the result reductions of every program: MPI_Reduce of the result, then app_report's three
inline void tail(std::vector<Want>& w) {
  for (int i = 0; i < 4; ++i) w.push_back({Kind::REDUCE, -1, -1, 8, 0});
  w.push_back({Kind::FINALIZE});
}

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

}  // namespace trace_expect
