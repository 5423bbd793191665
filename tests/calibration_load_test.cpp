// mkcalib load (issue 18): /proc/stat parsing and cpu lists, the mapping from a busy fraction to a rank's
// availability (the busy rule's semantics), profiles SimGrid's way, refusals with exit codes, and a real measurement
// of stress-ng at 50% on core 0 whose load file mksim takes and which slows a compute-bound skeleton by 1 + u.
#include "calibration/load_probe.hpp"
#include "sim/cli/calib_cli.hpp"
#include "sim/engine/load.hpp"

#include "process_util.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using namespace mksim::calibration;

namespace {

fs::path tmpdir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("mksim_calib_load_" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / ("mksim_calib_load_" + std::to_string(::getpid())), ec);
    });
    return d;
  }();
  return dir;
}

std::string write(const std::string& name, const std::string& text) {
  const fs::path p = tmpdir() / name;
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p.string();
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct CliRun {
  int code;
  std::string out, err;
};

CliRun mkcalib(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = mksim::sim::run_mkcalib(args, out, err);
  return {code, out.str(), err.str()};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

/// The share of core 0 a spin loop gets for `seconds` of wall time in a session of its own at nice -19 (CPU / wall).
double spin_share(double seconds) {
  int fd[2];
  if (::pipe(fd) != 0) return 0;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    if (FILE* f = std::fopen("/proc/self/autogroup", "w")) {
      std::fputs("-19", f);
      std::fclose(f);
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    ::sched_setaffinity(0, sizeof set, &set);
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    volatile double x = 0;
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) x = x + 1;
    const double share = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC / seconds;
    (void)!::write(fd[1], &share, sizeof share);
    ::_exit(0);
  }
  ::close(fd[1]);
  double share = 0;
  if (pid < 0 || ::read(fd[0], &share, sizeof share) != sizeof share) share = 0;
  ::close(fd[0]);
  if (pid > 0) ::waitpid(pid, nullptr, 0);
  return share;
}

}  // namespace

TEST(CalibLoad, CpuLists) {
  EXPECT_EQ(parse_cpu_list("0"), (std::vector<int>{0}));
  EXPECT_EQ(parse_cpu_list("1,0"), (std::vector<int>{1, 0}));
  EXPECT_EQ(parse_cpu_list("0,2-4"), (std::vector<int>{0, 2, 3, 4}));
  EXPECT_NE(error_of([] { parse_cpu_list("0,0"); }).find("cpu 0 is listed twice"), std::string::npos);
  EXPECT_NE(error_of([] { parse_cpu_list("3-1"); }).find("goes backwards"), std::string::npos);
  EXPECT_NE(error_of([] { parse_cpu_list("a"); }).find("\"a\" is not a cpu number"), std::string::npos);
  EXPECT_NE(error_of([] { parse_cpu_list("0,,1"); }).find("\"\" is not a cpu number"), std::string::npos);
  EXPECT_NE(error_of([] { parse_cpu_list("-1"); }).find("is not a cpu number"), std::string::npos);
}

TEST(CalibLoad, ProcStatLines) {
  const auto t = parse_proc_stat("cpu  9 9 9 9 9 9 9 9 9 9\ncpu0 10 1 2 100 3 4 5 6 7 8\ncpu1 1 0 0 9\nintr 5\n", "stat");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.at(0).busy, 10u + 1 + 2 + 4 + 5 + 6);  // guest (7, 8) is inside user and nice already
  EXPECT_EQ(t.at(0).total, t.at(0).busy + 100 + 3);
  EXPECT_EQ(t.at(1).busy, 1u);
  EXPECT_EQ(t.at(1).total, 10u);
  EXPECT_EQ(error_of([] { parse_proc_stat("cpu0 1 2 x 4\n", "/p/stat"); }), "/p/stat:1: \"x\" is not a tick count in \"cpu0 1 2 x 4\"");
  EXPECT_NE(error_of([] { parse_proc_stat("cpu 1 2\ncpu0 1 2\n", "/p/stat"); }).find("/p/stat:2: expected"), std::string::npos);
  EXPECT_EQ(error_of([] { parse_proc_stat("intr 1\n", "/p/stat"); }), "/p/stat: no per-cpu lines (\"cpuN ...\")");
}

