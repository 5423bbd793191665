// mksim diagnose on a traced run: the measured analysis (seed 002 on real events) and, with a platform, the
// what-if replays of the skeleton built from the same trace (sim/diagnosis/diagnose.cpp) attached by call site.
#include "sim/diagnosis/trace_diagnose.hpp"

#include "sim/diagnosis/phases.hpp"

#include "skeletons/builder/builder.hpp"
#include "skeletons/skeleton_io.hpp"
#include "skeletons/trace/reader.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace mksim::sim {

using results::Problem;
using trace::Event;
using trace::Kind;
namespace fs = std::filesystem;

namespace {

std::string num(double v, const char* f = "%.4g") {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string head_of(const std::string& path, std::size_t n) {
  std::ifstream f(path, std::ios::binary);
  std::string s(n, '\0');
  f.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<std::size_t>(f.gcount()));
  return s;
}

bool is_run_json(const std::string& path) {
  const std::string h = head_of(path, 4096);
  return h.find("\"mktrace-run\"") != std::string::npos;
}

bool is_call(Kind k) { return k != Kind::COMPLETE && !trace::is_annotation(k); }

bool blocking_send(Kind k) { return k == Kind::SEND || k == Kind::SSEND || k == Kind::RSEND || k == Kind::BSEND; }

// ---- per-rank view of the trace: calls on a common clock, compute gaps keyed by the call that follows ----

struct Key {  // a call site: the MPI function and where it is called from
  Kind kind{};
  std::uint64_t site = 0;
  bool operator<(const Key& o) const { return std::tie(kind, site) < std::tie(o.kind, o.site); }
  bool operator==(const Key& o) const { return kind == o.kind && site == o.site; }
};

struct Wait {  // the wait of one call on one rank, and what it waited for
  double s = 0;
  int kind = -1;          // 0 late sender, 1 late receiver, 2 collective
  int cause_rank = -1;
  std::size_t cause_event = 0;  // event index on cause_rank: the send / receive post / collective arrival
};

const char* WAIT_KINDS[] = {"late_sender", "late_receiver", "collective_wait"};

class Analysis {
 public:
  Analysis(const trace::Run& run, const TraceDiagnoseOptions& o) : run_(run), o_(o), P_(run.P) {}

  results::Diagnosis run();

 private:
  const trace::Run& run_;
  const TraceDiagnoseOptions& o_;
  int P_;
  std::vector<double> offset_;                    // rank's t0 on the common clock
  std::vector<std::vector<std::size_t>> prev_;    // event -> index of the previous call (or SIZE_MAX)
  std::vector<std::vector<Wait>> wait_;           // per rank, per event
  std::map<Key, std::vector<double>> compute_;    // compute before the call, summed per rank
  std::map<Key, std::vector<double>> count_;      // executions per rank
  std::map<Key, std::vector<double>> mpi_time_;   // time in the call, per rank
  std::map<Key, std::vector<std::vector<double>>> samples_;  // each compute gap, per rank
  std::map<Key, std::string> site_text_;
  double start_ = 0, end_ = 0;
  bool cpu_gaps_ = false;  // the trace carries CPU times of its gaps (format v3, MKTRACE_CPU_TIME=1)
  std::vector<std::string> notes_;

  double enter(int r, std::size_t i) const { return offset_[r] + run_.ranks[r].events[i].t_enter; }
  double exit(int r, std::size_t i) const { return offset_[r] + run_.ranks[r].events[i].t_exit; }
  Key key(int r, std::size_t i) const {
    const Event& e = run_.ranks[r].events[i];
    return {e.kind, e.site};
  }
  std::map<Key, std::string> unique_;  // short, unambiguous name of each call site
  std::string short_name(const Key& k) const {
    auto it = unique_.find(k);
    return it != unique_.end() ? it->second : std::string(trace::kind_name(k.kind));
  }
  /** @brief Names "MPI_X@frame": the innermost frame, with more frames where two call sites would share a name. */
  void name_sites() {
    auto name_at = [&](const Key& k, std::size_t frames) {
      const std::string& full = site_text_.at(k);
      std::string name(trace::kind_name(k.kind));
      if (full.empty()) return name;
      std::size_t cut = std::string::npos, from = 0;
      for (std::size_t f = 0; f < frames; ++f) {
        cut = full.find(" <- ", from);
        if (cut == std::string::npos) break;
        from = cut + 4;
      }
      return name + "@" + (cut == std::string::npos ? full : full.substr(0, cut));
    };
    std::map<Key, std::size_t> depth;
    for (const auto& [k, full] : site_text_) depth[k] = 1;
    for (int round = 0; round < 6; ++round) {
      std::map<std::string, int> count;
      for (const auto& [k, full] : site_text_) count[unique_[k] = name_at(k, depth[k])]++;
      bool clash = false;
      for (const auto& [k, full] : site_text_)
        if (count[unique_[k]] > 1) depth[k]++, clash = true;
      if (!clash) return;
    }
  }

