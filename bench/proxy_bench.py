#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Egress proxy benchmark (issue #4): CONNECT-tunnel throughput against a direct loopback
connection, added latency of small forward requests, and memory per idle tunnel.

  bench/proxy_bench.py --proxy build/corral-proxy-bench [--gib 1] [--requests 2000] [--tunnels 1000]

Starts its own upstreams (a byte source, an HTTP responder and an echo server, asyncio on
127.0.0.1) and one corral-proxy-bench, and prints a markdown table. Tunnels must open with a
TLS ClientHello (the proxy checks SNI), so every tunnel client sends a real one first."""
import argparse
import asyncio
import os
import resource
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time

CHUNK = 1 << 20


def client_hello():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=None)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


HELLO = client_hello()


def start_source(total):
    # A blocking thread, not asyncio: the byte source must be faster than what it measures.
    # Per connection: read the client's hello, send `total` bytes, close.
    lsock = socket.create_server(("127.0.0.1", 0), backlog=16)

    def serve(conn):
        with conn:
            got = 0
            while got < len(HELLO):
                got += len(conn.recv(len(HELLO) - got))
            block = memoryview(bytearray(4 * CHUNK))
            left = total
            while left > 0:
                n = min(len(block), left)
                conn.sendall(block[:n])
                left -= n

    def accept():
        while True:
            conn, _ = lsock.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return lsock.getsockname()[1]


async def responder(reader, writer):
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    await writer.drain()
    writer.close()


async def echo(reader, writer):
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    writer.close()


def start_upstreams(total):
    loop = asyncio.new_event_loop()
    ports = {}

    async def setup():
        for name, handler in (("http", responder), ("echo", echo)):
            srv = await asyncio.start_server(handler, "127.0.0.1", 0, backlog=4096)
            ports[name] = srv.sockets[0].getsockname()[1]

    loop.run_until_complete(setup())
    threading.Thread(target=loop.run_forever, daemon=True).start()
    ports["source"] = start_source(total)
    return ports


def recv_all(sock, expect=None):
    buf = bytearray(CHUNK)
    got = 0
    while True:
        n = sock.recv_into(buf)
        if n == 0:
            return got
        got += n
        if expect is not None and got >= expect:
            return got


def tunnel(proxy_port, authority):
    s = socket.create_connection(("127.0.0.1", proxy_port))
    s.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head
    return s


def throughput(proxy_port, source_port, total):
    results = {}
    for mode in ("direct", "tunnel"):
        if mode == "direct":
            s = socket.create_connection(("127.0.0.1", source_port))
        else:
            s = tunnel(proxy_port, f"127.0.0.1:{source_port}")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        t0 = time.perf_counter()
        s.sendall(HELLO)
        got = recv_all(s)
        dt = time.perf_counter() - t0
        s.close()
        assert got == total, (mode, got)
        results[mode] = total / dt / (1 << 20)
    return results


def latency(proxy_port, http_port, n):
    direct, proxied = [], []
    req_direct = b"GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    a = f"127.0.0.1:{http_port}"
    req_proxy = f"GET http://{a}/x HTTP/1.1\r\nHost: {a}\r\n\r\n".encode()
    for i in range(n):
        for port, req, out in ((http_port, req_direct, direct), (proxy_port, req_proxy, proxied)):
            t0 = time.perf_counter()
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(req)
            data = b""
            while chunk := s.recv(4096):
                data += chunk
            out.append((time.perf_counter() - t0) * 1e6)
            s.close()
            assert data.startswith(b"HTTP/1.1 200"), data[:100]
    q = lambda xs, p: statistics.quantiles(xs, n=100)[p - 1]
    return {k: (q(v, 50), q(v, 99)) for k, v in (("direct", direct), ("proxied", proxied))}


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def idle_tunnels(proc, proxy_port, echo_port, n):
    before = rss_kib(proc.pid)
    socks = []
    for i in range(n):
        s = tunnel(proxy_port, f"127.0.0.1:{echo_port}")
        s.sendall(HELLO + b"x")
        socks.append(s)
    for s in socks:
        recv_all(s, expect=len(HELLO) + 1)
    time.sleep(0.2)
    after = rss_kib(proc.pid)
    for s in socks:
        s.close()
    return before, after


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--proxy", required=True, help="path to corral-proxy-bench")
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--tunnels", type=int, default=1000)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * args.tunnels + 256)), hard))
    total = int(args.gib * (1 << 30))
    ports = start_upstreams(total)
    grants = [f"https://127.0.0.1:{ports['source']}", f"https://127.0.0.1:{ports['echo']}", f"http://127.0.0.1:{ports['http']}"]
    proc = subprocess.Popen([args.proxy, *grants], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("port="), line
        pport = int(line[5:])
        tp = throughput(pport, ports["source"], total)
        lat = latency(pport, ports["http"], args.requests)
        before, after = idle_tunnels(proc, pport, ports["echo"], args.tunnels)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    ratio = tp["tunnel"] / tp["direct"] * 100
    print(f"| metric | direct | through corral proxy | goal |")
    print(f"|---|---|---|---|")
    print(f"| {args.gib:g} GiB download, MiB/s | {tp['direct']:.0f} | {tp['tunnel']:.0f} ({ratio:.0f}%) | >= 80% |")
    print(f"| small GET p50, us | {lat['direct'][0]:.0f} | {lat['proxied'][0]:.0f} (+{lat['proxied'][0] - lat['direct'][0]:.0f}) | added < 200 |")
    print(f"| small GET p99, us | {lat['direct'][1]:.0f} | {lat['proxied'][1]:.0f} (+{lat['proxied'][1] - lat['direct'][1]:.0f}) | |")
    per = (after - before) / args.tunnels
    print(f"| {args.tunnels} idle tunnels held, proxy RSS KiB | | {before} -> {after} ({per:.1f} KiB/tunnel) | |")


if __name__ == "__main__":
    sys.exit(main())
