// Parameter sweeps end to end (real SimGrid in child processes, real HDF5, real mpirun): the grid, the table's
// HDF5 form, failures recorded per point, resumption after a kill, the distributed mode under OpenMPI's
// mpirun giving the same table as the local pool, and the pandas reading the README shows.
#include "results/sweep_table.hpp"
#include "sim/cli/cli.hpp"
#include "sim/engine/isolate.hpp"
#include "sim/sweep/sweep.hpp"
#include "skeletons/skeleton_io.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using mksim::results::SweepRow;
using mksim::results::SweepTable;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;
const std::string MKSIM = std::string(MKSIM_BINARY_DIR) + "/sim/mksim";

struct CliRun {
  int code;
  std::string out;
  std::string err;
};

CliRun cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = mksim::sim::run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

fs::path tmpdir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("mksim_sweep_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Runs a shell command; its exit code and standard output.
std::pair<int, std::string> shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Two tables hold the same rows with the same values (wall-clock columns aside).
void expect_same_rows(const SweepTable& a, const SweepTable& b) {
  ASSERT_EQ(a.param_names, b.param_names);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    const SweepRow &x = a.rows[i], &y = b.rows[i];
    EXPECT_EQ(x.platform, y.platform) << i;
    EXPECT_EQ(x.P, y.P) << i;
    EXPECT_EQ(x.params, y.params) << i;
    for (auto [p, q] : {std::pair{&x.replay, &y.replay}, std::pair{&x.model, &y.model}}) {
      EXPECT_EQ(p->status, q->status) << i;
      EXPECT_EQ(p->error, q->error) << i;
      EXPECT_TRUE(same(p->time_s, q->time_s)) << i << ": " << p->time_s << " vs " << q->time_s;
      EXPECT_TRUE(same(p->compute_s, q->compute_s)) << i;
      EXPECT_TRUE(same(p->comm_s, q->comm_s)) << i;
      EXPECT_TRUE(same(p->wait_s, q->wait_s)) << i;
      EXPECT_EQ(p->messages, q->messages) << i;
    }
  }
}

const std::vector<std::string> PGE1_GRID = {"--skeleton", SRC + "/skeletons/examples/pge1.json", "--platform", "paragon,t3e",
                                            "--P", "4..16:x2", "--param", "K=1..64:x4", "--param", "N=512"};

}  // namespace

TEST(SweepGrid, ExpandsPlatformsThenPThenParametersInNameOrder) {
  mksim::sim::SweepGrid g;
  g.platforms = {"b", "a"};
  g.Ps = {8, 4};
  g.params = {{"K", {1, 2, 3}}, {"N", {10, 20}}};
  const auto pts = mksim::sim::expand_grid(g);
  ASSERT_EQ(pts.size(), 2u * 2u * 3u * 2u);
  EXPECT_EQ(pts.front().key, "b|P=8|K=1|N=10");
  EXPECT_EQ(pts[1].key, "b|P=8|K=1|N=20");
  EXPECT_EQ(pts[2].key, "b|P=8|K=2|N=10");
  EXPECT_EQ(pts[6].key, "b|P=4|K=1|N=10");
  EXPECT_EQ(pts.back().key, "a|P=4|K=3|N=20");
  g.params.clear();
  EXPECT_EQ(mksim::sim::expand_grid(g).size(), 4u);
}

TEST(SweepTable, RoundTripsExactlyWithNaNAndStrings) {
  SweepTable t;
  t.param_names = {"K", "N"};
  t.attributes = {{"mode", "both"}, {"skeleton.hash", "00ff"}};
  SweepRow a{"paragon", 16, {4, 512}, {}, {}};
  a.replay.status = "ok";
  a.replay.time_s = 0.1 + 1e-17;
  a.replay.compute_s = 0.07;
  a.replay.comm_s = 0.02;
  a.replay.wait_s = 0.01;
  a.replay.messages = 123456789012ull;
  a.replay.wall_s = 1.5;
  SweepRow b{"t3e", 4096, {1, 1024}, {}, {}};
  b.model.status = "error";
  b.model.error = "the platform has 512 hosts, fewer than P=4096 — ü";
  t.rows = {a, b};
  const fs::path f = tmpdir("roundtrip") / "t.h5";
  mksim::results::write_sweep_hdf5(f.string(), t);
  const SweepTable r = mksim::results::read_sweep_hdf5(f.string());
  expect_same_rows(t, r);
  EXPECT_EQ(r.rows[0].replay.wall_s, 1.5);
  EXPECT_EQ(r.attributes, t.attributes);
  EXPECT_EQ(r.rows[0].status(), "ok");
  EXPECT_EQ(r.rows[1].status(), "failed");
  EXPECT_TRUE(std::isnan(r.rows[1].model.time_s));
  EXPECT_EQ(r.rows[1].replay.status, "not run");
}

