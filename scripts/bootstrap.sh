#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package corral's build, tests and benchmarks need. Idempotent:
# apt-get runs only when something is missing, so a second call costs a dpkg query.
set -euo pipefail

# Optional, never part of the default run: `scripts/bootstrap.sh kernel-build` installs what
# scripts/build-vm-kernel.sh needs to build the minimal VM guest kernel (issue 23), and only that.
kernel_build() {
  local deps=(linux-source-6.1 build-essential bc bison flex libelf-dev libssl-dev xz-utils perl)
  local need=() p
  for p in "${deps[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  ((${#need[@]})) || return 0
  if [[ $(id -u) -ne 0 ]]; then
    echo "bootstrap: missing packages: ${need[*]}; run as root: sudo scripts/bootstrap.sh kernel-build" >&2
    return 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}
if [[ ${1:-} == kernel-build ]]; then kernel_build; exit; fi

packages=(
  build-essential cmake ninja-build ccache pkg-config clang
  libseccomp-dev nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  libssl-dev libcap-dev libcurl4-openssl-dev libidn2-dev libunistring-dev libboost-dev
  bubblewrap crun util-linux iproute2 python3 curl git strace openssl
  clang-14 libclang-rt-14-dev llvm-14 clang-tidy-14 cppcheck
  # make release / test-release (issue 25): packaging, its checks, and the clean install root
  dpkg-dev lintian mmdebstrap man-db groff-base systemd node-spdx-license-ids node-spdx-exceptions
  wabt wasi-libc libclang-rt-14-dev-wasm32 lld-14
  netbase libpython3.11-testsuite nodejs
  qemu-system-x86 linux-image-amd64 erofs-utils e2fsprogs
  libsodium-dev libsqlite3-dev libpq-dev postgresql  # the marketplace (src/market/)
)
# corral daemon: its state store (issue 20).
packages+=(libsqlite3-dev)
# corral daemon: tests validate real API responses against docs/openapi.json (issue 20).
packages+=(python3-jsonschema)
# Egress on real networks (issue 24): the tcp-grant tests' sshd and nc -X 5, the parent-proxy
# tests' squid and htpasswd, tinyproxy as a benchmark peer. The tests start their own
# instances (own config, port, keys); none uses the system service.
packages+=(openssh-server netcat-openbsd squid apache2-utils tinyproxy)
# The proxy-client tests build a Go program (net/http against net.Dial): Debian's Go ships its
# standard library compiled, so the build takes about a second. 81 MB to fetch, 464 MB
# installed, about 20 s to install (measured 2026-12-03).
packages+=(golang-go)
# Benchmark-only peers: installed when present in the archive, never fatal.
optional=(firejail hyperfine)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
opt_missing=()
for p in "${optional[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || opt_missing+=("$p")
done

if ((${#missing[@]} + ${#opt_missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    if ((${#missing[@]})); then
      echo "bootstrap: missing packages: ${missing[*]}; run as root: sudo scripts/bootstrap.sh" >&2
      exit 1
    fi
    exit 0
  fi
  export DEBIAN_FRONTEND=noninteractive
  # Installing sshd, squid, tinyproxy and postgresql must not start their system services: the
  # tests start private instances. Debian's hook for that is policy-rc.d (exit 101: "do not
  # start"); one the machine already has is left alone, one made here is removed after.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get update -qq
  if ((${#missing[@]})); then
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  if ((${#opt_missing[@]})); then
    apt-get install -y -qq --no-install-recommends "${opt_missing[@]}" >/dev/null || \
      echo "bootstrap: optional packages unavailable: ${opt_missing[*]} (benchmarks skip them)" >&2
  fi
fi
