// SPDX-License-Identifier: Apache-2.0
// The admin socket's server: SO_PEERCRED gate, one request per connection.
#include "market/admin_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <nlohmann/json.hpp>

#include "base/log.h"
#include "market/request.h"
#include "market/views.h"

namespace corral::market {
namespace {

using nlohmann::json;

std::string reply(int status, json j) {
  j["status"] = status;
  j["provider"] = "ledger";
  j["test_mode"] = true;
  return j.dump();
}

std::string fail(const Error& e) {
  const int status = httpStatus(e);
  return reply(status, {{"error", status >= 500 ? std::string("internal error") : e.context()}});
}

Result<json> run(Market& m, const json& req, const std::string& op, std::string_view raw) {
  using request::intField;
  using request::stringField;
  using request::strictObject;
  if (op == "register") {
    ASSIGN_OR_RETURN(json j, strictObject(raw, {"op", "role", "name", "public_key", "spend_cap", "approve_each"}));
    ASSIGN_OR_RETURN(std::string role_s, stringField(j, "role", 1, 16));
    auto role = parseRole(role_s);
    if (!role) return statusError(400, "role must be buyer, seller or judge");
    NewAgent a;
    a.role = *role;
    ASSIGN_OR_RETURN(a.name, stringField(j, "name", 1, 100));
    ASSIGN_OR_RETURN(a.public_key, stringField(j, "public_key", 1, 128));
    if (j.contains("spend_cap")) {
      ASSIGN_OR_RETURN(a.spend_cap, intField(j, "spend_cap", 0, 100'000'000'000));
    }
    if (j.contains("approve_each")) {
      if (!j["approve_each"].is_boolean()) return statusError(400, "field approve_each must be a boolean");
      a.approve_each = j["approve_each"].get<bool>();
    }
    if (a.role != Role::kBuyer && (a.spend_cap != 0 || a.approve_each))
      return statusError(400, "only buyers have a spend cap or approve-each");
    ASSIGN_OR_RETURN(Registered reg, m.registerAgent(a));
    return json{{"agent_id", reg.id}, {"api_key", reg.api_key}};
  }
  if (op == "set-cap") {
    ASSIGN_OR_RETURN(json j, strictObject(raw, {"op", "agent", "spend_cap"}));
    ASSIGN_OR_RETURN(std::string agent, stringField(j, "agent", 1, 64));
    ASSIGN_OR_RETURN(int64_t cap, intField(j, "spend_cap", 0, 100'000'000'000));
    RETURN_IF_ERROR(m.setCap(agent, cap));
    return json{{"agent_id", agent}, {"spend_cap", cap}};
  }
  if (op == "suspend" || op == "reinstate" || op == "show") {
    ASSIGN_OR_RETURN(json j, strictObject(raw, {"op", "agent"}));
    ASSIGN_OR_RETURN(std::string agent, stringField(j, "agent", 1, 64));
    if (op == "suspend") RETURN_IF_ERROR(m.suspend(agent));
    if (op == "reinstate") RETURN_IF_ERROR(m.reinstate(agent));
    ASSIGN_OR_RETURN(Agent a, m.agent(agent));
    return json{{"agent", agentView(a)}};
  }
  if (op == "appeals") {
    RETURN_IF_ERROR(strictObject(raw, {"op"}));
    ASSIGN_OR_RETURN(auto list, m.openAppeals());
    json arr = json::array();
    for (const auto& [id, seller] : list) arr.push_back({{"appeal_id", id}, {"seller", seller}});
    return json{{"appeals", arr}};
  }
  if (op == "uphold") {
    ASSIGN_OR_RETURN(json j, strictObject(raw, {"op", "appeal"}));
    ASSIGN_OR_RETURN(std::string appeal, stringField(j, "appeal", 1, 64));
    RETURN_IF_ERROR(m.uphold(appeal));
    return json{{"appeal_id", appeal}, {"state", "upheld"}};
  }
  if (op == "approve" || op == "reject" || op == "refund") {
    ASSIGN_OR_RETURN(json j, strictObject(raw, {"op", "task"}));
    ASSIGN_OR_RETURN(std::string task, stringField(j, "task", 1, 64));
    if (op == "approve") RETURN_IF_ERROR(m.approve(task));
    if (op == "reject") RETURN_IF_ERROR(m.rejectPending(task));
    if (op == "refund") RETURN_IF_ERROR(m.refund(task));
    ASSIGN_OR_RETURN(Task t, m.task(task));
    return json{{"task_id", t.id}, {"state", t.state}};
  }
  (void)req;
  return statusError(400, "unknown op");
}

}  // namespace

std::string adminExecute(Market& m, std::string_view raw) {
  auto j = request::strictObject(raw, {"op", "role", "name", "public_key", "spend_cap", "approve_each", "agent", "appeal",
                                       "task"});
  if (!j) return fail(j.error());
  auto op = request::stringField(*j, "op", 1, 32);
  if (!op) return fail(op.error());
  auto r = run(m, *j, *op, raw);
  if (!r) return fail(r.error());
  return reply(200, *r);
}

Result<std::unique_ptr<AdminSocket>> AdminSocket::start(const std::string& path, DbPool& pool, const Config& cfg) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return Error(Errc::kInvalidArgument, "--admin-socket path too long");
  path.copy(addr.sun_path, path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sysError("admin socket");
  ::unlink(path.c_str());  // a stale socket of a previous run
  // 0600 from the start: bind under a tight umask, so no window where others could connect.
  const mode_t old = ::umask(0177);
  const int rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int err = errno;
  ::umask(old);
  if (rc != 0) return sysError("bind " + path, err);
  if (::listen(fd.get(), 16) != 0) return sysError("listen " + path);
  std::unique_ptr<AdminSocket> s(new AdminSocket(std::move(fd), path, pool, cfg));
  s->thread_ = std::thread([raw = s.get()] { raw->loop(); });
  return s;
}

AdminSocket::~AdminSocket() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  ::unlink(path_.c_str());
}

void AdminSocket::loop() {
  while (!stop_) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    UniqueFd c(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!c.valid()) continue;
    ucred cred{};
    socklen_t len = sizeof cred;
    // The socket's mode is the first gate; the peer's uid is the second.
    if (::getsockopt(c.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || (cred.uid != ::geteuid() && cred.uid != 0)) {
      log::warn("market_admin_refused", "peer_uid=" + std::to_string(cred.uid));
      const std::string no = reply(403, {{"error", "admin socket: peer uid is not the server's"}}) + "\n";
      (void)!::write(c.get(), no.data(), no.size());
      continue;
    }
    const timeval tv{10, 0};
    ::setsockopt(c.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string buf;
    char chunk[4096];
    while (buf.size() <= size_t{64} * 1024 && buf.find('\n') == std::string::npos) {
      const ssize_t n = ::read(c.get(), chunk, sizeof chunk);
      if (n <= 0) break;
      buf.append(chunk, static_cast<size_t>(n));
    }
    std::string out;
    if (buf.size() > size_t{64} * 1024) {
      out = reply(413, {{"error", "admin request too large"}});
    } else {
      const std::string line = buf.substr(0, buf.find('\n'));
      auto lease = pool_.acquire();
      Market m(lease.db(), lease.provider(), cfg_);
      out = adminExecute(m, line);
      log::info("market_admin", "peer_uid=" + std::to_string(cred.uid) + " bytes=" + std::to_string(line.size()));
    }
    out += "\n";
    (void)!::write(c.get(), out.data(), out.size());
  }
}

}  // namespace corral::market
