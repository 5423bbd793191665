// Statistics of one measurement's repetitions: location, spread, a 95% confidence interval of the mean, and
// outliers flagged (never dropped), so that noisy runs are visible rather than silently averaged away.
#pragma once

#include <cstddef>
#include <vector>

namespace mksim::calibration {

/** @brief Summary of the repetitions of one measurement; `outlier[i]` refers to the i-th input value. */
struct Summary {
  std::size_t n = 0;
  double mean = 0, median = 0;
  double stddev = 0;                   ///< sample standard deviation (n - 1)
  double ci95_low = 0, ci95_high = 0;  ///< mean -+ t(0.975, n-1) * stddev / sqrt(n)
  double mad = 0;                      ///< median absolute deviation from the median (unscaled)
  std::vector<bool> outlier;           ///< modified z-score |0.6745 (x - median) / MAD| > 3.5
  std::size_t outliers = 0;            ///< number of flagged values
};

/** @brief Two-sided 97.5% quantile of Student's t with `dof` degrees of freedom (dof >= 1). */
double student_t_975(std::size_t dof);

/**
 * @brief Summarises `values` (at least two). Outliers follow Iglewicz and Hoaglin's modified z-score (threshold
 * 3.5); when more than half the values are equal (MAD = 0) the mean absolute deviation from the median, scaled by
 * 1.253314, stands in for MAD / 0.6745. Flagged values stay in every statistic.
 * @throws std::invalid_argument with fewer than two values or a non-finite one.
 */
Summary summarize(const std::vector<double>& values);

}  // namespace mksim::calibration
