// SPDX-License-Identifier: Apache-2.0
// Detached terminals: their masters read into bounded scrollbacks by one thread until re-attached.
#include "daemon/terminal_hold.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "base/log.h"
#include "daemon/command_io.h"
#include "daemon/sessions.h"

namespace corral::daemon {
namespace {

// How often a detached terminal's command is checked for its end (status.json) and its session
// for removal; after the end, how long what the terminal still holds is read before the master
// closes (as the relay's drain).
constexpr auto kCheckEvery = std::chrono::milliseconds(500);
constexpr auto kDrainAfterExit = std::chrono::milliseconds(500);
// Commands that ended while detached keep their scrollback for a re-attach; at most this many
// (the oldest goes first), so ended terminals cannot pile up: 64 x 64 KiB at most.
constexpr size_t kMaxEnded = 64;
// Reads of one master per round, so one command that writes without end does not starve the rest.
constexpr int kReadsPerRound = 16;

}  // namespace

Result<TerminalHold::Claim> TerminalHold::attach(const std::string& session, int64_t cmd, const std::string& dir) {
  std::lock_guard lock(mu_);
  sweep(Clock::now());
  auto it = entries_.find({session, cmd});
  if (it == entries_.end()) return attachFirst(session, cmd, dir);
  Entry& e = it->second;
  if (e.attached) return Error(kConflict, "command " + std::to_string(cmd) + ": its terminal is attached to another client");
  e.attached = true;
  e.ended_seq = 0;
  Claim c;
  c.master = std::move(e.master);
  c.reattach = true;
  c.dropped = e.scrollback.dropped();
  c.scrollback = e.scrollback.take();
  e.scrollback = Scrollback{};
  e.ring.remove();  // the claim has it now: a restart from here on must not show it again
  if (wake_.valid()) (void)!::eventfd_write(wake_.get(), 1);  // its master leaves the reader's set
  return c;
}

Result<TerminalHold::Claim> TerminalHold::attachFirst(const std::string& session, int64_t cmd, const std::string& dir) {
  const std::string ids = "session=" + session + " cmd=" + std::to_string(cmd);
  // After a restart: what the old daemon had read of this terminal while it was detached.
  auto saved = RingFile::load(dir);
  if (!saved) {
    // Never shown (its header is not ours, so neither is what it holds): removed, so that the
    // next attach gets the terminal without it; the master stays with CommandIo meanwhile.
    const std::string path = dir + "/" + RingFile::kName;
    const bool removed = ::unlink(path.c_str()) == 0 || errno == ENOENT;
    log::warn("terminal_ring_refused", ids + " reason=" + log::value(saved.error().message()) + " removed=" + (removed ? "true" : "false"));
    return Error(kConflict, "command " + std::to_string(cmd) + ": its saved scrollback (" + RingFile::kName + ") is unusable (" +
                                saved.error().message() + "): " +
                                (removed ? "it was removed and is not shown; attach again for the terminal without it" : "remove it to attach"));
  }
  auto master = commandIo().take(session, cmd, CommandIo::Kind::kTerminal);
  // A command that ended while no daemon ran has no master any more, but its saved scrollback
  // comes with its report, as for one that ended while detached.
  const bool ended_with_ring = !master && saved->has_value() && ::access((dir + "/status.json").c_str(), F_OK) == 0;
  if (!master && !ended_with_ring) return master.error();
  entries_[{session, cmd}] = Entry{dir};
  Claim c;
  if (master) c.master = std::move(*master);
  if (saved->has_value()) {
    c.reattach = true;
    c.dropped = (*saved)->dropped;
    c.scrollback = std::move((*saved)->bytes);
    (void)::unlink((dir + "/" + RingFile::kName).c_str());  // the claim has it now
    log::info("terminal_ring_loaded", ids + " scrollback_bytes=" + std::to_string(c.scrollback.size()) +
                                          " dropped_bytes=" + std::to_string(c.dropped) + " ended=" + (ended_with_ring ? "true" : "false"));
  }
  return c;
}

void TerminalHold::mirror(const Key& key, Entry& e) {
  if (auto wrote = e.ring.mirror(e.scrollback); !wrote)
    log::warn("terminal_ring_unsaved", "session=" + key.first + " cmd=" + std::to_string(key.second) + " error=" + log::value(wrote.error().message()));
}

void TerminalHold::detach(const std::string& session, int64_t cmd, UniqueFd master, std::string_view unsent) {
  std::lock_guard lock(mu_);
  Entry& e = entries_[{session, cmd}];
  e.attached = false;
  e.master = std::move(master);
  e.master_eof = !e.master.valid();
  e.checked = {};
  e.exit_seen = {};
  // The ring goes to a file too, so a daemon killed meanwhile does not take it along; one that
  // cannot be made leaves the ring in memory only (logged: a restart would lose it, as before).
  if (!e.ring.valid() && !e.dir.empty()) {
    auto ring = RingFile::create(e.dir);
    if (ring) e.ring = std::move(*ring);
    else log::warn("terminal_ring_unsaved", "session=" + session + " cmd=" + std::to_string(cmd) + " error=" + log::value(ring.error().message()));
  }
  e.scrollback.append(unsent);
  mirror({session, cmd}, e);
  startReader();
  if (wake_.valid()) (void)!::eventfd_write(wake_.get(), 1);
}

void TerminalHold::forget(const std::string& session, int64_t cmd) {
  std::lock_guard lock(mu_);
  entries_.erase({session, cmd});
}

Json TerminalHold::describeEntry(const Entry& e) const {
  return Json{{"state", e.attached ? "attached" : "detached"},
              {"scrollback_bytes", e.scrollback.size()},
              {"dropped_bytes", e.scrollback.dropped()},
              {"ended", e.ended_seq != 0}};
}

Json TerminalHold::describe(const std::string& session, int64_t cmd) {
  std::lock_guard lock(mu_);
  auto it = entries_.find({session, cmd});
  return it == entries_.end() ? Json(nullptr) : describeEntry(it->second);
}

Json TerminalHold::list(const std::string& session) {
  std::lock_guard lock(mu_);
  Json out = Json::array();
  for (auto it = entries_.lower_bound({session, 0}); it != entries_.end() && it->first.first == session; ++it) {
    Json j = describeEntry(it->second);
    j["command"] = it->first.second;
    out.push_back(std::move(j));
  }
  return out;
}

void TerminalHold::startReader() {
  if (reader_started_) return;
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  reader_started_ = true;
  std::thread([this] { readLoop(); }).detach();
}

void TerminalHold::sweep(Clock::time_point now) {
  size_t ended = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    if (e.attached || now - e.checked < kCheckEvery) {
      ended += e.ended_seq != 0;
      ++it;
      continue;
    }
    e.checked = now;
    if (::access(e.dir.c_str(), F_OK) != 0) {  // the session was removed
      log::info("terminal_forgotten", "cmd=" + std::to_string(it->first.second) + " reason=removed");
      it = entries_.erase(it);
      continue;
    }
    if (e.ended_seq == 0 && ::access((e.dir + "/status.json").c_str(), F_OK) == 0) {
      if (e.exit_seen == Clock::time_point{}) e.exit_seen = now;
      // What the terminal still held is read; then the master closes, as at the relay's end.
      if (e.master_eof || now - e.exit_seen >= kDrainAfterExit) {
        e.master.reset();
        e.master_eof = true;
        e.ended_seq = ++ended_count_;
        log::info("terminal_ended_detached", "cmd=" + std::to_string(it->first.second) + " scrollback_bytes=" +
                                                 std::to_string(e.scrollback.size()) + " dropped_bytes=" + std::to_string(e.scrollback.dropped()));
      }
    }
    ended += e.ended_seq != 0;
    ++it;
  }
  while (ended > kMaxEnded) {  // the oldest ended one goes
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (!it->second.attached && it->second.ended_seq && (oldest == entries_.end() || it->second.ended_seq < oldest->second.ended_seq)) oldest = it;
    if (oldest == entries_.end()) break;
    log::info("terminal_forgotten", "cmd=" + std::to_string(oldest->first.second) + " reason=too_many_ended");
    entries_.erase(oldest);
    --ended;
  }
}

