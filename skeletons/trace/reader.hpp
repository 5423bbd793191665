// Reading traced runs (format v2): validating as it goes, every error names the file and byte offset.
#pragma once

#include "skeletons/trace/trace.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mksim::trace {

/** @brief What read_run accepts. */
struct ReadOptions {
  bool require_complete = false;  ///< throw (with Run::problems) unless every rank reached MPI_Finalize
  /// call sites keyed by the source lines of their frames where the binary has a line table (source_sites.hpp),
  /// so that one call has one site in every run; false: the tracer's return addresses
  bool source_sites = true;
};

/** @brief Read run.json and every rank file of a traced run directory; throws TraceError. */
Run read_run(const std::string& dir, const ReadOptions& options = {});

/** @brief Read one rank file; a file without footer gives status INCOMPLETE; throws TraceError. */
RankTrace read_rank_file(const std::string& path);

/** @brief One side of a point-to-point message as a rank's trace recorded it. */
struct MessageEnd {
  int rank = 0;              ///< the rank whose trace holds it
  std::size_t call = 0;      ///< event index of the call (a send, RECV, IRECV; SENDRECV for its receive half)
  std::size_t done = 0;      ///< event index where it completed: the call itself for sends and RECV, else the COMPLETE record
  bool completed = false;    ///< receives: a completion gave the source (always true for sends)
  std::int32_t peer = NO_RANK;  ///< destination, or the receive's actual source (as posted while not completed)
  std::int32_t tag = NO_RANK;   ///< as sent, or the receive's actual tag (as posted while not completed)
  std::int64_t bytes = 0;       ///< sent, or received
  std::uint32_t comm = 0;
};

/** @brief A send and the receive that took it. */
struct MatchedMessage {
  MessageEnd send;
  MessageEnd recv;
};

/** @brief Why a send or receive has no partner. */
enum class Unpaired { NO_RECEIVE, NO_SEND, SOURCE_UNKNOWN };

/** @brief A send or receive without partner. */
struct UnpairedEnd {
  MessageEnd end;
  bool send = false;
  Unpaired why = Unpaired::NO_SEND;
};

/** @brief Every point-to-point message of a run, paired. */
struct Matching {
  /** Pairs ordered by (sender, receiver, communicator, tag), then in order. */
  std::vector<MatchedMessage> pairs;
  /** Receives whose source is not known (rank order, posting order), then sends without receive and
   *  receives without send (by sender, receiver, communicator, tag). */
  std::vector<UnpairedEnd> unpaired;
};

/** @brief Pairs sends with receives as MPI's non-overtaking rule does: by (sender, receiver, communicator,
 *  tag), in order; receives in posting order, each with the actual source and tag of its completion (RECV,
 *  or the COMPLETE record of an MPI_Irecv or of MPI_Sendrecv's receive half); MPI_PROC_NULL is no message;
 *  a receive that never completed, or whose source or tag the trace leaves a wildcard, is SOURCE_UNKNOWN. */
Matching match_messages(const Run& run);

/** @brief The unpaired sends and receives of match_messages, one line each with rank, peer, tag, bytes,
 *  communicator, call site and why. */
std::vector<std::string> unmatched_messages(const Run& run);

/** @brief A call site of a rank as "module+0xoffset <- ..." (innermost first), or "site 0x..." if unknown. */
std::string describe_site(const RankTrace& rank, std::uint64_t site);

}  // namespace mksim::trace
