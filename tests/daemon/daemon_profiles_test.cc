// SPDX-License-Identifier: Apache-2.0
// Startup profiles against a real daemon (claims/daemon.toml: daemon.profile-overrides-only-narrow,
// daemon.profile-edits-spare-running-sessions): the JSON Schema in docs/ and the daemon agree
// on every example, overrides only narrow, a startup command's readiness probe gates the
// create, and a new version of a profile changes no session made from an older one.
#include <sstream>

#include <gtest/gtest.h>

#include "daemon_fixture.h"

namespace corral::testing {
namespace {

using Args = std::vector<std::string>;
using nlohmann::json;

// The host's limits this daemon cannot enforce, as a profile must accept them (rootless:
// the uncapped workspace).
json weaker() {
  json w = json::array();
  for (const std::string& o : Daemon::hostSessionOptions())
    if (o != "--allow-weaker") w.push_back(o);
  return w;
}

struct ProfileRun {
  Daemon d;
  TempDir files{"profiles"};

  RunResult add(const json& doc) {
    const std::string name = doc.value("name", std::string("unnamed")) + "-" + uniqueName("p") + ".json";
    files.write(name, doc.dump());
    return d.cli({"profile", "add", files / name, "--json"});
  }
  RunResult create(const Args& opts) {
    Args a = {"session", "create", "--json"};
    a.insert(a.end(), opts.begin(), opts.end());
    return d.cli(a);
  }
  json sessions() { return json::parse(d.cli({"session", "ls", "--json"}).out, nullptr, false)["sessions"]; }
};

// ---- the schema (docs/profile.schema.json) ----

TEST(DaemonProfileSchema, TheSchemaAndTheDaemonAgreeOnEveryExample) {
  if (run({"/usr/bin/python3", "-c", "import jsonschema"}).exit_code != 0)
    GTEST_SKIP() << "python3-jsonschema is not installed (scripts/bootstrap.sh installs it): docs/profile.schema.json NOT checked";
  ProfileRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  const std::string dir = CORRAL_SOURCE_DIR "/tests/daemon/profiles";
  // One python run for every example: "NAME valid" or "NAME invalid" per line.
  const std::string check =
      "import json, os, sys, jsonschema\n"
      "v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))\n"
      "v.check_schema(v.schema)\n"
      "for f in sorted(os.listdir(sys.argv[2])):\n"
      "    print(f, 'valid' if v.is_valid(json.load(open(os.path.join(sys.argv[2], f)))) else 'invalid')\n";
  RunResult schema = run({"/usr/bin/python3", "-c", check, CORRAL_DOCS_DIR "/profile.schema.json", dir});
  ASSERT_EQ(schema.exit_code, 0) << schema.describe();
  int valid = 0, invalid = 0;
  std::istringstream lines(schema.out);
  for (std::string base, verdict; lines >> base >> verdict;) {
    const bool want_valid = base.rfind("valid-", 0) == 0;
    EXPECT_EQ(verdict, want_valid ? "valid" : "invalid") << base << ": the schema disagrees with the example's name";
    RunResult daemon = t.d.cli({"profile", "add", dir + "/" + base});
    EXPECT_EQ(daemon.exit_code, want_valid ? 0 : 125) << base << ": the daemon disagrees with the schema: " << daemon.describe();
    if (!want_valid) {
      EXPECT_EQ(daemon.err.rfind("corral: profile: profile", 0), 0u) << daemon.err;
    }
    (want_valid ? valid : invalid)++;
  }
  EXPECT_GE(valid, 3);
  EXPECT_GE(invalid, 10);
}

// ---- daemon.profile-overrides-only-narrow ----

TEST(DaemonProfileOverridesOnlyNarrow, AWideningOverrideIsRefusedAndNothingIsMade) {
  ProfileRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.add({{"name", "small"},
                   {"session", {{"limits", {{"pids", 64}, {"tmp_size", "64M"}, {"allow_weaker", weaker()}}}, {"ttl", "1h"}}}})
                .exit_code,
            0);
  const Args host = Daemon::hostSessionOptions();
  auto refused = [&](Args opts, const std::string& want) {
    opts.insert(opts.begin(), {"--profile", "small"});
    opts.insert(opts.end(), host.begin(), host.end());
    RunResult r = t.create(opts);
    EXPECT_EQ(r.exit_code, 125) << claim("daemon.profile-overrides-only-narrow", "a widening was accepted: " + r.describe());
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  refused({"--pids", "65"}, "override limits.pids 65 widens the profile's 64");
  refused({"--tmp-size", "1G"}, "override limits.tmp_size");
  refused({"--ttl", "2h"}, "override ttl");
  refused({"--net", "proxy", "--allow", "https://example.com"}, "override net proxy widens the profile's none");
  refused({"--allow-weaker", "memory"}, "override limits.allow_weaker memory");
  EXPECT_TRUE(t.sessions().empty()) << "a refused create left a session: " << t.sessions().dump();
  // Control: narrowing overrides are taken, and the session says where it came from.
  Args ok = {"--profile", "small", "--pids", "32", "--ttl", "30m"};
  ok.insert(ok.end(), host.begin(), host.end());
  RunResult r = t.create(ok);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  json s = json::parse(r.out);
  EXPECT_EQ(s["limits"]["pids"], 32);
  EXPECT_EQ(s["limits"]["tmp_size"], std::to_string(64 << 20)) << "the profile's own value kept";
  EXPECT_EQ(s["profile"], "small");
  EXPECT_EQ(s["profile_version"], 1);
  EXPECT_TRUE(s.contains("expires_at_ms"));
  // The limit is real inside: /tmp is the profile's 64M tmpfs.
  RunResult df = sessionExec(t.d, s["id"], {"sh", "-c", "df -k /tmp | tail -1 | awk '{print $2}'"});
  EXPECT_EQ(df.out, "65536\n") << df.describe();
}

TEST(DaemonProfileOverridesOnlyNarrow, AnUnknownProfileOrVersionIsRefused) {
  ProfileRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.add({{"name", "one"}}).exit_code, 0);
  for (const Args& opts : {Args{"--profile", "nope"}, Args{"--profile", "one@2"}, Args{"--profile", "one@x"}}) {
    RunResult r = t.create(opts);
    EXPECT_EQ(r.exit_code, 125) << r.describe();
  }
  EXPECT_TRUE(t.sessions().empty());
}

// ---- startup command and readiness probe ----

TEST(DaemonProfileStartup, TheCreateIsAnsweredOnceTheProbePassesAndRefusedWhenItNever) {
  ProfileRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  const json limits = {{"allow_weaker", weaker()}};
  ASSERT_EQ(t.add({{"name", "server"},
                   {"session", {{"limits", limits}}},
                   {"startup", {{"argv", {"sh", "-c", "sleep 0.3; echo up > /workspace/ready; sleep 1000"}},
                                {"ready", {{"argv", {"test", "-f", "/workspace/ready"}}, {"interval", "50ms"}, {"timeout", "60s"}}}}}})
                .exit_code,
            0);
  Args opts = {"--profile", "server"};
  for (const std::string& o : Daemon::hostSessionOptions()) opts.push_back(o);
  RunResult r = t.create(opts);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  json s = json::parse(r.out);
  EXPECT_EQ(s["startup"]["ready"], true) << s.dump();
  EXPECT_GE(s["startup"]["probes"].get<int>(), 1);
  // Answered only once ready: the file is there at once.
  EXPECT_EQ(sessionExec(t.d, s["id"], {"cat", "ready"}).out, "up\n");
  ASSERT_EQ(t.add({{"name", "never"},
                   {"session", {{"limits", limits}}},
                   {"startup", {{"argv", {"sleep", "1000"}}, {"ready", {{"argv", {"false"}}, {"interval", "100ms"}, {"timeout", "1s"}}}}}})
                .exit_code,
            0);
  opts[1] = "never";
  RunResult bad = t.create(opts);
  EXPECT_EQ(bad.exit_code, 125) << bad.describe();
  EXPECT_NE(bad.err.find("readiness probe did not pass within 1000ms"), std::string::npos) << bad.err;
  EXPECT_EQ(t.sessions().size(), 1u) << "the session whose probe failed was removed: " << t.sessions().dump();
}

// ---- daemon.profile-edits-spare-running-sessions ----

TEST(DaemonProfileEditsSpareRunningSessions, ANewVersionChangesNoSessionMadeFromTheOldOne) {
  ProfileRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  auto version = [&](const std::string& greeting, int pids) {
    return json{{"name", "edited"},
                {"description", "greeting " + greeting},
                {"session", {{"env", {"GREETING=" + greeting}}, {"limits", {{"pids", pids}, {"allow_weaker", weaker()}}}}}};
  };
  RunResult v1 = t.add(version("one", 100));
  ASSERT_EQ(v1.exit_code, 0) << v1.describe();
  EXPECT_EQ(json::parse(v1.out)["version"], 1);
  Args opts = {"--profile", "edited"};
  for (const std::string& o : Daemon::hostSessionOptions()) opts.push_back(o);
  RunResult a = t.create(opts);
  ASSERT_EQ(a.exit_code, 0) << a.describe();
  const std::string old_id = json::parse(a.out)["id"];
  RunResult v2 = t.add(version("two", 50));
  ASSERT_EQ(v2.exit_code, 0) << v2.describe();
  EXPECT_EQ(json::parse(v2.out)["version"], 2);
  // The old session: the first version's environment and limits, and says so.
  EXPECT_EQ(sessionExec(t.d, old_id, {"sh", "-c", "echo $GREETING"}).out, "one\n")
      << claim("daemon.profile-edits-spare-running-sessions", "a running session took the new version");
  json old_show = json::parse(t.d.cli({"session", "show", old_id, "--json"}).out);
  EXPECT_EQ(old_show["limits"]["pids"], 100);
  EXPECT_EQ(old_show["profile_version"], 1);
  // Control: a new session gets the new version, and @1 still names the old one.
  RunResult b = t.create(opts);
  ASSERT_EQ(b.exit_code, 0) << b.describe();
  json bs = json::parse(b.out);
  EXPECT_EQ(bs["limits"]["pids"], 50);
  EXPECT_EQ(bs["profile_version"], 2);
  EXPECT_EQ(sessionExec(t.d, bs["id"], {"sh", "-c", "echo $GREETING"}).out, "two\n");
  opts[1] = "edited@1";
  RunResult c = t.create(opts);
  ASSERT_EQ(c.exit_code, 0) << c.describe();
  EXPECT_EQ(sessionExec(t.d, json::parse(c.out)["id"], {"sh", "-c", "echo $GREETING"}).out, "one\n");
  // ls shows the newest; show --version the old; rm removes every version, sessions go on.
  json ls = json::parse(t.d.cli({"profile", "ls", "--json"}).out);
  ASSERT_EQ(ls["profiles"].size(), 1u);
  EXPECT_EQ(ls["profiles"][0]["version"], 2);
  EXPECT_EQ(ls["profiles"][0]["versions"], 2);
  EXPECT_EQ(ls["profiles"][0]["description"], "greeting two");
  json shown = json::parse(t.d.cli({"profile", "show", "edited", "--version", "1", "--json"}).out);
  EXPECT_EQ(shown["profile"]["description"], "greeting one");
  RunResult rm = t.d.cli({"profile", "rm", "edited"});
  EXPECT_EQ(rm.exit_code, 0) << rm.describe();
  EXPECT_EQ(t.d.cli({"profile", "show", "edited"}).exit_code, 125);
  EXPECT_EQ(sessionExec(t.d, old_id, {"true"}).exit_code, 0) << "removing a profile ended a session";
}

}  // namespace
}  // namespace corral::testing
