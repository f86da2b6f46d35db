// SPDX-License-Identifier: Apache-2.0
// Commands' stdin and terminal descriptors between their start and their use.
#include "daemon/command_io.h"

#include <fcntl.h>
#include <unistd.h>

#include "daemon/sessions.h"

namespace corral::daemon {

void CommandIo::put(const std::string& session, int64_t cmd, Kind kind, UniqueFd fd, std::string dir) {
  std::lock_guard lock(mu_);
  putLocked(session, cmd, kind, std::move(fd), std::move(dir));
}

bool CommandIo::putIfAbsent(const std::string& session, int64_t cmd, Kind kind, UniqueFd fd, std::string dir) {
  std::lock_guard lock(mu_);
  if (entries_.count({session, cmd})) return false;
  putLocked(session, cmd, kind, std::move(fd), std::move(dir));
  return true;
}

bool CommandIo::has(const std::string& session, int64_t cmd) {
  std::lock_guard lock(mu_);
  return entries_.count({session, cmd}) != 0;
}

void CommandIo::putLocked(const std::string& session, int64_t cmd, Kind kind, UniqueFd fd, std::string dir) {
  // Ended commands and removed sessions give theirs up here, so idle entries cannot pile up.
  std::erase_if(entries_, [](const auto& kv) {
    const Entry& e = kv.second;
    return !e.lent && (::access((e.dir + "/status.json").c_str(), F_OK) == 0 || ::access(e.dir.c_str(), F_OK) != 0);
  });
  // A lent entry is in a request's hands (its fd number in use): never replaced under it.
  if (auto it = entries_.find({session, cmd}); it != entries_.end() && it->second.lent) return;
  entries_[{session, cmd}] = Entry{kind, std::move(fd), std::move(dir)};
}

Result<CommandIo::Entry*> CommandIo::find(const std::string& session, int64_t cmd, Kind kind) {
  auto it = entries_.find({session, cmd});
  const char* what = kind == Kind::kStdin ? "an open stdin" : "a terminal to attach";
  if (it == entries_.end() || it->second.kind != kind)
    return Error(kConflict, "command " + std::to_string(cmd) + " has no " + std::string(kind == Kind::kStdin ? "open stdin" : "terminal") +
                                " (none was asked for, or it was closed)");
  if (it->second.lent) return Error(kConflict, "command " + std::to_string(cmd) + ": " + what + " is in use by another request");
  return &it->second;
}

Result<int> CommandIo::borrow(const std::string& session, int64_t cmd, Kind kind) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(Entry * e, find(session, cmd, kind));
  e->lent = true;
  return e->fd.get();
}

void CommandIo::giveBack(const std::string& session, int64_t cmd) {
  std::lock_guard lock(mu_);
  if (auto it = entries_.find({session, cmd}); it != entries_.end()) it->second.lent = false;
}

Result<UniqueFd> CommandIo::take(const std::string& session, int64_t cmd, Kind kind) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(Entry * e, find(session, cmd, kind));
  UniqueFd fd = std::move(e->fd);
  entries_.erase({session, cmd});
  return fd;
}

CommandIo& commandIo() {
  static CommandIo io;
  return io;
}

}  // namespace corral::daemon
