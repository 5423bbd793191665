// Skeletons from SimGrid time-independent traces (issue 4: "import SimGrid time-independent traces of the same
// programs and get the same skeleton structure"): atm2d, cg, pge1 and pge2 run at the P and parameters of
// tests/skelbuild_test.cpp's training sets, once under OpenMPI with mktrace and once under smpirun -trace-ti;
// a skeleton is built from each set and the two are compared at the largest traced P and at one never traced:
// every rank's operations (kind, peer, tag, bytes, root, in order), the phase of each operation (type, depth,
// the rank in its send or receive list), and the loops around point-to-point calls (count, calls inside).
//
// What legitimately differs (TI traces have no call sites, no times, no command line):
// - A TI call's site is its call point (MPI function, communicator, tag as posted). Calls from different lines
//   with the same call point are one: consecutive ones fold into loops (the result reductions become
//   `loop 5 { reduce }`; cg's setup halo folds with its first iterations, so its halo loop is not `iters`) and
//   their phases merge (cg: one halo phase and one allreduce phase; atm2d: the north-south and the east-west
//   exchange instead of four, whose occurrences then add up). Calls from one line with different tags are
//   several: pge2's middle swap is two `if` blocks and two phases, S1 and S2 as in seed 000 s.5.1.
// - No compute blocks and no overlapped computation (TI traces have no times).
// - The skeleton's name (TI runs have no command: it is given here) and block ids.
// Alignment cases these runs exposed (skeletons/builder/builder.cpp, build_level), reduced to written traces below:
// - Loops are matched by what their bodies run (call keys), not by how many loops came before them: PGE2 at
//   P = 2 has no pipeline loops, and its `loop 5 { reduce }` used to be aligned with the other ranks' first
//   pipeline, which made the order cyclic (LoopsAreAlignedByTheirBodyNotTheirPosition).
// - When shapes order the same calls differently, the shapes are grouped into classes that agree on an order
//   and only the calls on a cycle get one copy per class (ShapesThatAgreeShareOneCopyWhenOthersOrderCalls-
//   Differently). Without call sites atm2d's red ranks (north, south, east, west) and black ranks (south,
//   north, west, east) disagree, so its TI skeleton has each exchange twice, once per colour class; a call
//   point that repeats (every MPI_Waitall) is identified by the call before it that does not repeat. Corner
//   ranks order nothing on a cycle and join the first class, so the conditions of one class name corners
//   explicitly and its own samples come from P >= 8 only (where `rank - P/4` equals `rank - Px`); the copies
//   of one call point are therefore fitted together (one expression for all, when one fits exactly), and
//   the skeleton is exact at P = 32 and 64.
#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/holdout.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/matching.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"
#include "skeletons/trace/ti_reader.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using mksim::skeletons::ExpandedOp;
using mksim::skeletons::Skeleton;
using mksim::trace::Kind;

