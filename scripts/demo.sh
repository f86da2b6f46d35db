#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make demo`: corral's main job on its embedded defaults. A copy of examples/fix-a-bug is
# handed to `corral run --apply` (a replayed model reads the code, runs the failing tests in
# the sandbox, is refused twice, writes the fix, runs the tests again and finishes), then
# `corral verify` checks the signed audit record and the summary says what happened.
set -euo pipefail
corral=${1:-build/corral}
src=$(cd "$(dirname "$0")/.." && pwd)/examples/fix-a-bug
work=$(mktemp -d /tmp/corral-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
ws=$work/fix-a-bug
keys=$work/keys
mkdir -p "$ws"
cp -r "$src"/. "$ws"
chmod -R a+rX "$work"

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }
bold "== corral run: a model fixes a bug, every command in a fresh sandbox"
echo "\$ corral run $ws/manifest.json --workspace $ws --apply --signing-key \$keys/audit-ed25519-private.pem"
"$corral" keygen --out "$keys" >/dev/null
rc=0
"$corral" run "$ws/manifest.json" --workspace "$ws" --apply --signing-key "$keys/audit-ed25519-private.pem" || rc=$?
echo "   -> exit $rc"

bold "== what the model did (from the trace: decisions, never contents)"
python3 - "$ws/.corral/trace.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    d = e["data"]
    if e["type"] == "tool_call":
        args = d.get("args", {})
        what = " ".join(str(a) for a in args.get("argv", [])) or args.get("path") or args.get("command", "")
        extra = ""
        if "exit_code" in d:
            extra = f" -> exit {d['exit_code']}, output {d['stdout_bytes'] + d['stderr_bytes']} bytes"
        if d["decision"] == "refuse":
            extra = f" -> REFUSED [{d['rule']}] {d['reason']}"
        print(f"  {d['tool']:<7} {d['decision']:<8} {what}{extra}")
    elif e["type"] in ("budget_exhausted", "run_end"):
        print(f"  {e['type']}: {d.get('status', d.get('budget'))}")
PY

bold "== the fix, as applied to the workspace"
diff -u "$src/calc.py" "$ws/calc.py" || true

bold "== corral verify: the hash chain, the commitments and the Ed25519 signature"
echo "\$ corral verify $ws --public-key \$keys/audit-ed25519-public.pem"
"$corral" verify "$ws" --public-key "$keys/audit-ed25519-public.pem"

bold "== the tests, outside corral, on the applied fix"
(cd "$ws" && python3 -B test_calc.py 2>&1 | tail -n 3)
echo
echo "Record format: docs/audit-format.md. Manifest: docs/manifest.md. The exec tour: make demo-exec."
exit "$rc"
