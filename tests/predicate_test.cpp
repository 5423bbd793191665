// Rank-group predicates: ATM2D, pipeline and PGE2 groups found from small runs, disjunctions,
// ambiguity with the run that resolves it, failures that show the members, the partition check, speed.
#include "skeletons/builder/predicate.hpp"

#include "skeletons/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>

using namespace mksim::skeletons::builder;

namespace {

using Truth = std::function<bool(int P, int rank)>;

int grid_px(int P) { return 1 << static_cast<int>(std::floor(std::log2(P) / 2)); }

// ATM2D coordinates on the Px x Py grid of the skeleton (atm2d.json `let`).
struct Grid {
  int px, py, x, y;
  Grid(int P, int rank) : px(grid_px(P)), py(P / grid_px(P)), x(rank % px), y(rank / px) {}
};

std::vector<RunLabels> label(const std::vector<int>& Ps, const Truth& truth, const Vars& params = {}) {
  std::vector<RunLabels> runs;
  for (int P : Ps) {
    RunLabels r{params, std::vector<bool>(static_cast<std::size_t>(P))};
    r.vars["P"] = P;
    for (int k = 0; k < P; ++k) r.member[static_cast<std::size_t>(k)] = truth(P, k);
    runs.push_back(r);
  }
  return runs;
}

std::vector<bool> truth_at(int P, const Truth& truth) {
  std::vector<bool> m(static_cast<std::size_t>(P));
  for (int k = 0; k < P; ++k) m[static_cast<std::size_t>(k)] = truth(P, k);
  return m;
}

// The predicate reproduces every run's labels when read back with the skeleton expression parser.
void expect_fits(const GroupPredicate& g, const std::vector<RunLabels>& runs) {
  ASSERT_TRUE(g.found) << g.message;
  for (const auto& r : runs)
    EXPECT_EQ(predicate_members(g.text, r.vars), r.member) << g.text << " at " << describe_vars(r.vars);
}

bool has_alternative(const GroupPredicate& g, const std::string& text) {
  return std::any_of(g.alternatives.begin(), g.alternatives.end(), [&](const Alternative& a) { return a.text == text; });
}

const Truth NORTH = [](int P, int k) { return Grid(P, k).y > 0; };
const Truth EAST = [](int P, int k) {
  const Grid g(P, k);
  return g.x == g.px - 1;
};
const Truth RED_INTERIOR = [](int P, int k) {
  const Grid g(P, k);
  return (g.x + g.y) % 2 == 0 && g.x > 0 && g.x < g.px - 1 && g.y > 0 && g.y < g.py - 1;
};

}  // namespace

TEST(Predicate, Atm2dNorthNeighbourAndTheRunThatConfirmsIt) {
  const auto runs = label({4, 8, 16}, NORTH);
  const GroupPredicate g = find_group_predicate(runs);
  expect_fits(g, runs);
  EXPECT_EQ(g.text, "rank >= 2^floor(log2(P)/2)");
  // floor(sqrt(P)) equals Px at 4, 8 and 16: the runs cannot tell them apart; P = 32 can.
  ASSERT_TRUE(has_alternative(g, "rank >= floor(sqrt(P))")) << g.message;
  ASSERT_TRUE(g.resolve_at_pow2.has_value());
  EXPECT_EQ(g.resolve_at_pow2->at("P"), 32);
  EXPECT_NE(g.message.find("P=32"), std::string::npos) << g.message;
  ASSERT_EQ(g.resolve_runs.size(), 1U);
  EXPECT_EQ(g.resolve_runs.front(), (Vars{{"P", 32}}));
  // Semantically equal forms (floor(rank / Px) > 0, rank > Px - 1) are not reported as alternatives.
  EXPECT_FALSE(has_alternative(g, "floor(rank / 2^floor(log2(P)/2)) > 0"));
  // With P = 32 seen, it is unique.
  const GroupPredicate g32 = find_group_predicate(label({4, 8, 16, 32}, NORTH));
  EXPECT_EQ(g32.text, g.text);
  EXPECT_TRUE(g32.alternatives.empty()) << g32.message;
}

