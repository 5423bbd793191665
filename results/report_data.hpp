// What a report plots, derived from the result files as plain values (no HDF5, no JSON, no HTML): a sweep's
// curves, their speedup and efficiency, where two curves cross, and the timeline CSV of `mksim predict --timeline`.
#pragma once

#include <cstddef>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "results/sweep_table.hpp"

namespace mksim::results {

/** @brief One predicted time of a sweep (one method at one point), tagged with the curve it belongs to. */
struct CurvePoint {
  std::string source;    ///< the sweep's label: its skeleton's name (a report may hold several sweeps)
  std::string platform;  ///< as the sweep named it
  std::string method;    ///< "replay" or "model"
  std::string params;    ///< the swept parameters' values, "K=8 N=4096" ("" when none)
  std::map<std::string, double> values;  ///< the same as numbers
  std::string curve;     ///< legend name of the curve: source (when given), platform, params
  int P = 0;
  double time_s = 0;     ///< predicted completion time
  double compute_s = 0, comm_s = 0;
  double wait_s = std::numeric_limits<double>::quiet_NaN();  ///< NaN for the model (it has no wait)
};

/** @brief The ok points of `table`, replay's then model's, each in the table's row order. `source` prefixes the
 *  curve names when not empty. */
std::vector<CurvePoint> curve_points(const SweepTable& table, const std::string& source);

/** @brief One point of a speedup curve. */
struct ScalingPoint {
  std::string curve, method;
  int P = 0;
  int base_P = 0;         ///< the curve's smallest P, the reference
  double time_s = 0;
  double speedup = 0;     ///< T(base_P) * base_P / T(P): base_P ranks are assumed to run at full speed
  double efficiency = 0;  ///< speedup / P
};

/** @brief Speedup and efficiency of every curve (same curve and method), against its own smallest P; a curve with
 *  one P gives one point of speedup P and efficiency 1. Output in (curve, method, P) order. */
std::vector<ScalingPoint> scaling(const std::vector<CurvePoint>& points);

/** @brief Where two curves of one method cross. */
struct Crossing {
  std::string method;
  std::string a, b;           ///< the two curves' names, a < b
  double P = 0;             ///< the crossing, interpolated linearly in log P / log T
  double time_s = 0;        ///< the time there (interpolated on curve a)
  int P_low = 0, P_high = 0;  ///< the measured P on either side (equal when the curves meet at a grid point)
};

/** @brief Crossings between curves of one method that are comparable: the same sweep and parameters on two
 *  platforms, or two sweeps (different skeletons) on the same platform. Compared over the P both curves have:
 *  a crossing is a change of sign of log T_a - log T_b between consecutive P (a tie counts once, at its P).
 *  Output sorted by (method, a, b, P). */
std::vector<Crossing> find_crossings(const std::vector<CurvePoint>& points);

// ---------------------------------------------------------------------------------------------- measured runs

/** @brief One row of a measured-runs CSV (the format `mkcalib fit/validate --runs` reads, parsed by
 *  calibration/measured_runs.hpp): every column but P and time_s by name. */
struct MeasuredRow {
  int P = 0;
  std::map<std::string, double> values;  ///< parameter columns and, when present, the spread columns
  double time_s = 0;
  int line = 0;
};

/** @brief A whole measured-runs file as the report receives it. */
struct MeasuredRuns {
  std::string file;
  std::vector<std::string> columns;   ///< in file order, without P and time_s
  std::vector<std::string> comments;  ///< provenance ('#' lines)
  std::vector<MeasuredRow> rows;
};

/** @brief Columns of a measured-runs CSV read as the spread of a row's time, not as parameters. */
inline const std::vector<std::string>& spread_columns() {
  static const std::vector<std::string> names{"time_min_s", "time_max_s", "time_sd_s", "time_std_s", "repetitions"};
  return names;
}

/** @brief One measured point: a mean time with its spread (low = high = time when there is none). */
struct MeasuredPoint {
  int P = 0;
  std::map<std::string, double> params;  ///< the parameter columns' values
  std::string params_text;               ///< "N=256 steps=30"
  double time_s = 0;                     ///< the mean of the repetitions (or the row's time)
  double low_s = 0, high_s = 0;          ///< the error bar
  int repetitions = 1;
  std::string spread;  ///< how low/high were obtained: "min-max of 3 rows", "time_min_s/time_max_s", "mean ± sd", ""
};

/** @brief The file's points: rows with the same P and parameter values are repetitions of one point (mean time,
 *  min-max bar); a row with time_min_s/time_max_s (or time_sd_s) columns gives its own bar. In first-seen order. */
std::vector<MeasuredPoint> measured_points(const MeasuredRuns& runs);

/** @brief A measured point beside a predicted one of the same P and parameters. */
struct MeasuredMatch {
  const MeasuredPoint* measured = nullptr;
  const CurvePoint* predicted = nullptr;
  double rel_error = 0;  ///< (predicted - measured) / measured
};

/** @brief Whether `point` is one of `curve`'s (same parameters where both name them, and the sweep's other
 *  parameters) -- compared to 1e-6 relative -- and, when `platform` is not empty, on that platform. */
bool measured_matches(const MeasuredPoint& point, const CurvePoint& curve, const std::string& platform);

/** @brief Every (measured point, predicted point) pair of equal P that `measured_matches`. */
std::vector<MeasuredMatch> match_measured(const std::vector<MeasuredPoint>& measured,
                                          const std::vector<CurvePoint>& predicted, const std::string& platform);

/** @brief The one platform among `platforms` that the file's comments name (case-insensitive, as a word), else "". */
std::string platform_named_in(const std::vector<std::string>& comments, const std::vector<std::string>& platforms);

// ---------------------------------------------------------------------------------------------- isospeed

/** @brief How the work W of a point is obtained from the sweep: W = param^exponent (seed 001: work taken as
 *  proportional to it). */
struct WorkModel {
  std::string param;      ///< the problem-size parameter, e.g. "N"
  double exponent = 1;    ///< W ∝ N^exponent (2 for an N x N grid)
};

/** @brief One point of an isospeed or constant-time curve. */
struct ScalePoint {
  std::string curve;   ///< the group: source, platform, other parameters, "from N=..."
  std::string method;
  int P = 0;
  int base_P = 0;
  double base_n = 0;   ///< the problem-size parameter at base_P
  double n = std::numeric_limits<double>::quiet_NaN();  ///< required (isospeed) or largest (constant time) N at P
  double work = std::numeric_limits<double>::quiet_NaN();  ///< n^exponent
  double psi = std::numeric_limits<double>::quiet_NaN();   ///< isospeed: P'W / (P W') with P, W at base; NaN else
  double target = 0;   ///< isospeed: speed per processor W/(T P) at the base (work/s); constant time: T at base (s)
  double n_low = 0, n_high = 0;  ///< the grid values it was interpolated between (equal at a grid point)
  std::string status;  ///< "ok", "above grid" (needs N > the largest swept), "below grid", "not swept at this P"
};

/** @brief Isospeed and constant-time curves of one sweep. */
struct ScaleCurves {
  std::vector<ScalePoint> isospeed, constant_time;
  std::vector<std::string> notes;  ///< what could not be computed (coarse grid, out of range), for the page
};

/**
 * @brief For each group of a method's curve points (same source, platform, other parameters) with >= 2 values
 * of `work.param` at its smallest P and >= 2 P: for each value N0 at the smallest P0, (a) isospeed: at each P the
 * N whose speed per processor W/(T P) equals the one at (P0, N0), (b) constant time: at each P the largest N with
 * T(P, N) <= T(P0, N0); both interpolated linearly in log N over the swept N of that P (log of speed, resp. time).
 * Points beyond the grid are kept with status "above grid"/"below grid" and n NaN (never extrapolated).
 * `points` come from curve_points of one sweep whose params include `work.param`.
 */
ScaleCurves scale_curves(const std::vector<CurvePoint>& points, const WorkModel& work);


// ---------------------------------------------------------------------------------------------- timelines

/** @brief One row of a `mksim predict --timeline` CSV: one operation of one rank. */
struct TimelineOp {
  int rank = 0;
  double start_s = 0, end_s = 0;  ///< simulated time
  std::string kind;               ///< compute, send, recv, wait, allreduce, ...
  std::string block;              ///< the skeleton block's id
};

/** @brief The first `max_ops` rows of a timeline CSV and how many it has in all. */
struct Timeline {
  std::vector<TimelineOp> ops;
  std::size_t total_ops = 0;
  int ranks = 0;  ///< distinct ranks in the whole file
};

/**
 * @brief Reads `path` (header `rank,start_s,end_s,kind,block`, rows sorted by rank then start), keeping the
 * first `max_ops` rows. @throws std::runtime_error naming `path` and the line of a malformed row.
 */
Timeline read_timeline_csv(const std::string& path, std::size_t max_ops);

}  // namespace mksim::results
