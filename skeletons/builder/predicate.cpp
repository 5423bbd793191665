// Rank-group predicates by exact set cover: the atoms true on every member of a group each exclude some
// non-members; a predicate is a smallest set of atoms excluding all of them (a conjunction), or two such
// sets for two parts of the members (a disjunction). Samples and atoms are bitsets over (run, rank).
#include "skeletons/builder/predicate.hpp"

#include "skeletons/expr.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace mksim::skeletons::builder {

namespace {

using Word = std::uint64_t;
constexpr std::size_t NPOS = static_cast<std::size_t>(-1);

// A fixed-size bitset whose bits past size() stay zero, so equality and emptiness are word-wise.
struct Bits {
  std::vector<Word> w;
  Bits() = default;
  explicit Bits(std::size_t n) : w((n + 63) / 64, 0) {}
  static Bits ones(std::size_t n) {
    Bits b(n);
    for (std::size_t i = 0; i < n; ++i) b.set(i);
    return b;
  }
  void set(std::size_t i) { w[i >> 6] |= Word{1} << (i & 63); }
  bool test(std::size_t i) const { return (w[i >> 6] >> (i & 63)) & 1U; }
  bool none() const {
    for (Word x : w)
      if (x) return false;
    return true;
  }
  std::size_t count() const {
    std::size_t c = 0;
    for (Word x : w) c += static_cast<std::size_t>(std::popcount(x));
    return c;
  }
  std::size_t next(std::size_t from) const {  // first set bit >= from, or NPOS
    std::size_t k = from >> 6;
    if (k >= w.size()) return NPOS;
    Word x = w[k] & (~Word{0} << (from & 63));
    while (true) {
      if (x) return (k << 6) + static_cast<std::size_t>(std::countr_zero(x));
      if (++k >= w.size()) return NPOS;
      x = w[k];
    }
  }
  std::size_t first() const { return next(0); }
  Bits& operator&=(const Bits& o) {
    for (std::size_t i = 0; i < w.size(); ++i) w[i] &= o.w[i];
    return *this;
  }
  Bits& operator|=(const Bits& o) {
    for (std::size_t i = 0; i < w.size(); ++i) w[i] |= o.w[i];
    return *this;
  }
  Bits& remove(const Bits& o) {  // this &= ~o
    for (std::size_t i = 0; i < w.size(); ++i) w[i] &= ~o.w[i];
    return *this;
  }
  bool subset_of(const Bits& o) const {
    for (std::size_t i = 0; i < w.size(); ++i)
      if (w[i] & ~o.w[i]) return false;
    return true;
  }
  bool operator==(const Bits&) const = default;
  bool operator<(const Bits& o) const { return w < o.w; }
};

Bits operator&(Bits a, const Bits& b) { return a &= b; }
Bits minus(Bits a, const Bits& b) { return a.remove(b); }

// ---- the vocabulary: rank terms, scale terms, atoms ----

enum class Op : std::uint8_t { EQ, NE, GT, GE, LT, LE };
constexpr const char* OP_TEXT[] = {"==", "!=", ">", ">=", "<", "<="};
constexpr double OP_COST[] = {1, 1.5, 1, 1.5, 1, 1.5};  // prefer "rank > 0" to "rank != 0", "rank >= 1"

bool compare(double a, Op op, double b) {
  switch (op) {
    case Op::EQ: return a == b;
    case Op::NE: return a != b;
    case Op::GT: return a > b;
    case Op::GE: return a >= b;
    case Op::LT: return a < b;
    case Op::LE: return a <= b;
  }
  return false;
}

// Which scale terms a rank term is compared with: bounded terms only with what can matter to them.
// Z is the third coordinate of a 3-D grid; DIAG the block diagonal of a non-square 2-D grid (compared
// with 0 only); SIDE a grid side compared with another (a condition on P alone, such as "not square"); RUN
// P itself compared with 1 ("P > 1": what a run of one rank, which has no peer, skips, such as a halo's
// MPI_Waitall; a side comparison that happens to separate P = 1 from the other traced P, such as
// "dims(P, 2, 0) > dims(P, 2, 1)" at P = 1, 8, 27, is false at P = 64), and so is a side of a grid other
// than Px x Py ("dims(P, 3, 2) > 1": the grid has a third dimension).
enum class RankKind { ANY, REVERSE, X, Y, Z, BIT, DIAG, SIDE, RUN, OTHER };
enum ScaleUse : unsigned {
  FOR_ANY = 1, FOR_REVERSE = 2, FOR_X = 4, FOR_Y = 8, FOR_BIT = 16, FOR_OTHER = 32, FOR_Z = 64, FOR_DIAG = 128, FOR_SIDE = 256,
  FOR_RUN = 512
};
enum class OpSet { ALL, CONSTANT, MINUS_ONE };  // constants: == != > <; q-1 next to q: == != < >=

struct RankTerm {
  Feature feature;
  double cost;
  RankKind kind;
};

struct ScaleTerm {
  Feature feature;
  double cost;
  unsigned use;
  OpSet ops;
};

struct Atom {
  int r;
  int q;
  Op op;
  double cost;
  std::string text;
};

// A process grid other than the builder's Px x Py, tried when no predicate fits on that one: the
// coordinates of a rank (expressions of rank and P), the sides (expressions of P), optionally the block
// diagonal of a non-square 2-D grid (NPB CG: the ranks whose transpose partner is themselves).
struct GridVocabulary {
  std::string label;                  // for messages
  std::vector<std::string> coords;    // coordinate d of rank, d = 0, 1(, 2)
  std::vector<std::string> sides;     // side d
  std::string diag;                   // "" when none
};

const std::vector<GridVocabulary>& grid_vocabularies() {
  static const std::vector<GridVocabulary> grids = [] {
    const std::string a = "dims(P, 2, 0)", b = "dims(P, 2, 1)";
    std::vector<GridVocabulary> g;
    // NPB LU and CG: the longer side (2^ceil(k/2) for P = 2^k, = MPI_Dims_create(P, 2)[0]) varies fastest.
    g.push_back({"x = rank % " + a + ", y = floor(rank / " + a + ") on the " + a + " x " + b + " grid",
                 {"rank % " + a, "floor(rank / " + a + ")"},
                 {a, b},
                 "floor((rank % " + a + ") / (" + a + " / " + b + ")) - floor(rank / " + a + ")"});
    // MPI_Cart_create of MPI_Dims_create(P, 2) (row-major: the last coordinate varies fastest); also
    // codes that factor P themselves with the largest divisor of P up to sqrt(P) (= dims(P, 2, 1)).
    g.push_back({"cart_coord(rank, d, " + a + ", " + b + ", 1), d = 0, 1",
                 {"floor(rank / " + b + ")", "rank % " + b},
                 {a, b},
                 ""});
    // MPI_Cart_create of MPI_Dims_create(P, 3), cubes of ranks included.
    GridVocabulary three{"cart_coord(rank, d, dims(P, 3, 0), dims(P, 3, 1), dims(P, 3, 2)), d = 0, 1, 2", {}, {}, ""};
    for (int d = 0; d < 3; ++d) {
      three.coords.push_back("cart_coord(rank, " + std::to_string(d) + ", dims(P, 3, 0), dims(P, 3, 1), dims(P, 3, 2))");
      three.sides.push_back("dims(P, 3, " + std::to_string(d) + ")");
    }
    g.push_back(three);
    return g;
  }();
  return grids;
}

// Costs approximate how much a reader must parse, with the grid sides counted as one name each (a
// skeleton names them Px, Py); small constants other than 0 and 1 cost more because at small P they
// are often coincidences of scale.
class Vocabulary {
 public:
  explicit Vocabulary(const std::vector<std::string>& params, const GridVocabulary* grid = nullptr) {
    std::vector<std::string> names{"P", "rank"};
    names.insert(names.end(), params.begin(), params.end());
    const std::string px = GRID_PX, py = GRID_PY;
    if (grid == nullptr) {
      for (auto& f : rank_features(params)) {
        const std::string& t = f.text();
        RankKind kind = RankKind::OTHER;
        double cost = 6;
        if (t == "rank") kind = RankKind::ANY, cost = 1;
        else if (t == "P-1-rank") kind = RankKind::REVERSE, cost = 6;
        else if (t == "rank % " + px) kind = RankKind::X, cost = 3;
        else if (t == "floor(rank / " + px + ")") kind = RankKind::Y, cost = 3;
        else if (t == "rank % 2") kind = RankKind::BIT, cost = 3;
        else if (t.ends_with("% 2")) kind = RankKind::BIT, cost = 7;  // checkerboard colour
        for (const auto& u : f.uses())
          if (u != "P" && u != "rank") rank_reads_params_ = true;
        rank.push_back({std::move(f), cost, kind});
      }
      rank.push_back({Feature("P", names, true), 2, RankKind::RUN});
    } else {
      auto add_rank = [&](const std::string& text, double cost, RankKind kind) {
        rank.push_back({Feature(text, names, true), cost, kind});
      };
      add_rank("rank", 1, RankKind::ANY);
      add_rank("P-1-rank", 6, RankKind::REVERSE);
      constexpr RankKind COORD[] = {RankKind::X, RankKind::Y, RankKind::Z};
      for (std::size_t d = 0; d < grid->coords.size() && d < 3; ++d) add_rank(grid->coords[d], 3, COORD[d]);
      add_rank("rank % 2", 3, RankKind::BIT);
      if (!grid->diag.empty()) add_rank(grid->diag, 7, RankKind::DIAG);
      if (grid->sides.size() == 2) add_rank(grid->sides[0], 4, RankKind::SIDE);
      add_rank("P", 2, RankKind::RUN);
      // "the grid has more than one rank along d": codes that exchange along a dimension only when it has
      // several ranks (LAMMPS' swaps skip a dimension whose neighbour is the rank itself) run those calls
      // from the P where that side first exceeds 1
      for (const std::string& side : grid->sides) add_rank(side, 4, RankKind::RUN);
    }
    const unsigned all = FOR_ANY | FOR_REVERSE | FOR_X | FOR_Y | FOR_Z | FOR_OTHER;
    auto add = [&](const std::string& text, double cost, unsigned use, OpSet ops) {
      scale.push_back({Feature(text, names, true), cost, use, ops});
    };
    add("0", 1, all | FOR_BIT | FOR_DIAG, OpSet::CONSTANT);
    add("1", 1.25, all | FOR_BIT | FOR_RUN, OpSet::CONSTANT);
    add("2", 4.25, all, OpSet::CONSTANT);
    add("3", 4.5, all, OpSet::CONSTANT);
    add("P", 1, FOR_ANY, OpSet::ALL);
    add("P - 1", 3, FOR_ANY, OpSet::MINUS_ONE);
    add("P/2", 3, FOR_ANY, OpSet::ALL);
    add("P/2 - 1", 5, FOR_ANY, OpSet::MINUS_ONE);
    if (grid == nullptr) {
      add(px, 2, FOR_ANY | FOR_REVERSE, OpSet::ALL);
      add(px + " - 1", 4, FOR_ANY | FOR_REVERSE | FOR_X, OpSet::MINUS_ONE);
      add(py, 2, FOR_ANY, OpSet::ALL);
      add(py + " - 1", 4, FOR_ANY | FOR_Y, OpSet::MINUS_ONE);
      add("floor(sqrt(P))", 4, FOR_ANY, OpSet::ALL);
    } else {
      constexpr unsigned COORD_USE[] = {FOR_X, FOR_Y, FOR_Z};
      for (std::size_t d = 0; d < grid->sides.size() && d < 3; ++d) {
        add(grid->sides[d], 2, FOR_ANY | (d == 1 && grid->sides.size() == 2 ? FOR_SIDE : 0U), OpSet::ALL);
        add(grid->sides[d] + " - 1", 4, FOR_ANY | COORD_USE[d], OpSet::MINUS_ONE);
      }
    }
    for (const auto& p : params) add(p, 1.5, FOR_ANY | FOR_REVERSE | FOR_X | FOR_Y | FOR_Z, OpSet::ALL);

    // Atoms in canonical order: by rank term, then lower bounds before upper bounds, then scale term.
    for (int r = 0; r < static_cast<int>(rank.size()); ++r) {
      const unsigned need = rank_use(rank[r].kind);
      for (int o = 0; o < 6; ++o) {
        const Op op = static_cast<Op>(o);
        if (rank[r].kind == RankKind::BIT && op != Op::EQ) continue;
        if (rank[r].kind == RankKind::DIAG && op != Op::EQ && op != Op::NE) continue;
        if (rank[r].kind == RankKind::SIDE && op != Op::EQ && op != Op::NE && op != Op::GT) continue;
        if (rank[r].kind == RankKind::RUN && op != Op::EQ && op != Op::GT) continue;
        for (int q = 0; q < static_cast<int>(scale.size()); ++q) {
          const ScaleTerm& s = scale[q];
          if (!(s.use & need)) continue;
          if (s.ops == OpSet::CONSTANT && (op == Op::GE || op == Op::LE)) continue;
          if (s.ops == OpSet::MINUS_ONE && (op == Op::GT || op == Op::LE)) continue;
          atoms.push_back({r, q, op, rank[r].cost + s.cost + OP_COST[o],
                           rank[r].feature.text() + " " + OP_TEXT[o] + " " + s.feature.text()});
        }
      }
    }
  }

