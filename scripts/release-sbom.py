#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The release's SPDX 2.3 SBOM: written before the build (its hash goes into the binary), checked after it.
"""
  release-sbom.py generate --packages packaging/sbom-packages.txt --version V --commit C \
                           --epoch SOURCE_DATE_EPOCH --out corral-V.spdx.json
  release-sbom.py check --sbom F --build DIR --binaries corral corral-core ...
      every file the linker maps (DIR/NAME.map, else DIR/maps/NAME.map, for each binary),
      every header the compiler read (ninja -t deps) and every shared library a binary names
      (DT_NEEDED, or a "libX.so.N" string it hands to dlopen) belongs to a Debian package the
      SBOM lists.

Deterministic: the same commit and the same installed packages give the same bytes (the
creation time is the commit's time, the namespace is derived from version and commit).
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys

RELATION = {"static": "STATIC_LINK", "dynamic": "DYNAMIC_LINK", "headers": "CONTAINS", "runtime": "DEPENDS_ON"}


def read_list(path):
    out = []
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, how, lic = line.split(None, 2)
        if how not in RELATION:
            sys.exit(f"release-sbom: {path}: {name}: unknown linkage {how!r}")
        out.append((name, how, lic))
    return out


def dpkg_info(name):
    p = subprocess.run(["dpkg-query", "-W", "-f", "${Status}\t${Version}\t${source:Package}\t${source:Version}\t${Architecture}",
                        name], capture_output=True, text=True)
    if p.returncode != 0 or "install ok installed" not in p.stdout:
        sys.exit(f"release-sbom: Debian package {name} is not installed (scripts/bootstrap.sh installs it)")
    _, version, source, source_version, arch = p.stdout.split("\t")
    return version, source, source_version, arch


def spdx_id(name):
    return "SPDXRef-Package-deb-" + re.sub(r"[^A-Za-z0-9.-]", "-", name)


def generate(a):
    created = datetime.datetime.fromtimestamp(int(a.epoch), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    corral = {
        "SPDXID": "SPDXRef-Package-corral",
        "name": "corral",
        "versionInfo": a.version,
        "supplier": "Organization: corral developers",
        "downloadLocation": "NOASSERTION",
        "filesAnalyzed": False,
        "licenseConcluded": "Apache-2.0",
        "licenseDeclared": "Apache-2.0",
        "copyrightText": "NOASSERTION",
        "sourceInfo": f"built from git commit {a.commit}",
        "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                          "referenceLocator": f"pkg:deb/corral@{a.version}?arch=amd64"}],
        "annotations": [{"annotationType": "OTHER", "annotator": "Tool: corral-release-sbom",
                         "annotationDate": created, "comment": f"git commit {a.commit}"}],
    }
    packages, relationships = [corral], [
        {"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES", "relatedSpdxElement": corral["SPDXID"]}]
    for name, how, lic in read_list(a.packages):
        version, source, source_version, arch = dpkg_info(name)
        packages.append({
            "SPDXID": spdx_id(name),
            "name": name,
            "versionInfo": version,
            "supplier": "Organization: Debian",
            "downloadLocation": "NOASSERTION",
            "filesAnalyzed": False,
            "licenseConcluded": "NOASSERTION",
            "licenseDeclared": lic,
            "copyrightText": "NOASSERTION",
            "sourceInfo": f"built from Debian source package {source} {source_version}",
            "comment": {"static": "statically linked into the shipped binaries",
                        "dynamic": "shared library the shipped binaries load",
                        "headers": "header code compiled into the shipped binaries",
                        "runtime": "loaded at run time with dlopen"}[how],
            "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER", "referenceType": "purl",
                              "referenceLocator": f"pkg:deb/debian/{name}@{version}?arch={arch}&distro=debian-12"}],
        })
        relationships.append({"spdxElementId": corral["SPDXID"], "relationshipType": RELATION[how],
                              "relatedSpdxElement": spdx_id(name)})
    doc = {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": f"corral-{a.version}",
        "documentNamespace": f"https://corral.invalid/spdx/corral-{a.version}-{a.commit}",
        "creationInfo": {"created": created, "creators": ["Tool: corral-release-sbom", "Organization: corral developers"]},
        "documentDescribes": [corral["SPDXID"]],
        "packages": packages,
        "relationships": relationships,
    }
    data = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    with open(a.out, "w") as f:
        f.write(data)
    print(hashlib.sha256(data.encode()).hexdigest())


def owners(paths):
    """{path: package} for files dpkg knows; files no package owns are left out (the build's own)."""
    out = {}
    paths = sorted(paths)
    for i in range(0, len(paths), 200):
        p = subprocess.run(["dpkg", "-S", *paths[i:i + 200]], capture_output=True, text=True)
        for line in p.stdout.splitlines():
            pkgs, _, path = line.partition(": ")
            out[path] = pkgs.split(",")[0].split(":")[0].strip()
    return out


def resolved(path):
    """dpkg knows /usr/lib/x86_64-linux-gnu/libc.so.6 as /lib/x86_64-linux-gnu/... (usrmerge)."""
    path = os.path.normpath(path)
    yield path
    real = os.path.realpath(path)
    yield real
    for p in (path, real):
        if p.startswith("/usr/lib/"):
            yield p[4:]
        elif p.startswith("/lib/"):
            yield "/usr" + p


def map_of(build, binary):
    for p in (os.path.join(build, binary + ".map"), os.path.join(build, "maps", binary + ".map")):
        if os.path.exists(p):
            return p
    sys.exit(f"release-sbom: no linker map for {binary} in {build} or {build}/maps (scripts/release.sh links with -Map)")


def named_libraries(path):
    """The libX.so.N names in a binary: its DT_NEEDED entries and the names it passes to dlopen."""
    data = open(path, "rb").read()
    return sorted({m.decode() for m in re.findall(rb"(?<![A-Za-z0-9_.+-])lib[A-Za-z0-9_+-]+\.so\.[0-9]+", data)})


def library_paths():
    """{soname: path} from the dynamic linker's cache (ldconfig -p), this architecture only."""
    out = {}
    text = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    for m in re.finditer(r"^\s+(\S+) \(libc6,x86-64[^)]*\) => (\S+)$", text, re.M):
        out.setdefault(m.group(1), m.group(2))
    return out


def check(a):
    used = set()
    cache = library_paths()
    for binary in a.binaries:
        for lib in named_libraries(os.path.join(a.build, binary)):
            if lib not in cache:
                sys.exit(f"release-sbom: {binary} names {lib}, which the dynamic linker's cache does not know")
            used.add(cache[lib])
        text = open(map_of(a.build, binary), errors="replace").read()
        used |= set(re.findall(r"^LOAD (/\S+)", text, re.M))
        used |= set(re.findall(r"^(/\S+?\.a)\(", text, re.M))
        for m in re.findall(r"^ \.\S+\s+0x[0-9a-f]+\s+0x[0-9a-f]+ (/usr/\S+)$", text, re.M):
            used.add(m.split("(")[0])
    deps = subprocess.run(["ninja", "-C", a.build, "-t", "deps"], capture_output=True, text=True, check=True).stdout
    used |= {l.strip() for l in deps.splitlines() if l.startswith("    /usr/")}
    used = {u for u in used if u.startswith(("/usr/", "/lib"))}
    candidates = {c: u for u in used for c in resolved(u)}
    owned = owners(candidates)
    by_pkg = {}
    for path, pkg in owned.items():
        by_pkg.setdefault(pkg, set()).add(candidates[path])
    unowned = {u for u in used if not any(c in owned for c in resolved(u))}
    sbom = json.load(open(a.sbom))
    listed = {p["name"] for p in sbom["packages"]}
    missing = sorted(set(by_pkg) - listed)
    if missing:
        for m in missing:
            print(f"release-sbom: {m} is linked or compiled in (e.g. {sorted(by_pkg[m])[0]}) but not in the SBOM "
                  "(add it to packaging/sbom-packages.txt)", file=sys.stderr)
        sys.exit(1)
    if unowned:
        sys.exit(f"release-sbom: {len(unowned)} system files used by the build belong to no Debian package, e.g. {sorted(unowned)[0]}")
    print(f"release-sbom: check: {len(used)} system files from {len(by_pkg)} Debian packages, all in the SBOM")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--packages", required=True)
    g.add_argument("--version", required=True)
    g.add_argument("--commit", required=True)
    g.add_argument("--epoch", required=True)
    g.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("--sbom", required=True)
    c.add_argument("--build", required=True)
    c.add_argument("--binaries", nargs="+", required=True, help="the shipped binaries, by name in --build")
    a = ap.parse_args()
    generate(a) if a.cmd == "generate" else check(a)


if __name__ == "__main__":
    main()
