// SPDX-License-Identifier: Apache-2.0
// Claims vm.outputs-copy-back-checked and vm.control-frames-checked from the host's side: a
// hostile guest's frames fed to the same parser, output receiver and copy-back a run uses.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "sandbox/workspace.h"
#include "vm/control_session.h"
#include "vm/frame.h"
#include "vm/output_receiver.h"
#include "vm/protocol.h"

namespace corral::testing {
namespace {

using corral::vm::OutputReceiver;
namespace protocol = corral::vm::protocol;
namespace frame = corral::vm::frame;

struct HostileRun {
  TempDir staging{"vm-staging"}, host{"vm-hostws"};
  std::vector<std::string> outputs;
  std::optional<OutputReceiver> rx;
  explicit HostileRun(std::vector<std::string> declared, uint64_t max = 1 << 20) : outputs(std::move(declared)) {
    auto r = OutputReceiver::create(staging.path(), outputs, max);
    if (r) rx.emplace(std::move(*r));
  }
  Result<void> send(const std::string& path, protocol::OutputKind kind, const std::string& data, uint64_t links = 1) {
    RETURN_IF_ERROR(rx->onHeader(protocol::encodeOutputHeader({path, kind, links, data.size()})));
    if (!data.empty()) RETURN_IF_ERROR(rx->onData(data));
    return {};
  }
  std::vector<sandbox::OutputResult> copyBack() {
    UniqueFd host_fd(::open(host.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    return sandbox::workspace::copyBack(rx->root(), host_fd.get(), outputs);
  }
};

// --- vm.outputs-copy-back-checked ---

TEST(VmOutputsCopyBackChecked, HostileGuestSymlinkHardLinkAndFifoRefusedByCopyBack) {
  for (auto [kind, data, links] : std::vector<std::tuple<protocol::OutputKind, std::string, uint64_t>>{
           {protocol::OutputKind::kSymlink, "/etc/shadow", 1},
           {protocol::OutputKind::kFile, "secret", 2},
           {protocol::OutputKind::kOther, "", 1},
           {protocol::OutputKind::kDir, "", 1}}) {
    HostileRun run({"out.txt"});
    ASSERT_TRUE(run.rx);
    ASSERT_TRUE(run.send("out.txt", kind, data, links));
    auto results = run.copyBack();
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].status, sandbox::OutputResult::Status::kRefused)
        << claim("vm.outputs-copy-back-checked", "copy-back took a hostile " + std::to_string(static_cast<int>(kind)));
    EXPECT_FALSE(run.host.exists("out.txt")) << claim("vm.outputs-copy-back-checked", "a refused output reached the host");
  }
}

TEST(VmOutputsCopyBackChecked, HostileGuestUndeclaredOrEscapingPathRefusedByTheReceiver) {
  for (const char* path : {"other.txt", "../out.txt", "/etc/passwd", "a/../out.txt", "out.txt/", ""}) {
    HostileRun run({"out.txt"});
    ASSERT_TRUE(run.rx);
    EXPECT_FALSE(run.send(path, protocol::OutputKind::kFile, "x")) << claim("vm.outputs-copy-back-checked", "accepted path '" + std::string(path) + "'");
  }
  HostileRun twice({"out.txt"});
  ASSERT_TRUE(twice.send("out.txt", protocol::OutputKind::kFile, "a"));
  EXPECT_FALSE(twice.send("out.txt", protocol::OutputKind::kFile, "b")) << claim("vm.outputs-copy-back-checked", "an output sent twice");
  HostileRun big({"out.txt"}, 4);
  EXPECT_FALSE(big.send("out.txt", protocol::OutputKind::kFile, "12345")) << claim("vm.outputs-copy-back-checked", "outputs past the workspace size");
  HostileRun overrun({"out.txt"});
  ASSERT_TRUE(overrun.rx->onHeader(protocol::encodeOutputHeader({"out.txt", protocol::OutputKind::kFile, 1, 2})));
  EXPECT_FALSE(overrun.rx->onData("123")) << claim("vm.outputs-copy-back-checked", "more data than announced");
}

// Control: an honest regular file passes the same path.
TEST(VmOutputsCopyBackChecked, ControlARegularFileIsCopied) {
  HostileRun run({"dir/out.txt"});
  ASSERT_TRUE(run.send("dir/out.txt", protocol::OutputKind::kFile, "hello"));
  ASSERT_TRUE(run.rx->finish());
  auto results = run.copyBack();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, sandbox::OutputResult::Status::kCopied) << results[0].reason;
  EXPECT_EQ(run.host.read("dir/out.txt"), "hello");
}

// --- vm.control-frames-checked ---

std::string rawFrame(uint32_t len, char type, const std::string& payload) {
  std::string s;
  for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((len >> shift) & 0xff));
  s.push_back(type);
  return s + payload;
}

