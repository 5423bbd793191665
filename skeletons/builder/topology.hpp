// Communicators and process topologies of traced runs (trace format v4 ARGS records) -> the skeleton's
// `comms` declarations (format v3) with exact expressions, and the translation of each call's world peers
// and roots into ranks of its communicator, written as exact expressions (Cartesian neighbours as
// cart_rank(cart_coord(...) + offset), PROC_NULL at non-periodic edges). Method: skeletons/builder/README.md,
// "Communicators and topologies".
#pragma once

#include "skeletons/builder/regress.hpp"
#include "skeletons/trace/trace.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mksim::skeletons::builder {

/** @brief One traced run as the topology analysis sees it: the trace, P and parameters (Vars), its name. */
struct TopoRun {
  const trace::Run* run = nullptr;
  Vars vars;
  std::string name;
};

/** @brief One observation of a rank-valued quantity of a call: the run, the calling rank (world), the
 *  call's communicator id (the tracer's, per rank) and the value as traced (a world rank, PROC_NULL). */
struct RankObs {
  const TopoRun* run = nullptr;
  int rank = 0;
  std::uint32_t comm = 0;
  int value = 0;
};

/** @brief The communicators of a set of runs of one program. */
class Topology {
 public:
  /** @brief Fits an integer quantity exactly when it can (the builder's fit_int): samples, where, field,
   *  whether rank may appear. */
  using FitInt = std::function<std::string(const std::vector<Sample>&, const std::string&, const char*, bool)>;

  Topology(const std::vector<TopoRun>& runs, std::vector<std::string> params);
  ~Topology();
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;

