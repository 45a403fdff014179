#!/usr/bin/env python3
"""Checks the source layout that the build alone does not enforce.

- Within daemon/, config/ and sched/, no modules include each other in
  a loop. A module is a .c/.h pair (or a lone header) named by its stem;
  a quoted #include of another module's header in either file of a
  module is an arrow from it to that module. A function of another
  module can only be called through its header, so a loop of calls
  shows as a loop of arrows.
- config/ and sched/ include neither libuv nor nng.
- No C source or header in daemon/, sched/, config/ or client/ has more
  than 600 lines.

Usage: check-layout.py [SOURCE_ROOT]; exits 1 and says what is wrong.
"""
import os
import re
import sys

LOOP_DIRS = ("daemon", "config", "sched")
NO_UV_NNG = ("config", "sched")
SIZE_DIRS = ("daemon", "sched", "config", "client")
MAX_LINES = 600

QUOTED = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
FOREIGN = re.compile(r'^\s*#\s*include\s+<(uv\.h|nng/[^>]+)>', re.M)


def sources(root, d):
    path = os.path.join(root, d)
    return sorted(os.path.join(path, f) for f in os.listdir(path)
                  if f.endswith((".c", ".h")))


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def include_graph(root, d):
    files = sources(root, d)
    modules = {stem(f) for f in files}
    graph = {m: set() for m in modules}
    for f in files:
        for inc in QUOTED.findall(read(f)):
            dep = stem(inc)
            if dep in modules and dep != stem(f):
                graph[stem(f)].add(dep)
    return graph


def find_loop(graph):
    """Returns one loop as a list of modules, or None."""
    state = {}

    def visit(m, path):
        state[m] = "open"
        path.append(m)
        for dep in sorted(graph[m]):
            if state.get(dep) == "open":
                return path[path.index(dep):] + [dep]
            if dep not in state:
                loop = visit(dep, path)
                if loop:
                    return loop
        path.pop()
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            loop = visit(m, [])
            if loop:
                return loop
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    problems = []
    for d in LOOP_DIRS:
        loop = find_loop(include_graph(root, d))
        if loop:
            problems.append("%s/: modules include each other in a loop: %s"
                            % (d, " -> ".join(loop)))
    for d in NO_UV_NNG:
        for f in sources(root, d):
            for inc in FOREIGN.findall(read(f)):
                problems.append("%s includes <%s>: %s/ uses neither libuv "
                                "nor nng" % (os.path.relpath(f, root), inc, d))
    for d in SIZE_DIRS:
        for f in sources(root, d):
            n = read(f).count("\n")
            if n > MAX_LINES:
                problems.append("%s has %d lines, more than %d"
                                % (os.path.relpath(f, root), n, MAX_LINES))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
