// SPDX-License-Identifier: Apache-2.0
// `corral credential add|rotate|ls|show|rm`: write-only records in the daemon. A value is read
// from a variable, a file or stdin, never from the command line (where ps and shell history
// would show it), and only metadata ever comes back.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "base/read_fd.h"
#include "base/secret.h"
#include "base/unique_fd.h"
#include "cli/daemon.h"
#include "cli/daemon_args.h"
#include "cli/daemon_call.h"
#include "cli/option_echo.h"

namespace corral::cli {
namespace {

using daemon::Json;

constexpr char kUsage[] =
    "usage: corral credential <command>\n"
    "  add NAME --host URL [--header 'Authorization: Bearer {}'] [--env VAR] (--from-env VAR | --from-file PATH | --stdin)\n"
    "      a write-only record: the value is sealed in the daemon's state directory; sessions\n"
    "      made with --credential NAME get a placeholder in $VAR (default: NAME in upper case)\n"
    "      and the egress proxy injects the header toward URL (http://127.0.0.1:3128/lease/NAME/...)\n"
    "  add NAME --ssh-key (--from-file PATH | --stdin)\n"
    "      an OpenSSH private key (unencrypted ssh-ed25519) sealed the same way; sessions made with\n"
    "      --ssh-key NAME get SSH_AUTH_SOCK, an agent that signs only for a tcp:// grant's sshd\n"
    "  rotate NAME (--from-env VAR | --from-file PATH | --stdin)\n"
    "      a new value for the record (checked as its kind); running sessions that lease it get it\n"
    "      before this returns, and sessions created afterwards lease it\n"
    "  ls [--json]    show NAME [--json]    rm NAME (refused while a running session leases it)\n";

constexpr size_t kMaxValueBytes = 4096;

int fail(const std::string& msg) { return failLine("credential", msg); }

// The value from exactly one source; one trailing newline (a file's, echo's) is not part of it
// (kept for a key file, whose text ends with one).
Result<Secret> readValue(const ScannedArgs& s, bool key_file = false) {
  const int sources = s.has("--from-env") + s.has("--from-file") + s.has("--stdin");
  if (sources != 1) return Error(Errc::kInvalidArgument, "exactly one of --from-env VAR, --from-file PATH, --stdin");
  std::string value;
  if (s.has("--from-env")) {
    const std::string var = s.get("--from-env");
    const char* v = std::getenv(var.c_str());
    if (!v || !*v) return Error(Errc::kInvalidArgument, "--from-env " + optionName(var) + ": the variable is unset or empty");
    value = v;
  } else {
    const bool from_stdin = s.has("--stdin");
    const std::string path = from_stdin ? "stdin" : s.get("--from-file");
    UniqueFd owned(from_stdin ? -1 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!from_stdin && !owned.valid()) return sysError("--from-file " + path);
    ASSIGN_OR_RETURN(value, readUpTo(from_stdin ? 0 : owned.get(), kMaxValueBytes + 2, path));
    if (value.size() > kMaxValueBytes + 1) return Error(Errc::kInvalidArgument, path + ": a value is at most 4096 bytes");
  }
  if (!key_file && !value.empty() && value.back() == '\n') value.pop_back();
  if (!key_file && !value.empty() && value.back() == '\r') value.pop_back();
  return Secret(std::move(value));
}

void wipeValue(Json& body) {
  auto& v = body["value"].get_ref<std::string&>();
  std::fill(v.begin(), v.end(), '\0');
}

constexpr OptionSpec kSourceOptions[] = {{"--from-env", true}, {"--from-file", true}, {"--stdin", false}, {"--json", false}};

std::vector<OptionSpec> sourceOptions() { return {std::begin(kSourceOptions), std::end(kSourceOptions)}; }

int printRecord(const Json& r, bool json) {
  if (json) {
    printJson(r);
    return 0;
  }
  if (r.value("kind", "") == "ssh-key") {
    std::printf("%s ssh-key %s\n", r["name"].get<std::string>().c_str(), r["ssh_fingerprint"].get<std::string>().c_str());
    return 0;
  }
  std::printf("%s %s %s\n", r["name"].get<std::string>().c_str(), r["host"].get<std::string>().c_str(),
              r["fingerprint"].get<std::string>().c_str());
  return 0;
}

int add(const std::vector<std::string>& args) {
  std::vector<OptionSpec> opts = sourceOptions();
  opts.insert(opts.end(), {{"--host", true}, {"--header", true}, {"--env", true}, {"--ssh-key", false}});
  auto s = scanArgs(args, opts, 1);
  if (!s) return fail("add: " + s.error().message());
  if (s->has("--ssh-key")) {
    if (s->positional.size() != 1 || !s->rest.empty() || s->has("--host") || s->has("--header") || s->has("--env") ||
        s->has("--from-env"))
      return fail("add: usage: corral credential add NAME --ssh-key (--from-file PATH | --stdin)");
    auto key = readValue(*s, /*key_file=*/true);
    if (!key) return fail("add: " + key.error().message());
    Json body = {{"name", s->positional[0]}, {"kind", "ssh-key"}, {"value", std::string(key->revealForInjection())}};
    auto r = apiCall("credential", "POST", "/v1/credentials", body, 201);
    wipeValue(body);
    if (!r) return kExitRefused;
    return printRecord(*r, s->has("--json"));
  }
  if (s->positional.size() != 1 || !s->rest.empty() || !s->has("--host"))
    return fail("add: usage: corral credential add NAME --host URL (--from-env VAR | --from-file PATH | --stdin)");
  auto value = readValue(*s);
  if (!value) return fail("add: " + value.error().message());
  Json body = {{"name", s->positional[0]}, {"host", s->get("--host")}, {"value", std::string(value->revealForInjection())}};
  if (s->has("--header")) body["header"] = s->get("--header");
  if (s->has("--env")) body["env"] = s->get("--env");
  auto r = apiCall("credential", "POST", "/v1/credentials", body, 201);
  wipeValue(body);
  if (!r) return kExitRefused;
  return printRecord(*r, s->has("--json"));
}

int rotate(const std::vector<std::string>& args) {
  auto s = scanArgs(args, sourceOptions(), 1);
  if (!s) return fail("rotate: " + s.error().message());
  if (s->positional.size() != 1 || !s->rest.empty())
    return fail("rotate: usage: corral credential rotate NAME (--from-env VAR | --from-file PATH | --stdin)");
  // A key file keeps its last newline; a header value loses it (the daemon checks the kind).
  auto value = readValue(*s, /*key_file=*/true);
  if (!value) return fail("rotate: " + value.error().message());
  if (value->revealForInjection().find("-----BEGIN OPENSSH PRIVATE KEY-----") != 0) {
    std::string v(value->revealForInjection());
    if (!v.empty() && v.back() == '\n') v.pop_back();
    if (!v.empty() && v.back() == '\r') v.pop_back();
    value = Secret(std::move(v));
  }
  Json body = {{"value", std::string(value->revealForInjection())}};
  auto r = apiCall("credential", "POST", "/v1/credentials/" + s->positional[0] + "/rotate", body, 200);
  wipeValue(body);
  if (!r) return kExitRefused;
  return printRecord(*r, s->has("--json"));
}

int list(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {{"--json", false}}, 0);
  if (!s || !s->rest.empty()) return fail("ls: takes only --json");
  auto r = apiCall("credential", "GET", "/v1/credentials", std::nullopt, 200);
  if (!r) return kExitRefused;
  if (s->has("--json")) {
    printJson(*r);
    return 0;
  }
  std::printf("%-20s  %-36s  %-6s  %-7s  %s\n", "NAME", "HOST", "USES", "LEASES", "FINGERPRINT");
  for (const Json& c : (*r)["credentials"]) {
    const bool ssh = c.value("kind", "") == "ssh-key";
    std::printf("%-20s  %-36s  %-6lld  %-7lld  %s\n", c["name"].get<std::string>().c_str(),
                ssh ? "(ssh-key)" : c["host"].get<std::string>().c_str(), static_cast<long long>(c["use_count"].get<int64_t>()),
                static_cast<long long>(c["active_leases"].get<int64_t>()),
                (ssh ? c["ssh_fingerprint"] : c["fingerprint"]).get<std::string>().c_str());
  }
  return 0;
}

int one(const std::vector<std::string>& args, const std::string& what, const std::string& method) {
  auto s = scanArgs(args, {{"--json", false}}, 1);
  if (!s || s->positional.size() != 1 || !s->rest.empty()) return fail(what + ": usage: corral credential " + what + " NAME");
  auto r = apiCall("credential", method, "/v1/credentials/" + s->positional[0], std::nullopt, 200);
  if (!r) return kExitRefused;
  if (method == "DELETE" && !s->has("--json")) std::printf("%s\n", s->positional[0].c_str());
  else printJson(*r);
  return 0;
}

}  // namespace

int credentialMain(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitRefused : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "add") return add(rest);
  if (args[0] == "rotate") return rotate(rest);
  if (args[0] == "ls") return list(rest);
  if (args[0] == "show") return one(rest, "show", "GET");
  if (args[0] == "rm") return one(rest, "rm", "DELETE");
  return fail("unknown command " + optionName(args[0]) + " (try corral credential --help)");
}

}  // namespace corral::cli
