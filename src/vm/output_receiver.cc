// SPDX-License-Identifier: Apache-2.0
// Rebuilds the guest's declared outputs in a staging tree for copy-back's checks.
#include "vm/output_receiver.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "policy/path_policy.h"

namespace corral::vm {
namespace {

Error bad(const std::string& what) { return Error(Errc::kIo, "control channel: " + what); }

// Opens (creating) each directory of rel's parent beneath root, never following a symlink.
Result<UniqueFd> parentDir(int root, const std::string& rel, std::string* leaf) {
  UniqueFd dir(::fcntl(root, F_DUPFD_CLOEXEC, 3));
  if (!dir.valid()) return sysError("dup");
  size_t start = 0;
  for (size_t slash; (slash = rel.find('/', start)) != std::string::npos; start = slash + 1) {
    const std::string part = rel.substr(start, slash - start);
    if (::mkdirat(dir.get(), part.c_str(), 0700) != 0 && errno != EEXIST) return sysError("stage output " + rel);
    UniqueFd next(::openat(dir.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) return sysError("stage output " + rel);
    dir = std::move(next);
  }
  *leaf = rel.substr(start);
  return dir;
}

}  // namespace

Result<OutputReceiver> OutputReceiver::create(const std::string& staging, std::vector<std::string> declared, uint64_t max_bytes) {
  OutputReceiver r;
  r.top_.reset(::open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!r.top_.valid()) return sysError("open staging " + staging);
  for (const char* d : {"ws", "links"})
    if (::mkdirat(r.top_.get(), d, 0700) != 0) return sysError("staging " + staging + "/" + d);
  r.ws_.reset(::openat(r.top_.get(), "ws", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  r.links_.reset(::openat(r.top_.get(), "links", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!r.ws_.valid() || !r.links_.valid()) return sysError("staging " + staging);
  r.declared_ = std::move(declared);
  r.max_bytes_ = max_bytes;
  return r;
}

Result<void> OutputReceiver::onHeader(std::string_view json) {
  if (open_) return bad("output header before the previous output's data was complete");
  ASSIGN_OR_RETURN(protocol::OutputHeader h, protocol::decodeOutputHeader(json));
  // Only a declared output, in the canonical form policy gives it, and each once.
  auto canonical = policy::path::outputPath(h.path);
  if (!canonical || *canonical != h.path || std::find(declared_.begin(), declared_.end(), h.path) == declared_.end())
    return bad("the guest sent an output that was not declared");
  if (!seen_.insert(h.path).second) return bad("the guest sent output " + h.path + " twice");
  if (h.size > max_bytes_ - total_) return bad("outputs larger than the workspace (--workspace-size)");
  if (h.kind == protocol::OutputKind::kSymlink && (h.size == 0 || h.size > 4096)) return bad("bad symlink target length");
  if ((h.kind == protocol::OutputKind::kDir || h.kind == protocol::OutputKind::kOther) && h.size != 0)
    return bad("data for an output that has none");
  current_ = h;
  received_ = 0;
  pending_.clear();
  open_ = true;
  if (h.kind == protocol::OutputKind::kFile) {
    std::string leaf;
    ASSIGN_OR_RETURN(UniqueFd dir, parentDir(ws_.get(), h.path, &leaf));
    file_.reset(::openat(dir.get(), leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!file_.valid()) return sysError("stage output " + h.path);
  }
  if (h.size == 0) return complete();
  return {};
}

Result<void> OutputReceiver::onData(std::string_view bytes) {
  if (!open_ || bytes.size() > current_.size - received_) return bad("output data beyond what its header announced");
  received_ += bytes.size();
  total_ += bytes.size();
  if (current_.kind == protocol::OutputKind::kSymlink) {
    pending_.append(bytes);
  } else {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::write(file_.get(), bytes.data() + off, bytes.size() - off);
      if (n <= 0) return sysError("stage output " + current_.path);
      off += static_cast<size_t>(n);
    }
  }
  if (received_ == current_.size) return complete();
  return {};
}

// The entry is whole: create what the guest described, as it described it. copy-back then
// refuses a symlink, a directory, a FIFO or a file with other links, just as in a namespace run.
Result<void> OutputReceiver::complete() {
  open_ = false;
  const std::string& rel = current_.path;
  std::string leaf;
  ASSIGN_OR_RETURN(UniqueFd dir, parentDir(ws_.get(), rel, &leaf));
  switch (current_.kind) {
    case protocol::OutputKind::kFile:
      file_.reset();
      if (current_.links > 1) {
        const std::string name = std::to_string(link_seq_++);
        if (::linkat(dir.get(), leaf.c_str(), links_.get(), name.c_str(), 0) != 0) return sysError("stage output " + rel);
      }
      return {};
    case protocol::OutputKind::kSymlink:
      if (pending_.find('\0') != std::string::npos) return bad("symlink target holds a NUL");
      if (::symlinkat(pending_.c_str(), dir.get(), leaf.c_str()) != 0) return sysError("stage output " + rel);
      return {};
    case protocol::OutputKind::kDir:
      if (::mkdirat(dir.get(), leaf.c_str(), 0700) != 0) return sysError("stage output " + rel);
      return {};
    case protocol::OutputKind::kOther:
      if (::mkfifoat(dir.get(), leaf.c_str(), 0600) != 0) return sysError("stage output " + rel);
      return {};
  }
  return {};
}

Result<void> OutputReceiver::finish() {
  if (open_) return bad("the guest ended with an output half sent");
  return {};
}

}  // namespace corral::vm
