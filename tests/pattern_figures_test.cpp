// Per-pattern communication figures (issue 22; seed 001 s.5, tables 2 and 3): platform props, the pattern of
// each phase and send block from the phase graph at P, `mkcalib patterns` from seed 001 table 2 reproduced exactly
// by the model and replay, platforms without the figures unchanged, and table 3 (isospeed scalability of Jacobi
// 2-d on the T3E) predicted from a skeleton that mkskel builds from traces of skeletons/apps/jacobi2d.c.
#include "calibration/fit_platform.hpp"
#include "calibration/pattern_figures.hpp"
#include "calibration/pattern_table.hpp"
#include "platforms/generator.hpp"
#include "platforms/patterns.hpp"
#include "results/calib_db.hpp"
#include "results/hdf5_io.hpp"
#include "sim/cli/calib_cli.hpp"
#include "sim/engine/isolate.hpp"
#include "sim/engine/phase_patterns.hpp"
#include "sim/model/model.hpp"
#include "sim/model/model_queries.hpp"
#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/regress.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/ti_reader.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fs = std::filesystem;
using namespace mksim;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;
const std::string BIN = MKSIM_BINARY_DIR;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("mksim_pattern_test_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

int mkcalib(const std::vector<std::string>& args, std::string* out_text = nullptr, std::string* err_text = nullptr) {
  std::ostringstream out, err;
  const int code = sim::run_mkcalib(args, out, err);
  if (out_text) *out_text = out.str();
  if (err_text) *err_text = err.str();
  return code;
}

/** @brief The classification of `skeleton` at P with the given platform patterns. */
sim::PatternMap classify(const std::string& skeleton, int P, const std::map<std::string, double>& params,
                         const std::vector<platforms::PatternFigures>& patterns) {
  const auto sk = skeletons::load_skeleton(SRC + "/" + skeleton);
  return sim::phase_patterns(sk, skeletons::bind_parameters(sk, P, params), P, patterns);
}

const sim::PhasePattern& phase(const sim::PatternMap& m, const std::string& label) {
  for (const auto& p : m.phases)
    if (p.label == label) return p;
  throw std::runtime_error("no phase " + label);
}

// the published lines (seed 001 table 2, T3E) as figures
std::vector<platforms::PatternFigures> t3e_table2() {
  return calibration::table_patterns(calibration::read_pattern_table(SRC + "/calibration/data/scala_table2.csv"), "t3e", 4747);
}

}  // namespace

TEST(PatternProps, RoundTripAndErrorsNameTheProp) {
  const platforms::PatternFigures p{"2d", 5391, 40.3e-6, 2.1e-8, 77.5e-6, 1.41e-8, "test"};
  std::map<std::string, std::string> props;
  for (const auto& [id, v] : platforms::pattern_props(p)) props[id] = v;
  EXPECT_EQ(props.size(), 5u);
  EXPECT_EQ(props.at("mksim.pattern.2d.short_rho_s"), "4.03e-05");
  props["mksim.machine"] = "t3e";  // other props are not patterns
  const auto back = platforms::patterns_from_props(props, "x.xml");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].breakpoint_bytes, 5391);
  EXPECT_EQ(back[0].long_beta_s_per_byte, 1.41e-8);
  EXPECT_NEAR(back[0].message_s(5391), 40.3e-6 + 2.1e-8 * 5391, 1e-18);   // at the breakpoint: short
  EXPECT_NEAR(back[0].message_s(5392), 77.5e-6 + 1.41e-8 * 5392, 1e-18);  // above it: long
  auto error = [](std::map<std::string, std::string> m) {
    try {
      platforms::patterns_from_props(m, "x.xml");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto bad = props;
  bad["mksim.pattern.4d.short_rho_s"] = "1";
  EXPECT_EQ(error(bad), "x.xml: platform property mksim.pattern.4d.short_rho_s: unknown pattern \"4d\" (known: 1d, 2d, 3d)");
  bad = props;
  bad["mksim.pattern.2d.long_rho_s"] = "-1";
  EXPECT_EQ(error(bad), "x.xml: platform property mksim.pattern.2d.long_rho_s = '-1' is not a non-negative number");
  bad = props;
  bad.erase("mksim.pattern.2d.long_rho_s");
  EXPECT_NE(error(bad).find("x.xml: pattern 2d has 4 of its 5 properties"), std::string::npos) << error(bad);
  // the lines cross where the table's T3E 1-d lines do (the bundled T3E's eager threshold, 4747 B)
  const auto t = t3e_table2();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "1d");
  EXPECT_EQ(t[0].breakpoint_bytes, 4746);
  EXPECT_EQ(t[1].breakpoint_bytes, 5391);
}

