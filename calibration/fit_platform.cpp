// mkcalib fit / validate. The model is positively homogeneous and piecewise linear in the figures taken as
// times (1/F, latency, 1/bandwidth, s, r, o, alpha): every term is a count times one of them, or a max of such
// sums (seed 000 s.4.1). So within a piece T(theta) = J(theta) * theta, and fitting is a linear least-squares
// problem (Eigen, relative residuals) solved again at each new piece (Gauss-Newton on a piecewise linear
// function, with step halving) until the pieces stop changing.
#include "calibration/fit_platform.hpp"

#include "calibration/bench.hpp"
#include "sim/engine/isolate.hpp"
#include "sim/engine/machine_model.hpp"
#include "sim/model/model.hpp"
#include "sim/engine/replay.hpp"
#include "skeletons/error.hpp"

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <unistd.h>

namespace mksim::calibration {
namespace {

namespace pf = mksim::platforms;
using Theta = std::array<double, FIT_PARAMS>;

constexpr double CONDITION_LIMIT = 1e7;  // scaled Jacobian: beyond this a direction is not determined
constexpr int MAX_ITERATIONS = 60;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string pct(double rel) { return fmt("%+.2f%%", 100 * rel); }

// ---- base platform ---------------------------------------------------------------------------------------

double parse_si(const std::string& text, const std::string& unit, const std::string& file, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  std::string rest(end);
  if (end == text.c_str() || rest.size() < unit.size() || rest.substr(rest.size() - unit.size()) != unit)
    throw FitInputError(file + ": " + what + " \"" + text + "\" is not a number in " + unit);
  rest = rest.substr(0, rest.size() - unit.size());
  static const std::map<std::string, double> prefix = {{"", 1},     {"T", 1e12}, {"G", 1e9},  {"M", 1e6}, {"k", 1e3},
                                                       {"m", 1e-3}, {"u", 1e-6}, {"n", 1e-9}, {"p", 1e-12}};
  const auto it = prefix.find(rest);
  if (it == prefix.end()) throw FitInputError(file + ": " + what + " \"" + text + "\": unknown prefix \"" + rest + "\"");
  return v * it->second;
}

std::string attr(const std::string& tag, const std::string& name) {
  const std::regex re("\\b" + name + "=\"([^\"]*)\"");
  std::smatch m;
  return std::regex_search(tag, m, re) ? m[1].str() : "";
}

/** @brief Which generator figure the fit's latency and bandwidth act on. */
struct Mapping {
  bool mesh = false;
  bool latency_is_nic = false;    // mesh: the node's injection/ejection latency; else the per-hop link latency
  bool bandwidth_is_nic = false;  // mesh with a node limit below the link rate
};

Mapping mapping_of(const pf::PlatformSpec& spec, const pf::MachineFigures& f) {
  Mapping m;
  m.mesh = pf::topology_of(spec.machine) == pf::Topology::MESH2D;
  m.latency_is_nic = m.mesh;
  m.bandwidth_is_nic = m.mesh && f.nic_bandwidth_bytes_per_s.value > 0 &&
                       f.nic_bandwidth_bytes_per_s.value <= f.link_bandwidth_bytes_per_s.value;
  return m;
}

const char* figure_of(FitParam p, const Mapping& m) {
  switch (p) {
    case FitParam::SPEED: return "node_speed_flops";
    case FitParam::BANDWIDTH: return m.bandwidth_is_nic ? "nic_bandwidth_bytes_per_s" : "link_bandwidth_bytes_per_s";
    case FitParam::LATENCY: return m.latency_is_nic ? "nic_latency_s" : "link_latency_s";
    case FitParam::S: return "send_overhead_s";
    case FitParam::R: return "recv_overhead_s";
    case FitParam::O: return "per_message_overhead_s";
    case FitParam::ALPHA: return "skew_alpha_s";
    case FitParam::EAGER_PER_BYTE: return "eager_per_byte_s";
    case FitParam::HANDSHAKE: return "rendezvous_handshake_s";
  }
  return "?";
}

const char* unit_of(FitParam p) {
  return p == FitParam::SPEED ? "flop/s" : p == FitParam::BANDWIDTH ? "B/s" : p == FitParam::EAGER_PER_BYTE ? "s/B" : "s";
}

/** @brief theta (times) from figures, and back. */
Theta theta_of(const pf::MachineFigures& f, const Mapping& m) {
  Theta t{};
  t[0] = 1.0 / f.node_speed_flops.value;
  t[1] = 1.0 / (m.bandwidth_is_nic ? f.nic_bandwidth_bytes_per_s.value : f.link_bandwidth_bytes_per_s.value);
  t[2] = m.latency_is_nic ? f.nic_latency_s.value : f.link_latency_s.value;
  t[3] = f.send_overhead_s.value;
  t[4] = f.recv_overhead_s.value;
  t[5] = f.per_message_overhead_s.value;
  t[6] = f.skew_alpha_s.value;
  t[7] = f.eager_per_byte_s.value;
  t[8] = f.rendezvous_handshake_s.value;
  return t;
}

double value_of(FitParam p, double theta) {
  return p == FitParam::SPEED || p == FitParam::BANDWIDTH ? 1.0 / theta : theta;
}

std::optional<double>& override_of(pf::FigureOverrides& o, const std::string& figure) {
  if (figure == "node_speed_flops") return o.node_speed_flops;
  if (figure == "link_latency_s") return o.link_latency_s;
  if (figure == "link_bandwidth_bytes_per_s") return o.link_bandwidth_bytes_per_s;
  if (figure == "nic_latency_s") return o.nic_latency_s;
  if (figure == "nic_bandwidth_bytes_per_s") return o.nic_bandwidth_bytes_per_s;
  if (figure == "send_overhead_s") return o.send_overhead_s;
  if (figure == "recv_overhead_s") return o.recv_overhead_s;
  if (figure == "per_message_overhead_s") return o.per_message_overhead_s;
  if (figure == "eager_threshold_bytes") return o.eager_threshold_bytes;
  if (figure == "skew_alpha_s") return o.skew_alpha_s;
  if (figure == "end_to_end_latency_s") return o.end_to_end_latency_s;
  if (figure == "eager_per_byte_s") return o.eager_per_byte_s;
  if (figure == "rendezvous_handshake_s") return o.rendezvous_handshake_s;
  throw std::logic_error("no figure " + figure);
}

// ---- the model of one candidate ---------------------------------------------------------------------------

/** @brief The base machine (loaded once in the child) and the figures its routes were built from. */
struct BaseMachine {
  sim::MachineModel model;
  pf::MachineFigures figures;
  Mapping map;
};

sim::MachineModel candidate(const BaseMachine& b, const Theta& t) {
  sim::MachineModel m = b.model;
  const pf::MachineFigures& f = b.figures;
  const double speed0 = f.node_speed_flops.value, speed = 1.0 / t[0];
  m.send_overhead_s = t[3];
  m.recv_overhead_s = t[4];
  m.per_message_overhead_s = t[5];
  m.skew_alpha_s = t[6];
  m.eager_per_byte_s = t[7];
  m.rendezvous_handshake_s = t[8];
  const auto base_speed = b.model.speed_flops;
  m.speed_flops = [base_speed, speed0, speed](int rank) { return (base_speed ? base_speed(rank) : speed0) * speed / speed0; };
  const double link_lat0 = f.link_latency_s.value, nic_lat0 = b.map.mesh ? f.nic_latency_s.value : 0.0;
  const double link_lat = b.map.latency_is_nic ? link_lat0 : t[2];
  const double nic_lat = b.map.latency_is_nic ? t[2] : nic_lat0;
  const double link_bw = b.map.bandwidth_is_nic ? f.link_bandwidth_bytes_per_s.value : 1.0 / t[1];
  const double nic_bw = b.map.bandwidth_is_nic ? 1.0 / t[1] : f.nic_bandwidth_bytes_per_s.value;
  const bool mesh = b.map.mesh;
  const auto base_route = b.model.route;
  m.route = [=](int src, int dst) {
    sim::RouteFigures r = base_route(src, dst);
    if (src == dst || r.latency_s == 0) return r;
    // a route of the generator's platforms: hops * link latency (+ injection and ejection on a mesh)
    const double hops = link_lat0 > 0 ? std::max(0.0, (r.latency_s - 2 * nic_lat0) / link_lat0) : 0.0;
    r.latency_s = hops * link_lat + (mesh ? 2 * nic_lat : 0.0);
    r.bandwidth_Bps = mesh && nic_bw > 0 ? std::min(link_bw, nic_bw) : link_bw;
    return r;
  };
  return m;
}

double model_time(const skeletons::Skeleton& sk, const sim::MachineModel& m, const MeasuredRun& run) {
  sim::ModelOptions o;
  o.P = run.P;
  o.params = run.params;
  o.skew = true;
  return sim::derive_model(sk, m, o).value_s;
}

// ---- the fit itself (runs in the child) ------------------------------------------------------------------

struct FitState {
  Theta theta{};
  std::array<std::string, FIT_PARAMS> status, why;  // "fitted" / "database" / "fixed" and the reason
  std::vector<double> model_s;
  int iterations = 0;
  double condition = 0;
  std::vector<std::string> notes;
};

std::vector<double> eval_all(const BaseMachine& b, const skeletons::Skeleton& sk, const std::vector<MeasuredRun>& runs,
                             const Theta& t) {
  const sim::MachineModel m = candidate(b, t);
  std::vector<double> T;
  for (const auto& r : runs) T.push_back(model_time(sk, m, r));
  return T;
}

double cost_of(const std::vector<double>& T, const std::vector<MeasuredRun>& runs) {
  double c = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) c += std::pow((T[i] - runs[i].time_s) / runs[i].time_s, 2);
  return c;
}

std::string names_of(const std::vector<int>& idx) {
  std::string s;
  for (int j : idx) s += (s.empty() ? "" : ", ") + std::string(fit_param_name(static_cast<FitParam>(j)));
  return s;
}

/** @brief Jacobian of T over the free figures by forward differences (exact inside a piece). */
Eigen::MatrixXd jacobian(const BaseMachine& b, const skeletons::Skeleton& sk, const std::vector<MeasuredRun>& runs,
                         const Theta& t, const std::vector<double>& T, const std::vector<int>& free, const Theta& scale) {
  Eigen::MatrixXd J(static_cast<Eigen::Index>(runs.size()), static_cast<Eigen::Index>(free.size()));
  for (std::size_t k = 0; k < free.size(); ++k) {
    const int j = free[k];
    Theta u = t;
    const double h = 1e-4 * std::max(std::fabs(t[static_cast<std::size_t>(j)]), scale[static_cast<std::size_t>(j)]);
    u[static_cast<std::size_t>(j)] += h;
    const std::vector<double> Tu = eval_all(b, sk, runs, u);
    for (std::size_t i = 0; i < runs.size(); ++i) J(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(k)) = (Tu[i] - T[i]) / h;
  }
  return J;
}

FitState run_fit(const BaseMachine& b, const skeletons::Skeleton& sk, const std::vector<MeasuredRun>& runs, Theta theta,
                 std::vector<int> free, std::array<std::string, FIT_PARAMS> status, std::array<std::string, FIT_PARAMS> why,
                 double max_error) {
  FitState st;
  const Theta base = theta;
  Theta scale{};
  for (int j = 0; j < FIT_PARAMS; ++j) scale[static_cast<std::size_t>(j)] = std::max(std::fabs(theta[static_cast<std::size_t>(j)]), j == 0 || j == 1 || j == 7 ? 1e-12 : 1e-6);
  const auto n = static_cast<Eigen::Index>(runs.size());
  Eigen::VectorXd w(n), t_meas(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    t_meas(i) = runs[static_cast<std::size_t>(i)].time_s;
    w(i) = 1.0 / t_meas(i);
  }
  auto fix = [&](int j, const std::string& reason) {
    free.erase(std::remove(free.begin(), free.end(), j), free.end());
    status[static_cast<std::size_t>(j)] = "fixed";
    why[static_cast<std::size_t>(j)] = reason;
  };

  // Identifiability at the start: figures with no effect, then near-dependent columns (kept by priority).
  std::vector<double> T = eval_all(b, sk, runs, theta);
  {
    Eigen::MatrixXd J = jacobian(b, sk, runs, theta, T, free, scale);
    std::vector<int> keep;
    for (std::size_t k = 0; k < free.size(); ++k) {
      const double norm = (w.asDiagonal() * J.col(static_cast<Eigen::Index>(k))).norm() * scale[static_cast<std::size_t>(free[k])];
      if (norm < 1e-9) fix(free[k], "no effect on these runs (the model's time does not depend on it here); base value kept");
    }
    while (!free.empty()) {
      J = jacobian(b, sk, runs, theta, T, free, scale);
      Eigen::MatrixXd A = w.asDiagonal() * J;
      for (Eigen::Index k = 0; k < A.cols(); ++k) A.col(k) /= A.col(k).norm();
      Eigen::JacobiSVD<Eigen::MatrixXd> svd(A, Eigen::ComputeFullV);
      const auto& sv = svd.singularValues();
      const Eigen::Index m = A.cols();
      const double smax = sv(0);
      const double smin = sv.size() < m ? 0.0 : sv(sv.size() - 1);
      if (smin > smax / CONDITION_LIMIT) {
        st.condition = smax / smin;
        break;
      }
      const Eigen::VectorXd v = svd.matrixV().col(m - 1);  // the direction the runs do not see
      const double vmax = v.cwiseAbs().maxCoeff();
      std::vector<int> involved;
      for (Eigen::Index k = 0; k < m; ++k)
        if (std::fabs(v(k)) >= 0.2 * vmax) involved.push_back(free[static_cast<std::size_t>(k)]);
      const int drop = *std::max_element(involved.begin(), involved.end());  // lowest priority
      std::vector<int> others;
      for (int j : involved)
        if (j != drop) others.push_back(j);
      fix(drop, (sv.size() < m ? std::string("more figures than independent runs; ") : std::string()) +
                    "its effect on these runs cannot be told apart from that of " + (others.empty() ? std::string("the others") : names_of(others)) +
                    " (near-null direction of the scaled Jacobian); base value kept");
    }
  }
  if (free.empty()) {
    st.theta = theta;
    st.model_s = T;
    st.status = status;
    st.why = why;
    st.notes.push_back("nothing left to fit: every figure is fixed or from the database");
    return st;
  }

  double cost = cost_of(T, runs);
  for (int it = 1;; ++it) {
    if (it > MAX_ITERATIONS)
      throw FitError("the fit did not converge in " + std::to_string(MAX_ITERATIONS) + " iterations (relative rss " +
                     fmt("%.3e", cost) + "): the model switches between pieces (max terms) without settling");
    st.iterations = it;
    // Solve the linear problem of this piece: T = J_free * theta_free + (the fixed figures' part).
    Theta target = theta;
    while (true) {
      const Eigen::MatrixXd J = jacobian(b, sk, runs, theta, T, free, scale);
      Eigen::VectorXd tf(static_cast<Eigen::Index>(free.size()));
      for (std::size_t k = 0; k < free.size(); ++k) tf(static_cast<Eigen::Index>(k)) = theta[static_cast<std::size_t>(free[k])];
      Eigen::VectorXd Tv = Eigen::Map<const Eigen::VectorXd>(T.data(), n);
      const Eigen::VectorXd fixed_part = Tv - J * tf;
      Eigen::MatrixXd A = w.asDiagonal() * J;
      Eigen::VectorXd col(A.cols());
      for (Eigen::Index k = 0; k < A.cols(); ++k) {
        col(k) = A.col(k).norm();
        A.col(k) /= col(k);
      }
      const Eigen::VectorXd rhs = w.asDiagonal() * (t_meas - fixed_part);
      Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
      const Eigen::VectorXd sol = qr.solve(rhs).cwiseQuotient(col);
      // Bounds: times cannot be negative; a per-flop or per-byte time of 0 would be an infinitely fast machine.
      int worst = -1;
      double worst_v = 0;
      for (std::size_t k = 0; k < free.size(); ++k) {
        const double v = sol(static_cast<Eigen::Index>(k)) / scale[static_cast<std::size_t>(free[k])];
        if (sol(static_cast<Eigen::Index>(k)) < 0 && v < worst_v) {
          worst = static_cast<int>(k);
          worst_v = v;
        }
      }
      if (worst < 0) {
        for (std::size_t k = 0; k < free.size(); ++k) target[static_cast<std::size_t>(free[k])] = sol(static_cast<Eigen::Index>(k));
        break;
      }
      const int j = free[static_cast<std::size_t>(worst)];
      const double neg = sol(worst);
      if (j <= 1) {
        theta[static_cast<std::size_t>(j)] = base[static_cast<std::size_t>(j)];
        fix(j, "the runs call for a negative time per " + std::string(j == 0 ? "flop" : "byte") + " (" + fmt("%.3g", neg) +
                   "): they cannot determine it; base value kept" + (j == 1 ? " (a database of `mkcalib bench` measures it: --db)" : ""));
      } else {
        theta[static_cast<std::size_t>(j)] = 0;
        fix(j, "the runs call for a negative value (" + fmt("%.3g", neg) + " s): held at its bound 0");
      }
      T = eval_all(b, sk, runs, theta);
      cost = cost_of(T, runs);
      if (free.empty()) break;
    }
    if (free.empty()) break;
    // Step towards the solution of this piece, halving while the exact cost does not decrease.
    double step = 1.0, new_cost = cost;
    Theta next = theta;
    std::vector<double> Tn;
    for (int h = 0; h < 30; ++h, step /= 2) {
      for (int j : free) next[static_cast<std::size_t>(j)] = theta[static_cast<std::size_t>(j)] + step * (target[static_cast<std::size_t>(j)] - theta[static_cast<std::size_t>(j)]);
      Tn = eval_all(b, sk, runs, next);
      new_cost = cost_of(Tn, runs);
      if (new_cost <= cost * (1 + 1e-12)) break;
    }
    double change = 0;
    for (int j : free) change = std::max(change, std::fabs(next[static_cast<std::size_t>(j)] - theta[static_cast<std::size_t>(j)]) / scale[static_cast<std::size_t>(j)]);
    if (new_cost > cost * (1 + 1e-12)) break;  // no descent along the piece's solution: a kink is the optimum
    theta = next;
    T = Tn;
    const double gain = cost - new_cost;
    cost = new_cost;
    if (change < 1e-10 || gain <= 1e-14 * std::max(cost, 1e-300)) break;
  }
  for (int j : free) {
    status[static_cast<std::size_t>(j)] = "fitted";
    why[static_cast<std::size_t>(j)] = "fitted to " + std::to_string(runs.size()) + " measured run(s)";
  }
  // Condition of the final linear problem (reported; the pruning above keeps it below the limit).
  if (!free.empty()) {
    const Eigen::MatrixXd J = jacobian(b, sk, runs, theta, T, free, scale);
    Eigen::MatrixXd A = w.asDiagonal() * J;
    for (Eigen::Index k = 0; k < A.cols(); ++k) A.col(k) /= std::max(A.col(k).norm(), 1e-300);
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(A);
    const auto& sv = svd.singularValues();
    st.condition = sv(sv.size() - 1) > 0 ? sv(0) / sv(sv.size() - 1) : INFINITY;
    if (static_cast<Eigen::Index>(free.size()) > sv.size() || !(st.condition < CONDITION_LIMIT))
      throw FitError("the fit is ill-conditioned at its solution (condition " + fmt("%.3g", st.condition) + " for " +
                     names_of(free) + "): fix some of them (--fit) or add runs that separate them");
  }
  for (int j = 0; j < FIT_PARAMS; ++j)
    if (!(theta[static_cast<std::size_t>(j)] >= 0) || !std::isfinite(theta[static_cast<std::size_t>(j)]))
      throw FitError(std::string("the fit gave a meaningless ") + fit_param_name(static_cast<FitParam>(j)));
  double worst = 0;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const double e = std::fabs(rel_error(T[i], runs[i].time_s));
    if (e > worst) {
      worst = e;
      worst_i = i;
    }
  }
  if (worst > max_error)
    throw FitError("the fitted model misses the run at line " + std::to_string(runs[worst_i].line) + " by " + pct(rel_error(T[worst_i], runs[worst_i].time_s)) +
                   " (limit " + fmt("%.0f%%", 100 * max_error) + ", --max-error): the skeleton and the figures fitted (" + names_of(free) +
                   ") cannot describe these measurements; no platform written");
  st.theta = theta;
  st.model_s = T;
  st.status = status;
  st.why = why;
  return st;
}

