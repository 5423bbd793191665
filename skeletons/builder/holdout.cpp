// Hold-out comparison of a skeleton's expansion with a real trace (holdout.hpp).
#include "skeletons/builder/holdout.hpp"
#include "skeletons/builder/fold.hpp"
#include "skeletons/builder/topology.hpp"

#include "skeletons/error.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/skeleton_io.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace mksim::skeletons::builder {

using trace::Kind;

std::string describe(const CommOp& op) {
  std::ostringstream o;
  o << op.kind << "(";
  const char* sep = "";
  auto field = [&](const std::string& s) {
    o << sep << s;
    sep = ", ";
  };
  const bool p2p = op.kind == "send" || op.kind == "recv" || op.kind == "isend" || op.kind == "irecv";
  if (p2p) {
    field(op.peer == trace::ANY ? std::string("any source") : "peer " + std::to_string(op.peer));
    field(op.tag == trace::ANY ? std::string("any tag") : "tag " + std::to_string(op.tag));
  }
  if (p2p || op.bytes != 0) field(std::to_string(op.bytes) + " B");
  if (op.root >= 0) field("root " + std::to_string(op.root));
  if (op.comm != 0) field("comm " + std::to_string(op.comm));
  o << ")";
  return o.str();
}

std::vector<std::map<long, long>> communicator_sizes(const trace::Run& run) {
  // A communicator made by a collective call is identified on every rank by (its parent's identity, how
  // many communicators this rank made from that parent before, the colour); its members are the ranks
  // that give it the same identity.
  const std::size_t P = run.ranks.size();
  std::vector<std::map<long, std::string>> key(P);
  std::map<std::string, long> members;
  for (std::size_t r = 0; r < P; ++r) {
    key[r][0] = "w";
    std::map<long, long> made_from;  // parent id -> creations so far
    for (const trace::Event& e : run.ranks[r].events) {
      if (e.kind != Kind::COMM_DUP && e.kind != Kind::COMM_SPLIT && e.kind != Kind::CART_CREATE) continue;
      const long parent = static_cast<long>(e.comm);
      const long seq = made_from[parent]++;
      auto pk = key[r].find(parent);
      if (e.root < 0 || pk == key[r].end()) continue;  // MPI_COMM_NULL, or a parent of unknown membership
      const long colour = e.kind == Kind::COMM_SPLIT ? e.tag : 0;
      const std::string k = pk->second + "/" + std::to_string(seq) + ":" + std::to_string(colour);
      key[r][e.root] = k;
      ++members[k];
    }
  }
  std::vector<std::map<long, long>> sizes(P);
  for (std::size_t r = 0; r < P; ++r)
    for (const auto& [id, k] : key[r]) sizes[r][id] = id == 0 ? static_cast<long>(P) : members[k];
  return sizes;
}

