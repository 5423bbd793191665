// Recursive-descent parser for skeleton expressions and the stack machine that evaluates them.
#include "skeletons/expr.hpp"

#include "skeletons/error.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <functional>
#include <optional>

namespace mksim::skeletons {

int SymbolTable::add(const std::string& name) {
  int s = find(name);
  if (s >= 0) return s;
  names_.push_back(name);
  return static_cast<int>(names_.size()) - 1;
}

int SymbolTable::find(std::string_view name) const {
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<int>(i);
  return -1;
}

namespace {

using Code = ExprInstr::Code;

struct Node {
  Code code;
  double value = 0;
  int slot = 0;
  int height = 1;  // of the subtree: fold, emit and the destructor recurse this deep
  std::vector<std::unique_ptr<Node>> kids;
};
using NodePtr = std::unique_ptr<Node>;

// An exact non-negative integer below 2^31 as int, else -1 (the domain of the topology functions).
int as_index(double v) {
  if (!(v >= 0 && v < 2147483648.0) || v != std::floor(v)) return -1;
  return static_cast<int>(v);
}

// An exact integer in int's range, else nullopt (coordinates may be negative: outside the grid).
std::optional<long long> as_int(double v) {
  if (!(std::fabs(v) < 2147483648.0) || v != std::floor(v)) return std::nullopt;
  return static_cast<long long>(v);
}

// dims(n, d, i): the last result is kept, since a peer expression asks for the same grid at every message.
double dims_entry(double n, double d, double i) {
  const int nn = as_index(n), nd = as_index(d), ni = as_index(i);
  if (nn < 1 || nd < 1 || nd > 64 || ni < 0 || ni >= nd) return std::nan("");
  thread_local int last_n = 0, last_d = 0;
  thread_local std::vector<int> last;
  if (nn != last_n || nd != last_d) {
    last = dims_create(nn, nd);
    last_n = nn;
    last_d = nd;
  }
  return last[static_cast<std::size_t>(ni)];
}

// cart_coord(r, i, n0, n1, n2): row-major (the last dimension varies fastest), as MPI_Cart_coords.
double cart_coord(const double* a) {
  const int r = as_index(a[0]), i = as_index(a[1]);
  long long n[3];
  for (int k = 0; k < 3; ++k) {
    const int v = as_index(a[2 + k]);
    if (v < 1) return std::nan("");
    n[k] = v;
  }
  if (r < 0 || i < 0 || i > 2 || r >= n[0] * n[1] * n[2]) return std::nan("");
  long long c[3] = {r / (n[1] * n[2]), (r / n[2]) % n[1], r % n[2]};
  return static_cast<double>(c[i]);
}

// cart_rank(c0, c1, c2, n0, n1, n2): -1 (MPI_PROC_NULL) when a coordinate is outside its dimension, as
// MPI_Cart_shift gives for a non-periodic dimension (periodic ones are wrapped by the caller with `%`).
double cart_rank(const double* a) {
  long long n[3];
  for (int k = 0; k < 3; ++k) {
    const int v = as_index(a[3 + k]);
    if (v < 1) return std::nan("");
    n[k] = v;
  }
  long long c[3];
  bool outside = false;
  for (int k = 0; k < 3; ++k) {
    const auto v = as_int(a[k]);
    if (!v) return std::nan("");
    c[k] = *v;
    outside = outside || c[k] < 0 || c[k] >= n[k];
  }
  if (outside) return -1;
  return static_cast<double>((c[0] * n[1] + c[1]) * n[2] + c[2]);
}

}  // namespace

std::vector<int> dims_create(int nnodes, int ndims) {
  if (nnodes < 1 || ndims < 1) return {};
  std::vector<int> factors;  // prime factors, increasing
  int n = nnodes;
  for (int p = 2; static_cast<long long>(p) * p <= n; ++p)
    while (n % p == 0) {
      factors.push_back(p);
      n /= p;
    }
  if (n > 1) factors.push_back(n);
  std::vector<int> bins(static_cast<std::size_t>(ndims), 1);
  for (auto f = factors.rbegin(); f != factors.rend(); ++f)  // largest first, into the smallest bin (first on ties)
    *std::min_element(bins.begin(), bins.end()) *= *f;
  std::sort(bins.begin(), bins.end(), std::greater<>());
  return bins;
}

int instr_arity(ExprInstr::Code c) {
  switch (c) {
    case Code::CONST: case Code::VAR: return 0;
    case Code::NEG: case Code::NOT: case Code::FLOOR: case Code::CEIL: case Code::LOG2: case Code::SQRT: case Code::ABS:
      return 1;
    case Code::IF: case Code::DIMS: return 3;
    case Code::CART_COORD: return 5;
    case Code::CART_RANK: return 6;
    default: return 2;
  }
}

double apply_instr(ExprInstr::Code c, const double* a) {
  switch (c) {
    case Code::NEG: return -a[0];
    case Code::NOT: return a[0] == 0 ? 1.0 : 0.0;
    case Code::ADD: return a[0] + a[1];
    case Code::SUB: return a[0] - a[1];
    case Code::MUL: return a[0] * a[1];
    case Code::DIV: return a[0] / a[1];
    case Code::POW: return std::pow(a[0], a[1]);
    case Code::LT: return a[0] < a[1];
    case Code::LE: return a[0] <= a[1];
    case Code::GT: return a[0] > a[1];
    case Code::GE: return a[0] >= a[1];
    case Code::EQ: return a[0] == a[1];
    case Code::NE: return a[0] != a[1];
    case Code::AND: return (a[0] != 0 && a[1] != 0) ? 1.0 : 0.0;
    case Code::OR: return (a[0] != 0 || a[1] != 0) ? 1.0 : 0.0;
    case Code::FLOOR: return std::floor(a[0]);
    case Code::CEIL: return std::ceil(a[0]);
    case Code::MIN: return std::min(a[0], a[1]);
    case Code::MAX: return std::max(a[0], a[1]);
    case Code::MOD: {  // mathematical modulo: result has the sign of the divisor (rank-1 mod P wraps)
      double r = std::fmod(a[0], a[1]);
      if (r != 0 && ((r < 0) != (a[1] < 0))) r += a[1];
      return r;
    }
    case Code::LOG2: return std::log2(a[0]);
    case Code::SQRT: return std::sqrt(a[0]);
    case Code::ABS: return std::fabs(a[0]);
    case Code::XOR:  // of the integer parts; outside int64 (or NaN) there are no bits: NaN, which checks reject
      if (!(std::fabs(a[0]) < 0x1p63 && std::fabs(a[1]) < 0x1p63)) return std::nan("");
      return static_cast<double>(static_cast<std::int64_t>(a[0]) ^ static_cast<std::int64_t>(a[1]));
    case Code::IF: return a[0] != 0 ? a[1] : a[2];
    case Code::DIMS: return dims_entry(a[0], a[1], a[2]);
    case Code::CART_COORD: return cart_coord(a);
    case Code::CART_RANK: return cart_rank(a);
    case Code::CONST:
    case Code::VAR: break;
  }
  return 0;
}

namespace {

double apply(Code c, const double* a) { return apply_instr(c, a); }

struct Function {
  const char* name;
  Code code;
  int arity;
};
constexpr Function FUNCTIONS[] = {{"floor", Code::FLOOR, 1}, {"ceil", Code::CEIL, 1}, {"min", Code::MIN, 2},
                                  {"max", Code::MAX, 2},     {"mod", Code::MOD, 2},   {"log2", Code::LOG2, 1},
                                  {"sqrt", Code::SQRT, 1},   {"abs", Code::ABS, 1},   {"xor", Code::XOR, 2},
                                  {"if", Code::IF, 3},       {"dims", Code::DIMS, 3}, {"cart_coord", Code::CART_COORD, 5},
                                  {"cart_rank", Code::CART_RANK, 6}};

// Bounds on the recursion of the parser (nesting of parentheses, calls, unary operators, powers) and of the
// tree walks (a long chain of binary operators), so that hostile text is an error, not a stack overflow.
constexpr int MAX_NESTING = 256;
constexpr int MAX_HEIGHT = 4096;

class Parser {
 public:
  Parser(std::string_view text, const SymbolTable& symbols) : s_(text), symbols_(symbols) {}

