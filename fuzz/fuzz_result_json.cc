// SPDX-License-Identifier: Apache-2.0
// Fuzzes result.json: the strict parser takes any bytes with a one-line error or a record
// that re-serialises to exactly those bytes; records the encoder makes parse back equal.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "audit/base64.h"
#include "audit/canonical_json.h"
#include "audit/result.h"
#include "base/sha256.h"
#include "audit/signing.h"
#include "check.h"

namespace corral::fuzz {
namespace {

using nlohmann::json;
using namespace corral::audit;

// The document a parsed record stands for, spelled the way encodeResult spells it.
std::string reserialise(const ResultRecord& r) {
  json doc = {{"v", kResultVersion},
              {"commitments",
               {{"manifest_sha256", r.commitments.manifest_sha256},
                {"trace_head", r.commitments.trace_head},
                {"trace_count", r.commitments.trace_count},
                {"result_body_sha256", r.commitments.result_body_sha256}}},
              {"body", r.body}};
  if (r.signature)
    doc["signature"] = {{"alg", "ed25519"},
                        {"public_key_spki_sha256", r.signature->public_key_spki_sha256},
                        {"sig", base64Encode(r.signature->sig)}};
  auto text = canonicalJson(doc);
  PROPERTY(text.ok(), "an accepted record cannot be re-serialised: " + text.error().message());
  return *text + "\n";
}

void expectEqual(const ResultRecord& a, const ResultRecord& b, std::string_view what) {
  const std::string w(what);
  PROPERTY(a.commitments.manifest_sha256 == b.commitments.manifest_sha256, w + ": manifest_sha256");
  PROPERTY(a.commitments.trace_head == b.commitments.trace_head, w + ": trace_head");
  PROPERTY(a.commitments.trace_count == b.commitments.trace_count, w + ": trace_count");
  PROPERTY(a.commitments.result_body_sha256 == b.commitments.result_body_sha256, w + ": result_body_sha256");
  PROPERTY(a.body == b.body, w + ": body");
  PROPERTY(a.signature.has_value() == b.signature.has_value(), w + ": signature presence");
  if (a.signature) {
    PROPERTY(a.signature->public_key_spki_sha256 == b.signature->public_key_spki_sha256, w + ": signature key");
    PROPERTY(a.signature->sig == b.signature->sig, w + ": signature bytes");
  }
}

// Any bytes: refused with one line, or accepted as a record that is exactly these bytes.
void checkParse(std::string_view bytes) {
  auto r = parseResult(bytes);
  PROPERTY_ONE_LINE_ERROR(r);
  if (!r) {
    PROPERTY(r.error().message().rfind("result.json: ", 0) == 0, "error does not name result.json: " + r.error().message());
    return;
  }
  const ResultRecord& rec = *r;
  PROPERTY(isSha256Hex(rec.commitments.manifest_sha256) && isSha256Hex(rec.commitments.trace_head) &&
               isSha256Hex(rec.commitments.result_body_sha256),
           std::string("accepted a malformed hash"));
  PROPERTY(rec.body.is_object(), std::string("accepted a body that is not an object"));
  PROPERTY(!rec.signature || rec.signature->sig.size() == kEd25519SignatureBytes, "signature length");
  // Strict and canonical: one spelling per record, so re-serialising gives the input back.
  const std::string again = reserialise(rec);
  PROPERTY(again == bytes, "accepted a non-canonical spelling: " + std::string(bytes.substr(0, 300)));
  auto reparsed = parseResult(again);
  PROPERTY(reparsed.ok(), std::string("re-serialised record does not parse"));
  expectEqual(rec, *reparsed, "re-parse");
  // The encoder agrees whenever the record is one it could have written (unsigned, honest hash).
  auto body = canonicalJson(rec.body);
  PROPERTY(body.ok(), std::string("accepted a body that has no canonical form"));
  if (!rec.signature && sha256Hex(*body) == rec.commitments.result_body_sha256) {
    auto enc = encodeResult(rec.commitments.manifest_sha256, rec.commitments.trace_head, rec.commitments.trace_count,
                            rec.body, nullptr);
    PROPERTY(enc.ok() && *enc == bytes, std::string("encodeResult spells the record differently"));
  }
}

const SigningKey& key() {
  static SigningKey* k = [] {
    auto g = SigningKey::generate();
    PROPERTY(g.ok(), std::string("key generation"));
    return new SigningKey(std::move(*g));
  }();
  return *k;
}

const PublicKey& publicKey() {
  static PublicKey* p = [] {
    auto pem = key().publicKeyPem();
    PROPERTY(pem.ok(), std::string("public key pem"));
    auto k = PublicKey::fromPem(*pem);
    PROPERTY(k.ok(), std::string("public key parse"));
    return new PublicKey(std::move(*k));
  }();
  return *p;
}

// Fuzz-derived records through the encoder: accepted ones parse back equal, signatures verify.
void checkEncode(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string manifest = in.ConsumeBool() ? sha256Hex(in.ConsumeRandomLengthString(8)) : in.ConsumeRandomLengthString(70);
  const std::string head = in.ConsumeBool() ? sha256Hex(in.ConsumeRandomLengthString(8)) : in.ConsumeRandomLengthString(70);
  const auto count = in.ConsumeIntegral<uint64_t>();
  const bool sign = in.ConsumeBool();
  std::string text = in.ConsumeRemainingBytesAsString();
  json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) body = {{"text", std::move(text)}};
  auto enc = encodeResult(manifest, head, count, body, sign ? &key() : nullptr);
  PROPERTY_ONE_LINE_ERROR(enc);
  if (!enc) return;
  auto rec = parseResult(*enc);
  PROPERTY(rec.ok(), "encodeResult output does not parse: " + rec.error().message());
  PROPERTY(rec->commitments.manifest_sha256 == manifest && rec->commitments.trace_head == head &&
               rec->commitments.trace_count == count,
           std::string("commitments changed"));
  PROPERTY(rec->body == body, std::string("body changed"));
  auto body_bytes = canonicalJson(body);
  PROPERTY(body_bytes.ok() && sha256Hex(*body_bytes) == rec->commitments.result_body_sha256, "body hash");
  PROPERTY(rec->signature.has_value() == sign, std::string("signature presence"));
  if (sign) {
    auto message = signedMessage(rec->commitments);
    PROPERTY(message.ok() && publicKey().verify(*message, rec->signature->sig), std::string("signature does not verify"));
    PROPERTY(rec->signature->public_key_spki_sha256 == publicKey().spkiSha256(), std::string("signature key"));
  }
  PROPERTY(reserialise(*rec) == *enc, std::string("re-serialised encoder output differs"));
}

}  // namespace
}  // namespace corral::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  corral::fuzz::checkParse({reinterpret_cast<const char*>(data), size});
  corral::fuzz::checkEncode(data, size);
  return 0;
}
