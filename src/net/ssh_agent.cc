// SPDX-License-Identifier: Apache-2.0
// The host-side SSH agent: one poll loop on its own thread, one state per client connection.
// What it answers (everything else is refused with SSH_AGENT_FAILURE and recorded):
//   - request-identities: the one key;
//   - session-bind@openssh.com: accepted when the host key is an ssh-ed25519 key that signed
//     the session identifier, the connection does not forward the agent, and the key is the
//     one presented by the SSH server behind an open tcp-grant tunnel of this sandbox;
//   - sign-request: only a publickey userauth request (RFC 4252) for this key, in the session
//     the connection was bound to, whose destination was found at the bind.
#include "net/ssh_agent.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <thread>

#include "audit/base64.h"
#include "audit/signing.h"
#include "base/log.h"
#include "base/read_fd.h"
#include "base/secret.h"
#include "net/http_request.h"
#include "net/ssh_agent_wire.h"

extern char** environ;

namespace corral::net {
namespace {

namespace wire = ssh_agent;
constexpr size_t kMaxClients = 64;
// A client that asks without reading the answers is not read from until it has taken them.
constexpr size_t kMaxPendingOut = size_t{64} * 1024;

using Pkey = audit::PkeyPtr;
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

bool verifyEd25519(std::string_view key32, std::string_view sig64, std::string_view data) {
  Pkey key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(key32.data()),
                                       key32.size()));
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!key || !ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1) return false;
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig64.data()), sig64.size(),
                          reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
}

std::optional<std::string> signEd25519(EVP_PKEY* key, std::string_view data) {
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  unsigned char sig[64];
  size_t len = sizeof sig;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key) != 1 ||
      EVP_DigestSign(ctx.get(), sig, &len, reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1 ||
      len != sizeof sig)
    return std::nullopt;
  return std::string(reinterpret_cast<char*>(sig), len);
}

// SSH_AGENT_FAILURE: the answer to everything refused.
std::string failure() { return wire::frame(wire::kFailure, ""); }

// "10.0.0.1:22" or "[::1]:22" -> ("10.0.0.1", 22).
bool splitResolved(const std::string& resolved, std::string* ip, uint16_t* port) {
  const size_t colon = resolved.rfind(':');
  if (colon == std::string::npos || colon + 1 >= resolved.size()) return false;
  std::string host = resolved.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned long p = 0;
  for (char c : resolved.substr(colon + 1)) {
    if (c < '0' || c > '9' || (p = p * 10 + static_cast<unsigned long>(c - '0')) > 65535) return false;
  }
  *ip = host;
  *port = static_cast<uint16_t>(p);
  return !host.empty() && p > 0;
}

}  // namespace

