// Skeleton reader: valid files load into the right tree; every kind of bad input names file and place.
#include "skeletons/distribution.hpp"
#include "skeletons/error.hpp"
#include "skeletons/rank_rng.hpp"
#include "skeletons/skeleton_io.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace mksim::skeletons;

namespace {

std::string wrap(const std::string& body, const std::string& extra = "") {
  return R"({"format":"mksim-skeleton","version":1,"name":"t",)" + extra + R"("body":)" + body + "}";
}

std::string wrap2(const std::string& body) {
  return R"({"format":"mksim-skeleton","version":2,"name":"t","params":{"N":4},"body":)" + body + "}";
}

std::string error_of(const std::string& text) {
  try {
    parse_skeleton(text, "t.json");
  } catch (const SkeletonError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Skeleton, LoadsTreeParamsAndDefines) {
  Skeleton sk = parse_skeleton(wrap(R"([{"op":"loop","count":"steps","var":"i","body":[
      {"op":"send","peer":"(rank+1)%P","size":"8*N","tag":3},
      {"op":"recv","peer":"(rank-1)%P","size":"8*N","tag":3}]},
      {"op":"allreduce","size":8,"phase":"dot"}])",
                                   R"("params":{"N":{"default":100,"doc":"n"},"steps":4},"let":{"half":"P/2"},)"),
                               "x.json");
  ASSERT_EQ(sk.params.size(), 2u);
  EXPECT_EQ(sk.params[0].name, "N");
  EXPECT_EQ(*sk.params[0].default_value, 100);
  ASSERT_EQ(sk.groups.size(), 1u);
  ASSERT_EQ(sk.groups[0].body.size(), 2u);
  const auto& loop = std::get<Loop>(sk.groups[0].body[0].op);
  EXPECT_EQ(loop.body.size(), 2u);
  EXPECT_EQ(sk.blocks.size(), 4u);
  EXPECT_EQ(sk.blocks[0].id, "/body/0");
  EXPECT_EQ(sk.blocks[1].id, "/body/0/body/0");
  EXPECT_EQ(sk.blocks[3].phase, "dot");
  auto frame = bind_parameters(sk, 8, {{"N", 64}});
  bind_rank(sk, frame, 3);
  EXPECT_EQ(frame[sk.symbols.find("N")], 64);
  EXPECT_EQ(frame[sk.symbols.find("steps")], 4);
  EXPECT_EQ(frame[sk.symbols.find("half")], 4);
  EXPECT_NO_THROW(check_for_run(sk, bind_parameters(sk, 8, {}), 8));
}

TEST(Skeleton, PhaseIsInheritedAndIdsAreExplicitWhenGiven) {
  Skeleton sk = parse_skeleton(wrap(R"([{"op":"loop","count":2,"phase":"halo","id":"outer","body":[
      {"op":"compute","seconds":1}]}])"));
  EXPECT_EQ(sk.blocks[0].id, "outer");
  EXPECT_EQ(sk.blocks[1].phase, "halo");
}

TEST(Skeleton, RankGroupsFirstMatchWins) {
  Skeleton sk = parse_skeleton(R"({"format":"mksim-skeleton","version":1,"programs":[
      {"ranks":"rank == 0","body":[{"op":"compute","seconds":1}]},
      {"ranks":"rank < P","body":[]}]})");
  auto frame = bind_parameters(sk, 4, {});
  bind_rank(sk, frame, 0);
  EXPECT_EQ(select_group(sk, frame), 0);
  bind_rank(sk, frame, 3);
  EXPECT_EQ(select_group(sk, frame), 1);
}

