#include "skeletons/builder/neighbours.hpp"

#include "skeletons/expr.hpp"

#include <algorithm>
#include <deque>
#include <set>
#include <utility>

namespace mksim::skeletons::builder {

namespace {

using trace::Kind;

// offsets in {-1, 0, 1}^3 as 0..26, lexicographic (13 is no offset)
int index_of(const std::array<int, 3>& o) { return (o[0] + 1) * 9 + (o[1] + 1) * 3 + (o[2] + 1); }
std::array<int, 3> offset_of(int idx) { return {idx / 9 - 1, (idx / 3) % 3 - 1, idx % 3 - 1}; }
int nonzeros(int idx) {
  const auto o = offset_of(idx);
  return (o[0] != 0) + (o[1] != 0) + (o[2] != 0);
}

// ndims 3 and 2: MPI_Dims_create(P, ndims)'s grid, row-major (the last dimension fastest, as MPI_Cart_create);
// -2 (SWAPPED_2D): the same 2-D sides with the first one fastest, rank = y*dims[0] + x (codes that number their
// grid themselves, x = rank % dims[0]: NPB LU), as a row-major grid of sides {dims[1], dims[0]}
constexpr int SWAPPED_2D = -2;

std::array<int, 3> grid_of(int P, int ndims) {
  const std::vector<int> d = dims_create(P, ndims == SWAPPED_2D ? 2 : ndims);
  std::array<int, 3> g{1, 1, 1};
  for (std::size_t i = 0; i < d.size() && i < 3; ++i) g[i] = d[i];
  if (ndims == SWAPPED_2D) std::swap(g[0], g[1]);
  return g;
}

std::array<int, 3> coords(int rank, const std::array<int, 3>& n) {
  return {rank / (n[1] * n[2]), (rank / n[2]) % n[1], rank % n[2]};
}

// the offset from rank to peer on grid n when the peer is a neighbour (-1..1 per dimension, not itself); -1 else
int neighbour_index(int rank, int peer, const std::array<int, 3>& n) {
  const int P = n[0] * n[1] * n[2];
  if (rank < 0 || peer < 0 || rank >= P || peer >= P || rank == peer) return -1;
  const auto a = coords(rank, n), b = coords(peer, n);
  std::array<int, 3> o{};
  for (int d = 0; d < 3; ++d) {
    o[d] = b[d] - a[d];
    if (o[d] < -1 || o[d] > 1) return -1;
  }
  return index_of(o);
}

bool is_p2p(Kind k) { return p2p_op_name(k) != nullptr; }
bool is_request(Kind k) { return k == Kind::ISEND || k == Kind::ISSEND || k == Kind::IRECV; }

using Key = std::pair<int, std::uint64_t>;  // (kind, site)

struct Seen {
  bool valid = true;
  std::size_t longest = 0;
  std::set<std::vector<int>> orders;  // each run's offsets in program order
};

// every run of consecutive calls of one (kind, site) (compute between them aside), as offsets on grid n
void scan(const Seq& seq, int rank, const std::array<int, 3>& n, std::map<Key, Seen>& seen) {
  std::size_t i = 0;
  while (i < seq.size()) {
    if (const auto* l = std::get_if<Loop>(&seq[i].op)) {
      scan(l->body, rank, n, seen);
      ++i;
      continue;
    }
    const Call* c = std::get_if<Call>(&seq[i].op);
    if (!c || !is_p2p(c->kind) || c->peer == trace::NO_RANK) {
      ++i;
      continue;
    }
    const Key key{static_cast<int>(c->kind), c->site};
    std::vector<int> offs;
    bool ok = true;
    std::size_t j = i;
    while (j < seq.size()) {
      const Call* d = std::get_if<Call>(&seq[j].op);
      if (std::holds_alternative<Compute>(seq[j].op) || (d && trace::is_annotation(d->kind))) {
        ++j;
        continue;
      }
      if (!d || d->kind != c->kind || d->site != c->site) break;
      const int idx = neighbour_index(rank, d->peer, n);
      ok = ok && idx >= 0 && std::find(offs.begin(), offs.end(), idx) == offs.end();
      offs.push_back(idx);
      i = ++j;
    }
    Seen& s = seen[key];
    s.valid = s.valid && ok;
    s.longest = std::max(s.longest, offs.size());
    if (ok) s.orders.insert(offs);
  }
}

// the order of offsets every run agrees with (position of each offset index), empty when there is none
std::map<int, int> common_order(const std::set<std::vector<int>>& orders) {
  std::set<int> all;
  for (const auto& o : orders) all.insert(o.begin(), o.end());
  std::vector<std::vector<int>> candidates;
  candidates.emplace_back(all.begin(), all.end());  // rank order (lexicographic offsets)
  std::vector<int> faces(all.begin(), all.end());   // faces, edges, corners (LULESH), each in offset order
  std::stable_sort(faces.begin(), faces.end(), [](int a, int b) { return nonzeros(a) < nonzeros(b); });
  candidates.push_back(faces);
  for (const auto& o : orders)  // one rank that has every neighbour seen (an interior rank)
    if (o.size() == all.size()) candidates.push_back(o);
  for (const auto& cand : candidates) {
    std::map<int, int> pos;
    for (std::size_t i = 0; i < cand.size(); ++i) pos[cand[i]] = static_cast<int>(i);
    bool fits = true;
    for (const auto& o : orders)
      for (std::size_t i = 1; i < o.size() && fits; ++i) fits = pos[o[i - 1]] < pos[o[i]];
    if (fits) return pos;
  }
  return {};
}

std::uint64_t tagged_site(std::uint64_t site, int idx) {
  std::uint64_t h = site ^ (0x4e4252ull + static_cast<std::uint64_t>(idx) * 0x9E3779B97F4A7C15ull);
  return h * 1099511628211ull + 0x4e42ull;
}

// The region markers between the calls of one run of a list (a region around each call, as call-site stacks
// give when the loop's body calls a function between them) are dropped: an end and the begin of the same
// region that follows it, so that the list's calls are consecutive and the region spans the whole list.
template <class Lists>
void join_regions(Seq& seq, const Lists& lists) {
  for (Node& n : seq)
    if (auto* l = std::get_if<Loop>(&n.op)) join_regions(l->body, lists);
  std::vector<bool> drop(seq.size(), false);
  std::size_t i = 0;
  while (i < seq.size()) {
    const Call* c = std::get_if<Call>(&seq[i].op);
    if (!c || !lists.count({static_cast<int>(c->kind), c->site})) {
      ++i;
      continue;
    }
    std::size_t last = i, j = i + 1;
    std::vector<std::size_t> markers, pending;
    while (j < seq.size()) {
      const Call* d = std::get_if<Call>(&seq[j].op);
      if (std::holds_alternative<Compute>(seq[j].op)) {
        ++j;
        continue;
      }
      if (d && (d->kind == Kind::REGION_BEGIN || d->kind == Kind::REGION_END)) {
        pending.push_back(j++);
        continue;
      }
      if (!d || d->kind != c->kind || d->site != c->site) break;
      markers.insert(markers.end(), pending.begin(), pending.end());
      pending.clear();
      last = j++;
    }
    // only balanced pairs (end, then begin of the same name) between the first and the last call
    bool balanced = markers.size() % 2 == 0;
    for (std::size_t k = 0; balanced && k < markers.size(); k += 2) {
      const Call& e = std::get<Call>(seq[markers[k]].op);
      const Call& b = std::get<Call>(seq[markers[k + 1]].op);
      balanced = e.kind == Kind::REGION_END && b.kind == Kind::REGION_BEGIN && e.tag == b.tag;
    }
    if (balanced)
      for (std::size_t k : markers) drop[k] = true;
    i = last + 1;
  }
  Seq kept;
  kept.reserve(seq.size());
  for (std::size_t k = 0; k < seq.size(); ++k) {
    if (drop[k]) continue;
    // two compute gaps made adjacent by a dropped marker are one gap
    if (!kept.empty() && std::holds_alternative<Compute>(seq[k].op) && std::holds_alternative<Compute>(kept.back().op)) {
      std::get<Compute>(kept.back().op).merge(std::get<Compute>(seq[k].op));
      continue;
    }
    kept.push_back(std::move(seq[k]));
  }
  seq = std::move(kept);
}

struct List {
  int ndims = 3;
  std::map<int, int> order;
};

struct Apply {
  int P = 0, rank = 0;
  const std::map<Key, List>* lists = nullptr;
  std::set<std::uint64_t> bases;  // sites of tagged request calls (waits complete them)
  NeighbourLists* out = nullptr;
  std::map<std::uint64_t, std::deque<std::uint64_t>> pending;
  std::set<std::uint64_t> failed;  // request sites whose waits did not follow their calls

