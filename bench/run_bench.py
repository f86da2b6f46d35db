#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmarks of `corral run` and the audit record (issue #3).

  runner overhead per tool call: a replay transcript of N read calls (no model time, no
      command time), minus a 1-call run, divided by N-1; with the default per-entry fdatasync
      and with the trace on tmpfs (where fdatasync is free) to separate corral's own cost
  trace append rate: entries/s through the real TraceWriter (corral-audit-testwriter)
  verify throughput: `corral verify` on a large trace, MB/s, next to `sha256sum` on the same
      file (the floor: verify hashes every byte once and parses every line)

usage: bench/run_bench.py --corral build/corral --testwriter build/src/audit/corral-audit-testwriter
                          [--calls 200] [--out docs/benchmarks-run.md]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time


def run_once(corral, base, calls, env):
    ws = tempfile.mkdtemp(dir=base)
    with open(os.path.join(ws, "in.txt"), "w") as f:
        f.write("x" * 1000)
    replies = [{"tool_calls": [{"name": "read", "arguments": {"path": "in.txt"}}]} for _ in range(calls - 1)]
    replies.append({"tool_calls": [{"name": "finish", "arguments": {"summary": "done"}}]})
    json.dump({"version": 1, "replies": replies}, open(os.path.join(ws, "t.json"), "w"))
    json.dump({"version": 1, "task": "bench", "model": {"provider": "replay", "transcript": "t.json"},
               "inputs": ["in.txt"], "outputs": ["out.txt"],
               "budgets": {"max_turns": 10000, "max_model_calls": 10000}},
              open(os.path.join(ws, "m.json"), "w"))
    t0 = time.perf_counter()
    subprocess.run([corral, "run", os.path.join(ws, "m.json")], check=True, stdout=subprocess.DEVNULL, env=env)
    dt = time.perf_counter() - t0
    shutil.rmtree(ws)
    return dt


def per_call_ms(corral, base, calls, reps, env):
    big = statistics.median(run_once(corral, base, calls, env) for _ in range(reps))
    small = statistics.median(run_once(corral, base, 1, env) for _ in range(reps))
    return (big - small) / (calls - 1) * 1000, small * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corral", default="build/corral")
    ap.add_argument("--testwriter", default="build/src/audit/corral-audit-testwriter")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    env = dict(os.environ, CORRAL_GIT="none")
    rows = []
    disk = tempfile.mkdtemp(prefix="corral-runbench-", dir=os.environ.get("BENCH_DISK_DIR", "/var/tmp"))
    shm = tempfile.mkdtemp(prefix="corral-runbench-", dir="/dev/shm")
    try:
        for label, base in (("disk (one tool call per turn: one fdatasync per call, before the next model call)", disk), ("tmpfs", shm)):
            per, fixed = per_call_ms(a.corral, base, a.calls, a.reps, env)
            rows.append(("runner overhead per tool call, " + label, f"{per:.3f} ms", "goal < 2 ms",
                         f"fixed cost of a 1-call run {fixed:.1f} ms"))
        for label, base in (("disk", disk), ("tmpfs", shm)):
            ws = tempfile.mkdtemp(dir=base)
            n = 20000
            t0 = time.perf_counter()
            subprocess.run([a.testwriter, ws, "--entries", str(n)], check=True, stdout=subprocess.DEVNULL)
            dt = time.perf_counter() - t0
            rows.append((f"trace append rate, {label}", f"{n / dt:,.0f} entries/s", "", "each entry: verify-before-first-append, one write(2), fdatasync"))
        # verify throughput on a large trace (~100 MB) built on tmpfs
        ws = tempfile.mkdtemp(dir=shm)
        subprocess.run([a.testwriter, ws, "--entries", "100000"], check=True, stdout=subprocess.DEVNULL)
        trace = os.path.join(ws, ".corral", "trace.jsonl")
        size = os.path.getsize(trace)
        vt = statistics.median(timed([a.corral, "verify", ws]) for _ in range(3))
        st = statistics.median(timed(["sha256sum", trace]) for _ in range(3))
        rows.append(("verify throughput", f"{size / vt / 1e6:,.0f} MB/s", f"sha256sum {size / st / 1e6:,.0f} MB/s",
                     f"{size / 1e6:.1f} MB, 100,000 lines; ratio {st / vt:.2f}x of sha256sum's speed"))
    finally:
        shutil.rmtree(disk, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)
    out = ["| measure | corral | reference | notes |", "|---|---|---|---|"]
    out += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |" for r in rows]
    text = "\n".join(out) + "\n"
    print(text)
    if a.out:
        # Only the table is generated: an existing file keeps its hand-written text around it.
        try:
            old = open(a.out).read()
            start = old.index("| measure | corral |")
            end = old.find("\n\n", start)
            text = old[:start] + text.strip() + (old[end:] if end >= 0 else "\n")
        except (OSError, ValueError):
            pass
        open(a.out, "w").write(text)


def timed(argv):
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
