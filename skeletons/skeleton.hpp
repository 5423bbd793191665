// The skeleton: a scale-independent description of an MPI program, as typed values (format v1, v2 and v3).
#pragma once

#include "skeletons/expr.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mksim::skeletons {

struct Block;
using Body = std::vector<Block>;

/** @brief `loop`: runs its body `count` times; `var` (optional) holds the iteration index 0..count-1. */
struct Loop {
  Expr count;
  int var_slot = -1;
  Body body;
};

/** @brief `if`: a condition on rank/parameters, or a probability drawn per rank with a seeded generator. */
struct Branch {
  std::optional<Expr> condition;  ///< set when the branch is a condition
  Expr probability;               ///< used when condition is empty: taken with this probability
  /** @brief Format v2 `coin`: index into Skeleton::coins, or -1. A probabilistic branch with a coin draws from
   *  the coin's stream of rank `coin_rank` (default: the rank itself) instead of its own rank's stream: the
   *  k-th time rank r reads coin C of rank q = coin_rank(r) it gets q's k-th toss, uniform(seed, C, q, k). A branch that sends and the branch
   *  of its partner that receives share a coin (the receiver tossing its sender's), so their messages pair. */
  int coin = -1;
  Expr coin_rank;
  /** @brief Format v2 `"draw": "even"` (with a coin): the coin's tosses are an evenly spread sequence
   *  (coin_toss_even, rank_rng.hpp), so the branch is taken at its rate in every run of steps, not in a number of
   *  steps that wanders binomially; `"random"` (the default): independent draws. */
  bool even = false;
  Body then_body;
  Body else_body;
};

/** @brief How a compute amount varies around its mean (format v2 `dist`): each execution multiplies the
 *  mean by a draw from the rank's seeded stream; every type has mean 1 (normal: up to its truncation). */
struct Distribution {
  enum class Type : std::uint8_t { NORMAL, LOGNORMAL, UNIFORM, EMPIRICAL };
  /** @brief Number of quantiles of an empirical distribution: p = 0, 0.1, ..., 1. */
  static constexpr std::size_t QUANTILES = 11;
  Type type = Type::NORMAL;
  Expr cv;                         ///< NORMAL, LOGNORMAL, UNIFORM: coefficient of variation (stddev / mean)
  std::vector<double> quantiles;   ///< EMPIRICAL: multipliers at p = 0, 0.1, ..., 1, non-decreasing, mean 1
  /** @brief `"draw": "same"`: every rank draws the same multipliers, the k-th execution of the block the k-th of the
   *  block's own stream (shared_stream), not of the rank's: iterations that differ by what they do (the levels of a
   *  V-cycle) differ alike at every rank, where independent draws would make a balanced program wait. */
  bool same_on_ranks = false;
};

/** @brief `compute`: local work, given in seconds or in flops (divided by the host's speed). */
struct Compute {
  Expr amount;                       ///< the mean amount when `dist` is set
  bool in_flops = false;
  std::optional<Distribution> dist;  ///< format v2: how the amount varies between executions
};

/** @brief Point-to-point kinds, MPI semantics (blocking or not). */
enum class P2PKind : std::uint8_t { SEND, RECV, ISEND, IRECV };

/** @brief `send`/`recv`/`isend`/`irecv`; peer in ranks of the communicator `comm` (world ranks on world). */
struct P2P {
  P2PKind kind;
  int comm = 0;         ///< 0: world; k: Skeleton::comms[k - 1] (format v3)
  Expr peer;            ///< destination (send) or source (recv); -1 is MPI_PROC_NULL (format v3): no message
  bool any_source = false;  ///< recv from any source ("peer": "any")
  Expr size_bytes;
  Expr tag;
  bool any_tag = false;     ///< recv with any tag ("tag": "any")
  int request = -1;         ///< request slot for isend/irecv ("req"), -1 when unnamed
};

/** @brief `wait` on a named request. */
struct Wait {
  int request = -1;
};

/** @brief `waitall`: waits for every outstanding request of the rank. */
struct WaitAll {};

/** @brief Collective kinds, built from point-to-point with standard algorithms in replay. */
enum class CollectiveKind : std::uint8_t { BARRIER, BCAST, REDUCE, ALLREDUCE, GATHER, SCATTER, ALLGATHER, ALLTOALL };

/** @brief A collective over the members of `comm` (all ranks on world); size is bytes per rank (per
 *  destination for alltoall); root is a rank of the communicator. */
struct Collective {
  CollectiveKind kind;
  int comm = 0;  ///< 0: world; k: Skeleton::comms[k - 1] (format v3)
  Expr root;
  Expr size_bytes;
};

/** @brief `region` (format v2): a named sequence of blocks, the ROUTINE node of MK's parse tree (a routine
 *  or phase the program marked with mktrace.h); runs its body once, reported as one block. */
struct Region {
  std::string name;
  Body body;
};

/** @brief One node of a program tree. */
struct Block {
  int index = 0;          ///< position in Skeleton::blocks (stable, skeleton order)
  std::variant<Loop, Branch, Compute, P2P, Wait, WaitAll, Collective, Region> op;
};

