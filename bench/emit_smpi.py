#!/usr/bin/env python3
"""Issue 18 part 2: the engine checked against SMPI through `mkskel emit`.

For every example skeleton (skeletons/examples) and P in {16, 64}:
  1. `mkskel emit` writes its MPI C program, compiled with smpicc (compute as smpi_execute_flops: SMPI charges
     exactly the skeleton's flops, or its seconds at the host's speed);
  2. smpirun runs it on a platform file (default platforms/t3e.xml, hosts node-0..node-(P-1) in rank order) with
     the eager threshold, send/receive overheads and collective algorithms aligned with mksim (bench/corpus.py's
     smpi_config: replay_throughput.smpi_cfg + SMPI_COLLECTIVES, simulate-computation off);
  3. mksim replays the skeleton on the same platform at the same P with the same parameters and seed.
The compared SMPI figure is its simulated time minus the latest rank's start of the program proper (after the
communicators are made, which the skeleton does at no cost), as bench/corpus.py does. One CSV row per point
(bench/results/emit_smpi.csv); see bench/README.md. Standard library only.
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from corpus import smpi_config, SMPI_LOG  # noqa: E402

log = benchlib.logger("emit_smpi")
FIELDS = ["skeleton", "P", "platform", "params", "mksim_s", "smpi_s", "error_pct", "smpi_total_s", "smpi_start_s",
          "mksim_wall_s", "smpi_wall_s", "status", "message"]


def run(cmd, timeout, cwd=None):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, cwd=cwd,
                           env=benchlib.mpi_env())
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        return -1, "", "timeout after %d s" % timeout, time.monotonic() - t0


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:300] if lines else ""


def point(a, name, P, workdir):
    skel = os.path.join(ROOT, "skeletons", "examples", name + ".json")
    row = {"skeleton": name, "P": P, "platform": os.path.basename(a.platform), "params": " ".join(a.param)}
    prog = os.path.join(workdir, name)
    if not os.path.exists(prog):
        rc, out, err, _ = run([a.mkskel, "emit", skel, "-o", prog + ".c"], 60)
        if rc != 0:
            return dict(row, status="error", message="mkskel emit: " + last_line(err + out))
        rc, out, err, _ = run(["smpicc", "-O2", "-Wall", "-o", prog, prog + ".c", "-lm"], 300)
        if rc != 0:
            return dict(row, status="error", message="smpicc: " + last_line(err + out))
    hosts = os.path.join(workdir, "hosts-%d.txt" % P)
    with open(hosts, "w") as f:
        f.write("".join("node-%d\n" % r for r in range(P)))
    cmd = ["smpirun", "-np", str(P), "-platform", a.platform, "-hostfile", hosts] + smpi_config(a.platform) + SMPI_LOG
    cmd += [prog, "--timing"] + a.param
    rc, out, err, wall = run(cmd, a.timeout, cwd=workdir)
    m = re.search(r"Simulated time: (\S+) seconds", out + err)
    if rc != 0 or not m:
        return dict(row, status="error", message="smpirun rc=%d: %s" % (rc, last_line(err + out)))
    starts = [float(s) for s in re.findall(r"^mkskel-emit: rank \d+ start (\S+)", out, re.M)]
    total = float(m.group(1))
    start = max(starts) if starts else 0.0
    row.update(smpi_total_s=total, smpi_start_s=start, smpi_s=float("%.9g" % (total - start)), smpi_wall_s=round(wall, 2))
    cmd = [a.mksim, "--platform", a.platform, "--P", str(P), "--skeleton", skel]
    for p in a.param:
        cmd += ["--param", p]
    rc, out, err, wall = run(cmd, a.timeout)
    m = re.search(r"^predicted time\s+(\S+)", out, re.M)
    if rc != 0 or not m:
        return dict(row, status="error", message="mksim rc=%d: %s" % (rc, last_line(err + out)))
    pred = float(m.group(1))
    row.update(mksim_s=pred, mksim_wall_s=round(wall, 2), status="ok", message="",
               error_pct=round(100.0 * (pred - row["smpi_s"]) / row["smpi_s"], 3) if row["smpi_s"] > 0 else "")
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--platform", default=os.path.join(ROOT, "platforms", "t3e.xml"))
    ap.add_argument("--skeleton", action="append", help="example name (default: every example)")
    ap.add_argument("--P", type=int, action="append", help="ranks (default: 16 and 64)")
    ap.add_argument("--param", action="append", default=[], help="NAME=VALUE for every skeleton (default: their defaults)")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("-o", "--output", default=os.path.join(HERE, "results", "emit_smpi.csv"))
    a = ap.parse_args()
    a.platform = os.path.abspath(a.platform)  # smpirun runs in a temporary directory
    a.mkskel = os.path.join(a.build, "sim", "mkskel")
    a.mksim = os.path.join(a.build, "sim", "mksim")
    names = a.skeleton or sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "skeletons", "examples")) if f.endswith(".json"))
    Ps = a.P or [16, 64]
    rows = []
    with tempfile.TemporaryDirectory(prefix="emit_smpi-") as workdir:
        for name in names:
            for P in Ps:
                r = point(a, name, P, workdir)
                log("%s P=%d: %s mksim %s smpi %s error %s%% %s" % (name, P, r["status"], r.get("mksim_s", ""), r.get("smpi_s", ""),
                                                                r.get("error_pct", ""), r.get("message", "")))
                rows.append(r)
    os.makedirs(os.path.dirname(a.output), exist_ok=True)
    with open(a.output, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})
    ok = [r for r in rows if r["status"] == "ok"]
    within = [r for r in ok if abs(r["error_pct"]) <= 1.0]
    print("%d points, %d ok, %d within 1%%; wrote %s" % (len(rows), len(ok), len(within), a.output))
    return 0 if len(within) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
