// The skeleton builder's communicators and topologies (skeletons/builder/topology.hpp; issue 23 part B), on
// real OpenMPI traces that each test makes once: tests/topo_app.c "grid" (periodic 2-D Cartesian grid from
// MPI_Dims_create, its rows and columns from MPI_Cart_sub, a split with reversed keys, a dup) and "cube" (3-D,
// not periodic: MPI_PROC_NULL at the faces, an edge neighbour), built from P = 4, 8, 16 and checked rank by
// rank against a run at P = 32 that the builder never saw; and the corpus' SUMMA, whose panel roots are step
// functions of the panel loop's index (exact at P = 32), and without that, the integer guard; and the corpus'
// sweep3d, whose eight octant pipelines align although edge ranks skip a receive or a send (exact at P = 32).
#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/fold.hpp"
#include "skeletons/builder/holdout.hpp"
#include "skeletons/builder/topology.hpp"
#include "skeletons/error.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"

#include <gtest/gtest.h>

#include <array>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace b = mksim::skeletons::builder;

mksim::trace::Run trace(const std::string& exe, const std::string& mode, int P, int steps, int bytes_or_n,
                        const std::string& extra_params = "") {
  std::string tag = fs::path(exe).filename().string() + "_" + mode + "_" + std::to_string(P);
  for (char& ch : tag)
    if (ch == ' ') ch = '_';
  const fs::path dir = fs::path(::testing::TempDir()) / ("mksim_topo_build_" + std::to_string(::getpid()) + "_" + tag);
  fs::remove_all(dir);
  const std::string cmd = std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 ") +
                          MKTRACE + " -np " + std::to_string(P) + extra_params + " -o " + dir.string() + " -- " + exe + " " +
                          mode + " >" + dir.string() + ".log 2>&1";
  (void)steps;
  (void)bytes_or_n;
  const int rc = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
  return mksim::trace::read_run(dir.string(), {.require_complete = true});
}

mksim::trace::Run topo(const std::string& mode, int P, int steps) {
  return trace(TOPO_APP, mode + " " + std::to_string(steps) + " 64", P, steps, 64,
               " --param steps=" + std::to_string(steps) + " --param bytes=64");
}

// Every rank of `run` expands to exactly its traced operations (kind, world peer, tag, bytes, world root, and
// the communicator's members).
void expect_exact(const mksim::skeletons::Skeleton& sk, const mksim::trace::Run& run, const std::map<std::string, double>& params,
                  const std::string& text) {
  const auto rep = b::compare_with_trace(sk, run, params);
  EXPECT_EQ(rep.exact_ranks(), static_cast<std::size_t>(run.P)) << text;
  for (const auto& rc : rep.ranks)
    if (!rc.exact()) {
      ADD_FAILURE() << "P=" << run.P << " rank " << rc.rank << ": " << rc.error
                    << (rc.skeleton_op ? " skeleton " + b::describe(*rc.skeleton_op) : "")
                    << (rc.trace_op ? " trace " + b::describe(*rc.trace_op) : "");
      break;
    }
}

// Whether a condition on rank guards a communication call (a compute block alone may be split by timing noise
// of the traced runs, which says nothing of the program's structure).
bool condition_guards_communication(const nlohmann::json& body, bool guarded = false) {
  for (const auto& blk : body) {
    const std::string op = blk.value("op", "");
    if (guarded && op != "compute" && op != "if" && op != "loop" && op != "region") return true;
    const bool g = guarded || blk.contains("cond");
    for (const char* arm : {"body", "then", "else"})
      if (blk.contains(arm) && condition_guards_communication(blk[arm], g)) return true;
  }
  return false;
}

std::string all_peers(const nlohmann::json& body) {
  std::string out;
  for (const auto& blk : body) {
    if (blk.contains("peer") && blk["peer"].is_string()) out += blk["peer"].get<std::string>() + "\n";
    for (const char* arm : {"body", "then", "else"})
      if (blk.contains(arm)) out += all_peers(blk[arm]);
  }
  return out;
}

