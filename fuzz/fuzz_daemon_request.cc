// SPDX-License-Identifier: Apache-2.0
// Fuzzes what the daemon does with a request's bytes before any handler acts: Beast's parser
// with the server's limits (kMaxHeaderBytes, kMaxBodyBytes), the target's split into route
// segments (daemon::splitTarget), and every JSON body parser of the routes: session create
// (parseSessionSpec), command start (parseCommandSpec), credential add and rotate
// (parseAddCredential, parseRotateCredential), and the env lists of recover (envPairs).
// Input: an HTTP/1.1 request as a client would send it.
// Properties: no crash; an accepted target has only non-empty segments without '/' or NUL, a
// '%' survives only decoded in a file's path, and re-encoding the segments parses back to
// them; a parsed session spec re-serialised parses back to the same document, and without env
// holds no env; a parsed command has a non-empty argv and a cwd beneath /workspace with
// no '.' or '..'; every error is one line without control bytes, and a credential's value
// (replaced by a sentinel) appears in no error of either credential parser.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "daemon/credential_request.h"
#include "daemon/request_target.h"
#include "daemon/server.h"
#include "daemon/session_spec.h"

namespace corral::fuzz {
namespace {

using daemon::Json;
namespace http = boost::beast::http;
constexpr char kSentinel[] = "corral-sentinel-7f3a-value";

std::string hexEscape(std::string_view part) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : part) {
    const auto u = static_cast<unsigned char>(c);
    if (u == '%' || u == '/' || u == '?' || u == '#' || u < 0x21 || u >= 0x7f) {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void checkTarget(std::string_view target) {
  bool ok = false;
  const std::vector<std::string> segs = daemon::splitTarget(target, &ok);
  const std::string shown(target.substr(0, 300));
  if (!ok) return;
  PROPERTY(!target.empty() && target[0] == '/', shown);
  const bool file_path = segs.size() >= 4 && segs[0] == "v1" && segs[1] == "sessions" && (segs[3] == "files" || segs[3] == "stat");
  std::string rebuilt;
  for (size_t i = 0; i < segs.size(); ++i) {
    PROPERTY(!segs[i].empty(), shown);
    PROPERTY(segs[i].find('/') == std::string::npos && segs[i].find('\0') == std::string::npos, shown);
    if (!(file_path && i >= 4)) PROPERTY(segs[i].find('%') == std::string::npos, shown);
    rebuilt += "/" + (file_path && i >= 4 ? hexEscape(segs[i]) : segs[i]);
  }
  if (rebuilt.empty()) rebuilt = "/";
  bool again_ok = false;
  const std::vector<std::string> again = daemon::splitTarget(rebuilt, &again_ok);
  PROPERTY(again_ok && again == segs, shown + " -> " + rebuilt);
}

// The value of a credential body replaced by the sentinel (kept long enough and printable, or
// given a control byte, or too long, by the input's own shape): no error may show it.
void checkCredentialSecrecy(const Json& body) {
  if (!body.is_object() || !body.contains("value")) return;
  for (const std::string& value : {std::string(kSentinel), std::string(kSentinel) + "\n", std::string(kSentinel) + std::string(5000, 'x')}) {
    Json b = body;
    b["value"] = value;
    auto add = daemon::parseAddCredential(b);
    PROPERTY_ONE_LINE_ERROR(add);
    if (!add) PROPERTY(add.error().message().find("sentinel") == std::string::npos, add.error().message());
    if (add) PROPERTY(add->value.revealForInjection() == value && add->value.size() <= 4096, value.substr(0, 40));
    Json r = {{"value", value}};
    auto rot = daemon::parseRotateCredential(r);
    PROPERTY_ONE_LINE_ERROR(rot);
    if (!rot) PROPERTY(rot.error().message().find("sentinel") == std::string::npos, rot.error().message());
  }
}

void checkBody(const Json& body, const std::string& shown) {
  auto spec = daemon::parseSessionSpec(body);
  PROPERTY_ONE_LINE_ERROR(spec);
  if (spec) {
    const Json full = daemon::sessionSpecJson(*spec, /*with_env=*/true);
    auto again = daemon::parseSessionSpec(full);
    PROPERTY(again.ok(), shown + " | re-parse: " + (again ? "" : again.error().message()));
    PROPERTY(daemon::sessionSpecJson(*again, true) == full, shown + " | " + full.dump());
    PROPERTY(!daemon::sessionSpecJson(*spec, /*with_env=*/false).contains("env"), shown);
  }
  auto cmd = daemon::parseCommandSpec(body);
  PROPERTY_ONE_LINE_ERROR(cmd);
  if (cmd) {
    PROPERTY(!cmd->argv.empty(), shown);
    PROPERTY(cmd->cwd == "/workspace" || cmd->cwd.rfind("/workspace/", 0) == 0, shown + " | cwd " + cmd->cwd);
    for (std::string_view part : refSplit(std::string_view(cmd->cwd).substr(1)))
      PROPERTY(part != "." && part != ".." && !part.empty(), shown + " | cwd " + cmd->cwd);
    PROPERTY(!cmd->timeout || cmd->timeout->count() > 0, shown);
  }
  if (body.is_object() && body.contains("env") && body["env"].is_array()) {
    std::vector<std::string> list;
    for (const Json& e : body["env"])
      if (e.is_string()) list.push_back(e.get<std::string>());
    auto pairs = daemon::envPairs(list, "body.env");
    PROPERTY_ONE_LINE_ERROR(pairs);
    if (pairs) PROPERTY(daemon::envStrings(*pairs) == list, shown);
  }
  auto add = daemon::parseAddCredential(body);
  PROPERTY_ONE_LINE_ERROR(add);
  auto rot = daemon::parseRotateCredential(body);
  PROPERTY_ONE_LINE_ERROR(rot);
  checkCredentialSecrecy(body);
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral;
  using namespace corral::fuzz;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // The server's parser and limits: a head over kMaxHeaderBytes or a body over kMaxBodyBytes
  // is refused before anything is routed.
  http::request_parser<http::string_body> parser;
  parser.header_limit(daemon::kMaxHeaderBytes);
  parser.body_limit(daemon::kMaxBodyBytes);
  parser.eager(true);
  boost::beast::error_code ec;
  size_t used = 0;
  while (used < input.size() && !parser.is_done()) {
    const size_t n = parser.put(boost::asio::buffer(input.data() + used, input.size() - used), ec);
    if (ec || n == 0) break;
    used += n;
  }
  if (!parser.is_header_done()) {
    // The head alone, when the request is not whole: the target is still the router's input.
    const size_t line_end = input.find("\r\n");
    const std::string_view line = input.substr(0, line_end);
    const size_t a = line.find(' '), b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    if (b != std::string_view::npos) checkTarget(line.substr(a + 1, b - a - 1));
    return 0;
  }
  const auto& msg = parser.get();
  checkTarget(std::string_view(msg.target().data(), msg.target().size()));
  if (!parser.is_done() || ec) return 0;
  PROPERTY(msg.body().size() <= daemon::kMaxBodyBytes, std::to_string(msg.body().size()));
  if (msg.body().empty()) return 0;
  auto body = daemon::parseJson(msg.body());
  PROPERTY_ONE_LINE_ERROR(body);
  if (!body) return 0;
  checkBody(*body, std::string(msg.body().substr(0, 300)));
  return 0;
}
