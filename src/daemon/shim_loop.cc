// SPDX-License-Identifier: Apache-2.0
// The shim's loop: one thread, poll over every descriptor; commands' output goes to bounded
// spool files and each finished command's status to status.json (fsync, rename), so whatever
// ran while no daemon was connected is still there when one comes back.
#include "daemon/shim_loop.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "base/fd_passing.h"
#include "base/log.h"
#include "daemon/fd_receive.h"
#include "daemon/json_fields.h"
#include "daemon/session_spec.h"
#include "daemon/shim.h"
#include "daemon/shim_egress.h"
#include "daemon/terminal_frame.h"
#include "sandbox/session_protocol.h"
#include "sandbox/sync_channel.h"

namespace corral::daemon {
namespace {

using Clock = std::chrono::steady_clock;
namespace ses = sandbox::session;
constexpr size_t kMaxClients = 8;

struct Stream {
  UniqueFd pipe;   // read end, non-blocking; invalid once closed
  UniqueFd file;   // the spool file
  uint64_t kept = 0, dropped = 0;
};

struct Command {
  uint32_t id = 0;
  int pid = 0;
  Stream out, err;
  std::optional<Clock::time_point> deadline;
  Clock::time_point started = Clock::now();
  bool timed_out = false;
  std::optional<sandbox::sync::Message> exec_failure;
  int client = -1;  // the client fd waiting for the spawn's reply
  // Handed to that client with the spawn's reply, and kept here too, so that they outlive the
  // daemon: a restarted daemon asks for them again (op take_io). A client's close_io closes
  // this copy (with the daemon's, the command's EOF or hangup); the command's end closes it.
  // Nothing is read from the master here: while no daemon holds it, the pty's buffer fills and
  // the command's writes block (the kernel's buffer is the bound), nothing piles up here.
  UniqueFd stdin_w;
  UniqueFd master;
  bool tty = false;
};

struct Client {
  UniqueFd fd;
  bool authed = false;
};

class Shim {
 public:
  Shim(const ShimConfig& cfg, const sandbox::RunOptions::SessionIo& io) : cfg_(cfg), io_(io) {}
  void run();

 private:
  void accept();
  void onClient(Client& c);
  void dropClient(Client& c);
  Json handle(Client& c, const Json& req, bool* reply_later, bool* stop, int* pass_fd);
  Json exec(const Fields& f, int client, bool* reply_later);
  void onInit();
  void pump(Stream& s);
  void finish(Command& cmd, int wait_status);
  void reply(int fd, const Json& j, int pass_fd = -1);
  void onFiles();

