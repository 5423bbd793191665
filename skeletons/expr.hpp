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
    FLOOR, CEIL, MIN, MAX, MOD, LOG2, SQRT, ABS, XOR, IF,
    DIMS,        ///< dims(n, d, i): entry i of MPI_Dims_create(n, d) (format v3)
    CART_COORD,  ///< cart_coord(r, i, n0, n1, n2): coordinate i of rank r in a row-major n0 x n1 x n2 grid
    CART_RANK    ///< cart_rank(c0, c1, c2, n0, n1, n2): the rank at those coordinates, -1 (PROC_NULL) outside
  };
  Code code;
  int slot = 0;      ///< for VAR
  double value = 0;  ///< for CONST
};

/** @brief The value of one operator or function applied to its operands (a[0] .. a[arity-1]), as Expr::eval
 *  computes it: `%` with the sign of the divisor, xor of integer parts, comparisons as 1 or 0. */
double apply_instr(ExprInstr::Code code, const double* args);

/** @brief Number of operands of an instruction (0 for CONST and VAR). */
int instr_arity(ExprInstr::Code code);

/** @brief MPI_Dims_create(nnodes, ndims) with every entry free, as OpenMPI 4.1 computes it (the prime factors
 *  of nnodes, largest first, each multiplied into the currently smallest dimension, then sorted in
 *  non-increasing order; checked against the real call for nnodes <= 4096 and ndims = 1..4). Empty when
 *  nnodes < 1 or ndims < 1. */
std::vector<int> dims_create(int nnodes, int ndims);

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
 *  associative) unary - !. Functions: floor ceil min max mod log2 sqrt abs xor if dims cart_coord cart_rank.
 *  `%` is mod. Names may contain dots (`row.rank`); `PROC_NULL` is -1 unless the table has that name.
 *  Throws SkeletonError (place = "col N") quoting the text on a syntax error or an unknown name. */
Expr parse_expr(std::string_view text, const SymbolTable& symbols);

}  // namespace mksim::skeletons
