// SPDX-License-Identifier: Apache-2.0
// Credential records (claims/daemon.toml: daemon.credential-records-sealed,
// daemon.credentials-leased-through-proxy, daemon.credentials-per-uid): a sentinel value is
// added with the CLI, leased to a session through its egress proxy, and looked for everywhere
// it must not be: every API answer, the audit log, the daemon's stderr, every file of the
// state directory (the SQLite database and its WAL included) and what a command inside sees.
// The upstream is egress_servers.py on the host, which checks the injected header.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "daemon_fixture.h"
#include "egress_fixture.h"

namespace corral::testing {
namespace {

using Args = std::vector<std::string>;

std::string freshSecret() {
  std::random_device rd;
  std::string s = "corral-sentinel-cred-";
  for (int i = 0; i < 20; ++i) s += "0123456789abcdef"[rd() % 16];
  return s;
}

// The value as the upstream echoes it too: raw (the redactor must have removed it) and the
// base64 of the header value.
std::vector<std::string> leakForms(const std::string& secret) {
  static constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  auto b64 = [](const std::string& in) {
    std::string out;
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
      const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
      for (int s = 18; s >= 0; s -= 6) out += kB64[(v >> s) & 63];
    }
    return out;  // the whole groups: enough to recognise
  };
  return {secret, b64("Bearer " + secret).substr(0, 24)};
}

// Where the value was found, or "" when nowhere.
std::string foundIn(const std::string& where, const std::string& text, const std::string& secret) {
  for (const std::string& f : leakForms(secret))
    if (text.find(f) != std::string::npos) return where;
  return "";
}

// Every regular file under the state directory, raw (a mounted workspace's files included; a
// workspace image itself is skipped: what is written into it is read through its mount).
std::string stateFilesHolding(const std::string& state_dir, const std::string& secret) {
  std::string hits;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(state_dir, std::filesystem::directory_options::skip_permission_denied, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file(ec) || it->path().extension() == ".img") continue;
    const std::string hit = foundIn(it->path().string(), readHostFile(it->path().string()), secret);
    if (!hit.empty()) hits += hit + " ";
  }
  return hits;
}

// What a command inside can look at: its environment, init's, its files, the proxied answer.
const char kLookEverywhere[] =
    "env; tr '\\0' '\\n' < /proc/self/environ; tr '\\0' '\\n' < /proc/1/environ 2>/dev/null;"
    "cat /proc/1/cmdline /proc/1/mem 2>/dev/null | tr '\\0' '\\n' | grep -a corral-sentinel;"
    "grep -rs corral-sentinel /workspace /tmp /etc 2>/dev/null;"
    "curl -sS --max-time 20 http://127.0.0.1:3128/lease/api/lease-check; true";

struct CredentialRun {
  explicit CredentialRun(Args daemon_args = {}) : d(std::move(daemon_args)) {}
  std::string secret = freshSecret();
  EgressServers servers{{"CORRAL_TEST_LEASE_SECRET=" + secret}};
  Daemon d;
  std::string seen;  // every answer the clients got

  RunResult cli(const Args& args, const std::string& value = "") {
    RunOptions o;
    if (!value.empty()) o.env_extra = {"API_SECRET=" + value};
    RunResult r = d.cli(args, o);
    seen += r.out + r.err;
    return r;
  }
  RunResult add(const std::string& value, const Args& extra = {}) {
    Args a = {"credential", "add", "api", "--host", servers.httpUrl(), "--from-env", "API_SECRET", "--json"};
    a.insert(a.end(), extra.begin(), extra.end());
    return cli(a, value);
  }
  std::string session(const Args& extra = {}) {
    Args a = {"session", "create", "--net", "proxy"};
    for (const std::string& o : Daemon::hostSessionOptions()) a.push_back(o);
    a.insert(a.end(), extra.begin(), extra.end());
    RunResult r = cli(a);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    std::string id = r.out;
    while (!id.empty() && id.back() == '\n') id.pop_back();
    return id;
  }
  RunResult inside(const std::string& id, const std::string& script) {
    RunResult r = sessionExec(d, id, {"sh", "-c", script});
    seen += r.out + r.err;
    return r;
  }
  nlohmann::json show(const std::string& name = "api") {
    RunResult r = cli({"credential", "show", name, "--json"});
    return nlohmann::json::parse(r.out, nullptr, false);
  }
};

