// SPDX-License-Identifier: Apache-2.0
// Mount plan construction (parent) and execution (child).
#include "sandbox/mountns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "base/dir_stream.h"
#include "sandbox/devpts.h"
#include "sandbox/mount_api.h"

namespace corral::sandbox::mountns {
namespace {

constexpr uint64_t kRo = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
// The runtime top-level entries as distros lay them out: symlinks into /usr on merged-/usr
// systems (Debian 12), real directories elsewhere; both are reproduced as found.
constexpr std::array<const char*, 6> kTopLevel = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};
constexpr std::array<const char*, 5> kDevices = {"null", "zero", "full", "random", "urandom"};
// /dev/kvm's device number (Documentation/admin-guide/devices.txt: misc 232).
constexpr unsigned kKvmMajor = 10, kKvmMinor = 232;
// Host /etc entries that carry no secrets and that ordinary programs need: the dynamic
// loader cache, the CA store (TLS clients), OpenSSL's config, and Debian's alternatives
// links (awk, which, editor, ... resolve through /etc/alternatives), and netbase's service
// and protocol tables (getservbyname, getprotobyname: public IANA lists).
struct EtcEntry {
  const char* path;
  bool dir;
};
constexpr std::array<EtcEntry, 6> kEtcFromHost = {{{"ld.so.cache", false},
                                                   {"ssl/certs", true},
                                                   {"ssl/openssl.cnf", false},
                                                   {"alternatives", true},
                                                   {"services", false},
                                                   {"protocols", false}}};
// /proc entries that leak host kernel state or offer a lever over the host kernel.
constexpr std::array<const char*, 6> kProcMaskFiles = {"kcore", "keys", "timer_list", "latency_stats",
                                                       "kallsyms", "sched_debug"};
constexpr std::array<const char*, 4> kProcMaskDirs = {"acpi", "scsi", "asound", "firmware"};
constexpr std::array<const char*, 5> kProcReadOnly = {"sys", "sysrq-trigger", "irq", "bus", "fs"};

class Builder {
 public:
  explicit Builder(Plan& plan) : plan_(plan) {}
  const char* str(std::string s) { return plan_.strings.emplace_back(std::move(s)).c_str(); }
  const char* in(std::string_view rel) { return str(plan_.root + "/" + std::string(rel)); }
  void add(Step s) { plan_.steps.push_back(s); }
  int newSlot() { return plan_.slots++; }
  int clone(const std::string& host, uint64_t attrs, const char* what) {
    int slot = plan_.slots++;
    add({Op::kCloneTree, str(host), nullptr, attrs, slot, false, what});
    return slot;
  }
  void mkdir(std::string_view rel, mode_t mode = 0755) {
    add({Op::kMkdir, in(rel), nullptr, mode, -1, false, "mkdir in new root"});
  }
  void attach(int slot, const char* target, bool dir, const char* what) {
    add({dir ? Op::kMkdir : Op::kTouch, target, nullptr, 0755, -1, false, what});
    add({Op::kAttach, target, nullptr, 0, slot, false, what});
  }

