#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Clients for the proxy integration tests. Prints one line: "<status> <x-corral-denied or -> <body>".
  client.py urllib PROXY_PORT URL [CAFILE]        urllib.request with a ProxyHandler
  client.py tls PROXY_PORT AUTHORITY SNI CAFILE   CONNECT by hand, then TLS with server_hostname=SNI
                                                  ("-": no SNI); GET / inside the tunnel"""
import socket
import ssl
import sys
import urllib.error
import urllib.request


def urllib_get(port, url, cafile):
    proxy = f"http://127.0.0.1:{port}"
    handlers = [urllib.request.ProxyHandler({"http": proxy, "https": proxy})]
    if cafile:
        handlers.append(urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=cafile)))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(url, timeout=20) as r:
            print(r.status, "-", r.read().decode())
    except urllib.error.HTTPError as e:
        print(e.code, e.headers.get("X-Corral-Denied", "-"), e.read().decode().strip())
    except urllib.error.URLError as e:
        # A refused CONNECT: http.client raises OSError("Tunnel connection failed: 403 ...").
        print("tunnel-error", "-", str(e.reason).replace("\n", " "))


def tls_get(port, authority, sni, cafile):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=20)
    s.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    status = head.split(b" ")[1].decode() if head else "closed"
    if status != "200":
        print(status, "-", head.decode(errors="replace").replace("\r\n", " | "))
        return
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False  # the proxy's SNI check is under test, not the client's
    try:
        t = ctx.wrap_socket(s, server_hostname=None if sni == "-" else sni)
        t.sendall(f"GET /tls HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := t.recv(65536):
            data += chunk
        print("200", "-", data.decode(errors="replace").split("\r\n\r\n", 1)[-1])
    except (ssl.SSLError, OSError) as e:
        print("tls-error", "-", str(e).replace("\n", " "))


if __name__ == "__main__":
    if sys.argv[1] == "urllib":
        urllib_get(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        tls_get(*sys.argv[2:6])
