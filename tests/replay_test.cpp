// Replay on real SimGrid simulations, against closed forms where the simulation must be exact
// (CM02 model, no contention). Each TEST runs in its own process: one SimGrid engine each.
#include "sim/engine/isolate.hpp"
#include "platforms/generator.hpp"
#include "sim/engine/replay.hpp"
#include "skeletons/error.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/skeleton_io.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace mksim;
using namespace mksim::sim;

namespace {

// Figures of the test machine: every route is host link + host link (SPLITDUPLEX, so no two directions
// share), i.e. latency 2*LAT and bandwidth BW, and the MPI-level overheads below.
constexpr double LAT = 50e-6, BW = 10e6, S_OV = 3e-6, R_OV = 2e-6, O_OV = 1e-6, EAGER = 1024, SPEED = 1e9;
constexpr double L = 2 * LAT;

std::string write_platform(int hosts) {
  auto dir = std::filesystem::temp_directory_path() / ("mksim_replay_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "cluster.xml").string();
  std::ofstream f(path);
  f << R"J(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="root" routing="Full">
  <prop id="mksim.machine" value="testbox"/>
  <prop id="mksim.send_overhead_s" value="3e-6"/>
  <prop id="mksim.recv_overhead_s" value="2e-6"/>
  <prop id="mksim.per_message_overhead_s" value="1e-6"/>
  <prop id="mksim.eager_threshold_bytes" value="1024"/>
  <cluster id="c" prefix="node-" suffix="" radical="0-)J"
    << hosts - 1 << R"J(" speed="1Gf" bw="10MBps" lat="50us" sharing_policy="SPLITDUPLEX"/>
</zone>
</platform>
)J";
  return path;
}

skeletons::Skeleton sk(const std::string& body, const std::string& extra = "") {
  return skeletons::parse_skeleton(R"J({"format":"mksim-skeleton","version":1,"name":"t",)J" + extra + body, "t.json");
}

results::RunResult run(const skeletons::Skeleton& s, int P, std::map<std::string, double> params = {}, int hosts = 0,
                       std::uint64_t seed = 1, std::string timeline = "") {
  ReplayOptions o;
  o.platform_path = write_platform(hosts ? hosts : P);
  o.P = P;
  o.params = std::move(params);
  o.seed = seed;
  o.timeline_csv = std::move(timeline);
  return replay(s, o);
}

double one_way(double bytes) { return S_OV + L + bytes / BW + R_OV + O_OV; }

const char* PINGPONG = R"J("params":{"S":8,"R":5},"programs":[
  {"ranks":"rank == 0","body":[{"op":"loop","count":"R","body":[
     {"op":"send","peer":1,"size":"S"},{"op":"recv","peer":1,"size":"S"}]}]},
  {"ranks":"rank == 1","body":[{"op":"loop","count":"R","body":[
     {"op":"recv","peer":0,"size":"S"},{"op":"send","peer":0,"size":"S"}]}]}]})J";

}  // namespace

TEST(Replay, PingPongEagerMatchesClosedForm) {
  auto res = run(sk(PINGPONG), 2, {{"S", 512}, {"R", 5}});
  EXPECT_NEAR(res.predicted_time_s, 5 * 2 * one_way(512), 1e-9);
  EXPECT_EQ(res.total_messages, 10u);
  EXPECT_EQ(res.ranks[0].messages_sent, 5u);
}

TEST(Replay, PingPongRendezvousMatchesClosedForm) {
  auto res = run(sk(PINGPONG), 2, {{"S", 1 << 20}, {"R", 3}});
  EXPECT_NEAR(res.predicted_time_s, 3 * 2 * one_way(1 << 20), 1e-9);
}

// Rank 1 computes C before receiving. Eager: rank 0 is done after its send overhead. Rendezvous: the
// transfer starts only when the receive is posted, and rank 0 waits C - s for it.
const char* LATE_RECEIVER = R"J("params":{"S":8},"programs":[
    {"ranks":"rank == 0","body":[{"op":"send","peer":1,"size":"S"}]},
    {"ranks":"rank == 1","body":[{"op":"compute","seconds":0.01},{"op":"recv","peer":0,"size":"S"}]}]})J";
constexpr double C_LATE = 0.01;

TEST(Replay, LateReceiverDoesNotBlockEagerSender) {
  auto eager = run(sk(LATE_RECEIVER), 2, {{"S", 1000}});
  EXPECT_NEAR(eager.ranks[0].finish_s, S_OV, 1e-12);
  EXPECT_NEAR(eager.ranks[1].finish_s, C_LATE + R_OV + O_OV, 1e-9);  // the data arrived long before
  EXPECT_NEAR(eager.ranks[0].wait_s, 0, 1e-12);
}

