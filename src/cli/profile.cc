// SPDX-License-Identifier: Apache-2.0
// `corral profile add|ls|show|rm`: startup profiles in the daemon (docs/profile.schema.json).
#include <fcntl.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/read_fd.h"
#include "base/unique_fd.h"
#include "cli/daemon.h"
#include "cli/daemon_args.h"
#include "cli/daemon_call.h"
#include "cli/option_echo.h"

namespace corral::cli {
namespace {

using daemon::Json;

constexpr char kUsage[] =
    "usage: corral profile <command>\n"
    "  add FILE.json    a profile (docs/profile.schema.json); adding a name again makes its next version\n"
    "  ls [--json]      show NAME [--version N] [--json]      rm NAME (every version)\n"
    "  corral session create --profile NAME[@VERSION] [options] makes a session from one; its options\n"
    "  may only narrow the profile. Sessions keep the version they were made from.\n";

int fail(const std::string& msg) { return failLine("profile", msg); }

int add(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {{"--json", false}}, 1);
  if (!s || s->positional.size() != 1 || !s->rest.empty()) return fail("add: usage: corral profile add FILE.json");
  UniqueFd fd(::open(s->positional[0].c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return fail("add: " + sysError(s->positional[0]).message());
  auto text = readUpTo(fd.get(), size_t{256} * 1024, s->positional[0]);
  if (!text) return fail("add: " + text.error().message());
  auto doc = daemon::parseJson(*text);
  if (!doc) return fail("add: " + s->positional[0] + ": " + doc.error().message());
  auto r = apiCall("profile", "POST", "/v1/profiles", *doc, 201);
  if (!r) return kExitRefused;
  if (s->has("--json")) printJson(*r);
  else std::printf("%s version %lld\n", (*r)["name"].get<std::string>().c_str(), static_cast<long long>((*r)["version"].get<int64_t>()));
  return 0;
}

int list(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {{"--json", false}}, 0);
  if (!s || !s->rest.empty()) return fail("ls: takes only --json");
  auto r = apiCall("profile", "GET", "/v1/profiles", std::nullopt, 200);
  if (!r) return kExitRefused;
  if (s->has("--json")) {
    printJson(*r);
    return 0;
  }
  std::printf("%-24s  %-8s  %s\n", "NAME", "VERSION", "DESCRIPTION");
  for (const Json& p : (*r)["profiles"])
    std::printf("%-24s  %-8lld  %s\n", p["name"].get<std::string>().c_str(), static_cast<long long>(p["version"].get<int64_t>()),
                oneLine(p.value("description", std::string())).c_str());
  return 0;
}

int show(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {{"--json", false}, {"--version", true}}, 1);
  if (!s || s->positional.size() != 1 || !s->rest.empty()) return fail("show: usage: corral profile show NAME [--version N]");
  std::string target = "/v1/profiles/" + s->positional[0];
  if (s->has("--version")) target += "/versions/" + s->get("--version");
  auto r = apiCall("profile", "GET", target, std::nullopt, 200);
  if (!r) return kExitRefused;
  if (s->has("--json")) printJson(*r);
  else std::printf("%s\n", r->dump(2, ' ', false, Json::error_handler_t::replace).c_str());
  return 0;
}

int remove(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {{"--json", false}}, 1);
  if (!s || s->positional.size() != 1 || !s->rest.empty()) return fail("rm: usage: corral profile rm NAME");
  auto r = apiCall("profile", "DELETE", "/v1/profiles/" + s->positional[0], std::nullopt, 200);
  if (!r) return kExitRefused;
  if (s->has("--json")) printJson(*r);
  else std::printf("%s\n", s->positional[0].c_str());
  return 0;
}

}  // namespace

int profileMain(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitRefused : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "add") return add(rest);
  if (args[0] == "ls") return list(rest);
  if (args[0] == "show") return show(rest);
  if (args[0] == "rm") return remove(rest);
  return fail("unknown command " + optionName(args[0]) + " (try corral profile --help)");
}

}  // namespace corral::cli
