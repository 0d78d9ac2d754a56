#!/usr/bin/env python3
"""Checks that what the docs name exists: every repository path and every Bazel target that
README.md, docs/*.md and bench/README.md mention, and every repository path a comment in the
sources names. Prints each dangling reference with its file and line; exits 1 if there is any.
Run from the repository root (tools/test.sh does)."""
import glob
import os
import re
import subprocess
import sys

DOCS = ["README.md", "bench/README.md"] + sorted(glob.glob("docs/*.md"))
TOP = ("compiler", "runtime", "server", "client", "tests", "bench", "tools", "proto", "deploy",
       "docs", "third_party", ".ci")
PATH = re.compile(r"(?<![\w/.-])((?:%s)/[\w./+-]*)" % "|".join(re.escape(t) for t in TOP))
TARGET = re.compile(r"(?<![\w])(//[\w/.-]*(?::[\w.+-]+)?)")


def Exists(path):
    """A file or folder; a stem naming a .h/.cc pair or a script ("compiler/build_info"); or a
    header protoc generates from a .proto that exists."""
    if os.path.exists(path) or any(os.path.exists(path + ext) for ext in (".h", ".cc", ".py", ".sh")):
        return True
    for generated in (".grpc.pb.h", ".pb.h", ".pb.cc"):
        if path.endswith(generated) and os.path.exists(path[:-len(generated)] + ".proto"):
            return True
    return False


def paths_and_targets(text):
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in PATH.finditer(line):
            path = m.group(1).rstrip(".,;:)")
            # Patterns and placeholders are not paths: compiler/relax/transform/*_test.cc, <name>.
            rest = line[m.end():m.end() + 1]
            if rest in ("*", "<", "{") or "*" in path or path.endswith("-"):
                continue
            yield lineno, "path", path
        for m in TARGET.finditer(line):
            target = m.group(1).rstrip(".,;:")
            if line[m.end():m.end() + 2] in (":<",) or line[m.end():m.end() + 1] in ("<", "*") \
                    or target in ("//", "//..."):
                continue
            yield lineno, "target", target


def main():
    missing = []
    targets = {}
    for doc in DOCS:
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        for lineno, kind, ref in paths_and_targets(text):
            where = "%s:%d" % (doc, lineno)
            if kind == "path":
                if not Exists(ref):
                    missing.append("%s: no such path: %s" % (where, ref))
            else:
                targets.setdefault(ref, where)
    # One query for every target: --keep_going names each that does not exist.
    if targets:
        query = "set(%s)" % " ".join(sorted(targets))
        result = subprocess.run(["bazel", "query", "--keep_going", "--output=label", query],
                                capture_output=True, text=True)
        found = set(result.stdout.split())
        for target, where in sorted(targets.items(), key=lambda kv: kv[1]):
            label = target if ":" in target else target + ":" + target.rsplit("/", 1)[-1]
            if label not in found:
                missing.append("%s: no such Bazel target: %s" % (where, target))
    # Comments in the sources: paths only.
    sources = subprocess.run(["git", "ls-files", "*.cc", "*.h", "*.proto", "*.sh", "*.bzl", "*.py",
                              "BUILD", "*/BUILD"], capture_output=True, text=True).stdout.split()
    for source in sources:
        with open(source, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                comment = line.find("//") if not source.endswith((".sh", ".py", "BUILD", ".bzl")) \
                    else line.find("#")
                if comment < 0:
                    continue
                for _, kind, ref in paths_and_targets(line[comment:]):
                    if kind == "path" and not Exists(ref):
                        missing.append("%s:%d: no such path: %s" % (source, lineno, ref))
    for m in missing:
        print(m)
    print("check_docs: %d references checked in %s; %d dangling" %
          (len(targets) + sum(1 for d in DOCS for _ in paths_and_targets(open(d).read())
                              if _[1] == "path"), ", ".join(DOCS), len(missing)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