// Periodic 2-D grid, its rows and columns, a split with keys, a dup: declared with exact expressions, every op
// on its communicator, the 4 neighbours as cart_rank of wrapped coordinates; exact at P = 32 (an 8 x 4 grid,
// never traced: the training grids are 2 x 2, 4 x 2, 4 x 4).
TEST(TopologyBuild, PeriodicGridCartSubSplitDupExactAtUntracedP) {
  std::vector<mksim::trace::Run> runs{topo("grid", 4, 2), topo("grid", 4, 3), topo("grid", 8, 2), topo("grid", 16, 2)};
  const auto held = topo("grid", 32, 2);
  const auto r = b::build_skeleton(runs);
  const std::string text = r.skeleton.dump(2);
  EXPECT_EQ(r.skeleton["version"], 3);
  const auto& comms = r.skeleton["comms"];
  ASSERT_EQ(comms.size(), 5u) << text;
  EXPECT_EQ(comms["c01_cart"]["cart"], "world");
  EXPECT_EQ(comms["c01_cart"]["periods"], nlohmann::json::array({true, true}));
  EXPECT_EQ(r.skeleton["let"]["c01_cart_n0"], "dims(P, 2, 0)");
  EXPECT_EQ(r.skeleton["let"]["c01_cart_n1"], "dims(P, 2, 1)");
  EXPECT_EQ(comms["c02_sub"]["remain"], nlohmann::json::array({false, true}));
  EXPECT_EQ(comms["c03_sub"]["remain"], nlohmann::json::array({true, false}));
  EXPECT_EQ(comms["c04_split"]["color"], "rank % 2");
  EXPECT_TRUE(comms["c04_split"].contains("key")) << "the reversed key orders the group otherwise than world";
  EXPECT_EQ(comms["c05_dup"]["dup"], "world");
  const std::string peers = all_peers(r.skeleton["body"]);
  EXPECT_NE(peers.find("cart_rank((c01_cart_x0 + 1) % c01_cart_n0, c01_cart_x1, 0"), std::string::npos) << peers;
  EXPECT_NE(peers.find("cart_rank(c01_cart_x0, (c01_cart_x1 - 1) % c01_cart_n1, 0"), std::string::npos) << peers;
  EXPECT_NE(peers.find("c04_split.rank"), std::string::npos) << peers;
  EXPECT_EQ(text.find("rank^"), std::string::npos) << "no polynomial of rank";
  expect_exact(mksim::skeletons::parse_skeleton(text, "grid.json"), held, {{"steps", 2}, {"bytes", 64}}, text);
}

// A master and its workers (tests/topo_app.c "fan"): rank 0's loops over the workers (`for w < P: MPI_Send(w)`)
// are one loop of P - 1 sends whose peer steps with its index (fold.hpp index_call_runs), not one place per worker
// guarded by conditions on P; each worker's count of results is its round-robin share of the tasks,
// floor((tasks - rank + P - 1) / (P - 1)), not a value per traced run. Exact at P = 9, never traced.
TEST(TopologyBuild, MasterLoopsOverWorkersAndRoundRobinSharesExactAtUntracedP) {
  std::vector<mksim::trace::Run> runs{topo("fan", 3, 13), topo("fan", 4, 13), topo("fan", 6, 13), topo("fan", 4, 20), topo("fan", 6, 20)};
  const auto held = topo("fan", 9, 20);
  const auto r = b::build_skeleton(runs);
  const std::string text = r.skeleton.dump(2);
  EXPECT_NE(text.find("\"peer\": \"1 + k"), std::string::npos) << text;
  EXPECT_NE(text.find("floor((steps + P-1 - rank) / (P-1))"), std::string::npos) << text;
  EXPECT_EQ(text.find("no_exact_expression"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"peer\": \"4\""), std::string::npos) << "no send to a fixed worker beyond the smallest run's\n" << text;
  expect_exact(mksim::skeletons::parse_skeleton(text, "fan.json"), held, {{"steps", 20}, {"bytes", 64}}, text);
}

// 3-D grid, not periodic: the 6 faces and an edge neighbour as cart_rank of shifted coordinates, PROC_NULL (-1
// from cart_rank) outside the grid; ranks on the faces have the same program as interior ones. Exact at P = 32
// (4 x 4 x 2), never traced.
TEST(TopologyBuild, NonPeriodicCubeWithProcNullExactAtUntracedP) {
  std::vector<mksim::trace::Run> runs{topo("cube", 4, 2), topo("cube", 4, 3), topo("cube", 8, 2), topo("cube", 16, 2)};
  const auto held = topo("cube", 32, 2);
  const auto r = b::build_skeleton(runs);
  const std::string text = r.skeleton.dump(2);
  EXPECT_EQ(r.skeleton["comms"]["c01_cart"]["periods"], nlohmann::json::array({false, false, false})) << text;
  EXPECT_EQ(r.skeleton["let"]["c01_cart_n2"], "dims(P, 3, 2)");
  const std::string peers = all_peers(r.skeleton["body"]);
  EXPECT_NE(peers.find("cart_rank(c01_cart_x0 + 1, c01_cart_x1 + 1, c01_cart_x2, c01_cart_n0, c01_cart_n1, c01_cart_n2)"),
            std::string::npos) << peers;
  EXPECT_NE(peers.find("cart_rank(c01_cart_x0, c01_cart_x1, c01_cart_x2 - 1,"), std::string::npos) << peers;
  EXPECT_FALSE(condition_guards_communication(r.skeleton["body"])) << "one communication program for every rank\n" << text;
  expect_exact(mksim::skeletons::parse_skeleton(text, "cube.json"), held, {{"steps", 2}, {"bytes", 64}}, text);
}

