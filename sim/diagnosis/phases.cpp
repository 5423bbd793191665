// Seed 002's logical phases, shared by the diagnosis of a simulated run (its timeline) and of a traced run.
#include "sim/diagnosis/phases.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace mksim::sim {

std::vector<results::LogicalPhase> logical_phases(int P, double t_begin, double t_end, const std::vector<CommInterval>& activity) {
  std::vector<std::pair<double, double>> busy;
  for (const auto& a : activity) busy.emplace_back(a.start_s, a.end_s);
  std::sort(busy.begin(), busy.end());
  // separation points: the middle of each gap of the union of the activity intervals
  std::vector<double> cuts{t_begin};
  double reach = -1e300;
  for (const auto& [a, b] : busy) {
    if (reach > -1e300 && a > reach && a > t_begin) cuts.push_back(0.5 * (a + std::max(reach, t_begin)));
    reach = std::max(reach, b);
  }
  cuts.push_back(std::max(t_end, cuts.back()));
  const std::size_t nph = cuts.size() - 1;
  // per stretch: the call sites in it, and each rank's time in calls (clipped to it)
  std::vector<std::set<std::string>> sites(nph);
  std::vector<std::vector<double>> in_mpi(nph, std::vector<double>(static_cast<std::size_t>(P), 0));
  for (const auto& c : activity) {
    if (c.rank < 0) continue;
    std::size_t s = static_cast<std::size_t>(std::upper_bound(cuts.begin(), cuts.end(), c.start_s) - cuts.begin());
    s = s == 0 ? 0 : std::min(s - 1, nph - 1);
    if (!c.site.empty()) sites[s].insert(c.site);
    for (std::size_t t = s; t < nph && cuts[t] < c.end_s; ++t)
      in_mpi[t][static_cast<std::size_t>(c.rank)] += std::max(0.0, std::min(c.end_s, cuts[t + 1]) - std::max(c.start_s, cuts[t]));
  }
  std::vector<results::LogicalPhase> out;
  std::map<std::set<std::string>, std::size_t> index;
  std::vector<std::vector<double>> compute;  // per logical phase, per rank
  for (std::size_t s = 0; s < nph; ++s) {
    const double len = cuts[s + 1] - cuts[s];
    if (len <= 0) continue;
    auto [it, fresh] = index.emplace(sites[s], out.size());
    if (fresh) {
      results::LogicalPhase lp;
      lp.name = "L" + std::to_string(out.size() + 1);
      for (const std::string& k : sites[s]) lp.sites += (lp.sites.empty() ? "" : ", ") + k;
      if (lp.sites.empty()) lp.sites = "(compute only)";
      lp.start_s = cuts[s] - t_begin;
      out.push_back(lp);
      compute.emplace_back(static_cast<std::size_t>(P), 0.0);
    }
    results::LogicalPhase& lp = out[it->second];
    lp.occurrences += 1;
    lp.time_s += len;
    for (int r = 0; r < P; ++r)
      compute[it->second][static_cast<std::size_t>(r)] += std::max(0.0, len - in_mpi[s][static_cast<std::size_t>(r)]);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    results::LogicalPhase& lp = out[i];
    lp.utilisation_min = 2;
    for (int r = 0; r < P; ++r) {
      const double u = lp.time_s > 0 ? std::min(1.0, compute[i][static_cast<std::size_t>(r)] / lp.time_s) : 0;
      lp.utilisation.push_back(u);
      lp.utilisation_mean += u / P;
      if (u < lp.utilisation_min) lp.utilisation_min = u, lp.utilisation_argmin = r;
    }
  }
  return out;
}

std::vector<results::LogicalPhase> logical_phases_from_timeline(const std::string& csv_path, int P, double t_end) {
  std::ifstream in(csv_path);
  if (!in) throw std::runtime_error(csv_path + ": cannot read the replay timeline");
  std::string line;
  std::getline(in, line);  // header
  std::vector<CommInterval> act;
  for (std::size_t n = 2; std::getline(in, line); ++n) {
    std::istringstream f(line);
    std::string rank, start, end, kind, block;
    if (!std::getline(f, rank, ',') || !std::getline(f, start, ',') || !std::getline(f, end, ',') || !std::getline(f, kind, ',') ||
        !std::getline(f, block))
      throw std::runtime_error(csv_path + ": line " + std::to_string(n) + ": not rank,start_s,end_s,kind,block");
    if (kind == "compute") continue;
    act.push_back({std::stoi(rank), std::stod(start), std::stod(end), block});
  }
  return logical_phases(P, 0, t_end, act);
}

}  // namespace mksim::sim
