// Reader of formats v2, v3 and v4 (README.md): header, fixed-size records (v4: with ARGS records after
// communicator and topology calls), footer (count, FNV-1a checksum, status, call-site table, annotation names);
// run.json with nlohmann_json. Bytes are decoded explicitly as little-endian.
#include "skeletons/trace/reader.hpp"

#include "skeletons/trace/source_sites.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

namespace mksim::trace {

std::string_view kind_name(Kind kind) {
  switch (kind) {
#define MKSIM_TRACE_KIND(name, code, text) \
  case Kind::name:                         \
    return text;
    MKTRACE_KINDS(MKSIM_TRACE_KIND)
#undef MKSIM_TRACE_KIND
  }
  return "?";
}

bool is_kind(std::uint16_t code) {
  switch (code) {
#define MKSIM_TRACE_KIND(name, code, text) case code:
    MKTRACE_KINDS(MKSIM_TRACE_KIND)
#undef MKSIM_TRACE_KIND
    return true;
    default:
      return false;
  }
}

bool is_send(Kind kind) {
  switch (kind) {
    case Kind::SEND: case Kind::SSEND: case Kind::BSEND: case Kind::RSEND:
    case Kind::ISEND: case Kind::ISSEND: case Kind::SENDRECV:
      return true;
    default:
      return false;
  }
}

bool is_collective(Kind kind) {
  auto c = static_cast<std::uint16_t>(kind);
  return c >= static_cast<std::uint16_t>(Kind::BARRIER) && c <= static_cast<std::uint16_t>(Kind::EXSCAN);
}

bool creates_comm(Kind kind) {
  switch (kind) {
    case Kind::COMM_DUP: case Kind::COMM_SPLIT: case Kind::CART_CREATE: case Kind::CART_SUB: case Kind::COMM_CREATE:
    case Kind::COMM_CREATE_GROUP: case Kind::GRAPH_CREATE: case Kind::DIST_GRAPH_CREATE_ADJACENT:
    case Kind::DIST_GRAPH_CREATE:
      return true;
    default:
      return false;
  }
}

bool takes_args(Kind kind) { return creates_comm(kind) || kind == Kind::DIMS_CREATE || kind == Kind::CART_SHIFT; }

bool is_annotation(Kind kind) {
  auto c = static_cast<std::uint16_t>(kind);
  return c >= static_cast<std::uint16_t>(Kind::REGION_BEGIN) && c <= static_cast<std::uint16_t>(Kind::LOOP_END);
}

std::uint64_t site_hash(const std::vector<Frame>& frames) {
  if (frames.empty()) return 0;
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a 64
  const auto byte = [&](unsigned char b) { h = (h ^ b) * 1099511628211ull; };
  for (const Frame& f : frames) {
    for (char c : f.module) byte(static_cast<unsigned char>(c));
    byte(0);
    for (int i = 0; i < 8; ++i) byte(static_cast<unsigned char>(f.offset >> (8 * i)));
  }
  return h == 0 ? 1 : h;
}

std::string_view status_name(Status status) {
  switch (status) {
    case Status::FINALIZED: return "finalized";
    case Status::ABORTED: return "aborted";
    case Status::SIGNALED: return "signal";
    case Status::INCOMPLETE: return "incomplete";
  }
  return "?";
}

namespace {

static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big);

constexpr std::uint64_t FNV_OFFSET = 14695981039346656037ull;
constexpr std::uint64_t FNV_PRIME = 1099511628211ull;
constexpr std::uint32_t MAX_MODULE_NAME = 65536;

// A bounds-checked little-endian cursor over a file's bytes; every failure names file and offset.
class Cursor {
 public:
  Cursor(const std::string& file, const std::vector<unsigned char>& bytes) : file_(file), bytes_(bytes) {}
  std::uint64_t offset() const { return pos_; }
  std::uint64_t left() const { return bytes_.size() - pos_; }
  void need(std::uint64_t n, const char* what) const {
    if (left() < n)
      throw TraceError(file_, pos_, std::string("truncated ") + what + ": needs " + std::to_string(n) +
                                        " bytes, the file ends " + std::to_string(left()) + " bytes later");
  }
  const unsigned char* take(std::uint64_t n, const char* what) {
    need(n, what);
    const unsigned char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  std::uint64_t u(unsigned n, const char* what) {
    const unsigned char* p = take(n, what);
    std::uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i) v |= std::uint64_t{p[i]} << (8 * i);
    return v;
  }
  std::uint32_t u32(const char* what) { return static_cast<std::uint32_t>(u(4, what)); }
  std::uint64_t u64(const char* what) { return u(8, what); }
  double f64(const char* what) { return std::bit_cast<double>(u64(what)); }
  bool at(const char* magic) const {
    return left() >= 8 && std::memcmp(bytes_.data() + pos_, magic, 8) == 0;
  }
  [[noreturn]] void fail(std::uint64_t at, const std::string& message) const { throw TraceError(file_, at, message); }

