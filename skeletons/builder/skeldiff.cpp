// Comparing two skeletons (skeldiff.hpp): the communication structure, then the expansions rank by rank.
#include "skeletons/builder/skeldiff.hpp"

#include "skeletons/builder/holdout.hpp"
#include "skeletons/comms.hpp"
#include "skeletons/error.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/skeleton_io.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <tuple>
#include <type_traits>

namespace mksim::skeletons::builder {

namespace {

// A node of the communication structure: compute left out, regions opened, empty loops and branches dropped.
struct Node {
  std::string label;    // "loop", "if", "if prob", "isend", "allreduce on split", ...
  std::string pointer;  // JSON pointer of the block
  std::vector<Node> then_body, else_body;  // loop: then_body is the body
  int block = -1;       // Block::index ("if prob": to compare and substitute its probability)
};

// The branch of block `index` in a body (mutable: B's probabilities are replaced by A's).
Branch* find_branch(Body& body, int index) {
  for (Block& b : body) {
    Branch* found = std::visit(
        [&](auto& op) -> Branch* {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, Branch>) {
            if (b.index == index) return &op;
            if (Branch* x = find_branch(op.then_body, index)) return x;
            return find_branch(op.else_body, index);
          } else if constexpr (std::is_same_v<T, Loop> || std::is_same_v<T, Region>) {
            return find_branch(op.body, index);
          } else {
            return nullptr;
          }
        },
        b.op);
    if (found) return found;
  }
  return nullptr;
}

const Branch* find_branch(const Skeleton& sk, int index) {
  for (const RankGroup& g : sk.groups)
    if (const Branch* x = find_branch(const_cast<Body&>(g.body), index)) return x;
  return nullptr;
}

const char* comm_kind(const Skeleton& sk, int comm) {
  if (comm == 0) return "world";
  switch (sk.comms[static_cast<std::size_t>(comm - 1)].kind) {
    case CommDecl::Kind::SPLIT: return "split";
    case CommDecl::Kind::CART: return "cart";
    case CommDecl::Kind::CART_SUB: return "cart_sub";
    case CommDecl::Kind::DUP: return "dup";
    case CommDecl::Kind::CREATE: return "create";
    case CommDecl::Kind::GRAPH: return "graph";
  }
  return "?";
}

struct Structure {
  const Skeleton& sk;
  bool flatten = false;
  // one rank's structure (flatten only): its group, and the side each condition takes for it, when the condition
  // does not depend on a loop's variable (those are dissolved, both sides kept)
  const std::vector<double>* frame = nullptr;
  mutable std::vector<int> loop_slots;  // variables of the loops around the node being added

  std::string ptr(int block) const { return sk.blocks.at(static_cast<std::size_t>(block)).pointer; }

  void add(std::vector<Node>& out, const Body& body) const {
    for (const Block& b : body) std::visit([&](const auto& op) { node(out, b.index, op); }, b.op);
  }
  void node(std::vector<Node>&, int, const Compute&) const {}
  void node(std::vector<Node>& out, int, const Region& r) const { add(out, r.body); }
  void node(std::vector<Node>& out, int i, const Loop& l) const {
    Node n{"loop", ptr(i), {}, {}};
    if (l.var_slot >= 0) loop_slots.push_back(l.var_slot);
    add(n.then_body, l.body);
    if (l.var_slot >= 0) loop_slots.pop_back();
    if (!n.then_body.empty()) out.push_back(std::move(n));
  }
  void node(std::vector<Node>& out, int i, const Branch& b) const {
    if (flatten && b.condition) {
      const bool per_loop = std::any_of(loop_slots.begin(), loop_slots.end(), [&](int v) { return b.condition->uses(v); });
      if (frame && !per_loop) {
        add(out, b.condition->eval(*frame) != 0 ? b.then_body : b.else_body);
        return;
      }
      add(out, b.then_body);
      add(out, b.else_body);
      return;
    }
    Node n{b.condition ? "if" : "if prob", ptr(i), {}, {}, i};
    add(n.then_body, b.then_body);
    add(n.else_body, b.else_body);
    if (!n.then_body.empty() || !n.else_body.empty()) out.push_back(std::move(n));
  }
  void node(std::vector<Node>& out, int i, const P2P& p) const {
    out.push_back({std::string(p2p_name(p.kind)) + (p.comm ? std::string(" on ") + comm_kind(sk, p.comm) : ""), ptr(i), {}, {}});
  }
  void node(std::vector<Node>& out, int i, const Wait&) const { out.push_back({"wait", ptr(i), {}, {}}); }
  void node(std::vector<Node>& out, int i, const WaitAll&) const { out.push_back({"waitall", ptr(i), {}, {}}); }
  void node(std::vector<Node>& out, int i, const Collective& c) const {
    out.push_back({std::string(collective_name(c.kind)) + (c.comm ? std::string(" on ") + comm_kind(sk, c.comm) : ""), ptr(i), {}, {}});
  }