  bool rank_reads_params() const { return rank_reads_params_; }

  std::vector<RankTerm> rank;
  std::vector<ScaleTerm> scale;
  std::vector<Atom> atoms;

 private:
  static unsigned rank_use(RankKind k) {
    switch (k) {
      case RankKind::ANY: return FOR_ANY;
      case RankKind::REVERSE: return FOR_REVERSE;
      case RankKind::X: return FOR_X;
      case RankKind::Y: return FOR_Y;
      case RankKind::Z: return FOR_Z;
      case RankKind::BIT: return FOR_BIT;
      case RankKind::DIAG: return FOR_DIAG;
      case RankKind::SIDE: return FOR_SIDE;
      case RankKind::RUN: return FOR_RUN;
      case RankKind::OTHER: return FOR_OTHER;
    }
    return 0;
  }
  bool rank_reads_params_ = false;
};

// The terms' values at a list of points (runs); samples are (point, rank) in point order.
struct Values {
  std::vector<Vars> points;
  std::vector<std::size_t> start;          // start[i]: first sample of point i; back(): sample count
  std::vector<std::vector<double>> rank;   // [rank term][sample]
  std::vector<std::vector<double>> scale;  // [scale term][point]
  std::size_t samples() const { return start.back(); }
  std::size_t point_of(std::size_t sample) const {
    return static_cast<std::size_t>(std::upper_bound(start.begin(), start.end(), sample) - start.begin()) - 1;
  }
};

int ranks_of(const Vars& v) { return static_cast<int>(v.at("P")); }

Values evaluate(const Vocabulary& vocab, std::vector<Vars> points) {
  Values out;
  out.points = std::move(points);
  out.start.push_back(0);
  for (const auto& p : out.points) out.start.push_back(out.start.back() + static_cast<std::size_t>(ranks_of(p)));
  out.rank.assign(vocab.rank.size(), std::vector<double>(out.samples()));
  out.scale.assign(vocab.scale.size(), std::vector<double>(out.points.size()));
  std::map<int, std::size_t> first_with_P;  // rank terms that read only P and rank are shared
  for (std::size_t i = 0; i < out.points.size(); ++i) {
    const Vars& p = out.points[i];
    for (std::size_t q = 0; q < vocab.scale.size(); ++q) out.scale[q][i] = vocab.scale[q].feature.eval(p);
    const int P = ranks_of(p);
    const auto [it, fresh] = first_with_P.emplace(P, i);
    if (!fresh && !vocab.rank_reads_params()) {
      for (auto& col : out.rank)
        std::copy_n(col.begin() + static_cast<std::ptrdiff_t>(out.start[it->second]), P,
                    col.begin() + static_cast<std::ptrdiff_t>(out.start[i]));
      continue;
    }
    Vars v = p;
    double& rank = v["rank"];
    for (int r = 0; r < P; ++r) {
      rank = r;
      for (std::size_t t = 0; t < vocab.rank.size(); ++t)
        out.rank[t][out.start[i] + static_cast<std::size_t>(r)] = vocab.rank[t].feature.eval(v);
    }
  }
  return out;
}

Bits atom_bits(const Atom& a, const Values& val) {
  Bits b(val.samples());
  const auto& col = val.rank[static_cast<std::size_t>(a.r)];
  for (std::size_t i = 0; i < val.points.size(); ++i) {
    const double q = val.scale[static_cast<std::size_t>(a.q)][i];
    for (std::size_t s = val.start[i]; s < val.start[i + 1]; ++s)
      if (compare(col[s], a.op, q)) b.set(s);
  }
  return b;
}

// ---- minimum covers ----

using Conj = std::vector<int>;  // atom ids, ascending (the canonical order of the text)
using Dnf = std::vector<Conj>;  // terms, ascending

struct CoverSet {
  bool pure = false;                       // some conjunction excludes every non-member
  std::vector<Conj> covers;                // minimum conjunctions (class representatives)
  std::map<int, std::vector<int>> mates;   // representative -> atoms with the same exclusions
  Bits leak;                               // impure: non-members the tightest conjunction keeps
  std::size_t greedy_size = 0;             // pure: atoms of the greedy cover (covers empty: > limit)
};

class CoverSearch {
 public:
  CoverSearch(const std::vector<Bits>& excl, const std::vector<double>& cost, std::size_t universe,
              const PredicateOptions& opt)
      : excl_(excl), cost_(cost), n_(universe), opt_(opt) {}

