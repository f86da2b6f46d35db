// SPDX-License-Identifier: Apache-2.0
// Fuzzes corral verify on whole records (trace + result + the outputs it names): whatever the
// files hold, verifyRecord returns ok or a one-line failure, and never aborts.
//
// Input: one mode byte, then
//   'C' the result body as JSON text; the target writes a small valid trace, then a
//       result.json whose commitments match it and the body (what anyone can recompute for an
//       unsigned record), and the workspace files out.txt and d/out.txt the body may name;
//   'S' the same, signed, and verified with the public key;
//   any other: raw trace.jsonl bytes, a NUL, raw result.json bytes.
// The crafted modes are how a hostile record reaches the body checks (issue #19: an output
// whose "applied" was a number aborted corral verify); fuzz/regressions/record keeps them.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "audit/body_outputs.h"
#include "audit/canonical_json.h"
#include "audit/result.h"
#include "audit/signing.h"
#include "audit/verify.h"
#include "base/sha256.h"
#include "audit_env.h"
#include "check.h"

namespace corral::fuzz {
namespace {

using nlohmann::json;
using namespace corral::audit;

struct Env {
  std::string workspace;
  std::optional<SigningKey> key;
  std::optional<PublicKey> pub;
  std::string trace;  // a valid three-line trace
  uint64_t trace_count = 0;
  std::string trace_head;
};

std::string line(uint64_t seq, const std::string& prev, const char* type) {
  json e = {{"data", {{"n", seq}}}, {"prev", prev}, {"seq", seq}, {"ts_ms", 1}, {"type", type}, {"v", 1}};
  auto text = canonicalJson(e);
  PROPERTY(text.ok(), std::string("fixture line"));
  return *text;
}

Env& env() {
  static Env* e = [] {
    auto* n = new Env;
    n->workspace = makeFuzzDir("record");
    makeFuzzKeys(*n);
    std::string prev(kZeroHash);
    for (uint64_t i = 0; i < 3; ++i) {
      const std::string l = line(i, prev, i == 0 ? "run_start" : i == 2 ? "run_end" : "tool_call");
      n->trace += l + "\n";
      prev = sha256Hex(l);
    }
    n->trace_count = 3;
    n->trace_head = prev;
    std::atexit([] { std::filesystem::remove_all(env().workspace); });
    return n;
  }();
  return *e;
}

void writeFile(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  PROPERTY(fd >= 0, path);
  PROPERTY(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()), path);
  ::close(fd);
}

// A fresh workspace each input: nothing one input leaves can change the next one's verdict.
void layOut(std::string_view trace, std::string_view result) {
  const Env& e = env();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(e.workspace, ec)) std::filesystem::remove_all(entry.path(), ec);
  PROPERTY(::mkdir((e.workspace + "/.corral").c_str(), 0700) == 0, std::string("mkdir .corral"));
  PROPERTY(::mkdir((e.workspace + "/d").c_str(), 0700) == 0, std::string("mkdir d"));
  writeFile(e.workspace + "/.corral/trace.jsonl", trace);
  writeFile(e.workspace + "/.corral/result.json", result);
  writeFile(e.workspace + "/out.txt", "hello\n");
  writeFile(e.workspace + "/d/out.txt", "");
}

void checkVerify(const VerifyOptions& opt, const std::optional<json>& body) {
  auto r = verifyRecord(env().workspace, opt);
  PROPERTY_ONE_LINE_ERROR(r);
  PROPERTY(r.ok(), "verifyRecord refused an existing workspace: " + r.error().message());
  PROPERTY(r->ok == r->failure.empty(), "ok and failure disagree: " + r->failure);
  PROPERTY(noControlBytes(r->failure), r->failure);
  if (!r->ok || !body) return;
  // Accepted: the body's outputs are well-formed, and every copied one was compared.
  auto outputs = parseBodyOutputs(*body);
  PROPERTY(outputs.ok(), "verify accepted a body whose outputs are malformed: " + outputs.error().message());
  uint64_t copied = 0;
  for (const BodyOutput& o : *outputs) copied += o.applied == "copied" ? 1 : 0;
  PROPERTY(r->outputs_checked == copied, std::string("an applied output was accepted without being compared"));
}

void crafted(std::string_view text, bool sign) {
  const Env& e = env();
  json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return;  // not JSON: the raw mode covers unparseable files
  auto enc = encodeResult(sha256Hex("manifest"), e.trace_head, e.trace_count, body, sign ? &*e.key : nullptr);
  PROPERTY_ONE_LINE_ERROR(enc);
  if (!enc) return;
  layOut(e.trace, *enc);
  VerifyOptions opt;
  if (sign) opt.public_key = &*e.pub;
  checkVerify(opt, body);
  opt.check_outputs = false;
  checkVerify(opt, std::nullopt);
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::fuzz;
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 'C' || data[0] == 'S') {
    crafted(in, data[0] == 'S');
    return 0;
  }
  const size_t nul = in.find('\0');
  layOut(in.substr(0, nul), nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1));
  checkVerify({}, std::nullopt);
  return 0;
}
