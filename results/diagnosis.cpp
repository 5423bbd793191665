// HDF5 writer and reader of a Diagnosis (layout: results/diagnosis.hpp), through hdf5_common's checked calls
// and atomic write, as the run and sweep files.
#include "results/diagnosis.hpp"

#include "results/hdf5_common.hpp"

#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mksim::results {
namespace {

using namespace detail;

void write_file(const std::string& path, const std::string& file_path, const Diagnosis& d) {
  Handle file = create_file(path, file_path);
  {
    Writer w(path);
    const hid_t root = file.get();
    w.string_attribute(root, "/", "format", DIAGNOSIS_FORMAT_NAME);
    const int version = DIAGNOSIS_FORMAT_VERSION;
    w.attribute(root, "/", "format_version", version);
    w.attribute(root, "/", "baseline_time_s", d.baseline_time_s);
    w.attribute(root, "/", "threshold_pct", d.threshold_pct);
    for (const auto& [key, value] : d.attributes) {
      if (key == "format" || key == "format_version" || key == "baseline_time_s" || key == "threshold_pct")
        throw std::runtime_error(path + ": attribute '" + key + "' is reserved");
      w.string_attribute(root, "/", key.c_str(), value);
    }
    const auto& p = d.problems;
    const Handle gp = w.group(root, "problems", "/problems");
    std::vector<int> rank;
    for (std::size_t i = 0; i < p.size(); ++i) rank.push_back(static_cast<int>(i) + 1);
    w.column(gp.get(), "/problems", "rank", rank);
    w.column(gp.get(), "/problems", "kind", column_of(p, [](const Problem& x) { return x.kind; }));
    w.column(gp.get(), "/problems", "block", column_of(p, [](const Problem& x) { return x.block; }));
    w.column(gp.get(), "/problems", "phase", column_of(p, [](const Problem& x) { return x.phase; }));
    w.column(gp.get(), "/problems", "ranks", column_of(p, [](const Problem& x) { return x.ranks; }));
    w.column(gp.get(), "/problems", "action", column_of(p, [](const Problem& x) { return x.action; }));
    w.column(gp.get(), "/problems", "gain_s", column_of(p, [](const Problem& x) { return x.gain_s; }));
    w.column(gp.get(), "/problems", "gain_pct", column_of(p, [](const Problem& x) { return x.gain_pct; }));
    w.column(gp.get(), "/problems", "method", column_of(p, [](const Problem& x) { return x.method; }));
    w.column(gp.get(), "/problems", "formula_gain_s", column_of(p, [](const Problem& x) { return x.formula_gain_s; }));
    w.column(gp.get(), "/problems", "detail", column_of(p, [](const Problem& x) { return x.detail; }));
    w.column(gp.get(), "/problems", "measured_s", column_of(p, [](const Problem& x) { return x.measured_s; }));
    w.column(gp.get(), "/problems", "chain", column_of(p, [](const Problem& x) { return x.chain; }));

    const auto& f = d.phases;
    const Handle gf = w.group(root, "phases", "/phases");
    w.column(gf.get(), "/phases", "phase", column_of(f, [](const PhaseStats& x) { return x.phase; }));
    w.column(gf.get(), "/phases", "time_max_s", column_of(f, [](const PhaseStats& x) { return x.time_max_s; }));
    w.column(gf.get(), "/phases", "time_mean_s", column_of(f, [](const PhaseStats& x) { return x.time_mean_s; }));
    w.column(gf.get(), "/phases", "utilisation_mean", column_of(f, [](const PhaseStats& x) { return x.utilisation_mean; }));
    w.column(gf.get(), "/phases", "utilisation_min", column_of(f, [](const PhaseStats& x) { return x.utilisation_min; }));
    w.column(gf.get(), "/phases", "utilisation_argmin", column_of(f, [](const PhaseStats& x) { return x.utilisation_argmin; }));
    w.column(gf.get(), "/phases", "compute_max_s", column_of(f, [](const PhaseStats& x) { return x.compute_max_s; }));
    w.column(gf.get(), "/phases", "compute_mean_s", column_of(f, [](const PhaseStats& x) { return x.compute_mean_s; }));
    w.column(gf.get(), "/phases", "compute_argmax", column_of(f, [](const PhaseStats& x) { return x.compute_argmax; }));

    const auto& b = d.blocks;
    const Handle gb = w.group(root, "blocks", "/blocks");
    w.column(gb.get(), "/blocks", "id", column_of(b, [](const BlockStats& x) { return x.id; }));
    w.column(gb.get(), "/blocks", "compute_max_s", column_of(b, [](const BlockStats& x) { return x.compute_max_s; }));
    w.column(gb.get(), "/blocks", "compute_mean_s", column_of(b, [](const BlockStats& x) { return x.compute_mean_s; }));
    w.column(gb.get(), "/blocks", "compute_argmax", column_of(b, [](const BlockStats& x) { return x.compute_argmax; }));
    w.column(gb.get(), "/blocks", "wait_max_s", column_of(b, [](const BlockStats& x) { return x.wait_max_s; }));
    w.column(gb.get(), "/blocks", "wait_mean_s", column_of(b, [](const BlockStats& x) { return x.wait_mean_s; }));
    w.column(gb.get(), "/blocks", "wait_argmax", column_of(b, [](const BlockStats& x) { return x.wait_argmax; }));
    w.column(gb.get(), "/blocks", "late_sender_s", column_of(b, [](const BlockStats& x) { return x.late_sender_s; }));
    w.column(gb.get(), "/blocks", "late_receiver_s", column_of(b, [](const BlockStats& x) { return x.late_receiver_s; }));
    w.column(gb.get(), "/blocks", "collective_wait_s", column_of(b, [](const BlockStats& x) { return x.collective_wait_s; }));
    w.column(gb.get(), "/blocks", "cause_rank", column_of(b, [](const BlockStats& x) { return x.cause_rank; }));
    w.column(gb.get(), "/blocks", "executions_max", column_of(b, [](const BlockStats& x) { return x.executions_max; }));
    w.column(gb.get(), "/blocks", "executions_mean", column_of(b, [](const BlockStats& x) { return x.executions_mean; }));

    const Handle gn = w.group(root, "notes", "/notes");
    w.column(gn.get(), "/notes", "text", d.notes);

    const auto& l = d.logical_phases;
    const Handle gl = w.group(root, "logical_phases", "/logical_phases");
    w.column(gl.get(), "/logical_phases", "name", column_of(l, [](const LogicalPhase& x) { return x.name; }));
    w.column(gl.get(), "/logical_phases", "sites", column_of(l, [](const LogicalPhase& x) { return x.sites; }));
    w.column(gl.get(), "/logical_phases", "occurrences", column_of(l, [](const LogicalPhase& x) { return x.occurrences; }));
    w.column(gl.get(), "/logical_phases", "start_s", column_of(l, [](const LogicalPhase& x) { return x.start_s; }));
    w.column(gl.get(), "/logical_phases", "time_s", column_of(l, [](const LogicalPhase& x) { return x.time_s; }));
    w.column(gl.get(), "/logical_phases", "utilisation_mean", column_of(l, [](const LogicalPhase& x) { return x.utilisation_mean; }));
    w.column(gl.get(), "/logical_phases", "utilisation_min", column_of(l, [](const LogicalPhase& x) { return x.utilisation_min; }));
    w.column(gl.get(), "/logical_phases", "utilisation_argmin", column_of(l, [](const LogicalPhase& x) { return x.utilisation_argmin; }));
    w.column(gl.get(), "/logical_phases", "utilisation", column_of(l, [](const LogicalPhase& x) {
               std::string t;
               char buf[32];
               for (double u : x.utilisation) {
                 std::snprintf(buf, sizeof buf, "%s%.6g", t.empty() ? "" : " ", u);
                 t += buf;
               }
               return t;
             }));
  }
  checked(file.close(), path, "close (flush) temporary file " + file_path);
}

// --- reading ---

double read_double_attribute(const std::string& path, hid_t file, const char* name) {
  const Handle a = checked(H5Aopen(file, name, H5P_DEFAULT), H5Aclose, path, std::string("open attribute '") + name + "'");
  double v = 0;
  checked(H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v), path, std::string("read attribute '") + name + "'");
  return v;
}

