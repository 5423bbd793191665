// The vocabulary the skeleton builder regresses in: a sample's variables (P, rank, the run's parameters)
// and derived quantities (grid sides, logarithms) written as skeleton expressions, so that whatever the
// builder finds is an expression the replay engine and the analytic model can read back.
#pragma once

#include "skeletons/expr.hpp"

#include <map>
#include <string>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief One sample's variables by name: "P", "rank" (when per rank) and each run parameter. */
using Vars = std::map<std::string, double>;

/** @brief A candidate quantity: its expression text (skeleton syntax) compiled once. */
class Feature {
 public:
  /** @brief Compiles `text` over `names`; throws SkeletonError on a bad expression. */
  Feature(std::string text, const std::vector<std::string>& names, bool integer_valued);
  const std::string& text() const { return text_; }
  /** @brief True when the quantity is an integer wherever its variables are (grid sides, P - 1). */
  bool integer_valued() const { return integer_; }
  /** @brief Value at `vars`; a variable missing from `vars` is an error (std::out_of_range). */
  double eval(const Vars& vars) const;
  /** @brief Names of the variables it reads. */
  const std::vector<std::string>& uses() const { return uses_; }

 private:
  std::string text_;
  bool integer_;
  std::vector<std::string> names_;  // frame layout
  std::vector<std::string> uses_;
  Expr expr_;
};

/** @brief Quantities of the run's scale: P, the run parameters (`params`, sorted), and derived ones:
 *  log2(P), sqrt(P), P/2, P-1, the sides of the most square power-of-two grid Px = 2^floor(log2(P)/2)
 *  and Py = P/Px, floor(sqrt(P)), and log2/sqrt of each parameter. First the plain variables, then the
 *  derived ones, in a fixed order (the builder's results do not depend on map order). */
std::vector<Feature> scale_features(const std::vector<std::string>& params);

/** @brief Quantities of a rank's position: rank, P-1-rank, rank % Px, floor(rank / Px) (x, y in the
 *  Px x Py grid), rank % 2 and the checkerboard colour (x + y) % 2. */
std::vector<Feature> rank_features(const std::vector<std::string>& params);

/** @brief The expression text of the grid's x side (Px) and y side (Py), shared by all of the above. */
inline constexpr const char* GRID_PX = "2^floor(log2(P)/2)";
inline constexpr const char* GRID_PY = "P/2^floor(log2(P)/2)";

}  // namespace mksim::skeletons::builder
