// Import of OTF2 archives (as Score-P writes them, read with libotf2) into the event model of the binary
// tracer (trace.hpp). Mapping, call sites, what is ignored or rejected: README.md, "OTF2 import".
#pragma once

#include "skeletons/trace/trace.hpp"

#include <string>

namespace mksim::trace {

/** @brief Read an OTF2 archive given by its anchor file (Score-P's `traces.otf2`): one RankTrace per MPI
 *  rank (the MPI location of each process, rank = its index in the archive's MPI locations group), events
 *  shaped as the binary tracer's (README.md, "Fields by kind"), times in seconds since the end of the
 *  rank's MPI_Init, call sites from the enclosing regions or calling contexts. A rank without
 *  MPI_Finalize is INCOMPLETE and listed in Run::problems. A missing or corrupt archive, an unsupported
 *  record or an inconsistent one throws TraceError naming the file (the event file of the location for
 *  event problems, with the location, rank and event position) and the OTF2 error. */
Run read_otf2_run(const std::string& anchor_file);

}  // namespace mksim::trace
