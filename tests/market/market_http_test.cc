// SPDX-License-Identifier: Apache-2.0
// The HTTP boundary, on SQLite and PostgreSQL: the server never sees K or plaintext and
// keeps private data out of logs, events and others' answers (sentinels); bad input gets
// a 4xx and changes nothing; per-agent rate limits; two servers on one PostgreSQL.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "market/audit_chain.h"
#include "market/ledger.h"
#include "market_server.h"

namespace corral::market::testing {
namespace {

using nlohmann::json;

constexpr const char* kPlainSentinel = "corral-sentinel-plaintext-5d1c";
constexpr const char* kAnswerSentinel = "corral-sentinel-answer-9e44";

// Raw bytes to the server and its status code back (-1 when it closed without one).
int rawStatus(int port, const std::string& bytes, std::string* body = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer and close before reading it all
    off += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (out.rfind("HTTP/1.1 ", 0) != 0) return -1;
  if (body) *body = out.substr(out.find("\r\n\r\n") == std::string::npos ? out.size() : out.find("\r\n\r\n") + 4);
  return std::stoi(out.substr(9, 3));
}

std::string request(const std::string& method, const std::string& path, const std::string& key, const std::string& body,
                    const std::string& extra_headers = "") {
  return method + " " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" +
         (key.empty() ? "" : "Authorization: Bearer " + key + "\r\n") + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Every row of every market table as text: what a database dump would show.
std::string dumpTables(Db& db, bool without_ciphertext) {
  std::string all;
  for (const char* t : {"agents", "seen_keys", "tasks", "accounts", "ledger_txns", "ledger_entries", "events", "appeals",
                        "rate_windows", "schema_version"}) {
    const std::string cols = without_ciphertext && std::string(t) == "tasks"
                                 ? "id, buyer, title, category, model, state, outcome, seller, runner_key, judge, judge_key,"
                                   " verdict, reason"
                                 : "*";
    auto r = db.exec("SELECT " + cols + " FROM " + t);
    EXPECT_TRUE(r.ok());
    if (!r) continue;
    for (const auto& row : r->rows)
      for (const auto& v : row) all += (v ? *v : "NULL") + "\x1f";
  }
  return all;
}

std::string fileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class Http : public DbTest {
 protected:
  void start(const std::vector<std::string>& extra = {}) {
    server_ = ServerProcess::start(env_->url, *tmp_, extra);
    ASSERT_NE(server_, nullptr);
    port_ = std::stoi(server_->url().substr(server_->url().rfind(':') + 1));
  }
  client::Http as(const client::Identity& id) const { return client::Http(server_->url(), id.api_key); }
  std::unique_ptr<ServerProcess> server_;
  int port_ = 0;
};

// One scripted cycle (post, claim, key, result) through a real server, then everything an
// observer other than the task's parties could read: the log, the tables, the file's bytes,
// and other agents' answers; plus every secret of the cycle.
class Sentinel : public Http {
 protected:
  struct Seen {
    std::string log, tables, public_tables, raw_db, others, task, buyer_id;
    std::vector<std::pair<std::string, std::string>> secrets;  // what, value
    std::vector<std::string> ciphertexts;
  };
  Seen scenario();
};

Sentinel::Seen Sentinel::scenario() {
  Seen seen;
  start();
  const client::Identity buyer = registerViaCli(*server_, *tmp_, "buyer", 5000);
  const client::Identity seller = registerViaCli(*server_, *tmp_, "seller");
  const client::Identity other_seller = registerViaCli(*server_, *tmp_, "seller");
  const client::Identity other_buyer = registerViaCli(*server_, *tmp_, "buyer", 100);
  const client::Identity judge = registerViaCli(*server_, *tmp_, "judge");

  // The buyer's client: K made here, the body sealed here; the server gets ciphertext.
  const std::string k = keys::newSymmetricKey();
  const std::string body_ct = keys::toBase64(keys::secretSeal(k, std::string("prompt: ") + kPlainSentinel));
  auto posted = as(buyer).post("/v1/tasks", {{"title", "t"}, {"max_price", 500}, {"deadline", 4000000000LL}, {"body_ct", body_ct}});
  EXPECT_EQ(posted->status, 201) << posted->body.dump();
  const std::string task = posted->body["task"].value("id", "");
  const keys::KeyPair runner = keys::newKeyPair();
  EXPECT_EQ(as(seller).post("/v1/tasks/" + task + "/claim", {{"runner_key", keys::toHex(runner.public_key)}})->status, 200);
  const std::string wrap = keys::toBase64(*keys::sealTo(runner.public_key, k));
  EXPECT_EQ(as(buyer).post("/v1/tasks/" + task + "/key", {{"wrap", wrap}})->status, 200);
  const std::string r = keys::newSymmetricKey();
  const std::string result_ct = keys::toBase64(keys::secretSeal(r, kAnswerSentinel));
  EXPECT_EQ(as(seller).post("/v1/tasks/" + task + "/result",
                            {{"result_ct", result_ct}, {"result_key_wrap", keys::toBase64(*keys::sealTo(buyer.kp.public_key, r))}})
                ->status,
            200);
  for (const client::Identity* o : {&other_seller, &other_buyer, &judge}) {
    seen.others += as(*o).get("/v1/tasks")->body.dump();
    seen.others += as(*o).get("/v1/tasks/" + task)->body.dump();
  }
  seen.log = server_->stop();
  seen.secrets = {{"plaintext", kPlainSentinel},
                  {"answer", kAnswerSentinel},
                  {"K (hex)", keys::toHex(k)},
                  {"K (base64)", keys::toBase64(k)},
                  {"R (hex)", keys::toHex(r)},
                  {"runner secret key", keys::toHex(runner.secret_key)},
                  {"buyer secret key", keys::toHex(buyer.kp.secret_key)}};
  for (const client::Identity* id : {&buyer, &seller, &other_seller, &other_buyer, &judge})
    seen.secrets.emplace_back("API key of " + id->agent_id, id->api_key);
  seen.ciphertexts = {body_ct, result_ct, wrap};
  seen.tables = dumpTables(*env_->db, false);
  seen.public_tables = dumpTables(*env_->db, true);
  if (GetParam() == "sqlite") {
    const std::string path = env_->url.substr(7);
    seen.raw_db = fileBytes(path) + fileBytes(path + "-wal");
  }
  seen.task = task;
  seen.buyer_id = buyer.agent_id;
  return seen;
}

class MarketNoPlaintextAtServer : public Sentinel {};
MARKET_ENGINES(MarketNoPlaintextAtServer);

TEST_P(MarketNoPlaintextAtServer, KAndPlaintextReachNoTableNoFileByteNoOtherAgent) {
  const Seen s = scenario();
  for (const auto& [what, value] : s.secrets) {
    EXPECT_EQ(s.tables.find(value), std::string::npos) << "market.no-plaintext-at-server broken: " << what << " in the database";
    EXPECT_EQ(s.raw_db.find(value), std::string::npos) << "market.no-plaintext-at-server broken: " << what << " in the file's bytes";
    EXPECT_EQ(s.others.find(value), std::string::npos) << "market.no-plaintext-at-server broken: " << what << " in another's answer";
  }
  // Controls: the dump reads the ciphertext column and the rows; the file scan reads rows.
  EXPECT_NE(s.tables.find(s.ciphertexts[0]), std::string::npos) << "control: the dump reads the ciphertext column";
  EXPECT_NE(s.tables.find(s.buyer_id), std::string::npos);
  if (GetParam() == "sqlite") {
    EXPECT_NE(s.raw_db.find(s.task), std::string::npos) << "control: the raw file scan reads rows";
  }
}

class MarketNoPrivateDataInLogs : public Sentinel {};
MARKET_ENGINES(MarketNoPrivateDataInLogs);

TEST_P(MarketNoPrivateDataInLogs, LogEventsAndOthersAnswersHoldIdsOnly) {
  const Seen s = scenario();
  for (const auto& [what, value] : s.secrets)
    EXPECT_EQ(s.log.find(value), std::string::npos) << "market.no-private-data-in-logs broken: " << what << " in the server log";
  // Ciphertext only in its columns: not in the log, the events or other tables, or others' answers.
  for (const std::string& ct : s.ciphertexts) {
    EXPECT_EQ(s.log.find(ct.substr(0, 40)), std::string::npos) << "market.no-private-data-in-logs broken: ciphertext in the log";
    EXPECT_EQ(s.public_tables.find(ct.substr(0, 40)), std::string::npos)
        << "market.no-private-data-in-logs broken: ciphertext outside the *_ct/*_wrap columns";
    EXPECT_EQ(s.others.find(ct.substr(0, 40)), std::string::npos)
        << "market.no-private-data-in-logs broken: ciphertext in a non-owner's answer";
  }
  // Controls: the log was captured and names the ids; others did get answers.
  EXPECT_NE(s.log.find("market_request"), std::string::npos) << "control: the log was captured";
  EXPECT_NE(s.log.find(s.task), std::string::npos) << "control: ids are logged";
  EXPECT_NE(s.others.find("\"tasks\""), std::string::npos) << "control: others' answers were read";
}

class MarketBadInputRefused : public Http {};
MARKET_ENGINES(MarketBadInputRefused);

TEST_P(MarketBadInputRefused, MalformedRequestsGet4xxAndChangeNothing) {
  start();
  const client::Identity buyer = registerViaCli(*server_, *tmp_, "buyer", 5000);
  const std::string ok_body = json({{"title", "t"}, {"max_price", 10}, {"deadline", 4000000000LL}, {"body_ct", "AAAAAAAA"}}).dump();
  // Control: the same request well formed is taken.
  ASSERT_EQ(rawStatus(port_, request("POST", "/v1/tasks", buyer.api_key, ok_body)), 201);
  const auto txns_before = env_->db->exec("SELECT COUNT(*) FROM ledger_txns")->num(0, 0);
  const std::string sentinel = "corral-sentinel-badinput-33aa";
  struct Case {
    const char* what;
    std::string bytes;
    int want;
  } cases[] = {
      {"not JSON", request("POST", "/v1/tasks", buyer.api_key, "{\"title\":"), 400},
      {"an array", request("POST", "/v1/tasks", buyer.api_key, "[1]"), 400},
      {"unknown field", request("POST", "/v1/tasks", buyer.api_key,
                                ok_body.substr(0, ok_body.size() - 1) + ",\"" + sentinel + "\":\"" + sentinel + "\"}"), 400},
      {"duplicate field", request("POST", "/v1/tasks", buyer.api_key,
                                  ok_body.substr(0, ok_body.size() - 1) + ",\"max_price\":99999}"), 400},
      {"price as string", request("POST", "/v1/tasks", buyer.api_key,
                                  json({{"title", "t"}, {"max_price", "10"}, {"deadline", 4000000000LL}, {"body_ct", "AAAA"}}).dump()), 400},
      {"negative price", request("POST", "/v1/tasks", buyer.api_key,
                                 json({{"title", "t"}, {"max_price", -5}, {"deadline", 4000000000LL}, {"body_ct", "AAAA"}}).dump()), 400},
      {"huge price", request("POST", "/v1/tasks", buyer.api_key,
                             "{\"title\":\"t\",\"max_price\":18446744073709551615,\"deadline\":4000000000,\"body_ct\":\"AAAA\"}"), 400},
      {"control byte in title", request("POST", "/v1/tasks", buyer.api_key,
                                        json({{"title", "a\nb"}, {"max_price", 5}, {"deadline", 4000000000LL}, {"body_ct", "AAAA"}}).dump()), 400},
      {"past deadline", request("POST", "/v1/tasks", buyer.api_key,
                                json({{"title", "t"}, {"max_price", 5}, {"deadline", 1}, {"body_ct", "AAAA"}}).dump()), 400},
      {"body over the cap", request("POST", "/v1/tasks", buyer.api_key, std::string(2 * 1024 * 1024, 'x')), 413},
      {"header over the cap", request("GET", "/v1/me", buyer.api_key, "", "X-Big: " + std::string(16 * 1024, 'a') + "\r\n"), 431},
      {"no API key", request("POST", "/v1/tasks", "", ok_body), 401},
      {"unknown API key", request("POST", "/v1/tasks", "cmk_" + std::string(64, '0'), ok_body), 401},
      {"unknown route", request("GET", "/v1/nothing", buyer.api_key, ""), 404},
      {"path tricks", request("GET", "/v1/tasks/../me", buyer.api_key, ""), 404},
      {"bad task id", request("GET", "/v1/tasks/t_zz", buyer.api_key, ""), 404},
      {"wrong method", request("DELETE", "/v1/tasks", buyer.api_key, ""), 405},
      {"verdict with free text", request("POST", "/v1/tasks/t_0123456789abcdef/verdict", buyer.api_key,
                                         "{\"reason\":\"incorrect\",\"text\":\"" + std::string(sentinel) + "\"}"), 400},
      {"malformed HTTP", "NOT HTTP AT ALL\r\n\r\n", 400},
  };
  for (const Case& c : cases) {
    std::string body;
    const int status = rawStatus(port_, c.bytes, &body);
    EXPECT_EQ(status, c.want) << c.what << ": " << body.substr(0, 200);
    if (status >= 400 && !body.empty()) {
      auto j = json::parse(body, nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << c.what << ": the error is JSON";
      EXPECT_EQ(body.find(sentinel), std::string::npos) << c.what << ": the error echoed the input";
    }
  }
  EXPECT_EQ(env_->db->exec("SELECT COUNT(*) FROM tasks")->num(0, 0), 1) << "bad input created a task";
  EXPECT_EQ(env_->db->exec("SELECT COUNT(*) FROM ledger_txns")->num(0, 0), txns_before) << "bad input moved money";
  // The CLI: one line, non-zero, and a mistyped secret is not echoed.
  auto cli = corralMarket({"post", "--api-key=" + sentinel, "--title", "x"});
  EXPECT_NE(cli.exit_code, 0);
  EXPECT_EQ(cli.err.find(sentinel), std::string::npos) << cli.err;
  EXPECT_EQ(std::count(cli.err.begin(), cli.err.end(), '\n'), 1) << cli.err;
  EXPECT_EQ(corralMarket({"ledger", "check"}).exit_code, 125);
}

class MarketRateLimit : public Http {};
MARKET_ENGINES(MarketRateLimit);

TEST_P(MarketRateLimit, AnAgentOverItsBudgetGets429OthersDoNot) {
  start({"--rate-limit", "5"});
  const client::Identity a = registerViaCli(*server_, *tmp_, "seller");
  const client::Identity b = registerViaCli(*server_, *tmp_, "seller");
  int ok = 0, limited = 0;
  for (int i = 0; i < 8; ++i) {
    const long s = as(a).get("/v1/me")->status;
    ok += s == 200;
    limited += s == 429;
  }
  // All eight inside one minute unless the minute turns mid-loop: then at most 5 + 5 pass.
  EXPECT_LE(ok, 5 + 3);
  EXPECT_GE(limited, 1) << "per-agent rate limit never fired";
  EXPECT_EQ(as(b).get("/v1/me")->status, 200) << "control: another agent is not limited";
}

// Two server processes share one PostgreSQL: the cap and the claim hold across them.
class MarketTwoServers : public Http {};
INSTANTIATE_TEST_SUITE_P(Db, MarketTwoServers, ::testing::Values("postgres"), [](const auto& info) { return info.param; });

TEST_P(MarketTwoServers, CapAndClaimHoldAcrossTwoProcessesOnOnePostgres) {
  start();
  auto second = ServerProcess::start(env_->url, *tmp_);
  ASSERT_NE(second, nullptr);
  const client::Identity buyer = registerViaCli(*server_, *tmp_, "buyer", 1000);
  std::vector<client::Identity> sellers;
  for (int i = 0; i < 10; ++i) sellers.push_back(registerViaCli(i % 2 ? *second : *server_, *tmp_, "seller"));
  const std::string urls[] = {server_->url(), second->url()};
  std::atomic<int> created{0}, refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 100; ++i)
    threads.emplace_back([&, i] {
      client::Http h(urls[i % 2], buyer.api_key);
      auto r = h.post("/v1/tasks", {{"title", "t"}, {"max_price", 30}, {"deadline", 4000000000LL}, {"body_ct", "AAAAAAAA"}});
      if (r && r->status == 201) ++created;
      if (r && r->status == 402) ++refused;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 33) << "market.cap-atomic broken across two servers";
  EXPECT_EQ(refused.load(), 67);
  auto list = client::Http(urls[0], buyer.api_key).get("/v1/tasks");
  const std::string task = list->body["tasks"][0]["id"];
  std::atomic<int> won{0};
  threads.clear();
  for (int i = 0; i < 10; ++i)
    threads.emplace_back([&, i] {
      client::Http h(urls[i % 2], sellers[i].api_key);
      auto r = h.post("/v1/tasks/" + task + "/claim", {{"runner_key", freshRunnerKey()}});
      if (r && r->status == 200) ++won;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(won.load(), 1) << "market.claim-exclusive broken across two servers";
  EXPECT_TRUE(ledger::check(*env_->db)->problems.empty());
  // Both processes appended to one audit chain, in one order.
  auto chain = audit_chain::verify(*env_->db);
  ASSERT_TRUE(chain.ok());
  EXPECT_TRUE(chain->ok) << "market.audit-chained broken across two servers: " << chain->failure;
  EXPECT_EQ(chain->entries, env_->db->exec("SELECT COUNT(*) FROM events")->num(0, 0));
}

}  // namespace
}  // namespace corral::market::testing
