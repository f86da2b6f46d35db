#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The hostile side of the SSH agent claim tests (claims_egress_ssh_agent_test.cc). Inside the
sandbox it speaks the ssh-agent protocol (draft-miller-ssh-agent) to $SSH_AUTH_SOCK itself:
  attack.py own-key PORT            bind to a host key of its own while a tunnel to the granted
                                    sshd (git.corp.test:PORT, over SOCKS5) is open, then ask for
                                    a login signature
  attack.py server-key PORT         the same, bound with the sshd's own host key
                                    (/workspace/server_host_key, handed in by the test)
  attack.py server-key-no-tunnel P  that key, but no tunnel open
  attack.py malformed PORT          management requests, lying frames, a client that never
                                    reads, then a fresh connection
  attack.py dump                    /workspace/dump (one file): every process's environ, cmdline
                                    and readable memory, and the files of /tmp, /run and /workspace
On the host: attack.py search DUMP KEYFILE DECOY prints where the key's seed or a line of its
file, and where the decoy, were found ("key in mem", "decoy in env", ...)."""
import base64
import os
import socket
import struct
import sys


def s(b):
    return struct.pack(">I", len(b)) + b


def frame(t, body=b""):
    return struct.pack(">I", len(body) + 1) + bytes([t]) + body


def recv_frame(sock):
    def exact(n):
        out = b""
        while len(out) < n:
            c = sock.recv(n - len(out))
            if not c:
                return None
            out += c
        return out
    head = exact(4)
    if head is None:
        return None
    return exact(struct.unpack(">I", head)[0])


def agent():
    a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    a.connect(os.environ["SSH_AUTH_SOCK"])
    return a


def ask(sock, t, body=b""):
    sock.sendall(frame(t, body))
    reply = recv_frame(sock)
    return reply[0] if reply else "closed"


def read_string(b, off):
    n = struct.unpack(">I", b[off:off + 4])[0]
    return b[off + 4:off + 4 + n], off + 4 + n


def identities(a):
    a.sendall(frame(11))
    r = recv_frame(a)
    count = struct.unpack(">I", r[1:5])[0]
    blob, _ = read_string(r, 5)
    print("identities", r[0], count)
    return blob


def tunnel(port):
    t = socket.create_connection(("127.0.0.1", 3128))
    t.sendall(b"\x05\x01\x00")
    assert t.recv(2) == b"\x05\x00"
    host = b"git.corp.test"
    t.sendall(b"\x05\x01\x00\x03" + bytes([len(host)]) + host + struct.pack(">H", port))
    rep = t.recv(10)
    assert rep[1] == 0, rep
    assert t.recv(64).startswith(b"SSH-2.0-")  # the server's banner: the tunnel is up
    return t


def sign_request(key_blob, data):
    return s(key_blob) + s(data) + struct.pack(">I", 0)


def userauth(sid, key_blob):
    return (s(sid) + b"\x32" + s(b"git") + s(b"ssh-connection") + s(b"publickey") + b"\x01" + s(b"ssh-ed25519") +
            s(key_blob))


def bind_and_sign(mode, port):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519
    a = agent()
    key_blob = identities(a)
    print("arbitrary", ask(a, 13, sign_request(key_blob, b"any bytes the sandbox would like signed")))
    t = tunnel(port) if mode != "server-key-no-tunnel" else None
    if mode == "own-key":
        host = ed25519.Ed25519PrivateKey.generate()
    else:
        host = serialization.load_ssh_private_key(open("/workspace/server_host_key", "rb").read(), None)
    pub = host.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    sid = os.urandom(32)
    bind = s(b"ssh-ed25519") + s(pub)
    b = agent()
    print("bind", ask(b, 27, s(b"session-bind@openssh.com") + s(bind) + s(sid) +
                     s(s(b"ssh-ed25519") + s(host.sign(sid))) + b"\x00"))
    data = userauth(sid, key_blob)
    b.sendall(frame(13, sign_request(key_blob, data)))
    r = recv_frame(b)
    if r[0] != 14:
        print("sign", r[0])
    else:
        sig, _ = read_string(r, 1)
        _, off = read_string(sig, 0)
        raw, _ = read_string(sig, off)
        agent_pub, _ = read_string(key_blob, read_string(key_blob, 0)[1])
        ed25519.Ed25519PublicKey.from_public_bytes(agent_pub).verify(raw, data)  # raises if wrong
        print("sign", r[0], "verified")
        print("bound-arbitrary", ask(b, 13, sign_request(key_blob, b"not a userauth request")))
    if t:
        t.close()


def malformed():
    a = agent()
    for t in (17, 18, 19, 20, 22, 23, 25, 99):  # add, remove, remove all, smartcard, lock, unlock, constrained
        print("type", t, ask(a, t, s(b"ssh-ed25519") + s(b"k" * 32) + s(b"x" * 64) + s(b"comment")))
    print("extension", ask(a, 27, s(b"query")))
    print("short-sign", ask(a, 13, s(b"truncated")))
    for name, head in (("huge", b"\xff\xff\xff\xff\x0d"), ("zero", b"\x00\x00\x00\x00")):
        c = agent()
        c.sendall(head + b"x" * 64)
        print(name, "closed" if recv_frame(c) is None else "answered")
    # Requests without ever reading the answers: the agent stops reading this client once
    # its answers pile up (64 KiB), so the sender stalls with the socket buffers full long
    # before 1 MiB of requests (some 210000 answers, 17 MiB) is taken in. An agent without
    # that limit takes it all in within a second. The next client is served all the same.
    f = agent()
    f.settimeout(5)
    try:
        f.sendall(frame(11) * ((1 << 20) // 5))
        print("flood taken in")
    except socket.timeout:
        print("flood stalled")
    f.close()
    identities(agent())


def dump():
    """One file, /workspace/dump (--output copies files, not directories): records of a
    name ("environ-PID", "cmdline-PID", "mem-PID", "files", "processes"), a length and the
    bytes, each as u32 name length, name, u64 data length, data."""
    records = []
    me = os.getpid()
    dumped = 0
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    records.append((f"{part}-{pid}", f.read()))
            except OSError:
                pass
        if int(pid) == me:
            continue
        try:
            maps = open(f"/proc/{pid}/maps").read().splitlines()
            mem = open(f"/proc/{pid}/mem", "rb", 0)
        except OSError:
            continue
        chunks = []
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("r") or (len(fields) > 5 and fields[5] in ("[vvar]", "[vsyscall]")):
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(lo)
                chunks.append(mem.read(hi - lo))
            except (OSError, OverflowError, ValueError):
                pass
        records.append((f"mem-{pid}", b"".join(chunks)))
        dumped += 1
    files = []
    for top in ("/tmp", "/run", "/workspace"):
        for root, dirs, names in os.walk(top):
            for name in names:
                path = os.path.join(root, name)
                if path == "/workspace/dump":
                    continue
                try:
                    with open(path, "rb") as f:
                        files.append(f.read())
                except OSError:
                    pass
    records.append(("files", b"".join(files)))
    records.append(("processes", str(dumped).encode()))
    with open("/workspace/dump", "wb") as o:
        for name, data in records:
            o.write(struct.pack(">I", len(name)) + name.encode() + struct.pack(">Q", len(data)) + data)


def read_dump(path):
    records = {}
    with open(path, "rb") as f:
        while head := f.read(4):
            name = f.read(struct.unpack(">I", head)[0]).decode()
            records[name] = f.read(struct.unpack(">Q", f.read(8))[0])
    return records


def search(dump_file, key_file, decoy):
    text = open(key_file).read()
    body = "".join(l for l in text.splitlines() if not l.startswith("-----"))
    raw = base64.b64decode(body)
    # The private section's 64-byte key (seed || public) follows its type and public key; the
    # seed is what must never be inside. Every base64 line of the file, too.
    i = raw.rfind(b"\x00\x00\x00\x40")
    lines = [l.encode() for l in text.splitlines() if not l.startswith("-----")]
    needles = [raw[i + 4:i + 36]] + lines[2:]  # the first two lines are the same for every such key
    records = read_dump(dump_file)
    print("processes", records["processes"].decode())
    for name in sorted(records):
        data = records[name]
        kind = name.split("-")[0]
        if any(n in data for n in needles):
            print("key in", kind, name)
        if decoy.encode() in data:
            print("decoy in", kind)


def main():
    mode = sys.argv[1]
    if mode == "dump":
        return dump()
    if mode == "search":
        return search(*sys.argv[2:5])
    port = int(sys.argv[2])
    if mode == "malformed":
        return malformed()
    return bind_and_sign(mode, port)


main()
