// The replay engine: walks each rank's skeleton tree (never expanded into a trace) inside one SimGrid actor
// per rank; message matching is mksim's (MPI order: source, tag, context), data transfers are SimGrid's.
#include "sim/engine/replay.hpp"

#include "skeletons/distribution.hpp"
#include "skeletons/rank_rng.hpp"

#include "sim/engine/collectives.hpp"
#include "sim/engine/phase_patterns.hpp"
#include "sim/engine/platform.hpp"
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"

#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>
#include <xbt/config.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <memory>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#ifndef MKSIM_VERSION
#define MKSIM_VERSION "0.0.0"
#endif

namespace sg4 = simgrid::s4u;

namespace mksim::sim {

using namespace mksim::skeletons;

namespace {

constexpr int ANY = -1;
constexpr std::size_t TIMELINE_MAX_ROWS = 5'000'000;

/** @brief One MPI request (a send or a receive). Eager sends are complete once posted. */
struct Request {
  bool is_send = false;
  bool eager = false;
  bool started = false;  // the transfer exists (comm is set) or, for eager sends, the data left
  bool done = false;     // the transfer finished (and, for a receive, it is matched)
  std::uint8_t ctx = 0;  // 0: user messages, 1: collectives' internal messages
  int owner = 0;
  int peer = 0;          // destination of a send; source (or ANY) of a receive
  int tag = 0;           // or ANY for receives
  int block = -1;        // skeleton block that posted it
  double size = 0;       // bytes
  double match_time = 0; // when the partner arrived (the transfer started)
  int matched_peer = -1; // for receives: the sender of the message matched (diagnosis: who was waited for)
  bool launching = false; // a rank is posting this send's transfer
  bool figured = false;   // its cost is a per-pattern figure (post_send): the transfer carries no bytes, only latency
  sg4::Mailbox* box = nullptr;  // private mailbox of this transfer (from a pool), while it runs
  void* landing = nullptr;      // where SimGrid "copies" the payload pointer at the receiver
  std::shared_ptr<Request> matched_recv;  // for sends: the receive that matched it
};
using ReqPtr = std::shared_ptr<Request>;

/** @brief Thrown inside rank actors to unwind them when the run is aborted (deadlock or error). */
struct Aborted {};

struct TimelineRow {
  int rank;
  int block;
  const char* kind;
  double start;
  double end;
};

/** @brief A side of a transfer that a rank must post from its host (its partner started the transfer). */
struct TransferJob {
  ReqPtr send;
  bool put;  // true: the sending side, false: the receiving side
};

struct RankState {
  sg4::Host* host = nullptr;
  std::vector<double> frame;
  skeletons::RankRng rng;
  skeletons::CoinTosses coins;    // shared coins of prob branches (format v2 `coin`)
  std::deque<ReqPtr> posted;      // receives waiting for a message
  std::deque<ReqPtr> unexpected;  // messages (eager) or rendezvous sends waiting for a receive
  std::vector<ReqPtr> outstanding;
  std::vector<ReqPtr> named;      // request slots of the skeleton
  sg4::SemaphorePtr sem;
  bool blocked = false;           // waiting on sem for a partner
  const Request* waiting_for = nullptr;
  bool finished = false;
  int coll_seq = 0;
  results::RankTimes times;
  // SimGrid comm handles this rank's actor posted, kept until their transfer is done and waited for.
  std::vector<std::pair<sg4::CommPtr, ReqPtr>> handles;
  std::vector<TransferJob> jobs;  // transfer sides to post from this rank's host, served before it blocks
  bool sleeping = false;          // in an interruptible sleep (compute, overheads)
  bool completed = false;         // the actor reached its end (not killed by SimGrid)
  const char* in_measured = nullptr;  // waiting for the others in this measured collective
  double ahead = 0;               // local work done but not yet slept: the rank's time is clock + ahead
  double agg = 1;                 // what-if aggregation: multiplier of message sizes and compute in aggregated loops
  // Diagnosis: waits of the current MPI block by the peer waited for and by kind, flushed by account().
  std::vector<std::pair<int, double>> wait_peers;
  double wait_late_sender = 0, wait_late_receiver = 0, wait_collective = 0;
};

/** @brief Time split of one MPI operation. */
struct Split {
  double comm = 0;
  double wait = 0;
};

}  // namespace

/** @brief Per-run state shared by the rank actors (they run one at a time, so no locking). */
class ReplayContext final : public P2PLayer {
 public:
  ReplayContext(const Skeleton& sk, const MachineParams& m, std::vector<sg4::Host*> hosts, int P,
                const std::vector<double>& base_frame, std::uint64_t seed, bool timeline)
      : sk_(sk), m_(m), P_(P), timeline_on_(timeline) {
    ranks_.resize(P);
    for (int r = 0; r < P; ++r) {
      RankState& rs = ranks_[r];
      rs.host = hosts[r];
      rs.frame = base_frame;
      bind_rank(sk_, rs.frame, r);
      rs.rng = skeletons::RankRng(seed, r);
      rs.coins = skeletons::CoinTosses(seed, sk_.coins);
      rs.named.resize(sk_.request_slots);
    }
    block_exec_.assign(sk_.blocks.size(), 0);
    block_time_.assign(sk_.blocks.size(), 0.0);
    block_bytes_.assign(sk_.blocks.size(), 0.0);
    // Phase labels, sorted, and each block's phase index.
    // Phases are reported for blocks that spend time themselves; loops, branches and regions only contain others.
    auto is_leaf = [](const BlockInfo& b) { return b.op != "loop" && b.op != "if" && b.op != "region"; };
    std::vector<std::string> labels;
    for (const auto& b : sk_.blocks)
      if (is_leaf(b)) labels.push_back(b.phase);
    std::sort(labels.begin(), labels.end());
    labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
    phase_.assign(labels.size(), results::PhaseTotals{});
    for (std::size_t i = 0; i < labels.size(); ++i) phase_[i].phase = labels[i];
    for (const auto& b : sk_.blocks)
      block_phase_.push_back(is_leaf(b) ? static_cast<int>(std::lower_bound(labels.begin(), labels.end(), b.phase) - labels.begin())
                                        : -1);
    rank_phase_.assign(static_cast<std::size_t>(P_) * phase_.size(), 0.0);
    active_ = P;
    for (auto& rs : ranks_) rs.sem = sg4::Semaphore::create(0);  // before any rank runs: others may poke it
  }