TEST(Skeleton, BadInputsNameFileAndPlace) {
  EXPECT_NE(error_of(wrap(R"([{"op":"send","peer":1,"size":8,"colour":1}])")).find("t.json: /body/0/colour: unknown field"),
            std::string::npos);
  EXPECT_NE(error_of(wrap(R"([{"op":"jump"}])")).find("/body/0/op: unknown op \"jump\""), std::string::npos);
  EXPECT_NE(error_of(wrap(R"([{"op":"send","peer":"rank+Q","size":8}])")).find("/body/0/peer: in expression \"rank+Q\""),
            std::string::npos);
  EXPECT_NE(error_of(wrap(R"([{"op":"send","size":8}])")).find("needs \"peer\""), std::string::npos);
  EXPECT_NE(error_of(wrap(R"([{"op":"wait","req":"r9"}])")).find("r9"), std::string::npos);
  EXPECT_NE(error_of(wrap("[]", R"("extra":1,)")).find("/extra: unknown field"), std::string::npos);
  EXPECT_NE(error_of(R"({"format":"mksim-skeleton","version":4,"body":[]})").find("/version"), std::string::npos);
  EXPECT_NE(error_of(wrap("[]", R"("params":{"rank":1},)")).find("reserved"), std::string::npos);
  EXPECT_NE(error_of(wrap(R"([{"op":"loop","count":2,"var":"i","body":[{"op":"loop","count":2,"var":"i","body":[]}]}])"))
                .find("enclosing loop"),
            std::string::npos);
}

TEST(Skeleton, WrongTypesAndDuplicateIdsAreSkeletonErrors) {
  EXPECT_NE(error_of(wrap(R"([{"op":"compute","seconds":1,"id":7}])")).find("t.json: /body/0/id: must be a string"),
            std::string::npos);
  EXPECT_NE(error_of(wrap(R"([{"op":"compute","seconds":1,"phase":["a"]}])")).find("/body/0/phase: must be a string"),
            std::string::npos);
  EXPECT_NE(error_of(wrap("[]", R"("params":{"N":{"default":1,"doc":3}},)")).find("/params/N/doc: must be a string"),
            std::string::npos);
  EXPECT_NE(error_of(wrap(R"([{"op":"compute","seconds":1,"id":"a"},{"op":"compute","seconds":1,"id":"a"}])"))
                .find("/body/1/id: block id \"a\" is used twice"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":"mksim-skeleton","version":1,"programs":[{"ranks":1,"phase":2,"body":[]}]})")
                .find("/programs/0/phase: must be a string"),
            std::string::npos);
}

TEST(Skeleton, TruncatedFileGivesByteOffset) {
  std::string good = wrap(R"([{"op":"compute","seconds":1}])");
  std::string m = error_of(good.substr(0, good.size() / 2));
  EXPECT_NE(m.find("t.json: byte "), std::string::npos) << m;
  EXPECT_NE(m.find("not valid JSON"), std::string::npos) << m;
}

TEST(Skeleton, MissingFileIsAnError) {
  EXPECT_THROW(load_skeleton("/nonexistent/x.json"), SkeletonError);
}

TEST(Skeleton, TagsMustBeNonNegativeIntegers) {
  Skeleton sk = parse_skeleton(wrap(R"([{"op":"send","id":"s","peer":0,"size":8,"tag":"rank / 2"}])"), "t.json");
  EXPECT_NO_THROW(check_for_run(sk, bind_parameters(sk, 1, {}), 1));  // rank 0: tag 0
  try {
    check_for_run(sk, bind_parameters(sk, 2, {}), 2);  // rank 1: tag 0.5
    FAIL();
  } catch (const SkeletonError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1: tag \"rank / 2\" = 0.5 is not a non-negative integer"), std::string::npos)
        << e.what();
  }
}

