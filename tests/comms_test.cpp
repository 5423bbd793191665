// Skeleton format v3 without a simulator: the topology functions of expressions (dims against the real
// MPI_Dims_create of OpenMPI for n <= 4096, d = 1..4; Cartesian coordinates and neighbours against a brute-force
// grid), communicators laid out at P as MPI makes them, the checks before a run (peers and roots in
// [0, size of their communicator), integers, membership) and the expansion's world ranks.
#include "skeletons/comms.hpp"
#include "skeletons/error.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace mksim::skeletons;

namespace {

Skeleton v3(const std::string& rest) {
  return parse_skeleton(R"J({"format":"mksim-skeleton","version":3,"name":"t",)J" + rest + "}", "t.json");
}

std::string error_of(const std::string& rest, int P = 0) {
  try {
    Skeleton s = v3(rest);
    if (P > 0) check_for_run(s, bind_parameters(s, P, {}), P);
    return "";
  } catch (const SkeletonError& e) {
    return e.what();
  }
}

double eval(const std::string& text) { return parse_expr(text, SymbolTable{}).eval({}); }

}  // namespace

// dims(n, d, i) is OpenMPI's MPI_Dims_create: the real call (tests/topo_app.c "dims") for every n <= 4096 and d = 1..4.
TEST(CommsExpr, DimsIsTheRealMpiDimsCreate) {
  const std::string cmd = std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 1 ") +
                          TOPO_APP + " dims 4096";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[256];
  long lines = 0, differ = 0;
  while (std::fgets(line, sizeof line, p)) {
    std::istringstream in(line);
    int n = 0, d = 0;
    in >> n >> d;
    std::vector<int> real(static_cast<std::size_t>(d));
    for (int& v : real) in >> v;
    const std::vector<int> ours = dims_create(n, d);
    if (ours != real && differ++ < 5) ADD_FAILURE() << "MPI_Dims_create(" << n << ", " << d << ") differs";
    for (int i = 0; i < d; ++i)
      ASSERT_EQ(eval("dims(" + std::to_string(n) + ", " + std::to_string(d) + ", " + std::to_string(i) + ")"), real[static_cast<std::size_t>(i)]);
    ++lines;
  }
  EXPECT_EQ(pclose(p), 0);
  EXPECT_EQ(lines, 4096 * 4);
  EXPECT_EQ(differ, 0);
  // outside its domain: not a number (which every check refuses)
  for (const char* bad : {"dims(0, 2, 0)", "dims(6, 2, 2)", "dims(6.5, 2, 0)", "dims(6, 0, 0)", "dims(6, 2, -1)"})
    EXPECT_TRUE(std::isnan(eval(bad))) << bad;
}

// Face, edge and corner neighbours (6, 18, 26) of every rank of 3-D grids, periodic or not, written with
// cart_coord and cart_rank, against the grid built by hand; 1-D and 2-D grids pass 1 for the unused dimensions.
TEST(CommsExpr, CartesianNeighboursAreExact) {
  for (const auto& [X, Y, Z] : std::vector<std::array<int, 3>>{{4, 3, 2}, {2, 2, 2}, {5, 1, 1}, {3, 4, 1}, {1, 1, 1}})
    for (bool periodic : {false, true}) {
      SymbolTable t;
      t.add("rank");
      const auto coord = [&](int k) {
        return parse_expr("cart_coord(rank, " + std::to_string(k) + ", " + std::to_string(X) + ", " + std::to_string(Y) + ", " +
                              std::to_string(Z) + ")",
                          t);
      };
      const Expr cx = coord(0), cy = coord(1), cz = coord(2);
      for (int r = 0; r < X * Y * Z; ++r) {
        const double f[1] = {static_cast<double>(r)};
        const int x = r / (Y * Z), y = (r / Z) % Y, z = r % Z;
        ASSERT_EQ(cx.eval(f), x);
        ASSERT_EQ(cy.eval(f), y);
        ASSERT_EQ(cz.eval(f), z);
        int faces = 0, edges = 0, corners = 0;
        for (int dx = -1; dx <= 1; ++dx)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dz = -1; dz <= 1; ++dz) {
              const int moved = (dx != 0) + (dy != 0) + (dz != 0);
              if (moved == 0) continue;
              auto wrap = [&](int c, int d, int n) { return periodic ? ((c + d) % n + n) % n : c + d; };
              const int nx = wrap(x, dx, X), ny = wrap(y, dy, Y), nz = wrap(z, dz, Z);
              const bool inside = nx >= 0 && nx < X && ny >= 0 && ny < Y && nz >= 0 && nz < Z;
              const int want = inside ? (nx * Y + ny) * Z + nz : -1;
              auto arg = [&](int c, int d, int n) {
                const std::string e = std::to_string(c) + " + " + std::to_string(d);
                return periodic ? "(" + e + ") % " + std::to_string(n) : e;
              };
              const std::string text = "cart_rank(" + arg(x, dx, X) + ", " + arg(y, dy, Y) + ", " + arg(z, dz, Z) + ", " +
                                       std::to_string(X) + ", " + std::to_string(Y) + ", " + std::to_string(Z) + ")";
              ASSERT_EQ(eval(text), want) << text;
              if (inside) (moved == 1 ? faces : moved == 2 ? edges : corners)++;
            }
        if (periodic && X > 2 && Y > 2 && Z > 2) {
          EXPECT_EQ(faces, 6);
          EXPECT_EQ(faces + edges, 18);
          EXPECT_EQ(faces + edges + corners, 26);
        }
      }
    }
  for (const char* bad : {"cart_rank(0.5, 0, 0, 2, 2, 1)", "cart_rank(0, 0, 0, 0, 2, 1)", "cart_coord(8, 0, 2, 2, 2)",
                          "cart_coord(1, 3, 2, 2, 2)", "cart_coord(1.5, 0, 2, 2, 2)"})
    EXPECT_TRUE(std::isnan(eval(bad))) << bad;
  EXPECT_EQ(eval("PROC_NULL"), -1);
}

