// SPDX-License-Identifier: Apache-2.0
// The caller's stdio, handed to the sandbox only when the sandbox cannot use it to change the
// host; otherwise relayed through pipes corral owns.
//
// Why: an fd names a host inode, and the command can change that inode's metadata through it
// (fchmod, futimens, fsetxattr, chmod("/proc/self/fd/1"), TIOCSCTTY on a tty) whenever its uid
// owns the inode or may write it. Landlock does not cover metadata, and rootless the sandbox
// uid is the caller's. A terminal left mode 0666 or a log file made 0777 outlives the run.
#pragma once

#include <poll.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::sandbox {

// True for an fd whose inode gives the sandbox nothing on the host: a connected AF_UNIX
// stream or seqpacket socket (it reaches only its peer), or a non-terminal character device
// the caller does not own (/dev/null, /dev/zero). Regular files, pipes and named FIFOs (a pipe
// can be resized or reopened by whoever holds it), terminals, TCP, UDP, datagram and
// listening sockets (host-namespace network objects) and anything else are not.
bool stdioSafeToHandOver(int fd);

class StdioRelay {
 public:
  // For each of 0..2 whose fd (given[n] >= 0, else n itself) is not safe to hand over, makes a
  // pipe: the sandbox gets one end, which sandboxFd(n) returns (>= 3, as init requires).
  // file_size_limit: the run's --file-size, which the command's own writes would meet in a
  // regular file handed to it (RLIMIT_FSIZE); corral's relay into one holds to it too.
  static Result<StdioRelay> plan(const int given[3], uint64_t file_size_limit);

  StdioRelay() = default;
  StdioRelay(StdioRelay&&) = default;
  StdioRelay& operator=(StdioRelay&&) = default;

  bool active() const { return !streams_.empty(); }
  int sandboxFd(int n) const;  // -1: stdio n is handed over as it is
  // After the clone: the sandbox holds its ends; corral's copies would keep pipes open.
  void closeSandboxEnds();
  // Before the command starts: stdout and stderr are copied on a thread each, so that a
  // caller who stops reading blocks only that copy (and, once the pipe is full, the command's
  // writes), never the supervisor that serves the deadline, signals and init's exit.
  Result<void> startOutput();
  // The fds to poll beside the supervisor's own, with their events (rebuilt each round):
  // stdin's, which the supervisor relays itself.
  void addPollFds(std::vector<pollfd>& fds) const;
  // Moves what is ready; fds is what poll() filled in (the same order addPollFds used).
  void onReady(const std::vector<pollfd>& fds, size_t first);
  // True once after stdin, a terminal, could not be read because corral's job is in the
  // background (EIO: corral blocks SIGTTIN). The supervisor then stops the job, as the
  // terminal's SIGTTIN would have; the read is tried again once it is continued.
  bool takeBackgroundRead() { return std::exchange(background_read_, false); }
  // After the sandbox is gone: waits until the output copies have delivered what its pipes
  // still hold, or until a terminating signal arrives on `signals` (-1: none), or for at most
  // limit_ms (-1: no limit); a copy still blocked on the caller then is abandoned. Closes all.
  void drain(int signals, int limit_ms);

 private:
  struct OutputPump;  // stdio_relay.cc
  struct Stream {
    int n = 0;            // 0, 1 or 2
    int host = -1;        // the caller's fd (not owned)
    UniqueFd ours;        // corral's end of the pipe (an output's moves to its pump)
    UniqueFd theirs;      // the sandbox's end, until closeSandboxEnds()
    std::string pending;  // stdin: read from the host, not yet written to the pipe
    bool host_eof = false;
    std::shared_ptr<OutputPump> pump;  // stdout, stderr: after startOutput()
  };
  void pumpIn(Stream& s, short revents_host, short revents_pipe);
  std::vector<Stream> streams_;
  bool background_read_ = false;
  uint64_t file_size_limit_ = 0;
};

}  // namespace corral::sandbox
