// The table a parameter sweep leaves behind (one row per point: platform, P, parameters, predicted times from
// replay and model with their split, status, wall time) and its HDF5 form: one compound dataset /sweep.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace mksim::results {

/** @brief Layout version of a sweep file (root attribute format_version); the reader rejects any other. */
inline constexpr int SWEEP_FORMAT_VERSION = 1;

/** @brief What one method (replay or model) gave at one point. `status` is "ok", "not run" or the failure:
 *  "deadlock", "error", "timeout", "killed"; times are NaN unless ok. */
struct SweepPart {
  std::string status = "not run";
  std::string error;   ///< the failure's message, "" when ok
  double time_s = std::numeric_limits<double>::quiet_NaN();     ///< predicted completion time
  double compute_s = std::numeric_limits<double>::quiet_NaN();  ///< of which compute (critical rank or class)
  double comm_s = std::numeric_limits<double>::quiet_NaN();     ///< of which communication
  double wait_s = std::numeric_limits<double>::quiet_NaN();     ///< of which waiting (replay only; model: NaN)
  std::uint64_t messages = 0;  ///< point-to-point messages (replay only)
  double wall_s = 0;           ///< wall-clock seconds the method took at this point (model: its share)
};

/** @brief One point of the grid and what it gave. */
struct SweepRow {
  std::string platform;        ///< the platform file as the sweep named it
  int P = 0;
  std::vector<double> params;  ///< values, in SweepTable::param_names order
  SweepPart replay;
  SweepPart model;
  /** @brief "ok" when every method run at this point is ok, else "failed". */
  std::string status() const;
};

/** @brief A sweep's table and its provenance. */
struct SweepTable {
  std::vector<std::string> param_names;  ///< the swept parameters: one float64 column each, named as they are
  std::vector<SweepRow> rows;
  /// Sorted root attributes: skeleton, skeleton.hash, platforms, mode, grid, tool version (no wall-clock stamps).
  std::vector<std::pair<std::string, std::string>> attributes;
};

/** @brief A value as the table's keys and reports show it: integers without a point, else the shortest text
 *  that reads back to the same double. */
std::string format_value(double v);

/** @brief Writes `table` atomically (temporary file, fsync, rename) as one compound dataset /sweep.
 *  @throws std::runtime_error naming `path`; also for a parameter named like a fixed column. */
void write_sweep_hdf5(const std::string& path, const SweepTable& table);

/** @brief The exact inverse of write_sweep_hdf5. @throws std::runtime_error naming `path` and the object. */
SweepTable read_sweep_hdf5(const std::string& path);

/** @brief The answer to "which value of `over` is best" (least predicted time) for every combination of the
 *  other columns (platform, P, parameters), from the rows whose `metric` ("replay" or "model") part is ok. */
struct BestRow {
  std::vector<std::pair<std::string, std::string>> group;  ///< the other columns' values (formatted)
  std::string best;                                        ///< the winning value of `over` (formatted)
  double time_s = 0;                                       ///< its predicted time
  double runner_up_s = std::numeric_limits<double>::quiet_NaN();  ///< the next best value's time (NaN: none)
  int candidates = 0;                                      ///< values of `over` compared
};

/** @brief best over `over` ("platform", "P" or a parameter); throws std::invalid_argument for an unknown column
 *  or metric. Groups come out in the table's row order. */
std::vector<BestRow> best_over(const SweepTable& table, const std::string& over, const std::string& metric);

}  // namespace mksim::results
