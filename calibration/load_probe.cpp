#include "calibration/load_probe.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <set>
#include <sstream>

namespace mksim::calibration {
namespace {

namespace fs = std::filesystem;

int parse_cpu_number(const std::string& s, const std::string& item) {
  if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    throw LoadProbeInputError("--cpus: \"" + item + "\" is not a cpu number or range (e.g. 0,1 or 0-3)");
  return std::stoi(s);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ProcError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw ProcError("cannot read " + path + ": " + std::strerror(errno));
  return s.str();
}

/// Fields after the command name "(...)" of a /proc/PID/stat line (field 3, the state, is [0]).
std::vector<std::string> stat_fields(const std::string& text) {
  std::vector<std::string> out;
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream in(text.substr(close + 1));
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

/// The sampler's own CPU ticks (utime + stime) and the cpu it last ran on, from PROC/self/stat.
std::pair<unsigned long long, int> self_ticks(const std::string& proc) {
  const std::string path = proc + "/self/stat";
  const auto f = stat_fields(read_text(path));
  if (f.size() < 37) throw ProcError(path + ": fewer fields than Linux's 52");
  try {
    return {std::stoull(f[11]) + std::stoull(f[12]), std::stoi(f[36])};
  } catch (const std::exception&) {
    throw ProcError(path + ": utime, stime or processor is not a number");
  }
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

/// Runnable tasks (state R) per cpu they last ran on, over every task of every process but ours.
std::map<int, int> runnable_tasks(const std::string& proc) {
  std::map<int, int> count;
  const std::string self = std::to_string(::getpid());
  std::error_code ec;
  for (fs::directory_iterator p(proc, ec), end; !ec && p != end; p.increment(ec)) {
    const std::string pid = p->path().filename().string();
    if (!all_digits(pid) || pid == self) continue;
    std::error_code ec2;
    for (fs::directory_iterator t(p->path() / "task", ec2), tend; !ec2 && t != tend; t.increment(ec2)) {
      std::ifstream in(t->path() / "stat");  // tasks come and go: a vanished one is skipped
      std::string line;
      if (!std::getline(in, line)) continue;
      const auto f = stat_fields(line);
      if (f.size() < 37 || f[0] != "R" || !all_digits(f[36])) continue;
      ++count[std::stoi(f[36])];
    }
  }
  return count;
}

/// utime + stime and the cpu of every thread of `pids` and their descendants: tid -> (ticks, cpu).
std::map<int, std::pair<unsigned long long, int>> process_ticks(const std::string& proc, const std::vector<int>& pids) {
  std::map<int, std::vector<int>> children;
  std::error_code ec;
  for (fs::directory_iterator p(proc, ec), end; !ec && p != end; p.increment(ec)) {
    const std::string pid = p->path().filename().string();
    if (!all_digits(pid)) continue;
    std::ifstream in(p->path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const auto f = stat_fields(line);
    if (f.size() >= 2 && all_digits(f[1])) children[std::stoi(f[1])].push_back(std::stoi(pid));
  }
  std::set<int> tree(pids.begin(), pids.end());
  std::vector<int> todo(pids.begin(), pids.end());
  while (!todo.empty()) {
    const int p = todo.back();
    todo.pop_back();
    for (int c : children[p])
      if (tree.insert(c).second) todo.push_back(c);
  }
  std::map<int, std::pair<unsigned long long, int>> out;
  for (int pid : tree) {
    std::error_code ec2;
    for (fs::directory_iterator t(fs::path(proc) / std::to_string(pid) / "task", ec2), tend; !ec2 && t != tend; t.increment(ec2)) {
      std::ifstream in(t->path() / "stat");
      std::string line;
      if (!std::getline(in, line)) continue;
      const auto f = stat_fields(line);
      if (f.size() < 37 || !all_digits(f[11]) || !all_digits(f[12]) || !all_digits(f[36])) continue;
      out[std::stoi(t->path().filename().string())] = {std::stoull(f[11]) + std::stoull(f[12]), std::stoi(f[36])};
    }
  }
  return out;
}

struct ThreadTicks {
  unsigned long long ticks = 0;
  int cpu = 0;
  std::string group;  ///< autogroup id ("/autogroup-N"; "root" when the process has none, e.g. a kernel thread)
  int nice = 0;       ///< of the autogroup (root: 0)
};

/// The autogroup line of a process: "/autogroup-5400 nice 0" -> (id, nice); ("root", 0) when unreadable.
std::pair<std::string, int> autogroup_of(const fs::path& file) {
  std::ifstream in(file);
  std::string id, word;
  int nice = 0;
  if (in >> id >> word >> nice && word == "nice") return {id, nice};
  return {"root", 0};
}

/// Every thread of every process but ours: tid -> ticks, cpu, autogroup.
std::map<int, ThreadTicks> all_thread_ticks(const std::string& proc, bool groups_on) {
  std::map<int, ThreadTicks> out;
  const std::string self = std::to_string(::getpid());
  std::error_code ec;
  for (fs::directory_iterator p(proc, ec), end; !ec && p != end; p.increment(ec)) {
    const std::string pid = p->path().filename().string();
    if (!all_digits(pid) || pid == self) continue;
    const auto [group, nice] = groups_on ? autogroup_of(p->path() / "autogroup") : std::pair<std::string, int>{"root", 0};
    std::error_code ec2;
    for (fs::directory_iterator t(p->path() / "task", ec2), tend; !ec2 && t != tend; t.increment(ec2)) {
      std::ifstream in(t->path() / "stat");
      std::string line;
      if (!std::getline(in, line)) continue;
      const auto f = stat_fields(line);
      if (f.size() < 37 || !all_digits(f[11]) || !all_digits(f[12]) || !all_digits(f[36])) continue;
      out[std::stoi(t->path().filename().string())] = {std::stoull(f[11]) + std::stoull(f[12]), std::stoi(f[36]), group, nice};
    }
  }
  return out;
}

double now_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void sleep_until(double t) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(std::floor(t));
  ts.tv_nsec = static_cast<long>((t - std::floor(t)) * 1e9);
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

std::string fmt(double v, int digits = 6) {
  std::ostringstream s;
  s << std::setprecision(digits) << v;
  return s.str();
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text) {
  if (text.empty()) throw LoadProbeInputError("--cpus: empty list");
  std::vector<int> cpus;
  std::set<int> seen;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string::npos) {
      lo = hi = parse_cpu_number(item, item);
    } else {
      lo = parse_cpu_number(item.substr(0, dash), item);
      hi = parse_cpu_number(item.substr(dash + 1), item);
      if (hi < lo) throw LoadProbeInputError("--cpus: range \"" + item + "\" goes backwards");
    }
    for (int c = lo; c <= hi; ++c) {
      if (!seen.insert(c).second) throw LoadProbeInputError("--cpus: cpu " + std::to_string(c) + " is listed twice");
      cpus.push_back(c);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return cpus;
}

double nice_weight(int nice) {
  static const double weight[40] = {88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
                                    9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
                                    1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
                                    110,   87,    70,    56,    45,    36,    29,    23,    18,    15};
  return weight[std::clamp(nice, -20, 19) + 20];
}

std::vector<int> parse_pid_list(const std::string& text) {
  std::vector<int> pids;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!all_digits(item) || item.size() > 9 || std::stoi(item) < 1)
      throw LoadProbeInputError("--pids: \"" + item + "\" is not a process id");
    pids.push_back(std::stoi(item));
    if (comma == std::string::npos) return pids;
    start = comma + 1;
  }
}

std::map<int, CpuTicks> parse_proc_stat(const std::string& text, const std::string& path) {
  std::map<int, CpuTicks> out;
  std::istringstream in(text);
  int lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    std::istringstream ls(line);
    std::string name;
    ls >> name;
    std::vector<unsigned long long> v;
    for (std::string f; ls >> f;) {
      if (!all_digits(f)) throw ProcError(path + ":" + std::to_string(lineno) + ": \"" + f + "\" is not a tick count in \"" + line + "\"");
      v.push_back(std::stoull(f));
    }
    if (v.size() < 4 || !all_digits(name.substr(3)))
      throw ProcError(path + ":" + std::to_string(lineno) + ": expected \"cpuN user nice system idle ...\", got \"" + line + "\"");
    v.resize(std::max<std::size_t>(v.size(), 8), 0);
    // user nice system idle iowait irq softirq steal [guest guest_nice: already counted in user and nice]
    CpuTicks t;
    t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    t.total = t.busy + v[3] + v[4];
    out[std::stoi(name.substr(3))] = t;
  }
  if (out.empty()) throw ProcError(path + ": no per-cpu lines (\"cpuN ...\")");
  return out;
}

Probe measure_load(const ProbeOptions& o) {
  const std::string stat_path = o.proc + "/stat";
  auto prev = parse_proc_stat(read_text(stat_path), stat_path);
  for (int c : o.cpus)
    if (!prev.count(c)) {
      std::string have;
      for (const auto& [k, _] : prev) have += (have.empty() ? "" : ",") + std::to_string(k);
      throw LoadProbeInputError("--cpus: cpu " + std::to_string(c) + " is not in " + stat_path + " (this machine has cpus " + have + ")");
    }
  auto prev_self = self_ticks(o.proc);
  auto prev_procs = o.pids.empty() ? std::map<int, std::pair<unsigned long long, int>>{} : process_ticks(o.proc, o.pids);
  if (!o.pids.empty() && prev_procs.empty()) {
    std::string list;
    for (int p : o.pids) list += (list.empty() ? "" : ",") + std::to_string(p);
    throw LoadProbeInputError("--pids: no process " + list + " in " + o.proc);
  }
  // autogroups off in the kernel: one group (the ids in /proc/PID/autogroup stay, unused by the scheduler)
  std::ifstream enabled(o.proc + "/sys/kernel/sched_autogroup_enabled");
  int on = 1;
  const bool groups_on = !(enabled >> on) || on != 0;
  const auto own = groups_on ? autogroup_of(fs::path(o.proc) / "self" / "autogroup") : std::pair<std::string, int>{"root", 0};
  auto prev_threads = o.autogroups ? all_thread_ticks(o.proc, groups_on) : std::map<int, ThreadTicks>{};
  Probe probe;
  probe.interval_s = o.interval_s;
  for (int c : o.cpus) probe.cpus.push_back(CpuSeries{c, {}, 0, 0, {}});
  const long n = std::max(1L, std::lround(o.window_s / o.interval_s));
  const double t0 = now_s();
  for (long i = 1; i <= n; ++i) {
    sleep_until(t0 + static_cast<double>(i) * o.interval_s);
    const auto cur = parse_proc_stat(read_text(stat_path), stat_path);
    const auto self = self_ticks(o.proc);
    const std::map<int, int> tasks = o.count_tasks ? runnable_tasks(o.proc) : std::map<int, int>{};
    std::map<int, double> charged;  // with pids: ticks of the measured processes per cpu in this interval
    decltype(prev_procs) procs;
    if (!o.pids.empty()) {
      procs = process_ticks(o.proc, o.pids);
      for (const auto& [tid, tc] : procs) {
        const auto was = prev_procs.find(tid);
        const unsigned long long before = was == prev_procs.end() ? 0 : std::min(was->second.first, tc.first);
        charged[tc.second] += static_cast<double>(tc.first - before);  // a new thread: its ticks so far
      }
    }
    // autogroups: ticks per cpu of the own autogroup, and per cpu and other autogroup (with its nice)
    std::map<int, double> own_ticks;
    std::map<int, std::map<std::string, std::pair<double, int>>> group_ticks;
    decltype(prev_threads) threads;
    if (o.autogroups) {
      threads = all_thread_ticks(o.proc, groups_on);
      for (const auto& [tid, t] : threads) {
        const auto was = prev_threads.find(tid);
        const double d = static_cast<double>(t.ticks - (was == prev_threads.end() ? 0 : std::min(was->second.ticks, t.ticks)));
        if (d <= 0) continue;
        if (t.group == own.first) {
          own_ticks[t.cpu] += d;
        } else {
          auto& g = group_ticks[t.cpu][t.group];
          g.first += d;
          g.second = t.nice;
        }
      }
    }
    for (CpuSeries& s : probe.cpus) {
      const auto it = cur.find(s.cpu);
      if (it == cur.end()) throw ProcError(stat_path + ": cpu " + std::to_string(s.cpu) + " went offline while sampling");
      const CpuTicks& a = prev.at(s.cpu);
      const CpuTicks& b = it->second;
      const double total = static_cast<double>(b.total - std::min(a.total, b.total));
      double busy = static_cast<double>(b.busy - std::min(a.busy, b.busy));
      if (self.second == s.cpu) busy -= static_cast<double>(self.first - std::min(prev_self.first, self.first));
      if (!o.pids.empty()) busy = charged[s.cpu];
      if (o.autogroups) {
        busy = own_ticks[s.cpu];
        std::vector<std::pair<double, double>> others;
        for (const auto& [g, tn] : group_ticks[s.cpu])
          if (total > 0) others.emplace_back(std::clamp(tn.first / total, 0.0, 1.0), nice_weight(tn.second) / nice_weight(own.second));
        s.others.push_back(std::move(others));
      }
      // a sample without a tick (an interval shorter than USER_HZ's) repeats the previous one
      s.busy.push_back(total > 0 ? std::clamp(busy / total, 0.0, 1.0) : (s.busy.empty() ? 0.0 : s.busy.back()));
      const auto k = tasks.find(s.cpu);
      if (k != tasks.end() && k->second > 0) {
        s.tasks_sum += k->second;
        ++s.tasks_samples;
      }
    }
    prev = cur;
    prev_self = self;
    prev_procs = procs;
    prev_threads = std::move(threads);
  }
  probe.elapsed_s = now_s() - t0;
  return probe;
}

double fit_period_s(const std::vector<double>& busy, double interval_s) {
  if (busy.empty()) return 2 * interval_s;
  const double mean = std::accumulate(busy.begin(), busy.end(), 0.0) / static_cast<double>(busy.size());
  int rises = 0;
  for (std::size_t i = 1; i < busy.size(); ++i)
    if (busy[i - 1] <= mean && busy[i] > mean) ++rises;
  const double window = static_cast<double>(busy.size()) * interval_s;
  return std::max(2 * interval_s, rises > 0 ? window / rises : window);
}

CpuLoad summarise_cpu(const CpuSeries& s, double interval_s, double tasks, const std::string& demand) {
  CpuLoad l;
  l.cpu = s.cpu;
  l.tasks = tasks >= 0 ? tasks : (s.tasks_samples > 0 ? s.tasks_sum / s.tasks_samples : 1.0);
  if (!s.busy.empty()) {
    l.busy_mean = std::accumulate(s.busy.begin(), s.busy.end(), 0.0) / static_cast<double>(s.busy.size());
    l.busy_min = *std::min_element(s.busy.begin(), s.busy.end());
    l.busy_max = *std::max_element(s.busy.begin(), s.busy.end());
  }
  sim::BusyLoad piece;
  piece.period = interval_s;
  piece.tasks = l.tasks;
  piece.demand = demand;
  for (std::size_t i = 0; i < s.busy.size(); ++i) {
    piece.duty = s.busy[i];
    double others = 1;
    if (i < s.others.size())
      for (const auto& [u, k] : s.others[i]) {  // another session: one more busy load, K = its weight ratio
        sim::BusyLoad g = piece;
        g.duty = u;
        g.tasks = k;
        others *= g.mean_availability();
      }
    l.others_loss += (1 - others) / static_cast<double>(s.busy.size());
    l.availability.push_back(piece.mean_availability() * others);
  }
  if (!l.availability.empty())
    l.mean_availability = std::accumulate(l.availability.begin(), l.availability.end(), 0.0) / static_cast<double>(l.availability.size());
  l.fitted = piece;
  l.fitted.duty = l.busy_mean;
  l.fitted.period = fit_period_s(s.busy, interval_s);
  l.fitted.random = "phase";
  return l;
}

std::string profile_text(const CpuLoad& load, double interval_s, const std::string& comment) {
  std::ostringstream out;
  std::istringstream c(comment);
  for (std::string line; std::getline(c, line);) out << "% " << line << "\n";
  const std::size_t n = load.availability.size();
  double last_t = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = std::round(load.availability[i] * 1e6) / 1e6;  // 6 digits: 1e-6 of the core
    if (i > 0 && a == std::round(load.availability[i - 1] * 1e6) / 1e6) continue;
    last_t = static_cast<double>(i) * interval_s;
    out << fmt(last_t, 9) << " " << fmt(a) << "\n";
  }
  // SimGrid repeats the events with period t_last + LOOPAFTER: the window's length
  out << "LOOPAFTER " << fmt(static_cast<double>(n) * interval_s - last_t, 9) << "\n";
  return out.str();
}

std::string load_file_text(const std::vector<CpuLoad>& loads, const std::vector<std::string>& hosts,
                           const std::vector<std::string>& profile_names, const std::string& rule,
                           const std::string& header) {
  std::ostringstream out;
  std::istringstream h(header);
  for (std::string line; std::getline(h, line);) out << "# " << line << "\n";
  for (std::size_t k = 0; k < loads.size(); ++k) {
    const CpuLoad& l = loads[k];
    const sim::BusyLoad& b = l.fitted;
    const std::string speed = "speed " + hosts[k] + " " + profile_names[k];
    const std::string busy = "busy " + hosts[k] + " duty=" + fmt(b.duty, 4) + " period=" + fmt(b.period, 4) +
                             " tasks=" + fmt(b.tasks, 3) + " demand=" + b.demand + " random=" + b.random;
    out << "# cpu " << l.cpu << ": busy " << fmt(100 * l.busy_mean, 3) << "% (samples " << fmt(100 * l.busy_min, 3) << ".."
        << fmt(100 * l.busy_max, 3) << "%), tasks " << fmt(l.tasks, 3) << ", mean availability " << fmt(l.mean_availability, 4);
    if (l.others_loss > 0) out << " (other sessions take " << fmt(100 * l.others_loss, 3) << "% by their CFS weight)";
    out << "\n";
    out << (rule == "speed" ? "" : "# ") << speed << "\n";
    out << (rule == "busy" ? "" : "# ") << busy << "\n";
  }
  return out.str();
}

}  // namespace mksim::calibration
