// Mean, median, Student-t confidence interval and MAD outlier flags of repetition times.
#include "calibration/stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace mksim::calibration {
namespace {

double median_of(std::vector<double> v) {
  const std::size_t n = v.size();
  std::sort(v.begin(), v.end());
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

double student_t_975(std::size_t dof) {
  // Exact table for small samples (any statistics text); beyond 30, the Cornish-Fisher expansion of t in the
  // normal quantile (Abramowitz and Stegun 26.7.5), accurate to 1e-4 there.
  static constexpr double TABLE[] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
                                     2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
                                     2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (dof == 0) throw std::invalid_argument("student_t_975: zero degrees of freedom");
  if (dof <= 30) return TABLE[dof - 1];
  const double z = 1.959963984540054, d = static_cast<double>(dof);
  const double z3 = z * z * z, z5 = z3 * z * z;
  return z + (z3 + z) / (4 * d) + (5 * z5 + 16 * z3 + 3 * z) / (96 * d * d);
}

Summary summarize(const std::vector<double>& values) {
  if (values.size() < 2)
    throw std::invalid_argument("summarize: need at least 2 repetitions for a confidence interval, got " +
                                std::to_string(values.size()));
  for (double v : values)
    if (!std::isfinite(v)) throw std::invalid_argument("summarize: non-finite value");
  Summary s;
  s.n = values.size();
  const double n = static_cast<double>(s.n);
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / n;
  double ss = 0;
  for (double v : values) ss += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(ss / (n - 1));
  const double half = student_t_975(s.n - 1) * s.stddev / std::sqrt(n);
  s.ci95_low = s.mean - half;
  s.ci95_high = s.mean + half;
  s.median = median_of(values);

  std::vector<double> deviation(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) deviation[i] = std::fabs(values[i] - s.median);
  s.mad = median_of(deviation);
  // scale: the denominator that turns a deviation into a modified z-score
  double scale = s.mad / 0.6745;
  if (scale == 0) {
    double mean_dev = 0;
    for (double d : deviation) mean_dev += d;
    scale = 1.253314 * mean_dev / n;
  }
  s.outlier.assign(values.size(), false);
  if (scale > 0)
    for (std::size_t i = 0; i < values.size(); ++i)
      if (deviation[i] / scale > 3.5) {
        s.outlier[i] = true;
        ++s.outliers;
      }
  return s;
}

}  // namespace mksim::calibration
