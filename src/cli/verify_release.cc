// SPDX-License-Identifier: Apache-2.0
// `corral verify-release`: flags in, signature and checksums checked, one line out.
#include "cli/verify_release.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include "audit/sha256.h"
#include "base/open_beneath.h"
#include "base/read_fd.h"
#include "base/unique_fd.h"
#include "cli/option_echo.h"
#include "policy/units.h"

namespace corral::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 125;
constexpr size_t kMaxSumsBytes = size_t{1} << 20;  // a release lists a handful of files
constexpr size_t kMaxPemBytes = size_t{16} * 1024;
constexpr char kSums[] = "SHA256SUMS";
constexpr char kSig[] = "SHA256SUMS.sig";

constexpr char kUsage[] =
    "usage: corral verify-release DIR --public-key PEM\n"
    "  Checks a release directory: DIR/SHA256SUMS.sig must be an Ed25519 signature of\n"
    "  DIR/SHA256SUMS by the key in PEM (SPKI, as corral keygen writes it; the project's is\n"
    "  keys/release-ed25519-public.pem), and every file SHA256SUMS lists must be in DIR with\n"
    "  that SHA-256. Exit 0 verified, 1 failed, 125 usage. docs/install.md gives the same\n"
    "  check with openssl and sha256sum alone.\n";

bool isHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool plainName(std::string_view name) {
  if (name.empty() || name == "." || name == ".." || name.size() > 255) return false;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

// A small file, whole: name beneath dir (no symlink, no way out) when beneath, else the
// caller's path as given. `what` names it in errors.
Result<std::string> readSmall(int dir, const std::string& name, size_t limit, bool beneath, const std::string& what) {
  int raw = beneath ? openBeneath(dir, name.c_str(), O_RDONLY | O_NONBLOCK)
                    : ::openat(dir, name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (raw < 0) return sysError(what);
  UniqueFd fd(raw);
  ASSIGN_OR_RETURN(std::string text, readUpTo(fd.get(), limit, what));
  if (text.size() > limit) return Error(Errc::kInvalidArgument, what + " is too large");
  return text;
}

std::string digestProblem(const audit::FileDigest& d) {
  using S = audit::FileDigest::Status;
  switch (d.status) {
    case S::kOk: return "";
    case S::kMissing: return "is missing";
    case S::kOutside: return "is outside the release directory";
    case S::kNotRegular: return "is not a regular file (a symlink, directory or device is refused)";
    case S::kSizeDiffers: return "changed while being read";
    case S::kError: return "cannot be read: " + sysError("read", d.err).message();
  }
  return "cannot be read";
}

}  // namespace

Result<std::vector<ChecksumLine>> parseSha256Sums(std::string_view text) {
  std::vector<ChecksumLine> out;
  std::set<std::string, std::less<>> seen;
  if (text.empty()) return Error(Errc::kInvalidArgument, "SHA256SUMS is malformed: it is empty");
  if (text.back() != '\n') return Error(Errc::kInvalidArgument, "SHA256SUMS is malformed: the last line has no newline");
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = text.find('\n', pos);
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::string where = "SHA256SUMS is malformed: line " + std::to_string(line_no);
    // "<hex><space><space or *><name>": sha256sum's text and binary modes.
    if (line.size() < 67 || !isHex64(line.substr(0, 64)) || line[64] != ' ' || (line[65] != ' ' && line[65] != '*'))
      return Error(Errc::kInvalidArgument, where + " is not \"<64 lowercase hex>  <file name>\"");
    const std::string_view name = line.substr(66);
    if (!plainName(name))
      return Error(Errc::kInvalidArgument, where + " names " + policy::printable(name) + ", not a plain file name");
    if (name == kSums || name == kSig)
      return Error(Errc::kInvalidArgument, where + " lists " + std::string(name) + " itself");
    if (!seen.emplace(name).second)
      return Error(Errc::kInvalidArgument, where + " lists " + policy::printable(name) + " a second time");
    out.push_back({std::string(line.substr(0, 64)), std::string(name)});
  }
  return out;
}

