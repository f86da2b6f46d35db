// SPDX-License-Identifier: Apache-2.0
#include "agent/memory_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "audit/record_dir.h"
#include "base/dir_stream.h"
#include "base/read_fd.h"
#include "base/secure_dir.h"
#include "policy/git_gate.h"

extern char** environ;

namespace corral::agent {
namespace {

constexpr const char* kMemDir = "mem";

std::string gitBinary() {
  const char* g = std::getenv("CORRAL_GIT");
  if (g != nullptr && g[0] != '\0') return g;
  return "/usr/bin/git";
}

// Whether dir holds nothing but a real directory named runs (file-backed memory records).
bool onlyRunsRecords(int dir) {
  DirStream d = openDirStream(dir);
  if (!d) return false;
  while (dirent* e = ::readdir(d.get())) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st;
    if (n != "runs" || ::fstatat(dir, "runs", &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) return false;
  }
  return true;
}

// Everything under .corral/mem/.git must be what git itself makes there: directories and
// single-link regular files. The host's git runs on this store, outside any sandbox, so a
// workspace that arrives with a crafted store (an untrusted archive) must not steer it:
// a symlink or hard link would make git write through to a file elsewhere (logs/HEAD,
// objects/, refs/), commondir and config.worktree name config files the check below never
// reads, and alternates make git read objects from another directory.
constexpr size_t kMaxGitEntries = 1'000'000;
constexpr int kMaxGitDepth = 16;

// A default POSIX ACL on a directory is inherited by what git creates in it, and under one
// the umask does not apply: another user named in it could write the new .git. (An access
// ACL that grants write shows in the mode's group bits, which the check below sees.)
bool hasDefaultAcl(int dir) {
  return ::fgetxattr(dir, "system.posix_acl_default", nullptr, 0) >= 0 || (errno != ENODATA && errno != ENOTSUP);
}

// The store must also stay what was checked until git has run: only the user running corral
// may be able to change it. Another user who can write a directory of it (a shared or CI
// workspace) could swap .git or its config between the check and git, and git runs on the
// host. Directories and files owned by this uid and not writable by group or others.
Result<void> onlyOwnerCanChange(const struct stat& st, const std::string& path) {
  if (st.st_uid != ::geteuid())
    return Error(Errc::kRefused, "memory store " + path + " belongs to uid " + std::to_string(st.st_uid) +
                                     ", not to the user running corral (uid " + std::to_string(::geteuid()) +
                                     "): refusing, another user could change it while the host's git runs");
  if ((st.st_mode & 022) != 0)
    return Error(Errc::kRefused, "memory store " + path +
                                     " is writable by group or others: refusing, another user could change it "
                                     "while the host's git runs (chmod -R go-w it)");
  return {};
}

Error defaultAclRefused(const std::string& path) {
  return Error(Errc::kRefused, "memory store " + path +
                                   " has a default ACL: refusing, what git creates there could be writable by "
                                   "another user (setfacl -k it)");
}

Result<void> checkGitTree(int dir, const std::string& rel, int depth, size_t& entries) {
  if (depth > kMaxGitDepth) return Error(Errc::kRefused, "memory store " + rel + ": nested too deep: refusing");
  DirStream d = openDirStream(dir);
  if (!d) return sysError("memory store " + rel);
  while (dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = std::string(rel).append("/").append(name);
    if (++entries > kMaxGitEntries)
      return Error(Errc::kRefused, "memory store .corral/mem/.git has more than 1000000 entries: refusing");
    if (depth == 0 && (name == "commondir" || name == "config.worktree" || name == "gitdir"))
      return Error(Errc::kRefused, "memory store " + path + " would point git at other config or another repository: refusing");
    if (depth == 1 && rel.ends_with("/objects") && name == "info") {
      struct stat ist;
      for (const char* alt : {"info/alternates", "info/http-alternates"})
        if (::fstatat(dir, alt, &ist, AT_SYMLINK_NOFOLLOW) == 0)
          return Error(Errc::kRefused, "memory store " + rel + "/" + alt + " borrows objects from elsewhere: refusing");
    }
    struct stat st;
    if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return sysError("memory store " + path);
    if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) RETURN_IF_ERROR(onlyOwnerCanChange(st, path));
    if (S_ISDIR(st.st_mode)) {
      UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub.valid()) return sysError("memory store " + path);
      if (hasDefaultAcl(sub.get())) return defaultAclRefused(path);
      RETURN_IF_ERROR(checkGitTree(sub.get(), path, depth + 1, entries));
    } else if (!S_ISREG(st.st_mode)) {
      return Error(Errc::kRefused, "memory store " + path + " is not a regular file or directory (a symlink?): refusing");
    } else if (st.st_nlink != 1) {
      return Error(Errc::kRefused, "memory store " + path + " has other hard links: refusing");
    }
  }
  return {};
}

