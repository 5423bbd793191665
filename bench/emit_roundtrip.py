#!/usr/bin/env python3
"""Issue 18 part 2, the strict round trip: skeleton -> `mkskel emit` -> mpicc -> `mktrace` (OpenMPI) at several P
and parameter values -> `mkskel build` -> `mkskel diff` against the original.

For every case (the example skeletons, and skeletons the builder builds in the tests from real programs: BUILT,
whose skeleton is first built from the program's own traces):
  1. `mkskel emit` writes the program, compiled with mpicc; compute is a spin at --flops-rate (flops) or of the
     skeleton's seconds;
  2. mktrace traces it at every P of the case and every parameter point (one-at-a-time around a base point);
  3. `mkskel build` rebuilds a skeleton from those runs (its ambiguities counted);
  4. `mkskel diff ORIGINAL REBUILT` at the case's P list (traced and untraced, up to 256) and parameter points,
     once with the structure and once on the expansions only (`--no-structure`).
One CSV row per case (bench/results/emit_roundtrip.csv), the rebuilt skeletons and the diffs kept in --keep.
Standard library only; see bench/README.md.
"""
import argparse
import csv
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402

log = benchlib.logger("emit_roundtrip")
EX = os.path.join(ROOT, "skeletons", "examples")

# name: (skeleton, traced P, base parameters, varied parameters {name: other values}, diff P list, diff parameter axes)
CASES = {
    "atm1d": (EX + "/atm1d.json", [2, 3, 4, 8, 16], {"N": 64, "steps": 2}, {"N": [128], "steps": [3]},
              "2-9,12,16,17,32,64,256", "N=64:96:256,steps=2:5"),
    "atm2d": (EX + "/atm2d.json", [2, 4, 8, 16], {"N": 64, "steps": 2}, {"N": [128], "steps": [3]},
              "2-9,12,16,17,32,64,256", "N=64:256,steps=2:5"),
    "cg": (EX + "/cg.json", [2, 4, 6, 8], {"N": 1024, "iters": 2}, {"N": [4096], "iters": [3]},
           "2-9,12,16,17,32,64,256", "N=1024:16384,iters=2:5"),
    "pge1": (EX + "/pge1.json", [2, 4, 6, 8], {"N": 64, "M": 8, "K": 2}, {"M": [16], "K": [4]},
             "2-9,12,16,17,32,64,256", "N=64,M=8:32,K=2:4"),
    "pge2": (EX + "/pge2.json", [2, 4, 8, 16], {"N": 64, "M": 8, "K": 2}, {"M": [16], "K": [4]},
             "2-9,12,16,17,32,64,256", "N=64,M=8:32,K=2:4"),
    "summa": (EX + "/summa.json", [2, 4, 6, 8, 9], {"N": 96, "nb": 16}, {"N": [192], "nb": [32]},
              "2-9,12,16,17,32,64,256", "N=96:384,nb=16:32"),
    "master_worker": (EX + "/master_worker.json", [2, 4, 6, 8], {"tasks": 24, "short_flops": 200000, "long_flops": 5000000},
                      {"tasks": [48, 8]}, "2-9,12,16,17,32,64,256", "tasks=24:100,short_flops=200000,long_flops=5000000"),
    "features": (ROOT + "/tests/data/emit_features.json", [2, 4, 6, 8], {"K": 12}, {"K": [24]},
                 "2-9,12,16", "K=12:36"),
}
# Skeletons the builder builds in the tests, from real programs traced the same way (tests/topology_build_test.cpp's
# periodic grid with cart_sub, split and dup; tests/skelbuild_branch_test.cpp's coin_ring, whose shared-coin `prob`
# branches decide messages): name -> (argv with {NAME} for parameters, traced P, base, varied, diff P, diff params).
# Their skeleton is built first from the program's traces, then round-tripped like the examples.
BUILT = {
    "topo_grid": (["{build}/tests/topo_app", "grid", "{steps}", "{bytes}"], [4, 8, 16], {"steps": 2, "bytes": 64}, {"steps": [3]},
                  "4-9,12,16,17,32,64", "steps=2:5,bytes=64"),
    "coin_ring": (["{build}/apps/coin_ring", "{steps}", "0.3", "7"], [4, 8], {"steps": 200}, {"steps": [400]},
                  "4-9,16,32", "steps=200:1000"),
}
# equal in distribution: prob branches within this tolerance, B drawing at A's probabilities (`mkskel diff --prob-tol`)
PROB_TOL = {"coin_ring": 0.02}

# prob branches that pick compute amounts: compute compared as the sum over all ranks (`mkskel diff --compute-sum`)
PROBABILISTIC = {"master_worker"}


def run(cmd, timeout, cwd=None):
    t0 = time.monotonic()
    env = benchlib.mpi_env()
    env["OMPI_MCA_mpi_yield_when_idle"] = "1"  # ranks waiting in MPI give their core to the others (oversubscribed)
    env["MKTRACE_CPU_TIME"] = "1"  # compute gaps as CPU time at every P (the emitted spin counts CPU time)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, cwd=cwd, env=env)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        return -1, "", "timeout after %d s" % timeout, time.monotonic() - t0


