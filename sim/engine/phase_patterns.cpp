// Phase patterns from a walk of every rank at P.
#include "sim/engine/phase_patterns.hpp"

#include "skeletons/comms.hpp"
#include "skeletons/skeleton_io.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace mksim::sim {
namespace {

namespace sk = mksim::skeletons;

constexpr long LOOP_SAMPLES = 64;  // iterations visited of a loop whose variable a peer depends on

/** @brief What all ranks together say about one label. */
struct LabelAcc {
  int partners = 0;
  bool p2p = false, collective = false, wildcard = false, receive_first = false, self = false;
};

/** @brief One rank's view of one label while it walks. */
struct RankAcc {
  std::vector<int> partners;  // distinct, small
  int state = 0;              // 0 nothing yet, 1 sent, 2 a receive pending, 3 received before sending
  struct Send {
    int block, peer;
    const std::string* peer_text;
  };
  std::vector<Send> sends;
};

/** @brief Per send block: whether it ran, and whether its partner was paired at every rank that ran it. */
struct BlockAcc {
  bool ran = false;
  bool paired = true;
};

/** @brief True when a point-to-point peer or a condition in `body` reads `slot` (a loop variable). */
bool body_uses(const sk::Body& body, int slot) {
  for (const sk::Block& b : body) {
    const bool hit = std::visit(
        [&](const auto& op) -> bool {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, sk::P2P>) return !op.any_source && op.peer.uses(slot);
          else if constexpr (std::is_same_v<T, sk::Branch>)
            return (op.condition && op.condition->uses(slot)) || body_uses(op.then_body, slot) || body_uses(op.else_body, slot);
          else if constexpr (requires { op.body; }) return body_uses(op.body, slot);
          else return false;
        },
        b.op);
    if (hit) return true;
  }
  return false;
}

class Walker {
 public:
  Walker(const sk::Skeleton& s, std::map<std::string, LabelAcc>& labels, std::vector<BlockAcc>& blocks, int P,
         const sk::CommLayout& layout)
      : sk_(s), labels_(labels), blocks_(blocks), P_(P), layout_(layout) {}

  void rank(std::vector<double> frame, int r) {
    rank_ = r;
    frame_ = std::move(frame);
    mine_.clear();
    sk::bind_rank(sk_, frame_, r, layout_);
    const int g = sk::select_group(sk_, frame_);
    if (g < 0) return;  // check_for_run reports it
    body(sk_.groups[static_cast<std::size_t>(g)].body);
    for (auto& [label, acc] : mine_) {
      LabelAcc& l = labels_[label];
      l.partners = std::max(l.partners, static_cast<int>(acc.partners.size()));
      // a send is paired when another send of the phase, with another peer expression, reaches the same partner
      for (const RankAcc::Send& a : acc.sends) {
        bool paired = false;
        for (const RankAcc::Send& b : acc.sends) paired = paired || (b.peer == a.peer && *b.peer_text != *a.peer_text);
        BlockAcc& ba = blocks_[static_cast<std::size_t>(a.block)];
        ba.ran = true;
        ba.paired = ba.paired && paired;
      }
    }
  }

 private:
  const sk::Skeleton& sk_;
  std::map<std::string, LabelAcc>& labels_;
  std::vector<BlockAcc>& blocks_;
  std::map<std::string, RankAcc> mine_;
  std::vector<double> frame_;
  int P_ = 0, rank_ = 0;
  const sk::CommLayout& layout_;

  const std::string& label(int block) const { return sk_.blocks.at(static_cast<std::size_t>(block)).phase; }

  void body(const sk::Body& b) {
    for (const sk::Block& x : b) std::visit([&](const auto& op) { visit(x.index, op); }, x.op);
  }

  void visit(int, const sk::Loop& l) {
    const double n = std::floor(l.count.eval(frame_));
    if (!(n >= 1) || !std::isfinite(n)) return;
    if (l.var_slot < 0) {
      body(l.body);
      return;
    }
    const auto slot = static_cast<std::size_t>(l.var_slot);
    const long count = static_cast<long>(std::min(n, 1e15));
    const long samples = body_uses(l.body, l.var_slot) ? std::min(count, LOOP_SAMPLES) : 1;
    for (long k = 0; k < samples; ++k) {
      // evenly spread, first and last included
      frame_[slot] = samples == 1 ? 0.0 : std::floor(static_cast<double>(k) * static_cast<double>(count - 1) / static_cast<double>(samples - 1));
      body(l.body);
    }
    frame_[slot] = 0;
  }

  void visit(int, const sk::Branch& br) {
    if (!br.condition) {  // a probability: either side may run
      body(br.then_body);
      body(br.else_body);
      return;
    }
    body(br.condition->eval(frame_) != 0 ? br.then_body : br.else_body);
  }

