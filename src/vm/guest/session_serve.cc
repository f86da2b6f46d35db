// SPDX-License-Identifier: Apache-2.0
// The guest's session loop: frames from the host into the session init's spawn packets
// (session_protocol.h), and each command's pipes and status back into frames.
#include "vm/guest/session_serve.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd_passing.h"
#include "daemon/files.h"
#include "sandbox/linux_backend.h"
#include "sandbox/session_protocol.h"
#include "sandbox/sync_channel.h"
#include "sandbox/userns.h"

namespace corral::vm::guest {
namespace {

namespace ses = sandbox::session;

// What the guest buffers of one command's stdin that the command has not read yet: past it
// the rest is dropped and the command's stdin closed (the channel has no flow control).
constexpr size_t kMaxPendingStdin = size_t{4} << 20;

struct GuestCmd {
  int pid = 0;
  UniqueFd in, out, err;  // our ends: stdin's write end, stdout's and stderr's read ends
  std::string in_pending;
  bool in_eof = false;
};

std::string idPayload(uint32_t id, std::initializer_list<uint32_t> more = {}) {
  std::string p;
  frame::putU32(p, id);
  for (uint32_t v : more) frame::putU32(p, v);
  return p;
}

using FileJson = nlohmann::json;

// The files API's put in progress: the same Upload (path checks, temporary file, rename) as
// a namespace session's, on the workspace disk.
struct PendingPut {
  std::optional<daemon::files::Upload> up;
  uint64_t left = 0;
};

class SessionServer {
 public:
  SessionServer(Channel& ch, const sandbox::RunOptions::SessionIo& io, int ws, uid_t uid, gid_t gid)
      : ch_(ch), io_(io), ws_(ws), uid_(uid), gid_(gid) {}
  void run();

 private:
  bool onFrame(const frame::Frame& f);
  bool spawn(uint32_t id, std::string_view rest);
  void onInit();
  // Reads what the pipe has now into frames; false at EOF or error (the pipe is done).
  bool pump(uint32_t id, UniqueFd& fd, frame::Type t);
  void writeStdin(GuestCmd& c);
  bool onFile(const frame::Frame& f, uint32_t id, std::string_view rest);
  void fileReply(uint32_t id, const FileJson& j) {
    std::string p = idPayload(id);
    p += j.dump(-1, ' ', false, FileJson::error_handler_t::replace);
    ch_.send(frame::Type::kFileReply, p);
  }
  void fileError(uint32_t id, const Error& e) {
    // The HTTP status the host answers with: the namespace files API's mapping, by code.
    const int c = e.code();
    const int status = c == ENOENT ? 404 : c == static_cast<int>(Errc::kLimit) ? 413
                     : c == static_cast<int>(Errc::kInvalidArgument) ? 400 : 422;
    fileReply(id, {{"error", e.message()}, {"status", status}});
  }