  void run(Seq& seq) {
    for (std::size_t i = 0; i < seq.size(); ++i) {
      if (auto* l = std::get_if<Loop>(&seq[i].op)) {
        // a folded loop of waits, one per request of a list (its count differs by rank): unrolled
        const Call* w = nullptr;
        std::size_t calls = 0;
        for (const Node& b : l->body)
          if (const auto* c = std::get_if<Call>(&b.op)) w = c, ++calls;
          else if (!std::holds_alternative<Compute>(b.op)) calls += 2;
        if (!l->branch && calls == 1 && w->kind == Kind::WAIT && bases.count(w->waits_on) && l->count <= 27) {
          Seq body = l->body;
          const std::uint64_t count = l->count;
          seq.erase(seq.begin() + static_cast<long>(i));
          for (std::uint64_t k = 0; k < count; ++k) seq.insert(seq.begin() + static_cast<long>(i + k * body.size()), body.begin(), body.end());
          --i;
          continue;
        }
        run(l->body);
        continue;
      }
      auto* c = std::get_if<Call>(&seq[i].op);
      if (!c) continue;
      if (c->kind == Kind::WAIT && bases.count(c->waits_on)) {
        auto& q = pending[c->waits_on];
        if (q.empty()) {
          failed.insert(c->waits_on);
          continue;
        }
        c->waits_on = q.front();
        q.pop_front();
        continue;
      }
      if (!is_p2p(c->kind)) continue;
      auto it = lists->find({static_cast<int>(c->kind), c->site});
      if (it == lists->end()) continue;
      const int idx = neighbour_index(rank, c->peer, grid_of(P, it->second.ndims));
      if (idx < 0) continue;  // cannot happen: every occurrence was checked
      const std::uint64_t site = tagged_site(c->site, idx);
      NeighbourTag t;
      t.ndims = it->second.ndims;
      t.off = offset_of(idx);
      t.base_site = c->site;
      t.order = it->second.order.at(idx);
      out->by_site[site] = t;
      if (is_request(c->kind)) pending[c->site].push_back(site);
      c->site = site;
    }
  }
};

}  // namespace

int neighbour_rank(const NeighbourTag& t, int P, int rank) {
  const auto n = grid_of(P, t.ndims);
  if (rank < 0 || rank >= n[0] * n[1] * n[2]) return -1;
  auto c = coords(rank, n);
  for (int d = 0; d < 3; ++d) {
    c[d] += t.off[d];
    if (c[d] < 0 || c[d] >= n[d]) return -1;
  }
  return (c[0] * n[1] + c[1]) * n[2] + c[2];
}

namespace {
std::string side_text(int ndims, int d) {
  if (ndims == SWAPPED_2D) return d == 2 ? "1" : "dims(P, 2, " + std::to_string(1 - d) + ")";
  if (ndims == 2 && d == 2) return "1";
  return "dims(P, " + std::to_string(ndims) + ", " + std::to_string(d) + ")";
}
std::string grid_text(int ndims) { return side_text(ndims, 0) + ", " + side_text(ndims, 1) + ", " + side_text(ndims, 2); }
std::string coord_text(int ndims, int d) { return "cart_coord(rank, " + std::to_string(d) + ", " + grid_text(ndims) + ")"; }
}  // namespace

std::string neighbour_condition(const NeighbourTag& t) {
  std::string s;
  for (int d = 0; d < 3; ++d) {
    if (!t.off[d]) continue;
    s += s.empty() ? "" : " && ";
    s += coord_text(t.ndims, d) + (t.off[d] < 0 ? " > 0" : " < " + side_text(t.ndims, d) + " - 1");
  }
  return s;
}

std::string neighbour_peer(const NeighbourTag& t) {
  std::string e = "cart_rank(";
  for (int d = 0; d < 3; ++d) {
    if (t.ndims != 3 && d == 2) {
      e += "0, ";
      continue;
    }
    e += coord_text(t.ndims, d) + (t.off[d] < 0 ? " - 1" : t.off[d] > 0 ? " + 1" : "") + ", ";
  }
  return e + grid_text(t.ndims) + ")";
}

NeighbourLists tag_neighbour_lists(const std::vector<int>& P, std::vector<std::vector<RankProgram>>& folded) {
  NeighbourLists result;
  // which (kind, site) are lists, on which grid
  std::map<Key, List> lists;
  for (const int ndims : {3, 2, SWAPPED_2D}) {
    std::map<Key, Seen> seen;
    for (std::size_t r = 0; r < folded.size(); ++r) {
      const auto n = grid_of(P[r], ndims);
      for (const RankProgram& p : folded[r]) scan(p.seq, p.rank, n, seen);
    }
    for (const auto& [key, s] : seen) {
      if (!s.valid || s.longest < 2) continue;
      std::map<int, int> order = common_order(s.orders);
      if (order.empty()) continue;
      // the list must move along every dimension of its grid: a list along one axis fits a 3-D grid of the
      // traced P by coincidence (NPB LU's north/south sends on its own 2-D grid, like 3-D neighbours at P <= 16)
      // On a 2-D grid, a pair of opposite neighbours along one axis is a list too (NPB LU exchanges west and
      // east, then north and south, from one line, on a grid it numbers x fastest)
      bool every = true;
      for (int d = 0; d < std::abs(ndims); ++d) {
        bool moves = false;
        for (const auto& [idx, pos] : order) moves = moves || offset_of(idx)[static_cast<std::size_t>(d)] != 0;
        every = every && moves;
      }
      bool pair = ndims != 3 && order.size() == 2;
      if (pair) {
        const auto a = offset_of(order.begin()->first), b = offset_of(std::next(order.begin())->first);
        for (int d = 0; d < 3; ++d) pair = pair && a[d] == -b[d];
      }
      if (!every && !pair) continue;
      // of the grids a list fits, the one where it uses the fewest offsets (faces before diagonals: rank +- 1 on
      // a grid numbered x fastest is also a face and a diagonal neighbour of the row-major grid); ties: 3-D first
      if (auto it = lists.find(key); it != lists.end() && it->second.order.size() <= order.size()) continue;
      lists[key] = {ndims, std::move(order)};
    }
  }
  if (lists.empty()) return result;
  // tag; a request site whose waits do not follow its calls in order is left untagged and all is redone
  const std::vector<std::vector<RankProgram>> original = folded;
  for (;;) {  // ends: every round without success removes a list
    std::set<std::uint64_t> bases, failed;
    for (const auto& [key, l] : lists)
      if (is_request(static_cast<Kind>(key.first))) bases.insert(key.second);
    result.by_site.clear();
    for (std::size_t r = 0; r < folded.size(); ++r)
      for (RankProgram& p : folded[r]) {
        join_regions(p.seq, lists);
        Apply a;
        a.P = P[r];
        a.rank = p.rank;
        a.lists = &lists;
        a.bases = bases;
        a.out = &result;
        a.run(p.seq);
        failed.insert(a.failed.begin(), a.failed.end());
        rehash_all(p.seq);
      }
    if (failed.empty()) break;
    folded = original;
    for (auto it = lists.begin(); it != lists.end();)
      it = failed.count(it->first.second) ? lists.erase(it) : std::next(it);
    if (lists.empty()) {
      result.by_site.clear();
      return result;
    }
  }
  for (const auto& [key, l] : lists) {
    std::string offs;
    std::vector<std::pair<int, int>> by_pos;
    for (const auto& [idx, pos] : l.order) by_pos.emplace_back(pos, idx);
    std::sort(by_pos.begin(), by_pos.end());
    for (const auto& [pos, idx] : by_pos) {
      const auto o = offset_of(idx);
      offs += (offs.empty() ? "" : " ") + std::string("(") + std::to_string(o[0]) + "," + std::to_string(o[1]) +
              (l.ndims == 3 ? "," + std::to_string(o[2]) : "") + ")";
    }
    result.notes.push_back(std::string(trace::kind_name(static_cast<Kind>(key.first))) + " at site " + std::to_string(key.second) +
                           ": a neighbour list on MPI_Dims_create(P, " + std::to_string(std::abs(l.ndims)) + ")'s grid" +
                           (l.ndims == SWAPPED_2D ? " numbered with its first side fastest" : "") + ", " +
                           std::to_string(l.order.size()) + " offsets in the order " + offs);
  }
  return result;
}

}  // namespace mksim::skeletons::builder
