#!/usr/bin/env python3
"""Analytic model benchmark (issue "Analytic models"): for each reference skeleton and platform, the time to
derive the closed form and the compiled expression's evaluations per second on one core (target >= 10^6),
with the replay's answer and wall time at the same point for scale. Runs build/bench/mksim_bench_model_eval.

    python3 bench/model_eval.py                       # paragon and t3e at P=128, 2 s per measurement
    python3 bench/model_eval.py --P 64 --seconds 1 --platforms paragon
"""
import argparse
import csv
import io
import os
import subprocess
import sys

from benchlib import logger

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--P", type=int, default=128)
    ap.add_argument("--seconds", type=float, default=2.0, help="per evaluation-rate measurement")
    ap.add_argument("--platforms", default="paragon,t3e")
    ap.add_argument("--driver", default=os.path.join(ROOT, "build", "bench", "mksim_bench_model_eval"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "model_eval.csv"))
    a = ap.parse_args()
    log = logger("model_eval")
    rows = []
    for plat in a.platforms.split(","):
        path = os.path.join(ROOT, "platforms", plat + ".xml")
        log("%s P=%d" % (plat, a.P))
        out = subprocess.run([a.driver, path, str(a.P), str(a.seconds)], check=True, capture_output=True, text=True).stdout
        for r in csv.DictReader(io.StringIO(out)):
            r["platform"] = plat
            rows.append(r)
    fields = ["platform", "skeleton", "P", "derive_ms", "evals_per_s", "model_T_s", "replay_T_s", "replay_wall_s", "terms"]
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in fields})
    print("| platform | skeleton | P | derive ms | evaluations/s | model T s | replay T s | gap | replay wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        gap = 100 * (float(r["model_T_s"]) - float(r["replay_T_s"])) / float(r["replay_T_s"])
        print("| %s | %s | %s | %.1f | %.2e | %.4g | %.4g | %+.2f%% | %.2f |" % (
            r["platform"], r["skeleton"], r["P"], float(r["derive_ms"]), float(r["evals_per_s"]),
            float(r["model_T_s"]), float(r["replay_T_s"]), gap, float(r["replay_wall_s"])))
    log("wrote " + a.out)


if __name__ == "__main__":
    sys.exit(main())
