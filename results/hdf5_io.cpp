// HDF5 writer and reader of RunResult (layout: results/README.md); the only code in mksim that includes HDF5.
// Uses the C API behind small RAII handles so that every call is checked and named in the error it raises.
#include "results/hdf5_io.hpp"

#include "results/hdf5_common.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace mksim::results {
namespace {

using namespace detail;

constexpr const char* FORMAT_NAME = "mksim-result";
constexpr const char* RESERVED_ATTRIBUTES[] = {"format", "format_version", "predicted_time_s", "critical_rank",
                                               "total_messages"};

// --- writing ---

void validate_for_writing(const std::string& path, const RunResult& result) {
  const auto has_nul = [](const std::string& s) { return s.find('\0') != std::string::npos; };
  std::set<std::string> seen;
  for (const auto& [key, value] : result.attributes) {
    const std::string where = path + ": attribute '" + key + "'";
    if (key.empty()) throw std::runtime_error(path + ": attribute with an empty key");
    if (std::find(std::begin(RESERVED_ATTRIBUTES), std::end(RESERVED_ATTRIBUTES), key) !=
        std::end(RESERVED_ATTRIBUTES))
      throw std::runtime_error(where + " uses a name reserved for the root attributes of the format");
    if (!seen.insert(key).second) throw std::runtime_error(where + " appears twice");
    if (has_nul(key) || has_nul(value)) throw std::runtime_error(where + " contains a NUL character");
  }
  for (const BlockTotals& block : result.blocks)
    if (has_nul(block.id) || has_nul(block.op) || has_nul(block.phase))
      throw std::runtime_error(path + ": block '" + block.id + "' has a string with a NUL character");
  for (const PhaseTotals& phase : result.phases)
    if (has_nul(phase.phase)) throw std::runtime_error(path + ": phase label with a NUL character");
}

// Writes the whole file at `file_path`; errors name `path` (what the user asked for).
void write_file(const std::string& path, const std::string& file_path, const RunResult& result) {
  Handle file = create_file(path, file_path);
  {
    Writer writer(path);
    const hid_t root = file.get();
    writer.string_attribute(root, "/", "format", FORMAT_NAME);
    const int version = FORMAT_VERSION;
    writer.attribute(root, "/", "format_version", version);
    writer.attribute(root, "/", "predicted_time_s", result.predicted_time_s);
    writer.attribute(root, "/", "critical_rank", result.critical_rank);
    writer.attribute(root, "/", "total_messages", result.total_messages);
    for (const auto& [key, value] : result.attributes) writer.string_attribute(root, "/", key.c_str(), value);

    const std::vector<RankTimes>& ranks = result.ranks;
    const Handle ranks_group = writer.group(root, "ranks", "/ranks");
    writer.column(ranks_group.get(), "/ranks", "finish_s", column_of(ranks, [](const RankTimes& r) { return r.finish_s; }));
    writer.column(ranks_group.get(), "/ranks", "compute_s", column_of(ranks, [](const RankTimes& r) { return r.compute_s; }));
    writer.column(ranks_group.get(), "/ranks", "comm_s", column_of(ranks, [](const RankTimes& r) { return r.comm_s; }));
    writer.column(ranks_group.get(), "/ranks", "wait_s", column_of(ranks, [](const RankTimes& r) { return r.wait_s; }));
    writer.column(ranks_group.get(), "/ranks", "messages_sent",
                  column_of(ranks, [](const RankTimes& r) { return r.messages_sent; }));
    writer.column(ranks_group.get(), "/ranks", "bytes_sent", column_of(ranks, [](const RankTimes& r) { return r.bytes_sent; }));

    const std::vector<BlockTotals>& blocks = result.blocks;
    const Handle blocks_group = writer.group(root, "blocks", "/blocks");
    writer.column(blocks_group.get(), "/blocks", "id", column_of(blocks, [](const BlockTotals& b) { return b.id; }));
    writer.column(blocks_group.get(), "/blocks", "op", column_of(blocks, [](const BlockTotals& b) { return b.op; }));
    writer.column(blocks_group.get(), "/blocks", "phase", column_of(blocks, [](const BlockTotals& b) { return b.phase; }));
    writer.column(blocks_group.get(), "/blocks", "executions",
                  column_of(blocks, [](const BlockTotals& b) { return b.executions; }));
    writer.column(blocks_group.get(), "/blocks", "time_s", column_of(blocks, [](const BlockTotals& b) { return b.time_s; }));
    writer.column(blocks_group.get(), "/blocks", "bytes", column_of(blocks, [](const BlockTotals& b) { return b.bytes; }));

    const std::vector<PhaseTotals>& phases = result.phases;
    const Handle phases_group = writer.group(root, "phases", "/phases");
    writer.column(phases_group.get(), "/phases", "phase", column_of(phases, [](const PhaseTotals& p) { return p.phase; }));
    writer.column(phases_group.get(), "/phases", "compute_s",
                  column_of(phases, [](const PhaseTotals& p) { return p.compute_s; }));
    writer.column(phases_group.get(), "/phases", "comm_s", column_of(phases, [](const PhaseTotals& p) { return p.comm_s; }));
    writer.column(phases_group.get(), "/phases", "wait_s", column_of(phases, [](const PhaseTotals& p) { return p.wait_s; }));
    writer.column(phases_group.get(), "/phases", "critical_rank_s",
                  column_of(phases, [](const PhaseTotals& p) { return p.critical_rank_s; }));
    writer.column(phases_group.get(), "/phases", "end_s", column_of(phases, [](const PhaseTotals& p) { return p.end_s; }));
  }
  checked(file.close(), path, "close (flush) temporary file " + file_path);
}

// --- reading ---

class Reader {
 public:
  Reader(std::string path, hid_t file) : path_(std::move(path)), file_(file) {}

