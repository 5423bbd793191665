#!/usr/bin/env bash
# Real runs of the reference MPI programs in skeletons/apps (no mocks), registered by
# skeletons/apps/CMakeLists.txt:
#   apps_test.sh openmpi  APP APPS_DIR SMPI_DIR SOURCE_DIR MKSIM   # OpenMPI at P = 1, 2, 4
#   apps_test.sh smpi     APP APPS_DIR SMPI_DIR SOURCE_DIR MKSIM   # SMPI at P = 16 on platforms/t3e.xml
#   apps_test.sh validate APP  APPS_DIR SMPI_DIR SOURCE_DIR MKSIM  # SMPI vs mksim (atm2d, pge1, pge2, cg)
# Each run must print the known `result:` and the `mpi_calls:` given by the formula derived from the
# app's skeleton (skeletons/examples/APP.json), written next to each case below.
set -u
mode=$1 app=$2 apps_dir=$3 smpi_dir=$4 src=$5 mksim=$6
fail=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# OpenMPI as root: the documented environment switches (same as --allow-run-as-root)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

say() { printf '%s\n' "$*"; }
bad() { say "FAIL: $*"; fail=1; }

field() { sed -n "s/^$1: *//p" "$2" | head -1; }

# check_run LABEL OUTFILE EXPECTED_RESULT REL_TOL EXPECTED_CALLS
check_run() {
    local label=$1 out=$2 want=$3 tol=$4 calls=$5 got gotc
    got=$(field result "$out") gotc=$(field mpi_calls "$out")
    if [ -z "$got" ]; then bad "$label: no 'result:' line"; sed 's/^/  | /' "$out"; return; fi
    if [ "$tol" = 0 ]; then
        [ "$got" = "$want" ] || bad "$label: result $got, expected exactly $want"
    elif ! awk -v g="$got" -v w="$want" -v t="$tol" 'BEGIN { d = g - w; if (d < 0) d = -d;
            s = w < 0 ? -w : w; exit !(d <= t * (s > 1 ? s : 1)) }'; then
        bad "$label: result $got, expected $want (relative tolerance $tol)"
    fi
    if [ "$gotc" != "$calls" ]; then bad "$label: mpi_calls $gotc, expected $calls"; fi
    say "ok   $label: result $got mpi_calls $gotc"
}

# run_mpi P OUT ARGS... : OpenMPI run, wall time printed
run_mpi() {
    local P=$1 out=$2; shift 2
    local t0=$(date +%s.%N)
    mpirun --allow-run-as-root --oversubscribe -np "$P" "$apps_dir/$app" "$@" >"$out" 2>&1
    local rc=$?
    say "     (mpirun -np $P $app $*: rc $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s)"
    return $rc
}

hostfile() { local i; for ((i = 0; i < $1; ++i)); do echo "node-$i"; done >"$work/hosts-$1"; echo "$work/hosts-$1"; }

SMPI_LOG=(--log=root.thresh:warning --log=smpi_config.thresh:error --log=xbt_cfg.thresh:warning
          --log=smpi_utils.thresh:info)

# run_smpi P PLATFORM OUT CFG... -- ARGS...
run_smpi() {
    local P=$1 plat=$2 out=$3; shift 3
    local cfg=()
    while [ "$1" != "--" ]; do cfg+=("$1"); shift; done
    shift
    local t0=$(date +%s.%N)
    smpirun -np "$P" -platform "$plat" -hostfile "$(hostfile "$P")" "${cfg[@]}" "${SMPI_LOG[@]}" \
        "$smpi_dir/$app" "$@" >"$out" 2>&1
    local rc=$?
    say "     (smpirun -np $P $app $*: rc $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s)"
    return $rc
}

# ---- the cases: arguments, expected result, tolerance, mpi_calls formula (from the skeletons) ----
# mpi_calls counts MPI_Send/Recv/Isend/Irecv and collective calls over all ranks (2 calls per message).
case $app in
atm2d)
    ARGS=(64 10); WANT=5827.32067952751; TOL=1e-11
    # Px = 2^floor(log2(P)/2), Py = P/Px; each step every rank isends+irecvs with each of its mesh
    # neighbours: links = 2(Px-1)Py + 2Px(Py-1) directed pairs -> steps * 2 * links calls
    calls() { local P=$1 L=0 Px Py; while (( (2 << L) <= P )); do ((++L)); done
              Px=$((1 << (L / 2))); Py=$((P / Px)); echo $((10 * 2 * (2 * (Px - 1) * Py + 2 * Px * (Py - 1)))); } ;;