 private:
  const std::string& file_;
  const std::vector<unsigned char>& bytes_;
  std::uint64_t pos_ = 0;
};

std::vector<unsigned char> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, TraceError::NO_OFFSET, "cannot open: " + std::string(std::strerror(errno)));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// FNV-1a over 64-bit little-endian words (n is a multiple of 8: whole records)
std::uint64_t fnv1a_words(const unsigned char* p, std::size_t n) {
  std::uint64_t h = FNV_OFFSET;
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    std::uint64_t w = 0;
    for (unsigned b = 0; b < 8; ++b) w |= std::uint64_t{p[i + b]} << (8 * b);
    h = (h ^ w) * FNV_PRIME;
  }
  return h;
}

std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

void read_footer(Cursor& c, RankTrace& t, std::uint64_t records_begin, const std::vector<unsigned char>& bytes,
                 std::uint64_t records) {
  const std::uint64_t at = c.offset();
  c.take(8, "footer");
  const std::uint64_t count = c.u64("footer record count");
  const std::uint64_t sum = c.u64("footer checksum");
  const std::uint32_t status = c.u32("footer status");
  t.status_detail = static_cast<std::int32_t>(c.u32("footer status detail"));
  if (count != records)
    c.fail(at, "footer says " + std::to_string(count) + " records, the file holds " + std::to_string(records) + " (corrupted)");
  const std::uint64_t actual = fnv1a_words(bytes.data() + records_begin, at - records_begin);
  if (actual != sum)
    c.fail(at, "checksum mismatch: the records hash to " + hex(actual) + ", the footer says " + hex(sum) +
                   " (corrupted)");
  switch (status) {
    case MKTRACE_STATUS_FINALIZED: t.status = Status::FINALIZED; break;
    case MKTRACE_STATUS_ABORTED: t.status = Status::ABORTED; break;
    case MKTRACE_STATUS_SIGNAL: t.status = Status::SIGNALED; break;
    default: c.fail(at + 24, "unknown completion status " + std::to_string(status));
  }
  // counts are checked against the bytes left before anything is allocated for them
  const std::uint64_t mat0 = c.offset();
  const std::uint32_t nmodules = c.u32("module count");
  if (nmodules > c.left() / 4) c.fail(mat0, std::to_string(nmodules) + " modules cannot fit in the file (corrupted)");
  std::vector<std::string> modules(nmodules);
  for (auto& m : modules) {
    const std::uint64_t mat = c.offset();
    const std::uint32_t len = c.u32("module name length");
    if (len > MAX_MODULE_NAME) c.fail(mat, "module name of " + std::to_string(len) + " bytes (corrupted)");
    const unsigned char* p = c.take(len, "module name");
    m.assign(reinterpret_cast<const char*>(p), len);
  }
  const std::uint64_t sat0 = c.offset();
  const std::uint32_t nsites = c.u32("call-site count");
  if (nsites > c.left() / 12) c.fail(sat0, std::to_string(nsites) + " call sites cannot fit in the file (corrupted)");
  for (std::uint32_t i = 0; i < nsites; ++i) {
    const std::uint64_t sat = c.offset();
    CallSite site;
    site.hash = c.u64("call-site hash");
    const std::uint32_t depth = c.u32("call-site depth");
    if (depth > MKTRACE_MAX_FRAMES) c.fail(sat, "call site with " + std::to_string(depth) + " frames (max 4)");
    for (std::uint32_t f = 0; f < depth; ++f) {
      const std::uint64_t fat = c.offset();
      const std::uint32_t mod = c.u32("frame module");
      Frame frame;
      frame.offset = c.u64("frame offset");
      if (mod == UINT32_MAX)
        frame.module = "?";
      else if (mod < modules.size())
        frame.module = modules[mod];
      else
        c.fail(fat, "frame module index " + std::to_string(mod) + " out of range (" +
                        std::to_string(modules.size()) + " modules)");
      site.frames.push_back(std::move(frame));
    }
    t.sites[site.hash] = std::move(site);
  }
  const std::uint64_t nat0 = c.offset();
  const std::uint32_t nnames = c.u32("annotation name count");
  if (nnames > c.left() / 4) c.fail(nat0, std::to_string(nnames) + " annotation names cannot fit in the file (corrupted)");
  t.names.resize(nnames);
  for (auto& name : t.names) {
    const std::uint64_t nat = c.offset();
    const std::uint32_t len = c.u32("annotation name length");
    if (len > MKTRACE_MAX_NAME_BYTES) c.fail(nat, "annotation name of " + std::to_string(len) + " bytes (corrupted)");
    const unsigned char* p = c.take(len, "annotation name");
    name.assign(reinterpret_cast<const char*>(p), len);
  }
  if (c.left() != 0) c.fail(c.offset(), std::to_string(c.left()) + " unexpected bytes after the footer");
}

