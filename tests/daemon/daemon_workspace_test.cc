// SPDX-License-Identifier: Apache-2.0
// A session's workspace in the daemon's state directory: kept across commands, daemon kills
// and a lost shim; capped (root: an ext4 image on a loop device) or refused; gone after rm.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <fstream>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

// Loop devices whose backing file lies under dir (/sys/block/loopN/loop/backing_file).
std::vector<std::string> loopsBackedUnder(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir("/sys/block");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (std::string(e->d_name).rfind("loop", 0) != 0) continue;
    std::string backing = fileText(std::string("/sys/block/") + e->d_name + "/loop/backing_file");
    if (backing.rfind(dir + "/", 0) == 0) out.push_back(e->d_name);
  }
  ::closedir(d);
  return out;
}

// ---- daemon.workspace-persists ----

TEST(DaemonWorkspacePersists, FilesOutliveCommandsADaemonKillAndALostShim) {
  TempDir caller("caller");
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  RunOptions in_caller;
  in_caller.cwd = caller.path();
  ASSERT_EQ(d.cli({"session", "exec", id, "--", "sh", "-c", "echo kept > /workspace/f"}, in_caller).exit_code, 0);
  d.kill9();
  ASSERT_TRUE(d.start()) << d.stderrText();
  RunResult after = sessionExec(d, id, {"cat", "/workspace/f"});
  EXPECT_EQ(after.out, "kept\n") << claim("daemon.workspace-persists", "lost across a daemon kill: " + after.describe());
  // The shim dies too: the session is lost, its workspace is not.
  d.kill9();
  for (pid_t pid : shimProcesses(d.stateDir())) ::kill(pid, SIGKILL);
  ASSERT_TRUE(eventually([&] { return shimProcesses(d.stateDir()).empty(); }));
  ASSERT_TRUE(d.start()) << d.stderrText();
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).json()["state"], "lost");
  const std::string on_disk = d.stateDir() + "/sessions/" + id + "/workspace/f";
  EXPECT_EQ(fileText(on_disk), "kept\n") << claim("daemon.workspace-persists", "a lost session lost its workspace");
  // Control: the workspace is the daemon's, never the caller's directory.
  EXPECT_FALSE(fileExists(caller.path() + "/f")) << "the command wrote into the caller's directory";
}

// session recover: a new sandbox on the lost session's workspace, its stored spec and records.
TEST(DaemonWorkspacePersists, ALostSessionIsRecoveredOnItsWorkspace) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession({"--tmp-size", "32M", "--env", "A=before"});
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "echo kept > /workspace/f; echo gone > /tmp/t"}).exit_code, 0);
  RunResult bg = sessionExec(d, id, {"sleep", "1000"}, {"--detach"});
  ASSERT_EQ(bg.exit_code, 0) << bg.describe();
  // Not lost yet: recover is refused and changes nothing.
  RunResult early = d.cli({"session", "recover", id});
  EXPECT_EQ(early.exit_code, 125) << early.describe();
  EXPECT_NE(early.err.find("only a lost session is recovered"), std::string::npos) << early.err;
  const std::vector<pid_t> old_shims = shimProcesses(d.stateDir());
  d.kill9();
  for (pid_t pid : old_shims) ::kill(pid, SIGKILL);
  ASSERT_TRUE(eventually([&] { return shimProcesses(d.stateDir()).empty(); }));
  ASSERT_TRUE(d.start()) << d.stderrText();
  ASSERT_EQ(d.curl("GET", "/v1/sessions/" + id).json()["state"], "lost");
  RunResult rec = d.cli({"session", "recover", id, "--env", "A=after", "--json"});
  ASSERT_EQ(rec.exit_code, 0) << claim("daemon.workspace-persists", "recover failed: " + rec.describe());
  EXPECT_EQ(nlohmann::json::parse(rec.out)["state"], "running");
  EXPECT_NE(shimProcesses(d.stateDir()), old_shims);
  // The workspace is the old one; /tmp, processes and env values are new.
  RunResult look = sessionExec(d, id, {"sh", "-c", "cat /workspace/f; cat /tmp/t 2>/dev/null || echo no-tmp; echo $A; "
                                                   "df -k /tmp | tail -1 | awk '{print $2}'"});
  EXPECT_EQ(look.out, "kept\nno-tmp\nafter\n32768\n") << look.describe();
  // The command that was running when the shim died is lost, not running forever.
  const std::string n = bg.out.substr(0, bg.out.find('\n'));
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id + "/commands/" + n).json()["state"], "lost");
  // A restart adopts the recovered session like any other.
  d.kill9();
  ASSERT_TRUE(d.start()) << d.stderrText();
  EXPECT_EQ(sessionExec(d, id, {"cat", "/workspace/f"}).out, "kept\n");
  EXPECT_EQ(d.cli({"session", "recover", "0000000000000000"}).exit_code, 125);
}