// Opens .corral/mem (creating it when create), refusing everything checkMemoryStore refuses.
// has_git reports whether .git exists.
Result<UniqueFd> openStore(const std::string& workspace, bool create, bool* has_git) {
  ASSIGN_OR_RETURN(UniqueFd record, audit::openRecordDir(workspace, create));
  struct stat st;
  if (::fstatat(record.get(), kMemDir, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT || !create) return sysError("memory store .corral/mem");
    if (::mkdirat(record.get(), kMemDir, 0755) != 0) return sysError("memory store .corral/mem: mkdir");
    // A default ACL on .corral was inherited by the new directory: drop it (and the access ACL
    // it brought), so that git's directories get plain modes under umask 022.
    UniqueFd fresh(::openat(record.get(), kMemDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fresh.valid()) return sysError("memory store .corral/mem");
    for (const char* acl : {"system.posix_acl_default", "system.posix_acl_access"})
      if (::fremovexattr(fresh.get(), acl) != 0 && errno != ENODATA && errno != ENOTSUP)
        return sysError("memory store .corral/mem: remove an inherited ACL");
    if (::fchmod(fresh.get(), 0755) != 0) return sysError("memory store .corral/mem: chmod");
  } else if (!S_ISDIR(st.st_mode)) {
    return Error(Errc::kRefused, "memory store .corral/mem is not a real directory (symlink or file): refusing");
  }
  UniqueFd mem(::openat(record.get(), kMemDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!mem.valid()) return sysError("memory store .corral/mem");
  if (::fstat(mem.get(), &st) != 0) return sysError("memory store .corral/mem");
  RETURN_IF_ERROR(onlyOwnerCanChange(st, ".corral/mem"));
  if (hasDefaultAcl(mem.get())) return defaultAclRefused(".corral/mem");
  if (::fstatat(mem.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISDIR(st.st_mode))
      return Error(Errc::kRefused,
                   "memory store .corral/mem/.git is not a real directory (a gitdir file or symlink pointing elsewhere): refusing");
    RETURN_IF_ERROR(onlyOwnerCanChange(st, ".corral/mem/.git"));
    *has_git = true;
    UniqueFd git_dir(::openat(mem.get(), ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!git_dir.valid()) return sysError("memory store .corral/mem/.git");
    if (hasDefaultAcl(git_dir.get())) return defaultAclRefused(".corral/mem/.git");
    size_t entries = 0;
    RETURN_IF_ERROR(checkGitTree(git_dir.get(), ".corral/mem/.git", 0, entries));
    UniqueFd config(::openat(git_dir.get(), "config", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (config.valid()) {
      if (::fstat(config.get(), &st) != 0 || !S_ISREG(st.st_mode))
        return Error(Errc::kRefused, "memory store .corral/mem/.git/config is not a regular file: refusing");
      ASSIGN_OR_RETURN(std::string text, readUpTo(config.get(), size_t{1} << 20, "memory store config"));
      if (auto c = policy::checkGitConfig(text); !c.ok()) return c.error().wrap("memory store .corral/mem/.git/config");
    } else if (errno != ENOENT) {
      return sysError("memory store .corral/mem/.git/config");
    }
  } else {
    if (errno != ENOENT) return sysError("memory store .corral/mem/.git");
    *has_git = false;
    // Without .git only what a run that could not use git leaves is accepted: runs/, a real
    // directory. Anything else is not a store corral made.
    if (!onlyRunsRecords(mem.get()))
      return Error(Errc::kRefused, "memory store .corral/mem has content other than runs/ but no .git: refusing");
  }
  return mem;
}

// Runs the host git on the store with the gate's argv and pinned environment; output discarded.
// git starts in the store directory corral opened and checked (fchdir on that fd), with .git
// and the work tree named relative to it. git itself turns that into an absolute path and
// reopens files through it, so the caller first makes sure nobody else can rename any
// directory on that path (whoElseCouldRename).
Result<std::string> git(const std::string& binary, const UniqueFd& mem, const std::string& mem_path,
                        const std::vector<std::string>& args, bool capture) {
  policy::CommandDecision d = policy::gateGit(args);
  if (!d.allowed) return Error(Errc::kRefused, "memory store: git " + args.at(0) + ": " + d.reason);
  std::vector<std::string> env = d.env;
  env.emplace_back("GIT_DIR=.git");
  env.emplace_back("GIT_WORK_TREE=.");
  env.push_back("GIT_CEILING_DIRECTORIES=" + mem_path);
  env.emplace_back("HOME=/nonexistent");
  env.emplace_back("PATH=/usr/bin:/bin");
  env.emplace_back("LANG=C");
  for (const char* k : {"GIT_AUTHOR_NAME=corral", "GIT_AUTHOR_EMAIL=corral@localhost", "GIT_COMMITTER_NAME=corral",
                        "GIT_COMMITTER_EMAIL=corral@localhost"})
    env.emplace_back(k);
  std::vector<char*> argv;
  std::string bin = binary;
  argv.push_back(bin.data());
  for (size_t i = 1; i < d.argv.size(); ++i) argv.push_back(d.argv[i].data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return sysError("memory store: pipe");
  UniqueFd rd(out[0]), wr(out[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addfchdir_np(&fa, mem.get());
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, bin.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  wr.reset();
  if (rc != 0) return sysError("memory store: " + bin, rc);
  auto text = readUpTo(rd.get(), 4096, "memory store: git output");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error(Errc::kIo, "memory store: git " + args.at(0) + " failed (status " + std::to_string(status) + ")");
  if (!capture || !text.ok()) return std::string();
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

Result<void> checkMemoryStore(const std::string& workspace) {
  bool has_git = false;
  auto store = openStore(workspace, false, &has_git);
  if (!store.ok() && store.error().code() == ENOENT) return {};  // created at the end
  if (!store.ok()) return store.error();
  return {};
}

Result<MemoryOutcome> commitRunMemory(const std::string& workspace, const std::string& run_id,
                                      const nlohmann::json& record) {
  // What corral and its git create here must pass onlyOwnerCanChange next time, whatever the
  // caller's umask (002 is common with per-user groups).
  struct NoGroupOrOtherWrite {
    mode_t old = ::umask(022);
    NoGroupOrOtherWrite() { ::umask(old | 022); }
    ~NoGroupOrOtherWrite() { ::umask(old); }
  } umask_scope;
  bool has_git = false;
  ASSIGN_OR_RETURN(UniqueFd mem, openStore(workspace, true, &has_git));
  if (::mkdirat(mem.get(), "runs", 0755) != 0 && errno != EEXIST) return sysError("memory store: mkdir runs");
  UniqueFd runs(::openat(mem.get(), "runs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!runs.valid()) return sysError("memory store: runs");
  struct stat runs_st;
  if (::fstat(runs.get(), &runs_st) != 0) return sysError("memory store: runs");
  RETURN_IF_ERROR(onlyOwnerCanChange(runs_st, ".corral/mem/runs"));
  const std::string name = run_id + ".json";
  RETURN_IF_ERROR(audit::replaceFileAt(
      runs, name, record.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", true));

  const std::string bin = gitBinary();
  if (bin == "none" || ::access(bin.c_str(), X_OK) != 0)
    return MemoryOutcome{"file", "", "git unavailable (" + bin + "): runs/" + name + " written without a commit"};
  // git turns its working directory into an absolute path and reopens .git through it: a
  // user who could rename the store or any directory above it could send git into a
  // repository nobody checked. Then no host git at all.
  if (std::string why = whoElseCouldRename(mem.get()); !why.empty())
    return MemoryOutcome{"file", "", "host git skipped: another user could rename " + why + "; runs/" + name +
                                         " written without a commit"};
  const std::string mem_path = workspace + "/.corral/mem";
  if (!has_git) {
    RETURN_IF_ERROR(git(bin, mem, mem_path, {"init", "--quiet"}, false));
    // What init made is checked like a store that was already there, before git reads it.
    bool now_has_git = false;
    ASSIGN_OR_RETURN(UniqueFd rechecked, openStore(workspace, false, &now_has_git));
    struct stat a, b;
    if (!now_has_git || ::fstat(mem.get(), &a) != 0 || ::fstat(rechecked.get(), &b) != 0 || a.st_ino != b.st_ino ||
        a.st_dev != b.st_dev)
      return Error(Errc::kRefused, "memory store .corral/mem changed while git init ran: refusing");
  }
  // -f: an ignore rule in the store (.gitignore, info/exclude) must not keep the record out.
  RETURN_IF_ERROR(git(bin, mem, mem_path, {"add", "-f", "--", "runs/" + name}, false));
  RETURN_IF_ERROR(git(bin, mem, mem_path, {"commit", "--quiet", "--no-verify", "-m", "corral run " + run_id}, false));
  ASSIGN_OR_RETURN(std::string head, git(bin, mem, mem_path, {"rev-parse", "HEAD"}, true));
  return MemoryOutcome{"committed", head, ""};
}

}  // namespace corral::agent
