// SPDX-License-Identifier: Apache-2.0
// Sealing, opening and placing credential values (libsodium secretbox, crypto_kdf, generichash).
#include "daemon/credential_vault.h"

#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "base/read_fd.h"

namespace corral::daemon {
namespace {

constexpr char kKeyFile[] = "credential.key";
constexpr char kKdfContext[crypto_kdf_CONTEXTBYTES + 1] = "crlcreds";
constexpr uint64_t kBoxSubkey = 1, kMacSubkey = 2;
constexpr size_t kMaxSealedBytes = 16384;

Result<void> writeAll(int fd, std::string_view bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sysError("write");
    done += static_cast<size_t>(n);
  }
  return {};
}

// "OWNER:NAME\n": what the sealed plaintext starts with.
std::string binding(int64_t owner, std::string_view name) { return std::to_string(owner) + ":" + std::string(name) + "\n"; }

}  // namespace

Result<void> writeFileAtomic(int dir, const std::string& name, std::string_view bytes) {
  const std::string tmp = "." + name + ".tmp";
  ::unlinkat(dir, tmp.c_str(), 0);  // one a crash left behind
  UniqueFd fd(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return sysError("open " + tmp);
  auto fail = [&](Error e) -> Result<void> {
    ::unlinkat(dir, tmp.c_str(), 0);
    return e;
  };
  if (auto w = writeAll(fd.get(), bytes); !w) return fail(w.error().wrap(tmp));
  if (::fsync(fd.get()) != 0) return fail(sysError("fsync " + tmp));
  if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) return fail(sysError("rename " + tmp));
  if (::fsync(dir) != 0) return sysError("fsync the directory of " + name);
  return {};
}