  void visit(int block, const sk::P2P& p) {
    LabelAcc& l = labels_[label(block)];
    RankAcc& a = mine_[label(block)];
    l.p2p = true;
    const bool send = p.kind == sk::P2PKind::SEND || p.kind == sk::P2PKind::ISEND;
    if (!send && p.any_source) {
      l.wildcard = true;
    } else {
      // peers are ranks of the op's communicator (PROC_NULL and non-members: no partner)
      const std::vector<int>& members = layout_.members(p.comm, rank_);
      const double v = std::floor(p.peer.eval(frame_));
      if (v >= 0 && v < static_cast<double>(members.size())) {
        const int peer = members[static_cast<std::size_t>(v)];
        if (peer == rank_) l.self = true;
        else if (std::find(a.partners.begin(), a.partners.end(), peer) == a.partners.end()) a.partners.push_back(peer);
        if (send && peer != rank_) a.sends.push_back({block, peer, &p.peer.text()});
      }
    }
    // MK's fig. 2 step 3: a rank that completes a receive of the phase before its first send of it
    if (send) {
      if (a.state == 3) l.receive_first = true;
      a.state = 1;
    } else if (a.state == 0) {
      a.state = p.kind == sk::P2PKind::RECV ? 3 : 2;
    }
  }

  void complete_pending() {
    for (auto& [label, a] : mine_)
      if (a.state == 2) a.state = 3;
  }
  void visit(int, const sk::Wait&) { complete_pending(); }
  void visit(int, const sk::WaitAll&) { complete_pending(); }
  void visit(int block, const sk::Collective&) { labels_[label(block)].collective = true; }
  void visit(int, const sk::Compute&) {}
  void visit(int, const sk::Region& r) { body(r.body); }
};

}  // namespace

std::string PhasePattern::describe() const {
  const std::string n = std::to_string(partners) + (partners == 1 ? " partner" : " partners");
  if (kind == "1d" || kind == "2d" || kind == "3d") {
    std::string paired;
    if (paired_blocks > 0 && kind != "1d")
      paired = "; " + std::to_string(paired_blocks) + " of " + std::to_string(send_blocks) +
               " send blocks reach a partner another send reaches too: 1d";
    return kind + " (" + n + paired + ")" + (pattern < 0 ? ": the platform has no " + kind + " figures" : "");
  }
  if (kind == "pipeline") return "pipeline: the platform's point-to-point costs";
  if (kind == "collective") return "collective: the platform's point-to-point costs";
  if (kind == "wildcard") return "wildcard receives: the platform's point-to-point costs";
  if (kind == "self") return "messages to itself only: the platform's point-to-point costs";
  return "none (" + n + ", more than any pattern): the platform's point-to-point costs";
}

PatternMap phase_patterns(const sk::Skeleton& skeleton, const std::vector<double>& base_frame, int P,
                          const std::vector<platforms::PatternFigures>& patterns) {
  std::map<std::string, LabelAcc> labels;
  std::vector<BlockAcc> blocks(skeleton.blocks.size());
  const sk::CommLayout layout = sk::layout_comms(skeleton, base_frame, P);
  Walker w(skeleton, labels, blocks, P, layout);
  for (int r = 0; r < P; ++r) w.rank(base_frame, r);
  auto index_of = [&](const std::string& name) {
    for (std::size_t k = 0; k < patterns.size(); ++k)
      if (patterns[k].name == name) return static_cast<int>(k);
    return -1;
  };
  PatternMap map;
  map.block_pattern.assign(skeleton.blocks.size(), -1);
  std::vector<PhasePattern>& out = map.phases;
  for (const auto& [label, l] : labels) {
    PhasePattern ph;
    ph.label = label;
    ph.partners = l.partners;
    if (l.collective && !l.p2p) ph.kind = "collective";
    else if (l.wildcard) ph.kind = "wildcard";
    else if (l.receive_first) ph.kind = "pipeline";
    else if (l.partners == 0) ph.kind = l.self ? "self" : "none";
    else ph.kind = platforms::pattern_for_partners(l.partners);
    if (ph.kind.empty()) ph.kind = "none";
    // a label with both a collective and point-to-point messages keeps the pattern of its messages
    ph.pattern = index_of(ph.kind);
    const bool patterned = platforms::pattern_max_partners(ph.kind) > 0;
    for (std::size_t i = 0; i < skeleton.blocks.size(); ++i) {
      if (skeleton.blocks[i].phase != label || !blocks[i].ran) continue;
      ++ph.send_blocks;
      int k = ph.pattern;
      if (patterned && ph.kind != "1d" && blocks[i].paired) {
        ++ph.paired_blocks;
        if (const int one = index_of("1d"); one >= 0) k = one;
      }
      map.block_pattern[i] = patterned ? k : -1;
    }
    out.push_back(ph);
  }
  return map;
}

double pattern_extra_s(const platforms::PatternFigures& p, double bytes, double s, double r, double o) {
  return std::max(0.0, p.message_s(bytes) - s - r - o);
}

}  // namespace mksim::sim
