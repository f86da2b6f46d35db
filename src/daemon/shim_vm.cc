// SPDX-License-Identifier: Apache-2.0
// The VM session's shim: boot the guest, bridge init packets <-> session frames, run the loop.
#include "daemon/shim_vm.h"
#include "daemon/shim_vm_bridge.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <map>
#include <thread>

#include "audit/base64.h"
#include "base/log.h"
#include "daemon/shim.h"
#include "daemon/shim_loop.h"
#include "policy/env_policy.h"
#include "sandbox/session_protocol.h"
#include "sandbox/sync_channel.h"
#include "vm/frame.h"
#include "vm/vm_backend.h"

namespace corral::daemon {
namespace {

namespace ses = sandbox::session;
namespace frame = vm::frame;

bool writeAll(int fd, std::string_view data) {
  for (size_t off = 0; off < data.size();) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool VmBridge::send(frame::Type t, std::string_view payload) { return writeAll(control_, frame::encode(t, payload)); }

bool VmBridge::sendClock() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const auto sec = static_cast<uint64_t>(now.tv_sec);
  std::string payload;
  for (uint32_t v : {0u, static_cast<uint32_t>(sec >> 32), static_cast<uint32_t>(sec), static_cast<uint32_t>(now.tv_nsec)})
    frame::putU32(payload, v);
  return send(frame::Type::kClock, payload);
}

void VmBridge::fileAnswer(uint64_t seq, Json j) {
  j["seq"] = seq;
  j["ok"] = true;
  const std::string text = dumpJson(j);
  (void)!::send(files_.get(), text.data(), text.size(), MSG_NOSIGNAL);
}

void VmBridge::toLoop(const void* data, size_t n) { (void)!::send(sock_.get(), data, n, MSG_NOSIGNAL); }

void VmBridge::spawned(uint32_t id, int32_t pid) {
  ses::Packet p{};
  p.op = ses::Op::kSpawned;
  p.cmd = id;
  p.pid = pid;
  toLoop(&p, sizeof p);
}

bool VmBridge::fromLoop() {
  alignas(ses::Packet) char buf[sizeof(ses::Packet)];
  iovec iov{buf, sizeof buf};
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(sock_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n == 0) return false;
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  std::vector<UniqueFd> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.emplace_back(fd);
      }
  if (static_cast<size_t>(n) != sizeof(ses::Packet)) return true;
  ses::Packet p;
  std::memcpy(&p, buf, sizeof p);
  if (p.magic != ses::kMagic) return true;
  if (p.op == ses::Op::kSignal) {
    std::string payload;
    frame::putU32(payload, p.cmd);
    frame::putU32(payload, static_cast<uint32_t>(p.value));
    return send(frame::Type::kCmdSignal, payload);
  }
  if (p.op != ses::Op::kSpawn) return true;
  // A terminal (the daemon refuses it first) or a command too large for one frame: refused
  // the way init refuses a spawn, with -errno.
  if (p.tty != 0 || fds.size() != 4) {
    spawned(p.cmd, -ENOTTY);
    return true;
  }
  if (p.bytes > frame::kMaxPayload - 16) {
    spawned(p.cmd, -E2BIG);
    return true;
  }
  std::string payload;
  for (uint32_t v : {p.cmd, p.argc, p.envc, p.pathc}) frame::putU32(payload, v);
  const size_t head = payload.size();
  payload.resize(head + p.bytes);
  if (::pread(fds[0].get(), payload.data() + head, p.bytes, 0) != static_cast<ssize_t>(p.bytes)) {
    spawned(p.cmd, -EIO);
    return true;
  }
  if (cmds_.count(p.cmd)) {
    spawned(p.cmd, -EEXIST);
    return true;
  }
  Cmd cmd;
  cmd.in = std::move(fds[1]);
  cmd.out = std::move(fds[2]);
  cmd.err = std::move(fds[3]);
  ::fcntl(cmd.in.get(), F_SETFL, O_NONBLOCK);
  cmds_.emplace(p.cmd, std::move(cmd));
  return send(frame::Type::kCommand, payload);
}

// A files request from the loop: {"seq", "op": "file_get"|"file_put", "path", "data" (base64)}.
bool VmBridge::fileRequest() {
  char* buf = controlBuffer();
  const ssize_t n = ::recv(files_.get(), buf, kMaxControlBytes, MSG_DONTWAIT);
  if (n == 0) return false;
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  auto j = parseJson(std::string_view(buf, static_cast<size_t>(n)));
  if (!j || !j->is_object() || !(*j)["seq"].is_number_unsigned()) return true;
  const uint64_t seq = (*j)["seq"].get<uint64_t>();
  if ((*j)["op"] == "vm_pause" || (*j)["op"] == "vm_resume" || (*j)["op"] == "vm_state") {
    const std::string op = (*j)["op"].get<std::string>();
    Json a = vm_op_ ? vm_op_(op) : Json{{"status", 422}, {"error", op + ": no monitor"}};
    if (op == "vm_resume" && !a.contains("error") && !sendClock()) return false;
    fileAnswer(seq, std::move(a));
    return true;
  }
  const Json* path = j->contains("path") && (*j)["path"].is_string() ? &(*j)["path"] : nullptr;
  const bool get = (*j)["op"] == "file_get";
  if (!path) {
    fileAnswer(seq, {{"status", 400}, {"error", "file: a path is required"}});
    return true;
  }
  std::optional<std::string> data;
  if (!get) {
    if ((*j)["data"].is_string()) data = audit::base64DecodeStrict((*j)["data"].get<std::string>());
    if (!data) {
      fileAnswer(seq, {{"status", 400}, {"error", "file_put: data is not base64"}});
      return true;
    }
    if (data->size() > frame::kMaxSessionFileBytes) {
      fileAnswer(seq, {{"status", 413}, {"error", "file_put: over the VM session's file cap"}});
      return true;
    }
  }
  const uint32_t id = next_file_id_++;
  std::string payload;
  frame::putU32(payload, id);
  Json head = {{"path", path->get<std::string>()}};
  if (!get) head["size"] = data->size();
  payload += dumpJson(head);
  if (!send(get ? frame::Type::kFileGet : frame::Type::kFilePut, payload)) return false;
  for (size_t off = 0; data && off < data->size(); off += frame::kMaxPayload - 4) {
    std::string chunk;
    frame::putU32(chunk, id);
    chunk.append(*data, off, frame::kMaxPayload - 4);
    if (!send(frame::Type::kFileData, chunk)) return false;
  }
  file_reqs_[id] = FileReq{seq, get, false, 0, {}};
  return true;
}

// The guest's answer to a file request: its reply, then (a get's) exactly that many bytes.
bool VmBridge::fileFrame(const frame::Frame& f) {
  uint32_t id = 0;
  if (!frame::getU32s(f.payload, 1, &id)) return false;
  auto it = file_reqs_.find(id);
  if (it == file_reqs_.end()) return false;  // the host asked nothing of that id
  FileReq& r = it->second;
  const std::string_view rest = std::string_view(f.payload).substr(4);
  if (f.type == frame::Type::kFileReply) {
    if (r.answered) return false;
    auto j = parseJson(rest);
    if (!j || !j->is_object()) return false;
    if (j->contains("error")) {
      const Json& st = (*j)["status"];
      const int status = st.is_number_integer() ? st.get<int>() : 422;
      const bool known = status == 400 || status == 404 || status == 413 || status == 422;
      fileAnswer(r.seq, {{"status", known ? status : 422},
                         {"error", (*j)["error"].is_string() ? (*j)["error"].get<std::string>().substr(0, 1024) : std::string("file: refused")}});
      file_reqs_.erase(it);
      return true;
    }
    if (!(*j)["size"].is_number_unsigned() || (*j)["size"].get<uint64_t>() > frame::kMaxSessionFileBytes) return false;
    r.size = (*j)["size"].get<uint64_t>();
    r.answered = true;
    if (!r.get) {
      fileAnswer(r.seq, {{"status", 201}, {"bytes", r.size}});
      file_reqs_.erase(it);
    } else if (r.size == 0) {
      fileAnswer(r.seq, {{"status", 200}, {"data", ""}});
      file_reqs_.erase(it);
    }
    return true;
  }
  if (!r.get || !r.answered || r.data.size() + rest.size() > r.size) return false;
  r.data.append(rest);
  if (r.data.size() == r.size) {
    fileAnswer(r.seq, {{"status", 200}, {"data", audit::base64Encode(r.data)}});
    file_reqs_.erase(it);
  }
  return true;
}

// The guest is untrusted: a frame of the wrong shape ends the session; one for a command the
// host does not know (it ended) is dropped.
bool VmBridge::fromGuest(const frame::Frame& f) {
  if (f.type == frame::Type::kFileReply || f.type == frame::Type::kFileBytes) return fileFrame(f);
  switch (f.type) {
    case frame::Type::kCmdSpawned:
    case frame::Type::kCmdFailed:
    case frame::Type::kCmdStdout:
    case frame::Type::kCmdStderr:
    case frame::Type::kCmdExited:
      break;
    default:
      return false;  // nothing else has a place once the session is up
  }
  uint32_t head[3] = {};
  const size_t fields = f.type == frame::Type::kCmdFailed ? 3 : (f.type == frame::Type::kCmdSpawned || f.type == frame::Type::kCmdExited) ? 2 : 1;
  if (!frame::getU32s(f.payload, fields, head)) return false;
  if ((f.type == frame::Type::kCmdSpawned || f.type == frame::Type::kCmdExited || f.type == frame::Type::kCmdFailed) &&
      f.payload.size() != 4 * fields)
    return false;
  auto it = cmds_.find(head[0]);
  if (it == cmds_.end()) return true;
  switch (f.type) {
    case frame::Type::kCmdSpawned:
      spawned(head[0], static_cast<int32_t>(head[1]));
      if (static_cast<int32_t>(head[1]) <= 0) cmds_.erase(it);
      return true;
    case frame::Type::kCmdFailed: {
      const sandbox::sync::Message m{sandbox::sync::Type::kExecFailed, static_cast<int32_t>(head[1]), static_cast<int32_t>(head[2]), 0};
      toLoop(&m, sizeof m);
      return true;
    }
    case frame::Type::kCmdStdout:
    case frame::Type::kCmdStderr: {
      UniqueFd& to = f.type == frame::Type::kCmdStdout ? it->second.out : it->second.err;
      if (to.valid() && !writeAll(to.get(), std::string_view(f.payload).substr(4))) to.reset();
      return true;
    }
    case frame::Type::kCmdExited: {
      ses::Packet p{};
      p.op = ses::Op::kExited;
      p.cmd = head[0];
      p.value = static_cast<int32_t>(head[1]);
      cmds_.erase(it);  // its output is in the loop's pipes already: they close first
      toLoop(&p, sizeof p);
      return true;
    }
    default:
      return false;
  }
}

void VmBridge::run() {
  char buf[65536];
  for (;;) {
    std::vector<pollfd> fds = {{control_, POLLIN, 0}, {sock_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0},
                               {files_.get(), POLLIN, 0}};
    std::vector<uint32_t> polled;
    for (auto& [id, c] : cmds_)
      if (c.in.valid()) fds.push_back({c.in.get(), POLLIN, 0}), polled.push_back(id);
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents) return;
    if ((fds[1].revents & (POLLIN | POLLHUP)) && !fromLoop()) break;
    if ((fds[3].revents & (POLLIN | POLLHUP)) && !fileRequest()) break;
    for (size_t i = 0; i < polled.size(); ++i) {
      if (!fds[4 + i].revents) continue;
      auto it = cmds_.find(polled[i]);
      if (it == cmds_.end()) continue;
      const ssize_t n = ::read(it->second.in.get(), buf, frame::kMaxPayload - 4);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      std::string payload;
      frame::putU32(payload, polled[i]);
      if (n > 0) payload.append(buf, static_cast<size_t>(n));
      else it->second.in.reset();  // EOF (or an error): the command reads EOF
      if (!send(frame::Type::kCmdStdin, payload)) break;
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::read(control_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      parser_.feed(std::string_view(buf, static_cast<size_t>(n)));
      bool ok = true;
      for (;;) {
        auto f = parser_.next();
        if (!f || !*f) {
          ok = static_cast<bool>(f);
          break;
        }
        if (!fromGuest(**f)) {
          ok = false;
          break;
        }
      }
      if (!ok) {
        log::warn("vm_session_channel_refused", "reason=malformed_guest_frame");
        break;
      }
    }
  }
  // The channel is gone or out of step: the VM goes, and the loop sees its pidfd.
  kill_();
}

namespace {

void writeLine(int fd, const Json& j) {
  const std::string line = dumpJson(j) + "\n";
  (void)!::write(fd, line.data(), line.size());
}

}  // namespace

int runVmShim(int dir, int listen, const std::string& secret, int ready, int log_fd, const SessionSpec& spec) {
  // The signals the loop reads, blocked before any thread starts so that none takes them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  UniqueFd signals(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals.valid()) {
    writeLine(ready, {{"error", sysError("signalfd").message()}});
    return 125;
  }
  sandbox::SandboxSpec sandbox;
  sandbox.argv = {"/bin/true"};
  sandbox.env = policy::env::buildEnvironment(spec.env);
  sandbox.limits = spec.limits;
  vm::VmOptions options;
  if (spec.vm_memory_bytes) options.memory_bytes = spec.vm_memory_bytes;
  if (spec.vm_cpus) options.cpus = spec.vm_cpus;
  options.allow_tcg = spec.vm_allow_tcg;
  auto started = vm::startSessionVm(sandbox, options);
  if (!started) {
    writeLine(ready, {{"error", started.error().message()}});
    return 125;
  }
  vm::SessionVm& guest = **started;
  ::dup2(log_fd, 2);  // from here on log:: lines go to shim.log
  const auto& info = guest.info();
  log::info("vm_session_up", "accelerator=" + info.value("accelerator", std::string()) + " start=" + info.value("start", std::string()) +
                                 " jailer_pid=" + std::to_string(guest.pid()));
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    writeLine(ready, {{"error", sysError("socketpair").message()}});
    return 125;
  }
  UniqueFd loop_end(pair[0]);
  UniqueFd bridge_end(pair[1]);
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    writeLine(ready, {{"error", sysError("socketpair").message()}});
    return 125;
  }
  UniqueFd files_loop(pair[0]), files_bridge(pair[1]);
  // A file request is one message each way, base64 in JSON (frame::kMaxSessionFileBytes).
  const int sndbuf = static_cast<int>(kMaxControlBytes) * 2;
  for (int fd : {files_loop.get(), files_bridge.get()}) ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  UniqueFd stop(::eventfd(0, EFD_CLOEXEC));
  UniqueFd stop_dup(::fcntl(stop.get(), F_DUPFD_CLOEXEC, 3));
  if (!stop.valid() || !stop_dup.valid()) {
    writeLine(ready, {{"error", sysError("eventfd").message()}});
    return 125;
  }
  VmBridge bridge(guest.control(), [&guest] { guest.kill(); }, std::move(bridge_end), std::move(files_bridge), std::move(stop_dup));
  // Pause and resume: QMP stop and cont on the session's QEMU (from the bridge's thread only).
  bridge.onVmOp([&guest](const std::string& op) -> Json {
    Result<void> r = op == "vm_pause" ? guest.pause() : op == "vm_resume" ? guest.resume() : Result<void>();
    if (!r) return {{"status", 500}, {"error", op + ": " + r.error().message()}};
    auto running = guest.running();
    if (!running) return {{"status", 500}, {"error", op + ": " + running.error().message()}};
    if (op != "vm_state") log::info("vm_session_" + op.substr(3), "running=" + std::string(*running ? "true" : "false"));
    return {{"running", *running}};
  });
  std::thread t([&bridge] { bridge.run(); });
  // The loop's "init" is the QEMU jailer: its pid and start time are what a restarted
  // daemon checks, and its pidfd ends the loop when the VM is gone.
  const sandbox::RunOptions::SessionIo io{loop_end.get(), guest.pidfd(), -1, signals.get()};
  ShimConfig cfg{dir, listen, secret, ready, spec.env, nullptr, files_loop.get()};
  runShimLoop(cfg, io);
  const uint64_t one = 1;
  (void)!::write(stop.get(), &one, sizeof one);
  t.join();
  guest.kill();
  log::info("session_ended", "shim_pid=" + std::to_string(::getpid()) + " backend=vm");
  return 0;
}

}  // namespace corral::daemon
