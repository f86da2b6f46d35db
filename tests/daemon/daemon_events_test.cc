// SPDX-License-Identifier: Apache-2.0
// GET /v1/events (claims/daemon.toml: daemon.events-ids-counts-only, daemon.events-bounded):
// a real subscriber (sse_client.py) sees session lifecycle, commands started and exited and
// credential uses, with no value, argument, environment value or output in any of them; one
// that never reads costs the daemon a bounded queue and loses counted events, while a reading
// one beside it misses nothing.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "daemon_fixture.h"
#include "egress_fixture.h"

namespace corral::testing {
namespace {

using nlohmann::json;

struct Subscriber {
  TempDir dir{"sse"};
  std::string out = dir / "events";
  std::optional<Process> proc;
  Subscriber(const Daemon& d, const char* mode) {
    proc.emplace(Process::start({"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/sse_client.py", d.socket(), out, mode},
                                {.deadline = std::chrono::milliseconds(300'000)}));
  }
  ~Subscriber() {
    if (proc) proc->signal(SIGKILL);
  }
  std::string text() const { return readHostFile(out); }
  std::vector<json> events() const {
    std::vector<json> v;
    std::istringstream in(text());
    for (std::string l; std::getline(in, l);)
      if (l.rfind("data: ", 0) == 0) v.push_back(json::parse(l.substr(6), nullptr, false));
    return v;
  }
  bool has(const std::string& event, const std::string& session = "") const {
    for (const json& e : events())
      if (e.is_object() && e["event"] == event && (session.empty() || e.value("session", "") == session)) return true;
    return false;
  }
};

// ---- daemon.events-ids-counts-only ----

TEST(DaemonEventsIdsCountsOnly, LifecycleCommandsAndCredentialUsesWithoutAnyValue) {
  const std::string secret = "corral-sentinel-ev-" + uniqueName("s"), env_value = "corral-sentinel-env-" + uniqueName("e"),
                    arg = "corral-sentinel-arg-" + uniqueName("a");
  EgressServers servers({"CORRAL_TEST_LEASE_SECRET=" + secret});
  REQUIRE_SERVERS(servers);
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  Subscriber sub(d, "read");
  ASSERT_TRUE(eventually([&] { return sub.text().find("200 OK") != std::string::npos; })) << sub.text();
  RunOptions with_secret;
  with_secret.env_extra = {"API_SECRET=" + secret};
  ASSERT_EQ(d.cli({"credential", "add", "api", "--host", servers.httpUrl(), "--from-env", "API_SECRET"}, with_secret).exit_code, 0);
  const std::string id = d.createSession({"--net", "proxy", "--credential", "api", "--env", "SECRET_ENV=" + env_value});
  ASSERT_FALSE(id.empty());
  RunResult r = sessionExec(d, id, {"sh", "-c", "echo " + arg + "; curl -sS --max-time 20 http://127.0.0.1:3128/lease/api/lease-check; exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.describe();
  EXPECT_NE(r.out.find("auth=ok"), std::string::npos) << r.out;
  ASSERT_EQ(d.cli({"session", "rm", id}).exit_code, 0);
  ASSERT_TRUE(eventually([&] { return sub.has("session_removed", id); })) << sub.text();
  for (const char* want : {"credential_added", "session_created", "command_started", "command_exited", "credential_used", "egress_decision"})
    EXPECT_TRUE(sub.has(want)) << want << " missing: " << sub.text();
  for (const json& e : sub.events()) {
    ASSERT_TRUE(e.is_object()) << sub.text();
    EXPECT_TRUE(e["id"].is_number_integer()) << e.dump();
    if (e["event"] == "command_exited") {
      EXPECT_EQ(e["exit_code"], 3) << e.dump();
    }
    if (e["event"] == "credential_used") {
      EXPECT_EQ(e["uses"], 1) << e.dump();
    }
    if (e["event"] == "egress_decision") {  // one by one: the host and the decision only
      EXPECT_EQ(e["decision"], "allow") << e.dump();
      EXPECT_EQ(e["session"], id) << e.dump();
      EXPECT_TRUE(e["host"].is_string() && e["seq"].is_number_integer()) << e.dump();
    }
  }
  const std::string all = sub.text();
  for (const std::string& v : {secret, env_value, arg, std::string("auth=ok")})
    EXPECT_EQ(all.find(v), std::string::npos) << claim("daemon.events-ids-counts-only", "a value on the event stream: " + v.substr(0, 24));
  EXPECT_NE(all.find(id), std::string::npos) << "control: the scan must see what it reads (the session's id is in it)";
}

TEST(DaemonEventsIdsCountsOnly, AnotherUidSeesNoneOfTheEvents) {
  CORRAL_REQUIRE_ROOT("the subscriber connects as uid 65534 to a root daemon");
  Daemon d({"--allow-group", "nogroup"});
  ASSERT_TRUE(d.start()) << d.stderrText();
  ASSERT_EQ(::chmod(d.stateDir().c_str(), 0755), 0);
  TempDir dir("sse-nobody");
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  const std::string out = dir / "events";
  Process nobody = Process::start({"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/sse_client.py", d.socket(), out, "read"},
                                  {.as_user = kNobody});
  Subscriber root(d, "read");
  ASSERT_TRUE(eventually([&] { return readHostFile(out).find("200 OK") != std::string::npos && root.text().find("200 OK") != std::string::npos; }));
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(d.cli({"session", "rm", id}).exit_code, 0);
  ASSERT_TRUE(eventually([&] { return root.has("session_removed", id); })) << "control: root's subscriber sees it";
  EXPECT_EQ(readHostFile(out).find(id), std::string::npos) << claim("daemon.events-ids-counts-only", "uid 65534 saw root's session");
  nobody.signal(SIGKILL);
}

// ---- daemon.events-bounded ----

TEST(DaemonEventsBounded, ASubscriberThatNeverReadsCostsABoundedQueueAndCountedLosses) {
  Daemon d({"--event-queue", "64"});
  ASSERT_TRUE(d.start()) << d.stderrText();
  Subscriber stalled(d, "stall");
  ASSERT_TRUE(eventually([&] { return stalled.text().find("subscribed") != std::string::npos; })) << stalled.text();
  Subscriber reader(d, "read");
  ASSERT_TRUE(eventually([&] { return reader.text().find("200 OK") != std::string::npos; }));
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  const long before = rssKiB(d.pid());
  // 600 detached commands (two events each) through the API from one python client: far more
  // than the stalled client's socket buffers and its queue of 64 hold.
  const std::string flood =
      "import http.client, json, socket, sys\n"
      "class C(http.client.HTTPConnection):\n"
      "    def connect(self):\n"
      "        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); self.sock.connect(sys.argv[1])\n"
      "c = C('corral')\n"
      "for i in range(600):\n"
      "    c.request('POST', '/v1/sessions/' + sys.argv[2] + '/commands', json.dumps({'argv': ['true']}), {'Content-Type': 'application/json'})\n"
      "    r = c.getresponse(); r.read()\n"
      "    assert r.status == 201, r.status\n";
  RunResult f = run({"/usr/bin/python3", "-c", flood, d.socket(), id}, {.deadline = std::chrono::milliseconds(280'000)});
  ASSERT_EQ(f.exit_code, 0) << f.describe();
  // Every command's exit is recorded by the watcher: the reader gets all 1200 events.
  auto count = [&](const char* ev) {
    int n = 0;
    for (const json& e : reader.events()) n += e.is_object() && e["event"] == ev;
    return n;
  };
  ASSERT_TRUE(eventually([&] { return count("command_exited") == 600; })) << count("command_exited");
  EXPECT_EQ(count("command_started"), 600) << "control: a reading subscriber loses nothing";
  EXPECT_EQ(reader.text().find("event: lost"), std::string::npos);
  ASSERT_TRUE(eventually([&] { return d.stderrText().find("event=events_dropped") != std::string::npos; }))
      << claim("daemon.events-bounded", "the stalled subscriber lost nothing: it was queued without bound");
  // The loss started at the queue's bound, not later.
  EXPECT_NE(d.stderrText().find("queue=64"), std::string::npos) << d.stderrText();
  const long after = rssKiB(d.pid());
  ASSERT_GT(before, 0);
  std::printf("daemon RSS before the flood %ld KiB, after %ld KiB (1200 events, a stalled subscriber with a queue of 64)\n", before, after);
  // Held without a bound, 1200 events of ~150 bytes would be ~0.2 MiB: the queue bound above is
  // the test; this only shows nothing else grew (SQLite's cache and 600 command rows are in it).
#if defined(__SANITIZE_ADDRESS__) || defined(CORRAL_SANITIZED)
  // AddressSanitizer keeps freed memory in its quarantine (256 MiB by default) and pads every
  // allocation, so RSS measures it, not the daemon: 300 MiB of growth was seen here. The queue
  // bound above is the claim's test under the sanitizers too.
  std::printf("RSS bound not checked: AddressSanitizer's quarantine holds freed memory\n");
#else
  EXPECT_LT(after - before, 16 * 1024) << claim("daemon.events-bounded", "RSS grew " + std::to_string(after - before) + " KiB");
#endif
  EXPECT_EQ(d.curl("GET", "/v1/health").status, 200) << "the daemon still serves";
}

}  // namespace
}  // namespace corral::testing
