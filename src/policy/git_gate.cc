// SPDX-License-Identifier: Apache-2.0
// The git gate: subcommand allowlist, per-subcommand option denylist, pinned config and env.
#include "policy/git_gate.h"

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "policy/units.h"

namespace corral::policy {
namespace {

CommandDecision refuse(std::string rule, std::string reason) {
  return CommandDecision::refused(std::move(rule), std::move(reason));
}

// At most 32 bytes of model text, cut on a character boundary (args are valid UTF-8 here).
std::string shortShown(std::string_view s) {
  constexpr size_t kMax = 32;
  if (s.size() <= kMax) return printable(s);
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
  return printable(s.substr(0, cut)) + "...";
}

bool contains(std::string_view list, std::string_view word) {
  // list is space-separated; "*" matches every subcommand.
  if (list == "*") return true;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(' ', start);
    if (end == std::string_view::npos) end = list.size();
    if (list.substr(start, end - start) == word) return true;
    start = end + 1;
  }
  return false;
}

// Long options refused (by full name or any abbreviation git's parse-options would accept:
// every non-empty prefix counts, because for some subcommands one letter is unambiguous,
// e.g. `git init --t=DIR` is --template).
struct DeniedLong {
  std::string_view name;
  std::string_view subcommands;  // space-separated, or "*"
  std::string_view why;
};
constexpr DeniedLong kDeniedLong[] = {
    {"upload-pack", "*", "names a program to run"},
    {"receive-pack", "*", "names a program to run"},
    {"exec", "*", "names a program to run"},
    {"help", "*", "starts man, info or a web browser"},
    {"output", "*", "writes a file chosen by the caller"},
    {"ext-diff", "*", "runs an external diff program"},
    {"textconv", "*", "runs a textconv program"},
    {"filters", "*", "runs filter programs"},
    {"open-files-in-pager", "*", "runs a pager program"},
    {"template", "*", "copies hooks from / reads a template chosen by the caller"},
    {"separate-git-dir", "*", "puts the repository outside the work tree"},
    {"gpg-sign", "*", "runs gpg"},
    {"show-signature", "*", "runs gpg"},
    {"edit", "*", "starts an editor"},
    {"reedit-message", "*", "starts an editor"},
    {"interactive", "*", "is interactive (editor, pager)"},
    {"patch", "add commit", "is interactive (editor, pager)"},
    {"recurse-submodules", "*", "runs git in submodules, whose config corral does not check"},
    {"submodule", "*", "runs diff in submodules, whose config corral does not check"},
};

// Full option names that are real options of a subcommand and also a prefix of a denied
// name: exact matches win over abbreviations in git, so these are not abbreviations.
struct ExactAllowed {
  std::string_view name;
  std::string_view subcommands;
};
constexpr ExactAllowed kExactAllowed[] = {
    {"text", "diff log show rev-list grep"},  // -a/--text, not --textconv
    {"filter", "rev-list"},                   // --filter=<spec>, not --filters
};

// Short options refused per subcommand (each the short form of a kDeniedLong entry), and
// the short options that take their argument from the rest of the cluster ("-mFix" is
// -m "Fix"): scanning stops there. Listing too few stop letters only refuses more; a letter
// that takes no argument must never be listed as a stop.
struct DeniedShort {
  std::string_view subcommand;
  char letter;
  std::string_view long_name;
};
constexpr DeniedShort kDeniedShort[] = {
    {"add", 'p', "patch"},          {"add", 'i', "interactive"},   {"add", 'e', "edit"},
    {"commit", 'S', "gpg-sign"},    {"commit", 'e', "edit"},       {"commit", 't', "template"},
    {"commit", 'c', "reedit-message"}, {"commit", 'p', "patch"},
    {"notes", 'c', "reedit-message"},  {"notes", 'e', "edit"},     // notes add/append
    {"grep", 'O', "open-files-in-pager"},
};
struct ShortStops {
  std::string_view subcommand;
  std::string_view letters;
};
constexpr ShortStops kShortStops[] = {{"commit", "mFC"}, {"notes", "mFC"}, {"grep", "efABCm"}};

// -c pins: command-line config outranks every config file, and git hands it to the git
// processes it starts (GIT_CONFIG_PARAMETERS). docs/command-gate.md gives each reason.
constexpr std::string_view kPinnedConfig[] = {
    "core.hooksPath=/dev/null",      // hooks resolve to /dev/null/<name>: never found
    "core.fsmonitor=false",          // no fsmonitor hook or daemon
    "core.pager=cat",                // "cat" is git's "no pager": nothing is spawned
    "core.editor=:",                 // ":" is git's "no editor": nothing is spawned
    "sequence.editor=:",
    "core.askPass=",                 // empty: no askpass program
    "credential.helper=",            // empty value resets the helper list
    "gpg.program=/dev/null",         // signature checks (%G?, log.showSignature) cannot exec
    "gpg.openpgp.program=/dev/null",
    "gpg.x509.program=/dev/null",
    "gpg.ssh.program=/dev/null",
    "protocol.allow=never",          // no transport at all (lazy fetch, ext::, file://)
    "submodule.recurse=false",
    "diff.ignoreSubmodules=all",     // status/diff do not run git inside submodules
    "gc.autoDetach=false",           // no gc left running in the background
    "maintenance.auto=false",        // no `git maintenance run --auto` after commands
    "safe.bareRepository=explicit",  // never use a bare repository git finds on its own
};

constexpr std::string_view kPinnedEnv[] = {
    "GIT_CONFIG_NOSYSTEM=1",  "GIT_CONFIG_SYSTEM=/dev/null", "GIT_CONFIG_GLOBAL=/dev/null",
    "GIT_ATTR_NOSYSTEM=1",    "GIT_TERMINAL_PROMPT=0",       "GIT_PAGER=cat",
    "PAGER=cat",              "GIT_EDITOR=:",                "GIT_SEQUENCE_EDITOR=:",
    "EDITOR=:",               "VISUAL=:",                    "GIT_ASKPASS=",
    "SSH_ASKPASS=",           "GIT_ALLOW_PROTOCOL=",         "GIT_PROTOCOL_FROM_USER=0",
    "GIT_OPTIONAL_LOCKS=0",   "GIT_NO_REPLACE_OBJECTS=1",
    // No repository discovery: the repository is ./.git of the working directory (the
    // sandbox's /workspace), the one whose config the runner checks. Without this, a
    // workspace with HEAD, objects/, refs/ and config at its root is a bare repository to git,
    // and that config (diff.external, ...) would run programs unchecked.
    "GIT_DIR=.git",           "GIT_WORK_TREE=.",
};

// `git notes` subcommands that neither edit (editor) nor merge.
constexpr std::string_view kNotesSubcommands = "list add append copy show remove prune get-ref";

std::string argName(size_t i) { return "argument " + std::to_string(i + 1); }

bool isEndOfOptions(std::string_view a) { return a == "--" || a == "--end-of-options"; }

bool exactAllowed(std::string_view name, std::string_view sub) {
  return std::any_of(std::begin(kExactAllowed), std::end(kExactAllowed),
                     [&](const ExactAllowed& e) { return e.name == name && contains(e.subcommands, sub); });
}

std::string_view whyDenied(std::string_view long_name) {
  for (const DeniedLong& d : kDeniedLong)
    if (d.name == long_name) return d.why;
  return "is refused";
}

// One long option "--name[=value]" (the "--" already stripped).
std::optional<CommandDecision> checkLong(std::string_view body, std::string_view sub, size_t i) {
  std::string_view name = body.substr(0, body.find('='));
  std::optional<std::string_view> value;
  if (name.size() < body.size()) value = body.substr(name.size() + 1);
  // --ignore-submodules (=all) is fine; =none/dirty/untracked would undo the pin above.
  constexpr std::string_view kIgnoreSub = "ignore-submodules";
  if (!name.empty() && kIgnoreSub.substr(0, name.size()) == name &&
      (name != kIgnoreSub || (value && *value != "all")))
    return refuse("git.option", argName(i) + ": git " + std::string(sub) +
                                    " --ignore-submodules is allowed only as --ignore-submodules[=all]");
  if (name.empty() || exactAllowed(name, sub)) return std::nullopt;
  std::vector<std::string_view> hits;
  for (const DeniedLong& d : kDeniedLong)
    if (contains(d.subcommands, sub) && d.name.substr(0, name.size()) == name) hits.push_back(d.name);
  if (hits.empty()) return std::nullopt;
  if (hits.size() == 1 && hits[0] == name)
    return refuse("git.option", argName(i) + " is git " + std::string(sub) + " --" + std::string(name) + ", which " +
                                    std::string(whyDenied(name)));
  std::string names;
  for (std::string_view h : hits) names += (names.empty() ? "--" : ", --") + std::string(h);
  return refuse("git.option", argName(i) + " ('--" + shortShown(name) + "') may abbreviate git " + std::string(sub) +
                                  " " + names + ": refused (" + std::string(whyDenied(hits[0])) + ")");
}

// One cluster of short options "-abc" (the "-" already stripped).
std::optional<CommandDecision> checkShort(std::string_view cluster, std::string_view sub, size_t i) {
  std::string_view stops;
  for (const ShortStops& s : kShortStops)
    if (s.subcommand == sub) stops = s.letters;
  for (char c : cluster) {
    for (const DeniedShort& d : kDeniedShort)
      if (d.subcommand == sub && d.letter == c)
        return refuse("git.option", argName(i) + ": git " + std::string(sub) + " -" + std::string(1, c) + " (--" +
                                        std::string(d.long_name) + ") is refused: it " +
                                        std::string(whyDenied(d.long_name)));
    if (stops.find(c) != std::string_view::npos) break;
  }
  return std::nullopt;
}

// The options of one subcommand from args[from] on; "--" ends them.
std::optional<CommandDecision> checkOptions(const std::vector<std::string>& args, size_t from, std::string_view sub) {
  for (size_t i = from; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (isEndOfOptions(a)) return std::nullopt;
    if (a.size() < 2 || a[0] != '-') continue;  // an operand, or "-" (stdin)
    auto r = a[1] == '-' ? checkLong(a.substr(2), sub, i) : checkShort(a.substr(1), sub, i);
    if (r) return r;
  }
  return std::nullopt;
}

// `git notes [--ref <ref>] [<subcommand>] ...`: the notes-level parse dispatches a second
// parse for the subcommand, so a "--" before it would not end option parsing; refuse it.
std::optional<CommandDecision> checkNotes(const std::vector<std::string>& args) {
  size_t i = 1;
  for (; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (a == "--ref") {
      ++i;  // its value, whatever it looks like, is a ref name
      continue;
    }
    if (a.substr(0, 6) == "--ref=") continue;
    if (!a.empty() && a[0] == '-')
      return refuse("git.notes", argName(i) + ": before its subcommand git notes takes only --ref");
    break;
  }
  if (i >= args.size()) return std::nullopt;  // plain `git notes` lists
  if (!contains(kNotesSubcommands, args[i]))
    return refuse("git.notes", argName(i) + ": git notes '" + shortShown(args[i]) +
                                   "' is refused (allowed: " + std::string(kNotesSubcommands) + ")");
  return checkOptions(args, i + 1, "notes");
}

}  // namespace