  const ShimConfig& cfg_;
  const sandbox::RunOptions::SessionIo& io_;
  std::vector<Client> clients_;
  std::map<uint32_t, Command> cmds_;
  std::deque<uint32_t> spawning_;  // sent to init, its kSpawned not yet back (in order)
  std::map<uint64_t, int> file_waiters_;  // a VM session's file request (by seq): its client
  uint64_t next_file_seq_ = 1;
  bool stop_ = false;
  int init_pid_ = 0;
  uint64_t init_start_ = 0;
};

Error errnoError(const std::string& what) { return sysError(what); }

// One message; pass_fd (a command's stdin or terminal) goes with it as SCM_RIGHTS.
void Shim::reply(int fd, const Json& j, int pass_fd) {
  if (fd < 0) return;
  std::string text = dumpJson(j);
  iovec iov{text.data(), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (pass_fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pass_fd, sizeof pass_fd);
  }
  (void)!::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void Shim::accept() {
  UniqueFd fd(::accept4(cfg_.listen, nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd.valid()) return;
  ucred peer{};
  socklen_t len = sizeof peer;
  // Only this uid (the daemon's) or root; the socket is 0600 in a 0700 directory already.
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || (peer.uid != ::getuid() && peer.uid != 0) ||
      clients_.size() >= kMaxClients)
    return;
  clients_.push_back({std::move(fd), false});
}

Json Shim::exec(const Fields& f, int client, bool* reply_later) {
  auto cmd_id = f.count("cmd", UINT32_MAX);
  auto argv = f.strings("argv", ses::kMaxStrings - 1, 65536);
  auto env = f.strings("env", ses::kMaxStrings - 1, 65536);
  auto cwd = f.string("cwd", 4096);
  auto timeout = f.count("timeout_ms", 1ull << 40);
  auto want_stdin = f.boolean("stdin");
  auto rows = f.count("tty_rows", terminal::kMaxSide), cols = f.count("tty_cols", terminal::kMaxSide);
  for (const Error* e : {cmd_id ? nullptr : &cmd_id.error(), argv ? nullptr : &argv.error(), env ? nullptr : &env.error(),
                         cwd ? nullptr : &cwd.error(), timeout ? nullptr : &timeout.error(), want_stdin ? nullptr : &want_stdin.error(),
                         rows ? nullptr : &rows.error(), cols ? nullptr : &cols.error()})
    if (e) return {{"ok", false}, {"error", e->message()}};
  const bool tty = *rows && *cols;
  if (tty && (**rows == 0 || **cols == 0)) return {{"ok", false}, {"error", "exec: a terminal is at least 1x1"}};
  if (!*cmd_id || !*argv || (*argv)->empty() || !*env || !*cwd)
    return {{"ok", false}, {"error", "exec: cmd, argv, env and cwd are required"}};
  auto cmd_env = envPairs(**env, "exec.env");
  if (!cmd_env) return {{"ok", false}, {"error", cmd_env.error().message()}};
  const std::vector<std::string> full_env = commandEnvironment(cfg_.env, *cmd_env);
  const std::vector<std::string> paths = sandbox::execCandidates(**argv, full_env);
  const uint32_t id = static_cast<uint32_t>(**cmd_id);
  const std::string name = std::to_string(id);
  // A number is used once: a repeated one (a daemon retrying after a crash) is refused.
  if (cmds_.count(id) || ::mkdirat(cfg_.dir, ("cmds/" + name).c_str(), 0700) != 0)
    return {{"ok", false}, {"error", "exec: command " + name + " exists"}};
  UniqueFd cdir(::openat(cfg_.dir, ("cmds/" + name).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  Command cmd;
  cmd.id = id;
  cmd.client = client;
  cmd.tty = tty;
  if (*timeout) cmd.deadline = Clock::now() + std::chrono::milliseconds(**timeout);
  // With a terminal, init makes it and its master comes back with kSpawned: the command's
  // output goes to whoever holds the master, not to the spool files (left empty).
  UniqueFd out_w, err_w, stdin_r;
  if (!cdir.valid()) return {{"ok", false}, {"error", errnoError("exec: cmds/" + name).message()}};
  for (auto [stream, w] : {std::pair{&cmd.out, &out_w}, {&cmd.err, &err_w}}) {
    int p[2];
    if (tty) continue;
    if (::pipe2(p, O_CLOEXEC) != 0) return {{"ok", false}, {"error", errnoError("exec: pipe").message()}};
    w->reset(p[1]);
    stream->pipe.reset(p[0]);
  }
  if (!tty && want_stdin->value_or(false)) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return {{"ok", false}, {"error", errnoError("exec: pipe").message()}};
    stdin_r.reset(p[0]);
    cmd.stdin_w.reset(p[1]);
  }
  cmd.out.file.reset(::openat(cdir.get(), "stdout", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  cmd.err.file.reset(::openat(cdir.get(), "stderr", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  UniqueFd devnull(stdin_r.valid() ? -1 : ::open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd mem(::memfd_create("corral-command", MFD_CLOEXEC));
  if (!cmd.out.file.valid() || !cmd.err.file.valid() || !(devnull.valid() || stdin_r.valid()) || !mem.valid())
    return {{"ok", false}, {"error", errnoError("exec: spool files").message()}};
  std::string blob;
  for (const std::string& s : **argv) blob.append(s).push_back('\0');
  for (const std::string& s : full_env) blob.append(s).push_back('\0');
  blob.append(**cwd).push_back('\0');
  for (const std::string& s : paths) blob.append(s).push_back('\0');
  if (blob.size() > ses::kMaxSpawnBytes || ::write(mem.get(), blob.data(), blob.size()) != static_cast<ssize_t>(blob.size()))
    return {{"ok", false}, {"error", "exec: command too large"}};
  for (Stream* s : {&cmd.out, &cmd.err}) ::fcntl(s->pipe.get(), F_SETFL, O_NONBLOCK);
  ses::Packet p{};
  p.op = ses::Op::kSpawn;
  p.cmd = id;
  p.bytes = static_cast<uint32_t>(blob.size());
  p.argc = static_cast<uint32_t>((*argv)->size());
  p.envc = static_cast<uint32_t>(full_env.size());
  p.pathc = static_cast<uint32_t>(paths.size());
  if (tty) p.tty = static_cast<uint32_t>(**rows << 16 | **cols);
  const int fds[4] = {mem.get(), stdin_r.valid() ? stdin_r.get() : devnull.get(), out_w.get(), err_w.get()};
  const size_t nfds = tty ? 1 : 4;
  if (const int e = sendWithFds(io_.sock, &p, sizeof p, fds, nfds); e != 0) {
    errno = e;
    return {{"ok", false}, {"error", errnoError("exec: to init").message()}};
  }
  cmds_.emplace(id, std::move(cmd));
  spawning_.push_back(id);
  *reply_later = true;
  return {};
}

Json Shim::handle(Client& c, const Json& req, bool* reply_later, bool* stop, int* pass_fd) {
  const Json* op = req.is_object() && req.contains("op") ? &req["op"] : nullptr;
  if (!op || !op->is_string()) return {{"ok", false}, {"error", "no op"}};
  const std::string name = op->get<std::string>();
  if (name == "hello") {
    auto f = Fields::of(req, "hello", {"op", "secret"});
    auto secret = f ? f->string("secret") : Result<std::optional<std::string>>(f.error());
    if (!secret || !*secret || !sameSecret(**secret, cfg_.secret)) {
      *stop = true;  // this client, not the session: closed below
      return {{"ok", false}, {"error", "bad secret"}};
    }
    c.authed = true;
    return {{"ok", true}, {"shim_pid", ::getpid()}, {"shim_start", processStartTime(::getpid())}, {"init_pid", init_pid_},
            {"init_start", init_start_}};
  }
  if (!c.authed) {
    *stop = true;
    return {{"ok", false}, {"error", "hello first"}};
  }
  if (name == "exec") {
    auto f = Fields::of(req, "exec", {"op", "cmd", "argv", "env", "cwd", "timeout_ms", "stdin", "tty_rows", "tty_cols"});
    if (!f) return {{"ok", false}, {"error", f.error().message()}};
    return exec(*f, c.fd.get(), reply_later);
  }
  if (name == "signal") {
    auto f = Fields::of(req, "signal", {"op", "cmd", "signal"});
    auto cmd = f ? f->count("cmd", UINT32_MAX) : Result<std::optional<uint64_t>>(f.error());
    auto sig = f ? f->count("signal", 64) : Result<std::optional<uint64_t>>(f.error());
    if (!cmd || !sig || !*cmd || !*sig) return {{"ok", false}, {"error", "signal: cmd and signal required"}};
    auto it = cmds_.find(static_cast<uint32_t>(**cmd));
    if (it == cmds_.end() || it->second.pid <= 0) return {{"ok", false}, {"error", "signal: no such running command"}};
    ses::Packet p{};
    p.op = ses::Op::kSignal;
    p.cmd = it->first;
    p.pid = it->second.pid;
    p.value = static_cast<int32_t>(**sig);
    (void)!::send(io_.sock, &p, sizeof p, MSG_NOSIGNAL);
    return {{"ok", true}};
  }
  if (name == "take_io" || name == "close_io") {  // a command's stdin or terminal: a copy, or closed
    auto f = Fields::of(req, name, {"op", "cmd", "tty"});
    auto cmd = f ? f->count("cmd", UINT32_MAX) : Result<std::optional<uint64_t>>(f.error());
    auto tty = f ? f->boolean("tty") : Result<std::optional<bool>>(f.error());
    if (!cmd || !*cmd || !tty || !*tty) return {{"ok", false}, {"error", name + ": cmd and tty required"}};
    auto it = cmds_.find(static_cast<uint32_t>(**cmd));
    // Only the kind asked for: a stdin request never reaches a terminal, nor the reverse.
    Command* held = it == cmds_.end() || it->second.pid <= 0 || it->second.tty != **tty ? nullptr : &it->second;
    UniqueFd* io = !held ? nullptr : held->tty ? &held->master : &held->stdin_w;
    if (name == "close_io") {
      const bool closed = io && io->valid();
      if (io) io->reset();
      if (closed) log::info("command_io_closed", "cmd=" + std::to_string(**cmd));
      return {{"ok", true}, {"closed", closed}};
    }
    if (!io || !io->valid()) return {{"ok", false}, {"error", "take_io: command " + std::to_string(**cmd) + " has no open stdin or terminal here"}};
    *pass_fd = io->get();
    return {{"ok", true}, {"fd", held->tty ? "terminal" : "stdin"}};
  }
  if (name == "leases") {  // credential uses so far (the daemon adds them to its records)
    if (!cfg_.egress) return {{"ok", true}, {"leases", Json::array()}, {"egress", {{"allowed", 0}, {"refused", 0}}}};
    return {{"ok", true}, {"leases", cfg_.egress->usage()}, {"egress", cfg_.egress->decisions()}};
  }
  if (name == "rotate_lease") {  // a credential rotation: the new value from the next request on
    auto f = Fields::of(req, "rotate_lease", {"op", "name", "value"});
    auto lease = f ? f->string("name", 64) : Result<std::optional<std::string>>(f.error());
    auto value = f ? f->string("value", 8192) : Result<std::optional<std::string>>(f.error());
    if (!lease || !value || !*lease || !*value) return {{"ok", false}, {"error", "rotate_lease: name and value required"}};
    if (!cfg_.egress) return {{"ok", false}, {"error", "rotate_lease: this session has no egress proxy"}};
    auto rotated = cfg_.egress->rotate(**lease, Secret(std::move(**value)));
    if (!rotated) return {{"ok", false}, {"error", "rotate_lease: " + rotated.error().message()}};
    return {{"ok", true}};
  }
  // A VM session's files API and its pause, resume and state (QMP: shim_vm.h).
  if (name == "file_get" || name == "file_put" || name == "vm_pause" || name == "vm_resume" || name == "vm_state") {
    if (cfg_.files < 0) return {{"ok", false}, {"error", name + ": only on a VM session"}};
    Json fwd = req;
    fwd.erase("op");
    fwd["op"] = name;
    const uint64_t seq = next_file_seq_++;
    fwd["seq"] = seq;
    const std::string text = dumpJson(fwd);
    if (::send(cfg_.files, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT) != static_cast<ssize_t>(text.size()))
      return {{"ok", false}, {"error", name + ": the VM's bridge is busy or gone"}};
    file_waiters_[seq] = c.fd.get();
    *reply_later = true;
    return {};
  }
  if (name == "stop") {
    stop_ = true;
    return {{"ok", true}};
  }
  return {{"ok", false}, {"error", "unknown op"}};
}

void Shim::onClient(Client& c) {
  char* buf = controlBuffer();
  const ssize_t n = ::recv(c.fd.get(), buf, kMaxControlBytes, MSG_DONTWAIT);
  if (n <= 0) {
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) dropClient(c);
    return;
  }
  auto req = parseJson(std::string_view(buf, static_cast<size_t>(n)));
  // A rotate_lease request holds a credential value: no copy of it outlives the request here.
  std::fill(buf, buf + n, '\0');
  bool later = false, close_client = false;
  int pass_fd = -1;  // take_io's descriptor (the shim's copy stays)
  Json res = req ? handle(c, *req, &later, &close_client, &pass_fd) : Json{{"ok", false}, {"error", "malformed"}};
  if (req && req->is_object() && req->contains("value") && (*req)["value"].is_string()) {
    std::string& v = (*req)["value"].get_ref<std::string&>();
    std::fill(v.begin(), v.end(), '\0');
  }
  if (!later) reply(c.fd.get(), res, pass_fd);
  if (close_client) dropClient(c);
}

void Shim::dropClient(Client& c) {
  for (auto& [id, cmd] : cmds_)  // its fd number may be reused: no late reply may reach another client
    if (cmd.client == c.fd.get()) cmd.client = -1;
  std::erase_if(file_waiters_, [&](const auto& w) { return w.second == c.fd.get(); });
  c.fd.reset();
}

void Shim::pump(Stream& s) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(s.pipe.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: later
    if (n == 0) {
      s.pipe.reset();
      return;
    }
    const uint64_t room = s.kept < kSpoolCapBytes ? kSpoolCapBytes - s.kept : 0;
    const uint64_t take = std::min<uint64_t>(room, static_cast<uint64_t>(n));
    if (take > 0 && ::write(s.file.get(), buf, take) == static_cast<ssize_t>(take)) s.kept += take;
    else if (take > 0) s.dropped += take;
    s.dropped += static_cast<uint64_t>(n) - take;
  }
}

void Shim::finish(Command& cmd, int wait_status) {
  // What the command wrote before it exited; a background process still holding the pipe
  // is not waited for (its later output is not kept).
  pump(cmd.out);
  pump(cmd.err);
  Json st = {{"cmd", cmd.id}, {"pid", cmd.pid}};
  int exit_code;
  std::string killed_by = "none";
  if (cmd.exec_failure) {
    exit_code = cmd.exec_failure->err == ENOENT ? 127 : cmd.exec_failure->step == sandbox::sync::kStepExec ? 126 : 125;
    st["error"] = std::string(sandbox::sync::childStepName(cmd.exec_failure->step)) + ": " + std::strerror(cmd.exec_failure->err);
  } else if (cmd.timed_out) {
    exit_code = 124;
    killed_by = "timeout";
    st["signal"] = SIGKILL;
  } else if (WIFEXITED(wait_status)) {
    exit_code = WEXITSTATUS(wait_status);
    st["command_status"] = exit_code;
  } else {
    const int sig = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : SIGKILL;
    exit_code = 128 + sig;
    killed_by = "signal";
    st["signal"] = sig;
  }
  st["exit_code"] = exit_code;
  st["killed_by"] = killed_by;
  st["wall_ms"] = std::chrono::duration<double, std::milli>(Clock::now() - cmd.started).count();
  st["stdout_bytes"] = cmd.out.kept;
  st["stderr_bytes"] = cmd.err.kept;
  st["stdout_dropped"] = cmd.out.dropped;
  st["stderr_dropped"] = cmd.err.dropped;
  cmd.out.pipe.reset();
  cmd.err.pipe.reset();
  // An empty spool has no data to flush; its directory entry is made durable by the fsync of
  // the command's directory below. (Two fsyncs of the four were for nothing on most commands.)
  if (cmd.out.kept > 0) ::fsync(cmd.out.file.get());
  if (cmd.err.kept > 0) ::fsync(cmd.err.file.get());
  const std::string base = "cmds/" + std::to_string(cmd.id) + "/";
  const std::string text = dumpJson(st) + "\n";
  UniqueFd tmp(::openat(cfg_.dir, (base + "status.tmp").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!tmp.valid() || ::write(tmp.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::fsync(tmp.get()) != 0 || ::renameat(cfg_.dir, (base + "status.tmp").c_str(), cfg_.dir, (base + "status.json").c_str()) != 0) {
    log::warn("status_write_failed", "cmd=" + std::to_string(cmd.id) + " errno=" + std::to_string(errno));
  }
  UniqueFd cdir(::openat(cfg_.dir, base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (cdir.valid()) ::fsync(cdir.get());
  log::info("command_exited", "cmd=" + std::to_string(cmd.id) + " exit=" + std::to_string(exit_code) +
                                  " stdout_bytes=" + std::to_string(cmd.out.kept) + " stderr_bytes=" + std::to_string(cmd.err.kept));
}

void Shim::onInit() {
  alignas(ses::Packet) char buf[128];
  UniqueFd passed;  // a tty command's master (closed here unless handed on)
  const ssize_t n = recvWithFd(io_.sock, buf, sizeof buf, &passed, MSG_DONTWAIT);
  if (n <= 0) return;
  if (static_cast<size_t>(n) == sizeof(sandbox::sync::Message)) {
    // A command's own report that its setup or execve failed: it comes before init's
    // kSpawned for it (init waits, vfork-style, until the command has exec'd or died).
    sandbox::sync::Message m;
    std::memcpy(&m, buf, sizeof m);
    if (!spawning_.empty() && m.type == sandbox::sync::Type::kExecFailed) {
      auto it = cmds_.find(spawning_.front());
      if (it != cmds_.end()) it->second.exec_failure = m;
    }
    return;
  }
  if (static_cast<size_t>(n) != sizeof(ses::Packet)) return;
  ses::Packet p;
  std::memcpy(&p, buf, sizeof p);
  if (p.magic != ses::kMagic) return;
  auto it = cmds_.find(p.cmd);
  if (it == cmds_.end()) return;
  Command& cmd = it->second;
  if (p.op == ses::Op::kSpawned) {
    if (!spawning_.empty() && spawning_.front() == p.cmd) spawning_.pop_front();
    if (p.pid <= 0) {
      reply(cmd.client, {{"ok", false}, {"error", std::string("spawn: ") + std::strerror(-p.pid)}});
      cmd.exec_failure = sandbox::sync::Message{sandbox::sync::Type::kExecFailed, sandbox::sync::kStepFork, -p.pid, 0};
      finish(cmd, 0);
      cmds_.erase(it);
      return;
    }
    cmd.pid = p.pid;
    if (cmd.tty && !passed.valid()) log::warn("terminal_missing", "cmd=" + std::to_string(p.cmd));
    if (cmd.tty) cmd.master = std::move(passed);
    const int hand = cmd.tty ? cmd.master.get() : cmd.stdin_w.get();
    Json ok = {{"ok", true}, {"pid", p.pid}};
    if (hand >= 0) ok["fd"] = cmd.tty ? "terminal" : "stdin";
    reply(cmd.client, ok, hand);
    log::info("command_started", "cmd=" + std::to_string(p.cmd) + " pid=" + std::to_string(p.pid));
  } else if (p.op == ses::Op::kExited) {
    finish(cmd, p.value);
    cmds_.erase(it);
  }
}

// The bridge's answer to a file request: to the client that asked, without the seq.
void Shim::onFiles() {
  char* buf = controlBuffer();
  const ssize_t n = ::recv(cfg_.files, buf, kMaxControlBytes, MSG_DONTWAIT);
  if (n <= 0) return;
  auto j = parseJson(std::string_view(buf, static_cast<size_t>(n)));
  if (!j || !j->is_object() || !j->contains("seq") || !(*j)["seq"].is_number_unsigned()) return;
  auto it = file_waiters_.find((*j)["seq"].get<uint64_t>());
  if (it == file_waiters_.end()) return;
  const int client = it->second;
  file_waiters_.erase(it);
  j->erase("seq");
  reply(client, *j);
}

void Shim::run() {
  {
    init_pid_ = [&] {
      std::string path = "/proc/self/fdinfo/" + std::to_string(io_.pidfd);
      UniqueFd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      char text[1024] = {};
      if (!f.valid() || ::read(f.get(), text, sizeof text - 1) <= 0) return 0;
      const char* p = std::strstr(text, "\nPid:");
      return p ? static_cast<int>(std::strtol(p + 5, nullptr, 10)) : 0;
    }();
    init_start_ = processStartTime(init_pid_);
    const Json ready = {{"ok", true}, {"shim_pid", ::getpid()}, {"shim_start", processStartTime(::getpid())},
                        {"init_pid", init_pid_}, {"init_start", init_start_}};
    const std::string line = dumpJson(ready) + "\n";
    (void)!::write(cfg_.ready, line.data(), line.size());
    ::close(cfg_.ready);
    log::info("session_ready", "shim_pid=" + std::to_string(::getpid()) + " init_pid=" + std::to_string(init_pid_));
  }
  while (!stop_) {
    std::vector<pollfd> fds = {{io_.pidfd, POLLIN, 0}, {io_.signals, POLLIN, 0}, {cfg_.listen, POLLIN, 0}, {io_.sock, POLLIN, 0},
                               {cfg_.files, POLLIN, 0}};
    for (const Client& c : clients_) fds.push_back({c.fd.get(), POLLIN, 0});
    // Streams by command id and which, not by pointer: onInit() below may finish and erase a
    // command polled here, and a Stream* into cmds_ would then dangle.
    std::vector<std::pair<uint32_t, bool>> polled_streams;  // (command, is stderr)
    std::optional<Clock::time_point> next;
    for (auto& [id, cmd] : cmds_) {
      for (const bool is_err : {false, true})
        if (const Stream& s = is_err ? cmd.err : cmd.out; s.pipe.valid()) {
          fds.push_back({s.pipe.get(), POLLIN, 0});
          polled_streams.emplace_back(id, is_err);
        }
      if (cmd.deadline && !cmd.timed_out && (!next || *cmd.deadline < *next)) next = cmd.deadline;
    }
    int timeout = -1;
    if (next) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*next - Clock::now()).count();
      timeout = static_cast<int>(std::clamp<long long>(ms + 1, 0, 60'000));
    }
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      log::warn("session_init_gone", "shim_pid=" + std::to_string(::getpid()));
      break;
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo si;
      while (::read(io_.signals, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) stop_ = true;
    }
    if (fds[3].revents & POLLIN) onInit();
    if (fds[4].revents & POLLIN) onFiles();
    for (size_t i = 0; i < clients_.size(); ++i)
      if (fds[5 + i].revents & (POLLIN | POLLHUP | POLLERR)) onClient(clients_[i]);
    const size_t base = 5 + clients_.size();
    for (size_t i = 0; i < polled_streams.size(); ++i) {
      if (!(fds[base + i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto it = cmds_.find(polled_streams[i].first);
      if (it == cmds_.end()) continue;  // finished above: finish() drained what it had written
      pump(polled_streams[i].second ? it->second.err : it->second.out);
    }
    std::erase_if(clients_, [](const Client& c) { return !c.fd.valid(); });
    if (fds[2].revents & POLLIN) accept();  // after the loops above: they index clients_ as polled
    const auto now = Clock::now();
    for (auto& [id, cmd] : cmds_)
      if (cmd.deadline && !cmd.timed_out && *cmd.deadline <= now && cmd.pid > 0) {
        cmd.timed_out = true;
        ses::Packet p{};
        p.op = ses::Op::kSignal;
        p.cmd = id;
        p.pid = cmd.pid;
        p.value = SIGKILL;
        (void)!::send(io_.sock, &p, sizeof p, MSG_NOSIGNAL);
      }
  }
  // Unfinished commands end with the session: their status says so.
  for (auto& [id, cmd] : cmds_) finish(cmd, SIGKILL);
  cmds_.clear();
}

}  // namespace

void runShimLoop(const ShimConfig& cfg, const sandbox::RunOptions::SessionIo& io) {
  Shim shim(cfg, io);
  shim.run();
}

}  // namespace corral::daemon
