// The microbenchmark kernels by name, the groups the command line accepts, and what each one is fitted with.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mksim::calibration {

/** @brief One kernel of mkcalib_microbench (calibration/microbench.c), in the order they are measured and stored. */
enum class Kernel {
  PINGPONG, SEND_OVERHEAD, RECV_OVERHEAD, STREAM, SHIFT1D, HALO2D, HALO3D,
  BARRIER, BCAST, REDUCE, ALLREDUCE, ALLGATHER, ALLTOALL, GATHER, SCATTER, COMPUTE
};

/** @brief Which size list a kernel runs over. */
enum class SizeList { MESSAGE, EAGER, NONE, WORKING_SET };

/** @brief How a kernel's medians are fitted: rho + beta*D in two regimes, one line, or not at all. */
enum class FitKind { TWO_REGIMES, LINE, NONE };

/** @brief Every kernel, in canonical order. */
const std::vector<Kernel>& all_kernels();

/** @brief The name used on the command line, by the microbenchmark and in the database. */
const char* kernel_name(Kernel kernel);

/** @brief The kernel called `name`, if any. */
std::optional<Kernel> kernel_from_name(std::string_view name);

SizeList size_list_of(Kernel kernel);
FitKind fit_kind_of(Kernel kernel);

/**
 * @brief A comma-separated list of kernel names and groups (`all`, `p2p` = pingpong + overheads, `overheads` =
 * send_overhead, recv_overhead, stream; `patterns` = shift1d, halo2d, halo3d; `collectives`; `compute`), deduplicated and
 * in canonical order.
 * @throws std::invalid_argument naming the unknown item and listing the valid ones.
 */
std::vector<Kernel> parse_kernel_list(const std::string& list);

}  // namespace mksim::calibration
