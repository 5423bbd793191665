#!/usr/bin/env bash
# A loop's warm-up (skeletons/builder/README.md, "A loop's warm-up"): the end-to-end test's training runs (ATM2D, P =
# 2, CPU times: N = 512, 1024, 1536 at 20 steps and 1024 at 30) and a held-out run (N = 1280, 25 steps), traced in R
# batches; each batch built by two mkskel binaries side by side (a build before the change, one after) and compared
# with its held-out run (`mkskel compare`: each rank's compute, mean and worst relative error over ranks).
# usage: bench/warm_up.sh OLD_BUILD NEW_BUILD OUT_DIR [R]   (a build dir with sim/mkskel; NEW_BUILD also trace/mktrace
#        and apps/atm2d)
set -euo pipefail
OLD=$(cd "$1" && pwd); NEW=$(cd "$2" && pwd); OUT=$3; R=${4:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 MKTRACE_CPU_TIME=1
mkdir -p "$OUT"
printf "%-6s %-30s %-30s\n" batch "before: compute mean / worst" "after: compute mean / worst"
for r in $(seq 1 "$R"); do
  T="$OUT/batch$r"; mkdir -p "$T"
  for p in 512:20 1024:20 1536:20 1024:30 1280:25; do
    N=${p%:*}; S=${p#*:}
    [ -d "$T/atm2d-$N-$S" ] || "$NEW/trace/mktrace" -np 2 --param N=$N --param steps=$S -o "$T/atm2d-$N-$S" \
      -- "$NEW/apps/atm2d" $N $S > /dev/null
  done
  row=""
  for B in "$OLD" "$NEW"; do
    tag=$([ "$B" = "$OLD" ] && echo before || echo after)
    "$B/sim/mkskel" build "$T"/atm2d-{512-20,1024-20,1536-20,1024-30} -o "$T/$tag.json" > "$T/$tag.log" 2>&1
    row="$row $(printf "%-30s" "$("$B/sim/mkskel" compare "$T/$tag.json" "$T/atm2d-1280-25" | awk '/compute \(s\)/ {print $3 " / " $4}')")"
  done
  printf "%-6s%s\n" "$r" "$row"
done
