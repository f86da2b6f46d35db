#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Sessions on the VM backend, end to end: a real daemon, one real guest (QEMU under TCG here,
# booted or restored ONCE for the whole script), the corral CLI and raw HTTP over the socket.
# Usage: vm_session_test.py CORRAL [commands|confined|files|refused|lifecycle|clock|pause]  (exit 77: no VM here, skipped)
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

CORRAL = sys.argv[1]
# One group of checks per ctest entry (each named after the claim it proves), each with a
# session of its own (a restore: about a second); none: every group.
GROUP = sys.argv[2] if len(sys.argv) > 2 else "all"
failures = []


def on(group):
    return GROUP in ("all", group)


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + detail), flush=True)
    if not ok:
        failures.append(name)


class Conn(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=120)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(120)
        self.sock.connect(self.path)


def api(sock, method, target, body=None):
    c = Conn(sock)
    c.request(method, target, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"} if body is not None else {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def api_raw(sock, method, target, data=None):
    c = Conn(sock)
    c.request(method, target, body=data)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def descendants(pid):
    kids = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                st = f.read()
            kids.setdefault(int(st[st.rfind(")") + 2:].split()[1]), []).append(int(p))
        except OSError:
            pass
    out, todo = [], [pid]
    while todo:
        q = todo.pop()
        for k in kids.get(q, []):
            out.append(k)
            todo.append(k)
    return out


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
        return int(st[st.rfind(")") + 2:].split()[1])
    except OSError:
        return 0


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def main():
    if not os.path.exists(os.path.join(os.path.dirname(CORRAL), "corral-vm-init")) or not shutil.which("qemu-system-x86_64"):
        print("SKIP: no guest agent (sanitized build) or no QEMU")
        return 77
    tmp = tempfile.mkdtemp(prefix="corral-vmsess-")
    state, sock = os.path.join(tmp, "state"), os.path.join(tmp, "api.sock")
    env = dict(os.environ, CORRAL_SOCKET=sock)
    log = open(os.path.join(tmp, "daemon.log"), "ab")

    def start_daemon():
        d = subprocess.Popen([CORRAL, "daemon", "--state-dir", state, "--socket", sock, "--stop-sessions"], stderr=log, stdout=log)
        for _ in range(200):
            if os.path.exists(sock):
                try:
                    if api(sock, "GET", "/v1/sessions")[0] == 200:
                        return d
                except OSError:
                    pass
            time.sleep(0.05)
        raise RuntimeError("daemon did not start")

    def cli(*args):
        return subprocess.run([CORRAL, "session", *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)

    daemon = start_daemon()
    sid = None
    try:
        if on("refused"):
            # Refusals that cost no boot.
            r = cli("create", "--backend", "vm", "--allow-weaker", "kvm", "--net", "proxy", "--allow", "https://example.com")
            check("refused.net_proxy", r.returncode == 125 and "not yet on a VM session" in r.stderr, r.stderr)
            st, body = api(sock, "POST", "/v1/sessions", {"backend": "vm", "vm": {"allow_weaker": ["kvm"]}, "ro_binds": ["/usr/share:/x"]})
            check("refused.ro_binds_422", st == 422 and b"ro_binds" in body, f"{st} {body[:200]}")
            st, body = api(sock, "POST", "/v1/sessions", {"vm": {"memory": "256M"}})
            check("refused.vm_without_backend_400", st == 400, f"{st} {body[:200]}")
            r = cli("create", "--vm-memory", "256M")
            check("refused.cli_vm_option_without_backend", r.returncode != 0 and "--backend vm" in r.stderr, r.stderr)
        if on("clock"):
            # The guest's clock is the host's, cold (microvm has no RTC: the request carries the
            # host's time) and restored (the reseed and the request carry it): date and a new
            # file's mtime within a few seconds of the host's, both ways.
            for mode, extra in (("cold", ["--vm-cold"]), ("restore", [])):
                ws, rep = os.path.join(tmp, "ws-" + mode), os.path.join(tmp, "report-" + mode + ".json")
                os.mkdir(ws)
                os.chmod(ws, 0o777)
                before = time.time()
                r = subprocess.run([CORRAL, "exec", "--backend", "vm", "--allow-weaker", "kvm", *extra, "--workspace", ws,
                                    "--report", rep, "--", "sh", "-c", "date +%s; touch /workspace/t; stat -c %Y /workspace/t"],
                                   stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
                after = time.time()
                try:
                    start = json.load(open(rep))["vm"].get("start")
                except (OSError, ValueError, KeyError):
                    start = None
                nums = [int(x) for x in r.stdout.split() if x.isdigit()]
                check(f"clock.exec_{mode}.started_{mode}", r.returncode == 0 and start == mode, f"{r.returncode} start={start} {r.stderr[-300:]}")
                check(f"clock.exec_{mode}.date_is_the_hosts", len(nums) == 2 and before - 5 <= nums[0] <= after + 5,
                      f"guest={nums} host={before:.0f}..{after:.0f}")
                check(f"clock.exec_{mode}.mtime_is_the_hosts", len(nums) == 2 and before - 5 <= nums[1] <= after + 5,
                      f"guest={nums} host={before:.0f}..{after:.0f}")
        t0 = time.monotonic()
        r = cli("create", "--backend", "vm", "--allow-weaker", "kvm", "--vm-memory", "512M", "--json")
        create_s = time.monotonic() - t0
        check("create", r.returncode == 0, r.stderr)
        if r.returncode != 0:
            return 1
        sid = json.loads(r.stdout)["id"]
        print(f"info create_s={create_s:.1f}", flush=True)
        if on("commands"):
            st, body = api(sock, "GET", f"/v1/sessions/{sid}")
            check("show.backend_vm", st == 200 and json.loads(body).get("backend") == "vm", f"{st} {body[:200]}")
            t0 = time.monotonic()
            r = cli("exec", sid, "--", "sh", "-c", "echo one > /workspace/a; echo to-err >&2; exit 7")
            print(f"info exec_s={time.monotonic() - t0:.2f}", flush=True)
            check("exit_code", r.returncode == 7, f"{r.returncode} {r.stderr}")
            check("stderr_separate", "to-err" in r.stderr and "to-err" not in r.stdout, repr((r.stdout, r.stderr)))
            r = cli("exec", sid, "--", "cat", "/workspace/a")
            check("workspace_persists", r.returncode == 0 and r.stdout == "one\n", repr((r.returncode, r.stdout, r.stderr)))
            r = cli("exec", sid, "--", "sh", "-c", "sleep 600 > /dev/null 2>&1 & echo $! > /workspace/bg")
            r = cli("exec", sid, "--", "sh", "-c", "kill -0 $(cat /workspace/bg) && echo bg-alive")
            check("background_survives", r.returncode == 0 and "bg-alive" in r.stdout, repr((r.returncode, r.stdout, r.stderr)))
            r = subprocess.run(
                [CORRAL, "session", "exec", sid, "--", "sh", "-c", "cat; echo done"], env=env, input="piped-in\n",
                capture_output=True, text=True, timeout=120)
            check("stdin", r.returncode == 0 and r.stdout == "piped-in\ndone\n", repr((r.returncode, r.stdout, r.stderr)))
        if on("clock"):
            before = time.time()
            r = cli("exec", sid, "--", "sh", "-c", "date +%s; touch /workspace/t; stat -c %Y /workspace/t")
            after = time.time()
            nums = [int(x) for x in r.stdout.split() if x.isdigit()]
            check("clock.session.date_and_mtime_are_the_hosts",
                  r.returncode == 0 and len(nums) == 2 and all(before - 5 <= n <= after + 5 for n in nums),
                  f"guest={nums} host={before:.0f}..{after:.0f} {r.stderr[-300:]}")
        if on("pause"):
            # Pause is QMP stop on the session's QEMU: a counter in the guest does not advance while
            # paused (read from the host through the files API), and does (the control) otherwise.
            def ticks():
                st, body = api_raw(sock, "GET", f"/v1/sessions/{sid}/files/ticks")
                return len(body.splitlines()) if st == 200 else -1

            def vm_state():
                st, body = api(sock, "GET", f"/v1/sessions/{sid}")
                return json.loads(body).get("state") if st == 200 else f"http {st}"

            cli("exec", sid, "--", "sh", "-c", "(while :; do echo x >> /workspace/ticks; sleep 0.2; done) > /dev/null 2>&1 &")
            time.sleep(1)
            c0 = ticks()
            time.sleep(3)
            c1 = ticks()
            check("pause.control_counter_advances_when_running", c0 >= 0 and c1 - c0 >= 4, f"{c0} -> {c1} in 3 s")
            r = cli("pause", sid)
            check("pause.cli", r.returncode == 0 and vm_state() == "paused", f"{r.returncode} {r.stderr} state={vm_state()}")
            st, body = api(sock, "POST", f"/v1/sessions/{sid}/commands", {"argv": ["true"]})
            check("pause.exec_refused_409", st == 409, f"{st} {body[:200]}")
            st, body = api_raw(sock, "GET", f"/v1/sessions/{sid}/files/ticks")
            check("pause.files_refused_409", st == 409, f"{st} {body[:200]}")
            st, body = api(sock, "POST", f"/v1/sessions/{sid}/pause")
            check("pause.again_is_paused", st == 200 and json.loads(body).get("state") == "paused", f"{st} {body[:200]}")
            time.sleep(6)  # 30 ticks, were it running
            st, body = api(sock, "POST", f"/v1/sessions/{sid}/resume")
            check("resume.api", st == 200 and json.loads(body).get("state") == "running", f"{st} {body[:200]}")
            c2 = ticks()
            check("pause.counter_stood_still", c2 >= 0 and c2 - c1 <= 5, f"{c1} -> {c2} across 6 s paused")
            before = time.time()
            r = cli("exec", sid, "--", "date", "+%s")
            after = time.time()
            guest = int(r.stdout.strip()) if r.stdout.strip().isdigit() else 0
            check("resume.clock_is_the_hosts_again", before - 2 <= guest <= after + 2, f"guest={guest} host={before:.0f}..{after:.0f}")
            time.sleep(2)
            c3 = ticks()
            check("resume.counter_advances_again", c3 - c2 >= 3, f"{c2} -> {c3} in 2 s")
            # A daemon restart keeps a paused VM session paused; resume then works.
            r = cli("pause", sid)
            daemon.send_signal(signal.SIGKILL)
            daemon.wait()
            daemon = start_daemon()
            check("pause.restart_keeps_it_paused", vm_state() == "paused", f"state={vm_state()}")
            r = cli("resume", sid)
            r2 = cli("exec", sid, "--", "echo", "after-restart")
            check("resume.after_restart", r.returncode == 0 and vm_state() == "running" and r2.stdout == "after-restart\n",
                  repr((r.returncode, r.stderr, r2.returncode, r2.stdout, r2.stderr)))
            with open(os.path.join(state, "audit.jsonl"), errors="replace") as f:
                audit = f.read()
            check("pause.audited", "session_paused" in audit and "session_resumed" in audit, audit[-300:])
        if on("confined"):
            # The command is confined inside the guest as a namespace session's is: not root, no
            # capabilities, no_new_privs, a seccomp filter; and an attempt to use root fails.
            r = cli("exec", sid, "--", "sh", "-c", "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; "
                    "mount -t tmpfs x /tmp 2>/dev/null && echo MOUNTED; true")
            lines = r.stdout.split()
            check("confined.non_root", r.returncode == 0 and lines[:1] != ["0"], r.stdout)
            check("confined.no_caps", "0000000000000000" in r.stdout, r.stdout)
            check("confined.no_new_privs", "NoNewPrivs:" in lines and lines[lines.index("NoNewPrivs:") + 1] == "1", r.stdout)
            check("confined.seccomp_filter", "Seccomp:" in lines and lines[lines.index("Seccomp:") + 1] == "2", r.stdout)
            check("confined.mount_refused", "MOUNTED" not in r.stdout, r.stdout)
        if on("commands"):
            r = cli("exec", sid, "--", "/no/such/binary")
            check("exec_failure_127", r.returncode == 127, f"{r.returncode} {r.stderr}")
            r = cli("exec", sid, "--timeout", "2s", "--", "sleep", "30")
            check("timeout_124", r.returncode == 124, f"{r.returncode} {r.stderr}")

            # The API's command routes, by raw HTTP.
            st, body = api(sock, "POST", f"/v1/sessions/{sid}/commands", {"argv": ["sh", "-c", "echo api-out; exit 3"]})
            check("api.start_201", st == 201, f"{st} {body[:200]}")
            n = json.loads(body)["id"] if st == 201 else 0
            st, body = api(sock, "GET", f"/v1/sessions/{sid}/commands/{n}/output")
            lines = [json.loads(x) for x in body.decode().splitlines() if x.strip()]
            exits = [x["exit"] for x in lines if "exit" in x]
            check("api.exit_3", exits and exits[0].get("exit_code") == 3, repr(lines)[:300])
        if on("files"):
            # The files API, served by the guest's agent (the host never mounts the guest's disk).
            st, body = api_raw(sock, "PUT", f"/v1/sessions/{sid}/files/up.txt", b"uploaded\n")
            check("files.put_201", st == 201 and json.loads(body).get("bytes") == 9, f"{st} {body[:200]}")
            r = cli("exec", sid, "--", "sh", "-c", "cat /workspace/up.txt; echo more >> /workspace/up.txt && stat -c %u /workspace/up.txt")
            check("files.put_seen_and_writable_by_the_command", r.returncode == 0 and r.stdout.startswith("uploaded\n") and
                  r.stdout.split()[-1] != "0", repr((r.returncode, r.stdout, r.stderr)))
            st, body = api_raw(sock, "GET", f"/v1/sessions/{sid}/files/up.txt")
            check("files.get", st == 200 and body == b"uploaded\nmore\n", f"{st} {body[:200]}")
            local = os.path.join(tmp, "local.txt")
            r = cli("cp", f"{sid}:up.txt", local)
            check("files.cli_cp_out", r.returncode == 0 and open(local, "rb").read() == b"uploaded\nmore\n", r.stderr)
            with open(local, "wb") as f:
                f.write(b"from-cp\n")
            r = cli("cp", local, f"{sid}:cp.txt")
            r2 = cli("exec", sid, "--", "cat", "/workspace/cp.txt")
            check("files.cli_cp_in", r.returncode == 0 and r2.stdout == "from-cp\n", repr((r.stderr, r2.stdout)))
            cli("exec", sid, "--", "sh", "-c", "mkdir -p /workspace/d && printf x > /workspace/d/in && ln -sf /etc/passwd /workspace/link")
            st, body = api_raw(sock, "GET", f"/v1/sessions/{sid}/files/d/in")
            check("files.get_nested", st == 200 and body == b"x", f"{st} {body[:200]}")
            st, body = api_raw(sock, "GET", f"/v1/sessions/{sid}/files/link")
            check("files.symlink_refused", st in (400, 422) and b"root:" not in body, f"{st} {body[:200]}")
            st, body = api_raw(sock, "PUT", f"/v1/sessions/{sid}/files/link", b"clobber")
            r = cli("exec", sid, "--", "sh", "-c", "test -L /workspace/link && echo still-link")
            check("files.put_over_symlink_replaces_the_name_only", "still-link" in r.stdout or st in (400, 422), f"{st} {r.stdout}")
            st, body = api_raw(sock, "GET", f"/v1/sessions/{sid}/files/..%2Fetc%2Fpasswd")
            check("files.traversal_refused", st in (400, 404) and b"root:" not in body, f"{st} {body[:200]}")
            st, body = api_raw(sock, "GET", f"/v1/sessions/{sid}/files/missing")
            check("files.missing_404", st == 404, f"{st} {body[:200]}")
            st, body = api_raw(sock, "PUT", f"/v1/sessions/{sid}/files/big", b"z" * (600 * 1024))
            check("files.over_cap_413", st == 413, f"{st} {body[:200]}")
            st, body = api_raw(sock, "DELETE", f"/v1/sessions/{sid}/files/up.txt")
            check("refused.files_delete_422", st == 422 and b"not yet on a VM session" in body, f"{st} {body[:200]}")
        if on("refused"):
            # Refused on a VM session, by name.
            r = cli("exec", "--tty", sid, "--", "sh")
            check("refused.tty", r.returncode == 125 and "tty: not yet on a VM session" in r.stderr, r.stderr)
        if on("lifecycle"):
            # The daemon killed with SIGKILL: the shim and its QEMU go on; a new daemon adopts them.
            cli("exec", sid, "--", "sh", "-c", "echo one > /workspace/a; sleep 600 > /dev/null 2>&1 & echo $! > /workspace/bg")
            # The shim is the process with the session's command line whose parent has not
            # (its forked QEMU jailer has it too).
            out = [int(p) for p in subprocess.run(["pgrep", "-f", f"__session-shim {state}/sessions/{sid}"], capture_output=True,
                                                  text=True).stdout.split()]
            shims = [p for p in out if parent_of(p) not in out]
            shim = shims[0] if len(shims) == 1 else 0
            qemus = [p for p in descendants(shim) if comm(p).startswith("qemu")]
            check("qemu_under_shim", shim > 0 and len(qemus) == 1, f"shim={shim} qemus={qemus}")
            daemon.send_signal(signal.SIGKILL)
            daemon.wait()
            check("daemon_kill.qemu_still_running", all(alive(q) for q in qemus) and alive(shim), f"qemus={qemus}")
            daemon = start_daemon()
            r = cli("exec", sid, "--", "sh", "-c", "cat /workspace/a; kill -0 $(cat /workspace/bg) && echo bg-alive")
            check("restart.exec", r.returncode == 0 and r.stdout == "one\nbg-alive\n", repr((r.returncode, r.stdout, r.stderr)))
        if on("refused"):
            # A profile's backend (docs/profile.schema.json): a session from it is a VM session,
            # and an override may only narrow it.
            prof = os.path.join(tmp, "vmprof.json")
            with open(prof, "w") as f:
                json.dump({"name": "vmprof", "session": {"backend": "vm", "vm": {"memory": "512M", "allow_weaker": ["kvm"]}}}, f)
            r = subprocess.run([CORRAL, "profile", "add", prof], env=env, capture_output=True, text=True, timeout=60)
            check("profile.add", r.returncode == 0, r.stderr)
            r = cli("create", "--profile", "vmprof", "--vm-memory", "1G")
            check("profile.widening_vm_memory_refused", r.returncode == 125 and "override vm.memory" in r.stderr, r.stderr)
            r = cli("create", "--profile", "vmprof", "--backend", "namespace")
            check("profile.backend_change_refused", r.returncode == 125 and "override backend" in r.stderr, r.stderr)
            r = cli("create", "--profile", "vmprof", "--json")
            check("profile.create", r.returncode == 0, r.stderr)
            if r.returncode == 0:
                pid_ = json.loads(r.stdout)["id"]
                r = cli("exec", pid_, "--", "sh", "-c", "test -e /workspace/a || echo fresh; cat /proc/cmdline >/dev/null; uname -r")
                host_release = os.uname().release
                check("profile.session_is_a_vm", r.returncode == 0 and "fresh" in r.stdout, repr((r.returncode, r.stdout, r.stderr)))
                print(f"info guest_kernel={r.stdout.split()[-1] if r.stdout.split() else ''} host_kernel={host_release}", flush=True)
                r = cli("rm", pid_)
                check("profile.rm", r.returncode == 0, r.stderr)
        if on("lifecycle"):
            r = cli("rm", sid)
            check("rm", r.returncode == 0, r.stderr)
            sid = None
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and (alive(shim) or any(alive(q) for q in qemus)):
                time.sleep(0.1)
            check("rm.no_qemu_left", not any(alive(q) for q in qemus) and not alive(shim), f"qemus={qemus} shim={shim}")
            # --ttl ends a VM session as rm does: no shim, no QEMU.
            r = cli("create", "--backend", "vm", "--allow-weaker", "kvm", "--ttl", "3s", "--json")
            check("ttl.create", r.returncode == 0, r.stderr)
            if r.returncode == 0:
                tid = json.loads(r.stdout)["id"]
                out = [int(p) for p in subprocess.run(["pgrep", "-f", f"__session-shim {state}/sessions/{tid}"], capture_output=True,
                                                      text=True).stdout.split()]
                procs = out + [q for p in out for q in descendants(p)]
                check("ttl.qemu_started", any(comm(p).startswith("qemu") for p in procs), f"procs={procs}")
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and any(alive(p) for p in procs):
                    time.sleep(0.2)
                check("ttl.no_qemu_left", not any(alive(p) for p in procs), f"procs={[p for p in procs if alive(p)]}")
    finally:
        if sid:
            cli("rm", sid)
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
        log.close()
        if failures:
            with open(os.path.join(tmp, "daemon.log"), errors="replace") as f:
                sys.stderr.write(f.read()[-4000:])
        subprocess.run(["rm", "-rf", tmp])
    print("FAILED: " + ", ".join(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