// A periodic 3-D grid with MG's comm3 (tests/topo_app.c "torus"): each axis a Sendrecv to the high neighbour from
// the low one, then one to the low neighbour from the high one. Traced at P = 4, 8, 16, where the second and third
// sides are 1 or 2 ranks long and +1 and -1 give the same rank: the receive half is the opposite of its send half
// and the second Sendrecv sends the other way (Topology::Shift); the faces with ghosts are
// 8 (N/d0 + 2)(N/d2) and 8 (N/d0 + 2)(N/d1 + 2) bytes (decomposition_fit). Exact at P = 27 (3 x 3 x 3) with N = 48,
// neither traced.
TEST(TopologyBuild, PeriodicShiftsAndGhostedFacesExactAtUntracedP) {
  auto torus = [](int P, int N) {
    return trace(TOPO_APP, "torus 2 " + std::to_string(N), P, 2, N, " --param steps=2 --param N=" + std::to_string(N));
  };
  std::vector<mksim::trace::Run> runs{torus(2, 32), torus(4, 32), torus(8, 32), torus(16, 32), torus(8, 64)};
  const auto held = torus(27, 48);
  const auto r = b::build_skeleton(runs);
  const std::string text = r.skeleton.dump(2);
  EXPECT_NE(text.find("8*(N/dims(P, 3, 0) + 2)*(N/dims(P, 3, 1) + 2)"), std::string::npos) << text;
  expect_exact(mksim::skeletons::parse_skeleton(text, "torus.json"), held, {{"steps", 2}, {"N", 48}}, text);
}

// LAMMPS' exchange (tests/topo_app.c "swaps"): along each axis with more than one rank an MPI_Irecv from the high
// neighbour and an MPI_Send to the low one, then the other way, on a grid whose sides are MPI_Dims_create's in
// reverse (1 x 1 x 2 at P = 2, 1 x 2 x 2 at P = 4). Traced at P = 2, 4, 8, where every side is 1 or 2 ranks long:
// - the exchanges are aligned by the axis of their peer (Topology::cart_axis), not by occurrence, which made P = 4's
//   first exchange (along y) P = 8's first (along x) and wrote peers no grid gives;
// - the axes that only some runs have are guarded by "the grid extends along it" (dims(P, 3, 2) > 1, the first
//   side), not by a 2-D side comparison that happens to agree at P = 2, 4, 8;
// - where +1 and -1 are one rank, the send goes against the receive it pairs with, and the second exchange along an
//   axis the other way (Topology::Shift::pairs_send, pairs_recv), so messages pair at every P.
// Exact at P = 27 (3 x 3 x 3), never traced.
TEST(TopologyBuild, ExchangesAlongAxesOfSeveralRanksAlignByAxisAndPairAtUntracedP) {
  std::vector<mksim::trace::Run> runs{topo("swaps", 2, 2), topo("swaps", 4, 2), topo("swaps", 8, 2), topo("swaps", 8, 3)};
  const auto held = topo("swaps", 27, 2);
  const auto r = b::build_skeleton(runs);
  const std::string text = r.skeleton.dump(2);
  EXPECT_NE(text.find("\"cond\": \"dims(P, 3, 2) > 1\""), std::string::npos) << text;
  EXPECT_EQ(text.find("no_exact_expression"), std::string::npos) << text;
  expect_exact(mksim::skeletons::parse_skeleton(text, "swaps.json"), held, {{"steps", 2}, {"bytes", 64}}, text);
}

// The same exchange traced at P = 4 and 8 only: the grids 1 x 2 x 2 and 2 x 2 x 2 are MPI_Dims_create's sides in
// two orders (reversed, or its third side first and then its first two). The reversed order is preferred, as LAMMPS
// builds its grid (the first of least surface, sides ascending): 2 x 2 x 4 at P = 16, where the other order gives
// 2 x 4 x 2 and other peers. Exact at P = 16, never traced.
TEST(TopologyBuild, GridsThatTwoOrdersOfDimsCreateGiveTakeTheReverseOrderExactAtUntracedP) {
  std::vector<mksim::trace::Run> runs{topo("swaps", 4, 2), topo("swaps", 8, 2), topo("swaps", 8, 3)};
  const auto held = topo("swaps", 16, 2);
  const auto r = b::build_skeleton(runs);
  const std::string text = r.skeleton.dump(2);
  EXPECT_EQ(r.skeleton["let"]["c01_cart_n0"], "dims(P, 3, 2)") << text;
  EXPECT_EQ(r.skeleton["let"]["c01_cart_n1"], "dims(P, 3, 1)") << text;
  EXPECT_EQ(r.skeleton["let"]["c01_cart_n2"], "dims(P, 3, 0)") << text;
  expect_exact(mksim::skeletons::parse_skeleton(text, "swaps48.json"), held, {{"steps", 2}, {"bytes", 64}}, text);
}

