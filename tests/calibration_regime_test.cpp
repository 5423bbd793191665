// Per-regime figures (issue 6, seed 001 table 2): the table transcribed and checked against the seed, the T3E's
// eager per-byte cost and rendezvous handshake fitted with mkcalib fit, and replay and the model of the 1-D and
// 2-D patterns on the fitted platform regressed back to the table's rho and beta; platforms without the new
// properties predict exactly as before.
#include "calibration/fit_platform.hpp"
#include "calibration/pattern_table.hpp"
#include "sim/cli/calib_cli.hpp"
#include "skeletons/skeleton_io.hpp"

#include <iomanip>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using namespace mksim;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;

std::string temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("mkcalib_regime_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int mkcalib(const std::vector<std::string>& args, std::string* out_text = nullptr, std::string* err_text = nullptr) {
  std::ostringstream out, err;
  const int code = sim::run_mkcalib(args, out, err);
  if (out_text) *out_text = out.str();
  if (err_text) *err_text = err.str();
  return code;
}

/** @brief The seed's table 2 rows "rho" and "beta" (calibration/data/scala_table2_excerpt.txt) (T3E 1-d short, long, 2-d short, long, then the CS-2), in us. */
std::vector<std::vector<double>> seed_table2() {
  // the seed's own lines, kept next to the transcription (the papers are not part of the repository)
  const std::string text = slurp(SRC + "/calibration/data/scala_table2_excerpt.txt");
  const std::size_t at = text.find("Communication Models (in");
  if (at == std::string::npos) return {};
  std::istringstream in(text.substr(at));
  std::vector<std::vector<double>> rows;
  for (std::string line; std::getline(in, line) && rows.size() < 2;) {
    if (line.rfind("\xcf\x81", 0) != 0 && line.rfind("\xce\xb2", 0) != 0) continue;  // rho, beta (UTF-8)
    std::vector<double> v;
    // "2.0 \cdot 10^{-2}" and plain numbers
    static const std::regex num(R"(([0-9]+\.[0-9]+)(\s*\\cdot\s*10\^\{(-?[0-9]+)\})?)");
    for (std::sregex_iterator it(line.begin(), line.end(), num), end; it != end; ++it)
      v.push_back(std::stod((*it)[1]) * ((*it)[3].matched ? std::pow(10.0, std::stoi((*it)[3])) : 1.0));
    rows.push_back(v);
  }
  return rows;
}

}  // namespace

TEST(PatternTable, TranscriptionMatchesSeed001Table2) {
  const auto seed = seed_table2();
  ASSERT_EQ(seed.size(), 2u) << "table 2 not found in the seed";
  ASSERT_EQ(seed[0].size(), 8u);
  ASSERT_EQ(seed[1].size(), 8u);
  const auto t = calibration::read_pattern_table(SRC + "/calibration/data/scala_table2.csv");
  ASSERT_EQ(t.lines.size(), 8u);
  // the seed's column order: T3E 1-d short, long, 2-d short, long; CS-2 the same
  for (std::size_t k = 0; k < 8; ++k) {
    const auto& l = t.lines[k];
    EXPECT_EQ(l.machine, k < 4 ? "t3e" : "cs2");
    EXPECT_EQ(l.pattern, (k % 4) < 2 ? "1d" : "2d");
    EXPECT_EQ(l.regime, k % 2 == 0 ? "short" : "long");
    EXPECT_NEAR(l.rho_s * 1e6, seed[0][k], 1e-9 * seed[0][k]) << k;
    EXPECT_NEAR(l.beta_s_per_byte * 1e6, seed[1][k], 1e-9 * seed[1][k]) << k;
  }
}

