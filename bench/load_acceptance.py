#!/usr/bin/env python3
"""Acceptance of the background-load model (issue 18, part 1): real runs under stress-ng against mksim --load.

Part A (real runs, this machine): two reference programs (skeletons/apps atm2d and cg) at P = 2, rank 0
pinned to core 0 and rank 1 to core 1 (mpirun --map-by core --bind-to core), each
  1. traced without load (mktrace) just before each duty cycle's block, its skeleton built (mkskel build): the
     machine's speed drifts by up to ~10% over minutes (a virtual machine whose neighbours are not visible in
     its load average), so the skeleton's compute and the real runs it predicts are measured within a minute
     (--no-retrace: traced once per program); the platform of this machine from mkcalib (bench --quick
     p2p,overheads, fit on the t3e template), as tests/end_to_end_test.cpp does;
  2. run REPS times without load and with `stress-ng --cpu 1 --cpu-load D --cpu-load-slice SLICE --cpu-method loop --taskset 0`
     for each duty cycle D (the load on rank 0's core); the figure is the median of the program's own "time:";
  3. predicted by mksim with the load model of that stress-ng: `busy rank:0 duty=D period=SLICE/D demand=cpu`
     (stress-ng's slice is CPU time of its own: beside our rank it lasts twice as long; sim/engine/README.md,
     "Background load"), SEEDS draws, mean and 95% interval.
The machine is shared with other jobs: the script runs in a session of its own whose autogroup it gives nice
-19 (Linux's CFS weighs autogroups, then tasks inside one; a root shell may do this), so that other sessions'
builds take little of the two cores; inside it, stress-ng and the ranks share core 0 as the model says. It
prints the load average before and after, and a spin loop's wall / CPU time as a check of that isolation.

Part C (the load measured, not given; with part A): while stress-ng runs at each duty cycle, before the real runs,
`mkcalib load --cpus 0,1 --window W` samples the two cores into a load file (per-core speed profiles), once over
every task on the cores ("mkcalib-core": on a shared machine other sessions' jobs are in it), once over
stress-ng's processes only (`--pids`, "mkcalib-pids": the load that shares the ranks' autogroup) and once with
sessions weighed as CFS does (`--autogroups`, "mkcalib-autogroups": mkcalib runs in the script's session, where the
ranks and stress-ng run); mksim --load with each file against the same real runs.

Part B (SMPI, exact): the hand-written atm2d skeleton (Paragon flops) as SimGrid time-independent traces
(bench/make_ti_traces.py) under `smpirun -replay` on a generated platform whose host node-0 carries
speed_file=PROFILE, against mksim on the same file (the XML's speed_file) and against mksim on the plain
platform with `--load` (speed rank:0 PROFILE): within 1%.

Part D (SMPI, a real program): skeletons/apps/atm2d.c built with smpicc -DMKSIM_SMPI_WORK (its compute charged as
smpi_execute_flops of the skeleton's 60 flops per point, skeletons/apps/app_common.h), traced with `smpirun -trace-ti`
at P = 4, N = 128, 256, 512 (8 steps), its skeleton built from those traces (`mkskel build`, the TI path), then
smpirun of the program at N = 1024 (not traced) on the platform whose node-0 carries speed_file=PROFILE against
mksim on the same file and on the plain platform with --load: within 1%. PROFILE: part B's, and (after part C or
with --profile) a profile measured by mkcalib load, at N = 2048.

Test (ctest load_smpi): --skip-real --nice 0 --check-smpi 0.01 (parts B and D, a few seconds).
Usage: python3 bench/load_acceptance.py [--build build] [--duties 25,50,75] [--reps 3] [--seeds 5]
       [--slice-ms 10] [--programs atm2d,cg] [--skip-real] [--skip-smpi] [--skip-mkcalib] [--window 5]
       [--profile PROF] [--csv OUT.csv]
Needs stress-ng, OpenMPI's mpirun, smpirun (libsimgrid-dev), a built tree. Standard library only.
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
import make_ti_traces  # noqa: E402
from replay_throughput import COMMON_CFG, platform_props, smpi_cfg  # noqa: E402

MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
ROOT_BUILD = [os.path.join(ROOT, "build")]  # the build tree in use (main sets it)
PIN = ["--map-by", "core", "--bind-to", "core"]  # rank 0 on core 0, rank 1 on core 1 (mpirun --report-bindings)
# program: (run arguments, traced arguments, parameter names)
PROGRAMS = {
    "atm2d": {"args": ["1024", "1000"], "params": ["N", "steps"]},
    "cg": {"args": ["262144", "3000"], "params": ["N", "iters"]},
    # jacobi2d at P = 2 sends to itself, which the calibrated 2-host platform has no route for (SimGrid aborts)
}


def sh(cmd, check=True, env=None, cwd=None):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env or MPI_ENV, cwd=cwd)
    if check and r.returncode != 0:
        raise SystemExit("failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stdout[-3000:]))
    return r.stdout


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def isolate(nice):
    """A session of our own, its autogroup at `nice` (see the module doc)."""
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    except OSError as e:
        print("note: cannot set the autogroup's nice (%s): wall-clock times include other jobs" % e)
    with open("/proc/self/autogroup") as f:
        return f.read().strip()


def spin_check(tmp):
    src = os.path.join(tmp, "spin.c")
    with open(src, "w") as f:
        f.write("#include <stdio.h>\n#include <time.h>\nstatic double t(clockid_t c){struct timespec s;clock_gettime(c,&s);"
                "return s.tv_sec+1e-9*s.tv_nsec;}\nint main(void){volatile double x=0;double w=t(CLOCK_MONOTONIC),"
                "c=t(CLOCK_PROCESS_CPUTIME_ID);for(long i=0;i<300000000;i++)x+=1e-9*i;printf(\"%.4f %.4f\\n\","
                "t(CLOCK_MONOTONIC)-w,t(CLOCK_PROCESS_CPUTIME_ID)-c);return 0;}\n")
    sh(["cc", "-O1", src, "-o", os.path.join(tmp, "spin")])
    wall, cpu = map(float, sh(["taskset", "-c", "0", os.path.join(tmp, "spin")]).split())
    return wall, cpu


class Stress:
    """stress-ng on core 0 at duty D (percent) while the block runs; stopped by its pid (ours)."""

    def __init__(self, duty, slice_ms, method):
        self.duty, self.slice_ms, self.method, self.proc = duty, slice_ms, method, None

    def __enter__(self):
        if self.duty > 0:
            self.proc = subprocess.Popen(["stress-ng", "--cpu", "1", "--cpu-load", str(self.duty), "--cpu-load-slice",
                                          str(self.slice_ms), "--cpu-method", self.method, "--taskset", "0", "-t", "3600", "--quiet"])
            time.sleep(1.0)
        return self

    def __exit__(self, *exc):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def real_time(build, prog, args):
    out = sh(["mpirun", "-np", "2"] + PIN + [os.path.join(build, "apps", prog)] + args)
    m = re.search(r"^time: (\S+)", out, re.M)
    if not m:
        raise SystemExit("no 'time:' in the output of %s:\n%s" % (prog, out))
    return float(m.group(1))


def calibrate_platform(build, tmp):
    db, plat = os.path.join(tmp, "machine.h5"), os.path.join(tmp, "machine.xml")
    sh([os.path.join(build, "sim", "mkcalib"), "bench", "-np", "2", "--quick", "--kernels", "p2p,overheads", "-o", db])
    sh([os.path.join(build, "sim", "mkcalib"), "fit", "--platform", "t3e", "--db", db, "-o", plat])
    return plat


def skeleton_of(build, prog, spec, tmp):
    """Traces the program twice without load (two step counts: the builder needs runs that differ) and builds it."""
    dirs = []
    size, steps = spec["args"]
    for k, st in enumerate([str(max(2, int(steps) // 4)), str(max(3, int(steps) // 2))]):
        d = os.path.join(tmp, "%s-trace-%d" % (prog, k))
        sh([os.path.join(build, "trace", "mktrace"), "-np", "2", "--param", "%s=%s,%s=%s" % (spec["params"][0], size, spec["params"][1], st),
            "-o", d] + sum([["--mpirun-opt", o] for o in PIN], []) + ["--", os.path.join(build, "apps", prog), size, st])
        dirs.append(d)
    skel = os.path.join(tmp, prog + ".skel.json")
    sh([os.path.join(build, "sim", "mkskel"), "build"] + dirs + ["-o", skel])
    return skel


def predict(build, plat, skel, spec, P, load=None, seeds=1, extra=()):
    cmd = [os.path.join(build, "sim", "mksim"), "--platform", plat, "--P", str(P), "--skeleton", skel]
    for name, value in zip(spec["params"], spec["args"]):
        cmd += ["--param", "%s=%s" % (name, value)]
    if load:
        cmd += ["--load", load]
        if seeds > 1:
            cmd += ["--load-seeds", str(seeds)]
    out = sh(cmd + list(extra))
    t = float(re.search(r"predicted time\S*\s+(\S+)", out).group(1))
    m = re.search(r"mean (\S+) s, 95% interval \+- (\S+) s", out)
    return (float(m.group(1)), float(m.group(2))) if m else (t, 0.0)


def part_a(a, tmp, rows):
    print("== real runs at P = 2 under stress-ng on core 0 (load average %s)" % loadavg())
    wall, cpu = spin_check(tmp)
    print("isolation check: a spin loop on core 0 took %.3f s wall for %.3f s CPU (%.1f%% of the core)" % (wall, cpu, 100 * cpu / wall))
    plat = calibrate_platform(a.build, tmp)
    for prog in a.programs:
        spec = PROGRAMS[prog]
        skel = None if a.retrace else skeleton_of(a.build, prog, spec, tmp)
        for duty in [0] + a.duties:
            if a.retrace:
                # traced again just before the block: the skeleton's compute seconds and the real runs come from
                # the same minute of a machine whose speed drifts (up to ~10% from one minute to the next here)
                skel = skeleton_of(a.build, prog, spec, tmp)
            measured = {}
            with Stress(duty, a.slice_ms, a.method) as stress:
                if duty > 0 and not a.skip_mkcalib:
                    measured = measure_load(a, tmp, "%s-%d" % (prog, duty), stress.proc.pid)
                times = [real_time(a.build, prog, spec["args"]) for _ in range(a.reps)]
            load = None
            if duty > 0:
                load = os.path.join(tmp, "stress-%d.load" % duty)
                with open(load, "w") as f:
                    f.write("# stress-ng --cpu 1 --cpu-load %d --cpu-load-slice %d --taskset 0\n" % (duty, a.slice_ms))
                    f.write("busy rank:0 duty=%g period=%g tasks=1 demand=cpu random=phase\n"
                            % (duty / 100.0, a.slice_ms / 1000.0 / (duty / 100.0)))
            mean, half = predict(a.build, plat, skel, spec, 2, load, a.seeds if load else 1)
            meas = statistics.median(times)
            err = (mean - meas) / meas
            row = {"part": "real", "program": prog, "args": " ".join(spec["args"]), "duty_pct": duty, "measured_s": "%.4f" % meas,
                   "runs_s": " ".join("%.4f" % t for t in times), "predicted_s": "%.4f" % mean, "ci95_s": "%.4f" % half,
                   "error_pct": "%+.1f" % (100 * err), "loadavg": loadavg()}
            rows.append(row)
            print("%-9s D=%2d%%  measured %.3f s (runs %s)  mksim %.3f +- %.3f s  error %+.1f%%  (load average %s)"
                  % (prog, duty, meas, row["runs_s"], mean, half, 100 * err, row["loadavg"]))
            for kind, (path, busy) in sorted(measured.items()):
                t = predict(a.build, plat, skel, spec, 2, path)[0]
                e = (t - meas) / meas
                rows.append(dict(row, part=kind, predicted_s="%.4f" % t, ci95_s="", error_pct="%+.1f" % (100 * e), busy=busy))
                print("%-9s D=%2d%%  %-18s busy %s  mksim %.3f s  error %+.1f%%" % (prog, duty, kind, busy, t, 100 * e))
            if measured and "mkcalib-pids" in measured and duty == 50:
                a.measured_profile = os.path.join(os.path.dirname(measured["mkcalib-pids"][0]),
                                                  "%s-%d-mkcalib-pids.cpu0.prof" % (prog, duty))


def measure_load(a, tmp, tag, stress_pid):
    """mkcalib load of cores 0 and 1 while stress-ng runs: {kind: (load file, "busy of cpu 0 / cpu 1")}."""
    out = {}
    for kind, extra in (("mkcalib-core", []), ("mkcalib-pids", ["--pids", str(stress_pid)]), ("mkcalib-autogroups", ["--autogroups"])):
        path = os.path.join(tmp, "%s-%s.txt" % (tag, kind))
        text = sh([os.path.join(a.build, "sim", "mkcalib"), "load", "--cpus", "0,1", "--window", str(a.window), "--interval", "0.2",
                   "-o", path] + extra)
        busy = re.findall(r"^[01] +(\S+)(?: +\S+){4}(?: +([0-9.e-]+))? +busy", text, re.M)
        busy = ["%s (others %s)" % b if b[1] else b[0] for b in busy]
        out[kind] = (path, "/".join(busy))
    return out


def write_platforms(tmp, P, speed_file):
    """plain.xml and loaded.xml (node-0 with speed_file=`speed_file`, a name beside them) with the T3E's MPI figures
    (the generated t3e platform's mksim.* properties): generated platforms declare hosts in a <cluster> (no per-host
    speed_file), so the hosts are written one by one here. Returns (plain, loaded, props)."""
    t3e = os.path.join(tmp, "t3e.xml")
    sh([os.path.join(ROOT_BUILD[0], "sim", "mksim"), "platform", "--machine", "t3e", "--nodes", str(P), "-o", t3e])
    props = platform_props(t3e)
    plat, loaded = os.path.join(tmp, "plain.xml"), os.path.join(tmp, "loaded.xml")
    for path, attr in ((plat, ""), (loaded, ' speed_file="%s"' % speed_file)):
        with open(path, "w") as f:
            f.write("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                    "<platform version=\"4.1\">\n<zone id=\"root\" routing=\"Full\">\n")
            for k, v in props.items():
                if k.startswith("mksim.") and not k.startswith("mksim.mesh"):
                    f.write('  <prop id="%s" value="%s"/>\n' % (k, v))
            for r in range(P):
                f.write('  <host id="node-%d" speed="900Mf"%s/>\n' % (r, attr if r == 0 else ""))
                f.write('  <link id="l-%d" bandwidth="80MBps" latency="10us"/>\n' % r)
            for i in range(P):
                for j in range(i + 1, P):
                    f.write('  <route src="node-%d" dst="node-%d"><link_ctn id="l-%d"/>'
                            '<link_ctn id="l-%d"/></route>\n' % (i, j, i, j))
            f.write("</zone>\n</platform>\n")
    return plat, loaded, props


def part_b(a, tmp, rows):
    print("== SMPI (smpirun -replay of the atm2d skeleton's TI traces) with a speed_file on node-0, against mksim")
    mksim = os.path.join(a.build, "sim", "mksim")
    P = 4
    prof = os.path.join(tmp, "node0.prof")
    with open(prof, "w") as f:  # half speed 2 ms of every 5 ms, a quarter speed for 1 ms
        f.write("0.001 0.5\n0.003 0.25\n0.004 1\nLOOPAFTER 0.001\n")
    plat, loaded, props = write_platforms(tmp, P, "node0.prof")
    load = os.path.join(tmp, "node0.load")
    with open(load, "w") as f:
        f.write("speed rank:0 node0.prof\n")
    skel = os.path.join(ROOT, "skeletons", "examples", "atm2d.json")
    params = ["N=256", "steps=10"]
    tdir = os.path.join(tmp, "ti")
    summary = make_ti_traces.write_traces(P, tdir, params, skel)
    hostfile = os.path.join(tmp, "hosts")
    with open(hostfile, "w") as f:
        f.write("".join("node-%d\n" % r for r in range(P)))
    res = {}
    for name, xml in (("plain", plat), ("loaded", loaded)):
        cmd = ["smpirun", "-no-privatize", "-np", str(P), "-platform", xml, "-hostfile", hostfile, "-replay", summary["index"]]
        cmd += ["--cfg=" + c for c in smpi_cfg(props)] + ["--log=root.thresh:warning", "--log=smpi_utils.thresh:info",
                                                           "--log=xbt_cfg.thresh:warning"]
        out = sh(cmd, cwd=tmp)
        res["smpi-" + name] = float(re.search(r"Simulated time: (\S+) seconds", out).group(1))
    spec = {"params": ["N", "steps"], "args": ["256", "10"]}
    against_smpi(a, rows, res, plat, loaded, load, skel, spec, P,
                 {"part": "smpi", "program": "atm2d.json TI", "args": "P=4 N=256 steps=10"}, "profile", "")


def against_smpi(a, rows, res, plat, loaded, load, skel, spec, P, row, loaded_label, title):
    """mksim on the plain platform, on the one with node-0's speed_file and on the plain one with --load, each
    against SMPI's time in res ("smpi-plain", "smpi-loaded"): rows and a printed line each."""
    cfg = ["--cfg=" + c for c in COMMON_CFG]
    res["mksim-plain"] = predict(a.build, plat, skel, spec, P, extra=cfg)[0]
    res["mksim-xml"] = predict(a.build, loaded, skel, spec, P, extra=cfg)[0]
    res["mksim-load"] = predict(a.build, plat, skel, spec, P, load, extra=cfg)[0]
    for k in ("plain", "xml", "load"):
        ref = res["smpi-plain"] if k == "plain" else res["smpi-loaded"]
        err = (res["mksim-" + k] - ref) / ref
        rows.append(dict(row, duty_pct=loaded_label if k != "plain" else 0, measured_s="%.6g" % ref,
                         predicted_s="%.6g" % res["mksim-" + k], error_pct="%+.2f" % (100 * err), runs_s="smpi", ci95_s="",
                         loadavg="mksim " + k))
        print("%smksim %-5s %.6g s  vs SMPI %-6s %.6g s  gap %+.2f%%"
              % (title, k, res["mksim-" + k], "plain" if k == "plain" else "loaded", ref, 100 * err))