Result<CredentialVault> CredentialVault::open(const std::string& state_dir) {
  if (sodium_init() < 0) return Error(Errc::kUnsupported, "libsodium did not start");
  UniqueFd state(::open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!state.valid()) return sysError("open " + state_dir);
  unsigned char master[crypto_kdf_KEYBYTES];
  UniqueFd key(::openat(state.get(), kKeyFile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!key.valid() && errno == ENOENT) {
    crypto_kdf_keygen(master);
    auto w = writeFileAtomic(state.get(), kKeyFile, std::string_view(reinterpret_cast<const char*>(master), sizeof master));
    sodium_memzero(master, sizeof master);
    if (!w) return w.error().wrap("credential key");
    key.reset(::openat(state.get(), kKeyFile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  }
  if (!key.valid()) return sysError(state_dir + "/" + kKeyFile);
  struct stat st;
  if (::fstat(key.get(), &st) != 0) return sysError("stat " + std::string(kKeyFile));
  if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0 || st.st_uid != ::geteuid())
    return Error(Errc::kRefused, state_dir + "/" + kKeyFile + " must be a regular file of this uid, mode 0600");
  if (st.st_size != static_cast<off_t>(sizeof master))
    return Error(Errc::kRefused, state_dir + "/" + kKeyFile + " is not a key of " + std::to_string(sizeof master) + " bytes");
  ssize_t got = ::read(key.get(), master, sizeof master);
  if (got != static_cast<ssize_t>(sizeof master)) return sysError("read " + std::string(kKeyFile));
  CredentialVault v;
  crypto_kdf_derive_from_key(v.box_key_, sizeof v.box_key_, kBoxSubkey, kKdfContext, master);
  crypto_kdf_derive_from_key(v.mac_key_, sizeof v.mac_key_, kMacSubkey, kKdfContext, master);
  sodium_memzero(master, sizeof master);
  if (::mkdirat(state.get(), "credentials", 0700) != 0 && errno != EEXIST) return sysError("mkdir credentials");
  v.dir_.reset(::openat(state.get(), "credentials", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!v.dir_.valid()) return sysError("open credentials");
  return v;
}

CredentialVault::~CredentialVault() {
  sodium_memzero(box_key_, sizeof box_key_);
  sodium_memzero(mac_key_, sizeof mac_key_);
}

std::string CredentialVault::fileName(int64_t owner, std::string_view name) const {
  return std::to_string(owner) + "." + std::string(name) + ".sealed";
}

Result<void> CredentialVault::store(int64_t owner, std::string_view name, std::string_view value) {
  const std::string plain = binding(owner, name) + std::string(value);
  std::string sealed(crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + plain.size(), '\0');
  auto* out = reinterpret_cast<unsigned char*>(sealed.data());
  randombytes_buf(out, crypto_secretbox_NONCEBYTES);
  crypto_secretbox_easy(out + crypto_secretbox_NONCEBYTES, reinterpret_cast<const unsigned char*>(plain.data()), plain.size(),
                        out, box_key_);
  sodium_memzero(const_cast<char*>(plain.data()), plain.size());
  return writeFileAtomic(dir_.get(), fileName(owner, name), sealed);
}

Result<Secret> CredentialVault::load(int64_t owner, std::string_view name) const {
  const std::string file = fileName(owner, name);
  UniqueFd fd(::openat(dir_.get(), file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return sysError("credential '" + std::string(name) + "': its sealed value");
  ASSIGN_OR_RETURN(std::string sealed, readUpTo(fd.get(), kMaxSealedBytes, file));
  if (sealed.size() < crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES)
    return Error(Errc::kInvalidArgument, "credential '" + std::string(name) + "': its sealed value is cut short");
  const auto* in = reinterpret_cast<const unsigned char*>(sealed.data());
  std::string plain(sealed.size() - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES, '\0');
  if (crypto_secretbox_open_easy(reinterpret_cast<unsigned char*>(plain.data()), in + crypto_secretbox_NONCEBYTES,
                                 sealed.size() - crypto_secretbox_NONCEBYTES, in, box_key_) != 0)
    return Error(Errc::kRefused, "credential '" + std::string(name) + "': its sealed value does not open with this key");
  Secret whole(std::move(plain));
  const std::string bound = binding(owner, name);
  const std::string_view v = whole.revealForInjection();
  if (v.substr(0, bound.size()) != bound)
    return Error(Errc::kRefused, "credential '" + std::string(name) + "': its sealed value belongs to another record");
  return Secret(std::string(v.substr(bound.size())));
}

Result<void> CredentialVault::remove(int64_t owner, std::string_view name) {
  if (::unlinkat(dir_.get(), fileName(owner, name).c_str(), 0) != 0 && errno != ENOENT) return sysError("remove a sealed value");
  if (::fsync(dir_.get()) != 0) return sysError("fsync credentials");
  return {};
}

std::string CredentialVault::fingerprint(std::string_view value) const {
  unsigned char mac[16];
  crypto_generichash(mac, sizeof mac, reinterpret_cast<const unsigned char*>(value.data()), value.size(), mac_key_,
                     sizeof mac_key_);
  char hex[sizeof mac * 2 + 1];
  sodium_bin2hex(hex, sizeof hex, mac, sizeof mac);
  return std::string("kfp1:") + hex;
}

Result<std::vector<std::pair<int64_t, std::string>>> CredentialVault::sealedFiles() const {
  UniqueFd again(::openat(dir_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!again.valid()) return sysError("open credentials");
  DIR* d = ::fdopendir(again.release());
  if (!d) return sysError("read credentials");
  std::vector<std::pair<int64_t, std::string>> out;
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    const size_t dot = n.find('.');
    constexpr std::string_view kSuffix = ".sealed";
    if (dot == 0 || dot == std::string_view::npos || n.size() <= kSuffix.size() || n.substr(n.size() - kSuffix.size()) != kSuffix) continue;
    char* end = nullptr;
    const std::string owner(n.substr(0, dot));
    const long long uid = std::strtoll(owner.c_str(), &end, 10);
    if (*end != '\0') continue;
    out.emplace_back(uid, std::string(n.substr(dot + 1, n.size() - dot - 1 - kSuffix.size())));
  }
  ::closedir(d);
  return out;
}

}  // namespace corral::daemon