  Channel& ch_;
  const sandbox::RunOptions::SessionIo& io_;
  int ws_;
  uid_t uid_;
  gid_t gid_;
  std::map<uint32_t, PendingPut> puts_;
  std::map<uint32_t, GuestCmd> cmds_;
  std::deque<uint32_t> spawning_;
};

bool SessionServer::spawn(uint32_t id, std::string_view rest) {
  uint32_t counts[3];
  if (!frame::getU32s(rest, 3, counts)) return false;
  const std::string_view blob = rest.substr(12);
  auto refuse = [&](int err) {
    ch_.send(frame::Type::kCmdSpawned, idPayload(id, {static_cast<uint32_t>(-err)}));
    return true;
  };
  if (cmds_.count(id) || cmds_.size() >= ses::kMaxCommands) return refuse(EEXIST);
  UniqueFd mem(::memfd_create("corral-command", MFD_CLOEXEC));
  int in[2], out[2], err[2];
  if (!mem.valid() || ::write(mem.get(), blob.data(), blob.size()) != static_cast<ssize_t>(blob.size())) return refuse(EIO);
  if (::pipe2(in, O_CLOEXEC) != 0) return refuse(errno);
  UniqueFd in_r(in[0]), in_w(in[1]);
  if (::pipe2(out, O_CLOEXEC) != 0) return refuse(errno);
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return refuse(errno);
  UniqueFd err_r(err[0]), err_w(err[1]);
  ses::Packet p{};
  p.op = ses::Op::kSpawn;
  p.cmd = id;
  p.bytes = static_cast<uint32_t>(blob.size());
  p.argc = counts[0];
  p.envc = counts[1];
  p.pathc = counts[2];
  const int fds[4] = {mem.get(), in_r.get(), out_w.get(), err_w.get()};
  if (const int e = sendWithFds(io_.sock, &p, sizeof p, fds, 4); e != 0) return refuse(e);
  for (const UniqueFd* f : {&in_w, &out_r, &err_r}) ::fcntl(f->get(), F_SETFL, O_NONBLOCK);
  GuestCmd cmd;
  cmd.in = std::move(in_w);
  cmd.out = std::move(out_r);
  cmd.err = std::move(err_r);
  cmds_.emplace(id, std::move(cmd));
  spawning_.push_back(id);
  return true;
}

void SessionServer::writeStdin(GuestCmd& c) {
  while (c.in.valid() && !c.in_pending.empty()) {
    const ssize_t n = ::write(c.in.get(), c.in_pending.data(), c.in_pending.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {  // the command closed its stdin: the rest goes nowhere
      c.in.reset();
      c.in_pending.clear();
      return;
    }
    c.in_pending.erase(0, static_cast<size_t>(n));
  }
  if (c.in_eof && c.in_pending.empty()) c.in.reset();
}

bool SessionServer::onFrame(const frame::Frame& f) {
  uint32_t id = 0;
  if (!frame::getU32s(f.payload, 1, &id)) return false;
  const std::string_view rest = std::string_view(f.payload).substr(4);
  if (f.type == frame::Type::kCommand) return spawn(id, rest);
  if (f.type == frame::Type::kClock) {
    // A paused guest's clock stood still: the host's, after a resume.
    uint32_t t[3] = {};
    if (id != 0 || rest.size() != sizeof t || !frame::getU32s(rest, 3, t) || t[2] >= 1000000000u) return false;
    const timespec now{static_cast<time_t>(uint64_t{t[0]} << 32 | t[1]), static_cast<long>(t[2])};
    (void)::clock_settime(CLOCK_REALTIME, &now);
    return true;
  }
  if (f.type == frame::Type::kFileGet || f.type == frame::Type::kFilePut || f.type == frame::Type::kFileData) return onFile(f, id, rest);
  auto it = cmds_.find(id);
  if (f.type == frame::Type::kCmdStdin) {
    if (it == cmds_.end()) return true;  // it ended already
    GuestCmd& c = it->second;
    if (rest.empty()) c.in_eof = true;
    else if (c.in.valid() && c.in_pending.size() + rest.size() <= kMaxPendingStdin) c.in_pending.append(rest);
    else c.in.reset();  // over the bound: the command reads EOF, not a hole in its input
    writeStdin(c);
    return true;
  }
  if (f.type == frame::Type::kCmdSignal) {
    uint32_t sig = 0;
    if (!frame::getU32s(rest, 1, &sig) || sig == 0 || sig > 64) return false;
    if (it == cmds_.end() || it->second.pid <= 0) return true;
    ses::Packet p{};
    p.op = ses::Op::kSignal;
    p.cmd = id;
    p.pid = it->second.pid;
    p.value = static_cast<int32_t>(sig);
    (void)!::send(io_.sock, &p, sizeof p, MSG_NOSIGNAL);
    return true;
  }
  return false;  // anything else has no place in a session
}

bool SessionServer::onFile(const frame::Frame& f, uint32_t id, std::string_view rest) {
  namespace files = daemon::files;
  if (f.type == frame::Type::kFileData) {
    auto it = puts_.find(id);
    if (it == puts_.end() || rest.size() > it->second.left) return false;
    PendingPut& put = it->second;
    put.left -= rest.size();
    if (put.up) {
      if (auto w = put.up->write(rest); !w) {
        fileError(id, w.error());
        put.up.reset();  // removed, never committed; the rest of its data is read and dropped
      }
    }
    if (put.left == 0) {
      if (put.up) {
        auto done = put.up->commit();
        if (done) fileReply(id, {{"size", (*done).value("bytes", uint64_t{0})}});
        else fileError(id, done.error());
      }
      puts_.erase(it);
    }
    return true;
  }
  FileJson j = FileJson::parse(rest.begin(), rest.end(), nullptr, false);
  if (!j.is_object() || !j.contains("path") || !j["path"].is_string()) return false;
  auto path = files::checkedPath(j["path"].get<std::string>());
  if (f.type == frame::Type::kFileGet) {
    if (!path) {
      fileError(id, path.error());
      return true;
    }
    auto d = files::openDownload(ws_, *path);
    if (!d) {
      fileError(id, d.error());
      return true;
    }
    if (d->size > frame::kMaxSessionFileBytes) {
      fileError(id, Error(Errc::kLimit, "a VM session's file is at most " + std::to_string(frame::kMaxSessionFileBytes) + " bytes here"));
      return true;
    }
    std::string data;
    char buf[65536];
    ssize_t n;
    while (data.size() <= frame::kMaxSessionFileBytes && (n = ::read(d->fd.get(), buf, sizeof buf)) > 0) data.append(buf, static_cast<size_t>(n));
    if (data.size() > frame::kMaxSessionFileBytes) {
      fileError(id, Error(Errc::kLimit, "the file grew past the cap while it was read"));
      return true;
    }
    fileReply(id, {{"size", data.size()}});
    for (size_t off = 0; off < data.size(); off += frame::kMaxPayload - 4) {
      std::string p = idPayload(id);
      p.append(data, off, frame::kMaxPayload - 4);
      ch_.send(frame::Type::kFileBytes, p);
    }
    return true;
  }
  // kFilePut: the data frames follow whether or not the put can be done; they are counted.
  if (!j.contains("size") || !j["size"].is_number_unsigned() || puts_.count(id)) return false;
  const uint64_t size = j["size"].get<uint64_t>();
  if (size > frame::kMaxSessionFileBytes) return false;  // the host never sends more
  PendingPut put;
  put.left = size;
  if (!path) {
    fileError(id, path.error());
  } else {
    auto up = files::Upload::begin(ws_, *path, uid_, gid_, frame::kMaxSessionFileBytes);
    if (up) put.up.emplace(std::move(*up));
    else fileError(id, up.error());
  }
  if (size == 0) {
    if (put.up) {
      auto done = put.up->commit();
      if (done) fileReply(id, {{"size", 0}});
      else fileError(id, done.error());
    }
    return true;
  }
  puts_.emplace(id, std::move(put));
  return true;
}

bool SessionServer::pump(uint32_t id, UniqueFd& fd, frame::Type t) {
  char buf[frame::kMaxPayload - 4];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) {
      fd.reset();
      return false;
    }
    std::string p = idPayload(id);
    p.append(buf, static_cast<size_t>(n));
    ch_.send(t, p);
  }
}

void SessionServer::onInit() {
  alignas(ses::Packet) char buf[128];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(io_.sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n <= 0) return;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))  // no terminal is asked for: none is kept
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
      ::close(fd);
    }
  if (static_cast<size_t>(n) == sizeof(sandbox::sync::Message)) {
    sandbox::sync::Message m;
    std::memcpy(&m, buf, sizeof m);
    if (!spawning_.empty() && m.type == sandbox::sync::Type::kExecFailed)
      ch_.send(frame::Type::kCmdFailed, idPayload(spawning_.front(), {static_cast<uint32_t>(m.step), static_cast<uint32_t>(m.err)}));
    return;
  }
  if (static_cast<size_t>(n) != sizeof(ses::Packet)) return;
  ses::Packet p;
  std::memcpy(&p, buf, sizeof p);
  if (p.magic != ses::kMagic) return;
  auto it = cmds_.find(p.cmd);
  if (it == cmds_.end()) return;
  if (p.op == ses::Op::kSpawned) {
    if (!spawning_.empty() && spawning_.front() == p.cmd) spawning_.pop_front();
    ch_.send(frame::Type::kCmdSpawned, idPayload(p.cmd, {static_cast<uint32_t>(p.pid)}));
    if (p.pid <= 0) cmds_.erase(it);
    else it->second.pid = p.pid;
  } else if (p.op == ses::Op::kExited) {
    // Its output so far before its status (a background process still holding the pipes is
    // not waited for, as in a namespace session's shim).
    GuestCmd& c = it->second;
    if (c.out.valid()) pump(p.cmd, c.out, frame::Type::kCmdStdout);
    if (c.err.valid()) pump(p.cmd, c.err, frame::Type::kCmdStderr);
    ch_.send(frame::Type::kCmdExited, idPayload(p.cmd, {static_cast<uint32_t>(p.value)}));
    cmds_.erase(it);
  }
}

