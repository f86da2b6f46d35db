// SPDX-License-Identifier: Apache-2.0
// WASI preview 1, the process half: arguments, environment, clocks, random, poll_oneoff on
// clocks, proc_exit, stdio and file reads and writes; sockets and signals refused.
#include <errno.h>
#include <sched.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "wasm/guest/runtime.h"
#include "wasm/guest/wasi_call.h"
#include "wasm/trap_status.h"

namespace corral::wasm::guest {

WasiContext& wasi() {
  static WasiContext ctx;
  return ctx;
}

GuestFd* guestFd(uint32_t fd) {
  auto& fds = wasi().fds;
  if (fd >= fds.size() || fds[fd].host < 0) return nullptr;
  return &fds[fd];
}

uint16_t wasiErrno(int e) {
  switch (e) {
    case 0: return kOk;
    case EACCES: return kAcces;
    case EBADF: return kBadf;
    case EEXIST: return kExist;
    case EFAULT: return kFault;
    case EINVAL: return kInval;
    case EISDIR: return kIsdir;
    case ELOOP: return kLoop;
    case EMFILE: case ENFILE: return kMfile;
    case ENAMETOOLONG: return kNametoolong;
    case ENOENT: return kNoent;
    case ENOMEM: return kNomem;
    case ENOSYS: return kNosys;
    case ENOTDIR: return kNotdir;
    case ENOTEMPTY: return kNotempty;
    case EOPNOTSUPP: return kNotsup;
    case EPERM: return kPerm;
    case EROFS: return kRofs;
    case ESPIPE: return kSpipe;
    case EXDEV: return kNotcapable;  // RESOLVE_BENEATH / NO_XDEV: a way out of the preopen
    case EAGAIN: return 6;
    case EPIPE: return 64;
    default: return kIo;
  }
}

namespace {

// argv/environ layout: an array of u32 pointers, then the NUL-terminated strings.
uint32_t sizes(const std::vector<std::string>& list, uint32_t count_ptr, uint32_t size_ptr) {
  uint64_t total = 0;
  for (const std::string& s : list) total += s.size() + 1;
  if (total > UINT32_MAX) return k2Big;
  if (!storeGuest<uint32_t>(count_ptr, static_cast<uint32_t>(list.size())) ||
      !storeGuest<uint32_t>(size_ptr, static_cast<uint32_t>(total)))
    return kFault;
  return kOk;
}

uint32_t strings(const std::vector<std::string>& list, uint32_t ptrs, uint32_t buf) {
  uint64_t off = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string& s = list[i];
    uint8_t* dst = guestBytes(static_cast<uint32_t>(buf + off), s.size() + 1);
    if (buf + off > UINT32_MAX || !dst) return kFault;
    std::memcpy(dst, s.c_str(), s.size() + 1);
    if (!storeGuest<uint32_t>(static_cast<uint32_t>(ptrs + 4 * i), static_cast<uint32_t>(buf + off))) return kFault;
    off += s.size() + 1;
  }
  return kOk;
}

bool hostClock(uint32_t id, clockid_t* out) {
  switch (id) {
    case 0: *out = CLOCK_REALTIME; return true;
    case 1: *out = CLOCK_MONOTONIC; return true;
    case 2: *out = CLOCK_PROCESS_CPUTIME_ID; return true;
    case 3: *out = CLOCK_THREAD_CPUTIME_ID; return true;
    default: return false;
  }
}

uint64_t nanos(const timespec& ts) { return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec); }

constexpr uint32_t kMaxIovs = 1024;

}  // namespace

// Guest iovecs (u32 buf, u32 len pairs) as host iovecs into linear memory, checked.
uint16_t hostIovecs(uint32_t iovs, uint32_t count, std::vector<iovec>* out) {
  if (count > kMaxIovs) return kInval;
  out->clear();
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t buf = 0, len = 0;
    if (!loadGuest(iovs + 8 * i, &buf) || !loadGuest(iovs + 8 * i + 4, &len)) return kFault;
    uint8_t* p = guestBytes(buf, len);
    if (!p) return kFault;
    out->push_back(iovec{p, len});
  }
  return kOk;
}

}  // namespace corral::wasm::guest

