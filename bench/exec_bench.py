#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Launch benchmark: `corral exec -- /bin/true` against bubblewrap, unshare, crun, firejail
and plain fork+exec with the same isolation shape, timed in one interleaved run by
corral-spawn-timer. Writes docs/benchmarks.md (or --out). Python 3 standard library only.

Nothing is ever estimated: a tool that is missing or fails its smoke run is skipped with
the reason printed and written into the report.
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOBODY = 65534
SETPRIV_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
CGROUP_V1 = Path("/sys/fs/cgroup")
CGROUP_UNIFIED = Path("/sys/fs/cgroup/unified")
# Goals from the launch-benchmark issue.
GOAL_RATIO_TO_BWRAP = 0.6


def log(msg: str) -> None:
    print(f"exec_bench: {msg}", file=sys.stderr, flush=True)


@dataclass
class Candidate:
    key: str            # stable id used in tables and JSON
    label: str          # what the table shows
    argv: list[str]
    root_only: bool = False      # needs real root (cgroups, setuid tool, setns)
    mntns: str | None = None     # run inside this mount namespace file (see side_mount_ns)
    note: str = ""
    skip: str | None = None      # reason, when not measured


@dataclass
class Context:
    tmp: Path
    uid: int
    workspace: Path
    corral: Path
    timer: Path
    bare: Path | None = None            # corral-bench-bare (bench/bare_launcher.c), if built
    order: str = "shuffle"
    gap_ms: int = 0
    side_ns: str | None = None          # /proc/PID/ns/mnt of the crun helper namespace
    side_ns_reason: str = ""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    runs: dict[str, dict] = field(default_factory=dict)  # per timer run: duration, noise
    all_candidates: list[Candidate] = field(default_factory=list)
    state_dir: Path = Path("/dev/shm")  # tmpfs for crun's state (see crun_argv)
    launcher_only: dict[str, dict] = field(default_factory=dict)
    staging: dict = field(default_factory=dict)  # workspace staging run (see staging_run)


# ---------------------------------------------------------------------------------------
# Host layout and facts


def root_links() -> list[tuple[str, str, str]]:
    """How this distro lays out /bin, /lib*, /sbin: ('symlink', target, path) or
    ('ro-bind', path, path) for each that exists."""
    out = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / name
        if p.is_symlink():
            out.append(("symlink", os.readlink(p), f"/{name}"))
        elif p.is_dir():
            out.append(("ro-bind", f"/{name}", f"/{name}"))
    return out


def run_text(argv: list[str], timeout: float = 10) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def host_facts(ctx: Context) -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    unified_ctrls = ""
    try:
        unified_ctrls = (CGROUP_UNIFIED / "cgroup.controllers").read_text().strip()
    except OSError:
        unified_ctrls = "(not mounted)"
    v1 = sorted(p.name for p in CGROUP_V1.iterdir() if p.is_dir() and p.name != "unified") \
        if CGROUP_V1.is_dir() else []
    versions = {}
    for tool, argv in (("bwrap", ["bwrap", "--version"]), ("crun", ["crun", "--version"]),
                       ("unshare", ["unshare", "--version"]),
                       ("firejail", ["firejail", "--version"])):
        if shutil.which(tool):
            versions[tool] = (run_text(argv).splitlines() or [""])[0]
    commit = run_text(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"])
    dirty = run_text(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"])
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(),
        "cores": os.cpu_count(),
        "cpu": cpu,
        "virt": run_text(["systemd-detect-virt"]) or "unknown",
        "distro": _os_release(),
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
        "cgroup_v1": v1,
        "unified_controllers": unified_ctrls or "(none)",
        "versions": versions,
        "corral": str(ctx.corral),
        "uid": ctx.uid,
    }


def _os_release() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return "unknown"


# ---------------------------------------------------------------------------------------
# crun needs a mount namespace where /sys/fs/cgroup/unified is not cgroup2 on hybrid hosts


def side_mount_ns(ctx: Context) -> subprocess.Popen | None:
    """crun (1.8) refuses every container on a hybrid cgroup host whose cgroup2 hierarchy
    lists any controller ("cgroups in hybrid mode not supported"), even with
    --cgroup-manager=disabled. Rather than edit the host, park a process in a private mount
    namespace where a tmpfs covers /sys/fs/cgroup/unified; the timer setns()es crun's
    children into it (a few microseconds, measured by the fork+exec+setns control row)."""
    try:
        ctrls = (CGROUP_UNIFIED / "cgroup.controllers").read_text().strip()
    except OSError:
        return None  # not hybrid (or no unified mount): crun works as is
    if not ctrls:
        return None
    if ctx.uid != 0:
        ctx.side_ns_reason = (f"hybrid cgroup host with controllers in cgroup2 ({ctrls}); "
                              "crun refuses to run and hiding cgroup2 needs root")
        return None
    script = ("mount -t tmpfs -o size=64k,mode=755 corral-bench-hide /sys/fs/cgroup/unified "
              "&& echo ready && exec sleep 100000")
    proc = subprocess.Popen(["unshare", "--mount", "--propagation", "slave", "sh", "-c", script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip() if proc.stdout else ""
    if line != "ready":
        err = proc.stderr.read().strip() if proc.stderr else ""
        proc.kill()
        proc.wait()
        ctx.side_ns_reason = f"could not build a mount namespace hiding cgroup2: {err}"
        return None
    ctx.side_ns = f"/proc/{proc.pid}/ns/mnt"
    ctx.side_ns_reason = (f"hybrid cgroup host: cgroup2 lists '{ctrls}', so crun runs in a "
                          "mount namespace where a tmpfs covers /sys/fs/cgroup/unified")
    return proc


# ---------------------------------------------------------------------------------------
# Candidates


def bwrap_argv(ctx: Context, unshare: list[str], workspace: Path) -> list[str]:
    argv = ["bwrap", *unshare, "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
    for kind, src, dst in root_links():
        argv += ["--symlink", src, dst] if kind == "symlink" else ["--ro-bind", src, dst]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
             "--bind", str(workspace), "/workspace", "--chdir", "/workspace", "/bin/true"]
    return argv


UNSHARE_FULL = ["--user", "--map-root-user", "--mount", "--pid", "--fork", "--ipc", "--uts",
                "--net"]


def crun_bundle(ctx: Context, name: str, owner: int, cgroups: bool) -> Path:
    """A bundle with the same shape as the bwrap line: user+mount+pid+ipc+uts+net namespaces,
    a read-only root holding /usr (ro bind), the distro's /bin,/lib* links, /proc, /dev
    (tmpfs with crun's default devices), /tmp (tmpfs) and the workspace bound rw."""
    bundle = ctx.tmp / name
    rootfs = bundle / "rootfs"
    for d in ("usr", "proc", "dev", "tmp", "workspace"):
        (rootfs / d).mkdir(parents=True, exist_ok=True)
    for kind, src, dst in root_links():
        if kind == "symlink":
            (rootfs / dst.lstrip("/")).symlink_to(src)
        else:
            (rootfs / dst.lstrip("/")).mkdir(exist_ok=True)
    mounts = [{"destination": "/usr", "type": "bind", "source": "/usr",
               "options": ["rbind", "ro", "nosuid", "nodev"]}]
    for kind, src, dst in root_links():
        if kind == "ro-bind":
            mounts.append({"destination": dst, "type": "bind", "source": src,
                           "options": ["rbind", "ro", "nosuid", "nodev"]})
    mounts += [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "mode=755", "size=64k"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]},
        {"destination": "/workspace", "type": "bind", "source": str(ctx.workspace),
         "options": ["rbind", "rw", "nosuid", "nodev"]},
    ]
    linux: dict = {
        "uidMappings": [{"containerID": 0, "hostID": owner, "size": 1}],
        "gidMappings": [{"containerID": 0, "hostID": owner, "size": 1}],
        "namespaces": [{"type": t} for t in ("user", "mount", "pid", "ipc", "uts", "network")],
    }
    if cgroups:
        linux["resources"] = {"memory": {"limit": 256 * 1024 * 1024}, "pids": {"limit": 256}}
        linux["cgroupsPath"] = f"/corral-bench-{os.getpid()}/crun"
    config = {
        "ociVersion": "1.0.0",
        "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "args": ["/bin/true"],
                    "env": ["PATH=/usr/bin:/bin"], "cwd": "/workspace",
                    "noNewPrivileges": True,
                    "capabilities": {"bounding": [], "effective": [], "permitted": []}},
        "root": {"path": "rootfs", "readonly": True},
        "hostname": "corral-bench",
        "mounts": mounts,
        "linux": linux,
    }
    (bundle / "config.json").write_text(json.dumps(config, indent=1))
    state = ctx.state_dir / name
    state.mkdir()
    if owner != 0:
        for p in [bundle, state, *bundle.rglob("*")]:
            os.lchown(p, owner, owner)
    return bundle


def crun_argv(ctx: Context, bundle: Path, cgroups: bool) -> list[str]:
    manager = "cgroupfs" if cgroups else "disabled"
    # `crun run` (not detached) deletes the container state when it exits, so the same id
    # can be reused round after round. The state dir goes on tmpfs, as /run/crun is on most
    # hosts: on this VM /run is on the ext4 root (mounted with `discard`), where deleting
    # crun's state file waits for a discard in unlinkat (about 3 ms, seen off-CPU).
    state = ctx.state_dir / bundle.name
    return ["crun", "--root", str(state), f"--cgroup-manager={manager}", "run", "--bundle",
            str(bundle), f"corral-bench-{os.getpid()}-{bundle.name}"]


