// SPDX-License-Identifier: Apache-2.0
#include "agent/private_workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/sendfile.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <random>

#include "audit/canonical_json.h"
#include "base/sha256.h"
#include "base/dir_stream.h"
#include "base/open_beneath.h"
#include "base/read_fd.h"
#include "base/remove_tree.h"
#include "base/secure_dir.h"
#include "policy/path_policy.h"
#include "sandbox/workspace.h"
#include "sandbox/workspace.h"

namespace corral::agent {
namespace {

constexpr int kMaxDepth = 64;

const char* kindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "symlink";
  if (S_ISFIFO(mode)) return "fifo";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "device";
  return "not a regular file";
}

bool wanted(const policy::Manifest& m, const std::string& rel) { return policy::declaresFile(m.inputs, m.outputs, rel); }

// Whether a declared input or output could lie below the directory rel: the walk enters no
// other directory, so a deep node_modules or an unreadable directory no input names neither
// costs time nor aborts the run.
bool wantedBelow(const policy::Manifest& m, const std::string& rel) {
  return policy::mayDeclareBelow(m.inputs, m.outputs, rel);
}

// Creates the parents of rel beneath root (no symlinks), returning the parent's fd.
Result<UniqueFd> makeParents(int root, const std::string& rel) {
  UniqueFd dir(::fcntl(root, F_DUPFD_CLOEXEC, 3));
  if (!dir.valid()) return sysError("dup");
  size_t start = 0;
  for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', start)) {
    const std::string comp = rel.substr(start, slash - start);
    start = slash + 1;
    if (::mkdirat(dir.get(), comp.c_str(), 0755) != 0 && errno != EEXIST) return sysError(rel + ": mkdir");
    UniqueFd next(openBeneath(dir.get(), comp.c_str(), O_PATH | O_DIRECTORY));
    if (!next.valid()) return sysError(std::string(rel).append(": ").append(comp));
    dir = std::move(next);
  }
  return dir;
}

