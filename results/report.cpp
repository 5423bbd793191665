// `mksim report`: reads each input once through its reader (kind told by the root attribute `format`), derives the
// plotted values (report_data), builds one Vega-Lite spec per plot (report_specs) and writes one HTML page with the
// plotting library inlined, so it opens with no network. What cannot be plotted is said on the page, in class
// "missing" paragraphs; the page marks <body data-mksim-render> "ok" once every plot rendered with no script error.
#include "results/report.hpp"

#include "results/calib_db.hpp"
#include "results/diagnosis.hpp"
#include "results/hdf5_common.hpp"
#include "results/hdf5_io.hpp"
#include "results/html_text.hpp"
#include "results/report_data.hpp"
#include "results/report_explorer.hpp"
#include "results/report_specs.hpp"
#include "results/sweep_table.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#ifndef MKSIM_VEGA_DIR
#define MKSIM_VEGA_DIR "/usr/local/share/mksim/js/node_modules"
#endif

namespace fs = std::filesystem;

namespace mksim::results {
namespace {

using report_specs::Json;

// ---------------------------------------------------------------------------------------------- inputs

enum class Kind { RUN, SWEEP, CALIBRATION, TIMELINE, DIAGNOSIS, UNKNOWN };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::RUN: return "run result (mksim predict -o)";
    case Kind::SWEEP: return "sweep table (mksim sweep -o)";
    case Kind::CALIBRATION: return "calibration database (mkcalib bench -o)";
    case Kind::TIMELINE: return "timeline CSV (mksim predict --timeline)";
    case Kind::DIAGNOSIS: return "diagnosis (mksim diagnose -o)";
    case Kind::UNKNOWN: return "unknown";
  }
  return "unknown";
}

/** @brief One input, read once. */
struct Input {
  std::string path;
  Kind kind = Kind::UNKNOWN;
  std::string format;  ///< the root attribute `format` ("" when absent), for unknown kinds
  RunResult run;
  SweepTable sweep;
  CalibDb calibration;
  Timeline timeline;
  Diagnosis diagnosis;
};

/** @brief The root attribute `format` of an HDF5 file, "" when it has none.
 *  @throws std::runtime_error naming `path` when it is not an HDF5 file. */
std::string format_of(const std::string& path) {
  using namespace detail;
  const QuietHdf5Errors quiet;
  const Handle file = open_for_reading(path);
  const htri_t exists = H5Aexists(file.get(), "format");
  if (exists < 0) fail(path, "look up root attribute 'format'");
  if (exists == 0) return "";
  const Handle a = checked(H5Aopen(file.get(), "format", H5P_DEFAULT), H5Aclose, path, "open root attribute 'format'");
  const Handle type = checked(H5Aget_type(a.get()), H5Tclose, path, "get type of root attribute 'format'");
  if (H5Tget_class(type.get()) != H5T_STRING) return "(not a string)";
  const Handle space = checked(H5Aget_space(a.get()), H5Sclose, path, "get space of root attribute 'format'");
  const auto values = read_strings(path, type.get(), space.get(), "root attribute 'format'",
                                   [&](hid_t memory, void* buffer) { return H5Aread(a.get(), memory, buffer); });
  return values.size() == 1 ? values.front() : "(not a scalar)";
}

Input read_input(const std::string& path, bool timeline, std::size_t max_timeline_ops) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw ReportInputError(path + ": no such file");
  if (fs::is_directory(path, ec)) throw ReportInputError(path + ": is a directory, not a file");
  Input in;
  in.path = path;
  try {
    if (timeline) {
      in.kind = Kind::TIMELINE;
      in.timeline = read_timeline_csv(path, max_timeline_ops);
      return in;
    }
    in.format = format_of(path);
    if (in.format == "mksim-result") {
      in.kind = Kind::RUN;
      in.run = read_run_hdf5(path);
    } else if (in.format == "mksim-sweep") {
      in.kind = Kind::SWEEP;
      in.sweep = read_sweep_hdf5(path);
    } else if (in.format == "mksim-calibration") {
      in.kind = Kind::CALIBRATION;
      in.calibration = read_calib_db(path);
    } else if (in.format == DIAGNOSIS_FORMAT_NAME) {
      in.kind = Kind::DIAGNOSIS;
      in.diagnosis = read_diagnosis_hdf5(path);
    }
  } catch (const ReportInputError&) {
    throw;
  } catch (const std::exception& e) {
    const std::string what = e.what();
    // The readers name the file already; say it once.
    throw ReportInputError(what.rfind(path, 0) == 0 ? what : path + ": " + what);
  }
  return in;
}

std::string attribute(const std::vector<std::pair<std::string, std::string>>& attributes, const std::string& key) {
  for (const auto& [k, v] : attributes)
    if (k == key) return v;
  return "";
}

// ---------------------------------------------------------------------------------------------- HTML

std::string escape_html(const std::string& text) { return html::escape(text); }
std::string script_safe_json(const Json& value) { return html::script_safe_json(value); }
std::string script_safe_js(std::string js) { return html::script_safe_js(std::move(js)); }

std::string seconds_text(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g s", s);
  return buf;
}

