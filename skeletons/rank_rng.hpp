// The per-rank random stream of a skeleton run (branches with `prob`): SplitMix64, seeded from the run's
// seed and the rank, so that replay and expansion draw the same numbers everywhere.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace mksim::skeletons {

/** @brief SplitMix64 state of one rank. */
/** @brief SplitMix64's finaliser: a well-mixed 64-bit function of its input. */
inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/** @brief The k-th toss (uniform in [0, 1)) of the shared coin `coin` (its name's hash) of rank `rank` in the
 *  run seeded `seed`: a pure function, so the ranks that toss the same coin of the same rank agree. */
inline double coin_toss(std::uint64_t seed, std::uint64_t coin, int rank, std::uint64_t k) {
  const std::uint64_t z = mix64(mix64(mix64(seed ^ coin) + static_cast<std::uint64_t>(rank)) + k);
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

/** @brief The k-th toss of a coin drawn evenly (format v2 `"draw": "even"`): the golden-ratio Weyl sequence
 *  frac(u + k (sqrt(5) - 1) / 2) started at the coin's first toss u (coin_toss at k = 0). Each toss is uniform
 *  in [0, 1) over the seeds, but a run of n tosses falls below p within about one of n p times (the sequence's
 *  discrepancy is O(log n / n)), spread over the run: a rate (a neighbour-list rebuild every ninth step or so),
 *  not a sequence of independent draws whose count wanders by sqrt(n p (1 - p)). */
inline double coin_toss_even(std::uint64_t seed, std::uint64_t coin, int rank, std::uint64_t k) {
  const double t = coin_toss(seed, coin, rank, 0) + static_cast<double>(k) * 0.6180339887498949;
  return t - std::floor(t);
}

/** @brief FNV-1a of a coin's name: its identity in coin_toss, independent of the skeleton's other coins. */
inline std::uint64_t coin_hash(const std::string& name) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

class RankRng;

/** @brief One rank's view of the skeleton's shared coins: how many tosses of each coin of each rank it has read,
 *  so that its k-th read of rank q's coin C is q's k-th toss of C (a rank that sends on its own coin and receives
 *  on its neighbour's reads two streams, each at its own pace). */
class CoinTosses {
 public:
  CoinTosses() = default;
  CoinTosses(std::uint64_t seed, const std::vector<std::string>& coins) : seed_(seed) {
    for (const std::string& c : coins) hashes_.push_back(coin_hash(c));
  }
  /** @brief The next toss of rank `of_rank`'s coin `coin`, as this rank reads it (`even`: coin_toss_even). */
  double toss(int coin, int of_rank, bool even = false) {
    const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(coin)) << 32) | static_cast<std::uint32_t>(of_rank);
    const std::uint64_t hash = hashes_[static_cast<std::size_t>(coin)], k = read_[key]++;
    return even ? coin_toss_even(seed_, hash, of_rank, k) : coin_toss(seed_, hash, of_rank, k);
  }
  /** @brief The stream of this rank's next execution of compute block `block`, whose distribution every rank draws
   *  alike (`"draw": "same"`): RankRng::shared_stream at this rank's count of the block's executions. */
  RankRng same_stream(int block);

 private:
  std::uint64_t seed_ = 0;
  std::vector<std::uint64_t> hashes_;
  std::unordered_map<std::uint64_t, std::uint64_t> read_;
};

class RankRng {
 public:
  RankRng() = default;
  /** @brief The stream of the k-th execution of block `block` of a compute whose distribution every rank draws alike
   *  (`"draw": "same"`): a function of the seed, the block and k only, so that every rank's k-th draw is the same. */
  static RankRng shared_stream(std::uint64_t seed, int block, std::uint64_t k) {
    RankRng r;
    r.state_ = mix64(mix64(mix64(seed ^ 0x73616D65ULL /* "same" */) + static_cast<std::uint64_t>(block)) + k);
    return r;
  }
  RankRng(std::uint64_t seed, int rank) : state_(seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(rank) + 1) {}
  /** @brief The next uniform number in [0, 1). */
  double uniform() {
    const std::uint64_t z = mix64(state_);
    state_ += 0x9E3779B97F4A7C15ULL;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }

 private:
  std::uint64_t state_ = 0;
};

inline RankRng CoinTosses::same_stream(int block) {
  const std::uint64_t key = (std::uint64_t{1} << 63) | static_cast<std::uint32_t>(block);  // apart from coins' keys
  return RankRng::shared_stream(seed_, block, read_[key]++);
}

}  // namespace mksim::skeletons