TEST(Skeleton, ParameterBindingErrors) {
  Skeleton sk = parse_skeleton(wrap("[]", R"("params":{"N":null,"K":4},)"));
  EXPECT_THROW(bind_parameters(sk, 4, {}), SkeletonError);  // N has no default
  try {
    bind_parameters(sk, 4, {{"N", 1}, {"Z", 2}});
    FAIL();
  } catch (const SkeletonError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown parameter \"Z\" (this skeleton has: N, K)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(bind_parameters(sk, 0, {{"N", 1}}), SkeletonError);
}

TEST(Skeleton, CheckForRunFindsPeersOutsideRange) {
  Skeleton sk = parse_skeleton(wrap(R"([{"op":"loop","count":3,"var":"i","body":[
      {"op":"if","cond":"rank == 0","then":[{"op":"send","id":"bad","peer":"rank + i + 1","size":8}]}]}])"),
                               "t.json");
  EXPECT_NO_THROW(check_for_run(sk, bind_parameters(sk, 4, {}), 4));
  try {
    check_for_run(sk, bind_parameters(sk, 3, {}), 3);  // last iteration sends to rank 3 of 3
    FAIL();
  } catch (const SkeletonError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("t.json: bad: at P=3, rank 0: destination \"rank + i + 1\" = 3 is not a rank in [0, 3)"),
              std::string::npos)
        << m;
  }
  Skeleton g = parse_skeleton(R"({"format":"mksim-skeleton","version":1,"programs":[{"ranks":"rank < 2","body":[]}]})");
  EXPECT_THROW(check_for_run(g, bind_parameters(g, 4, {}), 4), SkeletonError);
}

namespace {

TEST(Skeleton, PhasesAreReadWithTheirExpressionsAndChecked) {
  const std::string head = R"({"format":"mksim-skeleton","version":1,"params":{"K":4},"body":[],"phases":)";
  Skeleton sk = parse_skeleton(head + R"([{"name":"fwd","type":"pipeline","depth":"P - 1","occurrences":"32 / K",
    "senders":"rank < P - 1","receivers":"rank > 0","overlap_s":1e-6,"independent_of_next":true},
    {"name":"sum","type":"collective","collective":"allreduce"}]})", "t.json");
  ASSERT_EQ(sk.phases.size(), 2u);
  const auto& f = sk.phases[0];
  EXPECT_EQ(f.type, "pipeline");
  EXPECT_TRUE(f.independent_of_next);
  std::vector<double> frame(sk.symbols.size(), 0.0);
  frame[Skeleton::SLOT_P] = 8;
  frame[static_cast<std::size_t>(sk.symbols.find("K"))] = 4;
  EXPECT_EQ(f.depth.eval(frame), 7);
  EXPECT_EQ(f.occurrences.eval(frame), 8);
  frame[Skeleton::SLOT_RANK] = 7;
  EXPECT_EQ(f.senders.eval(frame), 0);
  EXPECT_EQ(f.receivers.eval(frame), 1);
  EXPECT_EQ(sk.phases[1].depth.eval(frame), 1);  // defaults
  EXPECT_EQ(sk.phases[1].collective, "allreduce");
  auto error = [&](const std::string& phases) {
    try {
      parse_skeleton(head + phases + "}", "t.json");
    } catch (const SkeletonError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error(R"([{"name":"a","type":"ring"}])"),
            "t.json: /phases/0/type: must be \"synchronous\", \"pipeline\" or \"collective\"");
  EXPECT_EQ(error(R"([{"name":"a","type":"pipeline"},{"name":"a","type":"pipeline"}])"),
            "t.json: /phases/1/name: duplicate phase name \"a\"");
  EXPECT_NE(error(R"([{"name":"a","type":"pipeline","depth":"Q"}])").find("/phases/0/depth"), std::string::npos);
  EXPECT_NE(error(R"([{"name":"a","type":"pipeline","width":2}])").find("unknown field \"width\""), std::string::npos);
}

}  // namespace

// ---- format version 2: regions and compute distributions ----

