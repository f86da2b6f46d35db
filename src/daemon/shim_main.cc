// SPDX-License-Identifier: Apache-2.0
// The shim's start: read the config, build the sandbox, hand over to the loop.
#include "daemon/shim.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

#include "base/log.h"
#include "base/read_fd.h"
#include "daemon/json_fields.h"
#include "daemon/session_spec.h"
#include "daemon/shim_egress.h"
#include "daemon/shim_loop.h"
#include "daemon/shim_vm.h"
#include "daemon/unix_address.h"
#include "net/ssh_agent_socket.h"
#include "policy/env_policy.h"
#include "sandbox/linux_backend.h"

namespace corral::daemon {
namespace {

void writeLine(int fd, const Json& j) {
  const std::string line = dumpJson(j) + "\n";
  (void)!::write(fd, line.data(), line.size());
}

Result<UniqueFd> listenControl(int dir, const std::string& dir_path) {
  ASSIGN_OR_RETURN(sockaddr_un addr, unixAddress(dir_path + "/control.sock"));
  UniqueFd s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!s.valid()) return sysError("socket");
  ::unlinkat(dir, "control.sock", 0);  // a previous shim's, gone with it (the daemon checked)
  const mode_t old = ::umask(0177);      // born 0600: no moment where another uid may connect
  const int rc = ::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old);
  if (rc != 0) return sysError("bind control.sock");
  if (::listen(s.get(), 8) != 0) return sysError("listen control.sock");
  return s;
}

}  // namespace

uint64_t processStartTime(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  // Fields after the command name start at field 3 (state); the start time is field 22.
  size_t pos = paren + 2;
  for (int field = 3; field < 22 && pos != std::string::npos; ++field) pos = stat.find(' ', pos) + 1;
  if (pos == 0 || pos >= stat.size()) return 0;
  return std::strtoull(stat.c_str() + pos, nullptr, 10);
}

namespace {

// "LENGTH\n" then that many bytes (shim_link.h): read exactly, never past them.
Result<std::string> readConfig(int fd) {
  std::string head;
  char c = 0;
  while (head.size() < 12) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error(Errc::kIo, "shim config: cut short");
    if (c == '\n') break;
    head.push_back(c);
  }
  char* end = nullptr;
  const unsigned long long len = std::strtoull(head.c_str(), &end, 10);
  if (head.empty() || *end != '\0' || len > kMaxControlBytes) return Error(Errc::kInvalidArgument, "shim config: bad length");
  std::string out(len, '\0');
  for (size_t done = 0; done < out.size();) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error(Errc::kIo, "shim config: cut short");
    done += static_cast<size_t>(n);
  }
  return out;
}

void wipe(std::string& s) {
  volatile char* p = s.data();
  for (size_t i = 0; i < s.size(); ++i) p[i] = 0;
}

// Every string in j (the leases' values among them) zeroed in place.
void wipeStrings(Json& j) {
  if (j.is_string()) wipe(j.get_ref<std::string&>());
  else if (j.is_structured())
    for (auto& v : j) wipeStrings(v);
}

}  // namespace

bool sameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

