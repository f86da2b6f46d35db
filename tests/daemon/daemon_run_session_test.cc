// SPDX-License-Identifier: Apache-2.0
// `corral run --session ID`: a real daemon, a real session, a real run driven by the replay
// provider. Commands the manifest allows run in the session (and build on each other's files
// there); a refused call never reaches it; a session broader than the manifest, not running,
// unknown or another uid's refuses the run before anything runs.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "daemon_fixture.h"
#include "run_fixture.h"

namespace corral::testing {
namespace {

using nlohmann::json;

std::string sha256Hex(const std::string& s) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d);
  return hex(std::string(reinterpret_cast<char*>(d), sizeof d));
}

json sh(const std::string& script) { return call("run", {{"command", "sh"}, {"args", {"-c", script}}}); }

// A run fixture whose manifest allows `sh` (literal arguments) and fits a default session of
// this host (rootless: the session's workspace is not capped, so the manifest accepts that).
struct SessionRun {
  Daemon d;
  RunFixture f;
  explicit SessionRun(std::vector<std::string> daemon_extra = {}) : d(std::move(daemon_extra)) {
    f.manifest["executables"] = {{{"name", "sh"}, {"literal_args", true}}, "rm", "git"};
    f.manifest["inputs"] = json::array();
    f.manifest["outputs"] = json::array();
    if (::geteuid() != 0) f.manifest["sandbox"] = {{"allow_weaker", {"workspace-size"}}};
  }
  RunResult run(const std::string& id, RunOptions opts = {}) {
    f.writeFiles();
    opts.env_extra.push_back("CORRAL_SOCKET=" + d.socket());
    opts.deadline = std::chrono::milliseconds(120'000);
    return corral::testing::run({corralBin(), "run", f.ws / "manifest.json", "--json", "--apply", "--session", id}, opts);
  }
  json commands(const std::string& id) const { return d.curl("GET", "/v1/sessions/" + id).json().value("commands", json::array()); }
};

// ---- daemon.run-session-within-manifest ----

TEST(DaemonRunSessionWithinManifest, CommandsBuildOnEachOthersFilesInTheSessionAndTheTraceNamesIt) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  const std::string id = t.d.createSession();
  ASSERT_FALSE(id.empty());
  t.f.reply({sh("echo one > a.txt")});
  t.f.reply({sh("cat a.txt; echo two >> a.txt")});
  t.f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = t.run(id);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // The second command read what the first left, and the session keeps both writes.
  auto calls = t.f.toolCalls();
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls[1]["stdout_sha256"], sha256Hex("one\n")) << calls[1].dump();
  EXPECT_EQ(sessionExec(t.d, id, {"cat", "a.txt"}).out, "one\ntwo\n");
  // Never in the host workspace: the session's workspace is the daemon's.
  EXPECT_FALSE(t.f.ws.exists("a.txt"));
  // The trace names the session and each command's number in it, and the daemon agrees.
  auto sess = t.f.entries("session");
  ASSERT_EQ(sess.size(), 1u);
  EXPECT_EQ(sess[0]["session"], id);
  json listed = t.commands(id);
  ASSERT_GE(listed.size(), 3u) << listed.dump();  // the two of the run, then the cat above
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(calls[i]["session"], id);
    EXPECT_EQ(calls[i]["session_command"], listed[i]["id"]) << listed.dump();
    EXPECT_EQ(calls[i]["exit_code"], 0);
  }
  RunResult v = run({corralBin(), "verify", t.f.ws.path()});
  EXPECT_EQ(v.exit_code, 0) << v.describe();
}

TEST(DaemonRunSessionWithinManifest, ADeniedCallIsStillDeniedAndNeverReachesTheSession) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  const std::string id = t.d.createSession();
  ASSERT_FALSE(id.empty());
  t.f.reply({call("run", {{"command", "python3"}, {"args", {"-c", "print(1)"}}}),  // not an executable of the manifest
             call("run", {{"command", "sh"}, {"args", {"-c", "echo hi"}}}),        // control: allowed, runs there
             call("run", {{"command", "git"}, {"args", {"status"}}})});           // git: refused in a session
  t.f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = t.run(id);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  auto calls = t.f.toolCalls();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0]["decision"], "refuse");
  EXPECT_EQ(calls[1]["decision"], "allow");
  EXPECT_EQ(calls[1]["stdout_sha256"], sha256Hex("hi\n"));
  EXPECT_EQ(calls[2]["decision"], "refuse");
  EXPECT_EQ(calls[2]["rule"], "git.session");
  json listed = t.commands(id);
  ASSERT_EQ(listed.size(), 1u) << "only the allowed command reaches the session: " << listed.dump();
  EXPECT_EQ(listed[0]["id"], calls[1]["session_command"]);
}

