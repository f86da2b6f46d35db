// SPDX-License-Identifier: Apache-2.0
// TraceWriter: verify-then-append, one write(2) per entry.
#include "audit/trace.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "audit/record_dir.h"

namespace corral::audit {
namespace {

int64_t realtimeMs() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

}  // namespace

Result<TraceWriter> TraceWriter::open(const UniqueFd& record_dir, TraceOptions options) {
  const std::string name(kTraceFileName);
  // O_APPEND: every write lands at the end even if the offset is stale. O_NOFOLLOW: the
  // record directory is in a workspace, and a symlink there must not redirect the trace.
  int raw = ::openat(record_dir.get(), name.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (raw < 0) {
    if (errno == ELOOP) return Error(Errc::kRefused, "open " + name + ": is a symlink");
    return sysError("open " + name);
  }
  UniqueFd fd(raw);
  // Invariant: one writer per trace. Two writers would both chain onto the same head.
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return Error(Errc::kRefused, name + " is held by another writer");
    return sysError("flock " + name);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sysError("stat " + name);
  if (!S_ISREG(st.st_mode)) return Error(Errc::kRefused, name + " is not a regular file");
  // A hard link laid out in the workspace would make every append land in another file too.
  if (st.st_nlink != 1) return Error(Errc::kRefused, name + " has other hard links: refusing to write through them");
  // Verify before the first append: appending to a broken chain would bless the damage.
  auto verified = verifyTraceFd(fd.get());
  if (!verified) return Error(verified.error().code(), "refusing to append to a broken trace: " + verified.error().message());
  if (st.st_size == 0 && ::fsync(record_dir.get()) != 0) return sysError("fsync .corral");  // the new name is durable
  return TraceWriter(std::move(fd), std::move(*verified), static_cast<uint64_t>(st.st_size), std::move(options));
}

Result<TraceWriter> TraceWriter::openInWorkspace(const std::string& workspace, TraceOptions options) {
  ASSIGN_OR_RETURN(UniqueFd dir, openRecordDir(workspace, /*create=*/true));
  return open(dir, std::move(options));
}

Result<void> TraceWriter::append(std::string_view type, const nlohmann::json& data) {
  if (unusable_) return Error(Errc::kIo, "trace writer is unusable after an earlier failed write");
  const int64_t ts = options_.clock_ms ? options_.clock_ms() : realtimeMs();
  ASSIGN_OR_RETURN(std::string line, encodeTraceLine(state_, ts, type, data));
  const std::string line_hash = sha256Hex(line);
  line.push_back('\n');
  // One write(2) of the whole line; writeAll only loops on a short write (a full disk).
  if (auto w = writeAll(fd_.get(), line, "trace.jsonl"); !w) {
    // Roll back a partial line so the chain on disk stays intact; a torn last line would
    // make every later open refuse the trace.
    if (::ftruncate(fd_.get(), static_cast<off_t>(size_)) != 0) unusable_ = true;
    return w.error();
  }
  if (options_.sync == TraceSync::kEachEntry && ::fdatasync(fd_.get()) != 0) {
    // After a failed fdatasync the kernel may have dropped the dirty pages: what is on disk
    // is unknown, so nothing more may be chained onto it.
    unusable_ = true;
    return sysError("fdatasync trace.jsonl");
  }
  size_ += line.size();
  state_.head = line_hash;
  state_.count += 1;
  return {};
}

Result<void> TraceWriter::sync() {
  if (unusable_) return Error(Errc::kIo, "trace writer is unusable after an earlier failed write");
  if (::fdatasync(fd_.get()) != 0) {
    unusable_ = true;
    return sysError("fdatasync trace.jsonl");
  }
  return {};
}

}  // namespace corral::audit
