// The replay engine: walks each rank's skeleton tree (never expanded into a trace) inside one SimGrid actor
// per rank; message matching is mksim's (MPI order: source, tag, context), data transfers are SimGrid's.
#include "sim/engine/replay.hpp"

#include "skeletons/comms.hpp"
#include "skeletons/distribution.hpp"
#include "skeletons/rank_rng.hpp"

#include "sim/engine/collectives.hpp"
#include "sim/engine/load.hpp"
#include "sim/engine/phase_patterns.hpp"
#include "sim/engine/platform.hpp"
#include "sim/engine/transport.hpp"
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"

#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>
#include <xbt/config.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <deque>
#include <queue>
#include <fstream>
#include <map>
#include <set>
#include <memory>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <unistd.h>

#ifndef MKSIM_VERSION
#define MKSIM_VERSION "0.0.0"
#endif

namespace sg4 = simgrid::s4u;

namespace mksim::sim {

using namespace mksim::skeletons;

namespace {

constexpr int ANY = ANY_PEER_OR_TAG;
constexpr std::size_t TIMELINE_MAX_ROWS = 5'000'000;

struct TimelineRow {
  int rank;
  int block;
  const char* kind;
  double start;
  double end;
};

struct RankState {
  sg4::Host* host = nullptr;
  double peak_speed = 1;          // the host's peak flop/s (its speed profile, if any, is in avail)
  Availability* avail = nullptr;  // the host's availability under background load, or none (dedicated)
  std::vector<double> frame;
  skeletons::RankRng rng;
  skeletons::CoinTosses coins;    // shared coins of prob branches (format v2 `coin`)
  std::vector<ReqPtr> outstanding;
  std::vector<ReqPtr> named;      // request slots of the skeleton
  std::vector<int> coll_seq;      // per communicator: the collectives this rank has entered on it
  results::RankTimes times;
  double agg = 1;                 // what-if aggregation: multiplier of message sizes and compute in aggregated loops
  // OS noise (load file `noise`): the scale lambda of the rank's detours (0: none), their stream, and the
  // receives posted since the rank's last synchronisation (a detour follows a sync that completed one).
  double noise_scale_s = 0;
  skeletons::RankRng noise_rng;
  int recvs_since_sync = 0;
  int detours = 0;
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
      : sk_(sk), P_(P), timeline_on_(timeline), layout_(layout_comms(sk, base_frame, P)),
        tr_(P, m, Naming{[this](int b) { return block_id(b); }, [this](int r, int b) { return where(r, b); }}) {
    ranks_.resize(P);
    for (int r = 0; r < P; ++r) {
      RankState& rs = ranks_[r];
      rs.host = hosts[r];
      rs.peak_speed = hosts[r]->get_pstate_speed(hosts[r]->get_pstate());
      rs.frame = base_frame;
      bind_rank(sk_, rs.frame, r, layout_);
      rs.coll_seq.assign(layout_.comms.size(), 0);
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
  }

  /** @brief The availability profile of each rank's host (nullptr: dedicated); the context keeps them. */
  void set_load(std::vector<std::unique_ptr<Availability>> avail) {
    avail_ = std::move(avail);
    for (int r = 0; r < P_ && static_cast<std::size_t>(r) < avail_.size(); ++r) ranks_[r].avail = avail_[r].get();
  }

  /** @brief OS noise: each rank's detour scale lambda (0: none), the seed of the detours' streams, and the phase
   *  labels that take none (pipelines: the model gives them no skew term either). */
  void set_noise(const std::vector<double>& scale_s, std::uint64_t seed, const std::vector<std::string>& quiet_labels) {
    noise_block_.assign(sk_.blocks.size(), 1);
    for (std::size_t b = 0; b < sk_.blocks.size(); ++b)
      if (std::find(quiet_labels.begin(), quiet_labels.end(), sk_.blocks[b].phase) != quiet_labels.end()) noise_block_[b] = 0;
    for (int r = 0; r < P_ && static_cast<std::size_t>(r) < scale_s.size(); ++r) {
      ranks_[r].noise_scale_s = scale_s[r];
      ranks_[r].noise_rng = skeletons::RankRng(seed ^ 0x6E6F697365ULL, r);  // "noise": apart from load and branch streams
    }
  }
  double noise_total_s() const { return noise_total_s_; }
  std::uint64_t noise_detours() const { return noise_detours_; }
  int noise_rank_detours_max() const {
    int m = 0;
    for (const auto& rs : ranks_) m = std::max(m, rs.detours);
    return m;
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
      tr_.abort_run(e.what());
    }
    rs.times.finish_s = now(r);
    tr_.finish_rank(r);
  }

