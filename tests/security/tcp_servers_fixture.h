// SPDX-License-Identifier: Apache-2.0
// The non-HTTP servers of tests/security/tcp_servers.py (sshd, PostgreSQL, HTTP, UDP) on an
// internal address of the test's own network namespace, reached by names only the host
// resolves, and `corral exec --net proxy` runs against them: the fixture of the tcp-grant and
// SSH agent claim tests (claims_egress_tcp_test.cc, claims_egress_ssh_agent_test.cc).
#pragma once

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "private_netns.h"

namespace corral::testing {

using Args = std::vector<std::string>;

inline constexpr char kAddress[] = "10.77.0.1";
inline constexpr char kHosts[] =
    "127.0.0.1 localhost\n"
    "10.77.0.1 git.corp.test db.corp.test web.corp.test\n";
inline constexpr char kInternal[] = "10.77.0.0/16";
// nc -X 5 speaks SOCKS5 and sends the name as given: the sandbox resolves nothing.
inline constexpr char kProxyCommand[] = "ProxyCommand=nc -X 5 -x 127.0.0.1:3128 %h %p";

// The server side runs as nobody (PostgreSQL refuses root): its sshd runs commands with
// nobody's login shell, which is nologin on Debian, so the private mount namespace gets a
// passwd where it is /bin/sh. The host's /etc/passwd and /etc/shadow are untouched.
inline std::string passwdWithNobodyShell() {
  std::ifstream in("/etc/passwd");
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("nobody:", 0) == 0) line = line.substr(0, line.rfind(':')) + ":/bin/sh";
    out += line + "\n";
  }
  return out;
}

class TcpServersFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_ = enterPrivateNetwork({kAddress}, kHosts);
    if (skip_.empty()) skip_ = bindOverFile("/etc/passwd", passwdWithNobodyShell());
    // sshd without PAM refuses a locked account, and an unprivileged sshd cannot read the
    // real shadow file: a shadow of nobody's entry alone, whose field no password matches.
    if (skip_.empty()) skip_ = bindOverFile("/etc/shadow", "nobody:no-password-matches-this:20000:0:99999:7:::\n");
    if (!skip_.empty()) return;
    for (const char* tool : {"/usr/sbin/sshd", "/usr/bin/nc", "/usr/bin/psql", "/usr/lib/postgresql/15/bin/initdb"})
      if (::access(tool, X_OK) != 0) skip_ += std::string(skip_.empty() ? "" : ", ") + tool + " missing";
    if (!skip_.empty()) {
      skip_ += " (scripts/bootstrap.sh installs them)";
      return;
    }
  }
  // Starts the servers a test uses (once per process; ctest runs each test in its own).
  static void need(const Args& services) {
    if (servers_ != nullptr) return;
    dir_ = new TempDir("tcp-servers");
    if (isRoot() && ::chown(dir_->path().c_str(), kNobody, kNobody) != 0) return;
    RunOptions o;
    o.stdin_pipe = true;
    o.deadline = std::chrono::minutes(10);
    if (isRoot()) o.as_user = kNobody;
    Args argv = {"/usr/bin/python3", std::string(CORRAL_SOURCE_DIR) + "/tests/security/tcp_servers.py", dir_->path(), kAddress};
    argv.insert(argv.end(), services.begin(), services.end());
    servers_ = new Process(Process::start(argv, o));
    auto line = servers_->readLine(std::chrono::seconds(120));
    ports_ = nlohmann::json::parse(line.value_or(""), nullptr, false);
  }
  static void TearDownTestSuite() {
    if (servers_) {
      servers_->closeStdin();
      servers_->exitedWithin(std::chrono::seconds(30));
    }
    delete servers_;
    delete dir_;
    servers_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << "no private network for the tcp servers: " << skip_;
  }
  // SetUp's part for the servers this test uses.
  static ::testing::AssertionResult started(const Args& services) {
    need(services);
    if (ports_.is_object() && ports_.contains("ssh")) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "tcp_servers.py did not start: "
                                         << (dir_ ? dir_->read("sshd.log") + dir_->read("pg.log") : "");
  }

  static std::string port(const char* name) { return std::to_string(ports_[name].get<int>()); }
  static std::string grant(const std::string& host, const char* name) { return "tcp://" + host + ":" + port(name); }

  // `corral exec --net proxy` with these grants (and the internal CIDR unless told not to),
  // the ssh client's key and known_hosts in the workspace, running `sh -c script`.
  // extra: more options (--ssh-key); with_key: the client key in the workspace as /workspace/id.
  static RunResult run(const Args& grants, const std::string& script, bool internal = true, const Args& extra = {},
                       bool with_key = true) {
    TempDir ws("tcp-ws");
    if (with_key) ws.write("id", dir_->read("client_key"), 0600);
    ws.write("known_hosts", dir_->read("known_hosts"));
    Args opts = {"--net", "proxy", "--timeout", "90s", "--workspace", ws.path()};
    opts.insert(opts.end(), extra.begin(), extra.end());
    for (const std::string& g : grants) opts.insert(opts.end(), {"--allow", g});
    if (internal) opts.insert(opts.end(), {"--allow-internal", kInternal});
    return runCorral(opts, {"sh", "-c", script}, withDeadline());
  }
  static RunOptions withDeadline() {
    RunOptions o;
    o.deadline = std::chrono::seconds(120);
    return o;
  }
  static std::string sshCommand() {
    return "ssh -F /dev/null -i /workspace/id -o UserKnownHostsFile=/workspace/known_hosts "
           "-o StrictHostKeyChecking=yes -o BatchMode=yes -o '" +
           std::string(kProxyCommand) + "' -p " + port("ssh");
  }

  static std::vector<nlohmann::json> events(const RunResult& r) {
    std::vector<nlohmann::json> out;
    if (r.report && (*r.report)["egress"].is_array())
      for (const auto& e : (*r.report)["egress"]) out.push_back(e);
    return out;
  }
  // The tunnel's event: SOCKS5, decided by the tcp grant, resolved on the host into the CIDR.
  static void expectSocksTunnel(const nlohmann::json& e, const std::string& host, const char* name) {
    EXPECT_EQ(e["kind"], "socks5") << e.dump();
    EXPECT_EQ(e["method"], "CONNECT") << e.dump();
    EXPECT_EQ(e["decision"], "allow") << e.dump();
    EXPECT_EQ(e["destination"], host + ":" + port(name)) << e.dump();
    EXPECT_EQ(e["resolved"], std::string(kAddress) + ":" + port(name)) << "resolved on the host: " << e.dump();
    EXPECT_EQ(e["internal"], kInternal) << e.dump();
    EXPECT_GT(e["bytes_up"].get<uint64_t>(), 0u) << e.dump();
    EXPECT_GT(e["bytes_down"].get<uint64_t>(), 0u) << e.dump();
  }

  static inline std::string skip_;
  static inline TempDir* dir_ = nullptr;
  static inline Process* servers_ = nullptr;
  static inline nlohmann::json ports_;
};

}  // namespace corral::testing