nlohmann::json state_json(const FitState& s) {
  nlohmann::json j;
  j["theta"] = s.theta;
  j["status"] = s.status;
  j["why"] = s.why;
  j["model_s"] = s.model_s;
  j["iterations"] = s.iterations;
  j["condition"] = s.condition;
  j["notes"] = s.notes;
  return j;
}

FitState state_from(const nlohmann::json& j) {
  FitState s;
  s.theta = j.at("theta").get<Theta>();
  s.status = j.at("status").get<std::array<std::string, FIT_PARAMS>>();
  s.why = j.at("why").get<std::array<std::string, FIT_PARAMS>>();
  s.model_s = j.at("model_s").get<std::vector<double>>();
  s.iterations = j.at("iterations").get<int>();
  s.condition = j.at("condition").is_number() ? j.at("condition").get<double>() : 0.0;
  s.notes = j.at("notes").get<std::vector<std::string>>();
  return s;
}

int code_of(const std::exception& e) {
  if (dynamic_cast<const FitError*>(&e)) return 4;
  if (dynamic_cast<const skeletons::SkeletonError*>(&e) || dynamic_cast<const FitInputError*>(&e)) return 2;
  return 1;
}

void rethrow(const sim::ChildResult& r) {
  if (r.code == 4) throw FitError(r.output);
  if (r.code == 2) throw FitInputError(r.output);
  if (r.code != 0) throw std::runtime_error(r.output);
}