  /** @brief Turns on per-rank block statistics and applies the what-ifs (block ids resolved here). */
  void configure_diagnosis(bool stats, const std::vector<WhatIf>& what_ifs) {
    stats_ = stats;
    const std::size_t B = sk_.blocks.size();
    if (stats_) {
      rank_block_compute_.assign(static_cast<std::size_t>(P_) * B, 0.0);
      rank_block_wait_.assign(static_cast<std::size_t>(P_) * B, 0.0);
      rank_block_exec_.assign(static_cast<std::size_t>(P_) * B, 0.0);
      rank_phase_compute_.assign(static_cast<std::size_t>(P_) * phase_.size(), 0.0);
      block_cause_.assign(B, {});
      block_late_sender_.assign(B, 0.0);
      block_late_receiver_.assign(B, 0.0);
      block_coll_wait_.assign(B, 0.0);
    }
    set_compute_.assign(B, -1.0);
    scale_compute_.assign(B, 1.0);
    aggregate_.assign(B, 1.0);
    for (const WhatIf& w : what_ifs) {
      int b = -1;
      for (std::size_t i = 0; i < B; ++i)
        if (sk_.blocks[i].id == w.block) {
          b = static_cast<int>(i);
          break;
        }
      if (b < 0) throw ReplayError("what-if: no block with id \"" + w.block + "\"");
      const std::string& op = sk_.blocks[b].op;
      if (!(w.value >= 0) || !std::isfinite(w.value)) throw ReplayError("what-if on " + w.block + ": bad value " + fmt(w.value));
      switch (w.kind) {
        case WhatIf::Kind::SET_COMPUTE_S:
        case WhatIf::Kind::SCALE_COMPUTE:
          if (op != "compute") throw ReplayError("what-if: block " + w.block + " is a " + op + ", not a compute block");
          if (w.kind == WhatIf::Kind::SET_COMPUTE_S) set_compute_[b] = w.value;
          else scale_compute_[b] *= w.value;
          break;
        case WhatIf::Kind::AGGREGATE_LOOP:
          if (op != "loop") throw ReplayError("what-if: block " + w.block + " is a " + op + ", not a loop");
          if (!(w.value >= 1)) throw ReplayError("what-if: aggregation factor of " + w.block + " must be >= 1");
          aggregate_[b] = std::floor(w.value);
          break;
      }
    }
  }

  void run_rank(int r) {
    RankState& rs = ranks_[r];
    try {
      int g = select_group(sk_, rs.frame);
      if (g < 0) throw ReplayError("no rank group matches rank " + std::to_string(r));
      run_body(r, sk_.groups[g].body);
      if (!rs.outstanding.empty()) {
        // MPI requires requests to be completed; an unwaited one is a skeleton bug, reported as such.
        const Request& q = *rs.outstanding.front();
        throw ReplayError("rank " + std::to_string(r) + " finished with " + std::to_string(rs.outstanding.size()) +
                          " request(s) never waited for (first posted by block " + block_id(q.block) + ")");
      }
    } catch (const Aborted&) {
    } catch (const std::exception& e) {
      abort_run(e.what());
    }
    rs.finished = true;
    rs.times.finish_s = now(r);
    --active_;
    check_deadlock();
    // Transfers this actor posted must end before it does (SimGrid cancels an exiting actor's comms);
    // this happens after finish_s, as MPI_Finalize would.
    if (!aborting_)
      for (auto& h : rs.handles) h.first->wait();
    rs.handles.clear();
    rs.completed = true;
  }

  /** @brief Ranks whose actor did not reach its end (SimGrid killed it), as "0, 5, ..."; "" when none. */
  std::string incomplete_ranks() const {
    std::string out;
    int shown = 0;
    for (int r = 0; r < P_; ++r)
      if (!ranks_[r].completed && shown++ < 16) out += (out.empty() ? "" : ", ") + std::to_string(r);
    return out;
  }

  // ---- P2PLayer, used by collectives too ----
  std::shared_ptr<void> isend(int me, int dst, int tag, double bytes, int block) override {
    return post_send(me, dst, tag, 1, bytes, block);
  }
  std::shared_ptr<void> irecv(int me, int src, int tag, double bytes, int block) override {
    return post_recv(me, src, tag, 1, bytes, block);
  }
  void wait(int me, const std::shared_ptr<void>& req, CollAcc& acc) override {
    Split s = wait_req(me, std::static_pointer_cast<Request>(req));
    acc.comm += s.comm;
    acc.wait += s.wait;
  }

  std::string error() const { return error_; }

  /** @brief Messages sent but never received by the end of the run ("" when none): MPI would leak them. */
  std::string unmatched_messages() const {
    std::ostringstream msg;
    std::size_t count = 0;
    for (int r = 0; r < P_; ++r) {
      for (const ReqPtr& q : ranks_[r].unexpected) {
        if (count++ < 16)
          msg << "\n  rank " << q->owner << " -> rank " << r << ": tag " << q->tag << ", " << fmt(q->size) << " bytes, block "
              << block_id(q->block) << (q->eager ? "" : " (rendezvous: the sender is still blocked)");
      }
    }
    if (count == 0) return "";
    return std::to_string(count) + " message(s) sent but never received:" + msg.str() + (count > 16 ? "\n  ..." : "");
  }
  bool deadlocked() const { return deadlocked_; }

  results::RunResult collect() const {
    results::RunResult out;
    out.ranks.reserve(P_);
    for (const auto& rs : ranks_) {
      out.ranks.push_back(rs.times);
      out.total_messages += rs.times.messages_sent;
    }
    for (int r = 0; r < P_; ++r)
      if (out.ranks[r].finish_s > out.predicted_time_s) {
        out.predicted_time_s = out.ranks[r].finish_s;
        out.critical_rank = r;
      }
    for (std::size_t b = 0; b < sk_.blocks.size(); ++b)
      out.blocks.push_back(results::BlockTotals{sk_.blocks[b].id, sk_.blocks[b].op, sk_.blocks[b].phase,
                                                block_exec_[b], block_time_[b], block_bytes_[b]});
    out.phases = phase_;
    for (std::size_t k = 0; k < phase_.size(); ++k)
      out.phases[k].critical_rank_s = rank_phase_[static_cast<std::size_t>(out.critical_rank) * phase_.size() + k];
    if (stats_) collect_stats(out);
    return out;
  }

