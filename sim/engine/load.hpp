// Background load on nondedicated machines (issue 18): host availability profiles that the replay integrates
// into compute blocks, link profiles handed to SimGrid, and a seeded stochastic background load.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mksim::sim {

/** @brief A malformed load file or profile: what() names the file and line. */
class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** @brief A piecewise-constant availability a(t) in [0, inf) (the fraction of the peak speed a rank gets), with
 *  SimGrid's profile semantics: before the first event a = 1; each event (t_i, v_i) holds until the next; after
 *  the last one, the value stays, or (LOOPAFTER L) the events repeat with period t_last + L, event i again at
 *  t_i + k (t_last + L) (measured on SimGrid 3.32: sim/engine/README.md "Background load").
 *  A stochastic profile grows its events on demand from its generator (same seed, same events). */
class Availability {
 public:
  struct Event {
    double t;
    double value;
  };
  /// Appends events after the last one (times increasing); called when the integration runs past the end.
  using Generator = std::function<void(std::vector<Event>&)>;

  Availability() = default;
  Availability(std::vector<Event> events, double loop_after, std::string source);
  Availability(Generator gen, std::string source);

  /** @brief The time at which a rank that starts at t0 has done `work` seconds of full-speed compute:
   *  the t with integral_{t0}^{t} a = work. Throws LoadError when it never happens (availability 0 forever). */
  double finish(double t0, double work);
  /** @brief integral_{t0}^{t1} a(t) dt. */
  double integral(double t0, double t1);
  /** @brief a(t). */
  double value_at(double t);
  /** @brief The end of the constant piece that holds t (infinity for the last piece of a profile that ends). */
  double piece_end(double t);
  /** @brief The time of the profile's first event (0 for a generated one). */
  double first_event() const { return events_.empty() ? 0.0 : events_.front().t; }
  const std::string& source() const { return source_; }

 private:
  /// Calls f(start, end, value) for the constant pieces from t0 on (end may be infinity) until f returns false.
  template <class F>
  void walk(double t0, F&& f);
  std::vector<Event> events_;
  double period_ = 0;  ///< > 0: events repeat with this period
  Generator gen_;
  std::string source_;
};

/** @brief Reads a SimGrid profile file ("TIME VALUE" per line, "LOOPAFTER L" or "PERIODICITY L", blank lines and
 *  '%' comments). Errors name the file and line. `min_value` is the smallest value accepted. */
Availability read_profile(const std::string& path);

/** @brief The parsed events of a profile file (for link profiles the values are handed to SimGrid as they are). */
struct ProfileText {
  std::vector<Availability::Event> events;
  double loop_after = -1;  ///< < 0: no LOOPAFTER
};
ProfileText parse_profile(const std::string& path);

/** @brief A stochastic background load on one host: `tasks` CPU-bound processes share the rank's core with it
 *  under a fair scheduler (CFS) while they are busy, so the rank gets 1/(1 + tasks) of the core then and all of
 *  it otherwise. They are busy a fraction `duty` of each on-off cycle of mean length `period`:
 *  - demand=wall: the on phase lasts duty*period of wall-clock time whatever the rank does;
 *  - demand=cpu: the on phase is duty*period of the background's own CPU time (stress-ng --cpu-load, or any job
 *    with fixed work per cycle), so beside a runnable rank it lasts (1 + tasks)*duty*period: the busy wall
 *    fraction is d' = duty(1+tasks) / (duty(1+tasks) + 1 - duty) (the rank is taken as always runnable, as an
 *    MPI rank that polls while it waits is).
 *  random=phase: fixed on and off lengths and a uniformly drawn phase; random=exp: exponentially distributed on
 *  and off lengths of those means. Mean availability: 1 - d' * tasks / (1 + tasks) (d' = duty for wall). */
struct BusyLoad {
  double duty = 0;
  double period = 0;
  double tasks = 1;
  std::string random = "phase";
  std::string demand = "wall";
  std::string describe() const;
  /** @brief The mean availability the rank sees (the closed form above). */
  double mean_availability() const;
  /** @brief The availability of this load on one host, drawn from (seed, host index): same inputs, same profile. */
  Availability draw(std::uint64_t seed, int host_index, const std::string& source) const;
};