int largest_P(const std::vector<MeasuredRun>& runs) {
  int P = 1;
  for (const auto& r : runs) P = std::max(P, r.P);
  return P;
}

/** @brief Model times of every run on a platform file (one child: one SimGrid engine). */
std::vector<double> model_times(const std::string& platform, const skeletons::Skeleton& sk, const std::vector<MeasuredRun>& runs) {
  const sim::ChildResult r = sim::run_in_child(
      [&] {
        const sim::MachineModel m = sim::load_machine_model(platform, largest_P(runs));
        std::vector<double> T;
        for (const auto& run : runs) {
          try {
            T.push_back(model_time(sk, m, run));
          } catch (const skeletons::SkeletonError& e) {
            throw FitInputError("run at line " + std::to_string(run.line) + ": " + e.what());
          }
        }
        return nlohmann::json(T).dump();
      },
      code_of, "the analytic model");
  rethrow(r);
  return nlohmann::json::parse(r.output).get<std::vector<double>>();
}

/** @brief The replayed time of one run; with noise_seeds > 0, the mean over that many draws of the OS noise
 *  calibrated to the platform's skew alpha. */
double replay_time(const std::string& platform, const skeletons::Skeleton& sk, const MeasuredRun& run, int noise_seeds = 0,
                   double noise_gain = -1) {
  sim::ReplayOptions o;
  o.platform_path = platform;
  o.P = run.P;
  o.params = run.params;
  try {
    if (noise_seeds > 0) {
      o.load_text = "noise *";
      o.noise_gain = noise_gain;
      for (const auto& [k, v] : sim::replay_load_seeds(sk, o, noise_seeds).attributes)
        if (k == "load.mean_s") return std::stod(v);
    }
    return sim::replay_in_child(sk, o).predicted_time_s;
  } catch (const std::exception& e) {
    throw FitInputError("replay of the run at line " + std::to_string(run.line) + " (P=" + std::to_string(run.P) + "): " + e.what());
  }
}

