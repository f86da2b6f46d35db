// SPDX-License-Identifier: Apache-2.0
// Internal to the manifest module: strict JSON reading with path-naming errors, and the
// per-field rules shared by parseManifest and attenuate (a spawn scope reuses them).
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "policy/manifest.h"

namespace corral::policy::manifest_fields {

using Json = nlohmann::json;
using std::chrono::milliseconds;

// A manifest is at most 3 levels deep (credentials[0].name); 16 leaves room and stops a
// 100k-deep "[[[[" long before any recursion in the caller or the DOM could matter.
inline constexpr int kMaxDepth = 16;
inline constexpr size_t kMaxShown = 64;  // bytes of a hostile value echoed in an error

// Where a value sits, for error messages: "manifest: budgets.max_turns: <rule>".
struct Where {
  std::string_view doc;  // "manifest" or "scope"
  std::string path;      // "" is the root, shown as "$"
  Where key(std::string_view k) const;
  Where at(size_t index) const;
  Error error(const std::string& rule, Errc code = Errc::kInvalidArgument) const;
};

// Quoted, at most kMaxShown bytes of text, printable ASCII only (anything else as \xNN):
// error messages echo hostile input and must stay one short line.
std::string shown(std::string_view text);

bool validUtf8(std::string_view s);

// JSON text to a DOM, refusing what nlohmann would accept silently: duplicate keys (it keeps
// the last), nesting deeper than kMaxDepth, and more than max_bytes. Errors name the path.
Result<Json> parseStrict(std::string_view bytes, size_t max_bytes, std::string_view doc);

// Typed readers. Each refuses a wrong JSON type with the same message as a bad value, so
// "true", "10", 1.5 and -1 for an integer all read "must be an integer in 1..10000".
Result<void> requireObject(const Json& v, const Where& w);
Result<void> onlyKeys(const Json& obj, const Where& w, std::initializer_list<std::string_view> known);
Result<std::string> string(const Json& v, const Where& w);
Result<uint64_t> integer(const Json& v, const Where& w, uint64_t lo, uint64_t hi);
// A string with a unit ("250ms", "10s", "5m", "1h"; a fraction like "1.5s" too).
Result<milliseconds> duration(const Json& v, const Where& w, milliseconds lo, milliseconds hi);
// A byte count: a JSON integer, or a string with an optional K/M/G/T suffix ("64M").
Result<uint64_t> size(const Json& v, const Where& w, uint64_t lo, uint64_t hi);
// An array of at most kMaxListEntries strings, each checked by the rule; duplicates refused.
using EntryRule = Result<std::string> (*)(std::string_view entry);
Result<std::vector<std::string>> list(const Json& v, const Where& w, EntryRule rule);

// Entry rules: the value back unchanged, or an error saying why (the caller adds the path).
Result<std::string> inputPattern(std::string_view p);
Result<std::string> outputEntry(std::string_view p);
Result<std::string> executable(std::string_view name);
Result<std::string> envEntry(std::string_view kv);
Result<std::string> anyString(std::string_view s);

// list() with envEntry, plus: a key set twice (with any values) is refused.
Result<std::vector<std::string>> envList(const Json& v, const Where& w);

// True when every path child matches is also matched by parent (both valid input
// patterns). Conservative: false whenever the rule in docs/manifest.md cannot show it.
bool patternWithin(std::string_view child, std::string_view parent);

// The task text: non-empty (not only whitespace), at most kMaxTaskBytes, valid UTF-8, no
// control bytes except tab, newline and carriage return.
Result<void> checkTask(std::string_view task);

// Ranges (docs/manifest.md). Durations as milliseconds.
struct Range {
  uint64_t lo, hi;
};
inline constexpr Range kMaxTurns{1, 10'000};
inline constexpr Range kMaxModelCalls{1, 100'000};
inline constexpr Range kWallTimeMs{1'000, 24ull * 3'600'000};
inline constexpr Range kCommandTimeoutMs{100, 3'600'000};
inline constexpr Range kMaxOutputBytes{1, 16ull << 20};
inline constexpr Range kMaxLoops{1, 1'000};
inline constexpr Range kMaxPendingTasks{0, 1'000};
inline constexpr Range kMaxRetries{0, 10};
inline constexpr Range kMaxTokens{1, 1'000'000};
inline constexpr Range kModelTimeoutMs{1'000, 600'000};
inline constexpr Range kSandboxBytes{1, 1ull << 40};
inline constexpr Range kSandboxPids{1, 1ull << 20};
inline constexpr Range kSandboxCpuMs{1'000, 24ull * 3'600'000};
// The VM backend's ranges (vm/vm_options.h, spelled out again: policy/ cannot link vm/).
inline constexpr Range kVmMemoryBytes{128ull << 20, 64ull << 30};
inline constexpr Range kVmCpus{1, 64};
inline constexpr uint64_t kVmDefaultMemoryBytes = 512ull << 20;
inline constexpr uint64_t kVmMinWorkspaceBytes = 8ull << 20;

// Reads the budgets keys present in obj (unknown keys already refused) into b: the shared
// field rules of a manifest's "budgets" and a spawn scope's "budgets". present[i] says
// whether the i-th of kBudgetKeys was given.
inline constexpr std::string_view kBudgetKeys[] = {"max_turns",        "max_model_calls", "wall_time",
                                                   "command_timeout",  "max_output_bytes", "max_loops",
                                                   "max_pending_tasks"};
Result<void> readBudgets(const Json& obj, const Where& w, Budgets& b, bool present[7]);

}  // namespace corral::policy::manifest_fields
