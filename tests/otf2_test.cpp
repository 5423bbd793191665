// OTF2 import (no mocks): each test writes a small OTF2 archive with the libotf2 writer, with the
// definitions and record sequences Score-P writes (4 ranks: an isend/irecv/waitall ring, an allreduce, a
// split into two sub-communicators whose local ranks differ from the world ranks, a bcast and a send/recv
// on them), reads it back with read_otf2_run and checks it field by field; then bad archives.
#include "skeletons/trace/otf2_reader.hpp"
#include "tests/process_util.hpp"

#include <otf2/otf2.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <string>
#include <vector>

// libotf2 3.0.2 does not free the archive when OTF2_Reader_Open fails (a missing or foreign anchor file):
// LeakSanitizer (the sanitizer build) is told so, for exactly those allocations.
extern "C" __attribute__((used)) const char* __lsan_default_suppressions() {
  return "leak:otf2_archive_open\nleak:otf2_file_posix_open\n";
}

namespace fs = std::filesystem;
using mksim::trace::Event;
using mksim::trace::Kind;
namespace mt = mksim::trace;
using mksim::trace::Status;
using mksim::trace::TraceError;

namespace {

constexpr int P = 4;
constexpr uint64_t RES = 2'000'000'000;          // ticks per second (a 2 GHz time-stamp counter)
constexpr uint64_t OFFSET = 7'000'000'000'000;  // tick of the trace's time origin

// tick of a time in microseconds after the origin
uint64_t tick(double us) { return OFFSET + static_cast<uint64_t>(std::llround(us * (RES / 1e6))); }

// Score-P's location ids are not the ranks: rank r is on location 40 - 10 r (and its process r)
OTF2_LocationRef loc(int r) { return static_cast<OTF2_LocationRef>(40 - 10 * r); }
constexpr OTF2_LocationRef OMP_THREAD = OTF2_LocationRef{1} << 32;  // a second thread of rank 0's process

// Regions; the region ref is also the ref of its name string.
enum Region : OTF2_RegionRef {
  MAIN, RING, HALO, SOLVE, MPI_INIT, MPI_FINALIZE, MPI_COMM_RANK, MPI_COMM_SPLIT, MPI_IRECV, MPI_ISEND,
  MPI_WAITALL, MPI_ALLREDUCE, MPI_BCAST, MPI_SEND, MPI_RECV, MPI_BARRIER, REGIONS
};
const char* const REGION_NAMES[REGIONS] = {
    "main", "ring", "halo", "solve", "MPI_Init", "MPI_Finalize", "MPI_Comm_rank", "MPI_Comm_split", "MPI_Irecv",
    "MPI_Isend", "MPI_Waitall", "MPI_Allreduce", "MPI_Bcast", "MPI_Send", "MPI_Recv", "MPI_Barrier"};
const uint32_t REGION_LINES[REGIONS] = {10, 40, 70, 20};  // user functions; MPI regions have none

enum Group : OTF2_GroupRef { G_LOCATIONS, G_WORLD, G_SELF, G_EVEN, G_ODD };
enum Comm : OTF2_CommRef { WORLD, SELF, EVEN, ODD };
// MPI_Comm_split(colour = rank % 2, key = -rank): EVEN = world ranks {2, 0}, ODD = {3, 1}
Comm sub_comm(int r) { return r % 2 == 0 ? EVEN : ODD; }
uint32_t sub_rank(int r) { return r >= 2 ? 0 : 1; }
int sub_root_world(int r) { return r % 2 == 0 ? 2 : 3; }

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) { return OTF2_FLUSH; }
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) { return 0; }
OTF2_FlushCallbacks FLUSH = {pre_flush, post_flush};

// The records of one location, at times given in microseconds.
struct Script {
  OTF2_EvtWriter* w;
  void enter(OTF2_RegionRef r, double us) const { OTF2_EvtWriter_Enter(w, nullptr, tick(us), r); }
  void leave(OTF2_RegionRef r, double us) const { OTF2_EvtWriter_Leave(w, nullptr, tick(us), r); }
  // an MPI call from `start` to `end`; `inside(t)` writes its records, from tick t on
  template <typename F>
  void call(OTF2_RegionRef r, double start, double end, F inside) const {
    enter(r, start);
    inside(tick(start) + 1);
    leave(r, end);
  }
  void call(OTF2_RegionRef r, double start, double end) const {
    call(r, start, end, [](uint64_t) {});
  }
  // position the next record will have in the location's event file (1-based)
  uint64_t next_position() const {
    uint64_t n = 0;
    OTF2_EvtWriter_GetNumberOfEvents(w, &n);
    return n + 1;
  }
};

