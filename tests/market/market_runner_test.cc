// SPDX-License-Identifier: Apache-2.0
// market.sandboxed-runners: `corral market seller|judge` against a real `corral market serve`.
// Each task runs in its own `corral exec` sandbox whose X25519 runner key is made inside it;
// the host relays ciphertext only. Adversarial: no 32-byte string anywhere the host keeps
// (runner logs, argv, environment, files, the database, the server's log) is the private
// key of a registered runner key (checked by X25519 base-point multiplication, with a
// control that finds a planted key); another sandbox cannot open a task wrapped to this
// one's key (control: this one can); a seller command that copies the body to stderr
// leaks nothing into the runner's log.
#include <fcntl.h>
#include <sodium.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "market/ledger.h"
#include "market_server.h"

namespace corral::market::testing {
namespace {

using nlohmann::json;
using corral::testing::Process;
using corral::testing::RunOptions;
using corral::testing::TempDir;

constexpr const char* kBodySentinel = "corral-sentinel-runner-body-7a31";
constexpr const char* kAnswerSentinel = "corral-sentinel-runner-answer-c02f";

std::string coreBin() {
  std::string b = CORRAL_BIN;
  return b + "-core";  // the sandbox helper lives in corral-core, bound read-only inside
}

// Every 32-byte candidate in `text`: windows of hex runs, of base64 runs (decoded), and of
// the raw bytes when the text is small. Returns true when one multiplies to `pub`.
bool holdsPrivateKeyOf(const std::string& text, const std::string& pub) {
  std::set<std::string> seen;
  auto test = [&](std::string_view cand) {
    if (cand.size() != 32 || !seen.insert(std::string(cand)).second) return false;
    unsigned char out[32];
    if (crypto_scalarmult_base(out, reinterpret_cast<const unsigned char*>(cand.data())) != 0) return false;
    return std::string(reinterpret_cast<char*>(out), 32) == pub;
  };
  static const std::regex hex_run("[0-9a-fA-F]{64,}"), b64_run("[A-Za-z0-9+/]{43,}={0,2}");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), hex_run); it != std::sregex_iterator(); ++it) {
    const std::string run = it->str();
    for (size_t i = 0; i + 64 <= run.size(); i += 2) {
      std::string lower = run.substr(i, 64);
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      auto raw = keys::fromHex(lower);
      if (raw && test(*raw)) return true;
    }
  }
  for (auto it = std::sregex_iterator(text.begin(), text.end(), b64_run); it != std::sregex_iterator(); ++it) {
    std::string run = it->str();
    for (size_t cut = 0; cut < 4; ++cut) {  // the run may start mid-quantum
      std::string s = run.substr(cut);
      while (!s.empty() && s.back() == '=') s.pop_back();
      s.resize(s.size() - s.size() % 4);
      auto raw = keys::fromBase64(s);
      if (!raw) continue;
      for (size_t i = 0; i + 32 <= raw->size(); ++i)
        if (test(std::string_view(*raw).substr(i, 32))) return true;
    }
  }
  if (text.size() <= 256 * 1024)
    for (size_t i = 0; i + 32 <= text.size(); ++i)
      if (test(std::string_view(text).substr(i, 32))) return true;
  return false;
}

