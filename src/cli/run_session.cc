// SPDX-License-Identifier: Apache-2.0
// The daemon-session side of `corral run --session`: the breadth check and the command calls.
#include "cli/run_session.h"

#include <algorithm>

#include "audit/base64.h"
#include "base/sha256.h"
#include "daemon/api_client.h"
#include "daemon/session_spec.h"
#include "net/lease_spec.h"
#include "policy/units.h"

namespace corral::cli {
namespace {

using daemon::ApiClient;
using daemon::Json;

Error refused(const std::string& what) { return Error(Errc::kRefused, what); }

bool contains(const std::vector<std::string>& list, const std::string& x) { return std::find(list.begin(), list.end(), x) != list.end(); }

std::vector<std::string> stringList(const Json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const Json& v : j[key])
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

// The limits each run command would get in a fresh sandbox (agent::commandSpec's).
sandbox::Limits manifestLimits(const policy::SandboxLimitsSpec& l) {
  sandbox::Limits m;
  m.memory_bytes = l.memory_bytes;
  if (l.pids) m.pids = *l.pids;
  m.cpu_time = l.cpu_time;
  if (l.file_size_bytes) m.file_size_bytes = *l.file_size_bytes;
  if (l.tmp_bytes) m.tmp_bytes = *l.tmp_bytes;
  if (l.workspace_bytes) m.workspace_bytes = *l.workspace_bytes;
  for (const std::string& name : l.allow_weaker)
    if (auto limit = sandbox::limitFromName(name)) m.allow_weaker.push_back(*limit);
  return m;
}

template <class T>
std::string text(const T& v) {
  return std::to_string(v);
}
template <>
std::string text(const std::chrono::milliseconds& v) {
  return std::to_string(v.count()) + "ms";
}

// Each limit of the session must be at most what a fresh sandbox of the manifest would get.
Result<void> checkLimits(const std::string& id, const sandbox::Limits& s, const sandbox::Limits& m) {
  auto over = [&](const char* field, const std::string& got, const std::string& allowed) {
    return refused("session " + id + " is broader than the manifest: limits." + field + " is " + got + ", the manifest allows " + allowed);
  };
  auto optional = [&](const char* field, const auto& sv, const auto& mv) -> Result<void> {
    if (!mv) return {};
    if (!sv) return over(field, "unlimited", text(*mv));
    if (*sv > *mv) return over(field, text(*sv), text(*mv));
    return {};
  };
  auto fixed = [&](const char* field, auto sv, auto mv) -> Result<void> {
    if (sv > mv) return over(field, text(sv), text(mv));
    return {};
  };
  RETURN_IF_ERROR(optional("memory", s.memory_bytes, m.memory_bytes));
  RETURN_IF_ERROR(optional("cpu_time", s.cpu_time, m.cpu_time));
  RETURN_IF_ERROR(fixed("pids", s.pids, m.pids));
  RETURN_IF_ERROR(fixed("file_size", s.file_size_bytes, m.file_size_bytes));
  RETURN_IF_ERROR(fixed("open_files", s.open_files, m.open_files));  // the manifest cannot raise it
  RETURN_IF_ERROR(fixed("tmp_size", s.tmp_bytes, m.tmp_bytes));
  RETURN_IF_ERROR(fixed("workspace_size", s.workspace_bytes, m.workspace_bytes));
  for (sandbox::Limit w : s.allow_weaker)
    if (std::find(m.allow_weaker.begin(), m.allow_weaker.end(), w) == m.allow_weaker.end())
      return refused("session " + id + " is broader than the manifest: limits.allow_weaker names " + std::string(sandbox::limitName(w)) +
                     ", the manifest's sandbox.allow_weaker does not");
  return {};
}

Result<void> checkEgress(ApiClient& api, const std::string& id, const Json& s, const policy::Manifest& m) {
  auto broader = [&](const std::string& what) { return refused("session " + id + " is broader than the manifest: " + what); };
  if (const auto binds = stringList(s, "ro_binds"); !binds.empty())
    return broader("ro_binds lists " + policy::printable(binds[0].substr(0, binds[0].find(':'))) +
                   ", and a manifest grants no read-only binds");
  // A manifest has no SSH keys to give: a session whose agent would sign for its commands is
  // broader than any manifest.
  if (s.contains("ssh_key") && s["ssh_key"].is_string())
    return broader("ssh_key gives its commands an SSH agent with the key '" + policy::printable(s["ssh_key"].get<std::string>()) +
                   "', and a manifest grants no SSH keys");
  for (const std::string& g : stringList(s, "allow"))
    if (!contains(m.network.allow, g)) return broader("allow grants " + policy::printable(g) + ", not in the manifest's network.allow");
  for (const std::string& c : stringList(s, "allow_internal"))
    if (!contains(m.network.internal, c))
      return broader("allow_internal grants " + policy::printable(c) + ", not in the manifest's network.internal");
  for (const std::string& name : stringList(s, "credentials")) {
    const policy::CredentialSpec* mine = nullptr;
    for (const policy::CredentialSpec& c : m.credentials)
      if (c.name == name) mine = &c;
    if (!mine) return broader("credentials leases '" + policy::printable(name) + "', which the manifest's credentials do not name");
    auto lease = net::leaseFromFields(mine->name, mine->env, mine->url, mine->header, mine->format);
    if (!lease.ok()) return lease.error();
    ASSIGN_OR_RETURN(daemon::ApiResult rec, api.request("GET", "/v1/credentials/" + name));
    if (rec.status != 200) {
      std::string what = "session " + id;
      what += ": credential '" + name + "': ";
      what += daemon::apiErrorMessage(rec);
      return refused(what);
    }
    const std::string host = rec.body.value("host", "");
    if (host != lease->grant.text())
      return broader("credential '" + name + "' is injected toward " + policy::printable(host) + ", the manifest's url is " +
                     lease->grant.text());
    if (rec.body.value("header", "") != lease->header + ": " + lease->format)
      return broader("credential '" + name + "' has another header than the manifest's");
  }
  return {};
}

// One stream of a command's output as the runner keeps it: the first keep bytes, every byte
// counted and hashed.
struct StreamSink {
  uint64_t keep;
  agent::CapturedStream s;
  Sha256Stream hash;
  void add(std::string_view bytes) {
    s.total += bytes.size();
    hash.update(bytes);
    if (s.kept.size() < keep) s.kept.append(bytes.substr(0, std::min<uint64_t>(bytes.size(), keep - s.kept.size())));
  }
};

class DaemonSession final : public agent::CommandSession {
 public:
  DaemonSession(ApiClient api, std::string id) : api_(std::move(api)), id_(std::move(id)) {}
  const std::string& id() const override { return id_; }

