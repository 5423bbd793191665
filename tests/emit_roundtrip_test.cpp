// The strict round trip of issue 18: a skeleton, emitted as a C program (mkskel emit), compiled with mpicc, traced
// with mktrace (OpenMPI) at a few P <= 8 and parameter values, rebuilt by the builder and compared with the original
// by the comparator (skeletons/builder/skeldiff.hpp, `mkskel diff`): at every traced run, and at P and parameter
// values never traced. Each test case traces its program once (runs ~1 s each); bench/emit_roundtrip.py runs every
// example at more P. What each case asserts, and why where the rebuilt skeleton differs, is written at the case.
#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/skeldiff.hpp"
#include "skeletons/emit.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"
#include "tests/process_util.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace fs = std::filesystem;
namespace sk = mksim::skeletons;
namespace b = mksim::skeletons::builder;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;
const std::string BIN = MKSIM_BINARY_DIR;
constexpr double FLOPS_RATE = 1e8;  // the programs' spin rate: compute in flops becomes flops / 1e8 CPU seconds

fs::path workdir() {
  const fs::path p = fs::temp_directory_path() / ("mksim_emit_roundtrip_" + std::to_string(::getpid()));
  fs::create_directories(p);
  return p;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    if (!std::getenv("MKSIM_KEEP")) fs::remove_all(workdir(), ec);
  }
} cleanup;

using Point = std::map<std::string, double>;

struct RoundTrip {
  sk::Skeleton original, rebuilt;
  std::vector<std::string> ambiguities;  // the builder's, as written
  std::vector<std::pair<int, Point>> runs;
};

std::string point_text(const Point& pt) {
  std::string s;
  for (const auto& [k, v] : pt) s += " " + k + "=" + std::to_string(static_cast<long long>(v));
  return s;
}

// Emits, compiles and traces `skeleton` at each run (P, parameters), and builds a skeleton from the traces.
RoundTrip round_trip(const std::string& skeleton, const std::string& name, const std::vector<std::pair<int, Point>>& runs) {
  RoundTrip rt{sk::load_skeleton(skeleton), {}, {}, runs};
  const fs::path c = workdir() / (name + ".c"), exe = workdir() / name;
  std::ofstream(c) << sk::emit_c(rt.original);
  auto [rc, out] = mksim::test::shell("mpicc -std=c11 -Wall -Werror -O2 -o " + exe.string() + " " + c.string() + " -lm 2>&1");
  EXPECT_EQ(rc, 0) << out;
  std::vector<mksim::trace::Run> traced;
  for (const auto& [P, pt] : runs) {
    const fs::path dir = workdir() / ("t-" + name + "-" + std::to_string(P) + "-" + std::to_string(traced.size()));
    std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + BIN + "/trace/mktrace -np " + std::to_string(P);
    std::string args;
    for (const auto& [k, v] : pt) {
      cmd += " --param " + k + "=" + std::to_string(static_cast<long long>(v));
      args += " " + k + "=" + std::to_string(static_cast<long long>(v));
    }
    // CPU time of compute gaps at every P (the emitted spin counts CPU time); waiting ranks yield their core
    std::tie(rc, out) = mksim::test::shell("MKTRACE_CPU_TIME=1 OMPI_MCA_mpi_yield_when_idle=1 " + cmd + " -o " + dir.string() + " -- " + exe.string() + " --flops-rate=1e8" + args + " 2>&1");
    EXPECT_EQ(rc, 0) << out;
    if (rc != 0) return rt;
    traced.push_back(mksim::trace::read_run(dir.string(), {.require_complete = true}));
  }
  const b::BuildResult built = b::build_skeleton(traced);
  rt.ambiguities = built.ambiguities;
  EXPECT_TRUE(built.matching.empty()) << name << ": " << built.matching.front();
  const std::string text = built.skeleton.dump(1);
  std::ofstream(workdir() / (name + ".rebuilt.json")) << text;
  rt.rebuilt = sk::parse_skeleton(text, name + ".rebuilt.json");
  return rt;
}

