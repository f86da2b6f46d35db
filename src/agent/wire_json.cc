// SPDX-License-Identifier: Apache-2.0
// Non-throwing JSON parse and dump for the provider wire formats.
#include "agent/wire_json.h"

#include "audit/canonical_json.h"

namespace corral::agent::wire {

Error malformed(std::string_view what, std::string_view reason) {
  std::string s(what);
  s += ": ";
  s += reason;
  return Error(Errc::kInvalidArgument, std::move(s));
}

Result<nlohmann::json> parseJson(std::string_view text, std::string_view what, bool strict) {
  // A strict reader (the replay transcript, which a person writes) refuses duplicate keys.
  auto parsed = audit::parseJsonChecked(text, kMaxJsonDepth, strict);
  if (!parsed.ok()) return malformed(what, parsed.error().message());
  return parsed;
}

std::string dumpJson(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<uint64_t> optionalCount(const nlohmann::json& obj, const char* key, std::string_view what,
                               std::string_view path) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return uint64_t{0};
  if (!it->is_number_unsigned()) {
    // A negative number parses as number_integer; a float or a string is also refused.
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
      return malformed(what, std::string(path) + "." + key + " is not a non-negative integer");
  }
  // The endpoint is not trusted: an absurd count (2^53 and up cannot even be written to the
  // trace) would stop the record from being sealed. No reply of any model comes near 2^32.
  const uint64_t n = it->is_number_unsigned() ? it->get<uint64_t>() : static_cast<uint64_t>(it->get<int64_t>());
  if (n > kMaxTokenCount)
    return malformed(what, std::string(path) + "." + key + " is over " + std::to_string(kMaxTokenCount));
  return n;
}

Result<void> parseAssistantMessage(const nlohmann::json& message, const MessageShape& shape, std::string_view what,
                                   uint64_t first_call_number, ModelReply& reply) {
  using nlohmann::json;
  const std::string at(shape.path);
  if (auto content = message.find("content"); content != message.end() && !content->is_null()) {
    if (!content->is_string()) return malformed(what, at + ".content is not a string");
    reply.content = content->get<std::string>();
  }
  auto calls = message.find("tool_calls");
  if (calls == message.end() || calls->is_null()) return {};
  if (!calls->is_array()) return malformed(what, at + ".tool_calls is not an array");
  for (size_t i = 0; i < calls->size(); ++i) {
    const json& call = (*calls)[i];
    const std::string path = at + ".tool_calls[" + std::to_string(i) + "]";
    if (!call.is_object()) return malformed(what, path + " is not an object");
    auto fn = call.find("function");
    if (fn == call.end() || !fn->is_object()) return malformed(what, path + ".function missing");
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string() || name->get_ref<const std::string&>().empty())
      return malformed(what, path + ".function.name missing");
    ToolCall tc;
    tc.name = name->get<std::string>();
    auto args = fn->find("arguments");
    if (args == fn->end() || args->is_null()) {
      if (!shape.missing_args_empty) return malformed(what, path + ".function.arguments missing");
      tc.arguments_json = "{}";
    } else if (args->is_string()) {
      tc.arguments_json = args->get<std::string>();
    } else if (args->is_object()) {
      tc.arguments_json = dumpJson(*args);
    } else {
      return malformed(what, path + ".function.arguments is not a string or an object");
    }
    auto id = call.find("id");
    if (id != call.end() && id->is_string() && !id->get_ref<const std::string&>().empty())
      tc.id = id->get<std::string>();
    else
      tc.id = "call_" + std::to_string(first_call_number + i);
    reply.tool_calls.push_back(std::move(tc));
  }
  return {};
}

}  // namespace corral::agent::wire