TEST(Predicate, Atm2dEastBoundaryExtrapolates) {
  const auto runs = label({4, 8, 16}, EAST);
  const GroupPredicate g = find_group_predicate(runs);
  expect_fits(g, runs);
  EXPECT_EQ(g.text, "rank % 2^floor(log2(P)/2) == 2^floor(log2(P)/2) - 1");
  for (int P : {32, 64, 128, 1024}) EXPECT_EQ(predicate_members(g.text, {{"P", P}}), truth_at(P, EAST)) << P;
}

TEST(Predicate, Atm2dRedInteriorAmbiguousFromThreeRunsExactFromFive) {
  // At P = 4 and 8 there is no interior; P = 16 has two red interior ranks: many predicates fit.
  const auto few = label({4, 8, 16}, RED_INTERIOR);
  const GroupPredicate g = find_group_predicate(few);
  expect_fits(g, few);
  ASSERT_FALSE(g.alternatives.empty());
  ASSERT_TRUE(g.resolve_at.has_value());
  const Alternative& a = g.alternatives.front();
  EXPECT_NE(predicate_members(g.text, a.differs_at), predicate_members(a.text, a.differs_at)) << g.text << " vs " << a.text;

  const auto more = label({4, 8, 16, 32, 64}, RED_INTERIOR);
  const GroupPredicate h = find_group_predicate(more);
  expect_fits(h, more);
  for (int P : {128, 256, 1024}) EXPECT_EQ(predicate_members(h.text, {{"P", P}}), truth_at(P, RED_INTERIOR)) << h.text << " at P=" << P;
}

TEST(Predicate, PipelineEndsAndMiddle) {
  const std::vector<int> Ps{3, 4, 8, 16};
  const auto first = label(Ps, [](int, int k) { return k == 0; });
  const auto last = label(Ps, [](int P, int k) { return k == P - 1; });
  const auto middle = label(Ps, [](int P, int k) { return k > 0 && k < P - 1; });
  const GroupPredicate f = find_group_predicate(first), l = find_group_predicate(last), m = find_group_predicate(middle);
  expect_fits(f, first);
  expect_fits(l, last);
  expect_fits(m, middle);
  EXPECT_EQ(f.text, "rank == 0");
  EXPECT_EQ(l.text, "rank == P - 1");
  EXPECT_EQ(m.text, "rank > 0 && rank < P - 1");
  EXPECT_TRUE(f.alternatives.empty()) << f.message;
  EXPECT_TRUE(l.alternatives.empty()) << l.message;
  EXPECT_TRUE(m.alternatives.empty()) << m.message;
  EXPECT_EQ(check_partition({f.text, l.text, m.text}, {{{"P", 3}}, {{"P", 64}}, {{"P", 1000}}}), std::nullopt);
}

TEST(Predicate, Pge2FirstHalfWithParameters) {
  const auto runs = label({4, 8, 16}, [](int P, int k) { return k < P / 2; }, {{"M", 64}, {"N", 1024}, {"K", 8}});
  const GroupPredicate g = find_group_predicate(runs);
  expect_fits(g, runs);
  EXPECT_EQ(g.text, "rank < P/2");
  EXPECT_TRUE(g.alternatives.empty()) << g.message;
}

TEST(Predicate, ParameterInThePredicate) {
  std::vector<RunLabels> runs;
  for (auto [P, K] : {std::pair{8, 2}, {8, 5}, {16, 3}}) {
    auto r = label({P}, [K](int, int k) { return k < K; }, {{"K", K}});
    runs.push_back(r.front());
  }
  const GroupPredicate g = find_group_predicate(runs);
  expect_fits(g, runs);
  EXPECT_EQ(g.text, "rank < K");
}

TEST(Predicate, DisjunctionOfPipelineEnds) {
  const auto runs = label({4, 8, 16}, [](int P, int k) { return k == 0 || k == P - 1; });
  const GroupPredicate g = find_group_predicate(runs);
  expect_fits(g, runs);
  EXPECT_EQ(g.text, "rank == 0 || rank == P - 1");
}

