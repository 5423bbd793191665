#!/usr/bin/env python3
"""Write SimGrid time-independent (TI) traces of a point-to-point mksim skeleton (ATM2D by default).

The traces are what `smpirun -replay` reads (SimGrid >= 3.20 syntax, checked against SimGrid 3.32's
src/smpi/internals/smpi_replay.cpp and a P=4 run):

    <rank> init
    <rank> isend <dst> <tag> <size>       size in MPI_BYTE units ("init" without argument = MPI_BYTE)
    <rank> irecv <src> <tag> <size>
    <rank> waitall
    <rank> compute <flops>
    <rank> finalize

one file per rank (rank<r>.txt) plus an index file (index.txt) that lists them in rank order.

The skeleton is not hard-coded: its "params" defaults, "let" bindings and body (loop, if, isend, irecv,
waitall, compute) are interpreted from the JSON file, so the traces follow the file's red/black order,
its boundary conditions and its tags exactly. Other ops (collectives, sleeps, wildcards...) are refused.

Usage:  make_ti_traces.py --P 1024 [--param N=1024] [--param steps=10] [--skeleton FILE] --dir OUTDIR
Prints a JSON summary (messages, bytes, files) on stdout. Standard library only.
"""
import argparse
import json
import math
import os
import re
import sys

DEFAULT_SKELETON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "skeletons", "examples", "atm2d.json")

_FUNCS = {
    "floor": math.floor, "ceil": math.ceil, "log2": math.log2, "log": math.log, "sqrt": math.sqrt,
    "min": min, "max": max, "abs": abs, "exp": math.exp, "pow": pow,
}


def compile_expr(text):
    """Translates a skeleton expression (C-like, ^ = power) into a compiled Python expression."""
    s = str(text)
    s = s.replace("^", "**").replace("&&", " and ").replace("||", " or ")
    s = re.sub(r"!(?!=)", " not ", s)
    s = re.sub(r"\btrue\b", "True", s)
    s = re.sub(r"\bfalse\b", "False", s)
    return compile(s, "<skeleton expr %r>" % text, "eval")


class Program:
    """A skeleton body compiled to nested Python tuples, interpreted per rank."""

    def __init__(self, sk):
        self.sk = sk
        self.lets = [(name, compile_expr(expr)) for name, expr in sk.get("let", {}).items()]
        self.body = self._compile_list(sk["body"])

    def _compile_list(self, ops):
        return [self._compile(op) for op in ops]

    def _compile(self, op):
        kind = op["op"]
        if kind == "loop":
            return ("loop", compile_expr(op["count"]), op.get("var"), self._compile_list(op["body"]))
        if kind == "if":
            return ("if", compile_expr(op["cond"]), self._compile_list(op.get("then", [])),
                    self._compile_list(op.get("else", [])))
        if kind in ("isend", "irecv"):
            for key in ("peer", "tag"):
                if str(op.get(key, "")).strip() in ("any", "ANY", "-1"):
                    raise SystemExit("make_ti_traces: wildcard %s in %s is not supported" % (key, op.get("id")))
            return (kind, compile_expr(op["peer"]), compile_expr(op.get("tag", 0)), compile_expr(op["size"]))
        if kind == "waitall":
            return ("waitall",)
        if kind == "compute":
            if "flops" not in op:
                raise SystemExit("make_ti_traces: compute block %s has no flops" % op.get("id"))
            return ("compute", compile_expr(op["flops"]))
        raise SystemExit("make_ti_traces: op %r is not supported (point-to-point skeletons only)" % kind)

    def frame(self, P, rank, params):
        env = dict(_FUNCS)
        env.update(params)
        env["P"] = P
        env["rank"] = rank
        for name, code in self.lets:
            env[name] = eval(code, {"__builtins__": {}}, env)
        return env

    def run(self, P, rank, params, out):
        """Writes rank's actions to out (a list of lines); returns (messages, bytes)."""
        env = self.frame(P, rank, params)
        stats = [0, 0]
        prefix = "%d " % rank
        out.append(prefix + "init")
        self._run(self.body, env, prefix, out, stats, P, rank)
        out.append(prefix + "finalize")
        return stats

    def _run(self, ops, env, prefix, out, stats, P, rank):
        g = {"__builtins__": {}}
        for op in ops:
            kind = op[0]
            if kind == "loop":
                n = int(round(eval(op[1], g, env)))
                for i in range(n):
                    if op[2]:
                        env[op[2]] = i
                    self._run(op[3], env, prefix, out, stats, P, rank)
            elif kind == "if":
                self._run(op[2] if eval(op[1], g, env) else op[3], env, prefix, out, stats, P, rank)
            elif kind in ("isend", "irecv"):
                peer = int(round(eval(op[1], g, env)))
                if not 0 <= peer < P:
                    raise SystemExit("make_ti_traces: rank %d: peer %d out of range" % (rank, peer))
                tag = int(round(eval(op[2], g, env)))
                size = eval(op[3], g, env)
                isize = int(round(size))
                if abs(size - isize) > 1e-9:
                    raise SystemExit("make_ti_traces: rank %d: non-integer size %r" % (rank, size))
                out.append("%s%s %d %d %d" % (prefix, kind, peer, tag, isize))
                if kind == "isend":
                    stats[0] += 1
                    stats[1] += isize
            elif kind == "waitall":
                out.append(prefix + "waitall")
            elif kind == "compute":
                flops = eval(op[1], g, env)
                out.append("%scompute %.17g" % (prefix, flops))


def parse_params(sk, overrides):
    params = {name: spec.get("default") for name, spec in sk.get("params", {}).items()}
    for item in overrides:
        name, _, value = item.partition("=")
        if not _:
            raise SystemExit("make_ti_traces: --param wants NAME=VALUE, got %r" % item)
        params[name] = float(value) if re.search(r"[.eE]", value) else int(value)
    missing = [n for n, v in params.items() if v is None]
    if missing:
        raise SystemExit("make_ti_traces: parameters without a value: %s" % ", ".join(missing))
    return params


def write_traces(P, outdir, params_overrides=(), skeleton=DEFAULT_SKELETON):
    """Writes rank<r>.txt for r in [0, P) and index.txt into outdir. Returns a summary dict."""
    with open(skeleton) as f:
        sk = json.load(f)
    params = parse_params(sk, params_overrides)
    prog = Program(sk)
    os.makedirs(outdir, exist_ok=True)
    messages = 0
    nbytes = 0
    paths = []
    for r in range(P):
        lines = []
        m, b = prog.run(P, r, params, lines)
        messages += m
        nbytes += b
        path = os.path.join(os.path.abspath(outdir), "rank%d.txt" % r)
        with open(path, "w") as f:
            f.write("\n".join(lines))
            f.write("\n")
        paths.append(path)
    index = os.path.join(os.path.abspath(outdir), "index.txt")
    with open(index, "w") as f:
        f.write("\n".join(paths))
        f.write("\n")
    return {"skeleton": os.path.abspath(skeleton), "P": P, "params": params, "messages": messages,
            "bytes": nbytes, "index": index, "files": P + 1}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--P", type=int, required=True, help="number of ranks")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="skeleton parameter (defaults from the file), e.g. N=1024, steps=10")
    ap.add_argument("--skeleton", default=DEFAULT_SKELETON, help="skeleton JSON (default: atm2d.json)")
    ap.add_argument("--dir", required=True, help="output directory (created)")
    a = ap.parse_args(argv)
    summary = write_traces(a.P, a.dir, a.param, a.skeleton)
    json.dump(summary, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