// ---- daemon.credential-records-sealed ----

TEST(DaemonCredentialRecordsSealed, NoAnswerLogStateFileOrSandboxHoldsTheValue) {
  CredentialRun t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  RunResult added = t.add(t.secret);
  ASSERT_EQ(added.exit_code, 0) << added.describe();
  const std::string id = t.session({"--credential", "api"});
  ASSERT_FALSE(id.empty());
  RunResult r = t.inside(id, kLookEverywhere);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // The injection happened (the upstream saw the value), so the value was really in play.
  EXPECT_NE(r.out.find("auth=ok"), std::string::npos) << claim("daemon.credentials-leased-through-proxy", "not injected: " + r.out);
  EXPECT_NE(r.out.find("API=corral-lease-api-"), std::string::npos) << "no placeholder in $API: " << r.out;
  for (const std::string& path : Args{"/v1/credentials", "/v1/credentials/api", "/v1/sessions", "/v1/sessions/" + id})
    t.seen += t.d.curl("GET", path).body;
  t.seen += t.cli({"credential", "ls", "--json"}).out;
  // Across a restart too (the value was unsealed again for nothing, but the record is listed).
  ASSERT_TRUE(t.d.stopTerm());
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  t.seen += t.cli({"credential", "ls"}).out;
  ASSERT_EQ(t.cli({"session", "rm", id}).exit_code, 0);
  const std::string audit = fileText(t.d.stateDir() + "/audit.jsonl");
  t.d.kill9();
  std::string where = foundIn("an API answer or the sandbox's view", t.seen, t.secret) + foundIn(" the audit log", audit, t.secret) +
                      foundIn(" the daemon's stderr", t.d.stderrText(), t.secret) + " " + stateFilesHolding(t.d.stateDir(), t.secret);
  while (!where.empty() && where.back() == ' ') where.pop_back();
  while (!where.empty() && where.front() == ' ') where.erase(0, 1);
  EXPECT_EQ(where, "") << claim("daemon.credential-records-sealed", "the value is in: " + where);
  EXPECT_NE(audit.find("credential_added"), std::string::npos) << audit;
  EXPECT_NE(audit.find("credential_used"), std::string::npos) << audit;
}

// The same search, where the value is put on purpose: it finds it in each place it looks.
TEST(DaemonCredentialRecordsSealed, ControlTheSearchFindsAValuePutWhereItLooks) {
  CredentialRun t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  // A session name is shown back by the API and kept in the store; a file in the workspace
  // is in the state directory; --env reaches the sandbox's environment.
  const std::string id = t.session({"--name", t.secret, "--env", "OTHER=" + t.secret});
  ASSERT_FALSE(id.empty());
  RunResult r = t.inside(id, std::string("echo ") + t.secret + " > /workspace/f; " + kLookEverywhere);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(foundIn("sandbox", r.out, t.secret), "") << "the sandbox's view would miss a value: " << r.out;
  EXPECT_NE(foundIn("answers", t.d.curl("GET", "/v1/sessions").body, t.secret), "");
  EXPECT_NE(stateFilesHolding(t.d.stateDir(), t.secret), "") << "the state directory search would miss a value";
  const std::string db = fileText(t.d.stateDir() + "/state.db") + fileText(t.d.stateDir() + "/state.db-wal");
  EXPECT_NE(foundIn("db", db, t.secret), "") << "the database search would miss the session's name";
}

