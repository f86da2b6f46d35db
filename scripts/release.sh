#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make release`: a signed, reproducible release of the current commit in dist/ (docs/install.md).
#   scripts/release.sh --key PRIVATE_PEM [--out DIR] [--work DIR]      (or RELEASE_KEY=PATH)
# Builds corral, corral-core and the two helpers corral-core runs from beside itself
# (corral-wasm-guest, corral-vm-init) from `git archive` of HEAD (tracked changes included and
# the commit marked -dirty), in Release mode with the reproducibility flags, and writes to DIR:
#   corral_V_amd64.deb  corral-V-linux-amd64.tar.gz  corral-V.spdx.json  SHA256SUMS  SHA256SUMS.sig
# The same commit gives the same bytes in any folder at any time (tests/release/reproducible.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/dist
work=$top/build-release
key=${RELEASE_KEY:-}
jobs=${JOBS:-$(nproc)}
while (($#)); do
  case $1 in
    --key) key=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "release: unknown argument $1 (usage: scripts/release.sh --key PEM [--out DIR] [--work DIR])" >&2; exit 2 ;;
  esac
done
if [[ -z $key ]]; then
  echo "release: no signing key: run make release RELEASE_KEY=/path/to/release-ed25519-private.pem (make a key pair with: corral keygen --out DIR)" >&2
  exit 2
fi
[[ -f $key && -r $key ]] || { echo "release: RELEASE_KEY $key: no such readable file" >&2; exit 2; }
case $(realpath "$key") in
  "$top"/*) echo "release: RELEASE_KEY $key is inside the source tree: keep the private key outside it" >&2; exit 2 ;;
esac

cd "$top"
umask 022
export LC_ALL=C TZ=UTC
head=$(git rev-parse HEAD)
snapshot=$(git stash create)
if [[ -n $snapshot ]]; then commit=$head-dirty; tree=$snapshot; else commit=$head; tree=$head; fi
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct "$head")
export SOURCE_DATE_EPOCH
version=$(sed -n 's/^project(corral VERSION \([0-9][0-9.]*\) .*/\1/p' CMakeLists.txt)
[[ -n $version ]] || { echo "release: no version in CMakeLists.txt's project()" >&2; exit 1; }
grep -q "^## \[$version\]" CHANGELOG.md || { echo "release: CHANGELOG.md has no entry for $version" >&2; exit 1; }
work=$(mkdir -p "$work" && cd "$work" && pwd)
src=$work/src build=$work/build stage=$work/stage gen=$work/generated
name=corral-$version
deb=corral_${version}_amd64.deb
tarball=$name-linux-amd64.tar.gz
sbom=$name.spdx.json
echo "release: corral $version from $commit (SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH) in $work"

rm -rf "$stage" "$gen" "$src.new"
mkdir -p "$src" "$src.new" "$stage" "$gen" "$out"
git archive --format=tar "$tree" | tar -x -C "$src.new"
# Into $src, touching only what changed: git archive stamps every file with the commit's
# time, which would make ninja rebuild everything in a folder that built an older commit.
python3 - "$src.new" "$src" <<'PY'
import filecmp, os, shutil, sys
new, old = sys.argv[1], sys.argv[2]
for d, dirs, files in os.walk(old, topdown=False):
    for n in files + dirs:
        p = os.path.join(d, n)
        if not os.path.lexists(os.path.join(new, os.path.relpath(p, old))):
            shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
for d, dirs, files in os.walk(new):
    os.makedirs(os.path.join(old, os.path.relpath(d, new)), exist_ok=True)
    for n in files:
        a = os.path.join(d, n)
        b = os.path.join(old, os.path.relpath(a, new))
        if os.path.islink(a) or os.path.islink(b) or not os.path.exists(b) or not filecmp.cmp(a, b, shallow=False):
            if os.path.lexists(b):
                os.unlink(b)
            shutil.copy2(a, b, follow_symlinks=False) if os.path.islink(a) else shutil.copyfile(a, b)
            if not os.path.islink(a):
                shutil.copymode(a, b)
PY
rm -rf "$src.new"

# The SBOM first: its SHA-256 is compiled into `corral version --json`.
sbom_sha=$(python3 "$src/scripts/release-sbom.py" generate --packages "$src/packaging/sbom-packages.txt" \
  --version "$version" --commit "$commit" --epoch "$SOURCE_DATE_EPOCH" --out "$gen/$sbom")

# Debian's hardening flags (dpkg-buildflags) and one name for the two folders in every output.
prefix=/usr/src/$name
flags="-ffile-prefix-map=$src=$prefix -ffile-prefix-map=$build=$prefix/build"
flags+=" -fstack-protector-strong -fstack-clash-protection -fcf-protection -D_FORTIFY_SOURCE=2"
# ccache's base_dir (this machine shares one cache among worktrees under /work) rewrites
# absolute paths below it into relative ones, which -ffile-prefix-map then no longer
# matches: a build under /work and one elsewhere would differ in every __FILE__. Off here.
export CCACHE_BASEDIR=
# Every shipped binary: the two halves of the command and the helpers corral-core finds in its
# own directory (cli/wasm.cc guestBinaryPath, vm/vm_backend.cc agentPath), so all four go to
# /usr/bin side by side.
bins=(corral corral-core corral-wasm-guest corral-vm-init)
# The linker's map of each one, for the SBOM check: cmake/release.cmake names corral.map and
# corral-core.map itself (its option comes later on the link line and wins); for the helpers,
# ld's directory form writes $build/maps/<output>.map. A side file: the binaries do not change.
mkdir -p "$build/maps"
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-Wl,-Map=$build/maps/" \
  -DCORRAL_RELEASE=ON -DCORRAL_GIT_COMMIT="$commit" -DCORRAL_SBOM_SHA256="$sbom_sha" >"$work/configure.log" \
  || { tail -20 "$work/configure.log" >&2; echo "release: configure failed ($work/configure.log)" >&2; exit 1; }
cmake --build "$build" -j "$jobs" --target "${bins[@]}" >"$work/build.log" \
  || { grep -E 'error|FAILED' "$work/build.log" | head -20 >&2; echo "release: build failed ($work/build.log)" >&2; exit 1; }
python3 "$src/scripts/release-sbom.py" check --sbom "$gen/$sbom" --build "$build" --binaries "${bins[@]}"

# The package tree: the .deb's and the tarball's files are these.
# corral-vm-init is static-pie, like the launcher: --strip-unneeded keeps what its own startup
# code relocates with (.dynamic, .rela.dyn, .dynsym); tests/release/check_release.sh starts the
# stripped copy, and boots it as a microVM's PID 1 where the host has a VM.
install -d "$stage/usr/bin"
for bin in "${bins[@]}"; do
  strip --strip-unneeded -o "$stage/usr/bin/$bin" "$build/$bin"
  if grep -qaF -e "$work" -e "$top" -e "../src/src/" "$stage/usr/bin/$bin"; then
    echo "release: $bin names a build folder ($work, $top or ../src/): a flag or a compiled-in path escaped -ffile-prefix-map" >&2
    exit 1
  fi
done
python3 "$src/scripts/manpages.py" --corral "$stage/usr/bin/corral-core" --out "$gen" --version "$version" \
  --date "$(date -u -d "@$SOURCE_DATE_EPOCH" +%F)"
install -d "$stage/usr/share/man/man1"
for page in "$gen"/man1/*.1; do gzip -9n <"$page" >"$stage/usr/share/man/man1/$(basename "$page").gz"; done
# corral-core is corral's other half (cli/launcher.cc): its page is corral's. The two helpers
# get no page: nobody runs them by hand (corral-wasm-guest is started by `corral wasm run`
# inside the sandbox, corral-vm-init is PID 1 of a microVM and refuses to run as anything
# else), and a .so to corral(1) would document nothing about them; lintian-overrides says so.
printf '.so man1/corral.1\n' | gzip -9n >"$stage/usr/share/man/man1/corral-core.1.gz"
install -D -m 0644 "$gen/bash/corral" "$stage/usr/share/bash-completion/completions/corral"
install -D -m 0644 "$gen/zsh/_corral" "$stage/usr/share/zsh/vendor-completions/_corral"
install -D -m 0644 "$src/packaging/systemd/corral.service" "$stage/lib/systemd/system/corral.service"
install -D -m 0644 "$src/packaging/systemd/corral-user.service" "$stage/usr/lib/systemd/user/corral.service"
doc=$stage/usr/share/doc/corral
install -d "$doc/docs"
install -m 0644 "$src/README.md" "$src/SECURITY.md" "$src/CHANGELOG.md" "$src/packaging/debian/copyright" "$doc/"
install -m 0644 "$src"/docs/*.md "$src"/docs/*.json "$doc/docs/"
python3 "$src/scripts/release-changelog.py" --changelog "$src/CHANGELOG.md" --version "$version" \
  --epoch "$SOURCE_DATE_EPOCH" | gzip -9n >"$doc/changelog.gz"
install -D -m 0644 "$src/packaging/debian/lintian-overrides" "$stage/usr/share/lintian/overrides/corral"

# Depends: what dpkg-shlibdeps reads from the binaries, plus the two libraries loaded with
# dlopen, which no ELF header names: libcurl4, by corral-core on the first model call
# (agent/curl_loader.cc), and libssl3, by corral-wasm-guest for a guest's https:// request
# without a lease (wasm/guest/tls_client.cc).
mkdir -p "$work/shlibdeps/debian"
printf 'Source: corral\n\nPackage: corral\nArchitecture: amd64\n' >"$work/shlibdeps/debian/control"
analyze=()
for bin in "${bins[@]}"; do analyze+=(-e"$stage/usr/bin/$bin"); done
shlibs=$(cd "$work/shlibdeps" && dpkg-shlibdeps -O "${analyze[@]}" 2>"$work/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p')
[[ -n $shlibs ]] || { cat "$work/shlibdeps.log" >&2; echo "release: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
depends="$shlibs, libcurl4, libssl3"
install -d "$stage/DEBIAN"
install -m 0755 "$src/packaging/debian/postrm" "$stage/DEBIAN/postrm"
# Fixed modes and times: what the archives record must not depend on umask or build time.
find "$stage" -type d -exec chmod 0755 {} +
find "$stage" -type f ! -path "*/usr/bin/*" ! -name postrm -exec chmod 0644 {} +
size=$(du -sk --apparent-size --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@INSTALLED_SIZE@/$size/" -e "s/@DEPENDS@/$depends/" \
  "$src/packaging/debian/control.in" >"$stage/DEBIAN/control"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | sort | xargs md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"
find "$stage" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

rm -f "$out/$deb" "$out/$tarball" "$out/$sbom" "$out/SHA256SUMS" "$out/SHA256SUMS.sig"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out/$deb" >/dev/null
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --format=gnu \
  -C "$stage" --exclude=./DEBIAN --transform="s,^\.,$name-linux-amd64," -cf - . | gzip -9n >"$out/$tarball"
cp "$gen/$sbom" "$out/$sbom"
(cd "$out" && sha256sum "$deb" "$tarball" "$sbom") >"$out/SHA256SUMS"
openssl pkeyutl -sign -rawin -inkey "$key" -in "$out/SHA256SUMS" -out "$out/SHA256SUMS.sig"
# The signature must check against the key's own public half before anything is called done.
openssl pkey -in "$key" -pubout -out "$work/release-public.pem"
"$stage/usr/bin/corral-core" verify-release "$out" --public-key "$work/release-public.pem"
if ! cmp -s "$work/release-public.pem" "$top/keys/release-ed25519-public.pem"; then
  echo "release: note: signed with a key other than the project's (keys/release-ed25519-public.pem)"
fi
echo "release: wrote $out: $deb $tarball $sbom SHA256SUMS SHA256SUMS.sig"
