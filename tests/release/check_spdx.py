#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A strict structural check of an SPDX 2.3 JSON document, for the release SBOM.
"""check_spdx.py FILE [--self-test]

No copy of the official SPDX 2.3 JSON schema could be had from a Debian or npm package, so
this checks what that schema requires of the parts corral's SBOM uses, field by field, and
refuses any field the schema does not define (its objects are closed the same way):
document fields and their formats, creationInfo, packages (SPDXID form and uniqueness,
downloadLocation, filesAnalyzed, supplier, license expressions whose identifiers must be on
the SPDX license list shipped by Debian's node-spdx-license-ids and node-spdx-exceptions),
externalRefs categories, annotations, and relationships (2.3's type list, ids that exist).
--self-test damages a valid document in each of those ways and expects each to be refused."""
import copy
import json
import re
import sys

LICENSE_IDS = "/usr/share/nodejs/spdx-license-ids/index.json"
EXCEPTION_IDS = "/usr/share/nodejs/spdx-exceptions/index.json"
SPDXID = re.compile(r"^SPDXRef-[A-Za-z0-9.-]+$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
ACTOR = re.compile(r"^(Person|Organization|Tool): \S.*$")
DOC_KEYS = {"spdxVersion", "dataLicense", "SPDXID", "name", "documentNamespace", "creationInfo", "documentDescribes",
            "packages", "relationships", "externalDocumentRefs", "hasExtractedLicensingInfos", "annotations", "comment",
            "files", "snippets"}
DOC_REQUIRED = {"spdxVersion", "dataLicense", "SPDXID", "name", "documentNamespace", "creationInfo"}
PKG_KEYS = {"SPDXID", "name", "versionInfo", "supplier", "originator", "downloadLocation", "filesAnalyzed",
            "packageVerificationCode", "checksums", "homepage", "sourceInfo", "licenseConcluded",
            "licenseInfoFromFiles", "licenseDeclared", "licenseComments", "copyrightText", "summary", "description",
            "comment", "externalRefs", "attributionTexts", "primaryPackagePurpose", "releaseDate", "builtDate",
            "validUntilDate", "annotations", "packageFileName", "hasFiles"}
PKG_REQUIRED = {"SPDXID", "name", "downloadLocation"}
REF_CATEGORIES = {"SECURITY", "PACKAGE-MANAGER", "PERSISTENT-ID", "OTHER"}
ANNOTATION_TYPES = {"REVIEW", "OTHER"}
RELATIONSHIPS = {
    "DESCRIBES", "DESCRIBED_BY", "CONTAINS", "CONTAINED_BY", "DEPENDS_ON", "DEPENDENCY_OF", "DEPENDENCY_MANIFEST_OF",
    "BUILD_DEPENDENCY_OF", "DEV_DEPENDENCY_OF", "OPTIONAL_DEPENDENCY_OF", "PROVIDED_DEPENDENCY_OF",
    "TEST_DEPENDENCY_OF", "RUNTIME_DEPENDENCY_OF", "EXAMPLE_OF", "GENERATES", "GENERATED_FROM", "ANCESTOR_OF",
    "DESCENDANT_OF", "VARIANT_OF", "DISTRIBUTION_ARTIFACT", "PATCH_FOR", "PATCH_APPLIED", "COPY_OF", "FILE_ADDED",
    "FILE_DELETED", "FILE_MODIFIED", "EXPANDED_FROM_ARCHIVE", "DYNAMIC_LINK", "STATIC_LINK", "DATA_FILE_OF",
    "TEST_CASE_OF", "BUILD_TOOL_OF", "DEV_TOOL_OF", "TEST_OF", "TEST_TOOL_OF", "DOCUMENTATION_OF",
    "OPTIONAL_COMPONENT_OF", "METAFILE_OF", "PACKAGE_OF", "AMENDS", "PREREQUISITE_FOR", "HAS_PREREQUISITE",
    "REQUIREMENT_DESCRIPTION_FOR", "SPECIFICATION_FOR", "OTHER"}


def load_ids(path):
    try:
        return set(json.load(open(path)))
    except OSError as e:
        sys.exit(f"check_spdx: {path}: {e.strerror} (scripts/bootstrap.sh installs it)")


LICENSES, EXCEPTIONS = load_ids(LICENSE_IDS), load_ids(EXCEPTION_IDS)


def license_ok(expr):
    if expr in ("NONE", "NOASSERTION"):
        return True
    tokens = re.findall(r"\(|\)|[A-Za-z0-9.+-]+", expr)
    if "".join(tokens) != re.sub(r"\s+", "", expr):
        return False
    depth, want_id, after_with = 0, True, False
    for t in tokens:
        if t == "(" and want_id:
            depth += 1
        elif t == ")" and not want_id:
            depth -= 1
            if depth < 0:
                return False
        elif t in ("AND", "OR") and not want_id:
            want_id = True
        elif t == "WITH" and not want_id and not after_with:
            want_id, after_with = True, True
            continue
        elif want_id and after_with:
            if t not in EXCEPTIONS:
                return False
            want_id = False
        elif want_id and (t.rstrip("+") in LICENSES or t.startswith("LicenseRef-")):
            want_id = False
        else:
            return False
        after_with = False
    return depth == 0 and not want_id


def problems(doc):
    out = []
    if not isinstance(doc, dict):
        return ["the document is not a JSON object"]
    out += [f"unknown document field {k}" for k in sorted(set(doc) - DOC_KEYS)]
    out += [f"missing document field {k}" for k in sorted(DOC_REQUIRED - set(doc))]
    if doc.get("spdxVersion") != "SPDX-2.3":
        out.append("spdxVersion is not SPDX-2.3")
    if doc.get("dataLicense") != "CC0-1.0":
        out.append("dataLicense is not CC0-1.0")
    if doc.get("SPDXID") != "SPDXRef-DOCUMENT":
        out.append("the document's SPDXID is not SPDXRef-DOCUMENT")
    ns = doc.get("documentNamespace", "")
    if not re.match(r"^[a-z][a-z0-9+.-]*://[^#\s]+$", str(ns)):
        out.append("documentNamespace is not an absolute URI without '#'")
    ci = doc.get("creationInfo", {})
    if not isinstance(ci, dict) or set(ci) - {"created", "creators", "comment", "licenseListVersion"}:
        out.append("creationInfo has unknown fields")
    elif not DATE.match(str(ci.get("created", ""))):
        out.append("creationInfo.created is not YYYY-MM-DDThh:mm:ssZ")
    elif not ci.get("creators") or not all(ACTOR.match(str(c)) for c in ci["creators"]):
        out.append("creationInfo.creators is empty or not Person:/Organization:/Tool:")
    ids = {"SPDXRef-DOCUMENT"}
    for i, p in enumerate(doc.get("packages", [])):
        where = f"packages[{i}]"
        if not isinstance(p, dict):
            out.append(f"{where} is not an object")
            continue
        out += [f"{where}: unknown field {k}" for k in sorted(set(p) - PKG_KEYS)]
        out += [f"{where}: missing field {k}" for k in sorted(PKG_REQUIRED - set(p))]
        sid = p.get("SPDXID", "")
        if not SPDXID.match(str(sid)):
            out.append(f"{where}: SPDXID {sid!r} is not SPDXRef-[A-Za-z0-9.-]+")
        elif sid in ids:
            out.append(f"{where}: SPDXID {sid} is not unique")
        ids.add(sid)
        dl = str(p.get("downloadLocation", ""))
        if dl not in ("NONE", "NOASSERTION") and not re.match(r"^[a-z+]+://\S+$", dl):
            out.append(f"{where}: downloadLocation is not NONE, NOASSERTION or a URL")
        if "filesAnalyzed" in p and not isinstance(p["filesAnalyzed"], bool):
            out.append(f"{where}: filesAnalyzed is not a boolean")
        if p.get("filesAnalyzed", True) and "packageVerificationCode" not in p:
            out.append(f"{where}: filesAnalyzed is true (the default) without a packageVerificationCode")
        for field in ("supplier", "originator"):
            if field in p and p[field] != "NOASSERTION" and not re.match(r"^(Person|Organization): \S", str(p[field])):
                out.append(f"{where}: {field} is not Person:/Organization:/NOASSERTION")
        for field in ("licenseConcluded", "licenseDeclared"):
            if field in p and not license_ok(str(p[field])):
                out.append(f"{where}: {field} {p[field]!r} is not an SPDX license expression")
        for j, r in enumerate(p.get("externalRefs", [])):
            if set(r) - {"referenceCategory", "referenceType", "referenceLocator", "comment"} or \
               r.get("referenceCategory") not in REF_CATEGORIES or not r.get("referenceType") or \
               not r.get("referenceLocator") or " " in str(r.get("referenceLocator")):
                out.append(f"{where}.externalRefs[{j}] is malformed")
        for j, an in enumerate(p.get("annotations", [])):
            if set(an) != {"annotationType", "annotator", "annotationDate", "comment"} or \
               an["annotationType"] not in ANNOTATION_TYPES or not ACTOR.match(str(an["annotator"])) or \
               not DATE.match(str(an["annotationDate"])):
                out.append(f"{where}.annotations[{j}] is malformed")
    for d in doc.get("documentDescribes", []):
        if d not in ids:
            out.append(f"documentDescribes names {d}, which is not in the document")
    for i, r in enumerate(doc.get("relationships", [])):
        if set(r) - {"spdxElementId", "relationshipType", "relatedSpdxElement", "comment"}:
            out.append(f"relationships[{i}] has unknown fields")
        if r.get("relationshipType") not in RELATIONSHIPS:
            out.append(f"relationships[{i}]: {r.get('relationshipType')!r} is not an SPDX 2.3 relationship type")
        for end in ("spdxElementId", "relatedSpdxElement"):
            if r.get(end) not in ids and r.get(end) not in ("NONE", "NOASSERTION"):
                out.append(f"relationships[{i}].{end} names {r.get(end)!r}, which is not in the document")
    return out


def self_test(doc):
    def damaged(f):
        d = copy.deepcopy(doc)
        f(d)
        return d
    cases = {
        "wrong version": lambda d: d.update(spdxVersion="SPDX-2.2"),
        "no dataLicense": lambda d: d.pop("dataLicense"),
        "unknown field": lambda d: d.update(extra=1),
        "bad date": lambda d: d["creationInfo"].update(created="2026-12-01 10:00"),
        "duplicate id": lambda d: d["packages"][1].update(SPDXID=d["packages"][0]["SPDXID"]),
        "bad license": lambda d: d["packages"][1].update(licenseDeclared="Apache-2"),
        "bad license syntax": lambda d: d["packages"][1].update(licenseDeclared="MIT AND"),
        "bad exception": lambda d: d["packages"][1].update(licenseDeclared="GPL-2.0-only WITH Nope"),
        "bad relationship": lambda d: d["relationships"][0].update(relationshipType="LINKS"),
        "dangling relationship": lambda d: d["relationships"][-1].update(relatedSpdxElement="SPDXRef-nowhere"),
        "filesAnalyzed without code": lambda d: d["packages"][1].pop("filesAnalyzed"),
        "bad ref category": lambda d: d["packages"][1]["externalRefs"][0].update(referenceCategory="PURL"),
    }
    failed = [name for name, f in cases.items() if not problems(damaged(f))]
    if failed:
        sys.exit("check_spdx: self-test: accepted damaged documents: " + ", ".join(failed))
    print(f"check_spdx: self-test: {len(cases)} damaged documents refused")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: check_spdx.py FILE [--self-test]")
    doc = json.load(open(sys.argv[1]))
    found = problems(doc)
    if found:
        for p in found:
            print(f"check_spdx: {sys.argv[1]}: {p}", file=sys.stderr)
        sys.exit(1)
    print(f"check_spdx: {sys.argv[1]}: valid SPDX 2.3 ({len(doc.get('packages', []))} packages)")
    if "--self-test" in sys.argv[2:]:
        self_test(doc)


if __name__ == "__main__":
    main()
