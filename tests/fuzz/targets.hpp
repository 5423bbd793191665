// Fuzz entry points for the input readers: each takes arbitrary bytes, feeds them to one reader and lets
// through only what is a bug (a crash, a sanitizer report, or an exception other than the reader's own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mksim::fuzz {

/** @brief One fuzz target: its name (also the name of its corpus directory) and its entry point. */
struct Target {
  std::string_view name;
  /// Reads the input; returns 0. Catches only the reader's documented exception type.
  int (*run)(const std::uint8_t* data, std::size_t size);
};

/** @brief Every target: trace_rank, trace_run_json, ti_run, skeleton, expr. */
std::span<const Target> targets();

/** @brief The target of that name, or nullptr. */
const Target* find_target(std::string_view name);

/** @brief What the last input came to: "accepted", or "rejected: " and the reader's message. */
const std::string& last_outcome();

}  // namespace mksim::fuzz
