#!/usr/bin/env python3
"""The acceptance corpus of issue 23 (skeletons/apps/corpus): skeletons of eight programs nobody here modelled.

For each program and each trace source (mktrace = OpenMPI traced with build/trace/mktrace; mktrace-smpi = the
same tracer linked into the smpicc build, `mktrace --smpi platforms/t3e.xml`: every event with its communicator,
compute as SMPI's simulated seconds on the T3E's hosts; ti = SMPI's `smpirun -trace-ti`, compute as
smpi_execute_flops):
  1. trace the training runs (P <= 16, several problem sizes; lulesh P = 1, 8, 27: it needs a cube);
  2. build one skeleton (build/sim/mkskel build); from mktrace traces its compute is in seconds of this
     machine's CPU, converted into flops with the measured rate of the corpus' compute loop (corpus_rate); from
     mktrace-smpi traces it is in seconds of the T3E's hosts, converted at their speed;
  3. (a) hold-out: trace the real program with mktrace at P = 32 and 64 (lulesh 64, 125) and compare every
     rank's operations with the skeleton's expansion (mkskel compare);
  4. (b) prediction: mksim on platforms/t3e.xml (up to its 512 nodes) and on a generated torus
     (mksim platform --machine t3e --nodes P) at P = 64, 256, 1024 (lulesh 64, 216, 1000), against SMPI
     running the real program on the same platform file with the eager protocol, overheads and collective
     algorithms aligned (DESIGN.md, "Facts measured in the second round").
Compute (--compute): "measured" is SMPI running the real program, smpi/simulate-computation:yes with
smpi/host-speed at the corpus loop's rate: the CPU each rank spends between MPI calls (its real data update)
counts as flops at that rate, plus the declared smpi_execute_flops_benched work, in the reference runs and in
the TI traces alike; the mktrace skeletons' seconds are converted at the same rate. "declared" (the default) is
the idealised program: only the declared work (simulate-computation:no), which the mktrace traces, measuring the real
program, cannot match (its real update costs 1-160% of the declared work per program, bench/README.md).
Every point is a row, with the error message when a step fails. See bench/README.md.
Standard library only.
"""
import argparse
import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
from replay_throughput import platform_props, smpi_cfg  # noqa: E402

log = benchlib.logger("corpus")
CORPUS_SRC = os.path.join(ROOT, "skeletons", "apps", "corpus")
T3E_XML = os.path.join(ROOT, "platforms", "t3e.xml")
# mksim's collective algorithms (sim/engine/collectives.cpp) by SMPI's names: dissemination barrier, binomial
# bcast/reduce/gather/scatter, recursive-doubling allreduce, Bruck allgather, pairwise (XOR) alltoall
SMPI_COLLECTIVES = ["smpi/barrier:ompi_bruck", "smpi/bcast:binomial_tree", "smpi/reduce:binomial",
                    "smpi/allreduce:rdb", "smpi/allgather:bruck", "smpi/alltoall:pair",
                    "smpi/gather:ompi_binomial", "smpi/scatter:ompi_binomial"]
SMPI_LOG = ["--log=root.thresh:warning", "--log=smpi_utils.thresh:info", "--log=xbt_cfg.thresh:warning",
            "--log=smpi_config.thresh:error"]
SOURCES = ("mktrace", "mktrace-smpi", "ti")
COMPUTE_MODES = ("measured", "declared")
# what SMPI counts as compute (main sets them from --compute): "measured" adds the CPU between MPI calls at
# host_speed flop/s
COMPUTE = {"mode": "declared", "host_speed": None}


def compute_cfg():
    """SMPI settings of the compute mode, without --cfg=."""
    if COMPUTE["mode"] == "declared":
        return ["smpi/simulate-computation:no"]
    return ["smpi/simulate-computation:yes", "smpi/host-speed:%.6gf" % COMPUTE["host_speed"]]
PLATFORMS = ("t3e", "torus")


class Program:
    """A corpus program: its parameters (argv order), training runs, hold-out and prediction settings."""

    def __init__(self, name, params, train, holdout, predict, holdout_P=(32, 64), predict_P=(64, 256, 1024)):
        self.name, self.params, self.train = name, params, train
        self.holdout, self.predict = holdout, predict
        self.holdout_P, self.predict_P = holdout_P, predict_P

    def args(self, values):
        return [str(v) for v in values]

    def param_text(self, values):
        return ",".join("%s=%s" % (k, v) for k, v in zip(self.params, values))


def sizes_train(P_sizes, extra):
    """[(P, values)]: every P with every size, then the extra runs (another iteration count, ...)."""
    return [(P, v) for P, vs in P_sizes for v in vs] + list(extra)


