// The outcome of one prediction as plain values; the HDF5 writer and the reports read only this.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mksim::results {

/** @brief Where one rank's simulated time went. All times in seconds of simulated time. */
struct RankTimes {
  double finish_s = 0;   ///< simulated time at which the rank finished its program
  double compute_s = 0;  ///< time in compute blocks
  double comm_s = 0;     ///< time in MPI calls moving data or paying overheads
  double wait_s = 0;     ///< time blocked in MPI calls waiting for a partner (late sender / receiver)
  std::uint64_t messages_sent = 0;  ///< point-to-point messages sent, collectives' internal ones included
  std::uint64_t bytes_sent = 0;
};

/** @brief Totals of one skeleton block over all ranks and all of its executions. */
struct BlockTotals {
  std::string id;     ///< the block's id in the skeleton (explicit, or its JSON pointer)
  std::string op;     ///< compute, send, recv, allreduce, ...
  std::string phase;  ///< phase label (skeleton "phase" field, inherited), "" when none
  std::uint64_t executions = 0;  ///< times the block ran, summed over ranks
  double time_s = 0;             ///< time spent in the block, summed over ranks
  double bytes = 0;              ///< bytes the block sent, summed over ranks
};

/** @brief Compute / communication / wait split of one phase label, summed over ranks. */
struct PhaseTotals {
  std::string phase;
  double compute_s = 0;
  double comm_s = 0;
  double wait_s = 0;
  double critical_rank_s = 0;  ///< time the critical rank (the last to finish) spent in this phase: these add up to its finish time
  double end_s = 0;            ///< when the last rank left the phase's last block (simulated time)
};

/** @brief One simulated run: its inputs (as attributes) and its per-rank, per-block and per-phase figures. */
struct RunResult {
  /// Sorted key/value attributes: platform, P, parameters (param.N ...), skeleton hash, SimGrid
  /// configuration (simgrid.network/model ...), tool version. Deterministic: no wall-clock values.
  std::vector<std::pair<std::string, std::string>> attributes;
  double predicted_time_s = 0;  ///< max over ranks of finish_s
  int critical_rank = 0;        ///< lowest rank whose finish_s equals predicted_time_s
  std::uint64_t total_messages = 0;
  std::vector<RankTimes> ranks;      ///< index = rank
  std::vector<BlockTotals> blocks;   ///< in skeleton order
  std::vector<PhaseTotals> phases;   ///< sorted by phase label
};

}  // namespace mksim::results
