#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Internal HTTP servers for the --allow-internal claim tests: one per address given (each an
address the test put on its private namespace's loopback), all on one port picked by the
kernel. Each answers "internal ok at <address> <path>" and appends "<address> <path>" to
DIR/requests, so a test can tell which address served and prove a refused one saw nothing.
Usage: internal_servers.py DIR ADDRESS... Prints {"port": N}, serves until stdin closes."""
import json
import os
import sys
import threading
from http.server import ThreadingHTTPServer

import upstream_common  # beside this file: python puts its directory first on sys.path

DIR = sys.argv[1]
lock = threading.Lock()


def handler_for(address):
    class Handler(upstream_common.Handler):
        def do_GET(self):
            with lock, open(os.path.join(DIR, "requests"), "a") as f:
                f.write(f"{address} {self.path}\n")
            self.reply(200, f"internal ok at {address} {self.path}".encode())

    return Handler


def main():
    open(os.path.join(DIR, "requests"), "w").close()
    port, servers = 0, []
    for address in sys.argv[2:]:
        s = ThreadingHTTPServer((address, port), handler_for(address))
        port = s.server_address[1]
        servers.append(s)
        threading.Thread(target=s.serve_forever, daemon=True).start()
    print(json.dumps({"port": port}), flush=True)
    sys.stdin.read()


main()