PROGRAMS = {p.name: p for p in [
    # Every run iterates at least twice (a loop run once is no loop to a trace), one run per program once more,
    # so that counts are expressions of the parameters. Sizes: the main compute blocks of the largest traced P
    # last tens of microseconds or more on this machine (a mktrace gap of a few microseconds is mostly noise).
    Program("lu", ("N", "steps"),
            sizes_train([(4, [(64, 2), (128, 2)]), (8, [(64, 2), (128, 2)]), (16, [(64, 2), (128, 2)])], [(4, (64, 3))]),
            holdout=(64, 2), predict=(128, 2)),
    Program("mg", ("N", "iters"),
            sizes_train([(4, [(32, 2), (64, 2)]), (8, [(32, 2), (64, 2)]), (16, [(32, 2), (64, 2)])], [(4, (32, 3))]),
            holdout=(64, 2), predict=(128, 2)),
    Program("ft", ("N", "iters"),
            sizes_train([(4, [(32, 2), (64, 2)]), (8, [(32, 2), (64, 2)]), (16, [(32, 2), (64, 2)])], [(4, (32, 3))]),
            holdout=(64, 2), predict=(128, 2)),
    Program("cg", ("N", "niter", "cgit"),
            sizes_train([(4, [(4096, 2, 3), (8192, 2, 3)]), (8, [(4096, 2, 3), (8192, 2, 3)]),
                         (16, [(4096, 2, 3), (8192, 2, 3)])], [(4, (4096, 3, 3)), (4, (4096, 2, 4))]),
            holdout=(8192, 2, 3), predict=(16384, 2, 5)),
    Program("hpcg", ("nx", "ny", "nz", "iters"),
            sizes_train([(4, [(16, 16, 16, 2), (32, 16, 16, 2), (16, 32, 16, 2)]), (8, [(16, 16, 16, 2), (16, 16, 32, 2)]),
                         (16, [(16, 16, 16, 2), (32, 32, 32, 2)])], [(4, (16, 16, 16, 3))]),
            holdout=(16, 16, 16, 2), predict=(16, 16, 16, 2)),
    Program("sweep3d", ("N", "mk", "iters"),
            sizes_train([(4, [(64, 8, 2), (128, 8, 2), (64, 16, 2)]), (8, [(64, 8, 2), (128, 8, 2)]),
                         (16, [(64, 8, 2), (128, 8, 2)])], [(4, (64, 8, 3))]),
            holdout=(64, 8, 2), predict=(128, 8, 2)),
    Program("lulesh", ("s", "iters"),
            sizes_train([(1, [(8, 2)]), (8, [(8, 2), (16, 2)]), (27, [(8, 2), (16, 2)])], [(8, (8, 3))]),
            holdout=(8, 2), predict=(16, 4), holdout_P=(64, 125), predict_P=(64, 216, 1000)),
    Program("summa", ("N", "nb", "reps"),
            sizes_train([(4, [(256, 8, 2), (512, 8, 2), (256, 16, 2)]), (8, [(256, 8, 2), (512, 8, 2)]),
                         (16, [(256, 8, 2), (512, 8, 2)])], [(4, (256, 8, 3))]),
            holdout=(256, 8, 2), predict=(512, 8, 2)),
]}


def nearest_cube(P):
    c = max(1, round(P ** (1.0 / 3.0)))
    return c * c * c


def program_P(prog, requested, default, kind):
    """The P values for a program: its own defaults, or the requested ones (lulesh: the nearest cubes)."""
    if requested is None:
        return list(default)
    if prog.name != "lulesh":
        return list(requested)
    out = []
    for P in requested:
        c = nearest_cube(P)
        if kind == "holdout" and c <= 27:
            c = 64  # 27 is traced for training
        if c not in out:
            out.append(c)
    return out


class Tools:
    def __init__(self, a):
        b = os.path.abspath(a.build)
        self.mktrace = os.path.join(b, "trace", "mktrace")
        self.mkskel = os.path.join(b, "sim", "mkskel")
        self.mksim = os.path.join(b, "sim", "mksim")
        self.mpi_dir = os.path.join(b, "apps", "corpus")
        self.smpi_dir = os.path.join(b, "apps-smpi", "corpus")
        missing = [p for p in (self.mktrace, self.mkskel, self.mksim, os.path.join(self.mpi_dir, "corpus_rate"))
                   if not os.access(p, os.X_OK)]
        if missing:
            raise SystemExit("not built: %s (cmake --build %s)" % (", ".join(missing), a.build))
        if not shutil.which("smpirun"):
            raise SystemExit("smpirun not found (apt package libsimgrid-dev)")


