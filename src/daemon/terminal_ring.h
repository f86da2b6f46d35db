// SPDX-License-Identifier: Apache-2.0
// A detached terminal's scrollback: a bounded ring in memory, mirrored to a fixed-size file beside
// the command's spool (cmds/N/terminal.ring) so that a restarted daemon still has it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/result.h"
#include "base/unique_fd.h"

namespace corral::daemon {

// The last kBytes a detached terminal wrote, in a ring: older bytes are dropped and counted.
class Scrollback {
 public:
  static constexpr size_t kBytes = size_t{64} * 1024;  // one data frame's payload at most (terminal_frame.h)
  void append(std::string_view b);
  std::string take();  // what it holds, oldest first; empties it (dropped() is kept)
  size_t size() const { return buf_.size(); }
  uint64_t dropped() const { return dropped_; }
  uint64_t total() const { return total_; }  // bytes ever appended
  std::string tail(size_t n) const;          // the newest n bytes it holds (n <= size()), oldest first
  // The same bytes in place, as at most two pieces (oldest first, the second may be empty): the
  // mirror writes them without a copy, so a terminal that writes without end allocates nothing.
  std::pair<std::string_view, std::string_view> tailPieces(size_t n) const;

 private:
  std::string buf_;   // grows to kBytes, then is overwritten from start_ on
  size_t start_ = 0;  // the oldest byte once buf_ is full
  uint64_t dropped_ = 0;
  uint64_t total_ = 0;
};

// The file a detached terminal's ring is mirrored to. Why a file of the daemon's rather than a
// ring in the shim: the shim would have to read the master, so a detached command would never
// block and the shim would grow a 64 KiB buffer per terminal that the daemon's death made
// necessary only in theory; a file costs nothing while the daemon lives, is bounded (it never
// changes size), is private (0600 in the session's 0700 directory), and goes with the session.
// It is written with pwrite and never fsynced: a daemon killed (kill -9) leaves what it wrote in
// the page cache, so the next daemon reads it; a host crash may lose it, as it loses the pty.
// Not mmap'd: a file truncated under a mapping would be SIGBUS in the daemon.
//
// Layout (little-endian): a 64-byte header {"CRLRING\x01", u32 version 1, u32 capacity (kBytes),
// u64 total, u64 intent, zeros} and capacity data bytes; byte L of the stream (L < total) is at
// data offset L % capacity. A mirror writes intent (the new total), then the data, then total:
// a daemon killed in between leaves intent > total, and the bytes the cut-short write may have
// overwritten (the oldest ones) are dropped at load instead of shown out of order.
class RingFile {
 public:
  static constexpr size_t kHeaderBytes = 64;
  static constexpr size_t kFileBytes = kHeaderBytes + Scrollback::kBytes;
  static constexpr char kName[] = "terminal.ring";

  // What a file saved: its bytes, oldest first, and how many before them were dropped.
  struct Saved {
    std::string bytes;
    uint64_t dropped = 0;
  };
  // dir/terminal.ring as a daemon saved it: nullopt when there is none; an error (one line,
  // never its content) when it is not a ring file of ours: a symbolic link, not a regular file,
  // another owner, a mode other than 0600, more than one link, another size, a bad header.
  static Result<std::optional<Saved>> load(const std::string& dir);
  // A new empty ring file in dir (one left there is replaced), space allocated, mode 0600.
  static Result<RingFile> create(const std::string& dir);

  RingFile() = default;
  RingFile(RingFile&& o) noexcept;
  RingFile& operator=(RingFile&& o) noexcept;
  ~RingFile() { remove(); }

  bool valid() const { return fd_.valid(); }
  // Writes what s appended since the last mirror (its newest bytes). On an error the file is
  // removed (a restart then finds no scrollback rather than a stale one).
  Result<void> mirror(const Scrollback& s);
  void remove();  // unlinks the file (if this one made it) and closes it

 private:
  UniqueFd fd_;
  std::string path_;
  uint64_t synced_ = 0;  // the total written so far
};

}  // namespace corral::daemon
