// Expression parser and evaluator: precedence, functions, folding, and error messages.
#include "skeletons/error.hpp"
#include "skeletons/expr.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace mksim::skeletons;

namespace {

double ev(const std::string& text, std::vector<double> frame = {16, 5}) {
  SymbolTable t;
  t.add("P");
  t.add("rank");
  return parse_expr(text, t).eval(frame);
}

}  // namespace

TEST(Expr, Precedence) {
  EXPECT_EQ(ev("1 + 2 * 3"), 7);
  EXPECT_EQ(ev("(1 + 2) * 3"), 9);
  EXPECT_EQ(ev("2 ^ 3 ^ 2"), 512);  // right associative
  EXPECT_EQ(ev("-2 ^ 2"), -4);
  EXPECT_EQ(ev("P / 2 - 1"), 7);
  EXPECT_EQ(ev("rank < P / 2 && rank != 0"), 1);
  EXPECT_EQ(ev("rank > 3 || 0"), 1);
  EXPECT_EQ(ev("!(rank == 5)"), 0);
  EXPECT_EQ(ev("1 - 2 - 3"), -4);
  EXPECT_EQ(ev("24 / 4 / 2"), 3);
}

TEST(Expr, FunctionsAndModulo) {
  EXPECT_EQ(ev("floor(7 / 2)"), 3);
  EXPECT_EQ(ev("ceil(7 / 2)"), 4);
  EXPECT_EQ(ev("min(rank, 3) + max(rank, 3)"), 8);
  EXPECT_EQ(ev("log2(P)"), 4);
  EXPECT_EQ(ev("sqrt(P)"), 4);
  EXPECT_EQ(ev("(rank - 6) % P"), 15);  // wraps like a ring neighbour
  EXPECT_EQ(ev("mod(rank + 12, P)"), 1);
  EXPECT_EQ(ev("xor(rank, 1)"), 4);
  EXPECT_EQ(ev("if(rank == 5, 10, 20)"), 10);
  EXPECT_EQ(ev("abs(-3)"), 3);
  EXPECT_EQ(ev("1.5e3"), 1500);
}

TEST(Expr, ConstantsFoldAndVariablesDoNot) {
  SymbolTable t;
  t.add("P");
  t.add("rank");
  EXPECT_TRUE(parse_expr("2 * 1024 + floor(3.5)", t).is_constant());
  Expr e = parse_expr("rank + 2 * 3", t);
  EXPECT_FALSE(e.is_constant());
  EXPECT_TRUE(e.uses(1));
  EXPECT_FALSE(e.uses(0));
  EXPECT_EQ(e.max_slot(), 1);
}

TEST(Expr, DeepExpressionsEvaluate) {
  std::string s = "1";
  for (int i = 0; i < 100; ++i) s = "(rank + " + s + ")";
  EXPECT_EQ(ev(s), 501);
}

TEST(Expr, ErrorsQuoteTextAndColumn) {
  try {
    ev("rank + Nx * 2");
    FAIL() << "no error";
  } catch (const SkeletonError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("\"rank + Nx * 2\""), std::string::npos) << m;
    EXPECT_NE(m.find("col 8"), std::string::npos) << m;
    EXPECT_NE(m.find("unknown name 'Nx'"), std::string::npos) << m;
  }
  EXPECT_THROW(ev("1 +"), SkeletonError);
  EXPECT_THROW(ev("(1 + 2"), SkeletonError);
  EXPECT_THROW(ev("max(1)"), SkeletonError);
  EXPECT_THROW(ev("foo(1)"), SkeletonError);
  EXPECT_THROW(ev("1 2"), SkeletonError);
  EXPECT_THROW(ev("rank $ 2"), SkeletonError);
  EXPECT_THROW(ev(""), SkeletonError);
}