  // Rank groups as a chain of ifs on their `ranks`; the last group is the else of the chain.
  std::vector<Node> program() const {
    std::vector<Node> out;
    if (frame) {
      const int g = select_group(sk, *frame);
      if (g >= 0) add(out, sk.groups[static_cast<std::size_t>(g)].body);
      return out;
    }
    std::vector<Node>* at = &out;
    for (std::size_t g = 0; g < sk.groups.size(); ++g) {
      if (g + 1 == sk.groups.size() || flatten) {
        add(*at, sk.groups[g].body);
      } else {
        at->push_back({"if", "/programs/" + std::to_string(g) + "/ranks", {}, {}});
        add(at->back().then_body, sk.groups[g].body);
        at = &at->back().else_body;
      }
    }
    return out;
  }
};

struct Differ {
  Differ(const Skeleton& a_, const Skeleton& b_, const DiffOptions& o) : a(a_), b(b_), opt(o) {}
  const Skeleton &a, &b;
  const DiffOptions& opt;
  DiffReport rep;
  std::set<std::tuple<std::string, std::string, std::string>> seen;  // (kind, path_a, path_b): one of each
  std::vector<std::pair<int, int>> prob_pairs;  // structurally matched prob branches (A's block, B's block)
  const Skeleton* b_run = nullptr;  // B as expanded: B itself, or a copy with A's probabilities

  bool full() const { return rep.differences.size() >= opt.max_differences; }

  std::vector<std::string> skipped;  // points where A cannot run
  std::string first_skip_reason;
  void skip(const std::string& at, const std::string& why) {
    if (skipped.empty()) first_skip_reason = why;
    skipped.push_back(at);
  }

  void add(SkeletonDifference d) {
    if (full() || !seen.emplace(d.kind, d.path_a, d.path_b).second) return;
    rep.differences.push_back(std::move(d));
  }

  static std::string container(const std::string& pointer, const std::string& body) {
    return pointer.empty() ? body : pointer + body;
  }

  // The first structural difference only (those after it are mostly its consequences).
  void structure(const std::vector<Node>& x, const std::vector<Node>& y, const std::string& at_a, const std::string& at_b) {
    const std::size_t n = std::min(x.size(), y.size());
    for (std::size_t i = 0; i < n && rep.structural() == 0; ++i) {
      if (x[i].label != y[i].label) {
        add({"structure", x[i].pointer, y[i].pointer, "A has " + x[i].label + ", B has " + y[i].label + " (node " + std::to_string(i) +
             " of the communication in " + (at_a.empty() ? "/" : at_a) + " and " + (at_b.empty() ? "/" : at_b) + ")"});
        return;
      }
      if (x[i].label == "if prob") prob_pairs.emplace_back(x[i].block, y[i].block);
      const bool branch = x[i].label.rfind("if", 0) == 0;
      structure(x[i].then_body, y[i].then_body, x[i].pointer + (branch ? "/then" : "/body"), y[i].pointer + (branch ? "/then" : "/body"));
      structure(x[i].else_body, y[i].else_body, x[i].pointer + "/else", y[i].pointer + "/else");
    }
    if (x.size() != y.size() && rep.structural() == 0) {
      const bool a_longer = x.size() > y.size();
      const Node& extra = a_longer ? x[n] : y[n];
      add({"structure", a_longer ? extra.pointer : "", a_longer ? "" : extra.pointer,
           std::string(a_longer ? "A" : "B") + " has " + std::to_string((a_longer ? x.size() : y.size()) - n) + " more node(s) after node " +
               std::to_string(n) + " of the communication in " + (at_a.empty() ? "/" : at_a) + " and " + (at_b.empty() ? "/" : at_b) +
               ", the first " + extra.label});
    }
  }

