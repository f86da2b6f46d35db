// SPDX-License-Identifier: Apache-2.0
// Claim daemon.ssh-key-records (claims/daemon.toml): an OpenSSH key added as a credential
// record (`corral credential add NAME --ssh-key --from-file KEY`) and given to a session
// (`corral session create --net proxy --allow tcp://... --ssh-key NAME`) logs in and pushes over
// SSH through the session's ssh agent, which signs only for the sshd behind the session's
// tcp:// grant; the key is in nothing the sandbox can read, nor in the daemon's stderr, the
// events stream, the audit log or any file of the state directory (SQLite included). Real
// daemon, real sshd (tests/security/tcp_servers.py in the test's private network namespace),
// real git and ssh, and the hostile agent client of the exec claim (ssh_agent_attack.py).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "daemon_fixture.h"
#include "tcp_servers_fixture.h"

namespace corral::testing {
namespace {

constexpr char kClaim[] = "daemon.ssh-key-records";

// The lines of a key file that are its own (the first two base64 lines are the same for every
// unencrypted ed25519 key): finding one anywhere is finding the key.
std::vector<std::string> keyLines(const std::string& key_file) {
  std::vector<std::string> out;
  std::istringstream in(key_file);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("-----", 0) == 0 || ++n <= 2 || line.size() < 16) continue;
    out.push_back(line);
  }
  return out;
}

std::string whereKeyIs(const std::string& where, const std::string& text, const std::vector<std::string>& lines) {
  for (const std::string& l : lines)
    if (text.find(l) != std::string::npos) return where + " ";
  return "";
}

std::string stateFilesHoldingKey(const std::string& state_dir, const std::vector<std::string>& lines) {
  std::string hits;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(state_dir, std::filesystem::directory_options::skip_permission_denied, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file(ec) || it->path().extension() == ".img") continue;
    hits += whereKeyIs(it->path().string(), readHostFile(it->path().string()), lines);
  }
  return hits;
}

// A new ed25519 key pair in dir (ssh-keygen), as KEY and KEY.pub.
bool makeKey(const TempDir& dir, const std::string& name) {
  RunResult r = corral::testing::run({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "t", "-f", dir / name});
  return r.exit_code == 0;
}

std::string sshKeygenFingerprint(const std::string& pub) {
  RunResult fp = corral::testing::run({"/usr/bin/ssh-keygen", "-l", "-E", "sha256", "-f", pub});
  std::string s = fp.out.substr(fp.out.find(' ') + 1);
  return s.substr(0, s.find(' '));
}

// A profile's "limits" member naming what this host's daemon cannot enforce (rootless: the
// uncapped workspace), so that a create from it needs no widening override; "" as root.
std::string weakerLimits() {
  std::string w;
  for (const std::string& o : Daemon::hostSessionOptions())
    if (o != "--allow-weaker") w += (w.empty() ? "" : ", ") + ("\"" + o + "\"");
  return w.empty() ? "" : R"("limits": {"allow_weaker": [)" + w + "]}, ";
}

// ---- records: kinds and validation (no sshd needed) ----

struct Records {
  TempDir keys{"sshrec-keys"};
  Daemon d;
  RunResult cli(const Args& a) const { return d.cli(a); }
};