TEST(SweepTable, RefusesReservedParameterNamesAndNamesTheFileOnBadInput) {
  SweepTable t;
  t.param_names = {"status"};
  const fs::path dir = tmpdir("bad");
  EXPECT_THROW(mksim::results::write_sweep_hdf5((dir / "x.h5").string(), t), std::runtime_error);
  EXPECT_FALSE(fs::exists(dir / "x.h5"));
  std::ofstream(dir / "junk.h5") << "not hdf5 at all";
  try {
    mksim::results::read_sweep_hdf5((dir / "junk.h5").string());
    FAIL() << "read junk";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("junk.h5"), std::string::npos) << e.what();
  }
}

TEST(SweepTable, BestOverPicksTheLeastTimePerGroup) {
  SweepTable t;
  t.param_names = {"K"};
  auto row = [](int P, double K, double time) {
    SweepRow r{"m", P, {K}, {}, {}};
    r.replay.status = "ok";
    r.replay.time_s = time;
    return r;
  };
  t.rows = {row(4, 1, 3.0), row(4, 2, 1.0), row(4, 4, 2.0), row(8, 1, 0.5), row(8, 2, 0.7)};
  SweepRow failed{"m", 8, {4}, {}, {}};
  failed.replay.status = "deadlock";
  t.rows.push_back(failed);
  const auto best = mksim::results::best_over(t, "K", "replay");
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].best, "2");
  EXPECT_EQ(best[0].time_s, 1.0);
  EXPECT_EQ(best[0].runner_up_s, 2.0);
  EXPECT_EQ(best[0].candidates, 3);
  EXPECT_EQ(best[1].best, "1");
  EXPECT_EQ(best[1].candidates, 2);  // the deadlocked K=4 is not a candidate
  EXPECT_THROW(mksim::results::best_over(t, "Q", "replay"), std::invalid_argument);
  EXPECT_THROW(mksim::results::best_over(t, "K", "wall"), std::invalid_argument);
}

// Both methods at 30 points; the replay values are those of an independent single replay, and for PGE1 (an
// eager pipeline, exact in the model) the model agrees with replay to 0.1%.
TEST(Sweep, BothMethodsAgreeWithSingleRunsAndWithEachOther) {
  const fs::path dir = tmpdir("both");
  const fs::path out = dir / "s.h5";
  std::vector<std::string> args{"sweep"};
  args.insert(args.end(), PGE1_GRID.begin(), PGE1_GRID.end());
  for (const char* a : {"--mode", "both", "--no-skew", "-q", "--best", "K"}) args.push_back(a);
  args.push_back("-o");
  args.push_back(out.string());
  const CliRun r = cli(args);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("best K by replay"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "s.h5.sweep")) << "the journal is removed once the table holds everything";
  const SweepTable t = mksim::results::read_sweep_hdf5(out.string());
  ASSERT_EQ(t.param_names, (std::vector<std::string>{"K", "N"}));
  ASSERT_EQ(t.rows.size(), 2u * 3u * 4u);
  for (const SweepRow& row : t.rows) {
    ASSERT_EQ(row.status(), "ok") << row.replay.error << row.model.error;
    EXPECT_NEAR(row.model.time_s / row.replay.time_s, 1.0, 1e-3) << row.platform << " P=" << row.P << " K=" << row.params[0];
    EXPECT_NEAR(row.replay.compute_s + row.replay.comm_s + row.replay.wait_s, row.replay.time_s, 1e-9 * row.replay.time_s);
    EXPECT_GT(row.replay.messages, 0u);
  }
  // One point replayed on its own.
  const SweepRow& pick = t.rows[7];  // paragon, P=8, K=64
  ASSERT_EQ(pick.platform, "paragon");
  mksim::sim::ReplayOptions ro;
  ro.platform_path = SRC + "/platforms/paragon.xml";
  ro.P = pick.P;
  ro.params = {{"K", pick.params[0]}, {"N", pick.params[1]}};
  const auto single = mksim::sim::replay_in_child(mksim::skeletons::load_skeleton(SRC + "/skeletons/examples/pge1.json"), ro);
  EXPECT_EQ(single.predicted_time_s, pick.replay.time_s);
  // The same question from the table alone.
  const CliRun q = cli({"sweep", "--from", out.string(), "--best", "K", "--metric", "model"});
  EXPECT_EQ(q.code, 0) << q.err;
  EXPECT_NE(q.out.find("platform\tP\tN\tK\ttime_s"), std::string::npos) << q.out;
}

