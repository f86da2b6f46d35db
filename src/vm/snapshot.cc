// SPDX-License-Identifier: Apache-2.0
// Snapshot files and the QMP client that saves and restores them (snapshot.h).
#include "vm/snapshot.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <vector>
#include <thread>

#include "base/fd_passing.h"
#include "base/random_id.h"
#include "base/sha256.h"

namespace corral::vm::snapshot {
namespace {

using Json = nlohmann::json;
constexpr char kMagic[] = "corral-vm-snapshot 1 ";
// The layout of what a snapshot resumes into (agent protocol, QEMU argv): bump on change.
constexpr char kLayoutVersion[] = "snapshot-layout-1";

Error bad(const std::string& what) { return Error(Errc::kIo, "VM snapshot: " + what); }

Result<std::string> hashFile(const std::string& p) {
  UniqueFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return sysError("open " + p);
  std::string h = sha256HexOfFd(fd.get());
  if (h.empty()) return sysError("read " + p);
  return h;
}

std::string baseName(const std::string& p) { return p.substr(p.rfind('/') + 1); }

}  // namespace

Result<std::string> key(const KeyInputs& in) {
  ASSIGN_OR_RETURN(std::string kernel, hashFile(in.kernel));
  // QEMU: its binary's identity on disk (a package upgrade replaces it); hashing 20 MB on
  // every run would cost more than the check is worth.
  struct stat q;
  if (::stat(in.qemu.c_str(), &q) != 0) return sysError("stat " + in.qemu);
  std::string k = std::string(kLayoutVersion) + "\nkernel " + kernel + "\ninitrd " + baseName(in.initrd) + "\nrootfs " +
                  baseName(in.rootfs) + "\nqemu " + in.qemu + " " + std::to_string(q.st_size) + " " +
                  std::to_string(q.st_mtim.tv_sec) + "." + std::to_string(q.st_mtim.tv_nsec) + " " + std::to_string(q.st_ino) +
                  "\nmemory " + std::to_string(in.memory_bytes) + "\ncpus " + std::to_string(in.cpus) + "\naccel " +
                  (in.kvm ? "kvm" : "tcg") + "\nworkspace " + std::to_string(in.workspace_bytes) + "\nnet " +
                  (in.net_proxy ? "proxy" : "none") + "\n";
  return sha256Hex(k).substr(0, 32);
}

std::string path(const std::string& cache, const std::string& key) { return cache + "/snapshot-" + key + ".qemu"; }

Result<UniqueFd> openVerified(const std::string& p) {
  UniqueFd fd(::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return sysError("open " + p);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sysError("stat " + p);
  if (!S_ISREG(st.st_mode) || st.st_uid != ::getuid()) return bad("not a regular file of this user's");
  char hdr[kHeaderBytes];
  if (::pread(fd.get(), hdr, sizeof hdr, 0) != static_cast<ssize_t>(sizeof hdr)) return bad("shorter than its header");
  const std::string_view h(hdr, sizeof hdr);
  if (h.substr(0, sizeof kMagic - 1) != kMagic) return bad("no snapshot header");
  const size_t sp = h.find(' ', sizeof kMagic - 1), nl = h.find('\n');
  if (sp == std::string_view::npos || nl == std::string_view::npos || nl < sp) return bad("a malformed header");
  const std::string size_text(h.substr(sizeof kMagic - 1, sp - (sizeof kMagic - 1)));
  const std::string want_hash(h.substr(sp + 1, nl - sp - 1));
  char* end = nullptr;
  const unsigned long long size = std::strtoull(size_text.c_str(), &end, 10);
  if (size_text.empty() || *end != '\0' || !isSha256Hex(want_hash)) return bad("a malformed header");
  if (static_cast<uint64_t>(st.st_size) != kHeaderBytes + size) return bad("its size differs from its header (truncated?)");
  if (::lseek(fd.get(), kHeaderBytes, SEEK_SET) != static_cast<off_t>(kHeaderBytes)) return sysError("seek " + p);
  uint64_t got = 0;
  const std::string hash = sha256HexOfFd(fd.get(), size + 1, &got);
  if (hash.empty() || got != size) return bad("unreadable");
  if (hash != want_hash) return bad("its content differs from its hash (corrupt)");
  if (::lseek(fd.get(), kHeaderBytes, SEEK_SET) != static_cast<off_t>(kHeaderBytes)) return sysError("seek " + p);
  ::futimens(fd.get(), nullptr);  // best effort: only the pruning order depends on it
  return fd;
}

void prune(const std::string& cache, size_t keep) {
  DIR* d = ::opendir(cache.c_str());
  if (!d) return;
  std::vector<std::pair<time_t, std::string>> snaps;
  const time_t now = ::time(nullptr);
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("snapshot-", 0) != 0) continue;
    struct stat st;
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (name.find(".tmp-") != std::string::npos) {
      if (now - st.st_mtime > 3600) ::unlinkat(::dirfd(d), e->d_name, 0);
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".qemu") == 0) {
      snaps.emplace_back(st.st_mtime, name);
    }
  }
  std::sort(snaps.begin(), snaps.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = keep; i < snaps.size(); ++i) ::unlinkat(::dirfd(d), snaps[i].second.c_str(), 0);
  ::closedir(d);
}