  // Minimum covers as sorted class lists, cheapest first; none when even the greedy cover is longer
  // than max_conjunction and the exact search finds nothing shorter.
  std::vector<std::vector<int>> run() {
    const std::vector<int> greedy = greedy_cover();
    greedy_size_ = greedy.size();
    const auto limit = static_cast<std::size_t>(std::max(opt_.max_conjunction, 1));
    std::vector<std::vector<int>> found = exact(std::min(greedy.size(), limit));
    if (found.empty() && greedy.size() <= limit) found.push_back(greedy);
    if (found.empty()) return found;
    expand(found);
    improve(found);
    std::sort(found.begin(), found.end(), [&](const auto& a, const auto& b) {
      return std::make_pair(total(a), a) < std::make_pair(total(b), b);
    });
    return found;
  }
  std::size_t greedy_size() const { return greedy_size_; }

 private:
  double total(const std::vector<int>& c) const {
    double s = 0;
    for (int k : c) s += cost_[static_cast<std::size_t>(k)];
    return s;
  }
  bool covers_all(const std::vector<int>& c, int skip = -1) const {
    Bits u(n_);
    for (std::size_t i = 0; i < c.size(); ++i)
      if (static_cast<int>(i) != skip) u |= excl_[static_cast<std::size_t>(c[i])];
    return Bits::ones(n_).subset_of(u);
  }