TEST(Replay, LateReceiverBlocksRendezvousSender) {
  const double big = 100000;
  auto rdv = run(sk(LATE_RECEIVER), 2, {{"S", big}});
  EXPECT_NEAR(rdv.ranks[0].finish_s, C_LATE + L + big / BW, 1e-9);
  EXPECT_NEAR(rdv.ranks[0].wait_s, C_LATE - S_OV, 1e-9);
  EXPECT_NEAR(rdv.ranks[1].finish_s, C_LATE + L + big / BW + R_OV + O_OV, 1e-9);
  EXPECT_NEAR(rdv.ranks[1].compute_s, C_LATE, 1e-12);
}

TEST(Replay, SecondSimulationInOneProcessIsRefused) {
  run(sk(PINGPONG), 2);
  EXPECT_THROW(run(sk(PINGPONG), 2), ReplayError);
}

TEST(Replay, PipelineFillTime) {
  // Rank 0 computes W and sends; rank r receives from r-1, computes W, sends to r+1 (seed 000 s.4.1 Fill).
  const char* body = R"J("params":{"W":0.001,"S":256},"programs":[
    {"ranks":"rank == 0","body":[{"op":"compute","seconds":"W"},{"op":"send","peer":1,"size":"S"}]},
    {"ranks":"rank < P - 1","body":[{"op":"recv","peer":"rank-1","size":"S"},{"op":"compute","seconds":"W"},
                                   {"op":"send","peer":"rank+1","size":"S"}]},
    {"ranks":"1","body":[{"op":"recv","peer":"rank-1","size":"S"},{"op":"compute","seconds":"W"}]}]})J";
  const int P = 7;  // one engine per process: one P per test
  auto res = run(sk(body), P);
  EXPECT_NEAR(res.predicted_time_s, P * 0.001 + (P - 1) * one_way(256), 1e-9);
  EXPECT_EQ(res.critical_rank, P - 1);
}

TEST(Replay, AllreduceRecursiveDoublingTime) {
  // P = 8: three rounds of a simultaneous exchange; SPLITDUPLEX links carry both directions at full rate.
  auto res = run(sk(R"J("body":[{"op":"allreduce","size":4096}]})J"), 8);
  EXPECT_NEAR(res.predicted_time_s, 3 * one_way(4096), 1e-9);
  EXPECT_EQ(res.total_messages, 24u);
  ASSERT_EQ(res.blocks.size(), 1u);
  EXPECT_EQ(res.blocks[0].executions, 8u);
  EXPECT_NEAR(res.blocks[0].bytes, 24 * 4096.0, 1e-6);
}

TEST(Replay, DeadlockIsReportedWithBlockedRanks) {
  auto s = sk(R"J("programs":[{"ranks":"rank < 2","body":[{"op":"recv","id":"first-recv","peer":"1 - rank","size":8,"tag":7}]},
                              {"ranks":"1","body":[]}]})J");
  try {
    run(s, 3);
    FAIL() << "no deadlock reported";
  } catch (const DeadlockError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("deadlock at P=3"), std::string::npos) << m;
    EXPECT_NE(m.find("2 rank(s) blocked"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 0: recv from 1, tag 7, 8 bytes, block first-recv"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 1: recv from 0"), std::string::npos) << m;
  }
}

// A waitall's deadlock report names the request that never completed, not the first one, which did.
TEST(Replay, DeadlockInAWaitallNamesTheRequestThatNeverCompleted) {
  auto s = sk(R"J("programs":[{"ranks":"rank == 0","body":[{"op":"irecv","peer":1,"size":8,"tag":1},
                                                          {"op":"irecv","peer":1,"size":8,"tag":2},{"op":"waitall"}]},
                              {"ranks":"1","body":[{"op":"send","peer":0,"size":8,"tag":1}]}]})J");
  try {
    run(s, 2);
    FAIL() << "no deadlock reported";
  } catch (const DeadlockError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("1 rank(s) blocked"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 0: recv from 1, tag 2, 8 bytes"), std::string::npos) << m;
  }
}

TEST(Replay, HeadToHeadLargeSendsDeadlockOnlyAboveEagerThreshold) {
  auto s = sk(R"J("params":{"S":8},"body":[{"op":"send","peer":"1 - rank","size":"S"},{"op":"recv","peer":"1 - rank","size":"S"}]})J");
  EXPECT_THROW(run(s, 2, {{"S", 4096}}), DeadlockError);
}

TEST(Replay, HeadToHeadSmallSendsComplete) {
  auto s = sk(R"J("params":{"S":8},"body":[{"op":"send","peer":"1 - rank","size":"S"},{"op":"recv","peer":"1 - rank","size":"S"}]})J");
  auto res = run(s, 2, {{"S", 512}});
  EXPECT_NEAR(res.predicted_time_s, one_way(512), 1e-9);
}

