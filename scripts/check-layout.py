#!/usr/bin/env python3
"""Checks the source layout that the build alone does not enforce.

- Within each product folder, no modules depend on each other in a
  circle. A module is a source file (.c or .cu) with its header, named
  by its stem; a lone header is a module too, except that X_impl.h, the
  internal header of module X, belongs to X. Module X depends on module
  Y when X's source calls a function or uses a global that Y's source
  defines without `static`, or when a file of X includes Y's header.
  Definitions are found by reading each source at brace depth 0 (a
  function definition is a declarator with a parameter list followed by
  a body); references are the identifiers of X's source, member names
  after `.` and `->` left out. Every strongly connected component of
  more than one module is reported, with one example per arrow.
- config/ and sched/ include neither libuv nor nng.
- No product C/C++/CUDA source or header has more than 700 lines.
- No test file (tests/**) has more than 600 lines; reported always,
  an error only with --tests.

Usage: check-layout.py [SOURCE_ROOT] [--folders a,b,...] [--tests]
Exits 1 and says what is wrong.
"""
import argparse
import os
import re
import sys

PRODUCT_DIRS = ("base", "client", "ctl", "net", "gpu", "sched", "config",
                "daemon", "proto")
NO_UV_NNG = ("config", "sched")
MAX_LINES = 700
MAX_TEST_LINES = 600

SOURCE_EXT = (".c", ".cu", ".cc", ".cpp")
HEADER_EXT = (".h", ".cuh", ".hh", ".hpp")
TEST_EXT = SOURCE_EXT + HEADER_EXT + (".py", ".sh")

QUOTED = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
FOREIGN = re.compile(r'^[ \t]*#[ \t]*include[ \t]+<(uv\.h|nng/[^>]+)>', re.M)
IDENT = re.compile(r"[A-Za-z_]\w*")
REF = re.compile(r"(?<![\w.])(?<!->)([A-Za-z_]\w*)")
ATTRIBUTE = re.compile(r"__attribute__\s*\(\(.*?\)\)", re.S)
KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof", "do",
            "else", "case", "goto", "typedef", "struct", "union", "enum"}


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def lines(text):
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def blank(m):
    """Replaces a match by spaces, keeping its newlines."""
    return re.sub(r"[^\n]", " ", m.group(0))


def strip(text):
    """Text with comments, string and character literals and
    preprocessor lines blanked out; line numbers are kept."""
    text = re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                  r"'(?:\\.|[^'\\\n])*'", blank, text, flags=re.S)
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", blank, text, flags=re.M)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def top_level_assign(head):
    """Where the initializer of a declaration starts (its `=` outside
    parentheses, not part of `==`), or -1."""
    depth = 0
    for i, c in enumerate(head):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "=" and depth == 0 and head[i - 1:i] not in "=!<>" \
                and head[i + 1:i + 2] != "=":
            return i
    return -1


def declared_name(head):
    """What a depth-0 declaration head declares: (name match or None,
    is_function, is_static). A function's name is the identifier before
    its parameter list, the last parenthesised group of the head; a
    variable's the last identifier before `=` or `[`. Whatever precedes
    the declaration at file scope (a macro call that expands to
    definitions, say) is left out."""
    head = ATTRIBUTE.sub(lambda m: " " * len(m.group(0)), head)
    eq = top_level_assign(head)
    decl = head if eq < 0 else head[:eq]
    if eq < 0 and decl.rstrip().endswith(")"):
        close = len(decl.rstrip()) - 1
        depth = 0
        for i in range(close, -1, -1):
            depth += {")": 1, "(": -1}.get(decl[i], 0)
            if depth == 0:
                break
        begin = max(decl.rfind(")", 0, i), decl.rfind(";", 0, i)) + 1
        names = list(IDENT.finditer(decl, begin, i))
        if not names or names[-1].group(0) in KEYWORDS:
            return None, True, False
        return names[-1], True, "static" in decl[begin:i].split()
    begin = decl.rfind(")") + 1
    end = decl.find("[", begin)
    end = len(decl) if end < 0 else end
    names = list(IDENT.finditer(decl, begin, end))
    if len(names) < 2 or names[-1].group(0) in KEYWORDS or (
            len(names) == 2 and names[0].group(0) in KEYWORDS):
        return None, False, False  # struct x; is a type, not a variable
    return names[-1], False, "static" in decl[begin:end].split()


def definitions(path):
    """{name: line} of what the source defines at file scope, split
    into (exported, static)."""
    text = strip(read(path))
    exported, local = {}, {}
    depth = 0
    start = 0
    i = 0
    while i < len(text):
        c = text[i]
        if c == "{" and depth == 0:
            head = text[start:i]
            if head.split() in (["extern"], ["namespace"]):
                start = i + 1  # extern "C" { ... }: its body is file scope
            elif "(" in head or "=" in head:
                define(text, start, head, exported, local, body=True)
                depth = 1
            else:
                depth = 1  # struct, union or enum body
        elif c == "{":
            depth += 1
        elif c == "}":
            depth = max(depth - 1, 0)
            if depth == 0:
                start = i + 1
        elif c == ";" and depth == 0:
            define(text, start, text[start:i], exported, local, body=False)
            start = i + 1
        i += 1
    return exported, local


