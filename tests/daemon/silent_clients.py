#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# N connections to the daemon's socket that never send a byte, then ordinary health requests
# beside them. Prints one JSON object: the first answer's status, error code and seconds, whether
# the silent connections were still unanswered then, and the status once they have closed.
import json
import socket
import sys
import time

path, n, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def health(timeout: float = 10.0) -> tuple[int, str]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: corral\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    code = ""
    if body:
        try:
            code = json.loads(body).get("error", {}).get("code", "")
        except ValueError:
            code = "?"
    return int(head.split()[1]), code


silent = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    silent.append(s)
# Until the answer asked for comes (the cap is reached once the daemon has taken all of them),
# each attempt answered at once either way; a stalled daemon times the client out instead.
t0 = time.monotonic()
status, code = health()
while status != want and time.monotonic() - t0 < 20:
    status, code = health()
seconds = time.monotonic() - t0
pending = 0
for s in silent:
    s.setblocking(False)
    try:
        if s.recv(1) == b"":
            continue
    except BlockingIOError:
        pending += 1
for s in silent:
    s.close()
t1 = time.monotonic()
after, _ = health()
while after != 200 and time.monotonic() - t1 < 20:
    time.sleep(0.05)
    after, _ = health()
print(json.dumps({"status": status, "code": code, "seconds": round(seconds, 3), "silent_pending": pending, "after": after}))
