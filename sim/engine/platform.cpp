// Platform loading: SimGrid XML as is, except mksim's marked meshes, which are built natively (sim/engine/mesh_zone.hpp).
#include "sim/engine/platform.hpp"

#include "sim/engine/mesh_zone.hpp"

#include <simgrid/s4u/NetZone.hpp>
#include <xbt/config.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <stdexcept>

namespace mksim::sim {
namespace {

constexpr std::size_t PRESCAN_BYTES = 64 * 1024; // header, config and root-zone properties fit well within this

/** @brief What the pre-scan finds at the top of a platform file. */
struct Prescan {
  std::vector<std::pair<std::string, std::string>> config; ///< <config> props, in file order
  std::string root_zone_id;
  std::map<std::string, std::string> root_props; ///< <prop>s of the root zone before its first content element
};

std::string read_head(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot open platform file '" + path + "'");
  std::string text(PRESCAN_BYTES, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

std::string strip_comments(const std::string& text)
{
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t open = text.find("<!--", pos);
    if (open == std::string::npos) {
      out.append(text, pos, std::string::npos);
      return out;
    }
    out.append(text, pos, open - pos);
    const std::size_t close = text.find("-->", open + 4);
    if (close == std::string::npos)
      return out;
    pos = close + 3;
  }
}

Prescan prescan(const std::string& head)
{
  static const std::regex prop_re(R"re(<prop\s+id\s*=\s*"([^"]*)"\s+value\s*=\s*"([^"]*)"\s*/>)re");
  static const std::regex zone_re(R"re(<zone\s+id\s*=\s*"([^"]*)"[^>]*>)re");
  const std::string text = strip_comments(head);
  Prescan scan;
  if (const std::size_t c0 = text.find("<config"); c0 != std::string::npos) {
    const std::size_t c1 = text.find("</config>", c0);
    const std::string block = text.substr(c0, c1 == std::string::npos ? std::string::npos : c1 - c0);
    for (std::sregex_iterator it(block.begin(), block.end(), prop_re), end; it != end; ++it)
      scan.config.emplace_back((*it)[1], (*it)[2]);
  }
  std::smatch zone;
  if (!std::regex_search(text, zone, zone_re))
    return scan;
  scan.root_zone_id = zone[1];
  const std::size_t start = static_cast<std::size_t>(zone.position(0) + zone.length(0));
  std::size_t stop        = text.size();
  for (const char* tag : {"<host", "<cluster", "<router", "<link", "<zone", "</zone", "<route", "<peer"})
    stop = std::min(stop, text.find(tag, start));
  const std::string block = text.substr(start, stop - start);
  for (std::sregex_iterator it(block.begin(), block.end(), prop_re), end; it != end; ++it)
    scan.root_props[(*it)[1]] = (*it)[2];
  return scan;
}

bool is_native_mesh(const Prescan& scan)
{
  auto topo = scan.root_props.find("mksim.topology");
  return topo != scan.root_props.end() && topo->second == "mesh2d" && scan.root_props.count("mksim.mesh.form");
}

std::string required(const Prescan& scan, const std::string& key)
{
  auto it = scan.root_props.find(key);
  if (it == scan.root_props.end())
    throw std::runtime_error("mesh marker without property " + key);
  return it->second;
}

void load_native_mesh(const Prescan& scan)
{
  const std::string dims = required(scan, "mksim.dims");
  static const std::regex dims_re(R"(\s*(\d+)\s*x\s*(\d+)\s*)");
  std::smatch m;
  if (!std::regex_match(dims, m, dims_re))
    throw std::runtime_error("bad mksim.dims '" + dims + "' (expected PXxPY, e.g. 16x16)");
  const long px = std::stol(m[1]);
  const long py = std::stol(m[2]);
  MeshFigures figures{required(scan, "mksim.mesh.speed"), required(scan, "mksim.mesh.link_latency"),
                      required(scan, "mksim.mesh.link_bandwidth"), required(scan, "mksim.mesh.nic_latency"),
                      required(scan, "mksim.mesh.nic_bandwidth")};
  // As the XML parser does: the file's <config> applies unless the user already set that key.
  for (const auto& [key, value] : scan.config)
    if (simgrid::config::is_default(key.c_str()))
      simgrid::s4u::Engine::set_config(key + ":" + value);
  MeshZone* zone = MeshZone::create_root(scan.root_zone_id.empty() ? "mesh" : scan.root_zone_id, px, py, figures);
  for (const auto& [key, value] : scan.root_props)
    zone->get_iface()->set_property(key, value);
  simgrid::s4u::Engine::on_platform_created(); // as at the end of an XML platform
}

bool natural_less(const std::string& a, const std::string& b)
{
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      std::size_t ie = i;
      std::size_t je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie])))
        ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je])))
        ++je;
      // compare numerically without overflow: skip leading zeros, then by length, then lexically
      std::size_t is = i;
      std::size_t js = j;
      while (is + 1 < ie && a[is] == '0')
        ++is;
      while (js + 1 < je && b[js] == '0')
        ++js;
      if (ie - is != je - js)
        return ie - is < je - js;
      if (int c = a.compare(is, ie - is, b, js, je - js); c != 0)
        return c < 0;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j])
        return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j))
    return (a.size() - i) < (b.size() - j);
  return a < b; // equal up to digit padding: keep a strict weak order
}

