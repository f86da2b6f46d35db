// SPDX-License-Identifier: Apache-2.0
// `corral session create|exec|ls|show|rm`: options into API requests, answers onto the terminal.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "audit/base64.h"
#include "cli/daemon.h"
#include "cli/daemon_args.h"
#include "cli/option_echo.h"
#include "daemon/api_client.h"

namespace corral::cli {
namespace {

constexpr int kExitCorral = 125;
using daemon::Json;

constexpr char kUsage[] =
    "usage: corral session <command>\n"
    "  create [--name N] [--memory S] [--pids N] [--cpu-time D] [--file-size S] [--open-files N]\n"
    "         [--tmp-size S] [--workspace-size S] [--env K=V]... [--allow-weaker LIMIT]... [--json]\n"
    "  exec ID [--env K=V]... [--cwd REL] [--timeout D] [--detach] [--json] -- CMD [ARGS...]\n"
    "  ls [--json]    show ID [--json]    rm ID\n"
    "  The daemon's socket: $CORRAL_SOCKET, else the default (corral daemon --help).\n";

int failLine(const std::string& msg) {
  std::fprintf(stderr, "corral: session: %s\n", oneLine(msg).c_str());
  return kExitCorral;
}

// One request; prints the daemon's error and gives nullopt on anything but `want`.
std::optional<Json> call(const std::string& method, const std::string& target, const std::optional<Json>& body, int want) {
  auto client = daemon::ApiClient::connect();
  if (!client) {
    failLine(client.error().message());
    return std::nullopt;
  }
  auto r = client->request(method, target, body);
  if (!r) {
    failLine(r.error().message());
    return std::nullopt;
  }
  if (r->status != want) {
    failLine(daemon::apiErrorMessage(*r));
    return std::nullopt;
  }
  return r->body;
}

void printJson(const Json& j) { std::printf("%s\n", daemon::dumpJson(j).c_str()); }

int create(const std::vector<std::string>& args) {
  auto s = scanArgs(args,
                    {{"--name", true}, {"--memory", true}, {"--pids", true}, {"--cpu-time", true}, {"--file-size", true},
                     {"--open-files", true}, {"--tmp-size", true}, {"--workspace-size", true}, {"--env", true, true},
                     {"--allow-weaker", true, true}, {"--json", false}},
                    0);
  if (!s) return failLine("create: " + s.error().message());
  if (!s->rest.empty()) return failLine("create: takes no arguments");
  Json body = Json::object();
  if (s->has("--name")) body["name"] = s->get("--name");
  Json limits = Json::object();
  for (auto [opt, key] : {std::pair{"--memory", "memory"}, {"--cpu-time", "cpu_time"}, {"--file-size", "file_size"},
                          {"--tmp-size", "tmp_size"}, {"--workspace-size", "workspace_size"}})
    if (s->has(opt)) limits[key] = s->get(opt);
  for (auto [opt, key] : {std::pair{"--pids", "pids"}, {"--open-files", "open_files"}}) {
    if (!s->has(opt)) continue;
    const std::string v = s->get(opt);
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || v[0] == '-') return failLine(std::string("create: ") + opt + ": not a count");
    limits[key] = n;
  }
  if (s->has("--allow-weaker")) limits["allow_weaker"] = s->all("--allow-weaker");
  if (!limits.empty()) body["limits"] = limits;
  if (s->has("--env")) body["env"] = s->all("--env");
  auto r = call("POST", "/v1/sessions", body, 201);
  if (!r) return kExitCorral;
  if (s->has("--json")) printJson(*r);
  else std::printf("%s\n", (*r)["id"].get<std::string>().c_str());
  return 0;
}

int exec(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {{"--env", true, true}, {"--cwd", true}, {"--timeout", true}, {"--detach", false}, {"--json", false}}, 1);
  if (!s) return failLine("exec: " + s.error().message());
  if (s->positional.size() != 1 || s->rest.empty()) return failLine("exec: usage: corral session exec ID [options] -- CMD [ARGS...]");
  const std::string id = s->positional[0];
  Json body = {{"argv", s->rest}};
  if (s->has("--env")) body["env"] = s->all("--env");
  if (s->has("--cwd")) body["cwd"] = s->get("--cwd");
  if (s->has("--timeout")) body["timeout"] = s->get("--timeout");
  auto started = call("POST", "/v1/sessions/" + id + "/commands", body, 201);
  if (!started) return kExitCorral;
  const int64_t n = (*started)["id"].get<int64_t>();
  if (s->has("--detach")) {
    if (s->has("--json")) printJson(*started);
    else std::printf("%lld\n", static_cast<long long>(n));
    return 0;
  }
  auto client = daemon::ApiClient::connect();
  if (!client) return failLine(client.error().message());
  int exit_code = kExitCorral;
  std::optional<Json> report;
  std::string error;
  auto status = client->stream("/v1/sessions/" + id + "/commands/" + std::to_string(n) + "/output", [&](const Json& line) {
    if (line.contains("stream") && line.contains("data") && line["data"].is_string()) {
      auto bytes = audit::base64DecodeStrict(line["data"].get<std::string>());
      if (!bytes) return false;
      const int fd = line["stream"] == "stderr" ? 2 : 1;
      for (size_t off = 0; off < bytes->size();) {
        const ssize_t w = ::write(fd, bytes->data() + off, bytes->size() - off);
        if (w <= 0) break;
        off += static_cast<size_t>(w);
      }
      return true;
    }
    if (line.contains("exit") && line["exit"].is_object()) {
      report = line["exit"];
      if ((*report).contains("exit_code") && (*report)["exit_code"].is_number_integer()) exit_code = (*report)["exit_code"].get<int>();
      if ((*report).contains("error") && (*report)["error"].is_string()) error = (*report)["error"].get<std::string>();
      return false;
    }
    if (line.contains("lost")) error = "session " + id + " was lost while the command ran";
    else if (line.contains("error") && line["error"].is_object()) error = line["error"].value("message", "stream refused");
    return false;
  });
  std::fflush(stdout);
  if (!status) return failLine(status.error().message());
  if (!report) return failLine(error.empty() ? "the output stream ended without a status" : error);
  if (!error.empty()) std::fprintf(stderr, "corral: %s\n", oneLine(error).c_str());
  if (s->has("--json")) std::fprintf(stderr, "%s\n", daemon::dumpJson(*report).c_str());
  return exit_code;
}