TEST(DaemonCredentialRecordsSealed, AtRestOnlySealedUnderAKeyFile0600AndTheFingerprintIsKeyed) {
  CredentialRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  RunResult added = t.add(t.secret);
  ASSERT_EQ(added.exit_code, 0) << added.describe();
  const std::string key = t.d.stateDir() + "/credential.key";
  const std::string sealed = t.d.stateDir() + "/credentials/" + std::to_string(::geteuid()) + ".api.sealed";
  struct stat st;
  ASSERT_EQ(::stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 32);
  ASSERT_EQ(::stat(sealed.c_str(), &st), 0) << claim("daemon.credential-records-sealed", "no sealed file");
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // secretbox: 24 bytes of nonce, 16 of MAC, the binding "UID:api\n" and the value.
  EXPECT_EQ(static_cast<size_t>(st.st_size), 24 + 16 + std::to_string(::geteuid()).size() + 5 + t.secret.size());
  EXPECT_EQ(foundIn("sealed", fileText(sealed), t.secret), "");
  // Keyed: another daemon (another key) shows another fingerprint for the same value, and
  // neither is a plain hash of it.
  const std::string fp = nlohmann::json::parse(added.out)["fingerprint"];
  EXPECT_EQ(fp.rfind("kfp1:", 0), 0u) << fp;
  CredentialRun other;
  ASSERT_TRUE(other.d.start()) << other.d.stderrText();
  RunResult again = other.add(t.secret);
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_NE(nlohmann::json::parse(again.out)["fingerprint"], fp) << claim("daemon.credential-records-sealed", "fingerprint not keyed");
  RunResult plain = run({"/usr/bin/python3", "-c",
                         "import hashlib,sys; s=sys.argv[1].encode(); print(hashlib.sha256(s).hexdigest()[:32], "
                         "hashlib.blake2b(s, digest_size=16).hexdigest())",
                         t.secret});
  for (const std::string& h : {plain.out.substr(0, 32), plain.out.substr(33, 32)})
    EXPECT_EQ(fp.find(h), std::string::npos) << "the fingerprint is a plain hash of the value";
  // Control: the fingerprint follows the value (the same value in the same daemon, another record).
  RunResult twin = t.cli({"credential", "add", "twin", "--host", t.servers.httpUrl(), "--from-env", "API_SECRET", "--json"}, t.secret);
  ASSERT_EQ(twin.exit_code, 0) << twin.describe();
  EXPECT_EQ(nlohmann::json::parse(twin.out)["fingerprint"], fp);
}

TEST(DaemonCredentialRecordsSealed, BadValuesAndSourcesAreRefusedWithoutEchoingThem) {
  CredentialRun t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  auto refused = [&](const Args& a, const std::string& value, const std::string& want) {
    RunResult r = t.cli(a, value);
    EXPECT_EQ(r.exit_code, 125) << r.describe();
    EXPECT_NE(r.err.find(want), std::string::npos) << r.describe();
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    if (!value.empty()) {
      EXPECT_EQ(r.err.find(value), std::string::npos) << "the value echoed: " << r.err;
    }
  };
  const Args base = {"credential", "add", "api", "--host", t.servers.httpUrl()};
  Args env = base;
  env.insert(env.end(), {"--from-env", "API_SECRET"});
  refused(env, "short7!", "at least 8 bytes");
  refused(base, "", "exactly one of --from-env");
  Args two = env;
  two.push_back("--stdin");
  refused(two, t.secret, "exactly one of");
  Args on_line = base;
  on_line.insert(on_line.end(), {"--value", t.secret});
  refused(on_line, t.secret, "--value");
  Args bad_name = {"credential", "add", "API", "--host", t.servers.httpUrl(), "--from-env", "API_SECRET"};
  refused(bad_name, t.secret, "starting with a letter");
  Args header = env;
  header.insert(header.end(), {"--header", "Host: {}"});
  refused(header, t.secret, "owned by the proxy");
  // A --host holding a token in its userinfo is refused without being shown.
  Args token_url = {"credential", "add", "api", "--host", "https://user:" + t.secret + "@example.com", "--from-env", "API_SECRET"};
  refused(token_url, t.secret, "URL not shown");
  EXPECT_EQ(t.cli({"credential", "ls", "--json"}).out, "{\"credentials\":[]}\n") << "a refused add changed something";
  ASSERT_EQ(t.add(t.secret).exit_code, 0);
  refused(env, t.secret, "exists");
  refused({"credential", "show", "nope"}, "", "no credential 'nope'");
  refused({"credential", "rotate", "nope", "--from-env", "API_SECRET"}, t.secret, "no credential 'nope'");
  refused({"session", "create", "--net", "proxy", "--credential", "nope", "--allow-weaker", "workspace-size"}, "", "no credential 'nope'");
  refused({"session", "create", "--credential", "api", "--allow-weaker", "workspace-size"}, "", "need \"net\": \"proxy\"");
  EXPECT_EQ(t.cli({"session", "ls", "--json"}).out, "{\"sessions\":[]}\n") << "a refused create left a session";
}

