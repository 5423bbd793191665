// Expanding a skeleton into the sequence of operations one rank performs at a given P, without
// simulating: what the skeleton says the program does, to compare with a real trace (hold-out checks
// of the builder) or to list for a user. Same semantics as the replay engine's interpreter (loops
// floored, branches by condition or by the rank's seeded SplitMix64 draws, compute amounts with a `dist`
// drawn from the same stream, regions run in place).
#pragma once

#include "skeletons/comms.hpp"
#include "skeletons/skeleton.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace mksim::skeletons {

/** @brief One operation of an expanded rank program. */
struct ExpandedOp {
  enum class Kind : std::uint8_t { COMPUTE, SEND, RECV, ISEND, IRECV, WAIT, WAITALL, COLLECTIVE };
  Kind kind{};
  CollectiveKind collective{};  ///< for COLLECTIVE
  int comm = 0;                 ///< p2p and collectives: 0 world, k the skeleton's communicator k (comms[k - 1])
  int peer = -1;                ///< p2p: world rank (translated from the communicator's), -2 any source, -3 PROC_NULL
  int tag = 0;                  ///< p2p: -2 for any tag
  double size_bytes = 0;        ///< p2p and collectives
  int root = -1;                ///< rooted collectives: world rank
  int comm_size = 0;            ///< p2p and collectives: size of the rank's instance of `comm`
  double amount = 0;            ///< compute: seconds or flops (the draw, for a compute with a `dist`)
  bool in_flops = false;        ///< compute
  int block = -1;               ///< Block::index of the op
};

/** @brief The ops of `rank`, given the frame of bind_parameters (the rank slot is filled here).
 *  Throws SkeletonError when no group matches, a count is negative, or more than `limit` ops result. */
std::vector<ExpandedOp> expand_rank(const Skeleton& skeleton, std::vector<double> frame, int rank,
                                    std::uint64_t seed = 1, std::size_t limit = 50'000'000);

/** @brief The same with the communicators already laid out (layout_comms for the frame's P and parameters):
 *  expanding every rank then costs O(P) once, not per rank. */
std::vector<ExpandedOp> expand_rank(const Skeleton& skeleton, std::vector<double> frame, int rank, const CommLayout& layout,
                                    std::uint64_t seed = 1, std::size_t limit = 50'000'000);

/** @brief "isend", "allreduce", "compute", ... */
std::string op_name(const ExpandedOp& op);

}  // namespace mksim::skeletons
