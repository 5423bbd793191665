// Per-rank compression (issue 4, "Per-run compression"): a rank's event stream becomes a sequence of
// calls and compute gaps, folded online into nested loops wherever a sequence repeats exactly, as
// ScalaTrace's regular section descriptors do. Exact means: same kind, call site, communicator, peer,
// tag, size and root; compute gaps and the time inside calls never prevent folding and are kept as
// statistics (count, mean, min, max, variance; compute gaps also a bounded quantile sketch), so nothing
// about an event is lost but its order in time. A loop body never cuts a region of mktrace.h in two.
#pragma once

#include "skeletons/trace/trace.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief Running statistics of a duration (seconds) over the occurrences a folded node stands for. */
struct Stats {
  std::uint64_t n = 0;
  double sum = 0;
  double sum2 = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  void add(double x);
  void merge(const Stats& o);
  double mean() const { return n ? sum / static_cast<double>(n) : 0.0; }
  /** @brief Population standard deviation. */
  double stddev() const;
};

/** @brief The numbers of a call that change with the iteration of its loop (a loop merged from consecutive
 *  loops, FoldOptions::index_loops): one value per iteration for each number that is not the same in every
 *  iteration (the others are empty; the call's own fields then hold iteration 0's values). */
struct IterValues {
  std::vector<std::int64_t> peer, tag, bytes, root;
};

/** @brief A step function of the iteration index k: base + step * floor((k + offset) / len), len >= 1,
 *  offset < len, step != 0 (SUMMA's panel owner k nb / (N / pc): base 0, step 1, len N / (nb pc)). */
struct Steps {
  std::int64_t base = 0, step = 0;
  std::int64_t len = 1, offset = 0;
};
/** @brief The step function that gives v[k] for every k, when there is one with at least two steps: constant
 *  runs, all as long as each other but the first and last (which may be shorter), values in arithmetic
 *  progression. */
std::optional<Steps> step_form(const std::vector<std::int64_t>& v);

/** @brief A value that goes round a cycle with the iteration index k: low + (start + step * k) % period, period
 *  >= 2, 0 <= start < period, 0 < step < period (a master's tasks to worker 1 + k % (P - 1), a pairwise
 *  exchange's partner (rank + 1 + k) % P). */
struct Cycle {
  std::int64_t low = 0, start = 0, step = 1, period = 2;
};
/** @brief The cycle that gives v[k] for every k, when v wraps at least once (else step_form says it). */
std::optional<Cycle> cycle_form(const std::vector<std::int64_t>& v);

/** @brief The ratios r for which v[k] = v[0] + scale * floor(k r) at every k: lo <= r < hi, lo = lo_num / lo_den
 *  and hi = hi_num / hi_den (denominators > 0), scale the increments' greatest common divisor. A block owner's
 *  sequence: SUMMA's panel k belongs to process column floor(k nb / ceil(N / Py)), steps of unequal length where
 *  nb does not divide the block. */
struct RatioRange {
  std::int64_t lo_num = 0, lo_den = 1, hi_num = 0, hi_den = 1;
  std::int64_t scale = 1;
  /** @brief Whether num / den (den > 0) is in [lo, hi). */
  bool contains(std::int64_t num, std::int64_t den) const;
};
/** @brief The range of ratios that gives v (ratio_form's sequence), when there is one and v has three values
 *  or more. */
std::optional<RatioRange> ratio_form(const std::vector<std::int64_t>& v);

