// SPDX-License-Identifier: Apache-2.0
// `corral market sandbox-runner`: the helper a seller's or judge's runner starts inside its
// `corral exec` sandbox. It makes the X25519 runner key here, prints only the public half,
// opens the task with the wrap the host relays, runs the agent's command on the plaintext
// (files on the sandbox's private /tmp) and prints the sealed result or the reason code.
// Framing: one JSON object per line on stdin/stdout; the private key never leaves memory.
#include <fcntl.h>
#include <sodium.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "cli/market_agent.h"
#include "market/keys.h"
#include "market/market.h"

namespace corral::cli {
namespace {

using nlohmann::json;
namespace keys = corral::market::keys;

constexpr size_t kMaxFrame = size_t{2} * 1024 * 1024;
constexpr size_t kMaxAnswer = size_t{512} * 1024;

// Wipes a key's bytes when it goes out of scope.
struct Wipe {
  std::string& s;
  ~Wipe() { sodium_memzero(s.data(), s.size()); }
};

void frame(const json& j) {
  std::fputs((j.dump() + "\n").c_str(), stdout);
  std::fflush(stdout);
}

int fail(const char* why) {  // fixed texts only: nothing of the task
  frame({{"error", why}});
  return 1;
}

Result<void> writeFile(const std::string& path, const std::string& data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return sysError("create a task file");
  for (size_t off = 0; off < data.size();) {
    const ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0) return sysError("write a task file");
    off += static_cast<size_t>(n);
  }
  return {};
}

struct Ran {
  int status = -1;  // exit status, or -1 when killed or not started
  std::string out;
  bool too_long = false;
};

// Runs argv with stdin = the body file, stdout captured, stderr discarded (it may hold task
// content, and the sandbox's stderr reaches the host's log).
Ran runCommand(const std::vector<std::string>& argv, const std::string& body_path, const std::string& result_path) {
  Ran ran;
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return ran;
  UniqueFd rd(p[0]), wr(p[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return ran;
  if (pid == 0) {
    const int in = ::open(body_path.c_str(), O_RDONLY);
    const int null = ::open("/dev/null", O_WRONLY);
    if (in < 0 || null < 0 || ::dup2(in, 0) < 0 || ::dup2(wr.get(), 1) < 0 || ::dup2(null, 2) < 0) ::_exit(126);
    ::setenv("CORRAL_MARKET_BODY", body_path.c_str(), 1);
    if (!result_path.empty()) ::setenv("CORRAL_MARKET_RESULT", result_path.c_str(), 1);
    std::vector<char*> a;
    a.reserve(argv.size() + 1);
    for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execvp(a[0], a.data());
    ::_exit(127);
  }
  wr.reset();
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(rd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (ran.out.size() + static_cast<size_t>(n) > kMaxAnswer) {
      ran.too_long = true;
      ::kill(pid, SIGKILL);
      break;
    }
    ran.out.append(buf, static_cast<size_t>(n));
  }
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st)) ran.status = WEXITSTATUS(st);
  return ran;
}

// The judge's command prints one reason code; anything else is judge_malformed.
std::string reasonFrom(const Ran& ran) {
  if (ran.status != 0) return "judge_unavailable";
  std::string code = ran.out;
  while (!code.empty() && (code.back() == '\n' || code.back() == ' ' || code.back() == '\r')) code.pop_back();
  for (const market::ReasonCode& c : market::reasonCodes())
    if (code == c.code) return code;
  return "judge_malformed";
}

}  // namespace

// args: --role seller|judge -- CMD [ARGS...]
int marketSandboxMain(const std::vector<std::string>& args) {
  if (args.size() < 4 || args[0] != "--role" || (args[1] != "seller" && args[1] != "judge") || args[2] != "--")
    return fail("usage: corral market sandbox-runner --role seller|judge -- CMD [ARGS...]");
  const bool judge = args[1] == "judge";
  const std::vector<std::string> cmd(args.begin() + 3, args.end());
  // The agent's command runs as this uid: it must not read this process's memory or fds.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (!keys::ready()) return fail("libsodium did not start");
  keys::KeyPair kp = keys::newKeyPair();
  const Wipe wipe_sk{kp.secret_key};
  frame({{"runner_key", keys::toHex(kp.public_key)}});

  std::string line;
  if (!std::getline(std::cin, line) || line.size() > kMaxFrame) return fail("no task frame");
  const json in = json::parse(line, nullptr, false);
  if (!in.is_object() || !in.contains("wrap") || !in.contains("body_ct") || !in["wrap"].is_string() ||
      !in["body_ct"].is_string())
    return fail("malformed task frame");
  auto wrap = keys::fromBase64(in["wrap"].get<std::string>());
  auto body_ct = keys::fromBase64(in["body_ct"].get<std::string>());
  if (!wrap || !body_ct) return fail("malformed task frame");
  auto opened = keys::openSealed(kp, *wrap);
  if (!opened) return fail("the wrap does not open with this sandbox's key");
  std::string kr = std::move(*opened);
  const Wipe wipe_kr{kr};
  if (kr.size() != (judge ? 64u : 32u)) return fail("the wrap holds a key of the wrong size");
  auto body = keys::secretOpen(kr.substr(0, 32), *body_ct);
  if (!body) return fail("the task body does not open");

  std::string result_plain;
  if (judge) {
    if (!in.contains("result_ct") || !in["result_ct"].is_string()) return fail("malformed task frame");
    auto result_ct = keys::fromBase64(in["result_ct"].get<std::string>());
    if (!result_ct) return fail("malformed task frame");
    auto r = keys::secretOpen(kr.substr(32), *result_ct);
    if (!r) return fail("the result does not open");
    result_plain = std::move(*r);
  }
  std::string buyer_key;
  if (!judge) {
    if (!in.contains("buyer_key") || !in["buyer_key"].is_string()) return fail("malformed task frame");
    auto bk = keys::parsePublicKey(in["buyer_key"].get<std::string>());
    if (!bk) return fail("malformed buyer key");
    buyer_key = *bk;
  }

  // The plaintext lives on the sandbox's private /tmp for the command's life only.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string dir = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/corral-task-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) return fail("cannot make the task directory");
  const std::string body_path = dir + "/body", result_path = judge ? dir + "/result" : "";
  Ran ran;
  bool staged = writeFile(body_path, *body).ok() && (!judge || writeFile(result_path, result_plain).ok());
  sodium_memzero(body->data(), body->size());
  sodium_memzero(result_plain.data(), result_plain.size());
  if (staged) ran = runCommand(cmd, body_path, result_path);
  ::unlink(body_path.c_str());
  if (judge) ::unlink(result_path.c_str());
  ::rmdir(dir.c_str());
  if (!staged) return fail("cannot stage the task files");

  if (judge) {
    frame({{"reason", reasonFrom(ran)}});
    return 0;
  }
  if (ran.too_long) return fail("the command's answer is larger than 512 KiB");
  if (ran.status != 0) return fail("the command failed");
  std::string r = keys::newSymmetricKey();
  const Wipe wipe_r{r};
  auto r_wrap = keys::sealTo(buyer_key, r);
  if (!r_wrap) return fail("cannot seal to the buyer's key");
  const std::string result_ct = keys::secretSeal(r, ran.out);
  sodium_memzero(ran.out.data(), ran.out.size());
  frame({{"result_ct", keys::toBase64(result_ct)}, {"result_key_wrap", keys::toBase64(*r_wrap)}});
  return 0;
}

}  // namespace corral::cli
