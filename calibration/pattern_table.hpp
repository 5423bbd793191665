// Per-pattern communication lines as published (seed 001 table 2: rho + beta*D per pattern and message regime),
// turned into the runs `mkcalib fit` fits per-regime figures to, and the regression that checks a platform
// reproduces them (calibration/README.md, "Per-regime figures from seed 001 table 2").
#pragma once

#include "calibration/measured_runs.hpp"
#include "platforms/patterns.hpp"
#include "skeletons/skeleton.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace mksim::calibration {

/** @brief A malformed pattern table: what() names the file and line. */
struct PatternTableError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** @brief One line of the table: T_comm(D) = rho + beta*D per message of a pattern, in one regime. */
struct PatternLine {
  std::string machine;   ///< e.g. "t3e"
  std::string pattern;   ///< "1d" or "2d"
  std::string regime;    ///< "short" or "long"
  double rho_s = 0;      ///< start-up time per message
  double beta_s_per_byte = 0;
  int line = 0;          ///< in the file
};

/** @brief The table file: '#' comments, header `machine,pattern,regime,rho_us,beta_us_per_byte`, times in us. */
struct PatternTable {
  std::string file;
  std::vector<std::string> comments;
  std::vector<PatternLine> lines;
};

/** @brief Parses the table text; PatternTableError ("file:line: ...") on a bad header, field, pattern (not 1d/2d),
 *  regime (not short/long), non-positive rho or beta, or the same (machine, pattern, regime) twice. */
PatternTable parse_pattern_table(const std::string& text, const std::string& file);
PatternTable read_pattern_table(const std::string& path);

/** @brief The sizes of each regime the runs sample (bytes): short at or below the platform's eager threshold,
 *  long above it (the defaults: 8 .. 4096 and 8 KiB .. 1 MiB, T3E threshold 4747 B). */
struct PatternSizes {
  std::vector<double> short_bytes{8, 64, 256, 1024, 2048, 4096};
  std::vector<double> long_bytes{8192, 16384, 65536, 262144, 1048576};
};

/** @brief Messages per rank per step of the skeleton calibration/data/comm_patterns.json: 1 (1d), 4 (2d). */
int pattern_messages_per_step(const std::string& pattern);

/** @brief The runs the table's lines of `machine` stand for, for the skeleton comm_patterns.json (parameters D,
 *  steps, dim): time_s = steps * messages per step * (rho + beta*D) at each size of the line's regime, at P.
 *  Throws PatternTableError when the machine has no line. */
MeasuredRuns pattern_runs(const PatternTable& table, const std::string& machine, int P, int steps,
                          const PatternSizes& sizes = {});

/** @brief The runs as a CSV `mkcalib fit --runs` reads back (comments say where they come from). */
std::string format_runs_csv(const MeasuredRuns& runs);

/** @brief One line of the table against what a platform gives for it: replay and the model run the pattern at
 *  each size of the regime, and t / (steps * messages per step) = rho + beta*D is regressed (fit_line). */
struct PatternCheck {
  PatternLine table;
  double model_rho_s = 0, model_beta_s_per_byte = 0;
  double replay_rho_s = 0, replay_beta_s_per_byte = 0;
};

/** @brief Replays and models every run of pattern_runs() on the platform (validate_platform) and regresses
 *  each line. `skeleton` is calibration/data/comm_patterns.json. */
std::vector<PatternCheck> check_pattern_table(const std::string& platform_path, const skeletons::Skeleton& skeleton,
                                              const PatternTable& table, const std::string& machine, int P, int steps,
                                              const PatternSizes& sizes = {});

/** @brief The table's lines for `machine` as per-message pattern figures for a platform (`mkcalib patterns`): 1d, 2d,
 *  the breakpoint where the short and long lines cross, else `fallback_breakpoint_bytes`. Throws PatternTableError
 *  when the machine has no line, or a pattern has only one of its two lines. */
std::vector<platforms::PatternFigures> table_patterns(const PatternTable& table, const std::string& machine,
                                                      double fallback_breakpoint_bytes);

/** @brief The check as a table: pattern, regime, rho and beta of the table, model and replay, errors (%). */
std::string format_pattern_check(const std::vector<PatternCheck>& rows);

}  // namespace mksim::calibration
