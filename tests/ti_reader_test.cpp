// Import of SimGrid time-independent traces (no mocks): the reference programs (atm2d, cg, pge1, pge2,
// master_worker) run under smpirun -trace-ti at P = 4, imported with read_ti_run and compared event by event
// with what the programs do (the same expectations as tests/trace_test.cpp for the binary tracer), every
// message matched with its receive; every action of a hand-written file; bad inputs.
#include "skeletons/trace/ti_reader.hpp"

#include "skeletons/trace/reader.hpp"

#include "tests/trace_expectations.hpp"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using mksim::trace::Event;
using mksim::trace::Kind;
using mksim::trace::Status;
using mksim::trace::TraceError;
using trace_expect::atm2d_events;
using trace_expect::head;
using trace_expect::tail;
using trace_expect::cg_events;
using trace_expect::master_worker_events;
using trace_expect::MasterWorker;
using trace_expect::pge1_events;
using trace_expect::pge2_events;
using trace_expect::Want;
using trace_expect::expect_messages_received;
using trace_expect::failures_of;

namespace {

const std::string BIN = MKSIM_BINARY_DIR;
const std::string SRC = MKSIM_SOURCE_DIR;

class TiReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    tmp_ = fs::temp_directory_path() / ("mksim_ti_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(tmp_ / name) << text; }
  // an index listing the given rank files (relative to the index's directory)
  std::string index(const std::vector<std::string>& files) {
    std::string s;
    for (const auto& f : files) s += f + "\n";
    write("ti.txt", s);
    return (tmp_ / "ti.txt").string();
  }
  fs::path tmp_;
};

// smpirun -trace-ti at P ranks on the T3E platform; returns the index file, or "" (and skips) without SMPI
std::string run_ti(const fs::path& dir, const std::string& app, int P, const std::string& args) {
  const std::string exe = BIN + "/apps-smpi/" + app;
  if (std::system("command -v smpirun >/dev/null 2>&1") != 0 || !fs::exists(exe)) return "";
  std::ofstream hosts(dir / "hosts");
  for (int i = 0; i < P; ++i) hosts << "node-" << i << "\n";
  hosts.close();
  const std::string idx = (dir / "ti.txt").string();
  const std::string cmd = "smpirun -np " + std::to_string(P) + " -platform " + SRC + "/platforms/t3e.xml -hostfile " +
                          (dir / "hosts").string() + " -trace-ti --cfg=tracing/filename:" + idx +
                          " --cfg=smpi/simulate-computation:no --log=root.thresh:warning " + exe + " " + args + " >" +
                          (dir / "out.log").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
  return idx;
}


void expect_events(const mksim::trace::RankTrace& t, const std::vector<Want>& want) {
  ASSERT_EQ(t.events.size(), want.size()) << t.file;
  std::map<std::string, int> got_kinds, want_kinds;
  for (std::size_t i = 0; i < want.size(); ++i) {
    got_kinds[std::string(kind_name(t.events[i].kind))]++;
    want_kinds[std::string(kind_name(want[i].kind))]++;
  }
  EXPECT_EQ(got_kinds, want_kinds) << t.file << ": number of each kind of call";
  for (std::size_t i = 0; i < want.size(); ++i) {
    const Event& e = t.events[i];
    const Want& w = want[i];
    const std::string at = t.file + " event " + std::to_string(i) + " (" + std::string(kind_name(w.kind)) + ")";
    ASSERT_EQ(e.kind, w.kind) << at << " got " << kind_name(e.kind);
    EXPECT_EQ(e.peer, w.peer) << at;
    EXPECT_EQ(e.tag, w.tag) << at;
    EXPECT_EQ(e.bytes, w.bytes) << at;
    EXPECT_EQ(e.root, w.root) << at;
    EXPECT_EQ(e.comm, 0u) << at;
    EXPECT_EQ(e.t_enter, 0.0) << at;
    EXPECT_EQ(e.t_exit, 0.0) << at;
  }
}

// Every isend/irecv's request id is the one of exactly one later COMPLETE record, on the same peer and tag.
void expect_requests_tied(const mksim::trace::RankTrace& t) {
  std::map<std::uint32_t, const Event*> open;
  for (const Event& e : t.events) {
    if (e.kind == Kind::ISEND || e.kind == Kind::IRECV) {
      ASSERT_NE(e.request, 0u);
      open[e.request] = &e;
    } else if (e.kind == Kind::COMPLETE) {
      auto it = open.find(e.request);
      ASSERT_NE(it, open.end()) << t.file << ": completion of unknown request " << e.request;
      EXPECT_EQ(e.peer, it->second->peer);
      EXPECT_EQ(e.tag, it->second->tag);
      EXPECT_EQ(e.bytes, it->second->bytes);
      open.erase(it);
    }
  }
  EXPECT_TRUE(open.empty()) << t.file << ": requests never completed";
}

// read_ti_run must throw TraceError whose message contains `what`
void expect_error(const std::string& idx, const std::string& what) {
  try {
    (void)mksim::trace::read_ti_run(idx);
    ADD_FAILURE() << "no error, expected: " << what;
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << "got: " << e.what() << "\nexpected: " << what;
  }
}

TEST_F(TiReaderTest, Atm2dUnderSmpi) {
  const std::string idx = run_ti(tmp_, "atm2d", 4, "64 10");
  if (idx.empty()) GTEST_SKIP() << "smpirun or the smpicc build of atm2d missing";
  std::vector<double> flops;
  const auto run = mksim::trace::read_ti_run(idx, &flops);
  ASSERT_EQ(run.P, 4);
  EXPECT_TRUE(run.complete());
  ASSERT_EQ(flops.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(run.ranks[r].rank, r);
    EXPECT_EQ(run.ranks[r].status, Status::FINALIZED);
    EXPECT_EQ(flops[r], 0.0);  // simulate-computation:no: SMPI writes no compute actions
    expect_events(run.ranks[r], atm2d_events(4, r, 64, 10));
    expect_requests_tied(run.ranks[r]);
  }
  EXPECT_EQ(mksim::trace::unmatched_messages(run), std::vector<std::string>{});
  expect_messages_received(run);
}

TEST_F(TiReaderTest, CgUnderSmpi) {
  const std::string idx = run_ti(tmp_, "cg", 4, "1024 20");
  if (idx.empty()) GTEST_SKIP() << "smpirun or the smpicc build of cg missing";
  const auto run = mksim::trace::read_ti_run(idx);
  ASSERT_EQ(run.P, 4);
  EXPECT_TRUE(run.complete());
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    expect_events(run.ranks[r], cg_events(4, r, 32, 20));  // nx = sqrt(N)
    expect_requests_tied(run.ranks[r]);
  }
  EXPECT_EQ(mksim::trace::unmatched_messages(run), std::vector<std::string>{});
  expect_messages_received(run);
}

