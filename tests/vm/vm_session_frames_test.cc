// SPDX-License-Identifier: Apache-2.0
// vm.session-frames-checked: a VM session's bridge (daemon/shim_vm_bridge.h) fed hostile
// session frames as a compromised guest agent would send them, without a VM: each one out of
// place ends the VM (the bridge's kill), and a frame for a command that already ended does not.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "base/unique_fd.h"
#include "daemon/json_fields.h"
#include "daemon/shim_vm_bridge.h"
#include "vm/frame.h"

namespace corral {
namespace {

namespace frame = vm::frame;

std::string withId(uint32_t id, std::string_view rest = {}, std::initializer_list<uint32_t> more = {}) {
  std::string p;
  frame::putU32(p, id);
  for (uint32_t v : more) frame::putU32(p, v);
  p.append(rest);
  return p;
}

// The bridge on a thread, with the guest's, the loop's and the files' ends held here.
class Rig {
 public:
  Rig() {
    int ctl[2], loop[2], files[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl), 0);
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, loop), 0);
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, files), 0);
    guest_.reset(ctl[0]);
    control_.reset(ctl[1]);
    loop_.reset(loop[0]);
    files_.reset(files[0]);
    stop_.reset(::eventfd(0, EFD_CLOEXEC));
    bridge_ = std::make_unique<daemon::VmBridge>(control_.get(), [this] { killed_ = true; }, UniqueFd(loop[1]), UniqueFd(files[1]),
                                                 UniqueFd(::fcntl(stop_.get(), F_DUPFD_CLOEXEC, 3)));
    thread_ = std::thread([this] { bridge_->run(); });
  }
  ~Rig() {
    const uint64_t one = 1;
    (void)!::write(stop_.get(), &one, sizeof one);
    thread_.join();
  }
  void guestSends(frame::Type t, std::string_view payload) { sendRaw(frame::encode(t, payload)); }
  void sendRaw(const std::string& bytes) { ASSERT_EQ(::write(guest_.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size())); }
  bool killedWithin(int ms) {
    for (int i = 0; i < ms / 10 && !killed_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return killed_;
  }
  // A files request from the loop, and the frame the guest gets for it.
  frame::Frame fileRequest(const std::string& json) {
    EXPECT_EQ(::send(files_.get(), json.data(), json.size(), 0), static_cast<ssize_t>(json.size()));
    frame::Parser parser(frame::Direction::kToGuest);
    char buf[65536];
    for (;;) {
      auto f = parser.next();
      EXPECT_TRUE(f.ok());
      if (!f.ok()) return {frame::Type::kHello, ""};
      if (*f) return std::move(**f);
      pollfd p{guest_.get(), POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) return {frame::Type::kHello, ""};
      const ssize_t n = ::read(guest_.get(), buf, sizeof buf);
      if (n <= 0) return {frame::Type::kHello, ""};
      parser.feed(std::string_view(buf, static_cast<size_t>(n)));
    }
  }
  std::string fileAnswer() {
    pollfd p{files_.get(), POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return "";
    std::string buf(1 << 20, '\0');
    const ssize_t n = ::recv(files_.get(), buf.data(), buf.size(), 0);
    buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return buf;
  }

 private:
  UniqueFd guest_, control_, loop_, files_, stop_;
  std::atomic<bool> killed_{false};
  std::unique_ptr<daemon::VmBridge> bridge_;
  std::thread thread_;
};

// The control: output and an exit for a command the bridge does not know (it ended) are
// dropped, and the session goes on.
TEST(VmSessionFramesChecked, FramesForAnEndedCommandAreDroppedNotFatal) {
  Rig rig;
  rig.guestSends(frame::Type::kCmdStdout, withId(7, "late output"));
  rig.guestSends(frame::Type::kCmdExited, withId(7, "", {0}));
  EXPECT_FALSE(rig.killedWithin(300)) << "a frame for an ended command ended the session";
  rig.guestSends(frame::Type::kHello, "{}");
  EXPECT_TRUE(rig.killedWithin(3000)) << "a hello after the session started was accepted";
}

TEST(VmSessionFramesChecked, EachHostileFrameEndsTheVm) {
  const std::pair<const char*, std::string> hostile[] = {
      {"a second session-up", frame::encode(frame::Type::kSessionUp, "")},
      {"a run's exit report", frame::encode(frame::Type::kExit, "{}")},
      {"a spawned reply cut short", frame::encode(frame::Type::kCmdSpawned, std::string(3, '\0'))},
      {"a spawned reply too long", frame::encode(frame::Type::kCmdSpawned, withId(1, "", {5, 6}))},
      {"an exit without its status", frame::encode(frame::Type::kCmdExited, withId(1))},
      {"a file reply nobody asked for", frame::encode(frame::Type::kFileReply, withId(9, R"({"size": 1})"))},
      {"file bytes nobody asked for", frame::encode(frame::Type::kFileBytes, withId(9, "x"))},
      {"a length of zero", std::string(4, '\0')},
      {"a host-to-guest type", frame::encode(frame::Type::kCommand, withId(1, "", {0, 0, 0}))},
  };
  for (const auto& [what, bytes] : hostile) {
    Rig rig;
    rig.sendRaw(bytes);
    EXPECT_TRUE(rig.killedWithin(3000)) << what << ": accepted";
  }
}

TEST(VmSessionFramesChecked, AFileAnswerMustMatchItsRequest) {
  {  // the control: a get answered as announced reaches the loop
    Rig rig;
    const frame::Frame g = rig.fileRequest(R"({"seq": 1, "op": "file_get", "path": "a"})");
    ASSERT_EQ(g.type, frame::Type::kFileGet);
    uint32_t id = 0;
    ASSERT_TRUE(frame::getU32s(g.payload, 1, &id));
    rig.guestSends(frame::Type::kFileReply, withId(id, R"({"size": 3})"));
    rig.guestSends(frame::Type::kFileBytes, withId(id, "abc"));
    const std::string answer = rig.fileAnswer();
    EXPECT_NE(answer.find("\"data\":\"YWJj\""), std::string::npos) << answer;
    EXPECT_FALSE(rig.killedWithin(100));
  }
  const std::pair<const char*, std::vector<std::pair<frame::Type, std::string>>> hostile[] = {
      {"bytes past the announced size", {{frame::Type::kFileReply, R"({"size": 3})"}, {frame::Type::kFileBytes, "abcdef"}}},
      {"bytes before the reply", {{frame::Type::kFileBytes, "abc"}}},
      {"a second reply", {{frame::Type::kFileReply, R"({"size": 3})"}, {frame::Type::kFileReply, R"({"size": 3})"}}},
      {"a size over the cap", {{frame::Type::kFileReply, R"({"size": 600000})"}}},
      {"a reply that is not JSON", {{frame::Type::kFileReply, "size=3"}}},
  };
  for (const auto& [what, frames] : hostile) {
    Rig rig;
    const frame::Frame g = rig.fileRequest(R"({"seq": 1, "op": "file_get", "path": "a"})");
    uint32_t id = 0;
    ASSERT_TRUE(frame::getU32s(g.payload, 1, &id));
    for (const auto& [t, rest] : frames) rig.guestSends(t, withId(id, rest));
    EXPECT_TRUE(rig.killedWithin(3000)) << what << ": accepted";
  }
}

}  // namespace
}  // namespace corral
