// Curves, scaling, crossings and timelines for the report, computed once from the typed tables (see report_data.hpp).
#include "results/report_data.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace mksim::results {

std::vector<CurvePoint> curve_points(const SweepTable& table, const std::string& source) {
  std::vector<CurvePoint> out;
  for (const char* method : {"replay", "model"}) {
    for (const SweepRow& row : table.rows) {
      const SweepPart& part = std::string(method) == "replay" ? row.replay : row.model;
      if (part.status != "ok" || !std::isfinite(part.time_s) || part.time_s <= 0) continue;
      CurvePoint p;
      p.source = source;
      p.platform = row.platform;
      p.method = method;
      for (std::size_t k = 0; k < table.param_names.size() && k < row.params.size(); ++k)
      {
        p.params += (p.params.empty() ? "" : " ") + table.param_names[k] + "=" + format_value(row.params[k]);
        p.values[table.param_names[k]] = row.params[k];
      }
      p.curve = source.empty() ? row.platform : source + " " + row.platform;
      if (!p.params.empty()) p.curve += " " + p.params;
      p.P = row.P;
      p.time_s = part.time_s;
      p.compute_s = part.compute_s;
      p.comm_s = part.comm_s;
      p.wait_s = part.wait_s;
      out.push_back(std::move(p));
    }
  }
  return out;
}

namespace {

/** @brief Points of each (method, curve), sorted by P; a P given twice keeps its first time. */
std::map<std::pair<std::string, std::string>, std::map<int, const CurvePoint*>> by_curve(
    const std::vector<CurvePoint>& points) {
  std::map<std::pair<std::string, std::string>, std::map<int, const CurvePoint*>> curves;
  for (const CurvePoint& p : points) curves[{p.method, p.curve}].emplace(p.P, &p);
  return curves;
}

/** @brief Whether two curves of one method are worth crossing: two platforms of one sweep and parameter set, or
 *  two sweeps on one platform. */
bool comparable(const CurvePoint& a, const CurvePoint& b) {
  if (a.source == b.source) return a.params == b.params && a.platform != b.platform;
  return a.platform == b.platform;
}

}  // namespace

std::vector<ScalingPoint> scaling(const std::vector<CurvePoint>& points) {
  std::vector<ScalingPoint> out;
  for (const auto& [key, curve] : by_curve(points)) {
    const auto& [base_P, base] = *curve.begin();
    for (const auto& [P, p] : curve) {
      ScalingPoint s;
      s.curve = key.second;
      s.method = key.first;
      s.P = P;
      s.base_P = base_P;
      s.time_s = p->time_s;
      s.speedup = base->time_s * base_P / p->time_s;
      s.efficiency = s.speedup / P;
      out.push_back(std::move(s));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const ScalingPoint& x, const ScalingPoint& y) {
    return std::tie(x.curve, x.method, x.P) < std::tie(y.curve, y.method, y.P);
  });
  return out;
}

std::vector<Crossing> find_crossings(const std::vector<CurvePoint>& points) {
  const auto curves = by_curve(points);
  std::vector<Crossing> out;
  for (auto i = curves.begin(); i != curves.end(); ++i) {
    for (auto j = std::next(i); j != curves.end(); ++j) {
      if (i->first.first != j->first.first) continue;  // another method
      const CurvePoint& a0 = *i->second.begin()->second;
      const CurvePoint& b0 = *j->second.begin()->second;
      if (!comparable(a0, b0)) continue;
      // log T_a - log T_b over the common P, in increasing P.
      std::vector<std::tuple<int, double, double>> diff;  // P, difference, log T_a
      for (const auto& [P, pa] : i->second)
        if (const auto pb = j->second.find(P); pb != j->second.end())
          diff.emplace_back(P, std::log(pa->time_s) - std::log(pb->second->time_s), std::log(pa->time_s));
      for (std::size_t k = 0; k < diff.size(); ++k) {
        const auto& [P0, d0, t0] = diff[k];
        if (d0 == 0) continue;
        std::size_t next = k + 1;  // the next point where the curves differ
        while (next < diff.size() && std::get<1>(diff[next]) == 0) ++next;
        if (next == diff.size() || (std::get<1>(diff[next]) > 0) == (d0 > 0)) continue;
        Crossing c;
        c.method = i->first.first;
        c.a = i->first.second;
        c.b = j->first.second;
        if (next == k + 1) {  // strictly between two grid points
          const auto& [P1, d1, t1] = diff[next];
          const double f = d0 / (d0 - d1);
          c.P = std::exp(std::log(P0) + f * (std::log(P1) - std::log(P0)));
          c.time_s = std::exp(t0 + f * (t1 - t0));
          c.P_low = P0;
          c.P_high = P1;
        } else {  // the curves meet at grid point(s): the first of them
          const auto& [P1, d1, t1] = diff[k + 1];
          c.P = P1;
          c.time_s = std::exp(t1);
          c.P_low = c.P_high = P1;
        }
        out.push_back(std::move(c));
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Crossing& x, const Crossing& y) {
    return std::tie(x.method, x.a, x.b, x.P) < std::tie(y.method, y.a, y.b, y.P);
  });
  return out;
}

// ---------------------------------------------------------------------------------------------- measured runs

namespace {

bool close(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b)); }

