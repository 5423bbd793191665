// Driver of bench/model_queries.py: the model's answers (sim/model/model_queries.hpp) next to exhaustive replay.
//   grain PLATFORM SKELETON --P 4,8,... --range K=1:256 [--param N=1024 ...] [--replay] [--no-skew]
//     one CSV row per P: the model's best integer K and the replay's best K over every integer of the range
//   cross PLATFORM A.json B.json --range P=16:128 [--samples 16,32,...] [--P 64 --step 8] [--param N=256 ...]
//         [--replay] [--no-skew]
//     the model's range comparison (seed 001 fig. 2), and with --replay the same from replaying every point
//     both skeletons accept (every integer P in the range; or lo, lo+step, ... for a parameter at fixed P)
//   curves PLATFORM SKELETON --P 1,2,4,... --range N=LO:HI --T0 S --p P0 --value N0 [--param ...] [--no-skew]
//     the model's speedup, constant-time (T = T0) and isospeed (from p = P0, N = N0) curves, one row per P
// Replays run first, each in a forked child; the model's platform is loaded after them (one engine per process).
#include "sim/engine/isolate.hpp"
#include "sim/engine/machine_model.hpp"
#include "sim/model/model_queries.hpp"
#include "skeletons/error.hpp"
#include "skeletons/skeleton_io.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace ms = mksim::sim;
namespace sk = mksim::skeletons;

/** @brief The command line after the subcommand's positional arguments. */
struct Args {
  std::vector<std::string> positional;
  std::vector<int> Ps;
  std::vector<double> samples;
  std::string range_param;
  double lo = 0;
  double hi = 0;
  double step = 1;
  std::map<std::string, double> params;
  bool replay = false;
  bool skew = true;
  double T0 = 0;
  int p0 = 0;
  double value0 = 0;
};

std::vector<double> split_numbers(const std::string& s) {
  std::vector<double> v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) v.push_back(std::stod(item));
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(k + " needs a value");
      return argv[++i];
    };
    if (k == "--P") {
      for (double p : split_numbers(value())) a.Ps.push_back(static_cast<int>(p));
    } else if (k == "--samples") {
      a.samples = split_numbers(value());
    } else if (k == "--range") {
      const std::string v = value();
      const auto eq = v.find('='), colon = v.find(':');
      if (eq == std::string::npos || colon == std::string::npos) throw std::invalid_argument("--range NAME=LO:HI");
      a.range_param = v.substr(0, eq);
      a.lo = std::stod(v.substr(eq + 1, colon - eq - 1));
      a.hi = std::stod(v.substr(colon + 1));
    } else if (k == "--step") {
      a.step = std::stod(value());
    } else if (k == "--param") {
      const std::string v = value();
      const auto eq = v.find('=');
      if (eq == std::string::npos) throw std::invalid_argument("--param NAME=VALUE");
      a.params[v.substr(0, eq)] = std::stod(v.substr(eq + 1));
    } else if (k == "--T0") {
      a.T0 = std::stod(value());
    } else if (k == "--p") {
      a.p0 = std::stoi(value());
    } else if (k == "--value") {
      a.value0 = std::stod(value());
    } else if (k == "--replay") {
      a.replay = true;
    } else if (k == "--no-skew") {
      a.skew = false;
    } else if (!k.empty() && k[0] == '-') {
      throw std::invalid_argument("unknown option " + k);
    } else {
      a.positional.push_back(k);
    }
  }
  return a;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double replay_time(const sk::Skeleton& s, const std::string& platform, int P, const std::map<std::string, double>& params) {
  ms::ReplayOptions ro;
  ro.platform_path = platform;
  ro.P = P;
  ro.params = params;
  return ms::replay_in_child(s, ro).predicted_time_s;
}

bool accepts(const sk::Skeleton& s, int P, const std::map<std::string, double>& params) {
  try {
    sk::check_for_run(s, sk::bind_parameters(s, P, params), P);
    return true;
  } catch (const sk::SkeletonError&) {
    return false;
  }
}

