// Reader of SimGrid 3.32 time-independent traces (README.md, "SimGrid time-independent traces"): one text
// file per rank, one action per line ("<rank> <action> <fields>"), listed by an index file.
#include "skeletons/trace/ti_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

namespace mksim::trace {

namespace {

namespace fs = std::filesystem;

constexpr std::int64_t SMPI_ANY_SOURCE = -333;  // MPI_ANY_SOURCE in SMPI 3.32's mpi.h

// One line being parsed: its tokens, and where errors point.
struct Line {
  const std::string& file;
  long number;
  std::vector<std::string> tok;  // tok[0] = rank, tok[1] = action, then the fields

  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(file, TraceError::NO_OFFSET, "line " + std::to_string(number) + ": " + what);
  }
  std::size_t fields() const { return tok.size() - 2; }
  void expect_fields(std::size_t n, const std::string& layout) const {
    if (fields() != n)
      fail("'" + tok[1] + "' needs " + std::to_string(n) + " fields (" + layout + "), got " +
           std::to_string(fields()));
  }
  // field i (0-based, after the action) as an integer
  std::int64_t integer(std::size_t i) const {
    const std::string& s = tok[i + 2];
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size())
      fail("field " + std::to_string(i + 1) + " of '" + tok[1] + "' is not an integer: '" + s + "'");
    return v;
  }
  std::int64_t count(std::size_t i) const {
    const std::int64_t v = integer(i);
    if (v < 0) fail("field " + std::to_string(i + 1) + " of '" + tok[1] + "' is negative: " + std::to_string(v));
    return v;
  }
  double real(std::size_t i) const {
    const std::string& s = tok[i + 2];
    double v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size())
      fail("field " + std::to_string(i + 1) + " of '" + tok[1] + "' is not a number: '" + s + "'");
    return v;
  }
  std::int64_t type_size(std::size_t i) const {
    const std::int64_t id = integer(i);
    const int size = id >= 0 && id < 1000 ? ti_datatype_size(static_cast<int>(id)) : -1;
    if (size < 0) fail("unknown datatype id " + std::to_string(id) + " in field " + std::to_string(i + 1));
    return size;
  }
  std::int32_t rank_field(std::size_t i, int P) const {
    const std::int64_t v = integer(i);
    if (v < 0 || v >= P)
      fail("field " + std::to_string(i + 1) + " of '" + tok[1] + "' is not a rank of 0.." + std::to_string(P - 1) +
           ": " + std::to_string(v));
    return static_cast<std::int32_t>(v);
  }
  // a source: a rank, or SMPI's MPI_ANY_SOURCE (-333), returned as ANY
  std::int32_t source_field(std::size_t i, int P) const {
    return integer(i) == SMPI_ANY_SOURCE ? ANY : rank_field(i, P);
  }
  // byte counts: a * b and a + b of non-negative values, an error where int64 would overflow
  std::int64_t product(std::int64_t a, std::int64_t b) const {
    if (b != 0 && a > INT64_MAX / b)
      fail("'" + tok[1] + "': " + std::to_string(a) + " x " + std::to_string(b) + " bytes is too large");
    return a * b;
  }
  std::int64_t sum(std::int64_t a, std::int64_t b) const {
    if (a > INT64_MAX - b) fail("'" + tok[1] + "': the counts add up to more than " + std::to_string(INT64_MAX));
    return a + b;
  }
  std::int32_t tag_field(std::size_t i) const {
    const std::int64_t v = integer(i);
    if (v < INT32_MIN || v > INT32_MAX) fail("tag out of range: " + std::to_string(v));
    return static_cast<std::int32_t>(v);
  }
};

struct Pending {
  std::uint32_t request;
  std::size_t event;  // index of the isend/irecv event
};

// TI traces have no call sites; a call's site is its call point instead (README.md): one frame named
// "MPI_Isend tag 1 comm 0" (the MPI function, the tag as posted for point-to-point calls, the communicator),
// hashed as OTF2's region frames are. Ranks running the same code then share sites, as with the binary
// tracer, and calls that differ only in their tag (a red rank's north exchange and a black rank's south one)
// do not. A COMPLETE record has the site of the wait it belongs to.
void assign_call_points(RankTrace& t) {
  std::map<std::tuple<Kind, std::uint32_t, std::int32_t>, std::uint64_t> known;  // call point -> site
  std::uint64_t last = 0;
  for (Event& e : t.events) {
    if (e.kind == Kind::COMPLETE) {
      e.site = last;
      continue;
    }
    const bool p2p = is_send(e.kind) || e.kind == Kind::RECV || e.kind == Kind::IRECV;
    auto [it, fresh] = known.try_emplace({e.kind, e.comm, p2p ? e.tag : NO_RANK}, 0);
    if (fresh) {
      std::string where(kind_name(e.kind));
      if (p2p) where += " tag " + std::to_string(e.tag);
      std::vector<Frame> frames{Frame{where + " comm " + std::to_string(e.comm), 0}};
      it->second = site_hash(frames);
      t.sites.try_emplace(it->second, CallSite{it->second, std::move(frames)});
    }
    e.site = last = it->second;
  }
}

