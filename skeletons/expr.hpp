// Arithmetic expressions of skeletons (sizes, counts, peers, conditions), parsed once into compact code.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mksim::skeletons {

/** @brief Names of the variables an expression may use, each bound to a slot of the evaluation frame. */
class SymbolTable {
 public:
  /** @brief Adds a name (or returns its slot if already there). */
  int add(const std::string& name);
  /** @brief Slot of a name, or -1. */
  int find(std::string_view name) const;
  const std::vector<std::string>& names() const { return names_; }
  std::size_t size() const { return names_.size(); }

 private:
  std::vector<std::string> names_;
};

/** @brief One instruction of a compiled expression (stack machine). */
struct ExprInstr {
  enum class Code : std::uint8_t {
    CONST, VAR, NEG, NOT, ADD, SUB, MUL, DIV, POW, LT, LE, GT, GE, EQ, NE, AND, OR,
    FLOOR, CEIL, MIN, MAX, MOD, LOG2, SQRT, ABS, XOR, IF
  };
  Code code;
  int slot = 0;      ///< for VAR
  double value = 0;  ///< for CONST
};

/** @brief The value of one operator or function applied to its operands (a[0], a[1], a[2]), as Expr::eval
 *  computes it: `%` with the sign of the divisor, xor of integer parts, comparisons as 1 or 0. */
double apply_instr(ExprInstr::Code code, const double* args);

/** @brief A parsed expression: text kept for messages, code for evaluation. Constant subtrees are folded. */
class Expr {
 public:
  Expr() = default;
  /** @brief Evaluates with frame[slot] as each variable's value. */
  double eval(std::span<const double> frame) const;
  /** @brief True when the expression does not depend on any variable. */
  bool is_constant() const { return code_.size() == 1 && code_[0].code == ExprInstr::Code::CONST; }
  /** @brief True when the expression reads the given slot. */
  bool uses(int slot) const;
  /** @brief Largest slot read, or -1. */
  int max_slot() const;
  const std::string& text() const { return text_; }
  bool empty() const { return code_.empty(); }
  /** @brief The compiled instructions (postfix), for tools that translate expressions (the analytic model). */
  const std::vector<ExprInstr>& code() const { return code_; }

 private:
  friend Expr parse_expr(std::string_view, const SymbolTable&);
  std::string text_;
  std::vector<ExprInstr> code_;
  int max_depth_ = 0;
};

/** @brief Parses an expression over the table's names. Grammar (C-like precedence):
 *  `a ? b : c` is not supported; use if(c,a,b). Operators: || && == != < <= > >= + - * / % ^ (right
 *  associative) unary - !. Functions: floor ceil min max mod log2 sqrt abs xor if. `%` is mod.
 *  Throws SkeletonError (place = "col N") quoting the text on a syntax error or an unknown name. */
Expr parse_expr(std::string_view text, const SymbolTable& symbols);

}  // namespace mksim::skeletons
