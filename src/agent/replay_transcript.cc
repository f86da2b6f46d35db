// SPDX-License-Identifier: Apache-2.0
// Strict parser for replay transcripts.
#include "agent/replay_transcript.h"

#include <initializer_list>

#include "agent/wire_json.h"

namespace corral::agent {
namespace {

using nlohmann::json;
constexpr std::string_view kWhat = "replay";

Error bad(const std::string& path, std::string_view rule) {
  return wire::malformed(kWhat, path + ": " + std::string(rule));
}

// Unknown fields are refused so a typo ("tool_call") fails loudly instead of replaying a
// reply without the calls the test author meant.
Result<void> onlyKnownFields(const json& obj, const std::string& path, std::initializer_list<std::string_view> known) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || it.key() == k;
    // The key is not echoed: it is transcript text, and a field path is enough to find it.
    if (!ok) return bad(path, "unknown field");
  }
  return {};
}

Result<ToolCall> parseCall(const json& c, const std::string& path, size_t reply, size_t index) {
  if (!c.is_object()) return bad(path, "must be an object");
  RETURN_IF_ERROR(onlyKnownFields(c, path, {"name", "arguments", "arguments_raw"}));
  auto name = c.find("name");
  if (name == c.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
    return bad(path + ".name", "must be a non-empty string");
  auto args = c.find("arguments");
  auto raw = c.find("arguments_raw");
  if ((args == c.end()) == (raw == c.end()))
    return bad(path, "needs exactly one of \"arguments\" (object) and \"arguments_raw\" (string)");
  ToolCall call;
  call.id = "call_" + std::to_string(reply) + "_" + std::to_string(index);
  call.name = name->get<std::string>();
  if (args != c.end()) {
    if (!args->is_object()) return bad(path + ".arguments", "must be an object");
    call.arguments_json = wire::dumpJson(*args);
  } else {
    if (!raw->is_string()) return bad(path + ".arguments_raw", "must be a string");
    call.arguments_json = raw->get<std::string>();
  }
  return call;
}

Result<InjectedError> parseError(const json& e, const std::string& path) {
  if (!e.is_object()) return bad(path, "must be an object");
  RETURN_IF_ERROR(onlyKnownFields(e, path, {"kind"}));
  auto kind = e.find("kind");
  if (kind != e.end() && *kind == "transient") return InjectedError::kTransient;
  if (kind != e.end() && *kind == "malformed") return InjectedError::kMalformed;
  return bad(path + ".kind", "must be \"transient\" or \"malformed\"");
}

Result<ReplayReply> parseReply(const json& r, size_t index) {
  const std::string path = "replies[" + std::to_string(index) + "]";
  if (!r.is_object()) return bad(path, "must be an object");
  RETURN_IF_ERROR(onlyKnownFields(r, path, {"content", "tool_calls", "usage", "stop_reason", "error"}));
  ReplayReply out;
  out.wire = wire::dumpJson(r);
  out.reply.response_bytes = out.wire.size();
  if (auto e = r.find("error"); e != r.end()) {
    if (r.size() != 1) return bad(path, "an \"error\" reply has no other field");
    ASSIGN_OR_RETURN(out.error, parseError(*e, path + ".error"));
    return out;
  }
  if (auto content = r.find("content"); content != r.end()) {
    if (!content->is_string()) return bad(path + ".content", "must be a string");
    out.reply.content = content->get<std::string>();
  }
  if (auto calls = r.find("tool_calls"); calls != r.end()) {
    if (!calls->is_array()) return bad(path + ".tool_calls", "must be an array");
    for (size_t i = 0; i < calls->size(); ++i) {
      ASSIGN_OR_RETURN(ToolCall call, parseCall((*calls)[i], path + ".tool_calls[" + std::to_string(i) + "]", index, i));
      out.reply.tool_calls.push_back(std::move(call));
    }
  }
  if (auto usage = r.find("usage"); usage != r.end()) {
    if (!usage->is_object()) return bad(path + ".usage", "must be an object");
    RETURN_IF_ERROR(onlyKnownFields(*usage, path + ".usage", {"input_tokens", "output_tokens"}));
    ASSIGN_OR_RETURN(out.reply.usage.input_tokens, wire::optionalCount(*usage, "input_tokens", kWhat, path + ".usage"));
    ASSIGN_OR_RETURN(out.reply.usage.output_tokens, wire::optionalCount(*usage, "output_tokens", kWhat, path + ".usage"));
  }
  if (auto stop = r.find("stop_reason"); stop != r.end()) {
    if (!stop->is_string()) return bad(path + ".stop_reason", "must be a string");
    out.reply.stop_reason = stop->get<std::string>();
  } else {
    out.reply.stop_reason = out.reply.tool_calls.empty() ? "stop" : "tool_calls";
  }
  return out;
}

}  // namespace

Result<std::vector<ReplayReply>> parseReplayTranscript(std::string_view bytes) {
  if (bytes.size() > kMaxTranscriptBytes)
    return wire::malformed(kWhat, "transcript larger than " + std::to_string(kMaxTranscriptBytes) + " bytes");
  ASSIGN_OR_RETURN(json doc, wire::parseJson(bytes, kWhat, /*strict=*/true));
  if (!doc.is_object()) return bad("transcript", "must be an object");
  RETURN_IF_ERROR(onlyKnownFields(doc, "transcript", {"version", "replies"}));
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer() || *version != 1)
    return bad("version", "must be 1");
  auto replies = doc.find("replies");
  if (replies == doc.end() || !replies->is_array()) return bad("replies", "must be an array");
  if (replies->empty()) return bad("replies", "must not be empty");
  std::vector<ReplayReply> out;
  out.reserve(replies->size());
  for (size_t i = 0; i < replies->size(); ++i) {
    ASSIGN_OR_RETURN(ReplayReply r, parseReply((*replies)[i], i));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace corral::agent