std::string params_text(const MeasuredRun& r, const std::vector<std::string>& cols) {
  std::string s = "P=" + std::to_string(r.P);
  for (const auto& c : cols) s += " " + c + "=" + fmt("%.10g", r.params.at(c));
  return s;
}

}  // namespace

// ---- public ------------------------------------------------------------------------------------------------

const char* fit_param_name(FitParam p) {
  static const char* names[] = {"speed", "bandwidth", "latency", "s", "r", "o", "alpha", "eager_per_byte", "handshake"};
  return names[static_cast<int>(p)];
}

std::vector<FitParam> parse_fit_params(const std::string& list) {
  std::vector<FitParam> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool found = false;
    if (item == "all") {
      for (int j = 0; j < FIRST_REGIME_PARAM; ++j) out.push_back(static_cast<FitParam>(j));
      found = true;
    }
    for (int j = 0; j < FIT_PARAMS && !found; ++j)
      if (item == fit_param_name(static_cast<FitParam>(j))) {
        out.push_back(static_cast<FitParam>(j));
        found = true;
      }
    if (!found) throw std::invalid_argument("unknown figure \"" + item + "\" (known: speed, bandwidth, latency, s, r, o, alpha, eager_per_byte, handshake, all)");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

BasePlatform read_base_platform(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FitInputError(path + ": cannot open the base platform");
  std::string text(65536, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  std::map<std::string, std::string> props;
  const std::regex prop_re("<prop id=\"([^\"]+)\" value=\"([^\"]*)\"/>");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), prop_re); it != std::sregex_iterator(); ++it)
    props.emplace((*it)[1].str(), (*it)[2].str());
  auto need = [&](const std::string& id) {
    const auto it = props.find(id);
    if (it == props.end())
      throw FitInputError(path + ": no prop " + id + ": mkcalib fit needs a platform written by mksim's generator (bundled, or `mksim platform`)");
    return it->second;
  };
  auto number = [&](const std::string& id) {
    const std::string v = need(id);
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end) throw FitInputError(path + ": prop " + id + " = \"" + v + "\" is not a number");
    return d;
  };
  BasePlatform b;
  b.path = path;
  b.spec.machine = need("mksim.machine");
  try {
    pf::topology_of(b.spec.machine);
  } catch (const std::invalid_argument& e) {
    throw FitInputError(path + ": " + e.what());
  }
  const std::string dims = need("mksim.dims");
  for (std::size_t s = 0; s <= dims.size();) {
    const std::size_t x = dims.find('x', s);
    b.spec.dims.push_back(std::atol(dims.substr(s, x == std::string::npos ? std::string::npos : x - s).c_str()));
    if (x == std::string::npos) break;
    s = x + 1;
  }
  pf::FigureOverrides& o = b.spec.overrides;
  o.send_overhead_s = number("mksim.send_overhead_s");
  o.recv_overhead_s = number("mksim.recv_overhead_s");
  o.per_message_overhead_s = number("mksim.per_message_overhead_s");
  o.eager_threshold_bytes = number("mksim.eager_threshold_bytes");
  o.skew_alpha_s = number("mksim.skew_alpha_s");
  o.end_to_end_latency_s = number("mksim.end_to_end_latency_s");
  if (pf::topology_of(b.spec.machine) == pf::Topology::MESH2D) {
    o.node_speed_flops = parse_si(need("mksim.mesh.speed"), "f", path, "mksim.mesh.speed");
    o.link_latency_s = parse_si(need("mksim.mesh.link_latency"), "s", path, "mksim.mesh.link_latency");
    o.link_bandwidth_bytes_per_s = parse_si(need("mksim.mesh.link_bandwidth"), "Bps", path, "mksim.mesh.link_bandwidth");
    o.nic_latency_s = parse_si(need("mksim.mesh.nic_latency"), "s", path, "mksim.mesh.nic_latency");
    o.nic_bandwidth_bytes_per_s = parse_si(need("mksim.mesh.nic_bandwidth"), "Bps", path, "mksim.mesh.nic_bandwidth");
  } else {
    std::smatch m;
    if (!std::regex_search(text, m, std::regex("<cluster [^>]*>")))
      throw FitInputError(path + ": no <cluster> element for machine " + b.spec.machine);
    const std::string tag = m[0].str();
    o.node_speed_flops = parse_si(attr(tag, "speed"), "f", path, "cluster speed");
    o.link_bandwidth_bytes_per_s = parse_si(attr(tag, "bw"), "Bps", path, "cluster bw");
    o.link_latency_s = parse_si(attr(tag, "lat"), "s", path, "cluster lat");
    const std::string lim = attr(tag, "limiter_link");
    o.nic_bandwidth_bytes_per_s = lim.empty() ? 0.0 : parse_si(lim, "Bps", path, "cluster limiter_link");
    o.nic_latency_s = 0.0;
  }
  try {
    pf::node_count(b.spec);
  } catch (const std::invalid_argument& e) {
    throw FitInputError(path + ": " + e.what());
  }
  // Figures equal to the preset's keep the preset's sources (only what differs is an override).
  pf::PlatformSpec preset = b.spec;
  preset.overrides = {};
  const pf::MachineFigures pre = pf::figures_for(preset);
  const std::pair<const char*, const pf::Figure*> named[] = {
      {"node_speed_flops", &pre.node_speed_flops}, {"link_latency_s", &pre.link_latency_s},
      {"link_bandwidth_bytes_per_s", &pre.link_bandwidth_bytes_per_s}, {"nic_latency_s", &pre.nic_latency_s},
      {"nic_bandwidth_bytes_per_s", &pre.nic_bandwidth_bytes_per_s}, {"send_overhead_s", &pre.send_overhead_s},
      {"recv_overhead_s", &pre.recv_overhead_s}, {"per_message_overhead_s", &pre.per_message_overhead_s},
      {"eager_threshold_bytes", &pre.eager_threshold_bytes}, {"skew_alpha_s", &pre.skew_alpha_s},
      {"end_to_end_latency_s", &pre.end_to_end_latency_s}};
  for (const auto& [name, fig] : named) {
    std::optional<double>& v = override_of(o, name);
    if (std::fabs(*v - fig->value) <= 1e-8 * std::max(std::fabs(fig->value), 1e-300))
      v.reset();
    else
      b.spec.override_sources[name] = "from the base platform " + std::filesystem::path(path).filename().string();
  }
  // per-regime figures: optional props (absent = 0)
  for (const char* name : {"eager_per_byte_s", "rendezvous_handshake_s"}) {
    const std::string id = std::string("mksim.") + name;
    if (!props.count(id)) continue;
    const double v = number(id);
    if (v < 0) throw FitInputError(path + ": prop " + id + " is negative");
    if (v == 0) continue;
    override_of(o, name) = v;
    b.spec.override_sources[name] = "from the base platform " + std::filesystem::path(path).filename().string();
  }
  // per-pattern figures: optional props (none = none)
  try {
    b.spec.patterns = pf::patterns_from_props(props, path);
  } catch (const std::runtime_error& e) {
    throw FitInputError(e.what());
  }
  for (auto& p : b.spec.patterns) p.source = "from the base platform " + std::filesystem::path(path).filename().string();
  b.figures = pf::figures_for(b.spec);
  return b;
}

