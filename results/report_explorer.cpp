// The report's model explorer (report_explorer.hpp): controls, the models' functions and the replayed points as a
// script, two Vega-Lite specs with named data that the runtime script fills whenever a control moves.
#include "results/report_explorer.hpp"

#include "results/html_text.hpp"

#include <cmath>
#include <cstdio>
#include <map>

namespace mksim::results {
namespace {

using Json = nlohmann::json;

/** @brief A number as JavaScript reads it back exactly. */
std::string js_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

ExplorerParts explorer_parts(const ModelExplorer& ex, int index, const SweepTable& sweep, const std::string& curve_plot_id,
                             const std::string& breakdown_plot_id) {
  ExplorerParts parts;
  const std::string id = "explorer-" + std::to_string(index);
  // controls: P over the models' grid, then a slider and a field for every parameter
  std::string& h = parts.controls_html;
  h += "<div class=\"explorer\" id=\"" + id + "\" data-mksim-updates=\"0\">\n";
  h += "<label class=\"control\">P <select data-param=\"P\">";
  const std::size_t middle = ex.models.empty() ? 0 : (ex.models.size() - 1) / 2;
  for (std::size_t i = 0; i < ex.models.size(); ++i) {
    const std::string p = std::to_string(ex.models[i].P);
    h += "<option value=\"" + p + "\"" + (i == middle ? " selected" : "") + ">" + p + "</option>";
  }
  h += "</select></label>\n";
  for (const ExplorerParam& p : ex.params) {
    const std::string name = html::escape(p.name);
    const std::string step = p.step > 0 ? js_number(p.step) : "any";
    h += "<label class=\"control\">" + name + " <input type=\"range\" data-param=\"" + name + "\" min=\"" + js_number(p.lo) + "\" max=\"" +
         js_number(p.hi) + "\" step=\"" + step + "\" value=\"" + js_number(p.value) + "\"> <input type=\"number\" data-param=\"" + name +
         "\" step=\"any\" value=\"" + js_number(p.value) + "\"></label>\n";
  }
  h += "<p class=\"readout\">model: T(P = <output data-readout=\"P\"></output>) = <output data-readout=\"T\"></output> s, critical class "
       "<output data-readout=\"class\"></output>; replayed points at these parameters: <output data-readout=\"replayed\"></output></p>\n";
  if (!ex.notes.empty()) {
    h += "<details class=\"note\"><summary>the model's approximations (" + std::to_string(ex.notes.size()) + ")</summary><ul>\n";
    for (const std::string& n : ex.notes) h += "<li>" + html::escape(n) + "</li>\n";
    h += "</ul></details>\n";
  }
  h += "</div>\n";

  // the replayed points of the sweep on this platform, with their parameters in the explorer's frame order
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < sweep.param_names.size(); ++i) column[sweep.param_names[i]] = i;
  std::string replayed = "[";
  for (const SweepRow& row : sweep.rows) {
    if (row.platform != ex.platform || row.replay.status != "ok") continue;
    std::string values = "[";
    for (std::size_t k = 0; k < ex.params.size(); ++k) {
      auto it = column.find(ex.params[k].name);
      // a parameter the sweep did not vary ran at its default, which is the control's initial value
      const double v = it == column.end() ? ex.params[k].value : row.params.at(it->second);
      values += (k ? ", " : "") + js_number(v);
    }
    replayed += std::string(replayed.size() > 1 ? ",\n    " : "\n    ") + "{P: " + std::to_string(row.P) + ", values: " + values +
                "], time_s: " + js_number(row.replay.time_s) + "}";
  }
  replayed += "]";

  std::string& s = parts.script;
  s += "window.mksimExplorers = window.mksimExplorers || {};\n";
  s += "window.mksimExplorers[" + html::script_safe_json(id) + "] = {\n  curve: " + html::script_safe_json(curve_plot_id) + ", breakdown: " +
       html::script_safe_json(breakdown_plot_id) + ",\n  params: " + html::script_safe_json([&] {
         Json a = Json::array();
         for (const auto& p : ex.params) a.push_back(p.name);
         return a;
       }()) +
       ",\n  replayed: " + replayed + ",\n  models: [\n";
  for (std::size_t i = 0; i < ex.models.size(); ++i) {
    const ExplorerModel& m = ex.models[i];
    s += "  {P: " + std::to_string(m.P) + ",\n   T: " + m.T_js + ",\n   classes: [\n";
    for (std::size_t c = 0; c < m.classes.size(); ++c) {
      const ExplorerClass& k = m.classes[c];
      s += "    {members: " + html::script_safe_json(k.members) + ",\n     total: " + k.total_js + ",\n     terms: [\n";
      for (std::size_t t = 0; t < k.terms.size(); ++t)
        s += "      {phase: " + html::script_safe_json(k.terms[t].phase) + ", kind: " + html::script_safe_json(k.terms[t].kind) + ", f: " + k.terms[t].js + "}" +
             (t + 1 < k.terms.size() ? ",\n" : "\n");
      s += std::string("     ]}") + (c + 1 < m.classes.size() ? ",\n" : "\n");
    }
    s += std::string("   ]}") + (i + 1 < ex.models.size() ? ",\n" : "\n");
  }
  s += "  ]\n};\n";