// A rank beside K tasks busy a fraction u: demand=cpu gives 1/(1+u) at K = 1 (stress-ng, sim/engine/README.md),
// demand=wall 1 - u/2; the profile holds one piece per sample and repeats with the window's period.
TEST(CalibLoad, AvailabilityFollowsTheBusyRuleAndTheProfileRepeats) {
  CpuSeries s{0, {0.5, 0.5, 0.0, 1.0}, 0, 0, {}};
  const CpuLoad cpu = summarise_cpu(s, 0.05, 1, "cpu");
  ASSERT_EQ(cpu.availability.size(), 4u);
  EXPECT_NEAR(cpu.availability[0], 1 / 1.5, 1e-12);
  EXPECT_NEAR(cpu.availability[2], 1.0, 1e-12);
  EXPECT_NEAR(cpu.availability[3], 0.5, 1e-12);
  EXPECT_NEAR(cpu.busy_mean, 0.5, 1e-12);
  EXPECT_NEAR(cpu.fitted.duty, 0.5, 1e-12);
  EXPECT_EQ(cpu.fitted.demand, "cpu");
  const CpuLoad wall = summarise_cpu(s, 0.05, 1, "wall");
  EXPECT_NEAR(wall.availability[0], 0.75, 1e-12);
  const CpuLoad two = summarise_cpu(s, 0.05, 2, "wall");
  EXPECT_NEAR(two.availability[3], 1.0 / 3, 1e-12);
  // the profile read back by mksim's reader: pieces at 0, 0.1, 0.15, period 0.2
  const std::string prof = write("p.prof", profile_text(cpu, 0.05, "test"));
  mksim::sim::Availability a = mksim::sim::read_profile(prof);
  EXPECT_NEAR(a.value_at(0.07), 1 / 1.5, 1e-6);
  EXPECT_NEAR(a.value_at(0.12), 1.0, 1e-6);
  EXPECT_NEAR(a.value_at(0.17), 0.5, 1e-6);
  EXPECT_NEAR(a.value_at(0.27), 1 / 1.5, 1e-6);  // the next period
  EXPECT_NEAR(a.integral(0, 2.0), 10 * 0.05 * (2 / 1.5 + 1.5), 1e-5);
  // cycles: one rise above the mean in 4 samples -> 0.2 s; a constant series is not resolved (two samples)
  EXPECT_NEAR(fit_period_s({0, 1, 0, 1, 0, 1}, 0.05), 0.1, 1e-12);
  EXPECT_NEAR(fit_period_s({0.5, 0.5, 0.5}, 0.05), 0.15, 1e-12);
}

// Other sessions (autogroups) are one more busy load each, with K = their CFS weight over the rank's session's:
// a build at nice 0 beside a session at nice -19 takes 1024 / (1024 + 71755) of the core while it runs.
TEST(CalibLoad, OtherSessionsCountByTheirWeight) {
  EXPECT_DOUBLE_EQ(nice_weight(0), 1024);
  EXPECT_DOUBLE_EQ(nice_weight(-19), 71755);
  EXPECT_DOUBLE_EQ(nice_weight(19), 15);
  EXPECT_DOUBLE_EQ(nice_weight(-40), 88761);  // clamped to -20
  CpuSeries s{0, {0.5, 0.0}, 0, 0, {{{1.0, 1024.0 / 71755}}, {{1.0, 1.0}, {0.5, 1.0}}}};
  const CpuLoad l = summarise_cpu(s, 0.2, 1, "cpu");
  ASSERT_EQ(l.availability.size(), 2u);
  EXPECT_NEAR(l.availability[0], (1 / 1.5) * 71755 / (71755 + 1024.0), 1e-12);
  EXPECT_NEAR(l.availability[1], 0.5 * (1 / 1.5), 1e-12);  // two sessions at the same weight: 1/(1+u) each
  EXPECT_NEAR(l.others_loss, 0.5 * (1024 / (71755 + 1024.0)) + 0.5 * (1 - 0.5 / 1.5), 1e-12);
}