  // Greedy (largest new exclusion first), then made irredundant dropping the costliest first.
  std::vector<int> greedy_cover() const {
    Bits unc = Bits::ones(n_);
    std::vector<int> chosen;
    while (!unc.none()) {
      int best = -1;
      std::size_t gain = 0;
      for (std::size_t c = 0; c < excl_.size(); ++c) {
        const std::size_t g = (excl_[c] & unc).count();
        if (g > gain || (g == gain && g > 0 && cost_[c] < cost_[static_cast<std::size_t>(best)])) best = static_cast<int>(c), gain = g;
      }
      if (best < 0) break;  // cannot happen: the caller checked that the classes cover everything
      chosen.push_back(best);
      unc.remove(excl_[static_cast<std::size_t>(best)]);
    }
    std::vector<int> by_cost = chosen;
    std::sort(by_cost.begin(), by_cost.end(), [&](int a, int b) { return cost_[static_cast<std::size_t>(a)] > cost_[static_cast<std::size_t>(b)]; });
    for (int c : by_cost) {
      std::vector<int> without;
      for (int k : chosen)
        if (k != c) without.push_back(k);
      if (covers_all(without)) chosen = without;
    }
    std::sort(chosen.begin(), chosen.end());
    return chosen;
  }

  // Exact search with iterative deepening over the non-dominated classes, branching on the uncovered
  // element with the fewest coverers (elements are renumbered so that it is the lowest set bit).
  std::vector<std::vector<int>> exact(std::size_t max_k) {
    std::vector<int> nd;  // non-dominated classes
    for (std::size_t c = 0; c < excl_.size(); ++c) {
      bool dominated = false;
      for (std::size_t d = 0; d < excl_.size() && !dominated; ++d)
        dominated = d != c && excl_[c].subset_of(excl_[d]) &&
                    (excl_[c] != excl_[d] || d < c);
      if (!dominated) nd.push_back(static_cast<int>(c));
    }
    std::vector<std::size_t> count(n_, 0);
    for (int c : nd)
      for (std::size_t j = excl_[static_cast<std::size_t>(c)].first(); j != NPOS; j = excl_[static_cast<std::size_t>(c)].next(j + 1)) ++count[j];
    std::vector<std::size_t> order(n_);
    for (std::size_t j = 0; j < n_; ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return count[a] < count[b]; });
    std::vector<std::size_t> pos(n_);
    for (std::size_t k = 0; k < n_; ++k) pos[order[k]] = k;
    std::sort(nd.begin(), nd.end(), [&](int a, int b) {
      return std::make_pair(cost_[static_cast<std::size_t>(a)], a) < std::make_pair(cost_[static_cast<std::size_t>(b)], b);
    });
    ex_.assign(nd.size(), Bits(n_));
    coverers_.assign(n_, {});
    for (std::size_t i = 0; i < nd.size(); ++i) {
      const Bits& e = excl_[static_cast<std::size_t>(nd[i])];
      for (std::size_t j = e.first(); j != NPOS; j = e.next(j + 1)) {
        ex_[i].set(pos[j]);
        coverers_[pos[j]].push_back(static_cast<int>(i));
      }
    }
    nd_ = nd;
    std::vector<std::vector<int>> out;
    for (std::size_t k = 1; k <= max_k; ++k) {
      found_.clear();
      nodes_ = 0;
      stack_.assign(k + 1, Bits(n_));
      stack_[0] = Bits::ones(n_);
      chosen_.clear();
      dfs(0, k);
      if (!found_.empty()) {
        out.assign(found_.begin(), found_.end());
        break;
      }
      if (nodes_ > opt_.max_nodes) break;  // undecided: fall back on the greedy cover
    }
    return out;
  }

  void dfs(std::size_t depth, std::size_t k) {
    if (++nodes_ > opt_.max_nodes || found_.size() >= 64) return;
    const std::size_t e = stack_[depth].first();
    if (e == NPOS) {
      std::vector<int> c;
      for (int i : chosen_) c.push_back(nd_[static_cast<std::size_t>(i)]);
      std::sort(c.begin(), c.end());
      found_.insert(c);
      return;
    }
    if (depth == k) return;
    for (int i : coverers_[e]) {
      if (depth + 1 == k && !stack_[depth].subset_of(ex_[static_cast<std::size_t>(i)])) continue;
      stack_[depth + 1] = stack_[depth];
      stack_[depth + 1].remove(ex_[static_cast<std::size_t>(i)]);
      chosen_.push_back(i);
      dfs(depth + 1, k);
      chosen_.pop_back();
    }
  }

  // Other covers of the same size by swapping one class at a time (brings back dominated classes,
  // which may be cheaper or differ elsewhere).
  void expand(std::vector<std::vector<int>>& covers) const {
    constexpr std::size_t CAP = 256;
    std::set<std::vector<int>> seen(covers.begin(), covers.end());
    const Bits all = Bits::ones(n_);
    for (std::size_t idx = 0; idx < covers.size() && covers.size() < CAP; ++idx) {
      const std::vector<int> cover = covers[idx];
      for (std::size_t i = 0; i < cover.size() && covers.size() < CAP; ++i) {
        Bits u(n_);
        for (std::size_t j = 0; j < cover.size(); ++j)
          if (j != i) u |= excl_[static_cast<std::size_t>(cover[j])];
        const Bits missing = minus(all, u);
        for (std::size_t c = 0; c < excl_.size() && covers.size() < CAP; ++c) {
          if (std::find(cover.begin(), cover.end(), static_cast<int>(c)) != cover.end()) continue;
          if (!missing.subset_of(excl_[c])) continue;
          std::vector<int> next = cover;
          next[i] = static_cast<int>(c);
          std::sort(next.begin(), next.end());
          if (seen.insert(next).second) covers.push_back(next);
        }
      }
    }
  }