TEST(Predicate, DisjunctionOfGridBoundaries) {
  // West or north boundary: x == 0 || y == 0 on the grid.
  const Truth t = [](int P, int k) {
    const Grid g(P, k);
    return g.x == 0 || g.y == 0;
  };
  const auto runs = label({4, 8, 16, 32, 64}, t);
  const GroupPredicate g = find_group_predicate(runs);
  expect_fits(g, runs);
  EXPECT_NE(g.text.find("||"), std::string::npos) << g.text;
  for (int P : {128, 256}) EXPECT_EQ(predicate_members(g.text, {{"P", P}}), truth_at(P, t)) << g.text;
}

TEST(Predicate, NoFitNamesRunsAndMemberRanges) {
  // A scattered set: ranks 0-1, 7 at P = 8 and 0-1, 7, 13-14 at P = 16.
  const auto runs = label({8, 16}, [](int, int k) { return (k * 7919) % 13 < 3; });
  const GroupPredicate g = find_group_predicate(runs);
  EXPECT_FALSE(g.found) << g.text;
  EXPECT_TRUE(g.text.empty());
  EXPECT_NE(g.message.find("no predicate fits"), std::string::npos) << g.message;
  EXPECT_NE(g.message.find("P=8: 0-1, 7;"), std::string::npos) << g.message;
  EXPECT_NE(g.message.find("P=16: 0-1, 7, 13-14"), std::string::npos) << g.message;
  // Raising the limits is what it would take; the message says how many atoms.
  EXPECT_NE(g.message.find("up to 6 atoms"), std::string::npos) << g.message;
}

TEST(Predicate, EmptyGroupIsAFailure) {
  const GroupPredicate g = find_group_predicate(label({4, 8}, [](int, int) { return false; }));
  EXPECT_FALSE(g.found);
  EXPECT_NE(g.message.find("no member"), std::string::npos) << g.message;
}

TEST(Predicate, WholeRunIsOne) {
  const auto runs = label({4, 8}, [](int, int) { return true; });
  const GroupPredicate g = find_group_predicate(runs);
  expect_fits(g, runs);
  EXPECT_EQ(g.text, "1");
}

TEST(Predicate, AmbiguousFromOneRunReportsAlternativesAndWhereTheyDiffer) {
  const auto runs = label({4}, [](int, int k) { return k < 2; });
  const GroupPredicate g = find_group_predicate(runs);
  expect_fits(g, runs);
  std::vector<std::string> all{g.text};
  for (const auto& a : g.alternatives) all.push_back(a.text);
  for (const char* want : {"rank < 2", "rank < P/2", "rank < 2^floor(log2(P)/2)"})
    EXPECT_NE(std::find(all.begin(), all.end(), want), all.end()) << want << " missing; " << g.message;
  ASSERT_TRUE(g.resolve_at.has_value());
  ASSERT_TRUE(g.resolve_at_pow2.has_value());
  EXPECT_NE(g.resolve_at_pow2->at("P"), 4);  // unseen
  EXPECT_NE(g.message.find("ambiguous"), std::string::npos);
  // At the resolving run, the chosen predicate and at least one alternative select different ranks.
  for (const auto& at : {*g.resolve_at, *g.resolve_at_pow2}) {
    const auto mine = predicate_members(g.text, at);
    EXPECT_TRUE(std::any_of(g.alternatives.begin(), g.alternatives.end(),
                            [&](const Alternative& a) { return predicate_members(a.text, at) != mine; }))
        << describe_vars(at);
  }
  for (const auto& a : g.alternatives)
    EXPECT_NE(predicate_members(g.text, a.differs_at), predicate_members(a.text, a.differs_at)) << a.text;
  // Tracing at the suggested runs tells every alternative from the chosen predicate.
  ASSERT_FALSE(g.resolve_runs.empty());
  for (const auto& a : g.alternatives)
    EXPECT_TRUE(std::any_of(g.resolve_runs.begin(), g.resolve_runs.end(), [&](const Vars& at) {
      return predicate_members(g.text, at) != predicate_members(a.text, at);
    })) << a.text;
}