 public:
  /// wait problem ("kind block") -> the block of its dominant origin
  std::map<std::string, std::string> origin_of_;
  /** @brief Block names of the findings -> the call site's full text (describe_site), "compute before " + it for
   *  compute: the names the skeleton builder's provenance uses. */
  std::map<std::string, std::string> block_sites() const {
    std::map<std::string, std::string> m;
    for (const auto& [k, full] : site_text_) {
      if (full.empty()) continue;
      m[short_name(k)] = full;
      m[compute_name(k)] = "compute before " + full;
    }
    return m;
  }

 private:
  std::string compute_name(const Key& k) const { return "compute before " + short_name(k); }
  double pct(double s) const { return end_ > start_ ? 100 * s / (end_ - start_) : 0; }

  void clocks();
  void gaps();
  void waits();
  std::string origin(int r, std::size_t i, double wait_s, std::map<std::pair<int, Key>, double>& blame) const;
  void phases(results::Diagnosis& d) const;
  void imbalance(results::Diagnosis& d) const;
  void wait_problems(results::Diagnosis& d);
  void granularity(results::Diagnosis& d) const;
  std::size_t waiting_call(int r, std::size_t done) const;
};

void Analysis::clocks() {
  offset_.assign(P_, 0);
  double lo = 1e300, hi = -1e300;
  for (const auto& rt : run_.ranks) {
    lo = std::min(lo, rt.t0_s);
    hi = std::max(hi, rt.t0_s);
  }
  // t0 close but not equal: one host or a global clock, used as is. Else (separate clocks, or OpenMPI's
  // per-process origin that makes t0 = 0 on every rank, set somewhere inside MPI_Init) the ranks are aligned on
  // the exits of their first collectives on MPI_COMM_WORLD (all ranks leave one within a latency of each
  // other): the median over up to 9 of them of the rank's exit minus rank 0's; without any, at t0.
  const bool shared = hi - lo < 10 && hi - lo > 0;
  std::vector<std::vector<double>> exits(P_);
  for (int r = 0; r < P_ && !shared; ++r)
    for (const Event& e : run_.ranks[r].events)
      if (trace::is_collective(e.kind) && e.comm == 0 && exits[r].size() < 9) exits[r].push_back(e.t_exit);
  std::size_t nc = 9;
  for (const auto& x : exits) nc = std::min(nc, x.size());
  for (int r = 0; r < P_; ++r) {
    if (shared) {
      offset_[r] = run_.ranks[r].t0_s - lo;
    } else if (nc > 0) {
      std::vector<double> dif;
      for (std::size_t j = 0; j < nc; ++j) dif.push_back(exits[0][j] - exits[r][j]);
      std::sort(dif.begin(), dif.end());
      offset_[r] = dif[dif.size() / 2];
    }
  }
  double spread = 0;
  for (int r = 0; r < P_; ++r) spread = std::max(spread, std::abs(offset_[r]));
  notes_.push_back(shared ? "clocks: ranks' MPI_Wtime taken as one clock (t0 spread " + num(hi - lo, "%.3g") +
                                " s: one host or a global clock); waits between ranks are measured on it"
                   : nc > 0 ? "clocks: ranks aligned on the exits of their first " + std::to_string(nc) +
                                  " collective(s) on MPI_COMM_WORLD (largest shift " + num(spread, "%.3g") +
                                  " s); waits between ranks are as accurate as that alignment"
                            : "clocks: ranks aligned at the end of MPI_Init (no collective on MPI_COMM_WORLD); waits between ranks are approximate");
  start_ = 1e300;
  end_ = 0;
  for (int r = 0; r < P_; ++r) {
    const auto& ev = run_.ranks[r].events;
    start_ = std::min(start_, offset_[r]);
    double last = offset_[r];
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if (!is_call(ev[i].kind)) continue;
      last = ev[i].kind == Kind::FINALIZE ? enter(r, i) : std::max(last, exit(r, i));
      if (ev[i].kind == Kind::FINALIZE) break;
    }
    end_ = std::max(end_, last);
  }
}

void Analysis::gaps() {
  prev_.assign(P_, {});
  for (int r = 0; r < P_; ++r) {
    const auto& rt = run_.ranks[r];
    const auto& ev = rt.events;
    prev_[r].assign(ev.size(), SIZE_MAX);
    std::size_t last = SIZE_MAX;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      prev_[r][i] = last;
      if (!is_call(ev[i].kind)) continue;
      const Key k = key(r, i);
      if (!site_text_.count(k)) site_text_[k] = ev[i].site ? trace::describe_site(rt, ev[i].site) : "";
      auto& c = compute_[k];
      auto& n = count_[k];
      auto& m = mpi_time_[k];
      auto& smp = samples_[k];
      if (c.empty()) c.assign(P_, 0), n.assign(P_, 0), m.assign(P_, 0), smp.assign(P_, {});
      // compute: the CPU time of the records' gaps since the last call when the tracer measured it (a rank waiting
      // for a core does not compute), else the wall-clock gap
      double gap = 0;
      if (last != SIZE_MAX) {
        gap = std::max(0.0, ev[i].t_enter - ev[last].t_exit);
        if (ev[i].cpu_gap >= 0) {
          gap = 0;
          for (std::size_t j = last + 1; j <= i; ++j) gap += std::max(0.0, ev[j].cpu_gap);
          cpu_gaps_ = true;
        }
      }
      c[r] += gap;
      smp[r].push_back(gap);
      n[r] += 1;
      if (ev[i].kind != Kind::FINALIZE && ev[i].kind != Kind::INIT && ev[i].kind != Kind::INIT_THREAD)
        m[r] += ev[i].t_exit - ev[i].t_enter;
      last = i;
    }
  }
}

