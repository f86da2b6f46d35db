// SPDX-License-Identifier: Apache-2.0
// The client side of a session terminal: raw mode, frames both ways, SIGWINCH as resize frames.
#include "cli/session_terminal.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "base/unique_fd.h"
#include "cli/daemon_args.h"
#include "cli/daemon_call.h"
#include "daemon/api_client.h"
#include "daemon/terminal_frame.h"

namespace corral::cli {
namespace {

using daemon::Json;
namespace term = daemon::terminal;
using term::Frame;

// This terminal in raw mode for the object's life: every way out (return, error, a signal the
// loop turns into a return) passes the destructor, which puts the saved mode back.
class RawMode {
 public:
  explicit RawMode(int fd) : fd_(fd) {
    if (!::isatty(fd) || ::tcgetattr(fd, &saved_) != 0) return;
    termios raw = saved_;
    ::cfmakeraw(&raw);
    active_ = ::tcsetattr(fd, TCSANOW, &raw) == 0;  // what was typed ahead is kept
  }
  ~RawMode() {
    if (active_) ::tcsetattr(fd_, TCSADRAIN, &saved_);
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

// The size of this terminal, or 24x80 when stdin is none.
std::pair<uint16_t, uint16_t> terminalSize() {
  winsize ws{};
  if (::ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
    return {std::min<uint16_t>(ws.ws_row, term::kMaxSide), std::min<uint16_t>(ws.ws_col, term::kMaxSide)};
  return {24, 80};
}

bool writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool sendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Blocks the signals the relay handles itself (read from a signalfd) and unblocks them again.
class HandledSignals {
 public:
  HandledSignals() {
    sigemptyset(&set_);
    for (int sig : {SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set_, sig);
    ::sigprocmask(SIG_BLOCK, &set_, &old_);
    fd_.reset(::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  ~HandledSignals() {
    fd_.reset();
    // One that arrived meanwhile is taken here, so unblocking does not deliver it after the
    // terminal was restored (SIGWINCH would be harmless; SIGINT would be a second one).
    const timespec zero{0, 0};
    while (::sigtimedwait(&set_, nullptr, &zero) > 0) {
    }
    ::sigprocmask(SIG_SETMASK, &old_, nullptr);
  }
  HandledSignals(const HandledSignals&) = delete;
  HandledSignals& operator=(const HandledSignals&) = delete;
  int fd() const { return fd_.get(); }

 private:
  sigset_t set_, old_;
  UniqueFd fd_;
};

}  // namespace

namespace {

// Attaches to command n's terminal (its first attach, or a re-attach: api.md, Terminals) and
// relays it until its report; the exit status as terminalExec's.
int relayCommand(const std::string& id, int64_t n, bool json_report, bool reattach) {
  const bool interactive = ::isatty(0);
  auto client = daemon::ApiClient::connect();
  if (!client) return failLine("session", client.error().message());
  std::string in;  // bytes from the daemon not yet parsed
  auto conn = client->upgrade("/v1/sessions/" + id + "/commands/" + std::to_string(n) + "/terminal", term::kProtocol, &in);
  if (!conn) return failLine("session", conn.error().message());
  HandledSignals signals;
  if (reattach) {  // this terminal's size may differ from the one the command last had
    const auto [r, c] = terminalSize();
    if (!sendAll(conn->get(), term::encode(Frame::kResize, term::resizePayload(r, c)))) return failLine("session", "the terminal connection closed");
  }
  std::optional<Json> report;
  std::string error;
  int stop_signal = 0;
  {
    RawMode raw(0);
    bool stdin_open = true;
    char buf[16384];
    for (;;) {
      Frame type;
      std::string payload;
      auto got = term::takeFrame(in, &type, &payload);
      if (!got) {
        error = got.error().message();
        break;
      }
      if (*got) {
        if (type == Frame::kData && !writeAll(1, payload)) break;
        if (type == Frame::kScrollback) {  // a re-attach: what the command wrote meanwhile follows
          auto j = daemon::parseJson(payload);
          const uint64_t dropped = j && j->is_object() ? j->value("dropped_bytes", uint64_t{0}) : 0;
          if (dropped) std::fprintf(stderr, "[corral: %llu earlier bytes of output were dropped]\r\n", static_cast<unsigned long long>(dropped));
        }
        if (type == Frame::kExit) {
          auto j = daemon::parseJson(payload);
          report = j ? *j : Json{{"exit_code", kExitRefused}, {"error", "an unreadable report"}};
          break;
        }
        if (type == Frame::kError) {
          auto j = daemon::parseJson(payload);
          error = j && j->contains("error") && (*j)["error"].is_object() ? (*j)["error"].value("message", "terminal refused") : "terminal refused";
          break;
        }
        continue;
      }
      pollfd fds[3] = {{conn->get(), POLLIN, 0}, {stdin_open ? 0 : -1, POLLIN, 0}, {signals.fd(), POLLIN, 0}};
      if (::poll(fds, 3, -1) < 0 && errno != EINTR) break;
      if (fds[2].revents & POLLIN) {
        signalfd_siginfo si;
        while (::read(signals.fd(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
          if (si.ssi_signo == SIGWINCH) {
            const auto [r, c] = terminalSize();
            if (!sendAll(conn->get(), term::encode(Frame::kResize, term::resizePayload(r, c)))) break;
          } else {
            stop_signal = static_cast<int>(si.ssi_signo);  // killed from outside: restore and leave
          }
        }
        if (stop_signal) break;
      }
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t r = ::read(0, buf, sizeof buf);
        if (r > 0) {
          if (!sendAll(conn->get(), term::encode(Frame::kData, std::string_view(buf, static_cast<size_t>(r))))) break;
        } else if (r == 0 || errno != EINTR) {
          stdin_open = false;
          // Piped input ended: the terminal's end-of-file character, as typing ^D would send.
          if (!interactive && !sendAll(conn->get(), term::encode(Frame::kData, "\x04"))) break;
        }
      }
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t r = ::recv(conn->get(), buf, sizeof buf, 0);
        if (r <= 0) break;
        in.append(buf, static_cast<size_t>(r));
      }
    }
  }  // the terminal's mode is back from here on
  if (stop_signal) {
    std::fprintf(stderr, "corral: session: the terminal was closed by signal %d (the command goes on, detached: corral session attach %s --command %lld)\n",
                 stop_signal, id.c_str(), static_cast<long long>(n));
    return 128 + stop_signal;
  }
  if (!report) return failLine("session", error.empty() ? "the terminal connection ended without a status" : error);
  if (json_report) std::fprintf(stderr, "%s\n", daemon::dumpJson(*report).c_str());
  if (report->contains("exit_code") && (*report)["exit_code"].is_number_integer()) return (*report)["exit_code"].get<int>();
  return kExitRefused;
}

}  // namespace

int terminalExec(const std::string& id, Json body, bool json_report) {
  const auto [rows, cols] = terminalSize();
  body["tty"] = {{"rows", rows}, {"cols", cols}};
  auto started = apiCall("session", "POST", "/v1/sessions/" + id + "/commands", body, 201);
  if (!started) return kExitRefused;
  return relayCommand(id, (*started)["id"].get<int64_t>(), json_report, false);
}

int attach(const std::vector<std::string>& args) {
  auto s = scanArgs(args, {{"--env", true, true}, {"--cwd", true}, {"--command", true}, {"--json", false}}, 1);
  if (!s) return failLine("session", "attach: " + s.error().message());
  if (s->positional.size() != 1)
    return failLine("session", "attach: usage: corral session attach ID [--env K=V]... [--cwd REL] [-- CMD [ARGS...]] | ID --command N");
  if (s->has("--command")) {  // re-attach to a running terminal command, started by nothing new
    if (s->has("--env") || s->has("--cwd") || !s->rest.empty())
      return failLine("session", "attach: --command N re-attaches to a command already running: no --env, --cwd or CMD");
    const std::string text = s->get("--command");
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || n < 1) return failLine("session", "attach: --command: not a command number: " + text);
    return relayCommand(s->positional[0], n, s->has("--json"), true);
  }
  // bash when the sandbox has it, else sh: interactive either way (its stdin is the terminal).
  std::vector<std::string> argv = s->rest;
  if (argv.empty()) argv = {"/bin/sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash -i; exec sh -i"};
  Json body = {{"argv", argv}};
  if (s->has("--env")) body["env"] = s->all("--env");
  if (s->has("--cwd")) body["cwd"] = s->get("--cwd");
  return terminalExec(s->positional[0], body, s->has("--json"));
}

}  // namespace corral::cli