// The kinds format v4 added (a file of an older version cannot hold them).
bool new_in_v4(std::uint16_t code) {
  switch (static_cast<Kind>(code)) {
    case Kind::TESTSOME: case Kind::TESTANY: case Kind::SCAN: case Kind::EXSCAN: case Kind::DIMS_CREATE:
    case Kind::CART_SHIFT: case Kind::CART_SUB: case Kind::COMM_CREATE: case Kind::COMM_CREATE_GROUP:
    case Kind::GRAPH_CREATE: case Kind::DIST_GRAPH_CREATE_ADJACENT: case Kind::DIST_GRAPH_CREATE: case Kind::ARGS:
      return true;
    default:
      return false;
  }
}

// The int32 arguments of a call, decoded by its kind's layout (README.md, "Arguments"); "" or what is wrong.
std::string decode_args(Kind k, const std::vector<std::int32_t>& v, CommArgs& a) {
  const std::size_t n = v.size();
  auto count = [&](std::size_t at, std::int32_t& out) {  // a count field: non-negative
    if (at >= n || v[at] < 0) return false;
    out = v[at];
    return true;
  };
  auto take = [&](std::size_t from, std::size_t len) {
    return std::vector<std::int32_t>(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(from + len));
  };
  auto flags = [&](std::size_t from, std::size_t len) {
    std::vector<bool> out;
    for (std::size_t i = 0; i < len; ++i) out.push_back(v[from + i] != 0);
    return out;
  };
  auto want = [&](std::size_t expected) {
    return n == expected ? std::string()
                         : std::to_string(n) + " argument values, its layout needs " + std::to_string(expected);
  };
  std::int32_t m = 0, m2 = 0;
  switch (k) {
    case Kind::COMM_DUP:
      if (n != 2) return want(2);
      a.new_rank = v[0], a.new_size = v[1];
      return "";
    case Kind::COMM_SPLIT:
      if (n != 4) return want(4);
      a.color = v[0], a.key = v[1], a.new_rank = v[2], a.new_size = v[3];
      return "";
    case Kind::CART_CREATE:
      if (!count(0, m) || n != 4 + 2 * static_cast<std::size_t>(m)) return n < 1 ? want(4) : want(4 + 2 * static_cast<std::size_t>(std::max(m, 0)));
      a.reorder = v[1] != 0, a.new_rank = v[2], a.new_size = v[3];
      a.dims = take(4, static_cast<std::size_t>(m));
      a.periods = flags(4 + static_cast<std::size_t>(m), static_cast<std::size_t>(m));
      return "";
    case Kind::CART_SUB:
      if (!count(0, m) || n != 3 + static_cast<std::size_t>(m)) return want(3 + static_cast<std::size_t>(std::max(m, 0)));
      a.new_rank = v[1], a.new_size = v[2];
      a.remain = flags(3, static_cast<std::size_t>(m));
      return "";
    case Kind::DIMS_CREATE:
      if (n < 2 || !count(1, m) || n != 2 + 2 * static_cast<std::size_t>(m)) return want(2 + 2 * static_cast<std::size_t>(std::max(m, 0)));
      a.nnodes = v[0];
      a.dims_in = take(2, static_cast<std::size_t>(m));
      a.dims = take(2 + static_cast<std::size_t>(m), static_cast<std::size_t>(m));
      return "";
    case Kind::CART_SHIFT:
      if (n != 4) return want(4);
      a.direction = v[0], a.disp = v[1], a.source = v[2], a.dest = v[3];
      return "";
    case Kind::COMM_CREATE:
    case Kind::COMM_CREATE_GROUP: {
      const std::size_t head = k == Kind::COMM_CREATE ? 3 : 4;
      if (!count(head - 1, m) || n != head + static_cast<std::size_t>(m)) return want(head + static_cast<std::size_t>(std::max(m, 0)));
      if (k == Kind::COMM_CREATE_GROUP) a.tag = v[0];
      a.new_rank = v[head - 3], a.new_size = v[head - 2];
      a.members = take(head, static_cast<std::size_t>(m));
      return "";
    }
    case Kind::GRAPH_CREATE: {
      if (!count(0, m) || n < 4 + static_cast<std::size_t>(m)) return want(4 + static_cast<std::size_t>(std::max(m, 0)));
      const std::int32_t edges = m > 0 ? v[4 + static_cast<std::size_t>(m) - 1] : 0;
      if (edges < 0 || n != 4 + static_cast<std::size_t>(m) + static_cast<std::size_t>(edges))
        return want(4 + static_cast<std::size_t>(m) + static_cast<std::size_t>(std::max(edges, 0)));
      a.nnodes = m, a.reorder = v[1] != 0, a.new_rank = v[2], a.new_size = v[3];
      a.index = take(4, static_cast<std::size_t>(m));
      a.edges = take(4 + static_cast<std::size_t>(m), static_cast<std::size_t>(edges));
      return "";
    }
    case Kind::DIST_GRAPH_CREATE_ADJACENT:
      if (!count(0, m) || !count(1, m2) || n != 5 + static_cast<std::size_t>(m) + static_cast<std::size_t>(m2))
        return want(5 + static_cast<std::size_t>(std::max(m, 0)) + static_cast<std::size_t>(std::max(m2, 0)));
      a.reorder = v[2] != 0, a.new_rank = v[3], a.new_size = v[4];
      a.sources = take(5, static_cast<std::size_t>(m));
      a.destinations = take(5 + static_cast<std::size_t>(m), static_cast<std::size_t>(m2));
      return "";
    case Kind::DIST_GRAPH_CREATE: {
      if (!count(0, m) || n < 4 + 2 * static_cast<std::size_t>(m)) return want(4 + 2 * static_cast<std::size_t>(std::max(m, 0)));
      std::size_t edges = 0;
      for (std::size_t i = 0; i < static_cast<std::size_t>(m); ++i) {
        if (v[4 + static_cast<std::size_t>(m) + i] < 0) return "a negative degree";
        edges += static_cast<std::size_t>(v[4 + static_cast<std::size_t>(m) + i]);
      }
      if (n != 4 + 2 * static_cast<std::size_t>(m) + edges) return want(4 + 2 * static_cast<std::size_t>(m) + edges);
      a.nnodes = m, a.reorder = v[1] != 0, a.new_rank = v[2], a.new_size = v[3];
      a.sources = take(4, static_cast<std::size_t>(m));
      a.degrees = take(4 + static_cast<std::size_t>(m), static_cast<std::size_t>(m));
      a.destinations = take(4 + 2 * static_cast<std::size_t>(m), edges);
      return "";
    }
    default:
      return "this kind takes no arguments";
  }
}