/** @brief The call (wait, test, sendrecv, recv) whose record ends at event `done` (a COMPLETE record follows it). */
std::size_t Analysis::waiting_call(int r, std::size_t done) const {
  const auto& ev = run_.ranks[r].events;
  if (ev[done].kind != Kind::COMPLETE) return done;
  std::size_t i = done;
  while (i > 0 && !is_call(ev[i].kind)) --i;
  return i;
}

void Analysis::waits() {
  wait_.assign(P_, {});
  for (int r = 0; r < P_; ++r) wait_[r].assign(run_.ranks[r].events.size(), Wait{});
  auto note_wait = [&](int r, std::size_t i, double s, int kind, int cause_rank, std::size_t cause_event) {
    Wait& w = wait_[r][i];
    if (s > w.s) w = Wait{s, kind, cause_rank, cause_event};  // a waitall waits for its latest message
  };
  const trace::Matching m = trace::match_messages(run_);
  for (const auto& pair : m.pairs) {
    const int sr = pair.send.rank, rr = pair.recv.rank;
    // late sender: the receive (or the wait completing it) entered before the send was called
    const std::size_t rcall = waiting_call(rr, pair.recv.done);
    const double send_enter = enter(sr, pair.send.call);
    const double r_in = enter(rr, rcall), r_out = exit(rr, rcall);
    if (send_enter > r_in) note_wait(rr, rcall, std::min(send_enter, r_out) - r_in, 0, sr, pair.send.call);
    // late receiver: a send that blocked (completion after the receive was posted) entered before the post
    const Kind sk = run_.ranks[sr].events[pair.send.call].kind;
    std::size_t scall = pair.send.call;
    if (sk == Kind::ISEND || sk == Kind::ISSEND) {
      if (pair.send.done == pair.send.call) continue;
      scall = waiting_call(sr, pair.send.done);
    } else if (!blocking_send(sk)) {
      continue;
    }
    const double post = enter(rr, pair.recv.call);
    const double s_in = enter(sr, scall), s_out = exit(sr, scall);
    if (post > s_in && s_out >= post) note_wait(sr, scall, post - s_in, 1, rr, pair.recv.call);
  }
  // collectives: the j-th collective on a communicator is one instance on every rank that has it
  std::map<std::pair<std::uint32_t, std::size_t>, std::vector<std::pair<int, std::size_t>>> inst;
  for (int r = 0; r < P_; ++r) {
    std::map<std::uint32_t, std::size_t> seq;
    const auto& ev = run_.ranks[r].events;
    for (std::size_t i = 0; i < ev.size(); ++i)
      if (trace::is_collective(ev[i].kind)) inst[{ev[i].comm, seq[ev[i].comm]++}].emplace_back(r, i);
  }
  for (const auto& [k, members] : inst) {
    int last_rank = members.front().first;
    std::size_t last_event = members.front().second;
    for (const auto& [r, i] : members)
      if (enter(r, i) > enter(last_rank, last_event)) last_rank = r, last_event = i;
    const double last = enter(last_rank, last_event);
    for (const auto& [r, i] : members)
      if (r != last_rank) note_wait(r, i, std::min(last, exit(r, i)) - enter(r, i), 2, last_rank, last_event);
  }
}

/** @brief Follows a wait of wait_s seconds for rank r reaching event i back to its origin (seed 002's chains of
 *  waits): on r, back from i to the last synchronisation (a call that waited, or a collective), the largest
 *  compute gap explains up to its length of the wait; what it does not explain, when r itself waited at that
 *  synchronisation, is followed to that wait's cause, and so on. Adds each origin's share to `blame` (keyed by
 *  rank and the call after the compute) and returns the chain as text. */