/** @brief The page's body as it is built: headings, notes, "missing" notes and plots (their specs kept apart). */
class PageBuilder {
 public:
  void heading(const std::string& text, int level = 2) {
    body_ += "<h" + std::to_string(level) + ">" + escape_html(text) + "</h" + std::to_string(level) + ">\n";
  }
  void note(const std::string& text) { body_ += "<p class=\"note\">" + escape_html(text) + "</p>\n"; }
  void missing(const std::string& text) {
    body_ += "<p class=\"missing\">Missing: " + escape_html(text) + "</p>\n";
    page_.missing.push_back(text);
  }
  void html(const std::string& raw) { body_ += raw; }
  /** @brief Adds a plot; returns its element id (the page's render script keeps its view in window.mksimViews[id]). */
  std::string plot(Json spec, const std::string& caption) {
    const std::string id = "plot-" + std::to_string(++page_.plots);
    body_ += "<figure><div class=\"plot\" id=\"" + id + "\"></div><figcaption>" + escape_html(caption) +
             "</figcaption></figure>\n";
    specs_.push_back({{"id", id}, {"spec", std::move(spec)}});
    return id;
  }
  /** @brief The id the plot added `ahead` plots from now will get. */
  std::string next_plot_id(int ahead) const { return "plot-" + std::to_string(page_.plots + 1 + ahead); }
  /** @brief A script run before the plots render (it may register a window.mksimAfterRender hook). */
  void script(const std::string& js) { body_ += "<script>\n" + script_safe_js(js) + "\n</script>\n"; }
  /** @brief A small table of key/value rows. */
  void table(const std::vector<std::pair<std::string, std::string>>& rows) {
    body_ += "<table class=\"attrs\">";
    for (const auto& [k, v] : rows) body_ += "<tr><th>" + escape_html(k) + "</th><td>" + escape_html(v) + "</td></tr>";
    body_ += "</table>\n";
  }

  ReportPage finish(const std::string& title, const std::string& subtitle, const VegaLibrary& library) {
    std::string& h = page_.html;
    h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + escape_html(title) +
        " (rendering)</title>\n<style>\n" + CSS + "</style>\n";
    h += "<!-- " + escape_html(library.versions) + ", inlined from " + escape_html(library.dir) + " -->\n";
    for (const std::string* js : {&library.vega_js, &library.vega_lite_js, &library.vega_embed_js})
      h += "<script>\n" + script_safe_js(*js) + "\n</script>\n";
    h += "</head>\n<body data-mksim-render=\"pending\" data-mksim-plots=\"" + std::to_string(page_.plots) + "\">\n";
    h += "<h1>" + escape_html(title) + "</h1>\n<p class=\"subtitle\">" + escape_html(subtitle) + "</p>\n";
    h += "<pre id=\"mksim-errors\" class=\"errors\"></pre>\n";
    h += "<pre id=\"mksim-warnings\" hidden></pre>\n";
    h += body_;
    h += "<script type=\"application/json\" id=\"mksim-specs\">" + script_safe_json(specs_) + "</script>\n";
    h += std::string("<script>\n") + RENDER_JS + "</script>\n</body>\n</html>\n";
    return std::move(page_);
  }

 private:
  static constexpr const char* CSS =
      "body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1em;color:#222}\n"
      "h1{margin-bottom:.2em} h2{border-bottom:1px solid #ccc;margin-top:1.8em} .subtitle{color:#555}\n"
      "figure{margin:1em 0} figcaption{color:#555;font-size:90%;max-width:60em}\n"
      ".missing{background:#fff4e5;border-left:4px solid #f0a030;padding:.4em .8em}\n"
      ".note{color:#444} .errors:empty{display:none} .errors{color:#b00;background:#fee;padding:.5em}\n"
      "table.attrs{border-collapse:collapse;font-size:90%;margin:.3em 0 1em} table.attrs th{text-align:left;"
      "padding:.1em 1em .1em 0;color:#555;font-weight:normal;vertical-align:top} table.attrs td{font-family:monospace;"
      "word-break:break-all}\n"
      "table.crossings{border-collapse:collapse;font-size:90%} table.crossings td,table.crossings th{padding:.1em .8em;"
      "text-align:left;border-bottom:1px solid #eee}\n";
  // Renders every spec; marks the body (and the title) once all promises settled, with any error shown on the page.
  // Vega's warnings go through `logger` and are counted in data-mksim-warnings.
  static constexpr const char* RENDER_JS = R"JS((function () {
  'use strict';
  var errors = [], warnings = [];
  var done = false;
  function finish(state) {
    if (done) return;
    done = true;
    document.body.setAttribute('data-mksim-render', state);
    document.body.setAttribute('data-mksim-warnings', String(warnings.length));
    document.getElementById('mksim-errors').textContent = errors.join('\n');
    document.getElementById('mksim-warnings').textContent = warnings.join('\n');
    document.title = document.title.replace(' (rendering)', state === 'ok' ? '' : ' [render ' + state + ']');
  }
  window.addEventListener('error', function (ev) { errors.push('script error: ' + ev.message); finish('error'); });
  var logger = {
    _level: 2,
    level: function (l) { if (arguments.length) { this._level = l; return this; } return this._level; },
    error: function () { errors.push(Array.prototype.join.call(arguments, ' ')); return this; },
    warn: function () { warnings.push(Array.prototype.join.call(arguments, ' ')); console.warn.apply(console, arguments); return this; },
    info: function () { return this; },
    debug: function () { return this; }
  };
  var plots = JSON.parse(document.getElementById('mksim-specs').textContent);
  var options = { mode: 'vega-lite', renderer: 'svg', logger: logger,
                  actions: { export: true, source: false, compiled: false, editor: false } };
  window.mksimViews = {};
  Promise.all(plots.map(function (p) {
    return vegaEmbed('#' + p.id, p.spec, options).then(function (r) { window.mksimViews[p.id] = r.view; });
  })).then(function () {  // then the hooks of interactive sections (the model explorer) fill their views
    return Promise.all((window.mksimAfterRender || []).map(function (hook) { return hook(); }));
  }).then(
    function () { finish(errors.length ? 'error' : 'ok'); },
    function (err) { errors.push('plot error: ' + (err && err.message ? err.message : String(err))); finish('error'); });
})();
)JS";

  std::string body_;
  Json specs_ = Json::array();
  ReportPage page_;
};

