// SPDX-License-Identifier: Apache-2.0
// WASI preview 1, the file half: preopens, path_open beneath a preopen (openat2 with
// RESOLVE_BENEATH and no symlinks at all), fd status, seek, stat and directory listing.
// What changes a file system is in wasi_fs_write.cc, and only a read-write preopen allows it.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/open_beneath.h"
#include "wasm/guest/wasi_call.h"

namespace corral::wasm::guest {

constexpr uint32_t kMaxPath = 4096;
uint16_t hostIovecs(uint32_t iovs, uint32_t count, std::vector<iovec>* out);

// The guest's path as a C string: NUL inside it is refused (the host would see a shorter path).
bool guestPath(uint32_t ptr, uint32_t len, std::string* out) {
  if (len > kMaxPath) return false;
  const uint8_t* p = guestBytes(ptr, len);
  if (!p) return false;
  out->assign(reinterpret_cast<const char*>(p), len);
  return out->find('\0') == std::string::npos;
}

}  // namespace corral::wasm::guest

using namespace corral::wasm::guest;  // NOLINT(google-build-using-namespace): the C entry points below

namespace {

constexpr uint32_t kMaxFds = 256;
// Rights a read-only preopen hands down: read, seek, tell, advise, open, readdir, readlink,
// stat. Asking for write (wasi-libc does for O_WRONLY/O_RDWR/O_CREAT) is NOTCAPABLE.
constexpr uint64_t kReadRights = (1u << 1) | (1u << 2) | (1u << 5) | (1u << 7) | (1u << 13) | (1u << 14) |
                                 (1u << 15) | (1u << 18) | (1u << 21) | (1u << 27);
constexpr uint64_t kStdioRights = (1u << 1) | (1u << 6) | (1u << 27) | (1u << 21);
// What a read-write preopen adds (wasi-libc masks the rights it asks path_open for with the
// directory's inheriting rights, so they must be reported): datasync, sync, write, allocate,
// create directory and file, rename source and target, path set size and times, fd set size
// and times, remove directory, unlink file. Never link or symlink (wasi_fs_write.cc says why).
constexpr uint64_t kWriteRights = (1u << 0) | (1u << 4) | (1u << 6) | (1u << 8) | (1u << 9) | (1u << 10) |
                                  (1u << 16) | (1u << 17) | (1u << 19) | (1u << 20) | (1u << 22) | (1u << 23) |
                                  (1u << 25) | (1u << 26);

uint8_t fileType(mode_t m) {
  if (S_ISBLK(m)) return 1;
  if (S_ISCHR(m)) return 2;
  if (S_ISDIR(m)) return 3;
  if (S_ISREG(m)) return 4;
  if (S_ISSOCK(m)) return 6;
  if (S_ISLNK(m)) return 7;
  return 0;
}

uint64_t nanos(const timespec& ts) { return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec); }

uint16_t storeFilestat(uint32_t out, const struct stat& st) {
  uint8_t b[64] = {};
  const uint64_t dev = st.st_dev, ino = st.st_ino, nlink = st.st_nlink, size = static_cast<uint64_t>(st.st_size);
  const uint64_t at = nanos(st.st_atim), mt = nanos(st.st_mtim), ct = nanos(st.st_ctim);
  std::memcpy(b, &dev, 8);
  std::memcpy(b + 8, &ino, 8);
  b[16] = fileType(st.st_mode);
  std::memcpy(b + 24, &nlink, 8);
  std::memcpy(b + 32, &size, 8);
  std::memcpy(b + 40, &at, 8);
  std::memcpy(b + 48, &mt, 8);
  std::memcpy(b + 56, &ct, 8);
  uint8_t* p = guestBytes(out, sizeof(b));
  if (!p) return kFault;
  std::memcpy(p, b, sizeof(b));
  return kOk;
}

uint16_t dirFd(uint32_t fd, GuestFd** out) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  if (!f->dir) return kNotdir;
  *out = f;
  return kOk;
}