TEST(Predicate, PartitionCheckReportsFirstViolation) {
  const std::vector<Vars> runs{{{"P", 4}}, {{"P", 8}}};
  EXPECT_EQ(check_partition({"rank < P/2", "rank >= P/2"}, runs), std::nullopt);

  const auto overlap = check_partition({"rank < P/2", "rank >= P/2", "rank == 3"}, runs);
  ASSERT_TRUE(overlap.has_value());
  EXPECT_EQ(overlap->run, 0U);
  EXPECT_EQ(overlap->rank, 3);
  EXPECT_EQ(overlap->groups, (std::vector<std::size_t>{1, 2}));
  EXPECT_NE(overlap->message.find("P=4: rank 3 is in 2 groups"), std::string::npos) << overlap->message;

  const auto gap = check_partition({"rank < 2", "rank >= P/2"}, runs);
  ASSERT_TRUE(gap.has_value());
  EXPECT_EQ(gap->run, 1U);
  EXPECT_EQ(gap->rank, 2);
  EXPECT_TRUE(gap->groups.empty());
  EXPECT_NE(gap->message.find("P=8: rank 2 is in no group"), std::string::npos) << gap->message;

  EXPECT_THROW(check_partition({"rank < Q"}, runs), mksim::skeletons::SkeletonError);
}

TEST(Predicate, DescribeRanksAndVars) {
  std::vector<bool> m(16);
  for (int k : {0, 1, 2, 3, 8, 10, 11, 12, 13, 14, 15}) m[static_cast<std::size_t>(k)] = true;
  EXPECT_EQ(describe_ranks(m), "0-3, 8, 10-15");
  EXPECT_EQ(describe_ranks({false, true, true, false}), "1-2");
  EXPECT_EQ(describe_ranks({false, false}), "none");
  EXPECT_EQ(describe_vars({{"P", 8}, {"K", 4}, {"x", 0.5}}), "P=8, K=4, x=0.5");
}

TEST(Predicate, BadInputIsRejected) {
  EXPECT_THROW(find_group_predicate({}), std::invalid_argument);
  EXPECT_THROW(find_group_predicate({RunLabels{{{"P", 4}}, {true, false}}}), std::invalid_argument);
  EXPECT_THROW(find_group_predicate({RunLabels{{{"P", 2}, {"K", 1}}, {true, false}}, RunLabels{{{"P", 2}}, {true, false}}}),
               std::invalid_argument);
}

TEST(Predicate, TenRunsUpToThousandRanks) {  // (speed: bench/skeleton_build.py times whole builds)
  const std::vector<int> Ps{16, 24, 32, 48, 64, 128, 192, 256, 512, 1024};
  const Truth corner = [](int P, int k) { return k == 0 || k == P - 1; };
  const Truth scattered = [](int, int k) { return (k * 7919) % 13 < 3; };
  for (const auto& [name, truth] : std::vector<std::pair<std::string, Truth>>{
           {"north", NORTH}, {"east", EAST}, {"red interior", RED_INTERIOR}, {"corners", corner}, {"no fit", scattered}}) {
    const auto runs = label(Ps, truth);
    const GroupPredicate g = find_group_predicate(runs);
    if (name == "no fit") {
      EXPECT_FALSE(g.found) << g.text;
    } else {
      expect_fits(g, runs);
    }
    std::printf("%-14s %s\n", name.c_str(), g.found ? g.text.c_str() : "(no fit)");
  }
}

// ---- grids other than Px x Py (issue 23): tried when no predicate fits on Px x Py ----

