// SPDX-License-Identifier: Apache-2.0
// Credential values at rest: sealed with libsodium's secretbox under a key kept in the state
// directory (credential.key, 0600), one file per value, each written atomically (temporary
// file, fsync, rename, fsync of the directory, born 0600). Nothing here logs.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/secret.h"
#include "base/unique_fd.h"

namespace corral::daemon {

class CredentialVault {
 public:
  // Opens STATE/credential.key, making it (32 random bytes) on first use, and
  // STATE/credentials/ (0700). A key file of the wrong size or mode is refused, never replaced:
  // replacing it would make every sealed value unreadable.
  static Result<CredentialVault> open(const std::string& state_dir);
  CredentialVault(CredentialVault&&) noexcept = default;
  ~CredentialVault();

  // Seals value for (owner, name) and puts it in place of any value before (atomic rename).
  // The plaintext binds owner and name, so a file moved to another name fails to open.
  Result<void> store(int64_t owner, std::string_view name, std::string_view value);
  Result<Secret> load(int64_t owner, std::string_view name) const;
  Result<void> remove(int64_t owner, std::string_view name);
  // What every API answer shows of a value: "kfp1:" and 32 hex digits of BLAKE2b keyed with a
  // key derived from credential.key. Without that key it is no help in guessing the value;
  // two records with the same value show the same fingerprint.
  std::string fingerprint(std::string_view value) const;
  // Names of sealed files present ("OWNER.NAME"), for reconciling with the store.
  Result<std::vector<std::pair<int64_t, std::string>>> sealedFiles() const;

 private:
  CredentialVault() = default;
  std::string fileName(int64_t owner, std::string_view name) const;
  UniqueFd dir_;
  unsigned char box_key_[32] = {};
  unsigned char mac_key_[32] = {};
};

// Writes bytes to dir/name atomically: dir/.name.tmp (O_EXCL, 0600), fsync, rename, fsync dir.
Result<void> writeFileAtomic(int dir, const std::string& name, std::string_view bytes);

}  // namespace corral::daemon