Result<Writer> Writer::create(const std::string& p) {
  Writer w;
  w.path_ = p;
  w.tmp_ = p + ".tmp-" + randomHex16();
  w.fd_.reset(::open(w.tmp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!w.fd_.valid()) {
    w.tmp_.clear();
    return sysError("create a VM snapshot in the cache");
  }
  if (::lseek(w.fd_.get(), kHeaderBytes, SEEK_SET) != static_cast<off_t>(kHeaderBytes)) return sysError("seek the VM snapshot");
  return w;
}

Writer::~Writer() {
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

Result<uint64_t> Writer::seal() {
  struct stat st;
  if (::fstat(fd_.get(), &st) != 0) return sysError("stat the VM snapshot");
  if (st.st_size <= static_cast<off_t>(kHeaderBytes)) return bad("QEMU wrote no migration stream");
  const uint64_t size = static_cast<uint64_t>(st.st_size) - kHeaderBytes;
  if (::lseek(fd_.get(), kHeaderBytes, SEEK_SET) != static_cast<off_t>(kHeaderBytes)) return sysError("seek the VM snapshot");
  uint64_t got = 0;
  const std::string hash = sha256HexOfFd(fd_.get(), size, &got);
  if (hash.empty() || got != size) return bad("cannot read back what QEMU wrote");
  std::string hdr = std::string(kMagic) + std::to_string(size) + " " + hash + "\n";
  hdr.resize(kHeaderBytes, '\0');
  if (::pwrite(fd_.get(), hdr.data(), hdr.size(), 0) != static_cast<ssize_t>(hdr.size())) return sysError("write the VM snapshot header");
  if (::fsync(fd_.get()) != 0) return sysError("fsync the VM snapshot");
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) return sysError("rename the VM snapshot into the cache");
  tmp_.clear();
  return size;
}

Result<UniqueFd> Qmp::listen(const std::string& p, uid_t peer_uid) {
  UniqueFd l(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!l.valid()) return sysError("QMP socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (p.size() >= sizeof addr.sun_path) return Error(Errc::kInvalidArgument, "QMP socket path too long");
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  if (::bind(l.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return sysError("bind the QMP socket");
  if (::getuid() == 0 && ::chown(p.c_str(), peer_uid, peer_uid) != 0) return sysError("chown the QMP socket");
  if (::listen(l.get(), 1) != 0) return sysError("listen on the QMP socket");
  return l;
}

namespace {
int msLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left);
}
}  // namespace

Result<Qmp> Qmp::accept(int listener, Clock::time_point deadline) {
  pollfd p{listener, POLLIN, 0};
  for (;;) {
    const int r = ::poll(&p, 1, msLeft(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return bad("QEMU did not connect to its monitor socket");
    break;
  }
  Qmp q;
  q.sock_.reset(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!q.sock_.valid()) return sysError("accept QEMU's monitor connection");
  ASSIGN_OR_RETURN(Json greeting, q.readMessage(deadline));
  if (!greeting.contains("QMP")) return bad("QEMU's monitor sent no greeting");
  if (auto c = q.execute("qmp_capabilities", Json::object(), deadline); !c) return c.error();
  return q;
}

Result<Json> Qmp::readMessage(Clock::time_point deadline) {
  for (;;) {
    const size_t nl = buf_.find('\n');
    if (nl != std::string::npos) {
      Json j = Json::parse(buf_.substr(0, nl), nullptr, false);
      buf_.erase(0, nl + 1);
      if (j.is_discarded() || !j.is_object()) return bad("QEMU's monitor sent something that is not JSON");
      return j;
    }
    if (buf_.size() > (1u << 20)) return bad("QEMU's monitor sent an overlong line");
    pollfd p{sock_.get(), POLLIN, 0};
    const int r = ::poll(&p, 1, msLeft(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return bad("QEMU's monitor did not answer in time");
    char b[4096];
    const ssize_t n = ::read(sock_.get(), b, sizeof b);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return bad("QEMU's monitor closed");
    buf_.append(b, static_cast<size_t>(n));
  }
}

Result<Json> Qmp::execute(const std::string& command, const Json& args, Clock::time_point deadline, int fd) {
  const std::string line = Json{{"execute", command}, {"arguments", args}}.dump() + "\n";
  if (const int e = sendWithFd(sock_.get(), line.data(), line.size(), fd); e != 0)
    return Error(Errc::kIo, "VM snapshot: send " + command + " to QEMU: " + std::strerror(e));
  for (;;) {
    ASSIGN_OR_RETURN(Json m, readMessage(deadline));
    if (m.contains("event")) continue;
    if (m.contains("error")) {
      const std::string desc = m["error"].is_object() ? m["error"].value("desc", std::string("?")) : "?";
      return bad(command + ": " + desc.substr(0, 200));
    }
    if (m.contains("return")) return m["return"];
  }
}

Result<void> Qmp::waitMigration(Clock::time_point deadline) {
  for (;;) {
    ASSIGN_OR_RETURN(Json r, execute("query-migrate", Json::object(), deadline));
    const std::string status = r.is_object() ? r.value("status", std::string()) : "";
    if (status == "completed") return {};
    if (status == "failed" || status == "cancelled")
      return bad("migration " + status + (r.contains("error-desc") ? ": " + r.value("error-desc", std::string()).substr(0, 200) : ""));
    if (Clock::now() >= deadline) return bad("migration did not complete in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace corral::vm::snapshot