RankTrace read_ti_rank(const std::string& path, int rank, int P, double& flops) {
  std::ifstream in(path);
  if (!in) throw TraceError(path, TraceError::NO_OFFSET, "rank " + std::to_string(rank) + " of " + std::to_string(P) + ": trace file missing or unreadable");
  RankTrace t;
  t.file = path;
  t.rank = rank;
  t.world_size = P;
  t.status = Status::INCOMPLETE;
  std::deque<Pending> pending;
  std::uint32_t next_request = 1;
  std::string text;
  long number = 0;
  double gap_flops = 0;  // `compute` actions since the last record: the next record's compute gap, in flops
  auto push = [&](Kind kind, std::int32_t peer = NO_RANK, std::int32_t tag = NO_RANK, std::int64_t bytes = 0,
                  std::int32_t root = NO_RANK) {
    Event e;
    e.cpu_gap = gap_flops;
    gap_flops = 0;
    e.kind = kind;
    e.peer = peer;
    e.tag = tag;
    e.bytes = bytes;
    e.root = root;
    t.events.push_back(e);
    return t.events.size() - 1;
  };
  auto complete = [&](const Pending& p) {
    const Event req = t.events[p.event];
    Event c;
    c.cpu_gap = 0;  // written right after its wait's record, which took the compute before it
    c.kind = Kind::COMPLETE;
    c.peer = req.peer;
    c.tag = req.tag;
    c.bytes = req.bytes;
    c.root = req.kind == Kind::IRECV ? 1 : 0;
    c.request = p.request;
    t.events.push_back(c);
  };
  while (std::getline(in, text)) {
    ++number;
    Line l{path, number, {}};
    std::istringstream words(text);
    for (std::string w; words >> w;) l.tok.push_back(w);
    if (l.tok.size() < 2) l.fail(l.tok.empty() ? "empty line" : "no action after the rank");
    {
      const std::string& r = l.tok[0];
      int v = -1;
      auto [end, ec] = std::from_chars(r.data(), r.data() + r.size(), v);
      if (ec != std::errc{} || end != r.data() + r.size()) l.fail("rank field is not an integer: '" + r + "'");
      if (v != rank) l.fail("line of rank " + r + " in the file of rank " + std::to_string(rank));
    }
    if (t.status == Status::FINALIZED) l.fail("action '" + l.tok[1] + "' after finalize");
    const std::string& a = l.tok[1];
    if (a == "init") {
      l.expect_fields(0, "none");
      push(Kind::INIT);
    } else if (a == "finalize") {
      l.expect_fields(0, "none");
      push(Kind::FINALIZE);
      t.status = Status::FINALIZED;
    } else if (a == "compute") {
      l.expect_fields(1, "flops");
      const double f = l.real(0);
      if (!(f >= 0)) l.fail("negative or invalid flops");
      flops += f;
      gap_flops += f;
    } else if (a == "send" || a == "ssend" || a == "recv" || a == "isend" || a == "issend" || a == "irecv") {
      l.expect_fields(4, "peer tag count datatype");
      const Kind k = a == "send" ? Kind::SEND : a == "ssend" ? Kind::SSEND : a == "recv" ? Kind::RECV
                   : a == "isend" ? Kind::ISEND : a == "issend" ? Kind::ISSEND : Kind::IRECV;
      const bool recv = k == Kind::RECV || k == Kind::IRECV;
      const std::int32_t peer = recv ? l.source_field(0, P) : l.rank_field(0, P);
      const std::size_t i = push(k, peer, l.tag_field(1), l.product(l.count(2), l.type_size(3)));
      if (k == Kind::ISEND || k == Kind::ISSEND || k == Kind::IRECV) {
        t.events[i].request = next_request;
        pending.push_back({next_request++, i});
      }
    } else if (a == "wait") {
      l.expect_fields(3, "source destination tag");
      const std::int32_t src = l.source_field(0, P), dst = l.rank_field(1, P), tag = l.tag_field(2);
      auto it = pending.begin();
      for (; it != pending.end(); ++it) {
        const Event& r = t.events[it->event];
        const bool recv = r.kind == Kind::IRECV;
        if (r.tag == tag && (recv ? r.peer == src && rank == dst : rank == src && r.peer == dst)) break;
      }
      if (it == pending.end())
        l.fail("wait for no pending request (source " + std::to_string(src) + ", destination " + std::to_string(dst) +
               ", tag " + std::to_string(tag) + ")");
      const Pending p = *it;
      pending.erase(it);
      push(Kind::WAIT, NO_RANK, NO_RANK, 0, 1);
      complete(p);
    } else if (a == "waitall") {
      l.expect_fields(1, "count");
      const auto n = static_cast<std::size_t>(std::min<std::int64_t>(l.count(0), static_cast<std::int64_t>(pending.size())));
      push(Kind::WAITALL, NO_RANK, NO_RANK, 0, static_cast<std::int32_t>(n));
      for (std::size_t j = 0; j < n; ++j) {
        complete(pending.front());
        pending.pop_front();
      }
    } else if (a == "barrier") {
      l.expect_fields(0, "none");
      push(Kind::BARRIER);
    } else if (a == "bcast") {
      l.expect_fields(3, "count root datatype");
      const std::int64_t b = l.product(l.count(0), l.type_size(2));
      push(Kind::BCAST, NO_RANK, NO_RANK, b, l.rank_field(1, P));
    } else if (a == "reduce") {
      l.expect_fields(4, "count op-flops root datatype");
      l.real(1);
      const std::int64_t b = l.product(l.count(0), l.type_size(3));
      push(Kind::REDUCE, NO_RANK, NO_RANK, b, l.rank_field(2, P));
    } else if (a == "allreduce") {
      l.expect_fields(3, "count op-flops datatype");
      l.real(1);
      push(Kind::ALLREDUCE, NO_RANK, NO_RANK, l.product(l.count(0), l.type_size(2)));
    } else if (a == "gather" || a == "scatter") {
      l.expect_fields(5, "sendcount recvcount root sendtype recvtype");
      const std::int64_t send = l.product(l.count(0), l.type_size(3)), recv = l.product(l.count(1), l.type_size(4));
      const bool g = a == "gather";
      push(g ? Kind::GATHER : Kind::SCATTER, NO_RANK, NO_RANK, g ? send : recv, l.rank_field(2, P));
    } else if (a == "allgather" || a == "alltoall") {
      l.expect_fields(4, "sendcount recvcount sendtype recvtype");
      l.count(1);
      l.type_size(3);
      const std::int64_t send = l.product(l.count(0), l.type_size(2));
      push(a == "allgather" ? Kind::ALLGATHER : Kind::ALLTOALL, NO_RANK, NO_RANK, a == "allgather" ? send : l.product(send, P));
    } else if (a == "gatherv" || a == "allgatherv") {
      const bool g = a == "gatherv";
      const std::size_t n = static_cast<std::size_t>(P);
      l.expect_fields(n + (g ? 4 : 3), g ? "sendcount P recvcounts root sendtype recvtype"
                                         : "sendcount P recvcounts sendtype recvtype");
      for (std::size_t j = 0; j < n; ++j) l.count(1 + j);
      const std::int32_t root = g ? l.rank_field(n + 1, P) : NO_RANK;
      const std::size_t types = n + (g ? 2 : 1);
      l.type_size(types + 1);
      push(g ? Kind::GATHERV : Kind::ALLGATHERV, NO_RANK, NO_RANK, l.product(l.count(0), l.type_size(types)), root);
    } else if (a == "scatterv") {
      const std::size_t n = static_cast<std::size_t>(P);
      l.expect_fields(n + 4, "P sendcounts recvcount root sendtype recvtype");
      std::int64_t sum = 0;
      for (std::size_t j = 0; j < n; ++j) sum = l.sum(sum, l.count(j));
      const std::int32_t root = l.rank_field(n + 1, P);
      const std::int64_t st = l.type_size(n + 2), rt = l.type_size(n + 3);
      push(Kind::SCATTERV, NO_RANK, NO_RANK, root == rank ? l.product(sum, st) : l.product(l.count(n), rt), root);
    } else if (a == "alltoallv") {
      const std::size_t n = static_cast<std::size_t>(P);
      l.expect_fields(2 * n + 4, "sendtotal P sendcounts recvtotal P recvcounts sendtype recvtype");
      std::int64_t sum = 0;
      for (std::size_t j = 0; j < n; ++j) sum = l.sum(sum, l.count(1 + j));
      for (std::size_t j = 0; j < n + 1; ++j) l.count(n + 1 + j);
      if (sum != l.count(0)) l.fail("send total " + l.tok[2] + " is not the sum of the sendcounts, " + std::to_string(sum));
      l.type_size(2 * n + 3);
      push(Kind::ALLTOALLV, NO_RANK, NO_RANK, l.product(sum, l.type_size(2 * n + 2)));
    } else if (a == "reducescatter") {
      const std::size_t n = static_cast<std::size_t>(P);
      l.expect_fields(n + 2, "P recvcounts op-flops datatype");
      std::int64_t sum = 0;
      for (std::size_t j = 0; j < n; ++j) sum = l.sum(sum, l.count(j));
      l.real(n);
      push(Kind::REDUCE_SCATTER, NO_RANK, NO_RANK, l.product(sum, l.type_size(n + 1)));
    } else {
      l.fail("unknown action '" + a + "'");
    }
  }
  if (in.bad()) throw TraceError(path, TraceError::NO_OFFSET, "read error after line " + std::to_string(number));
  assign_call_points(t);
  return t;
}

}  // namespace