std::string read_string_attribute(const std::string& path, hid_t file, const std::string& name) {
  const Handle a = checked(H5Aopen(file, name.c_str(), H5P_DEFAULT), H5Aclose, path, "open attribute '" + name + "'");
  const Handle space = checked(H5Aget_space(a.get()), H5Sclose, path, "get space of attribute '" + name + "'");
  const Handle type = checked(H5Aget_type(a.get()), H5Tclose, path, "get type of attribute '" + name + "'");
  if (H5Tget_class(type.get()) != H5T_STRING) throw std::runtime_error(path + ": attribute '" + name + "' is not a string");
  auto v = read_strings(path, type.get(), space.get(), "attribute '" + name + "'",
                        [&](hid_t memory_type, void* buffer) { return H5Aread(a.get(), memory_type, buffer); });
  return v.empty() ? std::string() : v.front();
}

std::vector<std::string> read_string_column(const std::string& path, hid_t group, const char* name) {
  const Handle d = checked(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose, path, std::string("open dataset ") + name);
  const Handle space = checked(H5Dget_space(d.get()), H5Sclose, path, std::string("get space of ") + name);
  const Handle type = checked(H5Dget_type(d.get()), H5Tclose, path, std::string("get type of ") + name);
  return read_strings(path, type.get(), space.get(), std::string("dataset ") + name,
                      [&](hid_t memory_type, void* buffer) { return H5Dread(d.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer); });
}

std::vector<double> read_double_column(const std::string& path, hid_t group, const char* name) {
  const Handle d = checked(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose, path, std::string("open dataset ") + name);
  const Handle space = checked(H5Dget_space(d.get()), H5Sclose, path, std::string("get space of ") + name);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) fail(path, std::string("size of ") + name);
  std::vector<double> v(static_cast<std::size_t>(n));
  if (n > 0) checked(H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), path, std::string("read ") + name);
  return v;
}

}  // namespace

