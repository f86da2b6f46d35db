// SPDX-License-Identifier: Apache-2.0
// claims/daemon.toml: daemon.credential-rotation-reaches-sessions. A running session's proxy
// injects v1 (the upstream, egress_servers.py on the host, records the header it got); after
// `credential rotate` returns, its next request carries v2 and never v1 again, also when the
// daemon is killed with SIGKILL and restarted between the rotation and the request. Neither
// value is ever seen by the sandbox (environment, files, the command's output, redacted by the
// proxy under the new value too), the daemon's stderr, the event stream or any state file.
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <filesystem>
#include <future>
#include <random>

#include <gtest/gtest.h>

#include "daemon_fixture.h"
#include "egress_fixture.h"

namespace corral::testing {
namespace {

using Args = std::vector<std::string>;

std::string freshSecret(const char* tag) {
  std::random_device rd;
  std::string s = std::string("corral-sentinel-") + tag + "-";
  for (int i = 0; i < 20; ++i) s += "0123456789abcdef"[rd() % 16];
  return s;
}

// Every regular file under the state directory that holds text (a workspace image is read
// through its mount instead).
std::string stateFilesHolding(const std::string& state_dir, const std::string& text) {
  std::string hits;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(state_dir, std::filesystem::directory_options::skip_permission_denied, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file(ec) || it->path().extension() == ".img") continue;
    if (readHostFile(it->path().string()).find(text) != std::string::npos) hits += it->path().string() + " ";
  }
  return hits;
}

// The first column of each row `sql` answers, space-separated, read from the state database
// itself (sqlite3, read-only): what the daemon has stored, with or without a daemon running.
std::string stored(const std::string& state_dir, const std::string& sql) {
  auto quoted = [](const std::string& a) {
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  const std::string cmd = "/usr/bin/python3 -c " +
                          quoted("import sqlite3,sys; c=sqlite3.connect('file:'+sys.argv[1]+'?mode=ro', uri=True, timeout=10);"
                                 " print(' '.join(str(r[0]) for r in c.execute(sys.argv[2])))") +
                          " " + quoted(state_dir + "/state.db") + " " + quoted(sql) + " 2>&1";
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f)) out += buf;
    ::pclose(f);
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// "<record version> <lease rows on an older one>" for record `api`.
std::string storedStaleness(const std::string& state_dir) {
  return stored(state_dir,
                "SELECT version FROM credentials WHERE name='api' UNION ALL SELECT count(*) FROM session_credentials l"
                " WHERE l.name='api' AND l.version < (SELECT version FROM credentials WHERE name='api')");
}

// What the sandbox can look at, then one request through the lease (broker mode).
const char kLookAndAsk[] =
    "env; tr '\\0' '\\n' < /proc/self/environ; tr '\\0' '\\n' < /proc/1/environ 2>/dev/null;"
    "grep -rs corral-sentinel /workspace /tmp /etc 2>/dev/null;"
    "curl -sS --max-time 20 http://127.0.0.1:3128/lease/api/lease-check; true";

struct Rotation {
  std::string v1 = freshSecret("rot1"), v2 = freshSecret("rot2");
  EgressServers servers{{"CORRAL_TEST_LEASE_SECRET=" + v1}};  // answers auth=ok for v1 only
  Daemon d;
  TempDir events_dir{"rotevents"};
  std::optional<Process> events;
  std::string seen;  // everything the sandbox and the clients were shown