TEST(CalibLoad, LoadFileIsOneMksimTakes) {
  CpuSeries s{1, {0.2, 0.4}, 0, 0, {}};
  const CpuLoad l = summarise_cpu(s, 0.1, 1, "cpu");
  write("lf/a.cpu1.prof", profile_text(l, 0.1, "x"));
  const std::string lf = write("lf/a.txt", load_file_text({l}, {"rank:0"}, {"a.cpu1.prof"}, "speed", "header"));
  const auto spec = mksim::sim::read_load_spec(lf);
  ASSERT_EQ(spec.hosts.size(), 1u);
  EXPECT_EQ(spec.hosts[0].hosts, "rank:0");
  EXPECT_EQ(fs::path(spec.hosts[0].profile).filename(), "a.cpu1.prof");
  const std::string lb = write("lf/b.txt", load_file_text({l}, {"node-3"}, {"a.cpu1.prof"}, "busy", "header"));
  const auto busy = mksim::sim::read_load_spec(lb);
  ASSERT_EQ(busy.hosts.size(), 1u);
  EXPECT_TRUE(busy.hosts[0].profile.empty());
  EXPECT_NEAR(busy.hosts[0].busy.duty, 0.3, 1e-9);
  EXPECT_EQ(busy.hosts[0].busy.demand, "cpu");
}

// Runnable tasks counted per cpu from a proc tree (a fixed one: no ticks pass, so busy stays 0).
TEST(CalibLoad, TasksCountedFromTaskStat) {
  const std::string line = "1 (x y) R 1 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 1 1 1 1 1 1 1 1 1 0 0 0 0 0 0 0 17 %d 0 0\n";
  auto stat_of = [&](int cpu) {
    char buf[256];
    std::snprintf(buf, sizeof buf, line.c_str(), cpu);
    return std::string(buf);
  };
  write("proc/stat", "cpu0 1 0 0 10\ncpu1 1 0 0 10\n");
  write("proc/self/stat", stat_of(1));
  write("proc/100/task/100/stat", stat_of(0));
  write("proc/100/task/101/stat", stat_of(0));
  write("proc/200/task/200/stat", stat_of(1));
  ProbeOptions o;
  o.cpus = {0};
  o.window_s = 0.04;
  o.interval_s = 0.02;
  o.count_tasks = true;
  o.proc = (tmpdir() / "proc").string();
  const Probe p = measure_load(o);
  ASSERT_EQ(p.cpus.size(), 1u);
  EXPECT_EQ(p.cpus[0].busy, (std::vector<double>{0, 0}));
  const CpuLoad l = summarise_cpu(p.cpus[0], o.interval_s, -1, "cpu");
  EXPECT_DOUBLE_EQ(l.tasks, 2.0);
}

