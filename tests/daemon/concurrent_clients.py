# SPDX-License-Identifier: Apache-2.0
"""200 (or N) API clients at once over the daemon's UNIX socket, each on its own connection.

    concurrent_clients.py SOCKET SESSION N

Every client waits at a barrier, then sends one request: GET /v1/health, GET /v1/sessions,
GET /v1/sessions/SESSION, or POST a command to SESSION (then polls it until it has exited
with the exit status it asked for). Prints one JSON line: counts per kind, the errors (at
most 20), the slowest request in ms. Exit 0 only when every client was served as expected.
"""
import http.client
import json
import socket
import sys
import threading
import time

sock_path, session, n = sys.argv[1], sys.argv[2], int(sys.argv[3])


class UnixConnection(http.client.HTTPConnection):
    def __init__(self):
        super().__init__("corral", timeout=120)

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(sock_path)


def call(conn, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data else {}
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse()
    return r.status, json.loads(r.read() or b"null")


barrier = threading.Barrier(n)
lock = threading.Lock()
counts, errors, slowest = {}, [], [0.0]


def client(i):
    kind = ("health", "list", "show", "exec")[i % 4]
    try:
        conn = UnixConnection()
        conn.connect()
        barrier.wait(timeout=60)
        t0 = time.monotonic()
        if kind == "health":
            status, body = call(conn, "GET", "/v1/health")
            ok = status == 200
        elif kind == "list":
            status, body = call(conn, "GET", "/v1/sessions")
            ok = status == 200 and any(s["id"] == session for s in body["sessions"])
        elif kind == "show":
            status, body = call(conn, "GET", "/v1/sessions/" + session)
            ok = status == 200 and body["state"] == "running"
        else:
            code = i % 100
            status, body = call(conn, "POST", "/v1/sessions/%s/commands" % session,
                                {"argv": ["sh", "-c", "exit %d" % code]})
            ok = status == 201
            if ok:
                path = "/v1/sessions/%s/commands/%d" % (session, body["id"])
                while True:
                    status, body = call(conn, "GET", path)
                    if status != 200 or body["state"] != "running":
                        break
                    time.sleep(0.05)
                ok = status == 200 and body["state"] == "exited" and body.get("exit_code") == code
        ms = (time.monotonic() - t0) * 1000
        with lock:
            counts[kind] = counts.get(kind, 0) + (1 if ok else 0)
            slowest[0] = max(slowest[0], ms)
            if not ok:
                errors.append("%s: %s %s" % (kind, status, json.dumps(body)[:200]))
        conn.close()
    except Exception as e:  # a refused, reset or timed-out connection is a failure to serve
        with lock:
            errors.append("%s: %s: %s" % (kind, type(e).__name__, e))


threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"served": counts, "errors": errors[:20], "error_count": len(errors), "slowest_ms": round(slowest[0])}))
sys.exit(0 if not errors else 1)
