// The event model of a traced MPI run (format v4, skeletons/trace/README.md): plain values, parsed once
// by the reader; nothing downstream sees bytes or strings of the file.
#pragma once

#include "skeletons/trace/kinds.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mksim::trace {

/** @brief What a record is: an MPI call, or the completion of a request / receive half (COMPLETE). */
enum class Kind : std::uint16_t {
#define MKSIM_TRACE_KIND(name, code, text) name = code,
  MKTRACE_KINDS(MKSIM_TRACE_KIND)
#undef MKSIM_TRACE_KIND
};

/** @brief The MPI name of a kind ("MPI_Send"), or "?" for a code that is not a kind. */
std::string_view kind_name(Kind kind);
/** @brief Whether a raw code read from a file is one of the kinds of the format. */
bool is_kind(std::uint16_t code);
/** @brief Point-to-point sends (blocking and non-blocking, and the send half of MPI_Sendrecv). */
bool is_send(Kind kind);
/** @brief Collective operations (barrier .. reduce_scatter). */
bool is_collective(Kind kind);
/** @brief Structure annotations of mktrace.h (region/loop begin, iteration, end): not MPI calls. */
bool is_annotation(Kind kind);
/** @brief Communicator and topology calls whose arguments format v4 records (CommArgs). */
bool takes_args(Kind kind);
/** @brief Calls that make a communicator (dup, split, Cartesian, sub, create, graphs): root = its id. */
bool creates_comm(Kind kind);

/** @brief Peer/tag/root values that are not ranks or tags. */
inline constexpr std::int32_t NO_RANK = MKTRACE_NONE;
inline constexpr std::int32_t ANY = MKTRACE_ANY;
inline constexpr std::int32_t PROC_NULL = MKTRACE_PROC_NULL;

/** @brief One record. Times in seconds since the rank's MPI_Init; peers and roots are MPI_COMM_WORLD
 *  ranks. Per-kind meaning of peer, tag, bytes, root, request: README.md, "Fields by kind". */
struct Event {
  Kind kind{};
  double t_enter = 0;        ///< seconds since t0
  double t_exit = 0;         ///< seconds since t0
  std::int32_t peer = NO_RANK;
  std::int32_t tag = NO_RANK;
  std::int64_t bytes = 0;
  std::uint32_t comm = 0;     ///< communicator id (0 = MPI_COMM_WORLD)
  std::int32_t root = NO_RANK;
  std::uint32_t request = 0;  ///< request id (0 = none), ties an isend/irecv to its COMPLETE record
  std::uint64_t site = 0;     ///< call-site hash, key of RankTrace::sites
  std::uint16_t flags = 0;    ///< MKTRACE_POSTED_ANY_SOURCE / _TAG: the wildcards a receive was posted with
  std::uint32_t args = 0;     ///< 1 + index into RankTrace::args for a call with recorded arguments (format v4), 0 none
  /// Thread CPU seconds between the previous record's exit and this record's entry (format v3, traced with
  /// MKTRACE_CPU_TIME=1); -1 when not measured. The gap's wall time includes time spent waiting for a core.
  double cpu_gap = -1;
  /// Flops of the explicit computation between the previous record and this one: SimGrid TI `compute` actions
  /// (0 in binary and OTF2 traces, whose computation is the gaps' time).
  double gap_flops = 0;

  /** @brief The compute before this record, after a record that exited at prev_exit: its CPU time when the
   *  tracer measured it, else the wall-clock gap. */
  double gap_after(double prev_exit) const { return cpu_gap >= 0 ? cpu_gap : std::max(0.0, t_enter - prev_exit); }

  bool posted_any_source() const { return (flags & MKTRACE_POSTED_ANY_SOURCE) != 0; }
  bool posted_any_tag() const { return (flags & MKTRACE_POSTED_ANY_TAG) != 0; }
};

/** @brief What a communicator or topology call was given and returned (format v4: the ARGS records after the
 *  call; OTF2: the communicator definitions). Ranks are MPI_COMM_WORLD ranks (PROC_NULL for MPI_PROC_NULL)
 *  except where said. Which fields a kind fills: README.md, "Arguments". */