  void communicators() {
    const std::size_t n = std::max(a.comms.size(), b.comms.size());
    for (std::size_t i = 0; i < n; ++i) {
      const std::string ka = i < a.comms.size() ? comm_kind(a, static_cast<int>(i + 1)) : "nothing";
      const std::string kb = i < b.comms.size() ? comm_kind(b, static_cast<int>(i + 1)) : "nothing";
      if (ka != kb) {
        add({"communicators", i < a.comms.size() ? a.comms[i].pointer : "/comms", i < b.comms.size() ? b.comms[i].pointer : "/comms",
             "communicator " + std::to_string(i + 1) + " is a " + ka + " in A and a " + kb + " in B"});
        return;
      }
    }
  }

  static std::map<std::string, double> declared(const Skeleton& sk, const std::map<std::string, double>& point) {
    std::map<std::string, double> out;
    for (const Param& p : sk.params)
      if (auto it = point.find(p.name); it != point.end()) out[p.name] = it->second;
    return out;
  }

  static std::string ptr(const Skeleton& sk, int block) { return sk.blocks.at(static_cast<std::size_t>(block)).pointer; }

  static std::string where(int P, const std::map<std::string, double>& point) {
    std::ostringstream o;
    o << "P=" << P;
    for (const auto& [k, v] : point) o << " " << k << "=" << v;
    return o.str();
  }

  struct Side {
    std::vector<ExpandedOp> ops;
    double compute_s = 0, compute_flops = 0;
    std::string error;
  };

  static Side expand(const Skeleton& sk, const std::vector<double>& frame, int rank, const CommLayout& layout, const DiffOptions& opt) {
    Side s;
    try {
      for (ExpandedOp& x : expand_rank(sk, frame, rank, layout, opt.seed, opt.op_limit)) {
        if (x.kind == ExpandedOp::Kind::COMPUTE)
          (x.in_flops ? s.compute_flops : s.compute_s) += x.amount;
        else
          s.ops.push_back(x);
      }
    } catch (const SkeletonError& e) {
      s.error = e.what();
    }
    return s;
  }

  static std::string show(const ExpandedOp& x, int P, const CommLayout& layout, int rank) {
    CommOp op;
    op.kind = op_name(x);
    const bool p2p = x.kind != ExpandedOp::Kind::COLLECTIVE && x.kind != ExpandedOp::Kind::WAIT && x.kind != ExpandedOp::Kind::WAITALL;
    if (p2p || x.kind == ExpandedOp::Kind::COLLECTIVE) op.comm = comm_code(layout.members(x.comm, rank), P);
    if (p2p) {
      op.peer = x.peer == -2 ? -2 : x.peer;
      op.tag = x.tag;
    }
    if (p2p || x.kind == ExpandedOp::Kind::COLLECTIVE) op.bytes = static_cast<long>(x.size_bytes);
    op.root = x.root;
    std::string s = describe(op);
    if (x.peer == -3) s += " [PROC_NULL]";
    return s;
  }

