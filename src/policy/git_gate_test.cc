// SPDX-License-Identifier: Apache-2.0
// Tests for the git gate: one per vector, normal workflows, and the pins against real git.
#include "policy/git_gate.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

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


// --- The pins against real git ------------------------------------------------------------
// git runs as a plain child (no sandbox): the claim here is only that the argv/env gateGit
// returns keep the repository's hooks, fsmonitor and editor from running.

namespace fs = std::filesystem;
constexpr const char* kGit = "/usr/bin/git";

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "corral-gitgate-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void writeFile(const fs::path& p, const std::string& text, bool executable = false) {
  std::ofstream(p, std::ios::binary | std::ios::app) << text;
  if (executable) fs::permissions(p, fs::perms::owner_all);
}

// Runs kGit with exactly argv/env (nothing inherited), stdin from /dev/null and output
// appended to log. Returns the exit status, or -1 when git could not be run.
int runGit(const fs::path& cwd, const Args& argv, const Args& env, const fs::path& log) {
  // Everything the child touches is prepared before fork: it only opens, dups and execs.
  std::vector<char*> av, ev;
  for (const std::string& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env) ev.push_back(const_cast<char*>(e.c_str()));
  av.push_back(nullptr);
  ev.push_back(nullptr);
  const std::string dir = cwd.string(), out = log.string();
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (in < 0 || fd < 0 || ::dup2(in, 0) < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0 || ::chdir(dir.c_str()) != 0)
      ::_exit(126);
    ::execve(kGit, av.data(), ev.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Where the repository's programs would run from: hooks in .git/hooks, or a directory named
// by core.hooksPath (which then replaces .git/hooks).
enum class HookPlace { kGitDir, kHooksPath };

struct HostileRepo {
  TempDir tmp;
  fs::path repo, marks, log;
  Args base_env;
};

// A repository whose config and hooks would each touch marks/<name> when run.
void makeHostileRepo(HostileRepo& h, HookPlace place) {
  const fs::path& t = h.tmp.path();
  h.repo = t / "repo";
  h.marks = t / "marks";
  h.log = t / "git.log";
  h.base_env = {"PATH=/usr/bin:/bin", "HOME=" + t.string()};
  fs::create_directories(h.repo);
  fs::create_directories(h.marks);
  Args plain_env = h.base_env;
  plain_env.insert(plain_env.end(), {"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"});
  ASSERT_EQ(runGit(h.repo, {"git", "init", "-q"}, plain_env, h.log), 0) << "git init failed; see " << h.log;
  auto script = [&](const fs::path& p, const std::string& name, const std::string& extra = "") {
    writeFile(p, "#!/bin/sh\ntouch '" + (h.marks / name).string() + "'\n" + extra, true);
  };
  fs::path hooks = place == HookPlace::kGitDir ? h.repo / ".git" / "hooks" : t / "evilhooks";
  fs::create_directories(hooks);
  for (std::string_view hook : {"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-index-change",
                                "reference-transaction", "pre-auto-gc"})
    script(hooks / hook, "hook-" + std::string(hook));
  script(t / "fsmonitor.sh", "fsmonitor");
  script(t / "editor.sh", "editor");
  script(t / "pager.sh", "pager", "cat\n");
  fs::remove(h.repo / ".git" / "config");
  std::string config =
      "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
      "\tfsmonitor = " + (t / "fsmonitor.sh").string() + "\n"
      "\tpager = " + (t / "pager.sh").string() + "\n"
      "\teditor = " + (t / "editor.sh").string() + "\n"
      "[sequence]\n\teditor = " + (t / "editor.sh").string() + "\n"
      "[user]\n\tname = t\n\temail = t@example.com\n";
  if (place == HookPlace::kHooksPath) config += "[core]\n\thooksPath = " + hooks.string() + "\n";
  writeFile(h.repo / ".git" / "config", config);
  writeFile(h.repo / "f", "one\n");
}

std::set<std::string> marksIn(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

std::string listed(const std::set<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += " " + n;
  return s.empty() ? " (none)" : s;
}

// commit -m, diff, log -p, status and an editor-opening commit, either through gateGit's
// argv/env or as plain git. Returns the marks left behind.
std::set<std::string> runWorkflow(HookPlace place, bool gated) {
  HostileRepo h;
  makeHostileRepo(h, place);
  const Args steps[] = {{"add", "-A"}, {"commit", "-m", "x"}, {"diff"}, {"log", "-p"}, {"status"},
                        {"commit", "--allow-empty"}};
  int commit_status = -1;
  for (const Args& step : steps) {
    if (step[0] == "diff") writeFile(h.repo / "f", "two\n");
    Args argv = {"git"}, env = h.base_env;
    argv.insert(argv.end(), step.begin(), step.end());
    if (gated) {
      CommandDecision d = gateGit(step);
      EXPECT_TRUE(d.allowed) << joined(step) << ": " << d.reason;
      argv = d.argv;
      env.insert(env.end(), d.env.begin(), d.env.end());
    } else {
      env.insert(env.end(), {"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"});
    }
    int status = runGit(h.repo, argv, env, h.log);
    EXPECT_GE(status, 0) << "could not run git " << joined(step);
    if (step == Args{"commit", "-m", "x"}) commit_status = status;
  }
  // The commit went through, so git did reach the points where it runs hooks.
  EXPECT_EQ(commit_status, 0) << "git commit -m x failed (gated=" << gated << ")";
  return marksIn(h.marks);
}

bool haveGit() { return ::access(kGit, X_OK) == 0; }

TEST(GitGateRealGit, PinsKeepRepoHooksFsmonitorAndEditorInert) {
  if (!haveGit()) GTEST_SKIP() << kGit << " is missing: cannot run the pins against real git";
  for (HookPlace place : {HookPlace::kGitDir, HookPlace::kHooksPath}) {
    std::set<std::string> marks = runWorkflow(place, /*gated=*/true);
    EXPECT_TRUE(marks.empty()) << "git.pins broken: programs from the repository ran under gateGit's argv/env:"
                               << listed(marks);
  }
}

// Control: the same repository and steps without the pins run the hostile programs, so the
// test above can fail. (The pager needs a terminal and shows up in neither run.)
TEST(GitGateRealGit, ControlPlainGitRunsTheRepositorysPrograms) {
  if (!haveGit()) GTEST_SKIP() << kGit << " is missing";
  for (HookPlace place : {HookPlace::kGitDir, HookPlace::kHooksPath}) {
    std::set<std::string> marks = runWorkflow(place, /*gated=*/false);
    for (std::string_view want : {"hook-pre-commit", "hook-commit-msg", "hook-post-commit", "fsmonitor", "editor"})
      EXPECT_TRUE(marks.count(std::string(want))) << "control: plain git did not run " << want << "; saw"
                                                  << listed(marks);
  }
}

// The config allowlist must not refuse what git itself writes, or git would be unusable.
TEST(GitGateRealGit, AcceptsConfigWrittenByGitInitAndClone) {
  if (!haveGit()) GTEST_SKIP() << kGit << " is missing";
  TempDir tmp;
  const fs::path& t = tmp.path();
  const Args env = {"PATH=/usr/bin:/bin", "HOME=" + t.string(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
                    "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e"};
  const fs::path log = t / "git.log";
  const std::pair<Args, fs::path> runs[] = {
      {{"git", "init", "-q", "plain"}, t / "plain" / ".git" / "config"},
      {{"git", "init", "-q", "--bare", "--shared=group", "-b", "main", "bare.git"}, t / "bare.git" / "config"},
      {{"git", "init", "-q", "--object-format=sha256", "sha"}, t / "sha" / ".git" / "config"},
      {{"git", "-C", "plain", "commit", "-q", "--allow-empty", "-m", "x"}, t / "plain" / ".git" / "config"},
      {{"git", "clone", "-q", "plain", "cloned"}, t / "cloned" / ".git" / "config"},
  };
  for (const auto& [argv, config] : runs) {
    ASSERT_EQ(runGit(t, argv, env, log), 0) << joined(argv) << " failed; see " << log;
    std::ifstream in(config, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(text.empty()) << config;
    auto r = checkGitConfig(text);
    EXPECT_TRUE(r.ok()) << "after " << joined(argv) << ": " << r.error().message() << "\n" << text;
  }
}

// The keys no -c pin can neutralise (filters, aliases, external diff) are why the runner
// must call checkGitConfig first: shown here with a filter that runs even under the pins.
TEST(GitGateRealGit, HostileConfigIsRefusedAndFiltersDefeatPinsAlone) {
  if (!haveGit()) GTEST_SKIP() << kGit << " is missing";
  HostileRepo h;
  makeHostileRepo(h, HookPlace::kHooksPath);
  fs::path config = h.repo / ".git" / "config";
  writeFile(config, "[filter \"x\"]\n\tclean = touch " + (h.marks / "filter").string() + "; cat\n"
                    "[alias]\n\tx = !touch " + (h.marks / "alias").string() + "\n"
                    "[diff]\n\texternal = " + (h.tmp.path() / "editor.sh").string() + "\n");
  writeFile(h.repo / ".gitattributes", "* filter=x\n");
  std::ifstream in(config, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto checked = checkGitConfig(text);
  ASSERT_FALSE(checked.ok()) << "checkGitConfig accepted a config with hooksPath, fsmonitor, filter, alias";

  CommandDecision d = gateGit({"add", "-A"});
  ASSERT_TRUE(d.allowed) << d.reason;
  Args env = h.base_env;
  env.insert(env.end(), d.env.begin(), d.env.end());
  EXPECT_EQ(runGit(h.repo, d.argv, env, h.log), 0);
  EXPECT_TRUE(marksIn(h.marks).count("filter"))
      << "expected the filter to run despite the pins (else this test no longer shows why checkGitConfig exists)";
}

}  // namespace
}  // namespace corral::policy
