// Background load: availability profiles (SimGrid's format and semantics), their integration, load files, and the
// seeded stochastic on-off load. No SimGrid here: the replay attaches link profiles itself (replay.cpp).
#include "sim/engine/load.hpp"

#include "skeletons/rank_rng.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <regex>
#include <sstream>

namespace mksim::sim {
namespace {

constexpr double INF = std::numeric_limits<double>::infinity();

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  const auto b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

/** @brief A finite number, the whole of `text`, or nullopt-like false. */
bool parse_number(const std::string& text, double& v) {
  if (text.empty()) return false;
  char* end = nullptr;
  v = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(v);
}

std::string fmtd(double v) {
  std::ostringstream o;
  o.precision(10);
  o << v;
  return o.str();
}

}  // namespace

// ---------------------------------------------------------------------------------------------- Availability

Availability::Availability(std::vector<Event> events, double loop_after, std::string source)
    : events_(std::move(events)), source_(std::move(source)) {
  if (loop_after >= 0 && !events_.empty()) period_ = events_.back().t + loop_after;
  if (period_ <= 0) period_ = 0;
}

Availability::Availability(Generator gen, std::string source) : gen_(std::move(gen)), source_(std::move(source)) {}

template <class F>
void Availability::walk(double t0, F&& f) {
  // Periodic: the first cycle is events_ from time 0 (a = 1 before the first event); later cycles start at
  // k*period with the last event's value until their first event.
  if (period_ > 0) {
    const double first = events_.front().t;
    double k = std::floor(t0 / period_);
    double base = k * period_;
    if (k > 0 && t0 - base < first) {  // before cycle k's first event: the last event's value of cycle k-1
      if (!f(t0, base + first, events_.back().value)) return;
      t0 = base + first;
    }
    for (;;) {
      for (std::size_t i = 0; i < events_.size(); ++i) {
        const double s = base + events_[i].t;
        const double e = i + 1 < events_.size() ? base + events_[i + 1].t : base + period_ + first;
        if (e <= t0) continue;
        if (s > t0) {  // only the very first cycle can start before its first event (a = 1)
          if (!f(t0, s, 1.0)) return;
          t0 = s;
        }
        if (!f(std::max(s, t0), e, events_[i].value)) return;
        t0 = e;
      }
      base += period_;
    }
  }
  std::size_t i = 0;
  for (;;) {
    if (gen_ && (events_.empty() || events_.back().t <= t0)) {
      const std::size_t before = events_.size();
      gen_(events_);
      if (events_.size() == before) throw LoadError(source_ + ": the load generator made no events");
      continue;
    }
    // piece containing t0: before the first event, value 1
    auto it = std::upper_bound(events_.begin() + static_cast<std::ptrdiff_t>(i), events_.end(), t0,
                               [](double t, const Event& e) { return t < e.t; });
    i = static_cast<std::size_t>(it - events_.begin());
    const double v = i == 0 ? 1.0 : events_[i - 1].value;
    double e = i < events_.size() ? events_[i].t : INF;
    if (e == INF && gen_) {  // grow before leaving the generated part
      gen_(events_);
      continue;
    }
    if (!f(t0, e, v)) return;
    if (e == INF) return;
    t0 = e;
  }
}

double Availability::finish(double t0, double work) {
  if (!(work > 0)) return t0;
  double left = work, end = t0;
  bool done = false;
  walk(t0, [&](double s, double e, double v) {
    if (v > 0 && (e - s) * v >= left) {
      end = s + left / v;
      done = true;
      return false;
    }
    if (e == INF) return false;
    left -= (e - s) * v;
    return true;
  });
  if (!done)
    throw LoadError(source_ + ": the availability stays 0 from some time on, so a compute starting at t=" + fmtd(t0) + " never ends");
  return end;
}

double Availability::integral(double t0, double t1) {
  double sum = 0;
  if (!(t1 > t0)) return 0;
  walk(t0, [&](double s, double e, double v) {
    sum += (std::min(e, t1) - s) * v;
    return e < t1;
  });
  return sum;
}

double Availability::value_at(double t) {
  double out = 1;
  walk(t, [&](double, double, double v) {
    out = v;
    return false;
  });
  return out;
}

double Availability::piece_end(double t) {
  double out = INF;
  walk(t, [&](double, double e, double) {
    out = e;
    return false;
  });
  return out;
}

// --------------------------------------------------------------------------------------------- profile files

ProfileText parse_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw LoadError(path + ": cannot open the profile file");
  ProfileText p;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string where = path + ":" + std::to_string(n) + ": ";
    line = trim(line);
    if (line.empty() || line[0] == '%') continue;
    std::istringstream words(line);
    std::string a, b, extra;
    words >> a >> b;
    if (words >> extra) throw LoadError(where + "expected \"TIME VALUE\" or \"LOOPAFTER SECONDS\", got \"" + line + "\"");
    double x = 0, y = 0;
    if (a == "LOOPAFTER" || a == "PERIODICITY") {
      if (!parse_number(b, y) || y < 0) throw LoadError(where + a + " expects a number of seconds >= 0, got \"" + b + "\"");
      if (p.loop_after >= 0) throw LoadError(where + a + " is given twice");
      p.loop_after = y;
      continue;
    }
    if (!parse_number(a, x) || !parse_number(b, y))
      throw LoadError(where + "expected \"TIME VALUE\" (two numbers), got \"" + line + "\"");
    if (x < 0) throw LoadError(where + "time " + a + " is negative");
    if (y < 0) throw LoadError(where + "value " + b + " is negative");
    if (!p.events.empty() && x <= p.events.back().t)
      throw LoadError(where + "time " + a + " does not come after the previous line's " + fmtd(p.events.back().t));
    p.events.push_back({x, y});
  }
  if (p.events.empty()) throw LoadError(path + ": no \"TIME VALUE\" line in the profile");
  return p;
}

