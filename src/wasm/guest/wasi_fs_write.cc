// SPDX-License-Identifier: Apache-2.0
// WASI preview 1, the changing half: writes, sizes, times, directories, unlink and rename,
// each only beneath a read-write preopen (--dir HOST:GUEST). A read-only preopen answers ROFS
// (NOTCAPABLE for a file), as does every call on a file not opened for writing.
//
// Paths: the parent of the last component is opened with openBeneath (no "..", absolute path,
// symlink or mount crossing), and the call acts on the last component relative to that parent
// fd, so the kernel never resolves a guest-chosen path by its own rules. Links and symlinks
// are never made: a symlink corral will not follow is still one the operator's own programs
// would, and a hard link could pin a file the guest was meant only to see.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/open_beneath.h"
#include "base/unique_fd.h"
#include "wasm/guest/wasi_call.h"

namespace corral::wasm::guest {
uint16_t hostIovecs(uint32_t iovs, uint32_t count, std::vector<iovec>* out);
}  // namespace corral::wasm::guest

using namespace corral::wasm::guest;  // NOLINT(google-build-using-namespace): the C entry points below

namespace {

uint32_t refuseChange(const GuestFd& f) { return f.dir ? kRofs : kNotcapable; }

// The fd as a writable file, or the errno that says why not.
uint16_t writableFile(uint32_t fd, GuestFd** out) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  if (f->dir) return f->writable ? kIsdir : kRofs;
  if (!f->writable) return kNotcapable;
  *out = f;
  return kOk;
}

// A path beneath a writable directory fd, split into its parent (opened O_PATH beneath the
// directory) and a last component that is a plain name.
struct Target {
  corral::UniqueFd parent;
  std::string name;
};

uint16_t target(uint32_t dirfd, uint32_t path_ptr, uint32_t path_len, Target* out) {
  GuestFd* dir = guestFd(dirfd);
  if (!dir) return kBadf;
  if (!dir->dir) return dir->writable ? kNotdir : kNotcapable;
  if (!dir->writable) return kRofs;
  std::string path;
  if (!guestPath(path_ptr, path_len, &path)) return path_len > 4096 ? kNametoolong : kFault;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  const std::string parent = slash == std::string::npos ? "." : path.substr(0, slash);
  out->name = slash == std::string::npos ? path : path.substr(slash + 1);
  // "." or ".." as the last component would act on the directory itself or its parent.
  if (out->name.empty() || out->name == "." || out->name == "..") return path.empty() || path == "/" ? kInval : kNotcapable;
  if (parent.empty()) return kNotcapable;  // "/name": absolute
  out->parent = corral::UniqueFd(corral::openBeneath(dir->host, parent.c_str(), O_PATH | O_DIRECTORY));
  if (!out->parent.valid()) return wasiErrno(errno);
  return kOk;
}

uint16_t result(int rc) { return rc == 0 ? uint16_t{kOk} : wasiErrno(errno); }

// WASI fstflags: ATIM 1, ATIM_NOW 2, MTIM 4, MTIM_NOW 8.
uint16_t timespecs(uint64_t atim, uint64_t mtim, uint32_t flags, timespec out[2]) {
  if (((flags & 1) && (flags & 2)) || ((flags & 4) && (flags & 8)) || flags > 15) return kInval;
  auto one = [](uint64_t ns, bool set, bool now, timespec* t) {
    if (now) t->tv_nsec = UTIME_NOW;
    else if (!set) t->tv_nsec = UTIME_OMIT;
    else *t = timespec{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  };
  one(atim, flags & 1, flags & 2, &out[0]);
  one(mtim, flags & 4, flags & 8, &out[1]);
  return kOk;
}

}  // namespace

CORRAL_WASI(uint32_t, fd_pwrite)(WasiInstance*, uint32_t fd, uint32_t iovs, uint32_t count, uint64_t offset, uint32_t out) {
  GuestFd* f = nullptr;
  if (uint16_t e = writableFile(fd, &f); e != kOk) return e;
  std::vector<iovec> v;
  if (uint16_t e = hostIovecs(iovs, count, &v); e != kOk) return e;
  const ssize_t n = ::pwritev(f->host, v.data(), static_cast<int>(v.size()), static_cast<off_t>(offset));
  if (n < 0) return wasiErrno(errno);
  return storeGuest<uint32_t>(out, static_cast<uint32_t>(n)) ? kOk : kFault;
}