// ---------------------------------------------------------------------------------------------- sections

/** @brief The status counts of failed parts, "deadlock 3, error 1". */
std::string failures(const SweepTable& table, bool replay) {
  std::map<std::string, int> count;
  for (const SweepRow& r : table.rows) {
    const SweepPart& p = replay ? r.replay : r.model;
    if (p.status != "ok" && p.status != "not run") ++count[p.status];
  }
  std::string out;
  for (const auto& [status, n] : count) out += (out.empty() ? "" : ", ") + status + " " + std::to_string(n);
  return out;
}

/** @brief The label of each sweep in curve names: its skeleton's file stem; the input's name when two sweeps share
 *  a skeleton; nothing with one sweep. */
std::vector<std::string> sweep_sources(const std::vector<const Input*>& sweeps) {
  std::vector<std::string> out;
  if (sweeps.size() == 1) return {""};
  for (const Input* in : sweeps) {
    const std::string skeleton = attribute(in->sweep.attributes, "skeleton");
    out.push_back(skeleton.empty() ? fs::path(in->path).filename().string() : fs::path(skeleton).stem().string());
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    if (std::count(out.begin(), out.end(), out[i]) > 1)
      for (std::size_t j = 0; j < out.size(); ++j)
        if (j != i && out[j] == out[i]) out[j] = fs::path(sweeps[j]->path).filename().string();
  for (std::size_t i = 0; i < out.size(); ++i)
    if (std::count(out.begin(), out.end(), out[i]) > 1) out[i] = sweeps[i]->path;  // still ambiguous: the whole path
  return out;
}

std::string percent_text(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * fraction);
  return buf;
}

/** @brief The measured runs over the sweeps' curves: which points match (same P, parameters and, when a file's
 *  comments name one of the platforms, that platform), the marks for the time-vs-P plot and the pairs. */
struct MeasuredOverlay {
  std::vector<std::vector<MeasuredPoint>> points;  // per file (kept alive for the marks)
  std::vector<report_specs::MeasuredMark> marks;
  std::vector<std::pair<std::string, MeasuredMatch>> matches;
};

void match_measured_runs(PageBuilder& page, const std::vector<CurvePoint>& predicted, const ReportOptions& options,
                         MeasuredOverlay& overlay) {
  std::vector<std::string> platforms;
  for (const CurvePoint& c : predicted)
    if (std::find(platforms.begin(), platforms.end(), c.platform) == platforms.end()) platforms.push_back(c.platform);
  overlay.points.reserve(options.measured.size());
  for (const MeasuredRuns& runs : options.measured) {
    overlay.points.push_back(measured_points(runs));
    const auto& points = overlay.points.back();
    const std::string platform = platform_named_in(runs.comments, platforms);
    const std::string stem = fs::path(runs.file).filename().string();
    const auto matches = match_measured(points, predicted, platform);
    std::set<const MeasuredPoint*> matched;
    for (const MeasuredMatch& m : matches) {
      matched.insert(m.measured);
      overlay.matches.emplace_back(stem, m);
    }
    std::string columns;
    for (const std::string& c : runs.columns)
      if (std::find(spread_columns().begin(), spread_columns().end(), c) == spread_columns().end())
        columns += (columns.empty() ? "" : ", ") + c;
    if (matched.empty()) {
      page.missing(runs.file + ": none of its " + std::to_string(points.size()) + " measured point(s) has a predicted "
                   "point of the same P and parameters (" + (columns.empty() ? std::string("no parameter columns") : columns) +
                   ")" + (platform.empty() ? "" : " on " + platform) + " in the sweeps given, so it is not plotted: sweep "
                   "those P and parameter values (`mksim sweep ... --param NAME=LIST`)");
      continue;
    }
    for (const MeasuredPoint& p : points)
      if (matched.count(&p)) overlay.marks.push_back({stem + (p.params_text.empty() ? "" : " " + p.params_text), &p});
    std::size_t bars = 0;
    for (const MeasuredPoint* p : matched) bars += !p->spread.empty() && p->high_s > p->low_s;
    page.note(runs.file + ": " + std::to_string(matched.size()) + " of " + std::to_string(points.size()) +
              " measured point(s) match a predicted point (same P and " + (columns.empty() ? "no parameters" : columns) + ")" +
              (platform.empty() ? " on any platform (the file names none of the sweeps' platforms)"
                                : " on " + platform + " (named in the file's comments)") +
              "; " + (bars ? std::to_string(bars) + " with error bars" : std::string("no spread given, drawn as points")) + ".");
  }
}

