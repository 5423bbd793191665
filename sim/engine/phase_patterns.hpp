// The communication pattern of each phase of a skeleton at P, for the per-pattern figures of seed 001 s.5
// (table 2: rho + beta*D per message, computed "for each specific communication pattern used in the
// application"). The phase graph at P decides it (MK's CPG steps on every rank's walk, seed 000 fig. 2: per phase
// label, whom each rank sends to and receives from, and whether some rank receives before it sends): a loosely
// synchronous point-to-point phase takes the pattern of the most distinct partners one rank has in it, 1 or 2
// a 1-d shift, 3 or 4 a 2-d halo, 5 or 6 a 3-d halo. So a 2 x 2 periodic grid, where a rank's north and south
// neighbours are one rank (as are west and east), is a 1-d pattern, and larger grids are 2-d. Within a 2-d or
// 3-d phase, a send whose partner the rank also reaches from another send of the phase with another peer (the
// two directions of a grid dimension of 2 ranks: north and south on a 4 x 2 grid) is such a pair exchange and
// takes the 1-d figures, as the whole 2 x 2 grid does. Pipelines, collectives, phases with wildcard receives or
// more partners keep the platform's point-to-point costs.
#pragma once

#include "platforms/patterns.hpp"
#include "skeletons/skeleton.hpp"

#include <string>
#include <vector>

namespace mksim::sim {

/** @brief What the phase graph at P says about one phase label. */
struct PhasePattern {
  std::string label;    ///< the blocks' phase label ("" for blocks without one)
  int partners = 0;     ///< the most distinct partners of one rank in the phase (itself excluded)
  std::string kind;     ///< "1d", "2d", "3d" (by partners), or "pipeline", "collective", "wildcard", "self", "none"
  int pattern = -1;     ///< index of `kind` in the machine's patterns; -1: the platform's point-to-point costs
  int send_blocks = 0;  ///< send blocks of the phase that ran at P
  int paired_blocks = 0;  ///< of them, those whose partner the rank also reaches from another send (1-d figures)
  /** @brief For results and notes: "2d (4 partners)", "2d (3 partners; 2 of 4 send blocks pair with another:
   *  1d)", "1d (2 partners): the platform has no 1d figures", "pipeline: the platform's point-to-point costs". */
  std::string describe() const;
};

/** @brief The phases at P (label order) and the machine pattern each block's messages are charged (-1: none). */
struct PatternMap {
  std::vector<PhasePattern> phases;
  std::vector<int> block_pattern;  ///< by Block::index
};

/** @brief Walks every rank of the skeleton at P once (loops entered once, or at up to 64 of their iterations when
 *  a peer depends on the loop variable; branches by condition, both sides of a probability) and classifies each
 *  phase label and send block. `base_frame` is bind_parameters' frame; `patterns` the machine's figures. */
PatternMap phase_patterns(const skeletons::Skeleton& skeleton, const std::vector<double>& base_frame, int P,
                          const std::vector<platforms::PatternFigures>& patterns);

/** @brief The time a message of `bytes` of pattern `p` adds on its sender beyond the s (before it) and the r + o
 *  (at its receiver) the platform charges anyway: rho + beta*D - s - r - o (>= 0 by read_machine_params' check).
 *  Replay charges it after the data leave, so the transfer runs under it (sim/engine/replay.cpp, post_send). */
double pattern_extra_s(const platforms::PatternFigures& p, double bytes, double s, double r, double o);

}  // namespace mksim::sim