// Paths resolve with openBeneath: no "..", absolute path, symlink or mount crossing can leave
// the directory. The empty path is the directory itself.
int openUnder(int dir, const std::string& path, uint64_t flags) {
  return corral::openBeneath(dir, path.empty() ? "." : path.c_str(), flags);
}

uint32_t allocFd(int host, bool dir, bool writable) {
  auto& fds = wasi().fds;
  for (uint32_t i = 0; i < fds.size(); ++i)
    if (fds[i].host < 0) {
      fds[i] = GuestFd{host, false, dir, {}, writable};
      return i;
    }
  if (fds.size() >= kMaxFds) return UINT32_MAX;
  fds.push_back(GuestFd{host, false, dir, {}, writable});
  return static_cast<uint32_t>(fds.size() - 1);
}

}  // namespace

CORRAL_WASI(uint32_t, fd_prestat_get)(WasiInstance*, uint32_t fd, uint32_t out) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  if (!f->preopen) return kBadf;
  return storeGuest<uint32_t>(out, 0) && storeGuest<uint32_t>(out + 4, static_cast<uint32_t>(f->preopen_name.size())) ? kOk : kFault;
}

CORRAL_WASI(uint32_t, fd_prestat_dir_name)(WasiInstance*, uint32_t fd, uint32_t buf, uint32_t len) {
  GuestFd* f = guestFd(fd);
  if (!f || !f->preopen) return kBadf;
  if (len < f->preopen_name.size()) return kInval;
  uint8_t* p = guestBytes(buf, f->preopen_name.size());
  if (!p) return kFault;
  // WASI preopen names are not NUL-terminated: the guest got the length from fd_prestat_get.
  std::memcpy(p, f->preopen_name.data(), f->preopen_name.size());  // NOLINT(bugprone-not-null-terminated-result)
  return kOk;
}

CORRAL_WASI(uint32_t, fd_fdstat_get)(WasiInstance*, uint32_t fd, uint32_t out) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  struct stat st {};
  if (::fstat(f->host, &st) != 0) return wasiErrno(errno);
  const int fl = ::fcntl(f->host, F_GETFL);
  uint8_t b[24] = {};
  b[0] = fileType(st.st_mode);
  const uint16_t flags = (fl >= 0 && (fl & O_APPEND)) ? 1 : 0;
  const uint64_t granted = f->writable ? kReadRights | kWriteRights : kReadRights;
  const uint64_t base = fd <= 2 ? kStdioRights : granted;
  const uint64_t inheriting = f->dir ? granted : 0;
  std::memcpy(b + 2, &flags, 2);
  std::memcpy(b + 8, &base, 8);
  std::memcpy(b + 16, &inheriting, 8);
  uint8_t* p = guestBytes(out, sizeof(b));
  if (!p) return kFault;
  std::memcpy(p, b, sizeof(b));
  return kOk;
}

CORRAL_WASI(uint32_t, fd_close)(WasiInstance*, uint32_t fd) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  if (f->preopen) return kNotsup;  // a preopen is the guest's only handle on its grant
  if (fd > 2) ::close(f->host);
  f->host = -1;
  return kOk;
}