def points(base, varied):
    """The base point and, per varied parameter, the base with that parameter at each other value."""
    out = [dict(base)]
    for k, vs in varied.items():
        for v in vs:
            out.append(dict(base, **{k: v}))
    return out


def source(a, name, work):
    """Traces the program of a BUILT case and builds its skeleton: the original of its round trip."""
    argv, Ps, base, varied, diff_P, diff_params = BUILT[name]
    dirs = []
    for P in Ps:
        for pt in points(base, varied):
            d = os.path.join(work, "s-%s-%d-%s" % (name, P, "-".join("%s%g" % kv for kv in sorted(pt.items()))))
            cmd = [a.mktrace, "-np", str(P)]
            for k, v in sorted(pt.items()):
                cmd += ["--param", "%s=%g" % (k, v)]
            fill = dict({k: "%g" % v for k, v in pt.items()}, build=os.path.dirname(os.path.dirname(a.mktrace)))
            rc, out, err, _ = run(cmd + ["-o", d, "--"] + [x.format(**fill) for x in argv], a.timeout)
            if rc != 0:
                raise RuntimeError("tracing %s at P=%d %s: %s" % (name, P, pt, (err + out).strip()[-300:]))
            dirs.append(d)
    skel = os.path.join(work, name + ".source.json")
    rc, out, err, _ = run([a.mkskel, "build"] + dirs + ["-o", skel], a.timeout)
    if rc != 0:
        raise RuntimeError("building %s: %s" % (name, (err + out).strip()[-300:]))
    return (skel, Ps, base, varied, diff_P, diff_params)


def case(a, name, work, spec):
    skel, Ps, base, varied, diff_P, diff_params = spec
    row = {"case": name, "traced_P": " ".join(map(str, Ps)),
           "traced_params": "; ".join(",".join("%s=%s" % kv for kv in sorted(p.items())) for p in points(base, varied)),
           "diff_P": diff_P, "diff_params": diff_params}
    prog = os.path.join(work, name)
    rc, out, err, _ = run([a.mkskel, "emit", skel, "-o", prog + ".c"], 60)
    if rc != 0:
        return dict(row, status="error", message="emit: " + (err + out).strip()[-300:])
    rc, out, err, _ = run(["mpicc", "-std=c11", "-O2", "-Wall", "-o", prog, prog + ".c", "-lm"], 300)
    if rc != 0:
        return dict(row, status="error", message="mpicc: " + (err + out).strip()[-300:])
    dirs, t_trace = [], 0.0
    for P in Ps:
        for pt in points(base, varied):
            d = os.path.join(work, "t-%s-%d-%s" % (name, P, "-".join("%s%g" % kv for kv in sorted(pt.items()))))
            cmd = [a.mktrace, "-np", str(P)]
            for k, v in sorted(pt.items()):
                cmd += ["--param", "%s=%g" % (k, v)]
            cmd += ["-o", d, "--", prog, "--flops-rate=%g" % a.flops_rate] + ["%s=%g" % kv for kv in sorted(pt.items())]
            rc, out, err, wall = run(cmd, a.timeout)
            t_trace += wall
            if rc != 0:
                return dict(row, status="error", message="mktrace P=%d %s: %s" % (P, pt, (err + out).strip()[-300:]))
            dirs.append(d)
    row.update(runs=len(dirs), trace_s=round(t_trace, 1))
    rebuilt = os.path.join(work, name + ".rebuilt.json")
    rc, out, err, wall = run([a.mkskel, "build"] + dirs + ["-o", rebuilt], a.timeout)
    row["build_s"] = round(wall, 1)
    with open(os.path.join(work, name + ".build.log"), "w") as f:
        f.write(out + err)
    if rc != 0:
        return dict(row, status="error", message="build: " + (err + out).strip()[-300:])
    row["ambiguities"] = len(re.findall(r"^mkskel: ambiguous:", err, re.M))
    row["pairs_at_traced"] = "yes" if "pair at every traced run" in out else "no"
    # structure and operations at every P of the list (traced or not); compute (measured) where it was measured
    base_cmd = [a.mkskel, "diff", skel, rebuilt, "--P", diff_P, "--param", diff_params, "--compute-tol", "-1", "--max", "50"]
    if name in PROB_TOL:
        base_cmd += ["--prob-tol", "%g" % PROB_TOL[name]]
    out4, err4, worst, ncomp = "", "", 0.0, 0
    for P in Ps:  # at each traced run
        for pt in points(base, varied):
            comp_cmd = [a.mkskel, "diff", skel, rebuilt, "--P", str(P), "--param", ",".join("%s=%g" % kv for kv in sorted(pt.items())),
                        "--flops-rate", "%g" % a.flops_rate, "--no-structure", "--max", "50"] + \
                       (["--compute-sum"] if name in PROBABILISTIC else []) + \
                       (["--prob-tol", "%g" % PROB_TOL[name]] if name in PROB_TOL else [])
            _, o4, e4, _ = run(comp_cmd, a.timeout)
            out4, err4 = out4 + o4, err4 + e4
            m = re.search(r"worst rank compute difference (\S+)%", o4)
            worst = max(worst, float(m.group(1))) if m else worst
            ncomp += len(re.findall(r"^difference \d+ \(compute\)", o4, re.M))
    row["worst_compute_pct"] = round(worst, 1)
    row["compute_diffs"] = ncomp
    rc1, out1, err1, wall1 = run(base_cmd, a.timeout)
    rc3, out3, err3, _ = run(base_cmd + ["--flatten-conditions"], a.timeout)
    rc2, out2, err2, _ = run(base_cmd + ["--no-structure"], a.timeout)
    with open(os.path.join(work, name + ".diff.txt"), "w") as f:
        f.write(out1 + err1 + "\n--flatten-conditions:\n" + out3 + err3 + "\n--no-structure:\n" + out2 + err2 +
                "\ncompute at each traced run:\n" + out4 + err4)
    row["diff_s"] = round(wall1, 1)
    if rc1 not in (0, 1) or rc2 not in (0, 1) or rc3 not in (0, 1):
        return dict(row, status="error", message="diff: " + (err1 + out1 + err2).strip()[-300:])
    first_flat = re.search(r"^difference 1 \(structure\).*$", out3, re.M)
    row["flat_structure_difference"] = first_flat.group(0)[:300] if first_flat else ""
    first_ops = re.search(r"^difference 1 .*$", out2, re.M)
    row["first_op_difference"] = first_ops.group(0)[:300] if first_ops else ""
    m = re.search(r"\(structure (\d+), operations and compute (\d+)\): (\d+) \(P, parameter\) point\(s\), (\d+) rank expansion\(s\), "
                  r"(\d+) operation\(s\) compared; worst rank compute difference (\S+)%", out1)
    if m:
        row.update(structure_diffs=int(m.group(1)), op_diffs=int(m.group(2)), diff_points=int(m.group(3)), ops_compared=int(m.group(5)))
    kinds = sorted(set(re.findall(r"^difference \d+ \((\w+)\)", out1, re.M)))
    row["difference_kinds"] = " ".join(kinds)
    first = re.search(r"^difference 1 .*$", out1, re.M)
    row["first_difference"] = first.group(0)[:400] if first else ""
    row["status"] = ("same" if rc1 == 0 else ("same flattened" if rc3 == 0 else ("same operations" if rc2 == 0 else "differs")))
    if row["compute_diffs"]:
        row["status"] += ", compute differs"
    return row