// Bad points are recorded, the rest completes: more ranks than the platform has, and a deadlock.
TEST(Sweep, FailingPointsAreRecordedAndDoNotStopTheSweep) {
  const fs::path dir = tmpdir("fail");
  const fs::path skel = dir / "halfdead.json";
  // Deadlocks when W > 0: every rank receives first.
  std::ofstream(skel) << R"({"format":"mksim-skeleton","version":1,"name":"halfdead","params":{"W":{"default":0}},
    "body":[{"op":"if","cond":"W > 0","then":[{"op":"recv","id":"stuck","peer":"(rank + 1) % P","size":8}]},
            {"op":"compute","flops":"1e6"}]})";
  const fs::path out = dir / "f.h5";
  const CliRun r = cli({"sweep", "--skeleton", skel.string(), "--platform", "t3e", "--P", "4,1024", "--param", "W=0,1",
                        "-q", "-o", out.string()});
  EXPECT_EQ(r.code, 1) << r.err << r.out;
  EXPECT_NE(r.out.find("3 failed"), std::string::npos) << r.out;
  const SweepTable t = mksim::results::read_sweep_hdf5(out.string());
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[0].replay.status, "ok");
  EXPECT_EQ(t.rows[1].replay.status, "deadlock");
  EXPECT_NE(t.rows[1].replay.error.find("stuck"), std::string::npos) << t.rows[1].replay.error;
  EXPECT_EQ(t.rows[2].replay.status, "error");
  EXPECT_NE(t.rows[2].replay.error.find("1024"), std::string::npos) << t.rows[2].replay.error;
}

TEST(Sweep, ATimeLimitKillsTheSimulationAndSaysSo) {
  const fs::path dir = tmpdir("timeout");
  const fs::path out = dir / "t.h5";
  const CliRun r = cli({"sweep", "--platform", "paragon", "--P", "256", "--param", "steps=200", "--timeout", "0.05", "-q", "-o",
                        out.string()});
  EXPECT_EQ(r.code, 1) << r.err;
  const SweepTable t = mksim::results::read_sweep_hdf5(out.string());
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].replay.status, "timeout");
  EXPECT_NE(t.rows[0].replay.error.find("0.05 s"), std::string::npos);
}

TEST(Sweep, UsageErrors) {
  const fs::path out = tmpdir("usage") / "u.h5";
  EXPECT_EQ(cli({"sweep", "--platform", "paragon", "--P", "4", "--param", "Q=1", "-o", out.string()}).code, 2);
  EXPECT_EQ(cli({"sweep", "--platform", "paragon", "--P", "4..2", "-o", out.string()}).code, 2);
  EXPECT_EQ(cli({"sweep", "--platform", "paragon", "--P", "4", "--param", "N=1..8:x1", "-o", out.string()}).code, 2);
  EXPECT_EQ(cli({"sweep", "--platform", "nowhere", "--P", "4", "-o", out.string()}).code, 2);
  EXPECT_EQ(cli({"sweep", "--platform", "paragon", "--P", "4", "--mode", "fast", "-o", out.string()}).code, 2);
  EXPECT_EQ(cli({"sweep", "--platform", "paragon", "--P", "4"}).code, 2);
  EXPECT_FALSE(fs::exists(out));
}