 private:
  Plan& plan_;
};

// Debian's OpenJDK keeps its configuration in /etc/java-N-openjdk and reaches it through
// symlinks from /usr/lib/jvm/*/conf (java.security among them: without it the JVM does not
// start). Public package defaults, no secrets: the directories found, in name order.
std::vector<std::string> etcJdkDirs() {
  std::vector<std::string> found;
  DirStream dir(::opendir("/etc"), ::closedir);
  if (!dir) return found;
  while (const dirent* e = ::readdir(dir.get())) {
    std::string_view name(e->d_name);
    if (!name.starts_with("java-") || !name.ends_with("-openjdk")) continue;
    struct stat st;
    std::string host = "/etc/" + std::string(name);
    if (::lstat(host.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) found.emplace_back(name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

Result<std::string> stagingDir() {
  for (const char* d : {"/tmp", "/mnt", "/run", "/var/tmp"}) {
    struct stat st;
    if (::lstat(d, &st) == 0 && S_ISDIR(st.st_mode)) return std::string(d);
  }
  return Error(Errc::kUnsupported, "no directory to assemble the sandbox root in (tried /tmp, /mnt, /run, /var/tmp)");
}

}  // namespace

Result<Plan> buildPlan(const SandboxSpec& spec, const std::string& etc_passwd, const std::string& etc_group) {
  Plan plan;
  ASSIGN_OR_RETURN(plan.root, stagingDir());
  Builder b(plan);
  b.add({Op::kMakePrivate, nullptr, nullptr, 0, -1, false, "make / private"});

  // Clone every host source first: the root tmpfs below hides the staging dir, and a
  // source could live under it (a probe in /tmp).
  int usr = b.clone("/usr", kRo, "clone /usr");
  struct TopLevel { const char* name; std::string link; int slot; };
  std::vector<TopLevel> top;
  for (const char* name : kTopLevel) {
    std::string host = std::string("/") + name;
    struct stat st;
    if (::lstat(host.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t n = ::readlink(host.c_str(), buf, sizeof(buf) - 1);
      if (n <= 0) return sysError("readlink " + host);
      top.push_back({name, std::string(buf, static_cast<size_t>(n)), -1});
    } else if (S_ISDIR(st.st_mode)) {
      top.push_back({name, "", b.clone(host, kRo, "clone runtime directory")});
    }
  }
  struct Bound { std::string rel; bool dir; int slot; };
  std::vector<Bound> etc;
  for (const EtcEntry& e : kEtcFromHost) {
    std::string host = std::string("/etc/") + e.path;
    struct stat st;
    if (::stat(host.c_str(), &st) != 0 || S_ISDIR(st.st_mode) != e.dir) continue;
    etc.push_back({std::string("etc/") + e.path, e.dir, b.clone(host, kRo, "clone /etc entry")});
  }
  for (const std::string& name : etcJdkDirs())
    etc.push_back({"etc/" + name, true, b.clone("/etc/" + name, kRo, "clone /etc entry")});
  std::vector<Bound> devs;
  devs.reserve(kDevices.size() + 1);
  for (const char* d : kDevices)
    devs.push_back({std::string("dev/") + d, false,
                    b.clone(std::string("/dev/") + d, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, "clone device node")});
  // QEMU's jail under KVM (SandboxSpec::kvm_device): that one node and no other, checked to
  // be the KVM device, so the field cannot bring in any other device of the host.
  if (spec.kvm_device) {
    struct stat st;
    if (::lstat(spec.kvm_device->c_str(), &st) != 0) return sysError("the KVM device " + *spec.kvm_device);
    if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(kKvmMajor, kKvmMinor))
      return Error(Errc::kInvalidArgument, "the KVM device " + *spec.kvm_device + " is not char device 10:232");
    devs.push_back({"dev/kvm", false, b.clone(*spec.kvm_device, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, "clone the KVM device")});
  }
  const size_t fixed_sources = plan.steps.size();
  // --ro-bind sources are the operator's choice: cloned before the maps, so the path walk to
  // each is the caller's own (as root, /root/project works although the sandbox uid cannot
  // cross /root). What lies inside is still the sandbox uid's to read: every access after the
  // clone is checked against its host uid, so a root-only file or directory in the tree stays
  // closed, and the source's own mode still applies to the sandbox at its mount point.
  std::vector<Bound> extra;
  for (const RoBind& rb : spec.ro_binds) {
    struct stat st;
    if (::stat(rb.host.c_str(), &st) != 0) return sysError("--ro-bind " + rb.host);
    // A namespace handle (/proc/PID/ns/*) is no file a command needs, and init opens the
    // source while it is still in the caller's network and IPC namespaces: refuse it outright
    // (and init checks again what it actually cloned).
    struct statfs fs;
    if (::statfs(rb.host.c_str(), &fs) != 0) return sysError("--ro-bind " + rb.host);
    if (fs.f_type == NSFS_MAGIC)
      return Error(Errc::kInvalidArgument, "--ro-bind " + rb.host + ": a namespace handle cannot be bound in");
    extra.push_back({rb.sandbox.substr(1), S_ISDIR(st.st_mode), b.clone(rb.host, kRo, "clone --ro-bind source")});
  }
  // Read-write binds (SandboxSpec::rw_binds), cloned as the caller like --ro-bind. Only beneath
  // /workspace: anywhere else Landlock would refuse every write anyway.
  for (const RoBind& rw : spec.rw_binds) {
    struct stat st;
    if (::stat(rw.host.c_str(), &st) != 0) return sysError("read-write bind " + rw.host);
    if (!S_ISDIR(st.st_mode)) return Error(ENOTDIR, "read-write bind " + rw.host);
    struct statfs fs;
    if (::statfs(rw.host.c_str(), &fs) != 0) return sysError("read-write bind " + rw.host);
    if (fs.f_type == NSFS_MAGIC) return Error(Errc::kInvalidArgument, "read-write bind " + rw.host + ": a namespace handle");
    if (!rw.sandbox.starts_with("/workspace/") || rw.sandbox.find("/..") != std::string::npos)
      return Error(Errc::kInvalidArgument, "read-write bind " + rw.sandbox + ": not beneath /workspace");
    extra.push_back({rw.sandbox.substr(1), true,
                     b.clone(rw.host, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, "clone a read-write bind source")});
  }
  // A session's workspace lies in the daemon's 0700 state dir: cloned as the caller, like --ro-bind.
  const int ws_slot = spec.workspace_bind
                          ? b.clone(*spec.workspace_bind, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "clone the session's workspace")
                          : -1;
  plan.before_maps = plan.steps.size();
  // The fixed runtime sources, though, must be reachable by the sandbox uid itself.
  if (::getuid() == 0)
    for (size_t i = 0; i < fixed_sources; ++i)
      if (plan.steps[i].op == Op::kCloneTree) b.add({Op::kCheckReach, plan.steps[i].a, nullptr, 0, -1, false, plan.steps[i].what});

  b.add({Op::kRootTmpfs, b.str(plan.root), "mode=0755,size=4m", 0, -1, false, "mount root tmpfs"});
  b.mkdir("usr");
  b.add({Op::kAttach, b.in("usr"), nullptr, 0, usr, false, "mount /usr read-only"});
  for (const TopLevel& t : top) {
    if (t.slot < 0) b.add({Op::kSymlink, b.in(t.name), b.str(t.link), 0, -1, false, "symlink runtime link"});
    else b.attach(t.slot, b.in(t.name), true, "mount runtime directory read-only");
  }

  b.mkdir("etc");
  b.mkdir("etc/ssl");
  b.add({Op::kWriteFile, b.in("etc/passwd"), b.str(etc_passwd), 0644, -1, false, "write /etc/passwd"});
  b.add({Op::kWriteFile, b.in("etc/group"), b.str(etc_group), 0644, -1, false, "write /etc/group"});
  b.add({Op::kWriteFile, b.in("etc/hosts"), "127.0.0.1\tlocalhost corral\n::1\tlocalhost ip6-localhost ip6-loopback\n",
         0644, -1, false, "write /etc/hosts"});
  // No resolv.conf and "hosts: files": there is no resolver inside the sandbox.
  b.add({Op::kWriteFile, b.in("etc/nsswitch.conf"),
         "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\nprotocols: files\n"
         "services: files\n",
         0644, -1, false, "write /etc/nsswitch.conf"});
  for (const Bound& e : etc) b.attach(e.slot, b.in(e.rel), e.dir, "mount /etc entry read-only");

  // /dev is a directory of the root tmpfs, not a tmpfs of its own: it holds only the device
  // binds' mount points, the links and /dev/shm, and goes read-only with the root (one
  // superblock less to make and tear down on every launch).
  b.mkdir("dev");
  for (const Bound& d : devs) b.attach(d.slot, b.in(d.rel), false, "mount device node");
  for (auto [link, target] : {std::pair{"dev/fd", "/proc/self/fd"}, {"dev/stdin", "/proc/self/fd/0"},
                              {"dev/stdout", "/proc/self/fd/1"}, {"dev/stderr", "/proc/self/fd/2"}})
    b.add({Op::kSymlink, b.in(link), target, 0, -1, false, "symlink in /dev"});
  // A devpts instance of the sandbox's own, so openpty() works (script, pexpect, node-pty,
  // test runners); its terminals are not the host's, and TIOCSTI stays refused by seccomp.
  b.mkdir("dev/pts");
  b.add({Op::kDevpts, b.in("dev/pts"), nullptr, 0, -1, false, "mount /dev/pts"});
  b.add({Op::kSymlink, b.in("dev/ptmx"), devpts::kPtmxLink, 0, -1, false, "symlink in /dev"});
  b.mkdir("dev/shm", 01777);
  const char* tmp_opts = b.str("mode=1777,size=" + std::to_string(spec.limits.tmp_bytes));
  b.add({Op::kTmpfs, b.in("dev/shm"), tmp_opts, MS_NOSUID | MS_NODEV | MS_NOEXEC, -1, false, "mount /dev/shm"});

  b.mkdir("tmp", 01777);
  b.add({Op::kTmpfs, b.in("tmp"), tmp_opts, MS_NOSUID | MS_NODEV, -1, false, "mount /tmp"});
  b.mkdir("workspace");
  if (ws_slot >= 0) b.add({Op::kAttach, b.in("workspace"), nullptr, 0, ws_slot, false, "mount /workspace"});
  else b.add({Op::kAttachWorkspace, b.in("workspace"), nullptr, 0, -1, false, "mount /workspace"});

  b.mkdir("proc", 0555);
  b.add({Op::kProc, b.in("proc"), nullptr, 0, -1, false, "mount /proc"});
  const char* dev_null = b.in("dev/null");
  for (const char* f : kProcMaskFiles)
    b.add({Op::kMaskFile, b.in(std::string("proc/") + f), dev_null, 0, -1, true, "mask /proc file"});
  for (const char* d : kProcMaskDirs)
    b.add({Op::kMaskDir, b.in(std::string("proc/") + d), nullptr, 0, -1, true, "mask /proc directory"});
  // The sandbox's own user namespace may create no further namespaces: a kernel-side
  // ceiling (ENOSPC) under the seccomp rule that already refuses them. Every other kind
  // needs CAP_SYS_ADMIN, which only a nested user namespace could grant. Not mnt: the
  // open_tree clones of the read-only binds count as mount namespaces; not cgroup: init
  // makes its own later. Before /proc/sys is made read-only. The caps on network and IPC
  // namespaces wait for the sandbox's own, which a helper makes beside these mounts
  // (netns.h): their sysctls are opened now and written through those descriptors after init
  // has joined them, at the very end, so that all of the mount work overlaps the helper's.
  for (const char* ns : {"user", "pid", "uts", "time"})
    b.add({Op::kSysctl, b.in(std::string("proc/sys/user/max_") + ns + "_namespaces"), "0", 0, -1, true,
           "cap nested namespaces"});
  std::vector<int> deferred_caps;
  for (const char* ns : {"net", "ipc"}) {
    deferred_caps.push_back(b.newSlot());
    b.add({Op::kOpenSysctl, b.in(std::string("proc/sys/user/max_") + ns + "_namespaces"), nullptr, 0,
           deferred_caps.back(), false, "cap nested namespaces"});
  }
  for (const char* r : kProcReadOnly)
    b.add({Op::kBindSelfRo, b.in(std::string("proc/") + r), nullptr, 0, -1, true, "make /proc entry read-only"});

  // Parents before what lies beneath them (a path sorts before its descendants), whatever the
  // order on the command line: --ro-bind A:/d/sub given before --ro-bind B:/d would otherwise
  // be covered by /d and silently gone.
  std::stable_sort(extra.begin(), extra.end(), [](const Bound& x, const Bound& y) { return x.rel < y.rel; });
  for (size_t i = 0; i < extra.size(); ++i) {
    const Bound& e = extra[i];
    // mkdir -p for the target's parents: the new root holds only what this plan made, so
    // no component can be a symlink planted by anyone else.
    for (size_t pos = e.rel.find('/'); pos != std::string::npos; pos = e.rel.find('/', pos + 1))
      b.mkdir(e.rel.substr(0, pos));
    // Beneath another --ro-bind the mount point is in that read-only host tree: it must exist.
    bool nested = false;
    for (size_t j = 0; j < i; ++j)
      nested = nested || (extra[j].dir && e.rel.size() > extra[j].rel.size() && e.rel.starts_with(extra[j].rel) &&
                          e.rel[extra[j].rel.size()] == '/');
    b.attach(e.slot, b.in(e.rel), e.dir,
             nested ? "mount --ro-bind inside another --ro-bind (its mount point must exist in that host directory)"
                    : "mount --ro-bind");
  }

  b.add({Op::kSetReadOnly, b.str(plan.root), nullptr, 0, -1, false, "make the new root read-only"});
  b.add({Op::kPivot, b.str(plan.root), nullptr, 0, -1, false, "pivot_root"});
  b.add({Op::kCallback, nullptr, nullptr, 0, -1, false, "join the network and IPC namespaces"});
  for (int slot : deferred_caps) b.add({Op::kWriteSlot, nullptr, "0", 0, slot, false, "cap nested namespaces"});
  return plan;
}

int makeDetachedTmpfs(const char* size_option) {
  int fs = mountapi::fsOpen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) return -errno;
  int err = 0;
  const char* eq = size_option;
  while (*eq && *eq != '=') ++eq;
  if (mountapi::fsConfig(fs, FSCONFIG_SET_STRING, "size", eq + 1, 0) != 0 ||
      mountapi::fsConfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) != 0 ||
      mountapi::fsConfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
    err = errno;
  int mnt = err ? -1 : mountapi::fsMount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
  if (!err && mnt < 0) err = errno;
  ::close(fs);
  return err ? -err : mnt;
}

namespace {

int writeAll(const char* path, const char* text, mode_t mode) {
  int fd = ::open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return errno;
  size_t len = 0;
  while (text[len]) ++len;
  int err = 0;
  while (len > 0) {
    ssize_t n = ::write(fd, text, len);
    if (n <= 0) { err = n < 0 ? errno : EIO; break; }
    text += n;
    len -= static_cast<size_t>(n);
  }
  ::close(fd);
  return err;
}

int cloneOnto(const char* source, const char* target, uint64_t attrs) {
  int fd = mountapi::openTree(AT_FDCWD, source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
  if (fd < 0) return errno;
  int err = 0;
  if (attrs && mountapi::setAttr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, attrs) != 0) err = errno;
  if (!err && mountapi::moveMount(fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) != 0) err = errno;
  ::close(fd);
  return err;
}

// Writes a one-character sysctl value ("0") into an open /proc/sys file and closes it.
int writeSysctl(int fd, const char* value) {
  int err = ::write(fd, value, 1) == 1 ? 0 : errno;
  ::close(fd);
  return err;
}

int runStep(const Step& s, int ws_fd, int* slot_fds, const Callback& callback) {
  switch (s.op) {
    case Op::kMakePrivate:
      return ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 ? 0 : errno;
    case Op::kCloneTree: {
      int fd = mountapi::openTree(AT_FDCWD, s.a, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
      if (fd < 0) return errno;
      slot_fds[s.slot] = fd;
      // The parent refused namespace handles by name; a path swapped since (a symlink in it)
      // is caught here, on what was actually cloned: init is still in the caller's network and
      // IPC namespaces, so /proc/self/ns/* would name the host's.
      struct statfs fs;
      if (::fstatfs(fd, &fs) != 0) return errno;
      if (fs.f_type == NSFS_MAGIC) return EINVAL;
      if (s.flags && mountapi::setAttr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, s.flags) != 0) return errno;
      return 0;
    }
    case Op::kCheckReach:
      return ::faccessat(AT_FDCWD, s.a, F_OK, AT_EACCESS) == 0 ? 0 : errno;
    case Op::kRootTmpfs:
      return ::mount("tmpfs", s.a, "tmpfs", MS_NOSUID | MS_NODEV, s.b) == 0 ? 0 : errno;
    case Op::kMkdir:
      return ::mkdir(s.a, static_cast<mode_t>(s.flags)) == 0 || errno == EEXIST ? 0 : errno;
    case Op::kTouch: {
      int fd = ::open(s.a, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) return errno;
      ::close(fd);
      return 0;
    }
    case Op::kSymlink:
      return ::symlink(s.b, s.a) == 0 ? 0 : errno;
    case Op::kWriteFile:
      return writeAll(s.a, s.b, static_cast<mode_t>(s.flags));
    case Op::kAttach: {
      int fd = slot_fds[s.slot];
      int err = mountapi::moveMount(fd, "", AT_FDCWD, s.a, MOVE_MOUNT_F_EMPTY_PATH) == 0 ? 0 : errno;
      ::close(fd);
      slot_fds[s.slot] = -1;
      return err;
    }
    case Op::kTmpfs:
      return ::mount("tmpfs", s.a, "tmpfs", s.flags, s.b) == 0 ? 0 : errno;
    case Op::kProc:
      return ::mount("proc", s.a, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0 ? 0 : errno;
    case Op::kSysctl: {
      int fd = ::open(s.a, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
      return fd < 0 ? errno : writeSysctl(fd, s.b);
    }
    case Op::kBindSelfRo:
      return cloneOnto(s.a, s.a, kRo | MOUNT_ATTR_NOEXEC);
    case Op::kMaskFile:
      return ::mount(s.b, s.a, nullptr, MS_BIND, nullptr) == 0 ? 0 : errno;
    case Op::kMaskDir:
      return ::mount("tmpfs", s.a, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0555,size=4k") == 0
                 ? 0 : errno;
    case Op::kSetReadOnly:
      return mountapi::setAttr(AT_FDCWD, s.a, 0, MOUNT_ATTR_RDONLY) == 0 ? 0 : errno;
    case Op::kAttachWorkspace:
      return mountapi::moveMount(ws_fd, "", AT_FDCWD, s.a, MOVE_MOUNT_F_EMPTY_PATH) == 0 ? 0 : errno;
    case Op::kPivot:
      // pivot_root(".", ".") stacks the old root under the new one at "/"; detaching it
      // leaves no path back to the host's tree (the bwrap/runc idiom, no put_old dir).
      if (::chdir(s.a) != 0) return errno;
      if (::syscall(SYS_pivot_root, ".", ".") != 0) return errno;
      if (::umount2(".", MNT_DETACH) != 0) return errno;
      return ::chdir("/") == 0 ? 0 : errno;
    case Op::kCallback:
      return callback.fn ? callback.fn(callback.arg) : EINVAL;  // a plan step nobody runs is a failure
    case Op::kOpenSysctl: {
      int fd = ::open(s.a, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) return errno;
      slot_fds[s.slot] = fd;
      return 0;
    }
    case Op::kDevpts:
      return devpts::mountInstance(s.a);
    case Op::kWriteSlot: {
      int fd = slot_fds[s.slot];
      slot_fds[s.slot] = -1;
      return writeSysctl(fd, s.b);
    }
  }
  return EINVAL;
}

}  // namespace

int execute(const Plan& plan, size_t begin, size_t end, int ws_fd, int* slot_fds, size_t* failed, uint64_t* stamps,
            Callback callback) {
  for (size_t i = begin; i < end && i < plan.steps.size(); ++i) {
    int err = runStep(plan.steps[i], ws_fd, slot_fds, callback);
    if (stamps) {
      timespec ts;
      ::clock_gettime(CLOCK_MONOTONIC, &ts);
      stamps[i] = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
    }
    if (err == ENOENT && plan.steps[i].optional) continue;
    if (err != 0) {
      *failed = i;
      return err;
    }
  }
  return 0;
}

}  // namespace corral::sandbox::mountns