const char* GRID = R"J("params":{"N":8},
  "comms":{
    "grid":{"cart":"world","dims":["dims(P, 2, 0)","dims(P, 2, 1)"],"periods":[true,false]},
    "row":{"cart_sub":"grid","remain":[false,true]},
    "col":{"cart_sub":"grid","remain":[true,false]},
    "half":{"split":"world","color":"if(rank % 3 == 1, -1, rank % 3)","key":"-rank"},
    "inner":{"split":"half","color":"parent_rank % 2"},
    "copy":{"dup":"row"},
    "evens":{"create":"world","members":"2 * member","size":"ceil(P / 2)"},
    "ring":{"graph":"world","nodes":"P - 1"}},
  "let":{"right":"(row.rank + 1) % row.size","X":"dims(P, 2, 0)"},
  "body":[])J";

// Every kind of communicator at P = 12 (a 4 x 3 grid): members in MPI's rank order, ranks and sizes in the frame.
TEST(Comms, LayoutIsMpis) {
  const Skeleton s = v3(GRID);
  const int P = 12;
  const auto frame = bind_parameters(s, P, {});
  const CommLayout L = layout_comms(s, frame, P);
  ASSERT_EQ(L.comms.size(), 9u);
  const int grid = 1, row = 2, col = 3, half = 4, inner = 5, copy = 6, evens = 7, ring = 8;
  EXPECT_EQ(L.members(grid, 5), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(L.comms[grid].dims[0], (std::vector<int>{4, 3}));
  EXPECT_EQ(L.members(row, 4), (std::vector<int>{3, 4, 5}));  // row of rank 4: x = 1
  EXPECT_EQ(L.members(col, 4), (std::vector<int>{1, 4, 7, 10}));
  EXPECT_EQ(L.comms[row].groups.size(), 4u);
  EXPECT_EQ(L.comms[col].groups.size(), 3u);
  // split by colour rank % 3 (1: undefined) with key -rank: decreasing ranks
  EXPECT_EQ(L.members(half, 0), (std::vector<int>{9, 6, 3, 0}));
  EXPECT_EQ(L.members(half, 11), (std::vector<int>{11, 8, 5, 2}));
  EXPECT_TRUE(L.members(half, 4).empty());
  EXPECT_EQ(L.rank_in(half, 4), -1);
  // a split of a split, by the rank in the parent ({9, 6, 3, 0}: parent ranks 0, 2 and 1, 3), keyed by it
  EXPECT_EQ(L.members(inner, 0), (std::vector<int>{6, 0}));
  EXPECT_EQ(L.members(inner, 3), (std::vector<int>{9, 3}));
  EXPECT_EQ(L.members(copy, 4), L.members(row, 4));
  EXPECT_EQ(L.members(evens, 6), (std::vector<int>{0, 2, 4, 6, 8, 10}));
  EXPECT_TRUE(L.members(evens, 3).empty());
  EXPECT_EQ(L.size_of(ring, 0), 11);
  EXPECT_EQ(L.rank_in(ring, 11), -1);
  // the frame: NAME.rank, NAME.size, and a `let` computed from them
  std::vector<double> f = frame;
  bind_rank(s, f, 4, L);
  EXPECT_EQ(f[static_cast<std::size_t>(s.symbols.find("row.rank"))], 1);
  EXPECT_EQ(f[static_cast<std::size_t>(s.symbols.find("row.size"))], 3);
  EXPECT_EQ(f[static_cast<std::size_t>(s.symbols.find("half.rank"))], -1);
  EXPECT_EQ(f[static_cast<std::size_t>(s.symbols.find("half.size"))], 0);
  EXPECT_EQ(f[static_cast<std::size_t>(s.symbols.find("right"))], 2);
  // the bind_rank that lays out by itself agrees
  std::vector<double> g = frame;
  bind_rank(s, g, 4);
  EXPECT_EQ(f, g);
}

// The expansion gives world ranks: peers and roots are translated from their communicator's.
TEST(Comms, ExpansionTranslatesPeersAndRootsToWorldRanks) {
  const Skeleton s = v3(R"J("comms":{"half":{"split":"world","color":"rank % 2","key":"-rank"},
     "grid":{"cart":"world","dims":[2,2]},"row":{"cart_sub":"grid","remain":[false,true]}},
    "body":[{"op":"send","comm":"half","peer":"(half.rank + 1) % half.size","size":8},
            {"op":"recv","comm":"half","peer":"(half.rank + half.size - 1) % half.size","size":8},
            {"op":"bcast","comm":"row","root":1,"size":16},
            {"op":"isend","comm":"grid","peer":"cart_rank(cart_coord(rank, 0, 2, 2, 1) + 1, 0, 0, 2, 2, 1)","size":4},
            {"op":"waitall"}])J");
  const auto frame = bind_parameters(s, 4, {});
  // half: {2, 0} and {3, 1}
  const int next[4] = {2, 3, 0, 1};
  for (int r = 0; r < 4; ++r) {
    const auto ops = expand_rank(s, frame, r);
    ASSERT_EQ(ops.size(), 5u);
    EXPECT_EQ(ops[0].comm, 1);
    EXPECT_EQ(ops[0].comm_size, 2);
    EXPECT_EQ(ops[0].peer, next[r]);
    EXPECT_EQ(ops[1].peer, next[r]);
    EXPECT_EQ(ops[2].comm, 3);
    EXPECT_EQ(ops[2].root, r / 2 * 2 + 1);
    EXPECT_EQ(ops[3].peer, r < 2 ? r / 2 * 2 + 2 : -3) << "rank " << r;  // the lower row sends to PROC_NULL
  }
}

