// mkcalib bench: measures the requested kernels one at a time and saves the database after each one, so that a
// run killed halfway keeps what it measured and a rerun with the same options measures only the rest.
#pragma once

#include "calibration/driver.hpp"
#include "results/calib_db.hpp"

#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mksim::calibration {

/** @brief Statistics per size and the fit of kernel_output's medians (fit_kind_of) as a database record. */
results::CalibKernel make_kernel_record(const MicrobenchOutput& output, const std::string& date_utc, double wall_s);

/** @brief Everything `mkcalib bench` needs. */
struct BenchRequest {
  Launcher launcher;
  BenchConfig config;
  std::vector<Kernel> kernels;  ///< in canonical order
  std::string machine;          ///< name stored in the database
  std::string output;           ///< database path
};

/** @brief The database at the output path belongs to another machine or was measured with other options. */
struct ResumeMismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** @brief What a bench run did. */
struct BenchReport {
  std::vector<Kernel> measured, skipped;
  double wall_s = 0;
};

/**
 * @brief Measures every kernel of `request` not yet in `request.output` and rewrites the file atomically after
 * each one. Progress and skipped kernels are reported on `log`.
 * @throws ResumeMismatch when the existing file holds another machine or configuration; std::runtime_error when
 * it cannot be read (naming it) or a kernel fails (what was saved before stays).
 */
BenchReport run_bench(const BenchRequest& request, std::ostream& log);

/** @brief The machine figures derived from a database (fields absent when their kernel was not measured). */
struct MachineFigures {
  bool has_pingpong = false, has_s = false, has_r = false, has_o = false;
  std::vector<results::CalibRegime> pingpong;  ///< latency rho and 1/beta per regime
  std::uint64_t breakpoint_bytes = 0;
  double s_s = 0, r_s = 0, o_s = 0;            ///< intercepts of the overhead kernels' lines
};

/** @brief Latency and bandwidth per regime from pingpong; s, r, o from the overhead kernels' lines (the rho of
 *  each: the per-message part with the per-byte part removed). */
MachineFigures machine_figures(const results::CalibDb& db);

/** @brief The text of `mkcalib show`: header, per-kernel tables and fits, machine figures (fixed precision). */
std::string format_report(const results::CalibDb& db);

/** @brief Current UTC time as ISO 8601 (2024-05-01T12:00:00Z). */
std::string utc_now();

}  // namespace mksim::calibration
