// SPDX-License-Identifier: Apache-2.0
// `corral verify`: flags in, audit::verifyRecord, one line (or --json) out.
#include "cli/verify.h"

#include "base/read_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "audit/verify.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "cli/option_echo.h"

namespace corral::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 125;

constexpr char kUsage[] =
    "usage: corral verify WORKSPACE [--public-key PEM] [--trusted-head HEX] [--record-only] [--json]\n"
    "  Verifies WORKSPACE/.corral: the trace's hash chain, result.json's commitments (trace\n"
    "  head and count, body hash) and, with --public-key, its Ed25519 signature; with\n"
    "  --trusted-head, that the trace ends at that head; and that each output the run applied\n"
    "  to WORKSPACE is there as it wrote it (--record-only: the record alone).\n"
    "  Exit 0 verified, 1 failed, 125 usage. Format: docs/audit-format.md.\n";

struct Args {
  std::string workspace;
  std::string public_key_file;
  std::optional<std::string> trusted_head;
  bool json = false;
  bool help = false;
  bool record_only = false;
};

Result<Args> parseArgs(const std::vector<std::string>& args) {
  Args out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    auto value = [&](std::string_view flag) -> Result<std::string> {
      if (a.size() > flag.size() && a.substr(0, flag.size()) == flag && a[flag.size()] == '=')
        return std::string(a.substr(flag.size() + 1));
      if (i + 1 >= args.size()) return Error(Errc::kInvalidArgument, std::string(flag) + " needs a value");
      return args[++i];
    };
    auto is = [&](std::string_view flag) { return a == flag || (a.size() > flag.size() && a.substr(0, flag.size() + 1) == std::string(flag) + "="); };
    if (a == "-h" || a == "--help") {
      out.help = true;
    } else if (a == "--json") {
      out.json = true;
    } else if (a == "--record-only") {
      out.record_only = true;
    } else if (is("--public-key")) {
      ASSIGN_OR_RETURN(out.public_key_file, value("--public-key"));
    } else if (is("--trusted-head")) {
      ASSIGN_OR_RETURN(std::string head, value("--trusted-head"));
      for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.trusted_head = head;
    } else if (!a.empty() && a[0] == '-') {
      return Error(Errc::kInvalidArgument, "unknown option " + optionName(a) + " (try corral verify --help)");
    } else if (out.workspace.empty()) {
      out.workspace = a;
    } else {
      return Error(Errc::kInvalidArgument, "one WORKSPACE only (got a second: " + policy::printable(a) + ")");
    }
  }
  if (!out.help && out.workspace.empty()) return Error(Errc::kInvalidArgument, "missing WORKSPACE");
  return out;
}

Result<std::string> readPem(const std::string& path) {
  constexpr size_t kMax = size_t{16} * 1024;
  int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (raw < 0) return sysError("--public-key " + path);
  UniqueFd fd(raw);
  ASSIGN_OR_RETURN(std::string out, readUpTo(fd.get(), kMax, "--public-key " + path));
  if (out.size() > kMax) return Error(Errc::kInvalidArgument, "--public-key " + path + " is too large for a PEM key");
  return out;
}

const char* signatureName(audit::SignatureStatus s) {
  switch (s) {
    case audit::SignatureStatus::kAbsent: return "absent";
    case audit::SignatureStatus::kNotChecked: return "not_checked";
    case audit::SignatureStatus::kValid: return "valid";
  }
  return "absent";
}

void printJson(const audit::VerifyReport& r) {
  nlohmann::json j = {{"ok", r.ok},
                      {"failure", r.ok ? nlohmann::json(nullptr) : nlohmann::json(r.failure)},
                      {"trace_count", r.trace_count},
                      {"trace_head", r.trace_head},
                      {"manifest_sha256", r.manifest_sha256},
                      {"result_body_sha256", r.result_body_sha256},
                      {"signature", signatureName(r.signature)},
                      {"public_key_spki_sha256", r.public_key_spki_sha256},
                      {"run_start_line", r.run_start_line},
                      {"prior_lines", r.prior_lines},
                      {"prior", r.prior.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.prior)},
                      {"unvouched_lines", r.unvouched_lines},
                      {"unvouched_run_start_line", r.unvouched_run_start_line},
                      {"unvouched_prior", r.unvouched_prior.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.unvouched_prior)},
                      {"outputs_checked", r.outputs_checked}};
  std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

