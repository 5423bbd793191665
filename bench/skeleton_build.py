#!/usr/bin/env python3
"""Skeleton builder benchmark (issue 4): build time and peak memory for traces of 10^6 and 10^7 events,
and compression: skeleton bytes against trace bytes for each reference program at P = 4..32 and with
10x more iterations (a scale-independent skeleton does not grow).

Traces are real OpenMPI runs under build/trace/mktrace (oversubscribed on this machine); the builder is
build/sim/mkskel, timed with /usr/bin/time (wall seconds, peak RSS). Standard library only; see
bench/README.md.
"""
import argparse
import csv
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

# program -> (argument template, parameter names, iteration parameter); {it} is the iteration count
PROGRAMS = {
    "atm2d": ("{N} {it}", {"N": 256}, "steps"),
    "cg": ("{N} {it}", {"N": 1024}, "iters"),
    "pge1": ("{N} {M} {K}", {"N": 1024, "M": 64, "K": 4}, "M"),
    "pge2": ("{N} {M} {K}", {"N": 1024, "M": 64, "K": 4}, "M"),
}


log = benchlib.logger("skeleton_build")
env_root = benchlib.mpi_env


def trace(build, prog, P, params, it_name, it, out):
    tmpl, _, _ = PROGRAMS[prog]
    values = dict(params)
    values[it_name] = it
    args = tmpl.format(it=it, **values).split()
    cmd = [os.path.join(build, "trace", "mktrace"), "-np", str(P)]
    for k, v in sorted(values.items()):
        cmd += ["--param", "%s=%s" % (k, v)]
    cmd += ["-o", out, "--", os.path.join(build, "apps", prog)] + args
    subprocess.run(cmd, env=env_root(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, timeout=3600)
    return out


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))


def build(build_dir, traces, out):
    cmd = ["/usr/bin/time", "-f", "%e %M", os.path.join(build_dir, "sim", "mkskel"), "build"] + traces + ["-o", out]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=7200)
    if r.returncode != 0:
        raise RuntimeError("mkskel failed: %s" % r.stderr[-3000:])
    wall, rss = r.stderr.strip().splitlines()[-1].split()
    events = int(re.search(r"(\d+) events", r.stdout).group(1))
    return float(wall), int(rss) / 1024.0, events


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--events", default="1e6,1e7", help="sizes for the build-time part (atm2d at P=4)")
    ap.add_argument("--compression-P", default="4,8,16,32")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: time, compression")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "skeleton_build.csv"))
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="mkskel-bench-")
    rows = []
    try:
        if "compression" not in a.skip:
            for prog, (_, params, it_name) in PROGRAMS.items():
                base_it = {"steps": 10, "iters": 10, "M": 64}[it_name]
                # the same program at every P and at 10x iterations, one skeleton per traced run
                for P in [int(x) for x in a.compression_P.split(",")]:
                    for mult in (1, 10):
                        it = base_it * mult
                        d = trace(a.build, prog, P, params, it_name, it, os.path.join(tmp, "%s-%d-%d" % (prog, P, it)))
                        out = os.path.join(tmp, "%s-%d-%d.json" % (prog, P, it))
                        wall, rss, events = build(a.build, [d], out)
                        sk, tb = os.path.getsize(out), dir_bytes(d)
                        rows.append({"part": "compression", "program": prog, "P": P, "iterations": it, "events": events,
                                     "trace_bytes": tb, "skeleton_bytes": sk, "ratio": "%.1f" % (tb / sk),
                                     "build_s": "%.3f" % wall, "peak_rss_mib": "%.1f" % rss})
                        log("%s P=%d it=%d: trace %d B, skeleton %d B (%.1fx)" % (prog, P, it, tb, sk, tb / sk))
                        shutil.rmtree(d)
        if "time" not in a.skip:
            for target in [float(x) for x in a.events.split(",")]:
                # atm2d at P=4: 4 ranks x 2 exchanges x 5 records = 40 events per step
                steps = max(1, int(target / 40))
                d = trace(a.build, "atm2d", 4, {"N": 64}, "steps", steps, os.path.join(tmp, "big-%d" % steps))
                out = os.path.join(tmp, "big-%d.json" % steps)
                wall, rss, events = build(a.build, [d], out)
                tb, sk = dir_bytes(d), os.path.getsize(out)
                rows.append({"part": "time", "program": "atm2d", "P": 4, "iterations": steps, "events": events,
                             "trace_bytes": tb, "skeleton_bytes": sk, "ratio": "%.1f" % (tb / sk),
                             "build_s": "%.3f" % wall, "peak_rss_mib": "%.1f" % rss})
                log("%d events: build %.2f s, peak RSS %.0f MiB, %.2f M events/s" % (events, wall, rss, events / wall / 1e6))
                shutil.rmtree(d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    fields = ["part", "program", "P", "iterations", "events", "trace_bytes", "skeleton_bytes", "ratio", "build_s", "peak_rss_mib"]
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    print("%-12s %-7s %4s %6s %10s %12s %10s %8s %8s %8s" % ("part", "program", "P", "iters", "events", "trace_B", "skel_B", "ratio", "build_s", "RSS_MiB"))
    for r in rows:
        print("%-12s %-7s %4s %6s %10s %12s %10s %8s %8s %8s" % (r["part"], r["program"], r["P"], r["iterations"], r["events"],
              r["trace_bytes"], r["skeleton_bytes"], r["ratio"], r["build_s"], r["peak_rss_mib"]))
    log("wrote " + a.out)


if __name__ == "__main__":
    main(sys.argv[1:])