b::DiffOptions at(std::vector<int> P, std::vector<Point> points) {
  b::DiffOptions o;
  o.P = std::move(P);
  o.points = std::move(points);
  o.flops_rate = FLOPS_RATE;
  o.max_differences = 100;
  return o;
}

// P never traced (and traced), parameter points never traced; compute is checked at the traced runs only (the
// builder's fits of a few microseconds of call overhead do not extrapolate to P = 64).
b::DiffOptions untraced(std::vector<Point> points) {
  b::DiffOptions o = at({2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 32, 64}, std::move(points));
  o.compute_rel = -1;
  return o;
}

// Every traced run: the same operations (kind, peer, tag, bytes, root, communicator) on every rank, and each rank's
// compute within the comparator's tolerance (50% + 1 ms: measured CPU time of a spin, beside other jobs).
void exact_where_traced(const RoundTrip& rt) {
  for (const auto& [P, pt] : rt.runs) {
    b::DiffOptions o = at({P}, {pt});
    o.structure = false;
    const b::DiffReport r = b::diff_skeletons(rt.original, rt.rebuilt, o);
    EXPECT_TRUE(r.same()) << "traced run P=" << P << point_text(pt) << ":\n" << b::format_diff(r);
    EXPECT_EQ(r.ranks, static_cast<std::size_t>(P));
  }
}

}  // namespace

// PGE1's two pipelines (a chain through all ranks, blocks of K systems): the rebuilt skeleton is the original, strictly
// (structure, and every operation at P = 2..9, 12, 16, 17, 32, 64 and at M, K never traced), compute within the
// tolerance at every traced run.
TEST(EmitRoundTrip, Pge1IsStrictlyTheSame) {
  const RoundTrip rt = round_trip(SRC + "/skeletons/examples/pge1.json", "pge1",
                                  {{2, {{"N", 64}, {"M", 8}, {"K", 2}}}, {4, {{"N", 64}, {"M", 8}, {"K", 2}}}, {8, {{"N", 64}, {"M", 8}, {"K", 2}}},
                                   {4, {{"N", 64}, {"M", 16}, {"K", 2}}}, {4, {{"N", 64}, {"M", 8}, {"K", 4}}}});
  exact_where_traced(rt);
  const b::DiffReport r = b::diff_skeletons(rt.original, rt.rebuilt, untraced({{{"N", 64}, {"M", 32}, {"K", 2}}, {{"N", 64}, {"M", 12}, {"K", 4}}}));
  EXPECT_TRUE(r.same()) << b::format_diff(r);
  EXPECT_EQ(r.points, 26u);  // 13 P x 2 parameter points, none skipped
  EXPECT_GT(r.operations, 10000u);
}

// ATM1D's red/black exchange, written with nested conditions (colour, then neighbour) and a waitall per exchange;
// traced at P = 2, 3, 4, 8 (P = 3 tells `rank % 2` from the grid predicate `rank % 2^floor(log2(P)/2)`, which agree
// at every even P below 16). The builder writes conditions flat (one conjunction per exchange, no else), so the
// structure differs there, and only there: with conditions dissolved the two are the same, and every operation of
// every rank agrees at P and N never traced. Before the emitted program stored its block after each MPI call, -O2
// merged the waitalls ending the two colours into one call site, and the rebuilt skeleton had one shared waitall
// whose condition was wrong at P = 5.
TEST(EmitRoundTrip, Atm1dSameWithConditionsFlattened) {
  const RoundTrip rt = round_trip(SRC + "/skeletons/examples/atm1d.json", "atm1d",
                                  {{2, {{"N", 64}, {"steps", 2}}}, {3, {{"N", 64}, {"steps", 2}}}, {4, {{"N", 64}, {"steps", 2}}},
                                   {8, {{"N", 64}, {"steps", 2}}}, {4, {{"N", 128}, {"steps", 2}}}, {4, {{"N", 64}, {"steps", 3}}}});
  exact_where_traced(rt);
  b::DiffOptions o = untraced({{{"N", 64}, {"steps", 2}}, {{"N", 256}, {"steps", 5}}});
  const b::DiffReport strict = b::diff_skeletons(rt.original, rt.rebuilt, o);
  ASSERT_EQ(strict.differences.size(), 1u) << b::format_diff(strict);
  EXPECT_EQ(strict.differences[0].kind, "structure");
  EXPECT_EQ(strict.differences[0].path_a, "/body/0/body/0/then/0");  // `if rank > 0` inside `if red`
  EXPECT_NE(strict.differences[0].detail.find("A has if, B has isend"), std::string::npos) << strict.differences[0].detail;
  o.flatten_conditions = true;
  const b::DiffReport flat = b::diff_skeletons(rt.original, rt.rebuilt, o);
  EXPECT_TRUE(flat.same()) << b::format_diff(flat);
}

