// SPDX-License-Identifier: Apache-2.0
// `corral exec` glue: the host-side checks parsing cannot make, then run and report.
#include "cli/exec.h"
#include "cli/option_echo.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstdio>
#include <memory>

#include "base/unique_fd.h"
#include "cli/exec_options.h"
#include "cli/report_json.h"
#include "sandbox/linux_backend.h"

namespace corral::cli {
namespace {

constexpr int kExitCorral = 125;

void errorLine(const std::string& message) { std::fprintf(stderr, "corral: %s\n", oneLine(message).c_str()); }

Result<void> checkHostPaths(sandbox::SandboxSpec& spec) {
  if (spec.workspace) {
    char resolved[PATH_MAX];
    if (!::realpath(spec.workspace->c_str(), resolved)) return sysError("--workspace " + *spec.workspace);
    struct stat st;
    if (::stat(resolved, &st) != 0) return sysError("--workspace " + *spec.workspace);
    if (!S_ISDIR(st.st_mode)) return Error(ENOTDIR, "--workspace " + *spec.workspace);
    spec.workspace = resolved;
  } else if (!spec.outputs.empty()) {
    return Error(Errc::kInvalidArgument, "--output " + spec.outputs.front() + ": needs --workspace (where to copy it back)");
  }
  for (const sandbox::RoBind& rb : spec.ro_binds) {
    struct stat st;
    if (::stat(rb.host.c_str(), &st) != 0) return sysError("--ro-bind " + rb.host);
  }
  return {};
}

// Opened before the run: a report that cannot be written is a refusal, not a surprise after
// the command already ran.
// O_NONBLOCK for the open only: a FIFO nobody reads is ENXIO at once instead of a hang.
// A regular file with other hard links is refused before it is truncated: the report would
// be written into whatever file the link shares its inode with (symlinks are O_NOFOLLOW's).
Result<UniqueFd> openReportFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644));
  if (!fd.valid() && errno == ENXIO) return Error(Errc::kInvalidArgument, "--report " + path + ": a FIFO with no reader");
  if (!fd.valid()) return sysError("--report " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sysError("--report " + path);
  if (S_ISREG(st.st_mode) && st.st_nlink > 1)
    return Error(Errc::kInvalidArgument, "--report " + path + ": has " + std::to_string(st.st_nlink) +
                                             " hard links; refusing to write into a file shared with another name");
  if (S_ISREG(st.st_mode) && ::ftruncate(fd.get(), 0) != 0) return sysError("--report " + path);
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) return sysError("--report " + path);
  return fd;
}

Result<void> writeReport(const UniqueFd& fd, const std::string& path, const std::string& json) {
  std::string line = json + "\n";
  if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) return sysError("--report " + path);
  return {};
}

int finish(const ExecInvocation& inv, const UniqueFd& report_fd, sandbox::RunReport report,
           ExecEgress* egress = nullptr, const nlohmann::ordered_json* backend_extra = nullptr) {
  if (egress) {
    if (auto stopped = egress->stop(); !stopped) {
      if (!report.error.empty()) errorLine(report.error);
      report.error = "--net proxy: " + stopped.error().message();
      report.exit_code = kExitCorral;
    }
  }
  if (!report.error.empty()) errorLine(report.error);
  if (inv.json || report_fd.valid()) {
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
    if (egress) egress->addToReport(extra);
    if (backend_extra)
      for (const auto& [key, value] : backend_extra->items()) extra[key] = value;
    std::string json = renderReport(report, &extra);
    if (report_fd.valid()) {
      if (auto w = writeReport(report_fd, *inv.report_file, json); !w) {
        errorLine(w.error().message());
        return kExitCorral;
      }
    }
    if (inv.json) std::fprintf(stderr, "%s\n", json.c_str());
  }
  return report.exit_code;
}

// --net proxy's egress, started the same way for both backends (none without --net proxy).
Result<std::unique_ptr<ExecEgress>> startEgress(ExecInvocation& inv, const ExecEnvironment& env) {
  if (!inv.net_proxy) return std::unique_ptr<ExecEgress>();
  auto started = env.start_egress(inv);
  if (!started) return started.error().wrap("--net proxy");
  return std::move(*started);
}

// --backend vm: run_vm refuses what the VM cannot honour before anything starts. A run
// under TCG says so on stderr: it is the weaker choice the caller accepted. --net proxy
// starts the same egress proxy as the namespace backend; the VM relays to its channel.
int runVmBackend(ExecInvocation& inv, const ExecEnvironment& env, const UniqueFd& report_fd) {
  sandbox::RunReport failed;
  if (inv.timing) failed.error = "--timing: not with --backend vm (the JSON report's vm.timings has the boot breakdown)";
  else if (!env.run_vm) failed.error = "--backend vm: this corral binary has no VM backend";
  else if (inv.ssh_key) failed.error = "--ssh-key: not with --backend vm (its agent socket would be a host file shared with the guest)";
  if (!failed.error.empty()) return finish(inv, report_fd, failed);
  auto started = startEgress(inv, env);
  if (!started) {
    failed.error = started.error().message();
    return finish(inv, report_fd, failed);
  }
  std::unique_ptr<ExecEgress> egress = std::move(*started);
  auto run = env.run_vm(inv);
  if (!run) {
    failed.error = run.error().message();
    return finish(inv, report_fd, failed, egress.get());
  }
  if (run->extra["vm"].value("accelerator", "") == "tcg")
    std::fprintf(stderr, "corral: level=warn event=vm accelerator=tcg reason=\"%s\"\n",
                 oneLine(run->extra["vm"].value("kvm_unusable", "")).c_str());
  return finish(inv, report_fd, run->report, egress.get(), &run->extra);
}

}  // namespace

int execMain(const std::vector<std::string>& args, const ExecEnvironment& env) {
  auto parsed = parseExecArgs(args);
  if (!parsed) {
    errorLine(parsed.error().message());
    return kExitCorral;
  }
  ExecInvocation& inv = *parsed;
  if (inv.help) {
    std::fputs(execUsage().c_str(), stdout);
    return 0;
  }
  if (inv.backend_vm && !env.run_vm && env.hand_off_vm) return env.hand_off_vm();
  sandbox::RunReport failed;
  UniqueFd report_fd;
  if (inv.report_file) {
    auto opened = openReportFile(*inv.report_file);
    if (!opened) {
      failed.error = opened.error().message();
      return finish(inv, report_fd, failed);
    }
    report_fd = std::move(*opened);
  }
  if (auto ok = checkHostPaths(inv.spec); !ok) {
    failed.error = ok.error().message();
    return finish(inv, report_fd, failed);
  }
  if (inv.backend_vm) return runVmBackend(inv, env, report_fd);
  auto started = startEgress(inv, env);
  if (!started) {
    failed.error = started.error().message();
    return finish(inv, report_fd, failed);
  }
  std::unique_ptr<ExecEgress> egress = std::move(*started);
  sandbox::RunOptions options{.timing = inv.timing, .before_command = {}};
  if (egress) options.before_command = [&egress](int signals) -> Result<void> {
    auto ready = egress->ready(signals);
    if (!ready) return ready.error().wrap("--net proxy");
    return {};
  };
  auto report = sandbox::runLinux(inv.spec, options);
  if (!report) {
    failed.error = report.error().message();
    return finish(inv, report_fd, failed, egress.get());
  }
  return finish(inv, report_fd, *report, egress.get());
}

}  // namespace corral::cli
