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

/** @brief Per-rank spread of one block, summarised over ranks (filled only when a replay asks for block
 *  statistics: diagnosis). Compact on purpose: a few numbers per block whatever P is. Times in seconds,
 *  per rank summed over the block's executions; "mean" is over all P ranks (a rank that never runs the
 *  block counts 0). */
struct BlockStats {
  std::string id;
  double compute_max_s = 0;   ///< compute blocks: the largest per-rank compute time
  double compute_mean_s = 0;
  int compute_argmax = 0;     ///< lowest rank with compute_max_s
  double wait_max_s = 0;      ///< MPI blocks: the largest per-rank wait (late partner) time
  double wait_mean_s = 0;
  int wait_argmax = 0;
  double wait_min_s = 0;      ///< the least wait of a rank that ran the block (collectives: the last to arrive)
  int wait_argmin = 0;
  double late_sender_s = 0;       ///< wait at receives for a message not yet sent, summed over ranks
  double late_receiver_s = 0;     ///< wait at rendezvous sends for a receive not yet posted, summed over ranks
  double collective_wait_s = 0;   ///< wait inside collectives, summed over ranks
  int cause_rank = -1;            ///< the peer ranks waited for most in this block (-1: none)
  double cause_wait_s = 0;        ///< wait attributed to cause_rank, summed over the ranks that waited for it
  double executions_max = 0;      ///< the largest per-rank execution count
  double executions_mean = 0;
  int executions_argmax = 0;
  int ranks_executing = 0;        ///< ranks that ran the block at least once
};

/** @brief Utilisation of one phase label: compute time over time in the phase, per rank (from the replay). */
struct PhaseStats {
  std::string phase;
  double time_max_s = 0;         ///< the largest per-rank time in the phase's blocks
  double time_mean_s = 0;
  double utilisation_mean = 0;   ///< sum of compute / sum of time, over ranks (0 when no time)
  double utilisation_min = 0;    ///< the least per-rank compute / time among ranks with time in the phase
  int utilisation_argmin = 0;
  double compute_max_s = 0;      ///< the largest per-rank compute time in the phase's blocks
  double compute_mean_s = 0;
  int compute_argmax = 0;
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
  std::vector<BlockStats> block_stats;  ///< in skeleton order, only when the replay was asked for them (not in HDF5)
  std::vector<PhaseStats> phase_stats;  ///< as `phases`, only when the replay was asked for block statistics
};

}  // namespace mksim::results