std::string Analysis::origin(int r, std::size_t i, double wait_s, std::map<std::pair<int, Key>, double>& blame) const {
  std::string chain;
  auto prev_call = [&](int rank, std::size_t e) {
    std::size_t p = prev_[rank][e];
    while (p != SIZE_MAX && !is_call(run_.ranks[rank].events[p].kind)) p = prev_[rank][p];
    return p;
  };
  double left = wait_s;
  for (int depth = 0; depth < 4 * P_ + 4 && left > 0; ++depth) {
    double best_gap = -1;
    std::size_t best_at = i, cur = i, stop = SIZE_MAX;
    for (int steps = 0; steps < 100000; ++steps) {
      const std::size_t p = prev_call(r, cur);
      const double gap = p == SIZE_MAX ? enter(r, cur) - offset_[r] : enter(r, cur) - exit(r, p);
      if (gap > best_gap) best_gap = gap, best_at = cur;
      if (p == SIZE_MAX) break;
      const Kind pk = run_.ranks[r].events[p].kind;
      if (wait_[r][p].kind >= 0 || trace::is_collective(pk) || pk == Kind::INIT || pk == Kind::INIT_THREAD) {
        stop = p;
        break;
      }
      cur = p;
    }
    const bool follow = stop != SIZE_MAX && best_gap < left && wait_[r][stop].kind >= 0 && wait_[r][stop].s > 0;
    const double here = follow ? std::max(0.0, best_gap) : left;
    const Key k = key(r, best_at);
    blame[{r, k}] += here;
    left -= here;
    chain += (chain.empty() ? "" : " <- ") + std::string("rank ") + std::to_string(r) + " (" + compute_name(k) + ": " + num(here) + " s)";
    if (!follow) break;
    const Wait& w = wait_[r][stop];
    r = w.cause_rank;
    i = w.cause_event;
  }
  return chain;
}

void Analysis::imbalance(results::Diagnosis& d) const {
  // seed 002's balance analysis (max - mean over ranks) on a preemption-robust figure: each rank's median gap
  // times its executions (a rank descheduled now and then, as when ranks share cores, keeps its median); the
  // plain sums' max - mean is the measured figure printed beside it
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  };
  for (const auto& [k, c] : compute_) {
    if (k.kind == Kind::INIT || k.kind == Kind::INIT_THREAD) continue;
    const auto& n = count_.at(k);
    const auto& smp = samples_.at(k);
    double mx = 0, mean = 0, nmx = 0, nmean = 0, raw_mx = 0, raw_mean = 0;
    int arg = 0;
    std::vector<double> all;
    for (int r = 0; r < P_; ++r) {
      const double typical = median(smp[r]) * n[r];
      mean += typical / P_;
      raw_mean += c[r] / P_;
      raw_mx = std::max(raw_mx, c[r]);
      nmean += n[r] / P_;
      nmx = std::max(nmx, n[r]);
      if (typical > mx) mx = typical, arg = r;
      all.insert(all.end(), smp[r].begin(), smp[r].end());
    }
    const double excess = mx - mean;
    if (pct(excess) < o_.screen_pct) continue;
    const double g = median(all);  // compute per execution, over all ranks
    const double event_part = (nmx - nmean) * g;
    Problem p;
    p.kind = event_part >= 0.5 * excess ? "event_imbalance" : "imbalance";
    p.block = compute_name(k);
    p.ranks = "rank " + std::to_string(arg) + " (max " + num(mx) + " s), mean " + num(mean) + " s over " + std::to_string(P_);
    p.action = p.kind == "imbalance" ? "balance the compute before this call across ranks (rank " + std::to_string(arg) + " has the most)"
                                     : "balance the number of executions of this block across ranks";
    p.measured_s = raw_mx - raw_mean;
    p.formula_gain_s = p.kind == "imbalance" ? excess : event_part;
    p.gain_s = excess;
    p.method = "measured (trace: seed 002 balance analysis, max - mean of median x executions)";
    p.detail = "per rank median gap x executions: max " + num(mx) + " s, mean " + num(mean) + " s; summed gaps: max " + num(raw_mx) +
               " s, mean " + num(raw_mean) + " s; executions max " + num(nmx) + ", mean " + num(nmean) + "; call site " +
               (site_text_.at(k).empty() ? "unknown" : site_text_.at(k));
    d.problems.push_back(p);
  }
}

