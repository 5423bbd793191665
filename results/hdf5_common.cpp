// The shared HDF5 plumbing of results/ (see hdf5_common.hpp).
#include "results/hdf5_common.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace mksim::results::detail {

namespace {

// The most specific message on HDF5's error stack (e.g. "truncated file: eof = ..."), then clears the stack.
std::string hdf5_detail() {
  std::string detail;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* error, void* out) -> herr_t {
        if (n == 0 && error->desc != nullptr) {
          try {
            *static_cast<std::string*>(out) = std::string(error->func_name) + ": " + error->desc;
          } catch (...) {
            return -1;
          }
        }
        return 0;
      },
      &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
}

// Makes the finished temporary file durable before it is renamed into place.
void sync_file(const std::string& path, const std::string& file_path) {
  const int fd = ::open(file_path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error(path + ": open " + file_path + " to sync it: " + std::strerror(errno));
  const int status = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (status != 0) throw std::runtime_error(path + ": fsync " + file_path + ": " + std::strerror(error));
}

}  // namespace

void fail(const std::string& path, const std::string& operation) {
  const std::string detail = hdf5_detail();
  throw std::runtime_error(path + ": " + operation + (detail.empty() ? "" : " [HDF5: " + detail + "]"));
}

Handle checked(hid_t id, herr_t (*close)(hid_t), const std::string& path, const std::string& operation) {
  if (id < 0) fail(path, operation);
  return Handle(id, close);
}

void checked(herr_t status, const std::string& path, const std::string& operation) {
  if (status < 0) fail(path, operation);
}

Handle utf8_string_type(const std::string& path) {
  Handle type = checked(H5Tcopy(H5T_C_S1), H5Tclose, path, "copy string type");
  checked(H5Tset_size(type.get(), H5T_VARIABLE), path, "make string type variable-length");
  checked(H5Tset_cset(type.get(), H5T_CSET_UTF8), path, "set string type to UTF-8");
  return type;
}

Handle create_file(const std::string& path, const std::string& file_path) {
  const Handle fcpl = checked(H5Pcreate(H5P_FILE_CREATE), H5Pclose, path, "create file property list");
  checked(H5Pset_obj_track_times(fcpl.get(), 0), path, "disable root group time tracking");
  checked(H5Pset_link_creation_order(fcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), path,
          "set root link creation order");
  const Handle fapl = checked(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, path, "create file access property list");
  // SEMI: closing the file fails if anything is still open, instead of silently deferring the close.
  checked(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_SEMI), path, "set file close degree");
  return checked(H5Fcreate(file_path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), H5Fclose, path,
                 "create temporary file " + file_path);
}

Handle open_for_reading(const std::string& path) {
  const Handle fapl = checked(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, path, "create file access property list");
  // STRONG: closing the file also closes anything an error path left open.
  checked(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), path, "set file close degree");
  return checked(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose, path, "open as HDF5 file");
}

void write_atomically(const std::string& path, const std::function<void(const std::string& temporary)>& write) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  try {
    write(temporary);
    sync_file(path, temporary);
    if (std::rename(temporary.c_str(), path.c_str()) != 0)
      throw std::runtime_error(path + ": rename " + temporary + " into place: " + std::strerror(errno));
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
}

namespace {

// H5Aiterate2 / H5Literate callback: appends the name (no exception may cross the C library).
template <class Info>
herr_t collect_name(hid_t, const char* name, const Info*, void* out) {
  try {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  } catch (...) {
    return -1;
  }
}

}  // namespace

std::vector<std::string> attribute_names(const std::string& path, hid_t object, const std::string& label) {
  std::vector<std::string> names;
  checked(H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name<H5A_info_t>, &names), path,
          "list the attributes of " + label);
  return names;
}

std::vector<std::string> link_names(const std::string& path, hid_t group, const std::string& label) {
  std::vector<std::string> names;
  checked(H5Literate(group, H5_INDEX_CRT_ORDER, H5_ITER_INC, nullptr, collect_name<H5L_info_t>, &names), path,
          "list " + label);
  return names;
}

std::vector<std::string> read_strings(const std::string& path, hid_t file_type, hid_t space, const std::string& label,
                                      const std::function<herr_t(hid_t, void*)>& read) {
  const hssize_t npoints = H5Sget_simple_extent_npoints(space);
  if (npoints < 0) fail(path, "get size of " + label);
  const auto n = static_cast<std::size_t>(npoints);
  std::vector<std::string> values;
  values.reserve(n);
  if (n == 0) return values;
  const Handle memory_type = checked(H5Tcopy(file_type), H5Tclose, path, "copy type of " + label);
  const htri_t variable = H5Tis_variable_str(file_type);
  if (variable < 0) fail(path, "inspect type of " + label);
  if (variable > 0) {
    std::vector<char*> pointers(n, nullptr);
    checked(read(memory_type.get(), pointers.data()), path, "read " + label);
    for (const char* p : pointers) values.emplace_back(p == nullptr ? "" : p);
    H5Dvlen_reclaim(memory_type.get(), space, H5P_DEFAULT, pointers.data());
  } else {
    const std::size_t size = H5Tget_size(file_type);
    std::vector<char> buffer(n * size);
    checked(read(memory_type.get(), buffer.data()), path, "read " + label);
    const bool space_padded = H5Tget_strpad(file_type) == H5T_STR_SPACEPAD;
    for (std::size_t i = 0; i < n; ++i) {
      std::string value(buffer.data() + i * size, size);
      const std::size_t end = space_padded ? value.find_last_not_of(' ') + 1 : value.find('\0');
      if (end != std::string::npos) value.resize(end);
      values.push_back(std::move(value));
    }
  }
  return values;
}

}  // namespace mksim::results::detail
