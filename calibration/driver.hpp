// Runs the microbenchmark with mpirun, one kernel at a time, and parses its line format (described at the top of
// microbench.c) once, at the edge, into typed values.
#pragma once

#include "calibration/kernels.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mksim::calibration {

/** @brief What is measured and how: the same configuration is required to resume a database. */
struct BenchConfig {
  int np = 2;                                   ///< MPI ranks (mpirun -np)
  int reps = 20;                                ///< timed repetitions per size (all kept)
  int warmup = 2;                               ///< untimed repetitions before them
  double min_rep_time_s = 1e-3;                 ///< one repetition runs enough iterations to last this long
  std::vector<std::uint64_t> message_sizes;     ///< ping-pong, patterns, collectives (bytes)
  std::vector<std::uint64_t> eager_sizes;       ///< s, r, o kernels: short (eager) messages only (bytes)
  std::vector<std::uint64_t> working_set_sizes; ///< compute kernel (bytes of its two arrays)
};

/**
 * @brief The default configuration. Full: powers of two from 1 B to `max_size_bytes` plus 1.5 x 2^k between
 * 1 KiB and 256 KiB (where protocol switches usually are), 20 repetitions after 2 warm-ups, 1 ms per repetition;
 * eager sizes are the message sizes up to `eager_max_bytes`; working sets 4 KiB..64 MiB in steps of 2 and 1.5.
 * Quick (tests, a first look): powers of 8 up to min(max, 256 KiB), 5 repetitions after 1 warm-up, 0.1 ms per
 * repetition, working sets 16 KiB, 1 MiB, 32 MiB.
 */
BenchConfig default_config(bool quick, std::uint64_t max_size_bytes, std::uint64_t eager_max_bytes, int np);

/** @brief One canonical line of the configuration (stored in the database and compared on resume). */
std::string describe(const BenchConfig& config);

/** @brief The sizes `kernel` runs over under `config` ({0} for the barrier). */
std::vector<std::uint64_t> sizes_for(const BenchConfig& config, Kernel kernel);

/** @brief The measurements of one size as the microbenchmark printed them. */
struct RawSize {
  std::uint64_t size_bytes = 0;
  std::uint64_t iterations = 0;
  std::vector<double> times_s;  ///< one per repetition, per operation (or per flop)
};

/** @brief The whole output of one microbenchmark run. */
struct MicrobenchOutput {
  Kernel kernel = Kernel::PINGPONG;
  int np = 0;
  std::string unit, hostname, mpi_library;
  std::vector<RawSize> sizes;
};

/** @brief A malformed or incomplete microbenchmark output; the message names the kernel and the line. */
struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/**
 * @brief Parses the microbenchmark's stdout for `expected` (header, meta lines, one `m` line per size, `done`).
 * @throws ParseError "kernel NAME: line N: what is wrong: 'the line'" (or "output ends before 'done'").
 */
MicrobenchOutput parse_microbench_output(Kernel expected, const std::string& text);

/** @brief How to start the microbenchmark. */
struct Launcher {
  std::string mpirun = "mpirun";
  std::string microbench;                 ///< path of mkcalib_microbench
  std::vector<std::string> mpirun_args;   ///< extra arguments placed before the program (e.g. --mca ...)
};

/** @brief The command line run for `kernel` (argv[0] = launcher.mpirun). */
std::vector<std::string> microbench_command(const Launcher& launcher, const BenchConfig& config, Kernel kernel);

/**
 * @brief Runs the microbenchmark for one kernel under mpirun (with OMPI_ALLOW_RUN_AS_ROOT set, --oversubscribe)
 * and parses its output. mpirun gets SIGTERM if this process dies, so a killed mkcalib leaves no ranks behind.
 * @throws std::runtime_error naming the kernel: mpirun missing, non-zero exit (with the end of its stderr), or a
 * ParseError.
 */
MicrobenchOutput run_microbench(const Launcher& launcher, const BenchConfig& config, Kernel kernel);

}  // namespace mksim::calibration
