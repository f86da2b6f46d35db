// SPDX-License-Identifier: Apache-2.0
// The scrollback ring of a detached terminal and its file (terminal_ring.h has the layout).
#include "daemon/terminal_ring.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace corral::daemon {
namespace {

constexpr char kMagic[8] = {'C', 'R', 'L', 'R', 'I', 'N', 'G', '\x01'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kCap = Scrollback::kBytes;
constexpr off_t kTotalAt = 16, kIntentAt = 24;
constexpr uint64_t kMaxTotal = uint64_t{1} << 62;  // beyond any terminal's life: a larger one is corrupt

void put32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i) & 0xff);
}
void put64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i) & 0xff);
}
uint64_t get(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(p[i]);
  return v;
}

Result<void> pwriteAll(int fd, const char* p, size_t n, off_t at) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, at);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return sysError("write terminal.ring");
    if (w == 0) return Error(Errc::kIo, "write terminal.ring: no progress");
    p += w;
    n -= static_cast<size_t>(w);
    at += w;
  }
  return {};
}

Result<void> putField(int fd, off_t at, uint64_t v) {
  char b[8];
  put64(b, v);
  return pwriteAll(fd, b, sizeof b, at);
}

}  // namespace

void Scrollback::append(std::string_view b) {
  total_ += b.size();
  if (b.size() >= kBytes) {
    dropped_ += buf_.size() + (b.size() - kBytes);
    buf_.assign(b.substr(b.size() - kBytes));
    start_ = 0;
    return;
  }
  if (buf_.size() < kBytes) {
    const size_t n = std::min(kBytes - buf_.size(), b.size());
    buf_.append(b.substr(0, n));
    b.remove_prefix(n);
  }
  // Full: each new byte overwrites the oldest.
  dropped_ += b.size();
  while (!b.empty()) {
    const size_t n = std::min(kBytes - start_, b.size());
    buf_.replace(start_, n, b.substr(0, n));
    start_ = (start_ + n) % kBytes;
    b.remove_prefix(n);
  }
}

std::pair<std::string_view, std::string_view> Scrollback::tailPieces(size_t n) const {
  n = std::min(n, buf_.size());
  const std::string_view older(buf_.data() + start_, buf_.size() - start_), newer(buf_.data(), start_);
  // Oldest first is older + newer; its last n bytes:
  if (n <= newer.size()) return {newer.substr(newer.size() - n), std::string_view()};
  return {older.substr(older.size() - (n - newer.size())), newer};
}

std::string Scrollback::tail(size_t n) const {
  const auto [first, second] = tailPieces(n);
  std::string out(first);
  out += second;
  return out;
}

std::string Scrollback::take() {
  std::string out = tail(buf_.size());
  buf_.clear();
  buf_.shrink_to_fit();
  start_ = 0;
  return out;
}

Result<std::optional<RingFile::Saved>> RingFile::load(const std::string& dir) {
  const std::string path = dir + "/" + kName;
  // O_NONBLOCK: a FIFO put there does not hang the daemon's open; O_NOFOLLOW: nor does a link
  // lead it to another file.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::optional<Saved>{};
    if (errno == ELOOP) return Error(Errc::kIo, "it is a symbolic link");
    return sysError("open");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sysError("fstat");
  if (!S_ISREG(st.st_mode)) return Error(Errc::kIo, "not a regular file");
  if (st.st_uid != ::geteuid()) return Error(Errc::kIo, "owned by uid " + std::to_string(st.st_uid));
  if ((st.st_mode & 07777) != 0600) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Error(Errc::kIo, std::string("mode ") + mode + ", not 0600");
  }
  if (st.st_nlink != 1) return Error(Errc::kIo, std::to_string(st.st_nlink) + " links");
  if (st.st_size != static_cast<off_t>(kFileBytes))
    return Error(Errc::kIo, std::to_string(st.st_size) + " bytes, not " + std::to_string(kFileBytes));
  std::string raw(kFileBytes, '\0');
  for (size_t got = 0; got < raw.size();) {
    const ssize_t n = ::pread(fd.get(), raw.data() + got, raw.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sysError("read");
    if (n == 0) return Error(Errc::kIo, "cut short while read");
    got += static_cast<size_t>(n);
  }
  const char* h = raw.data();
  const uint64_t total = get(h + kTotalAt, 8), intent = get(h + kIntentAt, 8);
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0 || get(h + 8, 4) != kVersion || get(h + 12, 4) != kCap ||
      std::any_of(h + 32, h + kHeaderBytes, [](char c) { return c != 0; }))
    return Error(Errc::kIo, "not a terminal ring of this version");
  if (intent < total || intent > kMaxTotal) return Error(Errc::kIo, "its header is inconsistent");
  // Bytes [lo, total) of the stream are whole: the ring's last 64 KiB, less what a mirror cut
  // short by the daemon's death may have overwritten (those written toward intent).
  const uint64_t lo = std::max(total > kCap ? total - kCap : 0, intent > kCap ? intent - kCap : 0);
  Saved s;
  s.dropped = std::min(lo, total);
  for (uint64_t l = s.dropped; l < total;) {
    const size_t at = static_cast<size_t>(l % kCap);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(total - l, kCap - at));
    s.bytes.append(raw, kHeaderBytes + at, n);
    l += n;
  }
  return std::optional<Saved>(std::move(s));
}

