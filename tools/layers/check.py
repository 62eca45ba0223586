#!/usr/bin/env python3
"""Checks kvlab-server's layering: every #include "server/..." of a file under server/ points to
its own layer or one below it (server/layers.txt), except the upward includes that file lists;
and nothing under server/ or structures/ includes tools/.

  tools/layers/check.py [ROOT]          exit 0 when clean, 1 with one line per violation

Also fails when a file under server/ has no layer or two (a path named whole wins over a glob),
and when an allowed upward include no
longer exists (so that the list only shrinks)."""
import fnmatch
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    layers, patterns, allowed = [], [], {}
    for n, line in enumerate(open(os.path.join(root, "server", "layers.txt")), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("layer "):
            name, _, paths = line[len("layer "):].partition(":")
            layers.append(name.strip())
            patterns.append(paths.split())
        elif line.startswith("allow "):
            edge, _, why = line[len("allow "):].partition(": ")
            a, _, b = edge.partition(" -> ")
            if not why.strip():
                print("server/layers.txt:%d: an allowed upward include needs its reason" % n)
                return 1
            allowed[(a.strip(), b.strip())] = n
        else:
            print("server/layers.txt:%d: not 'layer NAME: PATHS' nor 'allow A -> B: why'" % n)
            return 1

    def files(top):
        for d, _, fs in os.walk(os.path.join(root, top)):
            for f in fs:
                if f.endswith((".cpp", ".hpp", ".h", ".cc")):
                    yield os.path.relpath(os.path.join(d, f), root)

    problems = []
    layer_of = {}
    for f in sorted(files("server")):
        hits = [i for i, pats in enumerate(patterns) if any(fnmatch.fnmatch(f, p) for p in pats)]
        if len(hits) > 1:  # a path named whole wins over a glob (server/commands/* and one header)
            exact = [i for i in hits if f in patterns[i]]
            hits = exact if len(exact) == 1 else hits
        if len(hits) != 1:
            problems.append("%s: %s layer in server/layers.txt" %
                            (f, "no" if not hits else "more than one (%s)" %
                             ", ".join(layers[i] for i in hits)))
            continue
        layer_of[f] = hits[0]
    seen_allowed = set()
    for top in ("server", "structures"):
        for f in sorted(files(top)):
            for n, line in enumerate(open(os.path.join(root, f), errors="replace"), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                if inc.startswith("tools/"):
                    problems.append("%s:%d: includes %s (the server and the structures never "
                                    "include a CLI tool's folder)" % (f, n, inc))
                if top != "server" or f not in layer_of or inc not in layer_of:
                    continue
                if layer_of[inc] > layer_of[f]:
                    if (f, inc) in allowed:
                        seen_allowed.add((f, inc))
                    else:
                        problems.append("%s:%d: includes %s, a file of layer '%s' above its own "
                                        "'%s' (server/layers.txt)" %
                                        (f, n, inc, layers[layer_of[inc]], layers[layer_of[f]]))
    for edge, n in sorted(allowed.items(), key=lambda kv: kv[1]):
        if edge not in seen_allowed:
            problems.append("server/layers.txt:%d: %s -> %s is no longer an upward include: "
                            "remove the entry" % (n, edge[0], edge[1]))
    for p in problems:
        print(p)
    print("layers: %d files in %d layers, %d allowed upward includes, %d problem(s)" %
          (len(layer_of), len(layers), len(seen_allowed), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
