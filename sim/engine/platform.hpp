// Loading SimGrid platforms and reading the MPI-level figures mksim keeps in them.
#pragma once

#include "platforms/patterns.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>

#include <string>
#include <vector>

namespace mksim::sim {

/** @brief MPI-level figures of a machine, read from the platform's root zone properties (mksim.*). */
struct MachineParams {
  std::string name;                     ///< mksim.machine, or the file name
  double send_overhead_s = 0;           ///< mksim.send_overhead_s: CPU time to issue a send (s of seed 000)
  double recv_overhead_s = 0;           ///< mksim.recv_overhead_s: CPU time to complete a receive (r)
  double per_message_overhead_s = 0;    ///< mksim.per_message_overhead_s: interrupt-like cost (o)
  double eager_threshold_bytes = 65536; ///< mksim.eager_threshold_bytes: largest message sent eagerly
  double skew_alpha_s = 0;              ///< mksim.skew_alpha_s: calibrated skew alpha (seed 000 s.5.2)
  double eager_per_byte_s = 0;          ///< mksim.eager_per_byte_s: sender's extra time per byte of an eager message
  double rendezvous_handshake_s = 0;    ///< mksim.rendezvous_handshake_s: sender's extra time per rendezvous message
  /// mksim.pattern.<name>.*: per-pattern figures (seed 001 table 2), sorted by partner limit; none by default
  std::vector<platforms::PatternFigures> patterns;
};

/** @brief Loads a platform file (any SimGrid XML; mksim's generated meshes through a fast path).
 *  Throws std::runtime_error naming the file when it is missing or SimGrid cannot parse it. */
void load_platform(simgrid::s4u::Engine& engine, const std::string& path);

/** @brief How load_platform reads a file: AUTO uses the native mesh zone when the file carries mksim's mesh
 *  marker (mksim.topology=mesh2d, mksim.mesh.*) and SimGrid's parser otherwise; the others force one path. */
enum class LoadPath { AUTO, SIMGRID_XML, NATIVE_MESH };

/** @brief load_platform with an explicit path choice (tests compare both paths on the same file). */
void load_platform(simgrid::s4u::Engine& engine, const std::string& path, LoadPath how);

/** @brief The machine's MPI-level figures; missing properties keep their defaults. */
MachineParams read_machine_params(const simgrid::s4u::Engine& engine);

/** @brief The hosts ranks run on, in rank order (natural order of host names; routers excluded). */
std::vector<simgrid::s4u::Host*> compute_hosts(const simgrid::s4u::Engine& engine);

}  // namespace mksim::sim
