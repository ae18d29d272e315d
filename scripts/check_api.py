#!/usr/bin/env python3
"""check_api.py — the exported functions of libruma are the installed API.

Usage: scripts/check_api.py BUILD_DIR [--budget N] [--callers] [--list]

Reads the functions libruma.so exports (`nm -D --defined-only` of
BUILD_DIR/libruma.so) and the RUMA_API declarations of include/ruma/*.h,
and fails when they disagree either way: an exported symbol no installed
header declares (a contract between layers that leaked, or a missing
hidden visibility), or a declared function the library does not export
(declared but never defined, or defined without RUMA_API reaching it).
It also fails on a declaration that no comment documents (one comment may
introduce a group of declarations).

  --budget N  also fail when the exports, not counting the store API of
              include/ruma/db.h, are more than N.
  --callers   also fail on every exported function that has no caller
              outside its own module: no use (comments stripped) in tools/,
              bench/, examples/, tests/, fuzz/, the src/ folder of
              another module or an inline function of an installed
              header.  The module of a function is the one whose
              ruma_module(... HEADERS ...) call in CMakeLists.txt owns its
              header.
  --list      print every exported function with its header (with
              --callers also those whose only outside callers are tests).

The layers' own contracts live in non-installed headers (src/<m>/*_ext.h)
without RUMA_API: the library is built with -fvisibility=hidden, so they
stay out of the dynamic symbol table, and the programs of the repository
reach them by linking the modules' static libraries.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER_DIR = os.path.join(ROOT, "include", "ruma")
NOT_COUNTED = "db.h"  # the store API: outside the budget
CALLER_TREES = ["tools", "bench", "examples", "tests", "fuzz"]

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip_comments(text):
    return COMMENT.sub(" ", text)


def declared_in(path):
    """Names declared with RUMA_API in one header (functions and objects)."""
    text = strip_comments(open(path, encoding="utf-8").read())
    text = re.sub(r"^[ \t]*#.*$", " ", text, flags=re.M)  # directives (the #define)
    names = []
    for m in re.finditer(r"\bRUMA_API\b([^;{]*)", text):
        decl = m.group(1)
        paren = decl.find("(")
        head = decl[:paren] if paren >= 0 else decl
        words = IDENT.findall(head)
        if not words:
            sys.exit("check_api: cannot read the declaration after RUMA_API in %s: %r"
                     % (path, decl.strip()[:80]))
        names.append(words[-1])
    return names


def declarations():
    """{name: header file name} of every RUMA_API declaration."""
    decl = {}
    for h in sorted(os.listdir(HEADER_DIR)):
        if not h.endswith(".h"):
            continue
        for name in declared_in(os.path.join(HEADER_DIR, h)):
            if name in decl and decl[name] != h:
                sys.exit("check_api: %s is declared in both %s and %s" % (name, decl[name], h))
            decl[name] = h
    return decl


def undocumented(path):
    """(line, declaration) of the RUMA_API declarations of one header that no
    comment introduces: the nearest line above a declaration that is not part
    of another declaration of the same group (or a preprocessor line) must end
    a comment."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    for i, line in enumerate(lines):
        if not re.match(r"\s*RUMA_API\b", line):
            continue
        j = i - 1
        while j >= 0:
            t = lines[j].strip()
            continuation = lines[j][:1] in ("\t", " ") and not t.startswith("*")
            if t.endswith("*/") or not t:
                break
            if t.startswith("#") or "RUMA_API" in t or continuation:
                j -= 1
                continue
            break
        if j < 0 or not lines[j].strip().endswith("*/"):
            out.append((i + 1, line.strip()))
    return out


def exports(build):
    """Names of the symbols libruma.so defines in its dynamic symbol table."""
    lib = os.path.join(build, "libruma.so")
    if not os.path.exists(lib):
        sys.exit("check_api: %s not found (build the library first)" % lib)
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] not in "AUuw":
            name = parts[2].split("@")[0]
            # identifiers reserved to the implementation (_init, __asan_*,
            # __sancov_* of instrumented builds) are no part of ruma's API
            if not re.match(r"_[A-Z_]|_init$|_fini$", name):
                names.add(name)
    return names