def run(cmd, timeout, env=None, cwd=None):
    """(rc, stdout, stderr, wall_s, timed_out); the command runs in its own session, killed whole on timeout."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err, time.monotonic() - t0, False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        out, err = p.communicate()
        return -9, out, err, time.monotonic() - t0, True


def last_error(text, prefix=None):
    """The line that says what went wrong: the first error line of a tool, else the last non-empty line."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if prefix:
        errs = [l for l in lines if l.startswith(prefix) and not l.startswith(prefix + " ambiguous")
                and not l.startswith(prefix + " warning")]
        if errs:
            return errs[0][:3000]
    return lines[-1][:3000] if lines else ""


def hostfile(workdir, P):
    path = os.path.join(workdir, "hosts-%d.txt" % P)
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write("".join("node-%d\n" % r for r in range(P)))
    return path


def mpi_env():
    e = benchlib.mpi_env()
    e["OMPI_MCA_mpi_yield_when_idle"] = "1"  # ranks outnumber cores: a polling rank gives its core away
    return e


# ---------------------------------------------------------------- traces and skeletons

def trace_mktrace(t, prog, P, values, outdir, timeout):
    cmd = [t.mktrace, "-np", str(P)]
    for k, v in zip(prog.params, values):
        cmd += ["--param", "%s=%s" % (k, v)]
    cmd += ["-o", outdir, "--", os.path.join(t.mpi_dir, prog.name)] + prog.args(values)
    rc, out, err, wall, to = run(cmd, timeout, env=mpi_env())
    if to:
        return None, "timeout after %d s" % timeout, wall
    if rc != 0:
        return None, "mktrace rc=%d: %s" % (rc, last_error(out + err)), wall
    return outdir, "", wall


def trace_mktrace_smpi(t, prog, P, values, outdir, timeout):
    """The smpicc build with the tracer linked in (NAME-mktrace), under smpirun on the T3E with this compute mode."""
    cmd = [t.mktrace, "-np", str(P)]
    for k, v in zip(prog.params, values):
        cmd += ["--param", "%s=%s" % (k, v)]
    cmd += ["-o", outdir, "--smpi", T3E_XML]
    for o in ["--cfg=" + c for c in compute_cfg()] + SMPI_LOG:
        cmd += ["--mpirun-opt", o]
    cmd += ["--", os.path.join(t.smpi_dir, prog.name + "-mktrace")] + prog.args(values)
    rc, out, err, wall, to = run(cmd, timeout)
    if to:
        return None, "timeout after %d s" % timeout, wall
    if rc != 0:
        return None, "mktrace --smpi rc=%d: %s" % (rc, last_error(out + err)), wall
    return outdir, "", wall


def host_speed(platform_xml):
    """The flop/s of a platform file's hosts (one speed for all, as in platforms/t3e.xml)."""
    with open(platform_xml) as f:
        speeds = set(re.findall(r'speed="([0-9.eE+-]+)([kMGT]?)f"', f.read()))
    if len(speeds) != 1:
        raise SystemExit("%s: expected one host speed, found %s" % (platform_xml, sorted(speeds) or "none"))
    value, unit = speeds.pop()
    return float(value) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[unit]


def trace_ti(t, prog, P, values, outdir, workdir, timeout):
    os.makedirs(outdir, exist_ok=True)
    idx = os.path.join(outdir, "idx")
    cmd = ["smpirun", "-np", str(P), "-platform", T3E_XML, "-hostfile", hostfile(workdir, P), "-trace-ti",
           "--cfg=tracing/filename:" + idx] + ["--cfg=" + c for c in compute_cfg()] + SMPI_LOG
    cmd += [os.path.join(t.smpi_dir, prog.name)] + prog.args(values)
    rc, out, err, wall, to = run(cmd, timeout, cwd=workdir)
    if to:
        return None, "timeout after %d s" % timeout, wall
    if rc != 0 or not os.path.exists(idx):
        return None, "smpirun -trace-ti rc=%d: %s" % (rc, last_error(out + err)), wall
    return idx + "::" + prog.param_text(values), "", wall


def build_skeleton(t, prog, source, inputs, workdir, timeout):
    """-> (skeleton path or None, message, warnings, ambiguities, wall)."""
    out_json = os.path.join(workdir, "%s-%s.skel.json" % (prog.name, source))
    rc, out, err, wall, to = run([t.mkskel, "build"] + inputs + ["-o", out_json], timeout)
    with open(os.path.join(workdir, "%s-%s.build.log" % (prog.name, source)), "w") as f:
        f.write(out + err)
    warnings = [l[len("mkskel: warning: "):] for l in err.splitlines() if l.startswith("mkskel: warning: ")]
    ambiguities = [l for l in err.splitlines() if l.startswith("mkskel: ambiguous: ")]
    if to:
        return None, "mkskel build: timeout after %d s" % timeout, warnings, ambiguities, wall
    if rc != 0:
        return None, "mkskel build rc=%d: %s" % (rc, last_error(err + out, "mkskel:")), warnings, ambiguities, wall
    return out_json, "", warnings, ambiguities, wall


