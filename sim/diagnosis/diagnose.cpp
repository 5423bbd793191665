// mksim diagnose: the baseline replay with block statistics, the detectors (seed 002: balance, utility /
// granularity and pipelining analyses, plus wait states and growth with P from the analytic model), and the
// what-if replays that measure each problem's severity (seed 002: the time saved if the problem is fixed).
#include "sim/diagnosis/diagnose.hpp"

#include "sim/engine/isolate.hpp"
#include "sim/engine/machine_model.hpp"
#include "sim/model/model.hpp"
#include "sim/model/model_queries.hpp"
#include "sim/diagnosis/phases.hpp"
#include "skeletons/skeleton_io.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

namespace mksim::sim {

using results::BlockStats;
using results::Problem;
using namespace mksim::skeletons;

namespace {

std::string num(double v, const char* f = "%.4g") {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// ---- the program tree, flattened: parent, enclosing loop, loop bodies ----

struct TreeInfo {
  std::vector<int> parent;                 // enclosing block, -1 at top level
  std::vector<const Loop*> loop;           // the Loop of loop blocks, else null
  std::vector<std::vector<int>> children;  // direct children, in order (then before else)
};

void walk(const Body& body, int parent, TreeInfo& t) {
  for (const Block& b : body) {
    t.parent[b.index] = parent;
    if (parent >= 0) t.children[parent].push_back(b.index);
    std::visit(
        [&](const auto& op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, Loop>) {
            t.loop[b.index] = &op;
            walk(op.body, b.index, t);
          } else if constexpr (std::is_same_v<T, Branch>) {
            walk(op.then_body, b.index, t);
            walk(op.else_body, b.index, t);
          } else if constexpr (std::is_same_v<T, Region>) {
            walk(op.body, b.index, t);
          }
        },
        b.op);
  }
}

TreeInfo tree_of(const Skeleton& sk) {
  TreeInfo t;
  const std::size_t B = sk.blocks.size();
  t.parent.assign(B, -1);
  t.loop.assign(B, nullptr);
  t.children.assign(B, {});
  for (const RankGroup& g : sk.groups) walk(g.body, -1, t);
  return t;
}

/** @brief Blocks under `b` (not b), not descending into nested loops when `stop_at_loops`. */
void subtree(const TreeInfo& t, int b, bool stop_at_loops, std::vector<int>& out) {
  for (int c : t.children[b]) {
    out.push_back(c);
    if (!(stop_at_loops && t.loop[c])) subtree(t, c, stop_at_loops, out);
  }
}

/** @brief Identifiers in an expression's text (parameter names a loop count uses). */
std::set<std::string> identifiers(const std::string& text) {
  std::set<std::string> out;
  std::string cur;
  for (char ch : text + " ") {
    const bool word = std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    if (word) cur += ch;
    else {
      if (!cur.empty() && !std::isdigit(static_cast<unsigned char>(cur[0]))) out.insert(cur);
      cur.clear();
    }
  }
  return out;
}

bool is_send(const std::string& op) { return op == "send" || op == "isend"; }
bool is_mpi(const std::string& op) { return op != "compute" && op != "loop" && op != "if" && op != "region"; }

// ---- the analytic model, in a child (it loads the platform in a SimGrid engine) ----

struct TermFigures {
  std::string phase, kind;
  double at_P_s = 0, at_large_s = 0;
};

struct GrainOptimum {
  std::string param;
  double current = 0, best = 0, model_T_current = 0, model_T_best = 0;
  std::vector<std::string> phases;  // pipeline phases whose loop count uses the parameter
};

struct ModelFacts {
  double send_s = 0, recv_s = 0, msg_s = 0, latency_s = 0, bandwidth_Bps = 0, speed_flops = 0;
  int P_large = 0;          // 0: no scaling figures
  double T_P = 0, T_large = 0;
  std::vector<TermFigures> terms;
  std::vector<GrainOptimum> grains;
  std::vector<std::string> notes;
};

std::string model_child(const Skeleton& sk, const DiagnoseOptions& o, int P_large) {
  const int P = o.run.P;
  const MachineModel m = load_machine_model(o.run.platform_path, P);
  std::vector<std::string> notes;
  if (P_large > m.hosts && m.hosts > P) {  // as far as the machine goes: P = 128 on the 256-node Paragon looks at 256
    notes.push_back("scaling: the model at P=" + std::to_string(m.hosts) + ", the platform's " + std::to_string(m.hosts) +
                    " hosts, not " + std::to_string(o.scale_factor) + " x P = " + std::to_string(P_large));
    P_large = m.hosts;
  } else if (P_large > m.hosts) {
    notes.push_back("scaling: the platform has no hosts beyond P=" + std::to_string(P) + "; scaling detector skipped");
    P_large = 0;
  }
  nlohmann::json j;
  j["send_s"] = m.send_overhead_s;
  j["recv_s"] = m.recv_overhead_s;
  j["msg_s"] = m.per_message_overhead_s;
  const RouteFigures rf = P > 1 ? m.route(0, 1) : RouteFigures{};
  j["latency_s"] = rf.latency_s;
  j["bandwidth_Bps"] = rf.bandwidth_Bps;
  j["speed_flops"] = m.speed_flops ? m.speed_flops(0) : 0.0;
  ModelOptions mo;
  mo.P = P;
  mo.params = o.run.params;
  mo.skew = false;  // the replay has no skew: compare like with like
  const AnalyticModel at_P = derive_model(sk, m, mo);
  j["T_P"] = at_P.value_s;
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> terms;  // (phase, kind) -> (P, large)
  for (const auto& t : at_P.terms) terms[{t.phase, t.kind}].first += t.value_s;
  j["P_large"] = 0;
  if (P_large > P) {
    try {
      mo.P = P_large;
      const AnalyticModel big = derive_model(sk, m, mo);
      j["P_large"] = P_large;
      j["T_large"] = big.value_s;
      for (const auto& t : big.terms) terms[{t.phase, t.kind}].second += t.value_s;
    } catch (const std::exception& e) {
      notes.push_back(std::string("scaling: no model at P=") + std::to_string(P_large) + ": " + e.what());
    }
  }
  j["terms"] = nlohmann::json::array();
  for (const auto& [k, v] : terms) j["terms"].push_back({k.first, k.second, v.first, v.second});
  // Pipeline grain: the parameters in the counts of the loops of pipeline phases (pge1: nb = ceil(M / K)).
  const TreeInfo tree = tree_of(sk);
  std::map<std::string, std::set<std::string>> grain_phases;
  for (const auto& t : at_P.terms) {
    if (t.kind != "pipeline") continue;
    for (std::size_t b = 0; b < sk.blocks.size(); ++b) {
      if (!tree.loop[b] || sk.blocks[b].phase != t.phase) continue;
      std::set<std::string> ids = identifiers(tree.loop[b]->count.text());
      // let names in the count (nb = ceil(M/K)) stand for their expressions
      for (const auto& d : sk.defines)
        if (ids.count(d.name))
          for (const auto& x : identifiers(d.value.text())) ids.insert(x);
      for (const auto& p : sk.params)
        if (ids.count(p.name)) grain_phases[p.name].insert(t.phase);
    }
  }
  // A grain parameter makes the pipeline loops shorter when it grows (nb = ceil(M / K): K is one, M is not).
  auto pipeline_iterations = [&](const std::map<std::string, double>& values) {
    std::vector<double> frame = bind_parameters(sk, P, values);
    bind_rank(sk, frame, 0);
    double n = 0;
    for (std::size_t b = 0; b < sk.blocks.size(); ++b)
      if (tree.loop[b] && tree.parent[b] < 0) {
        bool pipe = false;
        for (const auto& [nm, phs] : grain_phases) pipe = pipe || phs.count(sk.blocks[b].phase) > 0;
        if (pipe) n += tree.loop[b]->count.eval(frame);
      }
    return n;
  };
  j["grains"] = nlohmann::json::array();
  for (const auto& [name, phases] : grain_phases) {
    double cur = 0;
    if (auto it = o.run.params.find(name); it != o.run.params.end()) cur = it->second;
    else
      for (const auto& p : sk.params)
        if (p.name == name && p.default_value) cur = *p.default_value;
    if (!(cur >= 1)) continue;
    std::map<std::string, double> smaller = o.run.params, larger = o.run.params;
    smaller[name] = std::max(1.0, std::floor(cur / 2));
    larger[name] = cur * 2;
    try {
      if (!(pipeline_iterations(smaller) > pipeline_iterations(larger))) continue;  // not a grain: a problem size
    } catch (const std::exception&) {
      continue;
    }
    QueryOptions qo;
    qo.params = o.run.params;
    qo.skew = false;
    try {
      const ParamOptimum opt = optimize_param(sk, m, P, qo, name, 1, std::max(cur, 64.0));
      std::map<std::string, double> at = o.run.params;
      at[name] = cur;
      j["grains"].push_back({name, cur, opt.best, at_P.eval(P, at), opt.T_s, std::vector<std::string>(phases.begin(), phases.end())});
    } catch (const std::exception& e) {
      notes.push_back("pipeline grain: cannot optimise " + name + ": " + e.what());
    }
  }
  j["notes"] = notes;
  return j.dump();
}

ModelFacts model_facts(const Skeleton& sk, const DiagnoseOptions& o, std::vector<std::string>& notes) {
  ModelFacts f;
  const int P_large = o.scale_factor > 1 ? o.run.P * o.scale_factor : 0;
  ChildResult r;
  auto code_of = [](const std::exception&) { return 1; };
  r = run_in_child([&] { return model_child(sk, o, P_large); }, code_of, "the analytic model");
  if (r.code != 0 && P_large > 0) {
    notes.push_back("scaling: the model at P=" + std::to_string(P_large) + " failed (" + r.output + "); scaling detector skipped");
    r = run_in_child([&] { return model_child(sk, o, 0); }, code_of, "the analytic model");
  }
  if (r.code != 0) throw std::runtime_error("analytic model: " + r.output);
  const nlohmann::json j = nlohmann::json::parse(r.output);
  f.send_s = j.at("send_s").get<double>();
  f.recv_s = j.at("recv_s").get<double>();
  f.msg_s = j.at("msg_s").get<double>();
  f.latency_s = j.at("latency_s").get<double>();
  f.bandwidth_Bps = j.at("bandwidth_Bps").get<double>();
  f.speed_flops = j.at("speed_flops").get<double>();
  f.T_P = j.at("T_P").get<double>();
  f.P_large = j.at("P_large").get<int>();
  if (f.P_large > 0) f.T_large = j.at("T_large").get<double>();
  for (const auto& t : j.at("terms"))
    f.terms.push_back({t[0].get<std::string>(), t[1].get<std::string>(), t[2].get<double>(), t[3].get<double>()});
  for (const auto& g : j.at("grains"))
    f.grains.push_back({g[0].get<std::string>(), g[1].get<double>(), g[2].get<double>(), g[3].get<double>(), g[4].get<double>(),
                        g[5].get<std::vector<std::string>>()});
  for (const auto& n : j.at("notes")) notes.push_back(n.get<std::string>());
  return f;
}

// ---- what-if replays ----

class WhatIfRunner {
 public:
  WhatIfRunner(const Skeleton& sk, const DiagnoseOptions& o) : sk_(sk), o_(o) {}