  /** @brief Summarises the per-rank block and phase figures over ranks (max, mean, argmax: a few numbers each). */
  void collect_stats(results::RunResult& out) const {
    const std::size_t B = sk_.blocks.size();
    const double inv_P = 1.0 / P_;
    for (std::size_t b = 0; b < B; ++b) {
      results::BlockStats st;
      st.id = sk_.blocks[b].id;
      double csum = 0, wsum = 0, esum = 0;
      bool first_exec = true;
      for (int r = 0; r < P_; ++r) {
        const std::size_t i = static_cast<std::size_t>(r) * B + b;
        const double c = rank_block_compute_[i], w = rank_block_wait_[i], e = rank_block_exec_[i];
        csum += c;
        wsum += w;
        esum += e;
        if (c > st.compute_max_s) st.compute_max_s = c, st.compute_argmax = r;
        if (w > st.wait_max_s) st.wait_max_s = w, st.wait_argmax = r;
        if (e > st.executions_max) st.executions_max = e, st.executions_argmax = r;
        if (e > 0) {
          ++st.ranks_executing;
          if (first_exec || w < st.wait_min_s) st.wait_min_s = w, st.wait_argmin = r;
          first_exec = false;
        }
      }
      st.compute_mean_s = csum * inv_P;
      st.wait_mean_s = wsum * inv_P;
      st.executions_mean = esum * inv_P;
      st.late_sender_s = block_late_sender_[b];
      st.late_receiver_s = block_late_receiver_[b];
      st.collective_wait_s = block_coll_wait_[b];
      for (const auto& [peer, w] : block_cause_[b])  // std::map: ascending peers, so ties go to the lowest
        if (w > st.cause_wait_s) st.cause_rank = peer, st.cause_wait_s = w;
      out.block_stats.push_back(st);
    }
    const std::size_t F = phase_.size();
    for (std::size_t k = 0; k < F; ++k) {
      results::PhaseStats ps;
      ps.phase = phase_[k].phase;
      double tsum = 0, csum = 0;
      bool first = true;
      for (int r = 0; r < P_; ++r) {
        const std::size_t i = static_cast<std::size_t>(r) * F + k;
        const double t = rank_phase_[i], c = rank_phase_compute_[i];
        tsum += t;
        csum += c;
        ps.time_max_s = std::max(ps.time_max_s, t);
        if (c > ps.compute_max_s) ps.compute_max_s = c, ps.compute_argmax = r;
        if (t > 0) {
          const double u = std::min(1.0, c / t);
          if (first || u < ps.utilisation_min) ps.utilisation_min = u, ps.utilisation_argmin = r;
          first = false;
        }
      }
      ps.time_mean_s = tsum * inv_P;
      ps.compute_mean_s = csum * inv_P;
      ps.utilisation_mean = tsum > 0 ? std::min(1.0, csum / tsum) : 0;
      out.phase_stats.push_back(ps);
    }
  }

  void write_timeline(const std::string& path) const {
    std::vector<TimelineRow> rows = timeline_;
    std::sort(rows.begin(), rows.end(), [](const TimelineRow& a, const TimelineRow& b) {
      return a.rank != b.rank ? a.rank < b.rank : a.start != b.start ? a.start < b.start : a.block < b.block;
    });
    std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp);
      if (!out) throw ReplayError("cannot write timeline " + path);
      out << "rank,start_s,end_s,kind,block\n";
      char buf[64];
      for (const auto& r : rows) {
        std::snprintf(buf, sizeof buf, ",%.9f,%.9f,", r.start, r.end);
        out << r.rank << buf << r.kind << ',' << block_id(r.block) << '\n';
      }
      if (!out) throw ReplayError("error writing timeline " + path);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw ReplayError("cannot rename timeline to " + path);
  }
  bool timeline_truncated() const { return timeline_truncated_; }

 private:
  std::string block_id(int b) const { return b >= 0 ? sk_.blocks[b].id : std::string("(internal)"); }

  // ---- interpreter ----
  void run_body(int r, const Body& body) {
    for (const Block& b : body) run_block(r, b);
  }

  void run_block(int r, const Block& b) {
    RankState& rs = ranks_[r];
    const double t0 = now(r);
    std::visit([&](const auto& op) { exec(r, b, op); }, b.op);
    block_exec_[b.index]++;
    if (stats_) rank_block_exec_[static_cast<std::size_t>(r) * sk_.blocks.size() + static_cast<std::size_t>(b.index)] += 1;
    block_time_[b.index] += now(r) - t0;
    (void)rs;
  }

  void exec(int r, const Block& b, const Loop& l) {
    RankState& rs = ranks_[r];
    double n = l.count.eval(rs.frame);
    if (!(n >= 0) || !std::isfinite(n)) throw ReplayError(where(r, -1) + "loop count \"" + l.count.text() + "\" is " + fmt(n));
    long long iters = static_cast<long long>(std::floor(n));
    const double k = aggregate_.empty() ? 1.0 : aggregate_[b.index];
    if (k > 1) {  // what-if: iters/k iterations k times larger, then the remainder as written
      const auto kk = static_cast<long long>(k);
      const double saved = rs.agg;
      rs.agg = saved * k;
      for (long long i = 0; i < iters / kk; ++i) {
        if (l.var_slot >= 0) rs.frame[l.var_slot] = static_cast<double>(i * kk);
        run_body(r, l.body);
      }
      rs.agg = saved;
      for (long long i = (iters / kk) * kk; i < iters; ++i) {
        if (l.var_slot >= 0) rs.frame[l.var_slot] = static_cast<double>(i);
        run_body(r, l.body);
      }
      return;
    }
    for (long long i = 0; i < iters; ++i) {
      if (l.var_slot >= 0) rs.frame[l.var_slot] = static_cast<double>(i);
      run_body(r, l.body);
    }
  }

  void exec(int r, const Block&, const Region& region) { run_body(r, region.body); }

  void exec(int r, const Block& b, const Branch& br) {
    RankState& rs = ranks_[r];
    bool taken;
    if (br.condition) {
      taken = br.condition->eval(rs.frame) != 0;
    } else {
      double p = br.probability.eval(rs.frame);
      if (!(p >= 0 && p <= 1)) throw ReplayError(where(r, b.index) + "probability " + fmt(p) + " is not in [0,1]");
      if (br.coin >= 0) {  // the shared coin of rank coin_rank: the same toss as its partner's branch
        const double of = br.coin_rank.eval(rs.frame);
        if (!(of >= 0 && of < P_) || of != std::floor(of))
          throw ReplayError(where(r, b.index) + "coin_rank \"" + br.coin_rank.text() + "\" = " + fmt(of) + " is not a rank in [0, " +
                            std::to_string(P_) + ")");
        taken = rs.coins.toss(br.coin, static_cast<int>(of)) < p;
      } else {
        taken = rs.rng.uniform() < p;
      }
    }
    run_body(r, taken ? br.then_body : br.else_body);
  }

  void exec(int r, const Block& b, const Compute& c) {
    RankState& rs = ranks_[r];
    double v = c.amount.eval(rs.frame);
    if (!(v >= 0) || !std::isfinite(v)) throw ReplayError(where(r, b.index) + "compute amount \"" + c.amount.text() + "\" is " + fmt(v));
    if (c.dist) {  // v is the mean: one draw from the rank's stream, as expand_rank makes it
      const double cv = c.dist->type == Distribution::Type::EMPIRICAL ? 0.0 : c.dist->cv.eval(rs.frame);
      if (std::string why = cv_problem(*c.dist, cv); !why.empty())
        throw ReplayError(where(r, b.index) + "cv \"" + c.dist->cv.text() + "\" = " + fmt(cv) + " " + why);
      v *= sample_multiplier(*c.dist, cv, rs.rng);
    }
    double seconds = c.in_flops ? v / rs.host->get_speed() : v;
    if (!set_compute_.empty()) {  // what-ifs
      if (set_compute_[b.index] >= 0) seconds = set_compute_[b.index];
      seconds *= scale_compute_[b.index] * rs.agg;
    }
    if (stats_) {
      rank_block_compute_[static_cast<std::size_t>(r) * sk_.blocks.size() + static_cast<std::size_t>(b.index)] += seconds;
      rank_phase_compute_[static_cast<std::size_t>(r) * phase_.size() + static_cast<std::size_t>(block_phase_[b.index])] += seconds;
    }
    const double t0 = now(r);
    rs.ahead += seconds;  // slept later, merged with what follows until the rank next interacts
    rs.times.compute_s += seconds;
    phase_[block_phase_[b.index]].compute_s += seconds;
    rank_phase_[static_cast<std::size_t>(r) * phase_.size() + static_cast<std::size_t>(block_phase_[b.index])] += seconds;
    {
      double& end = phase_[block_phase_[b.index]].end_s;
      end = std::max(end, now(r) + rs.ahead);
    }
    record(r, b.index, "compute", t0);
  }