def define(text, start, head, exported, local, body):
    words = head.split()
    if not words or "typedef" in words or ("extern" in words and not body):
        return
    m, is_function, is_static = declared_name(head)
    if m is None or (is_function and not body):
        return  # a prototype or a type, not a definition
    if body and not is_function and top_level_assign(head) < 0:
        return  # struct x { ... }
    if is_static:
        local[m.group(0)] = line_of(text, start + m.start())
    else:
        exported[m.group(0)] = line_of(text, start + m.start())


class Folder:
    """The modules of one folder and the arrows between them."""

    def __init__(self, root, name):
        self.name = name
        path = os.path.join(root, name)
        self.files = sorted(f for f in os.listdir(path)
                            if f.endswith(SOURCE_EXT + HEADER_EXT))
        self.path = path
        stems = {os.path.splitext(f)[0] for f in self.files}
        self.module = {}
        for f in self.files:
            s = os.path.splitext(f)[0]
            if (f.endswith(HEADER_EXT) and s.endswith("_impl")
                    and s + ".c" not in self.files
                    and s + ".cu" not in self.files
                    and s[:-len("_impl")] in stems):
                s = s[:-len("_impl")]
            self.module[f] = s
        self.modules = sorted(set(self.module.values()))
        self.arrows = {}  # (from, to) -> example text

    def sources(self):
        return [f for f in self.files if f.endswith(SOURCE_EXT)]

    def add(self, a, b, why, call):
        if a == b:
            return
        old = self.arrows.get((a, b))
        if old is None or (call and not old[1]):
            self.arrows[(a, b)] = (why, call)

    def build(self):
        defined = {}  # name -> [(module, file, line)]
        own = {}  # module -> names it defines, static or not
        for f in self.sources():
            exported, local = definitions(os.path.join(self.path, f))
            m = self.module[f]
            own.setdefault(m, set()).update(exported, local)
            for name, line in exported.items():
                defined.setdefault(name, []).append((m, f, line))
        for f in self.files:
            text = read(os.path.join(self.path, f))
            for inc in QUOTED.finditer(text):
                dep = os.path.basename(inc.group(1))
                if dep in self.module:
                    self.add(self.module[f], self.module[dep],
                             "%s:%d includes %s" % (
                                 f, line_of(text, inc.start()), dep), False)
        for f in self.sources():
            m = self.module[f]
            text = strip(read(os.path.join(self.path, f)))
            for ref in REF.finditer(text):
                name = ref.group(1)
                if name in own.get(m, ()) or name not in defined:
                    continue
                for dm, df, dl in defined[name]:
                    if (m, dm) not in self.arrows or \
                            not self.arrows[(m, dm)][1]:
                        self.add(m, dm, "%s:%d uses %s (%s:%d)" % (
                            f, line_of(text, ref.start()), name, df, dl),
                            True)
        return self

    def circles(self):
        """The strongly connected components of more than one module
        (Tarjan), each a sorted list."""
        graph = {m: sorted(b for (a, b) in self.arrows if a == m)
                 for m in self.modules}
        index, low, stack, on, out = {}, {}, [], set(), []

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
                if len(comp) > 1:
                    out.append(sorted(comp))

        sys.setrecursionlimit(10000)
        for m in self.modules:
            if m not in index:
                visit(m)
        return sorted(out)

    def report(self, comp):
        text = ["%s/: import circle: %s" % (self.name, ", ".join(comp))]
        for (a, b), (why, _) in sorted(self.arrows.items()):
            if a in comp and b in comp:
                text.append("    %s -> %s: %s" % (a, b, why))
        return "\n".join(text)


def oversized(root, d, limit, ext):
    out = []
    for top, _, names in os.walk(os.path.join(root, d)):
        for f in sorted(names):
            path = os.path.join(top, f)
            if f.endswith(ext):
                n = lines(read(path))
                if n > limit:
                    out.append("%s has %d lines, more than %d"
                               % (os.path.relpath(path, root), n, limit))
    return sorted(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root", nargs="?", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--folders", help="comma-separated product folders "
                    "to check (default: all that exist)")
    ap.add_argument("--tests", action="store_true",
                    help="fail on test files over %d lines" % MAX_TEST_LINES)
    args = ap.parse_args()
    root = args.root
    if args.folders:
        folders = [d for d in args.folders.split(",") if d]
        for d in folders:
            if not os.path.isdir(os.path.join(root, d)):
                ap.error("no folder %s/ under %s" % (d, root))
    else:
        folders = [d for d in PRODUCT_DIRS
                   if os.path.isdir(os.path.join(root, d))]
    problems = []
    for d in folders:
        folder = Folder(root, d).build()
        problems += [folder.report(c) for c in folder.circles()]
    for d in folders:
        if d not in NO_UV_NNG:
            continue
        for f in Folder(root, d).files:
            text = read(os.path.join(root, d, f))
            for inc in FOREIGN.findall(text):
                problems.append("%s/%s includes <%s>: %s/ uses neither "
                                "libuv nor nng" % (d, f, inc, d))
    for d in folders:
        problems += oversized(root, d, MAX_LINES, SOURCE_EXT + HEADER_EXT)
    notes = []
    if os.path.isdir(os.path.join(root, "tests")):
        notes = oversized(root, "tests", MAX_TEST_LINES, TEST_EXT)
        if args.tests:
            problems += notes
            notes = []
    for p in problems:
        print(p)
    for n in notes:
        print("note: " + n)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
