#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Upstream servers for the proxy integration tests, all on 127.0.0.1, port 0:
an HTTP server and an HTTPS server (cert from argv) that count the requests they serve and
remember the last request head, and a TCP echo server. Prints one JSON line with the ports,
then serves until stdin closes. GET /__count and /__last (asked directly, never through the
proxy) are not counted."""
import asyncio
import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

state = {"count": 0, "last": ""}
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(n) if n else b""

    def _serve(self):
        if self.path in ("/__count", "/__last"):
            with lock:
                out = str(state["count"]) if self.path == "/__count" else state["last"]
        else:
            body = self._body()
            with lock:
                state["count"] += 1
                state["last"] = self.requestline + "\n" + "".join(f"{k}: {v}\n" for k, v in self.headers.items())
                out = f"upstream ok path={self.path} body={len(body)}"
        data = out.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    do_GET = do_POST = do_PUT = do_HEAD = _serve


async def echo(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    writer.close()


def main():
    cert, key = sys.argv[1], sys.argv[2]
    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    https = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    https.socket = ctx.wrap_socket(https.socket, server_side=True)
    for s in (http, https):
        s.daemon_threads = True
        threading.Thread(target=s.serve_forever, daemon=True).start()

    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(echo, "127.0.0.1", 0, backlog=2048))
    echo_port = server.sockets[0].getsockname()[1]
    threading.Thread(target=loop.run_forever, daemon=True).start()
    print(json.dumps({"http": http.server_address[1], "https": https.server_address[1], "echo": echo_port}), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
