// SPDX-License-Identifier: Apache-2.0
// Test-side child processes: fork/exec with pipes and a pidfd, line reads, deadlines.
#include "process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

extern char** environ;

namespace corral::testing {
namespace {

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
      out += static_cast<char>(std::strtol(s.substr(i + 2, 2).c_str(), nullptr, 16));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> buildEnv(const RunOptions& opts) {
  std::vector<std::string> env;
  if (opts.env) {
    env = *opts.env;
  } else {
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
  }
  for (const auto& kv : opts.env_extra) {
    std::string key = kv.substr(0, kv.find('=') + 1);
    std::erase_if(env, [&](const std::string& e) { return e.compare(0, key.size(), key) == 0; });
    env.push_back(kv);
  }
  return env;
}

void setNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Appends what fd has now; returns false at EOF or on error.
bool drain(int fd, std::string* out) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

[[noreturn]] void childFail(int errfd) {
  int e = errno;
  (void)!write(errfd, &e, sizeof e);
  _exit(127);
}

}  // namespace

bool ProbeLine::has(const std::string& key) const {
  return raw.find(" " + key + "=") != std::string::npos || raw.rfind(key + "=", 0) == 0;
}

std::string ProbeLine::get(const std::string& key) const {
  std::istringstream in(raw);
  for (std::string tok; in >> tok;)
    if (tok.rfind(key + "=", 0) == 0) return unescape(tok.substr(key.size() + 1));
  return "";
}

long long ProbeLine::num(const std::string& key) const {
  std::string v = get(key);
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(v);
}

std::vector<std::string> ProbeLine::list(const std::string& key) const {
  std::istringstream in(raw);
  std::vector<std::string> out;
  for (std::string tok; in >> tok;) {
    if (tok.rfind(key + "=", 0) != 0) continue;
    std::istringstream items(tok.substr(key.size() + 1));
    for (std::string item; std::getline(items, item, ',');)
      if (!item.empty()) out.push_back(unescape(item));
  }
  return out;
}

bool ProbeLine::word(const std::string& w) const {
  std::istringstream in(raw);
  for (std::string tok; in >> tok;)
    if (tok == w) return true;
  return false;
}

ProbeLine parseProbeLine(const std::string& line) {
  ProbeLine p;
  p.raw = line;
  std::string first = line.substr(0, line.find(' '));
  if (first.rfind("errno=", 0) == 0) {
    p.status = "errno";
    p.err = first.substr(6);
  } else if (first == "ok" || first == "refused") {
    p.status = first;
  }
  return p;
}

ProbeLine RunResult::probe() const { return parseProbeLine(out.substr(0, out.find('\n'))); }

std::vector<std::string> RunResult::stderrLines() const {
  std::vector<std::string> lines;
  std::istringstream in(err);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  if (report && !lines.empty()) lines.pop_back();
  return lines;
}

std::string RunResult::reportStr(const char* key) const {
  if (!report || !report->contains(key) || !(*report)[key].is_string()) return "";
  return (*report)[key].get<std::string>();
}

long long RunResult::reportInt(const char* key) const {
  if (!report || !report->contains(key) || !(*report)[key].is_number()) return -1;
  return (*report)[key].get<long long>();
}

std::string RunResult::describe() const {
  auto cut = [](const std::string& s) { return s.size() > 3000 ? s.substr(0, 3000) + "...[cut]" : s; };
  std::ostringstream o;
  o << "\n  ran: " << argv_text << "\n  exit=" << exit_code << " signal=" << term_signal
    << (deadline_hit ? " (test deadline hit, killed)" : "") << "\n  stdout: " << cut(out)
    << "\n  stderr: " << cut(err);
  return o.str();
}

Process Process::start(const std::vector<std::string>& argv, const RunOptions& opts) {
  Process p;
  for (const auto& a : argv) p.result_.argv_text += (p.result_.argv_text.empty() ? "" : " ") + a;
  std::vector<std::string> env = buildEnv(opts);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  int out[2], err[2], errpipe[2], in[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(errpipe, O_CLOEXEC)) std::abort();
  int stdin_src = opts.stdin_fd;
  if (opts.stdin_pipe) {
    if (pipe2(in, O_CLOEXEC)) std::abort();
    stdin_src = in[0];
  } else if (stdin_src < 0) {
    stdin_src = in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  // Park the fds to leak above any target number, so the dup2s below cannot clobber them.
  std::vector<std::pair<int, int>> leaks;
  for (auto [src, dst] : opts.leak_fds) leaks.emplace_back(fcntl(src, F_DUPFD_CLOEXEC, 500), dst);

  pid_t pid = fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    // Async-signal-safe calls only from here on.
    if (opts.ctty && setsid() < 0) childFail(errpipe[1]);
    if (dup2(stdin_src, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) childFail(errpipe[1]);
    if (opts.ctty && ioctl(0, TIOCSCTTY, 0) != 0) childFail(errpipe[1]);
    syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
    for (auto [src, dst] : leaks)
      if (dup2(src, dst) < 0) childFail(errpipe[1]);
    if (opts.as_user) {
      gid_t g = *opts.as_user;
      if (setgroups(0, nullptr) || setresgid(g, g, g) || setresuid(*opts.as_user, *opts.as_user, *opts.as_user))
        childFail(errpipe[1]);
    }
    if (!opts.cwd.empty() && chdir(opts.cwd.c_str()) != 0) childFail(errpipe[1]);
    execve(cargv[0], cargv.data(), cenv.data());
    childFail(errpipe[1]);
  }
  for (auto [src, dst] : leaks) close(src);
  close(out[1]);
  close(err[1]);
  close(errpipe[1]);
  if (in[0] >= 0) close(in[0]);
  p.in_ = in[1];
  int child_errno = 0;
  if (read(errpipe[0], &child_errno, sizeof child_errno) == sizeof child_errno)
    p.result_.err = "test harness: cannot start child: " + std::string(strerror(child_errno)) + "\n";
  close(errpipe[0]);
  p.pid_ = pid;
  p.pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  p.out_ = out[0];
  p.err_ = err[0];
  setNonBlocking(p.out_);
  setNonBlocking(p.err_);
  p.deadline_ = std::chrono::steady_clock::now() + opts.deadline;
  return p;
}

Process::Process(Process&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), pidfd_(std::exchange(o.pidfd_, -1)), out_(std::exchange(o.out_, -1)),
      err_(std::exchange(o.err_, -1)), in_(std::exchange(o.in_, -1)), exited_(o.exited_), status_(o.status_),
      line_pos_(o.line_pos_), deadline_(o.deadline_), deadline_hit_(o.deadline_hit_), result_(std::move(o.result_)) {}

Process::~Process() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  for (int fd : {pidfd_, out_, err_, in_})
    if (fd >= 0) close(fd);
}

bool Process::pump(int timeout_ms) {
  if (exited_) return false;
  if (std::chrono::steady_clock::now() >= deadline_) {
    deadline_hit_ = true;
    ::kill(pid_, SIGKILL);
  }
  pollfd fds[3] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}, {pidfd_, POLLIN, 0}};
  poll(fds, 3, timeout_ms);
  for (int* fd : {&out_, &err_}) {
    if (*fd >= 0 && !drain(*fd, fd == &out_ ? &result_.out : &result_.err)) {
      close(*fd);  // EOF: stop polling it
      *fd = -1;
    }
  }
  if (waitpid(pid_, &status_, WNOHANG) != pid_) return true;
  // Output written before the exit is already in the pipes; survivors may hold them open.
  if (out_ >= 0) drain(out_, &result_.out);
  if (err_ >= 0) drain(err_, &result_.err);
  exited_ = true;
  return false;
}