TEST(Replay, WildcardReceivesTakeMessagesInArrivalOrder) {
  auto s = sk(R"J("programs":[
     {"ranks":"rank == 0","body":[{"op":"loop","count":"P-1","body":[{"op":"recv","peer":"any","tag":"any","size":64}]}]},
     {"ranks":"1","body":[{"op":"compute","seconds":"0.001 * (P - rank)"},{"op":"send","peer":0,"size":64,"tag":"rank"}]}]})J");
  auto res = run(s, 5);
  // Rank r sends after 0.001*(P-r) s: rank 1's message, sent at 0.004 s, is the last one the master takes.
  EXPECT_NEAR(res.ranks[0].finish_s, 0.004 + one_way(64), 1e-9);
  EXPECT_EQ(res.ranks[0].messages_sent, 0u);
}

TEST(Replay, UnwaitedRequestIsAnError) {
  auto s = sk(R"J("body":[{"op":"isend","peer":"(rank+1)%P","size":8},{"op":"recv","peer":"(rank+P-1)%P","size":8}]})J");
  EXPECT_THROW(run(s, 2), ReplayError);
}

TEST(Replay, MessageNeverReceivedIsAnError) {
  auto s = sk(R"J("programs":[{"ranks":"rank == 0","body":[{"op":"send","id":"orphan","peer":1,"size":64,"tag":9}]},
                              {"ranks":"1","body":[]}]})J");
  try {
    run(s, 2);
    FAIL();
  } catch (const ReplayError& e) {
    EXPECT_NE(std::string(e.what()).find("1 message(s) sent but never received:\n  rank 0 -> rank 1: tag 9, 64 bytes, block orphan"),
              std::string::npos)
        << e.what();
  }
}

TEST(Replay, TruncatedMessageIsAnError) {
  auto s = sk(R"J("programs":[{"ranks":"rank == 0","body":[{"op":"send","peer":1,"size":100}]},
                              {"ranks":"1","body":[{"op":"recv","peer":0,"size":10}]}]})J");
  try {
    run(s, 2);
    FAIL();
  } catch (const ReplayError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(Replay, MoreRanksThanHostsIsAnErrorBeforeSimulating) {
  auto s = sk(R"J("body":[{"op":"barrier"}]})J");
  try {
    run(s, 9, {}, 8);
    FAIL();
  } catch (const ReplayError& e) {
    EXPECT_NE(std::string(e.what()).find("P=9 ranks but the platform has only 8 compute hosts"), std::string::npos)
        << e.what();
  }
}

TEST(Replay, PeerOutsideRangeIsAnErrorBeforeSimulating) {
  auto s = sk(R"J("body":[{"op":"send","id":"ring","peer":"rank+1","size":8}]})J");
  EXPECT_THROW(run(s, 4), skeletons::SkeletonError);
}

TEST(Replay, ProbabilisticBranchesAreSeededAndDeterministic) {
  auto s = sk(R"J("body":[{"op":"loop","count":200,"body":[{"op":"if","prob":0.3,"then":[{"op":"compute","seconds":0.001}]}]}]})J");
  // each replay in its own child process (one SimGrid engine per process), so the same seed is replayed twice
  auto replay_seed = [&](std::uint64_t seed) {
    ReplayOptions o;
    o.platform_path = write_platform(4);
    o.P = 4;
    o.seed = seed;
    return replay_in_child(s, o);
  };
  const auto a = replay_seed(42), again = replay_seed(42), other = replay_seed(43);
  ASSERT_EQ(a.ranks.size(), 4u);
  ASSERT_EQ(again.ranks.size(), 4u);
  ASSERT_EQ(other.ranks.size(), 4u);
  // About 30% of 200 iterations per rank: a binomial count far from 0 and 200.
  for (const auto& r : a.ranks) {
    EXPECT_GT(r.compute_s, 0.001 * 35);
    EXPECT_LT(r.compute_s, 0.001 * 85);
  }
  EXPECT_NE(a.ranks[0].compute_s, a.ranks[1].compute_s);  // ranks draw from different streams
  // deterministic: the same seed draws the same branches on every rank, to the last bit, and the same total
  for (std::size_t r = 0; r < 4; ++r) EXPECT_EQ(again.ranks[r].compute_s, a.ranks[r].compute_s) << "rank " << r;
  EXPECT_EQ(again.predicted_time_s, a.predicted_time_s);
  // seeded: another seed draws other branches (4 ranks x 200 draws: the same counts on all four would be a broken seed)
  int same = 0;
  for (std::size_t r = 0; r < 4; ++r) same += other.ranks[r].compute_s == a.ranks[r].compute_s;
  EXPECT_LT(same, 4) << "seed 43 drew what seed 42 drew on every rank";
}

TEST(Replay, TimelineIsWrittenSorted) {
  auto path = std::filesystem::temp_directory_path() / ("mksim_tl_" + std::to_string(::getpid()) + ".csv");
  run(sk(PINGPONG), 2, {{"S", 64}, {"R", 2}}, 0, 1, path.string());
  std::ifstream f(path);
  std::string header, line;
  std::getline(f, header);
  EXPECT_EQ(header, "rank,start_s,end_s,kind,block");
  int rows = 0, last_rank = -1;
  while (std::getline(f, line)) {
    int rank = std::stoi(line.substr(0, line.find(',')));
    EXPECT_GE(rank, last_rank);
    last_rank = rank;
    ++rows;
  }
  EXPECT_EQ(rows, 8);
  std::filesystem::remove(path);
}

TEST(Replay, RecordsConfigurationAndInputs) {
  auto res = run(sk(PINGPONG), 2);
  std::map<std::string, std::string> a(res.attributes.begin(), res.attributes.end());
  EXPECT_EQ(a["simgrid.network/model"], "CM02");
  EXPECT_EQ(a["simgrid.network/latency-factor"], "1");
  EXPECT_EQ(a["simgrid.network/crosstraffic"], "no");
  EXPECT_EQ(a["machine"], "testbox");
  EXPECT_EQ(a["param.S"], "8");
  EXPECT_EQ(a["P"], "2");
  EXPECT_EQ(a["skeleton.hash"].size(), 16u);
  EXPECT_TRUE(std::is_sorted(res.attributes.begin(), res.attributes.end()));
}

// ---- format v2: regions and compute distributions ----

namespace {

skeletons::Skeleton sk2(const std::string& body) {
  return skeletons::parse_skeleton(R"J({"format":"mksim-skeleton","version":2,"name":"t",)J" + body, "t.json");
}

// A loop whose compute draws from a distribution, interleaved with probabilistic branches (both draw from
// the rank's one stream), inside a region.
const char* SAMPLED = R"J("params":{"R":300},"body":[{"op":"region","id":"solve","name":"solve","body":[
  {"op":"loop","id":"steps","count":"R","body":[
    {"op":"if","prob":0.3,"then":[{"op":"compute","id":"extra","seconds":1e-4}]},
    {"op":"compute","id":"work","seconds":"1e-3 * (1 + rank)","dist":{"type":"empirical",
     "quantiles":[0.4,0.6,0.7,0.8,0.9,1.0,1.1,1.2,1.3,1.5,2.5]}}]}]}]})J";