// SUMMA's broadcast roots are the owner of panel k, (k nb) / (N / pc) on the row and (k nb) / (N / pr) on the
// column: they change with the loop's iteration. Exact folding makes one loop per owner (as many as the grid
// has columns, so the traced runs disagree); index_loops makes them one loop over the N / nb panels whose roots
// are step functions of its index, and the skeleton is exact rank by rank at P = 32 (8 x 4), never traced.
// Without index_loops, the integer guard: the roots, which no expression of rank and P gives, are written per
// traced run (no fitted polynomial), so the skeleton replays the traced runs exactly and refuses P = 32 naming
// `no_exact_expression`; a warning and an ambiguity name the root, the call and the runs that would decide.
TEST(TopologyBuild, SummaRootsAreStepFunctionsOfThePanelIndexExactAtUntracedP) {
  auto summa = [](int P, int reps) {
    return trace(SUMMA, "128 8 " + std::to_string(reps), P, reps, 128,
                 " --param N=128 --param nb=8 --param reps=" + std::to_string(reps));
  };
  std::vector<mksim::trace::Run> runs{summa(4, 2), summa(4, 3), summa(8, 2), summa(16, 2)};
  const auto held = summa(32, 2);
  const std::map<std::string, double> params{{"N", 128}, {"nb", 8}, {"reps", 2}};
  const auto r = b::build_skeleton(runs);
  const std::string text = r.skeleton.dump(2);
  EXPECT_EQ(text.find("no_exact_expression"), std::string::npos) << text;
  EXPECT_NE(text.find("\"var\": \"k"), std::string::npos) << text;
  // the row and column owners, floor(k1 / (panels per owner)): N = 128 in every run, so the panels per owner
  // are expressions of P alone (16/2^floor(log2(P)/2) = N / (nb * dims(P, 2, 1)) here)
  std::size_t owners = 0;
  for (std::size_t at = text.find("\"root\": \"floor(k1 / ("); at != std::string::npos; at = text.find("\"root\": \"floor(k1 / (", at + 1))
    ++owners;
  EXPECT_EQ(owners, 2u) << text;
  expect_exact(mksim::skeletons::parse_skeleton(text, "summa.json"), held, params, text);

  b::BuildOptions off;
  off.fold.index_loops = false;
  const auto g = b::build_skeleton(runs, off);
  const std::string gtext = g.skeleton.dump(2);
  EXPECT_EQ(gtext.find("rank^"), std::string::npos);
  bool warned = false;
  for (const auto& w : g.warnings) warned = warned || (w.find("/root: no exact expression of rank, P and the parameters") != std::string::npos &&
                                                        w.find("P = 32 and 64 would show") != std::string::npos);
  EXPECT_TRUE(warned) << gtext;
  EXPECT_FALSE(g.ambiguities.empty());
  const auto sk = mksim::skeletons::parse_skeleton(gtext, "summa.json");
  expect_exact(sk, runs[3], params, gtext);
  try {
    b::expanded_ops(sk, 32, params, 1);
    ADD_FAILURE() << "expanded at P = 32";
  } catch (const mksim::skeletons::SkeletonError& e) {
    EXPECT_NE(std::string(e.what()).find("no_exact_expression"), std::string::npos) << e.what();
  }
}