namespace {

const std::string BIN = MKSIM_BINARY_DIR;
const std::string SRC = MKSIM_SOURCE_DIR;

using Params = std::vector<std::pair<std::string, long>>;

/** One traced configuration: P, the program's arguments and the parameters they stand for. */
struct Config {
  int P;
  std::string args;
  Params params;
};

/** What one program's comparison needs. */
struct Case {
  std::string app;
  std::vector<Config> training;
  Config hold_out;          ///< compared, never traced
  bool compare_hold_out = true;
  bool compare_loops = true;
  std::vector<Config> real_hold_outs = {};  ///< traced with OpenMPI, compared with the TI skeleton's expansion
};

class SkelBuildTiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    tmp_ = fs::temp_directory_path() / ("mksim_skelbuild_ti_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }

  static bool smpi_available(const std::string& app) {
    return std::system("command -v smpirun >/dev/null 2>&1") == 0 && fs::exists(BIN + "/apps-smpi/" + app);
  }

  static std::string name_of(const std::string& app, const Config& c) {
    std::string name = app + "-" + std::to_string(c.P);
    for (const auto& [k, v] : c.params) name += "-" + k + std::to_string(v);
    return name;
  }

  // mktrace -np P --param ... -- build/apps/APP ARGS (OpenMPI)
  mksim::trace::Run openmpi(const std::string& app, const Config& c) {
    const fs::path dir = tmp_ / ("ompi-" + name_of(app, c));
    std::string popts;
    for (const auto& [k, v] : c.params) popts += " --param " + k + "=" + std::to_string(v);
    const std::string cmd = BIN + "/trace/mktrace -np " + std::to_string(c.P) + popts + " -o " + dir.string() +
                            " -- " + BIN + "/apps/" + app + " " + c.args + " >" + dir.string() + ".log 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
    return mksim::trace::read_run(dir.string(), {.require_complete = true});
  }

  // smpirun -trace-ti at P ranks on the T3E platform (as tests/ti_reader_test.cpp), read with read_ti_run;
  // the parameters are given here, as `mkskel build INDEX::N=64,...` gives them
  mksim::trace::Run time_independent(const std::string& app, const Config& c) {
    const fs::path dir = tmp_ / ("ti-" + name_of(app, c));
    fs::create_directories(dir);
    std::ofstream hosts(dir / "hosts");
    for (int i = 0; i < c.P; ++i) hosts << "node-" << i << "\n";
    hosts.close();
    const std::string idx = (dir / "ti.txt").string();
    const std::string cmd = "smpirun -np " + std::to_string(c.P) + " -platform " + SRC + "/platforms/t3e.xml -hostfile " +
                            (dir / "hosts").string() + " -trace-ti --cfg=tracing/filename:" + idx +
                            " --cfg=smpi/simulate-computation:no --log=root.thresh:warning " + BIN + "/apps-smpi/" +
                            app + " " + c.args + " >" + (dir / "out.log").string() + " 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
    mksim::trace::Run run = mksim::trace::read_ti_run(idx);
    for (const auto& [k, v] : c.params) run.params[k] = std::to_string(v);
    return run;
  }

  // Traces the training set both ways, builds both skeletons and compares them; returns the TI skeleton's text.
  std::string compare(const Case& c);

  fs::path tmp_;
};

Skeleton build(const std::string& app, const std::vector<mksim::trace::Run>& runs, std::string& text) {
  mksim::skeletons::builder::BuildOptions o;
  o.name = app;
  text = mksim::skeletons::builder::build_skeleton(runs, o).skeleton.dump(1);
  return mksim::skeletons::parse_skeleton(text, app + ".json");
}

/** One operation as the comparison sees it: the call and its phase, evaluated at one P. */
struct Op {
  std::string kind;
  long peer = -1, tag = -1, bytes = 0, root = -1;
  std::string phase_type;  ///< "" when the block has no phase
  long depth = -1;         ///< the phase's depth at this P (point-to-point phases)
  bool in_list = false;    ///< the rank is in the phase's send list (sends) or receive list (receives)
  bool operator==(const Op&) const = default;
};

std::ostream& operator<<(std::ostream& o, const Op& op) {
  return o << op.kind << "(peer " << op.peer << ", tag " << op.tag << ", " << op.bytes << " B, root " << op.root
           << "; " << (op.phase_type.empty() ? "no phase" : op.phase_type) << ", depth " << op.depth
           << (op.in_list ? ", listed" : ", not listed") << ")";
}

// The operations of `rank` at P, without compute, each with its phase (type, depth, membership).
std::vector<Op> operations(const Skeleton& sk, int P, const std::map<std::string, double>& params, int rank) {
  auto frame = mksim::skeletons::bind_parameters(sk, P, params);
  const auto ops = mksim::skeletons::expand_rank(sk, frame, rank);
  mksim::skeletons::bind_rank(sk, frame, rank);
  std::vector<Op> out;
  for (const ExpandedOp& x : ops) {
    if (x.kind == ExpandedOp::Kind::COMPUTE) continue;
    Op op;
    op.kind = mksim::skeletons::op_name(x);
    const bool sends = x.kind == ExpandedOp::Kind::SEND || x.kind == ExpandedOp::Kind::ISEND;
    const bool receives = x.kind == ExpandedOp::Kind::RECV || x.kind == ExpandedOp::Kind::IRECV;
    if (sends || receives) {
      op.peer = x.peer;
      op.tag = x.tag;
      op.bytes = static_cast<long>(x.size_bytes);
    } else if (x.kind == ExpandedOp::Kind::COLLECTIVE) {
      op.bytes = static_cast<long>(x.size_bytes);
      op.root = x.root;
    }
    const std::string& phase = sk.blocks.at(static_cast<std::size_t>(x.block)).phase;
    for (const auto& p : sk.phases)
      if (p.name == phase) {
        op.phase_type = p.type;
        if (p.type != "collective") op.depth = std::lround(p.depth.eval(frame));
        op.in_list = sends ? p.senders.eval(frame) != 0 : receives ? p.receivers.eval(frame) != 0 : true;
      }
    out.push_back(op);
  }
  return out;
}

// Every rank's operations at P agree; returns the number of operations compared.
std::size_t expect_same_operations(const Skeleton& ompi, const Skeleton& ti, int P,
                                   const std::map<std::string, double>& params, const std::string& texts) {
  std::size_t compared = 0;
  for (int rank = 0; rank < P; ++rank) {
    const auto want = operations(ompi, P, params, rank);
    const auto got = operations(ti, P, params, rank);
    EXPECT_EQ(got.size(), want.size()) << "rank " << rank << " of P=" << P << texts;
    for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
      if (!(got[i] == want[i])) {
        ADD_FAILURE() << "P=" << P << " rank " << rank << " op " << i << ": from TI " << got[i] << ", from OpenMPI "
                      << want[i] << texts;
        break;
      }
      const bool p2p = want[i].peer >= 0;
      EXPECT_TRUE(!p2p || (want[i].in_list && !want[i].phase_type.empty()))
          << "P=" << P << " rank " << rank << " op " << i << " " << want[i] << ": not in its phase's lists" << texts;
    }
    compared += want.size();
  }
  return compared;
}

// The loops of a skeleton that contain point-to-point calls: count expression and the calls in them, by
// (op, tag expression), sorted; loops nested in loops are listed with their enclosing counts.
std::multiset<std::string> p2p_loops(const nlohmann::json& body, const std::string& outer = "") {
  std::multiset<std::string> out;
  for (const auto& b : body) {
    const std::string op = b.at("op");
    if (op == "if" || op == "region") {  // regions: the OpenMPI skeleton's functions (call-site stacks)
      for (const char* arm : {"then", "else", "body"})
        if (b.contains(arm)) out.merge(p2p_loops(b.at(arm), outer));
    } else if (op == "loop") {
      const std::string here = outer + "loop " + b.at("count").get<std::string>() + " {";
      std::set<std::string> calls;
      std::vector<const nlohmann::json*> todo{&b.at("body")};
      while (!todo.empty()) {
        const nlohmann::json* list = todo.back();
        todo.pop_back();
        for (const auto& c : *list) {
          const std::string k = c.at("op");
          if (k == "if" || k == "region") {
            for (const char* arm : {"then", "else", "body"})
              if (c.contains(arm)) todo.push_back(&c.at(arm));
          } else if (k == "send" || k == "recv" || k == "isend" || k == "irecv") {
            calls.insert(k + " tag " + c.at("tag").dump());
          }
        }
      }
      if (!calls.empty()) {
        std::string s = here;
        for (const auto& c : calls) s += " " + c + ";";
        out.insert(s + " }");
      }
      out.merge(p2p_loops(b.at("body"), here + " "));
    }
  }
  return out;
}