  Result<agent::SessionOutcome> run(const agent::SessionCommand& cmd) override {
    Json body = {{"argv", cmd.argv}, {"env", cmd.env}, {"timeout", std::to_string(cmd.timeout.count()) + "ms"}};
    ASSIGN_OR_RETURN(daemon::ApiResult started, api_.request("POST", base() + "/commands", body));
    if (started.status != 201 || !started.body.contains("id") || !started.body["id"].is_number_integer())
      return Error(Errc::kRefused, daemon::apiErrorMessage(started));
    agent::SessionOutcome out;
    out.command_id = started.body["id"].get<int64_t>();
    StreamSink so{cmd.keep_bytes, {}, {}}, se{cmd.keep_bytes, {}, {}};
    std::optional<Json> report;
    bool lost = false, bad = false;
    ASSIGN_OR_RETURN(int status, api_.stream(base() + "/commands/" + std::to_string(out.command_id) + "/output", [&](const Json& line) {
                       if (line.contains("exit")) {
                         report = line["exit"];
                         return false;
                       }
                       if (line.contains("lost")) {
                         lost = true;
                         return false;
                       }
                       if (!line.contains("stream") || !line.contains("data") || !line["data"].is_string()) {
                         bad = true;
                         return false;
                       }
                       auto bytes = audit::base64DecodeStrict(line["data"].get<std::string>());
                       if (!bytes) {
                         bad = true;
                         return false;
                       }
                       (line["stream"] == "stderr" ? se : so).add(*bytes);
                       return true;
                     }));
    if (status != 200) return Error(Errc::kIo, "session " + id_ + ": output of command " + std::to_string(out.command_id) + ": HTTP " + std::to_string(status));
    if (lost) return Error(Errc::kIo, "session " + id_ + " was lost while command " + std::to_string(out.command_id) + " ran");
    if (bad || !report || !report->is_object() || !report->contains("exit_code") || !(*report)["exit_code"].is_number_integer())
      return Error(Errc::kIo, "session " + id_ + ": command " + std::to_string(out.command_id) + ": no exit report");
    so.s.sha256 = so.hash.hexDigest();
    se.s.sha256 = se.hash.hexDigest();
    agent::CommandOutcome& o = out.outcome;
    o.exit_code = (*report)["exit_code"].get<int>();
    if (report->contains("command_status") && (*report)["command_status"].is_number_integer()) o.status = (*report)["command_status"].get<int>();
    if (report->contains("signal") && (*report)["signal"].is_number_integer()) o.signal = (*report)["signal"].get<int>();
    o.killed_by = report->value("killed_by", "none");
    if (report->contains("wall_ms") && (*report)["wall_ms"].is_number()) o.wall_ms = (*report)["wall_ms"].get<double>();
    o.output.out = std::move(so.s);
    o.output.err = std::move(se.s);
    return out;
  }

 private:
  std::string base() const { return "/v1/sessions/" + id_; }
  ApiClient api_;
  std::string id_;
};

}  // namespace

agent::SessionOpener sessionOpener(std::string id) {
  return [id = std::move(id)](const policy::Manifest& m) -> Result<std::unique_ptr<agent::CommandSession>> {
    auto is_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
    if (id.size() != 16 || !std::all_of(id.begin(), id.end(), is_hex))
      return Error(Errc::kInvalidArgument, "--session: " + policy::printable(id) + " is not a session id");
    ASSIGN_OR_RETURN(ApiClient api, ApiClient::connect());
    ASSIGN_OR_RETURN(daemon::ApiResult shown, api.request("GET", "/v1/sessions/" + id));
    if (shown.status == 404) return refused("session " + id + ": no such session of yours");
    if (shown.status != 200 || !shown.body.is_object()) return refused("session " + id + ": " + daemon::apiErrorMessage(shown));
    const Json& s = shown.body;
    const std::string state = s.value("state", "");
    if (state != "running") return refused("session " + id + " is " + policy::printable(state) + ": commands run only in a running session");
    Json limits_doc = {{"limits", s.contains("limits") ? s["limits"] : Json::object()}};
    auto spec = daemon::parseSessionSpec(limits_doc);
    if (!spec.ok()) return spec.error().wrap("session " + id + ": its limits");
    RETURN_IF_ERROR(checkLimits(id, spec->limits, manifestLimits(m.sandbox)));
    RETURN_IF_ERROR(checkEgress(api, id, s, m));
    return std::unique_ptr<agent::CommandSession>(new DaemonSession(std::move(api), id));
  };
}

}  // namespace corral::cli
