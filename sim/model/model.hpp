// The analytic model (seed 000 s.4, MK): a closed-form completion time T(P, N, ...) derived from a skeleton
// and a machine's figures, bottom-up over the program tree with communication phases costed by their type.
// Symbolic algebra is GiNaC's, seen only by model.cpp; callers get text, LaTeX, JSON and a compiled
// expression for fast numeric evaluation.
#pragma once

#include "sim/engine/collective_table.hpp"
#include "sim/engine/machine_model.hpp"
#include "skeletons/expr.hpp"
#include "skeletons/skeleton.hpp"

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace mksim::sim {

/** @brief Where and how to derive the model. */
struct ModelOptions {
  int P = 0;                                   ///< the run's ranks: rank classes and routes are resolved here
  std::map<std::string, double> params;        ///< parameter values (others take the skeleton's defaults)
  bool skew = true;                            ///< add the platform's alpha*sqrt(P) to synchronous phases
  /// Measured collectives (--collectives): a collective of a kind the table measured costs the symbol
  /// coll_KIND(P, m), its value a + b*log2(P) fitted at m's value at this point; other kinds keep their rounds.
  std::shared_ptr<const CollectiveTable> collectives = nullptr;
};

/** @brief One term of the breakdown: the time a phase label (or serial compute) adds on the critical class. */
struct ModelTerm {
  std::string phase;    ///< the blocks' phase label, "" for unlabelled blocks
  std::string kind;     ///< "compute", "synchronous", "pipeline", "collective", "skew"
  std::string formula;  ///< symbolic, in machine symbols (s, r, o, L, beta, F, alpha) and parameters
  std::string latex;
  double value_s = 0;   ///< at the options' point
  std::string detail;   ///< depth, width, message size, overlapped work as found
};

struct ModelExpr;

/** @brief A closed form compiled once for fast numeric evaluation: straight-line code over registers, each
 *  common subexpression computed once (the skeleton language's operators, same semantics). */
class CompiledExpr {
 public:
  /** @brief One instruction: register i = code(r[a], r[b], r[c]), or a constant, or frame[slot]. */
  struct Instr {
    skeletons::ExprInstr::Code code{};
    int a = -1, b = -1, c = -1;
    int slot = -1;
    double value = 0;
    std::array<int, 3> more = {-1, -1, -1};  ///< operands 4 to 6 (cart_coord, cart_rank)
  };
  /** @brief The value for a frame (slot 0 = P, then the model's parameters). */
  double eval(std::span<const double> frame) const;
  std::size_t size() const { return code_.size(); }
  std::vector<Instr>& code() { return code_; }
  const std::vector<Instr>& code() const { return code_; }

 private:
  std::vector<Instr> code_;
};

/** @brief A derived model. `formula` keeps the machine's figures as symbols; `numeric` substitutes them,
 *  leaving P and the parameters; `compiled` evaluates `numeric` (frame: slot 0 = P, then `params`). */
struct AnalyticModel {
  std::string skeleton;
  std::string machine;
  int P = 0;
  std::string formula;             ///< T with machine symbols
  std::string latex;               ///< the same in LaTeX
  std::string numeric;             ///< T with the machine's figures substituted
  std::vector<std::string> params; ///< the free parameters of `numeric`, in frame order after P
  std::map<std::string, double> machine_symbols;  ///< s, r, o, L, beta, F, alpha: their values
  double value_s = 0;              ///< T at the options' point
  std::vector<ModelTerm> terms;    ///< breakdown on the critical class, in program order of first appearance
  int classes = 0;                 ///< rank classes (ranks that run the same branches) at P
  int critical_rank = 0;           ///< representative rank of the critical class
  std::string critical_class;      ///< which ranks it stands for
  std::vector<std::string> notes;  ///< approximations made (loop variables averaged, floors relaxed, ...)
  CompiledExpr compiled;           ///< fast evaluation of `numeric`
  /** @brief T at P and the given parameter values (others: the values the model was derived at). */
  double eval(double P, const std::map<std::string, double>& values) const;
  /** @brief Frame for `compiled`: P then each of `params` from values, else the derivation's value. */
  std::vector<double> frame(double P, const std::map<std::string, double>& values) const;
  std::map<std::string, double> point;  ///< the parameter values the model was derived at
  std::shared_ptr<const struct ModelExpr> expr;  ///< the symbolic form, for derivative()
};

/** @brief Derives the model. Throws skeletons::SkeletonError when the skeleton cannot run at P. */
AnalyticModel derive_model(const skeletons::Skeleton& skeleton, const MachineModel& machine, const ModelOptions& options);

/** @brief dT/dparam as a compiled expression over the same frame as AnalyticModel::compiled (floor and
 *  ceil are differentiated as their argument: the continuous relaxation used for optimisation); `text`
 *  receives the derivative's formula. Throws std::invalid_argument for an unknown parameter. */
CompiledExpr derivative(const AnalyticModel& model, const std::string& param, std::string* text = nullptr);

/** @brief The model as JSON (formula, LaTeX, numeric, terms, notes), deterministic. */
std::string model_json(const AnalyticModel& model);

/** @brief One part of a rank class's cost (a phase label and kind, as ModelTerm) as a JavaScript function. */
struct ScriptTerm {
  std::string phase, kind;
  std::string js;
};

/** @brief A rank class of the model (ranks that run the same branches) as JavaScript: its total and its parts. */
struct ScriptClass {
  std::string members;  ///< "3 rank(s): 0, 1, 2"
  std::string total_js;
  std::vector<ScriptTerm> terms;
};

/** @brief The model compiled to JavaScript, for a page that re-evaluates it as the user moves parameters (mksim
 *  report --explore). Every function is `function (f) {...}` of one array, the frame [P, params...], and computes
 *  what CompiledExpr::eval computes from the same GiNaC form (the same operations in the same order on doubles).
 *  T = T_js = the largest class total; a class's terms sum to its total. */
struct ModelScript {
  std::vector<std::string> params;  ///< frame order after P
  std::string T_js;
  std::vector<ScriptClass> classes;
};

/** @brief model's closed forms as JavaScript (see ModelScript). Throws std::invalid_argument without an expression. */
ModelScript model_script(const AnalyticModel& model);

/** @brief A compiled expression as the source text of a JavaScript function of one array (the frame). */
std::string javascript_of(const CompiledExpr& expr);

}  // namespace mksim::sim