pge1)
    ARGS=(100 37 8); WANT=893.857276974654; TOL=1e-12
    # nb = ceil(M/K) = 5 blocks; 2(P-1)nb messages (forward + backward), 2 calls each
    calls() { echo $((4 * ($1 - 1) * 5)); } ;;
pge2)
    ARGS=(100 37 8); WANT=893.857276974654; TOL=1e-12   # the same systems as pge1: same checksum
    # h = P/2, nb = 5; 4(h-1)nb pipeline messages + 2 exchange messages, 2 calls each
    calls() { echo $((2 * (4 * ($1 / 2 - 1) * 5 + 2))); } ;;
cg)
    ARGS=(1024 20); WANT=59203.6479073916; TOL=1e-11
    # (iters+1) halos of 2(P-1) messages (2 calls each) + 1 + 2*iters allreduces called by P ranks
    calls() { echo $((21 * 4 * ($1 - 1) + $1 * (1 + 2 * 20))); } ;;
master_worker)
    ARGS=(50 7); WANT=3054319143506755174; TOL=0   # integer checksum: exact at every P
    # (P-1) requests + tasks tasks + tasks results + (P-1) stops, 2 calls each
    calls() { echo $((4 * ($1 - 1) + 4 * 50)); } ;;
jacobi2d)
    ARGS=(64 10); WANT=-5.35094294828494; TOL=1e-11
    # every rank isends and irecvs once per neighbour direction (4 each) per exchange: the initial one and one per
    # iteration (10), on a periodic grid
    calls() { echo $((8 * $1 * 11)); } ;;
*) say "unknown app $app"; exit 2 ;;
esac

case $mode in
openmpi)
    for P in 1 2 4; do
        out="$work/$app-$P.txt"
        if { [ "$app" = pge2 ] || [ "$app" = master_worker ]; } && [ "$P" = 1 ]; then
            # as the skeleton (no rank group matches at P=1), the program rejects P=1
            if run_mpi 1 "$out" "${ARGS[@]}"; then bad "$app accepted P=1"; else say "ok   $app rejects P=1"; fi
            continue
        fi
        run_mpi "$P" "$out" "${ARGS[@]}" || { bad "$app at P=$P exited non-zero"; sed 's/^/  | /' "$out"; continue; }
        check_run "openmpi $app P=$P" "$out" "$WANT" "$TOL" "$(calls "$P")"
    done ;;
smpi)
    out="$work/$app-smpi-16.txt"
    run_smpi 16 "$src/platforms/t3e.xml" "$out" --cfg=smpi/simulate-computation:no -- "${ARGS[@]}" ||
        { bad "$app under SMPI exited non-zero"; sed 's/^/  | /' "$out"; }
    check_run "smpi $app P=16" "$out" "$WANT" "$TOL" "$(calls 16)" ;;