  // Cheapest-swap descent from the cheapest cover found, in case the cap cut the expansion short.
  void improve(std::vector<std::vector<int>>& covers) const {
    std::vector<int> best = *std::min_element(covers.begin(), covers.end(), [&](const auto& a, const auto& b) { return total(a) < total(b); });
    const Bits all = Bits::ones(n_);
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t i = 0; i < best.size(); ++i) {
        Bits u(n_);
        for (std::size_t j = 0; j < best.size(); ++j)
          if (j != i) u |= excl_[static_cast<std::size_t>(best[j])];
        const Bits missing = minus(all, u);
        for (std::size_t c = 0; c < excl_.size(); ++c)
          if (cost_[c] < cost_[static_cast<std::size_t>(best[i])] && missing.subset_of(excl_[c]) &&
              std::find(best.begin(), best.end(), static_cast<int>(c)) == best.end()) {
            best[i] = static_cast<int>(c);
            changed = true;
          }
      }
    }
    std::sort(best.begin(), best.end());
    if (std::find(covers.begin(), covers.end(), best) == covers.end()) covers.push_back(best);
  }

  const std::vector<Bits>& excl_;
  const std::vector<double>& cost_;
  std::size_t n_;
  const PredicateOptions& opt_;
  std::vector<int> nd_;
  std::vector<Bits> ex_;
  std::vector<std::vector<int>> coverers_;
  std::vector<Bits> stack_;
  std::vector<int> chosen_;
  std::set<std::vector<int>> found_;
  std::size_t nodes_ = 0;
  std::size_t greedy_size_ = 0;
};

// The seen data: every atom's bits over the samples of the runs.
struct Seen {
  const Vocabulary& vocab;
  Values values;
  std::vector<Bits> bits;      // per atom
  std::vector<bool> usable;    // neither always true nor always false on the samples
  Bits member, nonmember;
};

// Minimum conjunctions true on every sample of `S` and false on every non-member.
CoverSet min_covers(const Seen& seen, const Bits& S, const PredicateOptions& opt) {
  CoverSet out;
  std::vector<std::size_t> nidx;
  for (std::size_t s = seen.nonmember.first(); s != NPOS; s = seen.nonmember.next(s + 1)) nidx.push_back(s);
  Bits leak = seen.nonmember;
  std::map<Bits, std::size_t> class_of;
  std::vector<Bits> excl;
  std::vector<std::vector<int>> members;
  for (std::size_t a = 0; a < seen.bits.size(); ++a) {
    if (!seen.usable[a] || !S.subset_of(seen.bits[a])) continue;
    leak &= seen.bits[a];
    Bits e(nidx.size());
    for (std::size_t j = 0; j < nidx.size(); ++j)
      if (!seen.bits[a].test(nidx[j])) e.set(j);
    if (e.none()) continue;
    const auto [it, fresh] = class_of.emplace(e, excl.size());
    if (fresh) excl.push_back(e), members.emplace_back();
    members[it->second].push_back(static_cast<int>(a));
  }
  if (!leak.none()) {
    out.leak = leak;
    return out;
  }
  out.pure = true;
  if (nidx.empty()) {
    out.covers.push_back({});
    return out;
  }
  std::vector<double> cost;
  std::vector<int> rep;
  for (auto& m : members) {
    std::sort(m.begin(), m.end(), [&](int a, int b) {
      return std::make_pair(seen.vocab.atoms[static_cast<std::size_t>(a)].cost, a) <
             std::make_pair(seen.vocab.atoms[static_cast<std::size_t>(b)].cost, b);
    });
    rep.push_back(m.front());
    cost.push_back(seen.vocab.atoms[static_cast<std::size_t>(m.front())].cost);
    out.mates[m.front()] = std::vector<int>(m.begin() + 1, m.end());
  }
  CoverSearch search(excl, cost, nidx.size(), opt);
  const auto covers = search.run();
  out.greedy_size = search.greedy_size();
  for (const auto& cover : covers) {
    Conj c;
    for (int k : cover) c.push_back(rep[static_cast<std::size_t>(k)]);
    std::sort(c.begin(), c.end());
    out.covers.push_back(c);
  }
  return out;
}

// ---- candidates, text, probes ----

struct Candidate {
  Dnf dnf;
  std::vector<const CoverSet*> sets;  // per term: where its atoms' mates are
  std::size_t size = 0;
  double cost = 0;
  std::string text;
};

std::string conj_text(const Vocabulary& v, const Conj& c) {
  if (c.empty()) return "1";
  std::string s;
  for (int a : c) s += (s.empty() ? "" : " && ") + v.atoms[static_cast<std::size_t>(a)].text;
  return s;
}

Candidate make_candidate(const Vocabulary& v, Dnf dnf, std::vector<const CoverSet*> sets) {
  Candidate c;
  // Terms in canonical order, their cover sets following them.
  std::vector<std::size_t> idx(dnf.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return dnf[a] < dnf[b]; });
  for (std::size_t i : idx) c.dnf.push_back(dnf[i]), c.sets.push_back(sets[i]);
  for (const auto& t : c.dnf) {
    c.size += t.size();
    for (int a : t) c.cost += v.atoms[static_cast<std::size_t>(a)].cost;
    const std::string tt = conj_text(v, t);
    if (!c.text.empty()) c.text += " || ";
    c.text += (c.dnf.size() > 1 && t.size() > 1) ? "(" + tt + ")" : tt;
  }
  c.cost += static_cast<double>(c.dnf.size() - 1);
  return c;
}

bool cheaper(const Candidate& a, const Candidate& b) {
  return std::tie(a.size, a.cost, a.text) < std::tie(b.size, b.cost, b.text);
}