namespace {

bool rooted(const std::string& kind) { return kind == "bcast" || kind == "reduce" || kind == "gather" || kind == "scatter"; }

// "MPI_Gatherv" -> "gatherv": calls the skeleton format has no op for keep their own name (and so differ)
std::string plain_name(Kind k) {
  std::string s(trace::kind_name(k));
  if (s.rfind("MPI_", 0) == 0) s = s.substr(4);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

}  // namespace

std::vector<CommOp> traced_ops(const trace::RankTrace& t, const std::map<long, long>& sizes) {
  std::vector<CommOp> ops;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = t.events[i];
    CommOp op;
    op.comm = static_cast<long>(e.comm);
    if (const char* k = p2p_op_name(e.kind)) {
      op.kind = k;
      op.peer = e.posted_any_source() ? trace::ANY : e.peer;
      op.tag = e.posted_any_tag() ? trace::ANY : e.tag;
      op.bytes = static_cast<long>(e.bytes);
      ops.push_back(op);
      continue;
    }
    if (e.kind == Kind::SENDRECV) {  // what it does: isend, irecv (its COMPLETE record), wait, wait
      op.kind = "isend";
      op.peer = e.peer, op.tag = e.tag, op.bytes = static_cast<long>(e.bytes);
      ops.push_back(op);
      CommOp r;
      r.kind = "irecv";
      r.comm = op.comm;
      if (i + 1 < t.events.size() && t.events[i + 1].kind == Kind::COMPLETE) {
        const trace::Event& c = t.events[i + 1];
        r.peer = c.posted_any_source() ? trace::ANY : c.peer;
        r.tag = c.posted_any_tag() ? trace::ANY : c.tag;
        r.bytes = static_cast<long>(c.bytes);
      }
      ops.push_back(r);
      ops.push_back({"wait"});
      ops.push_back({"wait"});
      continue;
    }
    if (const char* k = collective_op_name(e.kind)) {
      op.kind = k;
      op.bytes = static_cast<long>(e.bytes);
      if (e.kind == Kind::ALLTOALL) {  // the trace has everything sent, the skeleton bytes per destination
        auto s = sizes.find(op.comm);
        if (s != sizes.end() && s->second > 0) op.bytes /= s->second;
      }
      if (rooted(op.kind)) op.root = e.root;
      ops.push_back(op);
      continue;
    }
    switch (e.kind) {
      case Kind::WAIT:
        if (e.root > 0) ops.push_back({"wait"});  // a wait that completed nothing traced is no operation
        break;
      case Kind::WAITALL:
        ops.push_back({"waitall"});
        break;
      case Kind::COMPLETE: case Kind::INIT: case Kind::INIT_THREAD: case Kind::FINALIZE: case Kind::COMM_DUP:
      case Kind::COMM_SPLIT: case Kind::CART_CREATE: case Kind::COMM_FREE:
        break;
      default:
        // communicator and topology calls are the skeleton's `comms` declarations, not operations
        if (trace::is_annotation(e.kind) || trace::creates_comm(e.kind) || e.kind == Kind::DIMS_CREATE ||
            e.kind == Kind::CART_SHIFT)
          break;
        op.kind = plain_name(e.kind);  // waitany, test, probe, gatherv, ...: kept, so that they show
        op.comm = static_cast<long>(e.comm);
        ops.push_back(op);
    }
  }
  return ops;
}

long comm_code(const std::vector<int>& members, int P) {
  bool world = static_cast<int>(members.size()) == P;
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < members.size(); ++i) {
    world = world && members[i] == static_cast<int>(i);
    h = (h ^ static_cast<std::uint64_t>(members[i] + 1)) * 1099511628211ull;
  }
  return world ? 0 : 1 + static_cast<long>(h % 2147483629ull);
}

Volume traced_volume(const trace::RankTrace& t) {
  Volume v;
  double prev_exit = 0;
  bool started = false;
  for (const trace::Event& e : t.events) {
    if (e.kind == Kind::COMPLETE) continue;  // part of the call before it (fold_rank takes the gaps the same way)
    if (started) {
      v.compute_s += e.gap_after(prev_exit);
      v.compute_flops += e.gap_flops;
    }
    started = true;
    prev_exit = e.t_exit;
    if ((e.kind == Kind::SEND || e.kind == Kind::ISEND || e.kind == Kind::SENDRECV) && e.peer >= 0) {
      ++v.messages_sent;
      v.bytes_sent += static_cast<double>(e.bytes);
    } else if (collective_op_name(e.kind)) {
      ++v.collectives;
    }
  }
  return v;
}

std::vector<CommOp> expanded_ops(const Skeleton& sk, int P, const std::map<std::string, double>& params, int rank,
                                 Volume* volume) {
  std::vector<CommOp> ops;
  const auto frame = bind_parameters(sk, P, params);
  const CommLayout layout = layout_comms(sk, frame, P);
  Volume v;
  for (const ExpandedOp& x : expand_rank(sk, frame, rank, layout)) {
    if (x.kind == ExpandedOp::Kind::COMPUTE) {
      (x.in_flops ? v.compute_flops : v.compute_s) += x.amount;
      continue;
    }
    if ((x.kind == ExpandedOp::Kind::SEND || x.kind == ExpandedOp::Kind::ISEND) && x.peer != -3) {
      ++v.messages_sent;
      v.bytes_sent += x.size_bytes;
    }
    if (x.kind == ExpandedOp::Kind::COLLECTIVE) ++v.collectives;
    CommOp op;
    op.kind = op_name(x);
    const bool p2p = x.kind == ExpandedOp::Kind::SEND || x.kind == ExpandedOp::Kind::RECV ||
                     x.kind == ExpandedOp::Kind::ISEND || x.kind == ExpandedOp::Kind::IRECV;
    if (p2p || x.kind == ExpandedOp::Kind::COLLECTIVE) op.comm = comm_code(layout.members(x.comm, rank), P);
    if (p2p) {
      op.peer = x.peer;
      op.tag = x.tag;
      op.bytes = static_cast<long>(x.size_bytes);
    } else if (x.kind == ExpandedOp::Kind::COLLECTIVE) {
      op.bytes = static_cast<long>(x.size_bytes);
      if (rooted(op.kind)) op.root = x.root;
    }
    ops.push_back(op);
  }
  if (volume) *volume = v;
  return ops;
}