  /** @brief The transport and scheduling layer (SimGrid set-up, results after the run). */
  Transport& transport() { return tr_; }

  // ---- P2PLayer, used by collectives too ----
  std::shared_ptr<void> isend(int me, int dst, int tag, double bytes, int block, std::uint32_t context) override {
    return post_send(me, dst, tag, context, bytes, block);
  }
  std::shared_ptr<void> irecv(int me, int src, int tag, double bytes, int block, std::uint32_t context) override {
    return post_recv(me, src, tag, context, bytes, block);
  }
  void wait(int me, const std::shared_ptr<void>& req, CollAcc& acc) override {
    Split s = wait_req(me, std::static_pointer_cast<Request>(req));
    acc.comm += s.comm;
    acc.wait += s.wait;
  }


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
        taken = rs.coins.toss(br.coin, static_cast<int>(of), br.even) < p;
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
      v *= skeletons::draw_multiplier(*c.dist, cv, rs.rng, rs.coins, b.index);
    }
    double seconds = c.in_flops ? v / rs.peak_speed : v;
    if (!set_compute_.empty()) {  // what-ifs
      if (set_compute_[b.index] >= 0) seconds = set_compute_[b.index];
      seconds *= scale_compute_[b.index] * rs.agg;
    }
    if (rs.avail) {  // background load: the block ends when the available speed has done its full-speed work
      try {
        seconds = rs.avail->finish(now(r), seconds) - now(r);
      } catch (const LoadError& e) {
        throw ReplayError(where(r, b.index) + e.what());
      }
    }
    if (stats_) {
      rank_block_compute_[static_cast<std::size_t>(r) * sk_.blocks.size() + static_cast<std::size_t>(b.index)] += seconds;
      rank_phase_compute_[static_cast<std::size_t>(r) * phase_.size() + static_cast<std::size_t>(block_phase_[b.index])] += seconds;
    }
    const double t0 = now(r);
    tr_.advance(r, seconds);  // the rank's clock runs ahead; nothing is slept
    rs.times.compute_s += seconds;
    phase_[block_phase_[b.index]].compute_s += seconds;
    rank_phase_[static_cast<std::size_t>(r) * phase_.size() + static_cast<std::size_t>(block_phase_[b.index])] += seconds;
    {
      double& end = phase_[block_phase_[b.index]].end_s;
      end = std::max(end, now(r));
    }
    record(r, b.index, "compute", t0);
  }

  void exec(int r, const Block& b, const P2P& p) {
    RankState& rs = ranks_[r];
    double t0 = now(r);
    double size = p.size_bytes.eval(rs.frame);
    if (!(size >= 0) || !std::isfinite(size)) throw ReplayError(where(r, b.index) + "size \"" + p.size_bytes.text() + "\" is " + fmt(size));
    size *= rs.agg;
    // peers are ranks of the op's communicator: translated to world ranks here, matched in its own context
    const std::vector<int>& members = comm_members(r, b.index, p.comm);
    int peer = ANY;
    if (!p.any_source) {
      const int local = checked_rank(r, b.index, p.peer, static_cast<int>(members.size()), sk_.version >= 3);
      if (local == PROC_NULL_PEER) {  // MPI_PROC_NULL: nothing is sent or received, the op completes at once
        if (p.request >= 0) rs.named[p.request] = nullptr;
        account(r, b.index, t0, Split{}, p.kind == P2PKind::SEND || p.kind == P2PKind::ISEND ? "send" : "recv");
        return;
      }
      peer = members[static_cast<std::size_t>(local)];
    }
    const std::uint32_t ctx = 2u * static_cast<std::uint32_t>(p.comm);
    int tag = ANY;
    if (!p.any_tag) {
      double t = p.tag.eval(rs.frame);
      if (!(t >= 0 && t <= 1e9) || t != std::floor(t))  // MPI tags are non-negative integers
        throw ReplayError(where(r, b.index) + "tag \"" + p.tag.text() + "\" = " + fmt(t) + " is not a non-negative integer");
      tag = static_cast<int>(t);
    }
    ReqPtr req;
    if (p.kind == P2PKind::SEND || p.kind == P2PKind::ISEND) {
      req = post_send(r, peer, tag, ctx, size, b.index);
      block_bytes_[b.index] += size;
    } else {
      req = post_recv(r, peer, tag, ctx, size, b.index);
      ++rs.recvs_since_sync;
    }
    Split s;
    if (p.kind == P2PKind::SEND || p.kind == P2PKind::RECV) {
      s = wait_req(r, req);
    } else {
      rs.outstanding.push_back(req);
      if (p.request >= 0) rs.named[p.request] = req;
    }
    account(r, b.index, t0, s, p.kind == P2PKind::SEND || p.kind == P2PKind::ISEND ? "send" : "recv");
    if (p.kind == P2PKind::RECV) synchronised(r, b.index);
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
    synchronised(r, b.index);
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
    synchronised(r, b.index);
  }