struct CommArgs {
  std::int32_t new_rank = NO_RANK;   ///< creations: this rank's rank in the new communicator, -1 for MPI_COMM_NULL
  std::int32_t new_size = 0;         ///< creations: its size (0 for MPI_COMM_NULL)
  std::int32_t color = NO_RANK;      ///< COMM_SPLIT: the colour, -1 for MPI_UNDEFINED
  std::int32_t key = 0;              ///< COMM_SPLIT
  std::int32_t nnodes = 0;           ///< DIMS_CREATE, GRAPH_CREATE: the number of nodes; DIST_GRAPH_CREATE: n
  std::vector<std::int32_t> dims_in; ///< DIMS_CREATE: the dims as passed (0: free)
  std::vector<std::int32_t> dims;    ///< DIMS_CREATE: the dims returned; CART_CREATE: the grid
  std::vector<bool> periods;         ///< CART_CREATE
  std::vector<bool> remain;          ///< CART_SUB: the dimensions kept
  bool reorder = false;              ///< CART_CREATE, GRAPH_CREATE, DIST_GRAPH_*
  std::int32_t direction = 0, disp = 0;          ///< CART_SHIFT
  std::int32_t source = NO_RANK, dest = NO_RANK; ///< CART_SHIFT: world ranks or PROC_NULL
  std::vector<std::int32_t> members;  ///< COMM_CREATE(_GROUP): the group's world ranks in its order (OTF2: any creation)
  std::int32_t tag = NO_RANK;         ///< COMM_CREATE_GROUP
  std::vector<std::int32_t> index, edges;  ///< GRAPH_CREATE, as passed (node numbers: ranks of the parent)
  std::vector<std::int32_t> sources, destinations;  ///< DIST_GRAPH_CREATE(_ADJACENT): world ranks
  std::vector<std::int32_t> degrees;  ///< DIST_GRAPH_CREATE
};

/** @brief How a rank's trace ended. */
enum class Status { FINALIZED, ABORTED, SIGNALED, INCOMPLETE };

/** @brief "finalized", "aborted", "signal", "incomplete". */
std::string_view status_name(Status status);

/** @brief One return address: the module (executable or shared library path) and the offset in it. */
struct Frame {
  std::string module;
  std::uint64_t offset = 0;
};

/** @brief A call site: innermost frame (the caller of the MPI function) first. */
struct CallSite {
  std::uint64_t hash = 0;
  std::vector<Frame> frames;
};

/** @brief The hash of a call site made of named frames (OTF2 regions, TI call points): FNV-1a 64 over each
 *  frame's module name, a 0 byte and its offset's 8 little-endian bytes; 0 for no frames, never 0 else. */
std::uint64_t site_hash(const std::vector<Frame>& frames);

/** @brief The trace of one rank (one rank-<r>.mkt file). */
struct RankTrace {
  std::string file;
  int rank = 0;
  int world_size = 0;
  std::uint32_t flags = 0;     ///< MKTRACE_FLAG_* of the header
  std::uint32_t record_bytes = MKTRACE_RECORD_BYTES;  ///< of the file's format version (56 for v2)
  double tick_s = 0;           ///< MPI_Wtick
  double t0_s = 0;             ///< MPI_Wtime at MPI_Init (clock of this rank)
  Status status = Status::INCOMPLETE;
  std::int32_t status_detail = 0;  ///< signal number (SIGNALED) or error code (ABORTED)
  std::vector<Event> events;
  std::map<std::uint64_t, CallSite> sites;
  /// annotation names (mktrace.h); an annotation record's tag indexes this (empty for incomplete ranks)
  std::vector<std::string> names;
  /// arguments of communicator and topology calls (format v4), indexed by Event::args - 1
  std::vector<CommArgs> args;
  /** @brief The arguments of an event, nullptr when none were recorded. */
  const CommArgs* args_of(const Event& e) const { return e.args ? &args.at(e.args - 1) : nullptr; }
};

/** @brief A traced run: run.json and every rank's trace, rank i at ranks[i]. */
struct Run {
  std::string dir;
  int P = 0;
  std::vector<std::string> command;
  std::string executable;  ///< the program's absolute path at trace time ("" when run.json has none)
  int cores = 0;           ///< cores of the host every rank ran on (run.json `cores`); 0 unknown
  std::map<std::string, std::string> params;  ///< as given to mktrace --param (numbers in JSON form)
  int exit_code = 0;                          ///< mpirun's
  std::vector<RankTrace> ranks;
  std::vector<std::string> problems;  ///< one message per rank that did not end at MPI_Finalize
  /// what an importer could not represent and left out or approximated, one line per kind with its count and
  /// where it was (SimGrid TI traces: non-blocking collectives read as blocking, ...); for binary traces, the MPI
  /// functions the program links that mktrace does not record (run.json `untraced_calls`), if any
  std::vector<std::string> warnings;
  /** @brief Every rank reached MPI_Finalize with a valid footer. */
  bool complete() const { return problems.empty(); }
};

/** @brief A bad trace: what() reads "file: offset N: message" (offset omitted when not about bytes). */
class TraceError : public std::runtime_error {
 public:
  static constexpr std::uint64_t NO_OFFSET = ~std::uint64_t{0};
  TraceError(const std::string& file, std::uint64_t offset, const std::string& message)
      : std::runtime_error(compose(file, offset, message)), file_(file), offset_(offset) {}
  /** @brief The file the error is about. */
  const std::string& file() const { return file_; }
  /** @brief Byte offset in file(), or NO_OFFSET. */
  std::uint64_t offset() const { return offset_; }

 private:
  static std::string compose(const std::string& file, std::uint64_t offset, const std::string& message) {
    std::string s = file + ": ";
    if (offset != NO_OFFSET) s += "offset " + std::to_string(offset) + ": ";
    return s + message;
  }
  std::string file_;
  std::uint64_t offset_;
};

}  // namespace mksim::trace
