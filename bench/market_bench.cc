// SPDX-License-Identifier: Apache-2.0
// Market benchmark: full task cycles against a real `corral market serve`, then the floor
// (the same database writes as bare transactions) in the same run. Driven by market_bench.py.
//
//   corral-market-bench --corral BIN --db URL --clients N --cycles M
//
// Prints one JSON object: tasks/s of the cycle and of the floor, their ratio, and p50/p99 of
// each request kind. The database must be empty; it is left full of benchmark rows.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "market/audit_chain.h"
#include "market/client.h"
#include "market/db.h"
#include "market/keys.h"
#include "market/ledger.h"
#include "market/market.h"
#include "market/schema.h"

extern char** environ;

namespace {

using namespace corral::market;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "market_bench: %s\n", why.c_str());
  std::exit(1);
}

template <typename T>
T must(corral::Result<T> r, const char* what) {
  if (!r) die(std::string(what) + ": " + r.error().message());
  return std::move(*r);
}
void must(const corral::Result<void>& r, const char* what) {
  if (!r) die(std::string(what) + ": " + r.error().message());
}

// Records every write statement of each committed transaction (a retried attempt's
// statements are dropped with its ROLLBACK): what the floor replays.
class RecordingDb final : public Db {
 public:
  explicit RecordingDb(Db& inner) : inner_(inner) {}
  corral::Result<Rows> exec(std::string_view sql, const Params& params) override {
    if (recording_) {
      if (sql == "COMMIT") {
        if (!current_.empty()) txns_.push_back(std::move(current_));
        current_.clear();
        in_txn_ = false;
      } else if (sql == "ROLLBACK") {
        current_.clear();
        in_txn_ = false;
      } else if (sql.rfind("INSERT", 0) == 0 || sql.rfind("UPDATE", 0) == 0 || sql.rfind("DELETE", 0) == 0) {
        if (in_txn_) {
          current_.emplace_back(std::string(sql), params);
        } else {  // autocommit: a transaction of its own
          txns_.push_back({{std::string(sql), params}});
        }
      }
    }
    return inner_.exec(sql, params);
  }
  Dialect dialect() const override { return inner_.dialect(); }
  corral::Result<void> begin() override {
    in_txn_ = true;
    return inner_.begin();
  }
  void record(bool on) { recording_ = on; }
  using Txn = std::vector<std::pair<std::string, Params>>;
  const std::vector<Txn>& txns() const { return txns_; }

 private:
  Db& inner_;
  bool recording_ = false, in_txn_ = false;
  Txn current_;
  std::vector<Txn> txns_;
};

struct Party {
  std::string id, api_key;
  keys::KeyPair kp;
};

Party registerAgent(Market& m, Role role, int64_t cap, int n) {
  Party p;
  p.kp = keys::newKeyPair();
  NewAgent a;
  a.role = role;
  a.name = std::string(roleName(role)) + "-" + std::to_string(n);
  a.public_key = keys::toHex(p.kp.public_key);
  a.spend_cap = cap;
  Registered r = must(m.registerAgent(a), "register");
  p.id = r.id;
  p.api_key = r.api_key;
  return p;
}

struct Trio {
  Party buyer, seller, judge;
};

constexpr const char* kSteps[] = {"post", "claim", "key", "result", "review", "judge-key", "verdict"};
constexpr int kPrice = 100;

// One cycle in-process, the way the API runs it (a rate-limit count before each request),
// so the recorder sees the same writes the server makes for one task.
void inProcessCycle(Market& m, const Trio& t) {
  const int64_t limit = 1'000'000;
  const std::string k = keys::newSymmetricKey(), r = keys::newSymmetricKey();
  const keys::KeyPair runner = keys::newKeyPair(), jr = keys::newKeyPair();
  must(m.rateLimit(t.buyer.id, limit), "rate");
  Task task = must(m.post(must(m.agent(t.buyer.id), "agent"),
                          {.title = "bench", .category = "", .model = "", .max_price = kPrice, .deadline = 4'000'000'000,
                           .body_ct = keys::toBase64(keys::secretSeal(k, "body"))}),
                   "post");
  const Agent seller = must(m.agent(t.seller.id), "agent"), judge = must(m.agent(t.judge.id), "agent"),
              buyer = must(m.agent(t.buyer.id), "agent");
  must(m.rateLimit(seller.id, limit), "rate");
  must(m.claim(seller, task.id, keys::toHex(runner.public_key)), "claim");
  must(m.rateLimit(buyer.id, limit), "rate");
  must(m.releaseKey(buyer, task.id, keys::toBase64(must(keys::sealTo(runner.public_key, k), "seal"))), "key");
  must(m.rateLimit(seller.id, limit), "rate");
  must(m.submit(seller, task.id, keys::toBase64(keys::secretSeal(r, "answer")),
                keys::toBase64(must(keys::sealTo(t.buyer.kp.public_key, r), "seal"))),
       "submit");
  must(m.rateLimit(judge.id, limit), "rate");
  must(m.claimReview(judge, task.id, keys::toHex(jr.public_key)), "review");
  must(m.rateLimit(buyer.id, limit), "rate");
  must(m.releaseJudgeKey(buyer, task.id, keys::toBase64(must(keys::sealTo(jr.public_key, k + r), "seal"))), "judge-key");
  must(m.rateLimit(judge.id, limit), "rate");
  must(m.verdict(judge, task.id, "meets_requirements"), "verdict");
}

