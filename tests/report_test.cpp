// `mksim report`: pages from real inputs (a sweep and a predict with --timeline run by the real mksim binary, a
// calibration database) and from hand-written edge cases (empty table, every point failed, unknown kind), each
// opened in headless Chromium to check that every plot rendered with no script error; the derived values (speedup,
// crossings) checked against hand computations; bad inputs and a missing plotting library as errors.
#include "results/calib_db.hpp"
#include "results/diagnosis.hpp"
#include "results/hdf5_io.hpp"
#include "results/report.hpp"
#include "results/report_data.hpp"
#include "results/sweep_table.hpp"
#include "results/timeline_export.hpp"
#include "sim/cli/report_cli.hpp"

#include "tests/process_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <hdf5.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
namespace results = mksim::results;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;
const std::string MKSIM = std::string(MKSIM_BINARY_DIR) + "/sim/mksim";

struct CliRun {
  int code;
  std::string out;
  std::string err;
};

CliRun report(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = mksim::sim::cmd_report(args, out, err);
  return {code, out.str(), err.str()};
}

fs::path tmpdir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("mksim_report_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

using mksim::test::shell;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

/** @brief The page's DOM after Chromium ran its scripts (every vegaEmbed promise settles well within the budget). */
std::string rendered_dom(const fs::path& page, const fs::path& profile) {
  const auto [code, dom] = shell("chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
                                 "--user-data-dir=" + profile.string() + " --virtual-time-budget=10000 --dump-dom 'file://" +
                                 fs::absolute(page).string() + "' 2>/dev/null");
  EXPECT_EQ(code, 0) << "chromium failed (is Debian's chromium installed? scripts/install-deps.sh)";
  return dom;
}

/** @brief Checks the page rendered: the body marked ok by the page's script once every plot's promise resolved,
 *  no error and no Vega warning, and one SVG view per plot. */
void expect_rendered(const fs::path& page, int plots) {
  const std::string dom = rendered_dom(page, page.parent_path() / ("chromium-" + page.stem().string()));
  ASSERT_NE(dom.find("<body"), std::string::npos) << "no DOM from chromium";
  EXPECT_NE(dom.find("data-mksim-render=\"ok\""), std::string::npos)
      << page << " did not render; errors: " << dom.substr(dom.find("mksim-errors"), 2000);
  EXPECT_NE(dom.find("data-mksim-warnings=\"0\""), std::string::npos) << page << ": Vega warned: " << dom.substr(dom.find("mksim-warnings"), 2000);
  EXPECT_NE(dom.find("data-mksim-plots=\"" + std::to_string(plots) + "\""), std::string::npos);
  const std::size_t title = dom.find("<title>");
  ASSERT_NE(title, std::string::npos);
  EXPECT_EQ(dom.substr(title, dom.find("</title>") - title).find("(rendering)"), std::string::npos)
      << "the title was not updated";
  // Vega's SVG renderer gives each view one root group of class "marks".
  EXPECT_EQ(count(dom, "class=\"marks\""), static_cast<std::size_t>(plots)) << page;
  EXPECT_EQ(count(dom, "class=\"plot"), static_cast<std::size_t>(plots));
}

results::SweepRow row(const std::string& platform, int P, std::vector<double> params, double replay_s,
                      const std::string& status = "ok") {
  results::SweepRow r;
  r.platform = platform;
  r.P = P;
  r.params = std::move(params);
  r.replay.status = status;
  if (status == "ok") {
    r.replay.time_s = replay_s;
    r.replay.compute_s = replay_s * 0.5;
    r.replay.comm_s = replay_s * 0.3;
    r.replay.wait_s = replay_s * 0.2;
  } else {
    r.replay.error = "rank 0 blocked in recv";
  }
  return r;
}

results::SweepTable table_of(std::vector<results::SweepRow> rows) {
  results::SweepTable t;
  t.param_names = {"K"};
  t.rows = std::move(rows);
  t.attributes = {{"command", "mksim sweep (hand-written)"}, {"mode", "replay"}, {"platforms", "a,b"},
                  {"skeleton", "hand.json"}, {"skeleton.hash", "0123456789abcdef"}, {"tool", "mksim test"}};
  return t;
}

results::CalibSize size(std::uint64_t bytes, double median_s, double low_s) {
  results::CalibSize s;
  s.size_bytes = bytes;
  s.iterations = 10;
  s.times_s = {median_s * 0.9, median_s, median_s * 1.2};
  s.outlier = {0, 0, 0};
  s.mean_s = s.median_s = median_s;
  s.stddev_s = median_s * 0.1;
  s.ci95_low_s = low_s;
  s.ci95_high_s = median_s * 1.3;
  return s;
}

results::CalibDb calibration() {
  results::CalibDb db;
  db.machine = "vm";
  db.date_utc = "2024-01-02T03:04:05Z";
  db.hostname = "host-1";
  db.mpi_library = "Open MPI v4.1.4";
  db.np = 2;
  db.config = "np=2 reps=3";
  results::CalibKernel pp{"pingpong", "s", "2024-01-02T03:04:05Z", 1.0, {}, {}, 4096};
  for (std::uint64_t b = 1; b <= 65536; b *= 4) pp.sizes.push_back(size(b, 1e-6 + b * 1e-9, b == 1 ? -1e-7 : 0.8e-6));
  pp.fit = {{"short", 1, 1024, 1e-6, 1e-9, 1e-3, 6}, {"long", 4096, 65536, 1.5e-6, 0.9e-9, 2e-3, 3}};
  results::CalibKernel compute{"compute", "s/flop", "2024-01-02T03:04:05Z", 2.0, {}, {}, 0};
  for (std::uint64_t b = 4096; b <= (1u << 24); b *= 4) compute.sizes.push_back(size(b, b < 65536 ? 1.6e-10 : 6e-10, 1e-10));
  results::CalibKernel bcast{"bcast", "s", "2024-01-02T03:04:05Z", 1.0, {}, {}, 0};
  for (std::uint64_t b = 8; b <= 8192; b *= 8) bcast.sizes.push_back(size(b, 2e-6 + b * 2e-9, 1e-6));
  db.kernels = {pp, bcast, compute};
  return db;
}

/** @brief The colour class of a diagnosis method text, as the page documents it. */
std::string method_class_of(const std::string& method) {
  for (const char* c : {"simulated", "not simulated", "formula", "model"})
    if (method.rfind(c, 0) == 0) return c;
  return "other";
}

}  // namespace

