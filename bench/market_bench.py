#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Market benchmark driver: the full post/claim/key/result/review/judge-key/verdict cycle at
1, 10 and 50 concurrent clients on SQLite and on a private PostgreSQL cluster, each run
followed at once by its floor (the same writes as bare transactions), so every ratio comes
from one interleaved run. Prints a Markdown table and writes JSON lines with --out.

  bench/market_bench.py [--build build] [--cycles 20,5,2] [--out results.jsonl]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PG = "/usr/lib/postgresql/15/bin"


def pg_db(socket_dir, name):
    subprocess.run([f"{PG}/psql" if os.path.exists(f"{PG}/psql") else "psql", "-q", "-h", socket_dir, "-U",
                    "corral", "-d", "postgres", "-c", f"CREATE DATABASE {name}"], check=True)
    return f"postgresql:///{name}?host={socket_dir}&user=corral"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--clients", default="1,10,50")
    ap.add_argument("--cycles", default="30,6,2", help="cycles per client, one per --clients entry")
    ap.add_argument("--engines", default="sqlite,postgresql")
    ap.add_argument("--out")
    args = ap.parse_args()
    bench = os.path.join(args.build, "corral-market-bench")
    corral = os.path.join(args.build, "corral")
    for f in (bench, corral):
        if not os.access(f, os.X_OK):
            sys.exit(f"market_bench: {f} missing (cmake --build {args.build} --target corral corral-market-bench)")
    clients = [int(c) for c in args.clients.split(",")]
    cycles = [int(c) for c in args.cycles.split(",")]
    engines = args.engines.split(",")
    tmp = tempfile.mkdtemp(prefix="corral-market-bench-")
    os.chmod(tmp, 0o755)
    pg_dir = os.path.join(tmp, "pg")
    rows = []
    try:
        if "postgresql" in engines:
            if not os.path.exists(f"{PG}/initdb"):
                sys.exit("market_bench: PostgreSQL 15 is missing (scripts/bootstrap.sh installs it)")
            subprocess.run([os.path.join(ROOT, "tests/market/pg_cluster.sh"), "start", pg_dir], check=True)
        load = os.getloadavg()
        n = 0
        for c, m in zip(clients, cycles):
            for e in engines:
                n += 1
                if e == "sqlite":
                    url = f"sqlite:{tmp}/bench-{n}.db"
                else:
                    url = pg_db(pg_dir, f"bench{n}")
                run_tmp = os.path.join(tmp, f"run{n}")
                os.mkdir(run_tmp)
                r = subprocess.run([bench, "--corral", corral, "--db", url, "--clients", str(c), "--cycles", str(m),
                                    "--tmp", run_tmp], capture_output=True, text=True, timeout=1800)
                if r.returncode != 0:
                    sys.exit(f"market_bench: {e} x{c} failed: {r.stderr.strip()} {r.stdout.strip()}")
                row = json.loads(r.stdout)
                row["loadavg_before"] = os.getloadavg()[0]
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    finally:
        if os.path.exists(pg_dir):
            subprocess.run([os.path.join(ROOT, "tests/market/pg_cluster.sh"), "stop", pg_dir])
        shutil.rmtree(tmp, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    steps = ["post", "claim", "key", "result", "review", "judge-key", "verdict"]
    print(f"load average at start {load[0]:.1f}; {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("| db | clients | tasks | tasks/s | floor tasks/s | ratio | " +
          " | ".join(f"{s} p50/p99 ms" for s in steps) + " |")
    print("|---" * (6 + len(steps)) + "|")
    for r in rows:
        lat = " | ".join(f"{r['ms'][s]['p50']:.1f}/{r['ms'][s]['p99']:.1f}" for s in steps)
        print(f"| {r['db']} | {r['clients']} | {int(r['tasks'])} | {r['tasks_per_s']:.1f} | "
              f"{r['floor_tasks_per_s']:.1f} | {r['ratio']:.2f} | {lat} |")


if __name__ == "__main__":
    main()