namespace {

// MPI_Dims_create(P, n) for the P these tests use (balanced, non-increasing), written out by hand.
std::vector<int> dims_of(int P, int n) {
  static const std::map<std::pair<int, int>, std::vector<int>> table{
      {{4, 2}, {2, 2}},       {{8, 2}, {4, 2}},       {{16, 2}, {4, 4}},       {{32, 2}, {8, 4}},
      {{64, 2}, {8, 8}},      {{128, 2}, {16, 8}},    {{8, 3}, {2, 2, 2}},     {{12, 3}, {3, 2, 2}},
      {{18, 3}, {3, 3, 2}},   {{27, 3}, {3, 3, 3}},   {{64, 3}, {4, 4, 4}},    {{48, 3}, {4, 4, 3}},
      {{125, 3}, {5, 5, 5}},  {{2, 3}, {2, 1, 1}},    {{4, 3}, {2, 2, 1}},     {{16, 3}, {4, 2, 2}},
      {{1024, 3}, {16, 8, 8}}};
  return table.at({P, n});
}

// NPB LU: xdim = 2^ceil(k/2) ranks along i, varying fastest (rank = row + xdim col); the interior rows
// exchange with both north and south. Px = 2^floor(k/2) is the other side: no atom on it fits at P = 8.
const Truth LU_INTERIOR_ROW = [](int P, int k) {
  const int xdim = dims_of(P, 2)[0], row = k % xdim;
  return row > 0 && row < xdim - 1;
};

}  // namespace

TEST(PredicateGrid, NpbLuInteriorRowsOnTheLongSideVaryingFastest) {
  const auto runs = label({4, 8, 16}, LU_INTERIOR_ROW);
  const GroupPredicate g = find_group_predicate(runs);
  expect_fits(g, runs);
  EXPECT_NE(g.text.find("rank % dims(P, 2, 0)"), std::string::npos) << g.text;
  for (int P : {32, 64, 128}) EXPECT_EQ(predicate_members(g.text, {{"P", P}}), truth_at(P, LU_INTERIOR_ROW)) << g.text << " P=" << P;
}

TEST(PredicateGrid, NpbCgOffDiagonalOfANonSquareGrid) {
  // rank = r npcols + c, npcols = dims(P, 2, 0) >= nprows; the diagonal (partner = itself): c / ratio == r.
  const Truth off_diagonal = [](int P, int k) {
    const auto d = dims_of(P, 2);
    const int r = k / d[0], c = k % d[0], ratio = d[0] / d[1];
    return c / ratio != r;
  };
  const auto runs = label({4, 8, 16}, off_diagonal);
  const GroupPredicate g = find_group_predicate(runs);
  expect_fits(g, runs);
  EXPECT_NE(g.text.find("!= 0"), std::string::npos) << g.text;
  for (int P : {32, 64, 128}) EXPECT_EQ(predicate_members(g.text, {{"P", P}}), truth_at(P, off_diagonal)) << g.text << " P=" << P;
}

TEST(PredicateGrid, TopFaceOfAThreeDimensionalCartesianGrid) {
  // MPI_Cart_create of MPI_Dims_create(P, 3), row-major: the ranks on the high face of dimension 0 (a
  // non-periodic grid: no neighbour above). Runs at non-cubes too, so the sides must be dims(P, 3, d).
  const Truth top = [](int P, int k) {
    const auto d = dims_of(P, 3);
    return k / (d[1] * d[2]) == d[0] - 1;
  };
  const auto runs = label({8, 12, 18, 27}, top);
  // At these P the face is also a row band of MPI_Dims_create(P, 2)'s grid (4 x 2, 4 x 3, 6 x 3, 9 x 3):
  // the runs cannot tell; the 2-D reading is chosen and the 3-D one reported where they differ.
  const GroupPredicate blind = find_group_predicate(runs);
  expect_fits(blind, runs);
  ASSERT_FALSE(blind.alternatives.empty()) << blind.text;
  EXPECT_NE(blind.message.find("on another grid"), std::string::npos) << blind.message;
  EXPECT_NE(predicate_members(blind.text, blind.alternatives.front().differs_at),
            predicate_members(blind.alternatives.front().text, blind.alternatives.front().differs_at));
  // The program made a 3-D grid (MPI_Dims_create(P, 3) or MPI_Cart_create with 3 dimensions): that one.
  PredicateOptions three;
  three.grid_ndims = {3};
  const GroupPredicate g = find_group_predicate(runs, three);
  expect_fits(g, runs);
  EXPECT_NE(g.text.find("cart_coord(rank, 0, dims(P, 3, 0)"), std::string::npos) << g.text;
  for (int P : {48, 64, 125}) EXPECT_EQ(predicate_members(g.text, {{"P", P}}), truth_at(P, top)) << g.text << " P=" << P;
}

