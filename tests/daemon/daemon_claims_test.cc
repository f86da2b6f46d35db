// SPDX-License-Identifier: Apache-2.0
// The daemon's claims (claims/daemon.toml), each attacked with a control beside it.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

// ---- daemon.sessions-survive-daemon-kill ----

TEST(DaemonSessionsSurviveDaemonKill, SessionGoesOnAndItsFinishedCommandIsKept) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(sessionExec(d, id, {"sh", "-c", "echo before > /workspace/f"}).exit_code, 0);
  RunResult bg = sessionExec(d, id, {"sh", "-c", "sleep 1; echo finished; exit 7"}, {"--detach"});
  ASSERT_EQ(bg.exit_code, 0) << bg.describe();
  const std::string n = bg.out.substr(0, bg.out.find('\n'));
  const std::vector<pid_t> shims = shimProcesses(d.stateDir());
  ASSERT_EQ(shims.size(), 1u);
  d.kill9();
  // The command finishes while no daemon runs: its shim spools the status.
  const std::string status = d.stateDir() + "/sessions/" + id + "/cmds/" + n + "/status.json";
  ASSERT_TRUE(eventually([&] { return fileExists(status); }))
      << claim("daemon.sessions-survive-daemon-kill", "no status spooled while the daemon was away");
  ASSERT_TRUE(d.start()) << d.stderrText();
  EXPECT_EQ(shimProcesses(d.stateDir()), shims) << "the same shim must be adopted, not a new one made";
  auto cmd = d.curl("GET", "/v1/sessions/" + id + "/commands/" + n);
  EXPECT_EQ(cmd.json()["exit_code"], 7) << cmd.body;
  auto out = d.curl("GET", "/v1/sessions/" + id + "/commands/" + n + "/output");
  EXPECT_NE(out.body.find("ZmluaXNoZWQK"), std::string::npos) << "base64 of 'finished\\n' missing: " << out.body;
  RunResult after = sessionExec(d, id, {"cat", "f"});
  EXPECT_EQ(after.out, "before\n") << claim("daemon.sessions-survive-daemon-kill", "workspace lost: " + after.describe());
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).json()["state"], "running");
  d.kill9();
  EXPECT_NE(d.stderrText().find("event=session_adopted"), std::string::npos) << d.stderrText();
}

TEST(DaemonSessionsSurviveDaemonKill, ControlASessionWhoseShimDiedIsLostNotAdopted) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  d.kill9();
  for (pid_t pid : shimProcesses(d.stateDir())) ::kill(pid, SIGKILL);
  ASSERT_TRUE(eventually([&] { return shimProcesses(d.stateDir()).empty(); }));
  ASSERT_TRUE(d.start()) << d.stderrText();
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).json()["state"], "lost");
  EXPECT_EQ(sessionExec(d, id, {"true"}).exit_code, 125);
}

// ---- daemon.reconcile-finishes-or-undoes ----

TEST(DaemonReconcileFinishesOrUndoes, HalfDoneCreateIsUndoneAndUnstartedCommandFails) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  d.kill9();
  // What a kill -9 between the store's write and the shim's start leaves: a "creating" row
  // with no shim, and a command recorded as starting that never reached its shim.
  const std::string script =
      "import sqlite3, sys\n"
      "db = sqlite3.connect(sys.argv[1])\n"
      "db.execute(\"INSERT INTO sessions(id, name, owner_uid, state, secret, spec, created_at) "
      "VALUES('00000000000000aa','half',?,'creating','" + std::string(64, 'a') + "','{}',0)\", (int(sys.argv[3]),))\n"
      "db.execute(\"INSERT INTO commands(session_id, cmd, state, argc, created_at) VALUES(?, 99, 'starting', 1, 0)\", (sys.argv[2],))\n"
      "db.commit()\n";
  RunResult py = run({"/usr/bin/python3", "-c", script, d.stateDir() + "/state.db", id, std::to_string(::getuid())});
  ASSERT_EQ(py.exit_code, 0) << py.describe();
  ASSERT_TRUE(d.start()) << d.stderrText();
  EXPECT_EQ(d.curl("GET", "/v1/sessions/00000000000000aa").status, 404)
      << claim("daemon.reconcile-finishes-or-undoes", "a half-done create survived reconciliation");
  auto cmd = d.curl("GET", "/v1/sessions/" + id + "/commands/99");
  EXPECT_EQ(cmd.json()["state"], "failed") << cmd.body;
  EXPECT_EQ(cmd.json()["exit_code"], 125) << cmd.body;
  // Control: the real session beside them was adopted, untouched.
  EXPECT_EQ(d.curl("GET", "/v1/sessions/" + id).json()["state"], "running");
  auto integrity = run({"/usr/bin/python3", "-c",
                        "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])",
                        d.stateDir() + "/state.db"});
  EXPECT_EQ(integrity.out, "ok\n");
}

