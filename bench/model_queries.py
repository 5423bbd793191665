#!/usr/bin/env python3
"""The analytic model's answers against exhaustive replay (issue "Analytic models").

Grain size (seed 000 s.5.4, fig. 6): PGE1 (skeletons/examples/pge1.json, N = 1024, M = 256) on the Paragon;
for each P the model's best integer K (roots of dT/dK, then T at the integers around them: sim/model_queries)
against the best of replaying every K in 1..256.

Crossing points (seed 001 s.3, fig. 2): atm1d against atm2d; the model's range comparison against replaying
every point of the range both skeletons accept:
  t3e-P      T3E, N = 256, P = 16..256 (every integer P both accept)
  t3e-N      T3E, P = 64, N = 128..512 (step 16; the model bisects N)
  paragon-P  Paragon, N = 384, P = 8..256 (where the model and replay disagree: see bench/README.md)

Curves (seed 000 s.5.5, seed 001 s.3), model only: speedup, constant time (T = T0) and isospeed N' with
psi(p, p') of PGE1 (K = 8) and ATM2D on the Paragon.

Writes bench/results/model_queries_grain.csv, model_queries_cross.csv (every point),
model_queries_crossings.csv and model_queries_curves.csv, and prints the figures. Runs the C++ driver bench/model_queries.cpp
(`mksim_bench_model_queries`, built with the project); two driver processes at a time. Standard library only.
"""
import argparse
import csv
import io
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from benchlib import logger  # noqa: E402

log = logger("model_queries")

SCENARIOS = {
    "t3e-P": ["platforms/t3e.xml", "--range", "P=16:256", "--param", "N=256"],
    "t3e-N": ["platforms/t3e.xml", "--range", "N=128:512", "--P", "64", "--step", "16"],
    "paragon-P": ["platforms/paragon.xml", "--range", "P=8:256", "--param", "N=384"],
}
DEFAULT_P = "4,6,8,12,16,24,32,48,64,96,128"
CURVES = {
    "pge1": ["platforms/paragon.xml", "skeletons/examples/pge1.json", "--P", "1,2,4,8,16,32,64,128",
             "--range", "N=64:1000000", "--T0", "0.01", "--p", "4", "--value", "1024", "--param", "K=8"],
    "atm2d": ["platforms/paragon.xml", "skeletons/examples/atm2d.json", "--P", "1,4,16,64,256",
              "--range", "N=16:100000", "--T0", "0.5", "--p", "4", "--value", "512"],
}