  NodePtr parse() {
    NodePtr n = parse_or();
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw SkeletonError("", "", "in expression \"" + std::string(s_) + "\" at col " + std::to_string(pos_ + 1) +
                                    ": " + what);
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view tok) {
    skip_ws();
    if (s_.substr(pos_, tok.size()) == tok) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }
  NodePtr make(Code c, NodePtr a, NodePtr b = nullptr) const {
    auto n = std::make_unique<Node>();
    n->code = c;
    n->kids.push_back(std::move(a));
    if (b) n->kids.push_back(std::move(b));
    return checked(std::move(n));
  }
  NodePtr checked(NodePtr n) const {
    for (const auto& k : n->kids) n->height = std::max(n->height, k->height + 1);
    if (n->height > MAX_HEIGHT) fail("more than " + std::to_string(MAX_HEIGHT) + " operators deep");
    return n;
  }
  NodePtr parse_or() {
    NodePtr l = parse_and();
    while (eat("||")) l = make(Code::OR, std::move(l), parse_and());
    return l;
  }
  NodePtr parse_and() {
    NodePtr l = parse_cmp();
    while (eat("&&")) l = make(Code::AND, std::move(l), parse_cmp());
    return l;
  }
  NodePtr parse_cmp() {
    NodePtr l = parse_add();
    for (;;) {
      if (eat("==")) l = make(Code::EQ, std::move(l), parse_add());
      else if (eat("!=")) l = make(Code::NE, std::move(l), parse_add());
      else if (eat("<=")) l = make(Code::LE, std::move(l), parse_add());
      else if (eat(">=")) l = make(Code::GE, std::move(l), parse_add());
      else if (eat("<")) l = make(Code::LT, std::move(l), parse_add());
      else if (eat(">")) l = make(Code::GT, std::move(l), parse_add());
      else return l;
    }
  }
  NodePtr parse_add() {
    NodePtr l = parse_mul();
    for (;;) {
      if (eat("+")) l = make(Code::ADD, std::move(l), parse_mul());
      else if (eat("-")) l = make(Code::SUB, std::move(l), parse_mul());
      else return l;
    }
  }
  NodePtr parse_mul() {
    NodePtr l = parse_unary();
    for (;;) {
      if (eat("*")) l = make(Code::MUL, std::move(l), parse_unary());
      else if (eat("/")) l = make(Code::DIV, std::move(l), parse_unary());
      else if (eat("%")) l = make(Code::MOD, std::move(l), parse_unary());
      else return l;
    }
  }
  NodePtr parse_unary() {  // every recursion of the parser passes here
    if (++nesting_ > MAX_NESTING) fail("nested more than " + std::to_string(MAX_NESTING) + " levels deep");
    NodePtr n = parse_unary_op();
    --nesting_;
    return n;
  }
  NodePtr parse_unary_op() {
    if (eat("-")) return make(Code::NEG, parse_unary());
    if (eat("+")) return parse_unary();
    skip_ws();
    if (s_.substr(pos_, 2) != "!=" && eat("!")) return make(Code::NOT, parse_unary());
    return parse_pow();
  }
  NodePtr parse_pow() {
    NodePtr base = parse_primary();
    if (eat("^")) return make(Code::POW, std::move(base), parse_unary());  // right associative, -x binds looser
    return base;
  }
  NodePtr parse_primary() {
    skip_ws();
    if (pos_ >= s_.size()) fail("expression ends too early");
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      NodePtr n = parse_or();
      if (!eat(")")) fail("expected ')'");
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return parse_number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return parse_name();
    fail("unexpected '" + std::string(1, c) + "'");
  }
  NodePtr parse_number() {
    std::size_t start = pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) ++pos_;
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      std::size_t save = pos_++;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      } else {
        pos_ = save;
      }
    }
    std::string tok(s_.substr(start, pos_ - start));
    char* end = nullptr;
    double v = std::strtod(tok.c_str(), &end);
    if (end != tok.c_str() + tok.size()) {
      pos_ = start;
      fail("bad number '" + tok + "'");
    }
    auto n = std::make_unique<Node>();
    n->code = Code::CONST;
    n->value = v;
    return n;
  }
  NodePtr parse_name() {
    std::size_t start = pos_;
    // a name may contain dots between its parts (`row.rank`: a communicator's rank, format v3)
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
                                (s_[pos_] == '.' && pos_ + 1 < s_.size() &&
                                 (std::isalpha(static_cast<unsigned char>(s_[pos_ + 1])) || s_[pos_ + 1] == '_'))))
      ++pos_;
    std::string name(s_.substr(start, pos_ - start));
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '(') {
      const Function* f = nullptr;
      for (const auto& fn : FUNCTIONS)
        if (name == fn.name) f = &fn;
      if (!f) {
        pos_ = start;
        fail("unknown function '" + name + "'");
      }
      ++pos_;
      auto n = std::make_unique<Node>();
      n->code = f->code;
      for (int i = 0; i < f->arity; ++i) {
        if (i > 0 && !eat(",")) fail(std::string(f->name) + " takes " + std::to_string(f->arity) + " arguments");
        n->kids.push_back(parse_or());
      }
      if (!eat(")")) fail(std::string(f->name) + " takes " + std::to_string(f->arity) + " arguments");
      return checked(std::move(n));
    }
    int slot = symbols_.find(name);
    if (slot < 0 && name == "PROC_NULL") {  // MPI_PROC_NULL as a peer: the message is not sent (format v3)
      auto n = std::make_unique<Node>();
      n->code = Code::CONST;
      n->value = -1;
      return n;
    }
    if (slot < 0) {
      pos_ = start;
      std::string known;
      for (const auto& k : symbols_.names()) known += (known.empty() ? "" : ", ") + k;
      fail("unknown name '" + name + "' (known: " + known + ")");
    }
    auto n = std::make_unique<Node>();
    n->code = Code::VAR;
    n->slot = slot;
    return n;
  }

  std::string_view s_;
  const SymbolTable& symbols_;
  std::size_t pos_ = 0;
  int nesting_ = 0;
};

