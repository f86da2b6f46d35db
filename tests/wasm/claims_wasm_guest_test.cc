// SPDX-License-Identifier: Apache-2.0
// Adversarial tests of a running wasm guest (claims/wasm.toml): files, preopens, environment,
// memory, time, traps and the sandbox around the guest process. Each attack has a control.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <dirent.h>
#include <fstream>

#include "wasm_fixture.h"

namespace corral::testing::wasm {
namespace {

// The guest's report line for one path ("open PATH ok N CONTENT" or "open PATH errno NAME").
std::string openLine(const RunResult& r, const std::string& path) {
  for (const std::string& l : linesStartingWith(r.out, "open " + path + " ")) return l;
  return "";
}

bool opened(const RunResult& r, const std::string& path) { return openLine(r, path).find(" ok ") != std::string::npos; }

// wasm.no-ungranted-files
TEST(WasmNoUngrantedFiles, GuestWithoutDirOpensNoHostFile) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  TempDir d("wasm-nofiles");
  d.write("secret.txt", "host-secret");
  RunResult r = runWasm({}, guest, {"open", "/etc/passwd", d / "secret.txt", "/opt/corral-wasm/guest", "/workspace/module.so", "secret.txt", "."});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  for (const std::string& p : {std::string("/etc/passwd"), d / "secret.txt", std::string("/opt/corral-wasm/guest"), std::string("/workspace/module.so"),
                               std::string("secret.txt"), std::string(".")}) {
    EXPECT_FALSE(openLine(r, p).empty()) << "the guest did not try " << p << r.describe();
    EXPECT_FALSE(opened(r, p)) << claim("wasm.no-ungranted-files", "a guest with no --dir opened " + p) << r.describe();
  }
  EXPECT_EQ(r.out.find("host-secret"), std::string::npos) << r.describe();
}

TEST(WasmNoUngrantedFiles, ControlGrantedDirIsReadable) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  TempDir d("wasm-files");
  d.write("inside.txt", "granted-content");
  RunResult r = runWasm({"--dir", d.path() + ":/data:ro"}, guest, {"open", "/data/inside.txt", "/etc/passwd"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(openLine(r, "/data/inside.txt").find("ok 15 granted-content"), std::string::npos) << r.describe();
  EXPECT_FALSE(opened(r, "/etc/passwd")) << "only /data was granted" << r.describe();
}

// wasm.preopen-beneath
TEST(WasmPreopenBeneath, DotDotAndSymlinksDoNotLeaveThePreopen) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  TempDir d("wasm-beneath");
  d.write("inside.txt", "granted-content");
  // Inside the sandbox the preopen's parent holds the runner and the compiled module: a
  // resolution that left the preopen would read an ELF file.
  ASSERT_EQ(::symlink("../guest", (d / "up-link").c_str()), 0);
  ASSERT_EQ(::symlink("/opt/corral-wasm/guest", (d / "abs-link").c_str()), 0);
  ASSERT_EQ(::symlink("inside.txt", (d / "inner-link").c_str()), 0);
  ASSERT_EQ(::mkdir((d / "sub").c_str(), 0755), 0);
  const std::vector<std::string> attempts = {"/data/../guest", "/data/sub/../../guest", "/data/up-link",
                                             "/data/abs-link", "/data/inner-link", "/data/../../etc/passwd"};
  std::vector<std::string> args{"open", "/data/inside.txt"};
  args.insert(args.end(), attempts.begin(), attempts.end());
  RunResult r = runWasm({"--dir", d.path() + ":/data:ro"}, guest, args);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(opened(r, "/data/inside.txt")) << "control: the preopen itself works" << r.describe();
  for (const std::string& p : attempts) {
    EXPECT_FALSE(openLine(r, p).empty()) << "the guest did not try " << p << r.describe();
    EXPECT_FALSE(opened(r, p)) << claim("wasm.preopen-beneath", "the guest opened " + p) << r.describe();
  }
  EXPECT_EQ(r.out.find("ELF"), std::string::npos) << r.describe();
}

// wasm.preopen-read-only
TEST(WasmPreopenReadOnly, GuestCannotCreateOrWriteInAPreopen) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  TempDir d("wasm-ro");
  d.write("inside.txt", "granted-content");
  RunResult a = runWasm({"--dir", d.path() + ":/data:ro"}, guest, {"write", "/data/new.txt"});
  RunResult b = runWasm({"--dir", d.path() + ":/data:ro"}, guest, {"write", "/data/inside.txt"});
  for (const RunResult* r : {&a, &b}) {
    ASSERT_EQ(r->exit_code, 0) << r->describe();
    EXPECT_NE(r->out.find(" errno "), std::string::npos) << claim("wasm.preopen-read-only", "a write succeeded") << r->describe();
  }
  EXPECT_FALSE(d.exists("new.txt")) << claim("wasm.preopen-read-only", "new.txt appeared on the host");
  EXPECT_EQ(d.read("inside.txt"), "granted-content");
}

