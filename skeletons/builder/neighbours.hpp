// Neighbour lists (issue 23): stencil codes (HPCG, LULESH) keep the list of the grid neighbours that exist
// (fewer on the faces, edges and corners of a non-periodic grid), in a fixed order of offsets, and loop over
// it: `for q < nnb: MPI_Irecv(nb[q])`. Rank r's q-th call at that call site then talks to a different offset
// depending on which neighbours r has, so alignment by occurrence pairs unrelated messages. Here, after
// folding, every call of such a list gets a call site of its own per offset (its site mixed with the offset),
// and the waits that complete its requests in order follow it: the builder then aligns the full stencil,
// guards each offset's calls with "the neighbour at this offset exists" and writes the neighbour as peer.
// Method and limits: skeletons/builder/README.md, "Neighbour lists".
#pragma once

#include "skeletons/builder/fold.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief The offset a tagged call talks to: on the grid of MPI_Dims_create(P, ndims) (row-major, the last
 *  dimension fastest, not periodic), the neighbour at `off`. */
struct NeighbourTag {
  int ndims = 3;
  std::array<int, 3> off{0, 0, 0};
  std::uint64_t base_site = 0;  ///< the call site as traced
  int order = 0;                ///< the offset's place in the list's order
};

/** @brief What `tag_neighbour_lists` found. */
struct NeighbourLists {
  std::map<std::uint64_t, NeighbourTag> by_site;  ///< tagged call site -> its offset
  std::vector<std::string> notes;                 ///< one line per list found (for the build's warnings)
};

/** @brief Finds the neighbour lists of the folded programs (`folded[i]` the ranks of the run at `P[i]`) and
 *  tags their calls in place (call sites, and the `waits_on` of the MPI_Wait calls that complete their
 *  requests in order; a folded loop of such waits is unrolled). A call site is a list when, in every rank of
 *  every run, its consecutive calls (compute between them aside) talk to distinct neighbours on the grid of
 *  MPI_Dims_create(P, 3) (else 2), at least one rank makes two of them, and all ranks' orders of offsets are
 *  one order: rank order (lexicographic offsets), or faces, then edges, then corners (LULESH), or the one
 *  order the ranks' sequences give. Anything else is left as it was. */
NeighbourLists tag_neighbour_lists(const std::vector<int>& P, std::vector<std::vector<RankProgram>>& folded);

/** @brief The world rank of the neighbour of `rank` at the tag's offset, -1 when it does not exist. */
int neighbour_rank(const NeighbourTag& t, int P, int rank);
/** @brief The condition "the neighbour at the offset exists" in the skeleton's expression syntax. */
std::string neighbour_condition(const NeighbourTag& t);
/** @brief The neighbour's rank as an expression (cart_rank of the shifted coordinates). */
std::string neighbour_peer(const NeighbourTag& t);

}  // namespace mksim::skeletons::builder