BARE_LABELS = {
    "bare_nonet": ("bare launcher, bwrap's mounts, no network namespace", ["--no-net"]),
    "bare": ("bare launcher: bwrap's namespaces and mounts, nothing else", []),
}


def bare_candidates(ctx: Context, keys: list[str]) -> list[Candidate]:
    """The control of bench/bare_launcher.c: what bwrap's shape costs without bwrap (or corral)."""
    out = []
    for k in keys:
        label, flags = BARE_LABELS[k]
        c = Candidate(k, label, [str(ctx.bare), *flags, str(ctx.workspace), "/bin/true"],
                      note="a control, not a sandbox: no seccomp, Landlock, /etc, /proc masks or "
                           "supervision (bench/bare_launcher.c)")
        if ctx.bare is None:
            c.skip = "corral-bench-bare not built next to corral"
        out.append(c)
    return out


def main_candidates(ctx: Context, as_nobody: bool) -> list[Candidate]:
    owner = NOBODY if as_nobody else ctx.uid
    c = [
        Candidate("fork", "fork+exec /bin/true", ["/bin/true"],
                  note="the timer's own fork+execve+wait4: the floor"),
        Candidate("unshare", "unshare user+mnt+pid+ipc+uts+net", ["unshare", *UNSHARE_FULL,
                                                                   "/bin/true"],
                  note="namespaces only: no mounts, no pivot_root"),
        Candidate("bwrap", "bubblewrap --unshare-all", bwrap_argv(ctx, ["--unshare-all"],
                                                                   ctx.workspace)),
        *bare_candidates(ctx, ["bare"]),
    ]
    if shutil.which("crun"):
        plain = crun_bundle(ctx, "crun-" + ("nobody" if as_nobody else "root"), owner, False)
        c.append(Candidate("crun", "crun, no cgroups", crun_argv(ctx, plain, False),
                           mntns=ctx.side_ns))
        if not as_nobody:
            cg = crun_bundle(ctx, "crun-cgroups", owner, True)
            c.append(Candidate("crun_cg", "crun + memory/pids cgroups", crun_argv(ctx, cg, True),
                               root_only=True, mntns=ctx.side_ns,
                               note="cgroupfs manager: one cgroup per mounted v1 hierarchy"))
    else:
        ctx.skipped.append(("crun", "not installed"))
    if shutil.which("firejail"):
        c.append(Candidate("firejail", "firejail --noprofile --net=none",
                           ["firejail", "--quiet", "--noprofile", "--net=none", "/bin/true"],
                           root_only=True, note="setuid root; not offered to nobody here"))
    else:
        ctx.skipped.append(("firejail", "not installed (optional)"))
    c.append(Candidate("corral", "corral exec", [str(ctx.corral), "exec", "--", "/bin/true"]))
    c.append(Candidate("corral_cg", "corral exec --memory 256M --pids 256",
                       [str(ctx.corral), "exec", "--memory", "256M", "--pids", "256", "--",
                        "/bin/true"], root_only=True,
                       note="limits enforced by cgroups (root)"))
    return c


# The lease variant's secret: a fixed stand-in set in this process's environment (main), which
# the timer and corral inherit. Never sent anywhere: the command makes no request.
LEASE_ENV = "CORRAL_BENCH_LEASE_SECRET"


def breakdown_candidates(ctx: Context) -> list[Candidate]:
    """Variants that isolate one cost each, timed in their own interleaved run."""
    u = ["unshare"]
    c = [
        Candidate("fork", "fork+exec /bin/true", ["/bin/true"]),
        Candidate("unshare_none", "unshare (no namespaces): one extra exec", [*u, "/bin/true"]),
        Candidate("unshare_user", "unshare --user --map-root-user",
                  [*u, "--user", "--map-root-user", "/bin/true"]),
        Candidate("unshare_user_mnt", "  + --mount",
                  [*u, "--user", "--map-root-user", "--mount", "/bin/true"]),
        Candidate("unshare_user_mnt_pid", "  + --pid --fork",
                  [*u, "--user", "--map-root-user", "--mount", "--pid", "--fork", "/bin/true"]),
        Candidate("unshare_nonet", "  + --ipc --uts (all but net)",
                  [*u, "--user", "--map-root-user", "--mount", "--pid", "--fork", "--ipc",
                   "--uts", "/bin/true"]),
        Candidate("unshare_full", "  + --net (all six)", [*u, *UNSHARE_FULL, "/bin/true"]),
        Candidate("unshare_net_only", "unshare --net (root, no userns)",
                  [*u, "--net", "/bin/true"], root_only=True),
        Candidate("bwrap_mnt", "bwrap, mount ns only (--ro-bind / /)",
                  ["bwrap", "--ro-bind", "/", "/", "/bin/true"]),
        Candidate("bwrap_nonet", "bwrap, all namespaces but net",
                  bwrap_argv(ctx, ["--unshare-user", "--unshare-ipc", "--unshare-pid",
                                   "--unshare-uts", "--unshare-cgroup"], ctx.workspace)),
        Candidate("bwrap", "bwrap --unshare-all (the comparison line)",
                  bwrap_argv(ctx, ["--unshare-all"], ctx.workspace)),
        *bare_candidates(ctx, ["bare_nonet", "bare"]),
    ]
    if ctx.side_ns:
        c.append(Candidate("fork_setns", "fork+setns(mnt)+exec /bin/true (crun's control)",
                           ["/bin/true"], root_only=True, mntns=ctx.side_ns))
    corral = str(ctx.corral)
    c += [
        Candidate("corral_version", "corral version: the launcher starts and exits; no sandbox",
                  [corral, "version"]),
        Candidate("corral", "corral exec", [corral, "exec", "--", "/bin/true"]),
        Candidate("corral_mem", "corral exec --memory 256M", [corral, "exec", "--memory", "256M",
                                                              "--", "/bin/true"],
                  root_only=True),
        Candidate("corral_pids", "corral exec --pids 256", [corral, "exec", "--pids", "256",
                                                            "--", "/bin/true"],
                  root_only=True),
        Candidate("corral_cg", "corral exec --memory 256M --pids 256",
                  [corral, "exec", "--memory", "256M", "--pids", "256", "--", "/bin/true"],
                  root_only=True),
        # The egress proxy: a corral-core process started beside the sandbox (docs/architecture.md,
        # "Two binaries"); with a lease the command waits until the proxy has read its secret.
        Candidate("corral_proxy", "corral exec --net proxy", [corral, "exec", "--net", "proxy", "--", "/bin/true"]),
        Candidate("corral_lease", "corral exec --net proxy --credential (one lease)",
                  [corral, "exec", "--net", "proxy", "--credential",
                   f"bench={LEASE_ENV}@https://api.example.com", "--", "/bin/true"]),
    ]
    return c


# ---------------------------------------------------------------------------------------
# Running


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _enter_mntns(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc().setns(fd, 0) != 0:
            raise OSError(ctypes.get_errno(), f"setns {path}")
    finally:
        os.close(fd)


def smoke(cand: Candidate, as_nobody: bool) -> str | None:
    """Runs the command once; returns a reason when it cannot be measured."""
    exe = cand.argv[0]
    if "/" not in exe and not shutil.which(exe):
        return f"{exe} not installed"
    if "/" in exe and not os.access(exe, os.X_OK):
        return f"{exe} not found or not executable"
    argv = (SETPRIV_NOBODY + cand.argv) if as_nobody else cand.argv
    preexec = (lambda: _enter_mntns(cand.mntns)) if cand.mntns else None
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=30, preexec_fn=preexec)
    except subprocess.TimeoutExpired:
        return "smoke run timed out after 30 s"
    except OSError as e:
        return f"smoke run could not start: {e}"
    if r.returncode != 0:
        first = next((ln for ln in r.stderr.splitlines() if ln.strip()), "").strip()
        return f"smoke run exited {r.returncode}: {first[:200]}"
    return None


def cpu_busy() -> tuple[float, float]:
    """(busy, total) jiffies summed over all CPUs, from /proc/stat."""
    f = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = f[3] + (f[4] if len(f) > 4 else 0)
    return sum(f) - idle, sum(f)


def busy_fraction(seconds: float) -> float:
    b0, t0 = cpu_busy()
    time.sleep(seconds)
    b1, t1 = cpu_busy()
    return (b1 - b0) / max(1.0, t1 - t0)


def wait_quiet(max_wait: float, threshold: float = 0.15) -> float:
    """Waits (up to max_wait s) for the host's CPUs to be mostly idle; returns the last
    busy fraction seen. Other work on the host inflates every number in the table."""
    deadline = time.monotonic() + max_wait
    while True:
        frac = busy_fraction(1.0)
        if frac <= threshold or time.monotonic() >= deadline:
            return frac
        log(f"host CPUs {frac:.0%} busy; waiting for them to settle")


_BOOST = {"nice": None}  # autogroup nice to give every timed or profiled process tree


