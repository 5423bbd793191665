// Whether a skeleton's messages and collectives pair up at a given P, without simulating time: every rank's
// expanded program (expand.hpp) runs under MPI's matching rules (per sender, communicator and tag in order;
// wildcards take the first message there), every send buffered as an eager one, every collective a meeting of
// its communicator's members. What stops the run is what the replay would report at that P: ranks waiting for a
// message nobody sends or for members that never reach their collective, messages nobody receives, a message
// larger than its receive. `mkskel build` runs it at the traced configurations, so that a skeleton its builder
// got wrong says so before anyone replays it; `mksim check --P` runs it at any P.
#pragma once

#include "skeletons/skeleton.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mksim::skeletons {

/** @brief What the matching run found: empty `problems` when everything pairs. */
struct MatchingReport {
  int P = 0;
  std::size_t messages = 0, collectives = 0;  ///< point-to-point messages sent; collective calls (per rank)
  std::vector<std::string> problems;          ///< at most `max_problems`, most telling first
  std::size_t more_problems = 0;              ///< left out of `problems`
  bool skipped = false;                       ///< more than `max_ops` operations: not checked
  bool ok() const { return problems.empty() && !skipped; }
};

/** @brief Runs the check for the frame of bind_parameters at P (draws of probabilistic branches: `seed`, as the
 *  replay's). Throws SkeletonError where the expansion itself fails (a peer out of range, ...). */
MatchingReport check_matching(const Skeleton& skeleton, const std::vector<double>& frame, int P, std::uint64_t seed = 1,
                              std::size_t max_problems = 6, std::size_t max_ops = 20'000'000);

}  // namespace mksim::skeletons