// Everything a child writes to fd until it closes it, then the child's exit status.
std::string read_until_exit(int fd, pid_t pid, int& status) {
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  close(fd);
  waitpid(pid, &status, 0);
  return text;
}

// Runs a replay in a child process (one simulation per process) and returns each rank's finish time and
// compute time, as text with every digit.
std::string replay_in_child(const skeletons::Skeleton& s, int P, std::uint64_t seed) {
  int fd[2];
  if (pipe(fd) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    std::ostringstream o;
    o.precision(17);
    try {
      const auto res = run(s, P, {}, 0, seed);
      for (const auto& r : res.ranks) o << r.finish_s << " " << r.compute_s << "\n";
    } catch (const std::exception& e) {
      o << "error: " << e.what();
    }
    const std::string text = o.str();
    if (write(fd[1], text.data(), text.size()) < 0) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  int status = 0;
  const std::string text = read_until_exit(fd[0], pid, status);
  return text;
}

}  // namespace

TEST(ReplayV2, RegionsAreReportedPerBlockWithTheirBodysTime) {
  auto s = sk2(R"J("body":[{"op":"region","id":"solve","name":"solve","phase":"s","body":[
      {"op":"loop","id":"steps","count":3,"body":[{"op":"compute","id":"work","seconds":1e-3}]},
      {"op":"allreduce","id":"sum","size":8}]}]})J");
  auto res = run(s, 4);
  std::map<std::string, results::BlockTotals> by_id;
  for (const auto& b : res.blocks) by_id[b.id] = b;
  ASSERT_TRUE(by_id.count("solve"));
  const auto& region = by_id["solve"];
  EXPECT_EQ(region.op, "region");
  EXPECT_EQ(region.phase, "s");
  EXPECT_EQ(region.executions, 4u);  // once per rank
  EXPECT_NEAR(by_id["steps"].time_s, 4 * 3e-3, 1e-12);
  EXPECT_NEAR(region.time_s, by_id["steps"].time_s + by_id["sum"].time_s, 1e-12);  // like a loop: its body's time
  EXPECT_GT(by_id["sum"].time_s, 0);
  // the region contains others and spends no time itself: phase totals count the leaves once
  ASSERT_EQ(res.phases.size(), 1u);
  EXPECT_EQ(res.phases[0].phase, "s");
  EXPECT_NEAR(res.phases[0].compute_s, 4 * 3e-3, 1e-12);
}