// --- derived values, against hand computations ---

TEST(ReportData, SpeedupAndEfficiencyAgainstTheCurvesOwnSmallestP) {
  const auto points = results::curve_points(table_of({row("a", 4, {1}, 8), row("a", 8, {1}, 4), row("a", 16, {1}, 4)}), "");
  const auto s = results::scaling(points);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].curve, "a K=1");
  EXPECT_EQ(s[0].base_P, 4);
  EXPECT_DOUBLE_EQ(s[0].speedup, 4);
  EXPECT_DOUBLE_EQ(s[1].speedup, 8);  // 8 s * 4 / 4 s
  EXPECT_DOUBLE_EQ(s[2].speedup, 8);
  EXPECT_DOUBLE_EQ(s[1].efficiency, 1);
  EXPECT_DOUBLE_EQ(s[2].efficiency, 0.5);
}

TEST(ReportData, CrossingsBetweenPlatformsInterpolatedInLogLog) {
  // a: T = P/4 s (4..64); b: T = 5 s, so they cross at P = 20 (between 16 and 32), exactly in log-log.
  // c = a on another K: not comparable with b (other parameters), so no crossing with it.
  std::vector<results::SweepRow> rows;
  for (int P = 4; P <= 64; P *= 2) {
    rows.push_back(row("a", P, {1}, P / 4.0));
    rows.push_back(row("b", P, {1}, 5.0));
    rows.push_back(row("a", P, {2}, P / 4.0));
  }
  const auto crossings = results::find_crossings(results::curve_points(table_of(rows), ""));
  ASSERT_EQ(crossings.size(), 1u);
  EXPECT_EQ(crossings[0].method, "replay");
  EXPECT_EQ(crossings[0].a, "a K=1");
  EXPECT_EQ(crossings[0].b, "b K=1");
  EXPECT_NEAR(crossings[0].P, 20.0, 1e-9);
  EXPECT_NEAR(crossings[0].time_s, 5.0, 1e-9);
  EXPECT_EQ(crossings[0].P_low, 16);
  EXPECT_EQ(crossings[0].P_high, 32);
}

TEST(ReportData, CurvesThatMeetAtAGridPointCrossOnceThere) {
  std::vector<results::SweepRow> rows;
  for (int P = 4; P <= 64; P *= 2) {
    rows.push_back(row("a", P, {1}, P / 4.0));
    rows.push_back(row("b", P, {1}, 4.0));  // equal at P = 16
  }
  const auto crossings = results::find_crossings(results::curve_points(table_of(rows), ""));
  ASSERT_EQ(crossings.size(), 1u);
  EXPECT_DOUBLE_EQ(crossings[0].P, 16);
  EXPECT_EQ(crossings[0].P_low, 16);
  EXPECT_EQ(crossings[0].P_high, 16);
}

TEST(ReportData, CrossingsBetweenTwoSkeletonsOnOnePlatform) {
  auto one = results::curve_points(table_of({row("a", 4, {1}, 1), row("a", 16, {1}, 4)}), "pge1");
  const auto two = results::curve_points(table_of({row("a", 4, {8}, 2), row("a", 16, {8}, 2)}), "pge2");
  one.insert(one.end(), two.begin(), two.end());
  const auto crossings = results::find_crossings(one);
  ASSERT_EQ(crossings.size(), 1u);
  EXPECT_EQ(crossings[0].a, "pge1 a K=1");
  EXPECT_EQ(crossings[0].b, "pge2 a K=8");
  EXPECT_NEAR(crossings[0].P, 8.0, 1e-9);  // T1 = P/4 meets T2 = 2 at P = 8
}