// Writes an archive `dir`/traces.otf2 the way Score-P lays it out: events of each location, (empty) local
// definitions, global definitions with the event counts.
class ArchiveWriter {
 public:
  explicit ArchiveWriter(const fs::path& dir) {
    archive_ = OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, OTF2_CHUNK_SIZE_MIN, OTF2_CHUNK_SIZE_MIN,
                                 OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    EXPECT_NE(archive_, nullptr);
    OTF2_Archive_SetFlushCallbacks(archive_, &FLUSH, nullptr);
    OTF2_Archive_SetSerialCollectiveCallbacks(archive_);
    OTF2_Archive_OpenEvtFiles(archive_);
  }
  // records of location `l`, written by `body(Script)`
  template <typename F>
  void location(OTF2_LocationRef l, F body) {
    Script s{OTF2_Archive_GetEvtWriter(archive_, l)};
    body(s);
    uint64_t n = 0;
    OTF2_EvtWriter_GetNumberOfEvents(s.w, &n);
    events_[l] = n;
    OTF2_Archive_CloseEvtWriter(archive_, s.w);
  }
  // the global definitions, written by `body(writer, event counts)`; closes the archive
  template <typename F>
  void finish(F body) {
    OTF2_Archive_CloseEvtFiles(archive_);
    OTF2_Archive_OpenDefFiles(archive_);
    for (const auto& [l, n] : events_) OTF2_Archive_CloseDefWriter(archive_, OTF2_Archive_GetDefWriter(archive_, l));
    OTF2_Archive_CloseDefFiles(archive_);
    OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive_);
    body(g, events_);
    OTF2_Archive_CloseGlobalDefWriter(archive_, g);
    EXPECT_EQ(OTF2_Archive_Close(archive_), OTF2_SUCCESS);
  }

 private:
  OTF2_Archive* archive_ = nullptr;
  std::map<OTF2_LocationRef, uint64_t> events_;
};

// String refs: the regions' names first (ref = region), then these.
enum Str : OTF2_StringRef {
  S_EMPTY = REGIONS, S_FILE, S_MACHINE, S_RANK, S_THREAD, S_WORLD, S_SELF, S_SUB, S_PROGRAM, S_ARG
};