def seconds_to_flops(node, rate):
    """Every compute block in seconds of this machine's CPU becomes flops at `rate` (flop/s); returns how many."""
    n = 0
    if isinstance(node, dict):
        if node.get("op") == "compute" and "seconds" in node:
            s = node.pop("seconds")
            node["flops"] = "(%s) * %.10g" % (s if isinstance(s, str) else json.dumps(s), rate)
            n += 1
        for v in node.values():
            n += seconds_to_flops(v, rate)
    elif isinstance(node, list):
        for v in node:
            n += seconds_to_flops(v, rate)
    return n


def count_compute(node, key):
    if isinstance(node, dict):
        return (1 if node.get("op") == "compute" and key in node else 0) + sum(count_compute(v, key) for v in node.values())
    if isinstance(node, list):
        return sum(count_compute(v, key) for v in node)
    return 0


def measure_rate(t, timeout):
    rc, out, err, _, _ = run([os.path.join(t.mpi_dir, "corpus_rate"), "200", "9"], timeout, env=mpi_env())
    m = re.search(r"^flop_rate:\s*(\S+)", out, re.M)
    s = re.search(r"^spread:\s*(\S+)", out, re.M)
    if rc != 0 or not m:
        raise SystemExit("corpus_rate failed: " + last_error(out + err))
    return float(m.group(1)), float(s.group(1)) if s else float("nan")


# ---------------------------------------------------------------- hold-out and predictions

def compare(t, skel, trace_dir, timeout):
    """-> (ranks exact, ranks, traced ops, status, message)."""
    rc, out, err, _, to = run([t.mkskel, "compare", skel, trace_dir, "--show", "1"], timeout)
    if to:
        return None, None, None, "timeout", "mkskel compare: timeout after %d s" % timeout
    m = re.search(r"^(\d+) of (\d+) ranks exact \((\d+) traced operations\)", out, re.M)
    if not m:
        return None, None, None, "error", "mkskel compare rc=%d: %s" % (rc, last_error(err + out, "mkskel:"))
    exact, ranks, ops = int(m.group(1)), int(m.group(2)), int(m.group(3))
    first = re.search(r"^rank \d+: .*$", out, re.M)
    return exact, ranks, ops, "exact" if exact == ranks else "differs", first.group(0)[:400] if first else ""


def platform_file(t, name, P, workdir):
    """-> (path, note): t3e.xml when it has P nodes, the generated torus of P nodes."""
    if name == "t3e":
        if P > 512:
            return None, "skipped: platforms/t3e.xml has 512 nodes"
        return T3E_XML, ""
    path = os.path.join(workdir, "torus-%d.xml" % P)
    if not os.path.exists(path):
        rc, out, err, _, _ = run([t.mksim, "platform", "--machine", "t3e", "--nodes", str(P), "-o", path], 600)
        if rc != 0:
            return None, "mksim platform: " + last_error(out + err)
    return path, ""


def smpi_config(plat):
    cfg = smpi_cfg(platform_props(plat)) + SMPI_COLLECTIVES + compute_cfg()
    return ["--cfg=" + c for c in cfg]


def file_hash(paths):
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


SMPI_FIELDS = ["program", "P", "platform", "args", "key", "smpi_s", "smpi_total_s", "start_s", "span_s", "result",
               "wall_s", "status", "message"]


def run_smpi(t, prog, P, values, plat, plat_name, workdir, timeout):
    cmd = ["smpirun", "-no-privatize", "-np", str(P), "-platform", plat, "-hostfile", hostfile(workdir, P)]
    cmd += smpi_config(plat) + SMPI_LOG + [os.path.join(t.smpi_dir, prog.name)] + prog.args(values)
    rc, out, err, wall, to = run(cmd, timeout, cwd=workdir)
    row = {"program": prog.name, "P": P, "platform": plat_name, "args": " ".join(prog.args(values)), "wall_s": round(wall, 2)}
    text = out + err
    m = re.search(r"Simulated time: (\S+) seconds", text)
    if to:
        row.update(status="timeout", message="smpirun: timeout after %d s" % timeout)
    elif rc != 0 or not m:
        row.update(status="error", message="smpirun rc=%d: %s" % (rc, last_error(text)))
    else:
        span = re.search(r"^time: (\S+)", out, re.M)
        res = re.search(r"^result: (\S+)", out, re.M)
        start = re.search(r"^start: (\S+)", out, re.M)
        total = float(m.group(1))
        # the compared figure: from the last rank's arrival at the timed part (communicators made) to the end
        row.update(status="ok", smpi_total_s=total, start_s=float(start.group(1)) if start else 0.0,
                   smpi_s=float("%.9g" % (total - (float(start.group(1)) if start else 0.0))), span_s=float(span.group(1)) if span else "",
                   result=res.group(1) if res else "", message="")
    return row


