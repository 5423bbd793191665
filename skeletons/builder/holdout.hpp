// Hold-out check of a skeleton against a real trace of a configuration it was not built from: every rank's
// communication operations (kind, peer, tag, bytes, root, communicator, in order) as the skeleton expands
// them (skeletons/expand.hpp) and as the trace recorded them. Used by `mkskel compare`, the builder's
// hold-out tests and bench/corpus.py.
#pragma once

#include "skeletons/skeleton.hpp"
#include "skeletons/trace/trace.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief One communication operation in the form both sides can give.
 *
 *  Peers and roots are MPI_COMM_WORLD ranks (-2 a wildcard), as the tracer records them. Point-to-point
 *  calls carry peer, tag and bytes; collectives bytes (alltoall: per destination) and root (rooted ones);
 *  waits nothing. MPI_Sendrecv is compared as what it does: isend, irecv, wait, wait. `comm` is the
 *  communicator id in the tracer's numbering (0 = MPI_COMM_WORLD; the others in creation order) as
 *  traced_ops gives it; compare_with_trace replaces it on both sides by a code of the communicator's
 *  members (0: every world rank in order, as world and its dups; else 1 + a hash of the member list). */
struct CommOp {
  std::string kind;  ///< "send", "recv", "isend", "irecv", "wait", "waitall", "bcast", ... (trace-only kinds keep their name)
  long peer = -1, tag = -1, bytes = 0, root = -1;
  long comm = 0;
  bool operator==(const CommOp&) const = default;
};

/** @brief "isend(peer 3, tag 1, 40 B)", "bcast(40 B, root 0, comm 2)". */
std::string describe(const CommOp& op);

/** @brief The code compare_with_trace gives a communicator instance by its members (world ranks in rank order):
 *  0 when it is every world rank in order (world and its dups), else 1 + a hash of the list. */
long comm_code(const std::vector<int>& members, int P);

/** @brief The size of every communicator of every rank of a traced run that the trace shows being made
 *  (MPI_Comm_dup, MPI_Comm_split by colour, MPI_Cart_create): per rank, id -> number of members; id 0 is P. */
std::vector<std::map<long, long>> communicator_sizes(const trace::Run& run);

/** @brief A rank's communication operations as traced (`sizes`: communicator_sizes of its run, for
 *  alltoall's bytes per destination; an alltoall on a communicator of unknown size keeps its total). */
std::vector<CommOp> traced_ops(const trace::RankTrace& rank, const std::map<long, long>& sizes);

/** @brief What a rank does in sum, where a program's operations cannot match one by one (data-dependent codes,
 *  whose skeleton draws its messages from rates): point-to-point messages sent (MPI_Sendrecv counts one) and
 *  their bytes, collectives, and compute (seconds; flops apart, from TI traces and flops blocks). */
struct Volume {
  std::size_t messages_sent = 0, collectives = 0;
  double bytes_sent = 0, compute_s = 0, compute_flops = 0;
};

/** @brief The sums of a traced rank: compute is the gaps between calls (gap_after), as the builder takes them. */
Volume traced_volume(const trace::RankTrace& rank);

/** @brief The operations of `rank` when the skeleton runs at P with `params` (compute left out; its sums, with
 *  the messages', go to `volume` when given). Throws SkeletonError as expand_rank does. */
std::vector<CommOp> expanded_ops(const Skeleton& skeleton, int P, const std::map<std::string, double>& params, int rank,
                                 Volume* volume = nullptr);

/** @brief How one rank compares. */
struct RankComparison {
  int rank = 0;
  std::size_t traced = 0, expanded = 0;       ///< operations on each side
  std::optional<std::size_t> first_difference;  ///< index of the first operation that differs (or where one side ends)
  std::optional<CommOp> skeleton_op, trace_op;  ///< the operations there (absent past the end of a side)
  std::string error;                            ///< the expansion failed for this rank (SkeletonError's text)
  Volume traced_sum, skeleton_sum;              ///< the rank's sums on each side (skeleton_sum empty on error)
  bool exact() const { return error.empty() && !first_difference; }
};

/** @brief The whole run: every rank in order. */
struct HoldOutReport {
  int P = 0;
  std::vector<RankComparison> ranks;
  std::size_t exact_ranks() const;
  std::size_t traced_ops() const;
};

/** @brief How far the skeleton's sums are from the trace's over the ranks of a comparison: the mean and the worst
 *  relative difference |skeleton - trace| / trace, per rank, of each sum (a rank whose traced sum is 0 counts
 *  as 0 when the skeleton's is 0 too, else as 1). Ranks whose expansion failed are left out (`ranks` says how
 *  many were compared). */
struct VolumeErrors {
  struct Stat {
    double mean = 0, worst = 0;
    int worst_rank = -1;
  };
  std::size_t ranks = 0;
  Stat messages, bytes, collectives, compute_s, compute_flops;
};
VolumeErrors volume_errors(const HoldOutReport& report);

/** @brief Compares every rank of `run` with the skeleton expanded at run.P and `params`. */
HoldOutReport compare_with_trace(const Skeleton& skeleton, const trace::Run& run, const std::map<std::string, double>& params);

}  // namespace mksim::skeletons::builder