void common_definitions(OTF2_GlobalDefWriter* g, const std::map<OTF2_LocationRef, uint64_t>& events, int ranks) {
  OTF2_GlobalDefWriter_WriteClockProperties(g, RES, OFFSET, tick(4000) - OFFSET, 1'700'000'000'000'000'000);
  for (OTF2_RegionRef r = 0; r < REGIONS; ++r) OTF2_GlobalDefWriter_WriteString(g, r, REGION_NAMES[r]);
  const std::pair<Str, const char*> strings[] = {
      {S_EMPTY, ""},          {S_FILE, "ring.c"},     {S_MACHINE, "machine"}, {S_RANK, "MPI Rank"},
      {S_THREAD, "thread"},   {S_WORLD, "MPI_COMM_WORLD"}, {S_SELF, "MPI_COMM_SELF"}, {S_SUB, "Comm split"},
      {S_PROGRAM, "./ring"},  {S_ARG, "64"}};
  for (const auto& [ref, text] : strings) OTF2_GlobalDefWriter_WriteString(g, ref, text);
  OTF2_GlobalDefWriter_WriteParadigm(g, OTF2_PARADIGM_MPI, S_WORLD, OTF2_PARADIGM_CLASS_PROCESS);
  for (OTF2_RegionRef r = 0; r < REGIONS; ++r) {
    const bool mpi = r >= MPI_INIT;
    OTF2_GlobalDefWriter_WriteRegion(g, r, r, r, S_EMPTY,
                                     mpi ? OTF2_REGION_ROLE_POINT2POINT : OTF2_REGION_ROLE_FUNCTION,
                                     mpi ? OTF2_PARADIGM_MPI : OTF2_PARADIGM_COMPILER, OTF2_REGION_FLAG_NONE,
                                     mpi ? S_EMPTY : S_FILE, mpi ? 0 : REGION_LINES[r], 0);
  }
  OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, S_MACHINE, S_MACHINE, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
  std::vector<uint64_t> locations, world;
  for (int r = 0; r < ranks; ++r) {
    OTF2_GlobalDefWriter_WriteLocationGroup(g, static_cast<OTF2_LocationGroupRef>(r), S_RANK,
                                            OTF2_LOCATION_GROUP_TYPE_PROCESS, 0, OTF2_UNDEFINED_LOCATION_GROUP);
    locations.push_back(loc(r));
    world.push_back(static_cast<uint64_t>(r));
  }
  for (const auto& [l, n] : events)
    OTF2_GlobalDefWriter_WriteLocation(g, l, S_THREAD, OTF2_LOCATION_TYPE_CPU_THREAD, n,
                                       l == OMP_THREAD ? 0 : static_cast<OTF2_LocationGroupRef>((40 - l) / 10));
  const uint64_t even[] = {2, 0}, odd[] = {3, 1};
  const auto n = static_cast<uint32_t>(ranks);
  OTF2_GlobalDefWriter_WriteGroup(g, G_LOCATIONS, S_EMPTY, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                  OTF2_GROUP_FLAG_NONE, n, locations.data());
  OTF2_GlobalDefWriter_WriteGroup(g, G_WORLD, S_EMPTY, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                  OTF2_GROUP_FLAG_NONE, n, world.data());
  OTF2_GlobalDefWriter_WriteGroup(g, G_SELF, S_EMPTY, OTF2_GROUP_TYPE_COMM_SELF, OTF2_PARADIGM_MPI,
                                  OTF2_GROUP_FLAG_NONE, 0, nullptr);
  OTF2_GlobalDefWriter_WriteGroup(g, G_EVEN, S_EMPTY, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                  OTF2_GROUP_FLAG_NONE, 2, even);
  OTF2_GlobalDefWriter_WriteGroup(g, G_ODD, S_EMPTY, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                  OTF2_GROUP_FLAG_NONE, 2, odd);
  OTF2_GlobalDefWriter_WriteComm(g, WORLD, S_WORLD, G_WORLD, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
  OTF2_GlobalDefWriter_WriteComm(g, SELF, S_SELF, G_SELF, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
  OTF2_GlobalDefWriter_WriteComm(g, EVEN, S_SUB, G_EVEN, WORLD, OTF2_COMM_FLAG_CREATE_DESTROY_EVENTS);
  OTF2_GlobalDefWriter_WriteComm(g, ODD, S_SUB, G_ODD, WORLD, OTF2_COMM_FLAG_CREATE_DESTROY_EVENTS);
}

// Variations of the ring program.
struct Options {
  int stop_before_finalize = -1;  // this rank's trace ends before MPI_Finalize
  bool harmless = false;          // rank 1 also writes metric, parameter and buffer-flush records
  bool rma = false;               // rank 1 writes an RmaPut record in the ring
  bool leave_mismatch = false;    // rank 3 leaves "halo" as "ring"
  uint64_t ring_bytes = 800;      // size of the ring's messages
};

// What the archive holds beyond the events: where a test's special record went.
struct Written {
  fs::path anchor;
  uint64_t special_position = 0;  // position of the RmaPut / bad Leave record
};

// The program of rank r (times in microseconds; rank r's MPI_Init ends at 1000 + 10 r):
//   main { MPI_Init; MPI_Comm_rank; ring { MPI_Irecv from left; MPI_Isend to right; MPI_Waitall }
//          MPI_Allreduce (8 bytes); MPI_Comm_split; MPI_Bcast (16 bytes, root sub-rank 0) on the split;
//          halo { sub-rank 1 sends 24 bytes (tag 3) to sub-rank 0 } MPI_Finalize }
Written write_ring(const fs::path& dir, const Options& o = {}) {
  Written out{dir / "traces.otf2"};
  ArchiveWriter a(dir);
  for (int r = 0; r < P; ++r) {
    a.location(loc(r), [&](const Script& s) {
      const uint32_t left = static_cast<uint32_t>((r + P - 1) % P), right = static_cast<uint32_t>((r + 1) % P);
      const OTF2_StringRef args[] = {S_ARG};
      OTF2_EvtWriter_ProgramBegin(s.w, nullptr, tick(0), S_PROGRAM, 1, args);
      s.enter(MAIN, 10);
      s.call(MPI_INIT, 100, 1000 + 10 * r);
      s.call(MPI_COMM_RANK, 1100, 1101);
      s.enter(RING, 1200);
      s.call(MPI_IRECV, 1300, 1310, [&](uint64_t t) { OTF2_EvtWriter_MpiIrecvRequest(s.w, nullptr, t, 77); });
      if (o.rma && r == 1) {
        out.special_position = s.next_position();
        OTF2_EvtWriter_RmaPut(s.w, nullptr, tick(1350), 0, 2, 64, 0);
      }
      s.call(MPI_ISEND, 1400, 1420,
             [&](uint64_t t) { OTF2_EvtWriter_MpiIsend(s.w, nullptr, t, right, WORLD, 7, o.ring_bytes, 78); });
      if (o.harmless && r == 1) {
        const OTF2_Type types[] = {OTF2_TYPE_INT64};
        OTF2_MetricValue values[1];
        values[0].signed_int = 12345;
        OTF2_EvtWriter_Metric(s.w, nullptr, tick(1450), 0, 1, types, values);
        OTF2_EvtWriter_ParameterInt(s.w, nullptr, tick(1460), 0, 42);
        OTF2_EvtWriter_BufferFlush(s.w, nullptr, tick(1470), tick(1480));
      }
      s.call(MPI_WAITALL, 1500, 1600, [&](uint64_t t) {
        OTF2_EvtWriter_MpiIrecv(s.w, nullptr, t, left, WORLD, 7, o.ring_bytes, 77);
        OTF2_EvtWriter_MpiIsendComplete(s.w, nullptr, t + 1, 78);
      });
      s.leave(RING, 1700);
      s.call(MPI_ALLREDUCE, 2000, 2100, [&](uint64_t t) {
        OTF2_EvtWriter_MpiCollectiveBegin(s.w, nullptr, t);
        OTF2_EvtWriter_MpiCollectiveEnd(s.w, nullptr, t + 1, OTF2_COLLECTIVE_OP_ALLREDUCE, WORLD,
                                        OTF2_UNDEFINED_UINT32, P * 8, P * 8);
      });
      s.call(MPI_COMM_SPLIT, 2200, 2300, [&](uint64_t t) {
        OTF2_EvtWriter_MpiCollectiveBegin(s.w, nullptr, t);
        OTF2_EvtWriter_CommCreate(s.w, nullptr, t + 1, sub_comm(r));
        OTF2_EvtWriter_MpiCollectiveEnd(s.w, nullptr, t + 2, OTF2_COLLECTIVE_OP_CREATE_HANDLE, WORLD,
                                        OTF2_UNDEFINED_UINT32, 0, 0);
      });
      const bool root = sub_rank(r) == 0;
      s.call(MPI_BCAST, 2400, 2500, [&](uint64_t t) {  // Score-P: the root sends 2 x 16, everyone receives 16
        OTF2_EvtWriter_MpiCollectiveBegin(s.w, nullptr, t);
        OTF2_EvtWriter_MpiCollectiveEnd(s.w, nullptr, t + 1, OTF2_COLLECTIVE_OP_BCAST, sub_comm(r), 0,
                                        root ? 2 * 16 : 0, 16);
      });
      s.enter(HALO, 2600);
      if (root)
        s.call(MPI_RECV, 2700, 2750,
               [&](uint64_t t) { OTF2_EvtWriter_MpiRecv(s.w, nullptr, t, 1, sub_comm(r), 3, 24); });
      else
        s.call(MPI_SEND, 2700, 2710,
               [&](uint64_t t) { OTF2_EvtWriter_MpiSend(s.w, nullptr, t, 0, sub_comm(r), 3, 24); });
      if (o.leave_mismatch && r == 3) {
        out.special_position = s.next_position();
        s.leave(RING, 2800);
        return;
      }
      s.leave(HALO, 2800);
      if (o.stop_before_finalize == r) return;
      s.call(MPI_FINALIZE, 3000, 3100);
      s.leave(MAIN, 3200);
      OTF2_EvtWriter_ProgramEnd(s.w, nullptr, tick(3300), 0);
    });
  }
  // a second thread of rank 0's process: not an MPI location, never read (a send outside any region here
  // would be an error if it were)
  a.location(OMP_THREAD, [](const Script& s) {
    OTF2_EvtWriter_MpiSend(s.w, nullptr, tick(1500), 1, WORLD, 0, 8);
  });
  a.finish([](OTF2_GlobalDefWriter* g, const auto& events) { common_definitions(g, events, P); });
  return out;
}

class Otf2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    tmp_ = fs::temp_directory_path() / ("mksim_otf2_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }
  // the events of `rank` of kind `k`
  static std::vector<Event> of(const mt::Run& run, int rank, Kind k) {
    std::vector<Event> v;
    for (const Event& e : run.ranks[static_cast<std::size_t>(rank)].events)
      if (e.kind == k) v.push_back(e);
    return v;
  }
  // the error read_otf2_run throws for `anchor` (fails the test if it returns)
  static TraceError error_of(const fs::path& anchor) {
    try {
      mt::read_otf2_run(anchor.string());
    } catch (const TraceError& e) {
      return e;
    }
    ADD_FAILURE() << anchor << " was read without error";
    return TraceError("", TraceError::NO_OFFSET, "");
  }
  fs::path tmp_;
};

// the event file of rank r's location
std::string event_file(const fs::path& dir, int r) {
  return (dir / "traces" / (std::to_string(loc(r)) + ".evt")).string();
}

TEST_F(Otf2Test, EveryRankGetsItsCallsInOrder) {
  const mt::Run run = mt::read_otf2_run(write_ring(tmp_).anchor.string());
  ASSERT_EQ(run.P, P);
  ASSERT_EQ(run.ranks.size(), 4u);
  for (int r = 0; r < P; ++r) {
    std::vector<Kind> kinds;
    for (const Event& e : run.ranks[static_cast<std::size_t>(r)].events) kinds.push_back(e.kind);
    const Kind p2p = sub_rank(r) == 0 ? Kind::RECV : Kind::SEND;
    const std::vector<Kind> want = {Kind::INIT,     Kind::IRECV,    Kind::ISEND,      Kind::WAITALL,
                                    Kind::COMPLETE, Kind::COMPLETE, Kind::ALLREDUCE,  Kind::COMM_SPLIT,
                                    Kind::BCAST,    p2p,            Kind::FINALIZE};
    EXPECT_EQ(kinds, want) << "rank " << r;  // MPI_Comm_rank is not an event, as in the binary traces
  }
}

TEST_F(Otf2Test, RanksComeFromTheMpiLocationsGroup) {
  const mt::Run run = mt::read_otf2_run(write_ring(tmp_).anchor.string());
  ASSERT_EQ(run.ranks.size(), 4u);
  for (int r = 0; r < P; ++r) {
    const auto& t = run.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(t.rank, r);
    EXPECT_EQ(t.world_size, P);
    EXPECT_EQ(t.file, event_file(tmp_, r));  // location 40 - 10 r
    EXPECT_EQ(t.events.front().site, run.ranks[0].events.front().site);
  }
  EXPECT_EQ(run.dir, (tmp_ / "traces.otf2").string());
}

TEST_F(Otf2Test, RingPeersTagsBytesAreWorldRanks) {
  const mt::Run run = mt::read_otf2_run(write_ring(tmp_).anchor.string());
  for (int r = 0; r < P; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto isend = of(run, r, Kind::ISEND), irecv = of(run, r, Kind::IRECV);
    ASSERT_EQ(isend.size(), 1u);
    ASSERT_EQ(irecv.size(), 1u);
    EXPECT_EQ(isend[0].peer, (r + 1) % P);
    EXPECT_EQ(isend[0].tag, 7);
    EXPECT_EQ(isend[0].bytes, 800);
    EXPECT_EQ(isend[0].comm, 0u);
    // OTF2 records the receive's source, tag and size only at completion: the IRECV gets them from there
    EXPECT_EQ(irecv[0].peer, (r + P - 1) % P);
    EXPECT_EQ(irecv[0].tag, 7);
    EXPECT_EQ(irecv[0].bytes, 800);
    EXPECT_EQ(irecv[0].comm, 0u);
  }
}

TEST_F(Otf2Test, RequestsTieIsendAndIrecvToTheirCompletions) {
  const mt::Run run = mt::read_otf2_run(write_ring(tmp_).anchor.string());
  for (int r = 0; r < P; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& ev = run.ranks[static_cast<std::size_t>(r)].events;
    ASSERT_EQ(ev.size(), 11u);
    const Event &irecv = ev[1], &isend = ev[2], &wait = ev[3], &c1 = ev[4], &c2 = ev[5];
    EXPECT_EQ(irecv.request, 1u);  // ids 1, 2, ... in posting order, as the binary tracer numbers them
    EXPECT_EQ(isend.request, 2u);
    EXPECT_EQ(wait.root, 2);  // completed requests
    // in the order of the completion records: the receive first
    EXPECT_EQ(c1.request, irecv.request);
    EXPECT_EQ(c1.root, 1);
    EXPECT_EQ(c1.peer, irecv.peer);
    EXPECT_EQ(c1.tag, 7);
    EXPECT_EQ(c1.bytes, 800);
    EXPECT_EQ(c2.request, isend.request);
    EXPECT_EQ(c2.root, 0);
    EXPECT_EQ(c2.peer, isend.peer);
    EXPECT_EQ(c2.bytes, 800);
    EXPECT_EQ(c2.t_enter, wait.t_enter);  // completions carry the wait's times and site
    EXPECT_EQ(c2.t_exit, wait.t_exit);
    EXPECT_EQ(c2.site, wait.site);
  }
}

TEST_F(Otf2Test, SubCommunicatorPeersAndRootsAreWorldRanks) {
  const mt::Run run = mt::read_otf2_run(write_ring(tmp_).anchor.string());
  for (int r = 0; r < P; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto bcast = of(run, r, Kind::BCAST);
    ASSERT_EQ(bcast.size(), 1u);
    EXPECT_EQ(bcast[0].root, sub_root_world(r));  // sub-rank 0: world 2 (even) or 3 (odd)
    EXPECT_EQ(bcast[0].comm, 1u);                  // the split's communicator, the first created
    if (sub_rank(r) == 0) {
      const auto recv = of(run, r, Kind::RECV);
      ASSERT_EQ(recv.size(), 1u);
      EXPECT_EQ(recv[0].peer, r - 2);  // sub-rank 1 of {2, 0} is world 0, of {3, 1} world 1
      EXPECT_EQ(recv[0].tag, 3);
      EXPECT_EQ(recv[0].bytes, 24);
      EXPECT_EQ(recv[0].comm, 1u);
    } else {
      const auto send = of(run, r, Kind::SEND);
      ASSERT_EQ(send.size(), 1u);
      EXPECT_EQ(send[0].peer, r + 2);
      EXPECT_EQ(send[0].tag, 3);
      EXPECT_EQ(send[0].bytes, 24);
      EXPECT_EQ(send[0].comm, 1u);
    }
  }
}

TEST_F(Otf2Test, CollectiveBytesAreCountTimesTypeSize) {
  const mt::Run run = mt::read_otf2_run(write_ring(tmp_).anchor.string());
  for (int r = 0; r < P; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto allreduce = of(run, r, Kind::ALLREDUCE), bcast = of(run, r, Kind::BCAST);
    ASSERT_EQ(allreduce.size(), 1u);
    ASSERT_EQ(bcast.size(), 1u);
    EXPECT_EQ(allreduce[0].bytes, 8);  // Score-P wrote P x 8 sent and received
    EXPECT_EQ(allreduce[0].root, -1);
    EXPECT_EQ(allreduce[0].comm, 0u);
    EXPECT_EQ(bcast[0].bytes, 16);  // the root wrote 2 x 16 sent, the others 0
  }
}

TEST_F(Otf2Test, CommSplitNamesTheNewCommunicator) {
  const mt::Run run = mt::read_otf2_run(write_ring(tmp_).anchor.string());
  for (int r = 0; r < P; ++r) {
    const auto split = of(run, r, Kind::COMM_SPLIT);
    ASSERT_EQ(split.size(), 1u);
    EXPECT_EQ(split[0].root, 1) << "rank " << r;  // new communicator id
    EXPECT_EQ(split[0].comm, 0u) << "rank " << r;  // parent: world
    EXPECT_EQ(split[0].tag, -1) << "rank " << r;   // the colour is not in OTF2
    // its arguments from the communicator definitions: members in rank order, this rank's rank, the size
    const mt::CommArgs* a = run.ranks[static_cast<std::size_t>(r)].args_of(split[0]);
    ASSERT_NE(a, nullptr) << "rank " << r;
    EXPECT_EQ(a->members, r % 2 == 0 ? (std::vector<int>{2, 0}) : (std::vector<int>{3, 1})) << "rank " << r;
    EXPECT_EQ(a->new_rank, r < 2 ? 1 : 0) << "rank " << r;
    EXPECT_EQ(a->new_size, 2);
    EXPECT_EQ(a->color, mt::ANY);  // not recorded
  }
}

TEST_F(Otf2Test, TimesAreSecondsSinceTheEndOfMpiInit) {
  const mt::Run run = mt::read_otf2_run(write_ring(tmp_).anchor.string());
  for (int r = 0; r < P; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& t = run.ranks[static_cast<std::size_t>(r)];
    const double t0_us = 1000 + 10 * r;
    EXPECT_DOUBLE_EQ(t.t0_s, t0_us * 1e-6);  // from the clock's global offset
    EXPECT_DOUBLE_EQ(t.tick_s, 0.5e-9);
    ASSERT_EQ(t.events.size(), 11u);
    EXPECT_EQ(t.events[0].t_enter, 0.0);  // INIT: times 0, as the binary tracer writes it
    EXPECT_EQ(t.events[0].t_exit, 0.0);
    EXPECT_DOUBLE_EQ(t.events[2].t_enter, (1400 - t0_us) * 1e-6);  // ISEND
    EXPECT_DOUBLE_EQ(t.events[2].t_exit, (1420 - t0_us) * 1e-6);
    EXPECT_DOUBLE_EQ(t.events[3].t_exit, (1600 - t0_us) * 1e-6);  // WAITALL
    EXPECT_DOUBLE_EQ(t.events[10].t_enter, (3000 - t0_us) * 1e-6);  // FINALIZE
    EXPECT_DOUBLE_EQ(t.events[10].t_exit, (3100 - t0_us) * 1e-6);
  }
}

TEST_F(Otf2Test, CallSitesAreTheEnclosingRegions) {
  const mt::Run run = mt::read_otf2_run(write_ring(tmp_).anchor.string());
  const auto& t = run.ranks[1];
  ASSERT_EQ(t.events.size(), 11u);
  const std::uint64_t init = t.events[0].site, irecv = t.events[1].site, isend = t.events[2].site,
                      send = t.events[9].site;
  EXPECT_NE(init, 0u);
  EXPECT_NE(irecv, init);  // main/ring vs main
  EXPECT_NE(send, irecv);  // main/halo vs main/ring
  EXPECT_NE(send, init);
  EXPECT_EQ(isend, irecv);  // the same region stack: without unwinding OTF2 has no call lines
  EXPECT_EQ(t.events[6].site, init);  // ALLREDUCE, called from main too
  ASSERT_TRUE(t.sites.count(irecv));
  const auto& frames = t.sites.at(irecv).frames;
  ASSERT_EQ(frames.size(), 2u);  // innermost first: (region name, its first line)
  EXPECT_EQ(frames[0].module, "ring");
  EXPECT_EQ(frames[0].offset, 40u);
  EXPECT_EQ(frames[1].module, "main");
  EXPECT_EQ(frames[1].offset, 10u);
  EXPECT_EQ(t.sites.size(), 3u);
  for (int r = 0; r < P; ++r) EXPECT_EQ(run.ranks[static_cast<std::size_t>(r)].events[1].site, irecv) << "rank " << r;
}

TEST_F(Otf2Test, CompleteRunIsFinalized) {
  const mt::Run run = mt::read_otf2_run(write_ring(tmp_).anchor.string());
  EXPECT_TRUE(run.complete());
  for (const auto& t : run.ranks) EXPECT_EQ(t.status, Status::FINALIZED) << t.file;
  EXPECT_EQ(run.command, (std::vector<std::string>{"./ring", "64"}));  // from ProgramBegin
}

TEST_F(Otf2Test, MissingFinalizeIsIncomplete) {
  const mt::Run run = mt::read_otf2_run(write_ring(tmp_, {.stop_before_finalize = 2}).anchor.string());
  EXPECT_FALSE(run.complete());
  ASSERT_EQ(run.problems.size(), 1u);
  EXPECT_EQ(run.problems[0], event_file(tmp_, 2) +
                                 ": rank 2: incomplete: the trace ends before MPI_Finalize; 10 events are a prefix "
                                 "of its calls");
  EXPECT_EQ(run.ranks[2].status, Status::INCOMPLETE);
  EXPECT_EQ(run.ranks[2].events.size(), 10u);
  EXPECT_EQ(run.ranks[1].status, Status::FINALIZED);
}

TEST_F(Otf2Test, MetricsParametersAndFlushesAreIgnored) {
  const mt::Run plain = mt::read_otf2_run(write_ring(tmp_ / "plain").anchor.string());
  const mt::Run extra = mt::read_otf2_run(write_ring(tmp_ / "extra", {.harmless = true}).anchor.string());
  const auto &a = plain.ranks[1].events, &b = extra.ranks[1].events;
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].kind, b[i].kind) << i;
    EXPECT_EQ(a[i].peer, b[i].peer) << i;
    EXPECT_EQ(a[i].t_enter, b[i].t_enter) << i;
    EXPECT_EQ(a[i].t_exit, b[i].t_exit) << i;
  }
}