TEST(PatternTable, ErrorsNameFileAndLine) {
  auto msg = [](const std::string& text) {
    try {
      calibration::parse_pattern_table(text, "t.csv");
    } catch (const calibration::PatternTableError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string h = "machine,pattern,regime,rho_us,beta_us_per_byte\n";
  EXPECT_EQ(msg("machine,rho\n"), "t.csv:1: header must be \"machine,pattern,regime,rho_us,beta_us_per_byte\", not \"machine,rho\"");
  EXPECT_EQ(msg(h + "t3e,3d,short,1,1\n"), "t.csv:2: pattern \"3d\" (expected 1d or 2d)");
  EXPECT_EQ(msg(h + "t3e,1d,medium,1,1\n"), "t.csv:2: regime \"medium\" (expected short or long)");
  EXPECT_EQ(msg(h + "t3e,1d,short,x,1\n"), "t.csv:2: column rho_us: \"x\" is not a number");
  EXPECT_EQ(msg(h + "t3e,1d,short,1,-1\n"), "t.csv:2: column beta_us_per_byte must be positive, not \"-1\"");
  EXPECT_EQ(msg(h + "t3e,1d,short,1,1\n# c\nt3e,1d,short,2,1\n"), "t.csv:4: a second line for t3e 1d short");
  EXPECT_EQ(msg(h + "t3e,1d,short,1\n"), "t.csv:2: 4 field(s), the header has 5: \"t3e,1d,short,1\"");
  EXPECT_EQ(msg("# only\n"), "t.csv: no header line (expected \"machine,pattern,regime,rho_us,beta_us_per_byte\")");
  const auto t = calibration::parse_pattern_table(h + "t3e,1d,short,35.6,2.0e-2\n", "t.csv");
  EXPECT_THROW(calibration::pattern_runs(t, "paragon", 16, 10), calibration::PatternTableError);
  const auto runs = calibration::pattern_runs(t, "t3e", 16, 10);
  ASSERT_EQ(runs.runs.size(), 6u);  // the default short sizes
  EXPECT_NEAR(runs.runs[3].time_s, 10 * (35.6e-6 + 2.0e-8 * 1024), 1e-15);
  // the CSV reads back as the fit's runs
  const auto back = calibration::parse_measured_runs(calibration::format_runs_csv(runs), "r.csv", {"D", "steps", "dim"});
  ASSERT_EQ(back.runs.size(), 6u);
  EXPECT_EQ(back.runs[3].time_s, runs.runs[3].time_s);
}

// Acceptance (issue 6): given seed 001 table 2, the T3E fitted with the per-regime figures reproduces each
// pattern's rho and beta per regime, by replay and by the model.
TEST(RegimeFigures, T3ETable2FittedAndReproduced) {
  const std::string dir = temp_dir("t3e");
  const std::string runs = dir + "/t3e_runs.csv", cal = dir + "/t3e-table2.xml";
  const std::string table = SRC + "/calibration/data/scala_table2.csv";
  const std::string skel = SRC + "/calibration/data/comm_patterns.json";
  std::string out, err;
  ASSERT_EQ(mkcalib({"table-runs", "--table", table, "--machine", "t3e", "-P", "64", "--steps", "10", "-o", runs}, &out, &err), 0) << err;
  // the committed runs file is what this command writes
  EXPECT_EQ(slurp(runs), slurp(SRC + "/calibration/data/t3e_table2_runs.csv"));
  ASSERT_EQ(mkcalib({"fit", "--platform", "t3e", "--runs", runs, "--skeleton", skel, "--fit", "bandwidth,s,eager_per_byte,handshake", "-o", cal},
                    &out, &err), 0) << err;
  std::cout << out << std::flush;
  EXPECT_NE(out.find("fitted    eager_per_byte_s"), std::string::npos) << out;
  EXPECT_NE(out.find("fitted    rendezvous_handshake_s"), std::string::npos) << out;
  const std::string xml = slurp(cal);
  EXPECT_NE(xml.find("<prop id=\"mksim.eager_per_byte_s\""), std::string::npos);
  EXPECT_NE(xml.find("<prop id=\"mksim.rendezvous_handshake_s\""), std::string::npos);
  // read back as a base, the per-regime figures are kept
  const auto base = calibration::read_base_platform(cal);
  EXPECT_GT(base.figures.eager_per_byte_s.value, 0);
  EXPECT_GT(base.figures.rendezvous_handshake_s.value, 0);

  const auto sk = skeletons::load_skeleton(skel);
  const auto rows = calibration::check_pattern_table(cal, sk, calibration::read_pattern_table(table), "t3e", 64, 10);
  std::cout << calibration::format_pattern_check(rows) << std::flush;
  ASSERT_EQ(rows.size(), 4u);
  // One platform has no mechanism that tells a 2-D shift from a 1-D one (at P = 64 the 8 x 8 grid is a plane of
  // the 8x8x8 torus: every shift is one hop, no link shared), so the fit splits the difference: rho within 8%,
  // beta within 7% of the table's for all four lines (the 1-D and 2-D lines differ by 13% in rho and up to 12%
  // in beta); replay and model agree within 0.2% (the ring's wrap-around routes are 2 hops, the model's 1).
  for (const auto& r : rows) {
    const std::string what = r.table.pattern + " " + r.table.regime;
    EXPECT_NEAR(r.model_rho_s, r.table.rho_s, 0.08 * r.table.rho_s) << what;
    EXPECT_NEAR(r.replay_rho_s, r.table.rho_s, 0.08 * r.table.rho_s) << what;
    EXPECT_NEAR(r.model_beta_s_per_byte, r.table.beta_s_per_byte, 0.07 * r.table.beta_s_per_byte) << what;
    EXPECT_NEAR(r.replay_beta_s_per_byte, r.table.beta_s_per_byte, 0.07 * r.table.beta_s_per_byte) << what;
    EXPECT_NEAR(r.replay_rho_s, r.model_rho_s, 2e-3 * r.model_rho_s) << what;
    EXPECT_NEAR(r.replay_beta_s_per_byte, r.model_beta_s_per_byte, 2e-3 * r.model_beta_s_per_byte) << what;
  }
  // the two regimes really differ, as in the table: a start-up jump and a smaller per-byte time for long messages
  EXPECT_GT(rows[1].model_rho_s, 1.7 * rows[0].model_rho_s);
  EXPECT_LT(rows[1].model_beta_s_per_byte, 0.75 * rows[0].model_beta_s_per_byte);
  // the bundled T3E (one latency, one bandwidth, no per-regime figures) cannot: its long rho is the short one's
  const auto plain = calibration::check_pattern_table(SRC + "/platforms/t3e.xml", sk, calibration::read_pattern_table(table), "t3e", 64, 10);
  ASSERT_EQ(plain.size(), 4u);
  EXPECT_LT(plain[1].replay_rho_s, 0.6 * plain[1].table.rho_s);
  EXPECT_LT(plain[0].replay_beta_s_per_byte, 0.7 * plain[0].table.beta_s_per_byte);
  fs::remove_all(dir);
}

// Out of sample (the test above fits and checks the same runs): the figures are fitted to the runs of one pattern at
// some sizes, and the table's lines of the other pattern are checked at sizes the fit never saw. The T3E's 1-D and
// 2-D lines differ by 8-13% in rho and 5-13% in beta, which one platform cannot tell apart (no mechanism makes a 2-D
// shift cost more per message): predicting one pattern from the other misses by about that much, which is the
// figure this gives, held to 15%. Sizes: the fit sees 8, 256, 2048 B (short) and 8, 64, 1024 KiB (long); the check
// regresses the other pattern's rho and beta at 64, 1024, 4096 B and 16, 256 KiB.
TEST(RegimeFigures, T3ETable2OnePatternPredictsTheOtherAtHeldOutSizes) {
  const std::string dir = temp_dir("heldout");
  const auto table = calibration::read_pattern_table(SRC + "/calibration/data/scala_table2.csv");
  const auto sk = skeletons::load_skeleton(SRC + "/calibration/data/comm_patterns.json");
  calibration::PatternSizes train_sizes, check_sizes;
  train_sizes.short_bytes = {8, 256, 2048};
  train_sizes.long_bytes = {8192, 65536, 1048576};
  check_sizes.short_bytes = {64, 1024, 4096};
  check_sizes.long_bytes = {16384, 262144};
  auto only = [&](const std::string& pattern) {
    calibration::PatternTable t = table;
    t.lines.clear();
    for (const auto& l : table.lines)
      if (l.machine == "t3e" && l.pattern == pattern) t.lines.push_back(l);
    return t;
  };
  for (const auto& [fitted, held] : std::vector<std::pair<std::string, std::string>>{{"1d", "2d"}, {"2d", "1d"}}) {
    const std::string runs = dir + "/" + fitted + ".csv", cal = dir + "/t3e-" + fitted + ".xml";
    std::ofstream(runs) << calibration::format_runs_csv(calibration::pattern_runs(only(fitted), "t3e", 64, 10, train_sizes));
    std::string out, err;
    ASSERT_EQ(mkcalib({"fit", "--platform", "t3e", "--runs", runs, "--skeleton", SRC + "/calibration/data/comm_patterns.json", "--fit",
                       "bandwidth,s,eager_per_byte,handshake", "-o", cal},
                      &out, &err),
              0)
        << err;
    const auto rows = calibration::check_pattern_table(cal, sk, only(held), "t3e", 64, 10, check_sizes);
    std::cout << "fitted to the " << fitted << " lines (sizes 8, 256, 2048 B, 8, 64, 1024 KiB), the " << held
              << " lines at 64, 1024, 4096 B, 16, 256 KiB:\n"
              << calibration::format_pattern_check(rows) << std::flush;
    ASSERT_EQ(rows.size(), 2u);
    for (const auto& r : rows) {
      const std::string what = "fitted to " + fitted + ", " + r.table.pattern + " " + r.table.regime;
      EXPECT_NEAR(r.model_rho_s, r.table.rho_s, 0.15 * r.table.rho_s) << what;
      EXPECT_NEAR(r.replay_rho_s, r.table.rho_s, 0.15 * r.table.rho_s) << what;
      EXPECT_NEAR(r.model_beta_s_per_byte, r.table.beta_s_per_byte, 0.15 * r.table.beta_s_per_byte) << what;
      EXPECT_NEAR(r.replay_beta_s_per_byte, r.table.beta_s_per_byte, 0.15 * r.table.beta_s_per_byte) << what;
    }
    // the regimes are carried over to the other pattern: its long line starts higher and is less steep
    EXPECT_GT(rows[1].model_rho_s, 1.7 * rows[0].model_rho_s) << fitted;
    EXPECT_LT(rows[1].model_beta_s_per_byte, 0.75 * rows[0].model_beta_s_per_byte) << fitted;
  }
  fs::remove_all(dir);
}

// Platforms without mksim.eager_per_byte_s / mksim.rendezvous_handshake_s predict exactly as before they existed:
// the values below were computed by the code at git HEAD before this change (the same model and replay calls
// built from the committed sources), printed with %.17g; equality is exact (replay: to 1e-12, see below).
TEST(RegimeFigures, PlatformsWithoutThemPredictAsBefore) {
  struct Case {
    const char* platform;
    const char* skeleton;
    int P;
    std::map<std::string, double> params;
    double model_s, replay_s;
  };
  const Case cases[] = {
      {"t3e", "calibration/data/comm_patterns.json", 64, {{"D", 1024}, {"dim", 2}, {"steps", 10}}, 0.001936, 0.0019360000000000015},
      {"t3e", "calibration/data/comm_patterns.json", 64, {{"D", 65536}, {"dim", 1}, {"steps", 10}}, 0.0085481999999999989, 0.0085481999999999989},
      {"paragon", "skeletons/examples/atm2d.json", 16, {{"N", 512}, {"steps", 5}}, 0.071702533333333332, 0.069290878179611534},
      {"t3e", "skeletons/examples/cg.json", 8, {}, 0.16207749777777777, 0.16212597777777879},
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
    EXPECT_EQ(rows[0].model_s, c.model_s) << c.platform << " " << c.skeleton;
    // Replay: the same to the last bits or nearly. Since the engine keeps each rank's clock itself (issue 20:
    // lt += work rather than the engine's clock + local work) sums round differently: 1e-16 relative seen.
    EXPECT_NEAR(rows[0].replay_s, c.replay_s, 1e-12 * c.replay_s) << std::setprecision(17) << rows[0].replay_s << " " << c.platform << " " << c.skeleton;
  }
}
