// SPDX-License-Identifier: Apache-2.0
// Fuzzes the audit trace: the fast line recogniser against the strict parser, the streaming
// file verifier against line-by-line checks, and writer output that must verify while every
// single-byte change to it (trace.jsonl or result.json) must not.
#include <fuzzer/FuzzedDataProvider.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/canonical_json.h"
#include "audit/record_dir.h"
#include "audit/result.h"
#include "base/sha256.h"
#include "audit/signing.h"
#include "audit/trace.h"
#include "audit/trace_chain.h"
#include "audit/trace_fast_path.h"
#include "audit/verify.h"
#include "base/unique_fd.h"
#include "audit_env.h"
#include "check.h"

namespace corral::fuzz {
namespace {

using nlohmann::json;
using namespace corral::audit;

const std::string kZeros(kZeroHash);

// --- Lines: fast path vs strict path -------------------------------------------------------

// The strict path's verdict on a line's form, computed independently of ChainVerifier (as in
// trace_fast_path_test.cc): canonical JSON with exactly the entry's fields, each well-formed.
struct Strict {
  uint64_t seq = 0;
  std::string prev;
};
std::optional<Strict> referenceStrict(std::string_view l) {
  auto e = parseCanonicalJson(l);
  if (!e.ok() || !e->is_object() || e->size() != 6) return std::nullopt;
  for (const char* f : {"data", "prev", "seq", "ts_ms", "type", "v"})
    if (!e->contains(f)) return std::nullopt;
  const json& j = *e;
  bool ok = j["v"].is_number_integer() && j["v"] == 1 && j["prev"].is_string() &&
            isSha256Hex(j["prev"].get_ref<const std::string&>()) && j["seq"].is_number_integer() &&
            j["seq"].get<int64_t>() >= 0 && j["ts_ms"].is_number_integer() && j["ts_ms"].get<int64_t>() >= 0 &&
            j["type"].is_string() && isTraceType(j["type"].get_ref<const std::string&>()) &&
            checkTraceData(j["data"]).ok();
  if (!ok) return std::nullopt;
  return Strict{j["seq"].get<uint64_t>(), j["prev"].get<std::string>()};
}

// ChainVerifier's own strict path, forced: a line whose header is not (0, genesis) does not
// match a fresh verifier, so the fast path cannot take it; one that is gets a real line 1
// in front. The strict path accepted the form iff it then fails only on the linkage.
bool verifierAcceptsForm(std::string_view l, const std::optional<FastTraceHeader>& fast) {
  ChainVerifier v;
  if (fast && fast->seq == 0 && fast->prev == kZeros) {
    static const std::string kLine1 = *encodeTraceLine(ChainState{}, 1, "run_start", json::object());
    PROPERTY(v.addLine(kLine1).ok(), kLine1);
  }
  auto r = v.addLine(l);
  PROPERTY_ONE_LINE_ERROR(r);
  if (r.ok()) {
    PROPERTY(v.state().count == 1 && v.state().head == sha256Hex(l), std::string(l));
    return true;
  }
  const std::string& m = r.error().message();
  const std::string at = "trace line " + std::to_string(v.state().count + 1) + ": ";
  PROPERTY(m.rfind(at, 0) == 0, m);
  const std::string_view rest = std::string_view(m).substr(at.size());
  return rest.rfind("prev is not the genesis hash", 0) == 0 || rest.rfind("prev does not match line", 0) == 0 ||
         rest.rfind("seq is ", 0) == 0;
}

// Lines the fast path is documented to take whenever they are valid: printable ASCII, no
// escapes (so every key is plain and every raw string is its decoded length) and nesting
// well inside its depth margin.
bool plainShallow(std::string_view l) {
  int depth = 0;
  int max_depth = 0;
  bool in_string = false;
  for (char c : l) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == '\\') return false;
    if (c == '"') in_string = !in_string;
    if (in_string) continue;
    if (c == '{' || c == '[') max_depth = std::max(max_depth, ++depth);
    if (c == '}' || c == ']') --depth;
  }
  return max_depth <= kMaxJsonDepth - 8;
}