/** @brief One MPI call (or annotation) of a rank, with everything that makes two calls the same. */
struct Call {
  trace::Kind kind{};
  std::uint64_t site = 0;  ///< call-site hash (trace), 0 when none
  std::uint32_t comm = 0;
  std::int32_t peer = trace::NO_RANK;  ///< world rank; ANY for a wildcard receive; NO_RANK for none
  std::int32_t tag = trace::NO_RANK;   ///< ANY for a wildcard; for annotations the name id
  std::int64_t bytes = 0;
  std::int32_t root = trace::NO_RANK;  ///< collectives' root; for waits the number of requests completed
  std::int32_t peer2 = trace::NO_RANK; ///< Sendrecv: the receive half's source
  std::int32_t tag2 = trace::NO_RANK;  ///< Sendrecv: the receive half's tag
  std::int64_t bytes2 = 0;             ///< Sendrecv: bytes received
  std::uint64_t waits_on = 0;          ///< MPI_Wait: call site of the isend/irecv it completes
  Stats inside;                        ///< time inside the call (not part of its identity)
  /// FoldOptions::vary_sizes: bytes and bytes2 are statistics, not identity (`sizes`, `sizes2` keep them;
  /// after folding, bytes and bytes2 are their means rounded)
  bool vary = false;
  Stats sizes;   ///< vary: bytes of every occurrence
  Stats sizes2;  ///< vary: bytes2 of every occurrence
  /// vary: bytes (and, for MPI_Sendrecv only, bytes2) of every occurrence in program order (folding merges a
  /// later occurrence into an earlier one), for the sizes of a loop that change by iteration in the same way in
  /// each of its executions (NPB MG's levels); both empty once more than SEQUENCE_MAX were seen (`seq_lost`)
  std::vector<std::int64_t> seq, seq2;
  bool seq_lost = false;
  static constexpr std::size_t SEQUENCE_MAX = 1u << 14;
  /// Folds o's sizes (a later occurrence of the same call) into this call's.
  void merge_sizes(const Call& o);
  /// index_loops: the numbers that change with the iteration of the enclosing (merged) loop; null otherwise
  std::shared_ptr<const IterValues> iter;
  bool same(const Call& o) const;
};

/** @brief A deterministic summary of a sample for its quantiles, of bounded size whatever the number of
 *  values (KLL-style compactors: level h keeps values of weight 2^h; a full level is sorted and every other
 *  value, alternately the odd and the even ones, moves up). Exact while at most CAPACITY values were added. */
class QuantileSketch {
 public:
  /** @brief Values a level holds before it is compacted. */
  static constexpr std::size_t CAPACITY = 64;
  /** @brief Adds one value. */
  void add(double x);
  /** @brief Adds every value o summarises. */
  void merge(const QuantileSketch& o);
  /** @brief Number of values summarised (the sum of the weights). */
  std::uint64_t count() const;
  /** @brief The retained values with their weights, sorted by value. */
  std::vector<std::pair<double, std::uint64_t>> weighted() const;

 private:
  void compact();
  std::vector<std::vector<double>> levels_;
  bool odd_ = false;  // which half the next compaction keeps
};

/** @brief The p-quantile (0 <= p <= 1) of weighted values sorted by value: each value stands for `weight`
 *  copies, and the quantile interpolates linearly between the order statistics around p * (count - 1). */
double weighted_quantile(const std::vector<std::pair<double, double>>& sorted, double p);

/** @brief Local work between two calls: its durations. The first is also kept apart (it is often a
 *  warm-up: caches, connections), with the statistics and a quantile sketch of the ones after it. */
struct Compute {
  Stats seconds;               ///< every duration
  Stats flops;                 ///< explicit computation in flops (SimGrid TI `compute` actions), per gap
  double first = 0;            ///< the first duration, in program order
  Stats rest;                  ///< every duration after the first
  QuantileSketch rest_sketch;  ///< the same, for quantiles (empty for a single duration: no allocation)
  /// the gap states work (a SimGrid TI `compute` action, flops > 0): identity, not statistics. Without call
  /// sites, two calls with no work between them (SUMMA's row and column broadcasts on a square grid) must not
  /// fold as one call repeated twice as often as the calls with work before them.
  bool works = false;
  /** @brief One duration (and the flops a TI trace gives for the same gap). */
  static Compute of(double duration, double flops = 0);
  /** @brief Adds the durations of o, which come after this one's. */
  void merge(const Compute& o);
};

struct Node;
using Seq = std::vector<Node>;

/** @brief A folded repetition: `count` times `body`. With `branch`, a data-dependent branch instead: the
 *  iterations of an annotated loop (mktrace.h) differ by whether they run `body`, which ran `count` of the
 *  `reached` times its place in the loop was reached (see `fold_rank`); `count` is then statistics, not
 *  identity (not in `same`, the hash or `shape_hash`). */