Result<RingFile> RingFile::create(const std::string& dir) {
  RingFile r;
  const std::string path = dir + "/" + kName;
  for (int attempt = 0;; ++attempt) {
    // O_EXCL never follows a link: one left in the way is removed, not written through.
    r.fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (r.fd_.valid()) break;
    if (errno != EEXIST || attempt > 0) return sysError(std::string("create ") + kName);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return sysError(std::string("replace ") + kName);
  }
  r.path_ = path;  // from here on, a failure removes it again (the destructor)
  if (::fchmod(r.fd_.get(), 0600) != 0) return sysError(std::string("chmod ") + kName);
  // The space is taken now, so a later write cannot fail for the lack of it.
  if (const int e = ::posix_fallocate(r.fd_.get(), 0, static_cast<off_t>(kFileBytes)); e != 0)
    return sysError(std::string("allocate ") + kName, e);
  char h[kHeaderBytes] = {};
  std::memcpy(h, kMagic, sizeof kMagic);
  put32(h + 8, kVersion);
  put32(h + 12, static_cast<uint32_t>(Scrollback::kBytes));
  RETURN_IF_ERROR(pwriteAll(r.fd_.get(), h, sizeof h, 0));
  return r;
}

RingFile::RingFile(RingFile&& o) noexcept
    : fd_(std::move(o.fd_)), path_(std::exchange(o.path_, {})), synced_(std::exchange(o.synced_, 0)) {}

RingFile& RingFile::operator=(RingFile&& o) noexcept {
  if (this != &o) {
    remove();
    fd_ = std::move(o.fd_);
    path_ = std::exchange(o.path_, {});
    synced_ = std::exchange(o.synced_, 0);
  }
  return *this;
}

void RingFile::remove() {
  if (!path_.empty()) (void)::unlink(path_.c_str());
  path_.clear();
  fd_.reset();
  synced_ = 0;
}

Result<void> RingFile::mirror(const Scrollback& s) {
  if (!fd_.valid() || s.total() == synced_) return {};
  auto wrote = [&]() -> Result<void> {
    if (s.total() < synced_) return Error(Errc::kIo, "terminal.ring: the scrollback went back");
    const uint64_t to = s.total();
    const size_t n = static_cast<size_t>(std::min<uint64_t>(to - synced_, s.size()));
    const auto [first, second] = s.tailPieces(n);
    RETURN_IF_ERROR(putField(fd_.get(), kIntentAt, to));
    // Byte `off` of those n is stream byte to - n + off, at data offset (to - n + off) % kBytes.
    size_t off = 0;
    for (const std::string_view piece : {first, second}) {
      for (size_t p = 0; p < piece.size();) {
        const size_t at = static_cast<size_t>((to - n + off) % Scrollback::kBytes);
        const size_t len = std::min(piece.size() - p, Scrollback::kBytes - at);
        RETURN_IF_ERROR(pwriteAll(fd_.get(), piece.data() + p, len, static_cast<off_t>(kHeaderBytes + at)));
        p += len;
        off += len;
      }
    }
    RETURN_IF_ERROR(putField(fd_.get(), kTotalAt, to));
    synced_ = to;
    return {};
  }();
  if (!wrote) remove();
  return wrote;
}

}  // namespace corral::daemon
