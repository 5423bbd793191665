#!/usr/bin/env bash
# Issue 17's HPCC acceptance, as far as it goes: Debian 12's `hpcc` (HPL, PTRANS, DGEMM, STREAM, RandomAccess, FFT,
# b_eff) with a small hpccinf.txt (from /usr/share/doc/hpcc/examples/_hpccinf.txt: HPL and PTRANS at the problem
# size N, NB = 32, a process grid of P ranks: 1 x 2, 2 x 2, 2 x 4, 4 x 4), traced at P = 4, 8 and N = 200, 400
# (each run in a directory of its own: hpcc reads hpccinf.txt from there), one skeleton from the four runs; whether it
# pairs at the traced runs, and a held-out run at P = 16, N = 400 compared rank by rank (`mkskel compare`).
# usage: bench/issue17_hpcc.sh BUILD_DIR OUT_DIR
set -uo pipefail
B=$(cd "$1" && pwd); OUT=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MKTRACE_CPU_TIME=1
mkdir -p "$OUT"; cd "$OUT"
input() {  # P N GRID_P GRID_Q
  mkdir -p "in-$1-$2"
  awk -v N="$2" -v P="$3" -v Q="$4" 'NR == 4 {print "8            device out"; next}
    NR == 6 {print N "         Ns"; next} NR == 8 {print "32           NBs"; next}
    NR == 11 {print P "            Ps"; next} NR == 12 {print Q "            Qs"; next}
    NR == 34 {print N " 10000 30000        values of N"; next} {print}' \
    /usr/share/doc/hpcc/examples/_hpccinf.txt > "in-$1-$2/hpccinf.txt"
}
trace() {  # P N
  [ -f "t-$1-$2/run.json" ] && return
  (cd "in-$1-$2" && /usr/bin/time -f "traced P=$1 N=$2: %e s" "$B/trace/mktrace" -np "$1" --param N="$2" -o "$OUT/t-$1-$2" \
    --mpirun-opt --oversubscribe -- hpcc > "$OUT/t-$1-$2.log" 2>&1; tail -1 "$OUT/t-$1-$2.log")
}
for c in "4 2 2" "8 2 4" "16 4 4"; do set -- $c; for N in 200 400; do input "$1" "$N" "$2" "$3"; done; done
for P in 4 8; do for N in 200 400; do trace $P $N; done; done
trace 16 400
/usr/bin/time -f "mkskel build: %e s, %M KB" "$B/sim/mkskel" build t-4-200 t-4-400 t-8-200 t-8-400 -o hpcc-48.json \
  > hpcc-48.build.txt 2> hpcc-48.log
cat hpcc-48.build.txt; tail -1 hpcc-48.log
echo "held out: P=16 N=400"
"$B/sim/mkskel" compare hpcc-48.json t-16-400 --show 0 2>&1 | tail -6 | sed 's/^/  /'
