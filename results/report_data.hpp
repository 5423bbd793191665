// What a report plots, derived from the result files as plain values (no HDF5, no JSON, no HTML): a sweep's
// curves, their speedup and efficiency, where two curves cross, and the timeline CSV of `mksim predict --timeline`.
#pragma once

#include <cstddef>
#include <limits>
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
