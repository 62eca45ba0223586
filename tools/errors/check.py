#!/usr/bin/env python3
"""Checks that every Redis error text of kvlab-server lives in the errors module
(server/protocol/errors.hpp): no string literal under server/ outside server/protocol/errors.*
starts with a Redis error code ("ERR ", "-ERR ", "WRONGTYPE ", "NOGROUP ", ...).

  tools/errors/check.py [ROOT]          exit 0 when clean, 1 with one line per violation

Two lists below excuse literals, and both may only shrink: the check also fails when an entry no
longer matches anything, so a list cannot keep a file or a text that has since been cleaned.
Comments are not code: a text quoted in a comment is not a literal."""
import os
import re
import sys

# The codes kvlab-server replies with (the first word of an error line), with or without the '-'
# of a raw RESP line. A literal counts when it starts with a code and a blank: an error line
# always has a message, and the bare word ("ASK", "MOVED") may name a thing rather than reply.
CODES = ("ERR WRONGTYPE NOSCRIPT NOTBUSY UNKILLABLE BUSY BUSYGROUP BUSYKEY NOGROUP EXECABORT "
         "TRYAGAIN UNBLOCKED OOM NOAUTH NOPERM WRONGPASS NOPROTO DENIED NOREPLICAS LOADING "
         "MISCONF READONLY MASTERDOWN INVALIDOBJ IOERR CROSSSLOT CLUSTERDOWN MOVED ASK "
         "TESTFAILED").split()
ERROR_LITERAL = re.compile(r"-?(?:%s) " % "|".join(CODES))

# The errors module itself: where the texts belong.
HOME = ("server/protocol/errors.hpp", "server/protocol/errors.cpp")

# Not yet converted: files whose literals wait for another change to land (each row is a file
# path). A listed file that no longer has a literal fails the check: remove its row. Empty: every
# file is converted.
NOT_YET_CONVERTED = []

# Texts that must be built at run time where they are used, as (file, literal as written between
# the quotes, reason). Keep it short: a text with arguments is a function in errors.hpp, so an
# entry is for what cannot go there. An entry that no longer matches fails the check.
ALLOWED = [
]


def literals(text):
    """Yields (line, body) for each string literal of C++ source `text`, body as written between
    the quotes (escapes kept). Skips comments, character literals and digit separators; raw
    strings yield their body."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and not (
                i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delim = ")" + text[i + 2:open_paren] + '"'
            j = text.find(delim, open_paren)
            j = n if j < 0 else j
            yield line, text[open_paren + 1:j]
            line += text.count("\n", i, j)
            i = j + len(delim)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            yield line, text[i + 1:j]
            i = j + 1
        elif c == "'":
            if i > 0 and text[i - 1].isalnum():  # 1'000'000 (a u8'x' prefix never occurs here)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    problems = []
    pending = {f: 0 for f in NOT_YET_CONVERTED}
    allowed = {entry[:2]: 0 for entry in ALLOWED}
    scanned = 0
    for d, _, fs in os.walk(os.path.join(root, "server")):
        for name in fs:
            if not name.endswith((".cpp", ".hpp", ".h", ".cc")):
                continue
            f = os.path.relpath(os.path.join(d, name), root)
            if f in HOME:
                continue
            scanned += 1
            text = open(os.path.join(root, f), errors="replace").read()
            for n, body in literals(text):
                if not ERROR_LITERAL.match(body):
                    continue
                if f in pending:
                    pending[f] += 1
                elif (f, body) in allowed:
                    allowed[(f, body)] += 1
                else:
                    problems.append('%s:%d: error text "%s" outside server/protocol/errors.hpp: '
                                    "name it there (kName, or a function for a text with "
                                    "arguments)" % (f, n, body[:60]))
    for f, count in pending.items():
        if not os.path.exists(os.path.join(root, f)):
            problems.append("%s: listed as not yet converted but does not exist: remove it from "
                            "NOT_YET_CONVERTED (tools/errors/check.py)" % f)
        elif count == 0:
            problems.append("%s: listed as not yet converted but has no error literal left: "
                            "remove it from NOT_YET_CONVERTED (tools/errors/check.py)" % f)
    for (f, body), count in allowed.items():
        if count == 0:
            problems.append('%s: allowed literal "%s" no longer occurs: remove it from ALLOWED '
                            "(tools/errors/check.py)" % (f, body))
    for p in sorted(problems):
        print(p)
    print("errors: %d files checked, %d literal(s) waiting in %d not-yet-converted file(s), "
          "%d allowed, %d problem(s)" %
          (scanned, sum(pending.values()), len(pending), sum(allowed.values()), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
