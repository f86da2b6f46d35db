#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Man pages and bash/zsh completions for corral, generated from the binary's own --help.
"""One source of truth: `corral --help` names the subcommands (its "commands:" section),
and `corral CMD --help` describes each. Nothing here lists a subcommand by name, so a
subcommand added to usage.cc gets its page and its completion at the next release build.

  manpages.py --corral build/corral-core --out DIR --version 0.1.0 --date 2026-12-01
writes DIR/man1/corral.1, DIR/man1/corral-CMD.1 (one per subcommand), DIR/bash/corral and
DIR/zsh/_corral. Every subcommand must answer --help with exit 0: one that does not stops
the build, naming it (a page made from an error message would be worse than none).
"""
import argparse
import os
import re
import subprocess
import sys

OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def run_help(corral, args):
    env = {"PATH": "/usr/bin:/bin", "LANG": "C", "LC_ALL": "C"}
    p = subprocess.run([corral, *args, "--help"], capture_output=True, text=True, env=env, timeout=30)
    if p.returncode != 0:
        sys.exit(f"manpages: `corral {' '.join(args)} --help` exited {p.returncode}: every subcommand "
                 "needs a --help that exits 0 (its man page and completion are made from it)")
    text = p.stdout if p.stdout.strip() else p.stderr
    if not text.strip():
        sys.exit(f"manpages: `corral {' '.join(args)} --help` printed nothing")
    return text


def parse_commands(top_help):
    """[(name, synopsis, summary)] from the "commands:" section of `corral --help`.

    A command line is indented two spaces: "  NAME ARGS   summary"; a synopsis too long for
    its column leaves the summary to the next, deeper-indented line."""
    lines = top_help.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == "commands:") + 1
    except StopIteration:
        sys.exit("manpages: `corral --help` has no \"commands:\" section")
    commands = []
    for line in lines[start:]:
        if not line.strip():
            break
        m = re.match(r"^  (\S.*)$", line)
        if m and not line.startswith("   "):
            parts = re.split(r"\s{2,}", m.group(1).strip(), maxsplit=1)
            synopsis = parts[0]
            commands.append([synopsis.split()[0], synopsis, parts[1] if len(parts) > 1 else ""])
        elif commands:
            commands[-1][2] = (commands[-1][2] + " " + line.strip()).strip()
    if not commands:
        sys.exit("manpages: `corral --help` lists no commands")
    # "(corral exec --help)" points a terminal user at the page this becomes: not in NAME.
    return [(n, syn, re.sub(r"\s*\(corral \S+ --help\)", "", summary)) for n, syn, summary in commands]


def subwords(name, text):
    """Second-level words (`corral session ls`) from usage lines such as
    "usage: corral session create|ls|rm ..." or "  corral session ls [--json]"."""
    words = []
    for m in re.finditer(r"corral " + re.escape(name) + r" ([a-z][a-z0-9-]*(?:\|[a-z][a-z0-9-]*)*)", text):
        for w in m.group(1).split("|"):
            if w not in words:
                words.append(w)
    return words


def options(text):
    out = []
    for o in OPTION.findall(text):
        if o not in out:
            out.append(o)
    return out


def roff(text):
    """Help text as roff lines in a no-fill block: escapes, and no line read as a request."""
    out = []
    for line in text.rstrip("\n").splitlines():
        line = line.replace("\\", "\\e").replace("-", "\\-")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def page(name, section_title, summary, synopsis, body, version, date, see_also):
    title = name.upper()
    summary = summary or "a corral subcommand"
    return (
        f'.TH {title} 1 "{date}" "corral {version}" "User Commands"\n'
        f".SH NAME\n{name} \\- {roff(summary)}\n"
        f".SH SYNOPSIS\n.nf\n{roff(synopsis)}\n.fi\n"
        f".SH DESCRIPTION\n.nf\n{roff(body)}\n.fi\n"
        f".SH SEE ALSO\n{see_also}\n"
    )


