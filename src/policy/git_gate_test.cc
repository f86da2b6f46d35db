// SPDX-License-Identifier: Apache-2.0
// Tests for the git gate: one per vector, and normal workflows (real git: git_gate_real_git_test.cc).
#include "policy/git_gate.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace corral::policy {
namespace {

using Args = std::vector<std::string>;

std::string joined(const Args& args) {
  std::string s;
  for (const std::string& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

// The model's args after the pins: what the runner would execute, minus the gate's prefix.
Args tail(const CommandDecision& d, size_t n) { return Args(d.argv.end() - static_cast<long>(n), d.argv.end()); }

void expectAllowed(const Args& args) {
  CommandDecision d = gateGit(args);
  ASSERT_TRUE(d.allowed) << "git " << joined(args) << " refused: " << d.reason;
  EXPECT_EQ(d.argv.front(), "git");
  EXPECT_EQ(tail(d, args.size()), args) << "the model's arguments must follow the pins unchanged";
}

void expectRefused(const Args& args, std::string_view rule) {
  CommandDecision d = gateGit(args);
  EXPECT_FALSE(d.allowed) << "git " << joined(args) << " allowed, expected " << rule;
  EXPECT_EQ(d.rule, rule) << "git " << joined(args) << ": " << d.reason;
  EXPECT_TRUE(d.argv.empty() && d.env.empty());
  EXPECT_EQ(d.reason.find('\n'), std::string::npos);
}

void expectOptionRefused(const Args& args) { expectRefused(args, "git.option"); }

// --- Normal workflows -------------------------------------------------------------------

TEST(GitGate, AllowsNormalWorkflows) {
  const Args workflows[] = {
      {"init"},
      {"init", "-b", "main", "repo"},
      {"add", "-A"},
      {"add", "-u"},
      {"add", "--", "src/a.cc"},
      {"commit", "-m", "msg"},
      {"commit", "-am", "Setup the parser"},  // -m takes the rest: S, e, t, p are message text
      {"commit", "--amend", "--no-edit", "-m", "x", "--no-verify"},
      {"commit", "-F", "msg.txt"},  // decided: a file read inside the sandbox (docs)
      {"status", "--short"},
      {"status", "--ignore-submodules"},
      {"status", "--ignore-submodules=all"},
      {"diff", "HEAD~1"},
      {"diff", "--text", "--stat", "HEAD"},
      {"diff", "--no-index", "a.txt", "b.txt"},  // decided: sandbox paths only (docs)
      {"diff", "--no-ext-diff", "--no-textconv"},
      {"log", "--oneline", "-5"},
      {"log", "-p", "-S", "needle"},  // -S is pickaxe in log, gpg-sign only in commit
      {"show", "HEAD:file"},
      {"cat-file", "-p", "HEAD"},
      {"cat-file", "-e", "HEAD"},
      {"rev-parse", "HEAD"},
      {"rev-parse", "--git-dir", "--show-toplevel"},
      {"rev-list", "--count", "--filter=blob:none", "HEAD"},
      {"grep", "-n", "foo"},
      {"grep", "-e", "O", "--text"},
      {"grep", "-eOpen"},  // -e takes the rest of the cluster: a pattern, not -O
      {"notes", "add", "-m", "x"},
      {"notes"},
      {"notes", "--ref", "review", "list"},
      {"notes", "--ref=review", "show", "HEAD"},
      {"gc", "--prune=now"},
  };
  for (const Args& a : workflows) expectAllowed(a);
}

TEST(GitGate, AllowedArgvIsPinsThenSubcommandThenArgs) {
  CommandDecision d = gateGit({"commit", "-m", "x"});
  ASSERT_TRUE(d.allowed) << d.reason;
  ASSERT_GE(d.argv.size(), 4u);
  EXPECT_EQ(d.argv[0], "git");
  // Everything between argv[0] and the subcommand is "-c", "key=value" pairs.
  size_t sub = d.argv.size() - 3;
  EXPECT_EQ(sub % 2, 1u);
  for (size_t i = 1; i < sub; i += 2) {
    EXPECT_EQ(d.argv[i], "-c");
    EXPECT_NE(d.argv[i + 1].find('='), std::string::npos) << d.argv[i + 1];
  }
  for (std::string_view pin : {"core.hooksPath=/dev/null", "core.fsmonitor=false", "core.pager=cat", "core.editor=:",
                               "protocol.allow=never", "gpg.program=/dev/null", "diff.ignoreSubmodules=all"})
    EXPECT_NE(std::find(d.argv.begin(), d.argv.begin() + static_cast<long>(sub), pin), d.argv.begin() + static_cast<long>(sub)) << pin;
  for (std::string_view kv : {"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
                              "GIT_PAGER=cat", "GIT_EDITOR=:", "GIT_ALLOW_PROTOCOL="})
    EXPECT_NE(std::find(d.env.begin(), d.env.end(), kv), d.env.end()) << kv;
}

// --- Options before the subcommand ------------------------------------------------------

TEST(GitGate, RefusesConfigOptionBeforeSubcommand) { expectRefused({"-c", "core.pager=sh", "log"}, "git.global-option"); }
TEST(GitGate, RefusesChdirOptionBeforeSubcommand) { expectRefused({"-C", "/", "status"}, "git.global-option"); }
TEST(GitGate, RefusesExecPath) { expectRefused({"--exec-path=/tmp/x", "status"}, "git.global-option"); }
TEST(GitGate, RefusesGitDir) { expectRefused({"--git-dir=/tmp/x/.git", "status"}, "git.global-option"); }
TEST(GitGate, RefusesWorkTree) { expectRefused({"--work-tree", "/", "status"}, "git.global-option"); }
TEST(GitGate, RefusesNamespace) { expectRefused({"--namespace=x", "log"}, "git.global-option"); }
TEST(GitGate, RefusesConfigEnv) { expectRefused({"--config-env=core.pager=X", "log"}, "git.global-option"); }
TEST(GitGate, RefusesSuperPrefix) { expectRefused({"--super-prefix=x/", "status"}, "git.global-option"); }
TEST(GitGate, RefusesPaginate) {
  expectRefused({"-p", "log"}, "git.global-option");
  expectRefused({"--paginate", "log"}, "git.global-option");
}
TEST(GitGate, RefusesNoPagerToo) {
  expectRefused({"-P", "log"}, "git.global-option");
  expectRefused({"--no-pager", "log"}, "git.global-option");
}
TEST(GitGate, RefusesBare) { expectRefused({"--bare", "log"}, "git.global-option"); }
TEST(GitGate, RefusesLiteralPathspecs) { expectRefused({"--literal-pathspecs", "log"}, "git.global-option"); }
TEST(GitGate, RefusesListCmds) { expectRefused({"--list-cmds=main"}, "git.global-option"); }
TEST(GitGate, RefusesNoSubcommand) { expectRefused({}, "git.subcommand"); }

// --- Subcommands not listed -------------------------------------------------------------

TEST(GitGate, RefusesUnlistedSubcommands) {
  for (std::string_view sub : {"help", "config", "remote", "fetch", "push", "clone", "submodule", "daemon", "archive",
                               "pull", "ls-remote", "filter-branch", "difftool", "mergetool", "web--browse",
                               "upload-pack", "bisect", "rebase", "am", "maintenance", "credential", "instaweb"})
    expectRefused({std::string(sub)}, "git.subcommand");
}
TEST(GitGate, RefusesArchiveRemote) { expectRefused({"archive", "--remote=ext::sh", "HEAD"}, "git.subcommand"); }
TEST(GitGate, RefusesAliases) {
  expectRefused({"co", "main"}, "git.subcommand");
  expectRefused({"st"}, "git.subcommand");
}
TEST(GitGate, SubcommandCompareIsExact) {
  for (std::string_view sub : {"Status", "status ", "STATUS", "stat", ""}) expectRefused({std::string(sub)}, "git.subcommand");
}

// --- Per-subcommand vectors -------------------------------------------------------------

TEST(GitGate, RefusesUploadPack) {
  for (std::string_view sub : {"log", "grep", "status", "init"}) expectOptionRefused({std::string(sub), "--upload-pack=touch x"});
}
TEST(GitGate, RefusesUploadPackAbbreviation) {
  expectOptionRefused({"log", "--upload-p=x"});
  expectOptionRefused({"grep", "--upl", "x"});
  expectOptionRefused({"status", "--u=x"});
}
TEST(GitGate, RefusesReceivePack) {
  expectOptionRefused({"log", "--receive-pack=x"});
  expectOptionRefused({"log", "--rece=x"});
}
TEST(GitGate, RefusesExec) {
  expectOptionRefused({"log", "--exec=x"});
  expectOptionRefused({"status", "--exe", "x"});
}
TEST(GitGate, RefusesGrepOpenFilesInPager) {
  for (std::string_view a : {"-O", "-Ovim", "-nO", "-inOvim", "--open-files-in-pager", "--open-files-in-pager=vi", "--open=vi", "--o"})
    expectOptionRefused({"grep", std::string(a), "foo"});
}
TEST(GitGate, RefusesOutput) {
  for (std::string_view sub : {"diff", "log", "show", "rev-list"}) {
    expectOptionRefused({std::string(sub), "--output=/workspace/x"});
    expectOptionRefused({std::string(sub), "--output", "x"});
  }
}
TEST(GitGate, RefusesOutputAbbreviation) {
  expectOptionRefused({"diff", "--outp=x"});
  expectOptionRefused({"log", "--out", "x"});
}
TEST(GitGate, RefusesExtDiff) {
  for (std::string_view sub : {"diff", "log", "show"}) expectOptionRefused({std::string(sub), "--ext-diff"});
  expectOptionRefused({"diff", "--ext"});
}
TEST(GitGate, RefusesTextconv) {
  for (std::string_view sub : {"diff", "log", "show", "grep", "cat-file"}) expectOptionRefused({std::string(sub), "--textconv"});
  expectOptionRefused({"grep", "--textc", "x"});
  // In cat-file --text is not an option of its own, so parse-options would expand it.
  expectOptionRefused({"cat-file", "--text", "HEAD:f"});
}
TEST(GitGate, RefusesCatFileFilters) {
  expectOptionRefused({"cat-file", "--filters", "HEAD:f"});
  expectOptionRefused({"cat-file", "--filt", "HEAD:f"});
  expectOptionRefused({"cat-file", "--filter", "HEAD:f"});  // only rev-list has a real --filter
}
TEST(GitGate, RefusesInitTemplate) {
  expectOptionRefused({"init", "--template=/tmp/t"});
  expectOptionRefused({"init", "--templ", "/tmp/t"});
  expectOptionRefused({"init", "--t=/tmp/t"});  // one letter is unambiguous for git init
}
TEST(GitGate, RefusesInitSeparateGitDir) {
  expectOptionRefused({"init", "--separate-git-dir=/tmp/g"});
  expectOptionRefused({"init", "--sep", "/tmp/g"});
}
TEST(GitGate, RefusesCommitGpgSign) {
  for (std::string_view a : {"-S", "-Skey", "-aS", "--gpg-sign", "--gpg-sign=key", "--gpg"})
    expectOptionRefused({"commit", std::string(a), "-m", "x"});
}
TEST(GitGate, RefusesCommitEdit) {
  for (std::string_view a : {"-e", "-ae", "--edit", "--ed"}) expectOptionRefused({"commit", std::string(a), "-m", "x"});
}
TEST(GitGate, RefusesCommitTemplate) {
  expectOptionRefused({"commit", "-t", "tmpl.txt"});
  expectOptionRefused({"commit", "--template=tmpl.txt"});
}
TEST(GitGate, RefusesCommitReeditMessage) {
  expectOptionRefused({"commit", "-c", "HEAD"});
  expectOptionRefused({"commit", "--reedit-message=HEAD"});
}
TEST(GitGate, RefusesCommitInteractive) {
  for (std::string_view a : {"--interactive", "-p", "--patch", "-ap", "--pat"}) expectOptionRefused({"commit", std::string(a)});
}
TEST(GitGate, RefusesAddInteractive) {
  for (std::string_view a : {"-i", "-p", "-e", "-Ap", "--interactive", "--patch", "--edit", "--inter"})
    expectOptionRefused({"add", std::string(a)});
}
TEST(GitGate, RefusesNotesEdit) { expectRefused({"notes", "edit", "HEAD"}, "git.notes"); }
TEST(GitGate, RefusesNotesMerge) { expectRefused({"notes", "merge", "refs/notes/other"}, "git.notes"); }
TEST(GitGate, RefusesNotesReeditMessage) {
  expectOptionRefused({"notes", "add", "-c", "HEAD"});
  expectOptionRefused({"notes", "append", "--reedit-message=HEAD"});
}
// notes parses twice (notes, then its subcommand), so "--" there would not end options.
TEST(GitGate, RefusesNotesOptionsBeforeItsSubcommand) {
  expectRefused({"notes", "--", "edit"}, "git.notes");
  expectRefused({"notes", "-v", "list"}, "git.notes");
}
TEST(GitGate, RefusesHelpOption) {
  expectOptionRefused({"commit", "--help"});  // git turns this into `git help commit`: man, a browser
  expectOptionRefused({"log", "--he"});
}
TEST(GitGate, RefusesShowSignature) {
  expectOptionRefused({"log", "--show-signature"});
  expectOptionRefused({"show", "--show-sig"});
}
TEST(GitGate, RefusesRecurseSubmodules) { expectOptionRefused({"grep", "--recurse-submodules", "foo"}); }
TEST(GitGate, RefusesSubmoduleDiff) {
  expectOptionRefused({"diff", "--submodule=diff"});
  expectOptionRefused({"log", "-p", "--submodule"});
}
TEST(GitGate, RefusesIgnoreSubmodulesOverride) {
  for (std::string_view a : {"--ignore-submodules=none", "--ignore-submodules=dirty", "--ignore-submodules=untracked", "--ignore-sub"})
    expectOptionRefused({"status", std::string(a)});
}

// Decisions, not oversights (docs/command-gate.md): these read files the sandbox already shows.
TEST(GitGate, AllowsDiffNoIndexByDecision) { expectAllowed({"diff", "--no-index", "/etc/hostname", "a.txt"}); }
TEST(GitGate, AllowsCommitFileByDecision) {
  expectAllowed({"commit", "-F", "msg.txt"});
  expectAllowed({"commit", "--file=msg.txt"});
}
// -u is --upload-pack only in fetch/clone (not listed); here it is --update/--untracked-files.
TEST(GitGate, AllowsShortUBecauseNoListedSubcommandUploads) {
  expectAllowed({"add", "-u"});
  expectAllowed({"status", "-uno"});
}

// --- Option syntax ------------------------------------------------------------------------

TEST(GitGate, DoubleDashEndsOptions) {
  expectAllowed({"diff", "--", "-O", "--output"});  // pathspecs named like options
  expectAllowed({"log", "--end-of-options", "--output=x"});
  expectOptionRefused({"diff", "--output=x", "--", "f"});  // before the "--" it still counts
}
TEST(GitGate, PathspecMagicRefusedAsMetachar) { expectRefused({"add", ":(exclude)secret"}, "metachar"); }
TEST(GitGate, RefusesMetacharactersInGitArgs) {
  expectRefused({"log", "--format=%H;touch x"}, "metachar");
  expectRefused({"commit", "-m", "$(id)"}, "metachar");
  expectRefused({"log", "HEAD@{1}"}, "metachar");
}
TEST(GitGate, RefusesControlBytesInGitArgs) { expectRefused({"commit", "-m", "line\nline"}, "control"); }

TEST(GitGate, ReasonsNameTheOptionNotTheValue) {
  CommandDecision d = gateGit({"diff", "--output=/workspace/corral-sentinel-7f3a"});
  ASSERT_FALSE(d.allowed);
  EXPECT_NE(d.reason.find("argument 2"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("--output"), std::string::npos) << d.reason;
  EXPECT_EQ(d.reason.find("sentinel"), std::string::npos) << d.reason;
  d = gateGit({"corral-sentinel-7f3a-" + std::string(64, 'z')});
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.reason.find(std::string(20, 'z')), std::string::npos) << "more than 32 bytes echoed: " << d.reason;
}


}  // namespace
}  // namespace corral::policy
