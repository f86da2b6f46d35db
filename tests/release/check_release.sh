#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks one release directory as a user and a distribution would (tests/release/run.sh).
#   check_release.sh DIST PUBLIC_PEM PRIVATE_PEM [RELEASE_BUILD_DIR]
# The private key only signs damaged copies (a tampered SHA256SUMS that is validly signed).
# RELEASE_BUILD_DIR (scripts/release.sh's build/) lets the SBOM check be run against a list
# with packages taken out, to show it refuses them.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
dist=$(cd "$1" && pwd) pub=$2 priv=$3 release_build=${4:-}
version=$(sed -n 's/^project(corral VERSION \([0-9][0-9.]*\) .*/\1/p' "$top/CMakeLists.txt")
deb=$dist/corral_${version}_amd64.deb tarball=$dist/corral-$version-linux-amd64.tar.gz sbom=$dist/corral-$version.spdx.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
mkdir -p "$root" && dpkg-deb -x "$deb" "$root"
corral=$root/usr/bin/corral

# The signature and checksums, with corral and with stock tools.
check VerifyRelease.SignedReleaseVerifies "$corral" verify-release "$dist" --public-key "$pub"
check VerifyRelease.StockOpensslAndSha256sum sh -c "cd '$dist' && openssl pkeyutl -verify -pubin -inkey '$pub' -rawin -in SHA256SUMS -sigfile SHA256SUMS.sig && sha256sum --check --strict SHA256SUMS"
damaged() { rm -rf "$tmp/d" && cp -r "$dist" "$tmp/d"; }
damaged && printf 'x' >>"$tmp/d/$(basename "$deb")"
refuses VerifyRelease.TamperedDebFails "$(basename "$deb") does not match" "$corral" verify-release "$tmp/d" --public-key "$pub"
check VerifyRelease.StockToolsRefuseTamperedDeb sh -c "cd '$tmp/d' && ! sha256sum --check --strict --quiet SHA256SUMS"
damaged && openssl genpkey -algorithm ed25519 -out "$tmp/other.pem" && openssl pkey -in "$tmp/other.pem" -pubout -out "$tmp/other.pub"
refuses VerifyRelease.WrongKeyFails "SHA256SUMS.sig does not verify" "$corral" verify-release "$tmp/d" --public-key "$tmp/other.pub"
check VerifyRelease.StockOpensslRefusesWrongKey sh -c "! openssl pkeyutl -verify -pubin -inkey '$tmp/other.pub' -rawin -in '$tmp/d/SHA256SUMS' -sigfile '$tmp/d/SHA256SUMS.sig'"
damaged && rm "$tmp/d/SHA256SUMS.sig"
refuses VerifyRelease.MissingSignatureFails "SHA256SUMS.sig" "$corral" verify-release "$tmp/d" --public-key "$pub"
damaged && printf 'garbage\n' >>"$tmp/d/SHA256SUMS" && openssl pkeyutl -sign -rawin -inkey "$priv" -in "$tmp/d/SHA256SUMS" -out "$tmp/d/SHA256SUMS.sig"
refuses VerifyRelease.MalformedSumsFails "SHA256SUMS is malformed: line 4" "$corral" verify-release "$tmp/d" --public-key "$pub"
refuses VerifyRelease.NoKeyIsUsage "missing --public-key" "$corral" verify-release "$dist"

