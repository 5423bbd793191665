// Internal to results/: the Vega-Lite specifications of the report's plots, one function per plot, built from the
// typed values of report_data.hpp and the readers' records (every axis titled with its unit, tooltips on marks).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "results/calib_db.hpp"
#include "results/diagnosis.hpp"
#include "results/report_data.hpp"
#include "results/run_result.hpp"
#include "results/sweep_table.hpp"

namespace mksim::results::report_specs {

using Json = nlohmann::json;

/** @brief A measured point drawn over the predictions, with the name of its series (file and parameters). */
struct MeasuredMark {
  std::string series;
  const MeasuredPoint* point = nullptr;
};

/** @brief Predicted time vs P (log-log), one panel per method side by side, crossings marked; `measured` points
 *  (with their error bars where they have a spread) drawn on both panels. */
Json time_vs_p(const std::vector<CurvePoint>& points, const std::vector<Crossing>& crossings,
               const std::vector<MeasuredMark>& measured = {});

/** @brief Predicted vs measured time (log-log) with the line of equality, one mark per matched pair. */
Json measured_vs_predicted(const std::vector<std::pair<std::string, MeasuredMatch>>& matches);

/** @brief Isospeed: the required work W vs P and the scalability psi(P0, P) = P W0 / (P0 W) vs P. */
Json isospeed(const std::vector<ScalePoint>& points, const WorkModel& work);

/** @brief Constant time: the largest problem size whose predicted time stays at the base's, vs P. */
Json constant_time(const std::vector<ScalePoint>& points, const WorkModel& work);

/** @brief The diagnosis ranking: predicted gain of each finding (seconds and percent), coloured by how the gain was
 *  obtained (simulated / formula / model), hover for where and what to do. */
Json diagnosis_ranking(const Diagnosis& diagnosis);

/** @brief "simulated", "formula" or "model" from a Problem's method text (its first word), "other" else. */
std::string method_class(const std::string& method);

/** @brief Speedup (log-log, with the ideal line) and efficiency vs P. */
Json speedup_efficiency(const std::vector<ScalingPoint>& points);

/** @brief The best value of parameter `over` vs P, one line per other-columns group and method. */
Json best_vs_p(const std::vector<BestRow>& replay, const std::vector<BestRow>& model, const std::string& over);

/** @brief Share of compute / communication / wait at each point of one method (stacked, normalized). */
Json split_per_point(const std::vector<CurvePoint>& points, const std::string& method);

/** @brief Compute / communication / wait per phase label, summed over ranks. */
Json phase_split(const RunResult& run);

/** @brief Compute / communication / wait per rank (consecutive ranks grouped into at most `max_bars` bars). */
Json rank_split(const RunResult& run, std::size_t max_bars);

/** @brief The `top` blocks with the most time, summed over ranks: the diagnosis ranking. */
Json top_blocks(const RunResult& run, std::size_t top);

/** @brief Per-rank Gantt chart of a timeline. */
Json gantt(const Timeline& timeline);

/** @brief Time vs message size (log-log) of one kernel with 95% CI bars and its fitted regimes. */
Json kernel_time_vs_size(const CalibKernel& kernel);

/** @brief Compute rate (flop/s) vs working-set size of the compute kernel (unit s/flop), with 95% CI bars. */
Json compute_rate(const CalibKernel& kernel);

/** @brief Time vs size of several kernels on one chart (the collectives and patterns). */
Json kernels_time_vs_size(const std::vector<const CalibKernel*>& kernels);

}  // namespace mksim::results::report_specs
