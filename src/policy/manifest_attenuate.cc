// SPDX-License-Identifier: Apache-2.0
// attenuate: a subtask's manifest from its parent's, narrowed by a model-written scope.
// The scope is hostile input: it may only name less than the parent has, never more.
#include <algorithm>

#include "policy/manifest.h"
#include "policy/manifest_fields.h"

namespace corral::policy {
namespace {

using namespace manifest_fields;

constexpr std::string_view kDoc = "scope";

Error refused(const Where& w, const std::string& why) { return w.error(why, Errc::kRefused); }

std::string showMs(milliseconds d) { return std::to_string(d.count()) + "ms"; }

// Each entry of the child's list must be an exact member of the parent's.
Result<void> subset(const std::vector<std::string>& child, const std::vector<std::string>& parent, const Where& w,
                    const char* what) {
  for (size_t i = 0; i < child.size(); ++i)
    if (std::find(parent.begin(), parent.end(), child[i]) == parent.end())
      return refused(w.at(i), std::string("not among the parent's ") + what);
  return {};
}

Result<void> inputsWithin(const std::vector<std::string>& child, const std::vector<std::string>& parent,
                          const Where& w) {
  for (size_t i = 0; i < child.size(); ++i) {
    bool covered = std::any_of(parent.begin(), parent.end(),
                               [&](const std::string& p) { return patternWithin(child[i], p); });
    if (!covered) return refused(w.at(i), shown(child[i]) + " is not covered by the parent's inputs");
  }
  return {};
}

// A requested number above its ceiling is refused, never clamped: the model learns its
// request did not hold instead of running with something it did not ask for.
template <typename T>
Result<void> atMost(T requested, T ceiling, const Where& w, const std::string& whose, std::string (*show)(T)) {
  if (requested > ceiling)
    return refused(w, "requested " + show(requested) + " is above " + whose + " " + show(ceiling));
  return {};
}

std::string showCount(uint64_t n) { return std::to_string(n); }

Result<Budgets> childBudgets(const Json* scope_budgets, const Budgets& parent, const Remaining& left,
                             const Where& w) {
  const Where top{kDoc, ""};
  if (left.model_calls == 0) return refused(top, "no model calls are left for a subtask");
  if (left.wall_time <= milliseconds(0)) return refused(top, "no wall time is left for a subtask");
  if (left.loops == 0) return refused(top, "no agent loops are left for a subtask");
  // Ceilings: what the run has left, and never more than the parent itself was given.
  const uint64_t calls_cap = std::min<uint64_t>(left.model_calls, parent.max_model_calls);
  const milliseconds wall_cap = std::min(left.wall_time, parent.wall_time);
  const uint64_t loops_cap = std::min<uint64_t>(left.loops, parent.max_loops);
  const uint64_t pending_cap = std::min<uint64_t>(left.pending_tasks, parent.max_pending_tasks);
  if (wall_cap < milliseconds(kWallTimeMs.lo))
    return refused(w.key("wall_time"), "only " + showMs(wall_cap) + " left, below the 1s minimum");

  Budgets b;
  b.max_turns = parent.max_turns;
  b.max_model_calls = static_cast<uint32_t>(calls_cap);
  b.wall_time = wall_cap;
  b.max_output_bytes = parent.max_output_bytes;
  b.max_loops = static_cast<uint32_t>(loops_cap);
  b.max_pending_tasks = static_cast<uint32_t>(pending_cap);
  bool present[7] = {};
  if (scope_budgets) {
    RETURN_IF_ERROR(onlyKeys(*scope_budgets, w, {"max_turns", "max_model_calls", "wall_time", "command_timeout",
                                                 "max_output_bytes", "max_loops", "max_pending_tasks"}));
    RETURN_IF_ERROR(readBudgets(*scope_budgets, w, b, present));
  }
  // The default command timeout follows a shorter wall time down; a requested one may not
  // exceed either.
  if (!present[3]) b.command_timeout = std::min(parent.command_timeout, b.wall_time);
  RETURN_IF_ERROR(atMost<uint64_t>(b.max_turns, parent.max_turns, w.key("max_turns"), "the parent's", showCount));
  RETURN_IF_ERROR(
      atMost<uint64_t>(b.max_model_calls, calls_cap, w.key("max_model_calls"), "the calls left", showCount));
  RETURN_IF_ERROR(atMost<milliseconds>(b.wall_time, wall_cap, w.key("wall_time"), "the time left", showMs));
  RETURN_IF_ERROR(atMost<milliseconds>(b.command_timeout, parent.command_timeout, w.key("command_timeout"),
                                       "the parent's", showMs));
  RETURN_IF_ERROR(atMost<milliseconds>(b.command_timeout, b.wall_time, w.key("command_timeout"),
                                       "the subtask's wall_time", showMs));
  RETURN_IF_ERROR(atMost<uint64_t>(b.max_output_bytes, parent.max_output_bytes, w.key("max_output_bytes"),
                                   "the parent's", showCount));
  RETURN_IF_ERROR(atMost<uint64_t>(b.max_loops, loops_cap, w.key("max_loops"), "the loops left", showCount));
  RETURN_IF_ERROR(atMost<uint64_t>(b.max_pending_tasks, pending_cap, w.key("max_pending_tasks"),
                                   "the parent's and the run's remaining", showCount));
  return b;
}

}  // namespace

Result<Manifest> attenuate(const Manifest& parent, const Remaining& left, std::string_view task,
                           std::string_view scope_json) {
  const Where root{kDoc, ""};
  if (auto r = checkTask(task); !r.ok()) return Where{kDoc, "task"}.error(r.error().context());
  ASSIGN_OR_RETURN(Json scope, parseStrict(scope_json, kMaxScopeBytes, kDoc));
  RETURN_IF_ERROR(requireObject(scope, root));
  for (const auto& [k, v] : scope.items()) {
    static constexpr std::string_view kInherited[] = {"version", "task",    "model",      "network",
                                                      "credentials", "sandbox"};
    if (std::find(std::begin(kInherited), std::end(kInherited), k) != std::end(kInherited))
      return refused(root.key(k), "a subtask inherits this from its parent; a scope cannot set it");
  }
  RETURN_IF_ERROR(onlyKeys(scope, root, {"inputs", "outputs", "executables", "env", "budgets"}));

  Manifest child = parent;  // model, network, credentials and sandbox carry over unchanged
  child.task = std::string(task);
  if (auto it = scope.find("inputs"); it != scope.end()) {
    ASSIGN_OR_RETURN(child.inputs, list(*it, root.key("inputs"), inputPattern));
    RETURN_IF_ERROR(inputsWithin(child.inputs, parent.inputs, root.key("inputs")));
  }
  if (auto it = scope.find("outputs"); it != scope.end()) {
    ASSIGN_OR_RETURN(child.outputs, list(*it, root.key("outputs"), outputEntry));
    RETURN_IF_ERROR(subset(child.outputs, parent.outputs, root.key("outputs"), "outputs"));
  }
  if (auto it = scope.find("executables"); it != scope.end()) {
    ASSIGN_OR_RETURN(child.executables, list(*it, root.key("executables"), executable));
    RETURN_IF_ERROR(subset(child.executables, parent.executables, root.key("executables"), "executables"));
    // A scope names executables only: each keeps the parent's literal_args mark, never gains one.
    std::vector<std::string> kept;
    for (const std::string& e : parent.literal_args)
      if (std::find(child.executables.begin(), child.executables.end(), e) != child.executables.end()) kept.push_back(e);
    child.literal_args = std::move(kept);
  }
  if (auto it = scope.find("env"); it != scope.end()) {
    ASSIGN_OR_RETURN(child.env, envList(*it, root.key("env")));
    RETURN_IF_ERROR(subset(child.env, parent.env, root.key("env"), "env entries"));
  }
  auto it = scope.find("budgets");
  ASSIGN_OR_RETURN(child.budgets,
                   childBudgets(it == scope.end() ? nullptr : &*it, parent.budgets, left, root.key("budgets")));
  return child;
}

}  // namespace corral::policy
