// SPDX-License-Identifier: Apache-2.0
#include "agent/mailbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include <nlohmann/json.hpp>

#include "audit/canonical_json.h"

#include "audit/record_dir.h"
#include "base/read_fd.h"

namespace corral::agent {
namespace {

Result<UniqueFd> openSubdir(int parent, const char* name) {
  if (::mkdirat(parent, name, 0755) != 0 && errno != EEXIST) return sysError(std::string("mailbox: mkdir ") + name);
  UniqueFd fd(::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  // O_NOFOLLOW|O_DIRECTORY on a symlink says ENOTDIR; say what is in the way.
  if (!fd.valid() && (errno == ENOTDIR || errno == ELOOP))
    return Error(Errc::kRefused, std::string("mailbox: ") + name + " is not a real directory (symlink or file): refusing");
  if (!fd.valid()) return sysError(std::string("mailbox: ") + name);
  return fd;
}

}  // namespace

Result<Mailbox> Mailbox::open(const UniqueFd& record_dir, std::string run_id) {
  ASSIGN_OR_RETURN(UniqueFd root, openSubdir(record_dir.get(), "mailbox"));
  ASSIGN_OR_RETURN(UniqueFd inbox, openSubdir(root.get(), "inbox"));
  ASSIGN_OR_RETURN(UniqueFd outbox, openSubdir(root.get(), "outbox"));
  ASSIGN_OR_RETURN(UniqueFd delivered, openSubdir(inbox.get(), "delivered"));
  return Mailbox(std::move(inbox), std::move(outbox), std::move(delivered), std::move(run_id));
}

Result<std::string> Mailbox::send(std::string_view from_task, std::string_view to, std::string_view body, int64_t ts_ms) {
  if (sent_ >= kMaxMailSentPerRun)
    return Error(Errc::kLimit, "mailbox: at most " + std::to_string(kMaxMailSentPerRun) + " messages per run");
  if (body.size() > kMaxMailBodyBytes)
    return Error(Errc::kLimit, "mailbox: body of " + std::to_string(body.size()) + " bytes is over the " +
                                   std::to_string(kMaxMailBodyBytes) + "-byte limit");
  const std::string id = run_id_ + "-" + std::to_string(sent_ + 1);
  nlohmann::json msg = {{"id", id}, {"from", from_task}, {"to", to}, {"body", body}, {"ts_ms", ts_ms}};
  // Checked rather than caught: dump() would throw on invalid UTF-8 in model text.
  for (std::string_view text : {from_task, to, body})
    if (!audit::isValidUtf8(text)) return Error(Errc::kInvalidArgument, "mailbox: body is not valid UTF-8");
  const std::string bytes = msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const std::string tmp = "." + id + ".tmp";
  const std::string name = id + ".json";
  UniqueFd fd(::openat(outbox_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return sysError("mailbox: create");
  RETURN_IF_ERROR(audit::writeAll(fd.get(), bytes, "mailbox"));
  if (::fsync(fd.get()) != 0) return sysError("mailbox: fsync");
  if (::renameat(outbox_.get(), tmp.c_str(), outbox_.get(), name.c_str()) != 0) return sysError("mailbox: rename");
  ++sent_;
  return id;
}

Result<std::vector<MailMessage>> Mailbox::receive() {
  UniqueFd dup(::fcntl(inbox_.get(), F_DUPFD_CLOEXEC, 3));
  if (!dup.valid()) return sysError("mailbox: dup");
  DIR* d = ::fdopendir(dup.get());
  if (d == nullptr) return sysError("mailbox: inbox");
  (void)dup.release();
  std::unique_ptr<DIR, int (*)(DIR*)> guard(d, ::closedir);
  ::rewinddir(d);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.empty() || n[0] == '.' || n == "delivered") continue;
    names.push_back(std::move(n));
  }
  std::sort(names.begin(), names.end());
  if (names.size() > kMaxMailPerRead) names.resize(kMaxMailPerRead);
  std::vector<MailMessage> out;
  for (const std::string& n : names) {
    MailMessage m{n, {}};
    UniqueFd fd(::openat(inbox_.get(), n.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st;
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      m.body = "[corral: not a regular file; not delivered]";
    } else {
      auto body = readUpTo(fd.get(), kMaxMailBodyBytes, "mailbox: " + n);
      if (!body.ok() || body->size() > kMaxMailBodyBytes)
        m.body = "[corral: message over " + std::to_string(kMaxMailBodyBytes) + " bytes or unreadable; not delivered]";
      else
        m.body = std::move(*body);
    }
    if (::renameat(inbox_.get(), n.c_str(), delivered_.get(), n.c_str()) != 0) return sysError("mailbox: move " + n);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace corral::agent
