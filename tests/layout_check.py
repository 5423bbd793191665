#!/usr/bin/env python3
"""The layout's rules, checked on the sources (README "Layout"; issue 16):
- each component folder includes only from folders below it (the stack in LAYERS);
- no include cycle between modules (a module is x.hpp with its x.cpp), directly or through others;
- each heavy dependency is included by its one component only (HEAVY).
Prints every violation with the file and line; exits 1 when there is one. Usage: layout_check.py SOURCE_DIR"""
import os
import re
import sys

# Bottom to top: a folder may include from its own folder and from folders of a lower layer.
LAYERS = {
    "skeletons/trace": 0,
    "skeletons": 0,
    "platforms": 0,
    "results": 0,
    "skeletons/builder": 1,
    "sim/engine": 2,
    "sim/model": 3,
    "calibration": 4,
    "sim/sweep": 4,
    "sim/diagnosis": 4,
    "sim/cli": 5,
}
# Folders holding data or standalone programs, not library code.
SKIP = ("skeletons/apps", "skeletons/schema", "skeletons/examples", "calibration/data")
# include pattern -> the only folder allowed to include it
HEAVY = {
    r"^simgrid/|^xbt/": "sim/engine",
    r"^ginac/": "sim/model",
    r"^boost/program_options": "sim/cli",
    r"^hdf5\.h$|^H5Cpp\.h$": "results",
    r"^otf2/": "skeletons/trace",
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def folder_of(rel):
    d = os.path.dirname(rel)
    while d and d not in LAYERS:
        d = os.path.dirname(d)
    return d or None


def module_of(rel):
    return os.path.splitext(rel)[0]


def main(root):
    files = []
    for folder in LAYERS:
        base = os.path.join(root, folder)
        for name in sorted(os.listdir(base)):
            rel = f"{folder}/{name}"
            if name.endswith((".cpp", ".hpp", ".c", ".h")) and os.path.isfile(os.path.join(root, rel)):
                files.append(rel)
    problems = []
    edges = {}  # module -> {module: (file, line)}
    for rel in files:
        own = folder_of(rel)
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                kind, path = m.groups()
                for pattern, allowed in HEAVY.items():
                    if re.search(pattern, path) and own != allowed:
                        problems.append(f"{rel}:{n}: includes <{path}>, which only {allowed}/ may include")
                if kind != '"':
                    continue
                target = path if os.path.exists(os.path.join(root, path)) else os.path.join(os.path.dirname(rel), path)
                if not os.path.exists(os.path.join(root, target)):
                    continue
                other = folder_of(target)
                if other is None or any(target.startswith(s) for s in SKIP):
                    continue
                if other != own and LAYERS[other] >= LAYERS[own]:
                    problems.append(f"{rel}:{n}: {own}/ (layer {LAYERS[own]}) includes {target} of {other}/ "
                                    f"(layer {LAYERS[other]}): a folder includes only from folders below it")
                a, b = module_of(rel), module_of(target)
                if a != b:
                    edges.setdefault(a, {}).setdefault(b, (rel, n))
    # module cycles (Tarjan's strongly connected components)
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    for comp in sccs:
        where = [f"{edges[a][b][0]}:{edges[a][b][1]}" for a in comp for b in comp if b in edges.get(a, {})]
        problems.append("include cycle between modules " + ", ".join(comp) + " (" + "; ".join(where) + ")")
    for p in problems:
        print(p)
    print(f"layout: {len(files)} files in {len(LAYERS)} folders, {sum(len(e) for e in edges.values())} module "
          f"dependencies, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
