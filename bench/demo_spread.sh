#!/usr/bin/env bash
# The demo's spread (issue 17): scripts/demo.sh's steps 1-3 (ATM2D traced at P = 2..16, N = 256 and 512, one
# skeleton, predicted at 128 ranks on the Paragon) repeated R times (DEMO_SIZES="A B": other sizes); prints each run's predicted time and wait
# share, then the spread (max - min) / mean.
# usage: bench/demo_spread.sh BUILD_DIR OUT_DIR [R [OTHER_BUILD_DIR]]   (BUILD_DIR: a build of mksim with
#        trace/mktrace, sim/mkskel, sim/mksim and apps/atm2d; OTHER_BUILD_DIR: another build's sim/mkskel, which
#        builds a second skeleton from the same traces, replayed by BUILD_DIR's mksim: two builders side by side)
set -euo pipefail
B=$(cd "$1" && pwd); OUT=$2; R=${3:-5}; OTHER=${4:+$(cd "$4" && pwd)}
HERE=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
predict() {  # MKSKEL TAG: build the batch's skeleton with MKSKEL, predict at P = 128; prints the predicted time
  "$1" build "$T"/atm2d-* -o "$T/$2.skel.json" > "$T/$2.out" 2> "$T/$2.log"
  "$B/sim/mksim" --platform "$HERE/platforms/paragon.xml" --P 128 --skeleton "$T/$2.skel.json" \
    --param N=1024,steps=5 -o "$T/$2.h5" > "$T/$2.txt"
  awk '/predicted time/ {print $3}' "$T/$2.txt"
}
spread() { tr ' ' '\n' | awk 'NF {v[n++] = $1; s += $1} END {lo = v[0]; hi = v[0]; for (i in v) {if (v[i] < lo) lo = v[i]; if (v[i] > hi) hi = v[i]}; printf "%.1f%%", 100 * (hi - lo) / (s / n)}'; }
ALL=""; ALL_OTHER=""
for r in $(seq 1 "$R"); do
  T="$OUT/run$r"; rm -rf "$T"; mkdir -p "$T"
  for P in 2 4 8 16; do
    for N in ${DEMO_SIZES:-256 512}; do
      "$B/trace/mktrace" -np "$P" --param N=$N --param steps=5 -o "$T/atm2d-$P-$N" --mpirun-opt --oversubscribe \
        -- "$B/apps/atm2d" $N 5 > /dev/null
    done
  done
  N8=$(echo ${DEMO_SIZES:-256 512} | awk '{print $1}')  # the run of 8 steps at the smallest size traced
  "$B/trace/mktrace" -np 4 --param N=$N8 --param steps=8 -o "$T/atm2d-4-$N8-8" -- "$B/apps/atm2d" $N8 8 > /dev/null
  t=$(predict "$B/sim/mkskel" atm2d); ALL="$ALL $t"
  line="run $r: predicted time $t s, wait share $(awk '$1 == "wait" {print $3; exit}' "$T/atm2d.txt")"
  if [ -n "$OTHER" ]; then
    o=$(predict "$OTHER/sim/mkskel" other); ALL_OTHER="$ALL_OTHER $o"
    line="$line; other builder: $o s"
  fi
  echo "$line"
done
echo "spread (max - min) / mean over $R runs: $(echo "$ALL" | spread)${OTHER:+; other builder: $(echo "$ALL_OTHER" | spread)}"