// The same grid from a configuration file; a table made from another skeleton is not overwritten.
TEST(Sweep, ConfigFileAndForeignTables) {
  const fs::path dir = tmpdir("config");
  const fs::path out = dir / "c.h5";
  std::ofstream(dir / "grid.cfg") << "skeleton = " << SRC << "/skeletons/examples/pge1.json\nplatform = paragon\nP = 4,8\n"
                                  << "param = K=4,8\nmode = model\noutput = " << out.string() << "\n";
  CliRun r = cli({"sweep", "--config", (dir / "grid.cfg").string(), "-q"});
  ASSERT_EQ(r.code, 0) << r.err;
  const SweepTable t = mksim::results::read_sweep_hdf5(out.string());
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[3].params, std::vector<double>{8});
  EXPECT_EQ(t.rows[3].replay.status, "not run");
  EXPECT_EQ(t.rows[3].model.status, "ok");
  // Rerunning resumes: nothing to compute.
  r = cli({"sweep", "--config", (dir / "grid.cfg").string(), "-q"});
  EXPECT_NE(r.out.find("0 results computed, 4 reused"), std::string::npos) << r.out;
  r = cli({"sweep", "--skeleton", "atm2d", "--platform", "paragon", "--P", "4", "--param", "K=4", "-o", out.string()});
  EXPECT_EQ(r.code, 2);  // atm2d has no K
  r = cli({"sweep", "--skeleton", "pge2", "--platform", "paragon", "--P", "4", "--param", "K=4", "-q", "-o", out.string()});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("another skeleton"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("c.h5"), std::string::npos) << r.err;
}

