// Writes SimGrid platform XML for the machines mksim models (historic and modern), at any size.
// Plain text only: this component does not include SimGrid (sim/engine loads what it writes).
#pragma once

#include "platforms/patterns.hpp"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mksim::platforms {

/** @brief One figure of a machine and where it comes from (written beside it as an XML comment). */
struct Figure {
  double value = 0;
  std::string source;
};

/** @brief Interconnect shapes the generator knows. */
enum class Topology {
  HYPERCUBE, ///< 2^d nodes, e-cube routing (SimGrid TORUS cluster with every dimension 2)
  MESH2D,    ///< Px x Py mesh without wraparound, XY routing (routers + Dijkstra, or mksim's native zone)
  TORUS,     ///< N-d torus, dimension-order routing (SimGrid TORUS cluster)
  FAT_TREE,  ///< k-level fat tree, full bisection (SimGrid FAT_TREE cluster)
};

/** @brief Every figure a generated platform holds; the unit is in each name. */
struct MachineFigures {
  Figure node_speed_flops;           ///< host speed
  Figure link_latency_s;             ///< one interconnect hop (mesh/torus/cube link, fat-tree cable)
  Figure link_bandwidth_bytes_per_s; ///< one interconnect link, per direction
  Figure nic_latency_s;              ///< injection (and ejection) link of a node, each way; meshes only
  Figure nic_bandwidth_bytes_per_s;  ///< injection/ejection bandwidth of a node; 0 = no such limit
  Figure send_overhead_s;            ///< CPU time to issue a send (s of seed 000 s.4.1)
  Figure recv_overhead_s;            ///< CPU time to complete a receive (r)
  Figure per_message_overhead_s;     ///< per-message interrupt-like cost (o)
  Figure eager_threshold_bytes;      ///< largest message sent eagerly; larger ones use rendezvous
  Figure skew_alpha_s;               ///< skew term alpha*sqrt(P) of seed 000 s.5.2
  Figure end_to_end_latency_s;       ///< published nearest-neighbour latency the split above reproduces
  /// Per-regime figures (seed 001 table 2: rho + beta*D per regime). 0 = none, and then no prop is written, so
  /// platforms without them behave exactly as before. Both are charged to the sender at the send (sim/engine/replay.cpp).
  Figure eager_per_byte_s{0, "none"};         ///< extra time per byte of a message at or below the eager threshold (copy)
  Figure rendezvous_handshake_s{0, "none"};   ///< extra time per message above the eager threshold (RTS/CTS handshake)
};

/** @brief Optional replacements for preset figures (their source becomes "override"). */
struct FigureOverrides {
  std::optional<double> node_speed_flops;
  std::optional<double> link_latency_s;
  std::optional<double> link_bandwidth_bytes_per_s;
  std::optional<double> nic_latency_s;
  std::optional<double> nic_bandwidth_bytes_per_s;
  std::optional<double> send_overhead_s;
  std::optional<double> recv_overhead_s;
  std::optional<double> per_message_overhead_s;
  std::optional<double> eager_threshold_bytes;
  std::optional<double> skew_alpha_s;
  std::optional<double> end_to_end_latency_s;  ///< informational figure (e.g. a calibrated s + route + r)
  std::optional<double> eager_per_byte_s;
  std::optional<double> rendezvous_handshake_s;
};

/** @brief What to generate: a preset machine, its dimensions, and figure overrides. */
struct PlatformSpec {
  std::string machine;    ///< one of machine_presets()
  std::vector<long> dims; ///< sizes per dimension; their product is the node count (see README)
  FigureOverrides overrides;
  /// Meshes with more nodes than this are written in the compact marked form only (no routers/routes):
  /// mksim loads them natively; SimGrid's own tools see an empty zone.
  long mesh_full_xml_max_nodes = 4096;
  /// Source written beside an overridden figure, keyed by its MachineFigures field name ("node_speed_flops");
  /// figures not listed keep "override (PlatformSpec)". Used by mkcalib fit to say where each value comes from.
  std::map<std::string, std::string> override_sources;
  /// Extra comment lines written in the root zone after the figures (mkcalib fit: residuals, measurements).
  std::vector<std::string> notes;
  /// Extra root-zone props (id, value), written after the mksim.* figures (mkcalib fit: mksim.calib.*).
  std::vector<std::pair<std::string, std::string>> extra_props;
  /// Per-pattern figures (seed 001 table 2), written as mksim.pattern.<name>.* props with their sources; none by
  /// default, and then nothing is written (mkcalib patterns adds them).
  std::vector<PatternFigures> patterns;
};

/** @brief The preset machine names: ipsc860, paragon, t3e, fattree, now (a network of workstations). */
std::vector<std::string> machine_presets();

/** @brief The interconnect of a preset machine; throws std::invalid_argument on an unknown name. */
Topology topology_of(const std::string& machine);

/** @brief The spec of the historic machine at its bundled size (ipsc860 128, paragon 16x16, t3e 8x8x8). */
PlatformSpec default_spec(const std::string& machine);

/** @brief A spec for `nodes` nodes: near-square mesh, near-cubic torus, hypercube, balanced fat tree.
 *  Throws std::invalid_argument when the count does not fit the topology (e.g. a cube of 100 nodes). */
PlatformSpec preset_for(const std::string& machine, long nodes);

/** @brief The preset's figures with the spec's overrides applied. */
MachineFigures figures_for(const PlatformSpec& spec);

/** @brief Number of nodes (hosts) the spec describes; validates dims (std::invalid_argument). */
long node_count(const PlatformSpec& spec);

/** @brief The platform XML for the spec; validates it first (std::invalid_argument). */
std::string generate_platform_xml(const PlatformSpec& spec);

/** @brief Formats a value with an SI prefix and SimGrid unit suffix ("175MBps", "40ns", "75Mf"). */
std::string format_si(double value, const std::string& unit);

}  // namespace mksim::platforms
