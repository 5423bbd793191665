// `mkskel build` through its command line (run_mkskel, what the binary runs): traced runs of a real program
// (skeletons/apps/atm2d under mktrace, traced once for the whole binary's one test of them), SimGrid TI traces with
// their parameters given as FILE::NAME=VALUE, --strict writing nothing, the output replaced atomically (never a
// partial or stale file, no temporary left beside it), and the exit codes the README gives. The OTF2 form of
// FILE::NAME=VALUE is in tests/otf2_test.cpp, next to the OTF2 writer.
#include "sim/cli/cli.hpp"
#include "skeletons/skeleton_io.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::string BIN = MKSIM_BINARY_DIR;

struct CliRun {
  int code = -1;
  std::string out, err;
};

CliRun mkskel(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliRun r;
  r.code = mksim::sim::run_mkskel(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/** @brief The names in `dir` other than `keep` (a temporary file left beside the output shows here). */
std::vector<std::string> others(const fs::path& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (std::find(keep.begin(), keep.end(), n) == keep.end()) v.push_back(n);
  }
  return v;
}

class MkskelBuildCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    tmp_ = fs::temp_directory_path() / ("mksim_mkskel_cli_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_ / "out");
  }
  void TearDown() override { fs::remove_all(tmp_); }

  // mktrace -np P --param N=.. --param steps=.. -- atm2d N steps
  std::string traced(int P, int N, int steps) {
    const fs::path dir = tmp_ / ("atm2d-" + std::to_string(P) + "-" + std::to_string(N));
    const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + BIN + "/trace/mktrace -np " + std::to_string(P) +
                            " --param N=" + std::to_string(N) + " --param steps=" + std::to_string(steps) + " -o " + dir.string() +
                            " -- " + BIN + "/apps/atm2d " + std::to_string(N) + " " + std::to_string(steps) + " >" + dir.string() +
                            ".log 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd << "\n" << slurp(dir.string() + ".log");
    return dir.string();
  }

  // A SimGrid TI trace of a 2-rank ring (`steps` exchanges of N doubles, then compute), as smpirun -trace-ti writes one
  std::string ti_ring(const std::string& name, int N, int steps) {
    const fs::path dir = tmp_ / name;
    fs::create_directories(dir);
    std::string index;
    for (int r = 0; r < 2; ++r) {
      std::ofstream f(dir / ("rank-" + std::to_string(r) + ".txt"));
      f << r << " init\n";
      for (int s = 0; s < steps; ++s)
        f << r << " irecv " << 1 - r << " 1 " << N << " 0\n"
          << r << " isend " << 1 - r << " 1 " << N << " 0\n"
          << r << " waitall 2\n"
          << r << " compute " << 1000 * N << "\n";
      f << r << " finalize\n";
      index += "rank-" + std::to_string(r) + ".txt\n";
    }
    std::ofstream(dir / "ti.txt") << index;
    return (dir / "ti.txt").string();
  }

  fs::path tmp_;
};

}  // namespace

