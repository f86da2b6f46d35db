// SPDX-License-Identifier: Apache-2.0
// Output copy-back (staging is workspace_stage.cc).
#include "sandbox/workspace.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/open_beneath.h"
#include "base/random_id.h"
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

// Why a host entry that is not a regular file stops an output: it is never followed (a symlink
// to another host file would be written through) and never replaced (the operator put it
// there; replacing it would destroy it), so it is refused and stays as it was.
std::string inTheWay(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory is in the way on the host";
  if (S_ISLNK(mode)) return "a symlink is in the way on the host (never followed, never replaced)";
  return std::string("a ") + kindOf(mode) + " is in the way on the host (never opened, never replaced)";
}

// A directory copy-back made on the host, removed again if the outputs are withheld.
struct MadeDir {
  UniqueFd parent;
  std::string name;
};

// Opens (creating as needed) the host directory that will hold rel's last component; the
// directories it makes are added to made.
Result<UniqueFd> hostParent(int host_root, const std::string& rel, std::vector<MadeDir>& made) {
  UniqueFd dir(::fcntl(host_root, F_DUPFD_CLOEXEC, 0));
  size_t start = 0;
  for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', start)) {
    std::string comp = rel.substr(start, slash - start);
    if (::mkdirat(dir.get(), comp.c_str(), 0755) == 0) made.push_back({UniqueFd(::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0)), comp});
    else if (errno != EEXIST) return sysError("mkdir " + comp);
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
  UniqueFd data;     // phase 2: the copy, an unnamed O_TMPFILE inode where the file system has them
  std::string tmp;   // its temp name in parent, once it has one
  bool placed = false;     // phase 3: in place
  bool had_old = false;    // phase 3: an old file was there, and now sits at tmp
  bool exchanged = false;  // phase 3: by RENAME_EXCHANGE (else renamed aside, then in)
  bool keep_tmp = false;   // the old file could not be put back: never delete it
};

std::string lastComponent(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

std::string tempName() { return ".corral-out-" + randomHex16(); }

// chattr +a or +i on the entry (FS_IOC_GETFLAGS); a file system without the flags has none.
bool lockedByAttributes(int dir, const char* name, int flags) {
  UniqueFd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC | flags));
  int attrs = 0;
  if (!fd.valid() || ::ioctl(fd.get(), FS_IOC_GETFLAGS, &attrs) != 0) return false;
  return (attrs & (FS_APPEND_FL | FS_IMMUTABLE_FL)) != 0;
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
      if (errno == ELOOP) {
        r.reason = "host directory " + comp + " is a symlink (never followed, never replaced)";
        return;
      }
      if (errno != ENOENT) {
        r.reason = "host directory " + comp + ": " + std::strerror(errno);
        return;
      }
      r.status = OutputResult::Status::kCopied;  // the rest is made in phase 2, nothing in the way
      return;
    }
    dir = std::move(next);
    start = slash + 1;
  }
  // An append-only or immutable directory or target would let phase 3 name a temp file it
  // could then neither rename nor remove: refused here, before anything is written.
  if (lockedByAttributes(dir.get(), ".", O_DIRECTORY)) {
    r.reason = "the host directory is append-only or immutable";
    return;
  }
  struct stat existing;
  const std::string name = lastComponent(rel);
  if (::fstatat(dir.get(), name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISREG(existing.st_mode)) {
      r.reason = inTheWay(existing.st_mode);
      return;
    }
    if (S_ISREG(existing.st_mode) && lockedByAttributes(dir.get(), name.c_str(), O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)) {
      r.reason = "the file on the host is append-only or immutable";
      return;
    }
  }
  r.status = OutputResult::Status::kCopied;  // so far: phases 2 and 3 may still refuse it
}

void refuse(OutputResult& r, std::string why) {
  r.status = OutputResult::Status::kRefused;
  r.reason = std::move(why);
  r.bytes = 0;
}

