// Weighted least-squares lines and the two-regime breakpoint search (Eigen QR per candidate split).
#include "calibration/fit.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace mksim::calibration {
namespace {

struct Point {
  double size, time;
};

std::vector<Point> sorted_points(const std::vector<double>& sizes, const std::vector<double>& times) {
  if (sizes.size() != times.size())
    throw std::invalid_argument("fit: " + std::to_string(sizes.size()) + " sizes but " +
                                std::to_string(times.size()) + " times");
  std::vector<Point> points;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (!(times[i] > 0) || !std::isfinite(times[i]))
      throw std::invalid_argument("fit: time at size " + std::to_string(sizes[i]) + " is not positive");
    if (!(sizes[i] >= 0) || !std::isfinite(sizes[i])) throw std::invalid_argument("fit: negative size");
    points.push_back({sizes[i], times[i]});
  }
  std::stable_sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.size < b.size; });
  return points;
}

std::size_t distinct_sizes(const Point* begin, const Point* end) {
  std::size_t n = 0;
  for (const Point* p = begin; p != end; ++p)
    if (p == begin || p->size != (p - 1)->size) ++n;
  return n;
}

LineFit fit_range(const Point* begin, const Point* end) {
  const auto n = static_cast<Eigen::Index>(end - begin);
  if (distinct_sizes(begin, end) < 2) throw std::invalid_argument("fit: a line needs at least 2 distinct sizes");
  // Row i: (1/t_i) * rho + (D_i/t_i) * beta = 1, i.e. residual (t_i - rho - beta D_i) / t_i.
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    a(i, 0) = 1.0 / begin[i].time;
    a(i, 1) = begin[i].size / begin[i].time;
  }
  // Columns scaled to unit norm first: sizes span 1 B..16 MiB, which would otherwise make A badly conditioned.
  const Eigen::Vector2d norms = a.colwise().norm();
  const Eigen::Vector2d x = (a * norms.cwiseInverse().asDiagonal()).colPivHouseholderQr().solve(b).cwiseQuotient(norms);
  LineFit fit;
  fit.rho_s = x(0);
  fit.beta_s_per_byte = x(1);
  fit.rel_rss = (a * x - b).squaredNorm();
  fit.points = static_cast<std::size_t>(n);
  fit.from_bytes = begin->size;
  fit.to_bytes = (end - 1)->size;
  return fit;
}

}  // namespace

LineFit fit_line(const std::vector<double>& sizes_bytes, const std::vector<double>& times_s) {
  const std::vector<Point> points = sorted_points(sizes_bytes, times_s);
  return fit_range(points.data(), points.data() + points.size());
}

TwoRegimeFit fit_two_regimes(const std::vector<double>& sizes_bytes, const std::vector<double>& times_s,
                             std::size_t min_points) {
  const std::vector<Point> points = sorted_points(sizes_bytes, times_s);
  min_points = std::max<std::size_t>(min_points, 2);
  const Point* first = points.data();
  const Point* last = points.data() + points.size();
  if (distinct_sizes(first, last) < 2 * min_points)
    throw std::invalid_argument("fit: two regimes need at least " + std::to_string(2 * min_points) +
                                " distinct sizes, got " + std::to_string(distinct_sizes(first, last)));
  bool found = false;
  TwoRegimeFit best;
  for (std::size_t k = 1; k < points.size(); ++k) {
    if (points[k].size == points[k - 1].size) continue;  // a size never straddles the breakpoint
    const Point* split = first + k;
    if (distinct_sizes(first, split) < min_points || distinct_sizes(split, last) < min_points) continue;
    TwoRegimeFit candidate;
    candidate.short_regime = fit_range(first, split);
    candidate.long_regime = fit_range(split, last);
    candidate.breakpoint_bytes = points[k].size;
    candidate.rel_rss = candidate.short_regime.rel_rss + candidate.long_regime.rel_rss;
    if (!found || candidate.rel_rss < best.rel_rss) {
      best = candidate;
      found = true;
    }
  }
  return best;
}

}  // namespace mksim::calibration
