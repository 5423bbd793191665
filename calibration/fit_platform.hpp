// mkcalib fit and validate: fit a platform's figures (node speed, latency, bandwidth, s, r, o, skew alpha) to a
// communication database and/or measured runs of a skeleton, through the analytic model (seed 000 s.4), check
// the result by replay, and write it as a normal generated platform file; then predict held-out runs with it
// (the table of seed 000 table 1: measured, predicted by replay and by the model, errors).
#pragma once

#include "calibration/measured_runs.hpp"
#include "platforms/generator.hpp"
#include "results/calib_db.hpp"
#include "skeletons/skeleton.hpp"

#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mksim::calibration {

/** @brief The fit cannot give a trustworthy platform (ill-conditioned, not converging, residuals too large). */
struct FitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** @brief Bad or inconsistent input (base platform, database, runs): the user's to fix. */
struct FitInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/** @brief The figures a fit can act on; the order is the priority when two cannot be told apart (the earlier is
 *  kept). All enter the model linearly as times: 1/speed (s per flop), latency, 1/bandwidth, s, r, o, alpha. */
enum class FitParam { SPEED, BANDWIDTH, LATENCY, S, R, O, ALPHA, EAGER_PER_BYTE, HANDSHAKE };
inline constexpr int FIT_PARAMS = 9;
/** @brief The first per-regime figure (seed 001 table 2): eager_per_byte (s/B), handshake (s). They are fitted
 *  only when --fit names them ("all" and the default leave them at the base platform's value), and reported
 *  only when fitted or non-zero, so fits without them are as before. */
inline constexpr int FIRST_REGIME_PARAM = 7;

/** @brief "speed", "bandwidth", "latency", "s", "r", "o", "alpha", "eager_per_byte", "handshake". */
const char* fit_param_name(FitParam p);

/** @brief Parses "speed,latency,..." (or "all"); throws std::invalid_argument naming an unknown name. */
std::vector<FitParam> parse_fit_params(const std::string& list);

/** @brief A platform file written by the generator, read back as a spec (every figure, with sources). */
struct BasePlatform {
  std::string path;
  platforms::PlatformSpec spec;      ///< machine, dims, and the file's figures as overrides
  platforms::MachineFigures figures; ///< figures_for(spec)
};

/** @brief Reads a generated platform (needs its mksim.machine and mksim.dims props); figures that equal the
 *  preset's keep the preset's sources. Throws FitInputError naming the file and what is missing. */
BasePlatform read_base_platform(const std::string& path);

/** @brief What to fit and from what. */
struct FitRequest {
  BasePlatform base;
  std::optional<results::CalibDb> db;  ///< mkcalib bench database
  std::string db_path;
  std::optional<MeasuredRuns> runs;    ///< measured runs of `skeleton`
  std::optional<skeletons::Skeleton> skeleton;
  std::string skeleton_path;
  std::vector<FitParam> fit;           ///< figures to fit; empty = every figure the database does not give
  bool replay_check = true;            ///< replay every run on the fitted platform
  double max_error = 0.25;             ///< fail when the model misses a fitting run by more (relative)
};

/** @brief One figure after the fit: value, where it comes from, and why it was not fitted when it was not. */
struct ParamReport {
  FitParam param{};
  std::string figure;   ///< the generator's figure it sets ("nic_latency_s", ...)
  double value = 0;     ///< in the figure's unit (flop/s, s, B/s)
  double base_value = 0;
  std::string status;   ///< "fitted", "database", "fixed"
  std::string why;      ///< source or reason
};

/** @brief A run with the fitted platform's predictions. */
struct RunCheck {
  MeasuredRun run;
  double model_s = 0;
  double replay_s = -1;  ///< -1 when not replayed
};

/** @brief Everything the fit found; `spec` is ready for platforms::generate_platform_xml. */
struct FitResult {
  platforms::PlatformSpec spec;
  std::vector<ParamReport> params;  ///< in FitParam order
  std::vector<RunCheck> runs;
  int iterations = 0;
  double condition = 0;             ///< of the scaled, weighted Jacobian of the fitted figures
  double rms_rel_model = 0, max_rel_model = 0, rms_rel_replay = 0, max_rel_replay = 0;
  std::vector<std::string> notes;
};

/** @brief Fits (the analytic model in a child process that loads the base platform once), then replays every
 *  run on the generated platform. Progress on `log` when not null. */
FitResult fit_platform(const FitRequest& request, std::ostream* log = nullptr);

/** @brief The text `mkcalib fit` prints: figures (value, status, source) and the runs table (fixed precision). */
std::string format_fit_report(const FitResult& result, const std::vector<std::string>& param_columns);

/** @brief The calibrated platform XML: the generator's output with the fit recorded in comments and props. */
std::string calibrated_platform_xml(const FitRequest& request, const FitResult& result);

/** @brief Writes `text` to `path` atomically (temporary file beside it, fsync, rename); throws naming `path`. */
void write_file_atomically(const std::string& path, const std::string& text);

/** @brief One held-out run predicted by replay and by the model. */
struct ValidationRow {
  MeasuredRun run;
  double replay_s = 0, model_s = 0;
  /// replay under the OS noise calibrated to the platform's skew alpha (load rule "noise *"), mean of its draws;
  /// < 0: not replayed (no noise seeds asked, or a platform without alpha)
  double replay_noise_s = -1;
};

/** @brief Predicts every run with the platform (replay per run in a child; the model in one child). With
 *  noise_seeds > 0 and a platform skew alpha > 0, also replays each run under that many draws of the OS noise
 *  calibrated to alpha (sim/engine/load.hpp, NoiseLoad), so that replay carries the model's skew term too. */
std::vector<ValidationRow> validate_platform(const std::string& platform_path, const skeletons::Skeleton& skeleton,
                                             const MeasuredRuns& runs, int noise_seeds = 0);

/** @brief Relative error (predicted - measured) / measured. */
inline double rel_error(double predicted, double measured) { return (predicted - measured) / measured; }

/** @brief The table of seed 000 table 1: parameters, measured, replay, model, errors (%), mean and worst. */
std::string format_validation(const std::vector<ValidationRow>& rows, const std::vector<std::string>& param_columns);

}  // namespace mksim::calibration