int cmd_grain(const Args& a) {
  if (a.positional.size() != 2 || a.range_param.empty() || a.Ps.empty())
    throw std::invalid_argument("grain PLATFORM SKELETON --P LIST --range K=LO:HI");
  const std::string& platform = a.positional[0];
  const sk::Skeleton s = sk::load_skeleton(a.positional[1]);
  const int first = static_cast<int>(std::ceil(a.lo)), last = static_cast<int>(std::floor(a.hi));
  // Replays first (children), then the model's engine in this process.
  std::map<int, std::map<int, double>> replayed;
  std::map<int, double> replay_wall;
  if (a.replay)
    for (int P : a.Ps) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = first; k <= last; ++k) {
        std::map<std::string, double> p = a.params;
        p[a.range_param] = k;
        replayed[P][k] = replay_time(s, platform, P, p);
      }
      replay_wall[P] = seconds_since(t0);
    }
  const ms::MachineModel machine = ms::load_machine_model(platform, *std::max_element(a.Ps.begin(), a.Ps.end()));
  std::printf("P,%s_model,T_model_s,roots,%s_replay,T_replay_best_s,T_replay_at_model_s,penalty_pct,model_s,replays,replay_s\n",
              a.range_param.c_str(), a.range_param.c_str());
  for (int P : a.Ps) {
    ms::QueryOptions qo;
    qo.params = a.params;
    qo.skew = a.skew;
    const auto t0 = std::chrono::steady_clock::now();
    const ms::ParamOptimum o = ms::optimize_param(s, machine, P, qo, a.range_param, a.lo, a.hi);
    const double model_s = seconds_since(t0);
    std::string roots;
    for (const auto& r : o.roots) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%.4g%s", roots.empty() ? "" : " ", r.value, r.minimum ? "" : "(max)");
      roots += buf;
    }
    std::printf("%d,%g,%.9g,%s,", P, o.best, o.T_s, roots.c_str());
    if (a.replay) {
      const auto& rk = replayed[P];
      const auto best = std::min_element(rk.begin(), rk.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
      const double at_model = rk.at(static_cast<int>(o.best));
      std::printf("%d,%.9g,%.9g,%.4f,%.4f,%zu,%.2f\n", best->first, best->second, at_model, 100 * (at_model - best->second) / best->second,
                  model_s, rk.size(), replay_wall[P]);
    } else {
      std::printf(",,,,%.4f,0,0\n", model_s);
    }
  }
  return 0;
}

std::string sign_label(double d, const std::string& a, const std::string& b) { return d < 0 ? a : (d > 0 ? b : "tie"); }

int cmd_cross(const Args& a) {
  if (a.positional.size() != 3 || a.range_param.empty()) throw std::invalid_argument("cross PLATFORM A.json B.json --range PARAM=LO:HI");
  const std::string& platform = a.positional[0];
  const sk::Skeleton sa = sk::load_skeleton(a.positional[1]), sb = sk::load_skeleton(a.positional[2]);
  const bool over_P = a.range_param == "P";
  if (!over_P && a.Ps.size() != 1) throw std::invalid_argument("scanning a parameter needs --P (one value)");
  const int fixed_P = over_P ? 0 : a.Ps.front();
  // Exhaustive replay: every point of the range both skeletons accept.
  std::vector<std::pair<double, std::pair<double, double>>> replayed;
  double replay_s = 0;
  if (a.replay) {
    const auto t0 = std::chrono::steady_clock::now();
    for (double x = a.lo; x <= a.hi + 1e-9; x += over_P ? 1.0 : a.step) {
      std::map<std::string, double> p = a.params;
      int P = fixed_P;
      if (over_P) P = static_cast<int>(x);
      else p[a.range_param] = x;
      if (!accepts(sa, P, p) || !accepts(sb, P, p)) continue;
      replayed.push_back({x, {replay_time(sa, platform, P, p), replay_time(sb, platform, P, p)}});
    }
    replay_s = seconds_since(t0);
  }
  const ms::MachineModel machine = ms::load_machine_model(platform, over_P ? static_cast<int>(a.hi) : fixed_P);
  ms::Contender ca{sa.name, &sa, &machine, a.params}, cb{sb.name, &sb, &machine, a.params};
  ms::RangeScan scan;
  scan.param = a.range_param;
  scan.lo = a.lo;
  scan.hi = a.hi;
  scan.samples = a.samples;
  scan.P = fixed_P;
  scan.skew = a.skew;
  const auto t0 = std::chrono::steady_clock::now();
  const ms::RangeComparison rc = ms::compare_range(ca, cb, scan);
  const double model_s = seconds_since(t0);
  std::printf("kind,x,T_%s_s,T_%s_s,faster\n", sa.name.c_str(), sb.name.c_str());
  for (const auto& s : rc.samples)
    std::printf("model,%g,%.9g,%.9g,%s\n", s.x, s.T_a_s, s.T_b_s, sign_label(s.T_a_s - s.T_b_s, sa.name, sb.name).c_str());
  for (const auto& [x, t] : replayed)
    std::printf("replay,%g,%.9g,%.9g,%s\n", x, t.first, t.second, sign_label(t.first - t.second, sa.name, sb.name).c_str());
  for (const auto& c : rc.crossings)
    std::printf("model_crossing,%.6g,%.6g,%.6g,%s -> %s\n", c.below, c.above, c.at, c.faster_below.c_str(), c.faster_above.c_str());
  double prev_x = 0, prev_d = 0;
  bool have = false;
  for (const auto& [x, t] : replayed) {
    const double d = t.first - t.second;
    if (d == 0) continue;
    if (have && (d < 0) != (prev_d < 0))
      std::printf("replay_crossing,%g,%g,%g,%s -> %s\n", prev_x, x, x, sign_label(prev_d, sa.name, sb.name).c_str(),
                  sign_label(d, sa.name, sb.name).c_str());
    prev_x = x;
    prev_d = d;
    have = true;
  }
  std::printf("timing,model_s,%.4f,replay_s,%.2f,replays,%zu\n", model_s, replay_s, 2 * replayed.size());
  return 0;
}