SMPI_LOG = ["--log=root.thresh:warning", "--log=smpi_utils.thresh:info", "--log=xbt_cfg.thresh:warning",
            "--log=smpi_config.thresh:error"]
# mksim's collective algorithms by SMPI's names (bench/corpus.py): atm2d's closing reductions
SMPI_COLLECTIVES = ["smpi/reduce:binomial", "smpi/allreduce:rdb", "smpi/bcast:binomial_tree"]


def smpi_time(cmd, cwd):
    out = sh(cmd, cwd=cwd)
    m = re.search(r"Simulated time: (\S+) seconds", out)
    if not m:
        raise SystemExit("no simulated time in the output of %s:\n%s" % (" ".join(cmd), out[-2000:]))
    return float(m.group(1))


def part_d(a, tmp, rows):
    """The real atm2d under smpirun with a speed_file, its skeleton from its own TI traces, against mksim."""
    print("== SMPI: the real atm2d (smpicc, compute as smpi_execute_flops) with a speed_file on node-0, skeleton from "
          "smpirun -trace-ti, against mksim")
    d = os.path.join(tmp, "app")
    os.makedirs(d)
    P, steps = 4, 8
    prog = os.path.join(d, "atm2d")
    sh(["smpicc", "-std=c99", "-O2", "-DMKSIM_SMPI_WORK", "-o", prog, os.path.join(ROOT, "skeletons", "apps", "atm2d.c"), "-lm"])
    hostfile = os.path.join(d, "hosts")
    with open(hostfile, "w") as f:
        f.write("".join("node-%d\n" % r for r in range(P)))
    profiles = [("fixed", None, 1024)]
    if a.measured_profile:
        profiles.append(("mkcalib", a.measured_profile, 2048))
    plat = None
    skel = os.path.join(d, "atm2d-ti.json")
    for label, source, N in profiles:
        pdir = os.path.join(d, label)
        os.makedirs(pdir)
        prof = os.path.join(pdir, "node0.prof")
        if source:
            shutil.copy(source, prof)
        else:
            with open(prof, "w") as f:  # half speed 2 ms of every 5 ms, a quarter speed for 1 ms (part B's)
                f.write("0.001 0.5\n0.003 0.25\n0.004 1\nLOOPAFTER 0.001\n")
        plat, loaded, props = write_platforms(pdir, P, "node0.prof")
        if not os.path.exists(skel):  # the TI traces (time-independent: any platform) and the skeleton, once
            inputs = []
            for n in (128, 256, 512):
                idx = os.path.join(d, "ti-%d" % n, "ti.txt")
                os.makedirs(os.path.dirname(idx))
                sh(["smpirun", "-np", str(P), "-platform", plat, "-hostfile", hostfile, "-trace-ti", "--cfg=tracing/filename:" + idx,
                    "--cfg=smpi/simulate-computation:no"] + SMPI_LOG + [prog, str(n), str(steps)], cwd=d)
                inputs.append("%s::N=%d,steps=%d" % (idx, n, steps))
            sh([os.path.join(a.build, "sim", "mkskel"), "build"] + inputs + ["-o", skel])
        load = os.path.join(pdir, "node0.load")
        with open(load, "w") as f:
            f.write("speed rank:0 node0.prof\n")
        cfg = ["--cfg=" + c for c in smpi_cfg(props) + SMPI_COLLECTIVES + ["smpi/simulate-computation:no"]]
        res = {}
        for name, xml in (("plain", plat), ("loaded", loaded)):
            res["smpi-" + name] = smpi_time(["smpirun", "-np", str(P), "-platform", xml, "-hostfile", hostfile] + cfg + SMPI_LOG +
                                            [prog, str(N), str(steps)], cwd=pdir)
        spec = {"params": ["N", "steps"], "args": [str(N), str(steps)]}
        against_smpi(a, rows, res, plat, loaded, load, skel, spec, P,
                     {"part": "smpi-app", "program": "atm2d.c (smpicc) TI skeleton", "args": "P=%d N=%d steps=%d" % (P, N, steps)},
                     label + " profile", "atm2d N=%d %-7s profile: " % (N, label))

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--duties", default="25,50,75")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--slice-ms", type=int, default=10)
    ap.add_argument("--programs", default="atm2d,cg")
    ap.add_argument("--method", default="loop", help="stress-ng --cpu-method (loop: CPU only, no memory footprint)")
    ap.add_argument("--nice", type=int, default=-19, help="nice of the script's autogroup (0: leave it)")
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--skip-smpi", action="store_true")
    ap.add_argument("--skip-mkcalib", action="store_true", help="part A without part C")
    ap.add_argument("--window", type=float, default=5, help="mkcalib load --window (part C)")
    ap.add_argument("--profile", default="", help="also run part D with this speed profile (e.g. one mkcalib load wrote)")
    ap.add_argument("--no-retrace", dest="retrace", action="store_false",
                    help="trace the skeleton once per program, not again before each duty cycle's block")
    ap.add_argument("--csv", default="")
    ap.add_argument("--check-smpi", type=float, default=0, help="exit 1 when an SMPI gap exceeds this fraction (tests: 0.01)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    ROOT_BUILD[0] = a.build
    a.measured_profile = os.path.abspath(a.profile) if a.profile else ""
    a.duties = [int(x) for x in a.duties.split(",") if x]
    a.programs = [p for p in a.programs.split(",") if p]
    if a.check_smpi and not shutil.which("smpirun"):
        print("no smpirun: skipped")
        sys.exit(77)
    if a.nice:
        print("autogroup:", isolate(a.nice))
    rows = []
    tmp = tempfile.mkdtemp(prefix="mksim_load_acc_")
    try:
        if not a.skip_smpi:
            part_b(a, tmp, rows)
        if not a.skip_real:
            if not shutil.which("stress-ng"):
                raise SystemExit("stress-ng is not installed (apt-get install stress-ng)")
            part_a(a, tmp, rows)
        if not a.skip_smpi:
            part_d(a, tmp, rows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.check_smpi:
        bad = [r for r in rows if r["part"] in ("smpi", "smpi-app") and abs(float(r["error_pct"])) > 100 * a.check_smpi]
        if bad or not rows:
            print("FAILED: SMPI gaps above %.2f%%: %s" % (100 * a.check_smpi, bad))
            sys.exit(1)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["part", "program", "args", "duty_pct", "measured_s", "runs_s", "predicted_s", "ci95_s",
                                              "error_pct", "loadavg", "busy"])
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