// What a real trace recorded for one rank, as operations without phases (the fields expanded_ops compares).
std::vector<Op> traced_operations(const mksim::trace::RankTrace& t) {
  std::vector<Op> out;
  for (const auto& e : t.events) {
    Op op;
    switch (e.kind) {
      case Kind::SEND: op.kind = "send"; break;
      case Kind::RECV: op.kind = "recv"; break;
      case Kind::ISEND: op.kind = "isend"; break;
      case Kind::IRECV: op.kind = "irecv"; break;
      case Kind::WAITALL: op.kind = "waitall"; break;
      case Kind::REDUCE: op.kind = "reduce"; break;
      case Kind::ALLREDUCE: op.kind = "allreduce"; break;
      case Kind::BCAST: op.kind = "bcast"; break;
      case Kind::BARRIER: op.kind = "barrier"; break;
      default: continue;
    }
    if (op.kind == "send" || op.kind == "recv" || op.kind == "isend" || op.kind == "irecv") {
      op.peer = e.peer;
      op.tag = e.tag;
      op.bytes = e.bytes;
    } else if (op.kind != "waitall") {
      op.bytes = e.bytes;
      op.root = e.root;
    }
    out.push_back(op);
  }
  return out;
}

// Every rank of a real run at a P the skeleton never saw: the same operations (kind, peer, tag, bytes, root, in
// order); returns the number compared.
std::size_t expect_trace_operations(const Skeleton& sk, const mksim::trace::Run& run,
                                    const std::map<std::string, double>& params, const std::string& text) {
  std::size_t compared = 0;
  for (int rank = 0; rank < run.P; ++rank) {
    const auto want = traced_operations(run.ranks.at(static_cast<std::size_t>(rank)));
    auto got = operations(sk, run.P, params, rank);
    for (Op& op : got) op.phase_type.clear(), op.depth = -1, op.in_list = false;
    EXPECT_EQ(got.size(), want.size()) << "rank " << rank << " of P=" << run.P << "\n" << text;
    for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
      if (!(got[i] == want[i])) {
        ADD_FAILURE() << "P=" << run.P << " rank " << rank << " op " << i << ": TI skeleton " << got[i] << ", trace "
                      << want[i] << "\n" << text;
        break;
      }
    compared += want.size();
  }
  return compared;
}

std::map<std::string, double> as_values(const Params& p) {
  std::map<std::string, double> m;
  for (const auto& [k, v] : p) m[k] = static_cast<double>(v);
  return m;
}

std::string SkelBuildTiTest::compare(const Case& c) {
  std::vector<mksim::trace::Run> o_runs, t_runs;
  int largest = 0;
  Params largest_params;
  for (const Config& cfg : c.training) {
    o_runs.push_back(openmpi(c.app, cfg));
    t_runs.push_back(time_independent(c.app, cfg));
    if (cfg.P >= largest) largest = cfg.P, largest_params = cfg.params;
  }
  std::string o_text, t_text;
  const Skeleton o_sk = build(c.app, o_runs, o_text);
  const Skeleton t_sk = build(c.app, t_runs, t_text);
  const std::string texts = "\n--- from TI:\n" + t_text + "\n--- from OpenMPI:\n" + o_text;
  EXPECT_GT(expect_same_operations(o_sk, t_sk, largest, as_values(largest_params), texts), 0u);
  if (c.compare_hold_out) {
    EXPECT_GT(expect_same_operations(o_sk, t_sk, c.hold_out.P, as_values(c.hold_out.params), texts), 0u);
  }
  if (c.compare_loops) {
    const auto o_json = nlohmann::json::parse(o_text), t_json = nlohmann::json::parse(t_text);
    EXPECT_EQ(p2p_loops(t_json.at("body")), p2p_loops(o_json.at("body"))) << texts;
  }
  EXPECT_EQ(t_sk.groups.size(), o_sk.groups.size()) << texts;
  for (const Config& cfg : c.real_hold_outs) {
    const mksim::trace::Run real = openmpi(c.app, cfg);
    EXPECT_EQ(real.P, cfg.P);
    EXPECT_GT(expect_trace_operations(t_sk, real, as_values(cfg.params), "--- from TI:\n" + t_text), 0u);
  }
  return t_text;
}

// the training sets of tests/skelbuild_test.cpp
std::vector<Config> grid(const std::vector<int>& Ps, const std::string& name, const std::vector<long>& values,
                         const std::string& args_before, const std::string& args_after, const Params& fixed) {
  std::vector<Config> out;
  for (int P : Ps)
    for (long v : values) {
      Params p = fixed;
      p.emplace_back(name, v);
      std::sort(p.begin(), p.end());
      out.push_back({P, args_before + std::to_string(v) + args_after, p});
    }
  return out;
}

TEST_F(SkelBuildTiTest, Pge1SameStructureAsOpenMpi) {
  if (!smpi_available("pge1")) GTEST_SKIP() << "smpirun or the smpicc build of pge1 missing";
  Case c{"pge1", grid({2, 4, 8}, "K", {4, 8}, "256 32 ", "", {{"N", 256}, {"M", 32}}), {16, "", {{"K", 2}, {"M", 48}, {"N", 512}}}};
  c.training.push_back({4, "128 64 4", {{"K", 4}, {"M", 64}, {"N", 128}}});
  const std::string text = compare(c);
  EXPECT_NE(text.find("\"MPI_Recv tag 1 comm 0\""), std::string::npos) << "a TI block's provenance is its call point";
}

