// The program-level calibration of the replay's OS noise: replays of ATM2D's exchanges without compute.
#include "sim/engine/noise.hpp"

#include "sim/engine/isolate.hpp"
#include "sim/engine/load.hpp"
#include "sim/engine/machine_model.hpp"
#include "sim/engine/phase_patterns.hpp"
#include "skeletons/skeleton_io.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace mksim::sim {
namespace {

/** @brief ATM2D (skeletons/examples/atm2d.json) without its compute block: per step, red ranks exchange with north,
 *  south, east, west and black ranks with south, north, west, east (isend, irecv, waitall each). */
std::string halo_skeleton() {
  auto exch = [](const std::string& cond, const std::string& peer, int stag, int rtag) {
    return R"J({"op":"if","cond":")J" + cond + R"J(","then":[{"op":"isend","peer":")J" + peer + R"J(","size":256,"tag":)J" +
           std::to_string(stag) + R"J(},{"op":"irecv","peer":")J" + peer + R"J(","size":256,"tag":)J" + std::to_string(rtag) +
           R"J(},{"op":"waitall"}]})J";
  };
  const std::string n = exch("y > 0", "rank - Px", 1, 2), s = exch("y < Py - 1", "rank + Px", 2, 1);
  const std::string e = exch("x < Px - 1", "rank + 1", 3, 4), w = exch("x > 0", "rank - 1", 4, 3);
  return R"J({"format":"mksim-skeleton","version":1,"name":"noise-calibration","params":{"steps":{"default":20}},)J"
         R"J("let":{"Px":"2^floor(log2(P) / 2)","Py":"P / Px","x":"rank % Px","y":"floor(rank / Px)","red":"(x + y) % 2 == 0"},)J"
         R"J("body":[{"op":"loop","count":"steps","body":[{"op":"if","cond":"red","phase":"halo","then":[)J" +
         n + "," + s + "," + e + "," + w + R"J(],"else":[)J" + s + "," + n + "," + w + "," + e + "]}]}]}";
}

constexpr int ROUNDS = 3;  ///< rounds of the gain's fixed-point iteration

std::string attribute(const results::RunResult& r, const std::string& key) {
  for (const auto& [k, v] : r.attributes)
    if (k == key) return v;
  return "";
}

}  // namespace

double program_noise_gain(const std::string& platform_path, int P, double alpha_s, int seeds) {
  if (P <= 1) return 1.0;
  const skeletons::Skeleton sk = skeletons::parse_skeleton(halo_skeleton(), "(noise calibration: ATM2D's exchanges)");
  ReplayOptions o;
  o.platform_path = platform_path;
  o.P = P;
  const double plain = replay_in_child(sk, o).predicted_time_s;
  // The effect grows a little faster than lambda (small detours hide in the slack of waits), so the linear step is
  // repeated: g <- g * target / effect(g), from g = 1 (measured: 4.32 then 3.7 at P = 256 on the Paragon).
  double gain = 1;
  for (int round = 0; round < ROUNDS; ++round) {
    char rule[128];
    std::snprintf(rule, sizeof rule, "noise * alpha=%.17g calibrate=exchange", alpha_s * gain);
    o.load_text = rule;
    const results::RunResult noisy = replay_load_seeds(sk, o, seeds);
    const double mean = std::stod(attribute(noisy, "load.mean_s"));
    const double exchanges = std::stod(attribute(noisy, "noise.rank_detours_max"));
    if (!(mean > plain) || !(exchanges > 0))
      throw ReplayError(platform_path + ": the noise of alpha=" + std::to_string(alpha_s) + " s has no effect at P=" + std::to_string(P) +
                        ", so it cannot be calibrated (give alpha > 0 or calibrate=exchange)");
    gain *= alpha_s * std::sqrt(static_cast<double>(P)) * exchanges / (mean - plain);
  }
  return gain;
}

bool takes_detours(const skeletons::Skeleton& sk, const ReplayOptions& opt) {
  const std::vector<double> frame = skeletons::bind_parameters(sk, opt.P, opt.params);
  for (const auto& ph : phase_patterns(sk, frame, opt.P, {}).phases)
    if (ph.kind == "1d" || ph.kind == "2d" || ph.kind == "3d" || ph.kind == "wildcard") return true;
  return false;
}

double noise_gain_for(const skeletons::Skeleton& sk, const ReplayOptions& opt) {
  if (opt.noise_gain >= 0) return opt.noise_gain;
  if (opt.load_file.empty() && opt.load_text.empty()) return 1.0;
  LoadSpec spec;
  try {
    spec = opt.load_file.empty() ? parse_load_spec(opt.load_text, "(load rules)") : read_load_spec(opt.load_file);
  } catch (const LoadError& e) {
    throw ReplayError(e.what());
  }
  for (const auto& n : spec.noise) {
    if (n.noise.calibrate != "program") continue;
    const double alpha = n.noise.alpha_s >= 0 ? n.noise.alpha_s : platform_skew_alpha(opt.platform_path);
    if (!(alpha > 0)) continue;  // no noise to calibrate (setup_load says why when alpha was left out)
    return takes_detours(sk, opt) ? program_noise_gain(opt.platform_path, opt.P, alpha) : 1.0;
  }
  return 1.0;
}

}  // namespace mksim::sim