TEST_F(Otf2Test, UnsupportedRecordIsAnErrorAtItsPosition) {
  const Written w = write_ring(tmp_, {.rma = true});
  const TraceError e = error_of(w.anchor);
  EXPECT_EQ(e.file(), event_file(tmp_, 1));
  EXPECT_EQ(std::string(e.what()), event_file(tmp_, 1) + ": location 30 (rank 1): event " +
                                       std::to_string(w.special_position) +
                                       ": RmaPut records are not supported (README.md, \"OTF2 import\")");
}

TEST_F(Otf2Test, UnbalancedLeaveIsAnError) {
  const Written w = write_ring(tmp_, {.leave_mismatch = true});
  const TraceError e = error_of(w.anchor);
  EXPECT_EQ(std::string(e.what()), event_file(tmp_, 3) + ": location 10 (rank 3): event " +
                                       std::to_string(w.special_position) +
                                       ": Leave of ring, but the innermost entered region is halo");
}

TEST_F(Otf2Test, MissingArchiveNamesTheFile) {
  const fs::path anchor = tmp_ / "nothing" / "traces.otf2";
  const TraceError e = error_of(anchor);
  EXPECT_EQ(e.file(), anchor.string());
  const std::string what = e.what();
  EXPECT_EQ(what.rfind(anchor.string() + ": cannot open the OTF2 archive: ", 0), 0u) << what;
  EXPECT_NE(what.find("does not exist"), std::string::npos) << what;  // libotf2's own message
}

