// SPDX-License-Identifier: Apache-2.0
// Key pair generation into files created exclusively.
#include "audit/key_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "audit/record_dir.h"
#include "audit/signing.h"
#include "base/unique_fd.h"

namespace corral::audit {
namespace {

Result<UniqueFd> createExclusive(const UniqueFd& dir, std::string_view name, mode_t mode) {
  const std::string n(name);
  int fd = ::openat(dir.get(), n.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == EEXIST) return Error(Errc::kRefused, n + " already exists; refusing to overwrite a key");
    return sysError("create " + n);
  }
  UniqueFd out(fd);
  // The umask may only have narrowed the mode; set it exactly so the private key is 0600.
  if (::fchmod(out.get(), mode) != 0) return sysError("chmod " + n);
  return out;
}

}  // namespace

Result<KeyPairFiles> writeKeyPair(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return sysError("mkdir " + dir);
  int raw = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (raw < 0) return sysError("open " + dir);
  UniqueFd dir_fd(raw);
  ASSIGN_OR_RETURN(SigningKey key, SigningKey::generate());
  ASSIGN_OR_RETURN(Secret private_pem, key.privateKeyPem());
  ASSIGN_OR_RETURN(std::string public_pem, key.publicKeyPem());

  // Both names are claimed before either is written, so a refusal leaves no half pair.
  ASSIGN_OR_RETURN(UniqueFd priv, createExclusive(dir_fd, kPrivateKeyFileName, 0600));
  const std::string priv_name(kPrivateKeyFileName), pub_name(kPublicKeyFileName);
  auto pub = createExclusive(dir_fd, kPublicKeyFileName, 0644);
  if (!pub) {
    ::unlinkat(dir_fd.get(), priv_name.c_str(), 0);
    return pub.error();
  }
  auto written = [&]() -> Result<void> {
    RETURN_IF_ERROR(writeAll(priv.get(), private_pem.revealForInjection(), priv_name));  // to its 0600 file only
    if (::fsync(priv.get()) != 0) return sysError("fsync " + priv_name);
    RETURN_IF_ERROR(writeAll(pub->get(), public_pem, pub_name));
    if (::fsync(pub->get()) != 0) return sysError("fsync " + pub_name);
    if (::fsync(dir_fd.get()) != 0) return sysError("fsync " + dir);
    return {};
  }();
  if (!written) {
    ::unlinkat(dir_fd.get(), priv_name.c_str(), 0);
    ::unlinkat(dir_fd.get(), pub_name.c_str(), 0);
    return written.error();
  }
  std::string base = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  return KeyPairFiles{base + priv_name, base + pub_name, key.publicKeySpkiSha256()};
}

}  // namespace corral::audit
