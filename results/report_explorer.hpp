// The report's model explorer (mksim report --explore; seed 004's IP3T lets a user change block parameters and
// re-predict at once): the analytic model of a swept skeleton, exported as JavaScript by sim/model at each swept P,
// re-evaluated in the page as the user moves a control for P and for every parameter, drawn as T(P) beside the
// sweep's replayed points and as the critical class's per-phase breakdown. Plain data here: results/ does not see
// the model; sim/cli fills these from sim/model's ModelScript.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "results/sweep_table.hpp"

namespace mksim::results {

/** @brief One part of a rank class's cost: phase label, kind, and `function (f) {...}` of the frame [P, params...]. */
struct ExplorerTerm {
  std::string phase, kind, js;
};

/** @brief A rank class's cost at one P: which ranks, its total and its parts (JavaScript functions of the frame). */
struct ExplorerClass {
  std::string members;
  std::string total_js;
  std::vector<ExplorerTerm> terms;
};

/** @brief The model derived at one P (its rank classes and routes are resolved there). */
struct ExplorerModel {
  int P = 0;
  std::string T_js;  ///< the largest class total, as the model compiled it
  std::vector<ExplorerClass> classes;
};

/** @brief A control of the page: a parameter's initial value and its slider's range (the field takes any value). */
struct ExplorerParam {
  std::string name;
  double value = 0, lo = 0, hi = 0, step = 0;  ///< step 0: continuous
};

/** @brief Everything one explorer shows: the models at each P of one sweep's platform, in frame order. */
struct ModelExplorer {
  std::string source;    ///< the sweep's label (its skeleton's name)
  std::string sweep;     ///< the sweep table's path, whose replayed points are drawn beside the curve
  std::string platform;  ///< as the sweep named it
  std::vector<ExplorerParam> params;  ///< frame order after P
  std::vector<ExplorerModel> models;  ///< by increasing P
  std::vector<std::string> notes;     ///< the model's approximations, shown under the controls
};

/** @brief The pieces of one explorer for the page: its controls (HTML), its data and functions (a script), and the
 *  specs of its two plots, whose views the page's render script hands to the explorer by id. */
struct ExplorerParts {
  std::string controls_html;
  std::string script;
  nlohmann::json curve_spec, breakdown_spec;
};

/** @brief Builds explorer number `index` (ids explorer-<index>); `replayed` are the sweep rows of its platform whose
 *  replay is ok, drawn where their parameters equal the controls'. The plots' element ids are given by the caller. */
ExplorerParts explorer_parts(const ModelExplorer& explorer, int index, const SweepTable& sweep, const std::string& curve_plot_id,
                             const std::string& breakdown_plot_id);

/** @brief The script every page with an explorer carries once: reads the controls, evaluates the models, updates the
 *  views and the readout; `window.mksimExplorer[id]` holds the last values drawn (the report test reads them). */
const char* explorer_runtime_js();

}  // namespace mksim::results