TEST_F(SkelBuildTiTest, Pge2SameStructureAsOpenMpi) {
  if (!smpi_available("pge2")) GTEST_SKIP() << "smpirun or the smpicc build of pge2 missing";
  Case c{"pge2", grid({4, 8, 16}, "K", {4, 8}, "256 32 ", "", {{"N", 256}, {"M", 32}}), {32, "", {{"K", 2}, {"M", 48}, {"N", 512}}}};
  c.training.push_back({4, "128 64 4", {{"K", 4}, {"M", 64}, {"N", 128}}});
  compare(c);
}

TEST_F(SkelBuildTiTest, CgSameOperationsAsOpenMpi) {
  if (!smpi_available("cg")) GTEST_SKIP() << "smpirun or the smpicc build of cg missing";
  Case c{"cg", grid({2, 4, 8}, "N", {64, 256}, "", " 4", {{"iters", 4}}), {16, "", {{"N", 1024}, {"iters", 5}}}};
  c.training.push_back({4, "64 6", {{"N", 64}, {"iters", 6}}});
  c.compare_loops = false;  // the setup halo folds with the loop's (one call point): loop 2 { halo; allreduce } ...
  compare(c);
}

// The TI skeleton of atm2d, built from P = 2, 4, 8, 16, expanded at P = 32 (a 4 x 8 grid) and 64 (8 x 8), neither
// traced: the same operations as the OpenMPI skeleton at 32, and as real OpenMPI traces at 32 and 64. Each
// exchange is copied once per colour class; the copies of one call point are fitted together (the red copies
// alone have samples from P >= 8 only, where `rank - P/4` equals `rank - Px`).
TEST_F(SkelBuildTiTest, Atm2dSameOperationsAsOpenMpiAndRealTracesAtUnseenP) {
  if (!smpi_available("atm2d")) GTEST_SKIP() << "smpirun or the smpicc build of atm2d missing";
  Case c{"atm2d", grid({2, 4, 8}, "N", {64, 128}, "", " 3", {{"steps", 3}}), {32, "", {{"N", 256}, {"steps", 4}}}};
  c.training.push_back({4, "64 5", {{"N", 64}, {"steps", 5}}});
  c.training.push_back({16, "128 3", {{"N", 128}, {"steps", 3}}});
  c.real_hold_outs = {{32, "256 4", {{"N", 256}, {"steps", 4}}}, {64, "256 2", {{"N", 256}, {"steps", 2}}}};
  const std::string text = compare(c);
  EXPECT_EQ(text.find("P/4"), std::string::npos) << "a red copy's numbers fitted from P >= 8 alone:\n" << text;
  EXPECT_NE(text.find("\"fitted_with_copies\": true"), std::string::npos) << text;
}

// What the comparisons above rely on: a TI call's site is its call point, the same on every rank for the same
// function and tag, another for another tag; completions have their wait's site; describe_site names it.
TEST_F(SkelBuildTiTest, TiCallSitesAreCallPoints) {
  std::ofstream(tmp_ / "r0.txt") << "0 init\n0 isend 1 7 4 0\n0 irecv 1 7 4 0\n0 waitall 2\n0 send 1 8 4 0\n"
                                    "0 send 1 9 4 0\n0 allreduce 1 1 0\n0 finalize\n";
  std::ofstream(tmp_ / "r1.txt") << "1 init\n1 isend 0 7 4 0\n1 irecv 0 7 4 0\n1 waitall 2\n1 recv 0 8 4 0\n"
                                    "1 recv 0 9 4 0\n1 allreduce 1 1 0\n1 finalize\n";
  std::ofstream(tmp_ / "ti.txt") << "r0.txt\nr1.txt\n";
  const auto run = mksim::trace::read_ti_run((tmp_ / "ti.txt").string());
  const auto& a = run.ranks[0].events;
  const auto& b = run.ranks[1].events;
  ASSERT_EQ(a.size(), 10u);  // init, isend, irecv, waitall, 2 completions, send, send, allreduce, finalize
  ASSERT_EQ(b.size(), 10u);
  for (std::size_t i : {1, 2, 3, 8}) EXPECT_EQ(a[i].site, b[i].site) << "event " << i << ": same call point on both ranks";
  EXPECT_NE(a[1].site, a[2].site);  // MPI_Isend and MPI_Irecv with tag 7
  EXPECT_NE(a[6].site, a[7].site);  // MPI_Send with tag 8 and with tag 9
  EXPECT_EQ(a[4].site, a[3].site);  // the completions have their waitall's site
  EXPECT_EQ(a[5].site, a[3].site);
  for (const auto& e : a) EXPECT_NE(e.site, 0u);
  EXPECT_EQ(mksim::trace::describe_site(run.ranks[0], a[1].site), "MPI_Isend tag 7 comm 0");
  EXPECT_EQ(mksim::trace::describe_site(run.ranks[1], b[7].site), "MPI_Recv tag 9 comm 0");
  EXPECT_EQ(mksim::trace::describe_site(run.ranks[0], a[8].site), "MPI_Allreduce comm 0");
  EXPECT_EQ(mksim::trace::site_hash({{"MPI_Isend tag 7 comm 0", 0}}), a[1].site);
}

// ---- alignment cases that the TI runs showed, reduced to written traces ----

/** A call of a written trace. */
struct Written {
  Kind kind;
  std::uint64_t site;
  int peer = -1;
  int tag = -1;
};

