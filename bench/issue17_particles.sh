#!/usr/bin/env bash
# Issue 17's particle program: skeletons/apps/particles.c (data-dependent migration on a Px x Py grid, a halo of
# the particles near each face, an allreduce every tenth step; no annotations), whose messages we know.
#  - traced at P = 2, 4, 8, 16 and N = 8192, 16384 (S = 40), one skeleton from the eight runs: its size, whether
#    it pairs its messages at the traced runs;
#  - the program's size against the steps: P = 8, N = 8192 traced with S = 40 and S = 400, one skeleton each;
#  - held out: a run at P = 32 (oversubscribed), N = 16384, compared rank by rank (`mkskel compare`: messages
#    sent, bytes sent, compute), and the program's own totals (rank 0 prints them) against the replay's;
#  - `mksim check` at P = 64 and 1024; replayed at P = 64 on platforms/t3e.xml and at P = 1024 on a 1024-node
#    T3E (`mksim platform`).
# Compute is the tracer's thread CPU time (MKTRACE_CPU_TIME=1): the runs share two cores.
# usage: bench/issue17_particles.sh BUILD_DIR OUT_DIR
set -uo pipefail
B=$(cd "$1" && pwd); OUT=$2
HERE=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MKTRACE_CPU_TIME=1
mkdir -p "$OUT"; cd "$OUT"
[ -f t3e-1024.xml ] || "$B/sim/mksim" platform --machine t3e --nodes 1024 -o t3e-1024.xml > /dev/null
trace() {  # P N S
  local d="t-$1-$2-$3"
  [ -f "$d/run.json" ] || "$B/trace/mktrace" -np "$1" --param N="$2" --param S="$3" -o "$d" \
    --mpirun-opt --oversubscribe -- "$B/apps/particles" "$2" "$3" > "$d.out"
}
files=""
for P in 2 4 8 16; do for N in 8192 16384; do trace $P $N 40; files="$files t-$P-$N-40"; done; done
trace 8 8192 400; trace 32 16384 40
"$B/sim/mkskel" build $files -o particles.json > build.txt 2> build.log
echo "skeleton from P=2,4,8,16 x N=8192,16384, S=40: $(grep -o '[0-9]* block(s)' build.txt), $(grep -o 'skeleton [0-9]* bytes' build.txt)," \
  "$(grep -E 'pair at every|does not pair' build.txt | cut -c1-80)"
for S in 40 400; do
  "$B/sim/mkskel" build t-8-8192-$S -o p8-$S.json > b.txt 2> /dev/null
  echo "P=8 N=8192 S=$S alone: $(grep -o '[0-9]* block(s)' b.txt), $(grep -o 'skeleton [0-9]* bytes' b.txt)"
done
echo "held out: P=32 N=16384 S=40"
"$B/sim/mkskel" compare particles.json t-32-16384-40 --show 0 | sed 's/^/  /'
"$B/sim/mksim" --platform "$HERE/platforms/t3e.xml" --P 32 --skeleton particles.json --param N=16384,S=40 -o p32.h5 > p32.txt
echo "  the program (rank 0's totals): $(grep -E '^(sends|bytes)' t-32-16384-40.out | tr '\n' ' ')"
echo "  the replay at P=32: $(grep -E '^messages' p32.txt)"
for P in 64 1024; do
  echo "mksim check at P=$P, N=16384: $("$B/sim/mksim" check --skeleton particles.json --P $P --param N=16384,S=40 2>&1 | tail -n +3 | head -2 | cut -c1-160 | tr '\n' ' ')"
done
for P in 64 1024; do
  plat="$HERE/platforms/t3e.xml"; [ $P -gt 512 ] && plat=t3e-1024.xml
  echo "replay P=$P N=16384 S=40 on $(basename $plat): $( { /usr/bin/time -f '%e s wall, %M KB' "$B/sim/mksim" \
    --platform "$plat" --P $P --skeleton particles.json --param N=16384,S=40 -o p$P.h5 2>&1 | \
    grep -iE 'predicted time|^messages|mksim:|error' | head -3 | cut -c1-200 | tr '\n' ' '; } 2>&1 | tr '\n' ' ')"
done