int shimMain(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].empty() || args[0][0] != '/') {
    std::fprintf(stderr, "corral: %s takes the session directory\n", kShimCommand);
    return 125;
  }
  const std::string& dir_path = args[0];
  // The daemon spawned this process as a session leader and waits for it to exit: the shim
  // goes on in a child of it, which init (or the nearest subreaper) adopts, never the daemon.
  // A daemon that dies mid-create must not kill it through a broken pipe either.
  ::signal(SIGPIPE, SIG_IGN);
  if (const pid_t child = ::fork(); child != 0) ::_exit(child < 0 ? 125 : 0);
  log::setLevel(log::Level::kInfo);
  // stdout is the daemon's pipe for the ready line: keep it aside, and put /dev/null on 0..2
  // (the sandbox's init is cloned from this process and must hold nothing of the daemon's).
  // The config now; the leases (credential values) stay in the pipe until init is cloned.
  auto config_text = readConfig(0);
  UniqueFd rest(::fcntl(0, F_DUPFD_CLOEXEC, 3));
  UniqueFd ready(::fcntl(1, F_DUPFD_CLOEXEC, 3));
  UniqueFd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!ready.valid() || !devnull.valid() || !rest.valid()) return 125;
  for (int fd = 0; fd <= 2; ++fd) ::dup2(devnull.get(), fd);
  auto fail = [&](const Error& e) {
    writeLine(ready.get(), {{"error", e.message()}});
    return 125;
  };
  if (!config_text) return fail(config_text.error());
  UniqueFd dir(::open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!dir.valid()) return fail(sysError("open " + dir_path));
  UniqueFd log(::openat(dir.get(), "shim.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log.valid()) return fail(sysError("open shim.log"));
  auto config = parseJson(*config_text);
  if (!config) return fail(config.error());
  auto fields = Fields::of(*config, "shim config", {"id", "secret", "spec", "leases"});
  if (!fields) return fail(fields.error());
  auto secret = fields->string("secret");
  if (!secret || !*secret || (*secret)->size() < 32) return fail(Error(Errc::kInvalidArgument, "shim config: no secret"));
  const Json* spec_json = fields->object("spec");
  if (!spec_json) return fail(Error(Errc::kInvalidArgument, "shim config: no spec"));
  auto spec = parseSessionSpec(*spec_json);
  if (!spec) return fail(spec.error());
  if (::mkdirat(dir.get(), "cmds", 0700) != 0 && errno != EEXIST) return fail(sysError("mkdir cmds"));
  auto listen = listenControl(dir.get(), dir_path);
  if (!listen) return fail(listen.error());

  auto id = fields->string("id", 64);
  if (!id || !*id) return fail(Error(Errc::kInvalidArgument, "shim config: no id"));
  if (spec->vm) {  // a microVM holds the session's sandbox (shim_vm.h)
    rest.reset();
    return runVmShim(dir.get(), listen->get(), **secret, ready.get(), log.get(), *spec);
  }
  // --net proxy: the channel is made now (init's end is fixed before the clone); the proxy
  // itself, with the lease values only it keeps, starts once init has been cloned.
  UniqueFd sandbox_end, proxy_end;
  if (!spec->net_proxy) rest.reset();  // nothing follows the config
  if (spec->net_proxy) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return fail(sysError("egress channel socketpair"));
    sandbox_end.reset(pair[0]);
    proxy_end.reset(pair[1]);
  }
  // ssh_key: the agent's socket is made now, because it is bound into the sandbox like a
  // ro_bind (net/ssh_agent_socket.h); the agent, with the key only it keeps, starts with the proxy.
  std::optional<net::AgentSocket> agent_socket;
  UniqueFd agent_listener;
  if (spec->ssh_key) {
    auto sock = net::AgentSocket::create();
    if (!sock) return fail(sock.error());
    agent_socket.emplace(std::move(*sock));
    agent_listener = agent_socket->takeListener();
    spec->ro_binds.push_back({agent_socket->hostPath(), net::kSandboxAgentSocket});
    spec->env.emplace_back("SSH_AUTH_SOCK", net::kSandboxAgentSocket);
  }
  sandbox::SandboxSpec sandbox;
  sandbox.argv = {"/bin/true"};  // never run: a session's init starts only what it is asked to
  sandbox.env = policy::env::buildEnvironment(spec->env);
  sandbox.limits = spec->limits;
  sandbox.ro_binds = spec->ro_binds;
  sandbox.proxy.channel = sandbox_end.valid() ? sandbox_end.get() : -1;
  sandbox.workspace_bind = dir_path + "/workspace";  // the daemon made it (workspace_disk.h)
  sandbox::RunOptions options;
  bool served = false;
  std::unique_ptr<ShimEgress> egress;
  options.session = [&](const sandbox::RunOptions::SessionIo& io) {
    ::dup2(log.get(), 2);  // from here on log:: lines go to shim.log; init has been cloned
    served = true;
    std::vector<std::pair<std::string, std::string>> session_env = spec->env;
    if (spec->net_proxy) {
      auto leases_text = readUpTo(rest.get(), kMaxControlBytes, "shim leases");
      rest.reset();
      Result<Json> leases = leases_text ? (leases_text->empty() ? Result<Json>(Json::array()) : parseJson(*leases_text))
                                        : Result<Json>(leases_text.error());
      if (leases_text) wipe(*leases_text);
      auto started = leases ? ShimEgress::start(**id, *spec, &*leases, std::move(proxy_end), std::move(agent_listener))
                            : Result<std::unique_ptr<ShimEgress>>(leases.error());
      if (leases) wipeStrings(*leases);
      if (!started) {
        writeLine(ready.get(), {{"error", started.error().message()}});
        return;  // the sandbox ends with this call
      }
      egress = std::move(*started);
      for (auto& kv : egress->environment()) session_env.push_back(std::move(kv));
    }
    ShimConfig cfg{dir.get(), listen->get(), **secret, ready.get(), session_env, egress.get()};
    runShimLoop(cfg, io);
  };
  auto ran = sandbox::runLinux(sandbox, options);
  if (!ran && !served) return fail(ran.error());  // the sandbox never came up
  log::info("session_ended", "shim_pid=" + std::to_string(::getpid()));
  return 0;
}

}  // namespace corral::daemon