def bash_completion(commands, per_command):
    cases = []
    for name, _, _ in commands:
        words = " ".join(per_command[name]["subwords"] + per_command[name]["options"] + ["--help"])
        cases.append(f"    {name}) words=\"{words}\" ;;")
    names = " ".join(n for n, _, _ in commands)
    return f"""# SPDX-License-Identifier: Apache-2.0
# bash completion for corral, generated from `corral --help` by scripts/manpages.py.
_corral() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} words=""
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W "{names} --help --version" -- "$cur"))
    return
  fi
  case ${{COMP_WORDS[1]}} in
{chr(10).join(cases)}
  esac
  # After `--`, the command line is the sandboxed program's: complete files and commands.
  local i
  for ((i = 2; i < COMP_CWORD; i++)); do
    [[ ${{COMP_WORDS[i]}} == -- ]] && {{ COMPREPLY=($(compgen -c -f -- "$cur")); return; }}
  done
  if [[ $cur == -* || $COMP_CWORD == 2 && -n $words && ${{words%% *}} != --* && $cur != */* ]]; then
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
  fi
  ((${{#COMPREPLY[@]}})) || COMPREPLY=($(compgen -f -- "$cur"))
}}
complete -o filenames -F _corral corral
"""


def zsh_completion(commands, per_command):
    def q(s):
        return s.replace("'", "'\\''").replace(":", "\\:")
    described = "\n".join(f"    '{q(n)}:{q(s)}'" for n, _, s in commands)
    cases = []
    for name, _, _ in commands:
        words = " ".join(per_command[name]["subwords"] + per_command[name]["options"] + ["--help"])
        cases.append(f"    {name}) compadd -- {words}; _files ;;")
    return f"""#compdef corral
# SPDX-License-Identifier: Apache-2.0
# zsh completion for corral, generated from `corral --help` by scripts/manpages.py.
_corral() {{
  local -a cmds
  cmds=(
{described}
  )
  if ((CURRENT == 2)); then
    _describe 'corral command' cmds
    return
  fi
  case $words[2] in
{chr(10).join(cases)}
    *) _files ;;
  esac
}}
_corral "$@"
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corral", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--date", required=True, help="YYYY-MM-DD (the release commit's date)")
    a = ap.parse_args()

    top = run_help(a.corral, [])
    commands = parse_commands(top)
    per_command = {}
    for name, _, _ in commands:
        text = run_help(a.corral, [name])
        per_command[name] = {"text": text, "options": options(text), "subwords": subwords(name, text)}

    man1 = os.path.join(a.out, "man1")
    os.makedirs(man1, exist_ok=True)
    listing = "\n".join(f".TP\n.B corral {roff(n)}\n{roff(s)}" for n, _, s in commands)
    see = ",\n".join(f".BR corral\\-{roff(n)} (1)" for n, _, _ in commands)
    with open(os.path.join(man1, "corral.1"), "w") as f:
        f.write(page("corral", "", "a sandbox runtime for AI-agent work", "corral <command> [options]",
                     top, a.version, a.date, see).replace(".SH SEE ALSO", f".SH COMMANDS\n{listing}\n.SH SEE ALSO"))
    for name, synopsis, summary in commands:
        text = per_command[name]["text"]
        usage = [l for l in text.splitlines() if l.startswith("usage:")]
        syn = "\n".join(u[len("usage: "):] for u in usage) or f"corral {synopsis}"
        with open(os.path.join(man1, f"corral-{name}.1"), "w") as f:
            f.write(page(f"corral-{name}", "", summary, syn, text, a.version, a.date, ".BR corral (1)"))
    for sub, content in (("bash", bash_completion(commands, per_command)), ("zsh", zsh_completion(commands, per_command))):
        os.makedirs(os.path.join(a.out, sub), exist_ok=True)
        with open(os.path.join(a.out, sub, "corral" if sub == "bash" else "_corral"), "w") as f:
            f.write(content)
    print(f"manpages: {len(commands) + 1} man pages, bash and zsh completions for {len(commands)} commands")


if __name__ == "__main__":
    main()
