#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# CHANGELOG.md (Keep a Changelog, semantic versions) as the Debian changelog the .deb ships.
"""release-changelog.py --changelog CHANGELOG.md --version V --epoch SOURCE_DATE_EPOCH

Prints one Debian changelog entry per "## [X.Y.Z] - YYYY-MM-DD" section, newest first; its
"- " bullets become "  * " items. The entry for V is dated SOURCE_DATE_EPOCH (the release
commit), older ones at noon of their date: the output depends on the commit alone."""
import argparse
import datetime
import re
import sys
import textwrap

MAINTAINER = "corral developers <corral@localhost.invalid>"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--changelog", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--epoch", required=True, type=int)
    a = ap.parse_args()
    entries, current = [], None
    for line in open(a.changelog):
        m = re.match(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})\s*$", line)
        if m:
            current = {"version": m.group(1), "date": m.group(2), "items": []}
            entries.append(current)
        elif line.startswith("## "):
            current = None  # [Unreleased] and the like are not in a release
        elif current is not None and line.startswith("- "):
            current["items"].append(line[2:].strip())
        elif current is not None and line.startswith("  ") and current["items"]:
            current["items"][-1] += " " + line.strip()
    if not entries or entries[0]["version"] != a.version:
        sys.exit(f"release-changelog: the newest entry of {a.changelog} is not [{a.version}]")
    out = []
    for e in entries:
        if e["version"] == a.version:
            when = datetime.datetime.fromtimestamp(a.epoch, datetime.timezone.utc)
        else:
            when = datetime.datetime.strptime(e["date"] + " 12:00", "%Y-%m-%d %H:%M").replace(tzinfo=datetime.timezone.utc)
        items = e["items"] or ["Release " + e["version"] + "."]
        body = "\n".join(textwrap.fill(i, width=78, initial_indent="  * ", subsequent_indent="    ") for i in items)
        out.append(f"corral ({e['version']}) unstable; urgency=medium\n\n{body}\n\n"
                   f" -- {MAINTAINER}  {when.strftime('%a, %d %b %Y %H:%M:%S +0000')}\n")
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