TEST_F(Otf2Test, NotAnArchiveNamesTheFile) {
  const fs::path anchor = tmp_ / "traces.otf2";
  std::ofstream(anchor) << "not an OTF2 anchor file\n";
  const TraceError e = error_of(anchor);
  EXPECT_EQ(e.file(), anchor.string());
  EXPECT_NE(std::string(e.what()).find("cannot open the OTF2 archive"), std::string::npos) << e.what();
}

TEST_F(Otf2Test, MissingEventFileNamesIt) {
  const Written w = write_ring(tmp_);
  fs::remove(event_file(tmp_, 2));
  const TraceError e = error_of(w.anchor);
  EXPECT_EQ(e.file(), event_file(tmp_, 2));
  EXPECT_NE(std::string(e.what()).find("location 20 (rank 2): cannot read the events"), std::string::npos) << e.what();
}

TEST_F(Otf2Test, TruncatedEventFileIsAnErrorWithOtf2sMessage) {
  const Written w = write_ring(tmp_);
  const std::string file = event_file(tmp_, 1);
  fs::resize_file(file, fs::file_size(file) / 2);
  const TraceError e = error_of(w.anchor);
  EXPECT_EQ(e.file(), file);
  const std::string what = e.what();
  EXPECT_NE(what.find("location 30 (rank 1): "), std::string::npos) << what;
  EXPECT_NE(what.find("INVALID_DATA"), std::string::npos) << what;  // OTF2's error name
}