Availability read_profile(const std::string& path) {
  ProfileText p = parse_profile(path);
  return Availability(std::move(p.events), p.loop_after, path);
}

// ------------------------------------------------------------------------------------------ stochastic load

std::string BusyLoad::describe() const {
  return "busy duty=" + fmtd(duty) + " period=" + fmtd(period) + " tasks=" + fmtd(tasks) + " random=" + random + " demand=" + demand;
}

double BusyLoad::mean_availability() const {
  const double on = duty * period * (demand == "cpu" ? 1 + tasks : 1.0), off = (1 - duty) * period;
  const double busy = on + off > 0 ? on / (on + off) : 0;
  return 1 - busy * tasks / (1 + tasks);
}

Availability BusyLoad::draw(std::uint64_t seed, int host_index, const std::string& source) const {
  const double busy_a = 1.0 / (1.0 + tasks);
  const BusyLoad load = *this;
  // A stream of its own per host: the seed mixed with a tag so that it differs from the ranks' streams.
  auto rng = std::make_shared<skeletons::RankRng>(seed ^ 0x6C6F616421ULL, host_index);
  auto state = std::make_shared<double>(0);  // time the next piece starts
  auto first = std::make_shared<bool>(true);
  auto gen = [load, busy_a, rng, state, first](std::vector<Availability::Event>& ev) {
    const double on_mean = load.duty * load.period * (load.demand == "cpu" ? 1 + load.tasks : 1.0);
    const double off_mean = (1 - load.duty) * load.period, cycle = on_mean + off_mean;
    auto length = [&](double mean) {
      if (load.random == "exp") return -mean * std::log1p(-rng->uniform());
      return mean;
    };
    if (*first) {  // start in a random place of the cycle: busy with probability duty
      *first = false;
      const double u = rng->uniform() * cycle;
      if (u < on_mean) {
        ev.push_back({0.0, busy_a});
        *state = load.random == "exp" ? length(on_mean) : on_mean - u;
      } else {
        ev.push_back({0.0, 1.0});
        *state = load.random == "exp" ? length(off_mean) : cycle - u;
        ev.push_back({*state, busy_a});
        *state += length(on_mean);
      }
    }
    for (int k = 0; k < 64; ++k) {  // one idle piece then one busy piece
      ev.push_back({*state, 1.0});
      *state += length(off_mean);
      ev.push_back({*state, busy_a});
      *state += length(on_mean);
    }
  };
  return Availability(gen, source);
}

// ------------------------------------------------------------------------------------------------ OS noise