// ---- daemon.credentials-leased-through-proxy ----

TEST(DaemonCredentialsLeasedThroughProxy, UsesAreCountedRotationReachesNewSessionsAndLeasesEndWithTheSession) {
  CredentialRun t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.add(t.secret).exit_code, 0);
  const std::string old_session = t.session({"--credential", "api"});
  ASSERT_FALSE(old_session.empty());
  const std::string check = "curl -sS --max-time 20 http://127.0.0.1:3128/lease/api/lease-check";
  EXPECT_NE(t.inside(old_session, check).out.find("auth=ok"), std::string::npos);
  EXPECT_NE(t.inside(old_session, check).out.find("auth=ok"), std::string::npos);
  nlohmann::json c = t.show();
  EXPECT_EQ(c["use_count"], 2) << c.dump();
  EXPECT_TRUE(c["last_used_ms"].is_number_integer()) << c.dump();
  EXPECT_EQ(c["active_leases"], 1) << c.dump();
  EXPECT_EQ(c["version"], 1);
  EXPECT_TRUE(c["rotated_at"].is_null());
  // Rotated: the record's version and fingerprint change; the running session is given the new
  // value before rotate returns (daemon.credential-rotation-reaches-sessions: this upstream
  // accepts only the old one), so nothing is stale; a new session gets the new value too.
  RunResult rot = t.cli({"credential", "rotate", "api", "--from-env", "API_SECRET", "--json"}, freshSecret());
  ASSERT_EQ(rot.exit_code, 0) << rot.describe();
  nlohmann::json r = nlohmann::json::parse(rot.out);
  EXPECT_EQ(r["version"], 2);
  EXPECT_NE(r["fingerprint"], c["fingerprint"]);
  EXPECT_EQ(r["stale_leases"], 0) << r.dump();
  EXPECT_TRUE(r["rotated_at"].is_number_integer());
  EXPECT_NE(t.inside(old_session, check).out.find("auth=bad"), std::string::npos);
  const std::string new_session = t.session({"--credential", "api"});
  ASSERT_FALSE(new_session.empty());
  EXPECT_NE(t.inside(new_session, check).out.find("auth=bad"), std::string::npos)
      << claim("daemon.credentials-leased-through-proxy", "a session made after the rotation got the old value");
  // A record leased to a running session cannot be removed.
  RunResult busy = t.cli({"credential", "rm", "api"});
  EXPECT_EQ(busy.exit_code, 125) << busy.describe();
  EXPECT_NE(busy.err.find("leased to 2 running session"), std::string::npos) << busy.err;
  ASSERT_EQ(t.cli({"session", "rm", old_session}).exit_code, 0);
  c = t.show();
  EXPECT_EQ(c["use_count"], 4) << "the last uses are collected before the session ends: " << c.dump();
  EXPECT_EQ(c["active_leases"], 1);
  EXPECT_EQ(c["stale_leases"], 0);
  // A lost session (its shim killed) holds no lease any more: the proxy was its shim's.
  t.d.kill9();
  for (pid_t pid : shimProcesses(t.d.stateDir())) ::kill(pid, SIGKILL);
  ASSERT_TRUE(eventually([&] { return shimProcesses(t.d.stateDir()).empty(); }));
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  EXPECT_EQ(t.d.curl("GET", "/v1/sessions/" + new_session).json()["state"], "lost");
  EXPECT_EQ(t.show()["active_leases"], 0);
  RunResult gone = t.cli({"credential", "rm", "api"});
  EXPECT_EQ(gone.exit_code, 0) << gone.describe();
  EXPECT_FALSE(fileExists(t.d.stateDir() + "/credentials/" + std::to_string(::geteuid()) + ".api.sealed"));
}

TEST(DaemonCredentialsLeasedThroughProxy, ARecordSurvivesARestartAndLeasesAgain) {
  CredentialRun t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.add(t.secret).exit_code, 0);
  t.d.kill9();
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  const std::string id = t.session({"--credential", "api"});
  ASSERT_FALSE(id.empty());
  EXPECT_NE(t.inside(id, "curl -sS --max-time 20 http://127.0.0.1:3128/lease/api/lease-check").out.find("auth=ok"),
            std::string::npos)
      << claim("daemon.credentials-leased-through-proxy", "the record did not survive the restart");
}