  // --flatten-conditions: each rank's structure in A against its structure in B, at every P of `Ps` from 2 to 8 with
  // the point `pt`; false (nothing compared) when either side cannot be bound there.
  bool structure_per_rank(const std::vector<int>& Ps, const std::map<std::string, double>& pt) {
    const std::map<std::string, double> pa = declared(a, pt), pb = declared(b, pt);
    bool any = false;
    for (const int P : Ps) {
      if (P < 2 || P > 8) continue;
      std::vector<double> fa, fb;
      CommLayout la, lb;
      try {
        fa = bind_parameters(a, P, pa);
        la = layout_comms(a, fa, P);
        fb = bind_parameters(b, P, pb);
        lb = layout_comms(b, fb, P);
      } catch (const SkeletonError&) {
        continue;
      }
      for (int r = 0; r < P && !full(); ++r) {
        std::vector<double> ra = fa, rb = fb;
        bind_rank(a, ra, r, la);
        bind_rank(b, rb, r, lb);
        if (select_group(a, ra) < 0) break;  // a P where A cannot run (pge2 at odd P) is not compared
        Structure sa{a, true, &ra, {}}, sb{b, true, &rb, {}};
        structure(sa.program(), sb.program(), "", "");
        any = true;
      }
    }
    return any;
  }

  // The expansions of both at one (P, point).
  void point(int P, const std::map<std::string, double>& pt) {
    const std::map<std::string, double> pa = declared(a, pt), pb = declared(b, pt);
    std::vector<double> fa, fb;
    CommLayout la, lb;
    try {
      fa = bind_parameters(a, P, pa);
      la = layout_comms(a, fa, P);
    } catch (const SkeletonError& e) {
      skip(where(P, pt), e.what());
      return;
    }
    try {
      fb = bind_parameters(b, P, pb);
      lb = layout_comms(b, fb, P);
    } catch (const SkeletonError& e) {
      add({"expansion", "", "", where(P, pt) + ": B: " + e.what(), P});
      return;
    }
    double sum_a = 0, sum_b = 0;
    std::vector<Side> xs;
    for (int r = 0; r < P; ++r) {  // A first: a point where A itself cannot run (atm2d at P = 5) is not compared
      xs.push_back(expand(a, fa, r, la, opt));
      if (!xs.back().error.empty()) {
        skip(where(P, pt), "rank " + std::to_string(r) + ": " + xs.back().error);
        return;
      }
    }
    ++rep.points;
    Skeleton with_a;  // B with A's probabilities at this point
    b_run = &b;
    if (opt.prob_tol >= 0 && !prob_pairs.empty()) {
      with_a = b;
      b_run = &with_a;
      for (const auto& [ia, ib] : prob_pairs) {
        const Branch *pa = find_branch(a, ia), *pb = find_branch(b, ib);
        Branch* target = nullptr;
        for (RankGroup& g : with_a.groups)
          if (!target) target = find_branch(g.body, ib);
        if (!pa || !pb || !target) continue;
        double first = 0;
        bool uniform = true;
        for (int r = 0; r < P; ++r) {
          std::vector<double> ra = fa, rb = fb;
          bind_rank(a, ra, r, la);
          bind_rank(b, rb, r, lb);
          const double va = pa->probability.eval(ra), vb = pb->probability.eval(rb);
          if (r == 0) first = va;
          uniform = uniform && va == first;
          if (std::fabs(va - vb) > opt.prob_tol) {
            std::ostringstream o;
            o << where(P, pt) << " rank " << r << ": probability A " << va << ", B " << vb << ", beyond " << opt.prob_tol;
            add({"probability", ptr(a, ia), ptr(b, ib), o.str(), P, r});
            break;
          }
        }
        if (uniform) {
          std::ostringstream v;
          v.precision(17);
          v << first;
          target->probability = parse_expr(v.str(), with_a.symbols);
        } else {
          rep.notes.push_back("the probability of " + ptr(a, ia) + " depends on rank: B draws with its own");
        }
      }
    }
    for (int r = 0; r < P && !full(); ++r) {
      const Side& x = xs[static_cast<std::size_t>(r)];
      const Side y = expand(*b_run, fb, r, lb, opt);
      ++rep.ranks;
      if (!y.error.empty()) {
        add({"expansion", "", "", where(P, pt) + " rank " + std::to_string(r) + ": B: " + y.error, P, r});
        continue;
      }
      rank(P, pt, r, x, y, la, lb);
      const auto [ca, cb] = seconds(x, y);
      sum_a += ca, sum_b += cb;
    }
    if (!opt.compute_per_rank) compute(where(P, pt) + " all ranks", sum_a, sum_b, P, -1);
  }

