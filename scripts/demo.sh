#!/usr/bin/env bash
# Installs dependencies, builds mksim, and runs the main job on the bundled inputs: the reference
# program ATM2D (seed 000 s.5.2, skeletons/apps/atm2d.c) traced with real OpenMPI at small P, its
# skeleton built from those traces, and its prediction at 128 ranks on the Intel Paragon.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j"$(nproc)"
mkdir -p out
rm -rf out/traces
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# 1. trace at P = 2..16 (two problem sizes; one run with other steps, so that steps can be regressed)
for P in 2 4 8 16; do
  for N in 64 128; do
    ./build/trace/mktrace -np "$P" --param N=$N --param steps=5 -o out/traces/atm2d-$P-$N -- build/apps/atm2d $N 5 > /dev/null
  done
done
./build/trace/mktrace -np 4 --param N=64 --param steps=8 -o out/traces/atm2d-4-64-8 -- build/apps/atm2d 64 8 > /dev/null

# 2. one skeleton from the nine runs (ambiguities go to out/atm2d.skel.log)
./build/sim/mkskel build out/traces/atm2d-* -o out/atm2d.skel.json 2> out/atm2d.skel.log

# 3. predict at 128 ranks on the Paragon
./build/sim/mksim --platform platforms/paragon.xml --P 128 --skeleton out/atm2d.skel.json \
  --param N=1024,steps=5 -o out/atm2d-paragon-128.h5