// A lost session recovered leases its records again (their current version), counted anew.
TEST(DaemonCredentialsLeasedThroughProxy, ARecoveredSessionLeasesTheRecordAgain) {
  CredentialRun t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.add(t.secret).exit_code, 0);
  const std::string id = t.session({"--credential", "api"});
  ASSERT_FALSE(id.empty());
  const std::string check = "curl -sS --max-time 20 http://127.0.0.1:3128/lease/api/lease-check";
  EXPECT_NE(t.inside(id, check).out.find("auth=ok"), std::string::npos);
  ASSERT_EQ(t.show()["use_count"], 1);  // collected before the shim dies (later uses would be lost with it)
  t.d.kill9();
  for (pid_t pid : shimProcesses(t.d.stateDir())) ::kill(pid, SIGKILL);
  ASSERT_TRUE(eventually([&] { return shimProcesses(t.d.stateDir()).empty(); }));
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  EXPECT_EQ(t.show()["active_leases"], 0);
  RunResult rec = t.cli({"session", "recover", id});
  ASSERT_EQ(rec.exit_code, 0) << rec.describe();
  EXPECT_EQ(t.show()["active_leases"], 1);
  EXPECT_NE(t.inside(id, check).out.find("auth=ok"), std::string::npos)
      << claim("daemon.credentials-leased-through-proxy", "a recovered session lost its lease");
  EXPECT_EQ(t.show()["use_count"], 2) << "the new shim's uses are counted from 0 on top of the old";
  // Control: with the record removed meanwhile, recovering is refused and the session stays lost.
  ASSERT_EQ(t.cli({"session", "rm", id}).exit_code, 0);
  const std::string other = t.session({"--credential", "api"});
  t.d.kill9();
  for (pid_t pid : shimProcesses(t.d.stateDir())) ::kill(pid, SIGKILL);
  ASSERT_TRUE(eventually([&] { return shimProcesses(t.d.stateDir()).empty(); }));
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.cli({"credential", "rm", "api"}).exit_code, 0);
  RunResult refused = t.cli({"session", "recover", other});
  EXPECT_EQ(refused.exit_code, 125) << refused.describe();
  EXPECT_NE(refused.err.find("no credential 'api'"), std::string::npos) << refused.err;
  EXPECT_EQ(t.d.curl("GET", "/v1/sessions/" + other).json()["state"], "lost");
}

// Control: the same session without the record gets no header, through the lease URL or around it.
TEST(DaemonCredentialsLeasedThroughProxy, ControlWithoutTheRecordNothingIsInjected) {
  CredentialRun t;
  REQUIRE_SERVERS(t.servers);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.add(t.secret).exit_code, 0);
  const std::string id = t.session({"--allow", t.servers.httpUrl()});
  ASSERT_FALSE(id.empty());
  RunResult r = t.inside(id, "curl -sS -i --max-time 20 http://127.0.0.1:3128/lease/api/lease-check; "
                             "curl -sS --max-time 20 -H 'Authorization: Bearer corral-lease-api-0' " + t.servers.httpUrl() + "/lease-check");
  EXPECT_NE(r.out.find("auth=bad"), std::string::npos) << "the upstream was reached and checked: " << r.out;
  EXPECT_EQ(r.out.find("auth=ok"), std::string::npos) << r.out;
  EXPECT_EQ(t.show()["use_count"], 0);
}

// ---- daemon.credentials-per-uid ----

