// Communicators at one P (comms.hpp): each declaration evaluated in every parent member's frame, grouped and
// ordered as MPI_Comm_split, MPI_Cart_create (reorder = 0), MPI_Cart_sub, MPI_Comm_dup, MPI_Comm_create and
// MPI_Graph_create order their ranks.
#include "skeletons/comms.hpp"

#include "skeletons/error.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

namespace mksim::skeletons {

const std::vector<int>& CommLayout::members(int comm, int world_rank) const {
  static const std::vector<int> none;
  const Comm& c = comms[static_cast<std::size_t>(comm)];
  const int g = c.group_of[static_cast<std::size_t>(world_rank)];
  return g < 0 ? none : c.groups[static_cast<std::size_t>(g)];
}

namespace {

std::string show(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

void early_defines(const Skeleton& sk, std::vector<double>& frame) {
  for (const auto& d : sk.defines)
    if (!d.late) frame[static_cast<std::size_t>(d.slot)] = d.value.eval(frame);
}

class Layouter {
 public:
  Layouter(const Skeleton& sk, const std::vector<double>& base, int P) : sk_(sk), P_(P) {
    frames_.assign(static_cast<std::size_t>(P), base);
    for (int r = 0; r < P; ++r) {
      auto& f = frames_[static_cast<std::size_t>(r)];
      f[Skeleton::SLOT_RANK] = r;
      early_defines(sk, f);
    }
  }

  CommLayout run() {
    CommLayout out;
    CommLayout::Comm world;
    world.groups.emplace_back(static_cast<std::size_t>(P_));
    for (int r = 0; r < P_; ++r) world.groups[0][static_cast<std::size_t>(r)] = r;
    world.group_of.assign(static_cast<std::size_t>(P_), 0);
    world.rank_of = world.groups[0];
    out.comms.push_back(std::move(world));
    for (const CommDecl& d : sk_.comms) {
      CommLayout::Comm c = make(d, out.comms[static_cast<std::size_t>(d.parent)]);
      for (int r = 0; r < P_; ++r) {
        auto& f = frames_[static_cast<std::size_t>(r)];
        const int g = c.group_of[static_cast<std::size_t>(r)];
        f[static_cast<std::size_t>(d.rank_slot)] = c.rank_of[static_cast<std::size_t>(r)];
        f[static_cast<std::size_t>(d.size_slot)] = g < 0 ? 0.0 : static_cast<double>(c.groups[static_cast<std::size_t>(g)].size());
      }
      out.comms.push_back(std::move(c));
    }
    return out;
  }

 private:
  [[noreturn]] void fail(const CommDecl& d, const std::string& field, int world, int prank, const std::string& what) const {
    std::string where = "at P=" + std::to_string(P_);
    if (world >= 0) where += ", rank " + std::to_string(world) + " (rank " + std::to_string(prank) + " of its " + comm_name(sk_, d.parent) + ")";
    throw SkeletonError(sk_.file, d.pointer + (field.empty() ? "" : "/" + field), where + ": " + what);
  }

  /** @brief An expression that must be an integer, evaluated in the frame of world rank w. */
  long long integer(const CommDecl& d, const std::string& field, const Expr& e, int w, int prank) {
    const double v = e.eval(frames_[static_cast<std::size_t>(w)]);
    if (!(std::fabs(v) < 2147483648.0) || v != std::floor(v))
      fail(d, field, w, prank, "\"" + e.text() + "\" = " + show(v) + " is not an integer");
    return static_cast<long long>(v);
  }

  std::vector<double>& at(int w, int prank, std::size_t psize) {
    auto& f = frames_[static_cast<std::size_t>(w)];
    f[static_cast<std::size_t>(sk_.parent_rank_slot)] = prank;
    f[static_cast<std::size_t>(sk_.parent_size_slot)] = static_cast<double>(psize);
    return f;
  }

  static void add_group(CommLayout::Comm& c, std::vector<int> members, std::vector<int> dims = {}) {
    const int g = static_cast<int>(c.groups.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
      c.group_of[static_cast<std::size_t>(members[i])] = g;
      c.rank_of[static_cast<std::size_t>(members[i])] = static_cast<int>(i);
    }
    c.groups.push_back(std::move(members));
    c.dims.push_back(std::move(dims));
  }

  CommLayout::Comm make(const CommDecl& d, const CommLayout::Comm& parent) {
    CommLayout::Comm c;
    c.group_of.assign(static_cast<std::size_t>(P_), -1);
    c.rank_of.assign(static_cast<std::size_t>(P_), -1);
    for (std::size_t g = 0; g < parent.groups.size(); ++g) {
      const std::vector<int>& M = parent.groups[g];
      const std::size_t n = M.size();
      switch (d.kind) {
        case CommDecl::Kind::DUP:
          add_group(c, M, g < parent.dims.size() ? parent.dims[g] : std::vector<int>{});
          break;
        case CommDecl::Kind::SPLIT: {
          std::map<long long, std::vector<std::tuple<long long, int, int>>> by_color;  // colour -> (key, parent rank, world)
          for (std::size_t i = 0; i < n; ++i) {
            const int w = M[i];
            at(w, static_cast<int>(i), n);
            const long long color = integer(d, "color", d.color, w, static_cast<int>(i));
            const long long key = integer(d, "key", d.key, w, static_cast<int>(i));
            if (color >= 0) by_color[color].emplace_back(key, static_cast<int>(i), w);
          }
          for (auto& [color, list] : by_color) {  // MPI orders by key, then by rank in the parent
            std::sort(list.begin(), list.end());
            std::vector<int> members;
            for (const auto& [key, pr, w] : list) members.push_back(w);
            add_group(c, std::move(members));
          }
          break;
        }
        case CommDecl::Kind::CART: {
          std::vector<int> dims;
          for (std::size_t i = 0; i < n; ++i) {  // every member must pass the same grid (MPI requires it)
            const int w = M[i];
            at(w, static_cast<int>(i), n);
            std::vector<int> mine;
            for (std::size_t k = 0; k < d.dims.size(); ++k) {
              const long long v = integer(d, "dims/" + std::to_string(k), d.dims[k], w, static_cast<int>(i));
              if (v < 1) fail(d, "dims/" + std::to_string(k), w, static_cast<int>(i), "\"" + d.dims[k].text() + "\" = " + std::to_string(v) + " is not a dimension (>= 1)");
              mine.push_back(static_cast<int>(v));
            }
            if (i == 0) dims = mine;
            else if (mine != dims)
              fail(d, "dims", w, static_cast<int>(i), "the grid differs from its parent's rank 0's (MPI_Cart_create needs the same dims on every rank)");
          }
          long long cells = 1;
          for (int v : dims) cells *= v;
          if (cells > static_cast<long long>(n))
            fail(d, "dims", M.empty() ? -1 : M[0], 0, "the grid has " + std::to_string(cells) + " cells but its parent only " + std::to_string(n) + " ranks");
          add_group(c, std::vector<int>(M.begin(), M.begin() + static_cast<std::ptrdiff_t>(cells)), dims);
          break;
        }
        case CommDecl::Kind::CART_SUB: {
          const std::vector<int>& D = parent.dims.at(g);
          std::map<std::vector<int>, std::vector<std::pair<int, int>>> by_rest;  // dropped coordinates -> (rank, world)
          std::vector<int> kept;
          for (std::size_t k = 0; k < D.size(); ++k)
            if (d.remain[k]) kept.push_back(D[k]);
          for (std::size_t i = 0; i < n; ++i) {
            std::vector<int> coord(D.size());
            int rest = static_cast<int>(i);
            for (std::size_t k = D.size(); k-- > 0;) {
              coord[k] = rest % D[k];
              rest /= D[k];
            }
            std::vector<int> dropped;
            int sub_rank = 0;
            for (std::size_t k = 0; k < D.size(); ++k) {
              if (d.remain[k]) sub_rank = sub_rank * D[k] + coord[k];
              else dropped.push_back(coord[k]);
            }
            by_rest[dropped].emplace_back(sub_rank, M[i]);
          }
          for (auto& [rest, list] : by_rest) {
            std::sort(list.begin(), list.end());
            std::vector<int> members;
            for (const auto& [r, w] : list) members.push_back(w);
            add_group(c, std::move(members), kept);
          }
          break;
        }
        case CommDecl::Kind::CREATE: {
          if (n == 0) break;
          const int w0 = M[0];
          auto& f = at(w0, 0, n);
          const long long size = integer(d, "size", d.size, w0, 0);
          if (size < 0 || size > static_cast<long long>(n))
            fail(d, "size", w0, 0, "\"" + d.size.text() + "\" = " + std::to_string(size) + " members, its parent has " + std::to_string(n));
          std::vector<int> members;
          std::vector<char> seen(n, 0);
          for (long long m = 0; m < size; ++m) {
            f[static_cast<std::size_t>(sk_.member_slot)] = static_cast<double>(m);
            const long long v = integer(d, "members", d.members, w0, 0);
            if (v < 0 || v >= static_cast<long long>(n))
              fail(d, "members", w0, 0, "member " + std::to_string(m) + ": \"" + d.members.text() + "\" = " + std::to_string(v) +
                                            " is not a rank of its parent (of " + std::to_string(n) + ")");
            if (seen[static_cast<std::size_t>(v)]++)
              fail(d, "members", w0, 0, "member " + std::to_string(m) + ": parent rank " + std::to_string(v) + " is a member twice");
            members.push_back(M[static_cast<std::size_t>(v)]);
          }
          if (!members.empty()) add_group(c, std::move(members));
          break;
        }
        case CommDecl::Kind::GRAPH: {
          if (n == 0) break;
          const int w0 = M[0];
          at(w0, 0, n);
          const long long nodes = integer(d, "nodes", d.size, w0, 0);
          if (nodes < 1 || nodes > static_cast<long long>(n))
            fail(d, "nodes", w0, 0, "\"" + d.size.text() + "\" = " + std::to_string(nodes) + " nodes, its parent has " + std::to_string(n) + " ranks");
          add_group(c, std::vector<int>(M.begin(), M.begin() + static_cast<std::ptrdiff_t>(nodes)));
          break;
        }
      }
    }
    return c;
  }

  const Skeleton& sk_;
  int P_;
  std::vector<std::vector<double>> frames_;
};

}  // namespace

CommLayout layout_comms(const Skeleton& sk, const std::vector<double>& base, int P) {
  return Layouter(sk, base, P).run();
}

void bind_rank(const Skeleton& sk, std::vector<double>& frame, int rank, const CommLayout& layout) {
  frame[Skeleton::SLOT_RANK] = rank;
  early_defines(sk, frame);
  for (std::size_t k = 0; k < sk.comms.size(); ++k) {
    const CommDecl& d = sk.comms[k];
    frame[static_cast<std::size_t>(d.rank_slot)] = layout.rank_in(static_cast<int>(k) + 1, rank);
    frame[static_cast<std::size_t>(d.size_slot)] = layout.size_of(static_cast<int>(k) + 1, rank);
  }
  for (const auto& d : sk.defines)
    if (d.late) frame[static_cast<std::size_t>(d.slot)] = d.value.eval(frame);
}

}  // namespace mksim::skeletons
