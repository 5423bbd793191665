// The bench loop with resume, the conversion of raw output to records (statistics, fits), and the report.
#include "calibration/bench.hpp"

#include "calibration/fit.hpp"
#include "calibration/pattern_figures.hpp"
#include "calibration/stats.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>

namespace mksim::calibration {
namespace {

results::CalibRegime regime(const char* name, const LineFit& fit) {
  return {name,
          static_cast<std::uint64_t>(fit.from_bytes),
          static_cast<std::uint64_t>(fit.to_bytes),
          fit.rho_s,
          fit.beta_s_per_byte,
          fit.rel_rss,
          fit.points};
}

std::size_t kernel_index(const std::string& path, const std::string& name) {
  const auto k = kernel_from_name(name);
  if (!k) throw std::runtime_error(path + ": unknown kernel '" + name + "' in /kernels");
  return static_cast<std::size_t>(*k);
}

std::string format(const char* fmt, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, fmt, value);
  return buffer;
}

std::string bandwidth(double beta_s_per_byte) {
  return beta_s_per_byte > 0 ? format("%.1f MB/s", 1e-6 / beta_s_per_byte) : std::string("n/a (beta <= 0)");
}

void print_fit(std::ostream& out, const results::CalibKernel& kernel) {
  if (kernel.fit.empty()) return;
  out << "  fit rho + beta*D on the medians:\n";
  for (const results::CalibRegime& r : kernel.fit) {
    char line[256];
    std::snprintf(line, sizeof line, "    %-5s %10llu..%-10llu B  rho %10.3f us  beta %12.6f ns/B  (%s)  %llu sizes, rel rss %.2e\n",
                  r.name.c_str(), static_cast<unsigned long long>(r.from_bytes),
                  static_cast<unsigned long long>(r.to_bytes), r.rho_s * 1e6, r.beta_s_per_byte * 1e9,
                  bandwidth(r.beta_s_per_byte).c_str(), static_cast<unsigned long long>(r.points), r.rel_rss);
    out << line;
  }
  if (kernel.breakpoint_bytes > 0) out << "    breakpoint " << kernel.breakpoint_bytes << " B\n";
}

}  // namespace

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

results::CalibKernel make_kernel_record(const MicrobenchOutput& output, const std::string& date_utc, double wall_s) {
  results::CalibKernel k;
  k.name = kernel_name(output.kernel);
  k.unit = output.unit;
  k.date_utc = date_utc;
  k.wall_s = wall_s;
  std::vector<double> sizes, medians;
  for (const RawSize& raw : output.sizes) {
    const Summary s = summarize(raw.times_s);
    results::CalibSize c;
    c.size_bytes = raw.size_bytes;
    c.iterations = raw.iterations;
    c.times_s = raw.times_s;
    for (bool flag : s.outlier) c.outlier.push_back(flag ? 1 : 0);
    c.mean_s = s.mean;
    c.median_s = s.median;
    c.stddev_s = s.stddev;
    c.ci95_low_s = s.ci95_low;
    c.ci95_high_s = s.ci95_high;
    k.sizes.push_back(std::move(c));
    sizes.push_back(static_cast<double>(raw.size_bytes));
    medians.push_back(s.median);
  }
  std::sort(k.sizes.begin(), k.sizes.end(),
            [](const results::CalibSize& a, const results::CalibSize& b) { return a.size_bytes < b.size_bytes; });
  const std::size_t distinct = std::set<double>(sizes.begin(), sizes.end()).size();
  const bool positive = std::all_of(medians.begin(), medians.end(), [](double m) { return m > 0; });
  const FitKind kind = fit_kind_of(output.kernel);
  if (positive && kind == FitKind::TWO_REGIMES && distinct >= 6) {
    const TwoRegimeFit fit = fit_two_regimes(sizes, medians, 3);
    k.fit = {regime("short", fit.short_regime), regime("long", fit.long_regime)};
    k.breakpoint_bytes = static_cast<std::uint64_t>(fit.breakpoint_bytes);
  } else if (positive && kind != FitKind::NONE && distinct >= 2) {
    k.fit = {regime("all", fit_line(sizes, medians))};
  }
  return k;
}

