// SPDX-License-Identifier: Apache-2.0
// The buyer's commands: post (seal the body locally), buyer --watch (wrap K to runner and
// judge keys), tasks, result (open locally). Keys come from --key-file, never argv.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "cli/market_agent.h"
#include "cli/market_flags.h"
#include "market/client.h"
#include "market/keys.h"

namespace corral::cli {
namespace {

using nlohmann::json;
namespace mc = market::client;
namespace keys = market::keys;

using Session = MarketSession;
Result<Session> session(const MarketFlags& f) { return marketSession(f); }
Result<json> ok(Result<mc::Response> r) { return marketOk(std::move(r)); }

Result<std::string> readBodyFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return sysError("open --body-file");
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) return sysError("read --body-file");
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > size_t{512} * 1024) return Error(Errc::kLimit, "--body-file is larger than 512 KiB");
  }
  return out;
}

int post(const MarketFlags& f, bool as_json) {
  for (const char* need : {"--title", "--max-price", "--body-file"})
    if (!f.has(need)) return marketFail("post", std::string("missing ") + need, as_json);
  auto s = session(f);
  if (!s) return marketFail("post", s.error().message(), as_json);
  auto price = intFlag(f, "--max-price", 0);
  if (!price) return marketFail("post", price.error().message(), as_json);
  auto deadline = intFlag(f, "--deadline", static_cast<long long>(std::time(nullptr)) + 86400);
  if (!deadline) return marketFail("post", deadline.error().message(), as_json);
  auto body = readBodyFile(f.get("--body-file"));
  if (!body) return marketFail("post", body.error().message(), as_json);
  // K is made here and never leaves this machine unwrapped: the server gets ciphertext.
  const std::string k = keys::newSymmetricKey();
  json req = {{"title", f.get("--title")}, {"max_price", *price}, {"deadline", *deadline},
              {"body_ct", keys::toBase64(keys::secretSeal(k, *body))}};
  if (f.has("--model")) req["model"] = f.get("--model");
  if (f.has("--category")) req["category"] = f.get("--category");
  auto r = ok(s->http.post("/v1/tasks", req));
  if (!r) return marketFail("post", r.error().message(), as_json);
  const std::string task = (*r)["task"]["id"].get<std::string>();
  if (auto saved = mc::saveTaskKey(s->key_dir, task, k); !saved)
    return marketFail("post", "posted " + task + " but could not keep its key: " + saved.error().message(), as_json);
  const std::string state = (*r)["task"]["state"].get<std::string>();
  if (as_json) {
    std::printf("%s\n", json({{"ok", true}, {"task", task}, {"state", state}, {"test_mode", true}}).dump().c_str());
  } else {
    std::printf("posted %s (%s); provider ledger, test mode: no real money moves\n", task.c_str(), state.c_str());
  }
  return 0;
}

// One pass over the buyer's tasks: wrap K to each accepted runner key, and K||R to each
// judge key. Returns how many wraps were posted.
Result<int> releasePass(const Session& s) {
  ASSIGN_OR_RETURN(json list, ok(s.http.get("/v1/tasks")));
  int posted = 0;
  for (const json& t : list["tasks"]) {
    const std::string id = t["id"].get<std::string>();
    const std::string state = t["state"].get<std::string>();
    if (state == "claimed" && !t.value("key_released", true) && t.contains("runner_key")) {
      ASSIGN_OR_RETURN(std::string k, mc::loadTaskKey(s.key_dir, id));
      ASSIGN_OR_RETURN(std::string rk, keys::parsePublicKey(t["runner_key"].get<std::string>()));
      ASSIGN_OR_RETURN(std::string wrap, keys::sealTo(rk, k));
      ASSIGN_OR_RETURN(json done, ok(s.http.post("/v1/tasks/" + id + "/key", {{"wrap", keys::toBase64(wrap)}})));
      ++posted;
    } else if (state == "reviewing" && !t.value("judge_key_released", true) && t.contains("judge_key")) {
      if (s.id.kp.secret_key.empty()) return Error(Errc::kInvalidArgument, "the identity file has no secret key");
      ASSIGN_OR_RETURN(std::string k, mc::loadTaskKey(s.key_dir, id));
      ASSIGN_OR_RETURN(std::string rwrap, keys::fromBase64(t["result_key_wrap"].get<std::string>()));
      ASSIGN_OR_RETURN(std::string r, keys::openSealed(s.id.kp, rwrap));
      ASSIGN_OR_RETURN(std::string jk, keys::parsePublicKey(t["judge_key"].get<std::string>()));
      ASSIGN_OR_RETURN(std::string wrap, keys::sealTo(jk, k + r));
      ASSIGN_OR_RETURN(json done, ok(s.http.post("/v1/tasks/" + id + "/judge-key", {{"wrap", keys::toBase64(wrap)}})));
      ++posted;
    }
  }
  return posted;
}

