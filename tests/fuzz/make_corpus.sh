#!/usr/bin/env bash
# Regenerates the seed files of tests/fuzz/corpus/ from the project's own inputs: small real traces of the
# reference programs (mktrace; smpirun -trace-ti when present), the example skeletons and the expressions
# in them. Run after a change of a format (the seeds must be valid inputs to reach deep into the readers).
# Files whose name starts with "crash-" or "regress-" (inputs of fixed bugs) are kept.
# Usage: tests/fuzz/make_corpus.sh [BUILD_DIR]   (default build/, with mktrace and the apps built)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${1:-build}")
corpus=tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for t in trace_rank trace_run_json ti_run skeleton expr; do
  mkdir -p "$corpus/$t"
  find "$corpus/$t" -type f ! -name 'crash-*' ! -name 'regress-*' -delete
done

# Binary traces at P = 1 (trace_rank reads rank-0.mkt of a P = 1 run), and their run.json.
trace() {  # name frames -- program args
  local name=$1 frames=$2
  shift 3
  MKTRACE_FRAMES=$frames "$build/trace/mktrace" -np 1 --param N=16 --param mode=fast -o "$tmp/$name" -- "$@" \
    > "$tmp/$name.log" 2>&1
  cp "$tmp/$name/rank-0.mkt" "$corpus/trace_rank/$name.mkt"
  cp "$tmp/$name/run.json" "$corpus/trace_run_json/$name.json"
}
trace atm2d 4 -- "$build/apps/atm2d" 16 2
trace atm2d-1frame 1 -- "$build/apps/atm2d" 8 1
trace atm2d-noframes 0 -- "$build/apps/atm2d" 8 1
trace cg 2 -- "$build/apps/cg" 16 1
trace pge1 4 -- "$build/apps/pge1" 4 1 1
# a rank that never finalized: the file cut after its last whole record (no footer)
head -c $((48 + 56 * 5)) "$corpus/trace_rank/atm2d.mkt" > "$corpus/trace_rank/incomplete.mkt"

# SimGrid time-independent traces: the rank files of one run, separated by form feeds (see targets.cpp).
if command -v smpirun > /dev/null && [ -x "$build/apps-smpi/atm2d" ]; then
  ti() {  # name P program args
    local name=$1 P=$2 dir="$tmp/ti-$1"
    shift 2
    mkdir -p "$dir"
    for ((i = 0; i < P; ++i)); do echo "node-$i"; done > "$dir/hosts"
    smpirun -np "$P" -platform platforms/t3e.xml -hostfile "$dir/hosts" -trace-ti --cfg=tracing/filename:"$dir/ti.txt" \
      --cfg=smpi/simulate-computation:no --log=root.thresh:critical "$@" > "$dir/log" 2>&1
    local first=1
    while read -r f; do
      [ $first = 1 ] || printf '\f'
      first=0
      case $f in /*) cat "$f" ;; *) cat "$dir/$f" ;; esac
    done < "$dir/ti.txt" > "$corpus/ti_run/$name.txt"
  }
  ti atm2d-p2 2 "$build/apps-smpi/atm2d" 8 1
  ti cg-p4 4 "$build/apps-smpi/cg" 16 1
fi
# every action in SMPI 3.32's syntax (tests/ti_reader_test.cpp, EveryAction), at P = 2
printf '%s' "0 init
0 compute 1.5
0 send 1 7 3 0
0 irecv 1 9 5 1
0 wait 1 0 9
0 barrier
0 bcast 4 1 0 
0 reduce 2 0 1 0 
0 allreduce 6 0 1 
0 gather 2 2 1 0 0
0 allgather 2 2 0 0
0 alltoall 3 3 2 2
0 scatter 2 2 0 0 0
0 send 1 11 5 11
0 recv 1 11 5 11
0 gatherv 1 1 1 0 0 0
0 allgatherv 1 1 1 0 0
0 alltoallv 2 1 1 2 1 1 0 0
0 reducescatter 1 2 0 0
0 scatterv 1 2 1 0 0 0
0 isend 1 3 2 4
0 ssend 1 3 1 6
0 compute 2.5
0 waitall 3
0 irecv -333 3 2 0
0 wait -333 0 3
0 finalize
"$'\f'"1 init
1 finalize
" > "$corpus/ti_run/every-action.txt"

# Skeletons: the examples; expressions: every expression in them, with names outside the fuzz target's
# symbol table (P, rank, N, i) renamed to N.
cp skeletons/examples/*.json "$corpus/skeleton/"
python3 - "$corpus/expr" skeletons/examples/*.json << 'EOF'
import hashlib, json, re, sys
out, files = sys.argv[1], sys.argv[2:]
known = {"P", "rank", "N", "i", "floor", "ceil", "min", "max", "mod", "log2", "sqrt", "abs", "xor", "if"}
keys = {"count", "peer", "size", "tag", "root", "cond", "prob", "flops", "seconds", "ranks"}
found = set()
def walk(v, key=None):
    if isinstance(v, dict):
        for k, x in v.items():
            walk(x, k)
            if key == "let" and isinstance(x, str):
                found.add(x)
    elif isinstance(v, list):
        for x in v:
            walk(x, key)
    elif isinstance(v, str) and key in keys and v != "any":
        found.add(v)
for f in files:
    walk(json.load(open(f)))
for e in sorted(found):
    e = re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lambda m: m.group(0) if m.group(0) in known else "N", e)
    open(f"{out}/{hashlib.sha1(e.encode()).hexdigest()[:12]}.txt", "w").write(e)
EOF
for t in trace_rank trace_run_json ti_run skeleton expr; do
  echo "$t: $(find "$corpus/$t" -type f | wc -l) files, $(du -sk "$corpus/$t" | cut -f1) KiB"
done
