// The per-rank random stream of a skeleton run (branches with `prob`): SplitMix64, seeded from the run's
// seed and the rank, so that replay and expansion draw the same numbers everywhere.
#pragma once

#include <cstdint>

namespace mksim::skeletons {

/** @brief SplitMix64 state of one rank. */
class RankRng {
 public:
  RankRng() = default;
  RankRng(std::uint64_t seed, int rank) : state_(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(rank) + 1) {}
  /** @brief The next uniform number in [0, 1). */
  double uniform() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }

 private:
  std::uint64_t state_ = 0;
};

}  // namespace mksim::skeletons