// Killed halfway (SIGKILL, no chance to clean up), the same command finishes the rest and gives the table an
// uninterrupted sweep gives.
TEST(Sweep, ResumesAfterAKillWithTheSameTable) {
  const fs::path dir = tmpdir("resume");
  const fs::path out = dir / "r.h5", clean = dir / "clean.h5";
  // 15 points, about 2.5 s here: after the second result more than a second of work remains, so a loaded machine that
  // wakes the poller late still kills the sweep halfway (8 points of 0.06 s had let it finish first under a busy CI).
  const std::string grid = " --platform paragon --P 16..256:x2 --param steps=20,40,80 -j 1 -q --skeleton " + SRC +
                           "/skeletons/examples/atm2d.json";
  ASSERT_EQ(shell(MKSIM + " sweep" + grid + " -o " + clean.string()).first, 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    const std::string sk = SRC + "/skeletons/examples/atm2d.json", o = out.string();
    ::execl(MKSIM.c_str(), "mksim", "sweep", "--platform", "paragon", "--P", "16..256:x2", "--param", "steps=20,40,80", "-j", "1",
            "-q", "--skeleton", sk.c_str(), "-o", o.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait for the second result in the journal (header + 2 lines), then kill the whole sweep. No fixed time limit: the
  // largest P come first, and under the sanitizers on a loaded CI machine each of them takes tens of seconds (a
  // 30-second limit failed there). The wait ends when the results are there or when the sweep has exited.
  const fs::path journal = dir / "r.h5.sweep" / "journal-local.jsonl";
  bool seen = false, exited = false;
  int status = 0;
  while (!seen && !exited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream in(journal);
    int lines = 0;
    for (std::string l; std::getline(in, l);) ++lines;
    seen = lines >= 3;
    exited = !seen && ::waitpid(pid, &status, WNOHANG) == pid;
  }
  ASSERT_TRUE(seen) << "the sweep exited (status " << status << ") before it journaled two results";
  ::kill(pid, SIGKILL);  // its simulations die with it (PR_SET_PDEATHSIG)
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep finished before the kill";
  const auto [code, text] = shell(MKSIM + " sweep" + grid + " -o " + out.string());
  ASSERT_EQ(code, 0) << text;
  EXPECT_EQ(text.find(" 0 reused"), std::string::npos) << text;
  EXPECT_EQ(text.find(" 0 results computed"), std::string::npos) << "the kill came after the last point: " << text;
  EXPECT_NE(text.find("reused from an earlier run"), std::string::npos) << text;
  expect_same_rows(mksim::results::read_sweep_hdf5(clean.string()), mksim::results::read_sweep_hdf5(out.string()));
}

// Under mpirun the ranks share the points and rank 0 writes one table: the same rows and values as the local pool.
TEST(Sweep, MpirunSharesThePointsAndGivesTheLocalTable) {
  if (shell("command -v mpirun").first != 0) GTEST_SKIP() << "no mpirun";
  const fs::path dir = tmpdir("mpi");
  const std::string grid = " --platform paragon,t3e --P 4..32:x2 --param K=1,8,64 --mode both -q --skeleton " + SRC +
                           "/skeletons/examples/pge1.json";
  ASSERT_EQ(shell(MKSIM + " sweep" + grid + " -o " + (dir / "local.h5").string()).first, 0);
  const auto [code, text] =
      shell("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 "
            "mpirun --oversubscribe -np 4 " + MKSIM + " sweep" + grid + " -o " + (dir / "mpi.h5").string() + " 2>&1");
  ASSERT_EQ(code, 0) << text;
  EXPECT_NE(text.find("sweep: 24 points, 48 results computed"), std::string::npos) << text;
  expect_same_rows(mksim::results::read_sweep_hdf5((dir / "local.h5").string()),
                   mksim::results::read_sweep_hdf5((dir / "mpi.h5").string()));
  EXPECT_FALSE(fs::exists(dir / "mpi.h5.sweep"));
}

// The three lines of the README read the table into pandas.
TEST(Sweep, PandasReadsTheTableInThreeLines) {
  if (shell("/usr/bin/python3 -c 'import h5py, pandas' 2>/dev/null").first != 0) GTEST_SKIP() << "no h5py/pandas";
  const fs::path dir = tmpdir("pandas");
  const fs::path out = dir / "p.h5";
  ASSERT_EQ(cli({"sweep", "--skeleton", "pge1", "--platform", "paragon", "--P", "4,8", "--param", "K=2,4", "--mode", "model",
                 "-q", "-o", out.string()})
                .code,
            0);
  std::ofstream(dir / "read.py") << "import h5py, pandas as pd\n"
                                 << "df = pd.DataFrame(h5py.File('" << out.string() << "')['sweep'][()])\n"
                                 << "df = df.apply(lambda c: c.str.decode('utf-8') if c.dtype == object else c)\n"
                                 << "print(len(df), ','.join(df.columns[:4]), df.platform[0], df.model_status[3], "
                                    "df.loc[df[df.P == 8].model_s.idxmin(), 'K'])\n";
  const auto [code, text] = shell("/usr/bin/python3 " + (dir / "read.py").string());
  ASSERT_EQ(code, 0) << text;
  const SweepTable t = mksim::results::read_sweep_hdf5(out.string());
  const double best_K = t.rows[2].model.time_s < t.rows[3].model.time_s ? 2 : 4;
  EXPECT_EQ(text, "4 platform,P,K,status paragon ok " + std::string(best_K == 2 ? "2.0" : "4.0") + "\n");
}

// The journal: a torn last line (a crash mid-append) is skipped with a note and its point computed again; a
// malformed line before the end is an error naming the file and the line.
TEST(Sweep, JournalTornLineIsSkippedAndCorruptLineIsNamed) {
  const fs::path dir = tmpdir("journal");
  const fs::path out = dir / "j.h5";
  const std::vector<std::string> args{"sweep", "--skeleton", "pge1", "--platform", "paragon", "--P", "4,8", "--mode", "model",
                                      "-q", "-o", out.string()};
  ASSERT_EQ(cli(args).code, 0);
  const SweepTable full = mksim::results::read_sweep_hdf5(out.string());
  std::string hash;
  for (const auto& [k, v] : full.attributes)
    if (k == "skeleton.hash") hash = v;
  fs::remove(out);
  const fs::path state = dir / "j.h5.sweep";
  fs::create_directories(state);
  const std::string header = R"({"mksim-sweep-journal":1,"params":[],"skeleton.hash":")" + hash + "\"}\n";
  const std::string record = R"({"comm_s":1.0,"compute_s":2.0,"error":"","key":"paragon|P=4","messages":0,"part":"model","status":"ok","time_s":3.0,"wait_s":null,"wall_s":0.5})";
  std::ofstream(state / "journal-local.jsonl") << header << record << "\n" << R"({"comm_s":1.0,"comp)";
  CliRun r = cli(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("journal-local.jsonl:3: skipping a torn last line"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("1 results computed, 1 reused"), std::string::npos) << r.out;
  const SweepTable t = mksim::results::read_sweep_hdf5(out.string());
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].model.time_s, 3.0);  // from the journal, not recomputed
  EXPECT_EQ(t.rows[1].model.time_s, full.rows[1].model.time_s);

  fs::remove(out);
  fs::create_directories(state);
  std::ofstream(state / "journal-local.jsonl") << header << "{not json\n" << record << "\n";
  r = cli(args);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("journal-local.jsonl:2: malformed journal line"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}