// CG: halo exchanges under nested conditions, named requests, reductions: the same with conditions flattened.
TEST(EmitRoundTrip, CgSameWithConditionsFlattened) {
  const RoundTrip rt = round_trip(SRC + "/skeletons/examples/cg.json", "cg",
                                  {{2, {{"N", 1024}, {"iters", 2}}}, {4, {{"N", 1024}, {"iters", 2}}}, {8, {{"N", 1024}, {"iters", 2}}},
                                   {4, {{"N", 4096}, {"iters", 2}}}, {4, {{"N", 1024}, {"iters", 3}}}});
  exact_where_traced(rt);
  b::DiffOptions o = untraced({{{"N", 1024}, {"iters", 2}}, {{"N", 16384}, {"iters", 5}}});
  const b::DiffReport strict = b::diff_skeletons(rt.original, rt.rebuilt, o);
  ASSERT_EQ(strict.differences.size(), 1u) << b::format_diff(strict);
  EXPECT_EQ(strict.differences[0].kind, "structure");
  EXPECT_EQ(strict.differences[0].path_a, "/body/0/then/0");
  o.flatten_conditions = true;
  const b::DiffReport flat = b::diff_skeletons(rt.original, rt.rebuilt, o);
  EXPECT_TRUE(flat.same()) << b::format_diff(flat);
}

// SUMMA: panel k's broadcasts come from its owners, min(floor(k nb / my), Py - 1) on the row and the same with mx
// down the column (Cart_sub communicators). At P = 8 with N = 96, nb = 16 the column owners step unevenly (0 0 1 2 2
// 3: nb / mx = 2/3), neither a step function nor a cycle: the builder reads them as a block owner's (ratio_form) and
// writes floor(k1*nb / ceil(N / dims(P, 2, 0))), the sizes 8*nb*ceil(N / side). Strictly the same, also at P and N
// where N does not divide (P = 5, 7, 17).
TEST(EmitRoundTrip, SummaIsStrictlyTheSame) {
  const RoundTrip rt = round_trip(SRC + "/skeletons/examples/summa.json", "summa",
                                  {{2, {{"N", 96}, {"nb", 16}}}, {4, {{"N", 96}, {"nb", 16}}}, {6, {{"N", 96}, {"nb", 16}}},
                                   {8, {{"N", 96}, {"nb", 16}}}, {9, {{"N", 96}, {"nb", 16}}}, {4, {{"N", 192}, {"nb", 16}}},
                                   {6, {{"N", 96}, {"nb", 32}}}, {8, {{"N", 96}, {"nb", 32}}}});
  exact_where_traced(rt);
  const b::DiffReport r = b::diff_skeletons(rt.original, rt.rebuilt, untraced({{{"N", 96}, {"nb", 16}}, {{"N", 384}, {"nb", 32}}}));
  EXPECT_TRUE(r.same()) << b::format_diff(r);
  EXPECT_EQ(r.points, 26u);
}

