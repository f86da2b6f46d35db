// SPDX-License-Identifier: Apache-2.0
// `corral market admin ...`: one request over the admin socket; register writes the
// identity file (0600) with a key pair made here, so no private key crosses the socket.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/unique_fd.h"
#include "cli/market_agent.h"
#include "cli/market_flags.h"
#include "market/client.h"
#include "market/keys.h"
#include "market/server.h"

namespace corral::cli {
namespace {

using nlohmann::json;

Result<json> adminCall(const std::string& path, const json& req) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return Error(Errc::kInvalidArgument, "--admin-socket path too long");
  path.copy(addr.sun_path, path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sysError("socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return sysError("connect " + path);
  const std::string line = req.dump() + "\n";
  // A server that refuses the peer answers and closes without reading: the send may fail
  // (EPIPE, no SIGPIPE) while its refusal waits to be read below.
  const ssize_t sent = ::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL);
  if (sent < 0 ? (errno != EPIPE && errno != ECONNRESET) : sent != static_cast<ssize_t>(line.size()))
    return sysError("write " + path);
  std::string buf;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == ECONNRESET && !buf.empty()) break;  // the refusal came, then the close
    if (n < 0) return sysError("read " + path);
    if (n == 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    if (buf.size() > size_t{1024} * 1024) return Error(Errc::kLimit, "admin answer too large");
  }
  auto j = json::parse(buf, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error(Errc::kIo, "admin socket answered with something other than JSON");
  if (j.value("status", 0) != 200) return Error(Errc::kRefused, j.value("error", std::string("refused")));
  return j;
}

// The same request over HTTP with the admin token (POST /v1/admin); the token is read from
// its file, never taken on the command line.
Result<json> adminOverHttp(const MarketFlags& f, const json& req) {
  if (!f.has("--admin-token-file")) return Error(Errc::kInvalidArgument, "--server needs --admin-token-file");
  ASSIGN_OR_RETURN(std::string token, market::readAdminToken(f.get("--admin-token-file")));
  ASSIGN_OR_RETURN(auto res, market::client::Http(f.get("--server"), token).post("/v1/admin", req));
  if (!res.body.is_object()) return Error(Errc::kIo, "the server answered with something other than JSON");
  if (res.status != 200) {
    const json& e = res.body.contains("error") ? res.body["error"] : json();
    const std::string why = e.is_string() ? e.get<std::string>()
                            : e.is_object() ? e.value("message", std::string("refused"))
                                            : std::string("refused");
    return Error(Errc::kRefused, why);
  }
  return res.body;
}

void print(const json& j, bool as_json, const std::string& line) {
  if (as_json) {
    json out = j;
    out.erase("api_key");
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace

int marketAdminMain(const std::vector<std::string>& args) {
  auto f = parseMarketFlags(args, {"--admin-socket", "--server", "--admin-token-file", "--db", "--role", "--name",
                                   "--spend-cap", "--out", "--public-key"},
                            {"--approve-each", "--json"}, 3);
  if (!f) return marketFail("admin", f.error().message(), false);
  const bool as_json = f->has("--json");
  std::string sock = f->get("--admin-socket");
  if (sock.empty()) sock = f->has("--db") ? market::defaultAdminSocket(f->get("--db")) : "corral-market-admin.sock";
  const auto& pos = f->positional;
  if (pos.empty()) return marketFail("admin", "missing admin command (register, set-cap, suspend, reinstate, appeals, ...)", as_json);
  const std::string& op = pos[0];
  json req = {{"op", op}};

  if (op == "register") {
    if (pos.size() != 1) return marketFail("admin", "register takes flags only", as_json);
    if (!f->has("--role") || !f->has("--name")) return marketFail("admin", "register needs --role and --name", as_json);
    if (!f->has("--out")) return marketFail("admin", "register needs --out FILE (the identity file)", as_json);
    market::client::Identity id;
    if (f->has("--public-key")) {
      // The agent made its own key pair: only the public half is registered and stored.
      FILE* pk = std::fopen(f->get("--public-key").c_str(), "re");
      if (!pk) return marketFail("admin", "cannot read --public-key file", as_json);
      char hex[130] = {0};
      const size_t n = std::fread(hex, 1, sizeof hex - 1, pk);
      std::fclose(pk);
      std::string h(hex, n);
      while (!h.empty() && (h.back() == '\n' || h.back() == ' ')) h.pop_back();
      auto raw = market::keys::parsePublicKey(h);
      if (!raw) return marketFail("admin", "--public-key: " + raw.error().context(), as_json);
      id.kp.public_key = *raw;
    } else {
      id.kp = market::keys::newKeyPair();
    }
    if (::access(f->get("--out").c_str(), F_OK) == 0) return marketFail("admin", "--out file exists; refusing to overwrite", as_json);
    req["role"] = f->get("--role");
    req["name"] = f->get("--name");
    req["public_key"] = market::keys::toHex(id.kp.public_key);
    auto cap = intFlag(*f, "--spend-cap", 0);
    if (!cap) return marketFail("admin", cap.error().message(), as_json);
    if (f->has("--spend-cap")) req["spend_cap"] = *cap;
    if (f->has("--approve-each")) req["approve_each"] = true;
    auto r = f->has("--server") ? adminOverHttp(*f, req) : adminCall(sock, req);
    if (!r) return marketFail("admin", r.error().message(), as_json);
    id.agent_id = (*r)["agent_id"].get<std::string>();
    id.api_key = (*r)["api_key"].get<std::string>();
    id.role = f->get("--role");
    if (auto w = market::client::writeIdentity(f->get("--out"), id); !w)
      return marketFail("admin", "registered " + id.agent_id + " but " + w.error().message(), as_json);
    print(*r, as_json, "registered " + id.role + " " + id.agent_id + "; identity file " + f->get("--out") + " (mode 0600)");
    return 0;
  }
  if (op == "set-cap") {
    if (pos.size() != 3) return marketFail("admin", "usage: admin set-cap AGENT CENTS", as_json);
    const std::string& c = pos[2];
    if (c.empty() || c.size() > 12 || c.find_first_not_of("0123456789") != std::string::npos)
      return marketFail("admin", "CENTS must be a non-negative integer", as_json);
    req["agent"] = pos[1];
    req["spend_cap"] = std::stoll(c);
  } else if (op == "suspend" || op == "reinstate" || op == "show") {
    if (pos.size() != 2) return marketFail("admin", "usage: admin " + op + " AGENT", as_json);
    req["agent"] = pos[1];
  } else if (op == "appeals") {
    if (pos.size() == 3 && pos[1] == "uphold") {
      req = {{"op", "uphold"}, {"appeal", pos[2]}};
    } else if (pos.size() != 1) {
      return marketFail("admin", "usage: admin appeals [uphold APPEAL]", as_json);
    }
  } else if (op == "approve" || op == "reject" || op == "refund") {
    if (pos.size() != 2) return marketFail("admin", "usage: admin " + op + " TASK", as_json);
    req["task"] = pos[1];
  } else {
    return marketFail("admin", "unknown admin command", as_json);
  }
  auto r = f->has("--server") ? adminOverHttp(*f, req) : adminCall(sock, req);
  if (!r) return marketFail("admin", r.error().message(), as_json);
  std::string line = "ok";
  if (r->contains("appeals")) {
    line = std::to_string((*r)["appeals"].size()) + " open appeal(s)";
    for (const auto& a : (*r)["appeals"]) line += "\n" + a["appeal_id"].get<std::string>() + " seller " + a["seller"].get<std::string>();
  } else if (r->contains("state")) {
    line = (*r)["task_id"].get<std::string>() + " " + (*r)["state"].get<std::string>();
  } else if (r->contains("agent")) {
    const json& a = (*r)["agent"];
    line = a["id"].get<std::string>() + " suspended=" + (a["suspended"].get<bool>() ? "yes" : "no") +
           " strikes=" + std::to_string(a["strikes"].get<long long>());
  } else if (r->contains("spend_cap")) {
    line = (*r)["agent_id"].get<std::string>() + " spend_cap=" + std::to_string((*r)["spend_cap"].get<long long>());
  }
  print(*r, as_json, line);
  return 0;
}

}  // namespace corral::cli