TEST(VmControlFramesChecked, MalformedGuestFramesRefusedAndTheStreamStaysRefused) {
  for (const std::string& bad : {rawFrame(0, 'H', ""), rawFrame(frame::kMaxPayload + 2, 'O', ""), rawFrame(2, 'R', "x"),
                                 rawFrame(2, 'Z', "x"), rawFrame(0xffffffffu, 'D', "")}) {
    frame::Parser p(frame::Direction::kToHost);
    p.feed(bad);
    auto f = p.next();
    EXPECT_FALSE(f.ok()) << claim("vm.control-frames-checked", "accepted a malformed frame");
    p.feed(frame::encode(frame::Type::kStdout, "after"));
    EXPECT_FALSE(p.next().ok()) << claim("vm.control-frames-checked", "the stream recovered after a malformed frame");
  }
  for (const char* json : {"", "[]", "{\"exit_code\": -1}", "{\"exit_code\": 0}", "not json",
                           "{\"exit_code\":0,\"command_status\":0,\"signal\":null,\"killed_by\":\"bogus\"}"})
    EXPECT_FALSE(protocol::decodeExit(json).ok()) << claim("vm.control-frames-checked", std::string("accepted exit report ") + json);
  EXPECT_FALSE(protocol::decodeHello("{\"kernel\": 1}").ok());
  EXPECT_FALSE(protocol::decodeOutputHeader("{\"path\":\"a\",\"kind\":\"socket\",\"links\":1,\"size\":0}").ok());
}

// The supervisor's order checks (vm::ControlSession, what runVm feeds every frame to): a
// hostile guest's frame sequences, each refused at the frame that breaks the order.
struct Hostile {
  sandbox::SandboxSpec spec;
  TempDir staging{"vm-session"};
  std::optional<OutputReceiver> rx;
  std::optional<corral::vm::ControlSession> session;
  int requests = 0;
  std::string relayed;
  Hostile() {
    spec.argv = {"/bin/true"};
    spec.outputs = {"out.txt"};
    auto r = OutputReceiver::create(staging.path(), spec.outputs, 1 << 20);
    if (r) rx.emplace(std::move(*r));
    session.emplace(spec, *rx,
                    corral::vm::ControlSession::Io{[this](std::string_view) { return ++requests, true; },
                                                   [this](frame::Type, std::string_view b) { relayed.append(b); }});
  }
  // The frames in order; the index of the first one refused, or -1 when all were taken.
  int feed(const std::vector<frame::Frame>& frames) {
    for (size_t i = 0; i < frames.size(); ++i)
      if (!session->onFrame(frames[i])) return static_cast<int>(i);
    return -1;
  }
};

std::string exitWith(const std::vector<sandbox::OutputResult>& verdicts) {
  sandbox::RunReport r;
  r.exit_code = 0;
  r.command_status = 0;
  r.outputs = verdicts;
  return protocol::encodeExit(r);
}

