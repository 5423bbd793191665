// Communication phase graphs (skeletons/builder/cpg.hpp): seed 000 s.3's shift and pipeline written as
// traces here, the other cases of the construction on small written traces, and the reference programs
// (pge1, pge2, atm2d, cg) traced with real OpenMPI at P = 4 and 8.
#include "skeletons/builder/cpg.hpp"
#include "trace_writer.hpp"

#include "skeletons/trace/reader.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace {

namespace fs = std::filesystem;
using mksim::skeletons::builder::build_cpg;
using mksim::skeletons::builder::CpgOptions;
using mksim::skeletons::builder::describe;
using mksim::skeletons::builder::fold_rank;
using mksim::skeletons::builder::Loop;
using mksim::skeletons::builder::Phase;
using mksim::skeletons::builder::PhaseGraph;
using mksim::skeletons::builder::PhaseType;
using mksim::skeletons::builder::RankProgram;
using mksim::skeletons::builder::Seq;
using mksim::trace::Event;
using mksim::trace::Kind;
using mksim::trace::RankTrace;
using TraceRun = mksim::trace::Run;

// One rank's trace written call by call: each call takes 1 ms; compute() advances the clock between calls.
struct Writer : test_trace::TraceWriter {
  Writer(int rank, int P) : TraceWriter(1e-3, 0) {
    t.rank = rank;
    t.world_size = P;
    call(Kind::INIT, 0);
  }
  void send(int peer, int tag, long bytes, std::uint64_t site) { call(Kind::SEND, site, peer, tag, bytes); }
  void recv(int peer, int tag, long bytes, std::uint64_t site) { call(Kind::RECV, site, peer, tag, bytes); }
  void collective(Kind k, long bytes, std::uint64_t site) { call(k, site, -1, -1, bytes); }
};

TraceRun make_run(std::vector<Writer>& ws) {
  TraceRun run;
  run.P = static_cast<int>(ws.size());
  for (Writer& w : ws) {
    w.call(Kind::FINALIZE, 0);
    run.ranks.push_back(w.t);
  }
  return run;
}

std::vector<Writer> writers(int P) {
  std::vector<Writer> ws;
  for (int r = 0; r < P; ++r) ws.emplace_back(r, P);
  return ws;
}

std::vector<int> range(int from, int to) {  // from..to inclusive, either direction
  std::vector<int> v;
  for (int r = from;; r += from <= to ? 1 : -1) {
    v.push_back(r);
    if (r == to) break;
  }
  return v;
}

std::vector<const Phase*> of_type(const PhaseGraph& g, PhaseType type) {
  std::vector<const Phase*> out;
  for (const Phase& p : g.phases)
    if (p.type == type) out.push_back(&p);
  return out;
}

std::vector<const Phase*> point_to_point(const PhaseGraph& g) {
  std::vector<const Phase*> out;
  for (const Phase& p : g.phases)
    if (p.type != PhaseType::COLLECTIVE) out.push_back(&p);
  return out;
}

bool independent(const PhaseGraph& g, const Phase* a, const Phase* b) {
  EXPECT_EQ(a->id + 1, b->id) << "phases " << a->id << " and " << b->id << " are not consecutive\n" << describe(g);
  return g.order.at(static_cast<std::size_t>(a->id)).independent;
}

constexpr std::uint64_t SEND_SITE = 0x5e4d, RECV_SITE = 0x4ecf;
constexpr int ITER = 5;

// Seed 000 s.3: "if (me < 4) send(me+1); compute; if (me > 1) recv(me-1)" on 4 processors
TraceRun shift_run(std::uint64_t send_site = SEND_SITE, std::uint64_t recv_site = RECV_SITE) {
  auto ws = writers(4);
  for (int i = 0; i < ITER; ++i)
    for (int r = 0; r < 4; ++r) {
      if (r < 3) ws[r].send(r + 1, 7, 64, send_site);
      ws[r].compute(0.5);
      if (r > 0) ws[r].recv(r - 1, 7, 64, recv_site);
      ws[r].compute(0.25);
    }
  return make_run(ws);
}

