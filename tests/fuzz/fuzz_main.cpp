// libFuzzer entry of one fuzz target (chosen at compile time by MKSIM_FUZZ_TARGET, its name in targets.cpp).
#include "tests/fuzz/targets.hpp"

#include <cstdio>
#include <cstdlib>

#ifndef MKSIM_FUZZ_TARGET
#error "compile with -DMKSIM_FUZZ_TARGET=\"name\""
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const mksim::fuzz::Target* target = [] {
    const auto* t = mksim::fuzz::find_target(MKSIM_FUZZ_TARGET);
    if (!t) {
      std::fprintf(stderr, "no fuzz target named %s\n", MKSIM_FUZZ_TARGET);
      std::abort();
    }
    return t;
  }();
  return target->run(data, size);
}
