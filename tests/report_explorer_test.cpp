// The report's model explorer (mksim report --explore): a real sweep of the ATM2D example on the Paragon, its page
// opened in Debian's headless Chromium and driven with playwright-core as a user would (tests/report_explorer_drive.js:
// drag the N slider, pick another P), and every value the page shows checked against the analytic model derived here
// in C++ (sim/model) and against the sweep's replayed times.
#include "results/sweep_table.hpp"
#include "sim/engine/machine_model.hpp"
#include "sim/model/model.hpp"
#include "skeletons/skeleton_io.hpp"

#include "tests/process_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;
namespace ms = mksim::sim;

namespace {

const std::string SRC = MKSIM_SOURCE_DIR;
const std::string MKSIM = std::string(MKSIM_BINARY_DIR) + "/sim/mksim";

using mksim::test::shell;

void expect_close(double page, double model, const std::string& what) {
  EXPECT_NEAR(page, model, 1e-12 * std::fabs(model)) << what;
}

}  // namespace

TEST(ReportExplorer, MovingAControlRedrawsTheModelsValues) {
  const fs::path dir = fs::temp_directory_path() / ("mksim_report_explorer_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string skeleton = SRC + "/skeletons/examples/atm2d.json", sweep = (dir / "sweep.h5").string();
  const std::string page = (dir / "explore.html").string();
  auto [code, text] = shell(MKSIM + " sweep --skeleton " + skeleton + " --platform paragon --P 4..32:x2 --param N=256,512 "
                            "--mode both --jobs 2 -q -o " + sweep + " 2>&1");
  ASSERT_EQ(code, 0) << text;
  std::tie(code, text) = shell(MKSIM + " report " + sweep + " --explore -o " + page + " 2>&1");
  ASSERT_EQ(code, 0) << text;
  EXPECT_NE(text.find("explore: atm2d on paragon: model at 4 P"), std::string::npos) << text;

  // the page, driven: N's slider to 384 (a value the sweep did not run), then P = 16
  std::tie(code, text) = shell("NODE_PATH=" + std::string(MKSIM_NODE_MODULES) + " node " + SRC + "/tests/report_explorer_drive.js " +
                               page + " N 384 16 2>&1");
  ASSERT_EQ(code, 0) << text << "\n(node and playwright-core come from scripts/install-deps.sh)";
  const json out = json::parse(text);
  ASSERT_EQ(out.at("render"), "ok") << text;
  EXPECT_TRUE(out.at("errors").empty()) << text;

  // the model, derived here at the page's initial point and at each swept P
  const auto sk = mksim::skeletons::load_skeleton(skeleton);
  const ms::MachineModel machine = ms::load_machine_model(SRC + "/platforms/paragon.xml", 32);
  const json& before = out.at("before");
  std::map<std::string, double> point;
  for (std::size_t i = 0; i < sk.params.size(); ++i) point[sk.params[i].name] = before.at("values").at(i).get<double>();
  EXPECT_EQ(point.at("N"), 256);  // the middle (lower) of the swept values
  std::map<int, ms::AnalyticModel> models;
  for (int P : {4, 8, 16, 32}) models.emplace(P, ms::derive_model(sk, machine, {P, point, true}));

  // before: the curve is the model at every P, the readout at the selected P (the middle one, 8)
  ASSERT_EQ(before.at("curve").size(), 4u);
  for (const auto& c : before.at("curve")) {
    const int P = c.at("P").get<int>();
    expect_close(c.at("time_s").get<double>(), models.at(P).value_s, "curve at P=" + std::to_string(P));
  }
  EXPECT_EQ(before.at("P"), 8);
  expect_close(before.at("T").get<double>(), models.at(8).value_s, "T at the initial point");
  // the replayed diamonds: the sweep's four replays at N = 256, with their times
  const auto table = mksim::results::read_sweep_hdf5(sweep);
  std::map<int, double> replayed;
  for (const auto& row : table.rows)
    if (row.params.at(0) == 256) replayed[row.P] = row.replay.time_s;
  ASSERT_EQ(before.at("replayed").size(), 4u);
  for (const auto& r : before.at("replayed")) EXPECT_EQ(r.at("time_s").get<double>(), replayed.at(r.at("P").get<int>()));

  // after the slider moved to N = 384: the model's value there, the field follows, no replayed point at 384
  const json& moved = out.at("moved");
  EXPECT_EQ(out.at("field"), "384");
  std::map<std::string, double> at384 = point;
  at384["N"] = 384;
  const double T8 = models.at(8).eval(8, at384);
  expect_close(moved.at("T").get<double>(), T8, "T at N=384");
  EXPECT_GT(std::fabs(moved.at("T").get<double>() - before.at("T").get<double>()), 1e-3 * T8) << "the curve did not change";
  // ... which is also what the model derived afresh at N = 384 gives (its rank classes do not change with N here)
  expect_close(moved.at("T").get<double>(), ms::derive_model(sk, machine, {8, at384, true}).value_s, "fresh model at N=384");
  EXPECT_TRUE(moved.at("replayed").empty());
  EXPECT_NEAR(std::stod(out.at("readout").get<std::string>()), T8, 1e-5 * T8);

  // P = 16 chosen: the readout follows, and the breakdown's bars (the critical class's terms) sum to T
  const json& chosen = out.at("P_chosen");
  EXPECT_EQ(chosen.at("P"), 16);
  expect_close(chosen.at("T").get<double>(), models.at(16).eval(16, at384), "T at P=16, N=384");
  double sum = 0;
  for (const auto& t : chosen.at("terms")) sum += t.at("time_s").get<double>();
  EXPECT_NEAR(sum, chosen.at("T").get<double>(), 1e-9 * chosen.at("T").get<double>());
  EXPECT_FALSE(chosen.at("terms").empty());
  // what the curve's view draws is the model at N = 384 at every P
  ASSERT_EQ(out.at("drawn").size(), 4u);
  for (const auto& d : out.at("drawn")) {
    const int P = d.at("P").get<int>();
    expect_close(d.at("time_s").get<double>(), models.at(P).eval(P, at384), "drawn at P=" + std::to_string(P));
  }
  fs::remove_all(dir);
}
