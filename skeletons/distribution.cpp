// Sampling of compute-time multipliers (format v2 `dist`): inverse-CDF and Box-Muller draws from RankRng.
#include "skeletons/distribution.hpp"

#include <cmath>
#include <numbers>

namespace mksim::skeletons {

const char* distribution_name(Distribution::Type type) {
  switch (type) {
    case Distribution::Type::NORMAL: return "normal";
    case Distribution::Type::LOGNORMAL: return "lognormal";
    case Distribution::Type::UNIFORM: return "uniform";
    case Distribution::Type::EMPIRICAL: return "empirical";
  }
  return "?";
}

std::string cv_problem(const Distribution& dist, double cv) {
  if (dist.type == Distribution::Type::EMPIRICAL) return "";
  if (!(cv >= 0) || !std::isfinite(cv)) return "is not a coefficient of variation (finite, >= 0)";
  if (dist.type == Distribution::Type::UNIFORM && cv > UNIFORM_MAX_CV)
    return "is above 1/sqrt(3) = 0.577, where a uniform distribution of mean 1 would go below 0";
  return "";
}

double empirical_mean(const std::vector<double>& q) {
  if (q.size() < 2) return q.empty() ? 0.0 : q.front();
  double sum = 0;
  for (std::size_t i = 0; i + 1 < q.size(); ++i) sum += 0.5 * (q[i] + q[i + 1]);
  return sum / static_cast<double>(q.size() - 1);
}

namespace {

// A standard normal number by Box-Muller (two uniforms; 1 - u keeps the logarithm finite).
double standard_normal(RankRng& rng) {
  const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

double sample_multiplier(const Distribution& dist, double cv, RankRng& rng) {
  switch (dist.type) {
    case Distribution::Type::NORMAL: {
      // truncated at 0 by redrawing; a draw is >= 0 with probability > 1/2, so 64 tries fail with ~1e-20
      for (int tries = 0; tries < 64; ++tries) {
        const double x = 1.0 + cv * standard_normal(rng);
        if (x >= 0) return x;
      }
      return 0.0;
    }
    case Distribution::Type::LOGNORMAL: {
      const double s2 = std::log1p(cv * cv);
      return std::exp(-0.5 * s2 + std::sqrt(s2) * standard_normal(rng));
    }
    case Distribution::Type::UNIFORM: {
      const double half = cv * std::sqrt(3.0);
      return 1.0 + half * (2.0 * rng.uniform() - 1.0);
    }
    case Distribution::Type::EMPIRICAL: {
      const std::vector<double>& q = dist.quantiles;
      const double u = rng.uniform();
      if (q.size() < 2) return q.empty() ? 1.0 : q.front();
      const double pos = u * static_cast<double>(q.size() - 1);
      const auto i = std::min(static_cast<std::size_t>(pos), q.size() - 2);
      const double frac = pos - static_cast<double>(i);
      return q[i] + (q[i + 1] - q[i]) * frac;
    }
  }
  return 1.0;
}

}  // namespace mksim::skeletons