// Every prefix of an event file: an error naming that file, or (when only padding was cut) the whole run.
TEST_F(Otf2Test, EveryPrefixOfAnEventFileFailsCleanly) {
  const Written w = write_ring(tmp_);
  const std::string file = event_file(tmp_, 3);
  const auto size = fs::file_size(file);
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), size);
  int errors = 0;
  for (std::size_t n = 0; n < size; ++n) {
    std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(n));
    try {
      const mt::Run run = mt::read_otf2_run(w.anchor.string());
      EXPECT_EQ(run.ranks[3].events.size(), 11u) << "prefix of " << n << " bytes read as a shorter trace";
    } catch (const TraceError& e) {
      ++errors;
      EXPECT_EQ(e.file(), file) << "prefix of " << n << " bytes: " << e.what();
    }
  }
  EXPECT_GE(errors, static_cast<int>(size) - 8);
}

// Every byte of an event file flipped: the reader may accept a flip that still makes sense (a timestamp or
// a tag), else it throws TraceError; never another exception, never a crash (also under ASan/UBSan).
TEST_F(Otf2Test, EveryFlippedByteOfAnEventFileFailsCleanly) {
  const Written w = write_ring(tmp_);
  const std::string file = event_file(tmp_, 0);
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int errors = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    std::ofstream(file, std::ios::binary | std::ios::trunc)
        .write(flipped.data(), static_cast<std::streamsize>(flipped.size()));
    try {
      mt::read_otf2_run(w.anchor.string());
    } catch (const TraceError& e) {
      ++errors;
      EXPECT_TRUE(e.file() == file || e.file() == w.anchor.string()) << "byte " << i << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "byte " << i << ": not a TraceError: " << e.what();
    }
  }
  EXPECT_GT(errors, static_cast<int>(bytes.size()) / 2);
}

