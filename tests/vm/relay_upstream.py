#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The upstream of the VM --net proxy tests (vm_net_proxy_test.cc): a granted HTTP server on
# 0.0.0.0:<port>, a second one on 127.0.0.1:<other> (a port never granted) and a third on
# 127.0.0.1:<leased> (granted, with a credential lease on it). GET /big/N
# serves the first N bytes of a fixed 32 MiB blob (hashes.json holds their SHA-256s), POST
# /upload answers the SHA-256 of the body, anything else "upstream ok PATH". Every request's
# headers go to DIR/headers.log, for the test to read on the host (never sent back). Prints
# {"port": P, "other": O, "leased": L} once listening; stops when stdin closes.
import hashlib, json, os, random, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = sys.argv[1]
BLOB = random.Random(23).randbytes(32 << 20)
SIZES = [1 << 20, 4 << 20, 32 << 20]
with open(os.path.join(DIR, "hashes.json"), "w") as f:
    json.dump({str(n): hashlib.sha256(BLOB[:n]).hexdigest() for n in SIZES}, f)
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self):
        with lock, open(os.path.join(DIR, "headers.log"), "a") as f:
            f.write(self.command + " " + self.path + "\n" + "".join(f"{k}: {v}\n" for k, v in self.headers.items()) + "\n")

    def reply(self, data):
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def do_GET(self):
        self.record()
        if self.path.startswith("/big/"):
            return self.reply(BLOB[:int(self.path[5:])])
        self.reply(("upstream ok " + self.path + "\n").encode())

    def do_POST(self):
        self.record()
        left, h = int(self.headers.get("Content-Length", "0")), hashlib.sha256()
        while left > 0:
            chunk = self.rfile.read(min(left, 1 << 16))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
        self.reply(("sha256=" + h.hexdigest() + "\n").encode())


main = ThreadingHTTPServer(("0.0.0.0", 0), Handler)
other = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
leased = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
for s in (main, other, leased):
    threading.Thread(target=s.serve_forever, daemon=True).start()
print(json.dumps({"port": main.server_address[1], "other": other.server_address[1], "leased": leased.server_address[1]}), flush=True)
sys.stdin.read()
