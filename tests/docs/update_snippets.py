#!/usr/bin/env python3
"""Rewrites each code block of README.md and docs/*.md marked
   <!-- snippet: examples/.../file.cpp -->
with that file from its first #include on (or, for FILE#NAME, with the
fragment NAME of FILE): run it after editing an example
that the docs show (docs.snippets fails until the copies match).
Usage: tests/docs/update_snippets.py [REPO_ROOT]"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
os.chdir(root)
for doc in ["README.md"] + sorted(glob.glob("docs/*.md")):
    lines = open(doc).read().split("\n")
    out, k = [], 0
    while k < len(lines):
        marker = re.match(r"^<!-- snippet: (.*) -->$", lines[k])
        out.append(lines[k])
        k += 1
        if not marker:
            continue
        target = marker.group(1)
        if "#" in target:  # FILE#NAME: a fragment of tests/docs/fragments.cpp
            path, name = target.split("#", 1)
            text = open(path).read()
            begin = text.index("// docs-snippet-begin: %s\n" % name)
            begin = text.index("\n", begin) + 1
            body = text[begin:text.index("// docs-snippet-end", begin)].rstrip("\n").split("\n")
        else:
            source = open(target).read()
            body = source[source.index("#include"):].rstrip("\n").split("\n")
            # The seed programs' length markers (check_seed_lengths.sh) are left out.
            body = [l for l in body
                    if l.strip() not in ("// seed-setup-begin", "// seed-setup-end")]
        while not lines[k].startswith("```"):  # up to the opening fence
            out.append(lines[k])
            k += 1
        out.append(lines[k])
        k += 1
        while not lines[k].startswith("```"):  # drop the old copy
            k += 1
        out.extend(body)
    open(doc, "w").write("\n".join(out))
