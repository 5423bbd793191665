// The runs CSV reader: strict (every cell checked once here), errors with file and line.
#include "calibration/measured_runs.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace mksim::calibration {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    out.push_back(trim(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

MeasuredRuns parse_measured_runs(const std::string& text, const std::string& file,
                                 const std::vector<std::string>& known_params) {
  MeasuredRuns out;
  out.file = file;
  std::istringstream in(text);
  std::string raw;
  int line_no = 0;
  std::vector<std::string> header;
  int col_P = -1, col_t = -1;
  auto fail = [&](const std::string& what) { throw RunsError(file + ":" + std::to_string(line_no) + ": " + what); };
  while (std::getline(in, raw)) {
    ++line_no;
    const std::string line = trim(raw);
    if (line.empty()) continue;
    if (line[0] == '#') {
      out.comments.push_back(trim(line.substr(1)));
      continue;
    }
    const std::vector<std::string> fields = split(line);
    if (header.empty()) {
      header = fields;
      for (std::size_t i = 0; i < header.size(); ++i) {
        const std::string& name = header[i];
        if (name.empty()) fail("empty column name in the header");
        if (std::count(header.begin(), header.end(), name) > 1) fail("column \"" + name + "\" appears twice");
        if (name == "P") {
          col_P = static_cast<int>(i);
        } else if (name == "time_s") {
          col_t = static_cast<int>(i);
        } else {
          if (!known_params.empty() && std::find(known_params.begin(), known_params.end(), name) == known_params.end())
            fail("unknown column \"" + name + "\" (expected P, time_s and the skeleton's parameters: " +
                 join(known_params) + ")");
          out.param_columns.push_back(name);
        }
      }
      if (col_P < 0) fail("the header has no column P");
      if (col_t < 0) fail("the header has no column time_s (measured time in seconds)");
      continue;
    }
    if (fields.size() != header.size())
      fail(std::to_string(fields.size()) + " field(s), the header has " + std::to_string(header.size()) + ": \"" + line + "\"");
    MeasuredRun run;
    run.line = line_no;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const std::string& f = fields[i];
      char* end = nullptr;
      errno = 0;
      const double v = std::strtod(f.c_str(), &end);
      if (f.empty() || end != f.c_str() + f.size() || errno == ERANGE || !std::isfinite(v))
        fail("column " + header[i] + ": \"" + f + "\" is not a number");
      if (static_cast<int>(i) == col_P) {
        if (!(v >= 1) || v != std::floor(v) || v > 1e8) fail("P must be a positive integer, not \"" + f + "\"");
        run.P = static_cast<int>(v);
      } else if (static_cast<int>(i) == col_t) {
        if (!(v > 0)) fail("time_s must be positive, not \"" + f + "\"");
        run.time_s = v;
      } else {
        run.params[header[i]] = v;
      }
    }
    out.runs.push_back(std::move(run));
  }
  if (header.empty()) throw RunsError(file + ": no header line (expected e.g. \"P,N,time_s\")");
  if (out.runs.empty()) throw RunsError(file + ": no measured runs after the header");
  return out;
}

MeasuredRuns read_measured_runs(const std::string& path, const std::vector<std::string>& known_params) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw RunsError(path + ": cannot open the runs file");
  std::ostringstream s;
  s << f.rdbuf();
  return parse_measured_runs(s.str(), path, known_params);
}

}  // namespace mksim::calibration