// Before a run: peers and roots are integers in [0, size of their communicator) (or PROC_NULL for peers),
// sizes and loop counts non-negative integers, ranks members of the communicators they use; declarations
// are checked at every rank. Each error names the file, the place and the value.
TEST(Comms, ChecksRefuseWhatMpiWouldNot) {
  auto body = [](const std::string& ops) {
    return R"J("comms":{"half":{"split":"world","color":"rank % 2"}},"body":)J" + ops;
  };
  EXPECT_EQ(error_of(body(R"J([{"op":"send","comm":"half","peer":"(half.rank + 1) % half.size","size":8},
                               {"op":"recv","comm":"half","peer":"any","size":8}])J"), 6), "");
  EXPECT_EQ(error_of(body(R"J([{"op":"send","comm":"half","peer":"half.size","size":8}])J"), 6),
            "t.json: /body/0: at P=6, rank 0: destination \"half.size\" = 3 is not a rank in [0, 3) of communicator \"half\" or PROC_NULL (-1)");
  EXPECT_EQ(error_of(body(R"J([{"op":"send","comm":"half","peer":"half.rank + 0.5","size":8}])J"), 6),
            "t.json: /body/0: at P=6, rank 0: destination \"half.rank + 0.5\" = 0.5 is not a rank in [0, 3) of communicator \"half\" or PROC_NULL (-1)");
  EXPECT_EQ(error_of(body(R"J([{"op":"bcast","comm":"half","root":3,"size":8}])J"), 6),
            "t.json: /body/0: at P=6, rank 0: root \"3\" = 3 is not a rank in [0, 3) of communicator \"half\"");
  EXPECT_NE(error_of(body(R"J([{"op":"bcast","comm":"half","root":-1,"size":8}])J"), 6).find("root \"-1\" = -1 is not a rank in [0, 3)"),
            std::string::npos);  // (a root is never PROC_NULL)
  EXPECT_EQ(error_of(R"J("params":{"N":10},"body":[{"op":"allreduce","size":"N / 4"}])J", 4),
            "t.json: /body/0: at P=4, rank 0: size \"N / 4\" = 2.5 is not a byte count (a non-negative integer)");
  EXPECT_EQ(error_of(R"J("body":[{"op":"loop","count":"P / 4","body":[]}])J", 6),
            "t.json: /body/0: at P=6, rank 0: loop count \"P / 4\" = 1.5 is not a count (a non-negative integer)");
  EXPECT_EQ(error_of(R"J("body":[{"op":"send","id":"s","peer":"rank - 2","size":1}])J", 2),
            "t.json: s: at P=2, rank 0: destination \"rank - 2\" = -2 is not a rank in [0, 2) or PROC_NULL (-1) [/body/0]");
  EXPECT_EQ(error_of(R"J("comms":{"odd":{"split":"world","color":"if(rank % 2, 0, -1)"}},"body":[{"op":"barrier","comm":"odd"}])J", 4),
            "t.json: /body/0: at P=4, rank 0: rank 0 is not a member of communicator \"odd\"");
  // declarations, at every rank of the parent
  EXPECT_EQ(error_of(R"J("comms":{"c":{"split":"world","color":"rank / 2"}},"body":[])J", 3),
            "t.json: /comms/c/color: at P=3, rank 1 (rank 1 of its world): \"rank / 2\" = 0.5 is not an integer");
  EXPECT_EQ(error_of(R"J("comms":{"g":{"cart":"world","dims":["P","2"]}},"body":[])J", 3),
            "t.json: /comms/g/dims: at P=3, rank 0 (rank 0 of its world): the grid has 6 cells but its parent only 3 ranks");
  EXPECT_EQ(error_of(R"J("comms":{"g":{"cart":"world","dims":["rank + 1"]}},"body":[])J", 3),
            "t.json: /comms/g/dims: at P=3, rank 1 (rank 1 of its world): the grid differs from its parent's rank 0's (MPI_Cart_create needs the same dims on every rank)");
  EXPECT_EQ(error_of(R"J("comms":{"e":{"create":"world","members":"member % 2","size":3}},"body":[])J", 4),
            "t.json: /comms/e/members: at P=4, rank 0 (rank 0 of its world): member 2: parent rank 0 is a member twice");
  EXPECT_EQ(error_of(R"J("comms":{"e":{"create":"world","members":"member + 3","size":2}},"body":[])J", 4),
            "t.json: /comms/e/members: at P=4, rank 0 (rank 0 of its world): member 1: \"member + 3\" = 4 is not a rank of its parent (of 4)");
  // reading: names and versions
  EXPECT_EQ(error_of(R"J("body":[{"op":"barrier","comm":"rows"}])J"),
            "t.json: /body/0/comm: unknown communicator \"rows\" (declared: world)");
  EXPECT_EQ(error_of(R"J("comms":{"a":{"dup":"b"},"b":{"dup":"world"}},"body":[])J"),
            "t.json: /comms/a/dup: unknown communicator \"b\" (declared before this one: world)");
  EXPECT_EQ(error_of(R"J("comms":{"world":{"dup":"world"}},"body":[])J"),
            "t.json: /comms/world: \"world\" is MPI_COMM_WORLD, always there: give the communicator another name");
  EXPECT_EQ(error_of(R"J("comms":{"c":{"cart_sub":"world","remain":[true]}},"body":[])J"),
            "t.json: /comms/c/cart_sub: the parent of a \"cart_sub\" is a \"cart\" (or \"cart_sub\") communicator");
  EXPECT_EQ(error_of(R"J("comms":{"c":{"split":"world","color":"c.rank"}},"body":[])J"),
            "t.json: /comms/c/color: in expression \"c.rank\": 'c.rank' is not known yet when communicator \"c\" is made (its own and later communicators' ranks, and `let` values computed from them)");
  EXPECT_NE(error_of(R"J("comms":{"c":{"dup":"world"}},"body":[{"op":"send","peer":"parent_rank","size":1}])J")
                .find("/body/0/peer: in expression \"parent_rank\": 'parent_rank' is only defined in a communicator's declaration"),
            std::string::npos);
  EXPECT_NE(error_of(R"J("params":{"member":1},"body":[])J").find("\"member\" is reserved (format version 3)"), std::string::npos);
  // version 2 files keep their names, and PROC_NULL is refused there
  EXPECT_NO_THROW(parse_skeleton(R"J({"format":"mksim-skeleton","version":2,"params":{"member":1},"body":[]})J"));
  const Skeleton old = parse_skeleton(R"J({"format":"mksim-skeleton","version":2,"body":[{"op":"send","peer":"-1","size":1.5}]})J", "o.json");
  try {
    check_for_run(old, bind_parameters(old, 2, {}), 2);
    FAIL() << "PROC_NULL accepted in a version 2 file";
  } catch (const SkeletonError& e) {
    EXPECT_EQ(std::string(e.what()), "o.json: /body/0: at P=2, rank 0: destination \"-1\" = -1 is not a rank in [0, 2)");
  }
}

// The expansion of a hand-written v3 skeleton against a real trace, rank by rank: tests/topo_app.c "grid" traced
// with mktrace at P = 12 (a 4 x 3 grid: rows of 3, columns of 4) and tests/data/topo_grid.json expanded at P = 12.
// Every point-to-point call and collective of the loop agrees (kind, world peer, tag, bytes, world root), and the
// skeleton's communicators are the trace's: one to one, with the sizes its creation calls recorded.
TEST(Comms, ExpansionMatchesARealTraceRankByRank) {
  const int P = 12, steps = 2, bytes = 256;
  const std::string dir = ::testing::TempDir() + "/mksim_comms_expand_" + std::to_string(::getpid());
  const std::string cmd = std::string(MKTRACE) + " -np " + std::to_string(P) + " -o " + dir + " -- " + TOPO_APP + " grid " +
                          std::to_string(steps) + " " + std::to_string(bytes) + " >" + dir + ".log 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const mksim::trace::Run run = mksim::trace::read_run(dir, {.require_complete = true});
  const Skeleton sk = load_skeleton(std::string(MKSIM_SOURCE_DIR) + "/tests/data/topo_grid.json");
  const auto frame = bind_parameters(sk, P, {{"steps", steps}, {"bytes", bytes}});
  const CommLayout layout = layout_comms(sk, frame, P);
  using mksim::trace::Kind;
  std::map<std::uint32_t, int> comm_of;  // trace communicator id -> the skeleton's (per rank: ids agree here)
  for (int r = 0; r < P; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& t = run.ranks[static_cast<std::size_t>(r)];
    std::map<std::uint32_t, int> size_of;  // trace communicator id -> its size, from its creation's arguments
    for (const auto& e : t.events)
      if (const auto* a = t.args_of(e); a && mksim::trace::creates_comm(e.kind)) size_of[static_cast<std::uint32_t>(e.root)] = a->new_size;
    // the loop: from the first irecv to the last barrier on a communicator other than world
    std::size_t first = 0, last = 0;
    for (std::size_t i = 0; i < t.events.size(); ++i) {
      if (t.events[i].kind == Kind::IRECV && first == 0) first = i;
      if (t.events[i].kind == Kind::BARRIER && t.events[i].comm != 0) last = i;
    }
    std::vector<const mksim::trace::Event*> calls;
    for (std::size_t i = first; i <= last; ++i)
      if (t.events[i].kind != Kind::COMPLETE) calls.push_back(&t.events[i]);
    const auto ops = expand_rank(sk, frame, r, layout);
    ASSERT_EQ(calls.size(), ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const auto& e = *calls[i];
      const ExpandedOp& x = ops[i];
      static const std::map<Kind, std::string> op_of = {{Kind::ISEND, "isend"},     {Kind::IRECV, "irecv"},
                                                        {Kind::WAITALL, "waitall"}, {Kind::BCAST, "bcast"},
                                                        {Kind::ALLREDUCE, "allreduce"}, {Kind::BARRIER, "barrier"}};
      ASSERT_TRUE(op_of.count(e.kind)) << mksim::trace::kind_name(e.kind);
      EXPECT_EQ(op_name(x), op_of.at(e.kind)) << i;
      if (x.kind == ExpandedOp::Kind::ISEND || x.kind == ExpandedOp::Kind::IRECV) {
        EXPECT_EQ(x.peer, e.peer) << i;
        EXPECT_EQ(x.tag, e.tag) << i;
        EXPECT_EQ(x.size_bytes, e.bytes) << i;
      }
      if (x.kind == ExpandedOp::Kind::COLLECTIVE) {
        if (is_rooted(x.collective)) {
          EXPECT_EQ(x.root, e.root) << i;
        }
        EXPECT_EQ(x.size_bytes, x.collective == CollectiveKind::BARRIER ? 0 : e.bytes) << i;
      }
      if (x.kind != ExpandedOp::Kind::WAITALL) {
        auto [it, fresh] = comm_of.try_emplace(e.comm, x.comm);
        EXPECT_EQ(it->second, x.comm) << "trace communicator " << e.comm << ", op " << i;
        if (e.comm != 0) {
          EXPECT_EQ(size_of.at(e.comm), x.comm_size) << "op " << i;
        }
      }
    }
  }
  EXPECT_EQ(comm_of.size(), 5u);  // the grid, its rows and columns, the split, the dup
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".log");
}
