// SPDX-License-Identifier: Apache-2.0
// Request body and target parsing: parse into a typed command or refuse with 400.
#include "market/request.h"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <set>
#include <vector>

namespace corral::market::request {
using nlohmann::json;

// A repeated key is refused: nlohmann would keep the last one silently, and two parsers
// could disagree on which counts.
Result<json> strictObject(std::string_view body, std::initializer_list<const char*> allowed) {
  bool duplicate = false;
  std::vector<std::set<std::string>> seen;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) seen.emplace_back();
    if (ev == json::parse_event_t::object_end && !seen.empty()) seen.pop_back();
    if (ev == json::parse_event_t::key && !seen.empty() && !seen.back().insert(parsed.get<std::string>()).second)
      duplicate = true;
    (void)depth;
    return true;
  };
  json j = json::parse(body.begin(), body.end(), cb, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return statusError(400, "body must be one JSON object");
  if (duplicate) return statusError(400, "duplicate field");
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (const char* a : allowed) known = known || k == a;
    if (!known) return statusError(400, "unknown field");  // the name could be anything: not echoed
  }
  return j;
}

Result<std::string> stringField(const json& j, const char* field, size_t min, size_t max) {
  auto it = j.find(field);
  if (it == j.end() || !it->is_string()) return statusError(400, std::string("field ") + field + " must be a string");
  const std::string& s = it->get_ref<const std::string&>();
  if (s.size() < min || s.size() > max) return statusError(400, std::string("field ") + field + " has a bad length");
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return statusError(400, std::string("field ") + field + " has a control byte");
  return s;
}

Result<int64_t> intField(const json& j, const char* field, int64_t min, int64_t max) {
  auto it = j.find(field);
  if (it == j.end() || !it->is_number_integer()) return statusError(400, std::string("field ") + field + " must be an integer");
  int64_t v = 0;
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) return statusError(400, std::string("field ") + field + " out of range");
    v = static_cast<int64_t>(u);
  } else {
    v = it->get<int64_t>();
  }
  if (v < min || v > max) return statusError(400, std::string("field ") + field + " out of range");
  return v;
}

namespace {
constexpr size_t kMaxCiphertext = size_t{700} * 1024;  // base64 of the body cap's worth
}  // namespace

Result<NewTask> parsePost(std::string_view body) {
  ASSIGN_OR_RETURN(json j, strictObject(body, {"title", "category", "model", "max_price", "deadline", "body_ct"}));
  NewTask t;
  ASSIGN_OR_RETURN(t.title, stringField(j, "title", 1, 200));
  if (j.contains("category")) {
    ASSIGN_OR_RETURN(t.category, stringField(j, "category", 0, 64));
  }
  if (j.contains("model")) {
    ASSIGN_OR_RETURN(t.model, stringField(j, "model", 0, 128));
  }
  ASSIGN_OR_RETURN(t.max_price, intField(j, "max_price", 1, 100'000'000));
  ASSIGN_OR_RETURN(t.deadline, intField(j, "deadline", 1, 32'503'680'000));
  ASSIGN_OR_RETURN(t.body_ct, stringField(j, "body_ct", 4, kMaxCiphertext));
  return t;
}

Result<std::string> parseRunnerKey(std::string_view body) {
  ASSIGN_OR_RETURN(json j, strictObject(body, {"runner_key"}));
  return stringField(j, "runner_key", 1, 128);
}

Result<std::string> parseWrap(std::string_view body) {
  ASSIGN_OR_RETURN(json j, strictObject(body, {"wrap"}));
  return stringField(j, "wrap", 1, 512);
}

Result<Submission> parseSubmit(std::string_view body) {
  ASSIGN_OR_RETURN(json j, strictObject(body, {"result_ct", "result_key_wrap"}));
  Submission s;
  ASSIGN_OR_RETURN(s.result_ct, stringField(j, "result_ct", 4, kMaxCiphertext));
  ASSIGN_OR_RETURN(s.result_key_wrap, stringField(j, "result_key_wrap", 1, 512));
  return s;
}

Result<std::string> parseVerdict(std::string_view body) {
  // No free-text field exists: a judge cannot send the model's words even by mistake.
  ASSIGN_OR_RETURN(json j, strictObject(body, {"reason"}));
  return stringField(j, "reason", 1, 64);
}

Result<void> parseEmpty(std::string_view body) {
  if (body.empty()) return {};
  RETURN_IF_ERROR(strictObject(body, {}));
  return {};
}

bool validId(std::string_view id, char prefix) {
  if (id.size() != 18 || id[0] != prefix || id[1] != '_') return false;
  for (char c : id.substr(2))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

Result<Route> parseTarget(std::string_view target) {
  if (target.find('?') != std::string_view::npos) target = target.substr(0, target.find('?'));
  if (target.substr(0, 4) != "/v1/") return statusError(404, "no such route");
  std::vector<std::string_view> parts;
  std::string_view rest = target.substr(4);
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    parts.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
    if (rest.empty()) return statusError(404, "no such route");
  }
  if (parts.empty() || parts.size() > 3) return statusError(404, "no such route");
  Route r;
  r.collection = std::string(parts[0]);
  const bool known = r.collection == "tasks" || r.collection == "me" || r.collection == "appeals" ||
                     r.collection == "reason-codes" || r.collection == "health" || r.collection == "admin";
  if (!known) return statusError(404, "no such route");
  if (parts.size() >= 2) {
    if (r.collection != "tasks" || !validId(parts[1], 't')) return statusError(404, "no such route");
    r.id = std::string(parts[1]);
  }
  if (parts.size() == 3) {
    r.action = std::string(parts[2]);
    const bool action = r.action == "claim" || r.action == "key" || r.action == "result" || r.action == "review" ||
                        r.action == "judge-key" || r.action == "verdict";
    if (!action) return statusError(404, "no such route");
  }
  return r;
}

}  // namespace corral::market::request