  /** @brief The end of a synchronous exchange (a recv, wait or waitall: where the analytic model closes one).
   *  When the rank received since its last one and has OS noise, it loses a detour before it goes on: the noise
   *  it meets until its next exchange, which thus starts late (NoiseLoad, sim/engine/load.hpp). */
  void synchronised(int r, int block) {
    RankState& rs = ranks_[r];
    const bool received = rs.recvs_since_sync > 0;
    rs.recvs_since_sync = 0;
    if (!received || rs.noise_scale_s <= 0 || !noise_block_[static_cast<std::size_t>(block)]) return;
    const double d = NoiseLoad::detour_s(rs.noise_scale_s, rs.noise_rng.uniform());
    const double t0 = now(r);
    tr_.advance(r, d);
    rs.times.compute_s += d;  // the rank's CPU was taken
    noise_total_s_ += d;
    ++noise_detours_;
    ++rs.detours;
    const std::size_t ph = static_cast<std::size_t>(block_phase_[block]);
    phase_[ph].compute_s += d;
    rank_phase_[static_cast<std::size_t>(r) * phase_.size() + ph] += d;
    phase_[ph].end_s = std::max(phase_[ph].end_s, now(r));
    if (stats_) rank_phase_compute_[static_cast<std::size_t>(r) * phase_.size() + ph] += d;
    record(r, block, "noise", t0);
  }

  void exec(int r, const Block& b, const Collective& c) {
    RankState& rs = ranks_[r];
    double t0 = now(r);
    double size = c.size_bytes.eval(rs.frame);
    if (!(size >= 0) || !std::isfinite(size)) throw ReplayError(where(r, b.index) + "size \"" + c.size_bytes.text() + "\" is " + fmt(size));
    size *= rs.agg;
    // over the members of the rank's instance of the communicator, root and ranks relative to it
    const std::vector<int>& members = comm_members(r, b.index, c.comm);
    const int n = static_cast<int>(members.size());
    int root = checked_rank(r, b.index, c.root, n);
    int seq = rs.coll_seq[static_cast<std::size_t>(c.comm)]++ & 0x3fffffff;
    if (measured_ && measures(*measured_, collective_name(c.kind))) {
      exec_measured(r, b, c, size, std::make_tuple(c.comm, members.front(), seq), n, t0);
      return;
    }
    CollAcc acc;
    std::uint64_t sent_before = rs.times.bytes_sent;
    const CollGroup group{layout_.rank_in(c.comm, r), n, members.data(), 2u * static_cast<std::uint32_t>(c.comm) + 1u};
    run_collective(*this, c.kind, group, root, size, seq, b.index, acc);
    block_bytes_[b.index] += static_cast<double>(rs.times.bytes_sent - sent_before);
    account(r, b.index, t0, Split{acc.comm, acc.wait}, collective_name(c.kind));
  }