std::string format_number(double x) {
  char buf[32];
  if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", x);
  else std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

bool is_pow2(int p) { return p > 0 && (p & (p - 1)) == 0; }

// Unseen (P, parameters): P = 2..64, then 2^k and 3*2^k up to the limit, with each seen parameter set.
std::vector<Vars> probe_points(const std::vector<RunLabels>& runs, double max_probe_P) {
  std::vector<Vars> paramsets;
  std::set<Vars> seen;
  int max_P = 1;
  for (const auto& r : runs) {
    seen.insert(r.vars);
    max_P = std::max(max_P, ranks_of(r.vars));
    Vars p = r.vars;
    p.erase("P");
    if (std::find(paramsets.begin(), paramsets.end(), p) == paramsets.end()) paramsets.push_back(p);
  }
  const double limit = max_probe_P > 0 ? max_probe_P : std::max(256.0, 4.0 * max_P);
  std::set<int> Ps;
  for (int p = 2; p <= 64 && p <= limit; ++p) Ps.insert(p);
  for (double p = 2; p <= limit; p *= 2) {
    Ps.insert(static_cast<int>(p));
    if (3 * p / 2 <= limit) Ps.insert(static_cast<int>(3 * p / 2));
  }
  std::vector<Vars> out;
  for (int P : Ps)
    for (const auto& ps : paramsets) {
      Vars v = ps;
      v["P"] = P;
      if (!seen.count(v)) out.push_back(v);
    }
  return out;
}

std::string leak_text(const Values& val, const Bits& leak) {
  std::string s;
  int shown = 0;
  for (std::size_t i = 0; i < val.points.size() && shown < 3; ++i) {
    const int P = ranks_of(val.points[i]);
    std::vector<bool> m(static_cast<std::size_t>(P));
    bool any = false;
    for (int r = 0; r < P; ++r)
      if (leak.test(val.start[i] + static_cast<std::size_t>(r))) m[static_cast<std::size_t>(r)] = true, any = true;
    if (!any) continue;
    s += (shown++ ? "; " : "") + describe_vars(val.points[i]) + ": " + describe_ranks(m);
  }
  return s;
}

std::vector<std::string> validate(const std::vector<RunLabels>& runs) {
  if (runs.empty()) throw std::invalid_argument("rank group predicate: no runs");
  std::vector<std::string> params;
  for (const auto& [k, v] : runs.front().vars)
    if (k != "P") params.push_back(k);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Vars& v = runs[i].vars;
    const auto it = v.find("P");
    if (it == v.end()) throw std::invalid_argument("rank group predicate: run " + std::to_string(i) + " has no P");
    const double P = it->second;
    if (!(P >= 1) || P != std::floor(P) || P > 1e7)
      throw std::invalid_argument("rank group predicate: run " + std::to_string(i) + ": P = " + format_number(P) + " is not a positive integer");
    if (v.count("rank")) throw std::invalid_argument("rank group predicate: run " + std::to_string(i) + ": 'rank' is not a run variable");
    if (runs[i].member.size() != static_cast<std::size_t>(P))
      throw std::invalid_argument("rank group predicate: run " + std::to_string(i) + " (" + describe_vars(v) + ") has " +
                                  std::to_string(runs[i].member.size()) + " labels for P = " + format_number(P));
    std::vector<std::string> names;
    for (const auto& [k, x] : v)
      if (k != "P") names.push_back(k);
    if (names != params)
      throw std::invalid_argument("rank group predicate: run " + std::to_string(i) + " (" + describe_vars(v) +
                                  ") has other variables than run 0 (" + describe_vars(runs.front().vars) + ")");
  }
  return params;  // sorted (map order)
}

}  // namespace

std::string describe_ranks(const std::vector<bool>& member) {
  std::string s;
  const std::size_t n = member.size();
  for (std::size_t i = 0; i < n;) {
    if (!member[i]) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j + 1 < n && member[j + 1]) ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(i);
    if (j > i) s += "-" + std::to_string(j);
    i = j + 1;
  }
  return s.empty() ? "none" : s;
}

std::string describe_vars(const Vars& vars) {
  std::string s;
  if (const auto it = vars.find("P"); it != vars.end()) s = "P=" + format_number(it->second);
  for (const auto& [k, v] : vars)
    if (k != "P") s += (s.empty() ? "" : ", ") + k + "=" + format_number(v);
  return s;
}

std::vector<bool> predicate_members(const std::string& text, const Vars& vars) {
  SymbolTable table;
  table.add("P");
  table.add("rank");
  std::vector<double> frame{vars.at("P"), 0.0};
  for (const auto& [k, v] : vars)
    if (k != "P" && k != "rank") table.add(k), frame.push_back(v);
  const Expr e = parse_expr(text, table);
  const int P = static_cast<int>(vars.at("P"));
  std::vector<bool> out(static_cast<std::size_t>(std::max(P, 0)));
  for (int r = 0; r < P; ++r) {
    frame[1] = r;
    out[static_cast<std::size_t>(r)] = e.eval(frame) != 0;
  }
  return out;
}

std::optional<PartitionViolation> check_partition(const std::vector<std::string>& predicates,
                                                  const std::vector<Vars>& runs) {
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::vector<bool>> m;
    for (const auto& p : predicates) m.push_back(predicate_members(p, runs[i]));
    const int P = static_cast<int>(runs[i].at("P"));
    for (int r = 0; r < P; ++r) {
      std::vector<std::size_t> in;
      for (std::size_t g = 0; g < m.size(); ++g)
        if (m[g][static_cast<std::size_t>(r)]) in.push_back(g);
      if (in.size() == 1) continue;
      PartitionViolation v{i, r, in, describe_vars(runs[i]) + ": rank " + std::to_string(r)};
      if (in.empty()) {
        v.message += " is in no group";
      } else {
        v.message += " is in " + std::to_string(in.size()) + " groups:";
        for (std::size_t k = 0; k < in.size(); ++k)
          v.message += (k ? ", " : " ") + std::to_string(in[k]) + " (" + predicates[in[k]] + ")";
      }
      return v;
    }
  }
  return std::nullopt;
}

