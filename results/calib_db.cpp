// HDF5 writer and reader of the calibration database (layout: calibration/README.md). C API behind small RAII
// handles (results/hdf5_common.hpp), every call checked and named in the error it raises; atomic replacement.
#include "results/calib_db.hpp"

#include "results/hdf5_common.hpp"

#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace mksim::results {
namespace {

using namespace detail;

constexpr const char* FORMAT_NAME = "mksim-calibration";

// --- writing ---

void validate_for_writing(const std::string& path, const CalibDb& db) {
  const auto has_nul = [](const std::string& s) { return s.find('\0') != std::string::npos; };
  for (const std::string* s : {&db.machine, &db.date_utc, &db.hostname, &db.mpi_library, &db.config})
    if (has_nul(*s)) throw std::runtime_error(path + ": a root attribute contains a NUL character");
  std::set<std::string> names;
  for (const CalibKernel& kernel : db.kernels) {
    const std::string where = path + ": kernel '" + kernel.name + "'";
    if (kernel.name.empty() || kernel.name.find('/') != std::string::npos || kernel.name == "." || has_nul(kernel.name))
      throw std::runtime_error(where + ": invalid kernel name");
    if (!names.insert(kernel.name).second) throw std::runtime_error(where + " appears twice");
    if (has_nul(kernel.unit) || has_nul(kernel.date_utc)) throw std::runtime_error(where + ": NUL in an attribute");
    for (const CalibSize& size : kernel.sizes)
      if (size.outlier.size() != size.times_s.size())
        throw std::runtime_error(where + ": size " + std::to_string(size.size_bytes) + " has " +
                                 std::to_string(size.times_s.size()) + " repetitions but " +
                                 std::to_string(size.outlier.size()) + " outlier flags");
    for (const CalibRegime& regime : kernel.fit)
      if (has_nul(regime.name)) throw std::runtime_error(where + ": NUL in a regime name");
  }
}

void write_kernel(Writer& writer, hid_t kernels, const CalibKernel& kernel) {
  const std::string label = "/kernels/" + kernel.name;
  const Handle group = writer.group(kernels, kernel.name, label);
  writer.string_attribute(group.get(), label, "unit", kernel.unit);
  writer.string_attribute(group.get(), label, "date_utc", kernel.date_utc);
  writer.attribute(group.get(), label, "wall_s", kernel.wall_s);
  writer.attribute(group.get(), label, "breakpoint_bytes", kernel.breakpoint_bytes);

  const std::vector<CalibSize>& sizes = kernel.sizes;
  const std::string sizes_label = label + "/sizes";
  const Handle sg = writer.group(group.get(), "sizes", sizes_label);
  writer.column(sg.get(), sizes_label, "size_bytes", column_of(sizes, [](const CalibSize& s) { return s.size_bytes; }));
  writer.column(sg.get(), sizes_label, "iterations", column_of(sizes, [](const CalibSize& s) { return s.iterations; }));
  writer.column(sg.get(), sizes_label, "repetitions",
                column_of(sizes, [](const CalibSize& s) { return std::uint64_t(s.times_s.size()); }));
  writer.column(sg.get(), sizes_label, "mean_s", column_of(sizes, [](const CalibSize& s) { return s.mean_s; }));
  writer.column(sg.get(), sizes_label, "median_s", column_of(sizes, [](const CalibSize& s) { return s.median_s; }));
  writer.column(sg.get(), sizes_label, "stddev_s", column_of(sizes, [](const CalibSize& s) { return s.stddev_s; }));
  writer.column(sg.get(), sizes_label, "ci95_low_s", column_of(sizes, [](const CalibSize& s) { return s.ci95_low_s; }));
  writer.column(sg.get(), sizes_label, "ci95_high_s",
                column_of(sizes, [](const CalibSize& s) { return s.ci95_high_s; }));
  writer.column(sg.get(), sizes_label, "outliers", column_of(sizes, [](const CalibSize& s) {
                  std::uint64_t n = 0;
                  for (std::uint8_t flag : s.outlier) n += flag != 0;
                  return n;
                }));

  std::vector<std::uint64_t> rep_size;
  std::vector<double> rep_time;
  std::vector<std::uint8_t> rep_outlier;
  for (const CalibSize& s : sizes) {
    rep_size.insert(rep_size.end(), s.times_s.size(), s.size_bytes);
    rep_time.insert(rep_time.end(), s.times_s.begin(), s.times_s.end());
    rep_outlier.insert(rep_outlier.end(), s.outlier.begin(), s.outlier.end());
  }
  const std::string reps_label = label + "/repetitions";
  const Handle rg = writer.group(group.get(), "repetitions", reps_label);
  writer.column(rg.get(), reps_label, "size_bytes", rep_size);
  writer.column(rg.get(), reps_label, "time_s", rep_time);
  writer.column(rg.get(), reps_label, "outlier", rep_outlier);

  const std::vector<CalibRegime>& fit = kernel.fit;
  const std::string fit_label = label + "/fit";
  const Handle fg = writer.group(group.get(), "fit", fit_label);
  writer.column(fg.get(), fit_label, "regime", column_of(fit, [](const CalibRegime& r) { return r.name; }));
  writer.column(fg.get(), fit_label, "from_bytes", column_of(fit, [](const CalibRegime& r) { return r.from_bytes; }));
  writer.column(fg.get(), fit_label, "to_bytes", column_of(fit, [](const CalibRegime& r) { return r.to_bytes; }));
  writer.column(fg.get(), fit_label, "rho_s", column_of(fit, [](const CalibRegime& r) { return r.rho_s; }));
  writer.column(fg.get(), fit_label, "beta_s_per_byte",
                column_of(fit, [](const CalibRegime& r) { return r.beta_s_per_byte; }));
  writer.column(fg.get(), fit_label, "rel_rss", column_of(fit, [](const CalibRegime& r) { return r.rel_rss; }));
  writer.column(fg.get(), fit_label, "points", column_of(fit, [](const CalibRegime& r) { return r.points; }));
}

void write_file(const std::string& path, const std::string& file_path, const CalibDb& db) {
  Handle file = create_file(path, file_path);
  {
    Writer writer(path);
    const hid_t root = file.get();
    writer.string_attribute(root, "/", "format", FORMAT_NAME);
    writer.attribute(root, "/", "format_version", CALIB_FORMAT_VERSION);
    writer.string_attribute(root, "/", "machine", db.machine);
    writer.string_attribute(root, "/", "date_utc", db.date_utc);
    writer.string_attribute(root, "/", "hostname", db.hostname);
    writer.string_attribute(root, "/", "mpi_library", db.mpi_library);
    writer.attribute(root, "/", "np", db.np);
    writer.string_attribute(root, "/", "config", db.config);
    const Handle kernels = writer.group(root, "kernels", "/kernels");
    for (const CalibKernel& kernel : db.kernels) write_kernel(writer, kernels.get(), kernel);
  }
  checked(file.close(), path, "close (flush) temporary file " + file_path);
}

// --- reading ---

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  Handle group(hid_t parent, const std::string& name, const std::string& label) {
    const htri_t exists = H5Lexists(parent, name.c_str(), H5P_DEFAULT);
    if (exists < 0) fail(path_, "look up group " + label);
    if (exists == 0) throw std::runtime_error(path_ + ": missing group " + label);
    return checked(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose, path_, "open group " + label);
  }