TEST(WasmPreopenReadOnly, EveryKindOfChangeIsRefused) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  TempDir d("wasm-ro-ops");
  d.write("inside.txt", "granted-content");
  ASSERT_EQ(::mkdir((d / "sub").c_str(), 0755), 0);
  RunResult r = runWasm({"--dir", d.path() + ":/data:ro"}, guest,
                        {"fs", "mkdir", "/data/new", "unlink", "/data/inside.txt", "rename", "/data/inside.txt", "/data/moved",
                         "rmdir", "/data/sub", "symlink", "/etc/passwd", "/data/planted", "link", "/data/inside.txt",
                         "/data/hard", "truncate", "/data/inside.txt", "append", "/data/inside.txt", "more"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(linesStartingWith(r.out, "").size(), 8u) << r.describe();
  EXPECT_EQ(r.out.find(" ok"), std::string::npos) << claim("wasm.preopen-read-only", "a change succeeded") << r.describe();
  EXPECT_EQ(d.entries(), (std::vector<std::string>{"inside.txt", "sub"})) << claim("wasm.preopen-read-only", "the host changed");
  EXPECT_EQ(d.read("inside.txt"), "granted-content");
}

// wasm.no-ambient-environment
TEST(WasmNoAmbientEnvironment, GuestSeesOnlyItsEnvFlags) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  RunOptions o;
  o.env_extra = {"CORRAL_SENTINEL_SECRET=sentinel-7f3a", "LD_PRELOAD=/nonexistent.so"};
  RunResult r = runWasm({}, guest, {"env"}, o);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("env-count 0"), std::string::npos) << claim("wasm.no-ambient-environment", "the guest saw variables") << r.describe();
  EXPECT_EQ(r.out.find("sentinel-7f3a"), std::string::npos) << r.describe();
}

TEST(WasmNoAmbientEnvironment, ControlEnvFlagReachesTheGuest) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  RunResult r = runWasm({"--env", "GRANTED=yes"}, guest, {"env"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("env GRANTED=yes"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("env-count 1"), std::string::npos) << r.describe();
}

// wasm.memory-bounded
TEST(WasmMemoryBounded, UnboundedGrowStopsAtTheMemoryLimit) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  RunResult small = runWasm({"--memory", "16M"}, guest, {"grow"});
  RunResult large = runWasm({"--memory", "32M"}, guest, {"grow"});
  ASSERT_EQ(small.exit_code, 0) << small.describe();
  ASSERT_EQ(large.exit_code, 0) << large.describe();
  EXPECT_NE(small.out.find("grow pages=256 "), std::string::npos)
      << claim("wasm.memory-bounded", "memory.grow went past --memory 16M (256 pages)") << small.describe();
  EXPECT_NE(large.out.find("grow pages=512 "), std::string::npos) << "control: a larger --memory grows further" << large.describe();
}

TEST(WasmMemoryBounded, DeclaredMaximumAboveMemoryIsRefused) {
  CORRAL_REQUIRE_WASM_GUEST(declared, "declared_max.wasm");
  EXPECT_TRUE(wasmRefused(runWasm({"--memory", "16M"}, declared, {}), "memory maximum of 1000 pages"));
  RunResult fits = runWasm({"--memory", "64M"}, declared, {});
  EXPECT_EQ(fits.exit_code, 0) << "control: 1000 pages fit 64M" << fits.describe();
}

// wasm.timeout-kills
TEST(WasmTimeoutKills, EndlessLoopIsKilledAtTheTimeout) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  RunResult r = runWasm({"--timeout", "2s"}, guest, {"loop"});
  EXPECT_EQ(r.exit_code, 124) << claim("wasm.timeout-kills", "an endless loop was not ended by --timeout") << r.describe();
  EXPECT_EQ(r.reportStr("killed_by"), "timeout") << r.describe();
}

TEST(WasmTimeoutKills, ControlAGuestThatEndsKeepsItsStatus) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  RunResult r = runWasm({"--timeout", "60s"}, guest, {"exit", "7"});
  EXPECT_EQ(r.exit_code, 7) << r.describe();
  EXPECT_EQ(r.reportStr("killed_by"), "none") << r.describe();
}