TEST_F(TiReaderTest, Pge1UnderSmpi) {
  const std::string idx = run_ti(tmp_, "pge1", 4, "64 10 4");
  if (idx.empty()) GTEST_SKIP() << "smpirun or the smpicc build of pge1 missing";
  const auto run = mksim::trace::read_ti_run(idx);
  ASSERT_EQ(run.P, 4);
  EXPECT_TRUE(run.complete());
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    expect_events(run.ranks[r], pge1_events(4, r, 10, 4));
  }
  EXPECT_EQ(mksim::trace::unmatched_messages(run), std::vector<std::string>{});
  expect_messages_received(run);
}

TEST_F(TiReaderTest, Pge2UnderSmpi) {
  const std::string idx = run_ti(tmp_, "pge2", 4, "64 10 4");
  if (idx.empty()) GTEST_SKIP() << "smpirun or the smpicc build of pge2 missing";
  const auto run = mksim::trace::read_ti_run(idx);
  ASSERT_EQ(run.P, 4);
  EXPECT_TRUE(run.complete());
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    expect_events(run.ranks[r], pge2_events(4, r, 10, 4));
    expect_requests_tied(run.ranks[r]);
  }
  EXPECT_EQ(mksim::trace::unmatched_messages(run), std::vector<std::string>{});
  expect_messages_received(run);
}

