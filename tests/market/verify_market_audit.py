#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An independent verifier of the market's audit chain, written from docs/market-protocol.md
("Audit trail") with Python's hashlib, json, csv and sqlite3 (or the psql CLI) only.

  verify_market_audit.py sqlite:PATH | postgresql://...

Prints "ok ENTRIES HEAD" and exits 0 when the chain is whole; prints the first break and
exits 1 otherwise.
"""
import csv
import hashlib
import io
import json
import sqlite3
import subprocess
import sys

QUERY_EVENTS = ("SELECT seq, prev, hash, id, at, kind, agent, task, amount FROM events"
                " WHERE seq IS NOT NULL ORDER BY seq")
QUERY_HEAD = "SELECT entries, head, unchained FROM audit_head WHERE id = 1"
QUERY_NULLS = "SELECT COUNT(*) FROM events WHERE seq IS NULL"


def rows(url, query):
    if url.startswith("sqlite:"):
        con = sqlite3.connect(f"file:{url[7:]}?mode=ro", uri=True)
        try:
            return [[str(v) for v in r] for r in con.execute(query)]
        finally:
            con.close()
    out = subprocess.run(["psql", "-X", "-q", "-d", url, "-c", f"COPY ({query}) TO STDOUT WITH CSV"],
                         check=True, capture_output=True, text=True).stdout
    return [r for r in csv.reader(io.StringIO(out))]


def line(seq, prev, event_id, at, kind, agent, task, amount):
    entry = {"v": 1, "seq": seq, "prev": prev, "ts_ms": at * 1000, "type": kind,
             "data": {"agent": agent, "amount": amount, "event": event_id, "task": task}}
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def main():
    url = sys.argv[1]
    entries, head_row, unchained = rows(url, QUERY_HEAD)[0]
    if int(rows(url, QUERY_NULLS)[0][0]) != int(unchained):
        print("break: an event without a chain position")
        return 1
    head = "0" * 64
    n = 0
    for seq, prev, h, event_id, at, kind, agent, task, amount in rows(url, QUERY_EVENTS):
        if int(seq) != n:
            print(f"break: seq {n} missing")
            return 1
        if prev != head:
            print(f"break: seq {n} prev")
            return 1
        digest = hashlib.sha256(line(n, prev, event_id, int(at), kind, agent, task, int(amount)).encode()).hexdigest()
        if digest != h:
            print(f"break: seq {n} hash")
            return 1
        head = h
        n += 1
    if n != int(entries) or head != head_row:
        print("break: head row")
        return 1
    print(f"ok {n} {head}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
