// Reader of SimGrid 3.32 time-independent traces (README.md, "SimGrid time-independent traces"): one text
// file per rank, one action per line ("<rank> <action> <fields>"), listed by an index file.
#include "skeletons/trace/ti_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
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

// A request started by an isend/irecv (event: its index), or a non-blocking collective (event: none), that no
// wait has completed yet.
struct Pending {
  std::uint32_t request = 0;
  std::size_t event = 0;
  bool collective = false;
  std::string key;  // "src dst tag" as waits and tests name it (point-to-point), COLLECTIVE
};

const std::string COLLECTIVE = "collective";

// What a rank file says that cannot be represented exactly, by kind: counts and the first line, for
// Run::warnings (the reader says what it approximated instead of dropping it).
struct Losses {
  struct Loss {
    long count = 0;
    long first_line = 0;
    std::string what;
  };
  std::map<std::string, Loss> by_kind;
  void add(const std::string& kind, long line, const std::string& what) {
    Loss& l = by_kind[kind];
    if (l.count++ == 0) {
      l.first_line = line;
      l.what = what;
    }
  }
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

// SMPI 3.32's names of the blocking collectives, as their non-blocking forms are named without the "i".
bool is_ti_collective(const std::string& a) {
  static const char* names[] = {"barrier", "bcast",     "reduce",     "allreduce",  "gather",        "scatter", "allgather",
                                "alltoall", "gatherv",  "scatterv",   "allgatherv", "alltoallv",     "reducescatter",
                                "scan",     "exscan"};
  for (const char* n : names)
    if (a == n) return true;
  return false;
}

RankTrace read_ti_rank(const std::string& path, int rank, int P, double& flops, Losses& losses) {
  std::ifstream in(path);
  if (!in) throw TraceError(path, TraceError::NO_OFFSET, "rank " + std::to_string(rank) + " of " + std::to_string(P) + ": trace file missing or unreadable");
  RankTrace t;
  t.file = path;
  t.rank = rank;
  t.world_size = P;
  t.status = Status::INCOMPLETE;
  // the whole file first: tests are resolved by looking ahead (TI does not say whether they completed)
  std::vector<Line> lines;
  {
    std::string text;
    long number = 0;
    while (std::getline(in, text)) {
      ++number;
      Line l{path, number, {}};
      std::istringstream words(text);
      for (std::string w; words >> w;) l.tok.push_back(w);
      if (l.tok.size() < 2) l.fail(l.tok.empty() ? "empty line" : "no action after the rank");
      const std::string& r = l.tok[0];
      int v = -1;
      auto [end, ec] = std::from_chars(r.data(), r.data() + r.size(), v);
      if (ec != std::errc{} || end != r.data() + r.size()) l.fail("rank field is not an integer: '" + r + "'");
      if (v != rank) l.fail("line of rank " + r + " in the file of rank " + std::to_string(rank));
      lines.push_back(std::move(l));
    }
    if (in.bad()) throw TraceError(path, TraceError::NO_OFFSET, "read error after line " + std::to_string(number));
  }
  std::deque<Pending> pending;
  std::uint32_t next_request = 1;
  double gap_flops = 0, gap_sleep = -1;  // computation and sleeps since the last event
  auto push = [&](Kind kind, std::int32_t peer = NO_RANK, std::int32_t tag = NO_RANK, std::int64_t bytes = 0,
                  std::int32_t root = NO_RANK) {
    Event e;
    e.kind = kind;
    e.peer = peer;
    e.tag = tag;
    e.bytes = bytes;
    e.root = root;
    e.gap_flops = gap_flops;
    e.cpu_gap = gap_sleep;  // the seconds of `sleep` actions since the last event (-1: none)
    gap_flops = 0;
    gap_sleep = -1;
    t.events.push_back(e);
    return t.events.size() - 1;
  };
  auto complete = [&](const Pending& p) {
    if (p.collective) return false;
    const Event req = t.events[p.event];
    Event c;
    c.kind = Kind::COMPLETE;
    c.peer = req.peer;
    c.tag = req.tag;
    c.bytes = req.bytes;
    c.root = req.kind == Kind::IRECV ? 1 : 0;
    c.request = p.request;
    t.events.push_back(c);
    return true;
  };
  auto key_of = [&](std::int32_t src, std::int32_t dst, std::int32_t tag) {
    return std::to_string(src) + " " + std::to_string(dst) + " " + std::to_string(tag);
  };
  // Which request a count-only completion (waitall n, waitAny, test*) took, TI does not say; the requests it
  // cannot have taken are those a later wait or test names. By key ("src dst tag", COLLECTIVE for non-blocking
  // collectives, whose waits have a negative tag), the lines that post (P), wait (W) or test (T) a request.
  struct KeyLine {
    std::size_t line;
    char what;
  };
  std::map<std::string, std::vector<KeyLine>> key_lines;
  {
    const auto canonical = [](const std::string& s) {  // "007" and "7" name the same rank or tag
      std::int64_t v = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      return ec == std::errc{} && end == s.data() + s.size() ? std::to_string(v) : s;
    };
    const std::string me = std::to_string(rank);
    for (std::size_t j = 0; j < lines.size(); ++j) {
      const Line& l = lines[j];
      const std::string& a = l.tok[1];
      if ((a == "wait" || a == "test") && l.fields() == 3) {
        const std::string tag = canonical(l.tok[4]);
        if (a == "wait" && !tag.empty() && tag[0] == '-') key_lines[COLLECTIVE].push_back({j, 'W'});
        else key_lines[canonical(l.tok[2]) + " " + canonical(l.tok[3]) + " " + tag].push_back({j, a == "wait" ? 'W' : 'T'});
      } else if ((a == "isend" || a == "irecv" || a == "ISsend" || a == "issend" || a == "ibsend") && l.fields() == 4) {
        const bool recv = a == "irecv";
        const std::string peer = canonical(l.tok[2]);
        key_lines[(recv ? peer : me) + " " + (recv ? me : peer) + " " + canonical(l.tok[3])].push_back({j, 'P'});
      } else if (a.size() > 1 && a[0] == 'i' && is_ti_collective(a.substr(1))) {
        key_lines[COLLECTIVE].push_back({j, 'P'});
      }
    }
  }
  // How many of the c requests pending with `key` at line i the lines after it name. A wait takes the newest
  // pending request of its key (one posted after line i before those pending at it: SMPI writes no wait for a
  // request a waitall completed, MPI_Wait of MPI_REQUEST_NULL), a test takes it when no wait or test of the key
  // follows before the key is posted again (it did not complete otherwise).
  auto named_count = [&](std::size_t i, const std::string& key, std::size_t c) -> std::size_t {
    auto k = key_lines.find(key);
    if (k == key_lines.end() || c == 0) return 0;
    const std::vector<KeyLine>& v = k->second;
    std::vector<bool> stack(c, true);  // true: pending at line i
    std::size_t named = 0;
    auto it = std::upper_bound(v.begin(), v.end(), i, [](std::size_t x, const KeyLine& kl) { return x < kl.line; });
    for (; it != v.end() && named < c; ++it) {
      if (it->what == 'P') {
        stack.push_back(false);
        continue;
      }
      if (it->what == 'T' && it + 1 != v.end() && (it + 1)->what != 'P') continue;  // the test did not complete
      if (stack.empty()) break;  // an inconsistent file: the wait fails when it is read
      named += stack.back();
      stack.pop_back();
    }
    return named;
  };
  // The pending requests, oldest first, that no later line names: of each key the oldest ones beyond those named.
  auto unnamed = [&](std::size_t i) {
    std::map<std::string, std::size_t> per_key;
    for (const Pending& p : pending) ++per_key[p.key];
    std::map<std::string, std::size_t> free;  // per key, how many of its oldest are not named later
    for (const auto& [key, c] : per_key) free[key] = c - named_count(i, key, c);
    std::vector<std::deque<Pending>::iterator> out;
    for (auto it = pending.begin(); it != pending.end(); ++it)
      if (free[it->key] > 0) {
        --free[it->key];
        out.push_back(it);
      }
    return out;
  };
  auto pending_with = [&](const std::string& key) {
    return static_cast<std::size_t>(std::count_if(pending.begin(), pending.end(), [&](const Pending& p) { return p.key == key; }));
  };
  // Removes the first k of `open` (iterators into pending) from pending and returns them, oldest first (by index:
  // erasing in the middle of a deque invalidates its iterators).
  auto take_out = [&](const std::vector<std::deque<Pending>::iterator>& open, std::size_t k) {
    std::vector<std::size_t> at;
    for (std::size_t j = 0; j < k; ++j) at.push_back(static_cast<std::size_t>(open[j] - pending.begin()));
    std::vector<Pending> out;
    for (std::size_t x : at) out.push_back(pending[x]);
    std::sort(at.rbegin(), at.rend());
    for (std::size_t x : at) pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(x));
    return out;
  };
  // The oldest pending point-to-point request that no later wait or test names (waitany), else the oldest one.
  auto oldest_unnamed = [&](std::size_t i) {
    for (auto it : unnamed(i))
      if (!it->collective) return it;
    for (auto it = pending.begin(); it != pending.end(); ++it)
      if (!it->collective) return it;
    return pending.end();
  };

