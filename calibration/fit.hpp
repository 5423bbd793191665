// Communication cost lines T(D) = rho + beta*D (seed 001 s.5, table 2): one line, or a short and a long regime
// with the breakpoint between them chosen from the data.
#pragma once

#include <cstddef>
#include <vector>

namespace mksim::calibration {

/** @brief A least-squares line over the points with sizes in [from_bytes, to_bytes]. */
struct LineFit {
  double rho_s = 0;            ///< intercept: start-up time
  double beta_s_per_byte = 0;  ///< slope: time per byte
  double rel_rss = 0;          ///< sum of squared relative residuals ((t - fit) / t)^2
  std::size_t points = 0;
  double from_bytes = 0, to_bytes = 0;
};

/** @brief Two lines split at `breakpoint_bytes`: sizes below it are short, sizes from it on long. */
struct TwoRegimeFit {
  LineFit short_regime, long_regime;
  double breakpoint_bytes = 0;  ///< the first (smallest) size of the long regime
  double rel_rss = 0;           ///< short + long
};

/**
 * @brief Fits t = rho + beta*D by least squares on relative residuals (weights 1/t^2: the times span several
 * orders of magnitude, and an absolute criterion would let the largest sizes decide everything). Solved with
 * Eigen's column-pivoting QR.
 * @throws std::invalid_argument with unequal lengths, fewer than 2 distinct sizes, or a non-positive time.
 */
LineFit fit_line(const std::vector<double>& sizes_bytes, const std::vector<double>& times_s);

/**
 * @brief The breakpoint that minimises the total relative residual of a line per regime, over every split of
 * the sizes (sorted) that leaves at least `min_points` distinct sizes on each side; ties go to the smaller size.
 * The two lines are independent (no continuity imposed): a protocol switch shows as a jump, as in seed 001
 * table 2 (T3E rho 35.6 us short, 71.2 us long).
 * @throws std::invalid_argument when there are fewer than 2 * min_points distinct sizes (or as fit_line).
 */
TwoRegimeFit fit_two_regimes(const std::vector<double>& sizes_bytes, const std::vector<double>& times_s,
                             std::size_t min_points = 3);

}  // namespace mksim::calibration
