// SPDX-License-Identifier: Apache-2.0
// verifyRecord: checks in the order of docs/audit-format.md, reporting the first failure.
#include "audit/verify.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "audit/body_outputs.h"
#include "audit/canonical_json.h"
#include "audit/record_dir.h"
#include "audit/result.h"
#include "base/sha256.h"
#include "audit/trace_chain.h"
#include "base/open_beneath.h"
#include "base/unique_fd.h"

namespace corral::audit {
namespace {

std::string n(uint64_t v) { return std::to_string(v); }

// 9. What the run applied to the workspace is still there as it wrote it. The body is
// authentic by now (its hash is committed, and signed when a key was given) and its outputs
// well-formed (parseBodyOutputs); their paths are still opened beneath the workspace only,
// never through a symlink, and never a FIFO's read.
std::string checkOutputs(const std::string& workspace, const std::vector<BodyOutput>& outputs, VerifyReport& rep) {
  UniqueFd ws(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!ws.valid()) return sysError("open workspace " + workspace).message();
  for (const BodyOutput& o : outputs) {
    if (o.applied != "copied") continue;
    const std::string& want = o.sha256;
    auto quoted = canonicalJson(nlohmann::json(o.path));  // one line, whatever the path holds
    std::string what = "output ";
    what += quoted ? *quoted : "\"?\"";
    auto said = [&what](std::initializer_list<std::string_view> parts) {
      std::string m = what;
      for (std::string_view p : parts) m += p;
      return m;
    };
    // The size the run copied back (records since session 13 carry it) is checked first, so
    // a file grown after the run, even a sparse one of terabytes, fails without being read.
    const FileDigest d = sha256OfFileBeneath(ws.get(), o.path, o.bytes);
    switch (d.status) {
      case FileDigest::Status::kOk: break;
      case FileDigest::Status::kSizeDiffers:
        return said({" differs from what the run wrote (", n(o.bytes.value_or(0)), " bytes, now ", n(d.size),
                     "): changed after the run (--record-only checks the record alone)"});
      case FileDigest::Status::kMissing:
        return said({" is missing from the workspace (the run wrote sha256 ", want, ")"});
      case FileDigest::Status::kOutside: return said({" resolves outside the workspace or through a symlink"});
      case FileDigest::Status::kNotRegular: return said({" is not a regular file"});
      case FileDigest::Status::kError: return sysError(what, d.err).message();
    }
    const std::string& got = d.sha256;
    if (got != want)
      return said({" differs from what the run wrote (sha256 ", want, ", now ", got,
                   "): changed after the run (--record-only checks the record alone)"});
    ++rep.outputs_checked;
  }
  return "";
}

// Returns the failure text, or "" when everything checked out.
std::string check(const std::string& workspace, const VerifyOptions& opt, VerifyReport& rep) {
  auto dir = openRecordDir(workspace, /*create=*/false);
  if (!dir) return dir.error().code() == ENOENT ? "no .corral/ directory in the workspace" : dir.error().message();

  // 1. The chain, line by line.
  const std::string trace_name(kTraceFileName);
  int raw = ::openat(dir->get(), trace_name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (raw < 0) {
    const int err = errno;
    if (err == ELOOP) return trace_name + " is a symlink";
    if (err == ENOENT) return "no " + trace_name + " in .corral/";
    return sysError("open " + trace_name, err).message();
  }
  UniqueFd trace_fd(raw);
  struct stat st {};
  if (::fstat(trace_fd.get(), &st) != 0) return sysError("stat " + trace_name).message();
  if (!S_ISREG(st.st_mode)) return trace_name + " is not a regular file";
  auto chain = verifyTraceFd(trace_fd.get());
  if (!chain) return chain.error().message();
  rep.trace_count = chain->count;
  rep.trace_head = chain->head;
  rep.run_start_line = chain->last_run_start;
  rep.prior_lines = chain->last_prior_lines;
  rep.prior = chain->last_prior;
  rep.unvouched_lines = chain->unvouched_lines;
  rep.unvouched_run_start_line = chain->unvouched_run_start;
  rep.unvouched_prior = chain->unvouched_prior;

  // 2. result.json and its commitments.
  auto bytes = readRecordFile(*dir, kResultFileName, kMaxResultBytes);
  if (!bytes) {
    if (bytes.error().code() == ENOENT) return "no result.json (the run did not finish?)";
    const std::string m = bytes.error().message();  // "result.json is N bytes (limit 4194304)", "... is a symlink"
    return m.starts_with("result.json") ? m : "result.json: " + m;
  }
  auto result = parseResult(*bytes);
  if (!result) return result.error().message();
  const Commitments& c = result->commitments;
  rep.manifest_sha256 = c.manifest_sha256;
  rep.result_body_sha256 = c.result_body_sha256;
  if (c.trace_count > chain->count)
    return "trace has " + n(chain->count) + " lines but result.json commits " + n(c.trace_count) +
           ": the tail was truncated";
  if (c.trace_count < chain->count)
    return "trace has " + n(chain->count) + " lines but result.json commits " + n(c.trace_count) +
           ": lines were appended after the result";
  if (c.trace_head != chain->head && chain->count == 0)
    return "trace is empty but commitments.trace_head is not the genesis hash (64 zeros)";
  if (c.trace_head != chain->head)
    return "trace line " + n(chain->count) + " (the last): its hash does not match commitments.trace_head";
  auto body = canonicalJson(result->body);
  if (!body) return "result.json: body: " + body.error().message();
  if (sha256Hex(*body) != c.result_body_sha256)
    return "result.json: body does not match commitments.result_body_sha256 (the body was changed or swapped)";
  // 7. The body's outputs are well-formed: the body is hashed whatever it holds, but verify
  // reads this part, so a malformed one fails rather than being skipped.
  auto outputs = parseBodyOutputs(result->body);
  if (!outputs) return "result.json: " + outputs.error().message();

  // 3. The signature.
  if (result->signature) {
    rep.signature = SignatureStatus::kNotChecked;
    rep.public_key_spki_sha256 = result->signature->public_key_spki_sha256;
  }
  if (opt.public_key != nullptr) {
    if (!result->signature) return "result.json is not signed, but --public-key requires a signature";
    if (result->signature->public_key_spki_sha256 != opt.public_key->spkiSha256())
      return "result.json is signed by key " + result->signature->public_key_spki_sha256 +
             ", not by the given public key " + opt.public_key->spkiSha256();
    auto message = signedMessage(c);
    if (!message) return "result.json: commitments: " + message.error().message();
    if (!opt.public_key->verify(*message, result->signature->sig))
      return "result.json: the signature does not verify over the commitments with the given public key";
    rep.signature = SignatureStatus::kValid;
  }

  // 4. A head retained from elsewhere (printed at the end of the run, or published).
  if (opt.trusted_head && *opt.trusted_head != chain->head)
    return "trace head " + chain->head + " differs from the trusted head " + *opt.trusted_head;
  if (opt.check_outputs) return checkOutputs(workspace, *outputs, rep);
  return "";
}

}  // namespace

Result<VerifyReport> verifyRecord(const std::string& workspace, const VerifyOptions& options) {
  struct stat st {};
  if (::stat(workspace.c_str(), &st) != 0) return sysError("workspace " + workspace);
  if (!S_ISDIR(st.st_mode)) return Error(Errc::kInvalidArgument, "workspace " + workspace + " is not a directory");
  if (options.trusted_head && !isSha256Hex(*options.trusted_head))
    return Error(Errc::kInvalidArgument, "trusted head is not 64 lowercase hex digits");
  VerifyReport rep;
  rep.failure = check(workspace, options, rep);
  rep.ok = rep.failure.empty();
  return rep;
}

}  // namespace corral::audit
