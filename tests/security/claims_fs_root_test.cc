// SPDX-License-Identifier: Apache-2.0
// Claims fs.fresh-root, fs.runtime-readonly, fs.minimal-etc, fs.dev-minimal.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "harness.h"

namespace corral::testing {
namespace {

constexpr char kTmpfsMagic[] = "0x1021994";

// Names in `got` that are not in `allowed`.
std::vector<std::string> extras(const std::vector<std::string>& got, const std::set<std::string>& allowed) {
  std::vector<std::string> out;
  for (const auto& g : got)
    if (!allowed.count(g)) out.push_back(g);
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// --- fs.fresh-root ---

TEST(FsFreshRoot, RootIsAFreshTmpfs) {
  RunResult r = runProbe({}, {"statfs", "/"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_EQ(r.probe().get("type"), kTmpfsMagic) << claim("fs.fresh-root", "/ is not a tmpfs") << r.describe();
}

TEST(FsFreshRoot, ControlHostRootIsNotATmpfs) {
  RunResult r = runHostProbe({"statfs", "/"});
  ASSERT_TRUE(probeDid(r));
  if (r.probe().get("type") == kTmpfsMagic) GTEST_SKIP() << "the host's own root is a tmpfs: the check cannot tell";
}

TEST(FsFreshRoot, HostPathsAreUnreachable) {
  TempDir dir("fresh-root");
  dir.write("sentinel", "host-only");
  const std::string sentinel = dir / "sentinel";
  std::vector<std::string> paths{sentinel,        "/proc/self/root" + sentinel, "/proc/1/root" + sentinel,
                                 "/.." + sentinel, "/proc/self/cwd/../.." + sentinel,
                                 "/root",         "/home",                      "/var",
                                 "/sys",          "/boot",                      "/srv",
                                 "/mnt",          "/run",                       corralBin(),
                                 CORRAL_PROBE};
  int checked = 0;
  for (const auto& path : paths) {
    if (!probeDid(runHostProbe({"stat", path}))) continue;  // the host lacks it: no control
    ++checked;
    RunResult r = runProbe({}, {"stat", path});
    EXPECT_TRUE(probeRefused(r)) << claim("fs.fresh-root", "host path " + path + " is reachable inside");
  }
  EXPECT_GE(checked, 3) << "control: the host itself should see the sentinel and the build tree";
}

// Mount points a sandbox may have: its own tmpfs mounts, the runtime, masks and --ro-bind targets.
bool allowedMountPoint(const std::string& m) {
  static const std::set<std::string> kExact{"/",         "/usr",       "/workspace", "/tmp",       "/proc",
                                            "/dev",      "/dev/shm",   "/dev/null",  "/dev/zero",  "/dev/full",
                                            "/dev/random", "/dev/urandom", "/dev/pts", "/bin",      "/sbin",
                                            "/lib",      "/lib32",     "/lib64",     "/libx32",    "/etc"};
  if (kExact.count(m)) return true;
  for (const char* prefix : {"/etc/", "/proc/", "/opt/"})
    if (m.rfind(prefix, 0) == 0) return true;
  return false;
}

TEST(FsFreshRoot, MountTableHoldsNoHostMounts) {
  RunResult r = runProbe({}, {"mountinfo"});
  ASSERT_TRUE(probeDid(r));
  std::vector<std::string> bad;
  for (const auto& m : r.probe().list("mounts"))
    if (!allowedMountPoint(m)) bad.push_back(m);
  EXPECT_TRUE(bad.empty()) << claim("fs.fresh-root", "unexpected mounts inside: " + join(bad)) << r.describe();
}

TEST(FsFreshRoot, ControlHostMountTableHasOtherMounts) {
  RunResult r = runHostProbe({"mountinfo"});
  ASSERT_TRUE(probeDid(r));
  auto mounts = r.probe().list("mounts");
  EXPECT_TRUE(std::any_of(mounts.begin(), mounts.end(), [](const auto& m) { return !allowedMountPoint(m); }))
      << "the host's mount table passes the filter too, so the test above could never fail" << r.describe();
}

// --- fs.runtime-readonly ---

const char* const kRuntimeDirs[] = {"/usr", "/usr/bin", "/usr/lib", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/etc/ssl"};

TEST(FsRuntimeReadonly, CreatingAFileFailsWithErofs) {
  for (const char* dir : kRuntimeDirs) {
    std::string path = std::string(dir) + "/" + uniqueName("corral-write");
    RunResult r = runProbe({}, {"create", path});
    EXPECT_TRUE(probeRefused(r, {"EROFS"})) << claim("fs.runtime-readonly", "create " + path + " not refused as read-only");
  }
}

TEST(FsRuntimeReadonly, MountsAreReadOnly) {
  for (const char* dir : kRuntimeDirs) {
    RunResult r = runProbe({}, {"statfs", dir});
    ASSERT_TRUE(probeDid(r));
    EXPECT_EQ(r.probe().get("ro"), "1") << claim("fs.runtime-readonly", std::string(dir) + " is not read-only") << r.describe();
  }
}

TEST(FsRuntimeReadonly, ExistingFilesCannotBeOpenedForWrite) {
  for (const char* path : {"/usr/bin/env", "/bin/sh", "/etc/passwd", "/etc/hosts", "/etc/ld.so.cache"}) {
    RunResult r = runProbe({}, {"open-rdwr", path});
    EXPECT_TRUE(probeRefused(r, {"EROFS", "EACCES"})) << claim("fs.runtime-readonly", std::string(path) + " opened for write");
  }
}

TEST(FsRuntimeReadonly, ControlWorkspaceIsWritableAndHostUsrIsNotReadOnly) {
  EXPECT_TRUE(probeDid(runProbe({}, {"create", "/workspace/ok"}))) << "the probe cannot create a file anywhere";
  RunResult host = runHostProbe({"statfs", "/usr"});
  ASSERT_TRUE(probeDid(host));
  EXPECT_EQ(host.probe().get("ro"), "0") << "the host's /usr is read-only itself: the mount check cannot tell";
}

// --- fs.minimal-etc ---

const std::set<std::string> kEtcAllowed{"passwd",      "group", "hosts",        "nsswitch.conf", "ld.so.cache",
                                        "ssl",         "alternatives", "services", "protocols"};

// Debian's OpenJDK configuration directories (/etc/java-17-openjdk, ...), bound in read-only.
bool isJdkConfig(const std::string& name) { return name.starts_with("java-") && name.ends_with("-openjdk"); }

TEST(FsMinimalEtc, EtcHoldsOnlyGeneratedFilesAndRuntimeLinks) {
  RunResult r = runProbe({}, {"listdir", "/etc"});
  ASSERT_TRUE(probeDid(r));
  auto bad = extras(r.probe().list("entries"), kEtcAllowed);
  std::erase_if(bad, isJdkConfig);
  EXPECT_TRUE(bad.empty()) << claim("fs.minimal-etc", "unexpected /etc entries: " + join(bad)) << r.describe();
}

TEST(FsMinimalEtc, ShadowAndResolvConfAreAbsent) {
  for (const char* path : {"/etc/shadow", "/etc/gshadow", "/etc/resolv.conf", "/etc/ssh", "/etc/sudoers"}) {
    RunResult r = runProbe({}, {"stat", path});
    EXPECT_TRUE(probeRefused(r, {"ENOENT"})) << claim("fs.minimal-etc", std::string(path) + " exists inside");
  }
}

TEST(FsMinimalEtc, PasswdListsOnlyGeneratedUsers) {
  RunResult r = runProbe({}, {"read", "/etc/passwd"});
  ASSERT_TRUE(probeDid(r));
  std::istringstream in(r.probe().get("data"));
  for (std::string line; std::getline(in, line);) {
    std::string user = line.substr(0, line.find(':'));
    EXPECT_TRUE(user == "root" || user == "corral" || user == "nobody")
        << claim("fs.minimal-etc", "host user '" + user + "' in /etc/passwd") << r.describe();
  }
  EXPECT_NE(r.probe().get("data").find("corral:x:1000:1000:"), std::string::npos) << r.describe();
}

// netbase's tables are bound in read-only: getservbyname and getprotobyname work, and the
// files cannot be changed from inside.
TEST(FsMinimalEtc, ServicesAndProtocolsAreTheHostsReadOnly) {
  if (::access("/etc/services", R_OK) != 0 || ::access("/etc/protocols", R_OK) != 0)
    GTEST_SKIP() << "the host has no /etc/services or /etc/protocols (netbase; scripts/bootstrap.sh installs it)";
  const char script[] =
      "import os, socket\n"
      "out = ['ok', 'https=%d' % socket.getservbyname('https', 'tcp'), 'tcp=%d' % socket.getprotobyname('tcp')]\n"
      "for f in ('/etc/services', '/etc/protocols'):\n"
      "    try:\n"
      "        open(f, 'a').close(); out.append('writable')\n"
      "    except OSError as e:\n"
      "        out.append('%s=%d' % (f.split('/')[-1], e.errno))\n"
      "    out.append('%s_ro=%d' % (f.split('/')[-1], bool(os.statvfs(f).f_flag & os.ST_RDONLY)))\n"
      "print(' '.join(out))\n";
  RunResult r = runCorral({}, {"/usr/bin/python3", "-c", script});
  ASSERT_TRUE(probeDid(r)) << "getservbyname fails inside" << r.describe();
  EXPECT_EQ(r.probe().get("https"), "443") << r.describe();
  EXPECT_EQ(r.probe().get("tcp"), "6") << r.describe();
  EXPECT_FALSE(r.probe().word("writable")) << claim("fs.minimal-etc", "/etc/services or /etc/protocols is writable") << r.describe();
  EXPECT_EQ(r.probe().get("services_ro"), "1") << claim("fs.minimal-etc", "/etc/services is not a read-only mount") << r.describe();
  EXPECT_EQ(r.probe().get("protocols_ro"), "1") << claim("fs.minimal-etc", "/etc/protocols is not a read-only mount") << r.describe();
}

// The JVM finds java.security through a link into /etc/java-N-openjdk: the directory is
// there, read-only, so Java starts (and cannot be reconfigured from inside).
TEST(FsMinimalEtc, OpenJdkConfigIsTheHostsReadOnly) {
  RunResult host = runHostProbe({"listdir", "/etc"});
  ASSERT_TRUE(probeDid(host));
  std::string dir;
  for (const std::string& name : host.probe().list("entries"))
    if (isJdkConfig(name) && ::access(("/etc/" + name + "/security/java.security").c_str(), R_OK) == 0) {
      dir = "/etc/" + name;
      break;
    }
  if (dir.empty()) GTEST_SKIP() << "the host has no Debian OpenJDK configuration in /etc";
  RunResult r = runProbe({}, {"statfs", dir + "/security/java.security"});
  ASSERT_TRUE(probeDid(r)) << claim("fs.minimal-etc", dir + " is missing inside: Java cannot start") << r.describe();
  EXPECT_EQ(r.probe().get("ro"), "1") << claim("fs.minimal-etc", dir + " is not a read-only mount") << r.describe();
  EXPECT_TRUE(probeRefused(runProbe({}, {"create", dir + "/security/planted"}), {"EROFS", "EACCES", "EPERM"}))
      << claim("fs.minimal-etc", "a file can be created in " + dir);
}

TEST(FsMinimalEtc, ControlHostEtcHasMore) {
  RunResult r = runHostProbe({"listdir", "/etc"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_FALSE(extras(r.probe().list("entries"), kEtcAllowed).empty()) << r.describe();
  EXPECT_TRUE(probeDid(runHostProbe({"stat", "/etc/shadow"}))) << "host has no /etc/shadow to hide";
}

// --- fs.dev-minimal ---

const std::set<std::string> kDevAllowed{"null",   "zero",   "full",   "random", "urandom", "fd",
                                        "stdin",  "stdout", "stderr", "shm",    "pts",     "ptmx"};

TEST(FsDevMinimal, DevHoldsOnlyTheAllowedNodes) {
  RunResult r = runProbe({}, {"listdir", "/dev"});
  ASSERT_TRUE(probeDid(r));
  auto bad = extras(r.probe().list("entries"), kDevAllowed);
  EXPECT_TRUE(bad.empty()) << claim("fs.dev-minimal", "unexpected /dev entries: " + join(bad)) << r.describe();
}

TEST(FsDevMinimal, ControlHostDevHasMore) {
  RunResult r = runHostProbe({"listdir", "/dev"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_FALSE(extras(r.probe().list("entries"), kDevAllowed).empty()) << r.describe();
}

TEST(FsDevMinimal, DevicesAreTheRealCharacterDevices) {
  const std::pair<const char*, const char*> kNodes[] = {
      {"/dev/null", "1:3"}, {"/dev/zero", "1:5"}, {"/dev/full", "1:7"}, {"/dev/random", "1:8"}, {"/dev/urandom", "1:9"}};
  for (auto [path, rdev] : kNodes) {
    RunResult r = runProbe({}, {"stat", path});
    ASSERT_TRUE(probeDid(r)) << path;
    EXPECT_EQ(r.probe().get("type"), "chr") << path << r.describe();
    EXPECT_EQ(r.probe().get("rdev"), rdev) << path << r.describe();
  }
}

TEST(FsDevMinimal, HostDevicesAreAbsent) {
  for (const char* path : {"/dev/kmsg", "/dev/mem", "/dev/vda", "/dev/tty", "/dev/console", "/dev/kvm", "/dev/tty0"}) {
    RunResult r = runProbe({}, {"stat", path});
    EXPECT_TRUE(probeRefused(r, {"ENOENT"})) << claim("fs.dev-minimal", std::string(path) + " exists inside");
  }
}

// Binding the host's /dev in (an operator mistake) must not hand out devices: binds are nodev.
TEST(FsDevMinimal, DevicesUnderARoBindAreUnusable) {
  const std::vector<std::string> bind{"--ro-bind", "/dev:/opt/hostdev"};
  RunResult fs = runProbe(bind, {"statfs", "/opt/hostdev"});
  ASSERT_TRUE(probeDid(fs));
  EXPECT_EQ(fs.probe().get("nodev"), "1") << claim("fs.dev-minimal", "a --ro-bind is not nodev") << fs.describe();
  for (const char* dev : {"/opt/hostdev/urandom", "/opt/hostdev/zero", "/opt/hostdev/kmsg"}) {
    EXPECT_TRUE(probeRefused(runProbe(bind, {"read", dev, "4"}))) << claim("fs.dev-minimal", std::string(dev) + " readable inside");
  }
  EXPECT_TRUE(probeDid(runHostProbe({"read", "/dev/urandom", "4"}))) << "control: the host device itself is readable";
}

TEST(FsDevMinimal, MknodIsRefused) {
  for (const char* path : {"/tmp/null", "/dev/shm/null", "/workspace/null"}) {
    RunResult r = runProbe({}, {"mknod", path});
    EXPECT_TRUE(probeRefused(r)) << claim("fs.dev-minimal", std::string("mknod made a device at ") + path);
  }
}

TEST(FsDevMinimal, RootControlMknodWorksOnHost) {
  CORRAL_REQUIRE_ROOT("only host root can mknod");
  TempDir dir("mknod");
  EXPECT_TRUE(probeDid(runHostProbe({"mknod", dir / "null"})));
}

}  // namespace
}  // namespace corral::testing
