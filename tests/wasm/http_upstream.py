#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The upstream of the corral_http tests, on 127.0.0.1 under two ports (main and other, one
shared state: the same service reachable at two ports of one host):
  GET  /__count        requests answered so far (asked directly, never counted)
  GET  /big?n=N        N bytes of a repeating pattern, chunked in 8 KiB pieces
  GET  /headers        the request's headers, one "name: value" line each (names lowercased)
  GET  anything else   "upstream ok <path>"
  POST/PUT anything    the request body back (Content-Length or chunked request), chunked
Prints one JSON line {"main": PORT, "other": PORT}, serves until stdin closes."""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

count = 0
lock = threading.Lock()
PATTERN = b"0123456789abcdefghijklmnopqrstuvwxyz\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def counted(self):
        global count
        with lock:
            count += 1

    def reply(self, data, chunked=False):
        self.send_response(200)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        if chunked:
            for i in range(0, len(data), 8192):
                piece = data[i:i + 8192]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(data)
        self.close_connection = True

    def do_GET(self):
        if self.path == "/__count":
            with lock:
                return self.reply(str(count).encode())
        self.counted()
        if self.path.startswith("/big?n="):
            n = int(self.path[len("/big?n="):])
            return self.reply((PATTERN * (n // len(PATTERN) + 1))[:n], chunked=True)
        if self.path == "/headers":
            return self.reply("".join(f"{k.lower()}: {v}\n" for k, v in self.headers.items()).encode())
        self.reply(("upstream ok " + self.path).encode())

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))

    def do_POST(self):
        self.counted()
        self.reply(self.read_body(), chunked=True)

    do_PUT = do_POST


def serve(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


main = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
other = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(json.dumps({"main": serve(main), "other": serve(other)}), flush=True)
sys.stdin.read()
