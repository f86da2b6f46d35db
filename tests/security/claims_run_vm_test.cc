// SPDX-License-Identifier: Apache-2.0
// vm.run-in-guest and vm.run-unsupported-refused: `corral run` on the microVM backend, a
// replayed model against the real binary and real QEMU (TCG here). Three guest starts in all
// (snapshot restores once the snapshot exists); the refusals start none.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "run_fixture.h"

namespace corral::testing {
namespace {

using nlohmann::json;

// Empty when this host can start a VM for corral, else why not (the tests then skip loudly).
std::string whyNoVm() {
  const std::string bin = corralBin();
  const std::string agent = bin.substr(0, bin.rfind('/') + 1) + "corral-vm-init";
  if (::access(agent.c_str(), R_OK) != 0) return "no guest agent " + agent + " (a sanitized build has none)";
  RunResult r = run({bin, "doctor", "--json"});
  json j = json::parse(r.out, nullptr, false);
  const json v = j.is_object() && j.contains("vm") ? j["vm"] : json::object();
  const std::string state = v.value("state", "");
  if (state == "kvm" || state == "tcg only") return "";
  return "no VM on this host: " + v.value("detail", std::string("corral doctor gave no vm state"));
}

bool kvmHere() {
  RunResult r = run({corralBin(), "doctor", "--json"});
  json j = json::parse(r.out, nullptr, false);
  return j.is_object() && j.contains("vm") && j["vm"].value("state", "") == "kvm";
}

std::string hostRelease() {
  utsname u{};
  ::uname(&u);
  return u.release;
}

// What the guest's command writes into its declared output: the kernel it runs on, the CPU
// /proc/cpuinfo names, and whether the CPU flags say hypervisor.
constexpr char kProbeScript[] =
    "uname -r > out.txt; grep -m1 'model name' /proc/cpuinfo >> out.txt; "
    "grep -c -w hypervisor /proc/cpuinfo >> out.txt; echo sentinel-stdout";

void vmManifest(RunFixture& f, bool in_manifest) {
  f.manifest["outputs"] = {"out.txt", "link.txt"};
  f.manifest["executables"] = json::array({{{"name", "sh"}, {"literal_args", true}}});
  f.manifest["budgets"]["command_timeout"] = "90s";
  f.manifest["budgets"]["wall_time"] = "5m";
  if (in_manifest) {
    f.manifest["sandbox"] = {{"backend", "vm"}};
    if (!kvmHere()) f.manifest["sandbox"]["allow_weaker"] = {"kvm"};
  }
}

json runCall(const std::string& script) { return call("run", {{"command", "sh"}, {"args", {"-c", script}}}); }

// The tool_call entries of `run` (not the finish).
std::vector<json> commands(const RunFixture& f) {
  std::vector<json> out;
  for (const json& c : f.toolCalls())
    if (c.value("tool", "") == "run") out.push_back(c);
  return out;
}

// Judges out.txt (the guest's findings) and the command's trace entry against the host.
void expectRanInGuest(const RunFixture& f, const json& entry, const std::string& accel) {
  EXPECT_EQ(entry.value("backend", ""), "vm") << entry.dump();
  ASSERT_TRUE(entry.contains("vm")) << entry.dump();
  EXPECT_EQ(entry["vm"].value("accelerator", ""), accel) << entry.dump();
  const std::string guest_kernel = entry["vm"].value("guest_kernel", "");
  const std::string out = f.ws.read("out.txt");
  ASSERT_FALSE(out.empty()) << "vm.run-in-guest: the declared output did not come back from the guest";
  const std::string release = out.substr(0, out.find('\n'));
  EXPECT_EQ(release, guest_kernel) << "vm.run-in-guest: uname -r in the command is not the guest kernel the agent reported";
  // Control: the host's kernel is another one, so a namespace sandbox would have printed it.
  EXPECT_NE(release, hostRelease()) << "vm.run-in-guest: uname -r is the host's kernel: the command ran on the host";
  EXPECT_NE(out.find("QEMU"), std::string::npos) << "vm.run-in-guest: /proc/cpuinfo names no QEMU CPU: " << out;
  EXPECT_EQ(out.substr(out.rfind('\n', out.size() - 2) + 1), "1\n") << "vm.run-in-guest: no hypervisor flag: " << out;
  EXPECT_EQ(entry.value("stdout_bytes", 0), std::string("sentinel-stdout\n").size()) << "the command's stdout was not captured";
}

void expectVerifies(const RunFixture& f) {
  RunResult v = run({corralBin(), "verify", f.ws.path()});
  EXPECT_EQ(v.exit_code, 0) << "corral verify: " << v.out << v.err;
}

// The manifest's sandbox.backend vm: every command in a guest, its declared output back
// through copy-back, a symlink output refused (and never reaching the host), the record verifies.
TEST(VmRunInGuest, ManifestBackendRunsEachCommandInTheGuestAndChecksOutputs) {
  if (const std::string why = whyNoVm(); !why.empty()) GTEST_SKIP() << why;
  RunFixture f;
  vmManifest(f, true);
  f.reply({runCall(kProbeScript)});
  f.reply({runCall("ln -s /etc/passwd link.txt")});
  f.reply({call("finish", {{"summary", "probed"}})});
  RunResult r = f.run({"--apply"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string accel = kvmHere() ? "kvm" : "tcg";
  auto backend = f.entries("sandbox_backend");
  ASSERT_EQ(backend.size(), 1u);
  EXPECT_EQ(backend[0].value("backend", ""), "vm");
  EXPECT_EQ(backend[0].value("accelerator", ""), accel);
  EXPECT_EQ(backend[0].value("chosen_by", ""), "manifest");
  auto cmds = commands(f);
  ASSERT_EQ(cmds.size(), 2u);
  EXPECT_EQ(cmds[0].value("exit_code", -1), 0) << cmds[0].dump();
  expectRanInGuest(f, cmds[0], accel);
  ASSERT_TRUE(cmds[0]["outputs"].is_array());
  EXPECT_EQ(cmds[0]["outputs"][0].value("status", ""), "copied") << cmds[0].dump();

  // The hostile output: a symlink the guest made is refused by copy-back (all or none), as
  // with exec --backend vm, and nothing of it reaches the host's workspace.
  EXPECT_EQ(cmds[1].value("exit_code", -1), 125) << cmds[1].dump();
  bool link_refused = false;
  for (const json& o : cmds[1]["outputs"])
    if (o.value("path", "") == "link.txt") link_refused = o.value("status", "") == "refused" && o.value("reason", "") == "symlink";
  EXPECT_TRUE(link_refused) << "vm.run-in-guest: the guest's symlink output was not refused: " << cmds[1].dump();
  EXPECT_FALSE(f.ws.exists("link.txt")) << "vm.run-in-guest: a guest symlink reached the host workspace";
  // The regular output of the first command is the one applied.
  json res = runJson(r);
  ASSERT_TRUE(res.is_object()) << r.out;
  for (const json& o : res["outputs"]) {
    if (o.value("path", "") == "out.txt") {
      EXPECT_EQ(o.value("applied", ""), "copied") << res.dump();
    }
    if (o.value("path", "") == "link.txt") {
      EXPECT_EQ(o.value("applied", ""), "missing") << res.dump();
    }
  }
  expectVerifies(f);
}

// `run --backend vm` over a namespace manifest: the flag chooses the narrower boundary.
TEST(VmRunInGuest, BackendFlagChoosesTheVmOverANamespaceManifest) {
  if (const std::string why = whyNoVm(); !why.empty()) GTEST_SKIP() << why;
  RunFixture f;
  vmManifest(f, false);
  f.reply({runCall(kProbeScript)});
  f.reply({call("finish", {{"summary", "probed"}})});
  std::vector<std::string> flags = {"--apply", "--backend", "vm"};
  if (!kvmHere()) {
    flags.push_back("--allow-weaker");
    flags.push_back("kvm");
  }
  RunResult r = f.run(flags);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto backend = f.entries("sandbox_backend");
  ASSERT_EQ(backend.size(), 1u);
  EXPECT_EQ(backend[0].value("chosen_by", ""), "--backend");
  auto cmds = commands(f);
  ASSERT_EQ(cmds.size(), 1u);
  expectRanInGuest(f, cmds[0], kvmHere() ? "kvm" : "tcg");
  expectVerifies(f);
}

// Each refusal: exit 125, one line on stderr naming the option, nothing written (no .corral),
// and no guest started.
void expectRefusedAtLoad(RunFixture& f, const std::vector<std::string>& flags, const std::string& want) {
  f.reply({runCall("echo should-not-run > out.txt")});
  f.reply({call("finish", {{"summary", "x"}})});
  RunResult r = f.run(flags);
  EXPECT_EQ(r.exit_code, 125) << want << ": " << r.out << r.err;
  EXPECT_NE(r.err.find(want), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line: " << r.err;
  EXPECT_FALSE(f.ws.exists(".corral")) << want << ": the refused run wrote a record";
  EXPECT_FALSE(f.ws.exists("out.txt")) << want << ": a command ran";
}

TEST(VmRunUnsupportedRefused, NetworkWithTheVmBackend) {
  RunFixture f;
  vmManifest(f, true);
  f.manifest["network"] = {{"allow", {"https://pypi.org"}}};
  expectRefusedAtLoad(f, {"--apply"}, "network.allow: not available with sandbox.backend vm");
}

TEST(VmRunUnsupportedRefused, NetworkWhenTheFlagChoosesTheVm) {
  RunFixture f;
  vmManifest(f, false);
  f.manifest["network"] = {{"allow", {"https://pypi.org"}}};
  expectRefusedAtLoad(f, {"--apply", "--backend", "vm", "--allow-weaker", "kvm"}, "--backend vm: network.allow is not available");
}

TEST(VmRunUnsupportedRefused, AFlagCannotWeakenTheManifestsVm) {
  RunFixture f;
  vmManifest(f, true);
  expectRefusedAtLoad(f, {"--apply", "--backend", "namespace"}, "--backend namespace: the manifest's sandbox.backend is vm");
}

TEST(VmRunUnsupportedRefused, AFlagCannotAcceptTcgForTheManifestsVm) {
  RunFixture f;
  vmManifest(f, false);
  f.manifest["sandbox"] = {{"backend", "vm"}};  // KVM required: no kvm in allow_weaker
  expectRefusedAtLoad(f, {"--apply", "--allow-weaker", "kvm"}, "the manifest's sandbox.backend vm requires KVM");
}

TEST(VmRunUnsupportedRefused, TcgWithoutKvmAccepted) {
  if (kvmHere()) GTEST_SKIP() << "KVM is usable here: nothing to refuse";
  if (const std::string why = whyNoVm(); !why.empty()) GTEST_SKIP() << why;
  RunFixture f;
  vmManifest(f, false);
  f.manifest["sandbox"] = {{"backend", "vm"}};
  expectRefusedAtLoad(f, {"--apply"}, "KVM is unusable here");
}

TEST(VmRunUnsupportedRefused, MemoryLargerThanTheVm) {
  RunFixture f;
  vmManifest(f, true);
  f.manifest["sandbox"]["memory"] = "1G";
  expectRefusedAtLoad(f, {"--apply"}, "sandbox.memory: larger than the VM");
}

TEST(VmRunUnsupportedRefused, SessionWithTheVmBackend) {
  RunFixture f;
  vmManifest(f, true);
  expectRefusedAtLoad(f, {"--apply", "--session", "s-none"}, "--session with the VM backend");
}

// Control: the same manifest without the refused option is accepted and runs (dry run: no
// guest), so the refusals above are the options', not the manifest's.
TEST(VmRunUnsupportedRefused, ControlTheSameManifestLoads) {
  if (const std::string why = whyNoVm(); !why.empty()) GTEST_SKIP() << why;
  RunFixture f;
  vmManifest(f, true);
  f.reply({runCall("echo x > out.txt")});
  f.reply({call("finish", {{"summary", "x"}})});
  RunResult r = f.run({});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(f.ws.exists(".corral/trace.jsonl"));
}

}  // namespace
}  // namespace corral::testing