def run_mksim(t, skel, P, plat, prog, values, timeout):
    """-> (the timed part's predicted seconds, the whole prediction, the start, message, wall). The compared figure
    is the prediction from the latest arrival at the first barrier (corpus_start) to the end, as SMPI's: the
    skeleton's compute before it (data set up, measured by mktrace and by SMPI's measured compute) is not in it."""
    fd, timeline = tempfile.mkstemp(prefix="mksim-timeline-", suffix=".csv")
    os.close(fd)
    try:
        cmd = [t.mksim, "--platform", plat, "--P", str(P), "--skeleton", skel, "--timeline", timeline]
        for k, v in zip(prog.params, values):
            cmd += ["--param", "%s=%s" % (k, v)]
        rc, out, err, wall, to = run(cmd, timeout)
        m = re.search(r"^predicted time\s+(\S+)", out, re.M)
        if to:
            return None, None, None, "mksim: timeout after %d s" % timeout, wall
        if rc != 0 or not m:
            return None, None, None, "mksim rc=%d: %s" % (rc, last_error(err + out, "mksim:")), wall
        first = {}  # rank -> start of its first barrier
        with open(timeline, newline="") as f:
            for row in csv.DictReader(f):
                if row["kind"] == "barrier" and row["rank"] not in first:
                    first[row["rank"]] = float(row["start_s"])
        total = float(m.group(1))
        if len(first) != P:
            return None, total, None, "mksim: %d of %d ranks reach a barrier (corpus_start)" % (len(first), P), wall
        start = max(first.values())
        return total - start, total, start, "", wall
    finally:
        os.unlink(timeline)


# ---------------------------------------------------------------- output

POINT_FIELDS = ["program", "source", "P", "platform", "params", "predicted_s", "smpi_s", "error_pct", "status",
                "message", "smpi_total_s", "predicted_total_s", "mksim_start_s", "smpi_start_s", "mksim_wall_s",
                "smpi_wall_s", "compute"]
HOLDOUT_FIELDS = ["program", "source", "P", "params", "ranks_exact", "ranks", "traced_ops", "status", "message"]
SUMMARY_FIELDS = ["program", "source", "trace_runs", "skeleton", "compute_seconds_blocks", "compute_flops_blocks",
                  "warnings", "ambiguities", "first_warning", "holdout_exact", "points_ok", "points",
                  "mean_abs_error_pct", "max_abs_error_pct", "message"]


def cell(v):
    if v is None:
        return ""
    return ("%.9g" % v) if isinstance(v, float) else v


def write_csv(path, fields, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: cell(r.get(k)) for k in fields})
    os.replace(tmp, path)


def write_merged(path, fields, rows, kept):
    """rows after the kept rows of an earlier run (other programs or sources), in program order."""
    order = {n: i for i, n in enumerate(PROGRAMS)}
    allrows = sorted(kept + rows, key=lambda r: (order.get(r["program"], 99), SOURCES.index(r["source"])
                                                 if r["source"] in SOURCES else 9))
    write_csv(path, fields, allrows)


def write_cache(path, cache, used):
    """The SMPI cache without the entries this run replaced (same program, P and platform, another key)."""
    now = {tuple(k.split("|")[:3]) for k in used}
    keep = [r for k, r in cache.items() if k in used or tuple(k.split("|")[:3]) not in now]
    write_csv(path, SMPI_FIELDS, sorted(keep, key=lambda r: r["key"]))


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(v):
    """A float from a run or from the cache's text; None when absent."""
    return None if v in (None, "") else float(v)


def short(s, n=90):
    s = s or ""
    return s if len(s) <= n else s[:n - 3] + "..."


def print_summary(summary, rate, wall):
    print("corpus: skeleton per program and trace source; (a) hold-out ranks exact; (b) mean |error| vs SMPI")
    print("%-8s %-8s %-9s %5s %5s %-14s %-10s %9s  %s" % ("program", "source", "skeleton", "warn", "ambig", "holdout",
                                                         "points ok", "mean|err|", "first failure"))
    for s in summary:
        print("%-8s %-8s %-9s %5s %5s %-14s %-10s %9s  %s" % (
            s["program"], s["source"], s["skeleton"], s.get("warnings", ""), s.get("ambiguities", ""),
            s.get("holdout_exact", ""), "%s/%s" % (s.get("points_ok", 0), s.get("points", 0)),
            ("%.2f%%" % s["mean_abs_error_pct"]) if s.get("mean_abs_error_pct") not in (None, "") else "-",
            short(s.get("message", ""))))
    print("compute loop rate (mktrace skeletons' seconds -> flops): %.4g flop/s; harness wall %.0f s" % (rate, wall))