  bool has_attribute(const std::string& name) {
    const htri_t exists = H5Aexists(file_, name.c_str());
    if (exists < 0) fail(path_, "look up root attribute '" + name + "'");
    return exists > 0;
  }

  Handle attribute(const std::string& name, H5T_class_t expected, const char* expected_name) {
    if (!has_attribute(name)) throw std::runtime_error(path_ + ": missing root attribute '" + name + "'");
    Handle attr = checked(H5Aopen(file_, name.c_str(), H5P_DEFAULT), H5Aclose, path_,
                          "open root attribute '" + name + "'");
    const Handle type = checked(H5Aget_type(attr.get()), H5Tclose, path_, "get type of root attribute '" + name + "'");
    if (H5Tget_class(type.get()) != expected)
      throw std::runtime_error(path_ + ": root attribute '" + name + "' is not " + expected_name);
    return attr;
  }

  template <class T>
  T number_attribute(const std::string& name, hid_t memory_type, H5T_class_t expected, const char* expected_name) {
    const Handle attr = attribute(name, expected, expected_name);
    T value{};
    checked(H5Aread(attr.get(), memory_type, &value), path_, "read root attribute '" + name + "'");
    return value;
  }

  std::string string_attribute(const std::string& name) {
    const Handle attr = attribute(name, H5T_STRING, "a string");
    const Handle space = checked(H5Aget_space(attr.get()), H5Sclose, path_, "get space of attribute '" + name + "'");
    const Handle type = checked(H5Aget_type(attr.get()), H5Tclose, path_, "get type of attribute '" + name + "'");
    std::vector<std::string> values = read_strings(path_, type.get(), space.get(), "root attribute '" + name + "'",
                                                   [&](hid_t memory_type, void* buffer) {
                                                     return H5Aread(attr.get(), memory_type, buffer);
                                                   });
    if (values.size() != 1) throw std::runtime_error(path_ + ": root attribute '" + name + "' is not a scalar");
    return std::move(values.front());
  }

  std::vector<std::string> attribute_names() { return detail::attribute_names(path_, file_, "the root group"); }

  Handle group(const char* name) {
    const htri_t exists = H5Lexists(file_, name, H5P_DEFAULT);
    if (exists < 0) fail(path_, std::string("look up group /") + name);
    if (exists == 0) throw std::runtime_error(path_ + ": missing group /" + name);
    return checked(H5Gopen2(file_, name, H5P_DEFAULT), H5Gclose, path_, std::string("open group /") + name);
  }

