// SPDX-License-Identifier: Apache-2.0
// corral-vm-init: the guest agent, PID 1 of the microVM. Mounts the read-only runtime and the
// workspace disk, speaks the control protocol on the corral.ctl virtio-serial port, and runs
// the command through corral's own namespace sandbox (sandbox::runLinux) inside the guest.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <linux/random.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "sandbox/linux_backend.h"
#include "vm/frame.h"
#include "vm/guest/channel.h"
#include "vm/guest/session_serve.h"
#include "vm/protocol.h"
#include "vm/relay.h"

namespace corral::vm::guest {
namespace {

// <linux/fs.h>'s, which cannot be included beside glibc 2.36's <sys/mount.h>.
constexpr unsigned long kBlkFlsBuf = _IO(0x12, 97);

// Errors before the control channel is open can only go to the kernel log (no console is
// attached by default); the host sees the guest die and reports the boot as failed.
void kmsg(const std::string& line) {
  int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::string m = "corral-vm-init: " + line + "\n";
  (void)!::write(fd, m.data(), m.size());
  ::close(fd);
}

[[noreturn]] void powerOff() {
  ::sync();
  ::reboot(RB_POWER_OFF);
  for (;;) ::pause();  // reboot() does not return to PID 1 unless it failed; the host kills QEMU then
}

std::string readSmall(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && out.size() < 65536) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::vector<std::string> listDir(const std::string& path) {
  std::vector<std::string> out;
  DIR* d = ::opendir(path.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  ::closedir(d);
  return out;
}

// Modules in the order the host's image builder resolved from modules.dep (/modules/order).
void loadModules() {
  std::string order = readSmall("/modules/order");
  size_t start = 0;
  while (start < order.size()) {
    size_t end = order.find('\n', start);
    if (end == std::string::npos) end = order.size();
    std::string name = order.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    int fd = ::open(("/modules/" + name).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      kmsg("open module " + name + ": " + std::strerror(errno));
      continue;
    }
    if (::syscall(SYS_finit_module, fd, "", 0) != 0 && errno != EEXIST) kmsg("load " + name + ": " + std::strerror(errno));
    ::close(fd);
  }
}

// devtmpfs creates nodes as drivers probe; wait (bounded) for the ones we need.
bool waitFor(const std::string& path) {
  for (int i = 0; i < 3000; ++i) {
    if (::access(path.c_str(), F_OK) == 0) return true;
    ::usleep(2000);
  }
  return false;
}

std::string findPort(const std::string& name) {
  for (int i = 0; i < 3000; ++i) {
    for (const std::string& port : listDir("/sys/class/virtio-ports"))
      if (readSmall("/sys/class/virtio-ports/" + port + "/name") == name && ::access(("/dev/" + port).c_str(), F_OK) == 0)
        return "/dev/" + port;
    ::usleep(2000);
  }
  return "";
}

// Relays the command's stdout and stderr pipes into frames until both reach EOF.
void relay(Channel& ch, int out, int err) {
  pollfd fds[2] = {{out, POLLIN, 0}, {err, POLLIN, 0}};
  int open = 2;
  char buf[frame::kMaxPayload];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        ch.send(i == 0 ? frame::Type::kStdout : frame::Type::kStderr, std::string_view(buf, static_cast<size_t>(n)));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
}

// Only what the guest's own copy-back put on its disk: an output it refused or withheld is
// not there (or is still the staged original), and its verdict goes in the exit report.
// The host's stdin frames into the command's stdin pipe, until the empty one (EOF). A command
// that exits first closes the pipe: the write fails and the relay stops reading.
void relayStdin(Channel& ch, int in) {
  for (;;) {
    auto f = ch.receive();
    if (!f || f->type != frame::Type::kStdin || f->payload.empty()) break;
    size_t off = 0;
    while (off < f->payload.size()) {
      const ssize_t n = ::write(in, f->payload.data() + off, f->payload.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(in);
        return;
      }
      off += static_cast<size_t>(n);
    }
  }
  ::close(in);
}

void sendOutputs(Channel& ch, const std::vector<sandbox::OutputResult>& results) {
  for (const sandbox::OutputResult& result : results) {
    if (result.status != sandbox::OutputResult::Status::kCopied) continue;
    const std::string& rel = result.path;
    const std::string path = "/ws/" + rel;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) continue;  // missing: the host's copy-back says so
    protocol::OutputHeader h{rel, protocol::OutputKind::kOther, st.st_nlink, 0};
    std::string data;
    if (S_ISREG(st.st_mode)) {
      h.kind = protocol::OutputKind::kFile;
      int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) continue;
      char buf[65536];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) data.append(buf, static_cast<size_t>(n));
      ::close(fd);
    } else if (S_ISLNK(st.st_mode)) {
      h.kind = protocol::OutputKind::kSymlink;
      char target[4096];
      ssize_t n = ::readlink(path.c_str(), target, sizeof target);
      if (n > 0) data.assign(target, static_cast<size_t>(n));
    } else if (S_ISDIR(st.st_mode)) {
      h.kind = protocol::OutputKind::kDir;
    }
    h.size = data.size();
    ch.send(frame::Type::kOutput, protocol::encodeOutputHeader(h));
    ch.sendChunked(frame::Type::kData, data);
  }
}