  void exec(int r, const Block& b, const P2P& p) {
    RankState& rs = ranks_[r];
    double t0 = now(r);
    double size = p.size_bytes.eval(rs.frame);
    if (!(size >= 0) || !std::isfinite(size)) throw ReplayError(where(r, b.index) + "size \"" + p.size_bytes.text() + "\" is " + fmt(size));
    size *= rs.agg;
    int peer = ANY;
    if (!p.any_source) peer = checked_rank(r, b.index, p.peer);
    int tag = ANY;
    if (!p.any_tag) {
      double t = p.tag.eval(rs.frame);
      if (!(t >= 0 && t <= 1e9) || t != std::floor(t))  // MPI tags are non-negative integers
        throw ReplayError(where(r, b.index) + "tag \"" + p.tag.text() + "\" = " + fmt(t) + " is not a non-negative integer");
      tag = static_cast<int>(t);
    }
    ReqPtr req;
    if (p.kind == P2PKind::SEND || p.kind == P2PKind::ISEND) {
      req = post_send(r, peer, tag, 0, size, b.index);
      block_bytes_[b.index] += size;
    } else {
      req = post_recv(r, peer, tag, 0, size, b.index);
    }
    Split s;
    if (p.kind == P2PKind::SEND || p.kind == P2PKind::RECV) {
      s = wait_req(r, req);
    } else {
      rs.outstanding.push_back(req);
      if (p.request >= 0) rs.named[p.request] = req;
    }
    account(r, b.index, t0, s, p.kind == P2PKind::SEND || p.kind == P2PKind::ISEND ? "send" : "recv");
  }

  void exec(int r, const Block& b, const Wait& w) {
    RankState& rs = ranks_[r];
    double t0 = now(r);
    ReqPtr req = rs.named[w.request];
    Split s;
    if (req) {  // waiting on a completed or never-issued request returns at once, as MPI_REQUEST_NULL does
      auto it = std::find(rs.outstanding.begin(), rs.outstanding.end(), req);
      if (it != rs.outstanding.end()) {
        s = wait_req(r, req);
        rs.outstanding.erase(std::find(rs.outstanding.begin(), rs.outstanding.end(), req));
      }
      rs.named[w.request] = nullptr;
    }
    account(r, b.index, t0, s, "wait");
  }

  void exec(int r, const Block& b, const WaitAll&) {
    RankState& rs = ranks_[r];
    double t0 = now(r);
    Split total;
    // Completes every request; waiting in posting order gives the same end time as MPI_Waitall.
    std::vector<ReqPtr> reqs;
    reqs.swap(rs.outstanding);
    for (auto& q : reqs) {
      Split s = wait_req(r, q);
      total.comm += s.comm;
      total.wait += s.wait;
    }
    std::fill(rs.named.begin(), rs.named.end(), nullptr);
    account(r, b.index, t0, total, "waitall");
  }

  void exec(int r, const Block& b, const Collective& c) {
    RankState& rs = ranks_[r];
    double t0 = now(r);
    double size = c.size_bytes.eval(rs.frame);
    if (!(size >= 0) || !std::isfinite(size)) throw ReplayError(where(r, b.index) + "size \"" + c.size_bytes.text() + "\" is " + fmt(size));
    size *= rs.agg;
    int root = checked_rank(r, b.index, c.root);
    int seq = rs.coll_seq++ & 0x3fffffff;
    if (measured_ && measures(*measured_, collective_name(c.kind))) {
      exec_measured(r, b, c, size, seq, t0);
      return;
    }
    CollAcc acc;
    std::uint64_t sent_before = rs.times.bytes_sent;
    run_collective(*this, c.kind, r, P_, root, size, seq, b.index, acc);
    block_bytes_[b.index] += static_cast<double>(rs.times.bytes_sent - sent_before);
    account(r, b.index, t0, Split{acc.comm, acc.wait}, collective_name(c.kind));
  }

  /** @brief A collective costed from the measured table: the ranks wait for the last one to arrive (a
   *  rendezvous on the collective's sequence number), then each spends the measured t(P, bytes). */
  void exec_measured(int r, const Block& b, const Collective& c, double size, int seq, double t0) {
    RankState& rs = ranks_[r];
    const char* kind = collective_name(c.kind);
    const double t = collective_time(*measured_, kind, P_, size);
    if (std::string note = extrapolation_note(*measured_, kind, P_, size); !note.empty()) measured_notes_.insert(note);
    check_abort();
    sync(r);  // arrive at the rank's own time
    check_abort();
    Gathering& gth = gatherings_[seq];
    gth.arrived++;
    if (gth.arrived == P_) {
      gth.complete = true;
      for (int w : gth.waiting) wake(w);
      gth.waiting.clear();
    } else {
      gth.waiting.push_back(r);
      while (!gth.complete) {
        serve_jobs(r);
        if (gth.complete) break;
        rs.blocked = true;
        rs.waiting_for = nullptr;
        rs.in_measured = kind;
        --active_;
        check_deadlock();
        check_abort();
        rs.sem->acquire();
        if (rs.blocked) {  // a release left over from an interrupted sleep: count ourselves back
          rs.blocked = false;
          ++active_;
        }
        check_abort();
      }
      rs.in_measured = nullptr;
    }
    if (++gth.left == P_) gatherings_.erase(seq);
    const double wait = now(r) - t0;  // everyone leaves when the last one arrived
    rs.ahead += t;
    if (stats_ && wait > 0) rs.wait_collective += wait;
    account(r, b.index, t0, Split{t, wait}, kind);
  }

  // ---- point-to-point core ----
  static bool matches(const Request& recv, const Request& send) {
    return recv.ctx == send.ctx && (recv.peer == ANY || recv.peer == send.owner) && (recv.tag == ANY || recv.tag == send.tag);
  }

  void check_abort() const {
    if (aborting_) throw Aborted{};
  }

  // Any SimGrid call (posting a transfer side, sleeping, releasing a semaphore) may let other ranks run
  // before it returns, so the queues are updated before such a call and never left half-done across one.