void measured_section(PageBuilder& page, const MeasuredOverlay& overlay) {
  if (overlay.matches.empty()) return;
  page.plot(report_specs::measured_vs_predicted(overlay.matches),
            "Predicted vs measured time, one mark per measured point and predicted curve of the same P and parameters "
            "(horizontal bars: the measured spread); on the dashed line the prediction is exact. Hover for the "
            "relative error.");
  std::map<std::pair<std::string, std::string>, std::vector<double>> errors;  // (file, method)
  for (const auto& [file, m] : overlay.matches) errors[{file, m.predicted->method}].push_back(m.rel_error);
  std::string rows = "<table class=\"crossings\"><tr><th>measured</th><th>method</th><th>pairs</th>"
                     "<th>mean |error|</th><th>largest |error|</th></tr>";
  for (const auto& [key, e] : errors) {
    double sum = 0, worst = 0;
    for (double x : e) {
      sum += std::fabs(x);
      worst = std::max(worst, std::fabs(x));
    }
    rows += "<tr><td>" + escape_html(key.first) + "</td><td>" + escape_html(key.second) + "</td><td>" +
            std::to_string(e.size()) + "</td><td>" + percent_text(sum / static_cast<double>(e.size())).substr(1) +
            "</td><td>" + percent_text(worst).substr(1) + "</td></tr>";
  }
  page.html(rows + "</table>\n");
}

/** @brief Isospeed and constant-time curves of one sweep, or a note saying why there are none. */
void scale_section(PageBuilder& page, const Input& in, const std::vector<CurvePoint>& mine, const ReportOptions& options) {
  const SweepTable& t = in.sweep;
  WorkModel work = options.work;
  const bool asked = !work.param.empty();
  if (!asked) work.param = "N";
  std::set<double> values;
  const auto k = std::find(t.param_names.begin(), t.param_names.end(), work.param);
  if (k != t.param_names.end())
    for (const SweepRow& r : t.rows)
      if (static_cast<std::size_t>(k - t.param_names.begin()) < r.params.size())
        values.insert(r.params[static_cast<std::size_t>(k - t.param_names.begin())]);
  std::set<int> ranks;
  for (const CurvePoint& p : mine) ranks.insert(p.P);
  std::string why;
  if (k == t.param_names.end())
    why = "the sweep has no parameter " + work.param + " (swept: " +
          (t.param_names.empty() ? std::string("none") : [&] { std::string n; for (const auto& x : t.param_names) n += (n.empty() ? "" : ", ") + x; return n; }()) +
          ")" + (asked ? "" : "; give the problem-size parameter with --work-param NAME");
  else if (values.size() < 2)
    why = "the sweep has one value of " + work.param + " only; sweep several (`--param " + work.param + "=LO..HI:x2`)";
  else if (ranks.size() < 2)
    why = "the sweep has one P only";
  if (!why.empty()) {
    const std::string text = in.path + ": no isospeed or constant-time curves: " + why;
    if (asked) page.missing(text);
    else page.note(text + ".");
    return;
  }
  const ScaleCurves curves = scale_curves(mine, work);
  const std::string w = work.param + (work.exponent == 1 ? "" : "^" + format_value(work.exponent));
  bool any_iso = false, any_ct = false;
  for (const ScalePoint& p : curves.isospeed) any_iso = any_iso || (p.status == "ok" && p.P != p.base_P);
  for (const ScalePoint& p : curves.constant_time) any_ct = any_ct || (p.status == "ok" && p.P != p.base_P);
  if (any_iso)
    page.plot(report_specs::isospeed(curves.isospeed, work),
              in.path + ": isospeed (seed 001): the work W = " + w + " needed at each P to keep the speed per processor "
              "W/(T·P) at its value at the smallest P (one curve per starting " + work.param + "), and the scalability "
              "psi(P0, P) = P·W0 / (P0·W) (1 = ideal). " + work.param + " is interpolated linearly in log " + work.param +
              " over the swept values (log speed); W is taken as proportional to " + w + ".");
  else
    page.missing(in.path + ": no isospeed point beyond the smallest P lies within the swept " + work.param +
                 " range; sweep larger values of " + work.param);
  if (any_ct)
    page.plot(report_specs::constant_time(curves.constant_time, work),
              in.path + ": constant time (seed 000): the largest " + work.param + " whose predicted time stays at most "
              "the time at the smallest P, interpolated in log-log over the swept " + work.param + ".");
  else
    page.missing(in.path + ": no constant-time point beyond the smallest P lies within the swept " + work.param +
                 " range; sweep larger values of " + work.param);
  for (const std::string& n : curves.notes) page.note(in.path + ": " + n + ".");
}