// SMPI writes the master's MPI_ANY_SOURCE receives with source -333 (ANY) and no actual source, so here,
// unlike in the OpenMPI trace, they stay ANY: the expectation's own form (master_worker_events). Which
// worker each took cannot be checked; that the workers send exactly as many requests and results, of the
// sizes the master receives, can.
TEST_F(TiReaderTest, MasterWorkerUnderSmpi) {
  const std::string idx = run_ti(tmp_, "master_worker", 4, "20 7 2 0.1 65536 4096");
  if (idx.empty()) GTEST_SKIP() << "smpirun or the smpicc build of master_worker missing";
  const auto run = mksim::trace::read_ti_run(idx);
  ASSERT_EQ(run.P, 4);
  EXPECT_TRUE(run.complete());
  const MasterWorker mw{.tasks = 20, .depth = 2, .task_bytes = 65536, .result_bytes = 4096};
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    expect_events(run.ranks[r], master_worker_events(4, r, mw));
    expect_requests_tied(run.ranks[r]);
  }
  expect_messages_received(run);
  // unmatched_messages pairs by actual source: without one, each wildcard receive and the send it took
  // are reported (3 requests + 20 results each way), and nothing else
  const auto unmatched = mksim::trace::unmatched_messages(run);
  EXPECT_EQ(unmatched.size(), 2u * (3 + 20));
  for (const auto& line : unmatched)
    EXPECT_TRUE(line.rfind("rank 0: receive from", 0) == 0 || line.find(": send to 0, tag ") != std::string::npos)
        << line;
  // a result sent 8 bytes short: the wildcard receives no longer take what the workers send
  mksim::trace::Run broken = run;
  auto& ev = broken.ranks[2].events;
  std::find_if(ev.begin(), ev.end(), [](const Event& e) { return e.kind == Kind::ISEND; })->bytes -= 8;
  const auto failed = failures_of([&] { expect_messages_received(broken); });
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_NE(failed[0].find("to 0 with tag 3 from -2"), std::string::npos) << failed[0];
}