TEST(SkeletonV2, RegionsAndDistributionsAreRead) {
  Skeleton sk = parse_skeleton(wrap2(R"([{"op":"region","name":"solve","id":"solve","phase":"s","body":[
      {"op":"loop","count":3,"body":[{"op":"compute","seconds":"N","dist":{"type":"lognormal","cv":"0.1 * N"}}]},
      {"op":"compute","flops":1e6,"dist":{"type":"empirical","quantiles":[0,1,1,1,1,1,1,1,1,1,2]}}]}])"),
                               "t.json");
  EXPECT_EQ(sk.version, 2);
  const auto& body = sk.groups.at(0).body;
  ASSERT_EQ(body.size(), 1u);
  const auto& region = std::get<Region>(body[0].op);
  EXPECT_EQ(region.name, "solve");
  ASSERT_EQ(region.body.size(), 2u);
  EXPECT_EQ(sk.blocks[0].op, "region");
  EXPECT_EQ(sk.blocks[0].id, "solve");
  EXPECT_EQ(sk.blocks[1].phase, "s");  // inherited through the region
  const auto& loop = std::get<Loop>(region.body[0].op);
  const auto& lognormal = std::get<Compute>(loop.body[0].op);
  ASSERT_TRUE(lognormal.dist.has_value());
  EXPECT_EQ(lognormal.dist->type, Distribution::Type::LOGNORMAL);
  EXPECT_EQ(lognormal.dist->cv.text(), "0.1 * N");
  const auto& empirical = std::get<Compute>(region.body[1].op);
  ASSERT_TRUE(empirical.dist.has_value());
  EXPECT_EQ(empirical.dist->type, Distribution::Type::EMPIRICAL);
  // the piecewise-linear distribution of 0,1,...,1,2 has mean 1 already: kept as written
  EXPECT_EQ(empirical.dist->quantiles, (std::vector<double>{0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}));
  EXPECT_NO_THROW(check_for_run(sk, bind_parameters(sk, 4, {}), 4));
}

TEST(SkeletonV2, EmpiricalQuantilesAreRescaledToMeanOne) {
  Skeleton sk = parse_skeleton(
      wrap2(R"([{"op":"compute","seconds":1,"dist":{"type":"empirical","quantiles":[2,2,2,2,2,2,2,2,2,2,4]}}])"));
  const auto& d = *std::get<Compute>(sk.groups[0].body[0].op).dist;
  EXPECT_NEAR(empirical_mean(d.quantiles), 1.0, 1e-15);
  EXPECT_NEAR(d.quantiles.front(), 2 / 2.1, 1e-15);
  EXPECT_NEAR(d.quantiles.back(), 4 / 2.1, 1e-15);
}

TEST(SkeletonV2, Version1FilesCannotUseThem) {
  EXPECT_EQ(error_of(wrap(R"([{"op":"loop","count":2,"body":[{"op":"region","name":"a","body":[]}]}])")),
            "t.json: /body/0/body/0/op: op \"region\" needs version 2 (this file says \"version\": 1)");
  EXPECT_EQ(error_of(wrap(R"([{"op":"compute","seconds":1,"dist":{"type":"normal","cv":0.1}}])")),
            "t.json: /body/0/dist: \"dist\" on a compute block needs version 2 (this file says \"version\": 1)");
}

TEST(SkeletonV2, BadRegionsAndDistributionsNameTheirPlace) {
  auto err = [](const std::string& body) { return error_of(wrap2(body)); };
  EXPECT_NE(err(R"([{"op":"region","body":[]}])").find("/body/0: op \"region\" needs \"name\""), std::string::npos);
  EXPECT_NE(err(R"([{"op":"region","name":"","body":[]}])").find("/body/0/name: a region's name is a non-empty string"),
            std::string::npos);
  EXPECT_NE(err(R"([{"op":"region","name":"a","body":[],"count":2}])").find("/body/0/count: unknown field"), std::string::npos);
  const std::string c = R"([{"op":"compute","seconds":1,"dist":)";
  EXPECT_NE(err(c + R"({"type":"gamma","cv":1}}])").find("/body/0/dist/type: unknown distribution type \"gamma\""),
            std::string::npos);
  EXPECT_NE(err(c + R"({"cv":1}}])").find("/body/0/dist: a distribution needs \"type\""), std::string::npos);
  EXPECT_NE(err(c + R"({"type":"normal","cv":-0.1}}])").find("/body/0/dist/cv: cv = -0.1 is not a coefficient of variation"),
            std::string::npos);
  EXPECT_NE(err(c + R"({"type":"uniform","cv":0.7}}])").find("/body/0/dist/cv: cv = 0.7 is above 1/sqrt(3)"), std::string::npos);
  EXPECT_NE(err(c + R"({"type":"normal"}}])").find("needs \"cv\""), std::string::npos);
  EXPECT_NE(err(c + R"({"type":"normal","cv":"M"}}])").find("/body/0/dist/cv: in expression"), std::string::npos);
  EXPECT_NE(err(c + R"({"type":"normal","cv":0.1,"quantiles":[]}}])").find("/body/0/dist/quantiles: unknown field"),
            std::string::npos);
  EXPECT_NE(err(c + R"({"type":"empirical","cv":0.1}}])").find("/body/0/dist/cv: unknown field"), std::string::npos);
  EXPECT_NE(err(c + R"({"type":"empirical","quantiles":[1,1,1]}}])").find("/body/0/dist/quantiles: must be an array of 11"),
            std::string::npos);
  EXPECT_NE(err(c + R"({"type":"empirical","quantiles":[0,1,1,1,1,0.5,1,1,1,1,2]}}])")
                .find("/body/0/dist/quantiles/5: quantiles must not decrease (0.5 after 1)"),
            std::string::npos);
  EXPECT_NE(err(c + R"({"type":"empirical","quantiles":[-1,1,1,1,1,1,1,1,1,1,2]}}])")
                .find("/body/0/dist/quantiles/0: a quantile is a finite multiplier >= 0"),
            std::string::npos);
  EXPECT_NE(err(c + R"({"type":"empirical","quantiles":[0,0,0,0,0,0,0,0,0,0,0]}}])").find("mean is not positive"),
            std::string::npos);
  EXPECT_NE(err(c + R"({"type":"empirical","quantiles":[0,1,1,1,1,"1",1,1,1,1,2]}}])").find("/body/0/dist/quantiles/5: must be a number"),
            std::string::npos);
  EXPECT_NE(err(c + R"("normal"}])").find("/body/0/dist: expected an object"), std::string::npos);
}