  // T(P): the model's curve and the sweep's replayed points; data filled by the runtime script
  const Json x = {{"field", "P"}, {"type", "quantitative"}, {"title", "ranks P"}, {"scale", {{"type", "log"}, {"base", 2}}},
                  {"axis", {{"values", [&] {
                     Json a = Json::array();
                     for (const auto& m : ex.models) a.push_back(m.P);
                     return a;
                   }()}, {"format", "~d"}}}};
  const Json y = {{"field", "time_s"}, {"type", "quantitative"}, {"title", "predicted time (s)"}, {"scale", {{"type", "log"}}},
                  {"axis", {{"format", "~g"}}}};
  const Json color = {{"field", "method"}, {"type", "nominal"}, {"title", "method"},
                      {"scale", {{"domain", {"model", "replay (sweep)"}}, {"range", {"#4c78a8", "#e45756"}}}}};
  const Json tooltip = Json::array({{{"field", "P"}, {"type", "quantitative"}}, {{"field", "time_s"}, {"type", "quantitative"}, {"format", ".6g"}},
                                    {{"field", "method"}, {"type", "nominal"}}});
  const Json positive = {{"filter", "datum.time_s > 0"}};
  parts.curve_spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v6.json"},
      {"width", 520},
      {"height", 300},
      {"title", "T(P) of the model at the controls' values, " + ex.platform},
      {"layer",
       {{{"data", {{"name", "model"}}}, {"transform", Json::array({positive})}, {"mark", {{"type", "line"}, {"point", true}}},
         {"encoding", {{"x", x}, {"y", y}, {"color", color}, {"tooltip", tooltip}}}},
        {{"data", {{"name", "replayed"}}}, {"transform", Json::array({positive})}, {"mark", {{"type", "point"}, {"shape", "diamond"}, {"size", 90}, {"filled", true}}},
         {"encoding", {{"x", x}, {"y", y}, {"color", color}, {"tooltip", tooltip}}}}}}};
  parts.breakdown_spec = {
      {"$schema", "https://vega.github.io/schema/vega-lite/v6.json"},
      {"width", 520},
      {"title", "critical class at the chosen P: time per phase"},
      {"data", {{"name", "terms"}}},
      {"mark", "bar"},
      {"encoding",
       {{"y", {{"field", "term"}, {"type", "nominal"}, {"title", "phase (kind)"}, {"sort", "-x"}, {"axis", {{"labelLimit", 320}}}}},
        {"x", {{"field", "time_s"}, {"type", "quantitative"}, {"title", "time on the critical class (s)"}}},
        {"color", {{"field", "kind"}, {"type", "nominal"}, {"title", "kind"}}},
        {"tooltip", Json::array({{{"field", "term"}, {"type", "nominal"}}, {{"field", "time_s"}, {"type", "quantitative"}, {"format", ".6g"}}})}}}};
  return parts;
}

const char* explorer_runtime_js() {
  return R"JS((function () {
  'use strict';
  function close(a, b) { return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b)); }
  function update(id) {
    var ex = window.mksimExplorers[id], root = document.getElementById(id);
    var values = ex.params.map(function (name) {
      return Number(root.querySelector('input[type=number][data-param="' + name + '"]').value);
    });
    var P = Number(root.querySelector('select[data-param="P"]').value);
    var state = {P: P, values: values, T: NaN, critical: '', curve: [], replayed: [], terms: []};
    ex.models.forEach(function (m) {
      var f = [m.P].concat(values);
      var T = m.T(f);
      state.curve.push({P: m.P, time_s: T, method: 'model'});
      if (m.P !== P) return;
      state.T = T;
      var best = null, bestT = -Infinity;  // the critical class: the largest total; its terms sum to it
      m.classes.forEach(function (c) { var t = c.total(f); if (t > bestT) { bestT = t; best = c; } });
      if (!best) return;
      state.critical = best.members;
      best.terms.forEach(function (t) {
        state.terms.push({term: (t.phase || '(unlabelled)') + ' (' + t.kind + ')', kind: t.kind, time_s: t.f(f)});
      });
    });
    state.replayed = ex.replayed.filter(function (r) {
      return r.values.every(function (v, i) { return close(v, values[i]); });
    }).map(function (r) { return {P: r.P, time_s: r.time_s, method: 'replay (sweep)'}; });
    root.querySelector('[data-readout=P]').textContent = String(P);
    root.querySelector('[data-readout=T]').textContent = state.T.toPrecision(6);
    root.querySelector('[data-readout=class]').textContent = state.critical;
    root.querySelector('[data-readout=replayed]').textContent = String(state.replayed.length);
    window.mksimExplorer = window.mksimExplorer || {};
    window.mksimExplorer[id] = state;
    var views = window.mksimViews || {}, jobs = [];
    if (views[ex.curve]) jobs.push(views[ex.curve].data('model', state.curve).data('replayed', state.replayed).runAsync());
    if (views[ex.breakdown]) jobs.push(views[ex.breakdown].data('terms', state.terms).runAsync());
    return Promise.all(jobs).then(function () {
      root.setAttribute('data-mksim-updates', String(Number(root.getAttribute('data-mksim-updates')) + 1));
    });
  }
  window.mksimAfterRender = window.mksimAfterRender || [];
  window.mksimAfterRender.push(function () {
    return Promise.all(Object.keys(window.mksimExplorers || {}).map(function (id) {
      var root = document.getElementById(id);
      root.querySelectorAll('input[type=range]').forEach(function (slider) {
        var field = root.querySelector('input[type=number][data-param="' + slider.dataset.param + '"]');
        slider.addEventListener('input', function () { field.value = slider.value; update(id); });
        field.addEventListener('input', function () {
          if (field.value === '' || !isFinite(Number(field.value))) return;
          slider.value = field.value;
          update(id);
        });
      });
      root.querySelector('select[data-param="P"]').addEventListener('change', function () { update(id); });
      return update(id);
    }));
  });
})();
)JS";
}

}  // namespace mksim::results