  /** @brief Names of the links in a group, in creation order (the order they were written). */
  std::vector<std::string> children(hid_t group, const std::string& label) { return link_names(path_, group, label); }

  std::string string_attribute(hid_t object, const std::string& label, const char* name) {
    const Handle attr = open_attribute(object, label, name, H5T_STRING, "a string");
    const std::string what = "attribute '" + std::string(name) + "' of " + label;
    const Handle type = checked(H5Aget_type(attr.get()), H5Tclose, path_, "get type of " + what);
    const Handle space = checked(H5Aget_space(attr.get()), H5Sclose, path_, "get space of " + what);
    if (H5Sget_simple_extent_npoints(space.get()) != 1) throw std::runtime_error(path_ + ": " + what + " is not a scalar");
    const htri_t variable = H5Tis_variable_str(type.get());
    if (variable < 0) fail(path_, "inspect type of " + what);
    if (variable == 0) throw std::runtime_error(path_ + ": " + what + " is not a variable-length string");
    char* data = nullptr;
    checked(H5Aread(attr.get(), type.get(), &data), path_, "read " + what);
    std::string value = data == nullptr ? "" : data;
    H5free_memory(data);
    return value;
  }

  template <class T>
  T number_attribute(hid_t object, const std::string& label, const char* name, hid_t memory_type,
                     H5T_class_t expected) {
    const Handle attr = open_attribute(object, label, name, expected,
                                       expected == H5T_FLOAT ? "floating point" : "an integer");
    T value{};
    checked(H5Aread(attr.get(), memory_type, &value), path_,
            "read attribute '" + std::string(name) + "' of " + label);
    return value;
  }