TEST(VmControlFramesChecked, HostileGuestFramesOutOfOrderEndTheRun) {
  using T = frame::Type;
  const frame::Frame hello{T::kHello, protocol::encodeHello({"6.1", {}, {}, {}})}, start{T::kStarted, ""};
  const frame::Frame out{T::kStdout, "x"}, exit{T::kExit, exitWith({})};
  const frame::Frame header{T::kOutput, protocol::encodeOutputHeader({"out.txt", protocol::OutputKind::kFile, 1, 1})};
  const sandbox::OutputResult undeclared{"other.txt", sandbox::OutputResult::Status::kRefused, "symlink", 0};
  const sandbox::OutputResult declared{"out.txt", sandbox::OutputResult::Status::kWithheld, "", 0};
  const std::vector<std::pair<std::string, std::vector<frame::Frame>>> cases = {
      {"stdout before the hello", {out}},
      {"exit before the hello", {exit}},
      {"a second hello", {hello, hello}},
      {"a second start", {hello, start, start}},
      {"an output before the start", {hello, header}},
      {"output data before the start", {hello, {T::kData, "x"}}},
      {"a frame after the exit", {hello, start, exit, out}},
      {"a second exit", {hello, start, exit, exit}},
      {"a verdict on an undeclared output", {hello, start, {T::kExit, exitWith({undeclared})}}},
      {"two verdicts on one output", {hello, start, {T::kExit, exitWith({declared, declared})}}},
      {"an output left half sent", {hello, start, header, exit}},
      {"a request from the guest", {hello, {T::kRequest, "{}"}}},
  };
  for (const auto& [what, frames] : cases) {
    Hostile h;
    EXPECT_EQ(h.feed(frames), static_cast<int>(frames.size()) - 1) << claim("vm.control-frames-checked", "accepted " + what);
    EXPECT_LE(h.requests, 1) << what;
  }
}

// Control: an honest guest's sequence is taken whole, with one request sent and output relayed.
TEST(VmControlFramesChecked, ControlAnHonestSequenceIsTaken) {
  using T = frame::Type;
  Hostile h;
  const int refused = h.feed({{T::kHello, protocol::encodeHello({"6.1", {}, {}, {}})},
                              {T::kStdout, "hi"},
                              {T::kStarted, ""},
                              {T::kStderr, "!"},
                              {T::kOutput, protocol::encodeOutputHeader({"out.txt", protocol::OutputKind::kFile, 1, 2})},
                              {T::kData, "ok"},
                              {T::kExit, exitWith({{"out.txt", sandbox::OutputResult::Status::kCopied, "", 2}})}});
  EXPECT_EQ(refused, -1);
  EXPECT_EQ(h.requests, 1);
  EXPECT_EQ(h.relayed, "hi!");
  EXPECT_EQ(h.session->report().exit_code, 0);
}

// Control: well-formed frames, split at every byte, parse back exactly.
TEST(VmControlFramesChecked, ControlWellFormedFramesParseAtAnySplit) {
  const std::string bytes = frame::encode(frame::Type::kHello, "{}") + frame::encode(frame::Type::kStdout, std::string(1000, 'x'));
  for (size_t cut = 0; cut <= bytes.size(); cut += 97) {
    frame::Parser p(frame::Direction::kToHost);
    p.feed(bytes.substr(0, cut));
    std::vector<frame::Frame> got;
    for (auto f = p.next(); f.ok() && *f; f = p.next()) got.push_back(**f);
    p.feed(bytes.substr(cut));
    for (auto f = p.next(); f.ok() && *f; f = p.next()) got.push_back(**f);
    ASSERT_EQ(got.size(), 2u) << "cut at " << cut;
    EXPECT_EQ(got[1].payload.size(), 1000u);
  }
  sandbox::RunReport r;
  r.exit_code = 3;
  r.command_status = 3;
  auto back = protocol::decodeExit(protocol::encodeExit(r));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->exit_code, 3);
}

}  // namespace
}  // namespace corral::testing