// Annotations (mktrace.h) nest: an end closes the innermost open region/loop of the same name, an
// iteration is of the innermost open loop. Regions still open at the end are allowed (a region around
// MPI_Finalize ends after tracing stopped). Names are checked only when the footer listed them.
// record_of[i] is the record number of event i (ARGS records are not events).
void check_annotations(const RankTrace& t, std::uint64_t records_begin, const std::vector<std::uint64_t>& record_of) {
  struct Open { Kind kind; std::int32_t name; };
  std::vector<Open> open;
  const bool named = t.status != Status::INCOMPLETE;
  auto label = [&](std::int32_t id) {
    return named && id >= 0 && static_cast<std::size_t>(id) < t.names.size() ? "'" + t.names[static_cast<std::size_t>(id)] + "'"
                                                                              : "#" + std::to_string(id);
  };
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (!is_annotation(e.kind)) continue;
    const std::uint64_t at = records_begin + record_of[i] * t.record_bytes;
    const std::string where = "record " + std::to_string(record_of[i]) + " (" + std::string(kind_name(e.kind)) + " " + label(e.tag) + "): ";
    if (named && (e.tag < 0 || static_cast<std::size_t>(e.tag) >= t.names.size()))
      throw TraceError(t.file, at, where + "name id out of range (" + std::to_string(t.names.size()) + " names)");
    const bool loop = e.kind == Kind::LOOP_BEGIN || e.kind == Kind::LOOP_ITER || e.kind == Kind::LOOP_END;
    const Kind opener = loop ? Kind::LOOP_BEGIN : Kind::REGION_BEGIN;
    if (e.kind == Kind::REGION_BEGIN || e.kind == Kind::LOOP_BEGIN) {
      open.push_back({e.kind, e.tag});
      continue;
    }
    if (open.empty() || open.back().kind != opener || open.back().name != e.tag)
      throw TraceError(t.file, at, where + "does not match the innermost open annotation (" +
                                       (open.empty() ? std::string("none")
                                                     : std::string(kind_name(open.back().kind)) + " " + label(open.back().name)) +
                                       "): annotations must nest");
    if (e.kind != Kind::LOOP_ITER) open.pop_back();
  }
}

}  // namespace