FIELDS = ["case", "status", "structure_diffs", "op_diffs", "difference_kinds", "flat_structure_difference", "first_op_difference", "runs", "traced_P", "traced_params", "diff_P",
          "diff_params", "diff_points", "ops_compared", "compute_diffs", "worst_compute_pct", "ambiguities", "pairs_at_traced", "trace_s",
          "build_s", "diff_s", "first_difference", "message"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(list(CASES) + list(BUILT)), help="comma list of " + ",".join(list(CASES) + list(BUILT)))
    ap.add_argument("--mkskel", default=os.path.join(ROOT, "build", "sim", "mkskel"))
    ap.add_argument("--mktrace", default=os.path.join(ROOT, "build", "trace", "mktrace"))
    ap.add_argument("--flops-rate", type=float, default=1e8, help="the emitted programs' spin rate (flop/s)")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--keep", default="", help="directory to keep programs, traces, rebuilt skeletons and diffs in")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "emit_roundtrip.csv"))
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="emit_roundtrip_")
    os.makedirs(work, exist_ok=True)
    rows = []
    try:
        for name in a.cases.split(","):
            log("%s ..." % name)
            t0 = time.monotonic()
            try:
                r = case(a, name, work, BUILT and name in BUILT and source(a, name, work) or CASES[name])
            except RuntimeError as e:
                r = {"case": name, "status": "error", "message": str(e)}
            r["message"] = r.get("message", "")
            rows.append(r)
            log("%s: %s (structure %s, operations %s) in %.0f s" % (name, r["status"], r.get("structure_diffs", "-"),
                                                                    r.get("op_diffs", "-"), time.monotonic() - t0))
            os.makedirs(os.path.dirname(a.out), exist_ok=True)
            with open(a.out, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
                w.writeheader()
                w.writerows(rows)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("%-14s %-16s %9s %9s %5s %12s %8s  %s" % ("case", "status", "structure", "ops", "runs", "ops_compared", "compute%", "kinds"))
    # status: same (strict), same flattened (the same with conditions dissolved), same operations (the expansions only)
    for r in rows:
        print("%-14s %-16s %9s %9s %5s %12s %8s  %s" % (r["case"], r["status"], r.get("structure_diffs", "-"), r.get("op_diffs", "-"),
                                                       r.get("runs", "-"), r.get("ops_compared", "-"), r.get("worst_compute_pct", "-"),
                                                       r.get("difference_kinds", "") or r.get("message", "")))


if __name__ == "__main__":
    main()