void Analysis::wait_problems(results::Diagnosis& d) {
  struct Acc {
    std::vector<double> per_rank;
    std::map<std::pair<int, Key>, double> origins;  // (rank, compute key) -> wait blamed on it
    std::map<int, double> causes;                   // directly waited-for rank -> wait
    double biggest = 0;
    std::string chain;
  };
  std::map<std::pair<int, Key>, Acc> acc;
  for (int r = 0; r < P_; ++r)
    for (std::size_t i = 0; i < wait_[r].size(); ++i) {
      const Wait& w = wait_[r][i];
      if (w.kind < 0 || w.s <= 0) continue;
      Acc& a = acc[{w.kind, key(r, i)}];
      if (a.per_rank.empty()) a.per_rank.assign(P_, 0);
      a.per_rank[r] += w.s;
      a.causes[w.cause_rank] += w.s;
      const std::string chain = origin(w.cause_rank, w.cause_event, w.s, a.origins);
      if (w.s > a.biggest) a.biggest = w.s, a.chain = "rank " + std::to_string(r) + " waits " + num(w.s) + " s for " + chain;
    }
  // the imbalance problems, by block name, to blame waits on their origin
  std::map<std::string, const Problem*> imb;
  const std::size_t n_imb = d.problems.size();
  for (std::size_t i = 0; i < n_imb; ++i) imb[d.problems[i].block] = &d.problems[i];
  std::vector<Problem> out;
  for (const auto& [k, a] : acc) {
    double mx = 0, total = 0;
    int arg = 0;
    for (int r = 0; r < P_; ++r) {
      total += a.per_rank[r];
      if (a.per_rank[r] > mx) mx = a.per_rank[r], arg = r;
    }
    if (pct(mx) < o_.screen_pct) continue;
    auto top = [](const auto& m) {
      auto best = m.begin();
      for (auto it = m.begin(); it != m.end(); ++it)
        if (it->second > best->second) best = it;
      return best;
    };
    const auto cause = top(a.causes);
    const auto orig = top(a.origins);
    const std::string origin_block = compute_name(orig->first.second);
    Problem p;
    p.kind = WAIT_KINDS[k.first];
    p.block = short_name(k.second);
    p.ranks = "rank " + std::to_string(arg) + " waits most (" + num(mx) + " s, mean " + num(total / P_) + " s); waits for rank " +
              std::to_string(cause->first) + "; origin rank " + std::to_string(orig->first.first) + " (" + origin_block + ")";
    p.chain = a.chain;
    p.measured_s = mx;
    p.formula_gain_s = mx;
    p.detail = "waits summed over ranks " + num(total) + " s, " + num(100 * orig->second / std::max(total, 1e-300), "%.0f") +
               "% of it traced back (chains of waits, split by compute gaps) to " + origin_block + " on rank " + std::to_string(orig->first.first) + "; longest: " + a.chain;
    origin_of_[p.kind + " " + p.block] = origin_block;
    if (auto it = imb.find(origin_block); it != imb.end()) {
      p.gain_s = std::min(mx, it->second->gain_s);
      p.action = "fix the origin: " + it->second->action;
      p.method = "measured (trace: the origin's imbalance, max - mean, at most the largest wait)";
    } else {
      p.gain_s = 0;
      p.action = "the origin (" + origin_block + " on rank " + std::to_string(orig->first.first) +
                 ") computes no more than the others: a dependence (pipeline fill, ordering); reorder or overlap";
      p.method = "not simulated (a dependence; the largest wait is an upper bound)";
    }
    out.push_back(p);
  }
  for (auto& p : out) d.problems.push_back(std::move(p));
}

void Analysis::granularity(results::Diagnosis& d) const {
  // seed 002 utility analysis: tiny messages sent back to back (a burst: calls of small point-to-point messages
  // with less compute between them than a message costs) could go as one. O = the sender's measured cost of a
  // tiny message (its call's time minus the wait in it); per send site, each rank's burst of c messages saves
  // (c - 1) O when aggregated (k = c).
  auto tiny_p2p = [&](const Event& e) {
    if (trace::is_send(e.kind) || e.kind == Kind::RECV || e.kind == Kind::IRECV) return static_cast<double>(e.bytes) <= o_.tiny_bytes;
    return e.kind == Kind::WAIT || e.kind == Kind::WAITALL || e.kind == Kind::WAITANY || e.kind == Kind::WAITSOME;
  };
  double cost = 0, n = 0;
  std::map<Key, double> bytes, msgs;
  for (int r = 0; r < P_; ++r) {
    const auto& ev = run_.ranks[r].events;
    for (std::size_t i = 0; i < ev.size(); ++i)
      if (trace::is_send(ev[i].kind) && static_cast<double>(ev[i].bytes) <= o_.tiny_bytes && ev[i].peer >= 0) {
        cost += std::max(0.0, ev[i].t_exit - ev[i].t_enter - wait_[r][i].s);
        n += 1;
        bytes[key(r, i)] += static_cast<double>(ev[i].bytes);
        msgs[key(r, i)] += 1;
      }
  }
  if (n == 0) return;
  const double O = cost / n;
  std::map<Key, std::vector<double>> saved;  // per send site, per rank: messages aggregation would save
  std::map<Key, std::vector<double>> longest;
  for (int r = 0; r < P_; ++r) {
    const auto& ev = run_.ranks[r].events;
    std::map<Key, double> burst;
    auto close = [&] {
      for (const auto& [k, c] : burst) {
        auto& s = saved[k];
        auto& l = longest[k];
        if (s.empty()) s.assign(P_, 0), l.assign(P_, 0);
        s[r] += std::max(0.0, c - 1);
        l[r] = std::max(l[r], c);
      }
      burst.clear();
    };
    std::size_t last = SIZE_MAX;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if (!is_call(ev[i].kind)) continue;
      const double gap = last == SIZE_MAX ? 1e300 : ev[i].t_enter - ev[last].t_exit;
      last = i;
      if (!tiny_p2p(ev[i]) || gap > O) close();
      if (tiny_p2p(ev[i]) && trace::is_send(ev[i].kind) && ev[i].peer >= 0) burst[key(r, i)] += 1;
    }
    close();
  }
  for (const auto& [k, s] : saved) {
    double smax = 0, lmax = 0;
    int arg = 0;
    for (int r = 0; r < P_; ++r) {
      if (s[r] > smax) smax = s[r], arg = r;
      lmax = std::max(lmax, longest.at(k)[r]);
    }
    const double gain = O * smax;
    if (smax <= 0 || pct(gain) < o_.screen_pct) continue;
    Problem p;
    p.kind = "granularity";
    p.block = short_name(k);
    p.ranks = "rank " + std::to_string(arg) + ": " + num(smax) + " messages saved by aggregation (bursts of up to " + num(lmax) +
              " back-to-back messages, mean " + num(bytes.at(k) / msgs.at(k)) + " B)";
    p.action = "aggregate the back-to-back messages of this call site (fewer, larger messages; legal only if they are independent)";
    p.gain_s = gain;
    p.formula_gain_s = gain;
    p.measured_s = O * smax;
    p.method = "formula (seed 002 utility: O N (1 - 1/k) per burst, O measured)";
    p.detail = "messages <= " + num(o_.tiny_bytes) + " B sent with less compute between them than a message costs; measured sender "
               "cost per message O = " + num(O) + " s (call time minus waiting)";
    d.problems.push_back(p);
  }
}

