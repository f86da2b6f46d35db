#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make demo-exec`: a tour of corral exec on its embedded defaults, each isolation layer at work.
# (`make demo` is the main job: an agent run, scripts/demo.sh.)
set -uo pipefail
corral=${1:-build/corral}
ws=$(mktemp -d /tmp/corral-demo.XXXXXX)
chmod 0755 "$ws"
trap 'rm -rf "$ws"' EXIT
printf 'print("hello from", __import__("socket").gethostname())\n' > "$ws/hello.py"

step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "$2"; }
run() {  # run CMD..., print its exit status
  "$@"
  local rc=$?
  printf '   -> exit %d\n' "$rc"
  return 0
}

echo "corral demo: every command below runs in a fresh sandbox (uid $(id -u) on the host)"
"$corral" doctor | sed -n '/^default exec/p'

step "who am I, where am I" "corral exec -- sh -c 'id; hostname; pwd; ls /'"
run "$corral" exec -- sh -c 'id; hostname; pwd; ls /'

step "no capabilities, no_new_privs, seccomp on" "corral exec -- grep -E 'Cap(Eff|Bnd)|NoNewPrivs|Seccomp:' /proc/self/status"
run "$corral" exec -- grep -E 'Cap(Eff|Bnd)|NoNewPrivs|Seccomp:' /proc/self/status

step "the caller's secrets do not follow" "AWS_SECRET_ACCESS_KEY=demo-sentinel corral exec -- sh -c 'env | grep -c demo-sentinel'"
AWS_SECRET_ACCESS_KEY=demo-sentinel run "$corral" exec -- sh -c 'env | grep -c demo-sentinel'

step "host files are not there; the runtime is read-only" "corral exec -- sh -c 'ls /etc; cat /etc/shadow; touch /usr/x'"
run "$corral" exec -- sh -c 'ls /etc; cat /etc/shadow; touch /usr/x'

step "loopback only: the host's network is unreachable" "corral exec -- python3 -c 'socket.create_connection((\"1.1.1.1\", 80), 2)'"
run "$corral" exec -- python3 -c '
import socket
try:
    socket.create_connection(("1.1.1.1", 80), 2)
    print("connected?!")
except OSError as e:
    print("refused:", e)
    raise SystemExit(1)' 

step "nested namespaces and mount are refused" "corral exec -- unshare -U true"
run "$corral" exec -- unshare -U true

step "a fork bomb is held by the pids limit" "corral exec --pids 64 -- python3 -c 'fork until refused'"
run "$corral" exec --pids 64 --timeout 10s -- python3 -c '
import os, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(30); os._exit(0)
        n += 1
except OSError as e:
    print("forked", n, "children, then:", e)' 

step "a timeout kills the whole tree" "corral exec --timeout 500ms -- sh -c 'sleep 100 & sleep 100'"
run "$corral" exec --timeout 500ms -- sh -c 'sleep 100 & sleep 100'

step "the workspace is a staged copy; only declared outputs come back" \
  "corral exec --workspace \$ws --output out.txt --output link -- sh -c 'python3 hello.py > out.txt; rm hello.py; ln -s /etc/passwd link'"
run "$corral" exec --workspace "$ws" --output out.txt --output link -- sh -c 'python3 hello.py > out.txt; rm hello.py; ln -s /etc/passwd link'
echo "   host workspace now: $(cd "$ws" && ls | tr '\n' ' ')"
echo "   out.txt: $(cat "$ws/out.txt" 2>/dev/null)"

step "machine-readable report" "corral exec --json -- true"
run "$corral" exec --json -- true
echo
echo "done: see docs/security-model.md and SECURITY.md for what each layer claims."