int ti_datatype_size(int id) {
  // SMPI 3.32 src/smpi/mpi/smpi_datatype.cpp: CREATE_MPI_DATATYPE(name, id, type) on x86-64
  static constexpr int sizes[] = {
      8, 4, 1, 2, 8, 4, 1, 8, 1, 1,     // 0 DOUBLE, INT, CHAR, SHORT, LONG, FLOAT, BYTE, LONG_LONG, SIGNED_CHAR, UNSIGNED_CHAR
      2, 4, 8, 8, 16, 4, 1, 1, 2, 4,    // 10 UNSIGNED_SHORT, UNSIGNED, UNSIGNED_LONG, ULL, LONG_DOUBLE, WCHAR, C_BOOL, INT8..INT32
      8, 1, 2, 4, 8, 8, 16, 32, 8, 8,   // 20 INT64, UINT8..UINT64, C_FLOAT/DOUBLE/LONG_DOUBLE_COMPLEX, AINT, OFFSET
      8, 16, 16, 8, 8, 8, 16, 16, 4, 4, // 30 FLOAT_INT, LONG_INT, DOUBLE_INT, SHORT_INT, 2INT, 2FLOAT, 2DOUBLE, 2LONG, REAL, REAL4
      8, 16, 8, 16, 16, 4, 2, 4, 8};    // 40 REAL8, REAL16, COMPLEX8, COMPLEX16, COMPLEX32 (SMPI: 16), INTEGER1 (int), 2, 4, 8
  if (id >= 0 && id < static_cast<int>(std::size(sizes))) return sizes[id];
  if (id == 57) return 1;  // PACKED
  if (id == 59) return 8;  // COUNT
  return -1;
}