// A run written by hand: rank r's calls(r) between MPI_Init and MPI_Finalize, 1 ms each.
mksim::trace::Run written(int P, const std::function<std::vector<Written>(int)>& calls) {
  mksim::trace::Run run;
  run.P = P;
  run.dir = "written-" + std::to_string(P);
  run.command = {"written"};
  for (int r = 0; r < P; ++r) {
    mksim::trace::RankTrace t;
    t.rank = r;
    t.world_size = P;
    t.status = mksim::trace::Status::FINALIZED;
    std::vector<Written> all{{Kind::INIT, 0}};
    for (const Written& w : calls(r)) all.push_back(w);
    all.push_back({Kind::FINALIZE, 0});
    for (const Written& w : all) {
      mksim::trace::Event e;
      e.kind = w.kind;
      e.site = w.site;
      e.peer = w.peer;
      e.tag = w.tag;
      e.bytes = w.peer >= 0 ? 8 : 0;
      e.t_enter = 1e-3 * static_cast<double>(t.events.size());
      e.t_exit = e.t_enter + 1e-3;
      t.events.push_back(e);
    }
    run.ranks.push_back(std::move(t));
  }
  return run;
}

// `exe ARGS` at P ranks under smpirun -trace-ti on the T3E in `dir` (compute as smpi_execute_flops), read back.
mksim::trace::Run smpi_ti_run(const fs::path& dir, const std::string& exe, int P, const std::string& args) {
  fs::create_directories(dir);
  std::ofstream hosts(dir / "hosts");
  for (int i = 0; i < P; ++i) hosts << "node-" << i << "\n";
  hosts.close();
  const std::string idx = (dir / "ti.txt").string();
  const std::string cmd = "timeout 120 smpirun -np " + std::to_string(P) + " -platform " + SRC + "/platforms/t3e.xml -hostfile " +
                          (dir / "hosts").string() + " -trace-ti --cfg=tracing/filename:" + idx +
                          " --cfg=smpi/simulate-computation:no --log=root.thresh:warning " + exe + " " + args + " >" +
                          (dir / "out.log").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return mksim::trace::read_ti_run(idx);
}

std::size_t count_ops(const nlohmann::json& body, const std::string& op) {
  std::size_t n = 0;
  for (const auto& b : body) {
    n += b.at("op") == op ? 1 : 0;
    for (const char* arm : {"body", "then", "else"})
      if (b.contains(arm)) n += count_ops(b.at(arm), op);
  }
  return n;
}

// Ranks 0 and 1 run a loop of messages, then every rank a barrier and a loop of two barriers. Ranks >= 2 have
// no first loop; matched by position, their barrier loop would be their "loop 0", aligned with rank 0's message
// loop, the level's order cyclic and each shape given its own copy of the barriers (6 barrier blocks, not 2).
TEST(SkelBuildTiBuilder, LoopsAreAlignedByTheirBodyNotTheirPosition) {
  auto calls = [](int r) {
    std::vector<Written> w;
    for (int i = 0; i < 3; ++i)
      if (r == 0) w.push_back({Kind::SEND, 0x51, 1, 1});
      else if (r == 1) w.push_back({Kind::RECV, 0x52, 0, 1});
    w.push_back({Kind::BARRIER, 0xB0});
    for (int i = 0; i < 2; ++i) w.push_back({Kind::BARRIER, 0xB1});
    return w;
  };
  const auto r = mksim::skeletons::builder::build_skeleton({written(3, calls), written(4, calls), written(8, calls)});
  EXPECT_EQ(count_ops(r.skeleton.at("body"), "barrier"), 2u) << r.skeleton.dump(1);
}

// atm2d without call sites: "red" ranks (even) run X then Y, "black" ranks (odd) Y then X, rank 0 only X. The
// two orders make a cycle; one copy per shape would be 5 barrier blocks (rank 0, red, black), one per class of
// shapes that agree is 4 (rank 0 agrees with both and shares the copy of the first class).
TEST(SkelBuildTiBuilder, ShapesThatAgreeShareOneCopyWhenOthersOrderCallsDifferently) {
  auto calls = [](int r) {
    const Written x{Kind::BARRIER, 0xA}, y{Kind::BARRIER, 0xB};
    if (r == 0) return std::vector<Written>{x};
    return r % 2 == 0 ? std::vector<Written>{x, y} : std::vector<Written>{y, x};
  };
  const auto r = mksim::skeletons::builder::build_skeleton({written(4, calls), written(8, calls), written(16, calls)});
  EXPECT_EQ(count_ops(r.skeleton.at("body"), "barrier"), 4u) << r.skeleton.dump(1);
}

}  // namespace

