#!/usr/bin/env bash
# Seed 001 table 3 (SCALA: isospeed scalability of Jacobi 2-d on the Cray T3E) with mksim: skeletons/apps/jacobi2d.c
# traced under SMPI (time-independent traces carry its 5 flops per point) at P = 4..32, its skeleton built by
# mkskel, and mksim's isospeed query on the T3E with seed 001 table 2's per-pattern figures from each row's p and
# n (the table's header), beside the paper's predicted and measured psi. Needs a build (build/) with smpicc.
# Usage: bash scripts/scala_table3.sh [OUT_DIR]        (default out/scala-table3)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/scala-table3}
B=build
mkdir -p "$out"
out=$(cd "$out" && pwd)

# 1. time-independent traces at P = 4, 8, 16, 32 and n = 512, 1024 (5 iterations), one with 8 iterations
trace() {  # P n iterations
  local d="$out/traces/jacobi2d-$1-$2-$3"
  mkdir -p "$d"
  for ((i = 0; i < $1; ++i)); do echo "node-$i"; done > "$d/hosts"
  smpirun -np "$1" -platform platforms/t3e.xml -hostfile "$d/hosts" -trace-ti --cfg=tracing/filename:"$d/ti.txt" \
    --cfg=smpi/simulate-computation:no --log=root.thresh:warning "$B/apps-smpi/jacobi2d" "$2" "$3" > "$d/out.log"
  inputs+=("$d/ti.txt::n=$2,iters=$3")
}
inputs=()
for P in 4 8 16 32; do for n in 512 1024; do trace "$P" "$n" 5; done; done
trace 4 512 8

# 2. the skeleton
"$B/sim/mkskel" build "${inputs[@]}" --name jacobi2d -o "$out/jacobi2d.skel.json"

# 3. psi(p, p') from each row's p and n, on the T3E with seed 001 table 2's per-pattern figures
platform=calibration/data/t3e_table2_patterns.xml
: > "$out/psi.txt"
for row in "4 1024 8,16,32,64" "8 1519 16,32,64" "16 2186 32,64" "32 3124 64"; do
  set -- $row
  "$B/sim/mksim" model --platform "$platform" --skeleton "$out/jacobi2d.skel.json" --P "$1" --param "n=$2,iters=1000" \
    --isospeed n --range 256..16384 --Ps "$3" | tee -a "$out/psi.txt" |
    awk -v p="$1" 'NR > 2 { print p, $1, $4 }' >> "$out/psi-rows.txt.tmp"
done
mv "$out/psi-rows.txt.tmp" "$out/psi-rows.txt"

# 4. beside seed 001 table 3: predicted (P) and measured (M)
awk -v head="psi(p, p')   mksim    paper P  paper M  error" 'BEGIN {
       split("4 8 .908 .899;4 16 .877 .871;4 32 .859 .856;4 64 .877 .871;8 16 .966 .969;8 32 .946 .952;8 64 .966 .969;16 32 .979 .982;16 64 1.000 1.000;32 64 1.021 1.018", t, ";")
       for (i in t) { split(t[i], f, " "); P[f[1] " " f[2]] = f[3]; M[f[1] " " f[2]] = f[4] }
       print head
     }
     { k = $1 " " $2; e = 100 * ($3 - M[k]) / M[k]; s += (e < 0 ? -e : e); n++
       printf "psi(%2d, %2d)  %.4f   %.3f    %.3f    %+.2f%%\n", $1, $2, $3, P[k], M[k], e }
     END { printf "mean |error| against the measured column: %.2f%% (%d entries)\n", s / n, n }' "$out/psi-rows.txt"
