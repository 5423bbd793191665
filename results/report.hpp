// `mksim report`: one self-contained HTML page of Vega-Lite plots from any mix of mksim's files (run results,
// sweep tables, calibration databases, timeline CSVs), with their provenance; layout in results/README.md.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "results/report_data.hpp"
#include "results/report_explorer.hpp"

namespace mksim::results {

/** @brief An input the report cannot use as given (missing, not HDF5, malformed): the command's exit code 2. */
struct ReportInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** @brief The plotting library's minified scripts, inlined into every page, and their versions. */
struct VegaLibrary {
  std::string dir;  ///< the node_modules directory they came from
  std::string vega_js, vega_lite_js, vega_embed_js;
  std::string versions;  ///< "vega 6.4.0, vega-lite 6.4.3, vega-embed 7.3.0"
};

/** @brief The node_modules directory configured at build time (CMake cache variable MKSIM_VEGA_DIR). */
std::string default_vega_dir();

/**
 * @brief Reads vega/build/vega.min.js, vega-lite/build/vega-lite.min.js and vega-embed/build/vega-embed.min.js
 * under `dir`. @throws std::runtime_error naming the missing file and how to install the library.
 */
VegaLibrary load_vega_library(const std::string& dir);

/** @brief What to put in a report. */
struct ReportOptions {
  std::vector<std::string> inputs;     ///< HDF5 files of any mksim kind; names ending in .csv are timelines
  std::vector<std::string> timelines;  ///< `mksim predict --timeline` CSVs
  /// Measured runs (the CSVs of `mkcalib fit/validate --runs`, parsed by the caller): drawn over the matching sweep
  /// curves, and predicted vs measured.
  std::vector<MeasuredRuns> measured;
  /// The problem-size parameter of isospeed and constant-time curves; param "" = "N" when a sweep has it.
  WorkModel work{"", 1};
  std::string title = "mksim report";
  std::string tool;                    ///< "mksim 0.1.0", recorded in the page
  std::string command;                 ///< the command line, recorded in the page
  std::size_t max_timeline_ops = 20000;  ///< operations drawn per timeline (the rest is only counted)
  std::size_t max_split_points = 400;    ///< bars per time-split chart of a sweep
  /// Model explorers (mksim report --explore), each naming one of `inputs` (a sweep table) as its `sweep`.
  std::vector<ModelExplorer> explorers;
};

/** @brief A built page and what it holds. */
struct ReportPage {
  std::string html;
  int plots = 0;                     ///< Vega-Lite views in the page
  std::vector<std::string> missing;  ///< what could not be plotted and why (also shown on the page)
};

/**
 * @brief Reads every input and builds the page. Empty or partial inputs (no rows, every point failed, a file of
 * an unknown kind) give notes in `missing` and on the page, not an error.
 * @throws ReportInputError naming the file when an input is missing, unreadable or malformed.
 */
ReportPage build_report(const ReportOptions& options, const VegaLibrary& library);

/** @brief Writes `page.html` to `path` atomically (temporary file beside it, fsync, rename).
 *  @throws std::runtime_error naming `path`; the temporary file is removed. */
void write_report(const std::string& path, const ReportPage& page);

}  // namespace mksim::results