void sweep_section(PageBuilder& page, const std::vector<const Input*>& sweeps, const ReportOptions& options) {
  page.heading("Sweeps: predicted time at scale");
  const std::vector<std::string> sources = sweep_sources(sweeps);
  std::vector<CurvePoint> points;
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    const Input& in = *sweeps[i];
    const SweepTable& t = in.sweep;
    if (t.rows.empty()) {
      page.missing(in.path + ": the sweep table has no rows, so there is nothing to plot from it (was the sweep "
                   "interrupted before its first point? `mksim sweep ... -o " + in.path + "` resumes it)");
      continue;
    }
    const auto mine = curve_points(t, sources[i]);
    std::size_t failed = 0;
    for (const SweepRow& r : t.rows) failed += r.status() != "ok";
    if (mine.empty()) {
      std::string why;
      for (bool replay : {true, false})
        if (const std::string f = failures(t, replay); !f.empty()) why += (why.empty() ? "" : "; ") + std::string(replay ? "replay: " : "model: ") + f;
      page.missing(in.path + ": all " + std::to_string(t.rows.size()) + " points failed (" + (why.empty() ? "none was run" : why) +
                   "), so there is no predicted time to plot; the errors are in the table's replay_error/model_error columns");
      continue;
    }
    if (failed > 0) {
      std::string why;
      for (bool replay : {true, false})
        if (const std::string f = failures(t, replay); !f.empty()) why += (why.empty() ? "" : "; ") + std::string(replay ? "replay: " : "model: ") + f;
      page.missing(in.path + ": " + std::to_string(failed) + " of " + std::to_string(t.rows.size()) +
                   " points failed (" + why + "); they are left out of the plots");
    }
    points.insert(points.end(), mine.begin(), mine.end());
  }
  if (points.empty()) {
    for (const MeasuredRuns& runs : options.measured)
      page.missing(runs.file + ": no sweep point to compare its measured times with (every sweep given is empty or failed)");
    return;
  }

  MeasuredOverlay overlay;
  match_measured_runs(page, points, options, overlay);
  const auto crossings = find_crossings(points);
  page.plot(report_specs::time_vs_p(points, crossings, overlay.marks),
            "Predicted completion time vs number of ranks (log-log), replay (SimGrid) and closed-form model side by "
            "side; one curve per platform and parameter values. Diamonds mark where two curves cross (between platforms "
            "of one sweep, or between sweeps of different skeletons on one platform)" +
                std::string(overlay.marks.empty() ? "" : "; squares are measured times (bars: their spread)") +
                ". Hover a point for its values.");
  measured_section(page, overlay);
  if (!crossings.empty()) {
    std::string rows = "<table class=\"crossings\"><tr><th>method</th><th>curve</th><th>crosses</th><th>at P</th>"
                       "<th>between P</th><th>time there</th></tr>";
    const std::size_t shown = std::min<std::size_t>(crossings.size(), 100);
    for (std::size_t k = 0; k < shown; ++k) {
      const Crossing& c = crossings[k];
      char at[32];
      std::snprintf(at, sizeof at, "%.4g", c.P);
      rows += "<tr><td>" + escape_html(c.method) + "</td><td>" + escape_html(c.a) + "</td><td>" + escape_html(c.b) +
              "</td><td>" + at + "</td><td>" + std::to_string(c.P_low) +
              (c.P_low == c.P_high ? "" : "-" + std::to_string(c.P_high)) + "</td><td>" + escape_html(seconds_text(c.time_s)) +
              "</td></tr>";
    }
    page.html(rows + "</table>\n");
    if (shown < crossings.size()) page.note(std::to_string(crossings.size() - shown) + " more crossings not listed.");
  } else {
    page.note("No two comparable curves cross in the swept range of P.");
  }

  page.plot(report_specs::speedup_efficiency(scaling(points)),
            "Speedup T(Pmin)·Pmin / T(P) against each curve's own smallest P (Pmin ranks taken as running at full "
            "speed), with the ideal S = P; efficiency = speedup / P. Solid: replay, dashed: model.");

  // A grain is chosen for speed; the problem size is given (its "best" value is merely the smallest swept).
  const std::string work_param = options.work.param.empty() ? "N" : options.work.param;
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    const SweepTable& t = sweeps[i]->sweep;
    for (std::size_t k = 0; k < t.param_names.size(); ++k) {
      if (t.param_names[k] == work_param) continue;
      std::set<double> distinct;
      for (const SweepRow& r : t.rows)
        if (k < r.params.size()) distinct.insert(r.params[k]);
      if (distinct.size() < 2) continue;
      const auto replay = best_over(t, t.param_names[k], "replay");
      const auto model = best_over(t, t.param_names[k], "model");
      if (replay.empty() && model.empty()) continue;
      page.plot(report_specs::best_vs_p(replay, model, t.param_names[k]),
                sweeps[i]->path + ": the value of " + t.param_names[k] + " with the least predicted time at each P, "
                "for each platform and other parameter values (as `mksim sweep --best " + t.param_names[k] +
                "` computes it). Solid: replay, dashed: model.");
    }
  }

  for (std::size_t i = 0; i < sweeps.size(); ++i)
    if (!sweeps[i]->sweep.rows.empty()) {
      std::vector<CurvePoint> mine;
      for (const CurvePoint& p : points)
        if (p.source == sources[i]) mine.push_back(p);
      if (!mine.empty()) scale_section(page, *sweeps[i], mine, options);
    }

  for (const char* method : {"replay", "model"}) {
    std::vector<CurvePoint> mine;
    for (const CurvePoint& p : points)
      if (p.method == method) mine.push_back(p);
    if (mine.empty()) continue;
    if (mine.size() > options.max_split_points) {
      page.note(std::string(method) + ": the time split shows the first " + std::to_string(options.max_split_points) +
                " of " + std::to_string(mine.size()) + " points.");
      mine.resize(options.max_split_points);
    }
    page.plot(report_specs::split_per_point(mine, method),
              std::string("Share of compute, communication") + (std::string(method) == "replay" ? " and wait" : "") +
                  " in the predicted time (critical rank for replay, critical class for the model), per point. Hover "
                  "for seconds.");
  }
}

