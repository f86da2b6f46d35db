# SPDX-License-Identifier: Apache-2.0
"""A 30-line agent loop over a corral session: a "model" proposes shell commands, each runs in
the same persistent sandbox, and what it printed goes back into the conversation. Replace
propose() with a call to your model; everything else stays the same."""
import sys

from corral_client import Corral


def propose(history):
    """A stand-in model: a fixed plan that uses what the previous step left in /workspace."""
    plan = [["sh", "-c", "echo 'print(6*7)' > answer.py"], ["python3", "answer.py"], None]
    return plan[len(history)]


def main():
    corral = Corral()
    # A non-root daemon cannot cap the workspace's size: accept that (a root daemon still caps it).
    session = corral.create_session(name="agent-demo", limits={"pids": 256, "allow_weaker": ["workspace-size"]})
    history = []
    try:
        while (argv := propose(history)) is not None:
            result = corral.run(session["id"], argv, timeout="30s")
            history.append((argv, result["exit_code"], result["stdout"].decode(errors="replace")))
            print(f"$ {' '.join(argv)}  -> exit {result['exit_code']}", file=sys.stderr)
        print(history[-1][2], end="")
    finally:
        corral.remove_session(session["id"])


if __name__ == "__main__":
    main()