FitResult fit_platform(const FitRequest& req, std::ostream* log) {
  const BasePlatform& base = req.base;
  const Mapping map = mapping_of(base.spec, base.figures);
  Theta theta = theta_of(base.figures, map);
  std::array<std::string, FIT_PARAMS> status, why;
  for (int j = 0; j < FIT_PARAMS; ++j) {
    status[static_cast<std::size_t>(j)] = "fixed";
    why[static_cast<std::size_t>(j)] = "base platform's value";
  }
  FitResult res;
  res.spec = base.spec;
  std::set<int> from_db;

  // The database: figures measured directly.
  if (req.db) {
    const MachineFigures mf = machine_figures(*req.db);
    const std::string src = "mkcalib bench database " + std::filesystem::path(req.db_path).filename().string() + " (machine " +
                            req.db->machine + ", " + req.db->date_utc + ", np " + std::to_string(req.db->np) + ")";
    if (mf.has_s) theta[3] = mf.s_s, from_db.insert(3), why[3] = src + ": send_overhead intercept";
    if (mf.has_r) theta[4] = mf.r_s, from_db.insert(4), why[4] = src + ": recv_overhead intercept";
    if (mf.has_o) theta[5] = mf.o_s, from_db.insert(5), why[5] = src + ": stream intercept";
    if (mf.has_pingpong && !mf.pingpong.empty()) {
      const results::CalibRegime& first = mf.pingpong.front();
      const results::CalibRegime& last = mf.pingpong.back();
      // network part of the one-way time: rho - s - r - o (one hop between the two ranks' hosts)
      const double hop = map.latency_is_nic ? base.figures.link_latency_s.value : 0.0;
      double net = first.rho_s - theta[3] - theta[4] - theta[5] - hop;
      if (map.latency_is_nic) net /= 2;
      if (net < 0) {
        res.notes.push_back("pingpong rho " + fmt("%.4g", first.rho_s) + " s is below s + r + o: network latency held at 0");
        net = 0;
      }
      theta[2] = net;
      from_db.insert(2);
      why[2] = src + ": pingpong " + first.name + " rho " + fmt("%.4g", first.rho_s * 1e6) + " us less s, r, o";
      if (!(last.beta_s_per_byte > 0))
        throw FitInputError(req.db_path + ": pingpong " + last.name + " regime has a non-positive beta: remeasure");
      theta[1] = last.beta_s_per_byte;
      from_db.insert(1);
      why[1] = src + ": pingpong " + last.name + " regime 1/beta";
      if (mf.breakpoint_bytes > 0) {
        res.spec.overrides.eager_threshold_bytes = static_cast<double>(mf.breakpoint_bytes) - 1;
        res.spec.override_sources["eager_threshold_bytes"] = src + ": pingpong breakpoint (first long size " + std::to_string(mf.breakpoint_bytes) + " B) less 1";
      }
    } else if (!mf.has_s && !mf.has_r && !mf.has_o) {
      res.notes.push_back("the database has no pingpong or overhead kernels: nothing taken from it for the network");
    }
    if (!req.runs) {
      for (const auto& k : req.db->kernels)
        if (k.name == "compute" && !k.sizes.empty()) {
          std::vector<double> med;
          for (const auto& s : k.sizes) med.push_back(s.median_s);
          std::sort(med.begin(), med.end());
          theta[0] = med[med.size() / 2];
          from_db.insert(0);
          why[0] = src + ": compute kernel, median over its working sets of the median time per flop";
        }
    }
    for (int j : from_db) status[static_cast<std::size_t>(j)] = "database";
  }

  // The runs: the model fitted in a child that loads the base platform once.
  FitState st;
  st.theta = theta;
  st.status = status;
  st.why = why;
  if (req.runs) {
    if (!req.skeleton) throw FitInputError("--runs needs --skeleton (the program the runs measured)");
    const std::vector<MeasuredRun>& runs = req.runs->runs;
    // inconsistent repetitions: the same point measured with times more than 1.5x apart
    for (std::size_t i = 0; i < runs.size(); ++i)
      for (std::size_t k = i + 1; k < runs.size(); ++k)
        if (runs[i].P == runs[k].P && runs[i].params == runs[k].params &&
            std::max(runs[i].time_s, runs[k].time_s) > 1.5 * std::min(runs[i].time_s, runs[k].time_s))
          throw FitInputError(req.runs->file + ":" + std::to_string(runs[k].line) + ": the same run as line " + std::to_string(runs[i].line) +
                              " with a time " + fmt("%.3g", runs[k].time_s / runs[i].time_s) + "x different: inconsistent measurements");
    std::vector<int> free;
    if (req.fit.empty()) {
      for (int j = 0; j < FIRST_REGIME_PARAM; ++j)
        if (!from_db.count(j)) free.push_back(j);
    } else {
      for (FitParam p : req.fit) free.push_back(static_cast<int>(p));
    }
    for (int j = 0; j < FIT_PARAMS; ++j)
      if (std::find(free.begin(), free.end(), j) == free.end() && !from_db.count(j))
        why[static_cast<std::size_t>(j)] = "not asked for (--fit); base platform's value";
    if (log) *log << "mkcalib: fitting " << names_of(free) << " to " << runs.size() << " run(s) of " << req.skeleton->name << " (analytic model)\n";
    const sim::ChildResult r = sim::run_in_child(
        [&] {
          BaseMachine bm;
          bm.model = sim::load_machine_model(base.path, largest_P(runs));
          bm.figures = base.figures;
          bm.map = map;
          for (const auto& run : runs) {  // every run must be valid for the skeleton before fitting
            try {
              model_time(*req.skeleton, bm.model, run);
            } catch (const skeletons::SkeletonError& e) {
              throw FitInputError(req.runs->file + ":" + std::to_string(run.line) + ": " + e.what());
            }
          }
          return state_json(run_fit(bm, *req.skeleton, runs, theta, free, status, why, req.max_error)).dump();
        },
        code_of, "the fit");
    rethrow(r);
    st = state_from(nlohmann::json::parse(r.output));
    res.iterations = st.iterations;
    res.condition = st.condition;
    for (const auto& n : st.notes) res.notes.push_back(n);
  }

  // The spec: every figure the fit touched becomes an override with its source.
  for (int j = 0; j < FIT_PARAMS; ++j) {
    const auto p = static_cast<FitParam>(j);
    ParamReport pr;
    pr.param = p;
    pr.figure = figure_of(p, map);
    pr.value = value_of(p, st.theta[static_cast<std::size_t>(j)]);
    pr.base_value = value_of(p, theta_of(base.figures, map)[static_cast<std::size_t>(j)]);
    pr.status = st.status[static_cast<std::size_t>(j)];
    pr.why = st.why[static_cast<std::size_t>(j)];
    if (pr.status != "fixed") {
      override_of(res.spec.overrides, pr.figure) = pr.value;
      res.spec.override_sources[pr.figure] = pr.status == "fitted" ? "fitted by mkcalib fit (" + pr.why + ")" : pr.why;
    }
    // per-regime figures: reported only when fitted or set (fits without them print as before)
    if (j < FIRST_REGIME_PARAM || pr.status != "fixed" || pr.value != 0 || pr.base_value != 0) res.params.push_back(pr);
  }
  {  // the end-to-end neighbour latency the calibrated split gives (s + one hop + r, plus the NICs on a mesh)
    const pf::MachineFigures f = pf::figures_for(res.spec);
    const double e2e = f.send_overhead_s.value + f.recv_overhead_s.value + f.link_latency_s.value +
                       (map.mesh ? 2 * f.nic_latency_s.value : 0.0);
    if (std::fabs(e2e - base.figures.end_to_end_latency_s.value) > 1e-9 * e2e) {
      res.spec.overrides.end_to_end_latency_s = e2e;
      res.spec.override_sources["end_to_end_latency_s"] = "s + one hop + r" + std::string(map.mesh ? " + 2 x node latency" : "") + " of the calibrated figures";
    }
  }
  try {
    pf::generate_platform_xml(res.spec);
  } catch (const std::invalid_argument& e) {
    throw FitError(std::string("the fitted figures do not make a valid platform: ") + e.what());
  }

  // Check: the written file gives the same model times, and replay.
  if (req.runs) {
    const std::string tmp = (std::filesystem::temp_directory_path() / ("mkcalib-fit-" + std::to_string(getpid()) + ".xml")).string();
    {
      std::ofstream f(tmp, std::ios::binary);
      f << pf::generate_platform_xml(res.spec);
      if (!f) throw std::runtime_error(tmp + ": cannot write the trial platform");
    }
    try {
      const std::vector<double> again = model_times(tmp, *req.skeleton, req.runs->runs);
      for (std::size_t i = 0; i < again.size(); ++i) {
        const double d = std::fabs(again[i] - st.model_s[i]) / std::max(st.model_s[i], 1e-300);
        if (d > 1e-4)
          throw FitError("internal check failed: the written platform gives " + fmt("%.6g", again[i]) + " s for the run at line " +
                         std::to_string(req.runs->runs[i].line) + " but the fit computed " + fmt("%.6g", st.model_s[i]) +
                         " s (figures rounded in the file, or a route this fit does not model)");
      }
      double sq_m = 0, sq_r = 0;
      for (std::size_t i = 0; i < req.runs->runs.size(); ++i) {
        RunCheck c;
        c.run = req.runs->runs[i];
        c.model_s = again[i];
        if (req.replay_check) {
          if (log) *log << "mkcalib: replaying " << params_text(c.run, req.runs->param_columns) << " on the fitted platform\n";
          c.replay_s = replay_time(tmp, *req.skeleton, c.run);
          const double er = std::fabs(rel_error(c.replay_s, c.run.time_s));
          sq_r += er * er;
          res.max_rel_replay = std::max(res.max_rel_replay, er);
        }
        const double em = std::fabs(rel_error(c.model_s, c.run.time_s));
        sq_m += em * em;
        res.max_rel_model = std::max(res.max_rel_model, em);
        res.runs.push_back(c);
      }
      const double n = static_cast<double>(req.runs->runs.size());
      res.rms_rel_model = std::sqrt(sq_m / n);
      res.rms_rel_replay = req.replay_check ? std::sqrt(sq_r / n) : 0.0;
    } catch (...) {
      std::filesystem::remove(tmp);
      throw;
    }
    std::filesystem::remove(tmp);
  }
  return res;
}