  void subscribe() {
    events.emplace(Process::start({"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/sse_client.py", d.socket(), events_dir / "ev", "read"},
                                  {.deadline = std::chrono::milliseconds(300'000)}));
    ASSERT_TRUE(eventually([&] { return readHostFile(events_dir / "ev").find("200 OK") != std::string::npos; }));
  }
  ~Rotation() {
    if (events) events->signal(SIGKILL);
  }
  RunResult cli(const Args& args, const std::string& value = "") {
    RunOptions o;
    if (!value.empty()) o.env_extra = {"API_SECRET=" + value};
    RunResult r = d.cli(args, o);
    seen += r.out + r.err;
    return r;
  }
  // A daemon with record `api` at v1.
  void begin() {
    ASSERT_TRUE(d.start()) << d.stderrText();
    ASSERT_EQ(cli({"credential", "add", "api", "--host", servers.httpUrl(), "--from-env", "API_SECRET"}, v1).exit_code, 0);
  }
  std::string session() {
    Args a = {"session", "create", "--net", "proxy", "--credential", "api"};
    for (const std::string& o : Daemon::hostSessionOptions()) a.push_back(o);
    RunResult r = cli(a);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    std::string id = r.out;
    while (!id.empty() && id.back() == '\n') id.pop_back();
    return id;
  }
  // One request from inside; the header the upstream recorded for it.
  std::string ask(const std::string& id) {
    RunResult r = sessionExec(d, id, {"sh", "-c", kLookAndAsk});
    seen += r.out + r.err;
    EXPECT_NE(r.out.find("auth="), std::string::npos) << "the request never reached the upstream: " << r.describe();
    return servers.lastHeaders(false);
  }
  // Where either value was found outside the upstream.
  std::string leaks() {
    std::string where;
    for (const std::string* v : {&v1, &v2}) {
      if (seen.find(*v) != std::string::npos) where += "sandbox-or-client ";
      if (d.stderrText().find(*v) != std::string::npos) where += "daemon-stderr ";
      if (readHostFile(events_dir / "ev").find(*v) != std::string::npos) where += "events ";
      where += stateFilesHolding(d.stateDir(), *v);
    }
    return where;
  }
};

// ---- daemon.credential-rotation-reaches-sessions ----

TEST(DaemonCredentialRotationReachesSessions, ARunningSessionInjectsTheNewValueFromTheNextRequestOn) {
  Rotation t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  t.subscribe();
  ASSERT_EQ(t.cli({"credential", "add", "api", "--host", t.servers.httpUrl(), "--from-env", "API_SECRET"}, t.v1).exit_code, 0);
  const std::string id = t.session();
  ASSERT_FALSE(id.empty());
  // Control: before the rotation the session injects v1 (the check can see a value).
  const std::string before = t.ask(id);
  ASSERT_NE(before.find("Bearer " + t.v1), std::string::npos) << before;
  RunResult rot = t.cli({"credential", "rotate", "api", "--from-env", "API_SECRET", "--json"}, t.v2);
  ASSERT_EQ(rot.exit_code, 0) << rot.describe();
  const auto meta = nlohmann::json::parse(rot.out, nullptr, false);
  EXPECT_EQ(meta["version"], 2);
  EXPECT_EQ(meta["stale_leases"], 0) << "the running session was reached: " << meta.dump();
  EXPECT_EQ(meta["active_leases"], 1);
  for (int i = 0; i < 3; ++i) {
    const std::string after = t.ask(id);
    EXPECT_NE(after.find("Bearer " + t.v2), std::string::npos)
        << claim("daemon.credential-rotation-reaches-sessions", "request " + std::to_string(i) + " after rotate: " + after);
    EXPECT_EQ(after.find(t.v1), std::string::npos)
        << claim("daemon.credential-rotation-reaches-sessions", "the old value was injected after rotate returned");
  }
  EXPECT_EQ(t.leaks(), "") << claim("daemon.credential-rotation-reaches-sessions", "a value was seen where it must not be");
  EXPECT_NE(t.d.stderrText().find("event=credential_rotated"), std::string::npos);
  EXPECT_NE(t.d.stderrText().find("sessions_reached=1"), std::string::npos) << t.d.stderrText();
}

TEST(DaemonCredentialRotationReachesSessions, TheNewValueHoldsAcrossADaemonKillAndRestart) {
  Rotation t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.cli({"credential", "add", "api", "--host", t.servers.httpUrl(), "--from-env", "API_SECRET"}, t.v1).exit_code, 0);
  const std::string id = t.session();
  ASSERT_FALSE(id.empty());
  ASSERT_NE(t.ask(id).find("Bearer " + t.v1), std::string::npos);  // control
  ASSERT_EQ(t.cli({"credential", "rotate", "api", "--from-env", "API_SECRET"}, t.v2).exit_code, 0);
  t.d.kill9();
  // While no daemon runs, the session's shim serves on: already with v2.
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.d.curl("GET", "/v1/sessions/" + id).json()["state"], "running");
  t.subscribe();
  for (int i = 0; i < 2; ++i) {
    const std::string after = t.ask(id);
    EXPECT_NE(after.find("Bearer " + t.v2), std::string::npos)
        << claim("daemon.credential-rotation-reaches-sessions", "after a restart: " + after);
    EXPECT_EQ(after.find(t.v1), std::string::npos)
        << claim("daemon.credential-rotation-reaches-sessions", "the adopted session injected the old value");
  }
  EXPECT_EQ(t.cli({"credential", "show", "api", "--json"}).out.find("\"stale_leases\":1"), std::string::npos);
  EXPECT_EQ(t.leaks(), "") << claim("daemon.credential-rotation-reaches-sessions", "a value was seen where it must not be");
}

TEST(DaemonCredentialRotationReachesSessions, APausedSessionIsReachedTooAndRmStaysRefusedWhileLeased) {
  Rotation t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.cli({"credential", "add", "api", "--host", t.servers.httpUrl(), "--from-env", "API_SECRET"}, t.v1).exit_code, 0);
  const std::string id = t.session();
  ASSERT_FALSE(id.empty());
  RunResult pause = t.cli({"session", "pause", id});
  if (pause.exit_code != 0) GTEST_SKIP() << "no freezer here: " << pause.err;
  ASSERT_EQ(t.cli({"credential", "rotate", "api", "--from-env", "API_SECRET"}, t.v2).exit_code, 0);
  EXPECT_EQ(t.cli({"credential", "rm", "api"}).exit_code, 125) << "rm stays refused while a paused session leases it";
  ASSERT_EQ(t.cli({"session", "resume", id}).exit_code, 0);
  const std::string after = t.ask(id);
  EXPECT_NE(after.find("Bearer " + t.v2), std::string::npos) << claim("daemon.credential-rotation-reaches-sessions", "paused: " + after);
  EXPECT_EQ(t.leaks(), "");
}

// A rotation cut short for real: two sessions lease the record; the shim of the first one the
// rotation pushes to (leaseholders go in session id order) is stopped, so the rotation waits on
// it and never reaches the second; the daemon is killed with SIGKILL then (the value sealed,
// version 2, both lease rows on 1: stale_leases 2). A loop inside the second session asks the
// upstream every 300 ms while no daemon runs: it still injects v1 (the control: the state is
// real and this test could see the old value). After the restart (renewStaleLeases before it
// serves) both sessions inject v2 and never v1, and stale_leases is 0.
TEST(DaemonCredentialRotationReachesSessions, ARestartFinishesARotationTheDaemonsDeathCutShort) {
  Rotation t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_NO_FATAL_FAILURE(t.begin());
  const std::string a = t.session();
  ASSERT_FALSE(a.empty());
  const std::vector<pid_t> first = shimProcesses(t.d.stateDir());
  ASSERT_EQ(first.size(), 1u);
  const std::string b = t.session();
  ASSERT_FALSE(b.empty());
  std::vector<pid_t> both = shimProcesses(t.d.stateDir());
  ASSERT_EQ(both.size(), 2u);
  const pid_t shim_a = first[0], shim_b = both[0] == shim_a ? both[1] : both[0];
  // The one pushed to first is stopped; the other is the one the rotation never reaches.
  const bool a_first = a < b;
  const std::string unreached = a_first ? b : a;
  const pid_t stopped = a_first ? shim_a : shim_b;
  ASSERT_NE(t.ask(a).find("Bearer " + t.v1), std::string::npos);  // control: both leases work
  ASSERT_NE(t.ask(unreached).find("Bearer " + t.v1), std::string::npos);
  // Requests from inside that go on while no daemon runs (the output goes nowhere).
  RunResult loop = sessionExec(t.d, unreached,
                               {"sh", "-c", "nohup sh -c 'while :; do curl -sS --max-time 5 http://127.0.0.1:3128/lease/api/lease-check; "
                                            "sleep 0.3; done' >/dev/null 2>&1 </dev/null & true"});
  ASSERT_EQ(loop.exit_code, 0) << loop.describe();
  ASSERT_EQ(::kill(stopped, SIGSTOP), 0);
  RunOptions o;
  o.env_extra = {"API_SECRET=" + t.v2};
  o.deadline = std::chrono::milliseconds(280'000);
  auto rotation = std::async(std::launch::async, [&] { return t.d.cli({"credential", "rotate", "api", "--from-env", "API_SECRET"}, o); });
  // Sealed and counted (version 2, both leases stale): the rotation now waits on the stopped shim.
  // (Read from the database: a show would wait on the stopped shim to collect its uses.)
  ASSERT_TRUE(eventually([&] { return storedStaleness(t.d.stateDir()) == "2 2"; })) << storedStaleness(t.d.stateDir());
  ::usleep(500'000);
  t.d.kill9();
  EXPECT_EQ(storedStaleness(t.d.stateDir()), "2 2") << "control: the killed daemon left both leases stale";
  ::kill(stopped, SIGCONT);
  EXPECT_NE(rotation.get().exit_code, 0) << "the rotation cannot have answered: its daemon died";
  EXPECT_EQ(t.d.stderrText().find("event=credential_lease_cut"), std::string::npos) << "no shim was cut before the kill";
  // Control: with no daemon, the session the rotation never reached still injects the old value.
  const int at_kill = t.servers.count(false);
  ASSERT_TRUE(eventually([&] { return t.servers.count(false) >= at_kill + 2; })) << "the loop inside the session stopped asking";
  EXPECT_NE(t.servers.lastHeaders(false).find("Bearer " + t.v1), std::string::npos)
      << "control: the unreached session should still be on v1 until the restart: " << t.servers.lastHeaders(false);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  EXPECT_NE(t.d.stderrText().find("event=credential_rotation_finished"), std::string::npos) << t.d.stderrText();
  EXPECT_NE(t.d.stderrText().find("sessions_reached=2"), std::string::npos) << t.d.stderrText();
  // From the restart on: the loop's requests and each session's next request carry v2, never v1.
  const int at_start = t.servers.count(false);
  ASSERT_TRUE(eventually([&] { return t.servers.count(false) >= at_start + 2; }));
  EXPECT_NE(t.servers.lastHeaders(false).find("Bearer " + t.v2), std::string::npos)
      << claim("daemon.credential-rotation-reaches-sessions", "the loop after the restart: " + t.servers.lastHeaders(false));
  for (const std::string& id : {a, b}) {
    ASSERT_EQ(t.d.curl("GET", "/v1/sessions/" + id).json()["state"], "running") << id;
    const std::string after = t.ask(id);
    EXPECT_NE(after.find("Bearer " + t.v2), std::string::npos)
        << claim("daemon.credential-rotation-reaches-sessions", "after the restart, session " + id + ": " + after);
    EXPECT_EQ(after.find(t.v1), std::string::npos)
        << claim("daemon.credential-rotation-reaches-sessions", "an adopted session injected the old value after the restart");
  }
  const auto meta = nlohmann::json::parse(t.cli({"credential", "show", "api", "--json"}).out, nullptr, false);
  EXPECT_EQ(meta["stale_leases"], 0) << claim("daemon.credential-rotation-reaches-sessions", "still stale: " + meta.dump());
  EXPECT_EQ(meta["active_leases"], 2) << meta.dump();
  EXPECT_EQ(storedStaleness(t.d.stateDir()), "2 0");
  EXPECT_EQ(t.leaks(), "") << claim("daemon.credential-rotation-reaches-sessions", "a value was seen where it must not be");
}

// A lease read before a rotation whose row that rotation could not list (here: a recover whose
// new shim is stopped before it is ready, so the recover waits in its launch while the whole
// rotation runs; a recovering session is no leaseholder) starts its shim with v1; the recover
// catches up before it answers, so the session's first request carries v2.
TEST(DaemonCredentialRotationReachesSessions, ALeaseReadBeforeARotationItMissedCatchesUpBeforeTheAnswer) {
  Rotation t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_NO_FATAL_FAILURE(t.begin());
  const std::string id = t.session();
  ASSERT_FALSE(id.empty());
  ASSERT_NE(t.ask(id).find("Bearer " + t.v1), std::string::npos);  // control
  t.d.kill9();
  for (pid_t pid : shimProcesses(t.d.stateDir())) ::kill(pid, SIGKILL);
  ASSERT_TRUE(eventually([&] { return shimProcesses(t.d.stateDir()).empty(); }));
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  auto recover = std::async(std::launch::async, [&] { return t.d.cli({"session", "recover", id}); });
  pid_t shim = 0;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60); !shim && std::chrono::steady_clock::now() < until;) {
    try {  // spun on: a process that exits while its cmdline is read throws from the stream
      if (auto found = shimProcesses(t.d.stateDir()); !found.empty()) shim = found[0];
    } catch (const std::exception&) {
    }
  }
  ASSERT_NE(shim, 0) << "the recover started no shim";
  ASSERT_EQ(::kill(shim, SIGSTOP), 0);
  ::usleep(300'000);
  const std::string state = stored(t.d.stateDir(), "SELECT state FROM sessions WHERE id='" + id + "'");
  if (state != "recovering") {
    ::kill(shim, SIGCONT);
    (void)recover.get();
    GTEST_SKIP() << "the new shim was ready before it could be stopped (state " << state << "): the interleaving was not forced";
  }
  RunResult rot = t.cli({"credential", "rotate", "api", "--from-env", "API_SECRET", "--json"}, t.v2);
  ASSERT_EQ(rot.exit_code, 0) << rot.describe();
  EXPECT_NE(t.d.stderrText().find("sessions_reached=0"), std::string::npos) << "the recovering session was no leaseholder";
  EXPECT_EQ(stored(t.d.stateDir(), "SELECT version FROM session_credentials WHERE session_id='" + id + "'"), "1")
      << "control: the recover's lease row is on the value it read before the rotation";
  ::kill(shim, SIGCONT);
  RunResult rec = recover.get();
  ASSERT_EQ(rec.exit_code, 0) << rec.describe();
  EXPECT_NE(t.d.stderrText().find("event=credential_lease_caught_up session=" + id), std::string::npos) << t.d.stderrText();
  const std::string first = t.ask(id);
  EXPECT_NE(first.find("Bearer " + t.v2), std::string::npos)
      << claim("daemon.credential-rotation-reaches-sessions", "a session whose lease was read before the rotation: " + first);
  EXPECT_EQ(first.find(t.v1), std::string::npos)
      << claim("daemon.credential-rotation-reaches-sessions", "the old value was injected after rotate returned");
  EXPECT_EQ(storedStaleness(t.d.stateDir()), "2 0");
  EXPECT_EQ(t.leaks(), "") << claim("daemon.credential-rotation-reaches-sessions", "a value was seen where it must not be");
}

// Fail closed: a shim that cannot take the new value (here: stopped, so it never answers) must
// not go on injecting the old one. The rotation waits out its control link, kills that shim,
// and the session's lease is gone: no request with v1 reaches the upstream afterwards.
TEST(DaemonCredentialRotationReachesSessions, AShimThatDoesNotTakeTheNewValueIsCutOff) {
  Rotation t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.cli({"credential", "add", "api", "--host", t.servers.httpUrl(), "--from-env", "API_SECRET"}, t.v1).exit_code, 0);
  const std::string id = t.session();
  ASSERT_FALSE(id.empty());
  ASSERT_NE(t.ask(id).find("Bearer " + t.v1), std::string::npos);  // control: the lease works
  const std::vector<pid_t> shims = shimProcesses(t.d.stateDir());
  ASSERT_EQ(shims.size(), 1u);
  ASSERT_EQ(::kill(shims[0], SIGSTOP), 0);
  RunOptions o;
  o.env_extra = {"API_SECRET=" + t.v2};
  o.deadline = std::chrono::milliseconds(280'000);
  RunResult rot = t.d.cli({"credential", "rotate", "api", "--from-env", "API_SECRET"}, o);
  EXPECT_EQ(rot.exit_code, 0) << rot.describe();
  EXPECT_NE(t.d.stderrText().find("event=credential_lease_cut"), std::string::npos) << t.d.stderrText();
  EXPECT_TRUE(eventually([&] { return shimProcesses(t.d.stateDir()).empty(); }))
      << claim("daemon.credential-rotation-reaches-sessions", "the shim that missed the rotation still runs");
  const int before = t.servers.count(false);
  (void)sessionExec(t.d, id, {"sh", "-c", "curl -sS --max-time 5 http://127.0.0.1:3128/lease/api/lease-check"});
  EXPECT_EQ(t.servers.count(false), before) << claim("daemon.credential-rotation-reaches-sessions", "a cut-off session reached the upstream");
  EXPECT_EQ(t.servers.lastHeaders(false).find(t.v2), std::string::npos);
  EXPECT_EQ(t.leaks(), "");
}

}  // namespace
}  // namespace corral::testing
