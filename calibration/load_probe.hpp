// mkcalib load (issue 18): a machine's background load measured from /proc samples over a window, written as the
// load file that `mksim --load` takes (sim/engine/load.hpp): per-core speed profiles, or fitted `busy` rules.
#pragma once

#include "sim/engine/load.hpp"

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace mksim::calibration {

/** @brief Bad input to `mkcalib load` (a cpu list, a window, a cpu the machine does not have): exit code 2. */
class LoadProbeInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** @brief /proc could not be read or has an unexpected format: what() names the file (and line). */
class ProcError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** @brief "0,1,4-6" -> {0, 1, 4, 5, 6}, in the order given (the k-th cpu is rank k's core). Duplicates, negative
 *  numbers, empty items and reversed ranges are errors. */
std::vector<int> parse_cpu_list(const std::string& text);

/** @brief One cpu line of /proc/stat in USER_HZ ticks: busy = user + nice + system + irq + softirq + steal (guest
 *  time is inside user), total = busy + idle + iowait. */
struct CpuTicks {
  unsigned long long busy = 0;
  unsigned long long total = 0;
};

/** @brief The per-cpu lines ("cpuN ...") of a /proc/stat text; `path` names it in errors ("PATH:LINE: what"). */
std::map<int, CpuTicks> parse_proc_stat(const std::string& text, const std::string& path);

/** @brief What to sample and how. */
struct ProbeOptions {
  std::vector<int> cpus;       ///< cores to measure, in rank order
  double window_s = 10;        ///< sampling lasts this long
  double interval_s = 0.2;     ///< one sample per interval (its busy fraction is one profile piece)
  bool count_tasks = false;    ///< also count the runnable tasks per core (/proc/PID/task/TID/stat) at each sample
  /// not empty: measure only these processes and their descendants (every thread's utime + stime from
  /// /proc/PID/task/TID/stat, charged to the cpu it is on at the sample), not every task of the cores
  std::vector<int> pids;
  /// weigh sessions (CFS autogroups): the busy fraction is that of the tasks in the sampler's own autogroup (the
  /// session the program will run in); each other autogroup's busy fraction is kept apart with its weight ratio
  bool autogroups = false;
  std::string proc = "/proc";  ///< the proc file system (tests point it elsewhere)
};

/** @brief The samples of one core. */
struct CpuSeries {
  int cpu = 0;
  std::vector<double> busy;  ///< busy fraction of each interval, the sampler's own CPU time removed, in [0, 1]
  double tasks_sum = 0;      ///< runnable other tasks summed over the samples that had at least one (count_tasks)
  int tasks_samples = 0;     ///< how many samples had at least one
  /// autogroups: per sample, each other autogroup's (busy fraction, weight ratio w_group / w_own)
  std::vector<std::vector<std::pair<double, double>>> others;
};

/** @brief CFS's weight of a nice value (the kernel's sched_prio_to_weight: 1024 at 0, x1.25 per step). */
double nice_weight(int nice);

/** @brief A measurement: one series per core, all of the same length. */
struct Probe {
  double interval_s = 0;
  double elapsed_s = 0;  ///< wall time from the first to the last sample
  std::vector<CpuSeries> cpus;
};

/** @brief "12,345" -> {12, 345}; anything but positive numbers is an error. */
std::vector<int> parse_pid_list(const std::string& text);

/** @brief Samples /proc/stat (and /proc/self/stat for the sampler's own time) every interval for the window, at
 *  absolute deadlines of CLOCK_MONOTONIC. Throws LoadProbeInputError for a cpu /proc/stat does not list and
 *  ProcError when /proc cannot be read; with `pids`, LoadProbeInputError when none of them exists. */
Probe measure_load(const ProbeOptions& options);

/** @brief The load of one core as `mksim --load` models it: the `busy` rule's semantics (BusyLoad) applied to each
 *  sample. With autogroups, each other autogroup g busy u_g is one more such load with K = w_g / w_own (the rank's
 *  session gets w_own / (w_own + w_g) of the core while g runs), and the sample's availability is the product. A CPU-bound rank on a core whose background was busy a fraction u of an interval, when alone, gets the
 *  availability a = 1 - d' K/(1+K) there (K background tasks share the core with it under CFS), with d' = u for
 *  demand=wall and d' = u(1+K) / (u(1+K) + 1 - u) for demand=cpu (the background's busy time is CPU time of its own,
 *  stretched by the rank's share; for K = 1, a = 1/(1+u)). */
struct CpuLoad {
  int cpu = 0;
  double busy_mean = 0, busy_min = 0, busy_max = 0;
  double tasks = 1;                   ///< K used
  std::vector<double> availability;   ///< one per sample
  double mean_availability = 1;       ///< mean of `availability` (the profile's mean over its period)
  double others_loss = 0;             ///< autogroups: mean over the samples of 1 - (the other sessions' factor)
  sim::BusyLoad fitted;               ///< duty = busy_mean, period from the on-off runs (see fit_period_s)
};

/** @brief The period of the on-off cycles of a busy series: its length over the number of times it rises above its
 *  mean, at least two intervals (a cycle shorter than that is not resolved by the samples; its mean still is). */
double fit_period_s(const std::vector<double>& busy, double interval_s);

/** @brief Summarises one core (tasks < 0: the mean runnable count the series recorded, 1 if none). */
CpuLoad summarise_cpu(const CpuSeries& series, double interval_s, double tasks, const std::string& demand);

/** @brief A SimGrid speed profile of the availability series: "TIME VALUE" at each change from 0 on, LOOPAFTER so that
 *  it repeats with the window's period (the background taken as stationary), '%' comment lines first. */
std::string profile_text(const CpuLoad& load, double interval_s, const std::string& comment);

/** @brief The load file: for the k-th core, `speed HOST PROFILE` (rule "speed") or `busy HOST duty= period= tasks=
 *  demand= random=phase` (rule "busy"), the other form as a comment; '#' header lines first. */
std::string load_file_text(const std::vector<CpuLoad>& loads, const std::vector<std::string>& hosts,
                           const std::vector<std::string>& profile_names, const std::string& rule,
                           const std::string& header);

}  // namespace mksim::calibration