std::vector<std::string> scanHostKeys(const std::string& ip, uint16_t port, std::string_view type) {
  std::vector<std::string> keys;
  if (type != "ssh-ed25519") return keys;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return keys;
  UniqueFd read_end(out[0]), write_end(out[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  const std::string port_text = std::to_string(port);
  const char* argv[] = {"ssh-keyscan", "-T", "5", "-t", "ed25519", "-p", port_text.c_str(), ip.c_str(), nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/usr/bin/ssh-keyscan", &fa, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&fa);
  write_end.reset();
  if (rc != 0) return keys;
  auto text = readUpTo(read_end.get(), size_t{64} * 1024, "ssh-keyscan output");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!text.ok()) return keys;
  // "<host> ssh-ed25519 <base64>" per key; '#' lines are comments.
  size_t start = 0;
  while (start < text->size()) {
    size_t nl = text->find('\n', start);
    if (nl == std::string::npos) nl = text->size();
    const std::string line = text->substr(start, nl - start);
    start = nl + 1;
    const size_t a = line.find(' '), b = a == std::string::npos ? a : line.find(' ', a + 1);
    if (line.empty() || line[0] == '#' || b == std::string::npos) continue;
    if (line.compare(a + 1, b - a - 1, type) != 0) continue;
    if (auto blob = audit::base64DecodeStrict(line.substr(b + 1)); blob && wire::blobType(*blob) == type)
      keys.push_back(*blob);
  }
  return keys;
}

namespace {

struct LoadedKey {
  Pkey key;
  std::string blob;
};

Result<LoadedKey> loadKey(std::string_view text, const std::string& what) {
  wire::KeyFileResult parsed = wire::parseOpenSshPrivateKey(text);
  if (!parsed.key) return Error(Errc::kInvalidArgument, what + ": " + parsed.error);
  LoadedKey out;
  out.key.reset(EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr,
                                             reinterpret_cast<const unsigned char*>(parsed.key->seed.data()), 32));
  if (!out.key) return Error(Errc::kInvalidArgument, what + ": OpenSSL refused the key");
  out.blob = wire::ed25519KeyBlob(parsed.key->public_key);
  return out;
}

}  // namespace

struct SshAgent::Impl {
  SshAgentConfig config;
  // key, key_blob and fingerprint: under key_mu (rotateKey changes them while the agent runs).
  mutable std::mutex key_mu;
  Pkey key;
  std::string key_blob, fingerprint;
  UniqueFd wake_read, wake_write;
  std::thread thread;
  // Host keys by resolved address, asked once per run: a server's key does not change under it.
  std::map<std::string, std::vector<std::string>> host_keys;

  struct Client {
    UniqueFd fd;
    std::string in, out;
    bool bound = false;  // one session-bind per connection
    std::string session_id, host_key, destination, resolved;
  };
  std::vector<Client> clients;

  void run();
  // Returns false when the connection must close (a frame that cannot be trusted).
  bool onReadable(Client& c);
  std::string answer(Client& c, uint8_t type, std::string_view body);
  std::string onSessionBind(Client& c, std::string_view contents);
  std::string onSign(Client& c, std::string_view body);
  // The open tunnel whose server presents host_key; nullopt when none does.
  std::optional<OpenTunnel> tunnelWithHostKey(std::string_view host_key);
  void record(const Client& c, std::string_view method, std::string_view rule, std::string_view host_key = {});
};

void SshAgent::Impl::record(const Client& c, std::string_view method, std::string_view rule, std::string_view host_key) {
  ConnectionEvent e;
  e.tag = config.tag;
  e.kind = "ssh-agent";
  e.method = std::string(method);
  e.destination = c.destination;
  e.resolved = c.resolved;
  e.decision = rule == "allowed" ? "allow" : "refuse";
  e.rule = std::string(rule);
  e.ssh_key = fingerprint;
  if (!host_key.empty()) e.host_key = sshFingerprint(host_key);
  log::write(e.decision == "allow" ? log::Level::kInfo : log::Level::kWarn, "ssh_agent",
             "tag=" + e.tag + " method=" + e.method + " key=" + e.ssh_key +
                 " host_key=" + (e.host_key.empty() ? "-" : e.host_key) +
                 " dest=" + (e.destination.empty() ? "-" : log::value(e.destination)) + " decision=" + e.decision +
                 " rule=" + e.rule);
  if (config.on_event) config.on_event(e);
}

std::optional<OpenTunnel> SshAgent::Impl::tunnelWithHostKey(std::string_view host_key) {
  if (!config.tunnels) return std::nullopt;
  const std::string_view type = wire::blobType(host_key);
  for (const OpenTunnel& t : config.tunnels->snapshot()) {
    auto it = host_keys.find(t.resolved);
    if (it == host_keys.end()) {
      std::string ip;
      uint16_t port = 0;
      std::vector<std::string> keys;
      if (splitResolved(t.resolved, &ip, &port)) keys = config.host_keys(ip, port, type);
      it = host_keys.emplace(t.resolved, std::move(keys)).first;
    }
    for (const std::string& k : it->second)
      if (k == host_key) return t;
  }
  return std::nullopt;
}

std::string SshAgent::Impl::onSessionBind(Client& c, std::string_view contents) {
  auto bind = wire::parseSessionBind(contents);
  if (!bind) {
    record(c, "session-bind", "ssh-agent-malformed");
    return failure();
  }
  if (c.bound) {
    record(c, "session-bind", "ssh-agent-rebind", bind->host_key);
    return failure();
  }
  if (bind->forwarding) {
    record(c, "session-bind", "ssh-agent-forwarding", bind->host_key);
    return failure();
  }
  auto host = wire::ed25519Key(bind->host_key);
  auto sig = wire::ed25519Signature(bind->signature);
  if (!host || !sig) {
    record(c, "session-bind", "ssh-agent-host-key-type", bind->host_key);
    return failure();
  }
  if (!verifyEd25519(*host, *sig, bind->session_id)) {
    record(c, "session-bind", "ssh-agent-bind-signature", bind->host_key);
    return failure();
  }
  auto tunnel = tunnelWithHostKey(bind->host_key);
  if (!tunnel) {
    record(c, "session-bind", "ssh-agent-no-grant", bind->host_key);
    return failure();
  }
  c.bound = true;
  c.session_id = std::string(bind->session_id);
  c.host_key = std::string(bind->host_key);
  c.destination = tunnel->destination;
  c.resolved = tunnel->resolved;
  record(c, "session-bind", "allowed", bind->host_key);
  return wire::frame(wire::kSuccess, "");
}

std::string SshAgent::Impl::onSign(Client& c, std::string_view body) {
  auto req = wire::parseSignRequest(body);
  if (!req) {
    record(c, "sign-request", "ssh-agent-malformed");
    return failure();
  }
  if (req->key_blob != key_blob) {
    record(c, "sign-request", "ssh-agent-unknown-key");
    return failure();
  }
  if (!c.bound) {  // no bind, or one refused: no destination is known for this connection
    record(c, "sign-request", "ssh-agent-no-grant");
    return failure();
  }
  auto auth = wire::parseUserauthRequest(req->data);
  if (!auth || auth->key_blob != key_blob) {
    record(c, "sign-request", "ssh-agent-not-userauth", c.host_key);
    return failure();
  }
  if (auth->session_id != c.session_id || (auth->host_key && *auth->host_key != c.host_key)) {
    record(c, "sign-request", "ssh-agent-session-mismatch", c.host_key);
    return failure();
  }
  auto sig = signEd25519(key.get(), req->data);
  if (!sig) {
    record(c, "sign-request", "ssh-agent-sign-failed", c.host_key);
    return failure();
  }
  record(c, "sign-request", "allowed", c.host_key);
  return wire::frame(wire::kSignResponse, wire::string(wire::ed25519SignatureBlob(*sig)));
}

std::string SshAgent::Impl::answer(Client& c, uint8_t type, std::string_view body) {
  if (type == wire::kRequestIdentities && body.empty())
    return wire::frame(wire::kIdentitiesAnswer, wire::u32(1) + wire::string(key_blob) + wire::string("corral --ssh-key"));
  if (type == wire::kSignRequest) return onSign(c, body);
  if (type == wire::kExtension) {
    auto ext = wire::parseExtension(body);
    if (ext && ext->name == wire::kSessionBind) return onSessionBind(c, ext->contents);
    record(c, ext ? "extension:" + printable(ext->name, 64) : "extension", "ssh-agent-request-refused");
    return failure();
  }
  // Adding, removing, locking, smartcards, and anything unknown: the sandbox manages nothing.
  record(c, wire::messageName(type), "ssh-agent-request-refused");
  return failure();
}

bool SshAgent::Impl::onReadable(Client& c) {
  char buf[16 * 1024];
  const ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0) return errno == EAGAIN || errno == EINTR;
  if (n == 0) return false;
  c.in.append(buf, static_cast<size_t>(n));
  size_t used = 0;  // erased once at the end: a burst of small frames costs no quadratic moves
  for (;;) {
    const wire::Frame f = wire::takeFrame(std::string_view(c.in).substr(used));
    if (f.status == wire::FrameStatus::kNeedMore) break;
    if (f.status == wire::FrameStatus::kError) {
      record(c, "frame", "ssh-agent-malformed");
      return false;
    }
    {
      std::lock_guard lock(key_mu);
      c.out += answer(c, f.type, f.body);
    }
    used += f.size;
  }
  c.in.erase(0, used);
  return true;
}