  template <class T>
  std::vector<T> numbers(hid_t group, const std::string& table, const char* name, hid_t memory_type,
                         H5T_class_t expected) {
    const std::string label = "dataset " + table + "/" + name;
    const Handle dataset = open_dataset(group, label, name);
    const Handle space = checked(H5Dget_space(dataset.get()), H5Sclose, path_, "get space of " + label);
    const Handle type = checked(H5Dget_type(dataset.get()), H5Tclose, path_, "get type of " + label);
    check_shape(space.get(), type.get(), expected, label);
    std::vector<T> values(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space.get())));
    if (!values.empty())
      checked(H5Dread(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), path_,
              "read " + label);
    return values;
  }

  std::vector<std::string> strings(hid_t group, const std::string& table, const char* name) {
    const std::string label = "dataset " + table + "/" + name;
    const Handle dataset = open_dataset(group, label, name);
    const Handle space = checked(H5Dget_space(dataset.get()), H5Sclose, path_, "get space of " + label);
    const Handle type = checked(H5Dget_type(dataset.get()), H5Tclose, path_, "get type of " + label);
    check_shape(space.get(), type.get(), H5T_STRING, label);
    const htri_t variable = H5Tis_variable_str(type.get());
    if (variable < 0) fail(path_, "inspect type of " + label);
    if (variable == 0) throw std::runtime_error(path_ + ": " + label + " is not of variable-length string type");
    std::vector<char*> pointers(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space.get())), nullptr);
    std::vector<std::string> values;
    if (pointers.empty()) return values;
    checked(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()), path_,
            "read " + label);
    for (const char* p : pointers) values.emplace_back(p == nullptr ? "" : p);
    H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, pointers.data());
    return values;
  }

  void same_length(const std::string& table, std::initializer_list<std::pair<const char*, std::size_t>> columns) {
    const auto& [first_name, first_rows] = *columns.begin();
    for (const auto& [name, n] : columns)
      if (n != first_rows)
        throw std::runtime_error(path_ + ": dataset " + table + "/" + name + " has " + std::to_string(n) +
                                 " rows but " + table + "/" + first_name + " has " + std::to_string(first_rows));
  }

  const std::string& path() const { return path_; }

 private:
  Handle open_attribute(hid_t object, const std::string& label, const char* name, H5T_class_t expected,
                        const char* expected_name) {
    const std::string what = "attribute '" + std::string(name) + "' of " + label;
    const htri_t exists = H5Aexists(object, name);
    if (exists < 0) fail(path_, "look up " + what);
    if (exists == 0) throw std::runtime_error(path_ + ": missing " + what);
    Handle attr = checked(H5Aopen(object, name, H5P_DEFAULT), H5Aclose, path_, "open " + what);
    const Handle type = checked(H5Aget_type(attr.get()), H5Tclose, path_, "get type of " + what);
    if (H5Tget_class(type.get()) != expected) throw std::runtime_error(path_ + ": " + what + " is not " + expected_name);
    return attr;
  }

  Handle open_dataset(hid_t group, const std::string& label, const char* name) {
    const htri_t exists = H5Lexists(group, name, H5P_DEFAULT);
    if (exists < 0) fail(path_, "look up " + label);
    if (exists == 0) throw std::runtime_error(path_ + ": missing " + label);
    return checked(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose, path_, "open " + label);
  }

  void check_shape(hid_t space, hid_t type, H5T_class_t expected, const std::string& label) {
    if (H5Sget_simple_extent_ndims(space) != 1)
      throw std::runtime_error(path_ + ": " + label + " is not one-dimensional");
    if (H5Tget_class(type) != expected) throw std::runtime_error(path_ + ": " + label + " has the wrong type");
  }

  std::string path_;
};

