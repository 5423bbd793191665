// Matching check of a skeleton at one P (matching.hpp): a worklist of ranks, each run until it waits.
#include "skeletons/matching.hpp"

#include "skeletons/comms.hpp"
#include "skeletons/error.hpp"
#include "skeletons/expand.hpp"
#include "skeletons/skeleton_io.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <sstream>
#include <utility>

namespace mksim::skeletons {
namespace {

constexpr int ANY = -2, PROC_NULL = -3;

struct Message {
  int src = 0, comm = 0, tag = 0, block = -1;
  double size = 0;
};

struct Receive {
  int rank = 0, src = 0, comm = 0, tag = 0, block = -1;
  double size = 0;
  bool blocking = false, matched = false;
};

struct Meeting {
  std::size_t arrived = 0, size = 0;
  CollectiveKind kind{};
  int root = -1, block = -1, first_rank = -1;
  bool reported = false;  // one problem per meeting
  std::vector<int> waiting;
};

class Run {
 public:
  Run(const Skeleton& sk, std::vector<std::vector<ExpandedOp>> ops, const CommLayout& layout, MatchingReport& rep)
      : sk_(sk), ops_(std::move(ops)), layout_(layout), rep_(rep), pc_(ops_.size(), 0), waits_on_(ops_.size(), -1),
        meeting_of_(ops_.size()), unexpected_(ops_.size()), posted_(ops_.size()) {}

  void go() {
    const int P = static_cast<int>(ops_.size());
    for (int r = 0; r < P; ++r) ready_.push_back(r);
    while (!ready_.empty()) {
      const int r = ready_.front();
      ready_.pop_front();
      advance(r);
    }
    report_stuck();
  }

 private:
  std::string block(int b) const {
    return b >= 0 && static_cast<std::size_t>(b) < sk_.blocks.size() ? sk_.blocks[static_cast<std::size_t>(b)].id : std::string("?");
  }
  static std::string bytes(double b) {
    std::ostringstream o;
    o << b;
    return o.str();
  }
  void problem(int priority, std::string text) { found_.emplace_back(priority, std::move(text)); }

  static bool matches(const Receive& q, const Message& m) {
    return q.comm == m.comm && (q.src == ANY || q.src == m.src) && (q.tag == ANY || q.tag == m.tag);
  }

  void bind(const Receive& q, const Message& m) {
    if (m.size > q.size + 0.5)
      problem(1, "rank " + std::to_string(q.rank) + ": message of " + bytes(m.size) + " bytes from rank " + std::to_string(m.src) +
                     " (block " + block(m.block) + ") truncated: receive is " + bytes(q.size) + " bytes (block " + block(q.block) + ")");
  }

  void deliver(int dst, const Message& m) {
    auto& posted = posted_[static_cast<std::size_t>(dst)];
    for (auto it = posted.begin(); it != posted.end(); ++it) {
      Receive& q = receives_[*it];
      if (!matches(q, m)) continue;
      bind(q, m);
      q.matched = true;
      const std::size_t id = *it;
      posted.erase(it);
      if (q.blocking && waits_on_[static_cast<std::size_t>(dst)] == static_cast<long>(id)) {
        waits_on_[static_cast<std::size_t>(dst)] = -1;
        ++pc_[static_cast<std::size_t>(dst)];
        ready_.push_back(dst);
      }
      return;
    }
    unexpected_[static_cast<std::size_t>(dst)].push_back(m);
  }

  // Posts a receive; true when a message already there matched it.
  bool post(Receive q, std::size_t& id) {
    auto& un = unexpected_[static_cast<std::size_t>(q.rank)];
    for (auto it = un.begin(); it != un.end(); ++it)
      if (matches(q, *it)) {
        bind(q, *it);
        un.erase(it);
        return true;
      }
    id = receives_.size();
    receives_.push_back(q);
    posted_[static_cast<std::size_t>(q.rank)].push_back(id);
    return false;
  }