void SshAgent::Impl::run() {
  for (;;) {
    std::vector<pollfd> fds = {{wake_read.get(), POLLIN, 0},
                               {clients.size() < kMaxClients ? config.listener.get() : -1, POLLIN, 0}};
    for (const Client& c : clients) {
      short want = POLLIN;
      if (!c.out.empty()) want = static_cast<short>(c.out.size() < kMaxPendingOut ? POLLIN | POLLOUT : POLLOUT);
      fds.push_back({c.fd.get(), want, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    for (size_t i = clients.size(); i-- > 0;) {
      Client& c = clients[i];
      const short ev = fds[i + 2].revents;
      bool keep = true;
      if (ev & POLLIN) keep = onReadable(c);
      else if (ev & (POLLHUP | POLLERR)) keep = false;
      if (keep && !c.out.empty() && (ev & (POLLOUT | POLLIN))) {
        const ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) c.out.erase(0, static_cast<size_t>(n));
        else if (n < 0 && errno != EAGAIN && errno != EINTR) keep = false;
      }
      if (!keep) clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (fds[1].revents & POLLIN) {
      const int fd = ::accept4(config.listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) clients.push_back(Client{UniqueFd(fd)});
    }
  }
}

Result<std::unique_ptr<SshAgent>> SshAgent::start(SshAgentConfig config) {
  auto impl = std::make_unique<Impl>();
  if (config.key_text) {
    auto loaded = loadKey(config.key_text->revealForInjection(), "--ssh-key " + config.key_path);
    config.key_text.reset();  // the caller's copy, if it kept none, is wiped now
    if (!loaded) return loaded.error();
    impl->key = std::move(loaded->key);
    impl->key_blob = std::move(loaded->blob);
  } else {
    UniqueFd f(::open(config.key_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
    if (!f.valid()) return sysError("--ssh-key " + config.key_path);
    auto text = readUpTo(f.get(), size_t{64} * 1024, "--ssh-key " + config.key_path);
    if (!text.ok()) return text.error();
    Secret file(std::move(*text));
    ASSIGN_OR_RETURN(LoadedKey loaded, loadKey(file.revealForInjection(), "--ssh-key " + config.key_path));
    impl->key = std::move(loaded.key);
    impl->key_blob = std::move(loaded.blob);
  }
  impl->fingerprint = sshFingerprint(impl->key_blob);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return sysError("ssh agent wake pipe");
  impl->wake_read = UniqueFd(p[0]);
  impl->wake_write = UniqueFd(p[1]);
  impl->config = std::move(config);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<SshAgent>(new SshAgent(std::move(impl)));
}

SshAgent::SshAgent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SshAgent::~SshAgent() {
  const char b = 0;
  (void)!::write(impl_->wake_write.get(), &b, 1);
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string SshAgent::fingerprint() const {
  std::lock_guard lock(impl_->key_mu);
  return impl_->fingerprint;
}

Result<std::string> SshAgent::rotateKey(std::string_view text) {
  ASSIGN_OR_RETURN(LoadedKey loaded, loadKey(text, "ssh key"));
  const std::string fp = sshFingerprint(loaded.blob);
  std::lock_guard lock(impl_->key_mu);
  impl_->key = std::move(loaded.key);
  impl_->key_blob = std::move(loaded.blob);
  impl_->fingerprint = fp;
  return fp;
}

}  // namespace corral::net
