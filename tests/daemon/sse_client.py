# SPDX-License-Identifier: Apache-2.0
"""A GET /v1/events client over the daemon's UNIX socket.

    sse_client.py SOCKET OUT read     every event's data line appended to OUT as it arrives
    sse_client.py SOCKET OUT stall    reads the response head, writes "subscribed" to OUT, then
                                      never reads again (a small receive buffer), until killed
"""
import socket
import sys
import time

sock_path, out_path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
if mode == "stall":
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(sock_path)
s.sendall(b"GET /v1/events HTTP/1.1\r\nHost: corral\r\nAccept: text/event-stream\r\n\r\n")
buf = b""
while b"\r\n\r\n" not in buf:
    chunk = s.recv(1)
    if not chunk:
        sys.exit(1)
    buf += chunk
with open(out_path, "a") as out:
    out.write(buf.split(b"\r\n", 1)[0].decode() + "\n")
    out.flush()
    if mode == "stall":
        out.write("subscribed\n")
        out.flush()
        while True:
            time.sleep(3600)
    pending = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        pending += chunk
        # Chunked framing interleaves size lines; the SSE lines we want start with "data: ".
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            line = line.rstrip(b"\r")
            if line.startswith(b"data: ") or line.startswith(b"event: lost"):
                out.write(line.decode(errors="replace") + "\n")
                out.flush()