void run_section(PageBuilder& page, const Input& in) {
  const RunResult& r = in.run;
  const std::string skeleton = attribute(r.attributes, "skeleton");
  page.heading("Run: " + in.path, 3);
  page.note("predicted time " + seconds_text(r.predicted_time_s) + ", critical rank " + std::to_string(r.critical_rank) +
            " of " + std::to_string(r.ranks.size()) + " ranks, " + std::to_string(r.total_messages) + " messages" +
            (skeleton.empty() ? "" : ", skeleton " + skeleton) +
            (attribute(r.attributes, "platform").empty() ? "" : ", platform " + attribute(r.attributes, "platform")));
  if (r.phases.empty()) page.missing(in.path + ": the run has no phase table, so there is no split per phase");
  else page.plot(report_specs::phase_split(r), "Compute / communication / wait per phase label, summed over all ranks.");
  if (r.ranks.empty()) {
    page.missing(in.path + ": the run has no ranks, so there is no split per rank");
    return;
  }
  page.plot(report_specs::rank_split(r, 256), "Compute / communication / wait of each rank (simulated seconds).");
  bool any_block = false;
  for (const BlockTotals& b : r.blocks) any_block = any_block || b.time_s > 0;
  if (any_block)
    page.plot(report_specs::top_blocks(r, 20), "The skeleton blocks that took the most time over all ranks: the "
                                               "diagnosis ranking (where to look first).");
  else
    page.missing(in.path + ": no block took any time, so there is no block ranking");
}

void timeline_section(PageBuilder& page, const Input& in) {
  page.heading("Timeline: " + in.path, 3);
  const Timeline& t = in.timeline;
  if (t.ops.empty()) {
    page.missing(in.path + ": the timeline has no operations, so there is no Gantt chart");
    return;
  }
  page.plot(report_specs::gantt(t), "One bar per operation of each rank over simulated time; hover for the block.");
  if (t.ops.size() < t.total_ops)
    page.note("Showing the first " + std::to_string(t.ops.size()) + " of " + std::to_string(t.total_ops) +
              " operations (in rank order) of " + std::to_string(t.ranks) + " ranks.");
  page.note("Export for external viewers: " + in.path + " itself (rank,start_s,end_s,kind,block, one row per "
            "operation, sorted) opens in a spreadsheet or pandas (pandas.read_csv); `mksim report " + in.path +
            " --paje OUT.paje` writes it as a Paje trace for ViTE or PajeNG (pj_dump).");
}

void diagnosis_section(PageBuilder& page, const Input& in) {
  const Diagnosis& d = in.diagnosis;
  std::string where;
  for (const char* key : {"platform", "P", "skeleton"})
    if (const std::string v = attribute(d.attributes, key); !v.empty()) where += std::string(", ") + key + " " + v;
  page.heading("Diagnosis: " + in.path, 3);
  std::size_t above = 0;
  for (const Problem& p : d.problems) above += p.gain_pct >= d.threshold_pct;
  char threshold[32];
  std::snprintf(threshold, sizeof threshold, "%g%%", d.threshold_pct);
  page.note("baseline time " + seconds_text(d.baseline_time_s) + where + "; " + std::to_string(d.problems.size()) +
            " finding(s), " + std::to_string(above) + " above the " + threshold + " threshold.");
  if (d.problems.empty()) {
    page.missing(in.path + ": the diagnosis has no findings (no detector found a problem worth a gain), so there is "
                 "no ranking to plot");
  } else {
    page.plot(report_specs::diagnosis_ranking(d),
              "What to fix first: each finding's predicted gain if fixed, in seconds and as a share of the baseline "
              "time, ranked; the colour says how the gain was obtained (simulated: replayed with the problem fixed; "
              "formula: seed 002's closed form; model: the analytic model). Hover for where and what to do.");
    std::string rows = "<table class=\"crossings\"><tr><th>rank</th><th>kind</th><th>where</th><th>ranks</th>"
                       "<th>do</th><th>gain</th><th>gain %</th><th>gain obtained by</th></tr>";
    int rank = 0;
    for (const Problem& p : d.problems) {
      char pct[32];
      std::snprintf(pct, sizeof pct, "%.2f", p.gain_pct);
      const std::string place = p.block.empty() ? "phase " + p.phase : p.block + (p.phase.empty() ? "" : " (phase " + p.phase + ")");
      rows += "<tr><td>" + std::to_string(++rank) + "</td><td>" + escape_html(p.kind) + "</td><td>" + escape_html(place) +
              "</td><td>" + escape_html(p.ranks) + "</td><td>" + escape_html(p.action) + "</td><td>" +
              escape_html(seconds_text(p.gain_s)) + "</td><td>" + pct + "</td><td>" + escape_html(p.method) + "</td></tr>";
    }
    page.html(rows + "</table>\n");
  }
  for (const std::string& n : d.notes) page.note("diagnose: " + n);
}

