#!/usr/bin/env python3
"""Tracer overhead, bytes per recorded event, and reader speed (issue 3's benchmark).

For each workload, runs the same reference program with real OpenMPI with and without libmktrace.so,
interleaved (plain, traced, plain, traced, ...) so that machine noise hits both alike, and compares the
program's own timing (the `time:` line of skeletons/apps, MPI_Wtime from after MPI_Init to before
MPI_Finalize, max over ranks), median over the repetitions. Traced variants: the default (4 call-site
frames, memoised unwinding), MKTRACE_FRAMES=1 (return address only) and MKTRACE_FRAMES=0 (no call
sites), and MKTRACE_CPU_TIME=1 (CPU time of every gap, the launcher's default when ranks outnumber cores). Then reads one traced run with build/bench/mksim_bench_trace_read: bytes on disk per event and
events read per second. See bench/README.md. Standard library only.
"""
import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402

# name -> (program, args, P): message-heavy first (the worst case: nothing but MPI calls)
WORKLOADS = {
    "atm2d-comm": ("atm2d", ["64", "100000"], 2),
    "cg-comm": ("cg", ["64", "50000"], 2),
    "atm2d-mixed": ("atm2d", ["1024", "2000"], 2),
}
VARIANTS = [("plain", None), ("traced", {"MKTRACE_CPU_TIME": "0"}), ("frames1", {"MKTRACE_FRAMES": "1", "MKTRACE_CPU_TIME": "0"}),
            ("frames0", {"MKTRACE_FRAMES": "0", "MKTRACE_CPU_TIME": "0"}), ("cputime", {"MKTRACE_CPU_TIME": "1"})]
FIELDS = ["workload", "P", "variant", "reps", "median_s", "min_s", "max_s", "overhead_pct", "mpi_calls",
          "us_per_call_added", "events", "bytes", "bytes_per_event", "read_s", "events_per_s"]


log = benchlib.logger("tracer_overhead")
env_root = benchlib.mpi_env


def parse(out, key):
    m = re.search(r"^%s:\s*(\S+)" % key, out, re.M)
    if not m:
        raise RuntimeError("no '%s:' line in output:\n%s" % (key, out))
    return float(m.group(1))


def run_once(build, prog, args, P, variant_env, tracedir):
    exe = os.path.join(build, "apps", prog)
    env = env_root()
    if variant_env is None:
        cmd = ["mpirun", "--oversubscribe", "-np", str(P), exe] + args
    else:
        env.update(variant_env)
        cmd = [os.path.join(build, "trace", "mktrace"), "-np", str(P), "-o", tracedir, "--", exe] + args
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    return parse(r.stdout, "time"), int(parse(r.stdout, "mpi_calls"))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "tracer_overhead.csv"))
    a = ap.parse_args(argv)
    reader = os.path.join(a.build, "bench", "mksim_bench_trace_read")
    for need in [os.path.join(a.build, "trace", "mktrace"), reader]:
        if not os.access(need, os.X_OK):
            sys.exit("missing %s: build first (cmake --build build)" % need)
    rows = []
    tmp = tempfile.mkdtemp(prefix="mktrace-bench-")
    try:
        for name in a.workloads.split(","):
            prog, args, P = WORKLOADS[name]
            times = {v: [] for v, _ in VARIANTS}
            calls = 0
            for rep in range(a.reps):
                for v, venv in VARIANTS:
                    t, calls = run_once(a.build, prog, args, P, venv, os.path.join(tmp, v))
                    times[v].append(t)
                log("%s rep %d: %s" % (name, rep + 1, ", ".join("%s %.3f" % (v, times[v][-1]) for v, _ in VARIANTS)))
            out = subprocess.run([reader, os.path.join(tmp, "traced"), "3"], stdout=subprocess.PIPE, text=True, check=True).stdout
            stats = dict(line.split() for line in out.splitlines())
            base = statistics.median(times["plain"])
            for v, _ in VARIANTS:
                med = statistics.median(times[v])
                row = {"workload": name, "P": P, "variant": v, "reps": a.reps, "median_s": "%.4f" % med,
                       "min_s": "%.4f" % min(times[v]), "max_s": "%.4f" % max(times[v]),
                       "overhead_pct": "%.1f" % (100.0 * (med / base - 1.0)), "mpi_calls": calls,
                       "us_per_call_added": "%.3f" % (1e6 * (med - base) / max(1, calls / P))}
                if v == "traced":
                    ev, by = int(stats["events"]), int(stats["bytes"])
                    row.update(events=ev, bytes=by, bytes_per_event="%.1f" % (by / ev), read_s=stats["read_s"],
                               events_per_s=stats["events_per_s"])
                rows.append(row)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    print("%-12s %-8s %9s %9s %10s %8s %10s %12s" % ("workload", "variant", "median_s", "overhead", "us/call+", "B/event", "events", "read ev/s"))
    for r in rows:
        print("%-12s %-8s %9s %8s%% %10s %8s %10s %12s" % (r["workload"], r["variant"], r["median_s"], r["overhead_pct"],
              r["us_per_call_added"], r.get("bytes_per_event", ""), r.get("events", ""), r.get("events_per_s", "")))
    log("wrote " + a.out)


if __name__ == "__main__":
    main(sys.argv[1:])
