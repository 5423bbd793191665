// Cross-run regression (seed 000 s.2: every number of the skeleton as a function of N, P, ...): one quantity
// measured in several traced runs (and ranks) becomes a skeleton expression of P, the run parameters and
// rank, with its error, the runs it came from, and what those runs cannot decide. Method: skeletons/builder/README.md.
#pragma once

#include "skeletons/builder/features.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief One measurement of a quantity: the run's variables ("P", each parameter, and "rank" for a
 *  per-rank quantity), the measured value, and the traced run it comes from (its directory or name). */
struct Sample {
  Vars vars;
  double value = 0;
  std::string run;
};

/** @brief How to fit one quantity. */
struct FitOptions {
  /** @brief Integer-valued quantity (count, size, peer, depth): search exact expressions first. */
  bool integer = false;
  /** @brief Most non-constant terms of a least-squares model (1..3); the exact search uses up to two. */
  int max_terms = 2;
  /** @brief A model reproduces a sample when |model - value| <= rel_tolerance * |value| (integers: * max(|value|, 1)). */
  double rel_tolerance = 1e-9;
  /** @brief Let the model depend on "rank" (every sample must then have it); otherwise rank is ignored
   *  and samples that differ only in rank are averaged. */
  bool allow_rank = false;
  /** @brief Largest power of P a least-squares term may have: P^e*log2(P)^k only with e < max_p_power, or
   *  e == max_p_power and k == 0 (1: at most linear growth in P; 0: no growth). Infinity: no limit. */
  double max_p_power = INFINITY;
};

/** @brief A fitted quantity with its provenance and what the runs could not decide. */
struct Fit {
  std::string expr;               ///< skeleton expression over P, the parameters (and rank); parse_expr reads it
  bool exact = false;             ///< reproduces every sample within rel_tolerance
  double max_rel_error = 0;       ///< largest |expr - value| / |value| over the samples
  double cv_rel_error = -1;       ///< mean relative error predicting each run from the others; -1 if too few runs
  std::vector<std::string> runs;  ///< the runs the samples came from, sorted, distinct
  std::vector<std::string> alternatives;  ///< models that fit as well but predict differently at runs not traced
  std::string ambiguity;          ///< "" or what the runs cannot decide and which runs (P, parameter values) would
  std::string note;               ///< how the model was chosen (exact, cross-validation, adjusted R^2) and caveats
};

/** @brief Fits `samples` (several runs, optionally several ranks) with an expression of P, `params` and
 *  (with allow_rank) rank. Deterministic. Throws std::invalid_argument on no samples, a non-finite value
 *  or variable, samples with different variable sets, a missing P/parameter/rank, or bad options. */
Fit fit_quantity(const std::vector<Sample>& samples, const std::vector<std::string>& params,
                 const FitOptions& options = {});

}  // namespace mksim::skeletons::builder
