// Vega-Lite specifications of the report's plots (Vega-Lite 6; vega-embed renders them). Data go inline as
// "values"; NaN never reaches a spec (nlohmann writes it as null, which plots nothing, so rows with NaN are left out).
#include "results/report_specs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace mksim::results::report_specs {
namespace {

const Json COMPONENTS = {"compute", "communication", "wait"};
const Json COMPONENT_COLORS = {"#4c78a8", "#f58518", "#e45756"};

/** @brief A quantitative field with a title (the unit in it) and, for seconds, a short number format. */
Json quantity(const std::string& field, const std::string& title, const std::string& format = ".4~g") {
  return {{"field", field}, {"type", "quantitative"}, {"title", title}, {"format", format}};
}
Json nominal(const std::string& field, const std::string& title) {
  return {{"field", field}, {"type", "nominal"}, {"title", title}};
}
Json log_axis(Json channel, int base = 10) {
  channel["scale"] = {{"type", "log"}, {"base", base}};
  return channel;
}
/** @brief P on a log2 axis, ticked at the P that were run (the default ticks of a log2 axis crowd 2..32). */
Json ranks_axis(const std::set<int>& ranks) {
  Json axis = log_axis(quantity("P", "ranks P", "~d"), 2);
  axis["axis"]["values"] = ranks;
  return axis;
}
template <class T>
std::set<int> ranks_of(const std::vector<T>& points) {
  std::set<int> out;
  for (const T& p : points) out.insert(p.P);
  return out;
}
Json component_color() {
  return {{"field", "component"},
          {"type", "nominal"},
          {"title", "time spent in"},
          {"scale", {{"domain", COMPONENTS}, {"range", COMPONENT_COLORS}}},
          {"sort", COMPONENTS}};
}
Json curve_color(const std::string& title = "curve") {
  return {{"field", "curve"}, {"type", "nominal"}, {"title", title}, {"scale", {{"scheme", "tableau20"}}},
          {"legend", {{"labelLimit", 420}}}};
}
Json method_dash() {
  return {{"field", "method"}, {"type", "nominal"}, {"title", "method"},
          {"scale", {{"domain", {"replay", "model"}}, {"range", {Json::array(), {6, 3}}}}},
          {"legend", {{"symbolType", "stroke"}, {"symbolStrokeWidth", 2}}}};
}
bool finite(double v) { return std::isfinite(v); }
std::string format_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}
/** @brief NaN as JSON null (nlohmann does that too, but explicitly keeps the intent visible). */
Json number_or_null(double v) { return finite(v) ? Json(v) : Json(nullptr); }

}  // namespace

namespace {

/** @brief The measured points' layers over a time-vs-P panel: error bars (where there is a spread) and points. */
/** @brief The shape channel of the marks over the curves: crossings (diamonds) and each measured series, one
 *  scale for both layers so that they share a legend. */
Json marker_shape(const std::vector<MeasuredMark>& measured) {
  Json domain = {"crossing"}, range = {"diamond"};
  const char* shapes[] = {"square", "triangle-up", "circle", "cross", "triangle-down", "triangle-right", "triangle-left"};
  std::set<std::string> seen;
  for (const MeasuredMark& m : measured)
    if (seen.insert(m.series).second) {
      domain.push_back(m.series);
      range.push_back(shapes[(domain.size() - 2) % 7]);
    }
  return {{"field", "marker"}, {"type", "nominal"}, {"title", "marked (measured: bars are the spread)"},
          {"scale", {{"domain", domain}, {"range", range}}}, {"legend", {{"labelLimit", 420}}}};
}

void add_measured_layers(Json& layers, const std::vector<MeasuredMark>& measured, const std::set<int>& ranks) {
  Json values = Json::array(), bars = Json::array();
  for (const MeasuredMark& m : measured) {
    const MeasuredPoint& p = *m.point;
    Json v = {{"series", m.series}, {"P", p.P}, {"time_s", p.time_s}, {"low_s", p.low_s}, {"high_s", p.high_s},
              {"repetitions", p.repetitions}, {"spread", p.spread.empty() ? "none given" : p.spread},
              {"params", p.params_text}, {"marker", m.series}};
    values.push_back(v);
    if (!p.spread.empty() && p.high_s > p.low_s) bars.push_back(v);
  }
  if (values.empty()) return;
  // Black, told apart by shape: the colours are the predicted curves'.
  if (!bars.empty())
    layers.push_back({{"data", {{"values", bars}}},
                      {"mark", {{"type", "rule"}, {"color", "black"}}},
                      {"encoding", {{"x", ranks_axis(ranks)}, {"y", log_axis(quantity("low_s", "predicted time (s)"))},
                                    {"y2", {{"field", "high_s"}}}}}});
  layers.push_back({{"data", {{"values", values}}},
                    {"mark", {{"type", "point"}, {"filled", true}, {"size", 60}, {"color", "black"}}},
                    {"encoding", {{"x", ranks_axis(ranks)}, {"y", log_axis(quantity("time_s", "predicted time (s)"))},
                                  {"shape", marker_shape(measured)},
                                  {"tooltip", {nominal("series", "measured"), quantity("P", "P", "~d"),
                                               nominal("params", "parameters"), quantity("time_s", "measured time (s)"),
                                               quantity("low_s", "low (s)"), quantity("high_s", "high (s)"),
                                               quantity("repetitions", "repetitions", "~d"), nominal("spread", "error bar")}}}}});
}

}  // namespace

