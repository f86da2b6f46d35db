// SPDX-License-Identifier: Apache-2.0
#include "agent/vm_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>

#include "vm/accel.h"
#include "vm/vm_backend.h"

namespace corral::agent {
namespace {

bool hasKvm(const policy::Manifest& m) {
  for (const std::string& n : m.sandbox.allow_weaker)
    if (n == "kvm") return true;
  return false;
}

Error refuse(const std::string& why) { return Error(Errc::kInvalidArgument, why); }

// runVm relays the guest's output to fds 1 and 2 and the caller's stdin from fd 0, as `corral
// exec` needs. For the duration of one command those three are the capture's pipes and
// /dev/null, and they are put back when it returns. Invariant: the runner is single-threaded
// apart from the capture's readers, which touch only their own pipes, so nothing else writes
// to fd 1 or 2 meanwhile (corral's own log lines from runVm land in the command's stderr, as
// they would on exec's).
class StdioSwap {
 public:
  static Result<StdioSwap> to(int in, int out, int err) {
    StdioSwap s;
    const std::array<int, 3> with = {in, out, err};
    for (int fd = 0; fd < 3; ++fd) {
      s.saved_[static_cast<size_t>(fd)] = UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 3));
      if (!s.saved_[static_cast<size_t>(fd)].valid()) return sysError("dup stdio");
    }
    for (int fd = 0; fd < 3; ++fd)
      if (::dup2(with[static_cast<size_t>(fd)], fd) < 0) return sysError("dup2 stdio");
    return s;
  }
  StdioSwap() = default;
  StdioSwap(StdioSwap&&) = default;
  StdioSwap& operator=(StdioSwap&&) = delete;
  StdioSwap(const StdioSwap&) = delete;
  StdioSwap& operator=(const StdioSwap&) = delete;
  ~StdioSwap() {
    for (int fd = 0; fd < 3; ++fd)
      if (saved_[static_cast<size_t>(fd)].valid()) (void)::dup2(saved_[static_cast<size_t>(fd)].get(), fd);
  }

 private:
  std::array<UniqueFd, 3> saved_;
};

}  // namespace

Result<std::optional<VmChoice>> chooseBackend(const policy::Manifest& m, const BackendFlags& flags) {
  const bool manifest_vm = m.sandbox.backend == "vm";
  if (flags.backend && *flags.backend != "vm" && *flags.backend != "namespace")
    return refuse("--backend: expected namespace or vm");
  if (flags.backend == "namespace" && manifest_vm)
    return refuse("--backend namespace: the manifest's sandbox.backend is vm, and a flag cannot weaken it");
  const bool vm = manifest_vm || flags.backend == "vm";
  if (flags.allow_kvm && !vm) return refuse("--allow-weaker kvm: only with --backend vm");
  if (flags.allow_kvm && manifest_vm && !hasKvm(m))
    return refuse("--allow-weaker kvm: the manifest's sandbox.backend vm requires KVM (its sandbox.allow_weaker has no kvm)");
  if (!vm) return std::optional<VmChoice>();
  if (flags.session)
    return refuse("--session with the VM backend: a session's commands run in its own backend (session create --backend vm)");
  // The manifest's own checks (policy/manifest.cc) apply to a VM a flag chose as well.
  if (!m.network.allow.empty()) return refuse("--backend vm: network.allow is not available with the VM backend in run yet");
  if (!m.credentials.empty()) return refuse("--backend vm: credentials are not available with the VM backend in run yet");
  VmChoice choice;
  if (m.sandbox.vm_memory_bytes) choice.options.memory_bytes = *m.sandbox.vm_memory_bytes;
  if (m.sandbox.vm_cpus) choice.options.cpus = *m.sandbox.vm_cpus;
  choice.options.allow_tcg = hasKvm(m) || flags.allow_kvm;
  // The spec every command gets, but for argv, environment and timeout: whatever the VM
  // backend refuses there, it would refuse for each command.
  sandbox::SandboxSpec probe;
  probe.argv = {"true"};
  probe.workspace = "/";
  RETURN_IF_ERROR(applyManifestLimits(m, probe));
  probe.outputs = m.outputs;
  if (auto c = vm::checkSpec(probe, choice.options, false); !c.ok()) return refuse("sandbox.backend vm: " + c.error().message());
  const vm::AccelProbe accel = vm::probeAccel();
  if (accel.kind == vm::AccelProbe::Kind::kUnavailable)
    return refuse("sandbox.backend vm: no VM on this host: " + accel.detail + (accel.fix.empty() ? "" : " (" + accel.fix + ")"));
  if (accel.kind == vm::AccelProbe::Kind::kTcgOnly && !choice.options.allow_tcg)
    return refuse("sandbox.backend vm: KVM is unusable here (" + accel.detail +
                  "); sandbox.allow_weaker [\"kvm\"] (or --allow-weaker kvm with --backend vm) accepts TCG emulation");
  if (auto agent = vm::agentPath(); !agent.ok()) return refuse("sandbox.backend vm: " + agent.error().message());
  choice.accelerator = accel.kind == vm::AccelProbe::Kind::kKvm ? "kvm" : "tcg";
  return std::optional<VmChoice>(std::move(choice));
}

Result<VmCommandOutcome> runInVm(const sandbox::SandboxSpec& spec, const vm::VmOptions& options, uint64_t keep_bytes) {
  UniqueFd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_in.valid()) return sysError("/dev/null");
  ASSIGN_OR_RETURN(std::unique_ptr<OutputCapture> capture, OutputCapture::start(keep_bytes));
  Result<vm::VmRun> ran = Error(Errc::kIo, "not run");
  {
    ASSIGN_OR_RETURN(StdioSwap swap, StdioSwap::to(null_in.get(), capture->stdoutFd(), capture->stderrFd()));
    ran = vm::runVm(spec, options);
  }
  VmCommandOutcome out;
  out.outcome.output = capture->finish();
  if (!ran.ok()) return ran.error();
  const sandbox::RunReport& report = ran->report;
  out.outcome.exit_code = report.exit_code;
  out.outcome.status = report.command_status;
  out.outcome.signal = report.signal;
  out.outcome.killed_by = sandbox::killedByName(report.killed_by);
  out.outcome.wall_ms = report.wall_ms;
  out.outcome.outputs = report.outputs;
  const auto& v = ran->extra["vm"];
  out.vm = nlohmann::json::object();
  for (const char* k : {"accelerator", "start", "kernel_release", "guest_kernel"})
    if (v.contains(k) && v[k].is_string()) out.vm[k] = v[k].get<std::string>();
  return out;
}

}  // namespace corral::agent