  /** @brief Starts the data transfer of a send at the current time, from the rank `launcher` (its sender, or
   *  its receiver for a rendezvous), then binds the receive matched to it meanwhile, if any. The transfer is
   *  a SimGrid mailbox comm on a private mailbox: the launcher posts its side now, the partner posts the other
   *  from its own host before it next blocks or while it sleeps (serve_jobs), at the same simulated time.
   *  (SimGrid's host-to-host comms are detached, and in SimGrid 3.32 the end of each detached comm scans a
   *  list of all of them: quadratic at scale.) Nobody waits for the end: transfer_finished() reports it. */
  void launch(const ReqPtr& send, int launcher) {
    finished_.clear();  // SimGrid has run post() on their transfers since: releasing them is safe now
    send->launching = true;
    send->match_time = sg4::Engine::get_clock();
    ++inflight_;
    send->box = acquire_box();
    const bool launcher_sends = launcher == send->owner;
    const int other = launcher_sends ? send->peer : send->owner;
    ranks_[other].jobs.push_back(TransferJob{send, !launcher_sends});
    poke(other);
    auto& own = ranks_[launcher].handles;
    own.emplace_back(post_side(send, launcher_sends), send);
    if (own.size() > 64) retire(own);  // a rank that only sends (eager) and computes never waits
    send->started = true;
    send->launching = false;
    wake(send->owner);
    if (send->matched_recv) bind(*send, *send->matched_recv);
  }

  /** @brief Posts one side of a send's transfer on its mailbox from the calling actor. */
  sg4::CommPtr post_side(const ReqPtr& send, bool put) {
    sg4::CommPtr c = put ? send->box->put_async(send.get(), send->figured ? 0 : static_cast<std::uint64_t>(send->size))
                         : send->box->get_async<void>(&send->landing);
    const void* key = c->get_impl();
    if (finished_early_.erase(key)) finish_transfer(key, *send);
    else transfers_.try_emplace(key, send);
    return c;
  }

  /** @brief Waits for (and so releases) the handles whose transfer is over; keeps the others. */
  static void retire(std::vector<std::pair<sg4::CommPtr, ReqPtr>>& handles) {
    std::size_t kept = 0;
    for (auto& h : handles) {
      if (h.second->done) h.first->wait();  // returns at once; drops the comm from this actor's list
      else handles[kept++] = std::move(h);
    }
    handles.resize(kept);
  }

  sg4::Mailbox* acquire_box() {
    if (free_boxes_.empty()) return sg4::Mailbox::by_name("mksim-transfer-" + std::to_string(boxes_created_++));
    sg4::Mailbox* b = free_boxes_.back();
    free_boxes_.pop_back();
    return b;
  }

  /** @brief Gives a matched receive the transfer of its send. */
  void bind(const Request& send, Request& recv) {
    if (send.size > recv.size && recv.ctx == 0)
      throw ReplayError(where(recv.owner, recv.block) + "message of " + fmt(send.size) + " bytes from rank " +
                        std::to_string(send.owner) + " (block " + block_id(send.block) + ") truncated: receive is " +
                        fmt(recv.size) + " bytes");
    recv.match_time = send.match_time;
    recv.matched_peer = send.owner;
    recv.started = true;
    recv.done = send.done;  // an eager message may have arrived before its receive was posted
    if (recv.done) wake(recv.owner);
  }

  /** @brief A send's data arrived: the send (rendezvous) and its matched receive are complete. */
  void finish(Request& send) {
    send.done = true;
    --inflight_;
    free_boxes_.push_back(send.box);  // both sides were posted: the mailbox is empty again
    send.box = nullptr;
    wake(send.owner);
    if (send.matched_recv) {
      send.matched_recv->done = true;
      wake(send.matched_recv->owner);
    }
  }

  void finish_transfer(const void* key, Request& send) {
    transfers_.erase(key);
    finish(send);
  }

 public:
  /** @brief Called by SimGrid (maestro) when a network action changes state. */
  void transfer_finished(const void* key) {
    auto it = transfers_.find(key);
    if (it == transfers_.end() || !it->second) {  // defensive: both sides register before time can advance
      finished_early_.insert(key);
      return;
    }
    ReqPtr send = it->second;
    finish_transfer(key, *send);
    // SimGrid's post() of this transfer, after the signal, writes the payload pointer into send->landing:
    // keep the request alive until a rank runs again.
    finished_.push_back(std::move(send));
    check_deadlock();  // an eager message nobody receives may have been the last thing running
  }

 private:
  static ReqPtr make_request(bool is_send, int owner, int peer, int tag, std::uint8_t ctx, double size, int block) {
    auto req = std::make_shared<Request>();
    req->is_send = is_send;
    req->owner = owner;
    req->peer = peer;
    req->tag = tag;
    req->ctx = ctx;
    req->size = size;
    req->block = block;
    return req;
  }

  ReqPtr post_send(int me, int dst, int tag, std::uint8_t ctx, double size, int block) {
    check_abort();
    RankState& rs = ranks_[me];
    rs.ahead += m_.send_overhead_s;
    // Per-pattern figures (seed 001 table 2), when the platform has them and the block's phase has a pattern
    // (found before the run): the message costs rho + beta*D in all; they replace the per-regime figures.
    const int pattern = ctx == 0 && block >= 0 && !block_pattern_.empty() ? block_pattern_[static_cast<std::size_t>(block)] : -1;
    // Per-regime figures (0 unless the platform sets them), user messages only (collectives keep their
    // algorithm's costs): an eager message's copy c_e*m, a rendezvous message's handshake h, both paid by the
    // sender before the data leave, as the analytic model charges them (sim/model/model.cpp, send_extra).
    if (ctx == 0 && pattern < 0) {
      if (size <= m_.eager_threshold_bytes) rs.ahead += m_.eager_per_byte_s * size;
      else rs.ahead += m_.rendezvous_handshake_s;
    }
    sync(me);  // the transfer starts at the rank's own time
    check_abort();
    ReqPtr req = make_request(true, me, dst, tag, ctx, size, block);
    req->eager = size <= m_.eager_threshold_bytes;
    req->figured = pattern >= 0;
    rs.times.messages_sent++;
    rs.times.bytes_sent += static_cast<std::uint64_t>(size);
    RankState& ds = ranks_[dst];
    auto it = std::find_if(ds.posted.begin(), ds.posted.end(), [&](const ReqPtr& q) { return matches(*q, *req); });
    if (it != ds.posted.end()) {
      req->matched_recv = *it;
      ds.posted.erase(it);
      launch(req, me);
    } else {
      ds.unexpected.push_back(req);
      // Eager: the data leave now and wait at the receiver. Rendezvous: they leave when a receive matches.
      // A rank that has finished its program receives nothing more: the message stays unmatched (reported).
      if (req->eager && !ds.finished) launch(req, me);
    }
    // The pattern's cost beyond s (paid above) and the receiver's r + o, paid by the sender after the message
    // left: a rank's messages of the phase cost the sum of their rho + beta*D (seed 001 s.4: number of transfers
    // times rho plus beta times the data), as the model's exchange charges them. The figure, measured in the
    // pattern, holds the interference of its messages: the transfer carries no bytes (only the route's latency,
    // under the figure), so the simulated network does not add its own contention to it.
    if (pattern >= 0)
      rs.ahead += pattern_extra_s(m_.patterns[static_cast<std::size_t>(pattern)], size, m_.send_overhead_s, m_.recv_overhead_s,
                                  m_.per_message_overhead_s);
    return req;
  }