BenchReport run_bench(const BenchRequest& request, std::ostream& log) {
  const std::string& path = request.output;
  const std::string config = describe(request.config);
  const auto started = std::chrono::steady_clock::now();
  results::CalibDb db;
  if (std::filesystem::exists(path)) {
    db = results::read_calib_db(path);
    if (db.machine != request.machine)
      throw ResumeMismatch(path + ": holds machine '" + db.machine + "', not '" + request.machine +
                               "' (use another -o, or --machine " + db.machine + " to resume it)");
    if (db.np != request.config.np || db.config != config)
      throw ResumeMismatch(path + ": was measured with other options, cannot resume it with these\n  file: " +
                               db.config + "\n  now:  " + config + "\n(use another -o, or remove the file)");
    for (const results::CalibKernel& k : db.kernels) kernel_index(path, k.name);
  } else {
    db.machine = request.machine;
    db.np = request.config.np;
    db.config = config;
  }
  BenchReport report;
  for (Kernel kernel : request.kernels) {
    const std::string name = kernel_name(kernel);
    if (std::any_of(db.kernels.begin(), db.kernels.end(),
                    [&](const results::CalibKernel& k) { return k.name == name; })) {
      log << "mkcalib: skipping " << name << " (already in " << path << ")\n";
      report.skipped.push_back(kernel);
      continue;
    }
    const std::string date = utc_now();
    const auto t0 = std::chrono::steady_clock::now();
    const MicrobenchOutput output = run_microbench(request.launcher, request.config, kernel);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (db.kernels.empty()) db.date_utc = date;
    if (db.hostname.empty()) db.hostname = output.hostname;
    if (db.mpi_library.empty()) db.mpi_library = output.mpi_library;
    db.kernels.push_back(make_kernel_record(output, date, wall));
    std::stable_sort(db.kernels.begin(), db.kernels.end(), [&](const auto& a, const auto& b) {
      return kernel_index(path, a.name) < kernel_index(path, b.name);
    });
    results::write_calib_db(path, db);
    report.measured.push_back(kernel);
    log << "mkcalib: " << name << ": " << output.sizes.size() << " size(s) in " << format("%.1f", wall)
        << " s, saved to " << path << "\n";
    log.flush();
  }
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

MachineFigures machine_figures(const results::CalibDb& db) {
  MachineFigures f;
  for (const results::CalibKernel& k : db.kernels) {
    if (k.fit.empty()) continue;
    if (k.name == "pingpong") {
      f.has_pingpong = true;
      f.pingpong = k.fit;
      f.breakpoint_bytes = k.breakpoint_bytes;
    } else if (k.name == "send_overhead") {
      f.has_s = true;
      f.s_s = k.fit.front().rho_s;
    } else if (k.name == "recv_overhead") {
      f.has_r = true;
      f.r_s = k.fit.front().rho_s;
    } else if (k.name == "stream") {
      f.has_o = true;
      f.o_s = k.fit.front().rho_s;
    }
  }
  return f;
}

std::string format_report(const results::CalibDb& db) {
  std::ostringstream out;
  out << "machine      " << db.machine << "\n"
      << "date_utc     " << db.date_utc << "\n"
      << "hostname     " << db.hostname << "\n"
      << "mpi_library  " << db.mpi_library << "\n"
      << "np           " << db.np << "\n"
      << "config       " << db.config << "\n";
  for (const results::CalibKernel& k : db.kernels) {
    const bool flops = k.unit == "s/flop";
    out << "\nkernel " << k.name << " (" << (flops ? "time per flop over working-set sizes" : "time per operation")
        << "), measured " << k.date_utc << " in " << format("%.1f", k.wall_s) << " s\n";
    char line[256];
    if (flops)
      std::snprintf(line, sizeof line, "  %12s %8s %4s %12s %12s %25s %10s %8s\n", "working_set_B", "passes", "reps",
                    "mean_ns/flop", "median_ns", "ci95_ns", "Mflop/s", "outliers");
    else
      std::snprintf(line, sizeof line, "  %12s %8s %4s %12s %12s %25s %8s\n", "size_B", "iters", "reps", "mean_us",
                    "median_us", "ci95_us", "outliers");
    out << line;
    const double scale = flops ? 1e9 : 1e6;
    for (const results::CalibSize& s : k.sizes) {
      std::size_t outliers = 0;
      for (std::uint8_t flag : s.outlier) outliers += flag != 0;
      const std::string ci = format("%.4f", s.ci95_low_s * scale) + ".." + format("%.4f", s.ci95_high_s * scale);
      if (flops)
        std::snprintf(line, sizeof line, "  %12llu %8llu %4zu %12.4f %12.4f %25s %10.1f %8zu\n",
                      static_cast<unsigned long long>(s.size_bytes), static_cast<unsigned long long>(s.iterations),
                      s.times_s.size(), s.mean_s * scale, s.median_s * scale, ci.c_str(),
                      s.median_s > 0 ? 1e-6 / s.median_s : 0.0, outliers);
      else
        std::snprintf(line, sizeof line, "  %12llu %8llu %4zu %12.4f %12.4f %25s %8zu\n",
                      static_cast<unsigned long long>(s.size_bytes), static_cast<unsigned long long>(s.iterations),
                      s.times_s.size(), s.mean_s * scale, s.median_s * scale, ci.c_str(), outliers);
      out << line;
    }
    print_fit(out, k);
  }
  const MachineFigures f = machine_figures(db);
  out << "\nmachine figures (np=" << db.np << ")\n";
  char line[256];
  if (f.has_pingpong) {
    std::snprintf(line, sizeof line, "  %-24s %-20s %12s  %s\n", "pingpong regime", "sizes_B", "latency_us",
                  "bandwidth (1/beta)");
    out << line;
    for (const results::CalibRegime& r : f.pingpong) {
      const std::string range = std::to_string(r.from_bytes) + ".." + std::to_string(r.to_bytes);
      std::snprintf(line, sizeof line, "  %-24s %-20s %12.3f  %s\n", r.name.c_str(), range.c_str(), r.rho_s * 1e6,
                    bandwidth(r.beta_s_per_byte).c_str());
      out << line;
    }
    if (f.breakpoint_bytes > 0) out << "  breakpoint               " << f.breakpoint_bytes << " B\n";
  } else {
    out << "  latency, bandwidth       (pingpong not measured)\n";
  }
  const auto overhead = [&](const char* label, bool has, double value, const char* kernel) {
    std::snprintf(line, sizeof line, "  %-24s ", label);
    out << line;
    if (has)
      out << format("%.3f", value * 1e6) << " us\n";
    else
      out << "(" << kernel << " not measured)\n";
  };
  overhead("s (send overhead)", f.has_s, f.s_s, "send_overhead");
  overhead("r (receive overhead)", f.has_r, f.r_s, "recv_overhead");
  overhead("o (per-message)", f.has_o, f.o_s, "stream");
  if (const auto patterns = measured_patterns(db); !patterns.empty())
    out << "\npattern figures per message (seed 001 table 2; mkcalib patterns puts them in a platform)\n" << format_patterns(patterns);
  return out.str();
}

}  // namespace mksim::calibration