struct Loop {
  std::uint64_t count = 0;
  Seq body;
  bool branch = false;
  std::uint64_t reached = 0;  ///< branch: times its place was reached
  /// merged from consecutive loops whose bodies differ only in numbers that are step functions of the
  /// iteration (FoldOptions::index_loops): calls of its body carry `iter`
  bool indexed = false;
  /// branch: which of the loop's iterations ran it, as a hash of the iterations in order (whether each ran it, and
  /// how many executions it stands for), merged over the enclosing loop's executions; statistics, not identity.
  /// Ranks of one run with the same pattern took the branch together (a decision every rank makes alike).
  std::uint64_t pattern = 0;
  /// branch: the same hash of the iterations that did not run it (a branch whose pattern is another's `anti` ran in
  /// exactly the iterations the other skipped: the two arms of one if/else)
  std::uint64_t anti = 0;
};

/** @brief One element of a folded program; `hash` covers identity (not statistics). */
struct Node {
  std::variant<Call, Compute, Loop> op;
  std::uint64_t hash = 0;
};

/** @brief Whether two nodes are the same up to statistics (structure and every identity field). */
bool same(const Node& a, const Node& b);

/** @brief A call's (kind, site, tag): what FoldOptions::step_data knows a step's call by, whatever its peer and size. */
using CallKey = std::tuple<int, std::uint64_t, std::int32_t>;

/** @brief Knobs of folding. */
struct FoldOptions {
  std::size_t window = 512;  ///< longest loop body (in nodes of the current sequence) that is looked for
  /// message sizes are statistics, not identity, as compute gaps are: iterations that differ only in sizes
  /// (particles or atoms that move) fold into one loop, each call with its mean size (issue 17; the builder
  /// chooses this when exact folding does not compress, see vary.hpp)
  bool vary_sizes = false;
  /// consecutive loops whose bodies differ only in peers, tags, sizes or roots that are step functions of the
  /// iteration (a broadcast root that moves to the next rank every len iterations: SUMMA's panel owner)
  /// become one loop over all their iterations, each such number kept per iteration (Call::iter)
  bool index_loops = true;
  /// TI traces: a gap that states work (flops) and one that does not are different nodes (Compute::works), so
  /// that iterations fold by where their work is (SUMMA's two broadcasts with no work between them); off, every
  /// gap is the same node whatever its flops (the builder falls back to this when the first skeleton does not
  /// pair its messages at the traced runs: NPB CG's row and column reductions)
  bool work_identity = true;
  /// a trace without loop annotations (at most 20,000 nodes) is also folded offline, the repeat that covers the most
  /// nodes first, and that folding kept when it is smaller (a setup phase that runs the loop body's calls once
  /// before the loop: README.md, "A setup phase like the loop body"); off: the online folding alone
  bool largest_repeats = true;
  /// the call site of a collective that starts every iteration of a time-step loop the program did not annotate
  /// (steps.hpp; LAMMPS' per-step check whether any atom moved far enough to rebuild the neighbour lists): fold_rank
  /// writes loop annotations (tag STEP_LOOP_TAG) around its calls, so that steps which differ by data (a rebuild
  /// step's exchanges in place of a plain step's forward communication) fold into one loop with branches, as an
  /// annotated loop does; 0: none. Ignored for a trace with loop annotations of its own.
  std::uint64_t step_site = 0;
  /// step_site is a point-to-point call every step makes (steps.hpp: a particle code whose migrations happen as
  /// the particles move): each part of a step that some steps skip is a branch of its own, not merged with the
  /// parts beside it, also when only the first or the last steps ran it (data, not a phase of the loop), and a
  /// call whose (kind, site, tag) is in step_optional is a branch even at a rank that made it in every step, so
  /// that every rank's loop has the same branches
  bool step_data = false;
  std::set<CallKey> step_optional;
  /// step_data: the order of the calls (kind, site, tag) in a step, over every rank of every run (0 first), so
  /// that two parts no step of one rank ran together are put in the program's order, the same at every rank
  std::map<CallKey, std::size_t> step_order;
};

/** @brief The tag of the loop annotations fold_rank writes for FoldOptions::step_site (annotation tags are name
 *  ids, never negative). */