class Runners : public DbTest {
 protected:
  void SetUp() override {
    DbTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(sodium_init() >= 0, true);
    server_ = ServerProcess::start(env_->url, *tmp_);
    ASSERT_NE(server_, nullptr);
  }
  std::string identityFile(const client::Identity& id) const {
    for (const std::string& name : tmp_->entries()) {
      if (name.find(".json") == std::string::npos || name.find(".keys") != std::string::npos) continue;
      auto read = client::readIdentity(*tmp_ / name);
      if (read && read->agent_id == id.agent_id) return *tmp_ / name;
    }
    ADD_FAILURE() << "no identity file for " << id.agent_id;
    return "";
  }
  client::Http as(const client::Identity& id) const { return client::Http(server_->url(), id.api_key); }
  std::vector<std::string> agent(const std::string& file) const { return {"--server", server_->url(), "--key-file", file}; }
  std::string post(const std::string& buyer_file, const std::string& body) {
    tmp_->write("body.txt", body);
    std::vector<std::string> a = {"post", "--title", "runner task", "--max-price", "1000", "--body-file", *tmp_ / "body.txt",
                                  "--json"};
    for (const auto& s : agent(buyer_file)) a.push_back(s);
    auto r = corralMarket(a);
    EXPECT_EQ(r.exit_code, 0) << r.describe();
    return r.exit_code == 0 ? json::parse(r.out)["task"].get<std::string>() : "";
  }
  // Starts `corral market ROLE --once -- CMD`, runs the buyer's `--watch --once` until it
  // exits; returns its result and the argv/environment it ran with (read from /proc).
  corral::testing::RunResult runRunner(const std::string& role, const std::string& file, const std::string& buyer_file,
                                       const std::vector<std::string>& cmd, std::string* proc_seen) {
    std::vector<std::string> a = {CORRAL_BIN, "market", role, "--once", "--poll-ms", "100", "--timeout", "60s"};
    for (const auto& s : agent(file)) a.push_back(s);
    a.push_back("--");
    a.insert(a.end(), cmd.begin(), cmd.end());
    RunOptions o;
    o.deadline = std::chrono::milliseconds(120'000);
    Process p = Process::start(a, o);
    std::vector<std::string> watch = {"buyer", "--watch", "--once"};
    for (const auto& s : agent(buyer_file)) watch.push_back(s);
    for (int i = 0; i < 600; ++i) {
      const std::string pid = std::to_string(p.pid());
      *proc_seen += readHostFileAll("/proc/" + pid + "/cmdline") + readHostFileAll("/proc/" + pid + "/environ");
      auto w = corralMarket(watch);
      EXPECT_EQ(w.exit_code, 0) << w.describe();
      if (p.exitedWithin(std::chrono::milliseconds(200))) break;
    }
    return p.wait();
  }
  static std::string readHostFileAll(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  // Everything the host keeps: the test's directory (identities, task keys, the SQLite file
  // and its WAL), the server's log.
  std::string hostArtifacts() const {
    std::string all;
    for (const std::string& name : tmp_->entries()) {
      all += readHostFileAll(*tmp_ / name);
      const std::string keys_dir = *tmp_ / name;
      if (name.size() > 5 && name.substr(name.size() - 5) == ".keys")
        for (const auto& e : std::filesystem::directory_iterator(keys_dir)) all += readHostFileAll(e.path().string());
    }
    return all;
  }
  std::unique_ptr<ServerProcess> server_;
};

class MarketSandboxedRunners : public Runners {};
MARKET_ENGINES(MarketSandboxedRunners);

TEST_P(MarketSandboxedRunners, SellerAndJudgeRunInSandboxesWhoseKeysAreBornInside) {
  const client::Identity buyer = registerViaCli(*server_, *tmp_, "buyer", 5000);
  const client::Identity seller = registerViaCli(*server_, *tmp_, "seller");
  const client::Identity judge = registerViaCli(*server_, *tmp_, "judge");
  const std::string buyer_file = identityFile(buyer);
  const std::string task = post(buyer_file, kBodySentinel);
  ASSERT_FALSE(task.empty());

  // The seller's command answers with a prefix and the body; it also tries to leak the body
  // through stderr (the helper discards it: the sandbox's stderr is the runner's log).
  std::string proc_seen;
  auto s = runRunner("seller", identityFile(seller), buyer_file,
                     {"/bin/sh", "-c", std::string("tee /dev/stderr | sed 's/^/") + kAnswerSentinel + ":/'"}, &proc_seen);
  ASSERT_EQ(s.exit_code, 0) << s.describe();
  const std::string expected = std::string(kAnswerSentinel) + ":" + kBodySentinel;

  std::vector<std::string> res = {"result", task};
  for (const auto& a : agent(buyer_file)) res.push_back(a);
  auto out = corralMarket(res);
  ASSERT_EQ(out.exit_code, 0) << out.describe();
  EXPECT_EQ(out.out, expected) << "the buyer opens what the sandbox sealed";

  // The judge's command reads both files inside its sandbox and prints a reason code.
  auto j = runRunner("judge", identityFile(judge), buyer_file,
                     {"/bin/sh", "-c",
                      std::string("grep -q ") + kBodySentinel + " \"$CORRAL_MARKET_BODY\" && grep -q " + kAnswerSentinel +
                          " \"$CORRAL_MARKET_RESULT\" && echo meets_requirements"},
                     &proc_seen);
  ASSERT_EQ(j.exit_code, 0) << j.describe();

  auto t = as(buyer).get("/v1/tasks/" + task);
  ASSERT_TRUE(t.ok());
  const json& tv = t->body["task"];
  EXPECT_EQ(tv["state"], "settled") << tv.dump();
  EXPECT_EQ(tv["reason"], "meets_requirements");
  // The keys the server registered are the ones the sandboxes printed (the runners log them).
  const std::string runner_key = tv["runner_key"].get<std::string>(), judge_key = tv["judge_key"].get<std::string>();
  EXPECT_NE(s.err.find("with runner key " + runner_key + " born in its sandbox"), std::string::npos) << s.err;
  EXPECT_NE(j.err.find("with runner key " + judge_key + " born in its sandbox"), std::string::npos) << j.err;

  // Money settles as in the scripted flow: seller 900, fees 100; the ledger balances.
  auto check = corralMarket({"ledger", "check", "--db", env_->url});
  EXPECT_EQ(check.exit_code, 0) << check.describe();
  auto show = corralMarket({"ledger", "show", "--db", env_->url, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.describe();
  int64_t payable = -1;
  const json shown = json::parse(show.out);
  for (const json& a : shown["accounts"])
    if (a["account"] == ledger::sellerPayable(seller.agent_id)) payable = a["balance"].get<int64_t>();
  EXPECT_EQ(payable, 900) << show.out;

  // Nothing private in the runners' logs: not the body, not the answer, not K.
  auto k = client::loadTaskKey(buyer_file + ".keys", task);
  ASSERT_TRUE(k.ok());
  const std::string logs = s.err + s.out + j.err + j.out;
  for (const std::string& secret : {std::string(kBodySentinel), std::string(kAnswerSentinel), keys::toHex(*k),
                                    keys::toBase64(*k)})
    EXPECT_EQ(logs.find(secret), std::string::npos) << "a private value reached a runner's log";
  EXPECT_EQ(logs.find(kBodySentinel), std::string::npos) << "the command's stderr leaked into the log";

  // No private key of either runner key anywhere the host keeps it.
  const std::string rk = *keys::fromHex(runner_key), jk = *keys::fromHex(judge_key);
  const std::string server_log = server_->stop();
  const std::string host = hostArtifacts() + server_log + logs + proc_seen;
  EXPECT_GT(host.size(), 1000u);
  EXPECT_FALSE(holdsPrivateKeyOf(host, rk)) << "the seller's runner key's private half is on the host";
  EXPECT_FALSE(holdsPrivateKeyOf(host, jk)) << "the judge's runner key's private half is on the host";
  // Control: the same scan finds an agent's private key the host does keep (the judge's
  // identity file holds its secret key in hex).
  EXPECT_TRUE(holdsPrivateKeyOf(host, judge.kp.public_key)) << "the scan must find a key that is there";
}

// One sandbox helper as the runner starts it.
struct Helper {
  int in_w = -1;
  std::optional<Process> p;
  std::string key;  // the public key it printed (raw)
  explicit Helper(const std::string& role) {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    in_w = fds[1];
    RunOptions o;
    o.stdin_fd = fds[0];
    o.deadline = std::chrono::milliseconds(60'000);
    const std::string core = coreBin();
    p.emplace(Process::start({core, "exec", "--net", "none", "--timeout", "30s", "--ro-bind", core + ":/opt/corral-core",
                              "--", "/opt/corral-core", "market", "sandbox-runner", "--role", role, "--", "/bin/cat"},
                             o));
    ::close(fds[0]);
    auto line = p->readLine(std::chrono::milliseconds(30'000));
    EXPECT_TRUE(line.has_value());
    if (!line) return;
    auto j = json::parse(*line, nullptr, false);
    auto raw = keys::fromHex(j.value("runner_key", ""));
    EXPECT_TRUE(raw.ok()) << *line;
    if (raw) key = *raw;
  }
  std::string feed(const json& frame) {
    const std::string s = frame.dump() + "\n";
    EXPECT_EQ(::write(in_w, s.data(), s.size()), static_cast<ssize_t>(s.size()));
    ::close(in_w);
    in_w = -1;
    auto line = p->readLine(std::chrono::milliseconds(30'000));
    p->wait();
    return line.value_or("");
  }
  ~Helper() {
    if (in_w >= 0) ::close(in_w);
  }
};

TEST_P(MarketSandboxedRunners, OnlyTheSandboxWhoseKeyWrapsTheTaskCanOpenIt) {
  const keys::KeyPair buyer = keys::newKeyPair();
  const std::string k = keys::newSymmetricKey();
  const std::string body_ct = keys::toBase64(keys::secretSeal(k, kBodySentinel));
  Helper right("seller"), other("seller");
  ASSERT_EQ(right.key.size(), 32u);
  ASSERT_EQ(other.key.size(), 32u);
  ASSERT_NE(right.key, other.key) << "each sandbox makes its own key";
  const json frame = {{"wrap", keys::toBase64(*keys::sealTo(right.key, k))},
                      {"body_ct", body_ct},
                      {"buyer_key", keys::toHex(buyer.public_key)}};
  // The task wrapped to `right`'s key, handed to another sandbox: refused, nothing opened.
  const std::string refused = other.feed(frame);
  EXPECT_NE(refused.find("does not open with this sandbox's key"), std::string::npos) << refused;
  EXPECT_EQ(refused.find("result_ct"), std::string::npos);
  EXPECT_EQ(refused.find(kBodySentinel), std::string::npos);
  // Control: the sandbox whose key it is opens it and seals /bin/cat's answer to the buyer.
  const std::string answered = right.feed(frame);
  const json a = json::parse(answered, nullptr, false);
  ASSERT_TRUE(a.is_object() && a.contains("result_ct")) << answered;
  EXPECT_EQ(answered.find(kBodySentinel), std::string::npos) << "the answer leaves the sandbox sealed";
  auto r = keys::openSealed(buyer, *keys::fromBase64(a["result_key_wrap"].get<std::string>()));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*keys::secretOpen(*r, *keys::fromBase64(a["result_ct"].get<std::string>())), kBodySentinel);
}

}  // namespace
}  // namespace corral::market::testing
