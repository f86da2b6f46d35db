#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Upstream servers for the proxy integration tests, all on 127.0.0.1, port 0:
an HTTP server and an HTTPS server (cert from argv) that count the requests they serve and
remember the last request head, and a TCP echo server. Prints one JSON line with the ports,
then serves until stdin closes. GET /__count and /__last (asked directly, never through the
proxy) are not counted."""
import asyncio
import sys
import threading

import upstream_common

state = {"count": 0, "last": ""}
lock = threading.Lock()


class Handler(upstream_common.Handler):
    def _serve(self):
        if self.path in ("/__count", "/__last"):
            with lock:
                out = str(state["count"]) if self.path == "/__count" else state["last"]
        else:
            body = self.read_body()
            with lock:
                state["count"] += 1
                state["last"] = self.requestline + "\n" + "".join(f"{k}: {v}\n" for k, v in self.headers.items())
                out = f"upstream ok path={self.path} body={len(body)}"
        self.reply(200, out.encode())

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
    http = upstream_common.server(Handler)
    https = upstream_common.server(Handler, cert, key)
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(asyncio.start_server(echo, "127.0.0.1", 0, backlog=2048))
    echo_port = server.sockets[0].getsockname()[1]
    threading.Thread(target=loop.run_forever, daemon=True).start()
    upstream_common.serve_until_stdin_closes(
        (http, https), {"http": http.server_address[1], "https": https.server_address[1], "echo": echo_port})


if __name__ == "__main__":
    main()
