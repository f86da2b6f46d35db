// SPDX-License-Identifier: Apache-2.0
// Launch order of a VM run: accelerator, images, jailed QEMU, control protocol, copy-back.
#include "vm/vm_backend.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <optional>

#include "base/copy_fd.h"
#include "base/remove_tree.h"
#include "base/unique_fd.h"
#include "policy/units.h"
#include "sandbox/host_cgroups.h"
#include "sandbox/linux_backend.h"
#include "sandbox/userns.h"
#include "sandbox/workspace.h"
#include "vm/accel.h"
#include "vm/control_session.h"
#include "vm/frame.h"
#include "vm/images.h"
#include "vm/output_receiver.h"
#include "vm/protocol.h"
#include "vm/qemu_jail.h"
#include "vm/relay_host.h"
#include "vm/snapshot.h"

namespace corral::vm {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

constexpr int kExitCorral = 125;
constexpr int kExitTimeout = 124;
// QEMU's own memory beside the guest's RAM: its code, device state, TCG's translation
// buffer (capped with tb-size) and thread stacks.
constexpr uint64_t kQemuOverheadBytes = 256ull << 20;
// Without a memory cgroup the cap is RLIMIT_AS, which counts address space QEMU reserves but
// never touches (thread stacks, the translation cache's guard pages, ROM regions).
constexpr uint64_t kQemuAddressSpaceBytes = 1ull << 30;
// The host watchdog: how long a guest may take to boot (agent hello), and how long past the
// command's own --timeout the guest may take to report it.
constexpr auto kBootDeadlineKvm = std::chrono::seconds(30);
constexpr auto kBootDeadlineTcg = std::chrono::seconds(300);
// A QMP stop, cont or query-status on a session's VM.
constexpr auto kMonitorDeadline = std::chrono::seconds(10);
constexpr auto kTimeoutGrace = std::chrono::seconds(10);

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// The per-run directory (workspace image, staging tree), removed with everything in it. A
// run holds a flock on it for its whole life, so that one killed with SIGKILL (which leaves
// the directory behind) can be told from a live one and swept by the next run.
class RunDir {
 public:
  static Result<RunDir> create() {
    // Made under another name and renamed once locked: a sweep never sees it unlocked.
    std::string tmpl = base() + "/corral-vm-new-XXXXXX";
    if (!::mkdtemp(tmpl.data())) return sysError("mkdtemp " + tmpl);
    RunDir d;
    d.lock_.reset(::open(tmpl.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!d.lock_.valid() || ::flock(d.lock_.get(), LOCK_EX) != 0) {
      ::rmdir(tmpl.c_str());
      return sysError("lock " + tmpl);
    }
    d.path_ = base() + "/" + kPrefix + tmpl.substr(tmpl.size() - 6);
    if (::rename(tmpl.c_str(), d.path_.c_str()) != 0) {
      ::rmdir(tmpl.c_str());
      d.path_.clear();
      return sysError("rename " + tmpl);
    }
    return d;
  }
  // Removes the directories of runs that died without cleaning up: this uid's (as root also
  // the jail uid's, which owns them once a run starts), and only those nobody holds locked.
  static void sweepStale(uid_t jail_uid) {
    UniqueFd dir(::open(base().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    DIR* d = dir.valid() ? ::fdopendir(::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0)) : nullptr;
    while (dirent* e = d ? ::readdir(d) : nullptr) {
      if (std::string_view(e->d_name).rfind(kPrefix, 0) != 0) continue;
      UniqueFd fd(::openat(dir.get(), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      struct stat st;
      if (!fd.valid() || ::fstat(fd.get(), &st) != 0) continue;
      if (st.st_uid != ::getuid() && !(::getuid() == 0 && st.st_uid == jail_uid)) continue;
      if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // a live run's
      removeContents(fd.get());
      ::unlinkat(dir.get(), e->d_name, AT_REMOVEDIR);
    }
    if (d) ::closedir(d);
  }
  RunDir() = default;
  RunDir(RunDir&& o) noexcept : path_(std::move(o.path_)), lock_(std::move(o.lock_)) { o.path_.clear(); }
  RunDir& operator=(RunDir&&) = delete;
  ~RunDir() {
    if (path_.empty()) return;
    UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.valid()) removeContents(fd.get());
    ::rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  static constexpr char kPrefix[] = "corral-vm-run-";
  static std::string base() {
    const char* t = std::getenv("TMPDIR");
    return std::string(t && *t == '/' ? t : "/tmp");
  }
  std::string path_;
  UniqueFd lock_;
};

// The jailer: a child process that runs QEMU in corral's namespace sandbox. It dies with
// corral (PR_SET_PDEATHSIG), and the sandbox's init dies with it, so no QEMU survives.
class Jailer {
 public:
  Jailer() = default;
  Jailer(Jailer&& o) noexcept : pid_(std::exchange(o.pid_, -1)) {}
  Jailer& operator=(Jailer&&) = delete;
  ~Jailer() { kill(); }
  static Result<Jailer> start(const sandbox::SandboxSpec& qemu_spec, UniqueFd channel, UniqueFd err_w) {
    const pid_t parent = ::getpid();
    const pid_t child = ::fork();
    if (child < 0) return sysError("fork the QEMU jailer");
    if (child == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(kExitCorral);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      sandbox::SandboxSpec s = qemu_spec;
      const int out = ::fcntl(channel.get(), F_DUPFD_CLOEXEC, 3);
      s.stdio = {channel.get(), out, err_w.get()};
      // Staging the workspace as root switches this process's fsuid, and the kernel clears
      // the parent-death signal on any credential change: arm it again once staging is done,
      // then check corral did not die in between (the signal would have been lost).
      sandbox::RunOptions options;
      options.before_command = [parent](int) -> Result<void> {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) return Error(Errc::kIo, "corral ended while QEMU's jail was being built");
        return {};
      };
      auto r = sandbox::runLinux(s, options);
      if (!r) {
        std::string m = "corral: QEMU jail: " + r.error().message() + "\n";
        (void)!::write(err_w.get(), m.data(), m.size());
        ::_exit(kExitCorral);
      }
      ::_exit(r->exit_code & 0xff);
    }
    Jailer j;
    j.pid_ = child;
    return j;
  }
  pid_t pid() const { return pid_; }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// Blocks the signals a user ends a run with and reads them from a signalfd.
class Signals {
 public:
  Signals() {
    sigemptyset(&set_);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set_, s);
    ::sigprocmask(SIG_BLOCK, &set_, &old_);
    fd_.reset(::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  ~Signals() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }
  Signals(const Signals&) = delete;
  Signals& operator=(const Signals&) = delete;
  int fd() const { return fd_.get(); }

 private:
  sigset_t set_, old_;
  UniqueFd fd_;
};

bool writeAll(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool sendFrame(int fd, frame::Type t, std::string_view payload) {
  std::string bytes = frame::encode(t, payload);
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// The sandbox's uid must reach every file QEMU opens; as root that uid is not root's, and
// root's cache dir is 0700. So the run dir belongs to the sandbox's host uid and holds the
// images as hard links (a copy when the cache is on another file system).
Result<std::string> placeInRunDir(const std::string& src, const RunDir& dir, const char* name) {
  const std::string dst = dir.path() + "/" + name;
  if (::link(src.c_str(), dst.c_str()) == 0) return dst;
  UniqueFd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return sysError("open " + src);
  UniqueFd out(::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!out.valid()) return sysError("create " + dst);
  struct stat st;
  if (::fstat(in.get(), &st) != 0) return sysError("stat " + src);
  RETURN_IF_ERROR(copyFdContents(in.get(), out.get(), st.st_size, src));
  return dst;
}

struct Images {
  std::string kernel_source;  // as chosen, before it is placed in the run dir
  std::string release;
  std::string kernel_kind, kernel_why;  // images::KernelChoice, or "given" (--vm-kernel)
  std::string initrd_cached, rootfs_cached;  // content-named, in the image cache
  JailFiles jail;
};

Result<Images> prepareImages(const sandbox::SandboxSpec& spec, const VmOptions& vm, const AccelProbe& accel,
                             const RunDir& dir, Json& timings) {
  const auto t0 = Clock::now();
  Images im;
  if (vm.kernel) {
    im.kernel_source = *vm.kernel;
    im.kernel_kind = "given";
    im.kernel_why = "--vm-kernel";
  } else {
    ASSIGN_OR_RETURN(images::KernelChoice k, images::chooseKernel());
    im.kernel_source = k.path;
    im.kernel_kind = k.kind;
    im.kernel_why = k.why;
  }
  ASSIGN_OR_RETURN(im.release, images::kernelRelease(im.kernel_source));
  ASSIGN_OR_RETURN(std::string cache, images::cacheDir());
  ASSIGN_OR_RETURN(std::string agent, agentPath());
  ASSIGN_OR_RETURN(std::string initrd, images::initramfs(cache, agent, im.release));
  ASSIGN_OR_RETURN(std::string rootfs, images::rootfs(cache));
  im.initrd_cached = initrd;
  im.rootfs_cached = rootfs;
  JailFiles& j = im.jail;
  j.qemu = accel.qemu;
  ASSIGN_OR_RETURN(j.initrd, placeInRunDir(initrd, dir, "initrd"));
  ASSIGN_OR_RETURN(j.rootfs, placeInRunDir(rootfs, dir, "rootfs"));
  ASSIGN_OR_RETURN(j.kernel, placeInRunDir(im.kernel_source, dir, "kernel"));
  if (accel.kind == AccelProbe::Kind::kKvm) {
    ASSIGN_OR_RETURN(j.kvm_node, kvmNode(dir.path()));
  }
  timings["images_ms"] = msSince(t0);
  const auto t1 = Clock::now();
  // The disk goes in as QEMU's own /workspace (staged sparse, so only written blocks take
  // memory): QEMU writes it there, in its jail's tmpfs, and the host never reads it back.
  j.disk_dir = dir.path() + "/disk";
  if (::mkdir(j.disk_dir.c_str(), 0700) != 0) return sysError("mkdir " + j.disk_dir);
  RETURN_IF_ERROR(images::workspaceImage(spec.workspace.value_or(""), spec.limits.workspace_bytes, j.disk_dir + "/workspace.img"));
  if (::getuid() == 0) {
    const uid_t sandbox_uid = sandbox::userns::planIdMap(0, 0).host_uid;
    if (::chown(dir.path().c_str(), sandbox_uid, sandbox_uid) != 0) return sysError("chown the VM run directory");
    // Searchable (not listable) by root too: corral opens the jail's --ro-bind sources as the
    // caller, without capabilities (sandbox/mountns), and the name is random.
    if (::chmod(dir.path().c_str(), 0711) != 0) return sysError("chmod the VM run directory");
  }
  timings["workspace_image_ms"] = msSince(t1);
  return im;
}

void addLimit(sandbox::RunReport& r, sandbox::Limit l, std::optional<uint64_t> v, const std::string& mech) {
  for (sandbox::LimitUse& u : r.limits)
    if (u.limit == l) {
      u.mechanism = mech;
      u.value = v;
      return;
    }
  r.limits.push_back({l, v, mech});
}


using QJson = nlohmann::json;

std::string hexOf(const unsigned char* b, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[b[i] >> 4]);
    out.push_back(kDigits[b[i] & 15]);
  }
  return out;
}

Result<std::string> hostRandomHex(size_t n) {
  unsigned char b[64];
  if (n > sizeof b) return Error(Errc::kInvalidArgument, "random bytes");
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::getrandom(b + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return sysError("getrandom");
    got += static_cast<size_t>(r);
  }
  std::string hex = hexOf(b, n);
  ::explicit_bzero(b, sizeof b);
  return hex;
}

// One wait for control bytes: polls ctl until the deadline and feeds what one read gets to
// parser. kTimedOut at the deadline (the caller names what did not happen), kEnded at EOF, and
// kAgain after a poll or read that EINTR cut short or that found nothing yet.
enum class Feed { kFed, kAgain, kTimedOut, kEnded };
Result<Feed> feedControl(int ctl, frame::Parser& parser, Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return Feed::kTimedOut;
  pollfd p{ctl, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR) return sysError("poll");
  if (!p.revents) return Feed::kAgain;
  char buf[65536];
  const ssize_t n = ::read(ctl, buf, sizeof buf);
  if (n < 0 && errno == EINTR) return Feed::kAgain;
  if (n <= 0) return Feed::kEnded;
  parser.feed(std::string_view(buf, static_cast<size_t>(n)));
  return Feed::kFed;
}

// Reads control frames until one of type want; anything else, EOF or the deadline fails.
Result<void> awaitFrame(int ctl, frame::Parser& parser, frame::Type want, snapshot::Clock::time_point deadline) {
  for (;;) {
    ASSIGN_OR_RETURN(auto f, parser.next());
    if (f) {
      if (f->type != want) return Error(Errc::kIo, "VM snapshot: the guest sent an unexpected frame at the snapshot point");
      return {};
    }
    ASSIGN_OR_RETURN(Feed fed, feedControl(ctl, parser, deadline));
    if (fed == Feed::kTimedOut) return Error(Errc::kIo, "VM snapshot: the guest did not reach the snapshot point in time");
    if (fed == Feed::kEnded) return Error(Errc::kIo, "VM snapshot: the VM ended before the snapshot point");
  }
}

constexpr int64_t kUnlimitedBandwidth = int64_t{1} << 40;

// The snapshot boot: QEMU in the same jail and device layout as a run, but with a blank
// workspace disk of the run's size (no run's data is ever in a snapshot), booted to the
// agent's hello, quiesced, stopped and migrated into the cache.
Result<uint64_t> makeSnapshot(const Images& im, const VmOptions& vm, const sandbox::SandboxSpec& spec, const RunDir& dir,
                              uint64_t qemu_memory, std::chrono::seconds boot_deadline, const std::string& target) {
  JailFiles j = im.jail;
  j.disk_dir = dir.path() + "/snapdisk";
  if (::mkdir(j.disk_dir.c_str(), 0700) != 0) return sysError("mkdir " + j.disk_dir);
  {
    UniqueFd disk(::open((j.disk_dir + "/workspace.img").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!disk.valid() || ::ftruncate(disk.get(), static_cast<off_t>(spec.limits.workspace_bytes)) != 0)
      return sysError("the snapshot boot's blank disk");
  }
  const uid_t jail_uid = ::getuid() == 0 ? sandbox::userns::planIdMap(0, 0).host_uid : ::getuid();
  j.qmp_socket = dir.path() + "/qmp-make";
  ASSIGN_OR_RETURN(UniqueFd listener, snapshot::Qmp::listen(*j.qmp_socket, jail_uid));
  UniqueFd net_listener;  // the same corral.net port as the run's, never served
  if (j.net_socket) {
    j.net_socket = dir.path() + "/net-make";
    ASSIGN_OR_RETURN(net_listener, snapshot::Qmp::listen(*j.net_socket, jail_uid));
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return sysError("socketpair");
  UniqueFd ctl(pair[0]), ctl_child(pair[1]);
  UniqueFd err_w(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  const auto deadline = snapshot::Clock::now() + boot_deadline;
  ASSIGN_OR_RETURN(Jailer jailer, Jailer::start(qemuJailSpec(j, vm, spec.limits.workspace_bytes,
                                                             std::chrono::duration_cast<std::chrono::milliseconds>(boot_deadline) + std::chrono::seconds(60),
                                                             qemu_memory),
                                                std::move(ctl_child), std::move(err_w)));
  ASSIGN_OR_RETURN(snapshot::Qmp qmp, snapshot::Qmp::accept(listener.get(), deadline));
  frame::Parser parser(frame::Direction::kToHost);
  RETURN_IF_ERROR(awaitFrame(ctl.get(), parser, frame::Type::kHello, deadline));
  if (!sendFrame(ctl.get(), frame::Type::kQuiesce, "")) return Error(Errc::kIo, "VM snapshot: cannot reach the agent");
  RETURN_IF_ERROR(awaitFrame(ctl.get(), parser, frame::Type::kQuiesced, deadline));
  if (auto r = qmp.execute("stop", QJson::object(), deadline); !r) return r.error();
  if (auto r = qmp.execute("migrate-set-parameters", QJson{{"max-bandwidth", kUnlimitedBandwidth}}, deadline); !r) return r.error();
  ASSIGN_OR_RETURN(snapshot::Writer w, snapshot::Writer::create(target));
  if (auto r = qmp.execute("getfd", QJson{{"fdname", "snap"}}, deadline, w.fd()); !r) return r.error();
  if (auto r = qmp.execute("migrate", QJson{{"uri", "fd:snap"}}, deadline); !r) return r.error();
  RETURN_IF_ERROR(qmp.waitMigration(deadline));
  jailer.kill();
  return w.seal();
}

// A restore: the stream goes to QEMU (started with -incoming defer) over QMP, and the VM runs
// once it is loaded.
Result<void> restoreSnapshot(snapshot::Qmp& qmp, int snap_fd, snapshot::Clock::time_point deadline) {
  if (auto r = qmp.execute("getfd", QJson{{"fdname", "snap"}}, deadline, snap_fd); !r) return r.error();
  if (auto r = qmp.execute("migrate-incoming", QJson{{"uri", "fd:snap"}}, deadline); !r) return r.error();
  RETURN_IF_ERROR(qmp.waitMigration(deadline));
  ASSIGN_OR_RETURN(QJson st, qmp.execute("query-status", QJson::object(), deadline));
  if (!(st.is_object() && st.value("running", false))) {
    if (auto r = qmp.execute("cont", QJson::object(), deadline); !r) return r.error();
  }
  return {};
}

// The accelerator a run may use (KVM, or TCG with --allow-weaker kvm), recorded in vmj.
Result<AccelProbe> checkAccel(const VmOptions& vm, Json& vmj) {
  const AccelProbe accel = probeAccel();
  if (accel.kind == AccelProbe::Kind::kUnavailable)
    return Error(Errc::kUnsupported, "--backend vm: no VM here: " + accel.detail + " (" + accel.fix + ")");
  const bool kvm = accel.kind == AccelProbe::Kind::kKvm;
  if (!kvm && !vm.allow_tcg)
    return Error(Errc::kUnsupported, "--backend vm: KVM is unusable (" + accel.detail +
                                         "); --allow-weaker kvm accepts QEMU's TCG emulation instead");
  vmj["accelerator"] = kvm ? "kvm" : "tcg";
  if (!kvm) vmj["kvm_unusable"] = accel.detail;
  return accel;
}

// QEMU's own memory cap (the guest's RAM and QEMU's overhead), and the VM's size, in vmj.
uint64_t qemuMemoryLimit(const VmOptions& vm, Json& vmj) {
  vmj["memory_bytes"] = vm.memory_bytes;
  const sandbox::cgroup::HostCgroups cg = sandbox::cgroup::detect();
  const bool cgroup = cg.memory.version != sandbox::cgroup::Version::kNone;
  const uint64_t qemu_memory = vm.memory_bytes + (cgroup ? kQemuOverheadBytes : kQemuAddressSpaceBytes);
  vmj["qemu_memory_limit"] = {{"value", qemu_memory},
                              {"mechanism", cgroup ? std::string("cgroup-") + sandbox::cgroup::versionName(cg.memory.version)
                                                   : std::string("rlimit-as")}};
  vmj["cpus"] = vm.cpus;
  return qemu_memory;
}

// Snapshot restore (snapshot.h), unless --vm-cold: the cached snapshot for this exact
// configuration, made now (a boot of its own, on a blank disk) when there is none. Any
// failure to make or verify it falls back to a cold boot, and vmj says so. On a restore,
// snap_fd is the verified stream and qmp_listener the socket the jailed QEMU connects to.
Result<void> chooseStart(Images& im, const VmOptions& vm, const sandbox::SandboxSpec& spec, const AccelProbe& accel,
                         const RunDir& dir, uint64_t qemu_memory, std::chrono::seconds boot_deadline, Json& vmj,
                         UniqueFd& snap_fd, UniqueFd& qmp_listener) {
  const bool kvm = accel.kind == AccelProbe::Kind::kKvm;
  vmj["start"] = "cold";
  if (!vm.cold) {
    Json snap = Json::object();
    auto cache = images::cacheDir();
    Result<std::string> key = cache ? snapshot::key({im.jail.kernel, im.initrd_cached, im.rootfs_cached, accel.qemu, vm.memory_bytes,
                                                     spec.limits.workspace_bytes, vm.cpus, kvm, spec.proxy.channel >= 0})
                                    : Result<std::string>(cache.error());
    if (!key) {
      snap["error"] = key.error().message();
    } else {
      const std::string path = snapshot::path(*cache, *key);
      snap["key"] = *key;
      if (::access(path.c_str(), F_OK) != 0) {
        const auto tm = Clock::now();
        auto made = makeSnapshot(im, vm, spec, dir, qemu_memory, boot_deadline, path);
        snap["made_ms"] = msSince(tm);
        if (made) {
          snap["made_bytes"] = *made;
          snapshot::prune(*cache);
        } else {
          snap["error"] = "making it failed: " + made.error().message();
        }
      }
      if (!snap.contains("error")) {
        const auto tv = Clock::now();
        auto fd = snapshot::openVerified(path);
        if (fd) {
          snap_fd = std::move(*fd);
          snap["verify_ms"] = msSince(tv);
        } else {
          snap["error"] = "refused: " + fd.error().message();
          ::unlink(path.c_str());  // the next run makes a new one
        }
      }
      if (snap_fd.valid()) {
        const uid_t jail_uid = ::getuid() == 0 ? sandbox::userns::planIdMap(0, 0).host_uid : ::getuid();
        im.jail.qmp_socket = dir.path() + "/qmp";
        ASSIGN_OR_RETURN(qmp_listener, snapshot::Qmp::listen(*im.jail.qmp_socket, jail_uid));
        im.jail.incoming = true;
        snap["path"] = path;
      }
    }
    if (snap.contains("error")) snap["fallback"] = "cold boot";
    vmj["snapshot"] = snap;
  }
  return {};
}

struct RestoreNonce {
  std::string hex;
  bool require_reseed = true;
};

// A restore: the snapshot loaded into the waiting QEMU, then this restore's own seed and
// nonce sent: the agent reseeds the kernel RNG with the seed and must echo the nonce before
// anything else (ControlSession::expectRestore).
Result<RestoreNonce> restoreAndReseed(snapshot::Qmp& qmp, int snap_fd, int ctl, std::chrono::seconds boot_deadline, Json& vmj, Json& timings) {
  const auto tr = Clock::now();
  if (auto r = restoreSnapshot(qmp, snap_fd, tr + boot_deadline); !r) {
    ::unlink(vmj["snapshot"]["path"].get<std::string>().c_str());
    return Error(Errc::kIo, "--backend vm: the snapshot restore failed: " + r.error().message() + " (--vm-cold boots without it)");
  }
  timings["restore_ms"] = msSince(tr);
  const char* skip = std::getenv("CORRAL_VM_TEST_SKIP_RESEED");
  protocol::Reseed rs;
  rs.skip_reseed = skip && std::string_view(skip) == "1";
  ASSIGN_OR_RETURN(rs.seed_hex, hostRandomHex(32));
  ASSIGN_OR_RETURN(rs.nonce_hex, hostRandomHex(16));
  rs.time_ns = protocol::realtimeNs();
  std::string payload = protocol::encodeReseed(rs);
  const bool sent = sendFrame(ctl, frame::Type::kReseed, payload);
  ::explicit_bzero(payload.data(), payload.size());
  ::explicit_bzero(rs.seed_hex.data(), rs.seed_hex.size());
  if (!sent) return Error(Errc::kIo, "--backend vm: cannot reach the restored guest");
  vmj["start"] = "restore";
  vmj["reseed"] = rs.skip_reseed ? "skipped: CORRAL_VM_TEST_SKIP_RESEED=1 (a test control)" : "host getrandom seed + nonce";
  return RestoreNonce{rs.nonce_hex, !rs.skip_reseed};
}

}  // namespace

Result<std::string> agentPath() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return sysError("cannot find corral-vm-init: readlink /proc/self/exe");
  std::string p(self, static_cast<size_t>(n));
  p.resize(p.rfind('/') + 1);
  p += "corral-vm-init";
  if (::access(p.c_str(), R_OK) != 0) return sysError("the guest agent " + p);
  return p;
}

Result<VmRun> runVm(const sandbox::SandboxSpec& spec, const VmOptions& vm) {
  const auto started = Clock::now();
  VmRun run;
  run.extra["backend"] = "vm";
  run.extra["vm"] = Json::object();
  Json& vmj = run.extra["vm"];  // taken last: ordered_json moves its members when one is added
  ASSIGN_OR_RETURN(const AccelProbe accel, checkAccel(vm, vmj));
  const bool kvm = accel.kind == AccelProbe::Kind::kKvm;
  const uint64_t qemu_memory = qemuMemoryLimit(vm, vmj);

  UniqueFd host_ws;
  if (spec.workspace) {
    ASSIGN_OR_RETURN(host_ws, sandbox::workspace::openHostDir(*spec.workspace));
  }
  RunDir::sweepStale(sandbox::userns::planIdMap(0, 0).host_uid);
  ASSIGN_OR_RETURN(RunDir dir, RunDir::create());
  Json timings = Json::object();
  ASSIGN_OR_RETURN(Images im, prepareImages(spec, vm, accel, dir, timings));
  // --net proxy: QEMU's second port connects to the relay's socket, and the relay hands each
  // stream the guest opens to the run's egress proxy (relay_host.h).
  std::unique_ptr<HostRelay> net_relay;
  if (spec.proxy.channel >= 0) {
    const uid_t jail_uid = ::getuid() == 0 ? sandbox::userns::planIdMap(0, 0).host_uid : ::getuid();
    ASSIGN_OR_RETURN(net_relay, HostRelay::listen(dir.path(), jail_uid, spec.proxy.channel));
    im.jail.net_socket = net_relay->socketPath();
  }
  const std::string kernel_source = im.kernel_source;
  vmj["kernel"] = vm.kernel ? *vm.kernel : kernel_source;
  vmj["kernel_release"] = im.release;
  vmj["kernel_choice"] = {{"kind", im.kernel_kind}, {"why", im.kernel_why}};
  const std::string staging = dir.path() + "/outputs";
  if (::mkdir(staging.c_str(), 0700) != 0) return sysError("mkdir " + staging);
  ASSIGN_OR_RETURN(OutputReceiver outputs, OutputReceiver::create(staging, spec.outputs, spec.limits.workspace_bytes));

  const auto boot_deadline = kvm ? kBootDeadlineKvm : kBootDeadlineTcg;
  const std::chrono::milliseconds command_allowance =
      spec.limits.timeout ? *spec.limits.timeout + kTimeoutGrace : std::chrono::milliseconds(0);
  // The jail's own timer is the outermost watchdog; the supervisor's deadlines below fire first.
  const auto jail_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      boot_deadline + (spec.limits.timeout ? command_allowance : std::chrono::hours(24 * 366)) + std::chrono::seconds(30));

  UniqueFd snap_fd, qmp_listener;
  RETURN_IF_ERROR(chooseStart(im, vm, spec, accel, dir, qemu_memory, boot_deadline, vmj, snap_fd, qmp_listener));

  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return sysError("socketpair");
  UniqueFd ctl(pair[0]), ctl_child(pair[1]);
  int errp[2];
  if (::pipe2(errp, O_CLOEXEC) != 0) return sysError("pipe");
  UniqueFd err_r(errp[0]), err_w(errp[1]);
  Signals signals;
  const auto qemu_start = Clock::now();
  ASSIGN_OR_RETURN(Jailer jailer, Jailer::start(qemuJailSpec(im.jail, vm, spec.limits.workspace_bytes, jail_timeout, qemu_memory), std::move(ctl_child), std::move(err_w)));
  ::fcntl(err_r.get(), F_SETFL, O_NONBLOCK);
  if (net_relay) net_relay->start();

  sandbox::RunReport& report = run.report;
  frame::Parser parser(frame::Direction::kToHost);
  ControlSession session(spec, outputs,
                         {[&ctl](std::string_view request) { return sendFrame(ctl.get(), frame::Type::kRequest, request); },
                          [](frame::Type stream, std::string_view bytes) { writeAll(stream == frame::Type::kStdout ? 1 : 2, bytes); }});
  if (snap_fd.valid()) {
    auto qmp = snapshot::Qmp::accept(qmp_listener.get(), Clock::now() + boot_deadline);
    if (!qmp) {
      ::unlink(vmj["snapshot"]["path"].get<std::string>().c_str());
      return Error(Errc::kIo, "--backend vm: the snapshot restore failed: " + qmp.error().message() + " (--vm-cold boots without it)");
    }
    ASSIGN_OR_RETURN(RestoreNonce nonce, restoreAndReseed(*qmp, snap_fd.get(), ctl.get(), boot_deadline, vmj, timings));
    session.expectRestore(nonce.hex, nonce.require_reseed);
  }
  std::string qemu_err;
  bool done = false;
  std::optional<Clock::time_point> command_deadline;
  std::optional<Error> failure;
  std::optional<int> by_signal;
  bool watchdog_fired = false;
  bool err_open = true;
  // The caller's stdin goes to the command once it started: read only when nothing is still
  // pending, and sent without blocking, so a command that never reads cannot stall the
  // supervisor (and with it the output frames the guest is waiting to send).
  bool stdin_open = true;
  std::string stdin_pending;
  char buf[65536];
  while (!done && !failure && !by_signal && !watchdog_fired) {
    const auto now = Clock::now();
    const auto deadline = command_deadline ? *command_deadline : qemu_start + boot_deadline;
    if (!session.started() && !session.helloSeen() && now >= qemu_start + boot_deadline) {
      failure = Error(Errc::kIo, "--backend vm: the guest did not boot within " +
                                     std::to_string(std::chrono::duration_cast<std::chrono::seconds>(boot_deadline).count()) + " s");
      break;
    }
    if (command_deadline && now >= *command_deadline) {
      watchdog_fired = true;
      break;
    }
    const int wait_ms = (session.helloSeen() && !command_deadline) ? -1
                        : static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    const bool read_stdin = stdin_open && session.started() && stdin_pending.empty();
    pollfd fds[4] = {{ctl.get(), static_cast<short>(POLLIN | (stdin_pending.empty() ? 0 : POLLOUT)), 0},
                     {err_open ? err_r.get() : -1, POLLIN, 0},
                     {signals.fd(), POLLIN, 0},
                     {read_stdin ? 0 : -1, POLLIN, 0}};
    if (::poll(fds, 4, wait_ms) < 0) {
      if (errno == EINTR) continue;
      failure = sysError("poll");
      break;
    }
    if (fds[2].revents & POLLIN) {
      signalfd_siginfo si{};
      if (::read(signals.fd(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) by_signal = static_cast<int>(si.ssi_signo);
      break;
    }
    if (fds[1].revents & (POLLIN | POLLHUP)) {
      ssize_t n = ::read(err_r.get(), buf, sizeof buf);
      if (n > 0 && qemu_err.size() < 4096) qemu_err.append(buf, static_cast<size_t>(n));
      if (n == 0) err_open = false;
    }
    if (fds[3].revents) {
      const ssize_t n = ::read(0, buf, frame::kMaxPayload);
      if (n > 0) {
        stdin_pending = frame::encode(frame::Type::kStdin, std::string_view(buf, static_cast<size_t>(n)));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        stdin_pending = frame::encode(frame::Type::kStdin, "");  // EOF (or stdin unreadable): the command reads EOF
        stdin_open = false;
      }
    }
    if ((fds[0].revents & POLLOUT) && !stdin_pending.empty()) {
      const ssize_t n = ::send(ctl.get(), stdin_pending.data(), stdin_pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        stdin_pending.erase(0, static_cast<size_t>(n));
      } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
        stdin_pending.clear();  // the VM is going away: its end of the channel says why below
        stdin_open = false;
      }
    }
    if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = ::read(ctl.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = qemu_err.substr(0, qemu_err.find('\n'));
      failure = Error(Errc::kIo, "--backend vm: the VM ended before the command finished" + (why.empty() ? "" : ": " + why));
      break;
    }
    parser.feed(std::string_view(buf, static_cast<size_t>(n)));
    for (;;) {
      auto next = parser.next();
      if (!next) {
        failure = next.error();
        break;
      }
      if (!*next) break;
      auto event = session.onFrame(**next);
      if (!event) {
        failure = event.error();
        break;
      }
      if (*event == ControlSession::Event::kHello) {
        timings["agent_hello_ms"] = msSince(qemu_start);
        if (session.restoring()) vmj["guest_reseeded"] = session.reseeded();
        vmj["guest_kernel"] = session.hello().kernel;
        vmj["guest_devices"] = session.hello().devices;
        vmj["guest_pci_devices"] = session.hello().pci;
        vmj["guest_fs_types"] = session.hello().fs_types;
      } else if (*event == ControlSession::Event::kStarted) {
        timings["command_start_ms"] = msSince(qemu_start);
        if (spec.limits.timeout) command_deadline = Clock::now() + command_allowance;
      } else if (*event == ControlSession::Event::kExit) {
        report = std::move(session.report());
        done = true;
        break;
      }
    }
  }
  // The guest has nothing left to say: stop it now rather than wait for its power-off.
  jailer.kill();
  if (net_relay) vmj["net_relay"] = net_relay->stop();
  timings["total_ms"] = msSince(qemu_start);
  vmj["timings"] = timings;
  report.wall_ms = msSince(started);
  if (by_signal) {
    report = {};
    report.wall_ms = msSince(started);
    report.signal = *by_signal;
    report.killed_by = sandbox::KilledBy::kSignal;
    report.exit_code = 128 + *by_signal;
    report.error = "--backend vm: ended by signal " + std::to_string(*by_signal) + "; the VM was killed";
    return run;
  }
  if (watchdog_fired) {
    report = {};
    report.wall_ms = msSince(started);
    report.killed_by = sandbox::KilledBy::kTimeout;
    report.exit_code = kExitTimeout;
    addLimit(report, sandbox::Limit::kTimeout, static_cast<uint64_t>(spec.limits.timeout->count()), "host watchdog (VM killed)");
    return run;
  }
  if (failure) {
    if (!session.started()) return *failure;
    report = {};
    report.wall_ms = msSince(started);
    report.exit_code = kExitCorral;
    report.error = failure->message();
    return run;
  }
  // What the guest enforced, and what the VM itself is.
  addLimit(report, sandbox::Limit::kMemory, spec.limits.memory_bytes ? spec.limits.memory_bytes : vm.memory_bytes,
           spec.limits.memory_bytes ? "guest cgroup-v2 within the VM's RAM (--vm-memory)" : "the VM's RAM (--vm-memory)");
  if (spec.limits.timeout)
    addLimit(report, sandbox::Limit::kTimeout, static_cast<uint64_t>(spec.limits.timeout->count()), "guest timer + host watchdog");
  addLimit(report, sandbox::Limit::kWorkspaceSize, spec.limits.workspace_bytes, "guest tmpfs + ext4 disk size");
  // The guest's verdicts stand where the host copies nothing (the guest refused an output:
  // all or none), and explain an output the guest never sent; what the host copies, it
  // checked itself.
  if (report.exit_code != kExitCorral && spec.workspace && !spec.outputs.empty()) {
    const std::vector<sandbox::OutputResult> guest = std::move(report.outputs);
    report.outputs = sandbox::workspace::copyBack(outputs.root(), host_ws.get(), spec.outputs);
    for (sandbox::OutputResult& o : report.outputs)
      for (const sandbox::OutputResult& g : guest)
        if (o.status == sandbox::OutputResult::Status::kMissing && g.path == o.path &&
            g.status != sandbox::OutputResult::Status::kCopied) {
          o.status = g.status;
          o.reason = g.reason;
        }
    for (const sandbox::OutputResult& o : report.outputs)
      if (o.status == sandbox::OutputResult::Status::kRefused) {
        report.exit_code = kExitCorral;
        report.error = "output " + o.path + " refused: " + o.reason;
        break;
      }
  }
  return run;
}

struct SessionVm::State {  // NOLINT(bugprone-exception-escape): false positive from the nlohmann::json member's special members
  // Invariant: declared in this order so the jailer (QEMU) dies before its run dir goes.
  std::optional<RunDir> dir;
  std::optional<Jailer> jailer;
  UniqueFd ctl, pidfd;
  std::optional<snapshot::Qmp> qmp;  // QEMU's monitor for the session's life (pause, resume)
  Json info;
};

SessionVm::SessionVm(std::unique_ptr<State> s) : s_(std::move(s)) {}
SessionVm::~SessionVm() = default;
int SessionVm::control() const { return s_->ctl.get(); }
int SessionVm::pidfd() const { return s_->pidfd.get(); }
int SessionVm::pid() const { return s_->jailer ? s_->jailer->pid() : -1; }
const nlohmann::ordered_json& SessionVm::info() const { return s_->info; }
void SessionVm::kill() {
  if (s_->jailer) s_->jailer->kill();
}
Result<void> SessionVm::pause() {
  if (!s_->qmp) return Error(Errc::kUnsupported, "pause: the VM has no monitor");
  RETURN_IF_ERROR(s_->qmp->execute("stop", Json::object(), Clock::now() + kMonitorDeadline));
  return {};
}
Result<void> SessionVm::resume() {
  if (!s_->qmp) return Error(Errc::kUnsupported, "resume: the VM has no monitor");
  RETURN_IF_ERROR(s_->qmp->execute("cont", Json::object(), Clock::now() + kMonitorDeadline));
  return {};
}
Result<bool> SessionVm::running() {
  if (!s_->qmp) return Error(Errc::kUnsupported, "the VM has no monitor");
  ASSIGN_OR_RETURN(Json st, s_->qmp->execute("query-status", Json::object(), Clock::now() + kMonitorDeadline));
  return st.is_object() && st.value("running", false);
}

Result<std::unique_ptr<SessionVm>> startSessionVm(const sandbox::SandboxSpec& spec, const VmOptions& vm) {
  RETURN_IF_ERROR(checkSpec(spec, vm, false));
  auto st = std::make_unique<SessionVm::State>();
  st->info = Json::object();
  Json& vmj = st->info;
  ASSIGN_OR_RETURN(const AccelProbe accel, checkAccel(vm, vmj));
  const bool kvm = accel.kind == AccelProbe::Kind::kKvm;
  const uint64_t qemu_memory = qemuMemoryLimit(vm, vmj);
  RunDir::sweepStale(sandbox::userns::planIdMap(0, 0).host_uid);
  ASSIGN_OR_RETURN(RunDir made_dir, RunDir::create());
  st->dir.emplace(std::move(made_dir));
  const RunDir& dir = *st->dir;
  Json timings = Json::object();
  sandbox::SandboxSpec blank = spec;
  blank.workspace.reset();  // a session's workspace starts empty, in the guest's disk alone
  ASSIGN_OR_RETURN(Images im, prepareImages(blank, vm, accel, dir, timings));
  vmj["kernel_release"] = im.release;
  const auto boot_deadline = kvm ? kBootDeadlineKvm : kBootDeadlineTcg;
  UniqueFd snap_fd, qmp_listener;
  RETURN_IF_ERROR(chooseStart(im, vm, blank, accel, dir, qemu_memory, boot_deadline, vmj, snap_fd, qmp_listener));
  if (!qmp_listener.valid()) {  // a cold boot: the monitor is still the session's (pause, resume)
    const uid_t jail_uid = ::getuid() == 0 ? sandbox::userns::planIdMap(0, 0).host_uid : ::getuid();
    im.jail.qmp_socket = dir.path() + "/qmp";
    ASSIGN_OR_RETURN(qmp_listener, snapshot::Qmp::listen(*im.jail.qmp_socket, jail_uid));
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return sysError("socketpair");
  UniqueFd ctl_child(pair[1]);
  st->ctl.reset(pair[0]);
  UniqueFd err_w(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  const auto qemu_start = Clock::now();
  const auto watchdog = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::hours(24 * 366));
  ASSIGN_OR_RETURN(Jailer jailer, Jailer::start(qemuJailSpec(im.jail, vm, blank.limits.workspace_bytes, watchdog, qemu_memory),
                                                std::move(ctl_child), std::move(err_w)));
  st->jailer.emplace(std::move(jailer));
  st->pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, st->jailer->pid(), 0)));
  if (!st->pidfd.valid()) return sysError("pidfd_open the QEMU jailer");
  // The hello (or a restore's reseed answer) is checked as for a run; the request it answers
  // is the session's start, and the next frame must say the session's sandbox is up.
  sandbox::SandboxSpec request = blank;
  request.argv = {"/bin/true"};
  request.outputs.clear();
  request.limits.timeout.reset();
  OutputReceiver* no_outputs = nullptr;
  const std::string staging = dir.path() + "/outputs";
  if (::mkdir(staging.c_str(), 0700) != 0) return sysError("mkdir " + staging);
  ASSIGN_OR_RETURN(OutputReceiver outputs, OutputReceiver::create(staging, {}, 1));
  no_outputs = &outputs;
  const int ctl = st->ctl.get();
  ControlSession session(request, *no_outputs,
                         {[ctl](std::string_view req) { return sendFrame(ctl, frame::Type::kSessionStart, req); },
                          [](frame::Type, std::string_view) {}});
  ASSIGN_OR_RETURN(snapshot::Qmp qmp, snapshot::Qmp::accept(qmp_listener.get(), qemu_start + boot_deadline));
  if (snap_fd.valid()) {
    ASSIGN_OR_RETURN(RestoreNonce nonce, restoreAndReseed(qmp, snap_fd.get(), ctl, boot_deadline, vmj, timings));
    session.expectRestore(nonce.hex, nonce.require_reseed);
  }
  st->qmp.emplace(std::move(qmp));
  frame::Parser parser(frame::Direction::kToHost);
  const auto deadline = qemu_start + boot_deadline;
  for (bool up = false; !up;) {
    auto next = parser.next();
    if (!next) return next.error();
    if (*next) {
      const frame::Frame& f = **next;
      if (!session.helloSeen()) {
        ASSIGN_OR_RETURN(ControlSession::Event ev, session.onFrame(f));
        if (ev == ControlSession::Event::kHello) timings["agent_hello_ms"] = msSince(qemu_start);
        continue;
      }
      if (f.type != frame::Type::kSessionUp) return Error(Errc::kIo, "--backend vm: control channel: the guest did not start the session");
      if (!f.payload.empty())
        return Error(Errc::kIo, "--backend vm: the guest's session sandbox: " + policy::printable(f.payload.substr(0, 512)));
      up = true;
      continue;
    }
    ASSIGN_OR_RETURN(Feed fed, feedControl(ctl, parser, deadline));
    if (fed == Feed::kTimedOut)
      return Error(Errc::kIo, "--backend vm: the guest did not start the session within " +
                                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(boot_deadline).count()) + " s");
    if (fed == Feed::kEnded) return Error(Errc::kIo, "--backend vm: the VM ended before the session started");
  }
  // Invariant: the guest sends nothing after kSessionUp until it is sent a command, so the
  // parser holds no bytes the caller's own parser would miss.
  if (parser.buffered() != 0) return Error(Errc::kIo, "--backend vm: control channel: frames after the session start");
  timings["session_up_ms"] = msSince(qemu_start);
  vmj["timings"] = timings;
  return std::make_unique<SessionVm>(std::move(st));
}

}  // namespace corral::vm