def run_boosted(argv: list[str], **kw) -> subprocess.CompletedProcess:
    """subprocess.run in a session of its own whose autogroup gets _BOOST's nice. With
    CONFIG_SCHED_AUTOGROUP the scheduler shares CPU between sessions first and only then
    by nice inside each, so a nice value alone does not shield the run from a busy
    neighbour session; the autogroup's own nice does. Only this session is touched."""
    capture = kw.pop("capture_output", False)
    if capture:
        kw["stdout"] = kw["stderr"] = subprocess.PIPE
    timeout = kw.pop("timeout", None)
    with subprocess.Popen(argv, start_new_session=True, **kw) as proc:
        if _BOOST["nice"] is not None:
            try:
                Path(f"/proc/{proc.pid}/autogroup").write_text(str(_BOOST["nice"]))
            except OSError:
                pass
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def run_timer(ctx: Context, cands: list[Candidate], rounds: int, warmup: int,
              as_nobody: bool, tag: str, extra: tuple[str, ...] = ()) -> dict[str, dict]:
    live = [c for c in cands if not c.skip]
    if not live:
        return {}
    tsv = ctx.tmp / f"{tag}.tsv"
    lines = []
    for c in live:
        if any("\t" in a or "\n" in a for a in c.argv):
            raise SystemExit(f"argument of {c.key} contains a tab or newline")
        lines.append("\t".join([c.key, *c.argv]))
    tsv.write_text("\n".join(lines) + "\n")
    tsv.chmod(0o644)
    argv = [str(ctx.timer), "-n", str(rounds), "-w", str(warmup), "--samples",
            "--order", ctx.order, "--gap-ms", str(ctx.gap_ms), *extra]
    for c in live:
        if c.mntns:
            argv += ["--setns", f"{c.key}={c.mntns}"]
    argv.append(str(tsv))
    if as_nobody:
        argv = SETPRIV_NOBODY + argv
    log(f"{tag}: {len(live)} commands x {rounds} rounds (+{warmup} warm-up)")
    t0 = time.monotonic()
    b0, j0 = cpu_busy()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = run_boosted(argv, capture_output=True, text=True, cwd=str(ctx.tmp))
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    b1, j1 = cpu_busy()
    elapsed = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"corral-spawn-timer failed ({r.returncode}): {r.stderr.strip()}")
    hz = os.sysconf("SC_CLK_TCK")
    ours = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    cores = os.cpu_count() or 1
    others = max(0.0, ((b1 - b0) / hz - ours) / (elapsed * cores))
    ctx.runs[tag] = {"seconds": round(elapsed, 1), "other_cpu_busy": round(others, 3)}
    log(f"{tag}: done in {elapsed:.1f} s; CPU busy with other work: {others:.0%}")
    data = json.loads(r.stdout)
    out = {}
    for cmd in data["commands"]:
        out[cmd["name"]] = cmd
        if cmd["failed"]:
            log(f"{tag}: {cmd['name']} failed {cmd['failed']} time(s) "
                f"(last status {cmd['last_status']})")
    return out


STAGING_DIRS, STAGING_PER_DIR, STAGING_FILE_BYTES = 40, 50, 4096


def staging_run(ctx: Context, rounds: int, warmup: int) -> dict:
    """`corral exec --workspace` copies the tree into the sandbox; bubblewrap has no staged
    copy, so it is measured twice: binding the host directory (no copy: the command writes the
    host's files) and copying it with `cp -a` inside the same sandbox (a staged copy by hand)."""
    ws = ctx.tmp / "staging-ws"
    files = nbytes = 0
    for d in range(STAGING_DIRS):
        sub = ws / f"d{d:02}"
        sub.mkdir(parents=True)
        for f in range(STAGING_PER_DIR):
            (sub / f"f{f:03}").write_bytes(os.urandom(STAGING_FILE_BYTES))
            files, nbytes = files + 1, nbytes + STAGING_FILE_BYTES
    bind = bwrap_argv(ctx, ["--unshare-all"], ws)
    i = bind.index("--bind")
    copy = (bind[:i] + ["--ro-bind", str(ws), "/src", "--tmpfs", "/workspace"] + bind[i + 3:-1]
            + ["/bin/cp", "-a", "/src/.", "/workspace/"])
    cands = [Candidate("corral_ws", "corral exec --workspace (staged copy)",
                       [str(ctx.corral), "exec", "--workspace", str(ws), "--workspace-size", "1G",
                        "--", "/bin/true"]),
             Candidate("bwrap_cp", "bwrap, `cp -a` into a tmpfs /workspace", copy),
             Candidate("bwrap_bind", "bwrap --bind (no copy: the host directory itself)", bind)]
    mark_skips(cands, ctx, False, "staging")
    res = run_timer(ctx, cands, rounds, warmup, False, "staging")
    return {"files": files, "bytes": nbytes, "dirs": STAGING_DIRS, "res": res,
            "cands": [{"key": c.key, "label": c.label, "argv": c.argv, "skip": c.skip}
                      for c in cands]}


def staging_section(st: dict) -> list[str]:
    if not st or not st.get("res"):
        return []
    res = st["res"]
    ref = res.get("bwrap_cp", {}).get("wall_ms", {}).get("median")
    L = ["## Workspace staging", "",
         f"`corral exec --workspace DIR` copies DIR into the sandbox's size-capped tmpfs before "
         f"the command starts: the host's files are never written, and only declared outputs "
         f"come back. Tree: {st['files']} files of {STAGING_FILE_BYTES // 1024} KiB in "
         f"{st['dirs']} directories ({st['bytes'] / 2**20:.1f} MiB), command `/bin/true`, same "
         "timer, its own interleaved run. bubblewrap has no staged copy: with `--bind` the "
         "command works on the host's files themselves (a different guarantee, shown for "
         "scale), and a bwrap user who wants a copy runs `cp -a` inside.", "",
         "| tool | median ms | p10 | p90 | CPU ms (median) | x bwrap + cp -a |",
         "|---|---:|---:|---:|---:|---:|"]
    for c in st["cands"]:
        r = res.get(c["key"])
        if c["skip"] or not r or not r["ok"]:
            continue
        w = r["wall_ms"]
        L.append(f"| {c['label']} | **{fmt(w['median'])}** | {fmt(w['p10'])} | {fmt(w['p90'])} "
                 f"| {fmt(r['cpu_ms']['median'])} | {fmt(w['median'] / ref) if ref else 'n/a'} |")
    return L + ["", "corral lists the tree on one thread and copies files on that thread and one "
                "more (src/sandbox/workspace_stage.cc); a root caller switches to the sandbox's "
                "owner once for the whole copy.", ""]


def mark_skips(cands: list[Candidate], ctx: Context, as_nobody: bool, tag: str) -> None:
    for c in cands:
        if c.skip:
            pass
        elif c.root_only and (as_nobody or ctx.uid != 0):
            c.skip = "needs root"
        elif c.mntns is None and c.key.startswith("crun") and ctx.side_ns_reason and \
                not ctx.side_ns:
            c.skip = ctx.side_ns_reason
        else:
            c.skip = smoke(c, as_nobody)
        if c.skip:
            log(f"{tag}: skip {c.key}: {c.skip}")


# ---------------------------------------------------------------------------------------
# Extra measurements: cgroup operations, launcher-tree memory, corral --timing, perf trace


def time_cgroup_ops(reps: int = 5, idle_s: float = 0.1) -> dict:
    """Times the cgroup operations a launcher performs, each alone, in this process: mkdir,
    one write of a pid to cgroup.procs (the attach), rmdir. The moved task is a parked
    child, so the write is the kernel's attach path and nothing else.

    "cold" attaches come after idle_s of no attach anywhere, as a one-shot launch sees them;
    "warm" ones right after another attach. The difference is the cgroup_threadgroup_rwsem
    write lock: its rcu_sync waits for a full RCU grace period unless a writer passed
    through within roughly the last grace period."""
    if os.geteuid() != 0:
        return {"skip": "needs root"}
    hier = []
    for p in sorted(CGROUP_V1.iterdir()) if CGROUP_V1.is_dir() else []:
        if (p / "cgroup.procs").exists() and p.name not in ("unified",):
            hier.append(p)
    if (CGROUP_UNIFIED / "cgroup.procs").exists():
        hier.append(CGROUP_UNIFIED)
    if not hier:
        return {"skip": "no cgroup hierarchy mounted"}
    r_fd, w_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # parked child: blocks until the pipe closes
        os.close(w_fd)
        os.read(r_fd, 1)
        os._exit(0)
    os.close(r_fd)

    def timed(fn) -> float:
        t = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - t) / 1e6

    results = {}
    try:
        for h in hier:
            home = _own_cgroup(h)
            s: dict[str, list[float]] = {"mkdir": [], "cold": [], "warm": [], "rmdir": []}
            try:
                for i in range(reps):
                    d = h / f"corral-bench-{os.getpid()}-{i}"
                    s["mkdir"].append(timed(lambda: os.mkdir(d)))
                    time.sleep(idle_s)
                    s["cold"].append(timed(lambda: (d / "cgroup.procs").write_text(str(pid))))
                    (home / "cgroup.procs").write_text(str(pid))
                    s["warm"].append(timed(lambda: (d / "cgroup.procs").write_text(str(pid))))
                    (home / "cgroup.procs").write_text(str(pid))
                    s["rmdir"].append(timed(lambda: os.rmdir(d)))
            except OSError as e:
                results[h.name] = {"skip": e.strerror or str(e)}
                _cleanup_cgroups(h)
                continue
            results[h.name] = {k: statistics.median(v) for k, v in s.items()}
    finally:
        os.close(w_fd)
        os.waitpid(pid, 0)
    return results