# The package as Debian sees it. lintian at its default level; overrides say why.
check Package.LintianClean sh -c "lintian --fail-on error,warning '$deb'"
check Package.DependsFromShlibdeps sh -c "dpkg-deb -f '$deb' Depends | grep -q 'libc6 (>= '"
check Package.HasEveryPath sh -c "dpkg-deb -c '$deb' | awk '{print \$6}' > '$tmp/list' && for p in ./usr/bin/corral ./usr/bin/corral-core ./usr/bin/corral-wasm-guest ./usr/bin/corral-vm-init ./usr/share/man/man1/corral.1.gz ./usr/share/bash-completion/completions/corral ./usr/share/zsh/vendor-completions/_corral ./lib/systemd/system/corral.service ./usr/lib/systemd/user/corral.service ./usr/share/doc/corral/copyright ./usr/share/doc/corral/README.md ./usr/share/doc/corral/SECURITY.md ./usr/share/doc/corral/docs/install.md; do grep -qx \"\$p\" '$tmp/list' || { echo \"missing \$p\"; exit 1; }; done"
# corral-core runs the helpers from its own directory (cli/wasm.cc, vm/vm_backend.cc): all four
# must be executables in /usr/bin, and nothing else there.
check Package.BinariesSideBySideAndExecutable sh -c "dpkg-deb -c '$deb' | awk '\$6 ~ /^\.\/usr\/bin\/./ {print \$1, \$6}' | sort -k2 > '$tmp/bins' &&
  printf '%s\n' '-rwxr-xr-x ./usr/bin/corral' '-rwxr-xr-x ./usr/bin/corral-core' '-rwxr-xr-x ./usr/bin/corral-vm-init' '-rwxr-xr-x ./usr/bin/corral-wasm-guest' | diff - '$tmp/bins'"
check Package.RootOwnedFiles sh -c "! dpkg-deb -c '$deb' | awk '{print \$2}' | grep -v '^root/root$'"
check Tarball.SameFilesAsDeb sh -c "tar -tzf '$tarball' | sed -e 's,^corral-$version-linux-amd64/,./,' -e 's,/\$,,' | grep -v '^\.\$' | sort > '$tmp/t' && dpkg-deb -c '$deb' | awk '{print \$6}' | sed 's,/\$,,' | grep -v '^\.\$' | sort > '$tmp/d.txt' && diff '$tmp/d.txt' '$tmp/t'"

# systemd units: each must verify with no message at all. systemd-analyze checks that
# ExecStart's binary exists and is executable, so the copy points at the package's own.
verify_unit() {  # verify_unit UNIT_IN_PACKAGE [--user]
  local dir=$tmp/units$2 out
  mkdir -p "$dir/runtime"
  sed "s,/usr/bin/corral,$root/usr/bin/corral," "$root$1" >"$dir/corral.service"
  out=$(XDG_RUNTIME_DIR=$dir/runtime SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no $2 "$dir/corral.service" 2>&1) \
    && [[ -z $out ]] || { echo "$out"; return 1; }
}
check Units.SystemUnitVerifies verify_unit /lib/systemd/system/corral.service ""
check Units.UserUnitVerifies verify_unit /usr/lib/systemd/user/corral.service --user
check Units.SocketIsApiSock grep -q -- "--socket /run/corral/api.sock" "$root/lib/systemd/system/corral.service"