  void advance(int r) {
    const auto R = static_cast<std::size_t>(r);
    const auto& ops = ops_[R];
    while (pc_[R] < ops.size()) {
      const ExpandedOp& op = ops[pc_[R]];
      switch (op.kind) {
        case ExpandedOp::Kind::SEND: case ExpandedOp::Kind::ISEND:
          if (op.peer >= 0) {
            ++rep_.messages;
            deliver(op.peer, {r, op.comm, op.tag, op.block, op.size_bytes});
          }
          break;
        case ExpandedOp::Kind::RECV: case ExpandedOp::Kind::IRECV: {
          if (op.peer == PROC_NULL) break;
          Receive q{r, op.peer, op.comm, op.tag, op.block, op.size_bytes, op.kind == ExpandedOp::Kind::RECV, false};
          std::size_t id = 0;
          if (!post(q, id) && q.blocking) {
            waits_on_[R] = static_cast<long>(id);
            return;  // deliver() wakes it
          }
          break;
        }
        case ExpandedOp::Kind::COLLECTIVE: {
          ++rep_.collectives;
          const auto& members = layout_.members(op.comm, r);
          const int first = members.empty() ? r : members.front();
          auto& count = calls_[{op.comm, first, r}];
          const auto key = std::make_tuple(op.comm, first, count++);
          Meeting& m = meetings_[key];
          if (m.arrived == 0) {
            m.size = members.size();
            m.kind = op.collective;
            m.root = op.root;
            m.block = op.block;
            m.first_rank = r;
          } else if ((m.kind != op.collective || m.root != op.root) && !m.reported) {
            m.reported = true;
            problem(0, "rank " + std::to_string(r) + " calls " + op_name(op) + " (block " + block(op.block) +
                           ") where rank " + std::to_string(m.first_rank) + " called " + collective_name(m.kind) +
                           (m.root >= 0 ? " with root " + std::to_string(m.root) : std::string()) + " (block " + block(m.block) +
                           "), collective " + std::to_string(std::get<2>(key) + 1) + " of their communicator");
          }
          if (++m.arrived < m.size) {
            m.waiting.push_back(r);
            meeting_of_[R] = key;
            waiting_meeting_.insert(r);
            return;
          }
          for (int w : m.waiting) {  // the last member arrived: everyone goes on
            ++pc_[static_cast<std::size_t>(w)];
            waiting_meeting_.erase(w);
            ready_.push_back(w);
          }
          m.waiting.clear();
          break;
        }
        default:  // compute, waits (an eager send is complete; a receive is checked when it matches)
          break;
      }
      ++pc_[R];
    }
  }

  void report_stuck() {
    // ranks that wait: for a message, or for the rest of their communicator
    std::map<std::string, std::vector<int>> stuck;  // what -> ranks
    for (std::size_t r = 0; r < ops_.size(); ++r) {
      if (pc_[r] >= ops_[r].size()) continue;
      const ExpandedOp& op = ops_[r][pc_[r]];
      std::string what;
      if (waits_on_[r] >= 0) {
        const Receive& q = receives_[static_cast<std::size_t>(waits_on_[r])];
        const bool src_waits = q.src >= 0 && pc_[static_cast<std::size_t>(q.src)] < ops_[static_cast<std::size_t>(q.src)].size();
        what = "wait at block " + block(op.block) + " for a message from " +
               (q.src == ANY ? std::string("any rank") : "rank " + std::to_string(q.src)) +
               (src_waits ? ", which waits too (a cycle)" : " that is never sent");
      } else {
        const auto& [comm, first, idx] = meeting_of_[r];
        const Meeting& m = meetings_[meeting_of_[r]];
        what = "wait in " + op_name(op) + " at block " + block(op.block) + " for " + std::to_string(m.size - m.arrived) + " of its " +
               std::to_string(m.size) + " members, which never call it";
        (void)comm, (void)first, (void)idx;
      }
      stuck[what].push_back(static_cast<int>(r));
    }
    for (const auto& [what, ranks] : stuck) {
      std::string list;
      for (std::size_t i = 0; i < ranks.size() && i < 6; ++i) list += (i ? ", " : "") + std::to_string(ranks[i]);
      if (ranks.size() > 6) list += ", ... (" + std::to_string(ranks.size()) + " ranks)";
      problem(0, "deadlock: rank(s) " + list + " " + what);
    }
    std::size_t lost = 0;
    int example_dst = -1;
    const Message* example = nullptr;
    for (std::size_t r = 0; r < unexpected_.size(); ++r)
      for (const Message& m : unexpected_[r]) {
        if (!example) example = &m, example_dst = static_cast<int>(r);
        ++lost;
      }
    if (example)
      problem(2, std::to_string(lost) + " message(s) never received, the first from rank " + std::to_string(example->src) + " to rank " +
                     std::to_string(example_dst) + " (tag " + std::to_string(example->tag) + ", " + bytes(example->size) +
                     " bytes, block " + block(example->block) + ")");
    std::size_t open = 0;
    const Receive* first_open = nullptr;
    for (const Receive& q : receives_)
      if (!q.matched && !q.blocking) {
        if (!first_open) first_open = &q;
        ++open;
      }
    if (first_open)
      problem(2, std::to_string(open) + " nonblocking receive(s) never matched, the first of rank " + std::to_string(first_open->rank) +
                     " from " + (first_open->src == ANY ? std::string("any rank") : "rank " + std::to_string(first_open->src)) +
                     " (block " + block(first_open->block) + ")");
    std::stable_sort(found_.begin(), found_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [prio, text] : found_) rep_.problems.push_back(std::move(text));
  }

