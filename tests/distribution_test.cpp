// Compute-time multipliers (skeletons/distribution.hpp): each type has mean 1 and its stated spread, the
// draws follow the rank's seeded stream, and empirical quantiles are honoured. Tolerances come from the
// number of draws (a few standard errors), so a biased sampler fails them.
#include "skeletons/distribution.hpp"
#include "skeletons/skeleton_io.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace mksim::skeletons;

namespace {

constexpr int DRAWS = 200'000;

Distribution parametric(Distribution::Type type) {
  Distribution d;
  d.type = type;
  return d;  // cv is passed to sample_multiplier already evaluated
}

Distribution empirical(std::vector<double> q) {
  Distribution d;
  d.type = Distribution::Type::EMPIRICAL;
  d.quantiles = std::move(q);
  return d;
}

struct Moments {
  double mean = 0, sd = 0, min = 0, max = 0;
};

Moments draw(const Distribution& d, double cv, std::uint64_t seed = 3, int rank = 0, std::vector<double>* out = nullptr) {
  RankRng rng(seed, rank);
  double sum = 0, sum2 = 0, lo = 1e300, hi = -1e300;
  for (int i = 0; i < DRAWS; ++i) {
    const double x = sample_multiplier(d, cv, rng);
    sum += x;
    sum2 += x * x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    if (out) out->push_back(x);
  }
  const double m = sum / DRAWS;
  return {m, std::sqrt(sum2 / DRAWS - m * m), lo, hi};
}

// Standard deviation of the piecewise-linear distribution of equally spaced quantiles (exact integral).
double empirical_sd(const std::vector<double>& q) {
  double m2 = 0;
  const double step = 1.0 / static_cast<double>(q.size() - 1);
  for (std::size_t i = 0; i + 1 < q.size(); ++i)  // E[X^2] over a segment of linear x: (a^2 + ab + b^2) / 3
    m2 += step * (q[i] * q[i] + q[i] * q[i + 1] + q[i + 1] * q[i + 1]) / 3;
  const double m = empirical_mean(q);
  return std::sqrt(m2 - m * m);
}

}  // namespace

TEST(Distribution, ParametricTypesHaveMeanOneAndTheirCv) {
  const double se = 5 / std::sqrt(static_cast<double>(DRAWS));  // five standard errors per unit of sd
  {
    const Moments m = draw(parametric(Distribution::Type::NORMAL), 0.2);
    EXPECT_NEAR(m.mean, 1, 0.2 * se);
    EXPECT_NEAR(m.sd, 0.2, 0.2 * 0.02);
  }
  {
    const Moments m = draw(parametric(Distribution::Type::LOGNORMAL), 0.5);
    EXPECT_NEAR(m.mean, 1, 0.5 * se);
    EXPECT_NEAR(m.sd, 0.5, 0.5 * 0.05);  // heavy tail: the sd converges slowly
    EXPECT_GT(m.min, 0);
  }
  {
    const Moments m = draw(parametric(Distribution::Type::UNIFORM), 0.3);
    EXPECT_NEAR(m.mean, 1, 0.3 * se);
    EXPECT_NEAR(m.sd, 0.3, 0.3 * 0.02);
    EXPECT_GE(m.min, 1 - 0.3 * std::sqrt(3.0));
    EXPECT_LE(m.max, 1 + 0.3 * std::sqrt(3.0));
  }
}

TEST(Distribution, NormalIsTruncatedAtZero) {
  const Moments m = draw(parametric(Distribution::Type::NORMAL), 2.0);
  EXPECT_GE(m.min, 0);
  EXPECT_GT(m.mean, 1.2);  // documented: a wide normal loses its mean to the truncation (lognormal does not)
}

TEST(Distribution, EmpiricalFollowsItsQuantilesByInverseCdf) {
  const std::vector<double> q = {0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.3, 3.1};
  const Distribution d = empirical(q);
  const double mean = empirical_mean(q), sd = empirical_sd(q);
  std::vector<double> xs;
  const Moments m = draw(d, 0, 5, 1, &xs);
  EXPECT_NEAR(m.mean, mean, 5 * sd / std::sqrt(static_cast<double>(DRAWS)));
  EXPECT_NEAR(m.sd, sd, 0.02 * sd);
  EXPECT_DOUBLE_EQ(std::max(m.min, q.front()), m.min);
  EXPECT_LE(m.max, q.back());
  std::sort(xs.begin(), xs.end());
  for (std::size_t i = 1; i + 1 < q.size(); ++i) {  // the share of draws below each quantile is its probability
    const double p = static_cast<double>(i) / 10;
    const double below = static_cast<double>(std::upper_bound(xs.begin(), xs.end(), q[i]) - xs.begin()) / DRAWS;
    EXPECT_NEAR(below, p, 5 * std::sqrt(p * (1 - p) / DRAWS)) << "quantile " << i;
  }
}

TEST(Distribution, DrawsFollowTheRanksSeededStream) {
  const Distribution d = parametric(Distribution::Type::LOGNORMAL);
  auto first = [&](std::uint64_t seed, int rank) {
    RankRng rng(seed, rank);
    std::vector<double> v;
    for (int i = 0; i < 5; ++i) v.push_back(sample_multiplier(d, 0.3, rng));
    return v;
  };
  EXPECT_EQ(first(7, 2), first(7, 2));
  EXPECT_NE(first(7, 2), first(7, 3));
  EXPECT_NE(first(7, 2), first(8, 2));
}

TEST(Distribution, CvProblems) {
  EXPECT_EQ(cv_problem(parametric(Distribution::Type::NORMAL), 0), "");
  EXPECT_NE(cv_problem(parametric(Distribution::Type::NORMAL), -0.1), "");
  EXPECT_NE(cv_problem(parametric(Distribution::Type::LOGNORMAL), std::nan("")), "");
  EXPECT_EQ(cv_problem(parametric(Distribution::Type::UNIFORM), UNIFORM_MAX_CV), "");
  EXPECT_NE(cv_problem(parametric(Distribution::Type::UNIFORM), 0.58), "");
  EXPECT_EQ(cv_problem(empirical({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}), -1), "");  // no cv
}