Json time_vs_p(const std::vector<CurvePoint>& points, const std::vector<Crossing>& crossings,
               const std::vector<MeasuredMark>& measured) {
  Json panels = Json::array();
  for (const char* method : {"replay", "model"}) {
    Json values = Json::array();
    for (const CurvePoint& p : points)
      if (p.method == method)
        values.push_back({{"curve", p.curve}, {"P", p.P}, {"time_s", p.time_s}, {"compute_s", p.compute_s},
                          {"comm_s", p.comm_s}, {"wait_s", number_or_null(p.wait_s)}});
    if (values.empty()) continue;
    Json tooltip = {nominal("curve", "curve"), quantity("P", "P", "~d"), quantity("time_s", "predicted time (s)"),
                    quantity("compute_s", "compute (s)"), quantity("comm_s", "communication (s)")};
    if (std::string(method) == "replay") tooltip.push_back(quantity("wait_s", "wait (s)"));
    Json layers = Json::array();
    layers.push_back({{"data", {{"values", values}}},
                      {"mark", {{"type", "line"}, {"point", true}}},
                      {"encoding",
                       {{"x", ranks_axis(ranks_of(points))},
                        {"y", log_axis(quantity("time_s", "predicted time (s)"))},
                        {"color", curve_color()},
                        {"tooltip", tooltip}}}});
    Json marks = Json::array();
    for (const Crossing& c : crossings)
      if (c.method == method)
        marks.push_back({{"P", c.P}, {"time_s", c.time_s}, {"a", c.a}, {"b", c.b}, {"between", 
                          std::to_string(c.P_low) + (c.P_low == c.P_high ? "" : " and " + std::to_string(c.P_high))},
                         {"marker", "crossing"}});
    if (!marks.empty())
      layers.push_back({{"data", {{"values", marks}}},
                        {"mark", {{"type", "point"}, {"filled", true}, {"size", 150}, {"color", "black"}}},
                        {"encoding",
                         {{"x", ranks_axis(ranks_of(points))},
                          {"y", log_axis(quantity("time_s", "predicted time (s)"))},
                          {"shape", marker_shape(measured)},
                          {"tooltip",
                           {nominal("a", "curve"), nominal("b", "crosses curve"), quantity("P", "at P (interpolated)", ".4~g"),
                            nominal("between", "between measured P"), quantity("time_s", "time there (s)")}}}}});
    add_measured_layers(layers, measured, ranks_of(points));
    panels.push_back({{"title", std::string(method) + ": predicted time vs P"},
                      {"width", 380},
                      {"height", 280},
                      {"layer", layers}});
  }
  return {{"hconcat", panels}, {"resolve", {{"scale", {{"color", "shared"}, {"y", "shared"}}}}}};
}