RankTrace read_rank_file(const std::string& path) {
  const std::vector<unsigned char> bytes = slurp(path);
  Cursor c(path, bytes);
  RankTrace t;
  t.file = path;
  c.need(MKTRACE_HEADER_BYTES, "header");
  if (!c.at(MKTRACE_MAGIC)) c.fail(0, "bad magic: not a mktrace file (expected \"MKTRACE1\")");
  c.take(8, "magic");
  const std::uint32_t version = c.u32("version");
  if (version < 2 || version > MKTRACE_VERSION)
    c.fail(8, "format version " + std::to_string(version) + " is not supported (this reader reads versions 2 to " +
                   std::to_string(MKTRACE_VERSION) + ")");
  // v3 added the record's last field, the CPU time of the gap before it
  const std::uint32_t expected_bytes = version == 2 ? MKTRACE_RECORD_BYTES_V2 : MKTRACE_RECORD_BYTES;
  t.record_bytes = expected_bytes;
  t.rank = static_cast<int>(c.u32("rank"));
  t.world_size = static_cast<int>(c.u32("world size"));
  t.flags = c.u32("flags");
  t.tick_s = c.f64("clock resolution");
  t.t0_s = c.f64("t0");
  const std::uint32_t record_bytes = c.u32("record size");
  c.u32("reserved");
  if (t.world_size <= 0 || t.rank < 0 || t.rank >= t.world_size)
    c.fail(12, "rank " + std::to_string(t.rank) + " of world size " + std::to_string(t.world_size) + " (corrupted)");
  if (record_bytes != expected_bytes)
    c.fail(40, "record size " + std::to_string(record_bytes) + ", version " + std::to_string(version) + " has " +
                   std::to_string(expected_bytes));

  const std::uint64_t records_begin = c.offset();
  t.events.reserve(c.left() / expected_bytes);
  std::vector<std::uint64_t> record_of;  // event -> record number (ARGS records are folded into their call)
  std::uint64_t records = 0;
  std::vector<std::int32_t> pending_args;  // the values of the ARGS records after the last call
  std::uint64_t args_call_at = 0;          // that call's offset
  // the arguments gathered after a call, decoded when the next call (or the end) comes
  // (at the end of a file without footer, arguments cut short are dropped: the call stays, without them)
  auto finish_args = [&](bool cut = false) {
    if (t.events.empty() || pending_args.empty()) return;
    Event& call = t.events.back();
    CommArgs a;
    if (std::string why = decode_args(call.kind, pending_args, a); !why.empty()) {
      if (cut) {
        pending_args.clear();
        return;
      }
      c.fail(args_call_at, "record " + std::to_string(record_of.back()) + " (" + std::string(kind_name(call.kind)) +
                               "): " + why + " (corrupted)");
    }
    t.args.push_back(std::move(a));
    call.args = static_cast<std::uint32_t>(t.args.size());
    pending_args.clear();
  };
  while (true) {
    if (c.left() == 0) {  // whole records and no footer: the rank never wrote one
      finish_args(true);
      t.status = Status::INCOMPLETE;
      check_annotations(t, records_begin, record_of);
      return t;
    }
    if (c.at(MKTRACE_FOOTER_MAGIC)) {
      finish_args();
      read_footer(c, t, records_begin, bytes, records);
      check_annotations(t, records_begin, record_of);
      return t;
    }
    const std::uint64_t at = c.offset();
    if (c.left() < expected_bytes)
      c.fail(at, "truncated record " + std::to_string(records) + ": " + std::to_string(c.left()) +
                     " of " + std::to_string(expected_bytes) + " bytes");
    const auto code = static_cast<std::uint16_t>(c.u(2, "kind"));
    if (!is_kind(code)) c.fail(at, "record " + std::to_string(records) + ": unknown kind " + std::to_string(code) + " (corrupted)");
    if (version < 4 && new_in_v4(code))
      c.fail(at, "record " + std::to_string(records) + ": kind " + std::string(kind_name(static_cast<Kind>(code))) +
                     " is not in format version " + std::to_string(version) + " (corrupted)");
    if (static_cast<Kind>(code) == Kind::ARGS) {  // arguments of the call before: 15 int32 values, flags = how many
      const auto n = static_cast<std::uint16_t>(c.u(2, "flags"));
      if (t.events.empty() || !takes_args(t.events.back().kind))
        c.fail(at, "record " + std::to_string(records) + ": arguments after " +
                       (t.events.empty() ? std::string("no call") : std::string(kind_name(t.events.back().kind)) + ", which takes none") +
                       " (corrupted)");
      if (n == 0 || n > MKTRACE_ARGS_PER_RECORD)
        c.fail(at, "record " + std::to_string(records) + ": " + std::to_string(n) + " argument values (1 to 15) (corrupted)");
      if (pending_args.size() + n > MKTRACE_MAX_ARGS)
        c.fail(at, "record " + std::to_string(records) + ": more than " + std::to_string(MKTRACE_MAX_ARGS) + " argument values after one call (corrupted)");
      const unsigned char* p = c.take(expected_bytes - 4, "arguments");
      for (std::uint16_t i = 0; i < n; ++i) {
        std::uint32_t v = 0;
        for (unsigned b = 0; b < 4; ++b) v |= std::uint32_t{p[4 * i + b]} << (8 * b);
        pending_args.push_back(static_cast<std::int32_t>(v));
      }
      ++records;
      continue;
    }
    finish_args();
    args_call_at = at;
    Event e;
    e.kind = static_cast<Kind>(code);
    e.flags = static_cast<std::uint16_t>(c.u(2, "flags"));
    if ((e.flags & ~std::uint16_t{MKTRACE_POSTED_ANY_SOURCE | MKTRACE_POSTED_ANY_TAG}) != 0)
      c.fail(at + 2, "record " + std::to_string(records) + ": unknown flags " + std::to_string(e.flags) + " (corrupted)");
    e.peer = static_cast<std::int32_t>(c.u32("peer"));
    e.t_enter = c.f64("t_enter");
    e.t_exit = c.f64("t_exit");
    e.bytes = static_cast<std::int64_t>(c.u64("bytes"));
    e.site = c.u64("site");
    e.tag = static_cast<std::int32_t>(c.u32("tag"));
    e.root = static_cast<std::int32_t>(c.u32("root"));
    e.comm = c.u32("comm");
    e.request = c.u32("request");
    if (version != 2) {
      e.cpu_gap = c.f64("cpu_gap");
      if (!(e.cpu_gap >= 0 || e.cpu_gap == -1.0) || !std::isfinite(e.cpu_gap))
        c.fail(at, "record " + std::to_string(records) + " (" + std::string(kind_name(e.kind)) +
                       "): impossible CPU time " + std::to_string(e.cpu_gap) + " (corrupted)");
    }
    if (!std::isfinite(e.t_enter) || !std::isfinite(e.t_exit) || e.t_exit < e.t_enter || e.bytes < 0)
      c.fail(at, "record " + std::to_string(records) + " (" + std::string(kind_name(e.kind)) +
                     "): impossible times or size (corrupted)");
    t.events.push_back(e);
    record_of.push_back(records++);
  }
}

