// SPDX-License-Identifier: Apache-2.0
// corral-audit-testwriter: writes a sample run record through the real audit API, for the
// independent verifier's test (tests/audit/audit_interop_test.py). Test-only; not installed.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "audit/record_dir.h"
#include "audit/result.h"
#include "base/sha256.h"
#include "audit/signing.h"
#include "audit/trace.h"

namespace {

constexpr char kUsage[] =
    "usage: corral-audit-testwriter WORKSPACE [--entries N] [--signing-key FILE]\n"
    "  Appends N (default 7) run-like entries to WORKSPACE/.corral/trace.jsonl and writes\n"
    "  result.json, signed with --signing-key FILE or $CORRAL_AUDIT_PRIVATE_KEY when set.\n";

int fail(const corral::Error& e) {
  std::fprintf(stderr, "corral-audit-testwriter: %s\n", e.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape): a test tool; bad_alloc may end it
  using namespace corral::audit;
  std::string workspace, key_file;
  int entries = 7;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--entries" && i + 1 < argc) {
      char* end = nullptr;
      long n = std::strtol(argv[++i], &end, 10);
      entries = *end == '\0' && n >= 2 && n <= 100000 ? static_cast<int>(n) : -1;
    }
    else if (a == "--signing-key" && i + 1 < argc) key_file = argv[++i];
    else if (!a.empty() && a[0] != '-' && workspace.empty()) workspace = a;
    else {
      std::fputs(kUsage, stderr);
      return 125;
    }
  }
  if (workspace.empty() || entries < 2) {
    std::fputs(kUsage, stderr);
    return 125;
  }
  auto pem = loadSigningKeyPem(key_file, workspace);
  if (!pem) return fail(pem.error());
  std::optional<SigningKey> key;
  if (pem->has_value()) {
    auto k = SigningKey::fromPem(**pem);
    if (!k) return fail(k.error());
    key.emplace(std::move(*k));
  }
  auto trace = TraceWriter::openInWorkspace(workspace);
  if (!trace) return fail(trace.error());
  const std::string manifest_sha256 = sha256Hex("{\"task\":\"sample\"}");
  for (int i = 0; i < entries; ++i) {
    nlohmann::json data;
    const char* type = "tool_call";
    if (i == 0) type = "run_start", data = {{"corral", "0.1.0"}, {"apply", true}};
    else if (i == 1) type = "manifest", data = {{"sha256", manifest_sha256}};
    else if (i == entries - 1) type = "run_end", data = {{"status", "finished"}};
    else if (i % 4 == 0) data = {{"tool", "run"}, {"decision", "refuse"}, {"rule", "allowlist"}, {"reason", "\"curl\" is not an allowed executable"}};
    else
      data = {{"tool", "run"},   {"argv", {"make", "test"}}, {"exit", i % 3},
              {"stdout_bytes", 40 * i}, {"stdout_sha256", sha256Hex(std::to_string(i))},
              {"note", "tab\t quote\" caf\xc3\xa9 \xf0\x9f\x98\x80 ctl\x01"}};
    if (auto r = trace->append(type, data); !r) return fail(r.error());
  }
  auto dir = openRecordDir(workspace, false);
  if (!dir) return fail(dir.error());
  nlohmann::json body = {{"status", "finished"}, {"turns", entries}, {"summary_sha256", sha256Hex("done")}};
  if (auto r = finishRecord(*dir, *trace, manifest_sha256, body, key ? &*key : nullptr); !r) return fail(r.error());
  std::printf("head=%s count=%llu signed=%s\n", trace->head().c_str(), static_cast<unsigned long long>(trace->count()),
              key ? "yes" : "no");
  return 0;
}