def run_driver(driver, args):
    """Starts the driver; returns the Popen (stdout captured as text)."""
    return subprocess.Popen([driver] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def finish(p, what):
    out, err = p.communicate()
    if p.returncode != 0:
        raise SystemExit("model_queries: %s failed (%d): %s" % (what, p.returncode, err.strip()))
    return out


def grain(driver, Ps, k_hi, jobs):
    """Runs the grain check over Ps split into `jobs` driver processes; rows sorted by P."""
    groups = [Ps[i::jobs] for i in range(jobs) if Ps[i::jobs]]
    procs = []
    for g in groups:
        args = ["grain", "platforms/paragon.xml", "skeletons/examples/pge1.json", "--P", ",".join(map(str, g)),
                "--range", "K=1:%d" % k_hi, "--param", "N=1024", "--no-skew", "--replay"]
        procs.append((run_driver(driver, args), g))
    rows = []
    for p, g in procs:
        rows += list(csv.DictReader(io.StringIO(finish(p, "grain P=%s" % g))))
    rows.sort(key=lambda r: int(r["P"]))
    for r in rows:
        km, kr = float(r["K_model"]), float(r["K_replay"])
        pen = float(r["penalty_pct"])
        r["match"] = "exact" if km == kr else ("neighbour" if abs(km - kr) == 1 and pen < 2 else
                                               ("within 2%" if pen < 2 else "no"))
    return rows


def cross(driver, name):
    out = finish(run_driver(driver, ["cross", SCENARIOS[name][0], "skeletons/examples/atm1d.json",
                                     "skeletons/examples/atm2d.json"] + SCENARIOS[name][1:] + ["--no-skew", "--replay"]),
                 "cross " + name)
    points, crossings, timing = [], [], {}
    for line in out.splitlines()[1:]:
        f = line.split(",")
        if f[0] in ("model", "replay"):
            points.append({"scenario": name, "source": f[0], "x": f[1], "T_atm1d_s": f[2], "T_atm2d_s": f[3], "faster": f[4]})
        elif f[0].endswith("_crossing"):
            crossings.append({"scenario": name, "source": f[0].split("_")[0], "below": f[1], "above": f[2], "at": f[3],
                              "change": f[4]})
        elif f[0] == "timing":
            timing = {"model_s": float(f[2]), "replay_s": float(f[4]), "replays": int(f[6])}
    return points, crossings, timing


def write_csv(path, rows, fields):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in fields})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory holding bench/mksim_bench_model_queries")
    ap.add_argument("--P", default=DEFAULT_P, help="ranks of the grain-size check (default %(default)s)")
    ap.add_argument("--K-max", type=int, default=256, help="replay every K in 1..K_MAX (default M = 256)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="crossing scenarios (default all)")
    ap.add_argument("--skip-grain", action="store_true")
    ap.add_argument("--jobs", type=int, default=2, help="driver processes at a time (default 2)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    a = ap.parse_args(argv)
    driver = os.path.join(a.build, "bench", "mksim_bench_model_queries")
    if not os.access(driver, os.X_OK):
        raise SystemExit("model_queries: %s not found: build the project first (target mksim_bench_model_queries)" % driver)
    os.makedirs(a.out, exist_ok=True)

    if not a.skip_grain:
        t0 = time.monotonic()
        log("grain size: PGE1 N=1024 M=256 on the Paragon, P=%s, replaying K=1..%d" % (a.P, a.K_max))
        rows = grain(driver, [int(p) for p in a.P.split(",")], a.K_max, a.jobs)
        write_csv(os.path.join(a.out, "model_queries_grain.csv"), rows,
                  ["P", "K_model", "T_model_s", "roots", "K_replay", "T_replay_best_s", "T_replay_at_model_s", "penalty_pct",
                   "match", "model_s", "replays", "replay_s"])
        print("grain size, PGE1 N=1024 M=256, Paragon (model skew off), %.0f s wall" % (time.monotonic() - t0))
        print("%5s %8s %14s %9s %13s %10s %10s %9s" % ("P", "K_model", "dT/dK=0 at", "K_replay", "penalty_%", "match",
                                                        "model_ms", "replay_s"))
        for r in rows:
            print("%5s %8s %14s %9s %13.4f %10s %10.1f %9s" % (r["P"], r["K_model"], r["roots"], r["K_replay"],
                                                              float(r["penalty_pct"]), r["match"], 1000 * float(r["model_s"]),
                                                              r["replay_s"]))

    curve_rows = []
    for name, args in CURVES.items():
        out = finish(run_driver(driver, ["curves"] + args + ["--no-skew"]), "curves " + name)
        print("\ncurves %s (%s, skew off)" % (name, " ".join(args)))
        for line in out.splitlines():
            print("  " + line)
        body = [line for line in out.splitlines() if not line.startswith("#")]
        for r in csv.DictReader(io.StringIO("\n".join(body))):
            r["skeleton"] = name
            curve_rows.append(r)
    write_csv(os.path.join(a.out, "model_queries_curves.csv"), curve_rows,
              ["skeleton", "P", "T_s", "speedup", "efficiency", "N_constant_time", "N_isospeed", "psi"])

    all_points, all_crossings = [], []
    for name in [s for s in a.scenarios.split(",") if s]:
        if name not in SCENARIOS:
            raise SystemExit("model_queries: unknown scenario %s (have: %s)" % (name, ", ".join(SCENARIOS)))
        log("crossing: %s" % name)
        points, crossings, timing = cross(driver, name)
        all_points += points
        all_crossings += crossings
        print("\ncrossing %s (%s): model %.3f s, replay %.1f s for %d replays" % (name, " ".join(SCENARIOS[name]),
                                                                               timing["model_s"], timing["replay_s"],
                                                                               timing["replays"]))
        for c in crossings:
            print("  %-6s between %s and %s (at %s): %s" % (c["source"], c["below"], c["above"], c["at"], c["change"]))
    if all_points:
        write_csv(os.path.join(a.out, "model_queries_cross.csv"), all_points,
                  ["scenario", "source", "x", "T_atm1d_s", "T_atm2d_s", "faster"])
        write_csv(os.path.join(a.out, "model_queries_crossings.csv"), all_crossings,
                  ["scenario", "source", "below", "above", "at", "change"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
