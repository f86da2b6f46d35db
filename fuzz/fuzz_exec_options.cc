// SPDX-License-Identifier: Apache-2.0
// Fuzzes parseExecArgs with NUL-separated argv: one-line errors, no secret echo, valid specs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "cli/exec_options.h"
#include "policy/env_policy.h"
#include "policy/path_policy.h"

namespace corral::fuzz {
namespace {

using Args = std::vector<std::string>;

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Starts with a letter no escape in printable() ends with ("\x0c" + "orral-..." would
// otherwise spell a sentinel out of harmless input).
constexpr std::string_view kSentinel = "SENTINEL-corral-7f3a";

// The same arguments with every --env value and --allow URL replaced by a sentinel, found the
// way parseExecArgs finds option values. Neither value changes how parsing goes (an --env
// value only may not hold NUL, which argv cannot; an --allow URL is not looked at), so the
// sentinel run takes the same path, and its error must not contain the sentinel: those
// values may carry credentials.
Args withSentinels(Args args) {
  const std::set<std::string_view> kFlags = {"--json", "--timing", "--help", "-h"};
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--" || a.size() < 2 || a[0] != '-') break;  // options end here
    size_t eq = a.find('=');
    std::string name = a.substr(0, eq);
    bool secret_env = name == "--env", secret_allow = name == "--allow";
    if (eq == std::string::npos && !kFlags.count(name) && i + 1 < args.size() && !startsWith(args[i + 1], "--")) {
      std::string& v = args[++i];
      if (secret_env && v.find('=') != std::string::npos) v = v.substr(0, v.find('=') + 1) + std::string(kSentinel);
      if (secret_allow && !v.empty()) v = kSentinel;
      continue;
    }
    if (eq == std::string::npos) continue;
    std::string v = a.substr(eq + 1);
    if (secret_env && v.find('=') != std::string::npos)
      a = name + "=" + v.substr(0, v.find('=') + 1) + std::string(kSentinel);
    if (secret_allow && !v.empty()) a = name + "=" + std::string(kSentinel);
  }
  return args;
}

void checkAccepted(const Args& args, const cli::ExecInvocation& inv) {
  if (inv.help) return;  // --help stops parsing: nothing else is promised
  const auto& spec = inv.spec;
  PROPERTY(!spec.argv.empty() && !spec.argv[0].empty(), "accepted without a command");
  PROPERTY(spec.argv.size() <= args.size() &&
               std::equal(spec.argv.begin(), spec.argv.end(), args.end() - static_cast<std::ptrdiff_t>(spec.argv.size())),
           "argv is not the tail of the arguments");
  for (const std::string& a : spec.argv) PROPERTY(a.find('\0') == std::string::npos, "NUL in argv");

  std::set<std::string> keys;
  std::string prev;
  for (const std::string& kv : spec.env) {
    size_t eq = kv.find('=');
    PROPERTY(eq != std::string::npos, "env entry without '=': " + kv);
    std::string key = kv.substr(0, eq);
    PROPERTY(policy::env::parseAssignment(kv).ok(), "env entry fails parseAssignment: " + key);
    PROPERTY(keys.insert(key).second, "env key twice: " + key);
    PROPERTY(prev.empty() || prev < key, "env not sorted at " + key);
    prev = key;
  }
  for (const std::string& base : policy::env::baseEnvironment()) {
    std::string key = base.substr(0, base.find('='));
    PROPERTY(keys.count(key) == 1, "base variable missing: " + key);
  }

  std::set<std::string> outs(spec.outputs.begin(), spec.outputs.end());
  PROPERTY(outs.size() == spec.outputs.size(), "duplicate output accepted");
  for (const std::string& o : spec.outputs) PROPERTY(policy::path::outputPath(o).ok(), "bad output accepted: " + o);
  std::set<std::string> targets;
  for (const auto& b : spec.ro_binds) {
    PROPERTY(!b.host.empty() && b.host.front() == '/' && noControlBytes(b.host), "bad bind host accepted: " + b.host);
    PROPERTY(policy::path::sandboxMountPath(b.sandbox).ok(), "bad bind target accepted: " + b.sandbox);
    PROPERTY(targets.insert(b.sandbox).second, "duplicate bind target accepted: " + b.sandbox);
  }
  if (spec.workspace) PROPERTY(noControlBytes(*spec.workspace), "control byte in --workspace accepted");
  if (inv.report_file) PROPERTY(noControlBytes(*inv.report_file), "control byte in --report accepted");

  const auto& l = spec.limits;
  PROPERTY(!l.memory_bytes || *l.memory_bytes > 0, "zero memory limit");
  PROPERTY(l.pids >= 1 && l.pids <= (1u << 20), "pids out of range");
  PROPERTY(l.open_files >= 1 && l.open_files <= (1u << 20), "open-files out of range");
  PROPERTY(l.file_size_bytes > 0 && l.tmp_bytes > 0 && l.workspace_bytes > 0, "zero size limit");
  PROPERTY(!l.timeout || l.timeout->count() > 0, "zero timeout");
  PROPERTY(!l.cpu_time || l.cpu_time->count() > 0, "zero cpu-time");
  std::set<sandbox::Limit> weaker(l.allow_weaker.begin(), l.allow_weaker.end());
  PROPERTY(weaker.size() == l.allow_weaker.size(), "--allow-weaker entry twice");
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::fuzz;
  // argv split on NUL, as the kernel hands it over: "--memory\0" "64M\0" "--\0" "true".
  Args args;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  while (start <= text.size() && args.size() < 256) {
    size_t nul = text.find('\0', start);
    args.emplace_back(text.substr(start, nul == std::string_view::npos ? std::string_view::npos : nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  auto r = corral::cli::parseExecArgs(args);
  PROPERTY_ONE_LINE_ERROR(r);
  if (!r.ok()) {
    PROPERTY(r.error().code() == static_cast<int>(corral::Errc::kInvalidArgument), r.error().message());
    // The fuzzer learns the sentinel from the comparison below; an input that already holds
    // it proves nothing.
    for (const std::string& a : args)
      if (a.find(kSentinel) != std::string::npos) return 0;
    if (r.error().message().find(kSentinel) != std::string::npos) return 0;
    auto hidden = corral::cli::parseExecArgs(withSentinels(args));
    PROPERTY(!hidden.ok(), "replacing --env/--allow values changed the verdict: " + r.error().message());
    PROPERTY(hidden.error().message().find(kSentinel) == std::string::npos,
             "error echoes an --env value or --allow URL: " + hidden.error().message());
    return 0;
  }
  checkAccepted(args, *r);
  return 0;
}
