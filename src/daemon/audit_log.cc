// SPDX-License-Identifier: Apache-2.0
// The hash-chained daemon log: append, recover the chain's end at start, verify.
#include "daemon/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <tuple>

#include "audit/sha256.h"
#include "base/log.h"

namespace corral::daemon {
namespace {

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string auditLineHash(const Json& line_without_hash) {
  // nlohmann's dump() sorts object keys (std::map) and adds no spaces: canonical for these values.
  return audit::sha256Hex(line_without_hash.dump());
}

Result<AuditLog> AuditLog::open(const std::string& state_dir) {
  const std::string path = state_dir + "/audit.jsonl";
  AuditLog log;
  {
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Only whole lines count: a crash mid-write leaves a tail without its newline.
    const size_t end = text.rfind('\n');
    const size_t whole = end == std::string::npos ? 0 : end + 1;
    if (whole < text.size()) {
      std::ofstream(path + ".torn", std::ios::binary | std::ios::app) << text.substr(whole) << "\n";
      if (::truncate(path.c_str(), static_cast<off_t>(whole)) != 0) return sysError("truncate " + path);
    }
    if (whole > 0) {
      const size_t start = text.rfind('\n', whole - 2);
      auto last = parseJson(std::string_view(text).substr(start == std::string::npos ? 0 : start + 1, whole - 1 - (start == std::string::npos ? 0 : start + 1)));
      if (!last || !last->is_object() || !(*last)["seq"].is_number_integer() || !(*last)["hash"].is_string())
        return Error(Errc::kIo, path + ": its last line is not an audit event");
      log.seq_ = (*last)["seq"].get<int64_t>();
      log.prev_ = (*last)["hash"].get<std::string>();
    }
  }
  log.fd_.reset(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log.fd_.valid()) return sysError("open " + path);
  return log;
}

void AuditLog::append(const std::string& event, const Peer& peer, Json fields) {
  if (observer_) {
    const Json given = fields;
    appendLocked(event, peer, std::move(fields));
    observer_(event, peer, given);
    return;
  }
  appendLocked(event, peer, std::move(fields));
}

std::pair<std::string, std::string> AuditLog::nextLine(const std::string& event, const Peer& peer, Json fields) const {
  fields["seq"] = seq_ + 1;
  fields["ts_ms"] = nowMs();
  fields["event"] = event;
  fields["peer_uid"] = peer.uid;
  fields["peer_pid"] = peer.pid;
  fields["prev"] = prev_;
  std::string hash = auditLineHash(fields);
  fields["hash"] = hash;
  return {std::move(hash), fields.dump()};
}

void AuditLog::appendLocked(const std::string& event, const Peer& peer, Json fields) {
  std::lock_guard lock(mu_);
  auto [hash, text] = nextLine(event, peer, std::move(fields));
  const std::string line = text + "\n";
  const bool wrote = ::write(fd_.get(), line.data(), line.size()) == static_cast<ssize_t>(line.size());
  if (wrote && batch_depth_ > 0) unsynced_ = true;
  if (!wrote || (batch_depth_ == 0 && ::fdatasync(fd_.get()) != 0)) {
    log::warn("audit_write_failed", "event=" + event + " errno=" + std::to_string(errno));
    return;  // the chain goes on from the last line that was written
  }
  ++seq_;
  prev_ = hash;
  if (batch_depth_ == 0) synced_seq_ = seq_;
}

AuditLog::Reservation::Reservation(AuditLog& log) : log_(log), lock_(log.mu_) {}

std::pair<int64_t, std::string> AuditLog::Reservation::line(const std::string& event, const Peer& peer, Json fields) {
  event_ = event;
  peer_ = peer;
  if (log_.observer_) given_ = fields;
  std::tie(hash_, text_) = log_.nextLine(event, peer, std::move(fields));
  seq_ = log_.seq_ + 1;
  return {seq_, text_};
}

void AuditLog::Reservation::write() {
  if (text_.empty() || written_) return;
  const std::string with_newline = text_ + "\n";
  if (::write(log_.fd_.get(), with_newline.data(), with_newline.size()) != static_cast<ssize_t>(with_newline.size())) {
    // The outbox still holds it: the next start appends it (replay), as after a power cut.
    log::warn("audit_write_failed", "event=" + event_ + " errno=" + std::to_string(errno));
    return;
  }
  written_ = true;
  ++log_.seq_;
  log_.prev_ = hash_;
  if (log_.batch_depth_ > 0) {
    log_.unsynced_ = true;
  } else if (log_.seq_ - log_.synced_seq_ >= kMaxUnsynced) {
    // Bounds the outbox: a long run of claims with no other synced line between them.
    if (::fdatasync(log_.fd_.get()) == 0) log_.synced_seq_ = log_.seq_;
  }
}

AuditLog::Reservation::~Reservation() {
  lock_.unlock();
  if (written_ && log_.observer_) log_.observer_(event_, peer_, given_);
}

Result<int> AuditLog::replay(const std::vector<std::pair<int64_t, std::string>>& kept) {
  std::lock_guard lock(mu_);
  int appended = 0;
  for (const auto& [seq, text] : kept) {
    if (seq <= seq_) continue;  // in the file already
    auto j = parseJson(text);
    if (!j || !j->is_object() || !(*j)["hash"].is_string() || !(*j)["prev"].is_string() || !(*j)["event"].is_string() ||
        !(*j)["peer_uid"].is_number_integer() || !(*j)["peer_pid"].is_number_integer())
      return Error(Errc::kIo, "the audit outbox's line " + std::to_string(seq) + " is not an audit event");
    Json body = *j;
    const std::string kept_hash = body["hash"].get<std::string>();
    body.erase("hash");
    std::string hash = kept_hash, line = text;
    if (seq != seq_ + 1 || body["prev"] != prev_ || auditLineHash(body) != kept_hash) {
      // Not the file's next line (lines before it were lost too): the event again, as a new line.
      const Peer peer{static_cast<uid_t>(body["peer_uid"].get<int64_t>()), 0, static_cast<pid_t>(body["peer_pid"].get<int64_t>())};
      const std::string event = body["event"].get<std::string>();
      Json fields = body;
      for (const char* k : {"seq", "ts_ms", "event", "peer_uid", "peer_pid", "prev"}) fields.erase(k);
      fields["replayed_seq"] = seq;
      if (body["ts_ms"].is_number_integer()) fields["replayed_ts_ms"] = body["ts_ms"];
      std::tie(hash, line) = nextLine(event, peer, std::move(fields));
    }
    line += "\n";
    if (::write(fd_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) return sysError("write audit.jsonl");
    ++seq_;
    prev_ = hash;
    ++appended;
  }
  // Also when nothing was appended: a line the file has may still be only in the page cache
  // (a kill -9 before its sync), and the outbox is cleared next.
  if (::fdatasync(fd_.get()) != 0) return sysError("fdatasync audit.jsonl");
  synced_seq_ = seq_;
  return appended;
}

AuditLog::Batch::Batch(AuditLog& log) : log_(log) {
  std::lock_guard lock(log_.mu_);
  ++log_.batch_depth_;
}

AuditLog::Batch::~Batch() {
  std::lock_guard lock(log_.mu_);
  if (--log_.batch_depth_ > 0 || !log_.unsynced_) return;
  log_.unsynced_ = false;
  if (::fdatasync(log_.fd_.get()) != 0) {
    log::warn("audit_write_failed", "event=batch errno=" + std::to_string(errno));
    return;
  }
  log_.synced_seq_ = log_.seq_;
}

void AuditLog::appendSelf(const std::string& event, Json fields) {
  append(event, Peer{::getuid(), ::getgid(), ::getpid()}, std::move(fields));
}

Result<int64_t> verifyAuditLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return sysError("open " + path);
  std::string line, prev = kAuditGenesis;
  int64_t seq = 0;
  while (std::getline(in, line)) {
    const std::string at = path + ": event " + std::to_string(seq + 1);
    auto j = parseJson(line);
    if (!j || !j->is_object()) return Error(Errc::kRefused, at + ": not a JSON object");
    if (!(*j)["seq"].is_number_integer() || (*j)["seq"].get<int64_t>() != seq + 1)
      return Error(Errc::kRefused, at + ": seq out of order (a line was dropped, added or moved)");
    if (!(*j)["prev"].is_string() || (*j)["prev"].get<std::string>() != prev)
      return Error(Errc::kRefused, at + ": prev is not the hash of the line before");
    if (!(*j)["hash"].is_string()) return Error(Errc::kRefused, at + ": no hash");
    const std::string hash = (*j)["hash"].get<std::string>();
    j->erase("hash");
    if (auditLineHash(*j) != hash) return Error(Errc::kRefused, at + ": its hash does not match its contents (edited)");
    prev = hash;
    ++seq;
  }
  return seq;
}

}  // namespace corral::daemon
