// The communicators of a skeleton (format v3 `comms`) laid out at one P: which world ranks belong to which
// instance of each communicator (a split makes one per colour), in which rank order. Computed once per run
// from every rank's frame, as MPI computes them from every rank's arguments; replay, the model, the expansion
// and the checks read it.
#pragma once

#include "skeletons/skeleton.hpp"

#include <vector>

namespace mksim::skeletons {

/** @brief The communicators of a skeleton at one P. Communicator 0 is world; k is Skeleton::comms[k - 1]. */
struct CommLayout {
  /** @brief One declared communicator: its instances (disjoint sets of world ranks). */
  struct Comm {
    std::vector<std::vector<int>> groups;  ///< per instance: its members' world ranks, in communicator rank order
    std::vector<int> group_of;             ///< world rank -> its instance, -1 when not a member
    std::vector<int> rank_of;              ///< world rank -> its rank in its instance, -1 when not a member
    std::vector<std::vector<int>> dims;    ///< Cartesian communicators: per instance, the grid (row-major)
  };
  std::vector<Comm> comms;

  /** @brief The members (world ranks, in rank order) of the instance of `comm` that `world_rank` belongs to;
   *  empty when it is not a member. */
  const std::vector<int>& members(int comm, int world_rank) const;
  /** @brief The rank of `world_rank` in its instance of `comm`, -1 when not a member. */
  int rank_in(int comm, int world_rank) const { return comms[static_cast<std::size_t>(comm)].rank_of[static_cast<std::size_t>(world_rank)]; }
  /** @brief The size of `world_rank`'s instance of `comm`, 0 when not a member. */
  int size_of(int comm, int world_rank) const { return static_cast<int>(members(comm, world_rank).size()); }
  /** @brief Every instance of `comm`, as (first member's world rank, size), for reports. */
  bool empty() const { return comms.empty(); }
};

/** @brief Lays out every declared communicator at P for the frame of bind_parameters (world only, at no cost,
 *  when the skeleton declares none). Throws SkeletonError naming the file, the declaration's JSON pointer,
 *  P and the rank when an expression is not an integer, dims do not fit the parent, members repeat, ... */
CommLayout layout_comms(const Skeleton& skeleton, const std::vector<double>& base_frame, int P);

/** @brief Fills a frame's rank slot, `let` values and communicator ranks and sizes (NAME.rank, NAME.size)
 *  for `rank` with a layout made by layout_comms for the same P and parameters. */
void bind_rank(const Skeleton& skeleton, std::vector<double>& frame, int rank, const CommLayout& layout);

}  // namespace mksim::skeletons