std::string format_fit_report(const FitResult& res, const std::vector<std::string>& cols) {
  std::ostringstream o;
  // The name column is as wide as the longest name ("eager_per_byte" had pushed its row out of line).
  int w = 10;  // as before for the seven usual figures
  for (const auto& p : res.params) w = std::max(w, static_cast<int>(std::string(fit_param_name(p.param)).size()));
  o << "figure" << std::string(static_cast<std::size_t>(w - 6), ' ') << " value            base             status    source\n";
  for (const auto& p : res.params) {
    char line[200];
    std::snprintf(line, sizeof line, "%-*s %-16s %-16s %-9s ", w, fit_param_name(p.param),
                  (fmt("%.6g", p.value) + " " + unit_of(p.param)).c_str(), (fmt("%.6g", p.base_value) + " " + unit_of(p.param)).c_str(),
                  p.status.c_str());
    o << line << p.figure << ": " << p.why << "\n";
  }
  if (!res.runs.empty()) {
    o << "fit: " << res.iterations << " iteration(s), condition " << fmt("%.3g", res.condition) << "; relative error rms/max: model "
      << fmt("%.2f%%", 100 * res.rms_rel_model) << " / " << fmt("%.2f%%", 100 * res.max_rel_model);
    if (res.runs.front().replay_s >= 0)
      o << ", replay " << fmt("%.2f%%", 100 * res.rms_rel_replay) << " / " << fmt("%.2f%%", 100 * res.max_rel_replay);
    o << "\n";
    std::vector<ValidationRow> rows;
    for (const auto& c : res.runs) rows.push_back({c.run, c.replay_s, c.model_s});
    o << format_validation(rows, cols);
  }
  for (const auto& n : res.notes) o << "note: " << n << "\n";
  return o.str();
}