void calibration_section(PageBuilder& page, const Input& in) {
  const CalibDb& db = in.calibration;
  page.heading("Calibration: " + in.path + " (" + db.machine + ")", 3);
  if (db.kernels.empty()) {
    page.missing(in.path + ": the database has no kernel measured yet (`mkcalib bench` fills it)");
    return;
  }
  const CalibKernel* pingpong = nullptr;
  const CalibKernel* compute = nullptr;
  std::vector<const CalibKernel*> others;
  for (const CalibKernel& k : db.kernels) {
    if (k.name == "pingpong") pingpong = &k;
    else if (k.name == "compute" || k.unit == "s/flop") compute = compute ? compute : &k;
    else others.push_back(&k);
  }
  if (pingpong && !pingpong->sizes.empty())
    page.plot(report_specs::kernel_time_vs_size(*pingpong),
              "Ping-pong: one-way time per message vs message size (log-log): medians with their 95% confidence "
              "interval (Student t; a bar below zero is drawn down to the least repetition), and the fitted regimes "
              "rho + beta·D.");
  else
    page.missing(in.path + ": no ping-pong measurement, so there is no latency/bandwidth plot");
  if (compute && !compute->sizes.empty())
    page.plot(report_specs::compute_rate(*compute),
              "Compute kernel: flop rate (1 / median seconds per flop) vs working-set size, with the 95% confidence "
              "interval.");
  else
    page.missing(in.path + ": no compute kernel measurement, so there is no compute-rate plot");
  std::vector<const CalibKernel*> plotted;
  for (const CalibKernel* k : others)
    if (!k->sizes.empty()) plotted.push_back(k);
  if (!plotted.empty())
    page.plot(report_specs::kernels_time_vs_size(plotted),
              "The other kernels' time per operation vs size, medians with 95% confidence intervals.");
}

std::vector<std::pair<std::string, std::string>> provenance(const Input& in) {
  std::vector<std::pair<std::string, std::string>> rows{{"kind", kind_name(in.kind)}};
  switch (in.kind) {
    case Kind::SWEEP: {
      for (const auto& kv : in.sweep.attributes) rows.push_back(kv);
      std::string params;
      for (const auto& p : in.sweep.param_names) params += (params.empty() ? "" : ", ") + p;
      rows.emplace_back("swept parameters", params.empty() ? "(none)" : params);
      std::size_t failed = 0;
      for (const SweepRow& r : in.sweep.rows) failed += r.status() != "ok";
      rows.emplace_back("points", std::to_string(in.sweep.rows.size()) + " (" + std::to_string(failed) + " failed)");
      break;
    }
    case Kind::RUN:
      for (const auto& kv : in.run.attributes) rows.push_back(kv);
      rows.emplace_back("ranks", std::to_string(in.run.ranks.size()));
      rows.emplace_back("predicted time", seconds_text(in.run.predicted_time_s));
      break;
    case Kind::CALIBRATION: {
      const CalibDb& db = in.calibration;
      rows.insert(rows.end(), {{"machine", db.machine}, {"date_utc", db.date_utc}, {"hostname", db.hostname},
                               {"mpi_library", db.mpi_library}, {"np", std::to_string(db.np)}, {"config", db.config}});
      std::string kernels;
      for (const CalibKernel& k : db.kernels) kernels += (kernels.empty() ? "" : ", ") + k.name;
      rows.emplace_back("kernels", kernels.empty() ? "(none)" : kernels);
      break;
    }
    case Kind::TIMELINE:
      rows.emplace_back("operations", std::to_string(in.timeline.total_ops));
      rows.emplace_back("ranks", std::to_string(in.timeline.ranks));
      break;
    case Kind::DIAGNOSIS:
      for (const auto& kv : in.diagnosis.attributes) rows.push_back(kv);
      rows.emplace_back("baseline time", seconds_text(in.diagnosis.baseline_time_s));
      rows.emplace_back("findings", std::to_string(in.diagnosis.problems.size()));
      break;
    case Kind::UNKNOWN:
      rows.emplace_back("root attribute format", in.format.empty() ? "(none)" : in.format);
      break;
  }
  return rows;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw std::runtime_error(path + ": cannot read");
  return text.str();
}

}  // namespace

std::string default_vega_dir() { return MKSIM_VEGA_DIR; }

VegaLibrary load_vega_library(const std::string& dir) {
  VegaLibrary lib;
  lib.dir = dir;
  const std::pair<const char*, std::string*> files[] = {
      {"vega", &lib.vega_js}, {"vega-lite", &lib.vega_lite_js}, {"vega-embed", &lib.vega_embed_js}};
  for (const auto& [name, text] : files) {
    const std::string file = dir + "/" + name + "/build/" + name + ".min.js";
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
      throw std::runtime_error(
          file + ": not found: the report's plotting library (Vega-Lite: the npm packages vega, vega-lite and "
                 "vega-embed) is not installed there. Install it with `bash scripts/install-deps.sh` (it runs "
                 "`npm install --prefix " + fs::path(default_vega_dir()).parent_path().string() +
          " vega vega-lite vega-embed`), or point --js-dir or MKSIM_REPORT_JS_DIR at a node_modules directory that has them");
    *text = read_text(file);
    std::string version = "?";
    try {
      version = Json::parse(read_text(dir + "/" + name + "/package.json")).value("version", "?");
    } catch (const std::exception&) {
    }
    lib.versions += (lib.versions.empty() ? "" : ", ") + std::string(name) + " " + version;
  }
  return lib;
}

