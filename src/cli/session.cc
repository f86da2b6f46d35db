// SPDX-License-Identifier: Apache-2.0
// `corral session create|exec|attach|ls|show|rm|cp|pause|resume`: options into API requests, answers onto
// the terminal.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "audit/base64.h"
#include "base/unique_fd.h"
#include "cli/daemon.h"
#include "cli/daemon_args.h"
#include "cli/daemon_call.h"
#include "cli/option_echo.h"
#include "cli/session_terminal.h"
#include "daemon/api_client.h"

namespace corral::cli {
namespace {

constexpr int kExitCorral = kExitRefused;
// A forwarded stdin with nothing to send this long ends its request and starts another: well
// under the daemon's 60 s read timeout, so a producer's pause is not an error.
constexpr int kStdinIdleMs = 20'000;
using daemon::Json;

constexpr char kUsage[] =
    "usage: corral session <command>\n"
    "  create [--profile NAME[@VERSION]] [--name N] [--memory S] [--pids N] [--cpu-time D] [--file-size S] [--open-files N]\n"
    "         [--tmp-size S] [--workspace-size S] [--workspace DIR] [--env K=V]... [--allow-weaker LIMIT]...\n"
    "         [--ttl D] [--ro-bind HOST[:SANDBOX]]... [--net none|proxy] [--allow GRANT]...\n"
    "         [--allow-internal CIDR]... [--credential NAME]... [--ssh-key NAME] [--json]\n"
    "         [--backend namespace|vm [--vm-memory S] [--vm-cpus N] [--allow-weaker kvm]]\n"
    "         (--backend vm: a microVM holds the session, docs/daemon.md; --allow-weaker kvm: TCG where KVM is unusable;\n"
    "          --credential: a record of `corral credential add`, leased through the session's proxy;\n"
    "          --ssh-key: an ssh-key record (`credential add NAME --ssh-key`): SSH_AUTH_SOCK inside, an\n"
    "          agent that signs only logins to the sshd behind a tcp:// grant;\n"
    "          with --profile every other option may only narrow the profile: corral profile --help)\n"
    "  exec ID [--env K=V]... [--cwd REL] [--timeout D] [--tty] [--detach] [--json] -- CMD [ARGS...]\n"
    "         (stdin, unless it is a terminal or /dev/null, is the command's; --tty: a terminal in the\n"
    "          sandbox instead, this one raw meanwhile; --detach: no stdin, prints the command's number)\n"
    "  attach ID [--env K=V]... [--cwd REL] [-- CMD [ARGS...]]  an interactive shell (bash, else sh) on a\n"
    "         terminal in the sandbox; its exit status is attach's\n"
    "  attach ID --command N  re-attach to tty command N after its terminal connection closed (it goes\n"
    "         on, detached, with the last 64 KiB of its output kept: show ID --json lists \"terminals\")\n"
    "  ls [--json]    show ID [--json]    rm ID [--keep-workspace]\n"
    "  cp ID:PATH LOCAL    cp LOCAL ID:PATH    (PATH relative to /workspace)\n"
    "  pause ID    resume ID    (the cgroup freezer: corral doctor says whether this host has one)\n"
    "  recover ID [--env K=V]...  a new sandbox on a lost session's workspace, with its stored spec\n"
    "             (env values are never stored: give them again)\n"
    "  The daemon's socket: $CORRAL_SOCKET, else the default (corral daemon --help).\n";

int failLine(const std::string& msg) { return cli::failLine("session", msg); }

std::optional<Json> call(const std::string& method, const std::string& target, const std::optional<Json>& body, int want) {
  return apiCall("session", method, target, body, want);
}

int create(const std::vector<std::string>& args) {
  auto s = scanArgs(args,
                    {{"--name", true}, {"--memory", true}, {"--pids", true}, {"--cpu-time", true}, {"--file-size", true},
                     {"--open-files", true}, {"--tmp-size", true}, {"--workspace-size", true}, {"--env", true, true},
                     {"--allow-weaker", true, true}, {"--workspace", true}, {"--ttl", true}, {"--json", false},
                     {"--net", true}, {"--allow", true, true}, {"--allow-internal", true, true}, {"--credential", true, true},
                     {"--ssh-key", true}, {"--ro-bind", true, true}, {"--profile", true}, {"--backend", true},
                     {"--vm-memory", true}, {"--vm-cpus", true}},
                    0);
  if (!s) return failLine("create: " + s.error().message());
  if (!s->rest.empty()) return failLine("create: takes no arguments");
  Json body = Json::object();
  if (s->has("--profile")) {
    // NAME or NAME@VERSION; every other option given narrows it (the daemon checks).
    const std::string p = s->get("--profile");
    const size_t at = p.find('@');
    body["profile"] = p.substr(0, at);
    if (at != std::string::npos) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(p.c_str() + at + 1, &end, 10);
      if (at + 1 == p.size() || *end != '\0' || v == 0) return failLine("create: --profile NAME@VERSION: VERSION is a number from 1");
      body["profile_version"] = v;
    }
  }
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
  // "kvm" is the VM's (TCG emulation accepted), every other name a limit's.
  Json vm = Json::object();
  if (s->has("--allow-weaker")) {
    Json weaker = Json::array();
    for (const std::string& w : s->all("--allow-weaker"))
      if (w == "kvm") vm["allow_weaker"] = Json::array({"kvm"});
      else weaker.push_back(w);
    if (!weaker.empty()) limits["allow_weaker"] = weaker;
  }
  if (s->has("--vm-memory")) vm["memory"] = s->get("--vm-memory");
  if (s->has("--vm-cpus")) {
    const std::string v = s->get("--vm-cpus");
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || v[0] == '-') return failLine("create: --vm-cpus: not a count");
    vm["cpus"] = n;
  }
  if (s->has("--backend")) body["backend"] = s->get("--backend");
  if (!vm.empty()) {
    // With --profile the backend is the profile's (the daemon checks the narrowing).
    if (!s->has("--profile") && (!s->has("--backend") || s->get("--backend") != "vm"))
      return failLine("create: --vm-memory, --vm-cpus and --allow-weaker kvm need --backend vm");
    body["vm"] = vm;
  }
  if (!limits.empty()) body["limits"] = limits;
  if (s->has("--env")) body["env"] = s->all("--env");
  if (s->has("--ttl")) body["ttl"] = s->get("--ttl");
  if (s->has("--net")) body["net"] = s->get("--net");
  for (auto [opt, key] : {std::pair{"--allow", "allow"}, {"--allow-internal", "allow_internal"}, {"--credential", "credentials"}})
    if (s->has(opt)) body[key] = s->all(opt);
  if (s->has("--ssh-key")) body["ssh_key"] = s->get("--ssh-key");
  if (s->has("--ro-bind")) {
    // The host side resolved here, as exec does: the daemon opens it with its own rights.
    Json binds = Json::array();
    for (const std::string& b : s->all("--ro-bind")) {
      const size_t colon = b.find(':');
      const std::string host = b.substr(0, colon);
      char* real = ::realpath(host.c_str(), nullptr);
      if (!real) return failLine("create: --ro-bind " + host + ": " + std::strerror(errno));
      binds.push_back(std::string(real) + (colon == std::string::npos ? ":" + host : b.substr(colon)));
      std::free(real);
    }
    body["ro_binds"] = binds;
  }
  if (s->has("--workspace")) {
    // Resolved here, as exec does: the daemon then opens it refusing any symlink on the path.
    char* real = ::realpath(s->get("--workspace").c_str(), nullptr);
    if (!real) return failLine("create: --workspace " + s->get("--workspace") + ": " + std::strerror(errno));
    body["workspace"] = std::string(real);
    std::free(real);
  }
  auto r = call("POST", "/v1/sessions", body, 201);
  if (!r) return kExitCorral;
  if (s->has("--json")) printJson(*r);
  else std::printf("%s\n", (*r)["id"].get<std::string>().c_str());
  return 0;
}