int cmd_curves(const Args& a) {
  if (a.positional.size() != 2 || a.range_param.empty() || a.Ps.empty() || a.T0 <= 0 || a.p0 < 1)
    throw std::invalid_argument("curves PLATFORM SKELETON --P LIST --range N=LO:HI --T0 S --p P0 --value N0");
  const sk::Skeleton s = sk::load_skeleton(a.positional[1]);
  const ms::MachineModel machine = ms::load_machine_model(a.positional[0], std::max(*std::max_element(a.Ps.begin(), a.Ps.end()), a.p0));
  ms::QueryOptions qo;
  qo.params = a.params;
  qo.skew = a.skew;
  const auto t0 = std::chrono::steady_clock::now();
  const auto speedup = ms::speedup_curve(s, machine, a.Ps, qo);
  const auto ct = ms::constant_time_curve(s, machine, a.Ps, qo, a.range_param, a.T0, a.lo, a.hi);
  const ms::IsospeedTable iso = ms::isospeed_scalability(s, machine, qo, a.range_param, a.p0, a.value0, a.Ps, a.lo, a.hi);
  const double model_s = seconds_since(t0);
  std::printf("# isospeed from p=%d %s=%g: W=%.6g flop, T=%.6g s, average unit speed %.6g flop/s\n", iso.p, a.range_param.c_str(),
              iso.value, iso.W, iso.T_s, iso.speed_flops);
  std::printf("P,T_s,speedup,efficiency,%s_constant_time,%s_isospeed,psi\n", a.range_param.c_str(), a.range_param.c_str());
  for (std::size_t i = 0; i < a.Ps.size(); ++i) {
    std::printf("%d,%.9g,%.6g,%.6g,", speedup[i].P, speedup[i].T_s, speedup[i].speedup, speedup[i].efficiency);
    if (ct[i].found) std::printf("%.6g,", ct[i].value);
    else std::printf("none,");
    if (iso.rows[i].found) std::printf("%.6g,%.6g\n", iso.rows[i].value, iso.rows[i].psi);
    else std::printf("none,\n");
  }
  for (const auto& c : ct)
    if (!c.found) std::printf("# constant time: %s\n", c.note.c_str());
  for (const auto& r : iso.rows)
    if (!r.found) std::printf("# isospeed: %s\n", r.note.c_str());
  std::printf("# model time for all three curves: %.4f s\n", model_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) throw std::invalid_argument("usage: mksim_bench_model_queries grain|cross|curves ...");
    const std::string cmd = argv[1];
    const Args a = parse(argc, argv);
    if (cmd == "grain") return cmd_grain(a);
    if (cmd == "cross") return cmd_cross(a);
    if (cmd == "curves") return cmd_curves(a);
    throw std::invalid_argument("unknown command " + cmd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mksim_bench_model_queries: %s\n", e.what());
    return 1;
  }
}
