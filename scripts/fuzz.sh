#!/usr/bin/env bash
# Fuzzes mksim's input readers with libFuzzer (targets in tests/fuzz/): builds them with clang, ASan and UBSan
# in build-fuzz/, then runs each target for SECONDS (default 60) over its corpus, one target at a time.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#        targets: trace_rank trace_run_json ti_run skeleton expr (default: all)
#        MKSIM_FUZZ_ARGS="-max_len=8192 ..." adds libFuzzer options.
# The seeds in tests/fuzz/corpus/<target>/ are only read; new inputs go to build-fuzz/corpus/<target>/.
# A crash (or sanitizer report, leak, timeout) keeps its input in build-fuzz/crashes/ and makes the script
# exit 1 after the remaining targets ran; reproduce it with build-fuzz/fuzz/fuzz_<target> FILE.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL=(trace_rank trace_run_json ti_run skeleton expr)
seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2; }
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${ALL[@]}")
for t in "${targets[@]}"; do
  [[ " ${ALL[*]} " == *" $t "* ]] || { echo "fuzz: unknown target $t (known: ${ALL[*]})" >&2; exit 2; }
done

bash scripts/install-deps.sh
# clang and its libFuzzer runtime (Debian 12: clang-14, libclang-rt-14-dev)
probe='extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }'
if ! command -v clang++ >/dev/null || ! echo "$probe" | clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "fuzz: installing clang and libclang-rt-14-dev"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev
fi

dir=build-fuzz
CC=clang CXX=clang++ cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMKSIM_FUZZ=ON \
  -DMKSIM_BUILD_TESTS=OFF > /dev/null
cmake --build "$dir" -j"$(nproc)" --target mksim_fuzzers

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p "$dir/crashes" "$dir/logs"
failed=()
summary=$(printf '%-16s %8s %12s %10s %8s  %s' target seconds executions exec/s corpus result)
for t in "${targets[@]}"; do
  work="$dir/corpus/$t"
  log="$dir/logs/$t.log"
  mkdir -p "$work"
  opts=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$dir/crashes/$t-")
  [ -f "tests/fuzz/dict/$t.dict" ] && opts+=(-dict="tests/fuzz/dict/$t.dict")
  # shellcheck disable=SC2206  # MKSIM_FUZZ_ARGS is a list of options
  opts+=(${MKSIM_FUZZ_ARGS:-})
  echo "fuzz: $t for ${seconds}s (log $log)"
  start=$SECONDS
  set +e
  "$dir/fuzz/fuzz_$t" "${opts[@]}" "$work" "tests/fuzz/corpus/$t" > "$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  time_s=$((SECONDS - start))
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  result=ok
  if [ $rc -ne 0 ]; then
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    result="FAILED (exit $rc) ${crash:-see $log}"
    failed+=("$t")
    grep -m 20 -E 'ERROR|runtime error|SUMMARY|==[0-9]+==|terminate|deadly|timeout' "$log" >&2 || tail -20 "$log" >&2
  fi
  line=$(printf '%-16s %8s %12s %10s %8s  %s' "$t" "$time_s" "${runs:-?}" "${rate:-?}" \
    "$(find "$work" "tests/fuzz/corpus/$t" -type f | wc -l)" "$result")
  echo "$line"
  summary+=$'\n'"$line"
done
echo
echo "$summary"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: crashes in ${failed[*]}: inputs kept in $dir/crashes/" >&2
  exit 1
fi
