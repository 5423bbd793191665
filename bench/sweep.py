#!/usr/bin/env python3
"""Batch sweeps (issue "Batch parameter sweeps"): the local pool's throughput and its speedup on all cores, a
sweep up to P = 65,536 on a generated mesh, and the distributed mode under mpirun against the local one.

  throughput  the same grid swept with -j 1 and -j 2, alternately (j1, j2, j1, j2 ...: a noisy machine affects
              both alike), in model mode (PGE1, one child per platform and P deriving every point) and in replay
              mode (one child per point); points per second and the ratio j2 / j1 (target >= 1.8 on 2 cores).
  large       ATM2D on a generated 256 x 256 Paragon-like mesh (`mksim platform --machine paragon --nodes
              65536`), P = 4..65536:x2, --mode both, all cores (target: within 15 minutes).
  mpi         `mpirun --oversubscribe -np 4 mksim sweep ...` against the local pool on the same grid: the two
              tables must hold the same rows and values (wall-clock columns aside; compared with h5py).

Writes bench/results/sweep.csv and prints the figures. Needs build/sim/mksim (or --mksim); the table
comparison uses Debian's python3-h5py (/usr/bin/python3). Standard library only otherwise.
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from benchlib import logger, mpi_env  # noqa: E402

log = logger("sweep")

GRIDS = {
    "model": ["--skeleton", "pge1", "--platform", "paragon,t3e", "--P", "4..256:x2", "--param", "K=1..256:x2",
              "--param", "N=256..4096:x2", "--mode", "model"],
    "replay": ["--skeleton", "atm2d", "--platform", "paragon", "--P", "16..256:x2", "--param", "steps=10..80:x2",
               "--param", "N=128..1024:x2", "--mode", "replay"],
}

COMPARE = r"""
import sys, h5py, numpy as np
a = h5py.File(sys.argv[1])['sweep'][()]
b = h5py.File(sys.argv[2])['sweep'][()]
assert a.dtype.names == b.dtype.names, (a.dtype.names, b.dtype.names)
assert len(a) == len(b), (len(a), len(b))
cols = [c for c in a.dtype.names if not c.endswith('wall_s')]
bad = [c for c in cols if not all((x == y) or (isinstance(x, float) and np.isnan(x) and np.isnan(y)) for x, y in zip(a[c], b[c]))]
print("%d rows, %d columns compared (%s), differing: %s" % (len(a), len(cols), ", ".join(cols), ",".join(bad) or "none"))
sys.exit(1 if bad else 0)
"""


def sweep(mksim, args, out, env=None, launcher=None):
    """Runs one sweep from scratch; returns (wall seconds, its summary line)."""
    for p in (out, out + ".sweep"):
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)
    cmd = (launcher or []) + [mksim, "sweep"] + args + ["-q", "-o", out]
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit("sweep failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stdout))
    line = next((l for l in r.stdout.splitlines() if l.startswith("sweep:")), r.stdout.strip())
    return wall, line


def points_of(line):
    return int(line.split()[1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mksim", default=os.path.join(ROOT, "build", "sim", "mksim"))
    ap.add_argument("--rounds", type=int, default=2, help="alternating j1/j2 rounds per mode")
    ap.add_argument("--only", choices=["throughput", "large", "mpi"], action="append")
    ap.add_argument("--large-max-P", type=int, default=65536)
    ap.add_argument("--csv", default=os.path.join(HERE, "results", "sweep.csv"))
    a = ap.parse_args(argv)
    parts = a.only or ["throughput", "large", "mpi"]
    work = tempfile.mkdtemp(prefix="mksim_bench_sweep_")
    rows = []
    try:
        if "throughput" in parts:
            for mode, grid in GRIDS.items():
                walls = {1: [], 2: []}
                for rnd in range(a.rounds):
                    for j in (1, 2):
                        w, line = sweep(a.mksim, grid + ["-j", str(j)], os.path.join(work, "t.h5"))
                        walls[j].append(w)
                        log("%s j=%d round %d: %.2f s (%s)" % (mode, j, rnd + 1, w, line))
                n = points_of(line)
                for j in (1, 2):
                    best = min(walls[j])
                    rows.append({"part": "throughput", "mode": mode, "jobs": j, "points": n, "wall_s": "%.3f" % best,
                                 "points_per_s": "%.2f" % (n / best), "note": "best of %d" % a.rounds})
                ratios = [w1 / w2 for w1, w2 in zip(walls[1], walls[2])]
                if mode == "replay":
                    # The machine's own ceiling for two simulations at once: the same replay 4 times in a row
                    # against 2 x 2 at once, as plain `mksim predict` processes (no sweep machinery).
                    one = [a.mksim, "--platform", "paragon", "--P", "256", "--skeleton", "atm2d", "--param", "steps=80",
                           "--param", "N=1024"]
                    t0 = time.monotonic()
                    for _ in range(4):
                        subprocess.run(one, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
                    serial = time.monotonic() - t0
                    t0 = time.monotonic()
                    procs = [subprocess.Popen(["sh", "-c", " ".join(one) + " >/dev/null && " + " ".join(one) + " >/dev/null"],
                                              cwd=ROOT) for _ in range(2)]
                    for p in procs:
                        p.wait()
                    pair = time.monotonic() - t0
                    rows.append({"part": "throughput", "mode": "replay", "jobs": "ceiling", "points": 4,
                                 "wall_s": "%.3f/%.3f" % (serial, pair), "points_per_s": "%.2f" % (serial / pair),
                                 "note": "two plain mksim predict processes at once vs one after the other (no sweep)"})
                rows.append({"part": "throughput", "mode": mode, "jobs": "2/1", "points": n,
                             "wall_s": "", "points_per_s": "%.2f" % (min(walls[1]) / min(walls[2])),
                             "note": "speedup; per round " + " ".join("%.2f" % r for r in ratios)})
        if "large" in parts:
            plat = os.path.join(work, "mesh65536.xml")
            subprocess.run([a.mksim, "platform", "--machine", "paragon", "--nodes", str(a.large_max_P), "-o", plat],
                           check=True, stdout=subprocess.DEVNULL)
            try:  # stack guard pages for every rank (see bench/replay_throughput.py)
                with open("/proc/sys/vm/max_map_count") as f:
                    if int(f.read()) < 4 * a.large_max_P + 65536 and os.geteuid() == 0:
                        subprocess.run(["sysctl", "-w", "vm.max_map_count=%d" % (4 * a.large_max_P + 65536)],
                                       stdout=subprocess.DEVNULL)
            except OSError:
                pass
            grid = ["--skeleton", "atm2d", "--platform", plat, "--P", "4..%d:x2" % a.large_max_P, "--param", "steps=10",
                    "--mode", "both"]
            w, line = sweep(a.mksim, grid, os.path.join(work, "large.h5"))
            log("large: %.1f s (%s)" % (w, line))
            rows.append({"part": "large", "mode": "both", "jobs": "all", "points": points_of(line), "wall_s": "%.1f" % w,
                         "points_per_s": "%.3f" % (points_of(line) / w), "note": "atm2d steps=10, P=4..%d:x2 on a generated mesh; target 900 s" % a.large_max_P})
        if "mpi" in parts:
            grid = ["--skeleton", "pge1", "--platform", "paragon,t3e", "--P", "4..64:x2", "--param", "K=1..64:x2",
                    "--mode", "both"]
            wl, line_l = sweep(a.mksim, grid, os.path.join(work, "local.h5"))
            wm, line_m = sweep(a.mksim, grid, os.path.join(work, "mpi.h5"), env=mpi_env(),
                               launcher=["mpirun", "--oversubscribe", "-np", "4"])
            cmp = subprocess.run(["/usr/bin/python3", "-c", COMPARE, os.path.join(work, "local.h5"), os.path.join(work, "mpi.h5")],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            log("mpi: local %.2f s (%s); mpirun -np 4 %.2f s (%s); %s" % (wl, line_l, wm, line_m, cmp.stdout.strip()))
            rows.append({"part": "mpi", "mode": "both", "jobs": "local", "points": points_of(line_l), "wall_s": "%.2f" % wl,
                         "points_per_s": "%.2f" % (points_of(line_l) / wl), "note": ""})
            rows.append({"part": "mpi", "mode": "both", "jobs": "mpirun -np 4", "points": points_of(line_m), "wall_s": "%.2f" % wm,
                         "points_per_s": "%.2f" % (points_of(line_m) / wm),
                         "note": ("same table: " if cmp.returncode == 0 else "TABLES DIFFER: ") + cmp.stdout.strip().split(",")[0]})
            if cmp.returncode != 0:
                raise SystemExit("mpi and local tables differ: " + cmp.stdout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fields = ["part", "mode", "jobs", "points", "wall_s", "points_per_s", "note"]
    if rows:
        os.makedirs(os.path.dirname(a.csv), exist_ok=True)
        old = []
        if os.path.exists(a.csv):  # keep the parts not run this time
            with open(a.csv) as f:
                old = [r for r in csv.DictReader(f) if r["part"] not in parts]
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for r in old + rows:
                w.writerow(r)
    for r in rows:
        print("%-10s %-6s j=%-13s %6s points %9s s %9s points/s  %s" % (r["part"], r["mode"], r["jobs"], r["points"],
                                                                   r["wall_s"], r["points_per_s"], r["note"]))


if __name__ == "__main__":
    main()