TEST(DaemonRunSessionWithinManifest, ASpawnedTasksCommandIsRefusedAndNeverReachesTheSession) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  const std::string id = t.d.createSession();
  ASSERT_FALSE(id.empty());
  t.f.reply({call("spawn", {{"task", "sub"}})});
  t.f.reply({sh("echo root")});  // control: the root task's command runs there
  t.f.reply({call("finish", {{"summary", "root"}})});
  t.f.reply({sh("echo child")});
  t.f.reply({call("finish", {{"summary", "child"}})});
  RunResult r = t.run(id);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  bool refused = false;
  for (const json& c : t.f.toolCalls())
    if (c.value("task", "") != "root" && c.value("tool", "") == "run") refused = c.value("rule", "") == "session.subtask";
  EXPECT_TRUE(refused) << "a subtask's command ran in the session";
  json listed = t.commands(id);
  EXPECT_EQ(listed.size(), 1u) << listed.dump();
}

// ---- refusals: exit 125, one line naming why, nothing runs ----

void expectRefused(SessionRun& t, const std::string& id, const std::string& needle) {
  t.f.reply({sh("echo ran > ran.txt")});
  t.f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = t.run(id);
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  auto lines = r.stderrLines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find(needle), std::string::npos) << lines[0];
  EXPECT_FALSE(t.f.ws.exists(".corral/trace.jsonl")) << "a refused run wrote its record";
}

TEST(DaemonRunSessionWithinManifest, ASessionWithLargerLimitsIsRefusedNamingTheField) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  t.f.manifest["sandbox"]["file_size"] = "1M";
  const std::string id = t.d.createSession();  // file size 1G, exec's default
  ASSERT_FALSE(id.empty());
  expectRefused(t, id, "limits.file_size");
  EXPECT_TRUE(t.commands(id).empty());
}

TEST(DaemonRunSessionWithinManifest, ControlTheSameLimitNarrowedInTheSessionIsAccepted) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  t.f.manifest["sandbox"]["file_size"] = "1M";
  const std::string id = t.d.createSession({"--file-size", "1M"});
  ASSERT_FALSE(id.empty());
  t.f.reply({sh("echo ran")});
  t.f.reply({call("finish", {{"summary", "done"}})});
  RunResult r = t.run(id);
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(t.commands(id).size(), 1u);
}

TEST(DaemonRunSessionWithinManifest, ASessionWithAWeakerLimitTheManifestDoesNotAllowIsRefused) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  const std::string id = t.d.createSession({"--allow-weaker", "file-size"});
  ASSERT_FALSE(id.empty());
  expectRefused(t, id, "allow_weaker");
}

TEST(DaemonRunSessionWithinManifest, ASessionWithEgressGrantsOutsideTheManifestIsRefused) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  const std::string id = t.d.createSession({"--net", "proxy", "--allow", "https://example.com"});
  ASSERT_FALSE(id.empty());
  expectRefused(t, id, "allow grants https://example.com:443");
  // Control: the same grant in the manifest is no broader.
  t.f.manifest["network"] = {{"allow", {"https://example.com"}}};
  t.f.replies.clear();
  t.f.reply({sh("echo ran")});
  t.f.reply({call("finish", {{"summary", "done"}})});
  RunResult ok = t.run(id);
  EXPECT_EQ(ok.exit_code, 0) << ok.describe();
}

TEST(DaemonRunSessionWithinManifest, ASessionWithReadOnlyBindsIsRefused) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  TempDir bound("robind");
  bound.write("f", "x");
  ::chmod(bound.path().c_str(), 0755);
  const std::string id = t.d.createSession({"--ro-bind", bound.path() + ":/opt/bound"});
  ASSERT_FALSE(id.empty());
  expectRefused(t, id, "ro_binds");
}