TEST(SkeletonV2, CheckForRunEvaluatesCvPerRank) {
  Skeleton sk = parse_skeleton(wrap2(R"J([{"op":"region","name":"r","body":[
      {"op":"compute","id":"work","seconds":1,"dist":{"type":"normal","cv":"0.1 * (2 - rank)"}}]}])J"),
                               "t.json");
  EXPECT_NO_THROW(check_for_run(sk, bind_parameters(sk, 3, {}), 3));
  try {
    check_for_run(sk, bind_parameters(sk, 4, {}), 4);
    FAIL() << "no error";
  } catch (const SkeletonError& e) {
    EXPECT_EQ(std::string(e.what()),
              "t.json: work: at P=4, rank 3: cv \"0.1 * (2 - rank)\" = -0.1 is not a coefficient of variation (finite, >= 0) [/body/0/body/0]");
  }
}

// A coin drawn evenly (`"draw": "even"`) is a rate: over any run of n tosses it falls below p within two of n p
// times, at every seed, where independent draws wander by sqrt(n p (1 - p)); each toss alone is still uniform over
// the seeds. A `draw` without a coin, or another word, is an error that says where.
TEST(SkeletonV2, EvenlyDrawnCoinsKeepTheirRateInEveryRunOfTosses) {
  const std::uint64_t coin = coin_hash("rebuild");
  double independent_worst = 0;
  for (const double p : {0.03, 0.11, 0.3, 0.5, 0.89})
    for (std::uint64_t seed = 1; seed <= 20; ++seed)
      for (const std::uint64_t n : {10u, 100u, 1000u}) {
        double even = 0, random = 0;
        for (std::uint64_t k = 0; k < n; ++k) {
          even += coin_toss_even(seed, coin, 0, k) < p ? 1 : 0;
          random += coin_toss(seed, coin, 0, k) < p ? 1 : 0;
        }
        EXPECT_LE(std::fabs(even - p * static_cast<double>(n)), 2.0) << "p " << p << " seed " << seed << " n " << n;
        independent_worst = std::max(independent_worst, std::fabs(random - p * static_cast<double>(n)));
      }
  EXPECT_GT(independent_worst, 5.0);  // the control: independent draws miss the rate by more
  double below = 0;  // the first toss over the seeds: uniform
  for (std::uint64_t seed = 1; seed <= 2000; ++seed) below += coin_toss_even(seed, coin, 0, 7) < 0.25 ? 1 : 0;
  EXPECT_NEAR(below / 2000, 0.25, 0.03);

  const Skeleton sk = parse_skeleton(wrap2(R"([{"op":"if","prob":0.1,"coin":"c","coin_rank":"0","draw":"even","then":[]},
    {"op":"if","prob":0.1,"coin":"d","draw":"random","then":[]}])"));
  EXPECT_TRUE(std::get<Branch>(sk.groups[0].body[0].op).even);
  EXPECT_FALSE(std::get<Branch>(sk.groups[0].body[1].op).even);
  EXPECT_NE(error_of(wrap2(R"([{"op":"if","prob":0.1,"draw":"even","then":[]}])"))
                .find("/body/0/draw: \"draw\" is how a coin is tossed: it needs \"coin\""),
            std::string::npos);
  EXPECT_NE(error_of(wrap2(R"([{"op":"if","prob":0.1,"coin":"c","draw":"sometimes","then":[]}])"))
                .find("/body/0/draw: \"draw\" is \"even\" or \"random\", not \"sometimes\""),
            std::string::npos);
}