// master_worker: the master's first round is min(depth*W, tasks) and its steady loop runs tasks - depth*W rounds
// only where that is positive; traced with fewer tasks than 2 (P - 1) at P = 6 and 8, the builder writes the first
// round as min(2*(P-1), tasks) (a count cut by a parameter) and puts the steady loop under `rank == 0 && (tasks -
// 2*(P-1)) > 0` (the ranks that run it are those where its loop runs). The original's master and workers are two
// programs, the rebuilt's `if` blocks in another order: rank by rank (--flatten-conditions) the structure is the
// same, and every operation at P and task counts never traced. Compute is a draw per task (p_long), compared by
// bench/emit_roundtrip.py as a sum over ranks.
TEST(EmitRoundTrip, MasterWorkerSameRankByRank) {
  const Point base{{"tasks", 24}, {"short_flops", 200000}, {"long_flops", 5000000}};
  auto with = [&](double tasks) { Point p = base; p["tasks"] = tasks; return p; };
  const RoundTrip rt = round_trip(SRC + "/skeletons/examples/master_worker.json", "master_worker",
                                  {{2, base}, {4, base}, {6, base}, {8, base}, {4, with(48)}, {6, with(8)}, {8, with(8)}});
  b::DiffOptions o = untraced({with(24), with(100), with(9)});
  const b::DiffReport ops = [&] { b::DiffOptions x = o; x.structure = false; return b::diff_skeletons(rt.original, rt.rebuilt, x); }();
  EXPECT_TRUE(ops.same()) << b::format_diff(ops);
  o.flatten_conditions = true;
  const b::DiffReport flat = b::diff_skeletons(rt.original, rt.rebuilt, o);
  EXPECT_TRUE(flat.same()) << b::format_diff(flat);
  EXPECT_NE(b::format_diff(flat).find("structure compared rank by rank"), std::string::npos) << b::format_diff(flat);
}

// coin_ring (tests/skelbuild_branch_test.cpp): its skeleton, built from the real program's traces, has a `prob` branch
// that sends and its partner's that receives, sharing a coin. Emitted, traced and rebuilt, it comes back with the same
// structure and coins, and probabilities within 0.02 of the original's (each is a fraction of some thousands of
// draws); equal in distribution: expanded with the original's probabilities, every operation agrees at P and steps
// never traced. Without the loop annotations of the emitted program the builder could not see the branches.
TEST(EmitRoundTrip, CoinRingEqualInDistribution) {
  std::vector<mksim::trace::Run> source;
  for (const auto& [P, steps] : std::vector<std::pair<int, int>>{{4, 200}, {8, 200}, {4, 400}}) {
    const fs::path dir = workdir() / ("src-coin-" + std::to_string(P) + "-" + std::to_string(steps));
    const auto [rc, out] = mksim::test::shell("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1 " + BIN +
                                              "/trace/mktrace -np " + std::to_string(P) + " --param steps=" + std::to_string(steps) + " -o " +
                                              dir.string() + " -- " + BIN + "/apps/coin_ring " + std::to_string(steps) + " 0.3 7 2>&1");
    ASSERT_EQ(rc, 0) << out;
    source.push_back(mksim::trace::read_run(dir.string(), {.require_complete = true}));
  }
  const fs::path original = workdir() / "coin_ring.json";
  std::ofstream(original) << b::build_skeleton(source).skeleton.dump(1);
  const RoundTrip rt = round_trip(original.string(), "coin_ring", {{4, {{"steps", 200}}}, {8, {{"steps", 200}}}, {4, {{"steps", 400}}}});
  b::DiffOptions o = untraced({{{"steps", 200}}, {{"steps", 1000}}});
  o.P = {4, 5, 6, 7, 8, 9, 16, 32};
  o.prob_tol = 0.02;
  const b::DiffReport r = b::diff_skeletons(rt.original, rt.rebuilt, o);
  EXPECT_TRUE(r.same()) << b::format_diff(r);
  EXPECT_NE(b::format_diff(r).find("note: 2 prob branch(es) compared within 0.02"), std::string::npos) << b::format_diff(r);
  EXPECT_GT(r.operations, 100000u);
}
