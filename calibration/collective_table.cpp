// Measured collective costs from mkcalib databases: log-log in size, a + b*log2(P) over the rank counts.
#include "calibration/collective_table.hpp"

#include <algorithm>
#include <cmath>

namespace mksim::calibration {

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

}  // namespace mksim::calibration
