// Import of SimGrid time-independent traces (smpirun -trace-ti, SimGrid 3.32 syntax) into the event model of
// the binary tracer (trace.hpp). Format, mapping and what differs from the binary format: README.md, "SimGrid
// time-independent traces".
#pragma once

#include "skeletons/trace/trace.hpp"

#include <string>
#include <vector>

namespace mksim::trace {

/** @brief Read a time-independent trace: `index` is the file given to smpirun with
 *  --cfg=tracing/filename (one rank file per line, rank 0 first; relative paths are relative to the
 *  index file's directory). Every line is checked (rank, action, field count, numbers); any problem throws
 *  TraceError naming the file and line. Times are 0 (TI traces have none), communicators 0, and a call's site
 *  is its call point (MPI function, communicator, tag as posted; README.md), described as "MPI_Isend tag 1 comm 0".
 *  The `compute` actions (flops: explicit smpi_execute_flops, or benchmarked bursts) before a record are its
 *  compute gap (Event::cpu_gap, in flops, and Run::compute_flops is set when there are any), so that a skeleton
 *  built from these runs has `flops` compute blocks. If `compute_flops` is given it receives, per rank, their sum. */
Run read_ti_run(const std::string& index, std::vector<double>* compute_flops = nullptr);

/** @brief Size in bytes of an SMPI 3.32 predefined datatype id as written in TI traces (0 = MPI_DOUBLE,
 *  1 = MPI_INT, ...), or -1 if the id is not a known fixed-size type. */
int ti_datatype_size(int id);

}  // namespace mksim::trace
