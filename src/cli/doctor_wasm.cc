// SPDX-License-Identifier: Apache-2.0
// The Wasm backend's doctor line.
#include "cli/doctor_wasm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/read_fd.h"
#include "base/unique_fd.h"
#include "cli/wasm_run.h"
#include "policy/units.h"
#include "sandbox/linux_backend.h"
#include "wasm/cache.h"

namespace corral::cli {
namespace {

bool executable(const char* path) {
  struct stat st {};
  return ::stat(path, &st) == 0 && S_ISREG(st.st_mode) && ::access(path, X_OK) == 0;
}

// The first line `tool --version` prints, run in a default sandbox (no network, empty
// environment, stdin /dev/null): where and how the compile child runs it.
Result<std::string> versionLine(const char* tool) {
  UniqueFd out(::memfd_create("corral-doctor-version", MFD_CLOEXEC));
  if (!out.valid()) return sysError("memfd_create");
  UniqueFd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_in.valid()) return sysError("/dev/null");
  sandbox::SandboxSpec spec;
  spec.argv = {tool, "--version"};
  spec.env = {"PATH=/usr/bin:/bin", "LANG=C"};
  spec.stdio.in = null_in.get();
  spec.stdio.out = out.get();
  spec.stdio.err = out.get();
  spec.limits.timeout = std::chrono::seconds(10);
  ASSIGN_OR_RETURN(sandbox::RunReport r, sandbox::runLinux(spec, {}));
  if (r.exit_code != 0) return Error(Errc::kIo, std::string(tool) + " --version exited " + std::to_string(r.exit_code));
  if (::lseek(out.get(), 0, SEEK_SET) < 0) return sysError("lseek");
  ASSIGN_OR_RETURN(std::string text, readUpTo(out.get(), 4096, std::string(tool) + " --version"));
  return policy::printable(text.substr(0, text.find('\n')).substr(0, 120));
}

// One thing that keeps the backend from running, and what to do about it.
struct Problem {
  std::string what, fix;
};

nlohmann::json tool(const char* path, const char* package, std::vector<Problem>& problems) {
  nlohmann::json j = {{"path", path}, {"version", nullptr}};
  if (!executable(path)) {
    problems.push_back({std::string(path) + " not found", std::string("apt-get install ") + package});
    return j;
  }
  auto v = versionLine(path);
  if (v) j["version"] = *v;
  else problems.push_back({std::string(path) + ": " + v.error().message(), "see `corral doctor`'s default exec line"});
  return j;
}

// The cache a run without --cache uses (CORRAL_WASM_CACHE, XDG_CACHE_HOME or HOME).
nlohmann::json cacheState() {
  auto root = wasm::cacheRootPath(std::nullopt);
  if (!root) return {{"path", nullptr}, {"state", "unusable"}, {"detail", root.error().message()}};
  nlohmann::json j = {{"path", *root}};
  struct stat st {};
  if (::lstat(root->c_str(), &st) != 0 && errno == ENOENT) {
    j["state"] = "absent";
    j["detail"] = "created (mode 0700) by the first compile";
    return j;
  }
  auto opened = wasm::openCacheRoot(*root);
  j["state"] = opened ? "usable" : "unusable";
  j["detail"] = opened ? "owned by this user, writable by no one else" : opened.error().message();
  return j;
}

}  // namespace

nlohmann::json wasmState() {
  std::vector<Problem> problems;
  nlohmann::json j;
  j["wasm2c"] = tool(wasm::kWasm2c, "wabt", problems);
  j["cc"] = tool(wasm::kCompiler, "gcc", problems);
  auto guest = wasmGuestBinaryPath();
  j["guest"] = guest ? nlohmann::json(*guest) : nlohmann::json(nullptr);
  if (!guest) problems.push_back({guest.error().message(), "build or install corral-wasm-guest beside corral-core"});
  j["cache"] = cacheState();
  if (j["cache"]["state"] == "unusable")
    problems.push_back({j["cache"]["detail"].get<std::string>(), "give the cache to this user alone (chmod 0700), or --cache DIR"});
  j["state"] = problems.empty() ? "ok" : "unavailable";
  std::string detail, fix;
  for (const Problem& p : problems) {
    detail += (detail.empty() ? "" : "; ") + p.what;
    fix += (fix.empty() ? "" : "; ") + p.fix;
  }
  if (problems.empty())
    detail = "wasm2c " + j["wasm2c"]["version"].get<std::string>() + ", " + j["cc"]["version"].get<std::string>() + "; cache " +
             j["cache"]["path"].get<std::string>() + " " + j["cache"]["state"].get<std::string>() + "; guest runner " +
             j["guest"].get<std::string>();
  j["detail"] = detail;
  j["fix"] = fix;
  return j;
}

}  // namespace corral::cli
