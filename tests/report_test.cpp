// `mksim report`: pages from real inputs (a sweep and a predict with --timeline run by the real mksim binary, a
// calibration database) and from hand-written edge cases (empty table, every point failed, unknown kind), each
// opened in headless Chromium to check that every plot rendered with no script error; the derived values (speedup,
// crossings) checked against hand computations; bad inputs and a missing plotting library as errors.
#include "results/calib_db.hpp"
#include "results/hdf5_io.hpp"
#include "results/report.hpp"
#include "results/report_data.hpp"
#include "results/sweep_table.hpp"
#include "sim/report_cli.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
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

/** @brief Runs a shell command; returns its exit status and stdout. */
std::pair<int, std::string> shell(const std::string& cmd) {
  std::string output;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

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
  EXPECT_NE(dom.find("data-mksim-warnings=\"0\""), std::string::npos) << page << ": Vega warned";
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