using namespace corral::wasm::guest;  // NOLINT(google-build-using-namespace): the C entry points below

CORRAL_WASI(uint32_t, args_sizes_get)(WasiInstance*, uint32_t count, uint32_t size) { return sizes(wasi().args, count, size); }
CORRAL_WASI(uint32_t, args_get)(WasiInstance*, uint32_t ptrs, uint32_t buf) { return strings(wasi().args, ptrs, buf); }
CORRAL_WASI(uint32_t, environ_sizes_get)(WasiInstance*, uint32_t count, uint32_t size) { return sizes(wasi().env, count, size); }
CORRAL_WASI(uint32_t, environ_get)(WasiInstance*, uint32_t ptrs, uint32_t buf) { return strings(wasi().env, ptrs, buf); }

CORRAL_WASI(uint32_t, clock_res_get)(WasiInstance*, uint32_t id, uint32_t out) {
  clockid_t c;
  if (!hostClock(id, &c)) return kInval;
  timespec ts{};
  if (::clock_getres(c, &ts) != 0) return wasiErrno(errno);
  return storeGuest<uint64_t>(out, nanos(ts)) ? kOk : kFault;
}

CORRAL_WASI(uint32_t, clock_time_get)(WasiInstance*, uint32_t id, uint64_t, uint32_t out) {
  clockid_t c;
  if (!hostClock(id, &c)) return kInval;
  timespec ts{};
  if (::clock_gettime(c, &ts) != 0) return wasiErrno(errno);
  return storeGuest<uint64_t>(out, nanos(ts)) ? kOk : kFault;
}

