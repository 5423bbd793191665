#!/usr/bin/env bash
# Issue 17's HPCC measurement: Debian 12's hpcc with a small hpccinf.txt (the example of /usr/share/doc/hpcc,
# one HPL problem of size N, a process grid of P ranks as near-square as HPL takes it: 1x2, 2x2, 2x4, 4x4)
# traced at P = 2, 4, 8 and N = 400, 600; one skeleton; held out at P = 16, N = 600 (`mkskel compare`:
# per-rank messages, bytes, compute); `mksim check` and a replay at P = 64 on platforms/t3e.xml (N = 1200).
# usage: bench/issue17_hpcc.sh BUILD_DIR OUT_DIR
set -uo pipefail
B=$(cd "$1" && pwd); OUT=$2
HERE=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MKTRACE_CPU_TIME=1
mkdir -p "$OUT"; cd "$OUT"
grid() { case $1 in 2) echo "1 2";; 4) echo "2 2";; 8) echo "2 4";; 16) echo "4 4";; esac; }
trace() {  # P N
  local d="t-hpcc-$1-$2"
  [ -f "$d/run.json" ] && return
  mkdir -p "w-$1-$2"; set -- "$1" "$2" $(grid "$1")
  awk -v n="$2" -v p="$3" -v q="$4" 'NR==6{$1=n} NR==11{$1=p} NR==12{$1=q} {print}' \
    /usr/share/doc/hpcc/examples/_hpccinf.txt > "w-$1-$2/hpccinf.txt"
  (cd "w-$1-$2" && "$B/trace/mktrace" -np "$1" --param N="$2" -o "../$d" --mpirun-opt --oversubscribe -- hpcc > /dev/null)
}
for P in 2 4 8; do for N in 400 600; do trace $P $N; done; done
trace 16 600
"$B/sim/mkskel" build t-hpcc-{2,4,8}-{400,600} -o hpcc.json > hpcc.build.txt 2> hpcc.log
echo "skeleton from P=2,4,8 x N=400,600: $(grep -o 'skeleton [0-9]* bytes' hpcc.build.txt), $(grep -E 'pair at every|does not pair' hpcc.build.txt | cut -c1-80)"
tail -3 hpcc.log | cut -c1-200
echo "held out: P=16 N=600"
"$B/sim/mkskel" compare hpcc.json t-hpcc-16-600 --show 0 | sed 's/^/  /'
echo "mksim check at P=64: $("$B/sim/mksim" check --skeleton hpcc.json --P 64 --param N=1200 2>&1 | tail -n +3 | head -2 | cut -c1-200 | tr '\n' ' ')"
echo "replay P=64 N=1200 on t3e.xml: $("$B/sim/mksim" --platform "$HERE/platforms/t3e.xml" --P 64 --skeleton hpcc.json --param N=1200 -o hpcc-64.h5 2>&1 | grep -iE 'predicted time|mksim:' | head -1 | cut -c1-200)"
