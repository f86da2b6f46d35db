# SPDX-License-Identifier: Apache-2.0
"""A raw client of a session terminal (docs/api.md, Terminals): HTTP/1.1 over the daemon's
UNIX socket, POST a tty command, GET .../terminal with Upgrade, then frames by hand.

    terminal_client.py SOCKET SESSION MODE [ARGS]

Modes (each prints one JSON line per result on stdout):
  run ROWS COLS INPUT ARGV_JSON   start ARGV on a ROWSxCOLS terminal, send INPUT (a data frame),
                                  print {"output", "exit"}
  resize                          `stty size`, then a resize frame, then `stty size` again:
                                  {"sizes", "exit"}
  hostile NAME                    one broken client (oversized, just-over, unknown-type,
                                  exit-from-client, resize-*, garbage): {"name", "error", "closed"}
  slow STALL_S READ_S             `yes` on the terminal, nothing read for STALL_S seconds (prints
                                  "stalled" when the stall begins), then READ_S seconds of reading:
                                  {"read_bytes", "read_s"}
"""
import json
import socket
import struct
import sys
import time

sock_path, session, mode = sys.argv[1], sys.argv[2], sys.argv[3]
DATA, RESIZE, EXIT, ERROR = 1, 2, 3, 4


def request(method, path, body=None, extra=b""):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    data = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: corral\r\n".encode() + extra
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n".encode()
    s.sendall(head + b"\r\n" + data)
    return s


def read_head(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        got = s.recv(4096)
        if not got:
            raise SystemExit("connection closed before the head: " + repr(buf))
        buf += got
    head, rest = buf.split(b"\r\n\r\n", 1)
    return int(head.split(b" ")[1]), head.decode(), rest


def start(argv, rows=24, cols=80):
    s = request("POST", f"/v1/sessions/{session}/commands", {"argv": argv, "tty": {"rows": rows, "cols": cols}})
    status, head, rest = read_head(s)
    while True:  # Content-Length body
        length = int([l.split(":")[1] for l in head.split("\r\n") if l.lower().startswith("content-length")][0])
        if len(rest) >= length:
            break
        rest += s.recv(4096)
    s.close()
    if status != 201:
        raise SystemExit(f"start: {status} {rest!r}")
    return json.loads(rest)["id"]


def attach(n):
    s = request("GET", f"/v1/sessions/{session}/commands/{n}/terminal", extra=b"Connection: Upgrade\r\nUpgrade: corral-terminal.v1\r\n")
    status, head, rest = read_head(s)
    if status != 101:
        raise SystemExit(f"attach: {status} {head} {rest!r}")
    return s, rest


def frame(t, payload=b""):
    return struct.pack(">BI", t, len(payload)) + payload


class Reader:
    def __init__(self, s, early):
        self.s, self.buf = s, early

    def next(self, timeout=60):
        """(type, payload), or None once the connection closed."""
        self.s.settimeout(timeout)
        while True:
            if len(self.buf) >= 5:
                t, n = struct.unpack(">BI", self.buf[:5])
                if len(self.buf) >= 5 + n:
                    p, self.buf = self.buf[5:5 + n], self.buf[5 + n:]
                    return t, p
            got = self.s.recv(65536)
            if not got:
                return None
            self.buf += got

    def until_exit(self):
        out = b""
        while True:
            f = self.next()
            if f is None:
                return out, None
            if f[0] == DATA:
                out += f[1]
            elif f[0] in (EXIT, ERROR):
                return out, json.loads(f[1])


if mode == "run":
    rows, cols, text, argv = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], json.loads(sys.argv[7])
    n = start(argv, rows, cols)
    s, early = attach(n)
    if text:
        s.sendall(frame(DATA, text.encode()))
    out, end = Reader(s, early).until_exit()
    print(json.dumps({"output": out.decode(errors="replace"), "exit": end}))
elif mode == "resize":
    n = start(["sh", "-c", "read a; stty size; read b; stty size"], 24, 80)
    s, early = attach(n)
    r = Reader(s, early)

    def sizes_in(out):
        return [l for l in out.decode(errors="replace").replace("\r", "").split("\n") if l and l[0].isdigit()]

    # The first size is read before the resize is sent: otherwise the relay may apply the
    # resize before the command's first `stty size` runs, and both would show the new size.
    s.sendall(frame(DATA, b"x\n"))
    before = b""
    while not sizes_in(before) or not before.replace(b"\r", b"").endswith(b"\n"):
        f = r.next()
        if f is None or f[0] != DATA:
            raise SystemExit(f"resize: the terminal ended before the first size: {f!r} {before!r}")
        before += f[1]
    s.sendall(frame(RESIZE, struct.pack(">HH", 40, 120)) + frame(DATA, b"y\n"))
    out, end = r.until_exit()
    sizes = sizes_in(before + out)
    print(json.dumps({"sizes": sizes, "exit": end}))
elif mode == "hostile":
    name = sys.argv[4]
    n = start(["sh", "-c", "read x; echo never"], 24, 80)
    s, early = attach(n)
    bad = {
        "oversized": struct.pack(">BI", DATA, 0x7FFFFFFF) + b"x" * 1024,
        "just-over": struct.pack(">BI", DATA, 65537) + b"y" * 65537,
        "unknown-type": frame(9, b"hello"),
        "exit-from-client": frame(EXIT, b"{}"),
        "resize-zero": frame(RESIZE, struct.pack(">HH", 0, 0)),
        "resize-absurd": frame(RESIZE, struct.pack(">HH", 65535, 65535)),
        "resize-short": frame(RESIZE, b"\x00\x10"),
        "garbage": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    }[name]
    s.sendall(bad)
    r = Reader(s, early)
    f = r.next(timeout=30)
    closed = r.next(timeout=30) is None if f is not None else True
    print(json.dumps({"name": name, "error": json.loads(f[1]) if f and f[0] == ERROR else None, "closed": closed}))
elif mode == "slow":
    stall, read_s = float(sys.argv[4]), float(sys.argv[5])
    n = start(["yes", "corral-terminal-flood-0123456789"], 24, 80)
    s, early = attach(n)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    print("stalled", flush=True)
    time.sleep(stall)
    got, t0 = len(early), time.monotonic()
    s.settimeout(5)
    while time.monotonic() - t0 < read_s:
        b = s.recv(1 << 20)
        if not b:
            break
        got += len(b)
    print(json.dumps({"read_bytes": got, "read_s": time.monotonic() - t0}), flush=True)
    s.close()
