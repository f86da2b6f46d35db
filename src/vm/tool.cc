// SPDX-License-Identifier: Apache-2.0
// Host tool runner: fork, exec with a fixed environment, read stdout and stderr, wait.
#include "vm/tool.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace corral::vm {

Result<std::string> findTool(const std::vector<std::string>& candidates, const std::string& package) {
  for (const std::string& c : candidates)
    if (::access(c.c_str(), X_OK) == 0) return c;
  return Error(Errc::kUnsupported, candidates.front() + " not found (install Debian's " + package + "; scripts/bootstrap.sh does)");
}

Result<std::string> runTool(const std::vector<std::string>& args, size_t max_output) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return sysError("pipe");
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return sysError("pipe");
  UniqueFd err_r(err[0]), err_w(err[1]);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char env0[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char env1[] = "LC_ALL=C";
  // cppcheck-suppress variableScope ; built before fork: the child makes no allocation
  char* envp[] = {env0, env1, nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) return sysError("fork " + args.front());
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(out_w.get(), 1);
    ::dup2(err_w.get(), 2);
    ::execve(argv[0], argv.data(), envp);
    ::_exit(127);
  }
  out_w.reset();
  err_w.reset();
  std::string stdout_text, stderr_text;
  pollfd fds[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
  int open = 2;
  char buf[65536];
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        std::string& dst = i == 0 ? stdout_text : stderr_text;
        if (dst.size() < max_output) dst.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return sysError("waitpid " + args.front());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string first = stderr_text.substr(0, stderr_text.find('\n'));
    return Error(Errc::kIo, args.front() + " failed (status " + std::to_string(status) + "): " + first);
  }
  if (stdout_text.size() > max_output) return Error(Errc::kLimit, args.front() + ": output too large");
  return stdout_text;
}

}  // namespace corral::vm