void fold(Node& n) {
  bool all_const = !n.kids.empty();
  for (auto& k : n.kids) {
    fold(*k);
    all_const = all_const && k->code == Code::CONST;
  }
  if (!all_const) return;
  double args[6] = {0, 0, 0, 0, 0, 0};
  for (std::size_t i = 0; i < n.kids.size(); ++i) args[i] = n.kids[i]->value;
  n.value = apply(n.code, args);
  n.code = Code::CONST;
  n.kids.clear();
}

int emit(const Node& n, std::vector<ExprInstr>& out) {
  int depth = 0;
  int i = 0;
  for (const auto& k : n.kids) depth = std::max(depth, i++ + emit(*k, out));
  out.push_back(ExprInstr{n.code, n.slot, n.value});
  return std::max(depth, 1);
}

}  // namespace

Expr parse_expr(std::string_view text, const SymbolTable& symbols) {
  Parser p(text, symbols);
  NodePtr root = p.parse();
  fold(*root);
  Expr e;
  e.text_ = std::string(text);
  e.max_depth_ = emit(*root, e.code_);
  return e;
}

double Expr::eval(std::span<const double> frame) const {
  if (code_.size() == 1) {  // the common cases: a constant or one variable
    const auto& in = code_[0];
    return in.code == Code::CONST ? in.value : frame[in.slot];
  }
  double stack[64] = {};  // (every slot is written before it is read; zeroed so that the compiler sees it too)
  std::vector<double> big;
  if (max_depth_ > 64) big.resize(max_depth_);
  double* st = max_depth_ > 64 ? big.data() : stack;
  int sp = 0;
  for (const auto& in : code_) {
    switch (in.code) {
      case Code::CONST: st[sp++] = in.value; break;
      case Code::VAR: st[sp++] = frame[in.slot]; break;
      case Code::NEG: case Code::NOT: case Code::FLOOR: case Code::CEIL: case Code::LOG2: case Code::SQRT:
      case Code::ABS:
        st[sp - 1] = apply(in.code, &st[sp - 1]);
        break;
      case Code::IF:
        sp -= 2;
        st[sp - 1] = apply(in.code, &st[sp - 1]);
        break;
      case Code::DIMS: case Code::CART_COORD: case Code::CART_RANK:
        sp -= instr_arity(in.code) - 1;
        st[sp - 1] = apply(in.code, &st[sp - 1]);
        break;
      default:
        --sp;
        st[sp - 1] = apply(in.code, &st[sp - 1]);
    }
  }
  return st[0];
}

bool Expr::uses(int slot) const {
  return std::any_of(code_.begin(), code_.end(),
                     [slot](const ExprInstr& i) { return i.code == Code::VAR && i.slot == slot; });
}

int Expr::max_slot() const {
  int m = -1;
  for (const auto& i : code_)
    if (i.code == Code::VAR) m = std::max(m, i.slot);
  return m;
}

}  // namespace mksim::skeletons
