// The outcome of `mksim diagnose` as plain values (seed 002: problems ranked by severity, the time saved if
// fixed), and its HDF5 file (layout below); results/ is the only component that includes HDF5.
#pragma once

#include "results/run_result.hpp"

#include <string>
#include <utility>
#include <vector>

namespace mksim::results {

/** @brief One performance problem: where it is, what to do, and how much time fixing it saves. */
struct Problem {
  std::string kind;    ///< imbalance, event_imbalance, late_sender, late_receiver, collective_wait, granularity, pipeline_grain, scaling
  std::string block;   ///< block id (call site) where it shows, "" for a whole phase
  std::string phase;   ///< phase label of the block, or the phase of a model term
  std::string ranks;   ///< the ranks concerned, e.g. "rank 3 (max), mean over 16"
  std::string action;  ///< what to do
  double gain_s = 0;   ///< predicted reduction of the run's time (severity), seconds
  double gain_pct = 0; ///< gain_s over the baseline time, percent
  std::string method;  ///< how gain_s was obtained: "simulated (...)", "formula (seed 002 ...)", "model (...)"
  double formula_gain_s = -1;  ///< the seed's closed-form estimate, for comparison (-1: none)
  std::string detail;  ///< figures behind the finding (max, mean, sizes, k, shares)
  double measured_s = -1;  ///< traced runs: the severity measured on the trace itself (max - mean, largest wait), -1: none
  std::string chain;   ///< wait states: the chain of waits back to its origin ("rank 3 <- rank 2 <- rank 1: compute before X"), "" else
};

/** @brief A logical phase (seed 002): the stretch between two separation points in time (no message in flight,
 *  every rank between communication activities); phases with the same call sites are one logical phase. */
struct LogicalPhase {
  std::string name;             ///< "L1", "L2", ... in order of first occurrence
  std::string sites;            ///< the MPI call sites in it ("MPI_Allreduce@app+0x1a2b, ...")
  int occurrences = 0;          ///< how many stretches of the run have these call sites
  double start_s = 0;           ///< start of its first occurrence (seconds since the run's start)
  double time_s = 0;            ///< summed length of its occurrences
  double utilisation_mean = 0;  ///< compute / time, averaged over ranks
  double utilisation_min = 0;   ///< the least per-rank utilisation
  int utilisation_argmin = 0;
  std::vector<double> utilisation;  ///< per rank
};

/** @brief A diagnosis: the baseline run's figures, the problems in order of severity, phase utilisation. */
struct Diagnosis {
  /// Sorted key/value attributes: the baseline run's (platform, P, parameters, ...) plus diagnose.* settings.
  std::vector<std::pair<std::string, std::string>> attributes;
  double baseline_time_s = 0;   ///< predicted time of the program as written
  double threshold_pct = 5;     ///< problems below this gain are listed but not counted as reported problems
  std::vector<Problem> problems;       ///< by decreasing gain_s (ties: kind, then block)
  std::vector<PhaseStats> phases;      ///< utilisation per phase label (from the baseline replay)
  std::vector<BlockStats> blocks;      ///< per-block spread over ranks (from the baseline replay)
  std::vector<std::string> notes;      ///< approximations made, detectors skipped and why
  std::vector<LogicalPhase> logical_phases;  ///< from separation points in time (traced runs; empty when not computed)
};

/** @brief Format identifier and version of the diagnosis file (root attributes "format", "format_version"). */
inline constexpr const char* DIAGNOSIS_FORMAT_NAME = "mksim-diagnosis";
inline constexpr int DIAGNOSIS_FORMAT_VERSION = 1;

/**
 * @brief Writes the diagnosis atomically (temporary file, then rename). Layout: root attributes format,
 * format_version, baseline_time_s, threshold_pct and the diagnosis' attributes; groups /problems (columns:
 * rank, kind, block, phase, ranks, action, gain_s, gain_pct, method, formula_gain_s, detail), /phases (phase,
 * time_max_s, time_mean_s, utilisation_mean, utilisation_min, utilisation_argmin, compute_max_s, compute_mean_s, compute_argmax), /blocks (id, compute_max_s,
 * compute_mean_s, compute_argmax, wait_max_s, wait_mean_s, wait_argmax, late_sender_s, late_receiver_s,
 * collective_wait_s, cause_rank, executions_max, executions_mean), /notes (text); added later (absent in older
 * files, read when present): /problems columns measured_s and chain, and the group /logical_phases (name, sites,
 * occurrences, start_s, time_s, utilisation_mean, utilisation_min, utilisation_argmin, utilisation: per-rank
 * values, "u0 u1 ..." as text). Throws std::runtime_error.
 */
void write_diagnosis_hdf5(const std::string& path, const Diagnosis& diagnosis);

/** @brief Reads back what write_diagnosis_hdf5 wrote: attributes, baseline, problems, notes and logical phases
 *  (phases and blocks are for other tools: h5py, reports). Throws std::runtime_error naming the file. */
Diagnosis read_diagnosis_hdf5(const std::string& path);

}  // namespace mksim::results