// wasm.traps-contained
TEST(WasmTrapsContained, DeepRecursionTrapsAsStackExhaustion) {
  CORRAL_REQUIRE_WASM_GUEST(recurse, "recurse.wasm");
  RunResult r = runWasm({}, recurse, {});
  EXPECT_EQ(r.exit_code, 132) << claim("wasm.traps-contained", "deep recursion did not trap") << r.describe();
  EXPECT_EQ(r.reportStr("trap"), "call-stack-exhausted") << r.describe();
}

TEST(WasmTrapsContained, OutOfBoundsAccessTraps) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  RunResult r = runWasm({}, guest, {"oob"});
  EXPECT_EQ(r.exit_code, 132) << claim("wasm.traps-contained", "a load at 0xfffffff0 did not trap") << r.describe();
  EXPECT_EQ(r.reportStr("trap"), "out-of-bounds") << r.describe();
  EXPECT_EQ(r.out.find("oob read"), std::string::npos) << r.describe();
}

TEST(WasmTrapsContained, ControlInBoundsAccessRuns) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  RunResult r = runWasm({}, guest, {"inbounds"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_NE(r.out.find("inbounds read 7"), std::string::npos) << r.describe();
  ASSERT_TRUE(r.report) << r.describe();
  EXPECT_TRUE((*r.report)["trap"].is_null()) << r.describe();
}

TEST(WasmTrapsContained, GuestCannotForgeATrapWithItsExitStatus) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  RunResult r = runWasm({}, guest, {"exit", "201"});  // 201 is the runtime's out-of-bounds status
  EXPECT_EQ(r.exit_code, 132) << r.describe();
  EXPECT_EQ(r.reportStr("trap"), "invalid-exit-status") << r.describe();
}

// wasm.guest-in-sandbox: the process running the guest is in namespaces of its own, with
// no_new_privs and a seccomp filter, as `exec` commands are.
std::string nsOf(pid_t pid, const char* ns) {
  char buf[128] = {0};
  const std::string path = "/proc/" + std::to_string(pid) + "/ns/" + ns;
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

std::string statusField(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return line.substr(field.size() + 1);
  return "";
}

pid_t guestProcessWithMarker(const std::string& marker) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return -1;
  pid_t found = -1;
  while (dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    const std::string cmdline = readHostFile(std::string("/proc/") + e->d_name + "/cmdline");  // never throws
    if (cmdline.rfind("/opt/corral-wasm/guest", 0) == 0 && cmdline.find(marker) != std::string::npos) found = pid;
  }
  ::closedir(proc);
  return found;
}

TEST(WasmGuestInSandbox, GuestProcessHasItsOwnNamespacesSeccompAndNoNewPrivs) {
  CORRAL_REQUIRE_WASM_GUEST(guest, "guest.wasm");
  const std::string marker = uniqueName("wasm-marker");
  RunOptions o;
  o.deadline = std::chrono::milliseconds(120'000);
  Process p = Process::start({corralBin(), "wasm", "run", "--cache", testCache(), guest, "--", "sleep", "60", marker}, o);
  auto line = p.readLine(std::chrono::milliseconds(90'000));
  ASSERT_TRUE(line && *line == "sleeping") << "the guest did not start";
  const pid_t g = guestProcessWithMarker(marker);
  ASSERT_GT(g, 0) << "no host process runs the guest";
  for (const char* ns : {"user", "mnt", "pid", "net", "ipc", "uts"}) {
    EXPECT_NE(nsOf(g, ns), nsOf(::getpid(), ns)) << claim("wasm.guest-in-sandbox", std::string("the guest shares the host's ") + ns + " namespace");
    EXPECT_EQ(nsOf(p.pid(), ns), nsOf(::getpid(), ns)) << "control: corral itself, outside the sandbox, is in the test's " << ns << " namespace";
  }
  EXPECT_EQ(statusField(g, "NoNewPrivs"), "\t1") << claim("wasm.guest-in-sandbox", "no_new_privs is not set");
  EXPECT_EQ(statusField(g, "Seccomp"), "\t2") << claim("wasm.guest-in-sandbox", "no seccomp filter");
  EXPECT_EQ(statusField(g, "CapEff"), "\t0000000000000000") << claim("wasm.guest-in-sandbox", "the guest has capabilities");
  p.signal(SIGTERM);
}

}  // namespace
}  // namespace corral::testing::wasm
