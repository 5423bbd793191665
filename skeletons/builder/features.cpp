#include "skeletons/builder/features.hpp"

#include <algorithm>
#include <utility>

namespace mksim::skeletons::builder {

Feature::Feature(std::string text, const std::vector<std::string>& names, bool integer_valued)
    : text_(std::move(text)), integer_(integer_valued), names_(names) {
  SymbolTable table;
  for (const auto& n : names_) table.add(n);
  expr_ = parse_expr(text_, table);
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (expr_.uses(static_cast<int>(i))) uses_.push_back(names_[i]);
}

double Feature::eval(const Vars& vars) const {
  std::vector<double> frame(names_.size(), 0.0);
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (expr_.uses(static_cast<int>(i))) frame[i] = vars.at(names_[i]);
  return expr_.eval(frame);
}

namespace {

std::vector<std::string> variable_names(const std::vector<std::string>& params, bool with_rank) {
  std::vector<std::string> names{"P"};
  if (with_rank) names.push_back("rank");
  std::vector<std::string> sorted = params;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& p : sorted)
    if (p != "P" && p != "rank") names.push_back(p);
  return names;
}

}  // namespace

std::vector<Feature> scale_features(const std::vector<std::string>& params) {
  const std::vector<std::string> names = variable_names(params, false);
  std::vector<Feature> f;
  for (const auto& n : names) f.emplace_back(n, names, true);
  const std::string px = GRID_PX, py = GRID_PY;
  f.emplace_back("log2(P)", names, false);
  f.emplace_back("sqrt(P)", names, false);
  f.emplace_back("P/2", names, false);
  f.emplace_back("P-1", names, true);
  f.emplace_back(px, names, true);
  f.emplace_back(py, names, true);
  f.emplace_back("floor(sqrt(P))", names, true);
  // MPI_Dims_create(P, 2)'s sides: the power-of-two sides above where P is a power of two, but not elsewhere
  // (12 = 4 x 3); after them, so that they win only where the runs tell them apart
  f.emplace_back("dims(P, 2, 0)", names, true);
  f.emplace_back("dims(P, 2, 1)", names, true);
  for (std::size_t i = 1; i < names.size(); ++i) {
    f.emplace_back("log2(" + names[i] + ")", names, false);
    f.emplace_back("sqrt(" + names[i] + ")", names, false);
  }
  return f;
}

std::vector<Feature> rank_features(const std::vector<std::string>& params) {
  const std::vector<std::string> names = variable_names(params, true);
  const std::string px = GRID_PX;
  std::vector<Feature> f;
  f.emplace_back("rank", names, true);
  f.emplace_back("P-1-rank", names, true);
  f.emplace_back("rank % " + px, names, true);
  f.emplace_back("floor(rank / " + px + ")", names, true);
  f.emplace_back("rank % 2", names, true);
  f.emplace_back("(rank % " + px + " + floor(rank / " + px + ")) % 2", names, true);
  return f;
}

}  // namespace mksim::skeletons::builder
