// SPDX-License-Identifier: Apache-2.0
// Trace line encoding and the chain check.
#include "audit/trace_chain.h"

#include <algorithm>

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <vector>

#include "audit/canonical_json.h"
#include "audit/trace_fast_path.h"

namespace corral::audit {
namespace {

constexpr const char* kFields[] = {"data", "prev", "seq", "ts_ms", "type", "v"};

// A key may be shown in a message only when it is plainly an identifier; anything else
// could be content, so it is described by its size.
std::string pathKey(const std::string& key) {
  bool plain = !key.empty() && key.size() <= 32;
  for (char c : key) plain = plain && (isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  return plain ? "." + key : ".<key of " + std::to_string(key.size()) + " bytes>";
}

Result<void> checkStrings(const nlohmann::json& v, const std::string& path) {
  auto tooLong = [&](const std::string& where, size_t n) {
    return Error(Errc::kRefused, where + " is " + std::to_string(n) + " bytes (limit " +
                                     std::to_string(kMaxTraceStringBytes) +
                                     "): trace ids, sizes and hashes, not contents");
  };
  if (v.is_string()) {
    size_t n = v.get_ref<const std::string&>().size();
    if (n > kMaxTraceStringBytes) return tooLong(path, n);
  } else if (v.is_object()) {
    for (auto it = v.cbegin(); it != v.cend(); ++it) {
      if (it.key().size() > kMaxTraceStringBytes) return tooLong("a key in " + path, it.key().size());
      RETURN_IF_ERROR(checkStrings(*it, path + pathKey(it.key())));
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) RETURN_IF_ERROR(checkStrings(v[i], path + "[" + std::to_string(i) + "]"));
  }
  return {};
}

Error lineError(uint64_t line, const std::string& what) {
  return Error(Errc::kInvalidArgument, "trace line " + std::to_string(line) + ": " + what);
}

}  // namespace

Result<void> checkTraceData(const nlohmann::json& data) {
  if (!data.is_object()) return Error(Errc::kInvalidArgument, "data is not a JSON object");
  return checkStrings(data, "data");
}

bool isTraceType(std::string_view type) {
  if (type.empty() || type.size() > 32 || type[0] < 'a' || type[0] > 'z') return false;
  for (char c : type)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

Result<std::string> encodeTraceLine(const ChainState& state, int64_t ts_ms, std::string_view type,
                                    const nlohmann::json& data) {
  if (!isTraceType(type)) return Error(Errc::kInvalidArgument, "trace type must match [a-z][a-z0-9_]{0,31}");
  if (ts_ms < 0) return Error(Errc::kInvalidArgument, "trace ts_ms is negative");
  RETURN_IF_ERROR(checkTraceData(data));
  nlohmann::json entry = {{"v", kTraceVersion}, {"seq", state.count}, {"prev", state.head},
                          {"ts_ms", ts_ms},     {"type", type},       {"data", data}};
  auto line = canonicalJson(entry);
  if (!line) return line.error().wrap("trace data");
  if (line->size() > kMaxTraceLineBytes)
    return Error(Errc::kLimit, "trace entry is " + std::to_string(line->size()) + " bytes (limit " +
                                     std::to_string(kMaxTraceLineBytes) + ")");
  return line;
}

Result<void> ChainVerifier::addLine(std::string_view line) {
  const uint64_t n = state_.count + 1;  // 1-based line number, as editors show it
  if (line.empty()) return lineError(n, "empty line");
  if (line.size() > kMaxTraceLineBytes)
    return lineError(n, "longer than " + std::to_string(kMaxTraceLineBytes) + " bytes");
  // The common case, a line exactly as the writer makes it, without building a DOM; anything
  // else goes through the strict parser below, which names what is wrong.
  if (auto fast = fastTraceLine(line); fast && fast->seq == state_.count && fast->prev == state_.head) {
    accept(line);
    return {};
  }
  auto parsed = parseCanonicalJson(line);
  if (!parsed) return lineError(n, parsed.error().message());
  const nlohmann::json& e = *parsed;
  if (!e.is_object()) return lineError(n, "not a JSON object");
  for (const char* f : kFields)
    if (!e.contains(f)) return lineError(n, std::string("missing field \"") + f + "\"");
  if (e.size() != std::size(kFields)) return lineError(n, "unknown field (allowed: data prev seq ts_ms type v)");
  if (!e["v"].is_number_integer() || e["v"].get<int64_t>() != kTraceVersion)
    return lineError(n, "\"v\" is not 1 (unknown format version)");
  if (!e["prev"].is_string() || !isSha256Hex(e["prev"].get_ref<const std::string&>()))
    return lineError(n, "\"prev\" is not 64 lowercase hex digits");
  if (!e["seq"].is_number_integer() || e["seq"].get<int64_t>() < 0)
    return lineError(n, "\"seq\" is not a non-negative integer");
  if (!e["ts_ms"].is_number_integer() || e["ts_ms"].get<int64_t>() < 0)
    return lineError(n, "\"ts_ms\" is not a non-negative integer");
  if (!e["type"].is_string() || !isTraceType(e["type"].get_ref<const std::string&>()))
    return lineError(n, "\"type\" does not match [a-z][a-z0-9_]{0,31}");
  if (auto d = checkTraceData(e["data"]); !d) return lineError(n, d.error().message());

  const auto seq = e["seq"].get<uint64_t>();
  const std::string seq_note =
      seq == state_.count ? ""
                          : " (seq is " + std::to_string(seq) + ", expected " + std::to_string(state_.count) +
                                ": a line was removed, inserted or moved)";
  if (e["prev"].get_ref<const std::string&>() != state_.head) {
    if (n == 1) return lineError(n, "prev is not the genesis hash (64 zeros)" + seq_note);
    return lineError(n, "prev does not match line " + std::to_string(n - 1) + seq_note);
  }
  // Only reachable when someone recomputed the chain over a renumbered line.
  if (!seq_note.empty()) return lineError(n, "seq is " + std::to_string(seq) + ", expected " + std::to_string(state_.count));
  accept(line);
  return {};
}

void ChainVerifier::accept(std::string_view line) {
  state_.head = sha256Hex(line);
  state_.count += 1;
  // A verified line is canonical, so its type is exactly this tail (keys sorted, "v" last,
  // quotes inside strings escaped): no DOM needed to spot a run_start.
  constexpr std::string_view kRunStartTail = ",\"type\":\"run_start\",\"v\":1}";
  if (!line.ends_with(kRunStartTail)) return;
  const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* d = j.is_object() && j.contains("data") && j["data"].is_object() ? &j["data"] : nullptr;
  uint64_t prior_lines = state_.count - 1;  // records from before the field: everything above
  std::string prior;
  if (d != nullptr && d->contains("prior_lines") && (*d)["prior_lines"].is_number_unsigned() && d->contains("prior") &&
      (*d)["prior"].is_string()) {
    prior_lines = std::min((*d)["prior_lines"].get<uint64_t>(), state_.count - 1);
    prior = (*d)["prior"].get<std::string>();
  }
  state_.last_run_start = state_.count;
  state_.last_prior_lines = prior_lines;
  state_.last_prior = prior;
  const bool vouched = prior == "none" || prior == "sealed-signed-same-key";
  if (!vouched && prior_lines > state_.unvouched_lines) {
    state_.unvouched_lines = prior_lines;
    state_.unvouched_run_start = state_.count;
    state_.unvouched_prior = prior;
  }
}

Result<ChainState> verifyTraceFd(int fd) {
  ChainVerifier chain;
  std::string pending;  // the current line's bytes read so far
  std::vector<char> buf(1 << 20);
  off_t offset = 0;
  for (;;) {
    ssize_t r = ::pread(fd, buf.data(), buf.size(), offset);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return sysError("read trace.jsonl");
    if (r == 0) break;
    offset += r;
    std::string_view chunk(buf.data(), static_cast<size_t>(r));
    while (!chunk.empty()) {
      size_t nl = chunk.find('\n');
      if (nl == std::string_view::npos) {
        pending.append(chunk);
        if (pending.size() > kMaxTraceLineBytes)
          return lineError(chain.state().count + 1, "longer than " + std::to_string(kMaxTraceLineBytes) + " bytes");
        break;
      }
      if (pending.empty()) {
        RETURN_IF_ERROR(chain.addLine(chunk.substr(0, nl)));  // the common case: no copy
      } else {
        pending.append(chunk.substr(0, nl));
        RETURN_IF_ERROR(chain.addLine(pending));
        pending.clear();
      }
      chunk.remove_prefix(nl + 1);
    }
  }
  if (!pending.empty())
    return lineError(chain.state().count + 1, "no newline at the end (truncated mid-line?)");
  return chain.state();
}

}  // namespace corral::audit