// The guest end of the --net proxy relay: the corral.net port, the channel init hands the
// command's connections to, and the relay thread between them.
class NetRelay {
 public:
  NetRelay() = default;
  NetRelay(const NetRelay&) = delete;
  NetRelay& operator=(const NetRelay&) = delete;
  ~NetRelay() { stop(); }
  Result<void> start() {
    const std::string path = findPort("corral.net");
    if (path.empty()) return Error(Errc::kIo, "no corral.net virtio-serial port");
    port_.reset(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (!port_.valid()) return sysError("open " + path);
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return sysError("socketpair");
    mine_.reset(sv[0]);
    init_end_.reset(sv[1]);
    stop_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!stop_.valid()) return sysError("eventfd");
    thread_ = std::thread([this] {
      relay::Mux mux(relay::Side::kGuest, port_.get());
      if (auto r = mux.run(stop_.get(), mine_.get(), {}); !r) kmsg(r.error().message());
    });
    return {};
  }
  int channel() const { return init_end_.get(); }
  void stop() {
    if (!thread_.joinable()) return;
    const uint64_t one = 1;
    (void)!::write(stop_.get(), &one, sizeof one);
    thread_.join();
  }

 private:
  UniqueFd port_, mine_, init_end_, stop_;
  std::thread thread_;
};

protocol::Hello hello() {
  protocol::Hello h;
  utsname u{};
  if (::uname(&u) == 0) h.kernel = u.release;
  for (const std::string& d : listDir("/sys/bus/virtio/devices"))
    h.devices.push_back(readSmall("/sys/bus/virtio/devices/" + d + "/device"));
  h.pci = listDir("/sys/bus/pci/devices");
  std::string mounts = readSmall("/proc/mounts");
  size_t start = 0;
  while (start < mounts.size()) {
    size_t end = mounts.find('\n', start);
    if (end == std::string::npos) end = mounts.size();
    std::string line = mounts.substr(start, end - start);
    start = end + 1;
    size_t a = line.find(' '), b = a == std::string::npos ? a : line.find(' ', a + 1);
    size_t c = b == std::string::npos ? b : line.find(' ', b + 1);
    if (c != std::string::npos) h.fs_types.push_back(line.substr(b + 1, c - b - 1));
  }
  return h;
}

