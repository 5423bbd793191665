// Writer and reader of the HDF5 result file (layout in results/README.md); the HDF5 headers stay in the .cpp.
#pragma once

#include <string>

#include "results/run_result.hpp"

namespace mksim::results {

/** @brief Layout version written to the root attribute format_version; the reader rejects any other. */
inline constexpr int FORMAT_VERSION = 1;

/**
 * @brief Writes `result` to `path` atomically: into `path + ".tmp.<pid>"` first, renamed into place only once
 * complete and synced, so `path` is never left half written. Identical results give byte-identical files.
 * @throws std::runtime_error naming `path` and the failing operation; the temporary file is removed. Also thrown
 * when an attribute key is empty, repeated, or one of the reserved root attribute names.
 */
void write_run_hdf5(const std::string& path, const RunResult& result);

/**
 * @brief Reads a file written by write_run_hdf5; the exact inverse (attributes come back sorted by key).
 * @throws std::runtime_error naming `path` and the missing or malformed object.
 */
RunResult read_run_hdf5(const std::string& path);

}  // namespace mksim::results
