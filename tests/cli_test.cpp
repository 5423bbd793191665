// The mksim command line end to end (real SimGrid, real HDF5): outputs, exit codes, and that failures
// leave no result file behind. One simulation per test (per process).
#include "results/hdf5_io.hpp"
#include "sim/cli/cli.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <cstdlib>
#include <sstream>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using mksim::sim::run_cli;

namespace {

struct CliRun {
  int code;
  std::string out;
  std::string err;
};

CliRun cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  int code = run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

fs::path tmpdir() {
  fs::path d = fs::temp_directory_path() / ("mksim_cli_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string src(const std::string& rel) { return std::string(MKSIM_SOURCE_DIR) + "/" + rel; }

}  // namespace

TEST(Cli, VersionAndHelp) {
  CliRun v = cli({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out.rfind("mksim ", 0), 0u);
  CliRun h = cli({"--help"});
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--platform"), std::string::npos);
  EXPECT_EQ(cli({}).code, 2);
}

TEST(Cli, PredictsAtm2dOnParagonAndWritesHdf5) {
  fs::path out = tmpdir() / "atm2d.h5";
  CliRun r = cli({"--platform", src("platforms/paragon.xml"), "--P", "16", "--skeleton", src("skeletons/examples/atm2d.json"),
               "--param", "N=256", "-o", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("predicted"), std::string::npos) << r.out;
  auto res = mksim::results::read_run_hdf5(out.string());
  ASSERT_EQ(res.ranks.size(), 16u);
  EXPECT_GT(res.predicted_time_s, 0);
  std::map<std::string, std::string> a(res.attributes.begin(), res.attributes.end());
  EXPECT_EQ(a["param.N"], "256");
  EXPECT_EQ(a["P"], "16");
  EXPECT_EQ(a["simgrid.network/model"], "CM02");
  // 4x4 ranks, 10 steps: 2*(4*3) neighbour pairs exchange both ways each step.
  EXPECT_EQ(res.total_messages, 10u * 2 * 24);
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
}

TEST(Cli, Atm2dOnTheTorusCompletesWithEveryMessage) {
  // Regression: at P=64 ranks are interrupted in their compute sleep to post transfer sides at the very
  // instant their sleep ends; the stale wake-up that leaves must not be mistaken for a deadlock.
  CliRun r = cli({"--platform", src("platforms/t3e.xml"), "--P", "64", "--param", "N=1024"});
  ASSERT_EQ(r.code, 0) << r.err;
  // 8x8 ranks, 10 steps: 2*(8*7) neighbour pairs exchange both ways each step.
  EXPECT_NE(r.out.find("messages          2240\n"), std::string::npos) << r.out;
}

namespace {

/** Runs the real mksim binary (one simulation per process); returns its stdout. */
std::string run_binary(const std::string& args) {
  fs::path out = tmpdir() / "stdout.txt";
  std::string cmd = std::string(MKSIM_BINARY_DIR) + "/sim/mksim " + args + " > " + out.string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

TEST(Cli, SameInputsGiveByteIdenticalResults) {
  // master_worker draws task lengths from seeded per-rank generators: same seed, same bytes; another
  // seed, another prediction.
  fs::path d = tmpdir();
  std::string common = "--platform " + src("platforms/paragon.xml") + " --P 16 --skeleton " +
                       src("skeletons/examples/master_worker.json");
  std::string a = run_binary(common + " --seed 7 -o " + (d / "a.h5").string());
  std::string b = run_binary(common + " --seed 7 -o " + (d / "b.h5").string());
  std::string c = run_binary(common + " --seed 8 -o " + (d / "c.h5").string());
  EXPECT_EQ(file_bytes(d / "a.h5"), file_bytes(d / "b.h5"));
  EXPECT_EQ(a.substr(0, a.find("results:")), b.substr(0, b.find("results:")));
  EXPECT_NE(a.substr(0, a.find('\n')), c.substr(0, c.find('\n'))) << a << c;
}

TEST(Cli, BundledPlatformNameResolves) {
  CliRun r = cli({"--platform", "paragon", "--P", "4", "--param", "N=64", "--param", "steps=1"});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(Cli, UnknownParameterIsAUsageError) {
  CliRun r = cli({"--platform", src("platforms/paragon.xml"), "--P", "4", "--param", "Nx=3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown parameter \"Nx\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("atm2d.json"), std::string::npos) << r.err;
}

TEST(Cli, MissingOptionAndBadValues) {
  EXPECT_EQ(cli({"--platform", src("platforms/paragon.xml")}).code, 2);
  EXPECT_EQ(cli({"--platform", src("platforms/paragon.xml"), "--P", "4", "--param", "N=abc"}).code, 2);
  EXPECT_EQ(cli({"--platform", "/nonexistent.xml", "--P", "4"}).code, 2);
  EXPECT_EQ(cli({"frobnicate"}).code, 2);
}

TEST(Cli, TooManyRanksFailsAndWritesNothing) {
  fs::path out = tmpdir() / "too_many.h5";
  CliRun r = cli({"--platform", src("platforms/paragon.xml"), "--P", "1024", "-o", out.string()});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("only 256 compute hosts"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(Cli, DeadlockExitsThreeAndWritesNothing) {
  fs::path dir = tmpdir();
  fs::path skel = dir / "dead.json";
  std::ofstream(skel) << R"({"format":"mksim-skeleton","version":1,"name":"dead",
    "body":[{"op":"recv","id":"wait-forever","peer":"(rank + 1) % P","size":8}]})";
  fs::path out = dir / "dead.h5";
  CliRun r = cli({"--platform", src("platforms/t3e.xml"), "--P", "8", "--skeleton", skel.string(), "-o", out.string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("deadlock at P=8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wait-forever"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(Cli, MissingOutputDirectoryIsCaughtBeforeSimulating) {
  CliRun r = cli({"--platform", src("platforms/paragon.xml"), "--P", "4", "-o", "/nonexistent/dir/x.h5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent/dir"), std::string::npos);
}

TEST(Cli, CheckValidatesWithoutSimulating) {
  CliRun r = cli({"check", "--skeleton", src("skeletons/examples/atm2d.json"), "--P", "64"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("is valid"), std::string::npos);
  fs::path bad = tmpdir() / "bad.json";
  std::ofstream(bad) << R"({"format":"mksim-skeleton","version":1,"body":[{"op":"send","peer":"rank+1","size":8}]})";
  CliRun b = cli({"check", "--skeleton", bad.string(), "--P", "4"});
  EXPECT_EQ(b.code, 2);
  EXPECT_NE(b.err.find("bad.json: /body/0: at P=4, rank 3: destination"), std::string::npos) << b.err;
}

TEST(Cli, PlatformGeneratorWritesLoadableFile) {
  fs::path out = tmpdir() / "mesh.xml";
  CliRun r = cli({"platform", "--machine", "paragon", "--nodes", "64", "-o", out.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out));
  CliRun sim = cli({"--platform", out.string(), "--P", "64", "--param", "N=128", "--param", "steps=2"});
  EXPECT_EQ(sim.code, 0) << sim.err;
  EXPECT_EQ(cli({"platform", "--machine", "cm5", "--nodes", "64", "-o", out.string()}).code, 2);
}

TEST(Cli, MkskelShowPrintsRegionsAndDistributions) {
  fs::path skel = tmpdir() / "v2.json";
  std::ofstream(skel) << R"({"format":"mksim-skeleton","version":2,"name":"v2","body":[
    {"op":"region","name":"solve","body":[{"op":"loop","count":3,"body":[
      {"op":"compute","seconds":0.001,"dist":{"type":"lognormal","cv":"0.2"}},
      {"op":"compute","seconds":0.002,"dist":{"type":"empirical","quantiles":[0.5,0.6,0.7,0.8,0.9,1,1.1,1.2,1.3,1.4,1.5]}}]}]}]})";
  std::ostringstream out, err;
  ASSERT_EQ(mksim::sim::run_mkskel({"show", skel.string()}, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("  region name=solve\n    loop count=3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("compute seconds=0.001 dist=lognormal(cv 0.2)"), std::string::npos) << text;
  EXPECT_NE(text.find("compute seconds=0.002 dist=empirical(min 0.5, median 1, max 1.5 x mean)"), std::string::npos) << text;
  CliRun check = cli({"check", "--skeleton", skel.string(), "--P", "4"});
  EXPECT_EQ(check.code, 0) << check.err;
}

// Issue 20: Ctrl-C (SIGINT) stops a long replay cleanly, with a message and no result file.
TEST(Cli, InterruptStopsALongReplayAndWritesNothing) {
  const fs::path out = tmpdir() / "interrupted.h5";
  const fs::path log = tmpdir() / "interrupted.txt";
  const std::string bin = std::string(MKSIM_BINARY_DIR) + "/sim/mksim";
  const std::string plat = src("platforms/t3e.xml"), sk = src("skeletons/examples/atm2d.json");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // about 10^9 steps: hours if nothing stops it
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(bin.c_str(), bin.c_str(), "--platform", plat.c_str(), "--P", "4", "--skeleton", sk.c_str(), "--param",
            "steps=1000000000", "-o", out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // let it load and replay for a while: 2 s of its CPU time (the handler is installed when the replay starts; on a
  // loaded machine, under ASan, 2 s of wall time were sometimes still the loading, and SIGINT killed it there)
  const auto cpu_seconds = [pid] {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) return 0.0;
    std::istringstream fields(text.substr(close + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i)
      if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
    return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
  };
  for (int waited_ms = 0; cpu_seconds() < 2.0 && waited_ms < 120000; waited_ms += 50) ::usleep(50000);
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_NE(WEXITSTATUS(status), 0);
  std::ifstream f(log);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_NE(text.str().find("interrupted (Ctrl-C): no result written"), std::string::npos) << text.str();
  EXPECT_FALSE(fs::exists(out));
}
