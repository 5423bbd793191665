// Native XY-routed 2D mesh zone: O(1) memory per node, routes computed on demand (see mesh_zone.hpp).
#include "sim/engine/mesh_zone.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <stdexcept>

namespace mksim::sim {

namespace routing = simgrid::kernel::routing;

MeshZone::MeshZone(const std::string& name, long px, long py) : NetZoneImpl(name), px_(px), py_(py) {}

MeshZone* MeshZone::create_root(const std::string& name, long px, long py, const MeshFigures& figures)
{
  if (px < 1 || py < 1)
    throw std::invalid_argument("mesh dimensions must be >= 1, got " + std::to_string(px) + "x" + std::to_string(py));
  if (simgrid::s4u::Engine::get_instance()->get_netzone_root() != nullptr)
    throw std::logic_error("MeshZone::create_root: the engine already has a platform");
  auto* zone = new MeshZone(name, px, py); // the first NetZoneImpl becomes the root; the engine owns it
  zone->set_parent(nullptr);
  zone->build(figures);
  return zone;
}

void MeshZone::build(const MeshFigures& f)
{
  simgrid::s4u::NetZone* iface = get_iface();
  const long n                 = px_ * py_;
  std::vector<simgrid::s4u::Host*> hosts;
  hosts.reserve(n);
  for (long i = 0; i < n; ++i)
    hosts.push_back(iface->create_host("node-" + std::to_string(i), f.speed));

  // Latencies as SimGrid parsed them (same parser as the XML path), read back from the links.
  auto duplex = [iface](const std::string& name, const std::string& bw, const std::string& lat, double* lat_s) {
    auto* link = iface->create_split_duplex_link(name, bw);
    link->set_latency(lat);
    link->seal();
    *lat_s = link->get_link_up()->get_latency();
    return std::make_pair(link->get_link_up()->get_impl(), link->get_link_down()->get_impl());
  };
  nic_up_.resize(n);
  nic_down_.resize(n);
  for (long i = 0; i < n; ++i)
    std::tie(nic_up_[i], nic_down_[i]) = duplex("nic-" + std::to_string(i), f.nic_bandwidth, f.nic_latency, &nic_latency_s_);
  row_up_.resize((px_ - 1) * py_);
  row_down_.resize((px_ - 1) * py_);
  col_up_.resize(px_ * (py_ - 1));
  col_down_.resize(px_ * (py_ - 1));
  for (long y = 0; y < py_; ++y)
    for (long x = 0; x < px_; ++x) {
      const std::string xy = std::to_string(x) + "-" + std::to_string(y);
      if (x + 1 < px_)
        std::tie(row_up_[y * (px_ - 1) + x], row_down_[y * (px_ - 1) + x]) =
            duplex("row-" + xy, f.link_bandwidth, f.link_latency, &link_latency_s_);
      if (y + 1 < py_)
        std::tie(col_up_[y * px_ + x], col_down_[y * px_ + x]) = duplex("col-" + xy, f.link_bandwidth, f.link_latency, &link_latency_s_);
    }

  for (long i = 0; i < n; ++i) {
    const unsigned long v = hosts[i]->get_netpoint()->id();
    if (v >= node_of_vertex_.size())
      node_of_vertex_.resize(v + 1, -1);
    node_of_vertex_[v] = i;
  }
  iface->seal();
}

void MeshZone::add(routing::Route* into, double* latency, simgrid::kernel::resource::StandardLinkImpl* link,
                   double link_latency) const
{
  into->link_list_.push_back(link);
  if (latency)
    *latency += link_latency;
}

void MeshZone::get_local_route(const routing::NetPoint* src, const routing::NetPoint* dst, routing::Route* into,
                               double* latency)
{
  const long s = src->id() < node_of_vertex_.size() ? node_of_vertex_[src->id()] : -1;
  const long d = dst->id() < node_of_vertex_.size() ? node_of_vertex_[dst->id()] : -1;
  if (s < 0 || d < 0)
    throw std::logic_error("MeshZone " + get_name() + ": no route between " + src->get_name() + " and " +
                           dst->get_name() + " (not hosts of the mesh)");
  long x        = s % px_;
  long y        = s / px_;
  const long dx = d % px_;
  const long dy = d / px_;
  add(into, latency, nic_up_[s], nic_latency_s_);
  for (; x < dx; ++x)
    add(into, latency, row_up_[y * (px_ - 1) + x], link_latency_s_);
  for (; x > dx; --x)
    add(into, latency, row_down_[y * (px_ - 1) + x - 1], link_latency_s_);
  for (; y < dy; ++y)
    add(into, latency, col_up_[y * px_ + x], link_latency_s_);
  for (; y > dy; --y)
    add(into, latency, col_down_[(y - 1) * px_ + x], link_latency_s_);
  add(into, latency, nic_down_[d], nic_latency_s_);
}

}  // namespace mksim::sim