void checkLine(std::string_view l) {
  if (l.size() > kMaxTraceLineBytes) return;
  const auto fast = fastTraceLine(l);
  const auto ref = referenceStrict(l);
  const bool verifier = verifierAcceptsForm(l, fast);
  PROPERTY(verifier == ref.has_value(), "ChainVerifier and the reference strict check disagree: " + std::string(l));
  if (fast) {
    // The fast path only ever says "certainly valid": the strict path must agree, field by field.
    PROPERTY(ref.has_value(), "fast path accepts what the strict parser rejects: " + std::string(l));
    PROPERTY(fast->seq == ref->seq, "fast and strict seq differ: " + std::string(l));
    PROPERTY(fast->prev == ref->prev, "fast and strict prev differ: " + std::string(l));
    // And the chain moves the same whichever path takes the line.
    ChainVerifier v;
    if (fast->seq == 0 && fast->prev == kZeros) {
      PROPERTY(v.addLine(l).ok() && v.state().head == sha256Hex(l), std::string(l));
    }
  } else if (ref && plainShallow(l)) {
    PROPERTY(false, "fast path falls back on a plain, shallow, valid line: " + std::string(l));
  }
}

// verifyTraceFd (streaming, 1 MiB reads) must reach the verdict of feeding the lines one by one.
void checkFile(std::string_view bytes) {
  ChainVerifier v;
  std::optional<std::string> want_error;
  size_t start = 0;
  while (start < bytes.size() && !want_error) {
    size_t nl = bytes.find('\n', start);
    if (nl == std::string_view::npos) {
      const std::string_view tail = bytes.substr(start);
      want_error = "trace line " + std::to_string(v.state().count + 1) + ": " +
                   (tail.size() > kMaxTraceLineBytes ? "longer than " + std::to_string(kMaxTraceLineBytes) + " bytes"
                                                     : std::string("no newline at the end (truncated mid-line?)"));
      break;
    }
    auto r = v.addLine(bytes.substr(start, nl - start));
    if (!r) want_error = r.error().message();
    start = nl + 1;
  }
  UniqueFd fd(::memfd_create("trace", MFD_CLOEXEC));
  PROPERTY(fd.get() >= 0, std::string("memfd_create"));
  PROPERTY(writeAll(fd.get(), bytes, "memfd").ok(), std::string("write memfd"));
  auto got = verifyTraceFd(fd.get());
  PROPERTY_ONE_LINE_ERROR(got);
  if (want_error) {
    PROPERTY(!got.ok(), "verifyTraceFd accepts a trace a line-by-line check rejects: " + *want_error);
    PROPERTY(got.error().message() == *want_error, got.error().message() + " vs " + *want_error);
  } else {
    PROPERTY(got.ok(), "verifyTraceFd rejects a trace the lines accept: " + got.error().message());
    PROPERTY(got->count == v.state().count && got->head == v.state().head, std::string("chain state differs"));
  }
}

// --- Writer: what it writes verifies, and no single-byte change to it does -----------------

struct Env {
  std::string workspace;
  std::string record;
  std::optional<SigningKey> key;
  std::optional<PublicKey> pub;
};

Env& env() {
  static Env* e = [] {
    auto* n = new Env;
    n->workspace = makeFuzzDir("trace");
    n->record = n->workspace + "/" + std::string(kRecordDirName);
    makeFuzzKeys(*n);
    std::atexit([] { std::filesystem::remove_all(env().workspace); });
    return n;
  }();
  return *e;
}