std::string lastTaskId(Db& db) {
  auto r = must(db.exec("SELECT id FROM tasks ORDER BY created_at DESC, id LIMIT 1"), "task id");
  return r.text(0, 0);
}

std::string randomHex(size_t bytes) { return keys::toHex(keys::newSymmetricKey()).substr(0, bytes * 2); }

// The recorded transactions with the task's and agents' ids swapped for this replay's, and
// every event id and 64-hex value (runner keys, chain hashes) fresh, so unique keys hold.
struct Replayer {
  std::vector<RecordingDb::Txn> txns;
  std::vector<std::pair<std::string, std::string>> ids;  // recorded id -> placeholder slot
  void run(Db& db, const std::vector<std::string>& with) const {
    static const std::regex kEvent("e_[0-9a-f]{32}"), kHex64("[0-9a-f]{64}");
    for (const auto& txn : txns) {
      must(inTransaction(db,
                         [&](Db& tx) -> corral::Result<void> {
                           int64_t position = -1;  // the audit chain's, as the replay takes it
                           for (const auto& [sql, params] : txn) {
                             Params p = params;
                             for (Param& v : p) {
                               auto* s = std::get_if<std::string>(&v);
                               if (s == nullptr) continue;
                               for (size_t i = 0; i < ids.size(); ++i)
                                 for (size_t at = s->find(ids[i].first); at != std::string::npos;
                                      at = s->find(ids[i].first, at + with[i].size()))
                                   s->replace(at, ids[i].first.size(), with[i]);
                               if (std::regex_match(*s, kEvent)) *s = "e_" + randomHex(16);
                               if (std::regex_match(*s, kHex64)) *s = randomHex(32);
                             }
                             // The chain position is the one the replay's own head update gave.
                             if (sql.rfind("INSERT INTO events", 0) == 0 && p.size() > 6) p[6] = position - 1;
                             auto r = tx.exec(sql, p);
                             if (!r) return r.error();
                             if (sql.rfind("UPDATE audit_head SET entries", 0) == 0) position = r->num(0, 0);
                           }
                           return {};
                         }),
           "floor transaction");
    }
  }
};

struct Server {
  pid_t pid = -1;
  std::string url;
};

