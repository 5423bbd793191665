// Measured collective costs from mkcalib databases: log-log in size, a + b*log2(P) over the rank counts.
#include "sim/engine/collective_table.hpp"

#include <cstdio>
#include <set>
#include <sstream>

#include <algorithm>
#include <cmath>

namespace mksim::sim {

CollectiveTable collective_table(const std::vector<results::CalibDb>& dbs, const std::vector<std::string>& names) {
  CollectiveTable t;
  for (const results::CalibDb& db : dbs) {
    t.machines.push_back(db.machine);
    bool any = false;
    for (const results::CalibKernel& k : db.kernels) {
      if (std::find(names.begin(), names.end(), k.name) == names.end() || k.sizes.empty()) continue;
      auto& by_np = t.points[k.name];
      if (by_np.count(db.np))
        throw CollectiveTableError("database of machine " + db.machine + ": a second measurement of " + k.name + " at np " +
                                   std::to_string(db.np) + " (give one database per rank count)");
      auto& pts = by_np[db.np];
      for (const results::CalibSize& s : k.sizes) pts.emplace_back(static_cast<double>(s.size_bytes), s.median_s);
      std::sort(pts.begin(), pts.end());
      any = true;
    }
    if (!any) throw CollectiveTableError("database of machine " + db.machine + " (np " + std::to_string(db.np) + ") has no collective kernel");
  }
  return t;
}

double interpolate_in_size(const std::vector<std::pair<double, double>>& pts, double bytes) {
  if (pts.empty()) throw CollectiveTableError("no measured sizes");
  if (pts.size() == 1 || bytes <= 0 || pts.front().first <= 0) {
    // barrier (size 0) or a size-0 point: nearest point by size, no logarithm of 0
    auto best = pts.front();
    for (const auto& p : pts)
      if (std::fabs(p.first - bytes) < std::fabs(best.first - bytes)) best = p;
    return best.second;
  }
  std::size_t hi = 1;
  while (hi + 1 < pts.size() && pts[hi].first < bytes) ++hi;
  const auto& p0 = pts[hi - 1];
  const auto& p1 = pts[hi];
  if (p0.second <= 0 || p1.second <= 0)  // a log needs positive times: linear instead
    return p0.second + (p1.second - p0.second) * (bytes - p0.first) / (p1.first - p0.first);
  const double x = (std::log(bytes) - std::log(p0.first)) / (std::log(p1.first) - std::log(p0.first));
  return std::exp(std::log(p0.second) + x * (std::log(p1.second) - std::log(p0.second)));
}

OverP fit_over_P(const CollectiveTable& t, const std::string& kind, double bytes) {
  const auto it = t.points.find(kind);
  if (it == t.points.end() || it->second.empty()) throw CollectiveTableError("no measurement of " + kind + " in the collective database");
  std::vector<double> x, y;
  for (const auto& [np, pts] : it->second) {
    x.push_back(std::log2(static_cast<double>(np)));
    y.push_back(interpolate_in_size(pts, bytes));
  }
  OverP f;
  f.rank_counts = static_cast<int>(x.size());
  if (x.size() == 1) {
    f.a_s = y[0];
    return f;
  }
  if (x.size() == 2 && x[1] != x[0]) {
    // the line through both points, solved directly: the weighted normal equations below lose digits when the two
    // times differ by orders of magnitude (np 4 oversubscribed beside other jobs: 1e-6 against 0.08 s per call)
    f.b_s = (y[1] - y[0]) / (x[1] - x[0]);
    f.a_s = y[0] - f.b_s * x[0];
    for (std::size_t i = 0; i < 2; ++i) f.max_rel_error = std::max(f.max_rel_error, std::fabs(f.a_s + f.b_s * x[i] - y[i]) / y[i]);
    return f;
  }
  // weighted least squares (weights 1/y^2: relative residuals) for y = a + b x
  double sw = 0, swx = 0, swy = 0, swxx = 0, swxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = 1.0 / std::max(y[i] * y[i], 1e-300);
    sw += w, swx += w * x[i], swy += w * y[i], swxx += w * x[i] * x[i], swxy += w * x[i] * y[i];
  }
  const double det = sw * swxx - swx * swx;
  f.b_s = det != 0 ? (sw * swxy - swx * swy) / det : 0.0;
  f.a_s = (swy - f.b_s * swx) / sw;
  for (std::size_t i = 0; i < x.size(); ++i)
    f.max_rel_error = std::max(f.max_rel_error, std::fabs(f.a_s + f.b_s * x[i] - y[i]) / y[i]);
  return f;
}