# Man pages and completions: one per command in --help, and they render.
cmds=$("$corral" --help | sed -n '/^commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\).*/\1/p')
check Man.OnePagePerSubcommand sh -c "for c in $(echo $cmds); do test -s '$root/usr/share/man/man1/corral-'\$c'.1.gz' || { echo \"no page for \$c\"; exit 1; }; done"
check Man.PagesRenderWithoutWarnings sh -c "for p in '$root'/usr/share/man/man1/*.gz; do zcat \"\$p\" | grep -q '^\.so ' && continue; zcat \"\$p\" | groff -man -Tutf8 -ww -z 2>&1 | grep . && exit 1; done; exit 0"
check Completion.BashCompletesCommandsAndOptions bash -c "
  source '$root/usr/share/bash-completion/completions/corral'
  COMP_WORDS=(corral ver); COMP_CWORD=1; _corral; [[ \" \${COMPREPLY[*]} \" == *' verify '* && \" \${COMPREPLY[*]} \" == *' verify-release '* ]] || exit 1
  COMP_WORDS=(corral exec --ro); COMP_CWORD=2; _corral; [[ \${COMPREPLY[*]} == --ro-bind ]] || exit 1"

# The SBOM: valid SPDX 2.3, and what the binary says it was built against.
check Sbom.ValidSpdx23 python3 "$here/check_spdx.py" "$sbom" --self-test
check Sbom.ListsStaticOpensslAndCommit python3 -c "
import json, subprocess, sys
d = json.load(open('$sbom'))
p = {x['name']: x for x in d['packages']}
ssl = p['libssl-dev']
assert ssl['versionInfo'] == subprocess.check_output(['dpkg-query', '-W', '-f', '\${Version}', 'libssl-dev'], text=True), ssl
assert 'source package openssl ' in ssl['sourceInfo'], ssl
assert {'spdxElementId': 'SPDXRef-Package-corral', 'relationshipType': 'STATIC_LINK', 'relatedSpdxElement': ssl['SPDXID']} in d['relationships']
v = json.loads(subprocess.check_output(['$corral', 'version', '--json']))
assert v['commit'] in p['corral']['sourceInfo'], (v['commit'], p['corral'])
"
check Version.JsonNamesSbomHash sh -c "'$corral' version --json | python3 -c \"import json,sys,hashlib; v=json.load(sys.stdin); assert v['sbom_sha256']==hashlib.sha256(open('$sbom','rb').read()).hexdigest(), v; assert v['version']=='$version' and v['release'] and v['build_type']=='Release', v; assert any(l['name']=='openssl' for l in v['libraries'])\""
# The stripped helpers still start: the static-pie agent relocates itself before main (a strip
# that took what it relocates with would crash it first), then refuses to run outside a VM.
refuses Binaries.StrippedVmInitStartsAndRefusesOutsideAVm "runs only as PID 1 of a corral microVM" "$root/usr/bin/corral-vm-init"
refuses Binaries.StrippedWasmGuestStartsAndPrintsUsage "usage: corral-wasm-guest" "$root/usr/bin/corral-wasm-guest"
check Binaries.VmInitIsStatic sh -c "! readelf -l '$root/usr/bin/corral-vm-init' | grep -q 'INTERP' && ! readelf -d '$root/usr/bin/corral-vm-init' | grep -q NEEDED"
if [[ -n $release_build && -d $release_build ]]; then
  # The control for the SBOM check the release ran: the same build against an SBOM without
  # wabt (whose wasm-rt.h corral-wasm-guest compiles against) and libssl3 (which it loads with
  # dlopen) must be refused, each by name.
  sbom_refuses() {
    grep -vE '^(wabt|libssl3) ' "$top/packaging/sbom-packages.txt" >"$tmp/fewer.txt"
    python3 "$top/scripts/release-sbom.py" generate --packages "$tmp/fewer.txt" --version "$version" --commit 0000000000000000000000000000000000000000 \
      --epoch 0 --out "$tmp/fewer.spdx.json" >/dev/null || return 1
    local out
    out=$(python3 "$top/scripts/release-sbom.py" check --sbom "$tmp/fewer.spdx.json" --build "$release_build" \
      --binaries corral corral-core corral-wasm-guest corral-vm-init 2>&1) && { echo "check passed without wabt and libssl3"; return 1; }
    [[ $out == *"wabt is linked or compiled in"* && $out == *"libssl3 is linked or compiled in"* ]] || { echo "$out"; return 1; }
  }
  check Sbom.CheckRefusesTheHelpersMissingPackages sbom_refuses
else
  skip Sbom.CheckRefusesTheHelpersMissingPackages "no release build directory given"
fi
check Binaries.NoHostnameOrBuildPath sh -c "h=\$(hostname); for b in '$root'/usr/bin/*; do ! grep -qaF -e /work/ -e /tmp/ \"\$b\" || { echo \"\$b names a build path\"; exit 1; }; [ \${#h} -lt 6 ] || ! grep -qaF \"\$h\" \"\$b\" || { echo \"\$b names the host \$h\"; exit 1; }; done"

totals
