#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Compatibility suite: real programs and CPython's own regression tests, run unchanged inside
# `corral exec` and inside bubblewrap's typical agent line in the same run. Fails when
# something passes under bubblewrap but not under corral, unless docs/compat.md lists it
# with the claim that requires the difference.
import argparse
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

PY = "/usr/bin/python3"
# The CPython modules of issue #26: process, terminal, socket, file and memory interfaces.
MODULES = ["test_os", "test_subprocess", "test_socket", "test_fcntl", "test_pty", "test_resource",
           "test_signal", "test_select", "test_mmap", "test_posix", "test_shutil", "test_tempfile"]


def bwrap_line(work):
    # bubblewrap as agent sandboxes typically run it: the host read-only, fresh /dev, /proc
    # and /tmp, every namespace unshared (no network), a new session, gone with its parent,
    # and one writable work directory.
    return ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--bind", work, work, "--chdir", work, "--unshare-all", "--new-session", "--die-with-parent",
            "--setenv", "HOME", work, "--"]


class Runner:
    def __init__(self, name, corral=None):
        self.name = name
        self.corral = corral

    def run(self, argv, work, timeout, stdin=subprocess.DEVNULL):
        """Runs argv with `work` as its working directory (copied in for corral, bound for
        bwrap). Returns (exit code, stdout, stderr) and, for corral, the changed files
        are not copied back: only stdout carries results."""
        if self.name == "corral":
            cmd = [self.corral, "exec", "--workspace", work, "--timeout", "%ds" % timeout,
                   "--tmp-size", "512M", "--env", "TERM=dumb", "--"] + argv
        else:
            cmd = bwrap_line(work) + argv
        try:
            p = subprocess.run(cmd, stdin=stdin, capture_output=True, timeout=timeout + 30)
        except subprocess.TimeoutExpired as e:
            return 124, e.stdout or b"", (e.stderr or b"") + b"\n[compat: timed out]"
        return p.returncode, p.stdout, p.stderr


# ---- CPython's regression tests -------------------------------------------------------------

# unittest's verbose lines: "test_x (test.test_os.Class.test_x) ... ok". A test with a
# docstring has it on the next line, before " ... ok"; a test that prints has its verdict on a
# later line of its own.
CASE = re.compile(r"^(\w+) \((test\.[\w.]+)\)(.*)$")
VERDICT = re.compile(r"(?:^|\.\.\. )(ok|FAIL|ERROR|skipped\b.*|expected failure|unexpected success)$")


def verdict(text):
    if text in ("ok", "expected failure"):
        return "pass"
    if text.startswith("skipped"):
        return "skip"
    if text in ("FAIL", "ERROR", "unexpected success"):
        return "fail"
    return None


def parse_verbose(log):
    """{test id: "pass" | "fail" | "skip"} from regrtest -v output."""
    results, pending = {}, None
    for line in log.splitlines():
        m = CASE.match(line)
        if m:
            tid = m.group(2)
            if not tid.endswith("." + m.group(1)):
                tid = tid + "." + m.group(1)
            pending = tid
            line = m.group(3)
        if pending:
            v = VERDICT.search(line.strip())
            if v and verdict(v.group(1)):
                results[pending], pending = verdict(v.group(1)), None
    return results


def cpython_results(runner, modules, jobs, timeout):
    """{test id: status} for every test regrtest ran (None when it ran none), plus its log."""
    work = tempfile.mkdtemp(prefix="compat-cpython-")
    os.chmod(work, 0o755)
    try:
        argv = [PY, "-m", "test", "-v", "-j%d" % jobs, "--timeout", str(timeout)] + modules
        code, out, err = runner.run(argv, work, timeout + 60)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log = out.decode("utf-8", "replace")
    results = parse_verbose(log)
    tail = (log[-3000:] + err.decode("utf-8", "replace")[-1000:])
    return (results or None), tail


# ---- real tools -------------------------------------------------------------------------------