std::vector<double> doubles(Reader& r, hid_t g, const std::string& table, const char* name) {
  return r.numbers<double>(g, table, name, H5T_NATIVE_DOUBLE, H5T_FLOAT);
}
std::vector<std::uint64_t> uint64s(Reader& r, hid_t g, const std::string& table, const char* name) {
  return r.numbers<std::uint64_t>(g, table, name, H5T_NATIVE_UINT64, H5T_INTEGER);
}

CalibKernel read_kernel(Reader& reader, hid_t kernels, const std::string& name) {
  const std::string& path = reader.path();
  const std::string label = "/kernels/" + name;
  const Handle group = reader.group(kernels, name, label);
  CalibKernel kernel;
  kernel.name = name;
  kernel.unit = reader.string_attribute(group.get(), label, "unit");
  kernel.date_utc = reader.string_attribute(group.get(), label, "date_utc");
  kernel.wall_s = reader.number_attribute<double>(group.get(), label, "wall_s", H5T_NATIVE_DOUBLE, H5T_FLOAT);
  kernel.breakpoint_bytes =
      reader.number_attribute<std::uint64_t>(group.get(), label, "breakpoint_bytes", H5T_NATIVE_UINT64, H5T_INTEGER);

  {
    const std::string t = label + "/sizes";
    const Handle g = reader.group(group.get(), "sizes", t);
    const auto size = uint64s(reader, g.get(), t, "size_bytes");
    const auto iterations = uint64s(reader, g.get(), t, "iterations");
    const auto repetitions = uint64s(reader, g.get(), t, "repetitions");
    const auto mean = doubles(reader, g.get(), t, "mean_s");
    const auto median = doubles(reader, g.get(), t, "median_s");
    const auto stddev = doubles(reader, g.get(), t, "stddev_s");
    const auto low = doubles(reader, g.get(), t, "ci95_low_s");
    const auto high = doubles(reader, g.get(), t, "ci95_high_s");
    const auto outliers = uint64s(reader, g.get(), t, "outliers");
    reader.same_length(t, {{"size_bytes", size.size()}, {"iterations", iterations.size()},
                           {"repetitions", repetitions.size()}, {"mean_s", mean.size()},
                           {"median_s", median.size()}, {"stddev_s", stddev.size()}, {"ci95_low_s", low.size()},
                           {"ci95_high_s", high.size()}, {"outliers", outliers.size()}});

    const std::string rt = label + "/repetitions";
    const Handle rg = reader.group(group.get(), "repetitions", rt);
    const auto rep_size = uint64s(reader, rg.get(), rt, "size_bytes");
    const auto rep_time = doubles(reader, rg.get(), rt, "time_s");
    const auto rep_outlier = reader.numbers<std::uint8_t>(rg.get(), rt, "outlier", H5T_NATIVE_UINT8, H5T_INTEGER);
    reader.same_length(rt, {{"size_bytes", rep_size.size()}, {"time_s", rep_time.size()},
                            {"outlier", rep_outlier.size()}});

    std::size_t row = 0;
    for (std::size_t i = 0; i < size.size(); ++i) {
      CalibSize s;
      s.size_bytes = size[i];
      s.iterations = iterations[i];
      s.mean_s = mean[i];
      s.median_s = median[i];
      s.stddev_s = stddev[i];
      s.ci95_low_s = low[i];
      s.ci95_high_s = high[i];
      std::uint64_t flagged = 0;
      for (std::uint64_t k = 0; k < repetitions[i]; ++k, ++row) {
        if (row >= rep_size.size() || rep_size[row] != size[i])
          throw std::runtime_error(path + ": dataset " + rt + "/size_bytes does not match " + t +
                                   "/repetitions at size " + std::to_string(size[i]));
        s.times_s.push_back(rep_time[row]);
        s.outlier.push_back(rep_outlier[row]);
        flagged += rep_outlier[row] != 0;
      }
      if (flagged != outliers[i])
        throw std::runtime_error(path + ": dataset " + t + "/outliers says " + std::to_string(outliers[i]) +
                                 " at size " + std::to_string(size[i]) + " but " + rt + "/outlier flags " +
                                 std::to_string(flagged));
      kernel.sizes.push_back(std::move(s));
    }
    if (row != rep_size.size())
      throw std::runtime_error(path + ": " + rt + " has " + std::to_string(rep_size.size()) + " rows but " + t +
                               "/repetitions sums to " + std::to_string(row));
  }
  {
    const std::string t = label + "/fit";
    const Handle g = reader.group(group.get(), "fit", t);
    auto regime = reader.strings(g.get(), t, "regime");
    const auto from = uint64s(reader, g.get(), t, "from_bytes");
    const auto to = uint64s(reader, g.get(), t, "to_bytes");
    const auto rho = doubles(reader, g.get(), t, "rho_s");
    const auto beta = doubles(reader, g.get(), t, "beta_s_per_byte");
    const auto rss = doubles(reader, g.get(), t, "rel_rss");
    const auto points = uint64s(reader, g.get(), t, "points");
    reader.same_length(t, {{"regime", regime.size()}, {"from_bytes", from.size()}, {"to_bytes", to.size()},
                           {"rho_s", rho.size()}, {"beta_s_per_byte", beta.size()}, {"rel_rss", rss.size()},
                           {"points", points.size()}});
    for (std::size_t i = 0; i < regime.size(); ++i)
      kernel.fit.push_back({std::move(regime[i]), from[i], to[i], rho[i], beta[i], rss[i], points[i]});
  }
  return kernel;
}