// ---- daemon.api-unreachable-from-sessions ----

TEST(DaemonApiUnreachableFromSessions, ACommandCannotConnectToTheDaemonOrItsShim) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  const std::string connect =
      "import socket, sys\n"
      "for path in sys.argv[1:]:\n"
      "    for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):\n"
      "        s = socket.socket(socket.AF_UNIX, kind)\n"
      "        try:\n"
      "            s.connect(path); print('connected', path)\n"
      "        except OSError as e:\n"
      "            print('refused', e.errno)\n";
  const std::string control = d.stateDir() + "/sessions/" + id + "/control.sock";
  RunResult inside = sessionExec(d, id, {"/usr/bin/python3", "-c", connect, d.socket(), control});
  ASSERT_EQ(inside.exit_code, 0) << inside.describe();
  EXPECT_EQ(inside.out.find("connected"), std::string::npos)
      << claim("daemon.api-unreachable-from-sessions", "a sandboxed command reached: " + inside.out);
  EXPECT_NE(inside.out.find("refused"), std::string::npos) << inside.out;
  // Control: the same script on the host connects to both.
  RunResult host = run({"/usr/bin/python3", "-c", connect, d.socket(), control});
  EXPECT_NE(host.out.find("connected " + d.socket()), std::string::npos) << host.describe();
  EXPECT_NE(host.out.find("connected " + control), std::string::npos) << host.describe();
}

// ---- daemon.sessions-isolated ----

TEST(DaemonSessionsIsolated, SessionsSeeNeitherTheOthersFilesNorProcesses) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string a = d.createSession(), b = d.createSession();
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  ASSERT_EQ(sessionExec(d, a, {"sh", "-c", "echo mine > /workspace/a-only; echo x > /tmp/a-tmp"}).exit_code, 0);
  RunResult bg = sessionExec(d, a, {"sh", "-c", "sleep 7777 >/dev/null 2>&1 &"});
  ASSERT_EQ(bg.exit_code, 0) << bg.describe();
  RunResult other = sessionExec(d, b, {"sh", "-c", "ls /workspace /tmp; cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"});
  EXPECT_EQ(other.out.find("a-only"), std::string::npos) << claim("daemon.sessions-isolated", "B saw A's file: " + other.out);
  EXPECT_EQ(other.out.find("a-tmp"), std::string::npos) << claim("daemon.sessions-isolated", "B saw A's /tmp: " + other.out);
  EXPECT_EQ(other.out.find("sleep 7777"), std::string::npos)
      << claim("daemon.sessions-isolated", "B saw A's process: " + other.out);
  // Control: A itself sees both.
  RunResult own = sessionExec(d, a, {"sh", "-c", "ls /workspace /tmp; cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"});
  EXPECT_NE(own.out.find("a-only"), std::string::npos) << own.describe();
  EXPECT_NE(own.out.find("a-tmp"), std::string::npos) << own.describe();
  EXPECT_NE(own.out.find("sleep 7777"), std::string::npos) << own.describe();
}

// ---- daemon.no-env-values-at-rest ----