CORRAL_WASI(uint32_t, path_open)(WasiInstance*, uint32_t dirfd, uint32_t, uint32_t path_ptr, uint32_t path_len,
                                 uint32_t oflags, uint64_t rights, uint64_t, uint32_t fdflags, uint32_t out) {
  GuestFd* dir = nullptr;
  if (uint16_t e = dirFd(dirfd, &dir); e != kOk) return e;
  std::string path;
  if (!guestPath(path_ptr, path_len, &path)) return path_len > kMaxPath ? kNametoolong : kFault;
  // oflags: CREAT 1, DIRECTORY 2, EXCL 4, TRUNC 8; fdflags: APPEND 1. Rights: FD_READ 1<<1,
  // and the changing rights above. Writing needs a read-write preopen.
  // The access mode follows the file rights wasi-libc asks for O_WRONLY (datasync, write,
  // allocate, set size); a read-only preopen refuses every changing right, as it hands none.
  constexpr uint64_t kFileWriteRights = (1u << 0) | (1u << 6) | (1u << 8) | (1u << 22);
  const bool want_write = (oflags & (1 | 4 | 8)) || (rights & kFileWriteRights) || (fdflags & 1);
  if (!dir->writable && (want_write || (rights & kWriteRights))) return kNotcapable;
  uint64_t flags = O_NOCTTY | O_NONBLOCK;
  if (oflags & 2) {
    if (oflags & (1 | 4 | 8)) return kInval;
    flags |= O_RDONLY | O_DIRECTORY;
  } else if (want_write) {
    flags |= (rights & (1u << 1)) ? O_RDWR : O_WRONLY;
    if (oflags & 1) flags |= O_CREAT;
    if (oflags & 4) flags |= O_EXCL;
    if (oflags & 8) flags |= O_TRUNC;
    if (fdflags & 1) flags |= O_APPEND;
  } else {
    flags |= O_RDONLY;
  }
  // openat2 refuses a mode without O_CREAT.
  const int host = corral::openBeneath(dir->host, path.empty() ? "." : path.c_str(), flags, (flags & O_CREAT) ? 0644 : 0);
  if (host < 0) return wasiErrno(errno);
  struct stat st {};
  if (::fstat(host, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
    ::close(host);
    return kAcces;  // no devices, FIFOs or sockets through a preopen
  }
  // Blocking reads from here on: O_NONBLOCK was only so that opening could not hang.
  ::fcntl(host, F_SETFL, static_cast<int>(flags & O_APPEND));
  // A directory beneath a read-write preopen is itself a base for changes; a file is writable
  // only when opened for writing.
  const uint32_t fd = allocFd(host, S_ISDIR(st.st_mode), S_ISDIR(st.st_mode) ? dir->writable : want_write);
  if (fd == UINT32_MAX) {
    ::close(host);
    return kMfile;
  }
  if (!storeGuest<uint32_t>(out, fd)) return kFault;
  return kOk;
}

CORRAL_WASI(uint32_t, path_filestat_get)(WasiInstance*, uint32_t dirfd, uint32_t, uint32_t path_ptr, uint32_t path_len,
                                         uint32_t out) {
  GuestFd* dir = nullptr;
  if (uint16_t e = dirFd(dirfd, &dir); e != kOk) return e;
  std::string path;
  if (!guestPath(path_ptr, path_len, &path)) return kFault;
  const int host = openUnder(dir->host, path, O_PATH);
  if (host < 0) return wasiErrno(errno);
  struct stat st {};
  const int rc = ::fstat(host, &st);
  const int err = errno;
  ::close(host);
  if (rc != 0) return wasiErrno(err);
  return storeFilestat(out, st);
}

CORRAL_WASI(uint32_t, fd_filestat_get)(WasiInstance*, uint32_t fd, uint32_t out) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  struct stat st {};
  if (::fstat(f->host, &st) != 0) return wasiErrno(errno);
  return storeFilestat(out, st);
}

CORRAL_WASI(uint32_t, fd_seek)(WasiInstance*, uint32_t fd, uint64_t offset, uint32_t whence, uint32_t out) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  if (f->dir) return kIsdir;
  if (whence > 2) return kInval;
  const int how = whence == 0 ? SEEK_SET : whence == 1 ? SEEK_CUR : SEEK_END;
  const off_t pos = ::lseek(f->host, static_cast<off_t>(offset), how);
  if (pos < 0) return wasiErrno(errno);
  return storeGuest<uint64_t>(out, static_cast<uint64_t>(pos)) ? kOk : kFault;
}

