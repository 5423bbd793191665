#include "skeletons/expand.hpp"

#include "skeletons/distribution.hpp"
#include "skeletons/error.hpp"
#include "skeletons/rank_rng.hpp"
#include "skeletons/skeleton_io.hpp"

#include <cmath>
#include <sstream>

namespace mksim::skeletons {

namespace {

struct Expander {
  const Skeleton& sk;
  const CommLayout& layout;
  std::vector<double>& frame;
  int rank;
  RankRng rng;
  CoinTosses coins;
  std::size_t limit;
  std::vector<ExpandedOp> out;

  [[noreturn]] void fail(int block, const std::string& what) const {
    throw SkeletonError(sk.file, sk.blocks.at(static_cast<std::size_t>(block)).id,
                        "rank " + std::to_string(rank) + ": " + what);
  }

  void push(ExpandedOp op, int block) {
    if (out.size() >= limit) fail(block, "more than " + std::to_string(limit) + " operations");
    op.block = block;
    out.push_back(op);
  }

  void body(const Body& b) {
    for (const Block& x : b) std::visit([&](const auto& op) { exec(x.index, op); }, x.op);
  }

  void exec(int block, const Loop& l) {
    const double n = l.count.eval(frame);
    if (!(n >= 0) || !std::isfinite(n)) fail(block, "loop count \"" + l.count.text() + "\" is " + std::to_string(n));
    const auto iters = static_cast<long long>(std::floor(n));
    for (long long i = 0; i < iters; ++i) {
      if (l.var_slot >= 0) frame[static_cast<std::size_t>(l.var_slot)] = static_cast<double>(i);
      body(l.body);
    }
  }

  void exec(int, const Region& r) { body(r.body); }

  void exec(int block, const Branch& br) {
    bool taken;
    if (br.condition) {
      taken = br.condition->eval(frame) != 0;
    } else if (br.coin >= 0) {  // the shared coin of rank coin_rank: the same toss as its partner's branch
      const double of = br.coin_rank.eval(frame), P = frame[Skeleton::SLOT_P];
      if (!(of >= 0 && of < P) || of != std::floor(of)) {
        std::ostringstream v;
        v << of;
        fail(block, "coin_rank \"" + br.coin_rank.text() + "\" = " + v.str() + " is not a rank");
      }
      taken = coins.toss(br.coin, static_cast<int>(of), br.even) < br.probability.eval(frame);
    } else {
      taken = rng.uniform() < br.probability.eval(frame);
    }
    body(taken ? br.then_body : br.else_body);
  }

  void exec(int block, const Compute& c) {
    ExpandedOp op;
    op.kind = ExpandedOp::Kind::COMPUTE;
    op.amount = c.amount.eval(frame);
    op.in_flops = c.in_flops;
    if (c.dist) {  // the same draw, at the same point of the rank's stream, as the replay engine's
      const double cv = c.dist->type == Distribution::Type::EMPIRICAL ? 0.0 : c.dist->cv.eval(frame);
      if (std::string why = cv_problem(*c.dist, cv); !why.empty()) {
        std::ostringstream value;
        value << cv;
        fail(block, "cv \"" + c.dist->cv.text() + "\" = " + value.str() + " " + why);
      }
      op.amount *= draw_multiplier(*c.dist, cv, rng, coins, block);
    }
    push(op, block);
  }

  void exec(int block, const P2P& p) {
    ExpandedOp op;
    switch (p.kind) {
      case P2PKind::SEND: op.kind = ExpandedOp::Kind::SEND; break;
      case P2PKind::RECV: op.kind = ExpandedOp::Kind::RECV; break;
      case P2PKind::ISEND: op.kind = ExpandedOp::Kind::ISEND; break;
      case P2PKind::IRECV: op.kind = ExpandedOp::Kind::IRECV; break;
    }
    op.comm = p.comm;
    const std::vector<int>& members = layout.members(p.comm, rank);
    op.comm_size = static_cast<int>(members.size());
    op.peer = p.any_source ? -2 : to_world(block, members, p.peer, true);
    op.tag = p.any_tag ? -2 : (p.tag.empty() ? 0 : static_cast<int>(std::floor(p.tag.eval(frame))));
    op.size_bytes = p.size_bytes.eval(frame);
    push(op, block);
  }

  /** @brief A rank of the communicator whose members are given, as a world rank (-3: PROC_NULL). */
  int to_world(int block, const std::vector<int>& members, const Expr& e, bool null_ok) const {
    const double v = e.eval(frame);
    if (null_ok && v == PROC_NULL_PEER) return -3;
    if (!(v >= 0 && v < static_cast<double>(members.size())) || v != std::floor(v)) {
      std::ostringstream s;
      s << v;
      fail(block, "\"" + e.text() + "\" = " + s.str() + " is not a rank in [0, " + std::to_string(members.size()) + ")");
    }
    return members[static_cast<std::size_t>(v)];
  }

  void exec(int block, const Wait&) {
    ExpandedOp op;
    op.kind = ExpandedOp::Kind::WAIT;
    push(op, block);
  }

  void exec(int block, const WaitAll&) {
    ExpandedOp op;
    op.kind = ExpandedOp::Kind::WAITALL;
    push(op, block);
  }

  void exec(int block, const Collective& c) {
    ExpandedOp op;
    op.kind = ExpandedOp::Kind::COLLECTIVE;
    op.collective = c.kind;
    op.comm = c.comm;
    const std::vector<int>& members = layout.members(c.comm, rank);
    op.comm_size = static_cast<int>(members.size());
    op.root = is_rooted(c.kind) && !c.root.empty() ? to_world(block, members, c.root, false) : -1;
    op.size_bytes = c.size_bytes.empty() ? 0 : c.size_bytes.eval(frame);
    push(op, block);
  }
};

}  // namespace

std::vector<ExpandedOp> expand_rank(const Skeleton& skeleton, std::vector<double> frame, int rank,
                                    std::uint64_t seed, std::size_t limit) {
  const CommLayout layout = layout_comms(skeleton, frame, static_cast<int>(frame[Skeleton::SLOT_P]));
  return expand_rank(skeleton, std::move(frame), rank, layout, seed, limit);
}

std::vector<ExpandedOp> expand_rank(const Skeleton& skeleton, std::vector<double> frame, int rank, const CommLayout& layout,
                                    std::uint64_t seed, std::size_t limit) {
  bind_rank(skeleton, frame, rank, layout);
  const int g = select_group(skeleton, frame);
  if (g < 0)
    throw SkeletonError(skeleton.file, "/programs", "no rank group matches rank " + std::to_string(rank));
  Expander e{skeleton, layout, frame, rank, RankRng(seed, rank), CoinTosses(seed, skeleton.coins), limit, {}};
  e.body(skeleton.groups[static_cast<std::size_t>(g)].body);
  return std::move(e.out);
}

std::string op_name(const ExpandedOp& op) {
  switch (op.kind) {
    case ExpandedOp::Kind::COMPUTE: return "compute";
    case ExpandedOp::Kind::SEND: return "send";
    case ExpandedOp::Kind::RECV: return "recv";
    case ExpandedOp::Kind::ISEND: return "isend";
    case ExpandedOp::Kind::IRECV: return "irecv";
    case ExpandedOp::Kind::WAIT: return "wait";
    case ExpandedOp::Kind::WAITALL: return "waitall";
    case ExpandedOp::Kind::COLLECTIVE: return collective_name(op.collective);
  }
  return "?";
}

}  // namespace mksim::skeletons