// A restored guest: mix the host's fresh seed into the kernel RNG and force a CRNG reseed, so
// two restores of one snapshot never share the snapshot's RNG state; set the clock (the
// snapshot's is stale); drop vdb's cached blocks (the snapshot boot's blank disk) before the
// run's own disk is mounted. Any failure powers off: the host then refuses the run.
bool fromHex(const std::string& hex, unsigned char* out, size_t n) {
  if (hex.size() != 2 * n) return false;
  auto nib = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  for (size_t i = 0; i < n; ++i) {
    const int hi = nib(hex[2 * i]), lo = nib(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return true;
}

void setClock(uint64_t ns) {
  if (ns == 0) return;
  const timespec now{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  if (::clock_settime(CLOCK_REALTIME, &now) != 0) kmsg(std::string("set the clock: ") + std::strerror(errno));
}

bool reseedAfterRestore(const protocol::Reseed& r) {
  if (!r.skip_reseed) {
    // struct rand_pool_info: two ints, then the seed.
    alignas(rand_pool_info) unsigned char pool[sizeof(rand_pool_info) + 32] = {};
    const int counts[2] = {256, 32};  // entropy_count (bits), buf_size (bytes)
    std::memcpy(pool, counts, sizeof counts);
    if (!fromHex(r.seed_hex, pool + sizeof(rand_pool_info), 32)) return false;
    UniqueFd rnd(::open("/dev/urandom", O_WRONLY | O_CLOEXEC));
    if (!rnd.valid() || ::ioctl(rnd.get(), RNDADDENTROPY, pool) != 0 || ::ioctl(rnd.get(), RNDRESEEDCRNG) != 0) {
      kmsg(std::string("reseed the kernel RNG: ") + std::strerror(errno));
      return false;
    }
    ::explicit_bzero(pool, sizeof pool);
  }
  setClock(r.time_ns);
  UniqueFd vdb(::open("/dev/vdb", O_RDONLY | O_CLOEXEC));
  if (vdb.valid() && ::ioctl(vdb.get(), kBlkFlsBuf, 0) != 0) {
    kmsg(std::string("flush vdb: ") + std::strerror(errno));
    return false;
  }
  return true;
}

static_assert(sizeof(rand_pool_info) == 2 * sizeof(int));

int agent(int argc, char** argv) {
  sandbox::rememberProcessArgs(argc, argv);
  // A write into the stdin pipe of a command that already exited must fail, not signal.
  ::signal(SIGPIPE, SIG_IGN);
  // PID 1 starts with the kernel's default RLIMIT_NPROC (scaled to guest RAM); the command's
  // --pids is the limit that counts, set by the sandbox below, so lift the init's own.
  const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  ::setrlimit(RLIMIT_NPROC, &unlimited);
  // The initramfs is the kernel's rootfs, which pivot_root cannot leave, and the sandbox
  // below pivots: so build the real root on a tmpfs and move onto it (as switch_root does).
  ::mount("tmpfs", "/newroot", "tmpfs", MS_NOSUID, "mode=0755,size=1m");
  for (const char* d : {"dev", "proc", "sys", "tmp", "usr", "ws", "etc", "root"}) ::mkdir((std::string("/newroot/") + d).c_str(), 0755);
  for (const char* l : {"bin", "sbin", "lib", "lib64"})
    if (::symlink((std::string("usr/") + l).c_str(), (std::string("/newroot/") + l).c_str()) != 0) {
      kmsg(std::string("symlink /newroot/") + l + ": " + std::strerror(errno));
      powerOff();
    }
  ::mount("devtmpfs", "/newroot/dev", "devtmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755");
  if (int null = ::open("/newroot/dev/null", O_RDWR); null >= 0) {
    for (int fd = 0; fd <= 2; ++fd) ::dup2(null, fd);
    if (null > 2) ::close(null);
  }
  ::mount("proc", "/newroot/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  ::mount("sysfs", "/newroot/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  loadModules();
  if (::chdir("/newroot") != 0 || ::mount(".", "/", nullptr, MS_MOVE, nullptr) != 0 || ::chroot(".") != 0 || ::chdir("/") != 0) {
    kmsg(std::string("switch root: ") + std::strerror(errno));
    powerOff();
  }
  // The runtime: read-only erofs on the first disk, never writable from the guest.
  if (!waitFor("/dev/vda") || ::mount("/dev/vda", "/usr", "erofs", MS_RDONLY | MS_NODEV, nullptr) != 0) {
    kmsg(std::string("mount /usr: ") + std::strerror(errno));
    powerOff();
  }
  ::mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=16m");
  ::mount("cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  const std::string port = findPort("corral.ctl");
  if (port.empty()) {
    kmsg("no corral.ctl virtio-serial port");
    powerOff();
  }
  Channel ch(UniqueFd(::open(port.c_str(), O_RDWR | O_CLOEXEC)));
  ch.send(frame::Type::kHello, protocol::encodeHello(hello()));
  auto req = ch.receive();
  // The snapshot point: the host saves the VM while the agent waits here, and every restore
  // resumes in this receive, which must be the reseed before anything else.
  if (req && req->type == frame::Type::kQuiesce) {
    if (!ch.send(frame::Type::kQuiesced, "")) powerOff();
    auto z = ch.receive();
    if (!z || z->type != frame::Type::kReseed) powerOff();
    auto rs = protocol::decodeReseed(z->payload);
    if (!rs || !reseedAfterRestore(*rs)) powerOff();
    if (!ch.send(frame::Type::kReseeded, protocol::encodeReseeded({rs->nonce_hex, !rs->skip_reseed, hello()}))) powerOff();
    req = ch.receive();
  }
  const bool session = req && req->type == frame::Type::kSessionStart;
  if (!req || (req->type != frame::Type::kRequest && !session)) powerOff();
  bool net_proxy = false;
  uint64_t host_ns = 0;
  auto decoded = protocol::decodeRequest(req->payload, &net_proxy, &host_ns);
  // The microvm has no RTC: a cold boot starts at the epoch (a restore at the snapshot's
  // time until the reseed): the host's clock, sent with every request, before anything runs.
  if (decoded) setClock(host_ns);
  sandbox::RunReport failed;
  if (!decoded && session) {
    ch.send(frame::Type::kSessionUp, decoded.error().message());
    powerOff();
  }
  if (!decoded) {
    failed.error = decoded.error().message();
    ch.send(frame::Type::kExit, protocol::encodeExit(failed));
    powerOff();
  }
  sandbox::SandboxSpec spec = std::move(*decoded);
  if (::access("/dev/vdb", F_OK) == 0 || waitFor("/dev/vdb")) {
    if (::mount("/dev/vdb", "/ws", "ext4", MS_NOSUID | MS_NODEV, nullptr) != 0) {
      failed.error = std::string("mount the workspace disk: ") + std::strerror(errno);
      if (session) ch.send(frame::Type::kSessionUp, failed.error);
      else ch.send(frame::Type::kExit, protocol::encodeExit(failed));
      powerOff();
    }
    spec.workspace = "/ws";
  }
  // A session (docs/vm.md, "Control protocol"): one sandbox for the guest's life, its
  // commands sent one by one; the host's request carries no --net proxy in this mode.
  if (session) {
    if (net_proxy || !spec.workspace) {
      ch.send(frame::Type::kSessionUp, net_proxy ? "a session has no --net proxy in a VM" : "no workspace disk");
      powerOff();
    }
    serveSession(ch, std::move(spec));
    powerOff();
  }
  // --net proxy: the command's sandbox init listens on the guest's loopback as on the host
  // and hands each connection here; the relay carries it over corral.net to the host, which
  // gives it to the run's egress proxy. Nothing else of the guest is reachable that way.
  NetRelay net;
  if (net_proxy) {
    if (auto started = net.start(); !started) {
      failed.error = "--net proxy: " + started.error().message();
      ch.send(frame::Type::kExit, protocol::encodeExit(failed));
      powerOff();
    }
    spec.proxy.channel = net.channel();
  }
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) powerOff();
  spec.stdio.in = in[0];
  spec.stdio.out = out[1];
  spec.stdio.err = err[1];
  std::thread relayer(relay, std::ref(ch), out[0], err[0]);
  // Detached: it may still wait for a frame when the command is done, and the guest powers off.
  std::thread(relayStdin, std::ref(ch), in[1]).detach();
  sandbox::RunOptions options;
  options.before_command = [&ch](int) -> Result<void> {
    ch.send(frame::Type::kStarted, "");
    return {};
  };
  auto report = sandbox::runLinux(spec, options);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  relayer.join();
  net.stop();
  if (report) sendOutputs(ch, report->outputs);
  if (!report) failed.error = report.error().message();
  ch.send(frame::Type::kExit, protocol::encodeExit(report ? *report : failed));
  powerOff();
}

}  // namespace
}  // namespace corral::vm::guest

int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape): only bad_alloc can escape, and PID 1 ending panics the guest either way
  if (::getpid() != 1) {
    std::fprintf(stderr, "corral-vm-init: the guest agent runs only as PID 1 of a corral microVM\n");
    return 125;
  }
  return corral::vm::guest::agent(argc, argv);
}