def _own_cgroup(h: Path) -> Path:
    """This process's cgroup in hierarchy h (to move the parked child back)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        names = ctrls.split(",") if ctrls else []
        if (h == CGROUP_UNIFIED and ctrls == "") or h.name in names or \
                (ctrls.startswith("name=") and h.name == ctrls[5:]):
            return h / path.lstrip("/")
    return h


def _cleanup_cgroups(h: Path) -> None:
    for d in h.glob(f"corral-bench-{os.getpid()}-*"):
        try:
            os.rmdir(d)
        except OSError:
            pass


def tree_memory(ctx: Context, cands: list[Candidate], reps: int = 5) -> dict[str, float]:
    """Peak memory charged to a fresh v1 memory cgroup holding the launcher and everything
    it starts (kernel objects and page tables included; pages already cached are not
    re-charged). For launchers that move the payload into a cgroup of their own, the
    payload's share is not counted; with /bin/true it is negligible."""
    mem = CGROUP_V1 / "memory"
    if os.geteuid() != 0 or not (mem / "memory.max_usage_in_bytes").exists():
        return {}
    cg = mem / f"corral-bench-mem-{os.getpid()}"
    out: dict[str, float] = {}
    try:
        cg.mkdir()
        for c in cands:
            if c.skip:
                continue
            vals = []
            for _ in range(reps):
                base = int((cg / "memory.usage_in_bytes").read_text())
                (cg / "memory.max_usage_in_bytes").write_text("0")

                def pre(c=c):
                    (cg / "cgroup.procs").write_text("0")
                    if c.mntns:
                        _enter_mntns(c.mntns)
                r = subprocess.run(c.argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, preexec_fn=pre, timeout=30)
                if r.returncode != 0:
                    break
                peak = int((cg / "memory.max_usage_in_bytes").read_text())
                vals.append(max(0, peak - base) / 1024)
            if vals:
                out[c.key] = statistics.median(vals)
    except OSError as e:
        log(f"tree memory: {e}")
    finally:
        try:
            cg.rmdir()
        except OSError:
            pass
    return out


_TIMING_TOKEN = re.compile(r"([A-Za-z_][\w.\-/]*)[=:]\s*([0-9]+(?:\.[0-9]+)?)\s*(ns|us|µs|ms|s)?\b")
_STEP_TOKEN = re.compile(r"\[([^\]]+)\]=([0-9]+(?:\.[0-9]+)?)")
_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, None: 1.0}


def corral_timing(ctx: Context, key: str, extra: list[str], reps: int = 30) -> dict:
    """Runs `corral exec --timing` through the timer (same gap, no shell) and collects every
    `key=NUMBER[unit]` corral prints on stderr (no unit means ms): medians per key, plus the
    median wall time of the same runs, so "outside the phases" compares like with like."""
    argv = [str(ctx.corral), "exec", "--timing", *extra, "--", "/bin/true"]
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=30)
    except OSError as e:
        return {"skip": f"cannot run corral: {e}"}
    if r.returncode != 0:
        first = next((ln for ln in r.stderr.splitlines() if ln.strip()), "")
        return {"skip": f"`corral exec --timing` exited {r.returncode}: {first.strip()[:200]}"}
    tsv = ctx.tmp / f"timing-{key}.tsv"
    tsv.write_text("\t".join([key, *argv]) + "\n")
    tr = run_boosted([str(ctx.timer), "-n", str(reps), "-w", "1", "--stderr", "--order",
                         "rotate", "--gap-ms", str(ctx.gap_ms), str(tsv)],
                        capture_output=True, text=True, timeout=300)
    if tr.returncode != 0:
        return {"skip": f"corral-spawn-timer failed: {tr.stderr.strip()[:200]}"}
    wall = json.loads(tr.stdout)["commands"][0]["wall_ms"]["median"]
    all_lines = [ln for ln in tr.stderr.splitlines() if "timing" in ln]
    # Per-step lines look like "... steps (us): [1 clone /usr]=76 [2 ...]=10"; the phase
    # line is plain key=value. A warm-up run printed the first of each kind.
    step_lines = [ln for ln in all_lines if _STEP_TOKEN.search(ln)]
    # "timing child (us): ..." is the sandbox init's own marks, nested inside the parent's
    # `run` phase and in the unit its header names: a table of its own, never summed with
    # the parent's phases (doing so once reported microseconds as milliseconds).
    child_lines = [ln for ln in all_lines if ln not in step_lines and "timing child" in ln]
    lines = [ln for ln in all_lines
             if ln not in step_lines and ln not in child_lines and _TIMING_TOKEN.search(ln)]
    if not lines:
        return {"skip": "`--timing` printed nothing parseable as key=value", "raw": r.stderr}
    if len(lines) > reps:
        lines = lines[1:]
    if len(step_lines) > reps:
        step_lines = step_lines[1:]
    if len(child_lines) > reps:
        child_lines = child_lines[1:]
    samples: dict[str, list[float]] = {}
    sums: list[float] = []
    for line in lines:
        seen: dict[str, int] = {}
        total = 0.0
        for m in _TIMING_TOKEN.finditer(line):
            name, val, unit = m.group(1), float(m.group(2)), m.group(3)
            n = seen.get(name, 0)
            seen[name] = n + 1
            ms = val * _UNIT_MS[unit]
            samples.setdefault(name if n == 0 else f"{name}#{n + 1}", []).append(ms)
            total += ms
        sums.append(total)
    steps: dict[str, list[float]] = {}
    step_sums: list[float] = []
    for line in step_lines:
        unit = _UNIT_MS.get(m.group(1)) if (m := re.search(r"\((ns|us|µs|ms|s)\)", line)) else 1.0
        total = 0.0
        for m in _STEP_TOKEN.finditer(line):
            ms = float(m.group(2)) * (unit or 1.0)
            steps.setdefault(m.group(1), []).append(ms)
            total += ms
        step_sums.append(total)
    child: dict[str, list[float]] = {}
    for line in child_lines:
        m = re.search(r"\((ns|us|µs|ms|s)\)", line)
        unit = _UNIT_MS[m.group(1)] if m else 1.0
        body = line.split(":", 2)[-1]
        for m in re.finditer(r"([A-Za-z_][\w>\-]*)=([0-9]+(?:\.[0-9]+)?)", body):
            child.setdefault(m.group(1), []).append(float(m.group(2)) * unit)
    return {"phases": {k: statistics.median(v) for k, v in samples.items()},
            "child": {k: statistics.median(v) for k, v in child.items()},
            "sum_median": statistics.median(sums), "wall_median": wall, "n": len(sums),
            "steps": {k: statistics.median(v) for k, v in steps.items()},
            "steps_sum_median": statistics.median(step_sums) if step_sums else None,
            "raw": "\n".join(all_lines[-2:])}


