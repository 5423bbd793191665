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

# 1. trace at P = 2..16 (two problem sizes; one run with other steps, so that steps can be regressed).
#    With more ranks than cores the tracer records each compute gap's CPU time (the wall clock includes waiting for a core).
for P in 2 4 8 16; do
  for N in 256 512; do
    ./build/trace/mktrace -np "$P" --param N=$N --param steps=5 -o out/traces/atm2d-$P-$N -- build/apps/atm2d $N 5 > /dev/null
  done
done
./build/trace/mktrace -np 4 --param N=256 --param steps=8 -o out/traces/atm2d-4-256-8 -- build/apps/atm2d 256 8 > /dev/null

# 2. one skeleton from the nine runs (ambiguities go to out/atm2d.skel.log)
./build/sim/mkskel build out/traces/atm2d-* -o out/atm2d.skel.json 2> out/atm2d.skel.log

# 3. predict at 128 ranks on the Paragon
./build/sim/mksim --platform platforms/paragon.xml --P 128 --skeleton out/atm2d.skel.json \
  --param N=1024,steps=5 -o out/atm2d-paragon-128.h5

# 4. around the prediction: a sweep over P and N on two machines (both methods), a severity-ranked diagnosis at
#    128 ranks, a 16-rank timeline, and one HTML page of plots of all of them (out/report.html, opens offline)
rm -rf out/atm2d-sweep.h5 out/atm2d-sweep.h5.sweep  # a table of the previous demo's skeleton is not overwritten
./build/sim/mksim sweep --skeleton out/atm2d.skel.json --platform paragon,t3e --P 8..256:x2 \
  --param N=512,1024,2048 --param steps=5 --mode both -q -o out/atm2d-sweep.h5
./build/sim/mksim diagnose out/atm2d.skel.json --platform paragon --P 128 --param N=1024,steps=5 -q \
  -o out/atm2d-diagnosis.h5 > out/atm2d-diagnosis.txt
head -1 out/atm2d-diagnosis.txt
./build/sim/mksim --platform paragon --P 16 --skeleton out/atm2d.skel.json --param N=1024,steps=5 \
  -o out/atm2d-paragon-16.h5 --timeline out/atm2d-paragon-16.csv > /dev/null
./build/sim/mksim report out/atm2d-sweep.h5 out/atm2d-paragon-128.h5 out/atm2d-diagnosis.h5 out/atm2d-paragon-16.csv \
  --work-param N --work-exponent 2 --paje out/atm2d-paragon-16.paje --explore \
  --title "ATM2D traced at P = 2..16 here, predicted up to 256 ranks" -o out/report.html
if command -v chromium > /dev/null; then  # a picture of the page (the README's screenshot is one)
  rm -rf out/.chromium
  chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir=out/.chromium \
    --virtual-time-budget=10000 --hide-scrollbars --window-size=1400,2400 --screenshot=out/report.png \
    "file://$PWD/out/report.html" > /dev/null 2>&1 && echo "screenshot: out/report.png"
  rm -rf out/.chromium
fi
