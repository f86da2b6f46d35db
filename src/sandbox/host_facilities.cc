// SPDX-License-Identifier: Apache-2.0
// Host facility probes for `corral doctor`.
#include "sandbox/host_facilities.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sandbox/landlock.h"

namespace corral::sandbox {
namespace {

std::string readFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// A child in fresh user, mount, pid, net, ipc and uts namespaces that exits at once: the
// same clone a sandbox needs, so a refusal here is exactly the one `exec` would hit.
Facility probeNamespaces() {
  Facility f{"user namespaces", false, true, ""};
  long pid = ::syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                                      CLONE_NEWUTS | SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (pid == 0) ::_exit(0);
  if (pid > 0) {
    int status = 0;
    ::waitpid(static_cast<pid_t>(pid), &status, 0);
    f.available = true;
    f.detail = "user, mount, pid, net, ipc, uts namespaces can be created by uid " + std::to_string(::getuid());
    return f;
  }
  int err = errno;
  f.detail = std::string("clone with new namespaces failed: ") + std::strerror(err);
  std::string max_userns = readFirstLine("/proc/sys/user/max_user_namespaces");
  std::string debian = readFirstLine("/proc/sys/kernel/unprivileged_userns_clone");
  std::string apparmor = readFirstLine("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
  if (max_userns == "0") f.detail += "; user.max_user_namespaces is 0 (fix: sysctl -w user.max_user_namespaces=15000)";
  if (debian == "0") f.detail += "; kernel.unprivileged_userns_clone is 0 (fix: sysctl -w kernel.unprivileged_userns_clone=1)";
  if (apparmor == "1")
    f.detail += "; AppArmor restricts unprivileged user namespaces (fix: an AppArmor profile for corral with 'userns,', "
                "or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0)";
  if (underSeccompFilter())
    f.detail += "; " + seccompBlockHint();
  else if (max_userns != "0" && debian != "0" && apparmor != "1")
    f.detail += "; inside a container? seccomp or a missing CAP_SYS_ADMIN in the outer runtime can forbid it "
                "(Docker: --security-opt seccomp=unconfined, or run corral on the host)";
  return f;
}

// Why a system call answered ENOSYS: an old kernel, or (on a kernel that has it) a seccomp
// filter such as a container runtime's default profile. The second is the usual case, and
// "upgrade your kernel" would send the user the wrong way.
std::string missingCall(const char* call, int major, int minor) {
  if (kernelAtLeast(major, minor))
    return std::string(call) + " refused (ENOSYS) although this kernel has it: " + seccompBlockHint();
  return std::string(call) + " missing: Linux " + std::to_string(major) + "." + std::to_string(minor) +
         " or newer is needed";
}

Facility probeMountApi() {
  Facility f{"new mount API", false, true, ""};
  // mount_setattr (5.12) is the newest call corral needs; EBADF means it exists.
  long r = ::syscall(SYS_mount_setattr, -1, "", 0, nullptr, 0);
  f.available = r < 0 && errno != ENOSYS;
  f.detail = f.available ? "open_tree, move_mount, mount_setattr, fsopen" : missingCall("mount_setattr", 5, 12);
  return f;
}

Facility probeSeccomp() {
  Facility f{"seccomp", false, true, ""};
  f.available = ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
  f.detail = f.available ? "filter mode (libseccomp " + std::string("2.5") + ")" : "prctl(PR_GET_SECCOMP) failed: kernel without CONFIG_SECCOMP_FILTER";
  return f;
}

Facility probeClone3() {
  Facility f{"clone3 + pidfd", false, true, ""};
  long r = ::syscall(SYS_clone3, nullptr, 0);
  f.available = r < 0 && errno != ENOSYS;
  f.detail = f.available ? "clone3 with CLONE_PIDFD (Linux 5.5+)" : missingCall("clone3", 5, 5);
  return f;
}

Facility probeKvm() {
  Facility f{"/dev/kvm", false, false, ""};
  int fd = ::open("/dev/kvm", O_RDWR | O_CLOEXEC);
  f.available = fd >= 0;
  f.detail = f.available ? "openable read-write (for the microVM backend, not used by exec)"
                         : std::string("not usable: ") + std::strerror(errno) + " (only the future microVM backend needs it)";
  if (fd >= 0) ::close(fd);
  return f;
}

Facility probeOverlay() {
  Facility f{"overlayfs", false, false, ""};
  std::ifstream in("/proc/filesystems");
  std::stringstream ss;
  ss << in.rdbuf();
  f.available = ss.str().find("\toverlay\n") != std::string::npos;
  f.detail = f.available ? "listed in /proc/filesystems (not used yet: /workspace is a staged tmpfs copy)"
                         : "not listed in /proc/filesystems (not needed)";
  return f;
}

}  // namespace

bool kernelAtLeast(int major, int minor) {
  utsname u{};
  if (::uname(&u) != 0) return false;
  char* end = nullptr;
  const long ma = std::strtol(u.release, &end, 10);
  if (end == u.release || *end != '.') return false;
  const char* rest = end + 1;
  const long mi = std::strtol(rest, &end, 10);
  if (end == rest) return false;
  return ma > major || (ma == major && mi >= minor);
}

bool underSeccompFilter() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Seccomp:", 0) == 0) return line.find('2') != std::string::npos;
  return false;
}

std::string seccompBlockHint() {
  return std::string(underSeccompFilter() ? "corral itself runs under a seccomp filter (Seccomp: 2 in /proc/self/status), "
                              : "a seccomp filter blocks it, ") +
         "as a container runtime's default profile does (Docker, Podman: --security-opt seccomp=unconfined "
         "or a profile that allows clone3, unshare and the mount API; or run corral on the host)";
}

HostFacilities probeHost() {
  HostFacilities h;
  utsname u{};
  ::uname(&u);
  h.facilities.push_back({"kernel", true, false, std::string(u.release)});
  h.facilities.push_back(probeNamespaces());
  h.facilities.push_back(probeClone3());
  h.facilities.push_back(probeMountApi());
  h.facilities.push_back(probeSeccomp());
  h.landlock_abi = landlock::abiVersion();
  h.facilities.push_back({"landlock", h.landlock_abi > 0, false,
                          h.landlock_abi > 0 ? "ABI " + std::to_string(h.landlock_abi) + " (defence in depth on every run)"
                                             : "absent or disabled (add 'landlock' to the lsm= boot parameter); runs go on without it"});
  h.cgroups = cgroup::detect();
  h.facilities.push_back(probeKvm());
  h.facilities.push_back(probeOverlay());
  return h;
}

}  // namespace corral::sandbox