// Every action SimGrid 3.32 writes, in its exact syntax (as written by smpirun for a test program with these
// calls at P = 2; trailing blanks included), mapped field by field.
TEST_F(TiReaderTest, EveryAction) {
  write("r0.txt",
        "0 init\n0 compute 1.5\n0 send 1 7 3 0\n0 irecv 1 9 5 1\n0 wait 1 0 9\n0 barrier\n0 bcast 4 1 0 \n"
        "0 reduce 2 0 1 0 \n0 allreduce 6 0 1 \n0 gather 2 2 1 0 0\n0 allgather 2 2 0 0\n0 alltoall 3 3 2 2\n"
        "0 scatter 2 2 0 0 0\n0 send 1 11 5 11\n0 recv 1 11 5 11\n0 gatherv 1 1 1 0 0 0\n"
        "0 allgatherv 1 1 1 0 0\n0 alltoallv 2 1 1 2 1 1 0 0\n0 reducescatter 1 2 0 0\n0 scatterv 1 2 1 0 0 0\n"
        "0 isend 1 3 2 4\n0 ssend 1 3 1 6\n0 compute 2.5\n0 waitall 3\n0 irecv -333 3 2 0\n0 wait -333 0 3\n"
        "0 finalize\n");
  write("r1.txt", "1 init\n");
  std::vector<double> flops;
  const auto run = mksim::trace::read_ti_run(index({"r0.txt", "r1.txt"}), &flops);
  EXPECT_EQ(flops, (std::vector<double>{4.0, 0.0}));
  ASSERT_EQ(run.problems.size(), 1u);
  EXPECT_NE(run.problems[0].find("rank 1: incomplete: no finalize"), std::string::npos) << run.problems[0];
  EXPECT_EQ(run.ranks[1].status, Status::INCOMPLETE);
  expect_events(run.ranks[0], {{Kind::INIT},
                               {Kind::SEND, 1, 7, 24},
                               {Kind::IRECV, 1, 9, 20},
                               {Kind::WAIT, -1, -1, 0, 1},
                               {Kind::COMPLETE, 1, 9, 20, 1},
                               {Kind::BARRIER},
                               {Kind::BCAST, -1, -1, 32, 1},
                               {Kind::REDUCE, -1, -1, 16, 1},
                               {Kind::ALLREDUCE, -1, -1, 24},
                               {Kind::GATHER, -1, -1, 16, 1},
                               {Kind::ALLGATHER, -1, -1, 16},
                               {Kind::ALLTOALL, -1, -1, 6},
                               {Kind::SCATTER, -1, -1, 16, 0},
                               {Kind::SEND, 1, 11, 20},
                               {Kind::RECV, 1, 11, 20},
                               {Kind::GATHERV, -1, -1, 8, 0},
                               {Kind::ALLGATHERV, -1, -1, 8},
                               {Kind::ALLTOALLV, -1, -1, 16},
                               {Kind::REDUCE_SCATTER, -1, -1, 24},
                               {Kind::SCATTERV, -1, -1, 24, 0},
                               {Kind::ISEND, 1, 3, 16},
                               {Kind::SSEND, 1, 3, 1},
                               {Kind::WAITALL, -1, -1, 0, 1},
                               {Kind::COMPLETE, 1, 3, 16, 0},
                               {Kind::IRECV, mksim::trace::ANY, 3, 16},  // MPI_ANY_SOURCE, as SMPI writes it
                               {Kind::WAIT, -1, -1, 0, 1},
                               {Kind::COMPLETE, mksim::trace::ANY, 3, 16, 1},
                               {Kind::FINALIZE}});
  EXPECT_EQ(run.ranks[0].events[2].request, 1u);
  EXPECT_EQ(run.ranks[0].events[4].request, 1u);
  EXPECT_EQ(run.ranks[0].events[23].request, 2u);
}