namespace {

GroupPredicate search_with(const Vocabulary& vocab, const std::vector<RunLabels>& runs, const PredicateOptions& options) {
  std::vector<Vars> points;
  for (const auto& r : runs) points.push_back(r.vars);
  Seen seen{vocab, evaluate(vocab, points), {}, {}, {}, {}};
  const std::size_t n = seen.values.samples();
  seen.member = Bits(n);
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (std::size_t r = 0; r < runs[i].member.size(); ++r)
      if (runs[i].member[r]) seen.member.set(seen.values.start[i] + r);
  seen.nonmember = minus(Bits::ones(n), seen.member);
  for (const auto& a : vocab.atoms) {
    seen.bits.push_back(atom_bits(a, seen.values));
    const std::size_t c = seen.bits.back().count();
    seen.usable.push_back(c != 0 && c != n);
  }

  GroupPredicate out;
  std::string members_text;
  for (std::size_t i = 0; i < runs.size(); ++i)
    members_text += (i ? "; " : "") + describe_vars(runs[i].vars) + ": " + describe_ranks(runs[i].member);
  if (seen.member.none()) {
    out.message = "the group has no member in any run (" + members_text + ")";
    return out;
  }

  // Conjunctions first; a disjunction of two only when no conjunction fits.
  std::deque<CoverSet> sets;
  std::vector<Candidate> cands;
  sets.push_back(min_covers(seen, seen.member, options));
  const CoverSet& whole = sets.front();
  if (!whole.covers.empty()) {
    for (const auto& c : whole.covers) cands.push_back(make_candidate(vocab, {c}, {&whole}));
  } else {
    std::set<Bits> tried;
    const std::size_t first_member = seen.member.first();
    int pure_splits = 0;
    for (std::size_t a = 0; a < vocab.atoms.size() && pure_splits < 64; ++a) {
      if (!seen.usable[a]) continue;
      Bits s1 = seen.member & seen.bits[a];
      if (s1.none() || s1 == seen.member) continue;
      if (!s1.test(first_member)) s1 = minus(seen.member, s1);
      if (!tried.insert(s1).second) continue;
      const Bits s2 = minus(seen.member, s1);
      // Cheap purity test of both sides before any search.
      bool pure = true;
      for (const Bits* s : std::array<const Bits*, 2>{&s1, &s2}) {
        Bits leak = seen.nonmember;
        for (std::size_t b = 0; b < seen.bits.size() && !leak.none(); ++b)
          if (seen.usable[b] && s->subset_of(seen.bits[b])) leak &= seen.bits[b];
        pure = pure && leak.none();
      }
      if (!pure) continue;
      ++pure_splits;
      sets.push_back(min_covers(seen, s1, options));
      const CoverSet* c1 = &sets.back();
      sets.push_back(min_covers(seen, s2, options));
      const CoverSet* c2 = &sets.back();
      for (std::size_t i = 0; i < c1->covers.size() && i < 8; ++i)
        for (std::size_t j = 0; j < c2->covers.size() && j < 8; ++j)
          if (c1->covers[i].size() + c2->covers[j].size() <= static_cast<std::size_t>(options.max_disjunction))
            cands.push_back(make_candidate(vocab, {c1->covers[i], c2->covers[j]}, {c1, c2}));
    }
  }
  if (cands.empty()) {
    out.message = "no predicate fits: no conjunction of up to " + std::to_string(options.max_conjunction) +
                  " atoms (rank, P-1-rank, x = rank % Px, y = floor(rank / Px), rank % 2 or the checkerboard colour "
                  "compared with 0..3, P, P-1, P/2, P/2-1, Px, Px-1, Py, Py-1, floor(sqrt(P)) or a parameter) is "
                  "true on exactly the members, nor a disjunction of two with up to " +
                  std::to_string(options.max_disjunction) + " atoms. ";
    if (whole.pure)
      out.message += "Excluding every non-member takes " + std::to_string(whole.greedy_size) + " atoms. ";
    else
      out.message += "The atoms true on every member all hold on non-members " + leak_text(seen.values, whole.leak) + ". ";
    out.message += "Members per run: " + members_text;
    return out;
  }
  std::sort(cands.begin(), cands.end(), cheaper);
  cands.erase(std::unique(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.text == b.text; }),
              cands.end());
  const Candidate best = cands.front();
  out.found = true;
  out.text = best.text;

  // Sanity: the text, read back as the replay engine will, gives exactly the labels.
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (predicate_members(best.text, runs[i].vars) != runs[i].member)
      throw std::logic_error("rank group predicate: '" + best.text + "' does not reproduce the labels at " +
                             describe_vars(runs[i].vars));

  // Alternatives: other covers of the same size, and the best with one atom swapped for a mate.
  std::vector<Candidate> alts;
  for (std::size_t i = 1; i < cands.size(); ++i)
    if (cands[i].size == best.size) alts.push_back(cands[i]);
  for (std::size_t t = 0; t < best.dnf.size(); ++t)
    for (std::size_t k = 0; k < best.dnf[t].size(); ++k) {
      const auto it = best.sets[t]->mates.find(best.dnf[t][k]);
      if (it == best.sets[t]->mates.end()) continue;
      for (int m : it->second) {
        Dnf d = best.dnf;
        d[t][k] = m;
        std::sort(d[t].begin(), d[t].end());
        alts.push_back(make_candidate(vocab, d, best.sets));
      }
    }
  if (alts.empty()) return out;
  std::sort(alts.begin(), alts.end(), cheaper);

  const Values probe = evaluate(vocab, probe_points(runs, options.max_probe_P));
  std::map<int, Bits> cache;
  auto dnf_bits = [&](const Dnf& d) {
    Bits any(probe.samples());
    for (const auto& t : d) {
      Bits all = Bits::ones(probe.samples());
      for (int a : t) {
        auto it = cache.find(a);
        if (it == cache.end()) it = cache.emplace(a, atom_bits(vocab.atoms[static_cast<std::size_t>(a)], probe)).first;
        all &= it->second;
      }
      any |= all;
    }
    return any;
  };
  const Bits best_bits = dnf_bits(best.dnf);
  // Per alternative, the probe points where it selects other ranks than the chosen predicate.
  std::set<Bits> signatures;
  std::vector<Alternative> found;
  std::vector<std::vector<std::size_t>> differs;  // ascending point indices, per alternative
  for (const auto& c : alts) {
    Bits diff = dnf_bits(c.dnf);
    if (diff == best_bits || !signatures.insert(diff).second) continue;  // equivalent wherever probed
    for (std::size_t i = 0; i < diff.w.size(); ++i) diff.w[i] ^= best_bits.w[i];
    std::vector<std::size_t> pts;
    for (std::size_t k = diff.first(); k != NPOS;) {
      const std::size_t pt = probe.point_of(k);
      pts.push_back(pt);
      k = diff.next(probe.start[pt + 1]);
    }
    Alternative a{c.text, probe.points[pts.front()], std::nullopt};
    for (std::size_t pt : pts)
      if (is_pow2(ranks_of(probe.points[pt]))) {
        a.differs_at_pow2 = probe.points[pt];
        break;
      }
    found.push_back(std::move(a));
    differs.push_back(std::move(pts));
  }
  if (found.empty()) return out;
  std::size_t first = NPOS, first_pow2 = NPOS;
  for (const auto& pts : differs)
    for (std::size_t pt : pts) {
      first = std::min(first, pt);
      if (is_pow2(ranks_of(probe.points[pt]))) first_pow2 = std::min(first_pow2, pt);
    }
  out.resolve_at = probe.points[first];
  if (first_pow2 != NPOS) out.resolve_at_pow2 = probe.points[first_pow2];

