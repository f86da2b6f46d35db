// SPDX-License-Identifier: Apache-2.0
// result.json encoding, strict parsing and the atomic write.
#include "audit/result.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "audit/base64.h"
#include "audit/canonical_json.h"
#include "audit/record_dir.h"
#include "base/sha256.h"

namespace corral::audit {
namespace {

Error bad(const std::string& what) { return Error(Errc::kInvalidArgument, "result.json: " + what); }

// Exactly these keys (optional ones may be absent), so an added field cannot carry a claim
// that no verifier checks.
Result<void> exactKeys(const nlohmann::json& obj, const std::string& where,
                       std::initializer_list<const char*> required, std::initializer_list<const char*> optional = {}) {
  if (!obj.is_object()) return bad(where + " is not an object");
  size_t known = 0;
  for (const char* k : required) {
    if (!obj.contains(k)) return bad(where + " has no \"" + k + "\"");
    ++known;
  }
  for (const char* k : optional) known += obj.contains(k) ? 1 : 0;
  if (obj.size() != known) return bad(where + " has an unknown field");
  return {};
}

Result<std::string> hashField(const nlohmann::json& obj, const char* key, const std::string& where) {
  const nlohmann::json& v = obj[key];
  if (!v.is_string() || !isSha256Hex(v.get_ref<const std::string&>()))
    return bad(where + "." + key + " is not 64 lowercase hex digits");
  return v.get<std::string>();
}

nlohmann::json commitmentsJson(const Commitments& c) {
  return {{"manifest_sha256", c.manifest_sha256},
          {"trace_head", c.trace_head},
          {"trace_count", c.trace_count},
          {"result_body_sha256", c.result_body_sha256}};
}

}  // namespace

Result<std::string> signedMessage(const Commitments& c) { return canonicalJson(commitmentsJson(c)); }

Result<std::string> encodeResult(std::string_view manifest_sha256, std::string_view trace_head, uint64_t trace_count,
                                 const nlohmann::json& body, const SigningKey* key) {
  if (!isSha256Hex(manifest_sha256)) return Error(Errc::kInvalidArgument, "manifest_sha256 is not 64 lowercase hex digits");
  if (!isSha256Hex(trace_head)) return Error(Errc::kInvalidArgument, "trace_head is not 64 lowercase hex digits");
  if (!body.is_object()) return Error(Errc::kInvalidArgument, "result body is not a JSON object");
  auto body_bytes = canonicalJson(body);
  if (!body_bytes) return body_bytes.error().wrap("result body");
  Commitments c{std::string(manifest_sha256), std::string(trace_head), trace_count, sha256Hex(*body_bytes)};
  nlohmann::json doc = {{"v", kResultVersion}, {"commitments", commitmentsJson(c)}, {"body", body}};
  if (key != nullptr) {
    ASSIGN_OR_RETURN(std::string message, signedMessage(c));
    ASSIGN_OR_RETURN(std::string sig, key->sign(message));
    doc["signature"] = {{"alg", "ed25519"},
                        {"public_key_spki_sha256", key->publicKeySpkiSha256()},
                        {"sig", base64Encode(sig)}};
  }
  ASSIGN_OR_RETURN(std::string out, canonicalJson(doc));
  out.push_back('\n');
  if (out.size() > kMaxResultBytes)
    return Error(Errc::kLimit, "result.json would be " + std::to_string(out.size()) + " bytes (limit " +
                                   std::to_string(kMaxResultBytes) + ")");
  return out;
}

Result<ResultRecord> parseResult(std::string_view bytes) {
  if (bytes.empty() || bytes.back() != '\n') return bad("does not end in a newline (truncated?)");
  auto parsed = parseCanonicalJson(bytes.substr(0, bytes.size() - 1));
  if (!parsed) return bad(parsed.error().message());
  const nlohmann::json& doc = *parsed;
  RETURN_IF_ERROR(exactKeys(doc, "the top level", {"v", "commitments", "body"}, {"signature"}));
  if (!doc["v"].is_number_integer() || doc["v"].get<int64_t>() != kResultVersion) return bad("\"v\" is not 1");
  const nlohmann::json& c = doc["commitments"];
  RETURN_IF_ERROR(exactKeys(c, "commitments", {"manifest_sha256", "trace_head", "trace_count", "result_body_sha256"}));
  ResultRecord r;
  ASSIGN_OR_RETURN(r.commitments.manifest_sha256, hashField(c, "manifest_sha256", "commitments"));
  ASSIGN_OR_RETURN(r.commitments.trace_head, hashField(c, "trace_head", "commitments"));
  ASSIGN_OR_RETURN(r.commitments.result_body_sha256, hashField(c, "result_body_sha256", "commitments"));
  if (!c["trace_count"].is_number_integer() || c["trace_count"].get<int64_t>() < 0)
    return bad("commitments.trace_count is not a non-negative integer");
  r.commitments.trace_count = c["trace_count"].get<uint64_t>();
  if (!doc["body"].is_object()) return bad("body is not an object");
  r.body = doc["body"];
  if (doc.contains("signature")) {
    const nlohmann::json& s = doc["signature"];
    RETURN_IF_ERROR(exactKeys(s, "signature", {"alg", "public_key_spki_sha256", "sig"}));
    if (s["alg"] != "ed25519") return bad("signature.alg is not \"ed25519\"");
    ResultSignature sig;
    ASSIGN_OR_RETURN(sig.public_key_spki_sha256, hashField(s, "public_key_spki_sha256", "signature"));
    std::optional<std::string> raw;
    if (s["sig"].is_string()) raw = base64DecodeStrict(s["sig"].get_ref<const std::string&>());
    if (!raw || raw->size() != kEd25519SignatureBytes)
      return bad("signature.sig is not the base64 of a 64-byte Ed25519 signature");
    sig.sig = std::move(*raw);
    r.signature = std::move(sig);
  }
  return r;
}

Result<void> writeResultFile(const UniqueFd& record_dir, std::string_view bytes) {
  return replaceFileAt(record_dir, kResultFileName, bytes, true);
}

Result<void> finishRecord(const UniqueFd& record_dir, TraceWriter& trace, std::string_view manifest_sha256,
                          const nlohmann::json& body, const SigningKey* key) {
  // The head must be durable before anything commits to it.
  RETURN_IF_ERROR(trace.sync());
  ASSIGN_OR_RETURN(std::string bytes, encodeResult(manifest_sha256, trace.head(), trace.count(), body, key));
  return writeResultFile(record_dir, bytes);
}

std::string priorSeal(const UniqueFd& record_dir, uint64_t trace_count, std::string_view trace_head, const SigningKey* key) {
  if (trace_count == 0) return "none";
  auto bytes = readRecordFile(record_dir, kResultFileName, kMaxResultBytes);
  if (!bytes) return "unsealed";
  auto result = parseResult(*bytes);
  if (!result) return "unsealed";
  const Commitments& c = result->commitments;
  auto body = canonicalJson(result->body);
  if (c.trace_count != trace_count || c.trace_head != trace_head || !body || sha256Hex(*body) != c.result_body_sha256)
    return "unsealed";
  if (!result->signature) return "sealed-unsigned";
  if (key == nullptr || result->signature->public_key_spki_sha256 != key->publicKeySpkiSha256())
    return "sealed-signed-other-key";
  auto pem = key->publicKeyPem();
  auto pub = pem ? PublicKey::fromPem(*pem) : Result<PublicKey>(pem.error());
  auto message = signedMessage(c);
  if (!pub || !message || !pub->verify(*message, result->signature->sig)) return "sealed-signature-invalid";
  return "sealed-signed-same-key";
}

}  // namespace corral::audit