// One test for everything that needs the real program: two runs traced once (P = 2, N = 64 and 128, steps = 3).
TEST_F(MkskelBuildCli, TracedRunsStrictAtomicOutputAndExitCodes) {
  const std::string a = traced(2, 64, 3), b = traced(2, 128, 3);
  const fs::path out = tmp_ / "out";
  const std::string skel = (out / "atm2d.json").string();

  // a build writes the skeleton mksim reads, says what it wrote, and lists the ambiguities (steps = 3 in both runs)
  const CliRun ok = mkskel({"build", a, b, "-o", skel});
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(has(ok.out, "wrote " + skel + ": skeleton \"atm2d\"")) << ok.out;
  EXPECT_TRUE(has(ok.out, "from 2 run(s)")) << ok.out;
  EXPECT_TRUE(has(ok.err, "mkskel: ambiguous: ")) << ok.err;
  EXPECT_TRUE(has(ok.err, "steps")) << ok.err;
  const std::string text = slurp(skel);
  EXPECT_NO_THROW(mksim::skeletons::parse_skeleton(text, skel));
  EXPECT_TRUE(has(ok.out, "skeleton " + std::to_string(text.size()) + " bytes")) << ok.out;  // the whole file is there
  EXPECT_EQ(others(out, {"atm2d.json"}), std::vector<std::string>{}) << "a temporary file was left beside the output";
  const auto params = nlohmann::json::parse(text).at("params");
  EXPECT_TRUE(params.contains("N")) << params.dump();
  EXPECT_TRUE(params.contains("steps")) << params.dump();

  // ::NAME=VALUE overrides a run's parameter: N given as 64 and 128 becomes 640 and 1280, and the halo sizes'
  // expression in N changes accordingly (a message of 2 * (N / Px) doubles at N = 64, Px = 1: 1024 bytes)
  const std::string scaled = (out / "scaled.json").string();
  const CliRun sc = mkskel({"build", a + "::N=640", b + "::N=1280", "-o", scaled});
  ASSERT_EQ(sc.code, 0) << sc.err;
  EXPECT_NE(slurp(scaled), text);
  EXPECT_TRUE(has(text, "\"size\": \"16*N\"")) << text;              // 2 * 64 * 8 = 1024 bytes at N = 64
  EXPECT_TRUE(has(slurp(scaled), "\"size\": \"8*N/5\"")) << slurp(scaled);  // the same 1024 bytes at N = 640
  EXPECT_FALSE(has(slurp(scaled), "\"size\": \"16*N\""));

  // --strict: the ambiguities are an error, exit 1, and nothing is written: neither a new file...
  const std::string strict = (out / "strict.json").string();
  const CliRun st = mkskel({"build", a, b, "--strict", "-o", strict});
  EXPECT_EQ(st.code, 1);
  EXPECT_TRUE(has(st.err, "(--strict): nothing written")) << st.err;
  EXPECT_FALSE(fs::exists(strict));
  // ...nor over an existing one, which keeps its bytes
  const CliRun st2 = mkskel({"build", a, b, "--strict", "-o", skel});
  EXPECT_EQ(st2.code, 1);
  EXPECT_EQ(slurp(skel), text);
  EXPECT_EQ(others(out, {"atm2d.json", "scaled.json"}), std::vector<std::string>{});

  // atomic replacement: a longer file at the output path is replaced whole (no tail of the old content)
  const std::string stale(text.size() * 2, 'x');
  std::ofstream(skel, std::ios::binary) << stale;
  ASSERT_EQ(mkskel({"build", a, b, "-o", skel}).code, 0);
  EXPECT_EQ(slurp(skel), text);  // the same runs give the same bytes
  EXPECT_EQ(others(out, {"atm2d.json", "scaled.json"}), std::vector<std::string>{});

  // exit codes: 2 for bad usage and bad input (nothing written), 1 when the runs cannot make one skeleton or the
  // output cannot be written
  const std::string none = (out / "none.json").string();
  auto expect_code = [&](const std::vector<std::string>& args, int code, const std::string& says) {
    const CliRun r = mkskel(args);
    std::string line;
    for (const auto& s : args) line += s + " ";
    EXPECT_EQ(r.code, code) << line << "\n" << r.err;
    EXPECT_TRUE(has(r.err, says)) << line << "\n" << r.err;
    EXPECT_FALSE(fs::exists(none)) << line;
  };
  expect_code({}, 2, "usage: mkskel build");
  expect_code({"frobnicate"}, 2, "unknown command \"frobnicate\"");
  expect_code({"build", "-o", none}, 2, "give at least one traced run");
  expect_code({"build", a}, 2, "output");  // -o is required
  expect_code({"build", a, "--no-such-option", "-o", none}, 2, "no-such-option");
  expect_code({"build", (tmp_ / "missing").string(), "-o", none}, 2, (tmp_ / "missing").string() + ": no such trace");
  expect_code({"build", a + "::N", "-o", none}, 2, "N");  // NAME=VALUE without a value
  // a corrupt rank file: the reader's error names the file (and its offset)
  const fs::path cut = tmp_ / "cut";
  fs::copy(a, cut);
  fs::resize_file(cut / "rank-1.mkt", fs::file_size(cut / "rank-1.mkt") / 2 + 3);
  expect_code({"build", cut.string(), "-o", none}, 2, "rank-1.mkt");
  // the same configuration twice, and runs whose parameter names differ: the builder refuses, exit 1
  expect_code({"build", a, a, "-o", none}, 1, "were traced with the same P and parameters");
  expect_code({"build", a, b + "::extra=1", "-o", none}, 1, "parameters differ");
  // an output directory that does not exist: exit 1 naming the path, nothing created
  const std::string nodir = (tmp_ / "no" / "such" / "x.json").string();
  const CliRun nd = mkskel({"build", a, b, "-o", nodir});
  EXPECT_EQ(nd.code, 1) << nd.err;
  EXPECT_TRUE(has(nd.err, nodir)) << nd.err;
  EXPECT_FALSE(fs::exists(tmp_ / "no"));
  // --help is not an error
  EXPECT_EQ(mkskel({"build", "--help"}).code, 0);
}

