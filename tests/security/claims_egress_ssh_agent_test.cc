// SPDX-License-Identifier: Apache-2.0
// Claims egress.ssh-agent-key-stays-outside and egress.ssh-agent-signs-only-for-grants
// (claims/egress.toml): `corral exec --ssh-key PATH` gives the sandbox an ssh-agent socket whose
// key stays on the host, and the agent signs only SSH logins to a server behind an open
// tcp-grant tunnel of the sandbox. Real clients (git, ssh through `nc -X 5`) against a real
// sshd (tests/security/tcp_servers.py) in the test's private network namespace, and a hostile
// agent client (python, tests/security/ssh_agent_attack.py) inside the sandbox.
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tcp_servers_fixture.h"

namespace corral::testing {
namespace {

constexpr char kOutside[] = "egress.ssh-agent-key-stays-outside";
constexpr char kGrants[] = "egress.ssh-agent-signs-only-for-grants";

// The sandbox's ssh: no key of its own (none is in the workspace), only the agent.
std::string agentSsh(const std::string& port) {
  return "ssh -F /dev/null -o UserKnownHostsFile=/workspace/known_hosts -o StrictHostKeyChecking=yes "
         "-o BatchMode=yes -o '" + std::string(kProxyCommand) + "' -p " + port;
}

class SshAgentSuite : public TcpServersFixture {
 protected:
  void SetUp() override {
    TcpServersFixture::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(started({"ssh"}));
    // What ssh-keygen -l says of the key the agent holds: the events must name it so.
    RunResult fp = corral::testing::run({"/usr/bin/ssh-keygen", "-l", "-E", "sha256", "-f", dir_->path() + "/client_key.pub"});
    ASSERT_EQ(fp.exit_code, 0) << fp.describe();
    fingerprint_ = fp.out.substr(fp.out.find(' ') + 1);
    fingerprint_ = fingerprint_.substr(0, fingerprint_.find(' '));
  }
  // An exec with the agent (the key stays in the servers' directory on the host) and one
  // grant, to the sshd. The workspace holds known_hosts, the hostile client (attack.py) and,
  // when asked, the sshd's own host key; never a key of the client.
  RunResult runWithAgent(const std::string& script, const Args& extra = {}, bool server_key = false,
                         const TempDir* keep = nullptr) {
    TempDir own("agent-ws");
    const TempDir& ws = keep ? *keep : own;
    ws.write("known_hosts", dir_->read("known_hosts"));
    ws.write("attack.py", readHostFile(std::string(CORRAL_SOURCE_DIR) + "/tests/security/ssh_agent_attack.py"));
    if (server_key) ws.write("server_host_key", dir_->read("host_key"), 0644);
    Args opts = {"--net", "proxy", "--timeout", "90s", "--workspace", ws.path(),
                 "--allow", grant("git.corp.test", "ssh"), "--allow-internal", kInternal,
                 "--ssh-key", dir_->path() + "/client_key"};
    opts.insert(opts.end(), extra.begin(), extra.end());
    return runCorral(opts, {"sh", "-c", script}, withDeadline());
  }
  static std::vector<nlohmann::json> agentEvents(const RunResult& r, const std::string& method) {
    std::vector<nlohmann::json> out;
    for (const auto& e : events(r))
      if (e["kind"] == "ssh-agent" && e["method"] == method) out.push_back(e);
    return out;
  }
  std::string attack(const std::string& mode) {
    return "python3 /workspace/attack.py " + mode + " " + port("ssh");
  }
  std::string fingerprint_;
};

class EgressSshAgentSignsOnlyForGrants : public SshAgentSuite {};
class EgressSshAgentKeyStaysOutside : public SshAgentSuite {};

TEST_F(EgressSshAgentSignsOnlyForGrants, GitPushOverSshThroughTheRelayIsSignedByTheHostAgent) {
  const std::string url = "ssh://" + ports_["user"].get<std::string>() + "@git.corp.test:" + port("ssh") +
                          ports_["repo"].get<std::string>();
  RunResult r = runWithAgent("set -e; test -S \"$SSH_AUTH_SOCK\"; ls /workspace; "
                             "export GIT_SSH_COMMAND=\"" + agentSsh(port("ssh")) + "\"; "
                             "git clone -q " + url + " /tmp/c; cd /tmp/c; echo pushed > PUSHED; git add PUSHED; "
                             "git -c user.name=t -c user.email=t@t commit -q -m 'pushed through the corral agent'; "
                             "git push -q origin HEAD:main; echo push-ok");
  ASSERT_EQ(r.exit_code, 0) << claim(kGrants, "git push with the agent failed") << r.describe() << dir_->read("sshd.log");
  EXPECT_EQ(r.out, "attack.py\nknown_hosts\npush-ok\n") << "no key file in the workspace: " << r.describe();
  RunResult log = corral::testing::run({"/usr/bin/git", "-c", "safe.directory=*", "--git-dir=" + ports_["repo"].get<std::string>(), "log", "-1",
                       "--format=%s", "main"});
  EXPECT_EQ(log.out, "pushed through the corral agent\n") << "the push did not reach the server: " << log.describe();
  // Clone and push: two sessions, each bound to the server and signed once, both named with
  // the destination of the tunnel and the key's fingerprint.
  const auto binds = agentEvents(r, "session-bind"), signs = agentEvents(r, "sign-request");
  ASSERT_EQ(signs.size(), 2u) << r.describe();
  ASSERT_EQ(binds.size(), 2u) << r.describe();
  // OpenSSH 9.2's ssh binds its agent connection (session-bind@openssh.com) before it asks.
  for (const auto& e : binds) EXPECT_EQ(e["decision"], "allow") << e.dump();
  for (const auto& e : signs) {
    EXPECT_EQ(e["decision"], "allow") << e.dump();
    EXPECT_EQ(e["destination"], "git.corp.test:" + port("ssh")) << e.dump();
    EXPECT_EQ(e["resolved"], std::string(kAddress) + ":" + port("ssh")) << e.dump();
    EXPECT_EQ(e["ssh_key"], fingerprint_) << e.dump();
    EXPECT_EQ(e["host_key"].get<std::string>().rfind("SHA256:", 0), 0u) << e.dump();
    EXPECT_EQ(e["tag"], events(r)[0]["tag"]) << e.dump();
  }
}

// The hostile client binds its connection to a host key of its own (correctly signed over a
// session identifier it chose) while a tunnel to the granted sshd is open: no server behind a
// grant presents that key, so the bind and the login signature are refused; so is a
// signature over arbitrary data, bound or not.
TEST_F(EgressSshAgentSignsOnlyForGrants, AHostKeyNoGrantedServerPresentsGetsNoSignature) {
  RunResult r = runWithAgent(attack("own-key"));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "identities 12 1\narbitrary 5\nbind 5\nsign 5\n") << claim(kGrants, "a signature was given") << r.describe();
  const auto binds = agentEvents(r, "session-bind");
  ASSERT_EQ(binds.size(), 1u) << r.describe();
  EXPECT_EQ(binds[0]["rule"], "ssh-agent-no-grant") << binds[0].dump();
  EXPECT_EQ(binds[0]["destination"], "") << binds[0].dump();
  for (const auto& e : agentEvents(r, "sign-request")) EXPECT_EQ(e["decision"], "refuse") << e.dump();
}

// The control: the same client, bound with the granted server's own host key (the test's
// sshd, whose key the test hands in), gets its login signed, and the signature verifies under
// the agent's public key; arbitrary data on the bound connection is still refused.
TEST_F(EgressSshAgentSignsOnlyForGrants, ControlTheGrantedServersHostKeyGetsTheLoginSigned) {
  RunResult r = runWithAgent(attack("server-key"), {}, /*server_key=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "identities 12 1\narbitrary 5\nbind 6\nsign 14 verified\nbound-arbitrary 5\n") << r.describe();
  const auto signs = agentEvents(r, "sign-request");
  ASSERT_EQ(signs.size(), 3u) << r.describe();
  EXPECT_EQ(signs[1]["decision"], "allow") << signs[1].dump();
  EXPECT_EQ(signs[1]["destination"], "git.corp.test:" + port("ssh")) << signs[1].dump();
  EXPECT_EQ(signs[2]["rule"], "ssh-agent-not-userauth") << signs[2].dump();
}

// The server's own host key does not help once no tunnel to it is open.
TEST_F(EgressSshAgentSignsOnlyForGrants, WithoutAnOpenTunnelEvenTheServersHostKeyIsRefused) {
  RunResult r = runWithAgent(attack("server-key-no-tunnel"), {}, /*server_key=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "identities 12 1\narbitrary 5\nbind 5\nsign 5\n") << claim(kGrants, "signed without a tunnel") << r.describe();
  const auto binds = agentEvents(r, "session-bind");
  ASSERT_EQ(binds.size(), 1u) << r.describe();
  EXPECT_EQ(binds[0]["rule"], "ssh-agent-no-grant") << "refused for the missing tunnel, not the key: " << binds[0].dump();
}

// Adding, removing, locking, smartcards and unknown types are refused; frames that lie about
// their length close that connection; a client that asks and never reads stops being read
// (its answers do not pile up in the host's agent); the agent answers the next one.
TEST_F(EgressSshAgentSignsOnlyForGrants, ManagementRequestsAndMalformedFramesAreRefusedAndTheAgentSurvives) {
  RunResult r = runWithAgent(attack("malformed"));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out,
            "type 17 5\ntype 18 5\ntype 19 5\ntype 20 5\ntype 22 5\ntype 23 5\ntype 25 5\ntype 99 5\n"
            "extension 5\nshort-sign 5\nhuge closed\nzero closed\nflood stalled\nidentities 12 1\n")
      << claim(kGrants, "a management request or malformed frame was not refused") << r.describe();
  EXPECT_EQ(agentEvents(r, "lock").size(), 1u) << r.describe();
  EXPECT_EQ(agentEvents(r, "frame").size(), 2u) << r.describe();
}

// Everything the sandbox can read after a login through the agent: every process's
// environment, command line and readable memory, and the files of its writable places (the
// dump is copied back with --output and searched here). None holds the key (its seed, or a
// line of its file); a decoy given by --env and written to /tmp is found in the same dump,
// so the search does see what the sandbox holds.
TEST_F(EgressSshAgentKeyStaysOutside, NoEnvironmentFileOrProcessMemoryInsideHoldsTheKey) {
  const std::string decoy = "corral-sentinel-ssh-agent-decoy-5d1e";
  TempDir ws("agent-ws");
  const std::string script = "set -e; " + agentSsh(port("ssh")) + " -f " + ports_["user"].get<std::string>() +
                             "@git.corp.test 'sleep 20'; echo \"$CORRAL_DECOY\" > /tmp/decoy; "
                             "python3 /workspace/attack.py dump; echo dumped";
  RunResult r = runWithAgent(script, {"--output", "dump", "--env", "CORRAL_DECOY=" + decoy}, false, &ws);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << dir_->read("sshd.log");
  ASSERT_EQ(r.out, "dumped\n") << r.describe();
  ASSERT_EQ(agentEvents(r, "sign-request").size(), 1u) << "ssh logged in through the agent: " << r.describe();
  // The search runs on the host (tests/security/ssh_agent_attack.py search): it decodes the key
  // file there and looks for its seed and its lines, and for the decoy, in every dumped file.
  RunResult found = corral::testing::run({"/usr/bin/python3", std::string(CORRAL_SOURCE_DIR) + "/tests/security/ssh_agent_attack.py",
                         "search", ws / "dump", dir_->path() + "/client_key", decoy});
  ASSERT_EQ(found.exit_code, 0) << found.describe();
  // The memory of other processes was read at all, or the mem control below proves nothing.
  EXPECT_EQ(found.out.find("processes 0\n"), std::string::npos) << found.out;
  EXPECT_NE(found.out.find("decoy in environ\n"), std::string::npos) << "the control failed: " << found.out;
  EXPECT_NE(found.out.find("decoy in files\n"), std::string::npos) << "the control failed: " << found.out;
  EXPECT_NE(found.out.find("decoy in mem\n"), std::string::npos) << "the control failed: " << found.out;
  EXPECT_EQ(found.out.find("key in"), std::string::npos) << claim(kOutside, "the key is readable inside") << "\n" << found.out;
  // Nor is it in corral's output or the report: events carry the fingerprint only. (The key
  // file's first two base64 lines are the same for every unencrypted ed25519 key.)
  const std::string said = r.out + r.err + (r.report ? r.report->dump() : "");
  std::istringstream key_file(dir_->read("client_key"));
  int n = 0;
  for (std::string line; std::getline(key_file, line);) {
    if (line.rfind("-----", 0) == 0 || ++n <= 2) continue;
    EXPECT_EQ(said.find(line), std::string::npos) << claim(kOutside, "corral's output or report holds a line of the key file");
  }
  EXPECT_GT(n, 3) << "the key file was not read";
  EXPECT_NE(said.find(fingerprint_), std::string::npos) << "the events name the key by its fingerprint: " << r.describe();
}

}  // namespace
}  // namespace corral::testing
