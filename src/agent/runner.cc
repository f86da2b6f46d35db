// SPDX-License-Identifier: Apache-2.0
#include "agent/runner.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>

#include "agent/agent_loop.h"
#include "agent/memory_store.h"
#include "agent/provider.h"
#include "agent/tool_common.h"
#include "audit/key_files.h"
#include "audit/record_dir.h"
#include "audit/result.h"
#include "base/sha256.h"
#include "audit/signing.h"
#include "audit/trace.h"
#include "base/open_beneath.h"
#include "base/read_fd.h"
#include "policy/units.h"
#include "sandbox/host_facilities.h"
#include "sandbox/workspace.h"

namespace corral::agent {

using nlohmann::json;

namespace {

std::string randomRunId() {
  unsigned char b[8];
  if (::getrandom(b, sizeof b, 0) != sizeof b) std::abort();
  return "r-" + audit::toHex(std::string_view(reinterpret_cast<char*>(b), sizeof b));
}

policy::Millis monotonicNow() {
  return std::chrono::duration_cast<policy::Millis>(std::chrono::steady_clock::now().time_since_epoch());
}

std::string dirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

Result<std::string> realDir(const std::string& path, const std::string& what) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return sysError(what + " " + path);
  struct stat st;
  if (::stat(buf, &st) != 0) return sysError(what + " " + path);
  if (!S_ISDIR(st.st_mode)) return Error(ENOTDIR, what + " " + path);
  return std::string(buf);
}

struct LoadedManifest {
  policy::Manifest manifest;
  std::string sha256;  // of the file's bytes exactly as read: what result.json commits to
  std::string dir;     // the manifest's folder (relative paths in it resolve from here)
};

Result<LoadedManifest> loadManifest(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return sysError(path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sysError(path);
  if (!S_ISREG(st.st_mode)) return Error(Errc::kInvalidArgument, path + ": not a regular file");
  ASSIGN_OR_RETURN(std::string bytes, readUpTo(fd.get(), policy::kMaxManifestBytes, path));
  if (bytes.size() > policy::kMaxManifestBytes)
    return Error(Errc::kInvalidArgument, path + ": larger than " + std::to_string(policy::kMaxManifestBytes) + " bytes");
  auto m = policy::parseManifest(bytes);
  if (!m.ok()) return m.error().wrap(path);
  ASSIGN_OR_RETURN(std::string dir, realDir(dirOf(path), "manifest folder"));
  return LoadedManifest{std::move(*m), audit::sha256Hex(bytes), std::move(dir)};
}

Result<ProviderConfig> providerConfig(const LoadedManifest& lm) {
  const policy::ModelSpec& ms = lm.manifest.model;
  ProviderConfig c;
  c.provider = ms.provider;
  c.endpoint = ms.endpoint;
  c.model = ms.model;
  c.timeout = ms.timeout;
  c.max_tokens = ms.max_tokens;
  if (!ms.transcript.empty()) c.transcript_path = lm.dir + "/" + ms.transcript;
  if (ms.api_key_env) {
    const char* key = std::getenv(ms.api_key_env->c_str());
    if (key == nullptr || key[0] == '\0')
      return Error(Errc::kInvalidArgument, "model.api_key_env: environment variable " + *ms.api_key_env + " is not set");
    c.api_key.emplace(std::string(key));
  }
  return c;
}

// The type of the trace's last entry and the run it belongs to, to spot an interrupted run.
struct LastEntry {
  std::string type;
  std::string run_id;
};

// obj[key] when obj is an object holding a string there, else "".
std::string stringMember(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

LastEntry lastRunState(const std::string& workspace) {
  LastEntry last;
  auto dir = audit::openRecordDir(workspace, false);
  if (!dir.ok()) return last;
  auto text = audit::readRecordFile(*dir, audit::kTraceFileName, size_t{1} << 30);
  if (!text.ok()) return last;
  size_t pos = 0;
  while (pos < text->size()) {
    size_t nl = text->find('\n', pos);
    if (nl == std::string::npos) nl = text->size();
    // The workspace's trace is untrusted input: no accessor that throws on a wrong type.
    const json j = json::parse(text->substr(pos, nl - pos), nullptr, /*allow_exceptions=*/false);
    last.type = stringMember(j, "type");
    if (last.type == "run_start" && j.is_object() && j.contains("data")) last.run_id = stringMember(j["data"], "run_id");
    pos = nl + 1;
  }
  return last;
}

std::optional<std::string> sandboxGap() {
  sandbox::HostFacilities host = sandbox::probeHost();
  for (const sandbox::Facility& f : host.facilities)
    if (f.required && !f.available) return f.name + (f.detail.empty() ? "" : " (" + f.detail + ")");
  return std::nullopt;
}

// SHA-256 of the host's copy of a declared output before copy-back ("" when there is no
// regular file there), to report "changed". The host workspace may hold a FIFO, a device or a
// symlinked directory where an output is declared: sha256OfFileBeneath never opens those.
std::string hostOutputHash(int host_dir, const std::string& path) {
  return audit::sha256OfFileBeneath(host_dir, path).sha256;
}

}  // namespace

Result<RunSummary> runManifest(const RunRequest& request) {
  ASSIGN_OR_RETURN(LoadedManifest lm, loadManifest(request.manifest_path));
  const policy::Manifest& manifest = lm.manifest;
  ASSIGN_OR_RETURN(std::string workspace, realDir(request.workspace.value_or(lm.dir), "--workspace"));
  // Opened once: the inputs are read from, and --apply writes the outputs into, this very
  // directory, even if its name is swapped for another (or a symlink) while the run lasts.
  ASSIGN_OR_RETURN(UniqueFd host_ws, sandbox::workspace::openHostDir(workspace));
  ASSIGN_OR_RETURN(std::optional<Secret> key_pem, audit::loadSigningKeyPem(request.signing_key_file, workspace));
  std::optional<audit::SigningKey> signing_key;
  if (key_pem) {
    auto k = audit::SigningKey::fromPem(*key_pem);
    if (!k.ok()) return k.error().wrap("signing key");
    signing_key.emplace(std::move(*k));
  }
  ASSIGN_OR_RETURN(ProviderConfig pconfig, providerConfig(lm));
  ASSIGN_OR_RETURN(std::unique_ptr<Provider> provider, makeProvider(std::move(pconfig)));
  const std::string run_id = randomRunId();
  // Before anything is written or a model called: a session broader than the manifest (or not
  // the caller's, or not running) refuses the run. Its commands use the session's own proxy and
  // leases, so the run starts none of its own.
  BackendFlags backend_flags = request.backend;
  backend_flags.session = static_cast<bool>(request.open_session);
  ASSIGN_OR_RETURN(const std::optional<VmChoice> vm_choice, chooseBackend(manifest, backend_flags));
  std::unique_ptr<CommandSession> session;
  if (request.open_session) {
    ASSIGN_OR_RETURN(session, request.open_session(manifest));
  }
  // Before anything is written: a credential whose secret is missing refuses the run.
  std::unique_ptr<RunEgress> egress;
  if (!session) {
    ASSIGN_OR_RETURN(egress, RunEgress::start(manifest, run_id));
  }

  const LastEntry previous = lastRunState(workspace);
  ASSIGN_OR_RETURN(UniqueFd record_dir, audit::openRecordDir(workspace, true));
  // Durability policy (docs/run.md): each entry is one write(2); the trace is fdatasync'ed
  // before every model call (so each turn's steps are durable before the next request leaves)
  // and when the record is sealed. A crash loses at most the current turn's tail, never the
  // chain's integrity.
  audit::TraceOptions trace_options;
  trace_options.sync = audit::TraceSync::kBatch;
  auto trace_or = audit::TraceWriter::open(record_dir, trace_options);
  if (!trace_or.ok()) return trace_or.error().wrap("audit trace .corral/trace.jsonl");
  audit::TraceWriter trace = std::move(*trace_or);
  // result.json is replaced by rename(2) when the record is sealed, which cannot replace a
  // directory: one laid out there would leave the run unsealed after outputs were applied.
  if (struct stat rst; ::fstatat(record_dir.get(), std::string(audit::kResultFileName).c_str(), &rst, AT_SYMLINK_NOFOLLOW) == 0 &&
                       S_ISDIR(rst.st_mode))
    return Error(Errc::kRefused, ".corral/result.json is a directory: refusing, the record could not be sealed (remove it)");
  // Lines already in the record, and how they were sealed: this run's result will cover
  // them, so its run_start says what it found (verify reports it).
  const uint64_t prior_lines = trace.count();
  const std::string prior = audit::priorSeal(record_dir, prior_lines, trace.head(), signing_key ? &*signing_key : nullptr);

  RunSummary summary;
  summary.run_id = run_id;
  summary.workspace = workspace;
  policy::RunBudget budget(manifest.budgets, monotonicNow());
  RunContext run;
  run.run_id = summary.run_id;
  run.root = &manifest;
  run.trace = &trace;
  run.budget = &budget;
  run.apply = request.apply;
  run.trace_content = request.trace_content;
  run.now = monotonicNow;
  run.egress = egress.get();
  run.session = session.get();
  run.vm = vm_choice ? &*vm_choice : nullptr;

  if (!previous.type.empty() && previous.type != "run_end")
    RETURN_IF_ERROR(run.record("previous_run_interrupted",
                               {{"run_id", tools::traceable(previous.run_id, 64)}, {"last_type", tools::traceable(previous.type, 64)}}));
  RETURN_IF_ERROR(run.record("run_start", {{"run_id", run.run_id},
                                           {"manifest_sha256", lm.sha256},
                                           {"apply", request.apply},
                                           {"provider", manifest.model.provider},
                                           {"model", tools::traceable(manifest.model.model, 128)},
                                           {"trace_content", request.trace_content == TraceContent::kFull ? "full" : "hashes"},
                                           {"signed", signing_key.has_value()},
                                           {"prior_lines", prior_lines},
                                           {"prior", prior},
                                           {"corral_version", "0.1.0"}}));
  if (session) RETURN_IF_ERROR(run.record("session", {{"session", session->id()}}));
  if (vm_choice)
    RETURN_IF_ERROR(run.record("sandbox_backend", {{"backend", "vm"},
                                                   {"accelerator", vm_choice->accelerator},
                                                   {"memory", vm_choice->options.memory_bytes},
                                                   {"cpus", vm_choice->options.cpus},
                                                   {"chosen_by", manifest.sandbox.backend == "vm" ? "manifest" : "--backend"}}));

  std::string status = "error";
  std::string reason;
  int exit_code = kRunFailed;
  json outputs = json::array();
  json memory = json::object();
  std::optional<PrivateWorkspace> ws;
  std::optional<Mailbox> mailbox;
  std::optional<ContentStore> content;
  if (request.trace_content == TraceContent::kFull) {
    auto opened = ContentStore::open(record_dir);
    if (!opened.ok()) return opened.error();
    content.emplace(std::move(*opened));
    run.content = &*content;
  }

  // Each step may end the run early; the record is sealed whatever happened.
  auto body_of = [&]() {
    json tasks = json::array();
    for (const TaskOutcome& t : run.tasks)
      tasks.push_back({{"id", t.id}, {"status", t.status}, {"turns", t.turns}, {"model_calls", t.model_calls},
                       {"summary_sha256", audit::sha256Hex(t.summary)}});
    return json{{"run_id", run.run_id},
                {"status", status},
                {"apply", request.apply},
                {"tasks", tasks},
                {"outputs", outputs},
                {"memory", memory},
                {"model_calls", budget.modelCalls()},
                {"loops", budget.loops()},
                {"tool_calls", run.counters.tool_calls},
                {"refusals", run.counters.refusals},
                {"commands", run.counters.commands},
                {"writes", run.counters.writes},
                {"input_tokens", run.counters.input_tokens},
                {"output_tokens", run.counters.output_tokens}};
  };

  do {
    if (auto m = checkMemoryStore(workspace); !m.ok()) {
      RETURN_IF_ERROR(run.record("memory_store", {{"status", "refused"}, {"reason", tools::traceable(m.error().message(), 512)}}));
      status = "aborted";
      reason = m.error().message();
      exit_code = kRunRefused;
      break;
    }
    // Everything up to the first model call is the run's setup: a failure here is a refusal
    // (125) before the run started, as a hostile memory store is, and commits no memory.
    auto mb = Mailbox::open(record_dir, run.run_id);
    if (!mb.ok()) {
      status = "aborted";
      reason = mb.error().message();
      exit_code = kRunRefused;
      break;
    }
    mailbox.emplace(std::move(*mb));
    run.mailbox = &*mailbox;
    if (request.apply && !manifest.executables.empty() && !session) {
      run.sandbox_unavailable = sandboxGap();
      if (run.sandbox_unavailable)
        RETURN_IF_ERROR(run.record("sandbox_unavailable", {{"facility", tools::traceable(*run.sandbox_unavailable, 512)}}));
    }
    auto created = PrivateWorkspace::create();
    if (!created.ok()) {
      status = "aborted";
      reason = created.error().message();
      exit_code = kRunRefused;
      break;
    }
    ws.emplace(std::move(*created));
    run.workspace = &*ws;
    auto staged = ws->stageFrom(host_ws.get(), manifest, manifest.sandbox.workspace_bytes.value_or(uint64_t{1} << 30));
    if (!staged.ok()) {
      RETURN_IF_ERROR(run.record("workspace_staged", {{"status", "error"}, {"reason", tools::traceable(staged.error().message(), 512)}}));
      status = "aborted";
      reason = staged.error().message();
      exit_code = kRunRefused;
      break;
    }
    {
      json files = json::array();
      for (const StagedFile& f : staged->files) files.push_back({f.path, f.bytes, f.sha256});
      // A workspace chooses how many entries it refuses (3,000 symlinks outgrew a trace line).
      const json refused = tools::boundedTraceList(staged->refused, tools::kTraceListBudget,
                                                   [](const std::string& r) -> json { return tools::traceable(r, 512); });
      RETURN_IF_ERROR(run.record("workspace_staged", {{"files", staged->files.size()},
                                                      {"bytes", staged->bytes},
                                                      {"inputs_sha256", audit::sha256Hex(files.dump())},
                                                      {"refused", refused}}));
    }
    if (auto pre = provider->preflight(); !pre.ok()) {
      RETURN_IF_ERROR(run.record("model_preflight", {{"status", "error"}, {"error", tools::traceable(pre.error().message(), 512)}}));
      status = "model_error";
      reason = pre.error().message();
      break;
    }

    LoopOptions loop_options;
    loop_options.max_retries = manifest.model.max_retries;
    (void)budget.startLoop();  // the root: max_loops >= 1 by validation
    ASSIGN_OR_RETURN(TaskOutcome root, runTaskLoop(run, "root", manifest, *provider, loop_options));
    run.tasks.push_back(root);
    while (!run.queue.empty()) {
      PendingTask next = std::move(run.queue.front());
      run.queue.pop_front();
      budget.dequeueTask();
      if (auto over = budget.startLoop()) {
        RETURN_IF_ERROR(run.record("budget_exhausted", {{"task", next.id}, {"budget", policy::budgetName(over->kind)},
                                                        {"limit", over->limit}, {"used", over->used}}));
        run.tasks.push_back({next.id, "budget_exhausted", over->message(), "", 0, 0});
        continue;
      }
      ASSIGN_OR_RETURN(TaskOutcome sub, runTaskLoop(run, next.id, next.manifest, *provider, loop_options));
      run.tasks.push_back(sub);
    }
    status = root.status;
    reason = root.reason;
    exit_code = root.status == "finished" ? kRunFinished : root.status == "budget_exhausted" ? kRunIncomplete : kRunFailed;

    // Declared outputs go back to the host workspace only with --apply.
    for (const std::string& path : manifest.outputs) {
      const std::string after = ws->hashOf(path);
      json o = {{"path", path}, {"sha256", after}};
      if (request.apply) {
        const std::string before = hostOutputHash(host_ws.get(), path);
        o["changed"] = !after.empty() && after != before;
      }
      outputs.push_back(o);
    }
    if (request.apply) {
      for (const sandbox::OutputResult& r : ws->copyOutputsTo(host_ws.get(), manifest.outputs)) {
        const char* st = r.status == sandbox::OutputResult::Status::kCopied     ? "copied"
                         : r.status == sandbox::OutputResult::Status::kRefused  ? "refused"
                         : r.status == sandbox::OutputResult::Status::kWithheld ? "withheld"
                                                                                : "missing";
        for (json& o : outputs) {
          if (o["path"] != r.path) continue;
          o["applied"] = st;
          // What verify checks before hashing: a size that differs fails without a read.
          if (r.status == sandbox::OutputResult::Status::kCopied) o["bytes"] = r.bytes;
        }
        RETURN_IF_ERROR(run.record("output", {{"path", tools::traceable(r.path, 1024)}, {"status", st}, {"bytes", r.bytes},
                                              {"reason", r.reason}}));
        // The run's work did not all reach the host: a script's `corral run --apply && next`
        // must not go on as if it had (exec's copy-back refusal is 125 for the same reason).
        if (r.status == sandbox::OutputResult::Status::kRefused && exit_code == kRunFinished) exit_code = kRunFailed;
      }
    } else {
      RETURN_IF_ERROR(run.record("outputs_not_applied", {{"outputs", manifest.outputs.size()}}));
    }
  } while (false);

  if (egress) {  // every connection has ended once the proxy is stopped
    egress->stop();
    RETURN_IF_ERROR(egress->flush(trace));
  }
  if (status != "aborted" || exit_code != kRunRefused) {
    json record = {{"run_id", run.run_id}, {"manifest_sha256", lm.sha256}, {"status", status}};
    json summaries = json::array();
    for (const TaskOutcome& t : run.tasks) summaries.push_back({{"task", t.id}, {"status", t.status}, {"summary", t.summary}});
    record["tasks"] = summaries;
    auto mem = commitRunMemory(workspace, run.run_id, record);
    if (mem.ok())
      memory = {{"status", mem->status}, {"commit", mem->commit}, {"reason", mem->reason}};
    else
      memory = {{"status", "error"}, {"reason", tools::traceable(mem.error().message(), 512)}};
    RETURN_IF_ERROR(run.record("memory_store", memory));
  }
  summary.body = body_of();
  summary.body["reason"] = tools::traceable(reason, 512);
  RETURN_IF_ERROR(run.record("run_end", {{"run_id", run.run_id},
                                         {"status", status},
                                         {"reason", tools::traceable(reason, 512)},
                                         {"model_calls", budget.modelCalls()},
                                         {"loops", budget.loops()},
                                         {"tool_calls", run.counters.tool_calls},
                                         {"refusals", run.counters.refusals}}));
  auto sealed = audit::finishRecord(record_dir, trace, lm.sha256, summary.body, signing_key ? &*signing_key : nullptr);
  if (!sealed.ok()) return sealed.error().wrap("result.json");
  summary.exit_code = exit_code;
  return summary;
}

std::string humanSummary(const RunSummary& s) {
  const json& b = s.body;
  std::string out = "corral run " + s.run_id + ": " + b.value("status", "") +
                    (b.value("apply", false) ? "" : " (dry run: nothing applied)") + "\n";
  if (!b.value("reason", std::string()).empty()) out += "  reason: " + policy::oneLine(b["reason"].get<std::string>()) + "\n";
  out += "  model calls: " + std::to_string(b.value("model_calls", 0)) + ", tool calls: " +
         std::to_string(b.value("tool_calls", 0)) + ", commands run: " + std::to_string(b.value("commands", 0)) +
         ", refused: " + std::to_string(b.value("refusals", 0)) + ", tasks: " + std::to_string(b["tasks"].size()) + "\n";
  for (const json& o : b["outputs"]) {
    std::string st = o.value("applied", std::string(b.value("apply", false) ? "" : "not applied"));
    if (o.value("changed", false)) st += ", changed";
    out += "  output " + policy::oneLine(o["path"].get<std::string>()) + ": " + (st.empty() ? "unchanged" : st) + "\n";
  }
  if (b.contains("memory") && b["memory"].contains("status"))
    out += "  memory: " + b["memory"]["status"].get<std::string>() + "\n";
  const std::string ws = policy::oneLine(s.workspace);
  out += "  record: " + ws + "/.corral (check with: corral verify " + ws + ")\n";
  return out;
}

}  // namespace corral::agent