def oncpu_profile(ctx: Context, cand: Candidate, runs: int = 30, freq: int = 10000) -> dict:
    """Where the launch burns CPU: `perf record -F freq -g` over `runs` launches started by
    the timer (no shell), every sample of the launched tree sorted into a bucket: the
    syscall it is in, a page fault (by the library that faulted), or user code (by library),
    and by generation in the tree (fork events tell who is whose child). Result in ms per
    launch, so it adds up to about the CPU ms column."""
    if not shutil.which("perf"):
        return {"skip": "perf not installed"}
    if os.geteuid() != 0:
        return {"skip": "needs root"}
    tsv = ctx.tmp / f"oncpu-{cand.key}.tsv"
    tsv.write_text("\t".join([cand.key, *cand.argv]) + "\n")
    data = ctx.tmp / f"oncpu-{cand.key}.data"
    timer = [str(ctx.timer), "-n", str(runs), "-w", "0", "--gap-ms", "5"]
    if cand.mntns:
        timer += ["--setns", f"{cand.key}={cand.mntns}"]
    rec = run_boosted(["perf", "record", "-q", "-F", str(freq), "-g", "-e", "cpu-clock",
                          "-e", "sched:sched_process_fork", "-o", str(data), "--", *timer,
                          str(tsv)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, timeout=300)
    if rec.returncode != 0:
        return {"skip": f"perf record exited {rec.returncode}: {rec.stderr.strip()[:200]}"}
    script = subprocess.run(["perf", "script", "-i", str(data), "-F",
                             "comm,tid,event,trace,ip,sym,dso"],
                            capture_output=True, text=True, timeout=300)
    data.unlink(missing_ok=True)
    if script.returncode != 0:
        return {"skip": f"perf script exited {script.returncode}"}
    depth: dict[int, int] = {}
    buckets: dict[str, int] = {}
    n = 0
    for comm, tid, event, trace, frames in _samples(script.stdout):
        if event.startswith("sched:sched_process_fork"):
            f = dict(re.findall(r"(\w+)=(\S+)", trace))
            parent, child = int(f.get("pid", -1)), int(f.get("child_pid", -1))
            if f.get("comm", "").startswith("corral-spawn"):
                depth[child] = 1
            elif parent in depth:
                depth[child] = depth[parent] + 1
            continue
        if tid not in depth:
            continue  # the timer itself, or perf
        n += 1
        key = f"[{depth[tid]}] {comm}: {_cpu_bucket(frames)}"
        buckets[key] = buckets.get(key, 0) + 1
    per = 1000.0 / freq / runs
    top = sorted(((k, v * per) for k, v in buckets.items()), key=lambda t: -t[1])
    gens: dict[str, float] = {}
    for k, v in top:
        g = k.split("]", 1)[0] + "]"
        gens[g] = gens.get(g, 0.0) + v
    return {"runs": runs, "freq": freq, "total_ms": n * per, "top": top,
            "generations": dict(sorted(gens.items()))}


def _samples(text: str):
    """Yields (comm, tid, event, trace, frames) per `perf script` record."""
    head = re.compile(r"^\s*(.+?)\s+(\d+)\s+(\S+):\s*(.*)$")
    rec = None
    for line in text.splitlines():
        if not line.strip():
            if rec is not None:
                yield rec
            rec = None
            continue
        if line[0] not in " \t" or rec is None:
            if rec is not None:
                yield rec
            m = head.match(line)
            rec = (m.group(1), int(m.group(2)), m.group(3), m.group(4), []) if m else \
                ("?", -1, "?", "", [])
            continue
        parts = line.split(None, 2)
        if len(parts) >= 2:
            rec[4].append((parts[1].split("+")[0], parts[2].strip() if len(parts) > 2 else ""))
    if rec is not None:
        yield rec


def _cpu_bucket(frames: list[tuple[str, str]]) -> str:
    for sym, _ in frames:
        m = re.match(r"__(?:x64|ia32)_sys_(\w+)|__do_sys_(\w+)", sym)
        if m:
            name = "syscall " + (m.group(1) or m.group(2))
            syms = [f for f, _ in frames]
            if "create_new_namespaces" in syms:  # which namespace the clone is building
                i = syms.index("create_new_namespaces")
                name += f" ({syms[i - 1] if i > 0 else 'create_new_namespaces'})"
            return name
    user = [d for _, d in frames if "kernel" not in d]
    lib = (user[0].strip("()").rsplit("/", 1)[-1] if user else "?")
    if any("page_fault" in sym for sym, _ in frames):
        return f"page faults in {lib}"
    if frames and "kernel" in frames[0][1]:
        return "kernel: " + " <- ".join(sym for sym, _ in frames[:2])
    return f"user code in {lib}"


_SCHED_FRAMES = ("__schedule", "schedule", "preempt_schedule", "io_schedule", "__cond_resched",
                 "_cond_resched", "schedule_timeout", "schedule_hrtimeout",
                 "schedule_hrtimeout_range", "schedule_hrtimeout_range_clock",
                 "schedule_preempt_disabled", "poll_schedule_timeout", "rwsem_down_write_slowpath",
                 "rwsem_down_read_slowpath", "percpu_rwsem_wait", "__percpu_down_read",
                 "wait_for_completion", "__wait_for_common", "wait_for_common",
                 "do_wait_for_common", "__mutex_lock", "mutex_lock", "__mutex_lock_slowpath")
# Blocked here means waiting for another process of the same launch, not for the kernel.
_PEER_WAITS = ("do_wait", "kernel_wait4", "pipe_read", "do_sys_poll", "do_poll", "ep_poll",
               "unix_stream_read_generic", "unix_stream_data_wait", "futex_wait",
               "__futex_wait", "do_select", "core_sys_select", "eventfd_read",
               "wait_woken", "do_sigtimedwait", "pidfd_poll", "__skb_wait_for_more_packets",
               "__unix_dgram_recvmsg", "do_epoll_wait", "__skb_recv_datagram")


def _stack_key(frames: list[str]) -> str:
    syscall = ""
    for f in frames:
        m = re.match(r"__(?:x64|ia32|se)_sys_(\w+)|__do_sys_(\w+)|__sys_(\w+)|ksys_(\w+)", f)
        if m:
            syscall = next(g for g in m.groups() if g)
            break
    if not syscall and any(f in ("do_exit", "do_group_exit") for f in frames):
        syscall = "exit"
    if not syscall and any("page_fault" in f or f == "handle_mm_fault" for f in frames):
        syscall = "page fault"
    rest = [f for f in frames if f.split(".")[0] not in _SCHED_FRAMES]
    where = " <- ".join(rest[:3]) if rest else "?"
    peer = any(f.split(".")[0] in _PEER_WAITS for f in rest[:4])
    return f"{syscall or 'kernel'}: {where}" + (" (waits on another process)" if peer else "")


def offcpu_profile(ctx: Context, cand: Candidate, reps: int = 5) -> dict:
    """Where the launch sleeps, from the scheduler's own trace: system-wide
    sched_switch/fork/exec/exit with kernel call chains (perf record -a -g), restricted to the
    launched process tree. Each interval from a switch-out to the next switch-in of the same
    task is charged to the switch-out call chain. Costs a few microseconds per context switch,
    so the traced wall time is reported next to the untraced one."""
    if not shutil.which("perf"):
        return {"skip": "perf not installed"}
    if os.geteuid() != 0:
        return {"skip": "needs root (system-wide sched tracepoints)"}
    exe = os.path.realpath(cand.argv[0] if "/" in cand.argv[0] else
                           (shutil.which(cand.argv[0]) or cand.argv[0]))
    runs: list[dict[str, float]] = []
    walls: list[float] = []
    for i in range(reps):
        data = ctx.tmp / f"offcpu-{cand.key}-{i}.data"
        preexec = (lambda: _enter_mntns(cand.mntns)) if cand.mntns else None
        rec = run_boosted(
            ["perf", "record", "-q", "-a", "-g", "-o", str(data), "-e", "sched:sched_switch",
             "-e", "sched:sched_process_fork", "-e", "sched:sched_process_exec",
             "-e", "sched:sched_process_exit", "--", *cand.argv],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True, timeout=60, preexec_fn=preexec)
        if rec.returncode != 0:
            return {"skip": f"perf record exited {rec.returncode}: {rec.stderr.strip()[:200]}"}
        script = subprocess.run(["perf", "script", "-i", str(data), "-F",
                                 "comm,tid,time,event,trace,ip,sym"],
                                capture_output=True, text=True, timeout=120)
        data.unlink(missing_ok=True)
        if script.returncode != 0:
            return {"skip": f"perf script exited {script.returncode}"}
        totals, counts, wall = _parse_offcpu(script.stdout, exe)
        if wall is None:
            return {"skip": "could not find the launched process in the trace"}
        runs.append((totals, counts))
        walls.append(wall)
    keys = {k for r, _ in runs for k in r}
    top = sorted(((k, statistics.median([r.get(k, 0.0) for r, _ in runs]),
                   statistics.median([c.get(k, 0) for _, c in runs])) for k in keys),
                 key=lambda t: -t[1])
    return {"n": reps, "wall_ms_traced": statistics.median(walls), "top": top}


def _parse_offcpu(text: str, exe: str) -> tuple[dict[str, float], dict[str, int],
                                                float | None]:
    header = re.compile(r"^\s*(.+?)\s+(\d+)\s+([0-9.]+):\s+([\w:]+):\s*(.*)$")
    events = []
    cur = None
    for line in text.splitlines():
        if not line.strip():
            cur = None
            continue
        if line[0] in " \t" and cur is not None and not header.match(line):
            parts = line.split()
            if len(parts) >= 2:
                cur["stack"].append(parts[1].split("+")[0])
            continue
        m = header.match(line)
        if not m:
            continue
        fields = dict(re.findall(r"(\w+)=(\S+)", m.group(5)))
        cur = {"tid": int(m.group(2)), "t": float(m.group(3)) * 1e3, "ev": m.group(4),
               "f": fields, "stack": []}
        events.append(cur)
    tree: set[int] = set()
    root = None
    start = end = None
    pending: dict[int, tuple[float, str]] = {}
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    for e in events:
        ev, f = e["ev"], e["f"]
        if ev.endswith("sched_process_exec") and root is None:
            if os.path.realpath(f.get("filename", "")) == exe:
                root = int(f.get("pid", e["tid"]))
                tree.add(root)
                start = e["t"]
            continue
        if root is None:
            continue
        if ev.endswith("sched_process_fork"):
            if int(f.get("pid", -1)) in tree:
                tree.add(int(f["child_pid"]))
        elif ev.endswith("sched_process_exit"):
            if int(f.get("pid", -1)) == root:
                end = e["t"]
        elif ev.endswith("sched_switch"):
            prev, nxt = int(f.get("prev_pid", -1)), int(f.get("next_pid", -1))
            comm = f.get("prev_comm", "?")
            if prev in tree and end is None:
                state = f.get("prev_state", "S")
                key = (f"{comm} preempted: runnable, waiting for a CPU" if state.startswith("R")
                       else f"{comm} {_stack_key(e['stack'])}")
                pending[prev] = (e["t"], key)
            if nxt in pending:
                t0, key = pending.pop(nxt)
                totals[key] = totals.get(key, 0.0) + (e["t"] - t0)
                counts[key] = counts.get(key, 0) + 1
    if root is None or start is None:
        return {}, {}, None
    return totals, counts, (end if end is not None else events[-1]["t"]) - start


# ---------------------------------------------------------------------------------------
# Report


def fmt(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def table_rows(cands: list[Candidate], res: dict, mem: dict[str, float]) -> list[str]:
    bw = res.get("bwrap", {}).get("wall_ms", {}).get("median")
    fk = res.get("fork", {}).get("wall_ms", {}).get("median")
    rows = ["| tool | median ms | p10 | p90 | min | CPU ms (median) | x bwrap | x fork+exec | "
            "peak RSS of one process (KiB) | tree peak memory (KiB) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cands:
        if c.skip or c.key not in res or not res[c.key]["ok"]:
            continue
        w = res[c.key]["wall_ms"]
        med = w["median"]
        rows.append(
            f"| {c.label} | **{fmt(med)}** | {fmt(w['p10'])} | {fmt(w['p90'])} | {fmt(w['min'])} "
            f"| {fmt(res[c.key]['cpu_ms']['median'])} "
            f"| {fmt(med / bw) if bw else 'n/a'} | {fmt(med / fk, 1) if fk else 'n/a'} "
            f"| {res[c.key]['maxrss_kb']['max']:.0f} "
            f"| {fmt(mem.get(c.key), 0) if c.key in mem else '-'} |")
    return rows


def goals(res: dict) -> list[str]:
    def med(k):
        r = res.get(k)
        return r["wall_ms"]["median"] if r and r["ok"] else None
    lines = []
    corral, bw, ccg, crun_cg = med("corral"), med("bwrap"), med("corral_cg"), med("crun_cg")
    if corral is not None and bw is not None:
        ok = corral <= GOAL_RATIO_TO_BWRAP * bw
        lines.append(f"- Default `corral exec` at most {GOAL_RATIO_TO_BWRAP}x bubblewrap's median: "
                     f"{fmt(corral)} ms vs {fmt(GOAL_RATIO_TO_BWRAP * bw)} ms allowed "
                     f"({fmt(corral / bw)}x) -> **{'met' if ok else 'NOT met'}**.")
    else:
        lines.append("- Default `corral exec` at most 0.6x bubblewrap: **not measured** "
                     "(see skipped tools).")
    bare = med("bare")
    if bare is not None and bw is not None:
        lines.append(f"  - For scale, in the same rounds: the bare launcher (bwrap's namespaces and "
                     f"mounts, nothing corral adds) {fmt(bare)} ms ({fmt(bare / bw)}x bwrap)"
                     + (f", `unshare` {fmt(med('unshare'))} ms ({fmt(med('unshare') / bw)}x)"
                        if med("unshare") is not None else "") + ".")
    if ccg is not None and crun_cg is not None:
        ok = ccg <= crun_cg
        lines.append(f"- `corral exec --memory/--pids` no slower than crun with cgroups: "
                     f"{fmt(ccg)} ms vs {fmt(crun_cg)} ms ({fmt(ccg / crun_cg)}x) -> "
                     f"**{'met' if ok else 'NOT met'}**.")
    else:
        lines.append("- `corral exec --memory/--pids` no slower than crun with cgroups: "
                     "**not measured** (see skipped tools).")
    return lines


def render(ctx: Context, facts: dict, args, main_c, main_r, mem, bd_c, bd_r, cg_ops, timing,
           timing_cg, traces, cpu_profiles, nobody) -> str:
    L: list[str] = []
    L += ["<!-- Generated by bench/exec_bench.py; rerun `make bench` instead of editing. -->",
          "# Launch benchmark: `corral exec -- /bin/true`", "",
          "What it costs to start one command in a fresh sandbox, against the tools that do the "
          "same job, all timed in one run by `corral-spawn-timer` (bench/spawn_timer.c): "
          "interleaved rounds, each round runs every command once via fork+execve+wait4 "
          + ("in a freshly shuffled order" if args.order == "shuffle" else
             "with the starting command rotated")
          + ", one warm-up round discarded, CLOCK_MONOTONIC from before fork until the last "
          "process of the launch has been reaped. No shell is in the measured path.", "",
          "## Machine", "",
          f"- Date: {facts['date']}; commit `{facts['commit']}`",
          f"- Kernel {facts['kernel']}, {facts['cores']} cores ({facts['cpu']}, "
          f"virtualization: {facts['virt']}), {facts['distro']}",
          f"- cgroup v1 hierarchies: {', '.join(facts['cgroup_v1']) or 'none'}; cgroup2 at "
          f"/sys/fs/cgroup/unified with controllers: {facts['unified_controllers']}",
          "- Tools: " + "; ".join(f"{k} `{v}`" for k, v in facts["versions"].items()),
          f"- Run as uid {facts['uid']}; {args.rounds} measured rounds (+{args.warmup} warm-up) "
          f"for the main table, {args.breakdown_rounds} for the breakdown; order "
          f"`{args.order}`, {args.gap_ms} ms idle before each run; everything ran at nice "
          f"{facts.get('nice', 0)}" + (", in sessions whose scheduler autogroup also had nice "
          f"{_BOOST['nice']}" if _BOOST["nice"] is not None else "") + " (the same for every "
          "tool; it only shields the run from other work on the host).",
          f"- Host noise: CPUs {facts.get('idle_before', 0):.0%} idle just before the main run; "
          "share of CPU time used by other work during each timed run: " +
          ", ".join(f"{k} {v['other_cpu_busy']:.0%} ({v['seconds']} s)"
                    for k, v in ctx.runs.items()) + ". Other work inflates the medians; "
          "the ratios, from one interleaved run, suffer less.", ""]
    if ctx.side_ns_reason:
        L += [f"Note on crun: {ctx.side_ns_reason}. The timer enters that namespace with one "
              "setns() in the forked child before execve; the `fork+setns(mnt)+exec` row in the "
              "breakdown measures what that adds. crun keeps its state on tmpfs (`--root` under "
              "/dev/shm), as `/run/crun` is on most hosts.", ""]
    L += ["## Results", "",
          "Same isolation shape for every sandboxing row: new user, mount, PID, IPC, UTS and "
          "network namespaces; read-only /usr plus the distro's /bin, /lib* links; /proc; "
          "a minimal /dev; tmpfs /tmp; the workspace bound at /workspace (the exact command "
          "lines are at the end). `unshare` creates the namespaces but builds no filesystem, "
          "so it is a lower bound for the namespace part alone.", "",
          *table_rows(main_c, main_r, mem), "",
          "- *median ms* runs until the last process of the launch is gone: the timer is a child "
          "subreaper and also reaps what a launcher leaves behind (bwrap's outer process exits "
          "before its sandbox's pid 1 has finished exiting). See the breakdown for the "
          "launcher-only clock.",
          "- *CPU ms*: user+system CPU of every process of the launch (wait4 rusage of all "
          "reaped processes).",
          "- *peak RSS of one process*: `ru_maxrss` from wait4, the largest peak RSS of any "
          "single process of the launch (max over rounds; for corral, its own launcher). *tree peak memory*: peak charge of a "
          "fresh memory cgroup holding the whole launcher tree (median of 5 runs; includes "
          "kernel memory; root only).", ""]
    skipped = [(c.label, c.skip) for c in main_c if c.skip] + ctx.skipped
    if skipped:
        L += ["Skipped (no number is reported for these):", ""]
        L += [f"- {name}: {why}" for name, why in skipped]
        L.append("")
    L += ["## Goals", "", *goals(main_r)]
    mem_ops = cg_ops.get("memory") if isinstance(cg_ops, dict) else None
    if mem_ops and mem_ops.get("cold", 99) < 1.0:
        L.append("- Caveat for the cgroup goal: this host no longer pays the 7-15 ms cgroup-v1 "
                 "attach (see *cgroup operations* below), so both cgroup rows are faster than "
                 "on a stock host; the reference run at the end measured them on a stock host.")
    L.append("")
    if nobody is not None:
        nc, nr = nobody
        L += ["## Rootless (as nobody, uid 65534)", "",
              "The rootless-capable subset, rerun with the timer itself running as nobody.", "",
              *table_rows(nc, nr, {}), ""]
        ns = [(c.label, c.skip) for c in nc if c.skip]
        if ns:
            L += ["Skipped as nobody:", "", *[f"- {n}: {w}" for n, w in ns], ""]
    L += staging_section(ctx.staging)
    findings = REPO / "bench" / "findings.md"
    if findings.is_file():
        # Hand-written reading of a run (bench/findings.md names the run it is about);
        # everything else in this file is generated.
        L += [findings.read_text().strip(), ""]
    L += where_ms(ctx, main_r, bd_c, bd_r, cg_ops, timing, timing_cg, traces, cpu_profiles)
    ref = reference_runs()
    if ref:
        L += ["## Reference runs", "", *ref]
    L += ["## Command lines", "", "```"]
    for c in main_c:
        if not c.skip:
            L.append(f"{c.key}: {' '.join(c.argv)}")
    L += ["```", "", "Reproduce: `make bench` (runs `python3 bench/exec_bench.py --corral "
          "build/corral --out docs/benchmarks.md`); see bench/README.md.", ""]
    return "\n".join(L)


def attach_mode_note(cg_ops: dict) -> list[str]:
    mem = cg_ops.get("memory") if isinstance(cg_ops, dict) else None
    if not mem or "cold" not in mem:
        return []
    if mem["cold"] < 1.0:
        return ["**On this host a cold cgroup v1 attach does not wait for an RCU grace period** "
                f"(memory: {fmt(mem['cold'], 3)} ms cold). The kernel is in per-threadgroup "
                "cgroup.procs locking, which a cgroup hierarchy mounted with `favordynmods` "
                "turns on (and, on 6.18, leaves on until reboot). A stock cgroup-v1 host pays "
                "7-15 ms for the same write: see the reference run below.", ""]
    return [f"A cold attach costs {fmt(mem['cold'], 1)} ms and a warm one {fmt(mem['warm'], 2)} ms: "
            "writing `cgroup.procs` takes cgroup_threadgroup_rwsem for writing, and its "
            "rcu_sync waits for a full RCU grace period unless another writer passed within "
            "about the last grace period. Every one-shot launch with cgroup limits pays it "
            "once; the attaches that follow within the window (crun's other hierarchies) "
            "are cheap.", ""]


def reference_runs() -> list[str]:
    """Earlier runs kept in bench/results/ because they show something this host can no
    longer show (each file says why in its "note")."""
    L: list[str] = []
    for path in sorted((REPO / "bench" / "results").glob("*.json")):
        try:
            d = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            log(f"reference {path.name}: {e}")
            continue
        f = d.get("facts", {})
        L += [f"### Reference run: `bench/results/{path.name}`", "",
              f"{d.get('note', '')} Date {f.get('date', '?')}, commit `{f.get('commit', '?')}`, "
              f"kernel {f.get('kernel', '?')}.", ""]
        main, bd = d.get("main", {}), d.get("breakdown", {})
        bw = main.get("bwrap", {}).get("wall_ms", {}).get("median")
        L += ["| run | tool | median ms | CPU ms | x bwrap |", "|---|---|---:|---:|---:|"]
        for run, res in (("main", main), ("breakdown", bd)):
            base = res.get("bwrap", {}).get("wall_ms", {}).get("median")
            for k, v in res.items():
                if v.get("ok"):
                    m = v["wall_ms"]["median"]
                    L.append(f"| {run} | {k} | {fmt(m)} | {fmt(v['cpu_ms']['median'])} | "
                             f"{fmt(m / base) if base else 'n/a'} |")
        runs = (d.get("render") or {}).get("runs")
        if runs:
            L.append("")
            L.append("Other work's share of the CPUs during that run: " + ", ".join(
                f"{k} {v['other_cpu_busy']:.0%}" for k, v in runs.items()) + ".")
        L.append("")
        ops = d.get("cgroup_ops", {})
        if isinstance(ops, dict) and ops.get("memory", {}).get("cold") is not None:
            L += ["cgroup attach there (median ms, cold / warm): " + ", ".join(
                f"{h} {fmt(v['cold'], 1)} / {fmt(v['warm'], 2)}" for h, v in ops.items()
                if isinstance(v, dict) and "cold" in v), ""]
        for key, tr in (d.get("offcpu") or {}).items():
            if key != "corral_cg" or tr.get("skip"):
                continue
            L += [f"Off-CPU, {key} there: " + "; ".join(
                f"{t[0]} {fmt(t[1])} ms" for t in tr.get("top", [])[:3]), ""]
    return L


def where_ms(ctx, main_r, bd_c, bd_r, cg_ops, timing, timing_cg, traces,
             cpu_profiles) -> list[str]:
    L = ["## Where each millisecond goes", "",
         "Measured without tracing: variants that each add one cost, in their own "
         "interleaved run (medians, ms). Deltas are against the row named in the last column.",
         ""]
    prev = {"unshare_none": "fork", "unshare_user": "unshare_none",
            "unshare_user_mnt": "unshare_user", "unshare_user_mnt_pid": "unshare_user_mnt",
            "unshare_nonet": "unshare_user_mnt_pid", "unshare_full": "unshare_nonet",
            "unshare_net_only": "unshare_none", "bwrap_mnt": "fork", "bwrap_nonet": "bwrap_mnt",
            "bwrap": "bwrap_nonet", "bare_nonet": "fork", "bare": "bare_nonet",
            "fork_setns": "fork", "corral_version": "fork",
            "corral": "corral_version",
            "corral_mem": "corral", "corral_pids": "corral", "corral_cg": "corral",
            "corral_proxy": "corral", "corral_lease": "corral_proxy"}
    L += ["| variant | median ms | CPU ms | delta ms | vs |", "|---|---:|---:|---:|---|"]
    for c in bd_c:
        r = bd_r.get(c.key)
        if c.skip or not r or not r["ok"]:
            continue
        m = r["wall_ms"]["median"]
        base = prev.get(c.key)
        b = bd_r.get(base) if base else None
        delta = fmt(m - b["wall_ms"]["median"]) if b and b["ok"] else ""
        L.append(f"| {c.label} | {fmt(m)} | {fmt(r['cpu_ms']['median'])} | {delta} | "
                 f"{base or ''} |")
    lo = ctx.launcher_only
    if lo:
        L += ["", "Stopping the clock when the launched process is reaped (`--launcher-only`), "
              "instead of when the last process of the launch is gone (the default, for which "
              "the timer is a child subreaper), in its own interleaved run:", "",
              "| tool | launcher-only median ms | CPU ms |", "|---|---:|---:|"]
        for k, r in lo.items():
            if r["ok"]:
                L.append(f"| {k} | {fmt(r['wall_ms']['median'])} | {fmt(r['cpu_ms']['median'])} |")
        L += ["", "bwrap's outer process exits as soon as its pid 1 reports the command's "
              "status over an eventfd, before that pid 1 has exited and its namespaces are torn "
              "down; corral waits for its init (the contract: when the command exits, every "
              "process of the sandbox is gone). The main table counts both the same way."]
    sk = [(c.label, c.skip) for c in bd_c if c.skip]
    if sk:
        L += ["", "Not measured: " + "; ".join(f"{n.strip()} ({w})" for n, w in sk)]
    L.append("")
    if cg_ops.get("skip"):
        L += [f"cgroup operations: not measured ({cg_ops['skip']}).", ""]
    elif cg_ops:
        L += ["### cgroup operations, one at a time (median ms of 5)", "",
              "One `write(pid)` to `cgroup.procs` of a parked task is the attach; nothing else "
              "runs. *cold*: after 100 ms without any attach, as a one-shot launch sees it; "
              "*warm*: right after another attach.", "",
              "| hierarchy | mkdir | attach, cold | attach, warm | rmdir |",
              "|---|---:|---:|---:|---:|"]
        for h, v in cg_ops.items():
            if "skip" in v:
                L.append(f"| {h} | {v['skip']} | | | |")
            else:
                L.append(f"| {h} | {fmt(v['mkdir'], 3)} | **{fmt(v['cold'], 3)}** | "
                         f"{fmt(v['warm'], 3)} | {fmt(v['rmdir'], 3)} |")
        L.append("")
        L += attach_mode_note(cg_ops)
    for key, title, t in (("corral", "corral exec --timing", timing),
                          ("corral_cg", "corral exec --timing --memory 256M --pids 256",
                           timing_cg)):
        if t is None:
            continue
        L += [f"### `{title}` (corral's own per-phase breakdown)", ""]
        if t.get("skip"):
            L += [f"Not available: {t['skip']}.", ""]
            if t.get("raw"):
                L += ["```", t["raw"].strip()[:3000], "```", ""]
            continue
        L += [f"Median over {t['n']} runs (timed by corral-spawn-timer like the table) of "
              "each `key=value` corral printed on stderr. The marks are consecutive in the "
              "parent, so each phase is the time since the previous mark; the sandbox's own "
              "setup (mounts, seccomp, exec) runs inside `run`.", "",
              "| phase | median ms |", "|---|---:|"]
        L += [f"| {k} | {fmt(v, 3)} |" for k, v in t["phases"].items()]
        L.append(f"| *sum of phases (median of per-run sums)* | {fmt(t['sum_median'], 3)} |")
        L.append(f"| *outside the phases: exec of corral, CLI parsing, report, "
                 f"exit (median wall {fmt(t['wall_median'])} of the same runs minus the sum)* | "
                 f"{fmt(t['wall_median'] - t['sum_median'], 3)} |")
        if t.get("child"):
            L += ["", "Inside `run`: the sandbox init's own consecutive marks (it reports them in "
                  "microseconds; shown here in ms). `clone->maps_wait` starts at the clone, "
                  "`init_exit_and_teardown` ends when the parent has reaped the init.", "",
                  "| init phase | median ms |", "|---|---:|"]
            L += [f"| {k} | {fmt(v, 3)} |" for k, v in t["child"].items()]
        if t.get("steps"):
            top = sorted(t["steps"].items(), key=lambda kv: -kv[1])[:8]
            L += ["", f"The sandbox's mount steps (inside `run`), {len(t['steps'])} of them, "
                  f"median of their per-run sum {fmt(t['steps_sum_median'], 3)} ms; the "
                  "costliest by median:", "", "| step | median ms |", "|---|---:|"]
            L += [f"| {k} | {fmt(v, 3)} |" for k, v in top]
        L += ["", "One run's raw output:", "", "```", t["raw"].strip()[:3000], "```", ""]
    labels = {c.key: c.label for c in ctx.all_candidates}
    if traces:
        L += ["### Where the launch sleeps (off-CPU, from the scheduler trace)", "",
              "`perf record -a -g` of sched_switch/fork/exec/exit during one launch, kept to the "
              "launched process tree: every interval between a task's switch-out and its next "
              "switch-in is charged to the kernel call chain it blocked in (median ms over 5 "
              "launches, summed over the tree's tasks, so a parent waiting on its child counts "
              "both). Rows marked *waits on another process* are a launcher waiting for its "
              "own child or helper; the others are the kernel making the launch wait. "
              "*preempted* is time runnable but without a CPU (host load). Tracing costs "
              "microseconds per context switch; the traced wall time is shown.", ""]
    for key, tr in traces.items():
        name = labels.get(key, key)
        if tr.get("skip"):
            L += [f"- {name}: not profiled ({tr['skip']}).", ""]
            continue
        base = main_r.get(key, {}).get("wall_ms", {}).get("median")
        L += [f"**{name}**: traced wall {fmt(tr['wall_ms_traced'])} ms "
              f"(untraced median {fmt(base)} ms)", "",
              "| task and where it blocked | ms | times |", "|---|---:|---:|"]
        shown = [t for t in tr["top"] if t[1] >= 0.05][:10]
        L += [f"| {k} | {fmt(v)} | {n:g} |" for k, v, n in shown]
        L.append("")
    if cpu_profiles:
        L += ["### Where the launch burns CPU (on-CPU samples)", "",
              "`perf record -F 10000 -g` over 30 launches started by the timer; each sample of "
              "the launched tree goes to the syscall it is in (for clones: the namespace being "
              "built), a page fault (by the faulting library) or user code (by library). ms per "
              "launch; compare with the CPU ms column. [1] is the launched process, [2] its "
              "children (the sandbox's init or helper), [3] theirs (the command).", ""]
    for key, pr in cpu_profiles.items():
        name = labels.get(key, key)
        if pr.get("skip"):
            L += [f"- {name}: not profiled ({pr['skip']}).", ""]
            continue
        gens = ", ".join(f"{g} {fmt(v)}" for g, v in pr.get("generations", {}).items())
        L += [f"**{name}**: {fmt(pr['total_ms'])} ms of samples per launch ({gens})", "",
              "| task: where | ms per launch |", "|---|---:|"]
        # The forked timer child keeps the timer's comm until its execve of the launcher.
        L += [f"| {k.replace('corral-spawn-ti:', 'launcher being exec-ed:')} | {fmt(v)} |"
              for k, v in pr["top"] if v >= 0.1][:18]
        L.append("")
    return L


# ---------------------------------------------------------------------------------------


def render_from(args) -> int:
    d = json.loads(Path(args.render_from).read_text())
    r = d.get("render")
    if not r:
        log(f"{args.render_from} has no render section (written by an older exec_bench.py)")
        return 2

    def cands(lst):
        return [Candidate(c["key"], c["label"], c["argv"], skip=c["skip"]) for c in lst or []]
    main_c, bd_c = cands(r["main_c"]), cands(r["bd_c"])
    ctx = Context(tmp=Path("/nonexistent"), uid=d["facts"]["uid"], workspace=Path("/"),
                  corral=Path(d["facts"]["corral"]), timer=Path("/"))
    ctx.runs, ctx.side_ns_reason = r["runs"], r["side_ns_reason"]
    ctx.skipped = [tuple(x) for x in r["extra_skipped"]]
    ctx.all_candidates, ctx.launcher_only = main_c, d.get("launcher_only") or {}
    ctx.staging = d.get("staging") or {}
    _BOOST["nice"] = r.get("boost")
    a = argparse.Namespace(**r["args"])
    nobody = (cands(r["nobody_c"]), d["nobody"]) if r.get("nobody_c") else None
    report = render(ctx, d["facts"], a, main_c, d["main"], d["tree_memory_kib"], bd_c,
                    d["breakdown"], d["cgroup_ops"], d["timing"], d["timing_cg"], d["offcpu"],
                    d["oncpu"], nobody)
    if args.no_write:
        print(report)
    else:
        Path(args.out).write_text(report)
        log(f"wrote {args.out} from {args.render_from}")
    return 0


def find_timer(corral: Path, explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit)
    for d in (corral.parent, REPO / "build", REPO / "build-bench"):
        p = d / "corral-spawn-timer"
        if p.is_file() and os.access(p, os.X_OK):
            return p.resolve()
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corral", default=str(REPO / "build" / "corral"))
    ap.add_argument("--timer", help="corral-spawn-timer (default: next to --corral)")
    ap.add_argument("--out", default=str(REPO / "docs" / "benchmarks.md"))
    ap.add_argument("--json", help="also write every sample and measurement here")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--breakdown-rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--order", choices=("shuffle", "rotate"), default="shuffle",
                    help="command order within a round (see corral-spawn-timer --help)")
    ap.add_argument("--gap-ms", type=int, default=50,
                    help="idle time before each timed run (default 50: a cgroup attach "
                         "after less idle than about one RCU grace period is cheaper than "
                         "a one-shot launch ever sees; see docs/benchmarks.md)")
    ap.add_argument("--wait-quiet", type=float, default=60,
                    help="wait up to this many seconds for idle host CPUs before timing")
    ap.add_argument("--no-renice", action="store_true",
                    help="as root the bench runs at nice -20 so that other work on the host "
                         "takes less from it; this turns that off")
    ap.add_argument("--as-nobody", action="store_true",
                    help="also rerun the rootless-capable subset as uid 65534")
    ap.add_argument("--no-breakdown", action="store_true")
    ap.add_argument("--no-staging", action="store_true", help="skip the workspace staging run")
    ap.add_argument("--staging-rounds", type=int, default=20)
    ap.add_argument("--no-write", action="store_true", help="print the report, do not write --out")
    ap.add_argument("--render-from", metavar="JSON",
                    help="measure nothing: render the report again from a --json file (after "
                         "editing bench/findings.md, say)")
    args = ap.parse_args()
    # Make SIGTERM/SIGINT unwind through the finally below: it stops the helper process and
    # removes temp dirs and cgroups.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.render_from:
        return render_from(args)
    os.environ.setdefault(LEASE_ENV, "corral-bench-stand-in-secret")

    corral = Path(args.corral).resolve()
    timer = find_timer(corral, args.timer)
    if not timer:
        log("corral-spawn-timer not found: build it (cmake --build BUILD --target "
            "corral-spawn-timer) or pass --timer")
        return 2
    niceness = os.nice(0)
    if os.geteuid() == 0 and not args.no_renice:
        niceness = os.nice(-20 - niceness)  # every launcher and sandbox inherits it
        _BOOST["nice"] = -20
    t_start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="corral-bench-"))
    tmp.chmod(0o755)
    ws = tmp / "workspace"
    ws.mkdir()
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else tmp
    state_dir = Path(tempfile.mkdtemp(prefix="corral-bench-crun-", dir=shm))
    state_dir.chmod(0o755)
    bare = timer.parent / "corral-bench-bare"
    ctx = Context(tmp=tmp, uid=os.geteuid(), workspace=ws, corral=corral, timer=timer,
                  bare=bare if os.access(bare, os.X_OK) else None,
                  order=args.order, gap_ms=args.gap_ms, state_dir=state_dir)
    helper = None
    try:
        helper = side_mount_ns(ctx)
        facts = host_facts(ctx)
        facts["nice"] = niceness
        main_c = main_candidates(ctx, as_nobody=False)
        ctx.all_candidates = main_c
        mark_skips(main_c, ctx, False, "main")
        facts["idle_before"] = 1 - wait_quiet(args.wait_quiet)
        main_r = run_timer(ctx, main_c, args.rounds, args.warmup, False, "main")
        mem = tree_memory(ctx, main_c)

        bd_c, bd_r, cg_ops, timing, timing_cg, traces = [], {}, {}, None, None, {}
        lo_r: dict[str, dict] = {}
        cpu_profiles: dict[str, dict] = {}
        if not args.no_breakdown:
            bd_c = breakdown_candidates(ctx)
            mark_skips(bd_c, ctx, False, "breakdown")
            bd_r = run_timer(ctx, bd_c, args.breakdown_rounds, args.warmup, False, "breakdown")
            lo_c = [c for c in main_c if c.key in ("fork", "bwrap", "crun", "corral") and not c.skip]
            lo_r = run_timer(ctx, lo_c, args.breakdown_rounds, args.warmup, False,
                             "launcher-only", ("--launcher-only",))
            cg_ops = time_cgroup_ops()
            corral_ok = not next(c for c in main_c if c.key == "corral").skip
            if corral_ok:
                timing = corral_timing(ctx, "corral", [])
                if not next(c for c in main_c if c.key == "corral_cg").skip:
                    timing_cg = corral_timing(ctx, "corral_cg",
                                              ["--memory", "256M", "--pids", "256"])
            else:
                timing = {"skip": "`corral exec` itself does not run yet (see skipped tools)"}
            for c in main_c:
                if c.key in ("corral", "corral_cg", "bwrap", "crun_cg") and not c.skip:
                    log(f"off-CPU profile: {c.key}")
                    traces[c.key] = offcpu_profile(ctx, c)
            for c in main_c:
                if c.key in ("corral", "corral_cg", "bwrap") and not c.skip:
                    log(f"on-CPU profile: {c.key}")
                    cpu_profiles[c.key] = oncpu_profile(ctx, c)

        nobody = None
        if args.as_nobody:
            if ctx.uid != 0:
                log("--as-nobody needs root to switch users; skipping")
            else:
                os.chown(ws, NOBODY, NOBODY)
                nc = [c for c in main_candidates(ctx, as_nobody=True) if not c.root_only]
                if ctx.side_ns:  # setns into root's namespace is not possible as nobody
                    for c in nc:
                        if c.mntns:
                            c.mntns = None
                            c.skip = ("hybrid cgroup host: crun refuses to run, and only root "
                                      "can hide cgroup2 from it")
                mark_skips(nc, ctx, True, "nobody")
                nr = run_timer(ctx, nc, args.rounds, args.warmup, True, "nobody")
                nobody = (nc, nr)

        if not args.no_staging:
            ctx.staging = staging_run(ctx, args.staging_rounds, args.warmup)
        ctx.launcher_only = lo_r
        report = render(ctx, facts, args, main_c, main_r, mem, bd_c, bd_r, cg_ops, timing,
                        timing_cg, traces, cpu_profiles, nobody)
        if args.json:
            def cands(cs):
                return [{"key": c.key, "label": c.label, "argv": c.argv, "skip": c.skip}
                        for c in cs]
            Path(args.json).write_text(json.dumps({
                "facts": facts, "main": main_r, "breakdown": bd_r, "cgroup_ops": cg_ops,
                "tree_memory_kib": mem, "timing": timing, "timing_cg": timing_cg,
                "offcpu": traces, "oncpu": cpu_profiles, "launcher_only": lo_r,
                "nobody": nobody[1] if nobody else None, "staging": ctx.staging,
                "skipped": {c.key: c.skip for c in main_c if c.skip},
                # Enough to render the report again (--render-from) without rerunning.
                "render": {"main_c": cands(main_c), "bd_c": cands(bd_c),
                           "nobody_c": cands(nobody[0]) if nobody else None,
                           "runs": ctx.runs, "side_ns_reason": ctx.side_ns_reason,
                           "extra_skipped": ctx.skipped, "boost": _BOOST["nice"],
                           "args": {k: getattr(args, k) for k in
                                    ("rounds", "warmup", "breakdown_rounds", "order", "gap_ms")}},
            }, indent=1))
        if args.no_write:
            print(report)
        else:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(report)
            log(f"wrote {args.out}")
        for line in goals(main_r):
            log(line.lstrip("- "))
        log(f"total {time.monotonic() - t_start:.0f} s")
        return 0
    finally:
        if helper:
            helper.send_signal(signal.SIGTERM)
            helper.wait()
        for h in (CGROUP_V1.iterdir() if CGROUP_V1.is_dir() else []):
            d = h / f"corral-bench-{os.getpid()}"
            if d.is_dir():  # crun's parent cgroup (it removes only its leaf)
                try:
                    d.rmdir()
                except OSError as e:
                    log(f"could not remove {d}: {e}")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(state_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
