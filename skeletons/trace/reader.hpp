// Reading traced runs (format v2): validating as it goes, every error names the file and byte offset.
#pragma once

#include "skeletons/trace/trace.hpp"

#include <string>
#include <vector>

namespace mksim::trace {

/** @brief What read_run accepts. */
struct ReadOptions {
  bool require_complete = false;  ///< throw (with Run::problems) unless every rank reached MPI_Finalize
};

/** @brief Read run.json and every rank file of a traced run directory; throws TraceError. */
Run read_run(const std::string& dir, const ReadOptions& options = {});

/** @brief Read one rank file; a file without footer gives status INCOMPLETE; throws TraceError. */
RankTrace read_rank_file(const std::string& path);

/** @brief Sends without a matching receive and receives without a matching send (matched by sender,
 *  receiver, communicator and tag, in order), one line each with rank, peer, tag, bytes and call site. */
std::vector<std::string> unmatched_messages(const Run& run);

/** @brief A call site of a rank as "module+0xoffset <- ..." (innermost first), or "site 0x..." if unknown. */
std::string describe_site(const RankTrace& rank, std::uint64_t site);

}  // namespace mksim::trace
