// SPDX-License-Identifier: Apache-2.0
// `corral keygen`: flags in, audit::writeKeyPair, paths and fingerprint out (never the key).
#include "cli/keygen.h"

#include <cstdio>
#include <string>
#include <string_view>

#include "audit/key_files.h"
#include "audit/signing.h"
#include "cli/option_echo.h"

namespace corral::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRefused = 125;

constexpr char kUsage[] =
    "usage: corral keygen --out DIR\n"
    "  Writes DIR/audit-ed25519-private.pem (PKCS#8, mode 0600) and DIR/audit-ed25519-public.pem\n"
    "  (SPKI) for signing result.json; refuses to overwrite either. Sign runs with\n"
    "  --signing-key DIR/audit-ed25519-private.pem or CORRAL_AUDIT_PRIVATE_KEY=\"$(cat ...)\";\n"
    "  verify with corral verify WORKSPACE --public-key DIR/audit-ed25519-public.pem.\n";

}  // namespace

int keygenMain(const std::vector<std::string>& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (a == "--out" && i + 1 < args.size()) {
      out = args[++i];
    } else if (a.substr(0, 6) == "--out=") {
      out = std::string(a.substr(6));
    } else {
      const std::string why = a == "--out" ? "--out needs a value" : "unknown argument " + optionName(a);
      std::fprintf(stderr, "corral: keygen: %s (try corral keygen --help)\n", why.c_str());
      return kExitRefused;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "corral: keygen: missing --out DIR\n%s", kUsage);
    return kExitRefused;
  }
  auto written = audit::writeKeyPair(out);
  if (!written) {
    std::fprintf(stderr, "corral: keygen: %s\n", oneLine(written.error().message()).c_str());
    return kExitRefused;
  }
  std::printf("corral: keygen: wrote %s (mode 0600) and %s\npublic key spki sha256: %s\n",
              oneLine(written->private_path).c_str(), oneLine(written->public_path).c_str(), written->spki_sha256.c_str());
  return kExitOk;
}

}  // namespace corral::cli
