// Curves, scaling, crossings and timelines for the report, computed once from the typed tables (see report_data.hpp).
#include "results/report_data.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace mksim::results {

std::vector<CurvePoint> curve_points(const SweepTable& table, const std::string& source) {
  std::vector<CurvePoint> out;
  for (const char* method : {"replay", "model"}) {
    for (const SweepRow& row : table.rows) {
      const SweepPart& part = std::string(method) == "replay" ? row.replay : row.model;
      if (part.status != "ok" || !std::isfinite(part.time_s) || part.time_s <= 0) continue;
      CurvePoint p;
      p.source = source;
      p.platform = row.platform;
      p.method = method;
      for (std::size_t k = 0; k < table.param_names.size() && k < row.params.size(); ++k)
        p.params += (p.params.empty() ? "" : " ") + table.param_names[k] + "=" + format_value(row.params[k]);
      p.curve = source.empty() ? row.platform : source + " " + row.platform;
      if (!p.params.empty()) p.curve += " " + p.params;
      p.P = row.P;
      p.time_s = part.time_s;
      p.compute_s = part.compute_s;
      p.comm_s = part.comm_s;
      p.wait_s = part.wait_s;
      out.push_back(std::move(p));
    }
  }
  return out;
}

namespace {

/** @brief Points of each (method, curve), sorted by P; a P given twice keeps its first time. */
std::map<std::pair<std::string, std::string>, std::map<int, const CurvePoint*>> by_curve(
    const std::vector<CurvePoint>& points) {
  std::map<std::pair<std::string, std::string>, std::map<int, const CurvePoint*>> curves;
  for (const CurvePoint& p : points) curves[{p.method, p.curve}].emplace(p.P, &p);
  return curves;
}

/** @brief Whether two curves of one method are worth crossing: two platforms of one sweep and parameter set, or
 *  two sweeps on one platform. */
bool comparable(const CurvePoint& a, const CurvePoint& b) {
  if (a.source == b.source) return a.params == b.params && a.platform != b.platform;
  return a.platform == b.platform;
}

}  // namespace

std::vector<ScalingPoint> scaling(const std::vector<CurvePoint>& points) {
  std::vector<ScalingPoint> out;
  for (const auto& [key, curve] : by_curve(points)) {
    const auto& [base_P, base] = *curve.begin();
    for (const auto& [P, p] : curve) {
      ScalingPoint s;
      s.curve = key.second;
      s.method = key.first;
      s.P = P;
      s.base_P = base_P;
      s.time_s = p->time_s;
      s.speedup = base->time_s * base_P / p->time_s;
      s.efficiency = s.speedup / P;
      out.push_back(std::move(s));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const ScalingPoint& x, const ScalingPoint& y) {
    return std::tie(x.curve, x.method, x.P) < std::tie(y.curve, y.method, y.P);
  });
  return out;
}

std::vector<Crossing> find_crossings(const std::vector<CurvePoint>& points) {
  const auto curves = by_curve(points);
  std::vector<Crossing> out;
  for (auto i = curves.begin(); i != curves.end(); ++i) {
    for (auto j = std::next(i); j != curves.end(); ++j) {
      if (i->first.first != j->first.first) continue;  // another method
      const CurvePoint& a0 = *i->second.begin()->second;
      const CurvePoint& b0 = *j->second.begin()->second;
      if (!comparable(a0, b0)) continue;
      // log T_a - log T_b over the common P, in increasing P.
      std::vector<std::tuple<int, double, double>> diff;  // P, difference, log T_a
      for (const auto& [P, pa] : i->second)
        if (const auto pb = j->second.find(P); pb != j->second.end())
          diff.emplace_back(P, std::log(pa->time_s) - std::log(pb->second->time_s), std::log(pa->time_s));
      for (std::size_t k = 0; k < diff.size(); ++k) {
        const auto& [P0, d0, t0] = diff[k];
        if (d0 == 0) continue;
        std::size_t next = k + 1;  // the next point where the curves differ
        while (next < diff.size() && std::get<1>(diff[next]) == 0) ++next;
        if (next == diff.size() || (std::get<1>(diff[next]) > 0) == (d0 > 0)) continue;
        Crossing c;
        c.method = i->first.first;
        c.a = i->first.second;
        c.b = j->first.second;
        if (next == k + 1) {  // strictly between two grid points
          const auto& [P1, d1, t1] = diff[next];
          const double f = d0 / (d0 - d1);
          c.P = std::exp(std::log(P0) + f * (std::log(P1) - std::log(P0)));
          c.time_s = std::exp(t0 + f * (t1 - t0));
          c.P_low = P0;
          c.P_high = P1;
        } else {  // the curves meet at grid point(s): the first of them
          const auto& [P1, d1, t1] = diff[k + 1];
          c.P = P1;
          c.time_s = std::exp(t1);
          c.P_low = c.P_high = P1;
        }
        out.push_back(std::move(c));
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Crossing& x, const Crossing& y) {
    return std::tie(x.method, x.a, x.b, x.P) < std::tie(y.method, y.a, y.b, y.P);
  });
  return out;
}

Timeline read_timeline_csv(const std::string& path, std::size_t max_ops) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the timeline");
  const std::string header = "rank,start_s,end_s,kind,block";
  std::string line;
  if (!std::getline(in, line) || (line != header && line != header + "\r"))
    throw std::runtime_error(path + ": line 1: not a timeline CSV (expected the header '" + header + "')");
  Timeline t;
  std::set<int> ranks;
  std::size_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto bad = [&](const std::string& why) {
      return std::runtime_error(path + ": line " + std::to_string(number) + ": " + why + ": '" + line + "'");
    };
    // rank,start_s,end_s,kind,block: the block (last) may itself contain commas.
    std::vector<std::string> field;
    std::size_t start = 0;
    for (int f = 0; f < 4; ++f) {
      const std::size_t comma = line.find(',', start);
      if (comma == std::string::npos) throw bad("expected 5 fields");
      field.push_back(line.substr(start, comma - start));
      start = comma + 1;
    }
    field.push_back(line.substr(start));
    TimelineOp op;
    std::size_t used = 0;
    try {
      op.rank = std::stoi(field[0], &used);
      if (used != field[0].size() || op.rank < 0) throw std::invalid_argument("rank");
      op.start_s = std::stod(field[1], &used);
      if (used != field[1].size()) throw std::invalid_argument("start");
      op.end_s = std::stod(field[2], &used);
      if (used != field[2].size()) throw std::invalid_argument("end");
    } catch (const std::exception&) {
      throw bad("bad rank or time");
    }
    if (!std::isfinite(op.start_s) || !std::isfinite(op.end_s) || op.end_s < op.start_s)
      throw bad("the operation ends before it starts");
    op.kind = field[3];
    op.block = field[4];
    ranks.insert(op.rank);
    ++t.total_ops;
    if (t.ops.size() < max_ops) t.ops.push_back(std::move(op));
  }
  if (in.bad()) throw std::runtime_error(path + ": read error");
  t.ranks = static_cast<int>(ranks.size());
  return t;
}

}  // namespace mksim::results
