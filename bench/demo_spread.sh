#!/usr/bin/env bash
# The demo's spread (issue 17): scripts/demo.sh's steps 1-3 (ATM2D traced at P = 2..16, N = 256 and 512, one
# skeleton, predicted at 128 ranks on the Paragon) repeated R times; prints each run's predicted time and wait
# share, then the spread (max - min) / mean.
# usage: bench/demo_spread.sh BUILD_DIR OUT_DIR [R]   (BUILD_DIR: a build of mksim with trace/mktrace, sim/mkskel,
#        sim/mksim and apps/atm2d)
set -euo pipefail
B=$(cd "$1" && pwd); OUT=$2; R=${3:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
for r in $(seq 1 "$R"); do
  T="$OUT/run$r"; rm -rf "$T"; mkdir -p "$T"
  for P in 2 4 8 16; do
    for N in 256 512; do
      "$B/trace/mktrace" -np "$P" --param N=$N --param steps=5 -o "$T/atm2d-$P-$N" --mpirun-opt --oversubscribe \
        -- "$B/apps/atm2d" $N 5 > /dev/null
    done
  done
  "$B/trace/mktrace" -np 4 --param N=256 --param steps=8 -o "$T/atm2d-4-256-8" -- "$B/apps/atm2d" 256 8 > /dev/null
  "$B/sim/mkskel" build "$T"/atm2d-* -o "$T/atm2d.skel.json" 2> "$T/skel.log"
  "$B/sim/mksim" --platform "$HERE/platforms/paragon.xml" --P 128 --skeleton "$T/atm2d.skel.json" \
    --param N=1024,steps=5 -o "$T/p128.h5" > "$T/predict.txt"
  echo "run $r: $(grep -iE 'predicted|wait' "$T/predict.txt" | tr '\n' ' ')"
done