# ---------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated subset of " + ",".join(PROGRAMS))
    ap.add_argument("--sources", default=",".join(SOURCES), help="mktrace, mktrace-smpi and/or ti")
    ap.add_argument("--holdout-P", default=None, help="P of the hold-out traces (default 32,64; lulesh 64,125)")
    ap.add_argument("--P", default=None, help="P of the predictions (default 64,256,1024; lulesh 64,216,1000)")
    ap.add_argument("--platforms", default=",".join(PLATFORMS), help="t3e (platforms/t3e.xml) and/or torus (generated)")
    ap.add_argument("--quick", action="store_true",
                    help="the CI slice: sweep3d and summa, hold-out at 32, predictions at 64 on the torus")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "corpus.csv"), help="(b) points; the hold-out "
                    "and summary CSVs are written next to it (corpus_holdout.csv, corpus_summary.csv)")
    ap.add_argument("--smpi-cache", default=os.path.join(HERE, "results", "corpus_smpi.csv"),
                    help="SMPI reference runs, reused when program, arguments, P, platform file, SMPI settings "
                         "and the program's source are the same ('' to always rerun)")
    ap.add_argument("--work", default=None, help="keep traces, skeletons and build logs here (default: a "
                    "temporary directory, removed at the end)")
    ap.add_argument("--compute", default="declared", choices=COMPUTE_MODES,
                    help="what SMPI counts as compute, in the reference runs and the TI traces: the real program's CPU "
                         "between MPI calls plus the declared work (measured), or the declared work alone (declared)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per step")
    ap.add_argument("--jobs", type=int, default=2, help="SMPI and mksim runs of (b) at once")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless the harness itself worked: every training run traced both ways, every SMPI "
                         "reference run and hold-out trace succeeded, and every point has a number or a message "
                         "(the builder's own failures are rows, not harness failures)")
    a = ap.parse_args(argv)
    if a.quick:
        a.programs, a.holdout_P, a.P, a.platforms = "sweep3d,summa", a.holdout_P or "32", a.P or "64", "torus"
        if a.out == os.path.join(HERE, "results", "corpus.csv"):
            a.out = os.path.join(HERE, "results", "corpus_quick.csv")
    names = [p for p in a.programs.split(",") if p]
    for n in names:
        if n not in PROGRAMS:
            raise SystemExit("unknown program %r (%s)" % (n, ", ".join(PROGRAMS)))
    sources = [s for s in a.sources.split(",") if s]
    plats = [p for p in a.platforms.split(",") if p]
    for s in sources:
        if s not in SOURCES:
            raise SystemExit("unknown source %r (%s)" % (s, ", ".join(SOURCES)))
    for p in plats:
        if p not in PLATFORMS:
            raise SystemExit("unknown platform %r (t3e, torus)" % p)
    req_hold = [int(x) for x in a.holdout_P.split(",")] if a.holdout_P else None
    req_P = [int(x) for x in a.P.split(",")] if a.P else None
    t = Tools(a)
    t_start = time.monotonic()
    workdir = os.path.abspath(a.work) if a.work else tempfile.mkdtemp(prefix="mksim-corpus-")
    os.makedirs(workdir, exist_ok=True)
    base = os.path.splitext(a.out)[0]
    holdout_csv, summary_csv = base + "_holdout.csv", base + "_summary.csv"
    rate, spread = measure_rate(t, a.timeout)
    log("corpus_rate: %.4g flop/s (spread %.1f%% over 9 repetitions)" % (rate, 100 * spread))
    COMPUTE["mode"] = a.compute
    if a.compute == "measured":
        # two significant digits: the SMPI cache's key holds it, and the loop's rate moves by about 1% from run to
        # run; the same number converts the mktrace skeletons' seconds, so both sides count a CPU second alike
        rate = float("%.2g" % rate)
        COMPUTE["host_speed"] = rate
        log("compute measured: smpi/simulate-computation:yes, smpi/host-speed %.6g flop/s" % rate)
    cache = {}
    for r in read_csv(a.smpi_cache) if a.smpi_cache else []:
        for k in ("smpi_s", "smpi_total_s", "start_s", "span_s", "wall_s"):
            r[k] = number(r.get(k))
        cache[r["key"]] = r

    points, holdouts, summary, used_keys = [], [], [], set()
    # rows of programs or sources this run does not redo stay in the CSVs
    kept = {kind: [r for r in read_csv(path) if r["program"] not in names or r["source"] not in sources]
            for kind, path in (("points", a.out), ("holdout", holdout_csv), ("summary", summary_csv))}
    try:
        for name in names:
            prog = PROGRAMS[name]
            skels, info = {}, {}
            # 1-2. traces and skeletons
            for source in sources:
                inputs, msg, t0 = [], "", time.monotonic()
                for P, values in prog.train:
                    d = os.path.join(workdir, "traces", "%s-%s-P%d-%s" % (name, source, P, "-".join(map(str, values))))
                    if source == "mktrace":
                        got, err, _ = trace_mktrace(t, prog, P, values, d, a.timeout)
                    elif source == "mktrace-smpi":
                        got, err, _ = trace_mktrace_smpi(t, prog, P, values, d, a.timeout)
                    else:
                        got, err, _ = trace_ti(t, prog, P, values, d, workdir, a.timeout)
                    if not got:
                        msg = "trace P=%d %s: %s" % (P, prog.param_text(values), err)
                        break
                    inputs.append(got)
                log("%s %s: %d training traces in %.0f s%s" % (name, source, len(inputs), time.monotonic() - t0,
                                                              (": " + msg) if msg else ""))
                s = {"program": name, "source": source, "trace_runs": len(prog.train), "skeleton": "error",
                     "message": msg}
                if not msg:
                    skel, msg, warns, ambs, wall = build_skeleton(t, prog, source, inputs, workdir, a.timeout)
                    s.update(warnings=len(warns), ambiguities=len(ambs), first_warning=short(warns[0], 300) if warns else "")
                    if skel:
                        with open(skel) as f:
                            j = json.load(f)
                        s["skeleton"] = "ok"
                        s["compute_seconds_blocks"], s["compute_flops_blocks"] = count_compute(j, "seconds"), count_compute(j, "flops")
                        if source != "ti":  # seconds -> flops: this machine's at the loop's rate, the T3E's at its speed
                            seconds_to_flops(j, rate if source == "mktrace" else host_speed(T3E_XML))
                            skel = skel.replace(".skel.json", ".flops.skel.json")
                            with open(skel, "w") as f:
                                json.dump(j, f, indent=1)
                        skels[source] = skel
                    else:
                        s["message"] = msg
                    log("%s %s: skeleton %s in %.1f s, %d warning(s), %d ambiguity(ies)%s" % (
                        name, source, s["skeleton"], wall, len(warns), len(ambs), (": " + msg) if msg else ""))
                summary.append(s)
                info[source] = s

            # 3. (a) hold-out against real mktrace traces
            for P in program_P(prog, req_hold, prog.holdout_P, "holdout"):
                d = os.path.join(workdir, "traces", "%s-holdout-P%d" % (name, P))
                got, err, wall = (None, "", 0)
                if any(src in skels for src in sources):
                    got, err, wall = trace_mktrace(t, prog, P, prog.holdout, d, a.timeout)
                    log("%s hold-out trace P=%d: %s (%.0f s)" % (name, P, "ok" if got else err, wall))
                for source in sources:
                    row = {"program": name, "source": source, "P": P, "params": prog.param_text(prog.holdout)}
                    if source not in skels:
                        row.update(status="error", message="no skeleton: " + info[source]["message"])
                    elif not got:
                        row.update(status="error", message="hold-out trace: " + err)
                    else:
                        ex, ranks, ops, st, m = compare(t, skels[source], got, a.timeout)
                        row.update(ranks_exact=ex, ranks=ranks, traced_ops=ops, status=st, message=m)
                    holdouts.append(row)
                    log("%s %s hold-out P=%d: %s %s" % (name, source, P, row["status"], short(row.get("message"), 200)))
                write_merged(holdout_csv, HOLDOUT_FIELDS, holdouts, kept["holdout"])

            # 4. (b) predictions against SMPI
            tasks = []
            for P in program_P(prog, req_P, prog.predict_P, "predict"):
                for pn in plats:
                    tasks.append((P, pn))

            def point(task):
                P, pn = task
                plat, note = platform_file(t, pn, P, workdir)
                rows = []
                base_row = {"program": name, "P": P, "platform": pn, "params": prog.param_text(prog.predict),
                            "compute": a.compute}
                if not plat:
                    for source in sources:
                        r = dict(base_row, source=source, status="skipped", message=note)
                        rows.append(r)
                    return rows
                key = "|".join([name, str(P), pn, " ".join(prog.args(prog.predict)),
                                file_hash([os.path.join(CORPUS_SRC, name + ".c"), os.path.join(CORPUS_SRC, "corpus.h"), plat]),
                                hashlib.sha256(" ".join(smpi_config(plat)).encode()).hexdigest()[:12]])
                used_keys.add(key)
                sm = cache.get(key)
                if sm is None or sm.get("status") != "ok":
                    log("%s SMPI P=%d %s ..." % (name, P, pn))
                    sm = run_smpi(t, prog, P, prog.predict, plat, pn, workdir, a.timeout)
                    sm["key"] = key
                    cache[key] = sm
                    log("%s SMPI P=%d %s: %s %s (%.0f s)" % (name, P, pn, sm["status"], sm.get("smpi_s", ""), float(sm["wall_s"])))
                for source in sources:
                    r = dict(base_row, source=source, smpi_s=number(sm.get("smpi_s")), smpi_start_s=number(sm.get("start_s")),
                             smpi_total_s=number(sm.get("smpi_total_s")), smpi_wall_s=number(sm.get("wall_s")))
                    if source not in skels:
                        r.update(status="error", message="no skeleton: " + info[source]["message"])
                    else:
                        pred, total, start, err, wall = run_mksim(t, skels[source], P, plat, prog, prog.predict, a.timeout)
                        r.update(mksim_wall_s=round(wall, 2), predicted_total_s=total, mksim_start_s=start)
                        if pred is None:
                            r.update(status="error", message=err)
                        elif sm.get("status") != "ok":
                            r.update(predicted_s=pred, status="error", message="SMPI: " + sm.get("message", ""))
                        else:
                            smpi_s = float(sm["smpi_s"])
                            r.update(predicted_s=pred, status="ok", error_pct=round(100.0 * (pred - smpi_s) / smpi_s, 3))
                    rows.append(r)
                    log("%s %s P=%d %s: %s %s" % (name, source, P, pn, r["status"],
                                                   ("%+.2f%%" % r["error_pct"]) if r.get("error_pct") is not None
                                                   else short(r.get("message"), 200)))
                return rows

            with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
                for rows in pool.map(point, sorted(tasks, key=lambda x: -x[0])):
                    points.extend(rows)
            if a.smpi_cache:
                write_cache(a.smpi_cache, cache, used_keys)
            for source in sources:
                s = info[source]
                mine = [p for p in points if p["program"] == name and p["source"] == source and p["status"] != "skipped"]
                ok = [abs(p["error_pct"]) for p in mine if p["status"] == "ok"]
                hold = [h for h in holdouts if h["program"] == name and h["source"] == source]
                s["holdout_exact"] = " ".join("%s:%s/%s" % (h["P"], h.get("ranks_exact", "-"), h.get("ranks", "-"))
                                              if h.get("ranks") else "%s:-" % h["P"] for h in hold)
                s.update(points=len(mine), points_ok=len(ok),
                         mean_abs_error_pct=round(sum(ok) / len(ok), 3) if ok else None,
                         max_abs_error_pct=round(max(ok), 3) if ok else None)
                if s["skeleton"] == "ok":
                    fails = [p["message"] for p in mine if p["status"] != "ok"]
                    hfail = [h["message"] for h in hold if h["status"] != "exact"]
                    s["message"] = ("(b) " + fails[0]) if fails else ("(a) " + hfail[0]) if hfail else ""
            write_merged(a.out, POINT_FIELDS, points, kept["points"])
            write_merged(summary_csv, SUMMARY_FIELDS, summary, kept["summary"])
    finally:
        if not a.work:
            shutil.rmtree(workdir, ignore_errors=True)
    wall = time.monotonic() - t_start
    print_summary(summary, rate, wall)
    print("CSV: %s, %s, %s" % (a.out, holdout_csv, summary_csv))
    return harness_problems(summary, holdouts, points) if a.check else 0


def harness_problems(summary, holdouts, points):
    """--check: what went wrong in the harness rather than in the builder; 1 if anything did."""
    bad = []
    for s in summary:
        if s.get("message", "").startswith("trace "):
            bad.append("%s %s: %s" % (s["program"], s["source"], s["message"]))
    for h in holdouts:
        if "hold-out trace:" in (h.get("message") or ""):
            bad.append("%s hold-out P=%s: %s" % (h["program"], h["P"], h["message"]))
    for p in points:
        if p["status"] == "skipped":
            continue
        if p.get("smpi_s") in (None, ""):
            bad.append("%s P=%s %s: no SMPI reference time" % (p["program"], p["P"], p["platform"]))
        if p["status"] != "ok" and not p.get("message"):
            bad.append("%s %s P=%s %s: %s without a message" % (p["program"], p["source"], p["P"], p["platform"], p["status"]))
        if p["status"] == "ok" and p.get("error_pct") is None:
            bad.append("%s %s P=%s %s: ok without an error" % (p["program"], p["source"], p["P"], p["platform"]))
    for b in bad:
        print("check: " + b)
    print("check: %s" % ("harness problems: %d" % len(bad) if bad else "the harness ran every step"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