void write_diagnosis_hdf5(const std::string& path, const Diagnosis& diagnosis) {
  QuietHdf5Errors quiet;
  write_atomically(path, [&](const std::string& temporary) { write_file(path, temporary, diagnosis); });
}

Diagnosis read_diagnosis_hdf5(const std::string& path) {
  QuietHdf5Errors quiet;
  Handle file = open_for_reading(path);
  const hid_t f = file.get();
  if (read_string_attribute(path, f, "format") != DIAGNOSIS_FORMAT_NAME)
    throw std::runtime_error(path + ": not an mksim diagnosis file (format is not \"" + DIAGNOSIS_FORMAT_NAME + "\")");
  Diagnosis d;
  d.baseline_time_s = read_double_attribute(path, f, "baseline_time_s");
  d.threshold_pct = read_double_attribute(path, f, "threshold_pct");
  for (const std::string& name : attribute_names(path, f, "root"))
    if (name != "format" && name != "format_version" && name != "baseline_time_s" && name != "threshold_pct")
      d.attributes.emplace_back(name, read_string_attribute(path, f, name));
  const Handle g = checked(H5Gopen2(f, "problems", H5P_DEFAULT), H5Gclose, path, "open group /problems");
  const auto kind = read_string_column(path, g.get(), "kind");
  const auto block = read_string_column(path, g.get(), "block");
  const auto phase = read_string_column(path, g.get(), "phase");
  const auto ranks = read_string_column(path, g.get(), "ranks");
  const auto action = read_string_column(path, g.get(), "action");
  const auto gain_s = read_double_column(path, g.get(), "gain_s");
  const auto gain_pct = read_double_column(path, g.get(), "gain_pct");
  const auto method = read_string_column(path, g.get(), "method");
  const auto formula = read_double_column(path, g.get(), "formula_gain_s");
  const auto detail = read_string_column(path, g.get(), "detail");
  const std::size_t n = kind.size();
  if (block.size() != n || phase.size() != n || ranks.size() != n || action.size() != n || gain_s.size() != n ||
      gain_pct.size() != n || method.size() != n || formula.size() != n || detail.size() != n)
    throw std::runtime_error(path + ": /problems columns have different lengths");
  for (std::size_t i = 0; i < n; ++i)
    d.problems.push_back(Problem{kind[i], block[i], phase[i], ranks[i], action[i], gain_s[i], gain_pct[i], method[i], formula[i], detail[i], -1, ""});
  if (H5Lexists(g.get(), "measured_s", H5P_DEFAULT) > 0 && H5Lexists(g.get(), "chain", H5P_DEFAULT) > 0) {  // added later
    const auto measured = read_double_column(path, g.get(), "measured_s");
    const auto chain = read_string_column(path, g.get(), "chain");
    if (measured.size() != n || chain.size() != n) throw std::runtime_error(path + ": /problems columns have different lengths");
    for (std::size_t i = 0; i < n; ++i) {
      d.problems[i].measured_s = measured[i];
      d.problems[i].chain = chain[i];
    }
  }
  const Handle gn = checked(H5Gopen2(f, "notes", H5P_DEFAULT), H5Gclose, path, "open group /notes");
  d.notes = read_string_column(path, gn.get(), "text");
  if (H5Lexists(f, "logical_phases", H5P_DEFAULT) > 0) {  // added later
    const Handle gl = checked(H5Gopen2(f, "logical_phases", H5P_DEFAULT), H5Gclose, path, "open group /logical_phases");
    const auto name = read_string_column(path, gl.get(), "name");
    const auto sites = read_string_column(path, gl.get(), "sites");
    const auto occ = read_double_column(path, gl.get(), "occurrences");
    const auto start = read_double_column(path, gl.get(), "start_s");
    const auto time = read_double_column(path, gl.get(), "time_s");
    const auto umean = read_double_column(path, gl.get(), "utilisation_mean");
    const auto umin = read_double_column(path, gl.get(), "utilisation_min");
    const auto uarg = read_double_column(path, gl.get(), "utilisation_argmin");
    const auto util = read_string_column(path, gl.get(), "utilisation");
    const std::size_t m = name.size();
    if (sites.size() != m || occ.size() != m || start.size() != m || time.size() != m || umean.size() != m || umin.size() != m ||
        uarg.size() != m || util.size() != m)
      throw std::runtime_error(path + ": /logical_phases columns have different lengths");
    for (std::size_t i = 0; i < m; ++i) {
      LogicalPhase lp{name[i], sites[i], static_cast<int>(occ[i]), start[i], time[i], umean[i], umin[i], static_cast<int>(uarg[i]), {}};
      std::istringstream in(util[i]);
      for (double u; in >> u;) lp.utilisation.push_back(u);
      d.logical_phases.push_back(std::move(lp));
    }
  }
  return d;
}

}  // namespace mksim::results