// SimGrid TI traces carry no parameters: FILE::NAME=VALUE gives them, and the builder regresses in them (the ring's
// message of N doubles becomes size 8*N); without them two runs are the same configuration.
TEST_F(MkskelBuildCli, TiTracesTakeTheirParametersAfterTheFileName) {
  const std::string t64 = ti_ring("ti64", 64, 4), t128 = ti_ring("ti128", 128, 4), t256 = ti_ring("ti256", 256, 4);
  const std::string skel = (tmp_ / "out" / "ring.json").string();
  const CliRun r = mkskel({"build", t64 + "::N=64", t128 + "::N=128", t256 + "::N=256", "-o", skel, "--name", "ring"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "skeleton \"ring\"")) << r.out;
  EXPECT_TRUE(has(r.out, "from 3 run(s)")) << r.out;
  const auto j = nlohmann::json::parse(slurp(skel));
  ASSERT_TRUE(j.at("params").contains("N")) << j.at("params").dump();
  // every send and receive of the ring has size 8*N, its peer 1 - rank in some form; compute is the TI's flops
  const std::string dump = j.dump();
  EXPECT_TRUE(has(dump, "\"size\":\"8*N\"")) << dump;
  EXPECT_FALSE(has(dump, "\"size\":512")) << dump;  // not N = 64's constant
  // two parameters after one file, comma-separated
  const std::string two = (tmp_ / "out" / "two.json").string();
  const CliRun r2 = mkskel({"build", t64 + "::N=64,steps=4", t128 + "::N=128,steps=4", "-o", two});
  ASSERT_EQ(r2.code, 0) << r2.err;
  const auto j2 = nlohmann::json::parse(slurp(two));
  EXPECT_TRUE(j2.at("params").contains("steps")) << j2.at("params").dump();
  // without parameters the runs are the same configuration: refused, nothing written
  const std::string bare = (tmp_ / "out" / "bare.json").string();
  const CliRun b = mkskel({"build", t64, t128, "-o", bare});
  EXPECT_EQ(b.code, 1) << b.err;
  EXPECT_TRUE(has(b.err, "were traced with the same P and parameters")) << b.err;
  EXPECT_FALSE(fs::exists(bare));
  // a value that is not a number
  const CliRun nan = mkskel({"build", t64 + "::N=big", t128 + "::N=128", "-o", bare});
  EXPECT_EQ(nan.code, 2) << nan.err;
  EXPECT_TRUE(has(nan.err, "big")) << nan.err;
  EXPECT_FALSE(fs::exists(bare));
  // a TI index naming a missing rank file: the reader's error, exit 2
  std::ofstream(tmp_ / "ti64" / "ti.txt", std::ios::app) << "gone.txt\n";
  const CliRun gone = mkskel({"build", t64 + "::N=64", "-o", bare});
  EXPECT_EQ(gone.code, 2) << gone.err;
  EXPECT_TRUE(has(gone.err, "gone.txt")) << gone.err;
  EXPECT_FALSE(fs::exists(bare));
}

// `mkskel diff` (skeldiff.hpp): 0 when the same, 1 on a difference named by its JSON pointers, 2 on bad usage.
TEST(MkskelDiffCli, ExitCodesAndPointers) {
  const CliRun same = mkskel({"diff", "atm1d.json", "atm1d.json", "--P", "2-8", "--param", "N=64:128,steps=2"});
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_TRUE(has(same.out, "same (structure 0, operations and compute 0): 14 (P, parameter) point(s), 70 rank expansion(s)")) << same.out;
  const CliRun differ = mkskel({"diff", "atm1d.json", "atm2d.json", "--P", "4-8", "--no-structure"});
  EXPECT_EQ(differ.code, 1) << differ.err;
  EXPECT_TRUE(has(differ.out, "difference 1 (bytes): A /body/0/body/0/then/1/then/0, B /body/0/body/0/then/1/then/0: P=4 N=1024 "
                              "flops_per_point=60 steps=10 value_bytes=8 rank 0 operation 0: A isend(peer 1, tag 2, 16384 B), B isend(peer 2, tag 2, 8192 B)"))
      << differ.out;
  const CliRun structure = mkskel({"diff", "atm1d.json", "cg.json", "--P", "4"});
  EXPECT_EQ(structure.code, 1);
  EXPECT_TRUE(has(structure.out, "difference 1 (structure): ")) << structure.out;
  EXPECT_EQ(mkskel({"diff", "atm1d.json", "atm1d.json", "--P", "0"}).code, 2);
  EXPECT_EQ(mkskel({"diff", "atm1d.json", "atm1d.json", "--param", "lambda=3"}).code, 2);
  EXPECT_EQ(mkskel({"diff", "atm1d.json"}).code, 2);
}