  /** @brief Predicted time of the program changed by `what_ifs` and `params` (cached); < 0 when it failed or
   *  the budget of replays is spent (`why` says which). */
  double time(const std::vector<WhatIf>& what_ifs, const std::map<std::string, double>& params, std::string* why = nullptr) {
    std::ostringstream key;
    for (const auto& w : what_ifs) key << static_cast<int>(w.kind) << ':' << w.block << ':' << num(w.value, "%.17g") << ';';
    for (const auto& [k, v] : params) key << k << '=' << num(v, "%.17g") << ';';
    if (auto it = cache_.find(key.str()); it != cache_.end()) return it->second;
    if (runs_ >= o_.max_what_ifs) {
      if (why) *why = "what-if budget spent (--max-what-ifs)";
      return -1;
    }
    ++runs_;
    ReplayOptions ro = o_.run;
    ro.what_ifs = what_ifs;
    ro.params = params;
    ro.timeline_csv.clear();
    ro.block_stats = false;
    double t = -1;
    try {
      t = replay_in_child(sk_, ro).predicted_time_s;
    } catch (const std::exception& e) {
      if (why) *why = e.what();
    }
    if (o_.progress) *o_.progress << "mksim diagnose: what-if " << runs_ << " (" << key.str() << "): " << num(t, "%.9g") << " s\n";
    cache_[key.str()] = t;
    return t;
  }
  int runs() const { return runs_; }

