// Call sites keyed by source line: the same MPI call in two runs of one binary can have two return addresses. The
// compiler duplicates code on a loop-invariant condition (particles.c's `if (Px > 1)`: the step loop is compiled twice,
// and a call after it is reached from one copy at P = 2 and from the other at P >= 4), and a site made of return
// addresses then differs between the runs although the source is one line. The builder pairs calls across runs by
// site, so such a program has no call that every run shares. Resolved through the binary's DWARF line table and
// inline scopes (elfutils' libdw, seen by this file only), each return address becomes file:line:column of the call,
// followed by the call line of every function inlined around it; frames without line information keep their
// (module, offset).
#pragma once

#include "skeletons/trace/trace.hpp"

#include <cstddef>

namespace mksim::trace {

/** @brief What key_sites_by_source did to one run. */
struct SourceSiteStats {
  std::size_t sites = 0;     ///< call sites of all ranks (before)
  std::size_t resolved = 0;  ///< those with at least one frame resolved to a source line
  std::size_t merged = 0;    ///< address sites that became a site another address site of their rank also became
};

/** @brief Re-keys every call site of `run` (RankTrace::sites and Event::site) by the source lines of its frames.
 *  Modules are the paths the tracer recorded; a relative one whose file name is the traced executable's is
 *  run.executable. A module that no longer exists, has no line table, or was modified after the trace file was
 *  written (its lines would be another program's) keeps its frames' addresses. Address sites whose frames resolve
 *  to the same lines become one site, also within a rank (copies of a loop the compiler made for each value of a
 *  condition on rank run in one program; two calls that one macro expands to on one line become one site, as
 *  the calls of a loop body are); a site none of whose frames resolve keeps its hash. Deterministic;
 *  thread-safe. */
SourceSiteStats key_sites_by_source(Run& run);

}  // namespace mksim::trace