  /** @brief A collective costed from the measured table: the ranks wait for the last one to arrive (a
   *  rendezvous on the collective's sequence number), then each spends the measured t(P, bytes). */
  void exec_measured(int r, const Block& b, const Collective& c, double size, const GatheringKey& seq, int n, double t0) {
    RankState& rs = ranks_[r];
    const char* kind = collective_name(c.kind);
    const double t = collective_time(*measured_, kind, n, size);  // the communicator's size
    if (std::string note = extrapolation_note(*measured_, kind, n, size); !note.empty()) measured_notes_.insert(note);
    tr_.gather(r, seq, n, kind);  // everyone leaves when the last one arrived
    const double wait = now(r) - t0;
    tr_.advance(r, t);
    if (stats_ && wait > 0) rs.wait_collective += wait;
    account(r, b.index, t0, Split{t, wait}, kind);
  }

  // ---- point-to-point, on the transport ----
  ReqPtr post_send(int me, int dst, int tag, std::uint32_t ctx, double size, int block) {
    // Per-pattern figures (seed 001 table 2), when the platform has them and the block's phase has a pattern
    // (found before the run): the message costs rho + beta*D in all.
    const int pattern = block >= 0 && !block_pattern_.empty() ? block_pattern_[static_cast<std::size_t>(block)] : -1;
    ReqPtr req = tr_.post_send(me, dst, tag, ctx, size, block, pattern >= 0 ? &patterns_[static_cast<std::size_t>(pattern)] : nullptr);
    RankState& rs = ranks_[me];
    rs.times.messages_sent++;
    rs.times.bytes_sent += static_cast<std::uint64_t>(size);
    return req;
  }

  ReqPtr post_recv(int me, int src, int tag, std::uint32_t ctx, double size, int block) {
    return tr_.post_recv(me, src, tag, ctx, size, block);
  }

  /** @brief Blocks the rank until the request completes; returns the time split. */
  Split wait_req(int me, const ReqPtr& req) {
    RankState& rs = ranks_[me];
    const double t0 = now(me);
    tr_.wait(me, req);
    const double t1 = now(me);
    Split s;
    s.wait = std::clamp(req->match_time - t0, 0.0, t1 - t0);
    s.comm = (t1 - t0) - s.wait;
    if (stats_ && s.wait > 0) {
      const int peer = req->is_send ? req->peer : req->matched_peer;
      rs.wait_peers.emplace_back(peer, s.wait);
      if (!is_user(req->ctx)) rs.wait_collective += s.wait;
      else if (req->is_send) rs.wait_late_receiver += s.wait;
      else rs.wait_late_sender += s.wait;
    }
    return s;
  }

  /** @brief The rank's own time. */
  double now(int r) const { return tr_.now(r); }

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

  /** @brief A rank of a communicator of size n (-1 for MPI_PROC_NULL when null_ok). */
  int checked_rank(int r, int block, const Expr& e, int n, bool null_ok = false) {
    double v = e.eval(ranks_[r].frame);
    if (null_ok && v == PROC_NULL_PEER) return PROC_NULL_PEER;
    if (!(v >= 0 && v < n) || v != std::floor(v))
      throw ReplayError(where(r, block) + "\"" + e.text() + "\" = " + fmt(v) + " is not a rank in [0, " + std::to_string(n) + ")");
    return static_cast<int>(v);
  }