TEST(PredicateGrid, AConditionOnPAloneNonSquareGrid) {
  // Every rank at P = 8 and 32 (4 x 2, 8 x 4), none at 4, 16, 64: a branch taken only on a non-square grid.
  const Truth non_square = [](int P, int) { return dims_of(P, 2)[0] != dims_of(P, 2)[1]; };
  const auto runs = label({4, 8, 16}, non_square);
  const GroupPredicate g = find_group_predicate(runs);
  expect_fits(g, runs);
  EXPECT_NE(g.text.find("dims(P, 2, 0)"), std::string::npos) << g.text;
  for (int P : {32, 64, 128}) EXPECT_EQ(predicate_members(g.text, {{"P", P}}), truth_at(P, non_square)) << g.text << " P=" << P;
}

TEST(PredicateGrid, AConditionOnPAloneTheThreeDimensionalGridHasAThirdSide) {
  // LAMMPS' exchanges along an axis run only when the grid has more than one rank along it: traced at P = 2, 4, 8
  // (MPI_Dims_create(P, 3) = 2x1x1, 2x2x1, 2x2x2) the third axis' ranks are all of P = 8's and none of the others'.
  // In a program that made a 3-D grid that is "dims(P, 3, 2) > 1", true at 16, 64, 1024; the 2-D side comparison
  // "dims(P, 2, 0) > dims(P, 2, 1)" (2 > 1, 2 = 2, 4 > 2) fits the runs too but is false at 16 and 64.
  const Truth third = [](int P, int) { return dims_of(P, 3)[2] > 1; };
  const auto runs = label({2, 4, 8}, third);
  PredicateOptions three;
  three.grid_ndims = {3};
  const GroupPredicate g = find_group_predicate(runs, three);
  expect_fits(g, runs);
  EXPECT_EQ(g.text, "dims(P, 3, 2) > 1");
  for (int P : {16, 27, 64, 1024}) EXPECT_EQ(predicate_members(g.text, {{"P", P}}), truth_at(P, third)) << g.text << " P=" << P;
}

TEST(PredicateGrid, AConditionOnPAloneTheRunsOfMoreThanOneRank) {
  // LULESH's halo MPI_Waitall, run by every rank except at P = 1 (no neighbour), traced at the cubes 1, 8, 27:
  // "P > 1", not a comparison of sides that separates these P only (dims(P, 2, 0) > dims(P, 2, 1) is false at
  // 64 = 8 x 8), nor "rank > 0 || rank < P - 1" (two atoms); and the P = 1 run's own part: "P == 1".
  const Truth more = [](int P, int) { return P > 1; };
  const Truth one = [](int P, int) { return P == 1; };
  for (const Truth& t : {more, one}) {
    const auto runs = label({1, 8, 27}, t);
    const GroupPredicate g = find_group_predicate(runs);
    expect_fits(g, runs);
    EXPECT_EQ(g.text, t(8, 0) ? "P > 1" : "P == 1");
    for (int P : {2, 4, 16, 64, 125}) EXPECT_EQ(predicate_members(g.text, {{"P", P}}), truth_at(P, t)) << g.text << " P=" << P;
  }
}

TEST(PredicateGrid, NoGridFitsSaysWhichWereTried) {
  const auto runs = label({8, 16}, [](int, int k) { return (k * 7919) % 13 < 3; });
  const GroupPredicate g = find_group_predicate(runs);
  EXPECT_FALSE(g.found) << g.text;
  EXPECT_NE(g.message.find("Nor with the coordinates and sides of these grids"), std::string::npos) << g.message;
  EXPECT_NE(g.message.find("dims(P, 3, 2)"), std::string::npos) << g.message;
  EXPECT_NE(g.message.find("Members per run: P=8: 0-1, 7;"), std::string::npos) << g.message;
}
