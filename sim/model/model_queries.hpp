// The questions a user asks of the analytic model (issue "Analytic models"): the optimal grain size (seed 000
// s.5.4, fig. 6), speedup and constant-time curves (s.5.5), isospeed scalability (seed 001 s.3, eq. 1) and
// range comparison with its crossing points (seed 001 s.3, fig. 2). Every answer comes from derive_model's
// compiled T: one model per P (rank classes and routes are resolved at P), root finding over a parameter at
// a fixed P (a grid of samples to bracket sign changes, then bisection).
#pragma once

#include "sim/model/model.hpp"
#include "skeletons/skeleton.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mksim::sim {

/** @brief Where a query evaluates the model: parameter values (others: the skeleton's defaults), skew, grid. */
struct QueryOptions {
  std::map<std::string, double> params;  ///< parameter values; P never goes here
  bool skew = true;                      ///< add the platform's alpha*sqrt(P) to synchronous phases (replay: the `noise` load rule)
  int grid_points = 256;                 ///< samples that bracket roots before bisection (half even, half geometric)
  double neighbourhood = 2.0;            ///< optimize_param checks the integers in [root / f, root * f] (1: floor, ceil)
};

/** @brief A point where dT/dparam changes sign, located by bisection between two grid samples. */
struct DerivativeRoot {
  double value = 0;      ///< the parameter's (continuous) value
  double slope = 0;      ///< dT/dparam there: ~0 at a smooth stationary point, not small at a kink of T
  bool minimum = false;  ///< the sign goes from - to +: a local minimum of T (else a maximum)
};

/** @brief The best integer value of one parameter at one P (seed 000 s.5.4: solve dT/dK = 0). */
struct ParamOptimum {
  int P = 0;
  std::string param;
  double lo = 0;
  double hi = 0;
  double best = 0;                                     ///< the integer candidate with the least model T
  double T_s = 0;                                      ///< model T at `best`
  std::vector<DerivativeRoot> roots;                   ///< every sign change of dT/dparam in [lo, hi], ascending
  std::vector<std::pair<double, double>> candidates;   ///< (integer value, model T) evaluated, ascending value
  std::string derivative;                              ///< dT/dparam with the machine's figures substituted
};

/** @brief Optimal integer value of `param` in [lo, hi] at P: the roots of the compiled dT/dparam (sign changes
 *  on a grid, then bisection), then T itself at the bounds and at the integers around each root and around the
 *  grid's least-T sample (floor and ceil, and every integer within the options' factor `neighbourhood`: floor
 *  and ceil inside T, such as ceil(M/K) blocks, make T jagged between integers where the relaxed derivative is
 *  smooth). Throws std::invalid_argument for a bad range or an unknown parameter (or P). */
ParamOptimum optimize_param(const skeletons::Skeleton& skeleton, const MachineModel& machine, int P,
                            const QueryOptions& options, const std::string& param, double lo, double hi);

/** @brief optimize_param at each P (one model per P), in the order given. */
std::vector<ParamOptimum> optimize_param_over_P(const skeletons::Skeleton& skeleton, const MachineModel& machine,
                                                const std::vector<int>& Ps, const QueryOptions& options,
                                                const std::string& param, double lo, double hi);

/** @brief One point of a speedup curve (seed 000 s.5.5): S(P) = T(1) / T(P), efficiency S(P) / P. */
struct SpeedupPoint {
  int P = 0;
  double T_s = 0;
  double speedup = 0;
  double efficiency = 0;
};

/** @brief Speedup over `Ps` for the options' problem size, T(1) from a model derived at P = 1. Throws
 *  skeletons::SkeletonError when the skeleton cannot run at P = 1 or at one of `Ps`. */
std::vector<SpeedupPoint> speedup_curve(const skeletons::Skeleton& skeleton, const MachineModel& machine,
                                        const std::vector<int>& Ps, const QueryOptions& options);

/** @brief One point of a constant-time curve: the value of the parameter with T(value, P) = T0, if any. */
struct ConstantTimePoint {
  int P = 0;
  bool found = false;
  double value = 0;   ///< the smallest solution in the range (bisected), when found
  double T_s = 0;     ///< model T at `value` (when found), else at the end of the range nearest T0
  std::string note;   ///< why there is no solution in the range
};

/** @brief Constant-time curve (seed 000 s.5.5): for each P, the smallest `param` in [lo, hi] where the model's
 *  T crosses T0 (grid scan, then bisection); not found when T stays above or below T0 over the range. */
std::vector<ConstantTimePoint> constant_time_curve(const skeletons::Skeleton& skeleton, const MachineModel& machine,
                                                   const std::vector<int>& Ps, const QueryOptions& options,
                                                   const std::string& param, double T0_s, double lo, double hi);

