// SPDX-License-Identifier: Apache-2.0
// The /v1/ routes: authenticate, rate-limit, parse strictly, run, render, log ids only.
#include "market/api.h"

#include <nlohmann/json.hpp>

#include "base/log.h"
#include "market/admin_socket.h"
#include "market/keys.h"
#include "market/request.h"
#include "market/views.h"

namespace corral::market {
namespace {

using nlohmann::json;

// Every answer says which provider moved the money and that none of it was real.
json envelope() { return {{"contract", kContractVersion}, {"provider", "ledger"}, {"test_mode", true}}; }

HttpResponse answer(int status, json j) {
  json out = envelope();
  for (auto& [k, v] : j.items()) out[k] = v;
  return {status, out.dump(), {{"X-Corral-Test-Mode", "ledger provider: no real money moves"}}};
}

HttpResponse failure(const Error& e) {
  const int status = httpStatus(e);
  // Internal errors say nothing about why: their context names tables and engines.
  const std::string msg = status >= 500 ? "internal error" : e.context();
  return answer(status, {{"error", {{"status", status}, {"message", msg}}}});
}

std::string bearer(const HttpRequest& req) {
  auto it = req.headers.find("authorization");
  if (it == req.headers.end() || it->second.rfind("Bearer ", 0) != 0) return "";
  return it->second.substr(7);
}

}  // namespace

HttpResponse Api::handle(const HttpRequest& req) {
  auto lease = pool_.acquire();
  auto provider = &lease.provider();
  Market m(lease.db(), *provider, cfg_);
  std::string agent_id, task_id;
  HttpResponse res = route(req, m, agent_id, task_id);
  // Ids, the route's shape and the status: never a body, a key or a header's value.
  std::string shape = req.target.substr(0, req.target.find('?'));
  if (!task_id.empty()) {
    const size_t at = shape.find(task_id);
    if (at != std::string::npos) shape.replace(at, task_id.size(), ":id");
  }
  if (shape.size() > 40 || shape.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789/-_:") != std::string::npos)
    shape = "(unrouted)";
  log::info("market_request", "method=" + log::value(req.method.size() <= 8 ? req.method : "?") + " route=" + shape +
                                  " status=" + std::to_string(res.status) + " agent=" + (agent_id.empty() ? "-" : agent_id) +
                                  " task=" + (task_id.empty() ? "-" : task_id) +
                                  " body_bytes=" + std::to_string(req.body.size()));
  return res;
}

HttpResponse Api::route(const HttpRequest& req, Market& m, std::string& agent_id, std::string& task_id) {
  auto target = request::parseTarget(req.target);
  if (!target) return failure(target.error());
  const request::Route& r = *target;
  task_id = r.id;
  if (r.collection == "health") return answer(200, {{"status", "ok"}});
  if (r.collection == "reason-codes") return answer(200, {{"reason_codes", reasonCodesView()}});

  const std::string key = bearer(req);
  // The admin token: the admin socket's requests over HTTP, for a human who is not local.
  if (r.collection == "admin") {
    if (opts_.admin_token_hash.empty()) return failure(statusError(404, "no such route"));
    if (req.method != "POST") return failure(statusError(405, "method not allowed"));
    if (key.empty() || !keys::equal(keys::hashApiKey(key), opts_.admin_token_hash)) {
      log::warn("market_admin_token_refused", "body_bytes=" + std::to_string(req.body.size()));
      return failure(statusError(401, "admin token refused"));
    }
    agent_id = "admin";
    std::string out = adminExecute(m, req.body);
    const auto parsed = json::parse(out, nullptr, false);
    const int status = parsed.is_object() ? parsed.value("status", 500) : 500;
    return {status, std::move(out), {{"X-Corral-Test-Mode", "ledger provider: no real money moves"}}};
  }
  if (key.empty()) return failure(statusError(401, "missing bearer API key"));
  auto found = m.agentByApiKey(key);
  if (!found) return failure(found.error());
  if (!*found) return failure(statusError(401, "unknown API key"));
  const Agent me = **found;
  agent_id = me.id;
  if (auto limited = m.rateLimit(me.id, opts_.rate_per_minute); !limited) return failure(limited.error());

  const bool get = req.method == "GET";
  const bool post = req.method == "POST";
  if (r.collection == "me" && get) return answer(200, {{"agent", agentView(me)}});
  if (r.collection == "appeals" && post) {
    if (auto ok = request::parseEmpty(req.body); !ok) return failure(ok.error());
    if (auto ok = m.appeal(me); !ok) return failure(ok.error());
    return answer(201, {{"appeal", "open"}});
  }
  if (r.collection != "tasks") return failure(statusError(405, "method not allowed"));
  if (r.id.empty()) {
    if (get) {
      auto list = m.tasksFor(me);
      if (!list) return failure(list.error());
      json arr = json::array();
      for (const Task& t : *list) arr.push_back(taskView(t, me));
      return answer(200, {{"tasks", arr}});
    }
    if (post) {
      auto nt = request::parsePost(req.body);
      if (!nt) return failure(nt.error());
      auto t = m.post(me, *nt);
      if (!t) return failure(t.error());
      task_id = t->id;
      return answer(201, {{"task", taskView(*t, me)}});
    }
    return failure(statusError(405, "method not allowed"));
  }
  if (r.action.empty()) {
    if (!get) return failure(statusError(405, "method not allowed"));
    auto t = m.task(r.id);
    if (!t) return failure(t.error());
    // A buyer sees only its own tasks; sellers and judges what is open to them or theirs.
    const bool visible = me.id == t->buyer || me.id == t->seller || me.id == t->judge ||
                         (me.role == Role::kSeller && t->state == "open") ||
                         (me.role == Role::kJudge && t->state == "submitted");
    if (!visible) return failure(statusError(404, "no such task"));
    return answer(200, {{"task", taskView(*t, me)}});
  }
  if (!post) return failure(statusError(405, "method not allowed"));
  Result<void> done;
  if (r.action == "claim" || r.action == "review") {
    auto k = request::parseRunnerKey(req.body);
    if (!k) return failure(k.error());
    done = r.action == "claim" ? m.claim(me, r.id, *k) : m.claimReview(me, r.id, *k);
  } else if (r.action == "key" || r.action == "judge-key") {
    auto w = request::parseWrap(req.body);
    if (!w) return failure(w.error());
    done = r.action == "key" ? m.releaseKey(me, r.id, *w) : m.releaseJudgeKey(me, r.id, *w);
  } else if (r.action == "result") {
    auto s = request::parseSubmit(req.body);
    if (!s) return failure(s.error());
    done = m.submit(me, r.id, s->result_ct, s->result_key_wrap);
  } else {
    auto code = request::parseVerdict(req.body);
    if (!code) return failure(code.error());
    done = m.verdict(me, r.id, *code);
  }
  if (!done) return failure(done.error());
  auto t = m.task(r.id);
  if (!t) return failure(t.error());
  return answer(200, {{"task", taskView(*t, me)}});
}

}  // namespace corral::market