// Score-P with unwinding: CallingContextEnter/Leave instead of Enter/Leave; the call site is the chain of
// callers with the line of each call, so two barriers in one function have different sites.
TEST_F(Otf2Test, CallingContextsGiveCallLines) {
  enum Context : OTF2_CallingContextRef { C_MAIN, C_SOLVE, C_INIT, C_BARRIER_A, C_BARRIER_B, C_FINALIZE,
                                          C_MAIN_AT_SOLVE, C_MAIN_AT_INIT, C_MAIN_AT_FIN, C_SOLVE_AT_21,
                                          C_SOLVE_AT_25 };
  enum Scl : OTF2_SourceCodeLocationRef { L_8, L_9, L_12, L_21, L_25 };
  ArchiveWriter a(tmp_);
  a.location(loc(0), [](const Script& s) {
    auto enter = [&](OTF2_CallingContextRef c, double us) {
      OTF2_EvtWriter_CallingContextEnter(s.w, nullptr, tick(us), c, 1);
    };
    auto leave = [&](OTF2_CallingContextRef c, double us) {
      OTF2_EvtWriter_CallingContextLeave(s.w, nullptr, tick(us), c);
    };
    auto barrier = [&](OTF2_CallingContextRef c, double us) {
      enter(c, us);
      OTF2_EvtWriter_MpiCollectiveBegin(s.w, nullptr, tick(us) + 1);
      OTF2_EvtWriter_MpiCollectiveEnd(s.w, nullptr, tick(us) + 2, OTF2_COLLECTIVE_OP_BARRIER, WORLD,
                                      OTF2_UNDEFINED_UINT32, 0, 0);
      leave(c, us + 10);
    };
    enter(C_MAIN, 10);
    enter(C_INIT, 100);
    leave(C_INIT, 1000);
    enter(C_SOLVE, 1100);
    barrier(C_BARRIER_A, 1200);
    barrier(C_BARRIER_B, 1300);
    leave(C_SOLVE, 1400);
    enter(C_FINALIZE, 1500);
    leave(C_FINALIZE, 1600);
    leave(C_MAIN, 1700);
  });
  a.finish([&](OTF2_GlobalDefWriter* g, const auto& events) {
    common_definitions(g, events, 1);
    const std::pair<Scl, uint32_t> lines[] = {{L_8, 8}, {L_9, 9}, {L_12, 12}, {L_21, 21}, {L_25, 25}};
    for (const auto& [ref, line] : lines) OTF2_GlobalDefWriter_WriteSourceCodeLocation(g, ref, S_FILE, line);
    const OTF2_CallingContextRef none = OTF2_UNDEFINED_CALLING_CONTEXT;
    const OTF2_SourceCodeLocationRef nowhere = OTF2_UNDEFINED_SOURCE_CODE_LOCATION;
    struct Def {
      OTF2_CallingContextRef self;
      OTF2_RegionRef region;
      OTF2_SourceCodeLocationRef where;
      OTF2_CallingContextRef parent;
    };
    const Def defs[] = {
        {C_MAIN, MAIN, nowhere, none},          {C_MAIN_AT_INIT, MAIN, L_8, none},
        {C_MAIN_AT_SOLVE, MAIN, L_9, none},     {C_MAIN_AT_FIN, MAIN, L_12, none},
        {C_SOLVE, SOLVE, nowhere, C_MAIN_AT_SOLVE}, {C_SOLVE_AT_21, SOLVE, L_21, C_MAIN_AT_SOLVE},
        {C_SOLVE_AT_25, SOLVE, L_25, C_MAIN_AT_SOLVE}, {C_INIT, MPI_INIT, nowhere, C_MAIN_AT_INIT},
        {C_BARRIER_A, MPI_BARRIER, nowhere, C_SOLVE_AT_21}, {C_BARRIER_B, MPI_BARRIER, nowhere, C_SOLVE_AT_25},
        {C_FINALIZE, MPI_FINALIZE, nowhere, C_MAIN_AT_FIN}};
    for (const Def& d : defs) OTF2_GlobalDefWriter_WriteCallingContext(g, d.self, d.region, d.where, d.parent);
  });
  const mt::Run run = mt::read_otf2_run((tmp_ / "traces.otf2").string());
  ASSERT_EQ(run.P, 1);
  const auto& t = run.ranks[0];
  EXPECT_EQ(t.status, Status::FINALIZED);
  ASSERT_EQ(t.events.size(), 4u);  // INIT, BARRIER, BARRIER, FINALIZE
  EXPECT_EQ(t.events[1].kind, Kind::BARRIER);
  EXPECT_EQ(t.events[2].kind, Kind::BARRIER);
  const std::uint64_t a21 = t.events[1].site, a25 = t.events[2].site;
  EXPECT_NE(a21, a25);
  ASSERT_TRUE(t.sites.count(a21));
  const auto& frames = t.sites.at(a21).frames;
  ASSERT_EQ(frames.size(), 2u);  // innermost first: (function, line of the call in it)
  EXPECT_EQ(frames[0].module, "solve");
  EXPECT_EQ(frames[0].offset, 21u);
  EXPECT_EQ(frames[1].module, "main");
  EXPECT_EQ(frames[1].offset, 9u);
  EXPECT_EQ(t.sites.at(a25).frames.at(0).offset, 25u);
  EXPECT_DOUBLE_EQ(t.events[2].t_exit, (1310 - 1000) * 1e-6);
}

