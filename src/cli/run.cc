// SPDX-License-Identifier: Apache-2.0
// `corral run`: flags in, agent::runManifest, a short summary (or --json) out.
#include "cli/run.h"

#include <cstdio>
#include <string_view>

#include "agent/runner.h"
#include "cli/option_echo.h"
#include "cli/run_session.h"

namespace corral::cli {
namespace {

constexpr char kUsage[] =
    "usage: corral run MANIFEST [--workspace DIR] [--apply] [--json] [--signing-key FILE]\n"
    "                           [--trace-content hashes|full] [--session ID]\n"
    "                           [--backend namespace|vm [--allow-weaker kvm]]\n"
    "  Drives the manifest's model through policy-gated tools (read, write, run, mailbox, spawn,\n"
    "  finish). Without --apply, writes and commands are validated and traced but not applied.\n"
    "  WORKSPACE defaults to the manifest's folder; the audit record goes to WORKSPACE/.corral.\n"
    "  Signs result.json with --signing-key FILE or $CORRAL_AUDIT_PRIVATE_KEY (PEM text).\n"
    "  The trace holds hashes and sizes; --trace-content full also keeps every hashed content\n"
    "  (task, model text, tool arguments, files, output shown to the model) as .corral/blobs/<sha256>.\n"
    "  --session ID runs each allowed command in that daemon session (its workspace, shared by the\n"
    "  run's commands), refused (125) when the session grants more than the manifest's sandbox.\n"
    "  --backend vm runs each command in a fresh microVM (docs/vm.md) even where the manifest says\n"
    "  namespace; it cannot turn a manifest's vm into namespace. --allow-weaker kvm (only with\n"
    "  --backend vm over a namespace manifest) accepts TCG emulation where KVM is unusable.\n"
    "  Exit: 0 finished, 1 failed (model endpoint or run error), 2 a budget ended it before\n"
    "  finish, 125 refused before the run started. Manifest format: docs/manifest.md.\n";

struct Args {
  agent::RunRequest request;
  bool json = false;
  bool help = false;
};

Result<Args> parseArgs(const std::vector<std::string>& args) {
  Args out;
  bool have_manifest = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    auto value = [&](std::string_view flag) -> Result<std::string> {
      if (a.size() > flag.size() && a[flag.size()] == '=') return std::string(a.substr(flag.size() + 1));
      if (i + 1 >= args.size()) return Error(Errc::kInvalidArgument, std::string(flag) + " needs a value");
      return args[++i];
    };
    auto is = [&](std::string_view flag) {
      return a == flag || (a.size() > flag.size() && a.substr(0, flag.size()) == flag && a[flag.size()] == '=');
    };
    if (a == "-h" || a == "--help") {
      out.help = true;
    } else if (a == "--apply") {
      out.request.apply = true;
    } else if (a == "--json") {
      out.json = true;
    } else if (is("--workspace")) {
      ASSIGN_OR_RETURN(std::string w, value("--workspace"));
      if (w.empty()) return Error(Errc::kInvalidArgument, "--workspace needs a value");
      out.request.workspace = w;
    } else if (is("--signing-key")) {
      ASSIGN_OR_RETURN(out.request.signing_key_file, value("--signing-key"));
      if (out.request.signing_key_file.empty()) return Error(Errc::kInvalidArgument, "--signing-key needs a value");
    } else if (is("--session")) {
      ASSIGN_OR_RETURN(std::string id, value("--session"));
      if (id.empty()) return Error(Errc::kInvalidArgument, "--session needs a value");
      out.request.open_session = sessionOpener(id);
    } else if (is("--backend")) {
      ASSIGN_OR_RETURN(std::string b, value("--backend"));
      if (b != "namespace" && b != "vm") return Error(Errc::kInvalidArgument, "--backend: expected namespace or vm");
      out.request.backend.backend = b;
    } else if (is("--allow-weaker")) {
      ASSIGN_OR_RETURN(std::string w, value("--allow-weaker"));
      // The manifest's sandbox.allow_weaker holds the limits; a flag can only accept TCG for a VM it chose.
      if (w != "kvm") return Error(Errc::kInvalidArgument, "--allow-weaker: only kvm (limits are the manifest's sandbox.allow_weaker)");
      out.request.backend.allow_kvm = true;
    } else if (is("--trace-content")) {
      ASSIGN_OR_RETURN(std::string v, value("--trace-content"));
      if (v == "hashes") out.request.trace_content = agent::TraceContent::kHashes;
      else if (v == "full") out.request.trace_content = agent::TraceContent::kFull;
      else return Error(Errc::kInvalidArgument, "--trace-content: expected hashes or full");
    } else if (!a.empty() && a[0] == '-') {
      return Error(Errc::kInvalidArgument, "unknown option " + optionName(a) + " (try corral run --help)");
    } else if (!have_manifest) {
      out.request.manifest_path = std::string(a);
      have_manifest = true;
    } else {
      return Error(Errc::kInvalidArgument, "unexpected argument " + policy::printable(a));
    }
  }
  if (!out.help && !have_manifest) return Error(Errc::kInvalidArgument, "missing MANIFEST (try corral run --help)");
  return out;
}

}  // namespace

int runMain(const std::vector<std::string>& args) {
  auto parsed = parseArgs(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "corral: run: %s\n", oneLine(parsed.error().message()).c_str());
    return agent::kRunRefused;
  }
  if (parsed->help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  Result<agent::RunSummary> summary = Error(Errc::kIo, "not run");
  try {
    summary = agent::runManifest(parsed->request);
  } catch (const std::exception& e) {
    // A bug, not an input: errors are values everywhere else. Unwinding still removes the
    // private workspace and releases the record's lock; the trace is left unsealed.
    std::fprintf(stderr, "corral: run: internal error (%s); the record is left without a result\n", oneLine(e.what()).c_str());
    return agent::kRunRefused;
  }
  if (!summary.ok()) {
    std::fprintf(stderr, "corral: run: %s\n", oneLine(summary.error().message()).c_str());
    return agent::kRunRefused;
  }
  // The summary goes to stdout; a run that ended before its work (aborted in its setup, or its
  // model endpoint failing) also says why on stderr, on one line, where scripts look.
  const std::string status = summary->body.value("status", "");
  if (status == "aborted" || status == "model_error")
    std::fprintf(stderr, "corral: run: %s: %s\n", status.c_str(), oneLine(summary->body.value("reason", "")).c_str());
  if (parsed->json) {
    nlohmann::json out = summary->body;
    out["exit_code"] = summary->exit_code;
    out["workspace"] = summary->workspace;
    std::puts(out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::fputs(agent::humanSummary(*summary).c_str(), stdout);
  }
  return summary->exit_code;
}

}  // namespace corral::cli