void SessionServer::run() {
  for (;;) {
    for (;;) {  // what the last read brought
      auto f = ch_.buffered();
      if (!f) return;
      if (!*f) break;
      if (!onFrame(**f)) return;
    }
    std::vector<pollfd> fds = {{ch_.fd(), POLLIN, 0}, {io_.sock, POLLIN, 0}, {io_.pidfd, POLLIN, 0}};
    struct Polled {
      uint32_t id;
      int which;  // 0 stdout, 1 stderr, 2 stdin
    };
    std::vector<Polled> polled;
    for (auto& [id, c] : cmds_) {
      if (c.out.valid()) fds.push_back({c.out.get(), POLLIN, 0}), polled.push_back({id, 0});
      if (c.err.valid()) fds.push_back({c.err.get(), POLLIN, 0}), polled.push_back({id, 1});
      if (c.in.valid() && !c.in_pending.empty()) fds.push_back({c.in.get(), POLLOUT, 0}), polled.push_back({id, 2});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[2].revents) return;  // init is gone: the session with it
    if (fds[1].revents & POLLIN) onInit();
    for (size_t i = 0; i < polled.size(); ++i) {
      if (!fds[3 + i].revents) continue;
      auto it = cmds_.find(polled[i].id);
      if (it == cmds_.end()) continue;  // exited in onInit() above
      GuestCmd& c = it->second;
      if (polled[i].which == 2) writeStdin(c);
      else pump(polled[i].id, polled[i].which == 0 ? c.out : c.err, polled[i].which == 0 ? frame::Type::kCmdStdout : frame::Type::kCmdStderr);
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR))
      if (!ch_.fill()) return;
  }
}

}  // namespace