void Analysis::phases(results::Diagnosis& d) const {
  // communication activity: every call (not MPI_Init) and every message in flight, on the common clock
  std::vector<CommInterval> act;
  for (int r = 0; r < P_; ++r) {
    const auto& ev = run_.ranks[r].events;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if (!is_call(ev[i].kind) || ev[i].kind == Kind::INIT || ev[i].kind == Kind::INIT_THREAD) continue;
      const double a = enter(r, i);
      act.push_back({r, a, ev[i].kind == Kind::FINALIZE ? a : exit(r, i), ev[i].kind == Kind::FINALIZE ? "" : short_name(key(r, i))});
    }
  }
  const trace::Matching m = trace::match_messages(run_);
  for (const auto& pair : m.pairs)
    act.push_back({-1, enter(pair.send.rank, pair.send.call), exit(pair.recv.rank, waiting_call(pair.recv.rank, pair.recv.done)), ""});
  d.logical_phases = logical_phases(P_, start_, end_, act);
}

using detail::kind_order;

results::Diagnosis Analysis::run() {
  results::Diagnosis d;
  clocks();
  gaps();
  name_sites();
  waits();
  imbalance(d);
  wait_problems(d);
  granularity(d);
  phases(d);
  d.baseline_time_s = end_ - start_;
  d.threshold_pct = o_.threshold_pct;
  for (auto& n : notes_) d.notes.push_back(n);
  d.notes.push_back(std::string("compute is the ") + (cpu_gaps_ ? "CPU time (the tracer measured it)" : "time") +
                    " between two recorded MPI calls of a rank, attributed to the call that follows it");
  d.notes.push_back("waits are followed back along chains of waits (a rank late because it waited itself) to the compute that started them");
  d.attributes.emplace_back("source", "trace");
  d.attributes.emplace_back("trace.dir", run_.dir);
  d.attributes.emplace_back("P", std::to_string(P_));
  for (const auto& [k, v] : run_.params) d.attributes.emplace_back("param." + k, v);
  std::string cmd;
  for (const auto& c : run_.command) cmd += (cmd.empty() ? "" : " ") + c;
  d.attributes.emplace_back("trace.command", cmd);
  d.attributes.emplace_back("diagnose.threshold_pct", num(o_.threshold_pct, "%.10g"));
  d.attributes.emplace_back("diagnose.screen_pct", num(o_.screen_pct, "%.10g"));
  return d;
}

// ---- simulated severities: the skeleton built from the trace, diagnosed by sim/diagnosis/diagnose.cpp ----

/** @brief Block id (JSON pointer) -> the trace's name for it: a call block "MPI_X@site", a compute block
 *  "compute before MPI_X@site" (the first call after it in program order). */
void site_names(const nlohmann::json& body, const std::string& at, std::map<std::string, std::string>& out, std::string& next_call) {
  // walk backwards so that a compute block knows the call that follows it
  for (std::size_t j = body.size(); j-- > 0;) {
    const nlohmann::json& b = body[j];
    const std::string id = at + "/" + std::to_string(j);
    const std::string op = b.value("op", "");
    if (b.contains("body")) site_names(b["body"], id + "/body", out, next_call);
    if (b.contains("then")) site_names(b["then"], id + "/then", out, next_call);
    if (b.contains("else")) site_names(b["else"], id + "/else", out, next_call);
    if (op == "compute") {
      if (!next_call.empty()) out[id] = "compute before " + next_call;
    } else if (b.contains("provenance") && b["provenance"].contains("site")) {
      next_call = b["provenance"]["site"].get<std::string>();
      out[id] = next_call;
    }
  }
}