TEST(DaemonSshKeyRecords, AMalformedKeyIsRefusedAtAddInOneLineAndNothingIsStored) {
  Records t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_TRUE(makeKey(t.keys, "good"));
  std::string good = readHostFile(t.keys / "good");
  // Cut short, a bit flipped in the middle, an encrypted key, and a public key instead.
  t.keys.write("short", good.substr(0, good.size() / 2), 0600);
  std::string flipped = good;
  flipped[flipped.size() / 2] = flipped[flipped.size() / 2] == 'A' ? 'B' : 'A';
  t.keys.write("flipped", flipped, 0600);
  RunResult enc = corral::testing::run({"/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "a-passphrase", "-f", t.keys / "enc"});
  ASSERT_EQ(enc.exit_code, 0) << enc.describe();
  for (const std::string bad : {"short", "flipped", "enc", "good.pub"}) {
    RunResult r = t.cli({"credential", "add", "k", "--ssh-key", "--from-file", t.keys / bad});
    EXPECT_NE(r.exit_code, 0) << claim(kClaim, bad + " was stored") << r.describe();
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_EQ(r.out, "") << r.describe();
  }
  RunResult ls = t.cli({"credential", "ls", "--json"});
  EXPECT_EQ(nlohmann::json::parse(ls.out, nullptr, false)["credentials"].size(), 0u) << ls.describe();
  EXPECT_FALSE(fileExists(t.d.stateDir() + "/credentials/" + std::to_string(::getuid()) + ".k.sealed"));
  // The control: the good key is taken, shown by the fingerprint ssh-keygen gives, never itself.
  RunResult ok = t.cli({"credential", "add", "k", "--ssh-key", "--from-file", t.keys / "good", "--json"});
  ASSERT_EQ(ok.exit_code, 0) << ok.describe();
  auto j = nlohmann::json::parse(ok.out, nullptr, false);
  EXPECT_EQ(j["kind"], "ssh-key") << ok.out;
  EXPECT_EQ(j["ssh_fingerprint"], sshKeygenFingerprint(t.keys / "good.pub")) << ok.out;
  EXPECT_FALSE(j.contains("host")) << ok.out;
  // The answer is a Credential of docs/openapi.json (openapi_check.py covers a header record).
  t.keys.write("answer.json", ok.out);
  RunResult schema = corral::testing::run(
      {"/usr/bin/python3", "-c",
       "import json,sys,jsonschema; d=json.load(open(sys.argv[1])); "
       "jsonschema.Draft202012Validator({**d, '$ref': '#/components/schemas/Credential'}).validate(json.load(open(sys.argv[2])))",
       std::string(CORRAL_DOCS_DIR) + "/openapi.json", t.keys / "answer.json"});
  EXPECT_EQ(schema.exit_code, 0) << schema.describe();
  EXPECT_EQ(whereKeyIs("answer", ok.out + ok.err + t.cli({"credential", "show", "k"}).out, keyLines(good)), "");
  // Rotation takes only a key too: a header value is refused, the record unchanged.
  t.keys.write("token", "corral-not-a-key-0123456789abcdef\n", 0600);
  RunResult rot = t.cli({"credential", "rotate", "k", "--from-file", t.keys / "token"});
  EXPECT_NE(rot.exit_code, 0) << rot.describe();
  EXPECT_EQ(nlohmann::json::parse(t.cli({"credential", "show", "k", "--json"}).out, nullptr, false)["version"], 1);
}

TEST(DaemonSshKeyRecords, AHeaderRecordAsSshKeyAndAnSshKeyRecordAsCredentialAreRefused) {
  Records t;
  ASSERT_TRUE(t.d.start()) << t.d.stderrText();
  ASSERT_TRUE(makeKey(t.keys, "key"));
  ASSERT_EQ(t.cli({"credential", "add", "key", "--ssh-key", "--from-file", t.keys / "key"}).exit_code, 0);
  t.keys.write("token", "corral-header-value-0123456789abcdef\n", 0600);
  ASSERT_EQ(t.cli({"credential", "add", "api", "--host", "https://api.example.test", "--from-file", t.keys / "token"}).exit_code, 0);
  Args base = {"session", "create", "--net", "proxy", "--allow", "tcp://git.example.test:22"};
  for (const std::string& o : Daemon::hostSessionOptions()) base.push_back(o);
  auto create = [&](const Args& more) {
    Args a = base;
    a.insert(a.end(), more.begin(), more.end());
    return t.cli(a);
  };
  RunResult as_cred = create({"--credential", "key"});
  EXPECT_NE(as_cred.exit_code, 0) << as_cred.describe();
  EXPECT_NE(as_cred.err.find("ssh-key record"), std::string::npos) << as_cred.err;
  RunResult as_key = create({"--ssh-key", "api"});
  EXPECT_NE(as_key.exit_code, 0) << as_key.describe();
  EXPECT_NE(as_key.err.find("not an ssh-key record"), std::string::npos) << as_key.err;
  RunResult no_proxy = t.cli({"session", "create", "--ssh-key", "key"});
  EXPECT_NE(no_proxy.exit_code, 0) << no_proxy.describe();
  // Without a tcp grant the agent could sign for nothing: refused, as exec's --ssh-key is.
  Args no_tcp_args = {"session", "create", "--net", "proxy", "--allow", "https://api.example.test", "--ssh-key", "key"};
  for (const std::string& o : Daemon::hostSessionOptions()) no_tcp_args.push_back(o);
  RunResult no_tcp = t.cli(no_tcp_args);
  EXPECT_NE(no_tcp.exit_code, 0) << no_tcp.describe();
  EXPECT_NE(no_tcp.err.find("tcp://"), std::string::npos) << no_tcp.err;
  // A profile naming it is held to the same checks: no tcp grant or a warm count is refused at
  // add; an override may give only the profile's own key (another, or one for a profile
  // without any, widens it: 422, exit 125); a missing record is refused at create.
  const std::string lim = weakerLimits();
  t.keys.write("p.json", R"({"name": "p", "session": {)" + lim + R"("net": "proxy", "allow": ["tcp://git.example.test:22"]}})");
  t.keys.write("q.json", R"({"name": "q", "session": {)" + lim + R"("net": "proxy", "allow": ["tcp://git.example.test:22"], "ssh_key": "nokey"}})");
  t.keys.write("r.json", R"({"name": "r", "session": {"net": "proxy", "allow": ["https://api.example.test"], "ssh_key": "key"}})");
  t.keys.write("w.json", R"({"name": "w", "warm": 1, "session": {"net": "proxy", "allow": ["tcp://git.example.test:22"], "ssh_key": "key"}})");
  ASSERT_EQ(t.cli({"profile", "add", t.keys / "p.json"}).exit_code, 0);
  ASSERT_EQ(t.cli({"profile", "add", t.keys / "q.json"}).exit_code, 0);
  RunResult profile_no_tcp = t.cli({"profile", "add", t.keys / "r.json"});
  EXPECT_EQ(profile_no_tcp.exit_code, 125) << profile_no_tcp.describe();
  EXPECT_NE(profile_no_tcp.err.find("profile.session.ssh_key: needs an allow tcp://"), std::string::npos) << profile_no_tcp.err;
  RunResult profile_warm = t.cli({"profile", "add", t.keys / "w.json"});
  EXPECT_EQ(profile_warm.exit_code, 125) << claim(kClaim, "a warm pool would hold an ssh key for nobody") << profile_warm.describe();
  EXPECT_NE(profile_warm.err.find("profile.warm"), std::string::npos) << profile_warm.err;
  RunResult with_profile = t.cli({"session", "create", "--profile", "p", "--ssh-key", "key"});
  EXPECT_EQ(with_profile.exit_code, 125) << claim(kClaim, "an override added an ssh key") << with_profile.describe();
  EXPECT_NE(with_profile.err.find("override ssh_key 'key' widens the profile's none"), std::string::npos) << with_profile.err;
  RunResult missing = t.cli({"session", "create", "--profile", "q"});
  EXPECT_EQ(missing.exit_code, 125) << missing.describe();
  EXPECT_NE(missing.err.find("no credential 'nokey' of uid " + std::to_string(::geteuid())), std::string::npos) << missing.err;
  RunResult other_key = t.cli({"session", "create", "--profile", "q", "--ssh-key", "key"});
  EXPECT_EQ(other_key.exit_code, 125) << claim(kClaim, "an override swapped the profile's key") << other_key.describe();
  EXPECT_NE(other_key.err.find("override ssh_key 'key' widens the profile's 'nokey'"), std::string::npos) << other_key.err;
  // The API's statuses: 422 for the widening override (as every widening), 400 for the missing record.
  EXPECT_EQ(t.d.curl("POST", "/v1/sessions", R"({"profile": "p", "ssh_key": "key"})").status, 422);
  EXPECT_EQ(t.d.curl("POST", "/v1/sessions", R"({"profile": "q"})").status, 400);
  for (const RunResult* r : {&profile_no_tcp, &profile_warm, &missing, &other_key}) EXPECT_EQ(std::count(r->err.begin(), r->err.end(), '\n'), 1) << r->err;
  for (const RunResult* r : {&as_cred, &as_key, &no_proxy, &no_tcp, &with_profile}) EXPECT_EQ(std::count(r->err.begin(), r->err.end(), '\n'), 1) << r->err;
  RunResult ls = t.cli({"session", "ls", "--json"});
  EXPECT_EQ(ls.out.find("\"id\""), std::string::npos) << "no session was made: " << ls.out;
}

// Profiles are their owner's, and so is the record a profile names: it is leased from the
// creator's records, who is always the profile's owner. uid 65534 can neither use root's
// profile nor, with a profile of its own naming root's record, root's record.
TEST(DaemonSshKeyRecords, RootAnotherUidsProfileNamingRootsRecordGetsNoKey) {
  CORRAL_REQUIRE_ROOT("the test connects as uid 65534 to a root daemon");
  TempDir keys{"sshrec-keys"};
  Daemon d({"--allow-group", "nogroup"});
  ASSERT_TRUE(d.start()) << d.stderrText();
  ASSERT_TRUE(makeKey(keys, "key"));
  ASSERT_EQ(d.cli({"credential", "add", "key", "--ssh-key", "--from-file", keys / "key"}).exit_code, 0);
  ASSERT_EQ(::chmod(d.stateDir().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(keys.path().c_str(), 0755), 0);
  const std::string doc = R"({"name": "git", "session": {"net": "proxy", "allow": ["tcp://git.example.test:22"], "ssh_key": "key"}})";
  keys.write("git.json", doc, 0644);
  ASSERT_EQ(d.cli({"profile", "add", keys / "git.json"}).exit_code, 0);
  auto as_nobody = [&](const Args& args) {
    Args argv = {corralBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o;
    o.as_user = kNobody;
    o.env_extra = {"CORRAL_SOCKET=" + d.socket()};
    return run(argv, o);
  };
  RunResult roots = as_nobody({"session", "create", "--profile", "git"});
  EXPECT_EQ(roots.exit_code, 125) << claim(kClaim, "uid 65534 used root's profile") << roots.describe();
  EXPECT_NE(roots.err.find("no profile 'git'"), std::string::npos) << roots.err;
  ASSERT_EQ(as_nobody({"profile", "add", keys / "git.json"}).exit_code, 0);
  RunResult own = as_nobody({"session", "create", "--profile", "git"});
  EXPECT_EQ(own.exit_code, 125) << claim(kClaim, "uid 65534's profile leased root's ssh key") << own.describe();
  EXPECT_NE(own.err.find("no credential 'key' of uid 65534"), std::string::npos) << own.err;
  EXPECT_EQ(std::count(own.err.begin(), own.err.end(), '\n'), 1) << own.err;
  EXPECT_EQ(nlohmann::json::parse(d.cli({"credential", "show", "key", "--json"}).out, nullptr, false)["active_leases"], 0);
  // The control: root's own profile leases root's record.
  RunResult control = d.cli({"session", "create", "--profile", "git", "--json"});
  ASSERT_EQ(control.exit_code, 0) << control.describe() << d.stderrText();
  auto made = nlohmann::json::parse(control.out, nullptr, false);
  EXPECT_EQ(made["ssh_key"], "key") << control.out;
  EXPECT_EQ(nlohmann::json::parse(d.cli({"credential", "show", "key", "--json"}).out, nullptr, false)["active_leases"], 1);
  EXPECT_EQ(d.cli({"session", "rm", made["id"].get<std::string>()}).exit_code, 0);
}

// ---- sessions with the record, against a real sshd ----

class SshKeySessions : public TcpServersFixture {
 protected:
  void SetUp() override {
    TcpServersFixture::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(started({"ssh"}));
    d_.emplace();
    ASSERT_TRUE(d_->start()) << d_->stderrText();
    fingerprint_ = sshKeygenFingerprint(dir_->path() + "/client_key.pub");
    RunResult added = cli({"credential", "add", "gitkey", "--ssh-key", "--from-file", dir_->path() + "/client_key", "--json"});
    ASSERT_EQ(added.exit_code, 0) << added.describe();
  }
  void TearDown() override {
    if (events_) events_->signal(SIGKILL);
    events_.reset();
    d_.reset();
  }
  RunResult cli(const Args& a) {
    RunResult r = d_->cli(a);
    seen_ += r.out + r.err;
    return r;
  }
  // A session with the record and one grant, to the sshd; known_hosts and the hostile client
  // copied into its workspace (never a key).
  std::string session(const Args& extra = {}, bool server_key = false) {
    Args a = {"session", "create", "--net", "proxy", "--allow", grant("git.corp.test", "ssh"), "--allow-internal", kInternal,
              "--ssh-key", "gitkey"};
    for (const std::string& o : Daemon::hostSessionOptions()) a.push_back(o);
    a.insert(a.end(), extra.begin(), extra.end());
    RunResult r = cli(a);
    EXPECT_EQ(r.exit_code, 0) << r.describe() << d_->stderrText();
    std::string id = r.out;
    while (!id.empty() && id.back() == '\n') id.pop_back();
    if (!id.empty()) prepare(id, server_key);
    return id;
  }
  void prepare(const std::string& id, bool server_key = false) {
    TempDir in("sshrec-in");
    in.write("known_hosts", dir_->read("known_hosts"));
    in.write("attack.py", readHostFile(std::string(CORRAL_SOURCE_DIR) + "/tests/security/ssh_agent_attack.py"));
    if (server_key) in.write("server_host_key", dir_->read("host_key"), 0644);
    for (const char* f : {"known_hosts", "attack.py", "server_host_key"}) {
      if (fileExists(in / f)) {
        EXPECT_EQ(cli({"session", "cp", in / f, id + ":" + f}).exit_code, 0);
      }
    }
  }
  std::string repoUrl() {
    return "ssh://" + ports_["user"].get<std::string>() + "@git.corp.test:" + port("ssh") + ports_["repo"].get<std::string>();
  }
  RunResult inside(const std::string& id, const std::string& script) {
    RunResult r = sessionExec(*d_, id, {"sh", "-c", script});
    seen_ += r.out + r.err;
    return r;
  }
  void subscribe() {
    events_file_ = events_dir_ / "events";
    events_.emplace(Process::start({"/usr/bin/python3", CORRAL_SOURCE_DIR "/tests/daemon/sse_client.py", d_->socket(), events_file_, "read"},
                                   {.deadline = std::chrono::milliseconds(300'000)}));
    ASSERT_TRUE(eventually([&] { return readHostFile(events_file_).find("200") != std::string::npos; }));
  }
  nlohmann::json record() { return nlohmann::json::parse(cli({"credential", "show", "gitkey", "--json"}).out, nullptr, false); }
  static std::string agentSsh() {
    return "ssh -F /dev/null -o UserKnownHostsFile=/workspace/known_hosts -o StrictHostKeyChecking=yes "
           "-o BatchMode=yes -o '" + std::string(kProxyCommand) + "' -p " + port("ssh");
  }
  std::optional<Daemon> d_;
  std::string fingerprint_, seen_;
  TempDir events_dir_{"sshrec-sse"};
  std::string events_file_;
  std::optional<Process> events_;
};

class DaemonSshKeyRecordsSessions : public SshKeySessions {};

TEST_F(DaemonSshKeyRecordsSessions, GitPushThroughTheSessionsAgentWorksAndTheKeyIsNowhereElse) {
  subscribe();
  const std::string id = session();
  ASSERT_FALSE(id.empty());
  const std::string url = "ssh://" + ports_["user"].get<std::string>() + "@git.corp.test:" + port("ssh") +
                          ports_["repo"].get<std::string>();
  const std::string decoy = "corral-sentinel-sshrec-decoy-81c2";
  RunResult r = inside(id, "set -e; test -S \"$SSH_AUTH_SOCK\"; export GIT_SSH_COMMAND=\"" + agentSsh() + "\"; "
                           "git clone -q " + url + " /tmp/c; cd /tmp/c; echo pushed > PUSHED; git add PUSHED; "
                           "git -c user.name=t -c user.email=t@t commit -q -m 'pushed with a daemon ssh-key record'; "
                           "git push -q origin HEAD:main; echo push-ok");
  ASSERT_EQ(r.exit_code, 0) << claim(kClaim, "git push with the record's key failed") << r.describe() << dir_->read("sshd.log")
                            << d_->stderrText();
  EXPECT_EQ(r.out, "push-ok\n") << r.describe();
  RunResult log = corral::testing::run({"/usr/bin/git", "-c", "safe.directory=*", "--git-dir=" + ports_["repo"].get<std::string>(), "log",
                                        "-1", "--format=%s", "main"});
  EXPECT_EQ(log.out, "pushed with a daemon ssh-key record\n") << "the push did not reach the server: " << log.describe();
  // Two logins (clone, push): two signatures counted on the record.
  EXPECT_TRUE(eventually([&] { return record()["use_count"].get<int64_t>() >= 2; })) << record().dump();
  EXPECT_EQ(record()["active_leases"], 1);
  EXPECT_EQ(record()["ssh_fingerprint"], fingerprint_);
  // Removal is refused while the session holds it.
  EXPECT_NE(cli({"credential", "rm", "gitkey"}).exit_code, 0);

  // Everything the sandbox can read, after a login through the agent (ssh -f keeps it open):
  // every process's environment, command line and readable memory, and the files of /tmp,
  // /run and /workspace, dumped inside and searched on the host. The decoy is the control.
  RunResult dumped = inside(id, "set -e; export CORRAL_DECOY=" + decoy + "; " + agentSsh() + " -f " +
                                    ports_["user"].get<std::string>() + "@git.corp.test 'sleep 20'; "
                                    "echo \"$CORRAL_DECOY\" > /tmp/decoy; python3 /workspace/attack.py dump; echo dumped");
  ASSERT_EQ(dumped.exit_code, 0) << dumped.describe() << dir_->read("sshd.log");
  TempDir out("sshrec-dump");
  ASSERT_EQ(cli({"session", "cp", id + ":dump", out / "dump"}).exit_code, 0);
  RunResult found = corral::testing::run({"/usr/bin/python3", std::string(CORRAL_SOURCE_DIR) + "/tests/security/ssh_agent_attack.py",
                                          "search", out / "dump", dir_->path() + "/client_key", decoy});
  ASSERT_EQ(found.exit_code, 0) << found.describe();
  EXPECT_EQ(found.out.find("processes 0\n"), std::string::npos) << found.out;
  EXPECT_NE(found.out.find("decoy in environ\n"), std::string::npos) << "the control failed: " << found.out;
  EXPECT_NE(found.out.find("decoy in files\n"), std::string::npos) << "the control failed: " << found.out;
  EXPECT_NE(found.out.find("decoy in mem\n"), std::string::npos) << "the control failed: " << found.out;
  EXPECT_EQ(found.out.find("key in"), std::string::npos) << claim(kClaim, "the key is readable inside") << "\n" << found.out;

  for (const std::string& path : Args{"/v1/credentials", "/v1/credentials/gitkey", "/v1/sessions", "/v1/sessions/" + id})
    seen_ += d_->curl("GET", path).body;
  ASSERT_EQ(cli({"session", "rm", id}).exit_code, 0);
  EXPECT_EQ(cli({"credential", "rm", "gitkey"}).exit_code, 0) << "removable once no session holds it";
  const std::string audit = fileText(d_->stateDir() + "/audit.jsonl");
  const std::string events = readHostFile(events_file_);
  // The session's shim logged each signature by ids and fingerprints (its log is in the state
  // directory, searched below for the key as every other file).
  EXPECT_NE(audit.find("credential_used"), std::string::npos) << audit;
  const auto lines = keyLines(dir_->read("client_key"));
  ASSERT_GT(lines.size(), 1u);
  d_->kill9();
  std::string where = whereKeyIs("an answer or the sandbox's output", seen_, lines) + whereKeyIs("the audit log", audit, lines) +
                      whereKeyIs("the events stream", events, lines) + whereKeyIs("the daemon's stderr", d_->stderrText(), lines) +
                      stateFilesHoldingKey(d_->stateDir(), lines);
  EXPECT_EQ(where, "") << claim(kClaim, "the key is in: " + where);
  // The control: the same search finds a plain copy put in the state directory.
  TempDir probe("sshrec-probe");
  probe.write("copy", dir_->read("client_key"));
  EXPECT_NE(stateFilesHoldingKey(probe.path(), lines), "") << "the search finds nothing even where the key is";
}

// The hostile client inside binds its connection to a host key no granted server presents:
// no signature (the key cannot be used for a destination without a grant). The control binds
// with the granted sshd's own host key and gets its login signed.
TEST_F(DaemonSshKeyRecordsSessions, ADestinationWithoutAGrantGetsNoSignatureWhileTheGrantedOneDoes) {
  const std::string id = session({}, /*server_key=*/true);
  ASSERT_FALSE(id.empty());
  RunResult own = inside(id, "python3 /workspace/attack.py own-key " + port("ssh"));
  ASSERT_EQ(own.exit_code, 0) << own.describe();
  EXPECT_EQ(own.out, "identities 12 1\narbitrary 5\nbind 5\nsign 5\n") << claim(kClaim, "a signature was given") << own.describe();
  EXPECT_TRUE(eventually([&] { return record()["use_count"].get<int64_t>() == 0; })) << record().dump();
  RunResult control = inside(id, "python3 /workspace/attack.py server-key " + port("ssh"));
  ASSERT_EQ(control.exit_code, 0) << control.describe();
  EXPECT_EQ(control.out, "identities 12 1\narbitrary 5\nbind 6\nsign 14 verified\nbound-arbitrary 5\n") << control.describe();
  EXPECT_TRUE(eventually([&] { return record()["use_count"].get<int64_t>() == 1; })) << record().dump();
  // The refusals and the signature are logged by the session's shim with the key's fingerprint.
  const std::string shim_log = fileText(d_->stateDir() + "/sessions/" + id + "/shim.log");
  EXPECT_NE(shim_log.find("rule=ssh-agent-no-grant"), std::string::npos) << shim_log;
  EXPECT_NE(shim_log.find("key=" + fingerprint_), std::string::npos) << shim_log;
}

// A lost session (daemon and shim killed) recovered gets its agent and key again.
TEST_F(DaemonSshKeyRecordsSessions, ARecoveredSessionGetsTheAgentAgain) {
  const std::string id = session();
  ASSERT_FALSE(id.empty());
  const std::string login = agentSsh() + " " + ports_["user"].get<std::string>() + "@git.corp.test true && echo login-ok";
  ASSERT_EQ(inside(id, login).out, "login-ok\n");
  d_->kill9();
  for (pid_t pid : shimProcesses(d_->stateDir())) ::kill(pid, SIGKILL);
  ASSERT_TRUE(eventually([&] { return shimProcesses(d_->stateDir()).empty(); }));
  ASSERT_TRUE(d_->start()) << d_->stderrText();
  EXPECT_EQ(record()["active_leases"], 0);
  RunResult rec = cli({"session", "recover", id});
  ASSERT_EQ(rec.exit_code, 0) << rec.describe();
  EXPECT_EQ(record()["active_leases"], 1);
  RunResult again = inside(id, login);
  EXPECT_EQ(again.out, "login-ok\n") << claim(kClaim, "a recovered session lost its agent") << again.describe() << d_->stderrText();
}

// A rotation reaches the running session: its agent offers (and signs with) the new key at
// once, and the old key is offered no more.
TEST_F(DaemonSshKeyRecordsSessions, RotationReachesTheRunningSessionsAgent) {
  const std::string id = session();
  ASSERT_FALSE(id.empty());
  RunResult before = inside(id, "ssh-add -L");
  ASSERT_EQ(before.exit_code, 0) << before.describe();
  const std::string old_pub = dir_->read("client_key.pub");
  EXPECT_NE(before.out.find(old_pub.substr(0, old_pub.rfind(' '))), std::string::npos) << before.out;
  TempDir keys("sshrec-new");
  ASSERT_TRUE(makeKey(keys, "new"));
  RunResult rot = cli({"credential", "rotate", "gitkey", "--from-file", keys / "new", "--json"});
  ASSERT_EQ(rot.exit_code, 0) << rot.describe();
  EXPECT_EQ(nlohmann::json::parse(rot.out, nullptr, false)["ssh_fingerprint"], sshKeygenFingerprint(keys / "new.pub")) << rot.out;
  EXPECT_EQ(record()["stale_leases"], 0) << record().dump();
  RunResult after = inside(id, "ssh-add -L");
  ASSERT_EQ(after.exit_code, 0) << after.describe();
  const std::string new_pub = readHostFile(keys / "new.pub");
  EXPECT_NE(after.out.find(new_pub.substr(0, new_pub.rfind(' '))), std::string::npos) << after.out;
  EXPECT_EQ(after.out.find(old_pub.substr(0, old_pub.rfind(' '))), std::string::npos) << claim(kClaim, "the old key is still offered");
  // The sshd does not know the new key: the login through the agent is now refused by it.
  RunResult login = inside(id, agentSsh() + " " + ports_["user"].get<std::string>() + "@git.corp.test true; echo rc=$?");
  EXPECT_NE(login.out.find("rc=255"), std::string::npos) << login.describe();
}

// A profile naming the record: a create from it gets the agent (git push over ssh through it,
// counted on the record) and is made cold, never from a warm pool (the answer says so).
TEST_F(DaemonSshKeyRecordsSessions, AProfileNamingTheRecordPushesThroughTheSessionsAgentAndIsNotPooled) {
  TempDir files("sshrec-profile");
  nlohmann::json doc = {{"name", "git"},
                        {"session", {{"net", "proxy"}, {"allow", {grant("git.corp.test", "ssh")}}, {"allow_internal", {kInternal}},
                                     {"ssh_key", "gitkey"}}}};
  for (const std::string& o : Daemon::hostSessionOptions())
    if (o != "--allow-weaker") doc["session"]["limits"]["allow_weaker"].push_back(o);
  files.write("git.json", doc.dump());
  RunResult added = cli({"profile", "add", files / "git.json", "--json"});
  ASSERT_EQ(added.exit_code, 0) << added.describe();
  RunResult made = cli({"session", "create", "--profile", "git", "--ssh-key", "gitkey", "--json"});
  ASSERT_EQ(made.exit_code, 0) << made.describe() << d_->stderrText();
  auto j = nlohmann::json::parse(made.out, nullptr, false);
  EXPECT_EQ(j["ssh_key"], "gitkey") << made.out;
  EXPECT_EQ(j["profile"], "git") << made.out;
  EXPECT_EQ(j["warm"], false) << "a session holding an ssh key came from a pool: " << made.out;
  const std::string id = j["id"].get<std::string>();
  prepare(id);
  EXPECT_EQ(record()["active_leases"], 1);
  RunResult r = inside(id, "set -e; test -S \"$SSH_AUTH_SOCK\"; export GIT_SSH_COMMAND=\"" + agentSsh() + "\"; "
                           "git clone -q " + repoUrl() + " /tmp/c; cd /tmp/c; echo p > PROFILE; git add PROFILE; "
                           "git -c user.name=t -c user.email=t@t commit -q -m 'pushed from a profile session'; "
                           "git push -q origin HEAD:main; echo push-ok");
  ASSERT_EQ(r.exit_code, 0) << claim(kClaim, "git push from a profile's session failed") << r.describe() << dir_->read("sshd.log");
  EXPECT_EQ(r.out, "push-ok\n") << r.describe();
  RunResult log = corral::testing::run({"/usr/bin/git", "-c", "safe.directory=*", "--git-dir=" + ports_["repo"].get<std::string>(), "log",
                                        "-1", "--format=%s", "main"});
  EXPECT_EQ(log.out, "pushed from a profile session\n") << log.describe();
  EXPECT_TRUE(eventually([&] { return record()["use_count"].get<int64_t>() >= 2; })) << record().dump();
  ASSERT_EQ(cli({"session", "rm", id}).exit_code, 0);
  EXPECT_EQ(record()["active_leases"], 0);
}

}  // namespace
}  // namespace corral::testing