def header_owners():
    """{header: (module, folder)} from the ruma_module() calls of CMakeLists.txt."""
    text = re.sub(r"#[^\n]*", " ", open(os.path.join(ROOT, "CMakeLists.txt")).read())
    owners = {}
    for m in re.finditer(r"\bruma_module\(([^)]*)\)", text):
        words = m.group(1).split()
        if len(words) < 2 or "HEADERS" not in words:
            continue
        for h in words[words.index("HEADERS") + 1:]:
            owners[h] = (words[0], words[1])
    return owners


def source_files():
    """(path relative to ROOT, text without comments) of every .c/.h that may call."""
    files = []
    for top in CALLER_TREES + ["src"]:
        for d, _, names in os.walk(os.path.join(ROOT, top)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    p = os.path.join(d, n)
                    rel = os.path.relpath(p, ROOT)
                    files.append((rel, strip_comments(open(p, encoding="utf-8",
                                                           errors="replace").read())))
    return files


def inline_bodies():
    """(include/ruma/h, text) of the function bodies an installed header defines
    (its static inline functions): what they call is called by every caller of
    theirs, so it counts as called from outside."""
    out = []
    for h in sorted(os.listdir(HEADER_DIR)):
        if not h.endswith(".h"):
            continue
        text = strip_comments(open(os.path.join(HEADER_DIR, h), encoding="utf-8").read())
        text = re.sub(r"#ifdef __cplusplus.*?#endif", " ", text, flags=re.S)  # extern "C" {
        depth, start = 0, 0
        for i, ch in enumerate(text):
            if ch == "{":
                if depth == 0:
                    start = i
                depth += 1
            elif ch == "}" and depth > 0:
                depth -= 1
                if depth == 0 and text[:start].rstrip().endswith(")"):
                    out.append(("include/ruma/" + h, text[start:i + 1]))
    return out


def outside_callers(decl, owners):
    """{name: (outside files except tests, test files)} for every declared function."""
    files = source_files() + inline_bodies()
    words = {}
    for rel, text in files:
        for w in set(IDENT.findall(text)):
            words.setdefault(w, []).append(rel)
    result = {}
    for name, h in decl.items():
        folder = owners.get(h, ("?", "?"))[1]
        users = [f for f in words.get(name, []) if not f.startswith(folder + "/")]
        tests = [f for f in users if f.startswith("tests/")]
        result[name] = ([f for f in users if not f.startswith("tests/")], tests)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--budget", type=int)
    ap.add_argument("--callers", action="store_true")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()

    decl = declarations()
    exp = exports(a.build)
    bad = False
    for name in sorted(exp - set(decl)):
        print("check_api: %s is exported by libruma.so but declared in no installed header "
              "(a layer contract belongs in a src/<module>/*_ext.h without RUMA_API)" % name)
        bad = True
    for name in sorted(set(decl) - exp):
        print("check_api: %s is declared RUMA_API in include/ruma/%s but libruma.so does "
              "not export it" % (name, decl[name]))
        bad = True

    for h in sorted(os.listdir(HEADER_DIR)):
        if h.endswith(".h"):
            for line, text in undocumented(os.path.join(HEADER_DIR, h)):
                print("check_api: include/ruma/%s:%d: %s has no comment documenting it"
                      % (h, line, text))
                bad = True

    counted = sorted(n for n in exp if decl.get(n) != NOT_COUNTED)
    if a.list:
        for n in sorted(exp):
            print("%-40s %s" % (n, decl.get(n, "-")))
    print("check_api: %d exported, %d without %s%s" % (
        len(exp), len(counted), NOT_COUNTED,
        "" if a.budget is None else " (budget %d)" % a.budget))
    if a.budget is not None and len(counted) > a.budget:
        print("check_api: %d exported functions outside %s, more than the budget of %d"
              % (len(counted), NOT_COUNTED, a.budget))
        bad = True

    if a.callers:
        owners = header_owners()
        users = outside_callers({n: h for n, h in decl.items() if n in exp}, owners)
        for name in sorted(users):
            outside, tests = users[name]
            if not outside and not tests:
                print("check_api: %s (%s) has no caller outside its module %s"
                      % (name, decl[name], owners.get(decl[name], ("?",))[0]))
                bad = True
        only_tests = sorted(n for n, (o, t) in users.items() if not o and t)
        for name in only_tests if a.list else []:
            print("check_api: note: %s (%s) is called outside its module only by tests"
                  % (name, decl[name]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