void simulate(const trace::Run& run, const TraceDiagnoseOptions& o, const std::map<std::string, std::string>& block_sites,
              const std::map<std::string, std::string>& origin_of, results::Diagnosis& d) {
  skeletons::builder::BuildOptions bo;
  const skeletons::builder::BuildResult built = skeletons::builder::build_skeleton({run}, bo);
  if (o.progress)
    for (const auto& w : built.warnings) *o.progress << "mksim diagnose: skeleton build: " << w << "\n";
  const std::string text = built.skeleton.dump();
  const skeletons::Skeleton sk = skeletons::parse_skeleton(text, run.dir + " (skeleton built from the trace)");
  DiagnoseOptions so = *o.simulate;
  so.run.P = run.P;
  so.run.params.clear();
  std::string params;
  for (const auto& [k, v] : run.params) {
    try {
      so.run.params[k] = std::stod(v);
      params += (params.empty() ? "" : ",") + k + "=" + v;
    } catch (const std::exception&) {
    }
  }
  so.threshold_pct = o.threshold_pct;
  const results::Diagnosis sd = diagnose(sk, so);
  // names of the skeleton's blocks as the trace analysis names them: MPI kind @ innermost frame
  std::map<std::string, std::string> raw;
  std::string next;
  if (built.skeleton.contains("groups") && built.skeleton["groups"].is_array()) {
    for (std::size_t g = 0; g < built.skeleton["groups"].size(); ++g) {
      next.clear();
      site_names(built.skeleton["groups"][g]["body"], "/groups/" + std::to_string(g) + "/body", raw, next);
    }
  } else if (built.skeleton.contains("body")) {
    site_names(built.skeleton["body"], "/body", raw, next);
  }
  const std::string how = "at the trace's P = " + std::to_string(run.P) + (params.empty() ? "" : ", " + params) + " on " +
                          fs::path(so.run.platform_path).filename().string() + ": ";
  std::vector<bool> used(sd.problems.size(), false);
  for (Problem& p : d.problems) {
    auto bs = block_sites.find(p.block);
    const std::string want = bs == block_sites.end() ? std::string("?") : bs->second;
    if (kind_order(p.kind) <= 4 && p.method.rfind("measured", 0) == 0)
      p.method += "; not simulated: the skeleton built from the trace has no such problem here (one run: the builder fits "
                  "each compute block over ranks)";  // replaced below when a simulated problem matches
    // an imbalance matches the simulated problem of its compute block; a wait, the simulated wait at its call
    for (std::size_t i = 0; i < sd.problems.size(); ++i) {
      const Problem& s = sd.problems[i];
      auto f = raw.find(s.block);
      if (used[i] || f == raw.end() || f->second != want) continue;
      const bool both_imb = (p.kind == "imbalance" || p.kind == "event_imbalance") && (s.kind == "imbalance" || s.kind == "event_imbalance");
      const bool both_wait = kind_order(p.kind) >= 2 && kind_order(p.kind) <= 4 && kind_order(s.kind) >= 2 && kind_order(s.kind) <= 4;
      const bool same = p.kind == s.kind;
      if (!(both_imb || both_wait || same)) continue;
      used[i] = true;
      if (const std::size_t cut = p.method.find("; not simulated: the skeleton"); cut != std::string::npos) p.method.resize(cut);
      if (s.method.rfind("simulated", 0) == 0) {
        p.gain_s = s.gain_s * d.baseline_time_s / std::max(sd.baseline_time_s, 1e-300);  // the simulated share, of the traced time
        p.method = "simulated (skeleton built from the trace, what-if " + how + s.method + ": " + num(s.gain_s, "%.6f") + " of " +
                   num(sd.baseline_time_s, "%.6f") + " s simulated)";
      } else {
        p.detail += "; simulated: " + s.method;
      }
      break;
    }
  }
  // a wait whose gain came from its origin's imbalance follows the origin's simulated gain (a symptom never
  // outranks its cause)
  for (Problem& p : d.problems) {
    auto o_it = origin_of.find(p.kind + " " + p.block);
    if (o_it == origin_of.end() || p.method.rfind("measured (trace: the origin's imbalance", 0) != 0) continue;
    for (const Problem& q : d.problems)
      if (q.block == o_it->second && q.method.rfind("simulated", 0) == 0) {
        p.gain_s = std::min(p.measured_s, q.gain_s);
        p.method = "simulated (its origin " + q.block + " fixed; at most the largest wait): " + q.method.substr(11);
        break;
      }
  }
  // what only the skeleton sees (pipeline grain, scaling, granularity with the platform's costs)
  for (std::size_t i = 0; i < sd.problems.size(); ++i) {
    if (used[i]) continue;
    const Problem& s = sd.problems[i];
    if (s.kind != "pipeline_grain" && s.kind != "scaling" && s.kind != "granularity") continue;
    Problem p = s;
    p.gain_s = s.gain_s * d.baseline_time_s / std::max(sd.baseline_time_s, 1e-300);
    if (auto f = raw.find(s.block); f != raw.end()) p.block = f->second.substr(0, f->second.find(" <- "));
    p.method = "simulated (skeleton built from the trace " + how + s.method + ")";
    d.problems.push_back(p);
  }
  d.attributes.emplace_back("simulated.baseline_time_s", num(sd.baseline_time_s, "%.10g"));
  for (const auto& [k, v] : sd.attributes)
    if (k.rfind("platform", 0) == 0 || k.rfind("diagnose.what_if", 0) == 0) d.attributes.emplace_back("simulated." + k, v);
  d.notes.push_back("simulated gains: the skeleton built from this trace (mkskel build) replayed at P = " + std::to_string(run.P) +
                    " on the platform (baseline " + num(sd.baseline_time_s, "%.6f") + " s vs traced " + num(d.baseline_time_s, "%.6f") +
                    " s); a simulated gain is scaled to the traced time by that ratio");
}

}  // namespace