TEST(ReplayV2, SampledComputeIsWhatExpansionDraws) {
  auto s = sk2(SAMPLED);
  const std::uint64_t seed = 11;
  const int P = 3;
  auto path = std::filesystem::temp_directory_path() / ("mksim_tl_v2_" + std::to_string(::getpid()) + ".csv");
  auto res = run(s, P, {}, 0, seed, path.string());
  // the timeline's compute rows of each rank, in order, against expand_rank's compute amounts
  std::map<int, std::vector<double>> replayed;
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  while (std::getline(f, line)) {
    std::stringstream row(line);
    std::string rank, start, end, kind;
    std::getline(row, rank, ',');
    std::getline(row, start, ',');
    std::getline(row, end, ',');
    std::getline(row, kind, ',');
    if (kind == "compute") replayed[std::stoi(rank)].push_back(std::stod(end) - std::stod(start));
  }
  std::filesystem::remove(path);
  const auto frame = skeletons::bind_parameters(s, P, {});
  for (int r = 0; r < P; ++r) {
    std::vector<double> expanded;
    double total = 0;
    for (const auto& op : skeletons::expand_rank(s, frame, r, seed))
      if (op.kind == skeletons::ExpandedOp::Kind::COMPUTE) {
        expanded.push_back(op.amount);
        total += op.amount;
      }
    ASSERT_EQ(replayed[r].size(), expanded.size()) << "rank " << r;
    for (std::size_t i = 0; i < expanded.size(); ++i)
      ASSERT_NEAR(replayed[r][i], expanded[i], 2e-9) << "rank " << r << " compute " << i;  // the CSV has 9 decimals
    EXPECT_NEAR(res.ranks[static_cast<std::size_t>(r)].compute_s, total, 1e-12 * total) << "rank " << r;
  }
}

// "draw": "same": the k-th execution of the block draws the same multiplier at every rank, so a ring whose work varies
// widely (cv 1) stays balanced: every rank computes the same and finishes together. Drawn per rank, the same
// skeleton's ranks compute different amounts and wait for each other. In a replay, as expand_rank draws them.
TEST(ReplayV2, ComputeDrawnAlikeKeepsABalancedRingBalanced) {
  auto ring = [](const std::string& draw) {
    return sk2(R"J("params":{"R":40},"body":[{"op":"loop","id":"steps","count":"R","body":[
      {"op":"compute","id":"work","seconds":1e-3,"dist":{"type":"lognormal","cv":1,"draw":")J" + draw + R"J("}},
      {"op":"if","prob":0.5,"then":[{"op":"compute","id":"extra","seconds":0}]},
      {"op":"irecv","peer":"(rank - 1) % P","size":8},{"op":"isend","peer":"(rank + 1) % P","size":8},
      {"op":"waitall"}]}]})J");
  };
  auto lines = [](const std::string& text) {
    std::vector<std::pair<double, double>> out;  // finish, compute per rank
    std::istringstream in(text);
    for (double f, c; in >> f >> c;) out.emplace_back(f, c);
    return out;
  };
  const auto same = lines(replay_in_child(ring("same"), 4, 5)), own = lines(replay_in_child(ring("rank"), 4, 5));
  ASSERT_EQ(same.size(), 4u);
  ASSERT_EQ(own.size(), 4u);
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ(same[static_cast<std::size_t>(r)].second, same[0].second) << "rank " << r;
    EXPECT_NEAR(same[static_cast<std::size_t>(r)].first, same[0].first, 1e-9 * same[0].first) << "rank " << r;
    EXPECT_NE(own[static_cast<std::size_t>(r)].second, own[0].second) << "rank " << r;
  }
  // drawn per rank, each exchange waits for the slowest neighbour: later than the same amounts drawn alike
  EXPECT_GT(own[0].first, same[0].first * 1.05);
  // expansion draws the same amounts at every rank, whatever each rank's own stream does between them (the branch)
  const auto s = ring("same");
  const auto frame = skeletons::bind_parameters(s, 4, {});
  std::vector<double> first;
  for (int r = 0; r < 4; ++r) {
    std::vector<double> amounts;
    for (const auto& op : skeletons::expand_rank(s, frame, r, 5))
      if (op.kind == skeletons::ExpandedOp::Kind::COMPUTE && op.amount > 0) amounts.push_back(op.amount);  // not "extra"
    if (r == 0) first = amounts;
    EXPECT_EQ(amounts, first) << "rank " << r;
  }
}

TEST(ReplayV2, SampledComputeKeepsItsMeanAndIsReproducible) {
  auto s = sk2(SAMPLED);
  const int P = 4, R = 300;
  const std::string a = replay_in_child(s, P, 5), b = replay_in_child(s, P, 5), c = replay_in_child(s, P, 6);
  ASSERT_EQ(a.find("error"), std::string::npos) << a;
  EXPECT_EQ(a, b);  // same seed, same times, to the last digit
  EXPECT_NE(a, c);
  // Each rank's compute: R draws of work (mean 1 ms * (1 + rank), the quantiles' sd 0.417 of it) and
  // Binomial(R, 0.3) times 0.1 ms. The total over ranks must be within 5 standard errors of its mean.
  const std::vector<double> q = {0.4, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.5, 2.5};
  double m = 0, m2 = 0;  // mean and second moment of the piecewise-linear distribution
  for (std::size_t i = 0; i + 1 < q.size(); ++i) {
    m += 0.05 * (q[i] + q[i + 1]);
    m2 += 0.1 * (q[i] * q[i] + q[i] * q[i + 1] + q[i + 1] * q[i + 1]) / 3;
  }
  const double sd = std::sqrt(m2 - m * m) / m;  // relative to the mean (the reader rescales to mean 1)
  double expected = 0, variance = 0, got = 0;
  for (int r = 0; r < P; ++r) {
    const double w = 1e-3 * (1 + r);
    expected += R * w + R * 0.3 * 1e-4;
    variance += R * (w * sd) * (w * sd) + R * 0.3 * 0.7 * 1e-4 * 1e-4;
  }
  std::istringstream in(a);
  double finish = 0, compute = 0;
  while (in >> finish >> compute) got += compute;
  EXPECT_NEAR(got, expected, 5 * std::sqrt(variance));
}

