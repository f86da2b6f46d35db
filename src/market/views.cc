// SPDX-License-Identifier: Apache-2.0
// Task, agent and reason-code JSON for API responses.
#include "market/views.h"

namespace corral::market {
namespace {

void putIf(nlohmann::json& j, const char* k, const std::string& v) {
  if (!v.empty()) j[k] = v;
}

}  // namespace

nlohmann::json taskView(const Task& t, const Agent& viewer) {
  nlohmann::json j = {{"id", t.id},           {"title", t.title},       {"category", t.category}, {"model", t.model},
                      {"max_price", t.max_price}, {"deadline", t.deadline}, {"state", t.state}};
  if (!t.reason.empty()) {
    j["verdict"] = t.verdict;
    j["reason"] = t.reason;
    for (const ReasonCode& c : reasonCodes())
      if (t.reason == c.code) j["reason_text"] = c.text;
  }
  if (viewer.id == t.buyer) {
    putIf(j, "outcome", t.outcome);
    putIf(j, "seller", t.seller);
    putIf(j, "judge", t.judge);
    putIf(j, "runner_key", t.runner_key);
    putIf(j, "judge_key", t.judge_key);
    putIf(j, "body_ct", t.body_ct);
    putIf(j, "result_ct", t.result_ct);
    putIf(j, "result_key_wrap", t.result_key_wrap);
    j["key_released"] = !t.key_wrap.empty();
    j["judge_key_released"] = !t.judge_wrap.empty();
    j["price"] = t.price;
    j["fee"] = t.fee;
  } else if (!t.seller.empty() && viewer.id == t.seller && t.state == "claimed") {
    putIf(j, "body_ct", t.body_ct);
    putIf(j, "key_wrap", t.key_wrap);
    putIf(j, "buyer_key", t.buyer_key);
    j["claim_deadline"] = t.claim_deadline;
  } else if (!t.judge.empty() && viewer.id == t.judge && t.state == "reviewing") {
    putIf(j, "body_ct", t.body_ct);
    putIf(j, "result_ct", t.result_ct);
    putIf(j, "judge_wrap", t.judge_wrap);
  }
  return j;
}

nlohmann::json agentView(const Agent& a) {
  return {{"id", a.id},           {"role", roleName(a.role)}, {"name", a.name},         {"public_key", a.public_key},
          {"spend_cap", a.spend_cap}, {"reserved", a.reserved}, {"spent", a.spent},     {"strikes", a.strikes},
          {"suspended", a.suspended}, {"approve_each", a.approve_each}};
}

nlohmann::json reasonCodesView() {
  nlohmann::json arr = nlohmann::json::array();
  for (const ReasonCode& c : reasonCodes()) {
    const char* v = c.verdict == Verdict::kAccept ? "accept" : c.verdict == Verdict::kReject ? "reject" : "defer";
    arr.push_back({{"code", c.code}, {"verdict", v}, {"text", c.text}, {"infrastructure", c.infrastructure}});
  }
  return arr;
}

}  // namespace corral::market