std::string calibrated_platform_xml(const FitRequest& req, const FitResult& res) {
  pf::PlatformSpec spec = res.spec;
  std::vector<std::string> cols = req.runs ? req.runs->param_columns : std::vector<std::string>{};
  spec.notes.push_back("Calibrated by mkcalib fit from the base platform " + std::filesystem::path(req.base.path).filename().string() +
                       (req.db ? ", the database " + std::filesystem::path(req.db_path).filename().string() : std::string()) +
                       (req.runs ? ", the runs " + std::filesystem::path(req.runs->file).filename().string() + " of skeleton " +
                                       std::filesystem::path(req.skeleton_path).filename().string()
                                 : std::string()) + ".");
  std::istringstream report(format_fit_report(res, cols));
  for (std::string line; std::getline(report, line);) spec.notes.push_back(line);
  if (req.runs)
    for (const auto& c : req.runs->comments) spec.notes.push_back("runs file: " + c);
  std::string fitted;
  for (const auto& p : res.params)
    if (p.status == "fitted") fitted += (fitted.empty() ? "" : ",") + std::string(fit_param_name(p.param));
  spec.extra_props.emplace_back("mksim.calib.fitted", fitted.empty() ? "none" : fitted);
  if (req.db) spec.extra_props.emplace_back("mksim.calib.database", std::filesystem::path(req.db_path).filename().string());
  if (req.runs) {
    spec.extra_props.emplace_back("mksim.calib.runs", std::filesystem::path(req.runs->file).filename().string());
    spec.extra_props.emplace_back("mksim.calib.skeleton", std::filesystem::path(req.skeleton_path).filename().string());
    spec.extra_props.emplace_back("mksim.calib.run_count", std::to_string(req.runs->runs.size()));
    spec.extra_props.emplace_back("mksim.calib.rms_rel_error_model", fmt("%.6g", res.rms_rel_model));
    spec.extra_props.emplace_back("mksim.calib.max_rel_error_model", fmt("%.6g", res.max_rel_model));
    if (req.replay_check) {
      spec.extra_props.emplace_back("mksim.calib.rms_rel_error_replay", fmt("%.6g", res.rms_rel_replay));
      spec.extra_props.emplace_back("mksim.calib.max_rel_error_replay", fmt("%.6g", res.max_rel_replay));
    }
  }
  return pf::generate_platform_xml(spec);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": cannot create " + tmp);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error(path + ": write failed");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": fsync/close failed");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": rename from " + tmp + " failed");
  }
}

