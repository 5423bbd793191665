#!/usr/bin/env bash
# Builds mksim and runs the whole test suite (installing dependencies first if missing).
# Usage: scripts/test.sh            release build in build/
#        scripts/test.sh --sanitize AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DMKSIM_SANITIZE=ON > /dev/null
  # SimGrid's context switching confuses ASan's stack bookkeeping; leaks inside SimGrid's globals are not ours.
  export ASAN_OPTIONS="detect_leaks=0:detect_stack_use_after_return=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
else
  dir=build
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
fi
cmake --build "$dir" -j"$(nproc)"
# A failed test is run once more (--repeat until-pass:2) and both outcomes stay in the log: OpenMPI 4.1.4 runs that
# the tracing tests launch have hung now and then beside other jobs (in OpenMPI's treematch MPI_Dist_graph_create,
# now avoided; once, an mpirun that did not return after MPI_Abort in TraceTest.SubCommunicators..., cause not yet
# found), and the 300 s timeout then fails the suite.
ctest --test-dir "$dir" -j"$(nproc)" --output-on-failure --repeat until-pass:2
