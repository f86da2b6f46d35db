// SPDX-License-Identifier: Apache-2.0
// Claims userns.*: non-root uid, no capabilities, no_new_privs, no nested namespaces.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <sstream>

#include "harness.h"

namespace corral::testing {
namespace {

constexpr char kZeroCaps[] = "0000000000000000";

// "inside:outside:count;" entries of a probe uid_map/gid_map field.
struct IdRange {
  unsigned long inside, outside, count;
};
std::vector<IdRange> parseMap(const std::string& field) {
  std::vector<IdRange> out;
  std::istringstream in(field);
  for (std::string entry; std::getline(in, entry, ';');) {
    IdRange r{};
    if (std::sscanf(entry.c_str(), "%lu:%lu:%lu", &r.inside, &r.outside, &r.count) == 3) out.push_back(r);
  }
  return out;
}

TEST(UsernsUnprivilegedUid, CommandRunsAsUid1000AndNeverAsHostRoot) {
  RunResult r = runProbe({}, {"ids"});
  ASSERT_TRUE(probeDid(r));
  ProbeLine p = r.probe();
  for (const char* key : {"uid", "euid", "suid", "gid", "egid", "sgid"})
    EXPECT_EQ(p.num(key), 1000) << claim("userns.unprivileged-uid", std::string(key) + " inside is not 1000") << r.describe();
  for (const char* key : {"uid_map", "gid_map"}) {
    auto ranges = parseMap(p.get(key));
    ASSERT_FALSE(ranges.empty()) << key << " unreadable inside" << r.describe();
    for (const auto& range : ranges) {
      EXPECT_NE(range.outside, 0u)
          << claim("userns.unprivileged-uid", std::string(key) + " maps onto host id 0") << r.describe();
      if (range.inside == 1000 && rootlessMode() && std::string(key) == "uid_map") {
        EXPECT_EQ(range.outside, getuid()) << "rootless: the caller's uid should map to 1000" << r.describe();
      }
    }
  }
}

// As root, init clones the fixed host sources (/usr, /etc/ssl/certs, ...) before its id maps
// exist, while it is still host uid 0, whose owner bits open root-only directories. The sandbox
// uid must not gain what it could not reach on the host: a source behind a directory only root
// may cross (here a 0700 directory bound over /etc/ssl in a private mount namespace) still
// fails the launch, as it did when the clones ran as the sandbox uid.
RunResult runWithEtcSslMode(mode_t mode, TempDir& dir) {
  std::filesystem::create_directories(dir / "ssl/certs");
  dir.write("ssl/certs/leak.pem", "SENTINEL-ROOT-ONLY\n");
  ::chmod((dir / "ssl").c_str(), mode);
  return run({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
              "mount --bind \"$1\" /etc/ssl && exec \"$0\" exec -- /bin/cat /etc/ssl/certs/leak.pem", corralBin(),
              dir / "ssl"});
}

TEST(UsernsUnprivilegedUid, RootAFixedSourceBehindARootOnlyDirectoryIsRefused) {
  if (!isRoot() || rootlessMode()) GTEST_SKIP() << "needs root: the uid 0 owner bits are the point";
  TempDir dir("rootonly");
  RunResult r = runWithEtcSslMode(0700, dir);
  EXPECT_EQ(r.out.find("SENTINEL-ROOT-ONLY"), std::string::npos)
      << claim("userns.unprivileged-uid", "a file behind a root-only directory was readable inside") << r.describe();
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.describe();
}

TEST(UsernsUnprivilegedUid, RootControlTheSameSourceWithSearchForOthersIsBoundIn) {
  if (!isRoot() || rootlessMode()) GTEST_SKIP() << "needs root";
  TempDir dir("rootonly");
  RunResult r = runWithEtcSslMode(0755, dir);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "SENTINEL-ROOT-ONLY\n") << "the bind over /etc/ssl did not reach the sandbox: the test above proves nothing";
}

// An operator-named --ro-bind under a directory only root may cross (/root/project): the path
// to it is walked as the caller, so the bind works; what lies inside is still read as the
// sandbox uid, so a root-only file or directory in it stays closed.
struct RootOnlyProject {
  TempDir outer{"rootonly-parent"};
  std::string project = outer / "project";
  RootOnlyProject() {
    std::filesystem::create_directories(project + "/private");
    outer.write("project/pub.txt", "PUBLIC\n", 0644);
    outer.write("project/secret.txt", "SENTINEL-ROOT-ONLY\n", 0600);
    outer.write("project/private/inner.txt", "SENTINEL-ROOT-ONLY\n", 0644);
    ::chmod((project + "/private").c_str(), 0700);
    ::chmod(outer.path().c_str(), 0700);
  }
  RunResult cat(const std::string& source) const {
    return runCorral({"--ro-bind", source + ":/src"},
                     {"/bin/sh", "-c", "cat /src/pub.txt; cat /src/secret.txt; cat /src/private/inner.txt; ls /src/private"});
  }
};

TEST(UsernsUnprivilegedUid, RootARoBindUnderARootOnlyDirectoryWorksButItsFilesAreCheckedAsTheSandboxUid) {
  if (!isRoot() || rootlessMode()) GTEST_SKIP() << "needs root: the uid 0 owner bits are the point";
  RootOnlyProject p;
  RunResult r = p.cat(p.project);
  EXPECT_NE(r.exit_code, 125) << "an operator-named --ro-bind under a root-only directory was refused" << r.describe();
  EXPECT_EQ(r.out, "PUBLIC\n") << claim("userns.unprivileged-uid", "a root-only file inside an --ro-bind was readable") << r.describe();
  EXPECT_NE(r.err.find("secret.txt: Permission denied"), std::string::npos) << r.describe();
  EXPECT_NE(r.err.find("private/inner.txt: Permission denied"), std::string::npos) << r.describe();
}

// Control: bound at the root-only directory itself, its own mode applies at the mount point.
TEST(UsernsUnprivilegedUid, RootControlTheRootOnlyDirectoryItselfStaysClosed) {
  if (!isRoot() || rootlessMode()) GTEST_SKIP() << "needs root";
  RootOnlyProject p;
  RunResult r = runCorral({"--ro-bind", p.outer.path() + ":/src"}, {"/bin/cat", "/src/project/pub.txt"});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.describe();
  RunResult host = run({"/bin/cat", p.project + "/secret.txt"});
  EXPECT_EQ(host.out, "SENTINEL-ROOT-ONLY\n") << "control: root on the host reads the file";
}

// The one case still refused: a directory on the way that root reaches only through
// CAP_DAC_OVERRIDE (another user's 0700 directory). One line that says why and what to do.
TEST(UsernsUnprivilegedUid, RootARoBindBehindAnotherUsersPrivateDirectoryIsRefusedWithTheReason) {
  if (!isRoot() || rootlessMode()) GTEST_SKIP() << "needs root to make another user's directory";
  RootOnlyProject p;
  ASSERT_EQ(::chown(p.outer.path().c_str(), 4321, 4321), 0);
  RunResult r = p.cat(p.project);
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_NE(r.err.find("every directory on the way must let that uid search it"), std::string::npos) << r.describe();
  EXPECT_EQ(r.out.find("PUBLIC"), std::string::npos) << r.describe();
}

TEST(UsernsUnprivilegedUid, ControlProbeSeesUidZeroWhenItIsRoot) {
  RunResult r = runHostProbe({"as-userns-root", "ids"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_EQ(r.probe().num("euid"), 0) << "the ids op cannot see root, so the test above proves nothing" << r.describe();
}

TEST(UsernsUnprivilegedUid, SandboxProcessesHaveANonRootHostUid) {
  std::string marker = uniqueName("uid-marker");
  RunOptions o;
  o.stdin_pipe = true;
  Process corral = Process::start(probeArgv({}, {"await", marker}), o);
  auto ready = corral.readLine(std::chrono::seconds(30));
  ASSERT_TRUE(ready && parseProbeLine(*ready).word("ready")) << "probe never became ready" << corral.wait().describe();
  auto pids = probeProcessesWithMarker(marker);
  ASSERT_FALSE(pids.empty()) << "control: the host scan must find the running sandbox process";
  for (pid_t pid : pids)
    EXPECT_NE(hostUidOf(pid), 0u) << claim("userns.unprivileged-uid", "sandbox pid " + std::to_string(pid) + " runs as host uid 0");
  corral.closeStdin();
  EXPECT_EQ(corral.wait().exit_code, 0);
}

TEST(UsernsUnprivilegedUid, CorePatternIsNotWritable) {
  RunResult r = runProbe({}, {"open-wronly", "/proc/sys/kernel/core_pattern"});
  EXPECT_TRUE(probeRefused(r)) << claim("userns.unprivileged-uid", "core_pattern opened for write inside");
}

TEST(UsernsUnprivilegedUid, RootControlCorePatternOpensForWriteOnHost) {
  CORRAL_REQUIRE_ROOT("only host root can open core_pattern for write");
  EXPECT_TRUE(probeDid(runHostProbe({"open-wronly", "/proc/sys/kernel/core_pattern"})));
}

TEST(UsernsNoCapabilities, EveryCapabilitySetIsEmpty) {
  RunResult r = runProbe({}, {"caps"});
  ASSERT_TRUE(probeDid(r));
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_EQ(r.probe().get(set), kZeroCaps) << claim("userns.no-capabilities", std::string(set) + " is not empty") << r.describe();
}

TEST(UsernsNoCapabilities, ControlUsernsRootHasCapabilities) {
  RunResult r = runHostProbe({"as-userns-root", "caps"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_NE(r.probe().get("CapEff"), kZeroCaps) << "the caps op reads no capabilities even where they exist" << r.describe();
}

TEST(UsernsNoNewPrivs, NoNewPrivsIsSet) {
  RunResult r = runProbe({}, {"caps"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_EQ(r.probe().get("NoNewPrivs"), "1") << claim("userns.no-new-privs", "NoNewPrivs is not 1") << r.describe();
}

TEST(UsernsNoNewPrivs, ControlNoNewPrivsIsClearOnTheHost) {
  RunResult r = runHostProbe({"caps"});
  ASSERT_TRUE(probeDid(r));
  if (r.probe().get("NoNewPrivs") == "1") GTEST_SKIP() << "the test runner itself has no_new_privs set";
  EXPECT_EQ(r.probe().get("NoNewPrivs"), "0") << r.describe();
}

// A root-owned setuid+setgid copy of the probe: `ids` shows whether exec elevated.
std::unique_ptr<TempDir> makeSetuidProbe() {
  auto dir = std::make_unique<TempDir>("suid");
  std::filesystem::copy_file(probeHostPath(), *dir / "corral-probe");
  std::string p = *dir / "corral-probe";
  if (chown(p.c_str(), 0, 0) != 0 || chmod(p.c_str(), 06755) != 0) return nullptr;
  return dir;
}

TEST(UsernsNoNewPrivs, RootSetuidBinaryDoesNotElevateInside) {
  CORRAL_REQUIRE_ROOT("only root can make a setuid-root binary to try");
  auto dir = makeSetuidProbe();
  ASSERT_TRUE(dir);
  RunResult r = runCorral({"--ro-bind", dir->path() + ":/opt/suid"}, {"/opt/suid/corral-probe", "ids"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_EQ(r.probe().num("euid"), 1000) << claim("userns.no-new-privs", "setuid binary changed euid") << r.describe();
  EXPECT_EQ(r.probe().num("egid"), 1000) << claim("userns.no-new-privs", "setgid binary changed egid") << r.describe();
}

TEST(UsernsNoNewPrivs, RootControlSetuidBinaryElevatesNobodyOnHost) {
  CORRAL_REQUIRE_ROOT("only root can make a setuid-root binary to try");
  auto dir = makeSetuidProbe();
  ASSERT_TRUE(dir);
  RunOptions o;
  o.as_user = kNobody;
  RunResult r = run({*dir / "corral-probe", "ids"}, o);
  ASSERT_TRUE(probeDid(r));
  if (r.probe().num("euid") != 0) GTEST_SKIP() << "TMPDIR is mounted nosuid: the control cannot elevate" << r.describe();
  EXPECT_EQ(r.probe().num("uid"), kNobody);
}

// Beneath the seccomp rule the probes above meet first: the kernel's own ceiling is 0 for every
// kind a nested user namespace could not already refuse. The network one is written last, after
// init joins the namespace a helper made beside the mounts (src/sandbox/netns.h); a plan that
// forgot it would still pass the probes above on seccomp alone.
TEST(UsernsNestedCeiling, EveryNamespaceKindHasAKernelCeilingOfZero) {
  std::string script;
  for (const char* ns : {"user", "pid", "net", "ipc", "uts", "time"})
    script += std::string("printf '%s=' ") + ns + "; cat /proc/sys/user/max_" + ns + "_namespaces; ";
  RunResult r = runCorral({}, {"/bin/sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "user=0\npid=0\nnet=0\nipc=0\nuts=0\ntime=0\n")
      << claim("userns.no-nested-userns", "a namespace kind without its kernel ceiling") << r.describe();
}

TEST(UsernsNestedCeiling, ControlTheHostCeilingsAreNotZero) {
  std::string out = readHostFile("/proc/sys/user/max_net_namespaces");
  ASSERT_FALSE(out.empty());
  EXPECT_NE(out, "0\n") << "the host itself allows no network namespaces: the check above proves nothing here";
}

// Every namespace kind, by unshare(2) and by clone(2).
using NsCase = std::tuple<std::string, std::string>;
class UsernsNoNestedUserns : public ::testing::TestWithParam<NsCase> {};

TEST_P(UsernsNoNestedUserns, CreatingANamespaceIsRefused) {
  auto [how, ns] = GetParam();
  RunResult r = runProbe({}, {how, ns});
  EXPECT_TRUE(probeRefused(r)) << claim("userns.no-nested-userns", how + " of a " + ns + " namespace succeeded inside");
}

TEST_P(UsernsNoNestedUserns, ControlUsernsRootCanCreateIt) {
  auto [how, ns] = GetParam();
  EXPECT_TRUE(probeDid(runHostProbe({"as-userns-root", how, ns})))
      << "the probe cannot create a " << ns << " namespace even where it is allowed";
}

INSTANTIATE_TEST_SUITE_P(, UsernsNoNestedUserns,
                         ::testing::Combine(::testing::Values("unshare", "clone-ns"),
                                            ::testing::Values("user", "mnt", "net", "pid", "ipc", "uts", "cgroup", "time")),
                         [](const auto& info) {
                           std::string how = std::get<0>(info.param) == "unshare" ? "unshare" : "clone";
                           return how + "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace corral::testing
