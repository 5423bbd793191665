// Automatic diagnosis of a traced run (seed 002 on measured events): logical phases from separation points,
// utilisation per phase and rank, compute and event-count imbalance per call site, wait states (late sender,
// late receiver, waiting in collectives) followed back along chains of waits to their origin, and tiny
// messages. Severities are measured on the trace (max - mean, largest wait) and, when a platform is given,
// simulated: the skeleton built from the trace (skeletons/builder) is diagnosed by sim/diagnosis/diagnose.hpp at the
// trace's P and parameters and its what-if gains are attached to the trace's findings by call site.
#pragma once

#include "results/diagnosis.hpp"
#include "sim/diagnosis/diagnose.hpp"
#include "skeletons/trace/trace.hpp"

#include <optional>
#include <string>
#include <vector>

namespace mksim::sim {

/** @brief Knobs of the trace diagnosis. */
struct TraceDiagnoseOptions {
  double threshold_pct = 5;   ///< problems saving less than this share of the run are "below threshold"
  double screen_pct = 1;      ///< findings whose measured severity is below this share of the run are dropped
  double tiny_bytes = 1024;   ///< messages of at most this many bytes are candidates for aggregation
  /// When set (a platform was given): build the skeleton from the trace and replay what-ifs at the trace's P
  /// and parameters (its run.P and run.params are overwritten from the trace).
  std::optional<DiagnoseOptions> simulate;
  std::ostream* progress = nullptr;  ///< warnings of the skeleton build, one line each, or none
};

/** @brief What a command-line argument list names, found by content: a skeleton JSON, a mktrace run
 *  directory (or its run.json), or mktrace rank files (magic "MKTRACE"). */
enum class DiagnoseInput { SKELETON, TRACE_DIR, RANK_FILES };

/** @brief Classifies `paths` by their content (not their extension); throws std::runtime_error naming a path
 *  that does not exist or a mix of kinds. */
DiagnoseInput classify_diagnose_input(const std::vector<std::string>& paths);

/** @brief Reads the traced run that `paths` name (a run directory, its run.json, or rank files, which need
 *  every rank 0..P-1); throws trace::TraceError naming the file and offset. */
trace::Run read_diagnose_trace(const std::vector<std::string>& paths, DiagnoseInput kind);

/** @brief Diagnoses a complete traced run (see the file comment); deterministic for a given trace. Throws
 *  std::runtime_error for an incomplete run, ReplayError / DeadlockError when the simulated baseline fails. */
results::Diagnosis diagnose_trace(const trace::Run& run, const TraceDiagnoseOptions& options);

/** @brief The ranked table (with measured severities, chains) and the logical phases as text. */
std::string format_trace_diagnosis(const results::Diagnosis& diagnosis);

}  // namespace mksim::sim