validate)
    # The real program under SMPI against mksim replaying its skeleton on the same platform file, with
    # computation off on both sides (SMPI: simulate-computation:no; mksim: flops parameters 0, or a copy of
    # the platform whose nodes are infinitely fast where the skeleton has fixed flop counts), and the
    # platform's MPI overheads and eager threshold mapped as bench/replay_throughput.py smpi_cfg() does.
    # SMPI's allreduce is set to recursive doubling, the algorithm mksim uses (its default differs).
    # compare_to_mksim PLATFORM LABEL "APP ARGS" "MKSIM --param ..." EXPECTED_CALLS
    compare_to_mksim() {
        local plat=$1 label=$2 app_args=$3 mk_params=$4 want_calls=$5
        prop() { sed -n "s/.*<prop id=\"$1\" value=\"\([^\"]*\)\".*/\1/p" "$plat" | head -1; }
        local s r o eager detached
        s=$(prop mksim.send_overhead_s); r=$(prop mksim.recv_overhead_s); o=$(prop mksim.per_message_overhead_s)
        eager=$(prop mksim.eager_threshold_bytes)
        r=$(awk -v a="${r:-0}" -v b="${o:-0}" 'BEGIN { printf "%.10g", a + b }')
        eager=${eager:-65536}
        detached=$((eager + 1 > 65536 ? eager + 1 : 65536))
        local CFG=(--cfg=network/model:CM02 --cfg=network/crosstraffic:0 --cfg=network/latency-factor:1
             --cfg=network/bandwidth-factor:1 --cfg=network/weight-S:0 --cfg=network/TCP-gamma:0
             --cfg=smpi/simulate-computation:no --cfg=smpi/display-timing:yes --cfg=smpi/allreduce:rdb
             --cfg=smpi/os:0:${s:-0}:0 --cfg=smpi/ois:0:${s:-0}:0 --cfg=smpi/or:0:$r:0
             --cfg=smpi/async-small-thresh:$((eager + 1)) --cfg=smpi/send-is-detached-thresh:$detached)
        local out="$work/validate-$label.txt" mout="$work/mksim-$label.txt"
        # shellcheck disable=SC2086
        run_smpi 16 "$plat" "$out" "${CFG[@]}" -- $app_args ||
            { bad "$label under SMPI exited non-zero"; sed 's/^/  | /' "$out"; return; }
        local t_smpi t_mksim gap
        t_smpi=$(field time "$out")
        [ "$(field mpi_calls "$out")" = "$want_calls" ] || bad "$label: mpi_calls $(field mpi_calls "$out"), expected $want_calls"
        # shellcheck disable=SC2086
        "$mksim" --platform "$plat" --P 16 --skeleton "$src/skeletons/examples/$app.json" $mk_params >"$mout" 2>&1 ||
            { bad "mksim $label failed"; sed 's/^/  | /' "$mout"; return; }
        t_mksim=$(sed -n 's/^predicted time *\([^ ]*\) s.*/\1/p' "$mout" | head -1)
        if [ -z "$t_smpi" ] || [ -z "$t_mksim" ]; then bad "$label: missing times (smpi '$t_smpi', mksim '$t_mksim')"; return; fi
        gap=$(awk -v a="$t_mksim" -v b="$t_smpi" 'BEGIN { printf "%+.3f", 100 * (a - b) / b }')
        if awk -v g="$gap" 'BEGIN { exit !(g > 2 || g < -2) }'; then
            bad "$label: mksim $t_mksim s vs SMPI $t_smpi s differ by $gap % (> 2 %)"
        else
            say "ok   $label: SMPI $t_smpi s (the program's span), mksim $t_mksim s, gap $gap % (limit 2 %)"
        fi
    }
    fast="$work/$(basename "$src/platforms/t3e.xml" .xml)-fast.xml"
    sed 's/speed="[^"]*"/speed="1e30f"/' "$src/platforms/t3e.xml" >"$fast"   # compute takes no time
    case $app in
    atm2d)
        # Paragon: N=1024 -> 4 KiB halo messages (eager); 2048 -> 8 KiB (= the threshold, still eager);
        # 4096 -> 16 KiB (rendezvous on the 8192-byte threshold). P=16: Px=Py=4, 96 calls per step.
        compare_to_mksim "$src/platforms/paragon.xml" atm2d-1024 "1024 10" "--param N=1024 --param steps=10 --param flops_per_point=0" 960
        compare_to_mksim "$src/platforms/paragon.xml" atm2d-2048 "2048 10" "--param N=2048 --param steps=10 --param flops_per_point=0" 960
        compare_to_mksim "$src/platforms/paragon.xml" atm2d-4096 "4096 4" "--param N=4096 --param steps=4 --param flops_per_point=0" 384 ;;
    pge1 | pge2)
        # T3E: K=4 and 64 -> eager pivots, K=512 -> rendezvous (threshold 4747 bytes); M=512 systems.
        for K in 4 64 512; do
            nb=$(( (512 + K - 1) / K ))
            if [ "$app" = pge1 ]; then c=$((4 * 15 * nb)); else c=$((2 * (4 * 7 * nb + 2))); fi
            compare_to_mksim "$fast" "$app-K$K" "1024 512 $K" "--param N=1024 --param M=512 --param K=$K" "$c"
        done ;;
    cg)
        # T3E: halo (512 B, eager) + two 8-byte allreduces per iteration, 20 iterations.
        compare_to_mksim "$fast" cg-4096 "4096 20" "--param N=4096 --param iters=20" $((21 * 4 * 15 + 16 * 41)) ;;
    *) say "validate: no case for $app"; exit 2 ;;
    esac ;;
*) say "unknown mode $mode"; exit 2 ;;
esac

[ $fail = 0 ] && say "PASS $mode $app" || say "FAILED $mode $app"
exit $fail
