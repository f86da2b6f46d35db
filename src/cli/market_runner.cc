// SPDX-License-Identifier: Apache-2.0
// `corral market seller|judge`: the host side of a runner. For each task it takes, it starts
// one `corral exec` sandbox running `corral market sandbox-runner`, registers the public key
// that sandbox printed, waits for the buyer's wrap and relays the wrap and the ciphertext in
// and the sealed result (or the reason code) out. Ciphertext, ids and sizes only pass here.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "cli/market_agent.h"
#include "cli/market_flags.h"
#include "cli/option_echo.h"
#include "market/keys.h"

namespace corral::cli {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace keys = market::keys;

constexpr char kCoreInSandbox[] = "/opt/corral-core";
constexpr size_t kMaxLine = size_t{2} * 1024 * 1024;

// One task's sandbox: `corral exec ... -- corral market sandbox-runner`, with its stdin and
// stdout as the frame channel (stderr is the sandbox's and corral's own one-line errors).
class Sandbox {
 public:
  static Result<Sandbox> start(const std::vector<std::string>& argv) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return sysError("pipe");
    UniqueFd in_r(in[0]), in_w(in[1]);
    if (::pipe2(out, O_CLOEXEC) != 0) return sysError("pipe");
    UniqueFd out_r(out[0]), out_w(out[1]);
    std::vector<char*> a;
    a.reserve(argv.size() + 1);
    for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return sysError("fork");
    if (pid == 0) {
      if (::dup2(in_r.get(), 0) < 0 || ::dup2(out_w.get(), 1) < 0) ::_exit(125);
      ::execv(a[0], a.data());
      ::_exit(125);
    }
    Sandbox s;
    s.pid_ = pid;
    s.in_ = std::move(in_w);
    s.out_ = std::move(out_r);
    return s;
  }
  Sandbox() = default;
  Sandbox(Sandbox&& o) noexcept : pid_(o.pid_), in_(std::move(o.in_)), out_(std::move(o.out_)), buf_(std::move(o.buf_)) {
    o.pid_ = -1;
  }
  Sandbox& operator=(Sandbox&&) = delete;
  ~Sandbox() {
    if (pid_ <= 0) return;
    in_.reset();  // the helper sees EOF and exits; corral exec's death would end it anyway
    ::kill(pid_, SIGKILL);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
  }