// A replay in a child process must not write the parent's unflushed stdout a second time: `mkcalib validate`
// used as a library printed its report once per replayed run when stdout was a pipe.
TEST(ReplayInChild, DoesNotRepeatWhatTheParentHadNotFlushed) {
  int fd[2];
  ASSERT_EQ(pipe(fd), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], STDOUT_FILENO);  // a pipe: stdout is fully buffered
    std::printf("marker\n");
    mksim::sim::ReplayOptions ro;
    ro.platform_path = std::string(MKSIM_SOURCE_DIR) + "/platforms/paragon.xml";
    ro.P = 4;
    int code = 0;
    try {
      for (int i = 0; i < 2; ++i)
        mksim::sim::replay_in_child(mksim::skeletons::load_skeleton(std::string(MKSIM_SOURCE_DIR) + "/skeletons/examples/atm2d.json"), ro);
    } catch (...) {
      code = 3;
    }
    std::exit(code);  // flushes "marker" here, once
  }
  close(fd[1]);
  int status = 0;
  const std::string text = read_until_exit(fd[0], pid, status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::size_t count = 0;
  for (std::size_t at = text.find("marker"); at != std::string::npos; at = text.find("marker", at + 1)) ++count;
  EXPECT_EQ(count, 1u) << text;
}

// ---- shared coins: the data-dependent messages of coin_ring (skeletons/apps/coin_ring.c) ----

namespace {
// Every step each rank sends an extra message to its right neighbour when its coin falls and receives one from
// its left neighbour when the left one's coin fell. With "coin" both sides read the same toss; without it each
// rank draws its own and the messages do not pair.
std::string coin_ring(bool shared) {
  const std::string send_coin = shared ? R"("coin":"extra",)" : "";
  const std::string recv_coin = shared ? R"("coin":"extra","coin_rank":"(rank + P - 1) % P",)" : "";
  return R"J("params":{"steps":100},"body":[{"op":"loop","count":"steps","body":[
    {"op":"if","prob":0.3,)J" + send_coin + R"J("then":[{"op":"send","peer":"(rank + 1) % P","size":64,"tag":2}]},
    {"op":"if","prob":0.3,)J" + recv_coin + R"J("then":[{"op":"recv","peer":"(rank + P - 1) % P","size":64,"tag":2}]},
    {"op":"compute","seconds":1e-5}]}]})J";
}
}  // namespace

TEST(ReplayV2, SharedCoinsPairTheMessagesOfDataDependentBranches) {
  auto s = sk2(coin_ring(true));
  const int P = 8;
  const auto res = run(s, P, {}, 0, 3);
  EXPECT_GT(res.predicted_time_s, 100 * 1e-5);
  // what replay ran is what expansion says: per rank, sends to the right = receives of the right neighbour
  const auto frame = skeletons::bind_parameters(s, P, {});
  std::vector<int> sends(P), recvs(P);
  for (int r = 0; r < P; ++r)
    for (const auto& op : skeletons::expand_rank(s, frame, r, 3)) {
      sends[r] += op.kind == skeletons::ExpandedOp::Kind::SEND;
      recvs[r] += op.kind == skeletons::ExpandedOp::Kind::RECV;
    }
  int total = 0;
  for (int r = 0; r < P; ++r) {
    EXPECT_EQ(recvs[(r + 1) % P], sends[r]) << "rank " << r;
    total += sends[r];
  }
  EXPECT_NEAR(total, 0.3 * 100 * P, 4 * std::sqrt(100 * P * 0.3 * 0.7));
}

TEST(ReplayV2, WithoutSharedCoinsTheSameBranchesLeaveMessagesUnpaired) {
  auto s = sk2(coin_ring(false));
  try {
    run(s, 8, {}, 0, 3);
    FAIL() << "independent draws paired every message";
  } catch (const DeadlockError& e) {  // a receive whose partner never tossed its coin waits for ever
    EXPECT_NE(std::string(e.what()).find("recv from"), std::string::npos) << e.what();
  } catch (const ReplayError& e) {  // or a message sent that no receive takes
    EXPECT_NE(std::string(e.what()).find("sent but never received"), std::string::npos) << e.what();
  }
}

