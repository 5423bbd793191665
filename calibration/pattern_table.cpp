// Seed 001 table 2 as input: reader, and the runs its lines stand for.
#include "calibration/pattern_table.hpp"

#include "calibration/fit.hpp"
#include "calibration/fit_platform.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

namespace mksim::calibration {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t c = line.find(',', start);
    out.push_back(trim(line.substr(start, c == std::string::npos ? std::string::npos : c - start)));
    if (c == std::string::npos) return out;
    start = c + 1;
  }
}

std::string g17(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

}  // namespace

PatternTable parse_pattern_table(const std::string& text, const std::string& file) {
  PatternTable t;
  t.file = file;
  std::istringstream in(text);
  std::string raw;
  int n = 0;
  bool header = false;
  const std::vector<std::string> expected{"machine", "pattern", "regime", "rho_us", "beta_us_per_byte"};
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  auto fail = [&](const std::string& what) { throw PatternTableError(file + ":" + std::to_string(n) + ": " + what); };
  while (std::getline(in, raw)) {
    ++n;
    const std::string line = trim(raw);
    if (line.empty()) continue;
    if (line[0] == '#') {
      t.comments.push_back(trim(line.substr(1)));
      continue;
    }
    const std::vector<std::string> f = split(line);
    if (!header) {
      if (f != expected) fail("header must be \"machine,pattern,regime,rho_us,beta_us_per_byte\", not \"" + line + "\"");
      header = true;
      continue;
    }
    if (f.size() != expected.size()) fail(std::to_string(f.size()) + " field(s), the header has 5: \"" + line + "\"");
    PatternLine p;
    p.machine = f[0];
    p.pattern = f[1];
    p.regime = f[2];
    p.line = n;
    if (p.machine.empty()) fail("empty machine name");
    if (p.pattern != "1d" && p.pattern != "2d") fail("pattern \"" + p.pattern + "\" (expected 1d or 2d)");
    if (p.regime != "short" && p.regime != "long") fail("regime \"" + p.regime + "\" (expected short or long)");
    for (int k : {3, 4}) {
      char* end = nullptr;
      const double v = std::strtod(f[static_cast<std::size_t>(k)].c_str(), &end);
      if (f[static_cast<std::size_t>(k)].empty() || *end) fail("column " + expected[static_cast<std::size_t>(k)] + ": \"" + f[static_cast<std::size_t>(k)] + "\" is not a number");
      if (!(v > 0)) fail("column " + expected[static_cast<std::size_t>(k)] + " must be positive, not \"" + f[static_cast<std::size_t>(k)] + "\"");
      (k == 3 ? p.rho_s : p.beta_s_per_byte) = v * 1e-6;
    }
    if (!seen.insert({p.machine, p.pattern, p.regime}).second) fail("a second line for " + p.machine + " " + p.pattern + " " + p.regime);
    t.lines.push_back(p);
  }
  if (!header) throw PatternTableError(file + ": no header line (expected \"machine,pattern,regime,rho_us,beta_us_per_byte\")");
  if (t.lines.empty()) throw PatternTableError(file + ": no lines after the header");
  return t;
}

PatternTable read_pattern_table(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PatternTableError(path + ": cannot open the pattern table");
  std::ostringstream s;
  s << in.rdbuf();
  return parse_pattern_table(s.str(), path);
}

int pattern_messages_per_step(const std::string& pattern) { return pattern == "2d" ? 4 : 1; }

MeasuredRuns pattern_runs(const PatternTable& table, const std::string& machine, int P, int steps, const PatternSizes& sizes) {
  MeasuredRuns r;
  r.file = table.file;
  r.param_columns = {"D", "steps", "dim"};
  r.comments.push_back("runs standing for the lines of " + std::filesystem::path(table.file).filename().string() + " for machine " + machine + " (mkcalib table-runs):");
  r.comments.push_back("time_s = steps * messages per step (1d: 1, 2d: 4) * (rho + beta*D), skeleton comm_patterns.json, P = " +
                       std::to_string(P));
  int line = 0;
  for (const PatternLine& p : table.lines) {
    if (p.machine != machine) continue;
    char fig[96];
    std::snprintf(fig, sizeof fig, "rho %.6g us, beta %.6g us/B", p.rho_s * 1e6, p.beta_s_per_byte * 1e6);
    r.comments.push_back(p.pattern + " " + p.regime + ": " + fig +
                         " (table line " + std::to_string(p.line) + ")");
    for (double D : p.regime == "short" ? sizes.short_bytes : sizes.long_bytes) {
      MeasuredRun run;
      run.P = P;
      run.params = {{"D", D}, {"steps", static_cast<double>(steps)}, {"dim", p.pattern == "2d" ? 2.0 : 1.0}};
      run.time_s = steps * pattern_messages_per_step(p.pattern) * (p.rho_s + p.beta_s_per_byte * D);
      run.line = ++line;
      r.runs.push_back(run);
    }
  }
  if (r.runs.empty()) throw PatternTableError(table.file + ": no line for machine \"" + machine + "\"");
  return r;
}