// The TI compute path (issue 23): `compute <flops>` lines of SMPI's TI traces (smpi_execute_flops) become compute
// blocks in flops, regressed over the runs like any number (here exactly 1000*N/P), instead of being dropped (a
// skeleton without compute). tests/ti_compute.c at P = 2, 4, 8 and N = 4000, 8000.
TEST_F(SkelBuildTiTest, ComputeLinesBecomeFlopsComputeBlocks) {
  if (std::system("command -v smpicc >/dev/null 2>&1 && command -v smpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no SMPI";
  const std::string exe = (tmp_ / "ti_compute").string();
  ASSERT_EQ(std::system(("smpicc -std=c99 -O1 -o " + exe + " " + SRC + "/tests/ti_compute.c >/dev/null 2>&1").c_str()), 0);
  std::vector<mksim::trace::Run> runs;
  for (int P : {2, 4, 8})
    for (int N : {4000, 8000}) {
      ASSERT_NO_FATAL_FAILURE(runs.push_back(smpi_ti_run(tmp_ / ("ti-" + std::to_string(P) + "-" + std::to_string(N)), exe, P,
                                                         std::to_string(N) + " 3")));
      runs.back().params["N"] = std::to_string(N);
    }
  std::string text;
  const Skeleton sk = build("ti_compute", runs, text);
  // every rank computes 1000*N/P flops before each of its 3 exchanges, at traced and untraced P
  for (int P : {4, 16})
    for (int rank : {0, 1, P - 1}) {
      auto frame = mksim::skeletons::bind_parameters(sk, P, {{"N", 6000}});
      double flops = 0;
      int blocks = 0;
      for (const ExpandedOp& x : mksim::skeletons::expand_rank(sk, frame, rank))
        if (x.kind == ExpandedOp::Kind::COMPUTE) {
          EXPECT_TRUE(x.in_flops) << text;
          flops += x.amount;
          blocks += x.amount > 0;
        }
      EXPECT_NEAR(flops, 3 * (1000.0 * 6000 / P), 1e-6) << "P=" << P << " rank " << rank << "\n" << text;
      EXPECT_EQ(blocks, 3) << text;
    }
}

// Compute between calls that edge ranks skip (issue 23): a non-periodic 2-D wavefront, two ranks per row
// (rank = x + 2*y): receive from the west and the north when there is one, the cell's work (100*N^2/P flops),
// send to the east and the south when there is one. A call carries the compute before it, so the work sat before
// the send east at a rank of the first column and before the send south at a rank of the second: each `if`
// then held a mixture of work and nothing, fitted over ranks that do different things, and the expansion at an
// untraced P gave some ranks the wrong work. The work is one block that every rank runs. The set-up work before
// the loop stays in the program (folded with the first iteration of ranks that receive first, it was once
// dropped when that iteration was taken back into the loop whose gap there has no work). Also the flops are
// written to six significant digits as SimGrid writes them, and the product N^2/P must be found from two
// problem sizes (the least-squares search once never tried N^2 with a coefficient that needs N^3 elsewhere).
TEST_F(SkelBuildTiTest, WorkBetweenCallsEdgeRanksSkipIsOneBlock) {
  std::vector<mksim::trace::Run> runs;
  const int K = 5;
  for (int P : {4, 8, 16})
    for (int N : {64, 128}) {
      const fs::path dir = tmp_ / ("wave-" + std::to_string(P) + "-" + std::to_string(N));
      fs::create_directories(dir);
      std::ofstream idx(dir / "index.txt");
      for (int r = 0; r < P; ++r) {
        const fs::path f = dir / ("rank-" + std::to_string(r) + ".txt");
        idx << f.string() << "\n";
        std::ofstream t(f);
        char work[64];
        std::snprintf(work, sizeof work, "%g", 100.0 * N * N / P);
        t << r << " init\n";
        std::snprintf(work, sizeof work, "%g", 50.0 * N * N / P);
        t << r << " compute " << work << "\n";  // set-up work before the loop
        std::snprintf(work, sizeof work, "%g", 100.0 * N * N / P);
        const int x = r % 2, y = r / 2, bytes = 8 * N;
        for (int k = 0; k < K; ++k) {
          if (x > 0) t << r << " recv " << r - 1 << " 1 " << bytes << " 0\n";
          if (y > 0) t << r << " recv " << r - 2 << " 2 " << bytes << " 0\n";
          t << r << " compute " << work << "\n";
          if (x < 1) t << r << " send " << r + 1 << " 1 " << bytes << " 0\n";
          if (y < P / 2 - 1) t << r << " send " << r + 2 << " 2 " << bytes << " 0\n";
        }
        t << r << " finalize\n";
      }
      idx.close();
      runs.push_back(mksim::trace::read_ti_run((dir / "index.txt").string()));
      runs.back().params["N"] = std::to_string(N);
    }
  std::string text;
  const Skeleton sk = build("wave", runs, text);
  // the loop's body: one compute block, outside every `if`, before the sends
  const nlohmann::json body = nlohmann::json::parse(text).at("body");
  const nlohmann::json* loop = nullptr;
  for (const auto& b : body)
    if (b.at("op") == "loop") loop = &b;
  ASSERT_NE(loop, nullptr) << text;
  std::size_t top = 0;
  for (const auto& b : loop->at("body")) top += b.at("op") == "compute";
  EXPECT_EQ(top, 1u) << text;
  EXPECT_EQ(count_ops(loop->at("body"), "compute"), 1u) << text;
  // Every rank's work at untraced P. Not exact yet: the last rank (no sends) folds its iterations as [work,
  // receive, receive], so its first iteration has no work and its last work comes after the loop; those two
  // shift the body's mean and add a small block after it (-0.8% of the total here). Before the work was placed
  // the last ranks of each column were 100% off or more (a mixture of work and nothing in one `if`).
  for (int P : {32, 64}) {
    auto frame = mksim::skeletons::bind_parameters(sk, P, {{"N", 96}});
    for (int rank : {0, 1, 2, 3, P - 2, P - 1}) {
      double flops = 0;
      for (const ExpandedOp& x : mksim::skeletons::expand_rank(sk, frame, rank))
        if (x.kind == ExpandedOp::Kind::COMPUTE) flops += x.amount;
      const double want = (50.0 + K * 100.0) * 96 * 96 / P;
      EXPECT_NEAR(flops, want, 0.02 * want) << "P=" << P << " rank " << rank << "\n" << text;
    }
  }
}

// The corpus' NPB CG-like solver (row and column reductions, a transpose exchange that diagonal ranks skip) from
// SimGrid TI traces at P = 4, 8 and two N: folded online with gaps with and without work apart (the SUMMA fix), its
// ranks aligned reductions of different iterations and the skeleton deadlocked at the very runs it came from.
// The builder then folds with gaps alike; the skeleton it writes pairs at every traced run and says why. Folded by
// the largest repeat first as well (the default), the first folding already pairs, without that fallback.
TEST_F(SkelBuildTiTest, CgFromTiPairsItsMessagesAtTheTracedRuns) {
  const std::string exe = BIN + "/apps-smpi/corpus/cg";
  if (!fs::exists(exe) || std::system("command -v smpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no SMPI build of the corpus";
  std::vector<mksim::trace::Run> runs;
  for (int P : {4, 8})
    for (int N : {4096, 8192}) {
      ASSERT_NO_FATAL_FAILURE(runs.push_back(smpi_ti_run(tmp_ / ("cg-" + std::to_string(P) + "-" + std::to_string(N)), exe, P,
                                                         std::to_string(N) + " 2 3")));
      runs.back().params["N"] = std::to_string(N);
    }
  auto fell_back = [](const mksim::skeletons::builder::BuildResult& r) {
    bool said = false;
    for (const std::string& w : r.warnings) said = said || w.find("folded with gaps with and without work alike") != std::string::npos;
    return said;
  };
  mksim::skeletons::builder::BuildOptions o;
  o.name = "cg";
  o.fold.largest_repeats = false;
  const auto online = mksim::skeletons::builder::build_skeleton(runs, o);
  EXPECT_TRUE(online.matching.empty()) << online.matching.front();
  EXPECT_TRUE(fell_back(online)) << "the fallback is not needed any more: drop this test's premise";
  o.fold.largest_repeats = true;
  const auto r = mksim::skeletons::builder::build_skeleton(runs, o);
  EXPECT_TRUE(r.matching.empty()) << r.matching.front();
  EXPECT_FALSE(fell_back(r));
}

// The corpus' sweep3d from SimGrid TI traces (P = 4, 8, 16; N = 16, mk = 4): eight octant pipelines in which
// ranks on an edge skip a receive or a send. Folded by where their work lies, a corner rank that only receives
// in one octant and only sends in the next (the last block's work runs into the next octant's first) folded its
// octants apart from the other ranks, and ranks inside the grid merged opposite octants into indexed loops: loop
// counts and peers were written per traced run and P = 32 refused. Now every rank is exact at P = 32 (4 x 8).
TEST_F(SkelBuildTiTest, Sweep3dOctantPipelinesExactAtUntracedP) {
  const std::string exe = BIN + "/apps-smpi/corpus/sweep3d";
  if (!fs::exists(exe) || std::system("command -v smpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no SMPI build of the corpus";
  auto sweep = [&](int P, int iters) {
    auto run = smpi_ti_run(tmp_ / ("sweep3d-" + std::to_string(P) + "-" + std::to_string(iters)), exe, P, "16 4 " + std::to_string(iters));
    run.params = {{"N", "16"}, {"mk", "4"}, {"iters", std::to_string(iters)}};
    return run;
  };
  std::vector<mksim::trace::Run> runs;
  for (auto [P, iters] : {std::pair{4, 2}, {4, 3}, {8, 2}, {16, 2}}) ASSERT_NO_FATAL_FAILURE(runs.push_back(sweep(P, iters)));
  mksim::trace::Run held;
  ASSERT_NO_FATAL_FAILURE(held = sweep(32, 2));
  mksim::skeletons::builder::BuildOptions o;
  o.name = "sweep3d";
  const auto r = mksim::skeletons::builder::build_skeleton(runs, o);
  const std::string text = r.skeleton.dump(2);
  EXPECT_EQ(text.find("no_exact_expression"), std::string::npos) << text;
  EXPECT_TRUE(r.matching.empty()) << text;
  const auto rep = mksim::skeletons::builder::compare_with_trace(mksim::skeletons::parse_skeleton(text, "sweep3d.json"), held,
                                                                  {{"N", 16}, {"mk", 4}, {"iters", 2}});
  EXPECT_EQ(rep.exact_ranks(), 32u) << text;
}

// The corpus program `name`, traced with smpirun -trace-ti at (P, iters) = (4, 2), (4, 3), (8, 2), (16, 2) and
// N = 32, built into `sk`: no number may be written per traced run, and the skeleton must pair at those runs.
// `more_n`: P = 4 and 8 traced at that N too (iters = 2), so that what depends on N can be told from what depends on P.
void corpus_ti_skeleton(const fs::path& tmp, const std::string& name, Skeleton& sk, std::vector<std::string>* warnings = nullptr,
                        int more_n = 0) {
  const std::string exe = BIN + "/apps-smpi/corpus/" + name;
  std::vector<mksim::trace::Run> runs;
  std::vector<std::array<int, 3>> at{{4, 32, 2}, {4, 32, 3}, {8, 32, 2}, {16, 32, 2}};
  if (more_n) at.push_back({4, more_n, 2}), at.push_back({8, more_n, 2});
  for (auto [P, N, iters] : at) {
    const std::string n = std::to_string(N), it = std::to_string(iters);
    ASSERT_NO_FATAL_FAILURE(runs.push_back(smpi_ti_run(tmp / (name + "-" + std::to_string(P) + "-" + n + "-" + it), exe, P, n + " " + it)));
    runs.back().params = {{"N", n}, {"iters", it}};
  }
  mksim::skeletons::builder::BuildOptions o;
  o.name = name;
  const auto r = mksim::skeletons::builder::build_skeleton(runs, o);
  const std::string text = r.skeleton.dump(2);
  EXPECT_EQ(text.find("no_exact_expression"), std::string::npos) << text;
  ASSERT_TRUE(r.matching.empty()) << r.matching.front();
  sk = mksim::skeletons::parse_skeleton(text, name + ".json");
  if (warnings) *warnings = r.warnings;
}

bool corpus_smpi_missing(const std::string& name) {
  return !fs::exists(BIN + "/apps-smpi/corpus/" + name) || std::system("command -v smpirun >/dev/null 2>&1") != 0;
}

// The corpus' NPB MG from SimGrid TI traces (P = 4, 8, 16; N = 32): comm3's MPI_Sendrecv halos on the periodic grid
// of MPI_Dims_create(P, 3), which no TI line declares, with sides of 2 (and of 1 at P = 4) but the first side of 4
// at P = 16. Before, the two shifts along a side of 2 folded into a loop of 2 that did not align with P = 16's two
// calls, and peers were written per traced run (P = 64 refused); then the first axis fitted the builder's own
// 2-D grid ((rank + P/2^floor(log2(P)/2)) % P, another rank at P = 64) and both halves of a shift went one way
// (a deadlock at 64). Now every peer is a neighbour on that grid, shifts go both ways, and it pairs at 32 and 64.
//
// Its work: the V-cycle's comm3 loop runs 3 levels - 1 times, with the work of each level before its halo (a level's
// work is an eighth of the one above), and MG's setup norm (two reductions) comes before the first V-cycle. Folded
// online, P = 4 and 8 wrote `norm [V-cycle norm] x iters` and P = 16 `[norm V-cycle] x iters norm`; the runs did not
// align, and the builder fell back to folding gaps with and without work alike, which averaged each level's work
// with the no-work gaps between its halves at P = 4 and 8 (half of it) but not at P = 16: the level loop's flops
// were fitted as 91*N*log2(N)^2 per iteration, no P in it, and MG from TI traces was 47-95% slow against SMPI. Now
// loops start at their earliest phase (fold.cpp), the level loop's flops are fitted per execution of the loop (its
// iterations' work differs, 116*N^3/P in all), and rank 0's flops at untraced P are the real program's within 2%.
TEST_F(SkelBuildTiTest, MgHalosOnTheGridOfDimsCreatePairAtUntracedP) {
  if (corpus_smpi_missing("mg")) GTEST_SKIP() << "no SMPI build of the corpus";
  Skeleton sk;
  std::vector<std::string> warnings;
  ASSERT_NO_FATAL_FAILURE(corpus_ti_skeleton(tmp_, "mg", sk, &warnings, 64));
  for (const std::string& w : warnings) EXPECT_EQ(w.find("alike"), std::string::npos) << w;
  for (const int P : {32, 64}) {
    const auto m = mksim::skeletons::check_matching(sk, mksim::skeletons::bind_parameters(sk, P, {{"N", 32}, {"iters", 2}}), P);
    EXPECT_TRUE(m.ok()) << "P = " << P << ": " << (m.problems.empty() ? std::string("skipped") : m.problems.front());
  }
  // rank 0's work at P = 32 and 64, against the TI trace of the real program there
  const std::string exe = BIN + "/apps-smpi/corpus/mg";
  for (const int P : {32, 64}) {
    const mksim::trace::Run held = smpi_ti_run(tmp_ / ("mg-held-" + std::to_string(P)), exe, P, "32 2");
    double traced = 0, skeleton = 0, traced_bytes = 0, skeleton_bytes = 0;
    for (const auto& t : held.ranks)
      if (t.rank == 0)
        for (const auto& e : t.events) {
          traced += e.gap_flops;
          if (e.kind == mksim::trace::Kind::SENDRECV) traced_bytes += static_cast<double>(e.bytes);
        }
    using Op = mksim::skeletons::ExpandedOp;
    for (const auto& op : mksim::skeletons::expand_rank(sk, mksim::skeletons::bind_parameters(sk, P, {{"N", 32}, {"iters", 2}}), 0)) {
      if (op.kind == Op::Kind::COMPUTE && op.in_flops) skeleton += op.amount;
      if (op.kind == Op::Kind::ISEND || op.kind == Op::Kind::SEND) skeleton_bytes += op.size_bytes;
    }
    ASSERT_GT(traced, 0) << "P = " << P;
    EXPECT_NEAR(skeleton / traced, 1.0, 0.02) << "P = " << P << ": skeleton " << skeleton << " flops, traced " << traced;
    // sizes are means over the levels (sizes as statistics), fitted per execution of the level loop: at N = 32 the
    // blocks of P = 64 have sides of 8, whose faces' ghost cells (NPB's (m + 2) m) the traced sides of 16 and 32 weigh
    // less: 10.6% and 20.8% over (per iteration, as before: 58% and 460%)
    EXPECT_NEAR(skeleton_bytes / traced_bytes, 1.0, 0.25) << "P = " << P << ": skeleton " << skeleton_bytes << " bytes, traced " << traced_bytes;
  }
}

// The corpus' NPB FT-like program from SMPI's TI traces: a forward 3-D FFT (two all-to-alls) before the loop, then
// per iteration the inverse FFT's two and a checksum reduction. Folded at the tail as events came, the forward
// FFT's calls merged with the first iteration's, differently with 2 and 3 iterations, and the runs did not align:
// the skeleton did not pair at the traced runs (27 problems) and the replay deadlocked at every P. The largest
// repeat first (fold.cpp) gives every run one shape. (TI names no communicator: the row and column all-to-alls are
// replayed on MPI_COMM_WORLD, which the reader's warning says.)
TEST_F(SkelBuildTiTest, FtSetupFftBeforeItsLoopPairsAtUntracedP) {
  if (corpus_smpi_missing("ft")) GTEST_SKIP() << "no SMPI build of the corpus";
  Skeleton sk;
  ASSERT_NO_FATAL_FAILURE(corpus_ti_skeleton(tmp_, "ft", sk));
  for (const int P : {32, 64})
    for (const int iters : {2, 5}) {
      const auto m = mksim::skeletons::check_matching(sk, mksim::skeletons::bind_parameters(sk, P, {{"N", 64}, {"iters", double(iters)}}), P);
      EXPECT_TRUE(m.ok()) << "P = " << P << ", iters = " << iters << ": " << (m.problems.empty() ? std::string("skipped") : m.problems.front());
    }
}
