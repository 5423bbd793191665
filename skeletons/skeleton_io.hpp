// Reading skeleton files (JSON, format v1, v2 and v3) into typed values, and binding them to P and parameters.
#pragma once

#include "skeletons/skeleton.hpp"

#include <map>
#include <string>
#include <vector>

namespace mksim::skeletons {

/** @brief Reads and fully validates a skeleton file; errors name the file and the JSON pointer. */
Skeleton load_skeleton(const std::string& path);

/** @brief Same, from text; `file` only labels error messages. */
Skeleton parse_skeleton(const std::string& text, const std::string& file = "");

/** @brief The evaluation frame for a run at P with the user's parameter values (defaults filled in).
 *  Throws SkeletonError for an unknown parameter, a missing one, or P < 1. Rank-dependent slots are 0. */
std::vector<double> bind_parameters(const Skeleton& skeleton, int P, const std::map<std::string, double>& values);

/** @brief Fills the rank slot, the `let` values and (format v3) the communicators' ranks and sizes of a frame
 *  made by bind_parameters. With communicators this lays them all out (O(P)): a loop over ranks should call
 *  layout_comms once and the bind_rank of skeletons/comms.hpp. */
void bind_rank(const Skeleton& skeleton, std::vector<double>& frame, int rank);

/** @brief Index of the rank group the frame's rank runs, or -1 when none matches. */
int select_group(const Skeleton& skeleton, const std::vector<double>& frame);

/** @brief Checks, before any simulation, that every rank in [0,P) has a program, loop counts are finite
 *  and non-negative, peers and roots lie in [0, size of their communicator) (peers may be PROC_NULL, -1, in
 *  format v3), ranks are members of the communicators they use, and (format v3) sizes and loop counts are
 *  integers (loops are visited at their first and last iteration). Throws SkeletonError naming the block,
 *  the rank and the value; communicator declarations name their JSON pointer. */
void check_for_run(const Skeleton& skeleton, const std::vector<double>& frame, int P);

/** @brief FNV-1a 64-bit hash of bytes, printed as 16 hex digits by hash_hex. */
std::uint64_t fnv1a64(const std::string& bytes);
std::string hash_hex(std::uint64_t h);

}  // namespace mksim::skeletons
