// The communication database of mkcalib (issue 6; seed 004 s.2): plain records and their HDF5 file (layout in
// calibration/README.md). The HDF5 headers stay in calib_db.cpp; mksim::calibration fills these records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mksim::results {

/** @brief Layout version written to the root attribute format_version; the reader rejects any other. */
inline constexpr int CALIB_FORMAT_VERSION = 1;

/** @brief One message size (or working set) of one kernel: every repetition and their statistics. */
struct CalibSize {
  std::uint64_t size_bytes = 0;          ///< message, block or working-set size
  std::uint64_t iterations = 0;          ///< operations timed together in one repetition
  std::vector<double> times_s;           ///< one value per repetition, seconds per operation (or per flop)
  std::vector<std::uint8_t> outlier;     ///< 1 where the repetition is flagged as an outlier (kept, not dropped)
  double mean_s = 0, median_s = 0, stddev_s = 0;
  double ci95_low_s = 0, ci95_high_s = 0;  ///< 95% confidence interval of the mean (Student t)
  friend bool operator==(const CalibSize&, const CalibSize&) = default;
};

/** @brief One regime of a rho + beta*D fit over the sizes [from_bytes, to_bytes] it covers. */
struct CalibRegime {
  std::string name;               ///< "short", "long", or "all" for a single line
  std::uint64_t from_bytes = 0, to_bytes = 0;
  double rho_s = 0;               ///< start-up time
  double beta_s_per_byte = 0;     ///< time per byte
  double rel_rss = 0;             ///< sum of squared relative residuals of the medians
  std::uint64_t points = 0;       ///< sizes in the regime
  friend bool operator==(const CalibRegime&, const CalibRegime&) = default;
};

/** @brief Everything measured and derived for one microbenchmark kernel. */
struct CalibKernel {
  std::string name;                   ///< kernel name (pingpong, send_overhead, ..., compute)
  std::string unit;                   ///< "s" (per operation) or "s/flop"
  std::string date_utc;               ///< when the kernel was measured (ISO 8601)
  double wall_s = 0;                  ///< how long measuring it took
  std::vector<CalibSize> sizes;       ///< by increasing size
  std::vector<CalibRegime> fit;       ///< empty, one line ("all") or two regimes ("short", "long")
  std::uint64_t breakpoint_bytes = 0; ///< first size of the long regime; 0 without two regimes
  friend bool operator==(const CalibKernel&, const CalibKernel&) = default;
};

/** @brief A whole database file: the machine it describes and the kernels measured so far. */
struct CalibDb {
  std::string machine;      ///< name given by the user (--machine)
  std::string date_utc;     ///< when the first kernel was measured
  std::string hostname;     ///< where rank 0 ran
  std::string mpi_library;  ///< MPI_Get_library_version
  int np = 0;               ///< ranks of every kernel
  std::string config;       ///< the measuring options; resuming requires the same
  std::vector<CalibKernel> kernels;
  friend bool operator==(const CalibDb&, const CalibDb&) = default;
};

/**
 * @brief Writes `db` to `path` atomically (temporary file beside it, fsync, rename), so an interrupted write
 * never leaves a partial file at `path`. Identical records give byte-identical files.
 * @throws std::runtime_error naming `path` and the failing operation (or the invalid record).
 */
void write_calib_db(const std::string& path, const CalibDb& db);

/**
 * @brief Reads a file written by write_calib_db; the exact inverse.
 * @throws std::runtime_error naming `path` and the missing or malformed object.
 */
CalibDb read_calib_db(const std::string& path);

}  // namespace mksim::results