// A KBA wavefront over 8 octants (the corpus' sweep3d: a 2-D grid whose side is the largest divisor of P up to
// sqrt(P), each octant a pipeline over k-blocks that receives from the upstream i and j neighbours and sends
// downstream, ranks on an edge skipping a receive or a send). Each octant runs the same four calls towards other
// neighbours, so a corner's loop of one octant has the call keys of another octant's loop inside the grid, and
// ranks inside the grid merged two opposite octants into one indexed loop: the octants aligned shifted, and peers
// (rank + 1 and rank - 1 in one call) and counts were written per traced run, refused at P = 32. Built from
// P = 4, 8, 16, every rank is exact at P = 32 (4 x 8), never traced.
TEST(TopologyBuild, Sweep3dOctantSweepsAlignExactAtUntracedP) {
  auto sweep = [](int P, int iters) {
    return trace(SWEEP3D, "16 4 " + std::to_string(iters), P, iters, 16,
                 " --param N=16 --param mk=4 --param iters=" + std::to_string(iters));
  };
  std::vector<mksim::trace::Run> runs{sweep(4, 2), sweep(4, 3), sweep(8, 2), sweep(16, 2)};
  const auto held = sweep(32, 2);
  const auto r = b::build_skeleton(runs);
  const std::string text = r.skeleton.dump(2);
  EXPECT_EQ(text.find("no_exact_expression"), std::string::npos) << text;
  EXPECT_TRUE(r.matching.empty()) << text;
  // the four sweeps of a k direction, one loop of 2 N / mk = 8 blocks each (the k directions alike: a loop of 2
  // around them)
  std::size_t sweeps = 0;
  for (std::size_t at = text.find("\"count\": \"8\""); at != std::string::npos; at = text.find("\"count\": \"8\"", at + 1))
    ++sweeps;
  EXPECT_EQ(sweeps, 4u) << text;
  expect_exact(mksim::skeletons::parse_skeleton(text, "sweep3d.json"), held, {{"N", 16}, {"mk", 4}, {"iters", 2}}, text);
}

// The corpus' NPB MG-like V-cycle (skeletons/apps/corpus/mg.c), traced with mktrace at P = 4, 8, 16 and N = 32, 64:
// the restriction loop sends each level's faces, a grid half as fine per level (NPB's m1*m2, (m0 + 2)*m2, (m0 + 2)*
// (m1 + 2) values of 8 bytes), and the prolongation loop the same levels back up. The iterations of each loop differ
// only in sizes, which folded as statistics: each call had its mean over the levels, wrong at every level and off
// from the first level of the first V-cycle at P = 32. Now each call's size is the finest level's face with N taken at
// the loop's level (Builder::level_size): N/2^(k + 1) down, N/2^(count - 1 - k) up. Against real traces at P = 32
// and 64 (dims 4 x 4 x 2 and 4 x 4 x 4, never traced), every operation of every rank is exact, the coarsest level's
// halo too (one comm3 per V-cycle after the restriction loop, 12 sized halves): its faces are functions of P alone
// that the traced P do not tell apart (32*dims(P, 3, 0)^3/P along x), so they are the loop's own faces at its last
// level (Builder::after_levels).
TEST(TopologyBuild, MultigridLevelSizesExactAtUntracedP) {
  auto mg = [](int P, int N) {
    return trace(MG, std::to_string(N) + " 2", P, 2, N, " --param N=" + std::to_string(N) + " --param iters=2");
  };
  std::vector<mksim::trace::Run> runs{mg(4, 32), mg(4, 64), mg(8, 32), mg(8, 64), mg(16, 32), mg(16, 64)};
  const auto r = b::build_skeleton(runs);
  const std::string text = r.skeleton.dump(2);
  EXPECT_NE(text.find("levels, coarsening"), std::string::npos) << text;
  EXPECT_NE(text.find("levels, refining"), std::string::npos) << text;
  // the coarsest level's smoothing, after the restriction loop: the loop's faces at its last level
  EXPECT_NE(text.find("level after the loop, its last"), std::string::npos) << text;
  const auto sk = mksim::skeletons::parse_skeleton(text, "mg.json");
  for (const int P : {32, 64}) {
    const auto held = mg(P, 64);
    const auto rep = b::compare_with_trace(sk, held, {{"N", 64}, {"iters", 2}});
    ASSERT_EQ(rep.ranks.size(), static_cast<std::size_t>(P));
    for (const auto& rc : rep.ranks) {
      ASSERT_TRUE(rc.error.empty()) << "P=" << P << " rank " << rc.rank << ": " << rc.error;
      // operation by operation (the communicator apart: compare_with_trace's first difference says it is the same)
      auto want = b::traced_ops(held.ranks[static_cast<std::size_t>(rc.rank)], {});
      auto got = b::expanded_ops(sk, P, {{"N", 64}, {"iters", 2}}, rc.rank);
      for (auto* ops : {&want, &got})
        for (b::CommOp& op : *ops) op.comm = 0;
      if (rc.first_difference && rc.skeleton_op && rc.trace_op) {
        EXPECT_EQ(rc.skeleton_op->comm, rc.trace_op->comm) << "P=" << P << " rank " << rc.rank;
      }
      ASSERT_EQ(got.size(), want.size()) << "P=" << P << " rank " << rc.rank;
      std::size_t differ = 0;
      std::string first;
      for (std::size_t i = 0; i < got.size(); ++i)
        if (!(got[i] == want[i])) {
          if (first.empty()) first = "operation " + std::to_string(i) + ": skeleton " + b::describe(got[i]) + ", trace " + b::describe(want[i]);
          ++differ;
        }
      // every operation exact: before the coarsest level's faces were taken from the loop (after_levels) its 12
      // faces per V-cycle, fitted as laws of P alone through P = 4, 8, 16, differed at every rank
      EXPECT_EQ(differ, 0u) << "P=" << P << " rank " << rc.rank << ", first at " << first;
    }
  }
}