Run read_ti_run(const std::string& index, std::vector<double>* compute_flops) {
  std::ifstream in(index);
  if (!in) throw TraceError(index, TraceError::NO_OFFSET, "cannot open the index file");
  std::vector<std::string> files;
  std::string text;
  long number = 0;
  const fs::path base = fs::path(index).parent_path();
  while (std::getline(in, text)) {
    ++number;
    const auto b = text.find_first_not_of(" \t\r"), e = text.find_last_not_of(" \t\r");
    if (b == std::string::npos)
      throw TraceError(index, TraceError::NO_OFFSET, "line " + std::to_string(number) + ": empty line");
    const fs::path p = text.substr(b, e - b + 1);
    files.push_back((p.is_absolute() ? p : base / p).string());
  }
  if (files.empty()) throw TraceError(index, TraceError::NO_OFFSET, "no rank files listed");
  Run run;
  run.dir = index;
  run.P = static_cast<int>(files.size());
  std::vector<double> flops(files.size(), 0.0);
  for (std::size_t r = 0; r < files.size(); ++r) {
    run.ranks.push_back(read_ti_rank(files[r], static_cast<int>(r), run.P, flops[r]));
    if (run.ranks.back().status != Status::FINALIZED)
      run.problems.push_back(files[r] + ": rank " + std::to_string(r) + ": incomplete: no finalize (" +
                             std::to_string(run.ranks.back().events.size()) + " events)");
  }
  run.compute_flops = std::any_of(flops.begin(), flops.end(), [](double f) { return f > 0; });
  if (compute_flops) *compute_flops = std::move(flops);
  return run;
}

}  // namespace mksim::trace