// `waitall n` says how many requests MPI_Waitall was given (null ones included), not which: LULESH's halo
// (irecv from each neighbour, isend to each, MPI_Waitall of the sends, MPI_Wait of each receive, as smpirun
// writes it for skeletons/apps/corpus/lulesh.c) completes the requests no later wait names; with more such
// requests than the count it takes the oldest, with a warning.
TEST_F(TiReaderTest, WaitallOfTheRequestsNoLaterWaitNames) {
  write("r0.txt",
        "0 init\n0 irecv 1 1024 3 0\n0 irecv 2 1024 1 0\n0 compute 10\n0 isend 1 1024 3 0\n0 isend 2 1024 1 0\n"
        "0 waitall 2\n0 wait 1 0 1024\n0 wait 2 0 1024\n"
        "0 isend 1 5 2 0\n0 waitall 3\n"                           // two null requests in the count
        "0 isend 1 6 1 0\n0 waitall 1\n0 isend 1 6 2 0\n0 wait 0 1 6\n"  // the wait names the newer request
        "0 irecv 2 8 1 0\n0 isend 2 8 4 0\n0 waitall 1\n0 waitall 1\n0 finalize\n");
  write("r1.txt", "1 init\n1 finalize\n");
  write("r2.txt", "2 init\n2 finalize\n");
  const auto run = mksim::trace::read_ti_run(index({"r0.txt", "r1.txt", "r2.txt"}));
  const auto& t = run.ranks[0];
  expect_events(t, {{Kind::INIT},
                    {Kind::IRECV, 1, 1024, 24},
                    {Kind::IRECV, 2, 1024, 8},
                    {Kind::ISEND, 1, 1024, 24},
                    {Kind::ISEND, 2, 1024, 8},
                    {Kind::WAITALL, -1, -1, 0, 2},
                    {Kind::COMPLETE, 1, 1024, 24, 0},
                    {Kind::COMPLETE, 2, 1024, 8, 0},
                    {Kind::WAIT, -1, -1, 0, 1},
                    {Kind::COMPLETE, 1, 1024, 24, 1},
                    {Kind::WAIT, -1, -1, 0, 1},
                    {Kind::COMPLETE, 2, 1024, 8, 1},
                    {Kind::ISEND, 1, 5, 16},
                    {Kind::WAITALL, -1, -1, 0, 1},
                    {Kind::COMPLETE, 1, 5, 16, 0},
                    {Kind::ISEND, 1, 6, 8},
                    {Kind::WAITALL, -1, -1, 0, 1},
                    {Kind::COMPLETE, 1, 6, 8, 0},
                    {Kind::ISEND, 1, 6, 16},
                    {Kind::WAIT, -1, -1, 0, 1},
                    {Kind::COMPLETE, 1, 6, 16, 0},
                    {Kind::IRECV, 2, 8, 8},
                    {Kind::ISEND, 2, 8, 32},
                    {Kind::WAITALL, -1, -1, 0, 1},
                    {Kind::COMPLETE, 2, 8, 8, 1},
                    {Kind::WAITALL, -1, -1, 0, 1},
                    {Kind::COMPLETE, 2, 8, 32, 0},
                    {Kind::FINALIZE}});
  EXPECT_EQ(t.events[3].gap_flops, 10.0);
  // each completion is of its request: the sends' by the waitall, the receives' by their waits
  const std::vector<std::uint32_t> requests{3, 4, 1, 2};
  for (std::size_t j = 0; j < requests.size(); ++j) EXPECT_EQ(t.events[j < 2 ? 6 + j : 9 + 2 * (j - 2)].request, requests[j]) << j;
  expect_requests_tied(t);
  ASSERT_EQ(run.warnings.size(), 1u) << ::testing::PrintToString(run.warnings);
  EXPECT_NE(run.warnings[0].find("r0.txt: line 18: 'waitall': TI does not say which requests a waitall completed"), std::string::npos)
      << run.warnings[0];
  EXPECT_NE(run.warnings[0].find("(1 such line(s) in the run)"), std::string::npos) << run.warnings[0];
  // still an error: more waits than requests (the waitall completed nothing: its count was a null request)
  write("r0.txt", "0 init\n0 isend 1 5 2 0\n0 waitall 1\n0 wait 0 1 5\n0 wait 0 1 5\n0 finalize\n");
  expect_error(index({"r0.txt", "r1.txt", "r2.txt"}), "r0.txt: line 5: wait for no pending request (source 0, destination 1, tag 5)");
}