  Result<json> readFrame(std::chrono::milliseconds timeout) {
    const auto until = Clock::now() + timeout;
    for (;;) {
      const size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        json j = json::parse(buf_.substr(0, nl), nullptr, false);
        buf_.erase(0, nl + 1);
        if (!j.is_object()) return Error(Errc::kIo, "the sandbox sent a malformed frame");
        return j;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0) return Error(Errc::kLimit, "the sandbox did not answer in time");
      pollfd p{out_.get(), POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, INT_MAX)));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return sysError("poll");
      if (r == 0) continue;
      char b[65536];
      const ssize_t n = ::read(out_.get(), b, sizeof b);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Error(Errc::kIo, "the sandbox ended before answering");
      buf_.append(b, static_cast<size_t>(n));
      if (buf_.size() > kMaxLine) return Error(Errc::kLimit, "the sandbox sent a frame larger than 2 MiB");
    }
  }
  Result<void> writeFrame(const json& j) {
    const std::string s = j.dump() + "\n";
    for (size_t off = 0; off < s.size();) {
      const ssize_t n = ::write(in_.get(), s.data() + off, s.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return sysError("write to the sandbox");
      off += static_cast<size_t>(n);
    }
    in_.reset();
    return {};
  }
  // The exec's exit status (125 when corral refused), after the last frame.
  int wait() {
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

 private:
  pid_t pid_ = -1;
  UniqueFd in_, out_;
  std::string buf_;
};

struct RunnerConfig {
  bool judge = false;
  std::string core;           // this binary, bound read-only into the sandbox
  std::vector<std::string> cmd;
  std::string timeout = "10m", memory, workspace;
  std::chrono::seconds wait{600};
  std::chrono::milliseconds poll{500};
};

std::vector<std::string> execArgv(const RunnerConfig& c) {
  std::vector<std::string> a = {c.core, "exec", "--net", "none", "--timeout", c.timeout,
                                "--ro-bind", c.core + ":" + kCoreInSandbox};
  if (!c.memory.empty()) a.insert(a.end(), {"--memory", c.memory});
  if (!c.workspace.empty()) a.insert(a.end(), {"--workspace", c.workspace});
#if defined(__SANITIZE_ADDRESS__)
  // Only in a sanitized build (make test-sanitize): LeakSanitizer's check at exit needs ptrace,
  // which the sandbox's seccomp policy refuses, so the helper inside would fail as it ends.
  a.insert(a.end(), {"--env", "ASAN_OPTIONS=detect_leaks=0"});
#endif
  a.insert(a.end(), {"--", kCoreInSandbox, "market", "sandbox-runner", "--role", c.judge ? "judge" : "seller", "--"});
  a.insert(a.end(), c.cmd.begin(), c.cmd.end());
  return a;
}

void note(const RunnerConfig& c, const std::string& task, const std::string& what) {
  std::fprintf(stderr, "corral: market %s: task %s: %s\n", c.judge ? "judge" : "seller", task.c_str(), oneLine(what).c_str());
}

std::string str(const json& j, const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; }

enum class Outcome { kDone, kLost };

// One task, start to end, in one sandbox.
Result<Outcome> handle(const RunnerConfig& c, const MarketSession& s, const std::string& task) {
  ASSIGN_OR_RETURN(Sandbox sb, Sandbox::start(execArgv(c)));
  ASSIGN_OR_RETURN(json hello, sb.readFrame(std::chrono::seconds(60)));
  const std::string runner_key = str(hello, "runner_key");
  if (!keys::parsePublicKey(runner_key)) return Error(Errc::kIo, "the sandbox did not print a runner key");
  const std::string path = "/v1/tasks/" + task;
  auto claimed = s.http.post(path + (c.judge ? "/review" : "/claim"), {{"runner_key", runner_key}});
  if (!claimed) return claimed.error();
  if (claimed->status == 409 || claimed->status == 404) {
    note(c, task, "taken by another runner");
    return Outcome::kLost;
  }
  RETURN_IF_ERROR(marketOk(std::move(claimed)));
  // The public half only: the test compares it with the key the server registered.
  note(c, task, std::string(c.judge ? "review taken" : "claimed") + " with runner key " + runner_key + " born in its sandbox");

  // The buyer's client wraps K (or K || R) to the sandbox's key.
  const char* wrap_field = c.judge ? "judge_wrap" : "key_wrap";
  json t;
  for (const auto until = Clock::now() + c.wait;;) {
    ASSIGN_OR_RETURN(json got, marketOk(s.http.get(path)));
    t = got["task"];
    if (!str(t, wrap_field).empty()) break;
    if (Clock::now() > until) return Error(Errc::kLimit, "the buyer did not release the key in time");
    std::this_thread::sleep_for(c.poll);
  }
  json in = {{"wrap", str(t, wrap_field)}, {"body_ct", str(t, "body_ct")}};
  if (c.judge) {
    in["result_ct"] = str(t, "result_ct");
  } else {
    in["buyer_key"] = str(t, "buyer_key");
  }
  RETURN_IF_ERROR(sb.writeFrame(in));
  ASSIGN_OR_RETURN(json out, sb.readFrame(std::chrono::hours(24)));  // the exec's --timeout bounds it
  const int status = sb.wait();
  if (out.contains("error")) return Error(Errc::kRefused, "the sandbox refused: " + str(out, "error").substr(0, 120));
  if (status != 0) return Error(Errc::kIo, "the sandbox exited with status " + std::to_string(status));
  if (c.judge) {
    const std::string reason = str(out, "reason");
    RETURN_IF_ERROR(marketOk(s.http.post(path + "/verdict", {{"reason", reason}})));
    note(c, task, "verdict " + reason);
  } else {
    const std::string ct = str(out, "result_ct");
    RETURN_IF_ERROR(marketOk(s.http.post(path + "/result", {{"result_ct", ct}, {"result_key_wrap", str(out, "result_key_wrap")}})));
    note(c, task, "result submitted (" + std::to_string(ct.size()) + " bytes of base64 ciphertext)");
  }
  return Outcome::kDone;
}

Result<std::string> selfPath() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return sysError("readlink /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

// corral market seller|judge [--server URL] [--key-file F] [--once] [--timeout D] [--memory S]
//   [--workspace DIR] [--wait-seconds N] [--poll-ms N] -- CMD [ARGS...]
int marketRunnerMain(const std::string& sub, const std::vector<std::string>& args) {
  RunnerConfig c;
  c.judge = sub == "judge";
  std::vector<std::string> flags;
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) flags.push_back(args[i]);
  if (i + 1 < args.size()) c.cmd.assign(args.begin() + static_cast<long>(i) + 1, args.end());
  auto f = parseMarketFlags(flags, {"--server", "--key-file", "--timeout", "--memory", "--workspace", "--wait-seconds", "--poll-ms"},
                            {"--once"});
  if (!f) return marketFail(sub, f.error().message(), false);
  if (c.cmd.empty()) return marketFail(sub, "missing -- CMD [ARGS...] (the command to run in the sandbox)", false);
  c.timeout = f->get("--timeout", c.timeout);
  c.memory = f->get("--memory");
  c.workspace = f->get("--workspace");
  auto wait = intFlag(*f, "--wait-seconds", 600);
  auto poll = intFlag(*f, "--poll-ms", 500);
  if (!wait || !poll || *poll < 10) return marketFail(sub, "--wait-seconds and --poll-ms (>= 10) take integers", false);
  c.wait = std::chrono::seconds(*wait);
  c.poll = std::chrono::milliseconds(*poll);
  auto core = selfPath();
  if (!core) return marketFail(sub, core.error().message(), false);
  c.core = *core;
  auto s = marketSession(*f);
  if (!s) return marketFail(sub, s.error().message(), false);
  if (s->id.role != sub) return marketFail(sub, "the identity file is a " + s->id.role + "'s, not a " + sub + "'s", false);
  const char* want = c.judge ? "submitted" : "open";
  for (;;) {
    auto list = marketOk(s->http.get("/v1/tasks"));
    if (!list) return marketFail(sub, list.error().message(), false);
    for (const json& t : (*list)["tasks"]) {
      if (str(t, "state") != want) continue;
      const std::string id = str(t, "id");
      auto done = handle(c, *s, id);
      if (!done) {
        note(c, id, done.error().message());
        if (f->has("--once")) return 1;
        continue;
      }
      if (*done == Outcome::kDone && f->has("--once")) return 0;
    }
    std::this_thread::sleep_for(c.poll);
  }
}

}  // namespace corral::cli
