// Platform XML generator: preset machines (figures with their sources) and their topologies at any size.
#include "platforms/generator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <stdexcept>

namespace mksim::platforms {
namespace {

constexpr long MAX_NODES            = 1L << 24; // sanity bound on generated sizes
// Down ports per fat-tree switch level. A level may stand for a director-class switch (InfiniBand directors
// have 648-800 ports), so few levels suffice; SimGrid's FAT_TREE build time grows superlinearly with the
// number of switches (measured at 65,536 hosts: 3 levels of 32-64 ports 19 s, 2 levels of 256 ports 4.4 s).
constexpr long FAT_TREE_MAX_DOWN    = 256;
constexpr const char* HOST_PREFIX   = "node-";

/** @brief A preset: its name, title, topology, bundled size and figures. */
struct Preset {
  std::string name;
  std::string title;
  Topology topology;
  std::vector<long> default_dims;
  MachineFigures figures;
  /// FAT_TREE only: 0 = full bisection; k > 0 = switched Ethernet, one or two tiers: edge switches of dims[0]
  /// hosts, each joined to one core switch by k parallel links of the link bandwidth (oversubscription dims[0]:k)
  long uplinks = 0;
  long edge_ports = 0;  ///< uplinks > 0: hosts per edge switch at most
};

Figure fig(double value, std::string source) { return Figure{value, std::move(source)}; }

// Intel iPSC/860: hypercube, DCM circuit-switched channels, i860XR nodes.
Preset ipsc860_preset()
{
  MachineFigures f;
  f.end_to_end_latency_s = fig(75e-6, "published iPSC/860 short-message (<= 100 B) latency, Dunigan, ORNL/TM-11790 (1991)");
  f.node_speed_flops = fig(60e6, "i860XR at 40 MHz, peak 64-bit (80 MFLOPS 32-bit); Intel iPSC/860 data; calibrate sustained speed with mkcalib");
  f.link_latency_s = fig(10e-6, "assumed per-hop cost of the circuit-switched Direct-Connect Module; not in the seeds, calibrate");
  f.link_bandwidth_bytes_per_s = fig(2.8e6, "DCM channel bandwidth, 2.8 MB/s (published; DESIGN.md machine table)");
  f.nic_latency_s = fig(0, "none: a SimGrid TORUS cluster has no per-node latency; software latency is in s and r");
  f.nic_bandwidth_bytes_per_s = fig(0, "no per-node limit beyond the channel bandwidth");
  double sr = (f.end_to_end_latency_s.value - f.link_latency_s.value) / 2;
  f.send_overhead_s = fig(sr, "half of (75 us published latency - 1 hop), so a neighbour ping-pong gives 75 us");
  f.recv_overhead_s = fig(sr, "half of (75 us published latency - 1 hop), as send_overhead_s");
  f.per_message_overhead_s = fig(0, "not separately measured; calibrate");
  f.eager_threshold_bytes = fig(100, "protocol switch at 100 B: long messages start at ~136 us (Dunigan 1991)");
  f.skew_alpha_s = fig(0, "not measured for this machine (seed 000 gives alpha only for the Paragon)");
  return {"ipsc860", "Intel iPSC/860", Topology::HYPERCUBE, {2, 2, 2, 2, 2, 2, 2}, f};
}

// Intel Paragon XP/S: 2D mesh, wormhole routers, message coprocessor on each node.
Preset paragon_preset()
{
  MachineFigures f;
  f.end_to_end_latency_s = fig(120e-6, "seed 000 s.5.2: NASA Ames Paragon (NX on OSF/1), 120 us latency");
  f.node_speed_flops = fig(75e6, "i860XP at 50 MHz, peak 64-bit 75 MFLOPS (Intel Paragon XP/S data); calibrate with mkcalib");
  f.link_latency_s = fig(40e-9, "assumed per-hop wormhole router latency (tens of ns); keeps distance in the model");
  f.link_bandwidth_bytes_per_s = fig(175e6, "raw mesh link bandwidth, 175 MB/s per direction (published Paragon figure)");
  f.send_overhead_s = fig(25e-6, "assumed split of the 120 us: CPU part of a send (seed 000 gives only the total)");
  f.recv_overhead_s = fig(25e-6, "assumed split of the 120 us: CPU part of a receive");
  double nic = (f.end_to_end_latency_s.value - f.send_overhead_s.value - f.recv_overhead_s.value -
                f.link_latency_s.value) / 2;
  f.nic_latency_s = fig(nic, "message coprocessor part: (120 us - s - r - 1 hop) / 2 each way, so a neighbour ping-pong gives 120 us");
  f.nic_bandwidth_bytes_per_s = fig(30e6, "seed 000 s.5.2: 30 MB/s achieved bandwidth, on injection and ejection");
  f.per_message_overhead_s = fig(0, "not separately measured; calibrate");
  f.eager_threshold_bytes = fig(8192, "assumed NX protocol switch; not given in the seeds");
  f.skew_alpha_s = fig(30e-6, "seed 000 s.5.2: phase time tau(m) + alpha*sqrt(P), alpha = 30 us");
  return {"paragon", "Intel Paragon XP/S", Topology::MESH2D, {16, 16}, f};
}

// Cray T3E-900: 3D torus, Alpha 21164 nodes.
Preset t3e_preset()
{
  MachineFigures f;
  f.end_to_end_latency_s = fig(35.6e-6, "seed 001 table 2: T3E 1-d short-message rho = 35.6 us");
  f.node_speed_flops = fig(900e6, "T3E-900: Alpha 21164 at 450 MHz, 2 flops/cycle peak; calibrate with mkcalib");
  f.link_latency_s = fig(20e-9, "assumed per-hop router latency (tens of ns); keeps distance in the model");
  f.link_bandwidth_bytes_per_s = fig(80e6, "seed 001 table 2: 1/beta, beta = 12.5e-3 us/byte (1-d long), the MPI rate of one message; the raw ~600 MB/s link rate is not used (see nic bandwidth)");
  f.nic_latency_s = fig(0, "none: a SimGrid TORUS cluster has no per-node latency; software latency is in s and r");
  f.nic_bandwidth_bytes_per_s = fig(0, "no limiter: SimGrid's TORUS puts a cluster limiter on every node a route crosses, and seed 001's 2-d beta (4 neighbours) is close to its 1-d beta, so sends to different neighbours do not share a node limit");
  double sr = (f.end_to_end_latency_s.value - f.link_latency_s.value) / 2;
  f.send_overhead_s = fig(sr, "half of (rho 35.6 us - 1 hop), so a neighbour ping-pong gives seed 001's rho");
  f.recv_overhead_s = fig(sr, "half of (rho 35.6 us - 1 hop), as send_overhead_s");
  f.per_message_overhead_s = fig(0, "not separately measured; calibrate");
  f.eager_threshold_bytes = fig(4747, "seed 001 table 2: where short (35.6 + 0.020 D) and long (71.2 + 0.0125 D) lines cross");
  f.skew_alpha_s = fig(0, "not measured for this machine (seed 000 gives alpha only for the Paragon)");
  return {"t3e", "Cray T3E-900", Topology::TORUS, {8, 8, 8}, f};
}

// A 2020s cluster: InfiniBand-class fat tree, ~1 TFLOPS nodes.
Preset fattree_preset()
{
  MachineFigures f;
  f.end_to_end_latency_s = fig(1.5e-6, "typical 2020s MPI latency over InfiniBand EDR/HDR, 1-2 us");
  f.node_speed_flops = fig(1e12, "typical 2020s CPU node, ~1 TFLOPS 64-bit peak; calibrate with mkcalib");
  f.link_latency_s = fig(100e-9, "typical switch hop plus cable, ~100 ns (InfiniBand EDR/HDR switch data)");
  f.link_bandwidth_bytes_per_s = fig(12.5e9, "100 Gb/s links (InfiniBand EDR), per direction");
  f.nic_latency_s = fig(0, "none: a SimGrid FAT_TREE cluster has no per-node latency; software latency is in s and r");
  f.nic_bandwidth_bytes_per_s = fig(0, "the host cable is the NIC: no separate limit");
  double sr = (f.end_to_end_latency_s.value - 2 * f.link_latency_s.value) / 2;
  f.send_overhead_s = fig(sr, "half of (1.5 us - 2 cables through the leaf switch), so a same-leaf ping-pong gives 1.5 us");
  f.recv_overhead_s = fig(sr, "as send_overhead_s");
  f.per_message_overhead_s = fig(0, "not separately measured; calibrate");
  f.eager_threshold_bytes = fig(16384, "typical MPI/UCX rendezvous threshold over InfiniBand, assumed");
  f.skew_alpha_s = fig(0, "not measured; calibrate");
  return {"fattree", "2020s fat-tree cluster", Topology::FAT_TREE, {32, 32}, f};
}

// A network of workstations (IP3T's setting): desktop nodes on switched Gigabit Ethernet, MPI over TCP. One
// switch up to 48 hosts; beyond, two tiers: 48-port edge switches, each with 10 aggregated 1 Gb/s uplinks to one
// core switch.
Preset now_preset()
{
  MachineFigures f;
  f.end_to_end_latency_s = fig(50e-6, "assumed typical MPI ping-pong latency over Gigabit Ethernet with TCP (Open MPI tcp BTL), tens of us; measure with mkcalib");
  f.node_speed_flops = fig(10e9, "assumed desktop workstation core, ~10 GFLOPS 64-bit sustained on dense kernels; calibrate with mkcalib");
  f.link_latency_s = fig(2e-6, "assumed Gigabit switch port-to-port plus cable latency, a few us per hop");
  f.link_bandwidth_bytes_per_s = fig(1e9 / 8 * 1448.0 / 1538.0, "1000BASE-T (IEEE 802.3ab) 1 Gb/s per direction, TCP payload share of a 1500 B frame: 1448 of 1538 bytes on the wire (timestamps on)");
  f.nic_latency_s = fig(0, "none: a SimGrid FAT_TREE cluster has no per-node latency; software latency is in s and r");
  f.nic_bandwidth_bytes_per_s = fig(0, "the host cable is the NIC: no separate limit");
  const double sr = (f.end_to_end_latency_s.value - 2 * f.link_latency_s.value) / 2;
  f.send_overhead_s = fig(sr, "half of (50 us - 2 cables through the edge switch), so a same-switch ping-pong gives 50 us");
  f.recv_overhead_s = fig(sr, "as send_overhead_s");
  f.per_message_overhead_s = fig(0, "not separately measured; calibrate");
  f.eager_threshold_bytes = fig(65536, "Open MPI 4.1 tcp BTL default btl_tcp_eager_limit = 65536 B (ompi_info --param btl tcp --level 9)");
  f.skew_alpha_s = fig(0, "not measured; calibrate (nondedicated machines: see --load)");
  Preset p{"now", "network of workstations (switched Gigabit Ethernet)", Topology::FAT_TREE, {48, 4}, f};
  p.uplinks = 10;    // assumed: ten 1 Gb/s uplinks aggregated (or one 10 Gb/s uplink) per edge switch
  p.edge_ports = 48; // assumed: 48-port edge switches
  return p;
}

const std::vector<Preset>& presets()
{
  static const std::vector<Preset> all = {ipsc860_preset(), paragon_preset(), t3e_preset(), fattree_preset(), now_preset()};
  return all;
}

const Preset& find_preset(const std::string& machine)
{
  for (const auto& p : presets())
    if (p.name == machine)
      return p;
  std::string names;
  for (const auto& p : presets())
    names += (names.empty() ? "" : ", ") + p.name;
  throw std::invalid_argument("unknown machine '" + machine + "' (known: " + names + ")");
}

void apply(Figure& f, const std::optional<double>& v, const PlatformSpec& spec, const char* field)
{
  if (v) {
    f.value  = *v;
    const auto it = spec.override_sources.find(field);
    f.source = it != spec.override_sources.end() ? it->second : "override (PlatformSpec)";
  }
}

// XML comments may not contain "--".
std::string comment_safe(std::string s)
{
  for (std::size_t i = s.find("--"); i != std::string::npos; i = s.find("--", i))
    s.replace(i, 2, "- -");
  return s;
}

std::string attr_safe(const std::string& s)
{
  std::string o;
  for (char c : s) {
    if (c == '&') o += "&amp;";
    else if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

std::string num(double v)
{
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string join(const std::vector<long>& v, const char* sep)
{
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

// Factorisations of n into `parts` factors (each <= max_factor), most balanced first (minimal max factor).
bool balanced_factors(long n, int parts, long max_factor, std::vector<long>& out)
{
  std::vector<long> best;
  std::vector<long> cur;
  std::function<void(long, int, long)> rec = [&](long rest, int left, long min_f) {
    if (left == 1) {
      if (rest >= min_f && rest <= max_factor) {
        cur.push_back(rest);
        // most balanced: smallest largest factor, then largest smallest factor
        if (best.empty() || cur.back() < best.back() || (cur.back() == best.back() && cur.front() > best.front()))
          best = cur;
        cur.pop_back();
      }
      return;
    }
    for (long f = min_f; f * f <= rest && f <= max_factor; ++f) {
      if (rest % f != 0)
        continue;
      cur.push_back(f);
      rec(rest / f, left - 1, f);
      cur.pop_back();
    }
  };
  rec(n, parts, 1);
  if (best.empty())
    return false;
  out = best; // ascending
  return true;
}

void check_nodes(const std::string& machine, long nodes)
{
  if (nodes < 1 || nodes > MAX_NODES)
    throw std::invalid_argument(machine + ": node count " + std::to_string(nodes) + " out of range [1, " +
                                std::to_string(MAX_NODES) + "]");
}

// ---- XML writing --------------------------------------------------------------------------------------

void prop(std::string& x, const std::string& indent, const std::string& id, const std::string& value)
{
  x += indent + "<prop id=\"" + id + "\" value=\"" + value + "\"/>\n";
}

void figure_comment(std::string& x, const char* what, const std::string& shown, const Figure& f)
{
  x += "    <!-- " + std::string(what) + " = " + shown + ": " + comment_safe(f.source) + " -->\n";
}

std::string topology_name(Topology t)
{
  switch (t) {
    case Topology::HYPERCUBE:
      return "hypercube";
    case Topology::MESH2D:
      return "mesh2d";
    case Topology::TORUS:
      return "torus";
    case Topology::FAT_TREE:
      return "fattree";
  }
  return "?";
}

std::string shape_text(const Preset& p, const std::vector<long>& dims, long n)
{
  switch (p.topology) {
    case Topology::HYPERCUBE:
      return std::to_string(dims.size()) + "-dimensional hypercube (" + std::to_string(n) +
             " nodes), e-cube routing (SimGrid TORUS cluster, every dimension 2)";
    case Topology::MESH2D:
      return join(dims, "x") + " 2D mesh (" + std::to_string(n) +
             " nodes) without wraparound, XY (dimension-order) routing";
    case Topology::TORUS:
      return join(dims, "x") + " torus (" + std::to_string(n) + " nodes), dimension-order routing";
    case Topology::FAT_TREE:
      if (p.uplinks > 0 && dims.size() == 1)
        return "switched Ethernet, one switch of " + std::to_string(n) + " hosts";
      if (p.uplinks > 0)
        return "switched Ethernet, two tiers (" + std::to_string(n) + " nodes): " + std::to_string(dims[1]) +
               " edge switches of " + std::to_string(dims[0]) + " hosts, each joined to one core switch by " +
               std::to_string(p.uplinks) + " parallel links (oversubscription " + std::to_string(dims[0]) + ":" +
               std::to_string(p.uplinks) + ")";
      return std::to_string(dims.size()) + "-level full-bisection fat tree (" + std::to_string(n) +
             " nodes, down ports per level " + join(dims, ",") + ")";
  }
  return "";
}

void header(std::string& x, const Preset& p, const std::vector<long>& dims, long n, const std::string& extra)
{
  x += "<?xml version='1.0'?>\n";
  x += "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n";
  x += "<platform version=\"4.1\">\n";
  x += "  <!-- mksim platform: " + p.title + ", " + shape_text(p, dims, n) + ".\n";
  x += "       Written by mksim::platforms::generate_platform_xml (platforms/generator.cpp): regenerate, do not edit.\n";
  x += "       Hosts are " + std::string(HOST_PREFIX) + "0 .. " + HOST_PREFIX + std::to_string(n - 1) +
       "; rank order = natural order of names.\n";
  x += extra;
  x += "       Software latency: a nearest-neighbour ping-pong takes s + (route latency) + r, see the figures below. -->\n";
  x += "  <!-- Network model chosen explicitly: CM02 takes latency and bandwidth as written (SimGrid's default LV08\n";
  x += "       multiplies latency by 13.01 and bandwidth by 0.97); no cross-traffic: one message = sum(latency) +\n";
  x += "       size / min(bandwidth) along its route. -->\n";
  x += "  <config>\n";
  x += "    <prop id=\"network/model\" value=\"CM02\"/>\n";
  x += "    <prop id=\"network/crosstraffic\" value=\"0\"/>\n";
  x += "  </config>\n";
}

void machine_props(std::string& x, const Preset& p, const MachineFigures& f, const std::vector<long>& dims)
{
  const std::string in = "    ";
  x += in + "<!-- Figures and their sources -->\n";
  figure_comment(x, "published end-to-end latency", format_si(f.end_to_end_latency_s.value, "s"), f.end_to_end_latency_s);
  figure_comment(x, "node speed", format_si(f.node_speed_flops.value, "f"), f.node_speed_flops);
  figure_comment(x, "link latency per hop", format_si(f.link_latency_s.value, "s"), f.link_latency_s);
  figure_comment(x, "link bandwidth", format_si(f.link_bandwidth_bytes_per_s.value, "Bps"), f.link_bandwidth_bytes_per_s);
  figure_comment(x, "node injection/ejection latency", format_si(f.nic_latency_s.value, "s"), f.nic_latency_s);
  figure_comment(x, "node injection/ejection bandwidth", format_si(f.nic_bandwidth_bytes_per_s.value, "Bps"),
                 f.nic_bandwidth_bytes_per_s);
  figure_comment(x, "send overhead s", format_si(f.send_overhead_s.value, "s"), f.send_overhead_s);
  figure_comment(x, "receive overhead r", format_si(f.recv_overhead_s.value, "s"), f.recv_overhead_s);
  figure_comment(x, "per-message overhead o", format_si(f.per_message_overhead_s.value, "s"), f.per_message_overhead_s);
  figure_comment(x, "eager/rendezvous threshold", num(f.eager_threshold_bytes.value) + " B", f.eager_threshold_bytes);
  figure_comment(x, "skew alpha", format_si(f.skew_alpha_s.value, "s"), f.skew_alpha_s);
  // per-regime figures: written only when set, so files without them are unchanged
  if (f.eager_per_byte_s.value != 0)
    figure_comment(x, "eager per-byte cost", num(f.eager_per_byte_s.value) + " s/B", f.eager_per_byte_s);
  if (f.rendezvous_handshake_s.value != 0)
    figure_comment(x, "rendezvous handshake", format_si(f.rendezvous_handshake_s.value, "s"), f.rendezvous_handshake_s);
  prop(x, in, "mksim.machine", p.name);
  prop(x, in, "mksim.title", p.title);
  prop(x, in, "mksim.topology", topology_name(p.topology));
  prop(x, in, "mksim.dims", join(dims, "x"));
  prop(x, in, "mksim.send_overhead_s", num(f.send_overhead_s.value));
  prop(x, in, "mksim.recv_overhead_s", num(f.recv_overhead_s.value));
  prop(x, in, "mksim.per_message_overhead_s", num(f.per_message_overhead_s.value));
  prop(x, in, "mksim.eager_threshold_bytes", num(f.eager_threshold_bytes.value));
  prop(x, in, "mksim.skew_alpha_s", num(f.skew_alpha_s.value));
  prop(x, in, "mksim.end_to_end_latency_s", num(f.end_to_end_latency_s.value));
  if (f.eager_per_byte_s.value != 0) prop(x, in, "mksim.eager_per_byte_s", num(f.eager_per_byte_s.value));
  if (f.rendezvous_handshake_s.value != 0) prop(x, in, "mksim.rendezvous_handshake_s", num(f.rendezvous_handshake_s.value));
}

/** @brief Per-pattern figures: one comment with the source and five props per pattern (nothing without them). */
void pattern_props_xml(std::string& x, const std::vector<PatternFigures>& patterns)
{
  for (const auto& pat : patterns) {
    x += "    <!-- pattern " + comment_safe(describe_pattern(pat)) + ": " + comment_safe(pat.source) + " -->\n";
    for (const auto& [id, value] : pattern_props(pat))
      prop(x, "    ", id, value);
  }
}

void write_cluster(std::string& x, const Preset& p, const MachineFigures& f, const std::vector<long>& dims, long n)
{
  std::string topo_params;
  std::string topo;
  if (p.topology == Topology::FAT_TREE) {
    // "levels;down per level;up per level;parallel links": full bisection, each switch has as many up as down.
    std::vector<long> up(dims.size(), 1);
    for (size_t i = 1; i < dims.size(); ++i)
      up[i] = dims[i - 1];
    std::vector<long> par(dims.size(), 1);
    if (p.uplinks > 0 && dims.size() == 2) {  // switched Ethernet: one core switch, aggregated uplinks
      up  = {1, 1};
      par = {1, p.uplinks};
    }
    topo        = "FAT_TREE";
    topo_params = std::to_string(dims.size()) + ";" + join(dims, ",") + ";" + join(up, ",") + ";" + join(par, ",");
  } else {
    topo        = "TORUS";
    topo_params = join(dims, ",");
  }
  const std::string cluster_id = p.name == topology_name(p.topology) ? p.name + "-cluster" : p.name + "-" + topology_name(p.topology);
  x += "    <cluster id=\"" + cluster_id + "\" prefix=\"" + HOST_PREFIX +
       "\" suffix=\"\" radical=\"0-" + std::to_string(n - 1) + "\"\n";
  x += "             speed=\"" + format_si(f.node_speed_flops.value, "f") + "\" bw=\"" +
       format_si(f.link_bandwidth_bytes_per_s.value, "Bps") + "\" lat=\"" + format_si(f.link_latency_s.value, "s") +
       "\"";
  if (f.nic_bandwidth_bytes_per_s.value > 0)
    x += " limiter_link=\"" + format_si(f.nic_bandwidth_bytes_per_s.value, "Bps") + "\"";
  x += "\n             topology=\"" + topo + "\" topo_parameters=\"" + topo_params + "\"/>\n";
}

void write_mesh(std::string& x, const MachineFigures& f, const std::vector<long>& dims, bool full)
{
  const long px = dims[0];
  const long py = dims[1];
  const std::string in    = "    ";
  const std::string speed = format_si(f.node_speed_flops.value, "f");
  const std::string lat   = format_si(f.link_latency_s.value, "s");
  const std::string bw    = format_si(f.link_bandwidth_bytes_per_s.value, "Bps");
  const std::string nlat  = format_si(f.nic_latency_s.value, "s");
  const std::string nbw   = format_si(f.nic_bandwidth_bytes_per_s.value, "Bps");
  // The native-mesh marker: sim/engine/platform.cpp builds this mesh in C++ from these values (same names, same
  // strings, so the same doubles) instead of parsing the routers and routes below.
  x += in + "<!-- mksim native-mesh marker: mksim's load_platform builds this mesh in C++ (custom zone, XY routes\n";
  x += in + "     computed on the fly) from the mksim.mesh.* values, with the same host and link names as the XML. -->\n";
  prop(x, in, "mksim.mesh.form", full ? "full" : "compact");
  prop(x, in, "mksim.mesh.speed", speed);
  prop(x, in, "mksim.mesh.link_latency", lat);
  prop(x, in, "mksim.mesh.link_bandwidth", bw);
  prop(x, in, "mksim.mesh.nic_latency", nlat);
  prop(x, in, "mksim.mesh.nic_bandwidth", nbw);
  if (!full) {
    x += in + "<!-- Compact form (more than the full-XML limit of nodes): no hosts, routers or routes are written;\n";
    x += in + "     SimGrid's own tools see an empty zone. Dijkstra routing does not scale past a few thousand hosts. -->\n";
    return;
  }
  auto id = [px](long cx, long cy) { return cy * px + cx; };
  auto xy = [](long cx, long cy) { return std::to_string(cx) + "-" + std::to_string(cy); };
  x.reserve(x.size() + static_cast<size_t>(px * py) * 900);
  x += in + "<!-- XY routing forced in a Dijkstra zone: a node injects into its X-layer router xr, X-layer routers are\n";
  x += in + "     joined along rows; a column hop leads from either layer into the Y-layer routers yr, which are joined\n";
  x += in + "     along columns; both layers eject to the node. With no way back from Y to X, the unique shortest path is\n";
  x += in + "     the XY route: nic-SRC(UP), row links, column links, nic-DST(DOWN). Each mesh edge is one SPLITDUPLEX\n";
  x += in + "     link (UP = +x or +y), used by every route that crosses it, so contention is the mesh's. Dijkstra does\n";
  x += in + "     not scale past a few thousand hosts: larger meshes are written compact and built natively by mksim. -->\n";
  for (long i = 0; i < px * py; ++i)
    x += in + "<host id=\"" + HOST_PREFIX + std::to_string(i) + "\" speed=\"" + speed + "\"/>\n";
  for (long cy = 0; cy < py; ++cy)
    for (long cx = 0; cx < px; ++cx)
      x += in + "<router id=\"xr-" + xy(cx, cy) + "\"/><router id=\"yr-" + xy(cx, cy) + "\"/>\n";
  for (long i = 0; i < px * py; ++i)
    x += in + "<link id=\"nic-" + std::to_string(i) + "\" bandwidth=\"" + nbw + "\" latency=\"" + nlat +
         "\" sharing_policy=\"SPLITDUPLEX\"/>\n";
  for (long cy = 0; cy < py; ++cy)
    for (long cx = 0; cx < px; ++cx) {
      if (cx + 1 < px)
        x += in + "<link id=\"row-" + xy(cx, cy) + "\" bandwidth=\"" + bw + "\" latency=\"" + lat +
             "\" sharing_policy=\"SPLITDUPLEX\"/>\n";
      if (cy + 1 < py)
        x += in + "<link id=\"col-" + xy(cx, cy) + "\" bandwidth=\"" + bw + "\" latency=\"" + lat +
             "\" sharing_policy=\"SPLITDUPLEX\"/>\n";
    }
  auto route = [&x, &in](const std::string& src, const std::string& dst, const std::string& link, const char* dir,
                         bool sym) {
    x += in + "<route src=\"" + src + "\" dst=\"" + dst + "\" symmetrical=\"" + (sym ? "YES" : "NO") +
         "\"><link_ctn id=\"" + link + "\" direction=\"" + dir + "\"/></route>\n";
  };
  for (long cy = 0; cy < py; ++cy)
    for (long cx = 0; cx < px; ++cx) {
      const std::string host = HOST_PREFIX + std::to_string(id(cx, cy));
      const std::string nic  = "nic-" + std::to_string(id(cx, cy));
      route(host, "xr-" + xy(cx, cy), nic, "UP", false);
      route("xr-" + xy(cx, cy), host, nic, "DOWN", false);
      route("yr-" + xy(cx, cy), host, nic, "DOWN", false);
      if (cx + 1 < px)
        route("xr-" + xy(cx, cy), "xr-" + xy(cx + 1, cy), "row-" + xy(cx, cy), "UP", true);
      if (cy + 1 < py) {
        const std::string col = "col-" + xy(cx, cy);
        route("yr-" + xy(cx, cy), "yr-" + xy(cx, cy + 1), col, "UP", true);
        route("xr-" + xy(cx, cy), "yr-" + xy(cx, cy + 1), col, "UP", false);
        route("xr-" + xy(cx, cy + 1), "yr-" + xy(cx, cy), col, "DOWN", false);
      }
    }
}

} // namespace

std::string format_si(double value, const std::string& unit)
{
  if (value == 0)
    return "0" + unit;
  static const std::pair<double, const char*> prefixes[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"},
                                                            {1, ""},     {1e-3, "m"}, {1e-6, "u"}, {1e-9, "n"},
                                                            {1e-12, "p"}};
  for (const auto& [scale, prefix] : prefixes) {
    if (std::fabs(value) >= scale * 0.9999999999) {
      return num(value / scale) + prefix + unit;
    }
  }
  return num(value / 1e-12) + "p" + unit;
}

std::vector<std::string> machine_presets()
{
  std::vector<std::string> names;
  for (const auto& p : presets())
    names.push_back(p.name);
  return names;
}

Topology topology_of(const std::string& machine) { return find_preset(machine).topology; }

PlatformSpec default_spec(const std::string& machine)
{
  PlatformSpec spec;
  spec.machine = machine;
  spec.dims    = find_preset(machine).default_dims;
  return spec;
}

PlatformSpec preset_for(const std::string& machine, long nodes)
{
  const Preset& p = find_preset(machine);
  check_nodes(machine, nodes);
  PlatformSpec spec;
  spec.machine = machine;
  switch (p.topology) {
    case Topology::HYPERCUBE: {
      if (nodes < 2 || (nodes & (nodes - 1)) != 0)
        throw std::invalid_argument(machine + ": a hypercube needs a power-of-two node count >= 2, not " +
                                    std::to_string(nodes));
      for (long n = nodes; n > 1; n /= 2)
        spec.dims.push_back(2);
      break;
    }
    case Topology::MESH2D: {
      std::vector<long> f;
      balanced_factors(nodes, 2, nodes, f); // always exists (1 x n)
      spec.dims = {f[1], f[0]};             // Px >= Py: rows at least as long as columns
      break;
    }
    case Topology::TORUS: {
      std::vector<long> f;
      balanced_factors(nodes, 3, nodes, f);
      std::reverse(f.begin(), f.end()); // X >= Y >= Z
      for (long d : f)
        if (d > 1 || spec.dims.empty())
          spec.dims.push_back(d);
      break;
    }
    case Topology::FAT_TREE: {
      if (p.uplinks > 0) {  // Ethernet: fill edge switches (the largest divisor of the count up to their ports)
        if (nodes <= p.edge_ports) {
          spec.dims = {nodes};
          break;
        }
        long edge = p.edge_ports;
        while (nodes % edge != 0) --edge;
        if (edge < p.edge_ports / 4 || nodes / edge > FAT_TREE_MAX_DOWN)
          throw std::invalid_argument(machine + ": " + std::to_string(nodes) + " nodes do not fill edge switches of at most " +
                                      std::to_string(p.edge_ports) + " ports (" + std::to_string(p.edge_ports / 4) +
                                      " at least) under one core switch of " + std::to_string(FAT_TREE_MAX_DOWN) +
                                      " ports; pick a count such as 96 or 1024");
        spec.dims = {edge, nodes / edge};
        break;
      }
      std::vector<long> f;
      for (int levels = 1; levels <= 8; ++levels)
        if (balanced_factors(nodes, levels, FAT_TREE_MAX_DOWN, f))
          break;
      if (f.empty())
        throw std::invalid_argument(machine + ": " + std::to_string(nodes) +
                                    " nodes cannot be split into fat-tree levels of at most " +
                                    std::to_string(FAT_TREE_MAX_DOWN) +
                                    " down ports (a prime factor is too large); pick a count such as 1024 or 65536");
      std::reverse(f.begin(), f.end()); // widest leaf level first
      spec.dims = f;
      break;
    }
  }
  return spec;
}

MachineFigures figures_for(const PlatformSpec& spec)
{
  MachineFigures f       = find_preset(spec.machine).figures;
  const FigureOverrides& o = spec.overrides;
  apply(f.node_speed_flops, o.node_speed_flops, spec, "node_speed_flops");
  apply(f.link_latency_s, o.link_latency_s, spec, "link_latency_s");
  apply(f.link_bandwidth_bytes_per_s, o.link_bandwidth_bytes_per_s, spec, "link_bandwidth_bytes_per_s");
  apply(f.nic_latency_s, o.nic_latency_s, spec, "nic_latency_s");
  apply(f.nic_bandwidth_bytes_per_s, o.nic_bandwidth_bytes_per_s, spec, "nic_bandwidth_bytes_per_s");
  apply(f.send_overhead_s, o.send_overhead_s, spec, "send_overhead_s");
  apply(f.recv_overhead_s, o.recv_overhead_s, spec, "recv_overhead_s");
  apply(f.per_message_overhead_s, o.per_message_overhead_s, spec, "per_message_overhead_s");
  apply(f.eager_threshold_bytes, o.eager_threshold_bytes, spec, "eager_threshold_bytes");
  apply(f.skew_alpha_s, o.skew_alpha_s, spec, "skew_alpha_s");
  apply(f.end_to_end_latency_s, o.end_to_end_latency_s, spec, "end_to_end_latency_s");
  apply(f.eager_per_byte_s, o.eager_per_byte_s, spec, "eager_per_byte_s");
  apply(f.rendezvous_handshake_s, o.rendezvous_handshake_s, spec, "rendezvous_handshake_s");
  return f;
}

long node_count(const PlatformSpec& spec)
{
  const Preset& p = find_preset(spec.machine);
  const std::string& m = spec.machine;
  if (spec.dims.empty())
    throw std::invalid_argument(m + ": no dimensions given");
  long n = 1;
  for (long d : spec.dims) {
    if (d < 1)
      throw std::invalid_argument(m + ": dimension " + std::to_string(d) + " must be >= 1");
    if (n > MAX_NODES / d)
      throw std::invalid_argument(m + ": more than " + std::to_string(MAX_NODES) + " nodes");
    n *= d;
  }
  switch (p.topology) {
    case Topology::HYPERCUBE:
      if (std::any_of(spec.dims.begin(), spec.dims.end(), [](long d) { return d != 2; }))
        throw std::invalid_argument(m + ": every hypercube dimension must be 2 (got " + join(spec.dims, "x") + ")");
      break;
    case Topology::MESH2D:
      if (spec.dims.size() != 2)
        throw std::invalid_argument(m + ": a 2D mesh needs 2 dimensions (Px, Py), got " + join(spec.dims, "x"));
      break;
    case Topology::TORUS:
      break;
    case Topology::FAT_TREE:
      if (p.uplinks > 0 && spec.dims.size() > 2)
        throw std::invalid_argument(m + ": switched Ethernet has one or two tiers, got " + join(spec.dims, ","));
      if (std::any_of(spec.dims.begin(), spec.dims.end(), [](long d) { return d > FAT_TREE_MAX_DOWN; }))
        throw std::invalid_argument(m + ": fat-tree levels have at most " + std::to_string(FAT_TREE_MAX_DOWN) +
                                    " down ports, got " + join(spec.dims, ","));
      break;
  }
  return n;
}

std::string generate_platform_xml(const PlatformSpec& spec)
{
  const Preset& p        = find_preset(spec.machine);
  const long n           = node_count(spec);
  const MachineFigures f = figures_for(spec);
  if (p.topology != Topology::MESH2D && f.nic_latency_s.value != 0)
    throw std::invalid_argument(spec.machine + ": a per-node latency is only supported on meshes (SimGrid "
                                "clusters have none); put it in send/recv overheads");
  if (!(f.eager_per_byte_s.value >= 0) || !(f.rendezvous_handshake_s.value >= 0))
    throw std::invalid_argument(spec.machine + ": eager per-byte cost and rendezvous handshake must be >= 0");
  for (std::size_t i = 0; i < spec.patterns.size(); ++i) {
    const PatternFigures& pat = spec.patterns[i];
    if (pattern_max_partners(pat.name) == 0)
      throw std::invalid_argument(spec.machine + ": unknown communication pattern \"" + pat.name + "\" (known: 1d, 2d, 3d)");
    for (std::size_t j = 0; j < i; ++j)
      if (spec.patterns[j].name == pat.name)
        throw std::invalid_argument(spec.machine + ": communication pattern " + pat.name + " given twice");
    for (double v : {pat.breakpoint_bytes, pat.short_rho_s, pat.short_beta_s_per_byte, pat.long_rho_s, pat.long_beta_s_per_byte})
      if (!(v >= 0) || !std::isfinite(v))
        throw std::invalid_argument(spec.machine + ": communication pattern " + pat.name + ": figures must be finite and >= 0");
  }
  const bool full_mesh = p.topology == Topology::MESH2D && n <= spec.mesh_full_xml_max_nodes;
  std::string extra;
  if (p.topology == Topology::MESH2D)
    extra = full_mesh ? "       Full form: SimGrid's own tools (smpirun) load it; mksim builds it natively (same routes).\n"
                      : "       Compact form: only mksim loads it (native mesh zone); SimGrid's tools see no hosts.\n";
  std::string x;
  header(x, p, spec.dims, n, extra);
  const char* routing = p.topology != Topology::MESH2D ? "Full" : (full_mesh ? "DijkstraCache" : "Full");
  x += "  <zone id=\"" + p.name + "\" routing=\"" + routing + "\">\n";
  machine_props(x, p, f, spec.dims);
  if (!spec.notes.empty()) {
    x += "    <!--\n";
    for (const auto& line : spec.notes)
      x += "      " + comment_safe(line) + "\n";
    x += "    -->\n";
  }
  for (const auto& [id, value] : spec.extra_props)
    prop(x, "    ", attr_safe(id), attr_safe(value));
  pattern_props_xml(x, spec.patterns);
  if (p.topology == Topology::MESH2D)
    write_mesh(x, f, spec.dims, full_mesh);
  else
    write_cluster(x, p, f, spec.dims, n);
  x += "  </zone>\n";
  x += "</platform>\n";
  return x;
}

}  // namespace mksim::platforms
