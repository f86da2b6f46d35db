// SPDX-License-Identifier: Apache-2.0
// `corral doctor` rendering (text and --json).
#include "cli/doctor.h"

#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "sandbox/host_facilities.h"
#include "sandbox/linux_backend.h"
#include "daemon/freezer.h"
#include "daemon/workspace_disk.h"
#include "sandbox/workspace.h"
#include "cli/doctor_wasm.h"
#include "cli/option_echo.h"
#include "vm/accel.h"
#include "vm/images.h"
#include "vm/tool.h"
#include "vm/vm_backend.h"

namespace corral::cli {
namespace {

using sandbox::cgroup::ControllerSite;
using sandbox::cgroup::Version;

std::string site(const ControllerSite& s) {
  if (s.version == Version::kNone) return "unavailable: " + s.why_not;
  return std::string("cgroup ") + sandbox::cgroup::versionName(s.version) + " at " + s.parent;
}

nlohmann::json limitMechanisms(const sandbox::HostFacilities& h) {
  const ControllerSite& mem = h.cgroups.memory;
  nlohmann::json j;
  j["memory"] = mem.version != Version::kNone
                    ? std::string("cgroup-") + sandbox::cgroup::versionName(mem.version)
                    : std::string("refused unless --allow-weaker memory (then rlimit-as, per process)");
  j["pids"] = "rlimit-nproc (scoped to the sandbox's user namespace); also the cgroup when --memory makes one";
  j["cpu-time"] = "rlimit-cpu (per process)";
  j["timeout"] = "timer (kills the whole pid namespace)";
  j["file-size"] = "rlimit-fsize";
  j["open-files"] = "rlimit-nofile";
  j["tmp-size"] = "tmpfs size";
  j["workspace-size"] = "tmpfs size";
  // A session's /workspace (corral daemon) lives in the daemon's state dir (workspace_disk.h).
  j["session-workspace-size"] = daemon::workspaceMechanism().description;
  j["session-pause"] = daemon::findFreezer().description;
  return j;
}

// The final word: a real default sandbox running /bin/true.
std::pair<bool, std::string> smokeTest() {
  sandbox::SandboxSpec spec;
  spec.argv = {"/bin/true"};
  spec.env = {"PATH=/usr/bin:/bin"};
  auto r = sandbox::runLinux(spec, {});
  if (!r) return {false, r.error().message()};
  if (r->exit_code != 0) return {false, "/bin/true exited " + std::to_string(r->exit_code) + " " + r->error};
  return {true, "a default sandbox ran /bin/true"};
}

// --backend vm: "kvm", "tcg only" (why KVM is unusable) or "unavailable", with the fix.
nlohmann::json vmState() {
  vm::AccelProbe p = vm::probeAccel();
  const auto kernel = vm::images::chooseKernel();
  // Without a guest kernel, the image tool or the agent there is no VM, whatever the accelerator.
  for (auto missing : {kernel.ok() ? std::optional<Error>{} : kernel.error(),
                       vm::findTool({"/usr/bin/mkfs.erofs", "/usr/sbin/mkfs.erofs"}, "erofs-utils").ok()
                           ? std::optional<Error>{}
                           : vm::findTool({"/usr/bin/mkfs.erofs"}, "erofs-utils").error(),
                       vm::agentPath().ok() ? std::optional<Error>{} : vm::agentPath().error()}) {
    if (!missing || p.kind == vm::AccelProbe::Kind::kUnavailable) continue;
    p.kind = vm::AccelProbe::Kind::kUnavailable;
    p.detail = missing->message();
    p.fix = "run scripts/bootstrap.sh (qemu-system-x86, linux-image-amd64, erofs-utils) and build corral-vm-init";
  }
  nlohmann::json k = nullptr;
  if (kernel) k = {{"kind", kernel->kind}, {"path", kernel->path}, {"why", kernel->why}};
  return {{"state", vm::accelName(p.kind)}, {"detail", p.detail}, {"fix", p.fix}, {"kernel", k}};
}

}  // namespace

int doctorMain(const std::vector<std::string>& args) {
  bool json = false;
  for (const std::string& a : args) {
    if (a == "--json") json = true;
    else if (a == "--help" || a == "-h") {
      std::fputs("usage: corral doctor [--json]\n"
                 "  Reports each host facility corral uses (user namespaces, cgroup v2/v1 per controller,\n"
                 "  seccomp, Landlock, /dev/kvm, overlayfs), which mechanism each limit gets, whether the\n"
                 "  VM and Wasm backends can run, and runs a default sandbox; exits 1 with the missing\n"
                 "  facility and its fix when a default run would be refused.\n",
                 stdout);
      return 0;
    } else {
      std::fprintf(stderr, "corral: doctor: unknown option %s\n", optionName(a).c_str());
      return 125;
    }
  }
  sandbox::HostFacilities h = sandbox::probeHost();
  bool required_ok = true;
  for (const auto& f : h.facilities) required_ok = required_ok && (f.available || !f.required);
  auto [smoke_ok, smoke_detail] = required_ok ? smokeTest() : std::pair{false, std::string("skipped: a required facility is missing")};
  const ControllerSite& mem = h.cgroups.memory;
  const std::string cgroup_used = mem.version != Version::kNone ? sandbox::cgroup::versionName(mem.version) : "none";

  if (json) {
    nlohmann::json j;
    j["uid"] = ::getuid();
    for (const auto& f : h.facilities)
      j["facilities"][f.name] = {{"available", f.available}, {"required", f.required}, {"detail", f.detail}};
    j["cgroups"] = {{"used_for_memory", cgroup_used},
                    {"memory", site(h.cgroups.memory)},
                    {"pids", site(h.cgroups.pids)},
                    {"cpu", site(h.cgroups.cpu)},
                    {"v1_memsw", h.cgroups.v1_memsw}};
    j["limits"] = limitMechanisms(h);
    j["default_exec"] = {{"ok", smoke_ok}, {"detail", smoke_detail}};
    j["vm"] = vmState();
    j["wasm"] = wasmState();
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("corral doctor (uid %u)\n\nfacilities:\n", ::getuid());
    for (const auto& f : h.facilities)
      std::printf("  %-16s %-4s %s%s\n", f.name.c_str(), f.available ? "ok" : (f.required ? "FAIL" : "no"),
                  f.detail.c_str(), f.required && !f.available ? " [required]" : "");
    std::printf("\ncgroups (used for --memory: %s):\n  memory  %s\n  pids    %s\n  cpu     %s\n", cgroup_used.c_str(),
                site(h.cgroups.memory).c_str(), site(h.cgroups.pids).c_str(), site(h.cgroups.cpu).c_str());
    std::printf("\nlimits and the mechanism that enforces each:\n");
    const nlohmann::json limits = limitMechanisms(h);
    for (auto it = limits.begin(); it != limits.end(); ++it)
      std::printf("  %-15s %s\n", it.key().c_str(), it.value().get<std::string>().c_str());
    std::printf("\ndefault exec: %s (%s)\n", smoke_ok ? "ok" : "REFUSED", oneLine(smoke_detail).c_str());
    const nlohmann::json v = vmState();
    std::printf("vm: %s (%s)%s%s%s\n", v["state"].get<std::string>().c_str(), v["detail"].get<std::string>().c_str(),
                v["fix"].get<std::string>().empty() ? "" : "; fix: ", v["fix"].get<std::string>().c_str(),
                v["kernel"].is_null() ? ""
                                      : ("; default kernel: " + v["kernel"]["kind"].get<std::string>() + " " +
                                         v["kernel"]["path"].get<std::string>() + " (" +
                                         v["kernel"]["why"].get<std::string>() + ")")
                                            .c_str());
    const nlohmann::json w = wasmState();
    std::printf("wasm: %s (%s)%s%s\n", w["state"].get<std::string>().c_str(), oneLine(w["detail"].get<std::string>()).c_str(),
                w["fix"].get<std::string>().empty() ? "" : "; fix: ", w["fix"].get<std::string>().c_str());
  }
  if (!smoke_ok) {
    std::fprintf(stderr, "corral: doctor: a default `corral exec` would be refused here: %s\n", oneLine(smoke_detail).c_str());
    return 1;
  }
  return 0;
}

}  // namespace corral::cli