double read_double(const simgrid::s4u::NetZone& zone, const std::string& key, double fallback)
{
  const char* value = zone.get_property(key);
  if (value == nullptr)
    return fallback;
  try {
    std::size_t used = 0;
    const double v   = std::stod(value, &used);
    if (used != std::string(value).size())
      throw std::invalid_argument("trailing text");
    return v;
  } catch (const std::exception&) {
    throw std::runtime_error("platform property " + key + " = '" + value + "' is not a number");
  }
}

} // namespace

void load_platform(simgrid::s4u::Engine& engine, const std::string& path)
{
  load_platform(engine, path, LoadPath::AUTO);
}

void load_platform(simgrid::s4u::Engine& engine, const std::string& path, LoadPath how)
{
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error("platform file '" + path + "' does not exist or is not a regular file");
  const Prescan scan = prescan(read_head(path));
  const bool native  = how == LoadPath::NATIVE_MESH || (how == LoadPath::AUTO && is_native_mesh(scan));
  if (how == LoadPath::NATIVE_MESH && !is_native_mesh(scan))
    throw std::runtime_error("platform file '" + path + "' has no mksim mesh marker (mksim.topology=mesh2d)");
  try {
    if (native)
      load_native_mesh(scan);
    else
      engine.load_platform(path);
    // SimGrid 3.32 leaves the XML root zone unsealed until run(); a Dijkstra zone cannot route before its seal.
    engine.seal_platform();
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot load platform file '" + path + "': " + e.what());
  }
}

MachineParams read_machine_params(const simgrid::s4u::Engine& engine)
{
  MachineParams params;
  const simgrid::s4u::NetZone* root = engine.get_netzone_root();
  if (root == nullptr)
    return params;
  const char* name              = root->get_property("mksim.machine");
  params.name                   = name ? name : root->get_name();
  params.send_overhead_s        = read_double(*root, "mksim.send_overhead_s", params.send_overhead_s);
  params.recv_overhead_s        = read_double(*root, "mksim.recv_overhead_s", params.recv_overhead_s);
  params.per_message_overhead_s = read_double(*root, "mksim.per_message_overhead_s", params.per_message_overhead_s);
  params.eager_threshold_bytes  = read_double(*root, "mksim.eager_threshold_bytes", params.eager_threshold_bytes);
  params.skew_alpha_s           = read_double(*root, "mksim.skew_alpha_s", params.skew_alpha_s);
  params.eager_per_byte_s       = read_double(*root, "mksim.eager_per_byte_s", params.eager_per_byte_s);
  params.rendezvous_handshake_s = read_double(*root, "mksim.rendezvous_handshake_s", params.rendezvous_handshake_s);
  if (params.eager_per_byte_s < 0 || params.rendezvous_handshake_s < 0)
    throw std::runtime_error("platform properties mksim.eager_per_byte_s and mksim.rendezvous_handshake_s must be >= 0");
  if (const auto* all = root->get_properties()) {
    const std::map<std::string, std::string> props(all->begin(), all->end());
    params.patterns = platforms::patterns_from_props(props, "zone " + root->get_name());
  }
  // A pattern's message is charged rho + beta*D in all, s + r + o of it where the platform charges them: its
  // start-up must cover them (sim/engine/phase_patterns.hpp).
  const double overheads = params.send_overhead_s + params.recv_overhead_s + params.per_message_overhead_s;
  for (const auto& p : params.patterns)
    for (const double rho : {p.short_rho_s, p.long_rho_s})
      if (rho < overheads * (1 - 1e-9))
        throw std::runtime_error("platform pattern " + p.name + ": start-up rho " + std::to_string(rho) +
                                 " s is below the platform's s + r + o = " + std::to_string(overheads) +
                                 " s (a message of the pattern cannot cost less than the overheads charged around it)");
  return params;
}

std::vector<simgrid::s4u::Host*> compute_hosts(const simgrid::s4u::Engine& engine)
{
  std::vector<simgrid::s4u::Host*> hosts = engine.get_all_hosts();
  std::sort(hosts.begin(), hosts.end(), [](const simgrid::s4u::Host* a, const simgrid::s4u::Host* b) {
    return natural_less(a->get_name(), b->get_name());
  });
  return hosts;
}

}  // namespace mksim::sim