Json measured_vs_predicted(const std::vector<std::pair<std::string, MeasuredMatch>>& matches) {
  Json values = Json::array();
  double lo = 0, hi = 0;
  for (const auto& [series, m] : matches) {
    const MeasuredPoint& mp = *m.measured;
    const CurvePoint& cp = *m.predicted;
    values.push_back({{"series", series}, {"curve", cp.curve}, {"method", cp.method}, {"P", mp.P},
                      {"params", mp.params_text}, {"measured_s", mp.time_s}, {"low_s", mp.low_s},
                      {"high_s", mp.high_s}, {"predicted_s", cp.time_s}, {"rel_error", m.rel_error},
                      {"repetitions", mp.repetitions}, {"has_bar", !mp.spread.empty() && mp.high_s > mp.low_s}});
    for (double v : {mp.low_s, mp.high_s, cp.time_s}) {
      lo = lo == 0 ? v : std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  const Json x = log_axis(quantity("measured_s", "measured time (s)"));
  const Json y = log_axis(quantity("predicted_s", "predicted time (s)"));
  const Json color = {{"field", "curve"}, {"type", "nominal"}, {"title", "predicted curve"},
                      {"scale", {{"scheme", "tableau20"}}}, {"legend", {{"labelLimit", 420}}}};
  return {{"title", "predicted vs measured time"},
          {"width", 420},
          {"height", 360},
          {"layer",
           {{{"data", {{"values", {{{"t", lo}, {"p", lo}, {"line", "equality"}}, {{"t", hi}, {"p", hi}, {"line", "equality"}}}}}},
             {"mark", {{"type", "line"}, {"color", "gray"}, {"strokeDash", {2, 2}}}},
             {"encoding", {{"x", log_axis(quantity("t", "measured time (s)"))}, {"y", log_axis(quantity("p", "predicted time (s)"))},
                           {"tooltip", {nominal("line", "line")}}}}},
            {{"data", {{"values", values}}},
             {"transform", {{{"filter", "datum.has_bar"}}}},
             {"mark", {{"type", "rule"}}},
             {"encoding", {{"x", log_axis(quantity("low_s", "measured time (s)"))}, {"x2", {{"field", "high_s"}}},
                           {"y", y}, {"color", color}}}},
            {{"data", {{"values", values}}},
             {"mark", {{"type", "point"}, {"filled", true}, {"size", 50}}},
             {"encoding", {{"x", x}, {"y", y}, {"color", color},
                           {"shape", {{"field", "method"}, {"type", "nominal"}, {"title", "method"}}},
                           {"tooltip", {nominal("series", "measured"), nominal("curve", "predicted curve"),
                                        nominal("method", "method"), quantity("P", "P", "~d"), nominal("params", "parameters"),
                                        quantity("measured_s", "measured (s)"), quantity("predicted_s", "predicted (s)"),
                                        quantity("rel_error", "error (predicted - measured) / measured", "+.1%"),
                                        quantity("repetitions", "repetitions", "~d")}}}}}}}};
}

namespace {

Json scale_values(const std::vector<ScalePoint>& points, bool with_psi) {
  Json values = Json::array();
  for (const ScalePoint& s : points) {
    if (s.status != "ok" || !finite(s.n) || !finite(s.work)) continue;
    Json v = {{"curve", s.curve}, {"method", s.method}, {"P", s.P}, {"base_P", s.base_P}, {"base_n", s.base_n},
              {"n", s.n}, {"work", s.work}, {"target", s.target}, {"n_low", s.n_low}, {"n_high", s.n_high},
              {"bracket", s.n_low == s.n_high ? "a swept value" : "between " + format_g(s.n_low) + " and " + format_g(s.n_high)}};
    if (with_psi) v["psi"] = number_or_null(s.psi);
    values.push_back(v);
  }
  return values;
}

}  // namespace

Json isospeed(const std::vector<ScalePoint>& points, const WorkModel& work) {
  const Json values = scale_values(points, true);
  const std::string w = work.exponent == 1 ? work.param : work.param + "^" + format_g(work.exponent);
  const Json tooltip = {nominal("curve", "curve"), nominal("method", "method"), quantity("P", "P", "~d"),
                        quantity("n", "required " + work.param, ".4~g"), quantity("work", "work W = " + w, ".4~g"),
                        quantity("psi", "psi(P0, P)", ".3~f"), quantity("target", "speed per processor kept (W/(T·P), work/s)", ".4~g"),
                        nominal("bracket", "interpolated " + work.param)};
  Json required = {{"title", "isospeed: work needed to keep W/(T·P)"},
                   {"width", 380},
                   {"height", 280},
                   {"data", {{"values", values}}},
                   {"mark", {{"type", "line"}, {"point", true}}},
                   {"encoding", {{"x", ranks_axis(ranks_of(points))}, {"y", log_axis(quantity("work", "required work W = " + w + " (work units)", ".3~s"))},
                                 {"color", curve_color()}, {"strokeDash", method_dash()}, {"tooltip", tooltip}}}};
  Json psi = {{"title", "isospeed scalability psi(P0, P) = P·W0 / (P0·W)"},
              {"width", 380},
              {"height", 280},
              {"data", {{"values", values}}},
              {"mark", {{"type", "line"}, {"point", true}}},
              {"encoding", {{"x", ranks_axis(ranks_of(points))}, {"y", quantity("psi", "psi (1 = ideal, dimensionless)", ".2~f")},
                            {"color", curve_color()}, {"strokeDash", method_dash()}, {"tooltip", tooltip}}}};
  return {{"hconcat", {required, psi}}, {"resolve", {{"scale", {{"color", "shared"}}}}}};
}

Json constant_time(const std::vector<ScalePoint>& points, const WorkModel& work) {
  const Json values = scale_values(points, false);
  return {{"title", "constant time: largest " + work.param + " that runs in the base time"},
          {"width", 420},
          {"height", 280},
          {"data", {{"values", values}}},
          {"mark", {{"type", "line"}, {"point", true}}},
          {"encoding",
           {{"x", ranks_axis(ranks_of(points))},
            {"y", log_axis(quantity("n", "largest " + work.param + " (problem-size parameter)", ".4~g"), 2)},
            {"color", curve_color()},
            {"strokeDash", method_dash()},
            {"tooltip", {nominal("curve", "curve"), nominal("method", "method"), quantity("P", "P", "~d"),
                         quantity("n", "largest " + work.param, ".4~g"), quantity("target", "time kept (s)"),
                         quantity("work", "its work W (work units)", ".4~g"), nominal("bracket", "interpolated " + work.param)}}}}};
}

std::string method_class(const std::string& method) {
  for (const char* c : {"simulated", "not simulated", "formula", "model"})
    if (method.rfind(c, 0) == 0) return c;
  return "other";
}

Json diagnosis_ranking(const Diagnosis& d) {
  Json values = Json::array();
  int rank = 0;
  for (const Problem& p : d.problems) {
    ++rank;
    std::string where = p.block.empty() ? "phase " + p.phase : p.block + (p.phase.empty() ? "" : " (phase " + p.phase + ")");
    const std::string label = std::to_string(rank) + ". " + p.kind + (where.empty() ? "" : ": " + where);
    values.push_back({{"finding", label}, {"rank", rank}, {"kind", p.kind}, {"where", where}, {"ranks", p.ranks},
                      {"action", p.action}, {"gain_s", p.gain_s}, {"gain_pct", p.gain_pct / 100},
                      {"method", method_class(p.method)}, {"how", p.method},
                      {"formula_gain_s", p.formula_gain_s >= 0 ? Json(p.formula_gain_s) : Json(nullptr)},
                      {"detail", p.detail}, {"reported", p.gain_pct >= d.threshold_pct ? "yes" : "below threshold"}});
  }
  const Json tooltip = {nominal("finding", "finding"), nominal("where", "where"), nominal("ranks", "ranks"),
                        nominal("action", "what to do"), quantity("gain_s", "predicted gain (s)"),
                        quantity("gain_pct", "gain (% of the baseline)", ".1%"), nominal("how", "gain obtained by"),
                        quantity("formula_gain_s", "seed 002 formula's estimate (s)"), nominal("detail", "figures"),
                        nominal("reported", "above the threshold")};
  const Json y = {{"field", "finding"}, {"type", "nominal"}, {"title", nullptr},  // the labels say it: "rank. kind: where"
                  {"sort", {{"field", "rank"}, {"op", "min"}}}, {"axis", {{"labelLimit", 360}}}};
  const Json color = {{"field", "method"}, {"type", "nominal"}, {"title", "gain obtained by"},
                      {"scale", {{"domain", {"simulated", "not simulated", "formula", "model", "other"}},
                                 {"range", {"#4c78a8", "#bab0ac", "#f58518", "#54a24b", "#9d755d"}}}}};
  // The bar is the gain the diagnosis ranks by; the diamond the seed 002 formula's estimate, where it has one (a
  // finding the engine could not fix has gain 0 and only the formula's figure).
  Json seconds = {{"title", "predicted gain if fixed (s)"}, {"width", 360}, {"height", {{"step", 20}}},
                  {"layer",
                   {{{"mark", "bar"},
                     {"encoding", {{"y", y}, {"x", quantity("gain_s", "predicted gain (s)")}, {"color", color},
                                   {"tooltip", tooltip}}}},
                    {{"transform", {{{"filter", "isValid(datum.formula_gain_s)"}}}},
                     {"mark", {{"type", "point"}, {"shape", "diamond"}, {"filled", true}, {"size", 70}, {"color", "black"}}},
                     {"encoding", {{"y", y}, {"x", quantity("formula_gain_s", "predicted gain (s)")},
                                   {"opacity", {{"datum", "seed 002 formula's estimate"}, {"type", "nominal"}, {"title", "marked"},
                                                {"scale", {{"range", {1}}}}}},
                                   {"tooltip", tooltip}}}}}}};
  Json percent = {{"title", "predicted gain (% of the baseline time)"}, {"width", 240}, {"height", {{"step", 20}}},
                  {"mark", "bar"},
                  {"encoding", {{"y", y}, {"x", quantity("gain_pct", "gain (% of the baseline)", ".0%")}, {"color", color},
                                {"tooltip", tooltip}}}};
  percent["encoding"]["x"]["axis"] = {{"format", ".0%"}};
  percent["encoding"]["y"]["axis"] = {{"labels", false}, {"title", nullptr}};
  return {{"data", {{"values", values}}}, {"hconcat", {seconds, percent}}};
}

Json speedup_efficiency(const std::vector<ScalingPoint>& points) {
  Json values = Json::array();
  int lo = 0, hi = 0;
  for (const ScalingPoint& s : points) {
    values.push_back({{"curve", s.curve}, {"method", s.method}, {"P", s.P}, {"base_P", s.base_P},
                      {"time_s", s.time_s}, {"speedup", s.speedup}, {"efficiency", s.efficiency}});
    lo = lo == 0 ? s.P : std::min(lo, s.P);
    hi = std::max(hi, s.P);
  }
  const Json tooltip = {nominal("curve", "curve"), nominal("method", "method"), quantity("P", "P", "~d"),
                        quantity("time_s", "predicted time (s)"), quantity("speedup", "speedup", ".3~f"),
                        quantity("efficiency", "efficiency", ".1%"), quantity("base_P", "reference P", "~d")};
  const Json line = {{"type", "line"}, {"point", true}};
  Json ideal = {{"data", {{"values", {{{"P", lo}, {"speedup", lo}, {"line", "ideal (S = P)"}},
                                      {{"P", hi}, {"speedup", hi}, {"line", "ideal (S = P)"}}}}}},
                {"mark", {{"type", "line"}, {"color", "gray"}, {"strokeDash", {2, 2}}}},
                {"encoding", {{"x", ranks_axis(ranks_of(points))}, {"y", log_axis(quantity("speedup", "speedup"), 2)},
                              {"tooltip", {nominal("line", "line"), quantity("P", "P", "~d")}}}}};
  Json speedup = {{"title", "speedup T(Pmin)·Pmin / T(P)"},
                  {"width", 380},
                  {"height", 280},
                  {"layer",
                   {ideal,
                    {{"data", {{"values", values}}},
                     {"mark", line},
                     {"encoding", {{"x", ranks_axis(ranks_of(points))}, {"y", log_axis(quantity("speedup", "speedup (×)"), 2)},
                                   {"color", curve_color()}, {"strokeDash", method_dash()}, {"tooltip", tooltip}}}}}}};
  Json efficiency = {{"title", "efficiency speedup / P"},
                     {"width", 380},
                     {"height", 280},
                     {"data", {{"values", values}}},
                     {"mark", line},
                     {"encoding", {{"x", ranks_axis(ranks_of(points))}, {"y", quantity("efficiency", "efficiency (fraction of ideal)", ".0%")},
                                   {"color", curve_color()}, {"strokeDash", method_dash()}, {"tooltip", tooltip}}}};
  efficiency["encoding"]["y"]["axis"] = {{"format", ".0%"}};
  return {{"hconcat", {speedup, efficiency}}, {"resolve", {{"scale", {{"color", "shared"}}}}}};
}

Json best_vs_p(const std::vector<BestRow>& replay, const std::vector<BestRow>& model, const std::string& over) {
  Json values = Json::array();
  bool positive = true;
  std::set<int> ranks;
  std::set<double> bests;
  for (const auto* rows : {&replay, &model}) {
    for (const BestRow& b : *rows) {
      std::string curve;
      int P = 0;
      for (const auto& [name, value] : b.group) {
        if (name == "P") P = std::atoi(value.c_str());
        else curve += (curve.empty() ? "" : " ") + (name == "platform" ? value : name + "=" + value);
      }
      const double best = std::strtod(b.best.c_str(), nullptr);
      positive = positive && best > 0;
      ranks.insert(P);
      bests.insert(best);
      values.push_back({{"curve", curve}, {"method", rows == &replay ? "replay" : "model"}, {"P", P}, {"best", best},
                        {"time_s", b.time_s}, {"runner_up_s", number_or_null(b.runner_up_s)},
                        {"candidates", b.candidates}});
    }
  }
  Json y = quantity("best", "best " + over + " (least predicted time)", "~g");
  if (positive) {
    y = log_axis(y, 2);
    y["axis"] = {{"values", bests}};
  }
  return {{"title", "best " + over + " vs P"},
          {"width", 420},
          {"height", 280},
          {"data", {{"values", values}}},
          {"mark", {{"type", "line"}, {"point", true}}},
          {"encoding",
           {{"x", ranks_axis(ranks)},
            {"y", y},
            {"color", curve_color()},
            {"strokeDash", method_dash()},
            {"tooltip",
             {nominal("curve", "curve"), nominal("method", "method"), quantity("P", "P", "~d"),
              quantity("best", "best " + over, "~g"), quantity("time_s", "its predicted time (s)"),
              quantity("runner_up_s", "next best's time (s)"), quantity("candidates", over + " values compared", "~d")}}}}};
}

Json split_per_point(const std::vector<CurvePoint>& points, const std::string& method) {
  Json values = Json::array();
  int order = 0;
  for (const CurvePoint& p : points) {
    if (p.method != method) continue;
    const std::string label = p.curve + " P=" + std::to_string(p.P);
    const std::pair<const char*, double> parts[] = {
        {"compute", p.compute_s}, {"communication", p.comm_s}, {"wait", p.wait_s}};
    for (const auto& [component, seconds] : parts)
      if (finite(seconds))
        values.push_back({{"point", label}, {"order", order}, {"component", component}, {"seconds", seconds},
                          {"time_s", p.time_s}});
    ++order;
  }
  return {{"title", method + ": time split per point" + (method == "model" ? " (the model has no wait)" : "")},
          {"width", {{"step", 14}}},
          {"height", 220},
          {"data", {{"values", values}}},
          {"mark", "bar"},
          {"encoding",
           {{"x", {{"field", "point"}, {"type", "nominal"}, {"title", "point (curve, P)"},
                   {"sort", {{"field", "order"}, {"op", "min"}}}, {"axis", {{"labelAngle", -90}, {"labelLimit", 220}}}}},
            {"y", {{"field", "seconds"}, {"type", "quantitative"}, {"stack", "normalize"},
                   {"title", "share of the critical rank's time"}, {"axis", {{"format", ".0%"}}}}},
            {"color", component_color()},
            {"tooltip", {nominal("point", "point"), nominal("component", "component"), quantity("seconds", "seconds (s)"),
                         quantity("time_s", "predicted time (s)")}}}}};
}

Json phase_split(const RunResult& run) {
  Json values = Json::array();
  for (const PhaseTotals& ph : run.phases) {
    const std::string name = ph.phase.empty() ? "(none)" : ph.phase;
    const std::pair<const char*, double> parts[] = {
        {"compute", ph.compute_s}, {"communication", ph.comm_s}, {"wait", ph.wait_s}};
    for (const auto& [component, seconds] : parts)
      values.push_back({{"phase", name}, {"component", component}, {"seconds", seconds},
                        {"critical_rank_s", ph.critical_rank_s}, {"end_s", ph.end_s}});
  }
  return {{"title", "time per phase, summed over ranks"},
          {"width", 520},
          {"height", {{"step", 18}}},
          {"data", {{"values", values}}},
          {"mark", "bar"},
          {"encoding",
           {{"y", {{"field", "phase"}, {"type", "nominal"}, {"title", "phase label"}, {"axis", {{"labelLimit", 240}}}}},
            {"x", {{"field", "seconds"}, {"type", "quantitative"}, {"stack", "zero"},
                   {"title", "simulated time summed over ranks (s)"}}},
            {"color", component_color()},
            {"tooltip", {nominal("phase", "phase"), nominal("component", "component"),
                         quantity("seconds", "summed over ranks (s)"),
                         quantity("critical_rank_s", "critical rank's time in the phase (s)"),
                         quantity("end_s", "phase ends at (s)")}}}}};
}

Json rank_split(const RunResult& run, std::size_t max_bars) {
  const std::size_t P = run.ranks.size();
  const std::size_t group = std::max<std::size_t>(1, (P + max_bars - 1) / std::max<std::size_t>(1, max_bars));
  Json values = Json::array();
  for (std::size_t first = 0; first < P; first += group) {
    const std::size_t last = std::min(P, first + group) - 1;
    double c = 0, m = 0, w = 0, finish = 0;
    for (std::size_t r = first; r <= last; ++r) {
      c += run.ranks[r].compute_s;
      m += run.ranks[r].comm_s;
      w += run.ranks[r].wait_s;
      finish = std::max(finish, run.ranks[r].finish_s);
    }
    const double n = static_cast<double>(last - first + 1);
    const std::string label = group == 1 ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last);
    const std::pair<const char*, double> parts[] = {{"compute", c / n}, {"communication", m / n}, {"wait", w / n}};
    for (const auto& [component, seconds] : parts)
      values.push_back({{"ranks", label}, {"first", first}, {"component", component}, {"seconds", seconds},
                        {"finish_s", finish}});
  }
  const bool grouped = group > 1;
  return {{"title", grouped ? "mean time per rank, ranks in groups of " + std::to_string(group) : std::string("time per rank")},
          {"width", P <= 64 ? Json({{"step", 14}}) : Json(720)},
          {"height", 240},
          {"data", {{"values", values}}},
          {"mark", "bar"},
          {"encoding",
           {{"x", {{"field", "ranks"}, {"type", "ordinal"}, {"title", grouped ? "ranks" : "rank"},
                   {"sort", {{"field", "first"}, {"op", "min"}}}, {"axis", {{"labelOverlap", true}}}}},
            {"y", {{"field", "seconds"}, {"type", "quantitative"}, {"stack", "zero"}, {"title", "simulated time (s)"}}},
            {"color", component_color()},
            {"tooltip", {nominal("ranks", grouped ? "ranks" : "rank"), nominal("component", "component"),
                         quantity("seconds", grouped ? "mean per rank (s)" : "seconds (s)"),
                         quantity("finish_s", "finishes at (s)")}}}}};
}

Json top_blocks(const RunResult& run, std::size_t top) {
  std::vector<const BlockTotals*> blocks;
  for (const BlockTotals& b : run.blocks)
    if (b.time_s > 0) blocks.push_back(&b);
  std::stable_sort(blocks.begin(), blocks.end(), [](const BlockTotals* a, const BlockTotals* b) { return a->time_s > b->time_s; });
  if (blocks.size() > top) blocks.resize(top);
  Json values = Json::array();
  for (const BlockTotals* b : blocks)
    values.push_back({{"block", b->id}, {"op", b->op}, {"phase", b->phase.empty() ? "(none)" : b->phase},
                      {"executions", b->executions}, {"time_s", b->time_s}, {"bytes", b->bytes}});
  return {{"title", "blocks with the most time, summed over ranks (where to look first)"},
          {"width", 520},
          {"height", {{"step", 18}}},
          {"data", {{"values", values}}},
          {"mark", "bar"},
          {"encoding",
           {{"y", {{"field", "block"}, {"type", "nominal"}, {"title", "block"}, {"sort", "-x"}, {"axis", {{"labelLimit", 260}}}}},
            {"x", quantity("time_s", "time summed over ranks (s)")},
            {"color", nominal("op", "operation")},
            {"tooltip", {nominal("block", "block"), nominal("op", "operation"), nominal("phase", "phase"),
                         quantity("executions", "executions", "~d"), quantity("time_s", "time (s)"),
                         quantity("bytes", "bytes sent (B)", "~s")}}}}};
}

Json gantt(const Timeline& timeline) {
  Json values = Json::array();
  std::set<int> ranks;
  for (const TimelineOp& op : timeline.ops) {
    ranks.insert(op.rank);
    values.push_back({{"rank", op.rank}, {"start_s", op.start_s}, {"end_s", op.end_s}, {"kind", op.kind},
                      {"block", op.block}, {"duration_s", op.end_s - op.start_s}});
  }
  const int step = std::clamp(640 / std::max<int>(1, static_cast<int>(ranks.size())), 4, 18);
  return {{"title", "per-rank timeline"},
          {"width", 820},
          {"height", {{"step", step}}},
          {"data", {{"values", values}}},
          {"mark", {{"type", "bar"}, {"cornerRadius", 0}}},
          {"encoding",
           {{"y", {{"field", "rank"}, {"type", "ordinal"}, {"title", "rank"}, {"axis", {{"labelOverlap", true}}}}},
            {"x", quantity("start_s", "simulated time (s)")},
            {"x2", {{"field", "end_s"}}},
            {"color", nominal("kind", "operation")},
            {"tooltip", {quantity("rank", "rank", "~d"), nominal("kind", "operation"), nominal("block", "block"),
                         quantity("start_s", "start (s)", ".6~g"), quantity("end_s", "end (s)", ".6~g"),
                         quantity("duration_s", "duration (s)")}}}}};
}

namespace {

/** @brief A positive lower end for a CI bar on a log axis: the CI's, else the least positive repetition, else the
 *  median itself (a Student-t interval of few noisy repetitions can reach below zero). */
double positive_low(const CalibSize& s) {
  if (s.ci95_low_s > 0) return s.ci95_low_s;
  double least = s.median_s;
  for (double t : s.times_s)
    if (t > 0 && t < least) least = t;
  return least;
}

Json measured_layers(const Json& values, const std::string& y_title) {
  Json y = log_axis(quantity("median_s", y_title));
  return Json::array(
      {{{"data", {{"values", values}}},
        {"mark", {{"type", "rule"}}},
        {"encoding", {{"x", log_axis(quantity("size_bytes", "size (bytes)", "~s"))},
                      {"y", log_axis(quantity("low_s", y_title))},
                      {"y2", {{"field", "high_s"}}},
                      {"color", {{"field", "series"}, {"type", "nominal"}, {"title", "series"}, {"legend", {{"labelLimit", 420}}}}}}}},
       {{"data", {{"values", values}}},
        {"mark", {{"type", "point"}, {"filled", true}, {"size", 40}}},
        {"encoding", {{"x", log_axis(quantity("size_bytes", "size (bytes)", "~s"))},
                      {"y", y},
                      {"color", {{"field", "series"}, {"type", "nominal"}}},
                      {"tooltip", {nominal("series", "series"), quantity("size_bytes", "size (B)", "~d"),
                                   quantity("median_s", "median (s)"), quantity("mean_s", "mean (s)"),
                                   quantity("ci95_low_s", "95% CI low (s)"), quantity("ci95_high_s", "95% CI high (s)"),
                                   quantity("repetitions", "repetitions", "~d")}}}}}});
}

Json size_row(const std::string& series, const CalibSize& s) {
  return {{"series", series}, {"size_bytes", s.size_bytes}, {"median_s", s.median_s}, {"mean_s", s.mean_s},
          {"ci95_low_s", s.ci95_low_s}, {"ci95_high_s", s.ci95_high_s}, {"low_s", positive_low(s)},
          {"high_s", std::max(s.ci95_high_s, s.median_s)}, {"repetitions", s.times_s.size()}};
}

}  // namespace

Json kernel_time_vs_size(const CalibKernel& kernel) {
  Json values = Json::array();
  for (const CalibSize& s : kernel.sizes)
    if (s.size_bytes > 0 && s.median_s > 0) values.push_back(size_row("measured median, 95% CI", s));
  Json layers = measured_layers(values, "time per operation (s)");
  Json fit = Json::array();
  for (const CalibRegime& r : kernel.fit) {
    char label[160];
    std::snprintf(label, sizeof label, "fit %s: %.3g s + D x %.3g s/B", r.name.c_str(), r.rho_s, r.beta_s_per_byte);
    const double lo = static_cast<double>(std::max<std::uint64_t>(1, r.from_bytes));
    const double hi = std::max(lo, static_cast<double>(r.to_bytes));
    for (int k = 0; k <= 16; ++k) {
      const double d = lo * std::pow(hi / lo, k / 16.0);
      const double t = r.rho_s + r.beta_s_per_byte * d;
      if (t > 0)
        fit.push_back({{"series", label}, {"size_bytes", d}, {"median_s", t}, {"rho_s", r.rho_s},
                       {"beta_s_per_byte", r.beta_s_per_byte}, {"rel_rss", r.rel_rss}, {"regime", r.name}});
      if (hi == lo) break;
    }
  }
  if (!fit.empty())
    layers.push_back({{"data", {{"values", fit}}},
                      {"mark", {{"type", "line"}, {"strokeWidth", 2}}},
                      {"encoding", {{"x", log_axis(quantity("size_bytes", "size (bytes)", "~s"))},
                                    {"y", log_axis(quantity("median_s", "time per operation (s)"))},
                                    {"color", {{"field", "series"}, {"type", "nominal"}}},
                                    {"detail", {{"field", "regime"}}},
                                    {"tooltip", {nominal("series", "fit"), quantity("rho_s", "start-up rho (s)"),
                                                 quantity("beta_s_per_byte", "beta (s/byte)"),
                                                 quantity("rel_rss", "relative RSS")}}}}});
  return {{"title", kernel.name + ": time vs message size"}, {"width", 480}, {"height", 300}, {"layer", layers}};
}

Json compute_rate(const CalibKernel& kernel) {
  Json values = Json::array();
  for (const CalibSize& s : kernel.sizes) {
    if (s.median_s <= 0) continue;
    const double high_s = std::max(s.ci95_high_s, s.median_s);
    values.push_back({{"series", "measured median, 95% CI"}, {"size_bytes", s.size_bytes}, {"rate", 1 / s.median_s},
                      {"rate_low", 1 / high_s}, {"rate_high", 1 / positive_low(s)}, {"median_s", s.median_s},
                      {"repetitions", s.times_s.size()}});
  }
  const Json x = log_axis(quantity("size_bytes", "working-set size (bytes)", "~s"));
  const Json y = quantity("rate", "compute rate (flop/s)", ".3~s");
  return {{"title", kernel.name + ": compute rate vs working-set size"},
          {"width", 480},
          {"height", 300},
          {"data", {{"values", values}}},
          {"layer",
           {{{"mark", "rule"},
             {"encoding", {{"x", x}, {"y", quantity("rate_low", "compute rate (flop/s)", ".3~s")}, {"y2", {{"field", "rate_high"}}},
                           {"color", {{"field", "series"}, {"type", "nominal"}, {"title", "series"}}}}}},
            {{"mark", {{"type", "line"}, {"point", true}}},
             {"encoding", {{"x", x}, {"y", y}, {"color", {{"field", "series"}, {"type", "nominal"}}},
                           {"tooltip", {quantity("size_bytes", "working set (B)", "~d"), quantity("rate", "median rate (flop/s)", ".4~s"),
                                        quantity("rate_low", "95% CI low (flop/s)", ".4~s"),
                                        quantity("rate_high", "95% CI high (flop/s)", ".4~s"),
                                        quantity("median_s", "median (s/flop)"),
                                        quantity("repetitions", "repetitions", "~d")}}}}}}}};
}

Json kernels_time_vs_size(const std::vector<const CalibKernel*>& kernels) {
  Json values = Json::array();
  for (const CalibKernel* k : kernels)
    for (const CalibSize& s : k->sizes)
      if (s.size_bytes > 0 && s.median_s > 0) values.push_back(size_row(k->name, s));
  Json spec = {{"title", "other kernels: time vs size"}, {"width", 480}, {"height", 300},
               {"layer", measured_layers(values, "time per operation (s)")}};
  spec["layer"][0]["encoding"]["color"]["title"] = "kernel";
  return spec;
}

}  // namespace mksim::results::report_specs