/** @brief OS noise (issue 18, "skew in replay"): after each synchronous exchange (a recv, wait or waitall that
 *  completes at least one receive: where the analytic model closes an exchange with receives) a rank loses a
 *  detour d of its CPU before it goes on, drawn from its own stream. d follows a Lomax (Pareto II) law of tail
 *  index 2, P(d > x) = (1 + x/lambda)^-2: among laws of one shape for every node, only a tail index of 2 makes the
 *  expected largest of P draws grow as sqrt(P) (extreme values: the maximum of P draws of tail index k grows as
 *  P^(1/k)), the form seed 000 s.5.2 measured, T(phase) = tau(m) + alpha sqrt(P). Exactly,
 *  E[max of P] = lambda c(P), c(P) = sqrt(pi) Gamma(P+1) / Gamma(P+1/2) - 1 (c(1) = 1, c(P) -> sqrt(pi P) - 1),
 *  so lambda(P) = alpha sqrt(P) / c(P) makes the expected skew of one exchange alpha sqrt(P) at every P
 *  (lambda = alpha at P = 1, 0.585 alpha at P = 256, alpha / sqrt(pi) in the limit: nearly a per-node constant).
 *  alpha: given, or the platform's mksim.skew_alpha_s (the model's). */
struct NoiseLoad {
  double alpha_s = -1;  ///< < 0: the platform's mksim.skew_alpha_s
  /// "program" (default): lambda(P) times the gain that makes a 2-D halo program without compute (the paper's own
  /// experiment for alpha) alpha sqrt(P) longer per exchange in replay (noise_gain_for, sim/engine/isolate.hpp); "exchange": lambda(P)
  /// alone, the expected largest detour of one exchange is alpha sqrt(P)
  std::string calibrate = "program";
  std::string describe() const;
  /** @brief c(P): the expected largest of P draws of the law at lambda = 1. */
  static double max_factor(int P);
  /** @brief lambda(P) = alpha sqrt(P) / c(P). */
  static double scale_s(double alpha_s, int P);
  /** @brief One detour of scale lambda from a uniform u in [0, 1): lambda ((1-u)^-1/2 - 1). */
  static double detour_s(double lambda_s, double u) { return lambda_s * (1.0 / std::sqrt(1.0 - u) - 1.0); }
};

/** @brief A load file (`mksim predict --load FILE`): one directive per line, '#' comments.
 *    speed HOSTS PROFILE            host speed availability (SimGrid speed profile)
 *    bandwidth LINK PROFILE         link bandwidth availability (fraction of the peak)
 *    latency LINK PROFILE           link latency (absolute seconds)
 *    busy HOSTS duty=D period=T [tasks=K] [random=phase|exp] [demand=wall|cpu]
 *    noise HOSTS [alpha=S] [calibrate=program|exchange]
 *                                   OS noise calibrated to the skew alpha*sqrt(P) (NoiseLoad; default alpha: the
 *                                   platform's mksim.skew_alpha_s)
 *  HOSTS: a host name, rank:N (the host rank N runs on), rank:A-B, or '*' (every compute host). PROFILE paths
 *  are relative to the load file. A later line for the same host replaces an earlier one. */
struct LoadSpec {
  struct HostRule {
    std::string hosts;   ///< as written
    std::string where;   ///< file:line
    std::string profile; ///< resolved path (speed), or empty
    BusyLoad busy;       ///< when profile is empty
  };
  struct LinkRule {
    std::string link;
    std::string where;
    std::string kind;    ///< "bandwidth" or "latency"
    std::string profile; ///< resolved path
  };
  struct NoiseRule {
    std::string hosts;
    std::string where;
    NoiseLoad noise;
  };
  std::string file;
  std::vector<HostRule> hosts;
  std::vector<LinkRule> links;
  std::vector<NoiseRule> noise;  ///< a later rule for the same host replaces an earlier one
  bool stochastic() const;
  /** @brief One line per rule, for results and reports. */
  std::string describe() const;
};

LoadSpec read_load_spec(const std::string& path);
/** @brief The same rules from text (`name` stands for the file in messages; profile paths relative to the working
 *  directory): `mksim model --cross-check` replays with "noise *". */
LoadSpec parse_load_spec(const std::string& text, const std::string& name);

/** @brief Whether rule text HOSTS selects the compute host `name` that rank `rank` runs on (-1: no rank). */
bool host_rule_matches(const std::string& hosts, const std::string& name, int rank, const std::string& where);

/** @brief The speed_file attributes of a platform XML's <host> elements: (host id, path), the path resolved as
 *  SimGrid does (relative to the platform file's folder, else to the working directory). */
std::vector<std::pair<std::string, std::string>> xml_speed_files(const std::string& platform_path);

/** @brief Mean and 95% Student-t half-width of samples (half-width 0 for fewer than two). */
std::pair<double, double> mean_ci95(const std::vector<double>& xs);

}  // namespace mksim::sim
