// Data-dependent branches (issue 4: "branch probabilities from the traces"): skeletons/apps/coin_ring.c,
// traced with OpenMPI, sends and receives an extra message in the steps where a seeded coin says so. The
// built skeleton must have both as `prob` branches inside the step loop with the pooled fraction of the
// traces (exactly) and the true p within a binomial bound; expanded at a P and step count never traced,
// its expected number of extra messages must agree with a real run there within a binomial bound, and the
// two branches must share a coin so that each extra message is received in the step it is sent (replayed too).
#include "skeletons/builder/builder.hpp"
#include "skeletons/builder/fold.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"
#include "trace_writer.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using mksim::trace::Kind;

namespace {

const std::string BIN = MKSIM_BINARY_DIR;
constexpr double P_TRUE = 0.3;

class SkelBuildBranchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    tmp_ = fs::temp_directory_path() / ("mksim_skelbuild_branch_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }

  // mktrace -np P --param steps=S -- apps/coin_ring S 0.3 seed
  mksim::trace::Run traced(int P, long steps, int seed) {
    const fs::path dir = tmp_ / ("coin-" + std::to_string(P) + "-" + std::to_string(steps) + "-" + std::to_string(seed));
    const std::string cmd = BIN + "/trace/mktrace -np " + std::to_string(P) + " --param steps=" + std::to_string(steps) +
                            " -o " + dir.string() + " -- " + BIN + "/apps/coin_ring " + std::to_string(steps) + " " +
                            std::to_string(P_TRUE) + " " + std::to_string(seed) + " >" + dir.string() + ".log 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
    return mksim::trace::read_run(dir.string(), {.require_complete = true});
  }

  fs::path tmp_;
};

// extra messages of a run: MPI_Send with tag 2
long extra_sends(const mksim::trace::Run& run) {
  long n = 0;
  for (const auto& r : run.ranks)
    for (const auto& e : r.events) n += e.kind == Kind::SEND && e.tag == 2 ? 1 : 0;
  return n;
}

void collect_prob_ifs(const nlohmann::json& body, bool in_loop, std::vector<const nlohmann::json*>& out, bool& outside) {
  for (const auto& b : body) {
    if (b.at("op") == "if" && b.contains("prob")) {
      out.push_back(&b);
      outside = outside || !in_loop;
    }
    for (const char* arm : {"body", "then", "else"})
      if (b.contains(arm)) collect_prob_ifs(b.at(arm), in_loop || b.at("op") == "loop", out, outside);
  }
}

TEST_F(SkelBuildBranchTest, CoinRingHasFittedProbabilisticBranches) {
  // enough steps that every rank has steps with both extra messages (else their order is unknown to it)
  std::vector<mksim::trace::Run> runs{traced(2, 100, 11), traced(4, 100, 12), traced(8, 80, 13), traced(4, 150, 14)};
  long taken = 0, reached = 0;
  for (const auto& r : runs) {
    taken += extra_sends(r);
    reached += static_cast<long>(r.P) * std::stol(r.params.at("steps"));
  }
  const auto built = mksim::skeletons::builder::build_skeleton(runs);
  const std::string text = built.skeleton.dump(1);
  std::vector<const nlohmann::json*> ifs;
  bool outside = false;
  collect_prob_ifs(built.skeleton.at("body"), false, ifs, outside);
  ASSERT_EQ(ifs.size(), 2u) << "one branch sends the extra message, one receives it\n" << text;
  EXPECT_FALSE(outside) << text;
  const double pooled = static_cast<double>(taken) / static_cast<double>(reached);
  const double bound = 4 * std::sqrt(P_TRUE * (1 - P_TRUE) / static_cast<double>(reached));
  for (const nlohmann::json* b : ifs) {
    const std::string ptext = b->at("prob").get<std::string>();
    char* end = nullptr;
    const double p = std::strtod(ptext.c_str(), &end);
    ASSERT_TRUE(end && *end == '\0' && end != ptext.c_str()) << "p does not vary with P or steps: " << ptext << "\n" << text;
    // the receive branch of rank r is its left neighbour's coin: over a ring, as many as the sends
    EXPECT_NEAR(p, pooled, 1e-5) << text;
    EXPECT_NEAR(p, P_TRUE, bound) << text;
    const auto& fit = b->at("fit").at("prob");
    EXPECT_EQ(fit.at("taken").get<double>(), static_cast<double>(taken)) << text;
    EXPECT_EQ(fit.at("reached").get<double>(), static_cast<double>(reached)) << text;
    EXPECT_LE(fit.at("ci95")[0].get<double>(), p);
    EXPECT_GE(fit.at("ci95")[1].get<double>(), p);
    ASSERT_EQ(b->at("then").size(), 2u) << "the call and the compute after it\n" << text;
    bool has_tag2 = false;
    for (const auto& c : b->at("then")) has_tag2 = has_tag2 || (c.contains("tag") && c.at("tag") == "2");
    EXPECT_TRUE(has_tag2) << text;
  }
  // The two branches share one coin: the receiver tosses its left neighbour's (the rank it receives from).
  EXPECT_EQ(ifs[0]->value("coin", ""), ifs[1]->value("coin", "")) << text;
  EXPECT_FALSE(ifs[0]->value("coin", "").empty()) << text;
  EXPECT_EQ(built.skeleton.at("version"), 2) << text;
  const nlohmann::json* receiver = ifs[0]->contains("coin_rank") ? ifs[0] : ifs[1];
  for (const auto& c : receiver->at("then")) {
    if (c.contains("peer")) {
      EXPECT_EQ(receiver->at("coin_rank"), c.at("peer")) << text;
    }
  }
  for (const auto& w : built.warnings) EXPECT_EQ(w.find("in expectation only"), std::string::npos) << w;

  // at P = 16 and 120 steps (never traced): every rank's expanded extra sends, summed, against a real run
  const auto sk = mksim::skeletons::parse_skeleton(text, "coin_ring.json");
  const int P = 16;
  const long steps = 120;
  const auto frame = mksim::skeletons::bind_parameters(sk, P, {{"steps", static_cast<double>(steps)}});
  long expanded = 0, ring = 0;
  // the steps (ring sends so far) in which each rank sends and receives an extra message
  std::vector<std::vector<long>> sent(P), received(P);
  for (int rank = 0; rank < P; ++rank) {
    long step = 0;
    for (const auto& op : mksim::skeletons::expand_rank(sk, frame, rank, 7)) {
      const bool send = op.kind == mksim::skeletons::ExpandedOp::Kind::SEND;
      expanded += send && op.tag == 2 ? 1 : 0;
      if (send && op.tag == 2) sent[rank].push_back(step);
      if (op.kind == mksim::skeletons::ExpandedOp::Kind::RECV && op.tag == 2) received[rank].push_back(step);
      const bool ring_send = op.kind == mksim::skeletons::ExpandedOp::Kind::ISEND && op.tag == 1 && op.peer == (rank + 1) % P;
      ring += ring_send ? 1 : 0;
      step += ring_send ? 1 : 0;
    }
  }
  std::printf("receive branch: coin_rank %s\n", receiver->at("coin_rank").dump().c_str());
  for (int rank = 0; rank < P; ++rank)  // every extra message has its receive, in the same step
    EXPECT_EQ(received[rank], sent[(rank + P - 1) % P]) << "rank " << rank;
  // and the replay on a real SimGrid platform pairs them all (an unmatched message is an error there)
  const fs::path file = tmp_ / "coin_ring.json";
  std::ofstream(file) << text;
  const std::string cmd = BIN + "/sim/mksim predict --skeleton " + file.string() + " --platform paragon --P 16 --param steps=120 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char line[512];
  while (pipe && fgets(line, sizeof line, pipe)) out += line;
  const int rc = pipe ? pclose(pipe) : -1;
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd << "\n" << out;
  EXPECT_NE(out.find("predicted time"), std::string::npos) << out;
  EXPECT_EQ(ring, P * steps) << text;
  const double n = static_cast<double>(P * steps), sd = std::sqrt(n * P_TRUE * (1 - P_TRUE));
  const long real = extra_sends(traced(P, steps, 15));
  std::printf("coin_ring: p = %.4f from %ld of %ld steps; at P=%d, %ld steps: skeleton %ld extra sends, real run %ld, "
              "expected %.1f (sd %.1f)\n", pooled, taken, reached, P, steps, expanded, real, pooled * n, sd);
  EXPECT_NEAR(static_cast<double>(expanded), pooled * n, 4 * sd) << "skeleton's draws";
  EXPECT_NEAR(static_cast<double>(real), pooled * n, 4 * sd) << "the real run's coins";
}

// Folding on written events: an annotated loop whose iterations sometimes run an extra call becomes one loop
// over all iterations with a branch that knows how often it ran; without the extra call it is a plain loop.
mksim::trace::RankTrace annotated(const std::vector<bool>& extra) {
  test_trace::TraceWriter w(1e-6, 1e-3);
  w.call(Kind::INIT, 0);
  w.call(Kind::LOOP_BEGIN, 0, -1, 0);
  for (bool x : extra) {
    w.call(Kind::LOOP_ITER, 0, -1, 0);
    w.call(Kind::BARRIER, 0xB);
    if (x) w.call(Kind::SEND, 0x5, 1, 2);
  }
  w.call(Kind::LOOP_END, 0, -1, 0);
  w.call(Kind::FINALIZE, 0);
  return w.t;
}

TEST(FoldBranch, IterationsThatSkipACallBecomeOneLoopWithABranch) {
  const std::vector<bool> coins{false, true, false, false, true, true, false, true, false, false, false, true};
  const auto folded = mksim::skeletons::builder::fold_rank(annotated(coins));
  const std::string text = mksim::skeletons::builder::to_text(folded.seq);
  EXPECT_NE(text.find("loop 12 {"), std::string::npos) << text;
  EXPECT_NE(text.find("branch 5/12 {"), std::string::npos) << text;
  EXPECT_EQ(mksim::skeletons::builder::expanded_calls(folded.seq), 2u + 2u + 12u + 12u + 5u) << text;
  const auto plain = mksim::skeletons::builder::fold_rank(annotated(std::vector<bool>(12, false)));
  const std::string plain_text = mksim::skeletons::builder::to_text(plain.seq);
  EXPECT_EQ(plain_text.find("branch"), std::string::npos) << plain_text;
  EXPECT_NE(plain_text.find("loop 12 {"), std::string::npos) << plain_text;
  // a call in the first iteration only (a warm-up step) is not data-dependent: no branch, the loop as folded
  std::vector<bool> first(12, false);
  first[0] = true;
  const auto warm = mksim::skeletons::builder::fold_rank(annotated(first));
  const std::string warm_text = mksim::skeletons::builder::to_text(warm.seq);
  EXPECT_EQ(warm_text.find("branch"), std::string::npos) << warm_text;
  EXPECT_NE(warm_text.find("loop 11 {"), std::string::npos) << warm_text;
  EXPECT_EQ(mksim::skeletons::builder::expanded_calls(warm.seq), 2u + 2u + 12u + 12u + 1u) << warm_text;
}

}  // namespace
