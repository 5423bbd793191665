// Measured collective costs t(P, bytes) from mkcalib bench databases (seed 004 s.2's communication database), for
// replay and the analytic model to use in place of their collective algorithms (`--collectives DB.h5,...`, issue 6,
// calibration/README.md): in size, log-log interpolation of the medians; over P, t = a + b*log2(P) fitted to the
// databases' rank counts (exact through two), with its relative error at the measured points. It lives in the engine
// (not calibration/, which sits above it) and needs only results/ to read the databases.
#pragma once

#include "results/calib_db.hpp"

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace mksim::sim {

/** @brief Missing or inconsistent databases (two with the same np, a collective absent at some np). */
struct CollectiveTableError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** @brief The collectives of one or more databases, by kernel name and rank count: (size, median time) by size. */
struct CollectiveTable {
  std::map<std::string, std::map<int, std::vector<std::pair<double, double>>>> points;
  std::vector<std::string> machines;  ///< the databases' machine names (in the order given)
  std::vector<std::string> sources;   ///< the database files (load_collective_table), in the order given
};

/** @brief The collective kernels (barrier, bcast, reduce, allreduce, allgather, alltoall, gather, scatter) of the
 *  databases. Throws CollectiveTableError naming the database when two have the same np or one has none of them. */
CollectiveTable collective_table(const std::vector<results::CalibDb>& dbs, const std::vector<std::string>& names);

/** @brief t at `bytes` from (size, time) points: log-log linear between the neighbouring sizes, the end segments
 *  extended beyond the range; size 0 (barrier) or a single point: that point's time. */
double interpolate_in_size(const std::vector<std::pair<double, double>>& pts, double bytes);

/** @brief t = a + b*log2(P) over the measured rank counts at one size, and how well it fits them. */
struct OverP {
  double a_s = 0, b_s = 0;
  double max_rel_error = 0;  ///< max |fit - measured| / measured over the rank counts (0 through one or two)
  int rank_counts = 0;
};

/** @brief The fit over P of `kind` at `bytes` (least squares on relative residuals; one rank count: b = 0). */
OverP fit_over_P(const CollectiveTable& t, const std::string& kind, double bytes);

/** @brief The measured cost of `kind` at P ranks and `bytes`: fit_over_P evaluated at P (never below 0). Throws
 *  CollectiveTableError when the table has no such collective. */
double collective_time(const CollectiveTable& t, const std::string& kind, int P, double bytes);

/** @brief Reads the databases (comma-separated paths are split too) and builds their table. Throws
 *  CollectiveTableError naming the file that cannot be read or is inconsistent. */
CollectiveTable load_collective_table(const std::vector<std::string>& paths);

/** @brief Whether the table measured `kind` (then replay and the model use its t(P, bytes)). */
bool measures(const CollectiveTable& t, const std::string& kind);

/** @brief What using the table at P ranks and `bytes` extrapolates (rank count or size outside the measured
 *  ones), as a note for the user; "" when both are inside. */
std::string extrapolation_note(const CollectiveTable& t, const std::string& kind, int P, double bytes);

/** @brief Where each measured kind was measured and how well a + b*log2(P) fits it: "allreduce: np 2,4, sizes
 *  8..65536 B, fit error over P <= 0.0%" (max of fit_over_P's error over the measured sizes), one per kind. */
std::vector<std::string> describe(const CollectiveTable& t);

}  // namespace mksim::sim