CORRAL_WASI(uint32_t, random_get)(WasiInstance*, uint32_t buf, uint32_t len) {
  uint8_t* p = guestBytes(buf, len);
  if (!p) return kFault;
  for (uint32_t done = 0; done < len;) {
    ssize_t n = ::getrandom(p + done, len - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return kIo;
    done += static_cast<uint32_t>(n);
  }
  return kOk;
}

CORRAL_WASI(void, proc_exit)(WasiInstance*, uint32_t code) {
  // Statuses from 126 up belong to corral (the runtime's traps, the shell's 126/127, signals):
  // a guest asking for one is reported, not obeyed, so it cannot pass for a trap or a kill.
  if (code > static_cast<uint32_t>(corral::wasm::kGuestMaxExitStatus)) {
    static const char msg[] = "corral: wasm guest: trap: invalid-exit-status (proc_exit above 125)\n";
    if (::write(2, msg, sizeof(msg) - 1) < 0) {}
    ::_exit(corral::wasm::kTrapStatusBase + corral::wasm::kTrapBadExitStatus);
  }
  ::_exit(static_cast<int>(code));
}

CORRAL_WASI(uint32_t, proc_raise)(WasiInstance*, uint32_t) { return kNosys; }
CORRAL_WASI(uint32_t, sched_yield)(WasiInstance*) {
  ::sched_yield();
  return kOk;
}

namespace {
// fd_read and fd_write: the guest's iovecs checked against its memory, then one readv/writev.
uint32_t transfer(uint32_t fd, uint32_t iovs, uint32_t count, uint32_t done_ptr, bool write) {
  GuestFd* f = guestFd(fd);
  if (!f) return kBadf;
  if (f->dir) return kIsdir;
  std::vector<iovec> v;
  if (uint16_t e = hostIovecs(iovs, count, &v); e != kOk) return e;
  const int n_iov = static_cast<int>(v.size());
  const ssize_t n = write ? ::writev(f->host, v.data(), n_iov) : ::readv(f->host, v.data(), n_iov);
  if (n < 0) return wasiErrno(errno);
  return storeGuest<uint32_t>(done_ptr, static_cast<uint32_t>(n)) ? kOk : kFault;
}
}  // namespace

CORRAL_WASI(uint32_t, fd_write)(WasiInstance*, uint32_t fd, uint32_t iovs, uint32_t count, uint32_t nwritten) {
  return transfer(fd, iovs, count, nwritten, true);
}
CORRAL_WASI(uint32_t, fd_read)(WasiInstance*, uint32_t fd, uint32_t iovs, uint32_t count, uint32_t nread) {
  return transfer(fd, iovs, count, nread, false);
}

// Clocks only: the earliest deadline is slept to and every clock subscription due by then is
// reported. An fd subscription gets an event with NOTSUP at once (nothing to wait on here).
CORRAL_WASI(uint32_t, poll_oneoff)(WasiInstance*, uint32_t in, uint32_t out, uint32_t nsubs, uint32_t nevents) {
  if (nsubs == 0 || nsubs > 4096) return kInval;
  if (!guestBytes(in, 48ull * nsubs) || !guestBytes(out, 32ull * nsubs)) return kFault;
  struct Sub { uint64_t userdata; uint8_t tag; uint64_t deadline; };
  std::vector<Sub> subs;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  uint64_t earliest = UINT64_MAX;
  for (uint32_t i = 0; i < nsubs; ++i) {
    const uint32_t s = in + 48 * i;
    Sub sub{};
    uint32_t clock_id = 0;
    uint64_t timeout = 0;
    uint16_t flags = 0;
    (void)loadGuest(s, &sub.userdata);
    (void)loadGuest(s + 8, &sub.tag);
    (void)loadGuest(s + 16, &clock_id);
    (void)loadGuest(s + 24, &timeout);
    (void)loadGuest(s + 40, &flags);
    if (sub.tag == 0) {
      clockid_t c;
      if (!hostClock(clock_id, &c)) return kInval;
      uint64_t rel = timeout;
      if (flags & 1) {  // absolute: against its own clock, turned into a monotonic deadline
        timespec t{};
        ::clock_gettime(c, &t);
        rel = timeout > nanos(t) ? timeout - nanos(t) : 0;
      }
      sub.deadline = nanos(now) + rel < nanos(now) ? UINT64_MAX : nanos(now) + rel;
      if (sub.deadline < earliest) earliest = sub.deadline;
    }
    subs.push_back(sub);
  }
  bool any_fd = false;
  for (const Sub& s : subs) any_fd = any_fd || s.tag != 0;
  if (!any_fd && earliest != UINT64_MAX) {
    timespec until{static_cast<time_t>(earliest / 1000000000ull), static_cast<long>(earliest % 1000000000ull)};
    while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {}
    ::clock_gettime(CLOCK_MONOTONIC, &now);
  }
  uint32_t n = 0;
  for (const Sub& s : subs) {
    const bool due = s.tag != 0 || s.deadline <= nanos(now);
    if (!due) continue;
    uint8_t event[32] = {};
    std::memcpy(event, &s.userdata, 8);
    const uint16_t err = s.tag == 0 ? kOk : kNotsup;
    std::memcpy(event + 8, &err, 2);
    event[10] = s.tag;
    std::memcpy(guestBytes(out + 32 * n, 32), event, 32);
    ++n;
  }
  return storeGuest<uint32_t>(nevents, n) ? kOk : kFault;
}

// No sockets: a guest reaches the network only through corral_http (docs/wasm-abi.md).
CORRAL_WASI(uint32_t, sock_accept)(WasiInstance*, uint32_t, uint32_t, uint32_t) { return kNotcapable; }
CORRAL_WASI(uint32_t, sock_recv)(WasiInstance*, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) { return kNotcapable; }
CORRAL_WASI(uint32_t, sock_send)(WasiInstance*, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t) { return kNotcapable; }
CORRAL_WASI(uint32_t, sock_shutdown)(WasiInstance*, uint32_t, uint32_t) { return kNotcapable; }
