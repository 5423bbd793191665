// HDF5 form of a sweep's table: one compound dataset /sweep (a row per point), built column by column from a
// descriptor list so that the swept parameters become columns of their own; read back by member name.
#include "results/sweep_table.hpp"

#include "results/hdf5_common.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

namespace mksim::results {
namespace {

using namespace detail;

constexpr const char* FORMAT_NAME = "mksim-sweep";
constexpr const char* DATASET = "sweep";

enum class Kind { STRING, INT32, UINT64, FLOAT64 };

/** @brief One column of the compound row: name, type, where it sits in the in-memory row, how to get/set it. */
struct Column {
  std::string name;
  Kind kind;
  std::size_t offset = 0;
  // Accessors over a row (param_index >= 0 for parameter columns).
  int param_index = -1;
  std::string* (*str)(SweepRow&) = nullptr;
  double* (*f64)(SweepRow&) = nullptr;
  std::uint64_t* (*u64)(SweepRow&) = nullptr;
};

std::size_t size_of(Kind k) {
  switch (k) {
    case Kind::STRING: return sizeof(char*);
    case Kind::INT32: return sizeof(std::int32_t);
    case Kind::UINT64: return sizeof(std::uint64_t);
    case Kind::FLOAT64: return sizeof(double);
  }
  return 0;
}

// The fixed columns around the parameters, in table order (platform, P, parameters..., then these).
std::vector<Column> fixed_tail() {
  std::vector<Column> c;
  auto s = [&](const char* n, std::string* (*f)(SweepRow&)) { c.push_back({n, Kind::STRING, 0, -1, f, nullptr, nullptr}); };
  auto d = [&](const char* n, double* (*f)(SweepRow&)) { c.push_back({n, Kind::FLOAT64, 0, -1, nullptr, f, nullptr}); };
  c.push_back({"status", Kind::STRING, 0, -1, nullptr, nullptr, nullptr});  // derived from the parts
  d("replay_s", [](SweepRow& r) { return &r.replay.time_s; });
  d("replay_compute_s", [](SweepRow& r) { return &r.replay.compute_s; });
  d("replay_comm_s", [](SweepRow& r) { return &r.replay.comm_s; });
  d("replay_wait_s", [](SweepRow& r) { return &r.replay.wait_s; });
  c.push_back({"replay_messages", Kind::UINT64, 0, -1, nullptr, nullptr, [](SweepRow& r) { return &r.replay.messages; }});
  s("replay_status", [](SweepRow& r) { return &r.replay.status; });
  s("replay_error", [](SweepRow& r) { return &r.replay.error; });
  d("replay_wall_s", [](SweepRow& r) { return &r.replay.wall_s; });
  d("model_s", [](SweepRow& r) { return &r.model.time_s; });
  d("model_compute_s", [](SweepRow& r) { return &r.model.compute_s; });
  d("model_comm_s", [](SweepRow& r) { return &r.model.comm_s; });
  s("model_status", [](SweepRow& r) { return &r.model.status; });
  s("model_error", [](SweepRow& r) { return &r.model.error; });
  d("model_wall_s", [](SweepRow& r) { return &r.model.wall_s; });
  return c;
}

/** @brief All columns of a table with these parameters, offsets assigned; returns the row size. */
std::vector<Column> layout(const std::vector<std::string>& params, std::size_t& row_size) {
  std::vector<Column> cols;
  cols.push_back({"platform", Kind::STRING, 0, -1, [](SweepRow& r) { return &r.platform; }, nullptr, nullptr});
  cols.push_back({"P", Kind::INT32, 0, -1, nullptr, nullptr, nullptr});
  for (std::size_t i = 0; i < params.size(); ++i) cols.push_back({params[i], Kind::FLOAT64, 0, static_cast<int>(i)});
  for (Column& c : fixed_tail()) cols.push_back(std::move(c));
  std::size_t offset = 0;
  for (Column& c : cols) {
    const std::size_t align = size_of(c.kind);
    offset = (offset + align - 1) / align * align;
    c.offset = offset;
    offset += size_of(c.kind);
  }
  row_size = (offset + 7) / 8 * 8;
  return cols;
}

Handle memory_type(const std::string& path, const std::vector<Column>& cols, std::size_t row_size,
                   const Handle& string_type) {
  Handle t = checked(H5Tcreate(H5T_COMPOUND, row_size), H5Tclose, path, "create the row type");
  for (const Column& c : cols) {
    hid_t member = H5T_NATIVE_DOUBLE;
    switch (c.kind) {
      case Kind::STRING: member = string_type.get(); break;
      case Kind::INT32: member = H5T_NATIVE_INT32; break;
      case Kind::UINT64: member = H5T_NATIVE_UINT64; break;
      case Kind::FLOAT64: member = H5T_NATIVE_DOUBLE; break;
    }
    checked(H5Tinsert(t.get(), c.name.c_str(), c.offset, member), path, "add column '" + c.name + "' to the row type");
  }
  return t;
}

void string_attribute(const std::string& path, hid_t file, const Handle& type, const std::string& name,
                      const std::string& value) {
  const Handle space = checked(H5Screate(H5S_SCALAR), H5Sclose, path, "create scalar dataspace");
  const Handle a = checked(H5Acreate2(file, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                           path, "create attribute '" + name + "'");
  const char* data = value.c_str();
  checked(H5Awrite(a.get(), type.get(), &data), path, "write attribute '" + name + "'");
}

std::string read_string_attribute(const std::string& path, hid_t file, const std::string& name) {
  const htri_t exists = H5Aexists(file, name.c_str());
  if (exists < 0) fail(path, "look up root attribute '" + name + "'");
  if (exists == 0) throw std::runtime_error(path + ": missing root attribute '" + name + "'");
  const Handle a = checked(H5Aopen(file, name.c_str(), H5P_DEFAULT), H5Aclose, path, "open root attribute '" + name + "'");
  const Handle type = checked(H5Aget_type(a.get()), H5Tclose, path, "get type of root attribute '" + name + "'");
  if (H5Tget_class(type.get()) != H5T_STRING) throw std::runtime_error(path + ": root attribute '" + name + "' is not a string");
  const Handle space = checked(H5Aget_space(a.get()), H5Sclose, path, "get space of root attribute '" + name + "'");
  auto values = read_strings(path, type.get(), space.get(), "root attribute '" + name + "'",
                             [&](hid_t memory, void* buffer) { return H5Aread(a.get(), memory, buffer); });
  if (values.size() != 1) throw std::runtime_error(path + ": root attribute '" + name + "' is not a scalar");
  return values.front();
}

bool is_fixed_column(const std::string& name) {
  if (name == "platform" || name == "P") return true;
  for (const Column& c : fixed_tail())
    if (c.name == name) return true;
  return false;
}

void write_file(const std::string& path, const std::string& file_path, const SweepTable& table) {
  std::size_t row_size = 0;
  const std::vector<Column> cols = layout(table.param_names, row_size);
  Handle file = create_file(path, file_path);
  {
    const Handle strings = utf8_string_type(path);
    string_attribute(path, file.get(), strings, "format", FORMAT_NAME);
    {
      const Handle space = checked(H5Screate(H5S_SCALAR), H5Sclose, path, "create scalar dataspace");
      const Handle a = checked(H5Acreate2(file.get(), "format_version", H5T_STD_I32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                               H5Aclose, path, "create attribute 'format_version'");
      const int version = SWEEP_FORMAT_VERSION;
      checked(H5Awrite(a.get(), H5T_NATIVE_INT, &version), path, "write attribute 'format_version'");
    }
    for (const auto& [key, value] : table.attributes) string_attribute(path, file.get(), strings, key, value);

    const Handle mem = memory_type(path, cols, row_size, strings);
    const Handle file_type = checked(H5Tcopy(mem.get()), H5Tclose, path, "copy the row type");
    checked(H5Tpack(file_type.get()), path, "pack the row type");
    // Rows as bytes; strings point into the rows' own std::strings (and the derived status into `statuses`).
    std::vector<unsigned char> buffer(row_size * table.rows.size(), 0);
    std::vector<SweepRow> rows = table.rows;  // the accessors, shared with the reader, take rows by reference
    std::vector<std::string> statuses;
    statuses.reserve(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      SweepRow& row = rows[i];
      if (row.params.size() != table.param_names.size())
        throw std::runtime_error(path + ": row " + std::to_string(i) + " has " + std::to_string(row.params.size()) +
                                 " parameter values for " + std::to_string(table.param_names.size()) + " columns");
      statuses.push_back(row.status());
      unsigned char* base = buffer.data() + i * row_size;
      for (const Column& c : cols) {
        unsigned char* at = base + c.offset;
        if (c.name == "status") {
          const char* p = statuses.back().c_str();
          std::memcpy(at, &p, sizeof p);
        } else if (c.name == "P") {
          const std::int32_t P = row.P;
          std::memcpy(at, &P, sizeof P);
        } else if (c.param_index >= 0) {
          std::memcpy(at, &row.params[static_cast<std::size_t>(c.param_index)], sizeof(double));
        } else if (c.str) {
          const char* p = c.str(row)->c_str();
          std::memcpy(at, &p, sizeof p);
        } else if (c.f64) {
          std::memcpy(at, c.f64(row), sizeof(double));
        } else if (c.u64) {
          std::memcpy(at, c.u64(row), sizeof(std::uint64_t));
        }
      }
    }
    const hsize_t dims[1] = {table.rows.size()};
    const Handle space = checked(H5Screate_simple(1, dims, nullptr), H5Sclose, path, "create dataspace");
    const Handle dcpl = checked(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, path, "create dataset property list");
    checked(H5Pset_obj_track_times(dcpl.get(), 0), path, "disable dataset time tracking");
    const Handle dataset = checked(H5Dcreate2(file.get(), DATASET, file_type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                                   H5Dclose, path, "create dataset /sweep");
    if (!table.rows.empty())
      checked(H5Dwrite(dataset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()), path, "write dataset /sweep");
  }
  checked(file.close(), path, "close (flush) temporary file " + file_path);
}

}  // namespace

std::string format_value(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  // The shortest form that reads back to v.
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string SweepRow::status() const {
  const bool ran = replay.status != "not run" || model.status != "not run";
  const bool ok = (replay.status == "ok" || replay.status == "not run") && (model.status == "ok" || model.status == "not run");
  return ran && ok ? "ok" : "failed";
}

void write_sweep_hdf5(const std::string& path, const SweepTable& table) {
  std::set<std::string> seen;
  for (const std::string& p : table.param_names) {
    if (p.empty() || is_fixed_column(p))
      throw std::runtime_error(path + ": parameter '" + p + "' cannot be a column (empty or the name of a fixed column)");
    if (!seen.insert(p).second) throw std::runtime_error(path + ": parameter '" + p + "' appears twice");
  }
  for (const auto& [key, value] : table.attributes)
    if (key.empty() || key == "format" || key == "format_version")
      throw std::runtime_error(path + ": attribute '" + key + "' is empty or reserved");
  const QuietHdf5Errors quiet;
  write_atomically(path, [&](const std::string& temporary) { write_file(path, temporary, table); });
}

SweepTable read_sweep_hdf5(const std::string& path) {
  const QuietHdf5Errors quiet;
  const Handle file = open_for_reading(path);
  const std::string format = read_string_attribute(path, file.get(), "format");
  if (format != FORMAT_NAME)
    throw std::runtime_error(path + ": not an mksim sweep (root attribute format = '" + format + "')");
  {
    const htri_t exists = H5Aexists(file.get(), "format_version");
    if (exists <= 0) throw std::runtime_error(path + ": missing root attribute 'format_version'");
    const Handle a = checked(H5Aopen(file.get(), "format_version", H5P_DEFAULT), H5Aclose, path, "open root attribute 'format_version'");
    int version = 0;
    checked(H5Aread(a.get(), H5T_NATIVE_INT, &version), path, "read root attribute 'format_version'");
    if (version != SWEEP_FORMAT_VERSION)
      throw std::runtime_error(path + ": unsupported sweep format_version " + std::to_string(version) + " (this build reads " +
                               std::to_string(SWEEP_FORMAT_VERSION) + ")");
  }
  SweepTable table;
  {
    const std::vector<std::string> names = attribute_names(path, file.get(), "the root group");
    for (const std::string& n : names)
      if (n != "format" && n != "format_version") table.attributes.emplace_back(n, read_string_attribute(path, file.get(), n));
    std::sort(table.attributes.begin(), table.attributes.end());
  }
  const htri_t exists = H5Lexists(file.get(), DATASET, H5P_DEFAULT);
  if (exists < 0) fail(path, "look up dataset /sweep");
  if (exists == 0) throw std::runtime_error(path + ": missing dataset /sweep");
  const Handle dataset = checked(H5Dopen2(file.get(), DATASET, H5P_DEFAULT), H5Dclose, path, "open dataset /sweep");
  const Handle type = checked(H5Dget_type(dataset.get()), H5Tclose, path, "get type of dataset /sweep");
  if (H5Tget_class(type.get()) != H5T_COMPOUND) throw std::runtime_error(path + ": dataset /sweep is not a table (compound type)");
  const int members = H5Tget_nmembers(type.get());
  if (members < 0) fail(path, "count the columns of /sweep");
  std::set<std::string> present;
  for (int i = 0; i < members; ++i) {
    char* raw = H5Tget_member_name(type.get(), static_cast<unsigned>(i));
    if (raw == nullptr) fail(path, "get the name of column " + std::to_string(i) + " of /sweep");
    const std::string name = raw;
    H5free_memory(raw);
    present.insert(name);
    if (!is_fixed_column(name)) {
      if (H5Tget_member_class(type.get(), static_cast<unsigned>(i)) != H5T_FLOAT)
        throw std::runtime_error(path + ": column '" + name + "' of /sweep is not a parameter (float64) nor a known column");
      table.param_names.push_back(name);
    }
  }
  std::size_t row_size = 0;
  const std::vector<Column> cols = layout(table.param_names, row_size);
  for (const Column& c : cols)
    if (!present.count(c.name)) throw std::runtime_error(path + ": dataset /sweep has no column '" + c.name + "'");
  const Handle strings = utf8_string_type(path);
  const Handle mem = memory_type(path, cols, row_size, strings);
  const Handle space = checked(H5Dget_space(dataset.get()), H5Sclose, path, "get space of dataset /sweep");
  if (H5Sget_simple_extent_ndims(space.get()) != 1) throw std::runtime_error(path + ": dataset /sweep is not one-dimensional");
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) fail(path, "get size of dataset /sweep");
  std::vector<unsigned char> buffer(row_size * static_cast<std::size_t>(n), 0);
  if (n > 0) {
    checked(H5Dread(dataset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()), path, "read dataset /sweep");
  }
  for (hssize_t i = 0; i < n; ++i) {
    SweepRow row;
    row.params.resize(table.param_names.size());
    const unsigned char* base = buffer.data() + static_cast<std::size_t>(i) * row_size;
    for (const Column& c : cols) {
      const unsigned char* at = base + c.offset;
      if (c.kind == Kind::STRING) {
        const char* p = nullptr;
        std::memcpy(&p, at, sizeof p);
        if (c.str) *c.str(row) = p ? p : "";
      } else if (c.name == "P") {
        std::int32_t P = 0;
        std::memcpy(&P, at, sizeof P);
        row.P = P;
      } else if (c.param_index >= 0) {
        std::memcpy(&row.params[static_cast<std::size_t>(c.param_index)], at, sizeof(double));
      } else if (c.f64) {
        std::memcpy(c.f64(row), at, sizeof(double));
      } else if (c.u64) {
        std::memcpy(c.u64(row), at, sizeof(std::uint64_t));
      }
    }
    table.rows.push_back(std::move(row));
  }
  if (n > 0) H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, buffer.data());
  return table;
}

std::vector<BestRow> best_over(const SweepTable& table, const std::string& over, const std::string& metric) {
  if (metric != "replay" && metric != "model") throw std::invalid_argument("the metric must be replay or model, not \"" + metric + "\"");
  // Columns: platform, P, parameters; `over` is one of them.
  std::vector<std::string> names{"platform", "P"};
  names.insert(names.end(), table.param_names.begin(), table.param_names.end());
  const auto it = std::find(names.begin(), names.end(), over);
  if (it == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("no column \"" + over + "\" in the sweep (columns: " + known + ")");
  }
  const std::size_t over_index = static_cast<std::size_t>(it - names.begin());
  auto value = [&](const SweepRow& r, std::size_t k) {
    if (k == 0) return r.platform;
    if (k == 1) return std::to_string(r.P);
    return format_value(r.params[k - 2]);
  };
  std::vector<BestRow> out;
  std::map<std::vector<std::string>, std::size_t> index;
  std::map<std::size_t, std::vector<std::pair<double, std::string>>> times;
  for (const SweepRow& r : table.rows) {
    const SweepPart& part = metric == "replay" ? r.replay : r.model;
    if (part.status != "ok" || !std::isfinite(part.time_s)) continue;
    std::vector<std::string> key;
    BestRow group;
    for (std::size_t k = 0; k < names.size(); ++k)
      if (k != over_index) {
        key.push_back(value(r, k));
        group.group.emplace_back(names[k], key.back());
      }
    auto [pos, fresh] = index.emplace(key, out.size());
    if (fresh) out.push_back(std::move(group));
    times[pos->second].emplace_back(part.time_s, value(r, over_index));
  }
  for (auto& [i, t] : times) {
    std::stable_sort(t.begin(), t.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out[i].best = t.front().second;
    out[i].time_s = t.front().first;
    out[i].candidates = static_cast<int>(t.size());
    if (t.size() > 1) out[i].runner_up_s = t[1].first;
  }
  return out;
}

}  // namespace mksim::results