Result<ReleaseVerified> verifyReleaseDir(const std::string& dir, const audit::PublicKey& key) {
  int raw = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (raw < 0) return sysError("release directory " + dir);
  UniqueFd d(raw);
  ASSIGN_OR_RETURN(std::string sums, readSmall(d.get(), kSums, kMaxSumsBytes, true, kSums));
  ASSIGN_OR_RETURN(std::string sig, readSmall(d.get(), kSig, audit::kEd25519SignatureBytes, true, kSig));
  // The signature first: nothing in an unsigned SHA256SUMS is worth parsing.
  if (sig.size() != audit::kEd25519SignatureBytes)
    return Error(Errc::kInvalidArgument, std::string(kSig) + " is " + std::to_string(sig.size()) +
                                             " bytes, not a 64-byte Ed25519 signature");
  if (!key.verify(sums, sig))
    return Error(Errc::kRefused, std::string(kSig) + " does not verify: SHA256SUMS was changed, or was not signed by key " +
                                     key.spkiSha256());
  ASSIGN_OR_RETURN(std::vector<ChecksumLine> lines, parseSha256Sums(sums));
  for (const ChecksumLine& l : lines) {
    const audit::FileDigest got = audit::sha256OfFileBeneath(d.get(), l.name);
    if (got.status != audit::FileDigest::Status::kOk)
      return Error(Errc::kRefused, l.name + " " + digestProblem(got));
    if (got.sha256 != l.sha256)
      return Error(Errc::kRefused, l.name + " does not match SHA256SUMS (sha256 " + got.sha256 + ", listed " + l.sha256 + ")");
  }
  return ReleaseVerified{lines.size(), key.spkiSha256()};
}

int verifyReleaseMain(const std::vector<std::string>& args) {
  std::string dir, key_file;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    std::string why;
    if (a == "--public-key" && i + 1 < args.size()) {
      key_file = args[++i];
    } else if (a.rfind("--public-key=", 0) == 0) {
      key_file = a.substr(13);
    } else if (a == "--public-key") {
      why = "--public-key needs a value";
    } else if (!a.empty() && a[0] == '-') {
      why = "unknown option " + optionName(a);
    } else if (dir.empty()) {
      dir = a;
    } else {
      why = "one DIR only (got a second: " + policy::printable(a) + ")";
    }
    if (!why.empty()) {
      std::fprintf(stderr, "corral: verify-release: %s (try corral verify-release --help)\n", why.c_str());
      return kExitUsage;
    }
  }
  if (dir.empty() || key_file.empty()) {
    std::fprintf(stderr, "corral: verify-release: %s (try corral verify-release --help)\n",
                 dir.empty() ? "missing DIR" : "missing --public-key PEM");
    return kExitUsage;
  }
  auto pem = readSmall(AT_FDCWD, key_file, kMaxPemBytes, false, "--public-key " + key_file);
  if (!pem) {
    std::fprintf(stderr, "corral: verify-release: %s\n", oneLine(pem.error().message()).c_str());
    return kExitUsage;
  }
  auto key = audit::PublicKey::fromPem(*pem);
  if (!key) {
    std::fprintf(stderr, "corral: verify-release: %s\n", oneLine("--public-key " + key_file + ": " + key.error().message()).c_str());
    return kExitUsage;
  }
  auto verified = verifyReleaseDir(dir, *key);
  if (!verified) {
    std::fprintf(stderr, "corral: verify-release: FAILED: %s\n", oneLine(verified.error().message()).c_str());
    return kExitFailed;
  }
  std::printf("corral: verify-release: ok: %zu files match SHA256SUMS, signed by key %s\n", verified->files,
              verified->key_spki_sha256.c_str());
  return kExitOk;
}

}  // namespace corral::cli
