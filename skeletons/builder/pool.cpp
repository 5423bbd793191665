// Compute pooled over ranks: robust per-rank values, the between/within test, the split into groups.
#include "skeletons/builder/pool.hpp"

#include "skeletons/builder/fold.hpp"

#include <algorithm>
#include <cmath>

namespace mksim::skeletons::builder {

namespace {

constexpr double MAD_TO_SD = 1.4826;  // the MAD of a normal sample times this is its SD
constexpr double MIN_LOG_SD = 0.01;   // within-rank noise below 1% is a timer's, not evidence of agreement
// Trimming takes only gross outliers: the robust SD of the logs is floored at 0.3, so that with 3.5 SDs a duration
// (or rank) is trimmed only beyond 2.86 times (or below 1/2.86 of) the median. With CPU times a long duration is
// mostly the program's own (page faults, a cold cache); a floor of 0.05 (beyond 1.19 times) trimmed the right tail
// of ordinary noise and put the end-to-end test's pooled compute 11-15% under the measured CPU time.
constexpr double MIN_TRIM_LOG_SD = 0.3;

// Median and robust SD (1.4826 MAD) of weighted values.
std::pair<double, double> median_sd(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end());
  const double med = weighted_quantile(v, 0.5);
  std::vector<std::pair<double, double>> dev;
  dev.reserve(v.size());
  for (const auto& [x, w] : v) dev.emplace_back(std::fabs(x - med), w);
  std::sort(dev.begin(), dev.end());
  return {med, MAD_TO_SD * weighted_quantile(dev, 0.5)};
}

}  // namespace

RankValue rank_value(const RankDurations& d, const PoolOptions& options) {
  RankValue r;
  double rest_w = 0, rest_sum = 0;
  std::vector<std::pair<double, double>> logs;
  for (const auto& [x, w] : d.rest) {
    rest_w += w;
    rest_sum += x * w;
    if (x > 0) logs.emplace_back(std::log(x), w);
  }
  if (d.n <= 1 || rest_w <= 0) {
    r.value = r.centre = d.first;
    return r;
  }
  // logarithms: a duration stretched 30 times by another process is as far out as one 30 times shorter
  if (logs.size() < 2) {
    r.value = (d.first + rest_sum) / (1 + rest_w);
    r.centre = rest_sum / rest_w;
    return r;
  }
  const auto [med, sd] = median_sd(logs);
  r.centre = std::exp(med);
  if (rest_w >= 3) {
    r.log_sd = sd;
    r.weight = rest_w;
  }
  const double limit = options.trim_mads * std::max(sd, MIN_TRIM_LOG_SD);
  double kept_w = 0, kept_sum = 0, trimmed = 0;
  for (const auto& [x, w] : d.rest) {
    if (x > 0 && std::fabs(std::log(x) - med) <= limit) {
      kept_w += w;
      kept_sum += x * w;
    } else {
      trimmed += w;
    }
  }
  // the trimmed durations stand for durations like the kept ones: the mean of n keeps its weight. The first is
  // kept whatever it is: a warm-up (initialisation before the first step) is the program's, once per run.
  const double rest_mean = d.cpu ? rest_sum / rest_w : kept_w > 0 ? kept_sum / kept_w : r.centre;
  const double first = d.first;
  r.trimmed = d.cpu ? 0 : static_cast<std::uint64_t>(std::llround(trimmed));
  r.value = (first + rest_mean * rest_w) / (1 + rest_w);
  return r;
}