std::string NoiseLoad::describe() const {
  return "noise lomax2 alpha=" + (alpha_s < 0 ? std::string("platform") : fmtd(alpha_s)) + " calibrate=" + calibrate;
}

double NoiseLoad::max_factor(int P) {
  const double p = P;
  return std::sqrt(M_PI) * std::exp(std::lgamma(p + 1) - std::lgamma(p + 0.5)) - 1;
}

double NoiseLoad::scale_s(double alpha_s, int P) { return P < 1 ? 0.0 : alpha_s * std::sqrt(static_cast<double>(P)) / max_factor(P); }

// --------------------------------------------------------------------------------------------- load files

bool LoadSpec::stochastic() const {
  return !noise.empty() || std::any_of(hosts.begin(), hosts.end(), [](const HostRule& h) { return h.profile.empty(); });
}

std::string LoadSpec::describe() const {
  std::string out;
  for (const auto& h : hosts) out += (out.empty() ? "" : "; ") + ("speed " + h.hosts + " " + (h.profile.empty() ? h.busy.describe() : h.profile));
  for (const auto& l : links) out += (out.empty() ? "" : "; ") + (l.kind + " " + l.link + " " + l.profile);
  for (const auto& n : noise) out += (out.empty() ? "" : "; ") + (n.hosts + " " + n.noise.describe());
  return out;
}

bool host_rule_matches(const std::string& hosts, const std::string& name, int rank, const std::string& where) {
  if (hosts == "*") return rank >= 0;
  if (hosts.rfind("rank:", 0) == 0) {
    const std::string r = hosts.substr(5);
    const auto dash = r.find('-');
    double a = 0, b = 0;
    if (!parse_number(r.substr(0, dash), a) || (dash != std::string::npos && !parse_number(r.substr(dash + 1), b)) || a < 0 ||
        a != std::floor(a))
      throw LoadError(where + "\"" + hosts + "\" is not rank:N or rank:A-B");
    if (dash == std::string::npos) b = a;
    return rank >= a && rank <= b;
  }
  return hosts == name;
}

namespace {

LoadSpec parse_load_lines(std::istream& in, const std::string& path) {
  LoadSpec spec;
  spec.file = path;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  auto resolve = [&](const std::string& f) {
    std::filesystem::path p(f);
    return (p.is_absolute() || dir.empty() ? p : dir / p).string();
  };
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string where = path + ":" + std::to_string(n) + ": ";
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = trim(line);
    if (line.empty()) continue;
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    const std::string& kw = w[0];
    if (kw == "speed" || kw == "bandwidth" || kw == "latency") {
      if (w.size() != 3) throw LoadError(where + "expected \"" + kw + (kw == "speed" ? " HOSTS" : " LINK") + " PROFILE\"");
      const std::string prof = resolve(w[2]);
      try {
        parse_profile(prof);  // errors name the profile's own line
      } catch (const LoadError& e) {
        throw LoadError(where + e.what());
      }
      if (kw == "speed") {
        host_rule_matches(w[1], "", 0, where);  // syntax of rank:...
        spec.hosts.push_back({w[1], where, prof, {}});
      } else {
        spec.links.push_back({w[1], where, kw, prof});
      }
    } else if (kw == "busy") {
      if (w.size() < 2) throw LoadError(where + "expected \"busy HOSTS duty=D period=T [tasks=K] [random=phase|exp] [demand=wall|cpu]\"");
      host_rule_matches(w[1], "", 0, where);
      BusyLoad b;
      bool has_duty = false, has_period = false;
      for (std::size_t i = 2; i < w.size(); ++i) {
        const auto eq = w[i].find('=');
        const std::string key = w[i].substr(0, eq), val = eq == std::string::npos ? "" : w[i].substr(eq + 1);
        double v = 0;
        if (key == "random") {
          if (val != "phase" && val != "exp") throw LoadError(where + "random must be phase or exp, got \"" + val + "\"");
          b.random = val;
          continue;
        }
        if (key == "demand") {
          if (val != "wall" && val != "cpu") throw LoadError(where + "demand must be wall or cpu, got \"" + val + "\"");
          b.demand = val;
          continue;
        }
        if (!parse_number(val, v)) throw LoadError(where + "\"" + w[i] + "\": expected KEY=NUMBER");
        if (key == "duty") {
          if (v < 0 || v > 1) throw LoadError(where + "duty must be in [0, 1], got " + val);
          b.duty = v, has_duty = true;
        } else if (key == "period") {
          if (v <= 0) throw LoadError(where + "period must be > 0 seconds, got " + val);
          b.period = v, has_period = true;
        } else if (key == "tasks") {
          if (v <= 0) throw LoadError(where + "tasks must be > 0, got " + val);
          b.tasks = v;
        } else {
          throw LoadError(where + "unknown key \"" + key + "\" (duty, period, tasks, random, demand)");
        }
      }
      if (!has_duty || !has_period) throw LoadError(where + "busy needs duty=D and period=T");
      spec.hosts.push_back({w[1], where, "", b});
    } else if (kw == "noise") {
      if (w.size() < 2) throw LoadError(where + "expected \"noise HOSTS [alpha=SECONDS] [calibrate=program|exchange]\"");
      host_rule_matches(w[1], "", 0, where);
      NoiseLoad nl;
      for (std::size_t i = 2; i < w.size(); ++i) {
        double v = 0;
        if (w[i] == "calibrate=program" || w[i] == "calibrate=exchange") {
          nl.calibrate = w[i].substr(10);
        } else if (w[i].rfind("alpha=", 0) == 0 && parse_number(w[i].substr(6), v) && v >= 0) {
          nl.alpha_s = v;
        } else {
          throw LoadError(where + "\"" + w[i] + "\": expected alpha=SECONDS (>= 0, the skew of seed 000 s.5.2) or calibrate=program|exchange");
        }
      }
      spec.noise.push_back({w[1], where, nl});
    } else {
      throw LoadError(where + "unknown directive \"" + kw + "\" (speed, bandwidth, latency, busy, noise)");
    }
  }
  return spec;
}

}  // namespace

