// SPDX-License-Identifier: Apache-2.0
// The compile pipeline: scan, then wasm2c + cc in a sandboxed child, into the cache.
#include "wasm/compile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "base/read_fd.h"
#include "base/remove_tree.h"
#include "base/unique_fd.h"
#include "policy/units.h"
#include "sandbox/linux_backend.h"
#include "wasm/cache.h"
#include "wasm/guest_shim.h"
#include "wasm/wasi_imports.h"

namespace corral::wasm {
namespace {

Result<void> writeFileAt(int dir, const char* name, std::string_view data) {
  UniqueFd fd(::openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return sysError(std::string("wasm cache: write ") + name);
  for (size_t off = 0; off < data.size();) {
    const ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sysError(std::string("wasm cache: write ") + name);
    off += static_cast<size_t>(n);
  }
  return {};
}

// The last non-empty line of the compile log, cut and made printable: enough to say why,
// without pouring generated C into the terminal.
std::string lastLogLine(int log) {
  if (::lseek(log, 0, SEEK_SET) < 0) return "";
  auto text = readUpTo(log, 1 << 20, "compile log");
  if (!text) return "";
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  const size_t nl = s.rfind('\n');
  if (nl != std::string::npos) s = s.substr(nl + 1);
  return policy::printable(s.substr(0, 200));
}

// The child: only fixed strings, no byte of the module is ever part of the command.
std::string compileScript(const ImportModules& m) {
  return std::string("set -e\n") + kWasm2c + " --version > toolchain.txt\n" + kCompiler +
         " --version | head -n 1 >> toolchain.txt\n" + kWasm2c +
         " --no-debug-names -n corral module.wasm -o module.c\n" + kCompiler +
         " " + kCcFlags + " " + m.defines() + " -o module.so module.c shim.c -lm\n";
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Result<void> runCompileChild(const std::string& dir_path, int dir, const ImportModules& m, const CompileOptions& o) {
  UniqueFd log(::openat(dir, "compile.log", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log.valid()) return sysError("wasm cache: compile.log");
  sandbox::SandboxSpec spec;
  spec.argv = {"/bin/sh", "-c", compileScript(m)};
  spec.env = {"PATH=/usr/bin:/bin", "HOME=/workspace", "TMPDIR=/tmp", "LANG=C"};
  spec.workspace = dir_path;
  spec.outputs = {"module.so", "toolchain.txt"};
  spec.limits.cpu_time = o.cpu_time;
  spec.limits.timeout = o.timeout;
  spec.limits.memory_bytes = o.memory_bytes;
  // Rootless without a delegated cgroup, RLIMIT_AS on each compiler process still bounds it.
  spec.limits.allow_weaker = {sandbox::Limit::kMemory};
  spec.limits.file_size_bytes = o.output_bytes;
  spec.limits.pids = 64;
  spec.limits.tmp_bytes = 1ull << 30;
  spec.limits.workspace_bytes = 1ull << 30;
  // stdin is /dev/null: the caller's stdin is the guest's, and exec relays what it reads, so
  // a compile child on corral's stdin would eat the guest's input.
  UniqueFd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_in.valid()) return sysError("wasm compile: /dev/null");
  spec.stdio.in = null_in.get();
  spec.stdio.out = log.get();
  spec.stdio.err = log.get();
  auto report = sandbox::runLinux(spec, {});
  if (!report) return report.error().wrap("wasm compile child");
  if (report->killed_by != sandbox::KilledBy::kNone)
    return Error(Errc::kLimit, std::string("wasm compile child: killed (") + sandbox::killedByName(report->killed_by) +
                                   "); the module is too costly to compile under the compile limits");
  if (report->exit_code != 0) {
    std::string why = lastLogLine(log.get());
    return Error(Errc::kRefused, "wasm compile child failed (exit " + std::to_string(report->exit_code) + ")" +
                                     (why.empty() ? "" : ": " + why));
  }
  for (const sandbox::OutputResult& out : report->outputs)
    if (out.status != sandbox::OutputResult::Status::kCopied)
      return Error(Errc::kRefused, "wasm compile child: " + out.path + " not produced (" + out.reason + ")");
  return {};
}

}  // namespace

Result<Compiled> compileModule(const std::string& path, const CompileOptions& o) {
  ASSIGN_OR_RETURN(Lookup l, lookupModule(path, o.cache, o.caps));
  Compiled& c = l.module;
  if (c.cache_hit) return std::move(l.module);
  const UniqueFd& root = l.root;
  const std::string& root_path = l.root_path;
  const ImportModules& modules = l.imports;
  const auto t0 = std::chrono::steady_clock::now();
  std::string tmp = root_path + "/tmp-XXXXXX";
  if (!::mkdtemp(tmp.data())) return sysError("wasm cache: mkdtemp in " + root_path);
  const std::string tmp_name = tmp.substr(root_path.size() + 1);
  UniqueFd dir(::openat(root.get(), tmp_name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return sysError("wasm cache: open " + tmp);
  auto built = [&]() -> Result<void> {
    RETURN_IF_ERROR(writeFileAt(dir.get(), "module.wasm", c.info.stripped));
    RETURN_IF_ERROR(writeFileAt(dir.get(), "shim.c", kGuestShimSource));
    RETURN_IF_ERROR(runCompileChild(tmp, dir.get(), modules, o));
    for (const char* scratch : {"module.wasm", "shim.c", "compile.log"}) ::unlinkat(dir.get(), scratch, 0);
    // Copy-back wrote module.so itself (it refuses links), so the name is a plain file.
    RETURN_IF_ERROR(sealEntry(dir.get()));
    if (::renameat(root.get(), tmp_name.c_str(), root.get(), c.key.c_str()) != 0 && errno != EEXIST && errno != ENOTEMPTY)
      return sysError("wasm cache: rename into place");
    return {};
  }();
  // On failure, or when another process put the same key in place first, the scratch
  // directory goes; what is in place is judged by findEntry like any hit.
  if (UniqueFd still(::openat(root.get(), tmp_name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)); still.valid())
    removeTreeAt(root.get(), tmp_name.c_str(), still.get());
  if (!built.ok()) return built.error();
  c.compile_ms = msSince(t0);
  ASSIGN_OR_RETURN(std::optional<std::string> placed, findEntry(root, root_path, c.key));
  if (!placed) return Error(Errc::kIo, "wasm cache: entry " + c.key + " vanished after compiling");
  c.so_path = *placed;
  return std::move(l.module);
}

}  // namespace corral::wasm
