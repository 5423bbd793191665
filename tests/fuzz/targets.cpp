// Fuzz entry points (targets.hpp). The trace readers read directories, so each process writes the input into
// its own scratch directory (under /dev/shm when it is writable: no disk I/O per input) next to fixed valid
// companion files, and calls the reader on that directory.
#include "tests/fuzz/targets.hpp"

#include "skeletons/error.hpp"
#include "skeletons/expr.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"
#include "skeletons/trace/ti_reader.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mksim::fuzz {

namespace {

namespace fs = std::filesystem;

std::string outcome;

void accepted() { outcome = "accepted"; }
void rejected(const std::exception& e) { outcome = std::string("rejected: ") + e.what(); }

// This process's scratch directory, removed at exit (a crash leaves it behind: it names the pid).
class Scratch {
 public:
  Scratch() {
    const fs::path shm = "/dev/shm";
    std::error_code ec;
    const fs::path base = fs::is_directory(shm, ec) && ::access(shm.c_str(), W_OK) == 0 ? shm : fs::temp_directory_path();
    root_ = base / ("mksim-fuzz-" + std::to_string(::getpid()));
    fs::remove_all(root_, ec);
    fs::create_directories(root_);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  /** @brief A subdirectory for one target (created). */
  fs::path dir(const std::string& name) const {
    fs::path d = root_ / name;
    fs::create_directories(d);
    return d;
  }

 private:
  fs::path root_;
};

const Scratch& scratch() {
  static const Scratch s;
  return s;
}

void write_file(const fs::path& path, const void* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

void write_file(const fs::path& path, const std::string& text) { write_file(path, text.data(), text.size()); }

// --- binary traces -------------------------------------------------------------------------------------

void put(std::string& s, std::uint64_t v, unsigned n) {
  for (unsigned i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A valid rank file of rank 0 of 1 without footer (status incomplete, so it does not depend on the footer's
// layout): header, then MPI_Init and a self send and receive.
std::string fixture_rank_file() {
  std::string s = MKTRACE_MAGIC;
  put(s, MKTRACE_VERSION, 4);
  put(s, 0, 4);  // rank
  put(s, 1, 4);  // world size
  put(s, 0, 4);  // flags
  put(s, std::bit_cast<std::uint64_t>(1e-9), 8);
  put(s, std::bit_cast<std::uint64_t>(0.0), 8);
  put(s, MKTRACE_RECORD_BYTES, 4);
  put(s, 0, 4);
  const auto record = [&](trace::Kind kind, std::int32_t peer, double t, std::int64_t bytes, std::int32_t tag) {
    put(s, static_cast<std::uint16_t>(kind), 2);
    put(s, 0, 2);
    put(s, static_cast<std::uint32_t>(peer), 4);
    put(s, std::bit_cast<std::uint64_t>(t), 8);
    put(s, std::bit_cast<std::uint64_t>(t + 1e-6), 8);
    put(s, static_cast<std::uint64_t>(bytes), 8);
    put(s, 0x1234, 8);  // call site (not in a table: the file has no footer)
    put(s, static_cast<std::uint32_t>(tag), 4);
    put(s, static_cast<std::uint32_t>(-1), 4);  // root
    put(s, 0, 4);                               // comm
    put(s, 0, 4);                               // request
    put(s, std::bit_cast<std::uint64_t>(t > 0 ? 5e-4 : -1.0), 8);  // cpu_gap (v3)
  };
  record(trace::Kind::INIT, -1, 0, 0, -1);
  record(trace::Kind::SEND, 0, 1e-3, 64, 5);
  record(trace::Kind::RECV, 0, 2e-3, 64, 5);
  return s;
}

std::string fixture_run_json(int version) {
  return "{\"format\": \"mktrace-run\", \"version\": " + std::to_string(version) +
         ", \"P\": 1, \"command\": [\"./app\", \"64\"], \"params\": {\"N\": 64, \"mode\": \"fast\"}, \"exit_code\": 0, "
         "\"ranks\": [{\"rank\": 0, \"file\": \"rank-0.mkt\", \"state\": \"incomplete\"}]}\n";
}

// Everything a consumer of a Run looks at, so that a reader accepting nonsense shows up downstream too.
void use(const trace::Run& run) {
  std::size_t n = run.problems.size();
  for (const auto& t : run.ranks)
    for (const auto& e : t.events) {
      n += trace::kind_name(e.kind).size() + trace::is_send(e.kind) + trace::is_collective(e.kind);
      n += trace::describe_site(t, e.site).size();
    }
  n += trace::unmatched_messages(run).size();
  if (n == std::numeric_limits<std::size_t>::max()) std::puts("");  // keep the work observable
  accepted();
}

// The run directory of trace_rank: run.json of a P = 1 run, with the run.json version read_run accepts
// (checked once on the valid fixture, so a format change cannot silently turn the target into a no-op).
const fs::path& rank_run_dir() {
  static const fs::path dir = [] {
    const fs::path d = scratch().dir("trace_rank");
    write_file(d / "rank-0.mkt", fixture_rank_file());
    std::string why;
    for (int version : {static_cast<int>(MKTRACE_RUN_VERSION), 1}) {
      write_file(d / "run.json", fixture_run_json(version));
      try {
        (void)trace::read_run(d.string());
        return d;
      } catch (const trace::TraceError& e) {
        why = e.what();
      }
    }
    std::fprintf(stderr, "fuzz: read_run rejects the fixture run (update tests/fuzz/targets.cpp): %s\n", why.c_str());
    std::abort();
  }();
  return dir;
}

// A mutated record almost always breaks the footer's checksum, which stops the reader before the footer's
// tables: when that is the error, write the checksum the reader says the records have (at footer + 16).
bool fix_checksum(std::string& bytes, const trace::TraceError& e) {
  const std::string what = e.what();
  const std::string said = "the records hash to 0x";
  const std::size_t at = what.find(said);
  if (at == std::string::npos || e.offset() == trace::TraceError::NO_OFFSET || e.offset() + 24 > bytes.size())
    return false;
  const std::uint64_t sum = std::strtoull(what.c_str() + at + said.size(), nullptr, 16);
  for (unsigned i = 0; i < 8; ++i) bytes[e.offset() + 16 + i] = static_cast<char>((sum >> (8 * i)) & 0xff);
  return true;
}

// Input = rank-0.mkt of a P = 1 run (read again with the checksum fixed if that was the only way in).
int trace_rank(const std::uint8_t* data, std::size_t size) {
  const fs::path& dir = rank_run_dir();
  std::string bytes(reinterpret_cast<const char*>(data), size);
  for (int attempt = 0; attempt < 2; ++attempt) {
    write_file(dir / "rank-0.mkt", bytes);
    try {
      use(trace::read_run(dir.string()));
      return 0;
    } catch (const trace::TraceError& e) {
      rejected(e);
      if (attempt > 0 || !fix_checksum(bytes, e)) return 0;
    }
  }
  return 0;
}

// Input = run.json, next to a valid rank-0.mkt (rank 0 of 1).
int trace_run_json(const std::uint8_t* data, std::size_t size) {
  static const fs::path dir = [] {
    const fs::path d = scratch().dir("trace_run_json");
    write_file(d / "rank-0.mkt", fixture_rank_file());
    return d;
  }();
  write_file(dir / "run.json", data, size);
  try {
    use(trace::read_run(dir.string()));
  } catch (const trace::TraceError& e) {
    rejected(e);
  }
  return 0;
}

// --- SimGrid time-independent traces -------------------------------------------------------------------

constexpr std::size_t TI_MAX_RANKS = 4;

// Input = the rank files r0.txt, r1.txt, ... separated by form feeds (at most 4 ranks; the rest is dropped),
// listed by a fixed index.
int ti_run(const std::uint8_t* data, std::size_t size) {
  static const fs::path dir = scratch().dir("ti_run");
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> files;
  std::size_t start = 0;
  while (files.size() < TI_MAX_RANKS) {
    const std::size_t ff = in.find('\f', start);
    files.push_back(in.substr(start, ff == std::string_view::npos ? std::string_view::npos : ff - start));
    if (ff == std::string_view::npos) break;
    start = ff + 1;
  }
  std::string index;
  for (std::size_t r = 0; r < files.size(); ++r) {
    const std::string name = "r" + std::to_string(r) + ".txt";
    write_file(dir / name, files[r].data(), files[r].size());
    index += name + "\n";
  }
  const fs::path index_path = dir / "ti.txt";
  write_file(index_path, index);
  try {
    std::vector<double> flops;
    use(trace::read_ti_run(index_path.string(), &flops));
  } catch (const trace::TraceError& e) {
    rejected(e);
  }
  return 0;
}

// --- skeletons -----------------------------------------------------------------------------------------

// Nesting depth of loops and branches. check_for_run visits the first and the last iteration of a loop and
// both arms of a probabilistic branch, so its time doubles with each level, as the simulation's at least does.
int nesting(const skeletons::Body& body) {
  int depth = 0;
  for (const auto& block : body) {
    if (const auto* loop = std::get_if<skeletons::Loop>(&block.op))
      depth = std::max(depth, 1 + nesting(loop->body));
    else if (const auto* branch = std::get_if<skeletons::Branch>(&block.op))
      depth = std::max({depth, 1 + nesting(branch->then_body), 1 + nesting(branch->else_body)});
    else if (const auto* region = std::get_if<skeletons::Region>(&block.op))
      depth = std::max(depth, nesting(region->body));  // a region runs its body once: no doubling
  }
  return depth;
}

// Input = a skeleton file. A skeleton that parses is also bound (defaults) and checked for runs at P = 1, 2
// and 4, which evaluates every expression the way the simulator's validation does (unless it nests loops and
// branches more than 16 deep: 2^depth visits would make it a hang rather than a bug).
int skeleton(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<skeletons::Skeleton> sk;
  try {
    sk = skeletons::parse_skeleton(text, "fuzz.json");
    accepted();
  } catch (const skeletons::SkeletonError& e) {
    rejected(e);
    return 0;
  }
  for (const auto& group : sk->groups)
    if (nesting(group.body) > 16) return 0;
  for (int P : {1, 2, 4}) {
    try {
      skeletons::check_for_run(*sk, skeletons::bind_parameters(*sk, P, {}), P);
    } catch (const skeletons::SkeletonError& e) {
      if (P == 4) rejected(e);
    }
  }
  return 0;
}

// Input = an expression over P, rank, N, i; evaluated on an ordinary frame and on one of extreme values.
int expr(const std::uint8_t* data, std::size_t size) {
  static const skeletons::SymbolTable symbols = [] {
    skeletons::SymbolTable t;
    for (const char* name : {"P", "rank", "N", "i"}) t.add(name);
    return t;
  }();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const skeletons::Expr e = skeletons::parse_expr(text, symbols);
    constexpr double inf = std::numeric_limits<double>::infinity();
    const double ordinary[] = {16, 5, 4096, 3};
    const double extreme[] = {1e300, -1, std::numeric_limits<double>::quiet_NaN(), -inf};
    double sum = e.eval(ordinary) + e.eval(extreme);
    if (e.max_slot() >= static_cast<int>(symbols.size()) || (e.is_constant() && e.max_slot() != -1) ||
        e.uses(e.max_slot() + 1)) {
      std::fprintf(stderr, "fuzz: inconsistent compiled expression for \"%s\"\n", e.text().c_str());
      std::abort();
    }
    if (sum == 42.4242) std::puts("");  // keep the evaluation observable
    accepted();
  } catch (const skeletons::SkeletonError& e) {
    rejected(e);
  }
  return 0;
}

constexpr Target TARGETS[] = {{"trace_rank", trace_rank},
                              {"trace_run_json", trace_run_json},
                              {"ti_run", ti_run},
                              {"skeleton", skeleton},
                              {"expr", expr}};

}  // namespace

std::span<const Target> targets() { return TARGETS; }

const std::string& last_outcome() { return outcome; }

const Target* find_target(std::string_view name) {
  for (const Target& t : TARGETS)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace mksim::fuzz