TEST(PatternProps, PartnersAndGrids) {
  EXPECT_EQ(platforms::pattern_for_partners(0), "");
  EXPECT_EQ(platforms::pattern_for_partners(1), "1d");
  EXPECT_EQ(platforms::pattern_for_partners(2), "1d");
  EXPECT_EQ(platforms::pattern_for_partners(3), "2d");
  EXPECT_EQ(platforms::pattern_for_partners(4), "2d");
  EXPECT_EQ(platforms::pattern_for_partners(6), "3d");
  EXPECT_EQ(platforms::pattern_for_partners(7), "");
  // MPI_Dims_create's choices (OpenMPI 4.1 gives the same)
  EXPECT_EQ(calibration::dims_create(4, 2), (std::vector<int>{2, 2}));
  EXPECT_EQ(calibration::dims_create(8, 2), (std::vector<int>{4, 2}));
  EXPECT_EQ(calibration::dims_create(12, 2), (std::vector<int>{4, 3}));
  EXPECT_EQ(calibration::dims_create(8, 3), (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(calibration::dims_create(27, 3), (std::vector<int>{3, 3, 3}));
  EXPECT_EQ(calibration::dims_create(7, 2), (std::vector<int>{7, 1}));
}

// The phase graph at P decides: comm_patterns.json's ring is 1d at every P; its four shifts on a Px x Py torus
// are 1d on 2 x 2 (two partners, each both ways), 2d from 2 x 4 on, where the two shifts along the side of 2
// reach one partner (paired: 1d figures) and the other two distinct ones; a pipeline and wildcard receives
// keep the platform's costs.
TEST(PhasePatterns, GridSidesDecideThePatternOfPhasesAndBlocks) {
  const auto pats = t3e_table2();
  const std::string cp = "calibration/data/comm_patterns.json";
  const auto ring = classify(cp, 64, {{"dim", 1}}, pats);
  EXPECT_EQ(phase(ring, "shift1d").describe(), "1d (2 partners)");
  EXPECT_EQ(classify(cp, 2, {{"dim", 1}}, pats).phases.at(0).describe(), "1d (1 partner)");
  const auto p4 = classify(cp, 4, {{"dim", 2}}, pats);
  EXPECT_EQ(phase(p4, "halo2d").describe(), "1d (2 partners)");
  const auto p8 = classify(cp, 8, {{"dim", 2}}, pats);
  EXPECT_EQ(phase(p8, "halo2d").describe(), "2d (3 partners; 2 of 4 send blocks reach a partner another send reaches too: 1d)");
  const auto sk = skeletons::load_skeleton(SRC + "/" + cp);
  int one = 0, two = 0;
  for (std::size_t b = 0; b < sk.blocks.size(); ++b) {
    if (p8.block_pattern[b] == 0) {
      ++one;
      EXPECT_TRUE(sk.blocks[b].id == "east-send" || sk.blocks[b].id == "west-send") << sk.blocks[b].id;  // Px = 2
    }
    if (p8.block_pattern[b] == 1) ++two;
  }
  EXPECT_EQ(one, 2);
  EXPECT_EQ(two, 2);
  const auto p64 = classify(cp, 64, {{"dim", 2}}, pats);
  EXPECT_EQ(phase(p64, "halo2d").describe(), "2d (4 partners)");
  // without the 2d figures the phase keeps the platform's costs, and says so
  const auto only1d = classify(cp, 64, {{"dim", 2}}, {pats[0]});
  EXPECT_EQ(phase(only1d, "halo2d").describe(), "2d (4 partners): the platform has no 2d figures");
  EXPECT_EQ(phase(only1d, "halo2d").pattern, -1);
  EXPECT_EQ(phase(classify("skeletons/examples/pge1.json", 16, {}, pats), "forward").kind, "pipeline");
  // master_worker labels its phases by role: the master's wildcard receives keep the platform's costs; a worker
  // exchanges with one partner, the master (a 1d pair)
  const auto mw = classify("skeletons/examples/master_worker.json", 8, {}, pats);
  EXPECT_EQ(phase(mw, "master").describe(), "wildcard receives: the platform's point-to-point costs");
  EXPECT_EQ(phase(mw, "worker").describe(), "1d (1 partner)");
}

// mkcalib patterns turns seed 001 table 2 into a T3E with per-pattern figures (the committed file), and the
// model and replay give back every line of the table from the pattern skeleton: rho and beta exactly (model)
// and within 0.1% (replay: a long message's transfer starts when its receive is posted, after the receiver's own
// send, so the route's latency, 20 ns a hop, shows: +0.04 us on 71.2 us).
TEST(PatternPlatform, Table2ReproducedByModelAndReplay) {
  TempDir dir("table2");
  const std::string out = dir.file("t3e-patterns.xml");
  std::string text, err;
  ASSERT_EQ(mkcalib({"patterns", "--platform", "t3e", "--table", SRC + "/calibration/data/scala_table2.csv", "--machine", "t3e", "-o", out},
                    &text, &err), 0) << err;
  std::cout << text;
  EXPECT_NE(text.find("2d: short 40.3 us + 0.021 us/B, long 77.5 us + 0.0141 us/B, breakpoint 5391 B"), std::string::npos) << text;
  EXPECT_EQ(slurp(out), slurp(SRC + "/calibration/data/t3e_table2_patterns.xml")) << "regenerate the committed file with this command";
  // its figures read back as a base platform (mkcalib fit keeps them)
  EXPECT_EQ(calibration::read_base_platform(out).spec.patterns.size(), 2u);
  // refused: figures below the platform's own overheads, and a missing source
  EXPECT_EQ(mkcalib({"patterns", "--platform", "t3e", "-o", dir.file("x.xml")}, &text, &err), 2);
  EXPECT_NE(err.find("patterns needs --db or --table"), std::string::npos) << err;

  const auto sk = skeletons::load_skeleton(SRC + "/calibration/data/comm_patterns.json");
  const auto table = calibration::read_pattern_table(SRC + "/calibration/data/scala_table2.csv");
  const auto rows = calibration::check_pattern_table(out, sk, table, "t3e", 64, 10);
  std::cout << calibration::format_pattern_check(rows) << std::flush;
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& r : rows) {
    const std::string what = r.table.pattern + " " + r.table.regime;
    EXPECT_NEAR(r.model_rho_s, r.table.rho_s, 1e-9 * r.table.rho_s) << what;
    EXPECT_NEAR(r.model_beta_s_per_byte, r.table.beta_s_per_byte, 1e-9 * r.table.beta_s_per_byte) << what;
    EXPECT_NEAR(r.replay_rho_s, r.table.rho_s, 1e-3 * r.table.rho_s) << what;
    EXPECT_NEAR(r.replay_beta_s_per_byte, r.table.beta_s_per_byte, 1e-3 * r.table.beta_s_per_byte) << what;
  }

  // the result records the figures and each phase's pattern (HDF5 attributes)
  sim::ReplayOptions o;
  o.platform_path = out;
  o.P = 8;
  o.params = {{"dim", 2}, {"D", 1024}, {"steps", 2}};
  const results::RunResult res = sim::replay_in_child(sk, o);
  results::write_run_hdf5(dir.file("r.h5"), res);
  std::map<std::string, std::string> attrs;
  for (const auto& [k, v] : results::read_run_hdf5(dir.file("r.h5")).attributes) attrs[k] = v;
  EXPECT_EQ(attrs["machine.pattern.2d"], "2d: short 40.3 us + 0.021 us/B, long 77.5 us + 0.0141 us/B, breakpoint 5391 B");
  EXPECT_EQ(attrs["pattern.halo2d"], "2d (3 partners; 2 of 4 send blocks reach a partner another send reaches too: 1d)");
  // 2 steps of four shifts: two messages of the 1d line and two of the 2d line each, one after the other
  EXPECT_NEAR(res.predicted_time_s, 2 * (2 * (35.6e-6 + 2e-8 * 1024) + 2 * (40.3e-6 + 2.1e-8 * 1024)), 1e-8);
}

// Platforms without mksim.pattern.* props predict exactly as before them: values computed by main before this
// change (git 536b544: `mksim model --format json` and `mksim -o` of the same points), %.17g; equality is exact.
TEST(PatternPlatform, WithoutThemPredictionsAreUnchanged) {
  struct Case {
    const char* platform;
    const char* skeleton;
    int P;
    std::map<std::string, double> params;
    double model_s, replay_s;
  };
  const Case cases[] = {
      {"t3e", "calibration/data/comm_patterns.json", 8, {{"D", 6000}, {"dim", 2}, {"steps", 3}}, 0.0013273199999999999, 0.0017773199999999993},
      {"paragon", "calibration/data/comm_patterns.json", 16, {{"D", 2048}, {"dim", 2}, {"steps", 3}}, 0.0037009999999999999, 0.00226232},
      {"ipsc860", "skeletons/examples/atm2d.json", 16, {{"N", 256}, {"steps", 2}}, 0.011757714285714286, 0.011757714285714288},
  };
  for (const Case& c : cases) {
    const auto sk = skeletons::load_skeleton(SRC + "/" + c.skeleton);
    calibration::MeasuredRuns runs;
    calibration::MeasuredRun run;
    run.P = c.P;
    run.params = c.params;
    run.time_s = 1;
    runs.runs.push_back(run);
    const auto rows = calibration::validate_platform(SRC + "/platforms/" + c.platform + ".xml", sk, runs);
    ASSERT_EQ(rows.size(), 1u);
    char m[40], r[40];
    std::snprintf(m, sizeof m, "%.17g", rows[0].model_s);
    std::snprintf(r, sizeof r, "%.17g", rows[0].replay_s);
    std::cout << c.platform << " " << c.skeleton << " P=" << c.P << ": model " << m << ", replay " << r << "\n";
    EXPECT_EQ(rows[0].model_s, c.model_s) << c.platform << " " << c.skeleton;
    // the replay's values were pinned before the engine of issue 20, which sums a rank's clock in another order
    EXPECT_NEAR(rows[0].replay_s, c.replay_s, 1e-12 * c.replay_s) << c.platform << " " << c.skeleton;
  }
}

// The skeleton builder's peers along the wrapping rows of a periodic grid (west and east on a torus): from
// grids of 2 x 2, 2 x 4, 4 x 4 (rank = x + Px*y, Px = 2^floor(log2(P)/2)), exact at 4 x 8 and 8 x 8.
TEST(RowWrapPeers, FittedFromSmallGridsHoldOnLargerOnes) {
  auto side = [](int P) { return 1 << static_cast<int>(std::floor(std::log2(P) / 2)); };
  for (int dir : {-1, +1}) {
    auto peer = [&](int P, int rank) {
      const int px = side(P), x = rank % px;
      return rank - x + (x + dir + px) % px;
    };
    std::vector<skeletons::builder::Sample> samples;
    for (int P : {4, 8, 16})
      for (int r = 0; r < P; ++r) samples.push_back({{{"P", P}, {"rank", r}}, static_cast<double>(peer(P, r)), "P" + std::to_string(P)});
    skeletons::builder::FitOptions o;
    o.integer = true;
    o.allow_rank = true;
    const auto f = skeletons::builder::fit_quantity(samples, {}, o);
    EXPECT_TRUE(f.exact) << f.expr;
    skeletons::SymbolTable t;
    const int sP = t.add("P"), sr = t.add("rank");
    const skeletons::Expr e = skeletons::parse_expr(f.expr, t);
    for (int P : {32, 64, 256})
      for (int r = 0; r < P; ++r) {
        std::vector<double> frame(2);
        frame[static_cast<std::size_t>(sP)] = P;
        frame[static_cast<std::size_t>(sr)] = r;
        ASSERT_EQ(e.eval(frame), peer(P, r)) << f.expr << " at P=" << P << " rank " << r;
      }
  }
}

namespace {

/** @brief Seed 001 table 3, "Bidirectional 2D torus on CRAY T3E: Predicted (P) and measured (M) scalability",
 *  psi(p, p') of Jacobi 2-d; P is p' n^2 / (p n'^2) from the isospeed sizes of its header. */
struct Table3Entry {
  int p, pp;
  double P, M;
};
constexpr Table3Entry TABLE3[] = {{4, 8, 0.908, 0.899},   {4, 16, 0.877, 0.871},  {4, 32, 0.859, 0.856},
                                  {4, 64, 0.877, 0.871},  {8, 16, 0.966, 0.969},  {8, 32, 0.946, 0.952},
                                  {8, 64, 0.966, 0.969},  {16, 32, 0.979, 0.982}, {16, 64, 1.000, 1.000},
                                  {32, 64, 1.021, 1.018}};
/** @brief The table's header: n = 1024 at p = 4, the isospeed sizes at p' = 8, 16, 32, 64. */
const std::map<int, double> TABLE3_N = {{4, 1024}, {8, 1519}, {16, 2186}, {32, 3124}, {64, 4372}};

/** @brief `smpirun -trace-ti` of skeletons/apps/jacobi2d.c (the smpicc build) at P on the bundled T3E. */
trace::Run trace_jacobi(const fs::path& dir, int P, long n, long iters) {
  const fs::path d = dir / ("jacobi2d-" + std::to_string(P) + "-" + std::to_string(n) + "-" + std::to_string(iters));
  fs::create_directories(d);
  std::ofstream hosts(d / "hosts");
  for (int i = 0; i < P; ++i) hosts << "node-" << i << "\n";
  hosts.close();
  const std::string idx = (d / "ti.txt").string();
  const std::string cmd = "smpirun -np " + std::to_string(P) + " -platform " + SRC + "/platforms/t3e.xml -hostfile " +
                          (d / "hosts").string() + " -trace-ti --cfg=tracing/filename:" + idx +
                          " --cfg=smpi/simulate-computation:no --log=root.thresh:warning " + BIN + "/apps-smpi/jacobi2d " +
                          std::to_string(n) + " " + std::to_string(iters) + " >" + (d / "out.log").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd << "\n" << slurp((d / "out.log").string());
  trace::Run run = trace::read_ti_run(idx);
  run.params = {{"n", std::to_string(n)}, {"iters", std::to_string(iters)}};
  return run;
}

/** @brief A rank's point-to-point operations, as (kind, peer, tag, bytes) text, from a trace or a skeleton. */
std::vector<std::string> p2p_of(const trace::RankTrace& t) {
  std::vector<std::string> out;
  for (const auto& e : t.events)
    if (e.kind == trace::Kind::ISEND || e.kind == trace::Kind::IRECV)
      out.push_back(std::string(e.kind == trace::Kind::ISEND ? "isend" : "irecv") + " " + std::to_string(e.peer) + " " +
                    std::to_string(e.tag) + " " + std::to_string(e.bytes));
  return out;
}
std::vector<std::string> p2p_of(const skeletons::Skeleton& sk, int P, const std::map<std::string, double>& params, int rank) {
  std::vector<std::string> out;
  for (const auto& op : skeletons::expand_rank(sk, skeletons::bind_parameters(sk, P, params), rank))
    if (op.kind == skeletons::ExpandedOp::Kind::ISEND || op.kind == skeletons::ExpandedOp::Kind::IRECV)
      out.push_back(std::string(op.kind == skeletons::ExpandedOp::Kind::ISEND ? "isend" : "irecv") + " " + std::to_string(op.peer) +
                    " " + std::to_string(op.tag) + " " + std::to_string(static_cast<long>(op.size_bytes)));
  return out;
}

}  // namespace

// Seed 001 table 3 from a skeleton built from traces: jacobi2d traced under SMPI (time-independent traces carry
// its 5n^2/P flops per iteration) at P = 4..32 and n = 512, 1024, built by mkskel, checked at P = 64 against a
// trace it never saw; then mksim's isospeed query (the analytic model) on the T3E with seed 001 table 2's
// per-pattern figures, from each row's p and n (the header's), gives psi(p, p') for the ten entries, against
// the paper's predicted and measured values. The compute rate cancels from psi here (compute and communication
// add, so equal average speed means equal p*C/W): it is checked, not fitted. Replay agrees with the model.
TEST(ScalaTable3, JacobiFromTracesPredictsTheIsospeedTable) {
  if (std::system("command -v smpirun >/dev/null 2>&1") != 0 || !fs::exists(BIN + "/apps-smpi/jacobi2d"))
    GTEST_SKIP() << "smpirun or the smpicc build of jacobi2d missing";
  TempDir dir("table3");
  std::vector<trace::Run> runs;
  for (int P : {4, 8, 16, 32})
    for (long n : {512L, 1024L}) runs.push_back(trace_jacobi(dir.path, P, n, 5));
  runs.push_back(trace_jacobi(dir.path, 4, 512, 8));
  skeletons::builder::BuildOptions bo;
  bo.name = "jacobi2d";
  const auto built = skeletons::builder::build_skeleton(runs, bo);
  const std::string text = built.skeleton.dump(2);
  std::ofstream(dir.file("jacobi2d.skel.json")) << text;
  const skeletons::Skeleton sk = skeletons::load_skeleton(dir.file("jacobi2d.skel.json"));
  // the stated flops, exactly, once per iteration
  EXPECT_NE(text.find("\"flops\": \"max(0, 5*n^2/P)\""), std::string::npos) << text;
  // every rank's messages at P = 64 (an 8 x 8 grid, never traced) are the program's
  const trace::Run at64 = trace_jacobi(dir.path, 64, 1024, 3);
  for (int r = 0; r < 64; ++r)
    ASSERT_EQ(p2p_of(sk, 64, {{"n", 1024}, {"iters", 3}}, r), p2p_of(at64.ranks[static_cast<std::size_t>(r)])) << "rank " << r << "\n" << text;

  const std::string patterned = SRC + "/calibration/data/t3e_table2_patterns.xml";
  const sim::MachineModel pat = sim::tabulate_machine_model(patterned, 64);
  const sim::MachineModel plain = sim::tabulate_machine_model(SRC + "/platforms/t3e.xml", 64);
  sim::MachineModel slow = pat;  // a ten times slower node: the compute rate that cancels
  slow.speed_flops = [](int) { return 90e6; };
  sim::QueryOptions qo;
  qo.params = {{"iters", 1000}};  // a run of 1000 iterations: the initial exchange and the result reductions weigh little
  struct Got {
    double psi = 0, plain = 0, slow = 0;
  };
  std::map<std::pair<int, int>, Got> got;
  for (int p : {4, 8, 16, 32}) {
    std::vector<int> pps;
    for (int pp : {8, 16, 32, 64})
      if (pp > p) pps.push_back(pp);
    const auto a = sim::isospeed_scalability(sk, pat, qo, "n", p, TABLE3_N.at(p), pps, 256, 16384, 4);
    const auto b = sim::isospeed_scalability(sk, plain, qo, "n", p, TABLE3_N.at(p), pps, 256, 16384, 4);
    const auto c = sim::isospeed_scalability(sk, slow, qo, "n", p, TABLE3_N.at(p), pps, 256, 16384, 4);
    for (std::size_t i = 0; i < pps.size(); ++i) {
      ASSERT_TRUE(a.rows[i].found && b.rows[i].found && c.rows[i].found) << a.rows[i].note << b.rows[i].note << c.rows[i].note;
      got[{p, pps[i]}] = {a.rows[i].psi, b.rows[i].psi, c.rows[i].psi};
    }
  }
  double sum = 0, sum_plain = 0, worst = 0;
  std::printf("psi(p, p')   mksim      paper P   paper M   error     (without patterns: mksim, error)\n");
  for (const Table3Entry& e : TABLE3) {
    const Got& g = got.at({e.p, e.pp});
    const double err = 100 * (g.psi - e.M) / e.M, err_plain = 100 * (g.plain - e.M) / e.M;
    std::printf("psi(%2d, %2d)  %.4f     %.3f     %.3f     %+6.2f%%   (%.4f, %+6.2f%%)\n", e.p, e.pp, g.psi, e.P, e.M, err, g.plain, err_plain);
    sum += std::fabs(err);
    sum_plain += std::fabs(err_plain);
    worst = std::max(worst, std::fabs(err));
    EXPECT_NEAR(g.slow, g.psi, 1e-6 * g.psi) << "the compute rate changed psi(" << e.p << ", " << e.pp << ")";
  }
  const double mean = sum / 10, mean_plain = sum_plain / 10;
  std::printf("mean |error| against the measured column: %.2f%% (worst %.2f%%); without per-pattern figures %.2f%%\n", mean, worst,
              mean_plain);
  // Measured here: 1.55% mean, 2.86% worst (psi(4, 16) and psi(4, 64)); the goal of 0.5% is not reached (see
  // calibration/README.md, "Seed 001 table 3"). Without the figures (the bundled T3E): ~10%.
  EXPECT_LE(mean, 1.7);
  EXPECT_LE(worst, 3.0);
  EXPECT_GE(mean_plain, 3 * mean);
  EXPECT_NEAR(got.at({16, 64}).psi, 1.0, 2e-3);  // 4 x 4 and 8 x 8 grids: the same blocks, the same pattern

  // replay agrees with the model on an iteration's time at two isospeed points (P = 8: paired 1d and 2d
  // messages; P = 64): the time of 40 more iterations (the result reductions' algorithms differ, not the loop)
  for (const auto& [P, n] : std::vector<std::pair<int, double>>{{8, 1522.8}, {64, 4327.5}}) {
    auto both = [&](double iters) {
      const std::map<std::string, double> params{{"n", n}, {"iters", iters}};
      sim::ReplayOptions o;
      o.platform_path = patterned;
      o.P = P;
      o.params = params;
      sim::ModelOptions mo;
      mo.P = P;
      mo.params = params;
      return std::pair{sim::replay_in_child(sk, o).predicted_time_s, sim::derive_model(sk, pat, mo).value_s};
    };
    const auto [r10, m10] = both(10);
    const auto [r50, m50] = both(50);
    EXPECT_NEAR(r50 - r10, m50 - m10, 1e-4 * (m50 - m10)) << "P=" << P;
  }
}

// mkcalib measures the patterns as SCALA does (table 2: per pattern, per message): shift1d and halo2d on 9 ranks
// here (a 3 x 3 torus: 4 distinct partners), each kernel's fit per operation divided by the messages one rank
// sends per operation (1, 4); a halo measured where a side has 2 ranks is not the 2d halo and is not used; and
// `mkcalib patterns` writes a database's figures into a platform.
TEST(MeasuredPatterns, PerMessageFiguresFromTheBenchKernels) {
  TempDir dir("measured");
  const std::string db_path = dir.file("vm9.h5");
  std::string out, err;
  ASSERT_EQ(mkcalib({"bench", "-np", "9", "--quick", "--kernels", "patterns", "-o", db_path}, &out, &err), 0) << err;
  const results::CalibDb db = results::read_calib_db(db_path);
  const auto measured = calibration::measured_patterns(db);
  ASSERT_EQ(measured.size(), 3u);
  for (const auto& m : measured) {
    const auto k = std::find_if(db.kernels.begin(), db.kernels.end(), [&](const auto& x) { return x.name == m.kernel; });
    ASSERT_NE(k, db.kernels.end());
    ASSERT_FALSE(k->fit.empty()) << m.kernel;
    EXPECT_EQ(m.figures.short_rho_s, k->fit.front().rho_s / m.messages_per_op) << m.kernel;
    EXPECT_EQ(m.figures.long_beta_s_per_byte, k->fit.back().beta_s_per_byte / m.messages_per_op) << m.kernel;
  }
  EXPECT_EQ(measured[0].pattern, "1d");
  EXPECT_TRUE(measured[0].usable);
  EXPECT_EQ(measured[1].pattern, "2d");
  EXPECT_EQ(measured[1].partners, 4);
  EXPECT_EQ(measured[1].messages_per_op, 4);
  EXPECT_TRUE(measured[1].usable);
  EXPECT_FALSE(measured[2].usable);  // halo3d on 9 ranks: 3 x 3 x 1
  EXPECT_NE(measured[2].note.find("-np 27"), std::string::npos) << measured[2].note;
  ASSERT_EQ(mkcalib({"show", db_path}, &out, &err), 0) << err;
  EXPECT_NE(out.find("pattern figures per message"), std::string::npos) << out;
  EXPECT_NE(out.find("  halo2d -> 2d: short "), std::string::npos) << out;

  // a database at np 4 (2 x 2: each neighbour twice) does not stand for the 2d halo
  results::CalibDb four = db;
  four.np = 4;
  const auto m4 = calibration::measured_patterns(four);
  EXPECT_FALSE(m4[1].usable);
  EXPECT_EQ(m4[1].partners, 2);

  // mkcalib patterns: a database with known fits into a platform without overheads, read back exactly
  results::CalibDb known = db;
  for (auto& k : known.kernels)
    k.fit = {{"short", 1, 4096, 8e-6, 4e-9, 0, 3}, {"long", 8192, 262144, 16e-6, 2e-9, 0, 3}};
  results::write_calib_db(dir.file("known.h5"), known);
  platforms::PlatformSpec spec = platforms::preset_for("fattree", 16);
  spec.overrides.send_overhead_s = spec.overrides.recv_overhead_s = spec.overrides.per_message_overhead_s = 0.0;
  std::ofstream(dir.file("base.xml")) << platforms::generate_platform_xml(spec);
  ASSERT_EQ(mkcalib({"patterns", "--platform", dir.file("base.xml"), "--db", dir.file("known.h5"), "-o", dir.file("pat.xml")}, &out, &err), 0)
      << err;
  EXPECT_NE(out.find("halo3d -> 3d"), std::string::npos) << out;
  EXPECT_NE(out.find("not used"), std::string::npos) << out;
  const auto pats = calibration::read_base_platform(dir.file("pat.xml")).spec.patterns;
  ASSERT_EQ(pats.size(), 2u);  // 1d and 2d; 3d not measurable on 9 ranks
  EXPECT_EQ(pats[1].name, "2d");
  EXPECT_DOUBLE_EQ(pats[1].short_rho_s, 2e-6);
  EXPECT_DOUBLE_EQ(pats[1].long_beta_s_per_byte, 0.5e-9);
  EXPECT_EQ(pats[1].breakpoint_bytes, 4096);
  EXPECT_DOUBLE_EQ(pats[0].short_rho_s, 8e-6);
  // the bundled T3E's overheads (s + r = 35.6 us) are above these start-ups: refused, with the reason
  EXPECT_EQ(mkcalib({"patterns", "--platform", "t3e", "--db", dir.file("known.h5"), "-o", dir.file("t.xml")}, &out, &err), 2);
  EXPECT_NE(err.find("is below the base platform's s + r + o"), std::string::npos) << err;
}