TEST(DaemonWorkspacePersists, ControlAFileOnlyInTmpIsNotInTheWorkspace) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "echo t > /tmp/g; echo w > /workspace/h"}).exit_code, 0);
  const std::string ws = d.stateDir() + "/sessions/" + id + "/workspace/";
  EXPECT_FALSE(fileExists(ws + "g")) << "the check above would pass for anything written anywhere";
  EXPECT_EQ(fileText(ws + "h"), "w\n");
}

TEST(DaemonWorkspacePersists, AHostDirectoryIsCopiedInOnceAndNeverWrittenBack) {
  TempDir src("src");
  ASSERT_EQ(::mkdir((src.path() + "/sub").c_str(), 0755), 0);
  { std::ofstream(src.path() + "/sub/in.txt") << "from host\n"; }
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession({"--workspace", src.path()});
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(sessionExec(d, id, {"cat", "sub/in.txt"}).out, "from host\n");
  { std::ofstream(src.path() + "/sub/in.txt") << "changed later\n"; }
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "echo session > sub/out.txt"}).exit_code, 0);
  EXPECT_EQ(sessionExec(d, id, {"cat", "sub/in.txt"}).out, "from host\n") << "copied once, not bound";
  EXPECT_FALSE(fileExists(src.path() + "/sub/out.txt")) << "the session wrote into the host directory";
  // A missing directory is refused and leaves no session.
  RunResult bad = d.cli({"session", "create", "--workspace", src.path() + "/nope"});
  EXPECT_EQ(bad.exit_code, 125) << bad.describe();
  auto ls = d.curl("GET", "/v1/sessions").json();
  EXPECT_EQ(ls["sessions"].size(), 1u) << ls.dump();
}

// ---- daemon.workspace-capped ----

