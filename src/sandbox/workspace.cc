// SPDX-License-Identifier: Apache-2.0
// Output copy-back (staging is workspace_stage.cc).
#include "sandbox/workspace.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/open_beneath.h"
#include "base/unique_fd.h"
#include "sandbox/file_copy.h"

namespace corral::sandbox::workspace {
namespace {

const char* kindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "symlink";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISFIFO(mode)) return "fifo";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "device";
  if (S_ISSOCK(mode)) return "socket";
  return "not a regular file";
}

// Opens (creating as needed) the host directory that will hold rel's last component.
Result<UniqueFd> hostParent(int host_root, const std::string& rel) {
  UniqueFd dir(::fcntl(host_root, F_DUPFD_CLOEXEC, 0));
  size_t start = 0;
  for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', start)) {
    std::string comp = rel.substr(start, slash - start);
    if (::mkdirat(dir.get(), comp.c_str(), 0755) != 0 && errno != EEXIST) return sysError("mkdir " + comp);
    UniqueFd next(openBeneath(dir.get(), comp.c_str(), O_RDONLY | O_DIRECTORY));
    if (!next.valid()) return sysError("open host directory " + comp);
    dir = std::move(next);
    start = slash + 1;
  }
  return dir;
}

// One output between the checks and the rename: its source held open, its data already in a
// temp file beside the target.
struct Pending {
  OutputResult result;
  UniqueFd src;
  struct stat st {};
  UniqueFd parent;   // the host directory that gets it (phase 2)
  std::string name;  // rel's last component
  std::string tmp;   // the temp name in parent, once linked (phase 2)
};