Server startServer(const std::string& corral, const std::string& db_url, const std::string& admin) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) die("pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args = {corral, "market", "serve", "--db", db_url, "--listen", "127.0.0.1:0",
                                   "--admin-socket", admin, "--rate-limit", "1000000"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Server s;
  if (posix_spawn(&s.pid, corral.c_str(), &fa, nullptr, argv.data(), environ) != 0) die("spawn corral");
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  std::string line;
  char c;
  while (::read(out[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(out[0]);
  const std::string marker = "listening on ";
  const size_t at = line.find(marker);
  if (at == std::string::npos) die("server did not start");
  s.url = "http://" + line.substr(at + marker.size(), line.find(' ', at + marker.size()) - at - marker.size());
  return s;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> a;
  for (int i = 1; i + 1 < argc; i += 2) a[argv[i]] = argv[i + 1];
  for (const char* k : {"--corral", "--db", "--clients", "--cycles", "--tmp"})
    if (!a.count(k)) die(std::string("missing ") + k);
  const int clients = std::stoi(a["--clients"]), cycles = std::stoi(a["--cycles"]);
  if (!keys::ready()) die("libsodium");

  auto db = must(openDb(a["--db"]), "open db");
  must(migrate(*db), "migrate");
  RecordingDb rec(*db);
  auto provider = ledgerProvider(rec);
  Config cfg;
  cfg.now = [] { return static_cast<int64_t>(std::time(nullptr)); };
  cfg.suspend_after_strikes = 1'000'000;
  Market m(rec, *provider, cfg);

  // The recording: one cycle by its own trio.
  const int64_t cap = int64_t{kPrice} * (cycles + 10) * 10;
  const Trio model{registerAgent(m, Role::kBuyer, cap, -1), registerAgent(m, Role::kSeller, 0, -1),
                   registerAgent(m, Role::kJudge, 0, -1)};
  rec.record(true);
  inProcessCycle(m, model);
  rec.record(false);
  Replayer replay{rec.txns(), {}};
  replay.ids = {{lastTaskId(*db), ""}, {model.buyer.id, ""}, {model.seller.id, ""}, {model.judge.id, ""}};
  size_t statements = 0;
  for (const auto& t : replay.txns) statements += t.size();

  std::vector<Trio> trios;
  for (int i = 0; i < clients; ++i)
    trios.push_back({registerAgent(m, Role::kBuyer, cap, i), registerAgent(m, Role::kSeller, 0, i),
                     registerAgent(m, Role::kJudge, 0, i)});

  // The cycle over HTTP against a real server.
  const Server server = startServer(a["--corral"], a["--db"], a["--tmp"] + "/admin.sock");
  std::mutex mu;
  std::map<std::string, std::vector<double>> lat;
  std::atomic<int> failures{0};
  auto t0 = Clock::now();
  {
    std::vector<std::thread> th;
    for (int c = 0; c < clients; ++c)
      th.emplace_back([&, c] {
        const Trio& t = trios[static_cast<size_t>(c)];
        const client::Http b(server.url, t.buyer.api_key), s(server.url, t.seller.api_key), j(server.url, t.judge.api_key);
        std::map<std::string, std::vector<double>> mine;
        for (int n = 0; n < cycles; ++n) {
          const std::string k = keys::newSymmetricKey(), r = keys::newSymmetricKey();
          const keys::KeyPair runner = keys::newKeyPair(), jr = keys::newKeyPair();
          auto timed = [&](const char* step, const client::Http& who, const std::string& path, const json& body,
                           long want) -> json {
            const auto s0 = Clock::now();
            auto res = who.post(path, body);
            mine[step].push_back(std::chrono::duration<double, std::milli>(Clock::now() - s0).count());
            if (!res || res->status != want) {
              ++failures;
              return json();
            }
            return res->body;
          };
          json posted = timed("post", b, "/v1/tasks",
                              {{"title", "bench"}, {"max_price", kPrice}, {"deadline", 4'000'000'000LL},
                               {"body_ct", keys::toBase64(keys::secretSeal(k, "body"))}},
                              201);
          if (posted.is_null()) continue;
          const std::string p = "/v1/tasks/" + posted["task"]["id"].get<std::string>();
          timed("claim", s, p + "/claim", {{"runner_key", keys::toHex(runner.public_key)}}, 200);
          timed("key", b, p + "/key", {{"wrap", keys::toBase64(*keys::sealTo(runner.public_key, k))}}, 200);
          timed("result", s, p + "/result",
                {{"result_ct", keys::toBase64(keys::secretSeal(r, "answer"))},
                 {"result_key_wrap", keys::toBase64(*keys::sealTo(t.buyer.kp.public_key, r))}},
                200);
          timed("review", j, p + "/review", {{"runner_key", keys::toHex(jr.public_key)}}, 200);
          timed("judge-key", b, p + "/judge-key", {{"wrap", keys::toBase64(*keys::sealTo(jr.public_key, k + r))}}, 200);
          timed("verdict", j, p + "/verdict", {{"reason", "meets_requirements"}}, 200);
        }
        std::lock_guard lock(mu);
        for (auto& [k, v] : mine) lat[k].insert(lat[k].end(), v.begin(), v.end());
      });
    for (auto& t : th) t.join();
  }
  const double cycle_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ::kill(server.pid, SIGTERM);
  int st = 0;
  ::waitpid(server.pid, &st, 0);
  // The money and the audit trail must be whole after the run (before the floor's rows).
  auto check = must(ledger::check(*db), "ledger check");
  auto chain = must(audit_chain::verify(*db), "audit verify");

  // The floor: the same writes, bare. PostgreSQL: as many connections as the server's pool
  // (8) or clients, whichever is fewer. SQLite: one connection, since SQLite has one writer
  // and a minimal program would not make its writers wait in the busy handler.
  const bool sqlite = a["--db"].rfind("sqlite:", 0) == 0;
  const int conns = sqlite ? 1 : std::min(clients, 8);
  std::atomic<int> next{0};
  t0 = Clock::now();
  {
    std::vector<std::thread> th;
    for (int w = 0; w < conns; ++w)
      th.emplace_back([&] {
        auto conn = must(openDb(a["--db"]), "open db");
        for (int i = next++; i < clients * cycles; i = next++) {
          const Trio& t = trios[static_cast<size_t>(i % clients)];
          const std::vector<std::string> with = {"t_bench" + std::to_string(i) + "x" + randomHex(4), t.buyer.id,
                                                 t.seller.id, t.judge.id};
          replay.run(*conn, with);
        }
      });
    for (auto& t : th) t.join();
  }
  const double floor_s = std::chrono::duration<double>(Clock::now() - t0).count();

  const double tasks = double(clients) * cycles;
  json out = {{"db", sqlite ? "sqlite" : "postgresql"},
              {"floor_connections", conns},
              {"clients", clients},
              {"tasks", tasks},
              {"failures", failures.load()},
              {"tasks_per_s", tasks / cycle_s},
              {"floor_tasks_per_s", tasks / floor_s},
              {"ratio", (tasks / cycle_s) / (tasks / floor_s)},
              {"floor_txns_per_task", replay.txns.size()},
              {"floor_statements_per_task", statements},
              {"ledger_balanced", check.problems.empty()},
              {"audit_intact", chain.ok}};
  for (const char* s : kSteps)
    out["ms"][s] = {{"p50", pct(lat[s], 0.50)}, {"p99", pct(lat[s], 0.99)}, {"n", lat[s].size()}};
  std::printf("%s\n", out.dump().c_str());
  return failures.load() == 0 && check.problems.empty() && chain.ok ? 0 : 1;
}
