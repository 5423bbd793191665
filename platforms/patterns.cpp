// Per-pattern figures: names, props, reading and describing them.
#include "platforms/patterns.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace mksim::platforms {
namespace {

constexpr const char* PREFIX = "mksim.pattern.";
constexpr const char* FIELDS[] = {"breakpoint_bytes", "short_rho_s", "short_beta_s_per_byte", "long_rho_s", "long_beta_s_per_byte"};

std::string num(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

double* field(PatternFigures& p, const std::string& name) {
  if (name == "breakpoint_bytes") return &p.breakpoint_bytes;
  if (name == "short_rho_s") return &p.short_rho_s;
  if (name == "short_beta_s_per_byte") return &p.short_beta_s_per_byte;
  if (name == "long_rho_s") return &p.long_rho_s;
  if (name == "long_beta_s_per_byte") return &p.long_beta_s_per_byte;
  return nullptr;
}

}  // namespace

double PatternFigures::message_s(double bytes) const {
  return long_regime(bytes) ? long_rho_s + long_beta_s_per_byte * bytes : short_rho_s + short_beta_s_per_byte * bytes;
}

const std::vector<std::pair<std::string, int>>& pattern_names() {
  static const std::vector<std::pair<std::string, int>> names = {{"1d", 2}, {"2d", 4}, {"3d", 6}};
  return names;
}

int pattern_max_partners(const std::string& name) {
  for (const auto& [n, k] : pattern_names())
    if (n == name) return k;
  return 0;
}

std::string pattern_for_partners(int partners) {
  if (partners < 1) return "";
  for (const auto& [name, most] : pattern_names())
    if (partners <= most) return name;
  return "";
}

std::vector<std::pair<std::string, std::string>> pattern_props(const PatternFigures& p) {
  PatternFigures q = p;
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* f : FIELDS) out.emplace_back(PREFIX + p.name + "." + f, num(*field(q, f)));
  return out;
}

std::vector<PatternFigures> patterns_from_props(const std::map<std::string, std::string>& props, const std::string& where) {
  std::map<std::string, PatternFigures> found;
  std::map<std::string, int> seen;  // fields per pattern
  for (const auto& [id, value] : props) {
    if (id.rfind(PREFIX, 0) != 0) continue;
    const std::string rest = id.substr(std::char_traits<char>::length(PREFIX));
    const std::size_t dot = rest.find('.');
    const std::string name = rest.substr(0, dot);
    if (pattern_max_partners(name) == 0)
      throw std::runtime_error(where + ": platform property " + id + ": unknown pattern \"" + name + "\" (known: 1d, 2d, 3d)");
    PatternFigures& p = found[name];
    p.name = name;
    double* target = dot == std::string::npos ? nullptr : field(p, rest.substr(dot + 1));
    if (!target)
      throw std::runtime_error(where + ": platform property " + id + ": unknown figure (known: breakpoint_bytes, short_rho_s, " +
                               "short_beta_s_per_byte, long_rho_s, long_beta_s_per_byte)");
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end || !std::isfinite(v) || v < 0)
      throw std::runtime_error(where + ": platform property " + id + " = '" + value + "' is not a non-negative number");
    *target = v;
    ++seen[name];
  }
  std::vector<PatternFigures> out;
  for (auto& [name, p] : found) {
    if (seen[name] != static_cast<int>(std::size(FIELDS)))
      throw std::runtime_error(where + ": pattern " + name + " has " + std::to_string(seen[name]) +
                               " of its 5 properties (mksim.pattern." + name + ".breakpoint_bytes, .short_rho_s, " +
                               ".short_beta_s_per_byte, .long_rho_s, .long_beta_s_per_byte)");
    out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [](const PatternFigures& a, const PatternFigures& b) {
    return pattern_max_partners(a.name) < pattern_max_partners(b.name);
  });
  return out;
}

std::string describe_pattern(const PatternFigures& p) {
  char b[256];
  std::snprintf(b, sizeof b, "%s: short %.6g us + %.6g us/B, long %.6g us + %.6g us/B, breakpoint %.10g B", p.name.c_str(),
                p.short_rho_s * 1e6, p.short_beta_s_per_byte * 1e6, p.long_rho_s * 1e6, p.long_beta_s_per_byte * 1e6,
                p.breakpoint_bytes);
  return b;
}

PatternFigures pattern_from_lines(const std::string& name, double short_rho_s, double short_beta_s_per_byte, double long_rho_s,
                                  double long_beta_s_per_byte, double fallback_breakpoint_bytes, const std::string& source) {
  PatternFigures p{name, fallback_breakpoint_bytes, short_rho_s, short_beta_s_per_byte, long_rho_s, long_beta_s_per_byte, source};
  if (short_beta_s_per_byte > long_beta_s_per_byte && long_rho_s > short_rho_s)
    p.breakpoint_bytes = std::floor((long_rho_s - short_rho_s) / (short_beta_s_per_byte - long_beta_s_per_byte));
  return p;
}

}  // namespace mksim::platforms