// ---- format v3: communicators (issue 23). The test cluster has a link per host, so collectives of disjoint
// communicators running at once share nothing, and each one's time is its algorithm's closed form at its size.

namespace {

skeletons::Skeleton sk3(const std::string& body) {
  return skeletons::parse_skeleton(R"J({"format":"mksim-skeleton","version":3,"name":"t",)J" + body, "t.json");
}

// A 4 x 4 periodic grid, its rows and columns (Cart_sub), a split with reversed keys, a dup of world.
const std::string GRID_COMMS = R"J("comms":{
    "grid":{"cart":"world","dims":["dims(P, 2, 0)","dims(P, 2, 1)"],"periods":[true,true]},
    "row":{"cart_sub":"grid","remain":[false,true]},
    "col":{"cart_sub":"grid","remain":[true,false]},
    "half":{"split":"world","color":"rank % 2","key":"-rank"},
    "copy":{"dup":"world"}},)J";

results::RunResult run_ops(const std::string& ops, int P, std::shared_ptr<const CollectiveTable> table = nullptr) {
  ReplayOptions o;
  o.platform_path = write_platform(P);
  o.P = P;
  o.collectives = std::move(table);
  return replay(sk3(GRID_COMMS + R"J("body":)J" + ops + "}"), o);
}

}  // namespace

// A bcast along each row of 4 (binomial: 2 rounds); empty messages, so the root's two sends share no bandwidth.
TEST(ReplayV3, RowBroadcastIsABinomialTreeOverTheRow) {
  const auto res = run_ops(R"J([{"op":"bcast","comm":"row","root":1,"size":0}])J", 16);
  EXPECT_NEAR(res.predicted_time_s, 2 * one_way(0), 1e-9);
  EXPECT_EQ(res.total_messages, 4u * 3u);  // 3 messages per row of 4
  // the root (row rank 1: world 1, 5, 9, 13) only sends
  for (int r : {1, 5, 9, 13}) EXPECT_NEAR(res.ranks[static_cast<std::size_t>(r)].finish_s, 2 * S_OV, 1e-12) << r;
}

// An allreduce down each column of 4 (recursive doubling: 2 rounds), and an alltoall along each row of 4 (pairwise:
// 3 rounds), rendezvous-sized: as the same collectives over a world of 4 ranks.
TEST(ReplayV3, ColumnAllreduceAndRowAlltoallTakeTheirRoundsAtTheirSize) {
  const auto res = run_ops(R"J([{"op":"allreduce","comm":"col","size":4096,"id":"a"},
                                {"op":"alltoall","comm":"row","size":4096,"id":"b"}])J", 16);
  EXPECT_NEAR(res.predicted_time_s, 2 * one_way(4096) + 3 * one_way(4096), 1e-9);
  EXPECT_EQ(res.total_messages, 16u * 2u + 16u * 3u);
}

// A pipeline along the split {6, 4, 2, 0} / {7, 5, 3, 1} (key -rank): comm rank 0 is the highest world rank, the
// chain ends at world ranks 0 and 1, P*W + (P-1) one-way times later (as Replay.PipelineFillTime on world).
TEST(ReplayV3, PipelineFollowsTheSplitsKeyOrder) {
  const auto res = run_ops(R"J([{"op":"if","cond":"half.rank > 0","then":[{"op":"recv","comm":"half","peer":"half.rank - 1","size":256}]},
      {"op":"compute","seconds":0.001},
      {"op":"if","cond":"half.rank < half.size - 1","then":[{"op":"send","comm":"half","peer":"half.rank + 1","size":256}]}])J", 8);
  const double T = 4 * 0.001 + 3 * one_way(256);
  EXPECT_NEAR(res.ranks[0].finish_s, T, 1e-9);
  EXPECT_NEAR(res.ranks[1].finish_s, T, 1e-9);
  EXPECT_NEAR(res.ranks[6].finish_s, 0.001 + S_OV, 1e-9);
  EXPECT_NEAR(res.predicted_time_s, T, 1e-9);
}

// A shift on a 1-D grid that is not periodic: the ends send to and receive from MPI_PROC_NULL (nothing).
TEST(ReplayV3, ProcNullPeersSendAndReceiveNothing) {
  ReplayOptions o;
  o.platform_path = write_platform(4);
  o.P = 4;
  const auto res = replay(sk3(R"J("comms":{"line":{"cart":"world","dims":["P"]}},
    "let":{"x":"cart_coord(rank, 0, P, 1, 1)"},
    "body":[{"op":"irecv","comm":"line","peer":"cart_rank(x - 1, 0, 0, P, 1, 1)","size":512,"req":"l"},
            {"op":"isend","comm":"line","peer":"cart_rank(x + 1, 0, 0, P, 1, 1)","size":512,"req":"r"},
            {"op":"wait","req":"l"},{"op":"wait","req":"r"}]})J"),
                          o);
  EXPECT_EQ(res.total_messages, 3u);
  EXPECT_NEAR(res.ranks[0].finish_s, S_OV, 1e-12);  // its receive is from PROC_NULL
  EXPECT_NEAR(res.ranks[3].finish_s, one_way(512), 1e-9);
  EXPECT_NEAR(res.predicted_time_s, one_way(512), 1e-9);
}