LoadSpec read_load_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw LoadError(path + ": cannot open the load file");
  LoadSpec spec = parse_load_lines(in, path);
  spec.file = path;
  return spec;
}

LoadSpec parse_load_spec(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  LoadSpec spec = parse_load_lines(in, name);
  spec.file = name;
  return spec;
}

std::vector<std::pair<std::string, std::string>> xml_speed_files(const std::string& platform_path) {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in(platform_path, std::ios::binary);
  if (!in) return out;
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  if (text.find("speed_file") == std::string::npos) return out;
  static const std::regex host_re(R"re(<host\b[^>]*>)re");
  static const std::regex id_re(R"re(\bid\s*=\s*"([^"]*)")re");
  static const std::regex file_re(R"re(\bspeed_file\s*=\s*"([^"]*)")re");
  const std::filesystem::path dir = std::filesystem::path(platform_path).parent_path();
  for (std::sregex_iterator it(text.begin(), text.end(), host_re), end; it != end; ++it) {
    const std::string tag = it->str();
    std::smatch id, file;
    if (!std::regex_search(tag, file, file_re) || !std::regex_search(tag, id, id_re)) continue;
    std::filesystem::path p(file[1].str());
    if (!p.is_absolute() && std::filesystem::exists(dir / p)) p = dir / p;
    out.emplace_back(id[1].str(), p.string());
  }
  return out;
}

// ---------------------------------------------------------------------------------------------- statistics

std::pair<double, double> mean_ci95(const std::vector<double>& xs) {
  const std::size_t n = xs.size();
  if (n == 0) return {0, 0};
  double m = 0;
  for (double x : xs) m += x;
  m /= static_cast<double>(n);
  if (n < 2) return {m, 0};
  double ss = 0;
  for (double x : xs) ss += (x - m) * (x - m);
  const double sd = std::sqrt(ss / static_cast<double>(n - 1));
  // Student t quantiles t_{0.975, df}, df = 1..30; beyond, the normal's 1.96 plus the first correction term
  static const double T975[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  const std::size_t df = n - 1;
  const double t = df <= 30 ? T975[df - 1] : 1.959964 + (1.959964 * 1.959964 * 1.959964 + 1.959964) / (4.0 * static_cast<double>(df));
  return {m, t * sd / std::sqrt(static_cast<double>(n))};
}

}  // namespace mksim::sim