Run read_run(const std::string& dir, const ReadOptions& options) {
  namespace fs = std::filesystem;
  Run run;
  run.dir = dir;
  const std::string json_path = (fs::path(dir) / "run.json").string();
  std::ifstream in(json_path);
  if (!in) throw TraceError(json_path, TraceError::NO_OFFSET, "cannot open (not a traced run directory?)");
  std::vector<std::string> states;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    // an int field must be a JSON integer in int's range (get<int> casts 1e10 with undefined behaviour)
    const auto integer = [&](const char* key) {
      const nlohmann::json& v = j.at(key);
      constexpr auto lo = std::numeric_limits<int>::min(), hi = std::numeric_limits<int>::max();
      if (v.is_number_unsigned() ? v.get<std::uint64_t>() > std::uint64_t{hi}
                                 : !v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
        throw TraceError(json_path, TraceError::NO_OFFSET,
                         std::string("/") + key + ": " + (v.is_primitive() ? v.dump() : v.type_name()) + " is not an int");
      return v.get<int>();
    };
    if (j.at("format").get<std::string>() != "mktrace-run")
      throw TraceError(json_path, TraceError::NO_OFFSET, "/format: expected \"mktrace-run\"");
    if (integer("version") != static_cast<int>(MKTRACE_RUN_VERSION))
      throw TraceError(json_path, TraceError::NO_OFFSET,
                       "/version: " + j.at("version").dump() + " is not supported (this reader reads version " +
                           std::to_string(MKTRACE_RUN_VERSION) + ")");
    run.P = integer("P");
    if (run.P <= 0) throw TraceError(json_path, TraceError::NO_OFFSET, "/P: must be positive");
    run.command = j.at("command").get<std::vector<std::string>>();
    if (j.contains("executable")) run.executable = j.at("executable").get<std::string>();
    // MPI functions the program links that the tracer does not wrap (the launcher's check): said, never silent
    if (j.contains("untraced_calls")) {
      std::string list;
      for (const auto& c : j.at("untraced_calls")) list += (list.empty() ? "" : ", ") + c.get<std::string>();
      if (!list.empty())
        run.warnings.push_back(json_path + ": the program links MPI functions mktrace does not record (" + list +
                               "): where it calls them, their time is in the computation around them and what they "
                               "communicate is not in the skeleton");
    }
    if (j.contains("cores")) {
      run.cores = integer("cores");
      if (run.cores <= 0) throw TraceError(json_path, TraceError::NO_OFFSET, "/cores: must be positive");
    }
    for (const auto& [name, value] : j.at("params").items()) {
      if (value.is_structured())  // (dumping a deeply nested value would overflow the stack)
        throw TraceError(json_path, TraceError::NO_OFFSET, "/params/" + name + ": must be a number or a string");
      run.params[name] = value.is_string() ? value.get<std::string>() : value.dump();
    }
    run.exit_code = integer("exit_code");
    for (const auto& r : j.at("ranks")) states.push_back(r.at("state").get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw TraceError(json_path, TraceError::NO_OFFSET, std::string("invalid run.json: ") + e.what());
  }
  for (int r = 0; r < run.P; ++r) {
    const std::string path = (fs::path(dir) / ("rank-" + std::to_string(r) + ".mkt")).string();
    if (!fs::exists(path))
      throw TraceError(path, TraceError::NO_OFFSET,
                       "rank " + std::to_string(r) + " of " + std::to_string(run.P) + ": trace file missing");
    RankTrace t = read_rank_file(path);
    if (t.rank != r || t.world_size != run.P)
      throw TraceError(path, 12, "header says rank " + std::to_string(t.rank) + " of " +
                                     std::to_string(t.world_size) + ", expected rank " + std::to_string(r) +
                                     " of " + std::to_string(run.P));
    const std::string who = path + ": rank " + std::to_string(r) + ": ";
    const std::string n = std::to_string(t.events.size()) + " events";
    switch (t.status) {
      case Status::FINALIZED: break;
      case Status::ABORTED:
        run.problems.push_back(who + "MPI_Abort (error code " + std::to_string(t.status_detail) + ") after " + n);
        break;
      case Status::SIGNALED:
        run.problems.push_back(who + "stopped by signal " + std::to_string(t.status_detail) + " after " + n +
                               ": the program did not finish");
        break;
      case Status::INCOMPLETE: {
        std::string m = who + "incomplete: no footer (the rank was killed or crashed before MPI_Finalize); " +
                        n + " are a prefix of its calls";
        if (static_cast<std::size_t>(r) < states.size() && states[r] != "incomplete" && states[r] != "missing")
          m += " (run.json recorded a footer: the file was truncated since)";
        run.problems.push_back(m);
        break;
      }
    }
    run.ranks.push_back(std::move(t));
  }
  if (options.require_complete && !run.complete()) {
    std::string m = "the run is not complete:";
    for (const auto& p : run.problems) m += "\n  " + p;
    throw TraceError(dir, TraceError::NO_OFFSET, m);
  }
  if (options.source_sites) key_sites_by_source(run);
  return run;
}

std::string describe_site(const RankTrace& rank, std::uint64_t site) {
  auto it = rank.sites.find(site);
  if (it == rank.sites.end() || it->second.frames.empty()) return "site " + hex(site);
  std::string s;
  for (const auto& f : it->second.frames) {
    if (!s.empty()) s += " <- ";
    s += std::filesystem::path(f.module).filename().string();
    if (f.offset != 0) s += "+" + hex(f.offset);  // (0: an OTF2 region's unknown line, a TI call point)
  }
  return s;
}

namespace {

using Channel = std::tuple<int, int, std::uint32_t, std::int32_t>;  // sender, receiver, comm, tag

// A rank's receives in posting order, each completed by its RECV or COMPLETE record.
std::vector<MessageEnd> posted_receives(const RankTrace& t) {
  std::vector<MessageEnd> posted;
  std::map<std::uint32_t, std::size_t> by_request;  // pending irecv request id -> index in posted
  std::size_t last_call = 0;                        // the last event that is not a COMPLETE record
  bool last_sends = false;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.kind != Kind::COMPLETE) {
      last_call = i;
      last_sends = is_send(e.kind);
    }
    if (e.kind == Kind::RECV || e.kind == Kind::IRECV) {
      if (e.peer == PROC_NULL) continue;
      const bool blocking = e.kind == Kind::RECV;
      if (!blocking && e.request != 0) by_request[e.request] = posted.size();
      posted.push_back({t.rank, i, i, blocking, e.peer, e.tag, e.bytes, e.comm});
    } else if (e.kind == Kind::COMPLETE && e.root == 1) {  // a receive completed: actual source and tag
      if (e.request == 0) {  // the receive half of the MPI_Sendrecv just before
        if (last_sends && e.peer != PROC_NULL) posted.push_back({t.rank, last_call, i, true, e.peer, e.tag, e.bytes, e.comm});
        continue;
      }
      const auto it = by_request.find(e.request);
      if (it == by_request.end()) continue;
      MessageEnd& r = posted[it->second];
      r.done = i;
      r.completed = true;
      r.peer = e.peer;
      r.tag = e.tag;
      r.bytes = e.bytes;
      by_request.erase(it);
    }
  }
  return posted;
}

