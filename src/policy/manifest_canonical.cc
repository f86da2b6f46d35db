// SPDX-License-Identifier: Apache-2.0
// manifestToCanonicalJson: every field with its default filled in, in the input schema, so
// that parseManifest(manifestToCanonicalJson(m)) == m.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "policy/manifest.h"

namespace corral::policy {
namespace {

using Json = nlohmann::json;

std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + "ms"; }

Json model(const ModelSpec& m) {
  Json j = Json::object();
  j["provider"] = m.provider;
  // Empty means absent: a replay has no endpoint and may have no model name.
  if (!m.endpoint.empty()) j["endpoint"] = m.endpoint;
  if (!m.model.empty()) j["model"] = m.model;
  if (m.api_key_env) j["api_key_env"] = *m.api_key_env;
  if (!m.transcript.empty()) j["transcript"] = m.transcript;
  j["timeout"] = ms(m.timeout);
  j["max_retries"] = m.max_retries;
  j["max_tokens"] = m.max_tokens;
  return j;
}

Json budgets(const Budgets& b) {
  return Json{{"max_turns", b.max_turns},
              {"max_model_calls", b.max_model_calls},
              {"wall_time", ms(b.wall_time)},
              {"command_timeout", ms(b.command_timeout)},
              {"max_output_bytes", b.max_output_bytes},
              {"max_loops", b.max_loops},
              {"max_pending_tasks", b.max_pending_tasks}};
}

Json sandbox(const SandboxLimitsSpec& s) {
  Json j = Json::object();
  if (s.memory_bytes) j["memory"] = *s.memory_bytes;
  if (s.pids) j["pids"] = *s.pids;
  if (s.cpu_time) j["cpu_time"] = ms(*s.cpu_time);
  if (s.file_size_bytes) j["file_size"] = *s.file_size_bytes;
  if (s.tmp_bytes) j["tmp_size"] = *s.tmp_bytes;
  if (s.workspace_bytes) j["workspace_size"] = *s.workspace_bytes;
  j["allow_weaker"] = s.allow_weaker;
  // Only when chosen, so a namespace manifest's canonical form is what it always was.
  if (s.backend != "namespace") {
    j["backend"] = s.backend;
    Json vm = Json::object();
    if (s.vm_memory_bytes) vm["memory"] = *s.vm_memory_bytes;
    if (s.vm_cpus) vm["cpus"] = *s.vm_cpus;
    j["vm"] = vm;
  }
  return j;
}

Json credentials(const std::vector<CredentialSpec>& cs) {
  Json arr = Json::array();
  for (const CredentialSpec& c : cs)
    arr.push_back(Json{{"name", c.name}, {"env", c.env}, {"url", c.url}, {"header", c.header}, {"format", c.format}});
  return arr;
}

}  // namespace

std::string manifestToCanonicalJson(const Manifest& m) {
  Json j = Json::object();  // std::map underneath: keys come out sorted at every level
  j["version"] = m.version;
  j["task"] = m.task;
  j["model"] = model(m.model);
  j["inputs"] = m.inputs;
  j["outputs"] = m.outputs;
  Json executables = Json::array();
  for (const std::string& e : m.executables) {
    const bool literal = std::find(m.literal_args.begin(), m.literal_args.end(), e) != m.literal_args.end();
    executables.push_back(literal ? Json{{"literal_args", true}, {"name", e}} : Json(e));
  }
  j["executables"] = std::move(executables);
  j["env"] = m.env;
  j["network"] = Json{{"allow", m.network.allow}};
  // Only when set: a manifest without CIDRs keeps the canonical form (and hash) it had before.
  if (!m.network.internal.empty()) j["network"]["internal"] = m.network.internal;
  j["credentials"] = credentials(m.credentials);
  j["budgets"] = budgets(m.budgets);
  j["sandbox"] = sandbox(m.sandbox);
  // Invariant: every string came through parseManifest or attenuate, which accept only
  // valid UTF-8; replace() keeps dump() from throwing should that ever break.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace corral::policy