// ... and "if (me > 1) recv(me-1); compute; if (me < 4) send(me+1)"
TraceRun pipeline_run(std::uint64_t send_site = SEND_SITE, std::uint64_t recv_site = RECV_SITE, int P = 4) {
  auto ws = writers(P);
  for (int i = 0; i < ITER; ++i)
    for (int r = 0; r < P; ++r) {
      if (r > 0) ws[r].recv(r - 1, 7, 64, recv_site);
      ws[r].compute(0.5);
      if (r < P - 1) ws[r].send(r + 1, 7, 64, send_site);
      ws[r].compute(0.25);
    }
  return make_run(ws);
}

TEST(Cpg, ShiftIsSynchronous) {
  const PhaseGraph g = build_cpg(shift_run());
  ASSERT_EQ(g.phases.size(), 1u) << describe(g);
  const Phase& ph = g.phases[0];
  EXPECT_EQ(ph.type, PhaseType::SYNCHRONOUS);
  EXPECT_TRUE(ph.type_decided);
  EXPECT_TRUE(ph.receive_first.empty());
  EXPECT_EQ(ph.senders, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(ph.receivers, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ph.depth, 1);
  EXPECT_EQ(ph.occurrences, static_cast<std::uint64_t>(ITER));
  EXPECT_EQ(ph.messages, 3u * ITER);
  ASSERT_EQ(ph.pairs.size(), 3u);
  EXPECT_EQ(ph.pairs[1].from, 1);
  EXPECT_EQ(ph.pairs[1].to, 2);
  EXPECT_EQ(ph.pairs[1].messages, static_cast<std::uint64_t>(ITER));
  EXPECT_EQ(ph.pairs[1].bytes_total, 64 * ITER);
  ASSERT_EQ(ph.send_points.size(), 1u);
  ASSERT_EQ(ph.recv_points.size(), 1u);
  EXPECT_EQ(g.points[static_cast<std::size_t>(ph.send_points[0])].site, SEND_SITE);
  EXPECT_EQ(g.points[static_cast<std::size_t>(ph.recv_points[0])].site, RECV_SITE);
  // s.4.1: the compute between a send and the following receive (ranks 1 and 2, every iteration)
  EXPECT_EQ(ph.overlap_s.n, 2u * ITER);
  EXPECT_NEAR(ph.overlap_s.mean(), 0.5, 1e-9);
}

TEST(Cpg, PipelineIsAsynchronousWithDepthPMinus1) {
  const TraceRun run = pipeline_run();
  std::vector<RankProgram> folded;
  for (const RankTrace& t : run.ranks) folded.push_back(fold_rank(t));
  const PhaseGraph g = build_cpg(run, folded);
  ASSERT_EQ(g.phases.size(), 1u) << describe(g);
  const Phase& ph = g.phases[0];
  EXPECT_EQ(ph.type, PhaseType::PIPELINE);
  EXPECT_EQ(ph.receive_first, (std::vector<int>{1, 2}));  // processors 2 and 3 of the paper
  EXPECT_EQ(ph.senders, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(ph.receivers, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ph.depth, 3);
  EXPECT_EQ(ph.chain, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_FALSE(ph.cyclic);
  EXPECT_EQ(ph.occurrences, static_cast<std::uint64_t>(ITER));
  // the compute between a receive and the following send
  EXPECT_EQ(ph.overlap_s.n, 2u * ITER);
  EXPECT_NEAR(ph.overlap_s.mean(), 0.5, 1e-9);
  // step 4: on every rank the innermost common loop is the loop of ITER iterations around both calls
  ASSERT_EQ(ph.anchors.size(), 4u);
  for (const auto& a : ph.anchors) {
    ASSERT_EQ(a.path.size(), 1u) << "rank " << a.rank;
    EXPECT_EQ(a.counts, (std::vector<std::uint64_t>{ITER}));
    const auto& node = folded[static_cast<std::size_t>(a.rank)].seq.at(a.path[0]);
    ASSERT_TRUE(std::holds_alternative<Loop>(node.op));
    EXPECT_EQ(std::get<Loop>(node.op).count, static_cast<std::uint64_t>(ITER));
  }
  const std::string text = describe(g);
  EXPECT_NE(text.find("phase 0: pipeline, depth 3, chain 0>1>2>3, occurrences 5"), std::string::npos) << text;
  EXPECT_NE(text.find("SL 0-2  RL 1-3  receive first 1,2"), std::string::npos) << text;
}

TEST(Cpg, SameCallPointsWithoutSitesKeyedByTag) {
  const PhaseGraph g = build_cpg(pipeline_run(0, 0, 6));
  EXPECT_FALSE(g.sites);
  ASSERT_EQ(g.phases.size(), 1u) << describe(g);
  EXPECT_EQ(g.points.size(), 2u);
  EXPECT_EQ(g.points[0].tag, 7);
  EXPECT_EQ(g.phases[0].type, PhaseType::PIPELINE);
  EXPECT_EQ(g.phases[0].depth, 5);
  EXPECT_NE(describe(g).find("MPI_Recv at tag 7 comm 0"), std::string::npos) << describe(g);
}

TEST(Cpg, RingPipelineDropsTheEdgeIntoTheStarter) {
  // rank 0 sends first and receives from P-1 at the end of each round (a token ring)
  const int P = 5;
  auto ws = writers(P);
  for (int i = 0; i < 3; ++i) {
    ws[0].send(1, 1, 8, SEND_SITE);
    for (int r = 1; r < P; ++r) {
      ws[r].recv(r - 1, 1, 8, RECV_SITE);
      ws[r].compute(0.1);
      ws[r].send((r + 1) % P, 1, 8, SEND_SITE);
    }
    ws[0].recv(P - 1, 1, 8, RECV_SITE);
  }
  const PhaseGraph g = build_cpg(make_run(ws));
  ASSERT_EQ(g.phases.size(), 1u);
  EXPECT_EQ(g.phases[0].type, PhaseType::PIPELINE);
  EXPECT_EQ(g.phases[0].chain, range(0, P - 1));
  EXPECT_EQ(g.phases[0].depth, P - 1);
  EXPECT_FALSE(g.phases[0].cyclic);
}

TEST(Cpg, CyclicChainWhenEveryRankReceivesFirst) {
  auto ws = writers(3);
  for (int r = 0; r < 3; ++r) {
    ws[r].recv((r + 2) % 3, 1, 8, RECV_SITE);
    ws[r].send((r + 1) % 3, 1, 8, SEND_SITE);
  }
  const PhaseGraph g = build_cpg(make_run(ws));
  ASSERT_EQ(g.phases.size(), 1u);
  EXPECT_EQ(g.phases[0].type, PhaseType::PIPELINE);
  EXPECT_TRUE(g.phases[0].cyclic);
  EXPECT_TRUE(g.phases[0].chain.empty());
  EXPECT_EQ(g.phases[0].depth, 2);  // the three ranks of the cycle
}

// PGE2's structure on 4 ranks: two one-way transfers on disjoint ranks, an exchange in the middle, two
// transfers outwards; each with its own call sites.
TEST(Cpg, IndependenceOfConsecutivePhases) {
  auto ws = writers(4);
  ws[0].send(1, 1, 8, 0xF1);  // F1: 0 -> 1
  ws[1].recv(0, 1, 8, 0xF1F1);
  ws[3].send(2, 2, 8, 0xF2);  // F2: 3 -> 2
  ws[2].recv(3, 2, 8, 0xF2F2);
  for (int r : {1, 2}) {      // S: 1 <-> 2
    const auto s = ws[r].isend(3 - r, 3, 16, 0x51);
    ws[r].recv(3 - r, 3, 16, 0x5151);
    ws[r].waitall({s}, 0x5152);
  }
  ws[1].send(0, 5, 8, 0xB1);  // P1: 1 -> 0
  ws[0].recv(1, 5, 8, 0xB1B1);
  ws[2].send(3, 6, 8, 0xB2);  // P2: 2 -> 3
  ws[3].recv(2, 6, 8, 0xB2B2);
  const PhaseGraph g = build_cpg(make_run(ws));
  ASSERT_EQ(g.phases.size(), 5u) << describe(g);
  const std::vector<std::vector<int>> senders{{0}, {3}, {1, 2}, {1}, {2}};
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(g.phases[i].senders, senders[i]) << describe(g);
  EXPECT_EQ(g.phases[2].type, PhaseType::SYNCHRONOUS);
  EXPECT_TRUE(g.phases[2].type_decided);
  EXPECT_FALSE(g.phases[0].type_decided);
  ASSERT_EQ(g.order.size(), 4u);
  EXPECT_TRUE(g.order[0].independent);   // RL(F1) = {1}, SL(F2) = {3}
  EXPECT_FALSE(g.order[1].independent);  // RL(F2) = {2}, SL(S) = {1, 2}
  EXPECT_FALSE(g.order[2].independent);  // RL(S) = {1, 2}, SL(P1) = {1}
  EXPECT_TRUE(g.order[3].independent);   // RL(P1) = {0}, SL(P2) = {2}
  EXPECT_NE(describe(g).find("order 0 -> 1: independent\norder 1 -> 2: dependent\n"), std::string::npos);
}

// Red/black exchanges from different call sites on each side: the waitall joins each side's isend and
// irecv into one operation, so one exchange phase; without it, two one-way transfers.
TEST(Cpg, CompletionLinksJoinIsendAndIrecvOfOneExchange) {
  const auto run_of = [] {
    auto ws = writers(2);
    for (int i = 0; i < ITER; ++i)
      for (int r = 0; r < 2; ++r) {
        const std::uint64_t base = r == 0 ? 0x100 : 0x200;  // red and black call the exchange from different lines
        const auto s = ws[r].isend(1 - r, 1 + r, 32, base + 1);
        const auto q = ws[r].irecv(1 - r, 2 - r, 32, base + 2);
        ws[r].compute(0.125);
        ws[r].waitall({s, q}, base + 3);
      }
    for (auto& w : ws) w.collective(Kind::BARRIER, 0, 0xBA);
    return make_run(ws);
  };
  const PhaseGraph linked = build_cpg(run_of());
  ASSERT_EQ(linked.phases.size(), 2u) << describe(linked);
  const Phase& ph = linked.phases[0];
  EXPECT_EQ(ph.type, PhaseType::SYNCHRONOUS);
  EXPECT_TRUE(ph.type_decided);
  EXPECT_EQ(ph.senders, (std::vector<int>{0, 1}));
  EXPECT_EQ(ph.receivers, (std::vector<int>{0, 1}));
  EXPECT_EQ(ph.send_points.size(), 2u);
  EXPECT_EQ(ph.recv_points.size(), 2u);
  EXPECT_EQ(ph.overlap_s.n, 2u * ITER);  // isend .. completion of the irecv, with the compute before waitall
  EXPECT_NEAR(ph.overlap_s.mean(), 0.125, 1e-9);

  const PhaseGraph split = build_cpg(run_of(), CpgOptions{.link_completions = false});
  ASSERT_EQ(split.phases.size(), 3u) << describe(split);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(split.phases[i].senders.size(), 1u);
    EXPECT_EQ(split.phases[i].receivers.size(), 1u);
    EXPECT_FALSE(split.phases[i].type_decided);
  }
  // rank 0 runs 0 -> 1 before 1 -> 0, rank 1 the other way round: the two are placed together,
  // before the barrier that both ranks run after them
  EXPECT_EQ(split.phases[0].senders, (std::vector<int>{0}));
  EXPECT_EQ(split.phases[2].type, PhaseType::COLLECTIVE);
}

TEST(Cpg, CollectivesAreOnePhasePerOperation) {
  auto ws = writers(3);
  for (int i = 0; i < 2; ++i)
    for (int r = 0; r < 3; ++r) {
      ws[r].collective(Kind::ALLREDUCE, 8, r == 0 ? 0xA0 : 0xA1);  // rank 0 calls it from another line
      ws[r].collective(Kind::BARRIER, 0, 0xBA);
    }
  ws[0].send(1, 0, 4, SEND_SITE);  // a message whose receive was never traced: ignored
  const PhaseGraph g = build_cpg(make_run(ws));
  ASSERT_EQ(g.phases.size(), 2u) << describe(g);
  EXPECT_EQ(g.unmatched, 1u);
  const Phase& a = g.phases[0];
  EXPECT_EQ(a.type, PhaseType::COLLECTIVE);
  EXPECT_EQ(a.collective, Kind::ALLREDUCE);
  EXPECT_EQ(a.recv_points.size(), 2u);
  EXPECT_EQ(a.senders, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(a.occurrences, 2u);
  EXPECT_EQ(a.messages, 6u);
  EXPECT_EQ(a.bytes_total, 48);
  EXPECT_EQ(g.phases[1].collective, Kind::BARRIER);
  EXPECT_FALSE(g.order.at(0).independent);
}

// trace::match_messages, which the CPG's step 1, unmatched_messages and the trace tests share: pairs by
// (sender, receiver, communicator, tag) in order; a wildcard receive takes its completion's source; the
// receive half of MPI_Sendrecv is its COMPLETE record; MPI_PROC_NULL is no message; a receive that never
// completed and a send nobody receives are left over, the former first.
TEST(Cpg, MatchMessagesPairsByChannelInOrder) {
  auto ws = writers(3);
  ws[0].send(1, 5, 10, SEND_SITE);
  ws[0].send(1, 5, 20, SEND_SITE);
  ws[0].send(mksim::trace::PROC_NULL, 5, 0, SEND_SITE);
  ws[0].call(Kind::SENDRECV, 0x5e, 2, 7, 8);  // sends to 2 with tag 7, receives from 2 with tag 8
  Event half;
  half.kind = Kind::COMPLETE;
  half.peer = 2;
  half.tag = 8;
  half.bytes = 16;
  half.root = 1;
  ws[0].t.events.push_back(half);
  const std::uint32_t any = ws[1].irecv(mksim::trace::ANY, 5, 64, RECV_SITE);  // posted as MPI_ANY_SOURCE
  ws[1].recv(0, 5, 20, RECV_SITE);
  ws[1].waitall({any}, 0x3a);
  ws[1].t.events.back().peer = 0;  // completed by rank 0's first send
  ws[1].t.events.back().bytes = 10;
  ws[1].irecv(2, 9, 4, RECV_SITE);  // never completed
  ws[1].recv(mksim::trace::PROC_NULL, 5, 0, RECV_SITE);
  ws[2].recv(0, 7, 8, RECV_SITE);
  ws[2].send(0, 8, 16, SEND_SITE);
  ws[2].send(1, 3, 4, SEND_SITE);  // nobody receives it
  const TraceRun run = make_run(ws);
  const mksim::trace::Matching m = mksim::trace::match_messages(run);
  ASSERT_EQ(m.pairs.size(), 4u);
  auto at = [&](const mksim::trace::MessageEnd& e) { return std::make_tuple(e.rank, e.call, e.done, e.peer, e.tag, e.bytes); };
  EXPECT_EQ(at(m.pairs[0].send), std::make_tuple(0, std::size_t{1}, std::size_t{1}, 1, 5, std::int64_t{10}));
  EXPECT_EQ(at(m.pairs[0].recv), std::make_tuple(1, std::size_t{1}, std::size_t{4}, 0, 5, std::int64_t{10}));
  EXPECT_EQ(at(m.pairs[1].send), std::make_tuple(0, std::size_t{2}, std::size_t{2}, 1, 5, std::int64_t{20}));
  EXPECT_EQ(at(m.pairs[1].recv), std::make_tuple(1, std::size_t{2}, std::size_t{2}, 0, 5, std::int64_t{20}));
  EXPECT_EQ(at(m.pairs[2].send), std::make_tuple(0, std::size_t{4}, std::size_t{4}, 2, 7, std::int64_t{8}));
  EXPECT_EQ(at(m.pairs[2].recv), std::make_tuple(2, std::size_t{1}, std::size_t{1}, 0, 7, std::int64_t{8}));
  EXPECT_EQ(at(m.pairs[3].send), std::make_tuple(2, std::size_t{2}, std::size_t{2}, 0, 8, std::int64_t{16}));
  EXPECT_EQ(at(m.pairs[3].recv), std::make_tuple(0, std::size_t{4}, std::size_t{5}, 2, 8, std::int64_t{16}));
  ASSERT_EQ(m.unpaired.size(), 2u);
  EXPECT_EQ(m.unpaired[0].why, mksim::trace::Unpaired::SOURCE_UNKNOWN);
  EXPECT_FALSE(m.unpaired[0].end.completed);
  EXPECT_EQ(at(m.unpaired[0].end), std::make_tuple(1, std::size_t{5}, std::size_t{5}, 2, 9, std::int64_t{4}));
  EXPECT_EQ(m.unpaired[1].why, mksim::trace::Unpaired::NO_RECEIVE);
  EXPECT_TRUE(m.unpaired[1].send);
  EXPECT_EQ(at(m.unpaired[1].end), std::make_tuple(2, std::size_t{3}, std::size_t{3}, 1, 3, std::int64_t{4}));
  const auto lines = mksim::trace::unmatched_messages(run);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "rank 1: receive from 2, tag 9, 4 bytes, comm 0, at site 0x4ecf: never completed, so its sender is unknown");
  EXPECT_EQ(lines[1], "rank 2: send to 1, tag 3, 4 bytes, comm 0, at site 0x5e4d: no matching receive");
  // the CPG joins the call points of each pair and counts what is left over
  const PhaseGraph g = build_cpg(run);
  EXPECT_EQ(g.unmatched, 2u);
  std::uint64_t messages = 0;
  for (const Phase& p : g.phases) messages += p.messages;
  EXPECT_EQ(messages, 4u) << describe(g);
}

TEST(Cpg, RejectsFoldedProgramsOfAnotherRun) {
  const TraceRun run = pipeline_run();
  std::vector<RankProgram> folded;
  for (const RankTrace& t : run.ranks) folded.push_back(fold_rank(t));
  EXPECT_NO_THROW(build_cpg(run, folded));
  folded[2] = fold_rank(run.ranks[1]);  // another rank's program
  EXPECT_THROW(build_cpg(run, folded), std::invalid_argument);
  folded[2] = fold_rank(run.ranks[2]);
  TraceRun longer = run;
  longer.ranks[2].events.insert(longer.ranks[2].events.begin() + 1, longer.ranks[2].events[1]);  // one call more
  EXPECT_THROW(build_cpg(longer, folded), std::invalid_argument);
  folded.pop_back();
  EXPECT_THROW(build_cpg(run, folded), std::invalid_argument);
}

// ---- the reference programs, traced with OpenMPI ----

const std::string BIN = MKSIM_BINARY_DIR;

class CpgTraced : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    tmp_ = fs::temp_directory_path() / ("mksim_cpg_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }

  // mktrace -np P -o DIR -- build/apps/APP ARGS, then the CPG of the run
  PhaseGraph traced(const std::string& app, int P, const std::string& args, const CpgOptions& options = {}) {
    const fs::path dir = tmp_ / (app + "-" + std::to_string(P));
    const std::string cmd = BIN + "/trace/mktrace -np " + std::to_string(P) + " -o " + dir.string() + " -- " + BIN +
                            "/apps/" + app + " " + args + " >" + dir.string() + ".log 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
    const TraceRun run = mksim::trace::read_run(dir.string(), {.require_complete = true});
    PhaseGraph g = build_cpg(run, options);
    EXPECT_EQ(g.unmatched, 0u);
    EXPECT_TRUE(g.sites);
    return g;
  }
  fs::path tmp_;
};

void expect_collectives_over_everyone(const PhaseGraph& g) {
  const auto coll = of_type(g, PhaseType::COLLECTIVE);
  EXPECT_FALSE(coll.empty()) << describe(g);
  for (const Phase* c : coll) EXPECT_EQ(c->senders, range(0, g.P - 1)) << describe(g);
}

// s.5.1.1: a forward and a backward pipeline of depth P-1 that cannot overlap
void check_pge1(const PhaseGraph& g, int P, int blocks) {
  const auto p2p = point_to_point(g);
  ASSERT_EQ(p2p.size(), 2u) << describe(g);
  const Phase& fwd = *p2p[0];
  const Phase& bwd = *p2p[1];
  for (const Phase* ph : p2p) {
    EXPECT_EQ(ph->type, PhaseType::PIPELINE) << describe(g);
    EXPECT_EQ(ph->depth, P - 1);
    EXPECT_EQ(ph->occurrences, static_cast<std::uint64_t>(blocks));
    EXPECT_EQ(ph->receive_first, range(1, P - 2));
    EXPECT_EQ(ph->overlap_s.n, static_cast<std::uint64_t>((P - 2) * blocks));
    EXPECT_GT(ph->overlap_s.mean(), 0.0);
    ASSERT_EQ(ph->anchors.size(), static_cast<std::size_t>(P));
    for (const auto& a : ph->anchors) EXPECT_EQ(a.counts, (std::vector<std::uint64_t>{static_cast<std::uint64_t>(blocks)}));
  }
  EXPECT_EQ(fwd.chain, range(0, P - 1));
  EXPECT_EQ(bwd.chain, range(P - 1, 0));
  EXPECT_FALSE(independent(g, &fwd, &bwd));  // RL(forward) and SL(backward) share 1..P-2
  expect_collectives_over_everyone(g);
}

TEST_F(CpgTraced, Pge1P4) { check_pge1(traced("pge1", 4, "64 32 8"), 4, 4); }
TEST_F(CpgTraced, Pge1P8) { check_pge1(traced("pge1", 8, "64 32 8"), 8, 4); }

// s.4.2 / s.5.1.2: two independent pipelines forward, the middle exchange, two independent pipelines
// backward. The two middle ranks swap from the same Isend and Recv lines (pge2.c), so the paper's S1
// and S2 are one phase here.
void check_pge2(const PhaseGraph& g, int P, int blocks) {
  const int h = P / 2;
  const auto p2p = point_to_point(g);
  ASSERT_EQ(p2p.size(), 5u) << describe(g);
  const std::vector<std::vector<int>> chains{range(0, h - 1), range(P - 1, h), {}, range(h - 1, 0), range(h, P - 1)};
  for (std::size_t i : {0u, 1u, 3u, 4u}) {
    const Phase& ph = *p2p[i];
    EXPECT_EQ(ph.chain, chains[i]) << describe(g);
    EXPECT_EQ(ph.occurrences, static_cast<std::uint64_t>(blocks));
    EXPECT_EQ(ph.chain.size(), static_cast<std::size_t>(h));  // P/2 ranks, P/2 - 1 edges
    if (h > 2) {
      EXPECT_EQ(ph.type, PhaseType::PIPELINE) << describe(g);
      EXPECT_EQ(ph.depth, h - 1);
    } else {  // a chain of two: no rank both receives and sends, synchronous by default (fig. 2)
      EXPECT_FALSE(ph.type_decided) << describe(g);
      EXPECT_EQ(ph.type, PhaseType::SYNCHRONOUS);
    }
  }
  const Phase& s = *p2p[2];
  EXPECT_EQ(s.type, PhaseType::SYNCHRONOUS);
  EXPECT_TRUE(s.type_decided);
  EXPECT_EQ(s.senders, (std::vector<int>{h - 1, h}));
  EXPECT_EQ(s.receivers, (std::vector<int>{h - 1, h}));
  EXPECT_EQ(s.occurrences, 1u);
  EXPECT_EQ(s.bytes_min, 2 * 8 * 32);  // 2 doubles per system, M = 32
  EXPECT_TRUE(independent(g, p2p[0], p2p[1]));
  EXPECT_FALSE(independent(g, p2p[1], p2p[2]));
  EXPECT_FALSE(independent(g, p2p[2], p2p[3]));
  EXPECT_TRUE(independent(g, p2p[3], p2p[4]));
  expect_collectives_over_everyone(g);
}

TEST_F(CpgTraced, Pge2P4) { check_pge2(traced("pge2", 4, "64 32 8"), 4, 4); }
TEST_F(CpgTraced, Pge2P8) { check_pge2(traced("pge2", 8, "64 32 8"), 8, 4); }

// s.5.2: atm2d's exchanges. Each exchange is isend + irecv + waitall, called from a different line per
// colour and direction; a red rank's north exchange talks to a black rank's south exchange.
std::set<std::pair<int, int>> mesh_pairs(int P) {
  int L = 0;
  while ((2 << L) <= P) ++L;
  const int Px = 1 << (L / 2), Py = P / Px;
  std::set<std::pair<int, int>> out;
  for (int r = 0; r < P; ++r) {
    const int x = r % Px, y = r / Px;
    if (x + 1 < Px) out.insert({r, r + 1}), out.insert({r + 1, r});
    if (y + 1 < Py) out.insert({r, r + Px}), out.insert({r + Px, r});
  }
  return out;
}

void check_atm2d(const PhaseGraph& g, int P, int steps) {
  const auto p2p = point_to_point(g);
  ASSERT_EQ(p2p.size(), 4u) << describe(g);
  std::set<std::pair<int, int>> all;
  for (const Phase* ph : p2p) {
    EXPECT_EQ(ph->type, PhaseType::SYNCHRONOUS) << describe(g);
    EXPECT_TRUE(ph->type_decided);
    EXPECT_EQ(ph->depth, 1);
    EXPECT_EQ(ph->senders, ph->receivers);
    EXPECT_EQ(ph->occurrences, static_cast<std::uint64_t>(steps));
    EXPECT_EQ(ph->send_points.size(), 2u);  // the red and the black side
    EXPECT_EQ(ph->recv_points.size(), 2u);
    for (const auto& pp : ph->pairs) {
      EXPECT_EQ(pp.messages, static_cast<std::uint64_t>(steps));
      EXPECT_TRUE(all.insert({pp.from, pp.to}).second) << "pair in two phases";
    }
    for (const auto& a : ph->anchors) EXPECT_EQ(a.counts, (std::vector<std::uint64_t>{static_cast<std::uint64_t>(steps)}));
  }
  EXPECT_EQ(all, mesh_pairs(P));
  expect_collectives_over_everyone(g);
}

TEST_F(CpgTraced, Atm2dP4) {
  const PhaseGraph g = traced("atm2d", 4, "32 6");
  check_atm2d(g, 4, 6);
  // on the 2 x 2 mesh the two north-south phases use disjoint ranks, and so do the east-west ones
  const auto p2p = point_to_point(g);
  EXPECT_TRUE(independent(g, p2p[0], p2p[1]));
  EXPECT_FALSE(independent(g, p2p[1], p2p[2]));
  EXPECT_TRUE(independent(g, p2p[2], p2p[3]));
}

TEST_F(CpgTraced, Atm2dP8) { check_atm2d(traced("atm2d", 8, "32 6"), 8, 6); }

TEST_F(CpgTraced, Atm2dWithoutCompletionLinksIsEightOneWayTransfers) {
  const PhaseGraph g = traced("atm2d", 8, "32 6", CpgOptions{.link_completions = false});
  const auto p2p = point_to_point(g);
  ASSERT_EQ(p2p.size(), 8u) << describe(g);
  for (const Phase* ph : p2p) {
    EXPECT_FALSE(ph->type_decided) << describe(g);
    EXPECT_FALSE(mksim::skeletons::builder::intersects(ph->senders, ph->receivers));
  }
  for (std::size_t i = 0; i < 8; ++i) EXPECT_NE(g.phases[i].type, PhaseType::COLLECTIVE) << describe(g);
}

// cg: the halo before the loop and the halo in the loop (two call paths of post_halo), both exchanges
// over every rank, the in-loop one overlapped by the interior product; allreduces and the final reduces.
void check_cg(const PhaseGraph& g, int P, int iters) {
  const auto p2p = point_to_point(g);
  ASSERT_EQ(p2p.size(), 2u) << describe(g);
  EXPECT_EQ(p2p[0]->occurrences, 1u);
  EXPECT_EQ(p2p[1]->occurrences, static_cast<std::uint64_t>(iters));
  for (const Phase* ph : p2p) {
    EXPECT_EQ(ph->type, PhaseType::SYNCHRONOUS) << describe(g);
    EXPECT_EQ(ph->senders, range(0, P - 1));
    EXPECT_EQ(ph->receivers, range(0, P - 1));
    EXPECT_EQ(ph->pairs.size(), static_cast<std::size_t>(2 * (P - 1)));
  }
  EXPECT_EQ(p2p[1]->overlap_s.n, static_cast<std::uint64_t>(P * iters));
  EXPECT_GT(p2p[1]->overlap_s.mean(), 0.0);
  const auto coll = of_type(g, PhaseType::COLLECTIVE);
  const auto in_loop = std::count_if(coll.begin(), coll.end(), [&](const Phase* c) {
    return c->collective == Kind::ALLREDUCE && c->occurrences == static_cast<std::uint64_t>(iters);
  });
  EXPECT_EQ(in_loop, 2) << describe(g);  // p.q and r.r
  expect_collectives_over_everyone(g);
}

TEST_F(CpgTraced, CgP4) { check_cg(traced("cg", 4, "1024 10"), 4, 10); }
TEST_F(CpgTraced, CgP8) { check_cg(traced("cg", 8, "1024 10"), 8, 10); }

}  // namespace
