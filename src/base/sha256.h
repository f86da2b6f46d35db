// SPDX-License-Identifier: Apache-2.0
// SHA-256 and lowercase hex: the one digest and encoding of the audit record, the proxy's
// hashed paths and every content hash.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corral {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(std::string_view bytes);
// Lowercase hex of SHA-256(bytes): what the trace records in place of contents.
std::string sha256Hex(std::string_view bytes);
// The hex SHA-256 of what is left to read from fd, read in 64 KiB pieces (never the whole file
// in memory); "" on a read error. At most max_bytes are read; *read_bytes gets the count.
std::string sha256HexOfFd(int fd, uint64_t max_bytes = UINT64_MAX, uint64_t* read_bytes = nullptr);

// The SHA-256 of the regular file at path beneath dir (base/open_beneath.h: no symlink, no
// way out of dir), looked at with O_PATH before it is opened, so a device node or FIFO there
// is never opened. `status` says why there is no digest.
struct FileDigest {
  enum class Status { kOk, kMissing, kOutside, kNotRegular, kSizeDiffers, kError };
  Status status = Status::kError;
  std::string sha256;  // kOk only
  uint64_t size = 0;   // kOk, kSizeDiffers: the file's size (as read, when it grew meanwhile)
  int err = 0;         // kError: the errno
};
// With expect_size, a file of any other size is kSizeDiffers without being read (a verifier
// handed a hostile workspace does not hash a 4 TiB sparse file), and no more than one byte
// past expect_size is read from one that grows meanwhile.
FileDigest sha256OfFileBeneath(int dir, const std::string& path, std::optional<uint64_t> expect_size = std::nullopt);
std::string toHex(std::string_view bytes);
// Incremental SHA-256 for streams (a command's output) that are hashed whole but kept only in part.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void update(std::string_view bytes);
  std::string hexDigest();  // finishes the stream; call once
  std::string peekHex() const;  // the digest of what was fed so far; the stream goes on
 private:
  void* ctx_;  // EVP_MD_CTX
};

// The chain's genesis: the "prev" of seq 0.
inline constexpr std::string_view kZeroHash =
    "0000000000000000000000000000000000000000000000000000000000000000";
// Exactly 64 lowercase hex digits: the only spelling of a hash the record accepts.
bool isSha256Hex(std::string_view s);

}  // namespace corral

// The names as they were when this lived in src/audit/: code written against audit::sha256Hex
// (src/net, and work in flight on other branches) keeps building unchanged. New code uses the
// corral:: names.
namespace corral::audit {
using corral::FileDigest;
using corral::isSha256Hex;
using corral::kZeroHash;
using corral::sha256;
using corral::Sha256Digest;
using corral::sha256Hex;
using corral::sha256HexOfFd;
using corral::sha256OfFileBeneath;
using corral::Sha256Stream;
using corral::toHex;
}  // namespace corral::audit
