// SPDX-License-Identifier: Apache-2.0
// SHA-256 through OpenSSL's one-shot API, and lowercase hex.
#include "base/sha256.h"

#include <openssl/evp.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>

#include "base/open_beneath.h"
#include "base/unique_fd.h"

namespace corral {

namespace {

// OpenSSL 3's one-shot SHA256() looks the algorithm up in its provider store (a lock and a
// hash-table probe) on every call; verify hashes every trace line, so the algorithm is
// fetched once and each thread keeps one context.
const EVP_MD* sha256Md() {
  static const EVP_MD* md = [] {
    const EVP_MD* m = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (m == nullptr) std::abort();  // a static OpenSSL without SHA-256: nothing can be verified
    return m;
  }();
  return md;
}

struct CtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

}  // namespace

Sha256Digest sha256(std::string_view bytes) {
  thread_local std::unique_ptr<EVP_MD_CTX, CtxFree> ctx(EVP_MD_CTX_new());
  Sha256Digest d{};
  unsigned int n = 0;
  if (!ctx || EVP_DigestInit_ex2(ctx.get(), sha256Md(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1 || EVP_DigestFinal_ex(ctx.get(), d.data(), &n) != 1 ||
      n != d.size())
    std::abort();  // only allocation failure can get here
  return d;
}

std::string toHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '\0');
  char* o = out.data();
  for (unsigned char c : bytes) {
    *o++ = kDigits[c >> 4];
    *o++ = kDigits[c & 0xf];
  }
  return out;
}

constexpr size_t kFdChunk = size_t{64} * 1024;

std::string sha256HexOfFd(int fd, uint64_t max_bytes, uint64_t* read_bytes) {
  Sha256Stream hash;
  std::unique_ptr<char[]> buf(new char[kFdChunk]);
  uint64_t total = 0;
  while (total < max_bytes) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kFdChunk, max_bytes - total));
    const ssize_t n = ::read(fd, buf.get(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return "";
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    hash.update(std::string_view(buf.get(), static_cast<size_t>(n)));
  }
  if (read_bytes) *read_bytes = total;
  return hash.hexDigest();
}

FileDigest sha256OfFileBeneath(int dir, const std::string& path, std::optional<uint64_t> expect_size) {
  FileDigest d;
  UniqueFd at(openBeneath(dir, path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!at.valid()) {
    d.err = errno;
    d.status = d.err == ENOENT                     ? FileDigest::Status::kMissing
               : d.err == EXDEV || d.err == ELOOP ? FileDigest::Status::kOutside
                                                  : FileDigest::Status::kError;
    return d;
  }
  struct stat st {};
  if (::fstat(at.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    d.status = FileDigest::Status::kNotRegular;
    return d;
  }
  d.size = static_cast<uint64_t>(st.st_size);
  if (expect_size && d.size != *expect_size) {
    d.status = FileDigest::Status::kSizeDiffers;
    return d;
  }
  UniqueFd f(::open(("/proc/self/fd/" + std::to_string(at.get())).c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!f.valid()) {
    d.err = errno;
    return d;
  }
  uint64_t got = 0;
  d.sha256 = sha256HexOfFd(f.get(), expect_size ? *expect_size + 1 : UINT64_MAX, &got);
  if (d.sha256.empty()) {
    d.err = EIO;
    return d;
  }
  d.size = got;
  d.status = expect_size && got != *expect_size ? FileDigest::Status::kSizeDiffers : FileDigest::Status::kOk;
  return d;
}

std::string sha256Hex(std::string_view bytes) {
  Sha256Digest d = sha256(bytes);
  return toHex(std::string_view(reinterpret_cast<const char*>(d.data()), d.size()));
}

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  // Allocation failure of a few hundred bytes: nothing sensible to continue with.
  if (ctx_ == nullptr || EVP_DigestInit_ex2(static_cast<EVP_MD_CTX*>(ctx_), sha256Md(), nullptr) != 1) std::abort();
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256Stream::update(std::string_view bytes) {
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), bytes.data(), bytes.size());
}

std::string Sha256Stream::hexDigest() {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), d, &n);
  return toHex(std::string_view(reinterpret_cast<const char*>(d), n));
}

std::string Sha256Stream::peekHex() const {
  EVP_MD_CTX* copy = EVP_MD_CTX_new();
  if (copy == nullptr || EVP_MD_CTX_copy_ex(copy, static_cast<EVP_MD_CTX*>(ctx_)) != 1) std::abort();
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(copy, d, &n);
  EVP_MD_CTX_free(copy);
  return toHex(std::string_view(reinterpret_cast<const char*>(d), n));
}

bool isSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  // Branch-free per byte: verify calls this for every trace line.
  unsigned bad = 0;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    bad |= static_cast<unsigned>(static_cast<unsigned>(c - '0') > 9u && static_cast<unsigned>(c - 'a') > 5u);
  }
  return bad == 0;
}

}  // namespace corral