TEST(CalibLoad, RefusesBadInput) {
  const std::string out = (tmpdir() / "x.txt").string();
  auto r = mkcalib({"load", "--cpus", "0,x", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--cpus: \"x\" is not a cpu number"), std::string::npos) << r.err;
  r = mkcalib({"load", "--window", "0", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--window must be a positive number"), std::string::npos) << r.err;
  r = mkcalib({"load", "--window", "1", "--interval", "0.001", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--interval must be at least 0.02 s"), std::string::npos) << r.err;
  r = mkcalib({"load", "--cpus", "4096", "--window", "1", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cpu 4096 is not in /proc/stat (this machine has cpus 0"), std::string::npos) << r.err;
  r = mkcalib({"load", "--tasks", "zero", "-o", out});
  EXPECT_EQ(r.code, 2);
  r = mkcalib({"load", "--hosts", "a,b", "--cpus", "0", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--hosts names 2 host(s) for 1 cpu(s)"), std::string::npos) << r.err;
  r = mkcalib({"load", "--pids", "12,x", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--pids: \"x\" is not a process id"), std::string::npos) << r.err;
  r = mkcalib({"load", "--pids", "999999999", "--window", "1", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--pids: no process 999999999 in /proc"), std::string::npos) << r.err;
  r = mkcalib({"load", "--pids", "1", "--autogroups", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--pids and --autogroups"), std::string::npos) << r.err;
  r = mkcalib({"load", "--proc", "/nonexistent-proc", "--window", "1", "-o", out});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot read /nonexistent-proc/stat"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

// The real thing: stress-ng busy 50% of its CPU time on core 0 (10 ms slices, in a session of its own whose autogroup
// has nice -19, so that other sessions' jobs take little from it) while mkcalib samples core 0 for 4 s every 0.2 s.
// Skipped when a spin loop at that priority gets under 85% of core 0 (stress-ng could not keep its duty).
// 1. `mkcalib load --pids STRESS_NG`: the CPU time of stress-ng's processes on core 0, which must be 50% within
//    0.08 (stress-ng's own regulation of its duty, /proc's 10 ms ticks, its session losing a little to other jobs:
//    calibration/README.md, "mkcalib load", has the figures this tolerance comes from);
// 2. the whole core (every task), sampled at the same time: on a shared machine it holds other jobs too, so it is
//    checked only when a baseline of 1 s before showed core 0 under 15% busy: 1 - (1 - 0.5)(1 - b) within 0.1
//    (two independent loads);
// 3. mksim on the written file: a rank computing 20 s on core 0's host takes 20/mean(a) s, and with K = 1,
//    demand=cpu (a = 1/(1+u)) that is about 20 (1 + u) (a little less: a is convex in the sampled u).
TEST(CalibLoad, MeasuresStressNgAtHalfAndSlowsAReplay) {
  if (std::system("command -v stress-ng >/dev/null 2>&1") != 0) GTEST_SKIP() << "stress-ng is not installed";
  // stress-ng can keep its duty only if its session gets core 0 when it asks: a spin loop at the same priority first
  const double spin = spin_share(0.3);
  if (spin < 0.85) GTEST_SKIP() << "a spin loop in a session at nice -19 got only " << 100 * spin << "% of core 0 (other jobs at that priority)";
  ProbeOptions core;
  core.cpus = {0};
  core.window_s = 1;
  core.interval_s = 0.2;
  const double b = summarise_cpu(measure_load(core).cpus.at(0), 0.2, 1, "cpu").busy_mean;

  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setsid();
    if (FILE* f = std::fopen("/proc/self/autogroup", "w")) {  // not allowed: stress-ng runs at the default weight
      std::fputs("-19", f);
      std::fclose(f);
    }
    ::execlp("stress-ng", "stress-ng", "--cpu", "1", "--cpu-load", "50", "--cpu-load-slice", "10", "--cpu-method", "loop",
             "--taskset", "0", "-t", "30", "--quiet", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const std::string lf = (tmpdir() / "stress.txt").string();
  core.window_s = 4;
  Probe whole;
  std::thread sampler([&] { whole = measure_load(core); });
  const CliRun r = mkcalib({"load", "--cpus", "0", "--window", "4", "--interval", "0.2", "--pids", std::to_string(pid), "-o", lf});
  sampler.join();
  ::kill(-pid, SIGTERM);  // stress-ng's session (its own process group): its worker too
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_EQ(r.code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("\\n0 +([0-9.e-]+) +[0-9.e-]+ +[0-9.e-]+ +[0-9.e-]+ +([0-9.e-]+)"))) << r.out;
  const double u = std::stod(m[1]), mean_a = std::stod(m[2]);
  const double w = summarise_cpu(whole.cpus.at(0), 0.2, 1, "cpu").busy_mean, expected_w = 1 - (1 - 0.5) * (1 - b);
  std::cout << "spin loop at nice -19: " << spin << " of core 0; stress-ng's processes: " << u << " of core 0; the whole core " << w << " (baseline " << b << ", two independent loads: "
            << expected_w << ")\n" << r.out;
  EXPECT_NEAR(u, 0.5, 0.08) << r.out;
  if (b < 0.15) {
    EXPECT_NEAR(w, expected_w, 0.1);
  }
  EXPECT_NE(read(lf).find("speed rank:0 stress.cpu0.prof"), std::string::npos) << read(lf);

  const std::string skel = write("spin.json", R"J({"format":"mksim-skeleton","version":1,"name":"spin","programs":[
    {"ranks":"rank == 0","body":[{"op":"compute","seconds":20}]}]})J");
  auto predict = [&](const std::string& extra) {
    const auto [code, text] = mksim::test::shell(std::string(MKSIM_BINARY_DIR) + "/sim/mksim --platform t3e --P 1 --skeleton " + skel + extra + " 2>&1");
    EXPECT_EQ(code, 0) << text;
    std::smatch t;
    EXPECT_TRUE(std::regex_search(text, t, std::regex("predicted time +([0-9.e+-]+)"))) << text;
    return t.size() > 1 ? std::stod(t[1]) : 0.0;
  };
  const double plain = predict(""), loaded = predict(" --load " + lf);
  ASSERT_NEAR(plain, 20, 1e-6);
  const double factor = loaded / plain;
  std::cout << "mksim: " << plain << " s unloaded, " << loaded << " s under the measured load (x" << factor << ")\n";
  EXPECT_NEAR(factor, 1 / mean_a, 0.01 / mean_a);  // the profile's mean (within a partial last period)
  EXPECT_NEAR(factor, 1 + u, 0.03);                 // Jensen: mean(1/(1+u_i)) against 1/(1+mean u)
  EXPECT_NEAR(factor, 1.5, 0.08);
}