// Every action SimGrid 3.32 writes for the calls of tests/ti_actions.c (every call the tracer knows, compute and
// sleep) at P = 4, kept: each call an event of its kind with its sizes, compute as the next event's flops and sleep
// as its seconds, requests tied to their completions, and what TI cannot say (sendRecv's tags, which request a
// waitAny or test* completed, non-blocking collectives) counted in the run's warnings.
TEST_F(TiReaderTest, EveryActionOfARealProgramIsKept) {
  const std::string exe = (tmp_ / "ti_actions").string();
  if (std::system("command -v smpicc >/dev/null 2>&1 && command -v smpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no SMPI";
  ASSERT_EQ(std::system(("smpicc -std=c99 -O1 -o " + exe + " " + SRC + "/tests/ti_actions.c >/dev/null 2>&1").c_str()), 0);
  std::ofstream hosts(tmp_ / "hosts");
  for (int i = 0; i < 4; ++i) hosts << "node-" << i << "\n";
  hosts.close();
  const std::string idx = (tmp_ / "ti.txt").string();
  const std::string cmd = "timeout 120 smpirun -np 4 -platform " + SRC + "/platforms/t3e.xml -hostfile " + (tmp_ / "hosts").string() +
                          " -trace-ti --cfg=tracing/filename:" + idx + " --cfg=tracing/smpi/sleeping:yes" +
                          " --cfg=smpi/simulate-computation:no --log=root.thresh:warning " + exe + " >" + (tmp_ / "out.log").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<double> flops;
  const auto run = mksim::trace::read_ti_run(idx, &flops);
  ASSERT_TRUE(run.complete()) << run.problems.front();
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& t = run.ranks[static_cast<std::size_t>(r)];
    std::map<Kind, int> n;
    double gap_flops = 0, sleep = 0;
    for (const Event& e : t.events) {
      ++n[e.kind];
      gap_flops += e.gap_flops;
      if (e.cpu_gap > 0) sleep += e.cpu_gap;
    }
    EXPECT_EQ(flops[static_cast<std::size_t>(r)], 6e6);
    EXPECT_EQ(gap_flops, 6e6);  // every compute action on an event
    EXPECT_EQ(t.events.back().gap_flops, 3e6);  // the last one before MPI_Finalize
    EXPECT_NEAR(sleep, 0.002, 1e-12);
    for (Kind k : {Kind::INIT, Kind::SENDRECV, Kind::TEST, Kind::TESTALL, Kind::SSEND, Kind::BSEND, Kind::SCATTER,
                   Kind::REDUCE, Kind::GATHER, Kind::ALLGATHER, Kind::ALLTOALL, Kind::GATHERV, Kind::SCATTERV,
                   Kind::ALLGATHERV, Kind::ALLTOALLV, Kind::REDUCE_SCATTER, Kind::SCAN, Kind::EXSCAN, Kind::TESTSOME,
                   Kind::ISSEND, Kind::FINALIZE})
      EXPECT_EQ(n[k], 1) << kind_name(k);
    EXPECT_EQ(n[Kind::WAITANY], 2);
    EXPECT_EQ(n[Kind::WAITALL], 1);
    // MPI_Waitall(1, the isend) then MPI_Wait(the irecv): the waitall completed the send
    const auto wa = std::find_if(t.events.begin(), t.events.end(), [](const Event& e) { return e.kind == Kind::WAITALL; });
    ASSERT_TRUE(wa != t.events.end() && wa + 1 != t.events.end());
    EXPECT_EQ(wa->root, 1);
    EXPECT_EQ((wa + 1)->kind, Kind::COMPLETE);
    EXPECT_EQ((wa + 1)->root, 0);  // a send's
    EXPECT_EQ((wa + 1)->tag, 16);
    EXPECT_GE(n[Kind::TESTANY], 2);
    EXPECT_EQ(n[Kind::BARRIER], 3);    // world, ibarrier, the dup's
    EXPECT_EQ(n[Kind::BCAST], 3);      // world, ibcast, the split's (which TI writes as one on world: root 0)
    EXPECT_EQ(n[Kind::ALLREDUCE], 2);  // and iallreduce
    EXPECT_EQ(n[Kind::SEND] + n[Kind::RECV], (r <= 1 ? 2 : 1));  // MPI_Rsend is written "send"
    // every request completed exactly once, by a wait, waitany, test* or waitall
    std::set<std::uint32_t> started, done;
    for (const Event& e : t.events) {
      if (e.request != 0 && e.kind != Kind::COMPLETE) started.insert(e.request);
      if (e.kind == Kind::COMPLETE && e.request != 0) {
        EXPECT_TRUE(done.insert(e.request).second) << e.request;
      }
    }
    EXPECT_EQ(started, done);
  }
  std::map<std::string, std::string> warned;
  for (const auto& w : run.warnings)
    for (const char* k : {"'sendRecv'", "'waitAny'", "'testall'", "'testany'", "'testsome'", "'ibcast'", "'iallreduce'", "'ibarrier'"})
      if (w.find(k) != std::string::npos) warned[k] = w;
  EXPECT_EQ(warned.size(), 8u) << ::testing::PrintToString(run.warnings);
  EXPECT_NE(warned["'sendRecv'"].find("without its tags: read with tag 0 on both halves (4 such line(s) in the run)"), std::string::npos)
      << warned["'sendRecv'"];
  // only rank 0's MPI_ANY_SOURCE receive stays unmatched (TI does not say which sender it took)
  const auto unmatched = mksim::trace::unmatched_messages(run);
  ASSERT_EQ(unmatched.size(), 2u) << ::testing::PrintToString(unmatched);
  EXPECT_NE(unmatched[0].find("rank 0: receive from ANY_SOURCE, tag 14"), std::string::npos) << unmatched[0];
}

TEST_F(TiReaderTest, BadInput) {
  const std::string f = (tmp_ / "r0.txt").string();
  const auto one = [&](const std::string& text) {
    write("r0.txt", text);
    return index({"r0.txt"});
  };
  expect_error(one("0 init\n0 frobnicate 1 2\n"), f + ": line 2: unknown action 'frobnicate'");
  expect_error(one("0 init\n0 isend 1 2 64\n"), f + ": line 2: 'isend' needs 4 fields (peer tag count datatype), got 3");
  expect_error(one("0 init\n0 isend\n"), f + ": line 2: 'isend' needs 4 fields (peer tag count datatype), got 0");
  expect_error(one("0 init\n0 send 0 x 8 0\n"), f + ": line 2: field 2 of 'send' is not an integer: 'x'");
  expect_error(one("0 init\n0 compute 1e\n"), f + ": line 2: field 1 of 'compute' is not a number: '1e'");
  expect_error(one("0 init\n0 send 3 1 8 0\n"), f + ": line 2: field 1 of 'send' is not a rank of 0..0: 3");
  expect_error(one("0 init\n0 send 0 1 8 99\n"), f + ": line 2: unknown datatype id 99 in field 4");
  expect_error(one("0 init\n0 send 0 1 -8 0\n"), f + ": line 2: field 3 of 'send' is negative: -8");
  expect_error(one("1 init\n"), f + ": line 1: line of rank 1 in the file of rank 0");
  expect_error(one("0 init\n\n"), f + ": line 2: empty line");
  expect_error(one("0\n"), f + ": line 1: no action after the rank");
  expect_error(one("0 init\n0 wait 0 0 5\n"), f + ": line 2: wait for no pending request (source 0, destination 0, tag 5)");
  expect_error(one("0 init\n0 finalize\n0 barrier\n"), f + ": line 3: action 'barrier' after finalize");
  expect_error(one("0 init\n0 Start 1 4 24 0\n"), f + ": line 2: 'Start': persistent requests (MPI_Start, MPI_Startall) are not supported");
  expect_error(one("0 init\n0 wait -333 -333 -3335\n"), f + ": line 2: wait with tag -3335 (a non-blocking collective's) but none is pending");
  expect_error(one("0 init\n0 test 0 0 5\n"), f + ": line 2: test of no pending request (source 0, destination 0, tag 5)");
  expect_error(one("0 gatherv 1 1 0 0\n"), f + ": line 1: 'gatherv' needs 5 fields");
  // a truncated last line (the writer was killed mid-line)
  expect_error(one("0 init\n0 irecv 1 9\n"), f + ": line 2: 'irecv' needs 4 fields");
  // missing rank file, missing index
  write("r0.txt", "0 init\n0 finalize\n");
  expect_error(index({"r0.txt", "gone.txt"}), (tmp_ / "gone.txt").string() + ": rank 1 of 2: trace file missing or unreadable");
  expect_error((tmp_ / "nope.txt").string(), (tmp_ / "nope.txt").string() + ": cannot open the index file");
  write("ti.txt", "");
  expect_error((tmp_ / "ti.txt").string(), "ti.txt: no rank files listed");
}

}  // namespace