void serveSession(Channel& ch, sandbox::SandboxSpec spec) {
  // The workspace disk is the session's /workspace, bound (not staged): what one command
  // writes the next one reads. Its root belongs to the sandbox's uid, as a namespace
  // session's workspace directory does.
  const sandbox::userns::IdMapPlan ids = sandbox::userns::planIdMap(0, 0);
  if (::chown(spec.workspace->c_str(), ids.host_uid, ids.host_gid) != 0) {
    ch.send(frame::Type::kSessionUp, std::string("chown the workspace disk: ") + std::strerror(errno));
    return;
  }
  // The files API's root: the disk as the agent mounted it, which the sandbox cannot unmount.
  UniqueFd ws(::open(spec.workspace->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!ws.valid()) {
    ch.send(frame::Type::kSessionUp, std::string("open the workspace disk: ") + std::strerror(errno));
    return;
  }
  spec.workspace_bind = *spec.workspace;
  spec.workspace.reset();
  spec.outputs.clear();
  spec.argv = {"/bin/true"};  // never run: the session's init starts only what it is sent
  sandbox::RunOptions options;
  bool up = false;
  options.session = [&](const sandbox::RunOptions::SessionIo& io) {
    up = true;
    ch.send(frame::Type::kSessionUp, "");
    SessionServer(ch, io, ws.get(), ids.host_uid, ids.host_gid).run();
  };
  auto ran = sandbox::runLinux(spec, options);
  if (!up) ch.send(frame::Type::kSessionUp, ran ? std::string("the session's sandbox ended at once") : ran.error().message());
}

}  // namespace corral::vm::guest