std::string readAll(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  PROPERTY(fd.get() >= 0, path);
  std::string out;
  char buf[4096];
  for (ssize_t r; (r = ::read(fd.get(), buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(r));
  return out;
}

void pwriteByte(const std::string& path, size_t pos, char c) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  PROPERTY(fd.get() >= 0 && ::pwrite(fd.get(), &c, 1, static_cast<off_t>(pos)) == 1, path);
}

json fuzzedJson(FuzzedDataProvider& in) {
  std::string text = in.ConsumeRandomLengthString(300);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    j = {{"text", std::move(text)}, {"n", in.ConsumeIntegral<int32_t>()}, {"ok", in.ConsumeBool()}};
  return j;
}

std::string fuzzedType(FuzzedDataProvider& in) {
  static const char* kTypes[] = {"run_start", "tool_call", "tool_result", "model_call", "egress", "run_end"};
  if (in.ConsumeBool()) return kTypes[in.ConsumeIntegralInRange<size_t>(0, std::size(kTypes) - 1)];
  return in.ConsumeRandomLengthString(40);
}

// What verifyRecord decides about a trace, in memory: line by line (checkFile shows this is
// verifyTraceFd's verdict), then the count and head result.json commits to.
bool traceVerifies(std::string_view bytes, uint64_t count, const std::string& head) {
  if (!bytes.empty() && bytes.back() != '\n') return false;
  ChainVerifier v;
  for (size_t start = 0; start < bytes.size();) {
    const size_t nl = bytes.find('\n', start);
    if (!v.addLine(bytes.substr(start, nl - start))) return false;
    start = nl + 1;
  }
  return v.state().count == count && v.state().head == head;
}

// What verifyRecord decides about result.json against the original trace, in memory.
bool resultVerifies(std::string_view bytes, uint64_t count, const std::string& head, const PublicKey* pub) {
  auto r = parseResult(bytes);
  PROPERTY_ONE_LINE_ERROR(r);
  if (!r) return false;
  const Commitments& c = r->commitments;
  auto body = canonicalJson(r->body);
  if (c.trace_count != count || c.trace_head != head || !body || sha256Hex(*body) != c.result_body_sha256) return false;
  if (pub == nullptr) return true;
  auto message = signedMessage(c);
  return r->signature && message && r->signature->public_key_spki_sha256 == pub->spkiSha256() &&
         pub->verify(*message, r->signature->sig);
}

// Changes one byte (a flipped bit, or a '\n') at sampled positions of file, skipping
// [skip_from, skip_to); every result must be refused. The in-memory verdict judges all of
// them; the real verifyRecord judges one in eight inputs' worth, and must agree. (It reads
// through a 1 MiB trace buffer and a 4 MiB result buffer per call, zero-filled: under ASan
// that is ~5 ms of page faults, which would cap the target at a few dozen inputs a second.)
template <typename Verdict>
void mutateAndExpectRejection(const std::string& file, const VerifyOptions& opt, size_t skip_from, size_t skip_to,
                              uint32_t salt, Verdict verifies) {
  const std::string orig = readAll(file);
  if (orig.empty()) return;
  constexpr size_t kSamples = 16;
  const size_t n = std::min(orig.size(), kSamples);
  for (size_t k = 0; k < n; ++k) {
    const size_t pos = orig.size() <= kSamples ? k : (k * orig.size() / kSamples + salt % (orig.size() / kSamples));
    if (pos >= skip_from && pos < skip_to) continue;
    std::string mutated = orig;
    const char was = orig[pos];
    char now = (k + salt) % 9 == 8 ? '\n' : static_cast<char>(was ^ (1 << ((k + salt) % 8)));
    if (now == was) now = static_cast<char>(was ^ 1);
    mutated[pos] = now;
    PROPERTY(!verifies(mutated), file + ": byte " + std::to_string(pos) + " changed and it still verifies");
    if (salt % 8 != 0 || k != salt / 8 % n) continue;
    pwriteByte(file, pos, now);
    auto rep = verifyRecord(env().workspace, opt);
    PROPERTY(rep.ok(), rep.error().message());
    PROPERTY(!rep->ok, file + ": byte " + std::to_string(pos) + " changed and verifyRecord accepts it");
    PROPERTY(noControlBytes(rep->failure) && !rep->failure.empty(), rep->failure);
    pwriteByte(file, pos, was);
  }
}

struct Written {
  uint64_t count = 0;
  std::string head;
  bool sign = false;
};

// Writes fuzz-derived entries and a result through the real writer; nullopt when the result
// was (rightly) refused. The writer, and its lock, are gone when this returns.
std::optional<Written> writeRecord(FuzzedDataProvider& in, const UniqueFd& dir) {
  int64_t ts = 0;
  auto writer = TraceWriter::open(dir, TraceOptions{TraceSync::kBatch, [&ts] { return ts; }});
  PROPERTY(writer.ok(), writer.error().message());
  std::vector<std::string> lines;
  for (size_t n = in.ConsumeIntegralInRange<size_t>(0, 8); n > 0; --n) {
    const std::string type = fuzzedType(in);
    const json d = fuzzedJson(in);
    ts = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(-1, kMaxSafeInteger + 1) : 1700000000000;
    const ChainState before{writer->count(), writer->head()};
    auto want = encodeTraceLine(before, ts, type, d);
    auto r = writer->append(type, d);
    PROPERTY_ONE_LINE_ERROR(r);
    PROPERTY(r.ok() == want.ok(), "writer and encodeTraceLine disagree");
    if (!r) {
      PROPERTY(writer->count() == before.count && writer->head() == before.head, "a refused entry moved the chain");
      continue;
    }
    PROPERTY(writer->count() == before.count + 1 && writer->head() == sha256Hex(*want), "chain did not advance");
    lines.push_back(*want);
  }
  for (const std::string& l : lines) checkLine(l);

  Written w;
  w.sign = in.ConsumeBool();
  const std::string manifest = sha256Hex(in.ConsumeRandomLengthString(16));
  const json body = fuzzedJson(in);
  auto fin = finishRecord(dir, *writer, manifest, body, w.sign ? &*env().key : nullptr);
  PROPERTY_ONE_LINE_ERROR(fin);
  if (!fin) return std::nullopt;  // a body the canonical form cannot hold (bad UTF-8): refused
  w.count = writer->count();
  w.head = writer->head();
  return w;
}

void checkWriter(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Env& e = env();
  std::filesystem::remove_all(e.record);
  auto dir = openRecordDir(e.workspace, /*create=*/true);
  PROPERTY(dir.ok(), dir.error().message());
  const auto written = writeRecord(in, *dir);
  if (!written) return;
  const bool sign = written->sign;
  const uint64_t count = written->count;
  const std::string& head = written->head;

  VerifyOptions opt;
  if (sign) opt.public_key = &*e.pub;
  // Mixed with a hash of the input: a short input leaves the provider empty, which yields 0.
  const auto salt = static_cast<uint32_t>(in.ConsumeIntegral<uint32_t>() ^
                                          std::hash<std::string_view>{}({reinterpret_cast<const char*>(data), size}));
  PROPERTY(traceVerifies(readAll(e.record + "/trace.jsonl"), count, head), std::string("trace as written"));
  PROPERTY(resultVerifies(readAll(e.record + "/result.json"), count, head, opt.public_key), "result as written");
  if (salt % 8 == 0) {
    auto rep = verifyRecord(e.workspace, opt);
    PROPERTY(rep.ok() && rep->ok, rep.ok() ? rep->failure : rep.error().message());
    PROPERTY(rep->trace_count == count && rep->trace_head == head, "verify reports another head");
    PROPERTY(rep->signature == (sign ? SignatureStatus::kValid : SignatureStatus::kAbsent), "signature status");
  }

  mutateAndExpectRejection(e.record + "/trace.jsonl", opt, 0, 0, salt,
                           [&](std::string_view t) { return traceVerifies(t, count, head); });
  // Unsigned, nothing vouches for manifest_sha256 (no manifest is stored in .corral): its
  // 64 hex digits may change undetected. Signed, every byte is covered.
  size_t skip_from = 0;
  size_t skip_to = 0;
  if (!sign) {
    const std::string result = readAll(e.record + "/result.json");
    const std::string key = "\"manifest_sha256\":\"";
    skip_from = result.find(key);
    PROPERTY(skip_from != std::string::npos, result);
    skip_from += key.size();
    skip_to = skip_from + 64;
  }
  mutateAndExpectRejection(e.record + "/result.json", opt, skip_from, skip_to, salt,
                           [&](std::string_view r) { return resultVerifies(r, count, head, opt.public_key); });
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::fuzz;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  checkFile(text);
  size_t start = 0;
  for (size_t lines = 0; start <= text.size() && lines < 64; ++lines) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    checkLine(text.substr(start, nl - start));
    start = nl + 1;
  }
  checkWriter(data, size);
  return 0;
}
