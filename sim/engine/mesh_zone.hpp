// A 2D mesh without wraparound (Intel Paragon style) as a SimGrid NetZone computing XY routes on the fly.
// SimGrid has no such zone; routers + Dijkstra in XML do not scale past a few thousand hosts, this does.
#pragma once

#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <string>
#include <vector>

namespace mksim::sim {

/** @brief Figures of a mesh, as SimGrid unit strings ("175MBps", "40ns") so they parse exactly as in XML. */
struct MeshFigures {
  std::string speed;          ///< host speed, e.g. "75Mf"
  std::string link_latency;   ///< one mesh hop
  std::string link_bandwidth; ///< one mesh link, per direction
  std::string nic_latency;    ///< injection/ejection link of a node, each way
  std::string nic_bandwidth;  ///< injection/ejection bandwidth
};

/** @brief Px x Py mesh, XY routing; hosts node-<y*Px+x>, links nic-<id>, row-<x>-<y>, col-<x>-<y> (SPLITDUPLEX,
 *  UP = +x/+y), exactly as platforms/generator.cpp writes the XML form. A route is nic-src_UP, the row links
 *  from x to x', the column links from y to y', nic-dst_DOWN. */
class MeshZone : public simgrid::kernel::routing::NetZoneImpl {
public:
  /** @brief Creates the zone as the platform root (the engine must have no platform yet) and fills it. */
  static MeshZone* create_root(const std::string& name, long px, long py, const MeshFigures& figures);

  void get_local_route(const simgrid::kernel::routing::NetPoint* src, const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* latency) override;

private:
  MeshZone(const std::string& name, long px, long py);
  void build(const MeshFigures& figures);
  void add(simgrid::kernel::routing::Route* into, double* latency, simgrid::kernel::resource::StandardLinkImpl* link,
           double link_latency) const;

  long px_;
  long py_;
  double link_latency_s_ = 0;
  double nic_latency_s_  = 0;
  std::vector<long> node_of_vertex_; ///< netpoint id -> node id (-1 for non-hosts)
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> nic_up_, nic_down_;
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> row_up_, row_down_; ///< index y*(Px-1)+x
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> col_up_, col_down_; ///< index y*Px+x
};

}  // namespace mksim::sim
