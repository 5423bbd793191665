#!/usr/bin/env bash
# Issue 17's LAMMPS measurements: melt (Debian 12's lammps-examples /usr/share/lammps/examples/melt/in.melt with
# the box edge L and the steps S as variables) traced at P = 2, 4, 8 and L = 8, 12 (S = 100) and at P = 8,
# L = 8, S = 1000; skeleton sizes with exact sizes and with sizes as statistics; the replay at P = 64 and 1024
# on platforms/t3e.xml. usage: bench/issue17_lammps.sh BUILD_DIR OUT_DIR
set -uo pipefail
B=$(cd "$1" && pwd); OUT=$2
HERE=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"; cd "$OUT"
sed -e 's/block 0 10 0 10 0 10/block 0 ${L} 0 ${L} 0 ${L}/' -e 's/^run.*/run\t\t${S}/' \
  /usr/share/lammps/examples/melt/in.melt > in.melt
trace() {  # P L S
  [ -f "t-$1-$2-$3/run.json" ] || "$B/trace/mktrace" -np "$1" --param L="$2" --param S="$3" -o "t-$1-$2-$3" \
    --mpirun-opt --oversubscribe -- lmp -in in.melt -var L "$2" -var S "$3" -log none -screen none > /dev/null
}
for P in 2 4 8; do for L in 8 12; do trace $P $L 100; done; done
trace 8 8 1000
for S in 100 1000; do for mode in exact vary; do
  echo "P=8 L=8 S=$S --sizes $mode: $("$B/sim/mkskel" build t-8-8-$S --sizes $mode -o m-$S-$mode.json 2>/dev/null | grep -o 'skeleton [0-9]* bytes')"
done; done
"$B/sim/mkskel" build t-{2,4,8}-{8,12}-100 -o melt.json 2> melt.log | tail -1
for P in 64 1024; do
  "$B/sim/mksim" --platform "$HERE/platforms/t3e.xml" --P $P --skeleton melt.json --param L=16,S=100 -o melt-$P.h5 2>&1 |
    grep -iE 'predicted time|mksim:' | head -2
done
