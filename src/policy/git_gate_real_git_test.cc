// SPDX-License-Identifier: Apache-2.0
// gateGit's argv/env and checkGitConfig against real git, with a control run without the pins.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "policy/git_gate.h"

namespace corral::policy {
namespace {

using Args = std::vector<std::string>;

std::string joined(const Args& args) {
  std::string s;
  for (const std::string& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

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

// A workspace laid out as a bare repository (HEAD, objects/, refs/, config at its root, no
// .git) is found by git's discovery, and its config was never checked by the runner (which
// checks .git/config). Under the pins git only ever uses ./.git, so its programs never run.
TEST(GitGateRealGit, ABareRepositoryAtTheRootIsNeverUsed) {
  if (!haveGit()) GTEST_SKIP() << kGit << " is missing";
  for (bool gated : {true, false}) {
    TempDir tmp;
    const fs::path& t = tmp.path();
    const fs::path ws = t / "ws", marks = t / "marks", log = t / "git.log";
    fs::create_directories(ws / "objects" / "info");
    fs::create_directories(ws / "refs" / "heads");
    fs::create_directories(marks);
    writeFile(ws / "HEAD", "ref: refs/heads/main\n");
    writeFile(ws / "config", "[diff]\n\texternal = \"touch " + (marks / "diff-external").string() + "; true\"\n");
    writeFile(ws / "a.txt", "a\n");
    writeFile(ws / "b.txt", "b\n");
    if (gated) fs::create_directories(ws / ".git");  // an invalid .git must not send git looking further
    const Args base = {"PATH=/usr/bin:/bin", "HOME=" + t.string()};
    for (const Args& step : {Args{"diff", "--no-index", "a.txt", "b.txt"}, Args{"diff"}, Args{"log"}}) {
      Args argv = {"git"}, env = base;
      argv.insert(argv.end(), step.begin(), step.end());
      if (gated) {
        CommandDecision d = gateGit(step);
        ASSERT_TRUE(d.allowed) << joined(step) << ": " << d.reason;
        argv = d.argv;
        env.insert(env.end(), d.env.begin(), d.env.end());
      } else {
        env.insert(env.end(), {"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"});
      }
      EXPECT_GE(runGit(ws, argv, env, log), 0) << joined(step);
    }
    if (gated) {
      EXPECT_TRUE(marksIn(marks).empty()) << "git.pins broken: the root's bare-repository config ran:" << listed(marksIn(marks));
    } else {
      EXPECT_TRUE(marksIn(marks).count("diff-external")) << "control: plain git did not use the bare repository; saw"
                                                        << listed(marksIn(marks));
    }
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