TEST(ReportData, TimelineRowsAreCappedAndCountedAndBadRowsNamed) {
  const fs::path dir = tmpdir("timeline");
  std::ofstream(dir / "t.csv") << "rank,start_s,end_s,kind,block\n0,0,1,compute,c1\n0,1,2,send,/groups/0/program/1\n"
                                  "1,0,2,recv,r,with,commas\n";
  const auto t = results::read_timeline_csv((dir / "t.csv").string(), 2);
  EXPECT_EQ(t.total_ops, 3u);
  EXPECT_EQ(t.ranks, 2);
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_EQ(t.ops[1].block, "/groups/0/program/1");
  EXPECT_EQ(results::read_timeline_csv((dir / "t.csv").string(), 10).ops[2].block, "r,with,commas");
  std::ofstream(dir / "bad.csv") << "rank,start_s,end_s,kind,block\n0,0,1,compute,c1\n0,x,2,send,b\n";
  try {
    results::read_timeline_csv((dir / "bad.csv").string(), 10);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv: line 3: bad rank or time"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// --- measured points, isospeed and constant time, against hand computations ---

TEST(ReportData, MeasuredRepetitionsBecomeOnePointWithAMinMaxBar) {
  results::MeasuredRuns runs;
  runs.file = "m.csv";
  runs.columns = {"N"};
  runs.rows = {{4, {{"N", 256}}, 1.0, 2}, {4, {{"N", 256}}, 1.2, 3}, {4, {{"N", 256}}, 1.4, 4}, {8, {{"N", 256}}, 0.7, 5}};
  const auto points = results::measured_points(runs);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_NEAR(points[0].time_s, 1.2, 1e-12);
  EXPECT_DOUBLE_EQ(points[0].low_s, 1.0);
  EXPECT_DOUBLE_EQ(points[0].high_s, 1.4);
  EXPECT_EQ(points[0].repetitions, 3);
  EXPECT_EQ(points[0].spread, "min-max of 3 rows");
  EXPECT_EQ(points[0].params_text, "N=256");
  EXPECT_EQ(points[1].spread, "");  // one row, no spread columns: a plain point
  EXPECT_DOUBLE_EQ(points[1].low_s, 0.7);
  // Spread columns are not parameters.
  runs.columns = {"N", "time_min_s", "time_max_s", "repetitions"};
  runs.rows = {{4, {{"N", 256}, {"time_min_s", 0.9}, {"time_max_s", 1.5}, {"repetitions", 5}}, 1.1, 2}};
  const auto spread = results::measured_points(runs);
  ASSERT_EQ(spread.size(), 1u);
  EXPECT_EQ(spread[0].params.size(), 1u);
  EXPECT_DOUBLE_EQ(spread[0].low_s, 0.9);
  EXPECT_DOUBLE_EQ(spread[0].high_s, 1.5);
  EXPECT_EQ(spread[0].repetitions, 5);
  // Matching: same P and the parameters both name; the platform only when the comments name one.
  auto by_n = table_of({row("paragon", 4, {256}, 1.3), row("t3e", 4, {256}, 1.1), row("paragon", 4, {512}, 5)});
  by_n.param_names = {"N"};
  const auto curve = results::curve_points(by_n, "");
  EXPECT_EQ(results::match_measured(points, curve, "").size(), 2u);
  const auto on_paragon = results::match_measured(points, curve, "paragon");
  ASSERT_EQ(on_paragon.size(), 1u);
  EXPECT_NEAR(on_paragon[0].rel_error, (1.3 - 1.2) / 1.2, 1e-12);
  EXPECT_EQ(results::platform_named_in({" ATM2D on the Intel Paragon (NASA Ames)"}, {"paragon", "t3e"}), "paragon");
  EXPECT_EQ(results::platform_named_in({"paragons and t3e"}, {"paragon", "t3e"}), "t3e");  // words only
  EXPECT_EQ(results::platform_named_in({"paragon vs t3e"}, {"paragon", "t3e"}), "");       // two: not identifiable
}

TEST(ReportData, IsospeedAndConstantTimeInterpolatedOverTheGridOrLeftOut) {
  // T(P, N) = N/P + 1, W = N: speed per processor N / (T P) = N / (N + P).
  std::vector<results::SweepRow> rows;
  auto T = [](int P, double N) { return N / P + 1; };
  for (double N : {8.0, 16.0, 32.0, 64.0, 128.0}) {
    rows.push_back(row("a", 2, {N}, T(2, N)));
    rows.push_back(row("a", 8, {N}, T(8, N)));
    if (N == 8 || N == 32) rows.push_back(row("a", 4, {N}, T(4, N)));  // a coarse grid at P = 4
  }
  auto table = table_of(rows);
  table.param_names = {"N"};
  const auto curves = results::scale_curves(results::curve_points(table, ""), {"N", 1});
  std::map<std::pair<double, int>, const results::ScalePoint*> iso, ct;
  for (const auto& p : curves.isospeed) iso[{p.base_n, p.P}] = &p;
  for (const auto& p : curves.constant_time) ct[{p.base_n, p.P}] = &p;
  auto I = [&](double n, int P) { return iso.at({n, P}); };
  auto C = [&](double n, int P) { return ct.at({n, P}); };
  ASSERT_EQ(iso.size(), 15u);  // 5 starting N x 3 P
  // From N0 = 8 at P0 = 2: speed 0.8, so N = 4P: 32 at P = 8 (a grid point), psi = 8*8 / (2*32) = 1.
  EXPECT_EQ(I(8, 8)->status, "ok");
  EXPECT_NEAR(I(8, 8)->n, 32, 1e-9);
  EXPECT_NEAR(I(8, 8)->psi, 1, 1e-9);
  EXPECT_NEAR(I(8, 8)->target, 0.8, 1e-12);
  // At P = 4 the grid has 8 and 32: log speed interpolated linearly in log N.
  const double f0 = std::log((8.0 / 12) / 0.8), f1 = std::log((32.0 / 36) / 0.8);
  const double expected = std::exp(std::log(8.0) + f0 / (f0 - f1) * std::log(4.0));
  EXPECT_NEAR(I(8, 4)->n, expected, 1e-9);
  EXPECT_GT(I(8, 4)->n, 16);  // the true 16, off by the coarse grid
  EXPECT_DOUBLE_EQ(I(8, 4)->n_low, 8);
  EXPECT_DOUBLE_EQ(I(8, 4)->n_high, 32);
  EXPECT_NEAR(I(8, 4)->psi, 4.0 * 8 / (2 * expected), 1e-9);
  // From N0 = 128: N = 512 needed at P = 8, beyond the grid: left out, not extrapolated.
  EXPECT_EQ(I(128, 8)->status, "above grid");
  EXPECT_TRUE(std::isnan(I(128, 8)->n));
  // Constant time from (2, 8): T0 = 5, so N <= 4(P) ... N/8 + 1 <= 5 gives 32 at P = 8 exactly.
  EXPECT_NEAR(C(8, 8)->n, 32, 1e-9);
  const double g0 = std::log(3.0 / 5), g1 = std::log(9.0 / 5);
  EXPECT_NEAR(C(8, 4)->n, std::exp(std::log(8.0) + g0 / (g0 - g1) * std::log(4.0)), 1e-9);
  // From N0 = 128 (T0 = 65): at P = 8 even N = 128 runs in 17 s, so the largest N is beyond the grid.
  EXPECT_EQ(C(128, 8)->status, "above grid");
  bool range_note = false, coarse_note = false;
  for (const auto& n : curves.notes) {
    range_note = range_note || n.find("outside the swept N range") != std::string::npos;
    coarse_note = coarse_note || n.find("more than a factor 2 apart") != std::string::npos;
  }
  EXPECT_TRUE(range_note);
  EXPECT_TRUE(coarse_note);
}

// --- real inputs, rendered in Chromium ---

TEST(Report, RealSweepRunTimelineAndCalibrationRenderInChromium) {
  const fs::path dir = tmpdir("real");
  const std::string sweep = (dir / "sweep.h5").string(), run = (dir / "run.h5").string(),
                    timeline = (dir / "run.csv").string(), calib = (dir / "calib.h5").string();
  // Paragon is faster at small P, the T3E's network wins as P grows: the two curves cross.
  auto [sweep_code, sweep_out] = shell(MKSIM + " sweep --skeleton pge1 --platform paragon,t3e --P 4..32:x2 --param K=1..16:x4 "
                                               "--mode both --jobs 2 -o " + sweep + " 2>&1");
  ASSERT_EQ(sweep_code, 0) << sweep_out;
  auto [run_code, run_out] = shell(MKSIM + " predict --platform paragon --P 8 --skeleton atm2d -o " + run + " --timeline " +
                                   timeline + " 2>&1");
  ASSERT_EQ(run_code, 0) << run_out;
  results::write_calib_db(calib, calibration());

  const fs::path page = dir / "report.html";
  const CliRun r = report({sweep, run, calib, "--timeline", timeline, "-o", page.string(), "--title", "pge1 at scale"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + page.string() + ": 12 plot(s) from 4 input(s)"), std::string::npos) << r.out;
  const std::string html = read_file(page);
  // Self-contained: every script inline, nothing fetched.
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(count(html, "<script>"), 4u);  // vega, vega-lite, vega-embed, the page's own
  // Provenance: the sweep's skeleton hash and command, the run's platform, the calibration's machine.
  const results::SweepTable table = results::read_sweep_hdf5(sweep);
  std::string hash, command;
  for (const auto& [k, v] : table.attributes) {
    if (k == "skeleton.hash") hash = v;
    if (k == "command") command = v;
  }
  ASSERT_FALSE(hash.empty());
  EXPECT_NE(html.find("<td>" + hash + "</td>"), std::string::npos);
  EXPECT_NE(html.find("--param K=1..16:x4"), std::string::npos) << "the sweep's command is not listed";
  EXPECT_NE(html.find("Open MPI v4.1.4"), std::string::npos);
  EXPECT_NE(html.find("vega-lite 6."), std::string::npos);
  EXPECT_EQ(html.find("class=\"missing\""), std::string::npos) << "nothing is missing from these inputs";
  // The plots that fit: time vs P, speedup, best K, two splits, three of the run, the Gantt, three of calibration.
  for (const char* title : {"predicted time vs P", "speedup T(Pmin)", "best K vs P", "replay: time split per point",
                            "model: time split per point", "time per phase", "time per rank", "blocks with the most time",
                            "per-rank timeline", "pingpong: time vs message size", "compute rate vs working-set size",
                            "other kernels"})
    EXPECT_NE(html.find(title), std::string::npos) << title;
  EXPECT_NE(html.find("Export for external viewers: " + timeline), std::string::npos);
  // Every mark but the error bars has hover values; the time axes say their unit.
  const std::size_t from = html.find("id=\"mksim-specs\">");
  ASSERT_NE(from, std::string::npos);
  const std::string specs = html.substr(from, html.find("</script>", from) - from);
  const std::size_t rules = count(specs, "\"mark\":\"rule\"") + count(specs, "\"mark\":{\"type\":\"rule\"}");
  EXPECT_EQ(rules, 3u);
  EXPECT_EQ(count(specs, "\"tooltip\""), count(specs, "\"mark\"") - rules) << "marks without tooltips";
  EXPECT_GE(count(specs, " (s)\""), 12u);

  expect_rendered(page, 12);
  const fs::path png = dir / "report.png";
  const auto [shot, shot_out] = shell("chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir=" +
                                      (dir / "chromium-shot").string() + " --virtual-time-budget=10000 --hide-scrollbars "
                                      "--window-size=1400,2400 --screenshot=" + png.string() + " 'file://" + page.string() +
                                      "' 2>&1");
  ASSERT_EQ(shot, 0) << shot_out;
  const std::string bytes = read_file(png);
  ASSERT_GT(bytes.size(), 20000u) << "screenshot too small to show plots";
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  std::cout << "screenshot: " << png << "\n";  // the page, its inputs and the screenshot stay for a look
  fs::remove_all(dir / "chromium-shot");
  fs::remove_all(dir / "chromium-report");
}

TEST(Report, DiagnosisRankingFromARealDiagnoseRendersInChromium) {
  const fs::path dir = tmpdir("diagnosis");
  const std::string diag = (dir / "d.h5").string();
  auto [code, out] = shell(MKSIM + " diagnose pge1 --platform paragon --P 16 --param K=256 -o " + diag + " 2>&1");
  ASSERT_EQ(code, 0) << out;
  const results::Diagnosis d = results::read_diagnosis_hdf5(diag);
  ASSERT_FALSE(d.problems.empty()) << out;
  const fs::path page = dir / "p.html";
  const CliRun r = report({diag, "-o", page.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1 plot(s) from 1 input(s)"), std::string::npos) << r.out;
  const std::string html = read_file(page);
  EXPECT_EQ(html.find("class=\"missing\""), std::string::npos);
  EXPECT_NE(html.find("predicted gain if fixed (s)"), std::string::npos);
  EXPECT_NE(html.find("diagnosis (mksim diagnose -o)"), std::string::npos);  // provenance
  // Every finding is in the table, in rank order, with its action; the top one's action is in the plot's data.
  std::size_t last = 0;
  for (std::size_t k = 0; k < d.problems.size(); ++k) {
    const std::string cell = "<tr><td>" + std::to_string(k + 1) + "</td><td>" + d.problems[k].kind + "</td>";
    const std::size_t at = html.find(cell);
    ASSERT_NE(at, std::string::npos) << cell;
    EXPECT_GT(at, last);
    last = at;
  }
  const std::size_t from = html.find("id=\"mksim-specs\">");
  const std::string specs = html.substr(from, html.find("</script>", from) - from);
  const nlohmann::json plots = nlohmann::json::parse(specs.substr(specs.find('>') + 1));
  const auto& values = plots[0]["spec"]["data"]["values"];
  ASSERT_EQ(values.size(), d.problems.size());
  EXPECT_EQ(values[0]["action"], d.problems[0].action);
  EXPECT_NEAR(values[0]["gain_s"].get<double>(), d.problems[0].gain_s, 1e-12);
  EXPECT_EQ(values[0]["method"], method_class_of(d.problems[0].method));
  std::set<std::string> classes;
  for (const auto& v : values) classes.insert(v["method"].get<std::string>());
  EXPECT_EQ(classes.count("other"), 0u) << "every method is simulated, not simulated, formula or model";
  expect_rendered(page, 1);
  fs::remove_all(dir);
}

TEST(Report, DiagnosisWithNoFindingsSaysSo) {
  const fs::path dir = tmpdir("nofindings");
  results::Diagnosis d;
  d.attributes = {{"platform", "paragon"}, {"P", "4"}};
  d.baseline_time_s = 0.5;
  d.notes = {"late_sender: no wait above 1% of the run"};
  const std::string diag = (dir / "d.h5").string();
  results::write_diagnosis_hdf5(diag, d);
  const CliRun r = report({diag, "-o", (dir / "p.html").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = read_file(dir / "p.html");
  EXPECT_NE(html.find(diag + ": the diagnosis has no findings"), std::string::npos);
  EXPECT_NE(html.find("diagnose: late_sender: no wait above 1% of the run"), std::string::npos);
  expect_rendered(dir / "p.html", 0);
  fs::remove_all(dir);
}

TEST(Report, MeasuredRunsOverARealSweepWithIsospeedAndConstantTime) {
  const fs::path dir = tmpdir("measured");
  const std::string sweep = (dir / "atm2d.h5").string();
  // The N of seed 000's table 1 (N = lambda sqrt(P)) at P = 4..16, so 7 of its 18 rows have a predicted twin.
  auto [code, out] = shell(MKSIM + " sweep --skeleton atm2d --platform paragon --P 4..16:x2 "
                                   "--param N=256,362.038672,512,724.0773439,1024 --param steps=91 --mode replay --jobs 2 -o " +
                                   sweep + " 2>&1");
  ASSERT_EQ(code, 0) << out;
  const std::string table1 = SRC + "/calibration/data/atm2d_paragon_table1.csv";
  // Repetitions (hand-written) give error bars; a spread column too.
  const std::string reps = (dir / "reps.csv").string();
  std::ofstream(reps) << "# three runs each on a Paragon\nP,N,time_s\n4,256,0.80\n4,256,0.83\n4,256,0.86\n"
                         "8,362.038672,0.82\n8,362.038672,0.85\n";
  const std::string spread = (dir / "spread.csv").string();
  std::ofstream(spread) << "P,N,steps,time_s,time_min_s,time_max_s,repetitions\n16,512,91,0.86,0.84,0.90,5\n";
  const fs::path page = dir / "p.html";
  const CliRun r = report({sweep, table1, reps, "--measured", spread, "--work-param", "N", "--work-exponent", "2",
                           "-o", page.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  // time vs P, measured vs predicted, speedup, isospeed, constant time, the replay split; no "best N": N is the
  // problem size, not a grain to choose
  EXPECT_NE(r.out.find("6 plot(s) from 4 input(s)"), std::string::npos) << r.out;
  const std::string html = read_file(page);
  EXPECT_EQ(html.find("best N vs P"), std::string::npos);
  EXPECT_NE(html.find(table1 + ": 7 of 18 measured point(s) match a predicted point (same P and N, steps) on paragon "
                      "(named in the file&#39;s comments); no spread given, drawn as points."), std::string::npos)
      << html.substr(html.find("<h1>"), 4000);
  EXPECT_NE(html.find(reps + ": 2 of 2 measured point(s) match"), std::string::npos);
  EXPECT_NE(html.find("2 with error bars"), std::string::npos);
  EXPECT_NE(html.find(spread + ": 1 of 1 measured point(s) match"), std::string::npos);
  EXPECT_NE(html.find("predicted vs measured time"), std::string::npos);
  EXPECT_NE(html.find("isospeed: work needed to keep W/(T·P)"), std::string::npos);
  EXPECT_NE(html.find("constant time: largest N"), std::string::npos);
  EXPECT_NE(html.find("W is taken as proportional to N^2"), std::string::npos);
  // The measured points sit in the time-vs-P spec with their bars (min 0.80, max 0.86 for the repetitions).
  const std::size_t from = html.find("id=\"mksim-specs\">");
  const std::string specs = html.substr(from, html.find("</script>", from) - from);
  EXPECT_NE(specs.find("\"high_s\":0.86,\"low_s\":0.8"), std::string::npos);
  EXPECT_NE(specs.find("\"spread\":\"min-max of 3 rows\""), std::string::npos);
  // The mean errors per file and method are tabulated.
  EXPECT_NE(html.find("<th>mean |error|</th>"), std::string::npos);
  expect_rendered(page, 6);
  fs::remove_all(dir);
}

TEST(Report, MeasuredRunsWithoutAMatchAndASweepWithoutTheWorkAxisSaySo) {
  const fs::path dir = tmpdir("nomatch");
  const std::string table = (dir / "k.h5").string();  // K only: no N axis
  results::write_sweep_hdf5(table, table_of({row("a", 4, {1}, 2), row("a", 8, {1}, 1.5)}));
  const std::string runs = (dir / "runs.csv").string();
  std::ofstream(runs) << "P,K,time_s\n4,3,1.9\n";
  const CliRun r = report({table, runs, "--work-param", "N", "-o", (dir / "p.html").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = read_file(dir / "p.html");
  EXPECT_NE(html.find(runs + ": none of its 1 measured point(s) has a predicted point of the same P and parameters (K)"),
            std::string::npos) << html.substr(html.find("<h1>"), 3000);
  EXPECT_NE(html.find(table + ": no isospeed or constant-time curves: the sweep has no parameter N (swept: K)"),
            std::string::npos);
  expect_rendered(dir / "p.html", 3);  // time vs P, speedup, replay split
  // Measured runs with no sweep at all.
  const CliRun alone = report({runs, "-o", (dir / "q.html").string()});
  ASSERT_EQ(alone.code, 0) << alone.err;
  EXPECT_NE(read_file(dir / "q.html").find(runs + ": measured runs but no sweep table"), std::string::npos);
  expect_rendered(dir / "q.html", 0);
  // A CSV of neither kind is an error naming it and its header line.
  std::ofstream(dir / "other.csv") << "# x\na,b\n1,2\n";
  const CliRun other = report({(dir / "other.csv").string(), "-o", (dir / "q.html").string()});
  EXPECT_EQ(other.code, 2);
  EXPECT_NE(other.err.find((dir / "other.csv").string() + ": line 2: a CSV this report does not know"), std::string::npos)
      << other.err;
  fs::remove_all(dir);
}

/** @brief A parsed Paje event line: its event id and fields (quoted strings unquoted). */
std::vector<std::string> paje_fields(const std::string& line) {
  std::vector<std::string> f;
  for (std::size_t i = 0; i < line.size();) {
    if (line[i] == ' ') { ++i; continue; }
    if (line[i] == '"') {
      const std::size_t end = line.find('"', i + 1);
      f.push_back(line.substr(i + 1, end - i - 1));
      i = end + 1;
    } else {
      const std::size_t end = std::min(line.find(' ', i), line.size());
      f.push_back(line.substr(i, end - i));
      i = end;
    }
  }
  return f;
}

TEST(Report, PajeExportOfARealTimelineIsAWellFormedTrace) {
  const fs::path dir = tmpdir("paje");
  const std::string run = (dir / "run.h5").string(), timeline = (dir / "run.csv").string(),
                    trace = (dir / "run.paje").string();
  auto [code, out] = shell(MKSIM + " predict --platform paragon --P 8 --skeleton atm2d -o " + run + " --timeline " +
                           timeline + " 2>&1");
  ASSERT_EQ(code, 0) << out;
  const results::Timeline t = results::read_timeline_csv(timeline, std::numeric_limits<std::size_t>::max());
  ASSERT_GT(t.total_ops, 8u);
  const CliRun r = report({timeline, "--paje", trace, "-o", (dir / "p.html").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + trace + ": Paje trace of " + timeline + ", " + std::to_string(t.total_ops) +
                       " state(s) on 8 rank container(s)"), std::string::npos) << r.out;
  // Parse it back: definitions, containers before their states, one push and one pop per CSV row, time order.
  std::ifstream in(trace);
  std::string line;
  std::map<std::string, std::string> defs;  // id -> event name
  std::set<std::string> containers, destroyed, values;
  std::map<std::string, int> depth;
  std::map<std::string, double> last_time;
  std::size_t pushes = 0, pops = 0;
  double previous = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("%EventDef", 0) == 0) {
      const auto f = paje_fields(line.substr(1));
      defs[f[2]] = f[1];
      continue;
    }
    if (line[0] == '%') continue;
    const auto f = paje_fields(line);
    ASSERT_TRUE(defs.count(f[0])) << line;
    const std::string& event = defs[f[0]];
    if (event == "PajeDefineEntityValue") values.insert(f[1]);
    if (event == "PajeCreateContainer") containers.insert(f[2]);
    if (event == "PajePushState" || event == "PajePopState" || event == "PajeDestroyContainer" ||
        event == "PajeCreateContainer") {
      const double time = std::stod(f[1]);
      EXPECT_GE(time, previous) << "events out of time order: " << line;
      previous = time;
    }
    if (event == "PajePushState" || event == "PajePopState") {
      const std::string& c = f[3];
      EXPECT_TRUE(containers.count(c)) << "state before its container: " << line;
      EXPECT_FALSE(destroyed.count(c)) << line;
      const double time = std::stod(f[1]);
      EXPECT_GE(time, last_time[c]) << line;
      last_time[c] = time;
      if (event == "PajePushState") {
        EXPECT_TRUE(values.count(f[4])) << "undefined value: " << line;
        ++depth[c];
        ++pushes;
      } else {
        EXPECT_GT(depth[c], 0) << "pop without push: " << line;
        --depth[c];
        ++pops;
      }
    }
    if (event == "PajeDestroyContainer") destroyed.insert(f[3]);
  }
  for (const char* e : {"PajeDefineContainerType", "PajeDefineStateType", "PajeDefineEntityValue", "PajeCreateContainer",
                        "PajePushState", "PajePopState", "PajeDestroyContainer"}) {
    bool defined = false;
    for (const auto& [id, name] : defs) defined = defined || name == e;
    EXPECT_TRUE(defined) << e;
  }
  EXPECT_EQ(pushes, t.total_ops);
  EXPECT_EQ(pops, pushes);
  for (const auto& [c, d] : depth) EXPECT_EQ(d, 0) << c << " ends with open states";
  EXPECT_EQ(containers.size(), 9u);  // the program and 8 ranks
  EXPECT_EQ(destroyed, containers);
  // PajeNG's reader, when installed (Debian's pajeng; scripts/install-deps.sh), accepts it and finds every state.
  if (shell("command -v pj_dump").first == 0) {
    const auto [dump_code, dump] = shell("pj_dump " + trace + " 2>&1");
    ASSERT_EQ(dump_code, 0) << dump;
    std::size_t states = 0;
    std::istringstream lines(dump);
    while (std::getline(lines, line)) states += line.rfind("State,", 0) == 0;
    EXPECT_EQ(states, t.total_ops) << dump.substr(0, 2000);
  } else {
    std::cout << "pj_dump not installed: the trace was checked by this test's own parser only\n";
  }
  // --paje needs exactly one timeline.
  EXPECT_EQ(report({run, "--paje", trace}).code, 2);
  fs::remove_all(dir);
}

// --- empty and partial inputs: a page that says what is missing ---

TEST(Report, EmptyTableGivesAPageSayingSo) {
  const fs::path dir = tmpdir("empty");
  results::write_sweep_hdf5((dir / "empty.h5").string(), table_of({}));
  const CliRun r = report({(dir / "empty.h5").string(), "-o", (dir / "p.html").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("0 plot(s)"), std::string::npos) << r.out;
  const std::string html = read_file(dir / "p.html");
  EXPECT_NE(html.find("class=\"missing\">Missing: " + (dir / "empty.h5").string() + ": the sweep table has no rows"),
            std::string::npos);
  EXPECT_NE(html.find("no run result"), std::string::npos);  // the kinds not given are listed
  expect_rendered(dir / "p.html", 0);
  fs::remove_all(dir);
}

TEST(Report, TableWhosePointsAllFailedSaysWhy) {
  const fs::path dir = tmpdir("failed");
  const std::string in = (dir / "failed.h5").string();
  results::write_sweep_hdf5(in, table_of({row("a", 4, {1}, 0, "deadlock"), row("a", 8, {1}, 0, "deadlock"),
                                          row("b", 4, {1}, 0, "error")}));
  const CliRun r = report({in, "-o", (dir / "p.html").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = read_file(dir / "p.html");
  EXPECT_NE(html.find(in + ": all 3 points failed (replay: deadlock 2, error 1)"), std::string::npos) << html.substr(html.find("<h1>"));
  EXPECT_EQ(count(html, "class=\"plot\""), 0u);
  expect_rendered(dir / "p.html", 0);
  fs::remove_all(dir);
}

TEST(Report, PartlyFailedTablePlotsTheRestAndNotesTheFailures) {
  const fs::path dir = tmpdir("partial");
  const std::string in = (dir / "partial.h5").string();
  results::write_sweep_hdf5(in, table_of({row("a", 4, {1}, 2), row("a", 8, {1}, 1.5), row("b", 4, {1}, 3),
                                          row("b", 8, {1}, 1), row("b", 16, {1}, 0, "timeout")}));
  const CliRun r = report({in, "-o", (dir / "p.html").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = read_file(dir / "p.html");
  EXPECT_NE(html.find(in + ": 1 of 5 points failed (replay: timeout 1)"), std::string::npos);
  EXPECT_NE(html.find("<td>a K=1</td><td>b K=1</td>"), std::string::npos) << "the crossing is listed";
  // time vs P, speedup, one split (replay only; K has one value so no best-K plot)
  expect_rendered(dir / "p.html", 3);
  fs::remove_all(dir);
}

TEST(Report, FileOfAnUnknownKindIsNamedOnThePage) {
  const fs::path dir = tmpdir("unknown");
  const std::string other = (dir / "other.h5").string();
  const hid_t f = H5Fcreate(other.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  H5Fclose(f);
  const std::string run = (dir / "run.h5").string();
  results::RunResult res;
  res.attributes = {{"platform", "paragon"}, {"skeleton", "x.json"}};
  res.ranks = {{1.0, 0.5, 0.3, 0.2, 2, 16}, {0.9, 0.6, 0.2, 0.1, 2, 16}};
  res.predicted_time_s = 1.0;
  res.blocks = {{"c", "compute", "", 2, 1.1, 0}, {"s", "send", "x", 4, 0, 32}};
  res.phases = {};  // no phase table: said on the page
  results::write_run_hdf5(run, res);
  const CliRun r = report({other, run, "-o", (dir / "p.html").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = read_file(dir / "p.html");
  EXPECT_NE(html.find(other + ": not a file this report knows (root attribute format = &#39;(none)&#39;"), std::string::npos);
  EXPECT_NE(html.find(run + ": the run has no phase table"), std::string::npos);
  expect_rendered(dir / "p.html", 2);  // per rank, blocks
  fs::remove_all(dir);
}

// --- errors ---

TEST(Report, MissingOrCorruptInputIsAnErrorNamingItAndLeavesTheOutputAlone) {
  const fs::path dir = tmpdir("errors");
  const std::string out = (dir / "p.html").string();
  std::ofstream(out) << "old page";
  std::ofstream(dir / "corrupt.h5") << "this is not HDF5";
  const CliRun missing = report({(dir / "nope.h5").string(), "-o", out});
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "mksim: " + (dir / "nope.h5").string() + ": no such file\n");
  const CliRun corrupt = report({(dir / "corrupt.h5").string(), "-o", out});
  EXPECT_EQ(corrupt.code, 2);
  EXPECT_EQ(corrupt.err.rfind("mksim: " + (dir / "corrupt.h5").string() + ": ", 0), 0u) << corrupt.err;
  std::ofstream(dir / "bad.csv") << "rank,start_s,end_s,kind,block\n0,2,1,compute,c\n";
  const CliRun csv = report({(dir / "corrupt.h5").string(), "--timeline", (dir / "bad.csv").string(), "-o", out});
  EXPECT_EQ(csv.code, 2);
  const CliRun bad_csv = report({"--timeline", (dir / "bad.csv").string(), "-o", out});
  EXPECT_EQ(bad_csv.code, 2);
  EXPECT_NE(bad_csv.err.find("bad.csv: line 2: the operation ends before it starts"), std::string::npos) << bad_csv.err;
  EXPECT_EQ(report({"-o", out}).code, 2);
  EXPECT_EQ(report({(dir / "corrupt.h5").string()}).code, 2);
  EXPECT_EQ(read_file(out), "old page");
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().string().find(".tmp") == std::string::npos ? 1 : 100;
  EXPECT_EQ(files, 3u) << "a temporary file was left behind";
  fs::remove_all(dir);
}

TEST(Report, MissingPlottingLibraryIsAnErrorSayingHowToInstallIt) {
  const fs::path dir = tmpdir("nolib");
  results::write_sweep_hdf5((dir / "t.h5").string(), table_of({row("a", 4, {1}, 2)}));
  const CliRun by_option = report({(dir / "t.h5").string(), "-o", (dir / "p.html").string(), "--js-dir", (dir / "none").string()});
  EXPECT_EQ(by_option.code, 1);
  EXPECT_NE(by_option.err.find((dir / "none/vega/build/vega.min.js").string() + ": not found"), std::string::npos) << by_option.err;
  EXPECT_NE(by_option.err.find("bash scripts/install-deps.sh"), std::string::npos);
  ::setenv("MKSIM_REPORT_JS_DIR", (dir / "env").c_str(), 1);
  const CliRun by_env = report({(dir / "t.h5").string(), "-o", (dir / "p.html").string()});
  ::unsetenv("MKSIM_REPORT_JS_DIR");
  EXPECT_EQ(by_env.code, 1);
  EXPECT_NE(by_env.err.find((dir / "env/vega").string()), std::string::npos) << by_env.err;
  EXPECT_FALSE(fs::exists(dir / "p.html"));
  // The build's default is where scripts/install-deps.sh puts it.
  EXPECT_NO_THROW(results::load_vega_library(results::default_vega_dir()));
  fs::remove_all(dir);
}
