// Measured runs of a program as a CSV (P, skeleton parameter values, measured time): the input of `mkcalib fit
// --runs` and `mkcalib validate` (format in calibration/README.md). Parsed once here into typed values.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace mksim::calibration {

/** @brief A malformed runs file: what() names the file and line ("runs.csv:7: ..."). */
struct RunsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** @brief One measured run: its rank count, the parameters it set, its wall time. */
struct MeasuredRun {
  int P = 0;
  std::map<std::string, double> params;  ///< the file's parameter columns (others: skeleton defaults)
  double time_s = 0;                     ///< measured completion time
  int line = 0;                          ///< line in the file (1-based), for messages and reports
};

/** @brief A whole runs file. */
struct MeasuredRuns {
  std::string file;
  std::vector<std::string> param_columns;  ///< in file order (without P and time_s)
  std::vector<std::string> comments;       ///< the '#' lines (provenance), without the '#'
  std::vector<MeasuredRun> runs;           ///< in file order
};

/**
 * @brief Parses the CSV text: '#' lines are comments, blank lines are skipped, the first other line is the header
 * (`P`, `time_s`, and parameter names), every row has as many fields as the header, numbers only.
 * @param known_params the skeleton's parameter names; empty = accept any name.
 * @throws RunsError naming `file` and the line: unknown or duplicate column, missing P/time_s, wrong field count,
 * a field that is not a number, P not a positive integer, time_s not positive, no rows.
 */
MeasuredRuns parse_measured_runs(const std::string& text, const std::string& file,
                                 const std::vector<std::string>& known_params = {});

/** @brief Reads and parses a runs file (RunsError when it cannot be read). */
MeasuredRuns read_measured_runs(const std::string& path, const std::vector<std::string>& known_params = {});

}  // namespace mksim::calibration