std::size_t HoldOutReport::exact_ranks() const {
  return static_cast<std::size_t>(std::count_if(ranks.begin(), ranks.end(), [](const RankComparison& r) { return r.exact(); }));
}

std::size_t HoldOutReport::traced_ops() const {
  std::size_t n = 0;
  for (const auto& r : ranks) n += r.traced;
  return n;
}

HoldOutReport compare_with_trace(const Skeleton& sk, const trace::Run& run, const std::map<std::string, double>& params) {
  HoldOutReport rep;
  rep.P = run.P;
  // communicators are compared by their members (world ranks in order): the tracer's ids and the skeleton's
  // declarations number them differently
  const TopoRun tr{&run, {}, run.dir};
  const Topology topo({tr}, {});
  const auto old_sizes = communicator_sizes(run);
  for (int rank = 0; rank < run.P; ++rank) {
    RankComparison rc;
    rc.rank = rank;
    const auto comms = topo.communicators(tr, rank);
    std::map<long, long> sizes = old_sizes[static_cast<std::size_t>(rank)];  // traces without ARGS records
    for (const auto& [id, m] : comms) sizes[static_cast<long>(id)] = static_cast<long>(m.size());
    auto want = traced_ops(run.ranks[static_cast<std::size_t>(rank)], sizes);
    for (CommOp& op : want)
      if (auto it = comms.find(static_cast<std::uint32_t>(op.comm)); it != comms.end()) op.comm = comm_code(it->second, run.P);
    rc.traced = want.size();
    rc.traced_sum = traced_volume(run.ranks[static_cast<std::size_t>(rank)]);
    std::vector<CommOp> got;
    try {
      got = expanded_ops(sk, run.P, params, rank, &rc.skeleton_sum);
    } catch (const SkeletonError& e) {
      rc.error = e.what();
      rep.ranks.push_back(std::move(rc));
      continue;
    }
    rc.expanded = got.size();
    const std::size_t n = std::min(got.size(), want.size());
    std::size_t i = 0;
    while (i < n && got[i] == want[i]) ++i;
    if (i < n || got.size() != want.size()) {
      rc.first_difference = i;
      if (i < got.size()) rc.skeleton_op = got[i];
      if (i < want.size()) rc.trace_op = want[i];
    }
    rep.ranks.push_back(std::move(rc));
  }
  return rep;
}

VolumeErrors volume_errors(const HoldOutReport& report) {
  VolumeErrors ve;
  auto add = [](VolumeErrors::Stat& st, double got, double want, int rank) {
    const double err = want != 0 ? std::abs(got - want) / std::abs(want) : (got == 0 ? 0.0 : 1.0);
    st.mean += err;
    if (st.worst_rank < 0 || err > st.worst) st.worst = err, st.worst_rank = rank;
  };
  for (const auto& r : report.ranks) {
    if (!r.error.empty()) continue;
    ++ve.ranks;
    const Volume &a = r.skeleton_sum, &b = r.traced_sum;
    add(ve.messages, static_cast<double>(a.messages_sent), static_cast<double>(b.messages_sent), r.rank);
    add(ve.bytes, a.bytes_sent, b.bytes_sent, r.rank);
    add(ve.collectives, static_cast<double>(a.collectives), static_cast<double>(b.collectives), r.rank);
    add(ve.compute_s, a.compute_s, b.compute_s, r.rank);
    add(ve.compute_flops, a.compute_flops, b.compute_flops, r.rank);
  }
  if (ve.ranks > 0)
    for (auto* st : {&ve.messages, &ve.bytes, &ve.collectives, &ve.compute_s, &ve.compute_flops})
      st->mean /= static_cast<double>(ve.ranks);
  return ve;
}

}  // namespace mksim::skeletons::builder