  std::vector<double> doubles(const Handle& group, const char* table, const char* name) {
    return numbers<double>(group, table, name, H5T_NATIVE_DOUBLE, H5T_FLOAT, "floating point");
  }
  std::vector<std::uint64_t> uint64s(const Handle& group, const char* table, const char* name) {
    return numbers<std::uint64_t>(group, table, name, H5T_NATIVE_UINT64, H5T_INTEGER, "integer");
  }
  std::vector<std::string> strings(const Handle& group, const char* table, const char* name) {
    const Column column = open_column(group, table, name, H5T_STRING, "string");
    return read_strings(path_, column.type.get(), column.space.get(), column.label, [&](hid_t memory_type, void* buffer) {
      return H5Dread(column.dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer);
    });
  }

  /** @brief Checks that all columns of a table have the same length; returns it. */
  std::size_t rows(const char* table, std::initializer_list<std::pair<const char*, std::size_t>> columns) {
    const auto& [first_name, first_rows] = *columns.begin();
    for (const auto& [name, n] : columns)
      if (n != first_rows)
        throw std::runtime_error(path_ + ": dataset /" + table + "/" + name + " has " + std::to_string(n) +
                                 " rows but /" + table + "/" + first_name + " has " + std::to_string(first_rows));
    return first_rows;
  }

 private:
  struct Column {
    Handle dataset, space, type;
    std::string label;
  };

  Column open_column(const Handle& group, const char* table, const char* name, H5T_class_t expected,
                     const char* expected_name) {
    Column column;
    column.label = std::string("dataset /") + table + "/" + name;
    const htri_t exists = H5Lexists(group.get(), name, H5P_DEFAULT);
    if (exists < 0) fail(path_, "look up " + column.label);
    if (exists == 0) throw std::runtime_error(path_ + ": missing " + column.label);
    column.dataset = checked(H5Dopen2(group.get(), name, H5P_DEFAULT), H5Dclose, path_, "open " + column.label);
    column.space = checked(H5Dget_space(column.dataset.get()), H5Sclose, path_, "get space of " + column.label);
    column.type = checked(H5Dget_type(column.dataset.get()), H5Tclose, path_, "get type of " + column.label);
    if (H5Sget_simple_extent_ndims(column.space.get()) != 1)
      throw std::runtime_error(path_ + ": " + column.label + " is not one-dimensional");
    if (H5Tget_class(column.type.get()) != expected)
      throw std::runtime_error(path_ + ": " + column.label + " is not of " + expected_name + " type");
    return column;
  }

  template <class T>
  std::vector<T> numbers(const Handle& group, const char* table, const char* name, hid_t memory_type,
                         H5T_class_t expected, const char* expected_name) {
    const Column column = open_column(group, table, name, expected, expected_name);
    const hssize_t n = H5Sget_simple_extent_npoints(column.space.get());
    if (n < 0) fail(path_, "get size of " + column.label);
    std::vector<T> values(static_cast<std::size_t>(n));
    if (n > 0)
      checked(H5Dread(column.dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), path_,
              "read " + column.label);
    return values;
  }

