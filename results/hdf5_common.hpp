// Internal to results/: the HDF5 C API behind small RAII handles, checked calls that name the file and the
// operation, and the atomic write (temporary file, fsync, rename) that every mksim HDF5 file goes through.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace mksim::results::detail {

/** @brief Owns one HDF5 identifier and closes it with the matching H5?close. */
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      close_ = other.close_;
    }
    return *this;
  }
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  /** @brief Closes now and returns the status, for closes whose failure matters (the file). */
  herr_t close() { return id_ < 0 ? 0 : close_(std::exchange(id_, H5I_INVALID_HID)); }

 private:
  void reset() {
    if (id_ >= 0) close_(std::exchange(id_, H5I_INVALID_HID));
  }
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

/** @brief Keeps HDF5 from printing its error stack during one call (our exceptions report it), then restores
 *  whatever handler the caller had. */
class QuietHdf5Errors {
 public:
  QuietHdf5Errors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  QuietHdf5Errors(const QuietHdf5Errors&) = delete;
  QuietHdf5Errors& operator=(const QuietHdf5Errors&) = delete;
  ~QuietHdf5Errors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/** @brief Raises the error of one failed operation on `path`, with HDF5's innermost message when it has one. */
[[noreturn]] void fail(const std::string& path, const std::string& operation);

/** @brief The handle of a successful call, else fail(path, operation). */
Handle checked(hid_t id, herr_t (*close)(hid_t), const std::string& path, const std::string& operation);
void checked(herr_t status, const std::string& path, const std::string& operation);

/** @brief Variable-length UTF-8 string type: what h5py writes for str, and reads back with .asstr(). */
Handle utf8_string_type(const std::string& path);

/** @brief A new file at `file_path` with no time stamps and tracked link order (errors name `path`). */
Handle create_file(const std::string& path, const std::string& file_path);

/** @brief Opens `path` read-only (closing it closes whatever an error path left open). */
Handle open_for_reading(const std::string& path);

/** @brief Calls write(temporary) for a temporary file beside `path`, fsyncs it and renames it over `path`: `path`
 *  is never half written. The temporary file is removed when anything fails. */
void write_atomically(const std::string& path, const std::function<void(const std::string& temporary)>& write);

/** @brief The names of `object`'s attributes, by name; `label` names the object in errors. */
std::vector<std::string> attribute_names(const std::string& path, hid_t object, const std::string& label);

/** @brief The names of the links in a group, in creation order (the order they were written). */
std::vector<std::string> link_names(const std::string& path, hid_t group, const std::string& label);

/** @brief One column of a table: field(row) for every row. */
template <class Row, class Field>
auto column_of(const std::vector<Row>& rows, Field field) {
  std::vector<std::decay_t<decltype(field(rows.front()))>> column;
  column.reserve(rows.size());
  for (const Row& row : rows) column.push_back(field(row));
  return column;
}

/** @brief Writes groups, scalar attributes and one-dimensional column datasets (no time stamps, link creation
 *  order tracked: h5py lists columns in the order written); every call checked and named by `label`. */
class Writer {
 public:
  explicit Writer(std::string path) : path_(std::move(path)) {
    dcpl_ = checked(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, path_, "create dataset property list");
    checked(H5Pset_obj_track_times(dcpl_.get(), 0), path_, "disable dataset time tracking");
    gcpl_ = checked(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, path_, "create group property list");
    checked(H5Pset_obj_track_times(gcpl_.get(), 0), path_, "disable group time tracking");
    checked(H5Pset_link_creation_order(gcpl_.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), path_,
            "set group link creation order");
    string_type_ = utf8_string_type(path_);
  }

  Handle group(hid_t parent, const std::string& name, const std::string& label) {
    return checked(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl_.get(), H5P_DEFAULT), H5Gclose, path_,
                   "create group " + label);
  }

  void string_attribute(hid_t object, const std::string& label, const char* name, const std::string& value) {
    const char* data = value.c_str();
    attribute(object, label, name, string_type_.get(), string_type_.get(), &data);
  }
  void attribute(hid_t object, const std::string& label, const char* name, double value) {
    attribute(object, label, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
  }
  void attribute(hid_t object, const std::string& label, const char* name, std::uint64_t value) {
    attribute(object, label, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
  }
  void attribute(hid_t object, const std::string& label, const char* name, int value) {
    attribute(object, label, name, H5T_STD_I32LE, H5T_NATIVE_INT, &value);
  }

  void column(hid_t group, const std::string& table, const char* name, const std::vector<double>& values) {
    write_column(group, table, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.size(), values.data());
  }
  void column(hid_t group, const std::string& table, const char* name, const std::vector<std::uint64_t>& values) {
    write_column(group, table, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, values.size(), values.data());
  }
  void column(hid_t group, const std::string& table, const char* name, const std::vector<int>& values) {
    write_column(group, table, name, H5T_STD_I32LE, H5T_NATIVE_INT, values.size(), values.data());
  }
  void column(hid_t group, const std::string& table, const char* name, const std::vector<std::uint8_t>& values) {
    write_column(group, table, name, H5T_STD_U8LE, H5T_NATIVE_UINT8, values.size(), values.data());
  }
  void column(hid_t group, const std::string& table, const char* name, const std::vector<std::string>& values) {
    const std::vector<const char*> pointers = column_of(values, [](const std::string& s) { return s.c_str(); });
    write_column(group, table, name, string_type_.get(), string_type_.get(), values.size(), pointers.data());
  }

 private:
  void attribute(hid_t object, const std::string& label, const char* name, hid_t file_type, hid_t memory_type,
                 const void* value) {
    const std::string operation = "attribute '" + std::string(name) + "' of " + label;
    const Handle space = checked(H5Screate(H5S_SCALAR), H5Sclose, path_, "create scalar dataspace");
    const Handle attr = checked(H5Acreate2(object, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                                path_, "create " + operation);
    checked(H5Awrite(attr.get(), memory_type, value), path_, "write " + operation);
  }

  void write_column(hid_t group, const std::string& table, const char* name, hid_t file_type, hid_t memory_type,
                    std::size_t rows, const void* data) {
    const std::string label = "dataset " + table + "/" + name;
    const hsize_t dims[1] = {rows};
    const Handle space = checked(H5Screate_simple(1, dims, nullptr), H5Sclose, path_, "create dataspace");
    const Handle dataset = checked(H5Dcreate2(group, name, file_type, space.get(), H5P_DEFAULT, dcpl_.get(),
                                              H5P_DEFAULT),
                                   H5Dclose, path_, "create " + label);
    if (rows > 0)
      checked(H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), path_, "write " + label);
  }

  std::string path_;
  Handle dcpl_, gcpl_, string_type_;
};

/** @brief Reads variable-length strings (as written here and by h5py) or fixed-length ones (numpy 'S') through
 *  read(memory_type, buffer); `label` names the object in errors. */
std::vector<std::string> read_strings(const std::string& path, hid_t file_type, hid_t space, const std::string& label,
                                      const std::function<herr_t(hid_t, void*)>& read);

}  // namespace mksim::results::detail