CORRAL_WASI(uint32_t, fd_allocate)(WasiInstance*, uint32_t fd, uint64_t offset, uint64_t len) {
  GuestFd* f = nullptr;
  if (uint16_t e = writableFile(fd, &f); e != kOk) return e;
  const int rc = ::posix_fallocate(f->host, static_cast<off_t>(offset), static_cast<off_t>(len));
  return rc == 0 ? uint16_t{kOk} : wasiErrno(rc);
}

CORRAL_WASI(uint32_t, fd_datasync)(WasiInstance*, uint32_t fd) {
  GuestFd* f = nullptr;
  if (uint16_t e = writableFile(fd, &f); e != kOk) return e;
  return result(::fdatasync(f->host));
}

CORRAL_WASI(uint32_t, fd_sync)(WasiInstance*, uint32_t fd) {
  GuestFd* f = nullptr;
  if (uint16_t e = writableFile(fd, &f); e != kOk) return e;
  return result(::fsync(f->host));
}

CORRAL_WASI(uint32_t, fd_filestat_set_size)(WasiInstance*, uint32_t fd, uint64_t size) {
  GuestFd* f = nullptr;
  if (uint16_t e = writableFile(fd, &f); e != kOk) return e;
  if (size > static_cast<uint64_t>(INT64_MAX)) return kInval;
  return result(::ftruncate(f->host, static_cast<off_t>(size)));
}

CORRAL_WASI(uint32_t, fd_filestat_set_times)(WasiInstance*, uint32_t fd, uint64_t atim, uint64_t mtim, uint32_t flags) {
  GuestFd* f = nullptr;
  if (uint16_t e = writableFile(fd, &f); e != kOk) return e;
  timespec ts[2];
  if (uint16_t e = timespecs(atim, mtim, flags, ts); e != kOk) return e;
  return result(::futimens(f->host, ts));
}

CORRAL_WASI(uint32_t, path_filestat_set_times)(WasiInstance*, uint32_t dirfd, uint32_t, uint32_t path_ptr,
                                               uint32_t path_len, uint64_t atim, uint64_t mtim, uint32_t flags) {
  Target t;
  if (uint16_t e = target(dirfd, path_ptr, path_len, &t); e != kOk) return e;
  timespec ts[2];
  if (uint16_t e = timespecs(atim, mtim, flags, ts); e != kOk) return e;
  // AT_SYMLINK_NOFOLLOW: a symlink's own times, never its target's.
  return result(::utimensat(t.parent.get(), t.name.c_str(), ts, AT_SYMLINK_NOFOLLOW));
}

CORRAL_WASI(uint32_t, path_create_directory)(WasiInstance*, uint32_t dirfd, uint32_t path_ptr, uint32_t path_len) {
  Target t;
  if (uint16_t e = target(dirfd, path_ptr, path_len, &t); e != kOk) return e;
  return result(::mkdirat(t.parent.get(), t.name.c_str(), 0755));
}

CORRAL_WASI(uint32_t, path_remove_directory)(WasiInstance*, uint32_t dirfd, uint32_t path_ptr, uint32_t path_len) {
  Target t;
  if (uint16_t e = target(dirfd, path_ptr, path_len, &t); e != kOk) return e;
  return result(::unlinkat(t.parent.get(), t.name.c_str(), AT_REMOVEDIR));
}

CORRAL_WASI(uint32_t, path_unlink_file)(WasiInstance*, uint32_t dirfd, uint32_t path_ptr, uint32_t path_len) {
  Target t;
  if (uint16_t e = target(dirfd, path_ptr, path_len, &t); e != kOk) return e;
  return result(::unlinkat(t.parent.get(), t.name.c_str(), 0));
}

CORRAL_WASI(uint32_t, path_rename)(WasiInstance*, uint32_t old_fd, uint32_t old_ptr, uint32_t old_len, uint32_t new_fd,
                                   uint32_t new_ptr, uint32_t new_len) {
  Target from, to;
  if (uint16_t e = target(old_fd, old_ptr, old_len, &from); e != kOk) return e;
  if (uint16_t e = target(new_fd, new_ptr, new_len, &to); e != kOk) return e;
  return result(::renameat(from.parent.get(), from.name.c_str(), to.parent.get(), to.name.c_str()));
}

CORRAL_WASI(uint32_t, path_link)(WasiInstance*, uint32_t fd, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  return f->writable ? uint32_t{kNotcapable} : refuseChange(*f);
}

CORRAL_WASI(uint32_t, path_symlink)(WasiInstance*, uint32_t, uint32_t, uint32_t fd, uint32_t, uint32_t) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  return f->writable ? uint32_t{kNotcapable} : refuseChange(*f);
}