  ReqPtr post_recv(int me, int src, int tag, std::uint8_t ctx, double size, int block) {
    check_abort();
    sync(me);  // senders must not see this receive before the rank's own time
    check_abort();
    RankState& rs = ranks_[me];
    ReqPtr req = make_request(false, me, src, tag, ctx, size, block);
    auto it = std::find_if(rs.unexpected.begin(), rs.unexpected.end(), [&](const ReqPtr& q) { return matches(*req, *q); });
    if (it != rs.unexpected.end()) {
      ReqPtr send = *it;
      rs.unexpected.erase(it);
      send->matched_recv = req;
      if (send->started) bind(*send, *req);
      else if (!send->launching) launch(send, me);  // rendezvous: the receive starts the transfer
      // else: an eager launch is under way in the sender and will bind this receive when it returns
    } else {
      rs.posted.push_back(req);
    }
    return req;
  }

  /** @brief Blocks the rank until the request completes; returns the time split. */
  Split wait_req(int me, const ReqPtr& req) {
    RankState& rs = ranks_[me];
    const double t0 = now(me);
    while (!(req->done || (req->is_send && req->eager))) {  // an eager send is complete once posted
      check_abort();
      sync(me);  // block from the rank's own time (the request may complete meanwhile)
      if (req->done) break;
      serve_jobs(me);
      if (req->done) break;
      rs.blocked = true;
      rs.waiting_for = req.get();
      --active_;
      check_deadlock();
      check_abort();  // a deadlock found just now aborts this rank too
      rs.sem->acquire();
      if (rs.blocked) {  // a release left over from an interrupted sleep, not a wake(): count ourselves back
        rs.blocked = false;
        ++active_;
      }
      check_abort();
    }
    rs.waiting_for = nullptr;
    retire(rs.handles);
    if (!req->is_send) rs.ahead += m_.recv_overhead_s + m_.per_message_overhead_s;
    const double t1 = now(me);
    Split s;
    s.wait = std::clamp(req->match_time - t0, 0.0, t1 - t0);
    s.comm = (t1 - t0) - s.wait;
    if (stats_ && s.wait > 0) {
      const int peer = req->is_send ? req->peer : req->matched_peer;
      rs.wait_peers.emplace_back(peer, s.wait);
      if (req->ctx != 0) rs.wait_collective += s.wait;
      else if (req->is_send) rs.wait_late_receiver += s.wait;
      else rs.wait_late_sender += s.wait;
    }
    return s;
  }

  /** @brief Rank r has a transfer side to post: interrupt its sleep or its wait (a running rank serves its
   *  jobs before it next blocks, at the same simulated time). */
  void poke(int r) {
    RankState& rs = ranks_[r];
    if (rs.sleeping) {
      rs.sleeping = false;
      rs.sem->release();
    } else {
      wake(r);
    }
  }

  /** @brief Posts the transfer sides partners started for this rank, from its host. */
  void serve_jobs(int r) {
    RankState& rs = ranks_[r];
    while (!rs.jobs.empty()) {
      std::vector<TransferJob> jobs;
      jobs.swap(rs.jobs);
      for (TransferJob& job : jobs) rs.handles.emplace_back(post_side(job.send, job.put), job.send);
    }
  }

  /** @brief The rank's own time: the engine's clock plus the local work it has not slept yet. */
  double now(int r) const { return sg4::Engine::get_clock() + ranks_[r].ahead; }

  /** @brief Sleeps the local work accumulated since the rank last interacted (one sleep for a run of
   *  compute blocks and overheads). */
  void sync(int r) {
    const double a = ranks_[r].ahead;
    ranks_[r].ahead = 0;
    sleep_serving(r, a);
  }

  /** @brief Sleeps `seconds` of simulated time, interrupted (at no cost in simulated time) to serve jobs. */
  void sleep_serving(int r, double seconds) {
    if (!(seconds > 0)) return;
    RankState& rs = ranks_[r];
    const double end = sg4::Engine::get_clock() + seconds;
    for (;;) {
      serve_jobs(r);
      const double left = end - sg4::Engine::get_clock();
      if (left <= 0) return;
      rs.sleeping = true;
      const bool timed_out = rs.sem->acquire_timeout(left);
      rs.sleeping = false;
      if (timed_out) return;
    }
  }

  void wake(int r) {
    RankState& rs = ranks_[r];
    if (rs.blocked) {
      rs.blocked = false;
      ++active_;
      rs.sem->release();
    }
  }

  /** @brief No rank can make progress when every unfinished rank waits for a partner. */
  void check_deadlock() {
    if (active_ > 0 || inflight_ > 0 || aborting_) return;
    std::vector<int> blocked;
    for (int r = 0; r < P_; ++r)
      if (!ranks_[r].finished && ranks_[r].blocked) blocked.push_back(r);
    if (blocked.empty()) return;
    std::ostringstream msg;
    msg << "deadlock at P=" << P_ << ", simulated time " << fmt(sg4::Engine::get_clock()) << " s: " << blocked.size()
        << " rank(s) blocked";
    int shown = 0;
    for (int r : blocked) {
      if (shown++ == 16) {
        msg << "\n  ... and " << blocked.size() - 16 << " more";
        break;
      }
      const Request* q = ranks_[r].waiting_for;
      msg << "\n  rank " << r << ": ";
      if (!q && ranks_[r].in_measured) {
        msg << "in a measured " << ranks_[r].in_measured << " waiting for the other ranks";
        continue;
      }
      if (!q) {
        msg << "waiting";
        continue;
      }
      msg << (q->is_send ? "send to " : "recv from ") << (q->peer == ANY ? std::string("any source") : std::to_string(q->peer))
          << ", tag " << (q->tag == ANY ? std::string("any") : std::to_string(q->tag)) << ", " << fmt(q->size) << " bytes"
          << (q->ctx ? " (inside a collective)" : "") << ", block " << block_id(q->block);
    }
    deadlocked_ = true;
    abort_run(msg.str());
  }

  void abort_run(const std::string& why) {
    if (error_.empty()) error_ = why;
    if (aborting_) return;
    aborting_ = true;
    for (int r = 0; r < P_; ++r) wake(r);
  }