  // A few runs that together tell every alternative from the chosen predicate: greedily the run that
  // separates the most alternatives still standing, a power of two when one separates any.
  std::vector<bool> standing(found.size(), true);
  for (std::size_t left = found.size(); left > 0 && out.resolve_runs.size() < 4;) {
    std::vector<std::size_t> count(probe.points.size(), 0);
    for (std::size_t a = 0; a < found.size(); ++a)
      if (standing[a])
        for (std::size_t pt : differs[a]) ++count[pt];
    std::size_t pick = NPOS;
    for (const bool pow2_only : {true, false}) {
      for (std::size_t pt = 0; pt < count.size(); ++pt)
        if (count[pt] > 0 && (!pow2_only || is_pow2(ranks_of(probe.points[pt]))) && (pick == NPOS || count[pt] > count[pick]))
          pick = pt;
      if (pick != NPOS) break;
    }
    out.resolve_runs.push_back(probe.points[pick]);
    for (std::size_t a = 0; a < found.size(); ++a)
      if (standing[a] && std::binary_search(differs[a].begin(), differs[a].end(), pick)) standing[a] = false, --left;
  }

  for (std::size_t i = 0; i < found.size() && i < options.max_alternatives; ++i) out.alternatives.push_back(found[i]);
  out.message = "ambiguous: " + std::to_string(found.size()) + " other predicate(s) of " + std::to_string(best.size) +
                " atom(s) fit every run but differ at unseen runs, e.g. '" + found.front().text + "' (first at " +
                describe_vars(found.front().differs_at) + "). The first disagreement is at " +
                describe_vars(*out.resolve_at) +
                (out.resolve_at_pow2 && *out.resolve_at_pow2 != *out.resolve_at
                     ? " (among powers of two: " + describe_vars(*out.resolve_at_pow2) + ")"
                     : "") +
                "; tracing at ";
  for (std::size_t i = 0; i < out.resolve_runs.size(); ++i)
    out.message += (i ? (i + 1 == out.resolve_runs.size() ? " and " : ", ") : "") + describe_vars(out.resolve_runs[i]);
  out.message += std::count(standing.begin(), standing.end(), true) == 0 ? " would tell them all apart"
                                                                          : " would tell most of them apart";
  return out;
}

}  // namespace

GroupPredicate find_group_predicate(const std::vector<RunLabels>& runs, const PredicateOptions& options) {
  const std::vector<std::string> params = validate(runs);
  GroupPredicate first = search_with(Vocabulary(params), runs, options);
  if (!first.found && first.message.find("no predicate fits") == std::string::npos) return first;  // no member
  // The same search on the grids of MPI_Dims_create (and the codes that factor P the same way). Several may
  // fit the traced runs (at P = 8, 12, 18, 27 a face of MPI_Dims_create(P, 3)'s grid is a row band of
  // MPI_Dims_create(P, 2)'s; at P = 4, 8, 16 a coincidence of Px x Py such as "P-1-rank > 3" with an edge of
  // NPB LU's grid): the fewest atoms win, then a grid of the dimensions the program made, then Px x Py, then
  // the fixed order; the others are alternatives where they select other ranks at an unseen run.
  struct Fit {
    GroupPredicate g;
    int ndims;       // 0: Px x Py
  };
  std::vector<Fit> fits;
  if (first.found) fits.push_back({first, 0});
  std::string tried;
  for (const GridVocabulary& grid : grid_vocabularies()) {
    GroupPredicate g = search_with(Vocabulary(params, &grid), runs, options);
    if (g.found) fits.push_back({std::move(g), static_cast<int>(grid.coords.size())});
    else tried += (tried.empty() ? "" : "; ") + grid.label;
  }
  if (!fits.empty()) {
    const auto& nd = options.grid_ndims;
    auto key = [&](const Fit& f) {
      const std::string& t = f.g.text;
      const auto atoms = std::count(t.begin(), t.end(), '&') / 2 + std::count(t.begin(), t.end(), '|') / 2 + 1;
      const bool made = f.ndims == 0 ? nd.empty() || std::find(nd.begin(), nd.end(), 2) != nd.end()
                                     : std::find(nd.begin(), nd.end(), f.ndims) != nd.end();
      return std::make_tuple(atoms, made ? 0 : 1, f.ndims == 0 ? 0 : 1);
    };
    std::stable_sort(fits.begin(), fits.end(), [&](const Fit& x, const Fit& y) { return key(x) < key(y); });
    // Px x Py as good as any grid: the builder's results (and ambiguities) as without the grids
    if (fits.front().ndims == 0) return first;
    GroupPredicate best = std::move(fits.front().g);
    const std::vector<Vars> probes = probe_points(runs, options.max_probe_P);
    for (std::size_t i = 1; i < fits.size(); ++i) {
      const std::string& other = fits[i].g.text;
      for (const Vars& at : probes)
        if (predicate_members(other, at) != predicate_members(best.text, at)) {
          Alternative alt{other, at, std::nullopt};
          for (const Vars& q : probes)
            if (is_pow2(ranks_of(q)) && predicate_members(other, q) != predicate_members(best.text, q)) {
              alt.differs_at_pow2 = q;
              break;
            }
          if (!best.resolve_at || ranks_of(at) < ranks_of(*best.resolve_at)) best.resolve_at = at;
          if (std::none_of(best.resolve_runs.begin(), best.resolve_runs.end(), [&](const Vars& v) {
                return predicate_members(other, v) != predicate_members(best.text, v);
              }))
            best.resolve_runs.push_back(alt.differs_at_pow2 ? *alt.differs_at_pow2 : at);
          best.message = (best.message.empty() ? "ambiguous: " : best.message + "; ") + "on another grid '" + other +
                         "' fits every run too but differs at " + describe_vars(at);
          best.alternatives.insert(best.alternatives.begin(), std::move(alt));
          break;
        }
    }
    if (best.alternatives.size() > options.max_alternatives) best.alternatives.resize(options.max_alternatives);
    return best;
  }
  const std::size_t members = first.message.find("Members per run: ");
  first.message.insert(members == std::string::npos ? first.message.size() : members,
                       "Nor with the coordinates and sides of these grids in place of x, y, Px, Py (with the block "
                       "diagonal of the first and a side compared with the other): " + tried + ". ");
  return first;
}

}  // namespace mksim::skeletons::builder