  for (std::size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    if (t.status == Status::FINALIZED) l.fail("action '" + l.tok[1] + "' after finalize");
    std::string a = l.tok[1];
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
      if (!(f >= 0) || !std::isfinite(f)) l.fail("negative or invalid flops");
      flops += f;
      gap_flops += f;
    } else if (a == "sleep") {
      l.expect_fields(1, "seconds");
      const double sec = l.real(0);
      if (!(sec >= 0) || !std::isfinite(sec)) l.fail("negative or invalid seconds");
      gap_sleep = std::max(gap_sleep, 0.0) + sec;
    } else if (a == "send" || a == "ssend" || a == "Ssend" || a == "bsend" || a == "recv" || a == "isend" ||
               a == "issend" || a == "ISsend" || a == "ibsend" || a == "irecv") {
      l.expect_fields(4, "peer tag count datatype");
      const Kind k = a == "send" ? Kind::SEND : (a == "ssend" || a == "Ssend") ? Kind::SSEND : a == "bsend" ? Kind::BSEND
                   : a == "recv" ? Kind::RECV : (a == "isend" || a == "ibsend") ? Kind::ISEND
                   : (a == "issend" || a == "ISsend") ? Kind::ISSEND : Kind::IRECV;
      const bool recv = k == Kind::RECV || k == Kind::IRECV;
      const std::int32_t peer = recv ? l.source_field(0, P) : l.rank_field(0, P);
      const std::int32_t tag = l.tag_field(1);
      const std::size_t e = push(k, peer, tag, l.product(l.count(2), l.type_size(3)));
      if (k == Kind::ISEND || k == Kind::ISSEND || k == Kind::IRECV) {
        t.events[e].request = next_request;
        const std::int32_t src = recv ? (peer == ANY ? static_cast<std::int32_t>(SMPI_ANY_SOURCE) : peer) : rank;
        pending.push_back({next_request++, e, false, key_of(src, recv ? rank : peer, tag)});
      }
    } else if (a == "sendRecv" || a == "sendrecv") {
      // SMPI 3.32: sendcount dst recvcount src sendtype recvtype; no tags (read as 0)
      l.expect_fields(6, "sendcount destination recvcount source sendtype recvtype");
      const std::int32_t dst = l.rank_field(1, P), src = l.source_field(3, P);
      push(Kind::SENDRECV, dst, 0, l.product(l.count(0), l.type_size(4)));
      Event c;
      c.kind = Kind::COMPLETE;
      c.peer = src;
      c.tag = 0;
      c.bytes = l.product(l.count(2), l.type_size(5));
      c.root = 1;
      if (src == ANY) c.flags = MKTRACE_POSTED_ANY_SOURCE;
      t.events.push_back(c);
      losses.add("sendRecv", l.number, "SMPI writes MPI_Sendrecv without its tags: read with tag 0 on both halves");
    } else if (a == "wait") {
      l.expect_fields(3, "source destination tag");
      const std::int64_t tag64 = l.integer(2);
      if (tag64 < 0) {  // a non-blocking collective's request (SMPI's internal tags are negative)
        auto it = std::find_if(pending.begin(), pending.end(), [](const Pending& p) { return p.collective; });
        if (it == pending.end()) l.fail("wait with tag " + std::to_string(tag64) + " (a non-blocking collective's) but none is pending");
        pending.erase(it);
        continue;  // the collective was read as blocking where it started
      }
      const std::int32_t src = l.source_field(0, P), dst = l.rank_field(1, P), tag = l.tag_field(2);
      const std::string key = key_of(src == ANY ? static_cast<std::int32_t>(SMPI_ANY_SOURCE) : src, dst, tag);
      auto it = std::find_if(pending.begin(), pending.end(), [&](const Pending& p) { return !p.collective && p.key == key; });
      if (it == pending.end())
        l.fail("wait for no pending request (source " + std::to_string(src) + ", destination " + std::to_string(dst) +
               ", tag " + std::to_string(tag) + ")");
      const Pending p = *it;
      pending.erase(it);
      push(Kind::WAIT, NO_RANK, NO_RANK, 0, 1);
      complete(p);
    } else if (a == "test") {
      l.expect_fields(3, "source destination tag");
      const std::int32_t src = l.source_field(0, P), dst = l.rank_field(1, P), tag = l.tag_field(2);
      const std::string key = key_of(src == ANY ? static_cast<std::int32_t>(SMPI_ANY_SOURCE) : src, dst, tag);
      auto it = std::find_if(pending.begin(), pending.end(), [&](const Pending& p) { return !p.collective && p.key == key; });
      if (it == pending.end())
        l.fail("test of no pending request (source " + std::to_string(src) + ", destination " + std::to_string(dst) +
               ", tag " + std::to_string(tag) + ")");
      // TI does not say whether it completed: it did unless later lines name every request of its key
      const std::size_t c = pending_with(key);
      const bool done = named_count(i, key, c) < c;
      push(Kind::TEST, NO_RANK, NO_RANK, 0, done ? 1 : 0);
      if (done) {
        const Pending p = *it;
        pending.erase(it);
        complete(p);
      }
    } else if (a == "waitall") {
      // SMPI writes the count given to MPI_Waitall (null requests included), not which requests: it completed
      // pending ones that no later wait names (a program waits for its sends with MPI_Waitall and for its
      // receives one by one), the oldest first when there are more than the count
      l.expect_fields(1, "count");
      const auto n = static_cast<std::size_t>(l.count(0));
      const auto open = unnamed(i);
      if (open.size() > n)
        losses.add("waitall", l.number, "TI does not say which requests a waitall completed: more requests are pending "
                                        "than its count that no later wait names; it took the oldest ones");
      const std::size_t take = std::min(n, open.size());
      const std::size_t at = push(Kind::WAITALL);
      const std::vector<Pending> done = take_out(open, take);
      std::int32_t completed = 0;
      for (const Pending& p : done) completed += complete(p);
      t.events[at].root = completed;
    } else if (a == "waitAny" || a == "waitany") {
      l.expect_fields(1, "count");
      l.count(0);
      auto it = oldest_unnamed(i);
      push(Kind::WAITANY, NO_RANK, NO_RANK, 0, it == pending.end() ? 0 : 1);
      if (it != pending.end()) {
        const Pending p = *it;
        pending.erase(it);
        complete(p);
      }
      losses.add("waitAny", l.number, "TI does not say which request a waitAny completed: the oldest pending one no later wait names");
    } else if (a == "testall" || a == "testany" || a == "testsome") {
      l.expect_fields(0, "none");
      const Kind k = a == "testall" ? Kind::TESTALL : a == "testany" ? Kind::TESTANY : Kind::TESTSOME;
      // Polling: a run of consecutive tests of one kind completes every pending request no later wait or test
      // names (the program polls until they are done), one per line for testany (the last lines of the run, the
      // last one taking what is left), all at the run's last line for testall and testsome.
      std::size_t left_in_run = 0;  // lines of the run after this one
      while (i + 1 + left_in_run < lines.size() && lines[i + 1 + left_in_run].tok[1] == a) ++left_in_run;
      std::vector<std::deque<Pending>::iterator> open;
      for (auto it : unnamed(i))
        if (!it->collective) open.push_back(it);
      std::size_t take = 0;
      if (left_in_run == 0) take = open.size();
      else if (k == Kind::TESTANY && open.size() > left_in_run) take = 1;
      const std::size_t at = push(k);
      const std::vector<Pending> done = take_out(open, take);
      for (const Pending& p : done) complete(p);
      t.events[at].root = static_cast<std::int32_t>(done.size());
      losses.add(a, l.number, "TI does not say which requests a " + a + " completed: a run of them completes every "
                                  "pending request no later wait names (" +
                                  (k == Kind::TESTANY ? std::string("one per line, at the end of the run") : std::string("at its last line")) + ")");
    } else if (a == "Start" || a == "Startall") {
      l.fail("'" + a + "': persistent requests (MPI_Start, MPI_Startall) are not supported (SMPI writes no source for a "
             "persistent receive, nothing at all for Startall); the binary tracer does not record them either");
    } else {
      bool nonblocking = false;
      if (a.size() > 1 && a[0] == 'i' && is_ti_collective(a.substr(1))) {  // ibcast ... read as bcast where it starts
        losses.add(a, l.number, "a non-blocking collective is read as its blocking form where it starts (its wait "
                                "drops): its overlap with computation is lost");
        a = a.substr(1);
        nonblocking = true;
      }
      if (is_ti_collective(a))
        losses.add("collective", l.number, "TI names no communicator: read as a collective of MPI_COMM_WORLD, every rank "
                                           "taking part (a program's row, column or other sub-communicator collectives are "
                                           "replayed as world ones; mktrace records communicators)");
      if (a == "barrier") {
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
      } else if (a == "allreduce" || a == "scan" || a == "exscan") {
        l.expect_fields(3, "count op-flops datatype");
        l.real(1);
        push(a == "allreduce" ? Kind::ALLREDUCE : a == "scan" ? Kind::SCAN : Kind::EXSCAN, NO_RANK, NO_RANK,
             l.product(l.count(0), l.type_size(2)));
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
        if (l.fields() == 3 && n != 1) {  // SMPI 3.32's MPI_Reduce_scatter_block: "0 0 0", no counts
          for (std::size_t j = 0; j < 3; ++j) l.count(j);
          push(Kind::REDUCE_SCATTER);
          losses.add("reducescatter", l.number, "3 fields instead of P counts, op-flops, datatype (SMPI 3.32 writes "
                                                "MPI_Reduce_scatter_block so): read with 0 bytes, its size is lost");
        } else {
          l.expect_fields(n + 2, "P recvcounts op-flops datatype");
          std::int64_t sum = 0;
          for (std::size_t j = 0; j < n; ++j) sum = l.sum(sum, l.count(j));
          l.real(n);
          push(Kind::REDUCE_SCATTER, NO_RANK, NO_RANK, l.product(sum, l.type_size(n + 1)));
        }
      } else {
        l.fail("unknown action '" + l.tok[1] + "'");
      }
      if (nonblocking) pending.push_back({0, t.events.size() - 1, true, COLLECTIVE});
    }
  }
  if (gap_flops > 0 || gap_sleep >= 0)  // computation after the last action (a file that ends without finalize)
    losses.add("compute", lines.empty() ? 0 : lines.back().number, "computation after the last MPI call of an incomplete rank file is left out");
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
  std::map<std::string, std::pair<long, std::string>> lost;  // kind -> (count over ranks, first occurrence)
  for (std::size_t r = 0; r < files.size(); ++r) {
    Losses losses;
    run.ranks.push_back(read_ti_rank(files[r], static_cast<int>(r), run.P, flops[r], losses));
    if (run.ranks.back().status != Status::FINALIZED)
      run.problems.push_back(files[r] + ": rank " + std::to_string(r) + ": incomplete: no finalize (" +
                             std::to_string(run.ranks.back().events.size()) + " events)");
    for (const auto& [kind, l] : losses.by_kind) {
      auto& [count, first] = lost[kind];
      if (count == 0) first = files[r] + ": line " + std::to_string(l.first_line) + ": '" + kind + "': " + l.what;
      count += l.count;
    }
  }
  for (const auto& [kind, l] : lost)
    run.warnings.push_back(l.second + " (" + std::to_string(l.first) + " such line(s) in the run)");
  if (compute_flops) *compute_flops = std::move(flops);
  return run;
}

}  // namespace mksim::trace