double collective_time(const CollectiveTable& t, const std::string& kind, int P, double bytes) {
  const OverP f = fit_over_P(t, kind, bytes);
  return std::max(0.0, f.a_s + f.b_s * std::log2(static_cast<double>(std::max(P, 1))));
}

namespace {
const std::vector<std::string> KINDS = {"barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall", "gather", "scatter"};

std::string g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
}  // namespace

CollectiveTable load_collective_table(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& item : paths) {
    std::size_t start = 0;
    while (start <= item.size()) {
      const auto comma = item.find(',', start);
      const std::string f = item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!f.empty()) files.push_back(f);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (files.empty()) throw CollectiveTableError("--collectives: no database given");
  std::vector<results::CalibDb> dbs;
  for (const std::string& f : files) {
    try {
      dbs.push_back(results::read_calib_db(f));
    } catch (const std::exception& e) {
      throw CollectiveTableError(f + ": cannot read the collective database: " + e.what());
    }
  }
  CollectiveTable t;
  try {
    t = collective_table(dbs, KINDS);
  } catch (const CollectiveTableError& e) {
    std::string list;
    for (const auto& f : files) list += (list.empty() ? "" : ", ") + f;
    throw CollectiveTableError(list + ": " + e.what());
  }
  t.sources = files;
  return t;
}

bool measures(const CollectiveTable& t, const std::string& kind) {
  const auto it = t.points.find(kind);
  return it != t.points.end() && !it->second.empty();
}

std::string extrapolation_note(const CollectiveTable& t, const std::string& kind, int P, double bytes) {
  const auto& by_np = t.points.at(kind);
  const int lo_np = by_np.begin()->first, hi_np = by_np.rbegin()->first;
  double lo_b = 1e300, hi_b = -1;
  for (const auto& [np, pts] : by_np)
    for (const auto& [size, time] : pts) lo_b = std::min(lo_b, size), hi_b = std::max(hi_b, size);
  std::string out;
  if (P < lo_np || P > hi_np)
    out = "P=" + std::to_string(P) + " is outside the measured rank counts " + std::to_string(lo_np) + ".." + std::to_string(hi_np) +
          " (a + b*log2(P) extrapolated)";
  if (kind != "barrier" && (bytes < lo_b || bytes > hi_b))
    out += std::string(out.empty() ? "" : "; ") + g(bytes) + " bytes is outside the measured sizes " + g(lo_b) + ".." + g(hi_b) +
           " (end segment extended in log-log)";
  return out.empty() ? out : "measured " + kind + ": " + out;
}

std::vector<std::string> describe(const CollectiveTable& t) {
  std::vector<std::string> out;
  for (const auto& [kind, by_np] : t.points) {
    if (by_np.empty()) continue;
    std::set<double> sizes;
    std::string nps;
    for (const auto& [np, pts] : by_np) {
      nps += (nps.empty() ? "" : ",") + std::to_string(np);
      for (const auto& p : pts) sizes.insert(p.first);
    }
    double err = 0;
    for (double s : sizes) err = std::max(err, fit_over_P(t, kind, s).max_rel_error);
    std::ostringstream o;
    o << kind << ": np " << nps << ", sizes " << g(*sizes.begin()) << ".." << g(*sizes.rbegin()) << " B, fit error over P <= "
      << g(100 * err) << "%";
    out.push_back(o.str());
  }
  return out;
}

}  // namespace mksim::sim
