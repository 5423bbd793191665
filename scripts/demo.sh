#!/usr/bin/env bash
# Installs dependencies, builds mksim, and runs the main job on the bundled inputs:
# the ATM2D skeleton (seed 000 s.5.2) predicted at 128 ranks on the Intel Paragon.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j"$(nproc)"
mkdir -p out
./build/sim/mksim --platform platforms/paragon.xml --P 128 --skeleton skeletons/examples/atm2d.json \
  --param N=1024 -o out/atm2d-paragon-128.h5
