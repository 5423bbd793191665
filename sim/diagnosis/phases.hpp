// Seed 002's logical phases (separation points, utilisation per phase and rank), for simulated and traced runs
// alike: the one piece the what-if diagnosis (diagnose.hpp) and the trace diagnosis (trace_diagnose.hpp) share.
#pragma once

#include "results/diagnosis.hpp"

#include <string>
#include <vector>

namespace mksim::sim {

/** @brief One communication activity of a rank: an MPI call (site names it), or a message in flight (rank -1). */
struct CommInterval {
  int rank = -1;
  double start_s = 0, end_s = 0;
  std::string site;
};

/** @brief Seed 002's logical phases: separation points are the middles of the gaps of the union of all
 *  activities (no call running on any rank, no message in flight); the stretches between them that contain the
 *  same call sites are one logical phase (L1, L2, ... by first occurrence); utilisation = the rank's time outside
 *  MPI calls over the phase's time. Deterministic; P ranks, the run from t_begin to t_end. */
std::vector<results::LogicalPhase> logical_phases(int P, double t_begin, double t_end, const std::vector<CommInterval>& activity);

/** @brief Logical phases of a simulated run from its timeline CSV (ReplayOptions::timeline_csv: rank, start_s,
 *  end_s, kind, block): every non-compute row is a call at its block. Messages are not in the timeline: a message
 *  in flight while both ends compute does not prevent a separation point (an approximation). */
std::vector<results::LogicalPhase> logical_phases_from_timeline(const std::string& csv_path, int P, double t_end);

}  // namespace mksim::sim