std::string lastComponent(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

// Phase 1, changing nothing on the host: the source is a regular file with one link beneath
// the sandbox's workspace, and the host path holds nothing that would stop the copy (a
// component that exists must be a real directory, the target must not be a directory).
void check(int ws_root, int host_root, Pending& p) {
  OutputResult& r = p.result;
  const std::string& rel = r.path;
  p.src = UniqueFd(openBeneath(ws_root, rel.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
  if (!p.src.valid()) {
    int err = errno;
    if (err == ENOENT) {
      r.status = OutputResult::Status::kMissing;
      r.reason = "not created";
      return;
    }
    struct stat st;
    // ELOOP: a symlink somewhere on the path; ENXIO: a socket; EXDEV: a mount crossing.
    if (::fstatat(ws_root, rel.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) r.reason = kindOf(st.st_mode);
    else if (err == ELOOP) r.reason = "symlink in path";
    else r.reason = std::string("cannot open: ") + std::strerror(err);
    return;
  }
  if (::fstat(p.src.get(), &p.st) != 0) {
    r.reason = "fstat failed";
    return;
  }
  if (!S_ISREG(p.st.st_mode)) {
    r.reason = kindOf(p.st.st_mode);
    return;
  }
  if (p.st.st_nlink != 1) {
    r.reason = "hard link";
    return;
  }
  UniqueFd dir(::fcntl(host_root, F_DUPFD_CLOEXEC, 0));
  size_t start = 0;
  for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', start)) {
    const std::string comp = rel.substr(start, slash - start);
    UniqueFd next(openBeneath(dir.get(), comp.c_str(), O_PATH | O_DIRECTORY));
    if (!next.valid()) {
      if (errno == ENOENT) break;  // created in phase 2, with everything below it
      r.reason = "host directory " + comp + ": " + std::strerror(errno);
      return;
    }
    dir = std::move(next);
    start = slash + 1;
  }
  struct stat existing;
  if (::fstatat(dir.get(), lastComponent(rel).c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(existing.st_mode)) {
    r.reason = "a directory is in the way on the host";
    return;
  }
  r.status = OutputResult::Status::kCopied;  // so far: phase 2 may still refuse it
}

// Phase 2: the data goes into an unnamed O_TMPFILE inode, which gets a (temp) name only once
// it is whole and synced: corral killed mid-copy leaves nothing behind (the inode is freed).
// File systems without O_TMPFILE get a named temp file from the start.
void copyToTemp(int host_root, Pending& p) {
  OutputResult& r = p.result;
  auto refuse = [&r](std::string why) {
    r.status = OutputResult::Status::kRefused;
    r.reason = std::move(why);
  };
  auto parent = hostParent(host_root, r.path);
  if (!parent) return refuse(parent.error().message());
  p.parent = std::move(*parent);
  p.name = lastComponent(r.path);
  uint64_t rnd = 0;
  if (::getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) rnd = static_cast<uint64_t>(::getpid());
  char tmp[64];
  std::snprintf(tmp, sizeof(tmp), ".corral-out-%016llx", static_cast<unsigned long long>(rnd));
  UniqueFd out(::openat(p.parent.get(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, p.st.st_mode & 0755));
  const bool unnamed = out.valid();
  if (!unnamed)
    out = UniqueFd(::openat(p.parent.get(), tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, p.st.st_mode & 0755));
  if (!out.valid()) return refuse(std::string("create on host: ") + std::strerror(errno));
  if (!unnamed) p.tmp = tmp;
  auto copied = copyFileData(p.src.get(), out.get(), p.st, "copy " + r.path);
  bool ok = copied && ::fsync(out.get()) == 0;
  if (ok && unnamed) {
    const std::string self = "/proc/self/fd/" + std::to_string(out.get());
    ok = ::linkat(AT_FDCWD, self.c_str(), p.parent.get(), tmp, AT_SYMLINK_FOLLOW) == 0;
    if (ok) p.tmp = tmp;
  }
  if (!ok) refuse(copied ? std::string("write on host: ") + std::strerror(errno) : copied.error().message());
  else r.bytes = static_cast<uint64_t>(p.st.st_size);
}

void dropTemp(Pending& p) {
  if (!p.tmp.empty()) ::unlinkat(p.parent.get(), p.tmp.c_str(), 0);
  p.tmp.clear();
}

bool refused(const Pending& p) { return p.result.status == OutputResult::Status::kRefused; }

// What the outputs that were fine get when another was refused: nothing of a run that
// produced a hostile output (a symlink, a hard link, a FIFO) reaches the host.
void withholdAllBut(std::vector<Pending>& all) {
  std::string first;
  for (const Pending& p : all)
    if (refused(p)) {
      first = p.result.path;
      break;
    }
  for (Pending& p : all) {
    dropTemp(p);
    if (p.result.status != OutputResult::Status::kCopied) continue;
    p.result.status = OutputResult::Status::kWithheld;
    p.result.reason = "not copied: --output " + first + " was refused, and outputs are copied all or none";
    p.result.bytes = 0;
  }
}

}  // namespace

Result<UniqueFd> openHostDir(const std::string& path) {
  UniqueFd fd(openNoSymlinks(path.c_str(), O_RDONLY | O_DIRECTORY));
  if (fd.valid()) return fd;
  if (errno == ELOOP) return Error(ELOOP, "--workspace " + path + ": a symlink is on the path (it changed after it was resolved)");
  return sysError("--workspace " + path);
}

IgnoreSigxfsz::IgnoreSigxfsz() {
  struct sigaction ign{};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGXFSZ, &ign, &old_);
}

IgnoreSigxfsz::~IgnoreSigxfsz() { ::sigaction(SIGXFSZ, &old_, nullptr); }

std::vector<OutputResult> copyBack(int ws_root, int host_dir, const std::vector<std::string>& outputs) {
  IgnoreSigxfsz quiet;
  std::vector<Pending> all(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    all[i].result = {outputs[i], OutputResult::Status::kRefused, "", 0};
    check(ws_root, host_dir, all[i]);
  }
  const auto anyRefused = [&all] { return std::any_of(all.begin(), all.end(), refused); };
  if (!anyRefused())
    for (Pending& p : all)
      if (p.result.status == OutputResult::Status::kCopied) {
        copyToTemp(host_dir, p);
        if (refused(p)) break;
      }
  if (anyRefused()) {
    withholdAllBut(all);
  } else {
    // Phase 3: every output is whole and synced beside its target; each is renamed into place
    // (a crash leaves the old file or the new one, never half of one).
    for (Pending& p : all) {
      if (p.result.status != OutputResult::Status::kCopied) continue;
      if (::renameat(p.parent.get(), p.tmp.c_str(), p.parent.get(), p.name.c_str()) != 0) {
        p.result.status = OutputResult::Status::kRefused;
        p.result.reason = std::string("rename on host: ") + std::strerror(errno);
        dropTemp(p);
      }
      p.tmp.clear();
    }
  }
  std::vector<OutputResult> results;
  results.reserve(all.size());
  for (Pending& p : all) results.push_back(std::move(p.result));
  return results;
}

}  // namespace corral::sandbox::workspace