bool is_spread(const std::string& column) {
  const auto& names = spread_columns();
  return std::find(names.begin(), names.end(), column) != names.end();
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<MeasuredPoint> measured_points(const MeasuredRuns& runs) {
  std::vector<MeasuredPoint> out;
  std::vector<std::vector<const MeasuredRow*>> members;
  for (const MeasuredRow& row : runs.rows) {
    std::map<std::string, double> params;
    for (const auto& [k, v] : row.values)
      if (!is_spread(k)) params[k] = v;
    std::size_t at = 0;
    for (; at < out.size(); ++at) {
      if (out[at].P != row.P || out[at].params.size() != params.size()) continue;
      bool same = true;
      for (const auto& [k, v] : params) same = same && out[at].params.count(k) && close(out[at].params.at(k), v);
      if (same) break;
    }
    if (at == out.size()) {
      MeasuredPoint p;
      p.P = row.P;
      p.params = params;
      for (const std::string& c : runs.columns)
        if (params.count(c)) p.params_text += (p.params_text.empty() ? "" : " ") + c + "=" + format_value(params.at(c));
      out.push_back(std::move(p));
      members.emplace_back();
    }
    members[at].push_back(&row);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    MeasuredPoint& p = out[i];
    const auto& rows = members[i];
    double sum = 0, lo = rows.front()->time_s, hi = lo;
    for (const MeasuredRow* r : rows) {
      sum += r->time_s;
      lo = std::min(lo, r->time_s);
      hi = std::max(hi, r->time_s);
    }
    p.time_s = sum / static_cast<double>(rows.size());
    p.repetitions = static_cast<int>(rows.size());
    p.low_s = lo;
    p.high_s = hi;
    if (rows.size() > 1) {
      p.spread = "min-max of " + std::to_string(rows.size()) + " rows";
      continue;
    }
    const auto& v = rows.front()->values;
    auto has = [&](const char* k) { return v.count(k) > 0 && std::isfinite(v.at(k)); };
    if (has("repetitions")) p.repetitions = static_cast<int>(v.at("repetitions"));
    if (has("time_min_s") && has("time_max_s")) {
      p.low_s = std::min(v.at("time_min_s"), p.time_s);
      p.high_s = std::max(v.at("time_max_s"), p.time_s);
      p.spread = "time_min_s..time_max_s";
    } else if (has("time_sd_s") || has("time_std_s")) {
      const double sd = has("time_sd_s") ? v.at("time_sd_s") : v.at("time_std_s");
      p.low_s = p.time_s - sd;
      p.high_s = p.time_s + sd;
      if (p.low_s <= 0) p.low_s = p.time_s;  // a log axis: no bar below zero
      p.spread = "mean ± sd";
    }
  }
  return out;
}

bool measured_matches(const MeasuredPoint& point, const CurvePoint& curve, const std::string& platform) {
  if (!platform.empty() && lower(curve.platform) != lower(platform)) return false;
  for (const auto& [k, v] : point.params)
    if (const auto it = curve.values.find(k); it != curve.values.end() && !close(it->second, v)) return false;
  return true;
}

std::vector<MeasuredMatch> match_measured(const std::vector<MeasuredPoint>& measured,
                                          const std::vector<CurvePoint>& predicted, const std::string& platform) {
  std::vector<MeasuredMatch> out;
  for (const MeasuredPoint& m : measured)
    for (const CurvePoint& c : predicted)
      if (c.P == m.P && measured_matches(m, c, platform))
        out.push_back({&m, &c, (c.time_s - m.time_s) / m.time_s});
  return out;
}

std::string platform_named_in(const std::vector<std::string>& comments, const std::vector<std::string>& platforms) {
  std::string found;
  for (const std::string& name : platforms) {
    const std::string want = lower(name);
    if (want.empty()) continue;
    bool named = false;
    for (const std::string& c : comments) {
      const std::string text = lower(c);
      for (std::size_t at = text.find(want); at != std::string::npos && !named; at = text.find(want, at + 1)) {
        const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
        const std::size_t end = at + want.size();
        const bool right = end >= text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
        named = left && right;
      }
    }
    if (!named) continue;
    if (!found.empty() && found != name) return "";  // two named: not identifiable
    found = name;
  }
  return found;
}

// ---------------------------------------------------------------------------------------------- isospeed

namespace {

/** @brief Where f (over ascending x, as logs) first reaches zero: the log x interpolated linearly in f and the
 *  bracket's indices; ok = false when f never changes sign. */
struct Root {
  bool ok = false;
  double log_x = 0;
  std::size_t lo = 0, hi = 0;
};

Root first_root(const std::vector<double>& log_x, const std::vector<double>& f) {
  Root r;
  for (std::size_t k = 0; k < f.size(); ++k) {
    if (f[k] == 0) return {true, log_x[k], k, k};
    if (k + 1 < f.size() && (f[k] < 0) != (f[k + 1] < 0) && f[k + 1] != 0) {
      const double t = f[k] / (f[k] - f[k + 1]);
      return {true, log_x[k] + t * (log_x[k + 1] - log_x[k]), k, k + 1};
    }
  }
  return r;
}

}  // namespace

ScaleCurves scale_curves(const std::vector<CurvePoint>& points, const WorkModel& work) {
  ScaleCurves out;
  struct Group {
    std::string label;
    std::map<int, std::map<double, double>> grid;  // P -> N -> T
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Group> groups;  // method, source, platform, rest
  for (const CurvePoint& p : points) {
    const auto it = p.values.find(work.param);
    if (it == p.values.end() || !(it->second > 0)) continue;
    std::string rest;
    for (const auto& [k, v] : p.values)
      if (k != work.param) rest += (rest.empty() ? "" : " ") + k + "=" + format_value(v);
    Group& g = groups[{p.method, p.source, p.platform, rest}];
    g.label = (p.source.empty() ? "" : p.source + " ") + p.platform + (rest.empty() ? "" : " " + rest);
    g.grid[p.P].emplace(it->second, p.time_s);
  }
  std::size_t coarse = 0, interpolated = 0, out_of_range = 0;
  for (const auto& [key, g] : groups) {
    const std::string& method = std::get<0>(key);
    if (g.grid.size() < 2) {
      out.notes.push_back(method + " " + g.label + ": one P only, so no isospeed or constant-time curve");
      continue;
    }
    const auto& [P0, base] = *g.grid.begin();
    std::size_t distinct = 0;
    for (const auto& [P, row] : g.grid) distinct = std::max(distinct, row.size());
    if (distinct < 2) {
      out.notes.push_back(method + " " + g.label + ": one value of " + work.param + " per P, so nothing to interpolate over");
      continue;
    }
    for (const auto& [N0, T0] : base) {
      const double W0 = std::pow(N0, work.exponent);
      const double speed0 = W0 / (T0 * P0);
      const std::string curve = g.label + " from " + work.param + "=" + format_value(N0) + " at P=" + std::to_string(P0);
      for (const auto& [P, row] : g.grid) {
        std::vector<double> log_n, f_iso, f_time;
        for (const auto& [N, T] : row) {
          log_n.push_back(std::log(N));
          f_iso.push_back(std::log(std::pow(N, work.exponent) / (T * P)) - std::log(speed0));
          f_time.push_back(std::log(T) - std::log(T0));
        }
        ScalePoint base_point;
        base_point.curve = curve;
        base_point.method = method;
        base_point.P = P;
        base_point.base_P = P0;
        base_point.base_n = N0;
        // Isospeed: the N where the speed per processor is back at the base's.
        ScalePoint iso = base_point;
        iso.target = speed0;
        if (P == P0) {
          iso.n = iso.n_low = iso.n_high = N0;
        } else if (const Root r = first_root(log_n, f_iso); r.ok) {
          iso.n = std::exp(r.log_x);
          iso.n_low = std::exp(log_n[r.lo]);
          iso.n_high = std::exp(log_n[r.hi]);
        }
        if (std::isfinite(iso.n)) {
          iso.status = "ok";
          iso.work = std::pow(iso.n, work.exponent);
          iso.psi = (static_cast<double>(P) * W0) / (static_cast<double>(P0) * iso.work);
          ++interpolated;
          if (iso.n_high > 2 * iso.n_low) ++coarse;
        } else {
          ++out_of_range;
          const bool rising = f_iso.back() > f_iso.front();
          const bool below = *std::max_element(f_iso.begin(), f_iso.end()) < 0;
          iso.status = below == rising ? "above grid" : "below grid";
          iso.n_low = std::exp(log_n.front());
          iso.n_high = std::exp(log_n.back());
        }
        out.isospeed.push_back(iso);
        // Constant time: the largest N with T(P, N) <= T0.
        ScalePoint ct = base_point;
        ct.target = T0;
        if (P == P0) {
          ct.n = ct.n_low = ct.n_high = N0;
        } else {
          std::size_t last = f_time.size();  // the last index with T <= T0
          for (std::size_t k = 0; k < f_time.size(); ++k)
            if (f_time[k] <= 0) last = k;
          if (last == f_time.size()) {
            ct.status = "below grid";
          } else if (last + 1 == f_time.size()) {
            ct.status = f_time[last] == 0 ? "ok" : "above grid";
            if (f_time[last] == 0) ct.n = ct.n_low = ct.n_high = std::exp(log_n[last]);
          } else if (f_time[last] == 0) {
            ct.n = ct.n_low = ct.n_high = std::exp(log_n[last]);
          } else {
            const double t = f_time[last] / (f_time[last] - f_time[last + 1]);
            ct.n = std::exp(log_n[last] + t * (log_n[last + 1] - log_n[last]));
            ct.n_low = std::exp(log_n[last]);
            ct.n_high = std::exp(log_n[last + 1]);
          }
          if (ct.status.empty() && !std::isfinite(ct.n)) ct.status = "below grid";
        }
        if (std::isfinite(ct.n)) {
          ct.status = "ok";
          ct.work = std::pow(ct.n, work.exponent);
          ++interpolated;
          if (ct.n_high > 2 * ct.n_low) ++coarse;
        } else {
          ++out_of_range;
          ct.n_low = std::exp(log_n.front());
          ct.n_high = std::exp(log_n.back());
        }
        out.constant_time.push_back(ct);
      }
    }
  }
  if (out_of_range > 0)
    out.notes.push_back(std::to_string(out_of_range) + " isospeed/constant-time point(s) fall outside the swept " +
                        work.param + " range (needed " + work.param + " above the largest or below the smallest swept) " +
                        "and are left out, not extrapolated: sweep a wider " + work.param + " range to get them");
  if (coarse > 0)
    out.notes.push_back(std::to_string(coarse) + " of " + std::to_string(interpolated) + " point(s) were interpolated "
                        "between swept " + work.param + " values more than a factor 2 apart: the grid is coarse there, "
                        "sweep more " + work.param + " values for a closer answer");
  return out;
}

Timeline read_timeline_csv(const std::string& path, std::size_t max_ops) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the timeline");
  const std::string header = "rank,start_s,end_s,kind,block";
  std::string line;
  if (!std::getline(in, line) || (line != header && line != header + "\r"))
    throw std::runtime_error(path + ": line 1: not a timeline CSV (expected the header '" + header + "')");
  Timeline t;
  std::set<int> ranks;
  std::size_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    auto bad = [&](const std::string& why) {
      return std::runtime_error(path + ": line " + std::to_string(number) + ": " + why + ": '" + line + "'");
    };
    // rank,start_s,end_s,kind,block: the block (last) may itself contain commas.
    std::vector<std::string> field;
    std::size_t start = 0;
    for (int f = 0; f < 4; ++f) {
      const std::size_t comma = line.find(',', start);
      if (comma == std::string::npos) throw bad("expected 5 fields");
      field.push_back(line.substr(start, comma - start));
      start = comma + 1;
    }
    field.push_back(line.substr(start));
    TimelineOp op;
    std::size_t used = 0;
    try {
      op.rank = std::stoi(field[0], &used);
      if (used != field[0].size() || op.rank < 0) throw std::invalid_argument("rank");
      op.start_s = std::stod(field[1], &used);
      if (used != field[1].size()) throw std::invalid_argument("start");
      op.end_s = std::stod(field[2], &used);
      if (used != field[2].size()) throw std::invalid_argument("end");
    } catch (const std::exception&) {
      throw bad("bad rank or time");
    }
    if (!std::isfinite(op.start_s) || !std::isfinite(op.end_s) || op.end_s < op.start_s)
      throw bad("the operation ends before it starts");
    op.kind = field[3];
    op.block = field[4];
    ranks.insert(op.rank);
    ++t.total_ops;
    if (t.ops.size() < max_ops) t.ops.push_back(std::move(op));
  }
  if (in.bad()) throw std::runtime_error(path + ": read error");
  t.ranks = static_cast<int>(ranks.size());
  return t;
}

}  // namespace mksim::results