// `mkskel build` (the binary) on OTF2 archives: they carry no run parameters, FILE::NAME=VALUE gives them and the
// builder regresses in them (the ring's 800 and 1600 bytes at N = 100 and 200: size 8*N); without them the two runs
// are one configuration given twice, with them on one run only the parameter names differ: exit 1, nothing written.
TEST_F(Otf2Test, MkskelBuildTakesTheRunParametersAfterTheAnchorFile) {
  Options small, large;
  large.ring_bytes = 1600;
  const std::string a = write_ring(tmp_ / "n100", small).anchor.string();
  const std::string b = write_ring(tmp_ / "n200", large).anchor.string();
  const fs::path skel = tmp_ / "ring.json";
  auto mkskel = [&](const std::string& args) { return mksim::test::shell(std::string(MKSKEL_BIN) + " build " + args + " 2>&1"); };
  const auto ok = mkskel(a + "::N=100 " + b + "::N=200 -o " + skel.string());
  ASSERT_EQ(ok.first, 0) << ok.second;
  EXPECT_NE(ok.second.find("from 2 run(s)"), std::string::npos) << ok.second;
  std::ifstream f(skel);
  std::stringstream json;
  json << f.rdbuf();
  EXPECT_NE(json.str().find("\"N\""), std::string::npos) << json.str();
  EXPECT_NE(json.str().find("\"size\": \"8*N\""), std::string::npos) << json.str();
  fs::remove(skel);
  const auto bare = mkskel(a + " " + b + " -o " + skel.string());
  EXPECT_EQ(bare.first, 1) << bare.second;
  EXPECT_NE(bare.second.find("were traced with the same P and parameters"), std::string::npos) << bare.second;
  const auto one = mkskel(a + "::N=100 " + b + " -o " + skel.string());
  EXPECT_EQ(one.first, 1) << one.second;
  EXPECT_NE(one.second.find("parameters differ"), std::string::npos) << one.second;
  const auto bad = mkskel(a + "::N=x " + b + "::N=200 -o " + skel.string());
  EXPECT_EQ(bad.first, 2) << bad.second;
  EXPECT_NE(bad.second.find(a + "::N=x"), std::string::npos) << bad.second;
  EXPECT_FALSE(fs::exists(skel));
}

}  // namespace