TEST(DaemonRunSessionWithinManifest, ASessionLeasingACredentialTheManifestDoesNotNameIsRefused) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  RunResult add = t.d.cli({"credential", "add", "gh", "--host", "https://api.example.com", "--from-env", "TOK"},
                          RunOptions{.env_extra = {"TOK=corral-sentinel-run-session-0001"}});
  ASSERT_EQ(add.exit_code, 0) << add.describe();
  const std::string id = t.d.createSession({"--net", "proxy", "--credential", "gh"});
  ASSERT_FALSE(id.empty());
  expectRefused(t, id, "credentials leases 'gh'");
}

TEST(DaemonRunSessionWithinManifest, ASessionWithAnSshKeyRecordIsRefused) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  TempDir keys("runsshkey");
  RunResult gen = corral::testing::run({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "t", "-f", keys / "k"});
  ASSERT_EQ(gen.exit_code, 0) << gen.describe();
  ASSERT_EQ(t.d.cli({"credential", "add", "deploy", "--ssh-key", "--from-file", keys / "k"}).exit_code, 0);
  // The manifest grants the session's one destination: only the key makes the session broader.
  t.f.manifest["network"] = {{"allow", {"tcp://git.example.com:22"}}};
  const std::string with_key = t.d.createSession({"--net", "proxy", "--allow", "tcp://git.example.com:22", "--ssh-key", "deploy"});
  ASSERT_FALSE(with_key.empty());
  expectRefused(t, with_key, "ssh_key gives its commands an SSH agent with the key 'deploy'");
  EXPECT_TRUE(t.commands(with_key).empty());
  // Control: the same session without the key runs.
  const std::string without = t.d.createSession({"--net", "proxy", "--allow", "tcp://git.example.com:22"});
  ASSERT_FALSE(without.empty());
  t.f.replies.clear();
  t.f.reply({sh("echo ran")});
  t.f.reply({call("finish", {{"summary", "done"}})});
  RunResult ok = t.run(without);
  EXPECT_EQ(ok.exit_code, 0) << ok.describe();
}

TEST(DaemonRunSessionWithinManifest, AnUnknownSessionIsRefused) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  expectRefused(t, "0123456789abcdef", "no such session");
}

TEST(DaemonRunSessionWithinManifest, NoDaemonIsRefused) {
  SessionRun t;  // never started: nothing listens on its socket
  expectRefused(t, "0123456789abcdef", "no corral daemon");
}

TEST(DaemonRunSessionWithinManifest, ALostSessionIsRefused) {
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  const std::string id = t.d.createSession();
  ASSERT_FALSE(id.empty());
  t.d.kill9();
  for (pid_t pid : shimProcesses(t.d.stateDir())) ::kill(pid, SIGKILL);
  ASSERT_TRUE(eventually([&] { return shimProcesses(t.d.stateDir()).empty(); }));
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.d.curl("GET", "/v1/sessions/" + id).json()["state"], "lost");
  expectRefused(t, id, "is lost");
}

TEST(DaemonRunSessionWithinManifest, RootAPausedSessionIsRefused) {
  CORRAL_REQUIRE_ROOT("the cgroup v1 freezer is root's on this host");
  if (!fileExists("/sys/fs/cgroup/freezer/cgroup.procs")) GTEST_SKIP() << "no cgroup v1 freezer mounted on this host";
  SessionRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  const std::string id = t.d.createSession();
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(t.d.cli({"session", "pause", id}).exit_code, 0);
  expectRefused(t, id, "is paused");
  EXPECT_TRUE(t.commands(id).empty());
}

TEST(DaemonRunSessionWithinManifest, RootAnotherUidsSessionIsRefused) {
  CORRAL_REQUIRE_ROOT("running as another uid needs root");
  // A daemon that serves uid 65534's group, and a session of root's: uid 65534 sees no such session.
  SessionRun t({"--allow-group", "nogroup"});
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  const std::string id = t.d.createSession();
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(::chmod(t.d.stateDir().c_str(), 0755), 0);
  t.f.reply({sh("echo ran > ran.txt")});
  t.f.reply({call("finish", {{"summary", "done"}})});
  t.f.writeFiles();
  ASSERT_EQ(::chown(t.f.ws.path().c_str(), 65534, 65534), 0);
  ::chmod(t.f.ws.path().c_str(), 0777);
  RunOptions o;
  o.as_user = 65534;
  RunResult r = t.run(id, o);
  EXPECT_EQ(r.exit_code, 125) << r.describe();
  EXPECT_NE(r.err.find("no such session"), std::string::npos) << r.err;
  EXPECT_TRUE(t.commands(id).empty());
}

}  // namespace
}  // namespace corral::testing