  static std::string collective_name(CollectiveKind k) {
    ExpandedOp x;
    x.kind = ExpandedOp::Kind::COLLECTIVE;
    x.collective = k;
    return op_name(x);
  }

  const Skeleton& sk_;
  std::vector<std::vector<ExpandedOp>> ops_;
  const CommLayout& layout_;
  MatchingReport& rep_;
  std::vector<std::size_t> pc_;
  std::vector<long> waits_on_;
  std::vector<std::tuple<int, int, std::size_t>> meeting_of_;
  std::set<int> waiting_meeting_;
  std::vector<std::vector<Message>> unexpected_;
  std::vector<std::vector<std::size_t>> posted_;
  std::vector<Receive> receives_;
  std::map<std::tuple<int, int, int>, std::size_t> calls_;  // (comm, instance, rank) -> collectives called
  std::map<std::tuple<int, int, std::size_t>, Meeting> meetings_;
  std::deque<int> ready_;
  std::vector<std::pair<int, std::string>> found_;
};

}  // namespace

MatchingReport check_matching(const Skeleton& sk, const std::vector<double>& frame, int P, std::uint64_t seed,
                              std::size_t max_problems, std::size_t max_ops) {
  MatchingReport rep;
  rep.P = P;
  const CommLayout layout = layout_comms(sk, frame, P);
  std::vector<std::vector<ExpandedOp>> ops(static_cast<std::size_t>(P));
  std::size_t total = 0;
  for (int r = 0; r < P; ++r) {
    auto& o = ops[static_cast<std::size_t>(r)];
    const std::size_t budget = max_ops - total;
    try {
      o = expand_rank(sk, frame, r, layout, seed, budget + 1);
    } catch (const SkeletonError& e) {
      if (std::string(e.what()).find("more than " + std::to_string(budget + 1) + " operations") == std::string::npos) throw;
      rep.skipped = true;
      return rep;
    }
    // compute is not needed here: drop it to keep the memory of large expansions down
    o.erase(std::remove_if(o.begin(), o.end(), [](const ExpandedOp& x) { return x.kind == ExpandedOp::Kind::COMPUTE; }), o.end());
    total += o.size();
    if (total > max_ops) {
      rep.skipped = true;
      return rep;
    }
  }
  Run(sk, std::move(ops), layout, rep).go();
  if (rep.problems.size() > max_problems) {
    rep.more_problems = rep.problems.size() - max_problems;
    rep.problems.resize(max_problems);
  }
  return rep;
}

}  // namespace mksim::skeletons