TEST(DaemonWorkspaceCapped, RootWritingPastTheCapFailsAndTheHostKeepsItsSpace) {
  CORRAL_REQUIRE_ROOT("only a root daemon can loop-mount the capped image");
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession({"--workspace-size", "8M"});
  ASSERT_FALSE(id.empty());
  // Control: within the cap, a write succeeds.
  RunResult small = sessionExec(d, id, {"sh", "-c", "head -c 2000000 /dev/zero > small && echo ok"});
  EXPECT_EQ(small.out, "ok\n") << small.describe();
  RunResult big = sessionExec(d, id, {"sh", "-c", "head -c 40000000 /dev/urandom > big; echo rc=$?; sync"});
  EXPECT_NE(big.out.find("rc=1"), std::string::npos) << claim("daemon.workspace-capped", "40 MB fit in 8M: " + big.describe());
  EXPECT_NE(big.err.find("No space left"), std::string::npos) << big.describe();
  struct stat st;
  ASSERT_EQ(::stat((d.stateDir() + "/sessions/" + id + "/workspace.img").c_str(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_blocks) * 512, 8ull << 20)
      << claim("daemon.workspace-capped", "the image grew past its cap on the host");
  EXPECT_EQ(mountsUnder(d.stateDir()).size(), 1u);
}

TEST(DaemonWorkspaceCapped, WithoutAMechanismCreateIsRefusedUnlessAllowedWeaker) {
  if (::geteuid() == 0) GTEST_SKIP() << "a root daemon caps workspaces with a loop device here (the rootless pass runs this)";
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  RunResult refused = d.cli({"session", "create"});
  EXPECT_EQ(refused.exit_code, 125) << claim("daemon.workspace-capped", "an uncapped workspace was made: " + refused.describe());
  EXPECT_NE(refused.err.find("--allow-weaker workspace-size"), std::string::npos) << refused.err;
  EXPECT_EQ(d.curl("GET", "/v1/sessions").json()["sessions"].size(), 0u);
  DIR* sessions = ::opendir((d.stateDir() + "/sessions").c_str());
  ASSERT_NE(sessions, nullptr);
  int entries = 0;
  while (dirent* e = ::readdir(sessions)) entries += e->d_name[0] != '.';
  ::closedir(sessions);
  EXPECT_EQ(entries, 0) << "a refused create left a directory";
  // Control: accepted weaker, the same create succeeds.
  RunResult weaker = d.cli({"session", "create", "--allow-weaker", "workspace-size"});
  EXPECT_EQ(weaker.exit_code, 0) << weaker.describe();
  RunResult doctor = run({corralBin(), "doctor", "--json"});
  EXPECT_NE(doctor.out.find("none for a non-root daemon"), std::string::npos) << doctor.out;
}

// ---- daemon.rm-leaves-nothing ----

TEST(DaemonRmLeavesNothing, RmEndsTheShimAndRemovesTheWorkspaceItsMountAndLoopDevice) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession({"--workspace-size", "16M"});
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "echo x > f; sleep 1000 >/dev/null 2>&1 &"}).exit_code, 0);
  const bool capped = ::geteuid() == 0;
  // Control: while it runs, there is something to remove.
  EXPECT_EQ(mountsUnder(d.stateDir()).size(), capped ? 1u : 0u);
  if (capped) {
    EXPECT_EQ(loopsBackedUnder(d.stateDir()).size(), 1u);
  }
  RunResult rm = d.cli({"session", "rm", id});
  ASSERT_EQ(rm.exit_code, 0) << rm.describe();
  EXPECT_TRUE(shimProcesses(d.stateDir()).empty()) << claim("daemon.rm-leaves-nothing", "a shim outlived rm");
  EXPECT_FALSE(fileExists(d.stateDir() + "/sessions/" + id)) << claim("daemon.rm-leaves-nothing", "the directory outlived rm");
  EXPECT_TRUE(mountsUnder(d.stateDir()).empty()) << claim("daemon.rm-leaves-nothing", "a mount outlived rm");
  // The loop device detaches itself once the sandbox's last reference is gone.
  EXPECT_TRUE(eventually([&] { return loopsBackedUnder(d.stateDir()).empty(); }))
      << claim("daemon.rm-leaves-nothing", "a loop device outlived rm");
  EXPECT_FALSE(fileExists(d.stateDir() + "/kept")) << "nothing was asked to be kept";
}

TEST(DaemonRmLeavesNothing, KeepWorkspaceKeepsOnlyTheWorkspace) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession({"--workspace-size", "16M"});
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "echo keep-me > f"}).exit_code, 0);
  RunResult rm = d.cli({"session", "rm", id, "--keep-workspace", "--json"});
  ASSERT_EQ(rm.exit_code, 0) << rm.describe();
  auto j = nlohmann::json::parse(rm.out, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("kept_workspace")) << rm.out;
  const std::string kept = j["kept_workspace"].get<std::string>();
  EXPECT_EQ(kept.rfind(d.stateDir() + "/kept/" + id, 0), 0u) << kept;
  if (::geteuid() == 0) {
    // An ext4 image: its file is in it (debugfs reads it without mounting).
    RunResult cat = run({"/usr/sbin/debugfs", "-R", "cat /f", kept});
    EXPECT_EQ(cat.out, "keep-me\n") << cat.describe();
  } else {
    EXPECT_EQ(fileText(kept + "/f"), "keep-me\n");
  }
  EXPECT_FALSE(fileExists(d.stateDir() + "/sessions/" + id));
  EXPECT_TRUE(mountsUnder(d.stateDir()).empty());
  EXPECT_TRUE(shimProcesses(d.stateDir()).empty());
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).status, 404);
}

}  // namespace
}  // namespace corral::testing