  std::string path_;
  hid_t file_;
};

RunResult read_file(const std::string& path, hid_t file) {
  Reader reader(path, file);
  RunResult result;

  const std::string format = reader.string_attribute("format");
  if (format != FORMAT_NAME)
    throw std::runtime_error(path + ": not an mksim result (root attribute format = '" + format + "')");
  const int version = reader.number_attribute<int>("format_version", H5T_NATIVE_INT, H5T_INTEGER, "an integer");
  if (version != FORMAT_VERSION)
    throw std::runtime_error(path + ": unsupported format_version " + std::to_string(version) + " (this build reads " +
                             std::to_string(FORMAT_VERSION) + ")");
  result.predicted_time_s =
      reader.number_attribute<double>("predicted_time_s", H5T_NATIVE_DOUBLE, H5T_FLOAT, "floating point");
  result.critical_rank = reader.number_attribute<int>("critical_rank", H5T_NATIVE_INT, H5T_INTEGER, "an integer");
  result.total_messages =
      reader.number_attribute<std::uint64_t>("total_messages", H5T_NATIVE_UINT64, H5T_INTEGER, "an integer");
  for (const std::string& name : reader.attribute_names()) {
    if (std::find(std::begin(RESERVED_ATTRIBUTES), std::end(RESERVED_ATTRIBUTES), name) !=
        std::end(RESERVED_ATTRIBUTES))
      continue;
    result.attributes.emplace_back(name, reader.string_attribute(name));
  }
  std::sort(result.attributes.begin(), result.attributes.end());

  {
    const Handle group = reader.group("ranks");
    const auto finish = reader.doubles(group, "ranks", "finish_s");
    const auto compute = reader.doubles(group, "ranks", "compute_s");
    const auto comm = reader.doubles(group, "ranks", "comm_s");
    const auto wait = reader.doubles(group, "ranks", "wait_s");
    const auto messages = reader.uint64s(group, "ranks", "messages_sent");
    const auto bytes = reader.uint64s(group, "ranks", "bytes_sent");
    const std::size_t n = reader.rows("ranks", {{"finish_s", finish.size()},
                                                {"compute_s", compute.size()},
                                                {"comm_s", comm.size()},
                                                {"wait_s", wait.size()},
                                                {"messages_sent", messages.size()},
                                                {"bytes_sent", bytes.size()}});
    for (std::size_t i = 0; i < n; ++i)
      result.ranks.push_back({finish[i], compute[i], comm[i], wait[i], messages[i], bytes[i]});
  }
  {
    const Handle group = reader.group("blocks");
    auto id = reader.strings(group, "blocks", "id");
    auto op = reader.strings(group, "blocks", "op");
    auto phase = reader.strings(group, "blocks", "phase");
    const auto executions = reader.uint64s(group, "blocks", "executions");
    const auto time = reader.doubles(group, "blocks", "time_s");
    const auto bytes = reader.doubles(group, "blocks", "bytes");
    const std::size_t n = reader.rows("blocks", {{"id", id.size()},
                                                 {"op", op.size()},
                                                 {"phase", phase.size()},
                                                 {"executions", executions.size()},
                                                 {"time_s", time.size()},
                                                 {"bytes", bytes.size()}});
    for (std::size_t i = 0; i < n; ++i)
      result.blocks.push_back(
          {std::move(id[i]), std::move(op[i]), std::move(phase[i]), executions[i], time[i], bytes[i]});
  }
  {
    const Handle group = reader.group("phases");
    auto phase = reader.strings(group, "phases", "phase");
    const auto compute = reader.doubles(group, "phases", "compute_s");
    const auto comm = reader.doubles(group, "phases", "comm_s");
    const auto wait = reader.doubles(group, "phases", "wait_s");
    const auto critical_rank_col = reader.doubles(group, "phases", "critical_rank_s");
    const auto end = reader.doubles(group, "phases", "end_s");
    const std::size_t n = reader.rows("phases", {{"phase", phase.size()},
                                                 {"compute_s", compute.size()},
                                                 {"comm_s", comm.size()},
                                                 {"wait_s", wait.size()},
                                                 {"critical_rank_s", critical_rank_col.size()},
                                                 {"end_s", end.size()}});
    for (std::size_t i = 0; i < n; ++i)
      result.phases.push_back({std::move(phase[i]), compute[i], comm[i], wait[i], critical_rank_col[i], end[i]});
  }
  return result;
}

}  // namespace

void write_run_hdf5(const std::string& path, const RunResult& result) {
  validate_for_writing(path, result);
  const QuietHdf5Errors quiet;
  write_atomically(path, [&](const std::string& temporary) { write_file(path, temporary, result); });
}

RunResult read_run_hdf5(const std::string& path) {
  const QuietHdf5Errors quiet;
  const Handle file = open_for_reading(path);
  return read_file(path, file.get());
}

}  // namespace mksim::results