TEST(TopologyBuild, DecompositionFormsAndDecimalCoefficients) {
  std::vector<b::Sample> s;
  for (double P : {4.0, 8.0, 16.0})
    for (double N : {32.0, 64.0}) {
      const double side = P == 8 ? 2 : std::sqrt(P);  // dims(P, 2, 1)
      s.push_back({{{"P", P}, {"N", N}}, 16 * N * N * N / (P * side), "run"});
    }
  EXPECT_EQ(b::decomposition_fit(s, {"N"}), "16*N^3/(P*dims(P, 2, 1))");
  // a face of a 3-D block, 8 (N / Py) (N / Pz) bytes on MPI_Dims_create(P, 3): at P = 4, 8, 16 it is also
  // 8 N^2 / dims(P, 2, 0); a program that made a 3-D grid gets the 3-D law, which differs at P = 64
  std::vector<b::Sample> face;
  for (double P : {4.0, 8.0, 16.0})
    for (double N : {32.0, 64.0}) {
      const double py = 2, pz = P == 4 ? 1 : 2;  // MPI_Dims_create(P, 3): 2x2x1, 2x2x2, 4x2x2
      face.push_back({{{"P", P}, {"N", N}}, 8 * (N / py) * (N / pz), "run"});
    }
  EXPECT_EQ(b::decomposition_fit(face, {"N"}), "8*N^2/dims(P, 2, 0)");
  const std::string law = b::decomposition_fit(face, {"N"}, {}, true);
  EXPECT_EQ(law, "8*N^2/(P/dims(P, 3, 0))");
  std::vector<std::string> names{"P", "N"};
  const b::Feature f(law, names, true);
  EXPECT_EQ(f.eval({{"P", 64}, {"N", 64}}), 8.0 * 16 * 16);  // 4x4x4: (64 / 4)^2 values of 8 bytes
  // a parameter's block over one side of the grid is written as ceil(N / side), an integer at every P (SUMMA's
  // panel 8 nb mx, mx = ceil(N / Px)), the largest parameter taken as the one divided
  std::vector<b::Sample> panel;
  for (double P : {2.0, 4.0, 8.0, 9.0})
    for (double N : {96.0, 192.0})
      for (double nb : {16.0, 32.0}) {
        const double px = P == 2 ? 2 : P == 8 ? 4 : std::sqrt(P);  // dims(P, 2, 0)
        panel.push_back({{{"P", P}, {"N", N}, {"nb", nb}}, 8 * nb * N / px, "run"});
      }
  EXPECT_EQ(b::decomposition_fit(panel, {"N", "nb"}), "8*nb*ceil(N / dims(P, 2, 0))");
  // a block owner's ratio nb / ceil(N / Py): the runs' ranges of ratios (0 0 1 2 2 3 at nb / my = 2/3) decide it
  std::vector<b::Vars> at;
  std::vector<std::pair<std::int64_t, std::int64_t>> truth;  // nb, my
  for (double P : {2.0, 4.0, 6.0, 8.0})
    for (double nb : {16.0, 32.0}) {
      const double py = P == 6 ? 2 : P == 8 ? 2 : P == 4 ? 2 : 1;  // dims(P, 2, 1)
      at.push_back({{"P", P}, {"N", 96}, {"nb", nb}});
      truth.emplace_back(static_cast<std::int64_t>(nb), static_cast<std::int64_t>(std::ceil(96 / py)));
    }
  const auto [num, den] = b::block_ratio_fit(at, {"N", "nb"}, [&](std::size_t i, std::int64_t n, std::int64_t d) {
    std::vector<std::int64_t> owners;
    for (std::int64_t k = 0; k < 96 / truth[i].first; ++k) owners.push_back(k * truth[i].first / truth[i].second);
    if (owners.back() == owners.front()) return true;  // one owner (Py = 1): any ratio below 1 / panels
    const auto r = b::ratio_form(owners);
    return r && r->contains(n, d);
  });
  EXPECT_EQ(num, "nb");
  EXPECT_EQ(den, "ceil(N / dims(P, 2, 1))");
  // faces with ghost layers (NPB MG's comm3): along y 8 (N/Px + 2)(N/Pz), along z 8 (N/Px + 2)(N/Py + 2), on
  // MPI_Dims_create(P, 3); traced at P = 2, 4, 8, 16 and checked at 32 and 64, where the sides are new
  auto dims3 = [](int P) {
    return P == 2 ? std::array{2, 1, 1} : P == 4 ? std::array{2, 2, 1} : P == 8 ? std::array{2, 2, 2} : P == 16 ? std::array{4, 2, 2}
           : P == 32 ? std::array{4, 4, 2} : std::array{4, 4, 4};
  };
  std::vector<b::Sample> ghost_y, ghost_z;
  for (int P : {2, 4, 8, 16})
    for (double N : {32.0, 64.0}) {
      const auto d = dims3(P);
      ghost_y.push_back({{{"P", P}, {"N", N}}, 8 * (N / d[0] + 2) * (N / d[2]), "run"});
      ghost_z.push_back({{{"P", P}, {"N", N}}, 8 * (N / d[0] + 2) * (N / d[1] + 2), "run"});
    }
  const std::string gy = b::decomposition_fit(ghost_y, {"N"}, {}, true), gz = b::decomposition_fit(ghost_z, {"N"}, {}, true);
  EXPECT_EQ(gy, "8*(N/dims(P, 3, 0) + 2)*(N/dims(P, 3, 2))");
  EXPECT_EQ(gz, "8*(N/dims(P, 3, 0) + 2)*(N/dims(P, 3, 1) + 2)");
  for (int P : {32, 64}) {
    const auto d = dims3(P);
    EXPECT_EQ(b::Feature(gy, names, true).eval({{"P", P}, {"N", 64}}), 8 * (64 / d[0] + 2) * (64 / d[2])) << P;
    EXPECT_EQ(b::Feature(gz, names, true).eval({{"P", P}, {"N", 64}}), 8 * (64 / d[0] + 2) * (64 / d[1] + 2)) << P;
  }
  // a 2-D halo row with its two corner ghosts: 8 (N/Px + 2)
  std::vector<b::Sample> row;
  for (double P : {4.0, 8.0, 16.0})
    for (double N : {32.0, 64.0}) row.push_back({{{"P", P}, {"N", N}}, 8 * (N / (P == 8 ? 4 : std::sqrt(P)) + 2), "run"});
  EXPECT_EQ(b::decomposition_fit(row, {"N"}), "8*(N/dims(P, 2, 0) + 2)");
  EXPECT_TRUE(b::has_decimal_literal("17.4852 - 16.48*log2(P)"));
  EXPECT_FALSE(b::has_decimal_literal("c01_cart.rank + 1"));
}

