// The machine figures the analytic model needs, read from a SimGrid platform (routes, speeds, overheads).
#pragma once

#include "platforms/patterns.hpp"

#include <functional>
#include <string>
#include <vector>

namespace mksim::sim {

/** @brief What one message between two ranks costs on the network: tau(m) = latency_s + m / bandwidth_Bps. */
struct RouteFigures {
  double latency_s = 0;
  double bandwidth_Bps = 0;
};

/** @brief The machine as the model sees it: MPI-level overheads plus a way to ask for routes and speeds.
 *  Filled from a SimGrid platform by load_machine_model (below) or by hand in tests. */
struct MachineModel {
  std::string name;
  double send_overhead_s = 0;         ///< s: CPU time to issue a send
  double recv_overhead_s = 0;         ///< r: CPU time to complete a receive
  double per_message_overhead_s = 0;  ///< o: per-message (interrupt) overhead, paid by the receiver
  double skew_alpha_s = 0;            ///< alpha: synchronous phases pay alpha * sqrt(P) (seed 000 s.5.2)
  double eager_threshold_bytes = 65536;
  /// Per-regime figures (seed 001 table 2), charged to the sender at each user send of m bytes: c_e*m when
  /// m <= eager_threshold_bytes, h above it. 0 (the default) leaves every formula as without them.
  double eager_per_byte_s = 0;        ///< c_e
  double rendezvous_handshake_s = 0;  ///< h
  /// Per-pattern figures (seed 001 table 2): a synchronous phase whose ranks have at most a pattern's partners
  /// costs rho + beta*D per message (sim/engine/phase_patterns.hpp); none (the default) leaves formulas unchanged.
  std::vector<platforms::PatternFigures> patterns;
  int hosts = 0;  ///< the platform's compute hosts: the largest P the rank-to-host maps hold (0: unknown)
  std::function<double(int rank)> speed_flops;               ///< flop/s of the host rank runs on
  std::function<RouteFigures(int src, int dst)> route;       ///< network figures between two ranks' hosts
};

/** @brief Loads the platform in this process's SimGrid engine (one per process: call once, and not in a
 *  process that replays) and answers the model's questions about routes and host speeds for P ranks.
 *  Throws std::runtime_error naming the file when it cannot be loaded or has fewer than P hosts. */
MachineModel load_machine_model(const std::string& platform_path, int P);

/** @brief The platform's skew alpha (root zone property mksim.skew_alpha_s, 0 when absent), read from the file's
 *  head without SimGrid: a process may ask before it replays in a child (`mksim model --cross-check`). */
double platform_skew_alpha(const std::string& platform_path);

}  // namespace mksim::sim
