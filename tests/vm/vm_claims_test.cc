// SPDX-License-Identifier: Apache-2.0
// Claims vm.*: what the two guest boots recorded (vm_setup.cc), judged claim by claim, and
// the refusals that need no boot. Each claim has a control that shows its check can fail.
#include <fstream>
#include <map>
#include <set>

#include "harness.h"
#include "vm_setup.h"

namespace corral::testing::vm {
namespace {

using Json = nlohmann::json;

std::string check(const Json& rec, const char* name) {
  return rec["checks"].contains(name) ? rec["checks"][name].get<std::string>() : "(not run)";
}
bool startsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// --- vm.no-host-filesystem ---

TEST(VmNoHostFilesystem, InVmHostSentinelAbsentAndNoSharedFileSystem) {
  CORRAL_VM_RECORD(rec, "battery");
  EXPECT_TRUE(startsWith(check(rec, "sentinel"), "errno=ENOENT")) << claim("vm.no-host-filesystem", "a host file was visible: " + check(rec, "sentinel"));
  EXPECT_TRUE(startsWith(check(rec, "hostdir"), "errno=ENOENT")) << claim("vm.no-host-filesystem", "a host dir was visible: " + check(rec, "hostdir"));
  for (const char* fstype : {" 9p ", " virtiofs ", " fuse", " nfs"})
    EXPECT_EQ(check(rec, "mounts").find(fstype), std::string::npos) << claim("vm.no-host-filesystem", std::string("a ") + fstype + " mount");
  for (const auto& t : rec["report"]["vm"]["guest_fs_types"]) {
    const std::string type = t.get<std::string>();
    EXPECT_TRUE(type != "9p" && type != "virtiofs" && type != "fuse") << claim("vm.no-host-filesystem", "guest mounted " + type);
  }
  EXPECT_TRUE(startsWith(check(rec, "in"), "staged-in")) << "the staged workspace did not arrive: " << check(rec, "in");
}

// Control: the same sentinel is readable on the host, and by the namespace backend when bound.
TEST(VmNoHostFilesystem, ControlSentinelVisibleWhenBoundIntoANamespaceSandbox) {
  TempDir host("vm-ctl");
  host.write("sentinel.txt", "x");
  RunResult r = runProbe({"--ro-bind", host.path() + ":/mnt/ctl"}, {"stat", "/mnt/ctl/sentinel.txt"});
  EXPECT_TRUE(probeDid(r)) << "control: the probe cannot see a bound host file, so the VM check proves nothing" << r.describe();
}

// --- vm.rootfs-readonly ---

TEST(VmRootfsReadonly, InVmRuntimeWritesFailAndTheDiskIsErofs) {
  CORRAL_VM_RECORD(rec, "battery");
  for (const char* c : {"usr_write", "bin_write"})
    EXPECT_TRUE(startsWith(check(rec, c), "errno=EROFS") || startsWith(check(rec, c), "errno=EACCES"))
        << claim("vm.rootfs-readonly", std::string(c) + ": " + check(rec, c));
  bool erofs = false;
  for (const auto& t : rec["report"]["vm"]["guest_fs_types"]) erofs = erofs || t == "erofs";
  EXPECT_TRUE(erofs) << claim("vm.rootfs-readonly", "the guest runtime is not on erofs (a file system Linux cannot write)");
  // Control: the workspace, in the same run, takes the same write.
  EXPECT_TRUE(startsWith(check(rec, "ws_write"), "ok")) << "control: /workspace write failed too: " << check(rec, "ws_write");
}

// --- vm.guest-devices-minimal ---

// virtio ids: 2 block, 3 console, 4 entropy. Anything else (1 net, 9 9p, 26 fs, 19 vsock...)
// or any PCI device is a device the guest was not meant to have.
::testing::AssertionResult onlyIntendedDevices(const Json& devices, const Json& pci) {
  std::multiset<std::string> got;
  for (const auto& d : devices) got.insert(d.get<std::string>());
  const std::multiset<std::string> want = {"0x0002", "0x0002", "0x0003", "0x0004"};
  if (got != want) return ::testing::AssertionFailure() << "virtio devices " << devices.dump();
  if (!pci.empty()) return ::testing::AssertionFailure() << "PCI devices " << pci.dump();
  return ::testing::AssertionSuccess();
}

TEST(VmGuestDevicesMinimal, InVmOnlyTwoDisksTheControlPortAndEntropy) {
  CORRAL_VM_RECORD(rec, "battery");
  EXPECT_TRUE(onlyIntendedDevices(rec["report"]["vm"]["guest_devices"], rec["report"]["vm"]["guest_pci_devices"]))
      << claim("vm.guest-devices-minimal", "unexpected guest devices");
  // Inside the command's own sandbox the devices are not even there to open.
  for (const char* c : {"vda", "vport", "sys_virtio"})
    EXPECT_TRUE(startsWith(check(rec, c), "errno=ENOENT")) << claim("vm.guest-devices-minimal", std::string(c) + ": " + check(rec, c));
}

TEST(VmGuestDevicesMinimal, ControlANetworkCardIsCaught) {
  EXPECT_FALSE(onlyIntendedDevices(Json::array({"0x0002", "0x0002", "0x0003", "0x0004", "0x0001"}), Json::array()));
  EXPECT_FALSE(onlyIntendedDevices(Json::array({"0x0002", "0x0002", "0x0003", "0x0004"}), Json::array({"0000:00:01.0"})));
}

// --- vm.no-host-network ---

TEST(VmNoHostNetwork, InVmHostListenersUnreachable) {
  CORRAL_VM_RECORD(rec, "battery");
  for (const char* c : {"net_gateway", "net_host", "net_loopback"})
    EXPECT_FALSE(startsWith(check(rec, c), "ok")) << claim("vm.no-host-network", std::string(c) + " connected: " + check(rec, c));
  EXPECT_FALSE(rec["listener_reached"].get<bool>()) << claim("vm.no-host-network", "a host listener got a connection");
  EXPECT_EQ(check(rec, "ifaces").find("eth"), std::string::npos) << claim("vm.no-host-network", "an interface: " + check(rec, "ifaces"));
}

TEST(VmNoHostNetwork, ControlTheListenerIsReachableFromTheHost) {
  TcpListener l("127.0.0.1");
  RunResult r = runHostProbe({"connect-tcp", "127.0.0.1", std::to_string(l.port())});
  EXPECT_TRUE(probeDid(r)) << "control: the host cannot reach its own listener" << r.describe();
}

// --- vm.command-unprivileged ---

TEST(VmCommandUnprivileged, InVmNonRootUidNoCapabilities) {
  CORRAL_VM_RECORD(rec, "battery");
  EXPECT_EQ(check(rec, "uid"), "1000\n") << claim("vm.command-unprivileged", "uid " + check(rec, "uid"));
  EXPECT_NE(check(rec, "caps").find("0000000000000000"), std::string::npos) << claim("vm.command-unprivileged", check(rec, "caps"));
  EXPECT_EQ(rec["report"].value("command_status", -1), 0) << rec["stderr"];
}

// --- vm.outputs-copy-back-checked (the hostile-guest half is in vm_host_test.cc) ---

TEST(VmOutputsCopyBackChecked, InVmSymlinkOutputRefusedAndNothingCopied) {
  CORRAL_VM_RECORD(rec, "battery");
  // As with the namespace backend: the run ends 125, the symlink is named, and outputs are
  // copied all or none, so the good file next to it stays behind too.
  EXPECT_EQ(rec["exit_code"], 125) << rec["stderr"];
  EXPECT_NE(rec["stderr"].get<std::string>().find("--output link.txt: refused: symlink"), std::string::npos)
      << claim("vm.outputs-copy-back-checked", "the symlink output was not refused: " + rec["stderr"].get<std::string>());
  EXPECT_FALSE(rec["link_txt_exists"].get<bool>()) << claim("vm.outputs-copy-back-checked", "a symlink output reached the host");
  EXPECT_EQ(rec["out_txt"], "") << claim("vm.outputs-copy-back-checked", "an output was copied although another was refused");
  std::map<std::string, std::string> status;
  for (const auto& o : rec["report"]["outputs"]) status[o.value("path", "")] = o.value("status", "");
  EXPECT_EQ(status, (std::map<std::string, std::string>{{"out.txt", "withheld"}, {"link.txt", "refused"}})) << rec["report"]["outputs"].dump();
}

// Control: the same kind of run with only the regular file declared brings it back. The file
// is what the command read on its stdin (about 150 KB, several frames): stdin reaches the guest.
TEST(VmOutputsCopyBackChecked, InVmControlRegularFileCopied) {
  CORRAL_VM_RECORD(rec, "outputs");
  EXPECT_EQ(rec["exit_code"], 0) << rec["stderr"];
  EXPECT_EQ(rec["out_txt"], "vm-output\n") << "the declared output did not come back";
  EXPECT_TRUE(rec["out_matches_stdin"].get<bool>()) << "the command did not read the caller's stdin, whole, in the VM";
  ASSERT_EQ(rec["report"]["outputs"].size(), 1u) << rec["report"].dump();
  EXPECT_EQ(rec["report"]["outputs"][0].value("status", ""), "copied");
}

// --- vm.accelerator-reported ---

TEST(VmAcceleratorReported, InVmReportNamesTheAcceleratorDoctorPredicts) {
  CORRAL_VM_RECORD(rec, "battery");
  RunResult d = run({corralBin(), "doctor", "--json"});
  Json doc = Json::parse(d.out, nullptr, false);
  const std::string state = doc["vm"].value("state", "");
  const std::string accel = rec["report"]["vm"].value("accelerator", "");
  EXPECT_EQ(accel, state == "kvm" ? "kvm" : "tcg") << claim("vm.accelerator-reported", "doctor says " + state + ", report " + accel);
  if (accel == "tcg") {
    EXPECT_NE(rec["stderr"].get<std::string>().find("accelerator=tcg"), std::string::npos)
        << claim("vm.accelerator-reported", "a TCG run did not say so on stderr");
  }
}

TEST(VmAcceleratorReported, TcgRefusedWithoutAllowWeakerKvm) {
  RunResult d = run({corralBin(), "doctor", "--json"});
  Json doc = Json::parse(d.out, nullptr, false);
  if (doc["vm"].value("state", "") != "tcg only") GTEST_SKIP() << "needs a host where KVM is unusable (this one: " << doc["vm"].dump() << ")";
  RunResult r = run(corralArgv({"--backend", "vm"}, {"/bin/echo", "ran"}, false));
  EXPECT_TRUE(refusedBeforeRun(r)) << claim("vm.accelerator-reported", "ran under TCG without --allow-weaker kvm") << r.describe();
  EXPECT_NE(r.err.find("--allow-weaker kvm"), std::string::npos) << r.describe();
}

// --- vm.unsupported-options-refused ---

TEST(VmUnsupportedOptionsRefused, EachRefusedBeforeAnythingRuns) {
  TempDir d("vm-refuse");
  for (const auto& opts : std::vector<std::vector<std::string>>{
           {"--ro-bind", d.path()}, {"--net", "proxy", "--allow", "tcp://127.0.0.1:22", "--ssh-key", d / "id_ed25519"}, {"--timing"}, {"--memory", "2G", "--vm-memory", "512M"},
           {"--vm-memory", "64M"}, {"--vm-cpus", "65"}, {"--workspace-size", "1M"}}) {
    std::vector<std::string> o = {"--backend", "vm", "--allow-weaker", "kvm"};
    o.insert(o.end(), opts.begin(), opts.end());
    RunResult r = run(corralArgv(o, {"/bin/echo", "ran"}, false));
    EXPECT_TRUE(refusedBeforeRun(r)) << claim("vm.unsupported-options-refused", "accepted " + opts.front()) << r.describe();
  }
  RunResult ns_only = run(corralArgv({"--vm-memory", "256M"}, {"/bin/echo", "ran"}, false));
  EXPECT_TRUE(refusedBeforeRun(ns_only)) << "--vm-memory without --backend vm was accepted" << ns_only.describe();
}

// --- vm.qemu-confined ---

TEST(VmQemuConfined, InVmQemuUnprivilegedFilteredAndIsolated) {
  CORRAL_VM_RECORD(rec, "killed");
  const Json& st = rec["status"];
  const std::string uid = st.value("Uid", "");
  EXPECT_TRUE(uid.find_first_of("123456789") != std::string::npos && !startsWith(uid, "0\t"))
      << claim("vm.qemu-confined", "QEMU runs as host uid " + uid);
  EXPECT_EQ(st.value("CapEff", ""), "0000000000000000") << claim("vm.qemu-confined", "QEMU has capabilities");
  EXPECT_EQ(st.value("NoNewPrivs", ""), "1") << claim("vm.qemu-confined", "no_new_privs off");
  EXPECT_EQ(st.value("Seccomp", ""), "2") << claim("vm.qemu-confined", "no seccomp filter on QEMU");
  for (const char* ns : {"user", "mnt", "pid", "net", "ipc"})
    EXPECT_NE(rec["ns"][ns]["qemu"], rec["ns"][ns]["host"]) << claim("vm.qemu-confined", std::string("QEMU shares the host's ") + ns + " namespace");
  EXPECT_NE(rec.value("cmdline", "").find("-sandbox on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"), std::string::npos)
      << claim("vm.qemu-confined", "QEMU's own -sandbox is off: " + rec.value("cmdline", ""));
  EXPECT_EQ(rec["cmdline"].get<std::string>().find("-netdev"), std::string::npos) << claim("vm.qemu-confined", "QEMU has a network");
  if (rec.contains("root_unreadable")) GTEST_SKIP() << "QEMU's root is not readable from here: " << rec["root_unreadable"];
  EXPECT_FALSE(rec["sees_host_etc_shadow"].get<bool>()) << claim("vm.qemu-confined", "QEMU sees the host's /etc/shadow");
  std::set<std::string> vm;
  for (const auto& e : rec["root_vm"]) vm.insert(e.get<std::string>());
  // A restored run (vm.snapshot-restore-unique) also has corral's QMP listener at /vm/qmp, a
  // socket QEMU connects to for the migration stream; only with -incoming on its command line.
  if (rec.value("cmdline", "").find("-incoming") != std::string::npos) vm.erase("qmp");
  EXPECT_EQ(vm, (std::set<std::string>{".", "..", "initrd", "kernel", "rootfs"})) << claim("vm.qemu-confined", "QEMU's /vm: " + rec["root_vm"].dump());
  for (const auto& e : rec["root"])
    EXPECT_TRUE(e != "home" && e != "root" && e != "work" && e != "boot") << claim("vm.qemu-confined", "QEMU sees host /" + e.get<std::string>());
}

// Control: the same status checks flag the test process itself (not confined) as a failure.
TEST(VmQemuConfined, ControlTheChecksFlagAnUnconfinedProcess) {
  std::ifstream in("/proc/self/status");
  std::string line, seccomp;
  while (std::getline(in, line))
    if (startsWith(line, "Seccomp:")) seccomp = line.substr(line.find_first_not_of(" \t", 8));
  EXPECT_NE(seccomp, "2") << "control: the test runner itself is under a seccomp filter; the check cannot tell";
}

// --- vm.no-qemu-survives ---

TEST(VmNoQemuSurvives, InVmQemuGoneAfterCorralIsKilled) {
  CORRAL_VM_RECORD(rec, "killed");
  EXPECT_TRUE(rec["ready"].get<bool>());
  EXPECT_EQ(rec["qemu_count"], 1) << "control: no QEMU was found under corral while it ran, so its absence after proves nothing";
  EXPECT_TRUE(rec["qemu_gone"].get<bool>()) << claim("vm.no-qemu-survives", "QEMU outlived a SIGKILLed corral");
}

// What a SIGKILL leaves behind, the run directory, goes with the next run (it is unlocked).
TEST(VmNoQemuSurvives, InVmRunDirectoryOfAKilledRunIsSwept) {
  CORRAL_VM_RECORD(rec, "killed");
  ASSERT_TRUE(rec["run_dir_found"].get<bool>()) << "the running corral held no run directory open";
  EXPECT_TRUE(rec["run_dir_left_by_kill"].get<bool>()) << "control: the kill left no directory behind, so the sweep proves nothing";
  EXPECT_EQ(rec["next_run_exit"], 125);
  EXPECT_TRUE(rec["run_dir_swept"].get<bool>()) << "the next run left a killed run's directory in TMPDIR";
}

}  // namespace
}  // namespace corral::testing::vm