  /** @brief Whether any traced run made a communicator the skeleton declares. */
  bool any() const;
  /** @brief The `comms` object (declarations in creation order) and the `let` values they need (grid
   *  sides and coordinates of Cartesian communicators). Warnings and ambiguities are appended. */
  nlohmann::json declarations(const FitInt& fit, std::vector<std::string>& warnings);
  /** @brief `let` entries (name, expression) for the Cartesian communicators, after declarations(). */
  const std::vector<std::pair<std::string, std::string>>& lets() const;
  /** @brief The skeleton communicator (0 world, k the k-th declaration) of a rank's communicator id. */
  int decl_of(const TopoRun& run, int rank, std::uint32_t comm) const;
  /** @brief Its name ("world" for 0). */
  std::string name(int decl) const;
  /** @brief The size of the rank's instance of the communicator (P for world; 0 unknown). */
  int size_of(const TopoRun& run, int rank, std::uint32_t comm) const;
  /** @brief Every communicator a rank of a run is a member of: tracer id -> its members (world ranks, in
   *  communicator rank order); id 0 is world. */
  std::map<std::uint32_t, std::vector<int>> communicators(const TopoRun& run, int rank) const;
  /** @brief A world rank as a rank of the caller's instance of comm (PROC_NULL, ANY and NO_RANK kept as
   *  -1, -2, NO_RANK); -4 when the rank is not a member. */
  int to_comm_rank(const TopoRun& run, int rank, std::uint32_t comm, int world) const;
  /** @brief The axis of the Cartesian grid of `comm` (on world: of a grid of all ranks in order, made by
   *  MPI_Cart_create) along which `peer` (a world rank) is a neighbour of `rank`, the only coordinate in which the
   *  two differ (the rank itself: the one periodic axis of one rank, NPB MG's shifts at P = 4); -1 when there is
   *  no such grid, they differ in several, or the rank itself has no axis or several. */
  int cart_axis(const TopoRun& run, int rank, std::uint32_t comm, int peer) const;
  /** @brief Where several Cartesian offsets give every traced peer (a periodic side of 1 or 2 ranks, where +1 and
   *  -1 are one rank), which fit_rank takes: the first (`any`: fewest and smallest moves, + before -); the opposite
   *  of the previous fit's offset (`against_last`: MPI_Sendrecv's receive half, since with MPI_Cart_shift's (source,
   *  dest) a program sends one way and receives from the other, as NPB MG's comm3); the opposite of the last
   *  `against_last_send` fit's (a send: the second MPI_Sendrecv of a pair along one axis sends the other way); for a
   *  plain send (`pairs_send`) the opposite of the oldest plain receive's offset that no send has paired yet, and
   *  for a plain receive (`pairs_recv`) that of the oldest unpaired send, so that what one rank sends its
   *  neighbour receives at every P (LAMMPS' exchange: MPI_Irecv from +1, MPI_Send to -1); with none to pair with,
   *  the opposite of the last plain call of its kind along the same axis (the two directions of an axis in turn).
   *  The alternative, when it is not among them, is the first. */
  enum class Shift { any, against_last, against_last_send, pairs_send, pairs_recv };
  /** @brief An exact expression for a peer or root given as world ranks, relative to the communicator
   *  `decl` (every observation's communicator must be of that declaration): Cartesian neighbours,
   *  expressions of NAME.rank and NAME.size, else the builder's fit over world variables. "" when none is
   *  exact; `note` then says why. Remembers the Cartesian offset it chose, for `shift` of the fits after it. */
  std::string fit_rank(int decl, const std::vector<RankObs>& obs, const FitInt& fit, const std::string& where,
                       const char* field, bool& exact, std::string& note, Shift shift = Shift::any) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/** @brief Whether an expression has a number with a fractional part written in decimals (17.4852...): an
 *  integer quantity "fitted exactly" with such a coefficient is a coincidence of the traced runs (the exact
 *  search writes true fractions as p/q), not an integer elsewhere. */
bool has_decimal_literal(const std::string& text);

/** @brief An exact decomposition form for a positive integer: c times a product of the parameters' powers
 *  (-1..3) divided by one of 1, P, sqrt(P), P^(2/3), P^(1/3), the sides of MPI_Dims_create(P, 2 or 3) (the
 *  smaller side of MPI_Dims_create(P, 2) is the largest divisor of P up to sqrt(P)), P times a side or (3-D) P
 *  over a side; with `prefer_3d` (the program made a 3-D grid) the 3-D sides come right after 1 and P; c a
 *  fraction p/q with q <= 64; "" when none reproduces every sample. Never negative. With `accept`, the first
 *  such form that it accepts (several may reproduce the traced runs: N/dims(P, 2, 1) and N/dims(P, 3, 0) at
 *  P = 4, 8, 16). */
std::string decomposition_fit(const std::vector<Sample>& samples, const std::vector<std::string>& params,
                              const std::function<bool(const std::string&)>& accept = {}, bool prefer_3d = false);

/** @brief A message to a neighbour along one axis of a d-dimensional grid of blocks whose size is a mean over
 *  iterations (sizes as statistics: particles or atoms crossing a face): a face of the block, c X^(d-1) side / P
 *  (the block's extent X / side_i along every other axis), or that plus a constant e >= 0 (ghost layers, headers),
 *  X a parameter, `side` the grid's side along the axis (an expression of P and the parameters), c > 0 fitted by
 *  least squares of the relative errors. The form with the smaller largest relative error (the one coefficient
 *  unless the constant gains 1%), the parameter that fits best; nullopt when no parameter gives a positive c or the
 *  side does not evaluate. A face needs only the runs of one P to scale to every P: a regression of sizes seen at
 *  one P has no P in it (LAMMPS' first swap runs only where the grid has two ranks along x). */
struct FaceFit {
  std::string expr;
  double max_rel_error = 0;
};
std::optional<FaceFit> face_fit(const std::vector<Sample>& samples, const std::vector<std::string>& params,
                                const std::string& side, int ndims);

/** @brief The expression a let of the skeleton stands for (`lets`: Topology::lets()), or `name` itself when no let
 *  has that name (a side written as a number, a name that is not a let). */
std::string let_value(const std::string& name, const std::vector<std::pair<std::string, std::string>>& lets);

/** @brief The axis and the side of a Cartesian neighbour written by fit_rank, `cart_rank(x0, .., x(d-1), n0, ..,
 *  n(d-1))` with exactly one coordinate moved (an offset), the side resolved through `lets` (name -> expression):
 *  {side expression, d}; {"", 0} for any other peer. */
std::pair<std::string, int> cart_neighbour_side(const std::string& peer, const std::vector<std::pair<std::string, std::string>>& lets);

/** @brief A block owner's ratio: the first num / den, each a product of at most two of P, the parameters, the
 *  sides of MPI_Dims_create(P, 2 or 3) and the blocks ceil(parameter / side) (fewest factors first), whose
 *  values at every observation's variables `accept` takes (num >= 0, den > 0, both integers); empty texts when
 *  none (SUMMA's panel owner floor(k nb / ceil(N / Py)): num "nb", den "ceil(N / dims(P, 2, 1))"). */
std::pair<std::string, std::string> block_ratio_fit(
    const std::vector<Vars>& vars, const std::vector<std::string>& params,
    const std::function<bool(std::size_t, std::int64_t, std::int64_t)>& accept);

/** @brief A peer of a program that numbers its ranks on a grid it computes itself (no topology call
 *  traced: SimGrid TI traces, codes that factor P): a neighbour at offsets (-1..1 per dimension, not
 *  periodic) or the transpose partner of a non-square 2-D grid (NPB CG), on the grids of MPI_Dims_create(P,
 *  2) (the longer side varying fastest, or row-major), of MPI_Dims_create(P, 3) (cart_rank/cart_coord) and
 *  the power-of-two Px x Py grid; the first that reproduces every sample exactly, "" when none does.
 *  Forms can coincide at the traced P (a 3-D neighbour is `rank + dims(P, 2, 0) - 1` at P = 8, 12, 18, 27):
 *  `other`, when given, gets the first later form that fits too but names another rank at some P of 32,
 *  48, 64, 96, 128 (with the first sample's parameters), "" when there is none. `grid3_only`: the forms of
 *  MPI_Dims_create(P, 3)'s grid alone (a program whose other peers only that grid gives). `prefer`: that grid's
 *  neighbour at this offset is tried first (the direction of a shift on sides too short to tell +1 from -1);
 *  `chosen` gets the offset of the form returned on that grid, {0, 0, 0} for any other form. */
std::string grid_rank_fit(const std::vector<Sample>& samples, const std::vector<std::string>& params,
                          std::string* other = nullptr, bool grid3_only = false,
                          const std::array<int, 3>* prefer = nullptr, std::array<int, 3>* chosen = nullptr);

/** @brief `rank` and `P` in an expression replaced (whole words) by `rank_to` and `size_to`. */
std::string rename_rank_and_size(const std::string& text, const std::string& rank_to, const std::string& size_to);

}  // namespace mksim::skeletons::builder