CalibDb read_file(const std::string& path, hid_t file) {
  Reader reader(path);
  CalibDb db;
  const std::string format = reader.string_attribute(file, "/", "format");
  if (format != FORMAT_NAME)
    throw std::runtime_error(path + ": not an mksim calibration database (root attribute format = '" + format + "')");
  const int version = reader.number_attribute<int>(file, "/", "format_version", H5T_NATIVE_INT, H5T_INTEGER);
  if (version != CALIB_FORMAT_VERSION)
    throw std::runtime_error(path + ": unsupported format_version " + std::to_string(version) +
                             " (this build reads " + std::to_string(CALIB_FORMAT_VERSION) + ")");
  db.machine = reader.string_attribute(file, "/", "machine");
  db.date_utc = reader.string_attribute(file, "/", "date_utc");
  db.hostname = reader.string_attribute(file, "/", "hostname");
  db.mpi_library = reader.string_attribute(file, "/", "mpi_library");
  db.np = reader.number_attribute<int>(file, "/", "np", H5T_NATIVE_INT, H5T_INTEGER);
  db.config = reader.string_attribute(file, "/", "config");
  const Handle kernels = reader.group(file, "kernels", "/kernels");
  for (const std::string& name : reader.children(kernels.get(), "group /kernels"))
    db.kernels.push_back(read_kernel(reader, kernels.get(), name));
  return db;
}

}  // namespace

void write_calib_db(const std::string& path, const CalibDb& db) {
  validate_for_writing(path, db);
  const QuietHdf5Errors quiet;
  write_atomically(path, [&](const std::string& temporary) { write_file(path, temporary, db); });
}

CalibDb read_calib_db(const std::string& path) {
  const QuietHdf5Errors quiet;
  const Handle file = open_for_reading(path);
  return read_file(path, file.get());
}

}  // namespace mksim::results