int list(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {{"--json", false}}, 0);
  if (!s || !s->rest.empty()) return failLine("ls: takes only --json");
  auto r = call("GET", "/v1/sessions", std::nullopt, 200);
  if (!r) return kExitCorral;
  if (s->has("--json")) {
    printJson(*r);
    return 0;
  }
  std::printf("%-16s  %-10s  %s\n", "ID", "STATE", "NAME");
  for (const Json& x : (*r)["sessions"])
    std::printf("%-16s  %-10s  %s\n", x["id"].get<std::string>().c_str(), x["state"].get<std::string>().c_str(),
                oneLine(x["name"].get<std::string>()).c_str());
  return 0;
}

int oneSession(const std::vector<std::string>& args, const char* what, const std::string& method) {
  auto s = scanArgs(args, {{"--json", false}}, 1);
  if (!s || s->positional.size() != 1 || !s->rest.empty()) return failLine(std::string(what) + ": usage: corral session " + what + " ID");
  auto r = call(method, "/v1/sessions/" + s->positional[0], std::nullopt, 200);
  if (!r) return kExitCorral;
  if (method == "DELETE" && !s->has("--json")) std::printf("%s\n", s->positional[0].c_str());
  else printJson(*r);
  return 0;
}

}  // namespace

int sessionMain(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitCorral : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "create") return create(rest);
  if (args[0] == "exec") return exec(rest);
  if (args[0] == "ls") return list(rest);
  if (args[0] == "show") return oneSession(rest, "show", "GET");
  if (args[0] == "rm") return oneSession(rest, "rm", "DELETE");
  return failLine("unknown command " + optionName(args[0]) + " (try corral session --help)");
}

}  // namespace corral::cli