  // ---- accounting ----
  void account(int r, int block, double t0, const Split& s, const char* kind) {
    RankState& rs = ranks_[r];
    double total = now(r) - t0;
    double comm = total - s.wait;  // overheads count as communication
    rs.times.comm_s += comm;
    rs.times.wait_s += s.wait;
    results::PhaseTotals& ph = phase_[block_phase_[block]];
    ph.comm_s += comm;
    ph.wait_s += s.wait;
    rank_phase_[static_cast<std::size_t>(r) * phase_.size() + static_cast<std::size_t>(block_phase_[block])] += total;
    ph.end_s = std::max(ph.end_s, now(r));
    if (stats_) {
      rank_block_wait_[static_cast<std::size_t>(r) * sk_.blocks.size() + static_cast<std::size_t>(block)] += s.wait;
      for (const auto& [peer, w] : rs.wait_peers) block_cause_[block][peer] += w;
      rs.wait_peers.clear();
      block_late_sender_[block] += rs.wait_late_sender;
      block_late_receiver_[block] += rs.wait_late_receiver;
      block_coll_wait_[block] += rs.wait_collective;
      rs.wait_late_sender = rs.wait_late_receiver = rs.wait_collective = 0;
    }
    record(r, block, kind, t0);
  }

  void record(int r, int block, const char* kind, double t0) {
    if (!timeline_on_) return;
    if (timeline_.size() >= TIMELINE_MAX_ROWS) {
      timeline_truncated_ = true;
      return;
    }
    timeline_.push_back(TimelineRow{r, block, kind, t0, now(r)});
  }

  int checked_rank(int r, int block, const Expr& e) {
    double v = e.eval(ranks_[r].frame);
    if (!(v >= 0 && v < P_) || v != std::floor(v))
      throw ReplayError(where(r, block) + "\"" + e.text() + "\" = " + fmt(v) + " is not a rank in [0, " + std::to_string(P_) + ")");
    return static_cast<int>(v);
  }

  std::string where(int r, int block) const {
    std::string s = sk_.file.empty() ? "" : sk_.file + ": ";
    if (block >= 0) s += sk_.blocks[block].id + ": ";
    return s + "rank " + std::to_string(r) + ": ";
  }
  static std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
  }

  /** @brief One measured collective under way: who has arrived, who waits, who has left. */
  struct Gathering {
    int arrived = 0, left = 0;
    bool complete = false;
    std::vector<int> waiting;
  };

 public:
  void set_measured(const CollectiveTable* t) { measured_ = t; }
  /** @brief Per block index, the machine pattern its messages are charged (phase_patterns), or -1. */
  void set_block_patterns(std::vector<int> patterns) { block_pattern_ = std::move(patterns); }
  const std::set<std::string>& measured_notes() const { return measured_notes_; }

 private:
  const CollectiveTable* measured_ = nullptr;
  std::vector<int> block_pattern_;  // empty when the platform has no per-pattern figures
  std::map<int, Gathering> gatherings_;
  std::set<std::string> measured_notes_;
  const Skeleton& sk_;
  MachineParams m_;
  int P_;
  bool timeline_on_;
  std::vector<RankState> ranks_;
  std::vector<std::uint64_t> block_exec_;
  std::vector<double> block_time_;
  std::vector<double> block_bytes_;
  std::vector<results::PhaseTotals> phase_;
  std::vector<double> rank_phase_;  // rank * phases + phase: time of each rank in each phase
  std::vector<int> block_phase_;
  // Diagnosis (configure_diagnosis): per-rank figures (rank * blocks + block), summarised by collect_stats.
  bool stats_ = false;
  std::vector<double> rank_block_compute_, rank_block_wait_, rank_block_exec_, rank_phase_compute_;
  std::vector<std::map<int, double>> block_cause_;  // block -> peer waited for -> wait summed over ranks
  std::vector<double> block_late_sender_, block_late_receiver_, block_coll_wait_;
  // What-ifs, by block index: compute seconds per execution (< 0: as written), compute factor, loop aggregation.
  std::vector<double> set_compute_, scale_compute_, aggregate_;
  std::vector<TimelineRow> timeline_;
  bool timeline_truncated_ = false;
  int active_ = 0;     // ranks neither finished nor blocked on their semaphore
  long inflight_ = 0;  // transfers started and not finished
  std::unordered_map<const void*, ReqPtr> transfers_;  // SimGrid comm impl -> its send
  std::unordered_set<const void*> finished_early_;
  std::vector<ReqPtr> finished_;  // finished sends SimGrid still writes into (landing) this engine step
  std::vector<sg4::Mailbox*> free_boxes_;
  long boxes_created_ = 0;
  bool aborting_ = false;
  bool deadlocked_ = false;
  std::string error_;
};

std::vector<std::string> default_simgrid_config() {
  // CM02 takes latency and bandwidth as written (LV08 would multiply them by 13.01 and 0.97); no TCP
  // window bound, no cross traffic: the platform file's figures are the machine's.
  return {"network/model:CM02",        "network/crosstraffic:0", "network/latency-factor:1",
          "network/bandwidth-factor:1", "network/weight-S:0",     "network/TCP-gamma:0",
          "contexts/stack-size:128",    "host/model:default"};
}