// Phase 2: the data goes into an unnamed O_TMPFILE inode beside the target, whole and synced,
// and stays unnamed until phase 3: corral killed now leaves no file behind (the inodes are
// freed; directories made for them may stay). File systems without O_TMPFILE get a named
// temp file from the start.
void copyToTemp(int host_root, Pending& p, std::vector<MadeDir>& made) {
  OutputResult& r = p.result;
  auto parent = hostParent(host_root, r.path, made);
  if (!parent) return refuse(r, parent.error().message());
  p.parent = std::move(*parent);
  p.name = lastComponent(r.path);
  p.data = UniqueFd(::openat(p.parent.get(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, p.st.st_mode & 0755));
  if (!p.data.valid()) {
    const std::string tmp = tempName();
    p.data = UniqueFd(::openat(p.parent.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                               p.st.st_mode & 0755));
    if (p.data.valid()) p.tmp = tmp;
  }
  if (!p.data.valid()) return refuse(r, std::string("create on host: ") + std::strerror(errno));
  auto copied = copyFileData(p.src.get(), p.data.get(), p.st, "copy " + r.path, CopyInto::kHost);
  if (!copied) return refuse(r, copied.error().message());
  if (::fsync(p.data.get()) != 0) return refuse(r, std::string("write on host: ") + std::strerror(errno));
  r.bytes = static_cast<uint64_t>(p.st.st_size);
}

void dropTemp(Pending& p) {
  p.data.reset();  // closed first: some file systems (FUSE) keep an unlinked open file as a hidden name
  if (!p.tmp.empty() && !p.keep_tmp) ::unlinkat(p.parent.get(), p.tmp.c_str(), 0);
  p.tmp.clear();
}

// Undoes a placed output: the old file put back, or the new name removed. If the old file
// cannot be put back it stays under its temp name rather than be deleted, and the result says so.
void unplace(Pending& p) {
  const int dir = p.parent.get();
  if (!p.placed) return;
  if (!p.had_old) {
    (void)::unlinkat(dir, p.name.c_str(), 0);
  } else {
    const bool back = p.exchanged ? ::renameat2(dir, p.tmp.c_str(), dir, p.name.c_str(), RENAME_EXCHANGE) == 0
                                  : ::renameat(dir, p.tmp.c_str(), dir, p.name.c_str()) == 0;
    if (!back) {
      p.keep_tmp = true;
      p.result.reason += " (the host's old file could not be put back: it is kept as " + p.tmp + ")";
    } else if (!p.exchanged) {
      p.tmp.clear();  // the old file is back at its name; the new one was replaced by it
    }
  }
  p.placed = p.had_old = p.exchanged = false;
}

// Phase 3, one output. With nothing at the target the new file is linked there: that never
// replaces anything and works on every file system (FUSE and NFS refuse renameat2's flags).
// Over an existing file it is swapped in with RENAME_EXCHANGE, the old file going to the temp
// name; where that flag is refused, the old file is first renamed aside, then the new one
// renamed in. Either way the old file can be put back until the end.
bool place(Pending& p) {
  const int dir = p.parent.get();
  auto fail = [&p](const char* what, int err) {
    refuse(p.result, std::string(what) + std::strerror(err));
    return false;
  };
  struct stat st {};
  const bool there = ::fstatat(dir, p.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (there && !S_ISREG(st.st_mode)) {  // put there since phase 1
    refuse(p.result, inTheWay(st.st_mode));
    return false;
  }
  if (!there && errno == ENOENT) {
    const std::string self = "/proc/self/fd/" + std::to_string(p.data.get());
    const int rc = p.tmp.empty() ? ::linkat(AT_FDCWD, self.c_str(), dir, p.name.c_str(), AT_SYMLINK_FOLLOW)
                                 : ::linkat(dir, p.tmp.c_str(), dir, p.name.c_str(), 0);
    if (rc == 0) {
      p.placed = true;
      dropTemp(p);  // a named temp (no O_TMPFILE here) has done its work
      return true;
    }
    if (errno != EEXIST) return fail("write on host: ", errno);
    // Something was put there meanwhile: replaced below, as any old file is.
  }
  if (p.tmp.empty()) {
    const std::string tmp = tempName();
    const std::string self = "/proc/self/fd/" + std::to_string(p.data.get());
    if (::linkat(AT_FDCWD, self.c_str(), dir, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0) return fail("write on host: ", errno);
    p.tmp = tmp;
  }
  if (::renameat2(dir, p.tmp.c_str(), dir, p.name.c_str(), RENAME_EXCHANGE) == 0) {
    p.placed = p.had_old = p.exchanged = true;
  } else if (errno == EINVAL) {
    const std::string aside = tempName();
    if (::renameat(dir, p.name.c_str(), dir, aside.c_str()) != 0) return fail("rename on host: ", errno);
    struct stat moved {};
    if (::fstatat(dir, aside.c_str(), &moved, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(moved.st_mode)) {
      (void)::renameat(dir, aside.c_str(), dir, p.name.c_str());  // only a regular file is ever moved aside
      refuse(p.result, inTheWay(moved.st_mode));
      return false;
    }
    if (::renameat(dir, p.tmp.c_str(), dir, p.name.c_str()) != 0) {
      const int err = errno;
      (void)::renameat(dir, aside.c_str(), dir, p.name.c_str());
      return fail("rename on host: ", err);
    }
    p.tmp = aside;  // now the old file
    p.placed = p.had_old = true;
  } else {
    return fail("rename on host: ", errno);
  }
  // Anything but a regular file put there in the instant since the check above (a directory,
  // a symlink) would now sit at the temp name: put it back and refuse.
  struct stat old {};
  if (::fstatat(dir, p.tmp.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(old.st_mode)) {
    unplace(p);
    refuse(p.result, inTheWay(old.st_mode));
    return false;
  }
  return true;
}

bool refused(const Pending& p) { return p.result.status == OutputResult::Status::kRefused; }

// What the outputs that were fine get when another was refused: nothing of a run that
// produced a hostile output (a symlink, a hard link, a FIFO) reaches the host.
void withholdAllBut(std::vector<Pending>& all, std::vector<MadeDir>& made) {
  std::string first;
  for (const Pending& p : all)
    if (refused(p)) {
      first = p.result.path;
      break;
    }
  // Undone last first: two outputs naming one host entry (a case-insensitive file system)
  // come back in the order they went.
  for (size_t i = all.size(); i-- > 0;) {
    Pending& p = all[i];
    const bool copying = p.result.status == OutputResult::Status::kCopied;
    if (copying) p.result.reason.clear();
    unplace(p);  // may note that an old file could not be put back
    dropTemp(p);
    if (!copying) continue;
    p.result.status = OutputResult::Status::kWithheld;
    p.result.reason = "not copied: --output " + first + " was refused, and outputs are copied all or none" + p.result.reason;
    p.result.bytes = 0;
  }
  // Directories copy-back made, deepest first; one that is not empty is left as it is.
  for (size_t i = made.size(); i-- > 0;) (void)::unlinkat(made[i].parent.get(), made[i].name.c_str(), AT_REMOVEDIR);
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
  std::vector<MadeDir> made;
  for (size_t i = 0; i < outputs.size(); ++i) {
    all[i].result = {outputs[i], OutputResult::Status::kRefused, "", 0};
    check(ws_root, host_dir, all[i]);
  }
  auto copying = [](const Pending& p) { return p.result.status == OutputResult::Status::kCopied; };
  bool ok = std::none_of(all.begin(), all.end(), refused);
  for (Pending& p : all)
    if (ok && copying(p)) {
      copyToTemp(host_dir, p, made);
      ok = !refused(p);
    }
  // Phase 3: every output is whole and synced beside its target; each is put in place, and a
  // failure puts back what the earlier ones replaced. A crash leaves each target either its
  // old file or its new one, never half of one.
  for (Pending& p : all)
    if (ok && copying(p)) ok = place(p);
  if (!ok) {
    withholdAllBut(all, made);
  } else {
    for (Pending& p : all) dropTemp(p);  // the old files exchanged out
  }
  std::vector<OutputResult> results;
  results.reserve(all.size());
  for (Pending& p : all) results.push_back(std::move(p.result));
  return results;
}

}  // namespace corral::sandbox::workspace