std::vector<ValidationRow> validate_platform(const std::string& platform, const skeletons::Skeleton& sk, const MeasuredRuns& runs,
                                             int noise_seeds) {
  const std::vector<double> model = model_times(platform, sk, runs.runs);
  const double alpha = sim::platform_skew_alpha(platform);
  const bool noise = noise_seeds > 0 && alpha > 0;
  std::map<int, double> gains;  // the noise's program-level gain depends on the platform and P only
  std::vector<ValidationRow> rows;
  for (std::size_t i = 0; i < runs.runs.size(); ++i) {
    const MeasuredRun& run = runs.runs[i];
    rows.push_back({run, replay_time(platform, sk, run), model[i]});
    if (!noise) continue;
    if (!gains.count(run.P)) gains[run.P] = sim::program_noise_gain(platform, run.P, alpha);
    rows.back().replay_noise_s = replay_time(platform, sk, run, noise_seeds, gains[run.P]);
  }
  return rows;
}

std::string format_validation(const std::vector<ValidationRow>& rows, const std::vector<std::string>& cols) {
  std::ostringstream o;
  char b[256];
  o << std::string(6, ' ') << "P";
  for (const auto& c : cols) {
    std::snprintf(b, sizeof b, " %12s", c.c_str());
    o << b;
  }
  const bool noisy = std::any_of(rows.begin(), rows.end(), [](const ValidationRow& r) { return r.replay_noise_s >= 0; });
  o << "   measured_s     replay_s      model_s  replay_err  model_err" << (noisy ? "  replay+noise_s   noise_err" : "") << "\n";
  double sum_r = 0, sum_m = 0, worst_r = 0, worst_m = 0, sum_n = 0, worst_n = 0;
  bool replayed = true;
  for (const auto& r : rows) {
    std::snprintf(b, sizeof b, "%7d", r.run.P);
    o << b;
    for (const auto& c : cols) {
      std::snprintf(b, sizeof b, " %12.10g", r.run.params.at(c));  // N = 1048576 in full, not 1.04858e+06
      o << b;
    }
    const double er = rel_error(r.replay_s, r.run.time_s), em = rel_error(r.model_s, r.run.time_s);
    if (r.replay_s < 0) {
      replayed = false;
      std::snprintf(b, sizeof b, " %12.6f %12s %12.6f %11s %+9.2f%%", r.run.time_s, "-", r.model_s, "-", 100 * em);
    } else {
      std::snprintf(b, sizeof b, " %12.6f %12.6f %12.6f %+10.2f%% %+9.2f%%", r.run.time_s, r.replay_s, r.model_s, 100 * er, 100 * em);
    }
    o << b;
    if (noisy) {
      const double en = rel_error(r.replay_noise_s, r.run.time_s);
      std::snprintf(b, sizeof b, " %16.6f %+10.2f%%", r.replay_noise_s, 100 * en);
      o << b;
      sum_n += std::fabs(en);
      worst_n = std::max(worst_n, std::fabs(en));
    }
    o << "\n";
    sum_r += std::fabs(er);
    sum_m += std::fabs(em);
    worst_r = std::max(worst_r, std::fabs(er));
    worst_m = std::max(worst_m, std::fabs(em));
  }
  const double n = static_cast<double>(std::max<std::size_t>(rows.size(), 1));
  if (replayed)
    std::snprintf(b, sizeof b, "mean |error|: replay %.2f%%, model %.2f%%; worst: replay %.2f%%, model %.2f%% (%zu run(s))\n", 100 * sum_r / n,
                  100 * sum_m / n, 100 * worst_r, 100 * worst_m, rows.size());
  else
    std::snprintf(b, sizeof b, "mean |error|: model %.2f%%; worst: model %.2f%% (%zu run(s))\n", 100 * sum_m / n, 100 * worst_m, rows.size());
  o << b;
  if (noisy) {
    std::snprintf(b, sizeof b, "mean |error|: replay with the OS noise calibrated to the skew %.2f%%; worst %.2f%%\n", 100 * sum_n / n, 100 * worst_n);
    o << b;
  }
  return o.str();
}

}  // namespace mksim::calibration