// Shared coins of `prob` branches: one index per name, coin_rank defaulting to the rank itself; errors say where.
TEST(SkeletonV2, SharedCoinsOfProbabilisticBranches) {
  const Skeleton sk = parse_skeleton(wrap2(R"([{"op":"if","prob":0.3,"coin":"extra","then":[]},
    {"op":"if","prob":0.3,"coin":"extra","coin_rank":"(rank + P - 1) % P","then":[]},
    {"op":"if","prob":0.5,"coin":"other","then":[]}])"));
  ASSERT_EQ(sk.coins, (std::vector<std::string>{"extra", "other"}));
  const auto& body = sk.groups[0].body;
  EXPECT_EQ(std::get<Branch>(body[0].op).coin, 0);
  EXPECT_EQ(std::get<Branch>(body[0].op).coin_rank.text(), "rank");
  EXPECT_EQ(std::get<Branch>(body[1].op).coin, 0);
  EXPECT_EQ(std::get<Branch>(body[1].op).coin_rank.text(), "(rank + P - 1) % P");
  EXPECT_EQ(std::get<Branch>(body[2].op).coin, 1);
  EXPECT_NO_THROW(check_for_run(sk, bind_parameters(sk, 4, {}), 4));

  auto err = [](const std::string& body) { return error_of(wrap2(body)); };
  EXPECT_NE(err(R"([{"op":"if","cond":1,"coin":"c","then":[]}])").find("/body/0/coin: a coin is tossed by a \"prob\" branch only"),
            std::string::npos);
  EXPECT_NE(err(R"([{"op":"if","prob":0.1,"coin_rank":"rank","then":[]}])").find("/body/0/coin_rank: \"coin_rank\" without \"coin\""),
            std::string::npos);
  EXPECT_NE(err(R"([{"op":"if","prob":0.1,"coin":3,"then":[]}])").find("/body/0/coin: must be a string"), std::string::npos);
  EXPECT_NE(err(R"([{"op":"if","prob":0.1,"coin":"","then":[]}])").find("/body/0/coin: a coin needs a name"), std::string::npos);
  EXPECT_NE(err(R"([{"op":"if","prob":0.1,"coin":"c","coin_rank":"Q","then":[]}])").find("/body/0/coin_rank: in expression"),
            std::string::npos);
  EXPECT_EQ(error_of(wrap(R"([{"op":"if","prob":0.1,"coin":"c","then":[]}])")),
            "t.json: /body/0/coin: \"coin\" needs version 2 (this file says \"version\": 1)");
  // a coin_rank outside [0, P) is found before a run
  const Skeleton off = parse_skeleton(wrap2(R"([{"op":"if","id":"b","prob":0.1,"coin":"c","coin_rank":"rank + 1","then":[]}])"));
  try {
    check_for_run(off, bind_parameters(off, 4, {}), 4);
    FAIL();
  } catch (const SkeletonError& e) {
    EXPECT_NE(std::string(e.what()).find("coin_rank \"rank + 1\" = 4 is not a rank in [0, 4)"), std::string::npos) << e.what();
  }
}
