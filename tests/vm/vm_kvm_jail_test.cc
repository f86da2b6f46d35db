// SPDX-License-Identifier: Apache-2.0
// Claim vm.kvm-in-jail: under KVM, QEMU's jail (vm/qemu_jail.h, the spec a run uses) gets
// /dev/kvm and nothing else of the host's /dev, and QEMU in it really opens a KVM VM. This
// host's KVM cannot boot a guest, but it creates VMs, which is all the jail has to allow.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "base/unique_fd.h"
#include "harness.h"
#include "sandbox/linux_backend.h"
#include "vm/accel.h"
#include "vm/qemu_jail.h"
#include "vm/vm_options.h"

namespace corral::testing {
namespace {

struct Jailed {
  int status = -1;  // the jail's exit code (125: corral refused to build it)
  std::string out, err;
};

// Runs the spec with sandbox::runLinux in a child process (as the jailer does), feeding it
// `input` and collecting what it prints.
Jailed runJailed(sandbox::SandboxSpec spec, const std::string& input) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return {};
  const pid_t child = ::fork();
  if (child == 0) {
    spec.stdio = {::fcntl(in[0], F_DUPFD_CLOEXEC, 3), ::fcntl(out[1], F_DUPFD_CLOEXEC, 3), ::fcntl(err[1], F_DUPFD_CLOEXEC, 3)};
    auto r = sandbox::runLinux(spec, {});
    if (!r) {
      const std::string m = "jail: " + r.error().message() + "\n";
      (void)!::write(err[1], m.data(), m.size());
      ::_exit(125);
    }
    ::_exit(r->exit_code & 0xff);
  }
  UniqueFd in_w(in[1]), out_r(out[0]), err_r(err[0]);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  (void)!::write(in_w.get(), input.data(), input.size());  // small: fits the pipe
  in_w.reset();
  Jailed j;
  pollfd fds[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
  char buf[4096];
  for (int open = 2; open > 0;) {
    if (::poll(fds, 2, 120'000) <= 0) break;  // generous: QEMU starts slowly on a loaded host
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? j.out : j.err).append(buf, static_cast<size_t>(n));
      } else {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  ::kill(child, SIGKILL);  // a no-op when it is done; a hung QEMU does not hang the test
  int st = 0;
  ::waitpid(child, &st, 0);
  j.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return j;
}

// Listing the jail's /dev needs only the node; opening it needs the caller's access to it.
std::string skipWhyNoKvmNode() { return ::access("/dev/kvm", F_OK) == 0 ? "" : "this host has no /dev/kvm"; }

std::string skipWhyNoKvmAccess() {
  if (::access("/dev/kvm", F_OK) != 0) return "this host has no /dev/kvm";
  if (::access("/dev/kvm", R_OK | W_OK) != 0)
    return "uid " + std::to_string(::getuid()) + " cannot open /dev/kvm (rootless QEMU under KVM needs access to it, e.g. the kvm group)";
  if (vm::probeAccel().qemu.empty()) return "no QEMU here (scripts/bootstrap.sh installs qemu-system-x86)";
  return "";
}

// A jail as a run builds it, around placeholder boot files: the tests replace QEMU's argv.
struct Jail {
  TempDir dir{"vm-kvm-jail"};
  vm::JailFiles files;
  explicit Jail(bool kvm) {
    for (const char* f : {"kernel", "initrd", "rootfs"}) dir.write(f, "x");
    ::mkdir((dir / "disk").c_str(), 0755);
    files = {vm::probeAccel().qemu, dir / "kernel", dir / "initrd", dir / "rootfs", dir / "disk", std::nullopt};
    if (kvm) {
      auto node = vm::kvmNode(dir.path());
      if (node) files.kvm_node = *node;
      else ADD_FAILURE() << node.error().message();
    }
  }
  sandbox::SandboxSpec spec(std::vector<std::string> argv) const {
    sandbox::SandboxSpec s = vm::qemuJailSpec(files, vm::VmOptions{}, 8ull << 20, std::chrono::minutes(2), 1ull << 30);
    s.argv = std::move(argv);
    return s;
  }
};

std::set<std::string> lines(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.insert(l);
  return out;
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const auto& e : s) out += e + " ";
  return out;
}

TEST(VmKvmInJail, JailDevHasKvmAndNothingElseOfTheHost) {
  if (const std::string why = skipWhyNoKvmNode(); !why.empty()) GTEST_SKIP() << why;
  const std::string list = "ls -A /dev; echo @@; stat -c '%F %t:%T' /dev/kvm";
  Jail kvm(true), tcg(false);
  Jailed with = runJailed(kvm.spec({"/bin/sh", "-c", list}), "");
  Jailed without = runJailed(tcg.spec({"/bin/sh", "-c", list}), "");
  ASSERT_EQ(with.status, 0) << with.err;
  const std::string with_dev = with.out.substr(0, with.out.find("@@"));
  const std::string without_dev = without.out.substr(0, without.out.find("@@"));
  std::set<std::string> added, removed;
  const std::set<std::string> a = lines(with_dev), b = lines(without_dev);
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(added, added.end()));
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::inserter(removed, removed.end()));
  EXPECT_EQ(added, std::set<std::string>{"kvm"}) << claim("vm.kvm-in-jail", "the KVM jail's /dev adds " + joined(added));
  EXPECT_TRUE(removed.empty()) << joined(removed);
  EXPECT_NE(with.out.find("character special file a:e8"), std::string::npos) << claim("vm.kvm-in-jail", "/dev/kvm is not 10:232: " + with.out);
  // Control: the TCG jail (the one this host's runs use) has no kvm, so the check can fail.
  EXPECT_EQ(b.count("kvm"), 0u) << "control: the TCG jail has /dev/kvm too" << without.out;
  EXPECT_NE(without.err.find("No such file"), std::string::npos) << without.out << without.err;
  // Every other entry is one the namespace sandbox always has.
  for (const std::string& e : a)
    EXPECT_TRUE((std::set<std::string>{"null", "zero", "full", "random", "urandom", "kvm", "fd", "stdin", "stdout", "stderr",
                                       "pts", "ptmx", "shm"})
                    .count(e))
        << claim("vm.kvm-in-jail", "the jail's /dev has " + e);
}

// QEMU in the jail, with its own -sandbox, really creates a KVM VM: QMP's query-kvm says
// enabled. -S: no guest code runs (this host's KVM could not run a stock kernel anyway).
TEST(VmKvmInJail, QemuInTheJailOpensKvm) {
  if (const std::string why = skipWhyNoKvmAccess(); !why.empty()) GTEST_SKIP() << why;
  const std::string qemu = vm::probeAccel().qemu;
  const std::vector<std::string> argv = {qemu, "-M", "microvm", "-nodefaults", "-no-user-config", "-display", "none", "-S",
                                         "-accel", "kvm", "-m", "128M",
                                         "-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
                                         "-qmp", "stdio"};
  const std::string qmp = "{\"execute\":\"qmp_capabilities\"}\n{\"execute\":\"query-kvm\"}\n{\"execute\":\"quit\"}\n";
  Jail kvm(true), tcg(false);
  Jailed with = runJailed(kvm.spec(argv), qmp);
  EXPECT_NE(with.out.find("\"enabled\": true"), std::string::npos)
      << claim("vm.kvm-in-jail", "QEMU in the KVM jail did not get KVM") << "\nstdout: " << with.out << "\nstderr: " << with.err;
  // Control: the same QEMU in the jail without the node cannot open KVM at all.
  Jailed without = runJailed(tcg.spec(argv), qmp);
  EXPECT_EQ(without.out.find("\"enabled\": true"), std::string::npos) << "control: QEMU got KVM without /dev/kvm" << without.out;
  EXPECT_NE(without.err.find("kvm"), std::string::npos) << "control: QEMU did not fail on KVM: " << without.err;
}

TEST(VmKvmInJail, QemuUsesKvmExactlyWhenTheJailHasTheNode) {
  Jail tcg(false);
  sandbox::SandboxSpec t = vm::qemuJailSpec(tcg.files, vm::VmOptions{}, 8ull << 20, std::chrono::minutes(1), 1ull << 30);
  EXPECT_FALSE(t.kvm_device.has_value());
  EXPECT_NE(std::find(t.argv.begin(), t.argv.end(), "tcg,tb-size=64"), t.argv.end());
  vm::JailFiles k = tcg.files;
  k.kvm_node = "/dev/kvm";
  sandbox::SandboxSpec s = vm::qemuJailSpec(k, vm::VmOptions{}, 8ull << 20, std::chrono::minutes(1), 1ull << 30);
  EXPECT_EQ(s.kvm_device, std::optional<std::string>("/dev/kvm"));
  EXPECT_NE(std::find(s.argv.begin(), s.argv.end(), "kvm"), s.argv.end()) << "a jail with /dev/kvm but QEMU not on KVM";
}

// The field brings in the KVM device only: another device node (or a file) is refused, and
// a command's own spec cannot ask for it under --backend vm.
TEST(VmKvmInJail, OnlyTheKvmDeviceAndOnlyForQemu) {
  for (const char* other : {"/dev/null", "/dev/tty", "/etc/passwd"}) {
    Jail j(false);
    j.files.kvm_node = other;
    Jailed r = runJailed(j.spec({"/bin/true"}), "");
    EXPECT_EQ(r.status, 125) << claim("vm.kvm-in-jail", std::string("a jail took ") + other + " as /dev/kvm") << r.err;
    EXPECT_NE(r.err.find("not char device 10:232"), std::string::npos) << r.err;
  }
  sandbox::SandboxSpec command;
  command.argv = {"/bin/true"};
  command.kvm_device = "/dev/kvm";
  EXPECT_FALSE(vm::checkSpec(command, vm::VmOptions{}, false).ok()) << claim("vm.kvm-in-jail", "a guest command's spec got /dev/kvm");
  // Control: a jail with no such field builds and runs.
  Jail plain(false);
  EXPECT_EQ(runJailed(plain.spec({"/bin/true"}), "").status, 0);
}

}  // namespace
}  // namespace corral::testing
