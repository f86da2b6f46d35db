// SPDX-License-Identifier: Apache-2.0
// The host <-> guest-agent control protocol over virtio-serial: length-prefixed frames and a
// strict incremental parser (docs/vm.md, "Control protocol").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::vm::frame {

// A frame is a 4-byte big-endian length L, then L bytes: one type byte and L-1 payload bytes.
inline constexpr size_t kHeaderBytes = 4;
inline constexpr size_t kMaxPayload = size_t{64} * 1024;  // bounds what a hostile guest makes the host buffer
// A VM session's files API moves a file in one control message (base64 in JSON): this bounds it.
inline constexpr uint64_t kMaxSessionFileBytes = uint64_t{512} * 1024;

enum class Type : uint8_t {
  // host -> guest
  kRequest = 'R',  // JSON: the command, its environment, limits and declared outputs
  kStdin = 'I',    // bytes of the caller's stdin for the command; an empty payload is its EOF
  kQuiesce = 'Q',  // empty: the snapshot point (after hello, before any request); see snapshot.h
  kReseed = 'Z',   // JSON: a restored guest's fresh RNG seed, restore nonce and the host's clock
  // host -> guest, session mode (one guest, many commands; every payload starts with a
  // 4-byte big-endian command id, except kSessionStart's)
  kSessionStart = 'B',  // JSON as kRequest's (its argv unused): the session's sandbox, instead of one command
  kCommand = 'C',       // id, argc, envc, pathc (4 bytes each), then NUL-ended strings (session_protocol.h's memfd)
  kCmdStdin = 'i',      // id, then bytes of that command's stdin; none: its EOF
  kCmdSignal = 'K',     // id, then the signal (4 bytes) for that command's process group
  kFileGet = 'G',       // id (a file request's, not a command's), then JSON {"path"}: a workspace file's bytes
  kFilePut = 'P',       // id, then JSON {"path", "size"}: a workspace file written from the kFileData that follow
  kFileData = 'p',      // id, then bytes of the file being put
  kClock = 'T',         // id 0, then the host's CLOCK_REALTIME: seconds (high, low 4 bytes), nanoseconds (after a resume)
  // guest -> host
  kHello = 'H',    // JSON: agent started (kernel release, guest devices, mounts)
  kStarted = 'S',  // empty: the command is about to be executed
  kStdout = 'O',   // bytes of the command's stdout
  kStderr = 'E',   // bytes of the command's stderr
  kOutput = 'F',   // JSON: a declared output follows (path, kind, links); its bytes in kData
  kData = 'D',     // bytes of the current output
  kExit = 'X',     // JSON: how the command ended (the guest's run report); the last frame
  kQuiesced = 'q', // empty: the agent is idle and waits for kReseed (the host saves the VM now)
  kReseeded = 'N', // JSON: the restore nonce echoed, and the restored guest's hello fields
  // guest -> host, session mode
  kSessionUp = 'b',  // empty: the session's sandbox is up; else why it is not (text), and the guest ends
  kCmdSpawned = 's', // id, then the pid in the guest (4 bytes, signed; -errno when it failed)
  kCmdFailed = 'f',  // id, step, errno (4 bytes each): its setup or execve failed (before its kCmdSpawned)
  kCmdStdout = 'o',  // id, then bytes of that command's stdout
  kCmdStderr = 'e',  // id, then bytes of its stderr
  kCmdExited = 'x',  // id, then its wait status (4 bytes): after all of its output
  kFileReply = 'r',  // id, then JSON {"size"} or {"error", "status"}: a file request's answer
  kFileBytes = 'd',  // id, then bytes of the file a kFileGet asked for (after its kFileReply)
};

enum class Direction { kToGuest, kToHost };

struct Frame {
  Type type;
  std::string payload;
};

std::string encode(Type type, std::string_view payload);

// Feed bytes as they arrive; next() returns whole frames. Any malformed frame (a length of
// 0 or above the cap, a type not valid in this direction) is an error, and the parser stays
// failed: a stream that was once out of step cannot be trusted to be back in step.
class Parser {
 public:
  explicit Parser(Direction accepting) : accepting_(accepting) {}
  void feed(std::string_view bytes) { buf_.append(bytes); }
  // A frame, nothing yet (std::nullopt), or why the stream is refused.
  Result<std::optional<Frame>> next();
  size_t buffered() const { return buf_.size(); }

 private:
  Direction accepting_;
  std::string buf_;
  size_t pos_ = 0;
  bool failed_ = false;
};

bool validType(uint8_t type, Direction d);

// Session-mode payloads: a 4-byte big-endian id (and more 4-byte fields), then bytes.
void putU32(std::string& out, uint32_t v);
// The i-th 4-byte field of payload; false when it is shorter than `fields` fields.
bool getU32s(std::string_view payload, size_t fields, uint32_t* out);

}  // namespace corral::vm::frame
