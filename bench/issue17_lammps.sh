#!/usr/bin/env bash
# Issue 17's LAMMPS acceptance. Two inputs of Debian 12's lammps with the box edge L and the step count S as
# variables: `melt` (lammps-examples' in.melt: neighbour lists rebuilt every 20 steps) and `lj` (LAMMPS'
# bench/in.lj style: lists rebuilt when an atom moved more than half the skin, so which steps rebuild depends
# on the data). For each: traced at P = 2, 4, 8 and L = 8, 12 (S = 100), one skeleton from the six runs;
#  - the same from P = 4, 8 only (at P = 2 LAMMPS's grid is 1x1x2: the exchanges of the missing dimensions
#    shift the program's blocks against the other runs');
#  - whether each pairs its messages (mkskel build at the traced runs, `mksim check` at P = 16, 64, 1024);
#  - its size against one built with S = 1000 in place of S = 100 at P = 8 (does it grow with the steps?);
#  - held out: a run at P = 16 (oversubscribed), L = 12, compared rank by rank (`mkskel compare`: messages
#    sent, bytes sent, compute);
#  - replayed at P = 64 on platforms/t3e.xml and at P = 1024 on a 1024-node T3E (`mksim platform`), L = 16.
# Compute is the tracer's thread CPU time (MKTRACE_CPU_TIME=1): the runs share two cores.
# usage: bench/issue17_lammps.sh BUILD_DIR OUT_DIR [INPUT...]   (INPUT: melt, lj; default both)
set -uo pipefail
B=$(cd "$1" && pwd); OUT=$2; shift 2
INPUTS=${*:-melt lj}
HERE=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MKTRACE_CPU_TIME=1
mkdir -p "$OUT"; cd "$OUT"
sed -e 's/block 0 10 0 10 0 10/block 0 ${L} 0 ${L} 0 ${L}/' -e 's/^run.*/run\t\t${S}/' \
  /usr/share/lammps/examples/melt/in.melt > in.melt
cat > in.lj <<'EOF'
# 3d Lennard-Jones, LAMMPS' bench/in.lj style: box edge L (fcc cells), S steps; neighbour lists rebuilt
# when an atom has moved more than half the skin (check yes): which steps rebuild depends on the data
units		lj
atom_style	atomic
lattice		fcc 0.8442
region		box block 0 ${L} 0 ${L} 0 ${L}
create_box	1 box
create_atoms	1 box
mass		1 1.0
velocity	all create 1.44 87287 loop geom
pair_style	lj/cut 2.5
pair_coeff	1 1 1.0 1.0 2.5
neighbor	0.3 bin
neigh_modify	delay 0 every 1 check yes
fix		1 all nve
thermo		100
run		${S}
EOF
[ -f t3e-1024.xml ] || "$B/sim/mksim" platform --machine t3e --nodes 1024 -o t3e-1024.xml > /dev/null
trace() {  # INPUT P L S
  local d="t-$1-$2-$3-$4"
  [ -f "$d/run.json" ] || "$B/trace/mktrace" -np "$2" --param L="$3" --param S="$4" -o "$d" \
    --mpirun-opt --oversubscribe -- lmp -in "in.$1" -var L "$3" -var S "$4" -log none -screen none > /dev/null
}
for in in $INPUTS; do
  echo "== $in"
  for P in 2 4 8; do for L in 8 12; do trace "$in" $P $L 100; done; done
  trace "$in" 8 8 1000; trace "$in" 16 12 100
  for set in "2 4 8" "4 8"; do
    tag=${set// /}; files=""; for P in $set; do files="$files t-$in-$P-8-100 t-$in-$P-12-100"; done
    "$B/sim/mkskel" build $files -o $in-$tag.json > $in-$tag.build.txt 2> $in-$tag.log
    echo "skeleton from P=${set// /,} x L=8,12, S=100: $(grep -o 'skeleton [0-9]* bytes' $in-$tag.build.txt)," \
      "$(grep -E 'pair at every|does not pair' $in-$tag.build.txt | cut -c1-80)"
    echo "  held out: P=16 L=12 S=100"
    "$B/sim/mkskel" compare $in-$tag.json t-$in-16-12-100 --show 0 | sed 's/^/    /'
    for P in 16 64 1024; do
      echo "  mksim check at P=$P, L=16: $("$B/sim/mksim" check --skeleton $in-$tag.json --P $P --param L=16,S=100 2>&1 | tail -n +3 | head -2 | cut -c1-160 | tr '\n' ' ')"
    done
    for P in 64 1024; do
      plat="$HERE/platforms/t3e.xml"; [ $P -gt 512 ] && plat=t3e-1024.xml
      echo "  replay P=$P L=16 S=100 on $(basename $plat): $( { /usr/bin/time -f '%e s wall, %M KB' "$B/sim/mksim" \
        --platform "$plat" --P $P --skeleton $in-$tag.json --param L=16,S=100 -o $in-$tag-$P.h5 2>&1 | \
        grep -iE 'predicted time|mksim:|error' | head -2 | cut -c1-200 | tr '\n' ' '; } 2>&1 | tr '\n' ' ')"
    done
  done
  for S in 100 1000; do
    "$B/sim/mkskel" build t-$in-8-8-$S -o $in-8-8-$S.json > b.txt 2> /dev/null
    echo "P=8 L=8 S=$S alone: $(grep -o 'skeleton [0-9]* bytes' b.txt)"
  done
done
