// Communication phase graph (CPG) of one traced run: the five steps of seed 000 fig. 2 (match sends and
// receives, connected components of call points, send/receive lists and pairs, nearest common APT
// ancestor, asynchronous flag and pipeline depth), with the computation that overlaps each phase
// (s.4.1) and the independence of consecutive phases. Per-run numbers only: generalising them across
// runs (depth as an expression of P, SL/RL as rank predicates) is the builder's job.
#pragma once

#include "skeletons/builder/fold.hpp"
#include "skeletons/trace/trace.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief How a phase communicates: loosely synchronous (exchange, shift), pipeline (a processor
 *  receives before it sends, seed 000 fig. 2 step 3), or one collective operation. */
enum class PhaseType { SYNCHRONOUS, PIPELINE, COLLECTIVE };

/** @brief "synchronous", "pipeline", "collective". */
std::string phase_type_name(PhaseType type);

/** @brief A communication call point (an APT COMMN node): a call site of one MPI function. */
struct CallPoint {
  int id = 0;                  ///< index in PhaseGraph::points (first appearance, rank order)
  trace::Kind kind{};
  std::uint64_t site = 0;      ///< call-site hash; 0 when the trace has none (then keyed by comm, tag)
  std::uint32_t comm = 0;      ///< only part of the key when site is 0
  std::int32_t tag = trace::NO_RANK;  ///< as posted (ANY for a wildcard); only part of the key when site is 0
  std::string where;           ///< "module+0x.. <- ..." (reader's describe_site), or "tag T comm C" without site
};

/** @brief All messages of a phase from one sender to one receiver. */
struct PhasePair {
  int from = 0;
  int to = 0;
  std::uint64_t messages = 0;
  std::int64_t bytes_total = 0;
  std::int64_t bytes_min = 0;
  std::int64_t bytes_max = 0;
};

/** @brief A phase's nearest common ancestor in one rank's folded program (fold.hpp): the innermost loop
 *  that contains every node of the rank at one of the phase's call points. */
struct Anchor {
  int rank = 0;
  /** Index of the loop node at each level: path[0] in the rank's Seq, path[1] in that loop's body, ...;
   *  empty when the ancestor is the program itself (the ROUTINE node). */
  std::vector<std::uint32_t> path;
  /** Count of the loop at each level of path (same length). */
  std::vector<std::uint64_t> counts;
  /** @brief How many times the ancestor's body runs: the product of counts (1 for the program). */
  std::uint64_t iterations() const;
};

/** @brief One communication phase (a connected component of call points, or one collective). */
struct Phase {
  int id = 0;                      ///< index in PhaseGraph::phases (the order of PhaseGraph::order)
  PhaseType type = PhaseType::SYNCHRONOUS;
  std::vector<int> send_points;    ///< CallPoint ids that send (a Sendrecv is in both lists)
  std::vector<int> recv_points;    ///< CallPoint ids that receive; for a collective, its call points
  std::vector<int> senders;        ///< SL(g), ascending; for a collective, every participant
  std::vector<int> receivers;      ///< RL(g), ascending; for a collective, every participant
  std::vector<PhasePair> pairs;    ///< pairs(g) with their messages, ordered by (from, to)
  /** Ranks whose first receive in the phase completes before their first send in it (fig. 2 step 3):
   *  non-empty exactly for pipelines. */
  std::vector<int> receive_first;
  /** False when no rank both sends and receives in the phase (a one-way transfer between disjoint
   *  sets, e.g. a two-rank chain): then the order of events cannot tell a shift from a pipeline and
   *  the phase is synchronous by default (fig. 2). Always true for collectives. */
  bool type_decided = true;
  /** Longest processor chain (ranks, in order) of the pairs graph after dropping the edges into ranks
   *  that send before they receive (their first send does not wait for the data); empty for
   *  collectives and when no edge remains, or when the chain is cyclic. */
  std::vector<int> chain;
  bool cyclic = false;             ///< the remaining pairs graph has a cycle (depth is then an upper bound)
  /** D(g): edges of the longest chain for pipelines (P-1 for 0 -> 1 -> ... -> P-1); 1 for synchronous
   *  phases; 0 for collectives. */
  int depth = 0;
  /** Width: the most times one rank runs one of the phase's call points (blocks of a pipeline, steps
   *  of an exchange; a call point used k times per occurrence counts k). */
  std::uint64_t occurrences = 0;
  std::uint64_t messages = 0;      ///< point-to-point messages (collectives: calls, summed over ranks)
  std::int64_t bytes_total = 0;    ///< message bytes (collectives: the calls' bytes field, summed)
  std::int64_t bytes_min = 0;
  std::int64_t bytes_max = 0;
  trace::Kind collective{};        ///< for COLLECTIVE: the operation
  std::uint32_t comm = 0;          ///< for COLLECTIVE: its communicator
  /** Overlapped computation W (s.4.1): per window on a rank between a send of the phase and the next
   *  event of the phase if that is a receive (synchronous), or between a receive and a following send
   *  (pipeline), the compute time between them; seconds. Empty for collectives. */
  Stats overlap_s;
  std::vector<Anchor> anchors;     ///< one per participating rank, ascending rank
};

/** @brief Two phases next to each other in PhaseGraph::phases and whether they may overlap. */
struct PhaseLink {
  int from = 0;
  int to = 0;
  /** RL(from) and SL(to) do not intersect (s.4.1): the two phases overlap in time. */
  bool independent = false;
};

/** @brief The CPG of one run. */
struct PhaseGraph {
  int P = 0;
  bool sites = true;                  ///< call points are call sites (false: the trace has none)
  std::vector<CallPoint> points;      ///< every communication call point that took part in a phase
  std::vector<Phase> phases;          ///< in program order (see build_cpg)
  std::vector<PhaseLink> order;       ///< phases[i] -> phases[i+1]
  std::uint64_t unmatched = 0;        ///< point-to-point sends and receives without a partner (ignored)
};

/** @brief Knobs of the construction. */
struct CpgOptions {
  /** A wait/test call that completes requests of several call points (isend + irecv + waitall) joins
   *  those call points, as MPI_Sendrecv is one call point: they are one communication operation.
   *  Off: only matched messages connect call points (fig. 2 step 1 to the letter). */
  bool link_completions = true;
};

/** @brief Builds the CPG of `run` from its traces and their folded programs (folded[r] = fold_rank of
 *  rank r). Throws std::invalid_argument when `folded` does not belong to `run`. */
PhaseGraph build_cpg(const trace::Run& run, const std::vector<RankProgram>& folded, const CpgOptions& options = {});

/** @brief The same, folding every rank with default options first. */
PhaseGraph build_cpg(const trace::Run& run, const CpgOptions& options = {});

/** @brief Whether two sorted rank lists share a rank. */
bool intersects(const std::vector<int>& a, const std::vector<int>& b);

/** @brief A text form for `mkskel show` and tests: one block per phase, then the order. */
std::string describe(const PhaseGraph& graph);

}  // namespace mksim::skeletons::builder