ReportPage build_report(const ReportOptions& options, const VegaLibrary& library) {
  std::vector<Input> inputs;
  for (const std::string& path : options.inputs) {
    const bool csv = path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
    inputs.push_back(read_input(path, csv, options.max_timeline_ops));
  }
  for (const std::string& path : options.timelines) inputs.push_back(read_input(path, true, options.max_timeline_ops));

  std::vector<const Input*> sweeps, runs, timelines, calibrations, diagnoses, unknown;
  for (const Input& in : inputs) {
    switch (in.kind) {
      case Kind::SWEEP: sweeps.push_back(&in); break;
      case Kind::RUN: runs.push_back(&in); break;
      case Kind::TIMELINE: timelines.push_back(&in); break;
      case Kind::CALIBRATION: calibrations.push_back(&in); break;
      case Kind::DIAGNOSIS: diagnoses.push_back(&in); break;
      case Kind::UNKNOWN: unknown.push_back(&in); break;
    }
  }

  PageBuilder page;
  for (const Input* in : unknown)
    page.missing(in->path + ": not a file this report knows (root attribute format = '" +
                 (in->format.empty() ? std::string("(none)") : in->format) +
                 "'; known: mksim-result, mksim-sweep, mksim-calibration, mksim-diagnosis), so nothing is plotted from it");
  if (!sweeps.empty()) sweep_section(page, sweeps, options);
  else
    for (const MeasuredRuns& runs : options.measured)
      page.missing(runs.file + ": measured runs but no sweep table to compare them with (give the `mksim sweep -o` "
                   "table of the same skeleton, P and parameters)");
  if (!options.explorers.empty()) {
    page.heading("Model explorer: move the parameters");
    page.note("The closed-form model (mksim model) of each swept skeleton, derived at every swept P and compiled to "
              "this page's script: moving a control re-evaluates it at once, offline. Diamonds are the sweep's replayed "
              "points where they ran at the controls' values.");
    page.script(explorer_runtime_js());
    int index = 0;
    for (const ModelExplorer& ex : options.explorers) {
      const Input* sweep = nullptr;
      for (const Input* in : sweeps)
        if (in->path == ex.sweep) sweep = in;
      page.heading(ex.source + " on " + ex.platform, 3);
      const std::string curve = page.next_plot_id(0), breakdown = page.next_plot_id(1);
      ExplorerParts parts = explorer_parts(ex, ++index, sweep ? sweep->sweep : SweepTable{}, curve, breakdown);
      page.html(parts.controls_html);
      page.script(parts.script);
      page.plot(std::move(parts.curve_spec), "The model's T(P) at the controls' values (line), the sweep's replayed points at "
                "the same values (diamonds); hover for values.");
      page.plot(std::move(parts.breakdown_spec), "The critical rank class's time per phase and kind at the chosen P (its bars "
                "sum to T).");
    }
  }
  if (!diagnoses.empty()) {
    page.heading("Diagnosis: what to fix first");
    for (const Input* in : diagnoses) diagnosis_section(page, *in);
  }
  if (!runs.empty() || !timelines.empty()) {
    page.heading("Runs: where the time goes");
    for (const Input* in : runs) run_section(page, *in);
    for (const Input* in : timelines) timeline_section(page, *in);
  }
  if (!calibrations.empty()) {
    page.heading("Calibration: measured machine");
    for (const Input* in : calibrations) calibration_section(page, *in);
  }
  std::vector<std::string> absent;
  if (sweeps.empty()) absent.push_back("no sweep table (`mksim sweep -o` gives time vs P, speedup, best grain and crossings)");
  if (runs.empty()) absent.push_back("no run result (`mksim predict -o` gives the split per phase and per rank)");
  if (timelines.empty()) absent.push_back("no timeline (`mksim predict --timeline` gives the per-rank Gantt chart)");
  if (diagnoses.empty()) absent.push_back("no diagnosis (`mksim diagnose -o` gives the ranking of what to fix first)");
  if (calibrations.empty()) absent.push_back("no calibration database (`mkcalib bench -o` gives ping-pong and compute rates)");
  if (!absent.empty()) {
    page.heading("Not given");
    std::string list = "<ul class=\"absent\">";
    for (const auto& a : absent) list += "<li>" + escape_html(a) + "</li>";
    page.html(list + "</ul>\n");
  }

  page.heading("Inputs");
  for (const Input& in : inputs) {
    page.heading(in.path, 3);
    page.table(provenance(in));
  }
  for (const MeasuredRuns& runs : options.measured) {
    page.heading(runs.file, 3);
    std::string columns, comments;
    for (const std::string& c : runs.columns) columns += (columns.empty() ? "" : ", ") + c;
    for (const std::string& c : runs.comments) comments += (comments.empty() ? "" : " ") + c;
    page.table({{"kind", "measured runs (mkcalib fit/validate --runs)"}, {"rows", std::to_string(runs.rows.size())},
                {"columns", columns.empty() ? "(P, time_s only)" : columns}, {"comments", comments}});
  }
  std::string made_by = options.tool.empty() ? "mksim" : options.tool;
  page.note("Made by " + made_by + (options.command.empty() ? "" : " (`" + options.command + "`)") +
            "; plots by " + library.versions + ", inlined, so this page needs no network.");
  return page.finish(options.title, std::to_string(inputs.size() + options.measured.size()) + " input(s); hover any mark for its values",
                     library);
}

void write_report(const std::string& path, const ReportPage& page) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const std::string& what) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    throw std::runtime_error(path + ": " + what + " " + temporary + ": " + reason);
  };
  const int fd = ::open(temporary.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) fail("create temporary file");
  const char* data = page.html.data();
  std::size_t left = page.html.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      fail("write");
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("sync");
  }
  if (::close(fd) != 0) fail("close");
  if (std::rename(temporary.c_str(), path.c_str()) != 0) fail("rename");
}

}  // namespace mksim::results
