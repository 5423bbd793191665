// Benchmark driver for the analytic model (issue "Analytic models"): time to derive each reference
// skeleton's expression, and evaluations per second of the compiled expression on one core (target: at
// least 10^6), with the replay's wall time at the same point for scale. Prints CSV on stdout.
// Usage: mksim_bench_model_eval PLATFORM.xml P [seconds-per-measurement]
#include "sim/engine/isolate.hpp"
#include "sim/engine/machine_model.hpp"
#include "sim/model/model.hpp"
#include "skeletons/skeleton_io.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: mksim_bench_model_eval PLATFORM.xml P [seconds]\n";
    return 2;
  }
  const std::string platform = argv[1];
  const int P = std::stoi(argv[2]);
  const double budget = argc > 3 ? std::stod(argv[3]) : 1.0;
  using clock = std::chrono::steady_clock;
  const std::vector<std::string> names = {"atm2d", "pge1", "pge2", "cg", "master_worker"};
  std::vector<mksim::skeletons::Skeleton> sks;
  for (const auto& n : names) sks.push_back(mksim::skeletons::load_skeleton(std::string(MKSIM_SOURCE_DIR) + "/skeletons/examples/" + n + ".json"));
  // replays first, each in its own process, before this process loads SimGrid for the model's routes
  std::vector<double> replay_wall, replay_T;
  for (const auto& sk : sks) {
    mksim::sim::ReplayOptions ro;
    ro.platform_path = platform;
    ro.P = P;
    const auto t0 = clock::now();
    const auto r = mksim::sim::replay_in_child(sk, ro);
    replay_wall.push_back(std::chrono::duration<double>(clock::now() - t0).count());
    replay_T.push_back(r.predicted_time_s);
  }
  const auto machine = mksim::sim::load_machine_model(platform, P);
  std::printf("skeleton,P,derive_ms,evals_per_s,model_T_s,replay_T_s,replay_wall_s,terms\n");
  for (std::size_t i = 0; i < sks.size(); ++i) {
    auto t0 = clock::now();
    const auto m = mksim::sim::derive_model(sks[i], machine, {P, {}, false});
    const double derive_ms = 1e3 * std::chrono::duration<double>(clock::now() - t0).count();
    // evaluate at points that vary every parameter by up to +-50% around the derivation point
    std::vector<std::vector<double>> frames;
    for (int k = 0; k < 1024; ++k) {
      std::map<std::string, double> v;
      for (const auto& [name, x] : m.point) v[name] = x * (0.5 + (k % 97) / 97.0);
      frames.push_back(m.frame(P, v));
    }
    double sink = 0;
    long evals = 0;
    t0 = clock::now();
    double elapsed = 0;
    while (elapsed < budget) {
      for (const auto& f : frames) sink += m.compiled.eval(f);
      evals += static_cast<long>(frames.size());
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    }
    std::printf("%s,%d,%.3f,%.0f,%.6g,%.6g,%.3f,%zu\n", names[i].c_str(), P, derive_ms, evals / elapsed, m.value_s,
                replay_T[i], replay_wall[i], m.terms.size());
    if (sink == 42.4242) std::printf("#\n");  // keep the evaluations
  }
  return 0;
}