// Peers of programs that number ranks on a grid they compute themselves (no topology call traced): NPB CG's
// transpose partner on its npcols x nprows grid (npcols = 2^ceil(k/2) = dims(P, 2, 0) varying fastest), and
// a 3-D neighbour on MPI_Dims_create(P, 3)'s grid; both must hold at a P never sampled. A peer set no grid
// explains is "" (written per traced run by the builder).
TEST(TopologyBuild, GridPeersWithoutTopologyCalls) {
  auto dims2 = [](int P) { return P == 4 ? std::pair{2, 2} : P == 8 ? std::pair{4, 2} : P == 16 ? std::pair{4, 4} : std::pair{8, 4}; };
  auto partner = [&](int P, int rank) {
    const auto [npcols, nprows] = dims2(P);
    const int r = rank / npcols, c = rank % npcols, ratio = npcols / nprows;
    return (c / ratio) * npcols + ratio * r + c % ratio;
  };
  std::vector<b::Sample> s;
  for (int P : {4, 8, 16})
    for (int rank = 0; rank < P; ++rank)
      if (partner(P, rank) != rank) s.push_back({{{"P", P}, {"rank", rank}, {"N", 64}}, static_cast<double>(partner(P, rank)), "run"});
  const std::string cg = b::grid_rank_fit(s, {"N"});
  ASSERT_FALSE(cg.empty());
  EXPECT_NE(cg.find("dims(P, 2, 0)"), std::string::npos) << cg;
  const b::Feature f(cg, {"P", "rank", "N"}, true);
  for (int rank = 0; rank < 32; ++rank)
    EXPECT_EQ(f.eval({{"P", 32}, {"rank", rank}, {"N", 64}}), partner(32, rank)) << cg << " rank " << rank;

  // the neighbour at offset (+1, 0, -1) on MPI_Dims_create(P, 3): 12 = 3 x 2 x 2, 18 = 3 x 3 x 2
  std::vector<b::Sample> n3;
  for (const auto& [P, d] : std::vector<std::pair<int, std::vector<int>>>{{12, {3, 2, 2}}, {18, {3, 3, 2}}})
    for (int rank = 0; rank < P; ++rank) {
      const int c0 = rank / (d[1] * d[2]), c1 = rank / d[2] % d[1], c2 = rank % d[2];
      if (c0 + 1 < d[0] && c2 > 0) n3.push_back({{{"P", P}, {"rank", rank}}, static_cast<double>((c0 + 1) * d[1] * d[2] + c1 * d[2] + c2 - 1), "run"});
    }
  // at 12 and 18 this neighbour is also rank + dims(P, 2, 0) - 1 (4 x 3, 6 x 3): reported, not hidden
  std::string other;
  const std::string flat = b::grid_rank_fit(n3, {}, &other);
  EXPECT_EQ(flat, "rank + dims(P, 2, 0) - 1");
  EXPECT_FALSE(other.empty());  // the first later form that differs somewhere (here rank + Px + 1)
  EXPECT_NE(other, flat);
  // a run at 48 = 4 x 4 x 3 (dims(48, 2) = 8 x 6) decides for the 3-D grid
  for (int rank = 0; rank < 48; ++rank) {
    const int c0 = rank / 12, c1 = rank / 3 % 4, c2 = rank % 3;
    if (c0 + 1 < 4 && c2 > 0) n3.push_back({{{"P", 48}, {"rank", rank}}, static_cast<double>((c0 + 1) * 12 + c1 * 3 + c2 - 1), "run"});
  }
  const std::string cube = b::grid_rank_fit(n3, {});
  EXPECT_NE(cube.find("cart_rank(cart_coord(rank, 0, dims(P, 3, 0), dims(P, 3, 1), dims(P, 3, 2)) + 1"), std::string::npos) << cube;
  const b::Feature g(cube, {"P", "rank"}, true);
  EXPECT_EQ(g.eval({{"P", 64}, {"rank", 1}}), 16 + 0);  // 4 x 4 x 4: (0, 0, 1) -> (1, 0, 0)

  std::vector<b::Sample> scattered;
  for (int rank = 0; rank < 8; ++rank) scattered.push_back({{{"P", 8}, {"rank", rank}}, static_cast<double>((rank * 5 + 3) % 8), "run"});
  EXPECT_EQ(b::grid_rank_fit(scattered, {}), "");
}

}  // namespace

