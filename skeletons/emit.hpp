// A runnable MPI C program from a skeleton (`mkskel emit`): a proxy application that does what the skeleton
// says (loops, branches with the skeleton's seeded draws, peers, sizes, tags, requests, collectives,
// communicators, compute as a calibrated spin, or as SMPI's own charge when compiled with smpicc), taking the
// skeleton's parameters on its command line. Same semantics as expand.cpp: every expression is compiled to C
// from its postfix code, instruction by instruction, with the operators and functions of expr.cpp.
#pragma once

#include "skeletons/skeleton.hpp"

#include <string>

namespace mksim::skeletons {

/** @brief The C source (C11, MPI) of a program that runs `skeleton`. Throws SkeletonError naming the file and
 *  the place (a block's id or a declaration's JSON pointer) for a feature the program cannot represent
 *  exactly (a `create`/`graph` communicator whose members depend on other communicators' ranks or sizes). */
std::string emit_c(const Skeleton& skeleton);

}  // namespace mksim::skeletons