PoolDecision decide_pooling(const std::vector<RankDurations>& ranks, std::size_t runs, const PoolOptions& options) {
  PoolDecision p;
  p.values.reserve(ranks.size());
  for (const RankDurations& d : ranks) p.values.push_back(rank_value(d, options));
  p.high.assign(ranks.size(), false);
  p.run_split.assign(runs, false);
  // the within-rank noise of log durations, pooled over every rank of every run
  double within_ss = 0, within_w = 0;
  for (const RankValue& v : p.values)
    if (v.log_sd >= 0) {
      within_ss += v.weight * v.log_sd * v.log_sd;
      within_w += v.weight;
    }
  if (within_w > 0) p.within_sd = std::max(std::sqrt(within_ss / within_w), MIN_LOG_SD);
  double between_ss = 0, between_n = 0;
  std::size_t multi_rank_runs = 0;
  for (std::size_t run = 0; run < runs; ++run) {
    std::vector<std::size_t> in;
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i].run == run && p.values[i].centre > 0) in.push_back(i);
    if (in.size() < 2) continue;
    ++multi_rank_runs;
    // chi-square of the log centres: each centre is a median of `weight` durations whose log SD is within_sd
    double sw = 0, swl = 0;
    for (std::size_t i : in) {
      const double w = std::max(p.values[i].weight, 1.0);
      sw += w;
      swl += w * std::log(p.values[i].centre);
    }
    const double mean_log = swl / sw;
    for (std::size_t i : in) {
      const double dl = std::log(p.values[i].centre) - mean_log;
      between_ss += dl * dl;
      between_n += 1;
      if (p.within_sd > 0) p.chi2 += std::max(p.values[i].weight, 1.0) * dl * dl / (p.within_sd * p.within_sd);
    }
    p.dof += static_cast<double>(in.size() - 1);
    between_n -= 1;
    // the largest gap between consecutive centres, in ratio
    std::sort(in.begin(), in.end(), [&](std::size_t a, std::size_t b) {
      return p.values[a].centre < p.values[b].centre || (p.values[a].centre == p.values[b].centre && ranks[a].rank < ranks[b].rank);
    });
    // (among gaps of at least min_split_s: a gap between two microsecond gaps is the timer's, and taking it
    // would put the real groups on one side)
    double best = 1;
    std::size_t cut = 0;
    for (std::size_t k = 1; k < in.size(); ++k) {
      const double ratio = p.values[in[k]].centre / p.values[in[k - 1]].centre;
      if (ratio > best && p.values[in[k]].centre - p.values[in[k - 1]].centre >= options.min_split_s) {
        best = ratio;
        cut = k;
      }
    }
    p.largest_ratio = std::max(p.largest_ratio, best);
    if (best >= options.min_split_ratio) {
      p.run_split[run] = true;
      for (std::size_t k = cut; k < in.size(); ++k) p.high[in[k]] = true;
    }
  }
  p.between_sd = between_n > 0 ? std::sqrt(between_ss / between_n) : 0;
  if (p.dof > 0) {  // Wilson-Hilferty: chi2(dof) quantile from a normal one
    const double h = 2.0 / (9.0 * p.dof);
    p.chi2_critical = p.dof * std::pow(1 - h + options.z_critical * std::sqrt(h), 3);
  }
  const bool significant = p.within_sd < 0 || p.chi2 > p.chi2_critical;  // no evidence within: the ratio decides
  // and reproduced: a gap seen in one run only (a rank slowed by another process) is that run's accident
  const auto split_runs = static_cast<std::size_t>(std::count(p.run_split.begin(), p.run_split.end(), true));
  p.differ = p.dof > 0 && significant && p.largest_ratio >= options.min_split_ratio &&
             split_runs >= std::min<std::size_t>(2, multi_rank_runs);
  if (!p.differ) {
    p.high.assign(ranks.size(), false);
    p.run_split.assign(runs, false);
  }
  return p;
}

double pooled_value(const std::vector<double>& values, const PoolOptions& options, std::size_t& trimmed) {
  trimmed = 0;
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += v;
  if (values.size() < 3) return sum / static_cast<double>(values.size());
  std::vector<std::pair<double, double>> logs;
  for (double v : values)
    if (v > 0) logs.emplace_back(std::log(v), 1.0);
  if (logs.size() < 3) return sum / static_cast<double>(values.size());
  const auto [med, sd] = median_sd(logs);
  // floored (MIN_TRIM_LOG_SD): ranks of one group within a few tens of percent of each other are not outliers
  const double limit = options.trim_mads * std::max(sd, MIN_TRIM_LOG_SD);
  double kept = 0, n = 0;
  for (double v : values)
    if (v <= 0 || std::fabs(std::log(v) - med) <= limit) {  // a rank without the gap counts as 0, never trimmed
      kept += v;
      n += 1;
    } else {
      ++trimmed;
    }
  return n > 0 ? kept / n : sum / static_cast<double>(values.size());
}

std::vector<bool> lone_noisy_ranks(const std::vector<RankSample>& samples, const PoolOptions& options) {
  std::vector<bool> out(samples.size(), false);
  std::size_t runs = 0;
  for (const RankSample& s : samples) runs = std::max(runs, s.run + 1);
  // per run: its inputs, and the side (+1 above, -1 below) of each outlier among them
  std::vector<std::vector<std::size_t>> of_run(runs);
  for (std::size_t i = 0; i < samples.size(); ++i) of_run[samples[i].run].push_back(i);
  std::vector<int> side(samples.size(), 0);
  for (std::size_t r = 0; r < runs; ++r) {
    std::vector<std::pair<double, double>> logs;
    for (std::size_t i : of_run[r])
      if (samples[i].value > 0) logs.emplace_back(std::log(samples[i].value), 1.0);
    if (logs.size() < 4) continue;
    const auto [med, sd] = median_sd(logs);
    const double limit = options.trim_mads * std::max(sd, MIN_TRIM_LOG_SD);
    for (std::size_t i : of_run[r]) {
      if (!(samples[i].value > 0)) continue;
      const double dev = std::log(samples[i].value) - med;
      if (std::fabs(dev) > limit) side[i] = dev > 0 ? 1 : -1;
    }
  }
  // an outlier where no other run has one is noise; a run with one such is trimmed of it (with several, they are
  // more likely a structure of the program's that moves with P)
  std::vector<int> unexplained(runs, 0);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (side[i] == 0) continue;
    const RankSample& s = samples[i];
    bool elsewhere = false;
    for (std::size_t j = 0; j < samples.size() && !elsewhere; ++j) {
      const RankSample& t = samples[j];
      elsewhere = t.run != s.run && side[j] == side[i] && (t.rank == s.rank || t.P - 1 - t.rank == s.P - 1 - s.rank);
    }
    if (!elsewhere) out[i] = true, ++unexplained[s.run];
  }
  for (std::size_t i = 0; i < samples.size(); ++i)
    if (out[i] && unexplained[samples[i].run] != 1) out[i] = false;
  return out;
}

}  // namespace mksim::skeletons::builder
