// Machine figures for the analytic model: a SimGrid engine that loads the platform and is only asked for
// routes (latency = sum of the links' latencies, bandwidth = the narrowest link, as CM02 without cross
// traffic or TCP window computes a lone message) and host speeds; nothing is simulated.
#include "sim/engine/machine_model.hpp"

#include "sim/engine/platform.hpp"
#include "sim/engine/replay.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

namespace mksim::sim {

MachineModel load_machine_model(const std::string& platform_path, int P) {
  namespace sg4 = simgrid::s4u;
  if (sg4::Engine::has_instance()) throw std::runtime_error("load_machine_model: this process already has a SimGrid engine");
  std::vector<std::string> args = {"mksim-model", "--log=root.thresh:warning", "--log=xbt_cfg.thresh:warning"};
  for (const auto& c : default_simgrid_config()) args.push_back("--cfg=" + c);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  static std::unique_ptr<sg4::Engine> engine;  // lives as long as the process: the model's callbacks use it
  engine = std::make_unique<sg4::Engine>(&argc, argv.data());
  load_platform(*engine, platform_path);
  const MachineParams mp = read_machine_params(*engine);
  auto hosts = std::make_shared<std::vector<sg4::Host*>>(compute_hosts(*engine));
  if (static_cast<std::size_t>(P) > hosts->size())
    throw std::runtime_error(platform_path + ": P=" + std::to_string(P) + " ranks but the platform has only " +
                             std::to_string(hosts->size()) + " compute hosts (generate a larger one with `mksim platform`)");
  MachineModel m;
  m.name = mp.name;
  m.hosts = static_cast<int>(hosts->size());
  m.send_overhead_s = mp.send_overhead_s;
  m.recv_overhead_s = mp.recv_overhead_s;
  m.per_message_overhead_s = mp.per_message_overhead_s;
  m.skew_alpha_s = mp.skew_alpha_s;
  m.eager_threshold_bytes = mp.eager_threshold_bytes;
  m.eager_per_byte_s = mp.eager_per_byte_s;
  m.rendezvous_handshake_s = mp.rendezvous_handshake_s;
  m.patterns = mp.patterns;
  m.speed_flops = [hosts](int rank) { return hosts->at(static_cast<std::size_t>(rank))->get_speed(); };
  m.route = [hosts](int src, int dst) {
    RouteFigures f;
    if (src == dst) return f;
    std::vector<sg4::Link*> links;
    double latency = 0;
    hosts->at(static_cast<std::size_t>(src))->route_to(hosts->at(static_cast<std::size_t>(dst)), links, &latency);
    double bw = std::numeric_limits<double>::infinity();
    for (const sg4::Link* l : links) bw = std::min(bw, l->get_bandwidth());
    f.latency_s = latency;
    f.bandwidth_Bps = std::isfinite(bw) ? bw : 0.0;
    return f;
  };
  return m;
}

double platform_skew_alpha(const std::string& platform_path) {
  // mksim's own property, written on one line by the generator (platforms/generator.cpp) in the file's head
  std::ifstream in(platform_path, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  static const std::regex prop(R"re(<prop\s+id\s*=\s*"mksim\.skew_alpha_s"\s+value\s*=\s*"([^"]*)")re");
  std::smatch m;
  if (!std::regex_search(head, m, prop)) return 0;
  char* end = nullptr;
  const std::string text = m[1].str();
  const double v = std::strtod(text.c_str(), &end);
  return end != text.c_str() && std::isfinite(v) ? v : 0;
}

}  // namespace mksim::sim
