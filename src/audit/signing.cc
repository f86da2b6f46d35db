// SPDX-License-Identifier: Apache-2.0
// Ed25519 through OpenSSL 3 EVP; every OpenSSL failure becomes an Error here.
#include "audit/signing.h"

#include "base/read_fd.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "audit/record_dir.h"
#include "base/sha256.h"
#include "base/log.h"

namespace corral::audit {
namespace {

constexpr size_t kMaxPemBytes = size_t{16} * 1024;

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

// OpenSSL's error queue is per thread and would otherwise surface in an unrelated later
// call; its strings name functions and reasons, never key bytes, but we do not need them.
Error sslError(std::string what) {
  ERR_clear_error();
  return Error(Errc::kInvalidArgument, std::move(what));
}

// PEM_read_* prompts on the terminal for an encrypted key unless given a callback: refuse
// instead, so a run never blocks on a prompt.
int noPassphrase(char*, int, int, void*) { return -1; }

Result<std::string> spkiFingerprint(EVP_PKEY* key) {
  unsigned char* der = nullptr;
  int n = i2d_PUBKEY(key, &der);
  if (n <= 0) return sslError("cannot encode the public key");
  std::string hex = sha256Hex(std::string_view(reinterpret_cast<const char*>(der), static_cast<size_t>(n)));
  OPENSSL_free(der);
  return hex;
}

bool isEd25519(EVP_PKEY* key) { return EVP_PKEY_get_id(key) == EVP_PKEY_ED25519; }

std::string bioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

}  // namespace

void PkeyFree::operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }

Result<SigningKey> SigningKey::fromPem(const Secret& pem) {
  std::string_view text = pem.revealForInjection();  // into OpenSSL only, never printed
  if (text.size() > kMaxPemBytes) return Error(Errc::kInvalidArgument, "signing key PEM is too large");
  BioPtr bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  if (!bio) return sslError("cannot read the signing key");
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, noPassphrase, nullptr));
  if (!key) return sslError("signing key is not an unencrypted PKCS#8 PEM private key");
  if (!isEd25519(key.get())) return sslError("signing key is not an Ed25519 key");
  ASSIGN_OR_RETURN(std::string fp, spkiFingerprint(key.get()));
  return SigningKey(std::move(key), std::move(fp));
}

Result<SigningKey> SigningKey::generate() {
  PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (!key) return sslError("Ed25519 key generation failed");
  ASSIGN_OR_RETURN(std::string fp, spkiFingerprint(key.get()));
  return SigningKey(std::move(key), std::move(fp));
}

Result<std::string> SigningKey::sign(std::string_view message) const {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1)
    return sslError("cannot start an Ed25519 signature");
  std::string sig(kEd25519SignatureBytes, '\0');
  size_t len = sig.size();
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1 ||
      len != kEd25519SignatureBytes)
    return sslError("Ed25519 signing failed");
  return sig;
}

Result<std::string> SigningKey::publicKeyPem() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key_.get()) != 1) return sslError("cannot encode the public key");
  return bioText(bio.get());
}

Result<Secret> SigningKey::privateKeyPem() const {
  BioPtr bio(BIO_new(BIO_s_secmem()));
  if (!bio) bio.reset(BIO_new(BIO_s_mem()));
  // PEM_write_bio_PrivateKey writes PKCS#8 ("BEGIN PRIVATE KEY") for Ed25519.
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key_.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return sslError("cannot encode the private key");
  return Secret(bioText(bio.get()));
}

Result<PublicKey> PublicKey::fromPem(std::string_view pem) {
  if (pem.size() > kMaxPemBytes) return Error(Errc::kInvalidArgument, "public key PEM is too large");
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return sslError("cannot read the public key");
  PkeyPtr key(PEM_read_bio_PUBKEY(bio.get(), nullptr, noPassphrase, nullptr));
  if (!key) return sslError("public key is not an SPKI PEM (\"BEGIN PUBLIC KEY\")");
  if (!isEd25519(key.get())) return sslError("public key is not an Ed25519 key");
  ASSIGN_OR_RETURN(std::string fp, spkiFingerprint(key.get()));
  return PublicKey(std::move(key), std::move(fp));
}

bool PublicKey::verify(std::string_view message, std::string_view signature) const {
  if (signature.size() != kEd25519SignatureBytes) return false;
  MdCtxPtr ctx(EVP_MD_CTX_new());
  bool ok = ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) == 1 &&
            EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                             reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  ERR_clear_error();
  return ok;
}

Result<std::optional<Secret>> loadSigningKeyPem(const std::string& key_file, const std::string& workspace) {
  if (key_file.empty()) {
    const char* env = std::getenv(std::string(kSigningKeyEnv).c_str());
    if (env == nullptr || *env == '\0') return std::optional<Secret>();
    return std::optional<Secret>(Secret(env));
  }
  char key_real[PATH_MAX];
  if (::realpath(key_file.c_str(), key_real) == nullptr) return sysError("--signing-key " + key_file);
  if (!workspace.empty()) {
    char ws_real[PATH_MAX];
    if (::realpath(workspace.c_str(), ws_real) == nullptr) return sysError("workspace " + workspace);
    std::string k(key_real), w(ws_real);
    if (k == w || (k.size() > w.size() && k.compare(0, w.size(), w) == 0 && (w == "/" || k[w.size()] == '/')))
      return Error(Errc::kRefused, "--signing-key " + key_file + " is inside the workspace; keep the key outside it");
  }
  int raw = ::open(key_real, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (raw < 0) return sysError("--signing-key " + key_file);
  UniqueFd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sysError("--signing-key " + key_file);
  if (!S_ISREG(st.st_mode)) return Error(Errc::kInvalidArgument, "--signing-key " + key_file + " is not a regular file");
  if (st.st_size > static_cast<off_t>(kMaxPemBytes)) return Error(Errc::kInvalidArgument, "--signing-key " + key_file + " is too large for a PEM key");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    log::warn("signing_key_readable_by_others", "path=" + key_file + " mode=" + mode);
  }
  ASSIGN_OR_RETURN(std::string pem, readUpTo(fd.get(), kMaxPemBytes, "--signing-key " + key_file));
  if (pem.size() > kMaxPemBytes)
    return Error(Errc::kInvalidArgument, "--signing-key " + key_file + " is too large for a PEM key");
  Secret secret(std::move(pem));
  return std::optional<Secret>(std::move(secret));
}

}  // namespace corral::audit