// Messages on different communicators never match: rank 1 receives on world first, into a buffer for the world
// message only; were contexts ignored, it would take the small message sent first on the dup, and the dup's
// receive would then be handed the world message, larger than its buffer (a truncation error).
TEST(ReplayV3, MessagesOfDifferentCommunicatorsNeverMatch) {
  const auto res = run_ops(R"J([{"op":"if","cond":"rank == 0","then":[
        {"op":"send","comm":"copy","peer":1,"size":10},{"op":"send","peer":1,"size":1000}]},
      {"op":"if","cond":"rank == 1","then":[
        {"op":"recv","peer":0,"size":1000},{"op":"recv","comm":"copy","peer":"any","size":10}]}])J", 2);
  EXPECT_EQ(res.total_messages, 2u);
  EXPECT_NEAR(res.ranks[1].finish_s, S_OV + S_OV + L + 1000 / BW + R_OV + O_OV + R_OV + O_OV, 1e-9);
}

// --collectives: a collective on a communicator costs the measured t at its size (4 ranks: 2e-3 s here), not at P.
TEST(ReplayV3, MeasuredCollectivesTakeTheCommunicatorsSize) {
  auto table = std::make_shared<CollectiveTable>();
  table->points["allreduce"][2] = {{8, 1e-3}};
  table->points["allreduce"][4] = {{8, 2e-3}};  // t = 1e-3 * log2(n)
  const auto res = run_ops(R"J([{"op":"allreduce","comm":"col","size":8}])J", 16, table);
  EXPECT_NEAR(res.predicted_time_s, 2e-3, 1e-12);
  bool noted = false;  // 16 ranks would be an extrapolation; 4 are measured: no note
  for (const auto& [k, v] : res.attributes) noted = noted || k == "collectives.extrapolated";
  EXPECT_FALSE(noted);
}

// A message to oneself (a periodic dimension of extent 1, a code that copies its own halo through MPI) on the T3E,
// whose routing table has no route from a node to itself: it is a copy in memory, delivered at once, so a rank
// pays its send and receive overheads only, whatever the size, eager or rendezvous (SimGrid alone aborts here:
// "no connecting path"). One simulation per process: each size replays in a child.
TEST(ReplayV3, MessagesToOneselfCrossNoLink) {
  for (double bytes : {8.0, 1048576.0}) {
    ReplayOptions o;
    o.platform_path = std::string(MKSIM_SOURCE_DIR) + "/platforms/t3e.xml";
    o.P = 4;
    o.params = {{"S", bytes}};
    const auto res = replay_in_child(sk3(R"J("params":{"S":8},"body":[
        {"op":"irecv","peer":"rank","size":"S","req":"r"},{"op":"isend","peer":"rank","size":"S","req":"s"},
        {"op":"wait","req":"s"},{"op":"wait","req":"r"}]})J"),
                            o);
    EXPECT_EQ(res.total_messages, 4u) << bytes;
    EXPECT_NEAR(res.predicted_time_s, 2 * 1.779e-05, 1e-12) << bytes;
  }
}

// The network of workstations (`mksim platform --machine now`): 96 hosts are two 48-port edge switches joined to
// one core switch by 10 parallel links each. 24 pairs inside a switch each get a whole host link; 48 pairs across
// the switches share the 10 uplinks, 5 flows on the busiest: 5 times as long, and an empty message crosses 4
// cables instead of 2 (2 us each).
TEST(ReplayV3, WorkstationsShareTheirSwitchesUplinks) {
  const auto dir = std::filesystem::temp_directory_path() / ("mksim_now_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string xml = (dir / "now96.xml").string();
  std::ofstream(xml) << mksim::platforms::generate_platform_xml(mksim::platforms::preset_for("now", 96));
  auto time = [&](double D, double S) {
    ReplayOptions o;
    o.platform_path = xml;
    o.P = 96;
    o.params = {{"D", D}, {"S", S}};
    return replay_in_child(sk(R"J("params":{"S":8,"D":48},"body":[
        {"op":"if","cond":"rank < D","then":[{"op":"send","peer":"rank + D","size":"S"}],
         "else":[{"op":"if","cond":"rank < 2*D","then":[{"op":"recv","peer":"rank - D","size":"S"}]}]}]})J"),
                           o)
        .predicted_time_s;
  };
  const double same = time(24, 1e7), across = time(48, 1e7);
  EXPECT_NEAR(across / same, 5.0, 0.01);
  EXPECT_NEAR(time(48, 0) - time(24, 0), 2 * 2e-6, 1e-9);  // empty messages: latency only
  std::filesystem::remove_all(dir);
}