TEST(DaemonNoEnvValuesAtRest, EnvValuesReachTheCommandButNoLogDbOrResponse) {
  const std::string s1 = "corral-sentinel-session-" + uniqueName("v"), s2 = "corral-sentinel-command-" + uniqueName("v");
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession({"--env", "S1=" + s1});
  ASSERT_FALSE(id.empty());
  RunResult r = sessionExec(d, id, {"sh", "-c", "test \"$S1\" = \"" + s1 + "\" && test \"$S2\" = \"" + s2 + "\""},
                            {"--env", "S2=" + s2, "--json"});
  // Control: both values did reach the command (it exits 0 only if it saw them).
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  std::string seen = d.curl("GET", "/v1/sessions").body + d.curl("GET", "/v1/sessions/" + id).body +
                     d.curl("GET", "/v1/sessions/" + id + "/commands/1").body + r.out + r.err;
  d.kill9();
  seen += d.stderrText();
  for (const char* f : {"/state.db", "/state.db-wal", "/state.db-shm"}) seen += fileText(d.stateDir() + f);
  seen += fileText(d.stateDir() + "/sessions/" + id + "/shim.log");
  seen += fileText(d.stateDir() + "/sessions/" + id + "/cmds/1/status.json");
  for (const std::string& s : {s1, s2})
    EXPECT_EQ(seen.find(s), std::string::npos) << claim("daemon.no-env-values-at-rest", "value found at rest or in a response");
  EXPECT_NE(seen.find(id), std::string::npos) << "control: the scan must see what it reads (the session id is in all of it)";
}

// ---- daemon.peer-uid-checked ----

TEST(DaemonPeerUidChecked, RootAnotherUidIsRefusedEvenWhenTheSocketIsOpenToIt) {
  CORRAL_REQUIRE_ROOT("the test connects as uid 65534 to a root daemon");
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  // An operator's mistake: the socket made world-connectable. SO_PEERCRED still refuses.
  const std::string dir = d.socket().substr(0, d.socket().rfind('/'));
  ASSERT_EQ(::chmod(d.stateDir().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(d.socket().c_str(), 0777), 0);
  // python's http.client as the other uid: it names the errno should the connection itself fail.
  const std::string client =
      "import http.client, socket, sys\n"
      "class C(http.client.HTTPConnection):\n"
      "    def connect(self):\n"
      "        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
      "        self.sock.connect(sys.argv[1])\n"
      "c = C('corral'); c.request('GET', '/v1/sessions'); r = c.getresponse()\n"
      "print(r.status, r.read().decode())\n";
  const std::vector<std::string> argv = {"/usr/bin/python3", "-c", client, d.socket()};
  RunResult nobody = run(argv, {.as_user = kNobody});
  EXPECT_EQ(nobody.out.rfind("403 ", 0), 0u) << claim("daemon.peer-uid-checked", "uid 65534 served: " + nobody.describe());
  EXPECT_NE(nobody.out.find("\"forbidden\""), std::string::npos) << nobody.out;
  // Control: root (the daemon's uid) is served on the same socket.
  RunResult root = run(argv);
  EXPECT_EQ(root.out.rfind("200 ", 0), 0u) << root.describe();
}

TEST(DaemonPeerUidChecked, RootAllowedGroupSeesOnlyItsOwnSessions) {
  CORRAL_REQUIRE_ROOT("the test connects as uid 65534 to a root daemon");
  Daemon d({"--allow-group", "nogroup"});
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(::chmod(d.stateDir().c_str(), 0755), 0);
  const std::vector<std::string> base = {"/usr/bin/curl", "-sS", "--unix-socket", d.socket(), "-o", "-", "-w", "\n%{http_code}"};
  auto as = [&](std::optional<uid_t> uid, const std::string& path) {
    std::vector<std::string> argv = base;
    argv.push_back("http://corral" + path);
    RunOptions o;
    o.as_user = uid;
    return run(argv, o);
  };
  RunResult list = as(kNobody, "/v1/sessions");
  EXPECT_NE(list.out.find("\n200"), std::string::npos) << "a member of --allow-group is served: " << list.describe();
  EXPECT_EQ(list.out.find(id), std::string::npos) << claim("daemon.peer-uid-checked", "uid 65534 listed root's session");
  EXPECT_NE(as(kNobody, "/v1/sessions/" + id).out.find("\n404"), std::string::npos);
  // Control: root sees it.
  EXPECT_NE(as(std::nullopt, "/v1/sessions").out.find(id), std::string::npos);
}

}  // namespace
}  // namespace corral::testing