inline constexpr std::int32_t STEP_LOOP_TAG = -0x5354;

/** @brief A rank's folded program. */
struct RankProgram {
  int rank = 0;
  Seq seq;
  std::uint64_t events = 0;  ///< calls folded in (excluding request completions)
};

/** @brief Polling: a test that completed nothing, or an MPI_Iprobe that found no message (or whose answer the trace
 *  does not have: OTF2), is the rank waiting, as often as the machine's timing made it try. These records are
 *  removed, and the work between them joins the gap before the next record (its `cpu_gap`), so that the calls
 *  polling loops make fold as the waits they are (fold_rank then reads a test that completed requests as the wait
 *  it stands for). HPL's panel broadcasts poll with MPI_Iprobe, b_eff with MPI_Testany: 87 of every 100 records
 *  of an HPCC trace. Returns how many records were removed. */
std::size_t drop_polls(trace::RankTrace& trace);

/** @brief Folds one rank's trace. Request completions (COMPLETE records) are folded into their wait;
 *  the time between the end of one call and the start of the next is a compute gap, also at the start
 *  (after MPI_Init) and end (before MPI_Finalize); annotation iterations drop their index.
 *  An annotated loop (MKTRACE_LOOP_BEGIN / ITER / END) whose iterations did not fold into one loop because
 *  some iterations run calls that others skip becomes one loop over all its iterations whose body is the
 *  shortest sequence containing every iteration's, the parts some iterations skip being `branch` loops
 *  (each part run by the same iterations; else, or when a part is only compute, it stays as folded). */
RankProgram fold_rank(const trace::RankTrace& trace, const FoldOptions& options = {});

/** @brief Runs of calls from one call site that differ only in numbers that step with their place in the run
 *  (`for (i = 1; i < P; ++i) MPI_Send(..., i, ...)`: a root's sends to every other rank, a master's tasks to
 *  its workers) become one indexed loop (as FoldOptions::index_loops makes of consecutive loops): units
 *  [gap, call] of compatible calls, at least two, whose peers, tags, sizes and roots are step functions of the
 *  unit's index (step_form). Unfolded, each call would be a place of its own, aligned across runs by
 *  occurrence, with conditions on P that only fit the traced runs. A call site is indexed only when every such
 *  run of its calls, in every rank of every run (`folded[run][rank]`), steps, and some run has at least three
 *  calls: numbers that step by accident at some ranks (a loop over the dimensions of a grid, `Cart_shift` peers)
 *  and pairs (the west and east neighbours from one line) stay as they are. Calls at sites for
 *  which `skip` is true (neighbour lists, neighbours.hpp) are left alone. */
void index_call_runs(std::vector<std::vector<RankProgram>>& folded, const std::function<bool(std::uint64_t)>& skip);

/** @brief The shape of a folded sequence: its structure without numbers (kinds, call sites,
 *  communicators, wildcards, loop nesting; not counts, peers, sizes, tags or times), the key under
 *  which the builder groups ranks. */
std::uint64_t shape_hash(const Seq& seq);

/** @brief Recomputes the identity hashes of a sequence's nodes (nested loops first) after identity fields
 *  changed (neighbours.hpp tags call sites). */
void rehash_all(Seq& seq);

/** @brief Number of nodes in a sequence, counting loop bodies once (the folded size). */
std::size_t folded_size(const Seq& seq);
/** @brief Number of calls a sequence stands for, loops expanded. */
std::uint64_t expanded_calls(const Seq& seq);
/** @brief A one-line-per-node text form for tests and `mkskel show` ("loop 10 {", "  MPI_Isend peer=1 ..."). */
std::string to_text(const Seq& seq, int indent = 0);

/** @brief The skeleton op of a traced point-to-point call ("send" for send/ssend/bsend/rsend, "recv", "isend" for
 *  isend/issend, "irecv"), nullptr for any other kind. */
const char* p2p_op_name(trace::Kind k);
/** @brief The skeleton op of a traced collective ("barrier", "bcast", ... "alltoall"), nullptr for any other kind. */
const char* collective_op_name(trace::Kind k);

}  // namespace mksim::skeletons::builder