// Whether exec hands its stdin to the command: not a terminal (that needs --tty), not
// /dev/null and not closed (nothing to send: the command gets /dev/null without a request).
bool forwardsStdin() {
  struct stat st, null_st;
  if (::isatty(0) || ::fstat(0, &st) != 0) return false;
  return !(S_ISCHR(st.st_mode) && ::stat("/dev/null", &null_st) == 0 && st.st_rdev == null_st.st_rdev);
}

int exec(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {{"--env", true, true}, {"--cwd", true}, {"--timeout", true}, {"--detach", false}, {"--json", false}, {"--tty", false}}, 1);
  if (!s) return failLine("exec: " + s.error().message());
  if (s->positional.size() != 1 || s->rest.empty()) return failLine("exec: usage: corral session exec ID [options] -- CMD [ARGS...]");
  const std::string id = s->positional[0];
  Json body = {{"argv", s->rest}};
  if (s->has("--env")) body["env"] = s->all("--env");
  if (s->has("--cwd")) body["cwd"] = s->get("--cwd");
  if (s->has("--timeout")) body["timeout"] = s->get("--timeout");
  if (s->has("--tty")) {
    if (s->has("--detach")) return failLine("exec: --tty and --detach exclude each other");
    return terminalExec(id, body, s->has("--json"));
  }
  const bool forward = !s->has("--detach") && forwardsStdin();
  if (forward) body["stdin"] = true;
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
  if (forward) {
    // Beside the output stream, on a connection of its own; detached: a command that exits
    // before its input ends leaves this thread blocked in read(), and the process exits anyway.
    std::thread([c = *client, target = "/v1/sessions/" + id + "/commands/" + std::to_string(n) + "/stdin"]() mutable {
      // A producer that pauses ends one request and starts the next (the pipe stays open
      // between them); a command that stopped reading (409) ends its stdin itself; otherwise
      // the input's end closes it (EOF).
      for (bool ended = false; !ended;) {
        auto r = c.postStream(target, 0, kStdinIdleMs, &ended);
        if (!r || r->status != 200) return;
      }
      (void)c.request("DELETE", target);
    }).detach();
  }
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

