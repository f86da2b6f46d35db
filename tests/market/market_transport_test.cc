// SPDX-License-Identifier: Apache-2.0
// market.tls-transport and market.admin-peer-uid: the API over TLS with a certificate the
// test makes (openssl CLI) and a real client (curl); the admin socket's SO_PEERCRED gate
// against a foreign uid, with the socket made reachable so only the uid check stands.
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "market_server.h"

namespace corral::market::testing {
namespace {

using corral::testing::RunOptions;
using corral::testing::RunResult;
using nlohmann::json;

RunResult runTool(const std::vector<std::string>& argv, RunOptions o = {}) {
  o.deadline = std::chrono::milliseconds(120'000);
  return corral::testing::run(argv, o);
}

// A self-signed P-256 certificate for 127.0.0.1 (subjectAltName IP), as cert.pem/key.pem
// under `prefix`. False (with a failure) when openssl is missing or refuses.
bool makeCert(const corral::testing::TempDir& tmp, const std::string& prefix) {
  if (::access("/usr/bin/openssl", X_OK) != 0) {
    ADD_FAILURE() << "the openssl CLI is missing (scripts/bootstrap.sh installs it)";
    return false;
  }
  const RunResult r = runTool({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                               "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                               "-keyout", tmp / (prefix + "key.pem"), "-out", tmp / (prefix + "cert.pem")});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  return r.exit_code == 0;
}

std::string httpsUrl(const ServerProcess& s) {
  const std::string u = s.url();
  return "https://" + u.substr(u.find("://") + 3);
}

class MarketTlsTransport : public DbTest {};
MARKET_ENGINES(MarketTlsTransport);

TEST_P(MarketTlsTransport, CurlTrustingTheCertIsServedAndOthersAreNot) {
  if (::access("/usr/bin/curl", X_OK) != 0) GTEST_SKIP() << "curl is missing (scripts/bootstrap.sh installs it)";
  ASSERT_TRUE(makeCert(*tmp_, ""));
  ASSERT_TRUE(makeCert(*tmp_, "other-"));
  auto server =
      ServerProcess::start(env_->url, *tmp_, {"--tls-cert", *tmp_ / "cert.pem", "--tls-key", *tmp_ / "key.pem"});
  ASSERT_NE(server, nullptr);
  const client::Identity buyer = registerViaCli(*server, *tmp_, "buyer", 5000);
  const std::string base = httpsUrl(*server);

  // A real client that trusts the certificate: served over TLS 1.2+, JSON under /v1/.
  const RunResult ok = runTool({"/usr/bin/curl", "-sS", "--fail-with-body", "--cacert", *tmp_ / "cert.pem", base + "/v1/health"});
  ASSERT_EQ(ok.exit_code, 0) << "market.tls-transport broken: " << ok.describe();
  EXPECT_EQ(json::parse(ok.out)["status"], "ok") << ok.out;
  // An authenticated request; the key goes in a header file, never on the command line.
  tmp_->write("auth.hdr", "Authorization: Bearer " + buyer.api_key + "\n", 0600);
  const RunResult me = runTool({"/usr/bin/curl", "-sS", "--fail-with-body", "--tlsv1.2", "--cacert", *tmp_ / "cert.pem", "-H",
                                "@" + (*tmp_ / "auth.hdr"), base + "/v1/me"});
  ASSERT_EQ(me.exit_code, 0) << me.describe();
  EXPECT_EQ(json::parse(me.out)["agent"]["id"], buyer.agent_id);
  // TLS 1.0 and 1.1 are refused (curl exits 35: handshake failed).
  const RunResult old = runTool({"/usr/bin/curl", "-sS", "--tls-max", "1.1", "--tlsv1", "--cacert", *tmp_ / "cert.pem",
                                 base + "/v1/health"});
  EXPECT_NE(old.exit_code, 0) << "a TLS 1.1 handshake succeeded: " << old.describe();

  // Controls: a client trusting another certificate refuses the server (60: peer
  // certificate cannot be authenticated), and plain HTTP to the TLS port is not served.
  const RunResult wrong = runTool({"/usr/bin/curl", "-sS", "--cacert", *tmp_ / "other-cert.pem", base + "/v1/health"});
  EXPECT_EQ(wrong.exit_code, 60) << wrong.describe();
  EXPECT_EQ(wrong.out.find("\"ok\""), std::string::npos);
  const RunResult plain = runTool({"/usr/bin/curl", "-sS", "-m", "60", server->url() + "/v1/health"});
  EXPECT_NE(plain.exit_code, 0) << "plain HTTP was answered on the TLS port: " << plain.describe();
  EXPECT_EQ(plain.out.find("\"ok\""), std::string::npos);
  // The server is still up and serving TLS after the bad handshakes.
  EXPECT_EQ(runTool({"/usr/bin/curl", "-sS", "--fail", "--cacert", *tmp_ / "cert.pem", base + "/v1/health"}).exit_code, 0);
}

TEST_P(MarketTlsTransport, UnreadableOrMismatchedCertRefusesToStart) {
  ASSERT_TRUE(makeCert(*tmp_, ""));
  ASSERT_TRUE(makeCert(*tmp_, "other-"));
  const std::string admin = *tmp_ / "a.sock";
  auto base = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = {"serve", "--db", env_->url, "--listen", "127.0.0.1:0", "--admin-socket", admin};
    a.insert(a.end(), extra.begin(), extra.end());
    return corralMarket(a);
  };
  const RunResult missing = base({"--tls-cert", *tmp_ / "nope.pem", "--tls-key", *tmp_ / "key.pem"});
  EXPECT_NE(missing.exit_code, 0) << missing.describe();
  EXPECT_EQ(missing.out.find("listening"), std::string::npos);
  const RunResult half = base({"--tls-cert", *tmp_ / "cert.pem"});
  EXPECT_NE(half.exit_code, 0) << half.describe();
  // A key that is not the certificate's: OpenSSL's check refuses it before listening.
  const RunResult mismatched = base({"--tls-cert", *tmp_ / "cert.pem", "--tls-key", *tmp_ / "other-key.pem"});
  EXPECT_NE(mismatched.exit_code, 0) << mismatched.describe();
  EXPECT_EQ(mismatched.out.find("listening"), std::string::npos);
}

class MarketAdminPeerUid : public DbTest {
 protected:
  int64_t agentCount() { return env_->db->exec("SELECT COUNT(*) FROM agents")->num(0, 0); }
};
MARKET_ENGINES(MarketAdminPeerUid);

// The server runs as root; uid 65534 (no capabilities) connects through a socket made 0666
// in a searchable directory, so the socket's mode no longer stops it: SO_PEERCRED must.
TEST_P(MarketAdminPeerUid, RootForeignUidRefusedEvenWhenTheSocketIsReachable) {
  CORRAL_REQUIRE_ROOT("a second uid to connect from needs setresuid");
  auto server = ServerProcess::start(env_->url, *tmp_);
  ASSERT_NE(server, nullptr);
  const int64_t before = agentCount();
  RunOptions as_nobody;
  as_nobody.as_user = 65534;
  const std::string out = "/tmp/corral-intruder-" + GetParam() + "-" + std::to_string(::getpid()) + ".json";
  const std::vector<std::string> reg = {"admin", "--admin-socket", server->adminSocket(), "register", "--role",
                                        "seller", "--name", "intruder", "--out", out};
  auto nobody = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {CORRAL_BIN, "market"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runTool(argv, as_nobody);
  };
  // First gate, the socket's mode (0600, owned by the server's uid): connect is refused.
  struct stat st {};
  ASSERT_EQ(::stat(server->adminSocket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::chmod(tmp_->path().c_str(), 0755), 0);
  const RunResult gated = nobody(reg);
  EXPECT_NE(gated.exit_code, 0) << gated.describe();
  EXPECT_NE(gated.err.find("connect"), std::string::npos) << gated.describe();

  // Second gate alone: the socket reachable by everyone, the peer uid still refused.
  ASSERT_EQ(::chmod(server->adminSocket().c_str(), 0666), 0);
  const RunResult refused = nobody(reg);
  EXPECT_NE(refused.exit_code, 0) << "market.admin-peer-uid broken: " << refused.describe();
  EXPECT_NE(refused.err.find("peer uid is not the server's"), std::string::npos) << refused.describe();
  const RunResult cap = nobody({"admin", "--admin-socket", server->adminSocket(), "appeals"});
  EXPECT_NE(cap.exit_code, 0) << cap.describe();
  EXPECT_EQ(agentCount(), before) << "a foreign uid registered an agent";
  EXPECT_FALSE(::access(out.c_str(), F_OK) == 0) << "the refused CLI wrote an identity file";
  ::unlink(out.c_str());

  // Control: the same request from the server's own uid over the same socket is served.
  const client::Identity ok = registerViaCli(*server, *tmp_, "seller");
  EXPECT_FALSE(ok.agent_id.empty());
  EXPECT_EQ(agentCount(), before + 1);
  const std::string log = server->stop();
  EXPECT_NE(log.find("market_admin_refused"), std::string::npos);
  EXPECT_NE(log.find("peer_uid=65534"), std::string::npos);
}

// Root and rootless: the server's own uid is served, and the socket is born 0600.
TEST_P(MarketAdminPeerUid, SameUidIsServedAndTheSocketIsPrivate) {
  auto server = ServerProcess::start(env_->url, *tmp_);
  ASSERT_NE(server, nullptr);
  struct stat st {};
  ASSERT_EQ(::stat(server->adminSocket().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u) << "the admin socket must be 0600 from bind on";
  EXPECT_EQ(st.st_uid, ::geteuid());
  const RunResult r = corralMarket({"admin", "--admin-socket", server->adminSocket(), "appeals", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(json::parse(r.out).contains("appeals")) << r.out;
}

class MarketAdminToken : public DbTest {
 protected:
  int64_t agentCount() { return env_->db->exec("SELECT COUNT(*) FROM agents")->num(0, 0); }
};
MARKET_ENGINES(MarketAdminToken);

TEST_P(MarketAdminToken, OnlyTheTokenAdministersOverHttp) {
  const std::string token = "cmat_" + keys::toHex(keys::newSymmetricKey());
  tmp_->write("admin.token", token + "\n", 0600);
  auto server = ServerProcess::start(env_->url, *tmp_, {"--admin-token-file", *tmp_ / "admin.token"});
  ASSERT_NE(server, nullptr);
  const client::Identity seller = registerViaCli(*server, *tmp_, "seller");
  const int64_t before = agentCount();
  // A real client: corral's own CLI, over HTTP with the token read from its file.
  const RunResult ok = corralMarket({"admin", "--server", server->url(), "--admin-token-file", *tmp_ / "admin.token",
                                     "register", "--role", "seller", "--name", "remote", "--out", *tmp_ / "remote.json"});
  ASSERT_EQ(ok.exit_code, 0) << "market.admin-token broken: " << ok.describe();
  EXPECT_EQ(agentCount(), before + 1);
  EXPECT_TRUE(client::readIdentity(*tmp_ / "remote.json").ok());
  // Refused: a wrong token, none, an agent's API key; nothing changes.
  const nlohmann::json reg = {{"op", "register"}, {"role", "seller"}, {"name", "intruder"},
                              {"public_key", freshRunnerKey()}};
  for (const std::string& bad : {"cmat_" + keys::toHex(keys::newSymmetricKey()), std::string(), seller.api_key,
                                 token.substr(0, token.size() - 1)}) {
    auto r = client::Http(server->url(), bad).post("/v1/admin", reg);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 401) << "market.admin-token broken: a bad token was served";
  }
  auto get = client::Http(server->url(), token).get("/v1/admin");
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(agentCount(), before + 1) << "a refused admin request changed something";
  tmp_->write("wrong.token", "cmat_" + keys::toHex(keys::newSymmetricKey()) + "\n", 0600);
  const RunResult cli_bad = corralMarket({"admin", "--server", server->url(), "--admin-token-file", *tmp_ / "wrong.token",
                                          "appeals"});
  EXPECT_NE(cli_bad.exit_code, 0) << cli_bad.describe();
  EXPECT_NE(cli_bad.err.find("admin token refused"), std::string::npos) << cli_bad.describe();
  const std::string log = server->stop();
  EXPECT_EQ(log.find(token), std::string::npos) << "the admin token reached the log";
  EXPECT_EQ(log.find(token.substr(5, 16)), std::string::npos);
  EXPECT_NE(log.find("market_admin_token_refused"), std::string::npos);
}

TEST_P(MarketAdminToken, WithoutAFileTheRouteIsAbsentAndLooseFilesAreRefused) {
  auto server = ServerProcess::start(env_->url, *tmp_);
  ASSERT_NE(server, nullptr);
  auto r = client::Http(server->url(), "cmat_" + keys::toHex(keys::newSymmetricKey())).post("/v1/admin", {{"op", "appeals"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404) << "no --admin-token-file: no admin over HTTP";
  (void)server->stop();
  const std::string token = "cmat_" + keys::toHex(keys::newSymmetricKey());
  const std::string admin = *tmp_ / "b.sock";
  auto serve = [&](const std::string& file) {
    return corralMarket({"serve", "--db", env_->url, "--listen", "127.0.0.1:0", "--admin-socket", admin,
                         "--admin-token-file", file});
  };
  tmp_->write("loose.token", token, 0644);
  const RunResult loose = serve(*tmp_ / "loose.token");
  EXPECT_NE(loose.exit_code, 0) << loose.describe();
  EXPECT_NE(loose.err.find("chmod 600"), std::string::npos) << loose.describe();
  tmp_->write("short.token", "abc", 0600);
  EXPECT_NE(serve(*tmp_ / "short.token").exit_code, 0);
  EXPECT_NE(serve(*tmp_ / "missing.token").exit_code, 0);
}

}  // namespace
}  // namespace corral::market::testing