MAKEFILE = "hello: hello.o greet.o\n\tgcc -o $@ $^\n%.o: %.c greet.h\n\tgcc -O2 -Wall -c $<\n"
FILES = {
    "hello.c": '#include <stdio.h>\n#include "greet.h"\nint main(void) { printf("%s\\n", greet()); return 0; }\n',
    "greet.c": '#include "greet.h"\nconst char *greet(void) { return "hello from make"; }\n',
    "greet.h": "const char *greet(void);\n",
    "Makefile": MAKEFILE,
    "Hello.java": 'public class Hello { public static void main(String[] a) {'
                  ' System.out.println("hello from " + System.getProperty("java.version")); } }\n',
}

TOOLS = [
    # (name, argv, what stdout must contain)
    ("script -qc tty /dev/null", ["script", "-qc", "tty", "/dev/null"], "/dev/pts/"),
    ("node os.networkInterfaces()",
     ["node", "-e", "console.log(Object.keys(require('os').networkInterfaces()).join(','))"], "lo"),
    ("python3 pty.spawn",
     [PY, "-c", "import pty, sys; s = pty.spawn(['/bin/sh', '-c', 'tty; exit 3']); sys.exit(0 if s >> 8 == 3 else 1)"],
     "/dev/pts/"),
    ("python3 os.openpty", [PY, "-c", "import os; m, s = os.openpty(); print(os.ttyname(s))"], "/dev/pts/"),
    ("python3 getservbyname", [PY, "-c", "import socket; print(socket.getservbyname('https', 'tcp'))"], "443"),
    ("python3 if_nameindex", [PY, "-c", "import socket; print(socket.if_nameindex())"], "'lo'"),
    ("python3 pipesize", [PY, "-c", "import subprocess; p = subprocess.run(['true'], pipesize=65536 * 4, "
                          "stdout=subprocess.PIPE); print('pipesize-ok', p.returncode)"], "pipesize-ok 0"),
    ("git init, commit, log",
     ["/bin/sh", "-c", "git init -q repo && cd repo && echo hi > f && git add f && "
      "git -c user.name=c -c user.email=c@example.invalid commit -qm first && git log --oneline | wc -l"], "1"),
    ("make and gcc", ["/bin/sh", "-c", "make -s hello && ./hello"], "hello from make"),
]
# Debian's OpenJDK reads java.security through a symlink into /etc/java-N-openjdk: it starts
# only where the sandbox shows that directory.
if shutil.which("javac"):
    TOOLS.append(("javac and java", ["/bin/sh", "-c", "javac Hello.java && java -Xmx64m Hello"], "hello from "))