CommandDecision gateGit(const std::vector<std::string>& args) {
  // The generic argument rules again: gateGit is public and must not depend on its caller.
  if (CommandDecision d = checkArguments(args); !d.allowed) return d;
  if (args.empty()) return refuse("git.subcommand", "git needs a subcommand");
  if (!args[0].empty() && args[0][0] == '-')
    return refuse("git.global-option",
                  "argument 1: git options before the subcommand are refused (-c, -C, --git-dir, -p, ...)");
  const std::string& sub = args[0];
  if (std::find(std::begin(kGitSubcommands), std::end(kGitSubcommands), sub) == std::end(kGitSubcommands)) {
    std::string list;
    for (std::string_view s : kGitSubcommands) list += (list.empty() ? "" : ", ") + std::string(s);
    return refuse("git.subcommand", "git '" + shortShown(sub) + "' is refused (allowed: " + list + ")");
  }
  auto bad = sub == "notes" ? checkNotes(args) : checkOptions(args, 1, sub);
  if (bad) return *bad;

  CommandDecision d;
  d.allowed = true;
  d.rule = "git";
  d.reason = "git " + sub + " with hooks, pagers, editors and external programs pinned off";
  d.argv.reserve(1 + 2 * std::size(kPinnedConfig) + args.size());
  d.argv.emplace_back("git");
  for (std::string_view c : kPinnedConfig) {
    d.argv.emplace_back("-c");
    d.argv.emplace_back(c);
  }
  d.argv.insert(d.argv.end(), args.begin(), args.end());
  d.env.assign(std::begin(kPinnedEnv), std::end(kPinnedEnv));
  return d;
}

}  // namespace corral::policy
