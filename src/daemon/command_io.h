// SPDX-License-Identifier: Apache-2.0
// The daemon's ends of commands' stdin pipes and terminals, by session and command: held from
// the command's start until a request uses them up. The shim keeps a copy of each (shim_loop.cc),
// so a daemon's death is no end of file or hangup: a restarted daemon, which starts with none
// here, gets them back from the shim on the first request that needs one (routes_commands.cc).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::daemon {

class CommandIo {
 public:
  enum class Kind { kStdin, kTerminal };
  // dir: the command's spool directory (an entry whose command has ended, or whose session is
  // gone, is closed at the next put).
  void put(const std::string& session, int64_t cmd, Kind kind, UniqueFd fd, std::string dir);
  // put() unless the command already has an entry (then fd is closed): false then.
  bool putIfAbsent(const std::string& session, int64_t cmd, Kind kind, UniqueFd fd, std::string dir);
  bool has(const std::string& session, int64_t cmd);
  // Lends it to one request: a second request meanwhile is refused (kConflict), as is one for
  // a command that has none (not started with it, already closed, or a restarted daemon).
  Result<int> borrow(const std::string& session, int64_t cmd, Kind kind);
  void giveBack(const std::string& session, int64_t cmd);
  // Takes it for good (DELETE .../stdin, a terminal's one connection); invalid if none.
  Result<UniqueFd> take(const std::string& session, int64_t cmd, Kind kind);

 private:
  struct Entry {
    Kind kind;
    UniqueFd fd;
    std::string dir;
    bool lent = false;
  };
  void putLocked(const std::string& session, int64_t cmd, Kind kind, UniqueFd fd, std::string dir);
  Result<Entry*> find(const std::string& session, int64_t cmd, Kind kind);
  std::mutex mu_;
  std::map<std::pair<std::string, int64_t>, Entry> entries_;
};

CommandIo& commandIo();  // the daemon's one

}  // namespace corral::daemon