  // Each side's compute in seconds (flops through the rate; without a rate, flops added as they are).
  std::pair<double, double> seconds(const Side& x, const Side& y) const {
    if (opt.flops_rate > 0) return {x.compute_s + x.compute_flops / opt.flops_rate, y.compute_s + y.compute_flops / opt.flops_rate};
    return {x.compute_s + x.compute_flops, y.compute_s + y.compute_flops};
  }

  void compute(const std::string& at, double ca, double cb, int P, int r) {
    if (opt.compute_rel < 0) return;
    const double gap = std::fabs(ca - cb), scale = std::max(std::fabs(ca), std::fabs(cb));
    if (scale > 0) rep.worst_compute_rel = std::max(rep.worst_compute_rel, gap / scale);
    if (gap > opt.compute_rel * scale + opt.compute_abs_s) {
      std::ostringstream o;
      o << at << ": total compute A " << ca << " s, B " << cb << " s, beyond " << opt.compute_rel << " relative + " << opt.compute_abs_s << " s";
      add({"compute", "", "", o.str(), P, r});
    }
  }

  void rank(int P, const std::map<std::string, double>& pt, int r, const Side& x, const Side& y, const CommLayout& la, const CommLayout& lb) {
    const std::size_t n = std::min(x.ops.size(), y.ops.size());
    const std::string at = where(P, pt) + " rank " + std::to_string(r);
    for (std::size_t i = 0; i < n; ++i) {
      const ExpandedOp &u = x.ops[i], &v = y.ops[i];
      ++rep.operations;
      const std::string pu = a.blocks[static_cast<std::size_t>(u.block)].pointer, pv = b.blocks[static_cast<std::size_t>(v.block)].pointer;
      const std::string both = ": A " + show(u, P, la, r) + ", B " + show(v, P, lb, r);
      if (u.kind != v.kind || (u.kind == ExpandedOp::Kind::COLLECTIVE && u.collective != v.collective)) {
        add({"operation", pu, pv, at + " operation " + std::to_string(i) + both, P, r});
        return;  // the rest of the rank is out of step
      }
      const bool p2p = u.kind != ExpandedOp::Kind::COLLECTIVE && u.kind != ExpandedOp::Kind::WAIT && u.kind != ExpandedOp::Kind::WAITALL;
      if (!p2p && u.kind != ExpandedOp::Kind::COLLECTIVE) continue;
      auto check = [&](const char* what, bool equal) {
        if (!equal) add({what, pu, pv, at + " operation " + std::to_string(i) + both, P, r});
      };
      check("comm", la.members(u.comm, r) == lb.members(v.comm, r));
      check("bytes", u.size_bytes == v.size_bytes);
      if (p2p) {
        check("peer", u.peer == v.peer);
        check("tag", u.tag == v.tag);
      } else {
        check("root", u.root == v.root);
      }
    }
    if (x.ops.size() != y.ops.size()) {
      const bool a_longer = x.ops.size() > y.ops.size();
      const ExpandedOp& e = a_longer ? x.ops[n] : y.ops[n];
      const std::string p = (a_longer ? a : b).blocks[static_cast<std::size_t>(e.block)].pointer;
      add({"length", a_longer ? p : "", a_longer ? "" : p,
           at + ": A runs " + std::to_string(x.ops.size()) + " operation(s), B " + std::to_string(y.ops.size()) + "; the first extra " +
               (a_longer ? "A " : "B ") + show(e, P, a_longer ? la : lb, r),
           P, r});
    }
    if (opt.compute_per_rank) {
      const auto [ca, cb] = seconds(x, y);
      compute(at, ca, cb, P, r);
    }
  }
};

std::string fmt(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

DiffReport diff_skeletons(const Skeleton& a, const Skeleton& b, const DiffOptions& opt) {
  Differ d(a, b, opt);
  for (const Param& p : a.params)
    if (std::none_of(b.params.begin(), b.params.end(), [&](const Param& q) { return q.name == p.name; }))
      d.rep.notes.push_back("parameter " + p.name + " is declared by A only: B cannot depend on it");
  for (const Param& p : b.params)
    if (std::none_of(a.params.begin(), a.params.end(), [&](const Param& q) { return q.name == p.name; }))
      d.rep.notes.push_back("parameter " + p.name + " is declared by B only");
  std::vector<std::map<std::string, double>> points = opt.points;
  if (points.empty()) {  // A's defaults, given to B too
    std::map<std::string, double> defaults;
    for (const Param& p : a.params)
      if (p.default_value) defaults[p.name] = *p.default_value;
    points.push_back(defaults);
  }
  for (const auto& pt : points)
    for (const auto& [name, value] : pt) {
      (void)value;
      auto has = [&](const Skeleton& sk) { return std::any_of(sk.params.begin(), sk.params.end(), [&](const Param& q) { return q.name == name; }); };
      if (!has(a) && !has(b)) throw SkeletonError(a.file, "/params", "parameter \"" + name + "\" is declared by neither skeleton");
    }
  if (opt.structure) {
    d.communicators();
    if (opt.flatten_conditions && d.structure_per_rank(opt.P, points.front())) {
      d.rep.notes.push_back("structure compared rank by rank at P up to 8, conditions on rank, P and the parameters taken "
                            "as each rank takes them, those on loop variables dissolved (--flatten-conditions)");
    } else {
      d.structure(Structure{a, opt.flatten_conditions, nullptr, {}}.program(), Structure{b, opt.flatten_conditions, nullptr, {}}.program(), "", "");
      if (opt.flatten_conditions) d.rep.notes.push_back("structure compared with conditions dissolved (--flatten-conditions)");
    }
  } else {
    d.rep.notes.push_back("structure not compared");
  }
  for (const int P : opt.P)
    for (const auto& pt : points) {
      if (d.full()) break;
      d.point(P, pt);
    }
  if (!d.skipped.empty()) {
    std::string list;
    for (std::size_t i = 0; i < d.skipped.size() && i < 6; ++i) list += (i ? ", " : "") + d.skipped[i];
    d.rep.notes.push_back("not compared at " + std::to_string(d.skipped.size()) + " point(s) where A cannot run (" + list +
                          (d.skipped.size() > 6 ? ", ..." : "") + "; the first: " + d.first_skip_reason + ")");
  }
  if (opt.prob_tol >= 0 && !d.prob_pairs.empty())
    d.rep.notes.push_back(std::to_string(d.prob_pairs.size()) + " prob branch(es) compared within " + fmt(opt.prob_tol) +
                          "; B expanded with A's probabilities (equal in distribution)");
  if (opt.compute_rel < 0) d.rep.notes.push_back("compute not compared");
  else
    d.rep.notes.push_back(std::string("compute compared as ") + (opt.compute_per_rank ? "each rank's total" : "the sum over all ranks") +
                          ", within " + fmt(opt.compute_rel) + " relative + " + fmt(opt.compute_abs_s) + " s (measured times)");
  return d.rep;
}

std::size_t DiffReport::structural() const {
  return static_cast<std::size_t>(std::count_if(differences.begin(), differences.end(), [](const SkeletonDifference& d) {
    return d.kind == "structure" || d.kind == "communicators";
  }));
}

std::string format_diff(const DiffReport& r) {
  std::ostringstream o;
  std::size_t i = 0;
  for (const SkeletonDifference& d : r.differences) {
    o << "difference " << ++i << " (" << d.kind << "): A " << (d.path_a.empty() ? "-" : d.path_a) << ", B " << (d.path_b.empty() ? "-" : d.path_b)
      << ": " << d.detail << "\n";
  }
  for (const std::string& n : r.notes) o << "note: " << n << "\n";
  o << (r.same() ? "same" : std::to_string(r.differences.size()) + " difference(s)") << " (structure " << r.structural() << ", operations and compute "
    << r.behavioural() << "): " << r.points << " (P, parameter) point(s), "
    << r.ranks << " rank expansion(s), " << r.operations << " operation(s) compared; worst rank compute difference "
    << 100 * r.worst_compute_rel << "%\n";
  return o.str();
}

}  // namespace mksim::skeletons::builder