/** @brief The program's work W in flop (seed 001 s.3): the mean compute of every rank of a run at P ranks,
 *  summed (loops iterated, conditions evaluated, `prob` branches weighted by their probability, distributions
 *  at their mean); compute given in seconds counts as seconds * `flops_per_s`. */
double program_work(const skeletons::Skeleton& skeleton, const std::map<std::string, double>& params, int P,
                    double flops_per_s);

/** @brief The isospeed problem size at one scaled ensemble size p' and the scalability psi(p, p'). */
struct IsospeedRow {
  int p_prime = 0;
  bool found = false;
  double value = 0;   ///< the size parameter giving the same average unit speed at p'
  double W = 0;       ///< W(value), flop
  double T_s = 0;     ///< model T(value, p')
  double psi = 0;     ///< p' W / (p W'), seed 001 eq. (1)
  std::string note;   ///< why there is no such size in the range
};

/** @brief An isospeed table: the initial state (p, value) and one row per p'. */
struct IsospeedTable {
  std::string param;
  int p = 0;
  double value = 0;
  double W = 0;               ///< flop
  double T_s = 0;
  double speed_flops = 0;     ///< average unit speed W / (p T), flop/s per processor
  int work_P = 1;             ///< the run whose ranks' compute is W (see program_work)
  std::vector<IsospeedRow> rows;
};

/** @brief Isospeed scalability (seed 001 s.3): average unit speed a(N, p) = W(N) / (p T(N, p)); for each p',
 *  the smallest N' in [lo, hi] with a(N', p') = a(N, p) (grid scan, then bisection), and psi = p' W / (p W').
 *  W comes from program_work at `work_P` ranks with the machine's rank-0 speed for compute in seconds. A size
 *  the skeleton floors (cols = floor(N/P)) makes W and T steps in N: N' is then where the speed steps past. */
IsospeedTable isospeed_scalability(const skeletons::Skeleton& skeleton, const MachineModel& machine,
                                   const QueryOptions& options, const std::string& param, int p, double value,
                                   const std::vector<int>& p_primes, double lo, double hi, int work_P = 1);

/** @brief One code-machine combination of a range comparison: a skeleton, its machine, its parameters. */
struct Contender {
  std::string label;
  const skeletons::Skeleton* skeleton = nullptr;
  const MachineModel* machine = nullptr;
  std::map<std::string, double> params;
};

/** @brief What a range comparison scans: P over integers, or a parameter over reals at a fixed P. */
struct RangeScan {
  std::string param = "P";      ///< "P" or a parameter both skeletons have
  double lo = 0;
  double hi = 0;
  std::vector<double> samples;  ///< the first pass's points (P: default the powers of two in [lo, hi] and the bounds)
  int P = 0;                    ///< the fixed P when `param` is not P
  bool skew = true;
  int grid_points = 256;        ///< first-pass samples of a continuous parameter when `samples` is empty
};

/** @brief The two model times at one point of the scan. */
struct ComparisonSample {
  double x = 0;
  double T_a_s = 0;
  double T_b_s = 0;
};

/** @brief A change of the faster combination between `below` and `above` (SCALA's crossing point). */
struct Crossing {
  double below = 0;          ///< last point (P: accepted integer) where `faster_below` is faster
  double above = 0;          ///< first point where `faster_above` is faster: P's crossing point p'
  double at = 0;             ///< continuous parameter: the bisected root of T_a - T_b; P: `above`
  std::string faster_below;
  std::string faster_above;
};

/** @brief A stretch of the range where one combination is faster ("tie" where both are equal). */
struct RangeSegment {
  double from = 0;
  double to = 0;
  std::string faster;
};

/** @brief The result of a range comparison. */
struct RangeComparison {
  std::string param;
  std::string label_a;
  std::string label_b;
  std::vector<ComparisonSample> samples;   ///< every point evaluated (first pass and refinement), ascending
  std::vector<double> skipped;             ///< P values one of the skeletons does not accept
  std::vector<Crossing> crossings;
  std::vector<RangeSegment> segments;
};

/** @brief Range comparison (seed 001 s.3, fig. 2) of two combinations by their model times. Over P: one model
 *  per P and side, sign changes of T_a - T_b between first-pass samples refined over every integer P between
 *  them that both skeletons accept (two crossings between neighbouring first-pass samples cancel and are not
 *  seen). Over a parameter: both models at scan.P, sign changes on the grid bisected.
 *  Throws std::invalid_argument for a bad range, an unknown parameter or a contender without skeleton/machine. */
RangeComparison compare_range(const Contender& a, const Contender& b, const RangeScan& scan);

/** @brief A MachineModel whose speeds and routes between P ranks are a table filled by a forked child that
 *  loads the platform, so that one process can use several platforms (load_machine_model allows one). O(P^2)
 *  routes: P up to 2048. Call before this process starts a SimGrid engine. Throws std::runtime_error. */
MachineModel tabulate_machine_model(const std::string& platform_path, int P);

}  // namespace mksim::sim