DiagnoseInput classify_diagnose_input(const std::vector<std::string>& paths) {
  if (paths.empty()) throw std::runtime_error("nothing to diagnose");
  std::set<int> kinds;
  for (const auto& p : paths) {
    if (!fs::exists(p)) throw std::runtime_error(p + ": no such file or directory");
    if (fs::is_directory(p)) {
      if (!fs::exists(fs::path(p) / "run.json")) throw std::runtime_error(p + ": a directory without run.json (not a mktrace run)");
      kinds.insert(static_cast<int>(DiagnoseInput::TRACE_DIR));
    } else if (head_of(p, 7) == "MKTRACE") {
      kinds.insert(static_cast<int>(DiagnoseInput::RANK_FILES));
    } else if (is_run_json(p)) {
      kinds.insert(static_cast<int>(DiagnoseInput::TRACE_DIR));
    } else {
      kinds.insert(static_cast<int>(DiagnoseInput::SKELETON));
    }
  }
  if (kinds.size() != 1) throw std::runtime_error(paths.front() + ": give one skeleton, one traced run directory, or rank files of one run");
  const auto k = static_cast<DiagnoseInput>(*kinds.begin());
  if (k != DiagnoseInput::RANK_FILES && paths.size() != 1)
    throw std::runtime_error(paths[1] + ": only one skeleton or run directory at a time");
  return k;
}

trace::Run read_diagnose_trace(const std::vector<std::string>& paths, DiagnoseInput kind) {
  if (kind == DiagnoseInput::TRACE_DIR) {
    const fs::path p = fs::is_directory(paths.front()) ? fs::path(paths.front()) : fs::path(paths.front()).parent_path();
    return trace::read_run(p.empty() ? "." : p.string(), {.require_complete = true});
  }
  trace::Run run;
  std::map<int, trace::RankTrace> by_rank;
  for (const auto& p : paths) {
    trace::RankTrace rt = trace::read_rank_file(p);
    if (rt.status != trace::Status::FINALIZED)
      throw trace::TraceError(p, trace::TraceError::NO_OFFSET, "rank " + std::to_string(rt.rank) + " did not reach MPI_Finalize (" +
                                                                   std::string(trace::status_name(rt.status)) + ")");
    if (run.P == 0) run.P = rt.world_size;
    if (rt.world_size != run.P) throw trace::TraceError(p, trace::TraceError::NO_OFFSET, "world size differs from " + paths.front() + "'s");
    if (by_rank.count(rt.rank)) throw trace::TraceError(p, trace::TraceError::NO_OFFSET, "rank " + std::to_string(rt.rank) + " given twice");
    const int r = rt.rank;
    by_rank.emplace(r, std::move(rt));
  }
  for (int r = 0; r < run.P; ++r) {
    auto it = by_rank.find(r);
    if (it == by_rank.end())
      throw trace::TraceError(paths.front(), trace::TraceError::NO_OFFSET, "rank " + std::to_string(r) + " of " + std::to_string(run.P) + " not given");
    run.ranks.push_back(std::move(it->second));
  }
  run.dir = fs::path(paths.front()).parent_path().string();
  return run;
}

results::Diagnosis diagnose_trace(const trace::Run& run, const TraceDiagnoseOptions& options) {
  if (!run.complete()) throw std::runtime_error(run.dir + ": incomplete run: " + run.problems.front());
  if (run.P < 1 || static_cast<int>(run.ranks.size()) != run.P) throw std::runtime_error(run.dir + ": no ranks");
  Analysis a(run, options);
  results::Diagnosis d = a.run();
  if (options.simulate) simulate(run, options, a.block_sites(), a.origin_of_, d);
  detail::rank_problems(d);
  std::sort(d.attributes.begin(), d.attributes.end());
  return d;
}

std::string format_trace_diagnosis(const results::Diagnosis& d) {
  static const detail::DiagnosisText text{"traced run", 40, true, "no message in flight, every rank between MPI calls", "call sites",
                                          true};
  std::ostringstream out;
  detail::format_problems(out, d, text);
  detail::format_logical_phases(out, d, text);
  for (const auto& n : d.notes) out << "note: " << n << "\n";
  return out.str();
}

}  // namespace mksim::sim
