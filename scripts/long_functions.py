#!/usr/bin/env python3
"""long_functions.py — list the C functions longer than a limit.

    scripts/long_functions.py [--max N] [PATH...]

Reads every .c file under PATH (relative to the repository root or
absolute; default: src bench tools examples fuzz scripts, tests excluded) and prints "file:line: name: N lines" for each
function definition that spans more than N lines (default 100), from the
first line of its declaration to its closing brace.  Exit
status 1 when there is one, 0 otherwise.

A function definition is recognised by the project's layout (Linux kernel
style, docs/DESIGN.md): its opening brace alone at the start of a line,
after a line that ends the parameter list; its closing brace alone at the
start of a line.  Comments, strings and character literals are blanked out
before the scan, so braces inside them do not count.
"""
import argparse
import os
import re
import sys

DEFAULT_ROOTS = ["src", "bench", "tools", "examples", "fuzz", "scripts"]
NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def blank(text):
    """text with comments, strings and char literals replaced by spaces
    (newlines kept, so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(lines, brace):
    """The name of the function whose opening brace is lines[brace]: the
    last identifier followed by '(' in the few lines before it."""
    head = " ".join(lines[max(0, brace - 8):brace])
    head = head.split(";")[-1].split("}")[-1]
    names = [m.group(1) for m in NAME.finditer(head)]
    keywords = {"if", "for", "while", "switch", "return", "sizeof"}
    names = [x for x in names if x not in keywords]
    return names[0] if names else None


def long_functions(path, limit):
    """(line, name, length) of each function of path over limit lines: from
    the first line of its declaration to its closing brace."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = blank(f.read()).split("\n")
    found = []
    start = None
    for i, line in enumerate(lines):
        if line.rstrip() == "{" and start is None and i and lines[i - 1].rstrip().endswith(")"):
            start = i
        elif line.startswith("}") and start is not None:
            head = start - 1
            while head > 0 and lines[head][:1] in (" ", "\t"):
                head -= 1
            length = i - head + 1
            if length > limit:
                found.append((head + 1, function_name(lines, start) or "?", length))
            start = None
    return found


def c_files(roots):
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for d, subdirs, files in os.walk(root):
            subdirs[:] = sorted(s for s in subdirs if not s.startswith("build"))
            for name in sorted(files):
                if name.endswith(".c"):
                    yield os.path.join(d, name)


def main():
    ap = argparse.ArgumentParser(description="list the C functions longer than --max lines")
    ap.add_argument("--max", type=int, default=100, help="longest allowed (lines, default 100)")
    ap.add_argument("paths", nargs="*", help="files or folders (default: all but tests)")
    args = ap.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    bad = 0
    for path in c_files(args.paths or DEFAULT_ROOTS):
        for line, name, length in long_functions(path, args.max):
            print(f"{path}:{line}: {name}: {length} lines")
            bad += 1
    if bad:
        print(f"long_functions: {bad} function(s) over {args.max} lines", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
