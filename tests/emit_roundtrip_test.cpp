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
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace fs = std::filesystem;
namespace sk = mksim::skeletons;
namespace b = mksim::skeletons::builder;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;
const std::string BIN = MKSIM_BINARY_DIR;
constexpr double FLOPS_RATE = 1e9;  // the programs' spin rate: compute in flops becomes flops / 1e9 CPU seconds

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
    std::tie(rc, out) = mksim::test::shell(cmd + " -o " + dir.string() + " -- " + exe.string() + " --flops-rate=1e9" + args + " 2>&1");
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

// The differences of a report as (kind, path in A, path in B), to compare with the set a case expects.
std::set<std::tuple<std::string, std::string, std::string>> kinds(const b::DiffReport& r) {
  std::set<std::tuple<std::string, std::string, std::string>> s;
  for (const auto& d : r.differences) s.emplace(d.kind, d.path_a, d.path_b);
  return s;
}

// Whether the builder reported the quantity or condition of block `pointer` (of the rebuilt skeleton) ambiguous.
bool flagged(const RoundTrip& rt, const std::string& pointer) {
  return std::any_of(rt.ambiguities.begin(), rt.ambiguities.end(), [&](const std::string& a) { return a.rfind(pointer + "/", 0) == 0; });
}

}  // namespace

// ATM1D's red/black exchange (a chain, nested conditions) and CG's requests and allreduces; see the expectations.
TEST(EmitRoundTrip, Atm1dAndCg) {
  const RoundTrip atm = round_trip(SRC + "/skeletons/examples/atm1d.json", "atm1d",
                                   {{2, {{"N", 64}, {"steps", 2}}}, {4, {{"N", 64}, {"steps", 2}}}, {8, {{"N", 64}, {"steps", 2}}},
                                    {4, {{"N", 128}, {"steps", 2}}}, {4, {{"N", 64}, {"steps", 3}}}});
  exact_where_traced(atm);
  const b::DiffReport r = b::diff_skeletons(atm.original, atm.rebuilt, at({2, 3, 4, 5, 6, 7, 8, 16, 32, 256}, {{{"N", 64}, {"steps", 2}}, {{"N", 256}, {"steps", 5}}}));
  std::printf("%s", b::format_diff(r).c_str());
  for (const auto& a : atm.ambiguities) std::printf("ambiguous: %s\n", a.c_str());
}
