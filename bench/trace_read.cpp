// Reader speed for bench/tracer_overhead.py: reads a traced run directory REPS times with
// mksim::trace::read_run and prints events, bytes and the best wall time of one read.
#include "skeletons/trace/reader.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: mksim_bench_trace_read RUN_DIR [REPS]\n");
    return 2;
  }
  const int reps = argc > 2 ? std::max(1, std::stoi(argv[2])) : 3;
  try {
    std::uintmax_t bytes = 0;
    for (const auto& f : std::filesystem::directory_iterator(argv[1])) bytes += f.file_size();
    double best = 1e300;
    std::size_t events = 0;
    for (int i = 0; i < reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const mksim::trace::Run run = mksim::trace::read_run(argv[1], {.require_complete = true});
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      events = 0;
      for (const auto& r : run.ranks) events += r.events.size();
      best = std::min(best, s);
    }
    std::printf("events %zu\nbytes %ju\nread_s %.6f\nevents_per_s %.0f\n", events, bytes, best,
                static_cast<double>(events) / best);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mksim_bench_trace_read: %s\n", e.what());
    return 1;
  }
  return 0;
}