// A message to a Cartesian neighbour whose size is a mean over iterations (atoms crossing a face): the face of the
// block along the neighbour's axis, c L^2 side / P (+ e), from the runs of one P alone scales to every P, where a
// regression of those runs has no P in it. The closed forms below are exact at P = 16 and 1,024, not traced.
TEST(TopologyBuild, FaceOfTheBlockAlongAnAxisScalesFromOneP) {
  const std::vector<std::pair<std::string, std::string>> lets{
      {"g_n0", "dims(P, 3, 2)"}, {"g_n1", "dims(P, 3, 1)"}, {"g_n2", "dims(P, 3, 0)"}};
  const auto [side, d] = b::cart_neighbour_side("cart_rank(g_x0, (g_x1 + 1) % g_n1, g_x2, g_n0, g_n1, g_n2)", lets);
  EXPECT_EQ(side, "dims(P, 3, 1)");
  EXPECT_EQ(d, 3);
  EXPECT_EQ(b::cart_neighbour_side("cart_rank((g_x0 - 1) % g_n0, (g_x1 + 1) % g_n1, g_x2, g_n0, g_n1, g_n2)", lets).second, 0)
      << "an edge neighbour is no face";
  EXPECT_EQ(b::cart_neighbour_side("(rank + 1) % P", lets).second, 0);

  // sizes 41 L^2 side_y / P + 1500 and 7 L^2 side_y / P, seen at P = 8 only (2 x 2 x 2), L = 8 and 12
  const b::Feature side_y("dims(P, 3, 1)", {"P", "L"}, true);
  for (const double e : {1500.0, 0.0}) {
    std::vector<b::Sample> smp;
    for (const double L : {8.0, 12.0}) {
      const b::Vars v{{"P", 8}, {"L", L}};
      smp.push_back({v, (e > 0 ? 41 : 7) * L * L * side_y.eval(v) / 8 + e, "P=8 L=" + std::to_string(L)});
    }
    const auto ff = b::face_fit(smp, {"L"}, side, d);
    ASSERT_TRUE(ff.has_value());
    EXPECT_LT(ff->max_rel_error, 1e-9) << ff->expr;
    const b::Feature model(ff->expr, {"P", "L"}, false);
    for (const double P : {16.0, 1024.0}) {
      const b::Vars v{{"P", P}, {"L", 12}};
      const double want = (e > 0 ? 41 : 7) * 144 * side_y.eval(v) / P + e;
      EXPECT_NEAR(model.eval(v), want, 1e-6 * want) << ff->expr << " at P = " << P;
    }
  }
}