 private:
  const Skeleton& sk_;
  const DiagnoseOptions& o_;
  std::map<std::string, double> cache_;
  int runs_ = 0;
};

}  // namespace

results::RunResult replay_stats_in_child(const Skeleton& skeleton, const ReplayOptions& options) {
  ChildResult r;
  try {
    r = run_in_child(
        [&] {
          ReplayOptions o = options;
          o.warnings = nullptr;
          o.block_stats = true;
          const results::RunResult res = replay(skeleton, o);
          nlohmann::json j;
          j["run"] = run_result_to_json(res);
          auto& bs = j["block_stats"] = nlohmann::json::array();
          for (const auto& b : res.block_stats)
            bs.push_back({b.id, b.compute_max_s, b.compute_mean_s, b.compute_argmax, b.wait_max_s, b.wait_mean_s, b.wait_argmax,
                          b.wait_min_s, b.wait_argmin, b.late_sender_s, b.late_receiver_s, b.collective_wait_s, b.cause_rank,
                          b.cause_wait_s, b.executions_max, b.executions_mean, b.executions_argmax, b.ranks_executing});
          auto& ps = j["phase_stats"] = nlohmann::json::array();
          for (const auto& p : res.phase_stats)
            ps.push_back({p.phase, p.time_max_s, p.time_mean_s, p.utilisation_mean, p.utilisation_min, p.utilisation_argmin,
                          p.compute_max_s, p.compute_mean_s, p.compute_argmax});
          return j.dump();
        },
        [](const std::exception& e) { return dynamic_cast<const DeadlockError*>(&e) ? 3 : 1; }, "the simulation");
  } catch (const std::runtime_error& e) {
    throw ReplayError(e.what());
  }
  if (r.code == 3) throw DeadlockError(r.output);
  if (r.code != 0) throw ReplayError(r.output);
  const nlohmann::json j = nlohmann::json::parse(r.output);
  results::RunResult res = run_result_from_json(j.at("run").get<std::string>());
  for (const auto& b : j.at("block_stats")) {
    BlockStats s;
    s.id = b[0].get<std::string>();
    s.compute_max_s = b[1].get<double>();
    s.compute_mean_s = b[2].get<double>();
    s.compute_argmax = b[3].get<int>();
    s.wait_max_s = b[4].get<double>();
    s.wait_mean_s = b[5].get<double>();
    s.wait_argmax = b[6].get<int>();
    s.wait_min_s = b[7].get<double>();
    s.wait_argmin = b[8].get<int>();
    s.late_sender_s = b[9].get<double>();
    s.late_receiver_s = b[10].get<double>();
    s.collective_wait_s = b[11].get<double>();
    s.cause_rank = b[12].get<int>();
    s.cause_wait_s = b[13].get<double>();
    s.executions_max = b[14].get<double>();
    s.executions_mean = b[15].get<double>();
    s.executions_argmax = b[16].get<int>();
    s.ranks_executing = b[17].get<int>();
    res.block_stats.push_back(s);
  }
  for (const auto& p : j.at("phase_stats"))
    res.phase_stats.push_back(results::PhaseStats{p[0].get<std::string>(), p[1].get<double>(), p[2].get<double>(), p[3].get<double>(),
                                                  p[4].get<double>(), p[5].get<int>(), p[6].get<double>(), p[7].get<double>(),
                                                  p[8].get<int>()});
  return res;
}

results::Diagnosis diagnose(const Skeleton& sk, const DiagnoseOptions& o) {
  results::Diagnosis d;
  d.threshold_pct = o.threshold_pct;
  const int P = o.run.P;
  // the baseline's timeline gives seed 002's logical phases (separation points); kept to moderate P (memory)
  ReplayOptions base_run = o.run;
  const bool timeline = P <= 256;
  if (timeline)
    base_run.timeline_csv = (std::filesystem::temp_directory_path() / ("mksim-diagnose-timeline-" + std::to_string(getpid()) + ".csv")).string();
  const results::RunResult base = replay_stats_in_child(sk, base_run);
  const double T0 = base.predicted_time_s;
  if (timeline) {
    try {
      d.logical_phases = logical_phases_from_timeline(base_run.timeline_csv, P, T0);
      d.notes.push_back("logical phases: separation points of the baseline replay's timeline (no rank in an MPI operation; "
                        "messages in flight between two computing ranks are not in the timeline)");
    } catch (const std::exception& e) {
      d.notes.push_back(std::string("logical phases not computed: ") + e.what());
    }
    std::error_code ec;
    std::filesystem::remove(base_run.timeline_csv, ec);
  } else {
    d.notes.push_back("logical phases not computed above P = 256 (the replay timeline would be too large)");
  }
  d.baseline_time_s = T0;
  d.attributes = base.attributes;
  d.phases = base.phase_stats;
  d.blocks = base.block_stats;
  const TreeInfo tree = tree_of(sk);
  const std::size_t B = sk.blocks.size();
  const auto& st = base.block_stats;
  const auto& tot = base.blocks;
  auto pct = [&](double s) { return T0 > 0 ? 100.0 * s / T0 : 0.0; };
  WhatIfRunner whatif(sk, o);
  const std::map<std::string, double>& params = o.run.params;

  ModelFacts mf;
  bool have_model = false;
  if (o.use_model) {
    try {
      mf = model_facts(sk, o, d.notes);
      have_model = true;
    } catch (const std::exception& e) {
      d.notes.push_back(std::string("analytic model unavailable (pipeline-grain and scaling detectors skipped): ") + e.what());
    }
  }
  // Per-message fixed cost (seed 002's cost of a message, m): overheads plus the latency of a neighbour route.
  auto attr = [&](const std::string& k) {
    for (const auto& [a, v] : base.attributes)
      if (a == k) return std::strtod(v.c_str(), nullptr);
    return 0.0;
  };
  const double msg_cost_s = attr("machine.send_overhead_s") + attr("machine.recv_overhead_s") +
                            attr("machine.per_message_overhead_s") + (have_model ? mf.latency_s : 0.0);
  const double beta_s_per_byte = have_model && mf.bandwidth_Bps > 0 ? 1.0 / mf.bandwidth_Bps : 0.0;
  if (!have_model) d.notes.push_back("granularity detector skipped: it needs the platform's latency and bandwidth (the model step)");

  // The fix of each compute block's imbalance, shared by the imbalance and wait-state detectors: balance to
  // the mean per execution when every rank runs the block as often, else remove the excess (upper bound).
  struct Fix {
    double gain_s = -1;
    std::string how, why_not;
  };
  std::map<int, Fix> compute_fix;
  auto fix_compute = [&](int b) -> Fix& {
    auto it = compute_fix.find(b);
    if (it != compute_fix.end()) return it->second;
    Fix f;
    const BlockStats& s = st[b];
    const bool uniform = s.ranks_executing == P && s.executions_max <= s.executions_mean * (1 + 1e-12);
    std::vector<WhatIf> w;
    if (uniform && s.executions_mean > 0) {
      w.push_back({WhatIf::Kind::SET_COMPUTE_S, sk.blocks[b].id, s.compute_mean_s / s.executions_mean});
      f.how = "simulated (every execution of " + sk.blocks[b].id + " at the mean over ranks, " +
              num(s.compute_mean_s / s.executions_mean) + " s)";
    } else {
      w.push_back({WhatIf::Kind::SCALE_COMPUTE, sk.blocks[b].id, 0.0});
      f.how = "simulated (" + sk.blocks[b].id + " removed from the ranks that run it: upper bound of moving it off the critical path)";
    }
    const double t = whatif.time(w, params, &f.why_not);
    if (t >= 0) f.gain_s = T0 - t;
    return compute_fix[b] = f;
  };

  // 1. Balance analysis (seed 002): compute imbalance per block, max - mean over ranks.
  for (std::size_t b = 0; b < B; ++b) {
    if (sk.blocks[b].op != "compute") continue;
    const BlockStats& s = st[b];
    const double excess = s.compute_max_s - s.compute_mean_s;
    if (pct(excess) < o.screen_pct) continue;
    Problem p;
    // seed 002's two severities: imbalance in the number of events, (max N^p - N/P) G, and in granularity
    const double G = s.executions_mean > 0 ? s.compute_mean_s / s.executions_mean : 0;
    const double event_sev = (s.executions_max - s.executions_mean) * G;
    const bool by_events = s.executions_max > s.executions_mean * (1 + 1e-9) && event_sev >= 0.5 * excess;
    p.kind = by_events ? "event_imbalance" : "imbalance";
    p.block = sk.blocks[b].id;
    p.phase = sk.blocks[b].phase;
    p.ranks = "rank " + std::to_string(s.compute_argmax) + " (max " + num(s.compute_max_s) + " s) vs mean " + num(s.compute_mean_s) +
              " s over " + std::to_string(P) + " ranks";
    if (by_events)
      p.ranks += "; rank " + std::to_string(s.executions_argmax) + " runs it " + num(s.executions_max) + " times, mean " +
                 num(s.executions_mean);
    p.action = s.ranks_executing == P ? "balance the work of " + p.block + " over the ranks (each rank to the mean)"
                                      : "spread the work of " + p.block + " (run by " + std::to_string(s.ranks_executing) +
                                            " of " + std::to_string(P) + " ranks) over all ranks, or overlap it";
    p.formula_gain_s = excess;
    p.detail = "compute max - mean = " + num(excess) + " s (seed 002 balance analysis); events: max N^p - N/P = " +
               num(s.executions_max - s.executions_mean) + ", G = " + num(G) + " s, (max N^p - N/P) G = " + num(event_sev) + " s";
    const Fix& f = fix_compute(static_cast<int>(b));
    if (f.gain_s >= 0) {
      p.gain_s = f.gain_s;
      p.method = f.how;
    } else {
      p.gain_s = excess;
      p.method = "formula (seed 002 balance analysis: max - mean)" + (f.why_not.empty() ? "" : "; what-if failed: " + f.why_not);
    }
    d.problems.push_back(p);
  }

  // 1b. Compute imbalance per phase label (max - mean of the ranks' compute in the phase), reported when it is
  // more than its largest block's: imbalance spread over several blocks that no single block shows.
  for (const results::PhaseStats& ph : base.phase_stats) {
    const double excess = ph.compute_max_s - ph.compute_mean_s;
    if (pct(excess) < o.screen_pct) continue;
    double largest = 0;
    for (std::size_t b = 0; b < B; ++b)
      if (sk.blocks[b].op == "compute" && sk.blocks[b].phase == ph.phase)
        largest = std::max(largest, st[b].compute_max_s - st[b].compute_mean_s);
    if (excess <= 1.2 * largest) continue;
    Problem p;
    p.kind = "imbalance";
    p.phase = ph.phase;
    p.ranks = "rank " + std::to_string(ph.compute_argmax) + " (max " + num(ph.compute_max_s) + " s) vs mean " + num(ph.compute_mean_s) + " s";
    p.action = "balance the compute of phase " + ph.phase + " over the ranks (spread over several blocks)";
    p.gain_s = p.formula_gain_s = excess;
    p.method = "formula (seed 002 balance analysis: max - mean of the phase's compute)";
    p.detail = "largest single block excess " + num(largest) + " s";
    d.problems.push_back(p);
  }

  // 2. Wait states: late sender (receives), late receiver (rendezvous sends), waiting in collectives; the rank
  // waited for (collectives: the last to arrive) and, when that rank has excess compute, the block to fix.
  for (std::size_t b = 0; b < B; ++b) {
    if (!is_mpi(sk.blocks[b].op)) continue;
    const BlockStats& s = st[b];
    if (pct(s.wait_max_s) < o.screen_pct) continue;
    Problem p;
    const double ls = s.late_sender_s, lr = s.late_receiver_s, cw = s.collective_wait_s;
    p.kind = cw >= ls && cw >= lr ? "collective_wait" : ls >= lr ? "late_sender" : "late_receiver";
    p.block = sk.blocks[b].id;
    p.phase = sk.blocks[b].phase;
    const int cause = p.kind == "collective_wait" ? s.wait_argmin : s.cause_rank;
    p.ranks = "rank " + std::to_string(s.wait_argmax) + " waits most (" + num(s.wait_max_s) + " s, mean " + num(s.wait_mean_s) +
              " s); caused by rank " + std::to_string(cause);
    p.detail = "waits summed over ranks: late sender " + num(ls) + " s, late receiver " + num(lr) + " s, collective " + num(cw) + " s";
    p.formula_gain_s = s.wait_max_s;
    // the causing rank's most excessive compute block
    int culprit = -1;
    double worst = 0;
    for (std::size_t c = 0; c < B; ++c)
      if (sk.blocks[c].op == "compute" && st[c].compute_argmax == cause) {
        const double ex = st[c].compute_max_s - st[c].compute_mean_s;
        if (ex > worst && pct(ex) >= o.screen_pct) worst = ex, culprit = static_cast<int>(c);
      }
    if (culprit >= 0) {
      const Fix& f = fix_compute(culprit);
      p.action = "remove the excess compute of rank " + std::to_string(cause) + " in " + sk.blocks[culprit].id +
                 " before it communicates (balance it or move it after the exchange)";
      p.gain_s = std::max(0.0, f.gain_s);
      p.method = f.gain_s >= 0 ? f.how : "not simulated: " + f.why_not;
    } else {
      p.action = "no compute excess on rank " + std::to_string(cause) +
                 ": the wait is a dependence (pipeline fill, chain of waits); see the other problems";
      p.gain_s = 0;
      p.method = "not simulated (no fix the engine can apply)";
    }
    d.problems.push_back(p);
  }

  // 3. Granularity (seed 002 utility analysis): loops whose messages cost more in fixed per-message cost than
  // in data; aggregate k iterations into one (k times larger messages and compute), the best k simulated.
  for (std::size_t b = 0; b < B && have_model; ++b) {
    if (!tree.loop[b] || tot[b].executions == 0 || tree.children[b].empty()) continue;
    std::vector<int> body;
    subtree(tree, static_cast<int>(b), true, body);
    double sends = 0, bytes = 0;
    for (int c : body)
      if (is_send(sk.blocks[c].op)) sends += static_cast<double>(tot[c].executions), bytes += tot[c].bytes;
    if (sends == 0) continue;
    const double m = bytes / sends;
    const double iters = static_cast<double>(tot[tree.children[b].front()].executions) / static_cast<double>(tot[b].executions);
    const long long n = std::llround(iters);
    // "tiny": the data part of a message is under a quarter of its fixed cost
    if (n < 2 || !(m * beta_s_per_byte < 0.25 * msg_cost_s)) continue;
    const double sends_per_rank = sends / P;
    const double formula_full = msg_cost_s * sends_per_rank;  // all fixed costs, per rank
    if (pct(formula_full) < o.screen_pct) continue;
    std::vector<long long> ks;
    for (long long k = 2; k < n; k *= 2)
      if (n % k == 0) ks.push_back(k);
    ks.push_back(n);
    if (ks.size() > 4) ks.erase(ks.begin(), ks.end() - 4);  // the largest factors: where the fixed cost goes
    double best_t = -1;
    long long best_k = 1;
    std::string why;
    for (long long k : ks) {
      const double t = whatif.time({{WhatIf::Kind::AGGREGATE_LOOP, sk.blocks[b].id, static_cast<double>(k)}}, params, &why);
      if (t >= 0 && (best_t < 0 || t < best_t * (1 - 1e-9))) best_t = t, best_k = k;
    }
    Problem p;
    p.kind = "granularity";
    p.block = sk.blocks[b].id;
    p.phase = sk.blocks[b].phase;
    p.ranks = "all ranks running " + p.block + " (" + num(sends_per_rank) + " messages per rank)";
    p.detail = "mean message " + num(m) + " B: data " + num(m * beta_s_per_byte) + " s vs fixed cost " + num(msg_cost_s) +
               " s per message; " + std::to_string(n) + " iterations";
    p.formula_gain_s = msg_cost_s * sends_per_rank * (1.0 - 1.0 / static_cast<double>(best_k));
    if (best_t >= 0) {
      p.gain_s = std::max(0.0, T0 - best_t);
      p.action = "aggregate " + std::to_string(best_k) + " iterations of " + p.block + " into one (messages " +
                 std::to_string(best_k) + "x larger), if the iterations are independent";
      p.method = "simulated (loop aggregated by k=" + std::to_string(best_k) + ", best of k in";
      for (long long k : ks) p.method += " " + std::to_string(k);
      p.method += ")";
    } else {
      p.gain_s = p.formula_gain_s;
      p.action = "aggregate the messages of " + p.block;
      p.method = "formula (seed 002 utility analysis: O N (1 - 1/k) per rank); what-if failed: " + why;
    }
    d.problems.push_back(p);
  }

  if (have_model) {
    // 4. Pipelines (model terms of kind "pipeline") whose grain parameter can be improved: the model's optimum
    // (seed 000 s.5.4) and seed 002's split k = sqrt((beta s + g) / m), both replayed; the better one is the gain.
    for (const GrainOptimum& g : mf.grains) {
      std::string phases;
      for (const auto& ph : g.phases) phases += (phases.empty() ? "" : ", ") + ph;
      // seed 002 s. pipelining: s, g of one message of the pipeline loops at the current grain
      double s_bytes = 0, g_s = 0, n_msg = 0, n_cmp = 0;
      for (std::size_t b = 0; b < B; ++b) {
        if (!tree.loop[b] || std::find(g.phases.begin(), g.phases.end(), sk.blocks[b].phase) == g.phases.end()) continue;
        std::vector<int> body;
        subtree(tree, static_cast<int>(b), true, body);
        for (int c : body) {
          if (is_send(sk.blocks[c].op)) s_bytes += tot[c].bytes, n_msg += static_cast<double>(tot[c].executions);
          if (sk.blocks[c].op == "compute") g_s += st[c].compute_mean_s * P, n_cmp += static_cast<double>(tot[c].executions);
        }
      }
      const double s_mean = n_msg > 0 ? s_bytes / n_msg : 0, g_mean = n_cmp > 0 ? g_s / n_cmp : 0;
      const double k_split = msg_cost_s > 0 ? std::sqrt((beta_s_per_byte * s_mean + g_mean) / msg_cost_s) : 1;
      // k > 1: split each message in k; k < 1: merge 1/k messages into one
      const double formula_grain = k_split > 0 ? std::max(1.0, std::round(g.current / k_split)) : g.current;
      std::vector<double> tries = {g.best};
      if (formula_grain != g.best) tries.push_back(formula_grain);
      double best_t = -1, best_v = g.current;
      std::string why;
      for (double v : tries) {
        if (v == g.current) continue;
        std::map<std::string, double> at = params;
        at[g.param] = v;
        const double t = whatif.time({}, at, &why);
        if (t >= 0 && (best_t < 0 || t < best_t)) best_t = t, best_v = v;
      }
      Problem p;
      p.kind = "pipeline_grain";
      p.phase = phases;
      p.block = "";
      p.ranks = "all (pipeline of depth P-1 = " + std::to_string(P - 1) + ")";
      const double k_used = k_split > 0 ? k_split : 1.0;
      p.formula_gain_s = std::max(0.0, (P - 1) * ((g_mean + beta_s_per_byte * s_mean) * (1 - 1 / k_used) - (k_used - 1) * msg_cost_s));
      p.detail = g.param + " = " + num(g.current) + ": model optimum " + num(g.best) + " (model T " + num(g.model_T_current) +
                 " -> " + num(g.model_T_best) + " s); seed 002 split k = sqrt((beta s + g)/m) = " + num(k_split) + " (s = " +
                 num(s_mean) + " B, g = " + num(g_mean) + " s, m = " + num(msg_cost_s) + " s) -> " + g.param + " = " + num(formula_grain);
      if (best_t >= 0 && best_t < T0) {
        p.gain_s = T0 - best_t;
        p.action = "set " + g.param + " = " + num(best_v, "%.10g") + " (now " + num(g.current, "%.10g") + ")";
        p.method = "simulated (replay at " + g.param + " = " + num(best_v, "%.10g") + ")";
      } else {
        p.gain_s = 0;
        p.action = "keep " + g.param + " = " + num(g.current, "%.10g") + " (no better grain found by simulation)";
        p.method = best_t >= 0 ? "simulated (replay at the suggested grains: not faster)" : "not simulated: " + why;
      }
      d.problems.push_back(p);
    }
    // 5. Scaling (seed 000 s.4 terms): phases whose share of T grows from P to scale_factor * P.
    if (mf.P_large > 0 && mf.T_P > 0 && mf.T_large > 0) {
      for (const TermFigures& t : mf.terms) {
        const double share_P = t.at_P_s / mf.T_P, share_L = t.at_large_s / mf.T_large;
        if (!(share_L - share_P >= 0.05) || t.at_P_s <= 0) continue;
        Problem p;
        p.kind = "scaling";
        p.phase = t.phase;
        p.ranks = "model term " + t.kind;
        const double order = std::log(t.at_large_s / t.at_P_s) / std::log(static_cast<double>(mf.P_large) / P);
        p.detail = "share of T " + num(100 * share_P, "%.1f") + "% at P=" + std::to_string(P) + " -> " + num(100 * share_L, "%.1f") +
                   "% at P=" + std::to_string(mf.P_large) + "; term " + num(t.at_P_s) + " -> " + num(t.at_large_s) + " s (~P^" +
                   num(order, "%.2f") + "), T " + num(mf.T_P) + " -> " + num(mf.T_large) + " s";
        p.action = "no gain at this P; at larger P this " + t.kind + " phase limits scaling" +
                   (t.kind == "pipeline" ? " (fill grows with P: smaller grain or a two-way pipeline)"
                                         : t.kind == "collective" ? " (log P or worse: fewer or combined collectives)" : "");
        p.gain_s = 0;
        p.formula_gain_s = t.at_large_s - t.at_P_s;
        p.method = "model (seed 000 s.4 phase terms at P and P=" + std::to_string(mf.P_large) + ")";
        d.problems.push_back(p);
      }
    }
  }

  detail::rank_problems(d);
  d.notes.push_back("phase utilisation is per phase label of the skeleton (compute / time in the label's blocks); the logical "
                    "phases (seed 002) are listed separately");
  d.attributes.emplace_back("diagnose.threshold_pct", num(o.threshold_pct, "%.10g"));
  d.attributes.emplace_back("diagnose.what_if_replays", std::to_string(whatif.runs()));
  d.attributes.emplace_back("diagnose.scale_factor", std::to_string(o.scale_factor));
  std::sort(d.attributes.begin(), d.attributes.end());
  return d;
}

namespace detail {

int kind_order(const std::string& k) {
  static const char* order[] = {"imbalance", "event_imbalance", "late_sender", "late_receiver", "collective_wait",
                                "granularity", "pipeline_grain", "scaling"};
  for (int i = 0; i < 8; ++i)
    if (k == order[i]) return i;
  return 8;
}

void rank_problems(results::Diagnosis& d) {
  for (Problem& p : d.problems) p.gain_pct = d.baseline_time_s > 0 ? 100 * p.gain_s / d.baseline_time_s : 0;
  // ties (the same fix found twice): the cause before its symptoms
  std::stable_sort(d.problems.begin(), d.problems.end(), [](const Problem& a, const Problem& b) {
    if (a.gain_s != b.gain_s) return a.gain_s > b.gain_s;
    if (kind_order(a.kind) != kind_order(b.kind)) return kind_order(a.kind) < kind_order(b.kind);
    return a.block < b.block;
  });
}

void format_problems(std::ostream& out, const results::Diagnosis& d, const DiagnosisText& t) {
  int above = 0;
  for (const auto& p : d.problems)
    if (p.gain_pct >= d.threshold_pct) ++above;
  out << t.run_label << ": " << num(d.baseline_time_s, "%.6f") << " s; " << d.problems.size() << " finding(s), " << above
      << " above the " << num(d.threshold_pct, "%g") << "% threshold\n";
  char line[1024];
  std::snprintf(line, sizeof line, "rank  kind             %-*sgain s      gain %%  %smethod\n", t.where_width + 1, "where",
                t.measured ? "measured s  " : "");
  out << line;
  int i = 0;
  for (const auto& p : d.problems) {
    std::string where = p.block;
    if (!t.measured) where = p.block.empty() ? "phase " + p.phase : p.block + (p.phase.empty() ? "" : " [" + p.phase + "]");
    std::string measured;
    if (t.measured) measured = num(p.measured_s, "%10.6f") + "  ";
    std::snprintf(line, sizeof line, "%4d  %-16s %-*s %10.6f  %6.2f  %s%s\n", ++i, p.kind.c_str(), t.where_width, where.c_str(), p.gain_s,
                  p.gain_pct, measured.c_str(), p.method.c_str());
    out << line << "      ranks: " << p.ranks << "\n      do: " << p.action << "\n      why: " << p.detail;
    if (p.formula_gain_s >= 0) out << "; formula gain " << num(p.formula_gain_s, "%.6f") << " s";
    out << "\n";
    if (t.measured && !p.chain.empty()) out << "      chain: " << p.chain << "\n";
  }
}

void format_logical_phases(std::ostream& out, const results::Diagnosis& d, const DiagnosisText& t) {
  out << "logical phases (separation points: " << t.phases_heading << "):\n";
  out << "  phase  occurrences      time s   util mean   util min (rank)  " << t.sites_heading << "\n";
  for (const auto& lp : d.logical_phases) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-6s %11d  %10.6f   %9.3f   %7.3f (%d)    ", lp.name.c_str(), lp.occurrences, lp.time_s,
                  lp.utilisation_mean, lp.utilisation_min, lp.utilisation_argmin);
    out << line << lp.sites << "\n";
    if (!t.per_rank) continue;
    out << "         per rank:";
    for (double u : lp.utilisation) out << " " << num(u, "%.3f");
    out << "\n";
  }
}

}  // namespace detail

std::string format_diagnosis(const results::Diagnosis& d) {
  static const detail::DiagnosisText text{"baseline", 30, false, "no rank in an MPI operation", "blocks", false};
  std::ostringstream out;
  detail::format_problems(out, d, text);
  out << "phase utilisation (compute / time, per phase label):\n";
  out << "  phase                 time max s   time mean s   util mean   util min (rank)\n";
  for (const auto& ph : d.phases) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-20s %12.6f  %12.6f  %9.3f   %7.3f (%d)\n", (ph.phase.empty() ? "(none)" : ph.phase.c_str()),
                  ph.time_max_s, ph.time_mean_s, ph.utilisation_mean, ph.utilisation_min, ph.utilisation_argmin);
    out << line;
  }
  if (!d.logical_phases.empty()) detail::format_logical_phases(out, d, text);
  for (const auto& n : d.notes) out << "note: " << n << "\n";
  return out.str();
}

}  // namespace mksim::sim