int buyer(const MarketFlags& f, bool as_json) {
  if (!f.has("--watch")) return marketFail("buyer", "missing --watch", as_json);
  auto s = session(f);
  if (!s) return marketFail("buyer", s.error().message(), as_json);
  for (;;) {
    auto n = releasePass(*s);
    if (!n) return marketFail("buyer", n.error().message(), as_json);
    if (*n > 0) {
      if (as_json) {
        std::printf("%s\n", json({{"released", *n}}).dump().c_str());
      } else {
        std::printf("released %d key(s)\n", *n);
      }
      std::fflush(stdout);
    }
    if (f.has("--once")) return 0;
    std::this_thread::sleep_for(std::chrono::seconds(2));  // polling interval, not synchronisation
  }
}

int tasks(const MarketFlags& f, bool as_json) {
  auto s = session(f);
  if (!s) return marketFail("tasks", s.error().message(), as_json);
  auto r = ok(s->http.get("/v1/tasks"));
  if (!r) return marketFail("tasks", r.error().message(), as_json);
  if (as_json) {
    std::printf("%s\n", r->dump().c_str());
    return 0;
  }
  for (const json& t : (*r)["tasks"])
    std::printf("%s %-16s %8lld %s\n", t["id"].get<std::string>().c_str(), t["state"].get<std::string>().c_str(),
                t["max_price"].get<long long>(), t["title"].get<std::string>().c_str());
  return 0;
}

int result(const MarketFlags& f, bool as_json) {
  if (f.positional.size() != 1) return marketFail("result", "usage: corral market result TASK", as_json);
  auto s = session(f);
  if (!s) return marketFail("result", s.error().message(), as_json);
  if (s->id.kp.secret_key.empty()) return marketFail("result", "the identity file has no secret key", as_json);
  auto r = ok(s->http.get("/v1/tasks/" + f.positional[0]));
  if (!r) return marketFail("result", r.error().message(), as_json);
  const json& t = (*r)["task"];
  if (!t.contains("result_ct")) return marketFail("result", "no result yet", as_json);
  auto wrap = keys::fromBase64(t["result_key_wrap"].get<std::string>());
  auto ct = keys::fromBase64(t["result_ct"].get<std::string>());
  if (!wrap || !ct) return marketFail("result", "the server sent a malformed result", as_json);
  auto rk = keys::openSealed(s->id.kp, *wrap);
  if (!rk) return marketFail("result", rk.error().message(), as_json);
  auto plain = keys::secretOpen(*rk, *ct);
  if (!plain) return marketFail("result", plain.error().message(), as_json);
  if (as_json) {
    std::printf("%s\n", json({{"task", t["id"]}, {"state", t["state"]}, {"result", *plain}}).dump().c_str());
  } else {
    std::fwrite(plain->data(), 1, plain->size(), stdout);
  }
  return 0;
}

}  // namespace

Result<MarketSession> marketSession(const MarketFlags& f) {
  std::string server = f.get("--server");
  std::string key_file = f.get("--key-file");
  if (server.empty() && std::getenv("CORRAL_MARKET_SERVER")) server = std::getenv("CORRAL_MARKET_SERVER");
  if (key_file.empty() && std::getenv("CORRAL_MARKET_KEY_FILE")) key_file = std::getenv("CORRAL_MARKET_KEY_FILE");
  if (server.empty()) return Error(Errc::kInvalidArgument, "missing --server URL (or CORRAL_MARKET_SERVER)");
  if (key_file.empty()) return Error(Errc::kInvalidArgument, "missing --key-file FILE (or CORRAL_MARKET_KEY_FILE)");
  while (!server.empty() && server.back() == '/') server.pop_back();
  ASSIGN_OR_RETURN(mc::Identity id, mc::readIdentity(key_file));
  std::string api_key = id.api_key;
  return MarketSession{std::move(id), key_file + ".keys", mc::Http(server, api_key)};
}

Result<json> marketOk(Result<mc::Response> r) {
  if (!r) return r.error();
  if (r->status >= 400) {
    std::string msg = "refused";
    if (r->body.contains("error") && r->body["error"].contains("message")) msg = r->body["error"]["message"].get<std::string>();
    return Error(Errc::kRefused, "server said " + std::to_string(r->status) + ": " + msg);
  }
  return r->body;
}

int marketAgentMain(const std::string& sub, const std::vector<std::string>& args) {
  auto f = parseMarketFlags(args,
                            {"--server", "--key-file", "--title", "--max-price", "--body-file", "--model", "--category",
                             "--deadline"},
                            {"--json", "--watch", "--once"}, sub == "result" ? 1 : 0);
  if (!f) return marketFail(sub, f.error().message(), false);
  const bool as_json = f->has("--json");
  if (sub == "post") return post(*f, as_json);
  if (sub == "buyer") return buyer(*f, as_json);
  if (sub == "tasks") return tasks(*f, as_json);
  return result(*f, as_json);
}

}  // namespace corral::cli