CORRAL_WASI(uint32_t, fd_tell)(WasiInstance*, uint32_t fd, uint32_t out) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  const off_t pos = ::lseek(f->host, 0, SEEK_CUR);
  if (pos < 0) return wasiErrno(errno);
  return storeGuest<uint64_t>(out, static_cast<uint64_t>(pos)) ? kOk : kFault;
}

CORRAL_WASI(uint32_t, fd_pread)(WasiInstance*, uint32_t fd, uint32_t iovs, uint32_t count, uint64_t offset, uint32_t out) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  if (f->dir) return kIsdir;
  std::vector<iovec> v;
  if (uint16_t e = hostIovecs(iovs, count, &v); e != kOk) return e;
  const ssize_t n = ::preadv(f->host, v.data(), static_cast<int>(v.size()), static_cast<off_t>(offset));
  if (n < 0) return wasiErrno(errno);
  return storeGuest<uint32_t>(out, static_cast<uint32_t>(n)) ? kOk : kFault;
}

// Entries as WASI dirents (d_next u64, d_ino u64, d_namlen u32, d_type u8, then the name);
// the cookie is the index of the next entry, and the last one may be cut short (the spec's
// way of saying "call again with a bigger buffer").
CORRAL_WASI(uint32_t, fd_readdir)(WasiInstance*, uint32_t fd, uint32_t buf, uint32_t len, uint64_t cookie, uint32_t out) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  if (!f->dir) return kNotdir;
  uint8_t* dst = guestBytes(buf, len);
  if (!dst) return kFault;
  if (::lseek(f->host, 0, SEEK_SET) < 0) return wasiErrno(errno);
  alignas(8) char raw[16384];
  uint64_t index = 0;
  uint32_t used = 0;
  for (;;) {
    const long n = ::syscall(SYS_getdents64, f->host, raw, sizeof(raw));
    if (n < 0) return wasiErrno(errno);
    if (n == 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<struct dirent64*>(raw + off);
      off += d->d_reclen;
      if (index++ < cookie) continue;
      const uint32_t namlen = static_cast<uint32_t>(std::strlen(d->d_name));
      uint8_t ent[24] = {};
      const uint64_t next = index, ino = d->d_ino;
      std::memcpy(ent, &next, 8);
      std::memcpy(ent + 8, &ino, 8);
      std::memcpy(ent + 16, &namlen, 4);
      ent[20] = d->d_type == DT_DIR ? 3 : d->d_type == DT_REG ? 4 : d->d_type == DT_LNK ? 7 : d->d_type == DT_CHR ? 2 : 0;
      for (uint32_t i = 0; i < 24 && used < len; ++i) dst[used++] = ent[i];
      for (uint32_t i = 0; i < namlen && used < len; ++i) dst[used++] = static_cast<uint8_t>(d->d_name[i]);
      if (used == len) return storeGuest<uint32_t>(out, used) ? kOk : kFault;
    }
  }
  return storeGuest<uint32_t>(out, used) ? kOk : kFault;
}

CORRAL_WASI(uint32_t, fd_advise)(WasiInstance*, uint32_t fd, uint64_t, uint64_t, uint32_t) { return guestFd(fd) ? kOk : kBadf; }
CORRAL_WASI(uint32_t, fd_fdstat_set_flags)(WasiInstance*, uint32_t fd, uint32_t) { return guestFd(fd) ? kNotsup : kBadf; }
CORRAL_WASI(uint32_t, fd_fdstat_set_rights)(WasiInstance*, uint32_t fd, uint64_t, uint64_t) { return guestFd(fd) ? kNotsup : kBadf; }
CORRAL_WASI(uint32_t, fd_renumber)(WasiInstance*, uint32_t fd, uint32_t) { return guestFd(fd) ? kNotsup : kBadf; }
CORRAL_WASI(uint32_t, path_readlink)(WasiInstance*, uint32_t fd, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) {
  return guestFd(fd) ? kNotsup : kBadf;  // symlinks are never followed, so never read either
}