namespace {

std::string config_value(const std::string& key) {
  namespace cfg = simgrid::config;
  static const char* strings[] = {"network/model", "network/optim", "cpu/model", "cpu/optim", "contexts/factory", "host/model"};
  static const char* doubles[] = {"network/TCP-gamma", "network/latency-factor", "network/bandwidth-factor",
                                  "network/weight-S", "network/loopback-lat", "network/loopback-bw", "maxmin/precision",
                                  "surf/precision"};
  static const char* bools[] = {"network/crosstraffic", "network/maxmin-selective-update"};
  static const char* ints[] = {"contexts/stack-size", "contexts/guard-size"};
  for (const char* k : strings)
    if (key == k) return cfg::get_value<std::string>(key);
  char buf[32];
  for (const char* k : doubles)
    if (key == k) {
      std::snprintf(buf, sizeof buf, "%.10g", cfg::get_value<double>(key));
      return buf;
    }
  for (const char* k : bools)
    if (key == k) return cfg::get_value<bool>(key) ? "yes" : "no";
  for (const char* k : ints)
    if (key == k) return std::to_string(cfg::get_value<int>(key));
  return "";
}

/** @brief The kernel's limit on memory mappings per process (Linux), or its usual default. */
long read_max_map_count() {
  std::ifstream f("/proc/sys/vm/max_map_count");
  long v = 0;
  if (f >> v && v > 0) return v;
  return 65530;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace

results::RunResult replay(const Skeleton& sk, const ReplayOptions& opt) {
  // Validate everything that can be validated before the engine exists.
  std::vector<double> frame = bind_parameters(sk, opt.P, opt.params);
  check_for_run(sk, frame, opt.P);

  std::vector<std::string> args = {"mksim", "--log=root.thresh:warning", "--log=xbt_cfg.thresh:warning"};
  std::vector<std::string> config = default_simgrid_config();
  // Each rank's stack is a mapping plus a guard page (two mappings, lazily zeroed). Without guard pages
  // SimGrid allocates stacks with calloc, which costs the whole stack in memory (~90 KiB per rank measured,
  // against ~20 KiB) and time; so guards stay unless the kernel's mapping limit is too low for them.
  const long map_limit = read_max_map_count();
  const long maps_needed = 2L * opt.P + 8192;
  if (maps_needed > map_limit) {
    config.push_back("contexts/guard-size:0");
    if (opt.warnings)
      *opt.warnings << "mksim: warning: P=" << opt.P << " needs about " << maps_needed
                    << " memory mappings but vm.max_map_count is " << map_limit
                    << ": running without stack guards, which takes ~90 KiB per rank instead of ~20 KiB"
                    << " (raise it with: sysctl -w vm.max_map_count=" << maps_needed << ")\n";
  }
#ifdef MKSIM_THREAD_CONTEXTS
  config.push_back("contexts/factory:thread");  // sanitizer builds: ASan cannot follow SimGrid's raw context switches
#endif
  for (const auto& c : opt.simgrid_config) config.push_back(c);
  for (const auto& c : config) args.push_back("--cfg=" + c);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  // SimGrid keeps one engine per process and its clock across runs: a second replay would be wrong.
  static bool used = false;
  if (used || sg4::Engine::has_instance()) throw ReplayError("one simulation per process: replay() was already called");
  used = true;
  sg4::Engine engine(&argc, argv.data());

  load_platform(engine, opt.platform_path);
  MachineParams machine = read_machine_params(engine);
  std::vector<sg4::Host*> hosts = compute_hosts(engine);
  if (static_cast<std::size_t>(opt.P) > hosts.size())
    throw ReplayError(opt.platform_path + ": P=" + std::to_string(opt.P) + " ranks but the platform has only " +
                      std::to_string(hosts.size()) + " compute hosts (generate a larger one with `mksim platform`)");

  ReplayContext ctx(sk, machine, hosts, opt.P, frame, opt.seed, !opt.timeline_csv.empty());
  ctx.configure_diagnosis(opt.block_stats, opt.what_ifs);
  ctx.set_measured(opt.collectives.get());
  PatternMap patterns;
  if (!machine.patterns.empty()) {
    patterns = phase_patterns(sk, frame, opt.P, machine.patterns);
    ctx.set_block_patterns(patterns.block_pattern);
  }
  // Transfer ends come from the network model itself, so no rank waits on a SimGrid comm (a comm waited by
  // two actors leaks a CPU action in SimGrid 3.32, and one wait simcall per message is saved). NetworkAction
  // is not in SimGrid's public headers; it derives from kernel::resource::Action alone, which is all we read.
  sg4::Link::on_communication_state_change_cb(
      [&ctx](simgrid::kernel::resource::NetworkAction& net_action, simgrid::kernel::resource::Action::State) {
        const auto& action = reinterpret_cast<const simgrid::kernel::resource::Action&>(net_action);
        if (action.get_state() == simgrid::kernel::resource::Action::State::FINISHED)
          ctx.transfer_finished(action.get_activity());
      });
  for (int r = 0; r < opt.P; ++r)
    sg4::Actor::create("rank-" + std::to_string(r), hosts[r], [&ctx, r] { ctx.run_rank(r); });
  engine.run();

  if (ctx.deadlocked()) throw DeadlockError(sk.file + ": " + ctx.error());
  if (!ctx.error().empty()) throw ReplayError(ctx.error());
  if (std::string lost = ctx.unmatched_messages(); !lost.empty()) throw ReplayError(sk.file + ": " + lost);
  if (std::string stuck = ctx.incomplete_ranks(); !stuck.empty())  // a bug of ours if it ever happens
    throw ReplayError(sk.file + ": the simulation ended before ranks " + stuck + " did (SimGrid stopped them)");

  results::RunResult res = ctx.collect();
  auto& a = res.attributes;
  a.emplace_back("platform", opt.platform_path);
  a.emplace_back("machine", machine.name);
  a.emplace_back("machine.send_overhead_s", num(machine.send_overhead_s));
  a.emplace_back("machine.recv_overhead_s", num(machine.recv_overhead_s));
  a.emplace_back("machine.per_message_overhead_s", num(machine.per_message_overhead_s));
  a.emplace_back("machine.eager_threshold_bytes", num(machine.eager_threshold_bytes));
  a.emplace_back("machine.skew_alpha_s", num(machine.skew_alpha_s));
  if (machine.eager_per_byte_s != 0) a.emplace_back("machine.eager_per_byte_s", num(machine.eager_per_byte_s));
  if (machine.rendezvous_handshake_s != 0) a.emplace_back("machine.rendezvous_handshake_s", num(machine.rendezvous_handshake_s));
  for (const auto& p : machine.patterns) a.emplace_back("machine.pattern." + p.name, platforms::describe_pattern(p));
  for (const auto& ph : patterns.phases) a.emplace_back("pattern." + (ph.label.empty() ? std::string("(unlabelled)") : ph.label), ph.describe());
  if (opt.collectives) {
    std::string dbs;
    for (const auto& f : opt.collectives->sources) dbs += (dbs.empty() ? "" : ",") + f;
    a.emplace_back("collectives.databases", dbs);
    std::string fit;
    for (const auto& d : describe(*opt.collectives)) fit += (fit.empty() ? "" : "; ") + d;
    a.emplace_back("collectives.measured", fit);
    std::string notes;
    for (const auto& n : ctx.measured_notes()) {
      notes += (notes.empty() ? "" : "; ") + n;
      if (opt.warnings) *opt.warnings << "mksim: note: " << n << "\n";
    }
    if (!notes.empty()) a.emplace_back("collectives.extrapolated", notes);
  }
  a.emplace_back("P", std::to_string(opt.P));
  a.emplace_back("seed", std::to_string(opt.seed));
  for (const auto& p : sk.params) a.emplace_back("param." + p.name, num(frame[sk.symbols.find(p.name)]));
  a.emplace_back("skeleton", sk.file);
  a.emplace_back("skeleton.name", sk.name);
  a.emplace_back("skeleton.hash", hash_hex(sk.hash));
  a.emplace_back("tool", "mksim");
  a.emplace_back("tool.version", MKSIM_VERSION);
  int maj = 0, min = 0, patch = 0;
  sg_version_get(&maj, &min, &patch);
  a.emplace_back("simgrid.version", std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(patch));
  for (const char* k : {"network/model", "network/optim", "network/crosstraffic", "network/TCP-gamma", "network/latency-factor",
                        "network/bandwidth-factor", "network/weight-S", "network/maxmin-selective-update", "maxmin/precision",
                        "surf/precision", "cpu/model", "host/model", "contexts/factory", "contexts/stack-size", "contexts/guard-size"})
    a.emplace_back(std::string("simgrid.") + k, config_value(k));
  std::sort(a.begin(), a.end());

  if (!opt.timeline_csv.empty()) ctx.write_timeline(opt.timeline_csv);
  return res;
}

}  // namespace mksim::sim