def tool_result(runner, argv, want, timeout):
    work = tempfile.mkdtemp(prefix="compat-tool-")
    os.chmod(work, 0o755)
    try:
        for name, text in FILES.items():
            with open(os.path.join(work, name), "w") as f:
                f.write(text)
        code, out, err = runner.run(argv, work, timeout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = out.decode("utf-8", "replace")
    ok = code == 0 and want in text
    return ("pass" if ok else "fail"), "exit %d stdout %r stderr %r" % (code, text[-300:], err.decode("utf-8", "replace")[-600:])


# ---- docs/compat.md -----------------------------------------------------------------------------

def known_differences(doc, claim_ids):
    """The table rows of docs/compat.md whose corral and bubblewrap columns differ: {tool or
    test: why}. Each must name a claim id that exists in claims/."""
    known, problems = {}, []
    for line in open(doc, encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 4 or set(cells[0]) <= set("-: ") or cells[0] == "Tool or test":
            continue
        quoted = re.match(r"`([^`]+)`", cells[0])  # the id (or glob) in backticks, then any note
        name = quoted.group(1) if quoted else cells[0]
        if cells[1] == cells[2]:
            continue  # the same under both: documentation, not a difference
        named = [c for c in re.findall(r"`([a-z]+\.[a-z0-9-]+)`", cells[3]) if c in claim_ids]
        if not named:
            problems.append("docs/compat.md: %s differs but names no claim id of claims/" % name)
        known[name] = cells[3]
    return known, problems


def claim_ids(claims_dir):
    ids = set()
    for f in os.listdir(claims_dir):
        if f.endswith(".toml"):
            ids.update(re.findall(r'^id = "([^"]+)"', open(os.path.join(claims_dir, f), encoding="utf-8").read(), re.M))
    return ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corral", required=True)
    ap.add_argument("--source", required=True, help="the source tree (docs/compat.md, claims/)")
    ap.add_argument("--suite", choices=["tools", "cpython"], required=True)
    ap.add_argument("--modules", nargs="*", default=MODULES)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=240)
    args = ap.parse_args()

    if shutil.which("bwrap") is None:
        print("compat: SKIP: no bwrap (scripts/bootstrap.sh installs bubblewrap)")
        return 77
    probe = subprocess.run(bwrap_line("/tmp") + ["/bin/true"], capture_output=True)
    if probe.returncode != 0:
        print("compat: SKIP: bubblewrap cannot run here: %s" % probe.stderr.decode(errors="replace").strip())
        return 77

    known, problems = known_differences(os.path.join(args.source, "docs/compat.md"),
                                        claim_ids(os.path.join(args.source, "claims")))
    runners = [Runner("corral", args.corral), Runner("bwrap")]
    rows = {}  # name -> {runner: status}
    notes = {}
    started = time.monotonic()
    if args.suite == "tools":
        if shutil.which("node") is None:
            print("compat: SKIP: no node (scripts/bootstrap.sh installs nodejs)")
            return 77
        for name, argv, want in TOOLS:
            for r in runners:
                status, detail = tool_result(r, argv, want, 60)
                rows.setdefault(name, {})[r.name] = status
                notes.setdefault(name, {})[r.name] = detail
    else:
        if not os.path.exists("/usr/lib/python3.11/test/test_pty.py"):
            print("compat: SKIP: no CPython test suite (scripts/bootstrap.sh installs libpython3.11-testsuite)")
            return 77
        for r in runners:
            results, log = cpython_results(r, args.modules, args.jobs, args.timeout)
            if results is None:
                problems.append("%s: regrtest reported no test; its log ends:\n%s" % (r.name, log))
                continue
            for tid, status in results.items():
                rows.setdefault(tid, {})[r.name] = status
    elapsed = time.monotonic() - started

    def listed_as(name):  # a row may be a glob: test.test_socket.*UDPLITE*
        return next((k for k in known if fnmatch.fnmatchcase(name, k)), None)

    regressions, listed, stale = [], [], []
    for name in sorted(rows):
        got = rows[name]
        c, b = got.get("corral", "missing"), got.get("bwrap", "missing")
        row = listed_as(name)
        if c == "fail" or (c == "missing" and b == "pass"):
            if b == "pass" and row is None:
                regressions.append((name, c, b))
            elif row is not None:
                listed.append((row, c, b))
        elif row is not None and c == "pass" and b == "pass":
            stale.append(name)
    counts = {r.name: {} for r in runners}
    for got in rows.values():
        for rn, st in got.items():
            counts[rn][st] = counts[rn].get(st, 0) + 1
    print("compat %s: %d entries in %.0fs; corral %s; bwrap %s" % (args.suite, len(rows), elapsed, counts["corral"], counts["bwrap"]))
    per_row = {}
    for row, c, b in listed:
        per_row.setdefault((row, c, b), 0)
        per_row[(row, c, b)] += 1
    for (row, c, b), n in sorted(per_row.items()):
        print("  known difference (docs/compat.md): %s: %d test(s), corral %s, bwrap %s" % (row, n, c, b))
    for name in stale:
        print("  note: docs/compat.md lists %s, which passed under corral in this run" % name)
    for p in problems:
        print("FAIL: " + p)
    for name, c, b in regressions:
        print("FAIL: %s: corral %s, bubblewrap %s, and docs/compat.md does not list it" % (name, c, b))
        if name in notes:
            print("      corral: " + notes[name]["corral"])
    return 1 if regressions or problems else 0


if __name__ == "__main__":
    sys.exit(main())
