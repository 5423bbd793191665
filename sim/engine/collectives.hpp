// Collectives as standard point-to-point algorithms (MPICH's choices), so that replay simulates their
// messages, and so their contention, on the platform's network.
#pragma once

#include "skeletons/skeleton.hpp"

#include <cstdint>
#include <memory>

namespace mksim::sim {

/** @brief Time a collective spent blocked for partners, summed over its internal operations. */
struct CollAcc {
  double comm = 0;
  double wait = 0;
};

/** @brief The point-to-point operations collectives are built from, in a matching context of their own
 *  (`context`: 1 for world's collectives; odd, one per communicator, for the others). Ranks are world ranks. */
class P2PLayer {
 public:
  virtual ~P2PLayer() = default;
  /** @brief Posts a send of `bytes` to `dst`; returns a request handle. */
  virtual std::shared_ptr<void> isend(int me, int dst, int tag, double bytes, int block, std::uint32_t context) = 0;
  /** @brief Posts a receive from `src`; returns a request handle. */
  virtual std::shared_ptr<void> irecv(int me, int src, int tag, double bytes, int block, std::uint32_t context) = 0;
  /** @brief Blocks until the request completes. */
  virtual void wait(int me, const std::shared_ptr<void>& req, CollAcc& acc) = 0;
};

/** @brief The ranks a collective runs over: one instance of a communicator, seen from one of its members. */
struct CollGroup {
  int me = 0;                  ///< the calling rank's rank in the communicator
  int size = 0;                ///< the communicator's size
  const int* world = nullptr;  ///< communicator rank -> world rank (size entries); nullptr: the identity (world)
  std::uint32_t context = 1;   ///< matching context of the collective's messages (P2PLayer)
};

/** @brief Runs rank `me`'s part of a collective over ranks [0,P): barrier = dissemination, bcast/reduce =
 *  binomial tree, allreduce = recursive doubling (MPICH's fold for non powers of two), gather/scatter =
 *  binomial tree with growing blocks, allgather = Bruck, alltoall = pairwise exchange. `bytes` is the
 *  per-rank block size; `tag` separates consecutive collectives. */
void run_collective(P2PLayer& net, skeletons::CollectiveKind kind, int me, int P, int root, double bytes, int tag,
                    int block, CollAcc& acc);

/** @brief The same over the members of a communicator: the algorithms run on communicator ranks (root is one),
 *  their messages go between the members' world ranks in the group's matching context. */
void run_collective(P2PLayer& net, skeletons::CollectiveKind kind, const CollGroup& group, int root, double bytes,
                    int tag, int block, CollAcc& acc);

}  // namespace mksim::sim
