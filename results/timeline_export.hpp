// Export of a `mksim predict --timeline` CSV for external trace viewers: a Paje trace file (the text format read
// by PajeNG's pj_dump and ViTE), one container per rank, one state per operation.
#pragma once

#include <cstddef>
#include <string>

#include "results/report_data.hpp"

namespace mksim::results {

/** @brief What a Paje export holds. */
struct PajeExport {
  std::string text;          ///< the whole trace file
  std::size_t containers = 0;  ///< ranks (plus the program's root container)
  std::size_t states = 0;      ///< pushed (= popped) states: one per operation
  std::size_t clamped = 0;     ///< operations cut short because they overlapped the next-outer one of their rank
};

/**
 * @brief The Paje trace of `timeline` (every op; read it with max_ops = SIZE_MAX): event definitions, container
 * type "Program" > "Rank", state type "Operation" with one entity value per operation kind (compute, send, recv,
 * wait and the collectives, coloured by class), one container per rank created at time 0, PajePushState at each
 * operation's start and PajePopState at its end, containers destroyed at the last end. Events are in time order
 * (within a rank, ops nest: an op overlapping the previous one without lying inside it is cut at that op's end and
 * counted in `clamped`). The timeline CSV has no message peers, so there are no links.
 */
PajeExport paje_trace(const Timeline& timeline, const std::string& name);

/** @brief Writes paje_trace(timeline, name) to `path` atomically (temporary file beside it, fsync, rename).
 *  @throws std::runtime_error naming `path`. */
PajeExport write_paje(const std::string& path, const Timeline& timeline, const std::string& name);

}  // namespace mksim::results
