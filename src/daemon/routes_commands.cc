// SPDX-License-Identifier: Apache-2.0
// /v1/sessions/{id}/commands[/{n}[/output|/signal|/stdin|/terminal]]: start, inspect, stream,
// signal, feed stdin, attach a terminal.
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "audit/base64.h"
#include "base/read_fd.h"
#include "base/unique_fd.h"
#include "daemon/api.h"
#include "daemon/command_io.h"
#include "daemon/session_spec.h"
#include "daemon/sessions.h"
#include "daemon/terminal_frame.h"
#include "daemon/terminal_hold.h"
#include "daemon/terminal_relay.h"
#include "policy/units.h"

namespace corral::daemon {
namespace {

constexpr int kLivenessCheckMs = 2000;  // an idle stream asks whether the shim is still there
constexpr size_t kFrameBytes = size_t{48} * 1024;
constexpr int kStdinWaitMs = 60'000;  // a command that reads nothing this long fails the write

// Sends what was appended to a spool file since the last call, as NDJSON frames.
bool pumpFile(int fd, const char* stream, const ChunkWriter& write) {
  std::string buf(kFrameBytes, '\0');
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    const Json frame = {{"stream", stream}, {"data", audit::base64Encode(std::string_view(buf.data(), static_cast<size_t>(n)))}};
    if (!write(dumpJson(frame) + "\n")) return false;
  }
}

// Streams a command's output until its status exists (then the status), or until its
// session's shim is gone (then {"lost": true}). Reads the spool files the shim writes, so a
// stream begun after a daemon restart still starts at the first byte.
void streamCommand(const std::string& dir, const std::string& session, Sessions& sessions, const ChunkWriter& write) {
  UniqueFd ino(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (ino.valid()) ::inotify_add_watch(ino.get(), dir.c_str(), IN_MODIFY | IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE);
  UniqueFd out(::open((dir + "/stdout").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  UniqueFd err(::open((dir + "/stderr").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  for (;;) {
    // The status first: the shim writes it after the last byte of output, so what is read
    // after seeing it is all there is.
    UniqueFd status(::open((dir + "/status.json").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!out.valid()) out.reset(::open((dir + "/stdout").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!err.valid()) err.reset(::open((dir + "/stderr").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (out.valid() && !pumpFile(out.get(), "stdout", write)) return;
    if (err.valid() && !pumpFile(err.get(), "stderr", write)) return;
    if (status.valid()) {
      auto text = readUpTo(status.get(), 65536, "status.json");
      auto j = text ? parseJson(*text) : Result<Json>(text.error());
      if (write(dumpJson({{"exit", j ? *j : Json{{"exit_code", 125}, {"error", "unreadable status"}}}}) + "\n"))
        write({});  // the end, before closing the inotify instance (an RCU wait of milliseconds)
      return;
    }
    pollfd p{ino.get(), POLLIN, 0};
    const int rc = ::poll(&p, 1, kLivenessCheckMs);
    if (rc > 0) {
      char events[4096];
      while (::read(ino.get(), events, sizeof events) > 0) {
      }
    } else if (rc == 0 && !sessions.alive(session)) {
      if (write(dumpJson({{"lost", true}}) + "\n")) write({});
      return;
    }
  }
}

Result<int64_t> commandNumber(const std::string& text) {
  auto n = policy::parseCount(text, 1ull << 40);
  if (!n) return Error(kNotFound, "no command " + policy::printable(text));
  return static_cast<int64_t>(*n);
}

// Writes all of data to a command's stdin pipe, waiting while it is full (the command reads
// slowly: the request is slowed, nothing piles up here). EPIPE: the command stopped reading.
Result<void> writeStdin(int fd, std::string_view data, int64_t n) {
  while (!data.empty()) {
    const ssize_t w = ::write(fd, data.data(), data.size());
    if (w > 0) {
      data.remove_prefix(static_cast<size_t>(w));
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EPIPE) return Error(kConflict, "command " + std::to_string(n) + " no longer reads its stdin");
    if (w < 0 && errno != EAGAIN) return sysError("stdin of command " + std::to_string(n));
    pollfd p{fd, POLLOUT, 0};
    const int rc = ::poll(&p, 1, kStdinWaitMs);
    if (rc == 0) return Error(kConflict, "command " + std::to_string(n) + " read none of its stdin for " + std::to_string(kStdinWaitMs / 1000) + " s");
    if (rc > 0 && (p.revents & POLLERR)) return Error(kConflict, "command " + std::to_string(n) + " no longer reads its stdin");
  }
  return {};
}

// The shim keeps a copy of every command's stdin and terminal (shim_loop.cc): a daemon that has
// none of a command's (it restarted since the command started) gets it back from the shim, over
// the control link (SCM_RIGHTS), for the caller's own command only. Callers hold ioMutex(id) over
// this and their first use, so two requests racing after a restart get one copy between them.
// One lock per session (never shared with another session or uid): a shim slow to answer holds
// up its own session's requests only. Kept while some request holds it, then forgotten.
std::shared_ptr<std::mutex> ioMutex(const std::string& session) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<std::mutex>> locks;
  std::lock_guard lock(mu);
  std::erase_if(locks, [](const auto& kv) { return kv.second.expired(); });
  std::weak_ptr<std::mutex>& slot = locks[session];
  std::shared_ptr<std::mutex> m = slot.lock();
  if (!m) {
    m = std::make_shared<std::mutex>();
    slot = m;
  }
  return m;
}

Result<void> reobtain(ApiContext& ctx, const Peer& peer, const std::string& id, int64_t n, CommandIo::Kind kind, const std::string& dir) {
  const bool tty = kind == CommandIo::Kind::kTerminal;
  if (commandIo().has(id, n) || (tty && !terminalHold().describe(id, n).is_null())) return {};
  auto fd = ctx.sessions.commandIoFromShim(peer, id, n, tty);
  if (!fd) return fd.error().code() == static_cast<int>(kConflict) ? Result<void>{} : Result<void>(fd.error());  // none: the usual 409 follows
  ::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) | O_NONBLOCK);
  commandIo().putIfAbsent(id, n, kind, std::move(*fd), dir);
  return {};
}

// use() (the command's first use of its stdin or terminal) after reobtain(), both under ioMutex(id).
template <typename Use>
auto withCommandIo(ApiContext& ctx, const Peer& peer, const std::string& id, int64_t n, CommandIo::Kind kind, const std::string& dir,
                   Use use) -> decltype(use()) {
  const auto io_mu = ioMutex(id);
  std::lock_guard lock(*io_mu);
  RETURN_IF_ERROR(reobtain(ctx, peer, id, n, kind, dir));
  return use();
}

// POST .../stdin: the streamed body into the pipe; it stays open for the next POST. DELETE
// closes it (the command reads end of file).
ApiResponse stdinRoute(const ApiRequest& req, ApiContext& ctx, const std::string& id, int64_t n) {
  auto dir = ctx.sessions.commandDir(req.peer, id, n);  // the caller's command, or 404
  if (!dir) return errorResponse(dir.error());
  if (req.method == "DELETE") {
    if (!req.body.empty()) return errorResponse(400, "invalid_request", "DELETE takes no body");
    // Every copy: the daemon's (refused while a POST writes to it) and the shim's.
    const auto io_mu = ioMutex(id);  // a start's put and a re-obtain take it too: nothing lands in between
    std::lock_guard lock(*io_mu);
    const bool here = commandIo().has(id, n);
    if (here) {
      auto fd = commandIo().take(id, n, CommandIo::Kind::kStdin);
      if (!fd) return errorResponse(fd.error());
    }
    auto in_shim = ctx.sessions.closeCommandIoInShim(req.peer, id, n, false);
    if (!in_shim) return errorResponse(in_shim.error());
    if (!here && !*in_shim)
      return errorResponse(Error(kConflict, "command " + std::to_string(n) + " has no open stdin (none was asked for, or it was closed)"));
    return {200, Json{{"id", n}, {"session", id}, {"stdin", "closed"}}, nullptr};
  }
  if (req.method != "POST") return errorResponse(405, "method_not_allowed", "POST, DELETE");
  if (!req.body_stream) return errorResponse(400, "invalid_request", "a body is required");
  auto fd = withCommandIo(ctx, req.peer, id, n, CommandIo::Kind::kStdin, *dir,
                          [&] { return commandIo().borrow(id, n, CommandIo::Kind::kStdin); });
  if (!fd) return errorResponse(fd.error());
  Result<void> wrote;
  auto got = req.body_stream([&](std::string_view piece) -> Result<void> {
    wrote = writeStdin(*fd, piece, n);
    return wrote;
  });
  commandIo().giveBack(id, n);
  if (!wrote) return errorResponse(wrote.error());
  if (!got) return errorResponse(got.error().code() == static_cast<int>(Errc::kLimit) ? 413 : 400, "invalid_request", got.error().message());
  return {200, Json{{"id", n}, {"session", id}, {"stdin", "open"}, {"bytes", *got}}, nullptr};
}

// GET .../terminal with Upgrade: corral-terminal.v1: 101, then frames (terminal_relay.h). The
// first attach takes the master the command started with; one after the client left re-attaches
// (terminal_hold.h) and begins with a scrollback frame. One client at a time: 409 meanwhile.
ApiResponse terminalRoute(const ApiRequest& req, ApiContext& ctx, const std::string& id, int64_t n) {
  if (req.method != "GET") return errorResponse(405, "method_not_allowed", "GET");
  if (!req.body.empty()) return errorResponse(400, "invalid_request", "GET takes no body");
  if (req.upgrade != terminal::kProtocol)
    return errorResponse(426, "upgrade_required", std::string("a terminal is an upgraded connection: Connection: Upgrade, Upgrade: ") + terminal::kProtocol);
  auto dir = ctx.sessions.commandDir(req.peer, id, n);  // the caller's command, or 404
  if (!dir) return errorResponse(dir.error());
  auto claim = withCommandIo(ctx, req.peer, id, n, CommandIo::Kind::kTerminal, *dir, [&] { return terminalHold().attach(id, n, *dir); });
  if (!claim) {
    if (::access((*dir + "/status.json").c_str(), F_OK) == 0)
      return errorResponse(409, "conflict", "command " + std::to_string(n) + " has ended and no terminal of it is kept: its report is GET .../commands/" + std::to_string(n));
    return errorResponse(claim.error());
  }
  // Invariant: the claim is given back on every way out: the relay's end decides how, and an
  // upgrade that never runs (the 101 could not be written) detaches it, so the terminal stays.
  struct Held {
    std::string id;
    int64_t n = 0;
    TerminalRelay relay;
    bool settled = false;
    ~Held() {
      // cppcheck-suppress knownConditionTrueFalse ; set by the upgrade's lambda, which cppcheck does not follow
      if (!settled) terminalHold().detach(id, n, std::move(relay.master), relay.first.substr(relay.first.size() - relay.first_output));
    }
  };
  auto held = std::make_shared<Held>();
  held->id = id;
  held->n = n;
  held->relay.master = std::move(claim->master);
  held->relay.cmd_dir = *dir;
  if (claim->reattach) {
    const Json info = {{"scrollback_bytes", claim->scrollback.size()}, {"dropped_bytes", claim->dropped}};
    held->relay.first = terminal::encode(terminal::Frame::kScrollback, dumpJson(info));
    if (!claim->scrollback.empty()) held->relay.first += terminal::encode(terminal::Frame::kData, claim->scrollback);
    held->relay.first_output = claim->scrollback.size();
  }
  Sessions& sessions = ctx.sessions;
  ApiResponse res{101, nullptr, nullptr};
  res.upgrade_protocol = terminal::kProtocol;
  res.upgrade = [held, peer = req.peer, &sessions](int fd, std::string early) {
    TerminalRelay& r = held->relay;
    r.client = fd;
    r.early = std::move(early);
    r.alive = [&sessions, id = held->id] { return sessions.alive(id); };
    const RelayEnd end = relayTerminal(r);
    held->settled = true;
    // A client gone before the report: the terminal stays (an ended one with its scrollback).
    if (end.why == RelayEnd::kClientGone) {
      terminalHold().detach(held->id, held->n, std::move(r.master), end.unsent);
    } else {
      // Under the session's io lock: an attach between the two must not re-obtain the shim's copy.
      const auto io_mu = ioMutex(held->id);
      std::lock_guard lock(*io_mu);
      terminalHold().forget(held->id, held->n);
      r.master.reset();  // a hangup for the command (a protocol error), or nothing left to hold
      // The shim's copy too, or a protocol error would hang nothing up (an ended command's is gone).
      if (end.why == RelayEnd::kRefused) (void)sessions.closeCommandIoInShim(peer, held->id, held->n, true);
    }
    (void)sessions.command(peer, held->id, held->n);  // its end recorded (and its event sent) at once
  };
  return res;
}

}  // namespace

std::optional<ApiResponse> routeCommands(const ApiRequest& req, ApiContext& ctx) {
  const auto& seg = req.segments;
  if (seg.size() < 4 || seg.size() > 6 || seg[1] != "sessions" || seg[3] != "commands") return std::nullopt;
  const std::string& id = seg[2];
  if (seg.size() == 4) {
    if (req.method != "POST") return errorResponse(405, "method_not_allowed", "POST");
    auto body = jsonBody(req);
    if (!body) return errorResponse(body.error());
    auto cmd = parseCommandSpec(*body);
    if (!cmd) return errorResponse(cmd.error());
    UniqueFd io;
    // A command with stdin or a terminal starts under its session's io lock, held until its
    // descriptor is stored: a request for it meanwhile (its number is predictable) waits, so a
    // re-obtain from the shim or a DELETE cannot interleave with the store.
    std::shared_ptr<std::mutex> io_mu;
    std::unique_lock<std::mutex> io_lock;
    if (cmd->stdin_open || cmd->tty) {
      io_mu = ioMutex(id);
      io_lock = std::unique_lock(*io_mu);
    }
    auto started = ctx.sessions.startCommand(req.peer, id, *cmd, &io);
    if (!started) return errorResponse(started.error());
    if ((cmd->stdin_open || cmd->tty) && !io.valid()) return errorResponse(500, "internal", "the shim passed no stdin or terminal");
    const int64_t n = (*started)["id"].get<int64_t>();
    if (io.valid()) {
      ::fcntl(io.get(), F_SETFL, ::fcntl(io.get(), F_GETFL) | O_NONBLOCK);
      const auto kind = cmd->tty ? CommandIo::Kind::kTerminal : CommandIo::Kind::kStdin;
      auto dir = ctx.sessions.commandDir(req.peer, id, n);
      commandIo().putIfAbsent(id, n, kind, std::move(io), dir ? *dir : std::string());
      (*started)[cmd->tty ? "tty" : "stdin"] = true;
    }
    return ApiResponse{201, std::move(*started), nullptr};
  }
  auto n = commandNumber(seg[4]);
  if (!n) return errorResponse(n.error());
  if (seg.size() == 5) {
    if (req.method != "GET") return errorResponse(405, "method_not_allowed", "GET");
    if (!req.body.empty()) return errorResponse(400, "invalid_request", "GET takes no body");
    auto cmd = ctx.sessions.command(req.peer, id, *n);
    // A tty command whose client attached: whether one is attached now (terminal_hold.h).
    if (cmd && cmd->is_object())
      if (Json t = terminalHold().describe(id, *n); !t.is_null()) (*cmd)["terminal"] = std::move(t);
    return answer(std::move(cmd));
  }
  if (seg[5] == "output") {
    if (req.method != "GET") return errorResponse(405, "method_not_allowed", "GET");
    if (!req.body.empty()) return errorResponse(400, "invalid_request", "GET takes no body");
    auto dir = ctx.sessions.commandDir(req.peer, id, *n);
    if (!dir) return errorResponse(dir.error());
    Sessions& sessions = ctx.sessions;
    return ApiResponse{200, nullptr, [d = *dir, id, n = *n, peer = req.peer, &sessions](const ChunkWriter& w) {
                         streamCommand(d, id, sessions, w);
                         (void)sessions.command(peer, id, n);  // its end recorded (and its event sent) at once
                       }};
  }
  if (seg[5] == "stdin") return stdinRoute(req, ctx, id, *n);
  if (seg[5] == "terminal") return terminalRoute(req, ctx, id, *n);
  if (seg[5] == "signal") {
    if (req.method != "POST") return errorResponse(405, "method_not_allowed", "POST");
    auto body = jsonBody(req);
    if (!body) return errorResponse(body.error());
    auto f = Fields::of(*body, "body", {"signal"});
    if (!f) return errorResponse(f.error());
    auto sig = f->count("signal", 64);
    if (!sig) return errorResponse(sig.error());
    if (!*sig) return errorResponse(400, "invalid_request", "body.signal: required");
    return answer(ctx.sessions.signalCommand(req.peer, id, *n, static_cast<int>(**sig)));
  }
  return std::nullopt;
}

}  // namespace corral::daemon
