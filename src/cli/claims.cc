// SPDX-License-Identifier: Apache-2.0
// `corral claims`: translates flags and runs python3 scripts/claims.py, which owns the ledger.
#include "cli/claims.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cli/option_echo.h"

// The lead's CMake sets this to the source tree; "." keeps a stray build working from there.
#ifndef CORRAL_SOURCE_DIR
#define CORRAL_SOURCE_DIR "."
#endif

extern char** environ;

namespace corral::cli {
namespace {

constexpr int kExitRefused = 125;

constexpr char kUsage[] =
    "usage: corral claims [--build DIR] [--render FILE] [--junit [MODE=]FILE]... [--no-run] [--check]\n"
    "  Runs the security tests in DIR (default: where this corral binary lives), as root also as\n"
    "  nobody, and prints each claim's status from claims/*.toml; --render writes SECURITY.md.\n"
    "  --junit uses existing results instead of running; --check only validates the ledger.\n";

// The directory of /proc/self/exe: a build tree's corral sits at its top.
Result<std::string> ownBuildDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n < 0) return sysError("readlink /proc/self/exe");
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return Error(Errc::kUnsupported, "cannot tell the build dir of " + path);
  return path.substr(0, slash == 0 ? 1 : slash);
}

// Flags of `corral claims` -> arguments of scripts/claims.py (after the script path).
Result<std::vector<std::string>> scriptArgs(int argc, char** argv) {
  std::vector<std::string> out;
  std::string build;
  bool run = true;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&]() -> Result<std::string> {
      if (i + 1 >= argc) return Error(Errc::kInvalidArgument, std::string(arg) + " needs a value");
      return std::string(argv[++i]);
    };
    if (arg == "--build") {
      ASSIGN_OR_RETURN(build, value());
    } else if (arg == "--render" || arg == "--junit") {
      ASSIGN_OR_RETURN(std::string v, value());
      out.insert(out.end(), {std::string(arg), v});
      if (arg == "--junit") run = false;
    } else if (arg == "--no-run") {
      run = false;
    } else if (arg == "--check") {
      check = true;
    } else {
      return Error(Errc::kInvalidArgument, "unknown option " + optionName(arg));
    }
  }
  if (check) return std::vector<std::string>{"--check"};
  if (build.empty()) {
    ASSIGN_OR_RETURN(build, ownBuildDir());
  }
  out.insert(out.begin(), {"--build", build});
  if (run) out.emplace_back("--run");
  return out;
}

// posix_spawnp, then wait: the script's status as corral's (128+N for a signal).
Result<int> spawnAndWait(const std::vector<std::string>& args) {
  std::vector<char*> cargv;
  cargv.reserve(args.size() + 1);
  for (const std::string& a : args) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = 0;
  int err = ::posix_spawnp(&pid, cargv[0], nullptr, nullptr, cargv.data(), environ);
  if (err == ENOENT) return Error(Errc::kUnsupported, "python3 not found in PATH");
  if (err != 0) return sysError("spawn python3", err);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return sysError("waitpid python3");
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

int claimsMain(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  auto args = scriptArgs(argc, argv);
  if (!args) {
    std::fprintf(stderr, "corral: claims: %s (try corral claims --help)\n", oneLine(args.error().message()).c_str());
    return kExitRefused;
  }
  std::string script = std::string(CORRAL_SOURCE_DIR) + "/scripts/claims.py";
  if (::access(script.c_str(), R_OK) != 0) {
    Error e = sysError(script);
    std::fprintf(stderr, "corral: claims: cannot read the ledger script: %s\n", oneLine(e.message()).c_str());
    return kExitRefused;
  }
  std::vector<std::string> full = {"python3", script};
  full.insert(full.end(), args->begin(), args->end());
  auto status = spawnAndWait(full);
  if (!status) {
    std::fprintf(stderr, "corral: claims: %s\n", oneLine(status.error().message()).c_str());
    return kExitRefused;
  }
  return *status;
}

}  // namespace corral::cli