// A workspace path as URL segments: every byte but the unreserved ones %XX-escaped.
std::string encodedPath(const std::string& rel) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : rel) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') out.push_back(static_cast<char>(c));
    else out.append({'%', kHex[c >> 4], kHex[c & 15]});
  }
  return out;
}

std::string baseName(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// "ID:PATH" -> {ID, PATH relative to /workspace}; PATH may be given as /workspace/... too.
std::optional<std::pair<std::string, std::string>> remoteSpec(const std::string& arg) {
  const size_t colon = arg.find(':');
  if (colon == std::string::npos || colon == 0 || arg.find('/') < colon) return std::nullopt;
  std::string path = arg.substr(colon + 1);
  if (path.rfind("/workspace/", 0) == 0) path = path.substr(11);
  else if (path == "/workspace") path.clear();
  return std::pair{arg.substr(0, colon), path};  // a trailing '/' stays: "into that directory"
}

int copyOut(const std::string& id, std::string path, std::string local) {
  while (!path.empty() && path.back() == '/') path.pop_back();
  struct stat st;
  if (::stat(local.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) local += "/" + baseName(path);
  // Written beside its final name and renamed over it only when complete.
  const std::string tmp = local + ".corral-cp-" + std::to_string(::getpid());
  UniqueFd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!out.valid()) return failLine("cp: " + tmp + ": " + std::strerror(errno));
  auto client = daemon::ApiClient::connect();
  if (!client) {
    ::unlink(tmp.c_str());
    return failLine(client.error().message());
  }
  bool write_failed = false;
  auto r = client->download("/v1/sessions/" + id + "/files/" + encodedPath(path), [&](std::string_view bytes) {
    for (size_t off = 0; off < bytes.size();) {
      const ssize_t n = ::write(out.get(), bytes.data() + off, bytes.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        write_failed = true;
        return false;
      }
      off += static_cast<size_t>(n);
    }
    return true;
  });
  const bool ok = r && r->status == 200 && !write_failed && ::fsync(out.get()) == 0;
  if (!ok || ::rename(tmp.c_str(), local.c_str()) != 0) {
    ::unlink(tmp.c_str());
    if (!r) return failLine("cp: " + r.error().message());
    if (r->status != 200) return failLine("cp: " + daemon::apiErrorMessage(*r));
    return failLine("cp: " + local + ": " + std::strerror(errno));
  }
  return 0;
}

int copyIn(const std::string& local, const std::string& id, std::string path) {
  UniqueFd in(::open(local.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return failLine("cp: " + local + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) return failLine("cp: " + local + ": not a regular file");
  // Into a directory (named with a trailing '/', or one that exists there): under the local
  // file's own name, as cp does.
  const bool into_dir = path.empty() || path.back() == '/';
  while (!path.empty() && path.back() == '/') path.pop_back();
  auto there = into_dir ? std::nullopt : call("GET", "/v1/sessions/" + id + "/stat/" + encodedPath(path), std::nullopt, -1);
  if (into_dir || (there && there->contains("type") && (*there)["type"] == "directory"))
    path += (path.empty() ? "" : "/") + baseName(local);
  auto client = daemon::ApiClient::connect();
  if (!client) return failLine(client.error().message());
  auto r = client->upload("/v1/sessions/" + id + "/files/" + encodedPath(path), in.get(), static_cast<uint64_t>(st.st_size));
  if (!r) return failLine("cp: " + r.error().message());
  if (r->status != 201) return failLine("cp: " + daemon::apiErrorMessage(*r));
  return 0;
}

int copy(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {}, 2);
  if (!s || s->positional.size() != 2 || !s->rest.empty()) return failLine("cp: usage: corral session cp ID:PATH LOCAL | LOCAL ID:PATH");
  auto from = remoteSpec(s->positional[0]), to = remoteSpec(s->positional[1]);
  if (from && !to) return copyOut(from->first, from->second, s->positional[1]);
  if (to && !from) return copyIn(s->positional[0], to->first, to->second);
  return failLine("cp: exactly one of the two must be ID:PATH");
}

int pauseOrResume(const std::vector<std::string>& args, const std::string& what) {
  auto s = scanArgs(args, {{"--json", false}}, 1);
  if (!s || s->positional.size() != 1 || !s->rest.empty()) return failLine(what + ": usage: corral session " + what + " ID");
  auto r = call("POST", "/v1/sessions/" + s->positional[0] + "/" + what, std::nullopt, 200);
  if (!r) return kExitCorral;
  if (s->has("--json")) printJson(*r);
  else std::printf("%s %s\n", s->positional[0].c_str(), (*r)["state"].get<std::string>().c_str());
  return 0;
}

int recover(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {{"--json", false}, {"--env", true, true}}, 1);
  if (!s || s->positional.size() != 1 || !s->rest.empty()) return failLine("recover: usage: corral session recover ID [--env K=V]...");
  Json body = Json::object();
  if (s->has("--env")) body["env"] = s->all("--env");
  auto r = call("POST", "/v1/sessions/" + s->positional[0] + "/recover", body, 200);
  if (!r) return kExitCorral;
  if (s->has("--json")) printJson(*r);
  else std::printf("%s %s\n", s->positional[0].c_str(), (*r)["state"].get<std::string>().c_str());
  return 0;
}

int removeSession(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {{"--json", false}, {"--keep-workspace", false}}, 1);
  if (!s || s->positional.size() != 1 || !s->rest.empty()) return failLine("rm: usage: corral session rm ID [--keep-workspace]");
  std::optional<Json> body;
  if (s->has("--keep-workspace")) body = Json{{"keep_workspace", true}};
  auto r = call("DELETE", "/v1/sessions/" + s->positional[0], body, 200);
  if (!r) return kExitCorral;
  if (s->has("--json")) printJson(*r);
  else if (r->contains("kept_workspace")) std::printf("%s kept %s\n", s->positional[0].c_str(), (*r)["kept_workspace"].get<std::string>().c_str());
  else std::printf("%s\n", s->positional[0].c_str());
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
  if (args[0] == "rm") return removeSession(rest);
  if (args[0] == "cp") return copy(rest);
  if (args[0] == "pause" || args[0] == "resume") return pauseOrResume(rest, args[0]);
  if (args[0] == "recover") return recover(rest);
  if (args[0] == "attach") return attach(rest);
  return failLine("unknown command " + optionName(args[0]) + " (try corral session --help)");
}

}  // namespace corral::cli