std::string format_runs_csv(const MeasuredRuns& runs) {
  std::ostringstream o;
  for (const auto& c : runs.comments) o << "# " << c << "\n";
  o << "P";
  for (const auto& c : runs.param_columns) o << "," << c;
  o << ",time_s\n";
  for (const auto& r : runs.runs) {
    o << r.P;
    for (const auto& c : runs.param_columns) o << "," << g17(r.params.at(c));
    o << "," << g17(r.time_s) << "\n";
  }
  return o.str();
}

std::vector<PatternCheck> check_pattern_table(const std::string& platform_path, const skeletons::Skeleton& skeleton,
                                              const PatternTable& table, const std::string& machine, int P, int steps,
                                              const PatternSizes& sizes) {
  const MeasuredRuns runs = pattern_runs(table, machine, P, steps, sizes);
  const std::vector<ValidationRow> rows = validate_platform(platform_path, skeleton, runs);
  std::vector<PatternCheck> out;
  std::size_t k = 0;
  for (const PatternLine& p : table.lines) {
    if (p.machine != machine) continue;
    const std::vector<double>& D = p.regime == "short" ? sizes.short_bytes : sizes.long_bytes;
    const double per = static_cast<double>(steps * pattern_messages_per_step(p.pattern));
    std::vector<double> tm, tr;
    for (std::size_t i = 0; i < D.size(); ++i, ++k) {
      tm.push_back(rows.at(k).model_s / per);
      tr.push_back(rows.at(k).replay_s / per);
    }
    PatternCheck c;
    c.table = p;
    const LineFit m = fit_line(D, tm), r = fit_line(D, tr);
    c.model_rho_s = m.rho_s;
    c.model_beta_s_per_byte = m.beta_s_per_byte;
    c.replay_rho_s = r.rho_s;
    c.replay_beta_s_per_byte = r.beta_s_per_byte;
    out.push_back(c);
  }
  return out;
}

std::vector<platforms::PatternFigures> table_patterns(const PatternTable& table, const std::string& machine,
                                                      double fallback_breakpoint_bytes) {
  std::vector<platforms::PatternFigures> out;
  for (const char* pattern : {"1d", "2d"}) {
    const PatternLine* s = nullptr;
    const PatternLine* l = nullptr;
    bool any = false;
    for (const PatternLine& line : table.lines) {
      if (line.machine != machine || line.pattern != pattern) continue;
      any = true;
      (line.regime == "short" ? s : l) = &line;
    }
    if (!any) continue;
    if (!s || !l)
      throw PatternTableError(table.file + ": machine " + machine + ", pattern " + pattern + ": needs both a short and a long line");
    const std::string src = "seed 001 table 2 as transcribed in " + table.file.substr(table.file.find_last_of('/') + 1) + " (lines " +
                            std::to_string(s->line) + ", " + std::to_string(l->line) +
                            "); breakpoint where the short and long lines cross";
    out.push_back(platforms::pattern_from_lines(pattern, s->rho_s, s->beta_s_per_byte, l->rho_s, l->beta_s_per_byte,
                                                fallback_breakpoint_bytes, src));
  }
  if (out.empty()) throw PatternTableError(table.file + ": no line for machine \"" + machine + "\"");
  return out;
}

std::string format_pattern_check(const std::vector<PatternCheck>& rows) {
  std::ostringstream o;
  char b[256];
  std::snprintf(b, sizeof b, "%-7s %-6s %10s %10s %10s %9s %9s  %12s %12s %12s %9s %9s\n", "pattern", "regime", "rho_us",
                "model", "replay", "err_m", "err_r", "beta_us/B", "model", "replay", "err_m", "err_r");
  o << b;
  auto e = [](double v, double ref) { return 100 * (v - ref) / ref; };
  for (const auto& c : rows) {
    const double rho = c.table.rho_s, beta = c.table.beta_s_per_byte;
    std::snprintf(b, sizeof b, "%-7s %-6s %10.3f %10.3f %10.3f %+8.2f%% %+8.2f%%  %12.5g %12.5g %12.5g %+8.2f%% %+8.2f%%\n",
                  c.table.pattern.c_str(), c.table.regime.c_str(), rho * 1e6, c.model_rho_s * 1e6, c.replay_rho_s * 1e6,
                  e(c.model_rho_s, rho), e(c.replay_rho_s, rho), beta * 1e6, c.model_beta_s_per_byte * 1e6,
                  c.replay_beta_s_per_byte * 1e6, e(c.model_beta_s_per_byte, beta), e(c.replay_beta_s_per_byte, beta));
    o << b;
  }
  return o.str();
}

}  // namespace mksim::calibration