// Invariant: a master is read only under mu_ and only while its entry is detached, so an attach
// (which takes it under mu_) never races the reader for its bytes.
void TerminalHold::readLoop() {
  std::vector<char> buf(Scrollback::kBytes);
  for (;;) {
    std::vector<pollfd> fds{{wake_.get(), POLLIN, 0}};
    std::vector<Key> keys{{}};
    {
      std::lock_guard lock(mu_);
      for (auto& [key, e] : entries_) {
        if (e.attached || e.master_eof || !e.master.valid()) continue;
        fds.push_back({e.master.get(), POLLIN, 0});
        keys.push_back(key);
      }
    }
    const int rc = ::poll(fds.data(), fds.size(), static_cast<int>(kCheckEvery.count()));
    if (rc < 0 && errno != EINTR) return;
    eventfd_t ignored;
    if (fds[0].revents & POLLIN) (void)::eventfd_read(wake_.get(), &ignored);
    std::lock_guard lock(mu_);
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto it = entries_.find(keys[i]);
      if (it == entries_.end()) continue;
      Entry& e = it->second;
      if (e.attached || e.master_eof || e.master.get() != fds[i].fd) continue;
      for (int r = 0; r < kReadsPerRound; ++r) {
        const ssize_t n = ::read(e.master.get(), buf.data(), buf.size());
        if (n > 0) {
          e.scrollback.append(std::string_view(buf.data(), static_cast<size_t>(n)));
          continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
        e.master_eof = true;  // EIO: the command and everything that held its terminal are gone
        e.checked = {};       // look for its status at once
        break;
      }
      mirror(keys[i], e);
    }
    sweep(Clock::now());
  }
}

TerminalHold& terminalHold() {
  static auto* hold = new TerminalHold;  // leaked: the reader thread may run during exit
  return *hold;
}

}  // namespace corral::daemon
