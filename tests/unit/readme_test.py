#!/usr/bin/env python3
"""The newcomer test: runs the shell examples of README.md's tour and checks that each prints what
the README shows.

  readme_test.py BUILD_DIR README.md

Every "$ command" line inside a ``` block is an example; the lines after it, up to the next "$ "
line or the end of the block, are its output as shown. `./kvlab serve` starts kvlab-server on a
free port (all examples' port 7311 is replaced by it), and the server is stopped by pid at the
end. How each output is compared:
  - redis-cli and shell pipelines into it: exactly.
  - kvlab-server's banner: each line shown must appear in the real banner, after digits, the git
    hash and the machine description are masked (they differ by build and by machine).
  - kvlab load: the header lines exactly; one row per rate, starting with the target rate.
  - kvlab bench (run shorter, --duration 200ms --reps 1): the column header exactly, and a
    "valid" row for every backend shown.
  - kvlab topo report: the same field labels, line by line.
Standard library only. Exit 0 when every example matches, 1 with the differences otherwise.
"""
import os
import re
import shlex
import socket
import subprocess
import sys
import time

PORT_IN_README = "7311"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def examples(readme):
    """[(command, [expected output lines])] from the README's code blocks."""
    out, in_block, cmd, lines = [], False, None, []
    with open(readme, encoding="utf-8") as f:
        text = f.read().splitlines()
    i = 0
    while i < len(text):
        line = text[i]
        if line.startswith("```"):
            if in_block and cmd is not None:
                out.append((cmd, lines))
            in_block, cmd, lines = not in_block, None, []
        elif in_block and line.startswith("$ "):
            if cmd is not None:
                out.append((cmd, lines))
            cmd, lines = line[2:], []
            while cmd.endswith("\\") and i + 1 < len(text):
                i += 1
                cmd = cmd[:-1].rstrip() + " " + text[i].strip()
        elif in_block and cmd is not None:
            lines.append(line)
        i += 1
    return out


def mask_banner(line):
    line = re.sub(r"\(git [0-9a-f]+\)", "(git H)", line)
    if line.startswith("machine:"):
        return "machine:"
    return re.sub(r"\d+", "N", line)


class Runner:
    def __init__(self, build, readme):
        self.build = build
        self.port = free_port()
        self.server = None
        self.failures = []
        self.readme = readme

    def fail(self, cmd, why, shown, got):
        self.failures.append("example: $ %s\n%s\n--- README shows:\n%s\n--- it printed:\n%s" %
                             (cmd, why, "\n".join(shown), got))

    def run_shell(self, cmd, timeout=60):
        r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout

    def kvlab_cli(self, cmd):
        return cmd.replace("./kvlab ", shlex.quote(os.path.join(self.build, "tools/cli/kvlab")) +
                           " ", 1)

    def serve(self, cmd, shown):
        args = shlex.split(cmd)[2:]
        exe = os.path.join(self.build, "server", "kvlab-server")
        log = open(os.path.join(self.build, "readme-test-server.log"), "w+")
        self.server = subprocess.Popen([exe] + args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        text = ""
        while time.time() < deadline:
            log.seek(0)
            text = log.read()
            if "ready to accept connections" in text or self.server.poll() is not None:
                break
            time.sleep(0.1)
        got = {mask_banner(l) for l in text.splitlines()}
        missing = [l for l in shown if l.strip() and mask_banner(l) not in got]
        if missing or "ready to accept connections" not in text:
            self.fail(cmd, "banner lines not printed: %s" % missing, shown, text)

    def redis_cli(self, cmd, shown):
        rc, got = self.run_shell(cmd)
        if got.rstrip("\n").split("\n") != shown:
            self.fail(cmd, "output differs (exit %d)" % rc, shown, got)

    def load(self, cmd, shown):
        rc, got = self.run_shell(self.kvlab_cli(cmd))
        lines = got.rstrip("\n").split("\n")
        if rc != 0:
            self.fail(cmd, "exit status %d" % rc, shown, got)
            return
        for want in shown:
            if want.strip() and not re.match(r"\s*[\d,]+\s", want):  # a header: exactly
                if want not in lines:
                    self.fail(cmd, "header line missing: %r" % want, shown, got)
        targets = [w.split()[0] for w in shown if re.match(r"\s*[\d,]+\s", w)]
        rows = [l.split()[0] for l in lines if re.match(r"\s*[\d,]+\s", l)]
        if targets != rows:
            self.fail(cmd, "rates %s, README shows %s" % (rows, targets), shown, got)

    def bench(self, cmd, shown):
        quick = re.sub(r"--duration \S+", "--duration 200ms", self.kvlab_cli(cmd))
        quick = re.sub(r"--reps \S+", "--reps 1", quick)
        rc, got = self.run_shell(quick, timeout=120)
        lines = got.split("\n")
        if rc != 0 or shown[0] not in lines:
            self.fail(cmd, "exit status %d or no column header" % rc, shown, got)
            return
        for want in shown[1:]:
            name = want.split()[0]
            if not any(l.split()[:1] == [name] and l.rstrip().endswith("valid") for l in lines):
                self.fail(cmd, "no valid row for %s" % name, shown, got)

    def topo(self, cmd, shown):
        rc, got = self.run_shell(self.kvlab_cli(cmd))
        labels = [l.split()[0] for l in got.rstrip("\n").split("\n") if l.strip()]
        want = [l.split()[0] for l in shown if l.strip()]
        if rc != 0 or labels != want:
            self.fail(cmd, "field labels %s, README shows %s" % (labels, want), shown, got)

    def run(self):
        todo = examples(self.readme)
        if not todo:
            self.failures.append("no examples found in %s" % self.readme)
        try:
            for cmd, shown in todo:
                while shown and not shown[-1].strip():
                    shown = shown[:-1]
                cmd = cmd.replace(PORT_IN_README, self.port)
                words = cmd.split()
                if words[:2] == ["./kvlab", "serve"]:
                    self.serve(cmd, shown)
                elif "redis-cli" in words:
                    self.redis_cli(cmd, shown)
                elif words[:2] == ["./kvlab", "load"]:
                    self.load(cmd, shown)
                elif words[:2] == ["./kvlab", "bench"]:
                    self.bench(cmd, shown)
                elif words[:3] == ["./kvlab", "topo", "report"]:
                    self.topo(cmd, shown)
                else:
                    self.failures.append("example this test cannot check: $ %s" % cmd)
                print("checked: $ %s" % cmd)
        finally:
            if self.server is not None:
                self.server.terminate()
                try:
                    self.server.wait(10)
                except subprocess.TimeoutExpired:
                    self.server.kill()
        for f in self.failures:
            print("\nFAIL " + f)
        return 1 if self.failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(Runner(sys.argv[1], sys.argv[2]).run())
