// Automatic diagnosis of a simulated run (seed 002, Projections' automatic analysis): finds load imbalance,
// wait states, messages too small for their cost, pipelines with a poor grain and phases that grow with P,
// and ranks them by severity, the time saved if fixed, measured by replaying the fixed program where the
// engine can fix it (ReplayOptions::what_ifs, each replay in its own child process) and by the seed's
// formulas otherwise.
#pragma once

#include "results/diagnosis.hpp"
#include "sim/engine/replay.hpp"
#include "skeletons/skeleton.hpp"

#include <ostream>
#include <string>

namespace mksim::sim {

/** @brief What to diagnose and how hard to look. */
struct DiagnoseOptions {
  ReplayOptions run;            ///< platform, P, parameters, seed of the run (block_stats and what_ifs are set here)
  double threshold_pct = 5;     ///< problems saving less than this share of the run are "below threshold"
  double screen_pct = 1;        ///< candidates whose first estimate is below this share are not simulated
  int scale_factor = 4;         ///< scaling detector: model terms at P and at scale_factor * P
  bool use_model = true;        ///< pipeline-grain and scaling detectors (the analytic model, sim/model/model.hpp)
  int max_what_ifs = 32;        ///< at most this many what-if replays
  std::ostream* progress = nullptr;  ///< one line per replay, or none
};

/** @brief Diagnoses the skeleton at options.run.P: one baseline replay with block statistics, then what-if
 *  replays per candidate problem, each in a forked child. Throws ReplayError / DeadlockError when the
 *  baseline cannot run, std::runtime_error for other failures. */
results::Diagnosis diagnose(const skeletons::Skeleton& skeleton, const DiagnoseOptions& options);

/** @brief replay() with block statistics in a forked child (RunResult::block_stats and phase_stats filled). */
results::RunResult replay_stats_in_child(const skeletons::Skeleton& skeleton, const ReplayOptions& options);

/** @brief The ranked table and phase utilisation as text (fixed precision, deterministic). */
std::string format_diagnosis(const results::Diagnosis& diagnosis);

namespace detail {
/** @brief The pieces both text forms share (a simulated run's and a trace's, sim/diagnosis/trace_diagnose.hpp). */
struct DiagnosisText {
  const char* run_label;       ///< "baseline" or "traced run"
  int where_width;             ///< width of the "where" column
  bool measured;               ///< a "measured s" column and the chains of waits (traces)
  const char* phases_heading;  ///< what a separation point is
  const char* sites_heading;   ///< "blocks" or "call sites"
  bool per_rank;               ///< utilisation per rank under each logical phase
};
/** @brief Header line, ranked problems and logical phases (not the notes) of `d` in the form `t`. */
void format_problems(std::ostream& out, const results::Diagnosis& d, const DiagnosisText& t);
void format_logical_phases(std::ostream& out, const results::Diagnosis& d, const DiagnosisText& t);
/** @brief Position of a problem kind in the tie order: the cause (imbalance) before its symptoms (waits). */
int kind_order(const std::string& kind);
/** @brief Sets every gain_pct from baseline_time_s and sorts by gain, then kind_order, then block. */
void rank_problems(results::Diagnosis& d);
}  // namespace detail

}  // namespace mksim::sim
