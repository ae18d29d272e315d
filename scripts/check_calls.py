#!/usr/bin/env python3
"""check_calls.py — no call loops between the files of a module.

Usage: scripts/check_calls.py BUILD_DIR [MODULE ...]

For each module (default: every library module of the build, the folders
src/<module> whose OBJECT library BUILD_DIR holds) the object files of
src/<module>/*.c in BUILD_DIR are read with `nm`: a file calls another when
one of its undefined symbols is defined (global) in the other.  The
file-level call graph must be acyclic; a cycle is printed with the files
and the symbols that make it, and the script exits 1.  With the graph
acyclic it prints each module's files bottom-up (a file calls only files
before it), the order the module's design comments list.

Calls through a function pointer (an ops table set at init) are not edges:
that is how a lower file calls back into an upper one.
"""
import os
import subprocess
import sys


DEFINED = set("TDBRVWGSC")  # global text, data, bss, rodata, weak, small, common


def library_modules(build):
    """Every module whose OBJECT library of src/<module> the build holds."""
    d = os.path.join(build, "CMakeFiles")
    if not os.path.isdir(d):
        sys.exit("check_calls: %s not found (configure and build first)" % d)
    mods = []
    for entry in sorted(os.listdir(d)):
        if entry.startswith("ruma_o_") and entry.endswith(".dir"):
            m = entry[len("ruma_o_"):-len(".dir")]
            if os.path.isdir(os.path.join(d, entry, "src", m)):
                mods.append(m)
    if not mods:
        sys.exit("check_calls: no library module objects under %s (build the library first)" % d)
    return mods


def object_files(build, module):
    """src/<module>/<file>.c.o of the module's OBJECT library."""
    d = os.path.join(build, "CMakeFiles", "ruma_o_%s.dir" % module, "src", module)
    if not os.path.isdir(d):
        sys.exit("check_calls: %s not found (build the library first)" % d)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".c.o"))


def symbols(obj):
    """(defined, undefined) global symbol sets of one object file."""
    out = subprocess.run(["nm", obj], check=True, capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in DEFINED:
            defined.add(parts[2])
    return defined, undefined


def call_graph(objs):
    """{file: {callee file: sorted symbols}} between the module's files."""
    name = {o: os.path.basename(o)[: -len(".o")] for o in objs}
    syms = {name[o]: symbols(o) for o in objs}
    owner = {}
    for f, (defined, _) in syms.items():
        for s in defined:
            owner[s] = f
    graph = {f: {} for f in syms}
    for f, (_, undefined) in syms.items():
        for s in sorted(undefined):
            g = owner.get(s)
            if g and g != f:
                graph[f].setdefault(g, []).append(s)
    return graph


def strongly_connected(graph):
    """Tarjan's components, each a sorted list of files."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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
            comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def bottom_up(graph):
    """Files ordered so that each calls only files before it."""
    order, done = [], set()

    def place(v):
        if v in done:
            return
        done.add(v)
        for w in sorted(graph[v]):
            place(w)
        order.append(v)

    for v in sorted(graph):
        place(v)
    return order


def check(build, module):
    graph = call_graph(object_files(build, module))
    loops = [c for c in strongly_connected(graph) if len(c) > 1]
    for comp in loops:
        print("check_calls: src/%s: call loop between %s:" % (module, ", ".join(comp)))
        for f in comp:
            for g in sorted(graph[f]):
                if g in comp:
                    print("  %s -> %s: %s" % (f, g, ", ".join(graph[f][g])))
    if not loops:
        print("check_calls: src/%s bottom-up: %s" % (module, " < ".join(bottom_up(graph))))
    return not loops


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__.strip().splitlines()[2])
    modules = argv[2:] or library_modules(argv[1])
    ok = all([check(argv[1], m) for m in modules])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