std::string describe(const Run& run, const UnpairedEnd& u) {
  const MessageEnd& m = u.end;
  const std::string peer = m.peer == ANY ? "ANY_SOURCE" : std::to_string(m.peer);
  const std::string tag = m.tag == ANY ? "ANY_TAG" : std::to_string(m.tag);
  const RankTrace& t = run.ranks[static_cast<std::size_t>(m.rank)];
  const std::string why = u.why == Unpaired::NO_RECEIVE ? "no matching receive"
                          : u.why == Unpaired::NO_SEND  ? "no matching send"
                          : m.completed                 ? "the trace does not say which sender it took"
                                                        : "never completed, so its sender is unknown";
  return "rank " + std::to_string(m.rank) + ": " + (u.send ? "send to " : "receive from ") + peer + ", tag " + tag +
         ", " + std::to_string(m.bytes) + " bytes, comm " + std::to_string(m.comm) + ", at " +
         describe_site(t, t.events[m.call].site) + ": " + why;
}

}  // namespace

Matching match_messages(const Run& run) {
  Matching out;
  const int P = static_cast<int>(run.ranks.size());
  std::map<Channel, std::vector<MessageEnd>> sends, recvs;
  for (const RankTrace& t : run.ranks) {
    for (std::size_t i = 0; i < t.events.size(); ++i) {
      const Event& e = t.events[i];
      if (is_send(e.kind) && e.peer >= 0)
        sends[{t.rank, e.peer, e.comm, e.tag}].push_back({t.rank, i, i, true, e.peer, e.tag, e.bytes, e.comm});
    }
    for (MessageEnd& r : posted_receives(t)) {
      if (!r.completed || r.peer < 0 || r.peer >= P || r.tag == ANY)
        out.unpaired.push_back({r, false, Unpaired::SOURCE_UNKNOWN});
      else
        recvs[{r.peer, t.rank, r.comm, r.tag}].push_back(r);
    }
  }
  for (const auto& [key, q] : sends) {
    const auto it = recvs.find(key);
    const std::size_t n = it == recvs.end() ? 0 : std::min(q.size(), it->second.size());
    for (std::size_t k = 0; k < n; ++k) out.pairs.push_back({q[k], it->second[k]});
  }
  for (const auto& [key, q] : sends) {
    const auto it = recvs.find(key);
    for (std::size_t k = it == recvs.end() ? 0 : it->second.size(); k < q.size(); ++k)
      out.unpaired.push_back({q[k], true, Unpaired::NO_RECEIVE});
  }
  for (const auto& [key, r] : recvs) {
    const auto it = sends.find(key);
    for (std::size_t k = it == sends.end() ? 0 : it->second.size(); k < r.size(); ++k)
      out.unpaired.push_back({r[k], false, Unpaired::NO_SEND});
  }
  return out;
}

std::vector<std::string> unmatched_messages(const Run& run) {
  std::vector<std::string> out;
  for (const UnpairedEnd& u : match_messages(run).unpaired) out.push_back(describe(run, u));
  return out;
}

}  // namespace mksim::trace