/** @brief Static facts about a block, for reports: its id, its kind, its phase, its place in the file. */
struct BlockInfo {
  std::string id;     ///< explicit "id" or the JSON pointer of the block
  std::string op;     ///< "loop", "region", "send", ...
  std::string phase;  ///< explicit or inherited "phase", "" when none
  std::string pointer;  ///< the JSON pointer of the block (= id unless the file gives one)
};

/** @brief A communicator declared in `comms` (format v3), made from its parent as MPI makes it. Every rank of
 *  the parent evaluates the declaration's expressions in its own frame, where `parent_rank` and `parent_size`
 *  are its rank in its instance of the parent and that instance's size. */
struct CommDecl {
  /** @brief MPI_Comm_split, MPI_Cart_create, MPI_Cart_sub, MPI_Comm_dup, MPI_Comm_create(_group), MPI_Graph_create. */
  enum class Kind : std::uint8_t { SPLIT, CART, CART_SUB, DUP, CREATE, GRAPH };
  std::string name;
  std::string pointer;        ///< JSON pointer of the declaration, for messages
  Kind kind = Kind::DUP;
  int parent = 0;             ///< 0: world; k: Skeleton::comms[k - 1] (declared before this one)
  Expr color, key;            ///< SPLIT: colour (negative: MPI_UNDEFINED) and key (default parent_rank)
  std::vector<Expr> dims;     ///< CART: the grid, row-major (the last dimension varies fastest)
  std::vector<bool> periods;  ///< CART: periodic dimensions
  std::vector<bool> remain;   ///< CART_SUB: the dimensions kept
  Expr members;               ///< CREATE: the parent rank of member `member` (0 .. size - 1), in new-rank order
  Expr size;                  ///< CREATE: number of members; GRAPH: number of nodes (default parent_size)
  int rank_slot = -1;         ///< frame slot of NAME.rank: this rank's rank in it, -1 when not a member
  int size_slot = -1;         ///< frame slot of NAME.size: its size, 0 when not a member
};

/** @brief A declared parameter (N, K, steps, ...) with an optional default and its documentation. */
struct Param {
  std::string name;
  std::optional<double> default_value;
  std::string doc;
};

/** @brief A named derived value (`let`), evaluated per rank in order before the program runs. */
struct Define {
  std::string name;
  int slot;
  Expr value;
  bool late = false;  ///< uses a communicator's rank or size (format v3): evaluated after the communicators
};

/** @brief The program of the ranks for which `ranks` holds (the first matching group wins). */
struct RankGroup {
  Expr ranks;
  Body body;
};

/** @brief A communication phase of the program (MK's communication phase graph, seed 000 s.3), as the
 *  skeleton builder found it; not used by replay, read by the analytic model and reports. */
struct PhaseDecl {
  std::string name;
  std::string type;         ///< "synchronous", "pipeline" or "collective"
  std::string collective;   ///< for a collective phase: its op ("allreduce", ...)
  Expr depth;               ///< D: edges of the longest processor chain (pipelines); 1 when synchronous
  Expr occurrences;         ///< width: how many times the phase runs (a pipeline's blocks)
  Expr senders;             ///< condition on rank: rank is in the send list SL
  Expr receivers;           ///< condition on rank: rank is in the receive list RL
  Expr overlap_s;           ///< computation overlapping one occurrence (s.4.1), seconds
  bool independent_of_next = false;  ///< RL(this) and SL(next phase) do not intersect: the two may overlap
};

/** @brief A whole skeleton. Frame layout for evaluation: slot 0 = P, slot 1 = rank, then parameters,
 *  defines and loop variables as `symbols` lists them. */
struct Skeleton {
  static constexpr int SLOT_P = 0;
  static constexpr int SLOT_RANK = 1;

  std::string file;  ///< where it was read from ("" if from a string)
  int version = 1;   ///< format version of the file (1, 2 or 3)
  std::string name;
  std::string description;
  std::vector<Param> params;    ///< in file order
  std::vector<Define> defines;  ///< in file order
  std::vector<RankGroup> groups;
  std::vector<CommDecl> comms;    ///< format v3 `comms`, in file order (communicator k is comms[k - 1]; 0 is world)
  int parent_rank_slot = -1;      ///< format v3: `parent_rank`, `parent_size`, `member` in communicator declarations
  int parent_size_slot = -1;
  int member_slot = -1;
  std::vector<PhaseDecl> phases;  ///< optional ("phases"), in program order
  std::vector<BlockInfo> blocks;  ///< indexed by Block::index
  SymbolTable symbols;
  int request_slots = 0;                  ///< number of distinct request names
  std::vector<std::string> request_names; ///< indexed by request slot
  std::vector<std::string> coins;         ///< names of the shared coins of `prob` branches (format v2), by index
  std::uint64_t hash = 0;                 ///< FNV-1a of the file's bytes, for provenance
};

/** @brief Names of the op kinds as the file spells them. */
const char* collective_name(CollectiveKind k);
const char* p2p_name(P2PKind k);

/** @brief Whether a collective has a root (bcast, reduce, gather, scatter). */
bool is_rooted(CollectiveKind k);

/** @brief "world" for 0, else the declared communicator's name. */
const std::string& comm_name(const Skeleton& skeleton, int comm);

/** @brief MPI_PROC_NULL as a peer value (format v3): the op sends or receives nothing and completes at once. */
inline constexpr int PROC_NULL_PEER = -1;

}  // namespace mksim::skeletons