std::optional<std::string> Process::readLine(std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  // The buffer is looked at once more after the pump that found the process gone: that pump
  // may have read the last line together with the exit.
  for (bool more = true;;) {
    size_t nl = result_.out.find('\n', line_pos_);
    if (nl != std::string::npos) {
      std::string line = result_.out.substr(line_pos_, nl - line_pos_);
      line_pos_ = nl + 1;
      return line;
    }
    if (!more || std::chrono::steady_clock::now() >= until) return std::nullopt;
    more = pump(20);
  }
}

bool Process::exitedWithin(std::chrono::milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until)
    if (!pump(20)) return true;
  return exited_;
}

void Process::closeStdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

void Process::signal(int sig) {
  if (!exited_) ::kill(pid_, sig);
}

RunResult Process::wait() {
  while (pump(100)) {
  }
  result_.deadline_hit = deadline_hit_;
  if (WIFEXITED(status_)) result_.exit_code = WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) result_.term_signal = WTERMSIG(status_);
  size_t end = result_.err.find_last_not_of('\n');
  if (end != std::string::npos) {
    size_t start = result_.err.rfind('\n', end);
    start = start == std::string::npos ? 0 : start + 1;
    std::string last = result_.err.substr(start, end - start + 1);
    auto j = nlohmann::json::parse(last, nullptr, false);
    if (!j.is_discarded() && j.is_object()) result_.report = std::move(j);
  }
  return result_;
}

RunResult run(const std::vector<std::string>& argv, const RunOptions& opts) {
  return Process::start(argv, opts).wait();
}

Pty::Pty() {
  master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || grantpt(master) || unlockpt(master)) std::abort();
  slave = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) std::abort();
  termios t;
  tcgetattr(slave, &t);
  cfmakeraw(&t);
  tcsetattr(slave, TCSANOW, &t);
}

Pty::~Pty() {
  close(slave);
  close(master);
}

std::string Pty::drainSlaveInput() const {
  int fd = fcntl(slave, F_DUPFD_CLOEXEC, 0);
  setNonBlocking(fd);
  std::string got;
  drain(fd, &got);
  close(fd);
  return got;
}

}  // namespace corral::testing