std::string leaf(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

Result<void> copyFile(int src_dir, const char* name, int dst_root, const std::string& rel, const struct stat& st,
                      StageReport& report) {
  UniqueFd in(::openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in.valid()) return sysError(rel);
  struct stat now;
  if (::fstat(in.get(), &now) != 0) return sysError(rel);
  if (!S_ISREG(now.st_mode) || now.st_ino != st.st_ino) return Error(Errc::kRefused, rel + ": changed while staging");
  ASSIGN_OR_RETURN(std::string content, readUpTo(in.get(), static_cast<size_t>(now.st_size), rel));
  if (content.size() > static_cast<size_t>(now.st_size)) return Error(Errc::kRefused, rel + ": grew while staging");
  ASSIGN_OR_RETURN(UniqueFd parent, makeParents(dst_root, rel));
  UniqueFd out(::openat(parent.get(), leaf(rel).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        now.st_mode & 0755));
  if (!out.valid()) return sysError(rel);
  for (size_t off = 0; off < content.size();) {
    ssize_t n = ::write(out.get(), content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sysError(rel + ": write");
    off += static_cast<size_t>(n);
  }
  report.files.push_back({rel, content.size(), audit::sha256Hex(content)});
  report.bytes += content.size();
  return {};
}

Result<void> walk(int src_dir, int dst_root, const std::string& prefix, int depth, const policy::Manifest& m,
                  uint64_t max_bytes, StageReport& report) {
  if (depth > kMaxDepth) return Error(Errc::kLimit, prefix + ": directories nested too deep");
  DirStream d = openDirStream(src_dir);
  if (!d) return sysError(prefix.empty() ? "workspace" : prefix);
  while (dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (depth == 0 && policy::path::isReservedName(name)) continue;  // the audit record is never an input
    const std::string rel = prefix.empty() ? name : std::string(prefix).append("/").append(name);
    struct stat st;
    if (::fstatat(src_dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return sysError(rel);
    // Tool arguments and the trace are JSON (UTF-8): a name that is not cannot be named by
    // the model or recorded, so it is listed as refused (hashed in the trace), never staged.
    if (!audit::isValidUtf8(name)) {
      if (S_ISDIR(st.st_mode) ? wantedBelow(m, rel) : wanted(m, rel)) report.refused.push_back(rel + ": name is not UTF-8");
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (!wantedBelow(m, rel)) continue;
      UniqueFd sub(::openat(src_dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub.valid()) return sysError(rel);
      RETURN_IF_ERROR(walk(sub.get(), dst_root, rel, depth + 1, m, max_bytes, report));
      continue;
    }
    if (!wanted(m, rel)) continue;
    if (!S_ISREG(st.st_mode)) {
      report.refused.push_back(rel + ": " + kindOf(st.st_mode));
      continue;
    }
    if (report.files.size() >= kMaxStagedFiles) return Error(Errc::kLimit, "more than 100000 input files");
    if (report.bytes + static_cast<uint64_t>(st.st_size) > max_bytes)
      return Error(Errc::kLimit, "inputs exceed the workspace size (" + std::to_string(max_bytes) + " bytes)");
    RETURN_IF_ERROR(copyFile(src_dir, name.c_str(), dst_root, rel, st, report));
  }
  return {};
}


constexpr std::string_view kRootPrefix = "corral-run-";
// Made only after the root is locked: a root without it may be one that create() has not
// locked yet, or any other directory with a similar name, and is never swept.
constexpr char kLockMarker[] = ".corral-private-workspace";

// Removes TMPDIR/corral-run-* roots of this uid whose run is gone: the lock marker is there
// but nobody holds the lock. Each root is removed through its fd while the lock is held, so
// a name swapped meanwhile loses nothing. Best effort; anything unexpected is left alone.
void sweepAbandoned(int tmpdir) {
  DirStream stream = openDirStream(tmpdir);
  if (!stream) return;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(stream.get())) {
    const std::string_view name = e->d_name;
    if (name.size() == kRootPrefix.size() + 6 && name.substr(0, kRootPrefix.size()) == kRootPrefix) names.emplace_back(name);
  }
  for (const std::string& name : names) {
    UniqueFd root(::openat(tmpdir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (!root.valid() || ::fstat(root.get(), &st) != 0 || st.st_uid != ::geteuid()) continue;
    if (::flock(root.get(), LOCK_EX | LOCK_NB) != 0) continue;  // a live run, or a sweeper
    struct stat marker;
    if (::fstatat(root.get(), kLockMarker, &marker, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(marker.st_mode)) continue;
    (void)removeTreeAt(tmpdir, name.c_str(), root.get());
  }
}

// TMPDIR must not let another user rename what corral makes in it (the sandbox is given the
// workspace by path): it and every directory above it owned by root or this user, and sticky
// where others can write. The path is then used as the kernel resolved it, without symlinks.
Result<UniqueFd> openTmpdir(std::string& tmpdir) {
  UniqueFd dir(::open(tmpdir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return sysError("private workspace: TMPDIR " + tmpdir);
  if (std::string why = whoElseCouldRename(dir.get()); !why.empty())
    return Error(Errc::kRefused, "private workspace: TMPDIR " + tmpdir + ": another user could rename " + why +
                                     ": refusing");
  std::string real = realPathOf(dir.get());
  if (real.empty()) return Error(Errc::kIo, "private workspace: TMPDIR " + tmpdir + ": cannot tell its path");
  tmpdir = std::move(real);
  return dir;
}

}  // namespace

Result<PrivateWorkspace> PrivateWorkspace::create() {
  const char* env = std::getenv("TMPDIR");
  std::string tmpdir_path = env != nullptr && env[0] == '/' ? env : "/tmp";
  auto opened = openTmpdir(tmpdir_path);
  if (!opened.ok() && opened.error().code() == static_cast<int>(Errc::kRefused) && tmpdir_path != "/tmp") {
    tmpdir_path = "/tmp";  // an unsafe TMPDIR is passed over for /tmp, if that one is safe
    opened = openTmpdir(tmpdir_path);
  }
  if (!opened.ok()) return opened.error();
  UniqueFd tmpdir = std::move(*opened);
  sweepAbandoned(tmpdir.get());
  std::string name = std::string(kRootPrefix) + "XXXXXX";
  std::string root = tmpdir_path + "/" + name;
  if (::mkdtemp(root.data()) == nullptr) return sysError("private workspace: mkdtemp " + root);
  name = root.substr(tmpdir_path.size() + 1);
  UniqueFd lock(::openat(tmpdir.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!lock.valid()) return sysError("private workspace: open " + root);
  auto fail = [&](Error e) -> Error {
    (void)removeTreeAt(tmpdir.get(), name.c_str(), lock.get());
    return e;
  };
  // Blocking: a sweeper holds the lock only while it looks, and leaves a root without the
  // marker alone.
  while (::flock(lock.get(), LOCK_EX) != 0)
    if (errno != EINTR) return fail(sysError("private workspace: lock " + root));
  UniqueFd marker(::openat(lock.get(), kLockMarker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!marker.valid()) return fail(sysError("private workspace: create the lock marker"));
  if (::mkdirat(lock.get(), "ws", 0700) != 0) return fail(sysError("private workspace: mkdir ws"));
  UniqueFd ws(::openat(lock.get(), "ws", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!ws.valid()) return fail(sysError("private workspace: open ws"));
  std::string ws_path = root + "/ws";
  return PrivateWorkspace(std::move(tmpdir), std::move(name), std::move(lock), std::move(ws_path), std::move(ws));
}

PrivateWorkspace::~PrivateWorkspace() {
  if (!lock_.valid() || !tmpdir_.valid()) return;  // moved from
  (void)removeTreeAt(tmpdir_.get(), name_.c_str(), lock_.get());
}

Result<StageReport> PrivateWorkspace::stageFrom(int host_workspace, const policy::Manifest& m, uint64_t max_bytes) {
  sandbox::workspace::IgnoreSigxfsz quiet;  // ulimit -f: an error below, not a dead corral
  StageReport report;
  RETURN_IF_ERROR(walk(host_workspace, dir_.get(), "", 0, m, max_bytes, report));
  return report;
}

Result<std::string> PrivateWorkspace::readFile(std::string_view rel, uint64_t max_bytes) const {
  const std::string r(rel);
  UniqueFd fd(openBeneath(dir_.get(), r.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));  // a FIFO must not block
  if (!fd.valid()) {
    if (errno == ELOOP || errno == EXDEV) return Error(Errc::kRefused, r + ": resolves through a symlink or outside the workspace");
    return sysError(r);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sysError(r);
  if (!S_ISREG(st.st_mode)) return Error(Errc::kRefused, r + ": " + kindOf(st.st_mode));
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return Error(Errc::kLimit, r + ": " + std::to_string(st.st_size) + " bytes is over the read limit of " +
                                   std::to_string(max_bytes));
  ASSIGN_OR_RETURN(std::string content, readUpTo(fd.get(), static_cast<size_t>(max_bytes), r));
  if (content.size() > max_bytes) return Error(Errc::kLimit, r + ": over the read limit of " + std::to_string(max_bytes));
  return content;
}

Result<void> PrivateWorkspace::writeFile(std::string_view rel, std::string_view content) const {
  const std::string r(rel);
  ASSIGN_OR_RETURN(UniqueFd parent, makeParents(dir_.get(), r));
  const std::string name = leaf(r);
  struct stat st;
  if (::fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
    return Error(Errc::kRefused, r + ": exists and is a " + kindOf(st.st_mode));
  std::mt19937_64 rng(std::random_device{}());
  const std::string tmp = "." + name.substr(0, 200) + ".corral-tmp-" + std::to_string(rng());
  UniqueFd out(::openat(parent.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!out.valid()) return sysError(r + ": create");
  for (size_t off = 0; off < content.size();) {
    ssize_t n = ::write(out.get(), content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Error e = sysError(r + ": write");
      ::unlinkat(parent.get(), tmp.c_str(), 0);
      return e;
    }
    off += static_cast<size_t>(n);
  }
  if (::renameat(parent.get(), tmp.c_str(), parent.get(), name.c_str()) != 0) {
    Error e = sysError(r + ": rename");
    ::unlinkat(parent.get(), tmp.c_str(), 0);
    return e;
  }
  return {};
}

// Streamed: an output may be as large as the sandbox's file-size limit allows (a sparse 5 GB
// file is one truncate(1) away), and reading it whole took twice its size in memory.
std::string PrivateWorkspace::hashOf(std::string_view rel) const {
  return audit::sha256OfFileBeneath(dir_.get(), std::string(rel)).sha256;
}

std::vector<sandbox::OutputResult> PrivateWorkspace::copyOutputsTo(int host_workspace,
                                                                   const std::vector<std::string>& outputs) const {
  return sandbox::workspace::copyBack(dir_.get(), host_workspace, outputs);
}

}  // namespace corral::agent
