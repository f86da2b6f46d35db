// SPDX-License-Identifier: Apache-2.0
// The run manifest: parsed strictly (unknown fields, wrong types and out-of-range values are
// errors), validated, then frozen for the run. Pure: bytes in, a value or an Error out.
// docs/manifest.md documents every field; docs/manifest.schema.json is its JSON Schema.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace corral::policy {

inline constexpr size_t kMaxManifestBytes = size_t{1} << 20;  // 1 MiB
inline constexpr int kManifestVersion = 1;
inline constexpr size_t kMaxTaskBytes = size_t{64} << 10;    // task text, manifest and spawn
inline constexpr size_t kMaxScopeBytes = size_t{64} << 10;   // a spawn scope object
inline constexpr size_t kMaxListEntries = 1024;              // inputs, outputs, executables, env, ...

struct ModelSpec {
  std::string provider;                     // "openai" | "ollama" | "anthropic" | "replay"
  std::string endpoint;                     // http(s) base URL; empty for replay
  std::string model;                        // model name; may be empty for replay
  std::optional<std::string> api_key_env;   // the NAME of the env var holding the key, never the key
  std::string transcript;                   // replay only: path relative to the manifest's folder
  std::chrono::milliseconds timeout{60000}; // per model call attempt
  uint32_t max_retries = 2;                 // each retry counts against budgets.max_model_calls
  uint32_t max_tokens = 4096;               // per reply (Anthropic requires it; others pass it on)

  friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

// Every ceiling is enforced by runner code; nothing a model returns can change one.
struct Budgets {
  uint32_t max_turns = 20;                  // model replies handled, per agent loop
  uint32_t max_model_calls = 40;            // provider attempts in the whole run, retries included
  std::chrono::milliseconds wall_time{600000};
  std::chrono::milliseconds command_timeout{60000};
  uint64_t max_output_bytes = uint64_t{64} << 10;  // per tool result returned to the model (stdout, stderr, read)
  uint32_t max_loops = 4;                   // agent loops in the whole run: the root and every subtask
  uint32_t max_pending_tasks = 2;           // spawned subtasks queued and not yet started

  friend bool operator==(const Budgets&, const Budgets&) = default;
};

// Sandbox limits for each `run` tool call (names and units as in `corral exec`).
struct SandboxLimitsSpec {
  std::optional<uint64_t> memory_bytes;
  std::optional<uint32_t> pids;
  std::optional<std::chrono::milliseconds> cpu_time;
  std::optional<uint64_t> file_size_bytes;
  std::optional<uint64_t> tmp_bytes;
  std::optional<uint64_t> workspace_bytes;
  std::vector<std::string> allow_weaker;    // limit names, as `exec --allow-weaker` ("kvm" only with backend vm)
  // What runs each command: "namespace" (the default) or "vm" (`exec --backend vm`), and the
  // VM's size (`--vm-memory`, `--vm-cpus`; only with "vm", absent: the VM backend's default).
  std::string backend = "namespace";
  std::optional<uint64_t> vm_memory_bytes;
  std::optional<uint32_t> vm_cpus;

  friend bool operator==(const SandboxLimitsSpec&, const SandboxLimitsSpec&) = default;
};

// The egress grants (docs/egress-policy.md), each in canonical text after parsing.
struct NetworkSpec {
  std::vector<std::string> allow;           // scheme://host[:port] grants, canonical
  // The private CIDRs granted names may resolve into (`exec --allow-internal`), canonical
  // ("10.20.0.0/16"); each needs at least one grant beside it.
  std::vector<std::string> internal;

  friend bool operator==(const NetworkSpec&, const NetworkSpec&) = default;
};
// A credential lease (docs/credential-leases.md). Shape only here: the runner checks the
// fields with net::leaseFromFields before anything is written (agent/run_egress.h).
struct CredentialSpec {
  std::string name;
  std::string env;                          // env var on the operator's side
  std::string url;                          // scheme://host[:port] it is injected toward
  std::string header = "Authorization";
  std::string format = "Bearer {}";

  friend bool operator==(const CredentialSpec&, const CredentialSpec&) = default;
};

struct Manifest {
  int version = kManifestVersion;
  std::string task;                         // the task text given to the model
  ModelSpec model;
  std::vector<std::string> inputs;          // workspace-relative paths or globs (*, ?, **)
  std::vector<std::string> outputs;         // exact workspace-relative paths (policy::path::outputPath)
  std::vector<std::string> executables;     // basenames only
  // The executables marked {"name": ..., "literal_args": true}: no shell is ever involved, so
  // their arguments reach them unchanged (the command gate's metacharacter rule is lifted).
  std::vector<std::string> literal_args;
  std::vector<std::string> env;             // "K=V" passed to every run command
  NetworkSpec network;
  std::vector<CredentialSpec> credentials;
  Budgets budgets;
  SandboxLimitsSpec sandbox;

  friend bool operator==(const Manifest&, const Manifest&) = default;
};

// Parses and validates. Errors (kInvalidArgument) name the JSON path and the rule, e.g.
// "manifest: budgets.max_turns: must be an integer in 1..10000". Refuses: unknown fields at
// any level, wrong types, missing required fields (version, task, model.provider), duplicate
// keys, absolute or ".." paths, outputs under .corral/, executables given as paths, budgets
// outside their ranges (negative, zero where meaningless, floats, 1e30), malformed or
// duplicate network grants, and *_PROXY variables in env.
Result<Manifest> parseManifest(std::string_view bytes);

// Canonical JSON of the manifest after defaults are filled in (what subtasks and tests compare).
std::string manifestToCanonicalJson(const Manifest& m);

// Glob match for declared inputs against a workspace-relative path: '*' and '?' never cross
// '/', '**' as a whole component matches zero or more components (one or more when it is the
// last: "src/**" is below src, not src), '[...]' is not special. A leading '.' in a
// component is matched only by a literal '.'. A path not in normal form never matches.
bool inputGlobMatch(std::string_view pattern, std::string_view path);

// False only when no path below the directory dir can match pattern (inputGlobMatch), so a
// workspace walk need not enter dir. Conservative: true whenever a match below is possible.
bool inputGlobMayMatchBelow(std::string_view pattern, std::string_view dir);

// What a task declares: a file is one of its outputs or matches one of its inputs; a
// directory may hold one (an output below it, or an input pattern that may match below it).
// The private workspace's staging and each sandboxed command's /workspace use the same rule.
bool declaresFile(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs, std::string_view rel);
bool mayDeclareBelow(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                     std::string_view dir);

// True when pattern contains a glob metacharacter (* or ?).
bool isGlob(std::string_view pattern);

// spawn(task, scope): the child's manifest is an attenuation of what the parent has left.
// scope is the model's JSON object {"inputs":[...],"outputs":[...],"executables":[...],
// "budgets":{...}}; every field optional (absent: the parent's value for lists, and the
// parent's remaining budget for budgets). A list entry not covered by the parent (an input
// not matched by a parent input pattern, an output not among the parent's outputs, an
// executable not allowlisted) or a budget above what is left is refused (kRefused) with a
// message naming it; the model cannot widen anything.
struct Remaining {                          // what the parent has left when it spawns
  uint32_t model_calls = 0;
  std::chrono::milliseconds wall_time{0};
  uint32_t pending_tasks = 0;
  uint32_t loops = 0;
};
Result<Manifest> attenuate(const Manifest& parent, const Remaining& left, std::string_view task,
                           std::string_view scope_json);

}  // namespace corral::policy