// The corral CLI as uid 65534 against t's daemon, with API_SECRET=value in its environment.
RunResult asNobody(CredentialRun& t, const Args& args, const std::string& value) {
  Args argv = {corralBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.as_user = kNobody;
  o.env_extra = {"CORRAL_SOCKET=" + t.d.socket(), "API_SECRET=" + value};
  return run(argv, o);
}

TEST(DaemonCredentialsPerUid, RootAnotherUidNeitherSeesNorUsesNorRemovesTheRecord) {
  CORRAL_REQUIRE_ROOT("the test connects as uid 65534 to a root daemon");
  CredentialRun t({"--allow-group", "nogroup"});
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(t.add(t.secret).exit_code, 0);
  ASSERT_EQ(::chmod(t.d.stateDir().c_str(), 0755), 0);
  auto as_nobody = [&](const Args& args) { return asNobody(t, args, freshSecret()); };
  RunResult ls = as_nobody({"credential", "ls", "--json"});
  EXPECT_EQ(ls.out, "{\"credentials\":[]}\n") << claim("daemon.credentials-per-uid", "uid 65534 listed root's record: " + ls.describe());
  EXPECT_EQ(as_nobody({"credential", "show", "api"}).exit_code, 125);
  EXPECT_EQ(as_nobody({"credential", "rm", "api"}).exit_code, 125);
  EXPECT_EQ(as_nobody({"credential", "rotate", "api", "--from-env", "API_SECRET"}).exit_code, 125);
  RunResult use = as_nobody({"session", "create", "--net", "proxy", "--credential", "api"});
  EXPECT_EQ(use.exit_code, 125) << claim("daemon.credentials-per-uid", "uid 65534 leased root's record: " + use.describe());
  EXPECT_NE(use.err.find("no credential 'api' of uid 65534"), std::string::npos) << use.err;
  // Control: root (the owner) still sees it, unchanged (not rotated).
  nlohmann::json c = t.show();
  EXPECT_EQ(c["name"], "api");
  EXPECT_EQ(c["version"], 1) << claim("daemon.credentials-per-uid", "uid 65534 rotated root's record");
}

// Root recovering another uid's lost session leases that uid's records, never root's records of
// the same names (the recover route once leased as whoever asked).
TEST(DaemonCredentialsPerUid, RootRecoveringAnotherUidsSessionLeasesThatUidsRecordNotRoots) {
  CORRAL_REQUIRE_ROOT("the test connects as uid 65534 to a root daemon");
  CredentialRun t({"--allow-group", "nogroup"});  // the upstream accepts t.secret: uid 65534's value
  REQUIRE_SERVERS(t.servers);
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_EQ(::chmod(t.d.stateDir().c_str(), 0755), 0);
  auto as_nobody = [&](const Args& args) { return asNobody(t, args, t.secret); };
  const std::string roots = freshSecret();
  ASSERT_EQ(t.add(roots).exit_code, 0);  // root's record of the same name, another value
  RunResult add = as_nobody({"credential", "add", "api", "--host", t.servers.httpUrl(), "--from-env", "API_SECRET"});
  ASSERT_EQ(add.exit_code, 0) << add.describe();
  Args create = {"session", "create", "--net", "proxy", "--credential", "api"};
  for (const std::string& o : Daemon::hostSessionOptions()) create.push_back(o);
  RunResult made = as_nobody(create);
  ASSERT_EQ(made.exit_code, 0) << made.describe();
  std::string id = made.out;
  while (!id.empty() && id.back() == '\n') id.pop_back();
  const std::string check = "curl -sS --max-time 20 http://127.0.0.1:3128/lease/api/lease-check";
  ASSERT_NE(t.inside(id, check).out.find("auth=ok"), std::string::npos) << "uid 65534's own lease works before";
  // Control: root's record is not what the upstream accepts, so leasing it would show.
  const std::string mine = t.session({"--credential", "api"});
  ASSERT_FALSE(mine.empty());
  EXPECT_NE(t.inside(mine, check).out.find("auth=bad"), std::string::npos) << "root's value must differ from uid 65534's";
  ASSERT_EQ(t.cli({"session", "rm", mine}).exit_code, 0);
  t.d.kill9();
  for (pid_t pid : shimProcesses(t.d.stateDir())) ::kill(pid, SIGKILL);
  ASSERT_TRUE(eventually([&] { return shimProcesses(t.d.stateDir()).empty(); }));
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  RunResult rec = t.cli({"session", "recover", id});  // root recovers uid 65534's session
  ASSERT_EQ(rec.exit_code, 0) << rec.describe();
  EXPECT_NE(t.inside(id, check).out.find("auth=ok"), std::string::npos)
      << claim("daemon.credentials-per-uid", "root's recover of uid 65534's session leased root's record into it");
  EXPECT_EQ(t.seen.find(roots), std::string::npos);
}

}  // namespace
}  // namespace corral::testing
