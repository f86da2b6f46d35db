// SPDX-License-Identifier: Apache-2.0
// The daemon's hash-chained event log (STATE/audit.jsonl): every event names its peer, the
// chain verifies across a kill -9, an edit or a dropped line breaks it, and no secret, env
// value, file content or command output reaches it (nor stderr nor the store).
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

std::vector<nlohmann::json> events(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(fileText(path));
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line, nullptr, false));
  return out;
}

RunResult verifyLog(const std::string& path) { return run({corralBin(), "daemon", "verify-log", path}); }

// ---- daemon.audit-log-chained ----

TEST(DaemonAuditLogChained, EveryEventNamesItsPeerAndTheChainHoldsAcrossAKill) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(sessionExec(d, id, {"true"}).exit_code, 0);
  d.kill9();
  ASSERT_TRUE(d.start()) << d.stderrText();  // the chain goes on from its last line
  ASSERT_EQ(d.cli({"session", "rm", id}).exit_code, 0);
  const std::string log = d.stateDir() + "/audit.jsonl";
  RunResult v = verifyLog(log);
  EXPECT_EQ(v.exit_code, 0) << claim("daemon.audit-log-chained", "the real log does not verify: " + v.describe());
  std::vector<std::string> names;
  for (const auto& e : events(log)) {
    ASSERT_TRUE(e.is_object());
    EXPECT_TRUE(e["peer_uid"].is_number_integer() && e["peer_pid"].is_number_integer() && e["peer_pid"].get<int>() > 0)
        << claim("daemon.audit-log-chained", "an event without its peer: " + e.dump());
    names.push_back(e["event"].get<std::string>());
  }
  for (const char* want : {"daemon_started", "session_created", "command_started", "session_adopted", "session_removed"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want << " missing";
  // The CLI's own pid made the create: the peer is the client, not the daemon.
  for (const auto& e : events(log)) {
    if (e["event"] == "session_created") {
      EXPECT_NE(e["peer_pid"], e["shim_pid"]);
    }
  }
}

TEST(DaemonAuditLogChained, ControlAnEditedOrDroppedLineFailsVerification) {
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession();
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(d.cli({"session", "rm", id}).exit_code, 0);
  const std::string log = d.stateDir() + "/audit.jsonl";
  std::vector<std::string> lines;
  {
    std::istringstream in(fileText(log));
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  ASSERT_GE(lines.size(), 3u);
  TempDir t("auditedit");
  auto write = [&](const std::string& name, const std::vector<std::string>& ls) {
    std::ofstream out(t / name);
    for (const auto& l : ls) out << l << "\n";
    return t / name;
  };
  EXPECT_EQ(verifyLog(write("same", lines)).exit_code, 0) << "control: an unchanged copy verifies";
  std::vector<std::string> edited = lines;
  const size_t at = edited[1].find(id);
  ASSERT_NE(at, std::string::npos) << edited[1];
  edited[1].replace(at, id.size(), std::string(id.size(), 'f'));
  RunResult e = verifyLog(write("edited", edited));
  EXPECT_EQ(e.exit_code, 1) << claim("daemon.audit-log-chained", "an edited event verified: " + e.describe());
  EXPECT_NE(e.err.find("event 2"), std::string::npos) << e.err;
  std::vector<std::string> dropped = lines;
  dropped.erase(dropped.begin() + 1);
  EXPECT_EQ(verifyLog(write("dropped", dropped)).exit_code, 1) << claim("daemon.audit-log-chained", "a dropped event verified");
}

// ---- daemon.no-secrets-in-audit-log ----

TEST(DaemonNoSecretsInAuditLog, EnvValuesFileContentsAndOutputReachNoLogNorStore) {
  const std::string env_s = "corral-sentinel-env-" + uniqueName("v"), cmd_s = "corral-sentinel-cmd-" + uniqueName("v"),
                    file_s = "corral-sentinel-file-" + uniqueName("v");
  Daemon d;
  ASSERT_TRUE(d.start()) << d.stderrText();
  const std::string id = d.createSession({"--env", "S1=" + env_s});
  ASSERT_FALSE(id.empty());
  // The command prints a value derived from both env values (so the output itself is secret).
  RunResult r = sessionExec(d, id, {"sh", "-c", "echo \"out-$S1-$S2\""}, {"--env", "S2=" + cmd_s});
  ASSERT_EQ(r.out, "out-" + env_s + "-" + cmd_s + "\n") << "control: the values reached the command: " << r.describe();
  TempDir local("auditcp");
  { std::ofstream(local / "f") << file_s; }
  ASSERT_EQ(d.cli({"session", "cp", local / "f", id + ":f"}).exit_code, 0);
  ASSERT_EQ(d.cli({"session", "cp", id + ":f", local / "back"}).exit_code, 0);
  ASSERT_EQ(fileText(local / "back"), file_s) << "control: the file went in and came back";
  d.kill9();
  const std::string audit = fileText(d.stateDir() + "/audit.jsonl");
  std::string rest = d.stderrText();
  for (const char* f : {"/state.db", "/state.db-wal", "/state.db-shm"}) rest += fileText(d.stateDir() + f);
  for (const std::string& s : {env_s, cmd_s, file_s}) {
    EXPECT_EQ(audit.find(s), std::string::npos) << claim("daemon.no-secrets-in-audit-log", "a value in the audit log");
    EXPECT_EQ(rest.find(s), std::string::npos) << claim("daemon.no-secrets-in-audit-log", "a value in stderr or the store");
  }
  EXPECT_NE(audit.find(id), std::string::npos) << "control: the scan reads the log (the session id is in it)";
  EXPECT_NE(audit.find("file_uploaded"), std::string::npos) << audit;
}

}  // namespace
}  // namespace corral::testing