void printText(const audit::VerifyReport& r, bool record_only) {
  std::string outputs = "outputs not compared (--record-only)";
  if (!record_only)
    outputs = std::to_string(r.outputs_checked) +
              (r.outputs_checked == 1 ? " applied output matches the workspace" : " applied outputs match the workspace");
  std::string sig;
  switch (r.signature) {
    case audit::SignatureStatus::kAbsent: sig = "unsigned"; break;
    case audit::SignatureStatus::kNotChecked:
      // Anyone can paste a signature block in: say plainly that nothing vouches for it.
      sig = "signature present but NOT checked (it names key " + r.public_key_spki_sha256 +
            "; pass --public-key to check it)";
      break;
    case audit::SignatureStatus::kValid: sig = "signature valid, key " + r.public_key_spki_sha256; break;
  }
  std::printf("corral: verify: ok: %llu trace lines, head %s, manifest %s; %s; %s\n",
              static_cast<unsigned long long>(r.trace_count), r.trace_head.c_str(), r.manifest_sha256.c_str(),
              sig.c_str(), outputs.c_str());
  if (r.unvouched_lines > 0) {
    // A signature covers every line, but a run only found the lines before it there: the
    // widest prefix any run found without a result it could check is vouched for by nobody.
    std::string how;
    if (r.unvouched_prior == "unsealed")
      how = "NOT sealed by any result (a crashed run, or lines written by something else)";
    else if (r.unvouched_prior == "sealed-unsigned")
      how = "sealed only by an unsigned result, which anyone can write";
    else if (r.unvouched_prior == "sealed-signature-invalid")
      how = "sealed by a result whose signature did NOT verify";
    else if (r.unvouched_prior == "sealed-signed-other-key")
      how = "sealed by a result signed with another key, not checked";
    else
      how = "of unrecorded provenance";
    std::printf("corral: verify: note: lines 1-%llu were %s when the run starting at line %llu began: nothing "
                "vouches for how they were made\n",
                static_cast<unsigned long long>(r.unvouched_lines), how.c_str(),
                static_cast<unsigned long long>(r.unvouched_run_start_line));
  } else if (r.prior_lines > 0) {
    std::printf("corral: verify: note: lines 1-%llu predate the run that wrote result.json; each earlier run's "
                "result was signed with the same key and checked by the run after it\n",
                static_cast<unsigned long long>(r.prior_lines));
  }
}

}  // namespace

int verifyMain(const std::vector<std::string>& args) {
  auto parsed = parseArgs(args);
  if (!parsed) {
    std::fprintf(stderr, "corral: verify: %s\n", oneLine(parsed.error().message()).c_str());
    return kExitUsage;
  }
  if (parsed->help) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  std::optional<audit::PublicKey> key;
  if (!parsed->public_key_file.empty()) {
    auto pem = readPem(parsed->public_key_file);
    if (!pem) {
      std::fprintf(stderr, "corral: verify: %s\n", oneLine(pem.error().message()).c_str());
      return kExitUsage;
    }
    auto k = audit::PublicKey::fromPem(*pem);
    if (!k) {
      std::fprintf(stderr, "corral: verify: %s\n",
                   oneLine("--public-key " + parsed->public_key_file + ": " + k.error().message()).c_str());
      return kExitUsage;
    }
    key.emplace(std::move(*k));
  }
  audit::VerifyOptions options;
  options.public_key = key ? &*key : nullptr;
  options.trusted_head = parsed->trusted_head;
  options.check_outputs = !parsed->record_only;
  auto report = audit::verifyRecord(parsed->workspace, options);
  if (!report) {
    std::fprintf(stderr, "corral: verify: %s\n", oneLine(report.error().message()).c_str());
    return kExitUsage;
  }
  if (parsed->json) printJson(*report);
  if (!report->ok) {
    std::fprintf(stderr, "corral: verify: %s\n", oneLine(report->failure).c_str());
    return kExitFailed;
  }
  if (!parsed->json) printText(*report, parsed->record_only);
  return kExitOk;
}

}  // namespace corral::cli
