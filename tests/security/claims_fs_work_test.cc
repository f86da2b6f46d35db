// SPDX-License-Identifier: Apache-2.0
// Claims fs.workspace-staged, fs.tmp-private, fs.proc-masked, fs.host-binaries-unwritable.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

#include "harness.h"

namespace corral::testing {
namespace {

constexpr char kTmpfsMagic[] = "0x1021994";

// --- fs.workspace-staged ---

TEST(FsWorkspaceStaged, StagedCopyIsVisibleInside) {
  TempDir ws("ws");
  ws.write("a.txt", "original");
  RunResult r = runProbe({"--workspace", ws.path()}, {"read", "/workspace/a.txt"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_EQ(r.probe().get("data"), "original") << r.describe();
}

TEST(FsWorkspaceStaged, WritesInsideNeverReachTheHostWorkspace) {
  const std::vector<std::vector<std::string>> kWrites{
      {"write", "/workspace/a.txt", "changed"}, {"create", "/workspace/new.txt"}, {"mkdir", "/workspace/newdir"},
      {"write", "/workspace/sub/b.txt", "changed"}};
  for (const auto& op : kWrites) {
    TempDir ws("ws");
    ws.write("a.txt", "original");
    ws.write("sub/b.txt", "original");
    auto before = ws.entries();
    RunResult r = runProbe({"--workspace", ws.path()}, op);
    ASSERT_TRUE(probeDid(r)) << "control: the write itself must succeed inside";
    EXPECT_EQ(ws.read("a.txt"), "original") << claim("fs.workspace-staged", "host a.txt changed by " + op[0]);
    EXPECT_EQ(ws.read("sub/b.txt"), "original") << claim("fs.workspace-staged", "host sub/b.txt changed by " + op[0]);
    EXPECT_EQ(ws.entries(), before) << claim("fs.workspace-staged", "host workspace gained entries after " + op[0]);
  }
}

TEST(FsWorkspaceStaged, ControlDeclaredOutputIsCopiedBack) {
  TempDir ws("ws");
  RunResult r = runProbe({"--workspace", ws.path(), "--output", "new.txt"}, {"create", "/workspace/new.txt", "made"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_EQ(ws.read("new.txt"), "made") << r.describe();
}

// A hard link staged in must be copied, not shared: writing it inside leaves the host inode alone.
TEST(FsWorkspaceStaged, HardLinkIntoTheWorkspaceIsCopiedNotShared) {
  TempDir ws("ws"), outside("outside");
  outside.write("victim", "host-secret");
  ASSERT_EQ(link((outside / "victim").c_str(), (ws / "hl").c_str()), 0);
  RunResult r = runProbe({"--workspace", ws.path()}, {"write", "/workspace/hl", "pwned"});
  EXPECT_EQ(outside.read("victim"), "host-secret") << claim("fs.workspace-staged", "write inside reached a host inode") << r.describe();
}

// A symlink in the workspace pointing out of it must not lead to the host file inside.
TEST(FsWorkspaceStaged, SymlinkOutOfTheWorkspaceIsNotFollowedToTheHost) {
  TempDir ws("ws"), outside("outside");
  outside.write("victim", "host-secret");
  std::filesystem::create_symlink(outside / "victim", ws / "link");
  RunResult read = runProbe({"--workspace", ws.path()}, {"read", "/workspace/link"});
  if (read.exit_code != 125) {
    EXPECT_EQ(read.out.find("host-secret"), std::string::npos) << claim("fs.workspace-staged", "read a host file through a workspace symlink") << read.describe();
  }
  RunResult write = runProbe({"--workspace", ws.path()}, {"write", "/workspace/link", "pwned"});
  EXPECT_EQ(outside.read("victim"), "host-secret") << claim("fs.workspace-staged", "wrote a host file through a workspace symlink") << write.describe();
}

// FIFOs, sockets and devices in the host workspace are not staged (a FIFO would block the
// copy, a device would hand the sandbox a host device); setuid bits are stripped.
TEST(FsWorkspaceStaged, SpecialFilesAreNotStagedAndSetuidIsStripped) {
  TempDir ws("ws");
  ASSERT_EQ(mkfifo((ws / "fifo").c_str(), 0666), 0);
  ws.write("suid", "#!/bin/sh\n", 04755);
  bool device = isRoot() && mknod((ws / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
  RunOptions o;
  o.deadline = std::chrono::seconds(20);
  RunResult fifo = runProbe({"--workspace", ws.path()}, {"stat", "/workspace/fifo"}, o);
  EXPECT_FALSE(fifo.deadline_hit) << claim("fs.workspace-staged", "staging hung on a host FIFO");
  EXPECT_NE(fifo.probe().get("type"), "fifo") << claim("fs.workspace-staged", "a host FIFO was staged") << fifo.describe();
  RunResult suid = runProbe({"--workspace", ws.path()}, {"stat", "/workspace/suid"});
  ASSERT_TRUE(probeDid(suid));
  EXPECT_EQ(std::stoi(suid.probe().get("mode"), nullptr, 8) & 06000, 0) << claim("fs.workspace-staged", "setuid bit staged") << suid.describe();
  if (device) {
    RunResult dev = runProbe({"--workspace", ws.path()}, {"stat", "/workspace/null"});
    EXPECT_NE(dev.probe().get("type"), "chr") << claim("fs.workspace-staged", "a host device node was staged") << dev.describe();
  }
}

// A root caller stages what root can read, and the sandbox owns the copy: a 0600 file of
// root's and one of another user's, inside a 0700 directory of that user's, are readable and
// writable inside, and the host files stay as they were. (Staging creates files as the
// sandbox's host uid while reading with root's file capabilities: without them the second
// file is unreadable, without the uid switch nothing can be created.)
TEST(FsWorkspaceStaged, RootFilesOnlyTheirOwnersCanReadAreStagedForTheSandbox) {
  CORRAL_REQUIRE_ROOT("files of root and of another uid, mode 0600");
  TempDir ws("ws");
  ws.write("rootonly", "root-data", 0600);
  ws.write("theirs/file", "their-data", 0600);
  ASSERT_EQ(::chown((ws / "theirs/file").c_str(), 12345, 12345), 0);
  ASSERT_EQ(::chown((ws / "theirs").c_str(), 12345, 12345), 0);
  ASSERT_EQ(::chmod((ws / "theirs").c_str(), 0700), 0);
  RunResult read = runProbe({"--workspace", ws.path()}, {"read", "/workspace/theirs/file"});
  ASSERT_TRUE(probeDid(read)) << read.describe();
  EXPECT_EQ(read.probe().get("data"), "their-data") << read.describe();
  RunResult st = runProbe({"--workspace", ws.path()}, {"stat", "/workspace/rootonly"});
  ASSERT_TRUE(probeDid(st)) << st.describe();
  EXPECT_EQ(st.probe().get("uid"), "1000") << "the staged copy belongs to the sandbox" << st.describe();
  for (const char* path : {"/workspace/rootonly", "/workspace/theirs/file"}) {
    RunResult w = runProbe({"--workspace", ws.path()}, {"write", path, "changed"});
    EXPECT_TRUE(probeDid(w)) << path << w.describe();
  }
  EXPECT_EQ(ws.read("rootonly"), "root-data") << claim("fs.workspace-staged", "host file changed");
  EXPECT_EQ(ws.read("theirs/file"), "their-data") << claim("fs.workspace-staged", "host file changed");
}

// --- fs.tmp-private ---

TEST(FsTmpPrivate, HostTmpIsNotVisible) {
  std::string host_file = "/tmp/" + uniqueName("corral-host-tmp");
  ASSERT_TRUE(probeDid(runHostProbe({"create", host_file}))) << "control: cannot create " << host_file;
  RunResult stat = runProbe({}, {"stat", host_file});
  RunResult list = runProbe({}, {"listdir", "/tmp"});
  unlink(host_file.c_str());
  EXPECT_TRUE(probeRefused(stat, {"ENOENT"})) << claim("fs.tmp-private", "host /tmp file visible inside");
  ASSERT_TRUE(probeDid(list));
  EXPECT_EQ(list.probe().num("count"), 0) << claim("fs.tmp-private", "/tmp inside is not empty") << list.describe();
}

TEST(FsTmpPrivate, HostDevShmIsNotVisible) {
  std::string host_file = "/dev/shm/" + uniqueName("corral-host-shm");
  if (!probeDid(runHostProbe({"create", host_file}))) GTEST_SKIP() << "the host has no writable /dev/shm";
  RunResult r = runProbe({}, {"stat", host_file});
  unlink(host_file.c_str());
  EXPECT_TRUE(probeRefused(r, {"ENOENT"})) << claim("fs.tmp-private", "host /dev/shm file visible inside");
}

TEST(FsTmpPrivate, TmpDoesNotPersistAcrossRuns) {
  std::string path = "/tmp/" + uniqueName("persist");
  ASSERT_TRUE(probeDid(runProbe({}, {"create", path}))) << "control: /tmp must be writable inside";
  EXPECT_TRUE(probeRefused(runProbe({}, {"stat", path}), {"ENOENT"})) << claim("fs.tmp-private", "a /tmp file survived into the next sandbox");
}

TEST(FsTmpPrivate, TmpIsASizeCappedTmpfs) {
  RunResult def = runProbe({}, {"statfs", "/tmp"});
  ASSERT_TRUE(probeDid(def));
  EXPECT_EQ(def.probe().get("type"), kTmpfsMagic) << claim("fs.tmp-private", "/tmp is not a tmpfs") << def.describe();
  EXPECT_GT(def.probe().num("bytes"), 0);
  EXPECT_LE(def.probe().num("bytes"), 256LL << 20) << claim("fs.tmp-private", "/tmp is larger than the default cap") << def.describe();
  RunResult small = runProbe({"--tmp-size", "4M"}, {"statfs", "/tmp"});
  ASSERT_TRUE(probeDid(small));
  EXPECT_EQ(small.probe().num("bytes"), 4LL << 20) << claim("fs.tmp-private", "--tmp-size 4M not applied") << small.describe();
}

// --- fs.proc-masked ---

TEST(FsProcMasked, ProcShowsOnlyTheSandboxPidNamespace) {
  RunResult r = runProbe({}, {"proc-pids"});
  ASSERT_TRUE(probeDid(r));
  auto pids = r.probe().list("pids");
  EXPECT_LE(pids.size(), 3u) << claim("fs.proc-masked", "more processes visible than the sandbox's own") << r.describe();
  EXPECT_EQ(std::find(pids.begin(), pids.end(), std::to_string(getpid())), pids.end())
      << claim("fs.proc-masked", "the test's host pid is visible") << r.describe();
}

TEST(FsProcMasked, ControlHostProcShowsTheTestProcess) {
  RunResult r = runHostProbe({"proc-pids"});
  ASSERT_TRUE(probeDid(r));
  auto pids = r.probe().list("pids");
  EXPECT_NE(std::find(pids.begin(), pids.end(), std::to_string(getpid())), pids.end()) << r.describe();
}

const char* const kMaskedProc[] = {"/proc/kcore", "/proc/sysrq-trigger", "/proc/kmsg", "/proc/timer_list",
                                   "/proc/kallsyms", "/proc/keys", "/proc/sched_debug"};

TEST(FsProcMasked, SensitiveProcFilesYieldNothing) {
  for (const char* path : kMaskedProc) {
    RunResult r = runProbe({}, {"read", path, "4096"});
    if (r.probe().ok()) {
      EXPECT_EQ(r.probe().num("bytes"), 0) << claim("fs.proc-masked", std::string(path) + " is readable inside") << r.describe();
    } else {
      EXPECT_TRUE(probeRefused(r)) << path;
    }
    // A mask may be /dev/null bound over the file: opening that for write reaches nothing.
    RunResult w = runProbe({}, {"open-wronly", path});
    if (w.probe().ok()) {
      RunResult st = runProbe({}, {"stat", path});
      EXPECT_EQ(st.probe().get("rdev"), "1:3") << claim("fs.proc-masked", std::string(path) + " opened for write") << w.describe();
    } else {
      EXPECT_TRUE(probeRefused(w)) << path;
    }
  }
}

TEST(FsProcMasked, RootControlHostRootReadsThem) {
  CORRAL_REQUIRE_ROOT("only host root can read these");
  int present = 0;
  for (const char* path : {"/proc/kcore", "/proc/timer_list", "/proc/kallsyms", "/proc/sched_debug"}) {
    if (access(path, F_OK) != 0) continue;
    ++present;
    RunResult r = runHostProbe({"read", path, "64"});
    ASSERT_TRUE(probeDid(r)) << path;
    EXPECT_GT(r.probe().num("bytes"), 0) << path << r.describe();
  }
  if (present == 0) GTEST_SKIP() << "this kernel has none of the masked files";
}

TEST(FsProcMasked, ProcSysIsReadOnly) {
  RunResult r = runProbe({}, {"statfs", "/proc/sys"});
  ASSERT_TRUE(probeDid(r));
  EXPECT_EQ(r.probe().get("ro"), "1") << claim("fs.proc-masked", "/proc/sys is not read-only") << r.describe();
  for (const char* path : {"/proc/sys/kernel/hostname", "/proc/sys/kernel/core_pattern", "/proc/sys/vm/overcommit_memory"})
    EXPECT_TRUE(probeRefused(runProbe({}, {"open-wronly", path}))) << claim("fs.proc-masked", std::string(path) + " opened for write");
}

TEST(FsProcMasked, ControlHostProcSysIsWritableMount) {
  RunResult r = runHostProbe({"statfs", "/proc/sys"});
  ASSERT_TRUE(probeDid(r));
  if (r.probe().get("ro") == "1") GTEST_SKIP() << "the host's /proc/sys is itself read-only";
}

// --- fs.host-binaries-unwritable ---

// A world-writable file beside the probe in its bound directory: only the read-only bind
// protects it, so a write that works here is the bind's failure, not DAC's.
std::string boundWritableFile() {
  std::string path = probeHostDir() + "/writable-data";
  if (access(path.c_str(), F_OK) != 0) {
    EXPECT_TRUE(probeDid(runHostProbe({"create", path, "host-data"})));
    chmod(path.c_str(), 0666);
  }
  return path;
}

TEST(FsHostBinariesUnwritable, ExecutablesAndBoundFilesCannotBeOpenedForWrite) {
  std::string writable = boundWritableFile();
  const std::string corral_before = readHostFile(corralBin()), probe_before = readHostFile(probeHostPath());
  const std::string targets[] = {"/proc/self/exe", "/proc/1/exe", kProbe, std::string(kProbeDir) + "/writable-data"};
  for (const auto& target : targets) {
    for (const char* op : {"open-wronly", "open-rdwr", "reopen-wronly"}) {
      RunResult r = runProbe({}, {op, target});
      EXPECT_TRUE(probeRefused(r)) << claim("fs.host-binaries-unwritable", std::string(op) + " " + target + " succeeded");
    }
  }
  // The probe's own file while no probe runs (so not ETXTBSY): only the read-only bind protects it.
  for (const char* redirect : {"exec 3>>", "exec 3<>"}) {
    RunResult r = runCorral(probeBind(), {"/bin/sh", "-c", std::string(redirect) + kProbe});
    EXPECT_NE(r.exit_code, 0) << claim("fs.host-binaries-unwritable", std::string("sh '") + redirect + "' opened the bound probe") << r.describe();
  }
  EXPECT_TRUE(readHostFile(corralBin()) == corral_before) << claim("fs.host-binaries-unwritable", "corral binary changed");
  EXPECT_TRUE(readHostFile(probeHostPath()) == probe_before) << claim("fs.host-binaries-unwritable", "probe binary changed");
  EXPECT_EQ(readHostFile(writable), "host-data");
}

TEST(FsHostBinariesUnwritable, ControlBoundFileIsWritableOnTheHost) {
  std::string writable = boundWritableFile();
  EXPECT_TRUE(probeDid(runHostProbe({"open-wronly", writable})));
  EXPECT_TRUE(probeDid(runHostProbe({"reopen-wronly", writable})));
  TempDir copy("exe-copy");  // a non-running copy: the sh redirect used above works on it
  std::filesystem::copy_file(probeHostPath(), copy / "corral-probe");
  EXPECT_EQ(run({"/bin/sh", "-c", "exec 3<>" + (copy / "corral-probe")}).exit_code, 0);
}

}  // namespace
}  // namespace corral::testing