  /** @brief The world ranks of rank r's instance of communicator `comm`, in communicator rank order. */
  const std::vector<int>& comm_members(int r, int block, int comm) const {
    const std::vector<int>& m = layout_.members(comm, r);
    if (m.empty())
      throw ReplayError(where(r, block) + "not a member of communicator \"" + comm_name(sk_, comm) + "\"");
    return m;
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

 public:
  void set_measured(const CollectiveTable* t) { measured_ = t; }
  /** @brief Per block index, the machine pattern its messages are charged (phase_patterns), or -1. */
  void set_block_patterns(std::vector<int> patterns, std::vector<platforms::PatternFigures> figures) {
    block_pattern_ = std::move(patterns);
    patterns_ = std::move(figures);
  }
  const std::set<std::string>& measured_notes() const { return measured_notes_; }

 private:
  const CollectiveTable* measured_ = nullptr;
  std::vector<int> block_pattern_;  // empty when the platform has no per-pattern figures
  std::vector<platforms::PatternFigures> patterns_;  // the platform's, indexed by block_pattern_
  std::set<std::string> measured_notes_;
  const Skeleton& sk_;
  int P_;
  bool timeline_on_;
  skeletons::CommLayout layout_;  // the communicators' members at P, laid out once
  std::vector<RankState> ranks_;
  std::vector<std::unique_ptr<Availability>> avail_;
  double noise_total_s_ = 0;            // detours of every rank (OS noise)
  std::vector<char> noise_block_;       // by block: 1 when its synchronisations take detours
  std::uint64_t noise_detours_ = 0;
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
  Transport tr_;  // after everything its Naming reads
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

/** @brief Messages one rank sends in `body` as far as a walk without simulating tells (for progress only):
 *  loops multiply (their variable at 0), conditions are evaluated, probabilities weigh both sides, and
 *  collectives count their algorithms' messages per rank. Anything unevaluable counts 0. */
double messages_in(const Body& body, std::vector<double>& frame, int P) {
  const double lg = std::ceil(std::log2(std::max(P, 2)));
  double n = 0;
  for (const Block& b : body) {
    try {
      if (const auto* l = std::get_if<Loop>(&b.op)) {
        const double c = l->count.eval(frame);
        if (l->var_slot >= 0) frame[l->var_slot] = 0;
        if (c > 0 && std::isfinite(c)) n += std::floor(c) * messages_in(l->body, frame, P);
      } else if (const auto* br = std::get_if<Branch>(&b.op)) {
        if (br->condition) {
          n += messages_in(br->condition->eval(frame) != 0 ? br->then_body : br->else_body, frame, P);
        } else {
          const double p = std::clamp(br->probability.eval(frame), 0.0, 1.0);
          n += p * messages_in(br->then_body, frame, P) + (1 - p) * messages_in(br->else_body, frame, P);
        }
      } else if (const auto* r = std::get_if<Region>(&b.op)) {
        n += messages_in(r->body, frame, P);
      } else if (const auto* p2p = std::get_if<P2P>(&b.op)) {
        n += (p2p->kind == P2PKind::SEND || p2p->kind == P2PKind::ISEND) ? 1 : 0;
      } else if (const auto* c = std::get_if<Collective>(&b.op)) {
        switch (c->kind) {
          case CollectiveKind::BARRIER: case CollectiveKind::ALLREDUCE: case CollectiveKind::ALLGATHER: n += lg; break;
          case CollectiveKind::ALLTOALL: n += P - 1; break;
          default: n += 1.0 - 1.0 / P; break;  // trees: P - 1 messages in all
        }
      }
    } catch (const std::exception&) {
    }
  }
  return n;
}

/** @brief The skeleton's expected message count at P (every rank up to 4,096, a stride sample beyond). */
double expected_messages(const Skeleton& sk, const std::vector<double>& base_frame, int P) {
  const int samples = std::min(P, 4096);
  double total = 0;
  std::vector<double> frame;
  for (int i = 0; i < samples; ++i) {
    const int r = samples == P ? i : static_cast<int>(static_cast<long long>(i) * (P - 1) / (samples - 1));
    frame = base_frame;
    bind_rank(sk, frame, r);
    const int g = select_group(sk, frame);
    if (g >= 0) total += messages_in(sk.groups[g].body, frame, P);
  }
  return total * P / samples;
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

/** @brief Applies the link profile's value at time t and schedules its next change while ranks remain. */
void schedule_link_event(sg4::Link* link, std::shared_ptr<Availability> prof, bool bandwidth, double peak, double t) {
  simgrid::kernel::timer::Timer::set(t, [link, prof, bandwidth, peak, t] {
    const double v = prof->value_at(t);
    if (bandwidth) link->set_bandwidth(peak * v);
    else link->set_latency(v);
    const double next = prof->piece_end(t);
    if (std::isfinite(next) && sg4::Engine::get_instance()->get_actor_count() > 0) schedule_link_event(link, prof, bandwidth, peak, next);
  });
}

/** @brief The background load of a run: each rank's availability (or none) and what to record. */
struct LoadSetup {
  std::vector<std::unique_ptr<Availability>> avail;
  std::string hosts;   ///< "host=source; ..." for loaded hosts
  std::string links;   ///< "link bandwidth=file; ..."
  std::string model;   ///< the load file's rules
  bool stochastic = false;
  std::vector<double> noise_scale;  ///< per rank: lambda of its OS noise detours (0: none)
  std::string noise;                ///< "alpha=..., lambda=... at P" of the noisy hosts, for the result
};

/** @brief Host speed profiles of the platform XML and of the load file (which wins), drawn stochastic loads, and
 *  the load file's link profiles attached to SimGrid's links. */
LoadSetup setup_load(sg4::Engine& engine, const ReplayOptions& opt, const std::vector<sg4::Host*>& hosts, double platform_alpha_s,
                     double noise_gain) {
  LoadSetup out;
  out.avail.resize(static_cast<std::size_t>(opt.P));
  out.noise_scale.assign(static_cast<std::size_t>(opt.P), 0.0);
  std::vector<std::string> source(static_cast<std::size_t>(opt.P));
  try {
    const auto xml = xml_speed_files(opt.platform_path);
    for (int r = 0; r < opt.P; ++r)
      for (const auto& [id, file] : xml)
        if (id == hosts[r]->get_name()) {
          out.avail[r] = std::make_unique<Availability>(read_profile(file));
          source[r] = file;
        }
    if (!opt.load_file.empty() || !opt.load_text.empty()) {
      const LoadSpec spec = opt.load_file.empty() ? parse_load_spec(opt.load_text, "(load rules)") : read_load_spec(opt.load_file);
      out.model = spec.describe();
      out.stochastic = spec.stochastic();
      for (int r = 0; r < opt.P; ++r) {
        const LoadSpec::HostRule* rule = nullptr;
        for (const auto& h : spec.hosts)
          if (host_rule_matches(h.hosts, hosts[r]->get_name(), r, h.where)) rule = &h;
        if (!rule) continue;
        if (rule->profile.empty()) {
          out.avail[r] = std::make_unique<Availability>(rule->busy.draw(opt.load_seed, r, rule->where + rule->busy.describe()));
          source[r] = rule->busy.describe();
        } else {
          out.avail[r] = std::make_unique<Availability>(read_profile(rule->profile));
          source[r] = rule->profile;
        }
      }
      for (const auto& l : spec.links) {
        std::vector<sg4::Link*> links;
        if (l.link == "*") {
          links = engine.get_all_links();
        } else if (sg4::Link* link = engine.link_by_name_or_null(l.link)) {
          links.push_back(link);
        } else {
          throw LoadError(l.where + "no link \"" + l.link + "\" in " + opt.platform_path);
        }
        for (sg4::Link* link : links) {
          // Links are sealed once the platform is loaded, so SimGrid's own profiles cannot be attached any more:
          // a chain of kernel timers sets the link's bandwidth (peak x value) or latency (value) at each event of
          // the profile, which is what SimGrid's profile does (sim/engine/README.md, "Background load").
          auto prof = std::make_shared<Availability>(read_profile(l.profile));
          const bool bw = l.kind == "bandwidth";
          const double peak = link->get_bandwidth();
          const double first = prof->first_event();
          schedule_link_event(link, prof, bw, peak, bw ? 0.0 : first);
        }
        out.links += (out.links.empty() ? "" : "; ") + (l.link + " " + l.kind + "=" + l.profile);
      }
      std::map<std::pair<double, bool>, int> noisy;  // (alpha, program-calibrated) -> hosts, for the record
      for (int r = 0; r < opt.P; ++r) {
        const LoadSpec::NoiseRule* rule = nullptr;
        for (const auto& n : spec.noise)
          if (host_rule_matches(n.hosts, hosts[r]->get_name(), r, n.where)) rule = &n;
        if (!rule) continue;
        const double alpha = rule->noise.alpha_s < 0 ? platform_alpha_s : rule->noise.alpha_s;
        if (rule->noise.alpha_s < 0 && !(platform_alpha_s > 0))
          throw LoadError(rule->where + "noise without alpha= takes the platform's mksim.skew_alpha_s, which " + opt.platform_path +
                          " does not give (or gives 0): write alpha=SECONDS");
        const bool program = rule->noise.calibrate == "program";
        if (program && noise_gain < 0)
          throw LoadError(rule->where + "calibrate=program needs the noise's gain: replay through replay_in_child or replay_load_seeds, or "
                          "set ReplayOptions::noise_gain (noise_gain_for, sim/engine/isolate.hpp)");
        out.noise_scale[r] = NoiseLoad::scale_s(alpha, opt.P) * (program ? noise_gain : 1.0);
        ++noisy[{alpha, program}];
      }
      for (const auto& [key, n] : noisy) {
        const auto& [alpha, program] = key;
        out.noise += (out.noise.empty() ? "" : "; ") + ("lomax2 alpha=" + num(alpha) + " calibrate=" + (program ? "program gain=" + num(noise_gain) : "exchange") +
                                                        " lambda=" + num(NoiseLoad::scale_s(alpha, opt.P) * (program ? noise_gain : 1.0)) +
                                                        " on " + std::to_string(n) + " host(s)");
      }
    }
  } catch (const LoadError& e) {
    throw ReplayError(e.what());
  }
  for (int r = 0; r < opt.P; ++r)
    if (out.avail[r]) out.hosts += (out.hosts.empty() ? "" : "; ") + (hosts[r]->get_name() + "=" + source[r]);
  return out;
}

}  // namespace

results::RunResult replay(const Skeleton& sk, const ReplayOptions& opt) {
  // Validate everything that can be validated before the engine exists.
  std::vector<double> frame = bind_parameters(sk, opt.P, opt.params);
  check_for_run(sk, frame, opt.P);
  const double noise_gain = opt.noise_gain;  // of calibrate=program noise: noise_gain_for (isolate.hpp) gives it

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
  LoadSetup load = setup_load(engine, opt, hosts, machine.skew_alpha_s, noise_gain);
  ctx.set_load(std::move(load.avail));
  ctx.set_measured(opt.collectives.get());
  PatternMap patterns;
  if (!machine.patterns.empty()) {
    patterns = phase_patterns(sk, frame, opt.P, machine.patterns);
    ctx.set_block_patterns(patterns.block_pattern, machine.patterns);
  }
  if (!load.noise.empty()) {  // pipelines take no detours, as the model gives them no skew
    const PatternMap kinds = patterns.phases.empty() ? phase_patterns(sk, frame, opt.P, machine.patterns) : patterns;
    std::vector<std::string> quiet;
    for (const auto& ph : kinds.phases)
      if (ph.kind == "pipeline") quiet.push_back(ph.label);
    ctx.set_noise(load.noise_scale, opt.load_seed, quiet);
    if (!quiet.empty()) {
      std::string q;
      for (const auto& l : quiet) q += (q.empty() ? "" : ",") + (l.empty() ? std::string("(unlabelled)") : l);
      load.noise += "; none in pipeline phases " + q;
    }
  }
  for (int r = 0; r < opt.P; ++r)
    ctx.transport().set_actor(r, sg4::Actor::create("rank-" + std::to_string(r), hosts[r], [&ctx, r] { ctx.run_rank(r); }));
  // On a terminal, show progress; Ctrl-C stops the run (it fails: no result is written).
  if (opt.warnings && isatty(STDERR_FILENO)) ctx.transport().enable_progress(expected_messages(sk, frame, opt.P));
  install_interrupt_handler();
  engine.run();
  restore_interrupt_handler();
  ctx.transport().end_progress();

  const Transport& tr = ctx.transport();
  if (tr.deadlocked()) throw DeadlockError(sk.file + ": " + tr.error());
  if (!tr.error().empty()) throw ReplayError(tr.error());
  if (std::string lost = tr.unmatched_messages(); !lost.empty()) throw ReplayError(sk.file + ": " + lost);
  if (std::string stuck = tr.incomplete_ranks(); !stuck.empty())  // a bug of ours if it ever happens
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
  if (!load.hosts.empty()) a.emplace_back("load.hosts", load.hosts);
  if (!load.links.empty()) a.emplace_back("load.links", load.links);
  if (!opt.load_file.empty() || !opt.load_text.empty()) {
    a.emplace_back("load.file", opt.load_file.empty() ? "(load rules)" : opt.load_file);
    a.emplace_back("load.model", load.model);
    if (load.stochastic) a.emplace_back("load.seed", std::to_string(opt.load_seed));
  }
  if (!load.noise.empty()) {
    a.emplace_back("noise.model", load.noise);
    a.emplace_back("noise.detours", std::to_string(ctx.noise_detours()));
    a.emplace_back("noise.rank_detours_max", std::to_string(ctx.noise_rank_detours_max()));
    a.emplace_back("noise.total_s", num(ctx.noise_total_s()));
  }
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

